# Errors: every JSON-RPC error reply carries error.data.correlationId, the
# same id is in exactly one error.log line ([info] for client errors,
# [error] for internal ones), replies carry no internal detail; oversized
# bodies get 413 with a JSON-RPC error.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use McpTest;
use McpAssert;

my $t = McpTest->new(
    http   => 'mcp_session_zone zone=small:32k timeout=1h;',
    server => <<'NGX',
        location = /mcp   { mcp on; mcp_builtin everything; }
        location = /small { mcp on; mcp_builtin everything; mcp_session small;
                            mcp_max_request_size 1k; }
NGX
)->start;
my ($sid) = $t->mcp_initialize;
my ($ssid) = $t->mcp_initialize(path => '/small');

my $ping = '{"jsonrpc":"2.0","id":1,"method":"ping"}';
my $evil = { Origin => 'http://evil.example.com' };

# Every kind of error reply the module makes: [what, HTTP response].
my @cases = (
    [ 'parse error',         $t->mcp_post($sid, '{oops') ],
    [ 'invalid request',     $t->mcp_post($sid, '{"jsonrpc":"2.0","id":true,"method":"ping"}') ],
    [ 'method not found',    $t->mcp_post($sid, '{"jsonrpc":"2.0","id":2,"method":"nope"}') ],
    [ 'invalid params',      $t->mcp_post($sid, '{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{}}') ],
    [ 'unknown tool',        $t->mcp_post($sid, '{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"x"}}') ],
    [ 'unknown prompt',      $t->mcp_post($sid, '{"jsonrpc":"2.0","id":5,"method":"prompts/get","params":{"name":"x"}}') ],
    [ 'resource not found',  $t->mcp_post($sid, '{"jsonrpc":"2.0","id":6,"method":"resources/read","params":{"uri":"test://x"}}') ],
    [ 'invalid cursor',      $t->mcp_post($sid, '{"jsonrpc":"2.0","id":7,"method":"tools/list","params":{"cursor":"x"}}') ],
    [ 'missing session',     $t->mcp_post(undef, $ping) ],
    [ 'unknown session',     $t->mcp_post('f' x 32, $ping) ],
    [ 'server/discover',     $t->mcp_post(undef, '{"jsonrpc":"2.0","id":8,"method":"server/discover"}') ],
    [ 'batch refused',       $t->mcp_post($sid, "[$ping]") ],
    [ 'bad Accept (406)',    $t->mcp_post($sid, $ping, headers => { Accept => 'text/html' }) ],
    [ 'bad Content-Type (415)', $t->mcp_post($sid, $ping, headers => { 'Content-Type' => 'text/plain' }) ],
    [ 'bad version header',  $t->mcp_post($sid, $ping, protocol_version => '1999-01-01') ],
    [ 'GET (405)',           $t->request(method => 'GET', path => '/mcp') ],
    [ 'foreign Origin (403)', $t->mcp_post($sid, $ping, headers => $evil) ],
    [ 'DELETE unknown',      $t->mcp_delete('0' x 32) ],
    [ 'body too large (413)', $t->mcp_post($ssid, '{"jsonrpc":"2.0","id":9,"method":"ping","params":{"pad":"'
                                                  . ('x' x 2048) . '"}}', path => '/small') ],
);

my %seen;
for my $case (@cases) {
    my ($what, $r) = @$case;
    my $msg = eval { McpTest::decode_json($r->{body}) };
    my $cid = ref $msg eq 'HASH' && ref $msg->{error} eq 'HASH' && ref $msg->{error}{data} eq 'HASH'
            ? $msg->{error}{data}{correlationId} : undef;
    ok(defined $cid && $cid =~ /^[0-9a-f]{32}$/, "$what: error.data.correlationId")
        or diag(McpTest::explain_response($r));
    no_internal_detail($msg, "$what: no internal detail in the error");
    next unless defined $cid;
    $seen{$cid}++;
    my $line = correlation_logged_once($t, $cid, 'info', "$what: the id is in exactly one [info] line");
    unlike($line // '', qr/\[(?:error|crit|alert|emerg)\]/, "$what: a client error is not logged as [error]");
}
is(scalar keys %seen, scalar @cases, 'every error has its own correlation id');

# --- 413 ----------------------------------------------------------------------

{
    my $body = sub { my ($n) = @_;
        my $head = '{"jsonrpc":"2.0","id":"sz","method":"ping","params":{"pad":"';
        my $tail = '"}}';
        return $head . ('x' x ($n - length($head) - length($tail))) . $tail };
    my $r = $t->mcp_post($ssid, $body->(2048), path => '/small');
    is_rpc_error_body($r, 413, -32600, undef, 'mcp_max_request_size 1k, 2 KB body with Content-Length: 413, JSON-RPC error');
    is($r->{headers}{'content-length'}, length $r->{body}, '413: Content-Length matches the JSON body');
    $r = $t->mcp_post($ssid, $body->(1024), path => '/small');
    $t->status_is($r, 200, 'a body of exactly 1k is accepted');
    is($r->{json}{id}, 'sz', '... and answered');
    $r = $t->mcp_post($ssid, $body->(1025), path => '/small');
    is($r->{status}, 413, 'a body of 1k + 1 byte: 413');

    # (Chunked bodies: t/transport.t.)

    # The default limit (1m) is much larger.
    $r = $t->mcp_post($sid, $body->(100_000));
    $t->status_is($r, 200, 'default mcp_max_request_size: a 100 KB body is accepted');
}

# --- internal errors: -32603, [error] line, no detail -------------------------

{
    # A 32k zone has no room for many long subscriptions: the module answers
    # -32603 (subscriptions never evict the session they belong to).
    my ($msg, $i);
    for $i (1 .. 200) {
        ($msg) = $t->mcp_request($ssid, 'resources/subscribe',
            { uri => "test://template/$i-" . ('y' x 400) . '/data' }, path => '/small', id => "s$i");
        last if ref $msg eq 'HASH' && $msg->{error};
    }
    is_error($msg, -32603, $msg->{id}, 'zone exhausted by subscriptions: -32603 internal error');
    is(($msg->{error} // {})->{message}, 'Internal error: no room in the session zone for the subscription',
       'internal error: says what ran out, nothing more');
    no_internal_detail($msg, 'internal error: no internal detail');
    my $cid = (($msg->{error} // {})->{data} // {})->{correlationId} // 'none';
    $t->expect_log_error(qr/mcp: Internal error.*correlation id \Q$cid\E/);
    correlation_logged_once($t, $cid, 'error', 'internal error: its id is in exactly one [error] line');
    my ($ok) = $t->mcp_request($ssid, 'ping', undef, path => '/small', id => 'after');
    is_result($ok, {}, 'after', 'the session still works after the internal error');
}

$t->stop;
done_testing;
