# Server requests and the session's lifecycle (issue #41): no request
# (sampling, elicitation, roots) reaches a 2025 client before its
# notifications/initialized; a tool that asks earlier waits for it, within
# mcp_request_timeout, and the notification may reach any worker.  Pings
# and log messages are not held.  Through the aggregation gateway
# (mcp_backend) a backend's request is held the same way.  A request the
# client leaves unanswered past mcp_request_timeout is cancelled with
# notifications/cancelled (its id, a reason); a held one, never sent, is
# not.  mcp_backend_max_time bounds a routed call whose backend sends
# events (progress) forever, which mcp_backend_timeout, restarted by each
# event, never ends; nginx -t refuses a bad one.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Time::HiRes qw(time);
use McpTest;
use McpStream;
use McpGateway qw(fake_mcp_server aggregate_gateway);

my $t = streaming_server(location => 'mcp_request_timeout 2s;');

my %CAPS = (sampling => {}, elicitation => {});

sub text_of { ((($_[0] // {})->{result} // {})->{content} // [ {} ])->[0]{text} }

sub initialized {
    my ($sid, %o) = @_;
    return $t->mcp_post($sid, { jsonrpc => '2.0', method => 'notifications/initialized' }, %o);
}

# --- held until notifications/initialized, which any worker may get ----------------

{
    my ($ok, @fail, @tags) = (0);
    my $rounds = 8;
    for my $n (1 .. $rounds) {
        my ($sid) = $t->mcp_initialize(capabilities => \%CAPS, skip_initialized => 1);
        my $s = call_stream($t, $sid, "h$n", 'test_sampling', { prompt => "p$n" }, tag => "call-$n");
        my @early = quiet_for(0.5, $s);
        my @sent = grep { ($_->{json}{method} // '') eq 'sampling/createMessage' } grep { ref $_->{json} } @early;
        my $r = initialized($sid, headers => { 'X-Tag' => "init-$n" });
        my $req = take($s, 3);
        my $m = $req && $req->{json} || {};
        my $a = defined $m->{id} ? answer($t, $sid, $m->{id}, sampling_answer("a$n")) : { status => 0 };
        my @ev = take_all($s, 3);
        my $text = text_of($ev[-1] && $ev[-1]{json}) // '';
        if (!@sent && $r->{status} == 202 && ($m->{method} // '') eq 'sampling/createMessage'
            && $a->{status} == 202 && $text eq "LLM response: a$n" && $s->is_done) {
            $ok++;
        }
        else {
            push @fail, "round $n: " . scalar(@sent) . " sent early, initialized $r->{status}, "
                . 'then ' . ($m->{method} // 'nothing') . ", result '$text'";
        }
        push @tags, "call-$n", "init-$n";
    }
    is($ok, $rounds, "$rounds rounds: nothing sent before notifications/initialized, "
       . 'the request after it, the call completes') or diag(join "\n", @fail);

    my $pids = pids_by_tag($t, \@tags);
    my @cross = grep { $pids->{"call-$_"} && $pids->{"init-$_"}
                       && $pids->{"call-$_"}[0] != $pids->{"init-$_"}[0] } 1 .. $rounds;
    cmp_ok(scalar @cross, '>=', 1, scalar(@cross) . " of $rounds notifications reached another "
           . 'worker than the waiting call');
}

# --- never initialized: the call's error at mcp_request_timeout, nothing sent ---------

{
    my $mark = $t->log_mark;
    my ($sid) = $t->mcp_initialize(capabilities => \%CAPS, skip_initialized => 1);
    my $s = call_stream($t, $sid, 'never', 'test_sampling', { prompt => 'x' });
    my $t0 = time;
    my @ev = take_all($s, 6);
    my $took = time - $t0;
    my @rpc = rpc_of(@ev);
    ok(!(grep { defined $_->{method} } @rpc),
       'never initialized: no request and no notifications/cancelled reach the client')
        or diag(explain \@rpc);
    ok($took >= 1.8 && $took < 4, sprintf('never initialized: the call ends at mcp_request_timeout '
                                          . '2s (%.2f s)', $took));
    is($rpc[-1] && $rpc[-1]{id}, 'never', 'never initialized: the response to the call');
    ok($rpc[-1] && $rpc[-1]{result}{isError}, 'never initialized: isError');
    is(text_of($rpc[-1]), 'Sampling failed', 'never initialized: "Sampling failed"');
    ended_ok($s, 'never initialized: the stream ends');
    ok($t->wait_for_log(qr/\[info\].*did not answer request \d+ of call "tools\/call" in time/, 2,
                        $mark), 'never initialized: the [info] line of a timeout');

    # the notification after the timeout: nothing left to send
    is(initialized($sid)->{status}, 202, 'a late notifications/initialized: 202');
}

# --- pings and log messages are not held --------------------------------------------

{
    my ($sid) = $t->mcp_initialize(capabilities => \%CAPS, skip_initialized => 1);
    $t->mcp_request($sid, 'logging/setLevel', { level => 'debug' });
    my ($msg, $r) = $t->mcp_request($sid, 'tools/call',
                                    { name => 'test_tool_with_logging', arguments => {} }, id => 'logs');
    ok($msg && $msg->{result} && !$msg->{result}{isError},
       'before notifications/initialized: a tool that logs completes');
    ok((grep { ($_->{method} // '') eq 'notifications/message' } @{ $r->{messages} // [] }),
       '... and its log messages reach the client');
}

# --- a request past mcp_request_timeout is cancelled --------------------------------

{
    my ($sid) = $t->mcp_initialize(capabilities => \%CAPS);
    my $s = call_stream($t, $sid, 'late', 'test_sampling', { prompt => 'nobody answers' });
    take($s, 3);
    my $req = take($s, 3);
    my $n = $req && $req->{json}{id};
    ok(defined $n, 'a sampling request is sent');
    my @rpc = rpc_of(take_all($s, 6));
    my ($c) = grep { ($_->{method} // '') eq 'notifications/cancelled' } @rpc;
    ok($c, 'no answer in time: notifications/cancelled on the call\'s stream');
    is_deeply($c && $c->{params}, { requestId => $n, reason => 'Request timed out' },
              '... for the request\'s id, with a reason');
    ok(!exists(($c // {})->{id}), '... a notification (no id)');
    is($rpc[-1] && $rpc[-1]{id}, 'late', '... then the call\'s response');
    is(text_of($rpc[-1]), 'Sampling failed', '... an error: "Sampling failed"');
}

$t->stop;

# --- the aggregation gateway holds a backend's request the same way -------------------

my $alpha = McpTest->new(server => <<'NGX')->start;
        location = /mcp {
            mcp on;
            mcp_builtin everything;
        }
NGX

my $g = aggregate_gateway(zone => 'hold', backends => [ alpha => $alpha->port ],
                          mcp => [ 'mcp_request_timeout 2s;' ]);

{
    my ($sid) = $g->mcp_initialize(capabilities => \%CAPS, skip_initialized => 1);
    my $s = call_stream($g, $sid, 'gw', 'alpha__test_sampling', { prompt => 'through' });
    my @early = grep { ref $_->{json} && defined $_->{json}{method} } quiet_for(1, $s);
    ok(!@early, 'gateway: the backend\'s sampling request is held before notifications/initialized')
        or diag(explain [ map { $_->{json} } @early ]);
    is($g->mcp_post($sid, { jsonrpc => '2.0', method => 'notifications/initialized' })->{status}, 202,
       'gateway: notifications/initialized: 202');
    my $req;
    for (1 .. 5) {
        my $ev = take($s, 3) // last;
        if (ref $ev->{json} && ($ev->{json}{method} // '') eq 'sampling/createMessage') {
            $req = $ev->{json};
            last;
        }
    }
    ok($req, 'gateway: then the request reaches the client');
    answer($g, $sid, $req && $req->{id}, sampling_answer('held'));
    my @rpc = rpc_of(take_all($s, 5));
    is(text_of($rpc[-1]), 'LLM response: held', 'gateway: the backend\'s tool completes');
}

{
    my ($sid) = $g->mcp_initialize(capabilities => \%CAPS, skip_initialized => 1);
    my $t0 = time;
    my $s = call_stream($g, $sid, 'gw2', 'alpha__test_sampling', { prompt => 'never' });
    my @rpc = rpc_of(take_all($s, 6));
    my $took = time - $t0;
    # held, not refused at once: the call waits out mcp_request_timeout
    ok($took >= 1.8 && $took < 4, sprintf('gateway, never initialized: the call ends at '
                                          . 'mcp_request_timeout 2s (%.2f s)', $took));
    ok(!(grep { defined $_->{method} && $_->{method} ne 'notifications/progress' } @rpc),
       'gateway, never initialized: nothing asked of the client');
    is($rpc[-1] && $rpc[-1]{id}, 'gw2', 'gateway, never initialized: the call ends');
    is(text_of($rpc[-1]), 'Sampling failed', '... with the backend\'s error answer');
}

$g->stop;
$alpha->stop;

# --- mcp_backend_max_time: progress does not keep a call forever -------------------

my $log = "/tmp/t37-fake-$$.log";
unlink $log;

# progress every 0.3 s for 6 s, then the result
my $fake = fake_mcp_server(log => $log, tools => [ 'busy' ], call => sub {
    my ($c, $name, $id) = @_;
    print $c "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n";
    for my $n (1 .. 20) {
        print $c qq(data: {"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"pt","progress":$n}}\n\n)
            or last;
        select undef, undef, undef, 0.3;
    }
    print $c qq(data: {"jsonrpc":"2.0","id":$id,"result":{"content":[{"type":"text","text":"done"}]}}\n\n);
});

my $m = aggregate_gateway(zone => 'maxt', backends => [ fake => $fake->{port} ],
                          mcp => [ 'mcp_backend_timeout 1s;', 'mcp_backend_max_time 2s;' ]);

{
    my ($sid) = $m->mcp_initialize;
    my $t0 = time;
    my $s = call_stream($m, $sid, 'busy', 'fake__busy', {}, token => 'pt');
    my @rpc = rpc_of(take_all($s, 8));
    my $took = time - $t0;
    my @progress = grep { ($_->{method} // '') eq 'notifications/progress' } @rpc;
    cmp_ok(scalar @progress, '>=', 3, 'a backend sending progress: relayed (' . scalar(@progress) . ')');
    ok($took >= 1.6 && $took < 3.5,
       sprintf('... yet the call ends at mcp_backend_max_time 2s (%.2f s), not at the backend\'s 6 s', $took));
    my $res = $rpc[-1] // {};
    is($res->{id}, 'busy', '... with the call\'s response');
    ok($res->{result} && $res->{result}{isError}, '... a tool error');
    like(text_of($res) // '', qr/mcp_backend_max_time/, '... that names mcp_backend_max_time');
    my $cancelled;
    for (1 .. 100) {
        open my $fh, '<', $log;
        ($cancelled) = grep { /"method":"notifications\/cancelled"/ } <$fh>;
        last if $cancelled;
        select undef, undef, undef, 0.1;
    }
    ok($cancelled, '... and the backend is sent notifications/cancelled');
}

$m->stop;
unlink $log;

for my $bad ([ 'mcp_backend_max_time 0;', qr/"mcp_backend_max_time" must be more than 0/ ],
             [ 'mcp_backend_max_time soon;', qr/invalid value/ ],
             [ 'mcp_backend_timeout 5s; mcp_backend_max_time 2s;', qr/less than "mcp_backend_timeout"/ ]) {
    my $c = McpTest->new(server => "location = /mcp { mcp_backend a /x; $bad->[0] }");
    my ($rc, $out) = $c->nginx_t;
    ok($rc != 0 && $out =~ $bad->[1], "nginx -t refuses: $bad->[0]") or diag($out);
}

{
    # a longer timeout alone keeps working: the default maximum is never below it
    my $c = McpTest->new(server => 'location = /mcp { mcp_backend a /x; mcp_backend_timeout 20m; }');
    my ($rc, $out) = $c->nginx_t;
    is($rc, 0, 'nginx -t: mcp_backend_timeout 20m with the default mcp_backend_max_time') or diag($out);
}

done_testing;
