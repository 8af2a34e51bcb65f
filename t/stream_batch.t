# Batches with streaming (2025-03-26 sessions): when a call of a batch
# sends something before its result, the batch's reply is one SSE stream
# that carries every message of every call and every response of the
# batch, and ends after the last response.  A batch whose calls send
# nothing first still gets one JSON array.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use McpTest;
use McpAssert;
use McpStream;

my $t = streaming_server(location => 'mcp_request_timeout 2s;');
my ($sid) = $t->mcp_initialize(protocol_version => '2025-03-26', capabilities => { sampling => {} });

my $PING = sub { { jsonrpc => '2.0', id => $_[0], method => 'ping' } };
sub responses { my %r; for (rpc_of(@_)) { $r{ $_->{id} }++ if defined $_->{id} && !exists $_->{method} } \%r }
sub text_of { ((($_[0] // {})->{result} // {})->{content} // [ {} ])->[0]{text} }

{
    my $s = $t->mcp_post($sid, [ call_msg('b1', 'test_tool_with_progress', {}, token => 'bt'), $PING->('b2') ],
                         stream => 1);
    is($s->status, 200, 'batch [progress, ping]: 200');
    like($s->header('content-type') // '', qr{^text/event-stream\b}, 'batch [progress, ping]: one SSE reply');
    is($s->header('mcp-protocol-version'), '2025-03-26', 'batch: MCP-Protocol-Version 2025-03-26');
    my @ev = take_all($s, 5);
    ended_ok($s, 'batch [progress, ping]: the stream ends');
    priming_ok($ev[0], 1000, 'batch [progress, ping]: priming event first');
    my @msgs = rpc_of(@ev);
    is_deeply([ map { $_->{params}{progress} } grep { ($_->{method} // '') eq 'notifications/progress' } @msgs ],
              [ 0, 50, 100 ], 'batch [progress, ping]: the three progress notifications');
    is_deeply(responses(@ev), { b1 => 1, b2 => 1 }, 'batch [progress, ping]: both responses, once each');
    my ($ping) = grep { ($_->{id} // '') eq 'b2' } @msgs;
    is_result($ping, {}, 'b2', 'batch: the ping result');
    is(text_of($msgs[-1]), 'Tool with progress executed successfully', 'batch: the call\'s result last');
    my ($st) = id_parts($ev[0]{id});
    my @seq = map { (id_parts($_->{id}))[1] } @ev;
    ok(!(grep { (id_parts($ev[$_]{id}))[0] != $st || $seq[$_] <= $seq[$_ - 1] } 1 .. $#ev),
       'batch: every event of one stream, ids growing');
}

{
    my $s = $t->mcp_post($sid, [ $PING->('c1'), call_msg('c2', 'test_tool_with_progress', {}, token => 'ct'),
                                 { jsonrpc => '2.0', method => 'notifications/initialized' },
                                 call_msg('c3', 'test_tool_with_logging', {}) ], stream => 1);
    my @ev = take_all($s, 5);
    ended_ok($s, 'batch [ping, progress, notification, logging]: the stream ends');
    my @msgs = rpc_of(@ev);
    is(scalar(grep { ($_->{method} // '') eq 'notifications/progress' } @msgs), 3, '... three progress notifications');
    is(scalar(grep { ($_->{method} // '') eq 'notifications/message' } @msgs), 3, '... three log messages');
    is_deeply(responses(@ev), { c1 => 1, c2 => 1, c3 => 1 },
              '... a response for each request, none for the notification');
}

{
    # A call of the batch waits for the client; another is cancelled.
    my $s = $t->mcp_post($sid, [ call_msg('d1', 'test_sampling', { prompt => 'p' }),
                                 call_msg('d2', 'test_sampling', { prompt => 'q' }), $PING->('d3') ],
                         stream => 1);
    my @ev;
    while (my $ev = take($s, 3)) {
        push @ev, $ev;
        last if 2 == grep { ($_->{json}{method} // '') eq 'sampling/createMessage' } @ev;
    }
    my %req = map { ($_->{json}{params}{messages}[0]{content}{text} => $_->{json}{id}) }
              grep { ($_->{json}{method} // '') eq 'sampling/createMessage' } @ev;
    is(scalar keys %req, 2, 'batch [sampling, sampling, ping]: two sampling requests on the stream');
    is(answer($t, $sid, $req{p}, sampling_answer('for d1'))->{status}, 202, 'answer to d1: 202');
    is($t->mcp_notify($sid, 'notifications/cancelled', { requestId => 'd2' })->{status}, 202, 'cancel d2: 202');
    push @ev, take_all($s, 3);
    ended_ok($s, 'the batch stream ends once the last call is over');
    is_deeply(responses(@ev), { d1 => 1, d3 => 1 }, 'responses for d1 and d3, none for the cancelled d2');
    my ($d1) = grep { ($_->{id} // '') eq 'd1' } rpc_of(@ev);
    is(text_of($d1), 'LLM response: for d1', 'd1 got its answer');
}

{
    # The stream closes after the priming event: the whole batch's responses
    # come on the resumed stream.
    my $s = $t->mcp_post($sid, [ call_msg('e1', 'test_reconnection', {}), $PING->('e2') ], stream => 1);
    my @ev = take_all($s, 3);
    ended_ok($s, 'batch [test_reconnection, ping]: the POST stream ends');
    is(scalar @ev, 1, '... after the priming event');
    my $g = $t->mcp_get_stream($sid, last_event_id => $ev[0]{id}, timeout => 3);
    my @got = take_all($g, 3);
    ended_ok($g, 'resumed: the stream ends after the last response');
    is_deeply(responses(@got), { e1 => 1, e2 => 1 }, 'resumed: both responses');
}

{
    my $r = $t->mcp_post($sid, [ $PING->('f1'), call_msg('f2', 'test_simple_text', {}) ]);
    like($r->{headers}{'content-type'} // '', qr{^application/json\b},
         'batch of calls that send nothing first: application/json');
    is(ref $r->{json}, 'ARRAY', '... a JSON array');
    is_deeply([ sort map { $_->{id} } @{ $r->{json} // [] } ], [ 'f1', 'f2' ], '... with both responses');
}

$t->stop;
done_testing;
