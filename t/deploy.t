# The deployment files, checked as far as this machine can without a
# container runtime or helm (scripts/image checks the image itself):
#
#   conf/docker/nginx.conf   the image's conf serves MCP, run as it is but
#                            for paths and the port
#   docker-compose.yml       parses; the gateway service runs read-only
#                            with a tmpfs /tmp and its replicas are the
#                            server-everything that scripts/npm pins; its
#                            nginx.conf, deploy/compose/nginx.conf, spreads
#                            sessions over two real replicas
#   deploy/helm/ngx-mcp      rendered by t/py/helm_render.py (helm's
#                            template language as far as the chart uses
#                            it; Debian has no helm): every document
#                            parses, the pod runs as non-root on a read-only
#                            root with the three probes, the key goes in a
#                            Secret, and the ConfigMap's nginx.conf passes
#                            nginx -t, as a server and as a gateway
#   server.json              what the MCP registry requires
#
# /etc/nginx/ops.conf (mcp_health, mcp_metrics: issue #14) is included
# only when the module has those directives.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use McpTest timeout => 180;
use McpAssert;
use McpGateway;
use MIME::Base64 ();

my $ROOT = $McpTest::REPO_ROOT;
my $PY   = -x '/usr/bin/python3' ? '/usr/bin/python3' : 'python3';

my ($rc, $out) = McpTest::_run_capture([$PY, '-c', 'import yaml'], 30);
plan skip_all => 'python3-yaml is not installed (scripts/test installs it)'
    if $rc;

my $VERSION = (McpTest::_slurp("$ROOT/src/api/ngx_http_mcp.h")
               =~ /NGX_HTTP_MCP_MODULE_VERSION\s+"([^"]+)"/)[0];

# does the module know mcp_health (the ops.conf locations)?
my $bin = McpTest->module_path eq 'static' ? ($ENV{MCP_NGINX} // '/usr/sbin/nginx')
                                           : McpTest->module_path;
my $OPS = index(McpTest::_slurp($bin) // '', "mcp_health\0") >= 0;
note $OPS ? 'the module has mcp_health: ops.conf included'
          : 'the module has no mcp_health yet: ops.conf left out';

sub yaml_json {
    my ($file) = @_;
    my ($rc, $out) = McpTest::_run_capture(
        [$PY, '-c', 'import json, sys, yaml; '
                  . 'json.dump(yaml.safe_load(open(sys.argv[1])), sys.stdout)',
         $file], 30);
    die "$file: $out" if $rc;
    return McpTest::decode_json($out);
}

# A production conf as a test runs it: the module, ports, paths in the
# prefix, foreground.
sub conf_for_test {
    my ($conf, %o) = @_;
    my $ok = $conf =~ s{^\s*load_module\s+/usr/lib/nginx/modules/ngx_http_mcp_module\.so;}
                       {%%LOAD_MODULE%%}m;
    $conf =~ s{^(\s*)listen\s+8080;}{${1}listen 127.0.0.1:%%PORT%%;}mg or $ok = 0;
    $conf =~ s{^worker_processes\s+\S+;}{worker_processes 4;}m or $ok = 0;
    $conf =~ s{^error_log\s+stderr\s+\w+;}{error_log %%PREFIX%%/logs/error.log info;}m or $ok = 0;
    $conf =~ s{/dev/stdout}{%%PREFIX%%/logs/access.log}g;
    $conf =~ s{ /tmp/}{ %%PREFIX%%/tmp/}g;
    $conf =~ s{/etc/nginx/mcp\.d/}{%%PREFIX%%/mcp.d/}g;
    $conf =~ s{/etc/nginx/modules-enabled/}{%%PREFIX%%/modules-enabled/}g;
    $conf =~ s{/etc/nginx/secrets/}{%%PREFIX%%/secrets/}g;
    $conf =~ s{^(\s*)#?\s*include\s+/etc/nginx/ops\.conf;}
              {$OPS ? "${1}include $ROOT/conf/docker/ops.conf;" : ''}me;
    for my $name (keys %{ $o{hosts} // {} }) {
        $conf =~ s{\b\Q$name\E\b}{$o{hosts}{$name}}g;
    }
    my $user = $> == 0 ? "user root;\n" : '';
    return ($ok, "daemon off;\nmaster_process on;\n$user$conf");
}

sub nginx_t_ok {
    my ($t, $what) = @_;
    my ($rc, $out) = $t->nginx_t;
    is $rc, 0, "$what: nginx -t" or diag $out;
}

# the image's nginx.conf
{
    my ($ok, $conf) = conf_for_test(McpTest::_slurp("$ROOT/conf/docker/nginx.conf"));
    ok $ok, 'conf/docker/nginx.conf: the lines a test changes are there';
    like $conf, qr{^%%LOAD_MODULE%%\n(?:#.*\n)*include\s+%%PREFIX%%/modules-enabled/\*\.conf;}m,
        'the image conf includes modules-enabled/*.conf after the module';
    # the production image: the module alone
    my $t = McpTest->new(conf => $conf, fixtures => 0);
    mkdir $t->prefix . "/$_" for qw(mcp.d modules-enabled);
    nginx_t_ok($t, 'the image conf');
    $t->start;
    my ($sid, $init) = $t->mcp_initialize;
    ok $sid, 'the image conf serves initialize';
    is_deeply $t->mcp_request($sid, 'tools/list', {})->{result}{tools}, [],
        'and no tools: the test sets are not on';
    SKIP: {
        skip 'no mcp_health: no ops.conf', 6 unless $OPS;
        for my $probe ([ '/ready', 'ready' ], [ '/health', 'ready' ], [ '/live', 'live' ]) {
            my $r = $t->request(path => $probe->[0]);
            is $r->{status}, 200, "the image conf: $probe->[0] answers 200";
            my $j = eval { McpTest::decode_json($r->{body}) } // {};
            is $j->{probe}, $probe->[1], "... as the $probe->[1] probe";
        }
    }
    $t->stop;

    # --build-arg MCP_FIXTURES=1 drops this file in /etc/nginx/mcp.d ...
    $t->write_file('mcp.d/everything.conf', "mcp_builtin  everything;\n");
    my ($rc, $out) = $t->nginx_t;
    if (McpTest->module_path eq 'static') {
        pass 'a static nginx has the fixtures module linked in';
    }
    else {
        isnt $rc, 0, 'mcp.d/everything.conf without the fixtures module: nginx -t fails';
        like $out, qr/unknown MCP builtin set "everything": .*ngx_http_mcp_fixtures_module, which is not loaded/,
            '... naming the module';
        # an nginx that opens its error_log for -t logs it there too
        $t->expect_log_any(qr/unknown MCP builtin set "everything"/);
        # ... and this one in /etc/nginx/modules-enabled
        $t->write_file('modules-enabled/50-mcp-fixtures.conf',
                       'load_module  ' . McpTest->fixtures_path . ";\n");
    }
    $t->start;
    $sid = $t->mcp_initialize;
    my $tools = $t->mcp_request($sid, 'tools/list', {})->{result}{tools};
    ok scalar(grep { $_->{name} eq 'test_simple_text' } @$tools),
        'with mcp.d/everything.conf: the everything set';
    $t->stop;
}

# docker-compose.yml
my $compose = yaml_json("$ROOT/docker-compose.yml");
my $svc = $compose->{services} // {};
is_deeply [sort keys %$svc], [qw(everything-1 everything-2 gateway)],
    'compose: a gateway and two replicas';
my $gw = $svc->{gateway};
ok $gw->{read_only}, 'the gateway runs on a read-only root';
is_deeply $gw->{tmpfs}, ['/tmp'], 'with a tmpfs /tmp';
is_deeply $gw->{cap_drop}, ['ALL'], 'and no capabilities';
my ($mount) = grep { m{:/etc/nginx/nginx\.conf:ro$} } @{ $gw->{volumes} };
ok $mount, 'its nginx.conf is mounted read-only';
my ($local) = ($mount // '') =~ m{^\./([^:]+)};
ok defined $local && -f "$ROOT/$local", "$local is in the repository";
my $pins = McpTest::decode_json(McpTest::_slurp("$ROOT/scripts/npm/package.json"));
my $pin = $pins->{dependencies}{'@modelcontextprotocol/server-everything'};
for my $r (qw(everything-1 everything-2)) {
    ok scalar(grep { $_ eq "\@modelcontextprotocol/server-everything\@$pin" }
              @{ $svc->{$r}{command} // [] }),
        "$r runs server-everything $pin, as the tests do";
    is $svc->{$r}{environment}{PORT}, '3001', "$r listens on 3001";
}

SKIP: {
    my $why = node_available('@modelcontextprotocol/server-everything');
    skip "server-everything: $why", 6 if $why;

    my ($ok, $conf) = conf_for_test(McpTest::_slurp("$ROOT/$local"),
        hosts => { 'everything-1:3001' => '127.0.0.1:%%PORT2%%',
                   'everything-2:3001' => '127.0.0.1:%%PORT3%%' });
    ok $ok, 'compose gateway conf: the lines a test changes are there';
    my $t = McpTest->new(conf => $conf, ports => 3);
    my @nodes = start_everything_nodes(
        ports => [ $t->port(2), $t->port(3) ],
        logs  => [ map { $t->prefix . "/logs/everything-$_.log" } 1, 2 ]);
    nginx_t_ok($t, 'compose gateway conf');
    $t->start;
    my @sids = map { scalar $t->mcp_initialize } 1 .. 4;
    is scalar(grep { $_ } @sids), 4, 'four sessions through the gateway';
    my $tools = $t->mcp_request($sids[0], 'tools/list', {})->{result}{tools} // [];
    ok scalar(grep { $_->{name} eq 'echo' } @$tools),
        "server-everything's tools come through";
    my @per = map { my $l = McpTest::_slurp($_->{log}) // '';
                    scalar(() = $l =~ /Session initialized with ID/g) } @nodes;
    ok $per[0] >= 1 && $per[1] >= 1, "both replicas got sessions (@per)";
    $t->stop;
    stop_process($_->{pid}) for @nodes;
}

# the Helm chart
sub render {
    my ($values) = @_;
    my ($rc, $out) = McpTest::_run_capture(
        [$PY, "$ROOT/t/py/helm_render.py", "$ROOT/deploy/helm/ngx-mcp",
         McpTest::encode_json($values // {})], 60);
    die "helm_render: $out" if $rc;
    return McpTest::decode_json($out);
}

my $chart = yaml_json("$ROOT/deploy/helm/ngx-mcp/Chart.yaml");
is $chart->{appVersion}, $VERSION, "the chart's appVersion is the module's $VERSION";

my $r = render();
my %kinds = map { $_->{kind} => $_ } map { @{ $_->{docs} } } values %$r;
is_deeply [sort keys %kinds], [qw(ConfigMap Deployment Service)],
    'default values: a ConfigMap, a Deployment, a Service (no Secret)';
my $pod = $kinds{Deployment}{spec}{template}{spec};
my $c = $pod->{containers}[0];
ok $pod->{securityContext}{runAsNonRoot}, 'runAsNonRoot';
cmp_ok $pod->{securityContext}{runAsUser}, '>', 1000, 'runAsUser above 1000';
ok $c->{securityContext}{readOnlyRootFilesystem}, 'readOnlyRootFilesystem';
is_deeply $c->{securityContext}{capabilities}{drop}, ['ALL'], 'no capabilities';
is $c->{livenessProbe}{httpGet}{path}, '/live', 'liveness probe on /live';
is $c->{readinessProbe}{httpGet}{path}, '/ready', 'readiness probe on /ready';
is $c->{startupProbe}{httpGet}{path}, '/startup', 'startup probe on /startup';
ok $c->{resources}{requests}{memory} && $c->{resources}{limits}{memory},
    'resources';
is $c->{image}, "ngx-mcp:$VERSION", 'the image of this version';
my %mounts = map { $_->{mountPath} => $_ } @{ $c->{volumeMounts} };
ok $mounts{'/tmp'} && $mounts{'/etc/nginx/nginx.conf'}, '/tmp and nginx.conf mounted';
is_deeply $kinds{Service}{spec}{selector}, $kinds{Deployment}{spec}{selector}{matchLabels},
    "the Service selects the Deployment's pods";
is $kinds{Service}{spec}{ports}[0]{targetPort}, $c->{ports}[0]{name},
    "and targets the container's port";

{
    my ($ok, $conf) = conf_for_test($kinds{ConfigMap}{data}{'nginx.conf'});
    ok $ok, 'the ConfigMap conf: the lines a test changes are there';
    my $t = McpTest->new(conf => $conf);
    nginx_t_ok($t, 'the ConfigMap conf');
    $t->start;
    ok scalar $t->mcp_initialize, 'the ConfigMap conf serves initialize';
    $t->stop;
}

my $key = 'a' x 64;
$r = render({ upstreams => ['mcp-a:3001', 'mcp-b:3001'], stateKey => $key,
              allowedOrigins => ['https://app.example.com'] });
%kinds = map { $_->{kind} => $_ } map { @{ $_->{docs} } } values %$r;
ok $kinds{Secret}, 'with a stateKey: a Secret';
is MIME::Base64::decode_base64($kinds{Secret}{data}{'state.key'} // ''), $key,
    'that holds the key';
$pod = $kinds{Deployment}{spec}{template}{spec};
my ($sv) = grep { $_->{secret} } @{ $pod->{volumes} };
is $sv->{secret}{secretName}, $kinds{Secret}{metadata}{name}, 'mounted in the pod';
{
    my $text = $kinds{ConfigMap}{data}{'nginx.conf'};
    like $text, qr/mcp_pass\s+http:\/\/mcp_upstream\/mcp;/, 'the conf is a gateway';
    like $text, qr/mcp_state_key\s+\/etc\/nginx\/secrets\/state\.key;/, 'with the key';
    like $text, qr/mcp_allowed_origins\s+https:\/\/app\.example\.com;/, 'and the origins';
    my ($ok, $conf) = conf_for_test($text,
        hosts => { 'mcp-a:3001' => '127.0.0.1:%%PORT2%%',
                   'mcp-b:3001' => '127.0.0.1:%%PORT3%%' });
    my $t = McpTest->new(conf => $conf, ports => 3);
    $t->write_file('secrets/state.key', $key);
    nginx_t_ok($t, 'the gateway ConfigMap conf');
}

# server.json
my $server = McpTest::decode_json(McpTest::_slurp("$ROOT/server.json"));
like $server->{'$schema'}, qr{^https://static\.modelcontextprotocol\.io/schemas/[0-9-]+/server\.schema\.json$},
    'server.json: the registry schema';
like $server->{name}, qr{^[a-zA-Z0-9.-]+/[a-zA-Z0-9._-]+$}, 'a namespaced name';
cmp_ok length $server->{description}, '<=', 100, 'a description of 100 characters at most';
is $server->{version}, $VERSION, "version $VERSION";
is $server->{remotes}[0]{type}, 'streamable-http', 'a streamable-http remote';
like $server->{remotes}[0]{url}, qr{/mcp$}, 'at /mcp';
my $pkg = $server->{packages}[0];
is $pkg->{registryType}, 'oci', 'the image as an oci package';
like $pkg->{identifier}, qr{:\Q$VERSION\E$}, 'of this version';
my $label = (McpTest::_slurp("$ROOT/Dockerfile")
             =~ /io\.modelcontextprotocol\.server\.name="([^"]+)"/)[0];
is $label, $server->{name}, "the image's label names the server as the registry checks";

done_testing;
