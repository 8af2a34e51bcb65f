# The 2026-07-28 revision, stateless: a POST with MCP-Protocol-Version
# 2026-07-28 (or a version the module does not know) and no
# Mcp-Session-Id is a whole conversation in itself.  The checks in their
# order (-32022 unknown version, -32602 missing _meta keys, -32020 _meta
# version or Mcp-Method / Mcp-Name differing from the body, -32600
# batches), every refusal echoing the id with a correlationId; removed
# methods 404 -32601; server/discover; resultType, ttlMs and cacheScope;
# SEP-2164 not-found; progress and log messages as one-line SSE events.
# Multi-round requests: input_required results, requestState sealed with
# an HMAC and bound to method, tool and caller, opened by any worker
# (reuseport, $pid in an access log), refused when tampered, expired
# (mcp_state_timeout), minted for another tool or caller, or sealed with
# another key (mcp_state_key, two instances); undeclared capabilities
# dropped or -32021.  The same through mcp_pass; a 2025 session beside it;
# error.log quiet and free of tokens.  Then attacks: odd types, huge
# values, duplicated headers, clients that vanish mid-stream (200 times,
# the zone must not fill up).  The bugs the attack found (a use after
# free of $mcp_client_name, errors logged for client input, quota and
# header cases) are fixed; their tests stay.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Digest::SHA qw(sha256_hex);
use Time::HiRes qw(sleep time);
use McpTest timeout => 300;
use McpAssert;
use McpStream qw(pids_by_tag);
use McpGateway qw(upstream_log wait_upstream everything_upstream_http);

my $V    = '2026-07-28';
my $P    = 'io.modelcontextprotocol/';
my $MR   = 'test_input_required_result_multi_round';
my $RS   = 'test_input_required_result_request_state';
my $TS   = 'test_input_required_result_tampered_state';
my %EL   = (elicitation => {});
my $TRUE = JSON::PP::true();

my @TOKENS;    # every requestState any server handed out
my $NEXT_ID = 1;

my $t = McpTest->new(
    ports  => 2,
    listen => 'reuseport',
    http   => join("\n",
        'client_body_buffer_size 2m;',
        'client_max_body_size 4m;',
        'mcp_session_zone zone=tiny:64k;',
        q{log_format t63 '$pid $http_x_tag $request $status';},
        everything_upstream_http()),
    server => <<'NGX',
        access_log %%PREFIX%%/logs/pids.log t63;
        location = /mcp   { mcp on; mcp_builtin everything; }
        location = /short { mcp on; mcp_builtin everything; mcp_state_timeout 1s; }
        location = /auth  { mcp on; mcp_builtin everything; mcp_auth_jwt "MCP";
                            mcp_auth_resource http://127.0.0.1:%%PORT%%/auth;
                            mcp_auth_api_keys %%PREFIX%%/conf/api_keys; }
        location = /tiny  { mcp on; mcp_session tiny; mcp_builtin everything; }
        location = /gw    { mcp_pass http://127.0.0.1:%%PORT2%%/mcp; mcp_session gw; }
        location = /gwdeny { mcp_pass http://127.0.0.1:%%PORT2%%/mcp; mcp_session gw;
                             mcp_tools_deny ~^test_input_required_result_; }
NGX
);
$t->write_file('conf/api_keys', join '',
    map { sha256_hex($_->[0]) . " $_->[1] mcp:tools mcp:resources mcp:prompts\n" } [ 'sk_t63_alice', 'alice' ], [ 'sk_t63_bob', 'bob' ]);
$t->start;

# --- helpers ------------------------------------------------------------------------

# params._meta of a 2026-07-28 request
sub meta {
    my (%o) = @_;
    return { "${P}protocolVersion"    => $o{version} // $V,
             "${P}clientCapabilities" => $o{caps} // {},
             "${P}clientInfo"         => { name => 't63', version => '1.0' },
             %{ $o{extra} // {} } };
}

# One stateless POST on a fresh connection: MCP-Protocol-Version, Mcp-Method
# and (tools/call, prompts/get: params.name; resources/read: params.uri)
# Mcp-Name as a conforming client sends them.  Options: headers (override,
# case-insensitive; undef omits; an array repeats), id, body (instead of
# the message), path, port, tag (X-Tag), sid, stream, t (instance).
sub sl {
    my ($method, $params, %o) = @_;
    my $inst = $o{t} // $t;
    my %h = ('MCP-Protocol-Version' => $V, 'Mcp-Method' => $method);
    if (ref $params eq 'HASH' && $method =~ m{^(?:tools/call|prompts/get|resources/read)$}) {
        my $n = $params->{ $method eq 'resources/read' ? 'uri' : 'name' };
        $h{'Mcp-Name'} = $n if defined $n && !ref $n;
    }
    $h{'X-Tag'} = $o{tag} if defined $o{tag};
    for my $k (keys %{ $o{headers} // {} }) {
        delete $h{$_} for grep { lc $_ eq lc $k } keys %h;
        $h{$k} = $o{headers}{$k};
    }
    my $body = exists $o{body} ? $o{body}
             : { jsonrpc => '2.0', id => (exists $o{id} ? $o{id} : $NEXT_ID++), method => $method,
                 (defined $params ? (params => $params) : ()) };
    my $r = $inst->mcp_post($o{sid}, $body, headers => \%h, protocol_version => undef,
                            path => $o{path} // '/mcp', quiet => 1,
                            map { exists $o{$_} ? ($_ => $o{$_}) : () } qw(port stream timeout));
    push @TOKENS, $r->{body} =~ /"requestState":"([^"]+)"/g unless $o{stream};
    return $r;
}

# The JSON-RPC message of a reply (JSON body, or the SSE event with an id).
sub msg {
    my ($r) = @_;
    my @m = grep { ref $_ eq 'HASH' && exists $_->{id} } @{ $r->{messages} // [] };
    return $m[-1];
}

sub result { my $m = msg($_[0]); ref $m eq 'HASH' ? $m->{result} : undef }
sub err    { my $m = msg($_[0]); ref $m eq 'HASH' ? $m->{error}  : undef }

# tools/call of a tool.  Options: caps, args, inputs (inputResponses),
# state (requestState; exists: sent even when undef), plus sl options.
sub call {
    my ($tool, %o) = @_;
    my %p = (name => $tool, arguments => delete $o{args} // {},
             _meta => meta(caps => delete $o{caps} // {}, extra => delete $o{extra}));
    $p{inputResponses} = delete $o{inputs} if exists $o{inputs};
    $p{requestState}   = delete $o{state}  if exists $o{state};
    return sl('tools/call', \%p, %o);
}

sub text_of { ((result($_[0]) // {})->{content} // [ {} ])->[0]{text} }

# A refusal: HTTP status, JSON-RPC code, the id echoed, a correlationId.
sub refused {
    my ($r, $status, $code, $name) = @_;
    local $Test::Builder::Level = $Test::Builder::Level + 1;
    my $m = eval { McpTest::decode_json($r->{request} =~ /\r\n\r\n(.*)\z/s ? $1 : '') };
    my $id = ref $m eq 'HASH' ? $m->{id} : undef;
    return is_rpc_error_body($r, $status, $code, $id, $name);
}

# The accept answers to the questions of an input_required result.
sub confirm { { confirm => { action => 'accept', content => { ok => $TRUE } } } }

sub uniq { my %s; grep { !$s{$_}++ } @_ }

sub printable { my ($s) = @_; $s =~ s/([^\x20-\x7e])/sprintf('\\x%02x', ord $1)/ge; $s }

# --- server/discover -------------------------------------------------------------------

{
    my $r = sl('server/discover', { _meta => meta() }, id => 'disc');
    $t->status_is($r, 200, 'server/discover: 200');
    like($r->{headers}{'content-type'}, qr{^application/json\b}, 'server/discover: JSON');
    is($r->{headers}{'mcp-session-id'}, undef, 'server/discover: no Mcp-Session-Id');
    is($r->{headers}{'mcp-protocol-version'}, $V, 'server/discover: MCP-Protocol-Version 2026-07-28');
    my $res = result($r) // {};
    is(msg($r)->{id}, 'disc', 'server/discover: the id echoed');
    ok(ref $res->{supportedVersions} eq 'ARRAY' && grep({ $_ eq $V } @{ $res->{supportedVersions} }),
       'supportedVersions includes 2026-07-28');
    ok(grep({ $_ eq '2025-11-25' } @{ $res->{supportedVersions} // [] }),
       'supportedVersions includes 2025-11-25 (sessions still served)');
    is(ref $res->{capabilities}, 'HASH', 'capabilities is an object');
    is_deeply([ sort keys %{ $res->{capabilities} // {} } ],
              [ qw(completions extensions logging prompts resources tools) ],
              'capabilities: tools, resources, prompts, logging, completions, extensions (tasks)');
    ok($res->{capabilities}{tools}{listChanged} && $res->{capabilities}{prompts}{listChanged},
       'listChanged (heard on subscriptions/listen)');
    is_deeply($res->{capabilities}{resources}, { subscribe => $TRUE,
                                                 listChanged => $TRUE },
              'resources: subscribe (resourceSubscriptions of subscriptions/listen) and listChanged');
    my $info = ($res->{_meta} // {})->{"${P}serverInfo"} // {};
    is($info->{name}, 'ngx_http_mcp_module', '_meta serverInfo.name');
    like($info->{version} // '', qr/^\d+\.\d+\.\d+/, '_meta serverInfo.version');
    ok(!exists $res->{serverInfo}, 'no pre-#3002 top-level serverInfo');
    is($res->{resultType}, 'complete', 'resultType complete');
    like($res->{ttlMs} // '', qr/^\d+$/, 'ttlMs: an integer >= 0');
    is($res->{cacheScope}, 'public', 'cacheScope public without auth');
    like($r->{body}, qr/"ttlMs":\d+[,}]/, 'ttlMs is written as an integer');

    # clientInfo is optional (probe 105)
    my $m = meta();
    delete $m->{"${P}clientInfo"};
    $r = sl('server/discover', { _meta => $m });
    ok($r->{status} == 200 && result($r), 'server/discover without clientInfo: 200, a result');
}

# --- the checks, in order ---------------------------------------------------------------

{
    my $r = sl('server/discover', { _meta => meta(version => 'v999.0.0') }, id => 301,
               headers => { 'MCP-Protocol-Version' => 'v999.0.0' });
    refused($r, 400, -32022, 'unknown version: 400, -32022, id echoed');
    my $d = (err($r) // {})->{data} // {};
    is($d->{requested}, 'v999.0.0', '-32022: data.requested is the header\'s version');
    ok(ref $d->{supported} eq 'ARRAY' && grep({ $_ eq $V } @{ $d->{supported} }),
       '-32022: data.supported lists 2026-07-28');
    my $disc = result(sl('server/discover', { _meta => meta() })) // {};
    my %sv = map { $_ => 1 } @{ $disc->{supportedVersions} // [] };
    ok(!grep({ !$sv{$_} } @{ $d->{supported} // [ 'x' ] }),
       '-32022: data.supported is within discover\'s supportedVersions');

    # the version is checked first: before _meta, Mcp-Method, batches of one
    refused(sl('server/discover', {}, id => 'v-1', headers => { 'MCP-Protocol-Version' => '2099-01-01' }),
            400, -32022, 'unknown version and no _meta: -32022 (the version first)');
    refused(sl('tools/list', { _meta => meta() }, id => 'v-2',
               headers => { 'MCP-Protocol-Version' => 'v9', 'Mcp-Method' => 'prompts/list' }),
            400, -32022, 'unknown version and a wrong Mcp-Method: -32022');
    is(((err(sl('server/discover', { _meta => meta() }, headers => { 'MCP-Protocol-Version' => "x\x7f" }))
         // {})->{data} // {})->{requested}, "x\x7f", '-32022: requested echoes odd bytes as JSON');

    # _meta keys (probes 101, 102, 104)
    my %probes = (101 => {}, 102 => { _meta => { "${P}clientCapabilities" => {} } },
                  104 => { _meta => { "${P}protocolVersion" => $V } });
    for my $id (sort keys %probes) {
        refused(sl('server/discover', $probes{$id}, id => $id), 400, -32602,
                "probe $id: _meta incomplete: 400, -32602");
    }
    refused(sl('tools/list', { _meta => { "${P}clientCapabilities" => {} } }, id => 'm-1',
               headers => { 'Mcp-Method' => 'prompts/list' }),
            400, -32602, 'missing _meta version and a wrong Mcp-Method: -32602 (_meta before headers)');
    refused(sl('tools/list', { _meta => meta(caps => []) }, id => 'm-2'), 400, -32602,
            'clientCapabilities not an object: -32602');
    refused(sl('tools/list', { _meta => meta(version => 20260728) }, id => 'm-3'), 400, -32602,
            '_meta protocolVersion not a string: -32602');

    # _meta's version differs from the header's (probe 302)
    refused(sl('server/discover', { _meta => meta(version => 'v999.0.0') }, id => 302), 400, -32020,
            'header 2026-07-28, _meta v999.0.0: 400, -32020');
    refused(sl('server/discover', { _meta => meta(version => '2025-11-25') }, id => 303), 400, -32020,
            'header 2026-07-28, _meta 2025-11-25: -32020');

    # Mcp-Method
    refused(sl('tools/list', { _meta => meta() }, id => 'h-1', headers => { 'Mcp-Method' => undef }),
            400, -32020, 'Mcp-Method missing: -32020');
    refused(sl('tools/list', { _meta => meta() }, id => 'h-2', headers => { 'Mcp-Method' => 'prompts/list' }),
            400, -32020, 'Mcp-Method differs from the body: -32020');
    refused(sl('tools/list', { _meta => meta() }, id => 'h-3', headers => { 'Mcp-Method' => 'TOOLS/LIST' }),
            400, -32020, 'Mcp-Method differs in case only: -32020 (values are case-sensitive)');
    refused(sl('tools/list', { _meta => meta() }, id => 'h-4',
               headers => { 'Mcp-Method' => [ 'tools/list', 'tools/list' ] }),
            400, -32020, 'Mcp-Method twice (same value): -32020');
    refused(sl('tools/list', { _meta => meta() }, id => 'h-5',
               headers => { 'Mcp-Method' => [ 'tools/list', 'prompts/list' ] }),
            400, -32020, 'Mcp-Method twice (different values): -32020');
    for my $name ('mcp-method', 'MCP-METHOD') {
        my $r2 = sl('tools/list', { _meta => meta() }, headers => { $name => 'tools/list' });
        ok($r2->{status} == 200 && result($r2), "header name $name: accepted (names are case-insensitive)");
    }

    # Mcp-Name
    my $call = { name => 'test_simple_text', arguments => {}, _meta => meta() };
    refused(sl('tools/call', $call, id => 'n-1', headers => { 'Mcp-Name' => undef }), 400, -32020,
            'tools/call without Mcp-Name: -32020');
    refused(sl('tools/call', $call, id => 'n-2', headers => { 'Mcp-Name' => 'test_image_content' }), 400, -32020,
            'tools/call, Mcp-Name of another tool: -32020');
    refused(sl('tools/call', $call, id => 'n-3', headers => { 'Mcp-Name' => 'TEST_SIMPLE_TEXT' }), 400, -32020,
            'tools/call, Mcp-Name in another case: -32020');
    refused(sl('tools/call', $call, id => 'n-4',
               headers => { 'Mcp-Name' => [ 'test_simple_text', 'test_simple_text' ] }), 400, -32020,
            'tools/call, Mcp-Name twice: -32020');
    refused(sl('tools/call', { %$call, name => 42 }, id => 'n-5', headers => { 'Mcp-Name' => '42' }), 400, -32020,
            'tools/call, params.name a number: -32020');
    my $r2 = sl('tools/call', $call, headers => { 'Mcp-Name' => '  test_simple_text  ' });
    ok($r2->{status} == 200 && result($r2), 'Mcp-Name with surrounding whitespace: accepted (OWS)');
    my $prompt = { name => 'test_simple_prompt', _meta => meta() };
    refused(sl('prompts/get', $prompt, id => 'n-6', headers => { 'Mcp-Name' => undef }), 400, -32020,
            'prompts/get without Mcp-Name: -32020');
    refused(sl('prompts/get', $prompt, id => 'n-7', headers => { 'Mcp-Name' => 'test_prompt_with_image' }),
            400, -32020, 'prompts/get, Mcp-Name of another prompt: -32020');
    my $read = { uri => 'test://static-text', _meta => meta() };
    refused(sl('resources/read', $read, id => 'n-8', headers => { 'Mcp-Name' => undef }), 400, -32020,
            'resources/read without Mcp-Name: -32020');
    refused(sl('resources/read', $read, id => 'n-9', headers => { 'Mcp-Name' => 'test://static-binary' }),
            400, -32020, 'resources/read, Mcp-Name another URI: -32020');
    $r2 = sl('tools/list', { _meta => meta() }, headers => { 'Mcp-Name' => 'whatever' });
    ok($r2->{status} == 200 && result($r2), 'tools/list with an Mcp-Name it does not need: accepted');

    # batches
    my $one = { jsonrpc => '2.0', id => 1, method => 'server/discover', params => { _meta => meta() } };
    $r2 = sl('server/discover', undef, body => [ $one ]);
    is_rpc_error_body($r2, 400, -32600, undef, 'a batch of one: 400, -32600');
    $r2 = sl('server/discover', undef, body => [ $one, { %$one, id => 2 } ]);
    is_rpc_error_body($r2, 400, -32600, undef, 'a batch of two: 400, -32600');
    is_rpc_error_body(sl('x', undef, body => '[]'), 400, -32600, undef, 'an empty batch: 400, -32600');

    # ids of every kind come back
    for my $id ('str-id', 0, -7, 9007199254740993) {
        refused(sl('tools/list', { _meta => meta() }, id => $id, headers => { 'Mcp-Method' => 'x' }),
                400, -32020, "a refusal echoes the id $id");
    }
}

# --- removed and unknown methods: 404, -32601 -----------------------------------------

for my $m (qw(initialize ping logging/setLevel resources/subscribe resources/unsubscribe unknown/method)) {
    my %p = (_meta => meta());
    $p{uri} = 'test://static-text' if $m =~ /subscribe/;
    $p{level} = 'info' if $m eq 'logging/setLevel';
    %p = (%p, protocolVersion => $V, capabilities => {}, clientInfo => { name => 'x', version => '1' })
        if $m eq 'initialize';
    my $r = sl($m, \%p, id => "rm-$m");
    refused($r, 404, -32601, "$m: 404, -32601");
    is($r->{headers}{'mcp-session-id'}, undef, "$m: no session id handed out") if $m eq 'initialize';
}

# --- results: resultType, caching hints, SEP-2164 ----------------------------------------

{
    my %lists = ('tools/list' => 'tools', 'prompts/list' => 'prompts', 'resources/list' => 'resources',
                 'resources/templates/list' => 'resourceTemplates');
    for my $m (sort keys %lists) {
        my $res = result(sl($m, { _meta => meta() })) // {};
        ok(ref $res->{ $lists{$m} } eq 'ARRAY' && @{ $res->{ $lists{$m} } }, "$m: a list");
        ok(($res->{resultType} // '') eq 'complete' && ($res->{ttlMs} // '') =~ /^\d+$/
           && ($res->{cacheScope} // '') eq 'public', "$m: resultType complete, ttlMs, cacheScope public");
    }
    my $res = result(sl('resources/read', { uri => 'test://static-text', _meta => meta() })) // {};
    is(($res->{contents} // [ {} ])->[0]{text}, 'This is the content of the static text resource.',
       'resources/read: the text');
    ok(($res->{resultType} // '') eq 'complete' && ($res->{ttlMs} // '') =~ /^\d+$/
       && ($res->{cacheScope} // '') eq 'public', 'resources/read: resultType, ttlMs, cacheScope');

    for my $uri ('test://no-such-resource', "test://\x{e4}-unicode") {
        my $bytes = $uri;
        utf8::encode($bytes);
        my $r = sl('resources/read', { uri => $uri, _meta => meta() }, id => 'nf', headers => { 'Mcp-Name' => $bytes });
        is_error(msg($r), -32602, 'nf', "resources/read $bytes: -32602");
        is(((err($r) // {})->{data} // {})->{uri}, $uri, '... with error.data.uri');
    }

    my $r = call('test_simple_text');
    is(text_of($r), 'This is a simple text response for testing.', 'tools/call: the text');
    is((result($r) // {})->{resultType}, 'complete', 'tools/call: resultType complete');
    ok(!exists((result($r) // {})->{ttlMs}), 'tools/call: no caching hints');
    $res = result(sl('prompts/get', { name => 'test_simple_prompt', _meta => meta() })) // {};
    ok(ref $res->{messages} eq 'ARRAY' && ($res->{resultType} // '') eq 'complete', 'prompts/get: resultType');
    $res = result(sl('completion/complete', { ref => { type => 'ref/prompt', name => 'test_prompt_with_arguments' },
                                              argument => { name => 'arg1', value => 'a' }, _meta => meta() })) // {};
    ok(ref $res->{completion} eq 'HASH' && ($res->{resultType} // '') eq 'complete', 'completion/complete: resultType');
    $r = call('no_such_tool');
    is_error(msg($r), undef, msg($r) && msg($r)->{id}, 'an unknown tool: an error');
}

# --- progress and log messages: one-line SSE events -----------------------------------------

# Every event of an SSE body: at most one data line, each a whole JSON
# message; returns the messages, or undef when an event breaks the rule.
sub sse_messages {
    my ($r) = @_;
    my @msgs;
    for my $ev (@{ $r->{events} // [] }) {
        my @data = $ev->{raw} =~ /^data:(.*)$/mg;
        return undef if @data > 1;
        next if !@data || $data[0] =~ /^ ?$/;
        my $m = eval { McpTest::decode_json($data[0]) } or return undef;
        push @msgs, $m;
    }
    return \@msgs;
}

{
    my $r = call('test_tool_with_progress', extra => { progressToken => 'pt-1' });
    like($r->{headers}{'content-type'} // '', qr{^text/event-stream\b}, 'progress: an SSE reply');
    is($r->{headers}{'mcp-session-id'}, undef, 'progress: no Mcp-Session-Id (the carrier session is hidden)');
    my $msgs = sse_messages($r);
    ok($msgs, 'progress: every event is one data: line of JSON');
    my @prog = grep { ($_->{method} // '') eq 'notifications/progress' } @{ $msgs // [] };
    is_deeply([ map { $_->{params}{progress} } @prog ], [ 0, 50, 100 ], 'progress 0, 50, 100');
    ok(!grep({ $_->{params}{progressToken} ne 'pt-1' } @prog), 'progress: the token echoed');
    ok(!grep({ exists $_->{method} && exists $_->{id} } @{ $msgs // [] }), 'progress: no request on the stream');
    is((($msgs // [])->[-1] // {})->{result}{resultType}, 'complete', 'progress: the last event is the result');

    $r = call('test_logging_tool');
    like($r->{headers}{'content-type'} // '', qr{^application/json\b}, 'no logLevel: a JSON reply');
    ok(!grep({ ($_->{method} // '') eq 'notifications/message' } @{ $r->{messages} }),
       'no logLevel: no notifications/message');
    is(text_of($r), 'Tool with logging executed successfully', 'no logLevel: the result');
    for my $lvl (qw(error verbose)) {
        $r = call('test_logging_tool', extra => { "${P}logLevel" => $lvl });
        ok(!grep({ ($_->{method} // '') eq 'notifications/message' } @{ $r->{messages} }),
           "logLevel $lvl: no notifications/message (info messages filtered, or not a level)");
    }
    $r = call('test_logging_tool', extra => { "${P}logLevel" => 'info' });
    $msgs = sse_messages($r);
    ok($msgs, 'logLevel info: one-line events');
    is(scalar(grep { ($_->{method} // '') eq 'notifications/message' } @{ $msgs // [] }), 3,
       'logLevel info: three notifications/message');

    # a 2025 tool that sends requests to the client
    $r = call('test_sampling', args => { prompt => 'x' }, caps => { sampling => {} });
    is_error(msg($r), -32600, msg($r) && msg($r)->{id}, 'test_sampling statelessly: -32600, no request on a stream');
    $r = call('test_streaming_elicitation', caps => \%EL);
    is((result($r) // {})->{resultType}, 'input_required', 'test_streaming_elicitation: input_required, at once');
}

# --- multi-round requests: the basics -----------------------------------------------------

{
    my $r = call('test_input_required_result_elicitation', caps => \%EL);
    my $res = result($r) // {};
    is($res->{resultType}, 'input_required', 'elicitation tool: input_required');
    is_deeply([ keys %{ $res->{inputRequests} // {} } ], [ 'user_name' ], '... asking user_name');
    is($res->{inputRequests}{user_name}{method}, 'elicitation/create', '... by elicitation/create');
    ok(!exists $res->{inputRequests}{user_name}{id} && !exists $res->{inputRequests}{user_name}{jsonrpc},
       '... an input request is {method, params}, no id');
    $r = call('test_input_required_result_elicitation', caps => \%EL,
              inputs => { user_name => { action => 'accept', content => { name => 'Alice' } },
                          extra_key => { action => 'accept', content => {} } });
    is(text_of($r), 'Hello, Alice!', 'answered (extra keys ignored, no state needed): Hello, Alice!');

    $r = call($RS, caps => \%EL);
    $res = result($r) // {};
    my $tok = $res->{requestState} // '';
    like($tok, qr/^1\.\d+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]{43}$/, 'requestState: 1.<expires>.<payload>.<mac>');
    my ($exp) = $tok =~ /^1\.(\d+)\./;
    cmp_ok(abs(($exp // 0) - time() - 600), '<=', 5, 'expires in 10 minutes (the default mcp_state_timeout)');
    $r = call($RS, caps => \%EL, inputs => confirm(), state => $tok);
    is(text_of($r), 'state-ok: confirmed', 'the retry with the state: state-ok');
    $r = call($RS, caps => \%EL, inputs => confirm(), state => $tok);
    is(text_of($r), 'state-ok: confirmed', 'a state opens more than once (not single-use)');

    $r = sl('prompts/get', { name => 'test_input_required_result_prompt', _meta => meta(caps => \%EL) });
    is((result($r) // {})->{resultType}, 'input_required', 'prompts/get: input_required');
    $r = sl('prompts/get', { name => 'test_input_required_result_prompt', _meta => meta(caps => \%EL),
                             inputResponses => { user_context => { action => 'accept', content => { context => 'ctx' } } } });
    is_deeply((result($r) // {})->{messages}, [ { role => 'user', content => { type => 'text', text => 'ctx' } } ],
              'prompts/get answered: the messages');

    for my $m ('tools/list', 'prompts/list') {
        isnt((result(sl($m, { _meta => meta(caps => { %EL, sampling => {} }) })) // {})->{resultType},
             'input_required', "$m: never input_required");
    }
}

# --- capabilities -------------------------------------------------------------------

{
    my $r = call('test_missing_capability', id => 401);
    refused($r, 400, -32021, 'test_missing_capability, capabilities {}: 400, -32021');
    is_deeply((err($r) // {})->{data}{requiredCapabilities}, { sampling => {} },
              'requiredCapabilities {"sampling":{}} (an object)');
    $r = call('test_input_required_result_elicitation');
    is_deeply(((err($r) // {})->{data} // {})->{requiredCapabilities}, { elicitation => {} },
              'the elicitation tool without elicitation: -32021 {"elicitation":{}}');
    is($r->{status}, 400, '... HTTP 400');
    $r = call('test_input_required_result_capabilities', caps => { sampling => {} });
    is_deeply([ map { $_->{method} } values %{ (result($r) // {})->{inputRequests} // {} } ],
              [ 'sampling/createMessage' ], 'capabilities tool, sampling only: only a sampling request');
    $r = call('test_input_required_result_capabilities', caps => \%EL);
    is_deeply([ map { $_->{method} } values %{ (result($r) // {})->{inputRequests} // {} } ],
              [ 'elicitation/create' ], 'capabilities tool, elicitation only: only an elicitation');
    $r = call('test_input_required_result_capabilities');
    is_deeply(((err($r) // {})->{data} // {})->{requiredCapabilities}, { elicitation => {}, sampling => {} },
              'capabilities tool, none: -32021 naming both');
    $r = call('test_input_required_result_multiple_inputs', caps => { %EL, roots => {} });
    is_deeply([ sort keys %{ (result($r) // {})->{inputRequests} // {} } ], [ qw(client_roots user_name) ],
              'multiple inputs without sampling: the sampling request dropped');
    $r = call('test_input_required_result_multiple_inputs', caps => { %EL, roots => {}, sampling => {} });
    is_deeply([ sort keys %{ (result($r) // {})->{inputRequests} // {} } ],
              [ qw(client_roots greeting user_name) ], 'multiple inputs with all three: three requests');
}

# --- (1) three rounds by raw HTTP, the rounds on different workers ----------------------

# One conversation of the multi-round tool, each round a fresh connection;
# returns (ok, \@why, [tags]).
sub conversation {
    my ($tag, %o) = @_;
    my @why;
    my $name = "Alice-$tag";
    my $r1 = call($MR, caps => \%EL, tag => "$tag-1", %o);
    my $s1 = result($r1) // {};
    push @why, 'r1 not input_required' unless ($s1->{resultType} // '') eq 'input_required'
        && $s1->{inputRequests}{step1} && $s1->{requestState};
    my $r2 = call($MR, caps => \%EL, tag => "$tag-2", state => $s1->{requestState},
                  inputs => { step1 => { action => 'accept', content => { name => $name } } }, %o);
    my $s2 = result($r2) // {};
    push @why, 'r2 not input_required with a new state' unless ($s2->{resultType} // '') eq 'input_required'
        && $s2->{inputRequests}{step2} && $s2->{requestState}
        && $s2->{requestState} ne ($s1->{requestState} // '');
    my $r3 = call($MR, caps => \%EL, tag => "$tag-3", state => $s2->{requestState},
                  inputs => { step2 => { action => 'accept', content => { color => 'blue' } } }, %o);
    my $res = result($r3) // {};
    push @why, 'r3: ' . ($r3->{body} // '') unless ($res->{resultType} // '') eq 'complete'
        && text_of($r3) eq "$name likes blue";
    return (!@why, \@why, [ map { "$tag-$_" } 1 .. 3 ]);
}

{
    my ($convs, $failed, $cross, @seen) = (0, 0);
    for my $c (1 .. 20) {
        my ($ok, $why, $tags) = conversation("mr$c");
        $convs++;
        if (!$ok) { $failed++; diag("conversation mr$c: @$why"); next }
        my $pids = pids_by_tag($t, $tags);
        my @p = uniq(map { @{ $pids->{$_} // [] } } @$tags);
        push @seen, "mr$c: @p";
        if (@p >= 2 && (grep { $pids->{$_} } @$tags) == 3) { $cross = "mr$c served by pids @p"; last }
    }
    is($failed, 0, "$convs multi-round conversations (3 rounds each, fresh connections): all complete");
    ok($cross, 'the rounds of one conversation were served by different workers'
       . ($cross ? " ($cross)" : '')) or diag(join "\n", @seen);
    my @workers = $t->worker_pids;
    my %live = map { $_ => 1 } @workers;
    my ($p) = ($cross // '') =~ /pids (.*)/;
    ok($p && !grep({ !$live{$_} } split / /, $p), '... all of them workers of this nginx');
}

# --- (2) a tampered state is refused ---------------------------------------------------------

{
    my $r = call($TS, caps => \%EL);
    my $tok = (result($r) // {})->{requestState} // '';
    my @part = split /\./, $tok, -1;
    is(scalar @part, 4, 'the tampered-state tool: a state of 4 parts');
    my $flip = sub {
        my ($s, $i) = @_;
        my $c = substr($s, $i, 1);
        substr($s, $i, 1) = $c eq 'A' ? 'B' : $c =~ /\d/ ? ($c + 1) % 10 : 'A';
        return $s;
    };
    my %bad;
    for my $i (0 .. 3) {
        my @p = @part;
        $p[$i] = $flip->($p[$i], $i == 1 ? length($p[1]) - 1 : int(length($p[$i]) / 2));
        $bad{"part $i flipped"} = join '.', @p;
    }
    my @p = @part;
    $p[1] += 86400;
    $bad{'expiry pushed a day later'} = join '.', @p;
    @p = @part;
    $p[3] = $flip->($p[3], 42);
    $bad{'last MAC character flipped'} = join '.', @p;
    $bad{'expiry past time_t'}    = join '.', $part[0], '9' x 25, @part[2, 3];
    $bad{'expiry zero-padded'}    = join '.', $part[0], "0$part[1]", @part[2, 3];
    $bad{'bytes appended'}        = "${tok}AAAA";
    $bad{'-TAMPERED appended'}    = "$tok-TAMPERED";
    $bad{'a fifth part appended'} = "$tok.x";
    $bad{'truncated by one'}      = substr($tok, 0, -1);
    $bad{'truncated by half'}     = substr($tok, 0, length($tok) / 2);
    $bad{'empty'}                 = '';
    $bad{'a leading space'}       = " $tok";
    $bad{'a trailing newline'}    = "$tok\n";
    $bad{'upper-cased'}           = uc $tok;
    $bad{'payload with padding'}  = join '.', @part[0, 1], "$part[2]=", $part[3];
    $bad{'payload forged, round 2'} = join '.', @part[0, 1], 'eyJyb3VuZCI6Mn0', $part[3];
    for my $what (sort keys %bad) {
        $r = call($TS, caps => \%EL, inputs => confirm(), state => $bad{$what}, id => "tamper-$what");
        is_error(msg($r), -32602, "tamper-$what", "requestState $what: -32602");
        like((err($r) // {})->{message} // '', qr/requestState/, '... saying requestState');
    }
    $r = call($TS, caps => \%EL, inputs => confirm(), state => $tok);
    is(text_of($r), 'state-ok: confirmed', 'the untouched state still opens');
}

# --- (3) expiry --------------------------------------------------------------------------------

{
    my $r = call($RS, caps => \%EL, path => '/short');
    my $tok = (result($r) // {})->{requestState} // '';
    my ($exp) = $tok =~ /^1\.(\d+)\./;
    cmp_ok(($exp // 0) - time(), '<=', 1, 'mcp_state_timeout 1s: the state expires within a second');
    $r = call($RS, caps => \%EL, inputs => confirm(), state => $tok, path => '/short');
    is(text_of($r), 'state-ok: confirmed', 'used at once: it opens');
    # expiry is wall-clock seconds: nothing to wait on but the clock
    sleep 2.5;
    $r = call($RS, caps => \%EL, inputs => confirm(), state => $tok, path => '/short', id => 'exp');
    is_error(msg($r), -32602, 'exp', 'after 2.5 s: -32602');
    like((err($r) // {})->{message} // '', qr/expired/, '... "expired"');
    $r = call($RS, caps => \%EL, inputs => confirm(), state => $tok, id => 'exp2');
    is_error(msg($r), -32602, 'exp2',
             'the same state at /mcp (same zone, same key): -32602, a state is sealed for its '
             . 'location (issue 35)');
}

# --- (4) a state is for the tool, method and caller it was made for -----------------------------

{
    my $tok  = (result(call($RS, caps => \%EL)) // {})->{requestState} // '';
    my $tok2 = (result(call($TS, caps => \%EL)) // {})->{requestState} // '';
    my $r = call($TS, caps => \%EL, inputs => confirm(), state => $tok, id => 'x-1');
    is_error(msg($r), -32602, 'x-1', "a $RS state on $TS: -32602");
    like((err($r) // {})->{message} // '', qr/not valid/, '... not valid');
    $r = call($RS, caps => \%EL, inputs => confirm(), state => $tok2, id => 'x-2');
    is_error(msg($r), -32602, 'x-2', 'and the other way round: -32602');
    $r = call($MR, caps => \%EL, inputs => { step2 => { action => 'accept', content => { color => 'red' } } },
              state => $tok, id => 'x-3');
    is_error(msg($r), -32602, 'x-3', 'on the multi-round tool: -32602');
    $r = sl('prompts/get', { name => 'test_input_required_result_prompt', _meta => meta(caps => \%EL),
                             requestState => $tok }, id => 'x-4');
    is_error(msg($r), -32602, 'x-4', 'on prompts/get: -32602');
    $r = sl('resources/read', { uri => 'test://static-text', _meta => meta(), requestState => $tok }, id => 'x-5');
    is_error(msg($r), -32602, 'x-5', 'on resources/read: -32602');

    # callers: alice's state is not bob's, nor an anonymous one alice's
    my %bob   = (Authorization => 'Bearer sk_t63_bob');
    my %alice = (Authorization => 'Bearer sk_t63_alice');
    $r = call($RS, caps => \%EL, path => '/auth', headers => \%alice);
    my $atok = (result($r) // {})->{requestState} // '';
    ok(length $atok, '/auth: alice gets a state');
    $r = call($RS, caps => \%EL, path => '/auth', headers => \%alice, inputs => confirm(), state => $atok);
    is(text_of($r), 'state-ok: confirmed', '/auth: alice\'s state opens for alice');
    $r = call($RS, caps => \%EL, path => '/auth', headers => \%bob, inputs => confirm(), state => $atok, id => 'b-1');
    is_error(msg($r), -32602, 'b-1', '/auth: alice\'s state presented by bob: -32602');
    $r = call($RS, caps => \%EL, path => '/auth', headers => \%alice, inputs => confirm(), state => $tok, id => 'b-2');
    is_error(msg($r), -32602, 'b-2', '/auth: an anonymous state (same zone) presented by alice: -32602');
    $r = call($RS, caps => \%EL, inputs => confirm(), state => $atok, id => 'b-3');
    is_error(msg($r), -32602, 'b-3', '/mcp: alice\'s state presented anonymously: -32602');

    my $res = result(sl('server/discover', { _meta => meta() }, path => '/auth', headers => \%alice)) // {};
    is($res->{cacheScope}, 'private', '/auth: server/discover cacheScope private');
    $res = result(sl('tools/list', { _meta => meta() }, path => '/auth', headers => \%alice)) // {};
    is($res->{cacheScope}, 'private', '/auth: tools/list cacheScope private');
    $r = sl('server/discover', { _meta => meta() }, path => '/auth');
    is($r->{status}, 401, '/auth without a key: 401');
}

# --- (5) mcp_state_key: two instances ------------------------------------------------------

{
    my $k1 = McpTest->new(server => 'location = /mcp { mcp on; mcp_builtin everything; }');
    my $shared = $k1->write_file('conf/state.key', "shared-state-key-" . ('s' x 32) . "\n");
    my $other  = $k1->write_file('conf/other.key', "another-state-key-" . ('o' x 32) . "\n");
    my $long   = 'L' x 4096;
    my $long1  = $k1->write_file('conf/long1.key', "$long-one");
    my $long2  = $k1->write_file('conf/long2.key', "$long-two");
    $k1->write_config(server => <<"NGX");
        location = /keyed { mcp on; mcp_builtin everything; mcp_state_key $shared; }
        location = /nokey { mcp on; mcp_builtin everything; }
        location = /long  { mcp on; mcp_builtin everything; mcp_state_key $long1; }
NGX
    $k1->start;
    my $k2 = McpTest->new(server => <<"NGX")->start;
        location = /keyed { mcp on; mcp_builtin everything; mcp_state_key $shared; }
        location = /other { mcp on; mcp_builtin everything; mcp_state_key $other; }
        location = /nokey { mcp on; mcp_builtin everything; }
        location = /long  { mcp on; mcp_builtin everything; mcp_state_key $long2; }
NGX
    my $mint = sub { my ($inst, $path) = @_; (result(call($RS, caps => \%EL, t => $inst, path => $path)) // {})->{requestState} // '' };
    my $use  = sub { my ($inst, $path, $tok, $id) = @_; call($RS, caps => \%EL, t => $inst, path => $path,
                                                            inputs => confirm(), state => $tok, id => $id // "use-" . $NEXT_ID++) };

    my $r = $use->($k2, '/keyed', $mint->($k1, '/keyed'));
    is(text_of($r), 'state-ok: confirmed', 'same key file: a state of instance 1 opens on instance 2');
    $r = $use->($k1, '/keyed', $mint->($k2, '/keyed'));
    is(text_of($r), 'state-ok: confirmed', '... and one of instance 2 on instance 1');
    $r = $use->($k2, '/other', $mint->($k1, '/keyed'), 'k-1');
    is_error(msg($r), -32602, 'k-1', 'another key file: refused');
    $r = $use->($k2, '/nokey', $mint->($k1, '/nokey'), 'k-2');
    is_error(msg($r), -32602, 'k-2', 'no key file: each instance\'s zone has its own key, refused');
    $r = $use->($k2, '/keyed', $mint->($k1, '/nokey'), 'k-3');
    is_error(msg($r), -32602, 'k-3', 'a zone key\'s state on a key file location: refused');
    $r = $use->($k1, '/keyed', $mint->($k1, '/nokey'), 'k-4');
    is_error(msg($r), -32602, 'k-4', '... also in the same instance');

    $r = $use->($k2, '/long', $mint->($k1, '/long'), 'k-5');
    is_error(msg($r), -32602, 'k-5',
             'key files that differ after byte 4096 are different keys: refused');

    for my $k ($k1, $k2) {
        my @tok = grep { $k->error_log =~ /\Q$_\E/ } @TOKENS;
        is(scalar @tok, 0, 'no requestState in the key instance\'s error.log');
    }
    $k1->stop;
    $k2->stop;

    my $bad = McpTest->new(server => 'location = /mcp { mcp on; mcp_builtin everything; }');
    my $short = $bad->write_file('conf/short.key', 'x' x 31);
    $bad->write_config(server => "location = /mcp { mcp on; mcp_builtin everything; mcp_state_key $short; }");
    my ($rc, $out) = $bad->nginx_t;
    isnt($rc, 0, 'a 31-byte key file: nginx -t fails');
    like($out, qr/\[emerg\].*"\Q$short\E" must hold at least 32 bytes in .*nginx\.conf:\d+/,
         '... with an [emerg] naming the file, the rule and the line');
    my $ok32 = $bad->write_file('conf/ok.key', 'y' x 32);
    $bad->write_config(server => "location = /mcp { mcp on; mcp_builtin everything; mcp_state_key $ok32; }");
    ($rc, $out) = $bad->nginx_t;
    is($rc, 0, 'a 32-byte key file: nginx -t passes') or diag($out);
    $bad->write_config(server => "location = /mcp { mcp on; mcp_builtin everything;"
                               . " mcp_state_key %%PREFIX%%/conf/none.key; }");
    ($rc, $out) = $bad->nginx_t;
    ok($rc != 0 && $out =~ /\[emerg\].*none\.key/, 'a missing key file: [emerg], nginx -t fails');
    $bad->write_config(server => "location = /mcp { mcp on; mcp_builtin everything;"
                               . " mcp_state_key %%PREFIX%%/conf; }");
    ($rc, $out) = $bad->nginx_t;
    isnt($rc, 0, 'a directory as the key file: nginx -t fails');
    like($out, qr/\[emerg\].*"[^"]*conf" is not a file in .*nginx\.conf:\d+/,
         '... with an [emerg] that says it is not a file, and the line');
    unlike($out, qr/\[crit\]/, '... and no [crit] from reading it');
}

# --- (6) through mcp_pass ----------------------------------------------------------------------

{
    my ($ok, $why) = conversation('gw', path => '/gw');
    ok($ok, 'through mcp_pass: three rounds complete') or diag("@$why");
    my $up = wait_upstream($t, sub { ($_[0]{tool} // '') eq $MR && $_[0]{pv} eq $V });
    ok($up, 'the rounds reached the upstream as 2026-07-28 requests');
    is(($up // {})->{sid}, '', '... without a session id');

    # the state is the upstream's: a round may go around the gateway
    my $r1 = call($MR, caps => \%EL, path => '/gw');
    my $r2 = call($MR, caps => \%EL, port => $t->port(2), state => (result($r1) // {})->{requestState},
                  inputs => { step1 => { action => 'accept', content => { name => 'Bo' } } });
    my $r3 = call($MR, caps => \%EL, path => '/gw', state => (result($r2) // {})->{requestState},
                  inputs => { step2 => { action => 'accept', content => { color => 'green' } } });
    is(text_of($r3), 'Bo likes green', 'gateway, upstream directly, gateway: the rounds still add up');
    my $r = call($MR, caps => \%EL, state => (result($r1) // {})->{requestState}, id => 'gw-foreign',
                 inputs => { step1 => { action => 'accept', content => { name => 'Bo' } } });
    is_error(msg($r), -32602, 'gw-foreign', 'the upstream\'s state on this nginx\'s own /mcp: refused');
    $r = call($TS, caps => \%EL, path => '/gw', inputs => confirm(), id => 'gw-tamper',
              state => ((result(call($TS, caps => \%EL, path => '/gw')) // {})->{requestState} // '') . 'x');
    is_error(msg($r), -32602, 'gw-tamper', 'a tampered state through the gateway: -32602 from the upstream');

    my %refusals = (
        'gw-name'    => [ -32020, sub { call('test_simple_text', path => '/gw', id => $_[0],
                                             headers => { 'Mcp-Name' => 'test_image_content' }) } ],
        'gw-method'  => [ -32020, sub { sl('tools/list', { _meta => meta() }, path => '/gw', id => $_[0],
                                           headers => { 'Mcp-Method' => 'prompts/list' }) } ],
        'gw-nometh'  => [ -32020, sub { sl('tools/list', { _meta => meta() }, path => '/gw', id => $_[0],
                                           headers => { 'Mcp-Method' => undef }) } ],
        'gw-dupname' => [ -32020, sub { call('test_simple_text', path => '/gw', id => $_[0],
                                             headers => { 'Mcp-Name' => [ 'test_simple_text', 'test_simple_text' ] }) } ],
        'gw-metav'   => [ -32020, sub { sl('tools/list', { _meta => meta(version => 'v999.0.0') }, path => '/gw',
                                           id => $_[0]) } ],
        'gw-nometa'  => [ -32602, sub { sl('tools/list', {}, path => '/gw', id => $_[0]) } ],
        'gw-v9'      => [ -32022, sub { sl('tools/list', { _meta => meta() }, path => '/gw', id => $_[0],
                                           headers => { 'MCP-Protocol-Version' => 'v9' }) } ],
    );
    for my $id (sort keys %refusals) {
        my ($code, $send) = @{ $refusals{$id} };
        refused($send->($id), 400, $code, "gateway: $id refused with $code");
    }
    $r = sl('server/discover', undef, path => '/gw',
            body => [ { jsonrpc => '2.0', id => 'gw-batch', method => 'server/discover', params => { _meta => meta() } } ]);
    is_rpc_error_body($r, 400, -32600, undef, 'gateway: a batch refused with -32600');
    # a request that passed went through: the refused ones did not
    my $last = call('test_simple_text', path => '/gw', id => 'gw-after');
    is(text_of($last), 'This is a simple text response for testing.', 'gateway: a good call after them');
    ok(wait_upstream($t, sub { ($_[0]{rid} // '') eq 'gw-after' }), '... reached the upstream');
    my @leaked = grep { ($_->{rid} // '') =~ /^gw-(?:name|method|nometh|dupname|metav|nometa|v9|batch)$/ }
                 upstream_log($t);
    is(scalar @leaked, 0, 'none of the refused requests reached the upstream')
        or diag(explain \@leaked);

    # the gateway's tool policy holds for stateless requests too
    $r = call($MR, caps => \%EL, path => '/gwdeny', id => 'gw-denied');
    is_error(msg($r), -32602, 'gw-denied', 'mcp_tools_deny at the gateway: a denied multi-round tool refused');
    my $list = result(sl('tools/list', { _meta => meta() }, path => '/gwdeny')) // {};
    ok(ref $list->{tools} eq 'ARRAY' && @{ $list->{tools} }
       && !grep({ $_->{name} =~ /^test_input_required_result_/ } @{ $list->{tools} }),
       '... absent from tools/list');
    ok(($list->{resultType} // '') eq 'complete' && ($list->{ttlMs} // '') =~ /^\d+$/ && $list->{cacheScope},
       '... whose filtered result keeps resultType, ttlMs, cacheScope');
    ok(!wait_upstream($t, sub { ($_[0]{rid} // '') eq 'gw-denied' }, 0.3), '... and the call never reached the upstream');

    $r = call('test_tool_with_progress', path => '/gw', extra => { progressToken => 'gw-pt' });
    my $msgs = sse_messages($r);
    is_deeply([ map { $_->{params}{progress} } grep { ($_->{method} // '') eq 'notifications/progress' } @{ $msgs // [] } ],
              [ 0, 50, 100 ], 'gateway: progress relayed as one-line events');
    $r = sl('resources/read', { uri => 'test://nope', _meta => meta() }, path => '/gw', id => 'gw-nf');
    is_error(msg($r), -32602, 'gw-nf', 'gateway: an unknown resource: -32602');
    is(((err($r) // {})->{data} // {})->{uri}, 'test://nope', '... with error.data.uri');
    refused(sl('ping', { _meta => meta() }, path => '/gw', id => 'gw-ping'), 404, -32601, 'gateway: ping 404');
}

# --- (7) a 2025 session on the same location ----------------------------------------------------

{
    my ($sid, $init) = $t->mcp_initialize(capabilities => { sampling => {} });
    like($sid, qr/^[0-9a-f]{32}$/, '2025-11-25 initialize beside 2026 traffic: a session');
    is($init->{protocolVersion}, '2025-11-25', '... version 2025-11-25');
    my ($msg, $r) = $t->mcp_request($sid, 'ping', undef, id => 'p25');
    is_result($msg, {}, 'p25', 'the session: ping works (removed only in 2026-07-28)');
    is(call('test_simple_text')->{status}, 200, 'a stateless call in between');
    my $res = $t->mcp_call($sid, 'tools/call', { name => 'test_simple_text', arguments => {} });
    is(($res->{content} // [ {} ])->[0]{text}, 'This is a simple text response for testing.', 'the session: tools/call');
    ok(!exists $res->{resultType}, 'the session\'s results have no resultType');
    $res = $t->mcp_call($sid, 'tools/call', { name => $RS, arguments => {} });
    ok(ref $res eq 'HASH' && defined $res->{code}, 'the session: an input_required tool is refused (not 2026)');
    my $list = $t->mcp_call($sid, 'tools/list');
    ok(!exists $list->{ttlMs} && !exists $list->{cacheScope}, 'the session: no caching hints');
    ok(ref $list->{tools} eq 'ARRAY' && @{ $list->{tools} }, 'the session: tools listed');
    my ($m2, $r2) = $t->mcp_request($sid, 'logging/setLevel', { level => 'info' }, id => 'lv');
    is_result($m2, {}, 'lv', 'the session: logging/setLevel');

    # 2026 header plus this session's id: served as the session (the id wins)
    $r = sl('ping', { _meta => meta() }, sid => $sid, id => 'mix');
    is_result(msg($r), {}, 'mix', '2026-07-28 header + a valid Mcp-Session-Id: served as the 2025 session');
    is($r->{headers}{'mcp-protocol-version'}, '2025-11-25', '... replying with the session\'s version');
    $r = sl('tools/list', { _meta => meta() }, sid => 'f' x 32, id => 'mix2');
    refused($r, 404, -32001, '2026-07-28 header + an unknown session id: 404, -32001');
    is($t->mcp_delete($sid)->{status}, 200, 'the session: DELETE');
    $r = sl('server/discover', { _meta => meta() });
    ok(result($r), 'stateless requests go on after the session ended');
}

# --- a reload keeps the zone, and with it the key -------------------------------------------

{
    my $tok = (result(call($RS, caps => \%EL)) // {})->{requestState} // '';
    ok($t->reload, 'nginx reloaded (same configuration)');
    my $r = call($RS, caps => \%EL, inputs => confirm(), state => $tok);
    is(text_of($r), 'state-ok: confirmed', 'a state minted before the reload opens after it (the zone\'s key survives)');
}

# --- attacks -----------------------------------------------------------------------------------------

{
    my $tok = (result(call($RS, caps => \%EL)) // {})->{requestState} // '';
    my %odd = (number => 12345, object => { a => $tok }, array => [ $tok ], null => undef, true => $TRUE);
    for my $k (sort keys %odd) {
        my $r = call($RS, caps => \%EL, inputs => confirm(), state => $odd{$k}, id => "st-$k");
        is_error(msg($r), -32602, "st-$k", "requestState $k: -32602");
    }
    for my $n (70_000, 900_000) {
        my $r = call($RS, caps => \%EL, inputs => confirm(), state => "1.9999999999." . ('A' x $n) . '.' . ('B' x 43),
                     id => "st-huge-$n");
        is_error(msg($r), -32602, "st-huge-$n", "a requestState of $n bytes: -32602");
    }
    my $r = call($RS, caps => \%EL, inputs => confirm(), state => $tok . ('A' x 1_100_000), id => 'st-2m');
    is($r->{status}, 413, 'a body over mcp_max_request_size: 413');
    like($r->{headers}{'content-type'} // '', qr{^application/json\b}, '... as JSON');
    $r = call($RS, caps => \%EL, inputs => confirm(), state => "$tok\x{263a}", id => 'st-utf8');
    is_error(msg($r), -32602, 'st-utf8', 'a requestState with a non-ASCII character: -32602');
    $r = sl('tools/call', undef, id => 'st-nul', body => '{"jsonrpc":"2.0","id":"st-nul","method":"tools/call",'
        . '"params":{"name":"' . $RS . '","arguments":{},"requestState":"' . $tok . '\u0000x",'
        . '"inputResponses":{"confirm":{"action":"accept","content":{"ok":true}}},'
        . '"_meta":' . McpTest::encode_json(meta(caps => \%EL)) . '}}', headers => { 'Mcp-Name' => $RS });
    ok($r->{status} == 400 && !result($r), 'a requestState with \u0000 and more after it: refused, not truncated');

    my %inputs = (null => undef, array => [ 1, 2 ], string => 'x', number => 7,
                  'entry a string' => { confirm => 'yes' }, 'entry an array' => { confirm => [ {} ] },
                  'entry null' => { confirm => undef });
    for my $k (sort keys %inputs) {
        $r = call($RS, caps => \%EL, inputs => $inputs{$k}, state => $tok, id => "in-$k");
        is_error(msg($r), -32602, "in-$k", "inputResponses $k: -32602");
    }
    $r = call($RS, caps => \%EL, state => $tok, id => 'in-garbage',
              inputs => { confirm => { action => [ { a => { b => [ 1, {}, undef ] } } ], content => 'x' },
                          other => { deep => [ [ [ [ { x => 1 } ] ] ] ] } });
    is((result($r) // {})->{resultType}, 'input_required', 'inputResponses with nested garbage: asked again');
    $r = call($RS, caps => \%EL, state => $tok, id => 'in-decline', inputs => { confirm => { action => 'decline' } });
    is(text_of($r), 'state-ok: not confirmed', 'a declined elicitation: not taken as accept');
    my $deep = {};
    my $c = $deep;
    $c = $c->{a} = {} for 1 .. 300;
    $r = call($RS, caps => \%EL, state => $tok, id => 'in-deep', inputs => { confirm => $deep });
    ok($r->{status} >= 400 || err($r), 'inputResponses nested 300 deep: an error, no crash');
    $r = call($RS, caps => \%EL, state => $tok, inputs => { map { ("k$_" => {}) } 1 .. 5000 }, id => 'in-wide');
    is((result($r) // {})->{resultType}, 'input_required', 'inputResponses with 5000 unknown keys: asked again');

    for my $k ('a string', 'an array', 'null', 'a number') {
        my $v = { 'a string' => 'x', 'an array' => [ meta() ], 'null' => undef, 'a number' => 1 }->{$k};
        refused(sl('tools/list', { _meta => $v }, id => "meta-$k"), 400, -32602, "_meta $k: 400, -32602");
    }
    refused(sl('tools/list', undef, id => 'no-params'), 400, -32602, 'no params: 400, -32602');
    refused(sl('tools/list', [ 1 ], id => 'params-array'), 400, -32600, 'params an array: 400, -32600');

    # Mcp-Name: odd bytes, long values
    refused(call('test_simple_text', id => 'nm-ctl', headers => { 'Mcp-Name' => "test_simple_text\x01" }),
            400, -32020, 'Mcp-Name with a control byte: -32020');
    refused(call('test_simple_text', id => 'nm-pct', headers => { 'Mcp-Name' => 'test_simple_text%00' }),
            400, -32020, 'Mcp-Name with %00: -32020');
    $r = sl('tools/call', undef, id => 'nm-nul', headers => { 'Mcp-Name' => 'test_simple_text' },
            body => '{"jsonrpc":"2.0","id":"nm-nul","method":"tools/call","params":{"name":"test_simple_text\u0000evil",'
                  . '"arguments":{},"_meta":' . McpTest::encode_json(meta()) . '}}');
    ok($r->{status} == 400 && !result($r), 'params.name "test_simple_text\u0000evil" with Mcp-Name test_simple_text: refused');
    $r = call('test_simple_text', id => 'nm-8', headers => { 'Mcp-Name' => 'x' x 7000 });
    refused($r, 400, -32020, 'Mcp-Name of 7000 bytes: -32020');
    $r = call('y' x 7000, id => 'nm-9');
    is_error(msg($r), -32602, 'nm-9', 'a tool name of 7000 bytes in both: unknown tool');
    $r = call('test_simple_text', headers => { 'Mcp-Name' => 'x' x 20000 });
    is($r->{status}, 400, 'Mcp-Name of 20000 bytes: 400 (nginx: header too large)');
    my $raw = "POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            . "Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: $V\r\n"
            . "Mcp-Method: tools/list\r\nMcp-Name: a\x00b\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}";
    is($t->request(raw => $raw, quiet => 1)->{status}, 400, 'a NUL byte in a header: 400 (nginx)');

    # a tool that ends its stream early for the client to resume (SEP-1699):
    # a stateless client has nothing to resume with
    $r = call('test_reconnection', id => 'reconn', timeout => 4);
    my ($resp) = grep { ref $_ eq 'HASH' && ($_->{id} // '') eq 'reconn' } @{ $r->{messages} // [] };
    ok($resp && (exists $resp->{result} || exists $resp->{error}),
       'test_reconnection statelessly: the stream carries a response');

    # one member twice: which one would a proxy see?  Refused, not first- or last-wins
    my $mj = McpTest::encode_json(meta());
    my %dups = (
        method => qq({"jsonrpc":"2.0","id":"dup","method":"tools/list","method":"tools/call","params":{"name":"test_simple_text","arguments":{},"_meta":$mj}}),
        name   => qq({"jsonrpc":"2.0","id":"dup","method":"tools/call","params":{"name":"test_simple_text","name":"test_image_content","arguments":{},"_meta":$mj}}),
        params => qq({"jsonrpc":"2.0","id":"dup","method":"tools/call","params":{"name":"test_simple_text","arguments":{},"_meta":$mj},"params":{"name":"test_image_content","arguments":{},"_meta":$mj}}),
        requestState => qq({"jsonrpc":"2.0","id":"dup","method":"tools/call","params":{"name":"$RS","arguments":{},"requestState":"$tok","requestState":"x","_meta":$mj}}),
    );
    for my $k (sort keys %dups) {
        $r = sl('tools/call', undef, body => $dups{$k}, headers => { 'Mcp-Name' => 'test_simple_text' });
        ok($r->{status} == 400 && !result($r) && (err($r) // {})->{code} == -32700,
           "\"$k\" twice in the body: 400, -32700");
    }
    $r = sl('tools/call', undef, headers => { 'Mcp-Name' => 'test_simple_text' },
            body => qq({"jsonrpc":"2.0","id":"esc","method":"tools\\/call","params":{"name":"test_simple_te\\u0078t","arguments":{},"_meta":$mj}}));
    is(text_of($r), 'This is a simple text response for testing.',
       'escaped method and name in the body: compared decoded with the headers');
    # _meta's keys written with escapes are copies, not the scan's literals:
    # read as text, they mean what the plain ones mean
    my $escmeta = qq("_meta":{"io.modelcontextprotocol\\/protocol\\u0056ersion":"$V",)
                . qq("io.modelcontextprotocol/client\\u0043apabilities":{"elicitation":{}}});
    $r = sl('tools/call', undef, headers => { 'Mcp-Name' => 'test_simple_text' },
            body => qq({"jsonrpc":"2.0","id":"escm","method":"tools/call","params":{"name":"test_simple_text","arguments":{},$escmeta}}));
    is(text_of($r), 'This is a simple text response for testing.',
       '_meta keys written with escapes: read as the plain ones');
    $escmeta =~ s/"\Q$V\E"/"2025-11-25"/;
    $r = sl('tools/call', undef, headers => { 'Mcp-Name' => 'test_simple_text' },
            body => qq({"jsonrpc":"2.0","id":"escv","method":"tools/call","params":{"name":"test_simple_text","arguments":{},$escmeta}}));
    is((err($r) // {})->{code}, -32020,
       'an escaped protocolVersion key that names another version: -32020');

    # notifications and responses have no place here
    $r = sl('notifications/initialized', undef,
            body => { jsonrpc => '2.0', method => 'notifications/initialized', params => { _meta => meta() } });
    is_rpc_error_body($r, 400, -32600, undef, 'a notification POSTed statelessly: 400, -32600, id null');
    $r = sl('x', undef, body => { jsonrpc => '2.0', id => 'resp-1', result => {} });
    is_rpc_error_body($r, 400, -32600, 'resp-1', 'a response POSTed statelessly: 400, -32600');
    $r = sl('x', undef, body => { jsonrpc => '2.0', id => 'resp-2', error => { code => 1, message => 'm' } });
    is_rpc_error_body($r, 400, -32600, 'resp-2', 'an error response POSTed statelessly: 400, -32600');

    # the version header: duplicates, unknown + batch
    $r = sl('tools/list', { _meta => meta() }, id => 'dupv2',
            headers => { 'MCP-Protocol-Version' => [ '2025-11-25', $V ] });
    ok($r->{status} == 400 && !result($r), 'MCP-Protocol-Version twice, 2025 first: refused');
    $r = sl('tools/list', { _meta => meta() }, id => 'dupv',
            headers => { 'MCP-Protocol-Version' => [ $V, '2025-11-25' ] });
    is($r->{status}, 400, 'MCP-Protocol-Version twice with different values: 400');
    is((err($r) // {})->{code}, -32020, '... -32020');
    $r = sl('server/discover', undef, headers => { 'MCP-Protocol-Version' => 'v9' },
            body => [ { jsonrpc => '2.0', id => 1, method => 'server/discover', params => { _meta => meta(version => 'v9') } } ]);
    is_rpc_error_body($r, 400, -32022, undef, 'an unknown version with a batch: -32022');
    my $srv = result(sl('server/discover', { _meta => meta() }));
    ok($srv, 'after the attacks: server/discover still answers');
}

# --- clients that vanish mid-stream, 200 times; the zone must not fill up ----------------------

# A tiny zone holds about 100 sessions: a stateless stream that left its
# carrier session behind would push the 2025 session out (an [warn] line)
# within 200 rounds.
{
    my ($sid) = $t->mcp_initialize(path => '/tiny');
    my $mark = $t->log_mark;
    my ($started, $t0) = (0, time);
    for my $i (1 .. 200) {
        my %h = ('MCP-Protocol-Version' => $V, 'Mcp-Method' => 'tools/call',
                 'Mcp-Name' => 'test_tool_with_progress', 'X-Tag' => "gone-$i");
        my $body = { jsonrpc => '2.0', id => "gone-$i", method => 'tools/call',
                     params => { name => 'test_tool_with_progress', arguments => {},
                                 _meta => meta(extra => { progressToken => "g$i" }) } };
        if ($i % 4 == 0) {
            # gone before the reply: the request is written, the socket closed
            my $s = $t->connect;
            my $json = McpTest::encode_json($body);
            my $req = "POST /tiny HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                    . "Accept: application/json, text/event-stream\r\n"
                    . join('', map { "$_: $h{$_}\r\n" } sort keys %h)
                    . 'Content-Length: ' . length($json) . "\r\n\r\n$json";
            syswrite($s, $req) if $s;
            close $s if $s;
        }
        else {
            my $s = $t->mcp_post(undef, $body, stream => 1, path => '/tiny', protocol_version => undef,
                                 headers => \%h, quiet => 1);
            my $ev = $s->next_event(3);
            $ev = $s->next_event(3) if $i % 4 >= 2;    # after the first progress event
            $started++ if $s->status == 200 && $ev;
            $s->close;
        }
        sleep 0.15 if $i % 20 == 0;    # no more than ~20 calls in flight at once
    }
    ok($started >= 140, "150 streams opened and dropped ($started started)");
    # the dropped calls end within their 100 ms
    sleep 0.5;
    my $r = call('test_tool_with_progress', path => '/tiny', extra => { progressToken => 'after' });
    is((sse_messages($r) // [ {} ])->[-1]{result}{resultType}, 'complete',
       'after 200 dropped clients: a stateless stream runs to its end');
    my $list = $t->mcp_call($sid, 'tools/list', undef, path => '/tiny');
    ok(ref $list eq 'HASH' && ref $list->{tools} eq 'ARRAY',
       'the 2025 session made before them is still in the tiny zone');
    my $since = $t->log_since($mark);
    unlike($since, qr/is full, evicted|at its quota/, 'no eviction in the zone: no carrier session was left behind');
    unlike($since, qr/\[(?:alert|crit|emerg)\]/, 'no [alert], [crit] or [emerg]');
    my @s = map { scalar $t->mcp_initialize(path => '/tiny', skip_initialized => 1) } 1 .. 3;
    is(scalar(grep { defined && /^[0-9a-f]{32}$/ } @s), 3, 'new sessions in the tiny zone');
    # the same through the gateway, fewer times
    for my $i (1 .. 20) {
        my $s = sl('tools/call', { name => 'test_tool_with_progress', arguments => {},
                                   _meta => meta(extra => { progressToken => "gg$i" }) }, path => '/gw', stream => 1);
        $s->next_event(3);
        $s->close;
    }
    sleep 0.5;
    $r = call('test_tool_with_progress', path => '/gw', extra => { progressToken => 'gw-after' });
    is((sse_messages($r) // [ {} ])->[-1]{result}{resultType}, 'complete',
       'after 20 clients dropped through the gateway: a stream through it completes');
}

# --- bugs that need their own instance: client input makes [error] lines -------------------------

{
    my $b = McpTest->new(
        http   => 'mcp_session_zone zone=quota:1m per_client=$binary_remote_addr:2;',
        server => <<'NGX')->start;
        client_body_buffer_size 2m;
        location = /mcp   { mcp on; mcp_builtin everything; }
        location = /quota { mcp on; mcp_session quota; mcp_builtin everything; }
NGX
    $b->expect_log_error(qr/mcp: Internal error \(code -32603/);

    # the multi-round tool keeps the name in its state: a long name makes a
    # state too large to seal
    my $r1 = call($MR, caps => \%EL, t => $b);
    my $mark = $b->log_mark;
    my $r = call($MR, caps => \%EL, t => $b, state => (result($r1) // {})->{requestState}, id => 'big-name',
                 inputs => { step1 => { action => 'accept', content => { name => 'N' x 60_000 } } });
    ok(msg($r), 'a 60000-byte name in round 1: an answer');
    unlike($b->log_since($mark), qr/\[error\]/, 'a 60000-byte name: no [error] line in error.log');
    isnt((err($r) // {})->{code}, -32603, '... and not -32603 Internal error for client input');

    # concurrent stateless streams of one client beyond per_client
    my @s = map {
        sl('tools/call', { name => 'test_tool_with_progress', arguments => {},
                           _meta => meta(extra => { progressToken => "q$_" }) },
           t => $b, path => '/quota', stream => 1)
    } 1 .. 4;
    my @status;
    for my $s (@s) {
        my @ev = $s->read_all(3);
        my $body = $s->{body} // '';
        push @status, $body =~ /"resultType":"complete"/ ? 'complete'
                    : $body =~ /"code":(-?\d+)/ ? "$s->{status}/$1" : "$s->{status}/?";
    }
    is(scalar(grep { $_ eq 'complete' } @status), 2, 'per_client 2: two concurrent streams complete (@status)');
    my @over = grep { $_ ne 'complete' } @status;
    ok(@over && !grep({ !m{^503/} } @over), 'the streams over the quota: 503');
    unlike($b->log_since($mark), qr/\[error\]/, '... and no [error] line');
    $b->stop;
}

# $mcp_client_name of a stateless request, in a response header and an
# access log: the clientInfo name it points to must still be there.
{
    my $u = McpTest->new(
        ports => 2,
        http  => join("\n", q{log_format cn '$mcp_client_name|$mcp_method|$mcp_tool';},
                      'mcp_session_zone zone=up2:1m;', <<'NGX'),
    server {
        listen 127.0.0.1:%%PORT2%%;
        location = /mcp { mcp on; mcp_session up2; mcp_builtin everything; }
    }
NGX
        server => <<'NGX')->start;
        access_log %%PREFIX%%/logs/cn.log cn;
        location = /mcp { mcp on; mcp_builtin everything; add_header X-Client $mcp_client_name always; }
        location = /gw  { mcp_pass http://127.0.0.1:%%PORT2%%/mcp; add_header X-Client $mcp_client_name always; }
NGX
    my $name = 'client-t63-' . ('n' x 30);
    my $m = meta(extra => { "${P}clientInfo" => { name => $name, version => '1' } });
    my ($sid, undef, $ir) = $u->mcp_initialize(client_info => { name => "init-$name", version => '1' });
    is($ir->{headers}{'x-client'}, "init-$name", '$mcp_client_name of a 2025 initialize');
    my $r = sl('tools/call', { name => 'test_simple_text', arguments => {}, _meta => $m }, t => $u, path => '/gw',
               tag => 'gw');
    is($r->{headers}{'x-client'}, $name, '$mcp_client_name of a stateless request through mcp_pass');
    my @got;
    for my $req ([ 'tools/call', { name => 'test_simple_text', arguments => {}, _meta => $m } ],
                 [ 'tools/list', { _meta => $m } ],
                 [ 'tools/call', { name => 'test_missing_capability', arguments => {}, _meta => $m } ]) {
        $r = sl(@$req, t => $u);
        push @got, $r->{headers}{'x-client'} // '(none)';
        ok($got[-1] eq $name, "X-Client: \$mcp_client_name of a stateless $req->[0]")
            or diag('got X-Client: ' . printable($got[-1]));
    }
    my $log = '';
    my $until = time + 3;
    while (time < $until) {
        $log = McpTest::_slurp($u->prefix . '/logs/cn.log') // '';
        last if (() = $log =~ /\n/g) >= 6;
        sleep 0.05;
    }
    my @names = map { (split /\|/)[0] } grep { /\|tools\// } split /\n/, $log;
    ok(@names >= 4 && !grep({ $_ ne $name && $_ ne "init-$name" } @names),
       'the access log: the client names as sent') or diag(printable(join ' ', @names));
    # a shutdown hang, a crash or leftover workers, the error log and (a
    # sanitizer build sees freed memory being read) sanitizer reports
    $u->stop;
}

my $mark = $t->log_mark;
call('test_logging_tool');
unlike($t->log_since($mark), qr/no room in the zone/, 'no "no room in the zone" with a nearly empty zone');

# --- (8) error.log: quiet, and no requestState in it ---------------------------------------------

my $LIFECYCLE = join '|', map { quotemeta } 'using the "epoll" event method', 'nginx/', 'OS: ',
    'getrlimit', 'built by', 'start worker process', 'gracefully shutting down', 'exiting',
    'reconfiguring';
$LIFECYCLE = qr/\[notice\] \d+#\d+: (?:$LIFECYCLE|signal \d+ \(SIG\w+\) received|exit$|worker process \d+ exited with code 0$)/;
$t->stop;
my @unasked = grep { /\[(?:warn|error|crit|alert|emerg)\]/ || (/\[notice\]/ && !/$LIFECYCLE/) }
              split /\n/, $t->error_log;
is(scalar @unasked, 0, 'error.log: nothing above [info] but nginx\'s own start and stop notices')
    or diag(join "\n", @unasked[0 .. ($#unasked > 20 ? 20 : $#unasked)]);
my $log = $t->error_log . $t->access_log . McpTest::_slurp($t->prefix . '/logs/pids.log');
ok(scalar(@TOKENS) > 20, scalar(@TOKENS) . ' requestStates handed out in this test');
my @in_log = grep { index($log, $_) >= 0 || index($log, (split /\./)[3] // "\0") >= 0 } @TOKENS;
is(scalar @in_log, 0, 'no requestState (nor its MAC) in error.log or the access logs');

done_testing;
