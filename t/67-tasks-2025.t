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
}

unlike($t->error_log, qr/\[(error|alert|crit|emerg)\]/, 'no [error] or worse');

done_testing;
