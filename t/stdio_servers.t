# mcp_stdio with the reference stdio servers from npm besides Everything:
# @modelcontextprotocol/server-memory (its knowledge graph in the file that
# MEMORY_FILE_PATH, passed by mcp_stdio_env, names: written by one child,
# read by the other) and @modelcontextprotocol/server-filesystem (a file
# under its allowed directory read and written, one outside refused by the
# server); no child after quit.  The servers are pinned in scripts/npm
# (build/npm, or MCP_NPM_DIR).

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Time::HiRes qw(sleep);
use McpTest timeout => 120;
use McpAssert;
use McpGateway qw(node_available node_bin npm_dir);
use IO::Socket::INET;
use JSON::PP ();

my $why = node_available('@modelcontextprotocol/server-memory',
                         '@modelcontextprotocol/server-filesystem');
plan skip_all => "$why (scripts/npm pins them)" if $why;
my $NODE = Cwd::abs_path(node_bin());
my $MEM  = Cwd::abs_path(npm_dir() . '/node_modules/@modelcontextprotocol/server-memory/dist/index.js');
my $FS   = Cwd::abs_path(npm_dir() . '/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js');

my $t = McpTest->new(
    workers => 1,
    server  => <<"NGX",
        location = /memory {
            mcp_stdio $NODE $MEM;
            mcp_stdio_env MEMORY_FILE_PATH=%%PREFIX%%/memory.jsonl;
            mcp_stdio_pool size=2;
            mcp_stdio_timeout 15s;
        }
        location = /files {
            mcp_stdio $NODE $FS %%PREFIX%%/files;
            mcp_stdio_dir %%PREFIX%%/files;
            mcp_stdio_pool size=1;
            mcp_stdio_timeout 15s;
        }
NGX
);
$t->write_file('files/hello.txt', "hello from nginx\n");
$t->start;
my $prefix = $t->{prefix};

sub call {
    my ($path, $method, $params) = @_;
    my $r = $t->mcp_post(undef, { jsonrpc => '2.0', id => "$path-$method", method => $method,
                                  ($params ? (params => $params) : ()) },
                         path => $path, timeout => 20);
    return $r->{json} // {};
}

sub text { join '', map { $_->{text} // '' } @{ $_[0]{result}{content} // [] } }

# --- server-memory ------------------------------------------------------------------

my $m = call('/memory', 'tools/list');
my %mt = map { $_->{name} => 1 } @{ $m->{result}{tools} // [] };
ok($mt{create_entities} && $mt{read_graph}, 'memory: its tools listed');

$m = call('/memory', 'tools/call', { name => 'create_entities', arguments => { entities => [
    { name => 'nginx', entityType => 'server', observations => ['runs stdio servers'] } ] } });
ok(!$m->{error} && !$m->{result}{isError}, 'memory: create_entities') or diag explain $m;
ok(-s "$prefix/memory.jsonl", 'memory: the graph in the file MEMORY_FILE_PATH names (mcp_stdio_env)');

# four reads at once: the second child starts and reads the file too
my @socks;
for my $i (1 .. 4) {
    my $body = JSON::PP::encode_json({ jsonrpc => '2.0', id => "g$i", method => 'tools/call',
                                       params => { name => 'read_graph', arguments => {} } });
    my $s = IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $t->port) or die;
    print $s "POST /memory HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
           . "Accept: application/json, text/event-stream\r\nConnection: close\r\n"
           . "Content-Length: " . length($body) . "\r\n\r\n$body";
    push @socks, $s;
}
my $seen = grep { my $s = $_; my $all = do { local $/; <$s> } // ''; $all =~ /runs stdio servers/ } @socks;
is($seen, 4, 'memory: four reads at once over two children each see the entity');
my $kids = 0;
for my $w ($t->worker_pids) {
    $kids += () = `ps -o args= --ppid $w` =~ /server-memory/g;
}
# two when the reads overlapped; a loaded machine may serve them one by one
ok($kids >= 1 && $kids <= 2, "memory: at most two children (size=2): $kids");

# --- server-filesystem --------------------------------------------------------------

my $f = call('/files', 'tools/call', { name => 'read_text_file', arguments => { path => "$prefix/files/hello.txt" } });
is(text($f), "hello from nginx\n", 'filesystem: a file under its directory read');

$f = call('/files', 'tools/call', { name => 'write_file',
                                     arguments => { path => "$prefix/files/out.txt", content => 'written' } });
ok(!$f->{error} && !$f->{result}{isError}, 'filesystem: write_file');
is(do { local (@ARGV, $/) = "$prefix/files/out.txt"; <> } // '', 'written', '... the file on disk');

$f = call('/files', 'tools/call', { name => 'read_text_file', arguments => { path => '/etc/hostname' } });
ok($f->{error} || $f->{result}{isError}, 'filesystem: a file outside its directory refused by the server');
is($f->{id}, '/files-tools/call', '... under the request\'s id');

my @pids;
for my $w ($t->worker_pids) {
    push @pids, map { /(\d+)/ ? $1 : () } `ps -o pid= --ppid $w`;
}
cmp_ok(scalar @pids, '>=', 2, 'children running: ' . scalar @pids);
$t->stop;
ok(!grep({ kill 0, $_ } @pids), 'nginx -s quit: no child left');

done_testing;
