# Keys fetched through a subrequest (proxy_pass to a JWKS URL), kept in the
# shared zone, rotated without a reload (unknown kid, cache time), no token
# passthrough to the key server; the audit variables in a JSON log_format.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Time::HiRes ();
use McpTest;
use McpAssert;
use McpJwt;

my $k1 = McpJwt->new_key(type => 'P-256', kid => 'k1');
my $k2 = McpJwt->new_key(type => 'RSA', kid => 'k2');
my $k3 = McpJwt->new_key(type => 'Ed25519', kid => 'k3');

my $t = McpTest->new(http => <<'NGX', server => <<'NGX2');
        log_format mcp_audit escape=json '{"time":"$time_iso8601","subject":"$mcp_auth_subject",'
            '"role":"$mcp_auth_role","scopes":"$mcp_auth_scopes","auth":"$mcp_auth_result",'
            '"method":"$mcp_method","tool":"$mcp_tool","client":"$remote_addr",'
            '"request_id":"$request_id","status":$status,"duration":$request_time}';
        log_format keyfetch '$request_method $uri auth=[$http_authorization]';
NGX
        mcp_auth_resource http://127.0.0.1:%%PORT%%/mcp;
        mcp_auth_jwt_issuer https://issuer.test;

        location = /mcp {
            mcp on; mcp_builtin everything;
            mcp_auth_jwt "MCP";
            mcp_auth_jwt_key_request /_jwks;
            mcp_auth_jwt_key_cache 3s refresh=1s;
            access_log %%PREFIX%%/logs/audit.log mcp_audit;
        }
        location = /_jwks {
            internal;
            proxy_pass http://127.0.0.1:%%PORT%%/keys/jwks.json;
            proxy_pass_request_headers off;
            proxy_pass_request_body off;
        }
        location /keys/ {
            root %%PREFIX%%/html;
            access_log %%PREFIX%%/logs/keys.log keyfetch;
        }
NGX2
$t->write_file('html/keys/jwks.json', McpJwt::jwks($k1));
$t->start;

my $resource = 'http://127.0.0.1:' . $t->port . '/mcp';

sub tok { $_[0]->token(claims => McpJwt::claims(aud => $resource, role => 'developer', @_[1 .. $#_])) }

sub works {
    my ($token, $name) = @_;
    my $r = $t->mcp_post(undef, { jsonrpc => '2.0', id => 'w', method => 'tools/list' },
                         headers => { Authorization => "Bearer $token" });
    ok($r->{status} == 400 && ($r->{json}{error}{message} // '') =~ /Mcp-Session-Id/, $name)
        or diag(McpTest::explain_response($r));
}

sub fails {
    my ($token, $why, $name) = @_;
    my $r = $t->mcp_post(undef, { jsonrpc => '2.0', id => 'f', method => 'tools/list' },
                         headers => { Authorization => "Bearer $token" });
    is($r->{status}, 401, "$name: 401");
    like(McpJwt::challenge($r->{headers}{'www-authenticate'})->{error_description} // '', $why,
         "$name: $why");
}

sub fetches { scalar(() = McpTest::_slurp($t->prefix . '/logs/keys.log') =~ /^GET/mg) }

# the key server logs a fetch when its request ends, which may be a little
# after the client's reply (slow under the sanitizer build): wait for it
sub fetches_reach {
    my ($n) = @_;
    for (1 .. 40) {
        return $n if fetches() >= $n;
        Time::HiRes::sleep(0.05);
    }
    return fetches();
}

works(tok($k1), 'first token: keys fetched through the subrequest');
is(fetches_reach(1), 1, 'one fetch');
works(tok($k1), 'again') for 1 .. 8;
is(fetches(), 1, 'the set is cached in the zone: no more fetches, whatever the worker');
unlike(McpTest::_slurp($t->prefix . '/logs/keys.log'), qr/Bearer/, 'the key server never sees the token');

# --- rotation: a new kid is fetched at once, without a reload -------------------

$t->write_file('html/keys/jwks.json', McpJwt::jwks($k1, $k2));
sleep 1;    # refresh=1s since the last fetch
works(tok($k2), 'a token of a key rotated in: unknown kid triggers a refetch');
is(fetches_reach(2), 2, 'one refetch');
works(tok($k1), 'the old key still works while published');

fails(tok($k3), qr/unknown key id/, 'a kid the server does not publish');
fails(tok($k3), qr/unknown key id/, 'and again, at once: no refetch storm');
ok(fetches() <= 3, 'unknown kids do not refetch more often than refresh=');

# --- the old key retired: gone after the cache time -----------------------------

$t->write_file('html/keys/jwks.json', McpJwt::jwks($k2, $k3));
sleep 4;    # cache time 3s
works(tok($k3), 'after the cache time the new set is used');
fails(tok($k1), qr/unknown key id/, 'the retired key is refused');

# --- key server down: the cached set goes on --------------------------------------

unlink $t->prefix . '/html/keys/jwks.json';
sleep 4;
$t->expect_log_error(qr/key request "\/_jwks" failed/, qr/open\(\) "[^"]*jwks\.json" failed/);
works(tok($k2), 'key server fails: the cached set is still used');

# --- audit log --------------------------------------------------------------------

{
    my $token = tok($k2, sub => 'auditor', scope => 'mcp:tools');
    my ($sid) = McpJwt::initialize($t, $token);
    $t->mcp_request($sid, 'tools/call', { name => 'test_simple_text' },
                    headers => { Authorization => "Bearer $token" });
    $t->mcp_post(undef, { jsonrpc => '2.0', id => 1, method => 'tools/list' });
    select undef, undef, undef, 0.3;
    my @lines = map { McpTest::decode_json($_) } grep { length }
                split /\n/, McpTest::_slurp($t->prefix . '/logs/audit.log');
    my ($call) = grep { $_->{method} eq 'tools/call' } @lines;
    ok($call, 'audit: the tools/call line is JSON');
    is($call->{subject}, 'auditor', 'audit: subject');
    is($call->{role}, 'developer', 'audit: role');
    is($call->{scopes}, 'mcp:tools', 'audit: scopes');
    is($call->{auth}, 'ok', 'audit: result');
    is($call->{tool}, 'test_simple_text', 'audit: tool');
    is($call->{client}, '127.0.0.1', 'audit: client address');
    like($call->{request_id}, qr/^[0-9a-f]{32}$/, 'audit: correlation id');
    like($call->{duration}, qr/^[\d.]+$/, 'audit: duration');
    like($call->{time}, qr/^\d{4}-\d\d-\d\dT/, 'audit: timestamp');
    my ($refused) = grep { $_->{auth} eq 'missing' } @lines;
    ok($refused && $refused->{status} == 401, 'audit: the refused request is there, auth=missing');
    unlike(McpTest::_slurp($t->prefix . '/logs/audit.log'), qr/Bearer|eyJ/, 'audit: no token in the audit log');
}

$t->stop;
done_testing;
