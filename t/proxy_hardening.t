# An upstream is untrusted (issue #18, rows 4, 6, 10).  Through mcp_pass
# to a real misbehaving server (t/py/faulty_upstream.py):
# - its X-Accel-* headers neither steer nginx nor reach the client;
# - a read timeout is a 504 JSON-RPC error with the request's id, and the
#   session stays (a slow replica is not a dead one);
# - an HTTP/1.0 reply without a length is relayed to its close;
# - broken chunking, a reply cut short, garbage instead of HTTP and an
#   oversized header are 502 JSON-RPC errors with the request's id;
# - a tools/list reply under tool policy is held only up to
#   mcp_pass_filter_buffer_size; past it, a JSON-RPC error, and the
#   gateway's memory stays flat; replies that need no filtering stream
#   through whatever their size.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use McpTest;
use McpAssert;
use McpGateway;
use JSON::PP ();

my $loc = '';
for my $p (qw(xaccel slow http10 badchunk garbage bigheader)) {
    $loc .= "        location = /$p { mcp_pass http://127.0.0.1:%%PORT2%%/$p;"
          . " mcp_tools_deny tool_1; }\n";
}
# /big/MB and the like: the client's URI goes upstream, and says the size
for my $p (qw(big big-sse big-length stream)) {
    $loc .= "        location /$p/ { mcp_pass http://127.0.0.1:%%PORT2%%;"
          . " mcp_tools_deny tool_1; }\n";
}

my $t = McpTest->new(
    ports  => 2,
    http   => 'mcp_session_zone zone=gw:1m;',
    server => <<"NGX",
        mcp_session gw;
        mcp_pass_read_timeout 1s;
        location /internal-only { internal; return 200 "SECRET"; }
        location /big-small/ { mcp_pass http://127.0.0.1:%%PORT2%%/big/;
                               mcp_tools_deny tool_1; mcp_pass_filter_buffer_size 64k; }
$loc
NGX
);

my ($py, $log) = start_python_upstream($t, 'faulty_upstream', $t->port(2));
$t->expect_log_error(qr/upstream timed out/, qr/invalid chunked body/,
                     qr/no valid HTTP status line/, qr/too big header/,
                     qr/mcp_pass_filter_buffer_size/);
$t->start;

sub session {
    my ($path) = @_;
    my ($sid) = try_initialize($t, path => $path);
    return $sid;
}

sub call {
    my ($sid, $path, $id, %o) = @_;
    return $t->mcp_post($sid, { jsonrpc => '2.0', id => $id, method => $o{method} // 'tools/call',
                                params => { name => 'x', arguments => {} } },
                        path => $path, timeout => 30);
}

# --- row 6: X-Accel-* ---------------------------------------------------------------

{
    my $sid = session('/xaccel');
    ok($sid, 'xaccel: a session');
    my $r = call($sid, '/xaccel', 1);
    is($r->{status}, 200, 'X-Accel-Redirect from the upstream: not followed');
    unlike($r->{body}, qr/SECRET/, 'the internal location was not served');
    is_deeply($r->{json}{result}, {}, 'the upstream\'s own reply');
    my @xa = grep { /^x-accel/i } keys %{ $r->{headers} };
    is_deeply(\@xa, [], 'no X-Accel-* header reaches the client');
}

# --- row 10: timeouts and broken replies ----------------------------------------

{
    my $sid = session('/slow');
    my $r = call($sid, '/slow', 'slow-1');
    is_rpc_error_body($r, 504, undef, 'slow-1', 'read timeout: 504 with the request\'s id');
    my $p = $t->mcp_post($sid, { jsonrpc => '2.0', id => 2, method => 'ping' }, path => '/slow');
    is($p->{status}, 200, 'read timeout: the session is kept');
    is_result($p->{json}, {}, 2, 'read timeout: the session serves on');
}

{
    my $sid = session('/http10');
    my $r = call($sid, '/http10', 'h10');
    is($r->{status}, 200, 'HTTP/1.0 without a length: 200');
    is($r->{json}{id}, 'h10', 'HTTP/1.0 without a length: the reply relayed to its close');
    is($r->{json}{result}{content}[0]{text}, 'ok', '... whole');
}

for my $case ([ 'badchunk', 'broken chunking' ], [ 'garbage', 'no HTTP at all' ],
              [ 'bigheader', 'a 70 KB header' ]) {
    my ($path, $name) = @$case;
    my $sid = session("/$path");
    my $r = call($sid, "/$path", "$path-1");
    is_rpc_error_body($r, 502, undef, "$path-1", "$name: 502 with the request's id");
    my $p = $t->mcp_post($sid, { jsonrpc => '2.0', id => 2, method => 'ping' }, path => "/$path");
    is($p->{status}, 200, "$name: the session is kept (the replica took the request)");
}

# --- row 4: bounded buffering under tool policy ---------------------------------------

{
    my $sid = session('/big/1');
    my $r = $t->mcp_post($sid, { jsonrpc => '2.0', id => 'l1', method => 'tools/list' },
                         path => '/big/0.5', timeout => 30);
    is($r->{status}, 200, 'a 0.5 MB tools/list under policy: 200');
    my @names = map { $_->{name} } @{ $r->{json}{result}{tools} // [] };
    ok(@names > 400, 'a 0.5 MB tools/list: filtered and whole (' . scalar(@names) . ' tools)');
    ok(!grep({ $_ eq 'tool_1' } @names), 'the denied tool is gone');

    for my $path ('/big', '/big-sse', '/big-length') {
        my $s = session("$path/1");
        my $before = $t->workers_rss;
        $r = $t->mcp_post($s, { jsonrpc => '2.0', id => 'l2', method => 'tools/list' },
                          path => "$path/40", timeout => 60);
        my $grew = $t->workers_rss - $before;
        my $json = $r->{json} // ($r->{messages} ? (grep { defined $_->{id} } @{ $r->{messages} })[0] : undef);
        # a 200 (the reply had begun) or a 502, always the call's error
        ok($r->{status} == 200 || $r->{status} == 502, "$path: 40 MB tools/list over the 1 MB limit: HTTP $r->{status}");
        is_error($json, -32000, 'l2', "$path: ... a JSON-RPC error carrying the request's id")
            or diag("status $r->{status}, " . substr($r->{body} // '', 0, 200));
        ok($grew < 64 * 1024, "$path: the workers grew by $grew kB (< 64 MB)");
    }

    # 1 GB from the upstream: the gateway stops reading at the limit
    {
        my $s = session('/stream/1');
        my $before = $t->workers_rss;
        my $t0 = time;
        $r = $t->mcp_post($s, { jsonrpc => '2.0', id => 'g1', method => 'tools/list' },
                          path => '/stream/1024', timeout => 120);
        my $grew = $t->workers_rss - $before;
        is(($r->{json} // {})->{id}, 'g1', 'a 1 GB tools/list under policy: a JSON-RPC error for the request');
        ok(($r->{json} // {})->{error}, '... an error, not a list');
        ok($grew < 64 * 1024, "1 GB from the upstream: the workers grew by $grew kB (< 64 MB)");
        diag("1 GB upstream reply under tool policy: gateway worker RSS grew by $grew kB");
    }

    my $small = session('/big-small/5');
    $r = $t->mcp_post($small, { jsonrpc => '2.0', id => 'l3', method => 'tools/list' },
                      path => '/big-small/5', timeout => 30);
    ok($r->{status} == 502 || ($r->{json} && $r->{json}{error}),
       'mcp_pass_filter_buffer_size 64k: a 5 MB list is refused');

    # a reply that needs no filtering streams through, whatever its size
    $r = call($sid, '/big/5', 'c5');
    is($r->{status}, 200, 'a 5 MB tools/call result under policy: 200');
    is(length($r->{json}{result}{content}[0]{text} // ''), 5 << 20, '... whole');
}

stop_process($py);
$t->check_log;
done_testing;
