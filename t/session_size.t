# What one session costs in its zone, as docs/directives.md (mcp_session_zone) says: an idle
# session (initialized, no stream, no subscription) takes 512 bytes (its
# 320-byte record in the slab allocator's 512-byte size class), so a 1 MB
# zone holds about 2,000 before the first eviction and a 10 MB zone about
# 20,000; a gateway's (mcp_pass) about 640, with its replica's address and
# session id.  Counted by filling zones until the store evicts.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use McpTest;

# sessions a zone of $size holds before the first eviction
sub fill {
    my ($size, $gateway) = @_;
    my $loc = $gateway ? 'mcp_pass http://127.0.0.1:%%PORT2%%/mcp;' : 'mcp on;';
    my $t = McpTest->new(workers => 1, log_level => 'warn', ports => 2,
        http   => "mcp_session_zone zone=fill:$size;\n"
                . "mcp_session_zone zone=upstream:64m;\n"
                . "server { listen 127.0.0.1:%%PORT2%%;\n"
                . "  location = /mcp { mcp on; mcp_session upstream; } }",
        server => "location = /mcp { $loc mcp_session fill; }");
    $t->expect_log_any(qr/\[warn\].*evict/);
    $t->start;
    my $n = 0;
    while ($n < 10000) {
        $t->mcp_initialize or last;
        last if ($t->error_log // '') =~ /evict/;
        $n++;
    }
    $t->stop;
    return $n;
}

for my $case ([ 'a session', 0, 1900, 2100, 480, 560 ],
              [ "a gateway's session", 1, 1500, 1700, 600, 700 ])
{
    my ($what, $gw, $min, $max, $lo, $hi) = @$case;
    my ($one, $two) = (fill('1m', $gw), fill('2m', $gw));
    cmp_ok $one, '>=', $min, "1 MB holds $one of $what: at least $min";
    cmp_ok $one, '<=', $max, "at most $max";
    my $each = int(1048576 / ($two - $one));
    cmp_ok $each, '>=', $lo, "$what takes $each bytes: at least $lo";
    cmp_ok $each, '<=', $hi, "at most $hi";
}

done_testing;
