# Input validation: tool arguments against the tool's inputSchema (JSON
# Schema 2020-12) before the handler runs, a refusal being a tool result
# with isError; limits on nesting depth and string length; invalid UTF-8;
# the body size limit.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use McpTest;
use McpAssert;

my $t = McpTest->new(server => <<'NGX')->start;
        location = /mcp { mcp on; mcp_builtin validation; }
        location = /tight { mcp on; mcp_builtin validation;
                            mcp_max_input_depth 2; mcp_max_input_string 6;
                            mcp_max_request_size 2k; }
        location = /everything { mcp on; mcp_builtin everything; }
NGX

my ($sid) = $t->mcp_initialize;

sub validate {
    my ($args, %o) = @_;
    my ($msg, $r) = $t->mcp_request($o{sid} // $sid, 'tools/call',
                                    { name => 'validate', arguments => $args }, path => $o{path});
    return ($msg, $r);
}

sub accepted {
    my ($args, $name) = @_;
    my ($msg) = validate($args);
    ok($msg && $msg->{result} && !$msg->{result}{isError}
       && $msg->{result}{content}[0]{text} eq 'ok', "accepted: $name")
        or diag(McpTest::encode_json($msg));
}

sub refused {
    my ($args, $why, $name) = @_;
    my ($msg, $r) = validate($args);
    is($r->{status}, 200, "refused: $name: HTTP 200");
    ok($msg && $msg->{result} && $msg->{result}{isError}, "refused: $name: a result with isError")
        or return diag(McpTest::encode_json($msg));
    like($msg->{result}{content}[0]{text}, $why, "refused: $name: says what and where");
}

accepted({ name => 'ada' }, 'the minimum');
accepted({ name => 'ada', age => 36, ratio => 0.5, color => 'red', kind => 'fixed',
           tags => ['a', 'b'], id => 'id-7', one => 3, code => 'ok', nested => { x => \1 } },
         'every property');
accepted({ name => 'ada', id => 7 }, 'anyOf: the integer branch');
accepted({ name => 'ada', age => 36.0 }, 'integer: 36.0 is an integer');
accepted({ name => "\x{e9}\x{e9}" }, 'minLength counts characters, not bytes');

refused({}, qr/^arguments: "name" is required$/, 'missing required');
refused({ name => 'ada', extra => 1 }, qr/^arguments: unknown property "extra"$/, 'additionalProperties');
refused({ name => 7 }, qr/^arguments\.name: must be of type string$/, 'type string');
refused({ name => 'a' }, qr/^arguments\.name: must be at least 2 characters long$/, 'minLength');
refused({ name => 'abcdefghi' }, qr/^arguments\.name: must be at most 8 characters long$/, 'maxLength');
refused({ name => 'ada', age => -1 }, qr/^arguments\.age: must be >= 0$/, 'minimum');
refused({ name => 'ada', age => 151 }, qr/^arguments\.age: must be <= 150$/, 'maximum');
refused({ name => 'ada', age => 1.5 }, qr/^arguments\.age: must be of type integer$/, 'integer');
refused({ name => 'ada', ratio => 0 }, qr/^arguments\.ratio: must be > 0$/, 'exclusiveMinimum');
refused({ name => 'ada', ratio => 1 }, qr/^arguments\.ratio: must be < 1$/, 'exclusiveMaximum');
refused({ name => 'ada', color => 'blue' }, qr/^arguments\.color: must be one of the enum values$/, 'enum');
refused({ name => 'ada', kind => 'other' }, qr/^arguments\.kind: must equal the const value$/, 'const');
refused({ name => 'ada', tags => [] }, qr/^arguments\.tags: must have at least 1 items$/, 'minItems');
refused({ name => 'ada', tags => [qw(a b c d)] }, qr/^arguments\.tags: must have at most 3 items$/, 'maxItems');
refused({ name => 'ada', tags => [qw(a a)] }, qr/^arguments\.tags: must have unique items$/, 'uniqueItems');
refused({ name => 'ada', tags => ['a', 'B1'] }, qr/^arguments\.tags\[1\]: must match the pattern "\^\[a-z\]\+\$"$/,
        'items through $ref, pattern (PCRE2)');
refused({ name => 'ada', id => 'x-7' }, qr/^arguments\.id: must match at least one schema of anyOf$/, 'anyOf');
refused({ name => 'ada', one => 12 }, qr/^arguments\.one: must match exactly one schema of oneOf$/, 'oneOf: both');
refused({ name => 'ada', one => 2.5 }, qr/^arguments\.one: must match exactly one schema of oneOf$/, 'oneOf: none');
refused({ name => 'ada', code => 'long' }, qr/^arguments\.code: must be at most 3 characters long$/, 'allOf');
refused({ name => 'ada', code => 'bad' }, qr/^arguments\.code: must not match the schema of not$/, 'not');
refused({ name => 'ada', nested => {} }, qr/^arguments\.nested: "x" is required$/, 'nested required');
refused({ name => 'ada', nested => { x => 1 } }, qr/^arguments\.nested\.x: must be of type boolean$/, 'nested type');

# the conformance tool: $ref to $defs, if/then/else, enum, additionalProperties
{
    my ($s2) = $t->mcp_initialize(path => '/everything');
    my $call = sub {
        my ($msg) = $t->mcp_request($s2, 'tools/call', { name => 'json_schema_2020_12_tool',
                                                         arguments => $_[0] }, path => '/everything');
        return $msg->{result};
    };
    ok(!$call->({ name => 'A', contactMethod => 'phone', phone => '1' })->{isError}, 'everything: if/then accepted');
    like($call->({ name => 'A', contactMethod => 'phone', email => 'a@b' })->{content}[0]{text},
         qr/^arguments: "phone" is required$/, 'everything: if/then refused');
    like($call->({ email => 'a@b', address => { street => 5 } })->{content}[0]{text},
         qr/^arguments\.address\.street: must be of type string$/, 'everything: $ref into $defs');
}

# --- limits ----------------------------------------------------------------------

{
    my ($s3) = $t->mcp_initialize(path => '/tight');
    my ($msg, $r) = validate({ name => 'abc', nested => { x => \1 } }, sid => $s3, path => '/tight');
    ok($msg->{result} && !$msg->{result}{isError}, 'within depth 2 and string length 6');
    ($msg, $r) = validate({ name => 'ab', nested => { x => [ 1 ] } }, sid => $s3, path => '/tight');
    is_error($msg, -32602, $msg->{id}, 'nested deeper than mcp_max_input_depth: -32602');
    like($msg->{error}{message}, qr/nest too deep \(limit 2\)/, '... saying so');
    ($msg, $r) = validate({ name => "abcdefg" }, sid => $s3, path => '/tight');
    is_error($msg, -32602, $msg->{id}, 'a string longer than mcp_max_input_string: -32602');
    like($msg->{error}{message}, qr/string that is too long \(limit 6\)/, '... saying so');

    # defaults: depth 5, 10000 characters
    ($msg) = validate({ name => 'ab', nested => { x => \1, y => { a => { b => { c => { d => 1 } } } } } });
    is($msg->{error}{code}, -32602, 'default depth limit 5');
    ($msg) = validate({ name => 'x' x 10001 });
    like($msg->{error}{message} // '', qr/too long \(limit 10000\)/, 'default string limit 10000');

    $r = $t->mcp_post($s3, '{"jsonrpc":"2.0","id":1,"method":"ping","params":{"p":"' . ('x' x 3000) . '"}}',
                      path => '/tight');
    is_rpc_error_body($r, 413, -32600, undef, 'body over mcp_max_request_size: 413 with a JSON-RPC error');
}

# --- UTF-8 -------------------------------------------------------------------------

for my $case (["\xff", 'an invalid byte'], ["\xc3", 'a truncated sequence'],
              ["\xc0\xaf", 'an overlong encoding'], ["\xe2\x82", 'a cut three-byte sequence'])
{
    my ($bytes, $name) = @$case;
    my $r = $t->mcp_post($sid, qq({"jsonrpc":"2.0","id":1,"method":"tools/call","params":)
                               . qq({"name":"validate","arguments":{"name":"a$bytes"}}}));
    is_rpc_error_body($r, 400, -32700, undef, "invalid UTF-8 ($name): 400 parse error");
}
{
    my $r = $t->mcp_post($sid, qq({"jsonrpc":"2.0","id":1,"method":"tools/call","params":)
                               . qq({"name":"validate","arguments":{"name":"\xc3\xa9t\xc3\xa9"}}}));
    ok($r->{status} == 200 && !$r->{json}{result}{isError}, 'valid UTF-8 passes');
}

done_testing;
