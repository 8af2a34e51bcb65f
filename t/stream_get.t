# Standalone GET streams: Accept: text/event-stream + Mcp-Session-Id gets
# a 200 event stream that starts with a priming event and stays open;
# several at once per session; ": keepalive" comments every
# mcp_stream_keepalive; responses never travel on them (only on the POST
# stream of their request, or on a GET that resumes that stream: see
# t/stream_resume.t).

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Time::HiRes qw(time);
use McpTest;
use McpAssert;
use McpStream;

my $t = streaming_server(location => 'mcp_stream_keepalive 1s;', server => <<'NGX');
        location = /retry { mcp on; mcp_builtin everything; mcp_stream_retry 3s; }
NGX

my ($sid) = $t->mcp_initialize(capabilities => { sampling => {} });

# --- one GET stream ------------------------------------------------------------------

my $g = $t->mcp_get_stream($sid);
my $opened = time;
is($g->status, 200, 'GET: 200');
like($g->header('content-type') // '', qr{^text/event-stream\b}, 'GET: text/event-stream');
is($g->header('cache-control'), 'no-cache', 'GET: Cache-Control: no-cache');
is($g->header('x-accel-buffering'), 'no', 'GET: X-Accel-Buffering: no');
is($g->header('mcp-protocol-version'), '2025-11-25', 'GET: MCP-Protocol-Version');
like($g->header('transfer-encoding') // '', qr/\bchunked\b/, 'GET: chunked');
priming_ok(take($g, 3), 1000, 'GET: the priming event comes first');
ok(!defined take($g, 0.3) && $g->{timed_out} && !$g->is_done, 'GET: then the stream stays open');

# --- several GET streams in one session --------------------------------------------

my @gets = map { $t->mcp_get_stream($sid) } 1 .. 5;
my (%stream_no, %workers);
for my $s (@gets) {
    my $p = take($s, 3);
    $stream_no{ (id_parts($p && $p->{id}))[0] // 'none' }++;
    $workers{ worker_of($s) // '?' }++;
}
is(scalar(grep { $_->status == 200 } @gets), 5, 'five more GET streams in the session: all 200');
is(scalar(grep { $_ ne 'none' } keys %stream_no), 5, 'each has its own stream number');
note('the six GET streams are held by ' . scalar(keys %workers) . ' worker(s)');
ok(!(grep { $_->is_done } $g, @gets), 'all six stay open');

# --- no response on GET streams -------------------------------------------------

# Calls in the same session, answered on their POST streams; meanwhile the
# GET streams get nothing.
{
    my @ev = take_all(call_stream($t, $sid, 'p1', 'test_tool_with_progress', {}, token => 'x'), 5);
    is(scalar(rpc_of(@ev)), 4, 'progress call: its 3 notifications and response on the POST stream');
    @ev = take_all(call_stream($t, $sid, 'l1', 'test_tool_with_logging', {}), 5);
    is(scalar(rpc_of(@ev)), 4, 'logging call: its 3 messages and response on the POST stream');

    my $s = call_stream($t, $sid, 's1', 'test_sampling', { prompt => 'hi' });
    take($s, 3);
    my $req = take($s, 3);
    is(($req && $req->{json}{method}) // '', 'sampling/createMessage',
       'sampling request on the POST stream');
    # While the call waits for the answer the POST stream gets keep-alives
    # too (mcp_stream_keepalive 1s).
    my @early = take_all($s, 1.3);
    ok(!@early && $s->comments >= 1 && !$s->is_done,
       'a POST stream waiting for an answer gets ": keepalive" comments, no events');
    is(answer($t, $sid, $req->{json}{id}, sampling_answer('ok'))->{status}, 202, 'answer: 202');
    @ev = take_all($s, 3);
    is(($ev[-1] && $ev[-1]{json}{id}) // '', 's1', 'sampling call: response on the POST stream');

    # A call whose client went away: its response stays with its own stream.
    $s = call_stream($t, $sid, 'gone', 'test_tool_with_progress', {}, token => 'y');
    take($s, 3);
    $s->close;

    # An absence is watched for, not waited on: the GET streams are read
    # for 0.5 s, well past the ~100 ms the call runs on without its
    # client (nothing marks the end of such a call).
    my @got = quiet_for(0.5, $g, @gets);
    ok(!@got, 'no message of any call on the GET streams (not even of a call whose client left)')
        or diag(join '', map { $_->{raw} } @got);
}

# --- keep-alive comments ---------------------------------------------------------

{
    my $left = 2.3 - (time - $opened);
    take($g, $left) if $left > 0;
    cmp_ok($g->comments, '>=', 2, 'mcp_stream_keepalive 1s: >= 2 comments in ~2.3 s');
    my (undef, $after) = split /\n\n/, $g->{body}, 2;
    ok(defined $after && $after =~ /\A(?:: keepalive\n\n)+\z/,
       'after the priming event only ": keepalive" comment lines')
        or diag($g->{body});
    ok(!$g->is_done, 'the idle stream is still open');
}

# --- other versions, Accept, retry ------------------------------------------------

{
    my ($old) = $t->mcp_initialize(protocol_version => '2025-03-26');
    my $s = $t->mcp_get_stream($old);
    is($s->header('mcp-protocol-version'), '2025-03-26', '2025-03-26 session: GET names its version');
    priming_ok(take($s, 3), 1000, '2025-03-26 session: priming event');
    $s->close;

    $s = $t->mcp_get_stream($sid, headers => { Accept => '*/*' });
    is($s->status, 200, 'GET with Accept: */*: 200');
    priming_ok(take($s, 3), 1000, 'GET with Accept: */*: priming event');
    $s->close;

    $s = $t->mcp_get_stream($sid, headers => { Origin => 'http://evil.example' }, quiet => 1);
    is_rpc_error_body({ %$s, body => $s->read_body(2) }, 403, -32600, undef,
                      'GET with a foreign Origin: 403');

    # Like every request after initialize, a GET naming a version the
    # module does not speak gets 400.
    for my $v ('2099-01-01', '2024-11-05', 'garbage') {
        my $x = $t->mcp_get_stream($sid, protocol_version => $v, quiet => 1, timeout => 3);
        my $r = { %$x, body => $x->status == 200 ? '' : $x->read_body(2) };
        $x->close;
        {
            is_rpc_error_body($r, 400, -32600, undef, "GET with MCP-Protocol-Version: $v: 400");
        }
    }

    my ($rs) = $t->mcp_initialize(path => '/retry');
    $s = $t->mcp_get_stream($rs, path => '/retry');
    priming_ok(take($s, 3), 3000, 'mcp_stream_retry 3s: retry: 3000 on a GET stream');
    $s->close;
}

$_->close for $g, @gets;

# --- stream limit ---------------------------------------------------------------

# A session holds at most 32 streams; past that a GET gets 503 while all
# are connected, and takes the place of a disconnected one otherwise.
{
    my ($ls) = $t->mcp_initialize;
    my @s = map { $t->mcp_get_stream($ls) } 1 .. 32;
    is(scalar(grep { $_->status == 200 } @s), 32, '32 GET streams in one session: all 200');
    my $mark = $t->log_mark;
    $t->expect_log_error(qr/Too many streams/);
    my $x = $t->mcp_get_stream($ls, quiet => 1);
    is_rpc_error_body({ %$x, body => $x->read_body(2) }, 503, undef, undef,
                      'the 33rd: 503 with a JSON-RPC error');
    {
        unlike($t->log_since($mark), qr/\[error\].*Too many streams/,
               'the stream limit is a client condition: not logged at [error]');
    }
    $_->close for @s[0 .. 3];
    # A stream's place is free once its worker has read the close: until
    # then a GET still finds 32.  Ask until one gets in, for up to 5 s.
    my ($deadline, $tries) = (time + 5, 0);
    while (1) {
        $x = $t->mcp_get_stream($ls, quiet => 1);
        $tries++;
        last if $x->status == 200 || time > $deadline;
        $x->close;
        Time::HiRes::sleep(0.05);
    }
    is($x->status, 200, 'after four disconnect, a new GET stream: 200')
        or diag("still " . $x->status . " after $tries tries in 5 s");
    priming_ok(take($x, 3), 1000, '... with its priming event');
    $_->close for $x, @s;
}

$t->stop;
done_testing;
