# mcp_pass validates at the edge as a built-in endpoint does: Origin (403),
# Accept (406), Content-Type (415), MCP-Protocol-Version (400), parse errors
# (-32700), invalid messages (-32600), oversized bodies (413, also chunked
# ones and nginx's own client_max_body_size), missing and unknown session
# ids, other methods (405).  Each gets a JSON-RPC error body and none of
# them reaches the upstream: the upstream's access log does not grow.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use McpTest;
use McpAssert;
use McpGateway;

my $t = McpTest->new(
    ports => 2,
    http  => everything_upstream_http(),
    server => <<'NGX',
        mcp_session gw;
        location = /mcp   { mcp_pass http://127.0.0.1:%%PORT2%%/mcp; }
        location = /small { mcp_pass http://127.0.0.1:%%PORT2%%/mcp; mcp_max_request_size 1k; }
        location = /tiny  { mcp_pass http://127.0.0.1:%%PORT2%%/mcp; client_max_body_size 512; }
        location = /open  { mcp_pass http://127.0.0.1:%%PORT2%%/mcp;
                            mcp_allowed_origins https://app.example.com; }
NGX
)->start;

# nginx's own refusal of a chunked body over client_max_body_size
$t->expect_log_error(qr/client intended to send too large chunked body/);

my ($sid) = $t->mcp_initialize;
my $ping  = '{"jsonrpc":"2.0","id":"pg","method":"ping"}';
my $evil  = 'http://evil.example.com';

sub up_count { scalar(my @l = upstream_log($t)) }

# every previous request has been logged by the upstream
wait_upstream($t, sub { $_[0]{rpc} eq 'notifications/initialized' });
wait_upstream($t, sub { $_[0]{rpc} eq 'initialize' });
my $before = upstream_log_settled($t);

sub chunked_post {
    my ($path, $body, %h) = @_;
    my $chunks = '';
    for (my $i = 0; $i < length $body; $i += 300) {
        my $c = substr($body, $i, 300);
        $chunks .= sprintf("%x\r\n%s\r\n", length $c, $c);
    }
    my %hdr = ('Content-Type' => 'application/json',
               'Accept' => 'application/json, text/event-stream',
               'Mcp-Session-Id' => $sid, 'MCP-Protocol-Version' => '2025-11-25',
               'Transfer-Encoding' => 'chunked', %h);
    my $raw = "POST $path HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n"
            . join('', map { "$_: $hdr{$_}\r\n" } sort keys %hdr) . "\r\n" . $chunks . "0\r\n\r\n";
    my $r = $t->request(raw => $raw);
    McpTest::decode_mcp_response($r);
    return $r;
}

my $big = sub { my ($n) = @_;
    my $head = '{"jsonrpc":"2.0","id":"big","method":"ping","params":{"pad":"';
    return $head . ('x' x ($n - length($head) - 3)) . '"}}' };

# [name, response, status, JSON-RPC code, id]
my @cases = (
    [ 'foreign Origin, POST',       $t->mcp_post($sid, $ping, headers => { Origin => $evil }), 403, -32600 ],
    [ 'foreign Origin, initialize', $t->mcp_post(undef, '{"jsonrpc":"2.0","id":"i","method":"initialize","params":'
                                        . '{"protocolVersion":"2025-11-25","capabilities":{},'
                                        . '"clientInfo":{"name":"x","version":"1"}}}',
                                        headers => { Origin => $evil }), 403, -32600 ],
    [ 'foreign Origin, GET',        $t->request(method => 'GET', path => '/mcp',
                                        headers => { Accept => 'text/event-stream', 'Mcp-Session-Id' => $sid,
                                                     Origin => $evil }), 403, -32600 ],
    [ 'foreign Origin, DELETE',     $t->mcp_delete($sid, headers => { Origin => $evil }), 403, -32600 ],
    [ 'Origin not in mcp_allowed_origins', $t->mcp_post($sid, $ping, path => '/open',
                                        headers => { Origin => 'http://localhost:3000' }), 403, -32600 ],
    [ 'Accept: application/json only', $t->mcp_post($sid, $ping, headers => { Accept => 'application/json' }), 406, -32600 ],
    [ 'Accept: text/event-stream only', $t->mcp_post($sid, $ping, headers => { Accept => 'text/event-stream' }), 406, -32600 ],
    [ 'no Accept',                  $t->mcp_post($sid, $ping, headers => { Accept => undef }), 406, -32600 ],
    [ 'Content-Type: text/plain',   $t->mcp_post($sid, $ping, headers => { 'Content-Type' => 'text/plain' }), 415, -32600 ],
    [ 'no Content-Type',            $t->mcp_post($sid, $ping, headers => { 'Content-Type' => undef }), 415, -32600 ],
    [ 'unsupported MCP-Protocol-Version', $t->mcp_post($sid, $ping, protocol_version => '1999-01-01'), 400, -32600 ],
    [ 'parse error',                $t->mcp_post($sid, '{"jsonrpc":"2.0","id":1,'), 400, -32700 ],
    [ 'parse error: not JSON',      $t->mcp_post($sid, 'hello'), 400, -32700 ],
    [ 'invalid: id true',           $t->mcp_post($sid, '{"jsonrpc":"2.0","id":true,"method":"ping"}'), 400, -32600 ],
    [ 'invalid: jsonrpc 1.0',       $t->mcp_post($sid, '{"jsonrpc":"1.0","id":"v1","method":"ping"}'), 400, -32600, 'v1' ],
    [ 'invalid: method a number',   $t->mcp_post($sid, '{"jsonrpc":"2.0","id":"m","method":42}'), 400, -32600, 'm' ],
    [ 'invalid: a JSON string',     $t->mcp_post($sid, '"ping"'), 400, -32600 ],
    [ 'empty batch',                $t->mcp_post($sid, '[]'), 400, -32600 ],
    [ 'a batch with an invalid message', $t->mcp_post($sid, '[' . $ping . ',{"jsonrpc":"2.0","id":{}}]'), 400, -32600 ],
    [ 'over mcp_max_request_size (Content-Length)', $t->mcp_post($sid, $big->(2048), path => '/small'), 413, -32600 ],
    [ 'over mcp_max_request_size (chunked)', chunked_post('/small', $big->(2048)), 413, -32600 ],
    [ 'over client_max_body_size (chunked)', chunked_post('/tiny', $big->(2048)), 413, -32600 ],
    [ 'no Mcp-Session-Id',          $t->mcp_post(undef, $ping), 400, -32600, 'pg' ],
    [ 'unknown Mcp-Session-Id',     $t->mcp_post('f' x 32, $ping), 404, -32001, 'pg' ],
    [ 'GET without Mcp-Session-Id', $t->request(method => 'GET', path => '/mcp',
                                        headers => { Accept => 'text/event-stream' }), 400, -32600 ],
    [ 'GET, unknown Mcp-Session-Id', $t->request(method => 'GET', path => '/mcp',
                                        headers => { Accept => 'text/event-stream', 'Mcp-Session-Id' => 'f' x 32 }),
                                     404, -32001 ],
    [ 'DELETE, unknown Mcp-Session-Id', $t->mcp_delete('e' x 32), 404, -32001 ],
    [ 'PUT',                        $t->mcp_post($sid, $ping, method => 'PUT'), 405, -32600 ],
);

for my $c (@cases) {
    my ($name, $r, $status, $code, $id) = @$c;
    is_rpc_error_body($r, $status, $code, $id, "$name: $status, JSON-RPC error $code");
}
is($cases[-1][1]{headers}{allow}, 'GET, POST, DELETE', 'PUT: Allow: GET, POST, DELETE');

# a marker that does reach the upstream; then the count
{
    my $r = $t->mcp_post($sid, '{"jsonrpc":"2.0","id":"edge-marker","method":"ping"}');
    is($r->{status}, 200, 'a valid request after them: 200');
    ok(wait_upstream($t, sub { $_[0]{rid} eq 'edge-marker' }), 'it reached the upstream');
    my @new = (upstream_log($t))[$before .. upstream_log_settled($t) - 1];
    is(scalar @new, 1, 'none of the ' . scalar(@cases) . ' refused requests reached the upstream')
        or diag(explain \@new);
}

# the refused requests did not harm the session; allowed origins pass
{
    my $r = $t->mcp_post($sid, $ping, headers => { Origin => 'http://localhost:8080' });
    is($r->{status}, 200, 'a localhost Origin passes (default mcp_allowed_origins)');
    $r = $t->mcp_post($sid, $ping, path => '/open', headers => { Origin => 'https://app.example.com' });
    is($r->{status}, 200, 'an Origin in mcp_allowed_origins passes');
    $r = $t->mcp_post($sid, $ping, headers => { Accept => '*/*' });
    is($r->{status}, 200, 'Accept: */* passes');
    $r = $t->mcp_post($sid, $ping, headers => { 'Content-Type' => 'application/json; charset=utf-8' });
    is($r->{status}, 200, 'Content-Type: application/json; charset=utf-8 passes');
    $r = $t->mcp_post($sid, $big->(1024), path => '/small');
    is($r->{status}, 200, 'a body of exactly mcp_max_request_size passes');
    $r = chunked_post('/mcp', $big->(2048));
    is($r->{status}, 200, 'a chunked body within the limits passes');
    is(($r->{json} // {})->{id}, 'big', '... and is answered by the upstream');
    my $l = wait_upstream($t, sub { $_[0]{rid} eq 'big' && $_[0]{body_len} > 2048 });
    ok($l, 'the upstream got the whole de-chunked body');
}

{
    # GET with an Accept that excludes text/event-stream: a built-in endpoint
    # answers 406; the gateway should too, without asking the upstream
    my $n = upstream_log_settled($t);
    my $r = $t->request(method => 'GET', path => '/mcp',
                        headers => { Accept => 'application/json', 'Mcp-Session-Id' => $sid,
                                     'MCP-Protocol-Version' => '2025-11-25' });
    is_rpc_error_body($r, 406, -32600, undef, 'GET with Accept: application/json: 406');
    my $r2 = $t->mcp_post($sid, '{"jsonrpc":"2.0","id":"edge-marker2","method":"ping"}');
    wait_upstream($t, sub { $_[0]{rid} eq 'edge-marker2' });
    my $now = upstream_log_settled($t);
    {
        is($now, $n + 1, '... answered at the edge (not by the upstream)');
    }
}

$t->stop;
done_testing;
