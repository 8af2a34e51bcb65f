# tools/list and tools/call of the Everything set, against the seed's
# payloads; unknown tools and bad arguments are -32602.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use McpTest;
use McpAssert;

my $t = everything();
my ($sid) = $t->mcp_initialize;

my @NAMES = qw(test_simple_text test_image_content test_audio_content test_embedded_resource
               test_multiple_content_types test_error_handling json_schema_2020_12_tool);
# The streaming tools come after the seven above (t/stream_*.t and
# t/requests*.t test them).
my @STREAMING = qw(test_tool_with_logging test_tool_with_progress test_sampling test_elicitation
                   test_elicitation_sep1034_defaults test_elicitation_sep1330_enums
                   test_reconnection update_watched_resource);
# The tools a 2026-07-28 client exercises come last (t/stateless.t).
my @STATELESS = qw(test_logging_tool test_input_required_result_elicitation
                   test_input_required_result_sampling test_input_required_result_list_roots
                   test_input_required_result_request_state
                   test_input_required_result_tampered_state
                   test_input_required_result_multiple_inputs
                   test_input_required_result_multi_round
                   test_input_required_result_capabilities test_streaming_elicitation
                   test_missing_capability test_trigger_tool_change
                   test_trigger_prompt_change test_custom_header_tool);
# The tools of the tasks scenarios come after them (t/tasks.t).
my @TASKS = qw(greet slow_compute failing_job protocol_error_job confirm_delete multi_input
               test_tool_with_task);
my %TAKES_ARGS = (json_schema_2020_12_tool => 1, test_sampling => 1, test_elicitation => 1);
my $NO_ARGS = { type => 'object', properties => {} };

# --- tools/list ------------------------------------------------------------

my ($list) = $t->mcp_request($sid, 'tools/list', undef, id => 'l');
my $tools = ref $list eq 'HASH' && ref $list->{result} eq 'HASH' ? $list->{result}{tools} : undef;
is(ref $tools, 'ARRAY', 'tools/list: result.tools is an array');
$tools = [] unless ref $tools eq 'ARRAY';
my %by_name = map { $_->{name} => $_ } @$tools;
is_deeply([ map { $_->{name} } @$tools ], [ @NAMES, @STREAMING, @STATELESS, @TASKS ],
          'tools/list: the Everything tools, in order (36: the seven, the streaming ones, '
          . 'the stateless ones, the tasks ones)');
is_deeply({ map { $_ => ($by_name{$_}{execution} // {})->{taskSupport} } @TASKS },
          { greet => undef, slow_compute => 'optional', failing_job => 'required',
            protocol_error_job => 'optional', confirm_delete => 'optional',
            multi_input => 'optional', test_tool_with_task => 'required' },
          'tools/list: the tasks tools say whether they may run as tasks (execution.taskSupport)');
ok(!exists $list->{result}{nextCursor}, 'tools/list: one page (no nextCursor)');
for my $tool (@$tools) {
    ok(defined $tool->{description} && !ref $tool->{description} && length $tool->{description},
       "tools/list: $tool->{name} has a description");
    is(ref $tool->{inputSchema}, 'HASH', "tools/list: $tool->{name} has an inputSchema object");
    is(($tool->{inputSchema} // {})->{type}, 'object', "tools/list: $tool->{name} inputSchema type object");
}
my %by = map { $_->{name} => $_ } @$tools;
is_deeply($by{$_}{inputSchema}, $NO_ARGS, "tools/list: $_ takes no arguments")
    for grep { !$TAKES_ARGS{$_} } @NAMES, @STREAMING;
is_deeply($by{test_sampling}{inputSchema},
          { type => 'object', required => ['prompt'],
            properties => { prompt => { type => 'string',
                                        description => 'The prompt to send to the LLM' } } },
          'tools/list: test_sampling takes a required string "prompt"');
is_deeply($by{test_elicitation}{inputSchema},
          { type => 'object', required => ['message'],
            properties => { message => { type => 'string',
                                         description => 'The message to show the user' } } },
          'tools/list: test_elicitation takes a required string "message"');
is_deeply($by{test_custom_header_tool}{inputSchema},
          { type => 'object', required => [qw(region priority verbose)],
            properties => { region   => { type => 'string',  'x-mcp-header' => 'Region' },
                            priority => { type => 'integer', 'x-mcp-header' => 'Priority' },
                            verbose  => { type => 'boolean', 'x-mcp-header' => 'Verbose' },
                            query    => { type => 'string' } } },
          'tools/list: test_custom_header_tool mirrors three arguments into headers (t/stateless_headers.t)');
is($by{test_simple_text}{description}, 'Tests simple text content response',
   'tools/list: test_simple_text description');

{
    my $s = $by{json_schema_2020_12_tool}{inputSchema} // {};
    is($s->{'$schema'}, 'https://json-schema.org/draft/2020-12/schema',
       'json_schema_2020_12_tool: $schema kept');
    is_deeply($s->{'$defs'}{address}{properties},
              { street => { type => 'string' }, city => { type => 'string' } },
              'json_schema_2020_12_tool: $defs kept');
    is($s->{'$defs'}{address}{'$anchor'}, 'addressDef', 'json_schema_2020_12_tool: $anchor kept');
    is($s->{properties}{address}{'$ref'}, '#/$defs/address', 'json_schema_2020_12_tool: $ref kept');
    is_deeply($s->{allOf}, [ { anyOf => [ { required => ['phone'] }, { required => ['email'] } ] } ],
              'json_schema_2020_12_tool: allOf/anyOf kept');
    ok(exists $s->{if} && exists $s->{then} && exists $s->{else},
       'json_schema_2020_12_tool: if/then/else kept');
    ok(defined $s->{additionalProperties} && !$s->{additionalProperties},
       'json_schema_2020_12_tool: additionalProperties false');
}

# --- tools/call: the seed's payloads ----------------------------------------

sub call {
    my ($name, $args, $id) = @_;
    my ($msg) = $t->mcp_request($sid, 'tools/call',
        { name => $name, (defined $args ? (arguments => $args) : ()) }, id => $id // $name);
    return $msg;
}

is_result(call('test_simple_text'),
          { content => [ { type => 'text', text => 'This is a simple text response for testing.' } ] },
          'test_simple_text', 'test_simple_text: the seed\'s text');
is_result(call('test_simple_text', {}, 'st2'),
          { content => [ { type => 'text', text => 'This is a simple text response for testing.' } ] },
          'st2', 'test_simple_text with empty arguments');

{
    my $msg = call('test_image_content');
    my $c = ($msg->{result}{content} // [])->[0] // {};
    is_deeply([ sort keys %{ $msg->{result} // {} } ], ['content'], 'test_image_content: only content');
    is(scalar @{ $msg->{result}{content} // [] }, 1, 'test_image_content: one item');
    is($c->{type}, 'image', 'test_image_content: type image');
    is($c->{mimeType}, 'image/png', 'test_image_content: image/png');
    png_ok($c->{data}, 'test_image_content: base64 of a PNG');
}

{
    my $msg = call('test_audio_content');
    my $c = ($msg->{result}{content} // [])->[0] // {};
    is(scalar @{ $msg->{result}{content} // [] }, 1, 'test_audio_content: one item');
    is($c->{type}, 'audio', 'test_audio_content: type audio');
    is($c->{mimeType}, 'audio/wav', 'test_audio_content: audio/wav');
    wav_ok($c->{data}, 'test_audio_content: base64 of a WAV');
}

is_result(call('test_embedded_resource'),
          { content => [ { type => 'resource', resource => {
              uri => 'test://embedded-resource', mimeType => 'text/plain',
              text => 'This is an embedded resource content.' } } ] },
          'test_embedded_resource', 'test_embedded_resource: the seed\'s resource');

is_result(call('test_multiple_content_types'),
          { content => [
              { type => 'text', text => 'Multiple content types test:' },
              { type => 'image', data => $PNG_B64, mimeType => 'image/png' },
              { type => 'resource', resource => {
                  uri => 'test://mixed-content-resource', mimeType => 'application/json',
                  text => '{"test":"data","value":123}' } } ] },
          'test_multiple_content_types', 'test_multiple_content_types: text + image + resource');

{
    my $msg = call('test_error_handling');
    is_result($msg, { isError => JSON::PP::true(), content => [ { type => 'text',
                  text => 'This tool intentionally returns an error for testing' } ] },
              'test_error_handling', 'test_error_handling: a result with isError, not a JSON-RPC error');
    ok(JSON::PP::is_bool($msg->{result}{isError}) && $msg->{result}{isError},
       'test_error_handling: isError is JSON true');
}

is_result(call('json_schema_2020_12_tool', { name => 'Ada', contactMethod => 'email', email => 'a@b.c' }),
          { content => [ { type => 'text', text => 'JSON Schema 2020-12 tool called with: '
                           . '{"contactMethod":"email","email":"a@b.c","name":"Ada"}' } ] },
          'json_schema_2020_12_tool', 'json_schema_2020_12_tool: echoes its arguments (as sent)');
# arguments are validated against the inputSchema: {} has neither phone nor email
is_result(call('json_schema_2020_12_tool', undef, 'js2'),
          { isError => JSON::PP::true(), content => [ { type => 'text',
            text => 'arguments: must match at least one schema of anyOf' } ] },
          'js2', 'json_schema_2020_12_tool without arguments: refused by its inputSchema');

{
    my ($msg) = $t->mcp_request($sid, 'tools/call',
        { name => 'test_simple_text', _meta => { progressToken => 'tok-1' } }, id => 'meta');
    is_result($msg, { content => [ { type => 'text',
                 text => 'This is a simple text response for testing.' } ] },
              'meta', 'tools/call with _meta.progressToken: result');
}

# --- errors --------------------------------------------------------------

is_error(call('no_such_tool', undef, 'u1'), -32602, 'u1', 'unknown tool: -32602');
is_error(call('Test_Simple_Text', undef, 'u2'), -32602, 'u2', 'tool names are case-sensitive');
is_error(call('', undef, 'u3'), -32602, 'u3', 'empty tool name: -32602');
for my $case ([ [1, 2], 'an array' ], [ 'x', 'a string' ], [ 42, 'a number' ],
              [ JSON::PP::true(), 'a boolean' ]) {
    my ($args, $what) = @$case;
    my ($msg) = $t->mcp_request($sid, 'tools/call', { name => 'test_simple_text', arguments => $args },
                                id => 'a');
    is_error($msg, -32602, 'a', "arguments $what: -32602");
}
{
    my ($msg) = $t->mcp_request($sid, 'tools/call', {}, id => 'n1');
    is_error($msg, -32602, 'n1', 'tools/call without name: -32602');
    ($msg) = $t->mcp_request($sid, 'tools/call', { name => [ 'test_simple_text' ] }, id => 'n2');
    is_error($msg, -32602, 'n2', 'tools/call with a non-string name: -32602');
    ($msg) = $t->mcp_request($sid, 'tools/call', undef, id => 'n3');
    is_error($msg, -32602, 'n3', 'tools/call without params: -32602');
}

$t->stop;
done_testing;
