# The example configurations conf/gateway-*.conf: each passes "nginx -t"
# and does what its comments say, run as they are except for what a test
# must change (the module's path, ports, log and pid paths, the
# foreground).  The MCP servers they name on 127.0.0.1:3001-3003 are this
# module's Everything set (gateway-single, gateway-replicas) or
# @modelcontextprotocol/server-everything (gateway-policy, whose tool
# names are that server's).

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use McpTest;
use McpAssert;
use McpGateway;

# The file as a test can run it: %%PORT%%... placeholders, paths in the
# prefix, and $extra (server blocks) at the end of the http block.
sub conf_for_test {
    my ($file, $extra) = @_;
    my $conf = McpTest::_slurp("$McpTest::REPO_ROOT/conf/$file") // die "conf/$file: $!";
    my $ok = $conf =~ s{^load_module\s+modules/ngx_http_mcp_module\.so;}{%%LOAD_MODULE%%}m;
    $conf =~ s{^worker_processes\s+\S+;}{worker_processes 4;}m or $ok = 0;
    $conf =~ s{/var/log/nginx/}{%%PREFIX%%/logs/}g;
    $conf =~ s{/run/nginx\.pid}{%%PREFIX%%/logs/nginx.pid}g or $ok = 0;
    $conf =~ s{^(\s*)listen\s+8080;}{${1}listen 127.0.0.1:%%PORT%%;}mg or $ok = 0;
    $conf =~ s{127\.0\.0\.1:300([123])\b}{'127.0.0.1:%%PORT' . ($1 + 1) . '%%'}ge;
    my $temp = join '', map { "    ${_}_temp_path %%PREFIX%%/tmp/$_;\n" } qw(client_body proxy fastcgi uwsgi scgi);
    $conf =~ s/^http\s*\{\n/http {\n$temp/m or $ok = 0;
    $conf =~ s/\}\s*\z/$extra}\n/ or $ok = 0;
    my $user = $> == 0 ? "user root;\n" : '';
    return ($ok, "daemon off;\nmaster_process on;\n$user$conf");
}

my $EVERYTHING = sub { my ($n) = @_; <<"NGX" };
    mcp_session_zone zone=everything$n:1m;
    server {
        listen 127.0.0.1:%%PORT$n%%;
        access_log off;
        location = /mcp { mcp on; mcp_session everything$n; mcp_builtin everything; }
    }
NGX

# --- gateway-single.conf ----------------------------------------------------------

{
    my ($ok, $conf) = conf_for_test('gateway-single.conf', $EVERYTHING->(2));
    ok($ok, 'gateway-single.conf: adapted for the test');
    my $t = McpTest->new(conf => $conf, ports => 2);
    my ($rc, $out) = $t->nginx_t;
    is($rc, 0, 'gateway-single.conf: nginx -t passes') or diag($out);
    $t->start;
    my ($sid, $init) = $t->mcp_initialize(client_info => { name => 'single', version => '1' });
    like($sid, qr/^[0-9a-f]{32}$/, 'gateway-single.conf: initialize through the gateway');
    my $res = $t->mcp_call($sid, 'tools/call', { name => 'test_simple_text' });
    is((($res // {})->{content} // [])->[0]{text}, 'This is a simple text response for testing.',
       'gateway-single.conf: tools/call relayed');
    my $r = $t->mcp_post($sid, '{"jsonrpc":"2.0","id":"o1","method":"ping"}',
                         headers => { Origin => 'https://app.example.com' });
    is($r->{status}, 200, 'gateway-single.conf: the listed Origin passes');
    $r = $t->mcp_post($sid, '{"jsonrpc":"2.0","id":"o2","method":"ping"}',
                      headers => { Origin => 'https://evil.example.com' });
    is_rpc_error_body($r, 403, -32600, undef, 'gateway-single.conf: another Origin: 403');
    $r = $t->mcp_post($sid, '{"jsonrpc":"2.0","id":"a1","method":"ping"}', headers => { Authorization => 'Bearer t' });
    is($r->{status}, 200, 'gateway-single.conf: a request with Authorization passes');
    my $l = wait_upstream($t, sub { $_[0]{method} eq 'tools/call' }, 5, 'mcp.log');
    ok($l, 'gateway-single.conf: logs/mcp.log has a JSON line for tools/call');
    is(($l // {})->{tool}, 'test_simple_text', '... with the tool');
    is(($l // {})->{client_name}, 'single', '... the client name');
    is(($l // {})->{upstream}, '127.0.0.1:' . $t->port(2), '... and the upstream');
    $t->stop;
}

# --- gateway-replicas.conf ------------------------------------------------------------

{
    my ($ok, $conf) = conf_for_test('gateway-replicas.conf', join '', map { $EVERYTHING->($_) } 2 .. 4);
    ok($ok, 'gateway-replicas.conf: adapted for the test');
    my $t = McpTest->new(conf => $conf, ports => 4);
    my ($rc, $out) = $t->nginx_t;
    is($rc, 0, 'gateway-replicas.conf: nginx -t passes') or diag($out);
    $t->start;
    my @sids = map { scalar $t->mcp_initialize(id => "r$_") } 1 .. 3;
    my %replica;
    for my $i (1 .. 3) {
        my $l = wait_upstream($t, sub { $_[0]{method} eq 'initialize' && $_[0]{session} eq $sids[$i - 1] }, 5, 'mcp.log');
        $replica{ ($l // {})->{replica} // '?' }++;
    }
    is_deeply([ sort keys %replica ], [ sort map { '127.0.0.1:' . $t->port($_) } 2 .. 4 ],
              'gateway-replicas.conf: three sessions on the three replicas (round robin, shared by the workers)');
    my @texts = map { ((($t->mcp_call($_, 'tools/call', { name => 'test_simple_text' }) // {})->{content} // [])->[0] // {})->{text} // '' } @sids;
    is(scalar(grep { /simple text response/ } @texts), 3, 'gateway-replicas.conf: each session works on its replica');
    $t->stop;
}

# --- gateway-policy.conf -----------------------------------------------------------------

{
    my ($ok, $conf) = conf_for_test('gateway-policy.conf', '');
    ok($ok, 'gateway-policy.conf: adapted for the test');
    my $t = McpTest->new(conf => $conf, ports => 2);
    my ($rc, $out) = $t->nginx_t;
    is($rc, 0, 'gateway-policy.conf: nginx -t passes') or diag($out);

    SKIP: {
        my $why = node_available('@modelcontextprotocol/server-everything');
        skip "server-everything: $why", 16 if $why;
        $t->expect_log_error(qr/limiting requests, excess: .* by zone "mcp_tool_rate"/);
        my $node = start_everything_node(port => $t->port(2), log => $t->prefix . '/logs/server-everything.log');
        $t->start;

        my ($sid) = $t->mcp_initialize;
        my $list = $t->mcp_call($sid, 'tools/list');
        my @names = map { $_->{name} } @{ ($list // {})->{tools} // [] };
        ok(@names && !grep({ !/^(?:echo|get-.*)$/ } @names), "gateway-policy.conf /mcp: only echo and get-* listed (@names)");
        ok(!grep({ $_ eq 'get-env' } @names), '... not get-env');
        for my $tool ('get-env', 'trigger-long-running-operation') {
            my ($msg, $r) = $t->mcp_request($sid, 'tools/call', { name => $tool, arguments => {} }, id => "deny-$tool");
            is_error($msg, -32602, "deny-$tool", "gateway-policy.conf /mcp: $tool denied (-32602)");
        }
        my ($msg, $r) = $t->mcp_request($sid, 'tools/call', { name => 'echo', arguments => { message => 'x' } }, id => 'e0');
        is(((($msg // {})->{result} // {})->{content} // [])->[0]{text}, 'Echo: x', 'gateway-policy.conf /mcp: echo runs');
        is($r->{headers}{'x-tool-class'}, 'read', '... X-Tool-Class: read');
        ($msg, $r) = $t->mcp_request($sid, 'resources/subscribe', { uri => 'demo://resource/static/document/architecture.md' },
                                     id => 'sub', quiet => 1);
        is_rpc_error_body($r, 403, undef, 'sub', 'gateway-policy.conf /mcp: resources/subscribe refused by "if": 403 JSON-RPC error');

        # 30r/m, burst 10, nodelay: echo passes 10 more times, then 429
        my @st = map { ($t->mcp_request($sid, 'tools/call', { name => 'echo', arguments => { message => "m$_" } },
                                        id => "rl$_", quiet => 1))[1]{status} } 1 .. 12;
        is_deeply([ @st[0 .. 9] ], [ (200) x 10 ], 'gateway-policy.conf: the burst passes');
        is($st[-1], 429, 'gateway-policy.conf: then echo is limited: 429');
        my $pr = $t->mcp_post($sid, '{"jsonrpc":"2.0","id":"pp","method":"ping"}');
        is($pr->{status}, 200, 'gateway-policy.conf: ping (no tool) is not limited');
        ($msg, $r) = $t->mcp_request($sid, 'tools/call', { name => 'get-sum', arguments => { a => 1, b => 1 } }, id => 'gs');
        is($r->{status}, 200, 'gateway-policy.conf: another tool is not limited');

        my ($asid) = $t->mcp_initialize(path => '/admin/mcp');
        my $alist = $t->mcp_call($asid, 'tools/list', undef, path => '/admin/mcp');
        my @anames = map { $_->{name} } @{ ($alist // {})->{tools} // [] };
        ok((grep { $_ eq 'trigger-sampling-request' || $_ eq 'toggle-simulated-logging' } @anames)
           && !grep({ /^trigger-long/ || $_ eq 'get-env' } @anames),
           "gateway-policy.conf /admin/mcp: more tools, not trigger-long* or get-env (@anames)");
        ($msg) = $t->mcp_request($asid, 'tools/call', { name => 'trigger-long-running-operation', arguments => {} },
                                 id => 'adm', path => '/admin/mcp');
        is_error($msg, -32602, 'adm', 'gateway-policy.conf /admin/mcp: trigger-long-running-operation denied');

        my $l = wait_upstream($t, sub { $_[0]{id} eq 'deny-get-env' }, 5, 'mcp-audit.log');
        is(($l // {})->{tool}, 'get-env', 'gateway-policy.conf: the audit log has the denied call');
        is(($l // {})->{class}, 'read', '... with its class');

        $t->stop;
        stop_process($node->{pid});
    }
}

done_testing;
