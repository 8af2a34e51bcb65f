# Token exchange (RFC 8693, issue 37 item 2) against a real authorization
# server: oidc-provider (npm) in t/js/oidc_as.mjs, which issues the
# callers' tokens (client credentials, audience the gateway) and
# exchanges them (its registered token-exchange grant) for JWTs whose
# audience is the upstream.  The upstream is the module's Everything set
# on another port that takes only tokens of its own audience (the AS's
# keys); its access log shows the token that arrived.  The AS counts the
# exchanges it was asked for; the gateway's token location logs every
# attempt (log_subrequest), also when the AS is down.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use MIME::Base64 qw(encode_base64 decode_base64);
use Time::HiRes qw(time sleep);
use POSIX ();
use McpTest;
use McpGateway;
use McpJwt;

my $why = node_available('oidc-provider');
plan skip_all => $why if $why;

my $GW = 'https://gateway.test/mcp';
my $UP = 'https://upstream.test/mcp';
my $SHORT = 'https://upstream.test/short';
my $N = $ENV{MCP_EXCHANGE_CALLS} // 1000;

# --- the authorization server ---------------------------------------------------

my $as_log = "/tmp/mcptest-oidc-as.$$.log";
# the gateway's private_key_jwt key; the AS knows its public half
my $gwkey = McpJwt->new_key(type => 'P-256', kid => 'gw-pk1');
my $as_pid = spawn(name => 'oidc_as', cwd => npm_dir(), log => $as_log,
                   env => { PKJWT_JWKS => McpJwt::jwks($gwkey) },
                   cmd => [ node_bin(), McpGateway::_node_script('oidc_as.mjs') ]);
my $as_port;
McpTest::wait_until(30, sub {
    ($as_port) = (McpTest::_slurp($as_log) // '') =~ /"port":(\d+)/;
    return $as_port;
}) or BAIL_OUT('oidc_as.mjs did not start: ' . (McpTest::_slurp($as_log) // ''));

my $ISS = "http://127.0.0.1:$as_port";

# an AS that accepts and never answers
my $hung = silent_listener();
my $HUNG = $hung->sockport;

sub as_request {
    my ($t, %o) = @_;
    return $t->request(port => $as_port, %o);
}

sub caller_token {
    my ($t, $who) = @_;
    my $r = as_request($t, method => 'POST', path => '/token',
        headers => { Authorization => 'Basic ' . encode_base64("$who:$who-secret", ''),
                     'Content-Type' => 'application/x-www-form-urlencoded' },
        body => "grant_type=client_credentials&scope=mcp%3Atools&resource="
                . 'https%3A%2F%2Fgateway.test%2Fmcp');
    my $j = eval { McpTest::decode_json($r->{body}) } // {};
    diag("token: $r->{status} $r->{body} " . ($r->{error} // "")) unless $j->{access_token};
    return $j->{access_token};
}

sub counts {
    my ($t) = @_;
    my $r = as_request($t, path => '/count');
    return eval { McpTest::decode_json($r->{body}) } // {};
}

sub claims {
    my ($jwt) = @_;
    my (undef, $p) = split /\./, $jwt // '';
    return {} unless defined $p;
    $p =~ tr{-_}{+/};
    $p .= '=' x ((4 - length($p) % 4) % 4);
    return eval { McpTest::decode_json(decode_base64($p)) } // {};
}

# --- the gateway and the upstream ----------------------------------------------------

my $jwks = <<"NGX";
        location = /_jwks {
            internal;
            proxy_pass $ISS/jwks;
            proxy_pass_request_headers off;
            proxy_pass_request_body off;
        }
NGX

my $t = McpTest->new(
    ports => 2,
    http  => everything_upstream_http({ locations => <<"NGX" . $jwks },
        mcp_auth_jwt_issuer $ISS;
        mcp_auth_jwt_key_request /_jwks;
        mcp_auth_token_passthrough on;

        location = /up/mcp {
            mcp on; mcp_builtin everything;
            mcp_auth_resource http://127.0.0.1:%%PORT2%%/up/mcp;
            mcp_auth_jwt_audience $UP;
            mcp_auth_jwt "UP";
            access_log %%PREFIX%%/logs/up.log uplog;
        }
        location = /up/plain {
            mcp on; mcp_builtin everything;
            mcp_auth_resource http://127.0.0.1:%%PORT2%%/up/plain;
            mcp_auth_jwt_audience $GW;
            mcp_auth_jwt "UP";
            access_log %%PREFIX%%/logs/plain.log uplog;
        }
        location = /up/tool {
            access_log %%PREFIX%%/logs/tool.log uplog;
            return 200 "tool ok";
        }
        location = /up/short {
            mcp on; mcp_builtin everything;
            mcp_auth_resource http://127.0.0.1:%%PORT2%%/up/short;
            mcp_auth_jwt_audience $SHORT;
            mcp_auth_jwt "UP";
            access_log %%PREFIX%%/logs/up.log uplog;
        }
NGX
        'log_format uplog escape=json \'{"uri":"$uri","method":"$request_method",'
        . '"auth":"$http_authorization",'
        . '"status":$status}\';',
        'log_format tok \'$msec $status\';',
        'mcp_secret $gw_secret %%PREFIX%%/conf/gw_secret;',
        'mcp_secret $post_secret %%PREFIX%%/conf/post_secret;'),
    server => <<"NGX" . $jwks);
        mcp_session gw;
        mcp_auth_resource http://127.0.0.1:%%PORT%%/mcp;
        mcp_auth_jwt_audience $GW;
        mcp_auth_jwt_issuer $ISS;
        mcp_auth_jwt_key_request /_jwks;
        mcp_token_exchange_client_id gateway;
        mcp_token_exchange_client_secret \$gw_secret;
        mcp_auth_authorization_servers $ISS;

        location = /.well-known/oauth-protected-resource/mcp { mcp_auth_metadata; }

        location = /mcp {
            mcp_pass http://127.0.0.1:%%PORT2%%/up/mcp;
            mcp_auth_jwt "GW";
            mcp_pass_authorization on;
            mcp_auth_token_passthrough on;
            mcp_token_exchange /_token audience=$UP;
        }
        location = /short {
            mcp_pass http://127.0.0.1:%%PORT2%%/up/short;
            mcp_auth_jwt "GW";
            mcp_token_exchange /_token resource=$SHORT margin=30s;
        }
        location = /post {
            mcp_pass http://127.0.0.1:%%PORT2%%/up/mcp;
            mcp_auth_jwt "GW";
            mcp_token_exchange /_token audience=$UP scope=mcp:tools;
            mcp_token_exchange_client_id gateway-post;
            mcp_token_exchange_client_secret \$post_secret;
            mcp_token_exchange_client_auth client_secret_post;
        }
        location = /plain {
            mcp_pass http://127.0.0.1:%%PORT2%%/up/plain;
            mcp_auth_jwt "GW";
            mcp_pass_authorization on;
            mcp_auth_token_passthrough on;
        }
        location = /hung {
            mcp_pass http://127.0.0.1:%%PORT2%%/up/mcp;
            mcp_auth_jwt "GW";
            mcp_token_exchange /_token_hung audience=$UP timeout=1s;
        }
        location = /_token_hung {
            internal;
            proxy_pass http://127.0.0.1:$HUNG/token;
        }
        location = /tools {
            mcp on;
            mcp_auth_jwt "GW";
            mcp_token_exchange /_token audience=$UP;
            mcp_tool whoami {
                description "what the upstream got";
                pass /_tool;
                method GET;
            }
        }
        location = /_tool {
            internal;
            proxy_pass http://127.0.0.1:%%PORT2%%/up/tool;
            proxy_set_header Authorization "Bearer \$mcp_upstream_token";
        }
        location = /pkjwt {
            mcp_pass http://127.0.0.1:%%PORT2%%/up/mcp;
            mcp_auth_jwt "GW";
            mcp_token_exchange /_token audience=$UP;
            mcp_token_exchange_client_id gateway-pkjwt;
            mcp_token_exchange_client_key $gwkey->{pem} audience=$ISS kid=gw-pk1;
            mcp_token_exchange_client_auth private_key_jwt;
        }
        location = /open {
            mcp_token_exchange /_token audience=$UP;
            add_header X-Upstream-Token "[\$mcp_upstream_token]" always;
            alias %%PREFIX%%/html/ok.txt;
        }
        location = /var {
            mcp_auth_jwt "GW";
            mcp_token_exchange /_token audience=$UP;
            add_header X-Upstream-Token \$mcp_upstream_token always;
            alias %%PREFIX%%/html/ok.txt;
        }
        location = /_token {
            internal;
            proxy_pass $ISS/token;
            log_subrequest on;
            access_log %%PREFIX%%/logs/token.log tok;
        }
NGX
$t->write_file('conf/gw_secret', "gateway-secret\n");
$t->write_file('html/ok.txt', "ok\n");
chmod 0600, $t->prefix . '/conf/gw_secret';
$t->write_file('conf/post_secret', "gateway-post-secret\n");
chmod 0600, $t->prefix . '/conf/post_secret';
$t->start;

my $UPLOG = 'up.log';

sub up_auths {
    return map { $_->{auth} } grep { ($_->{uri} // '') =~ m{^/up/} } upstream_log($t, $UPLOG);
}

sub call_echo {
    my ($sid, $tok, %o) = @_;
    my ($v, $msg, $r) = $t->mcp_call($sid, 'tools/call',
        { name => 'test_simple_text', arguments => {} },
        headers => { Authorization => "Bearer $tok" }, path => $o{path} // '/mcp');
    return ($v, $msg, $r);
}

sub init {
    my ($tok, %o) = @_;
    my %h = (headers => { Authorization => "Bearer $tok" }, path => $o{path} // '/mcp');
    my $r = $t->mcp_post(undef, { jsonrpc => '2.0', id => 'init', method => 'initialize',
            params => { protocolVersion => '2025-11-25', capabilities => {},
                        clientInfo => { name => 'tx-test', version => '1' } } }, %h);
    my $sid = $r->{headers}{'mcp-session-id'};
    diag("initialize: $r->{status} $r->{body}") unless $r->{status} == 200 && $sid;
    return undef unless $sid;
    my $n = $t->mcp_post($sid, { jsonrpc => '2.0', method => 'notifications/initialized' }, %h);
    diag("initialized: $n->{status} $n->{body}") unless $n->{status} == 202;
    return $n->{status} == 202 ? $sid : undef;
}

# --- works, and the upstream sees the exchanged token only --------------------------

my $tok1 = caller_token($t, 'caller1');
ok($tok1, 'the AS issued caller1 a token for the gateway');
is(claims($tok1)->{aud}, $GW, '... its audience is the gateway');

my $sid = init($tok1);
ok($sid, 'initialize through the gateway with token exchange');
my ($v) = call_echo($sid, $tok1, text => 'through');
like(McpTest::encode_json($v // {}), qr/simple text response/, 'tools/call works through the exchange');
is(counts($t)->{issued}, 1, 'one exchange so far');

sleep 0.3;
my @auths = up_auths();
ok(@auths >= 3, 'the upstream logged the relayed requests (' . scalar(@auths) . ')');
ok(!(grep { index($_, $tok1) >= 0 } @auths),
   "the caller's token never reached the upstream (mcp_pass_authorization and "
   . "mcp_auth_token_passthrough on notwithstanding)");
my %up = map { $_ => 1 } @auths;
is(scalar keys %up, 1, 'one token at the upstream for caller1');
my ($x1) = map { /^Bearer (\S+)$/ ? $1 : () } keys %up;
ok($x1, 'the upstream got Authorization: Bearer <exchanged>');
is(claims($x1)->{aud}, $UP, "... whose audience is the upstream's");
is(claims($x1)->{act}{sub}, 'caller1', '... on behalf of caller1 (act.sub)');

# --- N calls, one exchange ------------------------------------------------------------

# each call of the caller through the exchange, beside one through a
# plain mcp_pass that passes the caller's token on (an upstream that
# takes the gateway's audience): the cost of the cached exchange
my $sidq = init($tok1, path => '/plain');
my ($bad, $badq, $dt, $dq) = (0, 0, 0, 0);
for my $i (1 .. $N) {
    my $t0 = time;
    my ($res) = call_echo($sid, $tok1);
    $dt += time - $t0;
    $bad++ unless McpTest::encode_json($res // {}) =~ /simple text response/;
    $t0 = time;
    ($res) = call_echo($sidq, $tok1, path => '/plain');
    $dq += time - $t0;
    $badq++ unless McpTest::encode_json($res // {}) =~ /simple text response/;
}
is($bad, 0, "$N tools/calls by one caller all answered");
is($badq, 0, '... and as many through the plain mcp_pass');
is(counts($t)->{issued}, 1, "$N calls by one caller: still exactly 1 exchange at the AS");
my @plain = map { $_->{auth} } upstream_log($t, 'plain.log');
is(scalar(grep { $_ eq "Bearer $tok1" } @plain), scalar(@plain),
   "the plain location passed the caller's own token (the baseline)");
diag(sprintf('%d calls: %.2f s with the cached exchanged token, %.2f s through a plain '
             . 'mcp_pass passing the token: %.2fx', $N, $dt, $dq, $dq / ($dt || 1)));

# --- two callers, two tokens ------------------------------------------------------------

my $tok2 = caller_token($t, 'caller2');
my $sid2 = init($tok2);
ok($sid2, 'caller2 initializes');
($v) = call_echo($sid2, $tok2, text => 'second');
like(McpTest::encode_json($v // {}), qr/simple text response/, 'caller2 calls a tool');
is(counts($t)->{issued}, 2, 'two callers: two exchanges');
sleep 0.3;
my %up2 = map { $_ => 1 } up_auths();
is(scalar keys %up2, 2, 'two distinct tokens reached the upstream');
my ($x2) = grep { $_ ne "Bearer $x1" } keys %up2;
$x2 =~ s/^Bearer //;
is(claims($x2)->{act}{sub}, 'caller2', "the second is caller2's");

# --- GET and DELETE go with the exchanged token too ---------------------------------------------

my $r = $t->mcp_delete($sid2, headers => { Authorization => "Bearer $tok2" });
ok($r->{status} == 200 || $r->{status} == 204, "DELETE through the gateway ($r->{status})");
sleep 0.3;
my @del = grep { ($_->{method} // '') eq 'DELETE' } upstream_log($t, $UPLOG);
is(scalar @del, 1, 'the DELETE reached the upstream');
is($del[0]{auth}, "Bearer $x2", '... with the exchanged token');

# --- client_secret_post and $mcp_upstream_token -----------------------------------------

$r = $t->request(path => '/var', headers => { Authorization => "Bearer $tok1" });
is($r->{status}, 200, 'a plain location with mcp_token_exchange serves');
is($r->{headers}{'x-upstream-token'}, $x1,
   '$mcp_upstream_token is the cached exchanged token (same key: same token)');
is(counts($t)->{issued}, 2, '... no new exchange for it');
$r = $t->request(path => '/open');
is($r->{status}, 200, 'a location without authorization: the exchange has no caller, the file is served');
is($r->{headers}{'x-upstream-token'}, '[]', '... and $mcp_upstream_token is empty');

my $sidp = init($tok2, path => '/post');
ok($sidp, 'client_secret_post: initialize');
($v) = call_echo($sidp, $tok2, path => '/post', text => 'posted');
like(McpTest::encode_json($v // {}), qr/simple text response/, 'client_secret_post: a call');
is(counts($t)->{issued}, 3, '... one more exchange (another key: scope, client)');

my $sidt = init($tok1, path => '/tools');
ok($sidt, 'an MCP location with a location tool and the exchange');
($v) = $t->mcp_call($sidt, 'tools/call', { name => 'whoami', arguments => {} },
    headers => { Authorization => "Bearer $tok1" }, path => '/tools');
like(McpTest::encode_json($v // {}), qr/tool ok/, 'the location tool answered');
sleep 0.3;
my @tool = upstream_log($t, 'tool.log');
is(scalar @tool, 1, "the tool's upstream got one request");
is($tool[0]{auth}, "Bearer $x1",
   "... with proxy_set_header Authorization \"Bearer \$mcp_upstream_token\": the exchanged token");
is(counts($t)->{issued}, 3, '... the cached one: no new exchange');

# the official TypeScript SDK client, discovery to tools/call, through the exchange
my $url = 'http://127.0.0.1:' . $t->port . '/mcp';
my ($src, $sdk) = run_node_script('auth_discovery.mjs', [ $url, $tok1 ], timeout => 60);
my $o = eval { McpTest::decode_json((grep { /^\{/ } split /\n/, $sdk // '')[-1] // '') } // {};
is_deeply($o->{authorization_servers}, [ $ISS ], 'SDK: the metadata names the AS');
is($o->{unauthenticated_status}, 401, 'SDK: without a token, 401');
is($o->{session}, 'yes', 'SDK: with the AS-issued token, a session through the exchange')
    or diag($sdk);
is($o->{call_text}, 'This is a simple text response for testing.', 'SDK: tools/call');
is(counts($t)->{issued}, 3, 'SDK: the same caller token, the cached exchanged token');

my $sidk = init($tok2, path => '/pkjwt');
ok($sidk, 'private_key_jwt (ES256): initialize')
    or diag(join "\n", grep { /grant\.error/ } split /\n/, McpTest::_slurp($as_log) // '');
($v) = call_echo($sidk, $tok2, path => '/pkjwt');
like(McpTest::encode_json($v // {}), qr/simple text response/, 'private_key_jwt: a call');
is(counts($t)->{issued}, 4, '... one more exchange (another client)');
is(counts($t)->{pkjwt}, 1, '... authenticated by the AS as gateway-pkjwt');

# --- expiry: a token past its time is exchanged again ----------------------------------------

my $sid3 = init($tok1, path => '/short');
ok($sid3, 'initialize on the short-lived audience');
($v) = call_echo($sid3, $tok1, path => '/short', text => 'short1');
like(McpTest::encode_json($v // {}), qr/simple text response/, 'a call with the short-lived token');
my $c3 = counts($t)->{issued};
is($c3, 5, 'one exchange for the new audience');
($v) = call_echo($sid3, $tok1, path => '/short', text => 'short2');
is(counts($t)->{issued}, 5, 'within its life (4 s, kept 2 s): no new exchange');
sleep 2.5;
($v) = call_echo($sid3, $tok1, path => '/short', text => 'short3');
like(McpTest::encode_json($v // {}), qr/simple text response/, 'a call after it expired (in the cache) works');
is(counts($t)->{issued}, 6, 'the expired token was exchanged again');

# --- the AS refuses --------------------------------------------------------------------------

as_request($t, method => 'POST', path => '/refuse?on=1');
my $tok4 = caller_token($t, 'caller1');
isnt($tok4, $tok1, 'a fresh caller1 token (another key)');
my $m = $t->log_mark;
$r = $t->mcp_post(undef, { jsonrpc => '2.0', id => 'init-refused', method => 'initialize',
        params => { protocolVersion => '2025-11-25', capabilities => {},
                    clientInfo => { name => 'x', version => '1' } } },
    headers => { Authorization => "Bearer $tok4" });
is($r->{status}, 403, 'the AS refusing: 403');
my $err = eval { McpTest::decode_json($r->{body}) } // {};
ok($err->{error} && $err->{error}{code}, '... with a JSON-RPC error');
is($err->{id}, 'init-refused', "... carrying the request's id");
like($t->log_since($m), qr/\[warn\].*token exchange at "\/_token" refused \(status 400, error "invalid_grant"\)/,
     '... the reason in error.log at [warn]');
unlike($t->error_log, qr/\Q$tok4\E|\Q$tok1\E|\Q$x1\E/, 'no token in error.log');
as_request($t, method => 'POST', path => '/refuse?on=0');

# --- concurrent first requests: one exchange, the others wait for it ---------------------------

my $tok6 = caller_token($t, 'caller1');
my $c6 = counts($t)->{issued};
as_request($t, method => 'POST', path => '/delay?ms=400');
my $start = time + 0.5;
my $out6 = $t->prefix . '/burst';
my @burst;
for my $k (1 .. 6) {
    my $pid = fork // die "fork: $!";
    if (!$pid) {
        sleep($start - time) if $start > time;
        my $rr = $t->mcp_post(undef, { jsonrpc => '2.0', id => "b$k", method => 'initialize',
                params => { protocolVersion => '2025-11-25', capabilities => {},
                            clientInfo => { name => 'x', version => '1' } } },
            headers => { Authorization => "Bearer $tok6" }, keepalive => 0);
        open my $f, '>>', $out6; print $f "$rr->{status}\n"; close $f;
        POSIX::_exit(0);
    }
    push @burst, $pid;
}
waitpid $_, 0 for @burst;
my @st6 = split /\n/, McpTest::_slurp($out6) // '';
is(scalar(grep { $_ == 200 } @st6), 6, '6 simultaneous first requests of one caller all succeed');
is(counts($t)->{issued}, $c6 + 1,
   '... with one exchange between them (the AS answering 400 ms late: the others waited)');
as_request($t, method => 'POST', path => '/delay?ms=0');

# --- the AS hangs: 503 within the timeout ----------------------------------------------------------

my $t1 = time;
$r = $t->mcp_post(undef, { jsonrpc => '2.0', id => 'hung', method => 'initialize',
        params => { protocolVersion => '2025-11-25', capabilities => {},
                    clientInfo => { name => 'x', version => '1' } } },
    headers => { Authorization => "Bearer $tok1" }, path => '/hung', timeout => 10);
my $waited = time - $t1;
is($r->{status}, 503, 'the AS hanging: 503');
is($r->{headers}{'retry-after'}, '1', '... with Retry-After: 1');
ok($waited >= 0.9 && $waited < 3, sprintf('... after the exchange timeout (1 s): %.2f s', $waited));
$r = $t->mcp_post(undef, { jsonrpc => '2.0', id => 'hung2', method => 'initialize',
        params => { protocolVersion => '2025-11-25', capabilities => {},
                    clientInfo => { name => 'x', version => '1' } } },
    headers => { Authorization => "Bearer $tok1" }, path => '/hung', timeout => 10);
is($r->{status}, 503, 'at once after it: 503 from the hold-off, no new attempt');

# --- the AS stopped: 503 + Retry-After, at most one attempt a second ---------------------------

my $tok5 = caller_token($t, 'caller2');
stop_process($as_pid);
$as_pid = undef;

my $lines0 = () = (McpTest::_slurp($t->prefix . '/logs/token.log') // '') =~ /\n/g;
my $out = $t->prefix . '/storm';
my @kids;
my $span = 2.5;
for my $k (1 .. 4) {
    my $pid = fork // die "fork: $!";
    if (!$pid) {
        my ($n, $ok, $ra) = (0, 0, 0);
        my $end = time + $span;
        while (time < $end) {
            my $rr = $t->mcp_post(undef, { jsonrpc => '2.0', id => "s$k-$n", method => 'initialize',
                    params => { protocolVersion => '2025-11-25', capabilities => {},
                                clientInfo => { name => 'x', version => '1' } } },
                headers => { Authorization => "Bearer $tok5" }, keepalive => 0);
            my $e = eval { McpTest::decode_json($rr->{body}) } // {};
            $ok++ if $rr->{status} == 503 && ($e->{id} // '') eq "s$k-$n";
            $ra++ if ($rr->{headers}{'retry-after'} // '') eq '1';
            $n++;
            sleep 0.02;
        }
        open my $f, '>>', $out; print $f "$n $ok $ra\n"; close $f;
        POSIX::_exit(0);
    }
    push @kids, $pid;
}
waitpid $_, 0 for @kids;
my ($sent, $s503, $sra) = (0, 0, 0);
for (split /\n/, McpTest::_slurp($out) // '') {
    my @f = split ' ';
    $sent += $f[0]; $s503 += $f[1]; $sra += $f[2];
}
ok($sent > 20, "$sent requests from 4 clients over $span s");
is($s503, $sent, 'all got 503 while the AS is down, a JSON-RPC error with their id');
is($sra, $sent, '... each with Retry-After: 1');
my @attempts = grep { length } split /\n/, McpTest::_slurp($t->prefix . '/logs/token.log') // '';
splice @attempts, 0, $lines0;
my @per_s;
my ($first) = split ' ', $attempts[0] // '0 0';
my $bunched = 0;
for my $i (1 .. $#attempts) {
    my ($a) = split ' ', $attempts[$i - 1];
    my ($b) = split ' ', $attempts[$i];
    $bunched++ if $b - $a < 0.95;
}
ok(@attempts >= 1 && @attempts <= int($span) + 2,
   scalar(@attempts) . " exchange attempts reached the AS location for $sent requests across workers");
is($bunched, 0, 'no two attempts less than a second apart');
diag("AS down: $sent requests, " . scalar(@attempts) . ' attempts: '
     . join(', ', map { (split ' ')[0] - $first } @attempts));

# --- nginx -t -----------------------------------------------------------------------------------

for my $case (
    [ 'mcp_token_exchange /_t;', qr/needs "audience=" or "resource="/ ],
    [ 'mcp_token_exchange _t audience=x;', qr/needs the URI of a location/ ],
    [ 'mcp_token_exchange /_t audience=x bogus=1;', qr/invalid parameter "bogus=1"/ ],
    [ 'mcp_token_exchange /_t audience=x timeout=soon;', qr/invalid "timeout=soon"/ ],
    [ 'mcp_token_exchange /_t audience=;', qr/empty "audience="/ ],
    [ 'mcp_token_exchange /_t audience=x;', qr/needs "mcp_token_exchange_client_id"/, 1 ],
    [ 'mcp_token_exchange /_t audience=x; mcp_token_exchange_client_id g; '
      . 'mcp_token_exchange_client_secret plain;', qr/takes a variable/ ],
    [ 'mcp_token_exchange /_t audience=x; mcp_token_exchange_client_id g; '
      . 'mcp_token_exchange_client_auth private_key_jwt;', qr/private_key_jwt" and "mcp_token_exchange_client_key" go together/ ],
    [ 'mcp_token_exchange /_t audience=x; mcp_token_exchange_client_id g; '
      . "mcp_token_exchange_client_key $gwkey->{pem} audience=https://as;",
      qr/private_key_jwt" and "mcp_token_exchange_client_key" go together/ ],
    [ "mcp_token_exchange_client_key $gwkey->{pem};", qr/needs "audience="/ ],
    [ 'mcp_token_exchange_client_key /nonexistent.pem audience=https://as;', qr/cannot read/ ],
    [ "mcp_token_exchange_client_key $gwkey->{pem}.pub audience=https://as;", qr/no PEM private key/ ],
    [ 'mcp_token_exchange /_t audience=x; mcp_token_exchange_client_id g; '
      . 'mcp_pass_set_header Authorization "Bearer x";',
      qr/"mcp_pass_set_header Authorization" and "mcp_token_exchange" in one location/ ],
) {
    my ($line, $re) = @$case;
    my $c = McpTest->new(server => "location = /x { mcp_pass http://127.0.0.1:1/mcp; $line }");
    my ($rc, $text) = $c->nginx_t;
    ok($rc != 0 && $text =~ $re, "nginx -t refuses: $line") or diag($text);
}

$t->expect_log_error(qr/connect\(\) failed/);
$t->stop;
unlink $as_log;
done_testing;
