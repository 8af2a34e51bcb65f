# mcp_stdio_sessions on under worker_processes 4: a session's child is
# its owner worker's (the one that took its initialize), and its
# requests reach it from every worker through the session store (the
# inbound queue, the event log, the wake-ups).  Against the real
# @modelcontextprotocol/server-everything over stdio: many sessions,
# each over fresh connections that reuseport spreads over the workers
# (each response says its worker in X-Worker: $pid), with tools/list,
# echo calls, a call with progress on a stream; a GET stream on a
# non-owner gets the child's log notifications; sampling asked on a
# non-owner's stream and answered through a third worker; a full
# inbound queue (the owner stopped with SIGSTOP) is a JSON-RPC error at
# once; a client gone mid-call on a non-owner; DELETE through a
# non-owner, then 404 on every worker and the child gone; the owner
# killed: its sessions end everywhere, a call in flight on another
# worker gets an error, nothing hangs; another stdio location that shares
# the zone does not reach the session; with mcp_auth_*, a session is its
# caller's on every worker.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Time::HiRes qw(sleep time);
use JSON::PP qw(encode_json decode_json);
use McpTest timeout => 240;
use McpAssert;
use McpJwt;
use McpGateway qw(node_available node_bin npm_dir);
use McpStream qw(pinned_conns);

my $why = node_available('@modelcontextprotocol/server-everything');
plan skip_all => $why if $why;
my $NODE = Cwd::abs_path(node_bin());
my $EV   = Cwd::abs_path(npm_dir() . '/node_modules/@modelcontextprotocol/server-everything/dist/index.js');

my $MARK = McpTest::process_mark('stdio_sessions_workers');
my $rsa = McpJwt->new_key(type => 'RSA', kid => 'k1');

my $t = McpTest->new(
    workers => 4,
    listen  => 'reuseport',
    server  => <<"NGX",
        location = /mcp {
            mcp_stdio $NODE $EV stdio;
            mcp_stdio_sessions on;
            mcp_stdio_pool size=6 total=20;
            mcp_stdio_timeout 10s;
            mcp_stdio_env PATH=/usr/bin:/bin;
            mcp_stdio_env $MARK;
            add_header X-Worker \$pid always;
        }
        location = /authsess {
            mcp_stdio $NODE $EV stdio;
            mcp_stdio_sessions on;
            mcp_stdio_env $MARK;
            mcp_auth_jwt "MCP";
            mcp_auth_resource http://127.0.0.1:%%PORT%%/authsess;
            mcp_auth_jwt_issuer https://issuer.test;
            mcp_auth_jwt_key_file %%PREFIX%%/conf/jwks.json;
            add_header X-Worker \$pid always;
        }
        location = /other {
            mcp_stdio $NODE $EV stdio;
            mcp_stdio_sessions on;
            mcp_stdio_env $MARK;
            add_header X-Worker \$pid always;
        }
NGX
);
$t->write_file('conf/jwks.json', McpJwt::jwks($rsa));
$t->start;

my %seen;        # worker => responses it served
my $remote = 0;  # responses served by a worker not the session's owner

sub note_worker {
    my ($w, $owner) = @_;
    return unless defined $w;
    $seen{$w}++;
    $remote++ if defined $owner && $w ne $owner;
}

sub post {
    my ($sid, $msg, %o) = @_;
    return $t->mcp_post($sid, $msg, protocol_version => '2025-11-25',
                        timeout => $o{timeout} // 20, path => $o{path} // '/mcp',
                        ($o{headers} ? (headers => $o{headers}) : ()),
                        ($o{conn} ? (conn => $o{conn}, keepalive => 1) : ()),
                        ($o{stream} ? (stream => 1) : ()));
}

sub last_msg { my ($r) = @_; return $r->{messages}[-1] // {} }

sub init {
    my ($id) = @_;
    my $r = post(undef, { jsonrpc => '2.0', id => $id, method => 'initialize',
        params => { protocolVersion => '2025-11-25', capabilities => { sampling => {} },
                    clientInfo => { name => 't', version => '1' } } });
    return ($r->{headers}{'mcp-session-id'}, $r->{headers}{'x-worker'}, $r);
}

sub children { scalar McpTest::marked_pids($MARK) }

# kept connections, one a worker: { pid => socket } (a sessionless ping
# is answered by the worker that reads it)
sub pinned {
    return pinned_conns($t, probe => sub {
        post(undef, { jsonrpc => '2.0', id => 'who', method => 'ping' }, conn => $_[0]) });
}

# a stream (POST or GET) served by a worker other than those in @not
sub stream_off {
    my ($make, @not) = @_;
    for (1 .. 40) {
        my $st = $make->();
        my $w = $st->header('x-worker') // '';
        return ($st, $w) if $st->status == 200 && !grep { $_ eq $w } @not;
        $st->close;
        sleep 0.2;    # the owner sees a GET it held go before the next one
    }
    return (undef, '');
}

# --- many sessions, their requests spread over the workers --------------------

my @sessions;
for my $n (1 .. 6) {
    my ($sid, $owner, $r) = init("init-$n");
    ok(defined $sid && defined $owner, "session $n: made by worker " . ($owner // '?'))
        or diag explain $r;
    push @sessions, { sid => $sid, owner => $owner, n => $n };
    note_worker($owner);

    $r = post($sid, { jsonrpc => '2.0', method => 'notifications/initialized' });
    is($r->{status}, 202, "session $n: notifications/initialized taken (202)");
    note_worker($r->{headers}{'x-worker'}, $owner);

    $r = post($sid, { jsonrpc => '2.0', id => "tl-$n", method => 'tools/list' });
    my $m = last_msg($r);
    is($m->{id}, "tl-$n", "session $n: tools/list under the client's id");
    my %tools = map { $_->{name} => 1 } @{ $m->{result}{tools} // [] };
    ok($tools{echo} && $tools{'trigger-sampling-request'},
       "session $n: the child's tools (its sampling tool: the client's initialize reached it)");
    note_worker($r->{headers}{'x-worker'}, $owner);

    my $ok = 0;
    for my $k (1 .. 4) {
        $r = post($sid, { jsonrpc => '2.0', id => $n * 100 + $k, method => 'tools/call',
                          params => { name => 'echo', arguments => { message => "s$n-$k" } } });
        $m = last_msg($r);
        $ok++ if ($m->{id} // 0) == $n * 100 + $k
              && ($m->{result}{content}[0]{text} // '') eq "Echo: s$n-$k";
        note_worker($r->{headers}{'x-worker'}, $owner);
    }
    is($ok, 4, "session $n: four echo calls answered under their ids");

    my $st = post($sid, { jsonrpc => '2.0', id => "lr-$n", method => 'tools/call',
                          params => { name => 'trigger-long-running-operation',
                                      arguments => { duration => 1, steps => 2 },
                                      _meta => { progressToken => "tok-$n" } } }, stream => 1);
    my (@progress, $done);
    while (my $ev = $st->next_event(15)) {
        my $msg = eval { decode_json($ev->{data} // '') } or next;
        if (($msg->{method} // '') eq 'notifications/progress') { push @progress, $msg; next }
        if (defined $msg->{id}) { $done = $msg; last }
    }
    note_worker($st->header('x-worker'), $owner);
    $st->close;
    ok(@progress >= 1 && !(grep { ($_->{params}{progressToken} // '') ne "tok-$n" } @progress),
       "session $n: progress notifications for its token on the call's stream");
    is($done->{id} // '', "lr-$n", "session $n: then the call's result");
}

cmp_ok(scalar keys %seen, '>', 1, 'requests were served by ' . scalar(keys %seen) . ' workers');
cmp_ok($remote, '>', 0, "$remote responses came from a worker other than the session's owner");
is(children(), scalar @sessions, 'a child a session');

my $conn = pinned();
is(scalar keys %$conn, 4, 'a kept connection on each worker');

my $S = $sessions[0];
my @others = grep { $_ ne $S->{owner} } sort keys %$conn;
my ($n1, $n2) = @others;

# --- the same session, deterministically on a non-owner ------------------------

my $r = post($S->{sid}, { jsonrpc => '2.0', id => 'far', method => 'tools/call',
                          params => { name => 'echo', arguments => { message => 'far' } } },
             conn => $conn->{$n1});
is($r->{headers}{'x-worker'}, $n1, 'a call on a non-owner worker');
is(last_msg($r)->{result}{content}[0]{text} // '', 'Echo: far', '... answered by the owner\'s child');

# another stdio location that shares the session zone: the session is
# not its own, on the owner or elsewhere
my $other404 = 0;
for my $w (sort keys %$conn) {
    my $x = post($S->{sid}, { jsonrpc => '2.0', id => 'o', method => 'tools/call',
                              params => { name => 'echo', arguments => { message => 'o' } } },
                 conn => $conn->{$w}, path => '/other');
    $other404++ if $x->{status} == 404;
}
is($other404, 4, 'the session through another stdio location: 404 on every worker');

# a session is its caller's on every worker: bob with alice's id reaches
# neither her child nor her session's end, wherever he lands
{
    my $res = 'http://127.0.0.1:' . $t->port . '/authsess';
    my %auth = map { $_ => { Authorization => 'Bearer ' . $rsa->token(claims =>
                         McpJwt::claims(aud => $res, scope => 'mcp:tools', sub => $_)) } }
               qw(alice bob);
    my $x = post(undef, { jsonrpc => '2.0', id => 'ai', method => 'initialize',
                          params => { protocolVersion => '2025-11-25', capabilities => {},
                                      clientInfo => { name => 't', version => '1' } } },
                 path => '/authsess', headers => $auth{alice});
    my ($asid, $aowner) = ($x->{headers}{'mcp-session-id'}, $x->{headers}{'x-worker'});
    ok($asid, "alice's session on /authsess, owned by worker $aowner");
    my ($bob404, $bobdel, $alice) = (0, 0, 0);
    for my $w (sort keys %$conn) {
        my $y = post($asid, { jsonrpc => '2.0', id => 'b', method => 'tools/call',
                              params => { name => 'echo', arguments => { message => 'b' } } },
                     conn => $conn->{$w}, path => '/authsess', headers => $auth{bob});
        $bob404++ if $y->{status} == 404;
        my $d = $t->request(method => 'DELETE', path => '/authsess', conn => $conn->{$w},
                            keepalive => 1,
                            headers => { 'Mcp-Session-Id' => $asid, %{ $auth{bob} },
                                         'MCP-Protocol-Version' => '2025-11-25' });
        $bobdel++ if $d->{status} == 404;
        $y = post($asid, { jsonrpc => '2.0', id => 'a', method => 'tools/call',
                           params => { name => 'echo', arguments => { message => 'a' } } },
                  conn => $conn->{$w}, path => '/authsess', headers => $auth{alice});
        $alice++ if (last_msg($y)->{result}{content}[0]{text} // '') eq 'Echo: a';
    }
    is($bob404, 4, 'bob with alice\'s session id: 404 on every worker');
    is($bobdel, 4, 'bob cannot end it through any worker: 404');
    is($alice, 4, 'alice\'s calls through every worker reach her child');
    my $d = $t->request(method => 'DELETE', path => '/authsess',
                        headers => { 'Mcp-Session-Id' => $asid, %{ $auth{alice} },
                                     'MCP-Protocol-Version' => '2025-11-25' });
    is($d->{status}, 200, 'alice ends her session');
    my $k = -1;
    for (1 .. 50) { $k = children(); last if $k == @sessions; sleep 0.1 }
    is($k, scalar @sessions, '... and her child is gone');
}

# --- a GET stream on a non-owner gets the child's notifications ---------------

my ($g, $gw) = stream_off(sub { $t->mcp_get_stream($S->{sid}, timeout => 5) }, $S->{owner});
ok($g, "GET stream opened on worker $gw, not the owner $S->{owner}");
$r = post($S->{sid}, { jsonrpc => '2.0', id => 'log', method => 'tools/call',
                       params => { name => 'toggle-simulated-logging', arguments => {} } });
is(last_msg($r)->{id}, 'log', 'simulated logging on');
my $note;
my $until = time + 12;
while ($g && time < $until) {
    my $ev = $g->next_event($until - time) or last;
    my $m = eval { decode_json($ev->{data} // '') } or next;
    if (($m->{method} // '') eq 'notifications/message') { $note = $m; last }
}
ok($note && !defined $note->{id}, 'the child\'s log notification on the non-owner\'s GET stream');
$r = post($S->{sid}, { jsonrpc => '2.0', id => 'log2', method => 'tools/call',
                       params => { name => 'toggle-simulated-logging', arguments => {} } });
is(last_msg($r)->{id}, 'log2', 'simulated logging off');
$g->close if $g;
sleep 0.3;

# --- sampling: asked on a non-owner's stream, answered through another ---------

my ($sst, $sw) = stream_off(sub {
    post($S->{sid}, { jsonrpc => '2.0', id => 'samp', method => 'tools/call',
                      params => { name => 'trigger-sampling-request',
                                  arguments => { prompt => 'say hi', maxTokens => 10 } } },
         stream => 1) }, $S->{owner});
ok($sst, "sampling call's stream on worker $sw");
my $ask = {};
if ($sst) {
    # past the priming event (an id, no data) that starts a stream of the log
    while (my $ev = $sst->next_event(10)) {
        $ask = eval { decode_json($ev->{data} // '') } // {};
        last if $ask->{method};
    }
}
is($ask->{method}, 'sampling/createMessage', 'the child\'s sampling request on that stream');
my ($third) = grep { $_ ne $sw } @others;
$r = post($S->{sid}, { jsonrpc => '2.0', id => $ask->{id},
                       result => { role => 'assistant', model => 'm',
                                   content => { type => 'text', text => 'sampled-reply-42' } } },
          conn => $conn->{$third});
is($r->{status}, 202, "the client's answer through worker $third: 202");
my $sdone = {};
if ($sst) {
    while (my $ev = $sst->next_event(10)) {
        my $m = eval { decode_json($ev->{data} // '') } or next;
        if (defined $m->{id} && !defined $m->{method}) { $sdone = $m; last }
    }
    $sst->close;
}
is($sdone->{id}, 'samp', 'the sampling call\'s result under the client\'s id');
like($sdone->{result}{content}[0]{text} // '', qr/sampled-reply-42/,
     'the child got the answer that crossed two workers');

# --- a full inbound queue: an error at once, never a hang ----------------------

my $S2 = $sessions[1];
my ($q1) = grep { $_ ne $S2->{owner} } sort keys %$conn;
kill 'STOP', $S2->{owner};
my ($taken, $full) = (0, undef);
for my $k (1 .. 80) {
    my $t0 = time;
    my $x = post($S2->{sid}, { jsonrpc => '2.0', method => 'notifications/cancelled',
                               params => { requestId => "none-$k" } },
                 conn => $conn->{$q1}, timeout => 5);
    if ($x->{status} == 202) { $taken++; next }
    $full = $x;
    last;
}
kill 'CONT', $S2->{owner};
# nginx ends a connection after an error reply: kept ones are made again
close $_ for values %$conn;
$conn = pinned();
cmp_ok($taken, '>=', 1, "$taken notifications queued for the stopped owner (202)");
ok($full, 'then one refused');
is($full->{status}, 503, 'a full queue: 503') if $full;
is($full->{json}{error}{code}, -32603, 'a full queue: a JSON-RPC error') if $full;
$r = post($S2->{sid}, { jsonrpc => '2.0', id => 'after', method => 'tools/call',
                        params => { name => 'echo', arguments => { message => 'after' } } },
          conn => $conn->{$q1});
is(last_msg($r)->{result}{content}[0]{text} // '', 'Echo: after',
   'the owner running again drains the queue: the session works')
    or diag explain $r;

# --- a client gone mid-call on a non-owner --------------------------------------

my ($gone) = stream_off(sub {
    post($S2->{sid}, { jsonrpc => '2.0', id => 'gone', method => 'tools/call',
                       params => { name => 'trigger-long-running-operation',
                                   arguments => { duration => 3, steps => 3 },
                                   _meta => { progressToken => 'tg' } } }, stream => 1) },
    $S2->{owner});
$gone->close if $gone;
$r = post($S2->{sid}, { jsonrpc => '2.0', id => 'next', method => 'tools/call',
                        params => { name => 'echo', arguments => { message => 'next' } } },
          conn => $conn->{$q1});
is(last_msg($r)->{result}{content}[0]{text} // '', 'Echo: next',
   'a client gone mid-call on a non-owner: the session goes on');

# --- DELETE through a non-owner: 404 everywhere, the child gone ---------------

my $S3 = $sessions[2];
my ($d1) = grep { $_ ne $S3->{owner} } sort keys %$conn;
my $before = children();
my $d = $t->request(method => 'DELETE', path => '/mcp', conn => $conn->{$d1}, keepalive => 1,
                    headers => { 'Mcp-Session-Id' => $S3->{sid},
                                 'MCP-Protocol-Version' => '2025-11-25' });
is($d->{status}, 200, "DELETE through worker $d1 (the owner is $S3->{owner}): 200");
my $n404 = 0;
for my $w (sort keys %$conn) {
    my $x = post($S3->{sid}, { jsonrpc => '2.0', id => 'dead', method => 'ping' },
                 conn => $conn->{$w});
    $n404++ if $x->{status} == 404;
}
is($n404, 4, 'then 404 on every worker') or diag "DBG $n404";
my $k = $before;
for (1 .. 50) { $k = children(); last if $k == $before - 1; sleep 0.1 }
is($k, $before - 1, 'the session\'s child stopped');

# --- the owner dies: its sessions end everywhere, nothing hangs ---------------

my $S4 = $sessions[3];
my ($l1) = grep { $_ ne $S4->{owner} } sort keys %$conn;
my ($lst, $lw) = stream_off(sub {
    post($S4->{sid}, { jsonrpc => '2.0', id => 'long', method => 'tools/call',
                       params => { name => 'trigger-long-running-operation',
                                   arguments => { duration => 20, steps => 20 },
                                   _meta => { progressToken => 'tl' } } }, stream => 1) },
    $S4->{owner});
ok($lst, "a long call in flight on worker $lw");
$lst->next_event(5) if $lst;    # its first progress: the call runs
$t->expect_log_any(qr/worker process \Q$S4->{owner}\E exited on signal 9/);
my $dead_t0 = time;
kill 'KILL', $S4->{owner};
my $err;
while ($lst && (my $ev = $lst->next_event(8))) {
    my $m = eval { decode_json($ev->{data} // '') } or next;
    if (defined $m->{id} && !defined $m->{method}) { $err = $m; last }
}
ok($err && $err->{error}, 'the call in flight on another worker gets a JSON-RPC error');
cmp_ok(time - $dead_t0, '<', 8, '... within the check of its worker, not at the timeout');
$lst->close if $lst;
my $x;
for (1 .. 30) {
    $x = post($S4->{sid}, { jsonrpc => '2.0', id => 'orphan', method => 'ping' }, conn => $conn->{$l1});
    last if $x->{status} == 404;
    sleep 0.1;
}
is($x->{status}, 404, 'the dead owner\'s session: 404');

# --- what is left --------------------------------------------------------------

my $dead_kids = grep { $_->{owner} eq $S4->{owner} && $_ != $S3 } @sessions;
$k = -1;
my $want = @sessions - 1 - $dead_kids;
for (1 .. 50) { $k = children(); last if $k == $want; sleep 0.1 }
is($k, $want, 'children: one a live session (the dead worker\'s died with it)');

close $_ for values %$conn;
$t->stop;
is(children(), 0, 'quit: no child left');

done_testing;
