# A live stream gets every event, however many are queued at once (issue
# #18, row 5): a 2025-03-26 batch of 7,500 update_watched_resource calls
# queues about 1 MB of notifications for the session's GET stream in one
# go; the reader must receive all of them, in order, without any further
# event to nudge the writer (it used to stop after the first 64 KB).

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use McpTest;
use McpAssert;
use McpStream;

my $URI = 'test://watched-resource';
my $N = 7500;

my $t = McpTest->new(
    http   => 'mcp_session_zone zone=big:32m log=4m;',
    server => <<'NGX',
        location = /mcp  { mcp on; mcp_builtin everything; mcp_session big;
                           mcp_max_request_size 2m; }
NGX
)->start;

my ($sid) = $t->mcp_initialize(protocol_version => '2025-03-26');
my ($msg) = $t->mcp_request($sid, 'resources/subscribe', { uri => $URI }, id => 'sub');
is_result($msg, {}, 'sub', 'subscribed');

my $g = $t->mcp_get_stream($sid);
take($g, 3);    # priming

my $batch = '[' . join(',', map {
    qq({"jsonrpc":"2.0","id":$_,"method":"tools/call","params":{"name":"update_watched_resource","arguments":{}}})
} 1 .. $N) . ']';
my $r = $t->mcp_post($sid, $batch, timeout => 60);
is($r->{status}, 200, "a batch of $N calls: 200");
is(scalar @{ ref $r->{json} eq 'ARRAY' ? $r->{json} : [] }, $N, "... $N results");

my ($got, $bytes, $ordered, $last) = (0, 0, 1, 0);
my $deadline = Time::HiRes::time() + 30;
while ($got < $N && Time::HiRes::time() < $deadline) {
    my $ev = take($g, 5) // last;
    next unless ref $ev->{json} eq 'HASH' && ($ev->{json}{method} // '') eq 'notifications/resources/updated';
    $got++;
    $bytes += length $ev->{raw};
    my ($seq) = ($ev->{id} // '') =~ /-(\d+)$/;
    $ordered = 0 if !defined $seq || $seq <= $last;
    $last = $seq // $last;
}
is($got, $N, "the live GET stream received all $N notifications ($bytes bytes queued at once)");
ok($ordered, '... in order');
$g->close;

$t->check_log;
done_testing;
