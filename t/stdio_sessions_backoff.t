# mcp_stdio_sessions and a server that exits at once: a session's
# initialize is answered with a JSON-RPC error naming the exit; the next
# one, within the crash loop's backoff, is refused at once with an error
# that names the backoff, not the bound of children; after the backoff a
# start is tried again.  One worker, so both land where the backoff is.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Time::HiRes qw(sleep time);
use McpTest timeout => 60;
use McpAssert;

my $t = McpTest->new(
    workers => 1,
    server  => <<"NGX",
        location = /crash {
            mcp_stdio /bin/false;
            mcp_stdio_sessions on;
            mcp_stdio_pool size=2;
            mcp_stdio_timeout 2s;
        }
NGX
);
$t->start;

my $INIT = { jsonrpc => '2.0', method => 'initialize',
             params => { protocolVersion => '2025-11-25', capabilities => {},
                         clientInfo => { name => 't', version => '1' } } };

sub init {
    my ($id) = @_;
    return $t->mcp_post(undef, { %$INIT, id => $id }, path => '/crash', timeout => 10);
}

my $mark = $t->log_mark;
my $r = init(1);
ok($r->{json}{error}, 'a server that exits at once: its session\'s initialize gets an error')
    or diag explain $r;
is($r->{json}{id}, 1, '... under the request\'s id');
ok(!$r->{headers}{'mcp-session-id'}, '... and no session');

my $t0 = time;
$r = init(2);
my $took = time - $t0;
is($r->{json}{error}{code}, -32603, 'initialize again at once: -32603');
like($r->{json}{error}{message}, qr/exited too often/, '... naming the crash loop\'s wait')
    or diag explain $r->{json};
unlike($r->{json}{error}{message}, qr/bound of children/, '... not the bound of children');
is($r->{json}{id}, 2, '... under the request\'s id');
cmp_ok($took, '<', 1.8, '... at once, not after mcp_stdio_timeout (2 s)');

# the first backoff is 250 ms: after it a child is started again
sleep 0.6;
my $starts = () = $t->log_since($mark) =~ /mcp_stdio: started "\/bin\/false"/g;
$r = init(3);
my $again = () = $t->log_since($mark) =~ /mcp_stdio: started "\/bin\/false"/g;
ok($again > $starts, "after the backoff a start is tried again ($starts, then $again starts)");
ok($r->{json}{error}, '... and its exit is an error too');

unlike($t->log_since($mark), qr/\[(error|crit|alert|emerg)\]/, 'nothing above [warn] in error.log');

done_testing;
