# Audit (FR-TOOL-020, FR-PROTO-024, NFR-SEC-045-047): one access log line
# per POST tells how each call ended ($mcp_outcome: ok, is_error, error),
# its JSON-RPC error code ($mcp_error_code), every tool of a batch
# ($mcp_tools) and a digest of the arguments ($mcp_arguments_digest); the
# arguments themselves only where a log_format names $mcp_arguments.  The
# line's $request_id is the correlationId of the reply's errors (and of
# the error_log line), so a reply is found in the logs.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Digest::SHA qw(sha256_hex);
use McpTest;
use McpAssert;

my $t = McpTest->new(
    http => <<'NGX',
    log_format audit escape=json '{"rid":"$request_id","method":"$mcp_method",'
        '"tool":"$mcp_tool","tools":"$mcp_tools","outcome":"$mcp_outcome",'
        '"code":"$mcp_error_code","digest":"$mcp_arguments_digest",'
        '"status":$status}';
    log_format args escape=json '{"rid":"$request_id","args":"$mcp_arguments"}';
NGX
    server => <<'NGX',
        location = /mcp {
            mcp on;
            mcp_builtin everything;
            mcp_tools_deny test_audio_content;
            add_header X-Request-Id $request_id always;
            access_log %%PREFIX%%/logs/audit.log audit;
            access_log %%PREFIX%%/logs/args.log args;
        }
NGX
)->start;

my ($sid) = $t->mcp_initialize;

# the line of the audit log whose $request_id is $rid
sub line_of {
    my ($file, $rid) = @_;
    return McpTest::wait_until(3, sub {
        for (split /\n/, McpTest::_slurp($t->prefix . "/logs/$file") // '') {
            my $l = eval { McpTest::decode_json($_) } or next;
            return $l if ($l->{rid} // '') eq $rid;
        }
        return undef;
    });
}

# how many lines of the log have $request_id $rid (one a POST)
sub count_of {
    my ($file, $rid) = @_;
    return scalar grep { (eval { McpTest::decode_json($_) } // {})->{rid} eq $rid }
                  split /\n/, McpTest::_slurp($t->prefix . "/logs/$file") // '';
}

sub call {
    my ($id, $name, $args) = @_;
    return { jsonrpc => '2.0', id => $id, method => 'tools/call',
             params => { name => $name, arguments => $args // {} } };
}

sub post { $t->mcp_post($sid, @_) }

my $EMPTY = sha256_hex('{}');

# --- an allowed call ---------------------------------------------------------

{
    my $r = post(call(1, 'test_simple_text'));
    is($r->{status}, 200, 'an allowed call: 200');
    my $rid = $r->{headers}{'x-request-id'} // '';
    like($rid, qr/^[0-9a-f]{32}$/, '... its $request_id in X-Request-Id');
    my $l = line_of('audit.log', $rid);
    ok($l, '... an audit line with that id') or diag(McpTest::_slurp($t->prefix . '/logs/audit.log'));
    is(count_of('audit.log', $rid), 1, '... one');
    is($l->{outcome}, 'ok', '... outcome ok');
    is($l->{code}, '-', '... no error code');
    is($l->{tools}, 'test_simple_text', '... $mcp_tools: the tool');
    is($l->{digest}, $EMPTY, '... the digest of its arguments');
    is(line_of('args.log', $rid)->{args}, '{}', '... the arguments where a log_format names them');
}

# --- an isError result -------------------------------------------------------

{
    my $r = post(call(2, 'test_error_handling'));
    ok($r->{json}{result}{isError}, 'a tool that fails: isError');
    my $l = line_of('audit.log', $r->{headers}{'x-request-id'} // '');
    is($l->{outcome}, 'is_error', '... outcome is_error');
    is($l->{code}, '-', '... no JSON-RPC error code');
    is($l->{tool}, 'test_error_handling', '... the tool');
}

# --- a JSON-RPC error --------------------------------------------------------

{
    my $r = post(call(3, 'no_such_tool', { secret => 'hunter2' }));
    my $e = $r->{json}{error} // {};
    is($e->{code}, -32602, 'an unknown tool: -32602');
    my $cid = ($e->{data} // {})->{correlationId} // '';
    is($cid, $r->{headers}{'x-request-id'}, '... its correlationId is the $request_id');
    my $l = line_of('audit.log', $cid);
    ok($l, '... found in the audit log by it');
    is($l->{outcome}, 'error', '... outcome error');
    is($l->{code}, '-32602', '... code -32602');
    is($l->{digest}, sha256_hex('{"secret":"hunter2"}'), '... the digest of its arguments');
    unlike(McpTest::_slurp($t->prefix . '/logs/audit.log'), qr/hunter2/,
           '... never the arguments in the audit log');
    is(line_of('args.log', $cid)->{args}, '{"secret":"hunter2"}',
       '... which has them where a log_format names them');
    like($t->error_log, qr/correlation id \Q$cid\E\b/, '... nor is the error_log line hard to find');
}

# --- a batch with a denied tool ---------------------------------------------

{
    # batches are of 2025-03-26
    my ($old) = $t->mcp_initialize(protocol_version => '2025-03-26');
    my $r = $t->mcp_post($old, [ call(4, 'test_simple_text'), call(5, 'test_audio_content'),
                                 { jsonrpc => '2.0', id => 6, method => 'ping' } ]);
    is($r->{status}, 200, 'a batch: 200') or diag(explain_response($r));
    my %by = map { ($_->{id} => $_) } @{ $r->{json} // [] };
    is($by{5}{error}{code}, -32602, '... the denied tool: -32602');
    my $cid = $by{5}{error}{data}{correlationId} // '';
    is($cid, $r->{headers}{'x-request-id'}, '... its correlationId is the $request_id');
    my $l = line_of('audit.log', $cid);
    ok($l, '... an audit line for the batch');
    is(count_of('audit.log', $cid), 1, '... one for the whole batch');
    is($l->{outcome}, 'ok,error,ok', '... each call\'s outcome, in order');
    is($l->{code}, '-,-32602,-', '... each call\'s code');
    is($l->{tools}, 'test_simple_text,test_audio_content,-', '... every tool of the batch');
    is($l->{tool}, 'test_simple_text', '... $mcp_tool still the first');
    is($l->{digest}, "$EMPTY,$EMPTY,-", '... each call\'s digest');
    is(line_of('args.log', $cid)->{args}, '[{},{},null]', '... and the arguments of each');
}

# --- an SSE reply, and a POST refused whole ---------------------------------

{
    my $r = post({ jsonrpc => '2.0', id => 7, method => 'tools/call',
                   params => { name => 'test_tool_with_progress', arguments => {},
                               _meta => { progressToken => 'p' } } });
    like($r->{headers}{'content-type'} // '', qr{^text/event-stream}, 'an SSE reply');
    my $l = line_of('audit.log', $r->{headers}{'x-request-id'} // '');
    is($l->{outcome}, 'ok', '... outcome ok, heard from the stream');

    $r = $t->mcp_post('f' x 32, { jsonrpc => '2.0', id => 8, method => 'ping' });
    is($r->{status}, 404, 'an unknown session: 404');
    my $cid = $r->{json}{error}{data}{correlationId} // '';
    $l = line_of('audit.log', $cid);
    is($l->{outcome}, 'error', '... outcome error');
    is($l->{code}, $r->{json}{error}{code}, '... the code of the refusal');
}

$t->stop;
done_testing;
