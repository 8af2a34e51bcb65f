#!/usr/bin/perl
# 2025-11-25's experimental tasks in a session: only that version has
# them (capabilities.tasks, execution.taskSupport, params.task); a tool's
# isError result fails the task there (2026-07-28 keeps it completed);
# each change of status is told on the session's GET stream
# (notifications/tasks/status), also from another worker than the
# stream's; a task that asks its client is input_required meanwhile, and
# its requests come on a tasks/result the client has open, else on the
# GET stream, else they wait for a tasks/result.

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

# --- input during a task ------------------------------------------------------------

my $YES = { action => 'accept', content => { confirm => \1 } };

# asked on the GET stream (no tasks/result open), answered from any worker
{
    my ($sid) = $t->mcp_initialize(protocol_version => '2025-11-25',
                                   capabilities => { elicitation => {} });
    my $g = $t->mcp_get_stream($sid);
    priming_ok(take($g, 3), 1000, 'input: the GET stream is open');
    my $A = worker_of($g);

    my ($task, $B);
    for (1 .. 20) {
        ($task, $B) = start_task($sid, 'confirm_delete', { filename => 'a.txt', seconds => 0.5 });
        last if $B && $B ne $A;
        $t->mcp_call($sid, 'tasks/cancel', { taskId => $task->{taskId} // 'none' });
    }
    isnt($B, $A, 'input: the task runs on another worker than the GET stream\'s');
    my $tid = $task->{taskId} // 'none';
    is($task->{status}, 'working', 'input: the task works at first');

    my @n = statuses($g, $tid, 'input_required');
    is_deeply([ map { $_->{params}{status} } @n ], ['input_required'],
              'input: input_required is notified first');
    my $req = next_request($g);
    is(($req // {})->{method}, 'elicitation/create', 'input: then the request, on the GET stream');
    is((($req->{params} // {})->{_meta} // {})->{$RELATED}{taskId}, $tid,
       '... related to the task');
    is($req->{params}{message}, 'Delete the file?', '... asking what the tool asks');
    is(($t->mcp_call($sid, 'tasks/get', { taskId => $tid }) // {})->{status}, 'input_required',
       'input: tasks/get says input_required meanwhile');

    my $r = answer($t, $sid, $req->{id}, $YES);
    is($r->{status}, 202, 'input: the answer is taken (202)');
    @n = statuses($g, $tid, 'completed');
    is_deeply([ map { $_->{params}{status} } @n ], [ 'working', 'completed' ],
              'input: then working again, and completed');

    my $res = $t->mcp_call($sid, 'tasks/result', { taskId => $tid });
    is((($res // {})->{content} // [{}])->[0]{text}, 'Deleted a.txt',
       'input: the tool ran again with the answer');
    is((($res->{_meta} // {})->{$RELATED} // {})->{taskId}, $tid, '... tasks/result relates it');
}

# no stream open when it asks: the request waits for a tasks/result
{
    my ($sid) = $t->mcp_initialize(protocol_version => '2025-11-25',
                                   capabilities => { elicitation => {} });
    my ($task) = start_task($sid, 'confirm_delete', { filename => 'b.txt' });
    my $tid = $task->{taskId} // 'none';
    is((poll($sid, $tid, 'input_required') // {})->{status}, 'input_required',
       'kept: input_required with no stream open');

    my $s = $t->mcp_post($sid, { jsonrpc => '2.0', id => 'r1', method => 'tasks/result',
                                 params => { taskId => $tid } }, stream => 1);
    like($s->header('content-type') // '', qr{^text/event-stream}, 'kept: tasks/result is a stream');
    my $req = next_request($s);
    is(($req // {})->{method}, 'elicitation/create', 'kept: the request comes on it');
    is((($req->{params} // {})->{_meta} // {})->{$RELATED}{taskId}, $tid, '... related to the task');

    answer($t, $sid, $req->{id}, { action => 'decline' });
    my ($end) = grep { ($_->{id} // '') eq 'r1' } rpc_of(take_all($s, 5));
    is((($end // {})->{result}{content} // [{}])->[0]{text}, 'Kept b.txt',
       'kept: then the result, on the same stream');
    is((($end->{result}{_meta} // {})->{$RELATED} // {})->{taskId}, $tid, '... related to the task');
    ended_ok($s, 'kept: and the stream ends');
}

# a tasks/result open before it asks takes the request, not the GET stream
{
    my ($sid) = $t->mcp_initialize(protocol_version => '2025-11-25',
                                   capabilities => { elicitation => {} });
    my $g = $t->mcp_get_stream($sid);
    priming_ok(take($g, 3), 1000, 'listening: the GET stream is open');
    my ($task) = start_task($sid, 'confirm_delete', { filename => 'c.txt', seconds => 1 });
    my $tid = $task->{taskId} // 'none';
    my $s = $t->mcp_post($sid, { jsonrpc => '2.0', id => 'r2', method => 'tasks/result',
                                 params => { taskId => $tid } }, stream => 1);
    my $req = next_request($s);
    is(($req // {})->{method}, 'elicitation/create', 'listening: the request comes on tasks/result');
    my @n = statuses($g, $tid, 'input_required');
    is(scalar @n, 1, 'listening: the GET stream has the notification');
    ok(!defined next_request($g, 0.3), '... but not the request');

    answer($t, $sid, $req->{id}, $YES);
    my ($end) = grep { ($_->{id} // '') eq 'r2' } rpc_of(take_all($s, 5));
    is((($end // {})->{result}{content} // [{}])->[0]{text}, 'Deleted c.txt',
       'listening: the result follows on tasks/result');
}

# two questions at once, and a tool that asks during dispatch
{
    my ($sid) = $t->mcp_initialize(protocol_version => '2025-11-25',
                                   capabilities => { elicitation => {} });
    my $g = $t->mcp_get_stream($sid);
    priming_ok(take($g, 3), 1000, 'two: the GET stream is open');

    my ($task) = start_task($sid, 'multi_input', {});
    my $tid = $task->{taskId} // 'none';
    my @req = grep { defined } map { next_request($g) } 1 .. 2;
    is(scalar @req, 2, 'two: both requests come');
    answer($t, $sid, $req[0]{id}, { action => 'accept', content => { name => 'one' } });
    is(($t->mcp_call($sid, 'tasks/get', { taskId => $tid }) // {})->{status}, 'input_required',
       'two: input_required until the last answer');
    answer($t, $sid, $req[1]{id}, { action => 'accept', content => { name => 'two' } });
    my $res = $t->mcp_call($sid, 'tasks/result', { taskId => $tid });
    like((($res // {})->{content} // [{}])->[0]{text} // '', qr/^Got (one and two|two and one)$/,
         'two: the tool ran again with both answers');

    ($task) = start_task($sid, 'test_tool_with_task', {});
    $tid = $task->{taskId} // 'none';
    is($task->{status}, 'working', 'at once: the POST gets the task first');
    my $req = next_request($g);
    is((($req // {})->{params}{_meta} // {})->{$RELATED}{taskId}, $tid, 'at once: then the request');
    answer($t, $sid, $req->{id}, { action => 'accept', content => { name => 'Alice' } });
    $res = $t->mcp_call($sid, 'tasks/result', { taskId => $tid });
    is((($res // {})->{content} // [{}])->[0]{text}, 'Hello, Alice! The task is done.',
       'at once: the task ends with the answer');

    # cancelled while it waits for an answer
    ($task) = start_task($sid, 'confirm_delete', { filename => 'd.txt' });
    $tid = $task->{taskId} // 'none';
    $req = next_request($g);
    my $c = $t->mcp_call($sid, 'tasks/cancel', { taskId => $tid });
    is(($c // {})->{status}, 'cancelled', 'cancel while input_required: cancelled');
    my $r = answer($t, $sid, $req->{id}, $YES);
    is($r->{status}, 202, '... a late answer is taken and dropped');
    is(($t->mcp_call($sid, 'tasks/get', { taskId => $tid }) // {})->{status}, 'cancelled',
       '... the task stays cancelled');
}

# a client without the capability is not asked
{
    my ($sid) = $t->mcp_initialize(protocol_version => '2025-11-25');
    my ($task) = start_task($sid, 'confirm_delete', { filename => 'e.txt' });
    my $got = poll($sid, $task->{taskId} // 'none', 'failed');
    is(($got // {})->{status}, 'failed', 'no elicitation capability: the task fails');
    my $res = $t->mcp_call($sid, 'tasks/result', { taskId => $task->{taskId} // 'none' });
    is(($res // {})->{code}, -32021, '... with the missing capability');
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

# --- the log ---------------------------------------------------------------------------

my @lines = grep { /mcp task / } split /\n/, $t->error_log;
ok((grep { /mcp task [0-9a-f]{32} input_required$/ } @lines)
   && (grep { /mcp task [0-9a-f]{32} working$/ } @lines),
   'input_required and back to working are logged like every change');
is(scalar(grep { !/\[info\] .* mcp task [0-9a-f]{32} (created, working|working|input_required|completed|failed|cancelled|expired)(, client: .*)?$/ } @lines),
   0, 'every lifecycle line is [info] and names the task by its id alone');
unlike($t->error_log, qr/\[(error|alert|crit|emerg)\]/, 'no [error] or worse');

done_testing;
