# Authorization once a caller is known: capability scopes, per-tool scopes
# (403 insufficient_scope for step-up; absent from tools/list), roles with
# inheritance, sessions bound to their caller, API keys.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use McpTest;
use McpAssert;
use McpJwt;

my $rsa = McpJwt->new_key(type => 'RSA', kid => 'k1');

my $t = McpTest->new(server => <<'NGX');
        mcp_auth_resource http://127.0.0.1:%%PORT%%/mcp;
        mcp_auth_jwt_issuer https://issuer.test https://other-issuer.test;
        mcp_auth_jwt_key_file %%PREFIX%%/conf/jwks.json;
        mcp_auth_api_keys %%PREFIX%%/conf/api_keys;
        mcp_auth_scopes_supported mcp:tools mcp:resources mcp:prompts;
        mcp_auth_tool_scope test_error_handling mcp:tools:errors;

        location = /mcp { mcp on; mcp_builtin everything; mcp_auth_jwt "MCP"; }
NGX
$t->write_file('conf/jwks.json', McpJwt::jwks($rsa));
$t->write_file('conf/api_keys',
    "# sha256(key) subject [role=...] [scope ...]\n"
    . McpJwt::api_key_line('sk_test_service_right', 'billing-service', 'role=service')
    . McpJwt::api_key_line('sk_test_reader', 'report-bot', 'mcp:resources') . "\n");
$t->start;

my $port     = $t->port;
my $resource = "http://127.0.0.1:$port/mcp";

sub token { $rsa->token(claims => McpJwt::claims(aud => $resource, @_)) }

sub call {
    my ($sid, $tok, $method, $params, %o) = @_;
    return $t->mcp_request($sid, $method, $params, quiet => 1,
                           headers => { Authorization => "Bearer $tok", %{ $o{headers} // {} } });
}

sub forbidden {
    my ($r, $scope, $name) = @_;
    is_rpc_error_body($r, 403, -32600, $r->{json} ? $r->{json}{id} : undef,
                      "$name: 403 with a JSON-RPC error");
    my $c = McpJwt::challenge($r->{headers}{'www-authenticate'}) // {};
    is($c->{error}, 'insufficient_scope', "$name: error=insufficient_scope");
    is($c->{scope}, $scope, "$name: names the scope to ask for");
    like($c->{resource_metadata} // '', qr{/\.well-known/oauth-protected-resource/mcp$},
         "$name: resource_metadata");
}

sub tool_names { [ map { $_->{name} } @{ $_[0]{result}{tools} // [] } ] }

# --- capability scopes ----------------------------------------------------------

{
    my $tok = token(scope => 'mcp:resources');
    my ($sid) = McpJwt::initialize($t, $tok);
    ok($sid, 'a token with mcp:resources only: initialize works');
    my ($msg, $r) = call($sid, $tok, 'resources/read', { uri => 'test://static-text' });
    ok($msg && $msg->{result}, 'mcp:resources: resources/read works');
    ($msg, $r) = call($sid, $tok, 'tools/call', { name => 'test_simple_text' });
    forbidden($r, 'mcp:tools', 'tools/call without mcp:tools');
    ($msg, $r) = call($sid, $tok, 'tools/list', {});
    forbidden($r, 'mcp:tools', 'tools/list without mcp:tools');
    ($msg, $r) = call($sid, $tok, 'prompts/get', { name => 'test_simple_prompt' });
    forbidden($r, 'mcp:prompts', 'prompts/get without mcp:prompts');
    ($msg, $r) = call($sid, $tok, 'ping', {});
    is($r->{status}, 200, 'ping needs no scope');

    # step-up: a new token with more scopes, same subject, same session
    my $more = token(scope => 'mcp:resources mcp:tools');
    ($msg, $r) = call($sid, $more, 'tools/call', { name => 'test_simple_text' });
    ok($msg && $msg->{result} && !$msg->{result}{isError}, 'after step-up: tools/call works in the same session');

    # in a 2025-03-26 batch a refusal is that message's error
    my $tok25 = token(scope => 'mcp:resources');
    my $r0 = $t->mcp_post(undef, { jsonrpc => '2.0', id => 0, method => 'initialize',
        params => { protocolVersion => '2025-03-26', capabilities => {},
                    clientInfo => { name => 'b', version => '1' } } },
        headers => { Authorization => "Bearer $tok25" });
    my $sid25 = $r0->{headers}{'mcp-session-id'};
    my $b = $t->mcp_post($sid25, [ { jsonrpc => '2.0', id => 1, method => 'tools/list' },
                                   { jsonrpc => '2.0', id => 2, method => 'resources/list' } ],
                         protocol_version => '2025-03-26',
                         headers => { Authorization => "Bearer $tok25" });
    is($b->{status}, 200, 'batch: 200');
    my %by = map { $_->{id} => $_ } @{ $b->{messages} };
    is($by{1}{error}{code}, -32600, 'batch: tools/list refused with a JSON-RPC error');
    like($by{1}{error}{message} // '', qr/insufficient scope.*mcp:tools/, 'batch: ... naming the scope');
    ok($by{2}{result}{resources}, 'batch: resources/list answered');
}

# --- per-tool scopes and tools/list filtering --------------------------------------

{
    my $tok = token(scope => 'mcp:tools');
    my ($sid) = McpJwt::initialize($t, $tok);
    my ($msg, $r) = call($sid, $tok, 'tools/list', {});
    my $names = tool_names($msg);
    ok(scalar(@$names) > 1 && !grep({ $_ eq 'test_error_handling' } @$names),
       'tools/list omits the tool that needs mcp:tools:errors');
    ($msg, $r) = call($sid, $tok, 'tools/call', { name => 'test_error_handling' });
    forbidden($r, 'mcp:tools:errors', 'calling the scoped tool without its scope');

    my $tok2 = token(scope => 'mcp:tools mcp:tools:errors');
    ($msg, $r) = call($sid, $tok2, 'tools/list', {});
    ok(grep({ $_ eq 'test_error_handling' } @{ tool_names($msg) }),
       'with mcp:tools:errors the tool is listed');
    ($msg, $r) = call($sid, $tok2, 'tools/call', { name => 'test_error_handling' });
    ok($msg && $msg->{result} && $msg->{result}{isError}, '... and callable');
}

# --- roles --------------------------------------------------------------------------

{
    my %want = (    # role => [tools, resources, prompts, scoped tool]
        admin     => [1, 1, 1, 1],
        developer => [1, 1, 1, 0],
        viewer    => [0, 1, 1, 0],
        service   => [1, 0, 0, 0],
        nobody    => [0, 0, 0, 0],
    );
    for my $role (sort keys %want) {
        my $tok = token(scope => undef, role => $role);
        my ($sid) = McpJwt::initialize($t, $tok);
        my @got;
        for my $req (['tools/call', { name => 'test_simple_text' }],
                     ['resources/read', { uri => 'test://static-text' }],
                     ['prompts/get', { name => 'test_simple_prompt' }],
                     ['tools/call', { name => 'test_error_handling' }])
        {
            my ($msg, $r) = call($sid, $tok, @$req);
            push @got, ($r->{status} == 200 && $msg && $msg->{result}) ? 1 : 0;
        }
        is_deeply(\@got, $want{$role}, "role $role: tools, resources, prompts, scoped tool");
    }

    # the strongest of several roles; an unknown role grants nothing
    my $tok = token(scope => undef, role => ['viewer', 'developer']);
    my ($sid) = McpJwt::initialize($t, $tok);
    my ($msg, $r) = call($sid, $tok, 'tools/call', { name => 'test_simple_text' });
    is($r->{status}, 200, 'roles [viewer, developer]: developer wins');
}

# --- sessions bound to subject and issuer --------------------------------------------

{
    my $alice = token(sub => 'alice', scope => 'mcp:tools');
    my $bob   = token(sub => 'bob', scope => 'mcp:tools');
    my $eve   = token(sub => 'alice', iss => 'https://other-issuer.test', scope => 'mcp:tools');
    my ($sid) = McpJwt::initialize($t, $alice);
    ok($sid, 'alice has a session');

    my ($msg, $r) = call($sid, $bob, 'tools/list', {});
    is_rpc_error_body($r, 404, -32001, $r->{json} ? $r->{json}{id} : undef,
                      "bob with alice's session id: 404");
    ($msg, $r) = call($sid, $eve, 'tools/list', {});
    is($r->{status}, 404, "same subject from another issuer: 404");
    my $g = $t->mcp_get_stream($sid, headers => { Authorization => "Bearer $bob" });
    is($g->status, 404, "bob's GET stream on alice's session: 404");
    $g->close;
    my $d = $t->mcp_delete($sid, headers => { Authorization => "Bearer $bob" });
    is($d->{status}, 404, "bob cannot DELETE alice's session");
    ($msg, $r) = call($sid, $alice, 'tools/list', {});
    is($r->{status}, 200, 'alice still has her session');
    ($msg, $r) = call($sid, token(sub => 'alice', scope => 'mcp:tools', jti => 'fresh'),
                      'tools/list', {});
    is($r->{status}, 200, "alice's next token works in the same session");
}

# --- API keys ------------------------------------------------------------------------

{
    my $hdr = { Authorization => 'Bearer sk_test_service_right' };
    my ($sid) = McpJwt::initialize($t, undef, headers => $hdr);
    ok($sid, 'right API key: initialize works');
    my $r = $t->mcp_post($sid, { jsonrpc => '2.0', id => 'k', method => 'tools/call',
                                 params => { name => 'test_simple_text' } }, headers => $hdr);
    ok($r->{status} == 200 && $r->{json}{result}, 'right API key (role service): tools/call works');
    $r = $t->mcp_post($sid, { jsonrpc => '2.0', id => 'k2', method => 'resources/list' },
                      headers => $hdr);
    is($r->{status}, 403, 'role service: resources/list is 403');

    my ($sid2) = McpJwt::initialize($t, undef, headers => { 'X-API-Key' => 'sk_test_reader' });
    ok($sid2, 'X-API-Key header: works too');
    $r = $t->mcp_post($sid2, { jsonrpc => '2.0', id => 'k3', method => 'resources/list' },
                      headers => { 'X-API-Key' => 'sk_test_reader' });
    is($r->{status}, 200, 'API key with mcp:resources: resources/list works');
    $r = $t->mcp_post($sid2, { jsonrpc => '2.0', id => 'k4', method => 'tools/list' },
                      headers => { Authorization => 'Bearer sk_test_service_right' });
    is($r->{status}, 404, "another key's session: 404");

    for my $bad ('sk_test_service_wrong', 'sk_test_service_righ', '') {
        my $r = $t->mcp_post(undef, { jsonrpc => '2.0', id => 'x', method => 'tools/list' },
                             headers => { 'X-API-Key' => $bad });
        is($r->{status}, 401, "wrong API key '$bad': 401");
        is_rpc_error_body($r, 401, -32600, undef, "wrong API key '$bad': JSON-RPC error body");
    }
    my $file = McpTest::_slurp($t->prefix . '/conf/api_keys');
    unlike($file, qr/sk_test/, 'the key file holds no key');
}

$t->stop;
unlike($t->error_log, qr/sk_test_/, 'no API key in the error log');

# API keys that no block with mcp_auth_jwt on inherits check nothing:
# nginx -t says so (found by an attack helper whose config trusted them),
# naming the directive's line
{
    my $k = McpTest->new(server => <<'NGX');
        location = /mcp { mcp on; mcp_auth_api_keys %%PREFIX%%/conf/api_keys; }
NGX
    $k->write_file('conf/api_keys', ('0' x 64) . " someone\n");
    my ($rc, $out) = $k->nginx_t;
    is($rc, 0, 'mcp_auth_api_keys without mcp_auth_jwt: nginx -t passes') or diag($out);
    like($out, qr/\[warn\].*"mcp_auth_api_keys" in \S+nginx\.conf:\d+ without "mcp_auth_jwt" in any block that inherits them/,
         '... with a warning that nothing is checked, and where');
}

# the keys of a server whose location turns mcp_auth_jwt on are checked
# there: no warning, although the server block itself has it off (this
# file's own configuration, which warned before)
{
    my ($rc, $out) = $t->nginx_t;
    is($rc, 0, 'server-level keys, mcp_auth_jwt in the location: nginx -t passes') or diag($out);
    unlike($out, qr/mcp_auth_api_keys/, '... without a warning about the keys');
}

done_testing;
