# Fault: the worker running a call is killed (SIGKILL).  What it owned in
# the session zone, the call's wait record, the sampling request it waits
# an answer to and the POST stream it held, is found by the other workers
# (or by the worker the master starts in its place): the call gets a
# JSON-RPC error with its id (-32603) in the session's event log, so the
# client's resume with Last-Event-ID delivers it within a second or two
# and ends; mcp_server_requests_pending returns to 0, and the session,
# idle again, expires after its timeout like any other.
#
# Before this, the resume got 200 with only keep-alive comments, the
# pending figure stayed at 1 and the session never became idle.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Time::HiRes qw(time sleep);
use McpTest;
use McpAssert;
use McpStream;

my $t = streaming_server(
    http     => 'mcp_session_zone zone=lost:1m timeout=3s;',
    location => 'mcp_session lost; mcp_request_timeout 60s;'
              . ' mcp_stream_keepalive 300ms;',
    server   => 'location = /metrics { mcp_metrics; }',
);

$t->expect_log_any(qr/exited on signal 9/);

sub pending {
    my $body = $t->request(path => '/metrics')->{body} // '';
    return $body =~ /^mcp_server_requests_pending\{zone="lost"\} (\d+)$/m ? $1 : undef;
}

# One call killed with its worker: the resume at once (it may take the
# stream over before any worker has looked: the error then wakes it) or
# after $delay s (the stream has lost its owner: the resume reads the
# error from the log).  Returns the session.
sub lost_call {
    my ($delay) = @_;
    my $what = $delay ? "resume after ${delay} s" : 'resume at once';

    my ($sid) = $t->mcp_initialize(capabilities => { sampling => {} });
    ok($sid, "$what: a session that declares sampling");

    my $s = call_stream($t, $sid, "lost-$delay", 'test_sampling',
                        { prompt => 'never answered' });
    is($s->status, 200, "$what: test_sampling: 200, an SSE stream");
    my $pid = worker_of($s);
    like($pid // '', qr/^\d+$/, "$what: the call runs on worker " . ($pid // '?'));

    my $req_ev;
    while (my $ev = take($s, 5)) {
        if (ref $ev->{json} eq 'HASH'
            && ($ev->{json}{method} // '') eq 'sampling/createMessage')
        {
            $req_ev = $ev;
            last;
        }
    }
    ok($req_ev, "$what: the sampling request arrives on the call's stream");
    my $request_id = $req_ev && $req_ev->{json}{id};
    is(pending(), 1, "$what: mcp_server_requests_pending: 1 while the request waits");

    ok(kill('KILL', $pid), "$what: worker $pid killed with SIGKILL");
    my $killed = time;

    # the POST's connection died with its worker
    take_all($s, 1);
    ok($s->is_done || $s->{error}, "$what: the POST stream is cut");
    sleep $delay if $delay;

    my $g = $t->mcp_get_stream($sid, last_event_id => $req_ev && $req_ev->{id},
                               timeout => 5);
    is($g->status, 200, "$what: the resume with Last-Event-ID: 200");
    my @got = rpc_of(take_all($g, 3));
    my $waited = time - $killed - $delay;
    ended_ok($g, "$what: the resumed stream ends after the response");
    is(scalar @got, 1, "$what: the resumed stream carries one message");
    is_error($got[0], -32603, "lost-$delay", "$what: a JSON-RPC error with the call's id");
    like(($got[0] // {})->{error}{message} // '', qr/worker .* lost/,
         "$what: its message says the worker was lost");
    cmp_ok($waited, '<', 2, sprintf("$what: it came %.2f s after the kill (and the delay)",
                                    $waited));

    my $n;
    my $deadline = time + 2;
    while (time < $deadline) {
        $n = pending();
        last if defined $n && $n == 0;
        sleep 0.1;
    }
    is($n, 0, "$what: mcp_server_requests_pending returns to 0");

    # an answer to the cleared request changes nothing
    my $r = answer($t, $sid, $request_id, sampling_answer('too late'));
    is($r->{status}, 202, "$what: the late answer is taken as an unknown one (202)");
    is(pending(), 0, "$what: ... and nothing waits for it");

    return $sid;
}

my @sids = (lost_call(0), lost_call(1.2));

# A 2025-03-26 batch of two sampling calls on one stream: each gets its
# error once, and the replay from the start carries both.
{
    my ($sid) = $t->mcp_initialize(protocol_version => '2025-03-26',
                                   capabilities => { sampling => {} });
    my $s = $t->mcp_post($sid, [ call_msg('b1', 'test_sampling', { prompt => 'p' }),
                                 call_msg('b2', 'test_sampling', { prompt => 'q' }) ],
                         stream => 1);
    my $pid = worker_of($s);
    my @ev;
    while (my $ev = take($s, 3)) {
        push @ev, $ev;
        last if 2 == grep { ($_->{json}{method} // '') eq 'sampling/createMessage' } @ev;
    }
    is(pending(), 2, 'batch: two sampling requests wait');
    ok(kill('KILL', $pid), "batch: worker $pid killed with SIGKILL");
    take_all($s, 1);

    my $g = $t->mcp_get_stream($sid, last_event_id => $ev[0]{id}, timeout => 5);
    is($g->status, 200, 'batch: the resume from the priming event: 200');
    my @got = rpc_of(take_all($g, 3));
    ended_ok($g, 'batch: the resumed stream ends after both responses');
    my %err = map { ($_->{id} => $_->{error}{code}) } grep { exists $_->{error} } @got;
    is_deeply(\%err, { b1 => -32603, b2 => -32603 }, 'batch: one error for each call');
    is(scalar(grep { ($_->{method} // '') eq 'sampling/createMessage' } @got), 2,
       'batch: the replay has both requests before');
    my $n;
    my $deadline = time + 2;
    while (time < $deadline) {
        $n = pending();
        last if defined $n && $n == 0;
        sleep 0.1;
    }
    is($n, 0, 'batch: mcp_server_requests_pending returns to 0');
    push @sids, $sid;
}

# A client that never comes back: its session must not stay busy.
{
    my ($sid) = $t->mcp_initialize(capabilities => { sampling => {} });
    my $s = call_stream($t, $sid, 'gone', 'test_sampling', { prompt => 'p' });
    my $pid = worker_of($s);
    ok(next_request($s, 5), 'abandoned: the sampling request arrives');
    ok(kill('KILL', $pid), "abandoned: worker $pid killed with SIGKILL");
    take_all($s, 1);
    push @sids, $sid;
}

# An old worker still running a call after a reload is killed: nginx
# starts no worker in its place, and the new ones find it gone on their
# check every second.
{
    my ($sid) = $t->mcp_initialize(capabilities => { sampling => {} });
    my $s = call_stream($t, $sid, 'old', 'test_sampling', { prompt => 'p' });
    my $pid = worker_of($s);
    my $req = next_request($s, 5);
    ok($req, 'after a reload: the sampling request arrives');
    ok($t->reload(wait_old => 0), 'after a reload: a new generation of workers');
    ok(kill(0, $pid), "after a reload: the old worker $pid still runs the call");
    my @ev = take_all($s, 0.3);
    ok(!$s->is_done, 'after a reload: the call\'s stream is still open');
    ok(kill('KILL', $pid), "after a reload: worker $pid killed with SIGKILL");
    my $killed = time;
    take_all($s, 1);

    my $g = $t->mcp_get_stream($sid, last_event_id => $s->last_id, timeout => 5);
    my @got = rpc_of(take_all($g, 3));
    my $waited = time - $killed;
    ended_ok($g, 'after a reload: the resumed stream ends');
    is_error($got[0], -32603, 'old', 'after a reload: the call\'s error');
    cmp_ok($waited, '<', 2.5, sprintf('after a reload: it came %.2f s after the kill', $waited));
    push @sids, $sid;
}

# idle again: the sessions expire after their 3 s (the zone frees the
# least recently used one when a request comes: the oldest first)
sleep 3.5;
for my $i (0 .. $#sids) {
    my $p = $t->mcp_post($sids[$i], { jsonrpc => '2.0', id => 'after', method => 'ping' });
    is($p->{status}, 404, "session $i expired after its timeout: 404");
}
is(pending(), 0, 'no server request waits in the zone');

$t->stop;
done_testing;
