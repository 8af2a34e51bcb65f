# The Debian package (scripts/package): "dpkg -i" puts the module where
# Debian's own nginx modules go and enables it through
# /etc/nginx/modules-enabled; the system nginx, run here with a prefix
# and port of its own and a conf that includes modules-enabled/*.conf as
# Debian's nginx.conf does, serves MCP with it; "dpkg -r" disables it
# (the link kept as *.removed, as Debian's modules do) and removes its
# files, a reinstall enables it again, and "dpkg --purge" leaves nothing.
# Nothing already running is touched: no system nginx is started or
# reloaded by the test (the package's nginx-reload trigger reloads only a
# system nginx that runs).

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use McpTest timeout => 600;

my $PKG  = 'libnginx-mod-http-mcp';
my $SO   = '/usr/lib/nginx/modules/ngx_http_mcp_module.so';
my $CONF = '/usr/share/nginx/modules-available/mod-http-mcp.conf';
my $LINK = '/etc/nginx/modules-enabled/50-mod-http-mcp.conf';

sub status {
    my (undef, $out) = McpTest::_run_capture(
        ['dpkg-query', '-W', '-f=${Status}', $PKG], 30);
    return $out // '';
}

my $why = $> != 0                         ? 'dpkg -i needs root'
        : !-x '/usr/bin/dpkg-deb'         ? 'no dpkg-deb'
        : !-x '/usr/sbin/nginx'           ? 'no system nginx'
        : ($ENV{MCP_NGINX} // $ENV{NGINX_BIN} // '/usr/sbin/nginx')
              ne '/usr/sbin/nginx'        ? 'the package is for the system nginx'
        : defined $ENV{MCP_MODULE}        ? 'the package holds its own build of the module'
        : status() =~ /installed|config-files/
                                          ? "$PKG is installed here: the test would remove it"
        : '';
plan skip_all => $why if $why;

# dpkg waits for no lock: another apt or dpkg may hold it for a while
sub dpkg {
    my @args = @_;
    my ($rc, $out);
    for (1 .. 60) {
        ($rc, $out) = McpTest::_run_capture(['dpkg', @args], 120);
        last unless $rc && $out =~ /lock/i;
        sleep 2;
    }
    diag "dpkg @args:\n$out" if $rc;
    return $rc;
}

my $installed = 0;
END { dpkg('--purge', $PKG) if $installed; }

my ($rc, $out) = McpTest::_run_capture(["$McpTest::REPO_ROOT/scripts/package"], 540);
is $rc, 0, 'scripts/package builds the .deb' or diag $out;
my ($deb) = ($out // '') =~ m{^(/\S+\.deb)$}m;
ok defined $deb && -f $deb, "the .deb is there" or BAIL_OUT('no package');
like $deb, qr{/${PKG}_[0-9.]+-\d+_amd64\.deb$}, 'named as Debian names them';

(undef, $out) = McpTest::_run_capture(['dpkg-deb', '-f', $deb, 'Depends'], 30);
my (undef, $abi) = McpTest::_run_capture(
    ['dpkg-query', '-W', '-f=${Provides}', 'nginx'], 30);
my ($want) = $abi =~ /(nginx-abi-[^\s,]+)/;
like $out, qr/(?:^|, )\Q$want\E(?:,|$)/m, "depends on $want";
like $out, qr/\blibcjson1\b/, 'and on libcjson1';

$installed = 1;
is dpkg('-i', $deb), 0, 'dpkg -i';
like status(), qr/install ok installed/, 'installed';
ok -f $SO, "$SO";
(undef, $out) = McpTest::_run_capture(['dpkg', '-L', $PKG], 30);
unlike $out // '', qr/fixtures/, 'and no test sets (fixtures/) in the package';
is readlink($LINK), $CONF, "$LINK links to $CONF";
is McpTest::_slurp($CONF), "load_module $SO;\n", 'which loads the module';

# the system nginx, as Debian's nginx.conf sets it up
my $conf = <<'NGX';
daemon off;
master_process on;
worker_processes 4;
pid %%PREFIX%%/logs/nginx.pid;
error_log %%PREFIX%%/logs/error.log info;
include /etc/nginx/modules-enabled/*.conf;
events { worker_connections 64; }
http {
    access_log %%PREFIX%%/logs/access.log;
    client_body_temp_path %%PREFIX%%/tmp/client_body;
    proxy_temp_path %%PREFIX%%/tmp/proxy;
    fastcgi_temp_path %%PREFIX%%/tmp/fastcgi;
    uwsgi_temp_path %%PREFIX%%/tmp/uwsgi;
    scgi_temp_path %%PREFIX%%/tmp/scgi;
    server {
        listen 127.0.0.1:%%PORT%%;
        location = /mcp { mcp on; %%BUILTIN%% }
    }
}
NGX
(my $plain = $conf) =~ s/%%BUILTIN%%//;
my $t = McpTest->new(module => 0, conf => $plain);
($rc, $out) = $t->nginx_t;
is $rc, 0, 'nginx -t with modules-enabled/*.conf' or diag $out;

$t->start;
my ($sid, $init) = $t->mcp_initialize;
ok $sid, 'initialize through the packaged module: a session';
is $init->{serverInfo}{name}, 'ngx_http_mcp_module', 'its serverInfo';
my $list = $t->mcp_request($sid, 'tools/list', {});
is_deeply $list->{result}{tools}, [], 'tools/list: no tools (no test sets)';
$t->stop;

# without the test sets: their module is not in the package
(my $fixtures = $conf) =~ s/%%BUILTIN%%/mcp_builtin everything;/;
$t->write_config(conf => $fixtures);
($rc, $out) = $t->nginx_t;
isnt $rc, 0, 'the package has no "everything" set';
like $out, qr/unknown MCP builtin set "everything": .*ngx_http_mcp_fixtures_module, which is not loaded/,
     'nginx -t says so, naming the module it would need';

is dpkg('-r', $PKG), 0, 'dpkg -r';
like status(), qr/deinstall ok config-files/, 'removed';
ok !-e $SO && !-e $CONF, 'the module and its conf are gone';
ok !-e $LINK && !-l $LINK, 'the module is no longer enabled';
ok -l "$LINK.removed", 'the link is kept aside, as Debian does';

is dpkg('-i', $deb), 0, 'dpkg -i again';
is readlink($LINK), $CONF, 'enabled again';

is dpkg('--purge', $PKG), 0, 'dpkg --purge';
$installed = 0;
unlike status(), qr/installed|config-files/, 'purged';
ok !-e $SO && !-e $CONF && !-e "/usr/share/doc/$PKG", 'no file left';
ok !-l $LINK && !-l "$LINK.removed", 'no link left';

$t->write_config(conf => $plain);
($rc, $out) = $t->nginx_t;
isnt $rc, 0, 'the system nginx no longer knows "mcp"';
like $out, qr/unknown directive "mcp"/, 'nginx -t says so';

done_testing;
