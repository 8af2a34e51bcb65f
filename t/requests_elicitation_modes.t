# Elicitation's modes (issue #41, 2025-11-25): a client declares form,
# url or both (capabilities.elicitation {form: {}, url: {}}; an empty
# object is form only), in initialize or in a 2026-07-28 request's _meta.
# A request in a mode the client did not declare is never sent: the
# Everything set's form tools say the client cannot; a multi-round
# request gets -32021 naming the mode; the aggregation gateway answers
# its backend's request itself, and declares to a backend the modes the
# client declared.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use McpTest;
use McpAssert;
use McpStream;
use McpGateway qw(fake_mcp_server aggregate_gateway);

my $P = 'io.modelcontextprotocol/';
my $V = '2026-07-28';

my $t = streaming_server(location => 'mcp_request_timeout 3s;');

sub text_of { ((($_[0] // {})->{result} // {})->{content} // [ {} ])->[0]{text} }

# --- 2025 sessions: the Everything set's form elicitation --------------------------

for my $case ([ { url => {} }, 0 ], [ { form => {} }, 1 ], [ {}, 1 ], [ { form => {}, url => {} }, 1 ]) {
    my ($el, $sent) = @$case;
    my $have = '{' . join(',', sort keys %$el) . '}';
    my ($sid) = $t->mcp_initialize(capabilities => { elicitation => $el });
    if ($sent) {
        my $s = call_stream($t, $sid, 'el', 'test_elicitation', { message => 'who?' });
        my ($req) = grep { ($_->{method} // '') eq 'elicitation/create' } rpc_of(take_all($s, 1));
        is($req && $req->{params}{mode}, 'form', "elicitation $have: a form request is sent");
        answer($t, $sid, $req && $req->{id}, { action => 'decline' });
        my @rpc = rpc_of(take_all($s, 3));
        is(text_of($rpc[-1]), 'User response: action=decline, content=null', '... and answered');
    }
    else {
        my ($m, $r) = $t->mcp_request($sid, 'tools/call',
                                      { name => 'test_elicitation', arguments => { message => 'x' } },
                                      id => 'el', timeout => 5);
        ok(!(grep { defined $_->{method} } @{ $r->{messages} // [] }),
           "elicitation $have: no form request is sent");
        ok($m && $m->{result}{isError}, "elicitation $have: isError");
        like(text_of($m), qr/does not support elicitation/, '... saying the client cannot');
    }
}

# --- 2026-07-28: _meta's modes and -32021 -------------------------------------------

sub stateless_call {
    my ($tool, $caps, $id) = @_;
    my $r = $t->mcp_post(undef,
        { jsonrpc => '2.0', id => $id, method => 'tools/call',
          params => { name => $tool, arguments => {},
                      _meta => { "${P}protocolVersion" => $V, "${P}clientCapabilities" => $caps,
                                 "${P}clientInfo" => { name => 't38', version => '1' } } } },
        headers => { 'MCP-Protocol-Version' => $V, 'Mcp-Method' => 'tools/call', 'Mcp-Name' => $tool },
        protocol_version => undef, quiet => 1);
    my ($m) = grep { ref $_ eq 'HASH' && exists $_->{id} } @{ $r->{messages} // [] };
    return $m;
}

{
    my $m = stateless_call('test_input_required_result_elicitation', { elicitation => { url => {} } }, 'u1');
    is_error($m, -32021, 'u1', 'stateless, elicitation {url}: a form input request is not asked: -32021');
    is_deeply($m && $m->{error} && $m->{error}{data}{requiredCapabilities}, { elicitation => {} },
              '... requiredCapabilities {"elicitation":{}} (form mode)');
    $m = stateless_call('test_input_required_result_elicitation', { elicitation => { form => {} } }, 'f1');
    is($m && $m->{result} && $m->{result}{resultType}, 'input_required',
       'stateless, elicitation {form}: input_required');
    $m = stateless_call('test_input_required_result_elicitation', { elicitation => {} }, 'e1');
    is($m && $m->{result} && $m->{result}{resultType}, 'input_required',
       'stateless, elicitation {}: form mode, input_required');
}

$t->stop;

# --- the aggregation gateway ------------------------------------------------------

my $log = "/tmp/t38-fake-$$.log";
unlink $log;

# form and url: an elicitation/create of that mode, the result 0.6 s later
my $fake = fake_mcp_server(log => $log, tools => [ 'form', 'url' ], call => sub {
    my ($c, $mode, $id) = @_;
    my $p = $mode eq 'form'
          ? '{"message":"m","requestedSchema":{"type":"object","properties":{}}}'
          : '{"mode":"url","message":"m","url":"https://example.com/x","elicitationId":"x1"}';
    print $c "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n";
    print $c qq(data: {"jsonrpc":"2.0","id":"ask-$mode","method":"elicitation/create","params":$p}\n\n);
    select undef, undef, undef, 0.6;
    print $c qq(data: {"jsonrpc":"2.0","id":$id,"result":{"content":[{"type":"text","text":"done"}]}}\n\n);
});

my $g = aggregate_gateway(zone => 'modes', backends => [ fake => $fake->{port} ]);

sub fake_bodies { open my $fh, '<', $log or return (); my @l = <$fh>; chomp @l; @l }

for my $case ([ { url => {} }, 'form', 0 ], [ { url => {} }, 'url', 1 ],
              [ {}, 'url', 0 ], [ {}, 'form', 1 ], [ { form => {} }, 'url', 0 ]) {
    my ($el, $mode, $sent) = @$case;
    my $have = '{' . join(',', sort keys %$el) . '}';
    unlink $log;
    my ($sid) = $g->mcp_initialize(capabilities => { elicitation => $el });
    my ($init) = grep { /"method":"initialize"/ } fake_bodies();
    my $caps = eval { McpTest::decode_json($init)->{params}{capabilities} } // {};
    is_deeply($caps->{elicitation}, $el, "gateway, client $have: the backend is declared $have");

    if ($sent) {
        my $s = call_stream($g, $sid, "g-$mode", "fake__$mode", {});
        my ($req) = grep { ($_->{method} // '') eq 'elicitation/create' } rpc_of(take($s, 3), take($s, 3));
        is($req && ($req->{params}{mode} // 'form'), $mode, "gateway, client $have: a $mode request is relayed");
        is(answer($g, $sid, $req && $req->{id}, { action => 'decline' })->{status}, 202,
           '... the client answers it: 202');
        my @rpc = rpc_of(take_all($s, 5));
        is(@rpc && $rpc[-1]{id}, "g-$mode", '... the call ends with the backend\'s response');
        # the fake ends the call on its own: that the answer went back is
        # seen only at the backend, under the id the backend asked with
        my $back;
        for (1 .. 40) {
            ($back) = grep { /"id":"ask-$mode"/ && /"result":\{"action":"decline"\}/ } fake_bodies();
            last if $back;
            select undef, undef, undef, 0.05;
        }
        ok($back, '... and the backend gets the client\'s answer under its own id')
            or diag(join "\n", fake_bodies());
    }
    else {
        my ($m, $r) = $g->mcp_request($sid, 'tools/call', { name => "fake__$mode", arguments => {} },
                                      id => "g-$mode", timeout => 5);
        ok(!(grep { defined $_->{method} } @{ $r->{messages} // [] }),
           "gateway, client $have: the backend's $mode request is not relayed");
        is($m && $m->{id}, "g-$mode", '... the call ends with the backend\'s response');
        my $back;
        for (1 .. 40) {
            ($back) = grep { /"id":"ask-$mode"/ && /"error"/ } fake_bodies();
            last if $back;
            select undef, undef, undef, 0.05;
        }
        ok($back, '... the backend gets an error answer for it') or diag(join "\n", fake_bodies());
    }
}

$g->stop;
unlink $log;
done_testing;
