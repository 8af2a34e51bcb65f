# prompts/list and prompts/get of the Everything set against the seed,
# required and non-string arguments, unknown prompts; completion/complete.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use McpTest;
use McpAssert;

my $t = everything();
my ($sid) = $t->mcp_initialize;

sub req {
    my ($method, $params, $id) = @_;
    my ($msg) = $t->mcp_request($sid, $method, $params, id => $id // 'r');
    return $msg;
}

sub user_text { { role => 'user', content => { type => 'text', text => $_[0] } } }

# --- prompts/list -------------------------------------------------------------

{
    my $msg = req('prompts/list', undef, 'pl');
    my $p = $msg->{result}{prompts} // [];
    is_deeply([ map { $_->{name} } @$p ],
              [ qw(test_simple_prompt test_prompt_with_arguments
                   test_prompt_with_embedded_resource test_prompt_with_image
                   test_input_required_result_prompt) ],
              'prompts/list: the five Everything prompts, in order');
    ok(!exists $msg->{result}{nextCursor}, 'prompts/list: one page');
    my %by = map { $_->{name} => $_ } @$p;
    is_deeply($by{test_prompt_with_arguments}, {
        name => 'test_prompt_with_arguments', description => 'A prompt with required arguments',
        arguments => [
            { name => 'arg1', description => 'First test argument', required => JSON::PP::true() },
            { name => 'arg2', description => 'Second test argument', required => JSON::PP::true() },
        ] }, 'prompts/list: test_prompt_with_arguments exactly as the seed');
    is_deeply($by{test_prompt_with_embedded_resource}{arguments},
              [ { name => 'resourceUri', description => 'URI of the resource to embed',
                  required => JSON::PP::true() } ],
              'prompts/list: test_prompt_with_embedded_resource requires resourceUri');
    for my $name (qw(test_simple_prompt test_prompt_with_image)) {
        ok(length($by{$name}{description} // '') && !@{ $by{$name}{arguments} // [] },
           "prompts/list: $name has a description and no arguments");
    }
}

# --- prompts/get: the seed's messages ---------------------------------------

is_result(req('prompts/get', { name => 'test_simple_prompt' }, 'g1'),
          { messages => [ user_text('This is a simple prompt for testing.') ] },
          'g1', 'test_simple_prompt');
is_result(req('prompts/get', { name => 'test_prompt_with_arguments',
                               arguments => { arg1 => 'hello', arg2 => 'world' } }, 'g2'),
          { messages => [ user_text("Prompt with arguments: arg1='hello', arg2='world'") ] },
          'g2', 'test_prompt_with_arguments (hello, world): the seed\'s text');
is_result(req('prompts/get', { name => 'test_prompt_with_arguments',
                               arguments => { arg2 => "b\x{e9}", arg1 => '' } }, 'g3'),
          { messages => [ user_text("Prompt with arguments: arg1='', arg2='b\x{e9}'") ] },
          'g3', 'test_prompt_with_arguments: empty and non-ASCII values');
is_result(req('prompts/get', { name => 'test_prompt_with_embedded_resource',
                               arguments => { resourceUri => 'test://static-text' } }, 'g4'),
          { messages => [
              { role => 'user', content => { type => 'resource', resource => {
                  uri => 'test://static-text', mimeType => 'text/plain',
                  text => 'Embedded resource content for testing.' } } },
              user_text('Please process the embedded resource above.') ] },
          'g4', 'test_prompt_with_embedded_resource: the seed\'s two messages');
is_result(req('prompts/get', { name => 'test_prompt_with_image' }, 'g5'),
          { messages => [
              { role => 'user', content => { type => 'image', data => $PNG_B64,
                                             mimeType => 'image/png' } },
              user_text('Please analyze the image above.') ] },
          'g5', 'test_prompt_with_image: image then text');

# --- prompts/get errors: -32602 -----------------------------------------------

for my $case (
    [ { name => 'test_prompt_with_arguments', arguments => { arg1 => 'hello' } }, 'arg2 missing' ],
    [ { name => 'test_prompt_with_arguments', arguments => { arg2 => 'world' } }, 'arg1 missing' ],
    [ { name => 'test_prompt_with_arguments' },                                 'no arguments' ],
    [ { name => 'test_prompt_with_arguments', arguments => {} },                'empty arguments' ],
    [ { name => 'test_prompt_with_arguments', arguments => { arg1 => 1, arg2 => 'w' } },
                                                                                'arg1 a number' ],
    [ { name => 'test_prompt_with_arguments', arguments => { arg1 => 'h', arg2 => { x => 1 } } },
                                                                                'arg2 an object' ],
    [ { name => 'test_prompt_with_arguments', arguments => [ 'hello', 'world' ] },
                                                                                'arguments an array' ],
    [ { name => 'test_prompt_with_embedded_resource' },                         'resourceUri missing' ],
    [ { name => 'no_such_prompt' },                                             'unknown prompt' ],
    [ { name => 'Test_Simple_Prompt' },                                         'wrong case' ],
    [ {},                                                                       'name missing' ],
    [ { name => 3 },                                                            'name a number' ],
) {
    my ($params, $what) = @$case;
    is_error(req('prompts/get', $params, 'e'), -32602, 'e', "prompts/get, $what: -32602");
}

# --- completion/complete -------------------------------------------------------

sub complete {
    my ($ref, $name, $value, $id) = @_;
    return req('completion/complete',
               { ref => $ref, argument => { name => $name, defined $value ? (value => $value) : () } },
               $id // 'c');
}
my $args_ref = { type => 'ref/prompt', name => 'test_prompt_with_arguments' };
my $tmpl_ref = { type => 'ref/resource', uri => 'test://template/{id}/data' };

is_result(complete($args_ref, 'arg1', 'par', 'c1'),
          { completion => { values => [ qw(paris park party) ], total => 3,
                            hasMore => JSON::PP::false() } },
          'c1', 'complete arg1 "par": paris, park, party (the seed\'s example)');
is_result(complete($args_ref, 'arg1', 'test', 'c2'),
          { completion => { values => [ qw(test testValue1) ], total => 2,
                            hasMore => JSON::PP::false() } },
          'c2', 'complete arg1 "test"');
is_result(complete($args_ref, 'arg2', 'w', 'c3'),
          { completion => { values => [ 'world' ], total => 1, hasMore => JSON::PP::false() } },
          'c3', 'complete arg2 "w": world');
is_result(complete($args_ref, 'arg1', 'zzz', 'c4'),
          { completion => { values => [], total => 0, hasMore => JSON::PP::false() } },
          'c4', 'complete arg1 "zzz": nothing');
is_result(complete($tmpl_ref, 'id', '1', 'c5'),
          { completion => { values => [ '1', '123' ], total => 2, hasMore => JSON::PP::false() } },
          'c5', 'complete template id "1"');
is_result(complete({ type => 'ref/prompt', name => 'test_prompt_with_embedded_resource' },
                   'resourceUri', 'test://s', 'c6'),
          { completion => { values => [ 'test://static-binary', 'test://static-text' ], total => 2,
                            hasMore => JSON::PP::false() } },
          'c6', 'complete resourceUri "test://s"');
{
    my $msg = complete($args_ref, 'arg1', '', 'c7');
    my $c = $msg->{result}{completion} // {};
    ok(@{ $c->{values} // [] } >= 3 && $c->{total} == @{ $c->{values} // [] }
       && !(grep { !defined || ref } @{ $c->{values} // [] }),
       'complete arg1 "": every value, total matches');
    cmp_ok(scalar @{ $c->{values} // [] }, '<=', 100, 'completion: at most 100 values');
}
is_result(complete({ type => 'ref/prompt', name => 'test_simple_prompt' }, 'x', '', 'c8'),
          { completion => { values => [], total => 0, hasMore => JSON::PP::false() } },
          'c8', 'complete an argument the prompt does not have: no values');

is_error(complete({ type => 'ref/prompt', name => 'no_such_prompt' }, 'arg1', 'p', 'e1'),
         -32602, 'e1', 'complete for an unknown prompt: -32602');
is_error(complete({ type => 'ref/resource', uri => 'test://nope/{x}' }, 'x', 'p', 'e2'),
         -32602, 'e2', 'complete for an unknown template: -32602');
is_error(complete({ type => 'ref/tool', name => 'test_simple_text' }, 'x', 'p', 'e3'),
         -32602, 'e3', 'complete with an unknown reference type: -32602');
is_error(req('completion/complete', { ref => $args_ref }, 'e4'), -32602, 'e4',
         'complete without argument: -32602');
is_error(req('completion/complete', { argument => { name => 'arg1', value => 'p' } }, 'e5'),
         -32602, 'e5', 'complete without ref: -32602');
is_error(complete($args_ref, 'arg1', 5, 'e6'), -32602, 'e6', 'complete with a numeric value: -32602');

$t->stop;
done_testing;
