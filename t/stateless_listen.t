# subscriptions/listen (2026-07-28): the acknowledgement first, then only
# the list changes and the resource updates asked for, each tagged with
# the listen request's id; a change made through any worker reaches
# listeners on every worker, and a resource update reaches listeners and
# 2025 sessions that used resources/subscribe alike; resourceSubscriptions
# keeps the URIs the set serves, each once, and is refused over the
# zone's limits; a listener that leaves is ended, its session and its
# URIs freed from the zone.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use McpTest;
use McpAssert;
use McpStream;

# /small: a zone a few dozen big listeners fill, had they stayed in it
my $t = streaming_server(
    http   => 'mcp_session_zone zone=small:1m;',
    server => 'location = /small { mcp on; mcp_builtin everything; mcp_session small; }',
);

my $SUB = 'io.modelcontextprotocol/subscriptionId';

sub meta {
    return { 'io.modelcontextprotocol/protocolVersion'    => '2026-07-28',
             'io.modelcontextprotocol/clientCapabilities' => {} };
}

# a stateless POST: its headers say what its body says
sub post26 {
    my ($id, $method, $params, %o) = @_;
    my %h = ('MCP-Protocol-Version' => '2026-07-28', 'Mcp-Method' => $method,
             (defined $o{name} ? ('Mcp-Name' => $o{name}) : ()),
             (defined $o{tag} ? ('X-Tag' => $o{tag}) : ()));
    return $t->mcp_post(undef, { jsonrpc => '2.0', id => $id, method => $method,
                                 params => { %$params, _meta => meta() } },
                        headers => \%h, ($o{stream} ? (stream => 1) : ()),
                        (defined $o{path} ? (path => $o{path}) : ()),
                        protocol_version => undef);
}

sub listen_stream {
    my ($id, $filter, %o) = @_;
    return post26($id, 'subscriptions/listen', { notifications => $filter },
                  stream => 1, %o);
}

# the next JSON-RPC message of a stream (priming events and comments
# skipped), or undef after 5 s
sub next_rpc {
    my ($s) = @_;
    while (my $ev = take($s, 5)) {
        return $ev->{json} if ref $ev->{json} eq 'HASH';
    }
    return undef;
}

sub trigger {
    my ($tool, %o) = @_;
    my $r = post26("trig-$tool", 'tools/call', { name => $tool, arguments => {} },
                   name => $tool, %o);
    return $r->{json};
}

# --- the acknowledgement and the filter ----------------------------------------

my $tools = listen_stream(101, { toolsListChanged => JSON::PP::true(),
                                 resourceSubscriptions => [ 'test://static-text' ] },
                          tag => 'listen-tools');
my $prompts = listen_stream('p-102', { promptsListChanged => JSON::PP::true(),
                                       toolsListChanged => JSON::PP::false() },
                            tag => 'listen-prompts');

is($tools->{status}, 200, 'listen: 200');
like($tools->{headers}{'content-type'} // '', qr{^text/event-stream}, 'listen: an event stream');

my ($ack) = rpc_of(grep { defined $_->{data} && length $_->{data} } take_all($tools, 1));
is($ack->{method}, 'notifications/subscriptions/acknowledged', 'listen: the acknowledgement first');
is_deeply($ack->{params}{notifications}, { toolsListChanged => JSON::PP::true(),
                                          resourceSubscriptions => [ 'test://static-text' ] },
          'listen: it names what will be sent');
is($ack->{params}{_meta}{$SUB}, 101, 'listen: the ack carries the listen id as subscriptionId');

my ($pack) = rpc_of(grep { defined $_->{data} && length $_->{data} } take_all($prompts, 1));
is_deeply($pack->{params}{notifications}, { promptsListChanged => JSON::PP::true() },
          'listen: false and unasked kinds are left out');
is($pack->{params}{_meta}{$SUB}, 'p-102', 'listen: a string id is the subscription id too');

# --- only what was asked for ---------------------------------------------------

my $res = trigger('test_trigger_tool_change');
ok($res->{result} && !$res->{result}{isError}, 'test_trigger_tool_change: a result');

my @got = rpc_of(take_all($tools, 1));
is(scalar @got, 1, 'tools listener: one notification');
is($got[0]{method}, 'notifications/tools/list_changed', 'tools listener: tools/list_changed');
is($got[0]{params}{_meta}{$SUB}, 101, 'tools listener: tagged with its listen id');
ok(quiet_for(0.5, $prompts), 'prompts listener: nothing for a tools change');

trigger('test_trigger_prompt_change');
@got = rpc_of(take_all($prompts, 1));
is(join(',', map { $_->{method} } @got), 'notifications/prompts/list_changed',
   'prompts listener: prompts/list_changed');
ok(quiet_for(0.5, $tools), 'tools listener: nothing for a prompts change');

# --- across workers ------------------------------------------------------------

# Listeners on fresh connections land on workers of reuseport's choosing;
# a trigger from each of several connections reaches all of them.
my @many = map { listen_stream("m$_", { toolsListChanged => JSON::PP::true() },
                               tag => "many-$_") } 1 .. 8;
take_all($_, 0.3) for @many;    # the acknowledgements
my %workers = map { (worker_of($_) // '?') => 1 } @many;
trigger('test_trigger_tool_change', tag => 'trigger-many');
my $all = 1;
for my $i (0 .. $#many) {
    my @n = grep { ($_->{method} // '') eq 'notifications/tools/list_changed' }
            rpc_of(take_all($many[$i], 1));
    $all = 0 unless @n == 1 && $n[0]{params}{_meta}{$SUB} eq 'm' . ($i + 1);
}
ok($all, 'every listener got exactly one tools/list_changed with its own id ('
   . scalar(keys %workers) . ' workers held them)');
cmp_ok(scalar keys %workers, '>=', 1, 'listeners were held by worker(s): '
   . join(' ', sort keys %workers));

# --- resourceSubscriptions ------------------------------------------------------

my $TRUE    = JSON::PP::true();
my $WATCHED = 'test://watched-resource';

sub updated_msg {
    my ($id) = @_;
    return { jsonrpc => '2.0', method => 'notifications/resources/updated',
             params => { uri => $WATCHED, (defined $id ? (_meta => { $SUB => $id }) : ()) } };
}

my $w = listen_stream('w-1', { toolsListChanged => $TRUE,
                               resourceSubscriptions => [ $WATCHED, 'test://static-text', 'test://nope',
                                                          $WATCHED, 'test://template/7/data' ] },
                      tag => 'listen-watched');
my $wack = next_rpc($w);
is($wack->{method}, 'notifications/subscriptions/acknowledged', 'resources: the acknowledgement first');
is_deeply($wack->{params}{notifications},
          { toolsListChanged => $TRUE,
            resourceSubscriptions => [ $WATCHED, 'test://static-text', 'test://template/7/data' ] },
          'resources: the ack names the URIs the set serves (a template\'s too), each once, '
          . 'in the order asked; an unknown URI is left out');
is($wack->{params}{_meta}{$SUB}, 'w-1', 'resources: the ack carries the listen id');

my $o = listen_stream('o-1', { toolsListChanged => $TRUE,
                               resourceSubscriptions => [ 'test://static-text' ] },
                      tag => 'listen-other');
is_deeply(next_rpc($o)->{params}{notifications},
          { toolsListChanged => $TRUE, resourceSubscriptions => [ 'test://static-text' ] },
          'another listener: acknowledged for test://static-text only');

my $none = listen_stream('n-1', { resourceSubscriptions => [ 'test://nope', 'file:///etc/passwd' ] });
is_deeply(next_rpc($none)->{params}{notifications}, {},
          'a listener naming only unknown URIs: acknowledged with nothing');
$none->close;

$res = trigger('update_watched_resource');
is_deeply($res->{result}{content}, [ { type => 'text', text => "$WATCHED updated" } ],
          'update_watched_resource: its result');
is_deeply(next_rpc($w), updated_msg('w-1'),
          'the listener that named the URI: notifications/resources/updated with the uri, '
          . 'tagged with its listen id');

# a tools change after the update: what comes before it on a stream is
# everything the update sent there
trigger('test_trigger_tool_change');
is(next_rpc($w)->{method}, 'notifications/tools/list_changed',
   'the listener that named the URI: then the tools change (one update, no more)');
my $first = next_rpc($o);
is($first->{method}, 'notifications/tools/list_changed',
   'the listener that did not name the URI: no update before the tools change');
is($first->{params}{_meta}{$SUB}, 'o-1', '... tagged with its own id');
$_->close for $w, $o;

# A 2025 session subscribed with resources/subscribe and 2026 listeners on
# fresh connections (on workers of reuseport's choosing): one update, made
# through yet another connection, reaches all of them.
my ($sid) = $t->mcp_initialize;
is_result(scalar $t->mcp_request($sid, 'resources/subscribe', { uri => $WATCHED }, id => 'sub'),
          {}, 'sub', '2025 session: resources/subscribe');
my $get = $t->mcp_get_stream($sid);
my @lis = map { listen_stream("u$_", { toolsListChanged => $TRUE, resourceSubscriptions => [ $WATCHED ] },
                              tag => "updates-$_") } 1 .. 8;
my @acks = map { next_rpc($_) } @lis;
is(scalar(grep { ($_->{params}{notifications}{resourceSubscriptions} // [])->[0] eq $WATCHED } @acks),
   8, '8 listeners: each acknowledged for the watched resource');

my $up = post26('up-2', 'tools/call', { name => 'update_watched_resource', arguments => {} },
                name => 'update_watched_resource', tag => 'update-both');
ok($up->{json}{result} && !$up->{json}{result}{isError}, 'one update_watched_resource: a result');
is_deeply(next_rpc($get), updated_msg(undef),
          '2025 subscriber: the update on its GET stream, untagged');
trigger('test_trigger_tool_change');
my ($each, %held) = (1);
for my $i (0 .. $#lis) {
    my @m = (next_rpc($lis[$i]), next_rpc($lis[$i]));
    $each = 0 unless Test::More::eq_array([ map { $_ ? $_->{method} : '' } @m ],
                          [ 'notifications/resources/updated', 'notifications/tools/list_changed' ])
                     && Test::More::eq_hash($m[0], updated_msg('u' . ($i + 1)));
    $held{ worker_of($lis[$i]) // '?' } = 1;
}
ok($each, '2026 listeners: each got the same update once, tagged with its own id, '
   . 'then the tools change');
my $upw = worker_of($up) // '?';
cmp_ok(scalar(grep { $_ ne $upw } keys %held), '>=', 1,
       "listeners held by other workers than the update's ($upw): " . join(' ', sort keys %held));
$_->close for $get, @lis;

# --- resourceSubscriptions refused ----------------------------------------------

my @many_uris = map { "test://template/$_/data" } 1 .. 65;
my $r = post26(203, 'subscriptions/listen', { notifications => { resourceSubscriptions => \@many_uris } });
is_error($r->{json}, -32602, 203, '65 URIs, over the zone\'s subscriptions= (64): -32602');
like($r->{json}{error}{message} // '', qr/more than 64 URIs/, '... saying how many it may name');

my $cap = listen_stream(204, { resourceSubscriptions => [ @many_uris[0 .. 63] ] });
is(scalar @{ next_rpc($cap)->{params}{notifications}{resourceSubscriptions} // [] }, 64,
   '64 URIs: acknowledged, all of them');
$cap->close;

$r = post26(205, 'subscriptions/listen',
            { notifications => { resourceSubscriptions => [ 'test://template/' . ('x' x 500) . '/data' ] } });
is_error($r->{json}, -32602, 205, 'a URI over the zone\'s subscription_uri= (512): -32602');
like($r->{json}{error}{message} // '', qr/longer than 512 bytes/, '... saying the limit');

$r = post26(206, 'subscriptions/listen', { notifications => { resourceSubscriptions => $WATCHED } });
is_error($r->{json}, -32602, 206, 'resourceSubscriptions a string, not an array: -32602');

$r = post26(207, 'subscriptions/listen', { notifications => { resourceSubscriptions => [ $WATCHED, 7 ] } });
is_error($r->{json}, -32602, 207, 'resourceSubscriptions with a number in it: -32602');

# --- errors -------------------------------------------------------------------

$r = post26(201, 'subscriptions/listen', {});
is_error($r->{json}, -32602, 201, 'listen without notifications: -32602');

$r = $t->mcp_post(undef, { jsonrpc => '2.0', id => 202, method => 'subscriptions/listen',
                           params => { notifications => {} } });
is($r->{status}, 400, 'listen from a 2025 client without a session: 400');

# --- a listener that leaves ----------------------------------------------------

$_->close for $tools, $prompts, @many;

# 200 listeners come and go; none stays behind in the zone
for my $i (1 .. 200) {
    my $s = listen_stream("c$i", { toolsListChanged => JSON::PP::true() });
    take($s, 2);
    $s->close;
}
my $after = listen_stream('after', { toolsListChanged => JSON::PP::true() });
take_all($after, 0.3);
trigger('test_trigger_tool_change');
@got = grep { ($_->{method} // '') eq 'notifications/tools/list_changed' } rpc_of(take_all($after, 1));
is(scalar @got, 1, 'after 200 listeners came and went, a new one is told once');
$after->close;

# 200 listeners, each naming 64 URIs of 500 bytes (a listener of about
# 40 KB, with its acknowledgement), come and go in a 1 MB zone: had any
# stayed, the zone would have filled after a few dozen
my @big = map { 'test://template/' . sprintf('%03d', $_) . ('y' x 477) . '/data' } 1 .. 63;
my $full = 0;
for my $i (1 .. 200) {
    my $s = listen_stream("big$i", { resourceSubscriptions => [ $WATCHED, @big ] }, path => '/small');
    my $m = next_rpc($s);
    $full++ unless $m && scalar @{ $m->{params}{notifications}{resourceSubscriptions} // [] } == 64;
    $s->close;
}
is($full, 0, '200 listeners of 64 long URIs came and went in a 1 MB zone: each acknowledged in full');
# the acknowledgement goes out before the listener is put in the zone: a
# full zone shows in the next one not hearing the update
my $last = listen_stream('big-last', { resourceSubscriptions => [ $WATCHED, @big ] }, path => '/small');
next_rpc($last);
trigger('update_watched_resource');
is_deeply(next_rpc($last), updated_msg('big-last'),
          'after them, a listener still finds room in that zone, and gets the update made at /mcp');
$last->close;

$t->wait_for_log(qr/Session terminated .*subscriptions\/listen/, 5);
unlike($t->error_log, qr/\[(alert|crit|emerg|error)\]/, 'error.log: nothing above [warn]');

done_testing();
