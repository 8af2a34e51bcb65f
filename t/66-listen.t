# subscriptions/listen (2026-07-28): the acknowledgement first, then only
# the list changes asked for, each tagged with the listen request's id;
# a change made through any worker reaches listeners on every worker; a
# listener that leaves is ended and its session freed.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use McpTest;
use McpAssert;
use McpStream;

my $t = streaming_server();

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
                        protocol_version => undef);
}

sub listen_stream {
    my ($id, $filter, %o) = @_;
    return post26($id, 'subscriptions/listen', { notifications => $filter },
                  stream => 1, %o);
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
is_deeply($ack->{params}{notifications}, { toolsListChanged => JSON::PP::true() },
          'listen: it names what will be sent (resourceSubscriptions is not honoured)');
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

# --- errors -------------------------------------------------------------------

my $r = post26(201, 'subscriptions/listen', {});
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

$t->wait_for_log(qr/Session terminated .*subscriptions\/listen/, 5);
unlike($t->error_log, qr/\[(alert|crit|emerg|error)\]/, 'error.log: nothing above [warn]');

done_testing();
