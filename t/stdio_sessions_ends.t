# mcp_stdio_sessions: what a session's child says on its own reaches the
# session's GET stream (Everything's simulated log messages), and an open
# GET stream keeps the session in use past the zone's timeout; an idle
# session expires in the store and its child is stopped; a client that
# leaves mid-call cancels its request at the child and the session goes
# on with the same child; a child that answers initialize but not a ping
# ends its session (a [warn] line, then 404).  One worker; with two, a
# [warn] line says that sessions do not cross workers yet.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Time::HiRes qw(sleep time);
use File::Temp ();
use JSON::PP qw(decode_json);
use McpTest timeout => 120;
use McpAssert;
use McpGateway qw(node_available node_bin npm_dir);

my $why = node_available('@modelcontextprotocol/server-everything');
plan skip_all => $why if $why;
my $NODE = Cwd::abs_path(node_bin());
my $EV   = Cwd::abs_path(npm_dir() . '/node_modules/@modelcontextprotocol/server-everything/dist/index.js');

# answers initialize, and nothing else
my $dir = File::Temp::tempdir(CLEANUP => 1);
my $MUTE = "$dir/mute.js";
open(my $fh, '>', $MUTE) or die "$MUTE: $!";
print $fh <<'JS';
require('readline').createInterface({ input: process.stdin }).on('line', function (l) {
    var m = JSON.parse(l);
    if (m.method === 'initialize') {
        process.stdout.write(JSON.stringify({ jsonrpc: '2.0', id: m.id,
            result: { protocolVersion: '2025-11-25', capabilities: {},
                      serverInfo: { name: 'mute', version: '1' } } }) + '\n');
    }
});
JS
close $fh;

my $t = McpTest->new(
    workers => 1,
    http    => "mcp_session_zone zone=stdio_s:1m timeout=4s;",
    server  => <<"NGX",
        location = /mcp {
            mcp_stdio $NODE $EV stdio;
            mcp_stdio_sessions on;
            mcp_session stdio_s;
            mcp_stdio_pool size=3;
            mcp_stdio_timeout 3s;
            mcp_stdio_env PATH=/usr/bin:/bin;
        }
        location = /mute {
            mcp_stdio $NODE $MUTE;
            mcp_stdio_sessions on;
            mcp_stdio_pool size=1;
            mcp_stdio_timeout 2s;
        }
NGX
);
$t->start;

sub kids {
    my @k;
    for my $w ($t->worker_pids) {
        for (`ps -o pid=,stat= --ppid $w 2>/dev/null`) {
            my ($pid, $st) = /^\s*(\d+)\s+(\S+)/ or next;
            push @k, $pid if $st !~ /^Z/;
        }
    }
    return @k;
}

sub post {
    my ($sid, $msg, %o) = @_;
    return $t->mcp_post($sid, $msg, protocol_version => '2025-11-25', timeout => 15,
                        path => $o{path} // '/mcp', ($o{stream} ? (stream => 1) : ()));
}

sub init {
    my ($path) = @_;
    my $r = post(undef, { jsonrpc => '2.0', id => 'i', method => 'initialize',
        params => { protocolVersion => '2025-11-25', capabilities => {},
                    clientInfo => { name => 't', version => '1' } } }, path => $path);
    my $sid = $r->{headers}{'mcp-session-id'};
    post($sid, { jsonrpc => '2.0', method => 'notifications/initialized' }, path => $path)
        if defined $sid;
    return $sid;
}

sub last_msg {
    my ($r) = @_;
    return $r->{messages}[-1] // {};
}

# --- the GET stream: the child's own notifications ------------------------------

my $sid = init('/mcp');
ok(defined $sid, 'a session');

my $g = $t->mcp_get_stream($sid, timeout => 5);
is($g->status, 200, 'GET: the session\'s stream');

my $r = post($sid, { jsonrpc => '2.0', id => 'log', method => 'tools/call',
                     params => { name => 'toggle-simulated-logging', arguments => {} } });
is(last_msg($r)->{id}, 'log', 'simulated logging on');
my $used = time;

my $note;
my $until = time + 9;
while (time < $until) {
    my $ev = $g->next_event($until - time) or last;
    next unless defined $ev->{data};
    my $m = eval { decode_json($ev->{data}) } or next;
    if (($m->{method} // '') eq 'notifications/message') { $note = $m; last }
}
ok($note, 'the child\'s log message on the GET stream');
ok(!defined $note->{id}, '... a notification');

# past the zone's 4 s, the open GET stream kept the session in use
my $rest = 5 - (time - $used);
sleep $rest if $rest > 0;
$r = post($sid, { jsonrpc => '2.0', id => 'still', method => 'ping' });
is($r->{status}, 200, 'a GET stream open: the session outlives the zone\'s timeout');
is(last_msg($r)->{id}, 'still', '... and answers');
$g->close;

# --- a client that leaves mid-call ------------------------------------------------

my @before = sort(kids());
my $call = post($sid, { jsonrpc => '2.0', id => 'long', method => 'tools/call',
                        params => { name => 'trigger-long-running-operation',
                                    arguments => { duration => 20, steps => 2 } } },
                stream => 1);
sleep 0.3;
$call->close;
sleep 0.3;
$r = post($sid, { jsonrpc => '2.0', id => 'after', method => 'tools/call',
                  params => { name => 'echo', arguments => { message => 'still here' } } });
is(last_msg($r)->{result}{content}[0]{text}, 'Echo: still here',
   'a client that left mid-call: the session goes on');
is_deeply([ sort(kids()) ], \@before, '... with the same child');

# --- expiry: an idle session ends, and its child -------------------------------------

my $sid2 = init('/mcp');
ok(defined $sid2, 'a second session');
is(scalar(kids()), 2, 'two children');
post($sid, { jsonrpc => '2.0', id => 'x', method => 'tools/call',
             params => { name => 'toggle-simulated-logging', arguments => {} } });
my $n = 2;
for (1 .. 200) { $n = kids(); last if $n == 0; sleep 0.1 }
is($n, 0, 'idle past the zone\'s timeout: both children stopped');
$r = post($sid2, { jsonrpc => '2.0', id => 'gone', method => 'tools/list' });
is($r->{status}, 404, 'an expired session: 404');
is($r->{json}{id}, 'gone', '... with the request\'s id');

# --- a child that does not answer a ping -----------------------------------------------

my $mark = $t->log_mark;
my $sid3 = init('/mute');
ok(defined $sid3, 'a session of a server that answers initialize alone');
ok($t->wait_for_log(qr/mcp_stdio: pid \d+ of a session did not answer a ping within 2000, stopped/, 10, $mark),
   'idle, pinged, no answer: stopped with a [warn] line');
$r = post($sid3, { jsonrpc => '2.0', id => 'm', method => 'ping' }, path => '/mute');
is($r->{status}, 404, 'its session is gone: 404');
my $log = $t->log_since($mark) // '';
unlike($log, qr/\Q$sid3\E/, 'the session id is never logged');
$t->stop;

# --- more than one worker: said, as the configuration is taken -------------------------

my $t2 = McpTest->new(
    workers => 2,
    server  => <<"NGX",
        location = /mcp {
            mcp_stdio $NODE $MUTE;
            mcp_stdio_sessions on;
            mcp_stdio_timeout 2s;
        }
NGX
);
$t2->start;

sub kids2 {
    my $n = 0;
    for my $w ($t2->worker_pids) {
        $n += grep { /^\s*\d+\s+[^Z\s]/ } `ps -o pid=,stat= --ppid $w 2>/dev/null`;
    }
    return $n;
}

# a DELETE on either worker ends the session; on its owner's child's
# worker at once, on the other through the store, which wakes the owner
# (at the latest its next look, 2 s), before its unanswered ping would
# stop it (4 s)
for my $round (1 .. 3) {
    my $r0 = $t2->mcp_post(undef, { jsonrpc => '2.0', id => 'i', method => 'initialize',
        params => { protocolVersion => '2025-11-25', capabilities => {},
                    clientInfo => { name => 't', version => '1' } } },
        protocol_version => '2025-11-25', timeout => 10);
    my $s = $r0->{headers}{'mcp-session-id'};
    ok(defined $s, "2 workers, round $round: a session");
    my $d = $t2->mcp_delete($s);
    my $t0 = time;
    is($d->{status}, 200, "2 workers, round $round: DELETE on either worker: 200");
    my $k = 1;
    for (1 .. 35) { $k = kids2(); last if $k == 0; sleep 0.1 }
    is($k, 0, "2 workers, round $round: the child stopped within 3.5 s");
}
unlike($t2->error_log, qr/\[warn\].*mcp_stdio_sessions/,
     'worker_processes 2: no [warn] line of mcp_stdio_sessions (sessions cross workers)');
$t2->stop;

done_testing;
