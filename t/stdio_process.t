# mcp_stdio's process layer, with /bin/sh children that report what they
# were given on stderr (which the worker logs): no descriptor but 0, 1 and
# 2; the allowlisted environment alone; the working directory; the
# rlimits; stderr lines cut at 512 bytes and at most 50 a second logged;
# a crash loop backed off (a program that exits at once is not started
# again and again); the total bound across workers answered with a
# JSON-RPC error at once, never a hang; no child left at the end.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Time::HiRes qw(sleep time);
use McpTest timeout => 120;
use McpAssert;
use McpGateway qw(node_bin);
use IO::Socket::INET;

my $SH   = '/bin/sh';
my $NODE = -x node_bin() ? Cwd::abs_path(node_bin()) : '/usr/bin/node';

# each script writes its report and then stays silent on stdout, so the
# pool's initialize is never answered and the request times out
my $REPORT = q{for f in /proc/$$/fd/*; do echo "fd:${f##*/}" >&2; done;}
           . q{ echo "cwd:$(pwd)" >&2; echo "nofile:$(ulimit -n)" >&2;}
           . q{ env | sed "s/^/env:/" >&2; exec sleep 30};
my $FLOOD  = q{i=0; while [ $i -lt 300 ]; do echo "flood $i" >&2; i=$((i+1)); done;}
           . q{ printf "%0700d\n" 7 >&2; exec sleep 30};

# in the environment of /bound's children, to count them and no others
my $BOUND_MARK = McpTest::process_mark('stdio_process');

# answers initialize, then nothing: not even a ping
my $MUTE = q~require("readline").createInterface({ input: process.stdin }).on("line", function (l) {~
         . q~ var m = JSON.parse(l); if (m.method === "initialize") console.log(JSON.stringify(~
         . q~{ jsonrpc: "2.0", id: m.id, result: { protocolVersion: "2025-11-25", capabilities: {},~
         . q~ serverInfo: { name: "mute", version: "1" } } })); });~;

$ENV{T_STDIO_NOT_PASSED} = 'leak';

my $t = McpTest->new(
    workers => 2,
    server  => <<"NGX",
        location = /report {
            mcp_stdio $SH -c '$REPORT';
            mcp_stdio_env PATH=/usr/bin:/bin;
            mcp_stdio_env T_STDIO_SET=yes;
            mcp_stdio_dir /tmp;
            mcp_stdio_limit nofile=77 core=0;
            mcp_stdio_pool size=1;
            mcp_stdio_timeout 1s;
            mcp_stdio_stderr notice;
        }
        location = /flood {
            mcp_stdio $SH -c '$FLOOD';
            mcp_stdio_env PATH=/usr/bin:/bin;
            mcp_stdio_pool size=1;
            mcp_stdio_timeout 1s;
            mcp_stdio_stderr notice;
        }
        location = /noise {
            mcp_stdio $SH -c 'i=0; while [ \$i -lt 100 ]; do echo noise; i=\$((i+1)); done; exec sleep 30';
            mcp_stdio_pool size=1;
            mcp_stdio_timeout 1s;
        }
        location = /crash {
            mcp_stdio /bin/false;
            mcp_stdio_pool size=1;
            mcp_stdio_timeout 3s;
        }
        location = /mute {
            mcp_stdio $NODE -e '$MUTE';
            mcp_stdio_pool size=1;
            mcp_stdio_timeout 1s;
        }
        location = /bound {
            mcp_stdio /bin/sleep 30;
            mcp_stdio_env $BOUND_MARK;
            mcp_stdio_pool size=1 total=1;
            mcp_stdio_timeout 2s;
        }
NGX
);
$t->start;

sub post {
    my ($path, $id, %o) = @_;
    return $t->mcp_post(undef, { jsonrpc => '2.0', id => $id, method => 'tools/list' },
                        path => $path, timeout => $o{timeout} // 10);
}

sub stderr_lines {
    my ($tag) = @_;
    return map { /mcp_stdio: pid \d+: \Q$tag\E:(.*)$/ ? $1 : () } split /\n/, $t->error_log;
}

# --- what a child is given ----------------------------------------------------------

my $r = post('/report', 1);
is($r->{json}{error}{code}, -32001, 'a child that never answers initialize: -32001');
is($r->{json}{id}, 1, '... under the request\'s id');
$t->wait_for_log(qr/env:/, 5);
sleep 0.3;
is_deeply([ stderr_lines('cwd') ], ['/tmp'], 'mcp_stdio_dir: its working directory');
is_deeply([ stderr_lines('nofile') ], [77], 'mcp_stdio_limit nofile=77: its RLIMIT_NOFILE');
my %env = map { /^([^=]+)=/ ? ($1 => 1) : () } stderr_lines('env');
delete $env{PWD};    # the shell's own
is_deeply([ sort keys %env ], [ 'PATH', 'T_STDIO_SET' ], 'its environment: the allowlist alone')
    or diag explain \%env;

# the worker's descriptors (its listening sockets, epoll, logs, zones) are
# not the child's: /bin/sleep, exec'ed directly, holds 0, 1 and 2 alone
{
    my $s = IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $t->port) or die;
    my $body = '{"jsonrpc":"2.0","id":1,"method":"tools/list"}';
    print $s "POST /bound HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
           . "Accept: application/json, text/event-stream\r\nConnection: close\r\n"
           . "Content-Length: " . length($body) . "\r\n\r\n$body";
    my $pid;
    for (1 .. 40) {
        ($pid) = $t->error_log =~ /mcp_stdio: started "\/bin\/sleep", pid (\d+)/;
        last if $pid;
        sleep 0.05;
    }
    sleep 0.2;
    my @fds = sort { $a <=> $b } grep { /^\d+$/ } map { m{/(\d+)$} ? $1 : () } glob("/proc/$pid/fd/*");
    is_deeply(\@fds, [ 0, 1, 2 ], 'the child holds descriptors 0, 1 and 2 alone') or diag "pid $pid";
    my $link = readlink("/proc/$pid/fd/0") // '';
    like($link, qr/^socket:/, '... its stdin a socket (the socketpair)');
    my $all = do { local $/; <$s> };
    like($all, qr/"code":-32001/, '... and its request times out with -32001');
    sleep 0.3;    # the backoff of the bound location's child
}

# --- stderr bounded ---------------------------------------------------------------

$r = post('/flood', 2);
sleep 1.5;
my @flood = grep { /mcp_stdio: pid \d+: flood \d+$/ } split /\n/, $t->error_log;
ok(@flood >= 40 && @flood <= 50, 'a flood of stderr: at most 50 lines a second logged')
    or diag scalar @flood;
my ($long) = grep { /^0{100}/ } map { /mcp_stdio: pid \d+: (.*)$/ ? $1 : () } split /\n/, $t->error_log;
ok(!defined $long || length($long) <= 512, 'a long stderr line is cut at 512 bytes');

# --- stdout lines that are not JSON-RPC: dropped, said once --------------------

$r = post('/noise', 'n1');
is($r->{json}{error}{code}, -32001, 'a child that writes no JSON-RPC: -32001');
my $said = () = $t->error_log =~ /wrote a line that is not a JSON-RPC message/g;
is($said, 1, '100 stray stdout lines: one log line');

# --- a crash loop backs off ---------------------------------------------------------

my $mark = $t->log_mark;
my $t0 = time;
$r = post('/crash', 3);
my $took = time - $t0;
is($r->{json}{error}{code}, -32001, 'a program that exits at once: -32001 when the wait ends');
cmp_ok($took, '>=', 2.5, '... after mcp_stdio_timeout');
my $starts = () = $t->log_since($mark) =~ /mcp_stdio: started "\/bin\/false"/g;
my @starts_log = $t->log_since($mark) =~ /(mcp_stdio: started[^\n]*)/g;
ok($starts >= 2 && $starts <= 5, "3 s of a crash loop: $starts starts (250 ms, doubling), not hundreds");

# --- an idle child that stops answering is found by a ping ---------------------

SKIP: {
    skip 'no node', 3 unless -x $NODE;
    my $mark = $t->log_mark;
    $r = $t->mcp_post(undef, { jsonrpc => '2.0', id => 'm1', method => 'initialize',
                               params => { protocolVersion => '2025-11-25', capabilities => {},
                                           clientInfo => { name => 't', version => '1' } } },
                      path => '/mute', timeout => 5);
    is($r->{json}{result}{serverInfo}{name}, 'mute', 'a server that answers initialize alone: served');
    ok($t->wait_for_log(qr/mcp_stdio: pid \d+ did not answer a ping within 1000, stopped/, 4, $mark),
       'idle, it is pinged after mcp_stdio_timeout and stopped when the ping is not answered');
    ok($t->wait_for_log(qr/mcp_stdio: pid \d+ exited on signal 15/, 3, $mark), '... with SIGTERM, and reaped');
}

# --- the total bound across workers -------------------------------------------------

my (%codes, $slowest);
for my $i (1 .. 8) {
    my $t1 = time;
    my $x = post('/bound', "b$i", timeout => 5);
    my $d = time - $t1;
    $slowest = $d if !defined $slowest || $d > $slowest;
    $codes{ $x->{json}{error}{code} // 'none' }++;
}
my $bound_children = () = McpTest::marked_pids($BOUND_MARK);
cmp_ok($bound_children, '<=', 1, 'total=1: at most one child across the two workers');
ok(!$codes{none}, 'total=1: every request answered with a JSON-RPC error, none hangs')
    or diag explain \%codes;
cmp_ok($slowest, '<', 3, 'total=1: each within mcp_stdio_timeout');

# the children report, then end
my @pids;
for my $w ($t->worker_pids) {
    push @pids, map { /(\d+)/ ? $1 : () } `ps -o pid= --ppid $w`;
}
$t->stop;
ok(!grep({ kill 0, $_ } @pids), 'nginx -s quit: no child left') or diag "@pids";

# --- no connection left for a child's sockets (worker_connections) -------------

{
    my $u = McpTest->new(workers => 1, conf => <<'NGX');
%%LOAD_MODULE%%worker_processes 1;
master_process on;
daemon off;
pid %%PREFIX%%/logs/nginx.pid;
error_log %%PREFIX%%/logs/error.log info;
events { worker_connections 4; }
http {
    access_log off;
    server {
        listen 127.0.0.1:%%PORT%%;
        location = /x { mcp_stdio /bin/sleep 30; mcp_stdio_pool size=1; mcp_stdio_timeout 1s; }
    }
}
NGX
    $u->expect_log_any(qr/worker_connections are not enough/);
    $u->start;
    my $x = $u->mcp_post(undef, { jsonrpc => '2.0', id => 'wc', method => 'tools/list' },
                         path => '/x', timeout => 5);
    is($x->{json}{error}{code}, -32001, 'no connection for its sockets: the child is stopped, the caller gets -32001');
    my $starts = () = $u->error_log =~ /mcp_stdio: started/g;
    cmp_ok($starts, '<=', 3, "... and the pool backs off ($starts starts in 1 s)");
    sleep 0.2;
    my @left = map { `ps -o pid= --ppid $_` } $u->worker_pids;
    is(scalar @left, 0, '... each reaped');
    $u->stop;
}

done_testing;
