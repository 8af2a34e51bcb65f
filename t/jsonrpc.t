# JSON-RPC 2.0: parse errors, invalid requests, unknown methods, invalid
# params, ids echoed exactly (strings, integers, beyond 2^53 and 2^64),
# a result or an error and never both, batch entries (2025-03-26).

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use McpTest;
use McpAssert;

my $t = everything();
my ($sid) = $t->mcp_initialize;

# Posts a raw body in the session; returns (decoded message, HTTP response).
sub raw {
    my ($body, $s) = @_;
    my $r = $t->mcp_post($s // $sid, $body);
    return ($r->{json}, $r);
}

# --- -32700: not JSON --------------------------------------------------------

for my $body ('{bad', '{"jsonrpc":"2.0","id":1,"method":"ping",}', "{'jsonrpc':'2.0'}",
              '', ' ', '{"jsonrpc":"2.0","id":1', '[{"jsonrpc":"2.0","id":1,"method":"ping"}',
              "\xff\xfe{}") {
    my ($msg, $r) = raw($body);
    (my $show = $body) =~ s/([^\x20-\x7e])/sprintf('\\x%02x', ord $1)/ge;
    is_rpc_error_body($r, 400, -32700, undef, "parse error, id null: '$show'");
}

{
    for my $body ('{"jsonrpc":"2.0","id":1,"method":"ping"} garbage',
                  '{"jsonrpc":"2.0","id":1,"method":"ping"}{"jsonrpc":"2.0","id":2,"method":"ping"}',
                  '{"jsonrpc":"2.0","id":1,"method":"ping"}]') {
        my ($msg, $r) = raw($body);
        is_error($msg, -32700, undef, "parse error for trailing bytes: '$body'");
    }
}

{
    for my $id ('01', '-01', '00') {
        my ($msg, $r) = raw(qq({"jsonrpc":"2.0","id":$id,"method":"ping"}));
        ok(defined eval { McpTest::decode_json($r->{body}) },
           "reply to id $id (not JSON) is valid JSON") or diag("reply: $r->{body}");
        is_error($msg, -32700, undef, "id $id: parse error");
    }
}

# --- -32600: JSON, but not a valid message --------------------------------

for my $case (
    [ '{"jsonrpc":"1.0","id":5,"method":"ping"}',              5,     'jsonrpc "1.0"' ],
    [ '{"id":5,"method":"ping"}',                              5,     'jsonrpc missing' ],
    [ '{"jsonrpc":2.0,"id":5,"method":"ping"}',                5,     'jsonrpc a number' ],
    [ '{"jsonrpc":"2.0","id":1.5,"method":"ping"}',            undef, 'id a float' ],
    [ '{"jsonrpc":"2.0","id":1.0,"method":"ping"}',            undef, 'id 1.0 (a float)' ],
    [ '{"jsonrpc":"2.0","id":1e3,"method":"ping"}',            undef, 'id with exponent' ],
    [ '{"jsonrpc":"2.0","id":true,"method":"ping"}',           undef, 'id a boolean' ],
    [ '{"jsonrpc":"2.0","id":null,"method":"ping"}',           undef, 'id null' ],
    [ '{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}',        undef, 'id an object' ],
    [ '{"jsonrpc":"2.0","id":[1],"method":"ping"}',            undef, 'id an array' ],
    [ '{"jsonrpc":"2.0","id":5,"method":"ping","params":[1]}', 5,     'params an array' ],
    [ '{"jsonrpc":"2.0","id":5,"method":"ping","params":"x"}', 5,     'params a string' ],
    [ '{"jsonrpc":"2.0","id":5,"method":"ping","params":3}',   5,     'params a number' ],
    [ '{"jsonrpc":"2.0","id":5,"method":5}',                   5,     'method a number' ],
    [ '{"jsonrpc":"2.0","id":5,"method":""}',                  5,     'method empty' ],
    [ '{"jsonrpc":"2.0","id":5}',                              5,     'no method, result or error' ],
    [ '{"jsonrpc":"2.0","id":5,"result":{},"error":{"code":1,"message":"x"}}',
                                                               5,     'both result and error' ],
    [ '{"jsonrpc":"2.0","id":5,"error":"x"}',                  5,     'error not an object' ],
) {
    my ($body, $id, $what) = @$case;
    my ($msg, $r) = raw($body);
    is_rpc_error_body($r, 400, -32600, $id, "invalid request ($what): -32600, id "
                      . ($id // 'null'));
}

{
    for my $body ('42', '"str"', 'null', 'true') {
        my ($msg, $r) = raw($body);
        is_error($msg, -32600, undef, "not a message ('$body'): -32600");
    }
}

{
    my ($msg) = raw('{"jsonrpc":"2.0","\u0069d":5,"method":"ping"}');
    is_result($msg, {}, 5, 'member name "\u0069d" is "id": ping answered with id 5');
}

# --- -32601 / -32602 ----------------------------------------------------

{
    my ($msg, $r) = raw('{"jsonrpc":"2.0","id":"m1","method":"no/such/method"}');
    is_error($msg, -32601, 'm1', 'unknown method: -32601, id echoed');
    like($r->{headers}{'content-type'}, qr{^application/json\b}, 'unknown method: JSON reply');
    ($msg) = raw('{"jsonrpc":"2.0","id":"m2","method":"Ping"}');
    is_error($msg, -32601, 'm2', 'method names are case-sensitive: "Ping" is unknown');
    ($msg) = raw('{"jsonrpc":"2.0","id":"m3","method":"tools/call","params":{"name":7}}');
    is_error($msg, -32602, 'm3', 'invalid params (tools/call name a number): -32602');
    ($msg) = raw('{"jsonrpc":"2.0","id":"m4","method":"resources/read"}');
    is_error($msg, -32602, 'm4', 'invalid params (resources/read without params): -32602');
    my $r2 = $t->mcp_notify($sid, 'no/such/notification');
    ok($r2->{status} == 202 && $r2->{body} eq '', 'unknown notification: 202, never answered');
}

# --- ids echoed exactly as sent ----------------------------------------------

for my $id ('0', '1', '-1', '2147483648', '9007199254740991', '9007199254740992',
            '9007199254740993', '-9007199254740993', '9223372036854775807',
            '-9223372036854775808', '12345678901234567890', '-12345678901234567890',
            '18446744073709551617', '123456789012345678901234567890') {
    my ($msg, $r) = raw(qq({"jsonrpc":"2.0","id":$id,"method":"ping"}));
    like($r->{body}, qr/"id":\Q$id\E[,}]/, "integer id $id echoed verbatim as a number");
    is_result($msg, {}, $id, "integer id $id: result");
}

for my $id ('abc', '', '123', '12345678901234567890', 'with "quotes" and \\ backslash',
            "caf\x{e9} \x{2603}", ' spaced ') {
    my $json = McpTest::encode_json({ jsonrpc => '2.0', id => $id, method => 'ping' });
    my ($msg, $r) = raw($json);
    my $enc = McpTest::encode_json($id);
    like($r->{body}, qr/"id":\Q$enc\E[,}]/, "string id " . $enc . ' echoed as the same string');
    my $got = $msg->{id};
    utf8::decode($got) if defined $got;
    is($got, $id, 'string id ' . $enc . ': decoded value equal');
}

{
    my ($msg, $r) = raw('{ "jsonrpc" : "2.0" , "id" :  42 , "method" : "ping" }');
    is_result($msg, {}, 42, 'id surrounded by whitespace');
    ($msg, $r) = raw('{"jsonrpc":"2.0","params":{"id":99},"method":"ping","id":8}');
    is_result($msg, {}, 8, 'the top-level id is echoed, not one inside params');
    ($msg, $r) = raw('{"jsonrpc":"2.0","id":"-5","method":"ping"}');
    like($r->{body}, qr/"id":"-5"/, 'string "-5" stays a string');
}

{
    my $id = '9' x 80;
    my ($msg, $r) = raw(qq({"jsonrpc":"2.0","id":$id,"method":"ping"}));
    like($r->{body}, qr/"id":$id[,}]/, '80-digit integer id echoed verbatim');
}

# --- a result or an error, never both --------------------------------------

{
    my @replies;
    for my $body ('{"jsonrpc":"2.0","id":1,"method":"ping"}',
                  '{"jsonrpc":"2.0","id":2,"method":"tools/list"}',
                  '{"jsonrpc":"2.0","id":3,"method":"nope"}',
                  '{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"nope"}}',
                  '{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"test_error_handling"}}',
                  '{"jsonrpc":"2.0","id":6,"method":"resources/read","params":{"uri":"test://nope"}}',
                  '{"jsonrpc":"2.0","id":7.5,"method":"ping"}', '{x') {
        my ($msg) = raw($body);
        push @replies, $msg;
    }
    my @both    = grep { ref $_ eq 'HASH' && exists $_->{result} && exists $_->{error} } @replies;
    my @neither = grep { ref $_ ne 'HASH' || (!exists $_->{result} && !exists $_->{error}) } @replies;
    ok(@replies == 8 && !@both && !@neither, 'eight replies: each has exactly one of result and error');
    is(scalar(grep { exists $_->{result} } @replies), 3, 'three results (ping, tools/list, tool error)');
    ok((grep { ($_->{jsonrpc} // '') eq '2.0' } @replies) == 8, 'every reply says jsonrpc "2.0"');
}

# --- batches (2025-03-26): invalid entries get their own -32600 -------------

{
    my ($old) = $t->mcp_initialize(protocol_version => '2025-03-26');
    my ($msg, $r) = raw('[1, {"jsonrpc":"2.0","id":"ok","method":"ping"}, {"jsonrpc":"2.0","id":2.5,"method":"ping"}, "x"]', $old);
    $t->status_is($r, 200, 'batch with invalid entries: 200');
    my @m = ref $msg eq 'ARRAY' ? @$msg : ();
    is(scalar @m, 4, 'batch with invalid entries: four replies');
    is_error($m[0], -32600, undef, 'batch entry 1 (a number): -32600, id null');
    is_result($m[1], {}, 'ok', 'batch entry 2 (ping): result');
    is_error($m[2], -32600, undef, 'batch entry 3 (float id): -32600, id null');
    is_error($m[3], -32600, undef, 'batch entry 4 (a string): -32600, id null');
    ($msg, $r) = raw('[{"jsonrpc":"2.0","id":9007199254740993,"method":"ping"},'
                   . '{"jsonrpc":"2.0","id":"9007199254740993","method":"ping"}]', $old);
    like($r->{body}, qr/^\[\{"jsonrpc":"2\.0","id":9007199254740993,.*"id":"9007199254740993"/,
         'batch: big integer and string ids echoed exactly, in order');
}

$t->stop;
done_testing;
