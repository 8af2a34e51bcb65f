# Resumability (SEP-1699): event ids name their stream, every event goes
# into the session's event log in the shm zone, and a GET with
# Last-Event-ID replays the events of that stream after that id, and only
# those; when the stream was a POST's, the GET ends after its response.
# test_reconnection closes its POST stream after the priming event and the
# result arrives on the resumed GET.  A Last-Event-ID of no known stream
# opens a fresh standalone stream.
#
# The event log is bounded: mcp_session_zone's log=SIZE (default 256k, at
# least 1k) caps the bytes of messages one session keeps.  When an event
# does not fit, the oldest events of the session go first, whatever their
# stream, each with an [info] line "event log full, dropped event S-N"; a
# client that resumes after a dropped event does not get it (the replay
# skips it and goes on with the next one still kept).  The last section
# shows this with log=1k.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Time::HiRes qw(time);
use McpTest;
use McpAssert;
use McpStream;

my $t = streaming_server(
    # Short keep-alives keep the waits of this file short.
    location => 'mcp_stream_keepalive 400ms;',
    http     => 'mcp_session_zone zone=small:1m log=1k;',
    server   => 'location = /small { mcp on; mcp_builtin everything; mcp_session small; }',
);
my ($sid) = $t->mcp_initialize(capabilities => { sampling => {} });

sub text_of { ((($_[0] // {})->{result} // {})->{content} // [ {} ])->[0]{text} }

# --- test_reconnection: the result comes on the resumed stream ----------------------------

my @gone;    # ids of streams that are over

for my $wait (0, 0.3) {
    my $what = $wait ? 'resume after the result is ready' : 'resume at once';
    my $s = call_stream($t, $sid, "rc$wait", 'test_reconnection', {});
    is($s->status, 200, "test_reconnection ($what): 200");
    like($s->header('content-type') // '', qr{^text/event-stream\b}, "test_reconnection ($what): SSE");
    my @ev = take_all($s, 3);
    ended_ok($s, "test_reconnection ($what): the POST stream ends");
    is(scalar @ev, 1, "test_reconnection ($what): after the priming event only");
    priming_ok($ev[0], 1000, "test_reconnection ($what): priming event with retry");
    # The result enters the session's event log about 100 ms after the
    # call, and nothing shows it there but a resume, the step under test:
    # so this case waits 0.3 s (a slow result still arrives, live).
    Time::HiRes::sleep($wait) if $wait;

    my $g = $t->mcp_get_stream($sid, last_event_id => $ev[0]{id}, timeout => 3);
    is($g->status, 200, "GET Last-Event-ID: $ev[0]{id} ($what): 200");
    my @got = take_all($g, 3);
    ended_ok($g, "GET Last-Event-ID ($what): the stream ends after the response");
    my @msgs = rpc_of(@got);
    is(scalar @msgs, 1, "GET Last-Event-ID ($what): one message");
    is($msgs[0] && $msgs[0]{id}, "rc$wait", "GET Last-Event-ID ($what): the call's response");
    like(text_of($msgs[0]) // '', qr/^Reconnection test completed/,
         "GET Last-Event-ID ($what): \"Reconnection test completed...\"");
    my ($st0) = id_parts($ev[0]{id});
    my ($st1, $seq1) = id_parts($got[-1] && $got[-1]{id});
    ok(defined $st1 && $st1 == $st0 && $seq1 > 0, "the response's id ($got[-1]{id}) is of the same stream");

    push @gone, $ev[0]{id} unless $wait;
}

# --- replay after a dropped connection ----------------------------------------------

{
    my $g = $t->mcp_get_stream($sid);
    my $gp = take($g, 3);

    my $s = call_stream($t, $sid, 'r1', 'test_tool_with_progress', {}, token => 'r1');
    my $prime = take($s, 3);
    my $first = take($s, 3);
    is($first && $first->{json}{params}{progress}, 0, 'progress call: priming and first notification read');
    $s->close;    # the client drops the connection

    # Other streams of the session get events meanwhile.
    my $d = call_stream($t, $sid, 'r2', 'test_tool_with_progress', {}, token => 'r2');
    my $d_prime = take($d, 3);
    $d->close;
    my @other = take_all(call_stream($t, $sid, 'l1', 'test_tool_with_logging', {}), 3);
    is(scalar(rpc_of(@other)), 4, 'another call in the session streamed its 4 messages');
    # r1 and r2 started before l1, whose messages are as many and as far
    # apart as theirs: they are over, or nearly (the replays below read
    # up to their responses either way).

    my $r = $t->mcp_get_stream($sid, last_event_id => $first->{id}, timeout => 3);
    is($r->status, 200, "GET Last-Event-ID: $first->{id} (the last id seen): 200");
    my @ev = take_all($r, 3);
    ended_ok($r, 'the replay ends after the response');
    my @msgs = rpc_of(@ev);
    is_deeply([ map { $_->{method} ? "progress $_->{params}{progress} $_->{params}{progressToken}"
                                   : "response $_->{id}" } @msgs ],
              [ 'progress 50 r1', 'progress 100 r1', 'response r1' ],
              'the replay: the two notifications not seen, then the response, nothing else');
    my ($st, $seq) = id_parts($first->{id});
    ok(!(grep { my ($s2, $q2) = id_parts($_->{id}); !defined $s2 || $s2 != $st || $q2 <= $seq } @ev),
       'every replayed id is of that stream and after the last one seen');
    ok(!(grep { $_->{id} eq $prime->{id} || $_->{id} eq $first->{id} } @ev), 'nothing seen is sent again');

    # From the priming id: everything of that stream.
    $r = $t->mcp_get_stream($sid, last_event_id => $d_prime->{id}, timeout => 3);
    @msgs = rpc_of(take_all($r, 3));
    is_deeply([ map { $_->{params}{progress} // "response $_->{id}" } @msgs ],
              [ 0, 50, 100, 'response r2' ], 'resume from the priming id: all three notifications and the response');

    ok(quiet_for(0.1, $g), 'the GET stream of the session got none of it');
    $g->close;
}

{
    # Resumed while the call still runs: the rest arrives live.
    my $s = call_stream($t, $sid, 'r3', 'test_tool_with_progress', {}, token => 'r3');
    my $prime = take($s, 3);
    $s->close;
    my $r = $t->mcp_get_stream($sid, last_event_id => $prime->{id}, timeout => 3);
    my @msgs = rpc_of(take_all($r, 3));
    ended_ok($r, 'resumed mid-call: the stream ends after the response');
    is_deeply([ map { $_->{params}{progress} // "response $_->{id}" } @msgs ],
              [ 0, 50, 100, 'response r3' ], 'resumed mid-call: every message once, in order');
}

# --- resuming a stream whose call waits for the client ---------------------------------

{
    my $s = call_stream($t, $sid, 'w1', 'test_sampling', { prompt => 'p' }, tag => 'w1');
    take($s, 3);
    my $req = take($s, 3);
    $s->close;
    # pids.log has the POST's line once its worker let the connection go
    ok(pids_by_tag($t, ['w1'], 5)->{w1}, 'the server saw the client of a waiting call leave')
        or diag('no logs/pids.log line for the POST within 5 s');

    my $t0 = time;
    my $r = $t->mcp_get_stream($sid, last_event_id => $req->{id}, timeout => 3);
    my $took = time - $t0;
    is($r->status, 200, 'GET Last-Event-ID of a stream whose call waits: 200');
    {
        cmp_ok($took, '<', 0.2, sprintf('... its response headers come at once (took %.2f s)', $took));
    }
    is(answer($t, $sid, $req->{json}{id}, sampling_answer('resumed'))->{status}, 202,
       'the answer to the sampling request: 202');
    my @msgs = rpc_of(take_all($r, 3));
    ended_ok($r, 'the resumed stream ends after the response');
    is_deeply([ map { text_of($_) } @msgs ], [ 'LLM response: resumed' ],
              'the response arrives on the resumed stream, nothing replayed');
}

# --- a resume takes the stream over from a connection that still holds it -----------------

# The client reconnects while the server still has the old connection (it
# did not notice the loss yet): the new connection takes the stream, the
# old one ends, and each message travels once.  Tried with the two
# connections on different workers and on the same worker (X-Worker tells).
{
    my $URI = 'test://watched-resource';
    my %seen;    # 'same' / 'other' => result of that case
    for my $try (1 .. 30) {
        last if $seen{same} && $seen{other};
        my ($s) = $t->mcp_initialize;
        $t->mcp_request($s, 'resources/subscribe', { uri => $URI }, id => 'sub');
        my $g1 = $t->mcp_get_stream($s);
        my $prime = take($g1, 3);
        $t->mcp_request($s, 'tools/call', { name => 'update_watched_resource' }, id => 'u1');
        my $ev1 = take($g1, 3);
        # The resume replays the first notification: its headers come at once.
        my $g2 = $t->mcp_get_stream($s, last_event_id => $prime->{id}, timeout => 3);
        my $replay = take($g2, 3);
        my $case = (worker_of($g1) // 0) == (worker_of($g2) // -1) ? 'same' : 'other';
        if ($seen{$case}) { $_->close for $g1, $g2; next }
        # The takeover ends the old connection: read it to its end (up to
        # 5 s) before the next notification is made.
        my @on1 = grep { $_->{data} } take_all($g1, 5);
        $t->mcp_request($s, 'tools/call', { name => 'update_watched_resource' }, id => 'u2');
        push @on1, grep { $_->{data} } take_all($g1, 0.3);
        my @on2 = grep { $_->{data} } quiet_for(0.1, $g2);
        $seen{$case} = { ev1 => $ev1, replay => $replay, on1 => \@on1, on2 => \@on2,
                         g1_done => $g1->is_done };
        $_->close for $g1, $g2;
    }
    for my $case (qw(other same)) {
        my $c = $seen{$case};
        SKIP: {
            skip "no try put both connections on the $case worker", 3 unless $c;
            my $where = $case eq 'same' ? 'on the same worker' : 'on another worker';
            is($c->{replay} && $c->{replay}{id}, $c->{ev1} && $c->{ev1}{id},
               "resume $where: the first notification is replayed");
            is(scalar @{ $c->{on2} }, 1, "resume $where: the next notification on the new connection");
            ok($c->{g1_done} && !@{ $c->{on1} }, "resume $where: the old connection ends, without it")
                or diag('old connection got: ' . join('', map { $_->{raw} } @{ $c->{on1} }));
        }
    }
}

# --- Last-Event-ID of no known stream: a fresh standalone stream ------------------------

# The stream of a finished call is gone once its response went out; a
# stream number never used; not an event id at all.
for my $id (@gone, '999-3', 'garbage') {
    my $mark = $t->log_mark;
    my $g = $t->mcp_get_stream($sid, last_event_id => $id, timeout => 3);
    is($g->status, 200, "GET Last-Event-ID: $id (no such stream): 200");
    like($g->header('content-type') // '', qr{^text/event-stream\b}, "GET Last-Event-ID: $id: SSE");
    {
        priming_ok(take($g, 0.3), 1000, "GET Last-Event-ID: $id: a fresh stream, with a priming event");
    }
    ok(!$g->is_done && !(grep { $_->{data} } @{ $g->{events} }),
       "GET Last-Event-ID: $id: nothing replayed, the stream stays open");
    if ($id =~ /^(\d+)-/) {
        ok($t->wait_for_log(qr/\[info\].*stream $1 of Last-Event-ID is gone, a new stream starts/, 2, $mark),
           "GET Last-Event-ID: $id: [info] line");
    }
    $g->close;
}

# --- a full event log ---------------------------------------------------------------------

{
    my ($small) = $t->mcp_initialize(path => '/small');
    my $mark = $t->log_mark;
    my @primes;
    for my $i (1 .. 3) {
        # About 600 bytes of messages per call: three do not fit in 1k.
        my $s = call_stream($t, $small, "f$i", 'test_tool_with_progress', {}, token => "f$i",
                            path => '/small');
        push @primes, take($s, 3)->{id};
        $s->close;
    }
    # The calls run on without their clients for about 100 ms, and their
    # ends leave no mark: a drop line says an event went, never that the
    # last one has.  Counted too early, a later drop breaks the sum below,
    # so this waits 0.4 s.
    Time::HiRes::sleep(0.4);
    my %dropped = map { /dropped event (\d+-\d+)/ ? ($1 => 1) : () }
                  grep { /\[info\].*event log full, dropped event/ } split /\n/, $t->log_since($mark);
    my ($st1) = id_parts($primes[0]);
    my @lost1 = grep { (id_parts($_))[0] == $st1 } keys %dropped;
    ok(@lost1, 'log=1k: events of the first stream were dropped, with [info] lines ('
       . join(',', sort keys %dropped) . ')');

    my $r = $t->mcp_get_stream($small, last_event_id => $primes[0], path => '/small', timeout => 3);
    my @ev = take_all($r, 3);
    ended_ok($r, 'resume of the first stream: ends');
    ok(!(grep { $dropped{ $_->{id} } } @ev), 'resume of the first stream: the dropped events are not replayed');
    is(scalar(@ev) + scalar(@lost1), 4, 'resume of the first stream: what was kept, and only that ('
       . scalar(@ev) . ' kept, ' . scalar(@lost1) . ' dropped)');

    $r = $t->mcp_get_stream($small, last_event_id => $primes[2], path => '/small', timeout => 3);
    my @msgs = rpc_of(take_all($r, 3));
    is(($msgs[-1] // {})->{id}, 'f3', 'resume of the newest stream: its response was kept');
}

{
    my $bad = McpTest->new(http => 'mcp_session_zone zone=tiny:1m log=512;',
                           server => 'location = /mcp { mcp on; mcp_session tiny; }');
    my ($rc, $out) = $bad->nginx_t;
    isnt($rc, 0, 'log=512 (below 1k): nginx -t fails');
    like($out, qr/invalid event log size "log=512"/, 'log=512: says why');
}

$t->stop;
done_testing;
