# The corrections merged into the 2026-07-28 text after it was published
# (issue #39, Deliver 3), on the built-in endpoint and on the gateway's
# own results:
#   #3002  io.modelcontextprotocol/serverInfo in the _meta of every
#          result (SHOULD), and no longer in the discover result's body;
#   #3171  a subscriptions/listen stream the server ends (the worker
#          exits) ends with the listen request's result: resultType
#          "complete", the subscription's id in its _meta;
#   #3116  the tasks extension's missing capability is -32021.
# A 2025-11-25 session's results are as that revision has them (no
# serverInfo in _meta: initialize names the server).
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use JSON::PP ();
use McpTest qw(wait_until);
use McpAssert;
use McpStream;

my $V    = '2026-07-28';
my $P    = 'io.modelcontextprotocol/';
my $INFO = $SERVER_META{"${P}serverInfo"};
my $TASKS = { extensions => { "${P}tasks" => {} } };

my $t = streaming_server(
    http   => 'mcp_session_zone zone=gw:1m;',
    server => 'location = /gw { mcp_pass http://127.0.0.1:%%PORT%%/mcp;'
            . ' mcp_session gw; mcp_pass_check_arguments on; }',
);

sub meta {
    my (%o) = @_;
    return { "${P}protocolVersion"    => $V,
             "${P}clientCapabilities" => $o{caps} // {} };
}

# a stateless POST as a conforming client sends it; returns the reply
sub post26 {
    my ($id, $method, $params, %o) = @_;
    my %h = ('MCP-Protocol-Version' => $V, 'Mcp-Method' => $method);
    my $n = $params->{ $method eq 'resources/read' ? 'uri'
                     : $method =~ m{^tasks/} ? 'taskId' : 'name' };
    $h{'Mcp-Name'} = $n if defined $n
        && $method =~ m{^(?:tools/call|prompts/get|resources/read|tasks/(?:get|update|cancel))$};
    return $t->mcp_post(undef, { jsonrpc => '2.0', id => $id, method => $method,
                                 params => { %$params, _meta => meta(caps => $o{caps}) } },
                        headers => \%h, protocol_version => undef,
                        (defined $o{path} ? (path => $o{path}) : ()),
                        ($o{stream} ? (stream => 1) : ()));
}

sub msg_of {
    my ($r) = @_;
    my @m = grep { ref $_ eq 'HASH' && exists $_->{id} } @{ $r->{messages} // [] };
    return $m[-1] // {};
}

# One assertion: the result names the module in its _meta, once.
sub named_ok {
    my ($r, $what) = @_;
    local $Test::Builder::Level = $Test::Builder::Level + 1;
    my $res = msg_of($r)->{result} // {};
    my @n = ($r->{body} // '') =~ /"\Q${P}serverInfo\E"/g;
    my $ok = ok(is_deeply_quiet(($res->{_meta} // {})->{"${P}serverInfo"}, $INFO)
                && @n == 1, "$what: _meta serverInfo, once");
    diag($r->{body}) unless $ok;
    return $ok;
}

sub is_deeply_quiet {
    my ($a, $b) = @_;
    return JSON::PP->new->canonical->encode([ $a ]) eq JSON::PP->new->canonical->encode([ $b ]);
}

# --- #3002: every result of the built-in endpoint ------------------------------------

named_ok(post26(1, 'server/discover', {}), 'server/discover');
ok(!exists((msg_of(post26(2, 'server/discover', {}))->{result} // {})->{serverInfo}),
   'server/discover: no serverInfo in the result body');
named_ok(post26(3, 'tools/list', {}), 'tools/list');
named_ok(post26(4, 'tools/call', { name => 'test_simple_text', arguments => {} }), 'tools/call');
named_ok(post26(5, 'resources/list', {}), 'resources/list');
named_ok(post26(6, 'prompts/list', {}), 'prompts/list');
named_ok(post26(7, 'resources/templates/list', {}), 'resources/templates/list');

# a tool asking for input: an input_required result
my $ir = post26(8, 'tools/call', { name => 'test_input_required_result_multi_round',
                                   arguments => {} }, caps => { elicitation => {} });
is((msg_of($ir)->{result} // {})->{resultType}, 'input_required', 'an input_required result');
named_ok($ir, 'an input_required result');

# a task: its creation, then tasks/get on it, and the ack of tasks/cancel
my $task = post26(9, 'tools/call', { name => 'slow_compute', arguments => { seconds => 5 } },
                  caps => $TASKS);
my $tres = msg_of($task)->{result} // {};
is($tres->{resultType}, 'task', 'slow_compute with the extension: a task');
named_ok($task, 'the task\'s creation');
my $tid = $tres->{taskId} // ($tres->{task} // {})->{taskId};
ok(defined $tid, 'the task has an id');
named_ok(post26(10, 'tasks/get', { taskId => $tid }, caps => $TASKS), 'tasks/get');
is_deeply(msg_of(post26(11, 'tasks/cancel', { taskId => $tid }, caps => $TASKS))->{result}, $ACK,
          'tasks/cancel: the ack is resultType and who answers');

# --- #3116: the tasks extension's missing capability --------------------------------

my $miss = post26(12, 'tasks/get', { taskId => $tid });
is($miss->{status}, 400, 'tasks/get without the extension: HTTP 400');
is((msg_of($miss)->{error} // {})->{code}, -32021, '... -32021');
ok(exists(((((msg_of($miss)->{error} // {})->{data} // {})->{requiredCapabilities} // {})
            ->{extensions} // {})->{"${P}tasks"}),
   '... naming the extension in data.requiredCapabilities');

# --- a 2025-11-25 session: unchanged ------------------------------------------------

{
    my ($sid, $init) = $t->mcp_initialize;
    is_deeply(($init // {})->{serverInfo}, $INFO, '2025-11-25: initialize names the server');
    my $m = $t->mcp_request($sid, 'tools/list', {});
    ok($m->{result} && !exists $m->{result}{_meta}, '2025-11-25: a result has no _meta added');
}

# --- #3002 on the gateway: relayed results pass as they are, its own are named -------

{
    my $list = post26(20, 'tools/list', {}, path => '/gw');
    my @tools = @{ (msg_of($list)->{result} // {})->{tools} // [] };
    named_ok($list, 'a relayed tools/list (the upstream\'s own serverInfo)');
    my ($req) = grep { @{ ($_->{inputSchema} // {})->{required} // [] } } @tools;
    ok($req, 'a tool with required arguments: ' . ($req // {})->{name});
    my $bad = post26(21, 'tools/call', { name => $req->{name}, arguments => {} }, path => '/gw');
    my $res = msg_of($bad)->{result} // {};
    ok($res->{isError}, 'arguments the gateway refuses: an isError result of its own');
    is($res->{resultType}, 'complete', '... resultType complete');
    named_ok($bad, 'the gateway\'s own result');
}

# --- #3171: the listen stream a reload ends ends with its result ----------------------

# a listen stream, read up to its acknowledgement
sub listen_open {
    my ($id) = @_;
    my $l = post26($id, 'subscriptions/listen',
                   { notifications => { toolsListChanged => JSON::PP::true() } }, stream => 1);
    my $ack;
    while (my $ev = take($l, 5)) {
        if ((($ev->{json} // {})->{method} // '') eq 'notifications/subscriptions/acknowledged') {
            $ack = $ev;
            last;
        }
    }
    ok($ack, "the listen stream $id is acknowledged");
    return $l;
}

{
    my $l = listen_open('lst-1');
    my @old = $t->worker_pids;
    ok($t->reload(wait_old => 0), 'reload with the listen stream open');
    my @ev = take_all($l, 10);
    my @rpc = grep { defined $_->{json} } @ev;
    my $last = $rpc[-1] // {};
    my $res = ($last->{json} // {})->{result};
    is(($last->{json} // {})->{id}, 'lst-1', 'its last message answers the listen request')
        or diag(join "\n", map { $_->{raw} // '' } @ev);
    is(($res // {})->{resultType}, 'complete', '... resultType complete');
    is((($res // {})->{_meta} // {})->{"${P}subscriptionId"}, 'lst-1',
       '... the subscription\'s id in its _meta');
    is_deeply((($res // {})->{_meta} // {})->{"${P}serverInfo"}, $INFO, '... and who answers');
    is_deeply([ sort keys %{ $res // {} } ], [ qw(_meta resultType) ], '... nothing else');
    ok($l->is_done && !$l->{error}, 'the stream ends cleanly');
    ok(wait_until(10, sub { !grep { McpTest::_alive($_) } @old }), 'the old workers exit');
}

# ... and a fast shutdown (SIGTERM), which waits for nothing, the same
{
    my $l = listen_open('lst-2');
    my $master = $t->master_pid;
    kill 'TERM', $master;
    my @rpc = grep { defined $_->{json} } take_all($l, 10);
    my $m = ($rpc[-1] // {})->{json} // {};
    is_deeply([ $m->{id}, ($m->{result} // {})->{resultType},
                (($m->{result} // {})->{_meta} // {})->{"${P}subscriptionId"} ],
              [ 'lst-2', 'complete', 'lst-2' ],
              'SIGTERM: the listen stream ends with its result');
    my $status = McpTest::_wait_pid($master, 10);
    ok(defined $status && $status == 0, 'SIGTERM: nginx exits with 0');
    $t->check_log(name => 'the error log is clean', final => 1);
    delete $t->{pid};
}

done_testing;
