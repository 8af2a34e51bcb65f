# Events a client has acknowledged are freed (#44).  SSE delivers a
# stream's events in order, so a GET with Last-Event-ID "<stream>-<seq>"
# proves that the client has every event of that stream up to seq: the
# resume frees them from the session's event log in the zone (the spec
# lets a server discard what a client has seen).  Events of the session's
# other streams stay, and so do the events after the named one: a resume
# naming an older id still gets them.  A connected stream that is never
# resumed keeps what it wrote, for a resume to come; log= bounds that.
#
# What the zone keeps is read from mcp_metrics'
# mcp_session_events_bytes{zone=...}, the bytes of messages in the zone's
# event logs: exactly the sum of the data lines the clients read, since
# this file's zone holds nothing else.  A session's delete and a POST
# stream that ends bring it back to 0 too.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use McpTest;
use McpStream;

my $URI = 'test://watched-resource';

my $t = streaming_server(
    location => 'mcp_session acks; mcp_stream_keepalive 400ms;',
    http     => 'mcp_session_zone zone=acks:1m;',
    server   => 'location = /metrics { mcp_metrics; }',
);

# the bytes of messages in the zone's event logs
sub log_bytes {
    my $r = $t->request(path => '/metrics');
    return undef unless $r->{status} == 200;
    return $r->{body} =~ /^mcp_session_events_bytes\{zone="acks"\} (\d+)$/m ? $1 : undef;
}

sub bytes_of { my $n = 0; $n += length($_->{data} // '') for @_; return $n }

# a GET stream of $sid, its priming event read
sub get_stream {
    my ($sid, %o) = @_;
    my $g = $t->mcp_get_stream($sid, timeout => 3, %o);
    is($g->status, 200, 'GET stream: 200' . (defined $o{last_event_id}
                                              ? " (Last-Event-ID: $o{last_event_id})" : ''));
    return $g;
}

# $n resource updates, each read from the GET stream $g as it comes
sub updates {
    my ($sid, $g, $n, $what) = @_;
    my @ev;
    for my $i (1 .. $n) {
        $t->mcp_request($sid, 'tools/call', { name => 'update_watched_resource' });
        my $ev = take($g, 3);
        push @ev, $ev if $ev && $ev->{data};
    }
    is(scalar @ev, $n, "$what: $n notifications read live");
    return @ev;
}

sub ids { join ' ', map { $_->{id} } @_ }

is(log_bytes(), 0, 'a fresh zone: no event bytes');

my ($sid) = $t->mcp_initialize;
$t->mcp_request($sid, 'resources/subscribe', { uri => $URI }, id => 'sub');

# --- a resume with the last id frees the stream's events ------------------------------

{
    my $g = get_stream($sid);
    my $prime = take($g, 3);
    my @ev = updates($sid, $g, 10, 'GET stream');
    my $n = bytes_of(@ev);
    cmp_ok($n, '>', 10 * 50, "10 notifications: $n bytes of messages");

    # Written to a connected client, they are kept for a resume to come.
    is(log_bytes(), $n, 'a connected stream keeps what it wrote: the zone holds exactly them');
    $g->close;
    is(log_bytes(), $n, 'its connection gone, they wait for a resume');

    my $r = get_stream($sid, last_event_id => $ev[-1]{id});
    is(log_bytes(), 0, "resumed after the last one ($ev[-1]{id}): the zone holds none of them");
    ok(quiet_for(0.3, $r), 'nothing is replayed');

    # The resumed stream goes on, and its new events are kept in turn.
    my @more = updates($sid, $r, 2, 'the resumed stream');
    is(log_bytes(), bytes_of(@more), 'the resumed stream keeps its new events');
    $r->close;
    $r = get_stream($sid, last_event_id => $more[-1]{id});
    is(log_bytes(), 0, 'resumed again after them: freed');
    $r->close;
}

# --- a resume naming an older id: the later events stay, and come -----------------------

{
    my $g = get_stream($sid);
    take($g, 3);
    my @ev = updates($sid, $g, 6, 'a second GET stream');
    $g->close;

    my $r = get_stream($sid, last_event_id => $ev[2]{id});
    my @got = take_all($r, 1);
    is(ids(@got), ids(@ev[3 .. 5]), "resumed after the third ($ev[2]{id}): the three later ones come");
    is(log_bytes(), bytes_of(@ev[3 .. 5]), '... the first three are freed, the later three kept');
    $r->close;

    # The client lost the replay: it resumes from the same id again.
    $r = get_stream($sid, last_event_id => $ev[2]{id});
    @got = take_all($r, 1);
    is(ids(@got), ids(@ev[3 .. 5]), 'resumed from that id again: nothing it has not acknowledged is lost');
    $r->close;

    $r = get_stream($sid, last_event_id => $ev[4]{id});
    @got = take_all($r, 1);
    is(ids(@got), ids($ev[5]), "resumed after the fifth ($ev[4]{id}): the sixth comes");
    is(log_bytes(), bytes_of($ev[5]), '... and is all the zone keeps');
    $r->close;

    $r = get_stream($sid, last_event_id => $ev[5]{id});
    is(log_bytes(), 0, 'resumed after the sixth: nothing kept');
    $r->close;
}

# --- events of the session's other streams stay ---------------------------------------

{
    # Server messages go to the newest GET stream: A gets three, then B.
    my $a = get_stream($sid);
    take($a, 3);
    my @on_a = updates($sid, $a, 3, 'stream A');
    my $b = get_stream($sid);
    my $b_prime = take($b, 3);
    my @on_b = updates($sid, $b, 3, 'stream B');
    $_->close for $a, $b;
    is(log_bytes(), bytes_of(@on_a, @on_b), 'both streams kept');

    my $r = get_stream($sid, last_event_id => $on_a[-1]{id});
    is(log_bytes(), bytes_of(@on_b), "A resumed after its last ($on_a[-1]{id}): B's events stay");
    $r->close;

    my $rb = get_stream($sid, last_event_id => $b_prime->{id});
    my @got = take_all($rb, 1);
    is(ids(@got), ids(@on_b), "B resumed from its priming id ($b_prime->{id}): all three replayed");
    $rb->close;
}

# --- a POST stream that ends, and a deleted session, free theirs ----------------------

{
    my $before = log_bytes();    # B's, replayed but not acknowledged
    my $s = call_stream($t, $sid, 'p1', 'test_tool_with_progress', {}, token => 'p1');
    my @ev = take_all($s, 3);
    ok($s->is_done && (grep { ($_->{json} // {})->{id} } @ev), 'a POST stream ends after its response');
    is(log_bytes(), $before, 'its events are freed with it');

    my $g = get_stream($sid);
    take($g, 3);
    updates($sid, $g, 2, 'another GET stream');
    cmp_ok(log_bytes(), '>', 0, 'a connected stream holds its events');
    $g->close;
    is($t->mcp_delete($sid)->{status}, 200, 'DELETE the session: 200');
    is(log_bytes(), 0, 'the deleted session frees its events');
}

$t->stop;
done_testing;
