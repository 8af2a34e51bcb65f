# One message, one meaning (I-JSON, RFC 7493): bodies that two JSON parsers
# may read differently are refused before anything acts on them: duplicate
# member names (also when escaped differently), unescaped control bytes,
# lone surrogates, "\u0000", a byte-order mark, numbers beyond a double,
# an id of -0.  Each refusal is -32700 with id null, HTTP 400, a correlation
# id logged once at info.  What is well-formed still passes.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use McpTest;
use McpAssert;

my $t = everything();
my ($sid) = $t->mcp_initialize;

sub show { (my $s = $_[0]) =~ s/([^\x20-\x7e])/sprintf('\\x%02x', ord $1)/ge; $s }

sub refused {
    my ($body, $why, $name) = @_;
    my $r = $t->mcp_post($sid, $body);
    is_rpc_error_body($r, 400, -32700, undef, "$name: -32700, HTTP 400");
    like($r->{json}{error}{message}, qr/\Q$why\E/, "$name: the message says $why")
        or diag(show($body));
    my $cid = $r->{json}{error}{data}{correlationId};
    correlation_logged_once($t, $cid, 'info', "$name: logged once at info")
        if defined $cid;
}

sub call_body {
    my ($params) = @_;
    return qq({"jsonrpc":"2.0","id":7,"method":"tools/call","params":$params});
}

# --- duplicate member names, at any depth ------------------------------------

my $dup = 'duplicate member name';
refused('{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"test_simple_text",'
        . '"name":"test_error_handling","arguments":{}}}', $dup, 'two "name" members in params');
refused('{"jsonrpc":"2.0","id":4,"method":"ping","method":"tools/call",'
        . '"params":{"name":"test_simple_text","arguments":{}}}', $dup, 'two "method" members');
refused('{"jsonrpc":"2.0","id":1,"id":2,"method":"ping"}', $dup, 'two "id" members');
refused('{"jsonrpc":"2.0","jsonrpc":"2.0","id":1,"method":"ping"}', $dup, 'two equal "jsonrpc" members');
refused(call_body('{"name":"test_simple_text","arguments":{"a":{"b":{"c":1,"c":2}}}}'),
        $dup, 'a duplicate deep inside the arguments');
refused(call_body('{"name":"test_simple_text","na\u006de":"test_error_handling","arguments":{}}'),
        $dup, 'escaped duplicate: "na\\u006de"');
refused('{"jsonrpc":"2.0","id":5,"\u006dethod":"tools/call","method":"ping"}',
        $dup, 'escaped duplicate: "\\u006dethod"');
refused(call_body('{"name":"test_simple_text","arguments":{"\u00e9":1,"' . "\xc3\xa9" . '":2}}'),
        $dup, 'the same non-ASCII name, escaped and raw');
refused(call_body('{"name":"test_simple_text","arguments":{"\ud83d\ude00":1,"' . "\xf0\x9f\x98\x80" . '":2}}'),
        $dup, 'a surrogate pair and its UTF-8 bytes');
refused(call_body('{"name":"test_simple_text","arguments":{"\/":1,"/":2}}'),
        $dup, 'escaped solidus and plain solidus');
refused('[{"jsonrpc":"2.0","id":1,"method":"ping"},'
        . '{"jsonrpc":"2.0","id":2,"method":"ping","method":"tools/list"}]',
        $dup, 'a duplicate in the second message of a batch');

# a large object: the names move from pairwise compares to the hash table
{
    my @m = map { qq("k$_":$_) } 1 .. 5000;
    my $args = '{' . join(',', @m) . '}';
    my $r = $t->mcp_post($sid, call_body(qq({"name":"test_simple_text","arguments":$args})));
    is($r->{status}, 200, '5,000 distinct members: accepted');
    ok($r->{json}{result}, '5,000 distinct members: the tool ran');

    $args = '{' . join(',', @m, '"k4321":0') . '}';
    refused(call_body(qq({"name":"test_simple_text","arguments":$args})), $dup,
            'the 5,001st member repeats the 4,321st');
    $args = '{' . join(',', @m[0 .. 8], '"k\u0031":0') . '}';
    refused(call_body(qq({"name":"test_simple_text","arguments":$args})), $dup,
            'the 10th member repeats the 1st, escaped');
}

# names that only look alike are different names
{
    my $r = $t->mcp_post($sid, call_body('{"name":"test_simple_text","arguments":'
        . '{"a":1,"A":2,"a ":3,"\u0061b":4,"ab ":5,"":6,"\u00e9":7,"e\u0301":8}}'));
    is($r->{status}, 200, 'names differing by case, space, composition: accepted');
    ok($r->{json}{result}, 'the tool ran');
}

# --- strings --------------------------------------------------------------

for my $c (0x00, 0x01, 0x09, 0x0a, 0x1f) {
    refused(call_body(qq({"name":"test_simple_text","arguments":{"s":"a) . chr($c) . qq(b"}})),
            'control character', sprintf('raw control byte 0x%02x in a string', $c));
}
refused(qq({"jsonrpc":"2.0","id":1,"method":"pi\tng"}), 'control character', 'a tab inside the method');
refused(call_body('{"name":"test_simple_text\u0000x","arguments":{}}'), 'NUL',
        '"\\u0000" in the tool name');
refused('{"jsonrpc":"2.0","id":1,"method":"ping\u0000x"}', 'NUL', '"\\u0000" in the method');
refused(call_body('{"name":"test_simple_text","arguments":{"k\u0000":1}}'), 'NUL',
        '"\\u0000" in a member name');
refused(call_body('{"name":"test_simple_text","arguments":{"s":"\ud800"}}'), 'lone surrogate',
        'a lone high surrogate');
refused(call_body('{"name":"test_simple_text","arguments":{"s":"\udc00x"}}'), 'lone surrogate',
        'a lone low surrogate');
refused(call_body('{"name":"test_simple_text","arguments":{"s":"\ud800\u0041"}}'), 'lone surrogate',
        'a high surrogate followed by a non-surrogate escape');
refused(call_body('{"name":"test_simple_text","arguments":{"s":"\x"}}'), 'invalid escape',
        'an unknown escape');
refused(call_body('{"name":"test_simple_text","arguments":{"s":"\u12G4"}}'), 'invalid escape',
        'a \\u escape that is not hex');
refused(call_body(qq({"name":"test_simple_text","arguments":{"s":"\xed\xa0\x80"}})), 'invalid UTF-8',
        'a surrogate encoded in UTF-8');
refused(call_body(qq({"name":"test_simple_text","arguments":{"s":"\xc0\xaf"}})), 'invalid UTF-8',
        'an overlong encoding');
refused("\xef\xbb\xbf" . '{"jsonrpc":"2.0","id":1,"method":"ping"}', 'Parse error',
        'a byte-order mark before the message');

{
    my $r = $t->mcp_post($sid, call_body('{"name":"test_simple_text","arguments":'
        . '{"s":"\ud83d\ude00 \u00e9 \" \\\\ \/ \b\f\n\r\t ' . "\xe2\x82\xac" . '"}}'));
    is($r->{status}, 200, 'every valid escape and a surrogate pair: accepted');
    ok($r->{json}{result}, 'the tool ran');
}

# --- numbers --------------------------------------------------------------

for my $n ('1e400', '-1e400', '1E309', '0.5e310', '1' . ('0' x 400), '-' . ('9' x 310),
           '179.77e306', '1e99999999999999999999') {
    refused(call_body(qq({"name":"test_simple_text","arguments":{"n":$n}})), 'number out of range',
            'number ' . (length $n > 30 ? substr($n, 0, 12) . '...(' . length($n) . ' chars)' : $n));
}

{
    my $r = $t->mcp_post($sid, call_body('{"name":"test_simple_text","arguments":'
        . '{"a":1e308,"b":-1.7976931348623157e308,"c":1e-400,"d":-0,"e":0.0,"f":1.5E3,'
        . '"g":0e999999,"h":0.000000000000000000000000000001e300,"i":12345678901234567890}}'));
    is($r->{status}, 200, 'numbers a double holds (and underflow to 0): accepted');
    ok($r->{json}{result}, 'the tool ran');
}

# ids: "-0" is 0 to most parsers, so it is not an integer id
{
    my $r = $t->mcp_post($sid, '{"jsonrpc":"2.0","id":-0,"method":"ping"}');
    is_error($r->{json}, -32600, undef, 'id -0: invalid request');
    for my $id ('0', '-1', '1' . ('2' x 60)) {
        $r = $t->mcp_post($sid, qq({"jsonrpc":"2.0","id":$id,"method":"ping"}));
        like($r->{body}, qr/"id":\Q$id\E[,}]/, "id $id: echoed as sent");
    }
}

# --- the grammar, strictly ------------------------------------------------------

for my $body ('{"jsonrpc":"2.0" "id":1,"method":"ping"}', '{"jsonrpc":"2.0",,"id":1,"method":"ping"}',
              '{"jsonrpc":"2.0","id":1,"method":"ping",}', '{,"jsonrpc":"2.0","id":1,"method":"ping"}',
              '{"jsonrpc":"2.0","id":1,"method":"ping","params":{"a":[1,,2]}}',
              '{"jsonrpc":"2.0","id":1,"method":"ping","params":{"a":[1 2]}}',
              '{"jsonrpc":"2.0","id":1,"method":"ping","params":{"a"::1}}',
              '{"jsonrpc":"2.0","id":1,"method":"ping","params":{"a":1:2}}',
              '[{"jsonrpc":"2.0","id":1,"method":"ping"},]', '[,{"jsonrpc":"2.0","id":1,"method":"ping"}]',
              '{"jsonrpc":"2.0","id":1,"method":"ping"}' . "\x00",
              "{\"jsonrpc\":\"2.0\",\x0c\"id\":1,\"method\":\"ping\"}",
              '{"jsonrpc":"2.0","id":1,"method":"ping","params":{"a":+1}}',
              '{"jsonrpc":"2.0","id":1,"method":"ping","params":{"a":.5}}',
              '{"jsonrpc":"2.0","id":1,"method":"ping","params":{"a":NaN}}',
              '{"jsonrpc":"2.0","id":1,"method":"ping","params":{"a":tru}}') {
    refused($body, 'Parse error', 'not JSON: ' . show($body));
}

# deep but allowed nesting, and too deep
{
    my $deep = ('[' x 100) . (']' x 100);
    my $r = $t->mcp_post($sid, call_body(qq({"name":"test_simple_text","arguments":{"d":$deep}})));
    is($r->{status}, 200, '100 levels of nesting: accepted');
    refused(call_body('{"name":"test_simple_text","arguments":{"d":' . ('[' x 200) . (']' x 200) . '}}'),
            'nesting too deep', '200 levels of nesting');
    refused(('[' x 100000) . (']' x 100000), 'nesting too deep', '100,000 levels of nesting');
}

# the session goes on
{
    my $r = $t->mcp_post($sid, '{"jsonrpc":"2.0","id":99,"method":"ping"}');
    is_result($r->{json}, {}, 99, 'ping after all the refusals');
}

$t->check_log;
done_testing;
