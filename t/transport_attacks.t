# The built-in endpoint, attacked (issue #18): initialize without a
# clientInfo name or with a number for it (undefined behaviour in the
# session code before: memcpy from NULL under the zone lock; now an empty
# client name, as documented); Accept read as a list of media ranges with
# q (substrings such as "application/jsonx" no longer pass, q=0 refuses);
# two Origin headers refused.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use McpTest;
use McpAssert;

my $t = everything();

sub init {
    my (%params) = @_;
    return $t->mcp_post(undef, { jsonrpc => '2.0', id => 1, method => 'initialize',
        params => { protocolVersion => '2025-11-25', capabilities => {}, %params } });
}

# --- row 8: clientInfo without a usable name ---------------------------------------

for my $case ([ 'no clientInfo', {} ],
              [ 'clientInfo without name', { clientInfo => { version => '1' } } ],
              [ 'clientInfo.name a number', { clientInfo => { name => 5, version => '1' } } ],
              [ 'clientInfo.name null', { clientInfo => { name => undef, version => '1' } } ],
              [ 'clientInfo.name an object', { clientInfo => { name => { a => 1 }, version => '1' } } ],
              [ 'clientInfo.name empty', { clientInfo => { name => '', version => '1' } } ]) {
    my ($name, $params) = @$case;
    my $r = init(%$params);
    is($r->{status}, 200, "$name: 200");
    like($r->{headers}{'mcp-session-id'} // '', qr/^[0-9a-f]{32}$/, "$name: a session");
    my $sid = $r->{headers}{'mcp-session-id'} or next;
    my $p = $t->mcp_post($sid, { jsonrpc => '2.0', id => 2, method => 'ping' });
    is_result($p->{json}, {}, 2, "$name: the session serves");
}

{
    my $r = init(clientInfo => 'x');
    is_error($r->{json}, -32602, 1, 'clientInfo a string: invalid params');
    $r = init(clientInfo => { name => ('n' x 300), version => '1' });
    is($r->{status}, 200, 'a 300-byte client name: 200');
}

# --- row 12: Accept is a list of media ranges, Origin is one ----------------------

my ($sid) = $t->mcp_initialize;

sub post_with {
    my (@headers) = @_;
    return $t->request(method => 'POST', path => '/mcp', body => '{"jsonrpc":"2.0","id":9,"method":"ping"}',
                       headers => [ 'Content-Type' => 'application/json', 'Mcp-Session-Id' => $sid,
                                    'MCP-Protocol-Version' => '2025-11-25', @headers ]);
}

for my $accept ('application/jsonx, text/event-streamy', 'application/json, text/event-streamy',
                'xapplication/json, text/event-stream', 'application/json;q=0, text/event-stream',
                'application/json, text/event-stream;q=0', 'application/json, text/event-stream; q=0.000',
                '*/*;q=0', 'application/*, text/event-stream;q=0', 'text/*, application/json;q=0',
                'application/json; charset=utf-8 text/event-stream', 'application, text',
                'application/json, text/*;q=0, text/event-stream;q=0') {
    my $r = post_with(Accept => $accept);
    is_rpc_error_body($r, 406, undef, undef, "Accept: $accept: 406 with a JSON-RPC error");
}

for my $accept ('application/json, text/event-stream', 'TEXT/EVENT-STREAM;q=0.5 , Application/JSON',
                '*/*', 'application/*, text/*', 'application/json;q=0.1, */*;q=0.2',
                'application/json; charset="utf-8;q=0", text/event-stream',
                'text/event-stream;level=1;q=1.0, application/json;q=0.001',
                '*/*;q=0.5, application/json;q=1, text/html;q=0',
                'text/*;q=0, text/event-stream, application/json') {
    my $r = post_with(Accept => $accept);
    is($r->{status}, 200, "Accept: $accept: 200");
}

{
    my $r = post_with(Accept => 'application/json', Accept => 'text/event-stream');
    is($r->{status}, 200, 'two Accept headers together name both types: 200');

    $r = post_with(Accept => 'application/json, text/event-stream',
                   Origin => 'http://localhost', Origin => 'http://evil.example');
    is_rpc_error_body($r, 403, undef, undef, 'two Origin headers: 403 with a JSON-RPC error');
    $r = post_with(Accept => 'application/json, text/event-stream',
                   Origin => 'http://localhost', Origin => 'http://localhost');
    is($r->{status}, 403, 'two Origin headers, even equal: 403');
    $r = post_with(Accept => 'application/json, text/event-stream', Origin => 'http://localhost');
    is($r->{status}, 200, 'one localhost Origin: 200');

    $r = $t->request(method => 'GET', path => '/mcp', timeout => 2,
                     headers => [ Accept => 'text/event-streamy', 'Mcp-Session-Id' => $sid,
                                  'MCP-Protocol-Version' => '2025-11-25' ]);
    is($r->{status}, 406, 'GET with Accept: text/event-streamy: 406');
    $r = $t->request(method => 'GET', path => '/mcp', timeout => 2,
                     headers => [ Accept => 'text/event-stream;q=0', 'Mcp-Session-Id' => $sid,
                                  'MCP-Protocol-Version' => '2025-11-25' ]);
    is($r->{status}, 406, 'GET with text/event-stream;q=0: 406');
}

$t->check_log;
done_testing;
