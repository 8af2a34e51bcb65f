# mcp_pass with a tool policy: a JSON (not SSE) reply to a POST that is
# not held for filtering (a tools/call, whose result may be megabytes) is
# read as it streams.  Every message of it must carry the id of one of
# the POST's requests (or none, or null): a hostile upstream that adds
# another id's answer (a tools/list listing a denied tool, which a client
# with that request pending takes by its id) gets the reply cut: what
# went out stays out, nothing more goes, its last bytes never do, and
# one [error] line says why.  So is a reply the reader cannot follow: not
# strict JSON, no object or array of objects, "id" twice in a message.
# A reply that checks out goes out unchanged; a coded one is refused with
# a 502; one with an error status (no client reads messages from it) and
# any reply in a location without a policy are relayed byte for byte.
#
# The upstream (a Perl server forked here) writes each reply in one
# write, in 64 kB pieces, one byte per chunk and per write, or without a
# length up to its close.  unit/test_proxy_jsonguard.c cuts each of its
# replies at every byte.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Time::HiRes qw(sleep);
use McpTest timeout => 300;
use McpGateway;
use JSON::PP ();

my $V25 = '2025-11-25';
my $BOM = "\xef\xbb\xbf";
my $MB = 1024 * 1024;

sub tools_msg {
    my ($id, @names) = @_;
    @names = qw(ok1 secret ok2) unless @names;
    return qq({"jsonrpc":"2.0","id":$id,"result":{"tools":[)
         . join(',', map { qq({"name":"$_","inputSchema":{"type":"object"}}) } @names) . ']}}';
}

sub own { my ($id, $content) = @_; qq({"jsonrpc":"2.0","id":$id,"result":{"content":[$content]}}) }

my $TRICKY = q({"type":"text","text":"}]}, {\"id\":9, \"result\":{\"tools\":[]}} [{ \\\\"},)
           . q({"type":"text","text":"\\\\\\\\","id":9,"x":{"id":9,"id":10},"a":[{"id":9}]});

sub deep { my ($n) = @_; ('[' x $n) . (']' x $n) }

# case => sub($id): [ body parts ], options; the id is the request's, as JSON
my %CASE = (
    'batch-foreign'  => sub { [ '[' . own($_[0], '') . ',' . tools_msg(9) . ']' ] },
    'single-foreign' => sub { [ tools_msg(9) ] },
    'escaped-id'     => sub { [ tools_msg(9) =~ s/"id"/"\\u0069d"/r ] },
    'escaped-own'    => sub { [ own('"c\u0039"', '') =~ s/"id"/"\\u0069\\u0064"/r ] },
    'id-twice'       => sub { [ qq({"jsonrpc":"2.0","id":$_[0],"result":{"tools":[{"name":"secret"}]},"id":9}) ] },
    'id-last'        => sub { [ '{"jsonrpc":"2.0","result":{"tools":[{"name":"secret"}]},"id":9}' ] },
    'own'            => sub { [ own($_[0], '{"type":"text","text":"hi"}') ] },
    'tricky'         => sub { [ own($_[0], $TRICKY) ] },
    'tricky-foreign' => sub { [ '[' . own($_[0], $TRICKY) . ',' . tools_msg(9) . ']' ] },
    'utf8'           => sub { [ own($_[0], qq({"type":"text","text":"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80 \\ud83d\\ude00"})) ] },
    'utf8-escaped'   => sub { [ own('"\u00e9\u20ac\ud83d\ude00"', '') ] },
    'deep-ok'        => sub { [ own($_[0], deep(100)) ] },
    'deep'           => sub { [ own($_[0], deep(200)) ] },
    'top-string'     => sub { [ '"hello"' ] },
    'top-number'     => sub { [ '42' ] },
    'top-scalars'    => sub { [ '[' . own($_[0], '') . ',1]' ] },
    'ws-bom'         => sub { [ "$BOM \r\n\t" . own($_[0], '') . "\n" ] },
    'bom2'           => sub { [ "$BOM$BOM" . own($_[0], '') ] },
    'two-texts'      => sub { [ own($_[0], '') . ' ' . tools_msg(9) ] },
    'null-id'        => sub { [ '{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"no"}}' ] },
    'no-id'          => sub { [ '{"jsonrpc":"2.0","error":{"code":-32600,"message":"no"}}' ] },
    'string-9'       => sub { [ tools_msg('"9"') ] },
    'number-9.0'     => sub { [ tools_msg('9.0') ] },
    'truncated'      => sub { [ qq({"jsonrpc":"2.0","id":$_[0],"result":{) ] },
    'trailing-comma' => sub { [ qq({"jsonrpc":"2.0","id":$_[0],"result":{},}) ] },
    'big-foreign'    => sub { [ '[' . own($_[0], '{"type":"text","text":"' . ('x' x (2 * $MB)) . '"}') . ','
                                . tools_msg(9) . ']' ] },
    'big-ok'         => sub { [ own($_[0], '{"type":"text","text":"' . ('y' x (5 * $MB)) . '"}') ] },
);

# how a case is written: 'length' (Content-Length, one write), 'chunked'
# (64 kB chunks), 'drip' (chunked, one byte per chunk and per write),
# 'close' (no length: the body ends at the close)
sub parts_of {
    my ($body, $how) = @_;
    return ($body) if $how eq 'length' || $how eq 'close';
    my $n = $how eq 'drip' ? 1 : 65536;
    return map { substr($body, $_ * $n, $n) } 0 .. int((length($body) - 1) / $n);
}

my $fake = fake_upstream(sub {
    my ($c, $head, $body) = @_;
    my ($path) = $head =~ m{^\S+ (\S+)};
    my ($case, $how) = $path =~ m{^/[fn]/([\w.-]+)(?:/(\w+))?};
    $how //= 'length';
    my $json = JSON::PP->new->utf8->allow_nonref->canonical;
    my $m = eval { $json->decode($body) } // {};
    my @ids = map { $_->{id} } grep { ref $_ eq 'HASH' && exists $_->{id} } ref $m eq 'ARRAY' ? @$m : ($m);
    if (!@ids) {
        print $c "HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n";
        return;
    }
    my $r;
    if (ref $m eq 'HASH' && ($m->{method} // '') eq 'initialize') {
        $r = own($json->encode($m->{id}), '') =~ s/"content":\[\]/"protocolVersion":"$V25","capabilities":{"tools":{}},"serverInfo":{"name":"hostile","version":"1"}/r;
    } elsif (ref $m eq 'ARRAY') {
        $r = '[' . join(',', map { own($json->encode($_), '') } @ids) . ']';
    } else {
        $r = join '', @{ $CASE{$case // ''}->($json->encode($ids[0])) };
    }
    my $type = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n";
    if ($how eq 'status400') {
        $r = '{"jsonrpc":"2.0","id":"server-error","error":{"code":-32600,"message":"Bad Request"}}';
        print $c "HTTP/1.1 400 Bad Request\r\nContent-Type: application/json\r\n"
               . "Content-Length: " . length($r) . "\r\n\r\n$r";
    } elsif ($how eq 'length' || $how eq 'gzip') {
        $type .= "Content-Encoding: gzip\r\n" if $how eq 'gzip';
        print $c $type . "Content-Length: " . length($r) . "\r\n\r\n$r";
    } elsif ($how eq 'close') {
        print $c $type . "Connection: close\r\n\r\n$r";
    } else {
        print $c $type . "Transfer-Encoding: chunked\r\n\r\n";
        for my $p (parts_of($r, $how)) {
            printf $c "%x\r\n%s\r\n", length $p, $p;
            sleep 0.001 if $how eq 'drip';
        }
        print $c "0\r\n\r\n";
    }
});

my $t = McpTest->new(
    http   => 'mcp_session_zone zone=gw:1m;',
    server => <<"NGX",
        mcp_session gw;
        location /f/ { mcp_pass http://127.0.0.1:$fake->{port};
                       mcp_tools_deny secret;
                       mcp_pass_filter_buffer_size 1m; }
        location /n/ { mcp_pass http://127.0.0.1:$fake->{port}; }
NGX
);
$t->expect_log_error(qr/the upstream's JSON reply is refused, the reply is cut/,
                     qr/"Content-Encoding: gzip" in a reply the tool policy filters/);
$t->start;

my ($fsid) = try_initialize($t, path => '/f/init', protocol_version => $V25);
my ($nsid) = try_initialize($t, path => '/n/init', protocol_version => $V25);
ok($fsid && $nsid, 'sessions through both locations');

my $node = node_available('@modelcontextprotocol/sdk');

sub call {
    my ($loc, $case, %o) = @_;
    my ($m, $r) = $t->mcp_request($loc eq 'f' ? $fsid : $nsid, 'tools/call',
                                  { name => 'x', arguments => {} },
                                  path => "/$loc/$case", id => $o{id} // 'c9', quiet => 1,
                                  timeout => $o{timeout} // 20);
    return $r;
}

sub upstream_body { my ($case, $id) = @_; join '', @{ $CASE{$case}->($id // '"c9"') } }

sub refusals { scalar(() = $t->log_since($_[0]) =~ /the upstream's JSON reply is refused/g) }

# the client's reading of the body: a whole JSON text, or none
sub whole_json { my $j = eval { JSON::PP->new->decode($_[0]) }; defined $j }

# ===========================================================================
# replies that check out: unchanged, whatever way they were written
# ===========================================================================

for my $case (qw(own tricky utf8 utf8-escaped escaped-own deep-ok ws-bom null-id no-id)) {
    for my $how (qw(length drip close)) {
        my $r = call('f', "$case/$how", id => $case =~ /utf8-escaped/ ? "\x{e9}\x{20ac}\x{1f600}" : 'c9');
        is($r->{status}, 200, "$case/$how: 200");
        ok(!$r->{error}, "$case/$how: whole") or diag($r->{error});
        is($r->{body}, upstream_body($case), "$case/$how: unchanged") if $how eq 'length';
    }
}

{
    # the first three, really written as $how says
    for my $how (qw(drip close chunked)) {
        my $r = call('f', "tricky/$how");
        is($r->{body}, upstream_body('tricky'), "tricky/$how: byte for byte")
            or diag($r->{error});
    }
}

# a batch POST's batch reply
{
    my $batch = [ map { { jsonrpc => '2.0', id => $_, method => 'tools/call',
                          params => { name => 'x', arguments => {} } } } ('a', 7, "\x{e9}") ];
    for my $how (qw(length drip)) {
        my $r = $t->mcp_post($fsid, $batch, path => "/f/batch/$how", quiet => 1);
        is($r->{status}, 200, "batch/$how: 200");
        ok(!$r->{error}, "batch/$how: whole") or diag($r->{error});
        is_deeply([ map { $_->{id} } @{ $r->{messages} } ], [ 'a', 7, "\x{e9}" ],
                  "batch/$how: every answer, unchanged");
    }
}

# ===========================================================================
# replies that do not: cut, one [error] line, never a whole JSON text
# ===========================================================================

my %WHY = ('batch-foreign' => 'another request', 'single-foreign' => 'another request',
           'escaped-id' => 'another request', 'id-twice' => '"id" twice',
           'id-last' => 'another request', 'tricky-foreign' => 'another request',
           'deep' => 'nested too deeply', 'top-string' => 'no JSON-RPC message',
           'top-number' => 'no JSON-RPC message', 'top-scalars' => 'no JSON-RPC message',
           'bom2' => 'no JSON-RPC message', 'two-texts' => 'bytes after the JSON',
           'string-9' => 'another request', 'number-9.0' => 'another request',
           'truncated' => 'ended before its JSON', 'trailing-comma' => 'not strict JSON');

for my $case (sort keys %WHY) {
    for my $how (qw(length drip close)) {
        next if $how eq 'drip' && $case =~ /^top-|bom2|deep/;
        next if $how eq 'close' && $case !~ /^(batch-foreign|id-last|two-texts)$/;
        my $how2 = $case eq 'truncated' && $how eq 'length' ? 'chunked' : $how;
        my $mark = $t->log_mark;
        my $r = call('f', "$case/$how2", id => $case =~ /-9/ ? 9 : 'c9');
        my $body = $r->{body};
        ok($r->{error}, "$case/$how2: cut") or diag(explain($r->{headers}));
        ok(!whole_json($body), "$case/$how2: the client has no whole JSON text");
        # byte by byte, what came before the refused byte went out
        ok(length($body) > 0, "$case/$how2: ... what came before went out as it came")
            if $how eq 'drip';
        if ($case !~ /tricky|id-last|id-twice/) {
            unlike($body, qr/secret/, "$case/$how2: nothing of the foreign message");
        }
        ok($t->wait_for_log(qr/the reply is cut: .*\Q$WHY{$case}\E/, 5, $mark), "$case/$how2: logged why");
        is(refusals($mark), 1, "$case/$how2: ... once");
        unlike($t->log_since($mark), qr/\Q$fsid\E/, "$case/$how2: ... no session id in the log");
    }
}

# a reply without a length that the upstream's close ends before its
# JSON did: cut too, though nginx took the close for the reply's end
{
    my $mark = $t->log_mark;
    my $r = call('f', 'truncated/close');
    ok($r->{error}, 'truncated/close: cut, no last chunk') or diag(explain($r->{headers}));
    ok(!whole_json($r->{body}), 'truncated/close: the client has no whole JSON text');
    ok($t->wait_for_log(qr/the reply is cut: the reply ended before its JSON did/, 5, $mark),
       'truncated/close: logged why');
    is(refusals($mark), 1, 'truncated/close: ... once');
}

# an error status: a client reads no message from its body (the Python
# SDK's servers answer with the id "server-error"), so it is relayed as
# it came, and nothing is logged
{
    my $mark = $t->log_mark;
    my $r = call('f', 'own/status400');
    is($r->{status}, 400, 'status 400 with another id: relayed with its status');
    like($r->{body}, qr/^\{"jsonrpc":"2.0","id":"server-error",.*\}\z/, '... and its body, whole');
    is(refusals($mark), 0, '... no refusal logged');
}

# a coded JSON reply the reader cannot read: refused before any byte
{
    my $r = call('f', 'own/gzip');
    is($r->{status}, 502, 'gzip: a coded JSON reply under the policy: 502');
    like($r->{body}, qr/"code":-32000/, '... with a JSON-RPC error');
    $r = call('n', 'own/gzip');
    is($r->{status}, 200, 'gzip: no policy: relayed');
}

# what a TypeScript SDK client makes of a cut reply: nothing
SKIP: {
    skip "node clients: $node", 3 if $node;
    for my $case (qw(batch-foreign id-last tricky-foreign)) {
        my $r = call('f', "$case/drip");
        my $v = client_view($t, 'application/json', $r->{body});
        is_deeply([ $v->{messages} // 'none', $v->{names} // 'none' ], [ 0, [] ],
                  "SDK view, $case: no message taken") or diag(explain($v));
    }
}

# ===========================================================================
# sizes: a large reply streams through, memory flat
# ===========================================================================

{
    my $before = $t->workers_rss;
    my $mark = $t->log_mark;
    my $r = call('f', 'big-foreign/chunked', timeout => 60);
    ok($r->{error}, 'big-foreign: 2 MB, then another id\'s answer: cut');
    ok(length($r->{body}) > 1.9 * $MB, 'big-foreign: ... after the 2 MB went out (' . length($r->{body}) . ' bytes)');
    unlike($r->{body}, qr/secret/, 'big-foreign: ... without the foreign message');
    is(refusals($mark), 1, 'big-foreign: ... one [error] line');
    $r = call('f', 'big-ok/chunked', timeout => 60);
    ok(!$r->{error} && $r->{body} eq upstream_body('big-ok'), 'big-ok: a 5 MB result, over the '
       . '1m mcp_pass_filter_buffer_size, goes through unchanged');
    my $grew = $t->workers_rss - $before;
    SKIP: {
        skip 'memory under AddressSanitizer', 1 if ($ENV{MCP_NGINX_PRELOAD} // '') =~ /asan/;
        ok($grew < 8 * 1024, "... the workers grew by $grew kB (< 8 MB)");
    }
}

# ===========================================================================
# without a policy: every reply byte for byte
# ===========================================================================

for my $case (qw(batch-foreign single-foreign id-twice two-texts top-string)) {
    my $r = call('n', $case);
    ok(!$r->{error}, "no policy, $case: whole");
    is($r->{body}, upstream_body($case), "no policy, $case: byte for byte");
}

ok($t->is_running, 'nginx is running');
is(scalar(() = $t->error_log =~ /exited on signal \d+|\[alert\]|\[emerg\]|\[crit\]/g), 0,
   'no worker died, no alert');
$t->stop;
done_testing;
