# Tool policy: mcp_tools_allow and mcp_tools_deny, by exact name or by
# regular expression (~regex).  A denied tools/call gets a JSON-RPC error
# (-32602 "Tool not allowed", HTTP 200) and never reaches the upstream;
# denied tools are absent from tools/list replies: JSON replies (this
# module's Everything set as the upstream, also page by page; a fake server
# with large replies arriving in pieces, and odd ones), SSE replies
# (@modelcontextprotocol/server-everything as the upstream), and the
# replies of a built-in endpoint.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use McpTest;
use McpAssert;
use McpGateway;
use JSON::PP ();
use Time::HiRes ();

# A fake MCP server: initialize, and tools/list replies built for the case
# its path names.  /big-*: 300 tools (about 140 KB), sent in 7000-byte
# chunks a little apart, as JSON or SSE; /multiline: an SSE event whose
# JSON (pretty-printed) spans several data: lines, which SSE allows.
my @BIG = map { { name => "tool_$_", description => ('d' x 400) . " $_",
                  inputSchema => { type => 'object' } } } 1 .. 300;
my $fake = fake_upstream(sub {
    my ($c, $head, $body) = @_;
    my ($path) = $head =~ m{^POST (\S+)};
    my $m = eval { JSON::PP->new->decode($body) } // {};
    if (!exists $m->{id}) {
        print $c "HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n";
        return;
    }
    my $res = ($m->{method} // '') ne 'tools/list'
        ? { protocolVersion => '2025-11-25', capabilities => { tools => {} },
            serverInfo => { name => 'fake', version => '1' } }
        : $path =~ /big/ ? { tools => \@BIG }
        : { tools => [ map { { name => $_, inputSchema => { type => 'object' } } } qw(ok1 secret ok2) ] };
    my $json = JSON::PP->new->canonical;
    $json->pretty if $path =~ /multiline/;
    my $out = $json->encode({ jsonrpc => '2.0', id => $m->{id}, result => $res });
    # /dup-*: replies that a first-wins and a last-wins parser read apart
    if (($m->{method} // '') eq 'tools/list' && $path =~ m{/dup-(\w+)}) {
        my $kind = $1;
        my $id = $json->encode([ $m->{id} ]) =~ s/^\[|\]$//gr;
        $out = $kind =~ /^result/
            ? qq({"jsonrpc":"2.0","id":$id,"result":{"tools":[{"name":"ok1","inputSchema":{"type":"object"}}]},)
              . qq("result":{"tools":[{"name":"secret","inputSchema":{"type":"object"}}]}})
            : $kind =~ /^name/
            ? qq({"jsonrpc":"2.0","id":$id,"result":{"tools":[{"name":"ok1","name":"secret","inputSchema":{"type":"object"}}]}})
            : qq({"jsonrpc":"2.0","id":$id,"result":{"tools":[{"name":"secret","inputSchema":{"type":"object"}},]}});
    }
    my $sse = $path =~ /sse|multiline/;
    $out = "event: message\nid: f-1\n" . join('', map { "data: $_\n" } split /\n/, $out) . "\n" if $sse;
    # /eol-*: the same event with lines ended by a CR alone or by CRLF,
    # or after a BOM: all of which SSE clients read as the event above
    if (($m->{method} // '') eq 'tools/list' && $path =~ m{/eol-(\w+)}) {
        my $eol = { cr => "\r", crlf => "\r\n", bom => "\n" }->{$1};
        $out = ($1 eq 'bom' ? "\xef\xbb\xbf" : "event: message${eol}id: f-1${eol}")
             . join('', map { "data: $_$eol" } split /\n/, $out) . $eol;
        $sse = 1;
    }
    print $c "HTTP/1.1 200 OK\r\nContent-Type: " . ($sse ? 'text/event-stream' : 'application/json')
           . "\r\nTransfer-Encoding: chunked\r\n\r\n";
    for (my $i = 0; $i < length $out; $i += 7000) {
        my $chunk = substr($out, $i, 7000);
        printf $c "%x\r\n%s\r\n", length $chunk, $chunk;
        Time::HiRes::sleep(0.005);
    }
    print $c "0\r\n\r\n";
});

my $t = McpTest->new(
    ports => 3,    # 3: server-everything (node)
    http  => everything_upstream_http({ locations => <<'NGX' }, 'mcp_session_zone zone=bi:1m;'),
        location = /paged { mcp on; mcp_builtin everything; mcp_page_size 4; }
NGX
    server => <<"NGX",
        mcp_session gw;
        location = /mcp        { mcp_pass http://127.0.0.1:%%PORT2%%/mcp; }
        location = /deny-name  { mcp_pass http://127.0.0.1:%%PORT2%%/mcp;
                                 mcp_tools_deny test_simple_text test_simple test_sampling; }
        location = /deny-re    { mcp_pass http://127.0.0.1:%%PORT2%%/mcp;
                                 mcp_tools_deny ~^test_elicitation ~_content\$; }
        location = /allow      { mcp_pass http://127.0.0.1:%%PORT2%%/mcp;
                                 mcp_tools_allow test_simple_text ~^json_schema;
                                 mcp_tools_allow ~progress; }
        location = /both       { mcp_pass http://127.0.0.1:%%PORT2%%/mcp;
                                 mcp_tools_allow ~^test_;
                                 mcp_tools_deny ~elicitation test_sampling; }
        location = /paged      { mcp_pass http://127.0.0.1:%%PORT2%%/paged;
                                 mcp_tools_deny ~^test_(image|audio|elicitation); }
        location /inherit/ {
            mcp_tools_deny test_error_handling;
            location = /inherit/mcp { mcp_pass http://127.0.0.1:%%PORT2%%/mcp; }
        }

        location = /node-ref   { mcp_pass http://127.0.0.1:%%PORT3%%/mcp; }
        location = /node       { mcp_pass http://127.0.0.1:%%PORT3%%/mcp;
                                 mcp_tools_deny echo ~^trigger-; }
        location = /node-allow { mcp_pass http://127.0.0.1:%%PORT3%%/mcp;
                                 mcp_tools_allow echo get-sum; }

        location = /big-plain  { mcp_pass http://127.0.0.1:$fake->{port}/big-json; }
        location = /big-json   { mcp_pass http://127.0.0.1:$fake->{port}/big-json; mcp_tools_deny ~[05]\$; }
        location = /big-sse    { mcp_pass http://127.0.0.1:$fake->{port}/big-sse; mcp_tools_deny ~[05]\$; }
        location = /multiline  { mcp_pass http://127.0.0.1:$fake->{port}/multiline; mcp_tools_deny secret; }
@{[ join "\n", map { "        location = /dup-$_ { mcp_pass http://127.0.0.1:$fake->{port}/dup-$_; mcp_tools_deny secret; }" }
        qw(result result-sse name bad bad-sse) ]}
@{[ join "\n", map { "        location = /eol-$_ { mcp_pass http://127.0.0.1:$fake->{port}/eol-$_; mcp_tools_deny secret; }" }
        qw(cr crlf bom) ]}

        location = /builtin       { mcp on; mcp_builtin everything; mcp_session bi;
                                    mcp_tools_deny test_simple_text ~^test_elicitation; }
        location = /builtin-allow { mcp on; mcp_builtin everything; mcp_session bi;
                                    mcp_tools_allow ~^test_simple json_schema_2020_12_tool; }
NGX
)->start;

# The policy, in Perl: allowed when no allow list or one allow pattern
# matches, and no deny pattern matches.
sub allowed {
    my ($name, $allow, $deny) = @_;
    my $m = sub { my ($pats) = @_;
        grep { ref $_ ? $name =~ $_ : $name eq $_ } @$pats };
    return 0 if $allow && !$m->($allow);
    return 0 if $deny && $m->($deny);
    return 1;
}

sub names { [ map { $_->{name} } @{ ($_[0] // {})->{tools} // [] } ] }

my $call_id = 0;

# tools/call of a denied tool: 200, -32602 "Tool not allowed", id kept, and
# (with $upstream_seen) no trace of it upstream.
sub denied_call_ok {
    my ($sid, $path, $tool, $upstream_seen, $args) = @_;
    local $Test::Builder::Level = $Test::Builder::Level + 1;
    my $id = 'deny-' . ++$call_id;
    my ($msg, $r) = $t->mcp_request($sid, 'tools/call', { name => $tool, arguments => $args // {} },
                                     id => $id, path => $path);
    is($r->{status}, 200, "$path: tools/call $tool (denied): HTTP 200");
    is($r->{headers}{'content-type'}, 'application/json', "$path: ... application/json");
    is_error($msg, -32602, $id, "$path: ... JSON-RPC error -32602 with the request's id");
    is(($msg->{error} // {})->{message}, 'Tool not allowed', "$path: ... \"Tool not allowed\"");
    if ($upstream_seen) {
        my $r2 = $t->mcp_post($sid, qq({"jsonrpc":"2.0","id":"$id-marker","method":"ping"}), path => $path);
        $upstream_seen->("$id-marker");
        ok(!$upstream_seen->($id, 0), "$path: ... and it never reached the upstream");
    }
}

my $seen_up = sub {
    my ($rid, $timeout) = @_;
    return wait_upstream($t, sub { $_[0]{rid} eq $rid }, $timeout // 5);
};

# --- the gateway, the Everything set upstream (JSON tools/list) ----------------

my ($ref_sid) = $t->mcp_initialize;
my $full = names(scalar $t->mcp_call($ref_sid, 'tools/list'));
is(scalar @$full, 36, 'without a policy: all 36 tools listed');

my @policies = (
    [ '/deny-name', undef, [ 'test_simple_text', 'test_simple', 'test_sampling' ],
      [ 'test_simple_text', 'test_sampling' ], 'test_image_content' ],
    [ '/deny-re', undef, [ qr/^test_elicitation/, qr/_content$/ ],
      [ 'test_elicitation_sep1330_enums', 'test_audio_content', 'test_image_content' ], 'test_multiple_content_types' ],
    [ '/allow', [ 'test_simple_text', qr/^json_schema/, qr/progress/ ], undef,
      [ 'test_image_content', 'update_watched_resource' ], 'json_schema_2020_12_tool' ],
    [ '/both', [ qr/^test_/ ], [ qr/elicitation/, 'test_sampling' ],
      [ 'json_schema_2020_12_tool', 'test_elicitation', 'test_sampling' ], 'test_error_handling' ],
    [ '/inherit/mcp', undef, [ 'test_error_handling' ], [ 'test_error_handling' ], 'test_simple_text' ],
);

for my $p (@policies) {
    my ($path, $allow, $deny, $denied, $ok_tool) = @$p;
    my ($sid) = $t->mcp_initialize(path => $path);
    my ($list, undef, $r) = $t->mcp_call($sid, 'tools/list', undef, path => $path);
    my @want = grep { allowed($_, $allow, $deny) } @$full;
    ok(@want < @$full, "$path: the policy denies some tools (" . (@$full - @want) . ')');
    is_deeply(names($list), \@want, "$path: tools/list has exactly the allowed tools, in order");
    is($r->{headers}{'content-type'}, 'application/json', "$path: tools/list still application/json");
    ok(!defined $r->{headers}{'content-length'} || $r->{headers}{'content-length'} == length $r->{body},
       "$path: its framing fits the shortened body");
    is($list->{tools}[0]{inputSchema}{type}, 'object', "$path: the remaining entries are intact");
    denied_call_ok($sid, $path, $_, $seen_up) for @$denied;
    my $res = $t->mcp_call($sid, 'tools/call', { name => $ok_tool }, path => $path);
    ok(ref $res eq 'HASH' && ref $res->{content} eq 'ARRAY', "$path: an allowed tool ($ok_tool) still runs");
    $t->mcp_delete($sid, path => $path);
}

{
    # exact names are exact, regexes are case-sensitive searches
    my ($sid) = $t->mcp_initialize(path => '/deny-name');
    my $res = $t->mcp_call($sid, 'tools/call', { name => 'test_image_content' }, path => '/deny-name');
    ok(ref $res->{content} eq 'ARRAY', '/deny-name: "test_simple" denies only that exact name');
}

{
    # a paginated tools/list: every page filtered, the cursor relayed
    my ($sid) = $t->mcp_initialize(path => '/paged');
    my (@names, $cursor, $pages);
    do {
        my $l = $t->mcp_call($sid, 'tools/list', defined $cursor ? { cursor => $cursor } : undef, path => '/paged');
        push @names, @{ names($l) };
        $cursor = $l->{nextCursor};
        $pages++;
    } while (defined $cursor && $pages < 10);
    is($pages, 9, '/paged: 36 tools, 4 per page upstream: 9 pages through the gateway');
    is_deeply(\@names, [ grep { !/^test_(image|audio|elicitation)/ } @$full ],
              '/paged: the pages together hold exactly the allowed tools');
}

{
    # large replies, arriving in many pieces: held and filtered whole
    for my $case ([ '/big-plain', 300, qr{^application/json} ], [ '/big-json', 240, qr{^application/json} ],
                  [ '/big-sse', 240, qr{^text/event-stream} ]) {
        my ($path, $count, $type) = @$case;
        my ($sid) = try_initialize($t, path => $path);
        ok($sid, "$path: initialize through the gateway (an upstream without session ids)") or next;
        my ($list, $msg, $r) = $t->mcp_call($sid, 'tools/list', undef, path => $path, id => "big$path");
        my @n = @{ names($list) };
        like($r->{headers}{'content-type'} // '', $type, "$path: a 140 KB tools/list reply in 7000-byte chunks");
        is(scalar @n, $count, "$path: $count tools arrive");
        is(scalar(grep { /[05]$/ } @n), $path eq '/big-plain' ? 60 : 0,
           $path eq '/big-plain' ? "$path: without a policy, all of them" : "$path: none of the denied ones");
        is_deeply(\@n, [ map { $_->{name} } grep { $path eq '/big-plain' || $_->{name} !~ /[05]$/ } @BIG ],
                  "$path: the others, in order and intact");
        is(($list->{tools}[-1] // {})->{description}, ('d' x 400) . ($path eq '/big-plain' ? ' 300' : ' 299'),
           "$path: descriptions intact");
    }
}

{
    # in a 2025-03-26 session, a batch may carry tools/list
    my ($sid) = $t->mcp_initialize(path => '/deny-name', protocol_version => '2025-03-26');
    my $r = $t->mcp_post($sid, '[{"jsonrpc":"2.0","id":"bl","method":"tools/list"},'
                             . '{"jsonrpc":"2.0","id":"bp","method":"ping"}]', path => '/deny-name');
    is($r->{status}, 200, '/deny-name: a batch with tools/list (2025-03-26 session): 200');
    my ($lm) = grep { ($_->{id} // '') eq 'bl' } @{ $r->{messages} };
    ok($lm && ref $lm->{result} eq 'HASH', '... with the tools/list response in it');
    my $bad = $t->mcp_post($sid, '[{"jsonrpc":"2.0","id":"bd","method":"tools/call","params":{"name":"test_sampling"}},'
                               . '{"jsonrpc":"2.0","id":"bq","method":"ping"}]', path => '/deny-name');
    is($bad->{status}, 200, '/deny-name: a batch with a denied tools/call: 200');
    ok(!wait_upstream($t, sub { $_[0]{rid} eq 'bd' }, 0.3), '... and it did not reach the upstream');
    {
        is_deeply(names($lm->{result}), [ grep { !/^test_(?:simple_text|sampling)$/ } @$full ],
                  '/deny-name: denied tools are absent from a tools/list inside a batch');
    }
    {
        is(ref $bad->{json}, 'ARRAY', '... the reply is an array of responses, as for any batch');
    }
}

{
    # SSE lets a message span several data: lines (joined with newlines)
    my ($sid) = try_initialize($t, path => '/multiline');
    ok($sid, '/multiline: initialize');
    my ($list, $msg, $r) = $t->mcp_call($sid, 'tools/list', undef, path => '/multiline');
    like($r->{headers}{'content-type'} // '', qr{^text/event-stream}, '/multiline: an SSE tools/list reply');
    ok(grep({ $_ eq 'ok1' } @{ names($list) }), '/multiline: its message (spanning data: lines) reaches the client');
    {
        is_deeply(names($list), [ 'ok1', 'ok2' ], '/multiline: the denied tool is absent');
    }
}

# --- the gateway, server-everything upstream (SSE tools/list) ------------------

SKIP: {
    my $why = node_available('@modelcontextprotocol/server-everything');
    skip "server-everything: $why", 20 if $why;

    my $node = start_everything_node(port => $t->port(3), log => $t->prefix . '/logs/node.log');
    my $posts = sub { my @l = grep { /Received MCP POST request/ } split /\n/, McpTest::_slurp($node->{log}) // ''; scalar @l };

    my ($rsid) = $t->mcp_initialize(path => '/node-ref');
    my ($ref, undef, $rr) = $t->mcp_call($rsid, 'tools/list', undef, path => '/node-ref');
    my $nfull = names($ref);
    like($rr->{headers}{'content-type'} // '', qr{^text/event-stream}, 'server-everything answers tools/list as SSE');
    ok((grep { $_ eq 'echo' } @$nfull) && (grep { /^trigger-/ } @$nfull),
       'server-everything lists echo and trigger-* tools (' . scalar(@$nfull) . ' tools)');

    my ($sid, undef, $ir) = $t->mcp_initialize(path => '/node');
    like($sid, qr/^[0-9a-f]{32}$/, '/node: initialize through the gateway');
    my ($list, $lmsg, $r) = $t->mcp_call($sid, 'tools/list', undef, path => '/node', id => 'nl');
    like($r->{headers}{'content-type'} // '', qr{^text/event-stream}, '/node: tools/list still an SSE reply');
    my @data = grep { defined $_->{data} && length $_->{data} } @{ $r->{events} // [] };
    is(scalar @data, 1, '/node: one message event in it');
    ok(defined $lmsg && ($lmsg->{id} // '') eq 'nl', '/node: the filtered event is valid JSON with the id');
    my @want = grep { $_ ne 'echo' && !/^trigger-/ } @$nfull;
    is_deeply(names($list), \@want, '/node: echo and trigger-* are gone from the SSE tools/list, the rest kept in order');
    ok(!grep({ $_ eq 'echo' || /^trigger-/ } @{ names($list) }), '/node: no denied tool listed');
    my $n = $posts->();
    denied_call_ok($sid, '/node', 'echo', undef, { message => 'hi' });
    denied_call_ok($sid, '/node', 'trigger-long-running-operation', undef, { duration => 1, steps => 1 });
    my $res = $t->mcp_call($sid, 'tools/call', { name => 'get-sum', arguments => { a => 1, b => 2 } }, path => '/node');
    is(($res->{content} // [])->[0]{text}, 'The sum of 1 and 2 is 3.', '/node: an allowed tool runs on server-everything');
    Time::HiRes::sleep(0.1);
    is($posts->(), $n + 1, '/node: server-everything got only the allowed call');

    my ($asid) = $t->mcp_initialize(path => '/node-allow');
    my $alist = $t->mcp_call($asid, 'tools/list', undef, path => '/node-allow');
    is_deeply(names($alist), [ grep { $_ eq 'echo' || $_ eq 'get-sum' } @$nfull ],
              '/node-allow: mcp_tools_allow echo get-sum: only those two listed');
    $res = $t->mcp_call($asid, 'tools/call', { name => 'echo', arguments => { message => 'hi' } }, path => '/node-allow');
    is(($res->{content} // [])->[0]{text}, 'Echo: hi', '/node-allow: echo runs');

    $t->mcp_delete($_->[0], path => $_->[1]) for [ $rsid, '/node-ref' ], [ $sid, '/node' ], [ $asid, '/node-allow' ];
    stop_process($node->{pid});
}

# --- attack: a tools/list reply the filter and the client would read apart ------
# A key twice (a second "result", a tool's second "name") or a reply that is
# not JSON: a filter that reads it with a lenient first-wins parser passes
# it unchanged, and a last-wins client then lists the denied tool.  The
# reply is refused instead: a JSON-RPC error with the request's id.

$t->expect_log_error(qr/reply to a filtered tools\/list is refused/);
for my $case ([ '/dup-result', 'a second "result"' ], [ '/dup-result-sse', 'a second "result", SSE' ],
              [ '/dup-name', 'a tool\'s second "name"' ], [ '/dup-bad', 'a trailing comma' ],
              [ '/dup-bad-sse', 'a trailing comma, SSE' ]) {
    my ($path, $what) = @$case;
    my ($sid) = try_initialize($t, path => $path);
    ok($sid, "$path: initialize");
    my ($msg, $r) = $t->mcp_request($sid, 'tools/list', undef, path => $path, id => "dup-$path");
    unlike($r->{body} // '', qr/secret/, "$path ($what): the denied tool never reaches the client");
    is_error($msg, -32000, "dup-$path", "$path: ... a JSON-RPC error with the request's id");
    like(($msg->{error} // {})->{message} // '', qr/not strict JSON/, "$path: ... that says why");
}
like($t->error_log, qr/reply to a filtered tools\/list is refused: /,
     'error.log: the refused reply, with its reason');

# --- attack: SSE line endings and a BOM that a filter must read as clients do --
# An event whose lines end with a CR alone was one line to a filter that
# ended lines at LF: no data: line in it, so it went on unfiltered, and
# the client, which ends lines at CR too, listed the denied tool.  A BOM
# before the first event hid its data: line the same way.

for my $case ([ '/eol-cr', 'lines ended by a CR alone' ], [ '/eol-crlf', 'lines ended by CRLF' ],
              [ '/eol-bom', 'a BOM before the event' ]) {
    my ($path, $what) = @$case;
    my ($sid) = try_initialize($t, path => $path);
    ok($sid, "$path: initialize");
    my ($msg, $r) = $t->mcp_request($sid, 'tools/list', undef, path => $path, id => "eol-$path");
    unlike($r->{body} // '', qr/secret/, "$path ($what): the denied tool is not in the reply");
    is_deeply(names(($msg // {})->{result}), [ 'ok1', 'ok2' ], "$path: ... the allowed ones are, in order");
    unlike($r->{body} // '', qr/^\xef\xbb\xbf/, "$path: ... and no BOM is passed on") if $path =~ /bom/;
}

# --- a built-in endpoint -------------------------------------------------------

{
    my ($sid) = $t->mcp_initialize(path => '/builtin');
    my $list = $t->mcp_call($sid, 'tools/list', undef, path => '/builtin');
    my ($msg) = $t->mcp_request($sid, 'tools/call', { name => 'test_simple_text' }, path => '/builtin', id => 'bi-1');
    my $ok = $t->mcp_call($sid, 'tools/call', { name => 'test_image_content' }, path => '/builtin');
    ok(ref $ok->{content} eq 'ARRAY', 'built-in endpoint with a policy: an allowed tool runs');
    my ($asid) = $t->mcp_initialize(path => '/builtin-allow');
    my $alist = $t->mcp_call($asid, 'tools/list', undef, path => '/builtin-allow');
    my ($amsg) = $t->mcp_request($asid, 'tools/call', { name => 'update_watched_resource' },
                                 path => '/builtin-allow', id => 'bi-2');
    {
        is_deeply(names($list), [ grep { $_ ne 'test_simple_text' && !/^test_elicitation/ } @$full ],
                  'built-in: denied tools are absent from tools/list');
        is_error($msg, -32602, 'bi-1', 'built-in: ... JSON-RPC error -32602');
        is(($msg->{error} // {})->{message}, 'Tool not allowed', 'built-in: ... "Tool not allowed"');
        is_deeply(names($alist), [ 'test_simple_text', 'json_schema_2020_12_tool' ],
                  'built-in, mcp_tools_allow: only the allowed tools listed');
        is_error($amsg, -32602, 'bi-2', 'built-in, mcp_tools_allow: another tool is denied');
    }
}

# a denied name with CR LF in it: one line of error_log, escaped, and no
# line of the client's making
{
    # an [info] line that says "[emerg]" inside the escaped name
    $t->expect_log_any(qr/\[info\] .*tool "x%0D%0A[^"]* forged" denied by policy/);
    my ($sid) = $t->mcp_initialize(path => '/allow');
    my $mark = $t->log_mark;
    denied_call_ok($sid, '/allow', "x\r\n2026/01/01 00:00:00 [emerg] 1#1: forged");
    ok($t->wait_for_log(qr/tool "x%0D%0A2026\/01\/01 00:00:00 \[emerg\] 1#1: forged" denied by policy/, 5),
       'a denied name with CR LF: logged %-escaped, on one line');
    unlike($t->log_since($mark), qr/^\S+ \S+ \[emerg\] 1#1: forged/m, '... no forged line in error_log');
}

$t->stop;
done_testing;
