# An upstream that lists many tools (600): the zone keeps a record of
# each (mcp_pass_check_arguments learns them all), and mcp_pass_retry
# finds the hints of the first and the last listed among them, on every
# tools/call (ngx_http_mcp_tools_find(), by the zone's tree of tools).
# The upstream is t/fault_reload_retry.t's: each connection's second
# request is read and dropped without a reply, so a call is sent again
# only when its tool's hint was found; an unhinted tool's call is sent
# once.  A second upstream key listing 600 more (past the 1024 kept)
# makes the zone forget the oldest: the first upstream's list, listed
# again, is found again.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use McpTest;
use McpAssert;
use McpGateway;

my $LOG = "/tmp/mcptest-toolsmany-$$.log";
unlink $LOG;
END { unlink $LOG if defined $LOG }

my @tools = map { { name => "tool-$_" } } 0 .. 599;
$tools[0]{annotations} = { readOnlyHint => JSON::PP::true };
$tools[599]{annotations} = { idempotentHint => JSON::PP::true };
$tools[300]{annotations} = { readOnlyHint => JSON::PP::true };

my $up = dying_upstream('m1', $LOG, \@tools);
END { kill 'TERM', $up->{pid} if $up }

my $t = McpTest->new(
    workers => 1,
    http => <<"NGX",
    mcp_session_zone zone=many:4m;
    upstream many  { server 127.0.0.1:$up->{port}; keepalive 4; }
    upstream other { server 127.0.0.1:$up->{port}; keepalive 4; }
NGX
    server => <<'NGX',
        location = /mcp   { mcp_pass http://many/mcp; mcp_session many;
                            mcp_pass_check_arguments on;
                            mcp_pass_filter_buffer_size 256k; }
        location = /other { mcp_pass http://other/mcp; mcp_session many;
                            mcp_pass_check_arguments on;
                            mcp_pass_filter_buffer_size 256k; }
NGX
)->start;

$t->expect_log_error(
    qr/upstream prematurely closed connection while reading response header/,
    qr/recv\(\) failed \(104: Connection reset by peer\) while reading response header/,
);

sub mark { -s $LOG // 0 }
sub got { dying_got($LOG, @_) }

sub prime { dying_prime($t, @_) }
sub call { dying_call($t, @_) }

sub list {
    my ($sid, $path, $id) = @_;
    my $r = $t->mcp_post($sid, qq({"jsonrpc":"2.0","id":"$id","method":"tools/list"}), path => $path);
    return scalar @{ (($r->{json} // {})->{result} // {})->{tools} // [] };
}

sub calls {
    my ($sid, $path, $round) = @_;
    for my $tool (qw(tool-0 tool-300 tool-599)) {
        prime($sid, $path);
        my $m = mark();
        my $r = call($sid, "c$round-$tool", $tool, path => $path);
        is($r->{status}, 200, "$path round $round: tools/call $tool (hinted, one of 600): 200");
        is_deeply([ got($m, qr/"c$round-\Q$tool\E"/) ], [ 2, 1 ],
                  "$path round $round: ${tool}'s hint found: sent again once");
    }
    for my $tool (qw(tool-1 tool-598)) {
        prime($sid, $path);
        my $m = mark();
        my $r = call($sid, "c$round-$tool", $tool, path => $path, quiet => 1);
        is_rpc_error_body($r, 502, -32000, "c$round-$tool",
                          "$path round $round: tools/call $tool (no hint): the JSON-RPC error");
        is_deeply([ got($m, qr/"c$round-\Q$tool\E"/) ], [ 1, 0 ],
                  "$path round $round: $tool sent once, never twice");
    }
}

my ($sid) = $t->mcp_initialize(path => '/mcp');
ok(defined $sid, 'initialize through the gateway');
is(list($sid, '/mcp', 'l1'), 600, 'tools/list: 600 tools');
calls($sid, '/mcp', 1);

# 600 more of another upstream key: the zone forgets the oldest records
my ($sid2) = $t->mcp_initialize(path => '/other');
ok(defined $sid2, 'initialize through the second location');
is(list($sid2, '/other', 'l2'), 600, 'tools/list of the second: 600 tools');
calls($sid2, '/other', 2);

# the first upstream's list again: learnt anew, found again
is(list($sid, '/mcp', 'l3'), 600, 'tools/list of the first again: 600 tools');
calls($sid, '/mcp', 3);

done_testing;
