# OAuth 2.1 resource server: bearer JWT validation (every algorithm, every
# way a token can be wrong), the 401/400 challenges, and the RFC 9728
# protected resource metadata.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use McpTest;
use McpAssert;
use McpJwt;

my %key = (
    rsa   => McpJwt->new_key(type => 'RSA', kid => 'rsa-1'),
    p256  => McpJwt->new_key(type => 'P-256', kid => 'ec-256'),
    p384  => McpJwt->new_key(type => 'P-384', kid => 'ec-384'),
    ed    => McpJwt->new_key(type => 'Ed25519', kid => 'ed-1'),
    other => McpJwt->new_key(type => 'RSA', kid => 'rsa-1'),    # same kid, not published
);

my $t = McpJwt::resource_server([ @key{qw(rsa p256 p384 ed)} ], server => <<'NGX');
        location = /.well-known/oauth-protected-resource { mcp_auth_metadata; }
NGX

my $port     = $t->port;
my $resource = "http://127.0.0.1:$port/mcp";
my $metadata = "http://127.0.0.1:$port/.well-known/oauth-protected-resource/mcp";

sub claims { McpJwt::claims(aud => $resource, scope => 'mcp:tools mcp:resources mcp:prompts', @_) }

sub ping {
    my ($token, %o) = @_;
    return $t->mcp_post(undef, { jsonrpc => '2.0', id => 'p', method => 'tools/list' },
        headers => { (defined $token ? (Authorization => "Bearer $token") : ()),
                     %{ $o{headers} // {} } },
        path => $o{path});
}

# A refusal: status, JSON-RPC error body, and the challenge.
sub refused {
    my ($r, $status, $error, $name) = @_;
    is_rpc_error_body($r, $status, -32600, undef, "$name: $status with a JSON-RPC error body");
    my $c = McpJwt::challenge($r->{headers}{'www-authenticate'});
    ok($c, "$name: WWW-Authenticate: Bearer") or return;
    is($c->{resource_metadata}, $metadata, "$name: challenge points to the metadata");
    is($c->{error}, $error, "$name: error=" . ($error // 'none'));
    return $c;
}

# --- metadata ---------------------------------------------------------------

for my $path ('/.well-known/oauth-protected-resource/mcp', '/.well-known/oauth-protected-resource') {
    my $r = $t->request(path => $path);
    is($r->{status}, 200, "$path: 200 without a token");
    like($r->{headers}{'content-type'}, qr{^application/json}, "$path: JSON");
    my $doc = eval { McpTest::decode_json($r->{body}) } // {};
    is($doc->{resource}, $resource, "$path: resource is the canonical URI");
    is_deeply($doc->{authorization_servers}, ['https://issuer.test'], "$path: authorization_servers");
    is_deeply($doc->{scopes_supported}, [qw(mcp:tools mcp:resources mcp:prompts)],
              "$path: scopes_supported");
    is_deeply($doc->{bearer_methods_supported}, ['header'], "$path: bearer in the header only");
}

# --- no token, a token in the query ------------------------------------------

{
    my $c = refused(ping(undef), 401, undef, 'no token');
    is($c->{scope}, 'mcp:tools mcp:resources mcp:prompts', 'no token: the scopes to ask for');
    my $r = $t->mcp_post(undef, { jsonrpc => '2.0', id => 1, method => 'initialize',
                                  params => { protocolVersion => '2025-11-25', capabilities => {},
                                              clientInfo => { name => 'x', version => '1' } } });
    is($r->{status}, 401, 'initialize without a token: 401');
    ok(!defined $r->{headers}{'mcp-session-id'}, '... and no session');
    my $g = $t->request(method => 'GET', path => '/mcp', headers => { Accept => 'text/event-stream' });
    is($g->{status}, 401, 'GET without a token: 401');
    my $d = $t->request(method => 'DELETE', path => '/mcp', headers => { 'Mcp-Session-Id' => 'x' x 32 });
    is($d->{status}, 401, 'DELETE without a token: 401');

    $r = ping('not-a-token');
    refused($r, 401, 'invalid_token', 'garbage token');
    $r = ping(undef, headers => { Authorization => 'Basic YWxpY2U6c2VjcmV0' });
    refused($r, 401, undef, 'Basic credentials');

    my $tok = $key{rsa}->token(claims => claims());
    $r = ping(undef, path => "/mcp?access_token=$tok");
    refused($r, 400, 'invalid_request', 'token in the query string');
    $r = ping($tok, path => "/mcp?x=1&access_token=$tok");
    refused($r, 400, 'invalid_request', 'token in the query string, with a header too');
}

# --- valid tokens, every algorithm ---------------------------------------------

for my $case ([rsa => 'RS256'], [rsa => 'RS384'], [rsa => 'RS512'], [rsa => 'PS256'],
              [rsa => 'PS384'], [rsa => 'PS512'], [p256 => 'ES256'], [p384 => 'ES384'],
              [ed => 'EdDSA'])
{
    my ($k, $alg) = @$case;
    my $tok = $key{$k}->token(alg => $alg, claims => claims());
    my $r = ping($tok);
    ok($r->{status} == 400 && $r->{json} && $r->{json}{error}
       && $r->{json}{error}{message} =~ /Mcp-Session-Id/,
       "$alg: accepted (the request goes on to the session check)")
        or diag(McpTest::explain_response($r));
}

{
    my $tok = $key{rsa}->token(claims => claims());
    my ($sid, $init) = McpJwt::initialize($t, $tok);
    ok($sid, 'RS256 token: initialize creates a session') or diag(McpTest::explain_response($init));
    my ($res) = $t->mcp_call($sid, 'tools/call', { name => 'test_simple_text' },
                             headers => { Authorization => "Bearer $tok" });
    is($res->{content}[0]{text}, 'This is a simple text response for testing.',
       'RS256 token: tools/call works');
    my $d = $t->mcp_delete($sid, headers => { Authorization => "Bearer $tok" });
    is($d->{status}, 200, 'RS256 token: DELETE ends the session');

    # aud may be an array; leeway covers a just-expired token
    ok(McpJwt::initialize($t, $key{rsa}->token(claims => claims(aud => ['https://other.test', $resource]))),
       'aud as an array holding the resource: accepted');
    ok(McpJwt::initialize($t, $key{rsa}->token(claims => claims(exp => time - 30))),
       'expired 30 s ago, within the 60 s leeway: accepted');
    ok(McpJwt::initialize($t, $key{rsa}->token(claims => claims(nbf => time + 30))),
       'valid in 30 s, within the leeway: accepted');
    ok(McpJwt::initialize($t, $key{rsa}->token(header => { kid => undef }, claims => claims())),
       'no kid: the key is found by trying the set');
}

# --- invalid tokens ------------------------------------------------------------

my $good = $key{rsa}->token(claims => claims());
my ($h, $p, $s) = split /\./, $good;
my $flipped = $s;
substr($flipped, 10, 1) = substr($flipped, 10, 1) eq 'A' ? 'B' : 'A';

my @bad = (
    [ 'expired', $key{rsa}->token(claims => claims(exp => time - 3600)), qr/expired/ ],
    [ 'not yet valid', $key{rsa}->token(claims => claims(nbf => time + 3600)), qr/not valid yet/ ],
    [ 'no exp', $key{rsa}->token(claims => claims(exp => undef)), qr/expiry/ ],
    [ 'wrong issuer', $key{rsa}->token(claims => claims(iss => 'https://evil.test')), qr/issuer/ ],
    [ 'no issuer', $key{rsa}->token(claims => claims(iss => undef)), qr/issuer/ ],
    [ 'wrong audience', $key{rsa}->token(claims => claims(aud => 'http://127.0.0.1:1/mcp')), qr/audience/ ],
    [ 'no audience', $key{rsa}->token(claims => claims(aud => undef)), qr/audience/ ],
    [ 'no subject', $key{rsa}->token(claims => claims(sub => undef)), qr/subject/ ],
    [ 'bad signature', "$h.$p.$flipped", qr/signature/ ],
    [ 'claims changed after signing',
      "$h." . McpJwt::b64url(McpTest::encode_json(claims(sub => 'admin'))) . ".$s", qr/signature/ ],
    [ 'signed by another key with the same kid', $key{other}->token(claims => claims()), qr/signature/ ],
    [ 'alg none', $key{rsa}->token(alg => 'none', sign => 0, claims => claims()), qr/algorithm/ ],
    [ 'alg none with a kid-less header', $key{rsa}->token(alg => 'none', sign => 0,
      header => { kid => undef }, claims => claims()), qr/algorithm/ ],
    [ 'HS256 with the RSA public key as secret',
      $key{rsa}->token(alg => 'HS256', hmac_secret => $key{rsa}->public_pem, claims => claims()),
      qr/algorithm/ ],
    [ 'ES256 header on an RSA key', $key{rsa}->token(alg => 'ES256', header => { kid => 'rsa-1' },
      claims => claims(), hmac_secret => 'x' x 32), qr/signature|key/ ],
    [ 'RS256 header on an EC key', $key{p256}->token(alg => 'RS256', header => { kid => 'ec-256' },
      claims => claims(), hmac_secret => 'x'), qr/key|signature/ ],
    [ 'unknown kid', $key{rsa}->token(header => { kid => 'nope' }, claims => claims()), qr/unknown key/ ],
    [ 'truncated', substr($good, 0, 40), qr/malformed/ ],
    [ 'four parts', "$good.x", qr/malformed/ ],
    [ 'JWE-looking header', McpJwt::b64url('{"alg":"RSA-OAEP","enc":"A256GCM"}') . ".$p.$s", qr/unsupported/ ],
);

for my $case (@bad) {
    my ($name, $tok, $why) = @$case;
    my $r = ping($tok);
    my $c = refused($r, 401, 'invalid_token', $name);
    like($c->{error_description} // '', $why, "$name: says why") if $c;
}

# The refusals are client errors: logged at info, never above.
$t->stop;
unlike($t->error_log, qr/\[(error|crit|alert|emerg)\]/, 'no error-level lines for refused tokens');
# (a token sent in the query string is in nginx's own request line: one
# more reason to refuse that method)
unlike($t->error_log, qr/\Q$flipped\E/,
       'no header-borne token in the error log');

done_testing;
