# Fault: abusive requests.  Slowloris headers and bodies are closed by
# nginx's client_header_timeout and client_body_timeout while other
# clients are served; oversized bodies get 413, deeply nested JSON a
# -32700 parse error, invalid UTF-8 no crash; the workers survive all.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Time::HiRes qw(time sleep);
use IO::Select;
use POSIX ();
use McpTest;
use McpAssert;

my $t = McpTest->new(
    http   => "client_header_timeout 1s;\n    client_body_timeout 1s;\n"
            . "    client_max_body_size 4m;",
    server => 'location = /mcp { mcp on; mcp_builtin everything; '
            . 'mcp_max_request_size 1m; }',
)->start;
$t->expect_log_error(qr/client intended to send too large body/);
my @workers = $t->worker_pids;
my ($sid) = $t->mcp_initialize;

# --- slowloris -------------------------------------------------------------

# drips $bytes one at a time every $gap s; returns how long until the
# server closed the connection (undef: it did not within $limit s)
sub drip {
    my ($bytes, $gap, $limit) = @_;
    my $c = $t->connect;
    my $sel = IO::Select->new($c);
    my $t0 = time;
    my $i = 0;
    local $SIG{PIPE} = 'IGNORE';
    while (time - $t0 < $limit) {
        if ($i < length $bytes) {
            syswrite($c, substr($bytes, $i++, 1)) or return time - $t0;
        }
        if ($sel->can_read($gap)) {
            my $buf;
            my $n = sysread $c, $buf, 4096;
            return time - $t0 if !$n;
        }
    }
    return undef;
}

my $body = '{"jsonrpc":"2.0","id":1,"method":"ping"}';
my $head = "POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
         . "Accept: application/json, text/event-stream\r\nMcp-Session-Id: $sid\r\n"
         . "MCP-Protocol-Version: 2025-11-25\r\nContent-Length: " . length($body) . "\r\n\r\n";

# several slow clients at once, each in a child; the parent keeps calling
my @kids;
for my $what (qw(header header body body)) {
    my $pid = fork // die "fork: $!";
    if ($pid == 0) {
        # header: 1 byte / 0.3 s; body: 5 bytes of it, then silence; each
        # timed until the server closes (EOF), not until it is quiet
        my $took = $what eq 'header'
            ? drip($head, 0.3, 6)
            : do { my $c = $t->connect; print $c $head, substr($body, 0, 5);
                   my $t0 = time; my $sel = IO::Select->new($c); my $end;
                   while (time - $t0 < 6) {
                       next unless $sel->can_read(0.2);
                       my $n = sysread $c, my $buf, 4096;
                       if (!$n) { $end = time - $t0; last }
                   }
                   $end };
        # the timeout is 1 s: closed after about that, not at once
        POSIX::_exit(defined $took && $took > 0.8 && $took < 4 ? 0 : 1);
    }
    push @kids, [ $pid, $what ];
}

my ($served, $slow) = (0, 0);
my $t0 = time;
while (time - $t0 < 1.5) {
    my $s = time;
    my ($m) = $t->mcp_request($sid, 'ping', undef, id => 'busy');
    $served++ if ref $m eq 'HASH' && exists $m->{result};
    $slow++ if time - $s > 1;
    sleep 0.05;
}
cmp_ok($served, '>=', 10, "other clients are served meanwhile ($served pings)");
is($slow, 0, 'none of them waited as long as a slow client (1 s)');

for my $k (@kids) {
    waitpid $k->[0], 0;
    is($? >> 8, 0, "a slowloris $k->[1] is closed by nginx's timeout (1 s)");
}

# --- oversized ----------------------------------------------------------------

my $pad = sub { '{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"'
                . ('x' x $_[0]) . '"}}' };

my $r = $t->mcp_post($sid, $pad->(2 * 1024 * 1024));
is_rpc_error_body($r, 413, -32600, undef, '2 MB body, Content-Length: 413 with a JSON-RPC error');

$r = $t->request(method => 'POST', path => '/mcp', body => undef,
                 raw => "POST /mcp HTTP/1.1\r\nHost: localhost\r\n"
                      . "Content-Type: application/json\r\n"
                      . "Accept: application/json, text/event-stream\r\n"
                      . "Mcp-Session-Id: $sid\r\nMCP-Protocol-Version: 2025-11-25\r\n"
                      . "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
                      . join('', map { sprintf("%x\r\n%s\r\n", 65536, 'x' x 65536) } 1 .. 32)
                      . "0\r\n\r\n");
is_rpc_error_body($r, 413, -32600, undef, '2 MB chunked body: 413 with a JSON-RPC error');

# past client_max_body_size nginx itself answers, before the module runs
$r = $t->mcp_post($sid, $pad->(8 * 1024 * 1024));
is($r->{status}, 413, '8 MB body (over client_max_body_size): 413 from nginx');

# --- deeply nested --------------------------------------------------------------

for my $case ([ 'arrays', '[' x 10000 . ']' x 10000 ],
              [ 'objects', '{"a":' x 10000 . '1' . '}' x 10000 ],
              [ 'params', '{"jsonrpc":"2.0","id":1,"method":"ping","params":{"a":'
                          . '[' x 500 . ']' x 500 . '}}' ],
              [ 'unclosed', '[' x 100000 ])
{
    my $r = $t->mcp_post($sid, $case->[1]);
    is_rpc_error_body($r, 400, -32700, undef, "deeply nested $case->[0]: 400, -32700 parse error");
}

my ($m) = $t->mcp_request($sid, 'ping', { a => do { my $x = 1; $x = [$x] for 1 .. 60; $x } },
                          id => 'deep-ok');
is_result($m, {}, 'deep-ok', 'nesting 60 deep in params is still accepted');

# --- invalid UTF-8 ----------------------------------------------------------------

my @utf8 = (
    [ 'in the id', qq({"jsonrpc":"2.0","id":"\xff\xfe","method":"ping"}) ],
    [ 'in the method', qq({"jsonrpc":"2.0","id":2,"method":"p\xc3\x28ing"}) ],
    [ 'in a tool name', qq({"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"\xed\xa0\x80"}}) ],
    [ 'overlong', qq({"jsonrpc":"2.0","id":4,"method":"ping","params":{"s":"\xc0\xaf"}}) ],
);
for my $case (@utf8) {
    my $r = $t->mcp_post($sid, $case->[1]);
    like("$r->{status} $r->{body}", qr/^(200|400) \{"jsonrpc":"2.0",/,
         "invalid UTF-8 $case->[0]: a JSON-RPC reply, no crash");
    like($r->{body}, qr/"code":-32(700|600)/, "invalid UTF-8 $case->[0]: refused");
}

is_deeply([ $t->worker_pids ], \@workers, 'no worker died');
($m) = $t->mcp_request($sid, 'tools/call', { name => 'test_simple_text' }, id => 'end');
ok(ref $m eq 'HASH' && ref $m->{result} eq 'HASH', 'the session still works');

$t->stop;
done_testing;
