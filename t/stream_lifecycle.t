# Lifecycle of streams: DELETE of a session ends its open streams at once
# and the session is gone (404); nginx -s reload ends the old workers'
# GET streams at once (the clients resume on the new workers: the
# session and its streams survive) and lets a call waiting for its
# client finish there (see t/shutdown.t); nginx -s quit with open
# streams does not hang; a client that disconnects mid-stream leaves nothing
# behind (its call finishes or times out, the session can be deleted).

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Time::HiRes qw(time);
use McpTest;
use McpAssert;
use McpStream;

# (Short keep-alives: a GET with Last-Event-ID and nothing to replay gets
# its headers only with the first comment; see t/stream_resume.t.)
my $t = streaming_server(location => 'mcp_stream_keepalive 500ms; mcp_request_timeout 1s;');
my %CAPS = (sampling => {});

sub text_of { ((($_[0] // {})->{result} // {})->{content} // [ {} ])->[0]{text} }

# Read every stream to its end (or $timeout); returns the seconds it took.
sub all_end {
    my ($timeout, @s) = @_;
    my $t0 = time;
    take_all($_, $timeout - (time - $t0)) for @s;
    return time - $t0;
}

# --- DELETE ends the session's streams --------------------------------------------------

{
    my ($d) = $t->mcp_initialize;
    my @g = map { $t->mcp_get_stream($d) } 1 .. 3;
    take($_, 3) for @g;
    my $r = $t->mcp_delete($d);
    is($r->{status}, 200, 'DELETE with three open GET streams: 200');
    my $took = all_end(3, @g);
    is(scalar(grep { $_->is_done && !$_->{error} } @g), 3, 'the GET streams end cleanly (chunked terminator)');
    cmp_ok($took, '<', 2, sprintf('... promptly (%.2f s)', $took));
    my $s = $t->mcp_get_stream($d, quiet => 1);
    is($s->status, 404, 'GET after DELETE: 404');
    is($t->mcp_post($d, { jsonrpc => '2.0', id => 1, method => 'ping' })->{status}, 404, 'POST after DELETE: 404');
    is($t->mcp_get_stream($d, last_event_id => '1-0', quiet => 1)->status, 404,
       'GET with Last-Event-ID after DELETE: 404');
    is($t->mcp_delete($d)->{status}, 404, 'DELETE again: 404');
}

{
    # A call waiting for the client when the session is deleted: its stream
    # ends too, without a response to nobody.
    my ($d) = $t->mcp_initialize(capabilities => \%CAPS);
    my $s = call_stream($t, $d, 'w', 'test_sampling', { prompt => 'p' });
    take($s, 3);
    my $req = take($s, 3);
    my $g = $t->mcp_get_stream($d);
    take($g, 3);
    my $mark = $t->log_mark;
    $t->expect_log_error(qr/the response to "tools\/call" was lost/);
    is($t->mcp_delete($d)->{status}, 200, 'DELETE while a call waits for its sampling answer: 200');
    my $took = all_end(3, $s, $g);
    ended_ok($s, 'the waiting call\'s POST stream ends');
    ended_ok($g, 'the GET stream ends');
    cmp_ok($took, '<', 2, sprintf('... promptly (%.2f s)', $took));
    is(answer($t, $d, $req->{json}{id}, sampling_answer('late'))->{status}, 404,
       'an answer in the deleted session: 404');
    Time::HiRes::sleep(0.1);
    {
        unlike($t->log_since($mark), qr/\[error\]/, 'no [error] line for a call ended by DELETE');
    }
}

# --- a client that disconnects ------------------------------------------------------------

{
    my ($x) = $t->mcp_initialize(capabilities => \%CAPS);
    my $mark = $t->log_mark;

    # Mid-progress: the call finishes; its response waits in the log.
    my $s = call_stream($t, $x, 'dp', 'test_tool_with_progress', {}, token => 'dp');
    take($s, 3);
    my $first = take($s, 3);
    $s->close;
    Time::HiRes::sleep(0.3);
    my $r = $t->mcp_get_stream($x, last_event_id => $first->{id}, timeout => 3);
    my @msgs = rpc_of(take_all($r, 3));
    is(($msgs[-1] // {})->{id}, 'dp', 'progress call whose client left: finished, response kept for a resume');

    # While waiting for the client: the request times out, the wait goes.
    $s = call_stream($t, $x, 'ds', 'test_sampling', { prompt => 'p' });
    take($s, 3);
    my $req = take($s, 3);
    $s->close;
    my $n = $req->{json}{id};
    ok($t->wait_for_log(qr/\[info\].*did not answer request $n of call "tools\/call" in time/, 3, $mark),
       'sampling call whose client left: the request times out (mcp_request_timeout 1s)');
    my $m2 = $t->log_mark;
    is(answer($t, $x, $n, sampling_answer('late'))->{status}, 202, 'a late answer: 202');
    ok($t->wait_for_log(qr/\[info\].*response to unknown or expired request $n ignored/, 2, $m2),
       '... ignored: nothing waits for it any more');

    # A GET stream dropped by its client.
    my $g = $t->mcp_get_stream($x);
    take($g, 3);
    $g->close;
    Time::HiRes::sleep(0.1);

    is($t->mcp_delete($x)->{status}, 200, 'the session with dropped streams can be deleted: 200');
    ok(!(grep { /\[(?:error|crit|alert|emerg)\]/ } split /\n/, $t->log_since($mark)),
       'disconnects: no error lines');
}

# --- reload --------------------------------------------------------------------------------

{
    my ($rs) = $t->mcp_initialize(capabilities => \%CAPS);
    my @g = map { $t->mcp_get_stream($rs) } 1 .. 4;
    my @primes = map { take($_, 3)->{id} } @g;
    my $w = call_stream($t, $rs, 'rw', 'test_sampling', { prompt => 'p' });
    take($w, 3);
    my $req = take($w, 3);

    my @old = $t->worker_pids;
    my $mark = $t->log_mark;
    my $t0 = time;
    ok($t->reload(wait_old => 0), 'reload: a new generation of workers');
    all_end(3, @g);
    # The call waiting for the client is not cut by the reload: it ends on
    # its old worker when its request times out (mcp_request_timeout 1s).
    my @wmsgs = rpc_of(take_all($w, 3));
    my $took = time - $t0;
    is(scalar(grep { $_->is_done && !$_->{error} } @g), 4, 'reload: the four GET streams end cleanly');
    ended_ok($w, 'reload: the POST stream waiting for the client ends');
    # the request it gave up on is cancelled first (lifecycle: timeouts)
    is_deeply([ map { [ $_->{id} // $_->{method}, $_->{id} ? text_of($_)
                                                           : $_->{params}{requestId} ] } @wmsgs ],
              [ [ 'notifications/cancelled', $req->{json}{id} ], [ 'rw', 'Sampling failed' ] ],
              'reload: ... with its call\'s own response (not cut by the reload), after'
              . ' notifications/cancelled for its request');
    cmp_ok($took, '<', 2.5, sprintf('reload: within %.2f s of the HUP', $took));
    my $deadline = time + 5;
    Time::HiRes::sleep(0.05) while time < $deadline && grep { McpTest::_alive($_) } @old;
    ok(!(grep { McpTest::_alive($_) } @old), 'reload: the old workers exit');
    ok(!(grep { /\[(?:alert|crit|emerg)\]/ } split /\n/, $t->log_since($mark)),
       'reload: no [alert]/[crit]/[emerg]');

    is_result(scalar $t->mcp_request($rs, 'ping', undef, id => 'after'), {}, 'after',
              'reload: the session lives on the new workers');
    my $mark2 = $t->log_mark;
    my $r = $t->mcp_get_stream($rs, last_event_id => $primes[0], timeout => 3);
    is($r->status, 200, 'reload: a GET stream resumes on the new workers');
    ok(!defined take($r, 0.2) && !$r->is_done, '... and stays open');
    unlike($t->log_since($mark2), qr/is gone/, '... as the same stream (it survived the reload)');
    $r->close;
    my $s = call_stream($t, $rs, 'new', 'test_tool_with_progress', {}, token => 'n');
    is(text_of((rpc_of(take_all($s, 3)))[-1]), 'Tool with progress executed successfully',
       'reload: new streamed calls work');
}

# --- graceful quit with open streams --------------------------------------------------------

{
    my ($q) = $t->mcp_initialize(capabilities => \%CAPS);
    my @g = map { $t->mcp_get_stream($q) } 1 .. 3;
    take($_, 3) for @g;
    my $w = call_stream($t, $q, 'qw', 'test_sampling', { prompt => 'p' });
    take($w, 3);
    take($w, 3);
    my $pid = $t->master_pid;
    my $t0 = time;
    kill 'QUIT', $pid;
    my $took = all_end(3, @g, $w);
    is(scalar(grep { $_->is_done && !$_->{error} } @g, $w), 4, 'quit: the open streams end cleanly');
    cmp_ok($took, '<', 2, sprintf('quit: within %.2f s', $took));
    my $status = McpTest::_wait_pid($pid, 5);
    $took = time - $t0;
    ok(defined $status && $status == 0, sprintf('quit: nginx exits with 0 (%.2f s after QUIT)', $took));
}

$t->stop;    # no hang, no alert (the error log check)
done_testing;
