# A tool's result held to its outputSchema (MCP: structuredContent MUST
# conform): an mcp_tool whose location answers JSON that breaks the
# output_schema gets an isError result naming the fault, and a [warn]
# line; a conforming reply is structuredContent as before.  Also what
# JSON Schema 2020-12 brought to configured schemas: mcp_schema_format
# (format an annotation by default, an assertion when configured), the
# keywords a probe found ignored (dependentRequired, unevaluatedProperties),
# and nginx -t refusing a schema of another dialect, naming it.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use McpTest;
use McpAssert;

my $OUT = '{"type":"object","properties":{"id":{"type":"string"},'
        . '"qty":{"type":"integer","minimum":1}},"required":["id","qty"]}';
my $IN = '{"type":"object","properties":{"when":{"type":"string","format":"date"},'
       . '"card":{"type":"string"},"cvv":{"type":"string"}},'
       . '"dependentRequired":{"card":["cvv"]},"unevaluatedProperties":false}';

my $t = McpTest->new(server => <<"NGX")->start;
        mcp_tool good    { description "Conforms"; output_schema '$OUT';
                           pass /internal/good; method GET; }
        mcp_tool missing { description "Lacks a required member";
                           output_schema '$OUT'; pass /internal/missing; method GET; }
        mcp_tool wrong   { description "A member of the wrong type";
                           output_schema '$OUT'; pass /internal/wrong; method GET; }
        mcp_tool failing { description "A 500: its own isError";
                           output_schema '$OUT'; pass /internal/fail; method GET; }
        mcp_tool input   { description "2020-12 input"; input_schema '$IN';
                           pass /internal/good; method GET; }
        location /internal/good    { internal; default_type application/json;
                                     return 200 '{"id":"a1","qty":2}'; }
        location /internal/missing { internal; default_type application/json;
                                     return 200 '{"id":"a1"}'; }
        location /internal/wrong   { internal; default_type application/json;
                                     return 200 '{"id":"a1","qty":"two"}'; }
        location /internal/fail    { internal; return 500; }
        location = /mcp { mcp on; }
        location = /strict { mcp on; mcp_schema_format assertion; }
NGX

my ($sid) = $t->mcp_initialize;
my ($ssid) = $t->mcp_initialize(path => '/strict');

sub call {
    my ($name, $args, %o) = @_;
    my ($msg) = $t->mcp_request($o{sid} // $sid, 'tools/call',
                                { name => $name, arguments => $args // {} },
                                path => $o{path});
    return $msg && $msg->{result};
}

my $r = call('good');
ok($r && !$r->{isError}, 'a conforming reply: no isError') or diag(McpTest::encode_json($r));
is_deeply($r->{structuredContent}, { id => 'a1', qty => 2 }, '... its structuredContent');

my $mark = $t->log_mark;
$r = call('missing');
ok($r && $r->{isError}, 'a reply without a required member: isError') or diag(McpTest::encode_json($r));
ok(!exists $r->{structuredContent}, '... and no structuredContent');
is($r->{content}[0]{text},
   q{The tool's result does not conform to its outputSchema: structuredContent: "qty" is required},
   '... naming the fault');
like($t->log_since($mark),
     qr/\[warn\].*tool "missing" result breaks its outputSchema: structuredContent: "qty" is required/,
     '... logged at warn');

$r = call('wrong');
ok($r && $r->{isError}, 'a member of the wrong type: isError');
like($r->{content}[0]{text}, qr/structuredContent\.qty: must be of type integer$/, '... says where');

$r = call('failing');
ok($r && $r->{isError} && $r->{content}[0]{text} !~ /outputSchema/,
   "a tool's own error result is left as it is") or diag(McpTest::encode_json($r));

# 2020-12 keywords in an input_schema, and format as configured
$r = call('input', { card => '4111' });
ok($r && $r->{isError}, 'dependentRequired: refused');
is($r->{content}[0]{text}, 'arguments: "cvv" is required with "card"', '... saying which');
$r = call('input', { extra => 1 });
is($r && $r->{content}[0]{text}, 'arguments: unknown property "extra"', 'unevaluatedProperties false: refused');
$r = call('input', { when => '2026-02-30' });
ok($r && !$r->{isError}, 'format date: an annotation by default');
$r = call('input', { when => '2026-02-30' }, sid => $ssid, path => '/strict');
ok($r && $r->{isError}, 'mcp_schema_format assertion: February 30th refused');
is($r && $r->{content}[0]{text}, 'arguments.when: must be a valid date', '... saying why');
$r = call('input', { when => '2024-02-29' }, sid => $ssid, path => '/strict');
ok($r && !$r->{isError}, '... a leap day passes');

# nginx -t: another dialect, and a bad mcp_schema_format
for my $b (
    [ q{mcp_tool x { description d; pass /a; input_schema '{"$schema":"http://json-schema.org/draft-07/schema#"}'; }},
      qr/MCP tool "x" .*inputSchema's \$schema "http:\/\/json-schema\.org\/draft-07\/schema#" is not JSON Schema 2020-12/ ],
    [ q{mcp_tool x { description d; pass /a; output_schema '{"$schema":"https://json-schema.org/draft/2019-09/schema"}'; }},
      qr/outputSchema's \$schema "https:\/\/json-schema\.org\/draft\/2019-09\/schema" is not JSON Schema 2020-12/ ],
    [ 'mcp_schema_format strict;', qr/invalid value "strict"/ ],
) {
    my ($conf, $re) = @$b;
    conf_refused("$conf\n        location = /mcp { mcp on; }", $re, $conf);
}
my $c = McpTest->new(server => q{mcp_tool x { description d; pass /a; input_schema '{"$schema":"https://json-schema.org/draft/2020-12/schema"}'; }}
                             . "\n        location = /mcp { mcp on; }");
my ($rc, $out) = $c->nginx_t;
is($rc, 0, '$schema 2020-12: fine') or diag($out);

done_testing;
