# mcp_stdio_poll (issue #40; SEP-1699's polling) on a stdio location with
# sessions, under worker_processes 4, against our own stdio Everything
# server (t/stdio-everything/server.mjs, whose test_reconnection answers
# after a second).  A session POST that takes an event stream and is not
# answered within the poll time gets a stream of the session's log: a
# priming event (id <stream>-0, retry: of mcp_stream_retry, no data),
# then the stream ends; the answer waits in the log, and a GET with that
# Last-Event-ID, on whichever worker, gets it with its event id.  The
# POST on the child's own worker and on another one; a call answered in
# time is plain JSON; events of a longer call carry ids in order; a
# location whose reply steps read the answer (a tool policy) holds its
# POSTs to their answers, and its streams cannot be taken by a
# Last-Event-ID (409); a client that leaves a stream after its first
# event does not cancel the call (its answer waits for the resume); a
# server request goes on a stream a client reads before a parked one; a
# Last-Event-ID of a stream that is gone opens a new GET stream; one of
# another session's is a 404; across a reload, a call resumed before it,
# or held on another worker, gets its answer from the old worker.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Time::HiRes qw(sleep time);
use JSON::PP qw(decode_json);
use IO::Socket::INET;
use IO::Select;
use POSIX ();
use McpTest timeout => 240;
use McpStream;
use McpGateway qw(node_available node_bin npm_dir);

my $why = node_available('@modelcontextprotocol/sdk');
plan skip_all => $why if $why;
my $NODE   = Cwd::abs_path(node_bin());
my $NPM    = Cwd::abs_path(npm_dir());
my $SERVER = Cwd::abs_path("$FindBin::Bin/stdio-everything/server.mjs");
my $MARK   = McpTest::process_mark('stdio_sessions_poll');

my $loc = <<"LOC";
            mcp_stdio $NODE $SERVER --npm $NPM;
            mcp_stdio_sessions on;
            mcp_stdio_env $MARK;
            mcp_stream_retry 700ms;
            mcp_stdio_pool size=16;
            add_header X-Worker \$pid always;
LOC

my $t = McpTest->new(
    workers => 4,
    listen  => 'reuseport',
    server  => <<"NGX",
        location = /mcp {
$loc
            mcp_stdio_poll 300ms;
        }
        location = /policy {
$loc
            mcp_stdio_poll 300ms;
            mcp_tools_deny test_error_handling;
        }
        location = /who { add_header X-Worker \$pid always; return 200 "who\\n"; }
NGX
);
$t->start;

my $V = '2025-11-25';

sub post {
    my ($path, $sid, $msg, %o) = @_;
    return $t->mcp_post($sid, $msg, protocol_version => $V, path => $path,
                        timeout => 20, %o);
}

sub init {
    my ($path) = @_;
    my $r = post($path, undef, { jsonrpc => '2.0', id => 0, method => 'initialize',
        params => { protocolVersion => $V, capabilities => {},
                    clientInfo => { name => 't', version => '1' } } });
    my $sid = $r->{headers}{'mcp-session-id'};
    post($path, $sid, { jsonrpc => '2.0', method => 'notifications/initialized' })
        if defined $sid;
    return ($sid, $r->{headers}{'x-worker'});
}

# a GET that is refused: its whole response
sub get_refused {
    my ($path, $sid, $last) = @_;
    my $h = $t->_mcp_headers($sid, protocol_version => $V,
        headers => { 'Content-Type' => undef, Accept => 'text/event-stream',
                     'Last-Event-ID' => $last });
    return $t->request(method => 'GET', path => $path, headers => $h, timeout => 5);
}

sub resume {
    my ($path, $sid, $last) = @_;
    return $t->mcp_get_stream($sid, path => $path, last_event_id => $last,
                              protocol_version => $V, timeout => 10);
}

# a kept connection to the session's owner ($kind 'owner') or to another
# worker ('other'): (conn => socket) for a request, which the kernel's
# spread of fresh connections would leave to chance
sub on {
    my ($kind, $owner) = @_;
    my ($c) = conn_on($t, sub { kind_of($_[0], $owner) eq $kind });
    return $c ? (conn => $c, keepalive => 1) : ();
}

# 'owner' if worker $w is the session's owner, else 'other'
sub kind_of { my ($w, $owner) = @_; return $w eq $owner ? 'owner' : 'other' }

# --- a slow call's stream ends after its priming event; the answer comes on
#     the resume, whether the POST reached the child's worker or another ----

my %case;    # 'owner' / 'other' => what was seen
for my $kind (qw(owner other)) {
    my ($sid, $owner) = init('/mcp');
    next unless defined $sid;
    my %on = on($kind, $owner);
    my $t0 = time;
    my $st = call_stream($t, $sid, "rc-$kind", 'test_reconnection', {},
                         path => '/mcp', protocol_version => $V, timeout => 10, %on);
    my $w = $st->header('x-worker') // '';
    next if kind_of($w, $owner) ne $kind;
    my @ev = take_all($st, 3);
    my $ended = $st->is_done && !$st->{error};
    my $took = time - $t0;
    my $g = resume('/mcp', $sid, $ev[0] ? $ev[0]{id} : '');
    my @msgs = until_response($g, "rc-$kind", 5);
    my $answer = $msgs[-1] // {};
    $case{$kind} = { id => "rc-$kind", w => $w, owner => $owner, ev => \@ev, ended => $ended,
                     took => $took, g => $g, answer => $answer,
                     gw => $g->header('x-worker') // '' };
    sleep 0.2;
    $g->close;
}

for my $kind (qw(owner other)) {
    my $c = $case{$kind};
    ok($c, "a POST of test_reconnection on the session's $kind worker")
        or next;
    note("POST on $c->{w} (owner $c->{owner}), resumed on $c->{gw}");
    priming_ok($c->{ev}[0], 700, "$kind: the stream starts with its priming event");
    is(scalar(grep { ref $_->{json} eq 'HASH' } @{ $c->{ev} }), 0,
       "$kind: no message on the POST's stream");
    ok($c->{ended} && $c->{took} < 0.95,
       "$kind: the stream ended unanswered after the poll time ("
       . sprintf('%.2f s', $c->{took}) . ')');
    is($c->{answer}{id} // '', $c->{id}, "$kind: the answer on the GET that resumed it");
    like($c->{answer}{result}{content}[0]{text} // '', qr/Reconnection test completed/,
         "$kind: the child's result");
    my ($ps) = id_parts($c->{ev}[0]{id});
    my $aid = $c->{g}->last_id // '';
    my ($as, $aseq) = id_parts($aid);
    ok(defined $as && $as eq $ps && $aseq > 0,
       "$kind: the answer's event id ($aid) is of that stream, after its priming");
    ended_ok($c->{g}, "$kind: the resumed stream ends after the answer");
}

# --- a call answered within the poll time is plain JSON ----------------------

my ($sid, $owner) = init('/mcp');
my $r = post('/mcp', $sid, call_msg('fast', 'test_simple_text', {}));
is($r->{status}, 200, 'a fast call: 200');
like($r->{headers}{'content-type'} // '', qr{^application/json}, 'a fast call: JSON, no stream');
is($r->{json}{id} // '', 'fast', 'a fast call: its answer');

# --- a call with progress: each event has its id, in order ------------------

my %pseen;
for my $kind (qw(owner other)) {
    my $st = call_stream($t, $sid, "pg-$kind", 'test_tool_with_progress', {},
                         token => "tok-$kind", path => '/mcp', protocol_version => $V,
                         timeout => 10, on($kind, $owner));
    my $w = $st->header('x-worker') // '';
    my @ev = take_all($st, 3);
    $st->close;
    ok(kind_of($w, $owner) eq $kind, "progress: a call on the $kind worker")
        or next;
    $pseen{$kind} = 1;
    priming_ok($ev[0], 700, "progress ($kind worker): the priming event first");
    my @ids = map { [id_parts($_->{id})] } @ev;
    my ($s0) = @{ $ids[0] };
    my @seqs = map { $_->[1] } @ids;
    ok((!grep { !defined $_->[0] || $_->[0] ne $s0 } @ids)
       && (!grep { $seqs[$_] <= $seqs[$_ - 1] } 1 .. $#seqs),
       "progress ($kind worker): every event's id is of one stream, in order ("
       . join(' ', map { $_->{id} // '-' } @ev) . ')');
    my @rpc = rpc_of(@ev);
    ok(@rpc >= 2 && ($rpc[-1]{id} // '') eq "pg-$kind"
       && ($rpc[0]{method} // '') eq 'notifications/progress',
       "progress ($kind worker): the notifications, then the answer");
}

# --- a location whose reply steps read the answer holds it to its request ----

sub init_sampling {
    my ($path) = @_;
    my $r = post($path, undef, { jsonrpc => '2.0', id => 0, method => 'initialize',
        params => { protocolVersion => $V, capabilities => { sampling => {} },
                    clientInfo => { name => 't', version => '1' } } });
    my $sid = $r->{headers}{'mcp-session-id'};
    post($path, $sid, { jsonrpc => '2.0', method => 'notifications/initialized' })
        if defined $sid;
    return ($sid, $r->{headers}{'x-worker'});
}

my ($psid, $powner) = init_sampling('/policy');
my %held;
for my $kind (qw(owner other)) {
    my %on = on($kind, $powner);
    my $t0 = time;
    my $r = post('/policy', $psid, call_msg("held-$kind", 'test_reconnection', {}), %on);
    my $w = $r->{headers}{'x-worker'} // '';
    $held{$kind} = { id => "held-$kind", r => $r, took => time - $t0 }
        if kind_of($w, $powner) eq $kind;
}
for my $kind (qw(owner other)) {
    my $h = $held{$kind} or do { fail("/policy: a POST on the $kind worker"); next };
    ok($h->{took} > 0.9 && ($h->{r}{json}{id} // '') eq $h->{id},
       "/policy ($kind worker): the answer on the POST itself, held past the poll ("
       . sprintf('%.2f s', $h->{took}) . ')');
}

# a stream of the log (on another worker than the child's: its events have
# ids) whose answer the policy reads: a Last-Event-ID naming it is refused
my $sealed;
for my $try (1 .. 16) {
    my $st = call_stream($t, $psid, "samp-$try", 'test_sampling', { prompt => 'hi' },
                         path => '/policy', protocol_version => $V, timeout => 10,
                         on('other', $powner));
    my $w = $st->header('x-worker') // '';
    my $prime = take($st, 3);
    my $ask = next_request($st, 5);
    if ($w ne $powner && $prime && defined $prime->{id} && $ask) {
        $sealed = { st => $st, prime => $prime, ask => $ask, id => "samp-$try" };
        last;
    }
    answer($t, $psid, $ask->{id}, sampling_answer('x'), path => '/policy',
           protocol_version => $V) if $ask;
    take_all($st, 3);
    $st->close;
}
ok($sealed, '/policy: a sampling call\'s stream on another worker, with event ids');
if ($sealed) {
    my $g = get_refused('/policy', $psid, $sealed->{prime}{id});
    is($g->{status}, 409, "/policy: a Last-Event-ID naming it ($sealed->{prime}{id}): 409");
    is(eval { decode_json($g->{body})->{error}{code} } // '', -32600,
       '/policy: with a JSON-RPC error');
    my $a = answer($t, $psid, $sealed->{ask}{id}, sampling_answer('sampled'),
                   path => '/policy', protocol_version => $V);
    is($a->{status}, 202, '/policy: the sampling answer taken');
    my @msgs = until_response($sealed->{st}, $sealed->{id}, 5);
    is(($msgs[-1] // {})->{id} // '', $sealed->{id},
       '/policy: the call\'s answer on its own stream all the same');
    $sealed->{st}->close;
}

# --- a POST's stream taken over before its poll time: no false error ---------

# what each socket says until it closes, or $secs pass
sub read_all {
    my ($secs, @socks) = @_;
    my %out;
    my $sel = IO::Select->new(@socks);
    my $until = time + $secs;
    while ($sel->count && time < $until) {
        for my $s ($sel->can_read(0.5)) {
            my $n = sysread($s, my $buf, 65536);
            if (!$n) { $sel->remove($s); close $s; next }
            $out{"$s"} .= $buf;
        }
    }
    return map { $out{"$_"} // '' } @socks;
}

{
    my ($tsid) = init('/mcp');
    # a new session's first stream is 1: its id is known before its priming
    my $ps = post_unread($t, $tsid, call_msg('taken', 'test_reconnection', {}), protocol_version => $V);
    sleep 0.1;
    my $g = resume('/mcp', $tsid, '1-0');
    my ($post) = read_all(3, $ps);
    my @msgs = until_response($g, 'taken', 5);
    is(($msgs[-1] // {})->{id} // '', 'taken',
       'a POST stream taken over by a Last-Event-ID: the answer on the GET');
    unlike($post, qr/"error"/, 'the POST it was taken from ends without a JSON-RPC error');
    like($post, qr/id: 1-0\r?\nretry: 700/, '... after its priming event');
    $g->close;
}

# --- a client that leaves after its stream's first event, before the poll
#     time: the call goes on, its answer waits in the log for the resume
#     (the spec: a disconnection is not a cancellation) ---------------------

{
    my ($lsid, $lowner) = init_sampling('/mcp');
    my %left;
    for my $kind (qw(owner other)) {
        my $st = call_stream($t, $lsid, "left-$kind", 'test_sampling', { prompt => 'hi' },
                             path => '/mcp', protocol_version => $V, timeout => 10,
                             on($kind, $lowner));
        my $w = $st->header('x-worker') // '';
        next if kind_of($w, $lowner) ne $kind;
        my $prime = take($st, 3);
        my $ask = next_request($st, 5);
        my $last = $st->last_id;
        $st->close;    # well before the poll time: the call waits on the client
        next unless $ask;
        sleep 0.1;
        my $g = resume('/mcp', $lsid, $last // '');
        my $a = answer($t, $lsid, $ask->{id}, sampling_answer("left $kind"),
                       path => '/mcp', protocol_version => $V);
        my @msgs = until_response($g, "left-$kind", 5);
        $left{$kind} //= { last => $last, status => $g->status, a => $a->{status},
                           answer => $msgs[-1] // {}, id => "left-$kind" };
        $g->close;
    }
    for my $kind (qw(owner other)) {
        my $c = $left{$kind} or do { fail("a POST that its client left, on the $kind worker"); next };
        is($c->{a}, 202, "$kind: the client left after the sampling request ($c->{last}); its answer taken");
        is($c->{answer}{id} // '', $c->{id},
           "$kind: the call went on, and its answer came on the GET that resumed the stream");
        like($c->{answer}{result}{content}[0]{text} // '', qr/left $kind/,
             "$kind: ... with what the client answered the sampling request");
    }
}

# --- a server request while another call of the session is parked: it goes
#     on the stream a client reads, not on the parked one (the stdio
#     transport does not say which call asks; the answer reaches the child
#     by its id from any stream) -----------------------------------------------

{
    my ($psid) = init_sampling('/mcp');
    my $first = call_stream($t, $psid, 'parked', 'test_sampling', { prompt => 'first' },
                            path => '/mcp', protocol_version => $V, timeout => 10);
    take($first, 3);
    my $ask1 = next_request($first, 5);
    take_all($first, 2);    # its poll time: the stream ends, the call waits at the child
    my $last1 = $first->last_id;
    ok($ask1 && $first->is_done, 'a sampling call asked its client, then its stream was parked');
    my $second = call_stream($t, $psid, 'live', 'test_sampling', { prompt => 'second' },
                             path => '/mcp', protocol_version => $V, timeout => 10);
    take($second, 3);
    my $ask2 = next_request($second, 2);
    like(($ask2 // {})->{params}{messages}[0]{content}{text} // '', qr/second/,
         'a second call\'s sampling request comes on its own stream, not on the parked one');
    my $last2 = $second->last_id;
    $second->close;
    my %a;
    $a{$_->[0]} = answer($t, $psid, $_->[1]{id}, sampling_answer("to $_->[0]"), path => '/mcp',
                         protocol_version => $V)->{status} for grep { $_->[1] } [first => $ask1], [second => $ask2];
    is(join(',', map { $a{$_} // 0 } qw(first second)), '202,202', 'both answered');
    for my $c ([ 'parked', $last1, 'first' ], [ 'live', $last2, 'second' ]) {
        my $g = resume('/mcp', $psid, $c->[1] // '');
        my @msgs = until_response($g, $c->[0], 5);
        like((($msgs[-1] // {})->{result}{content}[0]{text}) // '', qr/to $c->[2]/,
             "the $c->[2] call's result, on the GET that resumed its stream, has its own answer");
        $g->close;
        sleep 0.2;
    }
}

# --- a session's requests at its child are bounded (a polled one holds no
#     connection) ---------------------------------------------------------------

{
    my ($bsid) = init('/mcp');
    # in waves: a wave's streams are parked when it polls out, and the next
    # wave's take their places (a session holds 32 streams), while every
    # wave's calls still run at the child (test_reconnection takes 1 s)
    my @socks;
    for my $wave (1 .. 3) {
        push @socks, grep { defined }
            map { post_unread($t, $bsid, call_msg("burst-$wave-$_", 'test_reconnection', {}),
                             protocol_version => $V) } 1 .. 30;
        sleep 0.4;
    }
    is(scalar @socks, 90, '90 calls in three waves on one session');
    my @out = read_all(15, @socks);
    my $bound = grep { /too many requests at its stdio server/ } @out;
    my $polled = grep { /id: \d+-0\r?\nretry:/ && !/"error"/ } @out;
    ok($bound >= 1 && $polled <= 64,
       "past 64 at the child they are refused at once ($bound refused, $polled polled)");
    sleep 1.2;    # the polled calls end at the child
    my $r = post('/mcp', $bsid, call_msg('after', 'test_simple_text', {}));
    is($r->{json}{id} // '', 'after', 'the session serves calls again afterwards');
}

# --- a GET with Last-Event-ID on the owner while its own GET is open: 409 -----

{
    my ($osid, $oowner) = init('/mcp');
    my $og;
    for (1 .. 40) {
        my $g = $t->mcp_get_stream($osid, path => '/mcp', protocol_version => $V,
                                   timeout => 5);
        if (($g->header('x-worker') // '') eq $oowner && $g->status == 200) { $og = $g; last }
        $g->close;
        sleep 0.2;
    }
    ok($og, 'a GET stream on the owner');
    my $second;
    for (1 .. 40) {
        last unless $og;
        my $g = resume('/mcp', $osid, '999-0');
        if (($g->header('x-worker') // '') eq $oowner) { $second = $g->status; $g->close; last }
        $g->close;
        sleep 0.2;
    }
    is($second // 0, 409, 'a second GET on the owner with a Last-Event-ID of a gone stream: 409');
    $og->close if $og;
}

# --- Last-Event-ID of a stream gone, of another session ---------------------

my $gone = resume('/mcp', $sid, '999-0');
is($gone->status, 200, 'a stream gone: a GET stream all the same');
my $pe = take($gone, 3);
priming_ok($pe, 700, 'a stream gone: a new stream, with its priming event');
ok(($pe->{id} // '') ne '999-0', 'a stream gone: under a new id');
$gone->close;

my ($sid2) = init('/mcp');
my $r2 = post('/mcp', $sid2, call_msg('x', 'test_simple_text', {}));
is($r2->{status}, 200, 'a second session works');
my $other = get_refused('/mcp', 'f' x 32, '1-0');
is($other->{status}, 404, 'Last-Event-ID with an unknown session: 404');

# --- a reload while a call is parked and its client has resumed it: the
#     old owner waits for the call, and the answer reaches the GET (last:
#     the reload ends every session of the old workers) ---------------------

{
    my ($ok, @seen) = (0);
    for my $round (1 .. 2) {
        my ($rsid) = init('/mcp');
        my $st = call_stream($t, $rsid, "rl-$round", 'test_reconnection', {},
                             path => '/mcp', protocol_version => $V, timeout => 10);
        my @ev = take_all($st, 3);
        my $g = resume('/mcp', $rsid, $ev[0] ? $ev[0]{id} : '');
        my %old = map { $_ => 1 } $t->worker_pids;
        $t->reload;
        my @msgs = until_response($g, "rl-$round", 5);
        my $a = $msgs[-1] // {};
        my $gone = McpTest::wait_until(10, sub { !(grep { $old{$_} } $t->worker_pids(all => 1)) });
        push @seen, "round $round: GET " . $g->status . ', old workers ' . ($gone ? 'gone' : 'left')
                    . ', ' . McpTest::encode_json($a);
        $ok++ if ($a->{id} // '') eq "rl-$round" && $gone
                 && ($a->{result}{content}[0]{text} // '') =~ /Reconnection test completed/;
        $g->close;
    }
    is($ok, 2, 'a reload with a polled call resumed: its answer on the GET, then the old workers exit')
        or diag(join "\n", @seen);

    # a call held to its answer (/policy) on another worker than the
    # child's: the old owner waits for it, and the answer reaches the POST
    # (the owner's exit deleted the session before the POST's worker read
    # it: 1 round in 4 lost it)
    ($ok, @seen) = (0);
    for my $round (1 .. 3) {
        my ($rsid, $rowner) = init_sampling('/policy');
        my %on = on('other', $rowner);
        my $out = $t->prefix . "/reload-$round.json";
        my $pid = fork() // die "fork: $!";
        if (!$pid) {
            my $r = post('/policy', $rsid, call_msg("rp-$round", 'test_reconnection', {}), %on);
            open my $fh, '>', $out or POSIX::_exit(1);
            print {$fh} McpTest::encode_json({ w => $r->{headers}{'x-worker'} // '',
                                               json => $r->{json} // {} });
            close $fh;
            POSIX::_exit(0);
        }
        sleep 0.3;
        $t->reload;
        waitpid $pid, 0;
        my $res = eval { decode_json(McpTest::_slurp($out) // '') } // {};
        my $a = $res->{json} // {};
        push @seen, "round $round: owner $rowner, POST on " . ($res->{w} // '?') . ', '
                    . McpTest::encode_json($a);
        $ok++ if ($a->{id} // '') eq "rp-$round" && ($res->{w} // '') ne $rowner
                 && ($a->{result}{content}[0]{text} // '') =~ /Reconnection test completed/;
    }
    is($ok, 3, 'a reload with a call held on another worker: its answer on the POST, in each round')
        or diag(join "\n", @seen);
}

$t->stop;
sleep 0.5;
is(scalar(McpTest::marked_pids($MARK)), 0, 'no child outlives nginx');

done_testing;
