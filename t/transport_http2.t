# HTTP/2: an endpoint behind "listen ... ssl http2" (nginx before 1.25.1)
# or "http2 on;" (1.25.1 and later) serves as over HTTP/1.1.  With curl
# --http2: initialize and an SSE reply.  With Node's http2 client, on one
# connection: JSON and SSE replies, events arriving as they are sent, GET
# streams kept open by keepalive comments, 20 calls at once, and a GET
# stream reset by the client (RST_STREAM) that ends only that stream: the
# next server message goes to the session's other GET stream, and the
# connection serves on.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use McpTest;
use McpAssert;
use McpGateway;

my $why = node_available();
plan skip_all => $why if $why;

# the directive that turns HTTP/2 on depends on the version under test
my ($dir, $listen, $h2on) = http2_tls();
note("listen ... $listen; $h2on");

my $t = McpTest->new(
    ports => 2,
    http  => <<"NGX",
    server {
        listen 127.0.0.1:%%PORT2%% $listen;
        $h2on
        ssl_certificate     $dir/h2.crt;
        ssl_certificate_key $dir/h2.key;
        location = /mcp {
            mcp on;
            mcp_builtin everything;
            mcp_stream_keepalive 300ms;
        }
    }
NGX
)->start;

my $url = 'https://127.0.0.1:' . $t->port(2) . '/mcp';

# --- curl --http2 ---------------------------------------------------------

sub curl {
    my (@args) = @_;
    my ($rc, $out) = McpTest::_run_capture(['curl', '-sk', '--http2', '--max-time', '10', @args], 20);
    return $out;
}

{
    my $init = '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":'
             . '"2025-11-25","capabilities":{},"clientInfo":{"name":"curl","version":"1"}}}';
    my $r = curl('-i', '-H', 'Content-Type: application/json',
                 '-H', 'Accept: application/json, text/event-stream', '-d', $init, $url);
    my $out = $r;
    like($out, qr{^HTTP/2 200}m, 'curl --http2: initialize answered over HTTP/2');
    my ($sid) = $out =~ /^mcp-session-id:\s*(\S+)/mi;
    like($sid // '', qr/^[0-9a-f]{32}$/, 'curl --http2: a session id');
    like($out, qr/"serverInfo":\{"name":"ngx_http_mcp_module"/, 'curl --http2: the initialize result');

    my $call = '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":'
             . '"test_tool_with_progress","arguments":{},"_meta":{"progressToken":"c"}}}';
    $r = curl('-i', '-N', '-H', 'Content-Type: application/json',
              '-H', 'Accept: application/json, text/event-stream',
              '-H', "Mcp-Session-Id: $sid", '-H', 'MCP-Protocol-Version: 2025-11-25',
              '-d', $call, $url);
    $out = $r;
    like($out, qr{^content-type: text/event-stream}mi, 'curl --http2: an SSE reply');
    my $progress = () = $out =~ /"method":"notifications\/progress"/g;
    is($progress, 3, 'curl --http2: three progress events');
    like($out, qr/"id":2,"result"/, 'curl --http2: then the result');
}

# --- Node's http2 client: one connection, many streams ----------------------

my ($rc, $res) = run_node_script('http2_client.mjs', [$url], timeout => 60);
my $line = (grep { /^\{/ } split /\n/, $res)[-1];
my $o = eval { McpTest::decode_json($line // '') };
ok($o, 'the http2 client printed its report') or diag(explain($res));
$o //= {};

is_deeply($o->{errors}, [], 'no client errors');
is($o->{init}{status}, 200, 'initialize: 200');
ok($o->{init}{sid}, 'initialize: a session id');
is($o->{simple}{status}, 200, 'tools/call (JSON): 200');
like($o->{simple}{type} // '', qr{^application/json}, 'tools/call: application/json');
is($o->{simple}{text}, 'This is a simple text response for testing.', 'tools/call: the result');

my @ev = @{ $o->{progress}{events} // [] };
like($o->{progress}{type} // '', qr{^text/event-stream}, 'SSE reply over HTTP/2');
is(scalar(grep { ($_->{method} // '') eq 'notifications/progress' } @ev), 3, 'three progress events');
is($ev[-1]{id}, 3, 'the result comes last');
# the tool sends progress about 50 ms apart: events that arrive as sent
# are spread out; events held back until the end would arrive together
ok(@ev == 4 && $ev[-1]{at} - $ev[0]{at} >= 60,
   'events arrive as they are sent, not all at the end')
    or diag(explain(\@ev));

is($o->{concurrent}, 20, '20 calls at once on one connection: 20 results');

is($o->{getA}{status}, 200, 'GET stream A opened');
is($o->{getB}{status}, 200, 'GET stream B opened');
ok($o->{getA}{comments} > 0, 'GET stream A: keepalive comments');
ok($o->{getB}{comments} > 0, 'GET stream B: keepalive comments');
ok($o->{getB}{ended}, 'B ended after the client reset it');
is_deeply($o->{getA}{messages}, ['notifications/resources/updated'],
          'after B was reset, the notification went to A: the server let B go');
is_deeply($o->{getB}{messages}, [], 'nothing went to the reset stream');
is($o->{update}, 200, 'update_watched_resource: 200');
is($o->{afterReset}{status}, 200, 'the connection serves on after the reset');
ok(!$o->{goaway}, 'no GOAWAY: the reset ended only that stream');

$t->check_log;
done_testing;
