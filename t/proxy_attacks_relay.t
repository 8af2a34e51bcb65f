# Attacks on four gateway changes, kept as tests:
#
# (1) mcp_pass relays the client's headers in one walk, a header chosen by
#     its name's length then one compare: names of the same length as a
#     relayed one (Cache-Control, If-None-Match, X-Mcp-Header1 beside
#     Last-Event-ID and Authorization; Origin, Cookie, Pragma beside
#     Accept; If-Range beside Mcp-Name), mixed case, a name twice (the
#     first goes), Authorization with mcp_pass_authorization off (never),
#     60 headers (three parts of nginx's header list) with Mcp-Param-*
#     spread over them, odd bytes in values; the client's Host,
#     Mcp-Session-Id, Connection and others never reach the upstream; the
#     request line, Host line and Content-Length are the gateway's.  An
#     upstream that answers with the request head it read says so.
# (2) The policy filter reads an upstream's tools/list reply as a client
#     does, or a denied tool reaches the client: line ends CR / LF / CRLF
#     mixed, a lone CR at the end, BOMs (one, two, not at the start),
#     "data" without its colon, "DATA:" and "data :", comments, a batch,
#     two messages in one event, id:/retry: with a CR, NUL bytes, a long
#     line, JSON served as SSE and SSE as JSON, a JSON reply after a BOM.
#     The client is the TypeScript SDK's own reading (t/js/
#     sse_client_view.mjs: media type, TextDecoderStream,
#     eventsource-parser, Response.json()).
# (3) The session store serves a gateway request's session and target
#     under one lock: another API key's subject, or no key, asking for a
#     session gets "not found"; a session deleted while 4 workers run its
#     calls; one evicted (per_client quota) while its calls run; one
#     expired: never a 5xx, never a worker's crash.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Time::HiRes qw(sleep);
use Digest::SHA qw(sha256_hex);
use POSIX ();
use McpTest timeout => 240;
use McpAssert;
use McpGateway;
use McpJwt;
use JSON::PP ();
use Compress::Zlib ();

my $V25 = '2025-11-25';
my $JSON = JSON::PP->new->canonical->ascii;

# --- the hostile upstream -----------------------------------------------------
#
# /echo*: initialize, then any request is answered with the head and body
# it read.  /p/<case>: tools/list answered with the case's reply (media
# type, body, framing); tools named ok1, ok2 and secret (denied).

sub tools_msg {
    my ($id, @names) = @_;
    @names = qw(ok1 secret ok2) unless @names;
    return qq({"jsonrpc":"2.0","id":$id,"result":{"tools":[)
         . join(',', map { qq({"name":"$_","inputSchema":{"type":"object"}}) } @names) . ']}}';
}

my $SSE = 'text/event-stream';
my $APP = 'application/json';
my $BOM = "\xef\xbb\xbf";

# case => sub { $id } -> [ media type, body, framing (chunked|length|close|split) ]
my %CASE = (
    'json-bom'      => sub { [ $APP, $BOM . tools_msg($_[0]) ] },
    'json-bom-ws'   => sub { [ $APP, "$BOM \r\n" . tools_msg($_[0]) ] },
    'json-2bom'     => sub { [ $APP, $BOM . $BOM . tools_msg($_[0]) ] },
    'sse-bom'       => sub { [ $SSE, "${BOM}data: " . tools_msg($_[0]) . "\n\n" ] },
    'sse-2bom'      => sub { [ $SSE, "$BOM${BOM}data: " . tools_msg($_[0]) . "\n\n" ] },
    'sse-bom-mid'   => sub { [ $SSE, ": hi\n\n${BOM}data: " . tools_msg($_[0]) . "\n\n" ] },
    'sse-cr'        => sub { [ $SSE, "event: message\rid: x\rdata: " . tools_msg($_[0]) . "\r\r" ] },
    'sse-cr-end'    => sub { [ $SSE, "data: " . tools_msg($_[0]) . "\r" ] },
    'sse-crcr-end'  => sub { [ $SSE, "data: " . tools_msg($_[0]) . "\r\r" ] },
    'sse-noend'     => sub { [ $SSE, "data: " . tools_msg($_[0]) ] },
    'sse-mixed'     => sub {
        my $m = tools_msg($_[0]);
        my ($a, $b, $c) = split /(?<=,)(?="(?:id|result)")/, $m;
        [ $SSE, ": c\r\nevent: message\nid: 7\rdata: $a\r\ndata: $b\rdata:$c\n\r\n" ] },
    'sse-split-crlf' => sub { [ $SSE, "data: " . tools_msg($_[0]) . "\r" . "\n\r\n", 'split' ] },
    'sse-nocolon'   => sub {
        my $m = tools_msg($_[0]);
        my ($a, $b) = split /(?<=,)(?="result")/, $m;
        [ $SSE, "data\ndata: $a\ndata\ndata: $b\n\n" ] },
    'sse-case'      => sub { [ $SSE, "DATA: " . tools_msg($_[0]) . "\n\ndata : " . tools_msg($_[0])
                                      . "\n\nData: " . tools_msg($_[0]) . "\n\n" ] },
    'sse-comment'   => sub { [ $SSE, ": data: " . tools_msg($_[0]) . "\n:\rdata: " . tools_msg($_[0]) . "\n\n" ] },
    'sse-fieldcolon' => sub { [ $SSE, "event: data: x\nid: data:\ndata: " . tools_msg($_[0]) . "\n\n" ] },
    'sse-batch'     => sub { [ $SSE, "data: [" . tools_msg($_[0]) . ',' . tools_msg('"b"', 'secret') . "]\n\n" ] },
    'sse-two'       => sub { [ $SSE, "data: " . tools_msg($_[0]) . "\ndata: " . tools_msg($_[0]) . "\n\n" ] },
    'sse-idcr'      => sub { [ $SSE, "id: a\rdata: " . tools_msg($_[0]) . "\r\nretry: 5\rdata: \r\n\r\n" ] },
    'sse-nul'       => sub { [ $SSE, "data: " . tools_msg($_[0]) . "\0\n\n" ] },
    'sse-nul-line'  => sub { [ $SSE, "\0data: x\n\ndata: " . tools_msg($_[0]) . "\n\n" ] },
    'sse-long'      => sub { [ $SSE, "data: " . tools_msg($_[0], 'ok1', 'x' x 200_000, 'secret') . "\n\n" ] },
    'sse-as-json'   => sub { [ $APP, "data: " . tools_msg($_[0]) . "\n\n" ] },
    'json-as-sse'   => sub { [ $SSE, tools_msg($_[0]) ] },
    'json-ws-sse'   => sub { [ $SSE, "\n\n" . tools_msg($_[0]) ] },
    'sse-typed'     => sub { [ 'Text/Event-Stream; charset=utf-8', "data: " . tools_msg($_[0]) . "\n\n" ] },
    'json-close'    => sub { [ $APP, tools_msg($_[0]), 'close' ] },
    'sse-close'     => sub { [ $SSE, "data: " . tools_msg($_[0]) . "\n\n", 'close' ] },
    'json-length'   => sub { [ $APP, tools_msg($_[0]), 'length' ] },
    'json-nul-name' => sub { [ $APP, tools_msg($_[0], 'ok1', 'ok1\\u0000secret') ] },
    'json-gzip'     => sub { [ $APP, Compress::Zlib::memGzip(tools_msg($_[0])), 'length',
                               [ 'Content-Encoding: gzip' ] ] },
    'sse-deflate'   => sub { [ $SSE, Compress::Zlib::compress("data: " . tools_msg($_[0]) . "\n\n"),
                               'length', [ 'Content-Encoding: deflate' ] ] },
);

sub respond {
    my ($c, $type, $body, $framing, %o) = @_;
    $framing //= 'chunked';
    my $h = "HTTP/1.1 200 OK\r\nContent-Type: $type\r\n"
          . join('', map { "$_\r\n" } @{ $o{headers} // [] });
    if ($framing eq 'length') {
        print $c $h . 'Content-Length: ' . length($body) . "\r\n\r\n" . $body;
    } elsif ($framing eq 'close') {
        print $c $h . "Connection: close\r\n\r\n" . $body;
    } else {
        # split: the first chunk ends between the CR and the LF of a CRLF
        my $cut = index($body, "\r") + 1;
        my @parts = $framing eq 'split' ? (substr($body, 0, $cut), substr($body, $cut))
                  : unpack('(a7000)*', $body);
        print $c $h . "Transfer-Encoding: chunked\r\n\r\n";
        for my $part (@parts) {
            printf $c "%x\r\n%s\r\n", length $part, $part;
            sleep 0.05 if $framing eq 'split';
        }
        print $c "0\r\n\r\n";
    }
}

my $fake = fake_upstream(sub {
    my ($c, $head, $body) = @_;
    my ($method, $path) = $head =~ m{^(\S+) (\S+)};
    if ($method eq 'GET') {
        # a resumed stream may carry the answer to an earlier request
        my ($lei) = $head =~ /^Last-Event-ID: (.*?)\r?$/mi;
        respond($c, $SSE, "id: r1\ndata: " . tools_msg('"tl-get"') . "\n\n", 'length');
        return;
    }
    my $m = eval { JSON::PP->new->decode($body) } // {};
    if (!exists $m->{id}) {
        print $c "HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n";
        return;
    }
    my $id = $JSON->encode([ $m->{id} ]) =~ s/^\[|\]$//gr;
    my $rpc = $m->{method} // '';
    if ($rpc eq 'initialize') {
        sleep 0.6 if $path =~ /slow/;
        respond($c, $APP, $JSON->encode({ jsonrpc => '2.0', id => $m->{id}, result => {
            protocolVersion => $V25, capabilities => { tools => {} },
            serverInfo => { name => 'hostile', version => '1' } } }), 'length');
        return;
    }
    if ($path =~ m{^/p/([\w-]+)} && $rpc eq 'tools/list' && $CASE{$1}) {
        my ($type, $reply, $framing, $headers) = @{ $CASE{$1}->($id) };
        respond($c, $type, $reply, $framing, headers => $headers);
        return;
    }
    respond($c, $APP, $JSON->encode({ jsonrpc => '2.0', id => $m->{id},
                                      result => { head => $head, body => $body } }), 'length');
});

# --- nginx: the gateway, and this module's Everything set as an upstream ----

my $keys_file = 'conf/keys';

my $t = McpTest->new(
    ports => 2,
    http  => everything_upstream_http({ up => '4m' },
        'mcp_session_zone zone=short:1m timeout=1s;',
        'mcp_session_zone zone=quota:1m per_client=$http_x_client:2;',
        'mcp_session_zone zone=one:1m per_client=$http_x_client:1;'),
    server => <<"NGX",
        mcp_session gw;
        location = /echo       { mcp_pass http://127.0.0.1:$fake->{port}/echo; }
        location = /echo-auth  { mcp_pass http://127.0.0.1:$fake->{port}/echo;
                                 mcp_pass_authorization on; }
        location /p/           { mcp_pass http://127.0.0.1:$fake->{port};
                                 mcp_tools_deny secret; }
        location = /allow-nul  { mcp_pass http://127.0.0.1:$fake->{port}/p/json-nul-name;
                                 mcp_tools_allow ok1 ok2; }
        location = /get        { mcp_pass http://127.0.0.1:$fake->{port}/p/get;
                                 mcp_tools_deny secret; }

        location = /keyed      { mcp_pass http://127.0.0.1:%%PORT2%%/mcp;
                                 mcp_auth_jwt "MCP";
                                 mcp_auth_resource http://127.0.0.1/keyed;
                                 mcp_auth_api_keys %%PREFIX%%/$keys_file; }
        location = /open       { mcp_pass http://127.0.0.1:%%PORT2%%/mcp; }
        location = /ev         { mcp_pass http://127.0.0.1:%%PORT2%%/mcp; }
        location = /short      { mcp_pass http://127.0.0.1:%%PORT2%%/mcp; mcp_session short; }
        location = /quota      { mcp_pass http://127.0.0.1:%%PORT2%%/mcp; mcp_session quota; }
        location = /slow       { mcp_pass http://127.0.0.1:$fake->{port}/slow; mcp_session one; }
NGX
);
$t->write_file($keys_file, join '', map { sha256_hex("$_-key") . " $_ mcp:tools mcp:resources mcp:prompts\n" }
                                   qw(alice bob));

# the hostile replies are refused, each said once in error.log
$t->expect_log_error(qr/the upstream's reply to a filtered tools\/list is refused|evict|"Content-Encoding: (gzip|deflate)" in a reply the tool policy filters/);
$t->start;

# ===========================================================================
# (1) the client's headers the upstream gets
# ===========================================================================

sub head_lines {
    my ($head) = @_;
    my ($line, @h) = split /\r\n/, $head // '';
    return ($line, map { [ /^([^:]*): ?(.*)$/s ] } @h);
}

sub echo_call {
    my ($path, $sid, $headers, $body) = @_;
    my $r = $t->request(method => 'POST', path => $path, headers => $headers, body => $body);
    McpTest::decode_mcp_response($r);
    my ($msg) = @{ $r->{messages} // [] };
    return ($r, ($msg // {})->{result} // {});
}

my $PAD = 40;    # headers before and between: the list has parts of 20

for my $loc ('/echo', '/echo-auth') {
    my ($sid) = try_initialize($t, path => $loc, protocol_version => $V25);
    ok($sid, "$loc: initialize");
    my $body = '{"jsonrpc":"2.0","id":"h1","method":"tools/call","params":{"name":"t","arguments":{"a":"x"}}}';
    my @h = (
        Host                   => 'evil.example',
        'X-Mcp-Header1'        => 'same-length-as-authorization',
        'Cache-Control'        => 'no-cache',
        'If-None-Match'        => '"etag"',
        'Accept-Ranges'        => 'bytes',
        'Content-Range'        => 'bytes 0-1/2',
        'X-ACCP'               => 'six',
        Cookie                 => 'c=1',
        Pragma                 => 'no-cache',
        'If-Range'             => 'x',
        'Mcp-Session-Id'       => $sid,
        'MCP-PROTOCOL-VERSION' => $V25,
        'aCCEPT'               => 'application/json, text/event-stream',
        'Content-Type'         => 'application/json',
        'Authorization'        => 'Bearer first-token',
        'Mcp-Param-A'          => "odd \x01\xff\t\"bytes\" \\",
        (map { ("X-Pad-$_" => "p$_") } 1 .. $PAD / 2),
        'mcp-method'           => 'tools/call',
        'Mcp-Name'             => 't',
        'Last-Event-ID'        => 'lei-1',
        'mcp-param-b'          => 'second',
        'Accept'               => 'text/html',
        # (a second Authorization: nginx refuses the request, 400)
        'Proxy-Authorization'  => 'Basic eA==',
        'X-Forwarded-For'      => '6.6.6.6',
        (map { ("X-Pad2-$_" => "q$_") } 1 .. $PAD / 2),
        'Mcp-Name'             => 'other',
        'MCP-METHOD'           => 'tools/list',
        'Last-Event-Id'        => 'lei-2',
        'Content-Type'         => 'text/plain',
        'Mcp-Protocol-Version' => '2025-06-18',
        'Mcp-Param-'           => 'empty-suffix',
        'MCP-PARAM-C'          => 'third',
        'Transfer-Encoding-X'  => 'no',
        'Keep-Alive'           => 'timeout=5',
        Connection             => 'close',
    );
    my ($r, $res) = echo_call($loc, $sid, \@h, $body);
    is($r->{status}, 200, "$loc: a request of " . (@h / 2) . ' headers goes through')
        or diag(explain($r->{body}));
    my ($line, @got) = head_lines($res->{head});
    is($line, 'POST /echo HTTP/1.1', "$loc: the upstream's request line is the gateway's");
    is_deeply($got[0], [ 'Host', '127.0.0.1:' . $fake->{port} ],
              "$loc: ... then the Host line, the upstream's, not the client's");
    my $auth = $loc eq '/echo-auth';
    my @want = (
        [ 'MCP-PROTOCOL-VERSION', $V25 ],
        [ 'aCCEPT', 'application/json, text/event-stream' ],
        [ 'Content-Type', 'application/json' ],
        ($auth ? [ 'Authorization', 'Bearer first-token' ] : ()),
        [ 'Mcp-Param-A', "odd \x01\xff\t\"bytes\" \\" ],
        [ 'mcp-method', 'tools/call' ],
        [ 'Mcp-Name', 't' ],
        [ 'Last-Event-ID', 'lei-1' ],
        [ 'mcp-param-b', 'second' ],
        [ 'MCP-PARAM-C', 'third' ],
        [ 'Content-Length', length $body ],
    );
    is_deeply([ @got[1 .. $#got] ], \@want,
              "$loc: the upstream gets the first of each relayed name, every Mcp-Param-*, "
              . ($auth ? 'the first Authorization' : 'no Authorization') . ', in the client\'s order, and nothing else');
    is(length($res->{body} // ''), length $body, "$loc: ... and the body its Content-Length says");
    is($res->{body}, $body, "$loc: ... byte for byte");
    unlike($res->{head} // '', qr/\Q$sid\E|evil\.example|6\.6\.6\.6|Basic|X-Pad/,
           "$loc: none of the client's own session id, Host, other headers reach the upstream");
}

# a chunked request body: the upstream gets it whole, with its length
{
    my ($sid) = try_initialize($t, path => '/echo', protocol_version => $V25);
    my $body = '{"jsonrpc":"2.0","id":"ch","method":"ping"}';
    my $chunks = join('', map { sprintf("%x\r\n%s\r\n", length $_, $_) } unpack('(a7)*', $body)) . "0\r\n\r\n";
    my $r = $t->request(raw => "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                             . "Accept: application/json, text/event-stream\r\nMcp-Session-Id: $sid\r\n"
                             . "MCP-Protocol-Version: $V25\r\nTransfer-Encoding: chunked\r\n"
                             . "Connection: close\r\n\r\n$chunks");
    McpTest::decode_mcp_response($r);
    my $res = (($r->{messages} // [])->[0] // {})->{result} // {};
    is($res->{body}, $body, 'a chunked request body reaches the upstream whole');
    my ($cl) = ($res->{head} // '') =~ /^Content-Length: (\d+)\r?$/m;
    is($cl, length $body, '... with its Content-Length');
    unlike($res->{head} // '', qr/Transfer-Encoding/i, '... and no Transfer-Encoding');
}

# a header block of many Mcp-Param-* headers: every one, each once
{
    my ($sid) = try_initialize($t, path => '/echo', protocol_version => $V25);
    my @h = ('Content-Type' => 'application/json', Accept => 'application/json, text/event-stream',
             'Mcp-Session-Id' => $sid, 'Mcp-Protocol-Version' => $V25,
             map { ("Mcp-Param-P$_" => "v$_") } 1 .. 90);
    my ($r, $res) = echo_call('/echo', $sid, \@h,
                              '{"jsonrpc":"2.0","id":"h2","method":"ping"}');
    my (undef, @got) = head_lines($res->{head});
    is_deeply([ map { "$_->[0]=$_->[1]" } grep { $_->[0] =~ /^Mcp-Param-/ } @got ],
              [ map { "Mcp-Param-P$_=v$_" } 1 .. 90 ],
              '90 Mcp-Param-* headers (five parts of the list): each relayed once, in order');
    is(scalar(grep { $_->[0] =~ /^(Accept|Content-Type|Mcp-Protocol-Version)$/ } @got), 3,
       '... with the others once');
}

# ===========================================================================
# (2) the policy filter against the client's reading
# ===========================================================================

my $node_ok = node_available('eventsource-parser', '@modelcontextprotocol/sdk');


# the SDK reads the hostile replies as the attacks say, straight from the upstream
SKIP: {
    skip "node clients: $node_ok", 2 if $node_ok;
    my $v = client_view($t, $APP, $CASE{'json-bom'}->('1')->[1]);
    is_deeply($v->{names}, [ qw(ok1 secret ok2) ], 'the SDK reads JSON after a BOM (Response.json() drops it)');
    # (eventsource-parser holds a CR last in the stream: one more line)
    $v = client_view($t, $SSE, $CASE{'sse-cr'}->('1')->[1] . ":\r");
    is_deeply($v->{names}, [ qw(ok1 secret ok2) ], 'the SDK ends SSE lines at a CR alone');
}

for my $case (sort keys %CASE) {
    next if $case eq 'json-nul-name' || $case =~ /gzip|deflate/;
    my ($sid) = try_initialize($t, path => "/p/$case", protocol_version => $V25);
    ok($sid, "$case: initialize");
    my $r = $t->mcp_post($sid, { jsonrpc => '2.0', id => 1, method => 'tools/list' },
                         path => "/p/$case", timeout => 10, quiet => 1);
    my $raw = $r->{body} // '';
    # refusing the reply is safe only as a JSON-RPC error for the call;
    # a 200 is read by the SDK below, which must have run and read it
    if ($r->{status} == 502) {
        is_rpc_error_body($r, 502, undef, 1, "$case: HTTP 502, a JSON-RPC error for the call");
    }
    else {
        is($r->{status}, 200, "$case: HTTP 200") or diag(McpTest::explain_response($r));
    }
    SKIP: {
        skip "node clients: $node_ok", 1 if $node_ok;
        my $v = client_view($t, $r->{headers}{'content-type'} // '', $raw);
        ok(!grep({ ($_ // '') =~ /secret/ } @{ $v->{names} // [] }),
           "$case: the SDK's client lists no denied tool")
            or diag(explain({ view => $v, body => substr($raw, 0, 300) }));
    }
}

# the allowed tools still reach the client where the reply is readable
for my $case (qw(sse-bom sse-2bom sse-cr sse-mixed sse-split-crlf sse-nocolon sse-comment
                 sse-idcr sse-batch json-length json-bom json-close sse-close)) {
    SKIP: {
        skip "node clients: $node_ok", 1 if $node_ok;
        my ($sid) = try_initialize($t, path => "/p/$case", protocol_version => $V25);
        my $r = $t->mcp_post($sid, { jsonrpc => '2.0', id => 2, method => 'tools/list' },
                             path => "/p/$case", timeout => 10, quiet => 1);
        my $v = client_view($t, $r->{headers}{'content-type'} // '', $r->{body} // '');
        my @names = grep { ($_ // '') ne 'secret' } @{ $v->{names} // [] };
        is_deeply([ @names[0, 1] ], [ 'ok1', 'ok2' ],
                  "$case: ... and it lists the allowed ones")
            or diag(explain({ view => $v, body => substr($r->{body} // '', 0, 300) }));
    }
}

# a compressed reply: the filter read the compressed bytes as an SSE
# stream of no event and passed them on; fetch() undoes the coding
for my $case (qw(json-gzip sse-deflate)) {
    SKIP: {
        skip "node clients: $node_ok", 3 if $node_ok;
        my ($sid) = try_initialize($t, path => "/p/$case", protocol_version => $V25);
        my ($rc, $out) = run_node_script('sse_client_view.mjs',
            [ 'http://127.0.0.1:' . $t->port . "/p/$case", $sid, $V25 ], timeout => 30);
        my ($line) = grep { /^\{/ } split /\n/, $out // '';
        my $v = $rc == 0 ? eval { JSON::PP->new->decode($line // '') } : undef;
        $v = { error => $out } unless ref $v eq 'HASH' && ref $v->{names} eq 'ARRAY';
        ok(!$v->{error} && !grep({ ($_ // '') =~ /secret/ } @{ $v->{names} }),
           "$case: the SDK's client (fetch) ran and lists no denied tool")
            or diag(explain($v));
        ok(!@{ $v->{names} // [] } || "@{ $v->{names} }" eq 'ok1 ok2', "$case: ... nor the reply it cannot read")
            or diag(explain($v));
        my $r = $t->mcp_post($sid, { jsonrpc => '2.0', id => 5, method => 'tools/list' },
                             path => "/p/$case", quiet => 1);
        is_error(($r->{messages} // [])->[0], -32000, 5, "$case: ... a JSON-RPC error instead");
    }
}

# a tool name with "\u0000": cJSON's string ends there ("ok1", allowed)
{
    my ($sid) = try_initialize($t, path => '/allow-nul', protocol_version => $V25);
    my $r = $t->mcp_post($sid, { jsonrpc => '2.0', id => 3, method => 'tools/list' },
                         path => '/allow-nul', quiet => 1);
    unlike($r->{body} // '', qr/secret/, 'mcp_tools_allow ok1: "ok1\u0000secret" is not listed');
    is_error(($r->{messages} // [])->[0], -32000, 3, '... the reply is refused (not strict JSON)');
}

# a tools/list answer on a resumed GET stream is the client's answer too:
# filtered event by event (t/proxy_stream_policy.t has the rest)
{
    my ($sid) = try_initialize($t, path => '/get', protocol_version => $V25);
    my $s = $t->mcp_get_stream($sid, path => '/get', last_event_id => 'x', timeout => 5);
    my $body = eval { $s->read_body } // '';
    unlike($body, qr/secret/, 'GET stream: the denied tool in an answer on it is taken out');
    ok(!$s->{timed_out} && !$s->{error}, '... the reply ends (its Content-Length is gone: chunked)');
    like($body, qr/^id: r1\n/, '... the event keeps its id');
    is_deeply([ map { $_->{name} } @{ (($s->{events}[0] // {})->{json} // {})->{result}{tools} // [] } ],
              [qw(ok1 ok2)], '... the others are listed');
}

# ===========================================================================
# (3) gateway sessions: subject, delete, eviction, expiry under 4 workers
# ===========================================================================

my %alice = (Authorization => 'Bearer alice-key');
my %bob   = (Authorization => 'Bearer bob-key');

{
    my ($sid) = McpJwt::initialize($t, 'alice-key', path => '/keyed');
    ok($sid, 'alice: a session through the gateway');
    my $mine = $t->mcp_request($sid, 'ping', undef, path => '/keyed', headers => \%alice, id => 'a1');
    ok($mine && $mine->{result}, 'alice: her session answers');
    for my $w (1 .. 8) {    # every worker, whichever takes the connection
        my ($m, $r) = $t->mcp_request($sid, 'tools/list', undef, path => '/keyed', headers => \%bob,
                                      id => "b$w", quiet => 1);
        is($r->{status}, 404, "bob with alice's session (try $w): 404");
        is_error($m, -32001, "b$w", "... Session not found") if $w == 1;
    }
    my ($m, $r) = $t->mcp_request($sid, 'ping', undef, path => '/keyed', id => 'n1', quiet => 1,
                                  headers => { Authorization => undef });
    is($r->{status}, 401, 'no key at all: 401 before any session');
    ($m, $r) = $t->mcp_request($sid, 'ping', undef, path => '/open', id => 'o1', quiet => 1);
    is($r->{status}, 404, "alice's session at a location without keys, same zone: 404");
    ok(!wait_upstream($t, sub { ($_[0]{rid} // '') =~ /^(b\d|n1|o1)$/ }, 0.3),
       '... none of them reached the upstream');
    my $again = $t->mcp_request($sid, 'ping', undef, path => '/keyed', headers => \%alice, id => 'a2');
    ok($again && $again->{result}, 'alice: still hers afterwards');
}

# run $n requests at once, in $n processes: the HTTP statuses
sub storm {
    my ($n, $make) = @_;
    my @pipes;
    for my $i (1 .. $n) {
        pipe(my $rd, my $wr) or die "pipe: $!";
        my $pid = fork // die "fork: $!";
        if (!$pid) {
            close $rd;
            my $r = $make->($i);
            print $wr "$r->{status}\n";
            close $wr;
            POSIX::_exit(0);
        }
        close $wr;
        push @pipes, [ $pid, $rd ];
    }
    my @st;
    for (@pipes) {
        my ($pid, $rd) = @$_;
        my $s = <$rd> // "0\n";
        chomp $s;
        push @st, $s;
        waitpid $pid, 0;
    }
    return @st;
}

# a session deleted while its calls run on 4 workers
for my $round (1 .. 3) {
    my ($sid) = try_initialize($t, path => '/ev', protocol_version => $V25);
    my $del;
    my @st = storm(24, sub {
        my ($i) = @_;
        if ($i == 12) {
            return $t->mcp_delete($sid, path => '/ev');
        }
        return $t->mcp_post($sid, { jsonrpc => '2.0', id => "c$i", method => 'tools/call',
                                    params => { name => 'test_simple_text' } },
                            path => '/ev', quiet => 1, timeout => 10);
    });
    my @bad = grep { $_ != 200 && $_ != 404 } @st;
    ok(!@bad, "delete during 23 calls (round $round): each 200 or 404 (@st)");
    my ($m, $r) = $t->mcp_request($sid, 'ping', undef, path => '/ev', quiet => 1, id => "after$round");
    is($r->{status}, 404, "... and after it, the session is not found");
}

# evicted by a quota while its calls run
{
    my %me = (headers => { 'X-Client' => 'q1' });
    my ($s1) = try_initialize($t, path => '/quota', protocol_version => $V25, %me);
    my ($s2) = try_initialize($t, path => '/quota', protocol_version => $V25, %me);
    ok($s1 && $s2, 'quota 2: two sessions');
    my @st = storm(20, sub {
        my ($i) = @_;
        if ($i % 5 == 0) {
            # (another's initialize may take this one's session before its
            # notifications/initialized: the initialize alone)
            return $t->mcp_post(undef, { jsonrpc => '2.0', id => "i$i", method => 'initialize',
                                         params => { protocolVersion => $V25, capabilities => {},
                                                     clientInfo => { name => 'q', version => '1' } } },
                                path => '/quota', quiet => 1, timeout => 10, %me);
        }
        return $t->mcp_post($s1, { jsonrpc => '2.0', id => "q$i", method => 'tools/list' },
                            path => '/quota', quiet => 1, timeout => 10, %me);
    });
    ok(!grep({ $_ != 200 && $_ != 404 } @st), "eviction during calls: each 200 or 404 (@st)");
    # two more: the quota's two are these, s1 is gone
    try_initialize($t, path => '/quota', protocol_version => $V25, %me) for 1 .. 2;
    my ($m, $r) = $t->mcp_request($s1, 'ping', undef, path => '/quota', quiet => 1, %me);
    is($r->{status}, 404, '... an evicted session is not found afterwards');
}

# evicted while its initialize is at the upstream: the client's quota is
# one, and its second initialize takes the first one's session before
# the replica answered the first (was a 500, "Internal error")
{
    my %me = (headers => { 'X-Client' => 'slow' });
    my $init = sub {
        $t->mcp_post(undef, { jsonrpc => '2.0', id => "s$_[0]", method => 'initialize',
                              params => { protocolVersion => $V25, capabilities => {},
                                          clientInfo => { name => 's', version => '1' } } },
                     path => '/slow', quiet => 1, timeout => 10, %me);
    };
    my @st = storm(2, sub { sleep 0.2 * ($_[0] - 1); $init->($_[0]) });
    is("@st", '200 200', 'a session evicted while its replica initializes it: 200, not 500');
}

# expired
{
    my ($sid) = try_initialize($t, path => '/short', protocol_version => $V25);
    my $m = $t->mcp_request($sid, 'ping', undef, path => '/short');
    ok($m && $m->{result}, 'timeout=1s: the session answers at once');
    sleep 2.5;
    my ($e, $r) = $t->mcp_request($sid, 'ping', undef, path => '/short', quiet => 1, id => 'late');
    is($r->{status}, 404, '... and is not found once expired');
    is_error($e, -32001, 'late', '... a JSON-RPC error');
}

ok($t->is_running, 'nginx is running');
is(scalar(() = $t->error_log =~ /signal \d+|\[alert\]|\[emerg\]|\[crit\]/g), 0,
   'no worker died, no alert');
$t->stop;
done_testing;
