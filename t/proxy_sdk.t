# The official TypeScript SDK client (t/js/gateway_progress.mjs) through an
# mcp_pass gateway to @modelcontextprotocol/server-everything: it lists the
# tools, calls echo, and calls trigger-long-running-operation (2 s, 4 steps)
# with a progress callback.  Each progress notification must reach the
# client as the server sends it (about every 0.5 s), not all at the end
# with the result; then the client ends its session with DELETE.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use McpTest;
use McpGateway;

my $why = node_available('@modelcontextprotocol/server-everything', '@modelcontextprotocol/sdk');
plan skip_all => "node clients: $why" if $why;

my $t = McpTest->new(
    ports => 2,    # 2: server-everything
    http  => <<'NGX',
    mcp_session_zone zone=gw:1m;
    log_format gw escape=json '{"method":"$request_method","status":"$status","m":"$mcp_method",'
                              '"tool":"$mcp_tool","sid":"$mcp_session_id","ct":"$sent_http_content_type"}';
NGX
    server => <<'NGX',
        location = /mcp {
            mcp_pass http://127.0.0.1:%%PORT2%%/mcp;
            mcp_session gw;
            access_log %%PREFIX%%/logs/gateway.log gw;
        }
NGX
)->start;

my $node = start_everything_node(port => $t->port(2), log => $t->prefix . '/logs/server-everything.log');

my ($DURATION, $STEPS) = (2, 4);
my ($rc, $out) = run_node_script('gateway_progress.mjs',
                                 [ 'http://127.0.0.1:' . $t->port . '/mcp', $DURATION, $STEPS ], timeout => 30);
my ($line) = grep { /^\{/ } split /\n/, $out;
my $res = eval { McpTest::decode_json($line // '') } // {};
is($rc, 0, 'the SDK client ran through the gateway without error') or diag($out);

like($res->{sessionId} // '', qr/^[0-9a-f]{32}$/, 'the client got the gateway\'s session id (32 hex digits)');
my @replica_ids = (McpTest::_slurp($node->{log}) // '') =~ /Session initialized with ID: (\S+)/g;
is(scalar @replica_ids, 1, 'server-everything initialized one session');
isnt($replica_ids[0] // '', $res->{sessionId} // '', '... whose id the client never saw');

ok((grep { $_ eq 'echo' } @{ $res->{tools} // [] })
   && (grep { $_ eq 'trigger-long-running-operation' } @{ $res->{tools} // [] }),
   'listTools: server-everything\'s tools, echo and trigger-long-running-operation among them ('
   . scalar(@{ $res->{tools} // [] }) . ')');
is($res->{echo}, 'Echo: through the gateway', 'callTool echo');
is($res->{result}, "Long running operation completed. Duration: $DURATION seconds, Steps: $STEPS.",
   'callTool trigger-long-running-operation: the result');

my @p = @{ $res->{progress} // [] };
is_deeply([ map { $_->{progress} } @p ], [ 1 .. $STEPS ], "onprogress called $STEPS times, progress 1..$STEPS in order");
is_deeply([ map { $_->{total} } @p ], [ ($STEPS) x $STEPS ], "... each with total $STEPS");

my $step = 1000 * $DURATION / $STEPS;    # ms between notifications at the server
my $result_at = $res->{resultAt} // 0;
diag(sprintf('progress at %s ms, result at %d ms', join(', ', map { $_->{at} } @p), $result_at))
    if $ENV{TEST_VERBOSE};
if (@p == $STEPS) {
    cmp_ok($result_at - $p[0]{at}, '>=', 1000,
           "the first progress arrived well before the result (@{[ $result_at - $p[0]{at} ]} ms earlier)");
    cmp_ok($p[0]{at}, '<', $step * 2, "the first progress arrived about one step after the call ($p[0]{at} ms)");
    my @gaps = map { $p[$_]{at} - $p[$_ - 1]{at} } 1 .. $#p;
    ok(!grep({ $_ < $step * 0.5 || $_ > $step * 2 } @gaps),
       "the gaps between progress notifications follow the server's steps of $step ms (@gaps)");
    cmp_ok($result_at - $p[-1]{at}, '<', $step, 'the result follows the last progress shortly');
}
else {
    fail('progress timing (not all notifications arrived)') for 1 .. 4;
}

# what the gateway saw
my @log = upstream_log($t, 'gateway.log');
my ($call) = grep { $_->{tool} eq 'trigger-long-running-operation' } @log;
like(($call // {})->{ct}, qr{^text/event-stream}, 'the long call was relayed as an SSE stream');
ok(grep({ $_->{method} eq 'DELETE' && $_->{status} eq '200' } @log), 'the client\'s DELETE went through: 200');
ok(!grep({ $_->{status} !~ /^(?:200|202|405)$/ } @log), 'no request failed at the gateway')
    or diag(explain \@log);

$t->stop;
stop_process($node->{pid});
done_testing;
