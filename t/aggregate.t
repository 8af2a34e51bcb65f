# One MCP endpoint over several MCP servers (mcp_backend, issue #15): a
# gateway over two nginx instances of this module (the Everything set, and
# the validation set with location tools) and @modelcontextprotocol/
# server-everything, each behind an internal proxy_pass location.  Merged
# lists with prefixed names across pages, calls, prompt gets and resource
# reads routed, the capabilities' union, a backend killed (left out, one
# [warn], its tools a tool error) and back, backends restarted (their
# sessions lost, reopened by the gateway), tool policy on the prefixed
# names, a 2026-07-28 stateless client, the Inspector CLI; and attacks: a
# backend answering garbage, one that hangs, one whose reply is too big,
# forged cursors, tool names with the separator inside.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Time::HiRes qw(sleep time);
use MIME::Base64 ();
use McpTest timeout => 240;
use McpJwt;
use McpGateway qw(start_everything_node stop_process node_available npm_dir node_bin
                  silent_listener);

my $why = node_available('@modelcontextprotocol/server-everything');
plan skip_all => "node: $why" if $why;

my $V = '2026-07-28';
my $P = 'io.modelcontextprotocol/';

# backend alpha: the Everything set, 10 items a page
my $alpha_conf = <<'NGX';
        location = /mcp {
            mcp on;
            mcp_builtin everything;
            mcp_page_size 10;
            access_log %%PREFIX%%/logs/mcp.log;
        }
NGX
my $alpha = McpTest->new(server => $alpha_conf)->start;

# backend beta: the validation set and location tools, one with "__" in it
my $beta = McpTest->new(server => <<'NGX')->start;
        location = /mcp {
            mcp on;
            mcp_builtin validation;
            access_log %%PREFIX%%/logs/mcp.log;

            mcp_tool x__y {
                description "a name with the separator in it";
                pass /xy;
            }
            mcp_tool whoami {
                description "says beta";
                pass /who;
            }
        }
        location = /xy  { internal; return 200 "x__y of beta"; }
        location = /who { internal; return 200 "beta here"; }
NGX

my $hang = silent_listener();
my $hport = $hang->sockport;

my $proxy = 'proxy_http_version 1.1; proxy_set_header Connection "";';
my $t = McpTest->new(
    ports => 3,    # 2: server-everything, 3: an mcp_pass gateway in front of it
    http  => <<'NGX',
    mcp_session_zone zone=agg:4m;
    server {
        listen 127.0.0.1:%%PORT3%%;
        location = /mcp { mcp_pass http://127.0.0.1:%%PORT2%%/mcp; }
    }
NGX
    server => <<"NGX");
        mcp_session agg;

        location = /mcp {
            mcp_backend alpha /_b/alpha;
            mcp_backend beta  /_b/beta prefix=val;
            mcp_backend node  /_b/node;
            mcp_backend_timeout 3s;
            mcp_backend_retry 1s;
        }

        location = /policy {
            mcp_backend alpha /_b/alpha;
            mcp_backend beta  /_b/beta prefix=val;
            mcp_backend node  /_b/node;
            mcp_tools_deny node__get-env ~^alpha__test_;
        }

        location = /bad {
            mcp_backend alpha   /_b/alpha;
            mcp_backend garbage /_b/garbage;
            mcp_backend hang    /_b/hang;
            mcp_backend html    /_b/html;
            mcp_backend sse     /_b/sse;
            mcp_backend noid    /_b/noid;
            mcp_backend twice   /_b/twice;
            mcp_backend_timeout 1s;
            mcp_backend_retry 30s;
            mcp_backend_separator .;
        }

        location = /scoped {
            mcp_backend node /_b/node;
            mcp_backend beta /_b/beta prefix=val;
            mcp_auth_resource http://127.0.0.1:%%PORT%%/scoped;
            mcp_auth_api_keys %%PREFIX%%/conf/api_keys;
            mcp_auth_tool_scope node__echo tools:echo;
            mcp_auth_jwt "MCP";
        }

        location = /metrics { mcp_metrics; }

        location = /hop {
            mcp_backend beta /_b/beta;
            mcp_backend node /_b/viapass;
        }

        location = /small {
            mcp_backend beta /_b/beta;
            mcp_backend node /_b/node;
            mcp_backend_max_size 4k;
        }

        location /_b/alpha { internal; proxy_pass http://127.0.0.1:@{[ $alpha->port ]}/mcp; $proxy }
        location /_b/beta  { internal; proxy_pass http://127.0.0.1:@{[ $beta->port ]}/mcp; $proxy }
        location /_b/node  { internal; proxy_pass http://127.0.0.1:%%PORT2%%/mcp; $proxy }
        location /_b/viapass { internal; proxy_pass http://127.0.0.1:%%PORT3%%/mcp; $proxy }
        location /_b/hang  { internal; proxy_pass http://127.0.0.1:$hport/mcp; $proxy }
        location /_b/garbage { internal; default_type application/json; return 200 "{garbage"; }
        location /_b/html  { internal; default_type text/html; return 200 "<html>hello</html>"; }
        location /_b/sse   { internal; default_type text/event-stream; return 200 "data: nope\\n\\ndata: {\\\"jsonrpc\\\"\\n\\n"; }
        location /_b/noid  { internal; default_type application/json;
                             return 200 '{"jsonrpc":"2.0","result":{"protocolVersion":"2025-11-25","capabilities":{}}}'; }
        location /_b/twice { internal; default_type application/json;
                             return 200 '{"jsonrpc":"2.0","id":1,"result":{"tools":[]},"result":{"tools":[{"name":"x","inputSchema":{"type":"object"}}]}}'; }
NGX
$t->expect_log_error(qr/connect\(\) failed|upstream prematurely closed|upstream timed out/);
$t->write_file('conf/api_keys', McpJwt::api_key_line('k_plain', 'plain', 'mcp:tools')
                                . McpJwt::api_key_line('k_echo', 'echoer', 'mcp:tools', 'tools:echo'));
$t->start;

my $node_log = $t->prefix . '/logs/server-everything.log';
my $node = start_everything_node(port => $t->port(2), log => $node_log);

sub names { [ map { $_->{name} } @{ $_[0] // [] } ] }

# every page of a list
sub walk {
    my ($inst, $sid, $method, $key, %o) = @_;
    my ($all, $pages, $cursor) = ([], 0, undef);
    do {
        my $r = $inst->mcp_call($sid, $method, { defined $cursor ? (cursor => $cursor) : () }, %o);
        return ($all, $pages, $r) unless ref $r eq 'HASH' && ref $r->{$key} eq 'ARRAY';
        push @$all, @{ $r->{$key} };
        $pages++;
        $cursor = $r->{nextCursor};
    } while (defined $cursor && $pages < 50);
    return ($all, $pages);
}

sub text { (($_[0] // {})->{content} // [ {} ])->[0]{text} // '' }

# --- initialize: the capabilities' union ------------------------------------

my ($sid, $init) = $t->mcp_initialize;
ok($sid, 'initialize: a session');
ok($init->{capabilities}{tools} && $init->{capabilities}{prompts} && $init->{capabilities}{resources},
   'capabilities: tools, prompts, resources: the union of the backends\'');

my @node_sids = (McpTest::_slurp($node_log) // '') =~ /Session initialized with ID: (\S+)/g;
is(scalar @node_sids, 1, 'server-everything got one session at the client\'s initialize');

# --- merged lists, prefixed names, merged pages -----------------------------

my $direct_alpha = [ map { "alpha__$_" } @{ names((walk($alpha, scalar $alpha->mcp_initialize, 'tools/list', 'tools'))[0]) } ];
my ($tools, $pages) = walk($t, $sid, 'tools/list', 'tools');
my @names = @{ names($tools) };
cmp_ok($pages, '>', 1, "tools/list: $pages pages (alpha's are 10 tools a page)");
my %seen; my @dups = grep { $seen{$_}++ } @names;
is_deeply(\@dups, [], 'no tool twice across the pages');
is_deeply([ grep { /^alpha__/ } @names ], $direct_alpha, 'alpha\'s tools, all, prefixed "alpha__", in its order');
ok((grep { $_ eq 'val__validate' } @names) && (grep { $_ eq 'val__x__y' } @names),
   'beta\'s tools under prefix=val: val__validate, val__x__y');
ok((grep { $_ eq 'node__echo' } @names), 'server-everything\'s tools prefixed "node__" (node__echo)');
ok(!(grep { !/^(?:alpha|val|node)__./ } @names), 'every name has a backend\'s prefix');


# the second page asks only the backends that have more: alpha
{
    my $p1 = $t->mcp_call($sid, 'tools/list', {});
    my $p2 = $t->mcp_call($sid, 'tools/list', { cursor => $p1->{nextCursor} });
    my @n1 = @{ names($p1->{tools}) };
    my @n2 = @{ names($p2->{tools}) };
    ok((grep { /^node__/ } @n1) && (grep { /^val__/ } @n1) && (grep { /^alpha__/ } @n1),
       'page 1: every backend\'s first page');
    ok(@n2 && !(grep { !/^alpha__/ } @n2), 'page 2: alpha\'s second page only (' . scalar(@n2) . ' tools)');

    # the same cursor with bytes after its JSON: a lenient parser reads
    # the cursor and stops, the gateway refuses the whole
    my $json = MIME::Base64::decode_base64(($p1->{nextCursor} =~ tr/-_/+\//r) . '=' x (-length($p1->{nextCursor}) % 4));
    my $tail = MIME::Base64::encode_base64("$json x", '') =~ tr/+\//-_/r =~ s/=+$//r;
    my $r = $t->mcp_call($sid, 'tools/list', { cursor => $tail });
    is($r->{code}, -32602, 'page 1\'s cursor with bytes after its JSON: -32602');
}

my ($prompts) = walk($t, $sid, 'prompts/list', 'prompts');
my @pn = @{ names($prompts) };
ok((grep { /^alpha__/ } @pn) && (grep { /^node__/ } @pn), 'prompts/list: alpha\'s and node\'s prompts, prefixed');
my ($resources) = walk($t, $sid, 'resources/list', 'resources');
cmp_ok(scalar @$resources, '>', 2, 'resources/list: ' . scalar(@$resources) . ' resources, URIs as the backends gave them');
my ($templates) = walk($t, $sid, 'resources/templates/list', 'resourceTemplates');
cmp_ok(scalar @$templates, '>', 0, 'resources/templates/list: ' . scalar(@$templates) . ' templates');

# --- routing -------------------------------------------------------------------

my $r = $t->mcp_call($sid, 'tools/call', { name => 'node__echo', arguments => { message => 'via the gateway' } });
is(text($r), 'Echo: via the gateway', 'node__echo: server-everything\'s echo answers');
$r = $t->mcp_call($sid, 'tools/call', { name => 'val__whoami', arguments => {} });
is(text($r), 'beta here', 'val__whoami: beta\'s location tool answers');
$r = $t->mcp_call($sid, 'tools/call', { name => 'val__x__y', arguments => {} });
is(text($r), 'x__y of beta', 'val__x__y: a name with the separator inside reaches beta as "x__y"');
my $before = () = (McpTest::_slurp($alpha->prefix . '/logs/mcp.log') // '') =~ /POST/g;
$r = $t->mcp_call($sid, 'tools/call', { name => 'alpha__test_simple_text', arguments => {} });
like(text($r), qr/simple text/i, 'alpha__test_simple_text: alpha\'s tool answers');
my $after;
McpTest::wait_until(3, sub { $after = () = (McpTest::_slurp($alpha->prefix . '/logs/mcp.log') // '') =~ /POST/g;
                             $after > $before });
sleep 0.2;
$after = () = (McpTest::_slurp($alpha->prefix . '/logs/mcp.log') // '') =~ /POST/g;
is($after - $before, 1, '... with one POST in alpha\'s access log');

$r = $t->mcp_call($sid, 'tools/call', { name => 'nope__echo', arguments => {} });
is($r->{code}, -32602, 'an unknown prefix: -32602');
$r = $t->mcp_call($sid, 'tools/call', { name => 'node__', arguments => {} });
is($r->{code}, -32602, 'a bare prefix: -32602');
$r = $t->mcp_call($sid, 'tools/call', { name => 'node__no-such-tool', arguments => {} });
ok(ref $r eq 'HASH' && ($r->{code} || $r->{isError}), 'an unknown tool of a backend: the backend\'s own answer');

my ($np) = grep { /^node__/ } @pn;
my ($np_desc) = grep { $_->{name} eq $np } @$prompts;
my %pargs = map { $_->{name} => 'x' } grep { $_->{required} } @{ $np_desc->{arguments} // [] };
$r = $t->mcp_call($sid, 'prompts/get', { name => $np, arguments => \%pargs });
ok(ref $r eq 'HASH' && ref $r->{messages} eq 'ARRAY', "prompts/get $np: node's prompt, routed");

my ($nres) = grep { $_->{uri} =~ /^demo:/ } @$resources;    # node's
($nres) = @$resources unless $nres;
$r = $t->mcp_call($sid, 'resources/read', { uri => $nres->{uri} });
ok(ref $r eq 'HASH' && ref $r->{contents} eq 'ARRAY' && $r->{contents}[0]{uri} eq $nres->{uri},
   "resources/read $nres->{uri}: the backend that has it answers");
$r = $t->mcp_call($sid, 'resources/read', { uri => 'nowhere://x' });
is($r->{code}, -32002, 'resources/read of a URI no backend has: -32002');


# a 2025-03-26 client's batch: 30 lists and a call, 91 subrequests of one POST
{
    my ($bsid) = $t->mcp_initialize(protocol_version => '2025-03-26');
    my @batch = ((map { { jsonrpc => '2.0', id => $_, method => 'tools/list', params => {} } } 1 .. 30),
                 { jsonrpc => '2.0', id => 31, method => 'tools/call',
                   params => { name => 'node__echo', arguments => { message => 'batched' } } });
    my $br = $t->mcp_post($bsid, \@batch, protocol_version => '2025-03-26', timeout => 20);
    my @got = grep { ref $_ eq 'HASH' && defined $_->{id} } @{ $br->{messages} // [] };
    my @full = grep { ($_->{id} // 0) <= 30 && (grep { $_->{name} eq 'node__echo' } @{ $_->{result}{tools} // [] }) } @got;
    is(scalar @full, 30, 'a batch of 30 tools/list: 30 merged lists');
    my ($echo) = grep { ($_->{id} // 0) == 31 } @got;
    is(text($echo && $echo->{result}), 'Echo: batched', '... and the call among them');
}


# --- a backend behind an mcp_pass location (its replica pinning) ------------------------

{
    my $hs = $t->mcp_initialize(path => '/hop');
    my ($ht) = walk($t, $hs, 'tools/list', 'tools', path => '/hop');
    ok((grep { $_ eq 'node__echo' } @{ names($ht) }), 'through an mcp_pass hop: node\'s tools listed');
    $r = $t->mcp_call($hs, 'tools/call', { name => 'node__echo', arguments => { message => 'hop' } }, path => '/hop');
    is(text($r), 'Echo: hop', '... and node__echo answers');
}

# --- a cursor forged by the client -----------------------------------------

for my $c ('', '!!!', 'W1s5OSwieCJdXQ', 'W1swLCJ4Il0sWzAsInkiXV0', 'eyJhIjoxfQ', 'W10', 'A' x 9000) {
    $r = $t->mcp_call($sid, 'tools/list', { cursor => $c });
    is($r->{code}, -32602, 'tools/list with a forged cursor ' . substr($c, 0, 24) . ': -32602');
}
# [[0,"not-a-cursor"]]: alpha judges its own cursor
$r = $t->mcp_call($sid, 'tools/list', { cursor => 'W1swLCJub3QtYS1jdXJzb3IiXV0' });
is($r->{code}, -32602, 'a well-formed cursor that alpha refuses: -32602');

# --- policy on the prefixed names -----------------------------------------------

my $ps = $t->mcp_initialize(path => '/policy');
my ($pt) = walk($t, $ps, 'tools/list', 'tools', path => '/policy');
my @pnames = @{ names($pt) };
ok(!(grep { $_ eq 'node__get-env' || /^alpha__test_/ } @pnames), 'mcp_tools_deny: node__get-env and ~^alpha__test_ are not listed');
ok((grep { $_ eq 'node__echo' } @pnames) && (grep { $_ eq 'alpha__greet' } @pnames), '... the others are');
$r = $t->mcp_call($ps, 'tools/call', { name => 'node__get-env', arguments => {} }, path => '/policy');
is($r->{code}, -32602, 'node__get-env: denied by the policy');
$r = $t->mcp_call($ps, 'tools/call', { name => 'node__echo', arguments => { message => 'ok' } }, path => '/policy');
is(text($r), 'Echo: ok', 'node__echo: allowed');
# a denied name with CR LF in it is logged %-escaped: no line of the client's making
$t->expect_log_any(qr/\[info\] .*tool "alpha__test_x%0D%0A[^"]* forged" denied by policy/);
my $pmark = $t->log_mark;
$r = $t->mcp_call($ps, 'tools/call', { name => "alpha__test_x\r\n2026/01/01 00:00:00 [emerg] 1#1: forged",
                                       arguments => {} }, path => '/policy');
is($r->{code}, -32602, 'a denied name with CR LF: -32602');
ok($t->wait_for_log(qr/tool "alpha__test_x%0D%0A2026\/01\/01 00:00:00 \[emerg\] 1#1: forged" denied/, 5),
   '... logged %-escaped, on one line');
unlike($t->log_since($pmark), qr/^\S+ \S+ \[emerg\] 1#1: forged/m, '... no forged line in error_log');


# --- per-tool scopes on the prefixed names ------------------------------------------

for my $k ([ 'k_plain', 0 ], [ 'k_echo', 1 ]) {
    my %h = (headers => { 'X-Api-Key' => $k->[0] }, path => '/scoped');
    my $ks = $t->mcp_initialize(%h, skip_initialized => 1);
    $t->mcp_notify($ks, 'notifications/initialized', undef, %h);
    my ($kt) = walk($t, $ks, 'tools/list', 'tools', %h);
    my @kn = @{ names($kt) };
    is(scalar(grep { $_ eq 'node__echo' } @kn), $k->[1],
       "mcp_auth_tool_scope node__echo: listed for $k->[0]: $k->[1]");
    ok((grep { $_ eq 'node__get-sum' } @kn), "... node__get-sum is, for $k->[0]");
    my ($m, $hr) = $t->mcp_request($ks, 'tools/call', { name => 'node__echo', arguments => { message => 'k' } },
                                   %h, quiet => 1);
    if ($k->[1]) {
        is(text($m && $m->{result}), 'Echo: k', "$k->[0]: node__echo answers");
    } else {
        is($hr->{status}, 403, "$k->[0]: node__echo is 403 insufficient_scope");
    }
}

# --- a 2026-07-28 stateless client ------------------------------------------------

sub meta { { "${P}protocolVersion" => $V, "${P}clientCapabilities" => {},
             "${P}clientInfo" => { name => 't82', version => '1' } } }
sub sl {
    my ($method, $params) = @_;
    my %h = ('MCP-Protocol-Version' => $V, 'Mcp-Method' => $method);
    $h{'Mcp-Name'} = $params->{name} if $method eq 'tools/call';
    my $resp = $t->mcp_post(undef, { jsonrpc => '2.0', id => 1, method => $method,
                                     params => { %$params, _meta => meta() } },
                            headers => \%h, protocol_version => undef, quiet => 1);
    my ($m) = grep { ref $_ eq 'HASH' && exists $_->{id} } @{ $resp->{messages} // [] };
    return ($m, $resp);
}
my ($m, $resp) = sl('server/discover', {});
ok($m && $m->{result}{capabilities}{tools}, 'stateless server/discover: the union of the capabilities');
($m) = sl('tools/list', {});
ok($m && (grep { $_->{name} eq 'node__echo' } @{ $m->{result}{tools} // [] }), 'stateless tools/list: merged');
($m, $resp) = sl('tools/call', { name => 'node__echo', arguments => { message => 'stateless' } });
is(text($m && $m->{result}), 'Echo: stateless', 'stateless tools/call node__echo');
ok(!$resp->{headers}{'mcp-session-id'}, '... and no session id for the client');
($m) = sl('tools/call', { name => 'alpha__greet', arguments => { name => 'S' } });
like(text($m && $m->{result}), qr/S/, 'stateless tools/call alpha__greet');

# --- the Inspector CLI: two backends through one URL ---------------------------

my $cli = npm_dir() . '/node_modules/@modelcontextprotocol/inspector-cli/build/cli.js';
SKIP: {
    skip 'no inspector-cli', 3 unless -e $cli;
    (my $dir = $cli) =~ s{/[^/]+$}{};
    my $url = 'http://127.0.0.1:' . $t->port . '/mcp';
    my $inspector = sub {
        my ($rc, $out) = McpTest::_run_capture(
            [ '/bin/sh', '-c', 'cd "$0" && exec "$@"', $dir, node_bin(), $cli, '--cli', $url,
              '--transport', 'http', @_ ], 60);
        my ($json) = $out =~ /(\{.*\})/s;
        return ($rc, defined $json ? eval { McpTest::decode_json($json) } : undef, $out);
    };
    my ($rc, $j, $out) = $inspector->('--method', 'tools/list');
    my @in = @{ names($j && $j->{tools}) };
    ok($rc == 0 && (grep { $_ eq 'node__echo' } @in) && (grep { $_ eq 'val__validate' } @in),
       'inspector --cli tools/list: node\'s and beta\'s tools through one URL') or diag($out);
    ($rc, $j, $out) = $inspector->('--method', 'tools/call', '--tool-name', 'node__echo', '--tool-arg', 'message=insp');
    is(text($j), 'Echo: insp', 'inspector --cli tools/call node__echo') or diag($out);
    ($rc, $j, $out) = $inspector->('--method', 'tools/call', '--tool-name', 'val__whoami');
    is(text($j), 'beta here', 'inspector --cli tools/call val__whoami') or diag($out);
}


# --- conf/mcp-aggregate.conf, run as it is but for ports and paths ------------------

{
    my $conf = McpTest::_slurp("$McpTest::REPO_ROOT/conf/mcp-aggregate.conf") // die "conf: $!";
    my $ok = $conf =~ s{^load_module\s+modules/ngx_http_mcp_module\.so;}{%%LOAD_MODULE%%}m;
    $conf =~ s{^worker_processes\s+\S+;}{worker_processes 4;}m or $ok = 0;
    $conf =~ s{/var/log/nginx/}{%%PREFIX%%/logs/}g;
    $conf =~ s{/run/nginx\.pid}{%%PREFIX%%/logs/nginx.pid}g or $ok = 0;
    $conf =~ s{^(\s*)listen\s+8080;}{${1}listen 127.0.0.1:%%PORT%%;}mg or $ok = 0;
    my ($ap, $bp, $np) = ($alpha->port, $beta->port, $t->port(2));
    $conf =~ s{10\.0\.0\.1[12]:3001}{127.0.0.1:$ap}g or $ok = 0;
    $conf =~ s{127\.0\.0\.1:8081}{127.0.0.1:%%PORT2%%}g or $ok = 0;
    $conf =~ s{127\.0\.0\.1:3002}{127.0.0.1:$bp}g or $ok = 0;
    $conf =~ s{https://search\.example\.com/mcp}{http://127.0.0.1:$np/mcp}g or $ok = 0;
    my $temp = join '', map { "    ${_}_temp_path %%PREFIX%%/tmp/$_;\n" } qw(client_body proxy fastcgi uwsgi scgi);
    $conf =~ s/^http\s*\{\n/http {\n$temp/m or $ok = 0;
    my $user = $> == 0 ? "user root;\n" : '';
    ok($ok, 'conf/mcp-aggregate.conf: adapted for the test');
    my $c = McpTest->new(conf => "daemon off;\nmaster_process on;\n$user$conf", ports => 2);
    my ($rc, $out) = $c->nginx_t;
    is($rc, 0, 'conf/mcp-aggregate.conf: nginx -t passes') or diag($out);
    unlike($out, qr/\[warn\]/, '... without a warning') or diag($out);
    $c->start;
    my $cs = $c->mcp_initialize;
    my ($ct) = walk($c, $cs, 'tools/list', 'tools');
    my @cn = @{ names($ct) };
    ok((grep { $_ eq 'github__greet' } @cn) && (grep { $_ eq 'fs__validate' } @cn)
       && (grep { $_ eq 'search__echo' } @cn), 'conf/mcp-aggregate.conf: github__, fs__ and search__ tools in one list');
    my $cr = $c->mcp_call($cs, 'tools/call', { name => 'search__echo', arguments => { message => 'conf' } });
    is(text($cr), 'Echo: conf', 'conf/mcp-aggregate.conf: search__echo routed');
    my @log;
    McpTest::wait_until(3, sub {
        @log = grep { /"tool":"search__echo"/ } split /\n/, (McpTest::_slurp($c->prefix . '/logs/mcp.log') // '');
    });
    is(scalar @log, 1, '... and its access log line has $mcp_tool "search__echo"');
    diag(McpTest::_slurp($c->prefix . "/logs/mcp.log")) unless @log;
    $c->stop;
}

# --- a backend that fails: left out, one [warn], a tool error; back by itself -------

stop_process($node->{pid}, 'TERM');
my $mark = $t->log_mark;
for (1 .. 3) {
    ($tools) = walk($t, $sid, 'tools/list', 'tools');
    @names = @{ names($tools) };
}
ok(!(grep { /^node__/ } @names) && (grep { /^alpha__/ } @names) && (grep { /^val__/ } @names),
   'node down: tools/list answers with alpha\'s and beta\'s tools');
$r = $t->mcp_call($sid, 'tools/call', { name => 'node__echo', arguments => { message => 'x' } });
ok($r->{isError}, 'node__echo: a tool result with isError');
like(text($r), qr/Backend "node" is unavailable/, '... that names the backend: ' . text($r));
$r = $t->mcp_call($sid, 'tools/call', { name => 'val__whoami', arguments => {} });
is(text($r), 'beta here', 'the other backends keep working');
$r = $t->mcp_call($sid, 'prompts/get', { name => $np, arguments => \%pargs });
ok(($r->{code} // 0) == -32000 && $r->{message} =~ /Backend "node" is unavailable/,
   "prompts/get $np: -32000 that names the backend");
$r = $t->mcp_call($sid, 'resources/read', { uri => $nres->{uri} });
ok(($r->{code} // 0) == -32000 && $r->{message} =~ /unavailable.*"node"/,
   "resources/read of node's resource: -32000 that names it");
my @warns = $t->log_since($mark) =~ /\[warn\].*backend "node"/g;
cmp_ok(scalar @warns, '>=', 1, 'a [warn] in error.log names the backend');
my $metrics = $t->request(method => 'GET', path => '/metrics')->{body} // '';
my ($failures) = $metrics =~ /^mcp_backend_failures_total (\d+)$/m;
cmp_ok($failures // 0, '>=', 1, "mcp_backend_failures_total counts the failures (@{[ $failures // 'none' ]})");
is(scalar @warns, 1, "... once an episode, not per request or per worker");

$node = start_everything_node(port => $t->port(2), log => $node_log);
sleep 1.2;
my $back;
for (1 .. 10) {
    ($tools) = walk($t, $sid, 'tools/list', 'tools');
    last if $back = grep { $_ eq 'node__echo' } @{ names($tools) };
    sleep 0.3;
}
ok($back, 'node restarted: its tools are back without the client doing anything');
$r = $t->mcp_call($sid, 'tools/call', { name => 'node__echo', arguments => { message => 'again' } });
is(text($r), 'Echo: again', 'node__echo again: the gateway opened a new session at the restarted node');
like($t->log_since($mark), qr/\[notice\].*backend "node" answers again/, 'a [notice] says it answers again');

# a tool that runs past mcp_backend_timeout (3 s): a tool error, no failure of its backend
$mark = $t->log_mark;
$r = $t->mcp_call($sid, 'tools/call', { name => 'node__trigger-long-running-operation',
                                        arguments => { duration => 5, steps => 5 } }, timeout => 10);
ok($r->{isError} && text($r) =~ /mcp_backend_timeout/, 'a tool past mcp_backend_timeout: isError: ' . text($r));
unlike($t->log_since($mark), qr/\[warn\].*backend "node"/, '... no [warn]: a slow tool is no failed backend');
($tools) = walk($t, $sid, 'tools/list', 'tools');
ok((grep { $_ eq 'node__echo' } @{ names($tools) }), '... and node stays in the list');

# a client that leaves during a call is no failure of the backend
$mark = $t->log_mark;
$t->mcp_post($sid, { jsonrpc => '2.0', id => 77, method => 'tools/call',
                     params => { name => 'node__trigger-long-running-operation',
                                 arguments => { duration => 2, steps => 2 } } }, timeout => 0.5, quiet => 1);
sleep 2.5;
unlike($t->log_since($mark), qr/\[warn\].*backend "node"/, 'a client gone during a call: no [warn] for the backend');
$r = $t->mcp_call($sid, 'tools/call', { name => 'node__echo', arguments => { message => 'still' } });
is(text($r), 'Echo: still', '... and the backend is not left out');


# --- a reload of the gateway: the client's session and its backend sessions go on --------

{
    my @before = (McpTest::_slurp($node_log) // '') =~ /Session initialized with ID/g;
    $t->reload;
    $r = $t->mcp_call($sid, 'tools/call', { name => 'node__echo', arguments => { message => 'reloaded' } });
    is(text($r), 'Echo: reloaded', 'after a reload: node__echo in the same client session');
    my @after = (McpTest::_slurp($node_log) // '') =~ /Session initialized with ID/g;
    is(scalar @after, scalar @before, '... on the same backend session (none opened at node)');
}

# --- a backend restarted behind the gateway: its sessions lost, reopened ------------

$alpha->restart;
$r = $t->mcp_call($sid, 'tools/call', { name => 'alpha__greet', arguments => { name => 'R' } });
like(text($r), qr/R/, 'alpha restarted (its sessions gone): alpha__greet answers, the session reopened');
ok(!$r->{isError}, '... not as an error');

# --- attacks -----------------------------------------------------------------------

$mark = $t->log_mark;
my $t0 = time;
my $bs = $t->mcp_initialize(path => '/bad');
($tools) = walk($t, $bs, 'tools/list', 'tools', path => '/bad');
my $took = time - $t0;
@names = @{ names($tools) };
ok((grep { $_ eq 'alpha.greet' } @names) && !(grep { !/^alpha\./ } @names),
   'garbage, a hanging backend, an HTML page: left out, alpha\'s tools listed (separator ".")');
cmp_ok($took, '<', 4, sprintf('... initialize and the list within mcp_backend_timeout and a bit (%.1f s)', $took));
my $log = $t->log_since($mark);
like($log, qr/\[warn\].*backend "garbage".*no JSON-RPC response/, '[warn]: garbage is no JSON-RPC response');
like($log, qr/\[warn\].*backend "hang".*mcp_backend_timeout/, '[warn]: the hanging backend timed out');
like($log, qr/\[warn\].*backend "html"/, '[warn]: the HTML page');
like($log, qr/\[warn\].*backend "sse".*no JSON-RPC response/, '[warn]: an event stream of garbage');
like($log, qr/\[warn\].*backend "noid".*no JSON-RPC response/, '[warn]: a response without an id');
like($log, qr/\[warn\].*backend "twice".*no JSON-RPC response/, '[warn]: a response with a member named twice');
ok(!(grep { /^twice\./ } @names), '... and none of its tools listed');
$t0 = time;
$r = $t->mcp_call($bs, 'tools/call', { name => 'hang.x', arguments => {} }, path => '/bad');
ok($r->{isError} && text($r) =~ /Backend "hang" is unavailable/, 'hang.x: a tool error at once, the backend left out for mcp_backend_retry');
cmp_ok(time - $t0, '<', 0.9, '... without waiting for it');

$mark = $t->log_mark;
my $ss = $t->mcp_initialize(path => '/small');
($tools) = walk($t, $ss, 'tools/list', 'tools', path => '/small');
@names = @{ names($tools) };
ok((grep { /^beta__/ } @names) && !(grep { /^node__/ } @names), 'a reply over mcp_backend_max_size: that backend is left out');
like($t->log_since($mark), qr/\[warn\].*backend "node".*mcp_backend_max_size/, '... with a [warn] that says why');

# a configuration the gateway refuses
for my $bad ([ 'mcp_backend a /x; mcp_backend a /y;', qr/taken/ ],
             [ 'mcp_backend a x;', qr/no location URI/ ],
             [ 'mcp_backend a/b /x;', qr/invalid mcp_backend name/ ],
             [ 'mcp_backend a /x prefix=a__b;', qr/separator/ ],
             [ 'mcp_backend a /x foo=1;', qr/invalid parameter/ ],
             [ 'mcp_backend a /x; mcp_backend_separator "";', qr/separator/ ],
             [ 'mcp_backend a /x; mcp_backend_separator "a b";', qr/space/ ],
             [ 'mcp_pass http://127.0.0.1:1/mcp; mcp_backend a /x;', qr/without "mcp_pass"/ ],
             [ 'mcp_backend a /x; mcp_pass http://127.0.0.1:1/mcp;', qr/without "mcp_pass"/ ],
             [ join(' ', map { "mcp_backend b$_ /x$_;" } 1 .. 33), qr/more than 32/ ]) {
    my $c = McpTest->new(server => "location = /mcp { $bad->[0] }");
    my ($rc, $out) = $c->nginx_t;
    ok($rc != 0 && $out =~ $bad->[1], 'nginx -t refuses: ' . substr($bad->[0], 0, 60)) or diag($out);
}

stop_process($node->{pid}, 'TERM');
$t->stop;
$alpha->stop;
$beta->stop;
done_testing;
