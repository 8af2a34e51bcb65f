# What crosses the gateway over several MCP servers (mcp_backend, issue
# #15) while a routed call runs: a backend's SSE events as they come.  A
# gateway over an nginx instance of this module (the Everything set) and
# @modelcontextprotocol/server-everything: sampling and elicitation
# requests answered by the raw-HTTP client through the gateway, progress
# from both backends on two calls of one session and on the one stream
# of a 2025-03-26 batch, a client's
# cancellation (and the gateway's own, at mcp_backend_timeout) reaching
# the backend, clients that cannot be asked (no sampling declared,
# stateless); and attacks: client responses with forged ids, a backend
# whose event names a member twice, one whose event is larger than
# mcp_backend_max_size, one that ends its stream before its response, one
# that answers another request's id.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Time::HiRes qw(sleep time);
use McpTest timeout => 180;
use McpStream;
use McpGateway qw(start_everything_node stop_process node_available fake_mcp_server);

my $why = node_available('@modelcontextprotocol/server-everything');
plan skip_all => "node: $why" if $why;

# backend alpha: the Everything set
my $alpha = McpTest->new(server => <<'NGX')->start;
        location = /mcp {
            mcp on;
            mcp_builtin everything;
        }
NGX

# a backend that misbehaves in its streams, one way a tool
my $fake = fake_mcp_server(tools => [ qw(dup big cut other fine many flood pings) ], listen => 512, call => sub {
    my ($c, $name, $id) = @_;
    my $sse = sub {
        print $c "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
               . "Connection: close\r\n\r\n";
        print $c "data: $_\n\n" for @_;
    };
    my $final = qq({"jsonrpc":"2.0","id":$id,"result":{"content":[{"type":"text","text":"done"}]}});

    if ($name eq 'dup') {
        $sse->(qq({"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1},"params":{"progressToken":2,"progress":2}}),
               $final);
    }
    elsif ($name eq 'big') {
        $sse->(qq({"jsonrpc":"2.0","method":"notifications/message","params":{"level":"error","data":") . ('x' x 9000) . '"}}',
               $final);
    }
    elsif ($name eq 'cut') {
        $sse->(qq({"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"t","progress":1}}));
        sleep 0.2;
    }
    elsif ($name eq 'many') {
        # 60 events, 6 KB in all, in one write: more than the bound, none past it
        $sse->((map { qq({"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"t","progress":$_,"message":"step $_ of sixty"}}) } 1 .. 60),
               $final);
    }
    elsif ($name eq 'flood') {
        $sse->((map { qq({"jsonrpc":"2.0","id":"f$_","method":"sampling/createMessage","params":{"messages":[],"maxTokens":1}}) } 1 .. 24));
        sleep 0.5;
        print $c "data: $final\n\n";
    }
    elsif ($name eq 'pings') {
        $sse->((map { qq({"jsonrpc":"2.0","id":"p$_","method":"ping"}) } 1 .. 300), $final);
    }
    elsif ($name eq 'other') {
        $sse->(qq({"jsonrpc":"2.0","id":424242,"result":{"content":[]}}));
    }
    elsif ($name eq 'fine') {
        # one event split over several writes, a comment, CRLF lines
        print $c "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n";
        print $c ": a comment\r\nid: 7\r\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",";
        sleep 0.1;
        print $c "\"params\":{\"progressToken\":\"theirs\",\"progress\":3,\"total\":4}}\r\n\r\n";
        sleep 0.1;
        print $c "data: $final\r\n\r\n";
    }
});
my $fport = $fake->{port};

my $proxy = 'proxy_http_version 1.1; proxy_set_header Connection "";';
my $t = McpTest->new(
    listen => 'reuseport',    # fresh connections reach several workers
    ports => 2,    # 2: server-everything
    http  => "    mcp_session_zone zone=relay:4m;\n    log_format relay_uri '\$uri';\n",
    server => <<"NGX");
        mcp_session relay;

        location = /mcp {
            mcp_backend alpha /_b/alpha;
            mcp_backend node  /_b/node;
            mcp_backend_timeout 3s;
            add_header X-Worker \$pid always;
        }

        location = /who { add_header X-Worker \$pid always; return 200 "who\\n"; }

        location = /bad {
            mcp_backend alpha /_b/alpha;
            mcp_backend dup   /_b/dup;
            mcp_backend big   /_b/big;
            mcp_backend cut   /_b/cut;
            mcp_backend other /_b/other;
            mcp_backend fine  /_b/fine;
            mcp_backend many  /_b/many;
            mcp_backend flood /_b/flood;
            mcp_backend pings /_b/pings;
            mcp_backend_max_size 4k;
            mcp_backend_retry 30s;
        }

        location /_b/alpha { internal; proxy_pass http://127.0.0.1:@{[ $alpha->port ]}/mcp; $proxy }
        location /_b/node  { internal; proxy_pass http://127.0.0.1:%%PORT2%%/mcp; $proxy }
        location /_b/      { internal; proxy_pass http://127.0.0.1:$fport/mcp; $proxy
                             log_subrequest on; access_log %%PREFIX%%/logs/fake.log relay_uri; }
NGX
$t->expect_log_error(qr/connect\(\) failed|recv\(\) failed|upstream prematurely closed/);
$t->start;

my $node_log = $t->prefix . '/logs/server-everything.log';
my $node = start_everything_node(port => $t->port(2), log => $node_log);

sub text { (($_[0] // {})->{content} // [ {} ])->[0]{text} // '' }

# the first server request on a stream
sub server_request {
    my ($s, $timeout) = @_;
    my $deadline = time + ($timeout // 10);
    while (time < $deadline) {
        my $ev = take($s, $deadline - time) // last;
        my $m = $ev->{json};
        return $m if ref $m eq 'HASH' && defined $m->{method} && defined $m->{id};
    }
    return undef;
}

my ($sid) = $t->mcp_initialize(capabilities => { sampling => {}, elicitation => {} });
ok($sid, 'initialize, declaring sampling and elicitation');

# --- sampling from each backend, answered through the gateway ----------------

for my $case ([ 'node__trigger-sampling-request', { prompt => 'the question', maxTokens => 20 }, 'node',
                qr/forty-two/ ],
              [ 'alpha__test_sampling', { prompt => 'the question' }, 'alpha', qr/^LLM response: forty-two/ ]) {
    my ($tool, $args, $who, $want) = @$case;
    my $s = call_stream($t, $sid, 100, $tool, $args);
    my $req = server_request($s);
    is($req && $req->{method}, 'sampling/createMessage', "$who: its sampling request reaches the client");
    like(($req->{params}{messages}[0]{content}{text} // ''), qr/the question/, '... with the backend\'s params');
    my $a = answer($t, $sid, $req->{id}, sampling_answer('forty-two'));
    is($a->{status}, 202, '... the client\'s answer, POSTed on a fresh connection: 202');
    my @m = until_response($s, 100);
    like(text($m[-1]{result}), $want, "$who: the tool's result has the client's answer");
    ended_ok($s, '... and the call\'s stream ends');
}

# the answer at another worker than the call's: the session's wait record
# (odd rounds answer on a kept connection to another worker than the
# call's, even rounds on a fresh connection, wherever the kernel puts it)
{
    my $conn = pinned_conns($t);
    my ($ok, $cross) = (0, 0);
    for my $i (1 .. 8) {
        my $s = call_stream($t, $sid, 130 + $i, 'alpha__test_sampling', { prompt => "round $i" });
        my $req = server_request($s) or next;
        my ($to) = $i % 2 ? grep { $_ ne (worker_of($s) // '') } sort keys %$conn : ();
        my $a = answer($t, $sid, $req->{id}, sampling_answer("answer $i"),
                       ($to ? (conn => $conn->{$to}, keepalive => 1) : ()));
        my @m = until_response($s, 130 + $i);
        $ok++ if text($m[-1]{result}) eq "LLM response: answer $i";
        $cross++ if worker_of($a) && worker_of($s) && worker_of($a) ne worker_of($s);
        note("call at " . (worker_of($s) // "?") . ", answer at " . (worker_of($a) // "?"));
    }
    is($ok, 8, 'eight sampling rounds through the gateway, each result with its own answer');
    cmp_ok($cross, '>=', 4, "... $cross of them answered at another worker than the call's");
}

# elicitation, the same way
{
    my $s = call_stream($t, $sid, 110, 'alpha__test_elicitation', { message => 'who are you?' });
    my $req = server_request($s);
    is($req && $req->{method}, 'elicitation/create', 'alpha: its elicitation request reaches the client');
    answer($t, $sid, $req->{id}, { action => 'accept', content => { username => 'ann', email => 'ann@example.com' } });
    my @m = until_response($s, 110);
    like(text($m[-1]{result}), qr/ann\@example\.com/, '... and the tool\'s result has the client\'s answer');
}

# a client that did not declare sampling is not asked: the backend hears so
{
    my ($plain) = $t->mcp_initialize;
    my ($res, undef, $http) = $t->mcp_call($plain, 'tools/call', { name => 'alpha__test_sampling', arguments => { prompt => 'x' } },
                                           timeout => 10);
    ok(!(grep { defined $_->{method} && defined $_->{id} } @{ $http->{messages} }),
       'a client without sampling: no request reaches it');
    # the gateway declared alpha no sampling for this session: alpha knows
    ok($res->{isError} && text($res) =~ /does not support sampling/,
       '... alpha, told at initialize, does not ask: ' . text($res));
    ok(!(grep { $_ eq 'node__trigger-sampling-request' }
         map { $_->{name} } @{ ($t->mcp_call($plain, 'tools/list', {}) // {})->{tools} // [] }),
       '... and node, told so at initialize, offers it no sampling tool');
}

# a stateless (2026-07-28) client: progress relayed, requests refused for it
{
    my $P = 'io.modelcontextprotocol/';
    my $sl = sub {
        my ($name, $args, %o) = @_;
        my $meta = { "${P}protocolVersion" => '2026-07-28',
                     "${P}clientCapabilities" => { sampling => {} },
                     "${P}clientInfo" => { name => 't83', version => '1' },
                     (defined $o{token} ? (progressToken => $o{token}) : ()) };
        my $r = $t->mcp_post(undef, { jsonrpc => '2.0', id => 1, method => 'tools/call',
                                      params => { name => $name, arguments => $args, _meta => $meta } },
                             headers => { 'MCP-Protocol-Version' => '2026-07-28', 'Mcp-Method' => 'tools/call',
                                          'Mcp-Name' => $name },
                             protocol_version => undef, quiet => 1, timeout => 10);
        Test::More::diag(McpTest::explain_response($r)) unless @{ $r->{messages} // [] };
        return @{ $r->{messages} // [] };
    };
    my @m = $sl->('alpha__test_tool_with_progress', {}, token => 'sl');
    my @p = grep { ($_->{method} // '') eq 'notifications/progress' } @m;
    is(scalar @p, 3, 'stateless: alpha\'s three progress notifications relayed');
    ok(!(grep { ($_->{params}{progressToken} // '') ne 'sl' } @p), '... with the request\'s token');
    @m = $sl->('alpha__test_sampling', { prompt => 'x' });
    ok(!(grep { defined $_->{method} && defined $_->{id} } @m), 'stateless: no server request reaches the client');
    is($m[-1]{error}{code}, -32600,
       '... alpha, asked in the client\'s revision, answers as to a stateless client of its own');
}

# --- progress from two backends, two calls of one session ---------------------

{
    my $sa = call_stream($t, $sid, 201, 'alpha__test_tool_with_progress', {}, token => 'tok-alpha');
    my $sn = call_stream($t, $sid, 202, 'node__trigger-long-running-operation',
                         { duration => 1, steps => 3 }, token => 'tok-node');
    my @ma = until_response($sa, 201);
    my @mn = until_response($sn, 202);
    my @pa = grep { ($_->{method} // '') eq 'notifications/progress' } @ma;
    my @pn = grep { ($_->{method} // '') eq 'notifications/progress' } @mn;
    is(scalar @pa, 3, 'alpha: three progress notifications on its call\'s stream');
    is(scalar @pn, 3, 'node: three progress notifications on its call\'s stream');
    ok(!(grep { ($_->{params}{progressToken} // '') ne 'tok-alpha' } @pa), '... alpha\'s with the token its call gave');
    ok(!(grep { ($_->{params}{progressToken} // '') ne 'tok-node' } @pn), '... node\'s with the token its call gave');
    is_deeply([ map { $_->{params}{progress} } @pn ], [ 1, 2, 3 ], '... in order');
    like(text($ma[-1]{result}), qr/progress executed/, 'alpha\'s result after its progress');
    like(text($mn[-1]{result}), qr/Long running operation completed/, 'node\'s result after its progress');
}

# --- progress from two backends on one stream: a 2025-03-26 batch ---------------
# One POST holds a call to each backend; its one SSE response carries both
# backends' progress, each with its call's token, and both results.

{
    my ($osid) = $t->mcp_initialize(protocol_version => '2025-03-26');
    my $r = $t->mcp_post($osid, [
        { jsonrpc => '2.0', id => 301, method => 'tools/call',
          params => { name => 'alpha__test_tool_with_progress', arguments => {}, _meta => { progressToken => 'b-alpha' } } },
        { jsonrpc => '2.0', id => 302, method => 'tools/call',
          params => { name => 'node__trigger-long-running-operation', arguments => { duration => 1, steps => 3 },
                      _meta => { progressToken => 'b-node' } } } ],
        protocol_version => '2025-03-26', timeout => 20);
    like($r->{headers}{'content-type'} // '', qr{^text/event-stream}, 'a batch of a call to each backend: one SSE stream');
    my @m = @{ $r->{messages} // [] };
    my %tok;
    $tok{ $_->{params}{progressToken} // '' }++ for grep { ($_->{method} // '') eq 'notifications/progress' } @m;
    is_deeply(\%tok, { 'b-alpha' => 3, 'b-node' => 3 }, '... carrying three progress notifications of each backend');
    my %res = map { $_->{id} => text($_->{result}) } grep { defined $_->{id} && $_->{result} } @m;
    like($res{301} // '', qr/progress executed/, '... alpha\'s result');
    like($res{302} // '', qr/Long running operation completed/, '... and node\'s');
}

# log messages, at the client's level (the gateway's session's, not alpha's)
{
    my ($lsid) = $t->mcp_initialize;
    my $s = call_stream($t, $lsid, 220, 'alpha__test_tool_with_logging', {});
    my @l = grep { ($_->{method} // '') eq 'notifications/message' } until_response($s, 220);
    is(scalar @l, 3, 'alpha\'s three log messages reach the client at its level (info)');
    is($l[0]{params}{data}, 'Tool execution started', '... as alpha wrote them');
    my $r = $t->mcp_call($lsid, 'logging/setLevel', { level => 'error' });
    is_deeply($r, {}, 'the client sets its level to error');
    my ($res, undef, $http) = $t->mcp_call($lsid, 'tools/call', { name => 'alpha__test_tool_with_logging', arguments => {} });
    ok(!(grep { ($_->{method} // '') eq 'notifications/message' } @{ $http->{messages} }),
       '... then none of alpha\'s info messages reaches it');
    like(text($res), qr/logging executed/, '... and the result does');
}

# a call longer than mcp_backend_timeout (3 s) whose progress keeps coming
{
    my $s = call_stream($t, $sid, 210, 'node__trigger-long-running-operation',
                        { duration => 4, steps => 4 }, token => 7);
    my @m = until_response($s, 210, 10);
    is(scalar(grep { ($_->{method} // '') eq 'notifications/progress' } @m), 4,
       'a call past mcp_backend_timeout with progress every second: its four progress notifications');
    like(text($m[-1]{result}), qr/completed/, '... and its result: each event restarts the timeout');
}

# --- a client's cancellation reaches the backend -------------------------------

{
    my $mark = $alpha->log_mark;
    my $s = call_stream($t, $sid, 300, 'alpha__test_sampling', { prompt => 'never answered' });
    my $req = server_request($s);
    ok($req, 'alpha asks for sampling');
    my $n = $t->mcp_notify($sid, 'notifications/cancelled', { requestId => 300, reason => 'changed my mind' });
    is($n->{status}, 202, 'the client cancels its call: 202');
    ok(McpTest::wait_until(5, sub { $alpha->log_since($mark) =~ /call "tools\/call" cancelled by the client/ }),
       'alpha hears of it: its call is cancelled');
    my @m = until_response($s, 300, 3);
    ok(!(grep { defined $_->{id} && "$_->{id}" eq '300' } @m), 'no response on the cancelled call\'s stream');
    # the sampling request's answer now finds nobody
    my $a = answer($t, $sid, $req->{id}, sampling_answer('late'));
    is($a->{status}, 202, 'a late answer to the cancelled call\'s request: 202, dropped');
}

# the gateway gives up on a call past mcp_backend_timeout: the backend is told
{
    my $mark = $alpha->log_mark;
    my $s = call_stream($t, $sid, 310, 'alpha__test_sampling', { prompt => 'nobody answers' });
    ok(server_request($s), 'alpha asks for sampling; the client never answers');
    my @m = until_response($s, 310, 8);
    ok($m[-1]{result}{isError} && text($m[-1]{result}) =~ /mcp_backend_timeout/,
       'after mcp_backend_timeout: a tool error (' . text($m[-1]{result}) . ')');
    ok(McpTest::wait_until(3, sub { $alpha->log_since($mark) =~ /call "tools\/call" cancelled by the client/ }),
       '... and alpha is told: its call is cancelled');
}

# --- forged ids in a client's response ------------------------------------------

{
    my $s = call_stream($t, $sid, 400, 'alpha__test_sampling', { prompt => 'forgeries first' });
    my $req = server_request($s);
    ok($req, 'alpha asks for sampling');
    my @forged = ("$req->{id}x", 'alpha:1', -1, 1e300, '', { a => 1 }, [ $req->{id} ], $req->{id} + 1000, 'A' x 5000);
    for my $f (@forged) {
        my $r = $t->mcp_post($sid, { jsonrpc => '2.0', id => $f, result => sampling_answer('forged') }, quiet => 1);
        ok($r->{status} == 202 || ($r->{status} == 400 && ($r->{json}{error}{code} // 0) < 0),
           'a response with the forged id ' . substr(ref $f ? McpTest::encode_json($f) : $f, 0, 20)
           . ": refused or dropped ($r->{status})");
    }
    my $a = answer($t, $sid, $req->{id}, sampling_answer('the real one'));
    is($a->{status}, 202, 'then the real answer: 202');
    my @m = until_response($s, 400);
    like(text($m[-1]{result}), qr/the real one/, '... and only the real answer reaches alpha');
}

# --- backends whose streams are wrong ---------------------------------------------

my ($bsid) = $t->mcp_initialize(path => '/bad');
my $mark = $t->log_mark;
for my $case ([ 'dup__dup', qr/names a member twice/, 'an event that names "params" twice' ],
              [ 'big__big', qr/larger than mcp_backend_max_size/, 'an event of 9 KB past mcp_backend_max_size 4k' ],
              [ 'cut__cut', qr/ended before its response/, 'a stream that ends before its response' ],
              [ 'other__other', qr/another request/, 'a response with another request\'s id' ]) {
    my ($tool, $re, $what) = @$case;
    my $r = $t->mcp_call($bsid, 'tools/call', { name => $tool, arguments => {} }, path => '/bad', timeout => 10);
    ok(ref $r eq 'HASH' && ($r->{code} // 0) == -32000 && ($r->{message} // '') =~ $re,
       "$what: a JSON-RPC error -32000 (" . ($r->{message} // McpTest::encode_json($r)) . ")");
}
like($t->log_since($mark), qr/\[warn\].*backend "dup".*names a member twice/, 'a [warn] names the backend and the fault');

# a good stream: split over writes, CRLF lines, a comment, an SSE id
{
    my $s = call_stream($t, $bsid, 500, 'fine__fine', {}, token => 'mine', path => '/bad');
    my @m = until_response($s, 500);
    my @p = grep { ($_->{method} // '') eq 'notifications/progress' } @m;
    is(scalar @p, 1, 'an event split over writes, with CRLF lines and a comment: relayed once');
    is($p[0]{params}{progressToken}, 'mine', '... with the client\'s token, not the backend\'s');
    is(text($m[-1]{result}), 'done', '... then the result');
}

# many events at once, more than mcp_backend_max_size together
{
    my $s = call_stream($t, $bsid, 502, 'many__many', {}, token => 'm', path => '/bad');
    my @m = until_response($s, 502);
    my @p = grep { ($_->{method} // '') eq 'notifications/progress' } @m;
    is(scalar @p, 60, '60 events of 6 KB in all at once, the bound 4k: all relayed');
    is_deeply([ map { $_->{params}{progress} } @p ], [ 1 .. 60 ], '... in order');
    is(text($m[-1]{result}), 'done', '... then the result');
}

# a backend that asks the client 24 questions at once: 16 reach it
{
    my ($fsid) = $t->mcp_initialize(path => '/bad', capabilities => { sampling => {} });
    my $s = call_stream($t, $fsid, 503, 'flood__flood', {}, path => '/bad');
    my @m = until_response($s, 503);
    my @q = grep { ($_->{method} // '') eq 'sampling/createMessage' } @m;
    is(scalar @q, 16, '24 sampling requests at once from a backend: 16 reach the client, the others are refused');
    is(text($m[-1]{result}), 'done', '... and the call ends with the backend\'s result');
}

# a backend that pings without end: the gateway answers 256 in a call
{
    my $r = $t->mcp_call($bsid, 'tools/call', { name => 'pings__pings', arguments => {} }, path => '/bad', timeout => 20);
    is(text($r), 'done', '300 pings from a backend during a call: the call still ends with its result');
    # the fake serves one connection at a time: the answers come slowly
    my $count = sub { scalar(() = (McpTest::_slurp($t->prefix . '/logs/fake.log') // '') =~ m{/_b/pings}g) };
    my $t0 = time;
    McpTest::wait_until(20, sub { $count->() >= 256 });
    sleep 2;
    my $n = $count->();
    ok($n >= 256 && $n < 300, "... and it got 256 answers, not 300 ($n requests in all, its sessions' included, "
                              . sprintf('%.1f s', time - $t0) . ')');
}

# without a token, no progress reaches the client
{
    my $s = call_stream($t, $bsid, 501, 'fine__fine', {}, path => '/bad');
    my @m = until_response($s, 501);
    ok(!(grep { ($_->{method} // '') eq 'notifications/progress' } @m), 'a call without a token: no progress');
}

# all still well
my $r = $t->mcp_call($sid, 'tools/call', { name => 'node__echo', arguments => { message => 'still here' } });
is(text($r), 'Echo: still here', 'the gateway and its backends still answer');

stop_process($node->{pid}, "TERM");
stop_process($fake->{pid});
$t->stop;
$alpha->stop;
done_testing;
