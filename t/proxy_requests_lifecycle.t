# mcp_pass and the session's lifecycle (issue #41): an upstream's request
# (sampling, elicitation, roots) on a relayed stream does not reach a 2025
# client before the client's notifications/initialized.  The gateway holds
# it, and what follows it, until the notification (which may reach any of
# the 4 workers) and then relays it; past mcp_request_timeout the client
# gets a JSON-RPC error for its call instead, the request never.  A
# session already initialized gets the request at once, as before.
#
# The upstream is @modelcontextprotocol/server-everything, which asks
# whenever it likes: its trigger-sampling-request tool exists once it got
# notifications/initialized, which the test sends it itself (with the
# upstream's session id, read from the gateway's access log), so that the
# gateway's client has not sent it yet when it calls the tool.  With
# mcp_session_key the gateway keeps no session record: it relays at once.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Time::HiRes qw(time);
use McpTest;
use McpStream;
use McpGateway;

my $why = node_available('@modelcontextprotocol/server-everything');
plan skip_all => "node: $why" if $why;

my $t = McpTest->new(
    ports  => 2,    # 2: server-everything
    listen => 'reuseport',
    http   => <<'NGX',
    mcp_session_zone zone=gw:1m;
    log_format tags '$pid $http_x_tag $status';
NGX
    server => <<'NGX',
        access_log %%PREFIX%%/logs/tags.log tags;
        location = /mcp   { mcp_pass http://127.0.0.1:%%PORT2%%/mcp; mcp_session gw;
                            mcp_request_timeout 20s; add_header X-Worker $pid always; }
        location = /short { mcp_pass http://127.0.0.1:%%PORT2%%/mcp; mcp_session gw;
                            mcp_request_timeout 2s; }
        location = /deny  { mcp_pass http://127.0.0.1:%%PORT2%%/mcp; mcp_session gw;
                            mcp_request_timeout 20s; mcp_tools_deny echo;
                            add_header X-Worker $pid always; }
        location = /who   { add_header X-Worker $pid always; return 200 "who\n"; }
        location = /keyed { mcp_pass http://127.0.0.1:%%PORT2%%/mcp;
                            mcp_session_key %%PREFIX%%/conf/s.key; }
NGX
);
$t->write_file('conf/s.key', 'lifecycle-key-' . ('k' x 40) . "\n");
$t->start;

start_everything_node(port => $t->port(2), log => $t->prefix . '/logs/server-everything.log');

my $TOOL = 'trigger-sampling-request';
my %CAPS = (sampling => {});

# the worker of the request tagged $tag (its line comes at its end)
sub tagged {
    my ($tag) = @_;
    my $deadline = time + 3;
    while (time < $deadline) {
        for (split /\n/, McpTest::_slurp($t->prefix . '/logs/tags.log') // '') {
            my ($pid, $tg) = split / /;
            return $pid if defined $tg && $tg eq $tag;
        }
        Time::HiRes::sleep(0.05);
    }
    return undef;
}

# the upstream's session ids, in the order it made them
sub up_sessions {
    (McpTest::_slurp($t->prefix . '/logs/server-everything.log') // '') =~ /Session initialized with ID: (\S+)/g;
}

# A gateway session whose client has not sent notifications/initialized;
# with $up_too, the upstream has one (its sampling tool exists), else its
# upstream id is returned too, for up_initialized().
sub early_session {
    my ($tag, $path, %o) = @_;
    my $before = () = up_sessions();
    my ($sid) = $t->mcp_initialize(capabilities => $o{caps} // \%CAPS, skip_initialized => 1,
                                   path => $path, headers => { 'X-Tag' => $tag });
    my $deadline = time + 3;
    my @ids;
    Time::HiRes::sleep(0.05) while (@ids = up_sessions()) <= $before && time < $deadline;
    return ($sid, $ids[-1]) if $o{later};
    return ($sid, up_initialized($ids[-1]));
}

# notifications/initialized straight to the upstream: its HTTP status
sub up_initialized {
    my ($usid) = @_;
    my $r = $t->mcp_post($usid, { jsonrpc => '2.0', method => 'notifications/initialized' },
                         port => $t->port(2), path => '/mcp');
    Test::More::diag("upstream: $r->{status} $r->{body}") if $r->{status} != 202;
    return $r->{status};
}

sub initialized {
    my ($sid, %o) = @_;
    return $t->mcp_post($sid, { jsonrpc => '2.0', method => 'notifications/initialized' }, %o);
}

sub sampling_of { grep { ($_->{method} // '') eq 'sampling/createMessage' } rpc_of(@_) }

sub result_text { (((($_[0] // {})->{result} // {})->{content} // [ {} ])->[0]{text}) // '' }

# --- held until notifications/initialized, at whichever worker -------------------
# The notification goes on a kept connection: in odd rounds to a worker
# other than the relay holding the call, in even rounds to that relay.

my $conn = pinned_conns($t);
is(scalar keys %$conn, 4, 'a kept connection on each of the 4 workers');

for my $path ('/mcp', '/deny') {
    my ($ok, @fail, @tags) = (0);
    my $rounds = $path eq '/mcp' ? 5 : 2;
    for my $n (1 .. $rounds) {
        my $p = substr($path, 1);
        my ($sid, $up) = early_session("init$p-$n", $path);
        my $s = call_stream($t, $sid, "c$n", $TOOL, { prompt => "p$n" }, path => $path,
                            tag => "call$p-$n");
        my $relay = $s->header('x-worker') // '';
        my ($to) = grep { $n % 2 ? $_ ne $relay : $_ eq $relay } sort keys %$conn;
        my @early = sampling_of(quiet_for(1.0, $s));
        my $t0 = time;
        my $r = initialized($sid, path => $path, headers => { 'X-Tag' => "note$p-$n" },
                            ($to ? (conn => $conn->{$to}, keepalive => 1) : ()));
        my $req = next_request($s, 3) // {};
        my $after = time - $t0;
        my $a = defined $req->{id}
              ? answer($t, $sid, $req->{id}, sampling_answer("a$n"), path => $path) : { status => 0 };
        my @rpc = rpc_of(take_all($s, 5));
        my $text = result_text($rpc[-1]);
        if ($up == 202 && !@early && $r->{status} == 202
            && ($req->{method} // '') eq 'sampling/createMessage' && $after < 1
            && $a->{status} == 202 && ($rpc[-1]{id} // '') eq "c$n" && $text =~ /"text": "a$n"/
            && $s->is_done && !$s->{error}) {
            $ok++;
        }
        else {
            push @fail, "round $n: upstream initialized $up, " . scalar(@early) . ' sampling sent early, '
                . "initialized $r->{status}, then " . ($req->{method} // 'nothing')
                . sprintf(' (%.2f s later)', $after) . ", answer $a->{status}, result '$text'";
        }
        push @tags, [ "call$p-$n", "note$p-$n" ];
    }
    is($ok, $rounds, "$path: $rounds rounds: no sampling request before notifications/initialized, "
       . 'at once after it, the call completes with the answer') or diag(join "\n", @fail);

    my @cross = grep { my $c = tagged($_->[0]); my $i = tagged($_->[1]);
                       defined $c && defined $i && $c != $i } @tags;
    my $odd = int(($rounds + 1) / 2);
    is(scalar @cross, $odd, "$path: $odd of $rounds notifications reached another worker than "
       . 'the relay holding the request (by the access log), the others that relay');
}

# --- never initialized: an error for the call at mcp_request_timeout ------------

{
    my $mark = $t->log_mark;
    my ($sid, $up) = early_session('init-never', '/short');
    is($up, 202, 'never: the upstream has notifications/initialized itself');
    my $s = call_stream($t, $sid, 'never', $TOOL, { prompt => 'x' }, path => '/short');
    my $t0 = time;
    my @ev = take_all($s, 6);
    my $took = time - $t0;
    my @rpc = rpc_of(@ev);
    ok(!sampling_of(@ev), 'never initialized: no sampling request reaches the client')
        or diag(explain \@rpc);
    ok($took >= 1.8 && $took < 4, sprintf('never initialized: the call ends at mcp_request_timeout '
                                          . '2s (%.2f s)', $took));
    is($rpc[-1] && $rpc[-1]{id}, 'never', 'never initialized: a response to the call');
    is($rpc[-1] && $rpc[-1]{error}{code}, -32001, '... a JSON-RPC error, -32001 as for a built-in tool\'s request that timed out');
    like($rpc[-1] && $rpc[-1]{error}{message}, qr/^Request timed out/, '... "Request timed out"');
    ended_ok($s, 'never initialized: the stream ends');
    ok($t->wait_for_log(qr/\[info\].*did not send notifications\/initialized in time/, 2, $mark),
       'never initialized: one [info] line');
    is(initialized($sid, path => '/short')->{status}, 202, 'a late notifications/initialized: 202');
}

# --- the GET stream: the upstream's roots/list is held the same way ------------------
# (server-everything asks for the roots 350 ms after its notifications/initialized)

for my $path ('/mcp', '/short') {
    my ($sid, $usid) = early_session("get$path", $path, caps => { roots => {} }, later => 1);
    my $g = $t->mcp_get_stream($sid, path => $path);
    is($g->{status}, 200, "GET $path: the stream is open");
    is(up_initialized($usid), 202, "GET $path: the upstream has notifications/initialized");
    my @early = grep { ($_->{method} // '') eq 'roots/list' } rpc_of(quiet_for(1.0, $g));
    is(scalar @early, 0, "GET $path: no roots/list before notifications/initialized");
    if ($path eq '/mcp') {
        my $t0 = time;
        is(initialized($sid, path => $path)->{status}, 202, 'GET: notifications/initialized');
        my $req = next_request($g, 3) // {};
        is($req->{method}, 'roots/list', 'GET: the held roots/list follows it');
        cmp_ok(time - $t0, '<', 1, sprintf('... at once (%.2f s)', time - $t0));
        $g->close;
    }
    else {
        my @rest = take_all($g, 3);
        ok(!(grep { ($_->{method} // '') eq 'roots/list' } rpc_of(@rest)),
           'GET never initialized: roots/list never reaches the client');
        ended_ok($g, 'GET never initialized: the stream ends at mcp_request_timeout');
    }
}

# --- mcp_session_key: no session record, so nothing to tell by: relayed at once ----------

{
    my ($sid, $up) = early_session('init-keyed', '/keyed');
    is($up, 202, 'keyed: the upstream has notifications/initialized itself');
    my $t0 = time;
    my $s = call_stream($t, $sid, 'keyed', $TOOL, { prompt => 'k' }, path => '/keyed');
    my $req = next_request($s, 3) // {};
    is($req->{method}, 'sampling/createMessage',
       'keyed ids: the request is relayed as it comes (the gateway cannot tell)');
    cmp_ok(time - $t0, '<', 0.5, sprintf('... at once (%.2f s)', time - $t0));
    answer($t, $sid, $req->{id}, sampling_answer('k'), path => '/keyed');
    like(result_text((rpc_of(take_all($s, 5)))[-1]), qr/"text": "k"/, '... and the call completes');
}

# --- an initialized session: at once, as before ------------------------------------

{
    my ($sid) = $t->mcp_initialize(capabilities => \%CAPS);
    my $t0 = time;
    my $s = call_stream($t, $sid, 'now', $TOOL, { prompt => 'now' });
    my $req = next_request($s, 3) // {};
    my $took = time - $t0;
    is($req->{method}, 'sampling/createMessage', 'initialized: the sampling request is relayed');
    cmp_ok($took, '<', 0.5, sprintf('... at once (%.2f s)', $took));
    my $a = answer($t, $sid, $req->{id}, sampling_answer('now'));
    my @rpc = rpc_of(take_all($s, 5));
    like(result_text($rpc[-1]), qr/"text": "now"/, '... and the call completes with the answer');
}

$t->stop;
done_testing;
