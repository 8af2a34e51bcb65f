# mcp_pass_tool (issue #38, Deliver 3): curated views of an upstream's
# tools, per gateway location, against real upstreams.
#
# - Two locations over one upstream (the TypeScript SDK's Server,
#   t/js/tools_upstream.mjs, SSE replies) offer two views of it: one
#   renames "weather" and overrides its title, description and
#   annotations and hides "plain"; the other renames only "plain".  The
#   same view over the SDK with JSON replies.
# - A renamed tool's call reaches the upstream under its real name (the
#   upstream's capture shows it); its real name, and a hidden tool, are
#   unknown through the view (-32602) and never reach the upstream.
# - Pins and listed schemas are the upstream's: mcp_pass_pin enforce and
#   mcp_pass_check_arguments on beside a rename.
# - mcp_tools_deny reads the name the client sees.
# - The 2026-07-28 stateless path (the module's own built-in Everything
#   set upstream, which checks Mcp-Name against the body): a renamed
#   call's Mcp-Name says the real name as the body does.
# - nginx -t refuses views that would make a name two tools'.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use McpTest;
use McpGateway;
use McpJwt;

my $why = node_available('@modelcontextprotocol/sdk');
plan skip_all => "node: $why" if $why;

my $V26 = '2026-07-28';
my $P   = 'io.modelcontextprotocol/';

my $VIEW_A = <<'NGX';
            mcp_pass_tool weather as=forecast title=Forecast
                          "description=Tomorrow's sky, for a city"
                          annotation=readOnlyHint:true annotation=title:Sky;
            mcp_pass_tool plain hide;
NGX

my $rsa = McpJwt->new_key(type => 'RSA', kid => 'k1');

my $t = McpTest->new(
    ports => 5,    # 2: the built-in Everything set, 3: SDK (SSE), 4: SDK (JSON),
                   # 5: t/py/lastkey_upstream.py (logs what it parsed)
    http  => everything_upstream_http(),
    server => <<"NGX",
        location = /a {
            mcp_pass http://127.0.0.1:%%PORT3%%/a; mcp_session gw;
$VIEW_A        }
        location = /b {
            mcp_pass http://127.0.0.1:%%PORT3%%/b; mcp_session gw;
            mcp_pass_tool plain as=simple "description=Plain, renamed";
        }
        location = /aj {
            mcp_pass http://127.0.0.1:%%PORT4%%/aj; mcp_session gw;
$VIEW_A        }
        location = /pin {
            mcp_pass http://127.0.0.1:%%PORT3%%/pin; mcp_session gw;
            mcp_pass_pin enforce; mcp_pass_check_arguments on;
            mcp_pass_tool weather as=forecast description=Renamed;
        }
        location = /deny {
            mcp_pass http://127.0.0.1:%%PORT3%%/deny; mcp_session gw;
            mcp_pass_tool weather as=forecast;
            mcp_tools_deny forecast;
        }
        location = /py {
            mcp_pass http://127.0.0.1:%%PORT5%%/; mcp_session gw;
            mcp_pass_tool harmless as=safe;
            mcp_pass_tool delete_everything hide;
        }
        location = /scoped {
            mcp_pass http://127.0.0.1:%%PORT5%%/; mcp_session gw;
            mcp_pass_tool harmless as=safe;
            mcp_auth_jwt "MCP";
            mcp_auth_resource http://127.0.0.1:%%PORT%%/scoped;
            mcp_auth_jwt_issuer https://issuer.test;
            mcp_auth_jwt_key_file %%PREFIX%%/conf/jwks.json;
            mcp_auth_tool_scope safe mcp:tools:admin;
        }
        location = /s26 {
            mcp_pass http://127.0.0.1:%%PORT2%%/mcp; mcp_session gw;
            mcp_pass_tool test_simple_text as=simple;
        }
NGX
);

my (undef, $calls) = start_tools_upstream($t, $t->port(3), name => 'sse');
my (undef, $json_calls) = start_tools_upstream($t, $t->port(4), name => 'json', json => 1);
my (undef, $py_log) = start_python_upstream($t, 'lastkey_upstream', $t->port(5));

$t->write_file('conf/jwks.json', McpJwt::jwks($rsa));
$t->start;

# the calls the upstream received, by name, in order
sub arrived {
    my ($file) = @_;
    return [ map { McpTest::decode_json($_)->{name} } grep { /\S/ } split /\n/, McpTest::_slurp($file // $calls) // '' ];
}

sub listed {
    my ($path, $sid) = @_;
    my ($list, $r) = $t->mcp_request($sid, 'tools/list', {}, path => $path);
    return ({ map { $_->{name} => $_ } @{ $list->{result}{tools} // [] } }, $r);
}

sub call {
    my ($path, $sid, $name, %args) = @_;
    my ($msg) = $t->mcp_request($sid, 'tools/call', { name => $name, arguments => { city => 'Oslo', %args } },
                                path => $path);
    return $msg // {};
}

my %sid = map { $_ => scalar $t->mcp_initialize(path => "/$_") } qw(a b aj pin deny);


# --- two views of one upstream ---------------------------------------------------

for my $path (qw(a aj)) {
    my ($tools, $r) = listed("/$path", $sid{$path});
    my $type = $path eq 'a' ? 'SSE' : 'JSON';
    like($r->{headers}{'content-type'} // '', $path eq 'a' ? qr{^text/event-stream} : qr{^application/json},
         "/$path: the upstream's reply is $type");
    is_deeply([ sort keys %$tools ], ['forecast'], "/$path ($type): weather shown as forecast, plain hidden");
    my $f = $tools->{forecast} // {};
    is($f->{title}, 'Forecast', '... its title overridden');
    is($f->{description}, "Tomorrow's sky, for a city", '... its description overridden');
    is_deeply($f->{annotations}, { readOnlyHint => JSON::PP::true(), title => 'Sky' }, '... its annotations set');
    is_deeply($f->{inputSchema}{required}, ['city'], '... its inputSchema the upstream\'s');
}

{
    my ($tools) = listed('/b', $sid{b});
    is_deeply([ sort keys %$tools ], [qw(simple weather)], '/b, the same upstream: another view, plain as simple');
    is($tools->{weather}{description}, 'The weather in a city', '... weather as the upstream describes it');
    is($tools->{simple}{description}, 'Plain, renamed', '... simple described by the view');
}


# --- calls through a view ----------------------------------------------------------

{
    my $m = call('/a', $sid{a}, 'forecast');
    is(($m->{result}{structuredContent} // {})->{city}, 'Oslo', '/a: a call of forecast is answered')
        or diag(McpTest::encode_json($m));
    is(arrived()->[-1], 'weather', '... the upstream got it as weather');

    my $n = @{ arrived() };
    for my $name (qw(weather plain)) {
        my $e = call('/a', $sid{a}, $name);
        is($e->{error}{code}, -32602, "/a: a call of $name (real name of a renamed / hidden tool): -32602")
            or diag(McpTest::encode_json($e));
        like($e->{error}{message} // '', qr/Unknown tool/, '... "Unknown tool"');
    }
    is(scalar @{ arrived() }, $n, '... neither reached the upstream');

    my $s = call('/b', $sid{b}, 'simple');
    is($s->{result}{content}[0]{text}, 'plain', '/b: simple is answered by plain');
    is(arrived()->[-1], 'plain', '... which the upstream got');
    ok(call('/b', $sid{b}, 'weather')->{result}, '/b: weather, not in its view, is the upstream\'s');
    is(call('/b', $sid{b}, 'plain')->{error}{code}, -32602, '/b: plain, renamed away, is unknown');

    my $j = call('/aj', $sid{aj}, 'forecast');
    is(($j->{result}{structuredContent} // {})->{city}, 'Oslo', '/aj (JSON): forecast answered');
    is(arrived($json_calls)->[-1], 'weather', '... the upstream got weather');

    # the id as the client wrote it, and an argument with escapes
    my ($msg, $r) = $t->mcp_request($sid{a}, 'tools/call',
                                    { name => 'forecast', arguments => { city => "K\x{f8}ln \"\\/\"" } },
                                    path => '/a', id => 'id-"1"');
    is($msg->{id}, 'id-"1"', '/a: a string id with quotes comes back');
    is(($msg->{result}{structuredContent} // {})->{city}, "K\x{f8}ln \"\\/\"",
       '... the arguments reached the upstream as sent');
}


# --- the body printed again: what the upstream parsed -----------------------------

sub py_seen {
    return [ map { McpTest::decode_json($_) } grep { /\S/ } split /\n/, McpTest::_slurp($py_log) // '' ];
}

{
    my $sid = $t->mcp_initialize(path => '/py', protocol_version => '2025-03-26');
    my $args = '{"s":"\u00e9\"\\/","x":1.5,"n":[1,-2e3,{"k":null,"t":true}]}';
    my $r = $t->mcp_post($sid, '{"jsonrpc":"2.0","id":12345678901234567890,"method":"tools/call",'
                             . '"params":{"name":"safe","_meta":{"progressToken":123456789012345678901},'
                             . '"arguments":' . $args . '}}', path => '/py');
    like($r->{body} // '', qr/"id":\s*12345678901234567890\b/, '/py: a call of safe answered, the id digit for digit')
        or diag($r->{body});
    like($r->{body} // '', qr/ran harmless/, '... by harmless');
    my ($seen) = grep { ($_->{method} // '') eq 'tools/call' } @{ py_seen() };
    is(($seen // {})->{tool}, 'harmless', '... the upstream parsed the real name');
    is(McpTest::encode_json(($seen // {})->{id}), '12345678901234567890', '... and the id as the client wrote it');
    is_deeply(($seen // {})->{arguments}, McpTest::decode_json($args), '... and the arguments');
    like(McpTest::_slurp($py_log) // '', qr/"progressToken": 123456789012345678901\b/,
         '... and a progress token beyond 2^53, digit for digit');

    my $n = @{ py_seen() };
    my $e = $t->mcp_post($sid, { jsonrpc => '2.0', id => 'h', method => 'tools/call',
                                 params => { name => 'delete_everything', arguments => {} } }, path => '/py');
    like($e->{body} // '', qr/-32602.*Unknown tool/, '/py: the hidden tool: -32602, Unknown tool');
    is(scalar @{ py_seen() }, $n, '... not relayed');

    # a batch (2025-03-26): each message's id where it was
    $r = $t->mcp_post($sid, '[{"jsonrpc":"2.0","id":"l","method":"tools/list"},'
                          . '{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"x"}},'
                          . '{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"safe"}}]',
                      path => '/py');
    my %by = map { ($_->{id} // '') => $_ } @{ $r->{messages} // [] };
    is_deeply([ map { $_->{name} } @{ $by{l}{result}{tools} // [] } ], ['safe'],
              '/py, a batch: its tools/list shows safe alone') or diag($r->{body});
    like($by{7}{result}{content}[0]{text} // '', qr/ran harmless/, '... its call of safe ran harmless');
    my @seen = @{ py_seen() }[ $n .. $#{ py_seen() } ];
    is_deeply([ map { [ $_->{method}, $_->{id}, $_->{tool} ] } @seen ],
              [ [ 'tools/list', 'l', undef ], [ 'notifications/cancelled', undef, undef ], [ 'tools/call', 7, 'harmless' ] ],
              '... the upstream parsed the three messages, the call renamed');
}


# --- the caller's per-tool scopes read the name the client sees ------------------------

{
    my $res = 'http://127.0.0.1:' . $t->port . '/scoped';
    my %tok = map { $_ => $rsa->token(claims => McpJwt::claims(aud => $res, scope => $_)) }
              'mcp:tools', 'mcp:tools mcp:tools:admin';
    for my $scope (sort keys %tok) {
        my ($sid) = McpJwt::initialize($t, $tok{$scope}, path => '/scoped');
        my $h = { Authorization => "Bearer $tok{$scope}" };
        my $n = @{ py_seen() };
        my $l = $t->mcp_post($sid, { jsonrpc => '2.0', id => 'l', method => 'tools/list' },
                             path => '/scoped', headers => $h);
        my @names = sort map { $_->{name} } @{ ($l->{messages}[0] // {})->{result}{tools} // [] };
        my $c = $t->mcp_post($sid, { jsonrpc => '2.0', id => 'c', method => 'tools/call',
                                     params => { name => 'safe', arguments => {} } },
                             path => '/scoped', headers => $h);
        if ($scope =~ /admin/) {
            is_deeply(\@names, [qw(delete_everything safe)], "/scoped, $scope: safe listed");
            like($c->{body} // '', qr/ran harmless/, '... and its call runs harmless');
        } else {
            is_deeply(\@names, ['delete_everything'], "/scoped, $scope: safe, which needs mcp:tools:admin, not listed");
            is($c->{status}, 403, '... its call: 403');
            is(scalar(grep { ($_->{method} // '') eq 'tools/call' } @{ py_seen() }[ $n .. $#{ py_seen() } ]), 0,
               '... not relayed');
        }
    }
}


# --- pins, checks and policy read the right names ------------------------------------

{
    my ($tools) = listed('/pin', $sid{pin});
    is_deeply([ sort keys %$tools ], [qw(forecast plain)], '/pin: enforce pins the upstream\'s weather, listed as forecast');
    ($tools) = listed('/pin', $sid{pin});
    is_deeply([ sort keys %$tools ], [qw(forecast plain)], '... again: the view\'s description is no change to the pin');
    ok(call('/pin', $sid{pin}, 'forecast')->{result}, '... forecast callable');
    my $n = @{ arrived() };
    my $e = call('/pin', $sid{pin}, 'forecast', city => '');
    ok($e->{result}{isError}, '... with arguments the upstream\'s schema refuses: an isError result at the gateway')
        or diag(McpTest::encode_json($e));
    like($e->{result}{content}[0]{text} // '', qr/city: must be at least 1/, '... from the schema listed for weather');
    is(scalar @{ arrived() }, $n, '... not relayed');

    ($tools) = listed('/deny', $sid{deny});
    is_deeply([ sort keys %$tools ], ['plain'], '/deny: mcp_tools_deny forecast leaves the renamed weather out');
    like(call('/deny', $sid{deny}, 'forecast')->{error}{message} // '', qr/not allowed/, '... its call denied');
    like(call('/deny', $sid{deny}, 'weather')->{error}{message} // '', qr/Unknown tool/, '... its real name unknown');
    is(scalar @{ arrived() }, $n, '... neither relayed');
}


# --- 2026-07-28, stateless: Mcp-Name follows the body ---------------------------------

sub sl {
    my ($method, $params, %o) = @_;
    $params->{_meta} = { "${P}protocolVersion" => $V26, "${P}clientCapabilities" => {},
                         "${P}clientInfo" => { name => 'views', version => '1' } };
    my %h = ('MCP-Protocol-Version' => $V26, 'Mcp-Method' => $method);
    $h{'Mcp-Name'} = $params->{name} if defined $params->{name};
    my $r = $t->mcp_post(undef, { jsonrpc => '2.0', id => $o{id}, method => $method, params => $params },
                         headers => \%h, protocol_version => undef, path => '/s26', quiet => 1);
    my ($m) = grep { ref $_ eq 'HASH' && exists $_->{id} } @{ $r->{messages} // [] };
    return $m // {};
}

{
    my $list = sl('tools/list', {}, id => 's-list');
    my %names = map { $_->{name} => 1 } @{ $list->{result}{tools} // [] };
    ok($names{simple} && !$names{test_simple_text}, '2026-07-28: test_simple_text listed as simple')
        or diag(McpTest::encode_json($list));

    my $m = sl('tools/call', { name => 'simple', arguments => {} }, id => 's-call');
    is(($m->{result}{content} // [ {} ])->[0]{text}, 'This is a simple text response for testing.',
       '2026-07-28: a call of simple is answered (the upstream\'s Mcp-Name check passed)')
        or diag(McpTest::encode_json($m));
    my $up = wait_upstream($t, sub { ($_[0]{rid} // '') eq 's-call' });
    is(($up // {})->{tool}, 'test_simple_text', '... the upstream read test_simple_text');
    is(($up // {})->{status}, '200', '... and answered 200');

    my $e = sl('tools/call', { name => 'test_simple_text', arguments => {} }, id => 's-real');
    is($e->{error}{code}, -32602, '2026-07-28: the real name of a renamed tool: -32602');
    ok(!wait_upstream($t, sub { ($_[0]{rid} // '') eq 's-real' }, 0.3), '... not relayed');
}

unlike($t->error_log, qr/\[(?:alert|crit|error)\]/, 'no error in the error log');

$t->stop;


# --- nginx -t ----------------------------------------------------------------------

{
    my $c = McpTest->new(server => '');
    my %bad = (
        'two tools, one new name' => [ 'mcp_pass_tool a as=x; mcp_pass_tool b as=x;', qr/both renamed to "x"/ ],
        'onto a configured tool'  => [ 'mcp_pass_tool a as=b; mcp_pass_tool b title=B;', qr/is what "a" is renamed to/ ],
        'onto one configured before' => [ 'mcp_pass_tool b title=B; mcp_pass_tool a as=b;', qr/the name of another configured tool/ ],
        'a tool twice'            => [ 'mcp_pass_tool a title=A; mcp_pass_tool a hide;', qr/configured twice/ ],
        'hide with options'       => [ 'mcp_pass_tool a hide as=b;', qr/hidden: it takes no other option/ ],
        'nothing to do'           => [ 'mcp_pass_tool a;', qr/nothing to change/ ],
        'an unknown option'       => [ 'mcp_pass_tool a colour=red;', qr/unknown option "colour=red"/ ],
        'an annotation sans key'  => [ 'mcp_pass_tool a annotation=:true;', qr/is not "annotation=KEY:VALUE"/ ],
        'an empty as='            => [ 'mcp_pass_tool a as=;', qr/empty "as="/ ],
    );
    for my $name (sort keys %bad) {
        my ($conf, $re) = @{ $bad{$name} };
        $c->write_config(http => 'mcp_session_zone zone=gw:1m;',
                         server => "location = /v { mcp_pass http://127.0.0.1:1/; mcp_session gw; $conf }");
        my ($rc, $out) = $c->nginx_t;
        isnt($rc, 0, "nginx -t: $name refused");
        like($out, qr/\[emerg\].*$re/, '... saying why') or diag($out);
    }
    $c->write_config(http => 'mcp_session_zone zone=gw:1m;',
                     server => 'location = /v { mcp_pass http://127.0.0.1:1/; mcp_session gw;'
                             . ' mcp_pass_tool a as=b; mcp_pass_tool b as=a; mcp_pass_tool c hide; }');
    my ($rc, $out) = $c->nginx_t;
    is($rc, 0, 'nginx -t: two tools that swap names, and a hidden one, pass') or diag($out);
}

done_testing;
