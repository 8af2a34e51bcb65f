# The ends of a client's exchange with the gateway over several MCP
# servers (mcp_backend, issue #15 item 1) that its backends are told of:
# the client's DELETE ends its session at every backend (DELETE with the
# backend's own session id), and a client that disconnects in the middle
# of a routed call has the call cancelled at its backend
# (notifications/cancelled with the gateway's id of the request), whether
# the backend answers with JSON or is in the middle of its SSE stream.
# Real backends: an nginx instance of this module (the Everything set,
# which logs a cancelled call) and @modelcontextprotocol/server-everything
# (which logs a session's termination).  Attacks: a DELETE while calls
# run, a disconnect while the backend waits for the client's sampling
# answer, 50 clients that disconnect at once (the workers' memory stays
# bounded, no crash), a backend that is down at the DELETE.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use IO::Socket::INET;
use Time::HiRes qw(sleep time);
use McpTest timeout => 240;
use McpStream;
use McpGateway qw(start_everything_node stop_process node_available upstream_log_format
                  upstream_log wait_upstream);

my $why = node_available('@modelcontextprotocol/server-everything');
plan skip_all => "node: $why" if $why;

my $V = '2025-11-25';

# backend alpha: the Everything set, its requests in logs/upstream.log
my $alpha = McpTest->new(http => upstream_log_format(), server => <<'NGX')->start;
        location = /mcp {
            mcp on;
            mcp_builtin everything;
            access_log %%PREFIX%%/logs/upstream.log mcp_upstream;
        }
NGX

# node behind an nginx that logs what the gateway sends it, bodies included
my $front = McpTest->new(
    ports => 2,    # 2: server-everything
    http => "    log_format node escape=json '{"
            . '"method":"$request_method","status":"$status","sid":"$http_mcp_session_id",'
            . '"sid_out":"$sent_http_mcp_session_id","pv":"$http_mcp_protocol_version",'
            . '"body":"$request_body"' . "}';\n",
    server => <<'NGX')->start;
        location = /mcp {
            proxy_pass http://127.0.0.1:%%PORT2%%/mcp;
            proxy_http_version 1.1;
            proxy_buffering off;
            client_body_buffer_size 64k;
            access_log %%PREFIX%%/logs/node.log node;
        }
NGX

my $proxy = 'proxy_http_version 1.1; proxy_set_header Connection "";';

# an HTTP/2 port too (cleartext, prior knowledge): its streams are not held
my $nginx = $ENV{MCP_NGINX} // $ENV{NGINX_BIN} // '/usr/sbin/nginx';
my ($version) = `$nginx -v 2>&1` =~ m{nginx/(\d+\.\d+\.\d+)};
my $h2 = sprintf('%d%03d%03d', split /\./, $version) >= 1025001
       ? 'listen 127.0.0.1:%%PORT3%%; http2 on;' : 'listen 127.0.0.1:%%PORT3%% http2;';
my $t = McpTest->new(
    ports => 3,    # 2: the other server-everything, 3: HTTP/2
    ($ENV{T88_DEBUG} ? (log_level => 'debug') : ()),
    http  => "    mcp_session_zone zone=ends:4m;\n",
    server => <<"NGX");
        mcp_session ends;
        $h2

        location = /mcp {
            mcp_backend alpha /_b/alpha;
            mcp_backend node  /_b/node;
            mcp_backend_timeout 30s;
        }

        location = /two {
            mcp_backend alpha /_b/alpha;
            mcp_backend other /_b/other;
        }

        location /_b/alpha { internal; proxy_pass http://127.0.0.1:@{[ $alpha->port ]}/mcp; $proxy }
        location /_b/node  { internal; proxy_pass http://127.0.0.1:@{[ $front->port ]}/mcp; $proxy }
        location /_b/other { internal; proxy_pass http://127.0.0.1:%%PORT2%%/mcp; $proxy }
NGX
# the backend that is killed before a DELETE: nginx's proxy says so
$t->expect_log_error(qr/connect\(\) failed \(111: Connection refused\)/);
$t->start;

my $node_log = $t->prefix . '/logs/server-everything.log';
my $node = start_everything_node(port => $front->port(2), log => $node_log);
my $other_log = $t->prefix . '/logs/other.log';
my $other = start_everything_node(port => $t->port(2), log => $other_log);

sub text { (($_[0] // {})->{content} // [ {} ])->[0]{text} // '' }
sub node_log { upstream_log($front, 'node.log') }

# the newest session the gateway opened at node
sub node_sid {
    my @l = grep { $_->{sid_out} && $_->{body} =~ /"method":"initialize"/ } node_log();
    return @l ? $l[-1]{sid_out} : undef;
}
sub cancels_at_node { grep { $_->{body} =~ /notifications\/cancelled/ } node_log() }
sub alpha_sid {
    my @l = grep { ($_->{rpc} // '') eq 'initialize' && $_->{sid_out} } upstream_log($alpha);
    return @l ? $l[-1]{sid_out} : undef;
}

# a request of the backend's own, in one of its sessions: its HTTP status
sub direct_status {
    my ($port, $sid) = @_;
    my $r = $t->mcp_post($sid, { jsonrpc => '2.0', id => 9, method => 'ping' },
                         port => $port, path => '/mcp', protocol_version => $V, quiet => 1, timeout => 10);
    return $r->{status};
}

# a tools/call on a raw connection of its own, left open: the caller
# closes it (the client goes away) whenever it likes
sub raw_call {
    my ($sid, $id, $name, $args, %o) = @_;
    my %params = (name => $name, arguments => $args);
    $params{_meta} = { progressToken => $o{token} } if defined $o{token};
    return raw_post({ jsonrpc => '2.0', id => $id, method => 'tools/call', params => \%params },
                    "Mcp-Session-Id: $sid\r\nMCP-Protocol-Version: $V\r\n", $o{path});
}

# a POST of $msg with the extra header lines $head; the socket, left open
sub raw_post {
    my ($msg, $head, $path) = @_;
    my $body = McpTest::encode_json($msg);
    my $s = IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $t->port, Proto => 'tcp')
        or die "connect: $!";
    print $s "POST " . ($path // '/mcp') . " HTTP/1.1\r\nHost: localhost\r\n"
           . "Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
           . $head . "Content-Length: " . length($body) . "\r\n\r\n$body";
    return $s;
}

sub no_alerts {
    my ($mark, $what) = @_;
    my $log = $t->log_since($mark);
    ok($log !~ /\[(?:alert|crit|emerg)\]|AddressSanitizer|runtime error/, "$what: no [alert] or [crit]")
        or diag($log);
}

# --- (a) DELETE ends the client's session at each backend ---------------------

{
    my ($sid) = $t->mcp_initialize(protocol_version => $V);
    ok($sid, 'initialize at the gateway');
    my $r = $t->mcp_call($sid, 'tools/call', { name => 'node__echo', arguments => { message => 'hi' } },
                         protocol_version => $V);
    is(text($r), 'Echo: hi', 'a call through the gateway at node');
    my $asid = alpha_sid();
    my $nsid = node_sid();
    ok($asid && $nsid, 'the client has a session at alpha and at node');
    is(direct_status($alpha->port, $asid), 200, '... alpha\'s answers in it');
    is(direct_status($front->port, $nsid), 200, '... and so does node\'s');

    my $mark = $t->log_mark;
    my $t0 = time;
    my $d = $t->mcp_delete($sid, protocol_version => $V);
    my $took = time - $t0;
    is($d->{status}, 200, 'the client DELETEs its session: 200');
    cmp_ok($took, '<', 1, sprintf('... at once (%.3f s)', $took));

    my $ad = wait_upstream($alpha, sub { $_[0]{method} eq 'DELETE' && $_[0]{sid} eq $asid }, 5);
    is($ad && $ad->{status}, '200', 'alpha gets DELETE with its session id: 200');
    # the version a client MUST send on each request after initialize,
    # from whichever worker the DELETE came (the zone keeps what the
    # worker of its initialize learnt)
    is($ad && $ad->{pv}, $V, '... and the version it speaks');
    is(direct_status($alpha->port, $asid), 404, '... and its session is gone: 404');

    ok(McpTest::wait_until(5, sub { (McpTest::_slurp($node_log) // '') =~ /termination request for session \Q$nsid\E/ }),
       'node gets DELETE for its session');
    my $nd = wait_upstream($front, sub { $_[0]{method} eq 'DELETE' && $_[0]{sid} eq $nsid }, 5, 'node.log');
    is($nd && $nd->{status}, '200', '... and answers 200');
    my $st = direct_status($front->port, $nsid);
    # server-everything answers an unknown session 400 (its
    # transports/streamableHttp.js); a 200 is a session left open
    is($st, 400, '... and its session is gone: 400');
    ok($t->log_since($mark) !~ /\Q$asid\E|\Q$nsid\E|\Q$sid\E/, 'no session id in the error log')
        unless $ENV{T88_DEBUG};
    no_alerts($mark, 'DELETE');
}

# --- (b) a backend that is down: the client's DELETE is still prompt ---------

{
    my ($sid) = $t->mcp_initialize(protocol_version => $V, path => '/two');
    ok($sid, 'a session over alpha and another node');
    my $asid = alpha_sid();
    ok(McpTest::wait_until(5, sub { (McpTest::_slurp($other_log) // '') =~ /Session initialized/ }),
       '... with a session at the other node');
    stop_process($other->{pid}, 'KILL');
    my $mark = $t->log_mark;
    my $t0 = time;
    my $d = $t->mcp_delete($sid, protocol_version => $V, path => '/two');
    my $took = time - $t0;
    is($d->{status}, 200, 'the other node killed, the client DELETEs its session: 200');
    cmp_ok($took, '<', 1, sprintf('... at once (%.3f s)', $took));
    ok(wait_upstream($alpha, sub { $_[0]{method} eq 'DELETE' && $_[0]{sid} eq $asid }, 5),
       '... and alpha\'s session ends all the same');
    sleep 0.5;
    my $log = $t->log_since($mark);
    ok($log !~ /\[(?:warn|error|crit|alert)\](?!.*connect\(\) failed).*mcp/,
       'nothing of the module\'s above [notice] (nginx\'s own connect() failure is [error])') or diag($log);
    no_alerts($mark, 'a backend down');
}

# a backend that hangs (stopped): the answer is at once all the same, and
# the backend gets its DELETE when it wakes
{
    my ($sid) = $t->mcp_initialize(protocol_version => $V);
    my $asid = alpha_sid();
    my @stopped = ($alpha->{pid}, $alpha->worker_pids);
    kill 'STOP', @stopped;
    my $t0 = time;
    my $d = $t->mcp_delete($sid, protocol_version => $V, timeout => 10);
    my $took = time - $t0;
    kill 'CONT', @stopped;
    is($d->{status}, 200, 'alpha stopped, the client DELETEs its session: 200');
    cmp_ok($took, '<', 1, sprintf('... at once (%.3f s)', $took));
    ok(wait_upstream($alpha, sub { $_[0]{method} eq 'DELETE' && $_[0]{sid} eq $asid }, 5),
       '... and alpha, woken, ends the session');
}

# --- (c) a client that disconnects mid-call: the backend hears so -------------

my ($sid) = $t->mcp_initialize(protocol_version => $V, capabilities => { sampling => {} });
ok($sid, 'a new session');

# alpha's slow_compute answers with JSON at its end, 10 s from now
{
    my $mark = $alpha->log_mark;
    my $gmark = $t->log_mark;
    my $s = raw_call($sid, 701, 'alpha__slow_compute', { seconds => 10 });
    sleep 1;
    my $t0 = time;
    close $s;
    ok(McpTest::wait_until(5, sub { $alpha->log_since($mark) =~ /call "tools\/call" cancelled by the client/ }),
       sprintf('a JSON call, its client gone: alpha hears the call is cancelled (%.2f s)', time - $t0));
    no_alerts($gmark, '... at the gateway');
}

# node's long-running operation, in the middle of its SSE stream
{
    my $before = scalar cancels_at_node();
    my $s = raw_call($sid, 702, 'node__trigger-long-running-operation', { duration => 10, steps => 10 }, token => 'p');
    my $got = '';
    my $t0 = time;
    while (time < $t0 + 5 && $got !~ /notifications\/progress/) {
        my $buf;
        last unless IO::Select->new($s)->can_read(5);
        sysread($s, $buf, 65536) or last;
        $got .= $buf;
    }
    like($got, qr/notifications\/progress/, 'node\'s call streams its progress to the client');
    close $s;
    McpTest::wait_until(5, sub { cancels_at_node() > $before });
    my @c = cancels_at_node();
    ok(@c > $before, 'the client gone mid-stream: node gets notifications/cancelled');
    is($c[-1]{status}, '202', '... and takes it (202)');
    my ($rid) = ($c[-1]{body} // '') =~ /"requestId":(\d+)/;
    my ($call) = grep { $_->{body} =~ /trigger-long/ && $_->{body} =~ /"id":\Q$rid\E,/ } node_log()
        if defined $rid;
    ok($call, '... naming the gateway\'s id of the call there');
}

# the gateway's cancellation at alpha while alpha waits for sampling
{
    my $mark = $alpha->log_mark;
    my $s = call_stream($t, $sid, 703, 'alpha__test_sampling', { prompt => 'never answered' }, protocol_version => $V);
    my $req;
    while (my $ev = take($s, 10)) {
        my $m = $ev->{json};
        if (ref $m eq 'HASH' && ($m->{method} // '') eq 'sampling/createMessage') { $req = $m; last }
    }
    ok($req, 'alpha asks the client for sampling');
    $s->close;
    ok(McpTest::wait_until(5, sub { $alpha->log_since($mark) =~ /call "tools\/call" cancelled by the client/ }),
       '... the client leaves instead of answering: alpha\'s call is cancelled');
    my $a = answer($t, $sid, $req->{id}, sampling_answer('late'), protocol_version => $V, quiet => 1);
    # the session lives on (only its stream closed): a response is taken,
    # 202, with nobody left to hear it; a 404 would be a session lost
    is($a->{status}, 202, 'a late answer finds nobody: 202, the session still there');
}

# --- (d) attacks ---------------------------------------------------------------

# a DELETE while calls run at both backends
{
    my ($dsid) = $t->mcp_initialize(protocol_version => $V);
    my $asid = alpha_sid();
    my $gmark = $t->log_mark;
    my @s = (raw_call($dsid, 801, 'alpha__slow_compute', { seconds => 5 }),
             raw_call($dsid, 802, 'node__trigger-long-running-operation', { duration => 5, steps => 5 }, token => 'd'));
    sleep 0.5;
    my $t0 = time;
    my $d = $t->mcp_delete($dsid, protocol_version => $V);
    my $took = time - $t0;
    is($d->{status}, 200, 'DELETE while a call runs at each backend: 200');
    cmp_ok($took, '<', 1, sprintf('... at once (%.3f s)', $took));
    ok(wait_upstream($alpha, sub { $_[0]{method} eq 'DELETE' && $_[0]{sid} eq $asid }, 5),
       '... alpha\'s session ends');
    # the calls end with the session
    my $ended = 0;
    for my $s (@s) {
        my $buf = '';
        my $t1 = time;
        while (time < $t1 + 8) {
            last unless IO::Select->new($s)->can_read(8);
            my $n = sysread($s, my $chunk, 65536);
            last unless $n;
            $buf .= $chunk;
        }
        $ended++ if length $buf;
        close $s;
    }
    is($ended, 2, '... and both calls get an answer (their session is gone)');
    no_alerts($gmark, 'DELETE racing calls');
    my $r = $t->mcp_call($sid, 'tools/call', { name => 'node__echo', arguments => { message => 'on' } },
                         protocol_version => $V);
    is(text($r), 'Echo: on', 'the gateway goes on');
}

# one POST, a 2025-03-26 batch, with a call at each backend: both are told
{
    my ($osid) = $t->mcp_initialize(protocol_version => '2025-03-26');
    my $amark = $alpha->log_mark;
    my $before = scalar cancels_at_node();
    my $s = raw_post([
        { jsonrpc => '2.0', id => 851, method => 'tools/call',
          params => { name => 'alpha__slow_compute', arguments => { seconds => 10 } } },
        { jsonrpc => '2.0', id => 852, method => 'tools/call',
          params => { name => 'node__trigger-long-running-operation', arguments => { duration => 10, steps => 10 },
                      _meta => { progressToken => 'b' } } } ],
        "Mcp-Session-Id: $osid\r\nMCP-Protocol-Version: 2025-03-26\r\n");
    sleep 1.5;
    close $s;
    ok(McpTest::wait_until(5, sub { $alpha->log_since($amark) =~ /call "tools\/call" cancelled by the client/ }),
       'a batch of a call to each backend, its client gone: alpha\'s call is cancelled');
    ok(McpTest::wait_until(5, sub { cancels_at_node() > $before }), '... and node\'s');
}

# a stateless (2026-07-28) client leaves: its call, sent to alpha as a
# 2026-07-28 request of its own, is cancelled as that revision does it,
# by the end of the request's connection (alpha logs 499), no
# notification
{
    my $P = 'io.modelcontextprotocol/';
    my $amark = $alpha->log_mark;
    my $s = raw_post({ jsonrpc => '2.0', id => 861, method => 'tools/call',
        params => { name => 'alpha__slow_compute', arguments => { seconds => 10 },
                    _meta => { "${P}protocolVersion" => '2026-07-28', "${P}clientCapabilities" => {},
                               "${P}clientInfo" => { name => 't88', version => '1' } } } },
        "MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\nMcp-Name: alpha__slow_compute\r\n");
    sleep 1.5;
    close $s;
    ok(wait_upstream($alpha, sub { ($_[0]{pv} // '') eq '2026-07-28' && ($_[0]{tool} // '') eq 'slow_compute'
                                    && ($_[0]{status} // '') eq '499' }),
       'a stateless client leaves: alpha\'s request is ended, its cancellation');
    unlike($alpha->log_since($amark), qr/call "tools\/call" cancelled by the client/,
           '... with no notifications/cancelled for a request of no session');
}

# a backend that does not take the cancellation (stopped): the POST goes
# after 3 s all the same
{
    my $gmark = $t->log_mark;
    my $lines = sub { scalar(() = $t->access_log =~ /"POST \/mcp\?stopped HTTP\/1\.1" /g) };
    my $s = raw_call($sid, 871, 'alpha__slow_compute', { seconds => 10 }, path => '/mcp?stopped');
    sleep 1;
    my @stopped = ($alpha->{pid}, $alpha->worker_pids);
    kill 'STOP', @stopped;
    my $before = $lines->();
    my $t0 = time;
    close $s;
    my $ended = McpTest::wait_until(8, sub { $lines->() > $before });
    my $took = time - $t0;
    kill 'CONT', @stopped;
    ok($ended && $took > 2 && $took < 6,
       sprintf('alpha stopped, the client gone: the POST ends after the 3 s wait (%.1f s)', $took));
    no_alerts($gmark, '... at the gateway');
    my $r = $t->mcp_call($sid, 'tools/call', { name => 'alpha__greet', arguments => { name => 'again' } },
                         protocol_version => $V);
    like(text($r), qr/again/, 'alpha, going on, answers through the gateway');
}

# an HTTP/2 client leaves mid-call: its stream is not held, the gateway
# goes on (its backend connection closes, as it did before)
{
    my $gmark = $t->log_mark;
    my $h2lines = sub { scalar(() = $t->access_log =~ /"POST \/mcp HTTP\/2\.0" /g) };
    my $before = $h2lines->();
    my $body = McpTest::encode_json({ jsonrpc => '2.0', id => 881, method => 'tools/call',
                                      params => { name => 'alpha__slow_compute', arguments => { seconds => 10 } } });
    my ($rc, $out) = McpTest::_run_capture(['curl', '-s', '--http2-prior-knowledge', '--max-time', '1.5',
        '-H', 'Content-Type: application/json', '-H', 'Accept: application/json, text/event-stream',
        '-H', "Mcp-Session-Id: $sid", '-H', "MCP-Protocol-Version: $V", '--data-binary', $body,
        'http://127.0.0.1:' . $t->port(3) . '/mcp'], 20);
    ok(McpTest::wait_until(5, sub { $h2lines->() > $before }), 'an HTTP/2 client leaves mid-call: its request ends');
    no_alerts($gmark, '... at the gateway');
    my $r = $t->mcp_call($sid, 'tools/call', { name => 'alpha__greet', arguments => { name => 'h2' } },
                         protocol_version => $V);
    like(text($r), qr/h2/, '... which goes on');
}

# 50 clients that disconnect at once, three times: memory stays bounded
{
    my @sids = map { ($t->mcp_initialize(protocol_version => $V))[0] } 1 .. 5;
    my $gmark = $t->log_mark;
    my $amark = $alpha->log_mark;
    my $node_before = scalar cancels_at_node();
    my @rss;
    # a request's line is written at its end
    my $gone = sub { scalar(() = $t->access_log =~ /"POST \/mcp HTTP\/1\.1" /g) };
    my $closed = 1;
    for my $round (1 .. 3) {
        my $before = $gone->();
        my @s;
        for my $i (0 .. 49) {
            my $sid5 = $sids[$i % 5];
            push @s, $i % 2
                ? raw_call($sid5, 900 + $i, 'alpha__slow_compute', { seconds => 20 })
                : raw_call($sid5, 900 + $i, 'node__trigger-long-running-operation', { duration => 20, steps => 20 },
                           token => "r$i");
        }
        sleep 1.5;
        close $_ for @s;
        $closed = 0 unless McpTest::wait_until(5, sub { $gone->() >= $before + 50 });
        sleep 1;
        push @rss, $t->workers_rss;
    }
    ok($closed, 'each round\'s 50 requests end within 5 s of their clients\' leaving');
    my $n = () = $alpha->log_since($amark) =~ /call "tools\/call" cancelled by the client/g;
    cmp_ok($n, '>=', 70, "150 disconnects, 75 of them at alpha: alpha heard $n cancellations");
    my $m = scalar(cancels_at_node()) - $node_before;
    cmp_ok($m, '>=', 70, "... and 75 at node: node got $m");
    note("worker RSS after each round (KB): @rss");
    cmp_ok($rss[2] - $rss[0], '<', 16384, 'the workers\' memory stays bounded (' . ($rss[2] - $rss[0]) . ' KB more)');
    no_alerts($gmark, '150 disconnects');
    my $r = $t->mcp_call($sid, 'tools/call', { name => 'alpha__greet', arguments => { name => 'x' } },
                         protocol_version => $V);
    like(text($r), qr/x/, 'the gateway still answers');
}

stop_process($node->{pid}, 'TERM');
$t->stop;
$front->stop;
$alpha->stop;
done_testing;
