#!/usr/bin/perl
# 2025-11-25's experimental tasks in a session: only that version has
# them (capabilities.tasks, execution.taskSupport, params.task).

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
}

unlike($t->error_log, qr/\[(error|alert|crit|emerg)\]/, 'no [error] or worse');

done_testing;
