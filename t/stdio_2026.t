# mcp_stdio and the 2026-07-28 revision: the child speaks a 2025 one, so
# nginx is the 2026-07-28 server here and makes the checks the built-in
# endpoint and mcp_pass make (ngx_http_mcp_stateless_check): the version
# (-32022 with the ones served), params._meta (-32602), Mcp-Method and
# Mcp-Name against the body, a call's Mcp-Param-* against the schema the
# child listed (-32020), each a 400 with the request's id;
# initialize and ping, which the revision has not,
# a 404 with -32601 (the child would answer them); the caching hints on
# server/discover and the lists, public without a caller, and not on a
# 2025 client's; no listChanged or subscribe in server/discover's
# capabilities, since the location serves no subscriptions/listen.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use McpTest timeout => 120;
use McpAssert;
use McpGateway qw(node_available node_bin npm_dir);

my $why = node_available('@modelcontextprotocol/server-everything');
plan skip_all => $why if $why;

# server-everything knows no 2026-07-28: what is checked is nginx's
my @argv = (Cwd::abs_path(node_bin()),
            Cwd::abs_path(npm_dir() . '/node_modules/@modelcontextprotocol/server-everything/dist/index.js'),
            'stdio');
my $t = McpTest->new(workers => 1, server => <<"NGX");
        location = /mcp {
            mcp_stdio @argv;
            mcp_stdio_pool size=1 total=1;
        }
        location = /region {
            mcp_stdio $argv[0] %%PREFIX%%/region.js;
            mcp_stdio_pool size=1;
        }
NGX

# a child with a tool whose argument a header mirrors (x-mcp-header)
$t->write_file('region.js', <<'JS');
require('readline').createInterface({ input: process.stdin }).on('line', (l) => {
    const m = JSON.parse(l);
    if (m.id === undefined) return;
    const result = m.method === 'initialize'
        ? { protocolVersion: m.params.protocolVersion, capabilities: { tools: {} },
            serverInfo: { name: 'region', version: '1' } }
        : m.method === 'tools/list'
        ? { tools: [ { name: 'where', inputSchema: { type: 'object',
              properties: { region: { type: 'string', 'x-mcp-header': 'Region' } } } } ] }
        : { content: [ { type: 'text', text: 'in ' + m.params.arguments.region } ] };
    process.stdout.write(JSON.stringify({ jsonrpc: '2.0', id: m.id, result }) + '\n');
});
JS
$t->start;

my $META = { 'io.modelcontextprotocol/protocolVersion' => '2026-07-28',
             'io.modelcontextprotocol/clientCapabilities' => {} };

# a 2026-07-28 request; o: meta (the _meta, undef: none), version (the
# header), method and name (the headers, default what the body says)
sub post26 {
    my ($id, $method, $params, %o) = @_;
    my %p = (%{ $params // {} });
    $p{_meta} = exists $o{meta} ? $o{meta} : $META;
    delete $p{_meta} unless defined $p{_meta};
    my %h = ('Mcp-Method' => exists $o{method} ? $o{method} : $method);
    $h{'Mcp-Name'} = exists $o{name} ? $o{name} : $params->{name} if $method eq 'tools/call';
    delete $h{$_} for grep { !defined $h{$_} } keys %h;
    return $t->mcp_post(undef, { jsonrpc => '2.0', id => $id, method => $method, params => \%p },
                        protocol_version => $o{version} // '2026-07-28',
                        headers => { %h, %{ $o{headers} // {} } },
                        path => $o{path} // '/mcp', timeout => 15);
}

sub refused {
    my ($r, $status, $code, $id, $name) = @_;
    is($r->{status}, $status, "$name: $status");
    is($r->{json}{error}{code}, $code, "$name: $code");
    is($r->{json}{id}, $id, "$name: the request's id");
}

# --- what passes ------------------------------------------------------------

my $r = post26(1, 'tools/list', {});
is($r->{status}, 200, 'tools/list: 200');
ok(scalar @{ $r->{json}{result}{tools} // [] }, 'tools/list: the child\'s tools');
is($r->{json}{result}{resultType}, 'complete', 'tools/list: resultType');
is($r->{json}{result}{ttlMs}, 0, 'tools/list: ttlMs, as the built-in endpoint gives it');
is($r->{json}{result}{cacheScope}, 'public', 'tools/list: cacheScope public (no caller)');

$r = post26(2, 'server/discover', {});
is($r->{status}, 200, 'server/discover: 200');
is($r->{json}{result}{cacheScope}, 'public', 'server/discover: cacheScope');
is($r->{json}{result}{ttlMs}, 0, 'server/discover: ttlMs');
is($r->{json}{result}{supportedVersions}[0], '2026-07-28', 'server/discover: newest first');

# no subscriptions/listen here: what only a listen stream would carry is
# not offered, though the child offers it to a 2025 client
my $caps = $r->{json}{result}{capabilities};
ok(ref $caps->{tools} eq 'HASH' && ref $caps->{resources} eq 'HASH', 'server/discover: the child\'s capabilities');
ok(!grep({ ref $caps->{$_} eq 'HASH' && (exists $caps->{$_}{listChanged} || exists $caps->{$_}{subscribe}) }
         qw(tools prompts resources)),
   'server/discover: no listChanged, no subscribe') or diag explain $caps;
my $init = $t->mcp_post(undef, { jsonrpc => '2.0', id => 5, method => 'initialize',
                                 params => { protocolVersion => '2025-11-25', capabilities => {},
                                             clientInfo => { name => 't', version => '1' } } });
my $c25 = $init->{json}{result}{capabilities};
ok(grep({ ref $c25->{$_} eq 'HASH' && (exists $c25->{$_}{listChanged} || exists $c25->{$_}{subscribe}) }
        qw(tools prompts resources)),
   '2025 initialize: the child\'s listChanged or subscribe kept') or diag explain $c25;

$r = post26(3, 'tools/call', { name => 'echo', arguments => { message => 'hi' } });
is($r->{json}{result}{content}[0]{text}, 'Echo: hi', 'tools/call: the child\'s result');
ok(!exists $r->{json}{result}{ttlMs}, 'tools/call: no caching hints (not a list)');

# a 2025 client's list has none either
$r = $t->mcp_post(undef, { jsonrpc => '2.0', id => 4, method => 'tools/list' });
ok(scalar @{ $r->{json}{result}{tools} // [] }, '2025 tools/list: the tools');
ok(!exists $r->{json}{result}{ttlMs} && !exists $r->{json}{result}{cacheScope},
   '2025 tools/list: no caching hints');

# --- what is refused ------------------------------------------------------------

$r = post26(10, 'tools/list', {}, version => '2099-01-01');
refused($r, 400, -32022, 10, 'an unknown version');
ok(grep({ $_ eq '2026-07-28' } @{ $r->{json}{error}{data}{supported} // [] }),
   'an unknown version: the ones served in data.supported')
    or diag explain $r->{json};

$r = post26(11, 'tools/list', {}, meta => undef);
refused($r, 400, -32602, 11, 'no _meta');

$r = post26(12, 'tools/list', {},
            meta => { 'io.modelcontextprotocol/protocolVersion' => '2026-07-28' });
refused($r, 400, -32602, 12, 'no clientCapabilities in _meta');

$r = post26(13, 'tools/list', {},
            meta => { %$META, 'io.modelcontextprotocol/protocolVersion' => '2025-11-25' });
refused($r, 400, -32020, 13, '_meta\'s version not the header\'s');

$r = post26(14, 'tools/list', {}, method => 'prompts/list');
refused($r, 400, -32020, 14, 'Mcp-Method not the body\'s');

$r = post26(15, 'tools/list', {}, method => undef);
refused($r, 400, -32020, 15, 'no Mcp-Method');

$r = post26(16, 'tools/call', { name => 'echo', arguments => { message => 'x' } }, name => 'add');
refused($r, 400, -32020, 16, 'Mcp-Name not the tool called');

# one message, a request: a batch or a notification has no 2026-07-28 form
$r = $t->mcp_post(undef, [ { jsonrpc => '2.0', id => 17, method => 'tools/list',
                             params => { _meta => $META } } ],
                  protocol_version => '2026-07-28', headers => { 'Mcp-Method' => 'tools/list' });
is($r->{status}, 400, 'a batch: 400');
is($r->{json}{error}{code}, -32600, 'a batch: -32600');
$r = $t->mcp_post(undef, { jsonrpc => '2.0', method => 'notifications/initialized',
                           params => { _meta => $META } },
                  protocol_version => '2026-07-28',
                  headers => { 'Mcp-Method' => 'notifications/initialized' });
is($r->{status}, 400, 'a notification: 400 (it was taken with a 202)');
is($r->{json}{error}{code}, -32600, 'a notification: -32600');

# Mcp-Param-*: held to the schema the child listed, once it listed it
# (the child never sees the headers)
my %where = (name => 'where', arguments => { region => 'eu-west' });
$r = post26(30, 'tools/call', \%where, path => '/region');
is($r->{json}{result}{content}[0]{text}, 'in eu-west', 'Mcp-Param-Region: not checked before a list');
$r = post26(31, 'tools/list', {}, path => '/region');
is($r->{json}{result}{tools}[0]{name}, 'where', 'the child\'s list, learnt');
$r = post26(32, 'tools/call', \%where, path => '/region', headers => { 'Mcp-Param-Region' => 'eu-west' });
is($r->{json}{result}{content}[0]{text}, 'in eu-west', 'Mcp-Param-Region as the argument: relayed');
$r = post26(33, 'tools/call', \%where, path => '/region',
            headers => { 'Mcp-Param-Region' => '=?base64?ZXUtd2VzdA==?=' });
is($r->{json}{result}{content}[0]{text}, 'in eu-west', 'Mcp-Param-Region in Base64: relayed');
$r = post26(34, 'tools/call', \%where, path => '/region');
refused($r, 400, -32020, 34, 'no Mcp-Param-Region for an argument given');
$r = post26(35, 'tools/call', \%where, path => '/region', headers => { 'Mcp-Param-Region' => 'us-east' });
refused($r, 400, -32020, 35, 'Mcp-Param-Region not the argument');
$r = post26(36, 'tools/call', \%where, path => '/region',
            headers => { 'Mcp-Param-Region' => '=?base64?ZXUtd2VzdA?=' });
refused($r, 400, -32020, 36, 'Mcp-Param-Region in bad Base64');

# --- what the revision has not ------------------------------------------------

$r = post26(20, 'initialize', { protocolVersion => '2026-07-28', capabilities => {},
                                clientInfo => { name => 't', version => '1' } });
refused($r, 404, -32601, 20, '2026-07-28 initialize');

$r = post26(21, 'ping', {});
refused($r, 404, -32601, 21, '2026-07-28 ping');

# a 2025 client still has both
$r = $t->mcp_post(undef, { jsonrpc => '2.0', id => 22, method => 'ping' });
is($r->{status}, 200, '2025 ping: 200');
ok(ref $r->{json}{result} eq 'HASH', '2025 ping: a result');

# an Mcp-Session-Id where none is given out (no mcp_stdio_sessions) names
# no session: with one, a request whose headers disagree with its body
# went past the checks above (the edge makes them without a session) and
# was still answered as a 2026-07-28 one by the pool
$r = $t->mcp_post('no-such-session', { jsonrpc => '2.0', id => 23, method => 'tools/call',
                   params => { name => 'echo', arguments => { message => 'x' }, _meta => $META } },
                  protocol_version => '2026-07-28',
                  headers => { 'Mcp-Method' => 'tools/list', 'Mcp-Name' => 'other' }, timeout => 15);
refused($r, 404, -32001, 23, 'a session id here, headers against the body');
unlike($r->{body} // '', qr/Echo/, '... and the child never answered it');
$r = $t->mcp_post('no-such-session', { jsonrpc => '2.0', id => 24, method => 'tools/call',
                   params => { name => 'echo', arguments => { message => 'x' } } }, timeout => 15);
refused($r, 404, -32001, 24, 'a 2025 request with a session id here');

# nothing a client sent is logged above [info]
unlike($t->error_log, qr/\[(warn|error|crit|alert|emerg)\]/, 'no refusal logged above [info]');

$t->stop;
done_testing;
