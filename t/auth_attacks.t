# Attacks on authorization: tokens (alg none, alg confusion, kids, crit,
# embedded keys, part counts, Base64 variants, sizes, non-strict JSON,
# numbers, leeway edges, aud/iss/scope/role types), the Authorization
# header, key servers that fail (slow, down, 500, not JSON, huge, odd
# keys), API keys, what a refusal echoes and logs, and what a gateway
# upstream sees.
#
# Broke and fixed (each failed with the module before):
# - a key server that failed (down, 500, not JSON, a set too large) was
#   asked again by every request with a JWT until it answered, and one
#   that hung got a connection from every request made meanwhile: any
#   client could make nginx hammer it (and error_log); now, without a
#   set, one fetch a second, and the requests it cannot check get 503
#   and Retry-After (a 401 would send a client with a good token for
#   another);
# - mcp_auth_jwt_key_cache refresh=0 let every unknown kid fetch;
# - the realm, resource, supported and tool scopes went into
#   WWW-Authenticate unchecked: nginx's "\r\n" escapes split the response;
# - two X-API-Key headers: the first counted;
# - an API key file listing one key twice: only the first line counted;
#   one naming an unknown role (role=admn) gave no role, silently;
# - a multi-round requestState was bound to the subject alone: API-key
#   "alice" opened a JWT issuer's "alice"'s state;
# - (not observable here) an exp of 1e300 was converted to time_t, which
#   is undefined: a verified token is now remembered a day at most.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Time::HiRes ();
use IO::Socket::INET;
use POSIX ();
use Digest::SHA qw(hmac_sha256);
use McpTest;
use McpAssert;
use McpJwt;
use McpGateway;

my $rsa   = McpJwt->new_key(type => 'RSA',   kid => 'r1');
my $ec    = McpJwt->new_key(type => 'P-256', kid => 'e1');
my $evil  = McpJwt->new_key(type => 'RSA',   kid => 'r1');    # same kid, not published
my $other = McpJwt->new_key(type => 'RSA',   kid => 'dup');

# one location per way a key server fails, each with its own key request
my $keylocs = join '', map { <<"NGX" } qw(500 junk down slow slow2 huge odd redir);
        location = /m$_ { mcp on; mcp_builtin everything; mcp_auth_jwt "MCP";
                          mcp_auth_resource http://127.0.0.1:%%PORT%%/mcp;
                          mcp_auth_jwt_key_request /_k$_; }
NGX

my $t = McpTest->new(
    ports => 5,
    http  => <<'NGX',
    mcp_session_zone zone=gw:1m;
    mcp_session_zone zone=up:1m;
    log_format hdr 'auth=[$http_authorization] key=[$http_x_api_key] cookie=[$http_cookie]';
    large_client_header_buffers 4 32k;

    server {
        listen 127.0.0.1:%%PORT2%%;
        location = /backend {
            mcp on; mcp_session up; mcp_builtin everything;
            access_log %%PREFIX%%/logs/backend.log hdr;
        }
        location = /keys/500 { return 500; }
        location = /keys/junk { default_type application/json; return 200 "<html>not json</html>"; }
        location = /keys/redir { add_header X-Accel-Redirect /_kevil; return 200 "{}"; }
        location /keys/ { root %%PREFIX%%/html; access_log %%PREFIX%%/logs/keys.log hdr; }
    }
NGX
    server => <<'NGX' =~ s/KEYLOCS\n/$keylocs/r,
        mcp_auth_jwt_issuer https://issuer.test;
        mcp_auth_jwt_leeway 30s;
        mcp_auth_scopes_supported mcp:tools mcp:resources;

        location = /mcp {
            mcp on; mcp_builtin everything; mcp_auth_jwt "MCP";
            mcp_auth_resource http://127.0.0.1:%%PORT%%/mcp;
            mcp_auth_jwt_key_file %%PREFIX%%/conf/jwks.json;
        }
        location = /.well-known/oauth-protected-resource/mcp {
            mcp_auth_resource http://127.0.0.1:%%PORT%%/mcp;
            mcp_auth_metadata;
        }
        location = /mr {
            mcp on; mcp_builtin everything; mcp_auth_jwt "MCP";
            mcp_auth_resource http://127.0.0.1:%%PORT%%/mcp;
            mcp_auth_jwt_key_file %%PREFIX%%/conf/jwks.json;
            mcp_auth_api_keys %%PREFIX%%/conf/api_keys;
        }
        location = /ak {
            mcp on; mcp_builtin everything; mcp_auth_jwt "MCP";
            mcp_auth_resource http://127.0.0.1:%%PORT%%/ak;
            mcp_auth_api_keys %%PREFIX%%/conf/api_keys;
        }

KEYLOCS
        location = /_k500  { internal; proxy_pass http://127.0.0.1:%%PORT2%%/keys/500; }
        location = /_kjunk { internal; proxy_pass http://127.0.0.1:%%PORT2%%/keys/junk; }
        location = /_kdown { internal; proxy_pass http://127.0.0.1:%%PORT3%%/keys/down; }
        location = /_kslow { internal; proxy_pass http://127.0.0.1:%%PORT4%%/keys/slow;
                             proxy_read_timeout 1s; }
        location = /_kslow2 { internal; proxy_pass http://127.0.0.1:%%PORT5%%/keys/slow;
                              proxy_read_timeout 2s; }
        location = /_khuge { internal; proxy_pass http://127.0.0.1:%%PORT2%%/keys/huge.json; }
        location = /_kodd  { internal; proxy_pass http://127.0.0.1:%%PORT2%%/keys/odd.json; }
        location = /_kredir { internal; proxy_pass http://127.0.0.1:%%PORT2%%/keys/redir; }
        location = /_kevil { internal; proxy_pass http://127.0.0.1:%%PORT2%%/keys/evil.json; }

        mcp_session gw;
        location = /gw {
            mcp_pass http://127.0.0.1:%%PORT2%%/backend;
            mcp_auth_jwt "MCP";
            mcp_auth_resource http://127.0.0.1:%%PORT%%/mcp;
            mcp_auth_jwt_key_file %%PREFIX%%/conf/jwks.json;
        }
        location = /gwpa {
            mcp_pass http://127.0.0.1:%%PORT2%%/backend;
            mcp_pass_authorization on;
            mcp_auth_jwt "MCP";
            mcp_auth_resource http://127.0.0.1:%%PORT%%/mcp;
            mcp_auth_jwt_key_file %%PREFIX%%/conf/jwks.json;
        }
        location = /gwpt {
            mcp_pass http://127.0.0.1:%%PORT2%%/backend;
            mcp_pass_authorization on;
            mcp_auth_token_passthrough on;
            mcp_auth_jwt "MCP";
            mcp_auth_resource http://127.0.0.1:%%PORT%%/mcp;
            mcp_auth_jwt_key_file %%PREFIX%%/conf/jwks.json;
        }
NGX
);
my $slow = IO::Socket::INET->new(LocalAddr => '127.0.0.1', LocalPort => $t->port(4),
                                 Proto => 'tcp', Listen => 16, ReuseAddr => 1)
    or die "listen: $!";
my $slow2 = IO::Socket::INET->new(LocalAddr => '127.0.0.1', LocalPort => $t->port(5),
                                  Proto => 'tcp', Listen => 16, ReuseAddr => 1)
    or die "listen: $!";
$t->write_file('conf/jwks.json', McpJwt::jwks($rsa, $ec));
$t->write_file('conf/api_keys', McpJwt::api_key_line('sk_live_right_key', 'svc', 'role=developer')
                               . McpJwt::api_key_line('sk_alice_key', 'alice', 'mcp:tools'));
$t->write_file('html/keys/huge.json',
               '{"keys":[' . join(',', ('{"kty":"RSA","n":"' . ('A' x 400) . '","e":"AQAB"}') x 300)
               . ',' . McpTest::encode_json($rsa->jwk) . ']}');
$t->write_file('html/keys/odd.json', McpJwt::jwks(
    { kty => 'oct', kid => 'h1', k => McpJwt::b64url('secret') },         # a symmetric key
    $other->jwk(kid => 'dup'),                                            # a wrong key, first
    do { my $j = $rsa->jwk(kid => 'dup'); delete $j->{use}; $j },        # the right one, no use
    { %{ $ec->jwk(kid => 'noalg') } },
    { %{ $rsa->jwk(kid => 'enc') }, use => 'enc' }));
$t->write_file('html/keys/evil.json', McpJwt::jwks($evil));
$t->start;

my $port = $t->port;
my $res  = "http://127.0.0.1:$port/mcp";
my $meta = "http://127.0.0.1:$port/.well-known/oauth-protected-resource/mcp";
my @challenges;

sub tok {
    my ($key, %o) = @_;
    my $hdr = delete $o{header};
    my $alg = delete $o{alg};
    return $key->token(claims => McpJwt::claims(aud => $res, %o),
                       ($hdr ? (header => $hdr) : ()), ($alg ? (alg => $alg) : ()));
}

# a token of hand-made header and payload text, signed RS256 by $key
sub raw_tok {
    my ($hdr, $payload, $key) = @_;
    my $input = McpJwt::b64url($hdr) . '.' . McpJwt::b64url($payload);
    return "$input." . McpJwt::b64url(($key // $rsa)->sign('RS256', $input));
}

sub send_auth {
    my ($auth, %o) = @_;
    my $r = $t->mcp_post(undef, { jsonrpc => '2.0', id => 'q7', method => 'tools/list' },
                         headers => { (defined $auth ? (Authorization => $auth) : ()),
                                      %{ $o{headers} // {} } },
                         path => $o{path} // '/mcp', timeout => $o{timeout} // 5,
                         quiet => $o{quiet});
    push @challenges, $r->{headers}{'www-authenticate'} if defined $r->{headers}{'www-authenticate'};
    return $r;
}

# past authorization: the session check answers
sub accepted {
    my ($r, $name) = @_;
    ok($r->{status} == 400 && ($r->{json}{error}{message} // '') =~ /Mcp-Session-Id/, "$name: accepted")
        or diag(McpTest::explain_response($r));
}

sub refused {
    my ($r, $name, $status) = @_;
    $status //= 401;
    is_rpc_error_body($r, $status, -32600, undef, "$name: $status, a JSON-RPC error")
        or diag(McpTest::explain_response($r));
}

sub bearer { send_auth("Bearer $_[0]", @_[1 .. $#_]) }

# no key set to check the token with (the key server failed, or a fetch
# is under way): the token may be good, so 503 and Retry-After, not a
# 401 that would send its client for another token
sub unavailable {
    my ($r, $name) = @_;
    my $ok = ($r->{status} // 0) == 503 && ref(($r->{json} // {})->{error}) eq 'HASH'
             && defined $r->{headers}{'retry-after'} && !defined $r->{headers}{'www-authenticate'};
    ok($ok, "$name: 503, a JSON-RPC error, Retry-After, no challenge")
        or diag(McpTest::explain_response($r));
}

my $now = time;
my $good = tok($rsa);
accepted(bearer($good), 'a good RS256 token');

# --- algorithms ---------------------------------------------------------------------

refused(bearer(McpJwt::token(undef, alg => 'none', sign => 0, claims => McpJwt::claims(aud => $res))),
        'alg none, no signature');
refused(bearer(McpJwt::token(undef, alg => 'none', sign => 0,
                             header => { kid => 'r1' }, claims => McpJwt::claims(aud => $res))),
        'alg none naming a real kid');
refused(bearer(McpJwt::token(undef, alg => 'NONE', sign => 0, claims => McpJwt::claims(aud => $res))), 'alg NONE, no signature');
for my $secret ($rsa->public_pem, McpJwt::jwks($rsa), $rsa->jwk->{n}) {
    refused(bearer($rsa->token(alg => 'HS256', hmac_secret => $secret, claims => McpJwt::claims(aud => $res))),
            'HS256 with the RSA public key as the HMAC secret');
}
refused(bearer($ec->token(alg => 'HS256', hmac_secret => $ec->public_pem, claims => McpJwt::claims(aud => $res))),
        'HS256 with the EC public key as the HMAC secret');
refused(bearer(tok($rsa, alg => 'RS256', header => { kid => 'e1' })),
        'an RSA signature under the kid of the EC key');
refused(bearer(tok($ec, header => { alg => 'RS256' })) , 'ES256 signature labelled RS256');
refused(bearer(tok($rsa, header => { kid => 'nope' })), 'a kid that names no key');
{
    my $e = tok($ec);
    refused(bearer($e =~ s/[^.]+$/McpJwt::b64url("\0" x 64)/er), 'ES256 with r = s = 0');
    refused(bearer($e =~ s/[^.]+$/McpJwt::b64url("\0" x 65)/er), 'ES256 with a 65-byte signature');
    refused(bearer($e =~ s/[^.]+$//r), 'ES256 with no signature');
}
refused(bearer(tok($rsa, header => { kid => '../../../etc/passwd' })), 'a kid with a path');
refused(bearer(tok($rsa, header => { kid => "r1\r\nX-Evil: 1" })), 'a kid with CR LF');
refused(bearer(tok($rsa, header => { kid => "r1\0" })), 'a kid with NUL');
refused(bearer(tok($rsa, header => { kid => 7 })), 'a kid that is a number');
refused(bearer(tok($rsa, header => { crit => ['exp'] })), 'a crit header');
refused(bearer(tok($rsa, header => { crit => [] })), 'an empty crit header');
refused(bearer(tok($rsa, header => { enc => 'A128GCM' })), 'enc: a JWE header');

# embedded keys are ignored: the attacker's key signs, names itself
refused(bearer(tok($evil, header => { jwk => $evil->jwk })), 'jwk: the signer\'s own key embedded');
refused(bearer(tok($evil, header => { jku => "http://127.0.0.1:" . $t->port(2) . "/keys/odd.json" })),
        'jku pointing to a set the attacker controls');
refused(bearer(tok($evil, header => { x5u => 'http://evil.test/cert.pem', x5c => ['AAAA'] })),
        'x5u/x5c');
accepted(bearer(tok($rsa, header => { jku => 'http://evil.test/jwks', jwk => $evil->jwk })),
         'a real key\'s token with jku/jwk headers: those are ignored');

# --- shapes -------------------------------------------------------------------------

{
    my @p = split /\./, $good;
    refused(bearer("$p[0].$p[1]"), 'two parts');
    refused(bearer("$p[0].$p[1].$p[2].$p[2]"), 'four parts');
    refused(bearer("$p[0].$p[1].$p[2].$p[2].$p[2]"), 'five parts (JWE shape)');
    refused(bearer("$p[0].$p[1].$p[2]."), 'a trailing dot');
    refused(bearer(".$p[1].$p[2]"), 'an empty header part');
    my $pad = sub { my $s = shift; $s . ('=' x ((4 - length($s) % 4) % 4 || 4)) };
    refused(bearer(join '.', map { $pad->($_) } @p), 'Base64url with padding');
    refused(bearer($p[0] . '.' . $p[1] . '.' . ($p[2] =~ tr{-_}{+/}r)), 'standard Base64 alphabet');
    refused(bearer("$p[0].$p[1] .$p[2]"), 'a space inside');
    refused(bearer("$p[0].$p[1]\t.$p[2]"), 'a tab inside');
    refused(bearer("$p[0].$p[1].$p[2]\x01"), 'a control byte after the token');
    refused(bearer("$p[0].$p[1]." . substr($p[2], 0, -1)), 'a signature one character short');
}

# sizes: our limit is 16384 bytes; nginx's header buffers are 32k here
{
    my $big = tok($rsa, pad => 'x' x 11_500);
    ok(length($big) < 16384, 'a token just under the limit: ' . length($big));
    accepted(bearer($big), 'a token just under 16384 bytes');
    my $huge = tok($rsa, pad => 'x' x 12_500);
    ok(length($huge) > 16384, 'a token over the limit: ' . length($huge));
    refused(bearer($huge), 'a token over 16384 bytes');
    my $r = bearer(tok($rsa, pad => 'x' x 30_000));
    ok($r->{status} == 400 || $r->{status} == 494, 'a token over nginx\'s header buffer: nginx refuses it')
        or diag($r->{status});
}

# --- JSON that is not strict --------------------------------------------------------

{
    my $c = sub { qq("iss":"https://issuer.test","sub":"alice","aud":"$res") };
    my $h = '{"alg":"RS256","kid":"r1"}';
    accepted(bearer(raw_tok($h, '{' . $c->() . ',"exp":' . ($now + 900) . '}')), 'hand-made: accepted');
    refused(bearer(raw_tok($h, '{' . $c->() . ',"exp":' . ($now - 900) . ',"exp":' . ($now + 900) . '}')),
            'two "exp", the first expired');
    refused(bearer(raw_tok($h, '{' . $c->() . ',"exp":' . ($now + 900) . ',"exp":' . ($now - 900) . '}')),
            'two "exp", the last expired');
    refused(bearer(raw_tok('{"alg":"RS256","kid":"r1","kid":"e1"}', '{' . $c->() . ',"exp":' . ($now + 900) . '}')),
            'two "kid"');
    refused(bearer(raw_tok($h, '{' . $c->() . ',"exp":1e400}')), 'exp 1e400 (overflows a double)');
    refused(bearer(raw_tok($h, '{' . $c->() . ',"exp":-0}')), 'exp -0');
    refused(bearer(raw_tok($h, '{' . $c->() . ',"exp":' . ($now + 900) . ',"nbf":1e400}')), 'nbf 1e400');
    refused(bearer(raw_tok($h, '{' . $c->() . ',"exp":"' . ($now + 900) . '"}')), 'exp as a string');
    refused(bearer(raw_tok($h, '{' . $c->() . ',"exp":' . ($now + 900) . ',"nbf":"0"}')), 'nbf as a string');
    refused(bearer(raw_tok($h, qq({"iss":"https://issuer.test","sub":"al\xffice","aud":"$res","exp":)
                              . ($now + 900) . '}')), 'invalid UTF-8 in sub');
    refused(bearer(raw_tok($h, '{' . $c->() . ',"exp":' . ($now + 900) . "}\0")), 'a NUL after the payload');
    refused(bearer(raw_tok($h, '{' . $c->() . ',"exp":' . ($now + 900) . ',}')), 'a trailing comma');
    refused(bearer(raw_tok($h, '{' . $c->() . ',"exp":' . ($now + 900) . '} {}')), 'two JSON texts');
    refused(bearer(raw_tok($h, '[' . $c->() . ']')), 'a payload that is no object');
    refused(bearer(raw_tok("\xef\xbb\xbf$h", '{' . $c->() . ',"exp":' . ($now + 900) . '}')),
            'a byte order mark before the header');
    refused(bearer(raw_tok($h, '{' . $c->() . ',"exp":' . ($now + 900) . ',"x":' . ('[' x 3000) . (']' x 3000) . '}')),
            'a claim nested 3000 deep');
    refused(bearer(raw_tok('{"alg":"RS256","kid":"r1","x":' . ('{"a":' x 2000) . '1' . ('}' x 2000) . '}',
                           '{' . $c->() . ',"exp":' . ($now + 900) . '}')), 'a header nested 2000 deep');
    # an issuer may sign an exp far away: accepted, twice (the second from
    # the worker's cache of verified tokens, whose end is exp + leeway)
    my $far = raw_tok($h, '{' . $c->() . ',"exp":1e300}');
    accepted(bearer($far), 'exp 1e300') for 1 .. 2;
    refused(bearer(raw_tok($h, '{' . $c->() . ',"exp":' . ($now + 900) . ',"iat":1e400}')),
            'iat 1e400: a number no double holds is refused anywhere');
}

# --- claims at the edges (leeway 30s) -----------------------------------------------

accepted(bearer(tok($rsa, exp => $now - 20)), 'exp 20s ago, leeway 30s');
refused(bearer(tok($rsa, exp => $now - 45)), 'exp 45s ago, leeway 30s');
accepted(bearer(tok($rsa, nbf => $now + 20)), 'nbf in 20s, leeway 30s');
refused(bearer(tok($rsa, nbf => $now + 45)), 'nbf in 45s, leeway 30s');
accepted(bearer(tok($rsa, aud => ['http://other.test/', $res])), 'aud array with the resource');
refused(bearer(tok($rsa, aud => ['http://other.test/', "$res/"])), 'aud array without it (trailing slash)');
refused(bearer(tok($rsa, aud => [])), 'an empty aud array');
refused(bearer(tok($rsa, aud => [[$res]])), 'aud nested in an array');
refused(bearer(tok($rsa, aud => { $res => 1 })), 'aud as an object');
refused(bearer(tok($rsa, aud => undef)), 'no aud');
refused(bearer(tok($rsa, aud => uc $res)), 'aud in another case');
refused(bearer(tok($rsa, iss => 'https://issuer.test/')), 'iss with a trailing slash');
refused(bearer(tok($rsa, iss => ['https://issuer.test'])), 'iss as an array');
refused(bearer(tok($rsa, sub => 42)), 'sub as a number');
refused(bearer(tok($rsa, sub => '')), 'an empty sub');
refused(bearer(tok($rsa, exp => undef)), 'no exp');

# scopes and roles of the wrong type grant nothing
{
    my $forbidden = sub {
        my ($token, $name) = @_;
        my ($sid, $r) = McpJwt::initialize($t, $token);
        ok($sid, "$name: initialize") or return diag(McpTest::explain_response($r));
        $r = $t->mcp_post($sid, { jsonrpc => '2.0', id => 'tl', method => 'tools/list' },
                          headers => { Authorization => "Bearer $token" });
        is_rpc_error_body($r, 403, -32600, 'tl', "$name: tools/list is 403 with the request's id");
        my $c = McpJwt::challenge($r->{headers}{'www-authenticate'}) // {};
        is($c->{error}, 'insufficient_scope', "$name: insufficient_scope");
    };
    my ($sid) = McpJwt::initialize($t, tok($rsa, scope => 'mcp:tools'));
    my $r = $t->mcp_post($sid, { jsonrpc => '2.0', id => 'tl', method => 'tools/list' },
                         headers => { Authorization => 'Bearer ' . tok($rsa, scope => 'mcp:tools') });
    is($r->{status}, 200, 'scope "mcp:tools" as a string: tools/list works');
    $forbidden->(tok($rsa, scope => ['mcp:resources mcp:tools']), 'one array item "mcp:resources mcp:tools"');
    $forbidden->(tok($rsa, scope => { 'mcp:tools' => 1 }), 'scope as an object');
    $forbidden->(tok($rsa, scope => 'mcp:toolsx mcp:tool MCP:TOOLS'), 'near-miss scopes');
    $forbidden->(tok($rsa, scope => "mcp:tools\tx"), 'a scope with a tab');
    $forbidden->(tok($rsa, role => { admin => 1 }), 'role as an object');
    $forbidden->(tok($rsa, role => [['admin']]), 'role nested in an array');
    $forbidden->(tok($rsa, role => 4), 'role as a number');
    $forbidden->(tok($rsa, role => 'Admin'), 'role "Admin"');
    $forbidden->(tok($rsa, role => 'admin '), 'role "admin "');
}

# --- the Authorization header ---------------------------------------------------------

accepted(send_auth("bearer $good"), 'scheme "bearer"');
accepted(send_auth("BEARER $good"), 'scheme "BEARER"');
accepted(send_auth("Bearer    $good"), 'several spaces after the scheme');
refused(send_auth("Bearer\t$good"), 'a tab after the scheme');
refused(send_auth("Bearer"), '"Bearer" alone');
refused(send_auth("Bearer "), 'an empty token');
refused(send_auth("Bearer$good"), 'no space after the scheme');
refused(send_auth("Basic $good"), 'a JWT under Basic');
refused(send_auth("Bearer x $good"), 'a word before the token');
{
    my $r = $t->request(method => 'POST', path => '/mcp',
        headers => [ 'Content-Type' => 'application/json', Accept => 'application/json, text/event-stream',
                     Authorization => "Bearer $good", Authorization => "Bearer $good" ],
        body => '{"jsonrpc":"2.0","id":1,"method":"tools/list"}');
    is($r->{status}, 400, 'two Authorization headers: nginx refuses the request');
    $r = $t->request(method => 'POST', path => '/mcp',
        headers => [ 'Content-Type' => 'application/json', Accept => 'application/json, text/event-stream',
                     Authorization => "Bearer garbage", 'X-API-Key' => 'sk_live_right_key' ],
        body => '{"jsonrpc":"2.0","id":1,"method":"tools/list"}');
    is($r->{status}, 401, 'a bad bearer token is not rescued by an X-API-Key');
}
refused(send_auth(undef, headers => { Cookie => "access_token=$good; token=$good" }), 'a token in a cookie');
{
    my $r = $t->mcp_post(undef, { jsonrpc => '2.0', id => 1, method => 'tools/list' },
                         path => "/mcp?x=1&access_token=$good");
    refused($r, 'a token in the query string', 400);
}

# --- API keys -------------------------------------------------------------------------

{
    accepted(send_auth('Bearer sk_live_right_key', path => '/ak'), 'the right API key');
    accepted(send_auth(undef, headers => { 'X-API-Key' => 'sk_live_right_key' }, path => '/ak'),
             'the right API key in X-API-Key');
    for my $bad ('sk_live_right_ke', 'sk_live_right_keyy', 'SK_LIVE_RIGHT_KEY', 'sk_live_right_key ',
                 'sk_live right_key', "sk_live_right_key\t", 'sk_live_right_key.x') {
        refused(send_auth(undef, headers => { 'X-API-Key' => $bad }, path => '/ak'),
                "near-miss API key '$bad' (X-API-Key)") unless $bad =~ /[ \t]$/;
        refused(send_auth("Bearer $bad", path => '/ak'), "near-miss API key '$bad' (Bearer)")
            unless $bad =~ /[ \t]$/;
    }
    refused(send_auth("Bearer $good", path => '/ak'), 'a JWT where only API keys are configured');
    for my $pair ([ 'sk_wrong', 'sk_live_right_key' ], [ 'sk_live_right_key', 'sk_wrong' ]) {
        my $r = $t->request(method => 'POST', path => '/ak',
            headers => [ 'Content-Type' => 'application/json', Accept => 'application/json, text/event-stream',
                         'X-API-Key' => $pair->[0], 'X-API-Key' => $pair->[1] ],
            body => '{"jsonrpc":"2.0","id":1,"method":"tools/list"}');
        McpTest::decode_mcp_response($r);
        refused($r, "two X-API-Key headers ($pair->[0] first)", 400);
    }
    my $h = McpTest::_slurp($t->prefix . '/conf/api_keys');
    unlike($h, qr/sk_live/, 'the key file holds digests only');

    # the comparison: a digest compared with CRYPTO_memcmp, the key never
    # compared itself (read in ngx_http_mcp_auth_apikey)
    my $src = McpTest::_slurp("$McpTest::REPO_ROOT/src/auth/ngx_http_mcp_auth_access.c");
    like($src, qr/CRYPTO_memcmp\(k\[i\]\.digest, digest/, 'API keys: digests compared in constant time');
}

# a key file with bad lines: nginx -t says which line
{
    my $t2 = McpTest->new(server => <<'NGX');
        location = /mcp { mcp on; mcp_auth_jwt "MCP"; mcp_auth_resource http://x.test/mcp;
                          mcp_auth_api_keys %%PREFIX%%/conf/api_keys; }
NGX
    for my $case ([ "zz" . ('0' x 62) . " svc\n", 'not hex' ],
                  [ ('0' x 63) . " svc\n", 'a short digest' ],
                  [ ('0' x 64) . "\n", 'no subject' ],
                  [ "# c\n\n" . ('0' x 64) . "#svc\n", 'the subject commented out' ],
                  [ ('0' x 64) . " svc role=admn\n", 'a misspelt role (was no role, silently)' ],
                  [ ('0' x 64) . " svc role=Admin\n", 'a role in another case' ]) {
        $t2->write_file('conf/api_keys', $case->[0]);
        my ($rc, $out) = $t2->nginx_t;
        ok($rc != 0 && $out =~ /invalid line \d+ in API key file/, "key file, $case->[1]: nginx -t fails")
            or diag($out);
    }
    $t2->write_file('conf/api_keys', McpJwt::api_key_line('k1', 'alice') . McpJwt::api_key_line('k2', 'carol')
                                     . McpJwt::api_key_line('k1', 'bob', 'role=admin'));
    my ($drc, $dout) = $t2->nginx_t;
    ok($drc != 0 && $dout =~ /listed twice/, 'key file, one key for two subjects: nginx -t fails') or diag($dout);
    $t2->write_file('conf/api_keys', "  " . ('a' x 64) . "\tsvc  role=viewer  # comment\r\n");
    my ($rc, $out) = $t2->nginx_t;
    is($rc, 0, 'key file with tabs, CR LF and a comment: accepted') or diag($out);
}

# what goes into WWW-Authenticate from the configuration: nginx -t refuses
# a quote, a backslash, a control byte (nginx's own "\r\n" escapes made a
# realm that split the response), a space where the value is one token;
# and a key cache that any client could make fetch at every request
{
    my $t2 = McpTest->new(server => 'location = /mcp { mcp on; CONF }');
    my $base = 'mcp_auth_jwt_issuer https://i.test; mcp_auth_jwt_key_file %%PREFIX%%/conf/jwks.json;';
    $t2->write_file('conf/jwks.json', McpJwt::jwks($rsa));
    for my $case ([ 'mcp_auth_jwt "MCP\r\nX-Evil: 1"; mcp_auth_resource http://x.test/mcp;', 'a realm with CR LF' ],
                  [ 'mcp_auth_jwt "MCP\\\\"; mcp_auth_resource http://x.test/mcp;', 'a realm ending in a backslash' ],
                  [ 'mcp_auth_jwt "MCP\tx"; mcp_auth_resource http://x.test/mcp;', 'a realm with a tab' ],
                  [ 'mcp_auth_jwt MCP; mcp_auth_resource "http://x.test/m\\"cp";', 'a resource with a quote' ],
                  [ 'mcp_auth_jwt MCP; mcp_auth_resource "http://x.test/m cp";', 'a resource with a space' ],
                  [ 'mcp_auth_jwt MCP; mcp_auth_resource "http://x.test/mcp\r\nX: 1";', 'a resource with CR LF' ],
                  [ 'mcp_auth_jwt MCP; mcp_auth_resource http://x.test/mcp; mcp_auth_scopes_supported "a\r\nX: 1";',
                    'a supported scope with CR LF' ],
                  [ 'mcp_auth_jwt MCP; mcp_auth_resource http://x.test/mcp; mcp_auth_scopes_supported "a b";',
                    'a supported scope with a space' ],
                  [ 'mcp_auth_jwt MCP; mcp_auth_resource http://x.test/mcp; mcp_auth_tool_scope t "a\\"b";',
                    'a tool scope with a quote' ],
                  [ 'mcp_auth_jwt MCP; mcp_auth_resource http://x.test/mcp; mcp_auth_tool_scope t "a b";',
                    'a tool scope with a space' ],
                  # refresh=0 let every token with an unknown kid fetch the set
                  [ 'mcp_auth_jwt MCP; mcp_auth_resource http://x.test/mcp; mcp_auth_jwt_key_request /k; '
                    . 'mcp_auth_jwt_key_cache 1h refresh=0;', 'a key cache with refresh=0' ]) {
        $t2->{server} = "location = /mcp { mcp on; $base $case->[0] }";
        my ($rc, $out) = $t2->nginx_t;
        ok($rc != 0 && $out =~ /invalid/, "nginx -t refuses $case->[1]") or diag($out);
    }
    $t2->{server} = "location = /mcp { mcp on; $base mcp_auth_jwt \"My realm\"; "
                  . 'mcp_auth_resource http://x.test/mcp; mcp_auth_scopes_supported mcp:tools x.y/z; '
                  . 'mcp_auth_tool_scope t mcp:tools:admin; }';
    my ($rc, $out) = $t2->nginx_t;
    is($rc, 0, 'nginx -t takes a realm with a space, scopes of URI characters') or diag($out);
}

# --- key servers that fail ---------------------------------------------------------

sub fails_seen {
    my ($loc) = @_;
    return scalar(() = $t->error_log =~ /key request "\/_k\Q$loc\E" (?:failed|returned no valid)/g);
}

$t->expect_log_error(qr/key request "\/_k(500|junk|down|slow2?|huge)"/, qr/connect\(\) failed/,
                     qr/upstream timed out/);

for my $loc (qw(500 junk down)) {
    my $token = tok($rsa, header => { kid => "fresh-$loc" });
    unavailable(bearer($token, path => "/m$loc"), "key server $loc");
    for my $i (1 .. 6) {
        unavailable(bearer(tok($rsa, header => { kid => "k$i" }), path => "/m$loc"), "key server $loc: again $i")
            if $i == 6;
        bearer(tok($rsa, header => { kid => "k$i" }), path => "/m$loc") if $i < 6;
    }
    Time::HiRes::sleep(0.2);
    my $n = fails_seen($loc);
    ok($n >= 1 && $n <= 3, "key server $loc: 7 requests in a second or two, $n fetches (not one each)");
}

{
    my $t0 = Time::HiRes::time();
    my $r = bearer($good, path => '/mslow', timeout => 10);
    unavailable($r, 'a key server that never answers');
    ok(Time::HiRes::time() - $t0 < 5, 'the slow key server costs its timeout, no more');
    # the hold-off counts whole seconds (ngx_time()): the failure's second
    # is the Date of its answer; a request in a later second may fetch (and
    # fail again, a new failure's second).  Tried until the next request
    # is answered in the failure's second: it must be, at once (a fetch
    # waits 1 s, so a module that fetched again never would be).
    my (@tries, $same);
    for my $try (1 .. 6) {
        my $failed = $r->{headers}{date};
        last unless defined $failed;
        $t0 = Time::HiRes::time();
        my $r2 = bearer($good, path => '/mslow', timeout => 10);
        my $took = Time::HiRes::time() - $t0;
        push @tries, sprintf('%s -> %s in %.2f s', $failed, $r2->{headers}{date} // 'no Date', $took);
        if (($r2->{headers}{date} // '') eq $failed) {
            unavailable($r2, 'the slow key server again, in the failure\'s second');
            $same = $took < 0.8;
            last;
        }
        $r = $r2;
    }
    ok($same, 'right after a failed fetch (in its second), no new wait on it') or diag(join "\n", @tries);
}

# a key server that hangs, asked by requests at once: one fetch waits on
# it, the others are refused at once (no set, a fetch started this second)
{
    my @kids;
    for my $i (1 .. 4) {
        my $pid = fork // die "fork: $!";
        if (!$pid) {
            my $r = bearer($good, path => '/mslow2', timeout => 10, quiet => 1);
            POSIX::_exit($r->{status} == 503 ? 0 : 1);
        }
        push @kids, $pid;
    }
    my $bad = 0;
    for (@kids) { waitpid($_, 0); $bad++ if $? }
    is($bad, 0, 'a hanging key server, 4 requests at once: each gets a 503');
    $slow2->blocking(0);
    my $n = 0;
    $n++ while $slow2->accept;
    ok($n >= 1 && $n <= 2, "a hanging key server, 4 requests at once: $n connections to it, not 4");
}

# a set larger than subrequest_output_buffer_size (docs/directives.md: the
# set must fit) is a failed fetch: the request that fetched it gets a 503
# as for any key server that fails, and the failure counts, so the
# requests of the next second are refused with a 503 and fetch nothing
{
    my $t0 = Time::HiRes::time();
    my $refused = 0;
    for my $i (1 .. 8) {
        my $r = bearer($good, path => '/mhuge', quiet => 1);
        $refused++ if $r->{status} == 503 && ref(($r->{json} // {})->{error}) eq 'HASH';
    }
    my $secs = Time::HiRes::time() - $t0;
    Time::HiRes::sleep(0.2);
    my $n = scalar(() = $t->error_log
        =~ /key request "\/_khuge" failed: the set is larger than subrequest_output_buffer_size/g);
    is($refused, 8, 'a key set too large, 8 requests: each gets a JSON-RPC 503');
    ok($n >= 1 && $n <= int($secs) + 2,
       sprintf('the set too large was fetched %d times in %.1fs, not once a request', $n, $secs));
}

# the key server's upstream names another location's set (X-Accel-Redirect):
# never fetched, the key request fails as any other that fails
{
    my $r = bearer(tok($evil), path => '/mredir');
    unavailable($r, 'a key server that redirects to a set of its choosing');
    Time::HiRes::sleep(0.2);
    like($t->error_log, qr/a backend's reply is refused: it comes from "\/_kevil" after an internal redirect/,
         'the redirect is refused, with an [error] line');
    like($t->error_log, qr/key request "\/_kredir" failed/, '... and the key request failed');
    $t->expect_log_error(qr/a backend's reply is refused/, qr/key request "\/_kredir" failed/);
}

# the key server gets the client's headers, never its credentials
{
    my $keys = McpTest::_slurp($t->prefix . '/logs/keys.log');
    like($keys, qr/^auth=\[-\]/m, 'the key server was asked') or diag($keys);
    unlike($keys, qr/Bearer|sk_/, 'the key server never sees a token or an API key');
}

accepted(bearer(tok($rsa, header => { kid => 'dup' }), path => '/modd'),
         'duplicate kids: the key that verifies is found, use absent');
refused(bearer($rsa->token(alg => 'HS256', hmac_secret => 'secret', header => { kid => 'h1' },
                           claims => McpJwt::claims(aud => $res)), path => '/modd'),
        'an oct key in the set is no HMAC key for us');
refused(bearer(tok($rsa, header => { kid => 'noalg' }), path => '/modd'), 'a kid of an EC key, RS256');
accepted(bearer(tok($ec, header => { kid => 'noalg' }), path => '/modd'), 'a key without use/alg');
refused(bearer(tok($rsa, header => { kid => 'enc' }), path => '/modd'), 'a key with use "enc"');

# --- metadata ------------------------------------------------------------------------

{
    my $r = $t->request(method => 'GET', path => '/.well-known/oauth-protected-resource/mcp?<script>',
                        headers => { Authorization => 'Bearer "><x' });
    is($r->{status}, 200, 'metadata: 200 whatever the token');
    unlike($r->{body}, qr/script|"></, 'metadata: nothing of the request echoed');
    $r = $t->request(method => 'POST', path => '/.well-known/oauth-protected-resource/mcp', body => '{}');
    is($r->{status}, 405, 'metadata: POST is 405');
}

# --- what refusals say ----------------------------------------------------------------

{
    my $ok = 1;
    for my $c (@challenges) {
        next if $c =~ /^Bearer\ realm="MCP"(?:,\ error="(?:invalid_token|invalid_request|insufficient_scope)")?
                      (?:,\ error_description="[a-zA-Z ,]+")?
                      (?:,\ (?:resource_metadata="http:\/\/127\.0\.0\.1:\d+\/\.well-known\/oauth-protected-resource\/(?:mcp|ak)"
                             |scope="[a-z: ]+"))*$/x;
        diag("challenge: $c");
        $ok = 0;
    }
    ok($ok && @challenges > 50, scalar(@challenges) . ' challenges: only fixed text, nothing of the client\'s');
}

# --- the debug log: only nginx's own header lines hold a token ---------------

SKIP: {
    my $t3 = McpTest->new(workers => 1, log_level => 'debug', server => <<'NGX');
        location = /mcp { mcp on; mcp_builtin everything; mcp_auth_jwt "MCP";
                          mcp_auth_resource http://127.0.0.1:%%PORT%%/mcp;
                          mcp_auth_jwt_issuer https://issuer.test;
                          mcp_auth_jwt_key_file %%PREFIX%%/conf/jwks.json;
                          mcp_auth_api_keys %%PREFIX%%/conf/api_keys; }
NGX
    # without --with-debug (nginx.org's packages, most source builds)
    # nginx writes no debug line at all: there is nothing to look through
    skip 'this nginx is built without --with-debug: no debug log', 4
        unless $t3->_nginx_configure_args =~ /--with-debug\b/;
    $t3->write_file('conf/jwks.json', McpJwt::jwks($rsa));
    $t3->write_file('conf/api_keys', McpJwt::api_key_line('sk_live_right_key', 'svc', 'role=developer'));
    $t3->start;
    my $tk = $rsa->token(claims => McpJwt::claims(aud => 'http://127.0.0.1:' . $t3->port . '/mcp',
                                                  scope => 'mcp:tools'));
    my ($sid) = McpJwt::initialize($t3, $tk);
    ok($sid, 'debug log: a session');
    $t3->mcp_post($sid, { jsonrpc => '2.0', id => 1, method => 'tools/list' },
                  headers => { Authorization => "Bearer $tk" });
    $t3->mcp_post($sid, { jsonrpc => '2.0', id => 2, method => 'tools/list' },
                  headers => { Authorization => "Bearer x$tk" });
    McpJwt::initialize($t3, undef, headers => { 'X-API-Key' => 'sk_live_right_key' });
    $t3->stop;
    my $sig = (split /\./, $tk)[2];
    my @lines = grep { /\Q$sig\E|sk_live/ } split /\n/, $t3->error_log;
    ok(@lines >= 3, 'debug log: nginx\'s header lines are there');
    is_deeply([ grep { !/ http header: "(?:Authorization|X-API-Key): / } @lines ], [],
              'debug log: no other line holds the token or the key');
}

# --- a multi-round request's state is bound to the caller: issuer and subject

{
    my $RS = 'test_input_required_result_request_state';
    my $call = sub {
        my ($auth, %p) = @_;
        my $r = $t->mcp_post(undef, { jsonrpc => '2.0', id => 'mr', method => 'tools/call',
                                      params => { name => $RS, arguments => {}, %p,
                                                  _meta => { 'io.modelcontextprotocol/protocolVersion' => '2026-07-28',
                                                             'io.modelcontextprotocol/clientCapabilities'
                                                                 => { elicitation => {} } } } },
                             headers => { Authorization => "Bearer $auth", 'MCP-Protocol-Version' => '2026-07-28',
                                          'Mcp-Method' => 'tools/call', 'Mcp-Name' => $RS },
                             protocol_version => undef, path => '/mr', quiet => 1);
        my ($m) = grep { ref $_ eq 'HASH' && ($_->{id} // '') eq 'mr' } @{ $r->{messages} // [] };
        return $m // {};
    };
    my $confirm = { confirm => { action => 'accept', content => { ok => JSON::PP::true() } } };
    my $jwt_alice = tok($rsa, sub => 'alice', scope => 'mcp:tools');
    my $state = ($call->('sk_alice_key')->{result} // {})->{requestState} // '';
    ok(length $state, 'API-key alice has a requestState');
    my $m = $call->('sk_alice_key', requestState => $state, inputResponses => $confirm);
    like((($m->{result} // {})->{content} // [ {} ])->[0]{text} // '', qr/state-ok/, '... which opens for her');
    $state = ($call->('sk_alice_key')->{result} // {})->{requestState} // '';
    $m = $call->($jwt_alice, requestState => $state, inputResponses => $confirm);
    is(($m->{error} // {})->{code}, -32602,
       'the JWT issuer\'s "alice" cannot open the API key\'s alice\'s state (another issuer)')
        or diag(explain($m));
}

# --- through mcp_pass --------------------------------------------------------------

{
    my $alice = tok($rsa, sub => 'alice', scope => 'mcp:tools');
    my $bob   = tok($rsa, sub => 'bob', scope => 'mcp:tools');
    my $blog  = $t->prefix . '/logs/backend.log';
    for my $loc (qw(gw gwpa)) {
        my ($sid, $r) = McpJwt::initialize($t, $alice, path => "/$loc",
                                            headers => { 'X-API-Key' => 'sk_live_right_key', Cookie => 'c=1' });
        ok($sid, "/$loc: alice has a session") or diag(McpTest::explain_response($r));
        $r = $t->mcp_post($sid, { jsonrpc => '2.0', id => 'tl', method => 'tools/list' }, path => "/$loc",
                          headers => { Authorization => "Bearer $alice" });
        is($r->{status}, 200, "/$loc: alice's tools/list");
        $r = $t->mcp_post($sid, { jsonrpc => '2.0', id => 'tb', method => 'tools/list' }, path => "/$loc",
                          headers => { Authorization => "Bearer $bob" });
        is($r->{status}, 404, "/$loc: bob cannot use alice's session");
        $r = $t->mcp_delete($sid, path => "/$loc", headers => { Authorization => "Bearer $bob" });
        is($r->{status}, 404, "/$loc: bob cannot DELETE alice's session");
        $r = $t->mcp_post($sid, { jsonrpc => '2.0', id => 'ta', method => 'ping' }, path => "/$loc",
                          headers => { Authorization => "Bearer $alice" });
        is($r->{status}, 200, "/$loc: alice's session is still there");
    }
    Time::HiRes::sleep(0.2);
    my $log = McpTest::_slurp($blog) // '';
    ok(length $log, 'the backend logged requests');
    unlike($log, qr/Bearer|eyJ|sk_live/, 'mcp_pass without token passthrough: the upstream never sees a token');
    my ($sid) = McpJwt::initialize($t, $alice, path => '/gwpt');
    ok($sid, '/gwpt: a session');
    Time::HiRes::sleep(0.2);
    like(McpTest::_slurp($blog), qr/auth=\[Bearer \Q$alice\E\]/,
         'with mcp_pass_authorization and mcp_auth_token_passthrough on, it does (the log works)');
}

# --- no token in the log --------------------------------------------------------------

{
    # nginx's own [info] lines quote a header line it refuses (too long,
    # twice) and the request line (a query string's token): not ours
    my $log = join "\n", grep { !/client sent (?:too long|duplicate) header line|request: "POST \/mcp\?x=1&access_token=/ }
                         split /\n/, $t->error_log;
    my @sigs = map { (split /\./)[2] } $good, tok($rsa, sub => 'alice', scope => 'mcp:tools');
    unlike($log, qr/\Q$sigs[0]\E|eyJ/, 'error.log: no token');
    unlike($log, qr/sk_live/, 'error.log: no API key');
}

close $slow;
$t->stop;
done_testing;
