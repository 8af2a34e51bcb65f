# Fault: the client goes away mid-stream.  A POST whose reply is an SSE
# stream is dropped after its first progress event: the worker stays
# healthy, the call finishes without its client, and the rest of the
# stream (the result included) is there when the client resumes with
# Last-Event-ID.  Drops at every other point (before the headers, after
# the priming event, in the middle of a request body) leave the workers
# and the session working.
#
# (The gateway's "upstream gone mid-stream" case needs mcp_pass, which
# does not exist yet.)

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Time::HiRes qw(time sleep);
use McpTest;
use McpAssert;

# logs/tags.log: the X-Tag header of each request, written when nginx is
# done with the request (for a dropped connection: once it saw the drop)
my $t = everything(http => "log_format tags '\$http_x_tag';",
                   location => 'access_log %%PREFIX%%/logs/access.log;'
                             . ' access_log %%PREFIX%%/logs/tags.log tags;');
my @workers = $t->worker_pids;
my ($sid) = $t->mcp_initialize;

# Waits up to 5 s until every tag of @want has its line in tags.log
# (whole lines only: "early1" may be the start of "early10" being written).
sub tags_logged {
    my (@want) = @_;
    my $deadline = time + 5;
    while (1) {
        my $log = McpTest::_slurp($t->prefix . '/logs/tags.log') // '';
        my %have = map { $_ => 1 } $log =~ /^(.*)\n/mg;
        my @missing = grep { !$have{$_} } @want;
        return 1 unless @missing;
        if (time > $deadline) {
            diag("no tags.log line within 5 s for: @missing");
            return 0;
        }
        sleep 0.05;
    }
}

sub progress_call {
    my ($id) = @_;
    return { jsonrpc => '2.0', id => $id, method => 'tools/call',
             params => { name => 'test_tool_with_progress', arguments => {},
                         _meta => { progressToken => "tok-$id" } } };
}

# --- dropped after the first progress event, then resumed -------------------

my $s = $t->mcp_post($sid, progress_call('drop'), stream => 1, headers => { 'X-Tag' => 'drop' });
is($s->status, 200, 'the progress tool replies 200');
like($s->header('content-type') // '', qr{^text/event-stream}, 'with a stream');
my $prime = $s->next_event(2);
ok($prime && defined $prime->{id} && ($prime->{data} // '') eq '',
   'first the priming event (an id, empty data)');
my $first = $s->next_event(2);
is($first && $first->{json} && $first->{json}{method}, 'notifications/progress',
   'then the first progress notification');
my $last = $first ? $first->{id} : $prime->{id};
$s->close;

ok(tags_logged('drop'), 'the server saw the client leave');
is_deeply([ $t->worker_pids ], \@workers, 'no worker died when the client left');
# The tool ends about 100 ms after its start, with nobody connected, and
# leaves no mark but its events in the session's log, which only the
# resume below reads: so the resume waits 0.4 s, to find them all there.
sleep 0.4;

my $g = $t->mcp_get_stream($sid, last_event_id => $last);
is($g->status, 200, "GET with Last-Event-ID $last resumes the stream");
my (@progress, $result);
my $deadline = time + 5;
while (time < $deadline) {
    my $ev = $g->next_event(2) or last;
    my $m = $ev->{json} or next;
    push @progress, $m->{params}{progress} if ($m->{method} // '') eq 'notifications/progress';
    if (defined $m->{id} && $m->{id} eq 'drop') {
        $result = $m;
        last;
    }
}
is_deeply(\@progress, [ 50, 100 ], 'the resumed stream replays the missed progress (50, 100)');
is_deeply($result && $result->{result},
          { content => [ { type => 'text', text => 'Tool with progress executed successfully' } ] },
          'and the result of the call made before the drop');
$g->close;

# --- drops at every other point -------------------------------------------

my $raw = McpTest::encode_json(progress_call('x'));
for my $i (1 .. 10) {
    # before the response headers: the request is sent, the socket closed
    my $early = $raw =~ s/"x"/"early$i"/r;
    my $c = $t->connect;
    print $c "POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
           . "Accept: application/json, text/event-stream\r\nMcp-Session-Id: $sid\r\n"
           . "X-Tag: early$i\r\n"
           . "MCP-Protocol-Version: 2025-11-25\r\nContent-Length: " . length($early)
           . "\r\n\r\n" . $early;
    close $c;

    # after the priming event
    my $p = $t->mcp_post($sid, progress_call("late$i"), stream => 1, headers => { 'X-Tag' => "late$i" });
    $p->next_event(2);
    $p->close;

    # in the middle of the request body
    my $b = $t->connect;
    print $b "POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
           . "Accept: application/json, text/event-stream\r\nMcp-Session-Id: $sid\r\n"
           . "X-Tag: body$i\r\n"
           . "Content-Length: 1000\r\n\r\n" . substr($raw, 0, 20);
    close $b;

    # a standalone GET stream
    my $get = $t->mcp_get_stream($sid, headers => { 'X-Tag' => "get$i" });
    $get->close;
}

ok(tags_logged(map { ("early$_", "late$_", "body$_", "get$_") } 1 .. 10),
   'the server is done with the 40 dropped connections');
is_deeply([ $t->worker_pids ], \@workers, '40 dropped connections: the same workers');
my $bad = 0;
for my $i (1 .. 8) {
    my ($m) = $t->mcp_request($sid, 'tools/call', { name => 'test_simple_text' }, id => "after$i");
    $bad++ unless ref $m eq 'HASH' && ref $m->{result} eq 'HASH';
}
is($bad, 0, 'the session still serves calls, on every worker');
my $p = $t->mcp_post($sid, progress_call('whole'), stream => 1);
my @all;
while (my $ev = $p->next_event(3)) { push @all, $ev }
ok((grep { $_->{json} && ($_->{json}{id} // '') eq 'whole' } @all),
   'a new streamed call runs to its result');
is($t->mcp_delete($sid)->{status}, 200, 'and the session ends cleanly');

$t->stop;
done_testing;
