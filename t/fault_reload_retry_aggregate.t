# Fault: a hop to an mcp_backend backend on a reused keepalive connection
# that the backend closes before answering (its worker exits at a reload,
# or its keepalive_timeout ends as the gateway writes).  The backend's
# location is a proxy_pass with an upstream keepalive cache, and nginx
# never sends a written POST again (proxy_next_upstream non_idempotent);
# the leg sends the request again when that is harmless, by mcp_pass's
# rule (initialize, lists, reads, notifications, a tools/call of a tool
# the backend listed with readOnlyHint or idempotentHint).  Any other
# request is never sent twice: the client gets the backend's failure.
#
# The backend is McpGateway's dying_upstream: each connection's first
# request answered, its second read and dropped; it logs every request
# it reads, so the test sees how many times the backend got each.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use McpTest;
use McpAssert;
use McpGateway;

my $LOG = "/tmp/mcptest-aggretry-$$.log";
unlink $LOG;
END { unlink $LOG if defined $LOG }

my $d = dying_upstream('d', $LOG);

my $proxy = 'proxy_http_version 1.1; proxy_set_header Connection "";';
my $t = McpTest->new(
    workers => 1,
    http => <<"NGX",
    mcp_session_zone zone=aggretry:4m;
    upstream dying { server 127.0.0.1:$d->{port}; keepalive 4; }
NGX
    server => <<"NGX",
        mcp_session aggretry;
        location = /mcp {
            mcp_backend d /_b/d;
            mcp_backend_timeout 5s;
            mcp_backend_retry 0;
        }
        location /_b/d { internal; proxy_pass http://dying/mcp; $proxy }
NGX
)->start;

$t->expect_log_error(
    qr/upstream prematurely closed connection while reading response header/,
    qr/recv\(\) failed \(104: Connection reset by peer\) while reading response header/,
    qr/connect\(\) failed \(111: Connection refused\) while connecting to upstream/,
);

sub mark { -s $LOG // 0 }

# how often the backend read a message matching $re since $m, and how
# often it answered one
sub got { [ dying_got($LOG, @_) ] }

sub list {
    my ($sid, $id) = @_;
    return $t->mcp_post($sid, qq({"jsonrpc":"2.0","id":"$id","method":"tools/list"}));
}

sub call {
    my ($sid, $id, $name) = @_;
    return $t->mcp_post($sid, qq({"jsonrpc":"2.0","id":"$id","method":"tools/call",)
                              . qq("params":{"name":"d__$name","arguments":{}}}));
}

sub text_of { ((($_[0]{json} // {})->{result} // {})->{content} // [{}])->[0]{text} }

my ($sid, $m);

$m = mark();
$sid = $t->mcp_initialize;
ok(defined $sid, 'initialize through the aggregating location');
is_deeply(got($m, qr/"method":"initialize"/), [ 1, 1 ], 'the backend\'s initialize: a new connection, once');
is_deeply(got($m, qr/notifications\/initialized/), [ 2, 1 ],
          'notifications/initialized met the dying kept connection and went again');

{
    $m = mark();
    my $r = list($sid, 'l1');
    is($r->{status}, 200, 'tools/list on a dying kept connection: 200');
    is_deeply([ sort map { $_->{name} } @{ (($r->{json} // {})->{result} // {})->{tools} // [] } ],
              [ qw(d__launch d__plain d__read_it d__same_again) ], 'tools/list: the backend\'s four tools');
    is_deeply(got($m, qr/"method":"tools\/list"/), [ 2, 1 ], 'tools/list: dropped once, sent again, answered');
}

for my $tool (qw(read_it same_again)) {
    $m = mark();
    my $r = call($sid, "c-$tool", $tool);
    is($r->{status}, 200, "tools/call $tool (listed with a hint): 200");
    is(text_of($r), "called $tool", "tools/call $tool: the backend's result");
    is_deeply(got($m, qr/"name":"\Q$tool\E"/), [ 2, 1 ], "tools/call $tool: sent again once");
}

{
    $m = mark();
    my $r = $t->mcp_post($sid, '{"jsonrpc":"2.0","id":"rr","method":"resources/read","params":{"uri":"x:1"}}');
    is($r->{status}, 200, 'resources/read on a dying kept connection: 200');
    is_deeply(got($m, qr/"method":"resources\/read"/), [ 2, 1 ], 'resources/read: sent again once');
}

for my $tool (qw(launch plain)) {
    list($sid, "prime-$tool");    # an answered request leaves a kept connection
    $m = mark();
    my $r = call($sid, "c-$tool", $tool);
    is($r->{status}, 200, "tools/call $tool (no hint): a reply");
    like(text_of($r), qr/Backend "d" is unavailable/, "tools/call $tool: the backend's failure, as before");
    ok((($r->{json} // {})->{result} // {})->{isError}, "tools/call $tool: a tool error");
    is_deeply(got($m, qr/"name":"\Q$tool\E"/), [ 1, 0 ], "tools/call $tool: the backend got it once, never twice");
}

{
    # a tool the backend's list has not shown the gateway under that name
    list($sid, 'prime-unlisted');
    $m = mark();
    my $r = call($sid, 'c-unlisted', 'unlisted');
    like(text_of($r), qr/Backend "d" is unavailable/, 'tools/call of a tool never listed: not sent again');
    is_deeply(got($m, qr/"name":"unlisted"/), [ 1, 0 ], '... the backend got it once');
}

# --- a 2026-07-28 stateless client: the worker's own session there -----------

my $P = 'io.modelcontextprotocol/';
sub sl {
    my ($method, $params) = @_;
    my %h = ('MCP-Protocol-Version' => '2026-07-28', 'Mcp-Method' => $method);
    $h{'Mcp-Name'} = $params->{name} if $method eq 'tools/call';
    my $meta = { "${P}protocolVersion" => '2026-07-28', "${P}clientCapabilities" => {},
                 "${P}clientInfo" => { name => 'aggretry', version => '1' } };
    my $resp = $t->mcp_post(undef, { jsonrpc => '2.0', id => 1, method => $method,
                                     params => { %$params, _meta => $meta } },
                            headers => \%h, protocol_version => undef, quiet => 1);
    my ($msg) = grep { ref $_ eq 'HASH' && exists $_->{id} } @{ $resp->{messages} // [] };
    return $msg // {};
}

{
    $m = mark();
    my $msg = sl('tools/list', {});
    is(scalar @{ ($msg->{result} // {})->{tools} // [] }, 4,
       'stateless tools/list: the session opened and the list came, over dying kept connections');
    is_deeply(got($m, qr/notifications\/initialized/), [ 2, 1 ], '... its notifications/initialized went again');
    is_deeply(got($m, qr/"method":"tools\/list"/), [ 2, 1 ], '... and its tools/list');

    $m = mark();
    $msg = sl('tools/call', { name => 'd__read_it', arguments => {} });
    is(((($msg->{result} // {})->{content} // [{}])->[0] // {})->{text}, 'called read_it',
       'stateless tools/call of a readOnlyHint tool: sent again, answered');
    is_deeply(got($m, qr/"name":"read_it"/), [ 2, 1 ], '... the backend got it twice');

    $m = mark();
    $msg = sl('tools/call', { name => 'd__launch', arguments => {} });
    ok((($msg->{result} // {})->{isError}), 'stateless tools/call of an unhinted tool: the failure');
    is_deeply(got($m, qr/"name":"launch"/), [ 1, 0 ], '... the backend got it once');
}

{
    # a failure on a new connection is no reload: never sent again
    kill 'TERM', $d->{pid};
    waitpid $d->{pid}, 0;
    $m = mark();
    my $r = call($sid, 'c-gone', 'read_it');
    like(text_of($r), qr/Backend "d" is unavailable/, 'the backend gone: the failure, at once');
    is_deeply(got($m, qr/"name":"read_it"/), [ 0, 0 ], '... nothing was read');
}

done_testing;
