# Cancellation: notifications/cancelled (202) stops the referenced call in
# flight, from any worker; no response is sent for it afterwards (its POST
# stream ends without one; a JSON reply becomes 202 with no body); a late
# answer to its sampling request is ignored.  Ids compare with their JSON
# type; other sessions cannot cancel.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Time::HiRes qw(time);
use McpTest;
use McpAssert;
use McpStream;

my $t = streaming_server(location => 'mcp_request_timeout 5s;');
my %CAPS = (sampling => {});
my ($sid) = $t->mcp_initialize(capabilities => \%CAPS);

sub cancel {
    my ($s_id, $rid, %o) = @_;
    my $tag = delete $o{tag};
    return $t->mcp_notify($s_id, 'notifications/cancelled',
                          { requestId => $rid, reason => 'User cancelled' },
                          (defined $tag ? (headers => { 'X-Tag' => $tag }) : ()), %o);
}

sub responses_to { my ($id, @ev) = @_; grep { !exists $_->{method} && defined $_->{id} && "$_->{id}" eq "$id" } rpc_of(@ev) }

# --- a call waiting for its sampling answer --------------------------------------------

{
    my $s = call_stream($t, $sid, 'c1', 'test_sampling', { prompt => 'cancel me' });
    take($s, 3);
    my $req = take($s, 3);
    my $n = $req && $req->{json}{id};
    ok(defined $n, 'test_sampling waits for its answer');

    my $mark = $t->log_mark;
    my $t0 = time;
    my $r = cancel($sid, 'c1');
    is($r->{status}, 202, 'notifications/cancelled: 202');
    is($r->{body}, '', 'notifications/cancelled: no body');
    my @ev = take_all($s, 3);
    my $took = time - $t0;
    ended_ok($s, 'the call\'s stream ends');
    ok($took < 2, sprintf('... promptly (%.2f s)', $took));
    is(scalar(responses_to('c1', @ev)), 0, '... without a response for the cancelled call')
        or diag(join '', map { $_->{raw} } @ev);
    ok($t->wait_for_log(qr/\[info\].*call "tools\/call" cancelled by the client/, 2, $mark),
       'an [info] line says the call was cancelled');

    $mark = $t->log_mark;
    $r = answer($t, $sid, $n, sampling_answer('late'));
    is($r->{status}, 202, 'a late answer to its sampling request: 202');
    ok($t->wait_for_log(qr/\[info\].*response to unknown or expired request $n ignored/, 2, $mark),
       'a late answer: ignored ([info])');
    is_result(scalar $t->mcp_request($sid, 'ping', undef, id => 'p'), {}, 'p', 'the session goes on');
}

# --- ids compare with their type ---------------------------------------------------------

{
    my $s = call_stream($t, $sid, 42, 'test_sampling', { prompt => 'x' });
    take($s, 3);
    take($s, 3);
    is(cancel($sid, '42')->{status}, 202, 'cancel requestId "42" (string): 202');
    ok(!defined take($s, 0.3) && !$s->is_done, '... call 42 (integer) goes on');
    is(cancel($sid, 43)->{status}, 202, 'cancel requestId 43 (no such call): 202');
    ok(!defined take($s, 0.2) && !$s->is_done, '... call 42 goes on');
    my ($other) = $t->mcp_initialize(capabilities => \%CAPS);
    is(cancel($other, 42)->{status}, 202, 'cancel 42 from another session: 202');
    ok(!defined take($s, 0.2) && !$s->is_done, '... call 42 goes on');
    for my $bad ({ reason => 'no id' }, { requestId => { a => 1 } }, { requestId => undef }) {
        my $r = $t->mcp_notify($sid, 'notifications/cancelled', $bad);
        is($r->{status}, 202, 'cancel with params ' . McpTest::encode_json($bad) . ': 202');
    }
    ok(!defined take($s, 0.1) && !$s->is_done, '... call 42 goes on');
    cancel($sid, 42);
    my @ev = take_all($s, 3);
    ended_ok($s, 'cancel requestId 42 (integer): the stream ends');
    is(scalar(responses_to(42, @ev)), 0, '... without a response');
}

# --- a call driven by timers -----------------------------------------------------------

{
    my $s = call_stream($t, $sid, 'pc', 'test_tool_with_progress', {}, token => 'pc');
    take($s, 3);
    my $first = take($s, 3);
    is(($first && $first->{json}{params}{progress}), 0, 'progress call: first notification');
    cancel($sid, 'pc');
    my @ev = take_all($s, 3);
    ended_ok($s, 'progress call cancelled: the stream ends');
    is(scalar(responses_to('pc', @ev)), 0, 'progress call cancelled: no response');
}

{
    # The reply would have been application/json: it becomes 202, no body.
    my $sock = $t->connect;
    my $body = McpTest::encode_json(call_msg('jc', 'test_tool_with_progress', {}));
    my $req = "POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
            . "Accept: application/json, text/event-stream\r\nMcp-Session-Id: $sid\r\n"
            . "MCP-Protocol-Version: 2025-11-25\r\nContent-Length: " . length($body)
            . "\r\nConnection: close\r\n\r\n$body";
    # Sent by hand: the cancel must go out while the call runs (~100 ms).
    syswrite($sock, $req);
    Time::HiRes::sleep(0.04);
    cancel($sid, 'jc');
    my $r = McpTest::http_request(conn => $sock, raw => '', port => $t->port, timeout => 3);
    is($r->{status}, 202, 'a call with a JSON reply, cancelled while it runs: 202')
        or diag(McpTest::explain_response($r));
    is($r->{body}, '', '... with no body (no response)');
}

# --- from another worker -----------------------------------------------------------------

{
    my $rounds = 12;
    my ($ok, @fail) = (0);
    for my $n (1 .. $rounds) {
        my ($s_n) = $t->mcp_initialize(capabilities => \%CAPS);
        my $s = call_stream($t, $s_n, "r$n", 'test_sampling', { prompt => "p$n" }, tag => "call-$n");
        take($s, 3);
        my $req = take($s, 3);
        my $r = cancel($s_n, "r$n", tag => "cancel-$n");
        my @ev = take_all($s, 2);
        if ($req && $r->{status} == 202 && $s->is_done && !$s->{error} && !responses_to("r$n", @ev)) {
            $ok++;
        }
        else {
            push @fail, "round $n: cancel $r->{status}, stream " . ($s->is_done ? 'ended' : 'open')
                . ', events: ' . join('', map { $_->{raw} } @ev);
        }
    }
    is($ok, $rounds, "$rounds rounds of cancel on fresh connections: each stream ends, no response")
        or diag(join "\n", @fail);
    my $pids = pids_by_tag($t, [ map { ("call-$_", "cancel-$_") } 1 .. $rounds ]);
    my @cross = grep { $pids->{"call-$_"} && $pids->{"cancel-$_"}
                       && $pids->{"call-$_"}[0] != $pids->{"cancel-$_"}[0] } 1 .. $rounds;
    cmp_ok(scalar @cross, '>=', 1,
           scalar(@cross) . " of $rounds cancellations came through another worker than the call's");
}

$t->stop;
done_testing;
