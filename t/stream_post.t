# SSE on POST: a call that sends the client something before its result
# gets a text/event-stream reply: the priming event (id <stream>-0, retry,
# empty data), one event per message, the response last, then the end of
# the chunked body.  Events go out as they are produced.  Progress tokens
# are echoed with their JSON type; logging/setLevel filters log messages;
# calls that send nothing first still get application/json.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use McpTest;
use McpAssert;
use McpStream;

my $t = streaming_server(server => <<'NGX');
        location = /retry { mcp on; mcp_builtin everything; mcp_stream_retry 2500ms; }
NGX

my $PROGRESS_DONE = 'Tool with progress executed successfully';
my $LOGGING_DONE  = 'Tool with logging executed successfully';
my @LOG_TEXTS     = ('Tool execution started', 'Tool processing data', 'Tool execution completed');

sub text_of { ((($_[0] // {})->{result} // {})->{content} // [ {} ])->[0]{text} }

# Checks shared by every streamed call: each event has one id of this
# stream with a growing seq and one data line of one JSON-RPC message; the
# response is the last event.  Returns the messages after the priming.
sub stream_shape_ok {
    my ($what, $ev, $id) = @_;
    my ($stream) = id_parts($ev->[0]{id});
    my (@why, $last_seq);
    for my $e (@$ev) {
        my ($st, $seq) = id_parts($e->{id});
        push @why, "event id '" . ($e->{id} // '') . "' is not $stream-<seq>"
            unless defined $st && $st == ($stream // -1);
        push @why, "seq of $e->{id} does not grow" if defined $last_seq && defined $seq
                                                      && $seq <= $last_seq;
        $last_seq = $seq if defined $seq;
        next if $e == $ev->[0];
        my $n = () = $e->{raw} =~ /^data:/mg;
        push @why, "event $e->{id}: $n data lines" unless $n == 1;
        push @why, "event $e->{id}: data is not a JSON-RPC message"
            unless ref $e->{json} eq 'HASH' && ($e->{json}{jsonrpc} // '') eq '2.0';
    }
    my $last = $ev->[-1]{json} // {};
    push @why, 'the last event is not the response to ' . $id
        unless exists $last->{result} && defined $last->{id} && "$last->{id}" eq "$id";
    my @rest = rpc_of(@$ev[1 .. $#$ev - 1]);
    push @why, 'a response before the last event' if grep { !exists $_->{method} } @rest;
    ok(!@why, "$what: ids <stream>-<seq> growing, one message per event, the response last")
        or diag(join("\n", @why, map { $_->{raw} } @$ev));
    return rpc_of(@$ev[1 .. $#$ev]);
}

# --- test_tool_with_progress with a string token -----------------------------

my ($sid) = $t->mcp_initialize;
{
    my $s = call_stream($t, $sid, 'p1', 'test_tool_with_progress', {}, token => 'progress-test-1');
    is($s->status, 200, 'progress: 200');
    like($s->header('content-type') // '', qr{^text/event-stream\b}, 'progress: text/event-stream');
    is($s->header('cache-control'), 'no-cache', 'progress: Cache-Control: no-cache');
    is($s->header('x-accel-buffering'), 'no', 'progress: X-Accel-Buffering: no');
    is($s->header('mcp-protocol-version'), '2025-11-25', 'progress: MCP-Protocol-Version');
    like($s->header('transfer-encoding') // '', qr/\bchunked\b/, 'progress: chunked body');
    ok(!defined $s->header('content-length'), 'progress: no Content-Length');

    my @ev = take_all($s, 5);
    ended_ok($s, 'progress: the stream ends after the response (chunked terminator)');
    is(scalar @ev, 5, 'progress: priming + 3 notifications + response');
    priming_ok($ev[0], 1000, 'progress: first event is the priming event (retry 1000 by default)');
    my @msgs = stream_shape_ok('progress', \@ev, 'p1');
    is_deeply([ map { $_->{params} } @msgs[0 .. 2] ],
              [ map { { progressToken => 'progress-test-1', progress => $_ * 50, total => 100,
                        message => 'Completed step ' . ($_ * 50) . ' of 100' } } 0 .. 2 ],
              'progress: 0, 50, 100 of 100 with the token');
    is_deeply([ map { $_->{method} } @msgs[0 .. 2] ], [ ('notifications/progress') x 3 ],
              'progress: notifications/progress, no id');
    ok(!(grep { exists $_->{id} } @msgs[0 .. 2]), 'progress: notifications carry no id');
    is_result($msgs[3], { content => [ { type => 'text', text => $PROGRESS_DONE } ] }, 'p1',
              'progress: the result comes last');
    # The tool produces its messages at 0, 50 and 100 ms and its result at
    # about 101 ms; were the events held back, they would arrive together.
    # (Half the spread as the bound: a loaded test host reads late.)
    my $gap = $ev[-1]{at} - $ev[1]{at};
    cmp_ok($gap, '>=', 0.05, 'progress: the first notification arrives well before the result'
           . sprintf(' (%.0f ms): events are flushed as produced', $gap * 1000));
    cmp_ok($ev[3]{at} - $ev[1]{at}, '>=', 0.05, 'progress: the notifications arrive spread out'
           . sprintf(' (%.0f ms from first to last)', ($ev[3]{at} - $ev[1]{at}) * 1000));
}

# --- token types: echoed exactly ------------------------------------------------

for my $case ([ 7, qr/"progressToken":7[,}]/, 'integer 7' ],
              [ 0, qr/"progressToken":0[,}]/, 'integer 0' ],
              [ -3, qr/"progressToken":-3[,}]/, 'negative integer' ],
              [ '42', qr/"progressToken":"42"/, 'string "42"' ],
              [ "t\x{e9}\"x", qr/"progressToken":"t\x{c3}\x{a9}\\"x"/, 'string with UTF-8 and a quote' ]) {
    my ($token, $re, $what) = @$case;
    my $s = call_stream($t, $sid, "tok", 'test_tool_with_progress', {}, token => $token);
    my @ev = take_all($s, 5);
    my @notes = grep { ($_->{json}{method} // '') eq 'notifications/progress' } @ev;
    is(scalar @notes, 3, "token $what: three progress notifications");
    is(scalar(grep { $_->{data} =~ $re } @notes), 3, "token $what: echoed with its JSON type");
    is(text_of($ev[-1]{json}), $PROGRESS_DONE, "token $what: then the result");
}

{
    # 2^53 + 1: an integer token beyond what a double holds exactly.
    my $body = '{"jsonrpc":"2.0","id":"big","method":"tools/call","params":{"name":'
             . '"test_tool_with_progress","arguments":{},"_meta":{"progressToken":9007199254740993}}}';
    my $s = $t->mcp_post($sid, $body, stream => 1);
    my @ev = take_all($s, 5);
    my @notes = grep { ($_->{json}{method} // '') eq 'notifications/progress' } @ev;
    is(scalar @notes, 3, 'token 9007199254740993: three progress notifications');
    {
        is(scalar(grep { $_->{data} =~ /"progressToken":9007199254740993[,}]/ } @notes), 3,
           'token 9007199254740993: echoed exactly');
    }
}

# --- without a token: no notifications, a JSON reply ----------------------------

{
    my ($msg, $r) = $t->mcp_request($sid, 'tools/call', { name => 'test_tool_with_progress',
                                                          arguments => {} }, id => 'nt');
    like($r->{headers}{'content-type'} // '', qr{^application/json\b},
         'progress without a token: application/json (nothing to stream)');
    is_result($msg, { content => [ { type => 'text', text => $PROGRESS_DONE } ] }, 'nt',
              'progress without a token: the result alone');
    is(scalar @{ $r->{messages} }, 1, 'progress without a token: no notification');
}

# --- test_tool_with_logging and logging/setLevel -----------------------------

for my $level (qw(debug info)) {
    my ($s2) = $t->mcp_initialize;
    is_result(scalar $t->mcp_request($s2, 'logging/setLevel', { level => $level }, id => 'lv'), {},
              'lv', "setLevel $level: {}");
    my $s = call_stream($t, $s2, 'log1', 'test_tool_with_logging', {});
    like($s->header('content-type') // '', qr{^text/event-stream\b}, "level $level: SSE reply");
    my @ev = take_all($s, 5);
    ended_ok($s, "level $level: the stream ends");
    priming_ok($ev[0], 1000, "level $level: priming event first");
    my @msgs = stream_shape_ok("logging ($level)", \@ev, 'log1');
    is_deeply([ map { [ $_->{method}, $_->{params} ] } @msgs[0 .. $#msgs - 1] ],
              [ map { [ 'notifications/message', { level => 'info', logger => 'conformance-test-server',
                                                   data => $_ } ] } @LOG_TEXTS ],
              "level $level: three info messages of logger conformance-test-server, in order");
    is_result($msgs[-1], { content => [ { type => 'text', text => $LOGGING_DONE } ] }, 'log1',
              "level $level: then the result");
    cmp_ok($ev[-1]{at} - $ev[1]{at}, '>=', 0.05,
           "level $level: first message well before the result ("
           . sprintf('%.0f ms)', ($ev[-1]{at} - $ev[1]{at}) * 1000));
}

{
    # The default level is info: the messages go out without setLevel.
    my ($s2) = $t->mcp_initialize;
    my @ev = take_all(call_stream($t, $s2, 'log0', 'test_tool_with_logging', {}), 5);
    is(scalar(grep { ($_->{json}{method} // '') eq 'notifications/message' } @ev), 3,
       'no setLevel: the three info messages (default level info)');
}

for my $level (qw(notice warning emergency)) {
    my ($s2) = $t->mcp_initialize;
    $t->mcp_request($s2, 'logging/setLevel', { level => $level }, id => 'lv');
    my ($msg, $r) = $t->mcp_request($s2, 'tools/call', { name => 'test_tool_with_logging',
                                                         arguments => {} }, id => 'log2');
    like($r->{headers}{'content-type'} // '', qr{^application/json\b},
         "level $level: application/json (the info messages are filtered out)");
    is(scalar @{ $r->{messages} }, 1, "level $level: no notifications/message");
    is_result($msg, { content => [ { type => 'text', text => $LOGGING_DONE } ] }, 'log2',
              "level $level: the result");
}

# --- calls that send nothing first: application/json ----------------------------

for my $tool (qw(test_simple_text test_error_handling update_watched_resource)) {
    my ($msg, $r) = $t->mcp_request($sid, 'tools/call', { name => $tool, arguments => {} },
                                    id => $tool);
    like($r->{headers}{'content-type'} // '', qr{^application/json\b},
         "$tool: application/json, not a stream");
    ok($msg && $msg->{result}, "$tool: result");
}

# --- ids: unique in the session, seq growing across streams --------------------

{
    my ($s2) = $t->mcp_initialize;
    my (@all, @primes);
    for my $i (1 .. 4) {
        my $tool = $i % 2 ? 'test_tool_with_progress' : 'test_tool_with_logging';
        my @ev = take_all(call_stream($t, $s2, "seq$i", $tool, {}, token => "s$i"), 5);
        push @primes, $ev[0]{id};
        push @all, map { $_->{id} } @ev[1 .. $#ev];
    }
    my %streams = map { ((id_parts($_))[0] => 1) } @primes;
    is(scalar keys %streams, 4, 'four calls, four streams (distinct stream numbers)');
    my @seq = map { (id_parts($_))[1] } @all;
    is(scalar @seq, 16, 'four calls: 16 events after the priming ones');
    ok(!(grep { $seq[$_] <= $seq[$_ - 1] } 1 .. $#seq),
       'seq grows across the streams of a session: ' . join(',', @seq));
    my %uniq = map { $_ => 1 } @all, @primes;
    is(scalar keys %uniq, 20, 'no event id repeats in the session');
}

{
    # Three calls at once in one session: each stream carries only its own
    # notifications and its own response.
    my ($s2) = $t->mcp_initialize;
    my @s = map { call_stream($t, $s2, "c$_", 'test_tool_with_progress', {}, token => "tok$_") } 1 .. 3;
    my @evs = map { [ take_all($_, 5) ] } @s;
    my (%ids, @bad);
    for my $i (1 .. 3) {
        my @ev = @{ $evs[$i - 1] };
        ended_ok($s[$i - 1], "concurrent call $i: stream ends");
        my @msgs = rpc_of(@ev);
        push @bad, "stream $i has foreign messages" if grep {
            ($_->{params}{progressToken} // "tok$i") ne "tok$i" || (defined $_->{id} && $_->{id} ne "c$i")
        } @msgs;
        push @bad, "stream $i: " . scalar(@msgs) . ' messages, want 4' unless @msgs == 4;
        $ids{$_->{id}}++ for @ev;
    }
    ok(!@bad, 'three concurrent calls in a session: each message on its own stream only')
        or diag(join "\n", @bad);
    ok(!(grep { $_ > 1 } values %ids), 'three concurrent streams: no id used twice');
}

# --- the connection after a stream ------------------------------------------

{
    # The chunked body ends the stream, not the connection: the client can
    # send its next requests on it.
    my $r = $t->mcp_post($sid, call_msg('k1', 'test_tool_with_progress', {}, token => 'k'), keepalive => 1);
    is(scalar @{ $r->{messages} }, 4, 'keep-alive: a streamed call (4 messages)');
    ok($r->{conn}, 'keep-alive: the connection stays open after the stream');
    my $r2 = $r->{conn} ? $t->mcp_post($sid, call_msg('k2', 'test_tool_with_logging', {}), conn => $r->{conn})
                        : { messages => [] };
    is(text_of($r2->{messages}[-1]), $LOGGING_DONE, 'keep-alive: another streamed call on it');
    my $r3 = $r2->{conn} ? $t->mcp_post($sid, { jsonrpc => '2.0', id => 'k3', method => 'ping' }, conn => $r2->{conn})
                         : {};
    is_result($r3->{json}, {}, 'k3', 'keep-alive: then a plain request on it');
}

# --- mcp_stream_retry; the negotiated version in the header ---------------------

{
    my ($s2) = $t->mcp_initialize(path => '/retry');
    my $s = call_stream($t, $s2, 'r1', 'test_tool_with_progress', {}, token => 'r', path => '/retry');
    my @ev = take_all($s, 5);
    priming_ok($ev[0], 2500, 'mcp_stream_retry 2500ms: retry: 2500 in the priming event');
    is(text_of($ev[-1]{json}), $PROGRESS_DONE, 'mcp_stream_retry: the call completes');
}

{
    my ($s2) = $t->mcp_initialize(protocol_version => '2025-06-18');
    my $s = call_stream($t, $s2, 'v1', 'test_tool_with_logging', {});
    is($s->header('mcp-protocol-version'), '2025-06-18',
       '2025-06-18 session: the stream carries MCP-Protocol-Version: 2025-06-18');
    my @ev = take_all($s, 5);
    is(text_of($ev[-1]{json}), $LOGGING_DONE, '2025-06-18 session: streamed result');
}

$t->stop;
done_testing;
