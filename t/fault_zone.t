# Fault: the session zone runs out.  While every session in a full zone
# holds an open stream (and so cannot be evicted), initialize gets a
# clean JSON-RPC error; the workers survive, the streamed sessions keep
# working, and once the streams close, initialize evicts the least
# recently used session again.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use McpTest;
use McpAssert;

my $INIT = '{"jsonrpc":"2.0","id":"full","method":"initialize","params":'
         . '{"protocolVersion":"2025-11-25","capabilities":{},'
         . '"clientInfo":{"name":"fault","version":"1"}}}';

# 32k is the smallest zone the module accepts: a few dozen sessions.
my $t = everything(http => 'mcp_session_zone zone=tiny:32k timeout=1h;',
                   location => 'mcp_session tiny;');
$t->expect_log_error(qr/no room for a new session/);

my @workers = $t->worker_pids;
my (@streams, @sids, $full);

# Each session gets a GET stream; stop at the first refused initialize.
for my $n (1 .. 500) {
    my $r = $t->mcp_post(undef, $INIT);
    if (!$r->{headers}{'mcp-session-id'}) {
        $full = $r;
        last;
    }
    my $sid = $r->{headers}{'mcp-session-id'};
    my $s = $t->mcp_get_stream($sid);
    last unless $s->status == 200;
    push @sids, $sid;
    push @streams, $s;
}

ok($full, 'the zone filled up (' . scalar(@sids) . ' sessions with streams)');
cmp_ok(scalar @sids, '>=', 10, 'at least 10 sessions fit in 32k');
$full //= { status => 0, body => '' };
is($full->{status}, 503, 'initialize in a zone full of busy sessions: HTTP 503 (issue #18: never 200)');
is($full->{headers}{'retry-after'}, '1', '... with Retry-After');
my $msg = eval { McpTest::decode_json($full->{body}) } // {};
is($msg->{id}, 'full', 'the error carries the request id');
is(ref $msg->{error} eq 'HASH' && $msg->{error}{code}, -32000,
   'the error is -32000 (no room for a new session)');
like(ref $msg->{error} eq 'HASH' && $msg->{error}{data}{correlationId} // '',
     qr/^[0-9a-f]{32}$/, 'the error has a correlation id');
unlike($full->{body}, qr/slab|shm|zone|\.c\b/, 'the reply names no internals');

# the sessions that hold streams are intact, on any worker
my $bad = 0;
for my $sid (@sids[0, -1]) {
    my ($m) = $t->mcp_request($sid, 'ping', undef, id => 'p');
    $bad++ unless ref $m eq 'HASH' && ref $m->{result} eq 'HASH';
}
is($bad, 0, 'the first and the last session still answer ping');
is_deeply([ $t->worker_pids ], \@workers, 'no worker crashed');

# closing the streams makes the sessions idle, hence evictable
my $mark = $t->log_mark;
$_->close for @streams;
my $ok;
for (1 .. 50) {
    my $r = $t->mcp_post(undef, $INIT);
    last if $ok = $r->{headers}{'mcp-session-id'};
    select undef, undef, undef, 0.1;
}
ok($ok, 'initialize succeeds again once the streams are closed');

my $fail = 0;
for my $i (1 .. 20) {
    my $sid = eval { $t->mcp_initialize(skip_initialized => 1) };
    my ($m) = $sid ? $t->mcp_request($sid, 'ping', undef, id => $i) : ();
    $fail++ unless ref $m eq 'HASH' && exists $m->{result};
}
is($fail, 0, '20 more sessions in the full zone: all created and working');
like($t->log_since($mark), qr/\[warn\].*evict/, 'they evicted idle sessions (LRU)');
my ($m, $r) = $t->mcp_request($sids[1], 'ping', undef, id => 'gone');
is($r->{status}, 404, 'the least recently used session (the second: the first answered ping) was evicted');
is_deeply([ $t->worker_pids ], \@workers, 'still the same workers');

$t->stop;
done_testing;
