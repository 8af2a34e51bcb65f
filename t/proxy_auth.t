# Authorization on a gateway location (mcp_auth_jwt with mcp_pass): the
# same capability scopes, roles and per-tool scopes as on a built-in
# endpoint, decided before anything is forwarded.  The upstream is a real
# Python server (t/py/lastkey_upstream.py) that logs every message it
# receives, so "never forwarded" is its own word.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use McpTest;
use McpAssert;
use McpJwt;
use McpGateway;

my $rsa = McpJwt->new_key(type => 'RSA', kid => 'k1');

my $t = McpTest->new(
    ports   => 2,
    workers => 1,    # one memo of lists: the one the next list meets
    http    => 'mcp_session_zone zone=gw:1m;',
    server  => <<'NGX',
        mcp_session gw;
        location = /mcp {
            mcp_pass http://127.0.0.1:%%PORT2%%/mcp;
            mcp_auth_jwt "MCP";
            mcp_auth_resource http://127.0.0.1:%%PORT%%/mcp;
            mcp_auth_jwt_issuer https://issuer.test;
            mcp_auth_jwt_key_file %%PREFIX%%/conf/jwks.json;
            mcp_auth_tool_scope delete_everything mcp:tools:admin;
        }
NGX
);
$t->write_file('conf/jwks.json', McpJwt::jwks($rsa));
my ($py, $log) = start_python_upstream($t, 'lastkey_upstream', $t->port(2));
$t->start;

my $res = 'http://127.0.0.1:' . $t->port . '/mcp';
sub token { $rsa->token(claims => McpJwt::claims(aud => $res, scope => $_[0])) }

sub arrived {
    open my $f, '<', $log or return ();
    return map { McpTest::decode_json($_) } grep { /\S/ } <$f>;
}

my $admin = token('mcp:tools mcp:tools:admin mcp:resources');
my ($sid) = McpJwt::initialize($t, $admin);
ok($sid, 'a session through the gateway with a token');

sub post {
    my ($tok, $body) = @_;
    return $t->mcp_post($sid, $body, headers => { Authorization => "Bearer $tok" });
}

sub forbidden {
    my ($r, $scope, $name) = @_;
    is_rpc_error_body($r, 403, -32600, $r->{json} ? $r->{json}{id} : undef, "$name: 403, a JSON-RPC error");
    my $c = McpJwt::challenge($r->{headers}{'www-authenticate'}) // {};
    is($c->{error}, 'insufficient_scope', "$name: insufficient_scope");
    is($c->{scope}, $scope, "$name: names $scope");
}

my $call = sub { qq({"jsonrpc":"2.0","id":"$_[1]","method":"tools/call","params":{"name":"$_[0]","arguments":{}}}) };

my $before = scalar arrived();

# --- capability scopes --------------------------------------------------------

forbidden(post(token('mcp:resources'), $call->('harmless', 'c1')), 'mcp:tools',
          'tools/call with only mcp:resources');
forbidden(post(token('mcp:resources'), '{"jsonrpc":"2.0","id":"l1","method":"tools/list"}'), 'mcp:tools',
          'tools/list with only mcp:resources');
forbidden(post(token('mcp:tools'), '{"jsonrpc":"2.0","id":"r1","method":"resources/list"}'), 'mcp:resources',
          'resources/list with only mcp:tools');

# --- per-tool scopes ----------------------------------------------------------------

forbidden(post(token('mcp:tools'), $call->('delete_everything', 'c2')), 'mcp:tools:admin',
          'delete_everything without mcp:tools:admin');

{
    my $r = post(token('mcp:tools'),
                 '[{"jsonrpc":"2.0","id":"b1","method":"ping"},' . $call->('delete_everything', 'b2') . ']');
    my @errors = grep { $_->{error} } @{ ref $r->{json} eq 'ARRAY' ? $r->{json} : [] };
    is(scalar @errors, 2, 'a batch with a forbidden call: every request gets an error');
    like(($errors[1] // {})->{error}{message} // '', qr/insufficient scope/, '... the call says why');
}

is(scalar arrived(), $before, 'nothing refused reached the upstream');

# --- what is allowed goes through -------------------------------------------------

{
    my $r = post(token('mcp:tools'), $call->('harmless', 'c3'));
    is($r->{json}{result}{content}[0]{text}, 'ran harmless', 'mcp:tools: harmless runs upstream');
    $r = post(token('mcp:resources'), '{"jsonrpc":"2.0","id":"p1","method":"ping"}');
    is_result($r->{json}, {}, 'p1', 'ping needs no capability scope');

    $r = post(token('mcp:tools'), '{"jsonrpc":"2.0","id":"l2","method":"tools/list"}');
    is_deeply([ map { $_->{name} } @{ $r->{json}{result}{tools} // [] } ], ['harmless'],
              'tools/list without mcp:tools:admin: delete_everything is not shown');
    $r = post($admin, '{"jsonrpc":"2.0","id":"l3","method":"tools/list"}');
    is_deeply([ map { $_->{name} } @{ $r->{json}{result}{tools} // [] } ], ['harmless', 'delete_everything'],
              'tools/list with mcp:tools:admin: both');
    # the same list bytes again, then for a caller without the scope: the
    # memo of lists (ngx_http_mcp_proxy_pin.c) asks of each caller anew
    $r = post($admin, '{"jsonrpc":"2.0","id":"l4","method":"tools/list"}') for 1 .. 2;
    is(scalar @{ $r->{json}{result}{tools} // [] }, 2, 'tools/list with mcp:tools:admin again: both');
    $r = post(token('mcp:tools'), '{"jsonrpc":"2.0","id":"l4","method":"tools/list"}');
    is_deeply([ map { $_->{name} } @{ $r->{json}{result}{tools} // [] } ], ['harmless'],
              '... then without mcp:tools:admin, the same reply: delete_everything is not shown');
    $r = post($admin, $call->('delete_everything', 'c4'));
    is($r->{json}{result}{content}[0]{text}, 'ran delete_everything', 'with mcp:tools:admin it runs');
}

my @ran = map { $_->{tool} } grep { ($_->{method} // '') eq 'tools/call' } arrived();
is_deeply(\@ran, ['harmless', 'delete_everything'], 'the upstream ran exactly the allowed calls');

stop_process($py);
$t->check_log;
done_testing;
