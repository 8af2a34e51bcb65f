# Trace context (SEP-414, issue #39 Deliver 4): W3C traceparent,
# tracestate and baggage, read from a message's params._meta or else
# from the POST's headers, logged ($mcp_traceparent, $mcp_tracestate,
# $mcp_baggage) and handed on.
#
# - Built-in endpoint: the access log says the body's trace when the
#   body has one (a different header loses), the header's when it has
#   none; a malformed value, in the body or a header, is logged nowhere.
# - A location tool's subrequest gets the call's trace as headers, never
#   the client's own trace headers.
# - A server request (sampling/createMessage) of a call carries the
#   call's trace in its _meta.
# - mcp_pass: the upstream (a capture) gets one trace, the same in its
#   headers and its body's _meta: the body's, or the header's inserted
#   into _meta; a malformed body value is taken out of the body.
# - mcp_backend: a leg to a backend carries the trace in _meta and as
#   headers.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use File::Temp qw(tempdir);
use Time::HiRes ();
use McpTest;
use McpStream;
use McpGateway qw(fake_upstream);

my $TP1 = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
my $TP2 = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00';
my $BAD = '00-0AF7651916CD43DD8448EB211C80319C-b7ad6b7169203331-01';
my $ZERO = '00-00000000000000000000000000000000-b7ad6b7169203331-01';
my $TS = 'rojo=00f067aa0ba902b7,congo=t61rcWkgMzE';
my $BG = 'userId=alice,isProduction=false';

# the capture: every request's head and body, a JSON line each
my $dir = tempdir(CLEANUP => 1);
my $cap = "$dir/capture.log";

my $up = fake_upstream(sub {
    my ($c, $head, $body) = @_;
    if (open my $fh, '>>', $cap) {
        print $fh McpTest::encode_json({ head => $head, body => $body // '' }), "\n";
        close $fh;
    }
    my ($id) = ($body // '') =~ /"id":(\d+|"[^"]*")/;
    my $json = sub {
        my ($s) = @_;
        print $c "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
               . "Mcp-Session-Id: cap-session\r\nContent-Length: " . length($s)
               . "\r\nConnection: close\r\n\r\n$s";
    };
    if (!defined $id) {
        print $c "HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
    }
    elsif ($body =~ /"method":"initialize"/) {
        $json->(qq({"jsonrpc":"2.0","id":$id,"result":{"protocolVersion":"2025-11-25",)
                . qq("capabilities":{"tools":{}},"serverInfo":{"name":"cap","version":"1"}}}));
    }
    elsif ($body =~ /"method":"tools\/list"/) {
        $json->(qq({"jsonrpc":"2.0","id":$id,"result":{"tools":[)
                . qq({"name":"cap","inputSchema":{"type":"object"}}]}}));
    }
    else {
        $json->(qq({"jsonrpc":"2.0","id":$id,"result":{"content":[{"type":"text","text":"ok"}]}}));
    }
});
my $uport = $up->{port};

my $t = McpTest->new(
    http => <<'NGX',
    mcp_session_zone zone=gw:1m;
    log_format trace '$request_id|$mcp_method|$mcp_traceparent|$mcp_tracestate|$mcp_baggage';
NGX
    server => <<"NGX",
        add_header X-Request-Id \$request_id always;
        access_log %%PREFIX%%/logs/trace.log trace;

        location = /mcp {
            mcp on;
            mcp_builtin everything;
            mcp_tool echo_trace { description "its headers"; pass /internal/trace; method GET; }
        }
        location = /internal/trace {
            internal;
            default_type text/plain;
            return 200 "tp=\$http_traceparent ts=\$http_tracestate bg=\$http_baggage";
        }
        location = /gw { mcp_pass http://127.0.0.1:$uport/up; mcp_session gw; }
        location = /gw26 { mcp_pass http://127.0.0.1:%%PORT%%/mcp; mcp_session gw; }
        location = /gen { mcp_pass http://127.0.0.1:$uport/gen; mcp_session gw; mcp_trace_generate on; }
        location = /agg { mcp_backend cap /_b/cap; }
        location /_b/cap {
            internal;
            proxy_pass http://127.0.0.1:$uport/agg;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
        }
NGX
)->start;

# the trace log's line of a request id: [method, traceparent, tracestate, baggage]
sub logged {
    my ($rid) = @_;
    for (1 .. 30) {
        for (split /\n/, McpTest::_slurp($t->prefix . '/logs/trace.log') // '') {
            my ($id, @f) = split /\|/, $_, -1;
            return \@f if $id eq $rid;
        }
        select undef, undef, undef, 0.1;
    }
    return [];
}

# the captured requests whose body matches $re, as { head, body, json }
sub captured {
    my ($re) = @_;
    my @r;
    for (split /\n/, McpTest::_slurp($cap) // '') {
        my $r = McpTest::decode_json($_);
        next unless $r->{body} =~ $re;
        $r->{json} = eval { McpTest::decode_json($r->{body}) };
        push @r, $r;
    }
    return @r;
}

sub header_of {
    my ($head, $name) = @_;
    my @v = $head =~ /^\Q$name\E:[ \t]*(.*?)\r?$/mgi;
    return @v;
}

sub call {
    my ($path, $sid, $name, $meta, $headers, %o) = @_;
    my %params = (name => $name, arguments => $o{arguments} // {});
    $params{_meta} = $meta if $meta;
    my ($msg, $r) = $t->mcp_request($sid, 'tools/call', \%params, path => $path,
                                    headers => $headers // {});
    return ($msg // {}, $r, logged($r->{headers}{'x-request-id'} // ''));
}

sub text { ((($_[0] // {})->{result} // {})->{content} // [ {} ])->[0]{text} // '' }


# --- the built-in endpoint: the access log ---------------------------------------

my $sid = $t->mcp_initialize(capabilities => { sampling => {} });

{
    my (undef, undef, $l) = call('/mcp', $sid, 'test_simple_text',
                                 { traceparent => $TP1, tracestate => $TS, baggage => $BG },
                                 { traceparent => $TP2 });
    is_deeply($l, [ 'tools/call', $TP1, $TS, $BG ],
              'body and header: the log says the body\'s trace, all three values');

    (undef, undef, $l) = call('/mcp', $sid, 'test_simple_text', undef,
                              { traceparent => $TP2, tracestate => $TS, baggage => $BG });
    is_deeply($l, [ 'tools/call', $TP2, $TS, $BG ], 'header only: the header\'s trace is logged');

    (undef, undef, $l) = call('/mcp', $sid, 'test_simple_text', undef, {});
    is_deeply($l, [ 'tools/call', '-', '-', '-' ], 'no trace: none invented');

    (undef, undef, $l) = call('/mcp', $sid, 'test_simple_text', { traceparent => $BAD },
                              { traceparent => $TP2 });
    is($l->[1], '-', 'malformed body traceparent (uppercase): dropped, and the body had one');

    (undef, undef, $l) = call('/mcp', $sid, 'test_simple_text', undef, { traceparent => $ZERO });
    is($l->[1], '-', 'all-zero trace-id in a header: dropped');

    (undef, undef, $l) = call('/mcp', $sid, 'test_simple_text',
                              { traceparent => $TP1, tracestate => 'Bad=1', baggage => 'a b' });
    is_deeply($l, [ 'tools/call', $TP1, '-', '-' ],
              'malformed tracestate and baggage dropped, the traceparent kept');

    (undef, undef, $l) = call('/mcp', $sid, 'test_simple_text', { tracestate => $TS });
    is($l->[2], '-', 'a tracestate without a traceparent: dropped');

    (undef, undef, $l) = call('/mcp', $sid, 'test_simple_text', undef,
                              { traceparent => "$TP1 x" });
    is($l->[1], '-', 'a version-00 header value with more after it: dropped');
}

{
    # params that are not an object: refused as before, with a header trace too
    for my $params ('null', '[]', '{"_meta":5}', '{"_meta":[]}') {
        my $r = $t->mcp_post($sid, qq({"jsonrpc":"2.0","id":"p$params","method":"tools/list","params":$params}),
                             headers => { traceparent => $TP2 });
        my $m = $r->{messages}[0] // {};
        ok($r->{status} != 500 && ($m->{result} || ($m->{error} && $m->{error}{code} != -32603)),
           "params $params and a header trace: answered, not a fault ($r->{status})")
            or diag($r->{body});
    }
    my ($m) = $t->mcp_request($sid, 'ping', undef, headers => { traceparent => $TP2 });
    ok($m && exists $m->{result}, 'ping without params, header trace: params made for it, answered');
}

# --- a location tool: the call's trace as the subrequest's headers --------------

{
    my ($m) = call('/mcp', $sid, 'echo_trace', { traceparent => $TP1, tracestate => $TS },
                   { traceparent => $TP2, tracestate => 'other=1' });
    is(text($m), "tp=$TP1 ts=$TS bg=", 'location tool: the body\'s trace as headers, not the client\'s');

    ($m) = call('/mcp', $sid, 'echo_trace', undef, { traceparent => $TP2, baggage => $BG });
    is(text($m), "tp=$TP2 ts= bg=$BG", 'location tool: a header-only trace goes on');

    ($m) = call('/mcp', $sid, 'echo_trace', undef, { traceparent => $BAD, baggage => 'a b' });
    is(text($m), 'tp= ts= bg=', 'location tool: the client\'s malformed headers never go');
}

# --- a server request of a traced call ---------------------------------------------

{
    my $msg = { jsonrpc => '2.0', id => 'samp', method => 'tools/call',
                params => { name => 'test_sampling', arguments => { prompt => 'p' },
                            _meta => { traceparent => $TP1, baggage => $BG } } };
    my $s = $t->mcp_post($sid, $msg, stream => 1, headers => { traceparent => $TP2 });
    my $req = next_request($s, 5) // {};
    is($req->{method}, 'sampling/createMessage', 'test_sampling: the server request');
    is(($req->{params}{_meta} // {})->{traceparent}, $TP1, '... carries the call\'s traceparent');
    is(($req->{params}{_meta} // {})->{baggage}, $BG, '... and its baggage');
    answer($t, $sid, $req->{id}, sampling_answer('fine')) if defined $req->{id};
    take_all($s, 3);

    $msg->{id} = 'samp2';
    delete $msg->{params}{_meta};
    $s = $t->mcp_post($sid, $msg, stream => 1);
    $req = next_request($s, 5) // {};
    ok(defined $req->{method} && !exists(($req->{params}{_meta} // {})->{traceparent}),
       'an untraced call\'s server request has no traceparent');
    answer($t, $sid, $req->{id}, sampling_answer('fine')) if defined $req->{id};
    take_all($s, 3);
}

# --- 2026-07-28: an input_required result's requests ----------------------------------

{
    my $P = 'io.modelcontextprotocol/';
    my $meta = { "${P}protocolVersion" => '2026-07-28',
                 "${P}clientCapabilities" => { elicitation => {} },
                 "${P}clientInfo" => { name => 'trace', version => '1' } };
    my $h = { 'MCP-Protocol-Version' => '2026-07-28', 'Mcp-Method' => 'tools/call',
              'Mcp-Name' => 'test_input_required_result_elicitation' };
    my ($m) = $t->mcp_request(undef, 'tools/call',
                              { name => 'test_input_required_result_elicitation', arguments => {},
                                _meta => { %$meta, traceparent => $TP1 } },
                              protocol_version => undef, headers => { %$h, traceparent => $TP2 });
    my $req = ((($m // {})->{result} // {})->{inputRequests} // {})->{user_name} // {};
    is($req->{method}, 'elicitation/create', 'input_required: the elicitation request');
    is(($req->{params}{_meta} // {})->{traceparent}, $TP1, '... carries the call\'s traceparent');

    ($m) = $t->mcp_request(undef, 'tools/call',
                           { name => 'test_input_required_result_elicitation', arguments => {},
                             _meta => $meta },
                           protocol_version => undef, headers => $h);
    $req = ((($m // {})->{result} // {})->{inputRequests} // {})->{user_name} // {};
    ok($req->{method} && !exists(($req->{params}{_meta} // {})->{traceparent}),
       '... and an untraced call\'s has none');
}

# --- a 2025-11-25 task's status notifications ----------------------------------------

{
    my $g = $t->mcp_get_stream($sid);
    take($g, 3);    # priming
    my ($m) = $t->mcp_request($sid, 'tools/call', { name => 'slow_compute',
                                                    arguments => { seconds => 1, label => 't' },
                                                    task => { ttl => 60000 },
                                                    _meta => { traceparent => $TP1 } },
                              headers => { traceparent => $TP2 });
    my $tid = ((($m // {})->{result} // {})->{task} // {})->{taskId} // '';
    ok(length $tid, 'a task of a traced call');
    my @n;
    my $deadline = Time::HiRes::time() + 5;
    while ((my $left = $deadline - Time::HiRes::time()) > 0) {
        my $ev = take($g, $left) // last;
        my $j = $ev->{json};
        next unless ref $j eq 'HASH' && ($j->{method} // '') eq 'notifications/tasks/status'
                    && ($j->{params}{taskId} // '') eq $tid;
        push @n, $j;
        last if $j->{params}{status} eq 'completed';
    }
    ok(@n && $n[-1]{params}{status} eq 'completed', 'its status notifications came, to completed');
    is_deeply([ map { ($_->{params}{_meta} // {})->{traceparent} // '' } @n ], [ ($TP1) x @n ],
              '... each carries the call\'s traceparent');
    $g->close if $g->can('close');
}

# --- mcp_pass: headers and _meta agree -----------------------------------------------

{
    my $gsid = $t->mcp_initialize(path => '/gw');
    ok($gsid, 'mcp_pass: initialized through the gateway');

    my (undef, undef, $l) = call('/gw', $gsid, 'cap', { traceparent => $TP1, tracestate => $TS },
                                 { traceparent => $TP2 }, arguments => { n => 1 });
    is($l->[1], $TP1, 'mcp_pass: the log says the body\'s trace');
    my ($u) = captured(qr/"n":1\b/);
    is_deeply([ header_of($u->{head}, 'traceparent') ], [ $TP1 ],
              'mcp_pass: one traceparent header upstream, the body\'s');
    is_deeply([ header_of($u->{head}, 'tracestate') ], [ $TS ], '... and its tracestate');
    is($u->{json}{params}{_meta}{traceparent}, $TP1, '... the body\'s _meta says the same');

    (undef, undef, $l) = call('/gw', $gsid, 'cap', undef, { traceparent => $TP2, baggage => $BG },
                              arguments => { n => 2 });
    is($l->[1], $TP2, 'mcp_pass, header only: logged');
    ($u) = captured(qr/"n":2\b/);
    is_deeply([ header_of($u->{head}, 'traceparent') ], [ $TP2 ], '... the header goes upstream');
    is($u->{json}{params}{_meta}{traceparent}, $TP2, '... and is inserted into the body\'s _meta');
    is($u->{json}{params}{_meta}{baggage}, $BG, '... with its baggage');
    is_deeply($u->{json}{params}{arguments}, { n => 2 }, '... the rest of the body as it was');

    call('/gw', $gsid, 'cap', { traceparent => $BAD, progressToken => 'pt' },
         { traceparent => $TP2 }, arguments => { n => 3 });
    ($u) = captured(qr/"n":3\b/);
    ok($u && !exists $u->{json}{params}{_meta}{traceparent},
       'mcp_pass: a malformed body traceparent is taken out of the body');
    is($u && $u->{json}{params}{_meta}{progressToken}, 'pt', '... the rest of _meta kept');
    is_deeply([ header_of($u->{head}, 'traceparent') ], [], '... and no header disagrees with it');

    call('/gw', $gsid, 'cap', undef, { traceparent => $BAD }, arguments => { n => 4 });
    ($u) = captured(qr/"n":4\b/);
    is_deeply([ header_of($u->{head}, 'traceparent') ], [], 'mcp_pass: a malformed header is not relayed');
    ok($u && !exists(($u->{json}{params}{_meta} // {})->{traceparent}), '... nor put in the body');

    call('/gw', $gsid, 'cap', undef, {}, arguments => { n => 5 });
    ($u) = captured(qr/"n":5\b/);
    ok($u && !exists(($u->{json}{params} // {})->{_meta}), 'mcp_pass, no trace: nothing added');

    my $before = () = grep { $_->{head} =~ /^DELETE / } captured(qr/^/);
    my $r = $t->mcp_delete($gsid, path => '/gw', headers => { traceparent => $TP2 });
    my @del = grep { $_->{head} =~ /^DELETE / } captured(qr/^/);
    my $d = $del[$before];
    ok($d, "mcp_pass: the DELETE went upstream ($r->{status})");
    is_deeply([ header_of(($d // {})->{head} // '', 'traceparent') ], [ $TP2 ],
              '... with the client\'s trace header, checked');
    is(logged($r->{headers}{'x-request-id'} // '')->[1], $TP2, '... and logged');
}

# --- mcp_pass, 2026-07-28: the body printed again still passes the upstream's checks -

{
    my $TP3 = '00-11111111111111111111111111111111-2222222222222222-01';
    my $P = 'io.modelcontextprotocol/';
    my $body = { jsonrpc => '2.0', id => 'sl1', method => 'tools/call',
                 params => { name => 'test_simple_text', arguments => {},
                             _meta => { "${P}protocolVersion" => '2026-07-28',
                                        "${P}clientCapabilities" => {},
                                        "${P}clientInfo" => { name => 'trace', version => '1' } } } };
    my $r = $t->mcp_post(undef, $body, path => '/gw26', protocol_version => undef,
                         headers => { 'MCP-Protocol-Version' => '2026-07-28', 'Mcp-Method' => 'tools/call',
                                      'Mcp-Name' => 'test_simple_text', traceparent => $TP3 });
    my ($m) = grep { ref $_ eq 'HASH' && ($_->{id} // '') eq 'sl1' } @{ $r->{messages} // [] };
    ok($m && $m->{result}, "stateless through mcp_pass, header-only trace: the upstream answered ($r->{status})")
        or diag($r->{body});
    my $lines = 0;
    for (1 .. 30) {
        $lines = () = (McpTest::_slurp($t->prefix . '/logs/trace.log') // '') =~ /\|tools\/call\|\Q$TP3\E\|/g;
        last if $lines >= 2;
        select undef, undef, undef, 0.1;
    }
    is($lines, 2, '... the gateway and the upstream both logged the trace');
}

# --- mcp_trace_generate: a trace for a request without one -------------------------

{
    my $gsid = $t->mcp_initialize(path => '/gen');
    my (undef, undef, $l) = call('/gen', $gsid, 'cap', undef, {}, arguments => { n => 8 });
    like($l->[1], qr/^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/, 'mcp_trace_generate on: a new traceparent logged');
    my ($u) = captured(qr/"n":8\b/);
    is_deeply([ header_of($u->{head}, 'traceparent') ], [ $l->[1] ], '... the upstream\'s header says it');
    is($u->{json}{params}{_meta}{traceparent}, $l->[1], '... and so does its _meta');

    my (undef, undef, $l2) = call('/gen', $gsid, 'cap', undef, {}, arguments => { n => 9 });
    isnt($l2->[1], $l->[1], '... another for the next request');

    (undef, undef, $l) = call('/gen', $gsid, 'cap', { traceparent => $TP1 }, {}, arguments => { n => 10 });
    is($l->[1], $TP1, '... a request with its own keeps it');

    (undef, undef, $l) = call('/gen', $gsid, 'cap', undef, { traceparent => $TP2 }, arguments => { n => 11 });
    is($l->[1], $TP2, '... and so does one with a header');
}

# --- mcp_backend: a leg carries the trace ----------------------------------------------

{
    my $asid = $t->mcp_initialize(path => '/agg');
    my ($m) = call('/agg', $asid, 'cap__cap', undef, { traceparent => $TP2, tracestate => $TS },
                   arguments => { n => 6 });
    is(text($m), 'ok', 'mcp_backend: the call answered');
    my ($u) = grep { $_->{head} =~ m{^POST /agg} } captured(qr/"n":6\b/);
    is_deeply([ header_of($u->{head}, 'traceparent') ], [ $TP2 ], 'mcp_backend: the leg\'s traceparent header');
    is_deeply([ header_of($u->{head}, 'tracestate') ], [ $TS ], '... its tracestate header');
    is($u->{json}{params}{_meta}{traceparent}, $TP2, '... and the leg\'s _meta');

    my $before = () = captured(qr/"method":"tools\/list"/);
    my ($list) = $t->mcp_request($asid, 'tools/list', {}, path => '/agg',
                                 headers => { traceparent => $TP2 });
    ok(grep({ $_->{name} eq 'cap__cap' } @{ ($list // {})->{result}{tools} // [] }), 'mcp_backend: tools/list merged');
    my @lists = captured(qr/"method":"tools\/list"/);
    my ($leg) = @lists[$before .. $#lists];
    is(($leg->{json}{params}{_meta} // {})->{traceparent}, $TP2, '... its leg carries the trace in _meta');
    is_deeply([ header_of($leg->{head}, 'traceparent') ], [ $TP2 ], '... and as a header');

    ($m) = call('/agg', $asid, 'cap__cap', { traceparent => $TP1 }, { traceparent => $BAD },
                arguments => { n => 7 });
    ($u) = captured(qr/"n":7\b/);
    is_deeply([ header_of($u->{head}, 'traceparent') ], [ $TP1 ],
              'mcp_backend: the body\'s trace, the client\'s malformed header not passed on');
}

done_testing;
