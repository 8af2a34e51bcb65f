# Authorization, attacked: a location's own mcp_auth_resource is its
# audience (not the one its server derived from the server's resource);
# claims holding "\u0000" are refused (401 invalid_token), so that
# "https://host/mcp\u0000x" is not taken for "https://host/mcp" nor
# "alice\u0000x" for alice; tokens whose claims repeat a name are refused.

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
        mcp_auth_resource http://127.0.0.1:%%PORT%%/server;
        mcp_auth_jwt_issuer https://issuer.test;
        mcp_auth_jwt_key_file %%PREFIX%%/conf/jwks.json;
        mcp_auth_role_claim role;

        location = /server { mcp on; mcp_builtin everything; mcp_auth_jwt "MCP"; }
        location = /mcp {
            mcp on; mcp_builtin everything; mcp_auth_jwt "MCP";
            mcp_auth_resource http://127.0.0.1:%%PORT%%/mcp;
        }
NGX
$t->write_file('conf/jwks.json', McpJwt::jwks($rsa));
$t->start;

my $port = $t->port;
my $res  = "http://127.0.0.1:$port/mcp";

sub token { $rsa->token(claims => McpJwt::claims(aud => $res, @_)) }

sub init_status {
    my ($tok, $path) = @_;
    my (undef, $r) = McpJwt::initialize($t, $tok, path => $path // ($res =~ m{(/\w+)$})[0]);
    return $r;
}

sub refused_401 {
    my ($tok, $name, $path) = @_;
    my $r = init_status($tok, $path // ($res =~ m{(/\w+)$})[0]);
    is($r->{status}, 401, "$name: 401");
    my $c = McpJwt::challenge($r->{headers}{'www-authenticate'}) // {};
    is($c->{error}, 'invalid_token', "$name: invalid_token");
    like($r->{headers}{'content-type'} // '', qr{^application/json}, "$name: a JSON body");
}

# --- row 7: each level's resource is that level's audience ------------------------

is(init_status(token())->{status}, 200, 'location resource: a token for it is accepted');
refused_401(token(aud => "http://127.0.0.1:$port/server"),
            'location resource: a token for the server\'s resource is refused');
is(init_status(token(aud => "http://127.0.0.1:$port/server"), '/server')->{status}, 200,
   'server resource: its own token is accepted where it applies');
refused_401(token(), 'server resource: the location\'s token is refused there', '/server');

# the rest on /server, whose audience is right on every version: a refusal
# there is the claim's doing
$res = "http://127.0.0.1:$port/server";

# --- row 9: claims with NUL -----------------------------------------------------

refused_401(token(aud => "$res\0x"), 'aud with \\u0000 after the real audience');
refused_401(token(aud => ["other", "$res\0"]), 'aud array with \\u0000');
refused_401(token(iss => "https://issuer.test\0x"), 'iss with \\u0000');
refused_401(token(sub => "alice\0x"), 'sub with \\u0000');
refused_401(token(scope => "mcp:tools\0 mcp:admin"), 'scope with \\u0000');
refused_401(token(role => "admin\0x"), 'role with \\u0000');

# and a token that binds to alice is not alice's with a NUL suffix
{
    my ($sid) = McpJwt::initialize($t, token(sub => 'alice'), path => '/server');
    ok($sid, 'alice has a session');
    my $r = $t->mcp_post($sid, { jsonrpc => '2.0', id => 1, method => 'ping' }, path => '/server',
                         headers => { Authorization => 'Bearer ' . token(sub => "alice\0x") });
    is($r->{status}, 401, '"alice\\u0000x" cannot use alice\'s session');
}

# --- duplicate claim names ------------------------------------------------------

sub raw_token {
    my ($payload) = @_;
    my $input = McpJwt::b64url('{"alg":"RS256","typ":"JWT","kid":"k1"}') . '.'
              . McpJwt::b64url($payload);
    return "$input." . McpJwt::b64url($rsa->sign('RS256', $input));
}

{
    my $now = time;
    my $base = qq("iss":"https://issuer.test","iat":$now,"exp":@{[ $now + 900 ]});
    is(init_status(raw_token(qq({$base,"sub":"alice","aud":"$res"})))->{status}, 200,
       'a hand-made token without duplicates is accepted');
    refused_401(raw_token(qq({$base,"sub":"alice","sub":"bob","aud":"$res"})), 'two "sub" claims');
    refused_401(raw_token(qq({$base,"sub":"alice","aud":"$res","aud":"http://elsewhere/"})),
                'two "aud" claims');
    refused_401(raw_token(qq({$base,"sub":"alice","a\\u0075d":"http://elsewhere/","aud":"$res"})),
                'an escaped second "aud"');
    my $input = McpJwt::b64url('{"alg":"RS256","alg":"none","kid":"k1"}') . '.'
              . McpJwt::b64url(qq({$base,"sub":"alice","aud":"$res"}));
    refused_401("$input." . McpJwt::b64url($rsa->sign('RS256', $input)), 'two "alg" in the header');
}

$t->check_log;
done_testing;
