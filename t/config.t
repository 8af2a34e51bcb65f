# Directives: "mcp on;" alone, a stock Debian nginx.conf with one
# load_module line, values nginx -t must refuse (naming the bad value),
# the smallest session zone, contexts.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use McpTest;
use McpAssert;

# --- "mcp on;" alone: no mcp_builtin, no zone ------------------------------

my $t = McpTest->new(server => <<'NGX')->start;
        location /mcp { mcp on; }
        location /off { mcp off; return 200 "plain"; }
NGX

{
    my ($sid, $res, $r) = $t->mcp_initialize;
    like($sid, qr/^[0-9a-f]{32}$/, 'mcp on alone: initialize gives a session (default zone)');
    is($res->{protocolVersion}, '2025-11-25', 'mcp on alone: protocol version negotiated');
    is_deeply($res->{capabilities}, { logging => {} },
              'mcp on alone: capabilities: logging only (no tools, resources, prompts, completions)');
    my ($msg) = $t->mcp_request($sid, 'tools/list', undef, id => 1);
    is_result($msg, { tools => [] }, 1, 'mcp on alone: tools/list is empty');
    ($msg) = $t->mcp_request($sid, 'resources/list', undef, id => 2);
    is_result($msg, { resources => [] }, 2, 'mcp on alone: resources/list is empty');
    ($msg) = $t->mcp_request($sid, 'resources/templates/list', undef, id => 3);
    is_result($msg, { resourceTemplates => [] }, 3, 'mcp on alone: resources/templates/list is empty');
    ($msg) = $t->mcp_request($sid, 'prompts/list', undef, id => 4);
    is_result($msg, { prompts => [] }, 4, 'mcp on alone: prompts/list is empty');
    ($msg) = $t->mcp_request($sid, 'ping', undef, id => 5);
    is_result($msg, {}, 5, 'mcp on alone: ping');
    ($msg) = $t->mcp_request($sid, 'tools/call', { name => 'test_simple_text' }, id => 6);
    is_error($msg, -32602, 6, 'mcp on alone: the Everything tools are not there');
    ($msg) = $t->mcp_request($sid, 'resources/read', { uri => 'test://static-text' }, id => 7);
    is_error($msg, -32002, 7, 'mcp on alone: the Everything resources are not there');
    ($msg) = $t->mcp_request($sid, 'completion/complete',
        { ref => { type => 'ref/prompt', name => 'x' }, argument => { name => 'a', value => '' } },
        id => 8);
    is_error($msg, -32601, 8, 'mcp on alone: completion/complete is not offered (-32601)');
    ($msg) = $t->mcp_request($sid, 'logging/setLevel', { level => 'debug' }, id => 9);
    is_result($msg, {}, 9, 'mcp on alone: logging/setLevel');
    $r = $t->request(path => '/off');
    ok($r->{status} == 200 && $r->{body} eq 'plain', 'mcp off: an ordinary location');
}

# --- a stock Debian /etc/nginx/nginx.conf ------------------------------------

SKIP: {
    my $stock = McpTest::_slurp('/etc/nginx/nginx.conf');
    skip 'no /etc/nginx/nginx.conf', 9 unless defined $stock && $stock =~ /^\s*http\s*\{/m;

    my $d = McpTest->new(module => 1);
    my $p = $d->prefix;
    my $port = $d->port;
    my $load = 'load_module ' . $d->module_path . ";\n";
    my $location = "    server {\n        listen 127.0.0.1:$port;\n"
                 . "        location /mcp { mcp on; }\n    }\n";

    # As shipped, plus the two additions; only the files nginx writes move
    # into the prefix (pid, logs), so "nginx -t" needs no root-owned paths.
    (my $conf = $stock) =~ s{^(\s*pid\s+)\S+;}{$1$p/logs/nginx.pid;}m;
    $conf =~ s{^(\s*error_log\s+)/var/log/nginx/error\.log}{$1$p/logs/error.log}m;
    $conf =~ s{^(\s*access_log\s+)/var/log/nginx/access\.log}{$1$p/logs/access.log}m;
    $conf =~ s{^(http\s*\{\n)}{$1$location}m;
    $conf = $load . $conf;
    like($conf, qr/include \/etc\/nginx\/mime\.types;/, 'stock conf: the Debian file is used');
    $d->write_config(conf => $conf);
    my ($rc, $out) = $d->nginx_t;
    is($rc, 0, 'stock Debian nginx.conf + load_module + location /mcp { mcp on; }: nginx -t passes')
        or diag($out);
    like($out, qr/syntax is ok/, 'stock conf: nginx -t says syntax is ok');

    # To serve: in the foreground (the harness owns the process), 4 workers,
    # and without the default site, which listens on port 80.
    $conf =~ s{^\s*include /etc/nginx/sites-enabled/\*;\n}{}m;
    $conf =~ s{^worker_processes\s+\S+;}{worker_processes 4;}m;
    $conf =~ s{^user\s+\S+;\n}{}m unless $> == 0;
    $conf = "daemon off;\nmaster_process on;\n" . $conf;
    $d->write_config(conf => $conf);
    ($rc, $out) = $d->nginx_t;
    is($rc, 0, 'stock conf (foreground, without the port-80 site): nginx -t passes') or diag($out);
    my $started = eval { $d->start; 1 };
    ok($started, 'stock conf: nginx starts') or diag($@);
    skip 'nginx did not start', 3 unless $started;
    my @w = $d->worker_pids;
    is(scalar @w, 4, 'stock conf: four workers');
    my ($sid, $res) = eval { $d->mcp_initialize };
    ok(defined $sid && $sid =~ /^[0-9a-f]{32}$/, 'stock conf: initialize gives a session');
    my ($msg) = $d->mcp_request($sid, 'tools/list', undef, id => 't');
    is_result($msg, { tools => [] }, 't', 'stock conf: tools/list answers (empty)');
    $d->stop;
}

# --- values nginx -t refuses, naming the bad value ---------------------------

sub refused {
    my ($what, %cfg) = @_;
    my $c = McpTest->new(%cfg);
    my ($rc, $out) = $c->nginx_t;
    return ($rc, $out);
}

for my $case (
    [ 'mcp_session_zone zone=x (no size)', http => 'mcp_session_zone zone=x;',
      qr/\[emerg\].*"zone=x"/ ],
    [ 'mcp_session_zone zone=x:abc', http => 'mcp_session_zone zone=x:abc;',
      qr/\[emerg\].*invalid zone size "zone=x:abc"/ ],
    [ 'mcp_session_zone zone=x:31k (below 8 pages)', http => 'mcp_session_zone zone=x:31k;',
      qr/\[emerg\].*"zone=x:31k" is too small/ ],
    [ 'mcp_session_zone without zone=', http => 'mcp_session_zone timeout=1s;',
      qr/\[emerg\].*must have "zone" parameter/ ],
    [ 'mcp_session_zone timeout=0', http => 'mcp_session_zone zone=x:1m timeout=0;',
      qr/\[emerg\].*invalid timeout "timeout=0"/ ],
    [ 'mcp_session_zone timeout=soon', http => 'mcp_session_zone zone=x:1m timeout=soon;',
      qr/\[emerg\].*"timeout=soon"/ ],
    [ 'mcp_session_zone unknown parameter', http => 'mcp_session_zone zone=x:1m size=2;',
      qr/\[emerg\].*invalid parameter "size=2"/ ],
    [ 'duplicate mcp_session_zone', http => 'mcp_session_zone zone=x:1m; mcp_session_zone zone=x:1m;',
      qr/\[emerg\].*duplicate zone "x"/ ],
    [ 'mcp_builtin nope', server => 'location /mcp { mcp on; mcp_builtin nope; }',
      qr/\[emerg\].*"nope"/ ],
    [ 'mcp maybe', server => 'location /mcp { mcp maybe; }',
      qr/\[emerg\].*"maybe"/ ],
    [ 'mcp_page_size abc', server => 'location /mcp { mcp on; mcp_page_size abc; }',
      qr/\[emerg\].*"mcp_page_size"/ ],
    [ 'mcp_max_request_size big', server => 'location /mcp { mcp on; mcp_max_request_size big; }',
      qr/\[emerg\].*"mcp_max_request_size"/ ],
    [ 'mcp_session of an undefined zone', server => 'location /mcp { mcp on; mcp_session nosuch; }',
      qr/\[emerg\].*"nosuch"/ ],
    [ 'mcp in server context', server => 'mcp on;',
      qr/\[emerg\].*"mcp" directive is not allowed here/ ],
    [ 'mcp_session_zone in server context', server => 'mcp_session_zone zone=x:1m;',
      qr/\[emerg\].*"mcp_session_zone" directive is not allowed here/ ],
    [ 'mcp_builtin twice', server => 'location /mcp { mcp on; mcp_builtin everything; mcp_builtin everything; }',
      qr/\[emerg\].*"mcp_builtin" directive is duplicate/ ],
) {
    my ($what, $where, $snippet, $re) = @$case;
    my ($rc, $out) = refused($what, $where => $snippet);
    is($rc, 1, "$what: nginx -t fails (exit 1, not a crash)");
    like($out, $re, "$what: the message names the bad value") or diag($out);
}

{
    my ($rc, $out) = refused('mcp_page_size 0', server => 'location /mcp { mcp on; mcp_page_size 0; }');
    isnt($rc, 0, 'mcp_page_size 0: nginx -t fails');
    like($out, qr/mcp_page_size.*"0"|"0".*mcp_page_size/, 'mcp_page_size 0: the message names the bad value');
}
{
    my ($rc, $out) = refused('mcp_page_size 10001', server => 'location /mcp { mcp on; mcp_page_size 10001; }');
    isnt($rc, 0, 'mcp_page_size 10001: nginx -t fails');
}

# --- accepted values ----------------------------------------------------------

for my $case (
    [ 'smallest zone (32k = 8 pages)', http => 'mcp_session_zone zone=x:32k;',
      server => 'location /mcp { mcp on; mcp_session x; }' ],
    [ 'zone defined after its use', http => '',
      server => 'location /mcp { mcp on; mcp_session later; }',
      main_http_tail => 'mcp_session_zone zone=later:1m timeout=30m;' ],
    [ 'http-level defaults inherited', http => "mcp_page_size 5;\n mcp_max_request_size 64k;\n"
      . " mcp_allowed_origins *;\n mcp_session_zone zone=y:1m;\n mcp_session y;",
      server => 'location /mcp { mcp on; mcp_builtin everything; }' ],
) {
    my ($what, %cfg) = @$case;
    my $tail = delete $cfg{main_http_tail};
    my $c = McpTest->new(%cfg);
    if ($tail) {
        my $conf = $c->render_config;
        $conf =~ s/(\n\}\s*)\z/\n    $tail$1/;
        $c->write_config(conf => $conf);
    }
    my ($rc, $out) = $c->nginx_t;
    is($rc, 0, "$what: nginx -t passes") or diag($out);
}

$t->stop;
done_testing;
