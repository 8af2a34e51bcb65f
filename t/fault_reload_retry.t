# Fault: a gateway hop on a reused keepalive connection that the upstream
# closes before answering (its worker exits at a reload, or its
# keepalive_timeout ends as the gateway writes).  mcp_pass sends the
# request again on another connection when that is harmless (initialize,
# lists, reads, ping, notifications, a client's answers, a DELETE, and a
# tools/call of a tool listed with readOnlyHint or idempotentHint); any
# other request is never sent twice and the client gets the JSON-RPC
# error, as with mcp_pass_retry off for all of them.
#
# The upstream here is a small MCP server that answers the first request
# of each connection with keep-alive and, on the connection's second
# request, reads it and closes without a byte of reply: every request the
# gateway sends on a kept connection meets a dying one.  Each request it
# reads is logged ("served" or "dropped"), so the test sees how many
# times the upstream got each.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use McpTest;
use McpAssert;
use McpGateway;

my $LOG = "/tmp/mcptest-retry-$$.log";
unlink $LOG;
END { unlink $LOG if defined $LOG }

my ($a1, $a2, $b1) = map { dying_upstream($_, $LOG) } qw(a1 a2 b1);
END { kill 'TERM', map { $_->{pid} } grep { defined } $a1, $a2, $b1 }

my $t = McpTest->new(
    workers => 1,
    http => <<"NGX",
    log_format retry '\$http_x_case \$upstream_status';
    upstream dying     { server 127.0.0.1:$b1->{port}; keepalive 4; }
    upstream dying_off { server 127.0.0.1:$b1->{port}; keepalive 4; }
    upstream dying_view { server 127.0.0.1:$b1->{port}; keepalive 4; }
    upstream dying_two {
        mcp_affinity;
        server 127.0.0.1:$a1->{port};
        server 127.0.0.1:$a2->{port};
        keepalive 4;
    }
NGX
    server => <<'NGX',
        access_log logs/retry.log retry;
        location = /mcp      { mcp_pass http://dying/mcp; }
        location = /off      { mcp_pass http://dying_off/mcp; mcp_pass_retry off; }
        location = /view     { mcp_pass http://dying_view/mcp; mcp_pass_tool read_it as=reader;
                               mcp_pass_tool launch annotation=idempotentHint:true; }
        location = /affinity { mcp_pass http://dying_two/mcp; }
NGX
)->start;

$t->expect_log_error(
    qr/upstream prematurely closed connection while reading response header/,
    qr/recv\(\) failed \(104: Connection reset by peer\) while reading response header/,
);

# what the upstream read since $mark; how often it read and answered a
# message with this id (or method)
sub upstream_got { dying_read($LOG, $_[0]) }
sub mark { -s $LOG // 0 }
sub got { dying_got($LOG, @_) }

sub prime { dying_prime($t, @_) }
sub call { dying_call($t, @_) }

# --- mcp_pass_retry on (the default) -----------------------------------------

my ($sid, $res);
{
    my $m = mark();
    ($sid, $res) = $t->mcp_initialize(path => '/mcp');
    ok(defined $sid, 'initialize through the gateway');
    my ($n, $served) = got($m, qr/notifications\/initialized/);
    is_deeply([ $n, $served ], [ 2, 1 ],
              'notifications/initialized met a dying kept connection and went again (202)');
}

{
    my $m = mark();
    my $r = $t->mcp_post($sid, '{"jsonrpc":"2.0","id":"l1","method":"tools/list"}', path => '/mcp',
                         headers => { 'X-Case' => 'list-1' });
    is($r->{status}, 200, 'tools/list on a dying kept connection: 200');
    my $line;
    for (1 .. 40) {    # the access log is written as the request ends
        ($line) = grep { /^list-1 / } split /\n/, (McpTest::_slurp($t->prefix . '/logs/retry.log') // '');
        last if defined $line;
        select undef, undef, undef, 0.05;
    }
    is($line, 'list-1 502, 200', '$upstream_status: the failed try, then the answer');
    is(scalar @{ ($r->{json}{result} // {})->{tools} // [] }, 4, 'tools/list: the four tools');
    is_deeply([ got($m, qr/"l1"/) ], [ 2, 1 ], 'tools/list: dropped once, sent again, answered');
}

for my $case ([ 'ping', '{"jsonrpc":"2.0","id":"p1","method":"ping"}', 200 ],
              [ 'resources/read',
                '{"jsonrpc":"2.0","id":"rr1","method":"resources/read","params":{"uri":"x:1"}}', 200 ],
              [ 'a client\'s answer', '{"jsonrpc":"2.0","id":"srv-7","result":{}}', 202 ])
{
    my ($what, $body, $status) = @$case;
    my ($id) = $body =~ /"id":"([^"]+)"/;
    my $m = mark();
    my $r = $t->mcp_post($sid, $body, path => '/mcp');
    is($r->{status}, $status, "$what on a dying kept connection: $status");
    is_deeply([ got($m, qr/"\Q$id\E"/) ], [ 2, 1 ], "$what: sent again once");
}

for my $tool (qw(read_it same_again)) {
    my $m = mark();
    my $r = call($sid, "c-$tool", $tool, path => '/mcp');
    is($r->{status}, 200, "tools/call $tool (listed with a hint): 200");
    is((($r->{json}{result} // {})->{content} // [{}])->[0]{text}, "called $tool",
       "tools/call $tool: the upstream's result");
    is_deeply([ got($m, qr/"c-\Q$tool\E"/) ], [ 2, 1 ], "tools/call $tool: sent again once");
}

for my $tool (qw(launch plain unlisted)) {
    prime($sid, '/mcp');
    my $m = mark();
    my $r = call($sid, "c-$tool", $tool, path => '/mcp', quiet => 1);
    is_rpc_error_body($r, 502, -32000, "c-$tool",
                      "tools/call $tool (no hint): the JSON-RPC error, as before");
    is_deeply([ got($m, qr/"c-\Q$tool\E"/) ], [ 1, 0 ],
              "tools/call $tool: the upstream got it once, never twice");
}

{
    prime($sid, '/mcp');
    my $m = mark();
    my $r = $t->mcp_delete($sid, path => '/mcp');
    ok($r->{status} >= 200 && $r->{status} < 300, "DELETE on a dying kept connection: $r->{status}");
    my @d = grep { $_->[2] eq 'DELETE' } @{ upstream_got($m) };
    is(scalar @d, 2, 'DELETE: sent again once');
}

# --- the same through mcp_affinity, a session pinned to its replica ----------

{
    my ($s2) = $t->mcp_initialize(path => '/affinity');
    ok(defined $s2, 'mcp_affinity: initialize, then notifications/initialized again on a dying connection');
    my $m = mark();
    my $r = $t->mcp_post($s2, '{"jsonrpc":"2.0","id":"al","method":"tools/list"}', path => '/affinity');
    is($r->{status}, 200, 'mcp_affinity: tools/list sent again: 200');
    my @tags = map { $_->[1] } grep { $_->[3] =~ /"al"/ } @{ upstream_got($m) };
    is(scalar @tags, 2, 'mcp_affinity: tools/list got twice');
    is(scalar(keys %{{ map { $_ => 1 } @tags }}), 1, 'mcp_affinity: both times to the session\'s replica');

    prime($s2, '/affinity');
    $m = mark();
    $r = call($s2, 'a-launch', 'launch', path => '/affinity', quiet => 1);
    is_rpc_error_body($r, 502, -32000, 'a-launch', 'mcp_affinity: an unhinted tools/call is not sent again');
    is_deeply([ got($m, qr/"a-launch"/) ], [ 1, 0 ], 'mcp_affinity: the upstream got it once');

    $r = $t->mcp_post($s2, '{"jsonrpc":"2.0","id":"ap","method":"ping"}', path => '/affinity');
    is($r->{status}, 200, 'mcp_affinity: the session is still there after the failed call');

    # the kept connections that died were not the replicas' failures: none
    # was taken out for fail_timeout, so a request no session pins (a new
    # session's initialize) finds one
    my ($s3) = $t->mcp_initialize(path => '/affinity');
    ok(defined $s3, 'mcp_affinity: a new session after those failures finds a replica');
    unlike($t->error_log, qr/upstream server temporarily disabled/,
           'mcp_affinity: no replica was disabled by a dying kept connection');
}

# --- a curated view: the upstream's hints, under its names --------------------

{
    my ($s4) = $t->mcp_initialize(path => '/view');
    my $r = $t->mcp_post($s4, '{"jsonrpc":"2.0","id":"vl","method":"tools/list"}', path => '/view');
    my %shown = map { $_->{name} => $_ } @{ ($r->{json}{result} // {})->{tools} // [] };
    ok($shown{reader} && $shown{launch}{annotations}{idempotentHint}, 'the view: reader, and launch marked idempotent');

    prime($s4, '/view');
    my $m = mark();
    $r = call($s4, 'v-reader', 'reader', path => '/view');
    is((($r->{json}{result} // {})->{content} // [{}])->[0]{text}, 'called read_it',
       'a renamed tool listed readOnlyHint by its upstream: sent again, answered');
    is_deeply([ got($m, qr/"v-reader"/) ], [ 2, 1 ], '... the upstream got it twice');

    # the hints are the upstream's own word, not a view's annotation=
    prime($s4, '/view');
    $m = mark();
    $r = call($s4, 'v-launch', 'launch', path => '/view', quiet => 1);
    is_rpc_error_body($r, 502, -32000, 'v-launch', 'a view\'s idempotentHint does not make a call go again');
    is_deeply([ got($m, qr/"v-launch"/) ], [ 1, 0 ], '... the upstream got it once');
}

# --- mcp_pass_retry off: what every client saw before ------------------------

{
    my ($s3) = $t->mcp_initialize(path => '/off', skip_initialized => 1);
    my $m = mark();
    my $r = $t->mcp_post($s3, '{"jsonrpc":"2.0","id":"ol","method":"tools/list"}', path => '/off', quiet => 1);
    is_rpc_error_body($r, 502, -32000, 'ol', 'retry off: tools/list on a dying kept connection: 502');
    is_deeply([ got($m, qr/"ol"/) ], [ 1, 0 ], 'retry off: sent once');
}

# --- nginx -t --------------------------------------------------------------

{
    my ($rc, $out) = McpTest->new(server => 'location = /m { mcp_pass http://127.0.0.1:1/mcp; mcp_pass_retry maybe; }')
                           ->nginx_t;
    isnt($rc, 0, 'nginx -t refuses mcp_pass_retry maybe');
    like($out, qr/invalid value "maybe" in "mcp_pass_retry" directive/, '... and says why');
}

done_testing;
