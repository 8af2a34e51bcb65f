# The methods an aggregating location (mcp_backend, issue #39 item 1)
# routes beside calls, gets and reads: completion/complete by its
# reference (a prompt's name carries the backend's prefix; a resource
# template's URI is the backend's own, the first backend that completes
# it answers), resources/subscribe and unsubscribe to the backend that
# has the URI (its updates reach the client's GET stream).  Real
# backends: two nginx instances of this module, "alpha" with one tool
# only (no resources, no completions) and "beta" the Everything set,
# each logging the JSON-RPC methods it is sent.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Time::HiRes qw(sleep time);
use McpTest timeout => 120;
use McpGateway qw(upstream_log_format upstream_log wait_upstream);

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

my $proxy = 'proxy_http_version 1.1; proxy_set_header Connection "";';
my $t = McpTest->new(
    http  => "    mcp_session_zone zone=methods:4m;\n",
    server => <<"NGX")->start;
        mcp_session methods;

        location = /mcp {
            mcp_backend alpha /_b/alpha;
            mcp_backend beta  /_b/beta;
        }

        location /_b/alpha { internal; proxy_pass http://127.0.0.1:@{[ $alpha->port ]}/mcp; $proxy }
        location /_b/beta  { internal; proxy_pass http://127.0.0.1:@{[ $beta->port ]}/mcp; $proxy }
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

done_testing();
