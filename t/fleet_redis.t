# Built-in endpoints across nginx nodes with Redis (issue #16, item 2).
#
# mcp_fleet: a session lives in the shm zone of the node that created it
# (its owner); Redis says which node that is.  Three nodes of the
# Everything set (each its own nginx, 4 workers) behind a front nginx
# whose upstream round-robins with no affinity, and a redis-server that
# the test starts on a loopback port.  A 2025-11-25 session's requests
# reach all three nodes and succeed (a node that does not hold the
# session forwards to its owner); an elicitation answer POSTed through
# the front reaches the waiting call; a GET stream resumed with
# Last-Event-ID through another node; DELETE through another node ends
# the session everywhere.  One node killed: sessions owned by the others
# go on, those of the dead one get 404 -32001, a fresh initialize works.
# Redis restarted: 503 -32000 while it is down, then the sessions go on
# (each node registers its sessions again).  A 2026-07-28 task (no
# session) made on one node is polled, answered and cancelled through
# the others (Redis: task id -> node).  The conformance suites through
# the front: 2025-11-25, 0.1.16 all and 2026-07-28 (the nodes share one
# mcp_state_key file).

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use MIME::Base64 ();
use Time::HiRes qw(sleep);
use IO::Socket::INET;
use File::Temp ();
use McpTest timeout => 600;
use McpAssert;
use McpGateway qw(stop_process node_available conformance_2025_11_25);
use McpStream;

my $redis_bin = `command -v redis-server 2>/dev/null`;
chomp $redis_bin;
plan skip_all => 'redis-server is not installed (Debian: apt-get install redis-server)'
    unless $redis_bin;

# --- redis-server on a free loopback port, no persistence ------------------------------

my $rport = do { my $s = IO::Socket::INET->new(Listen => 1, LocalAddr => '127.0.0.1', LocalPort => 0);
                 my $p = $s->sockport; close $s; $p };
my $rdir = File::Temp::tempdir('mcp-t84-redis-XXXXXX', TMPDIR => 1, CLEANUP => 1);
my $redis_pid;

sub redis_start {
    $redis_pid = fork // die "fork: $!";
    if (!$redis_pid) {
        open STDOUT, '>>', "$rdir/redis.log";
        open STDERR, '>&', \*STDOUT;
        exec $redis_bin, '--port', $rport, '--bind', '127.0.0.1', '--save', '',
             '--appendonly', 'no', '--dir', $rdir, '--daemonize', 'no';
        exit 127;
    }
    McpTest::wait_until(10, sub { McpGateway::port_open($rport) })
        or BAIL_OUT('redis-server did not start');
}

sub redis_stop {
    return unless $redis_pid;
    kill 'KILL', $redis_pid;
    waitpid $redis_pid, 0;
    undef $redis_pid;
}

END { redis_stop() }

# one command, RESP over a plain socket
sub redis_cmd { McpGateway::redis_cmd($rport, @_) }

redis_start();

# --- three nodes and the front ----------------------------------------------------------

my @node = map { McpTest->new(workers => 4, http => <<'NGX', server => <<'NGX') } 0 .. 2;
    log_format node '$http_x_tag $request_method $status';
    mcp_session_zone zone=other:1m;
    mcp_session_zone zone=pc:1m per_client=$http_x_client:100;
NGX
        access_log %%PREFIX%%/logs/node.log node;
        location = /mcp { mcp on; mcp_builtin everything; }
        location = /other { mcp on; mcp_builtin everything; mcp_session other; }
        location = /pc { mcp on; mcp_builtin everything; mcp_session pc; }
        location @mcp_fleet {
            proxy_pass http://$mcp_fleet_owner;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_buffering off;
            proxy_read_timeout 1h;
        }
NGX
# nodes 0 and 1 are named by upstream blocks (kept connections, as
# docs/gateway.md advises), node 2 by its address; one mcp_state_key file for all
# (a 2026-07-28 requestState sealed on one node opens on the others), and
# a short drain of running tasks when a node stops
my $keys = McpTest->new(server => '');
my $state_key = $keys->write_file('conf/state.key', 'state-key-t84-' . ('s' x 40) . "\n");
my @name = ('node0', 'node1', '127.0.0.1:' . $node[2]->port);
my $upstreams = join '', map { "    upstream node$_ { server 127.0.0.1:" . $node[$_]->port . "; keepalive 8; }\n" } 0 .. 1;
for my $i (0 .. 2) {
    my $n = $node[$i];
    $n->{http} .= $upstreams . "    mcp_fleet redis=127.0.0.1:$rport node=$name[$i]"
                . " forward=\@mcp_fleet timeout=500ms;\n"
                . "    mcp_state_key $state_key;\n    mcp_shutdown_timeout 2s;\n";
    $n->start;
}
my %node_of = map { ('127.0.0.1:' . $node[$_]->port => $_, $name[$_] => $_) } 0 .. 2;

my $front = McpTest->new(workers => 1, McpGateway::front_conf(<<"NGX", <<'NGX'))->start;
    upstream nodes {
@{[ join '', map { "        server 127.0.0.1:" . $_->port . ";\n" } @node ]}    }
NGX
        location = /mcp { proxy_pass http://nodes; }
NGX

sub served_by { McpGateway::served_by($front, 'front.log', $_[0], \%node_of) }

sub tag { (headers => { 'X-Tag' => $_[0] }) }
sub text_of { ((($_[0] // {})->{result} // {})->{content} // [ {} ])->[0]{text} // '' }
sub echo_args { { name => 'test_custom_header_tool',
                  arguments => { region => 'eu', priority => 1, verbose => JSON::PP::false(), query => $_[0] } } }
sub echo_ok { text_of($_[0]) =~ /^Called with: \{.*"query":"\Q$_[1]\E"/ }

# which node holds a session: the one whose key names it
sub owner_of { my $v = redis_cmd('GET', "mcp:session:$_[0]"); defined $v ? $node_of{$v} : undef }

# --- (0) nginx -t: every bad value refused with a clear line -----------------------------

{
    my $ok = "redis=127.0.0.1:$rport node=n1 forward=\@f";
    my %cases = (
        "redis=localhost:6379 node=n1 forward=\@f"  => 'is not an IP address and port',
        "redis=127.0.0.1:0 node=n1 forward=\@f"      => 'is not an IP address and port',
        "redis=127.0.0.1 node=n1 forward=\@f"        => 'invalid parameter',
        "$ok node=a/b"                               => 'node= must be 1 to 255 of',
        "redis=127.0.0.1:$rport node=n1 forward=f"   => 'forward= must name a named location',
        "$ok timeout=0"                              => 'timeout= must be a time from 1ms to 60s',
        "$ok timeout=2m"                             => 'timeout= must be a time from 1ms to 60s',
        "$ok prefix=" . ('p' x 65)                   => 'prefix= must be 1 to 64 bytes',
        "$ok color=red"                              => 'invalid parameter "color=red"',
        "redis=127.0.0.1:$rport node=n1"             => 'needs redis=, node= and forward=',
    );
    my $bad = McpTest->new(workers => 1, server => 'location = /mcp { mcp on; }');
    for my $d (sort keys %cases) {
        $bad->write_config(http => "    mcp_fleet $d;\n");
        my ($rc, $out) = $bad->nginx_t;
        ok($rc != 0 && $out =~ /\[emerg\].*\Q$cases{$d}\E/, "nginx -t refuses \"mcp_fleet $d\"") or diag($out);
    }
    $bad->write_config(http => "    mcp_fleet $ok;\n    mcp_fleet $ok;\n");
    my ($rc, $out) = $bad->nginx_t;
    ok($rc != 0 && $out =~ /\[emerg\].*"mcp_fleet" directive is duplicate/, 'nginx -t refuses two mcp_fleet') or diag($out);
    $bad->write_config(http => '', server => 'location = /mcp { mcp on; mcp_fleet x; }');
    ($rc, $out) = $bad->nginx_t;
    ok($rc != 0 && $out =~ /\[emerg\].*"mcp_fleet" directive is not allowed here/, '... and mcp_fleet in a location')
        or diag($out);
    $bad->write_config(http => "    mcp_fleet $ok;\n", server => 'location = /mcp { mcp on; } location @g { return 204; }');
    ($rc, $out) = $bad->nginx_t;
    ok($rc != 0 && $out =~ /\[emerg\].*mcp_fleet: no server has the location "\@f" that forward= names/,
       'nginx -t refuses a forward= that no server has') or diag($out);
    $bad->write_config(http => "    mcp_fleet $ok prefix=x: timeout=250ms;\n",
                       server => 'location = /mcp { mcp on; } location @f { proxy_pass http://$mcp_fleet_owner; }');
    ($rc, $out) = $bad->nginx_t;
    is($rc, 0, 'a good mcp_fleet and a forward location with $mcp_fleet_owner: nginx -t passes') or diag($out);
}

# --- (1) one session, its requests on all three nodes -------------------------------------

{
    my ($sid) = $front->mcp_initialize(id => 'i-1', headers => { 'X-Tag' => 's1-init' });
    ok($sid, 'initialize through the front');
    my $owner = owner_of($sid);
    is($owner, served_by('s1-init'), 'Redis names the node that served initialize as the owner');

    my ($ok, %nodes) = (1);
    for my $i (1 .. 6) {
        my ($m) = $front->mcp_request($sid, 'tools/call', echo_args("hop $i"), tag("s1-c$i"));
        $ok &&= echo_ok($m, "hop $i");
        $nodes{ served_by("s1-c$i") // 'none' }++;
    }
    ok($ok, 'six tools/call through the front: all answered');
    is_deeply([ sort keys %nodes ], [ 0, 1, 2 ], 'they reached all three nodes');
    my $fwd = grep { / POST 200$/ } grep { /^s1-c/ } split /\n/, McpTest::_slurp($node[$owner]->prefix . '/logs/node.log');
    is($fwd, 6, 'the owner served all six (four of them forwarded by the other nodes)');

    my $d = $front->mcp_delete($sid, tag('s1-del1'));
    my $d_node = served_by('s1-del1');
    ok($d->{status} == 200 || $d->{status} == 204, "DELETE through node $d_node: $d->{status}");
    # the owner's DEL goes to Redis beside its answer, not before it: a
    # loaded machine (the sanitizer pass) has read the key still there
    McpTest::wait_until(3, sub { (redis_cmd('EXISTS', "mcp:session:$sid") // '') eq ':0' });
    is(redis_cmd('EXISTS', "mcp:session:$sid"), ':0', '... the key is gone');
    for my $i (1 .. 3) {
        my $r = $front->mcp_post($sid, { jsonrpc => '2.0', id => "gone-$i", method => 'ping' });
        is_rpc_error_body($r, 404, -32001, "gone-$i", "after DELETE, request $i: 404 -32001");
    }
    for my $n (@node) {
        unlike($n->error_log, qr/\Q$sid\E/, 'the session id is in no node\'s error.log');
    }
}

# --- (1b) server requests and resumes across nodes ---------------------------------------

{
    my ($sid) = $front->mcp_initialize(capabilities => { sampling => {}, elicitation => {} });
    my $owner = owner_of($sid);
    my $other = ($owner + 1) % 3;

    # the call's stream through a non-owner; its answer POSTed to the third node
    my $s = call_stream($node[$other], $sid, 'sa1', 'test_sampling', { prompt => 'fleet' });
    my $prime = take($s, 5);
    my $req = take($s, 5);
    is($req && $req->{json}{method}, 'sampling/createMessage',
       "a call's stream through node $other (forwarded): sampling/createMessage");
    my $r = answer($node[($owner + 2) % 3], $sid, $req->{json}{id}, sampling_answer('from afar'));
    is($r->{status}, 202, 'the sampling answer POSTed to another non-owner node: 202');
    my @ev = take_all($s, 5);
    is(text_of($ev[-1]{json}), 'LLM response: from afar', '... reached the waiting call');

    # an elicitation answered through the front
    $s = call_stream($front, $sid, 'el1', 'test_elicitation', { message => 'who?' });
    take($s, 5);
    $req = take($s, 5);
    is($req && $req->{json}{method}, 'elicitation/create', 'test_elicitation through the front');
    $r = answer($front, $sid, $req->{json}{id}, { action => 'decline' });
    is($r->{status}, 202, 'the elicitation answer through the front: 202');
    @ev = take_all($s, 5);
    is(text_of($ev[-1]{json}), 'User response: action=decline, content=null', '... reached the waiting call');

    # a stream cut after its server request, resumed with Last-Event-ID on another node
    $s = call_stream($node[$other], $sid, 'sa2', 'test_sampling', { prompt => 'resume' });
    $prime = take($s, 5);
    $s->close;
    my $third = ($owner + 2) % 3;
    my $g = $node[$third]->mcp_get_stream($sid, last_event_id => $prime->{id}, timeout => 5);
    is($g->status, 200, "GET with Last-Event-ID through node $third: 200");
    $req = take($g, 5);
    is($req && $req->{json}{method}, 'sampling/createMessage', '... replays the server request');
    answer($front, $sid, $req->{json}{id}, sampling_answer('resumed'));
    @ev = take_all($g, 5);
    is(text_of($ev[-1]{json}), 'LLM response: resumed', '... and the response arrives on the resumed stream');
    ended_ok($g, '... which then ends');

    # a cancellation POSTed to another node ends the call on the owner
    $s = call_stream($node[$other], $sid, 'cx1', 'test_sampling', { prompt => 'cancel me' });
    take($s, 5);
    $req = take($s, 5);
    ok($req && $req->{json}{id}, 'a call waits for its sampling answer (stream through a non-owner)');
    my $t0 = Time::HiRes::time();
    $r = $node[$third]->mcp_notify($sid, 'notifications/cancelled', { requestId => 'cx1', reason => 'stop' });
    is($r->{status}, 202, 'notifications/cancelled to the third node: 202');
    @ev = take_all($s, 3);
    ended_ok($s, '... the call\'s stream ends');
    ok(Time::HiRes::time() - $t0 < 2, '... promptly');
    ok(!(grep { ($_->{json} // {})->{id} && $_->{json}{id} eq 'cx1' } @ev), '... without a response for the cancelled call');

    # a large body forwarded whole: 270 KB of _meta around a 9,000-byte argument
    my $q = 'q' x 9000;
    my %params = (%{ echo_args($q) }, _meta => { pad => [ map { chr(97 + $_ % 26) x 9000 } 1 .. 30 ] });
    my ($m) = $node[$other]->mcp_request($sid, 'tools/call', \%params);
    ok(echo_ok($m, $q), 'a 270 KB tools/call through a non-owner: forwarded whole, answered')
        or diag(substr(McpTest::encode_json($m // {}), 0, 400));

    # DELETE on a non-owner ends the session on its owner
    my $d = $node[$other]->mcp_delete($sid);
    ok($d->{status} == 200 || $d->{status} == 204, "DELETE to non-owner node $other: $d->{status}");
    $r = $node[$owner]->mcp_post($sid, { jsonrpc => '2.0', id => 'after', method => 'ping' });
    is_rpc_error_body($r, 404, -32001, 'after', '... the owner no longer holds it: 404 -32001');
}

# --- (2) a client's own Mcp-Fleet-Hop only stops a forward --------------------------------

{
    my $sid = $front->mcp_initialize;
    my $owner = owner_of($sid);
    my $other = ($owner + 1) % 3;
    my $r = $node[$other]->mcp_post($sid, { jsonrpc => '2.0', id => 'hop', method => 'ping' },
                                    headers => { 'Mcp-Fleet-Hop' => '1' });
    is_rpc_error_body($r, 404, -32001, 'hop', 'a client-sent Mcp-Fleet-Hop at a non-owner: 404, not forwarded');
    is(owner_of($sid), $owner, '... and the key naming the owner stays');
    $r = $node[$other]->mcp_post($sid, { jsonrpc => '2.0', id => 'direct', method => 'ping' });
    is($r->{status}, 200, 'the same request without it: forwarded to the owner, 200');

    # a stale key naming a node that does not hold the session
    redis_cmd('SET', 'mcp:session:' . ('Z' x 32), $name[0]);
    $r = $node[1]->mcp_post('Z' x 32, { jsonrpc => '2.0', id => 'stale', method => 'ping' });
    is_rpc_error_body($r, 404, -32001, 'stale', 'a stale key: the named node answers 404 -32001');
    McpTest::wait_until(3, sub { (redis_cmd('EXISTS', 'mcp:session:' . ('Z' x 32)) // '') eq ':0' });
    is(redis_cmd('EXISTS', 'mcp:session:' . ('Z' x 32)), ':0', '... and deletes the stale key');

    # at the owner, a location of another zone: 404 there, and the key stays
    $r = $node[$owner]->mcp_post($sid, { jsonrpc => '2.0', id => 'zone', method => 'ping' }, path => '/other');
    is_rpc_error_body($r, 404, -32001, 'zone', 'the session named at a location of another zone of its owner: 404');
    sleep 0.3;
    is(owner_of($sid), $owner, '... and its key stays (the node holds it in its other zone)');
    $r = $front->mcp_post($sid, { jsonrpc => '2.0', id => 'still', method => 'ping' });
    is($r->{status}, 200, '... and the session goes on');

    # an "owner" that takes the request and hangs up: 502 as a JSON-RPC
    # error, not the 404 of a node gone (it may have the request)
    my $rude = IO::Socket::INET->new(Listen => 5, LocalAddr => '127.0.0.1', LocalPort => 0, ReuseAddr => 1);
    my $rude_pid = fork // die;
    if (!$rude_pid) {
        while (my $c = $rude->accept) { my $buf; sysread $c, $buf, 65536; close $c; }
        exit 0;
    }
    my $rude_port = $rude->sockport;
    close $rude;
    redis_cmd('SET', 'mcp:session:' . ('R' x 32), "127.0.0.1:$rude_port");
    $node[1]->expect_log_error(qr/upstream prematurely closed connection/);
    $r = $node[1]->mcp_post('R' x 32, { jsonrpc => '2.0', id => 'rude', method => 'ping' });
    is_rpc_error_body($r, 502, -32000, 'rude', 'an owner that hangs up after the request: a JSON-RPC 502, by the request\'s id');
    kill 'KILL', $rude_pid;
    waitpid $rude_pid, 0;
    $r = $node[1]->mcp_post('R' x 32, { jsonrpc => '2.0', id => 'nobody', method => 'ping' });
    is_rpc_error_body($r, 404, -32001, 'nobody', 'nobody at the owner\'s address: 404 -32001, by the request\'s id');
    $node[1]->expect_log_error(qr/connect\(\) failed \(111: Connection refused\)/);
    redis_cmd('DEL', 'mcp:session:' . ('R' x 32));

    # a key naming something that is not a node name is not followed
    redis_cmd('SET', 'mcp:session:' . ('Y' x 32), 'evil.example/x?');
    $node[1]->expect_log_error(qr/redis names an owner that is not a node name/);
    $r = $node[1]->mcp_post('Y' x 32, { jsonrpc => '2.0', id => 'bad', method => 'ping' });
    is($r->{status}, 503, 'a key whose owner is no node name: 503, not forwarded');
    redis_cmd('DEL', 'mcp:session:' . ('Y' x 32));
}

# --- (3) Redis restarted: 503 meanwhile, then the sessions go on --------------------------

my @s = map { my $sid = $front->mcp_initialize; { sid => $sid, owner => owner_of($sid) } } 1 .. 6;
{
    my %per; $per{ $_->{owner} // 'none' }++ for @s;
    is(scalar(grep { defined $_->{owner} } @s), 6, 'six sessions registered');

    redis_stop();
    my ($n503, $ok_local) = (0, 0);
    for my $i (1 .. 6) {
        my $r = $front->mcp_post($s[0]{sid}, { jsonrpc => '2.0', id => "down-$i", method => 'ping' });
        if ($r->{status} == 503) {
            $n503++ if (($r->{json} // {})->{error} // {})->{code} == -32000;
        } elsif ($r->{status} == 200) {
            $ok_local++;
        }
    }
    ok($n503 >= 2, "Redis down: requests reaching a non-owner get 503 -32000 ($n503 of 6)");
    ok($ok_local >= 1, "... those reaching the owner are answered ($ok_local of 6)");
    my $r = $front->mcp_post(undef, { jsonrpc => '2.0', id => 'init-down', method => 'initialize',
        params => { protocolVersion => '2025-11-25', capabilities => {}, clientInfo => { name => 't', version => '1' } } });
    is($r->{status}, 503, 'initialize while Redis is down: 503 (no session the others would not know)');
    is((($r->{json} // {})->{error} // {})->{code}, -32000, '... -32000');

    redis_start();
    # every node connects again and registers its sessions
    my $back = McpTest::wait_until(15, sub { !grep { !defined owner_of($_->{sid}) } @s });
    ok($back, 'Redis back (empty): every session registered again by its owner');
    my $ok = 1;
    for my $x (@s) {
        for my $i (1 .. 3) {
            my ($m) = $front->mcp_request($x->{sid}, 'tools/call', echo_args("back $i"));
            $ok &&= echo_ok($m, "back $i");
        }
    }
    ok($ok, 'the six sessions go on through the front (18 calls)');
}

# --- (3b) Redis hangs (SIGSTOP): lookups time out (timeout=500ms), 503, then go on ------

{
    my $x = (grep { $_->{owner} != 0 } @s)[0];
    kill 'STOP', $redis_pid;
    my $t0 = Time::HiRes::time();
    my $r = $node[0]->mcp_post($x->{sid}, { jsonrpc => '2.0', id => 'hang', method => 'ping' }, timeout => 10);
    my $took = Time::HiRes::time() - $t0;
    is_rpc_error_body($r, 503, -32000, 'hang', 'Redis stopped (SIGSTOP): a lookup gets 503 -32000, with the request\'s id');
    is($r->{headers}{'retry-after'}, '1', '... and Retry-After: 1');
    ok($took < 3, sprintf('... after the timeout, not a hang (%.2f s)', $took));
    # long enough for every worker's keepalive PING to go unanswered
    sleep 2.5;
    kill 'CONT', $redis_pid;
    my $back = McpTest::wait_until(15, sub {
        my $q = $node[0]->mcp_post($x->{sid}, { jsonrpc => '2.0', id => 'cont', method => 'ping' });
        $q->{status} == 200;
    });
    ok($back, 'Redis continued: the node connects again and forwards');
    sleep 1.5;
    for my $i (0 .. 2) {
        my $log = $node[$i]->error_log;
        my $warns = () = $log =~ /\[warn\].*mcp_fleet: redis at .* unreachable/g;
        my $back = () = $log =~ /\[notice\].*mcp_fleet: redis at .* reachable again/g;
        is("$warns $back", '2 2', "node $i: one [warn] and one [notice] for each of the two outages");
    }
}

# --- (3c) a node reloaded: its sessions survive in the zone and stay registered ------------

{
    $node[2]->reload;
    my $ok = 1;
    for my $x (@s) {
        my ($m) = $front->mcp_request($x->{sid}, 'tools/call', echo_args('reloaded'));
        $ok &&= echo_ok($m, 'reloaded');
    }
    ok($ok, 'after node 2 reloads, the six sessions go on through the front');
}

# --- (4) the 2025-11-25 conformance suite through the front -------------------------------

conformance_2025_11_25($front, 'the front and three Redis nodes');

# --- (4b) a 2026-07-28 task across nodes ---------------------------------------------------

my ($t26_rpc, $t26_lid);
{
    my $EXT = { extensions => { 'io.modelcontextprotocol/tasks' => {} }, elicitation => {} };
    my $seq = 0;
    # one stateless request straight to node $i: (message, response, id)
    my $rpc = sub {
        my ($i, $method, $params, %o) = @_;
        my $id = 't26-' . ++$seq;
        my %p = (%{ $params // {} },
                 _meta => { 'io.modelcontextprotocol/protocolVersion' => '2026-07-28',
                            'io.modelcontextprotocol/clientCapabilities' => $EXT });
        my %h = ('MCP-Protocol-Version' => '2026-07-28', 'Mcp-Method' => $method, 'X-Tag' => $id,
                 ($o{client} ? ('X-Client' => $o{client}) : ()));
        $h{'Mcp-Name'} = $o{name} // ($method eq 'tools/call' ? $params->{name} : $params->{taskId});
        my $r = $node[$i]->mcp_post(undef, { jsonrpc => '2.0', id => $id, method => $method, params => \%p },
                                    headers => \%h, ($o{path} ? (path => $o{path}) : ()));
        return ($r->{json} // {}, $r, $id);
    };
    # the nodes whose access logs have the request served (200): where it
    # arrived and, when forwarded, its owner (waits for two lines)
    my $answered_by = sub {
        my ($tag) = @_;
        my @by;
        McpTest::wait_until(5, sub {
            @by = grep { grep { /^\Q$tag\E POST 200$/ } split /\n/, McpTest::_slurp($node[$_]->prefix . '/logs/node.log') // '' }
                  0 .. 2;
            @by >= 2;
        });
        return \@by;
    };
    my $task_key = sub { "mcp:session:task:$_[0]" };

    # created on node 0 (a tool that asks for input), polled on 1, answered on 2
    my ($m, $r) = $rpc->(0, 'tools/call', { name => 'confirm_delete', arguments => { filename => 'f.txt' } });
    my $tid = (($m->{result} // {})->{taskId}) // 'none';
    is(($m->{result} // {})->{resultType}, 'task', '2026-07-28: a tool that asks becomes a task on node 0');
    is(redis_cmd('GET', $task_key->($tid)), $name[0], '... Redis names node 0 as the task\'s owner, before the reply');
    my $ttl = redis_cmd('TTL', $task_key->($tid)) // '';
    ok($ttl =~ /^:(\d+)$/ && $1 > 3500 && $1 <= 3600, "... for the task's life (mcp_task_timeout 1h): TTL $ttl");

    my ($got, $gid);
    for (1 .. 50) {
        ($got, undef, $gid) = $rpc->(1, 'tasks/get', { taskId => $tid });
        last if ((($got->{result} // {})->{status}) // '') eq 'input_required';
        sleep 0.1;
    }
    is((($got->{result} // {})->{status}), 'input_required', 'tasks/get via node 1: input_required');
    is_deeply([ keys %{ ($got->{result} // {})->{inputRequests} // {} } ], ['confirm'], '... with its one request');
    is_deeply($answered_by->($gid), [ 0, 1 ], '... answered by node 0, through node 1');

    my ($ack, undef, $uid) = $rpc->(2, 'tasks/update', { taskId => $tid,
        inputResponses => { confirm => { action => 'accept', content => { confirm => \1 } } } });
    is_deeply($ack->{result}, $ACK, 'tasks/update via node 2: ack');
    is_deeply($answered_by->($uid), [ 0, 2 ], '... the owner took the answer');

    my $done;
    for (1 .. 50) {
        ($done) = $rpc->(2, 'tasks/get', { taskId => $tid });
        last if ((($done->{result} // {})->{status}) // '') eq 'completed';
        sleep 0.1;
    }
    is(((($done->{result} // {})->{result} // {})->{content} // [ {} ])->[0]{text}, 'Deleted f.txt',
       'the task resumed on its owner and its result came through node 2');
    ($done) = $rpc->(1, 'tasks/get', { taskId => $tid });
    is((($done->{result} // {})->{status}), 'completed', '... and through node 1');

    # created on node 1, cancelled through node 2, seen through node 0
    ($m) = $rpc->(1, 'tools/call', { name => 'slow_compute', arguments => { seconds => 60 } });
    my $lid = $t26_lid = (($m->{result} // {})->{taskId}) // 'none';
    is(redis_cmd('GET', $task_key->($lid)), $name[1], 'a long task on node 1: Redis names node 1');
    my $cid;
    ($ack, undef, $cid) = $rpc->(2, 'tasks/cancel', { taskId => $lid });
    is_deeply($ack->{result}, $ACK, 'tasks/cancel via node 2: ack');
    is_deeply($answered_by->($cid), [ 1, 2 ], '... done by its owner');
    ($got) = $rpc->(0, 'tasks/get', { taskId => $lid });
    is((($got->{result} // {})->{status}), 'cancelled', '... cancelled, seen through node 0');
    ok($node[1]->wait_for_log(qr/mcp task \Q$lid\E cancelled/, 5), '... on the node that ran it');

    # unknown and forged ids: the owner's error (-32602), by the request's id
    my $forged = 'f' x 32;
    my ($e, $er, $eid) = $rpc->(2, 'tasks/get', { taskId => $forged });
    is(($e->{error} // {})->{code}, -32602, 'an unknown task id: -32602');
    is($e->{id}, $eid, '... answering the request by its id');
    ($e, $er, $eid) = $rpc->(0, 'tasks/cancel', { taskId => 'x' x 32 });
    is(($e->{error} // {})->{code}, -32602, 'a task id no node makes (not hex): -32602, answered at once');
    is($e->{id}, $eid, '... by the request\'s id');
    # a stale key: the named node does not hold the task, answers, and drops the key
    redis_cmd('SET', $task_key->($forged), $name[1], 'EX', 60);
    ($e, $er, $eid) = $rpc->(0, 'tasks/get', { taskId => $forged });
    is(($e->{error} // {})->{code}, -32602, 'a forged key naming node 1: node 1 answers -32602');
    ok(McpTest::wait_until(3, sub { (redis_cmd('EXISTS', $task_key->($forged)) // '') eq ':0' }),
       '... and deletes the key that named it');
    # Mcp-Name must be the task id: a mismatch is refused where it arrives
    ($e, $er, $eid) = $rpc->(2, 'tasks/get', { taskId => $tid }, name => $lid);
    is($er->{status}, 400, 'Mcp-Name that is not the body\'s task id: 400 where it arrived');
    is($e->{id}, $eid, '... a JSON-RPC error by the request\'s id (' . ((($e->{error} // {})->{code}) // 'none') . ')');
    # ... decoded when in Base64 (=?base64?...?=): the owner answers
    my ($b64, undef, $bid) = $rpc->(0, 'tasks/get', { taskId => $lid },
                                    name => '=?base64?' . MIME::Base64::encode_base64($lid, '') . '?=');
    is((($b64->{result} // {})->{status}), 'cancelled', 'Mcp-Name in Base64: the task id decoded');
    is_deeply($answered_by->($bid), [ 0, 1 ], '... forwarded to its owner, node 1');
    # a client's own Mcp-Fleet-Hop only stops the forward
    my $hop = $node[2]->mcp_post(undef, { jsonrpc => '2.0', id => 'hop-1', method => 'tasks/get',
                                          params => { taskId => $tid, _meta => {
                                              'io.modelcontextprotocol/protocolVersion' => '2026-07-28',
                                              'io.modelcontextprotocol/clientCapabilities' => $EXT } } },
                                 headers => { 'MCP-Protocol-Version' => '2026-07-28', 'Mcp-Method' => 'tasks/get',
                                              'Mcp-Name' => $tid, 'Mcp-Fleet-Hop' => '1' });
    is(((($hop->{json} // {})->{error} // {})->{code}), -32602, 'Mcp-Fleet-Hop from a client: node 2 answers itself (-32602)');
    is(redis_cmd('GET', $task_key->($tid)), $name[0], '... and the owner\'s key stays');

    # whose task it is stays the owner's check (per_client=$http_x_client)
    ($m) = $rpc->(0, 'tools/call', { name => 'slow_compute', arguments => { seconds => 30 } },
                  path => '/pc', client => 'alice');
    my $pid = (($m->{result} // {})->{taskId}) // 'none';
    ($e, $er, $eid) = $rpc->(1, 'tasks/get', { taskId => $pid }, path => '/pc', client => 'bob');
    is_deeply([ (($e->{error} // {})->{code}), $e->{id} ], [ -32602, $eid ],
              'per_client: bob asks node 1 about alice\'s task on node 0: -32602, as on one node');
    ($e, $er, $eid) = $rpc->(2, 'tasks/cancel', { taskId => $pid }, path => '/pc', client => 'bob');
    is((($e->{error} // {})->{code}), -32602, '... nor can he cancel it through node 2');
    ($got) = $rpc->(1, 'tasks/get', { taskId => $pid }, path => '/pc', client => 'alice');
    is((($got->{result} // {})->{status}), 'working', '... alice finds it through node 1, still working');
    ($ack) = $rpc->(2, 'tasks/cancel', { taskId => $pid }, path => '/pc', client => 'alice');
    is_deeply($ack->{result}, $ACK, '... and cancels it through node 2');

    # Redis down: a task another node holds cannot be found, 503 -32000
    redis_stop();
    ($e, $er, $eid) = $rpc->(2, 'tasks/get', { taskId => $tid });
    is_deeply([ $er->{status}, (($e->{error} // {})->{code}), $e->{id} ], [ 503, -32000, $eid ],
              'Redis down: tasks/get of a task node 2 does not hold: 503 -32000 by the request\'s id');
    ($got) = $rpc->(0, 'tasks/get', { taskId => $tid });
    is((($got->{result} // {})->{status}), 'completed', '... its owner still answers about it');

    # Redis restarted: each node registers its live tasks again
    redis_start();
    ok(McpTest::wait_until(10, sub { (redis_cmd('GET', $task_key->($tid)) // '') eq $name[0] }),
       'Redis restarted: node 0 registers its task again');
    ($done) = $rpc->(2, 'tasks/get', { taskId => $tid });
    is((($done->{result} // {})->{status}), 'completed', '... and node 2 finds it there');
    $t26_rpc = $rpc;
}

# --- (4c) 0.1.16 --suite all and the 2026-07-28 requirements through the front ---------

for my $case ([ 'conformance-0.1.16', '0.1.16', '--suite', 'all' ],
              [ 'conformance-0.2.0', '0.2.0-alpha.12', '--requirements', '2026-07-28' ]) {
    my ($pkg, $ver, @args) = @$case;
    SKIP: {
        my $why = node_available($pkg);
        skip "conformance suite: $why", 2 if $why;
        my $suite = McpGateway::npm_dir() . "/node_modules/$pkg/dist/index.js";
        my $dir = $front->prefix . "/conformance-$ver";
        mkdir $dir;
        my $url = 'http://localhost:' . $front->port . '/mcp';
        my $out = `cd $dir && '@{[ McpGateway::node_bin() ]}' '$suite' server --url '$url' @args 2>&1`;
        my $rc = $?;
        my ($total) = $out =~ /^(Total:.*)$/m;
        is($rc, 0, "conformance $ver @args through the front and three Redis nodes: " . ($total // 'no total'))
            or diag(join "\n", grep { /FAIL|fail|✗/ } split /\n/, $out);
        like($total // '', qr/^Total: [1-9][0-9]* passed, 0 failed$/, '... nothing failed') or diag($total // $out);
    }
}

# --- (5) one node killed mid-run ---------------------------------------------------------

{
    $front->expect_log_error(qr/connect\(\) failed \(111: Connection refused\) while connecting to upstream/);
    $_->expect_log_error(qr/connect\(\) failed \(111: Connection refused\) while connecting to upstream/) for @node;
    my $dead = 1;
    my @pids = ($node[$dead]->master_pid, $node[$dead]->worker_pids);
    kill 'KILL', @pids;
    McpTest::wait_until(5, sub { !grep { kill 0, $_ } @pids });
    delete $node[$dead]{pid};
    ok(!McpGateway::port_open($node[$dead]->port), "node $dead killed (SIGKILL)");

    my ($ok, $gone) = (1, 1);
    my $n_dead = grep { $_->{owner} == $dead } @s;
    for my $x (@s) {
        for my $i (1 .. 3) {
            if ($x->{owner} == $dead) {
                # the front skips the dead node; a live one forwards to the
                # dead owner, finds nobody there and answers the JSON-RPC 404
                my $r = $front->mcp_post($x->{sid}, { jsonrpc => '2.0', id => "dead-$i", method => 'ping' });
                $gone &&= $r->{status} == 404
                          && ((($r->{json} // {})->{error} // {})->{code} // 0) == -32001;
            } else {
                my ($m) = $front->mcp_request($x->{sid}, 'tools/call', echo_args("alive $i"));
                $ok &&= echo_ok($m, "alive $i");
            }
        }
    }
    ok($ok, 'sessions owned by the live nodes go on');
    ok($n_dead, "the dead node owned sessions ($n_dead)");
    ok($gone, '... each of their requests gets 404 -32001 (a JSON-RPC error, not a 502 page)');
    # a task of the dead node: unknown now, as any node answers for one
    my ($e, $er, $eid) = $t26_rpc->(0, 'tasks/get', { taskId => $t26_lid });
    is_deeply([ $er->{status}, (($e->{error} // {})->{code}), $e->{id} ], [ 200, -32602, $eid ],
              'a 2026 task of the dead node, asked through node 0: -32602 by the request\'s id (no 502 page)');
    my $sid = $front->mcp_initialize;
    ok($sid, 'a fresh initialize works');
    my ($m) = $front->mcp_request($sid, 'tools/call', echo_args('fresh'));
    ok(echo_ok($m, 'fresh'), '... and its session serves');
}

$front->stop;
$_->stop for grep { $_->{pid} } @node;
redis_stop();

done_testing;
