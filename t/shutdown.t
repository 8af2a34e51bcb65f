# Graceful shutdown and reload.  When a worker exits gracefully (nginx -s
# reload, nginx -s quit), each stream that never ends by itself ends at
# once: a GET stream with a final event (the id of the last event
# written, retry, empty data), a subscriptions/listen stream with the
# listen request's result (the server ended it: 2026-07-28's #3171), and
# the old workers exit;
# the clients resume on the new workers, and a GET stream resumed with
# Last-Event-ID misses no message sent in between.  Calls in flight
# finish on their old worker with their own results (a sampling call's
# answer may come through a new worker); a load of tools/call loses no
# request across reloads.  mcp_shutdown_timeout bounds the wait: the
# calls left then end with -32000 "Server is shutting down".  A fast
# shutdown (SIGTERM) waits for nothing, but still writes those errors and
# the final events.
#
# Synchronisation is by events (the sampling request received, progress
# files of the load processes, /proc for the workers), each with a
# deadline; nothing sleeps for a guessed time.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Time::HiRes qw(time);
use POSIX ();
use JSON::PP ();
use McpTest qw(wait_until);
use McpAssert;
use McpStream;

my $TRUE = JSON::PP::true();
my %CAPS = (sampling => {});
my $URI = 'test://watched-resource';

my $t = streaming_server();

sub text_of { ((($_[0] // {})->{result} // {})->{content} // [ {} ])->[0]{text} }


sub gone { my @p = @_; wait_until(10, sub { !grep { McpTest::_alive($_) } @p }) }

# One assertion: $ev is a final event: "<stream>-<seq>" id, retry, empty data.
sub final_ok {
    my ($ev, $name) = @_;
    local $Test::Builder::Level = $Test::Builder::Level + 1;
    my $ok = ok($ev && ($ev->{id} // '') =~ /^[1-9]\d*-\d+$/
                && defined $ev->{retry} && $ev->{retry} == 1000
                && defined $ev->{data} && $ev->{data} eq '', $name);
    diag('event: ' . ($ev ? $ev->{raw} : '(none)')) unless $ok;
    return $ok;
}

# A stateless (2026-07-28) POST, as in t/stateless_listen.t.
sub post26 {
    my ($id, $method, $params, %o) = @_;
    my %h = ('MCP-Protocol-Version' => '2026-07-28', 'Mcp-Method' => $method,
             (defined $o{name} ? ('Mcp-Name' => $o{name}) : ()));
    my $meta = { 'io.modelcontextprotocol/protocolVersion'    => '2026-07-28',
                 'io.modelcontextprotocol/clientCapabilities' => {} };
    return $t->mcp_post(undef, { jsonrpc => '2.0', id => $id, method => $method,
                                 params => { %$params, _meta => $meta } },
                        headers => \%h, protocol_version => undef,
                        ($o{stream} ? (stream => 1) : ()), %{ $o{post} // {} });
}

# A listen stream, read up to its acknowledgement.
sub listen_open {
    my ($id) = @_;
    my $s = post26($id, 'subscriptions/listen', { notifications => { toolsListChanged => $TRUE } },
                   stream => 1);
    while (my $ev = take($s, 5)) {
        last if ($ev->{json}{method} // '') eq 'notifications/subscriptions/acknowledged';
    }
    return $s;
}

sub updates { grep { ($_->{json}{method} // '') eq 'notifications/resources/updated' } @_ }

sub update {
    my ($sid) = @_;
    my $m = $t->mcp_request($sid, 'tools/call', { name => 'update_watched_resource', arguments => {} });
    return $m && $m->{result} ? 1 : 0;
}

# --- a reload ends GET and listen streams at once, with a final event --------------------

{
    my @sids = map { scalar $t->mcp_initialize } 1 .. 4;
    my @g = map { my $s = $_; map { $t->mcp_get_stream($s) } 1 .. 2 } @sids;
    my @primes = map { take($_, 3) } @g;
    my @l = map { listen_open("l$_") } 1 .. 2;
    my %held = map { (worker_of($_) // '?') => 1 } @g, @l;
    cmp_ok(scalar(keys %held), '>', 1, 'the streams are held by ' . scalar(keys %held) . ' workers');

    my @old = $t->worker_pids;
    my $mark = $t->log_mark;
    ok($t->reload(wait_old => 0), 'reload with 8 GET streams and 2 listen streams open');

    my (@finals, @ended);
    for my $s (@g, @l) {
        my @ev = take_all($s, 10);
        push @finals, $ev[-1];
        push @ended, $s->is_done && !$s->{error};
    }
    is(scalar(grep { $_ } @ended), 10, 'every stream ends cleanly (chunked terminator)');
    is(scalar(grep { ($_ // {})->{retry} } @finals[0 .. 7]), 8, 'every GET stream\'s last event carries retry');
    final_ok($finals[0], 'a GET stream\'s last event is the final event');
    is_deeply([ map { $_->{id} } @finals[0 .. 7] ], [ map { $_->{id} } @primes ],
              '... each naming the last event written (nothing after the priming event)');
    ok(!(grep { defined $_->{json} } @finals[0 .. 7]), 'the final events carry no message');
    is_deeply([ map { my $m = ($_ // {})->{json} // {};
                      [ $m->{id}, ($m->{result} // {})->{resultType},
                        (($m->{result} // {})->{_meta} // {})->{'io.modelcontextprotocol/subscriptionId'} ] }
                    @finals[8, 9] ],
              [ [ 'l1', 'complete', 'l1' ], [ 'l2', 'complete', 'l2' ] ],
              'each listen stream\'s last message is its listen request\'s result, naming the subscription');
    ok(gone(@old), 'the old workers exit');
    ok(!(grep { /\[(?:alert|crit|emerg)\]/ } split /\n/, $t->log_since($mark)),
       'no [alert]/[crit]/[emerg] (no socket left open at exit)');

    my $mark2 = $t->log_mark;
    my @r = map { $t->mcp_get_stream($sids[int($_ / 2)], last_event_id => $finals[$_]{id}, timeout => 5) } 0 .. 7;
    is(scalar(grep { $_->status == 200 } @r), 8, 'each GET stream resumes on the new workers with its final event\'s id');
    unlike($t->log_since($mark2), qr/is gone/, '... as the same stream');
    $_->close for @r;
    my $again = listen_open('l3');
    ok(!$again->is_done && worker_of($again), 'a new listen stream opens on the new workers');
    $again->close;
}

# --- a GET stream resumed after a reload misses nothing ---------------------------------

{
    my ($s) = $t->mcp_initialize;
    ok($t->mcp_request($s, 'resources/subscribe', { uri => $URI })->{result}, 'subscribed to the watched resource');
    my $g = $t->mcp_get_stream($s);
    take($g, 3);
    ok(update($s), 'an update before the reload');
    is(scalar(updates(take($g, 5))), 1, '... reaches the GET stream');

    my %oldw = map { $_ => 1 } $t->worker_pids;
    ok($t->reload(wait_old => 0), 'reload');
    # Right after the HUP: the old worker may still write these, or the
    # stream ended already and they wait in the log for the resume.
    ok(update($s) && update($s), 'two updates while the stream moves to another worker');
    my @ev = take_all($g, 10);
    ended_ok($g, 'the GET stream ends');
    final_ok($ev[-1], '... with the final event');

    # Right after the HUP an old worker that has not begun its exit yet
    # may still accept the resume; it then ends that stream too, with a
    # final event, and the client resumes once more, as a real one would.
    my ($r, @replayed, $hops);
    my $from = $ev[-1]{id};
    for (1 .. 5) {
        $r = $t->mcp_get_stream($s, last_event_id => $from, timeout => 5);
        last unless $r->status == 200 && $oldw{ worker_of($r) // 0 };
        $hops++;
        my @e = take_all($r, 10);
        push @replayed, updates(@e);
        my ($fin) = grep { defined $_->{id} } reverse @e;
        $from = $fin->{id} if $fin;
        $r->close;
    }
    is($r->status, 200, 'resumed with Last-Event-ID on a new worker'
                        . ($hops ? " (after $hops on an old one)" : ''));
    ok(!$oldw{ worker_of($r) // 0 }, '... which is a new one');
    wait_until(5, sub {
        my $e = take($r, 0.1);
        push @replayed, updates($e) if $e;
        return updates(@ev) + @replayed >= 2;
    });
    is(scalar(updates(@ev)) + scalar(@replayed), 2, 'both updates arrive, before the final event or replayed after it');
    ok(update($s), 'an update after the resume');
    is(scalar(updates(take($r, 5))), 1, '... arrives live on the resumed stream');
    my %seen;
    my @ids = map { $_->{id} } updates(@ev), @replayed;
    ok(!(grep { $seen{$_}++ } @ids), 'no event twice (' . join(', ', @ids) . ')');
    $r->close;
}

# --- load and calls in flight across reloads: no request lost ----------------------------

{
    my $port = $t->port;
    my @sids = map { scalar $t->mcp_initialize } 1 .. 4;
    my $dir = $t->prefix;

    # A child that posts a tools/call on a fresh connection in a loop until
    # $dir/stop exists; each line of $out: "<ok 0|1> <worker> <t0> <t1> <why>".
    my $child = sub {
        my ($name, $tool, $args) = @_;
        my $pid = fork // die "fork: $!";
        return $pid if $pid;
        open my $fh, '>', "$dir/$name.out" or POSIX::_exit(1);
        $fh->autoflush(1);
        my $deadline = time + 60;
        for (my $i = 1; !-e "$dir/stop" && time < $deadline; $i++) {
            my $id = "$name-$i";
            my $body = McpTest::encode_json({ jsonrpc => '2.0', id => $id, method => 'tools/call',
                                              params => { name => $tool, arguments => $args } });
            my $t0 = time;
            my $r = McpTest::http_request(
                port => $port, method => 'POST', path => '/mcp', keepalive => 0,
                timeout => 40, quiet => 1, body => $body,
                headers => [ 'Content-Type' => 'application/json',
                             Accept => 'application/json, text/event-stream',
                             'Mcp-Session-Id' => $sids[$i % @sids],
                             'MCP-Protocol-Version' => '2025-11-25' ]);
            my $m = eval { McpTest::decode_json($r->{body} // '') };
            my $ok = $r->{status} == 200 && ref $m eq 'HASH' && ($m->{id} // '') eq $id
                     && ref $m->{result} eq 'HASH' && defined text_of($m) ? 1 : 0;
            my $why = $ok ? '' : "$r->{status} " . ($r->{error} // substr($r->{body} // '', 0, 150));
            $why =~ s/\s+/ /g;
            printf $fh "%d %s %.3f %.3f %s\n", $ok, $r->{headers}{'x-worker'} // '-', $t0, time, $why;
        }
        close $fh;
        POSIX::_exit(0);
    };
    my $lines = sub { my $s = McpTest::_slurp("$dir/$_[0].out") // ''; [ map { [ split / /, $_, 5 ] } split /\n/, $s ] };

    my @kids = ($child->('fast', 'test_simple_text', {}),
                map { $child->("slow$_", 'slow_compute', { seconds => 1 }) } 1 .. 3);
    ok(wait_until(20, sub { @{ $lines->('fast') } >= 20 && !grep { !@{ $lines->("slow$_") } } 1 .. 3 }),
       'the load runs: fast calls and three lanes of 1 s calls');

    my ($w_sid) = $t->mcp_initialize(capabilities => \%CAPS);
    my $w = call_stream($t, $w_sid, 'sw', 'test_sampling', { prompt => 'p' });
    take($w, 5);
    my $req = take($w, 5);
    ok($req && ($req->{json}{method} // '') eq 'sampling/createMessage', 'a sampling call waits for its client');

    my @old = $t->worker_pids;
    my $hup = time;
    ok($t->reload(wait_old => 0), 'first reload under load');
    is(answer($t, $w_sid, $req->{json}{id}, sampling_answer('after the reload'))->{status}, 202,
       'the client answers through a new worker');
    my @msgs = rpc_of(take_all($w, 10));
    ended_ok($w, 'the sampling call\'s stream ends');
    is(text_of($msgs[-1]), 'LLM response: after the reload', '... with the call\'s result, from its old worker');
    ok((grep { $_ == worker_of($w) } @old), '... the worker that held it before the reload');
    ok(gone(@old), 'the old workers exit once their calls are done');

    my $n = @{ $lines->('fast') };
    ok(wait_until(20, sub { @{ $lines->('fast') } >= $n + 20 }), 'the load goes on');
    ok($t->reload, 'second reload under load');
    $n = @{ $lines->('fast') };
    my %after = map { $_ => scalar @{ $lines->("slow$_") } } 1 .. 3;
    ok(wait_until(20, sub { @{ $lines->('fast') } >= $n + 20 && !grep { @{ $lines->("slow$_") } <= $after{$_} } 1 .. 3 }),
       'the load goes on after the second reload');
    open my $sf, '>', "$dir/stop" or die;
    close $sf;
    waitpid $_, 0 for @kids;

    my @fast = @{ $lines->('fast') };
    my @slow = map { @{ $lines->("slow$_") } } 1 .. 3;
    my @bad = grep { !$_->[0] } @fast, @slow;
    is(scalar @bad, 0, sprintf('every request got its full response (%d fast, %d slow)', scalar @fast, scalar @slow))
        or diag(join "\n", map { "@$_" } @bad[0 .. ($#bad < 4 ? $#bad : 4)]);
    my %oldw = map { $_ => 1 } @old;
    my @across = grep { $oldw{ $_->[1] } && $_->[2] < $hup && $_->[3] > $hup } @slow;
    cmp_ok(scalar @across, '>=', 1,
           scalar(@across) . ' slow calls in flight at the first reload finished on their old worker');
}

# --- quit: streams end, the call in flight finishes, nginx exits --------------------------

{
    my ($s) = $t->mcp_initialize;
    my @g = map { $t->mcp_get_stream($s) } 1 .. 3;
    take($_, 3) for @g;
    my $l = listen_open('lq');
    my $port = $t->port;
    my $dir = $t->prefix;
    # One call of 1 s after another until nginx stops answering.
    my $pid = fork // die "fork: $!";
    if (!$pid) {
        open my $fh, '>', "$dir/quit.out" or POSIX::_exit(1);
        $fh->autoflush(1);
        for my $i (1 .. 100) {
            my $t0 = time;
            my $r = McpTest::http_request(
                port => $port, method => 'POST', path => '/mcp', keepalive => 0, timeout => 40,
                quiet => 1, body => qq({"jsonrpc":"2.0","id":$i,"method":"tools/call","params":)
                                    . qq({"name":"slow_compute","arguments":{"seconds":1}}}),
                headers => [ 'Content-Type' => 'application/json',
                             Accept => 'application/json, text/event-stream',
                             'Mcp-Session-Id' => $s, 'MCP-Protocol-Version' => '2025-11-25' ]);
            printf $fh "%d %.3f %.3f %s\n", $r->{status}, $t0, time,
                   ($r->{body} // '') =~ /"Computed the answer"/ ? 'result' : 'none';
            last unless $r->{status};
        }
        close $fh;
        POSIX::_exit(0);
    }
    my $lines = sub { [ map { [ split / / ] } split /\n/, McpTest::_slurp("$dir/quit.out") // '' ] };
    ok(wait_until(10, sub { @{ $lines->() } >= 1 }), 'a client calls a 1 s tool again and again');

    my $master = $t->master_pid;
    my @workers = $t->worker_pids;
    my $quit = time;
    kill 'QUIT', $master;
    my @finals = map { (take_all($_, 10))[-1] } @g, $l;
    is(scalar(grep { $_->is_done && !$_->{error} } @g, $l), 4, 'quit: the GET and listen streams end cleanly');
    is(scalar(grep { ($_ // {})->{retry} } @finals[0 .. 2]), 3, '... each GET stream with the final event');
    is(((($finals[3] // {})->{json} // {})->{result} // {})->{resultType}, 'complete',
       '... the listen stream with its result');
    my $status = McpTest::_wait_pid($master, 40);
    ok(defined $status && $status == 0, 'quit: nginx exits with 0');
    ok(gone(@workers), 'quit: no worker is left');
    waitpid $pid, 0;
    my @calls = @{ $lines->() };
    my @answered = grep { $_->[0] } @calls;
    ok(!(grep { $_->[0] != 200 || $_->[3] ne 'result' } @answered),
       'every call nginx answered got its result (' . scalar(@answered) . ' calls)');
    ok((grep { $_->[0] == 200 && $_->[1] < $quit && $_->[2] > $quit } @calls),
       'the call in flight at the QUIT finished with its result');
    $t->check_log(name => 'quit: the error log is clean', final => 1);
    delete $t->{pid};
}

# --- mcp_shutdown_timeout: the calls left end with an error ------------------------------

{
    my $b = streaming_server(http => 'mcp_shutdown_timeout 1s;');
    $b->expect_log_error(qr/Server is shutting down/);
    my ($s) = $b->mcp_initialize(capabilities => \%CAPS);
    my $w = call_stream($b, $s, 'late', 'test_sampling', { prompt => 'p' });
    take($w, 5);
    ok(take($w, 5), 'a sampling call waits for an answer that never comes');
    my @old = $b->worker_pids;
    my $mark = $b->log_mark;
    ok($b->reload(wait_old => 0), 'reload with mcp_shutdown_timeout 1s');
    my @msgs = rpc_of(take_all($w, 10));
    ended_ok($w, 'the call\'s stream ends at the timeout');
    is_deeply([ map { [ $_->{id}, $_->{error}{code}, $_->{error}{message} ] } @msgs ],
              [ [ 'late', -32000, 'Server is shutting down' ] ], '... with -32000 "Server is shutting down"');
    ok(gone(@old), 'the old workers exit');
    like($b->log_since($mark), qr/\[warn\].*mcp: shutdown timeout, 1 call still running end with an error/,
         'one [warn] line tells of it');
    $b->stop;
}

# --- fast shutdown (SIGTERM): nothing waits, errors and final events still go out ---------

{
    my $c = streaming_server();
    $c->expect_log_error(qr/Server is shutting down/);
    my ($s) = $c->mcp_initialize(capabilities => \%CAPS);
    my $g = $c->mcp_get_stream($s);
    take($g, 3);
    my $w = call_stream($c, $s, 'term', 'test_sampling', { prompt => 'p' });
    take($w, 5);
    ok(take($w, 5), 'a sampling call waits for its client');
    my $master = $c->master_pid;
    kill 'TERM', $master;
    my $last = (take_all($g, 10))[-1];
    ended_ok($g, 'SIGTERM: the GET stream ends cleanly');
    final_ok($last, '... with the final event');
    my @msgs = rpc_of(take_all($w, 10));
    is_deeply([ map { [ $_->{id}, $_->{error}{message} ] } @msgs ], [ [ 'term', 'Server is shutting down' ] ],
              'SIGTERM: the waiting call ends with -32000 "Server is shutting down"');
    my $status = McpTest::_wait_pid($master, 10);
    ok(defined $status && $status == 0, 'SIGTERM: nginx exits with 0');
    $c->check_log(name => 'SIGTERM: the error log is clean', final => 1);
    delete $c->{pid};
}

done_testing;
