# A stateless (2026-07-28) client through mcp_backend (issue #39): its
# routed requests reach a backend that speaks the revision as the
# client's own, so that what needs the revision passes through the
# gateway as it would reach the backend directly:
#   - multi-round requests: the backend's input_required result reaches
#     the client, its requestState sealed in the gateway's (with the
#     backend and the name it was made for), and the retry with the
#     answers reaches the same backend with the backend's own state;
#     a round of one tool replayed on another tool or backend, the
#     backend's own state shown to the gateway, a tampered one: -32602;
#   - a capability the client did not declare: the backend's -32021,
#     with HTTP 400, as the built-in endpoint answers;
#   - Mcp-Param-* headers: the client's reach the backend with the
#     arguments unchanged, and one that differs from its argument is
#     -32020 with HTTP 400;
#   - the backend's error data keeps one correlationId (the gateway's);
#   - a backend that refuses the client's headers at the HTTP level (a
#     page, not JSON-RPC: its header buffers are smaller) fails that call
#     alone: it is neither left out for others nor taken for a 2025
#     server, so its next round still passes.
# A backend that does not speak 2026-07-28 (a 2025 server) is asked in a
# session as before (here one that refuses as the TypeScript SDK does;
# t/aggregate.t: the SDK's server-everything).

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use McpTest timeout => 90;

my $P = 'io.modelcontextprotocol/';
my $V = '2026-07-28';

# a backend behind proxy_pass whose header buffers are small
my $far = McpTest->new(server => <<'NGX')->start;
        large_client_header_buffers 4 1k;
        location = /mcp {
            mcp on;
            mcp_builtin everything;
        }

        # a 2025 server: a request without a session is refused as the
        # TypeScript SDK refuses it (the gateway's 2026 ones carry
        # Mcp-Method)
        location = /old {
            if ($http_mcp_method) {
                return 400 '{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"Bad Request: no session"}}';
            }
            proxy_pass http://127.0.0.1:%%PORT%%/mcp;
        }
NGX
my $farport = $far->port;

my $t = McpTest->new(
    http => "    mcp_session_zone zone=agg:4m;\n"
          . "    mcp_session_zone zone=local:4m;\n",
    server => <<"NGX");
        mcp_session agg;

        location = /mcp {
            mcp_backend local /_b/local prefix=;
            mcp_backend other /_b/other prefix=o;
            mcp_backend far   /_b/far prefix=f;
            mcp_backend old   /_b/old prefix=old;
            mcp_backend_timeout 5s;
        }

        location = /_b/local {
            internal;
            mcp on;
            mcp_session local;
            mcp_builtin everything;
        }

        location = /_b/other {
            internal;
            mcp on;
            mcp_session local;
            mcp_builtin everything;
        }

        location = /_b/far {
            internal;
            proxy_pass         http://127.0.0.1:$farport/mcp;
            proxy_http_version 1.1;
            proxy_set_header   Connection "";
        }

        location = /_b/old {
            internal;
            proxy_pass         http://127.0.0.1:$farport/old;
            proxy_http_version 1.1;
            proxy_set_header   Connection "";
        }

        location = /direct {
            mcp on;
            mcp_session local;
            mcp_builtin everything;
        }
NGX
$t->start;

# one stateless request: (its reply's message, the response)
sub sl {
    my ($method, $params, %o) = @_;
    my $caps = $o{caps} // { elicitation => {}, sampling => {}, roots => {} };
    my %h = ('Mcp-Method' => $method, %{ $o{headers} // {} });
    $h{'Mcp-Name'} //= $params->{name} if defined $params->{name};
    my $res = $t->mcp_post(undef, { jsonrpc => '2.0', id => 5, method => $method,
                                    params => { %$params,
                                                _meta => { "${P}protocolVersion" => $V,
                                                           "${P}clientCapabilities" => $caps,
                                                           "${P}clientInfo" => { name => 't', version => '1' } } } },
                           protocol_version => $V, headers => \%h, quiet => 1,
                           (defined $o{path} ? (path => $o{path}) : ()));
    my ($m) = grep { ref $_ eq 'HASH' && defined $_->{id} } @{ $res->{messages} // [] };
    return ($m, $res);
}

sub text_of {
    my ($m) = @_;
    return join '', map { $_->{text} // '' } @{ ($m && $m->{result} && $m->{result}{content}) // [] };
}

my $ELICIT = 'test_input_required_result_elicitation';
my $ROUNDS = 'test_input_required_result_multi_round';

# --- one round ---------------------------------------------------------------------

my ($m, $res) = sl('tools/call', { name => $ELICIT, arguments => {} });
my $r1 = $m && $m->{result};
is($r1 && $r1->{resultType}, 'input_required', 'round 1 through the gateway: input_required')
    or diag(explain($m));
my ($key) = keys %{ ($r1 && $r1->{inputRequests}) // {} };
ok(defined $key, '... with the backend\'s input request');
ok($r1 && defined $r1->{requestState}, '... and a requestState');
my $state = $r1 && $r1->{requestState};

my $answer = { action => 'accept', content => { name => 'Ada' } };
($m) = sl('tools/call', { name => $ELICIT, arguments => {},
                          inputResponses => { ($key // 'x') => $answer },
                          (defined $state ? (requestState => $state) : ()) });
like(text_of($m), qr/Ada/, 'round 2: the answer reached the backend, its result the client')
    or diag(explain($m));

# --- several rounds: the backend's own state carried by the gateway's ----------

($m) = sl('tools/call', { name => $ROUNDS, arguments => {} });
$r1 = $m && $m->{result};
my ($k1) = keys %{ ($r1 && $r1->{inputRequests}) // {} };
($m) = sl('tools/call', { name => $ROUNDS, arguments => {},
                          inputResponses => { ($k1 // 'x') => { action => 'accept', content => { name => 'Bo' } } },
                          requestState => $r1 && $r1->{requestState} });
my $r2 = $m && $m->{result};
is($r2 && $r2->{resultType}, 'input_required', 'multi-round: round 2 asks again') or diag(explain($m));
isnt($r2 && $r2->{requestState}, $r1 && $r1->{requestState}, '... with a new state');
my ($k2) = keys %{ ($r2 && $r2->{inputRequests}) // {} };
($m) = sl('tools/call', { name => $ROUNDS, arguments => {},
                          inputResponses => { ($k2 // 'x') => { action => 'accept', content => { color => 'teal' } } },
                          requestState => $r2 && $r2->{requestState} });
like(text_of($m), qr/Bo/, 'round 3: the name of round 1 came back in the backend\'s state');
like(text_of($m), qr/teal/, '... and the color of round 2');

# --- a state is for its tool and its backend only -------------------------------

($m, $res) = sl('tools/call', { name => 'test_input_required_result_request_state', arguments => {},
                                inputResponses => { ($key // 'x') => $answer }, requestState => $state });
is($m && $m->{error} && $m->{error}{code}, -32602, 'a round of one tool replayed on another: -32602')
    or diag(explain($m));

($m) = sl('tools/call', { name => "o__$ELICIT", arguments => {},
                          inputResponses => { ($key // 'x') => $answer }, requestState => $state });
is($m && $m->{error} && $m->{error}{code}, -32602,
   '... the same tool on another backend: -32602, the round never reaches it') or diag(explain($m));

(my $tampered = $state // '') =~ s/.$/$& eq 'A' ? 'B' : 'A'/e;
($m) = sl('tools/call', { name => $ELICIT, arguments => {},
                          inputResponses => { ($key // 'x') => $answer }, requestState => $tampered });
is($m && $m->{error} && $m->{error}{code}, -32602, 'a tampered state: -32602');

# the backend's own state, as the backend gives it to a client of its own
my $STATEFUL = 'test_input_required_result_request_state';
($m) = sl('tools/call', { name => $STATEFUL, arguments => {} }, path => '/direct');
my $own = $m && $m->{result} && $m->{result}{requestState};
my ($ko) = keys %{ ($m && $m->{result} && $m->{result}{inputRequests}) // {} };
ok(defined $own, 'the backend directly: a state of its own');
($m) = sl('tools/call', { name => $STATEFUL, arguments => {},
                          inputResponses => { ($ko // 'x') => { action => 'accept', content => {} } },
                          requestState => $own });
is($m && $m->{error} && $m->{error}{code}, -32602, '... which the gateway does not take');

# --- a capability the client did not declare ------------------------------------

($m, $res) = sl('tools/call', { name => 'test_missing_capability', arguments => {} }, caps => {});
is($m && $m->{error} && $m->{error}{code}, -32021, 'an undeclared capability: -32021 through the gateway')
    or diag(explain($m));
is($res->{status}, 400, '... with HTTP 400');
my $n = () = ($res->{body} // '') =~ /"correlationId"/g;
is($n, 1, '... its data with one correlationId') or diag($res->{body});

# --- Mcp-Param-* headers ---------------------------------------------------------------

my %args = (region => 'eu-west', priority => 3, verbose => JSON::PP::true());
($m, $res) = sl('tools/call', { name => 'test_custom_header_tool', arguments => \%args },
                headers => { 'Mcp-Param-Region' => 'eu-west', 'Mcp-Param-Priority' => '3',
                             'Mcp-Param-Verbose' => 'true' });
is($res->{status}, 200, 'Mcp-Param-* headers as the arguments: the call passes');
ok($m && $m->{result} && !$m->{result}{isError}, '... with its result') or diag(explain($m));

($m, $res) = sl('tools/call', { name => 'test_custom_header_tool', arguments => \%args },
                headers => { 'Mcp-Param-Region' => 'us-east', 'Mcp-Param-Priority' => '3',
                             'Mcp-Param-Verbose' => 'true' });
is($res->{status}, 400, 'an Mcp-Param-* header that differs from its argument: HTTP 400');
is($m && $m->{error} && $m->{error}{code}, -32020, '... -32020') or diag(explain($m));

($m, $res) = sl('tools/call', { name => 'test_custom_header_tool', arguments => \%args },
                headers => { 'Mcp-Param-Priority' => '3', 'Mcp-Param-Verbose' => 'true' });
is($m && $m->{error} && $m->{error}{code}, -32020, 'one left out while its argument is there: -32020');

($m, $res) = sl('tools/call', { name => 'test_custom_header_tool', arguments => \%args },
                headers => { 'Mcp-Param-Region' => '=?base64?ZXUtd2VzdA=?=', 'Mcp-Param-Priority' => '3',
                             'Mcp-Param-Verbose' => 'true' });
is($res->{status}, 400, 'an invalid Base64 value: HTTP 400');

# --- a refusal of the client's headers is that call's alone ----------------------

my $long = 'r' x 1500;
($m, $res) = sl('tools/call', { name => 'f__test_custom_header_tool',
                                arguments => { %args, region => $long } },
                headers => { 'Mcp-Param-Region' => $long, 'Mcp-Param-Priority' => '3',
                             'Mcp-Param-Verbose' => 'true' });
ok($m && $m->{result} && $m->{result}{isError}, 'a header far refuses with a page: a tool error')
    or diag(explain($m));
like(text_of($m), qr/"far" .*HTTP 400/, '... that names far and its status');
($m) = sl('tools/call', { name => "f__$ELICIT", arguments => {} });
is($m && $m->{result} && $m->{result}{resultType}, 'input_required',
   '... and far\'s next round still passes: neither left out nor asked in a session')
    or diag(explain($m));

# --- a 2025 server: its refusal of a request of no session (a JSON-RPC
# error to no id) has it asked in a session ---------------------------------

($m) = sl('tools/call', { name => 'old__test_simple_text', arguments => {} });
like(text_of($m), qr/simple text/, 'a backend that refuses the revision: asked in a session')
    or diag(explain($m));

$t->stop;
$far->stop;
done_testing();
