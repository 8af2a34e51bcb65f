# Fault: nginx -s reload under load loses no session and no request; a
# worker killed with SIGKILL is respawned and every session stays valid.
#
# The load is a child process that sends tools/call (and, every tenth
# request, initialize) round-robin over eight sessions, each on a new
# connection: a keep-alive connection idle in an old worker is closed by
# nginx itself at reload, which a client sees whatever the module does.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Time::HiRes qw(time sleep);
use POSIX ();
use McpTest;
use McpAssert;

my $t = everything();
my $port = $t->port;
my @sids = map { scalar $t->mcp_initialize } 1 .. 8;

my $INIT = '{"jsonrpc":"2.0","id":1,"method":"initialize","params":'
         . '{"protocolVersion":"2025-11-25","capabilities":{},'
         . '"clientInfo":{"name":"load","version":"1"}}}';
my $CALL = '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":'
         . '{"name":"test_simple_text","arguments":{}}}';

# the load: until $stop exists (at most 30 s, 20,000 requests)
sub load {
    my ($stop, $out) = @_;
    my ($ok, $fail, @why, @new) = (0, 0);
    my $deadline = time + 30;
    for my $i (1 .. 20000) {
        last if -e $stop || time > $deadline;
        my $init = $i % 10 == 0;
        my $sid = $sids[$i % @sids];
        my $r = McpTest::http_request(
            port => $port, method => 'POST', path => '/mcp', keepalive => 0,
            timeout => 5, quiet => 1, body => $init ? $INIT : $CALL,
            headers => [ 'Content-Type' => 'application/json',
                         Accept => 'application/json, text/event-stream',
                         ($init ? () : ('Mcp-Session-Id' => $sid,
                                        'MCP-Protocol-Version' => '2025-11-25')) ]);
        if ($r->{status} == 200 && $r->{body} =~ /"result"/) {
            $ok++;
            push @new, $r->{headers}{'mcp-session-id'} if $init;
        } else {
            $fail++;
            push @why, "$r->{status} " . ($r->{error} // substr($r->{body} // '', 0, 200))
                if @why < 5;
        }
    }
    open my $fh, '>', $out or die "$out: $!";
    print $fh join("\n", "$ok $fail", join(' ', @new), @why), "\n";
    close $fh;
}

# --- reload under load -------------------------------------------------------

my $stop = $t->prefix . '/stop-load';
my $out  = $t->prefix . '/load.out';
my $child = fork // die "fork: $!";
if ($child == 0) {
    load($stop, $out);
    POSIX::_exit(0);
}

sleep 0.5;
ok($t->reload, 'first reload under load: a new generation of workers');
sleep 0.3;
ok($t->reload, 'second reload under load');
sleep 0.5;
open my $sf, '>', $stop or die;
close $sf;
waitpid $child, 0;

open my $fh, '<', $out or die "no load result: $!";
my ($counts, $new, @why) = map { chomp; $_ } <$fh>;
close $fh;
my ($ok, $fail) = split ' ', $counts;
cmp_ok($ok, '>=', 50, "the load got through the reloads ($ok requests)");
is($fail, 0, 'no request failed during two reloads') or diag(join "\n", @why);

my @new = split ' ', $new // '';
cmp_ok(scalar @new, '>', 0, scalar(@new) . ' sessions were created during the reloads');
my $bad = 0;
for my $sid (@sids, @new) {
    my ($m) = $t->mcp_request($sid, 'ping', undef, id => 'after-reload');
    $bad++ unless ref $m eq 'HASH' && ref $m->{result} eq 'HASH';
}
is($bad, 0, 'every session, old and new, is valid after the reloads');

# --- SIGKILL ---------------------------------------------------------------

$t->expect_log_any(qr/exited on signal 9/);

my $g = $t->mcp_get_stream($sids[0]);
is($g->status, 200, 'a GET stream is open on the first session');
$g->next_event(2);

my @old = $t->worker_pids;
kill 'KILL', @old;
my @fresh;
my $deadline = time + 10;
while (time < $deadline) {
    my %was = map { $_ => 1 } @old;
    @fresh = grep { !$was{$_} } $t->worker_pids;
    last if @fresh == @old;
    sleep 0.05;
}
is(scalar @fresh, scalar @old, 'all ' . scalar(@old) . ' workers killed with SIGKILL were respawned');

ok(!$g->next_event(2) && $g->is_done, "the killed worker's stream ended");

$bad = 0;
for my $round (1 .. 5) {
    for my $sid (@sids) {
        my ($m) = $t->mcp_request($sid, 'tools/call', { name => 'test_simple_text' },
                                  id => "k$round", keepalive => 0);
        $bad++ unless ref $m eq 'HASH' && ref $m->{result} eq 'HASH';
    }
}
is($bad, 0, 'after the kill, every session serves 5 calls on new connections');

my $g2 = $t->mcp_get_stream($sids[0]);
is($g2->status, 200, 'the session whose stream died opens a new one');
$g2->close;
ok(scalar $t->mcp_initialize, 'initialize works after the kill');
is($t->mcp_delete($sids[0])->{status}, 200, 'DELETE works after the kill');

$t->stop;
done_testing;
