# DPoP (RFC 9449) at the resource server: mcp_auth_dpop off | allowed |
# required.  Proofs, keys and DPoP-bound access tokens are made by jose
# (t/js/dpop_proofs.mjs), an implementation other than the module's, so
# the RFC 7638 thumbprints on both sides are computed independently; the
# access tokens are signed by the key the module trusts (McpJwt).

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use McpTest;
use McpAssert;
use McpJwt;
use McpGateway;

if (my $why = McpGateway::node_available('jose')) {
    plan skip_all => $why;
}

my $issuer = McpJwt->new_key(type => 'RSA', kid => 'rsa-1');

my $t = McpJwt::resource_server([$issuer], server => <<'NGX');
        mcp_auth_dpop allowed;
        add_header X-Worker $pid always;

        location = /mcp-required {
            mcp on; mcp_builtin everything; mcp_auth_jwt "MCP";
            mcp_auth_resource http://127.0.0.1:%%PORT%%/mcp-required;
            mcp_auth_dpop required;
            mcp_auth_dpop_algs ES256 EdDSA;
        }
        location = /.well-known/oauth-protected-resource/mcp-required {
            mcp_auth_metadata;
            mcp_auth_resource http://127.0.0.1:%%PORT%%/mcp-required;
            mcp_auth_dpop required;
            mcp_auth_dpop_algs ES256 EdDSA;
        }
        location = /mcp-nonce {
            mcp on; mcp_builtin everything; mcp_auth_jwt "MCP";
            mcp_auth_dpop_nonce on;
        }
        location = /mcp-proxy {
            mcp_auth_jwt "MCP";
            proxy_pass http://127.0.0.1:%%PORT%%/seen;
        }
        location = /seen { return 200 "auth=[$http_authorization] dpop=[$http_dpop]"; }
        location = /mcp-off {
            mcp on; mcp_builtin everything; mcp_auth_jwt "MCP";
            mcp_auth_resource http://127.0.0.1:%%PORT%%/mcp-off;
            mcp_auth_dpop off;
        }
        location = /.well-known/oauth-protected-resource/mcp-off {
            mcp_auth_metadata;
            mcp_auth_resource http://127.0.0.1:%%PORT%%/mcp-off;
            mcp_auth_dpop off;
        }
NGX

my $port = $t->port;
my $base = "http://127.0.0.1:$port";
my $scope = 'mcp:tools mcp:resources mcp:prompts';
my $default_algs = 'ES256 ES384 EdDSA RS256 RS384 RS512 PS256 PS384 PS512';

sub claims { McpJwt::claims(aud => "$base/$_[0]", scope => $scope) }

# --- the proofs and tokens, made in one run of node ---------------------------

my @jobs = (
    { op => 'key', name => 'k1', alg => 'ES256' },
    { op => 'key', name => 'k2', alg => 'ES256' },
    { op => 'key', name => 'krsa', alg => 'PS256' },
    { op => 'key', name => 'ked', alg => 'EdDSA' },
    { op => 'token', name => 'tok1', claims => claims('mcp'), key => 'k1' },
    { op => 'token', name => 'tokrsa', claims => claims('mcp'), key => 'krsa' },
    { op => 'token', name => 'toked', claims => claims('mcp'), key => 'ked' },
    { op => 'token', name => 'tokplain', claims => claims('mcp') },
    { op => 'token', name => 'tokreq', claims => claims('mcp-required'), key => 'k1' },
    { op => 'token', name => 'tokoff', claims => claims('mcp-off'), key => 'k1' },
);

my %proof = (
    init       => { key => 'k1', token => 'tok1' },
    notif      => { key => 'k1', token => 'tok1' },
    call       => { key => 'k1', token => 'tok1' },
    rsa        => { key => 'krsa', token => 'tokrsa' },
    ed         => { key => 'ked', token => 'toked' },
    htu_case   => { key => 'k1', token => 'tok1', htu => "HTTP://127.0.0.1:$port/mcp?q=1#frag" },
    htu_enc    => { key => 'k1', token => 'tok1', htu => "http://127.0.0.1:$port/%6dcp" },
    bad_htm    => { key => 'k1', token => 'tok1', htm => 'GET' },
    bad_path   => { key => 'k1', token => 'tok1', htu => "$base/other" },
    bad_port   => { key => 'k1', token => 'tok1', htu => 'http://127.0.0.1:' . ($port + 1) . '/mcp' },
    bad_host   => { key => 'k1', token => 'tok1', htu => "http://localhost:$port/mcp" },
    bad_scheme => { key => 'k1', token => 'tok1', htu => "https://127.0.0.1:$port/mcp" },
    old_iat    => { key => 'k1', token => 'tok1', iat => -400 },
    new_iat    => { key => 'k1', token => 'tok1', iat => 400 },
    bad_ath    => { key => 'k1', token => 'tok1', ath => 'A' x 43 },
    no_ath     => { key => 'k1', token => 'tok1', omit => ['ath'] },
    no_jti     => { key => 'k1', token => 'tok1', omit => ['jti'] },
    wrong_key  => { key => 'k2', token => 'tok1' },
    none       => { key => 'k1', token => 'tok1', alg => 'none' },
    hs256      => { key => 'k1', token => 'tok1', alg => 'HS256', hmac => 'a secret of 32 bytes, or more...' },
    private    => { key => 'k1', token => 'tok1', private_jwk => 1 },
    bad_typ    => { key => 'k1', token => 'tok1', typ => 'JWT' },
    plain      => { key => 'k1', token => 'tokplain' },
    two_a      => { key => 'k1', token => 'tok1' },
    two_b      => { key => 'k1', token => 'tok1' },
    req_init   => { key => 'k1', token => 'tokreq', htu => "$base/mcp-required" },
    req_rsa    => { key => 'krsa', token => 'tokreq', htu => "$base/mcp-required" },
    off        => { key => 'k1', token => 'tokoff', htu => "$base/mcp-off" },
    proxied    => { key => 'k1', token => 'tok1', htu => "$base/mcp-proxy" },
    no_nonce   => { key => 'k1', token => 'tok1', htu => "$base/mcp-nonce" },
);

for my $name (sort keys %proof) {
    push @jobs, { op => 'proof', name => $name, htu => "$base/mcp", %{ $proof{$name} } };
}

# one run of t/js/dpop_proofs.mjs: name -> token, proof, jwk or thumbprint
sub make {
    my (@jobs) = @_;
    my $spec = $t->write_file('dpop_spec.json', McpTest::encode_json(
        { issuer => { pem => McpJwt::_slurp($issuer->{pem}), kid => $issuer->kid }, jobs => \@jobs }));
    my ($rc, $out) = McpGateway::run_node_script('dpop_proofs.mjs', [$spec], timeout => 60);
    my ($line) = grep { /^\{/ } split /\n/, $out // '';
    my $made = $rc == 0 ? eval { McpTest::decode_json($line // '') } : undef;
    ok(ref $made eq 'HASH', 'jose made the proofs and tokens') or BAIL_OUT("dpop_proofs.mjs: $out");
    return $made;
}

my $made = make(@jobs);

# --- helpers ------------------------------------------------------------------

sub init_msg {
    return { jsonrpc => '2.0', id => 'init', method => 'initialize',
             params => { protocolVersion => '2025-11-25', capabilities => {},
                         clientInfo => { name => 'dpop-test', version => '1' } } };
}

# POST with Authorization: $scheme $token and DPoP: $proof (either undef: none)
sub post {
    my (%o) = @_;
    my %h;
    $h{Authorization} = ($o{scheme} // 'DPoP') . " $made->{$o{token}}" if $o{token};
    $h{DPoP} = ref $o{proof} ? [ map { $made->{$_} } @{ $o{proof} } ] : $made->{$o{proof}}
        if $o{proof};
    return $t->mcp_post($o{sid}, $o{msg} // init_msg(), headers => \%h,
                        path => $o{path} // '/mcp');
}

sub challenges {
    my ($r) = @_;
    my %c;
    for my $h (@{ $r->{header_list} }) {
        next unless lc $h->[0] eq 'www-authenticate';
        my ($scheme, $rest) = $h->[1] =~ /^(\S+)\s+(.*)$/ or next;
        my %p;
        while ($rest =~ /\G\s*,?\s*([A-Za-z_]+)="([^"]*)"/gc) { $p{$1} = $2 }
        $c{$scheme} = \%p;
    }
    return \%c;
}

# A 401 with a JSON-RPC error body, the DPoP challenge with $error (and
# the Bearer challenge without one, when $bearer).
sub refused {
    my ($r, $error, $name, %o) = @_;
    is_rpc_error_body($r, 401, -32600, undef, "$name: 401 with a JSON-RPC error body");
    my $c = challenges($r);
    ok($c->{DPoP}, "$name: a DPoP challenge") or return;
    is($c->{DPoP}{error}, $error, "$name: DPoP error=" . ($error // 'none'));
    is($c->{DPoP}{algs}, $o{algs} // $default_algs, "$name: algs=");
    is($c->{DPoP}{resource_metadata},
       "$base/.well-known/oauth-protected-resource" . ($o{path} // '/mcp'),
       "$name: the challenge points to the metadata");
    if ($o{bearer}) {
        ok($c->{Bearer}, "$name: and the Bearer challenge");
        is($c->{Bearer}{error}, $o{bearer_error}, "$name: Bearer error=" . ($o{bearer_error} // 'none'));
    }
    elsif (exists $o{bearer}) {
        ok(!$c->{Bearer}, "$name: no Bearer challenge");
    }
    like($r->{body}, $o{like}, "$name: the reason in the message") if $o{like};
    return $c;
}

# --- a valid proof passes: initialize, notifications/initialized, tools/call --

my $first_worker;
{
    my $r = post(token => 'tok1', proof => 'init');
    is($r->{status}, 200, 'DPoP: initialize passes');
    my $sid = $r->{headers}{'mcp-session-id'};
    ok($sid, 'DPoP: a session');
    $first_worker = $r->{headers}{'x-worker'};

    $r = post(token => 'tok1', proof => 'notif', sid => $sid,
              msg => { jsonrpc => '2.0', method => 'notifications/initialized' });
    is($r->{status}, 202, 'DPoP: notifications/initialized passes');

    $r = post(token => 'tok1', proof => 'call', sid => $sid,
              msg => { jsonrpc => '2.0', id => 2, method => 'tools/call',
                       params => { name => 'test_simple_text' } });
    is($r->{status}, 200, 'DPoP: tools/call passes');
    like($r->{body}, qr/This is a simple text response for testing/, 'DPoP: tools/call answered');
}

for my $case ([rsa => 'an RSA (PS256) key'], [ed => 'an Ed25519 key'],
              [htu_case => 'htu with upper-case scheme, a query and a fragment'],
              [htu_enc => 'htu with an unreserved byte percent-encoded']) {
    my ($name, $what) = @$case;
    my $tok = { rsa => 'tokrsa', ed => 'toked' }->{$name} // 'tok1';
    my $r = post(token => $tok, proof => $name);
    is($r->{status}, 200, "DPoP: $what passes (RFC 7638 thumbprint as jose's)");
}

# --- each wrong proof: 401 invalid_dpop_proof ---------------------------------

for my $case (
    [bad_htm    => 'wrong htm',           qr/htm/],
    [bad_path   => 'wrong htu (path)',    qr/htu/],
    [bad_port   => 'wrong htu (port)',    qr/htu/],
    [bad_host   => 'wrong htu (host)',    qr/htu/],
    [bad_scheme => 'wrong htu (scheme)',  qr/htu/],
    [old_iat    => 'iat before the window', qr/iat/],
    [new_iat    => 'iat after the window',  qr/iat/],
    [bad_ath    => 'wrong ath',           qr/ath/],
    [no_ath     => 'no ath',              qr/ath/],
    [no_jti     => 'no jti',              qr/jti/],
    [wrong_key  => 'a key not the cnf.jkt', qr/cnf\.jkt/],
    [none       => 'alg none',            qr/alg/],
    [hs256      => 'alg HS256',           qr/alg/],
    [private    => 'a private key in jwk', qr/private/],
    [bad_typ    => 'typ not dpop+jwt',    qr/typ/],
    [init       => 'a replayed jti',      qr/used before/],
) {
    my ($name, $what, $like) = @$case;
    my $r = post(token => 'tok1', proof => $name);
    refused($r, 'invalid_dpop_proof', "DPoP $what", like => $like, bearer => 1);
}

# the replay, on fresh connections, reaches other workers: each refuses it
{
    my (%workers, $all);
    $all = 1;
    for my $i (1 .. 40) {
        my $r = post(token => 'tok1', proof => 'call');
        $all = 0 unless $r->{status} == 401 && ($r->{headers}{'www-authenticate'} // '') ne '';
        $workers{ $r->{headers}{'x-worker'} // '' } = 1;
        last if keys %workers >= 3;
    }
    ok($all, 'a replayed proof is refused by every worker it reaches');
    ok(keys %workers >= 2, 'the replay reached ' . scalar(keys %workers) . ' workers')
        or diag('workers: ' . join(' ', keys %workers));
}

{
    my $r = post(token => 'tok1', proof => [qw(two_a two_b)]);
    refused($r, 'invalid_dpop_proof', 'two DPoP headers', like => qr/more than one/, bearer => 1);

    $r = post(token => 'tok1');
    refused($r, 'invalid_dpop_proof', 'the DPoP scheme without a proof', like => qr/no DPoP proof/,
            bearer => 1);

    $r = post(proof => 'two_a');
    refused($r, undef, 'a proof without a token', bearer => 1);

    $r = post(token => 'tokplain', proof => 'plain');
    refused($r, 'invalid_token', 'the DPoP scheme with a token not bound', like => qr/not DPoP-bound/,
            bearer => 1);
}

# the token and its proof stop here: a proxy_pass upstream sees neither
{
    my $r = post(token => 'tok1', proof => 'proxied', path => '/mcp-proxy');
    is($r->{status}, 200, 'DPoP through proxy_pass: passes');
    is($r->{body}, 'auth=[] dpop=[]', 'DPoP through proxy_pass: the upstream sees no token, no proof');
}

# --- server nonces: use_dpop_nonce and a DPoP-Nonce, then a proof with it --

{
    my $r = post(token => 'tok1', proof => 'no_nonce', path => '/mcp-nonce');
    refused($r, 'use_dpop_nonce', 'mcp_auth_dpop_nonce: a proof without a nonce',
            path => '/mcp', bearer => 1, like => qr/nonce/);
    my $nonce = $r->{headers}{'dpop-nonce'};
    like($nonce // '', qr/^[A-Za-z0-9_-]{32}$/, 'mcp_auth_dpop_nonce: a DPoP-Nonce to use');

    my $m = make({ op => 'key', name => 'k3', alg => 'ES256' },
                 { op => 'token', name => 'tok3', claims => claims('mcp'), key => 'k3' },
                 map { { op => 'proof', name => $_->[0], key => 'k3', token => 'tok3',
                         htu => "$base/mcp-nonce", nonce => $_->[1] } }
                     [with_nonce => $nonce], [forged => 'A' x 32],
                     [tampered => substr($nonce, 0, 20) . ($nonce =~ /^.{20}A/ ? 'B' : 'A')
                                  . substr($nonce, 21)]);
    $made->{$_} = $m->{$_} for keys %$m;

    $r = post(token => 'tok3', proof => 'with_nonce', path => '/mcp-nonce');
    is($r->{status}, 200, 'mcp_auth_dpop_nonce: a proof with the nonce passes');

    $r = post(token => 'tok3', proof => 'with_nonce', path => '/mcp-nonce');
    refused($r, 'invalid_dpop_proof', 'mcp_auth_dpop_nonce: that proof again',
            bearer => 1, like => qr/used before/);

    for my $bad (qw(forged tampered)) {
        $r = post(token => 'tok3', proof => $bad, path => '/mcp-nonce');
        refused($r, 'use_dpop_nonce', "mcp_auth_dpop_nonce: a $bad nonce", bearer => 1);
        ok($r->{headers}{'dpop-nonce'}, "mcp_auth_dpop_nonce: a $bad nonce: a DPoP-Nonce to use");
    }

    $r = post(token => 'tok1', proof => 'init');
    ok(!defined $r->{headers}{'dpop-nonce'}, 'no DPoP-Nonce where mcp_auth_dpop_nonce is off');
}

# --- allowed: bearer tokens still pass, a bound one presented as Bearer not ---

{
    my $r = post(scheme => 'Bearer', token => 'tokplain');
    is($r->{status}, 200, 'allowed: a plain bearer token passes');

    $r = post(scheme => 'Bearer', token => 'tok1');
    is_rpc_error_body($r, 401, -32600, undef, 'allowed: a DPoP-bound token as Bearer: 401');
    my $c = challenges($r);
    is($c->{Bearer}{error}, 'invalid_token', '... Bearer error=invalid_token');
    ok($c->{DPoP} && !defined $c->{DPoP}{error}, '... and a DPoP challenge without an error');
}

# --- required -----------------------------------------------------------------

{
    my $r = post(token => 'tokreq', proof => 'req_init', path => '/mcp-required');
    is($r->{status}, 200, 'required: a DPoP presentation passes');

    $r = post(scheme => 'Bearer', token => 'tokreq', path => '/mcp-required');
    refused($r, 'invalid_token', 'required: a DPoP-bound token as Bearer', path => '/mcp-required',
            algs => 'ES256 EdDSA', bearer => 0, like => qr/required/);

    $r = $t->mcp_post(undef, init_msg(), path => '/mcp-required');
    refused($r, undef, 'required: no token', path => '/mcp-required', algs => 'ES256 EdDSA',
            bearer => 0);

    $r = post(token => 'tokreq', proof => 'req_rsa', path => '/mcp-required');
    refused($r, 'invalid_dpop_proof', 'required: an alg not in mcp_auth_dpop_algs',
            path => '/mcp-required', algs => 'ES256 EdDSA', bearer => 0, like => qr/alg/);
}

# --- off: as before ----------------------------------------------------------

{
    my $r = post(token => 'tokoff', proof => 'off', path => '/mcp-off');
    is($r->{status}, 401, 'off: the DPoP scheme is not taken');
    my $c = challenges($r);
    ok($c->{Bearer} && !$c->{DPoP}, 'off: a Bearer challenge alone');

    $r = post(scheme => 'Bearer', token => 'tokoff', path => '/mcp-off');
    is($r->{status}, 200, 'off: a bound token as Bearer passes (no DPoP here)');
}

# --- metadata -------------------------------------------------------------------

for my $m (['/mcp', JSON::PP::false(), [split / /, $default_algs]],
           ['/mcp-required', JSON::PP::true(), [qw(ES256 EdDSA)]]) {
    my ($path, $required, $algs) = @$m;
    my $r = $t->request(path => "/.well-known/oauth-protected-resource$path");
    my $doc = eval { McpTest::decode_json($r->{body}) } // {};
    ok(exists $doc->{dpop_bound_access_tokens_required}
       && !!$doc->{dpop_bound_access_tokens_required} == !!$required,
       "metadata $path: dpop_bound_access_tokens_required " . ($required ? 'true' : 'false'));
    is_deeply($doc->{dpop_signing_alg_values_supported}, $algs,
              "metadata $path: dpop_signing_alg_values_supported");
}
{
    my $r = $t->request(path => '/.well-known/oauth-protected-resource/mcp-off');
    my $doc = eval { McpTest::decode_json($r->{body}) } // {};
    ok(!exists $doc->{dpop_bound_access_tokens_required}
       && !exists $doc->{dpop_signing_alg_values_supported}, 'metadata, off: no DPoP fields');
}

# --- the log: reasons at [info], never a token or a proof ----------------------

{
    my $log = $t->error_log;
    like($log, qr/\[info\].*mcp auth: refused: the proof's htm is not the request's method/,
         'the reason of a refusal at [info]');
    my $leak = grep { index($log, $made->{$_}) >= 0 } qw(tok1 init bad_htm tokreq);
    is($leak, 0, 'no token or proof in error.log');
}

# --- nginx -t ----------------------------------------------------------------------

for my $bad (['mcp_auth_dpop_algs ES256 HS256;', qr/invalid DPoP algorithm "HS256"/],
             ['mcp_auth_dpop_algs none;', qr/invalid DPoP algorithm "none"/],
             ['mcp_auth_dpop sometimes;', qr/invalid value "sometimes"/],
             ['mcp_auth_dpop_window soon;', qr/invalid value|is invalid/]) {
    my $u = McpTest->new(server => "        $bad->[0]\n        location /mcp { mcp on; }\n");
    my ($code, $msg) = $u->nginx_t;
    ok($code != 0 && $msg =~ $bad->[1], "nginx -t refuses '$bad->[0]'") or diag($msg);
}

done_testing;
