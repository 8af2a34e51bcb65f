# Attacks on multi-round requests (the sealed requestState of 2026-07-28)
# and on tasks (2026-07-28's extension, 2025-11-25's experimental tasks).
#
# What broke and is fixed (each test here failed before):
# - the zone's tree of tasks was keyed by the id's first 4 hex digits
#   (16 bits) with equal keys simply going right: a rotation lifted a
#   later task of the same key above an earlier one, and the lookup,
#   going right, no longer saw it.  With hundreds of tasks some were "no
#   such task" to their owner (tasks/get, tasks/cancel, tasks/update,
#   a tasks/list cursor), and their worker could not write their
#   outcome.  Tasks are now ordered by key, then id.  The per_client
#   tree of clients had the same order (key: 32 bits of a SHA-256): two
#   colliding client keys and a third gave the first a second quota;
# - mcp_session_zone took at most 3 parameters (per_client= with tasks=
#   and tasks_per_client= failed nginx -t);
# - tasks/result of a cancelled 2025 task was -32603 with an [error]
#   line; it is -32800 (request cancelled);
# - tasks/update with inputResponses missing, a string or an array was
#   acknowledged; it is -32602, as a retry's inputResponses are;
# - the answers a 2026 task keeps in the zone until its last one comes
#   were unbounded: a client filled the shared zone with them (then
#   -32603 and [error]); more than 64 KiB is -32602;
# - tasks/result of a task that ended with an error gave two
#   correlationId keys in error.data.
#
# What holds: a requestState replayed to another tool, method, caller
# (auth subject), under a session, re-encoded (padding, the other Base64
# alphabet, white space, the MAC's other spellings), flipped, cut,
# extended, with a NUL, empty, huge, not a string, expired; inputResponses
# of the wrong shape, keys or types, huge, without a state; tasks of
# another client, session or subject (get, cancel, update, result, list
# and its cursor), ids guessed, malformed, huge, with control characters
# and in Base64 headers; the zone's and a client's task limits; cancelling
# twice or after the end; a ttl that ends while tasks/result waits.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Time::HiRes ();
use Digest::SHA qw(sha256_hex);
use MIME::Base64 ();
use McpTest timeout => 120;
use McpAssert;
use McpStream qw(take take_all rpc_of answer);

my $V    = '2026-07-28';
my $P    = 'io.modelcontextprotocol/';
my $RS   = 'test_input_required_result_request_state';
my $TS   = 'test_input_required_result_tampered_state';
my $MR   = 'test_input_required_result_multi_round';
my %EL   = (elicitation => {});
my $TASKS = { extensions => { "${P}tasks" => {} }, elicitation => {} };
my $TRUE = JSON::PP::true();

my $t = McpTest->new(
    http => <<'NGX',
    client_body_buffer_size 4m;
    client_max_body_size 4m;
    mcp_session_zone zone=t94:8m per_client=$http_x_client:100 tasks=2000 tasks_per_client=2000;
    mcp_session_zone zone=few:1m per_client=$http_x_client:100 tasks=3 tasks_per_client=2;
    mcp_session_zone zone=few2:1m per_client=$http_x_client:100 tasks=3 tasks_per_client=2;
    mcp_session_zone zone=cl:1m per_client=$http_x_client:1;
NGX
    server => <<'NGX',
        mcp_session t94;
        location = /mcp   { mcp on; mcp_builtin everything; }
        location = /short { mcp on; mcp_builtin everything; mcp_state_timeout 1s; }
        location = /ttl   { mcp on; mcp_builtin everything; mcp_task_timeout 1s; }
        location = /few   { mcp on; mcp_builtin everything; mcp_session few; }
        location = /fewttl { mcp on; mcp_builtin everything; mcp_session few2;
                             mcp_task_timeout 1s; }
        location = /cl    { mcp on; mcp_builtin everything; mcp_session cl; }
        location = /auth  { mcp on; mcp_builtin everything; mcp_auth_jwt "MCP";
                            mcp_auth_resource http://127.0.0.1:%%PORT%%/auth;
                            mcp_auth_api_keys %%PREFIX%%/conf/api_keys; }
NGX
);
$t->write_file('conf/api_keys', join '',
    map { sha256_hex($_->[0]) . " $_->[1] mcp:tools mcp:resources mcp:prompts\n" }
        [ 'sk_t94_alice', 'alice' ], [ 'sk_t94_bob', 'bob' ]);
$t->start;
my ($s1_early) = $t->mcp_initialize(protocol_version => "2025-11-25", capabilities => { elicitation => {} });

my $NEXT = 1;
my $LAST;
sub rpc_last { $LAST // {} }
my @TOKENS;

# One 2026-07-28 request.  Options: id, client (X-Client), caps, path,
# headers (extra, an array), conn (keepalive), info (clientInfo), raw
# (the body as given).  Returns (message with the id, response).
sub rpc {
    my ($method, $params, %o) = @_;
    my $id = exists $o{id} ? $o{id} : 'r' . $NEXT++;
    my %p = (%{ $params // {} },
             _meta => { "${P}protocolVersion"    => $V,
                        "${P}clientCapabilities" => $o{caps} // {},
                        ($o{info} ? ("${P}clientInfo" => $o{info}) : ()) });
    my @h = ('MCP-Protocol-Version' => $V, 'Mcp-Method' => $method,
             'X-Client' => $o{client} // 'alice');
    my $name = $method =~ m{^(tools/call|prompts/get)$} ? $params->{name}
             : $method eq 'resources/read' ? $params->{uri}
             : $method =~ m{^tasks/} ? $params->{taskId} : undef;
    push @h, 'Mcp-Name' => $name if defined $name && !ref $name && !exists $o{name_header};
    push @h, 'Mcp-Name' => $o{name_header} if defined $o{name_header};
    push @h, @{ $o{headers} // [] };
    my $body = $o{raw} // { jsonrpc => '2.0', id => $id, method => $method, params => \%p };
    my $r = $t->mcp_post(undef, $body, headers => { @h }, protocol_version => undef,
                         path => $o{path} // '/mcp', quiet => 1,
                         ($o{conn} ? (conn => $o{conn}, keepalive => 1) : ()));
    push @TOKENS, $r->{body} =~ /"requestState":"([^"]+)"/g;
    $LAST = $r;
    my ($m) = grep { ref $_ eq 'HASH' && exists $_->{id} && defined $_->{id} && "$_->{id}" eq "$id" }
              @{ $r->{messages} // [] };
    return wantarray ? ($m, $r) : $m;
}

sub call {
    my ($tool, %o) = @_;
    my %p = (name => $tool, arguments => delete $o{args} // {});
    $p{inputResponses} = delete $o{inputs} if exists $o{inputs};
    $p{requestState}   = delete $o{state}  if exists $o{state};
    return rpc('tools/call', \%p, caps => delete $o{caps} // \%EL, %o);
}

# tasks/get of a 2026 task until its status is $want (a string or a
# regular expression), 2.5 s at most: the last answer
sub wait_status {
    my ($id, $want, @path) = @_;
    my $m;
    for (1 .. 50) {
        $m = rpc('tasks/get', { taskId => $id }, caps => $TASKS, @path);
        my $st = res($m)->{status} // '';
        last if ref $want ? $st =~ $want : $st eq $want;
        Time::HiRes::sleep(0.05);
    }
    return $m;
}

sub res   { (($_[0] // {})->{result}) // {} }
sub text  { ((res($_[0])->{content} // [ {} ])->[0] // {})->{text} // '' }
sub state_of { my ($tool, %o) = @_; res(call($tool, %o))->{requestState} // '' }
sub confirm { { confirm => { action => 'accept', content => { ok => $TRUE } } } }

# --- A. requestState --------------------------------------------------------------

my $tok = state_of($RS);
like($tok, qr/^1\.\d+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]{43}$/, 'a requestState to attack');
is(text(call($RS, inputs => confirm(), state => $tok)), 'state-ok: confirmed', 'it opens as given');

# replayed elsewhere: another tool, method, subject
{
    my $m = call($TS, inputs => confirm(), state => $tok, id => 'a-tool');
    is_error($m, -32602, 'a-tool', 'replayed to another tool: -32602 with the id');
    $m = rpc('prompts/get', { name => 'test_input_required_result_prompt', requestState => $tok,
                              inputResponses => { user_context => { action => 'accept',
                                                                    content => { context => 'x' } } } },
             caps => \%EL, id => 'a-prompt');
    is_error($m, -32602, 'a-prompt', 'replayed to prompts/get: -32602');
    $m = rpc('resources/read', { uri => 'test://static-text', requestState => $tok }, id => 'a-res');
    is_error($m, -32602, 'a-res', 'replayed to resources/read: -32602');

    my %alice = (headers => [ Authorization => 'Bearer sk_t94_alice' ], path => '/auth');
    my %bob   = (headers => [ Authorization => 'Bearer sk_t94_bob' ],   path => '/auth');
    my $atok = state_of($RS, %alice);
    ok(length $atok, '/auth: alice has a state');
    $m = call($RS, %bob, inputs => confirm(), state => $atok, id => 'a-bob');
    is_error($m, -32602, 'a-bob', 'alice\'s state presented by bob: -32602');
    $m = call($RS, inputs => confirm(), state => $atok, id => 'a-anon');
    is_error($m, -32602, 'a-anon', '... anonymously at /mcp: -32602');
    $m = call($RS, %alice, inputs => confirm(), state => $tok, id => 'a-alice');
    is_error($m, -32602, 'a-alice', 'an anonymous state presented by alice: -32602');

    # what the state is not bound to: the client's own claims (another
    # clientInfo, other arguments) are no caller; the handler decides
    $m = call($RS, inputs => confirm(), state => $tok, info => { name => 'other', version => '9' },
              args => { extra => 'x' }, client => 'mallory', id => 'a-info');
    is(text($m), 'state-ok: confirmed',
       'another clientInfo, arguments and X-Client: the same caller, the state opens (not bound to them)');

    # a 2025-11-25 session presenting a stateless state: the tool asks only
    # the 2026-07-28 way, so a session's call is refused whatever it
    # carries; a state honoured here would answer "state-ok"
    my ($sid) = $t->mcp_initialize(protocol_version => '2025-11-25',
                                   capabilities => { elicitation => {} });
    my ($sm) = $t->mcp_request($sid, 'tools/call', { name => $RS, arguments => {},
                                                     requestState => $tok, inputResponses => confirm() },
                               id => 'a-2025', quiet => 1, timeout => 10);
    is_error($sm, -32600, 'a-2025', 'a 2025-11-25 session presenting it: -32600 with the id');
    like((($sm // {})->{error} // {})->{message} // '', qr/the way of protocol version 2026-07-28/,
         '... the tool asks only the stateless way: the state is not opened');
}

# the token re-encoded, cut, extended
{
    my @part = split /\./, $tok, -1;
    my $mac = $part[3];
    my %bad;
    my $b64 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
    my $last = index($b64, substr($mac, -1));
    for my $low (1 .. 3) {
        # nginx's decoder drops the last character's low 2 bits
        $bad{"MAC's other spelling $low"} = join '.', @part[0 .. 2],
            substr($mac, 0, -1) . substr($b64, $last ^ $low, 1);
    }
    $bad{'MAC padded'}          = "$tok=";
    $bad{'MAC padded twice'}    = "$tok==";
    (my $std = $tok) =~ tr{-_}{+/};
    $bad{'standard alphabet'}   = $std if $std ne $tok;
    $bad{'a space inside'}      = substr($tok, 0, 20) . ' ' . substr($tok, 20);
    $bad{'a tab inside'}        = substr($tok, 0, 20) . "\t" . substr($tok, 20);
    $bad{'CR LF inside'}        = substr($tok, 0, 30) . "\r\n" . substr($tok, 30);
    $bad{'version 2'}           = '2' . substr($tok, 1);
    $bad{'version 01'}          = '0' . $tok;
    $bad{'three parts'}         = join '.', @part[0, 1, 3];
    $bad{'MAC bit flipped'}     = join '.', @part[0 .. 2], (substr($mac, 0, 5) . (substr($mac, 5, 1) eq 'A' ? 'B' : 'A') . substr($mac, 6));
    $bad{'payload re-encoded'}  = join '.', @part[0, 1],
        MIME::Base64::encode_base64url('{"round":2}'), $mac;
    $bad{'payload empty'}       = join '.', @part[0, 1], '', $mac;
    $bad{'all dots'}            = '1...';
    $bad{'one'}                 = '1.';
    $bad{'expiry negative'}     = join '.', $part[0], "-$part[1]", @part[2, 3];
    $bad{'expiry 0'}            = join '.', $part[0], 0, @part[2, 3];
    $bad{'MAC of 44'}           = "${tok}A";
    $bad{'MAC of 42'}           = substr($tok, 0, -1);
    $bad{'Base64 of the token'} = MIME::Base64::encode_base64($tok, '');
    $bad{'percent-encoded'}     = join '%2E', @part;
    $bad{'over 64 KiB'}         = join '.', @part[0, 1], 'A' x 70000, $mac;
    $bad{'just under 64 KiB'}   = join '.', @part[0, 1], 'A' x 65400, $mac;
    $bad{'non-ASCII'}           = "$tok\x{e9}";
    my $n = 0;
    for my $what (sort keys %bad) {
        my $id = 'enc-' . $n++;
        my $m = call($RS, inputs => confirm(), state => $bad{$what}, id => $id);
        is_error($m, -32602, $id, "requestState $what: -32602 with the id");
        like((($m // {})->{error} // {})->{message} // '', qr/requestState/, '... saying requestState');
    }

    # a NUL, which would end a C string early: refused before the handler
    my $body = '{"jsonrpc":"2.0","id":"nul","method":"tools/call","params":{"name":"' . $RS
        . '","arguments":{},"requestState":"' . $tok . '\u0000xyz","inputResponses":'
        . McpTest::encode_json(confirm()) . ',"_meta":{"' . $P . 'protocolVersion":"' . $V
        . '","' . $P . 'clientCapabilities":{"elicitation":{}}}}}';
    my (undef, $r) = rpc('tools/call', { name => $RS }, raw => $body, id => 'nul');
    my ($any) = grep { ref $_ eq 'HASH' && exists $_->{error} } @{ $r->{messages} // [] };
    ok($any && ($r->{body} // '') !~ /state-ok/, 'a state with \\u0000 and more after it: an error, never opened');

    # not a string
    for my $v ([ number => 42 ], [ object => { a => 1 } ], [ array => [$tok] ],
               [ null => undef ], [ true => $TRUE ]) {
        my $m = call($RS, inputs => confirm(), state => $v->[1], id => "type-$v->[0]");
        is_error($m, -32602, "type-$v->[0]", "requestState as $v->[0]: -32602");
    }
}

# inputResponses that do not match what was asked
{
    my %cases = (
        'an array'                  => [ confirm() ],
        'a string'                  => 'yes',
        'a number'                  => 1,
        'an answer that is a string' => { confirm => 'accept' },
        'an answer that is null'    => { confirm => undef },
        'an answer that is an array' => { confirm => [1] },
    );
    for my $what (sort keys %cases) {
        (my $id = "in-$what") =~ s/ /-/g;
        my $m = call($RS, inputs => $cases{$what}, state => $tok, id => $id);
        is_error($m, -32602, $id, "inputResponses $what: -32602");
    }
    my $m = call($RS, inputs => { other => { action => 'accept', content => { ok => $TRUE } } },
                 state => $tok, id => 'in-key');
    is(res($m)->{resultType}, 'input_required', 'the wrong key: asked again');
    $m = call($RS, inputs => { confirm => { action => 'accept', content => { ok => 'yes' } } },
              state => $tok, id => 'in-type');
    is(res($m)->{resultType}, 'input_required', 'the wrong type in the answer: asked again');
    $m = call($RS, inputs => { %{ confirm() }, extra => { a => 1 }, more => { b => [1 .. 10] } },
              state => $tok, id => 'in-extra');
    is(text($m), 'state-ok: confirmed', 'extra keys beside the answer: ignored');
    my %huge = map { ("k$_" => { v => 'x' x 100 }) } 1 .. 5000;
    $m = call($RS, inputs => { %{ confirm() }, %huge }, state => $tok, id => 'in-huge');
    is(text($m), 'state-ok: confirmed', '5000 extra answers (600 KB): the call still completes');
    $m = call($RS, inputs => confirm(), id => 'in-nostate');
    is(res($m)->{resultType}, 'input_required', 'the answer without requestState: asked again');
    ok(length(res($m)->{requestState} // ''), '... with a fresh state');
    $m = call($RS, inputs => confirm(), state => $tok, id => 'twice');
    is(text($m), 'state-ok: confirmed',
       'answering twice with one state: opens again (a state is not single-use: nothing is kept)');
    $m = call($MR, inputs => { step2 => { action => 'accept', content => { color => 'red' } } },
              id => 'mr-skip');
    is(res($m)->{resultType}, 'input_required', 'multi-round: round 2\'s answer without its state: round 1 again');
    ok(exists((res($m)->{inputRequests} // {})->{step1}), '... asking step1');
}

# a state the client's answer makes large: carried up to the limit, then -32602
{
    my $s1 = state_of($MR);
    my $step1 = sub { { step1 => { action => 'accept', content => { name => $_[0] } } } };
    my $m = call($MR, inputs => $step1->('n' x 70000), state => $s1, id => 'big-state');
    is_error($m, -32602, 'big-state', 'a 70000-byte name to keep in the state: -32602 with the id');
    like((($m // {})->{error} // {})->{message} // '', qr/too large/, '... saying the state would be too large');
    my $s2 = res(call($MR, inputs => $step1->('n' x 30000), state => $s1))->{requestState} // '';
    cmp_ok(length $s2, '>', 40000, 'a 30000-byte name: a state of ' . length($s2) . ' bytes');
    $m = call($MR, inputs => { step2 => { action => 'accept', content => { color => 'red' } } }, state => $s2);
    is(text($m), ('n' x 30000) . ' likes red', '... which opens, and the call completes');
}

# --- B. tasks (2026-07-28) ---------------------------------------------------------

sub task_call {
    my (%o) = @_;
    my $m = call('slow_compute', args => { seconds => delete $o{seconds} // 60, label => 'x' },
                 caps => $TASKS, %o);
    return (res($m)->{taskId} // 'none', $m);
}

{
    my ($id) = task_call(client => 'alice');
    like($id, qr/^[0-9a-f]{32}$/, 'alice has a running task');
    for my $method ('tasks/get', 'tasks/cancel', 'tasks/update') {
        (my $rid = "bob-$method") =~ s{/}{-};
        my $m = rpc($method, { taskId => $id, inputResponses => confirm() }, caps => $TASKS,
                    client => 'bob', id => $rid);
        is_error($m, -32602, $rid, "bob: $method of alice's task: -32602");
        unlike(McpTest::encode_json($m // {}), qr/working|slow_compute/, '... with nothing of it');
    }
    my $m = rpc('tasks/get', { taskId => $id }, caps => $TASKS, client => 'alice', id => 'still');
    is(res($m)->{status}, 'working', 'alice\'s task is still working');

    # ids guessed, malformed, huge, with control characters
    my @bad = ((map { join '', map { sprintf '%x', int rand 16 } 1 .. 32 } 1 .. 50),
               uc $id, substr($id, 0, 31), "${id}0", "$id\n", "\x01" . substr($id, 1),
               substr($id, 0, 16) . "\0" . substr($id, 17), ' ' x 32, '', 'x' x 100_000,
               "\x{263a}" x 11 . 'ab');
    my $n = 0;
    my @fail;
    for my $bid (@bad) {
        my $rid = 'g' . $n++;
        my $raw = $bid;
        utf8::encode($raw) if utf8::is_utf8($raw);
        # a header of 130 KB is nginx's to refuse: the huge one goes without
        my $m2 = rpc('tasks/get', { taskId => $bid }, caps => $TASKS, id => $rid,
                     name_header => length($raw) > 1000 ? undef
                                    : '=?base64?' . MIME::Base64::encode_base64($raw, '') . '?=');
        # a NUL is refused by the JSON parser (-32700 with a null id)
        my $want_id = $bid =~ /\0/ ? undef : $rid;
        my ($any) = $m2 ? ($m2) : grep { ref $_ eq 'HASH' && exists $_->{error} } @{ (rpc_last())->{messages} // [] };
        push @fail, "$rid:" . McpTest::encode_json($any // {})
            unless ref $any eq 'HASH' && ref $any->{error} eq 'HASH' && !exists $any->{result}
                && ($any->{error}{code} // 0) =~ /^-(32602|32020|32700|32600)$/
                && (defined $want_id ? (($any->{id} // '') eq $want_id) : 1);
    }
    is("@fail", '', scalar(@bad) . ' guessed or malformed ids (Base64 Mcp-Name): all errors with their id');
    for my $v ([ number => 12 ], [ object => {} ], [ null => undef ], [ array => [$id] ]) {
        my $m2 = rpc('tasks/get', { taskId => $v->[1] }, caps => $TASKS, id => "tid-$v->[0]");
        ok(ref $m2 eq 'HASH' && ref $m2->{error} eq 'HASH' && $m2->{id} eq "tid-$v->[0]"
           && $m2->{error}{code} =~ /^-(32602|32020)$/,
           "taskId as $v->[0]: -32602 (or -32020, no name to agree with), with the id")
            or diag(explain($m2));
    }

    # cancel twice, cancel the finished, get the cancelled
    $m = rpc('tasks/cancel', { taskId => $id }, caps => $TASKS, id => 'c1');
    is_deeply(res($m), $ACK, 'cancel: ack');
    $m = rpc('tasks/cancel', { taskId => $id }, caps => $TASKS, id => 'c2');
    is_deeply(res($m), $ACK, 'cancel again: the same ack');
    $m = rpc('tasks/get', { taskId => $id }, caps => $TASKS, id => 'c3');
    is(res($m)->{status}, 'cancelled', '... and it stays cancelled');
    $m = rpc('tasks/update', { taskId => $id, inputResponses => confirm() }, caps => $TASKS, id => 'c4');
    is_deeply(res($m), $ACK, 'tasks/update of a cancelled task: an ack, nothing resumes');
    $m = rpc('tasks/get', { taskId => $id }, caps => $TASKS, id => 'c5');
    is(res($m)->{status}, 'cancelled', '... still cancelled');

    my ($fid) = task_call(seconds => 0.05);
    my $done;
    $done = wait_status($fid, 'completed');
    is(res($done)->{status}, 'completed', 'a short task completes');
    $m = rpc('tasks/cancel', { taskId => $fid }, caps => $TASKS, id => 'c6');
    is_deeply(res($m), $ACK, 'cancelling it after the end: an ack');
    $m = rpc('tasks/get', { taskId => $fid }, caps => $TASKS, id => 'c7');
    is(res($m)->{status}, 'completed', '... and it stays completed, its result kept');
    is(((res($m)->{result} // {})->{content} // [ {} ])->[0]{text}, 'Computed x', '... the result intact');
}

# another auth subject; tasks/list is no 2026-07-28 method; tasks/update's
# answers twice, of the wrong shape
{
    my %alice = (headers => [ Authorization => 'Bearer sk_t94_alice' ], path => '/auth');
    my %bob   = (headers => [ Authorization => 'Bearer sk_t94_bob' ],   path => '/auth');
    my ($id) = task_call(%alice);
    like($id, qr/^[0-9a-f]{32}$/, '/auth: alice has a task');
    for my $method ('tasks/get', 'tasks/cancel', 'tasks/update') {
        (my $rid = "sub-$method") =~ s{/}{-};
        my $m = rpc($method, { taskId => $id, inputResponses => confirm() }, caps => $TASKS,
                    %bob, id => $rid);
        is_error($m, -32602, $rid, "/auth: bob's $method of alice's task: -32602");
    }
    my $m = rpc('tasks/get', { taskId => $id }, caps => $TASKS, id => 'sub-anon');
    is_error($m, -32602, 'sub-anon', '... nor found anonymously at /mcp (same zone)');
    $m = rpc('tasks/get', { taskId => $id }, caps => $TASKS, %alice, client => 'bob', id => 'sub-alice');
    is(res($m)->{status}, 'working', '... alice finds it, whatever X-Client says');
    rpc('tasks/cancel', { taskId => $id }, caps => $TASKS, %alice);

    $m = rpc('tasks/list', {}, caps => $TASKS, id => 'list26');
    ok(ref $m eq 'HASH' && ref $m->{error} eq 'HASH' && !exists $m->{result},
       '2026-07-28 tasks/list: an error with the id (' . ((($m // {})->{error} // {})->{code} // '') . ')');

    my $ask = call('confirm_delete', args => { filename => 'f.txt' }, caps => $TASKS);
    my $aid = res($ask)->{taskId} // 'none';
    my $w;
    $w = wait_status($aid, 'input_required');
    is(res($w)->{status}, 'input_required', 'confirm_delete: input_required');
    for my $bad ([ string => 'yes' ], [ array => [1] ], [ missing => undef ]) {
        $m = rpc('tasks/update', { taskId => $aid, (defined $bad->[1] ? (inputResponses => $bad->[1]) : ()) },
                 caps => $TASKS, id => "upd-$bad->[0]");
        is_error($m, -32602, "upd-$bad->[0]", "tasks/update with inputResponses $bad->[0]: -32602");
    }
    my $yes = { confirm => { action => 'accept', content => { confirm => $TRUE } } };
    $m = rpc('tasks/update', { taskId => $aid, inputResponses => { other => { a => 1 } } }, caps => $TASKS);
    is_deeply(res($m), $ACK, 'an answer to nothing asked: acknowledged, ignored');
    is(res(rpc('tasks/get', { taskId => $aid }, caps => $TASKS))->{status}, 'input_required',
       '... the task still waits');
    $m = rpc('tasks/update', { taskId => $aid, inputResponses => $yes }, caps => $TASKS);
    is_deeply(res($m), $ACK, 'the answer: acknowledged');
    $m = rpc('tasks/update', { taskId => $aid,
                               inputResponses => { confirm => { action => 'accept', content => { confirm => JSON::PP::false() } } } },
             caps => $TASKS);
    is_deeply(res($m), $ACK, 'a second, other answer: acknowledged');
    $w = wait_status($aid, 'completed');
    is(((res($w)->{result} // {})->{content} // [ {} ])->[0]{text}, 'Deleted f.txt',
       '... the first answer counts, once');
}

# what a task keeps of a client's answers until the last comes is bounded
# (broke before: 400 KB a key went into the shared zone, a few such tasks
# filled it, and then -32603 with an [error] line)
{
    my $mi = call('multi_input', caps => $TASKS);
    my $mid = res($mi)->{taskId} // 'none';
    my $w;
    $w = wait_status($mid, 'input_required');
    is(res($w)->{status}, 'input_required', 'multi_input: input_required, two questions');
    my $ans = sub { { action => 'accept', content => { name => $_[0] } } };
    my $m = rpc('tasks/update', { taskId => $mid, inputResponses => { first => $ans->('x' x 400_000) } },
                caps => $TASKS, id => 'big-answer');
    is_error($m, -32602, 'big-answer', 'a 400 KB answer to keep for the next: -32602 with the id');
    like((($m // {})->{error} // {})->{message} // '', qr/too large/, '... too large to keep');
    $m = rpc('tasks/update', { taskId => $mid, inputResponses => { first => $ans->('y' x 30_000) } },
             caps => $TASKS);
    is_deeply(res($m), $ACK, 'a 30 KB one: kept');
    is(res(rpc('tasks/get', { taskId => $mid }, caps => $TASKS))->{status}, 'input_required',
       '... the task waits for the second');
    $m = rpc('tasks/update', { taskId => $mid, inputResponses => { second => $ans->('z' x 400_000) } },
             caps => $TASKS);
    is_deeply(res($m), $ACK, 'the last answer, large: taken (kept nowhere but the call)');
    $w = wait_status($mid, 'completed');
    like(((res($w)->{result} // {})->{content} // [ {} ])->[0]{text} // '', qr/^Got y+/,
         '... and the task completes');
}

# the same requestState under another protocol version, without a session
{
    my $body = { jsonrpc => '2.0', id => 'v2025', method => 'tools/call',
                 params => { name => $RS, arguments => {}, requestState => $tok, inputResponses => confirm() } };
    my $r = $t->mcp_post(undef, $body, protocol_version => '2025-11-25', quiet => 1);
    unlike($r->{body} // '', qr/state-ok/, 'the state under 2025-11-25 without a session: not served');
    is($r->{status}, 400, '... refused: 400');
    my ($m) = @{ $r->{messages} // [] };
    is_error($m, -32600, 'v2025', '... -32600 with the id');
    like((($m // {})->{error} // {})->{message} // '', qr/Mcp-Session-Id header is required/,
         '... for the session it lacks');
}

# A new 2025 session's confirm_delete task, with its tasks/result (id
# $rid) open: (session, task id, the tasks/result stream, the question)
sub asking_task {
    my ($rid) = @_;
    my ($sid) = $t->mcp_initialize(protocol_version => '2025-11-25', capabilities => { elicitation => {} });
    my ($m) = $t->mcp_request($sid, 'tools/call', { name => 'confirm_delete', arguments => { filename => 'h' },
                                                    task => { ttl => 60000 } });
    my $tid = ((res($m)->{task}) // {})->{taskId} // 'none';
    my $st = $t->mcp_post($sid, { jsonrpc => '2.0', id => $rid, method => 'tasks/result',
                                  params => { taskId => $tid } }, stream => 1);
    my $req;
    for (1 .. 20) {
        my $ev = take($st, 5) // last;
        my $j = $ev->{json};
        if (ref $j eq 'HASH' && defined $j->{method} && defined $j->{id}) { $req = $j; last }
    }
    return ($sid, $tid, $st, $req);
}

# a 2025 task's question answered by another session; its session
# deleted while its tasks/result waits
{
    my ($sb) = $t->mcp_initialize(protocol_version => '2025-11-25', capabilities => { elicitation => {} });
    my ($sa, $tid, $st, $req) = asking_task('wait');
    my $m;
    is(($req // {})->{method}, 'elicitation/create', '2025: the task asks on its tasks/result');
    my $r = answer($t, $sb, ($req // {})->{id} // 0,
                   { action => 'accept', content => { confirm => $TRUE } }, quiet => 1);
    ok($r->{status} >= 200, 'another session answers its request: ' . $r->{status});
    Time::HiRes::sleep(0.3);
    ($m) = $t->mcp_request($sa, 'tasks/get', { taskId => $tid });
    is(res($m)->{status}, 'input_required', '... the task still waits: the answer is not taken');
    my $d = $t->mcp_delete($sa);
    ok($d->{status} == 200 || $d->{status} == 204, 'its session deleted while tasks/result waits');
    my @ev = take_all($st, 5);
    ok($st->is_done, '... the tasks/result stream ends')
        or diag(explain([ map { $_->{raw} } @ev ]));
}

# a 2025 task's question refused by its client with an error: tasks/result
# gives that error with one correlationId (broke before: the stored
# error's and the reply's, two keys of one name)
{
    my %seen;
    for my $code (-32000, -32603) {
        my ($sa, $tid, $st, $req) = asking_task("refused$code");
        answer($t, $sa, ($req // {})->{id} // 0, undef,
               error => { code => $code, message => 'refused', data => { why => 'no' } });
        my ($end) = grep { ($_->{data} // '') =~ /"refused\Q$code\E"/ } take_all($st, 5);
        my $raw = ($end // {})->{data} // '';
        is_error($end ? $end->{json} : undef, $code, "refused$code",
                 "2025: the client refuses with $code: tasks/result gives $code");
        my $n = () = $raw =~ /"correlationId"/g;
        is($n, 1, '... with one correlationId key') or diag($raw);
        $seen{$code} = $tid;
    }
    # its -32603 is its own failure, not ours (broke before: [error]
    # twice, for tools/call and tasks/result)
    ok($t->error_log !~ /\[error\] .*refused \(code -32603/, 'a client\'s -32603: no [error] line');
    like($t->error_log, qr/\[info\] .*refused \(code -32603, method "tools\/call"/,
         '... logged at [info]');
}

# two tasks/result open for one task: the question comes on one, and both
# end with the result
{
    my ($sa, $tid, $s1, $req) = asking_task('twice-1');
    my $s2 = $t->mcp_post($sa, { jsonrpc => '2.0', id => 'twice-2', method => 'tasks/result',
                                 params => { taskId => $tid } }, stream => 1);
    is(($req // {})->{method}, 'elicitation/create', '2025: the question on the first tasks/result');
    answer($t, $sa, ($req // {})->{id} // 0, { action => 'accept', content => { confirm => $TRUE } });
    for my $s ([ 'twice-1', $s1 ], [ 'twice-2', $s2 ]) {
        my ($end) = grep { ref $_ eq 'HASH' && ($_->{id} // '') eq $s->[0] } rpc_of(take_all($s->[1], 5));
        is(((($end // {})->{result} // {})->{content} // [ {} ])->[0]{text}, 'Deleted h',
           "... $s->[0] ends with the result");
    }
}

# a 2025 task whose ttl (1 ms) ends before its call does
{
    for my $tool ([ slow_compute => { seconds => 0.2 } ], [ confirm_delete => { filename => 'g', seconds => 0.1 } ]) {
        my ($m) = $t->mcp_request($s1_early, 'tools/call', { name => $tool->[0], arguments => $tool->[1],
                                                             task => { ttl => 1 } });
        my $tid = ((res($m)->{task}) // {})->{taskId} // 'none';
        like($tid, qr/^[0-9a-f]{32}$/, "2025: $tool->[0] as a task of ttl 1 ms");
        Time::HiRes::sleep(0.4);
        ($m) = $t->mcp_request($s1_early, 'tasks/get', { taskId => $tid }, id => "ttl1-$tool->[0]");
        is_error($m, -32602, "ttl1-$tool->[0]", '... gone when its call ends: -32602');
    }
}

# the limits: a client's, then the zone's; others are not hurt
{
    my @a = map { (task_call(path => '/few', client => 'alice'))[1] } 1 .. 3;
    is(scalar(grep { res($_)->{resultType} // '' eq 'task' } @a[0, 1]), 2, '/few: alice has 2 tasks');
    is((($a[2] // {})->{error} // {})->{code}, -32000, 'the third: -32000');
    like((($a[2] // {})->{error} // {})->{message} // '', qr/Too many tasks/, '... Too many tasks');
    my (undef, $b) = task_call(path => '/few', client => 'bob');
    is(res($b)->{resultType}, 'task', 'bob still gets one (the zone\'s third)');
    my (undef, $c) = task_call(path => '/few', client => 'carol', id => 'zone-full');
    ok(ref $c eq 'HASH' && ref $c->{error} eq 'HASH', 'carol, the zone full: a JSON-RPC error')
        or diag(explain($c));
    is(($c // {})->{id}, 'zone-full', '... with the id');
    like((($c // {})->{error} // {})->{message} // '', qr/task/i, '... saying it is about tasks: '
         . ((($c // {})->{error} // {})->{message} // ''));
    my $s = call($RS, path => '/few', id => 'few-other');
    is(res($s)->{resultType}, 'input_required', 'an ordinary call at the full zone still works');
    for my $m (@a[0, 1], $b) {
        rpc('tasks/cancel', { taskId => res($m)->{taskId} // 'none' }, caps => $TASKS,
            path => '/few', client => $m == $b ? 'bob' : 'alice');
    }
}

# --- 2025-11-25: sessions ----------------------------------------------------------------

my ($s1) = $t->mcp_initialize(protocol_version => '2025-11-25');
my ($s2) = $t->mcp_initialize(protocol_version => '2025-11-25');
{
    my ($m) = $t->mcp_request($s1, 'tools/call', { name => 'slow_compute',
                                                   arguments => { seconds => 60 }, task => { ttl => 60000 } });
    my $tid = ((($m // {})->{result} // {})->{task} // {})->{taskId} // 'none';
    like($tid, qr/^[0-9a-f]{32}$/, '2025: session 1 has a task');
    for my $method ('tasks/get', 'tasks/cancel', 'tasks/result') {
        ($m) = $t->mcp_request($s2, $method, { taskId => $tid }, id => "s2-$method", timeout => 10);
        is_error($m, -32602, "s2-$method", "2025: session 2's $method of it: -32602");
    }
    ($m) = $t->mcp_request($s2, 'tasks/list', {}, id => 's2-list');
    is_deeply(res($m)->{tasks}, [], '2025: session 2\'s tasks/list: empty');
    ($m) = $t->mcp_request($s2, 'tasks/list', { cursor => $tid }, id => 's2-cursor');
    is_error($m, -32602, 's2-cursor', '2025: session 1\'s task id as session 2\'s cursor: -32602');
    for my $cur ('0' x 32, 'x', 'x' x 100_000, "\x01" x 32) {
        ($m) = $t->mcp_request($s1, 'tasks/list', { cursor => $cur }, id => 'cur', quiet => 1);
        is_error($m, -32602, 'cur', '2025: a forged cursor (' . length($cur) . ' bytes): -32602');
    }
    ($m) = $t->mcp_request($s1, 'tasks/list', { cursor => 7 }, id => 'cur-n');
    is_error($m, -32602, 'cur-n', '2025: a cursor that is a number: -32602');

    ($m) = $t->mcp_request($s1, 'tasks/cancel', { taskId => $tid }, id => 'k1');
    is(res($m)->{status}, 'cancelled', '2025: cancel: the cancelled task');
    ($m) = $t->mcp_request($s1, 'tasks/cancel', { taskId => $tid }, id => 'k2');
    is_error($m, -32602, 'k2', '2025: cancel twice: -32602, over already');
    ($m) = $t->mcp_request($s1, 'tasks/result', { taskId => $tid }, id => 'k3', timeout => 10);
    # broke before: -32603, an internal error, and an [error] line for it
    is_error($m, -32800, 'k3', '2025: tasks/result of a cancelled task: -32800, request cancelled');
}

# the ttl ends while tasks/result waits
{
    my ($m) = $t->mcp_request($s1, 'tools/call', { name => 'slow_compute', arguments => { seconds => 60 },
                                                   task => { ttl => 60000 } }, path => '/ttl');
    my $tid = ((($m // {})->{result} // {})->{task} // {})->{taskId} // 'none';
    like($tid, qr/^[0-9a-f]{32}$/, '2025: a task at /ttl (mcp_task_timeout 1s)');
    my $t0 = Time::HiRes::time();
    ($m) = $t->mcp_request($s1, 'tasks/result', { taskId => $tid }, id => 'ttl-wait', path => '/ttl',
                           timeout => 15);
    my $took = Time::HiRes::time() - $t0;
    is_error($m, -32602, 'ttl-wait', '2025: tasks/result when the ttl ends: -32602, no such task');
    cmp_ok($took, '<', 8, sprintf('... within a few seconds (%.1f s)', $took));

    # expired tasks make room before a limit refuses
    my @a = map { (task_call(path => '/fewttl', client => 'dave', seconds => 60))[1] } 1 .. 2;
    is(scalar(grep { (res($_)->{resultType} // '') eq 'task' } @a), 2, '/fewttl: dave has 2 tasks');
    my (undef, $x) = task_call(path => '/fewttl', client => 'dave');
    is((($x // {})->{error} // {})->{code}, -32000, '... a third is refused');
    Time::HiRes::sleep(1.2);
    (undef, $x) = task_call(path => '/fewttl', client => 'dave');
    is(res($x)->{resultType}, 'task', 'after their ttl: a new one is taken (the expired freed first)');
    rpc('tasks/cancel', { taskId => res($x)->{taskId} // 'none' }, caps => $TASKS, path => '/fewttl',
        client => 'dave');
}

# a 2026 task's question answered after mcp_state_timeout, by a tool
# that seals no state
my ($late_id) = do {
    my $ask = call('confirm_delete', args => { filename => 'late', seconds => 0.01 }, caps => $TASKS,
                   path => '/short');
    res($ask)->{taskId} // 'none';
};

# the expired state (waits alongside nothing else: 2 s)
{
    my $st = state_of($RS, path => '/short');
    Time::HiRes::sleep(2.1);
    my $m = call($RS, inputs => confirm(), state => $st, path => '/short', id => 'expired');
    is_error($m, -32602, 'expired', 'an expired requestState: -32602 with the id');
    like((($m // {})->{error} // {})->{message} // '', qr/expired/, '... saying expired');

    my $w = rpc('tasks/get', { taskId => $late_id }, caps => $TASKS, path => '/short');
    is(res($w)->{status}, 'input_required', 'the /short task waits for its answer past its state\'s life');
    $m = rpc('tasks/update', { taskId => $late_id,
                               inputResponses => { confirm => { action => 'accept', content => { confirm => $TRUE } } } },
             caps => $TASKS, path => '/short');
    is_deeply(res($m), $ACK, '... the late answer: acknowledged');
    $w = wait_status($late_id, qr/^(?!working|input_required)/, path => '/short');
    # confirm_delete keeps no state: nothing to expire but the task (its ttl)
    is(((res($w)->{result} // {})->{content} // [ {} ])->[0]{text} // '', 'Deleted late',
       '... a tool that keeps no state: the task resumes, bounded by its ttl alone');

    # one key twice: the JSON parser refuses, whichever would have won
    my $body = '{"jsonrpc":"2.0","id":"dup","method":"tools/call","params":{"name":"' . $RS
        . '","arguments":{},"requestState":"x","requestState":"' . $tok . '","inputResponses":'
        . McpTest::encode_json(confirm()) . ',"_meta":{"' . $P . 'protocolVersion":"' . $V
        . '","' . $P . 'clientCapabilities":{"elicitation":{}}}}}';
    my (undef, $r) = rpc('tools/call', { name => $RS }, raw => $body, id => 'dup');
    ok(($r->{body} // '') =~ /"error"/ && ($r->{body} // '') !~ /state-ok/,
       'requestState twice in one params: refused, never opened');
}

# --- many tasks: every one is found (the tree's order; broke before) -----------------------

{
    # 9 clients of 200 (tasks_per_client is 256), fresh connections: with
    # 1800 random ids the old order lost one in nearly every run
    my (@ids, %owner);
    for my $i (1 .. 1800) {
        my $who = 'many' . ($i % 9);
        my ($id) = task_call(seconds => 0.001, client => $who, id => "m$i");
        next if $id eq 'none';
        push @ids, $id;
        $owner{$id} = $who;
    }
    is(scalar @ids, 1800, '1800 tasks created');
    my %key;
    $key{ substr $_, 0, 4 }++ for @ids;
    note(scalar(grep { $_ > 1 } values %key) . ' first-4-digit keys shared by more than one task');
    my @lost;
    for my $id (@ids) {
        my $m = rpc('tasks/get', { taskId => $id }, caps => $TASKS, client => $owner{$id});
        push @lost, $id unless (res($m)->{taskId} // '') eq $id;
    }
    is(scalar @lost, 0, 'every one of them is found by its owner\'s tasks/get (' . scalar(@lost) . ' lost)')
        or diag("lost: @lost[0 .. ($#lost < 5 ? $#lost : 4)]");
    my $m = rpc('tasks/get', { taskId => $ids[-1] }, caps => $TASKS, client => 'other', id => 'many-other');
    is_error($m, -32602, 'many-other', '... and none by another client');
}

# --- clients whose digests share a key (the same tree order; broke before) --------------

{
    # two X-Client values whose SHA-256 start with the same 4 bytes (the
    # tree's key), and a third with a greater key: A, then B (right of
    # A), then C make B the root, A its left; the old lookup went right
    my (%seen, $a, $b);
    for (my $i = 0; !defined $b; $i++) {
        my $k = substr(Digest::SHA::sha256("c$i"), 0, 4);
        ($a, $b) = ($seen{$k}, "c$i") if exists $seen{$k};
        $seen{$k} = "c$i";
    }
    my $ka = unpack 'V', Digest::SHA::sha256($a);
    my $c = (grep { unpack('V', Digest::SHA::sha256($_)) > $ka } map { "d$_" } 1 .. 1000)[0];
    my %s;
    for my $who ($a, $b, $c) {
        ($s{$who}) = $t->mcp_initialize(path => '/cl', headers => { 'X-Client' => $who });
    }
    my ($a2) = $t->mcp_initialize(path => '/cl', headers => { 'X-Client' => $a });
    ok($a2, "per_client=...:1: $a, $b (same key), $c, then $a again: a session");
    my $ping = sub {
        my ($sid, $who) = @_;
        (undef, my $r) = $t->mcp_request($sid, 'ping', undef, path => '/cl', quiet => 1,
                                         headers => { 'X-Client' => $who });
        return $r->{status};
    };
    is($ping->($s{$a}, $a), 404, "... and $a\'s first session is gone: the client is at its quota of 1");
    is($ping->($a2, $a), 200, "... its second lives");
    is($ping->($s{$b}, $b), 200, "... $b\'s session is untouched");
    is($ping->($s{$c}, $c), 200, "... and $c\'s");
}

# --- the log ------------------------------------------------------------------------------

my $log = $t->error_log;
unlike($log, qr/\[(error|crit|alert|emerg)\]/, 'nothing at [error] or above in error.log')
    or diag(join "\n", grep { /\[(error|crit|alert|emerg)\]/ } split /\n/, $log);
is(scalar(grep { length > 20 && index($log, $_) >= 0 } @TOKENS), 0, 'no requestState in error.log');

done_testing;
