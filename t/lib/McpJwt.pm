package McpJwt;

# Keys, JWK sets and JWTs made at test time with the openssl CLI (core
# Perl otherwise).  See the POD at the end.

use strict;
use warnings;
use Carp qw(croak);
use File::Temp qw(tempdir);
use MIME::Base64 qw(encode_base64 decode_base64);
use Digest::SHA qw(hmac_sha256 sha256_hex);
use McpTest;

my $DIR = tempdir('mcp-jwt-XXXXXX', TMPDIR => 1, CLEANUP => 1);
my $SEQ = 0;

sub b64url {
    my $s = encode_base64($_[0], '');
    $s =~ tr{+/}{-_};
    $s =~ s/=+$//;
    return $s;
}

sub _run {
    my (@cmd) = @_;
    my $out = qx{@cmd 2>&1};
    croak "McpJwt: '@cmd' failed: $out" if $?;
    return $out;
}

sub _slurp { local $/; open my $f, '<:raw', $_[0] or croak "$_[0]: $!"; my $d = <$f>; $d }
sub _spew  { open my $f, '>:raw', $_[0] or croak "$_[0]: $!"; print $f $_[1]; close $f }

# McpJwt->new_key(type => 'RSA' | 'RSA3072' | 'P-256' | 'P-384' | 'Ed25519', kid => ..)
sub new_key {
    my ($class, %o) = @_;
    my $type = $o{type} // 'RSA';
    my $kid  = $o{kid} // lc($type) . '-' . ++$SEQ;
    my $pem  = "$DIR/key" . ++$SEQ . '.pem';
    if ($type =~ /^RSA(\d*)$/) {
        my $bits = $1 || 2048;
        _run("openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:$bits -out $pem");
    }
    elsif ($type eq 'P-256' || $type eq 'P-384') {
        my $curve = $type eq 'P-256' ? 'prime256v1' : 'secp384r1';
        _run("openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:$curve -out $pem");
    }
    elsif ($type eq 'Ed25519') {
        _run("openssl genpkey -algorithm ED25519 -out $pem");
    }
    else { croak "McpJwt: unknown key type $type" }
    my $self = bless { type => $type, kid => $kid, pem => $pem }, $class;
    _run("openssl pkey -in $pem -pubout -out $pem.pub");
    $self->{pub_pem} = _slurp("$pem.pub");
    return $self;
}

sub kid { $_[0]{kid} }
sub public_pem { $_[0]{pub_pem} }

# The public key as a JWK (hashref).
sub jwk {
    my ($self, %extra) = @_;
    my $pem = $self->{pem};
    my %jwk;
    if ($self->{type} =~ /^RSA/) {
        my $mod = _run("openssl rsa -in $pem -noout -modulus");
        $mod =~ s/^Modulus=//; $mod =~ s/\s+//g;
        %jwk = (kty => 'RSA', n => b64url(pack('H*', $mod)), e => 'AQAB');
    }
    else {
        my $der = _run("openssl pkey -in $pem -pubout -outform DER");
        if ($self->{type} eq 'Ed25519') {
            %jwk = (kty => 'OKP', crv => 'Ed25519', x => b64url(substr($der, -32)));
        }
        else {
            my $n = $self->{type} eq 'P-256' ? 32 : 48;
            my $pt = substr($der, -(2 * $n + 1));
            %jwk = (kty => 'EC', crv => $self->{type},
                    x => b64url(substr($pt, 1, $n)), y => b64url(substr($pt, 1 + $n, $n)));
        }
    }
    return { %jwk, kid => $self->{kid}, use => 'sig', %extra };
}

# JWKS text of some keys.
sub jwks {
    my (@keys) = @_;
    return McpTest::encode_json({ keys => [ map { ref $_ eq 'HASH' ? $_ : $_->jwk } @keys ] });
}

# DER ECDSA-Sig-Value to JWS r || s
sub _der_to_raw {
    my ($der, $n) = @_;
    my $pos = 2;
    $pos++ if ord(substr($der, 1, 1)) & 0x80;    # long length (P-384)
    my @ints;
    for (1 .. 2) {
        croak 'McpJwt: bad DER' unless ord(substr($der, $pos, 1)) == 2;
        my $len = ord(substr($der, $pos + 1, 1));
        my $int = substr($der, $pos + 2, $len);
        $int =~ s/^\x00+//;
        push @ints, ("\x00" x ($n - length $int)) . $int;
        $pos += 2 + $len;
    }
    return join '', @ints;
}

# Signs $input with the key's algorithm $alg.
sub sign {
    my ($self, $alg, $input) = @_;
    my $in = "$DIR/in" . ++$SEQ;
    _spew($in, $input);
    my $pem = $self->{pem};
    if ($alg =~ /^RS(\d+)$/) {
        return _run("openssl dgst -sha$1 -sign $pem $in");
    }
    if ($alg =~ /^PS(\d+)$/) {
        return _run("openssl dgst -sha$1 -sign $pem -sigopt rsa_padding_mode:pss "
                    . "-sigopt rsa_pss_saltlen:digest $in");
    }
    if ($alg =~ /^ES(\d+)$/) {
        my $der = _run("openssl dgst -sha$1 -sign $pem $in");
        return _der_to_raw($der, $1 == 256 ? 32 : 48);
    }
    if ($alg eq 'EdDSA') {
        return _run("openssl pkeyutl -sign -inkey $pem -rawin -in $in");
    }
    croak "McpJwt: cannot sign $alg";
}

# $key->token(claims => {...}, alg => 'RS256', header => {...extra},
#             sign => 0 (no signature), hmac_secret => $bytes (HS256))
sub token {
    my ($self, %o) = @_;
    my $alg = $o{alg} // $self->default_alg;
    my %h = (alg => $alg, typ => 'JWT', ($self ? (kid => $self->{kid}) : ()),
             %{ $o{header} // {} });
    delete $h{$_} for grep { !defined $h{$_} } keys %h;
    my $input = b64url(McpTest::encode_json(\%h)) . '.' . b64url(McpTest::encode_json($o{claims} // {}));
    return "$input." if exists $o{sign} && !$o{sign};
    return "$input." . b64url(hmac_sha256($input, $o{hmac_secret})) if defined $o{hmac_secret};
    return "$input." . b64url($self->sign($alg, $input));
}

sub default_alg {
    my ($self) = @_;
    return { 'P-256' => 'ES256', 'P-384' => 'ES384', Ed25519 => 'EdDSA' }->{ $self->{type} } // 'RS256';
}

# Claims with sensible defaults.
sub claims {
    my (%o) = @_;
    my $now = time;
    my %c = (iss => 'https://issuer.test', sub => 'alice', iat => $now,
             exp => $now + 900, %o);
    delete $c{$_} for grep { !defined $c{$_} } keys %c;
    return \%c;
}

# A line for mcp_auth_api_keys.
sub api_key_line {
    my ($key, $subject, @rest) = @_;
    return join(' ', sha256_hex($key), $subject, @rest) . "\n";
}

# initialize + notifications/initialized with a bearer token; returns
# ($sid, $http_response of initialize).
sub initialize {
    my ($t, $token, %o) = @_;
    my $auth = defined $token ? { Authorization => "Bearer $token" } : {};
    my $r = $t->mcp_post(undef,
        { jsonrpc => '2.0', id => 'init', method => 'initialize',
          params => { protocolVersion => '2025-11-25', capabilities => {},
                      clientInfo => { name => 'jwt-test', version => '1' } } },
        headers => { %$auth, %{ $o{headers} // {} } }, path => $o{path});
    my $sid = $r->{headers}{'mcp-session-id'};
    return (undef, $r) unless $r->{status} == 200 && defined $sid;
    my $n = $t->mcp_post($sid, { jsonrpc => '2.0', method => 'notifications/initialized' },
                         headers => { %$auth, %{ $o{headers} // {} } }, path => $o{path});
    return (undef, $n) unless $n->{status} == 202;
    return ($sid, $r);
}

# A started instance that is an OAuth protected resource: /mcp (the
# Everything set) takes JWTs of https://issuer.test signed by @$keys
# (conf/jwks.json), and publishes its metadata at
# /.well-known/oauth-protected-resource/mcp; $o{server}: more lines of
# the server{} block.
sub resource_server {
    my ($keys, %o) = @_;
    my $t = McpTest->new(server => <<'NGX' . ($o{server} // ''));
        mcp_auth_resource http://127.0.0.1:%%PORT%%/mcp;
        mcp_auth_jwt_issuer https://issuer.test;
        mcp_auth_jwt_key_file %%PREFIX%%/conf/jwks.json;
        mcp_auth_authorization_servers https://issuer.test;
        mcp_auth_scopes_supported mcp:tools mcp:resources mcp:prompts;

        location = /mcp { mcp on; mcp_builtin everything; mcp_auth_jwt "MCP"; }
        location = /.well-known/oauth-protected-resource/mcp { mcp_auth_metadata; }
NGX
    $t->write_file('conf/jwks.json', jwks(@$keys));
    return $t->start;
}

# Parses a WWW-Authenticate Bearer challenge into a hashref.
sub challenge {
    my ($value) = @_;
    return undef unless defined $value && $value =~ s/^Bearer\s+//i;
    my %p;
    while ($value =~ /\G\s*,?\s*([A-Za-z_]+)="([^"]*)"/gc) { $p{$1} = $2 }
    return \%p;
}

1;

__END__

=head1 NAME

McpJwt - keys, JWK sets and JWTs for the auth tests, made with the openssl CLI

=head1 SYNOPSIS

    my $rsa = McpJwt->new_key(type => 'RSA', kid => 'r1');   # also P-256, P-384, Ed25519
    $t->write_file('conf/jwks.json', McpJwt::jwks($rsa));
    my $tok = $rsa->token(claims => McpJwt::claims(aud => $resource, scope => 'mcp:tools'));
    my ($sid, $r) = McpJwt::initialize($t, $tok);
    my $c = McpJwt::challenge($r->{headers}{'www-authenticate'});

=head1 FUNCTIONS

C<new_key(type, kid)>, C<< $key->jwk(%extra) >>, C<jwks(@keys_or_jwks)>,
C<< $key->token(claims, alg, header, sign => 0, hmac_secret) >> (RS*, PS*,
ES256, ES384, EdDSA; DER ECDSA signatures become JWS r || s),
C<claims(%override)> (iss https://issuer.test, sub alice, exp now+900;
undef removes), C<api_key_line($key, $subject, @rest)> (SHA-256 hex),
C<initialize($t, $token, headers, path)>,
C<resource_server([@keys], server => $more_lines)> (a started instance), C<challenge($www_authenticate)>,
C<b64url($bytes)>.

=cut
