# Answers that come together: a task asks the client two questions at
# once, and both answers reach the store before the worker that runs it
# looks (here that worker is stopped while other workers take the two
# answers, then let go: two wake-ups wait in its socket).  Wake-ups that
# come together are one look, and a look took one answer: the second
# waited for a wake-up that never came, and the call hung until
# mcp_request_timeout (seen once under load in t/tasks_2025.t, "two
# questions at once").
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use McpTest;
use McpStream;
use IO::Select;
use IO::Socket::INET;
use Time::HiRes ();

# one listening socket shared by the workers (no reuseport): a stopped
# worker takes no connection, the others take them all
my $t = McpTest->new(
    server => 'location = /mcp { mcp on; mcp_builtin everything;'
            . ' add_header X-Worker $pid always; }',
)->start;


# the HTTP status of the reply on $c, 0 for none in 5 s
sub read_status {
    my ($c) = @_;
    return 0 unless $c;
    my $got = '';
    my $sel = IO::Select->new($c);
    my $deadline = Time::HiRes::time() + 5;
    while ($got !~ /\r\n/ && (my $left = $deadline - Time::HiRes::time()) > 0) {
        last unless $sel->can_read($left);
        last unless sysread($c, my $buf, 4096);
        $got .= $buf;
    }
    close $c;
    return $got =~ m{^HTTP/1\.1 (\d+)} ? $1 : 0;
}

for my $round (1 .. 3) {
    my ($sid) = $t->mcp_initialize(protocol_version => '2025-11-25',
                                   capabilities => { elicitation => {} });
    my $g = $t->mcp_get_stream($sid);
    priming_ok(take($g, 3), 1000, "round $round: the GET stream is open");

    # the tool asks as a task (2025-11-25): its questions come on the GET
    # stream, its result on tasks/result
    my ($m, $r) = $t->mcp_request($sid, 'tools/call', { name => 'multi_input', arguments => {},
                                                        task => { ttl => 60000 } });
    my $tid = (((($m // {})->{result} // {})->{task} // {})->{taskId}) // 'none';
    my $holder = $r->{headers}{'x-worker'} // 0;
    my @req = grep { defined } map { next_request($g) } 1 .. 2;
    is(scalar @req, 2, "round $round: both questions come");

    # the task's worker looks at the store when woken; stopped, it is
    # woken twice before it looks once.  (An answer's connection that the
    # stopped worker was woken for waits for it: it is read after.)
    ok($holder && kill('STOP', $holder), "round $round: the task's worker is stopped");
    my @c = map {
        post_unread($t, $sid, { jsonrpc => '2.0', id => $req[$_]{id},
                            result => { action => 'accept',
                                        content => { name => $_ ? 'two' : 'one' } } })
    } 0 .. $#req;
    Time::HiRes::sleep(0.3);
    kill 'CONT', $holder if $holder;
    my @status = map { read_status($_) } @c;
    is_deeply(\@status, [202, 202], "round $round: both answers taken");

    my $res = $t->mcp_call($sid, 'tasks/result', { taskId => $tid });
    like((($res // {})->{content} // [{}])->[0]{text} // '', qr/^Got (one and two|two and one)$/,
         "round $round: the tool ran again with both answers");
}

$t->stop;
done_testing;
