#!/usr/bin/perl
# 2025-11-25's experimental tasks in a session: only that version has
# them (capabilities.tasks, execution.taskSupport, params.task); a tool's
# isError result fails the task there (2026-07-28 keeps it completed).

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Time::HiRes ();
use McpTest;
use McpStream;

my $t = streaming_server(http => 'mcp_session_zone zone=tasks:2m;',
                         location => 'mcp_session tasks;');

my $RELATED = 'io.modelcontextprotocol/related-task';
my $EXT = 'io.modelcontextprotocol/tasks';

# tasks/get until the task's status is $want or over; the last result
sub poll {
    my ($sid, $tid, $want) = @_;
    my $m;
    for (1 .. 100) {
        $m = $t->mcp_call($sid, 'tasks/get', { taskId => $tid });
        my $s = (ref $m eq 'HASH' && $m->{status}) // '';
        last if $s eq $want || $s =~ /^(completed|failed|cancelled)$/;
        Time::HiRes::sleep(0.05);
    }
    return $m;
}

# --- which versions have tasks ----------------------------------------------------

for my $v ('2025-11-25', '2025-06-18', '2025-03-26') {
    my ($sid, $init) = $t->mcp_initialize(protocol_version => $v);
    my $caps = $init->{capabilities} // {};
    my $tools = ($t->mcp_call($sid, 'tools/list') // {})->{tools} // [];
    my ($slow) = grep { $_->{name} eq 'slow_compute' } @$tools;
    my @with = grep { exists $_->{execution} } @$tools;

    if ($v eq '2025-11-25') {
        is_deeply($caps->{tasks}, { list => {}, cancel => {}, requests => { tools => { call => {} } } },
                  "$v: capabilities.tasks");
        is_deeply(($slow // {})->{execution}, { taskSupport => 'optional' },
                  "$v: tools/list has execution.taskSupport");
        next;
    }

    ok(!exists $caps->{tasks}, "$v: no capabilities.tasks");
    ok($slow && !@with, "$v: tools/list has the task tools, none with execution");

    # params.task is ignored: the call runs, and its POST gets the result
    my $r = $t->mcp_call($sid, 'tools/call', { name => 'slow_compute', task => { ttl => 60000 },
                                              arguments => { seconds => 0.2, label => 'plain' } });
    is((($r // {})->{content} // [{}])->[0]{text}, 'Computed plain',
       "$v: params.task is ignored, the call answers with its result");
    ok(!exists $r->{task}, "$v: ... no task");

    # a tool that requires a task is a plain tool there
    $r = $t->mcp_call($sid, 'tools/call', { name => 'failing_job', arguments => {} });
    ok(($r // {})->{isError} && !exists $r->{task}, "$v: failing_job runs without a task");

    $r = $t->mcp_call($sid, 'tasks/list');
    is(($r // {})->{code}, -32601, "$v: tasks/list is not a method there");
    $r = $t->mcp_call($sid, 'tasks/get', { taskId => '0' x 32 });
    is(($r // {})->{code}, -32601, "$v: nor tasks/get");
}

# --- 2025-11-25: a tool's error fails the task -------------------------------------

{
    my ($sid) = $t->mcp_initialize(protocol_version => '2025-11-25');
    my $r = $t->mcp_call($sid, 'tools/call', { name => 'failing_job', arguments => {},
                                              task => {} });
    my $tid = (($r // {})->{task} // {})->{taskId} // 'none';
    is($r->{task}{status}, 'working', 'failing_job as a task: working at first');

    my $got = poll($sid, $tid, 'failed');
    is($got->{status}, 'failed', 'isError: the task failed');
    is($got->{statusMessage}, 'The tool reported an error', '... with a statusMessage');
    ok(!exists $got->{result} && !exists $got->{error}, '... tasks/get has no payload');

    my $res = $t->mcp_call($sid, 'tasks/result', { taskId => $tid });
    is($res->{isError}, 1, 'tasks/result: the CallToolResult, isError');
    is(($res->{content} // [{}])->[0]{text}, 'The job failed', '... verbatim');
    is((($res->{_meta} // {})->{$RELATED} // {})->{taskId}, $tid, '... related to the task');

    my $list = $t->mcp_call($sid, 'tasks/list');
    my ($in) = grep { $_->{taskId} eq $tid } @{ ($list // {})->{tasks} // [] };
    is(($in // {})->{status}, 'failed', 'tasks/list: failed too');

    # a JSON-RPC error fails it as before, and tasks/result gives that error
    $r = $t->mcp_call($sid, 'tools/call', { name => 'protocol_error_job', arguments => {},
                                           task => {} });
    $tid = (($r // {})->{task} // {})->{taskId} // 'none';
    $got = poll($sid, $tid, 'failed');
    is($got->{status}, 'failed', 'a JSON-RPC error: failed');
    is($got->{statusMessage}, 'The task failed', '... with its own statusMessage');
    $res = $t->mcp_call($sid, 'tasks/result', { taskId => $tid });
    is($res->{code}, -32000, 'tasks/result: the error itself');
}

# --- notifications/tasks/status on the session's GET stream -----------------------

# the task's status notifications on stream $g until one says $want (those
# of other tasks are passed over); all that came
sub statuses {
    my ($g, $tid, $want, $timeout) = @_;
    my $deadline = Time::HiRes::time() + ($timeout // 5);
    my @n;
    while ((my $left = $deadline - Time::HiRes::time()) > 0) {
        my $ev = take($g, $left) // last;
        my $m = $ev->{json};
        next unless ref $m eq 'HASH' && ($m->{method} // '') eq 'notifications/tasks/status'
                    && ($m->{params}{taskId} // '') eq $tid;
        push @n, $m;
        last if $m->{params}{status} eq $want;
    }
    return @n;
}

# a task of tools/call $name in session $sid: (task, the worker that runs it)
sub start_task {
    my ($sid, $name, $args) = @_;
    my ($m, $r) = $t->mcp_request($sid, 'tools/call', { name => $name, arguments => $args,
                                                        task => { ttl => 60000 } });
    return ((($m // {})->{result} // {})->{task} // {}, $r->{headers}{'x-worker'} // 0);
}

{
    my ($sid) = $t->mcp_initialize(protocol_version => '2025-11-25');
    my ($other) = $t->mcp_initialize(protocol_version => '2025-11-25');
    my $g = $t->mcp_get_stream($sid);
    my $og = $t->mcp_get_stream($other);
    priming_ok(take($g, 3), 1000, 'the session\'s GET stream is open');
    priming_ok(take($og, 3), 1000, 'another session\'s too');
    my $A = worker_of($g);

    # a task run by another worker than the one holding the GET stream
    my ($task, $B);
    for (1 .. 20) {
        ($task, $B) = start_task($sid, 'slow_compute', { seconds => 1, label => 'n' });
        last if $B && $B ne $A;
        $t->mcp_call($sid, 'tasks/cancel', { taskId => $task->{taskId} // 'none' });
    }
    isnt($B, $A, 'the task runs on another worker than the GET stream\'s');
    my $tid = $task->{taskId} // 'none';

    my @n = statuses($g, $tid, 'completed');
    is_deeply([ map { $_->{params}{status} } @n ], ['completed'],
              'completed on that worker: one notification on the GET stream (creation is none)');
    my $p = ($n[-1] // {})->{params} // {};
    is_deeply([ sort keys %$p ], [ sort qw(taskId status createdAt lastUpdatedAt ttl pollInterval) ],
              '... params: the task, no _meta');
    is($p->{ttl}, 60000, '... its ttl');
    is($p->{createdAt}, $task->{createdAt}, '... created when the task was');
    my $got = $t->mcp_call($sid, 'tasks/get', { taskId => $tid });
    is($p->{lastUpdatedAt}, $got->{lastUpdatedAt}, '... updated when tasks/get says');

    # cancelled by a tasks/cancel, from whichever worker takes it
    ($task) = start_task($sid, 'slow_compute', { seconds => 60 });
    $tid = $task->{taskId} // 'none';
    my $c = $t->mcp_call($sid, 'tasks/cancel', { taskId => $tid });
    @n = statuses($g, $tid, 'cancelled');
    is_deeply([ map { $_->{params}{status} } @n ], ['cancelled'], 'cancelled: one notification');
    is($n[-1]{params}{statusMessage}, 'The task was cancelled by request.', '... with its message');
    is($n[-1]{params}{lastUpdatedAt}, $c->{lastUpdatedAt}, '... the same task tasks/cancel answered');

    # failed by the tool's error
    ($task) = start_task($sid, 'failing_job', {});
    $tid = $task->{taskId} // 'none';
    @n = statuses($g, $tid, 'failed');
    is_deeply([ map { $_->{params}{status} } @n ], ['failed'], 'failed: one notification');
    is($n[-1]{params}{statusMessage}, 'The tool reported an error', '... that says why');

    ok(quiet_for(0.3, $og), 'another session\'s GET stream hears nothing of them');
}

# --- 2026-07-28 keeps a tool's error completed ---------------------------------------

{
    my %meta = ('io.modelcontextprotocol/protocolVersion' => '2026-07-28',
                'io.modelcontextprotocol/clientCapabilities' => { extensions => { $EXT => {} } });
    my $rpc = sub {
        my ($method, $params) = @_;
        my $h = { 'MCP-Protocol-Version' => '2026-07-28', 'Mcp-Method' => $method };
        $h->{'Mcp-Name'} = $params->{name} // $params->{taskId};
        my $r = $t->mcp_post(undef, { jsonrpc => '2.0', id => $t->next_id, method => $method,
                                      params => { %$params, _meta => \%meta } }, headers => $h);
        return ($r->{json} // {})->{result} // {};
    };
    my $listen = $t->mcp_post(undef, { jsonrpc => '2.0', id => 'l', method => 'subscriptions/listen',
                                       params => { notifications => { toolsListChanged => \1 },
                                                   _meta => \%meta } },
                              headers => { 'MCP-Protocol-Version' => '2026-07-28',
                                           'Mcp-Method' => 'subscriptions/listen' },
                              stream => 1);
    my ($ack) = rpc_of(take_all($listen, 0.5));
    is(($ack // {})->{method}, 'notifications/subscriptions/acknowledged', '2026-07-28: a listen stream');
    my $c = $rpc->('tools/call', { name => 'failing_job', arguments => {} });
    my $got = {};
    for (1 .. 100) {
        $got = $rpc->('tasks/get', { taskId => $c->{taskId} // 'none' });
        last if ($got->{status} // 'working') ne 'working';
        Time::HiRes::sleep(0.05);
    }
    is($got->{status}, 'completed', '2026-07-28: a tool error stays completed');
    is(($got->{result} // {})->{isError}, 1, '... with the result, isError');
    ok(!exists $got->{statusMessage}, '... and no failure message');
    ok(quiet_for(0.3, $listen), '... and no status notification on this path');
}

unlike($t->error_log, qr/\[(error|alert|crit|emerg)\]/, 'no [error] or worse');

done_testing;
