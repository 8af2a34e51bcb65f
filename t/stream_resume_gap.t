# A GET stream's client that closes its connection and resumes it with
# Last-Event-ID misses none of the session's notifications, even those
# sent while it had no connection (#44: the soak's direct session that
# got 12 of 13 resource updates; its client closes its GET stream every
# 15 s and resumes at once).  The stream stays in the zone, parked, as
# it does when an exiting worker ends it or its worker is killed: the
# newest GET stream goes on taking the session's messages until its
# client resumes it.  A client that opens a new GET stream instead
# (no Last-Event-ID) gets only what comes after, as before.
#
# Then the race the soak hit, many times over: one client calls
# update_watched_resource as fast as it can while another closes and
# resumes its GET stream after a few milliseconds each time, on 4
# workers; the notifications it read, across all the resumes, are one
# per successful update, in order, none twice.  Last, a client behind an
# mcp_pass gateway whose reload ends its relayed GET stream (yesterday's
# soak lost 2 notifications so): the same gap, at the endpoint.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Time::HiRes ();
use POSIX ();
use McpTest;
use McpStream;

my $URI = 'test://watched-resource';

my $t = streaming_server(workers => 4);

sub update {
    my ($sid) = @_;
    my $msg = $t->mcp_request($sid, 'tools/call',
                              { name => 'update_watched_resource', arguments => {} }, id => 'up');
    return $msg && $msg->{result} ? 1 : 0;
}

sub is_update {
    my ($ev) = @_;
    return ref $ev->{json} eq 'HASH'
        && ($ev->{json}{method} // '') eq 'notifications/resources/updated';
}

my ($trigger) = $t->mcp_initialize;
my ($sid) = $t->mcp_initialize;
$t->mcp_request($sid, 'resources/subscribe', { uri => $URI }, id => 'sub');

# --- updates while the client has no connection: the resume brings them ---------

{
    my $g = $t->mcp_get_stream($sid, timeout => 3);
    is($g->status, 200, 'GET stream: 200');
    take($g, 3);
    ok(update($trigger), 'an update');
    my $ev = take($g, 3);
    ok($ev && is_update($ev), 'read live on the GET stream');
    my $last = $ev ? $ev->{id} : '';
    $g->close;

    # the server sees the connection go (EOF) at once; 0.3 s is plenty
    Time::HiRes::sleep(0.3);
    is(update($trigger) + update($trigger) + update($trigger), 3,
       'three updates while the GET stream has no connection');

    my $r = $t->mcp_get_stream($sid, timeout => 3, last_event_id => $last);
    is($r->status, 200, "resumed with Last-Event-ID: $last");
    my @got = grep { defined $_->{data} && length $_->{data} } take_all($r, 1);
    is(scalar(grep { is_update($_) } @got), 3, '... the three updates come');
    my ($st) = id_parts($last);
    is(join(' ', map { (id_parts($_->{id}))[0] // '?' } @got), join(' ', ($st) x 3),
       '... on the stream it resumed');
    $last = @got ? $got[-1]{id} : $last;
    $r->close;

    # a new GET stream, no Last-Event-ID: only what comes after it
    Time::HiRes::sleep(0.3);
    ok(update($trigger), 'an update with no connection again');
    my $n = $t->mcp_get_stream($sid, timeout => 3);
    is($n->status, 200, 'a new GET stream (no Last-Event-ID): 200');
    my $p = take($n, 3);
    ok($p && !length($p->{data} // ''), '... its priming event');
    ok(quiet_for(0.3, $n), '... gets nothing of before');
    ok(update($trigger), 'the next update');
    my $e = take($n, 3);
    ok($e && is_update($e), '... reaches the new stream');
    $n->close;
}

# --- updates in a tight loop, the GET stream resumed over and over --------------

{
    my ($s2) = $t->mcp_initialize;
    $t->mcp_request($s2, 'resources/subscribe', { uri => $URI }, id => 'sub');

    my $g = $t->mcp_get_stream($s2, timeout => 3);
    is($g->status, 200, 'second session: GET stream: 200');
    my $prime = take($g, 3);
    my $last = $prime ? $prime->{id} : undef;
    ok(defined $last, "its priming event: $last");

    pipe(my $rd, my $wr) or die "pipe: $!";
    my $pid = fork() // die "fork: $!";
    if ($pid == 0) {
        close $rd;
        my $ok = 0;
        my $until = Time::HiRes::time() + 4;
        $ok += update($trigger) while Time::HiRes::time() < $until;
        print $wr "$ok\n";
        close $wr;
        POSIX::_exit(0);
    }
    close $wr;

    my (@got, %seen, @bad, $resumes, $ended);
    $resumes = 0;
    $ended = 0;
    while (waitpid($pid, POSIX::WNOHANG()) == 0) {
        # a few milliseconds of the stream, then the connection goes
        my $until = Time::HiRes::time() + 0.001 + rand(0.02);
        while ((my $left = $until - Time::HiRes::time()) > 0) {
            my $ev = take($g, $left) // last;
            $last = $ev->{id} if defined $ev->{id};
            next unless is_update($ev);
            push @bad, "$ev->{id} again" if $seen{ $ev->{id} }++;
            push @got, $ev;
        }
        $ended++ if $g->is_done;
        $g->close;
        $g = $t->mcp_get_stream($s2, timeout => 3, last_event_id => $last);
        push @bad, 'resume: ' . ($g->status // 'no status') unless ($g->status // 0) == 200;
        $resumes++;
    }
    my $ok = <$rd>;
    chomp $ok;
    close $rd;

    # the rest, on the last resume
    while (my $ev = take($g, 1)) {
        $last = $ev->{id} if defined $ev->{id};
        next unless is_update($ev);
        push @bad, "$ev->{id} again" if $seen{ $ev->{id} }++;
        push @got, $ev;
    }
    $g->close;

    note("$ok updates, $resumes resumes, $ended streams ended by the server");
    cmp_ok($ok, '>=', 50, "many updates succeeded ($ok)");
    cmp_ok($resumes, '>=', 50, "the GET stream was resumed many times ($resumes)");
    is(scalar(@got), $ok, 'one notification per update, across the resumes');
    is_deeply(\@bad, [], 'none twice, every resume answered 200');

    my @seq = map { (id_parts($_->{id}))[1] // -1 } @got;
    my @order = grep { $seq[$_] <= $seq[ $_ - 1 ] } 1 .. $#seq;
    is(scalar(@order), 0, 'in the order they were sent');
}

# --- through a gateway whose reload ends the relayed GET stream ------------------

{
    my $ep = $t->port;
    my $gw = McpTest->new(
        workers => 2,
        http    => 'mcp_session_zone zone=gw:1m;',
        server  => "location = /mcp { mcp_pass http://127.0.0.1:$ep/mcp; mcp_session gw; }",
    )->start;

    my ($s3) = $gw->mcp_initialize;
    ok($s3, 'a session through the gateway');
    $gw->mcp_request($s3, 'resources/subscribe', { uri => $URI }, id => 'sub');
    my $g = $gw->mcp_get_stream($s3, timeout => 5);
    is($g->status, 200, 'its GET stream, relayed: 200');
    take($g, 3);
    ok(update($trigger), 'an update');
    my $ev = take($g, 3);
    ok($ev && is_update($ev), '... relayed live');
    my $last = $ev ? $ev->{id} : '';

    ok($gw->reload(wait_old => 0), 'the gateway reloads');
    take_all($g, 5);
    ok($g->is_done, '... and its exit ends the relayed stream');

    # the gateway's upstream connection is gone too: the endpoint's
    # stream has no connection until the client resumes
    Time::HiRes::sleep(0.3);
    is(update($trigger) + update($trigger), 2, 'two updates meanwhile');

    my $r = $gw->mcp_get_stream($s3, timeout => 5, last_event_id => $last);
    is($r->status, 200, "resumed through a new gateway worker with Last-Event-ID: $last");
    my @got = grep { is_update($_) } take_all($r, 1);
    is(scalar(@got), 2, '... the two updates come');
    $r->close;
    $gw->stop;
}

$t->stop;
done_testing;
