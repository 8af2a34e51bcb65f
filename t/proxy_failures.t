# mcp_pass when the upstream fails: nothing listening (502), no answer
# within mcp_pass_read_timeout (504), an HTML error page (502), garbage or
# an invalid header (502), a stream the upstream drops or breaks midway (the
# client's stream ends), and the replica of a session gone (404, -32001,
# the client initializes again).  Every error the client gets is a
# JSON-RPC error (application/json, never nginx's HTML page), every failure
# leaves a line in error.log, and no worker crashes.  Also: an upstream
# without sessions (the client still gets one) and exactly what the
# gateway sends upstream.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Compress::Zlib ();
use IO::Socket::INET;
use JSON::PP ();
use Time::HiRes ();
use McpTest;
use McpAssert;
use McpGateway;

# --- upstreams -----------------------------------------------------------------

# a port nothing listens on
my $closed = do {
    my $s = IO::Socket::INET->new(LocalAddr => '127.0.0.1', LocalPort => 0, Listen => 1) or die $!;
    my $p = $s->sockport; close $s; $p };

# accepts (in the kernel's backlog), never answers
my $silent = silent_listener();

my $EVENT = "id: 7-1\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\","
          . "\"params\":{\"level\":\"info\",\"data\":\"first\"}}\n\n";

my %fake = (
    garbage   => fake_upstream(sub { print { $_[0] } "garbage\r\n\r\n" }),
    badheader => fake_upstream(sub { print { $_[0] } "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                                                   . "Bad Header Line\x01\r\n\r\n{}" }),
    # an SSE reply, chunked, dropped after its first event
    drop      => fake_upstream(sub {
        my ($c) = @_;
        print $c "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n";
        printf $c "%x\r\n%s\r\n", length $EVENT, $EVENT;
        Time::HiRes::sleep(0.3);
    }),
    # an SSE reply that ends at the close (no length, not chunked)
    dropclose => fake_upstream(sub {
        my ($c) = @_;
        print $c "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n$EVENT";
        Time::HiRes::sleep(0.3);
    }),
    # a chunked body whose framing breaks after the first event
    badchunk  => fake_upstream(sub {
        my ($c) = @_;
        print $c "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n";
        printf $c "%x\r\n%s\r\n", length $EVENT, $EVENT;
        Time::HiRes::sleep(0.2);
        print $c "zz-not-a-size\r\nxx\r\n";
        Time::HiRes::sleep(0.3);
    }),
    # a JSON-RPC error with a 4xx status: relayed as it is
    json400   => fake_upstream(sub {
        my ($c) = @_;
        my $b = '{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"Bad Request: upstream says no"}}';
        print $c "HTTP/1.1 400 Bad Request\r\nContent-Type: application/json\r\nContent-Length: "
               . length($b) . "\r\n\r\n$b";
    }),
    # a stateless MCP server that tells what it received: the request head
    echo      => fake_upstream(sub {
        my ($c, $head, $body) = @_;
        my $msg = eval { JSON::PP->new->decode($body) } // {};
        if (($msg->{method} // '') eq 'hang') {    # stops answering
            Time::HiRes::sleep(1.3);
            return;
        }
        if (!exists $msg->{id}) {    # a notification
            print $c "HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n";
            return;
        }
        my $out = JSON::PP->new->canonical->encode({ jsonrpc => '2.0', id => $msg->{id},
            result => { ($msg->{method} // '') eq 'initialize'
                          ? (protocolVersion => '2025-11-25', capabilities => {},
                             serverInfo => { name => 'echo', version => '1' }) : (),
                        head => $head, body => $body } });
        print $c "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "
               . length($out) . "\r\n\r\n$out";
    }),
);

# a separate nginx serving the Everything set: the replica we stop
my $up = McpTest->new(server => 'location = /mcp { mcp on; mcp_builtin everything; }')->start;

my $t = McpTest->new(
    ports => 2,
    http  => <<'NGX',
    mcp_session_zone zone=gw:1m;
    mcp_session_zone zone=up:1m;
    mcp_session_zone zone=small:32k;
    server {
        listen 127.0.0.1:%%PORT2%%;
        mcp_session up;
        location = /html500 { return 500; }
        location / { return 404; }
        # an MCP endpoint that fails with an HTML page when asked to
        location = /flaky {
            if ($http_authorization = "fail") { rewrite ^ /html500 last; }
            mcp on; mcp_builtin everything;
        }
        location = /slow-ka { mcp on; mcp_builtin everything; }
        location = /fast-ka { mcp on; mcp_builtin everything; mcp_stream_keepalive 300ms; }
    }
NGX
    server => <<"NGX",
        mcp_session gw;
        location = /refused   { mcp_pass http://127.0.0.1:$closed/mcp; }
        location = /refused-small { mcp_pass http://127.0.0.1:$closed/mcp; mcp_session small; }
        location = /small     { mcp_pass http://127.0.0.1:%%PORT2%%/flaky; mcp_session small; }
        location = /timeout   { mcp_pass http://127.0.0.1:@{[ $silent->sockport ]}/mcp;
                                mcp_pass_read_timeout 1s; }
        location = /html500   { mcp_pass http://127.0.0.1:%%PORT2%%/html500; }
        location = /wrongpath { mcp_pass http://127.0.0.1:%%PORT2%%/no/such/path; }
        location = /flaky     { mcp_pass http://127.0.0.1:%%PORT2%%/flaky; mcp_pass_authorization on; }
        location = /slow-ka   { mcp_pass http://127.0.0.1:%%PORT2%%/slow-ka; mcp_pass_read_timeout 1s; }
        location = /fast-ka   { mcp_pass http://127.0.0.1:%%PORT2%%/fast-ka; mcp_pass_read_timeout 1s; }
        location = /echo-hang { mcp_pass http://127.0.0.1:$fake{echo}{port}/echo; mcp_pass_read_timeout 1s; }
        location = /replica   { mcp_pass http://127.0.0.1:@{[ $up->port ]}/mcp; }
@{[ join '', map { "        location = /$_ { mcp_pass http://127.0.0.1:$fake{$_}{port}/$_; }\n" } sort keys %fake ]}
NGX
)->start;

$t->expect_log_error(
    qr/connect\(\) failed \(111: Connection refused\) while connecting to upstream/,
    qr/upstream timed out \(110: Connection timed out\) while reading (?:response header from )?upstream/,
    qr/mcp: upstream answered (?:500|404) without a JSON-RPC body/,
    qr/mcp: upstream sent no valid HTTP status line/,
    qr/mcp: upstream sent an invalid header line/,
    qr/upstream prematurely closed connection while reading upstream/,
    qr/mcp: upstream sent an invalid chunked body/,
);

my $INIT = '{"jsonrpc":"2.0","id":"%s","method":"initialize","params":{"protocolVersion":"2025-11-25",'
         . '"capabilities":{},"clientInfo":{"name":"failures","version":"1"}}}';

sub init_post {
    my ($path, $id, %o) = @_;
    return $t->mcp_post(undef, sprintf($INIT, $id), path => $path, %o);
}

# the JSON-RPC error for a failure, and its error.log line
sub failure_ok {
    my ($what, $r, $status, $id, $log_re, $mark) = @_;
    local $Test::Builder::Level = $Test::Builder::Level + 1;
    is_rpc_error_body($r, $status, -32000, $id, "$what: $status with a JSON-RPC error (-32000) carrying the id");
    unlike($r->{headers}{'content-type'} // '', qr{text/html}, "$what: never text/html");
    like(($r->{json}{error} // {})->{message} // '', qr/upstream/i, "$what: the message names the upstream");
    ok($t->wait_for_log($log_re, 3, $mark), "$what: error.log says why");
}

# --- nothing listening ---------------------------------------------------------

{
    my $m = $t->log_mark;
    my $r = init_post('/refused', 'ref-1');
    failure_ok('upstream refused', $r, 502, 'ref-1', qr/\[error\].*connect\(\) failed \(111/, $m);
    is($r->{headers}{'mcp-session-id'}, undef, 'upstream refused: no session for the client');
}

{
    # a failed initialize leaves nothing behind: many of them (a client
    # retrying while its server is down) do not push others' sessions out
    # of a small zone (32k: room for about 100)
    my ($sid) = $t->mcp_initialize(path => '/small');
    my $m = $t->log_mark;
    my @st = map { init_post('/refused-small', "many-$_", quiet => 1)->{status} } 1 .. 300;
    is_deeply([ grep { $_ != 502 } @st ], [], '300 initializes while the server is down: 502 each');
    my $r = $t->mcp_post($sid, '{"jsonrpc":"2.0","id":"still","method":"ping"}', path => '/small');
    my @evicted = grep { /zone "small" is full/ } split /\n/, $t->log_since($m);
    {
        is($r->{status}, 200, 'a live session in the same zone is still there');
        is(scalar @evicted, 0, 'no session was evicted (no "zone is full" warning)');
    }
}

# --- no answer: mcp_pass_read_timeout ------------------------------------------

{
    my $m = $t->log_mark;
    my $r = init_post('/timeout', 'to-1', timeout => 10);
    failure_ok('upstream timeout', $r, 504, 'to-1', qr/\[error\].*upstream timed out .* while reading response header/, $m);
    ok($r->{elapsed} >= 0.9 && $r->{elapsed} < 5,
       sprintf('upstream timeout: after mcp_pass_read_timeout 1s (%.2fs)', $r->{elapsed}));
}

# --- HTML error pages, garbage -------------------------------------------------

{
    my $m = $t->log_mark;
    my $r = init_post('/html500', 'h-1');
    failure_ok('upstream answers an HTML 500 page', $r, 502, 'h-1', qr/\[error\].*upstream answered 500 without a JSON-RPC body/, $m);
    unlike($r->{body}, qr/<center>|nginx\//, 'HTML 500: nothing of the page reaches the client');

    $m = $t->log_mark;
    $r = init_post('/wrongpath', 'h-2');
    failure_ok('wrong upstream path (HTML 404)', $r, 502, 'h-2', qr/\[error\].*upstream answered 404 without a JSON-RPC body/, $m);

    $m = $t->log_mark;
    $r = init_post('/garbage', 'g-1');
    failure_ok('upstream answers garbage', $r, 502, 'g-1', qr/\[error\].*upstream sent no valid HTTP status line/, $m);

    $m = $t->log_mark;
    $r = init_post('/badheader', 'g-2');
    failure_ok('upstream sends an invalid header line', $r, 502, 'g-2', qr/\[error\].*upstream sent an invalid header line/, $m);

    $r = init_post('/json400', 'j-1');
    is($r->{status}, 400, 'an upstream\'s own JSON-RPC error with 400: relayed with its status');
    is(($r->{json}{error} // {})->{message}, 'Bad Request: upstream says no', '... and its body');
}

{
    # a live replica that answers one request of a session with an HTML page
    my ($sid) = $t->mcp_initialize(path => '/flaky');
    my $m = $t->log_mark;
    my $r = $t->mcp_post($sid, '{"jsonrpc":"2.0","id":"fl-1","method":"ping"}', path => '/flaky',
                         headers => { Authorization => 'fail' });
    ok($t->wait_for_log(qr/\[error\].*upstream answered 500 without a JSON-RPC body/, 3, $m),
       'a session\'s request answered with an HTML 500: error.log says so');
    is($r->{headers}{'content-type'}, 'application/json', '... the client gets a JSON-RPC error');
    my $r2 = $t->mcp_post($sid, '{"jsonrpc":"2.0","id":"fl-2","method":"ping"}', path => '/flaky');
    {
        is_rpc_error_body($r, 502, -32000, 'fl-1', '... 502, as for a request without a session');
        is($r2->{status}, 200, 'the session goes on on its replica afterwards');
    }
}

# --- streams that break ----------------------------------------------------------

{
    my $m = $t->log_mark;
    my $s = init_post('/drop', 'd-1', stream => 1);
    is($s->status, 200, 'dropped stream: 200, text/event-stream relayed');
    my $ev = $s->next_event(3);
    is((($ev // {})->{json} // {})->{params}{data}, 'first', 'dropped stream: the event sent before the drop arrives');
    my @rest = $s->read_all(3);
    ok($s->is_done && !$s->{timed_out}, 'dropped stream: the client\'s stream ends');
    is(scalar @rest, 0, 'dropped stream: nothing else arrives');
    like($s->{error} // '', qr/before end of body/, 'dropped stream: the client can tell it was cut (no last chunk)');
    ok($t->wait_for_log(qr/\[error\].*upstream prematurely closed connection while reading upstream/, 3, $m),
       'dropped stream: error.log says the upstream closed it');

    $s = init_post('/dropclose', 'd-2', stream => 1);
    my @ev = $s->read_all(3);
    ok($s->is_done && !$s->{error}, 'an SSE reply that ends at the upstream\'s close: the client\'s stream ends cleanly');
    is(scalar(grep { $_->{json} } @ev), 1, '... after its event');

    $m = $t->log_mark;
    $s = init_post('/badchunk', 'd-3', stream => 1);
    @ev = $s->read_all(3);
    ok($s->is_done && !$s->{timed_out}, 'broken chunked framing midway: the client\'s stream ends');
    ok($t->wait_for_log(qr/\[error\].*upstream sent an invalid chunked body/, 3, $m),
       'broken chunked framing: error.log says so');
}

{
    # an idle stream and mcp_pass_read_timeout: keepalive comments keep it open
    my ($sid) = $t->mcp_initialize(path => '/fast-ka');
    my $g = $t->mcp_get_stream($sid, path => '/fast-ka');
    my @ev = $g->read_all(2);
    ok(!$g->is_done, 'an idle GET stream, upstream keepalive 300ms < mcp_pass_read_timeout 1s: still open after 2s');
    cmp_ok($g->comments, ">=", 3, 'keepalive comments are relayed (' . $g->comments . ')');
    $g->close;

    ($sid) = $t->mcp_initialize(path => '/slow-ka');
    my $m = $t->log_mark;
    $g = $t->mcp_get_stream($sid, path => '/slow-ka');
    my $t0 = Time::HiRes::time();
    @ev = $g->read_all(5);
    my $dt = Time::HiRes::time() - $t0;
    ok($g->is_done && $dt < 4, sprintf('an idle GET stream without keepalives: cut by mcp_pass_read_timeout 1s (%.2fs)', $dt));
    ok($t->wait_for_log(qr/\[error\].*upstream timed out .* while reading upstream/, 3, $m),
       '... error.log says so');
    my $r = $t->mcp_post($sid, '{"jsonrpc":"2.0","id":"after-idle","method":"ping"}', path => '/slow-ka');
    is($r->{status}, 200, '... and the session goes on (a stream that timed out is not a replica gone)');
}

# --- the replica of a session gone ---------------------------------------------------

{
    my ($sid) = $t->mcp_initialize(path => '/replica');
    my $res = $t->mcp_call($sid, 'tools/call', { name => 'test_simple_text' }, path => '/replica');
    ok(ref $res->{content} eq 'ARRAY', 'a session on the replica works');

    $up->stop;    # its own log is checked: one assertion
    my $m = $t->log_mark;
    my $r = $t->mcp_post($sid, '{"jsonrpc":"2.0","id":"gone-1","method":"ping"}', path => '/replica');
    is_rpc_error_body($r, 404, -32001, 'gone-1', 'replica gone: 404 with JSON-RPC error -32001');
    is($r->{json}{error}{message}, 'Session not found', 'replica gone: "Session not found"');
    ok($t->wait_for_log(qr/\[error\].*connect\(\) failed \(111/, 3, $m), 'replica gone: error.log has the failed connect');
    my $tag = sprintf '#%08x', Compress::Zlib::crc32($sid);
    ok($t->wait_for_log(qr/\[info\].*mcp: the replica of session \Q$tag\E is gone/, 3, $m),
       'replica gone: error.log names the session by a hash of its id');
    unlike($t->log_since($m), qr/\Q$sid\E/, 'replica gone: the session id is in no log line');

    $m = $t->log_mark;
    $r = $t->mcp_post($sid, '{"jsonrpc":"2.0","id":"gone-2","method":"ping"}', path => '/replica');
    is_rpc_error_body($r, 404, -32001, 'gone-2', 'the session stays gone');
    Time::HiRes::sleep(0.1);
    unlike($t->log_since($m), qr/connect\(\) failed/, '... answered by the gateway, no new connect');
    my $g = $t->mcp_get_stream($sid, path => '/replica', quiet => 1);
    is($g->status, 404, 'GET of the gone session: 404');
    is($t->mcp_delete($sid, path => '/replica')->{status}, 404, 'DELETE of the gone session: 404');

    $r = init_post('/replica', 'again-1');
    is_rpc_error_body($r, 502, -32000, 'again-1', 'initialize again while nothing is up: 502');

    $up->start;
    my ($sid2) = $t->mcp_initialize(path => '/replica');
    like($sid2, qr/^[0-9a-f]{32}$/, 'the replica back: initialize again succeeds');
    isnt($sid2, $sid, '... with a new session');
    $res = $t->mcp_call($sid2, 'tools/call', { name => 'test_simple_text' }, path => '/replica');
    ok(ref $res->{content} eq 'ARRAY', '... which works');
    $up->stop;
}

# --- an upstream without sessions; what goes upstream -------------------------------

{
    my ($sid, $init, $ir) = try_initialize($t, path => '/echo', headers => { Authorization => 'Bearer x',
                                               Cookie => 'c=1', 'X-Custom' => 'y', Origin => 'http://localhost' });
    like($sid, qr/^[0-9a-f]{32}$/, 'an upstream that sends no Mcp-Session-Id: the client still gets a session');
    my $head = $init->{head} // '';
    like($head, qr{\APOST /echo HTTP/1\.1\r\n}, 'upstream request line: POST with the path of mcp_pass, HTTP/1.1');
    like($head, qr{^Host: 127\.0\.0\.1:$fake{echo}{port}\r?$}m, 'Host as written in mcp_pass');
    like($head, qr{^Accept: application/json, text/event-stream\r?$}m, 'Accept relayed');
    like($head, qr{^Content-Type: application/json\r?$}m, 'Content-Type relayed');
    like($head, qr{^Content-Length: \d+\r?$}m, 'Content-Length set');
    unlike($head, qr{^(?:Authorization|Cookie|X-Custom|Origin|Mcp-Session-Id|Transfer-Encoding):}mi,
           'no Authorization, Cookie, other headers, Origin or session id upstream');
    my (undef, $sent) = split /\r\n\r\n/, $ir->{request}, 2;
    is($init->{body}, $sent, 'initialize: the body upstream is the client\'s, byte for byte');
    my ($msg) = $t->mcp_request($sid, 'tools/call', { name => 'x', arguments => { a => [1, 2] } }, path => '/echo', id => 'e-2');
    my $res = ($msg // {})->{result} // {};
    is($res->{body}, '{"id":"e-2","jsonrpc":"2.0","method":"tools/call","params":{"arguments":{"a":[1,2]},"name":"x"}}',
       'a later request: the body upstream is the client\'s, byte for byte');
    like($res->{head} // '', qr{^MCP-Protocol-Version: 2025-11-25\r?$}m, 'MCP-Protocol-Version relayed');
    unlike($res->{head} // '', qr{^Mcp-Session-Id:}mi, 'no Mcp-Session-Id upstream for a stateless upstream\'s session');
}

{
    # a replica that took a session's request but does not answer it in
    # time is slow, not gone: 504, and the session stays (issue #18)
    my ($sid) = try_initialize($t, path => '/echo-hang');
    ok($sid, 'a session on a stateless upstream');
    my $m = $t->log_mark;
    my $r = $t->mcp_post($sid, '{"jsonrpc":"2.0","id":"h-1","method":"hang"}', path => '/echo-hang');
    is_rpc_error_body($r, 504, -32000, 'h-1', 'a session\'s replica that does not answer within mcp_pass_read_timeout: 504 with the request\'s id');
    unlike($t->log_since($m), qr/replica of session .* is gone/, '... the replica is not taken for gone');
    Time::HiRes::sleep(0.4);    # the fake upstream serves one connection at a time
    my $p = $t->mcp_post($sid, '{"jsonrpc":"2.0","id":"h-2","method":"ping"}', path => '/echo-hang');
    isnt($p->{status}, 404, '... and the session is kept');
}

# nginx is fine after all that
{
    my $r = init_post('/html500', 'last');
    is($r->{status}, 502, 'nginx still answers');
    my @crashed = grep { /exited on signal|\[alert\]|\[crit\]/ } split /\n/, $t->error_log;
    is(scalar @crashed, 0, 'no worker crashed') or diag(join "\n", @crashed);
}

$t->stop;
done_testing;
