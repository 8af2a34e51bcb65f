# Regressions found by the fault tests and fuzzing, one block each.
# Some only fail under the sanitizer build (scripts/test runs both).

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use McpTest;
use McpAssert;

my $t = everything();

# initialize kept the new session id in the call's pool, which is freed
# when the call ends, before the reply's Mcp-Session-Id header is sent
# (heap-use-after-free under ASan).
{
    my ($bad, %seen) = (0);
    for my $i (1 .. 20) {
        my ($sid, undef, $r) = $t->mcp_initialize(
            client_info => { name => 'x' x (10 * $i), version => '1' });
        $bad++ unless ($sid // '') =~ /^[0-9a-f]{32}$/ && !$seen{$sid}++;
        my ($m) = $t->mcp_request($sid, 'ping', undef, id => $i);
        $bad++ unless ref $m eq 'HASH' && ref $m->{result} eq 'HASH';
    }
    is($bad, 0, 'initialize: 20 distinct 32-hex session ids in Mcp-Session-Id, each working');
}

$t->stop;
done_testing;
