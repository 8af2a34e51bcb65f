# mcp_stdio served as a gateway is: the edge's checks and mcp_pass's steps
# on a stdio server's messages (@modelcontextprotocol/server-everything,
# node).  The edge's refusals (Origin, Accept); the tool policy: a denied
# tools/call answered with a JSON-RPC error before any child sees it (the
# pool has started none), denied tools out of tools/list; the $mcp_* variables in the access log, the outcome
# read from the child's reply; guardrails on the arguments (a block
# refused, a redaction what the child gets) and on the results; the
# caller's scopes (mcp_auth_tool_scope) as on any MCP location; the
# requests counted by method and result on the metrics endpoint.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Time::HiRes qw(sleep);
use JSON::PP qw(decode_json);
use McpTest timeout => 120;
use McpAssert;
use McpJwt;
use McpGateway qw(node_available node_bin npm_dir);

my $why = node_available('@modelcontextprotocol/server-everything');
plan skip_all => $why if $why;
my $NODE = Cwd::abs_path(node_bin());
my $EV   = Cwd::abs_path(npm_dir() . '/node_modules/@modelcontextprotocol/server-everything/dist/index.js');

my $rsa = McpJwt->new_key(type => 'RSA', kid => 'k1');

my $t = McpTest->new(
    workers => 1,
    http    => <<'NGX',
    log_format gw escape=json '{"uri":"$uri","m":"$mcp_method","tool":"$mcp_tool",'
        '"out":"$mcp_outcome","code":"$mcp_error_code","g":"$mcp_guardrail"}';
    mcp_guardrail_set secret 'topsecret';
NGX
    server  => <<"NGX",
        access_log %%PREFIX%%/logs/gw.log gw;
        location = /deny {
            mcp_stdio $NODE $EV stdio;
            mcp_stdio_pool size=1;
            mcp_tools_deny echo;
        }
        location = /allow {
            mcp_stdio $NODE $EV stdio;
            mcp_stdio_pool size=1;
            mcp_tools_allow ~^get-;
        }
        location = /block {
            mcp_stdio $NODE $EV stdio;
            mcp_stdio_pool size=1;
            mcp_guardrail secret block arguments;
        }
        location = /redact {
            mcp_stdio $NODE $EV stdio;
            mcp_stdio_pool size=1;
            mcp_guardrail secret redact arguments;
        }
        location = /results {
            mcp_stdio $NODE $EV stdio;
            mcp_stdio_pool size=1;
            mcp_guardrail secret redact results;
        }
        location = /auth {
            mcp_stdio $NODE $EV stdio;
            mcp_stdio_pool size=1;
            mcp_auth_jwt "MCP";
            mcp_auth_resource http://127.0.0.1:%%PORT%%/auth;
            mcp_auth_jwt_issuer https://issuer.test;
            mcp_auth_jwt_key_file %%PREFIX%%/conf/jwks.json;
            mcp_auth_tool_scope echo mcp:tools:admin;
        }
        location = /authsess {
            mcp_stdio $NODE $EV stdio;
            mcp_stdio_pool size=2;
            mcp_stdio_sessions on;
            mcp_auth_jwt "MCP";
            mcp_auth_resource http://127.0.0.1:%%PORT%%/authsess;
            mcp_auth_jwt_issuer https://issuer.test;
            mcp_auth_jwt_key_file %%PREFIX%%/conf/jwks.json;
        }
        location = /checked {
            mcp_stdio $NODE $EV stdio;
            mcp_stdio_pool size=1;
            mcp_pass_check_arguments on;
        }
        location = /tiny {
            mcp_stdio $NODE %%PREFIX%%/tiny.js;
            mcp_stdio_pool size=1;
            mcp_pass_check_arguments on;
        }
        location = /metrics {
            mcp_metrics;
        }
NGX
);
$t->write_file('conf/jwks.json', McpJwt::jwks($rsa));

# a stdio server of one tool named as server-everything's, with another
# schema: what a location learns of its children is its own
$t->write_file('tiny.js', <<'JS');
const rl = require('readline').createInterface({ input: process.stdin });
rl.on('line', (l) => {
    const m = JSON.parse(l);
    if (m.id === undefined) return;
    let result = {};
    if (m.method === 'initialize') {
        result = { protocolVersion: m.params.protocolVersion, capabilities: { tools: {} },
                   serverInfo: { name: 'tiny', version: '1' } };
    } else if (m.method === 'tools/list') {
        result = { tools: [ { name: 'get-sum', inputSchema: { type: 'object',
                   properties: { a: { type: 'string' } }, required: [ 'a' ] } } ] };
    } else if (m.method === 'tools/call') {
        result = { content: [ { type: 'text', text: 'tiny ' + m.params.arguments.a } ] };
    }
    process.stdout.write(JSON.stringify({ jsonrpc: '2.0', id: m.id, result }) + '\n');
});
JS
$t->start;

# the worker's children running the server
sub children {
    my @c;
    for my $w ($t->worker_pids) {
        for (`ps -o pid=,args= --ppid $w 2>/dev/null`) {
            push @c, $1 if /^\s*(\d+)\s+.*server-everything/;
        }
    }
    return scalar @c;
}

sub post {
    my ($path, $msg, $token) = @_;
    return $t->mcp_post(undef, $msg, timeout => 15, path => $path,
                        ($token ? (headers => { Authorization => "Bearer $token" }) : ()));
}

sub call {
    my ($path, $id, $name, $args, $token) = @_;
    return post($path, { jsonrpc => '2.0', id => $id, method => 'tools/call',
                         params => { name => $name, arguments => $args } }, $token);
}

sub names {
    my ($r) = @_;
    return { map { $_->{name} => 1 } @{ $r->{json}{result}{tools} // [] } };
}

# --- the tool policy -----------------------------------------------------------

my $r = call('/deny', 'd1', 'echo', { message => 'hi' });
is($r->{status}, 200, 'a denied call: 200');
is($r->{json}{id}, 'd1', '... under the client\'s id');
is($r->{json}{error}{code}, -32602, '... a JSON-RPC error -32602');
like($r->{json}{error}{message} // '', qr/not allowed/, '... "Tool not allowed"');
ok(!exists $r->{json}{result}, '... and no result');
is(children(), 0, '... refused before any child saw it: none was started');

$r = post('/deny', { jsonrpc => '2.0', id => 'l1', method => 'tools/list' });
my $n = names($r);
ok($n->{'get-sum'} && $n->{'get-env'}, 'tools/list: the other tools listed') or diag explain $r->{json};
ok(!$n->{echo}, 'tools/list: the denied tool left out');
is(children(), 1, 'tools/list went to a child');

$r = call('/deny', 'd2', 'get-sum', { a => 2, b => 3 });
like($r->{json}{result}{content}[0]{text} // '', qr/\b5\b/, 'an allowed call: the child\'s result');

$r = post('/allow', { jsonrpc => '2.0', id => 'l2', method => 'tools/list' });
$n = names($r);
ok($n->{'get-sum'}, 'mcp_tools_allow ~^get-: get-sum listed');
ok(!$n->{echo} && !$n->{'trigger-long-running-operation'}, '... the others left out')
    or diag explain [ sort keys %$n ];
$r = call('/allow', 'a1', 'trigger-long-running-operation', { duration => 0.1, steps => 1 });
is($r->{json}{error}{code}, -32602, 'mcp_tools_allow: a call outside it refused');

# the edge's own refusals: a foreign Origin (DNS rebinding), a POST without
# the Accept an MCP client sends
$r = $t->mcp_post(undef, { jsonrpc => '2.0', id => 'o1', method => 'tools/list' }, path => '/deny',
                  headers => { Origin => 'http://evil.example' });
is($r->{status}, 403, 'a foreign Origin: 403');
like($r->{body}, qr/"code":-32600/, '... a JSON-RPC error');
$r = $t->request(method => 'POST', path => '/deny', body => '{"jsonrpc":"2.0","id":1,"method":"ping"}',
                 headers => { 'Content-Type' => 'application/json', Accept => 'text/html' });
is($r->{status}, 406, 'Accept without application/json: 406');

# --- mcp_auth_* scopes, per tool -------------------------------------------------

my $res = 'http://127.0.0.1:' . $t->port . '/auth';
sub token { $rsa->token(claims => McpJwt::claims(aud => $res, scope => $_[0])) }

my $before = children();
$r = call('/auth', 's1', 'echo', { message => 'hi' }, token('mcp:tools'));
is($r->{status}, 403, 'a tool scoped mcp:tools:admin without it: 403');
is($r->{json}{error}{code}, -32600, '... a JSON-RPC error');
my $c = McpJwt::challenge($r->{headers}{'www-authenticate'}) // {};
is($c->{error}, 'insufficient_scope', '... insufficient_scope');
is($c->{scope}, 'mcp:tools:admin', '... naming the tool\'s scope');
is(children(), $before, '... and no child was started for it');

$r = post('/auth', { jsonrpc => '2.0', id => 's2', method => 'tools/list' }, token('mcp:resources'));
is($r->{status}, 403, 'tools/list without mcp:tools: 403');

$r = post('/auth', { jsonrpc => '2.0', id => 's3', method => 'tools/list' }, token('mcp:tools'));
$n = names($r);
ok($n->{'get-sum'} && !$n->{echo}, 'tools/list: a tool the caller may not call left out')
    or diag explain [ sort keys %$n ];

$r = call('/auth', 's4', 'echo', { message => 'hi' }, token('mcp:tools mcp:tools:admin'));
is($r->{json}{result}{content}[0]{text}, 'Echo: hi', 'with the tool\'s scope: the child\'s result');

# --- guardrails --------------------------------------------------------------------

$r = call('/block', 'b1', 'echo', { message => 'a topsecret here' });
is($r->{json}{id}, 'b1', 'a blocked argument: the client\'s id');
is($r->{json}{error}{code}, -32602, '... a JSON-RPC error');
unlike($r->{body}, qr/Echo:/, '... the child never answered it');

$r = call('/block', 'b2', 'echo', { message => 'harmless' });
is($r->{json}{result}{content}[0]{text}, 'Echo: harmless', 'a clean argument passes');

$r = call('/redact', 'r1', 'echo', { message => 'a topsecret here' });
is($r->{json}{result}{content}[0]{text}, 'Echo: a [redacted:secret] here',
   'a redacted argument: the child got the redaction') or diag explain $r->{json};

$r = call('/results', 'r2', 'echo', { message => 'a topsecret there' });
is($r->{json}{id}, 'r2', 'a result redacted: the client\'s id');
is($r->{json}{result}{content}[0]{text}, 'Echo: a [redacted:secret] there',
   '... the child\'s result redacted') or diag explain $r->{json};

# --- arguments against the listed inputSchema (mcp_pass_check_arguments) ---------

$r = post('/checked', { jsonrpc => '2.0', id => 'k0', method => 'tools/list' });
ok(names($r)->{'get-sum'}, 'the schemas listed');
$r = call('/checked', 'k1', 'get-sum', { a => 'two', b => 3 });
is($r->{json}{id}, 'k1', 'arguments the listed schema refuses: the client\'s id');
ok($r->{json}{result}{isError}, '... an isError result');
like($r->{json}{result}{content}[0]{text} // '', qr/\ba\b.*number|number.*\ba\b/i,
     '... the validator\'s reason, the gateway\'s words') or diag explain $r->{json};
ok($t->wait_for_log(qr/mcp: tool "get-sum" arguments refused/, 3), '... refused at the edge, logged');
$r = post('/tiny', { jsonrpc => '2.0', id => 'k3', method => 'tools/list' });
ok(names($r)->{'get-sum'}, 'another stdio location lists its own get-sum');
$r = call('/checked', 'k2', 'get-sum', { a => 2, b => 3 });
like($r->{json}{result}{content}[0]{text} // '', qr/\b5\b/,
     'valid arguments: the child\'s result, by its own location\'s schema') or diag explain $r->{json};
$r = call('/tiny', 'k4', 'get-sum', { a => 'x' });
is($r->{json}{result}{content}[0]{text}, 'tiny x', '... and the other\'s by its own') or diag explain $r->{json};
$r = call('/tiny', 'k5', 'get-sum', { a => 1 });
ok($r->{json}{result}{isError}, '... which it checks too');

# --- the $mcp_* variables -----------------------------------------------------------

sub logged {
    my ($uri, $tool) = @_;
    for my $try (1 .. 20) {
        my $text = McpTest::_slurp($t->prefix . '/logs/gw.log') // '';
        for (split /\n/, $text) {
            my $l = eval { decode_json($_) } or next;
            return $l if $l->{uri} eq $uri && $l->{tool} eq $tool;
        }
        sleep 0.1;
    }
    return undef;
}

my $l = logged('/deny', 'echo');
is($l->{m}, 'tools/call', '$mcp_method of a stdio location\'s call');
is($l->{out}, 'error', '$mcp_outcome of a denied call: error');
is($l->{code}, '-32602', '$mcp_error_code: -32602');
$l = logged('/deny', 'get-sum');
is($l->{out}, 'ok', '$mcp_outcome read from the child\'s reply: ok');
$l = logged('/results', 'echo');
is($l->{g}, 'secret', '$mcp_guardrail names the set that matched the result');

# --- metrics ------------------------------------------------------------------------

# the calls that reached a child: d2, s4, b2, r1, r2, k2, k4; the lists l1,
# l2, s3, k0, k3 (the
# refused ones are counted as mcp_pass counts its refusals: not here)
my $m = $t->request(method => 'GET', path => '/metrics');
is($m->{status}, 200, 'the metrics endpoint');
my ($calls) = $m->{body} =~ /^mcp_requests_total\{method="tools\/call",result="ok"\} (\d+)$/m;
is($calls, 7, 'tools/call through stdio locations counted: 7 ok') or diag $m->{body};
my ($lists) = $m->{body} =~ /^mcp_requests_total\{method="tools\/list",result="ok"\} (\d+)$/m;
is($lists, 5, 'tools/list counted: 5 ok');

# --- a session is its caller's --------------------------------------------------------

# with mcp_stdio_sessions and authorization, a session is bound to the
# caller that made it, as the built-in endpoint binds one: to another
# caller its id names nothing (before, any caller with the id reached
# the child, and could end the session)
{
    my $sres = 'http://127.0.0.1:' . $t->port . '/authsess';
    my %tok = map { $_ => $rsa->token(claims => McpJwt::claims(aud => $sres, scope => 'mcp:tools', sub => $_)) }
              qw(alice bob);
    my $as = sub {
        my ($who, $sid, $msg) = @_;
        return $t->mcp_post($sid, $msg, path => '/authsess', timeout => 15,
                            headers => { Authorization => "Bearer $tok{$who}" });
    };
    my $r = $as->('alice', undef, { jsonrpc => '2.0', id => 'i1', method => 'initialize',
                                    params => { protocolVersion => '2025-11-25', capabilities => {},
                                                clientInfo => { name => 't', version => '1' } } });
    my $sid = $r->{headers}{'mcp-session-id'};
    ok($sid, 'alice\'s initialize on a stdio location with sessions: a session');
    $as->('alice', $sid, { jsonrpc => '2.0', method => 'notifications/initialized' });
    $r = $as->('bob', $sid, { jsonrpc => '2.0', id => 'x1', method => 'tools/list' });
    is($r->{status}, 404, 'bob with alice\'s session id: 404');
    is($r->{json}{error}{code}, -32001, '... Session not found');
    is($r->{json}{id}, 'x1', '... with his request\'s id');
    my $d = $t->request(method => 'DELETE', path => '/authsess',
                        headers => { 'Mcp-Session-Id' => $sid, Authorization => "Bearer $tok{bob}" });
    is($d->{status}, 404, 'bob cannot end alice\'s session: 404');
    my $g = $t->request(method => 'GET', path => '/authsess', timeout => 5,
                        headers => { 'Mcp-Session-Id' => $sid, Accept => 'text/event-stream',
                                     Authorization => "Bearer $tok{bob}" });
    is($g->{status}, 404, 'bob cannot open alice\'s GET stream: 404');
    $r = $as->('alice', $sid, { jsonrpc => '2.0', id => 'a1', method => 'tools/list' });
    is($r->{status}, 200, 'alice\'s session goes on');
    # the reply is a stream when the child says something meanwhile (its
    # log notifications go on a POST in flight when no GET stream is open)
    my ($a1) = grep { ref $_ eq 'HASH' && ($_->{id} // '') eq 'a1' } @{ $r->{messages} // [] };
    ok(scalar @{ $a1->{result}{tools} // [] }, '... her child\'s tools') or diag explain $r;
    $d = $t->request(method => 'DELETE', path => '/authsess',
                     headers => { 'Mcp-Session-Id' => $sid, Authorization => "Bearer $tok{alice}" });
    is($d->{status}, 200, 'alice ends her session');
}

$t->stop;

# --- nginx -t ------------------------------------------------------------------------

# a location has one server: the edge would route it as two
for my $bad ("mcp_stdio $NODE; mcp_pass http://127.0.0.1:1/mcp;",
             "mcp_pass http://127.0.0.1:1/mcp; mcp_stdio $NODE;",
             "mcp_stdio $NODE; mcp_backend a /be;")
{
    my $u = McpTest->new(workers => 1, server => "location = /x { $bad }");
    my ($rc, $out) = $u->nginx_t;
    ok($rc != 0 && $out =~ /"mcp_stdio" is for a location without "mcp_pass" or "mcp_backend"/,
       "nginx -t refuses: $bad") or diag $out;
}

# mcp_fleet: a stdio location's requests are its workers' children's, never
# forwarded to another node, so its server needs no forward= location
{
    my $fl = "    mcp_fleet redis=127.0.0.1:6379 node=n1 forward=\@f;\n";
    my $first = "location = /mcp { mcp on; } location \@f { proxy_pass http://\$mcp_fleet_owner; }";
    my $u = McpTest->new(workers => 1, server => '');
    $u->write_config(http => $fl, server => "$first }\n    server { listen 127.0.0.1:1; "
                                            . "location = /s { mcp_stdio $NODE; }");
    my ($rc, $out) = $u->nginx_t;
    ok($rc == 0, 'mcp_fleet: a server with only a stdio location needs no forward= location') or diag $out;
}

done_testing;
