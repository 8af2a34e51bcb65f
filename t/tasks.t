#!/usr/bin/perl
# Tasks (2026-07-28, io.modelcontextprotocol/tasks) across workers: a task
# created on one worker is polled, cancelled and its result fetched on
# others; another client (per_client key) does not find it; after its ttl
# it is gone; a client at its quota of tasks gets a clear error; lifecycle
# lines name the task by its id alone.
#
# Port 2 listens with reuseport, so the kernel spreads connections over
# the four workers; each request carries X-Seq, and the access log says
# which worker ($pid) served which request.  Keepalive connections pinned
# to known workers make the cross-worker steps deterministic.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Time::HiRes ();
use McpTest;
use McpAssert qw($ACK);
use McpSpread;

my $http = <<'NGX';
    mcp_session_zone zone=tasks:1m per_client=$http_x_client:100;
    mcp_session_zone zone=small:1m per_client=$http_x_client:100 tasks_per_client=2;
    log_format spread '$pid $http_x_seq';
    server {
        listen 127.0.0.1:%%PORT2%% reuseport;
        access_log %%PREFIX%%/logs/spread.log spread;
        keepalive_requests 1000;
        location = /mcp   { mcp on; mcp_builtin everything; mcp_session tasks; }
        location = /short { mcp on; mcp_builtin everything; mcp_session tasks;
                            mcp_task_timeout 1s; }
        location = /small { mcp on; mcp_builtin everything; mcp_session small; }
    }
NGX

my $t = McpTest->new(ports => 2, http => $http,
                     server => 'location = /mcp { mcp on; mcp_builtin everything; }')->start;
my @w = $t->worker_pids;
is(scalar @w, 4, 'four workers');

# one 2026-07-28 request; returns (message, response, seq)
sub rpc { spread_rpc($t, @_) }

# the worker that served request $id
sub served_by { spread_served_by($t, @_) }

# keepalive connections, one per worker, found with server/discover
my %conn = %{ (spread_conns($t))[0] };
my @pids = sort keys %conn;
cmp_ok(scalar @pids, '>=', 3, 'keepalive connections to at least three workers');
my ($A, $B, $C) = @pids;

# --- created on A, polled on B, result on C --------------------------------------

my ($created) = rpc('tools/call', { name => 'slow_compute', arguments => { seconds => 1, label => 'x' } },
                    conn => $conn{$A});
my $res = $created->{result} // {};
is($res->{resultType}, 'task', 'slow_compute with the extension: a task');
like($res->{taskId} // '', qr/^[0-9a-f]{32}$/, 'task id: 128 random bits in hex');
my $id = $res->{taskId} // 'none';
is($res->{status}, 'working', 'created working');
ok(!exists $res->{task} && exists $res->{ttlMs}, 'flat CreateTaskResult with ttlMs');

my ($got, undef, $gseq) = rpc('tasks/get', { taskId => $id }, conn => $conn{$B});
is(served_by($gseq), $B, 'tasks/get served by another worker');
is(($got->{result} // {})->{taskId}, $id, 'tasks/get on another worker finds the task');
is(($got->{result} // {})->{status}, 'working', '... working');

my $done;
for (1 .. 50) {
    ($done) = rpc('tasks/get', { taskId => $id }, conn => $conn{$C});
    last if (($done->{result} // {})->{status} // '') ne 'working';
    Time::HiRes::sleep(0.1);
}
is($done->{result}{status}, 'completed', 'tasks/get on a third worker: completed');
is($done->{result}{result}{content}[0]{text}, 'Computed x', '... with the result inlined');

# --- another client ----------------------------------------------------------------

my ($other) = rpc('tasks/get', { taskId => $id }, client => 'bob', conn => $conn{$A});
is(($other->{error} // {})->{code}, -32602, 'another client: -32602, not found');
($other) = rpc('tasks/cancel', { taskId => $id }, client => 'bob', conn => $conn{$B});
is(($other->{error} // {})->{code}, -32602, 'another client cannot cancel it');
($other) = rpc('tasks/get', { taskId => $id }, caps => {}, conn => $conn{$B});
is(($other->{error} // {})->{code}, -32021, 'without the extension: -32021 before any lookup');
is_deeply((($other->{error} // {})->{data} // {})->{requiredCapabilities},
          { extensions => { 'io.modelcontextprotocol/tasks' => {} } },
          '... naming the extension it needs');

# --- cancelled on another worker ------------------------------------------------------

my ($long) = rpc('tools/call', { name => 'slow_compute', arguments => { seconds => 60 } },
                 conn => $conn{$A});
my $lid = ($long->{result} // {})->{taskId} // 'none';
my ($ack, undef, $cseq) = rpc('tasks/cancel', { taskId => $lid }, conn => $conn{$B});
is(served_by($cseq), $B, 'tasks/cancel served by another worker than the one running it');
is_deeply($ack->{result}, $ACK, 'tasks/cancel: an empty ack');
my ($after) = rpc('tasks/get', { taskId => $lid }, conn => $conn{$C});
is(($after->{result} // {})->{status}, 'cancelled', 'cancelled at once, seen on a third worker');
($ack) = rpc('tasks/cancel', { taskId => $lid }, conn => $conn{$C});
is_deeply($ack->{result}, $ACK, 'cancelling again: the same ack');
ok($t->wait_for_log(qr/mcp task \Q$lid\E cancelled/, 5), 'the cancellation is logged');

# --- input on one worker, answer on another ------------------------------------------

my ($ask) = rpc('tools/call', { name => 'confirm_delete', arguments => { filename => 'f.txt' } },
                conn => $conn{$A});
my $aid = ($ask->{result} // {})->{taskId} // 'none';
my $wait;
for (1 .. 50) {
    ($wait) = rpc('tasks/get', { taskId => $aid }, conn => $conn{$B});
    last if (($wait->{result} // {})->{status} // '') eq 'input_required';
    Time::HiRes::sleep(0.1);
}
is_deeply([ keys %{ $wait->{result}{inputRequests} // {} } ], ['confirm'],
          'confirm_delete: input_required, one request');
($ack) = rpc('tasks/update', { taskId => $aid,
                               inputResponses => { confirm => { action => 'accept',
                                                                content => { confirm => \1 } } } },
             conn => $conn{$C});
is_deeply($ack->{result}, $ACK, 'tasks/update on a third worker: ack');
for (1 .. 50) {
    ($wait) = rpc('tasks/get', { taskId => $aid }, conn => $conn{$A});
    last if (($wait->{result} // {})->{status} // '') eq 'completed';
    Time::HiRes::sleep(0.1);
}
is(($wait->{result}{result}{content} // [{}])->[0]{text}, 'Deleted f.txt',
   'the task resumed with the answer and completed');

# --- the ttl ---------------------------------------------------------------------------

my ($short) = rpc('tools/call', { name => 'slow_compute', arguments => { seconds => 0.2 } },
                  path => '/short');
my $sid = ($short->{result} // {})->{taskId} // 'none';
is(($short->{result} // {})->{ttlMs}, 1000, 'mcp_task_timeout 1s: ttlMs 1000');
my ($soon) = rpc('tasks/get', { taskId => $sid }, path => '/short');
ok(exists $soon->{result}, 'the task is there before its ttl');
Time::HiRes::sleep(1.3);
my ($gone) = rpc('tasks/get', { taskId => $sid }, path => '/short');
is(($gone->{error} // {})->{code}, -32602, 'after its ttl the task is gone');
ok($t->wait_for_log(qr/mcp task \Q$sid\E expired/, 5), 'the expiry is logged');

# --- quotas ------------------------------------------------------------------------------

my @q = map { (rpc('tools/call', { name => 'slow_compute', arguments => { seconds => 60 } },
                   path => '/small'))[0] } 1 .. 3;
is(scalar(grep { (($_->{result} // {})->{resultType} // '') eq 'task' } @q), 2,
   'tasks_per_client=2: two tasks');
is(($q[2]{error} // {})->{code}, -32000, 'the third: a JSON-RPC error');
like(($q[2]{error} // {})->{message} // '', qr/Too many tasks/, '... that says why');
my ($bobs) = rpc('tools/call', { name => 'slow_compute', arguments => { seconds => 60 } },
                 path => '/small', client => 'bob');
is(($bobs->{result} // {})->{resultType}, 'task', 'another client still gets one');
rpc('tasks/cancel', { taskId => ($_->{result} // {})->{taskId} // 'none' }, path => '/small')
    for @q[0, 1];
rpc('tasks/cancel', { taskId => ($bobs->{result} // {})->{taskId} // 'none' }, path => '/small',
    client => 'bob');

# --- 2025-11-25: the client asks with params.task --------------------------------------

{
    my ($sid) = $t->mcp_initialize(protocol_version => '2025-11-25');
    my ($m) = $t->mcp_request($sid, 'tools/call',
                              { name => 'slow_compute', arguments => { seconds => 0.3, label => 'old' },
                                task => { ttl => 60000 } });
    my $task = (($m->{result} // {})->{task}) // {};
    is($task->{ttl}, 60000, '2025-11-25: a task, nested, with the ttl asked for');
    my $tid = $task->{taskId} // 'none';
    ($m) = $t->mcp_request($sid, 'tasks/list');
    is_deeply([ map { $_->{taskId} } @{ ($m->{result} // {})->{tasks} // [] } ], [$tid],
              '2025-11-25: tasks/list has the session\'s task');
    ($m) = $t->mcp_request($sid, 'tasks/result', { taskId => $tid });
    is((($m->{result} // {})->{content} // [{}])->[0]{text}, 'Computed old',
       '2025-11-25: tasks/result waits for the result');
    is((($m->{result} // {})->{_meta} // {})->{'io.modelcontextprotocol/related-task'}{taskId}, $tid,
       '... related to the task');
    ($m) = $t->mcp_request($sid, 'tasks/cancel', { taskId => $tid });
    is(($m->{error} // {})->{code}, -32602, '2025-11-25: cancelling a task that is over: -32602');
    my ($other) = $t->mcp_initialize(protocol_version => '2025-11-25');
    ($m) = $t->mcp_request($other, 'tasks/get', { taskId => $tid });
    is(($m->{error} // {})->{code}, -32602, '2025-11-25: another session does not find it');
    ($m) = $t->mcp_request($sid, 'tools/call', { name => 'failing_job', arguments => {} });
    is(($m->{error} // {})->{code}, -32601, '2025-11-25: a required tool without params.task: -32601');
}

# --- the log --------------------------------------------------------------------------------

my @lines = grep { /mcp task / } split /\n/, $t->error_log;
ok(@lines >= 10, 'lifecycle lines in the error log');
is(scalar(grep { !/\[info\] .* mcp task [0-9a-f]{32} (created, working|working|input_required|completed|failed|cancelled|expired)(, client: .*)?$/ } @lines),
   0, 'every lifecycle line is [info] and names the task by its id alone');
unlike($t->error_log, qr/\[(error|alert|crit|emerg)\]/, 'no [error] or worse');

done_testing;
