# Attacks on mcp_fleet (sessions and tasks across nodes, ownership in
# Redis) and on the gateway's relay of a routed call's backend events.
#
# Fleet: nginx -t refuses a server with endpoints of the module but no
# forward= location (its forwards failed 500 -32603).  Against a fake
# Redis (Perl, RESP spoken wrongly on purpose): a
# GET answered with an integer, an error, an array, a value with CRLF,
# with a slash, a 300-byte value, an empty one, a bulk length of 2 GB, a
# reply cut in the middle, a protocol error, no reply at all (200
# requests waiting at once): each request gets a JSON-RPC error by its
# id (503 -32000, 404 -32001 for a nil), the node goes on once Redis
# answers again, and a worker quitting with a lookup pending answers it
# and exits at once.  Against a real redis-server and two nodes: a
# client's forged Mcp-Fleet-Hop, two Mcp-Session-Id headers (refused
# wherever they land), owner values that are not node names (not
# forwarded), a node named by another of its names (one hop to itself),
# a DELETE racing twenty forwards, a 2026-07-28 task id named twice in
# a body (refused where it arrives), no session id in the module's own
# lines of a debug log, and a reload that changes the prefix (old
# workers go at once, sessions re-registered).
#
# Relay, a fake backend a way of being odd: SSE lines ending in CR
# alone, a stream beginning with a BOM, events one byte a write, empty
# data lines / comments / "event: ping" / a bare "data" / "retry:", a
# backend that cancels the client's id and the gateway's and sends
# notifications/initialized, one that keeps its stream open after its
# response, 3000 progress notifications at once (each with the call's
# own token), 100,000 progress notifications, 200,000 pings and 20,000
# events of long numbers in one call (the worker's peak memory stays flat,
# and 400,000 notifications grow it no more); a relayed sampling request
# answered twice and then with an error, and one whose client left; the
# gateway quitting while a backend has gone quiet mid-call.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Time::HiRes qw(sleep time);
use IO::Socket::INET;
use IO::Select;
use POSIX ();
use File::Temp ();
use McpTest timeout => 120;
use McpAssert;
use McpStream;
use McpGateway qw(fake_upstream);

sub sid_of { my ($tag) = @_; $tag . ('0' x (32 - length $tag)) }

# one raw POST with a header list (repeated names kept)
sub raw_post {
    my ($t, $headers, $msg, %o) = @_;
    my $r = $t->request(method => 'POST', path => $o{path} // '/mcp', timeout => $o{timeout} // 10,
                        headers => [ 'Content-Type' => 'application/json',
                                     'Accept' => 'application/json, text/event-stream',
                                     'MCP-Protocol-Version' => '2025-11-25', @$headers ],
                        body => McpTest::encode_json($msg), quiet => 1);
    McpTest::decode_mcp_response($r);
    return $r;
}

sub ping { { jsonrpc => '2.0', id => $_[0], method => 'ping' } }

# a ping POSTed on a socket of its own, not read: the socket
sub send_ping {
    my ($port, $id, $sid) = @_;
    my $s = IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $port) or return undef;
    my $body = McpTest::encode_json(ping($id));
    print $s "POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
           . "Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2025-11-25\r\n"
           . "Mcp-Session-Id: $sid\r\nContent-Length: " . length($body)
           . "\r\nConnection: close\r\n\r\n$body";
    return $s;
}

# ============================ mcp_fleet ======================================

# --- a fake Redis: one process a connection; what GET answers depends on
# --- the session id's first three letters
sub fake_redis {
    my $l = IO::Socket::INET->new(LocalAddr => '127.0.0.1', LocalPort => 0, Listen => 64,
                                  ReuseAddr => 1, Proto => 'tcp') or die "listen: $!";
    my $port = $l->sockport;
    my $pid = fork // die "fork: $!";
    if (!$pid) {
        $SIG{PIPE} = 'IGNORE';
        $SIG{CHLD} = 'IGNORE';
        McpTest::_set_parent_death_signal();
        while (my $c = $l->accept) {
            my $k = fork;
            if (defined $k && $k == 0) {
                close $l;
                fake_redis_conn($c);
                POSIX::_exit(0);
            }
            close $c;
        }
        POSIX::_exit(0);
    }
    close $l;
    return ($pid, $port);
}

sub fake_redis_conn {
    my ($c) = @_;
    $c->autoflush(1);
    my $buf = '';
    my $hung = 0;
    my $read = sub {
        my $n = sysread($c, $buf, 65536, length $buf);
        return $n;
    };
    while (1) {
        # one command: *N\r\n then N bulk strings
        my @args;
        PARSE: while (1) {
            @args = ();
            my $p = 0;
            if ($buf =~ /\A\*(\d+)\r\n/) {
                my $n = $1;
                $p = length $&;
                for (1 .. $n) {
                    my $rest = substr($buf, $p);
                    last PARSE unless $rest =~ /\A\$(\d+)\r\n/;
                    my ($len, $hl) = ($1, length $&);
                    last PARSE if length($rest) < $hl + $len + 2;
                    push @args, substr($rest, $hl, $len);
                    $p += $hl + $len + 2;
                }
                substr($buf, 0, $p) = '';
                last PARSE;
            }
            last PARSE;
        }
        if (!@args) {
            return unless $read->();
            next;
        }
        next if $hung;
        my $cmd = uc $args[0];
        if ($cmd eq 'PING') { print $c "+PONG\r\n"; next }
        if ($cmd eq 'SET')  { print $c "+OK\r\n"; next }
        if ($cmd eq 'EVAL') { print $c ":0\r\n"; next }
        if ($cmd ne 'GET')  { print $c "-ERR unknown\r\n"; next }
        my $kind = substr($args[1], -32, 3);
        my $v = sub { '$' . length($_[0]) . "\r\n$_[0]\r\n" };
        if    ($kind eq 'int') { print $c ":12345\r\n" }
        elsif ($kind eq 'err') { print $c "-ERR no such thing\r\n" }
        elsif ($kind eq 'arr') { print $c "*2\r\n" . $v->('node1') . $v->('node2') }
        elsif ($kind eq 'crl') { print $c $v->("node1\r\nX-Evil: 1") }
        elsif ($kind eq 'lng') { print $c $v->('a' x 300) }
        elsif ($kind eq 'sls') { print $c $v->('node1/admin') }
        elsif ($kind eq 'emp') { print $c $v->('') }
        elsif ($kind eq 'nil') { print $c "\$-1\r\n" }
        elsif ($kind eq 'big') { print $c "\$2000000000\r\nnode"; $hung = 1 }
        elsif ($kind eq 'cut') { print $c "\$10\r\nnod"; return }
        elsif ($kind eq 'bad') { print $c "?what is this\r\n" }
        elsif ($kind eq 'hng') { $hung = 1 }
        else                   { print $c "\$-1\r\n" }
    }
}

my $redis_bin = `command -v redis-server 2>/dev/null`;
chomp $redis_bin;

# nginx -t: every server with endpoints of the module needs the forward=
# location (a named location is a server's): one without answered each
# of its forwards 500 -32603
{
    my $fl = "    mcp_fleet redis=127.0.0.1:6379 node=n1 forward=\@f;\n";
    my $first = "location = /mcp { mcp on; } location \@f { proxy_pass http://\$mcp_fleet_owner; }";
    my $bad = McpTest->new(workers => 1, server => '');
    for my $case ([ 'location = /m2 { mcp on; }', 1, 'an exact location' ],
                  [ 'location /a/ { location ~ ^/a/m { mcp on; } }', 1, 'a regex location nested in a prefix one' ],
                  [ 'location /a/ { return 204; }', 0, 'no location of the module' ]) {
        my ($second, $fails, $what) = @$case;
        $bad->write_config(http => $fl, server => "$first }\n    server { listen 127.0.0.1:1; $second");
        my ($rc, $out) = $bad->nginx_t;
        if ($fails) {
            ok($rc != 0 && $out =~ /\[emerg\].*a server with locations of this module \(server_name ""\) has no location "\@f"/,
               "nginx -t: a second server with $what and no \@f fails") or diag($out);
        }
        else {
            is($rc, 0, "nginx -t: a second server with $what needs no \@f") or diag($out);
        }
    }
}

SKIP: {
    my ($fpid, $fport) = fake_redis();
    END { local $?; kill "KILL", $fpid if $fpid }

    my $fleet_loc = <<'NGX';
        location = /mcp { mcp on; mcp_builtin everything; }
        location @f {
            proxy_pass http://$mcp_fleet_owner;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_connect_timeout 2s;
        }
NGX
    my $f = McpTest->new(workers => 1, server => $fleet_loc,
                         http => "    mcp_fleet redis=127.0.0.1:$fport node=nodeF forward=\@f timeout=300ms;\n");
    $f->expect_log_error(qr/redis names an owner that is not a node name/,
                         qr/no resolver defined to resolve|could not be resolved|upstream/);
    $f->start;

    my $ready = sub {
        McpTest::wait_until(8, sub { raw_post($f, [ 'Mcp-Session-Id' => sid_of('nil') ], ping('w'))->{status} == 404 });
    };
    ok($ready->(), 'fake Redis: a node up; an id Redis does not know: 404');

    my %want = (
        int => [ 503, -32000, 'an integer reply' ],
        err => [ 503, -32000, 'an -ERR reply' ],
        arr => [ 503, -32000, 'an array reply' ],
        crl => [ 503, -32000, 'a value with CRLF' ],
        lng => [ 503, -32000, 'a 300-byte value' ],
        sls => [ 503, -32000, 'a value with a slash' ],
        emp => [ 503, -32000, 'an empty value' ],
        nil => [ 404, -32001, 'a nil reply' ],
    );
    for my $k (sort keys %want) {
        my ($st, $code, $what) = @{ $want{$k} };
        my $r = raw_post($f, [ 'Mcp-Session-Id' => sid_of($k) ], ping("p-$k"));
        is_rpc_error_body($r, $st, $code, "p-$k", "fake Redis, $what: $st $code by the request's id");
    }

    # replies that break the connection: 503 by id, then the node is back
    for my $k (qw(big cut bad hng)) {
        my $t0 = time;
        my $r = raw_post($f, [ 'Mcp-Session-Id' => sid_of($k) ], ping("p-$k"));
        is_rpc_error_body($r, 503, -32000, "p-$k", "fake Redis, reply \"$k\": 503 -32000 by id");
        cmp_ok(time - $t0, '<', 3, '... within the timeout');
        ok($ready->(), '... and the node asks Redis again afterwards');
    }

    # many requests waiting on a Redis that never answers: all answered
    {
        my @socks;
        for my $i (1 .. 200) {
            my $s = send_ping($f->port, "h$i", sid_of('hng')) or last;
            push @socks, $s;
        }
        my ($ok, $n) = (1, 0);
        for my $i (1 .. @socks) {
            my $s = $socks[$i - 1];
            local $/;
            my $sel = IO::Select->new($s);
            my $resp = '';
            my $deadline = time + 5;
            while ($sel->can_read($deadline - time)) {
                my $got = sysread($s, $resp, 65536, length $resp);
                last unless $got;
            }
            $n++;
            $ok &&= $resp =~ m{^HTTP/1.1 503} && $resp =~ /"id":"h$i"/ && $resp =~ /-32000/;
        }
        is($n, 200, '200 requests waiting on a hung Redis at once');
        ok($ok, '... each answered 503 -32000 by its own id');
        ok($ready->(), '... and the node goes on');
    }

    $f->check_log(name => 'fake Redis: nothing in error.log but the expected lines');
    my $evil = () = $f->error_log =~ /not a node name/g;
    is($evil, 4, 'four owners refused for not being node names (CRLF, long, slash, empty)');

    # a worker that quits with a lookup pending: it answers and exits
    {
        my $q = McpTest->new(workers => 1, server => $fleet_loc,
                             http => "    mcp_fleet redis=127.0.0.1:$fport node=nodeQ forward=\@f timeout=30s;\n");
        $q->start;
        McpTest::wait_until(8, sub { raw_post($q, [ 'Mcp-Session-Id' => sid_of('nil') ], ping('w'))->{status} == 404 });
        my $s = send_ping($q->port, 'quit-1', sid_of('hng')) or die "connect: $!";
        sleep 0.3;
        my @w = $q->worker_pids;
        my $t0 = time;
        kill 'QUIT', $q->master_pid;
        my $resp = '';
        my $sel = IO::Select->new($s);
        while ($sel->can_read(10 - (time - $t0))) {
            last unless sysread($s, $resp, 65536, length $resp);
        }
        my $t_resp = time - $t0;
        close $s;
        my $gone = McpTest::wait_until(10, sub { !grep { McpTest::_alive($_) } @w });
        ok($gone && time - $t0 < 5, sprintf('a worker quitting with a Redis lookup pending exits (%.1fs)', time - $t0));
        like($resp, qr{^HTTP/1.1 503.*"id":"quit-1"}s, '... answering the request 503 by its id (' . sprintf("%.1fs", $t_resp) . ')');
        $q->stop;
    }
    $f->stop;

    skip 'redis-server is not installed (Debian: apt-get install redis-server): the real-Redis part skips', 1
        unless $redis_bin;

    # --- a real redis-server, two nodes --------------------------------------
    my $rport = do { my $s = IO::Socket::INET->new(Listen => 1, LocalAddr => '127.0.0.1', LocalPort => 0);
                     my $p = $s->sockport; close $s; $p };
    my $rdir = File::Temp::tempdir('mcp-t86-redis-XXXXXX', TMPDIR => 1, CLEANUP => 1);
    my $rpid = fork // die;
    if (!$rpid) {
        open STDOUT, '>>', "$rdir/redis.log";
        open STDERR, '>&', \*STDOUT;
        { exec $redis_bin, '--port', $rport, '--bind', '127.0.0.1', '--save', '',
               '--appendonly', 'no', '--dir', $rdir, '--daemonize', 'no' }
        POSIX::_exit(127);
    }
    END { local $?; if ($rpid) { kill "KILL", $rpid; waitpid $rpid, 0 } }
    McpTest::wait_until(10, sub { McpGateway::port_open($rport) }) or BAIL_OUT('redis-server did not start');

    my $rcmd = sub { McpGateway::redis_cmd($rport, @_) };


    my @n = map { McpTest->new(workers => 2, log_level => 'debug',
                               http => "    log_format n86 '\$request_method \$status';\n",
                               server => $fleet_loc . "        access_log %%PREFIX%%/logs/n.log n86;\n") } 0 .. 1;
    my @name = ('node0', '127.0.0.1:' . $n[1]->port);
    for my $i (0 .. 1) {
        $n[$i]{http} .= "    upstream node0 { server 127.0.0.1:" . $n[0]->port . "; }\n"
                      . "    mcp_fleet redis=127.0.0.1:$rport node=$name[$i] forward=\@f timeout=500ms;\n";
        $n[$i]->expect_log_error(qr/redis names an owner that is not a node name/);
        $n[$i]->start;
    }
    McpTest::wait_until(5, sub { $rcmd->('PING') });
    sleep 0.5;

    my ($sid1) = $n[1]->mcp_initialize;
    is($rcmd->('GET', "mcp:session:$sid1"), $name[1], 'real Redis: node 1 owns its session');

    # a client's own Mcp-Fleet-Hop: node 0 answers as if alone, the key stays
    my $r = raw_post($n[0], [ 'Mcp-Session-Id' => $sid1, 'Mcp-Fleet-Hop' => '1' ], ping('hop-1'));
    is_rpc_error_body($r, 404, -32001, 'hop-1', 'a forged Mcp-Fleet-Hop at a non-owner: 404 -32001 by id');
    is($rcmd->('GET', "mcp:session:$sid1"), $name[1], '... and the owner\'s key stays');
    $r = raw_post($n[0], [ 'Mcp-Session-Id' => $sid1 ], ping('hop-2'));
    ok($r->{status} == 200 && $r->{messages}[0]{id} eq 'hop-2' && $r->{messages}[0]{result},
       '... the same request without it is forwarded and answered');

    # two Mcp-Session-Id headers: refused wherever they land, not forwarded
    # by one and served by the other
    my ($sid0) = $n[0]->mcp_initialize;
    for my $order ([ $sid1, $sid0 ], [ $sid0, $sid1 ]) {
        for my $i (0 .. 1) {
            $r = raw_post($n[$i], [ 'Mcp-Session-Id' => $order->[0], 'Mcp-Session-Id' => $order->[1] ],
                          ping("two-$i"));
            is_rpc_error_body($r, 400, -32600, "two-$i",
                              "two Mcp-Session-Id headers at node $i ("
                              . ($order->[0] eq $sid0 ? 'node 0' : 'node 1') . "'s first): 400 -32600");
        }
    }

    # owner values that are not node names: refused, nothing forwarded
    my $before = () = McpTest::_slurp($n[1]->prefix . '/logs/n.log') =~ /\n/g;
    my $k = 0;
    for my $v ("node0/x", "node0\r\nX-A: b", 'n' x 300, '', "node0 evil", "127.0.0.1:1\@x") {
        my $fake = sprintf 'f%031x', ++$k;
        $rcmd->('SET', "mcp:session:$fake", $v);
        $r = raw_post($n[0], [ 'Mcp-Session-Id' => $fake ], ping("own-$k"));
        (my $show = $v) =~ s/\r\n/\\r\\n/g;
        $show = substr($show, 0, 20) . '...' if length $show > 20;
        is_rpc_error_body($r, 503, -32000, "own-$k", "a Redis owner \"$show\": 503 -32000 by id, not forwarded");
    }

    # node 0 by another of its names: it forwards to itself once, then answers
    {
        my $fake = sprintf 'f%031x', 99;
        $rcmd->('SET', "mcp:session:$fake", '127.0.0.1:' . $n[0]->port);
        my $m = () = McpTest::_slurp($n[0]->prefix . '/logs/n.log') =~ /\n/g;
        $r = raw_post($n[0], [ 'Mcp-Session-Id' => $fake ], ping('self-1'));
        is_rpc_error_body($r, 404, -32001, 'self-1', 'an owner naming node 0 by its address: 404 -32001 at node 0');
        my $after;
        McpTest::wait_until(3, sub { $after = () = McpTest::_slurp($n[0]->prefix . '/logs/n.log') =~ /\n/g;
                                     $after >= $m + 2 });
        is($after - $m, 2, '... after one hop to itself (two requests in its access log)');
    }

    # a DELETE through node 0 racing twenty requests it forwards: each
    # answered by its id, 200 before the DELETE, 404 -32001 after
    {
        my ($sid2) = $n[1]->mcp_initialize;
        my @kids;
        for my $i (1 .. 20) {
            my $pid = fork // die;
            if (!$pid) {
                my $r = raw_post($n[0], [ 'Mcp-Session-Id' => $sid2 ], ping("race-$i"));
                my $m = $r->{messages}[0] // {};
                my $ok = ($r->{status} == 200 && ($m->{id} // '') eq "race-$i" && $m->{result})
                      || ($r->{status} == 404 && ($m->{id} // '') eq "race-$i" && ($m->{error}{code} // 0) == -32001);
                POSIX::_exit($ok ? 0 : 1);
            }
            push @kids, $pid;
            if ($i == 10) {
                my $d = $n[0]->mcp_delete($sid2);
                ok($d->{status} == 200 || $d->{status} == 204, "a DELETE through node 0 amid forwards: $d->{status}");
            }
        }
        my $bad = 0;
        for (@kids) { waitpid $_, 0; $bad++ if $? }
        is($bad, 0, '... the twenty racing requests: each 200 or 404 -32001 by its id');
        is($rcmd->('EXISTS', "mcp:session:$sid2"), ':0', '... and the key is gone');
    }

    # a 2026-07-28 tasks/get whose body names taskId twice: refused where it
    # arrives (the strict parser), not forwarded by either
    {
        my $tid = 'a' x 32;
        $rcmd->('SET', "mcp:session:task:$tid", $name[1], 'EX', 60);
        my $meta = '"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",'
                 . '"io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}}';
        my $before1 = () = McpTest::_slurp($n[1]->prefix . '/logs/n.log') =~ /\n/g;
        my $r = $n[0]->request(method => 'POST', path => '/mcp', quiet => 1,
            headers => [ 'Content-Type' => 'application/json', 'Accept' => 'application/json, text/event-stream',
                         'MCP-Protocol-Version' => '2026-07-28', 'Mcp-Method' => 'tasks/get', 'Mcp-Name' => $tid ],
            body => qq({"jsonrpc":"2.0","id":"dup-1","method":"tasks/get","params":{"taskId":"$tid","taskId":"${\ ('b' x 32)}",$meta}}));
        McpTest::decode_mcp_response($r);
        ok($r->{status} == 400 && ($r->{json}{error}{code} // 0) < 0,
           "a task id named twice in the body: $r->{status} " . ($r->{json}{error}{code} // 'none') . ' where it arrived');
        sleep 0.2;
        my $after1 = () = McpTest::_slurp($n[1]->prefix . '/logs/n.log') =~ /\n/g;
        is($after1, $before1, '... nothing forwarded to the node Redis names');
    }

    # the session ids are in none of the module's own lines, even at debug
    $n[1]->mcp_request($sid1, 'tools/list', {});
    $n[0]->mcp_request($sid1, 'tools/list', {});
    $n[0]->mcp_delete($sid1);
    for my $i (0 .. 1) {
        my @lines = grep { /\Q$sid1\E|\Q$sid0\E/ && /\bmcp[ _]/i } split /\n/, $n[$i]->error_log;
        ok(!@lines, "node $i: no session id in the module's lines of its debug log")
            or diag(join "\n", @lines[0 .. ($#lines < 9 ? $#lines : 9)]);
    }
    # a reload that changes mcp_fleet's prefix and timeout: the old workers
    # (each with its Redis connection) go at once, the new ones register
    # the node's sessions under the new prefix
    {
        (my $http = $n[0]{http}) =~ s/forward=\@f timeout=500ms;/forward=\@f timeout=300ms prefix=t86:;/;
        my @old = $n[0]->worker_pids;
        my $t0 = time;
        ok($n[0]->reload(http => $http, old_timeout => 5), 'node 0 reloaded with prefix=t86: and timeout=300ms');
        ok(!(grep { McpTest::_alive($_) } @old), sprintf('... its old workers exited (%.1fs)', time - $t0));
        ok(McpTest::wait_until(5, sub { ($rcmd->('GET', "t86:$sid0") // '') eq $name[0] }),
           '... and its session is registered under the new prefix');
        my ($m) = $n[0]->mcp_request($sid0, 'tools/list', {});
        ok($m && $m->{result}, '... where it goes on');
    }

    $_->check_log(name => 'real Redis: nothing in error.log but the expected lines') for @n;
    $_->stop for @n;
}

# ============================ the relay ======================================

{
    # backend alpha: the Everything set of this module (sampling)
    # (a call whose client left waits there for its answer: see the report)
    my $alpha = McpTest->new(workers => 1, http => "    mcp_shutdown_timeout 1s;\n", server => <<'NGX')->start;
        location = /mcp { mcp on; mcp_builtin everything; }
NGX

    # a backend whose streams are odd in each way a tool, one backend a
    # tool (a backend that fails is left out for a while)
    # a tenth of the big streams under a sanitizer (its peak is not measured)
    my $slow = $ENV{MCP_NGINX_PRELOAD} ? 10 : 1;
    my @odd = qw(cronly bom tiny empty cancelme linger spray hose pinger nums hang);
    my $fake = fake_upstream(sub {
        my ($c, $head, $body) = @_;
        my ($id) = $body =~ /"id":(\d+)/;
        my $final = defined $id
            ? qq({"jsonrpc":"2.0","id":$id,"result":{"content":[{"type":"text","text":"done"}]}}) : '';
        my $prog = sub { qq({"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"x","progress":$_[0]}}) };
        my $start = sub {
            print $c "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n";
        };
        if ($body =~ /"method":"initialize"/) {
            my $s = qq({"jsonrpc":"2.0","id":$id,"result":{"protocolVersion":"2025-11-25",)
                  . qq("capabilities":{"tools":{}},"serverInfo":{"name":"odd","version":"1"}}});
            print $c "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nMcp-Session-Id: odd-session\r\n"
                   . "Content-Length: " . length($s) . "\r\nConnection: close\r\n\r\n$s";
        }
        elsif (!defined $id) {
            print $c "HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
        }
        elsif ($body =~ /"method":"tools\/list"/) {
            # as a stream that begins with a BOM, its lines ended by a CR
            # alone: a list read as SSE clients read it
            my $s = qq({"jsonrpc":"2.0","id":$id,"result":{"tools":[)
                  . join(',', map { qq({"name":"$_","inputSchema":{"type":"object"}}) }
                              @odd)
                  . ']}}';
            $start->();
            print $c "\xEF\xBB\xBF: a list\revent: message\rdata: $s\r\r";
        }
        elsif ($body =~ /"name":"cronly"/) {
            $start->();
            print $c "data: " . $prog->(1) . "\r\rdata: $final\r\r";
        }
        elsif ($body =~ /"name":"bom"/) {
            $start->();
            print $c "\xEF\xBB\xBFdata: " . $prog->(1) . "\n\ndata: $final\n\n";
        }
        elsif ($body =~ /"name":"tiny"/) {
            $start->();
            for my $ch (split //, "data: " . $prog->(1) . "\r\n\r\ndata: $final\r\n\r\n") {
                print $c $ch;
                sleep 0.002;
            }
        }
        elsif ($body =~ /"name":"empty"/) {
            $start->();
            print $c "data:\n\ndata: \n\n: a comment\n\nevent: ping\n\nid: 1\ndata\n\nretry: 10\n\n"
                   . "data: " . $prog->(1) . "\n\ndata: $final\n\n";
        }
        elsif ($body =~ /"name":"cancelme"/) {
            # the backend names the client's ids and the gateway's in a cancellation,
            # and answers the client's id: none of it reaches the client
            $start->();
            print $c qq(data: {"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"c-1"}}\n\n)
                   . qq(data: {"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":$id}}\n\n)
                   . qq(data: {"jsonrpc":"2.0","method":"notifications/initialized"}\n\n)
                   . "data: $final\n\n";
        }
        elsif ($body =~ /"name":"linger"/) {
            # the response, then the stream stays open (in a child: the
            # fake serves one connection at a time)
            $start->();
            print $c "data: " . $prog->(1) . "\n\ndata: $final\n\n";
            if (!fork) { sleep 4; POSIX::_exit(0) }
        }
        elsif ($body =~ /"name":"hose"/) {
            # a thousand progress notifications k times (100 unless the
            # call's arguments say)
            my ($k) = $body =~ /"k":(\d+)/;
            $start->();
            my $ev = "data: " . $prog->(1) . "\n\n";
            print $c $ev x 1000 for 1 .. ($k // 100) / $slow;
            print $c "data: $final\n\n";
        }
        elsif ($body =~ /"name":"nums"/) {
            # numbers too long for the scan's stack buffer
            $start->();
            my $num = '1.' . ('0' x 70) . '1';
            my $ev = 'data: {"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"x",'
                   . '"progress":1,' . join(',', map { qq("a$_":$num) } 1 .. 50) . "}}\n\n";
            print $c $ev x 100 for 1 .. 200 / $slow;
            print $c "data: $final\n\n";
        }
        elsif ($body =~ /"name":"pinger"/) {
            $start->();
            print $c join('', map { qq(data: {"jsonrpc":"2.0","id":"p$_","method":"ping"}\n\n) } 1 .. 200000 / $slow),
                     "data: $final\n\n";
        }
        elsif ($body =~ /"name":"hang"/) {
            # one event, then nothing (a child keeps the connection open)
            $start->();
            print $c "data: " . $prog->(1) . "\n\n";
            if (!fork) { sleep 30; POSIX::_exit(0) }
        }
        elsif ($body =~ /"name":"spray"/) {
            $start->();
            print $c join('', map { "data: " . $prog->($_) . "\n\n" } 1 .. 3000), "data: $final\n\n";
        }
        else {
            my $s = qq({"jsonrpc":"2.0","id":$id,"error":{"code":-32601,"message":"no"}});
            print $c "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                   . "Content-Length: " . length($s) . "\r\nConnection: close\r\n\r\n$s";
        }
    }, listen => 64);

    my $proxy = 'proxy_http_version 1.1; proxy_set_header Connection "";';
    my $g = McpTest->new(workers => 2, http => "    mcp_session_zone zone=r86:4m;\n    mcp_shutdown_timeout 1s;\n",
                         server => <<"NGX");
        mcp_session r86;
        location = /mcp {
            mcp_backend alpha /_b/alpha;
@{[ join '', map { "            mcp_backend $_ /_b/$_;\n" } @odd ]}            mcp_backend_timeout 3s;
        }
        location /_b/alpha { internal; proxy_pass http://127.0.0.1:@{[ $alpha->port ]}/mcp; $proxy }
        location /_b/      { internal; proxy_pass http://127.0.0.1:$fake->{port}/mcp; $proxy }
NGX
    $g->expect_log_error(qr/upstream prematurely closed|recv\(\) failed|connect\(\) failed/);
    $g->start;

    my ($sid) = $g->mcp_initialize(capabilities => { sampling => {} });
    ok($sid, 'relay: a gateway session, declaring sampling');

    # each backend's tools/list reply is a stream with a BOM and CR-only
    # line ends: read, so that every backend's tools are merged
    my $merged = $g->mcp_call($sid, 'tools/list');
    my %names = map { $_->{name} => 1 } @{ ($merged // {})->{tools} // [] };
    is(scalar(grep { $names{"${_}__$_"} } @odd), scalar @odd,
       'a tools/list stream with a BOM and CR-only lines: each backend\'s tools merged');

    # a call's messages, whether its reply is JSON or a stream
    my $call = sub {
        my ($id, $tool, %o) = @_;
        my $r = $g->mcp_post($sid, call_msg($id, $tool, {}, token => "tok-$id"),
                             timeout => $o{within} // 8, quiet => 1);
        diag(McpTest::explain_response($r)) unless @{ $r->{messages} };
        return @{ $r->{messages} };
    };
    my $text = sub { ((($_[0] // {})->{result} // {})->{content} // [ {} ])->[0]{text} // '' };
    my $progress = sub { grep { ($_->{method} // '') eq 'notifications/progress' } @_ };

    # SSE lines ending in CR alone (which SSE allows): the events are read
    my @m = $call->(11, 'cronly__cronly');
    is($text->($m[-1]), 'done', 'an SSE stream of CR-only line ends: the result');
    is(scalar $progress->(@m), 1, '... and its progress, relayed');

    @m = $call->(12, 'bom__bom');
    is($text->($m[-1]), 'done', 'an SSE stream that begins with a BOM: the result');
    is(scalar $progress->(@m), 1, '... and its first event, relayed');

    @m = $call->(13, 'tiny__tiny');
    is($text->($m[-1]), 'done', 'events written one byte at a time: the result');
    is(scalar $progress->(@m), 1, '... and the progress');

    @m = $call->(14, 'empty__empty');
    is($text->($m[-1]), 'done', 'empty data lines, a comment, event: ping, a bare "data", retry: the result');
    is(scalar(grep { !defined $_->{id} } @m), 1, '... and the one notification, nothing else');

    @m = $call->(15, 'cancelme__cancelme');
    is($text->($m[-1]), 'done', 'a backend cancelling the client\'s id and the gateway\'s: the call goes on');
    ok(!(grep { ($_->{method} // '') =~ m{^notifications/(cancelled|initialized)$} } @m),
       '... and neither that nor notifications/initialized reaches the client');

    my $t0 = time;
    @m = $call->(16, 'linger__linger');
    is($text->($m[-1]), 'done', 'a backend that keeps its stream open after its response: the result');
    cmp_ok(time - $t0, '<', 2, sprintf('... at once (%.1fs), not when the backend hangs up', time - $t0));

    @m = $call->(17, 'spray__spray', within => 15);
    is($text->($m[-1]), 'done', '3000 progress notifications in one burst: the result');
    ok(!(grep { ($_->{params}{progressToken} // '') ne 'tok-17' } $progress->(@m)),
       '... each relayed with the call\'s own token (' . scalar($progress->(@m)) . ' of them)');

    # a call's memory does not grow with its backend's events: 100,000
    # progress notifications relayed, 200,000 pings (256 answered); the
    # client reads the raw stream (a parser in Perl would be the bottleneck).
    # Each had a fresh worker's peak grow by 16, 13 and 90 MB before
    # (the texts sent, the requests past the answers, the scan's scratch:
    # each kept in the call's pool), then 3-7, 5-7 and 3-6 MB, as much as
    # the backend wrote before the events were taken (the fetch's buffer,
    # doubled up to 8 MB: 9 MB once under load), 3, 5 and 3 now that the
    # fetch holds no more than 64 kB its reader has not had (about 2 MB
    # of it the code's pages, 0.6 MB the zone's).  400,000 notifications
    # grew it no more than 100,000 (6.1-6.6 MB against 3.3 before).
    {
        my $hwm = sub {
            map { my $st = McpTest::_slurp("/proc/$_/status") // ''; $st =~ /VmHWM:\s+(\d+)/ ? $1 : 0 }
                $g->worker_pids;
        };
        my $raw = sub {
            my ($id, $tool, $args) = @_;
            my $body = McpTest::encode_json(call_msg($id, $tool, $args // {}, token => "tok-$id"));
            my $s = IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $g->port) or return '';
            print $s "POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                   . "Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2025-11-25\r\n"
                   . "Mcp-Session-Id: $sid\r\nContent-Length: " . length($body)
                   . "\r\nConnection: close\r\n\r\n$body";
            my ($n, $tail, $buf) = (0, '');
            my $sel = IO::Select->new($s);
            while ($sel->can_read(15)) {
                my $got = sysread($s, $buf, 1 << 20) or last;
                $n += $got;
                $tail = substr($tail . $buf, -400);
            }
            close $s;
            return ($n, $tail);
        };
        my $asan = $ENV{MCP_NGINX_PRELOAD} ? ' (not measured under a sanitizer)' : '';
        # the pings' 256 answers are subrequests that last as long as the
        # call: their bound is wider
        my %grew;
        for my $case ([ 31, 'hose__hose', '100,000 progress notifications', 6000 ],
                      [ 32, 'pinger__pinger', '200,000 pings', 8000 ],
                      [ 33, 'nums__nums', '20,000 events of 50 long numbers each', 6000 ],
                      [ 34, 'hose__hose', '400,000 progress notifications', 6000, { k => 400 } ]) {
            my ($id, $tool, $what, $bound, $args) = @$case;
            $g->reload;    # fresh workers: a peak of their own
            my @before = $hwm->();
            my ($n, $tail) = $raw->($id, $tool, $args);
            my @after = $hwm->();
            my $grew = 0;
            for my $i (0 .. $#after) { my $d = $after[$i] - ($before[$i] // 0); $grew = $d if $d > $grew }
            $grew{$id} = $grew;
            like($tail, qr/"id":$id,"result":\{"content":\[\{"type":"text","text":"done"/, "$what in one call: the result ($n bytes)");
            cmp_ok($asan ? 0 : $grew, '<', $bound, "... the worker's peak memory grew ${grew} kB$asan");
        }
        cmp_ok($asan ? 0 : $grew{34}, '<', $grew{31} + 1024,
               "four times the notifications: the peak grew $grew{34} kB against $grew{31} kB$asan");
    }

    # a relayed sampling request answered twice, then with an error
    {
        my $s = call_stream($g, $sid, 21, 'alpha__test_sampling', { prompt => 'twice' }, timeout => 10);
        my $req;
        while (my $ev = take($s, 8)) {
            my $j = $ev->{json};
            if (ref $j eq 'HASH' && defined $j->{method} && defined $j->{id}) { $req = $j; last }
        }
        is($req && $req->{method}, 'sampling/createMessage', 'alpha\'s sampling request reaches the client');
        my $a1 = answer($g, $sid, $req->{id}, sampling_answer('first'));
        my $a2 = answer($g, $sid, $req->{id}, sampling_answer('second'));
        my $a3 = answer($g, $sid, $req->{id}, undef, error => { code => -1, message => 'no' });
        is($a1->{status}, 202, 'the first answer: 202');
        my @rest;
        while (my $ev = take($s, 8)) { push @rest, $ev->{json} if ref $ev->{json} eq 'HASH' }
        is($text->($rest[-1]), 'LLM response: first', '... the call\'s result has the first answer only');
        ok($a2->{status} =~ /^(202|400|404)$/ && $a3->{status} =~ /^(202|400|404)$/,
           "... a second answer ($a2->{status}) and an error after it ($a3->{status}) change nothing");
    }

    # a relayed sampling request whose client leaves: the session goes on
    {
        my $s = call_stream($g, $sid, 22, 'alpha__test_sampling', { prompt => 'leave' }, timeout => 10);
        my $req;
        while (my $ev = take($s, 8)) {
            my $j = $ev->{json};
            if (ref $j eq 'HASH' && defined $j->{method} && defined $j->{id}) { $req = $j; last }
        }
        ok($req, 'another sampling request reaches the client, which then leaves');
        $s->close;
        sleep 0.3;
        my $late = answer($g, $sid, $req->{id}, sampling_answer('late'));
        ok($late->{status} =~ /^(202|400|404)$/, "... its answer after it left: $late->{status}");
        @m = $call->(23, 'tiny__tiny');
        is($text->($m[-1]), 'done', '... and the session\'s next call goes on');
    }

    # the gateway quits while a routed call waits on a backend that went
    # quiet (mcp_backend_timeout 3s, mcp_shutdown_timeout 1s)
    {
        my $s = call_stream($g, $sid, 41, 'hang__hang', {}, token => 'tok-41', timeout => 10);
        my $first = take($s, 5);
        $first = take($s, 5) if $first && !length($first->{data} // '');
        ok($first && ($first->{data} // '') =~ /notifications\/progress/, 'a call whose backend goes quiet after one event');
        my @w = $g->worker_pids;
        my $t0 = time;
        kill 'QUIT', $g->master_pid;
        my @rest;
        while (my $ev = take($s, 10)) { push @rest, $ev->{json} if ref $ev->{json} eq 'HASH' }
        my $end = $rest[-1] // {};
        is_deeply([ $end->{id}, ($end->{error} // {})->{code} ], [ 41, -32000 ],
                  sprintf('... the gateway quitting ends it with a JSON-RPC error by its id (%.1fs)', time - $t0));
        ok(McpTest::wait_until(5, sub { !grep { McpTest::_alive($_) } @w }),
           sprintf('... and its workers exit (%.1fs)', time - $t0));
    }

    $g->check_log(name => 'relay: nothing in error.log but the expected lines');
    $g->stop;
    $alpha->stop;
}

done_testing;
