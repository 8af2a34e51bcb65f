# mcp_pass with a tool policy: every SSE stream the gateway relays is
# filtered event by event, as an untrusted upstream may put a tools/list
# answer (a response whose result.tools lists tools) on any of them and
# a client takes it by its id.
#
# A hostile upstream (a Perl server forked here) answers GET streams,
# resumptions (Last-Event-ID) and the SSE reply of a tools/call with such
# answers, listing ok1, secret (denied) and ok2, in the shapes a client
# reads: LF, CR and CRLF line ends, BOMs (split across reads too), a
# batch, an event split at every byte, byte by byte.  Comments, id: and
# retry: lines go through unchanged; events go out as soon as they are
# whole.  An event over mcp_pass_filter_buffer_size, or one whose data is
# not strict JSON (a second "result" a last-wins client would read), cuts
# the stream with one [error] line.  A location without a policy relays
# every stream byte for byte.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Time::HiRes qw(sleep);
use McpTest timeout => 300;
use McpAssert;
use McpGateway;
use McpJwt;
use Digest::SHA qw(sha256_hex);
use JSON::PP ();

my $V25 = '2025-11-25';
my $BOM = "\xef\xbb\xbf";
my $MAX = 8192;    # the policy location's mcp_pass_filter_buffer_size

sub tools_msg {
    my ($id, @names) = @_;
    @names = qw(ok1 secret ok2) unless @names;
    return qq({"jsonrpc":"2.0","id":$id,"result":{"tools":[)
         . join(',', map { qq({"name":"$_","inputSchema":{"type":"object"}}) } @names) . ']}}';
}

# an event "data: <tools/list answer>\n\n" of exactly $len bytes
sub event_of {
    my ($len) = @_;
    my $short = "data: " . tools_msg('"lim"', 'ok1', 'PAD', 'secret') . "\n\n";
    my $pad = 'p' x ($len - length($short) + 3);
    return "data: " . tools_msg('"lim"', 'ok1', $pad, 'secret') . "\n\n";
}

my $NOTE = '{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"n"}}';

# the bodies that split at every byte: BOM, comment, id, data over two
# lines (joined with a LF, still JSON), with CRLF and with CR alone
my $SPLIT_CRLF = "$BOM: hi\r\n\r\nid: s1\r\ndata: " . tools_msg('"s"') =~ s/,"result"/,\r\ndata: "result"/r
               . "\r\n\r\n";
my $SPLIT_CR = $SPLIT_CRLF =~ s/\r\n/\r/gr;

# case => [ parts ]: a string is a chunk, a reference a pause (seconds)
my %GET = (
    'plain'     => [ "id: e1\ndata: " . tools_msg('"g1"') . "\n\n" ],
    'cr'        => [ "id: c1\rdata: " . tools_msg('"c1"') . "\r\r" ],
    'crlf'      => [ "id: c2\r\ndata: " . tools_msg('"c2"') . "\r\n\r\n" ],
    'mixed'     => [ ": c\r\nevent: message\nid: m1\rdata: " . tools_msg('"m1"') . "\n\r\n" ],
    'bom'       => [ "${BOM}data: " . tools_msg('"b1"') . "\n\n" ],
    'bom2'      => [ "$BOM${BOM}data: " . tools_msg('"b2"') . "\n\n" ],
    'bom-split' => [ "\xef", \0.05, "\xbb", \0.05, "\xbf\xef", \0.05, "\xbb\xbf", \0.05,
                     "data: " . tools_msg('"b3"') . "\n\n" ],
    'nocolon'   => [ "data\ndata: " . tools_msg('"n1"') . "\n\n" ],
    'batch'     => [ "id: ba\ndata: [" . tools_msg('"a"') . ',' . tools_msg('"b"', 'secret')
                     . ",$NOTE]\n\n" ],
    'keepalive' => [ ": keepalive\n\n", \0.05, "id: 42\nretry: 1500\n\n", \0.05, ":\n\n",
                     "event: ping\r\ndata: $NOTE\r\n\r\n", ": x\r", "\n", "\r\n" ],
    'live'      => [ "id: l1\ndata: " . tools_msg('"l1"') . "\n\n", \1.5, ": bye\n\n" ],
    'dup'       => [ "id: d0\ndata: $NOTE\n\n", \0.3,
                     'data: {"jsonrpc":"2.0","id":"d1","result":{"tools":[{"name":"ok1"}]},'
                     . '"result":{"tools":[{"name":"secret"}]}}' . "\n\n",
                     "id: d2\ndata: $NOTE\n\n" ],
    'dup-deep'  => [ 'data: {"jsonrpc":"2.0","id":"d3","result":{"tools":[{"name":"secret","name":"ok1"}]}}'
                     . "\n\n" ],
    'dup-same'  => [ "id: d4\ndata: $NOTE\n\n"
                     . 'data: {"jsonrpc":"2.0","id":"d5","result":{"tools":[{"name":"ok1"}]},'
                     . '"result":{"tools":[{"name":"secret"}]}}' . "\n\nid: d6\ndata: $NOTE\n\n" ],
    'notjson'   => [ "id: j0\ndata: $NOTE\n\n", \0.3, "data: {\"jsonrpc\":\"2.0\",\"id\":1,\n\n" ],
    'over'      => [ "id: o0\ndata: $NOTE\n\n", \0.3,
                     "data: " . tools_msg('"o1"', 'ok1', 'x' x 10000, 'secret') . "\n\n" ],
    'over-slow' => [ "id: o2\ndata: $NOTE\n\n", \0.2, map { ('d' x 1000, \0.01) } 1 .. 12 ],
    'limit'     => [ event_of($MAX), "id: after\ndata: $NOTE\n\n" ],
    'limit1'    => [ "id: l0\ndata: $NOTE\n\n", \0.3, event_of($MAX + 1) ],
    'many'      => [ map { join '', ("id: $_\ndata: " . tools_msg(qq("m$_")) . "\n\n") x 40 } 1 .. 100 ],
    'tail'      => [ "id: t0\ndata: $NOTE\n\n", "data: " . tools_msg('"t1"') ],
    'drip'      => [ map { ($_, \0.002) } split //, $SPLIT_CRLF ],
    'gzip'      => [ "data: x\n\n" ],
    'held'      => [ "id: h1\ndata: " . tools_msg('"h1"') . "\n\n", \0.1,
                     "id: h2\ndata: " . tools_msg('"h2"'), \6 ],
    'escaped'   => [ "data: " . tools_msg('"e1"', 'ok1', 'secr\\u0065t', 'ok2') . "\n\n" ],
    'bom-mid'   => [ ": hi\n\n${BOM}data: " . tools_msg('"bm"') . "\n\n" ],
);

# the tools/call replies: the call's answer, and another id's tools/list answer
my %CALL = (
    'call-extra' => sub {
        my ($id) = @_;
        [ "event: message\ndata: " . tools_msg('7') . "\n\n",
          qq(event: message\nid: c1\ndata: {"jsonrpc":"2.0","id":$id,"result":{"content":[]}}\n\n) ] },
    'call-json' => sub { 1 },
    'call-batch' => sub {
        my ($id) = @_;
        [ qq(data: [{"jsonrpc":"2.0","id":$id,"result":{"content":[]}},) . tools_msg('8') . "]\n\n" ] },
);

sub upstream_body {
    my ($case, $k) = @_;
    return $case eq 'split-crlf' ? $SPLIT_CRLF : $case eq 'split-cr' ? $SPLIT_CR
         : join '', grep { !ref } @{ $GET{$case} };
}

my $fake = fake_upstream(sub {
    my ($c, $head, $body) = @_;
    my ($method, $path) = $head =~ m{^(\S+) (\S+)};
    my ($case, $k) = $path =~ m{^/[fnk]/([\w-]+)(?:/(\d+))?};
    $case //= '';
    my $type = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n";
    my $chunks = sub {
        my ($extra, @parts) = @_;
        print $c $type . $extra . "Transfer-Encoding: chunked\r\n\r\n";
        for my $p (@parts) {
            if (ref $p) { sleep $$p; next }
            printf $c "%x\r\n%s\r\n", length $p, $p;
        }
        print $c "0\r\n\r\n";
    };
    if ($method eq 'GET') {
        if ($case eq 'resume') {
            my ($lei) = $head =~ /^Last-Event-ID: (.*?)\r?$/mi;
            $lei //= '(none)';
            $chunks->('', ": after $lei\n\n", "id: r2\ndata: " . tools_msg('"r2"') . "\n\n");
        } elsif ($case =~ /^split-/) {
            my $b = upstream_body($case);
            $chunks->('', substr($b, 0, $k), \0.02, substr($b, $k));
        } elsif ($case eq 'flood') {
            # $k MB of events, half of them tools/list answers
            my $block = join '', map { $_ % 2 ? "id: f$_\ndata: " . tools_msg(qq("f$_")) . "\n\n"
                                              : ": keepalive $_\ndata: $NOTE\n\n" } 1 .. 400;
            print $c $type . "Transfer-Encoding: chunked\r\n\r\n";
            for (1 .. int($k * 1024 * 1024 / length $block)) {
                printf $c "%x\r\n%s\r\n", length $block, $block;
            }
            print $c "0\r\n\r\n";
        } elsif ($case =~ /^get-(json|202)$/) {
            # the TypeScript SDK reads a GET's 2xx body as SSE, whatever its type
            my $b = "id: gj\ndata: " . tools_msg('"gj"') . "\n\n";
            print $c ($1 eq 'json' ? "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                                   : "HTTP/1.1 202 Accepted\r\nContent-Type: application/octet-stream\r\n")
                   . "Content-Length: " . length($b) . "\r\n\r\n$b";
        } elsif ($case eq 'two-types') {
            # the gateway and the client could each read another one
            print $c "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                   . "Content-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n";
            my $b = "data: " . tools_msg('"tt"') . "\n\n";
            printf $c "%x\r\n%s\r\n0\r\n\r\n", length $b, $b;
        } elsif ($case eq 'gzip') {
            $chunks->("Content-Encoding: gzip\r\n", @{ $GET{$case} });
        } else {
            $chunks->('', @{ $GET{$case} // [ ": none\n\n" ] });
        }
        return;
    }
    my $m = eval { JSON::PP->new->decode($body) } // {};
    if (!exists $m->{id}) {
        print $c "HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n";
        return;
    }
    my $id = JSON::PP->new->allow_nonref->encode($m->{id});
    if (($m->{method} // '') eq 'initialize') {
        my $r = qq({"jsonrpc":"2.0","id":$id,"result":{"protocolVersion":"$V25",)
              . qq("capabilities":{"tools":{}},"serverInfo":{"name":"hostile","version":"1"}}});
        print $c "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "
               . length($r) . "\r\n\r\n$r";
        return;
    }
    if ($case eq 'call-json') {
        my $r = qq([{"jsonrpc":"2.0","id":$id,"result":{"content":[]}},) . tools_msg('9') . ']';
        print $c "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "
               . length($r) . "\r\n\r\n$r";
        return;
    }
    if ($CALL{$case}) {
        $chunks->('', @{ $CALL{$case}->($id) });
        return;
    }
    my $r = qq({"jsonrpc":"2.0","id":$id,"error":{"code":-32601,"message":"no"}});
    print $c "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "
           . length($r) . "\r\n\r\n$r";
});

my $keys_file = 'conf/keys';

my $t = McpTest->new(
    http   => 'mcp_session_zone zone=gw:1m;',
    server => <<"NGX",
        mcp_session gw;
        location /k/ { mcp_pass http://127.0.0.1:$fake->{port};
                       mcp_auth_jwt "MCP";
                       mcp_auth_resource http://127.0.0.1/k/;
                       mcp_auth_api_keys %%PREFIX%%/$keys_file;
                       mcp_auth_tool_scope secret mcp:tools:admin; }
        location /f/ { mcp_pass http://127.0.0.1:$fake->{port};
                       mcp_tools_deny secret;
                       mcp_pass_filter_buffer_size $MAX; }
        location /n/ { mcp_pass http://127.0.0.1:$fake->{port};
                       mcp_pass_filter_buffer_size $MAX; }
NGX
);
$t->write_file($keys_file, sha256_hex('alice-key') . " alice mcp:tools\n"
                         . sha256_hex('admin-key') . " admin mcp:tools mcp:tools:admin\n");
$t->expect_log_error(qr/an event of the upstream's stream is (refused|over)/,
                     qr/upstream sent the "Content-Type" header twice/,
                     qr/"Content-Encoding: gzip" in a reply the tool policy filters/,
                     qr/the upstream's JSON reply is refused, the reply is cut/);
$t->start;

my ($fsid) = try_initialize($t, path => '/f/init', protocol_version => $V25);
my ($nsid) = try_initialize($t, path => '/n/init', protocol_version => $V25);
ok($fsid && $nsid, 'sessions through both locations');

# GET /<loc>/<case>: the stream read to its end (or cut)
sub get {
    my ($loc, $case, %o) = @_;
    my $s = $t->mcp_get_stream($loc eq 'f' ? $fsid : $nsid, path => "/$loc/$case",
                               timeout => $o{timeout} // 10, quiet => 1,
                               (defined $o{lei} ? (last_event_id => $o{lei}) : ()));
    eval { $s->read_body($o{timeout} // 10) };
    return $s;
}

sub names_of {
    my ($s) = @_;
    return [ map { map { $_->{name} } @{ (ref $_ eq 'HASH' ? $_ : {})->{result}{tools} // [] } }
             map { ref $_->{json} eq 'ARRAY' ? @{ $_->{json} } : ($_->{json} // ()) }
             @{ $s->{events} } ];
}

# cut: a 200 and its body without the last chunk
sub cut { $_[0]->status == 200 && ($_[0]{error} // '') =~ /before end of body/ }

sub errors_since {
    my ($mark) = @_;
    return scalar(() = $t->log_since($mark) =~ /an event of the upstream's stream is/g);
}

# ===========================================================================
# tools/list answers on GET streams, in every shape a client reads
# ===========================================================================

for my $case (qw(plain cr crlf mixed bom bom2 bom-split nocolon)) {
    my $s = get('f', $case);
    is($s->status, 200, "$case: 200");
    unlike($s->{body}, qr/secret/, "$case: the denied tool is taken out");
    is_deeply(names_of($s), [qw(ok1 ok2)], "$case: ... the others listed");
    ok(!$s->{error} && !$s->{timed_out}, "$case: ... the stream ends whole") or diag($s->{error});
}

{
    my $s = get('f', 'plain');
    like($s->{body}, qr/^id: e1\ndata: \{/, 'plain: the event keeps its id, then one data line');
    is($s->last_id, 'e1', '... the client\'s last event id');
    $s = get('f', 'cr');
    like($s->{body}, qr/^id: c1\ndata: /, 'cr: the other fields of a rewritten event are kept');
    $s = get('f', 'bom');
    unlike($s->{body}, qr/\xef\xbb\xbf/, 'bom: the BOM is dropped (the client drops it too)');
    $s = get('f', 'bom2');
    unlike($s->{body}, qr/\xef\xbb\xbf/, 'bom2: both BOMs are dropped (TextDecoder and SSE parser)');
}

# a resumption: the upstream gets the Last-Event-ID, the answer is filtered
{
    my $s = get('f', 'resume', lei => 'e1');
    like($s->{body}, qr/^: after e1\n\n/, 'resume: the upstream resumed after the client\'s id');
    unlike($s->{body}, qr/secret/, 'resume: the denied tool is taken out');
    is_deeply(names_of($s), [qw(ok1 ok2)], 'resume: ... the others listed');
    is($s->last_id, 'r2', 'resume: ... the id kept for the next resumption');
}

# a batch in one event
{
    my $s = get('f', 'batch');
    unlike($s->{body}, qr/secret/, 'batch: the denied tool is taken out of each answer');
    is_deeply(names_of($s), [qw(ok1 ok2)], 'batch: ... the others listed');
    my ($ev) = grep { ref $_->{json} eq 'ARRAY' } @{ $s->{events} };
    is(scalar @{ $ev->{json} // [] }, 3, 'batch: ... every message of it still there');
    is(($ev // {})->{id}, 'ba', 'batch: ... its id kept');
}

# another request's SSE reply (a tools/call) carrying a tools/list answer
for my $case (qw(call-extra call-batch)) {
    my ($m, $r) = $t->mcp_request($fsid, 'tools/call', { name => 'x', arguments => {} },
                                  path => "/f/$case", id => 'c9', quiet => 1);
    is($r->{status}, 200, "$case: 200");
    unlike($r->{body}, qr/secret/, "$case: the denied tool in another id's answer is taken out");
    my @msgs = map { ref $_ eq 'ARRAY' ? @$_ : $_ } @{ $r->{messages} // [] };
    my @names = map { map { $_->{name} } @{ $_->{result}{tools} // [] } }
                grep { ref $_ eq 'HASH' } @msgs;
    is_deeply(\@names, [qw(ok1 ok2)], "$case: ... the others listed");
    ok(grep({ ref $_ eq 'HASH' && ($_->{id} // '') eq 'c9' && $_->{result} } @msgs),
       "$case: ... the call's own answer is there");
}

# a name escaped in JSON is the name the client reads
{
    my $s = get('f', 'escaped');
    is_deeply(names_of($s), [qw(ok1 ok2)], 'escaped: "secr\\u0065t" is the denied tool, taken out');
}

# a JSON reply (not SSE) of another request carrying a tools/list answer:
# read as it streams (t/proxy_json_guard.t), the reply is cut before the foreign message
{
    my $mark = $t->log_mark;
    my ($m, $r) = $t->mcp_request($fsid, 'tools/call', { name => 'x', arguments => {} },
                                  path => '/f/call-json', id => 'c9', quiet => 1);
    is($r->{status}, 200, 'call-json: 200');
    ok($r->{error}, 'call-json: the reply is cut') or diag($r->{body});
    unlike($r->{body}, qr/secret/, 'call-json: the denied tool in another id\'s answer never reaches the client');
    ok(!eval { JSON::PP->new->decode($r->{body}); 1 }, 'call-json: ... nor any whole JSON text');
    ok($t->wait_for_log(qr/JSON reply is refused, the reply is cut: a message for another request/, 5, $mark),
       'call-json: logged why');
    is(scalar(() = $t->log_since($mark) =~ /\[error\]/g), 1, 'call-json: ... in one [error] line');
    unlike($t->log_since($mark), qr/\Q$fsid\E/, 'call-json: ... no session id in the log');
    SKIP: {
        my $why = node_available('@modelcontextprotocol/sdk');
        skip "node clients: $why", 1 if $why;
        my $v = client_view($t, $r->{headers}{'content-type'} // '', $r->{body});
        is_deeply([ $v->{messages} // 'none', $v->{names} // 'none' ], [ 0, [] ],
                  'call-json: the TypeScript SDK takes no message of it') or diag(explain($v));
    }
}

# the caller's scopes (mcp_auth_tool_scope): the same filter on a stream
{
    my %alice = (Authorization => 'Bearer alice-key');
    my %admin = (Authorization => 'Bearer admin-key');
    my ($asid) = McpJwt::initialize($t, 'alice-key', path => '/k/init');
    my ($dsid) = McpJwt::initialize($t, 'admin-key', path => '/k/init');
    ok($asid && $dsid, 'scopes: sessions with API keys');
    my $s = $t->mcp_get_stream($asid, path => '/k/plain', headers => \%alice, timeout => 10, quiet => 1);
    eval { $s->read_body(10) };
    is_deeply(names_of($s), [qw(ok1 ok2)], 'scopes: without mcp:tools:admin, secret is taken out of a GET stream');
    $s = $t->mcp_get_stream($dsid, path => '/k/plain', headers => \%admin, timeout => 10, quiet => 1);
    eval { $s->read_body(10) };
    is_deeply(names_of($s), [qw(ok1 secret ok2)], 'scopes: with it, secret is listed');
}

# the TypeScript SDK's own reading of what the gateway relayed
my $node_ok = node_available('eventsource-parser', '@modelcontextprotocol/sdk');


SKIP: {
    my @cases = qw(plain cr crlf mixed bom bom2 bom-split nocolon batch escaped bom-mid
                   split-cr/9 split-crlf/77 split-cr/113);
    skip "node clients: $node_ok", 2 * @cases if $node_ok;
    for my $case (@cases) {
        my $s = get('f', $case);
        my $v = client_view($t, $s->header('content-type') // '', $s->{body});
        ok(!grep({ ($_ // '') =~ /secret/ } @{ $v->{names} // [] }), "SDK view, $case: no denied tool")
            or diag(explain($v));
        is_deeply($v->{names}, $case eq 'bom-mid' ? [] : [qw(ok1 ok2)], "SDK view, $case: the allowed ones")
            or diag(explain($v));
    }
}

# ===========================================================================
# comments, ids, retry and events without tools: unchanged, and live
# ===========================================================================

{
    my $s = get('f', 'keepalive');
    is($s->{body}, upstream_body('keepalive'), 'keepalive: comments, id:, retry:, events without tools, '
       . 'odd line ends: byte for byte');
    is($s->last_id, '42', 'keepalive: ... the last event id');
}

{
    my $s = $t->mcp_get_stream($fsid, path => '/f/live', timeout => 10, quiet => 1);
    my $t0 = Time::HiRes::time();
    my $ev = $s->next_event(1.2);
    ok($ev && $ev->{json}, 'live: the event arrives while the stream goes on');
    ok(Time::HiRes::time() - $t0 < 1.2, '... before the upstream\'s next bytes');
    is_deeply([ map { $_->{name} } @{ (($ev // {})->{json} // {})->{result}{tools} // [] } ],
              [qw(ok1 ok2)], '... filtered');
    eval { $s->read_body(5) };
    like($s->{body}, qr/: bye\n\n\z/, 'live: ... then the rest');
}

# an event cut at every byte, with CRLF and with CR alone (a CR last in one
# read and its LF first in the next one are one line end)
for my $case (qw(split-crlf split-cr)) {
    my $b = upstream_body($case);
    my @bad;
    for my $k (1 .. length($b) - 1) {
        my $s = get('f', "$case/$k");
        my $names = join ' ', @{ names_of($s) };
        push @bad, "$k: " . ($s->{error} // '') . " [$names] " . ($s->last_id // '-')
            if $s->{body} =~ /secret/ || $names ne 'ok1 ok2' || ($s->last_id // '') ne 's1'
               || $s->{error};
    }
    is_deeply(\@bad, [], "$case: split at each of " . (length($b) - 1)
              . ' places: filtered, the id kept, the stream whole');
}

{
    my $s = get('f', 'drip', timeout => 20);
    unlike($s->{body}, qr/secret/, 'drip: byte by byte: the denied tool is taken out');
    is_deeply(names_of($s), [qw(ok1 ok2)], 'drip: ... the others listed');
}

# a stream far longer than the buffer: only one event is held
{
    my $s = get('f', 'many', timeout => 30);
    my $n = grep { $_->{json} } @{ $s->{events} };
    is($n, 4000, 'many: 4000 events (' . length(upstream_body('many')) . ' bytes) all through');
    unlike($s->{body}, qr/secret/, 'many: ... none lists the denied tool');
    ok(!$s->{error}, 'many: ... whole');
}

# memory: a long stream under the policy, read at once and read late
for my $late (0, 1) {
    my $mb = 40;
    my $before = $t->workers_rss;
    my $s = $t->mcp_get_stream($fsid, path => "/f/flood/$mb", timeout => 10, quiet => 1);
    sleep 2 if $late;    # the client reads nothing for a while
    my ($bytes, $secret, $tail) = (length $s->{body}, 0, $s->{body});
    my $deadline = Time::HiRes::time() + 240;
    while (Time::HiRes::time() < $deadline) {
        my ($data, $err) = McpTest::_read_some($s->{sock}, $deadline);
        last unless defined $data;
        $bytes += length $data;
        my $w = substr($tail, -16) . $data;
        $secret++ if $w =~ /secret/;
        $tail = substr($w, -16);
        last if $tail =~ /\r\n0\r\n\r\n\z/;
    }
    $s->close;
    my $grew = $t->workers_rss - $before;
    ok($bytes > $mb * 1024 * 1024 * 0.8, ($late ? 'a late reader: ' : '') . "flood: $mb MB through ($bytes bytes)");
    like($tail, qr/\r\n0\r\n\r\n\z/, '... whole');
    is($secret, 0, '... the denied tool in none of its answers');
    SKIP: {
        # ASan keeps what is freed in quarantine (256 MB): RSS says nothing
        skip 'memory under AddressSanitizer', 1 if ($ENV{MCP_NGINX_PRELOAD} // '') =~ /asan/;
        ok($grew < 16 * 1024, "... the workers grew by $grew kB (< 16 MB)");
    }
}

# an event the stream ends in, before its blank line: dropped
{
    my $s = get('f', 'tail');
    unlike($s->{body}, qr/secret|t1/, 'tail: an event without its blank line at the end is dropped');
    is($s->last_id, 't0', 'tail: ... the events before it went through');
}

# ===========================================================================
# refused events: the stream is cut, one [error] line, nothing after
# ===========================================================================

for my $c ([ 'dup', 'd0', qr/refused, the stream is cut: .*duplicate/i ],
           [ 'dup-deep', undef, qr/refused, the stream is cut: .*duplicate/i ],
           [ 'dup-same', 'd4', qr/refused, the stream is cut: .*duplicate/i ],
           [ 'notjson', 'j0', qr/refused, the stream is cut: Parse error/ ],
           [ 'over', 'o0', qr/over "mcp_pass_filter_buffer_size" $MAX, the stream is cut/ ],
           [ 'over-slow', 'o2', qr/over "mcp_pass_filter_buffer_size" $MAX, the stream is cut/ ],
           [ 'limit1', 'l0', qr/over "mcp_pass_filter_buffer_size" $MAX, the stream is cut/ ])
{
    my ($case, $before, $re) = @$c;
    my $mark = $t->log_mark;
    my $s = get('f', $case);
    unlike($s->{body}, qr/secret/, "$case: the denied tool never reaches the client");
    ok(cut($s), "$case: the stream is cut (no last chunk)") or diag($s->{error} // 'whole');
    is($s->last_id, $before, "$case: the events before it went through") if defined $before;
    unlike($s->{body}, qr/d2|d6/, "$case: nothing after it") if $case =~ /^dup/;
    ok($t->wait_for_log($re, 5, $mark), "$case: logged why");
    is(errors_since($mark), 1, "$case: ... once");
    unlike($t->log_since($mark), qr/\Q$fsid\E/, "$case: ... no session id in the log");
}

# an event of exactly the limit, blank line included, goes through
{
    my $s = get('f', 'limit');
    ok(!$s->{error}, 'limit: an event of exactly mcp_pass_filter_buffer_size goes through');
    my $names = names_of($s);
    is(scalar @$names, 2, 'limit: ... filtered');
    is($names->[0], 'ok1', 'limit: ... the allowed tools listed');
    unlike($s->{body}, qr/secret/, 'limit: ... without the denied tool');
    is($s->last_id, 'after', 'limit: ... and the next event too');
}

# two media types: the gateway read the first, nginx before 1.23 gave the
# client the last (SSE, unfiltered): refused, with or without a policy
for my $loc (qw(f n)) {
    my $s = get($loc, 'two-types');
    unlike($s->{body}, qr/secret/, "$loc/two-types: the denied tool never reaches the client");
    is($s->status, 502, "$loc/two-types: a reply with two media types: 502");
    like($s->{body}, qr/"code":-32000/, '... with a JSON-RPC error');
}

# a GET's 2xx body of another media type: the TypeScript SDK's client
# reads it as SSE all the same (it looks at no media type on a GET)
for my $case (qw(get-json get-202)) {
    my $s = get('f', $case);
    unlike($s->{body}, qr/secret/, "$case: the denied tool is taken out");
    is_deeply(names_of($s), [qw(ok1 ok2)], "$case: ... the others listed");
    ok($s->is_done && !$s->{timed_out} && !$s->{error}, "$case: ... whole (chunked: the length changed)");
    is(get('n', $case)->{body}, "id: gj\ndata: " . tools_msg('"gj"') . "\n\n",
       "$case: no policy: as it came");
}

# a coded stream the filter cannot read: refused before any byte
{
    my $s = get('f', 'gzip');
    is($s->status, 502, 'gzip: a coded stream under the policy: 502');
    like($s->{body}, qr/"code":-32000/, '... with a JSON-RPC error');
}

# ===========================================================================
# without a policy: every stream byte for byte, tools and all
# ===========================================================================

for my $case (qw(plain cr crlf mixed bom bom2 bom-split batch keepalive dup notjson over limit1 tail)) {
    my $s = get('n', $case);
    is($s->{body}, upstream_body($case), "no policy, $case: byte for byte");
}
{
    my $s = get('n', 'split-cr/7');
    is($s->{body}, $SPLIT_CR, 'no policy, split-cr: byte for byte');
    my ($m, $r) = $t->mcp_request($nsid, 'tools/call', { name => 'x', arguments => {} },
                                  path => '/n/call-extra', id => 'c9', quiet => 1);
    like($r->{body}, qr/secret/, 'no policy, call-extra: the reply as it came');
    ($m, $r) = $t->mcp_request($nsid, 'tools/call', { name => 'x', arguments => {} },
                               path => '/n/call-json', id => 'c9', quiet => 1);
    is($r->{body}, '[{"jsonrpc":"2.0","id":"c9","result":{"content":[]}},' . tools_msg('9') . ']',
       'no policy, call-json: byte for byte');
}

# a reload while a stream holds half an event: the old worker ends the
# stream whole, without it (the upstream is busy with it: the last test)
{
    my $s = $t->mcp_get_stream($fsid, path => '/f/held', timeout => 10, quiet => 1);
    my $ev = $s->next_event(3);
    is_deeply([ map { $_->{name} } @{ (($ev // {})->{json} // {})->{result}{tools} // [] } ],
              [qw(ok1 ok2)], 'reload: the first event arrives, filtered');
    sleep 0.3;
    ok($t->reload, 'reload');
    eval { $s->read_body(5) };
    ok($s->is_done && !$s->{error} && !$s->{timed_out}, 'reload: the stream ends whole as the worker quits');
    unlike($s->{body}, qr/h2|secret/, '... the event held half-read is not sent');
    is($s->last_id, 'h1', '... the client resumes after the last whole one');
}

ok($t->is_running, 'nginx is running');
is(scalar(() = $t->error_log =~ /exited on signal \d+|\[alert\]|\[emerg\]|\[crit\]/g), 0,
   'no worker died, no alert');
$t->stop;
done_testing;
