# What a waiting GET stream holds in its worker: 4,000 idle streams, one
# session each, cost at most 11 kB of the worker's private memory each
# (the request's pool, two blocks of nginx's default 4 kB, the
# connection's pool and header buffer); no output buffer stays with a
# stream that has written everything (it was 4 kB a stream, and 13.7 kB
# in all).  Beside them, calls with progress each get their events (each
# written by its own stream, where the worker's wake-up looked at all
# 4,000: 1.8 ms a call, noted, not checked: a time).  The streams
# then still carry what comes: one resource update reaches all of them,
# each writing from a buffer made again for it.  scripts/soak-streams
# measures the same at 100,000.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use IO::Socket::INET;
use IO::Select;
use POSIX ();
use Time::HiRes qw(time);
use McpTest;

my $n = 4000;

# the harness's events block has 1,024 connections: the whole conf here
my $t = McpTest->new(workers => 1);
$t->write_config(conf => <<'NGX')->start;
%%LOAD_MODULE%%worker_processes 1;
master_process on;
daemon off;
pid %%PREFIX%%/logs/nginx.pid;
error_log %%PREFIX%%/logs/error.log info;
worker_rlimit_nofile 12000;
events { worker_connections 10000; }
http {
    access_log off;
    client_body_temp_path %%PREFIX%%/tmp;
    mcp_session_zone zone=mem:16m;
    server {
        listen 127.0.0.1:%%PORT%%;
        location = /mem { mcp on; mcp_session mem; mcp_builtin everything; }
    }
}
NGX

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
# a pid whose /proc is not read would measure 0 kB, and 0 cost, below
cmp_ok($before, '>', 0, "the worker's RssAnon is read ($before kB)");
open_stream($_) for @sids;
is(read_until($primed), $n + 1, 'every stream: 200 and its priming event');
sleep 1;
my $per = (anon_kb($worker) - $before) / $n;

SKIP: {
    # ASan's quarantine and shadow memory are not what a stream holds
    skip 'memory under AddressSanitizer', 1 if $ENV{MCP_NGINX_PRELOAD};
    cmp_ok($per, '<=', 11, sprintf('a waiting stream holds %.1f kB of the '
                                   . "worker's private memory", $per));
}

# a call's progress goes to its own stream, not to a look at every
# stream the worker holds (4,000 idle GETs here: the looks cost 0.5 ms
# an event, four events a call)
sub cpu_ticks {
    open my $fh, '<', "/proc/$_[0]/stat" or return 0;
    my @f = split ' ', (split /\) /, scalar <$fh>)[1];
    return $f[11] + $f[12];
}

my $calls = 100;
my $cpu0 = cpu_ticks($worker);
cmp_ok($cpu0, '>', 0, "the worker's CPU time is read ($cpu0 ticks)");
my @posts = map {
    my $sid = $sids[$_];
    my $body = '{"jsonrpc":"2.0","id":7,"method":"tools/call","params":'
             . '{"name":"test_tool_with_progress","arguments":{},'
             . '"_meta":{"progressToken":"p"}}}';
    my $s = IO::Socket::INET->new(PeerAddr => "127.0.0.1:$port",
                                  Timeout => 5) or die "connect: $!";
    print $s post($body, $sid);
    $s;
} 0 .. $calls - 1;
my $done = 0;
{
    local $/;
    for my $s (@posts) {
        my $resp = <$s> // '';
        my $ok = ($resp =~ s/notifications\/progress//g) == 3
                 && $resp =~ /"result"/;
        $done++ if $ok;
    }
}
my $ms = (cpu_ticks($worker) - $cpu0) * 1000
         / POSIX::sysconf(POSIX::_SC_CLK_TCK()) / $calls;
is($done, $calls, "$calls calls with progress, each with its three "
                  . 'notifications');
# a figure, not a check: CPU time on a shared machine is the load's
# (scripts/bench-cpu counts instructions for that)
note(sprintf('a call cost the worker %.2f ms of CPU beside %d idle streams',
             $ms, $n));

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
