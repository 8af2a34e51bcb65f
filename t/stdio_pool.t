# mcp_stdio: a real stdio MCP server (@modelcontextprotocol/server-everything,
# node) run by the workers as a pool of children, served without a session:
# a 2025 client's initialize and a 2026-07-28 server/discover answered from
# the child's own initialize, tools/list and tools/call relayed with the id
# mapped and restored, a child killed with SIGKILL mid-call answered as a
# JSON-RPC error within a second and replaced, the children's environment
# the allowlist alone, their stderr in error.log, nginx -t's refusals, and
# after a reload and nginx -s quit no child left and no zombie.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Time::HiRes qw(sleep time);
use IO::Socket::INET;
use JSON::PP qw(encode_json decode_json);
use McpTest timeout => 120;
use McpAssert;
use McpGateway qw(node_available node_bin npm_dir);

my $why = node_available('@modelcontextprotocol/server-everything');
plan skip_all => $why if $why;
my $NODE = Cwd::abs_path(node_bin());
my $EV   = Cwd::abs_path(npm_dir() . '/node_modules/@modelcontextprotocol/server-everything/dist/index.js');

# in the environment of this test's children: the check for leftovers
# finds them, not another test's server-everything running beside it
my $MARK = McpTest::process_mark('stdio_pool');

my $t = McpTest->new(
    workers => 1,
    server  => <<"NGX",
        location = /mcp {
            mcp_stdio $NODE $EV stdio;
            mcp_stdio_env $MARK;
            mcp_stdio_pool size=2;
            mcp_stdio_timeout 10s;
            mcp_stdio_stderr notice;
            mcp_stdio_env PATH=/usr/bin:/bin;
            mcp_stdio_env T_STDIO_SECRET_HIDDEN=shown;
            mcp_stdio_limit nofile=256;
        }
        location = /one {
            mcp_stdio $NODE $EV;
            mcp_stdio_env $MARK;
            mcp_stdio_pool size=1;
            mcp_stdio_timeout 30s;
        }
        location = /slow {
            mcp_stdio $NODE -e "setTimeout(function(){}, 600000)";
            mcp_stdio_pool size=1 total=1;
            mcp_stdio_timeout 1s;
        }
NGX
);
$ENV{T_STDIO_NOT_PASSED} = 'leak';
$t->start;

# the worker's children: pid => [state, command]
sub children {
    my %c;
    for my $w ($t->worker_pids) {
        for (`ps -o pid=,stat=,args= --ppid $w 2>/dev/null`) {
            my ($pid, $st, $cmd) = /^\s*(\d+)\s+(\S+)\s+(.*)$/ or next;
            $c{$pid} = [ $st, $cmd ];
        }
    }
    return \%c;
}

sub post {
    my ($msg, %h) = @_;
    return $t->mcp_post(undef, $msg, protocol_version => $h{version}, timeout => $h{timeout} // 15,
                        path => $h{path} // '/mcp');
}

# a 2026-07-28 request as its revision wants it: the version and the
# client's capabilities in params._meta, Mcp-Method (and Mcp-Name for a
# call) saying what the body says
sub post26 {
    my ($msg, %h) = @_;
    $msg->{params}{_meta} = { 'io.modelcontextprotocol/protocolVersion' => '2026-07-28',
                              'io.modelcontextprotocol/clientCapabilities' => {} };
    my %hd = ('Mcp-Method' => $msg->{method});
    $hd{'Mcp-Name'} = $msg->{params}{name} if $msg->{method} eq 'tools/call';
    return $t->mcp_post(undef, $msg, protocol_version => '2026-07-28', headers => \%hd,
                        timeout => $h{timeout} // 15, path => $h{path} // '/mcp');
}

sub raw_call {
    my ($path, $id, $args, $meta) = @_;
    my $body = encode_json({ jsonrpc => '2.0', id => $id, method => 'tools/call',
        params => { name => 'trigger-long-running-operation', arguments => $args,
                    ($meta ? (_meta => $meta) : ()) } });
    my $s = IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $t->port) or die;
    print $s "POST $path HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
           . "Accept: application/json, text/event-stream\r\nConnection: close\r\n"
           . "Content-Length: " . length($body) . "\r\n\r\n$body";
    return $s;
}

# --- a 2025 client without a session ---------------------------------------------

my $r = post({ jsonrpc => '2.0', id => 'init-1', method => 'initialize',
               params => { protocolVersion => '2025-06-18', capabilities => {},
                           clientInfo => { name => 't', version => '1' } } });
is($r->{status}, 200, 'initialize: 200');
is($r->{json}{id}, 'init-1', 'initialize: the client\'s id');
is($r->{json}{result}{protocolVersion}, '2025-06-18', 'initialize: the version the client asked for');
like($r->{json}{result}{serverInfo}{name} // '', qr/everything/i, 'initialize: the stdio server\'s serverInfo');
ok(!defined $r->{headers}{'mcp-session-id'}, 'initialize: no session id (served stateless)');

$r = post({ jsonrpc => '2.0', method => 'notifications/initialized' });
is($r->{status}, 202, 'notifications/initialized: 202');

$r = post({ jsonrpc => '2.0', id => 7, method => 'tools/list' });
is($r->{json}{id}, 7, 'tools/list: the client\'s id restored');
my %tools = map { $_->{name} => 1 } @{ $r->{json}{result}{tools} // [] };
ok($tools{echo} && $tools{'trigger-long-running-operation'}, 'tools/list: the stdio server\'s tools')
    or diag explain $r->{json};

$r = post({ jsonrpc => '2.0', id => 'x"y', method => 'tools/call',
            params => { name => 'echo', arguments => { message => "h\x{e9}llo\nthere" } } });
is($r->{json}{id}, 'x"y', 'tools/call: a string id with a quote, restored');
is($r->{json}{result}{content}[0]{text}, "Echo: h\x{e9}llo\nthere", 'tools/call echo: the result');

$r = post({ jsonrpc => '2.0', id => 8, method => 'tools/call',
            params => { name => 'get-env', arguments => {} } });
my $env = $r->{json}{result}{content}[0]{text} // '';
like($env, qr/T_STDIO_SECRET_HIDDEN/, 'get-env: a named variable is passed');
unlike($env, qr/T_STDIO_NOT_PASSED/, 'get-env: nginx\'s environment is not');

$r = post({ jsonrpc => '2.0', id => 9, method => 'ping' });
is_deeply($r->{json}, { jsonrpc => '2.0', id => 9, result => {} }, 'ping: answered');

$r = post({ jsonrpc => '2.0', id => 10, method => 'tools/call',
            params => { name => 'no-such-tool', arguments => {} } });
ok($r->{json}{error} || $r->{json}{result}{isError}, 'an unknown tool: the server\'s own error, relayed');
is($r->{json}{id}, 10, '... under the client\'s id');

$r = post({ jsonrpc => '2.0', id => 'big', method => 'tools/call',
            params => { name => 'echo', arguments => { message => 'x' x 40000 } } });
is($r->{status}, 413, 'a body over client_body_buffer_size: 413');
is($r->{json}{error}{code}, -32600, '... with a JSON-RPC error');

$r = post('[{"jsonrpc":"2.0","id":1,"method":"ping"}]');
is($r->{json}{error}{code}, -32600, 'a batch: -32600');
$r = post('{"jsonrpc":"2.0","id":1,');
is($r->{json}{error}{code}, -32700, 'broken JSON: -32700');
$r = $t->request(method => 'GET', path => '/mcp', headers => { Accept => 'text/event-stream' });
is($r->{status}, 405, 'GET: 405');
like($r->{body}, qr/"code":-32600/, 'GET: a JSON-RPC error');

# --- progress on the POST's stream ------------------------------------------------

$r = post({ jsonrpc => '2.0', id => 'p1', method => 'tools/call',
            params => { name => 'trigger-long-running-operation', arguments => { duration => 1, steps => 2 },
                        _meta => { progressToken => 'tok-1' } } });
like($r->{headers}{'content-type'} // '', qr{^text/event-stream}, 'a progressToken: the reply is a stream');
my @prog = grep { ($_->{method} // '') eq 'notifications/progress' } @{ $r->{messages} };
is(scalar @prog, 2, '... with the two progress notifications');
is($prog[0]{params}{progressToken}, 'tok-1', '... under the client\'s token');
my ($last) = grep { defined $_->{id} } @{ $r->{messages} };
is($last->{id}, 'p1', '... and the response last, under the client\'s id');
like($last->{result}{content}[0]{text} // '', qr/completed/, '... its result');

$r = post({ jsonrpc => '2.0', id => 'p2', method => 'tools/call',
            params => { name => 'trigger-long-running-operation', arguments => { duration => 0.2, steps => 2 } } });
like($r->{headers}{'content-type'} // '', qr{^application/json}, 'no progressToken: one JSON reply');

# --- 2026-07-28 ---------------------------------------------------------------------

$r = post26({ jsonrpc => '2.0', id => 11, method => 'server/discover', params => {} });
is_deeply($r->{json}{result}{supportedVersions}, ['2026-07-28', '2025-11-25', '2025-06-18', '2025-03-26'],
          'server/discover: supportedVersions, the ones served here');
ok(ref $r->{json}{result}{capabilities}{tools} eq 'HASH', 'server/discover: the child\'s capabilities');
like($r->{json}{result}{_meta}{'io.modelcontextprotocol/serverInfo'}{name} // '', qr/everything/i,
     'server/discover: serverInfo in _meta');

$r = post26({ jsonrpc => '2.0', id => 12, method => 'tools/call',
              params => { name => 'echo', arguments => { message => 'new' } } });
is($r->{json}{result}{content}[0]{text}, 'Echo: new', '2026-07-28 tools/call: the result');
is($r->{json}{result}{resultType}, 'complete', '2026-07-28 tools/call: resultType');

$r = post26({ jsonrpc => '2.0', id => 'nf', method => 'no/such/method', params => {} });
is($r->{status}, 404, '2026-07-28: the server\'s -32601 is a 404');
is($r->{json}{error}{code}, -32601, '... with the server\'s error');

# --- concurrent calls go to both children ----------------------------------------

{
    my @socks;
    # 3 s each: one child would take 6 s; the margin is for a loaded machine
    push @socks, raw_call('/mcp', "c$_", { duration => 3, steps => 1 }) for 1 .. 2;
    my $t0 = time;
    my @ids = map { my $s = $_; local $/; my $all = <$s>; $all =~ /"id":"(c\d)"/ ? $1 : '' } @socks;
    is_deeply(\@ids, [ 'c1', 'c2' ], 'two calls at once: each answered under its id');
    cmp_ok(time - $t0, '<', 5, 'two 3 s calls at once took less than 5 s, not 6 (two children)');
    is(scalar(grep { $_->[1] =~ /server-everything/ } values %{ children() }), 2,
       'pool size=2: two children');
}

# --- a child killed mid-call ------------------------------------------------------

{
    my $s = raw_call('/mcp', 'kill-1', { duration => 8, steps => 4 });
    sleep 0.5;
    # both children are killed: which one took the call is not known here
    my @pids = grep { children()->{$_}[1] =~ /server-everything/ } keys %{ children() };
    is(scalar @pids, 2, 'two children before the kill');
    my $t0 = time;
    kill 'KILL', @pids;
    my $all = do { local $/; <$s> };
    my $took = time - $t0;
    my ($json) = $all =~ /\r\n\r\n(.*)\z/s;
    my $m = eval { decode_json($json) } || {};
    is($m->{id}, 'kill-1', 'killed mid-call: the reply has the call\'s id');
    is($m->{error}{code}, -32603, 'killed mid-call: a JSON-RPC error');
    cmp_ok($took, '<', 1, 'killed mid-call: answered within 1 s');
    diag sprintf 'killed mid-call: answered in %.3f s', $took;
    sleep 0.3;
    my $c = children();
    ok(!grep({ $c->{$_} } @pids), 'the killed children are reaped (no zombie)')
        or diag explain $c;
}

sleep 0.3;    # the crash-loop backoff's first step is 250 ms
$r = post({ jsonrpc => '2.0', id => 13, method => 'tools/call',
            params => { name => 'echo', arguments => { message => 'again' } } });
is($r->{json}{result}{content}[0]{text}, 'Echo: again', 'after the kill: a new child serves');

# killed while its progress stream is open: the stream ends with the error
{
    my $s = raw_call('/mcp', 'kill-2', { duration => 8, steps => 8 }, { progressToken => 7 });
    my $head = '';
    while ($head !~ /notifications\/progress/) {
        sysread($s, $head, 4096, length $head) or last;
    }
    like($head, qr{text/event-stream}, 'a stream open with its first progress event');
    kill 'KILL', grep { children()->{$_}[1] =~ /server-everything/ } keys %{ children() };
    my $rest = do { local $/; <$s> } // '';
    like($rest, qr/data: \{[^\n]*"id":"kill-2"[^\n]*"code":-32603|data: \{[^\n]*"code":-32603[^\n]*"id":"kill-2"/,
         'killed mid-stream: the stream\'s last event is the JSON-RPC error');
    sleep 0.3;
}

like($t->error_log, qr/\[notice\].*mcp_stdio: pid \d+: /, 'the child\'s stderr in error.log at mcp_stdio_stderr\'s level');

# --- a client that leaves mid-call frees its child at once -------------------------


{
    $r = post({ jsonrpc => '2.0', id => 'warm', method => 'ping' }, path => '/one');
    my $s = raw_call('/one', 'gone-1', { duration => 20, steps => 2 });
    sleep 1;    # the child started and took the call
    close $s;
    sleep 0.2;
    my $t0 = time;
    $r = post({ jsonrpc => '2.0', id => 'after', method => 'tools/call',
                params => { name => 'echo', arguments => { message => 'free' } } }, path => '/one');
    is($r->{json}{result}{content}[0]{text}, 'Echo: free', 'a client gone mid-call: its child serves the next');
    cmp_ok(time - $t0, '<', 2, '... at once, not after the abandoned call\'s 20 s');
}

# --- a child that never answers initialize; the total bound ---------------------

$r = post({ jsonrpc => '2.0', id => 14, method => 'tools/list' }, timeout => 5, path => '/slow');
is($r->{json}{id}, 14, 'a child that never answers: the caller gets its id back');
is($r->{json}{error}{code}, -32001, 'a child that never answers: -32001 within mcp_stdio_timeout');
sleep 0.2;
ok(!grep({ $_->[1] =~ /setTimeout/ } values %{ children() }), 'the silent child is stopped and reaped');

# --- reload and quit: no child left ------------------------------------------------

my @before = keys %{ children() };
ok(scalar @before, 'children before the reload');
$t->reload;
sleep 0.5;
ok(!grep({ kill 0, $_ } @before), 'reload: the old workers\' children are gone')
    or diag `ps -o pid,ppid,stat,args -p @{[ join ',', @before ]}`;
$r = post({ jsonrpc => '2.0', id => 15, method => 'tools/call',
            params => { name => 'echo', arguments => { message => 'reloaded' } } });
is($r->{json}{result}{content}[0]{text}, 'Echo: reloaded', 'after the reload: served');
my @last = keys %{ children() };
ok(scalar @last, 'the new worker has children');

# a call in flight as nginx quits is answered before the worker exits
my $s = raw_call('/mcp', 'quit-1', { duration => 1, steps => 1 });
sleep 0.3;
kill 'QUIT', $t->master_pid;
my $all = do { local $/; <$s> };
like($all, qr/"id":"quit-1","result"|"result".*"id":"quit-1"/s, 'nginx -s quit: a call in flight is answered')
    or diag $all;
$t->stop;
ok(!grep({ kill 0, $_ } @last), 'nginx -s quit: no child left');
my @orphans = McpTest::marked_pids($MARK);
ok(!@orphans, 'no server-everything of this test anywhere (its mark in no process\'s environment)')
    or diag map { (McpTest::_slurp("/proc/$_/cmdline") // '') . "\n" } @orphans;

# --- nginx -t --------------------------------------------------------------------

for my $bad ([ 'mcp_stdio node x.js;', qr/not an absolute path/ ],
             [ 'mcp_stdio /nonexistent/x;', qr/not an executable file/ ],
             [ "mcp_stdio $NODE; mcp_stdio_limit files=3;", qr/mcp_stdio_limit: invalid/ ],
             [ "mcp_stdio $NODE; mcp_stdio_pool size=0;", qr/mcp_stdio_pool: invalid/ ],
             [ "mcp_stdio $NODE; mcp_stdio_stderr loud;", qr/takes a log level/ ])
{
    my $u = McpTest->new(workers => 1, server => "location = /x { $bad->[0] }");
    my ($rc, $out) = $u->nginx_t;
    ok($rc != 0 && $out =~ $bad->[1], "nginx -t refuses: $bad->[0]") or diag $out;
}

done_testing;
