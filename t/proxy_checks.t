# mcp_pass_check_arguments and mcp_pass_check_results: a gateway holds
# a real upstream's tools/call to the schemas the upstream listed (issue
# #41, Deliver 3), and $mcp_outcome / $mcp_error_code tell how each
# relayed call ended.  The upstream is the TypeScript SDK's low-level
# Server (t/js/tools_upstream.mjs), which holds its results to nothing:
# its "weather" breaks its own outputSchema for a few cities.  Each case
# runs against an upstream that replies with SSE and one that replies
# with JSON: the two ways the gateway reads a reply.
#
# - Before any tools/list went through the gateway, a call is relayed
#   unchecked: the gateway has nothing to check against.
# - After a list (relayed by any worker: the zone keeps it), arguments
#   that break the inputSchema get an isError result naming the fault,
#   and the upstream never sees the call (its capture file says so);
#   in a batch, the other requests get an error and nothing is relayed.
# - A result whose structuredContent breaks the outputSchema (a member
#   missing, a wrong type, none at all) becomes an isError result, with
#   a [warn] line; a conforming result and the upstream's own isError
#   pass unchanged.
# - Without the directives, the same arguments reach the upstream.
# - The access log's $mcp_outcome and $mcp_error_code for relayed calls:
#   ok, is_error (the upstream's, and the check's), and error with the
#   upstream's code.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use McpTest;
use McpGateway;

my $why = node_available('@modelcontextprotocol/sdk');
plan skip_all => "node: $why" if $why;

my $t = McpTest->new(
    ports => 3,    # 2: the SSE upstream, 3: the JSON upstream
    http  => <<'NGX',
    mcp_session_zone zone=gw:1m;
    log_format audit '$http_x_tag $mcp_method $mcp_outcome $mcp_error_code';
NGX
    server => <<'NGX',
        access_log %%PREFIX%%/logs/audit.log audit;
        location = /sse {
            mcp_pass http://127.0.0.1:%%PORT2%%/mcp; mcp_session gw;
            mcp_pass_check_arguments on; mcp_pass_check_results on;
        }
        location = /json {
            mcp_pass http://127.0.0.1:%%PORT3%%/mcp; mcp_session gw;
            mcp_pass_check_arguments on; mcp_pass_check_results on;
        }
        location = /unchecked {
            mcp_pass http://127.0.0.1:%%PORT3%%/mcp; mcp_session gw;
        }
        location = /small {
            mcp_pass http://127.0.0.1:%%PORT3%%/mcp; mcp_session gw;
            mcp_pass_filter_buffer_size 64;
        }
        location = /small-sse {
            mcp_pass http://127.0.0.1:%%PORT2%%/mcp; mcp_session gw;
            mcp_pass_filter_buffer_size 64;
        }
        location = /small-checked {
            mcp_pass http://127.0.0.1:%%PORT3%%/mcp; mcp_session gw;
            mcp_pass_filter_buffer_size 64; mcp_pass_check_results on;
        }
NGX
)->start;

my (undef, $sse_calls) = start_tools_upstream($t, $t->port(2), name => 'sse');
my (undef, $json_calls) = start_tools_upstream($t, $t->port(3), name => 'json', json => 1);

# the calls the upstream received, by city
sub received {
    my ($file) = @_;
    my @calls = map { McpTest::decode_json($_) } grep { /\S/ } split /\n/, McpTest::_slurp($file) // '';
    return [ map { $_->{args}{city} // '(none)' } grep { $_->{name} eq 'weather' } @calls ];
}

sub text_of { join '', map { $_->{text} // '' } @{ $_[0]{content} // [] } }

my $tag = 0;

sub call {
    my ($path, $sid, $args, $name) = @_;
    my ($msg) = $t->mcp_request($sid, 'tools/call', { name => $name // 'weather', arguments => $args },
                                path => $path, headers => { 'X-Tag' => 't' . ++$tag });
    return ($msg, 't' . $tag);
}

# the audit line of a tagged request: its method, outcome and code
sub audit {
    my ($tag) = @_;
    my $line;
    McpTest::wait_until(5, sub {
        ($line) = grep { /^$tag / } split /\n/, McpTest::_slurp($t->prefix . '/logs/audit.log') // '';
        defined $line;
    });
    return $line // '';
}

for my $case ([ '/sse', $sse_calls ], [ '/json', $json_calls ]) {
    my ($path, $calls) = @$case;

    my ($sid) = $t->mcp_initialize(path => $path);
    ok($sid, "$path: initialized");

    # nothing listed yet: relayed as it is
    my ($msg) = call($path, $sid, { city => 'nowhere' });
    ok($msg && $msg->{result} && !$msg->{result}{isError},
       "$path: before any tools/list, a result is not checked")
        or diag(McpTest::encode_json($msg));
    is_deeply($msg->{result}{structuredContent}, { city => 'nowhere' }, '... and passes as it came');

    my ($list) = $t->mcp_request($sid, 'tools/list', {}, path => $path);
    is(scalar @{ $list->{result}{tools} // [] }, 2, "$path: tools/list relayed whole");

    my $seen = @{ received($calls) };

    # arguments the inputSchema refuses: an isError result, nothing relayed
    my $m = $t->log_mark;
    ($msg, my $tg) = call($path, $sid, {});
    ok($msg && $msg->{result}{isError}, "$path: a missing required argument: an isError result")
        or diag(McpTest::encode_json($msg));
    like(text_of($msg->{result}), qr/city/, '... naming the argument');
    like(audit($tg), qr/^$tg tools\/call is_error -$/, '... logged as is_error');
    ok($t->wait_for_log(qr/\[info\].*tool "weather" arguments refused/, 5, $m), '... and an [info] line');

    ($msg) = call($path, $sid, { city => 'Oslo', days => 9 });
    ok($msg && $msg->{result}{isError}, "$path: an argument over its maximum: isError");
    like(text_of($msg->{result}), qr/days/, '... naming it');

    ($msg) = call($path, $sid, { city => 'Oslo', wind => 1 });
    ok($msg && $msg->{result}{isError}, "$path: an argument the schema does not allow: isError");

    # a batch with a refused call is relayed not at all
    my $r = $t->mcp_post($sid, [
        { jsonrpc => '2.0', id => 'b1', method => 'tools/call',
          params => { name => 'weather', arguments => { city => '' } } },
        { jsonrpc => '2.0', id => 'b2', method => 'tools/call',
          params => { name => 'plain', arguments => {} } } ], path => $path);
    my %by = map { $_->{id} => $_ } @{ $r->{messages} };
    ok($by{b1} && $by{b1}{result}{isError}, "$path: in a batch, the refused call's result is isError");
    ok($by{b2} && $by{b2}{error}, '... the other request gets an error')
        or diag(McpTest::encode_json($r->{messages}));

    # a valid call goes through, its conforming result unchanged
    ($msg, $tg) = call($path, $sid, { city => 'Paris', days => 2 });
    is_deeply($msg->{result}{structuredContent}, { city => 'Paris', temperature => 21.5 },
              "$path: a valid call: relayed, its conforming result as it came");
    ok(!$msg->{result}{isError}, '... not an error');
    like(audit($tg), qr/^$tg tools\/call ok -$/, '... logged as ok');

    is_deeply([ @{ received($calls) }[$seen .. $#{ received($calls) }] ], [ 'Paris' ],
              "$path: the upstream received the valid call alone");

    # results that break the outputSchema
    for my $bad ([ nowhere => qr/temperature/ ], [ mars => qr/temperature/ ],
                 [ bare => qr/structuredContent is missing/ ])
    {
        $m = $t->log_mark;
        ($msg, $tg) = call($path, $sid, { city => $bad->[0] });
        ok($msg && $msg->{result}{isError}, "$path: '$bad->[0]' breaks the outputSchema: isError")
            or diag(McpTest::encode_json($msg));
        like(text_of($msg->{result}), qr/does not conform to its outputSchema: .*$bad->[1]/,
             '... naming the fault');
        ok(!exists $msg->{result}{structuredContent}, '... without the bad structuredContent');
        like(audit($tg), qr/^$tg tools\/call is_error -$/, '... logged as is_error');
        ok($t->wait_for_log(qr/\[warn\].*tool "weather" result breaks its outputSchema/, 5, $m),
           '... and a [warn] line');
    }

    # the upstream's own isError, and its JSON-RPC error
    ($msg, $tg) = call($path, $sid, { city => 'error' });
    is(text_of($msg->{result}), 'no such city', "$path: the upstream's own isError passes unchanged");
    like(audit($tg), qr/^$tg tools\/call is_error -$/, '... logged as is_error');

    ($msg, $tg) = call($path, $sid, {}, 'nosuch');
    ok($msg && $msg->{error}, "$path: an unknown tool: the upstream's JSON-RPC error")
        or diag(McpTest::encode_json($msg));
    like(audit($tg), qr/^$tg tools\/call error -?\d+$/, '... logged as error with its code');
    my ($code) = audit($tg) =~ /(-?\d+)$/;
    is($code, $msg->{error}{code}, '... the code the client got');
}

# without the directives, the gateway relays what it would refuse
my ($sid) = $t->mcp_initialize(path => '/unchecked');
$t->mcp_request($sid, 'tools/list', {}, path => '/unchecked');
my $before = @{ received($json_calls) };
my ($msg) = call('/unchecked', $sid, { city => 'Oslo', days => 9 });
ok($msg && $msg->{result}, 'unchecked: a call the checks would refuse is relayed');
is_deeply([ @{ received($json_calls) }[$before .. $#{ received($json_calls) }] ], [ 'Oslo' ],
          '... and the upstream received it');
($msg) = call('/unchecked', $sid, { city => 'nowhere' });
is_deeply($msg->{result}{structuredContent}, { city => 'nowhere' },
          '... as the result that breaks the outputSchema is relayed');

# a reply larger than mcp_pass_filter_buffer_size: read for the outcome
# alone, it goes on unread; held for a check, it is refused
($sid) = $t->mcp_initialize(path => '/small');
($msg, my $tg) = call('/small', $sid, { city => 'Paris' });
is_deeply($msg->{result}{structuredContent}, { city => 'Paris', temperature => 21.5 },
          'a reply over the buffer, read for the outcome alone: relayed whole');
like(audit($tg), qr/^$tg tools\/call - -$/, '... its outcome unknown to the log');

($sid) = $t->mcp_initialize(path => '/small-sse');
($msg, $tg) = call('/small-sse', $sid, { city => 'Paris' });
is_deeply($msg->{result}{structuredContent}, { city => 'Paris', temperature => 21.5 },
          'an SSE event over the buffer, read for the outcome alone: relayed whole');
like(audit($tg), qr/^$tg tools\/call - -$/, '... its outcome unknown to the log');

$t->expect_log_error(qr/reply of \d+ bytes is over "mcp_pass_filter_buffer_size" 64/);
($sid) = $t->mcp_initialize(path => '/small-checked');
$t->mcp_request($sid, 'tools/list', {}, path => '/small-checked');
($msg) = call('/small-checked', $sid, { city => 'Paris' });
ok($msg && $msg->{error}, 'a reply over the buffer that a check must read: a JSON-RPC error')
    or diag(McpTest::encode_json($msg));
like($msg->{error}{message} // '', qr/^Bad gateway/, '... a bad gateway, as for any reply the gateway cannot read');

$t->stop;

done_testing;
