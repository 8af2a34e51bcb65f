# The $mcp_* variables ($mcp_method, $mcp_tool, $mcp_session_id,
# $mcp_request_id, $mcp_protocol_version, $mcp_client_name) on a built-in
# endpoint and on the gateway: in a JSON access log, in a map used by
# add_header, in "if" (the POST body is parsed in the rewrite phase), and
# as the key of limit_req_zone (rate 1r/m per tool): the second call of a
# tool gets 429 (or limit_req's default 503) as a JSON-RPC error carrying
# the request's id, with Retry-After, and never reaches the upstream, while
# other tools and requests without a tool still pass.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use McpTest;
use McpAssert;
use McpGateway;

my $LOCATION = <<'NGX';
            access_log %%PREFIX%%/logs/vars.log mcpvars;
            add_header X-Tool-Class $tool_class always;
            set $branch "-";
            if ($mcp_method = "tools/call") { set $branch "call"; }
            if ($mcp_tool = "test_error_handling") { return 403; }
NGX

my $t = McpTest->new(
    ports => 2,
    http  => everything_upstream_http(<<'NGX'),
    log_format mcpvars escape=json '{"uri":"$uri","method":"$request_method","status":"$status",'
        '"m":"$mcp_method","tool":"$mcp_tool","sid":"$mcp_session_id","rid":"$mcp_request_id",'
        '"pv":"$mcp_protocol_version","client":"$mcp_client_name","cls":"$tool_class","branch":"$branch"}';

    map $mcp_tool $tool_class {
        default               other;
        test_simple_text      simple;
        ~^test_elicitation    elicitation;
        "~^test://"           resource;
    }

    limit_req_zone $mcp_tool zone=bi_tool:1m rate=1r/m;
    limit_req_zone $mcp_tool zone=gw_tool:1m rate=1r/m;
    limit_req_zone $mcp_tool zone=bi_tool503:1m rate=1r/m;
NGX
    server => <<"NGX",
        mcp_session gw;
        location = /bi { mcp on; mcp_builtin everything;
$LOCATION        }
        location = /gw { mcp_pass http://127.0.0.1:%%PORT2%%/mcp;
$LOCATION        }
        location = /bi-limited { mcp on; mcp_builtin everything;
                                 limit_req zone=bi_tool; limit_req_status 429; }
        location = /gw-limited { mcp_pass http://127.0.0.1:%%PORT2%%/mcp;
                                 limit_req zone=gw_tool; limit_req_status 429; }
        location = /bi-503     { mcp on; mcp_builtin everything; limit_req zone=bi_tool503; }
NGX
)->start;

$t->expect_log_error(qr/limiting requests, excess: [\d.]+ by zone "(?:bi_tool|gw_tool|bi_tool503)"/);

# A test of a log line that only a whole line can pass: one read while
# nginx is still writing it does not decode (upstream_log() gives it as
# { unparsed => $text }, without fields) and is read again next poll.
sub whole {
    my ($pred) = @_;
    return sub { !exists $_[0]{unparsed} && $pred->($_[0]) };
}

sub vars_line {
    my ($pred, $what) = @_;
    my $l = wait_upstream($t, whole($pred), 5, 'vars.log');
    ok($l, "$what: logged") or diag(McpTest::_slurp($t->prefix . '/logs/vars.log'));
    return $l // {};
}

for my $path ('/bi', '/gw') {
    my $gw = $path eq '/gw';
    my $init_id = "init$path";
    my ($sid, undef, $ir) = $t->mcp_initialize(path => $path, id => $init_id,
                                               client_info => { name => "vars-client$path", version => '1.0' });

    # initialize: the newly minted (client-facing) session id
    my $l = vars_line(sub { $_[0]{rid} eq $init_id }, "$path initialize");
    is($l->{m}, 'initialize', "$path initialize: \$mcp_method");
    is($l->{sid}, $sid, "$path initialize: \$mcp_session_id is the new session's id");
    is($l->{client}, "vars-client$path", "$path initialize: \$mcp_client_name from clientInfo");
    is($l->{pv}, '2025-11-25', "$path initialize: \$mcp_protocol_version");
    is($l->{tool}, '', "$path initialize: no \$mcp_tool");
    if ($gw) {
        my $u = wait_upstream($t, whole(sub { $_[0]{rid} eq $init_id }));
        isnt(($u // {})->{sid_out} // '', $sid, '/gw initialize: $mcp_session_id is the gateway\'s id, not the upstream\'s');
    }

    $l = vars_line(sub { $_[0]{m} eq 'notifications/initialized' && $_[0]{sid} eq $sid }, "$path notification");
    is($l->{rid}, '', "$path notification: no \$mcp_request_id");
    is($l->{client}, "vars-client$path", "$path notification: \$mcp_client_name from the session");
    is($l->{branch}, '-', "$path notification: the if (\$mcp_method = tools/call) branch not taken");

    # tools/call: numeric id, the map, the if
    my ($msg, $r) = $t->mcp_request($sid, 'tools/call', { name => 'test_simple_text' }, path => $path, id => 7);
    is($r->{headers}{'x-tool-class'}, 'simple', "$path tools/call test_simple_text: map \$mcp_tool -> X-Tool-Class: simple");
    $l = vars_line(sub { $_[0]{m} eq 'tools/call' && $_[0]{rid} eq '7' && $_[0]{sid} eq $sid }, "$path tools/call");
    is($l->{tool}, 'test_simple_text', "$path tools/call: \$mcp_tool is the tool's name");
    is($l->{rid}, '7', "$path tools/call: \$mcp_request_id of a numeric id");
    is($l->{pv}, '2025-11-25', "$path tools/call: \$mcp_protocol_version");
    is($l->{cls}, 'simple', "$path tools/call: the map's value logged");
    is($l->{branch}, 'call', "$path tools/call: if (\$mcp_method = \"tools/call\") taken in the rewrite phase");

    # a string id that needs escaping
    my $odd = "q\"b\\s/\x{e9}";
    ($msg, $r) = $t->mcp_request($sid, 'tools/call', { name => 'test_elicitation', arguments => { message => 'm' } },
                                 path => $path, id => $odd);
    is($r->{headers}{'x-tool-class'}, 'elicitation', "$path tools/call test_elicitation: map regex -> elicitation");
    $l = vars_line(sub { $_[0]{m} eq 'tools/call' && $_[0]{tool} eq 'test_elicitation' && $_[0]{sid} eq $sid },
                   "$path tools/call with an odd id");
    is($l->{rid}, $odd, "$path: \$mcp_request_id with quote, backslash and UTF-8, escape=json keeps it valid");

    # prompts/get and resources/read: the name, the URI
    $t->mcp_call($sid, 'prompts/get', { name => 'test_simple_prompt' }, path => $path, id => 'pg');
    $l = vars_line(sub { $_[0]{rid} eq 'pg' && $_[0]{sid} eq $sid }, "$path prompts/get");
    is($l->{tool}, 'test_simple_prompt', "$path prompts/get: \$mcp_tool is the prompt's name");
    is($l->{branch}, '-', "$path prompts/get: if not taken");
    ($msg, $r) = $t->mcp_request($sid, 'resources/read', { uri => 'test://static-text' }, path => $path, id => 'rr');
    is($r->{headers}{'x-tool-class'}, 'resource', "$path resources/read: map on the URI -> resource");
    $l = vars_line(sub { $_[0]{rid} eq 'rr' && $_[0]{sid} eq $sid }, "$path resources/read");
    is($l->{tool}, 'test://static-text', "$path resources/read: \$mcp_tool is the URI");
    is($l->{m}, 'resources/read', "$path resources/read: \$mcp_method");

    # ping: no tool; X-Tool-Class from the map's default
    ($msg, $r) = $t->mcp_request($sid, 'ping', undef, path => $path, id => 'pi');
    is($r->{headers}{'x-tool-class'}, 'other', "$path ping: X-Tool-Class: other (map default)");

    # if ($mcp_tool = ...) { return 403; }: nginx's own error, as JSON-RPC
    ($msg, $r) = $t->mcp_request($sid, 'tools/call', { name => 'test_error_handling' }, path => $path,
                                 id => 'forbidden', quiet => 1);
    is_rpc_error_body($r, 403, undef, 'forbidden', "$path: return 403 from if (\$mcp_tool = ...): a JSON-RPC error with the id");
    if ($gw) {
        $t->mcp_post($sid, '{"jsonrpc":"2.0","id":"v-marker","method":"ping"}', path => $path);
        wait_upstream($t, whole(sub { $_[0]{rid} eq 'v-marker' }));
        ok(!wait_upstream($t, whole(sub { $_[0]{rid} eq 'forbidden' }), 0),
           '/gw: the refused call never reached the upstream');
    }

    # GET stream and DELETE: the session id from the header
    my $g = $t->mcp_get_stream($sid, path => $path);
    $g->next_event(5);
    $g->close;
    $l = vars_line(sub { $_[0]{method} eq 'GET' && $_[0]{sid} eq $sid }, "$path GET");
    is($l->{m}, '', "$path GET: no \$mcp_method");
    is($l->{pv}, '2025-11-25', "$path GET: \$mcp_protocol_version from the header");
    $t->mcp_delete($sid, path => $path);
    $l = vars_line(sub { $_[0]{method} eq 'DELETE' && $_[0]{sid} eq $sid }, "$path DELETE");
    is($l->{status}, '200', "$path DELETE: 200, \$mcp_session_id logged");
}

{
    # a batch (2025-03-26): the variables tell its first request
    my ($sid) = $t->mcp_initialize(path => '/bi', protocol_version => '2025-03-26');
    my $r = $t->mcp_post($sid, '[{"jsonrpc":"2.0","method":"notifications/roots/list_changed"},'
                             . '{"jsonrpc":"2.0","id":"b1","method":"tools/call","params":{"name":"test_simple_text"}},'
                             . '{"jsonrpc":"2.0","id":"b2","method":"ping"}]', path => '/bi');
    is($r->{status}, 200, 'a batch in a 2025-03-26 session: 200');
    my $l = vars_line(sub { $_[0]{rid} eq 'b1' }, 'batch');
    is($l->{m}, 'tools/call', 'batch: $mcp_method of its first request');
    is($l->{tool}, 'test_simple_text', 'batch: $mcp_tool of its first request');
    is($l->{pv}, '2025-03-26', 'batch: $mcp_protocol_version of the session');
}

# --- limit_req keyed on $mcp_tool ----------------------------------------------

for my $path ('/bi-limited', '/gw-limited') {
    my $gw = $path =~ /gw/;
    my ($sid) = $t->mcp_initialize(path => $path);
    my ($msg, $r) = $t->mcp_request($sid, 'tools/call', { name => 'test_simple_text' }, path => $path, id => "$path-1");
    is($r->{status}, 200, "$path: the first test_simple_text call passes");
    ($msg, $r) = $t->mcp_request($sid, 'tools/call', { name => 'test_simple_text' }, path => $path, id => "$path-2");
    is_rpc_error_body($r, 429, undef, "$path-2", "$path: the second one within the minute: 429, JSON-RPC error with its id");
    is($r->{headers}{'retry-after'}, '1', "$path: 429 carries Retry-After");
    like(($msg->{error} // {})->{message} // '', qr/rate limit/i, "$path: the error says it is a rate limit");
    unlike($r->{body}, qr/<html/i, "$path: not nginx's HTML page");
    ($msg, $r) = $t->mcp_request($sid, 'tools/call', { name => 'test_image_content' }, path => $path, id => "$path-3");
    is($r->{status}, 200, "$path: another tool still passes");
    ok(ref(($msg // {})->{result}) eq 'HASH', "$path: ... and runs");
    for my $i (1 .. 3) {
        ($msg, $r) = $t->mcp_request($sid, 'ping', undef, path => $path, id => "$path-ping$i");
        is($r->{status}, 200, "$path: ping $i (no tool: an empty key is not limited)");
    }
    ($msg, $r) = $t->mcp_request($sid, 'tools/call', { name => 'test_simple_text' }, path => $path, id => "$path-4");
    is($r->{status}, 429, "$path: test_simple_text is still limited");
    if ($gw) {
        ok(wait_upstream($t, whole(sub { $_[0]{rid} eq "$path-ping3" })),
           '/gw-limited: the pings reached the upstream');
        my $limited = whole(sub { $_[0]{rid} eq "$path-2" || $_[0]{rid} eq "$path-4" });
        ok(!grep({ $limited->($_) } upstream_log($t)),
           '/gw-limited: the limited calls never reached the upstream');
        ok(wait_upstream($t, whole(sub { $_[0]{rid} eq "$path-1" }), 1), '/gw-limited: the first call did');
    }
    $t->mcp_delete($sid, path => $path);
}

{
    my ($sid) = $t->mcp_initialize(path => '/bi-503');
    $t->mcp_request($sid, 'tools/call', { name => 'test_simple_text' }, path => '/bi-503', id => 's1');
    my ($msg, $r) = $t->mcp_request($sid, 'tools/call', { name => 'test_simple_text' }, path => '/bi-503', id => 's2');
    is_rpc_error_body($r, 503, undef, 's2', 'limit_req without limit_req_status: 503 as a JSON-RPC error with the id');
    is($r->{headers}{'retry-after'}, '1', '503 carries Retry-After');
}

$t->stop;
done_testing;
