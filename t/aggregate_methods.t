# The methods an aggregating location (mcp_backend, issue #39 item 1)
# routes beside calls, gets and reads: completion/complete by its
# reference (a prompt's name carries the backend's prefix; a resource
# template's URI is the backend's own, the first backend that completes
# it answers), resources/subscribe and unsubscribe to the backend that
# has the URI (its updates reach the client's GET stream).  Real
# backends: three nginx instances of this module, "alpha" with one tool
# only (no resources, no completions), "beta" and "gamma" the
# Everything set, each logging the JSON-RPC methods it is sent.  A
# 2026-07-28 subscriptions/listen is fed by both beta and gamma, each
# subscribed to what the client named only.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Time::HiRes qw(sleep time);
use McpTest timeout => 120;
use McpGateway qw(upstream_log_format upstream_log wait_upstream);
use McpStream;

my $V = '2025-11-25';

my $alpha = McpTest->new(http => upstream_log_format(), server => <<'NGX')->start;
        location = /mcp {
            mcp on;
            mcp_tool only { description "Alpha's one tool"; pass /internal/local; }
            access_log %%PREFIX%%/logs/upstream.log mcp_upstream;
        }
        location /internal/local { internal; return 200 'local'; }
NGX

my $beta = McpTest->new(http => upstream_log_format(), server => <<'NGX')->start;
        location = /mcp {
            mcp on;
            mcp_builtin everything;
            access_log %%PREFIX%%/logs/upstream.log mcp_upstream;
        }
NGX

my $gamma_conf = <<'NGX';
        location = /mcp {
            mcp on;
            mcp_builtin everything;
            access_log %%PREFIX%%/logs/upstream.log mcp_upstream;
%%MORE%%        }
        location /internal/local { internal; return 200 'local'; }
NGX
(my $gc = $gamma_conf) =~ s/%%MORE%%//;
my $gamma = McpTest->new(http => upstream_log_format(), server => $gc)->start;

my $proxy = 'proxy_http_version 1.1; proxy_set_header Connection "";';
my $t = McpTest->new(
    http  => "    mcp_session_zone zone=methods:4m;\n",
    server => <<"NGX")->start;
        mcp_session methods;

        location = /mcp {
            mcp_backend alpha /_b/alpha;
            mcp_backend beta  /_b/beta;
            mcp_backend gamma /_b/gamma;
        }

        location = /one {
            mcp_backend alpha /_b/alpha;
        }

        location /_b/alpha { internal; proxy_pass http://127.0.0.1:@{[ $alpha->port ]}/mcp; $proxy }
        location /_b/beta  { internal; proxy_pass http://127.0.0.1:@{[ $beta->port ]}/mcp; $proxy }
        location /_b/gamma { internal; proxy_pass http://127.0.0.1:@{[ $gamma->port ]}/mcp; $proxy }
NGX

# what a backend was sent, by JSON-RPC method
sub rpcs { my ($b, $m) = @_; scalar grep { ($_->{rpc} // '') eq $m } upstream_log($b) }

my ($sid, $init) = $t->mcp_initialize(protocol_version => $V);
ok($sid, 'initialize at the gateway');
ok(ref $init->{capabilities}{completions} eq 'HASH',
   'completions is a capability: beta has it');

# --- completion/complete ------------------------------------------------------

my $c = $t->mcp_call($sid, 'completion/complete', {
    ref => { type => 'ref/prompt', name => 'beta__test_prompt_with_arguments' },
    argument => { name => 'arg1', value => '' } });
ok(ref $c eq 'HASH' && ref $c->{completion}{values} eq 'ARRAY'
   && @{ $c->{completion}{values} },
   'a prompt\'s completion reaches the backend whose prefix it has ('
   . McpTest::encode_json($c) . ')');
ok(wait_upstream($beta, sub { ($_[0]{rpc} // '') eq 'completion/complete' }, 5),
   '... beta was asked');
is(rpcs($alpha, 'completion/complete'), 0, '... alpha was not');

$c = $t->mcp_call($sid, 'completion/complete', {
    ref => { type => 'ref/prompt', name => 'nobody__test_simple_prompt' },
    argument => { name => 'a', value => '' } });
is($c->{code}, -32602, 'a prompt no backend\'s prefix names: -32602');

$c = $t->mcp_call($sid, 'completion/complete', {
    ref => { type => 'ref/prompt', name => 'beta__no_such_prompt' },
    argument => { name => 'a', value => '' } });
is($c->{code}, -32602, 'a prompt beta does not have: beta\'s -32602 relayed');

$c = $t->mcp_call($sid, 'completion/complete', {
    ref => { type => 'ref/resource', uri => 'test://template/{id}/data' },
    argument => { name => 'id', value => '' } });
ok(ref $c eq 'HASH' && ref $c->{completion}{values} eq 'ARRAY',
   'a template\'s completion: the backend that has it answers ('
   . McpTest::encode_json($c) . ')');

$c = $t->mcp_call($sid, 'completion/complete', {
    ref => { type => 'ref/resource', uri => 'nope://{x}' },
    argument => { name => 'x', value => '' } });
ok(ref $c eq 'HASH' && defined $c->{code} && !exists $c->{completion},
   'a template no backend has: an error (' . ($c->{code} // 'none') . ')');

$c = $t->mcp_call($sid, 'completion/complete', {
    ref => { type => 'ref/other', name => 'x' }, argument => { name => 'a', value => '' } });
is($c->{code}, -32602, 'an unknown reference type: -32602, no backend asked');

# --- resources/subscribe, unsubscribe -----------------------------------------

ok($init->{capabilities}{resources}{subscribe}, 'resources.subscribe: beta has it');

my $g = $t->mcp_get_stream($sid, timeout => 10);
is($g->status, 200, 'the client\'s GET stream');
sleep 0.5;

my $r = $t->mcp_call($sid, 'resources/subscribe', { uri => 'test://watched-resource' });
is_deeply($r, {}, 'resources/subscribe at the gateway');
ok(wait_upstream($beta, sub { ($_[0]{rpc} // '') eq 'resources/subscribe' }, 5),
   '... beta, which has the URI, holds the subscription');
is(rpcs($alpha, 'resources/subscribe'), 0, '... alpha, which has not, was not asked to');

$r = $t->mcp_call($sid, 'tools/call', { name => 'beta__update_watched_resource', arguments => {} });
like((($r // {})->{content} // [{}])->[0]{text} // '', qr/updated/, 'the resource changes at beta');

my $ev;
my $deadline = time + 8;
while (time < $deadline) {
    my $e = $g->next_event($deadline - time) or last;
    next unless ref $e->{json} eq 'HASH';
    if (($e->{json}{method} // '') eq 'notifications/resources/updated') { $ev = $e->{json}; last }
}
is($ev && $ev->{params}{uri}, 'test://watched-resource',
   'beta\'s resources/updated reaches the client\'s GET stream');

$r = $t->mcp_call($sid, 'resources/unsubscribe', { uri => 'test://watched-resource' });
is_deeply($r, {}, 'resources/unsubscribe at the gateway');
ok(wait_upstream($beta, sub { ($_[0]{rpc} // '') eq 'resources/unsubscribe' }, 5),
   '... reaches beta');

$r = $t->mcp_call($sid, 'resources/subscribe', { uri => 'nope://nothing' });
is($r->{code}, -32002, 'a URI no backend has: -32002');
is(rpcs($beta, 'resources/subscribe') + rpcs($alpha, 'resources/subscribe'), 1,
   '... and no backend was asked to subscribe to it');

$r = $t->mcp_call($sid, 'resources/subscribe', {});
is($r->{code}, -32602, 'no URI: -32602');
$g->close;

# --- subscriptions/listen (2026-07-28) ---------------------------------------

my $SUB = 'io.modelcontextprotocol/subscriptionId';
sub post26 {
    my ($id, $method, $params, %o) = @_;
    my %h = ('MCP-Protocol-Version' => '2026-07-28', 'Mcp-Method' => $method,
             (defined $o{name} ? ('Mcp-Name' => $o{name}) : ()));
    return $t->mcp_post(undef, { jsonrpc => '2.0', id => $id, method => $method,
                                 params => { %$params, _meta => {
                                     'io.modelcontextprotocol/protocolVersion' => '2026-07-28',
                                     'io.modelcontextprotocol/clientCapabilities' => {} } } },
                        headers => \%h, ($o{stream} ? (stream => 1) : ()),
                        (defined $o{path} ? (path => $o{path}) : ()),
                        protocol_version => undef);
}
sub next_rpc {
    my ($s, $pred, $timeout) = @_;
    my $deadline = time + ($timeout // 8);
    while (time < $deadline) {
        my $ev = take($s, $deadline - time) or last;
        next unless ref $ev->{json} eq 'HASH';
        return $ev->{json} if !$pred || $pred->($ev->{json});
    }
    return undef;
}

my $disc = post26('disc', 'server/discover', {});
my $dcaps = ($disc->{json} // {})->{result}{capabilities} // {};
ok($dcaps->{resources}{subscribe} && $dcaps->{tools}{listChanged},
   'server/discover: resources.subscribe and tools.listChanged, which a listen gets ('
   . McpTest::encode_json($dcaps) . ')');

my $gamma_mark = scalar(() = upstream_log($gamma));
my ($bsubs, $gsubs) = (rpcs($beta, 'resources/subscribe'), rpcs($gamma, 'resources/subscribe'));
my $l = post26('listen-1', 'subscriptions/listen',
               { notifications => { toolsListChanged => JSON::PP::true(),
                                    resourceSubscriptions => [ 'test://watched-resource', 'nope://x' ] } },
               stream => 1);
is($l->{status}, 200, 'subscriptions/listen at the gateway: 200');
my $ack = next_rpc($l);
is($ack && $ack->{method}, 'notifications/subscriptions/acknowledged', 'the acknowledgement first');
is_deeply($ack && $ack->{params}{notifications},
          { toolsListChanged => JSON::PP::true(), resourceSubscriptions => [ 'test://watched-resource' ] },
          '... it names the tools\' changes and the URI the backends took, not the one none has');
is($ack && $ack->{params}{_meta}{$SUB}, 'listen-1', '... tagged with the listen\'s id');
ok(wait_upstream($gamma, sub { ($_[0]{rpc} // '') eq 'resources/subscribe' }, 5),
   'gamma was asked to subscribe');
is(rpcs($beta, 'resources/subscribe') - $bsubs, 2, 'beta was asked for the two URIs the client named');
is(rpcs($alpha, 'resources/subscribe'), 0, 'alpha, without subscriptions, was not asked');
sleep 0.5;

for my $b (qw(beta gamma)) {
    my $r = post26("upd-$b", 'tools/call', { name => "${b}__update_watched_resource", arguments => {} },
                   name => "${b}__update_watched_resource");
    like($r->{json} ? McpTest::encode_json($r->{json}) : '', qr/updated/, "the resource changes at $b");
    $ev = next_rpc($l, sub { ($_[0]{method} // '') eq 'notifications/resources/updated' });
    is($ev && $ev->{params}{uri}, 'test://watched-resource', "$b\'s update reaches the listen's stream");
    is($ev && $ev->{params}{_meta}{$SUB}, 'listen-1', '... tagged with its id');
}

(my $more = $gamma_conf) =~ s/%%MORE%%/            mcp_tool added { description "New"; pass \/internal\/local; }\n/;
ok($gamma->reload(server => $more), 'gamma reloads with one tool more');
$ev = next_rpc($l, sub { ($_[0]{method} // '') eq 'notifications/tools/list_changed' }, 10);
ok($ev, 'gamma\'s tools/list_changed reaches the listen\'s stream');
is($ev && $ev->{params}{_meta}{$SUB}, 'listen-1', '... tagged with its id');
$l->close;
ok(wait_upstream($beta, sub { $_[0]{method} eq 'GET' }, 5),
   'the listen gone, its stream at beta ends too');

# its session at gamma: the GET streams gamma saw since the listen began
my $lsid;
for (1 .. 50) {
    my @since = (upstream_log($gamma))[$gamma_mark .. 1e6];
    ($lsid) = map { $_->{sid} } grep { ($_->{method} // '') eq 'GET' } grep { defined } @since;
    last if $lsid;
    sleep 0.1;
}
ok($lsid, 'the listen had a session of its own at gamma');
my $deleted;
for (1 .. 20) {
    $t->mcp_call($sid, 'tools/list');    # the DELETE waits in its worker
    last if $deleted = wait_upstream($gamma, sub { $_[0]{method} eq 'DELETE'
                                                   && $_[0]{sid} eq ($lsid // '') }, 0.2);
}
ok($deleted, '... DELETEd there with a later request through the gateway');

# a location whose one backend offers no subscriptions: nothing to ask
my $one = post26('listen-one', 'subscriptions/listen',
                 { notifications => { resourceSubscriptions => [ 'test://watched-resource' ] } },
                 stream => 1, path => '/one');
my $oack = next_rpc($one);
is_deeply($oack && $oack->{params}{notifications}, { resourceSubscriptions => [] },
          'a listen over a backend without subscriptions: none acknowledged');
$one->close;
is(rpcs($alpha, 'resources/subscribe'), 0, '... and alpha was not asked');

my $bad = post26('listen-2', 'subscriptions/listen', { notifications => { resourceSubscriptions => 'x' } });
is($bad->{json} && $bad->{json}{error}{code}, -32602, 'resourceSubscriptions not an array: -32602');

# --- tasks (2025-11-25) --------------------------------------------------------

is_deeply($init->{capabilities}{tasks}, { list => {}, cancel => {}, requests => { tools => { call => {} } } },
          'tasks: the backends\' capability');

my $tg = $t->mcp_get_stream($sid, timeout => 10);
sleep 0.5;

my $task = $t->mcp_call($sid, 'tools/call', { name => 'beta__slow_compute', task => {},
                                             arguments => { seconds => 0.3, label => 'agg' } });
my $tid = (($task // {})->{task} // {})->{taskId} // '';
like($tid, qr/^beta__./, 'a task-augmented call: the task, its id with beta\'s prefix ('
     . McpTest::encode_json($task) . ')');

my $got;
for (1 .. 100) {
    $got = $t->mcp_call($sid, 'tasks/get', { taskId => $tid });
    last if ref $got eq 'HASH' && ($got->{status} // '') =~ /^(completed|failed|cancelled)$/;
    sleep 0.05;
}
is($got->{status}, 'completed', 'tasks/get through the gateway: completed');
is($got->{taskId}, $tid, '... its id as the client knows it');

my $res = $t->mcp_call($sid, 'tasks/result', { taskId => $tid });
is((($res // {})->{content} // [{}])->[0]{text}, 'Computed agg', 'tasks/result: the tool\'s result');
is((($res->{_meta} // {})->{'io.modelcontextprotocol/related-task'} // {})->{taskId}, $tid,
   '... related to the task by the client\'s id');

my $tl = $t->mcp_call($sid, 'tasks/list');
ok(grep({ ($_->{taskId} // '') eq $tid } @{ ($tl // {})->{tasks} // [] }),
   'tasks/list merges the backends\', ids prefixed');

$ev = next_rpc($tg, sub { ($_[0]{method} // '') eq 'notifications/tasks/status'
                             && ($_[0]{params}{status} // '') eq 'completed' }, 5);
is($ev && $ev->{params}{taskId}, $tid, 'notifications/tasks/status reaches the GET stream, id prefixed');

my $long = $t->mcp_call($sid, 'tools/call', { name => 'gamma__slow_compute', task => {},
                                             arguments => { seconds => 30, label => 'long' } });
my $lid = (($long // {})->{task} // {})->{taskId} // '';
like($lid, qr/^gamma__./, 'a task at gamma');
my $c2 = $t->mcp_call($sid, 'tasks/cancel', { taskId => $lid });
is(($c2 // {})->{status}, 'cancelled', 'tasks/cancel reaches gamma');
is(($t->mcp_call($sid, 'tasks/get', { taskId => $lid }) // {})->{status}, 'cancelled',
   '... and the task is cancelled there');

is(($t->mcp_call($sid, 'tasks/get', { taskId => 'nobody__x' }) // {})->{code}, -32602,
   'a task id no backend\'s prefix names: -32602');
ok(($t->mcp_call($sid, 'tasks/get', { taskId => 'beta__' . ('0' x 32) }) // {})->{code},
   'a task beta does not have: beta\'s error');
$tg->close;

# a task that asks its client: the request comes on tasks/result, its
# answer goes back to the backend, the result follows on the same stream
{
    my ($esid) = $t->mcp_initialize(protocol_version => $V, capabilities => { elicitation => {} });
    my $et = $t->mcp_call($esid, 'tools/call', { name => 'beta__confirm_delete', task => {},
                                                arguments => { filename => 'b.txt' } });
    my $etid = (($et // {})->{task} // {})->{taskId} // 'none';
    my $st;
    for (1 .. 100) {
        $st = $t->mcp_call($esid, 'tasks/get', { taskId => $etid });
        last if (($st // {})->{status} // '') ne 'working';
        sleep 0.05;
    }
    is(($st // {})->{status}, 'input_required', 'a task that asks: input_required, through the gateway');
    my $s = $t->mcp_post($esid, { jsonrpc => '2.0', id => 'r1', method => 'tasks/result',
                                  params => { taskId => $etid } }, stream => 1);
    my $req = next_request($s);
    is(($req // {})->{method}, 'elicitation/create', '... its request comes on tasks/result');
    is((((($req // {})->{params} // {})->{_meta} // {})->{'io.modelcontextprotocol/related-task'} // {})->{taskId},
       $etid, '... related to the task by the client\'s id');
    answer($t, $esid, $req->{id}, { action => 'decline' }) if $req;
    my ($end) = grep { ($_->{id} // '') eq 'r1' } rpc_of(take_all($s, 5));
    is((($end // {})->{result}{content} // [{}])->[0]{text}, 'Kept b.txt',
       '... the answer reaches beta, the result follows');
    is(((($end // {})->{result}{_meta} // {})->{'io.modelcontextprotocol/related-task'} // {})->{taskId},
       $etid, '... related to the task by the client\'s id');
}

# a 2025-06-18 client has no tasks: its params.task is not the backend's
my ($osid, $oinit) = $t->mcp_initialize(protocol_version => '2025-06-18');
ok(!exists $oinit->{capabilities}{tasks}, '2025-06-18: no tasks capability');
my $plain = $t->mcp_call($osid, 'tools/call', { name => 'beta__slow_compute', task => {},
                                              arguments => { seconds => 0.1, label => 'old' } });
is((($plain // {})->{content} // [{}])->[0]{text}, 'Computed old', '2025-06-18: params.task ignored, the result');
is(($t->mcp_call($osid, 'tasks/get', { taskId => $tid }) // {})->{code}, -32601,
   '2025-06-18: tasks/get is no method');

# listens that leave at once, before or after their acknowledgement
for my $k (1 .. 10) {
    my $q = post26("quick-$k", 'subscriptions/listen',
                   { notifications => { resourceSubscriptions => [ 'test://watched-resource' ] } },
                   stream => 1);
    take($q, 0.05 * ($k % 3)) if $k % 2;
    $q->close;
}
sleep 0.5;
is(ref $t->mcp_call($sid, 'tools/list'), 'HASH', 'the gateway serves on');
$_->check_log(name => 'no crash, no error') for $t, $alpha, $beta, $gamma;

done_testing();
