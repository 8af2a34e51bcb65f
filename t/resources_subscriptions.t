# Subscriptions: a session that subscribed to test://watched-resource gets
# one notifications/resources/updated on one of its GET streams (the
# newest) each time the resource changes (tool update_watched_resource,
# called from any session, any worker, any zone); sessions that did not
# subscribe get nothing; after resources/unsubscribe nothing more.  A
# session without a GET stream misses the notification (not kept).

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use McpTest;
use McpAssert;
use McpStream;

my $t = streaming_server(
    http   => 'mcp_session_zone zone=other:1m;',
    server => 'location = /other { mcp on; mcp_builtin everything; mcp_session other; }',
);
my $URI = 'test://watched-resource';
my $UPDATED = { jsonrpc => '2.0', method => 'notifications/resources/updated', params => { uri => $URI } };

sub update {
    my ($s_id, %o) = @_;
    my $tag = delete $o{tag};
    my ($msg, $r) = $t->mcp_request($s_id, 'tools/call', { name => 'update_watched_resource', arguments => {} },
                                    id => 'up', (defined $tag ? (headers => { 'X-Tag' => $tag }) : ()), %o);
    return wantarray ? ($msg, $r) : $msg;
}

sub open_get {
    my ($s_id, %o) = @_;
    my $g = $t->mcp_get_stream($s_id, %o);
    take($g, 3);    # the priming event
    return $g;
}

sub updates { grep { ($_->{json}{method} // '') eq 'notifications/resources/updated' } @_ }

my ($a) = $t->mcp_initialize;
my ($b) = $t->mcp_initialize;
my ($c) = $t->mcp_initialize;

is_result(scalar $t->mcp_request($a, 'resources/subscribe', { uri => $URI }, id => 'sub'), {}, 'sub',
          'A: resources/subscribe: {}');
my $ga = open_get($a);
my $gb = open_get($b);

{
    my ($msg, $r) = update($c);
    is_result($msg, { content => [ { type => 'text', text => "$URI updated" } ] }, 'up',
              'C: update_watched_resource: result');
    like($r->{headers}{'content-type'} // '', qr{^application/json\b}, 'C: application/json reply');
    my @got = quiet_for(0.3, $ga, $gb);
    my @on_a = updates(@{ $ga->{events} });
    is(scalar(updates(@{ $ga->{events} })), 1, 'A (subscribed): exactly one notification on its GET stream');
    is_deeply(($on_a[0] // {})->{json}, $UPDATED, 'A: notifications/resources/updated with the uri, no id');
    is(scalar(grep { $_->{data} } @{ $gb->{events} }), 0, 'B (not subscribed): nothing');
}

{
    # Two GET streams on A: the notification travels on exactly one.
    my $ga2 = open_get($a);
    update($c);
    my @got = quiet_for(0.3, $ga, $ga2);
    is(scalar(updates(@got)), 1, 'A with two GET streams: one notification in all')
        or diag(join '', map { $_->{raw} } @got);
    is(scalar(updates(@{ $ga2->{events} })), 1, '... on the newest stream');
    update($a);
    update($b);
    @got = quiet_for(0.3, $ga, $ga2, $gb);
    is(scalar(updates(@got)), 2, 'two more updates (from A and from B): two notifications, all to A');
    is(scalar(updates(@{ $ga2->{events} })), 3, '... on its newest stream');
    ok(!(grep { $_->{data} } @{ $gb->{events} }), 'B still gets nothing');
    $ga2->close;
}

{
    # Another zone: its subscribers are told too.
    my ($d) = $t->mcp_initialize(path => '/other');
    $t->mcp_request($d, 'resources/subscribe', { uri => $URI }, id => 's', path => '/other');
    my $gd = open_get($d, path => '/other');
    update($c);
    my @got = quiet_for(0.3, $gd, $ga);
    is(scalar(updates(@{ $gd->{events} })), 1, 'a subscriber in another zone: one notification');
    is(scalar(grep { $_->{json} && ($_->{json}{method} // '') =~ /updated/ } @got), 2,
       '... and A its own');
    $gd->close;
}

{
    # Subscribed sessions on fresh connections, updates from others: every
    # worker that holds such a stream is woken.
    my ($ok, @cross) = (0);
    my $rounds = 8;
    for my $n (1 .. $rounds) {
        my ($s) = $t->mcp_initialize;
        $t->mcp_request($s, 'resources/subscribe', { uri => $URI }, id => 's');
        my $g = open_get($s);
        my (undef, $r) = update($c);
        my @got = quiet_for(0.15, $g);
        $ok++ if updates(@got) == 1;
        push @cross, $n if (worker_of($g) // 0) != (worker_of($r) // 0);
        $t->mcp_delete($s);
        take_all($g, 2);
    }
    quiet_for(0.3, $ga);    # those updates reached A too
    is($ok, $rounds, "$rounds subscribed sessions on fresh connections: one notification each");
    note(scalar(@cross) . " of $rounds updates ran on another worker than the GET stream");
    cmp_ok(scalar @cross, '>=', 1, 'some of them crossed workers');
}

{
    is_result(scalar $t->mcp_request($a, 'resources/unsubscribe', { uri => $URI }, id => 'u'), {}, 'u',
              'A: resources/unsubscribe: {}');
    my $before = scalar updates(@{ $ga->{events} });
    update($c);
    quiet_for(0.3, $ga);
    is(scalar(updates(@{ $ga->{events} })), $before, 'after unsubscribe: no more notifications');
    ok(!$ga->is_done, 'A\'s GET stream is still open');
}

{
    # No GET stream when the update happens: nothing is kept for later.
    my ($e) = $t->mcp_initialize;
    $t->mcp_request($e, 'resources/subscribe', { uri => $URI }, id => 's');
    my ($msg) = update($c);
    ok($msg && $msg->{result}, 'update with a subscriber that has no GET stream: a result');
    my $ge = open_get($e);
    ok(quiet_for(0.3, $ge), 'a GET stream opened afterwards gets nothing');
    update($c);
    is(scalar(updates(quiet_for(0.3, $ge))), 1, 'the next update reaches it');
    $ge->close;
}

$_->close for $ga, $gb;
$t->stop;
done_testing;
