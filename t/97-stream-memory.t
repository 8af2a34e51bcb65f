# What a waiting GET stream holds in its worker: 900 idle streams, one
# session each, cost at most 11 kB of the worker's private memory each
# (the request's pool, two blocks of nginx's default 4 kB, the
# connection's pool and header buffer); no output buffer stays with a
# stream that has written everything (it was 4 kB a stream, and 13.7 kB
# in all).  The streams then still carry what comes: one resource update
# reaches all of them, each writing from a buffer made again for it.
# scripts/soak-streams measures the same at 100,000.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use IO::Socket::INET;
use IO::Select;
use Time::HiRes qw(time);
use McpTest;

my $n = 900;

my $t = McpTest->new(
    workers => 1,
    http    => 'mcp_session_zone zone=mem:16m;',
    main    => 'worker_rlimit_nofile 8192;',
    server  => <<'NGX',
        location = /mem { mcp on; mcp_session mem; mcp_builtin everything; }
NGX
)->start;

my $port = $t->port;

sub anon_kb {
    my $sum = 0;
    for my $pid (@_) {
        open my $fh, '<', "/proc/$pid/status" or next;
        while (<$fh>) { $sum += $1 if /^RssAnon:\s+(\d+)/ }
    }
    return $sum;
}

sub post {
    my ($body, $sid) = @_;
    return "POST /mem HTTP/1.1\r\nHost: localhost\r\n"
         . "Content-Type: application/json\r\n"
         . "Accept: application/json, text/event-stream\r\n"
         . "MCP-Protocol-Version: 2025-11-25\r\n"
         . ($sid ? "Mcp-Session-Id: $sid\r\n" : '')
         . "Connection: close\r\nContent-Length: " . length($body)
         . "\r\n\r\n$body";
}

sub ask {
    my ($req) = @_;
    my $s = IO::Socket::INET->new(PeerAddr => "127.0.0.1:$port",
                                  Timeout => 5) or die "connect: $!";
    print $s $req;
    local $/;
    my $resp = <$s>;
    return $resp // '';
}

sub session {
    my $resp = ask(post('{"jsonrpc":"2.0","id":1,"method":"initialize",'
        . '"params":{"protocolVersion":"2025-11-25","capabilities":{},'
        . '"clientInfo":{"name":"mem","version":"1"}}}'));
    my ($sid) = $resp =~ /^Mcp-Session-Id: (\S+)/mi or return;
    ask(post('{"jsonrpc":"2.0","method":"notifications/initialized"}', $sid));
    $resp = ask(post('{"jsonrpc":"2.0","id":2,"method":"resources/subscribe",'
        . '"params":{"uri":"test://watched-resource"}}', $sid));
    return $resp =~ /"result"/ ? $sid : undef;
}

my ($worker) = $t->worker_pids;

# the first stream makes what every later one reuses (code pages, the
# zone's first pages, the worker's connection array's first pages)
my @sids = grep { defined } map { session() } 1 .. $n + 1;
is(scalar @sids, $n + 1, "$n sessions and one more, each subscribed");

my (@socks, %got);
my $sel = IO::Select->new;

sub open_stream {
    my ($sid) = @_;
    my $s = IO::Socket::INET->new(PeerAddr => "127.0.0.1:$port",
                                  Timeout => 5) or die "connect: $!";
    print $s "GET /mem HTTP/1.1\r\nHost: localhost\r\n"
           . "Accept: text/event-stream\r\nMcp-Session-Id: $sid\r\n"
           . "MCP-Protocol-Version: 2025-11-25\r\n\r\n";
    $s->blocking(0);
    push @socks, $s;
    $sel->add($s);
}

# reads what came, until cond holds for every stream or 30 s pass
sub read_until {
    my ($cond) = @_;
    my $deadline = time + 30;
    while (time < $deadline) {
        last unless grep { !$cond->($got{fileno $_} // '') } @socks;
        for my $s ($sel->can_read(0.2)) {
            my $r = sysread $s, my $buf, 65536;
            $got{fileno $s} .= $buf if $r;
        }
    }
    return scalar grep { $cond->($got{fileno $_} // '') } @socks;
}

my $primed = sub { $_[0] =~ m{^HTTP/1.1 200} && $_[0] =~ /\nretry: / };

open_stream(shift @sids);
read_until($primed);

my $before = anon_kb($worker);
open_stream($_) for @sids;
is(read_until($primed), $n + 1, 'every stream: 200 and its priming event');
sleep 1;
my $per = (anon_kb($worker) - $before) / $n;

cmp_ok($per, '<=', 11, sprintf('a waiting stream holds %.1f kB of the '
                               . "worker's private memory", $per));

# the buffers come back for what the streams carry
my $resp = do {
    my ($sid) = ask(post('{"jsonrpc":"2.0","id":1,"method":"initialize",'
        . '"params":{"protocolVersion":"2025-11-25","capabilities":{},'
        . '"clientInfo":{"name":"mem","version":"1"}}}'))
        =~ /^Mcp-Session-Id: (\S+)/mi;
    ask(post('{"jsonrpc":"2.0","method":"notifications/initialized"}', $sid));
    ask(post('{"jsonrpc":"2.0","id":3,"method":"tools/call","params":'
        . '{"name":"update_watched_resource","arguments":{}}}', $sid));
};
like($resp, qr/watched-resource updated/, 'the update is made');

is(read_until(sub { $_[0] =~ m{notifications/resources/updated} }), $n + 1,
   'every stream carries the update');
ok(!(grep { ($got{fileno $_} // '') =~ /\r\n0\r\n\r\n/ } @socks),
   'and none has ended');

close $_ for @socks;

done_testing();
