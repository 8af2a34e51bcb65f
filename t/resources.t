# resources/list, resources/templates/list, resources/read (static text,
# binary, the template test://template/{id}/data), -32002 for unknown
# resources, resources/subscribe and unsubscribe.

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

# --- listings: the seed's metadata --------------------------------------

is_result(req('resources/list', undef, 'rl'), { resources => [
    { uri => 'test://static-text', name => 'Static Text Resource',
      description => 'A static text resource for testing', mimeType => 'text/plain' },
    { uri => 'test://static-binary', name => 'Static Binary Resource',
      description => 'A static binary resource (image) for testing', mimeType => 'image/png' },
    { uri => 'test://watched-resource', name => 'Watched Resource',
      description => 'A resource that can be subscribed to', mimeType => 'text/plain' },
] }, 'rl', 'resources/list: the three direct resources with the seed\'s metadata, no templates');

is_result(req('resources/templates/list', {}, 'tl'), { resourceTemplates => [
    { uriTemplate => 'test://template/{id}/data', name => 'Resource Template',
      description => 'A resource template with parameter substitution',
      mimeType => 'application/json' },
] }, 'tl', 'resources/templates/list: the template with the seed\'s metadata');

# --- resources/read -----------------------------------------------------------

is_result(req('resources/read', { uri => 'test://static-text' }, 'st'),
          { contents => [ { uri => 'test://static-text', mimeType => 'text/plain',
                            text => 'This is the content of the static text resource.' } ] },
          'st', 'read test://static-text: the seed\'s text');

{
    my $msg = req('resources/read', { uri => 'test://static-binary' }, 'sb');
    my $c = $msg->{result}{contents} // [];
    is(scalar @$c, 1, 'read test://static-binary: one item');
    is_deeply([ sort keys %{ $c->[0] // {} } ], [ qw(blob mimeType uri) ],
              'read test://static-binary: uri, mimeType and blob (no text)');
    is($c->[0]{uri}, 'test://static-binary', 'read test://static-binary: uri');
    is($c->[0]{mimeType}, 'image/png', 'read test://static-binary: image/png');
    png_ok($c->[0]{blob}, 'read test://static-binary: blob is a base64 PNG');
}

is_result(req('resources/read', { uri => 'test://watched-resource' }, 'w'),
          { contents => [ { uri => 'test://watched-resource', mimeType => 'text/plain',
                            text => 'Watched resource content' } ] },
          'w', 'read test://watched-resource: the seed\'s text');

# The template: the seed gives the exact reply for id 123.
is_result(req('resources/read', { uri => 'test://template/123/data' }, 't123'),
          { contents => [ { uri => 'test://template/123/data', mimeType => 'application/json',
            text => '{"id":"123","templateTest":true,"data":"Data for ID: 123"}' } ] },
          't123', 'read test://template/123/data: the seed\'s reply');

for my $id ('1', '42', 'abc', 'xyz-789', 'A_b.c~d', '9' x 100) {
    my $uri = "test://template/$id/data";
    my $msg = req('resources/read', { uri => $uri }, "t$id");
    my $c = ($msg->{result}{contents} // [])->[0] // {};
    is($c->{uri}, $uri, "template id '" . substr($id, 0, 10) . "': uri echoed");
    is($c->{mimeType}, 'application/json', "template id '" . substr($id, 0, 10) . "': application/json");
    is_deeply(eval { McpTest::decode_json($c->{text} // '') },
              { id => $id, templateTest => JSON::PP::true(), data => "Data for ID: $id" },
              "template id '" . substr($id, 0, 10) . "': data for that id");
}

{
    # Percent-encoded values are decoded; JSON metacharacters stay inside the string.
    my $msg = req('resources/read', { uri => 'test://template/a%20b/data' }, 'pe');
    my $text = (($msg->{result}{contents} // [])->[0] // {})->{text} // '';
    is_deeply(eval { McpTest::decode_json($text) },
              { id => 'a b', templateTest => JSON::PP::true(), data => 'Data for ID: a b' },
              'template id a%20b: decoded to "a b"');
    $msg = req('resources/read', { uri => 'test://template/%22%7D%2C%22x%22%3A%7B/data' }, 'inj');
    $text = (($msg->{result}{contents} // [])->[0] // {})->{text} // '';
    is_deeply(eval { McpTest::decode_json($text) },
              { id => '"},"x":{', templateTest => JSON::PP::true(), data => 'Data for ID: "},"x":{' },
              'template id with JSON metacharacters: still one well-formed object');
}

# --- unknown resources: -32002; bad params: -32602 ----------------------

for my $uri ('test://nope', 'test://static-text/', 'TEST://static-text', 'test://template//data',
             'test://template/1/2/data', 'test://template/1/dat', 'test://template/1/data/x',
             'test://template/{id}/data?x', 'file:///etc/passwd', '') {
    is_error(req('resources/read', { uri => $uri }, 'nf'), -32002, 'nf',
             "read '$uri': resource not found (-32002)");
}
is_error(req('resources/read', {}, 'p1'), -32602, 'p1', 'read without uri: -32602');
is_error(req('resources/read', { uri => 5 }, 'p2'), -32602, 'p2', 'read with a numeric uri: -32602');
is_error(req('resources/read', { uri => [ 'test://static-text' ] }, 'p3'), -32602, 'p3',
         'read with an array uri: -32602');

# --- subscribe / unsubscribe ------------------------------------------------

is_result(req('resources/subscribe', { uri => 'test://watched-resource' }, 's1'), {}, 's1',
          'subscribe test://watched-resource: {}');
is_result(req('resources/subscribe', { uri => 'test://watched-resource' }, 's2'), {}, 's2',
          'subscribe again (idempotent): {}');
is_result(req('resources/subscribe', { uri => 'test://template/7/data' }, 's3'), {}, 's3',
          'subscribe to a templated resource: {}');
is_result(req('resources/unsubscribe', { uri => 'test://watched-resource' }, 'u1'), {}, 'u1',
          'unsubscribe test://watched-resource: {}');
is_result(req('resources/unsubscribe', { uri => 'test://watched-resource' }, 'u2'), {}, 'u2',
          'unsubscribe when not subscribed: {}');
is_result(req('resources/unsubscribe', { uri => 'test://template/7/data' }, 'u3'), {}, 'u3',
          'unsubscribe the templated resource: {}');
is_error(req('resources/subscribe', { uri => 'test://nope' }, 's4'), -32002, 's4',
         'subscribe to an unknown resource: -32002');
is_error(req('resources/subscribe', {}, 's5'), -32602, 's5', 'subscribe without uri: -32602');
is_error(req('resources/unsubscribe', { uri => 1 }, 'u4'), -32602, 'u4',
         'unsubscribe with a numeric uri: -32602');

{
    # Subscriptions go with the session: after DELETE a new session starts clean.
    my ($s2) = $t->mcp_initialize;
    my ($m) = $t->mcp_request($s2, 'resources/subscribe', { uri => 'test://static-text' }, id => 'x');
    is_result($m, {}, 'x', 'second session: subscribe');
    $t->status_is($t->mcp_delete($s2), 200, 'DELETE of a session with subscriptions: 200');
    is_result(req('resources/read', { uri => 'test://static-text' }, 'after'),
              { contents => [ { uri => 'test://static-text', mimeType => 'text/plain',
                                text => 'This is the content of the static text resource.' } ] },
              'after', 'the first session is unaffected');
}

$t->stop;
done_testing;
