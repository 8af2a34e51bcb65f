# Attacks on the gateway code of the last session, kept as tests: keyed
# session ids (mcp_session_key), the mcp_affinity balancer, and the
# aggregation of several MCP servers (mcp_backend).
#
# (1) Keyed ids: truncated, padded, re-spelled, oversized, non-base64 and
#     huge ids, two Mcp-Session-Id headers, an id past its lifetime, an id
#     whose replica left the upstream block or is marked down on reload:
#     each a JSON-RPC error with the request's id, never a 5xx page; and
#     neither the keyed id nor the replica's own id in a debug-level
#     error.log line of the module's.
# (2) An upstream's reply framing and headers: a Content-Length beside
#     "Transfer-Encoding: chunked" (the bytes after the length were the
#     client's next response on its keep-alive connection), a coding
#     that only holds "chunked", two Mcp-Session-Id headers at initialize
#     (the client got an empty one beside the keyed one), a replica's id
#     too long to seal: a JSON-RPC error, and nothing the upstream wrote
#     after the length reaches the client; an interim 103 or 101 before
#     the reply (the client read the upstream's next response, raw, as
#     its answer, and the one after as the answer to its next request).
#     A 200 HTML page (relayed, with its Set-Cookie), a 307 to an
#     address of the upstream's side (relayed): a JSON-RPC error; no
#     upstream's Set-Cookie reaches the client.
#     mcp_pass without a URI sent the client's spelling of the URI:
#     "/admin/..%2Fpub" chose location /pub, and an upstream routing
#     the raw text read /admin.
# (3) Aggregation (mcp_backend): a backend's cursor holding "]],[[";
#     forged merged cursors; a backend answering a batch; its Set-Cookie;
#     30 sessions' backend ids filling a 32k zone (older ones evicted,
#     no initialize fails); bad prefixes at nginx -t; a backend's
#     protocolVersion holding CR LF, which became a header line of its
#     own in the gateway's next requests to it (through proxy_pass:
#     request smuggling; fixed in the subrequest's headers, and a
#     backend's version must be a date); a prefix that ends with a part
#     of the separator ("a_" beside "a" with "__": one name for two
#     backends' tools, the call went to the first; now nginx -t refuses
#     it); a backend's X-Accel-Redirect followed by proxy_pass (an
#     internal location's reply was taken as the backend's; now refused);
#     a backend's answer to another id (was taken); one client's
#     too-large answer (marked the backend down for every client).

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Time::HiRes qw(sleep);
use MIME::Base64 ();
use McpTest timeout => 120;
use McpAssert;
use McpGateway qw(fake_upstream);

my $V25 = '2025-11-25';

# --- a fake upstream: what it answers depends on the path and the method ------------

sub reply {
    my ($c, $json, %o) = @_;
    my $status = $o{status} // 200;
    my $h = join '', map { "$_->[0]: $_->[1]\r\n" } @{ $o{headers} // [] };
    if (!defined $json) {
        print $c "HTTP/1.1 $status Accepted\r\n${h}Content-Length: 0\r\nConnection: close\r\n\r\n";
        return;
    }
    print $c "HTTP/1.1 $status OK\r\nContent-Type: application/json\r\n$h"
           . "Content-Length: " . length($json) . "\r\nConnection: close\r\n\r\n$json";
}

sub init_result {
    McpTest::encode_json({ jsonrpc => '2.0', id => $_[0], result => {
        protocolVersion => $V25, capabilities => { tools => {} },
        serverInfo => { name => 'fake', version => '1' } } });
}

# what the upstream wrote after the length it gave: a response of its own
my $INJECTED = '{"jsonrpc":"2.0","id":"mine","result":{"injected":true}}';
my $SMUGGLE = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
            . "Content-Length: " . length($INJECTED) . "\r\n\r\n$INJECTED";

my $fake = fake_upstream(sub {
    my ($c, $head, $body) = @_;
    my ($path) = $head =~ m{^\S+ (\S+)};
    my $m = eval { McpTest::decode_json($body) } // {};
    my $method = $m->{method} // '';
    my $id = $m->{id};

    if ($path eq '/mcp/twosid' && $method eq 'initialize') {
        return reply($c, init_result($id), headers => [ [ 'Mcp-Session-Id', 'up-1' ],
                                                        [ 'Mcp-Session-Id', 'up-2' ] ]);
    }
    if ($path eq '/mcp/hugesid' && $method eq 'initialize') {
        return reply($c, init_result($id), headers => [ [ 'Mcp-Session-Id', 'h' x 1500 ] ]);
    }
    if ($path =~ m{^/mcp/} && $method eq 'initialize') {
        return reply($c, init_result($id), headers => [ [ 'Mcp-Session-Id', 'up-1' ] ]);
    }
    if ($path =~ m{^/mcp/} && $method eq 'notifications/initialized') {
        return reply($c, undef, status => 202);
    }
    if ($path eq '/mcp/frame' && $method eq 'ping') {
        # a Content-Length for the first response, chunks holding two
        my $json = McpTest::encode_json({ jsonrpc => '2.0', id => $id, result => {} });
        my $payload = $json . $SMUGGLE;
        print $c "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
               . "Content-Length: " . length($json) . "\r\nTransfer-Encoding: chunked\r\n\r\n"
               . sprintf("%x\r\n%s\r\n0\r\n\r\n", length $payload, $payload);
        return;
    }
    if ($path eq '/mcp/frame' && ($method eq 'resources/list' || $method eq 'prompts/list')) {
        # an interim response, then one never looked at, then another
        my $json = McpTest::encode_json({ jsonrpc => '2.0', id => $id, result => { resources => [] } });
        my $interim = $method eq 'resources/list' ? "103 Early Hints\r\nLink: </x>"
                    : "101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade";
        print $c "HTTP/1.1 $interim\r\n\r\n"
               . "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nMcp-Session-Id: raw-replica-id\r\n"
               . "Content-Length: " . length($json) . "\r\n\r\n$json$SMUGGLE";
        return;
    }
    if ($path eq '/mcp/frame' && $method eq 'logging/setLevel') {
        my $html = '<html><script>alert(document.domain)</script></html>';
        print $c "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nSet-Cookie: sid=upstream\r\n"
               . "Content-Length: " . length($html) . "\r\nConnection: close\r\n\r\n$html";
        return;
    }
    if ($path eq '/mcp/frame' && $method eq 'completion/complete') {
        print $c "HTTP/1.1 307 Temporary Redirect\r\nLocation: http://10.1.2.3:8000/mcp/\r\n"
               . "Content-Length: 0\r\nConnection: close\r\n\r\n";
        return;
    }
    if ($path eq '/mcp/frame' && $method eq 'resources/templates/list') {
        return reply($c, McpTest::encode_json({ jsonrpc => '2.0', id => $id, result => { resourceTemplates => [] } }),
                     headers => [ [ 'Set-Cookie', 'sid=upstream; Path=/' ] ]);
    }
    if ($path eq '/mcp/frame' && $method eq 'tools/list') {
        my $json = McpTest::encode_json({ jsonrpc => '2.0', id => $id, result => { tools => [] } });
        print $c "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
               . "Transfer-Encoding: gzip, chunked\r\nConnection: close\r\n\r\n"
               . sprintf("%x\r\n%s\r\n0\r\n\r\n", length $json, $json);
        return;
    }

    # mcp_pass without a URI: the path the upstream reads
    if ($path =~ m{^/(?:pub|admin)}) {
        return reply($c, McpTest::encode_json({ jsonrpc => '2.0', id => $id,
            error => { code => -32601, message => "path $path" } }));
    }

    # aggregation backends: /agg/NAME
    if ($path =~ m{^/agg/(\w+)}) {
        my $who = $1;
        if ($who eq 'inj' && $method eq 'initialize') {
            # a protocol version with a header line of its own in it
            return reply($c, McpTest::encode_json({ jsonrpc => '2.0', id => $id, result => {
                protocolVersion => "1\r\nX-Injected: yes", capabilities => { tools => {} },
                serverInfo => { name => 'inj', version => '1' } } }), headers => [ [ 'Mcp-Session-Id', 's-inj' ] ]);
        }
        if ($who eq 'inj' && $method eq 'tools/list') {
            my $smuggled = $head =~ /^X-Injected:/mi ? 'smuggled' : 'clean';
            return reply($c, McpTest::encode_json({ jsonrpc => '2.0', id => $id, result => {
                tools => [ { name => $smuggled, inputSchema => { type => 'object' } } ] } }));
        }
        my @sid = ([ 'Mcp-Session-Id', $who =~ /^big/ ? "s-$who-" . int(rand 1e9) . ('z' x 1000) : "s-$who" ]);
        return reply($c, init_result($id), headers => \@sid) if $method eq 'initialize';
        return reply($c, undef, status => 202) if $method eq 'notifications/initialized';
        if ($method eq 'tools/list' && $who eq 'batch') {
            return reply($c, McpTest::encode_json([ { jsonrpc => '2.0', id => $id,
                result => { tools => [ { name => 'b', inputSchema => { type => 'object' } } ] } } ]));
        }
        if ($method eq 'tools/list' && $who eq 'cookie') {
            # a cursor that would close the merged cursor's JSON, were it pasted in
            my $cur = $m->{params}{cursor};
            return reply($c, McpTest::encode_json({ jsonrpc => '2.0', id => $id, result => {
                tools => [ { name => defined $cur ? "got $cur" : 'c', inputSchema => { type => 'object' } } ],
                (defined $cur ? () : (nextCursor => '"]],[[2,"evil')) } }));
        }
        if ($method eq 'tools/list') {
            my %tools = (a => '_x', a_ => 'x', xar => 'plain', wrongid => 'w', cookie => 'c', big1 => 't1', big2 => 't2',
                         big => 'huge');
            my @h = ([ 'Set-Cookie', 'backend=secret' ]);
            push @h, [ 'X-Accel-Redirect', '/_secret' ] if $who eq 'xar';
            return reply($c, McpTest::encode_json({ jsonrpc => '2.0', id => $id, result => {
                tools => [ { name => $tools{$who} // 'none', inputSchema => { type => 'object' } } ],
                ($who eq 'a' ? (nextCursor => 'A-PAGE-2') : ()) } }), headers => \@h);
        }
        if ($method eq 'tools/call' && $who eq 'big') {
            # a tool whose answer is larger than the location's bound
            return reply($c, McpTest::encode_json({ jsonrpc => '2.0', id => $id,
                result => { content => [ { type => 'text', text => 'y' x 4096 } ] } }));
        }
        if ($method eq 'tools/call') {
            return reply($c, McpTest::encode_json({ jsonrpc => '2.0',
                id => $who eq 'wrongid' ? 99 : $id,
                result => { content => [ { type => 'text', text => "backend $who ran \"$m->{params}{name}\"" } ] } }));
        }
        return reply($c, McpTest::encode_json({ jsonrpc => '2.0', id => $id,
                                               error => { code => -32601, message => 'no' } }));
    }
    reply($c, McpTest::encode_json({ jsonrpc => '2.0', id => $id, error => { code => -32601, message => 'no' } }));
});
my $F = $fake->{port};

# --- replicas and the gateway --------------------------------------------------------

my @rep = map {
    McpTest->new(workers => 1, server => <<'NGX')->start
        location = /mcp { mcp on; mcp_builtin everything; }
NGX
} 0 .. 1;
my @addr = map { '127.0.0.1:' . $_->port } @rep;

my $gw;
my $keys = McpTest->new(server => "");
my $key = $keys->write_file('conf/s.key', 'attack-key-' . ('k' x 40) . "\n");

sub upstream_block {
    my (@servers) = @_;
    return "    upstream replicas {\n        mcp_affinity;\n"
         . join('', map { "        server $_;\n" } @servers)
         . "        keepalive 4;\n    }\n"
         . "    mcp_session_zone zone=agg:1m;\n"
         . "    mcp_session_zone zone=fill:32k;\n"
         . "    log_format up '\$http_x_tag \$upstream_addr';\n";
}

my $server_conf = <<"NGX";
        mcp_session agg;
        access_log %%PREFIX%%/logs/up.log up;
        location = /mcp     { mcp_pass http://replicas/mcp; mcp_session_key $key; }
        location = /short   { mcp_pass http://replicas/mcp; mcp_session_key $key;
                              mcp_session_key_lifetime 1s; }
        location /pub       { mcp_pass http://127.0.0.1:$F; }
        location /admin     { return 403; }
        location = /frame   { mcp_pass http://127.0.0.1:$F/mcp/frame; mcp_session_key $key; }
        location = /twosid  { mcp_pass http://127.0.0.1:$F/mcp/twosid; mcp_session_key $key; }
        location = /hugesid { mcp_pass http://127.0.0.1:$F/mcp/hugesid; mcp_session_key $key; }

        location = /agg {
            mcp_backend xar     /_b/xar;
            mcp_backend cookie  /_b/cookie;
            mcp_backend wrongid /_b/wrongid;
            mcp_backend batch   /_b/batch;
            mcp_backend_retry 1s;
        }
        location = /fill {
            mcp_backend big1 /_b/big1;
            mcp_backend big2 /_b/big2;
            mcp_session fill;
        }
        location = /small {
            mcp_backend cookie /_b/cookie;
            mcp_backend big    /_b/big;
            mcp_backend_max_size 2k;
            mcp_backend_retry 30s;
        }
        location = /inj { mcp_backend inj /_b/inj; }
        location = /_b/inj     { internal; proxy_pass http://127.0.0.1:$F/agg/inj; }
        location = /_b/big     { internal; proxy_pass http://127.0.0.1:$F/agg/big; }
        location = /_b/batch   { internal; proxy_pass http://127.0.0.1:$F/agg/batch; }
        location = /_b/big1    { internal; proxy_pass http://127.0.0.1:$F/agg/big1; }
        location = /_b/big2    { internal; proxy_pass http://127.0.0.1:$F/agg/big2; }
        location = /_b/xar     { internal; proxy_pass http://127.0.0.1:$F/agg/xar; }
        location = /_b/cookie  { internal; proxy_pass http://127.0.0.1:$F/agg/cookie; }
        location = /_b/wrongid { internal; proxy_pass http://127.0.0.1:$F/agg/wrongid; }
        location = /_secret    { internal; default_type application/json;
                                 return 200 '{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"internal_only","inputSchema":{"type":"object"}}]}}'; }
NGX

$gw = McpTest->new(workers => 2, log_level => 'debug', http => upstream_block(@addr),
                   server => $server_conf);
# the upstream failures provoked below, each told once
$gw->expect_log_error(qr/upstream sent "Transfer-Encoding|upstream sent "Content-Length" and "Transfer-Encoding" headers at the same time|upstream sent unknown "Transfer-Encoding"|upstream sent an interim response|header for \/_b\/inj has a control character|upstream sent a redirect|upstream answered 200 without|upstream sent the "Mcp-Session-Id" header twice|is too long for a keyed session id|no live upstreams|a backend's reply is refused: it comes from "\/_secret" after an internal redirect/);
$gw->start;

sub init_at {
    my ($path, %o) = @_;
    return McpGateway::try_initialize($gw, path => $path, protocol_version => $V25, %o);
}

sub post_at {
    my ($path, $sid, $msg, %o) = @_;
    return $gw->mcp_post($sid, $msg, path => $path, protocol_version => $V25, %o);
}

# --- (1) keyed session ids ------------------------------------------------------------

my ($sid) = init_at('/mcp');
ok(defined $sid && $sid =~ /^[A-Za-z0-9_-]+$/, 'keyed initialize: a base64url session id');

{
    my $r = post_at('/mcp', $sid, { jsonrpc => '2.0', id => 'ok', method => 'ping' });
    is($r->{status}, 200, 'the keyed id opens: ping 200');

    my %bad = (
        'one character short'           => substr($sid, 0, -1),
        'four characters short'         => substr($sid, 0, -4),
        'the last character re-spelled' => substr($sid, 0, -1) . (substr($sid, -1) eq 'A' ? 'B' : 'A'),
        'padded with "="'               => "$sid=",
        'standard base64 ("+" for "-")' => ($sid =~ tr/-_/+\//r) . ($sid =~ /[-_]/ ? '' : '+'),
        'a "!" inside'                  => substr($sid, 0, 10) . '!' . substr($sid, 11),
        'twice itself'                  => $sid . $sid,
        'valid base64url, 2049 bytes'   => 'A' x 2049,
        'valid base64url, 6000 bytes'   => 'QUFB' x 1500,
        'one byte'                      => 'A',
    );
    for my $what (sort keys %bad) {
        my $r = post_at('/mcp', $bad{$what}, { jsonrpc => '2.0', id => "bad-$what", method => 'ping' });
        is_rpc_error_body($r, 404, -32001, "bad-$what", "an id $what: 404, -32001, the request's id");
    }

    # a GET stream and a DELETE with a forged id
    my $g = $gw->mcp_get_stream('A' x 120, path => '/mcp', protocol_version => $V25, quiet => 1);
    my $gs = $g->status;
    my $gb = $g->read_body // '';
    $g->close;
    ok($gs == 404 && $gb =~ /"code":-32001/, "GET with a forged keyed id: 404, -32001 ($gs)");
    my $d = $gw->mcp_delete('A' x 120, path => '/mcp', protocol_version => $V25);
    McpTest::decode_mcp_response($d);
    is_rpc_error_body($d, 404, -32001, undef, 'DELETE with a forged keyed id: 404, -32001');

    # two Mcp-Session-Id headers: the gateway reads the first, nothing else
    my $r2 = post_at('/mcp', undef, { jsonrpc => '2.0', id => 'two-1', method => 'ping' },
                     headers => { 'Mcp-Session-Id' => [ 'A' x 120, $sid ] });
    is_rpc_error_body($r2, 404, -32001, 'two-1', 'two Mcp-Session-Id headers, a forged one first: 404');
}

# an id past mcp_session_key_lifetime
{
    my ($s) = init_at('/short');
    my $r = post_at('/short', $s, { jsonrpc => '2.0', id => 'fresh', method => 'ping' });
    is($r->{status}, 200, 'mcp_session_key_lifetime 1s: the fresh id opens');
    sleep 2.2;
    $r = post_at('/short', $s, { jsonrpc => '2.0', id => 'stale', method => 'ping' });
    is_rpc_error_body($r, 404, -32001, 'stale', '... and 2 s later: 404, -32001');
    # an id is sealed for its location (issue 35): one key, one upstream,
    # and /mcp still does not take /short's
    $r = post_at('/mcp', $s, { jsonrpc => '2.0', id => 'elsewhere', method => 'ping' });
    is_rpc_error_body($r, 404, -32001, 'elsewhere', '... nor does /mcp (the same key and upstream): '
       . 'an id is bound to its location');
}

# the session id at debug level: in nginx's own header lines only
{
    my $log = $gw->error_log;
    # nginx's own: a request header's line, and the response header it
    # logs whole (its lines after the first have no time stamp)
    my @ours = grep { index($_, $sid) >= 0 && m{^\d{4}/} && !/http header: "Mcp-Session-Id: / }
               split /\n/, $log;
    is_deeply(\@ours, [], 'debug error.log: the keyed id in none of the module\'s lines, only in '
              . 'nginx\'s own header dumps')
        or diag(join "\n", @ours[0 .. ($#ours < 4 ? $#ours : 4)]);
}

# sessions on both replicas, then each one's replica leaves: down, removed
{
    my (%on, $n);
    while (keys(%on) < 2 && $n++ < 12) {
        my ($s) = init_at('/mcp', headers => { 'X-Tag' => "r$n" });
        my $line;
        McpTest::wait_until(3, sub {
            ($line) = grep { /^r$n / } split /\n/, McpTest::_slurp($gw->prefix . '/logs/up.log') // '';
            defined $line;
        });
        my ($up) = ($line // '') =~ /^\S+ (\S+)$/;
        for my $i (0 .. 1) { $on{$i} //= $s if defined $up && $up eq $addr[$i] }
    }
    # round robin over two replicas: 12 initializes land on both, or the
    # balancing is broken (a skip here would hide it)
    ok(keys(%on) == 2, "sessions on both replicas (in " . ($n > 12 ? 12 : $n) . " initializes)")
        or diag('on: ' . join(', ', sort keys %on));
    if (keys(%on) == 2) {
        ok($gw->reload(http => upstream_block("$addr[0] down", $addr[1])), 'reload: replica 0 marked down');
        my $r = post_at('/mcp', $on{0}, { jsonrpc => '2.0', id => 'down', method => 'ping' });
        is_rpc_error_body($r, 404, -32001, 'down', 'a session on the replica marked down: 404, -32001');
        $r = post_at('/mcp', $on{1}, { jsonrpc => '2.0', id => 'up', method => 'ping' });
        is($r->{status}, 200, '... one on the other replica goes on');
        ok($gw->reload(http => upstream_block($addr[1])), 'reload: replica 0 removed');
        $r = post_at('/mcp', $on{0}, { jsonrpc => '2.0', id => 'gone', method => 'ping' });
        is_rpc_error_body($r, 404, -32001, 'gone', 'a session on the removed replica: 404, -32001');
        $gw->reload(http => upstream_block(@addr));
    }
}

# --- (2) an upstream's framing and headers ------------------------------------------

{
    my ($s) = init_at('/frame');
    ok($s, 'a session at the fake upstream');

    # the client's keep-alive connection: its next answer is its own
    my $conn = $gw->connect;
    my $r = post_at('/frame', $s, { jsonrpc => '2.0', id => 'p-1', method => 'ping' },
                    conn => $conn, keepalive => 1);
    is_rpc_error_body($r, 502, -32000, 'p-1',
                      'a reply with Content-Length and chunked: 502, a JSON-RPC error with the id')
        or diag McpTest::explain_response($r);
    my $next = $r->{conn} // $gw->connect;
    my $r2 = post_at('/frame', $s, { jsonrpc => '2.0', id => 'mine', method => 'tools/list' },
                     conn => $next, keepalive => 0, quiet => 1);
    unlike($r2->{body}, qr/injected/, '... and the client\'s next request on the connection gets no '
           . 'bytes the upstream wrote after the length');

    for my $m ('resources/list', 'prompts/list') {
        my $r = post_at('/frame', $s, { jsonrpc => '2.0', id => "i-$m", method => $m },
                        conn => $gw->connect, keepalive => 1, quiet => 1);
        my $what = $m eq 'resources/list' ? '103 Early Hints' : '101 Switching Protocols';
        is_rpc_error_body($r, 502, -32000, "i-$m", "an interim $what before the reply: 502, a JSON-RPC error")
            or diag McpTest::explain_response($r);
        unlike($r->{raw}, qr/raw-replica-id/, '... the replica\'s own session id does not reach the client');
        my $r2 = post_at('/frame', $s, { jsonrpc => '2.0', id => 'mine', method => 'ping' },
                         conn => $r->{conn} // $gw->connect, keepalive => 0, quiet => 1);
        unlike($r2->{body}, qr/injected/, '... nor, as the next answer on the connection, what followed it');
    }

    $r = post_at('/frame', $s, { jsonrpc => '2.0', id => 'html', method => 'logging/setLevel',
                                 params => { level => 'info' } });
    is_rpc_error_body($r, 502, -32000, 'html', 'a 200 text/html page for a request: 502, a JSON-RPC error');
    ok(!$r->{headers}{'set-cookie'}, '... and its Set-Cookie is not relayed');
    $r = post_at('/frame', $s, { jsonrpc => '2.0', id => 'redir', method => 'completion/complete',
                                 params => { ref => { type => 'ref/prompt', name => 'x' }, argument => { name => 'a', value => 'b' } } });
    is_rpc_error_body($r, 502, -32000, 'redir', 'a 307 to an address of the upstream\'s side: 502, a JSON-RPC error');
    ok(!$r->{headers}{location}, '... and its Location is not relayed');
    $r = post_at('/frame', $s, { jsonrpc => '2.0', id => 'ck', method => 'resources/templates/list' });
    ok($r->{status} == 200 && !$r->{headers}{'set-cookie'}, 'a good reply\'s Set-Cookie is not relayed either');

    $r = post_at('/frame', $s, { jsonrpc => '2.0', id => 'te', method => 'tools/list' });
    is_rpc_error_body($r, 502, -32000, 'te', '"Transfer-Encoding: gzip, chunked": 502, a JSON-RPC error');
}

{
    my $r = post_at('/twosid', undef, { jsonrpc => '2.0', id => 'i2', method => 'initialize',
        params => { protocolVersion => $V25, capabilities => {}, clientInfo => { name => 't', version => '1' } } });
    my @sids = grep { lc $_->[0] eq 'mcp-session-id' } @{ $r->{header_list} };
    ok(@sids <= 1, 'an initialize reply with two Mcp-Session-Id headers: at most one reaches the client ('
       . join(', ', map { "\"$_->[1]\"" } @sids) . ')');
    is_rpc_error_body($r, 502, -32000, 'i2', '... it is refused: 502, a JSON-RPC error with the id');

    $r = post_at('/hugesid', undef, { jsonrpc => '2.0', id => 'i3', method => 'initialize',
        params => { protocolVersion => $V25, capabilities => {}, clientInfo => { name => 't', version => '1' } } });
    is_rpc_error_body($r, 502, -32000, 'i3', 'a replica\'s 1500-byte session id under a key: 502, a JSON-RPC error');
    ok(!$r->{headers}{'mcp-session-id'}, '... and no session id');
}

# mcp_pass without a URI: the upstream reads the URI the location was
# chosen by, not the client's spelling of it
for my $case ([ '/admin/..%2Fpub', '/pub' ], [ '/admin/%2E%2E/pub', '/pub' ], [ '/admin/../pub', '/pub' ],
              [ '/pub/x/../y', '/pub/y' ], [ '/pub/a%20b?q=%41&r', '/pub/a%20b?q=%41&r' ]) {
    my $r = post_at($case->[0], undef, { jsonrpc => '2.0', id => 'u', method => 'initialize',
        params => { protocolVersion => $V25, capabilities => {}, clientInfo => { name => 't', version => '1' } } });
    my ($m) = @{ $r->{messages} // [] };
    is(($m->{error}{message} // '') =~ s/^path //r, $case->[1],
       "mcp_pass without a URI, \"$case->[0]\": the upstream reads \"$case->[1]\"");
}

# --- (3) aggregation ---------------------------------------------------------------

{
    my ($s) = init_at('/agg');
    ok($s, 'aggregate: a session over three fake backends');
    my ($list, $lr) = $gw->mcp_request($s, 'tools/list', {}, path => '/agg');
    my @names = map { $_->{name} } @{ $list->{result}{tools} // [] };
    {
        ok(!(grep { /internal_only/ } @names), 'a backend\'s X-Accel-Redirect does not make an internal '
           . 'location\'s reply its own (' . join(' ', @names) . ')');
    }
    ok((grep { $_ eq 'cookie__c' } @names) && (grep { $_ eq 'wrongid__w' } @names),
       'the other backends\' tools are listed');
    ok(!(grep { /^batch/ } @names), 'a backend answering a batch is left out');
    ok(!$lr->{headers}{'set-cookie'}, 'a backend\'s Set-Cookie does not reach the client');

    # a backend's cursor is a string in the merged one, never its syntax
    my $next = $list->{result}{nextCursor} // '';
    my $pairs = eval { McpTest::decode_json(MIME::Base64::decode_base64url($next)) };
    is_deeply($pairs, [ [ 1, '"]],[[2,"evil' ] ], 'a backend cursor with "]],[[" in it: one pair in the '
              . 'merged cursor, its text verbatim');
    my ($p2) = $gw->mcp_request($s, 'tools/list', { cursor => $next }, path => '/agg');
    is_deeply([ map { $_->{name} } @{ $p2->{result}{tools} // [] } ], [ 'cookie__got "]],[[2,"evil' ],
              '... page 2 asks that backend alone, with its cursor as it gave it');

    my ($call) = $gw->mcp_request($s, 'tools/call', { name => 'wrongid__w', arguments => {} }, path => '/agg');
    my $text = ($call->{result}{content} // [ {} ])->[0]{text} // '';
    unlike($text, qr/backend wrongid ran/,
           'a backend answering id 99 to the gateway\'s request is not relayed as the answer (' . $text . ')');
    ok($call->{result}{isError}, '... the call is a tool error');
}

# forged merged cursors: each -32602 with the request's id
{
    my ($s) = init_at('/agg');
    my $b64 = sub { MIME::Base64::encode_base64url($_[0]) };
    my %forged = (
        'index out of range'  => $b64->('[[9,"x"]]'),
        'index twice'         => $b64->('[[0,"x"],[0,"y"]]'),
        'index 0.5'           => $b64->('[[0.5,"x"]]'),
        'index -1'            => $b64->('[[-1,"x"]]'),
        'cursor not a string' => $b64->('[[0,{}]]'),
        'an empty array'      => $b64->('[]'),
        'a member twice'      => $b64->('{"a":1,"a":2}'),
        'not base64'          => '!!!',
        'huge'                => 'A' x 100000,
        'a number'            => 7,
    );
    for my $what (sort keys %forged) {
        my ($m) = $gw->mcp_request($s, 'tools/list', { cursor => $forged{$what} }, path => '/agg',
                                   id => "cur-$what");
        ok($m && $m->{error} && $m->{error}{code} == -32602 && $m->{id} eq "cur-$what",
           "a forged cursor ($what): -32602 with the request's id");
    }
}

# backend sessions filling a 32k zone: older sessions go, no initialize fails
{
    my ($ok, $first, $last) = (0);
    for my $i (1 .. 30) {
        my $r = post_at('/fill', undef, { jsonrpc => '2.0', id => "f-$i", method => 'initialize',
            params => { protocolVersion => $V25, capabilities => {}, clientInfo => { name => 't', version => '1' } } });
        if ($r->{status} == 200 && $r->{headers}{'mcp-session-id'}) {
            $ok++;
            $last = $r->{headers}{'mcp-session-id'};
            $first //= $last;
        }
        else { diag McpTest::explain_response($r) if $ok == $i - 1 }
    }
    is($ok, 30, 'thirty sessions over two backends with 1 KB ids each, in a 32k zone: every initialize answered');
    post_at('/fill', $last, { jsonrpc => '2.0', method => 'notifications/initialized' });
    my ($list) = $gw->mcp_request($last, 'tools/list', {}, path => '/fill', protocol_version => $V25);
    is_deeply([ sort map { $_->{name} } @{ $list->{result}{tools} // [] } ], [ 'big1__t1', 'big2__t2' ],
              '... and the last one lists both backends\' tools');
    my $r = post_at('/fill', $first, { jsonrpc => '2.0', id => 'first', method => 'ping' });
    is_rpc_error_body($r, 404, -32001, 'first', '... the first one made room (evicted): 404, -32001');
}

# one client's call whose answer is too large: the backend is not taken
# from the other clients
{
    my ($a) = init_at('/small');
    my ($call) = $gw->mcp_request($a, 'tools/call', { name => 'big__huge', arguments => {} },
                                  path => '/small', protocol_version => $V25);
    ok($call->{result} && $call->{result}{isError}, 'a tool answer over mcp_backend_max_size: a tool error');
    my ($b) = init_at('/small');
    my ($list) = $gw->mcp_request($b, 'tools/list', {}, path => '/small', protocol_version => $V25);
    my @names = map { $_->{name} } @{ $list->{result}{tools} // [] };
    ok((grep { $_ eq 'big__huge' } @names), 'another client, just after, still gets that backend\'s tools ('
       . join(' ', @names) . ')');
}

# a backend's protocol version with CR LF in it: no header line of its own
# in the gateway's next requests to it
{
    my ($s) = init_at('/inj');
    my ($list) = $gw->mcp_request($s, 'tools/list', {}, path => '/inj', protocol_version => $V25);
    my @names = map { $_->{name} } @{ $list->{result}{tools} // [] };
    ok(!(grep { /smuggled/ } @names), 'a backend\'s "protocolVersion" of "1\\r\\nX-Injected: yes" does not '
       . 'add a header line to the requests it gets (' . join(' ', @names) . ')');
}

# prefixes nginx -t refuses (an empty one is allowed, once a location:
# t/aggregate_anybackend.t)
for my $case ([ 'prefix=a__b', 'a prefix with the separator' ],
              [ 'prefix=a.b', 'a prefix with a dot' ], [ 'prefix=' . ('p' x 65), 'a 65-character prefix' ]) {
    my $t = McpTest->new(workers => 1, http => 'mcp_session_zone zone=c:1m;', server => <<"NGX");
        mcp_session c;
        location = /mcp { mcp_backend a /_b/a $case->[0]; mcp_backend b /_b/b; }
        location = /_b/a { internal; return 404; }
        location = /_b/b { internal; return 404; }
NGX
    my ($rc, $out) = $t->nginx_t;
    ok($rc != 0 && $out =~ /\[emerg\].*(?:prefix|parameter)/, "nginx -t refuses $case->[1]");
}

# a prefix ending with part of the separator: two backends, one name
{
    my $conf = <<"NGX";
        location = /mcp {
            mcp_backend a  /_b/a;
            mcp_backend a_ /_b/a_;
        }
        location = /_b/a  { internal; proxy_pass http://127.0.0.1:$F/agg/a; }
        location = /_b/a_ { internal; proxy_pass http://127.0.0.1:$F/agg/a_; }
NGX
    my $t = McpTest->new(workers => 1, http => 'mcp_session_zone zone=c:1m;',
                         server => "        mcp_session c;\n$conf");
    my ($rc, $out) = $t->nginx_t;
    isnt($rc, 0, 'nginx -t refuses mcp_backend prefixes "a" and "a_" with the separator "__"');
    like($out, qr/\[emerg\].*mcp_backend "a_" \("a___"\) begin with those of "a" \("a__"\)/,
         '... saying which two, and why');
}

$gw->stop;
done_testing;
