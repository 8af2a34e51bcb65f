# Streamable HTTP transport: methods (GET opens a stream, others 405), Accept / Content-Type checks,
# Mcp-Session-Id issue and checks, MCP-Protocol-Version, 202 vs JSON
# replies, batches (2025-03-26 sessions only), the server/discover probe.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use McpTest;
use McpAssert;

my $t = everything();

my @VERSIONS = qw(2025-11-25 2025-06-18 2025-03-26);
my $ping = sub { { jsonrpc => '2.0', id => $_[0] // 1, method => 'ping' } };

# --- initialize issues a session id ----------------------------------------

my ($sid, $init, $r) = $t->mcp_initialize(skip_initialized => 1);
$t->status_is($r, 200, 'initialize: 200');
like($r->{headers}{'content-type'}, qr{^application/json\b}, 'initialize: application/json');
like($sid, qr/^[0-9a-f]{32}$/, 'initialize: Mcp-Session-Id is 32 hex digits (128 bits)');
like($sid, qr/^[\x21-\x7e]+$/, 'initialize: Mcp-Session-Id is visible ASCII only');
is($r->{headers}{'mcp-protocol-version'}, '2025-11-25',
   'initialize: reply carries MCP-Protocol-Version');

{
    my %seen = ($sid => 1);
    my $bad = 0;
    for (1 .. 100) {
        my $s = $t->mcp_initialize(skip_initialized => 1);
        $bad++ unless defined $s && $s =~ /^[0-9a-f]{32}$/;
        $seen{$s // ''}++;
    }
    is($bad, 0, '100 more initializes: every id is 32 hex digits');
    is(scalar(keys %seen), 101, '101 initializes: 101 different session ids');
}

# --- replies: 202 for notifications and responses, JSON for requests -------

for my $v (@VERSIONS) {
    my ($s) = $t->mcp_initialize(protocol_version => $v, skip_initialized => 1);

    my $n = $t->mcp_notify($s, 'notifications/initialized');
    $t->status_is($n, 202, "$v: notification gets 202");
    is($n->{body}, '', "$v: 202 has no body");
    ok(!defined $n->{headers}{'content-type'}, "$v: 202 has no Content-Type");

    $n = $t->mcp_post($s, { jsonrpc => '2.0', id => 'srv-1', result => {} });
    ok($n->{status} == 202 && $n->{body} eq '', "$v: a client response gets 202, no body");
    $n = $t->mcp_post($s, { jsonrpc => '2.0', id => 'srv-2',
                            error => { code => -1, message => 'declined' } });
    ok($n->{status} == 202 && $n->{body} eq '', "$v: a client error response gets 202, no body");

    my ($msg, $rr) = $t->mcp_request($s, 'ping', undef, id => 7);
    $t->status_is($rr, 200, "$v: request gets 200");
    like($rr->{headers}{'content-type'}, qr{^application/json\b},
         "$v: request reply is application/json");
    is_result($msg, {}, 7, "$v: ping result");
}

# --- Accept ------------------------------------------------------------------

for my $case (
    [ undef,                                 406, 'no Accept' ],
    [ 'application/json',                    406, 'Accept: application/json only' ],
    [ 'text/event-stream',                   406, 'Accept: text/event-stream only' ],
    [ 'text/html',                           406, 'Accept: text/html' ],
    [ 'application/json, text/event-stream', 200, 'Accept: both types' ],
    [ 'text/event-stream;q=0.9, application/json', 200, 'Accept: both, other order, params' ],
    [ 'application/*, text/*',               200, 'Accept: ranges covering both' ],
    [ '*/*',                                 200, 'Accept: */*' ],
) {
    my ($accept, $status, $what) = @$case;
    my $rr = $t->mcp_post($sid, $ping->(3), headers => { Accept => $accept });
    if ($status == 200) {
        $t->status_is($rr, 200, "$what: accepted");
    }
    else {
        is_rpc_error_body($rr, 406, -32600, undef, "$what: 406 with a JSON-RPC error");
    }
}

# --- Content-Type ------------------------------------------------------------

for my $case (
    [ undef,                            415, 'no Content-Type' ],
    [ 'text/plain',                     415, 'Content-Type: text/plain' ],
    [ 'application/x-www-form-urlencoded', 415, 'Content-Type: form' ],
    [ 'application/jsonp',              415, 'Content-Type: application/jsonp' ],
    [ 'application/json',               200, 'Content-Type: application/json' ],
    [ 'application/json; charset=utf-8', 200, 'Content-Type with charset' ],
    [ 'Application/JSON',               200, 'Content-Type: case-insensitive' ],
) {
    my ($ct, $status, $what) = @$case;
    my $rr = $t->mcp_post($sid, $ping->(4), headers => { 'Content-Type' => $ct });
    if ($status == 200) {
        $t->status_is($rr, 200, "$what: accepted");
    }
    else {
        is_rpc_error_body($rr, 415, -32600, undef, "$what: 415 with a JSON-RPC error");
    }
}

# --- Mcp-Session-Id checks ---------------------------------------------------

$r = $t->mcp_post(undef, $ping->(11));
is_rpc_error_body($r, 400, -32600, 11, 'request without Mcp-Session-Id: 400, id echoed');
ok(!defined $r->{headers}{'mcp-session-id'}, 'no session issued for it');

$r = $t->mcp_post(undef, { jsonrpc => '2.0', method => 'notifications/initialized' });
is_rpc_error_body($r, 400, -32600, undef, 'notification without Mcp-Session-Id: 400');

$r = $t->mcp_post('0123456789abcdef0123456789abcdef', $ping->(12));
is_rpc_error_body($r, 404, -32001, 12, 'unknown session id: 404, id echoed');

$r = $t->mcp_post('not-a-session', $ping->(13));
is_rpc_error_body($r, 404, -32001, 13, 'malformed session id: 404');

$r = $t->mcp_post(uc $sid, $ping->(14));
is($r->{status}, 404, 'session ids are compared exactly (upper-cased id: 404)');

{
    my ($s) = $t->mcp_initialize;
    $t->status_is($t->mcp_post($s, $ping->(15)), 200, 'fresh session works');
    my $d = $t->mcp_delete($s);
    $t->status_is($d, 200, 'DELETE ends the session: 200');
    $r = $t->mcp_post($s, $ping->(16));
    is_rpc_error_body($r, 404, -32001, 16, 'request in a terminated session: 404');
    $r = $t->mcp_notify($s, 'notifications/initialized');
    is($r->{status}, 404, 'notification in a terminated session: 404');
    $d = $t->mcp_delete($s);
    is_rpc_error_body($d, 404, -32001, undef, 'DELETE of a terminated session: 404');
    $d = $t->mcp_delete(undef);
    is_rpc_error_body($d, 400, -32600, undef, 'DELETE without Mcp-Session-Id: 400');
    $t->status_is($t->mcp_post($sid, $ping->(17)), 200, 'other sessions unaffected by DELETE');
}

# --- other HTTP methods ------------------------------------------------------

# GET opens an SSE stream for server-initiated messages (t/stream_get.t
# tests them in depth); here only the transport's answers.
{
    my $s = $t->mcp_get_stream($sid);
    is($s->status, 200, 'GET with a session: 200');
    like($s->header('content-type') // '', qr{^text/event-stream\b}, 'GET: text/event-stream');
    my $ev = $s->next_event(3);
    ok($ev && defined $ev->{id} && $ev->{id} =~ /^\d+-0$/ && defined $ev->{retry},
       'GET: the stream starts with a priming event (id, retry)')
        or diag(explain($ev));
    $s->close;

    $r = $t->request(method => 'GET', path => '/mcp', headers => { Accept => 'text/event-stream' });
    is_rpc_error_body($r, 400, -32600, undef, 'GET without Mcp-Session-Id: 400');
    $r = $t->request(method => 'GET', path => '/mcp',
                     headers => { Accept => 'text/event-stream', 'Mcp-Session-Id' => 'f' x 32 });
    is_rpc_error_body($r, 404, -32001, undef, 'GET with an unknown session: 404');
    for my $accept (undef, 'application/json', 'text/html') {
        $r = $t->request(method => 'GET', path => '/mcp',
                         headers => { Accept => $accept, 'Mcp-Session-Id' => $sid });
        is_rpc_error_body($r, 406, -32600, undef,
                          'GET with ' . ($accept ? "Accept: $accept" : 'no Accept') . ': 406');
    }
}

for my $m (qw(PUT PATCH OPTIONS)) {
    $r = $t->request(method => $m, path => '/mcp',
                     headers => { Accept => 'text/event-stream', 'Mcp-Session-Id' => $sid },
                     ($m eq 'OPTIONS' ? () : (body => '{}')));
    is_rpc_error_body($r, 405, -32600, undef, "$m: 405 with a JSON-RPC error");
    is($r->{headers}{allow}, 'GET, POST, DELETE', "$m: Allow: GET, POST, DELETE");
}

# --- MCP-Protocol-Version ----------------------------------------------------

for my $v (@VERSIONS) {
    $t->status_is($t->mcp_post($sid, $ping->(21), protocol_version => $v), 200,
                  "MCP-Protocol-Version: $v accepted");
}
$t->status_is($t->mcp_post($sid, $ping->(22), protocol_version => undef), 200,
              'MCP-Protocol-Version absent: accepted');
for my $v ('2099-01-01', '2024-11-05', 'garbage', '') {
    $r = $t->mcp_post($sid, $ping->(23), protocol_version => $v);
    is_rpc_error_body($r, 400, -32600, undef, "MCP-Protocol-Version '$v': 400");
}
$r = $t->mcp_post(undef, { jsonrpc => '2.0', id => 24, method => 'initialize',
                           params => { protocolVersion => '2025-11-25', capabilities => {},
                                       clientInfo => { name => 'x', version => '1' } } },
                  protocol_version => '1.0');
is($r->{status}, 400, 'initialize with an unsupported MCP-Protocol-Version header: 400');
ok(!defined $r->{headers}{'mcp-session-id'}, '... and no session issued');

# --- every reply after initialize carries MCP-Protocol-Version -----------------

{
    my ($s, undef, $ir) = $t->mcp_initialize(protocol_version => '2025-06-18',
                                             skip_initialized => 1);
    my %replies = (
        'initialize'               => $ir,
        'notification (202)'       => $t->mcp_notify($s, 'notifications/initialized'),
        'client response (202)'    => $t->mcp_post($s, { jsonrpc => '2.0', id => 1, result => {} }),
        'ping'                     => $t->mcp_post($s, $ping->(31)),
        'tools/call'               => $t->mcp_post($s, { jsonrpc => '2.0', id => 32,
                                          method => 'tools/call',
                                          params => { name => 'test_simple_text' } }),
        'method not found error'   => $t->mcp_post($s, { jsonrpc => '2.0', id => 33, method => 'nope' }),
        'invalid params error'     => $t->mcp_post($s, { jsonrpc => '2.0', id => 34,
                                          method => 'tools/call', params => {} }),
        'invalid request error'    => $t->mcp_post($s, '{"jsonrpc":"1.0","id":35,"method":"ping"}'),
        'batch refused in session' => $t->mcp_post($s, [ $ping->(36) ]),
    );
    for my $what (sort keys %replies) {
        is($replies{$what}{headers}{'mcp-protocol-version'}, '2025-06-18',
           "2025-06-18 session: $what reply carries MCP-Protocol-Version: 2025-06-18");
    }
    my $d = $t->mcp_delete($s);
    {
        is($d->{headers}{'mcp-protocol-version'}, '2025-06-18',
           '2025-06-18 session: DELETE reply carries MCP-Protocol-Version');
    }
}

# --- batches: only in 2025-03-26 sessions, never with initialize ------------

{
    my ($old) = $t->mcp_initialize(protocol_version => '2025-03-26');
    $r = $t->mcp_post($old, [
        { jsonrpc => '2.0', id => 1, method => 'ping' },
        { jsonrpc => '2.0', method => 'notifications/progress', params => { progressToken => 1, progress => 1 } },
        { jsonrpc => '2.0', id => 'two', method => 'tools/call', params => { name => 'test_simple_text' } },
        { jsonrpc => '2.0', id => 3, method => 'no/such/method' },
        { jsonrpc => '2.0', id => 'c1', result => {} },
    ]);
    $t->status_is($r, 200, '2025-03-26 batch: 200');
    like($r->{headers}{'content-type'}, qr{^application/json\b}, '2025-03-26 batch: application/json');
    is(ref $r->{json}, 'ARRAY', '2025-03-26 batch: the reply is an array');
    my @got = ref $r->{json} eq 'ARRAY' ? @{ $r->{json} } : ();
    is(scalar @got, 3, '2025-03-26 batch: one reply per request, none for notification or response');
    is_result($got[0], {}, 1, '2025-03-26 batch: ping result, in order');
    is_result($got[1], { content => [ { type => 'text',
                           text => 'This is a simple text response for testing.' } ] },
              'two', '2025-03-26 batch: tools/call result, in order');
    is_error($got[2], -32601, 3, '2025-03-26 batch: unknown method error, in order');

    $r = $t->mcp_post($old, [ { jsonrpc => '2.0', method => 'notifications/initialized' },
                              { jsonrpc => '2.0', id => 9, result => {} } ]);
    ok($r->{status} == 202 && $r->{body} eq '',
       '2025-03-26 batch of a notification and a response: 202, no body');

    for my $v ('2025-06-18', '2025-11-25') {
        my ($s) = $t->mcp_initialize(protocol_version => $v);
        $r = $t->mcp_post($s, [ $ping->(41), $ping->(42) ]);
        is_rpc_error_body($r, 400, -32600, undef, "$v session: a batch is refused (400)");
    }

    my $init_msg = { jsonrpc => '2.0', id => 50, method => 'initialize',
                     params => { protocolVersion => '2025-03-26', capabilities => {},
                                 clientInfo => { name => 'x', version => '1' } } };
    $r = $t->mcp_post(undef, [ $init_msg ]);
    is_rpc_error_body($r, 400, -32600, undef, 'initialize in a batch (no session): 400');
    ok(!defined $r->{headers}{'mcp-session-id'}, '... and no session issued');
    $r = $t->mcp_post($old, [ $ping->(51), $init_msg ]);
    is_rpc_error_body($r, 400, -32600, undef, 'initialize in a batch (2025-03-26 session): 400');
    ok(!defined $r->{headers}{'mcp-session-id'}, '... and no session issued');
    $r = $t->mcp_post($old, []);
    is_rpc_error_body($r, 400, -32600, undef, 'empty batch: 400 invalid request');
}

# --- server/discover probe (2026-07-28 clients) without a session -------------

for my $id (77, 'probe-1') {
    $r = $t->mcp_post(undef, { jsonrpc => '2.0', id => $id, method => 'server/discover',
                               params => {} });
    is_rpc_error_body($r, 400, -32601, $id,
                      "server/discover without session: -32601 carrying id '$id', JSON not HTML");
    ok(!defined $r->{headers}{'mcp-session-id'}, "server/discover ($id): no session issued");
}
like($r->{body}, qr/"id":"probe-1"/, 'server/discover: string id echoed as a string');

$t->stop;

# --- chunked request bodies (no Content-Length) --------------------------------

# An instance of their own: the last chunk of a body is an empty buffer,
# which once crashed the sanitizer build; keep it apart from the rest.
{
    my $c = everything(location => 'mcp_max_request_size 1k;');
    my ($csid) = $c->mcp_initialize;
    my $chunked = sub {
        my ($body) = @_;
        my $raw = "POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
                . "Accept: application/json, text/event-stream\r\nMcp-Session-Id: $csid\r\n"
                . "MCP-Protocol-Version: 2025-11-25\r\nTransfer-Encoding: chunked\r\n"
                . "Connection: close\r\n\r\n";
        # two chunks, then the last-chunk
        my $half = int(length($body) / 2);
        for my $part (substr($body, 0, $half), substr($body, $half)) {
            $raw .= sprintf("%x\r\n%s\r\n", length $part, $part);
        }
        my $r = $c->request(raw => $raw . "0\r\n\r\n", quiet => 1);
        McpTest::decode_mcp_response($r);
        return $r;
    };
    my $r = $chunked->('{"jsonrpc":"2.0","id":"ch","method":"ping"}');
    is($r->{status}, 200, 'chunked body: 200');
    is_result($r->{json}, {}, 'ch', 'chunked body: ping answered');
    $r = $chunked->('{"jsonrpc":"2.0","id":"big","method":"ping","params":{"pad":"'
                    . ('x' x 2048) . '"}}');
    is_rpc_error_body($r, 413, -32600, undef,
                      'chunked 2 KB body over mcp_max_request_size 1k: 413 with a JSON-RPC error');
    $c->stop;
}

done_testing;
