# The extension API seen from outside: the fixtures module (fixtures/, an
# nginx addon of its own) includes the public header alone and is built
# into a .so of its own, which resolves the API in the module loaded
# before it; a module of another vendor, in a .so of its own (t/ext/),
# registers a set whose handlers read their call through the accessors
# and their own location's configuration; duplicate set and tool names
# and an API version mismatch fail "nginx -t" naming them; without the
# fixtures module loaded (the production module alone), "mcp_builtin
# everything" fails "nginx -t" naming the module to load, and a
# third-party set still works.
#
# The .so files are compiled here against the nginx tree that built the
# tested module (its objs/Makefile: compiler, flags, include paths), about
# a second each; without such a tree (MCP_MODULE=static, or a module
# copied elsewhere) only the include checks run.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use File::Basename qw(dirname);
use File::Temp ();
use Test::More;
use McpTest;
use McpAssert;

my $repo = dirname($FindBin::Bin);

# --- the fixtures see only the public header ---------------------------------

my @fixtures = map { (split m{/})[-1] } glob("$repo/fixtures/*.[ch]");
ok(@fixtures >= 7, 'the fixtures: ' . scalar(@fixtures) . ' files in fixtures/');
for my $f (@fixtures) {
    my $text = McpTest::_slurp("$repo/fixtures/$f") // '';
    my @inc = $text =~ /^#\s*include\s+(\S+)/mg;
    my @other = grep { $_ ne '"ngx_http_mcp.h"' && $_ ne '"ngx_http_mcp_fixtures.h"' } @inc;
    ok(@inc && !@other, "$f includes the public header and nothing else of the module")
        or diag("includes: @inc");
}

{
    # the addon's config: its own module, the public header's folder alone
    my $config = McpTest::_slurp("$repo/fixtures/config") // '';
    like($config, qr/^ngx_addon_name=ngx_http_mcp_fixtures_module$/m,
         'fixtures/config: an addon of its own');
    my ($incs) = $config =~ /^ngx_module_incs="([^"]*)"/m;
    is($incs, '$ngx_addon_dir/../src/api', 'fixtures/config: its include path is src/api alone');
    my @srcs = ($config =~ /^ngx_module_srcs="([^"]*)"/m)[0] =~ m{/(\w+\.c)\b}g;
    is_deeply([sort @srcs], [sort grep { /\.c$/ } @fixtures],
              'fixtures/config: every .c of fixtures/ is built');
    unlike(McpTest::_slurp("$repo/config") // '', qr{fixtures/\w+\.c},
           "the module's config builds none of them");
}

{
    my @inc = (McpTest::_slurp("$repo/src/api/ngx_http_mcp.h") // '') =~ /^#\s*include\s+(\S+)/mg;
    is_deeply(\@inc, [qw(<ngx_config.h> <ngx_core.h> <ngx_http.h> <cjson/cJSON.h>)],
              'ngx_http_mcp.h includes nginx and cJSON only');
}

# --- building .so files against the module's nginx tree ----------------------

# The nginx tree the tested module was built in: build/[asan/]nginx-src
# next to a scripts/build module, the tree of a scripts/build-nginx one.
sub nginx_tree {
    my $module = McpTest->module_path;
    return undef if $module eq 'static';
    my $dir = dirname($module);
    for my $tree ("$dir/nginx-src", dirname($dir)) {
        return $tree if -f "$tree/objs/Makefile"
                     && -f "$tree/objs/ngx_http_mcp_module_modules.c";
    }
    return undef;
}

my $tree = nginx_tree();

unless (defined $tree) {
    note('no nginx tree next to ' . McpTest->module_path . ': the .so tests are skipped');
    done_testing;
    exit 0;
}

my %mk = do {
    my $text = McpTest::_slurp("$tree/objs/Makefile");
    $text =~ s/\\\n/ /g;
    my %v = map { my ($x) = $text =~ /^\Q$_\E\s*=\s*(.*)$/m; ($_ => $x // '') }
            qw(CC CFLAGS ALL_INCS);
    # the module's link line: its objects, then libraries and flags
    my ($link) = $text =~ m{^\t\$\(LINK\) -o objs/ngx_http_mcp_module\.so (.*)$}m;
    my @words = split ' ', $link // '';
    $v{objs} = [ grep { /\.o$/ } @words ];
    $v{ldflags} = join ' ', grep { !/\.o$/ } @words;
    %v;
};

ok($mk{CC} && @{ $mk{objs} }, "the module's build rules are read from $tree/objs/Makefile")
    or BAIL_OUT('cannot read the Makefile');

# --- the module and the fixtures module, two .so files ---------------------

{
    my $fixtures = qr{/ngx_http_mcp_(?:fixtures_module|everything\w*|validation)\.o$};
    ok(!grep({ /$fixtures/ } @{ $mk{objs} }), 'the module links none of the fixtures');
    my $gen = McpTest::_slurp("$tree/objs/ngx_http_mcp_module_modules.c") // '';
    my @names = $gen =~ /^extern ngx_module_t\s+(\w+);/mg;
    ok(@names && !grep({ $_ eq 'ngx_http_mcp_fixtures_module' } @names),
       "the module's list of modules has no fixtures module") or diag("@names");
    $gen = McpTest::_slurp("$tree/objs/ngx_http_mcp_fixtures_module_modules.c") // '';
    @names = $gen =~ /^extern ngx_module_t\s+(\w+);/mg;
    is_deeply(\@names, ['ngx_http_mcp_fixtures_module'],
              "the fixtures' .so: its list of modules is the fixtures module alone");
    my $text = McpTest::_slurp($tree . '/objs/Makefile') // '';
    $text =~ s/\\\n/ /g;
    my ($link) = $text =~ m{^\t\$\(LINK\) -o objs/ngx_http_mcp_fixtures_module\.so (.*)$}m;
    my @objs = grep { /\.o$/ } split ' ', $link // '';
    ok(@objs && !grep({ !/$fixtures/ && !/_modules\.o$/ } @objs),
       "the fixtures' .so links the fixtures alone") or diag("@objs");
}

{
    # nginx opens modules RTLD_GLOBAL: the fixtures resolve the API in
    # the module loaded before them, and cannot be loaded first
    my $fixtures = McpTest->fixtures_path;
    my $module = McpTest->module_path;
    my ($rc, $log) = nginx_t_with(module => 0,
        main => "load_module $fixtures;\nload_module $module;",
        server => 'location /mcp { mcp on; mcp_builtin everything; }');
    isnt($rc, 0, 'the fixtures module loaded before the module: nginx -t fails');
    like($log, qr/\[emerg\].*dlopen\(\) ".*ngx_http_mcp_fixtures_module\.so" failed .*undefined symbol: ngx_http_mcp_/,
         '... on a symbol of the API the module exports');
}

my $out = File::Temp::tempdir('mcp-ext-XXXXXX', TMPDIR => 1, CLEANUP => 1);

sub run_in_tree {
    my ($cmd) = @_;
    return McpTest::_run_capture(['sh', '-c', "cd '$tree' && $cmd"], 120);
}

sub modules_c {
    my ($path, @names) = @_;
    McpTest::_spew($path, "#include <ngx_config.h>\n#include <ngx_core.h>\n\n"
        . join('', map { "extern ngx_module_t  $_;\n" } @names)
        . "\nngx_module_t *ngx_modules[] = {\n" . join('', map { "    &$_,\n" } @names)
        . "    NULL\n};\n\nchar *ngx_module_names[] = {\n"
        . join('', map { "    \"$_\",\n" } @names)
        . "    NULL\n};\n\nchar *ngx_module_order[] = {\n    NULL\n};\n");
}

# The test module, built with -D flags into $out/$name.so.  Its module
# list (ngx_modules, ngx_module_names) goes without the sanitizer: every
# nginx .so defines those names, which ASan, seeing two instrumented
# copies, would take for an ODR violation.
sub build_ext {
    my ($name, @defs) = @_;
    my $so = "$out/$name.so";
    modules_c("$out/${name}_modules.c", 'ngx_http_mcp_ext_test_module');
    my $cc = "$mk{CC} -c -fPIC $mk{CFLAGS} $mk{ALL_INCS} @defs";
    (my $plain = $cc) =~ s/\s-fsanitize\S*//g;
    my ($rc, $log) = run_in_tree(
        "$cc -o $out/$name.o $FindBin::Bin/ext/ngx_http_mcp_ext_test_module.c"
        . " && $plain -o $out/${name}_modules.o $out/${name}_modules.c"
        . " && $mk{CC} -o $so $out/$name.o $out/${name}_modules.o $mk{ldflags}");
    is($rc, 0, "t/ext module builds as a .so of its own" . (@defs ? " (@defs)" : ""))
        or diag($log);
    return $so;
}

sub nginx_t_with {
    my (%o) = @_;
    my $t = McpTest->new(%o);
    my ($rc, $log) = $t->nginx_t;
    return ($rc, $log);
}

# --- a module in another .so --------------------------------------------------

my $ext = build_ext('ext');

my $t = McpTest->new(main => "load_module $ext;", server => <<'NGX')->start;
        mcp_ext_greeting hi;
        location = /mcp { mcp on; mcp_builtin ext; }
        location = /fr  { mcp on; mcp_builtin ext; mcp_ext_greeting bonjour; }
NGX

sub echo_report {
    my ($sid, $params, %o) = @_;
    my ($res, $msg) = $t->mcp_call($sid, 'tools/call', { name => 'ext_echo', %$params }, %o);
    my $text = ref $res eq 'HASH' && ref $res->{content} eq 'ARRAY'
             ? $res->{content}[0]{text} : undef;
    my $report = eval { McpTest::decode_json($text // '') };
    diag('ext_echo: ' . McpTest::encode_json($msg)) unless ref $report eq 'HASH';
    return $report // {};
}

{
    my ($sid) = $t->mcp_initialize(capabilities => { sampling => {}, roots => {} },
                                   client_info => { name => 'ext-client', version => '2' });

    my $r = echo_report($sid, { arguments => { a => 1 }, _meta => { progressToken => 'p1' } });
    is($r->{method}, 'tools/call', 'accessors: ngx_http_mcp_call_method');
    is_deeply($r->{arguments}, { a => 1 }, 'accessors: ngx_http_mcp_call_arguments');
    ok($r->{params}, 'accessors: ngx_http_mcp_call_params');
    is($r->{entry}, 'ext_echo', 'accessors: ngx_http_mcp_call_entry_name');
    is($r->{entry_data}, "the echo's data",
       'accessors: ngx_http_mcp_call_entry_data, the data given to ngx_http_mcp_add_tool');
    ok($r->{progress}, 'accessors: ngx_http_mcp_call_has_progress_token with a token');
    ok($r->{data}, 'accessors: ngx_http_mcp_call_set_data, then ngx_http_mcp_call_data');
    ok($r->{pool_and_log}, 'accessors: ngx_http_mcp_call_pool, ngx_http_mcp_call_get_log');
    is_deeply($r->{client}, { name => 'ext-client', version => 3, sampling => JSON::PP::true,
                              elicitation => JSON::PP::false, roots => JSON::PP::true },
              'accessors: ngx_http_mcp_call_client (name, negotiated revision, capabilities)');
    is($r->{greeting}, 'hi',
       "ngx_http_mcp_call_loc_conf: the module's own directive, from the server level");

    $r = echo_report($sid, {});
    ok(!$r->{progress}, 'accessors: no progress token');
    ok(exists $r->{arguments} && !defined $r->{arguments}, 'accessors: no arguments: NULL');

    my ($res) = $t->mcp_call($sid, 'resources/read', { uri => 'ext://item/42' });
    is_deeply($res, { contents => [ { uri => 'ext://item/42', text => '42' } ] },
              'accessors: ngx_http_mcp_call_uri and the template variable');

    ($res) = $t->mcp_call($sid, 'completion/complete',
        { ref => { type => 'ref/resource', uri => 'ext://item/{id}' },
          argument => { name => 'id', value => '' } });
    is_deeply($res->{completion}{values}, [ 'ext://item/{id}', 'completion/complete' ],
              "completion/complete: the entry is the ref's template");

    my ($sid2) = $t->mcp_initialize(path => '/fr');
    $r = echo_report($sid2, {}, path => '/fr');
    is($r->{greeting}, 'bonjour', "ngx_http_mcp_call_loc_conf: the serving location's value");
    is_deeply($r->{client}, { name => 'mcp-test', version => 3, sampling => JSON::PP::false,
                              elicitation => JSON::PP::false, roots => JSON::PP::false },
              'accessors: another client, without capabilities');
}

$t->stop;

# --- refused at configuration time -------------------------------------------

{
    my $so = build_ext('dupset', '-DEXT_DUPLICATE_SET');
    my ($rc, $log) = nginx_t_with(main => "load_module $so;",
                                  server => 'location /mcp { mcp on; }');
    isnt($rc, 0, 'a set name registered twice: nginx -t fails');
    like($log, qr/\[emerg\].*duplicate MCP set "ext"/, 'a set name registered twice: named');
}

{
    my $so = build_ext('duptool', '-DEXT_DUPLICATE_TOOL');
    my ($rc, $log) = nginx_t_with(main => "load_module $so;",
                                  server => 'location /mcp { mcp on; }');
    is($rc, 0, 'a set with a duplicate tool that no location names: nginx -t passes')
        or diag($log);
    ($rc, $log) = nginx_t_with(main => "load_module $so;",
                               server => 'location /mcp { mcp on; mcp_builtin ext; }');
    isnt($rc, 0, 'a tool added twice to a set: nginx -t fails');
    like($log, qr/\[emerg\].*duplicate MCP tool "ext_echo" in set "ext"/,
         'a tool added twice: the tool and the set named');
}

{
    # SEP-2243: clients drop a tool whose x-mcp-header breaks the rules
    my $so = build_ext('badheader', '-DEXT_BAD_HEADER');
    my ($rc, $log) = nginx_t_with(main => "load_module $so;",
                                  server => 'location /mcp { mcp on; mcp_builtin ext; }');
    isnt($rc, 0, 'a tool with an x-mcp-header that is no HTTP token: nginx -t fails');
    like($log, qr/\[emerg\].*MCP tool "ext_bad_header" in set "ext": x-mcp-header "Re gion" is not an HTTP field name \(token\)/,
         'an invalid x-mcp-header: the tool, the set and the reason named');
}

{
    my $so = build_ext('api2', '-DEXT_API=2');
    my ($rc, $log) = nginx_t_with(main => "load_module $so;",
                                  server => 'location /mcp { mcp on; }');
    isnt($rc, 0, 'a module built for another API version: nginx -t fails');
    like($log, qr/\[emerg\].*needs version 2 of the MCP API, the loaded module has 1/,
         'ngx_http_mcp_api_version() tells the version loaded');
}

# --- without the fixtures module ----------------------------------------------

# The module alone, as production loads it (fixtures => 0).

{
    my ($rc, $log) = nginx_t_with(fixtures => 0,
        server => 'location /mcp { mcp on; mcp_builtin everything; }');
    isnt($rc, 0, 'without the fixtures: mcp_builtin everything fails nginx -t');
    like($log, qr/\[emerg\].*unknown MCP builtin set "everything": the test sets are in ngx_http_mcp_fixtures_module, which is not loaded \(load_module ngx_http_mcp_fixtures_module\.so after ngx_http_mcp_module\.so\)/,
         'without the fixtures: the set is named unknown, and the module to load');
    ($rc, $log) = nginx_t_with(fixtures => 0,
        server => 'location /mcp { mcp on; mcp_builtin validation; }');
    like($log, qr/\[emerg\].*unknown MCP builtin set "validation": .*ngx_http_mcp_fixtures_module/,
         'without the fixtures: no validation set either');
    ($rc, $log) = nginx_t_with(fixtures => 0,
        server => 'location /mcp { mcp on; mcp_builtin nosuch; }');
    like($log, qr/\[emerg\].*unknown MCP builtin set "nosuch" in /,
         'another unknown set: named unknown, no fixtures module named');
}

{
    my $b = McpTest->new(fixtures => 0, main => "load_module $ext;",
                         server => 'location = /mcp { mcp on; mcp_builtin ext; }')->start;
    my ($sid) = $b->mcp_initialize;
    my ($res) = $b->mcp_call($sid, 'tools/list');
    is_deeply([ map { $_->{name} } @{ $res->{tools} // [] } ], ['ext_echo'],
              "without the fixtures: another vendor's set is served");
    $b->stop;
}

done_testing;
