# Tools and resources that nginx locations serve (mcp_tool, mcp_resource
# pass=): a real REST service (t/py/rest_upstream.py) behind proxy_pass,
# and locations of nginx itself.  tools/list shows the blocks; arguments
# are validated before any subrequest; $mcp_arg_NAME reaches the URI
# percent-encoded and a dot segment is refused; the JSON body of POST,
# PUT and PATCH; results by Content-Type (structuredContent under an
# output_schema, image, audio, text), a status of 400 or more and
# timeouts as isError results that say nothing of the upstream's body, a
# 5 MB reply refused; cancellation closes the upstream connection;
# progress; policy and $mcp_tool; resources; a 2026-07-28 stateless call;
# a reload that changes the tools tells an open GET stream; nginx -t
# errors for every bad block.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Time::HiRes qw(time sleep);
use IO::Select;
use IO::Socket::INET;
use McpTest timeout => 240;
use McpAssert;
use McpGateway qw(start_python_upstream);
use McpJwt;

my $V26 = '2026-07-28';
my $P = 'io.modelcontextprotocol/';

my $TOOLS = <<'NGX';
        mcp_tool get_order {
            description   "Look up an order by id";
            title         "Get order";
            input_schema  '{"type":"object","properties":{"id":{"type":"string","minLength":1}},"required":["id"]}';
            annotations   readOnlyHint idempotentHint destructiveHint=false;
            pass          /internal/orders;
            method        GET;
        }
        mcp_tool create_order {
            description   "Create an order";
            input_schema  %%PREFIX%%/conf/create.json;
            output_schema '{"type":"object","properties":{"body":{"type":"object"}}}';
            pass          /internal/create;
        }
        mcp_tool put_order    { description "Replace"; pass /internal/create; method PUT; }
        mcp_tool delete_order { description "Delete"; pass /internal/orders; method DELETE;
                                input_schema '{"type":"object","properties":{"id":{}}}'; }
        mcp_tool search       { description "Search"; pass /internal/echo; method GET;
                                input_schema '{"type":"object","properties":{"q":{},"n":{},"obj":{},"flag":{}}}'; }
        mcp_tool get_doc      { description "A document of nginx itself";
                                input_schema '{"type":"object","properties":{"id":{}}}';
                                pass /internal/doc; method GET; }
        mcp_tool fail_404     { description "404"; pass /internal/status/404; }
        mcp_tool fail_500     { description "500"; pass /internal/status/500; }
        mcp_tool slow         { description "Slow"; pass /internal/slow/10; method GET; }
        mcp_tool slowish      { description "A bit slow"; pass /internal/slow/0.3; method GET; }
        mcp_tool big          { description "5 MB"; pass /internal/big/5; method GET; }
        mcp_tool endless      { description "Chunked, 64 MB"; pass /internal/chunked/64; method GET; }
        mcp_tool cached       { description "Cached"; pass /internal/cached; method GET; }
        mcp_tool small        { description "0.5 MB"; pass /internal/big/0.5; method GET; }
        mcp_tool image        { description "PNG"; pass /internal/image; method GET; }
        mcp_tool audio        { description "WAV"; pass /internal/audio; method GET; }
        mcp_tool text         { description "Text"; pass /internal/text; method GET; }
        mcp_tool binary       { description "Binary"; pass /internal/binary; method GET; }
        mcp_tool array        { description "An array under a schema";
                                output_schema '{"type":"object"}';
                                pass /internal/array; method GET; }
        mcp_tool local_json   { description "nginx answers itself";
                                output_schema '{"type":"object"}';
                                pass /internal/local; }
        mcp_tool twice        { description "A member named twice";
                                output_schema '{"type":"object"}';
                                pass /internal/twice; }
        mcp_tool trailing     { description "Bytes after the object";
                                output_schema '{"type":"object"}';
                                pass /internal/trailing; }
        mcp_tool nowhere      { description "No such location"; pass /nothing/here; }
        mcp_tool down         { description "Upstream down"; pass /internal/down; }
        mcp_resource orders://summary pass=/internal/summary name=summary
                     "description=Order summary" mime_type=application/json;
        mcp_resource orders://missing pass=/internal/status/404;
        mcp_resource orders://logo pass=/internal/image;
NGX

my $LOCATIONS = <<'NGX';
        location = /mcp      { mcp on; mcp_tool_timeout 2s; mcp_tool_max_size 1m;
                               mcp_tools_deny fail_500; }
        location = /mcp-deny { mcp on; mcp_tools_deny get_order; }
        location = /mcp-both { mcp on; mcp_builtin everything;
                               mcp_tool both { description "Beside a builtin set";
                                               pass /internal/local; } }
        location = /mcp-log  { mcp on; access_log %%PREFIX%%/logs/tool.log tool; }
        location = /mcp-auth { mcp on; mcp_auth_jwt "MCP";
                               mcp_auth_resource http://127.0.0.1:%%PORT%%/mcp-auth;
                               mcp_auth_api_keys %%PREFIX%%/conf/api_keys;
                               mcp_auth_tool_scope get_order orders:read; }
        location /internal/orders { internal;
            proxy_pass http://rest/orders/$mcp_arg_id; }
        location /internal/create { internal;
            proxy_pass http://rest/orders/new; }
        location /internal/echo { internal;
            proxy_pass http://rest/echo?q=$mcp_arg_q&n=$mcp_arg_n&o=$mcp_arg_obj&flag=$mcp_arg_flag&missing=$mcp_arg_missing; }
        location /internal/doc { internal;
            proxy_pass http://127.0.0.1:%%PORT%%/docs/$mcp_arg_id; }
        location /internal/summary { internal; proxy_pass http://rest/orders/summary; }
        location /internal/cached  { internal; proxy_cache t75; proxy_cache_valid 200 1m;
                                     proxy_pass http://rest/orders/cached; }
        location /internal/local   { internal; default_type application/json;
                                     return 200 '{"ok":true,"from":"nginx"}'; }
        location /internal/twice   { internal; default_type application/json;
                                     return 200 '{"ok":false,"ok":true}'; }
        location /internal/trailing { internal; default_type application/json;
                                      return 200 '{"ok":true} {"ok":false}'; }
        location /internal/down    { internal; proxy_pass http://127.0.0.1:%%PORT3%%/; }
        location /internal/        { internal; proxy_pass http://rest/; }
        location /docs/  { return 200 "doc $uri"; }
        location /admin  { return 200 "ADMIN SECRET"; }
NGX

my $t = McpTest->new(
    ports => 3,
    http  => <<'NGX',
    upstream rest { server 127.0.0.1:%%PORT2%%; keepalive 4; }
    log_format tool '$mcp_tool $status';
    proxy_cache_path %%PREFIX%%/tmp/cache keys_zone=t75:1m;
    proxy_http_version 1.1;
    proxy_set_header Connection "";
NGX
    server => $TOOLS . $LOCATIONS,
);
$t->write_file('conf/create.json', <<'JSON');
{"type":"object","properties":{"item":{"type":"string"},"qty":{"type":"integer","minimum":1}},
 "required":["item","qty"]}
JSON
$t->write_file('conf/api_keys',
    McpJwt::api_key_line('sk_t75_plain', 'plain', 'mcp:tools')
    . McpJwt::api_key_line('sk_t75_orders', 'orders', 'mcp:tools orders:read'));
my ($py, $log) = start_python_upstream($t, 'rest_upstream', $t->port(2));
$t->expect_log_error(qr/connect\(\) failed/, qr/open\(\) ".*nothing\/here" failed/);
$t->start;

my ($sid) = $t->mcp_initialize;

sub upstream_entries {
    open my $fh, '<', $log or return ();
    return map { McpTest::decode_json($_) } grep { /\S/ } <$fh>;
}

sub last_upstream { my @e = upstream_entries(); $e[-1] }

sub call_tool {
    my ($name, $args, %o) = @_;
    return scalar $t->mcp_call($o{sid} // $sid, 'tools/call',
                               { name => $name, arguments => $args // {},
                                 %{ $o{params} // {} } },
                               path => $o{path}, timeout => $o{timeout} // 15,
                               $o{headers} ? (headers => $o{headers}) : ());
}

sub text_of { ((($_[0] // {})->{content} // [ {} ])->[0] // {})->{text} // '' }

# --- tools/list ---------------------------------------------------------------

{
    my $list = $t->mcp_call($sid, 'tools/list');
    my %by = map { $_->{name} => $_ } @{ $list->{tools} // [] };
    is_deeply($by{get_order},
              { name => 'get_order', title => 'Get order',
                description => 'Look up an order by id',
                inputSchema => { type => 'object', required => ['id'],
                                 properties => { id => { type => 'string', minLength => 1 } } },
                annotations => { readOnlyHint => JSON::PP::true(), idempotentHint => JSON::PP::true(),
                                 destructiveHint => JSON::PP::false() } },
              'tools/list: get_order as its block says');
    is($by{create_order}{inputSchema}{required}[1], 'qty', 'input_schema from a file');
    is_deeply($by{create_order}{outputSchema}{properties}{body}, { type => 'object' },
              'output_schema inline');
    is_deeply($by{put_order}{inputSchema}, { type => 'object' }, 'the default inputSchema');
    ok(!exists $by{fail_500}, 'a denied tool is not listed');
    ok(!exists $by{get_order}{execution}, 'no execution: taskSupport is forbidden');
}

{
    my ($bsid) = $t->mcp_initialize(path => '/mcp-both');
    my $list = $t->mcp_call($bsid, 'tools/list', undef, path => '/mcp-both');
    my %by = map { $_->{name} => 1 } @{ $list->{tools} // [] };
    ok($by{both} && $by{test_simple_text} && !$by{get_order},
       'a location with mcp_builtin and mcp_tool: both, and not the server\'s tools');
    my $r = call_tool('both', {}, sid => $bsid, path => '/mcp-both');
    is(text_of($r), '{"ok":true,"from":"nginx"}', '... and its tool works');
}

# --- calls ---------------------------------------------------------------------

{
    my $r = call_tool('get_order', { id => '42' });
    ok(!$r->{isError}, 'get_order: a result') or diag(McpTest::encode_json($r));
    my $j = eval { McpTest::decode_json(text_of($r)) } // {};
    is($j->{target}, '/orders/42', 'the location got $mcp_arg_id');
    is($j->{method}, 'GET', 'method GET');
    is($j->{body}, undef, 'GET: no body');
    my $e = last_upstream();
    ok(!exists $e->{headers}{authorization} && !exists $e->{headers}{'mcp-session-id'},
       'the MCP client\'s Mcp-Session-Id does not reach the upstream');
    ok(!exists $r->{structuredContent}, 'no output_schema: no structuredContent');

    # the MCP client's credentials are its own, not the service's
    $r = call_tool('get_order', { id => '43' },
                   headers => { 'X-Api-Key' => 'client-key', Cookie => 'c=1',
                                'Proxy-Authorization' => 'Basic eDp5',
                                'X-Trace' => 'kept' });
    ok(!$r->{isError}, 'get_order with the client\'s credentials: a result');
    $e = last_upstream();
    is_deeply([ map { exists $e->{headers}{$_} ? $_ : () }
                qw(x-api-key cookie proxy-authorization) ], [],
              'X-Api-Key, Cookie, Proxy-Authorization do not reach the upstream');
    is($e->{headers}{'x-trace'}, 'kept', '... another header does');
}

{
    my $r = call_tool('create_order', { item => 'book', qty => 2 });
    ok(!$r->{isError}, 'create_order: a result') or diag(McpTest::encode_json($r));
    is_deeply($r->{structuredContent}{body}, { item => 'book', qty => 2 },
              'POST: the arguments as a JSON body; output_schema: structuredContent');
    is_deeply(McpTest::decode_json(text_of($r)), $r->{structuredContent},
              '... and the same JSON as text');
    my $e = last_upstream();
    is($e->{headers}{'content-type'}, 'application/json', 'Content-Type: application/json');
    is($e->{method}, 'POST', 'method POST (the default)');

    $r = call_tool('put_order', { a => [1, 2] });
    $e = last_upstream();
    is_deeply([ $e->{method}, $e->{body} ], [ 'PUT', { a => [1, 2] } ], 'PUT with a JSON body');
    $r = call_tool('delete_order', { id => '9' });
    $e = last_upstream();
    is_deeply([ $e->{method}, $e->{target}, $e->{body} ], [ 'DELETE', '/orders/9', undef ],
              'DELETE without a body');
}

# --- argument validation: before any subrequest --------------------------------

{
    my $n = () = upstream_entries();
    my $r = call_tool('create_order', { item => 'book' });
    ok($r->{isError}, 'a missing required argument: isError');
    like(text_of($r), qr/qty/, '... naming it');
    $r = call_tool('create_order', { item => 'book', qty => 0 });
    ok($r->{isError}, 'qty 0 under minimum 1: isError');
    $r = call_tool('get_order', { id => 7 });
    ok($r->{isError}, 'a number where a string is wanted: isError');
    is(scalar(() = upstream_entries()), $n, 'no request reached the upstream');
}

# --- $mcp_arg_ escaping ----------------------------------------------------------

{
    my $r = call_tool('search', { q => "a b/c?d#e&f=g%2e\r\nX-Injected: 1", n => 3.5,
                                   obj => { k => [1, 'x'] }, flag => JSON::PP::true() });
    my $e = last_upstream();
    is($e->{target},
       '/echo?q=a%20b%2Fc%3Fd%23e%26f%3Dg%252e%0D%0AX-Injected%3A%201&n=3.5'
       . '&o=%7B%22k%22%3A%5B1%2C%22x%22%5D%7D&flag=true&missing=',
       '$mcp_arg_: one URI component each; numbers, objects, booleans as JSON; absent empty');
    ok(!exists $e->{headers}{'x-injected'}, 'CRLF injected no header');

    $r = call_tool('search', { q => "\x{e9}\x{6f22}\x{1F600}" });
    $e = last_upstream();
    like($e->{target}, qr{^/echo\?q=%C3%A9%E6%BC%A2%F0%9F%98%80&}, 'unicode: its UTF-8 bytes encoded');

    # the property's own spelling only: "Q" is not the "q" the schema checked
    my $n = () = upstream_entries();
    my ($e2) = $t->mcp_call($sid, 'tools/call', { name => 'search', arguments => { Q => 'upper' } });
    is($e2->{code}, -32602, '"Q" where the schema says "q": -32602');
    is(scalar(() = upstream_entries()), $n, '... and nothing reached the upstream');

    $r = call_tool('get_order', { id => 'a.b~c_d-e' });
    is(last_upstream()->{target}, '/orders/a.b~c_d-e', 'unreserved characters kept');

    for my $id ('..', '.', '../admin', 'x/../../admin', '..\\admin', 'a/./b') {
        my $n = () = upstream_entries();
        $r = call_tool('get_order', { id => $id });
        ok($r->{isError}, "id \"$id\": refused (isError)");
        like(text_of($r), qr/argument "id" is refused/, '... saying why');
        is(scalar(() = upstream_entries()), $n, '... nothing reached the upstream');
    }

    # the same against nginx, which decodes %2F and %2E before dot segments
    $r = call_tool('get_doc', { id => '../../admin' });
    ok($r->{isError} && text_of($r) !~ /SECRET/, 'nginx upstream: "../../admin" refused');
    $r = call_tool('get_doc', { id => '%2e%2e%2fadmin' });
    unlike(text_of($r), qr/SECRET/, 'nginx upstream: "%2e%2e%2fadmin" stays a name');
    is(text_of($r), 'doc /docs/%2e%2e%2fadmin', '... the upstream decoded it once');
    $r = call_tool('get_doc', { id => 'a/b' });
    is(text_of($r), 'doc /docs/a/b', '"a/b": a path below the prefix, no higher');
}

# --- results by status and type ------------------------------------------------------

{
    my $r = call_tool('fail_404');
    ok($r->{isError}, '404: isError');
    like(text_of($r), qr/HTTP 404/, '... naming the status');
    unlike(McpTest::encode_json($r), qr/internal detail|10\.1\.2\.3/, '... and nothing of the body');

    $r = $t->mcp_call($sid, 'tools/call', { name => 'fail_500', arguments => {} });
    ok(ref $r eq 'HASH' && $r->{code}, 'a denied tool (mcp_tools_deny): an error') or diag(McpTest::encode_json($r));

    $r = call_tool('fail_500', {}, path => '/mcp-deny');
    ok($r->{isError} && text_of($r) =~ /HTTP 500/, '500 elsewhere: isError naming HTTP 500');
    unlike(McpTest::encode_json($r), qr/internal detail/, '... without the body');

    my ($dsid) = $t->mcp_initialize(path => '/mcp-deny');
    $r = call_tool('get_order', { id => 1 }, sid => $dsid, path => '/mcp-deny');
    ok(ref $r eq 'HASH' && !exists $r->{content}, 'mcp_tools_deny get_order: denied there')
        or diag(McpTest::encode_json($r));

    $r = call_tool('nowhere');
    like(text_of($r), qr/HTTP 404/, 'a pass with no location: HTTP 404');
    $r = call_tool('down');
    ok($r->{isError} && text_of($r) =~ /HTTP 502/, 'upstream down: HTTP 502');

    $r = call_tool('image');
    is_deeply($r->{content}, [ { type => 'image', mimeType => 'image/png', data => $PNG_B64 } ],
              'image/png: image content');
    $r = call_tool('audio');
    is_deeply($r->{content}, [ { type => 'audio', mimeType => 'audio/wav', data => $WAV_B64 } ],
              'audio/wav: audio content');
    $r = call_tool('text');
    is(text_of($r), "plain text \x{e9}\x{6f22}", 'text/plain: text content');
    $r = call_tool('binary');
    ok($r->{isError}, 'bytes that are not text: isError');
    $r = call_tool('array');
    ok($r->{isError} && text_of($r) =~ /not an object/, 'output_schema, a JSON array: isError');
    $r = call_tool('local_json');
    is_deeply($r->{structuredContent}, { ok => JSON::PP::true(), from => 'nginx' },
              'a location that answers itself (return 200): structuredContent');
    # structuredContent must say what its text says to any other parser
    $r = call_tool('twice');
    ok($r->{isError} && !exists $r->{structuredContent},
       'output_schema, a member named twice: isError, no structuredContent');
    $r = call_tool('trailing');
    ok($r->{isError} && !exists $r->{structuredContent},
       'output_schema, bytes after the object: isError, no structuredContent');
}

# --- size and time bounds --------------------------------------------------------------

{
    my $t0 = time;
    my $r = call_tool('big', {}, timeout => 30);
    ok($r->{isError}, '5 MB reply over mcp_tool_max_size 1m: isError');
    like(text_of($r), qr/larger than mcp_tool_max_size/, '... saying so');
    my $before = grep { ($_->{event} // '') eq 'disconnected' } upstream_entries();
    $t0 = time;
    $r = call_tool('endless', {}, timeout => 30);
    ok($r->{isError} && text_of($r) =~ /larger than mcp_tool_max_size/,
       'a chunked reply without a length: refused at the bound');
    ok(time - $t0 < 2, sprintf('... once 1m came, not after 64 MB (%.1f s)', time - $t0));
    ok(wait_disconnected($before + 1), '... and its upstream connection was closed');
    my $n = () = upstream_entries();
    my @c = map { call_tool('cached') } 1 .. 3;
    is_deeply([ map { (eval { McpTest::decode_json(text_of($_)) } // {})->{target} } @c ],
              [ ('/orders/cached') x 3 ], 'proxy_cache in a tool\'s location: the same reply');
    is(scalar(() = upstream_entries()), $n + 1, '... the upstream asked once');
    $r = call_tool('small');
    is(length(text_of($r)), 512 * 1024, '0.5 MB: the whole reply');

    $t0 = time;
    $r = call_tool('slow', {}, timeout => 30);
    my $took = time - $t0;
    ok($r->{isError} && text_of($r) =~ /timed out/, 'slow upstream: isError, timed out');
    ok($took > 1.5 && $took < 5, sprintf('... after mcp_tool_timeout 2s (%.1f s)', $took));
    ok(wait_disconnected(1), '... and the upstream connection was closed');
    is_result(scalar $t->mcp_request($sid, 'ping', undef, id => 'p1'), {}, 'p1', 'the session goes on');
}

sub wait_disconnected {
    my ($want) = @_;
    my $deadline = time + 5;
    while (time < $deadline) {
        my $n = grep { ($_->{event} // '') eq 'disconnected' } upstream_entries();
        return 1 if $n >= $want;
        sleep 0.05;
    }
    return 0;
}

# --- cancellation, progress, a client that goes ------------------------------------------

sub wait_target {
    my ($re) = @_;
    my $deadline = time + 5;
    while (time < $deadline) {
        return 1 if grep { ($_->{target} // '') =~ $re && !$_->{event} } upstream_entries();
        sleep 0.05;
    }
    return 0;
}

sub slow_stream {
    my ($id, $token) = @_;
    return $t->mcp_post($sid, { jsonrpc => '2.0', id => $id, method => 'tools/call',
                                params => { name => 'slow', arguments => {},
                                            _meta => { progressToken => $token } } },
                        stream => 1, timeout => 15);
}

{
    my $before = grep { ($_->{event} // '') eq 'disconnected' } upstream_entries();
    my $n = () = upstream_entries();
    my $s = slow_stream('c1', 'tok-c1');
    my $p;
    while (my $ev = $s->next_event(5)) {
        if (ref $ev->{json} eq 'HASH') { $p = $ev->{json}; last }
    }
    is_deeply($p && $p->{params}, { progressToken => 'tok-c1', progress => 0, total => 2,
                                    message => 'calling /internal/slow/10' },
              'progress 0/2 when the subrequest starts');
    my $deadline = time + 5;
    sleep 0.05 while time < $deadline && (() = upstream_entries()) <= $n;
    ok((() = upstream_entries()) > $n, 'the slow upstream has the request');
    my $t0 = time;
    my $r = $t->mcp_notify($sid, 'notifications/cancelled', { requestId => 'c1', reason => 'enough' });
    is($r->{status}, 202, 'notifications/cancelled: 202');
    ok(wait_disconnected($before + 1), 'cancellation closed the upstream connection');
    ok(time - $t0 < 2, sprintf('... at once (%.2f s)', time - $t0));
    my @ev = $s->read_all(3);
    ok(!grep({ ref $_->{json} eq 'HASH' && exists $_->{json}{result} } @ev),
       'no result for the cancelled call');
    is_result(scalar $t->mcp_request($sid, 'ping', undef, id => 'p2'), {}, 'p2', 'the session goes on');
}

{
    # a call whose reply is plain JSON (no progress token): cancelled, its
    # POST ends with 202 and the upstream connection is closed
    my $before = grep { ($_->{event} // '') eq 'disconnected' } upstream_entries();
    my $n = () = upstream_entries();
    my $body = McpTest::encode_json({ jsonrpc => '2.0', id => 'cj', method => 'tools/call',
                                      params => { name => 'slow', arguments => {} } });
    my $sock = IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $t->port)
        or die "connect: $!";
    print $sock "POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
              . "Accept: application/json, text/event-stream\r\nMcp-Session-Id: $sid\r\n"
              . "MCP-Protocol-Version: 2025-11-25\r\nConnection: close\r\n"
              . 'Content-Length: ' . length($body) . "\r\n\r\n$body";
    my $deadline = time + 5;
    sleep 0.05 while time < $deadline && (() = upstream_entries()) <= $n;
    my $r = $t->mcp_notify($sid, 'notifications/cancelled', { requestId => 'cj' });
    is($r->{status}, 202, 'a JSON call cancelled: 202');
    my $reply = '';
    my $sel = IO::Select->new($sock);
    $deadline = time + 3;
    while (time < $deadline && $sel->can_read($deadline - time)) {
        last unless sysread($sock, my $buf, 4096);
        $reply .= $buf;
    }
    like($reply, qr{^HTTP/1\.1 202 }, '... its POST answered 202 without a response');
    ok(wait_disconnected($before + 1), '... and the upstream connection closed');
    close $sock;
}

{
    my $s = $t->mcp_post($sid, { jsonrpc => '2.0', id => 'pr', method => 'tools/call',
                                 params => { name => 'get_order', arguments => { id => 'p' },
                                             _meta => { progressToken => 7 } } },
                         stream => 1, timeout => 15);
    my @ev = grep { ref $_->{json} eq 'HASH' } $s->read_all(5);
    my @progress = map { $_->{json}{params} } grep { ($_->{json}{method} // '') eq 'notifications/progress' } @ev;
    is_deeply([ map { [ $_->{progress}, $_->{total}, $_->{message} ] } @progress ],
              [ [ 0, 2, 'calling /internal/orders' ], [ 1, 2, 'HTTP 200 from /internal/orders' ] ],
              'progress: the call started, the status arrived')
        or diag(explain \@progress);
    my ($res) = grep { exists $_->{json}{result} } @ev;
    ok($res && !$res->{json}{result}{isError}, '... then the result');
}

{
    my $before = grep { ($_->{event} // '') eq 'disconnected' } upstream_entries();
    my $n = () = upstream_entries();
    my $s = slow_stream('gone', 'tok-gone');
    1 until !defined($_ = $s->next_event(5)) || ref $_->{json} eq 'HASH';
    my $deadline = time + 5;
    sleep 0.05 while time < $deadline && (() = upstream_entries()) <= $n;
    $s->close;
    ok(wait_disconnected($before + 1), 'the client went: the upstream connection was closed');
    sleep 0.3;
    is_result(scalar $t->mcp_request($sid, 'ping', undef, id => 'p3'), {}, 'p3',
              'the session goes on, no worker died');
    my $r = call_tool('get_order', { id => 'after' });
    ok(!$r->{isError}, 'and the next call works');
}

# --- races: cancellations that meet replies, clients that vanish ---------------------------

{
    srand(75);
    my @s;
    for my $i (1 .. 30) {
        my $s = $t->mcp_post($sid, { jsonrpc => '2.0', id => "r$i", method => 'tools/call',
                                     params => { name => $i % 3 ? 'slowish' : 'get_order',
                                                 arguments => { id => "r$i" },
                                                 _meta => { progressToken => "r$i" } } },
                             stream => 1, timeout => 10);
        push @s, [ $i, $s ];
        sleep rand(0.05);
        if ($i % 2) {
            $t->mcp_notify($sid, 'notifications/cancelled', { requestId => "r$i" });
        }
        if ($i % 5 == 0) {
            $s->close;
        }
    }
    my ($results, $cancelled_results) = (0, 0);
    for my $p (@s) {
        my ($i, $s) = @$p;
        next if $s->is_done && !$s->{sock};
        my @ev = $s->read_all(5);
        my $got = grep { ref $_->{json} eq 'HASH' && exists $_->{json}{result} } @ev;
        $results += $got;
    }
    ok($results > 0, "30 calls, half cancelled, some abandoned: $results results came");
    is_result(scalar $t->mcp_request($sid, 'ping', undef, id => 'p4'), {}, 'p4',
              'the session goes on after the races');
    my $r = call_tool('get_order', { id => 'after-races' });
    ok(!$r->{isError}, 'a call after the races works');
}

# --- a task-augmented call: these tools cannot run as tasks ------------------------------

{
    my ($m) = $t->mcp_request($sid, 'tools/call',
                              { name => 'get_order', arguments => { id => 'task' },
                                task => { ttl => 60000 } }, id => 'task1');
    is(($m->{error} // {})->{code}, -32601, 'params.task: -32601, the tool cannot be a task')
        or diag(McpTest::encode_json($m));
}

# --- policy, scopes, $mcp_tool ------------------------------------------------------------

{
    my ($lsid) = $t->mcp_initialize(path => '/mcp-log');
    call_tool('get_order', { id => 'log' }, sid => $lsid, path => '/mcp-log');
    my $deadline = time + 3;
    my $text = '';
    while (time < $deadline) {
        $text = McpTest::_slurp($t->prefix . '/logs/tool.log') // '';
        last if $text =~ /get_order/;
        sleep 0.05;
    }
    like($text, qr/^get_order 200$/m, '$mcp_tool names a location-backed tool');

    for my $k ([ 'sk_t75_plain', 0 ], [ 'sk_t75_orders', 1 ]) {
        my ($key, $ok) = @$k;
        my ($asid) = McpJwt::initialize($t, $key, path => '/mcp-auth');
        ok($asid, "$key: a session");
        my ($m, $r) = $t->mcp_request($asid, 'tools/call',
                                      { name => 'get_order', arguments => { id => 's' } },
                                      path => '/mcp-auth', quiet => 1,
                                      headers => { Authorization => "Bearer $key" });
        if ($ok) {
            ok($m && $m->{result} && !$m->{result}{isError}, 'with orders:read: the call works');
        } else {
            is($r->{status}, 403, 'mcp_auth_tool_scope get_order orders:read: 403 without it');
            like($r->{headers}{'www-authenticate'} // '', qr/scope="orders:read"/,
                 '... naming the scope');
        }
    }
}

# --- resources ------------------------------------------------------------------------------

{
    my $list = $t->mcp_call($sid, 'resources/list');
    my %by = map { $_->{uri} => $_ } @{ $list->{resources} // [] };
    is_deeply($by{'orders://summary'}, { uri => 'orders://summary', name => 'summary',
                                        description => 'Order summary',
                                        mimeType => 'application/json' },
              'resources/list: mcp_resource as written');
    is($by{'orders://missing'}{name}, 'orders://missing', 'name defaults to the URI');

    my $r = $t->mcp_call($sid, 'resources/read', { uri => 'orders://summary' });
    my $c = ($r->{contents} // [])->[0] // {};
    is_deeply([ $c->{uri}, $c->{mimeType} ], [ 'orders://summary', 'application/json' ],
              'resources/read: uri and mime_type');
    is((eval { McpTest::decode_json($c->{text}) } // {})->{target}, '/orders/summary',
       '... the location\'s reply as text');
    $r = $t->mcp_call($sid, 'resources/read', { uri => 'orders://logo' });
    $c = ($r->{contents} // [])->[0] // {};
    is_deeply($c, { uri => 'orders://logo', mimeType => 'image/png', blob => $PNG_B64 },
              'an image: a blob');
    my ($m) = $t->mcp_request($sid, 'resources/read', { uri => 'orders://missing' }, id => 'rm');
    is(($m->{error} // {})->{code}, -32002, '404: -32002');
}

# --- 2026-07-28, stateless ----------------------------------------------------------------

{
    my $meta = { "${P}protocolVersion" => $V26, "${P}clientCapabilities" => {},
                 "${P}clientInfo" => { name => 't75', version => '1' } };
    my $r = $t->mcp_post(undef,
        { jsonrpc => '2.0', id => 's1', method => 'tools/call',
          params => { name => 'create_order', arguments => { item => 'pen', qty => 3 },
                      _meta => $meta } },
        protocol_version => undef,
        headers => { 'MCP-Protocol-Version' => $V26, 'Mcp-Method' => 'tools/call',
                     'Mcp-Name' => 'create_order' });
    is($r->{status}, 200, 'stateless tools/call: 200');
    my ($m) = grep { ref $_ eq 'HASH' && exists $_->{result} } @{ $r->{messages} };
    is_deeply($m && $m->{result}{structuredContent}{body}, { item => 'pen', qty => 3 },
              'stateless: the location\'s reply as structuredContent');
    is($m && $m->{result}{resultType}, 'complete', 'stateless: resultType complete');
    $r = $t->mcp_post(undef,
        { jsonrpc => '2.0', id => 's2', method => 'tools/call',
          params => { name => 'get_order', arguments => {}, _meta => $meta } },
        protocol_version => undef,
        headers => { 'MCP-Protocol-Version' => $V26, 'Mcp-Method' => 'tools/call',
                     'Mcp-Name' => 'get_order' });
    ($m) = grep { ref $_ eq 'HASH' && exists $_->{result} } @{ $r->{messages} };
    ok($m && $m->{result}{isError}, 'stateless: arguments validated as well');

    # a location's 404 for a resource, to a 2026-07-28 client: SEP-2164
    $r = $t->mcp_post(undef,
        { jsonrpc => '2.0', id => 's3', method => 'resources/read',
          params => { uri => 'orders://missing', _meta => $meta } },
        protocol_version => undef,
        headers => { 'MCP-Protocol-Version' => $V26, 'Mcp-Method' => 'resources/read',
                     'Mcp-Name' => 'orders://missing' });
    ($m) = grep { ref $_ eq 'HASH' && exists $_->{error} } @{ $r->{messages} };
    is_deeply($m && [ $m->{error}{code}, $m->{error}{data}{uri} ],
              [ -32602, 'orders://missing' ],
              'stateless: a location\'s 404 for a resource is -32602 naming the URI');
}

# --- reload: a changed tool list reaches an open GET stream -----------------------------------

{
    my $g = $t->mcp_get_stream($sid, timeout => 10);
    is($g->status, 200, 'a GET stream');
    (my $more = $TOOLS) =~ s/(mcp_tool get_order \{)/mcp_tool added { description "New"; pass \/internal\/local; }\n        $1/;
    ok($t->reload(server => $more . $LOCATIONS), 'reload with one tool more');
    my $got;
    my $deadline = time + 8;
    while (!$got && time < $deadline) {
        my $ev = $g->next_event(1) or next;
        $got = 1 if ref $ev->{json} eq 'HASH'
                    && ($ev->{json}{method} // '') eq 'notifications/tools/list_changed';
    }
    ok($got, 'notifications/tools/list_changed on the open GET stream');
    $g->close;
    my $list = $t->mcp_call($sid, 'tools/list');
    ok(grep({ $_->{name} eq 'added' } @{ $list->{tools} // [] }), 'the new tool is listed');
}

# --- HTTP/2: the subrequest of a stream (curl, when it speaks HTTP/2) -----------------------

SKIP: {
    skip 'no curl with HTTP/2', 3 unless (`curl -V 2>/dev/null` // '') =~ /HTTP2/;
    my $h2 = McpTest->new(listen => 'http2', ports => 2, server => <<'NGX');
        mcp_tool local_json { description "x"; output_schema '{"type":"object"}';
                              pass /internal/local; }
        mcp_tool down       { description "x"; pass /internal/down; }
        location = /mcp { mcp on; }
        location /internal/local { internal; default_type application/json;
                                   return 200 '{"ok":true}'; }
        location /internal/down  { internal; proxy_pass http://127.0.0.1:%%PORT2%%/; }
NGX
    $h2->expect_log_error(qr/connect\(\) failed/);
    $h2->start;
    my $u = 'http://127.0.0.1:' . $h2->port . '/mcp';
    my @h = ('-H', 'Content-Type: application/json',
             '-H', 'Accept: application/json, text/event-stream');
    my $curl = sub {
        my (@args) = @_;
        my (undef, $out) = McpTest::_run_capture([ 'curl', '-s', '--http2-prior-knowledge',
                                                   $u, @h, @args ], 20);
        return $out // '';
    };
    my $init = $curl->('-D', '-', '-d', McpTest::encode_json(
        { jsonrpc => '2.0', id => 1, method => 'initialize',
          params => { protocolVersion => '2025-11-25', capabilities => {},
                      clientInfo => { name => 'h2', version => '1' } } }));
    my ($hsid) = $init =~ /mcp-session-id: (\S+)/i;
    ok($hsid, 'HTTP/2: a session');
    my @s = ('-H', "Mcp-Session-Id: $hsid", '-H', 'MCP-Protocol-Version: 2025-11-25');
    my $out = $curl->(@s, '-d', '{"jsonrpc":"2.0","id":2,"method":"tools/call",'
                               . '"params":{"name":"local_json","arguments":{}}}');
    like($out, qr/"structuredContent":\{"ok":true\}/, 'HTTP/2: a location-backed tool');
    $out = $curl->(@s, '-d', '{"jsonrpc":"2.0","id":3,"method":"tools/call",'
                          . '"params":{"name":"down","arguments":{}}}');
    like($out, qr/"isError":true/, 'HTTP/2: its upstream down, an isError result');
}

# --- nginx -t ---------------------------------------------------------------------------

{
    my @bad = (
        [ 'mcp_tool x { pass /a; }', qr/mcp_tool "x" has no "description"/ ],
        [ 'mcp_tool x { description d; }', qr/mcp_tool "x" has no "pass"/ ],
        [ 'mcp_tool x { description d; pass a; }', qr/invalid pass "a"/ ],
        [ 'mcp_tool x { description d; pass @named; }', qr/invalid pass "\@named"/ ],
        [ 'mcp_tool x { description d; pass /a; method TRACE; }', qr/invalid method "TRACE"/ ],
        [ 'mcp_tool x { description d; pass /a; bogus 1; }', qr/unknown directive "bogus" in mcp_tool "x"/ ],
        [ 'mcp_tool x { description d; description e; pass /a; }', qr/is duplicate/ ],
        [ q~mcp_tool x { description d; pass /a; input_schema '{"type":'; }~, qr/schema "inline" is not a JSON object/ ],
        [ q~mcp_tool x { description d; pass /a; input_schema '[1]'; }~, qr/open\(\) ".*\[1\]" failed/ ],
        [ 'mcp_tool x { description d; pass /a; input_schema /no/such.json; }', qr/open\(\) "\/no\/such\.json" failed/ ],
        [ 'mcp_tool x { description d; pass /a; annotations fastHint; }', qr/unknown annotation "fastHint"/ ],
        [ 'mcp_tool x { description d; pass /a; annotations readOnlyHint=maybe; }', qr/the value is true or false/ ],
        [ 'mcp_tool "a b" { description d; pass /a; }', qr/invalid tool name "a b"/ ],
        [ 'mcp_tool x { description d; pass /a; } mcp_tool x { description d; pass /b; }', qr/duplicate MCP tool "x"/ ],
        [ 'mcp_resource nouri pass=/a;', qr/invalid resource URI "nouri": no scheme/ ],
        [ 'mcp_resource a://b name=x;', qr/mcp_resource "a:\/\/b" has no "pass="/ ],
        [ 'mcp_resource a://b pass=/a colour=red;', qr/invalid parameter "colour=red"/ ],
        [ 'mcp_tool_timeout 0;', qr/mcp_tool_timeout must be more than 0/ ],
        [ 'mcp_tool_max_size 0;', qr/mcp_tool_max_size must be more than 0/ ],
    );
    for my $b (@bad) {
        my ($conf, $re) = @$b;
        conf_refused("$conf\n        location = /mcp { mcp on; }", $re, $conf);
    }
    my $c = McpTest->new(server => 'mcp_tool x { description d; pass /a?b=1; } location = /mcp { mcp on; }');
    my ($rc, $out) = $c->nginx_t;
    is($rc, 0, 'a pass with a query string is fine') or diag($out);
}

done_testing;
