# The headers of a 2026-07-28 stateless request, on a built-in endpoint
# and through mcp_pass:
#
# - custom parameter headers (SEP-2243): a tools/call of a tool whose
#   inputSchema marks arguments with x-mcp-header must carry
#   Mcp-Param-<Name> saying what the body says; Base64 values
#   (=?base64?...?=) are decoded strictly and look-alikes are literal; a
#   missing, different, repeated or badly encoded header is -32020 with
#   HTTP 400 and application/json, carrying the request's id; the gateway
#   relays the headers and the upstream decides;
# - $mcp_method and $mcp_name from Mcp-Method and Mcp-Name before the body
#   is read (server-level set and rewrite, a location without mcp) and
#   from the body once it is parsed, in an access log of their own;
# - Mcp-Name in Base64 (=?base64?...?=, how a client sends a name or URI
#   a header cannot carry) compared decoded, strictly, and decoded in
#   $mcp_name before the body;
#   limit_req keyed on $mcp_method; docs/gateway.md's proxy_cache example for
#   lists in front of mcp_pass.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Time::HiRes ();
use Encode ();
use MIME::Base64 ();
use McpTest;
use McpAssert;
use McpGateway;

my $t = McpTest->new(
    ports => 2,
    http  => <<'NGX',
    mcp_session_zone zone=gw:1m;
    mcp_session_zone zone=up:1m;

    log_format hdrs escape=json '{"uri":"$uri","status":"$status","rid":"$mcp_request_id",'
        '"m":"$mcp_method","n":"$mcp_name","em":"$early_m","en":"$early_n",'
        '"tool":"$mcp_tool","route":"$route"}';
    log_format up escape=json '{"rid":"$mcp_request_id","m":"$mcp_method","n":"$mcp_name",'
        '"region":"$http_mcp_param_region","status":"$status"}';

    limit_req_zone $mcp_method zone=per_method:1m rate=1r/m;
    limit_req_zone $mcp_method zone=per_method_gw:1m rate=1r/m;

    proxy_cache_path %%PREFIX%%/cache keys_zone=mcp_lists:1m;

    map $mcp_method $mcp_no_cache {
        tools/list                0;
        prompts/list              0;
        resources/list            0;
        resources/templates/list  0;
        default                   1;
    }

    server {
        listen 127.0.0.1:%%PORT2%%;
        access_log %%PREFIX%%/logs/up.log up;
        location = /mcp { mcp on; mcp_session up; mcp_builtin everything; }
    }
NGX
    server => <<'NGX',
        mcp_session gw;
        access_log %%PREFIX%%/logs/hdrs.log hdrs;

        # the server's rewrite phase: no location, no body yet
        set $early_m $mcp_method;
        set $early_n $mcp_name;
        set $route "-";
        if ($mcp_method = "prompts/list") {
            set $route prompts;
            rewrite ^/mcp$ /mcp-prompts;
        }

        location = /mcp { mcp on; mcp_builtin everything; }
        location = /mcp-prompts { mcp_pass http://127.0.0.1:%%PORT2%%/mcp;
                                  add_header X-Route prompts always; }
        location = /gw { mcp_pass http://127.0.0.1:%%PORT2%%/mcp; }
        location = /plain { return 200 "$mcp_method|$mcp_name\n"; }
        location = /echo { mcp on; mcp_builtin everything;
                           add_header X-Mcp-Name "[$mcp_name]" always;
                           add_header X-Mcp-Client "[$mcp_client_name]" always; }
        location = /limited { mcp on; mcp_builtin everything;
                              limit_req zone=per_method; limit_req_status 429; }
        location = /gw-limited { mcp_pass http://127.0.0.1:%%PORT2%%/mcp;
                                 limit_req zone=per_method_gw; limit_req_status 429; }

        location = /cached {
            proxy_pass             http://127.0.0.1:%%PORT%%/gw;
            proxy_cache            mcp_lists;
            proxy_cache_methods    POST;
            proxy_cache_key        "$mcp_method|$mcp_name|$http_authorization|$request_body";
            proxy_cache_valid      200 1m;
            proxy_no_cache         $mcp_no_cache;
            proxy_cache_bypass     $mcp_no_cache;
            client_body_buffer_size  64k;
            client_max_body_size     64k;
            add_header X-Cache $upstream_cache_status always;
        }
NGX
)->start;

$t->expect_log_error(qr/limiting requests, excess: [\d.]+ by zone "per_method(?:_gw)?"/);

my $META = { 'io.modelcontextprotocol/protocolVersion'    => '2026-07-28',
             'io.modelcontextprotocol/clientCapabilities' => {} };
my $TOOL = 'test_custom_header_tool';

# One stateless request: MCP-Protocol-Version, Mcp-Method, Mcp-Name (for
# the methods that have one) and _meta, as a 2026-07-28 client sends them;
# headers => {...} adds or replaces headers (undef leaves one out).
sub post26 {
    my (%o) = @_;
    my $params = { %{ $o{params} // {} }, _meta => $META };
    my $name = $o{method} =~ m{^(?:tools/call|prompts/get)$} ? $params->{name}
             : $o{method} eq 'resources/read' ? $params->{uri} : undef;
    my %h = ('Mcp-Method' => $o{method}, defined $name ? ('Mcp-Name' => $name) : ());
    for my $k (keys %{ $o{headers} // {} }) {
        delete $h{$_} for grep { lc $_ eq lc $k } keys %h;
        $h{$k} = $o{headers}{$k};
    }
    my $r = $t->mcp_post(undef, { jsonrpc => '2.0', id => $o{id}, method => $o{method},
                                  params => $params },
                         protocol_version => '2026-07-28', headers => \%h,
                         path => $o{path} // '/mcp');
    my ($msg) = grep { ref $_ eq 'HASH' && defined $_->{id} && "$_->{id}" eq "$o{id}" }
                @{ $r->{messages} // [] };
    return wantarray ? ($msg, $r) : $msg;
}

sub call_tool {
    my ($path, $id, $args, %headers) = @_;
    return post26(path => $path, id => $id, method => 'tools/call',
                  params => { name => $TOOL, arguments => $args }, headers => \%headers);
}

# a header value in the spec's Base64 wrapper
sub b64 { '=?base64?' . MIME::Base64::encode_base64($_[0], '') . '?=' }

# the tool ran and got these arguments
sub accepted {
    my ($msg, $r, $id, $args, $name) = @_;
    my $text = ref $msg eq 'HASH' && ref $msg->{result} eq 'HASH'
               ? ($msg->{result}{content}[0] // {})->{text} // '' : '';
    my ($json) = $text =~ /^Called with: (.*)$/s;
    my $got = defined $json ? eval { JSON::PP->new->decode($json) } : undef;   # characters
    my $ok = is($r->{status}, 200, "$name: HTTP 200")
             && is_deeply($got, $args, "$name: the tool ran with the body's arguments")
             && is("$msg->{id}", $id, "$name: the request's id");
    diag(McpTest::explain_response($r)) unless $ok;
}

# -32020 with HTTP 400, application/json and the id; the message says why
sub refused {
    my ($msg, $r, $id, $why, $name) = @_;
    is_rpc_error_body($r, 400, -32020, $id, "$name: 400, -32020 with the id");
    like(($msg // {})->{error}{message} // '', $why, "$name: the message says why");
}

my $f = JSON::PP::false;
my $tr = JSON::PP::true;
my %STD = ('Mcp-Param-Priority' => '0', 'Mcp-Param-Verbose' => 'false');

# --- custom parameter headers, built in and through mcp_pass -------------------

for my $path ('/mcp', '/gw') {
    my $n = 0;
    my $id = sub { "$path-" . ++$n };
    my ($i, $msg, $r);

    # the conformance suite's cases (http-custom-header-server-validation)
    $i = $id->();
    ($msg, $r) = call_tool($path, $i, { region => 'Hello', priority => 0, verbose => $f },
                           'Mcp-Param-Region' => '=?base64?SGVsbG8=?=', %STD);
    accepted($msg, $r, $i, { region => 'Hello', priority => 0, verbose => $f },
             "$path: a valid Base64 value");
    $i = $id->();
    ($msg, $r) = call_tool($path, $i, { region => 'Hello', priority => 0, verbose => $f },
                           'Mcp-Param-Region' => '=?base64?SGVsbG8?=', %STD);
    refused($msg, $r, $i, qr/^Header mismatch: Mcp-Param-Region is not valid Base64$/,
            "$path: Base64 without its padding");
    $i = $id->();
    ($msg, $r) = call_tool($path, $i, { region => 'Hello', priority => 0, verbose => $f },
                           'Mcp-Param-Region' => '=?base64?SGVs!!!bG8=?=', %STD);
    refused($msg, $r, $i, qr/is not valid Base64/, "$path: Base64 with characters not of its alphabet");
    $i = $id->();
    ($msg, $r) = call_tool($path, $i, { region => 'SGVsbG8=', priority => 0, verbose => $f },
                           'Mcp-Param-Region' => 'SGVsbG8=', %STD);
    accepted($msg, $r, $i, { region => 'SGVsbG8=', priority => 0, verbose => $f },
             "$path: no =?base64? prefix: literal");
    $i = $id->();
    ($msg, $r) = call_tool($path, $i, { region => '=?base64?SGVsbG8=', priority => 0, verbose => $f },
                           'Mcp-Param-Region' => '=?base64?SGVsbG8=', %STD);
    accepted($msg, $r, $i, { region => '=?base64?SGVsbG8=', priority => 0, verbose => $f },
             "$path: no ?= suffix: literal");
    $i = $id->();
    ($msg, $r) = call_tool($path, $i, { region => 'test-value', priority => 0, verbose => $f }, %STD);
    refused($msg, $r, $i, qr/^Header mismatch: Mcp-Param-Region is missing$/,
            "$path: the argument without its header");

    # what else clients send
    $i = $id->();
    ($msg, $r) = call_tool($path, $i, { region => 'us-west1', priority => 42, verbose => $tr, query => 'q' },
                           'mcp-param-region' => 'us-west1', 'MCP-PARAM-PRIORITY' => '42',
                           'Mcp-Param-Verbose' => 'true');
    accepted($msg, $r, $i, { region => 'us-west1', priority => 42, verbose => $tr, query => 'q' },
             "$path: plain values, header names in any case");
    $i = $id->();
    ($msg, $r) = call_tool($path, $i, { region => "Hello, \x{4e16}\x{754c}", priority => 0, verbose => $f },
                           'Mcp-Param-Region' => '=?base64?SGVsbG8sIOS4lueVjA==?=', %STD);
    accepted($msg, $r, $i, { region => "Hello, \x{4e16}\x{754c}", priority => 0, verbose => $f },
             "$path: a non-ASCII value in Base64");
    $i = $id->();
    ($msg, $r) = call_tool($path, $i, { region => ' padded ', priority => 0, verbose => $f },
                           'Mcp-Param-Region' => '=?base64?IHBhZGRlZCA=?=', %STD);
    accepted($msg, $r, $i, { region => ' padded ', priority => 0, verbose => $f },
             "$path: white space around a value, in Base64");
    $i = $id->();
    ($msg, $r) = call_tool($path, $i, { region => 'us-west1', priority => 42, verbose => $f },
                           'Mcp-Param-Region' => 'us-west1', 'Mcp-Param-Priority' => '42.0',
                           'Mcp-Param-Verbose' => 'false');
    accepted($msg, $r, $i, { region => 'us-west1', priority => 42, verbose => $f },
             "$path: 42.0 in the header is the body's 42");
    $i = $id->();
    ($msg, $r) = call_tool($path, $i, { region => 'us-west1', priority => 0, verbose => $f },
                           'Mcp-Param-Region' => 'us-east1', %STD);
    refused($msg, $r, $i, qr/^Header mismatch: Mcp-Param-Region differs from the argument$/,
            "$path: another value");
    $i = $id->();
    ($msg, $r) = call_tool($path, $i, { region => 'us-west1', priority => 42, verbose => $f },
                           'Mcp-Param-Region' => 'us-west1', 'Mcp-Param-Priority' => '43',
                           'Mcp-Param-Verbose' => 'false');
    refused($msg, $r, $i, qr/Mcp-Param-Priority differs/, "$path: another number");
    $i = $id->();
    ($msg, $r) = call_tool($path, $i, { region => 'us-west1', priority => 0, verbose => $tr },
                           'Mcp-Param-Region' => 'us-west1', 'Mcp-Param-Priority' => '0',
                           'Mcp-Param-Verbose' => 'True');
    refused($msg, $r, $i, qr/Mcp-Param-Verbose differs/, "$path: booleans are true and false");
    $i = $id->();
    ($msg, $r) = call_tool($path, $i, { region => 'us-west1', priority => 0, verbose => $f },
                           'Mcp-Param-Region' => [ 'us-west1', 'us-west1' ], %STD);
    refused($msg, $r, $i, qr/^Header mismatch: Mcp-Param-Region is repeated$/,
            "$path: the header twice");
    $i = $id->();
    ($msg, $r) = call_tool($path, $i, { priority => 0, verbose => $f },
                           'Mcp-Param-Region' => 'us-west1', %STD);
    refused($msg, $r, $i, qr/^Header mismatch: Mcp-Param-Region without its argument$/,
            "$path: a header for an argument the body lacks");
    $i = $id->();
    ($msg, $r) = call_tool($path, $i, { priority => 0, verbose => $f }, %STD);
    is($r->{status}, 200, "$path: an absent argument needs no header: on to the schema, 200");
    ok(ref $msg eq 'HASH' && $msg->{result} && $msg->{result}{isError},
       "$path: ... whose refusal of the missing required argument is a tool error");

    if ($path eq '/gw') {
        # the gateway knows no tools: the upstream checked the relayed headers
        my $u = wait_upstream($t, sub { ($_[0]{rid} // '') eq '/gw-1' }, 5, 'up.log');
        is(($u // {})->{region}, '=?base64?SGVsbG8=?=', '/gw: Mcp-Param-Region relayed as sent');
        $u = wait_upstream($t, sub { ($_[0]{rid} // '') eq '/gw-2' }, 5, 'up.log');
        is(($u // {})->{status}, '400', '/gw: the upstream refused the bad Base64 itself');
    }
}

# A session (2025-11-25) has no such headers: its calls are not checked.
{
    my ($sid) = $t->mcp_initialize;
    my $res = $t->mcp_call($sid, 'tools/call',
                           { name => $TOOL, arguments => { region => 'r', priority => 1, verbose => $f } });
    like(((ref $res eq 'HASH' ? $res->{content} : undef) // [ {} ])->[0]{text} // '',
         qr/^Called with: /, 'a 2025-11-25 session calls the tool without Mcp-Param-* headers');
    $t->mcp_delete($sid);
}

# --- $mcp_method and $mcp_name: the headers before the body ---------------------

sub hdrs_line {
    my ($rid, $what) = @_;
    my $l = wait_upstream($t, sub { !exists $_[0]{unparsed} && ($_[0]{rid} // '') eq $rid }, 5,
                          'hdrs.log');
    ok($l, "$what: logged") or diag(McpTest::_slurp($t->prefix . '/logs/hdrs.log'));
    return $l // {};
}

for my $path ('/mcp', '/gw') {
    post26(path => $path, id => "v1$path", method => 'tools/list');
    my $l = hdrs_line("v1$path", "$path tools/list");
    is_deeply([ @$l{qw(em en m n)} ], [ 'tools/list', '', 'tools/list', '' ],
              "$path tools/list: from Mcp-Method in the server's rewrite phase, from the body after");

    post26(path => $path, id => "v2$path", method => 'tools/call',
           params => { name => $TOOL, arguments => { region => 'r', priority => 0, verbose => $f } },
           headers => { 'Mcp-Param-Region' => 'r', %STD });
    $l = hdrs_line("v2$path", "$path tools/call");
    is_deeply([ @$l{qw(em en m n tool)} ], [ 'tools/call', $TOOL, 'tools/call', $TOOL, $TOOL ],
              "$path tools/call: \$mcp_name is the tool's name, before and after the body");

    post26(path => $path, id => "v3$path", method => 'resources/read',
           params => { uri => 'test://static-text' });
    $l = hdrs_line("v3$path", "$path resources/read");
    is_deeply([ @$l{qw(en n)} ], [ 'test://static-text', 'test://static-text' ],
              "$path resources/read: \$mcp_name is the URI");

    post26(path => $path, id => "v4$path", method => 'prompts/get',
           params => { name => 'test_simple_prompt' });
    $l = hdrs_line("v4$path", "$path prompts/get");
    is_deeply([ @$l{qw(em en n)} ], [ 'prompts/get', 'test_simple_prompt', 'test_simple_prompt' ],
              "$path prompts/get: \$mcp_name is the prompt's name");

    # the headers lie: the variables say what each side said, the request is refused
    my ($msg, $r) = post26(path => $path, id => "v5$path", method => 'tools/list',
                           headers => { 'Mcp-Method' => 'resources/list' });
    is_rpc_error_body($r, 400, -32020, "v5$path", "$path: Mcp-Method not the body's: 400, -32020");
    $l = hdrs_line("v5$path", "$path a lying Mcp-Method");
    is_deeply([ @$l{qw(em m status)} ], [ 'resources/list', 'tools/list', '400' ],
              "$path: before the body the header's method, after it the body's, and the request refused");

    ($msg, $r) = post26(path => $path, id => "v6$path", method => 'tools/list',
                        headers => { 'Mcp-Method' => [ 'tools/list', 'tools/list' ] });
    is_rpc_error_body($r, 400, -32020, "v6$path", "$path: Mcp-Method twice: 400, -32020");
    $l = hdrs_line("v6$path", "$path Mcp-Method twice");
    is($l->{em}, '', "$path: two Mcp-Method headers give no \$mcp_method before the body");

    # Mcp-Name as =?base64?...?= (how a client sends a name or URI a header
    # cannot carry): decoded before it is compared with the body, and in
    # $mcp_name before the body is read; strictly, as Mcp-Param-* values
    my $args = { region => 'r', priority => 0, verbose => $f };
    ($msg, $r) = call_tool($path, "v10$path", $args, 'Mcp-Param-Region' => 'r', %STD,
                           'Mcp-Name' => b64($TOOL));
    accepted($msg, $r, "v10$path", $args, "$path: Mcp-Name in Base64");
    $l = hdrs_line("v10$path", "$path Mcp-Name in Base64");
    is_deeply([ @$l{qw(en n)} ], [ $TOOL, $TOOL ],
              "$path: \$mcp_name is the decoded name, before the body as after it");

    # a URI a header cannot carry as it is: the check passes, and the set
    # looks the body's URI up (no resource of its templates has it)
    my $uri = "test://template/caf\x{e9} 1/data";
    ($msg, $r) = post26(path => $path, id => "v11$path", method => 'resources/read',
                        params => { uri => $uri },
                        headers => { 'Mcp-Name' => b64(Encode::encode('UTF-8', $uri)) });
    my $e = ($msg // {})->{error} // {};
    ok($r->{status} == 200 && ($e->{code} // 0) == -32602 && (($e->{data} // {})->{uri} // '') eq $uri,
       "$path: a URI with non-ASCII and a space, its Mcp-Name in Base64: past the check, "
       . "the body's URI looked up") or diag(McpTest::explain_response($r));

    my @bad = ([ '=?base64?dGVzdA?=',   qr/not valid Base64/, 'Base64 without its padding' ],
               [ '=?base64?dGVzdA=!?=', qr/not valid Base64/, 'a byte outside the alphabet' ],
               [ '=?base64?dGVzdF9=?=', qr/not valid Base64/, 'pad bits not zero' ],
               [ '=?BASE64?' . substr(b64($TOOL), 9), qr/name or URI/,
                 'the wrapper in upper case (literal)' ],
               [ b64('test_simple_text'), qr/name or URI/, 'another tool\'s name in Base64' ]);
    for my $k (0 .. $#bad) {
        my ($v, $why, $what) = @{ $bad[$k] };
        ($msg, $r) = call_tool($path, "v13-$k$path", $args, 'Mcp-Param-Region' => 'r', %STD,
                               'Mcp-Name' => $v);
        refused($msg, $r, "v13-$k$path", $why, "$path: Mcp-Name $what");
    }
    # a literal value with a control character had to come in Base64, even
    # when it is the body's (HTAB is field text); non-ASCII stays accepted
    ($msg, $r) = post26(path => $path, id => "v14$path", method => 'tools/call',
                        params => { name => "test\x01tool", arguments => {} },
                        headers => { 'Mcp-Name' => "test\x01tool" });
    refused($msg, $r, "v14$path", qr/Mcp-Name has a control character/,
            "$path: a literal Mcp-Name with a control character, the body's too");
    my $ctl = { region => "r\x7f", priority => 0, verbose => $f };
    ($msg, $r) = call_tool($path, "v15$path", $ctl, 'Mcp-Param-Region' => "r\x7f", %STD);
    refused($msg, $r, "v15$path", qr/Mcp-Param-Region has a control character/,
            "$path: a literal Mcp-Param-Region with DEL, the argument's too");

    $l = hdrs_line("v13-0$path", "$path a Mcp-Name that does not decode");
    is_deeply([ @$l{qw(en n)} ], [ '', $TOOL ],
              "$path: ... gives no \$mcp_name before the body, the body's name after it");
}

# a session's requests have no such headers that count
{
    my ($sid) = $t->mcp_initialize;
    $t->mcp_request($sid, 'tools/list', undef, id => 'v7', headers => { 'Mcp-Method' => 'prompts/list' });
    my $l = hdrs_line('v7', 'a session\'s tools/list');
    is_deeply([ @$l{qw(em m route uri)} ], [ '', 'tools/list', '-', '/mcp' ],
              'a session: the Mcp-Method header is not read, nothing routes on it');
    my (undef, $r) = $t->mcp_request($sid, 'prompts/list', undef, id => 'v8');
    ok(!defined $r->{headers}{'x-route'}, 'a session\'s prompts/list is not routed by the server\'s if');
    $t->mcp_delete($sid);
}

# routing in the server's rewrite phase, on the header alone
{
    my ($msg, $r) = post26(id => 'v9', method => 'prompts/list');
    is($r->{headers}{'x-route'}, 'prompts', 'a 2026 prompts/list is routed to /mcp-prompts before its body is read');
    ok(ref $msg eq 'HASH' && ref $msg->{result}{prompts} eq 'ARRAY', '... whose mcp_pass lists the prompts');
    my $l = hdrs_line('v9', 'the routed prompts/list');
    is_deeply([ @$l{qw(uri route m)} ], [ '/mcp-prompts', 'prompts', 'prompts/list' ],
              '... logged in /mcp-prompts, from the server-level if');
}

# a location that never reads the body: the headers of a stateless POST
{
    my $r = $t->request(method => 'POST', path => '/plain', body => '{}',
                        headers => { 'Content-Type' => 'application/json',
                                     'MCP-Protocol-Version' => '2026-07-28',
                                     'Mcp-Method' => 'tools/call', 'Mcp-Name' => 'x_tool' });
    is($r->{body}, "tools/call|x_tool\n", 'no mcp in the location: $mcp_method and $mcp_name are the headers');
    $r = $t->request(method => 'POST', path => '/plain', body => '{}',
                     headers => { 'Content-Type' => 'application/json',
                                  'MCP-Protocol-Version' => '2026-07-28',
                                  'Mcp-Method' => 'tools/call', 'Mcp-Name' => b64("caf\xc3\xa9 tool") });
    is($r->{body}, "tools/call|caf\xc3\xa9 tool\n", '... a Mcp-Name in Base64 decoded');
    $r = $t->request(method => 'POST', path => '/plain', body => '{}',
                     headers => { 'Content-Type' => 'application/json',
                                  'MCP-Protocol-Version' => '2026-07-28',
                                  'Mcp-Method' => 'tools/call',
                                  'Mcp-Name' => b64("x\r\nX-Injected: 1") });
    is($r->{body}, "tools/call|\n", '... but not one that decodes to CR LF: no value (nothing compares it here)');
    $r = $t->request(method => 'POST', path => '/plain', body => '{}',
                     headers => { 'Content-Type' => 'application/json',
                                  'MCP-Protocol-Version' => '2025-11-25',
                                  'Mcp-Method' => 'tools/call', 'Mcp-Name' => 'x_tool' });
    is($r->{body}, "|\n", '... but not for a 2025 request');
    $r = $t->request(method => 'POST', path => '/plain', body => '{}',
                     headers => { 'Content-Type' => 'application/json',
                                  'MCP-Protocol-Version' => '2026-07-28',
                                  'Mcp-Session-Id' => 'abc',
                                  'Mcp-Method' => 'tools/call', 'Mcp-Name' => 'x_tool' });
    is($r->{body}, "|\n", '... nor for one with a session');
    $r = $t->request(method => 'GET', path => '/plain',
                     headers => { 'MCP-Protocol-Version' => '2026-07-28', 'Mcp-Method' => 'tools/call' });
    is($r->{body}, "|\n", '... nor for a GET');
}

# a name with CR LF, in the body or decoded from Base64: the variables give
# no value rather than a line break that add_header writes as it is
{
    my $evil = "x\r\nX-Injected: 1";
    my ($msg, $r) = post26(path => '/echo', id => 'inj-1', method => 'tools/call',
                           params => { name => $evil, arguments => {} },
                           headers => { 'Mcp-Name' => b64($evil) });
    is(($msg // {})->{error}{code}, -32602, 'a tool named with CR LF, Mcp-Name in Base64: past the check, unknown tool');
    ok(!exists $r->{headers}{'x-injected'}, '... no header injected through $mcp_name')
        or diag(McpTest::explain_response($r));
    is($r->{headers}{'x-mcp-name'}, '[]', '... $mcp_name says nothing');

    my ($sid) = $t->mcp_initialize(client_info => { name => "c\r\nX-Injected: 2", version => '1' }, path => '/echo');
    (undef, $r) = $t->mcp_request($sid, 'tools/call', { name => $evil, arguments => {} }, id => 'inj-2',
                                  path => '/echo');
    ok(!exists $r->{headers}{'x-injected'}, 'a session\'s call of that name: no header injected')
        or diag(McpTest::explain_response($r));
    is_deeply([ @{ $r->{headers} }{qw(x-mcp-name x-mcp-client)} ], [ '[]', '[]' ],
              '... $mcp_name and $mcp_client_name say nothing');
    $t->mcp_delete($sid, path => '/echo');
}

# --- limit_req keyed on $mcp_method ----------------------------------------------

for my $path ('/limited', '/gw-limited') {
    my ($msg, $r) = post26(path => $path, id => "l1$path", method => 'tools/list');
    is($r->{status}, 200, "$path: limit_req on \$mcp_method: the first tools/list passes");
    ($msg, $r) = post26(path => $path, id => "l2$path", method => 'tools/list');
    is_rpc_error_body($r, 429, undef, "l2$path",
                      "$path: limit_req on \$mcp_method: the second gets 429, a JSON-RPC error");
    ($msg, $r) = post26(path => $path, id => "l3$path", method => 'prompts/list');
    is($r->{status}, 200, "$path: limit_req on \$mcp_method: another method has its own rate");
}

# --- proxy_cache in front of mcp_pass (docs/gateway.md's example) --------------

{
    my $up_count = sub {
        my ($rid) = @_;
        upstream_log_settled($t, 'up.log');
        return scalar grep { ($_->{rid} // '') eq $rid } upstream_log($t, 'up.log');
    };

    # nginx files a reply in the cache when its request ends, which can
    # be a moment after the client has the last byte: a repeat waits
    # that moment out before it expects a HIT
    my $settle = sub { Time::HiRes::sleep(0.3) };

    my ($msg, $r) = post26(path => '/cached', id => 'c1', method => 'tools/list');
    is($r->{headers}{'x-cache'}, 'MISS', 'cache: a 2026 tools/list: MISS');
    is(scalar @{ $msg->{result}{tools} // [] }, 36, 'cache: ... the 36 tools, through mcp_pass');
    my $body = $r->{body};
    $settle->();
    ($msg, $r) = post26(path => '/cached', id => 'c1', method => 'tools/list');
    is($r->{headers}{'x-cache'}, 'HIT', 'cache: the same request again: HIT');
    is($r->{body}, $body, 'cache: ... the same reply, its id the request\'s');
    is($up_count->('c1'), 1, 'cache: ... and the upstream saw one request');

    ($msg, $r) = post26(path => '/cached', id => 'c3', method => 'tools/list');
    is($r->{headers}{'x-cache'}, 'MISS', 'cache: another id: MISS (a reply carries its request\'s id)');
    is("$msg->{id}", 'c3', 'cache: ... and is answered with its own id');

    ($msg, $r) = post26(path => '/cached', id => 'c1', method => 'tools/list',
                        headers => { Authorization => 'Bearer alice' });
    is($r->{headers}{'x-cache'}, 'MISS', 'cache: a caller with a token: an entry of its own');
    $settle->();
    ($msg, $r) = post26(path => '/cached', id => 'c1', method => 'tools/list',
                        headers => { Authorization => 'Bearer alice' });
    is($r->{headers}{'x-cache'}, 'HIT', 'cache: ... that the same token hits');
    ($msg, $r) = post26(path => '/cached', id => 'c1', method => 'tools/list',
                        headers => { Authorization => 'Bearer bob' });
    is($r->{headers}{'x-cache'}, 'MISS', 'cache: ... and another token does not');

    for my $k (1, 2) {
        ($msg, $r) = post26(path => '/cached', id => 'c5', method => 'tools/call',
                            params => { name => 'test_simple_text' });
        is($r->{headers}{'x-cache'}, 'BYPASS', "cache: tools/call is never cached ($k)");
    }
    is($up_count->('c5'), 2, 'cache: ... both calls reached the upstream');

    for my $k (1, 2) {
        ($msg, $r) = post26(path => '/cached', id => 'c6', method => 'prompts/list',
                            headers => { 'Mcp-Method' => 'tools/list' });
        is_rpc_error_body($r, 400, -32020, 'c6', "cache: a body that is not what Mcp-Method says: 400 ($k)");
        is($r->{headers}{'x-cache'}, 'MISS', "cache: ... never cached ($k)");
    }

    my ($sid) = $t->mcp_initialize(path => '/cached');
    (undef, $r) = $t->mcp_request($sid, 'tools/list', undef, path => '/cached', id => 'c7');
    is($r->{status}, 200, 'cache: a session\'s tools/list through the cache location');
    is($r->{headers}{'x-cache'}, 'BYPASS', 'cache: ... has no Mcp-Method: not cached');
    $t->mcp_delete($sid, path => '/cached');
}

# nginx refuses a stateless POST before the module's phase runs (a body
# over client_max_body_size): its error page, and the log line, still
# have $mcp_method from the header
{
    $t->expect_log_error(qr/client intended to send too large body: 2000000 bytes/);
    my $r = $t->request(method => 'POST', path => '/mcp', quiet => 1,
                        raw => "POST /mcp HTTP/1.1\r\nHost: localhost\r\n"
                             . "Content-Type: application/json\r\n"
                             . "Accept: application/json, text/event-stream\r\n"
                             . "MCP-Protocol-Version: 2026-07-28\r\n"
                             . "Mcp-Method: tools/list\r\n"
                             . "Content-Length: 2000000\r\nConnection: close\r\n\r\n");
    is($r->{status}, 413, 'a stateless POST over client_max_body_size: 413 from nginx');
    my $l = wait_upstream($t, sub { ($_[0]{status} // '') eq '413' }, 5, 'hdrs.log');
    is($l && $l->{m}, 'tools/list', '... and $mcp_method is logged from its Mcp-Method');
}

$t->stop;
done_testing;
