# A gateway's relayed streams at a graceful exit: a GET stream that
# mcp_pass relays from @modelcontextprotocol/server-everything never ends
# by itself, so a reload would keep the old worker for as long as the
# client stays.  The exit ends it as if the upstream had finished its
# reply (the chunked body's last chunk); the old worker exits, and the
# client opens its stream again through a new worker, in the same
# session.  A POST in flight through the gateway still gets its whole
# answer.
#
# Synchronisation is by events (the stream's end, /proc for the workers),
# each with a deadline.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Time::HiRes qw(time);
use McpTest qw(wait_until);
use McpStream;
use McpGateway;

my $why = node_available('@modelcontextprotocol/server-everything');
plan skip_all => "node clients: $why" if $why;

my $t = McpTest->new(
    ports   => 2,    # 2: server-everything
    workers => 4,
    http    => <<'NGX',
    mcp_session_zone zone=gw:1m;
NGX
    server  => <<'NGX',
        location = /mcp {
            mcp_pass http://127.0.0.1:%%PORT2%%/mcp;
            mcp_session gw;
        }
NGX
)->start;

my $node = start_everything_node(port => $t->port(2),
                                 log => $t->prefix . '/logs/server-everything.log');


my @sids = map { scalar $t->mcp_initialize } 1 .. 3;
is(scalar(grep { /^[0-9a-f]{32}$/ } @sids), 3, 'three sessions through the gateway');

my @g = map { $t->mcp_get_stream($_, timeout => 30) } @sids;
is(scalar(grep { $_->status == 200 } @g), 3, 'a GET stream of each, relayed from server-everything');

my @old = $t->worker_pids;
my $mark = $t->log_mark;
my $started = time;
ok($t->reload(wait_old => 0), 'reload with the three relayed GET streams open');

ok(wait_until(10, sub { !grep { !$_->is_done } map { take_all($_, 0.2); $_ } @g }),
   'each relayed stream ends at the exit');
is(scalar(grep { $_->is_done && !$_->{error} } @g), 3,
   '... cleanly: the chunked body\'s last chunk, no cut connection');
ok(wait_until(10, sub { !grep { McpTest::_alive($_) } @old }), 'the old workers exit');
cmp_ok(time - $started, '<', 10, sprintf('... %.1f s after the reload', time - $started));

my $log = $t->log_since($mark);
ok(!($log =~ /\[(?:alert|crit|emerg)\]/), 'no [alert]/[crit]/[emerg] at the exit')
    or diag($log);
unlike($log, qr/prematurely closed/, 'no upstream error logged for the ended streams');

my @again = map { $t->mcp_get_stream($_, timeout => 5) } @sids;
is(scalar(grep { $_->status == 200 } @again), 3,
   'each client opens its stream again, through a new worker, in the same session');
$_->close for @again;

my $m = $t->mcp_request($sids[0], 'tools/call', { name => 'echo', arguments => { message => 'after' } });
is(((($m // {})->{result} // {})->{content} // [ {} ])->[0]{text}, 'Echo: after',
   'the session still works through the gateway');

done_testing();
