# mcp_stdio with 4 workers and server-everything: calls spread over the
# workers' pools, the total bound held across them, no zombie; two reloads
# while calls are in flight (each answered, the old workers' children
# stopped and reaped), then nginx -s quit: no child left.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Time::HiRes qw(sleep time);
use IO::Socket::INET;
use JSON::PP qw(encode_json decode_json);
use McpTest timeout => 180;
use McpAssert;
use McpGateway qw(node_available node_bin npm_dir);

my $why = node_available('@modelcontextprotocol/server-everything');
plan skip_all => $why if $why;
my $NODE = Cwd::abs_path(node_bin());
my $EV   = Cwd::abs_path(npm_dir() . '/node_modules/@modelcontextprotocol/server-everything/dist/index.js');

# a mark in the children's environment: the orphan check below finds this
# test's children only, not those of another test running beside it
my $MARK = McpTest::process_mark('stdio_workers');

my $t = McpTest->new(
    workers => 4,
    server  => <<"NGX",
        location = /mcp {
            mcp_stdio $NODE $EV stdio;
            mcp_stdio_pool size=2 total=6;
            mcp_stdio_env $MARK;
            mcp_stdio_timeout 20s;
        }
NGX
);
$t->start;

# every child of every worker: [pid, stat]
sub children {
    my @c;
    for my $w ($t->worker_pids(all => 1)) {
        for (`ps -o pid=,stat=,args= --ppid $w 2>/dev/null`) {
            push @c, [ $1, $2 ] if /^\s*(\d+)\s+(\S+)\s+.*server-everything/;
        }
    }
    return @c;
}

# n calls at once, each on its own connection; their replies' ids
sub calls {
    my ($n, $tag, $args) = @_;
    my @socks;
    for my $i (1 .. $n) {
        my $body = encode_json({ jsonrpc => '2.0', id => "$tag$i", method => 'tools/call',
                                 params => { name => $args ? 'trigger-long-running-operation' : 'echo',
                                             arguments => $args // { message => "$tag$i" } } });
        my $s = IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $t->port) or die;
        print $s "POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
               . "Accept: application/json, text/event-stream\r\nConnection: close\r\n"
               . "Content-Length: " . length($body) . "\r\n\r\n$body";
        push @socks, $s;
    }
    return map {
        my $s = $_;
        my $all = do { local $/; <$s> } // '';
        my ($json) = $all =~ /\r\n\r\n(.*)\z/s;
        eval { decode_json($json // '') } || {};
    } @socks;
}

my ($ok, $err) = (0, 0);
for my $round (1 .. 5) {
    for my $m (calls(8, "r$round-")) {
        if (($m->{result}{content}[0]{text} // '') eq "Echo: $m->{id}") { $ok++ }
        elsif ($m->{error}) { $err++ }
    }
}
is($ok + $err, 40, "40 calls over 4 workers: each answered ($ok results, $err errors)");
cmp_ok($ok, '>=', 30, '... most of them results (a worker over the total answers an error)');

my @c = children();
cmp_ok(scalar @c, '<=', 6, 'total=6 across 4 workers of size=2: ' . scalar(@c) . ' children');
ok(!grep({ $_->[1] =~ /Z/ } @c), 'no zombie');

# two reloads while 8 one-second calls are in flight
my @old = map { $_->[0] } @c;
my $master = $t->master_pid;
my $pid = fork // die;
if (!$pid) {
    sleep 0.3;
    kill 'HUP', $master;
    sleep 0.3;
    kill 'HUP', $master;
    require POSIX;
    POSIX::_exit(0);
}
my @m = calls(8, 'fly', { duration => 1, steps => 1 });
waitpid $pid, 0;
sleep 1;    # the second generation settles
my $answered = grep { ($_->{result}{content}[0]{text} // '') =~ /completed/ || $_->{error} } @m;
my $completed = grep { ($_->{result}{content}[0]{text} // '') =~ /completed/ } @m;
is($answered, 8, "two reloads during 8 calls: each call answered ($completed completed)");
sleep 1;
ok(!grep({ kill 0, $_ } @old), 'the old workers\' children are gone (' . scalar(@old) . ' before)');

my $after = grep { ($_->{result}{content}[0]{text} // '') eq "Echo: $_->{id}" } calls(4, 'after-');
is($after, 4, 'after the reloads: calls served by the new workers\' children');
@c = children();
ok(!grep({ $_->[1] =~ /Z/ } @c), 'after the reloads: no zombie (' . scalar(@c) . ' children)');

my @last = map { $_->[0] } @c;
is(scalar(McpTest::marked_pids($MARK)), scalar(@c), 'the mark is in each child\'s environment, and in nothing else (' . scalar(@c) . ')');
$t->stop;
ok(!grep({ kill 0, $_ } @last), 'nginx -s quit: no child left');
my @orphans = McpTest::marked_pids($MARK);
ok(!@orphans, 'no child of this test anywhere (its mark in no process\'s environment)')
    or diag map { (McpTest::_slurp("/proc/$_/cmdline") // '') . "\n" } @orphans;

done_testing;
