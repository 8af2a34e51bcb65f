# t/stdio-everything/server.mjs, our own stdio Everything server for the
# conformance runs through an mcp_stdio location (issue #40): driven
# directly over its stdin and stdout (initialize, every tool, resource,
# prompt and completion the suite's seed names, the log, progress,
# sampling, elicitation and subscription exchanges, and a 2026-07-28
# request's caching hints, removed methods, log level and multi-round
# tools with their sealed state), then compared with the module's
# built-in Everything set (mcp_builtin everything) through nginx: the
# same names, and the same answers for every tool, resource, prompt and
# completion that answers the same on every call and for the multi-round
# tools' first rounds, once the program runs behind today's sessionless
# mcp_stdio pool (where a sealed state opens on whichever child).

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Time::HiRes qw(sleep time);
use IPC::Open3 qw(open3);
use IO::Select;
use Symbol qw(gensym);
use JSON::PP qw(encode_json decode_json);
use McpTest timeout => 120;
use McpGateway qw(node_available node_bin npm_dir);

my $why = node_available('@modelcontextprotocol/sdk');
plan skip_all => $why if $why;
my $NODE   = Cwd::abs_path(node_bin());
my $NPM    = Cwd::abs_path(npm_dir());
my $SERVER = Cwd::abs_path("$FindBin::Bin/stdio-everything/server.mjs");

# What the seed and the suites call: fixtures/ngx_http_mcp_everything*.c
# has these, and the tasks extension's tools, which a pool of children
# has no store for
my @MRTR = qw(test_input_required_result_elicitation
    test_input_required_result_sampling test_input_required_result_list_roots
    test_input_required_result_request_state
    test_input_required_result_tampered_state
    test_input_required_result_multiple_inputs
    test_input_required_result_multi_round
    test_input_required_result_capabilities test_streaming_elicitation
    test_missing_capability);
my @TOOLS = (qw(test_simple_text test_image_content test_audio_content
    test_embedded_resource test_multiple_content_types test_error_handling
    json_schema_2020_12_tool test_tool_with_logging test_tool_with_progress
    test_sampling test_elicitation test_elicitation_sep1034_defaults
    test_elicitation_sep1330_enums test_reconnection update_watched_resource
    test_logging_tool test_trigger_tool_change test_trigger_prompt_change
    test_custom_header_tool), @MRTR);
my @PROMPTS = qw(test_simple_prompt test_prompt_with_arguments
    test_prompt_with_embedded_resource test_prompt_with_image
    test_input_required_result_prompt);
my $V = '2026-07-28';
my $P = 'io.modelcontextprotocol/';

# a 2026-07-28 request's _meta
sub meta {
    my ($caps) = @_;
    return { "${P}protocolVersion" => $V, "${P}clientCapabilities" => $caps // {},
             "${P}clientInfo" => { name => 't', version => '1' } };
}
my @RESOURCES = qw(test://static-text test://static-binary test://watched-resource);

# --- a child of our own, spoken to line by line ------------------------------------

package Child {
    sub new {
        my ($class, @args) = @_;
        my $err = Symbol::gensym();
        my $pid = IPC::Open3::open3(my $in, my $out, $err, $NODE, $SERVER, @args);
        $in->autoflush(1);
        return bless { pid => $pid, in => $in, out => $out, err => $err, buf => '',
                       sel => IO::Select->new($out), seen => [] }, $class;
    }
    sub send { my ($s, $m) = @_; print { $s->{in} } JSON::PP::encode_json($m), "\n"; }

    # the next line as a message, or undef after $timeout seconds
    sub next {
        my ($s, $timeout) = @_;
        my $deadline = Time::HiRes::time() + ($timeout // 10);
        while ($s->{buf} !~ /\n/) {
            my $left = $deadline - Time::HiRes::time();
            return undef if $left <= 0 || !$s->{sel}->can_read($left);
            sysread($s->{out}, $s->{buf}, 65536, length $s->{buf}) or return undef;
        }
        $s->{buf} =~ s/\A([^\n]*)\n//;
        return JSON::PP::decode_json($1);
    }

    # sends a request, answers the child's own requests with $answer->($msg)
    # and returns (the response to ours, the other messages before it)
    sub call {
        my ($s, $id, $method, $params, $answer) = @_;
        $s->send({ jsonrpc => '2.0', id => $id, method => $method,
                   (defined $params ? (params => $params) : ()) });
        my @other;
        while (defined(my $m = $s->next)) {
            if (defined $m->{id} && !defined $m->{method} && "$m->{id}" eq "$id") {
                return ($m, \@other);
            }
            push @other, $m;
            if (defined $m->{id} && defined $m->{method} && $answer) {
                $s->send({ jsonrpc => '2.0', id => $m->{id}, %{ $answer->($m) } });
            }
        }
        return (undef, \@other);
    }

    sub initialize {
        my ($s, $caps) = @_;
        my ($r) = $s->call('init', 'initialize', { protocolVersion => '2025-11-25',
            capabilities => $caps // {}, clientInfo => { name => 't', version => '1' } });
        $s->send({ jsonrpc => '2.0', method => 'notifications/initialized' });
        return $r;
    }

    # closes its stdin; the exit status, or undef if it is still running
    # after $timeout seconds (then it is killed)
    sub finish {
        my ($s, $timeout) = @_;
        close $s->{in};
        my $deadline = Time::HiRes::time() + ($timeout // 5);
        while (Time::HiRes::time() < $deadline) {
            return $? >> 8 if waitpid($s->{pid}, POSIX::WNOHANG()) == $s->{pid};
            Time::HiRes::sleep(0.05);
        }
        kill 'KILL', $s->{pid};
        waitpid $s->{pid}, 0;
        return undef;
    }
}

use POSIX ();

my $c = Child->new('--npm', $NPM);
my $init = $c->initialize({ sampling => {}, elicitation => {} });

is($init->{result}{protocolVersion}, '2025-11-25', 'initialize: the version asked for');
is($init->{result}{serverInfo}{name}, 'mcp-conformance-test-server', 'initialize: the seed\'s serverInfo');
is_deeply($init->{result}{capabilities},
          { tools => { listChanged => JSON::PP::true },
            resources => { subscribe => JSON::PP::true, listChanged => JSON::PP::true },
            prompts => { listChanged => JSON::PP::true }, logging => {}, completions => {} },
          'initialize: the capabilities the seed requires');

my ($r) = $c->call(1, 'tools/list');
my %tool = map { $_->{name} => $_ } @{ $r->{result}{tools} // [] };
is_deeply([ sort keys %tool ], [ sort @TOOLS ], 'tools/list: every tool the suites call, and no other')
    or diag explain [ sort keys %tool ];
ok(!grep({ !$_->{description} || ($_->{inputSchema}{type} // '') ne 'object' } values %tool),
   'tools/list: each tool has a description and an object inputSchema');
my $s2020 = $tool{json_schema_2020_12_tool}{inputSchema} // {};
is($s2020->{'$schema'}, 'https://json-schema.org/draft/2020-12/schema', 'json_schema_2020_12_tool: $schema kept');
ok($s2020->{'$defs'}{address} && $s2020->{if} && $s2020->{then} && $s2020->{else},
   'json_schema_2020_12_tool: $defs, if, then and else kept');

($r) = $c->call(2, 'tools/call', { name => 'test_simple_text', arguments => {} });
is_deeply($r->{result}, { content => [ { type => 'text',
          text => 'This is a simple text response for testing.' } ] }, 'test_simple_text');
($r) = $c->call(3, 'tools/call', { name => 'test_error_handling', arguments => {} });
ok($r->{result}{isError}, 'test_error_handling: a result with isError, not a JSON-RPC error');
($r) = $c->call(4, 'tools/call', { name => 'test_image_content' });
is($r->{result}{content}[0]{mimeType}, 'image/png', 'test_image_content: a PNG');
($r) = $c->call(5, 'tools/call', { name => 'no_such_tool', arguments => {} });
is($r->{error}{code}, -32602, 'an unknown tool: -32602');

# progress: 0, 50 and 100 of 100 under the token, then the result
my $other;
($r, $other) = $c->call(6, 'tools/call', { name => 'test_tool_with_progress', arguments => {},
                                           _meta => { progressToken => 'tok' } });
is_deeply([ map { "$_->{params}{progressToken} $_->{params}{progress}/$_->{params}{total}" }
            grep { ($_->{method} // '') eq 'notifications/progress' } @$other ],
          [ 'tok 0/100', 'tok 50/100', 'tok 100/100' ], 'test_tool_with_progress: three progress notifications');
like($r->{result}{content}[0]{text}, qr/progress executed/, '... then its result');
($r, $other) = $c->call(7, 'tools/call', { name => 'test_tool_with_progress', arguments => {} });
is(scalar @$other, 0, 'test_tool_with_progress without a token: no notification');

# logging: three messages at info, filtered by logging/setLevel
($r) = $c->call(8, 'logging/setLevel', { level => 'debug' });
is_deeply($r->{result}, {}, 'logging/setLevel: {}');
($r, $other) = $c->call(9, 'tools/call', { name => 'test_tool_with_logging', arguments => {} });
is_deeply([ map { "$_->{params}{level} $_->{params}{data}" } @$other ],
          [ 'info Tool execution started', 'info Tool processing data', 'info Tool execution completed' ],
          'test_tool_with_logging: three log messages at info');
$c->call(10, 'logging/setLevel', { level => 'error' });
($r, $other) = $c->call(11, 'tools/call', { name => 'test_tool_with_logging', arguments => {} });
is(scalar @$other, 0, 'at level error: no log message');
ok($r->{result}, '... and the result');

# sampling and elicitation: requests to the client, answered here
my @asked;
($r) = $c->call(12, 'tools/call', { name => 'test_sampling', arguments => { prompt => 'Say hi' } },
    sub { push @asked, $_[0];
          { result => { role => 'assistant', model => 'm',
                        content => { type => 'text', text => 'hi there' } } } });
is($asked[0]{method}, 'sampling/createMessage', 'test_sampling: asks sampling/createMessage');
is_deeply($asked[0]{params}{messages}, [ { role => 'user', content => { type => 'text', text => 'Say hi' } } ],
          '... with the prompt');
is($asked[0]{params}{maxTokens}, 100, '... and maxTokens 100');
is($r->{result}{content}[0]{text}, 'LLM response: hi there', 'test_sampling: the answer in its result');

@asked = ();
($r) = $c->call(13, 'tools/call', { name => 'test_elicitation', arguments => { message => 'Who?' } },
    sub { push @asked, $_[0];
          { result => { action => 'accept', content => { username => 'u', email => 'e@x' } } } });
is($asked[0]{method}, 'elicitation/create', 'test_elicitation: asks elicitation/create');
is($asked[0]{params}{message}, 'Who?', '... with the message');
is_deeply($asked[0]{params}{requestedSchema}{required}, [ 'username', 'email' ], '... and the seed\'s schema');
like($r->{result}{content}[0]{text}, qr/^User response: action=accept, content=\{.*"username":"u"/,
     'test_elicitation: the answer in its result');

@asked = ();
($r) = $c->call(14, 'tools/call', { name => 'test_elicitation_sep1034_defaults', arguments => {} },
    sub { push @asked, $_[0]; { result => { action => 'decline' } } });
my $props = $asked[0]{params}{requestedSchema}{properties} // {};
is_deeply({ map { $_ => $props->{$_}{default} } keys %$props },
          { name => 'John Doe', age => 30, score => 95.5, status => 'active', verified => JSON::PP::true },
          'test_elicitation_sep1034_defaults: a default for each primitive type');
is($r->{result}{content}[0]{text}, 'Elicitation completed: action=decline, content=null',
   '... and a declined answer in its result');

@asked = ();
($r) = $c->call(15, 'tools/call', { name => 'test_elicitation_sep1330_enums', arguments => {} },
    sub { push @asked, $_[0]; { result => { action => 'cancel' } } });
is_deeply([ sort keys %{ $asked[0]{params}{requestedSchema}{properties} // {} } ],
          [ qw(legacyEnum titledMulti titledSingle untitledMulti untitledSingle) ],
          'test_elicitation_sep1330_enums: the five enum forms');

# a client that fails its request: the tool says so in an isError result
($r) = $c->call(16, 'tools/call', { name => 'test_sampling', arguments => { prompt => 'x' } },
    sub { { error => { code => -32603, message => 'no model' } } });
ok($r->{result}{isError}, 'sampling refused by the client: an isError result');

# resources
($r) = $c->call(20, 'resources/list');
is_deeply([ sort map { $_->{uri} } @{ $r->{result}{resources} // [] } ], [ sort @RESOURCES ], 'resources/list');
($r) = $c->call(21, 'resources/templates/list');
is($r->{result}{resourceTemplates}[0]{uriTemplate}, 'test://template/{id}/data', 'resources/templates/list');
($r) = $c->call(22, 'resources/read', { uri => 'test://static-text' });
is_deeply($r->{result}, { contents => [ { uri => 'test://static-text', mimeType => 'text/plain',
          text => 'This is the content of the static text resource.' } ] }, 'resources/read test://static-text');
($r) = $c->call(23, 'resources/read', { uri => 'test://template/123/data' });
is_deeply(decode_json($r->{result}{contents}[0]{text} // '{}'),
          { id => '123', templateTest => JSON::PP::true, data => 'Data for ID: 123' },
          'resources/read test://template/123/data: the id substituted');
($r) = $c->call(24, 'resources/read', { uri => 'test://no-such-resource' });
is($r->{error}{code}, -32002, 'resources/read of an unknown uri: -32002 (2025)');
($r) = $c->call(25, 'resources/read', { uri => 'test://no-such-resource',
    _meta => { 'io.modelcontextprotocol/protocolVersion' => '2026-07-28' } });
is($r->{error}{code}, -32602, '... -32602 for a 2026-07-28 request (SEP-2164)');
is($r->{error}{data}{uri}, 'test://no-such-resource', '... with the uri in its data');

# subscriptions: update_watched_resource notifies only while subscribed
($r) = $c->call(26, 'resources/subscribe', { uri => 'test://watched-resource' });
is_deeply($r->{result}, {}, 'resources/subscribe: {}');
($r, $other) = $c->call(27, 'tools/call', { name => 'update_watched_resource', arguments => {} });
is_deeply([ map { "$_->{method} $_->{params}{uri}" } @$other ],
          [ 'notifications/resources/updated test://watched-resource' ],
          'update_watched_resource: the subscriber is told');
$c->call(28, 'resources/unsubscribe', { uri => 'test://watched-resource' });
($r, $other) = $c->call(29, 'tools/call', { name => 'update_watched_resource', arguments => {} });
is(scalar @$other, 0, 'after resources/unsubscribe: not told');

# prompts and completion
($r) = $c->call(30, 'prompts/list');
is_deeply([ sort map { $_->{name} } @{ $r->{result}{prompts} // [] } ], [ sort @PROMPTS ], 'prompts/list');
($r) = $c->call(31, 'prompts/get', { name => 'test_prompt_with_arguments',
                                     arguments => { arg1 => 'hello', arg2 => 'world' } });
is($r->{result}{messages}[0]{content}{text}, "Prompt with arguments: arg1='hello', arg2='world'",
   'prompts/get test_prompt_with_arguments');
($r) = $c->call(32, 'prompts/get', { name => 'test_prompt_with_embedded_resource',
                                     arguments => { resourceUri => 'test://x' } });
is($r->{result}{messages}[0]{content}{resource}{uri}, 'test://x', 'prompts/get test_prompt_with_embedded_resource');
($r) = $c->call(33, 'prompts/get', { name => 'test_prompt_with_arguments', arguments => { arg1 => 'a' } });
is($r->{error}{code}, -32602, 'prompts/get without a required argument: -32602');
($r) = $c->call(34, 'completion/complete', { ref => { type => 'ref/prompt', name => 'test_prompt_with_arguments' },
                                             argument => { name => 'arg1', value => 'pa' } });
is_deeply($r->{result}{completion}, { values => [ qw(paris park party) ], total => 3, hasMore => JSON::PP::false },
          'completion/complete: the values that start with what was typed');

# --- 2026-07-28 requests: caching hints, multi-round tools -----------------------

($r) = $c->call(40, 'tools/list', { _meta => meta() });
is_deeply([ @{ $r->{result} }{qw(ttlMs cacheScope)} ], [ 0, 'public' ], '2026-07-28 tools/list: the caching hints');
($r) = $c->call(41, 'tools/list');
ok(!exists $r->{result}{ttlMs}, '... a 2025 one: none');
($r) = $c->call(42, 'resources/read', { uri => 'test://static-text', _meta => meta() });
is($r->{result}{cacheScope}, 'public', '2026-07-28 resources/read: the caching hints');

# the methods 2026-07-28 removed, and its per-request log level
for my $method (qw(logging/setLevel resources/subscribe resources/unsubscribe)) {
    ($r) = $c->call("rm-$method", $method, { _meta => meta() });
    is($r->{error}{code}, -32601, "2026-07-28 $method (removed): -32601");
}
($r) = $c->call('lvl', 'logging/setLevel', { level => 'loud' });
is($r->{error}{code}, -32602, 'logging/setLevel with an unknown level: -32602');
($r, $other) = $c->call('l26', 'tools/call', { name => 'test_logging_tool', arguments => {},
    _meta => { %{ meta() }, "${P}logLevel" => 'info' } });
is(scalar(grep { ($_->{method} // '') eq 'notifications/message' } @$other), 3,
   '2026-07-28 test_logging_tool at the request\'s level info: three log messages');
($r, $other) = $c->call('l26n', 'tools/call', { name => 'test_logging_tool', arguments => {}, _meta => meta() });
is(scalar @$other, 0, '... without a level: none');
ok($r->{result}, '... and the result');

my $ec = { elicitation => {} };
($r) = $c->call(43, 'tools/call', { name => 'test_input_required_result_elicitation', arguments => {},
                                    _meta => meta($ec) });
is($r->{result}{resultType}, 'input_required', 'a multi-round tool: an input-required result');
is($r->{result}{inputRequests}{user_name}{method}, 'elicitation/create', '... asking user_name by elicitation');
ok(!exists $r->{result}{content}, '... with no content (the SDK\'s result check is not in its way)');
($r) = $c->call(44, 'tools/call', { name => 'test_input_required_result_elicitation', arguments => {},
    inputResponses => { user_name => { action => 'accept', content => { name => 'Ada' } } },
    _meta => meta($ec) });
is($r->{result}{content}[0]{text}, 'Hello, Ada!', '... the retry with the answer completes it');
($r) = $c->call(45, 'tools/call', { name => 'test_input_required_result_elicitation', arguments => {} });
is($r->{error}{code}, -32600, '... a 2025 request of it: -32600');
($r) = $c->call(46, 'tools/call', { name => 'test_missing_capability', arguments => {}, _meta => meta({}) });
is($r->{error}{code}, -32021, 'test_missing_capability without sampling declared: -32021');
is_deeply($r->{error}{data}, { requiredCapabilities => { sampling => {} } }, '... naming sampling');

# the state comes back sealed; changed, it is refused
($r) = $c->call(47, 'tools/call', { name => 'test_input_required_result_request_state', arguments => {},
                                    _meta => meta($ec) });
my $state = $r->{result}{requestState} // '';
like($state, qr/^[\w-]+\.[\w-]+$/, 'request_state: a sealed requestState');
my $ok = { confirm => { action => 'accept', content => { ok => JSON::PP::true } } };
($r) = $c->call(48, 'tools/call', { name => 'test_input_required_result_request_state', arguments => {},
    inputResponses => $ok, requestState => $state, _meta => meta($ec) });
is($r->{result}{content}[0]{text}, 'state-ok: confirmed', '... brought back: the call completes');
(my $bad = $state) =~ s/^(.)/$1 eq 'A' ? 'B' : 'A'/e;
($r) = $c->call(49, 'tools/call', { name => 'test_input_required_result_request_state', arguments => {},
    inputResponses => $ok, requestState => $bad, _meta => meta($ec) });
is($r->{error}{code}, -32602, '... changed: -32602');
($r) = $c->call(50, 'tools/call', { name => 'test_input_required_result_tampered_state', arguments => {},
    inputResponses => $ok, requestState => $state, _meta => meta($ec) });
is($r->{error}{code}, -32602, '... brought to another tool: -32602 (bound to its name)');

# two rounds, the first answer carried in the state
($r) = $c->call(51, 'tools/call', { name => 'test_input_required_result_multi_round', arguments => {},
                                    _meta => meta($ec) });
($r) = $c->call(52, 'tools/call', { name => 'test_input_required_result_multi_round', arguments => {},
    inputResponses => { step1 => { action => 'accept', content => { name => 'Ada' } } },
    requestState => $r->{result}{requestState}, _meta => meta($ec) });
ok($r->{result}{inputRequests}{step2}, 'multi_round: the second round asks step2');
($r) = $c->call(53, 'tools/call', { name => 'test_input_required_result_multi_round', arguments => {},
    inputResponses => { step2 => { action => 'accept', content => { color => 'red' } } },
    requestState => $r->{result}{requestState}, _meta => meta($ec) });
is($r->{result}{content}[0]{text}, 'Ada likes red', '... and the third completes with both');

($r) = $c->call(35, 'ping');
is_deeply($r->{result}, {}, 'ping');
is($c->finish, 0, 'stdin closed: the program exits, status 0');

# a client without sampling or elicitation is not asked
$c = Child->new('--npm', $NPM);
$c->initialize({});
for my $t ([ 'test_sampling', { prompt => 'x' } ], [ 'test_elicitation', { message => 'x' } ]) {
    ($r, $other) = $c->call("no-$t->[0]", 'tools/call', { name => $t->[0], arguments => $t->[1] });
    ok($r->{result}{isError} && !grep({ defined $_->{method} } @$other),
       "$t->[0], the client lacking the capability: an isError result, no request");
}
is($c->finish, 0, 'the second child exits too');

# --- behind nginx: the sessionless mcp_stdio pool, beside the built-in set -----------

# in the environment of this test's children: the check for leftovers
# finds them, not another test's running beside it
my $MARK = McpTest::process_mark('stdio_everything');

my $t = McpTest->new(
    workers  => 2,
    fixtures => 1,
    server   => <<"NGX",
        location = /mcp {
            mcp_stdio $NODE $SERVER --npm $NPM;
            mcp_stdio_env $MARK;
            mcp_stdio_pool size=2;
            mcp_stdio_timeout 10s;
            mcp_stdio_stderr notice;
        }
        location = /builtin {
            mcp on;
            mcp_builtin everything;
        }
NGX
)->start;

sub stdio {
    my ($id, $method, $params, %o) = @_;
    my $m = $t->mcp_request(undef, $method, $params, id => $id, %o);
    return $m;
}

my $sid = $t->mcp_initialize(path => '/builtin');
sub builtin {
    my ($method, $params) = @_;
    return $t->mcp_request($sid, $method, $params, path => '/builtin');
}

$r = $t->mcp_post(undef, { jsonrpc => '2.0', id => 'i', method => 'initialize',
    params => { protocolVersion => '2025-11-25', capabilities => {},
                clientInfo => { name => 't', version => '1' } } });
is($r->{json}{result}{serverInfo}{name}, 'mcp-conformance-test-server',
   'through mcp_stdio: initialize answered from the child\'s own');

my $m = stdio('l', 'tools/list');
my %stdio_tools = map { $_->{name} => $_ } @{ $m->{result}{tools} // [] };
is_deeply([ sort keys %stdio_tools ], [ sort @TOOLS ], 'through mcp_stdio: tools/list, every tool');
my %builtin_tools = map { $_->{name} => $_ } @{ builtin('tools/list')->{result}{tools} // [] };
ok(!grep({ !$builtin_tools{$_} } @TOOLS), 'the built-in set has every one of them too')
    or diag explain [ grep { !$builtin_tools{$_} } @TOOLS ];
is_deeply({ map { $_ => $stdio_tools{$_} } @TOOLS }, { map { $_ => $builtin_tools{$_} } @TOOLS },
          '... each described as the built-in set describes it');

# every answer that does not depend on the client, compared with the built-in set's
my @same = (
    (map { [ 'tools/call', { name => $_, arguments => {} } ] }
         qw(test_simple_text test_image_content test_audio_content test_embedded_resource
            test_multiple_content_types test_error_handling)),
    [ 'tools/call', { name => 'json_schema_2020_12_tool', arguments => { name => 'n', email => 'e' } } ],
    [ 'resources/list', {} ],
    [ 'resources/templates/list', {} ],
    (map { [ 'resources/read', { uri => $_ } ] } @RESOURCES, 'test://template/123/data'),
    [ 'prompts/get', { name => 'test_simple_prompt' } ],
    [ 'prompts/get', { name => 'test_prompt_with_arguments', arguments => { arg1 => 'a', arg2 => 'b' } } ],
    [ 'prompts/get', { name => 'test_prompt_with_embedded_resource', arguments => { resourceUri => 'test://u' } } ],
    [ 'prompts/get', { name => 'test_prompt_with_image' } ],
    [ 'completion/complete', { ref => { type => 'ref/prompt', name => 'test_prompt_with_arguments' },
                               argument => { name => 'arg2', value => 't' } } ],
    [ 'completion/complete', { ref => { type => 'ref/resource', uri => 'test://template/{id}/data' },
                               argument => { name => 'id', value => '1' } } ],
);
my $n = 0;
for my $q (@same) {
    my $mine = stdio('s' . ++$n, @$q);
    my $theirs = builtin(@$q);
    my $what = "$q->[0] " . encode_json($q->[1]);
    ok($mine && $mine->{result}, "through mcp_stdio: $what answered") or diag explain $mine;
    is_deeply($mine->{result}, $theirs->{result}, '... as the built-in set answers it');
}

my %sp = map { $_->{name} => $_ } @{ stdio('pl', 'prompts/list')->{result}{prompts} // [] };
my %bp = map { $_->{name} => $_ } @{ builtin('prompts/list')->{result}{prompts} // [] };
is_deeply({ map { $_ => $sp{$_} } @PROMPTS }, { map { $_ => $bp{$_} } @PROMPTS },
          'through mcp_stdio: prompts/list, each prompt as the built-in set lists it');

# 2026-07-28 through the pool: the same first rounds as the built-in set's
# (the sealed states differ: another key), and a retry that completes
sub post26 {
    my ($id, $method, $params, $path) = @_;
    my %h = ('MCP-Protocol-Version' => $V, 'Mcp-Method' => $method);
    $h{'Mcp-Name'} = $params->{name} if defined $params->{name};
    my $r = $t->mcp_post(undef, { jsonrpc => '2.0', id => $id, method => $method,
                                  params => { %$params, _meta => meta({ elicitation => {}, sampling => {},
                                                                        roots => {} }) } },
                         path => $path, headers => \%h, protocol_version => undef);
    my ($m) = grep { defined $_->{id} && "$_->{id}" eq $id } @{ $r->{messages} // [] };
    return $m;
}
for my $name (@MRTR) {
    next if $name eq 'test_missing_capability';
    my $mine = post26("m-$name", 'tools/call', { name => $name, arguments => {} }, '/mcp');
    my $theirs = post26("b-$name", 'tools/call', { name => $name, arguments => {} }, '/builtin');
    # the built-in endpoint puts its serverInfo in every 2026 result's _meta
    delete @{ $_->{result} }{qw(requestState _meta)} for $mine, $theirs;
    ok($mine->{result}{inputRequests}, "2026-07-28 $name through mcp_stdio: an input-required result");
    is_deeply($mine->{result}, $theirs->{result}, '... as the built-in set\'s');
}
$m = post26('tl', 'tools/list', {}, '/mcp');
is($m->{result}{cacheScope}, 'public', '2026-07-28 tools/list through mcp_stdio: the caching hints');
# each retry on a fresh connection, so that either child of the pool may take it
{
    my $first = post26('rs1', 'tools/call', { name => 'test_input_required_result_request_state', arguments => {} }, '/mcp');
    my $done = 0;
    for my $i (1 .. 4) {
        my $m = post26("rs2-$i", 'tools/call', { name => 'test_input_required_result_request_state', arguments => {},
            inputResponses => $ok, requestState => $first->{result}{requestState} }, '/mcp');
        $done++ if ($m->{result}{content}[0]{text} // '') eq 'state-ok: confirmed';
    }
    is($done, 4, 'a sealed state opens on whichever child takes the retry (4 of 4)');
}

# progress through the pool: the reply is a stream of the three, then the result
$r = $t->mcp_post(undef, { jsonrpc => '2.0', id => 'p', method => 'tools/call',
    params => { name => 'test_tool_with_progress', arguments => {}, _meta => { progressToken => 5 } } });
is_deeply([ map { $_->{params}{progress} } grep { ($_->{method} // '') eq 'notifications/progress' }
            @{ $r->{messages} } ], [ 0, 50, 100 ], 'through mcp_stdio: the progress notifications on the POST\'s stream');
my ($last) = grep { defined $_->{id} } @{ $r->{messages} };
like($last->{result}{content}[0]{text} // '', qr/progress executed/, '... and the result last');

$t->stop;
my @left = McpTest::marked_pids($MARK);
ok(!@left, 'nginx -s quit: no child of this test left')
    or diag map { (McpTest::_slurp("/proc/$_/cmdline") // '') . "\n" } @left;

done_testing;
