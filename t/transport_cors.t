# CORS for the origins mcp_allowed_origins lets in (NFR-SEC-057), and the
# headers every MCP reply carries (NFR-SEC-051-056):
#
# - a preflight (OPTIONS, Origin, Access-Control-Request-Method) of an
#   allowed origin is 204 with the origin echoed (never "*"), Vary,
#   the methods, the MCP request headers and the Mcp-Param-* it asks for,
#   and a Max-Age; it passes mcp_auth_jwt (a browser sends no token with
#   it) and never reaches an upstream;
# - every reply to an allowed origin (200, SSE, the auth module's 401)
#   carries Access-Control-Allow-Origin and -Expose-Headers naming
#   Mcp-Session-Id and WWW-Authenticate; a refused origin gets 403 and
#   no CORS header; a gateway says its own CORS headers, once;
# - X-Content-Type-Options: nosniff on every reply, Cache-Control:
#   no-store on every reply but SSE (no-cache) and 2026-07-28 lists
#   (their caching hints stand);
# - in headless Chromium, a page on an allowed origin initializes
#   (reading Mcp-Session-Id), lists and calls tools, reads an SSE reply,
#   makes a 2026-07-28 call with Mcp-Param-* headers, reads the
#   auth module's WWW-Authenticate and the metadata it points to (public:
#   Allow-Origin *); the same page on another origin is
#   refused.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use File::Temp ();
use POSIX ();
use McpTest;
use McpAssert;
use McpJwt;

my $key = McpJwt->new_key(type => 'P-256', kid => 'cors-1');

my $t = McpTest->new(
    ports => 3,
    http  => <<'NGX',
    mcp_session_zone zone=up:1m;

    log_format page '$server_port $request_uri';

    # the page, on an allowed origin and on another
    server {
        listen 127.0.0.1:%%PORT2%%;
        listen 127.0.0.1:%%PORT3%%;
        access_log %%PREFIX%%/logs/page.log page;
        location / { root %%PREFIX%%/html; }
        location = /done { return 204; }
        location = /favicon.ico { return 204; }
    }
NGX
    server => <<'NGX',
        mcp_auth_resource http://127.0.0.1:%%PORT%%/auth;
        mcp_auth_jwt_issuer https://issuer.test;
        mcp_auth_jwt_key_file %%PREFIX%%/conf/jwks.json;
        mcp_auth_authorization_servers https://issuer.test;

        location = /mcp { mcp on; mcp_builtin everything;
                          mcp_allowed_origins http://127.0.0.1:%%PORT2%%; }
        location = /auth { mcp on; mcp_builtin everything;
                           mcp_allowed_origins http://127.0.0.1:%%PORT2%%;
                           mcp_auth_jwt "MCP"; }
        location = /gw { mcp_pass http://127.0.0.1:%%PORT%%/up;
                         mcp_allowed_origins http://127.0.0.1:%%PORT2%%; }
        location = /up { mcp on; mcp_session up; mcp_builtin everything;
                         mcp_allowed_origins *; }
        location = /.well-known/oauth-protected-resource/auth { mcp_auth_metadata; }
NGX
);
$t->write_file('conf/jwks.json', McpJwt::jwks($key));
$t->start;

my ($port, $page_port, $other_port) = ($t->port(1), $t->port(2), $t->port(3));
my $ORIGIN = "http://127.0.0.1:$page_port";
my $OTHER  = "http://127.0.0.1:$other_port";
my $META   = { 'io.modelcontextprotocol/protocolVersion'    => '2026-07-28',
               'io.modelcontextprotocol/clientCapabilities' => {} };

sub preflight {
    my ($path, $origin, %h) = @_;
    return $t->request(method => 'OPTIONS', path => $path,
                       headers => { Origin => $origin,
                                    'Access-Control-Request-Method' => 'POST', %h });
}

sub cors_headers { grep { $_->[0] =~ /^access-control-/i } @{ $_[0]{header_list} // [] } }

sub count_header {
    my ($r, $name) = @_;
    return scalar grep { lc $_->[0] eq lc $name } @{ $r->{header_list} // [] };
}

# --- the preflight -----------------------------------------------------------

{
    my $r = preflight('/mcp', $ORIGIN, 'Access-Control-Request-Headers' =>
        'content-type,mcp-session-id,mcp-protocol-version,mcp-param-region,mcp-param-x.y,'
        . 'x-evil,mcp-param-');
    is($r->{status}, 204, 'preflight of an allowed origin: 204');
    my $h = $r->{headers};
    is($h->{'access-control-allow-origin'}, $ORIGIN, '... the origin echoed');
    is(count_header($r, 'Access-Control-Allow-Origin'), 1, '... once');
    like($h->{vary} // '', qr/\bOrigin\b/, '... Vary: Origin');
    like($h->{vary} // '', qr/\bAccess-Control-Request-Headers\b/,
         '... Vary: Access-Control-Request-Headers (Allow-Headers echoes them)');
    my %methods = map { $_ => 1 } split /\s*,\s*/, $h->{'access-control-allow-methods'} // '';
    ok($methods{GET} && $methods{POST} && $methods{DELETE}, '... GET, POST, DELETE allowed')
        or diag(explain_response($r));
    my %allow = map { lc $_ => 1 } split /\s*,\s*/, $h->{'access-control-allow-headers'} // '';
    for my $name (qw(content-type authorization dpop mcp-session-id mcp-protocol-version mcp-method
                     mcp-name last-event-id mcp-param-region mcp-param-x.y)) {
        ok($allow{$name}, "... Allow-Headers has $name") or diag($h->{'access-control-allow-headers'});
    }
    ok(!$allow{'x-evil'} && !$allow{'mcp-param-'}, '... but neither x-evil nor the bare prefix');
    like($h->{'access-control-max-age'} // '', qr/^\d+$/, '... and a Max-Age');
    ok(!exists $h->{'access-control-allow-credentials'}, '... no Allow-Credentials');
    is($r->{body} // '', '', '... no body');

    $r = preflight('/mcp', $ORIGIN);
    like($r->{headers}{'access-control-allow-headers'} // '', qr/^Content-Type, Authorization/,
         'a preflight that asks for no headers gets the MCP ones');
}

{
    my $r = preflight('/mcp', $OTHER);
    is_rpc_error_body($r, 403, -32600, undef, 'preflight of another origin: 403 as before');
    is_deeply([ cors_headers($r) ], [], '... with no CORS header');

    $r = $t->request(method => 'OPTIONS', path => '/mcp');
    is($r->{status}, 405, 'OPTIONS without Origin: 405 as before');

    $r = preflight('/auth', $ORIGIN, 'Access-Control-Request-Headers' => 'authorization');
    is($r->{status}, 204, 'preflight to an mcp_auth_jwt location: 204, not 401');
    is($r->{headers}{'access-control-allow-origin'}, $ORIGIN, '... with the origin echoed');

    $r = $t->request(method => 'OPTIONS', path => '/auth', headers => { Origin => $ORIGIN });
    is($r->{status}, 401, 'an OPTIONS that is no preflight still needs a token');

    $r = preflight('/gw', $ORIGIN);
    is($r->{status}, 204, 'preflight through mcp_pass: answered by the gateway');
    is(count_header($r, 'Access-Control-Allow-Origin'), 1, '... one Allow-Origin');
    unlike($t->access_log, qr/"OPTIONS \/up /, '... the upstream never saw it');
}

# --- the RFC 9728 metadata: public, read before there is a token ------------

{
    my $path = '/.well-known/oauth-protected-resource/auth';
    my $r = $t->request(method => 'GET', path => $path, headers => { Origin => $OTHER });
    is($r->{status}, 200, 'the metadata: 200 to any origin');
    is($r->{headers}{'access-control-allow-origin'}, '*', '... Allow-Origin: * (a public document)');
    $r = preflight($path, $OTHER, 'Access-Control-Request-Headers' => 'mcp-protocol-version');
    is($r->{status}, 204, 'its preflight (the SDK sends MCP-Protocol-Version): 204');
    like($r->{headers}{'access-control-allow-headers'} // '', qr/\bMCP-Protocol-Version\b/,
         '... allowing MCP-Protocol-Version');
    is($r->{headers}{'access-control-allow-origin'}, '*', '... from any origin');
}

# --- actual requests ---------------------------------------------------------

my ($sid) = $t->mcp_initialize;

{
    my $r = $t->mcp_post($sid, { jsonrpc => '2.0', id => 1, method => 'ping' },
                         headers => { Origin => $ORIGIN });
    is($r->{status}, 200, 'POST from an allowed origin: 200');
    is($r->{headers}{'access-control-allow-origin'}, $ORIGIN, '... Allow-Origin echoed');
    my %expose = map { lc $_ => 1 } split /\s*,\s*/,
                 $r->{headers}{'access-control-expose-headers'} // '';
    ok($expose{'mcp-session-id'} && $expose{'www-authenticate'} && $expose{'mcp-protocol-version'}
       && $expose{'dpop-nonce'},
       '... Expose-Headers: Mcp-Session-Id, MCP-Protocol-Version, WWW-Authenticate, DPoP-Nonce')
        or diag(explain_response($r));
    like($r->{headers}{vary} // '', qr/\bOrigin\b/, '... Vary: Origin');
    is($r->{headers}{'x-content-type-options'}, 'nosniff', '... nosniff');
    is($r->{headers}{'cache-control'}, 'no-store', '... Cache-Control: no-store');

    $r = $t->mcp_post($sid, { jsonrpc => '2.0', id => 2, method => 'ping' },
                      headers => { Origin => $OTHER });
    is_rpc_error_body($r, 403, -32600, undef, 'POST from another origin: 403 as before');
    is_deeply([ cors_headers($r) ], [], '... with no CORS header');

    $r = $t->mcp_post($sid, { jsonrpc => '2.0', id => 3, method => 'ping' });
    is($r->{status}, 200, 'POST without Origin: 200');
    is_deeply([ cors_headers($r) ], [], '... with no CORS header');
    is($r->{headers}{'x-content-type-options'}, 'nosniff', '... nosniff all the same');

    my $s = $t->mcp_post($sid, { jsonrpc => '2.0', id => 4, method => 'tools/call',
                                 params => { name => 'test_tool_with_progress', arguments => {},
                                             _meta => { progressToken => 'p' } } },
                         headers => { Origin => $ORIGIN });
    like($s->{headers}{'content-type'} // '', qr{^text/event-stream}, 'an SSE reply');
    is($s->{headers}{'access-control-allow-origin'}, $ORIGIN, '... with Allow-Origin');
    is($s->{headers}{'cache-control'}, 'no-cache', '... and its own Cache-Control, alone');

    $r = $t->mcp_post(undef, { jsonrpc => '2.0', id => 5, method => 'initialize',
                               params => { protocolVersion => '2025-11-25', capabilities => {},
                                           clientInfo => { name => 'x', version => '1' } } },
                      path => '/auth', headers => { Origin => $ORIGIN });
    is($r->{status}, 401, 'the auth module: 401 without a token');
    is($r->{headers}{'access-control-allow-origin'}, $ORIGIN, '... with Allow-Origin');
    like($r->{headers}{'access-control-expose-headers'} // '', qr/\bWWW-Authenticate\b/,
         '... exposing WWW-Authenticate');
    ok(defined $r->{headers}{'www-authenticate'}, '... which is there');

    $r = $t->mcp_post(undef, { jsonrpc => '2.0', id => 6, method => 'initialize',
                               params => { protocolVersion => '2025-11-25', capabilities => {},
                                           clientInfo => { name => 'x', version => '1' } } },
                      path => '/gw', headers => { Origin => $ORIGIN });
    is($r->{status}, 200, 'through mcp_pass: 200');
    ok(defined $r->{headers}{'mcp-session-id'}, '... with a session');
    is(count_header($r, 'Access-Control-Allow-Origin'), 1,
       '... one Allow-Origin (the upstream\'s own is not relayed)');
    is(count_header($r, 'X-Content-Type-Options'), 1, '... one nosniff');
    # "the upstream never saw" the preflight was read in this log, which
    # does show what mcp_pass relays
    like($t->access_log, qr/"POST \/up HTTP\/1\.[01]" 200 /,
         '... and the access log shows the upstream\'s POST');
}

# --- 2026-07-28 lists keep their caching hints -------------------------------

{
    my $r = $t->mcp_post(undef, { jsonrpc => '2.0', id => 'l', method => 'tools/list',
                                  params => { _meta => $META } },
                         protocol_version => '2026-07-28',
                         headers => { 'Mcp-Method' => 'tools/list' });
    is($r->{status}, 200, 'a 2026-07-28 tools/list: 200');
    ok(!defined $r->{headers}{'cache-control'}, '... without Cache-Control: no-store')
        or diag(explain_response($r));
    is($r->{headers}{'x-content-type-options'}, 'nosniff', '... nosniff');

    $r = $t->mcp_post(undef, { jsonrpc => '2.0', id => 'c', method => 'tools/call',
                               params => { name => 'test_simple_text', arguments => {},
                                           _meta => $META } },
                      protocol_version => '2026-07-28',
                      headers => { 'Mcp-Method' => 'tools/call', 'Mcp-Name' => 'test_simple_text' });
    is($r->{status}, 200, 'a 2026-07-28 tools/call: 200');
    is($r->{headers}{'cache-control'}, 'no-store', '... Cache-Control: no-store');
}

# --- headless Chromium -------------------------------------------------------

my ($chromium) = grep { -x } map { "/usr/bin/$_" } qw(chromium chromium-browser google-chrome);

SKIP: {
    skip 'no chromium (scripts/test installs Debian\'s)', 1 unless $chromium;

    my $token = $key->token(claims => McpJwt::claims(aud => "http://127.0.0.1:$port/auth",
                                                     scope => 'mcp:tools'));
    my $page = page_html("http://127.0.0.1:$port", $token, "$OTHER/page.html");
    $t->write_file('html/page.html', $page);

    my $profile = File::Temp::tempdir('cors-chromium-XXXXXX', DIR => $t->prefix, CLEANUP => 1);
    my $pid = fork // die "fork: $!";
    if (!$pid) {
        POSIX::setpgid(0, 0);
        open STDOUT, '>', $t->prefix . '/logs/chromium.log';
        open STDERR, '>&', \*STDOUT;
        { exec $chromium, '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic',
             '--no-first-run', '--disable-background-networking', '--disable-component-update',
             '--disable-sync', '--disable-dev-shm-usage', "--user-data-dir=$profile",
             "$ORIGIN/page.html" };
        POSIX::_exit(127);
    }

    my %result;
    my $deadline = time + 90;
    while (time < $deadline && keys %result < 2) {
        for my $line (split /\n/, McpTest::_slurp($t->prefix . '/logs/page.log') // '') {
            next unless $line =~ m{^(\d+) /done\?r=(\S+)$};
            my ($p, $enc) = ($1, $2);
            $enc =~ s/%([0-9A-Fa-f]{2})/chr hex $1/ge;
            $result{$p} = eval { McpTest::decode_json($enc) } // { undecoded => $enc };
        }
        select undef, undef, undef, 0.2;
    }
    kill 'KILL', -$pid;
    waitpid $pid, 0;

    my $ok = $result{$page_port};
    ok($ok, 'Chromium: the page on the allowed origin reported')
        or diag(McpTest::_slurp($t->prefix . '/logs/chromium.log') // '');
    $ok //= {};
    is($ok->{error}, undef, 'Chromium, allowed origin: no fetch failed');
    is($ok->{init_status}, 200, '... initialize: 200');
    is($ok->{sid_len}, 32, '... Mcp-Session-Id read by the page');
    is($ok->{initialized}, 202, '... notifications/initialized: 202');
    cmp_ok($ok->{tools} // 0, '>', 10, '... tools/list: the tools');
    is($ok->{call}, 'This is a simple text response for testing.', '... tools/call: its text');
    like($ok->{sse_type} // '', qr{^text/event-stream}, '... the SSE call: text/event-stream');
    is($ok->{sse_progress}, 3, '... its progress notifications read');
    is($ok->{sse_result}, 'Tool with progress executed successfully', '... and its result');
    is($ok->{custom}, 'eu', '... a 2026-07-28 call with Mcp-Param-* headers');
    is($ok->{delete}, 200, '... DELETE of the session');
    is($ok->{auth_status}, 401, '... the auth module: 401 without a token');
    like($ok->{auth_challenge} // '', qr/^Bearer .*resource_metadata=/,
         '... its WWW-Authenticate read by the page');
    is($ok->{metadata_resource}, "http://127.0.0.1:$port/auth",
       '... the metadata the challenge points to, read');
    is($ok->{auth_ok}, 200, '... 200 with the token');

    my $no = $result{$other_port} // {};
    ok($result{$other_port}, 'Chromium: the page on another origin reported');
    like($no->{error} // '', qr/TypeError/, '... its fetch refused by the browser');
    ok(!defined $no->{init_status}, '... no reply read');
    like($t->access_log, qr/"OPTIONS \/mcp HTTP\/1\.1" 403 /,
         '... nginx refused its preflight with 403');
}

$t->stop;
done_testing;


sub page_html {
    my ($base, $token, $next) = @_;
    my $meta = McpTest::encode_json($META);
    return <<"HTML";
<!doctype html>
<html><head><meta charset="utf-8"><title>mcp cors</title></head>
<body><pre id="out"></pre>
<script>
const BASE = '$base', TOKEN = '$token', NEXT = '$next', META = $meta;
const R = { origin: location.origin };
const ACCEPT = 'application/json, text/event-stream';

function post(path, body, headers) {
  return fetch(BASE + path, { method: 'POST', body: JSON.stringify(body),
    headers: Object.assign({ 'Content-Type': 'application/json', 'Accept': ACCEPT },
                           headers || {}) });
}

const INIT = { jsonrpc: '2.0', id: 1, method: 'initialize',
               params: { protocolVersion: '2025-11-25', capabilities: {},
                         clientInfo: { name: 'chromium', version: '1' } } };

async function run() {
  let r = await post('/mcp', INIT);
  R.init_status = r.status;
  const sid = r.headers.get('Mcp-Session-Id');
  R.sid_len = sid ? sid.length : 0;
  await r.json();
  const s = { 'Mcp-Session-Id': sid, 'MCP-Protocol-Version': '2025-11-25' };

  r = await post('/mcp', { jsonrpc: '2.0', method: 'notifications/initialized' }, s);
  R.initialized = r.status;

  r = await post('/mcp', { jsonrpc: '2.0', id: 2, method: 'tools/list' }, s);
  R.tools = (await r.json()).result.tools.length;

  r = await post('/mcp', { jsonrpc: '2.0', id: 3, method: 'tools/call',
                           params: { name: 'test_simple_text', arguments: {} } }, s);
  R.call = (await r.json()).result.content[0].text;

  r = await post('/mcp', { jsonrpc: '2.0', id: 4, method: 'tools/call',
                           params: { name: 'test_tool_with_progress', arguments: {},
                                     _meta: { progressToken: 'p' } } }, s);
  R.sse_type = r.headers.get('Content-Type');
  const events = (await r.text()).split('\\n')
    .filter(l => l.startsWith('data:')).map(l => l.slice(5).trim())
    .filter(d => d.length).map(d => JSON.parse(d));
  R.sse_progress = events.filter(m => m.method === 'notifications/progress').length;
  const last = events[events.length - 1];
  R.sse_result = last && last.result ? last.result.content[0].text : null;

  r = await post('/mcp', { jsonrpc: '2.0', id: 5, method: 'tools/call',
                           params: { name: 'test_custom_header_tool',
                                     arguments: { region: 'eu', priority: 3, verbose: true },
                                     _meta: META } },
                 { 'MCP-Protocol-Version': '2026-07-28', 'Mcp-Method': 'tools/call',
                   'Mcp-Name': 'test_custom_header_tool', 'Mcp-Param-Region': 'eu',
                   'Mcp-Param-Priority': '3', 'Mcp-Param-Verbose': 'true' });
  const echo = await r.json();
  R.custom = echo.result
    ? JSON.parse(echo.result.content[0].text.replace('Called with: ', '')).region
    : JSON.stringify(echo);

  r = await fetch(BASE + '/mcp', { method: 'DELETE', headers: s });
  R.delete = r.status;

  r = await post('/auth', INIT);
  R.auth_status = r.status;
  R.auth_challenge = r.headers.get('WWW-Authenticate');

  // where the authorization server is: the challenge's metadata URL
  const meta = /resource_metadata="([^"]+)"/.exec(R.auth_challenge || '');
  r = await fetch(meta[1], { headers: { 'MCP-Protocol-Version': '2025-11-25' } });
  R.metadata_resource = (await r.json()).resource;

  r = await post('/auth', INIT, { 'Authorization': 'Bearer ' + TOKEN });
  R.auth_ok = r.status;
}

async function main() {
  try { await run(); } catch (e) { R.error = String(e); }
  document.getElementById('out').textContent = JSON.stringify(R);
  await fetch('/done?r=' + encodeURIComponent(JSON.stringify(R)));
  if (location.origin !== new URL(NEXT).origin) location.href = NEXT;
}
main();
</script></body></html>
HTML
}
