# What crosses the gateway over several MCP servers (mcp_backend, issue
# #15) outside any call: while a client's GET stream is open, the gateway
# holds a GET stream at each backend the client has a session with and
# relays what comes there.  Real backends: an nginx instance of this
# module (the Everything set: a resource update to a subscribed session,
# tools/list_changed after a reload) and @modelcontextprotocol/server-
# everything (its periodic log messages, at the client's level).  The
# backend streams end with the client's (it leaves, DELETE) and
# reopen with a new one; nginx -s quit does not hang.  Attacks: a fake
# backend whose GET stream sends an event with a member named twice, an
# event over mcp_backend_max_size, a response, a flood of events, a
# server request (answered with a JSON-RPC error), and one without a GET
# stream (405: nothing logged).

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Time::HiRes qw(sleep time);
use McpTest timeout => 240;
use McpGateway qw(start_everything_node node_available fake_upstream upstream_log_format
                  upstream_log wait_upstream);

my $why = node_available('@modelcontextprotocol/server-everything');
plan skip_all => "node: $why" if $why;

my $V = '2025-11-25';

# backend alpha: the Everything set, its requests in logs/upstream.log
my $alpha_loc = <<'NGX';
        location = /mcp {
            mcp on;
            mcp_builtin everything;
            access_log %%PREFIX%%/logs/upstream.log mcp_upstream;
%%MORE%%        }
        location /internal/local { internal; return 200 'local'; }
NGX
(my $alpha_conf = $alpha_loc) =~ s/%%MORE%%//;
my $alpha = McpTest->new(http => upstream_log_format(), server => $alpha_conf)->start;

# the fake backends: one a path; what the gateway sent them in fake.log
my $flog = "/tmp/mcp-t87-fake.$$.log";
END { unlink $flog if $flog }
sub note_fake { open my $f, '>>', $flog or return; print $f "@_\n"; close $f }

my $fake = fake_upstream(sub {
    my ($c, $head, $body) = @_;
    my ($method, $path) = $head =~ m{^(\S+) /(\w+)};
    my ($id) = $body =~ /"id":(\d+)/;
    my $json = sub {
        my ($s) = @_;
        print $c "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
               . "Mcp-Session-Id: fake-$path\r\nContent-Length: " . length($s)
               . "\r\nConnection: close\r\n\r\n$s";
    };

    if ($method eq 'GET') {
        note_fake("GET $path");
        if ($path eq 'none') {
            print $c "HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
            return;
        }
        if ($path eq 'busy' && (() = (McpTest::_slurp($flog) // '') =~ /GET busy/g) <= 2) {
            # its former stream of the session still open, twice
            print $c "HTTP/1.1 409 Conflict\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
            return;
        }
        if ($path eq 'short') {
            # a stream that ends after one event: the gateway reopens it
            print $c "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n"
                   . "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"level\":\"error\",\"data\":\"short\"}}\n\n";
            return;
        }
        my $pid = fork;
        return if !defined $pid || $pid;    # the child holds the stream
        $SIG{PIPE} = 'IGNORE';
        print $c "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n";
        my $msg = sub { qq({"jsonrpc":"2.0","method":"notifications/message","params":{"level":"$_[0]","data":"$_[1]"}}) };
        my @ev;
        if ($path eq 'good') {
            @ev = ($msg->('error', 'good error line'),
                   $msg->('debug', 'good debug line'),
                   q({"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"zz","progress":1}}),
                   q({"jsonrpc":"2.0","id":"s1","method":"sampling/createMessage","params":{"messages":[],"maxTokens":1}}),
                   q({"jsonrpc":"2.0","method":"notifications/tools/list_changed"}),
                   q({"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"fake://thing"}}));
        }
        elsif ($path eq 'dup') {
            @ev = (q({"jsonrpc":"2.0","method":"notifications/message","params":{"level":"error","data":"dup one"},"params":{"level":"error","data":"dup two"}}),
                   $msg->('error', 'after dup'));
        }
        elsif ($path eq 'big') {
            @ev = ($msg->('error', 'x' x 9000), $msg->('error', 'after big'));
        }
        elsif ($path eq 'resp') {
            @ev = (q({"jsonrpc":"2.0","id":1,"result":{}}), $msg->('error', 'after resp'));
        }
        elsif ($path eq 'flood') {
            # 3000 events in 1.5 s, ten a write
            for my $k (0 .. 299) {
                print $c join '', map { "data: " . $msg->('error', "flood $_") . "\n\n" }
                                  $k * 10 + 1 .. $k * 10 + 10;
                sleep 0.005;
            }
        }
        elsif ($path eq 'busy') {
            @ev = ($msg->('error', 'busy at last'));
        }
        elsif ($path eq 'burst') {
            # 3000 events in one write: far more than the reader may hold
            @ev = map { $msg->('error', "burst $_") } 1 .. 3000;
        }
        # one write(2) for them all (print would split it into PerlIO's
        # 8 KB writes, which a quick reader takes one by one): a burst
        # reaches nginx as the kernel's segments of up to 64 KB; a failed
        # write is nginx letting go, which the keepalives below see
        my $i = 0;
        McpHttp::_write_all($c, join('', map { $i++; "id: $path-$i\ndata: $_\n\n" } @ev),
                            time + 30);
        # a keepalive a tenth of a second: a write fails once nginx let go
        for (1 .. 600) {
            sleep 0.1;
            if (!print $c ": k\n\n") { note_fake("gone $path"); last }
        }
        POSIX::_exit(0);
    }

    if ($body =~ /"method":"initialize"/) {
        $json->(qq({"jsonrpc":"2.0","id":$id,"result":{"protocolVersion":"$V",)
                . qq("capabilities":{"tools":{}},"serverInfo":{"name":"fake","version":"1"}}}));
    }
    elsif ($body =~ /"error"/) {
        note_fake("POST $path $body");
        print $c "HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
    }
    elsif (!defined $id) {
        print $c "HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
    }
    else {
        $json->(qq({"jsonrpc":"2.0","id":$id,"result":{"tools":[]}}));
    }
}, listen => 64);
my $fport = $fake->{port};

my $proxy = 'proxy_http_version 1.1; proxy_set_header Connection "";';
my $t = McpTest->new(
    ports => 2,    # 2: server-everything
    ($ENV{T87_DEBUG} ? (log_level => "debug") : ()),
    http  => "    mcp_session_zone zone=getrelay:4m;\n",
    server => <<"NGX");
        mcp_session getrelay;

        location = /mcp {
            mcp_backend alpha /_b/alpha;
            mcp_backend node  /_b/node;
        }

        location = /bad {
            mcp_backend good  /_f/good;
            mcp_backend dup   /_f/dup;
            mcp_backend big   /_f/big;
            mcp_backend resp  /_f/resp;
            mcp_backend flood /_f/flood;
            mcp_backend burst /_f/burst;
            mcp_backend busy  /_f/busy;
            mcp_backend none  /_f/none;
            mcp_backend_max_size 4k;
        }

        location = /short {
            mcp_backend short /_f/short;
        }

        location /_b/alpha { internal; proxy_pass http://127.0.0.1:@{[ $alpha->port ]}/mcp; $proxy }
        location /_b/node  { internal; proxy_pass http://127.0.0.1:%%PORT2%%/mcp; $proxy }
        location /_f/      { internal; proxy_pass http://127.0.0.1:$fport/; $proxy }
NGX
$t->start;

my $node_log = $t->prefix . '/logs/server-everything.log';
my $node = start_everything_node(port => $t->port(2), log => $node_log);

# every event of a stream seen so far, and a wait for one that matches
my %seen;
sub wait_event {
    my ($s, $pred, $timeout) = @_;
    my $list = $seen{$s} //= [];
    for (@$list) { return $_ if $pred->($_) }
    my $deadline = time + ($timeout // 8);
    while (time < $deadline) {
        my $ev = $s->next_event($deadline - time) or last;
        next unless ref $ev->{json} eq 'HASH';
        push @$list, $ev->{json};
        return $ev->{json} if $pred->($ev->{json});
    }
    return undef;
}
sub method_is { my ($m) = @_; sub { ($_[0]{method} // '') eq $m } }

# the alpha sessions the gateway opened, newest last
sub alpha_sessions {
    map { $_->{sid_out} } grep { ($_->{rpc} // '') eq 'initialize' && $_->{sid_out} } upstream_log($alpha);
}
sub alpha_gets { scalar grep { $_->{method} eq 'GET' } upstream_log($alpha) }

sub subscribe_at_alpha {
    my ($bsid) = @_;
    my $r = $alpha->mcp_call($bsid, 'resources/subscribe', { uri => 'test://watched-resource' },
                             protocol_version => $V);
    return $r;
}

# a backend stream that keeps ending: reopened a second later, 32 times,
# then the client's stream ends (checked at the end)
my ($ssid) = $t->mcp_initialize(protocol_version => $V, path => '/short');
my $short = $t->mcp_get_stream($ssid, path => '/short', timeout => 10);
is($short->status, 200, 'a GET stream over a backend whose stream keeps ending');
my $short_t0 = time;

# --- a resource update and a list change at alpha, log lines from node ---------

my ($sid, $init) = $t->mcp_initialize(protocol_version => $V);
ok($sid, 'initialize at the gateway');
is_deeply([ map { $init->{capabilities}{$_}{listChanged} ? 1 : 0 } qw(tools prompts resources) ],
          [ 1, 1, 1 ], 'it declares listChanged for the lists whose backends do (' . McpTest::encode_json($init->{capabilities}) . ')');
my ($dsid, $dinit) = $t->mcp_initialize(protocol_version => $V, path => '/short');
ok(!$dinit->{capabilities}{tools}{listChanged}, '... and not where no backend does');
my ($asid) = reverse alpha_sessions();
ok($asid, 'alpha has a session for the client');
is(ref subscribe_at_alpha($asid), 'HASH', 'the client\'s alpha session subscribes to a resource there');

my $r = $t->mcp_call($sid, 'logging/setLevel', { level => 'warning' });
is(ref $r, 'HASH', 'the client\'s log level: warning');

my $g = $t->mcp_get_stream($sid, timeout => 10);
is($g->status, 200, 'the client\'s GET stream');
sleep 0.5;

$r = $t->mcp_call($sid, 'tools/call', { name => 'node__toggle-simulated-logging', arguments => {} });
like((($r // {})->{content} // [{}])->[0]{text} // '', qr/Started simulated/, 'node logs every 5 s from now');

$r = $t->mcp_call($sid, 'tools/call', { name => 'alpha__update_watched_resource', arguments => {} });
like((($r // {})->{content} // [{}])->[0]{text} // '', qr/updated/, 'a tool call changes the resource at alpha');

my $ev = wait_event($g, sub { ($_[0]{method} // '') eq 'notifications/resources/updated' }, 8);
is($ev && $ev->{params}{uri}, 'test://watched-resource',
   'alpha\'s resources/updated reaches the client\'s GET stream, its URI unchanged');

(my $more = $alpha_loc) =~ s/%%MORE%%/            mcp_tool added { description "New"; pass \/internal\/local; }\n/;
ok($alpha->reload(server => $more), 'alpha reloads with one tool more');
$ev = wait_event($g, method_is('notifications/tools/list_changed'), 10);
ok($ev, 'alpha\'s tools/list_changed after its reload reaches the client\'s GET stream');
my $list = $t->mcp_call($sid, 'tools/list');
ok(grep({ $_->{name} eq 'alpha__added' } @{ $list->{tools} // [] }), '... and the next list has the new tool');

# node: a random level every 5 s; the client gets only warning and above
my %rank = (debug => 0, info => 1, notice => 2, warning => 3, error => 4, critical => 5,
            alert => 6, emergency => 7);
$ev = wait_event($g, sub { ($_[0]{method} // '') eq 'notifications/message'
                           && ($_[0]{params}{data} // '') =~ /SessionId/ }, 40);
ok($ev, 'node\'s periodic log messages reach the client\'s GET stream');
my @logs = grep { ($_->{method} // '') eq 'notifications/message' } @{ $seen{$g} };
is(scalar(grep { ($rank{$_->{params}{level} // ''} // -1) < 3 } @logs), 0,
   '... none below the client\'s level (' . scalar(@logs) . ' seen)');
ok(!grep({ ($_->{method} // '') =~ /progress/ } @{ $seen{$g} }), 'no progress on the GET stream');

# --- the client leaves: alpha's stream ends with its ----------------------------

# alpha's stream ended with its old workers: the gateway's reopens it
sleep 2;
my $before = alpha_gets();
$g->close;
my $t0 = time;
my $ended = 0;
while (time < $t0 + 5) { if (alpha_gets() > $before) { $ended = 1; last } sleep 0.05 }
ok($ended, 'the client leaves: the gateway\'s GET stream at alpha ends ('
           . sprintf('%.1f', time - $t0) . ' s)');

# --- a reconnect opens them again; DELETE ends them ---------------------------

my $g2 = $t->mcp_get_stream($sid, timeout => 10);
is($g2->status, 200, 'the client opens a GET stream again');
sleep 1;
$t->mcp_call($sid, 'tools/call', { name => 'alpha__update_watched_resource', arguments => {} });
$ev = wait_event($g2, method_is('notifications/resources/updated'), 8);
ok($ev, 'the reopened backend stream relays again');

# at once again: node may still hold the gateway's former stream of the
# session (409 to a second one) for a moment; node logs every 5 s
$t->mcp_call($sid, 'logging/setLevel', { level => 'debug' });
$g2->close;
$g2 = $t->mcp_get_stream($sid, timeout => 10);
is($g2->status, 200, 'the client reconnects its GET stream at once');
$ev = wait_event($g2, sub { ($_[0]{method} // '') eq 'notifications/message'
                            && ($_[0]{params}{data} // '') =~ /SessionId/ }, 14);
ok($ev, '... and node\'s log messages come on the new one');

# two GET streams of one session: the backends' are the newer one's, and
# a change reaches the client once
my $ga = $t->mcp_get_stream($sid, timeout => 10);
sleep 1;
my $gb = $t->mcp_get_stream($sid, timeout => 10);
sleep 1;
$t->mcp_call($sid, 'tools/call', { name => 'alpha__update_watched_resource', arguments => {} });
wait_event($_, sub { 0 }, 2) for $ga, $gb;
is(scalar(grep { ($_->{method} // '') eq 'notifications/resources/updated' } @{ $seen{$ga} }, @{ $seen{$gb} }),
   1, 'two GET streams of a session: a resource update reaches the client once');
$ga->close;
$gb->close;

# DELETE with a GET stream that holds the backends' (a fresh one: g2
# gave them up to ga and gb, whose ends alpha logs meanwhile)
sleep 1.5;
my $g3 = $t->mcp_get_stream($sid, timeout => 10);
sleep 1;
$before = alpha_gets();
my $d = $t->mcp_delete($sid);
is($d->{status}, 200, 'DELETE the session') or diag explain $d;
$t0 = time;
$ended = 0;
while (time < $t0 + 5) { if (alpha_gets() > $before) { $ended = 1; last } sleep 0.05 }
ok($ended, 'DELETE: the gateway\'s GET stream at alpha ends');
$g2->close;
$g3->close;

# --- attacks: a fake backend's GET stream -------------------------------------

{
    my ($bsid) = $t->mcp_initialize(protocol_version => $V, path => '/bad');
    ok($bsid, 'initialize at the location of the fake backends');
    my $mark = $t->log_mark;
    my $b = $t->mcp_get_stream($bsid, path => '/bad', timeout => 10);
    is($b->status, 200, 'its GET stream');
    ok(wait_event($b, sub { ($_[0]{params}{data} // '') eq 'good error line' }, 8),
       'a log line at the client\'s level (info) comes');
    ok(wait_event($b, method_is('notifications/tools/list_changed'), 3), 'tools/list_changed comes');
    ok(wait_event($b, sub { ($_[0]{params}{data} // '') eq 'busy at last' }, 6),
       'a backend that answered 409 twice is asked again, and relayed');
    $ev = wait_event($b, method_is('notifications/resources/updated'), 3);
    is($ev && $ev->{params}{uri}, 'fake://thing', 'resources/updated comes, its URI unchanged');
    wait_event($b, sub { 0 }, 2.5);    # the rest
    my @all = @{ $seen{$b} };
    my @data = map { $_->{params}{data} // '' } @all;
    ok(!grep({ $_ eq 'good debug line' } @data), 'a log line below the client\'s level does not');
    ok(!grep({ ($_->{method} // '') =~ /progress/ } @all), 'progress outside a call does not');
    ok(!grep({ defined $_->{id} } @all), 'no server request, and no response, reaches the client');
    ok(!grep({ /dup|after dup/ } @data), 'an event with a member named twice ends that stream');
    ok(!grep({ /after big|xxxx/ } @data), 'an event over mcp_backend_max_size ends that stream');
    ok(!grep({ /after resp/ } @data), 'a response ends that stream');
    my $flood = grep { /^flood / } @data;
    ok($flood > 0 && $flood <= 4 * 64, "a flood of 3000 events in 1.5 s: $flood relayed (64 a second)");
    ok(scalar(grep { /^burst / } @data) <= 64, 'a burst of 3000 in one write: no more than a second\'s worth before its stream ends');

    my $fl = '';
    my $deadline = time + 20;    # a bound on the wait, not a timing: a loaded machine closes later
    while (time < $deadline) {
        $fl = McpTest::_slurp($flog) // '';
        last if $fl =~ /POST good .*"s1"/ && $fl =~ /gone dup/ && $fl =~ /gone big/ && $fl =~ /gone resp/
                && $fl =~ /gone burst/;
        sleep 0.1;
    }
    like($fl, qr/POST good \{[^\n]*"id":"s1"[^\n]*-32601/, 'the backend\'s sampling request gets a JSON-RPC error');
    like($fl, qr/gone dup/, 'the gateway closed the duplicate-member stream');
    like($fl, qr/gone big/, '... the oversized one');
    like($fl, qr/gone resp/, '... the one with a response');
    like($fl, qr/gone burst/, '... the burst');
    like($fl, qr/GET none/, 'the backend without a GET stream was asked');
    unlike($t->log_since($mark), qr/\[(warn|error|crit|alert|emerg)\]/,
           'nothing above [notice] in error.log for all that');

    my $t1 = time;
    my $p = $t->mcp_call($bsid, 'ping', undef, path => '/bad');
    ok(ref $p eq 'HASH' && time - $t1 < 2, 'the gateway answers meanwhile');

    my $gone_before = () = (McpTest::_slurp($flog) // '') =~ /gone good/g;
    $b->close;
    $deadline = time + 5;
    my $gone = 0;
    while (time < $deadline) {
        $gone = () = (McpTest::_slurp($flog) // '') =~ /gone (good|flood)/g;
        last if $gone >= 2;
        sleep 0.1;
    }
    is($gone, 2, 'the client leaves: the fake backends\' streams are closed');
    my $busy = () = (McpTest::_slurp($flog) // '') =~ /GET busy/g;
    is($busy, 3, '... the one that answered 409 twice was asked three times');

    # the backend stream that kept ending: 32 opens, then the client's ends
    # (32 reopens a second apart end by $short_t0 + 45; on a loaded
    # machine the checks above may take longer than that, and what the
    # stream holds by then is read all the same, within 10 s more)
    my $n = 0;
    my $until = $short_t0 + 45;
    $until = time + 10 if $until < time + 10;
    while (time < $until) {
        my $e = $short->next_event($until - time);
        last if !$e && $short->is_done;
        $n++ if $e && ref $e->{json} eq 'HASH' && ($e->{json}{params}{data} // '') eq 'short';
    }
    ok($short->is_done, sprintf('a backend stream that kept ending: the client\'s stream ends (%.0f s)', time - $short_t0));
    is($n, 32, '... after 32 opens, each relayed');
    my $gets = () = (McpTest::_slurp($flog) // '') =~ /GET short/g;
    is($gets, 32, '... 32 GETs at the backend');

    # graceful quit with backend streams open does not hang
    my $b2 = $t->mcp_get_stream($bsid, path => '/bad', timeout => 10);
    my ($sid3) = $t->mcp_initialize(protocol_version => $V);
    my $g3 = $t->mcp_get_stream($sid3, timeout => 10);
    sleep 1;
    my $q0 = time;
    $t->stop;
    ok(time - $q0 < 8, sprintf('nginx -s quit with backend streams open: %.1f s', time - $q0));
    ok(!$t->is_running, '... and it exited');
}

# --- a POST's stream resumed with GET is not a GET stream ------------------------
# (one worker: the resume would otherwise take the GET stream's backends)

{
    my $one = McpTest->new(
        workers => 1,
        http  => "    mcp_session_zone zone=one:4m;\n",
        server => <<"NGX")->start;
        mcp_session one;
        location = /mcp {
            mcp_backend alpha /_b/alpha;
            mcp_backend node  /_b/node;
        }
        location /_b/alpha { internal; proxy_pass http://127.0.0.1:@{[ $alpha->port ]}/mcp; $proxy }
        location /_b/node  { internal; proxy_pass http://127.0.0.1:@{[ $node->{port} ]}/mcp; $proxy }
NGX
    my ($osid) = $one->mcp_initialize(protocol_version => $V);
    my ($oasid) = reverse alpha_sessions();
    subscribe_at_alpha($oasid);
    my $og = $one->mcp_get_stream($osid, timeout => 10);
    is($og->status, 200, 'one worker: a GET stream');
    sleep 1;
    my $call = $one->mcp_post($osid,
        { jsonrpc => '2.0', id => 77, method => 'tools/call',
          params => { name => 'node__trigger-long-running-operation',
                      arguments => { duration => 4, steps => 4 }, _meta => { progressToken => 'p' } } },
        stream => 1);
    my $first = $call->next_event(5);
    my $lid = $call->last_id;
    ok($first && $lid, "a call's stream, its first event $lid");
    my $resumed = $one->mcp_get_stream($osid, last_event_id => $lid, timeout => 10);
    is($resumed->status, 200, '... resumed with GET and its Last-Event-ID');
    sleep 0.5;
    $one->mcp_call($osid, 'tools/call', { name => 'alpha__update_watched_resource', arguments => {} });
    ok(wait_event($og, method_is('notifications/resources/updated'), 6),
       'the GET stream still carries alpha\'s resource update');
    $call->close;
    $resumed->close;
    $og->close;
    $one->stop;
}

$alpha->stop;
done_testing;
