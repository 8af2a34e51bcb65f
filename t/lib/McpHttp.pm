package McpHttp;

# Part of the test harness; t/lib/McpTest.pm, the facade the tests use,
# has every function and method below under its own name.
#
# The HTTP/1.1 client: connections tracked by their instance, one
# request and its response (Content-Length, chunked, or up to the
# close), and the decoders of a body (McpTest::Body, McpTest::Chunked).
# Core Perl only.

use strict;
use warnings;

use Carp qw(croak);
use Exporter 'import';
use IO::Select;
use IO::Socket::INET;
use Scalar::Util qw(weaken);
use Test::More ();

use McpUtil qw(_now);

# a croak here names the test's line, as when all this was McpTest.pm
our @CARP_NOT = ('McpTest');
our @EXPORT_OK = qw(connect _connect _close_sockets request http_request
                    _build_request _write_all _read_some _read_head
                    _parse_head explain_response diag_response status_is
                    decode_chunked);
our %EXPORT_TAGS = (all => \@EXPORT_OK);

###########################################################################
# HTTP/1.1 client
###########################################################################

# Open a (non-blocking) TCP connection to the instance, tracked so stop()
# can close it.  Options: port (number, default port(1)), timeout.
sub connect {
    my ($self, %o) = @_;
    my $s = _connect($o{host} // '127.0.0.1', $o{port} // $self->port, $o{timeout} // 5)
        or return;
    push @{ $self->{socks} }, $s;
    weaken $self->{socks}[-1];
    return $s;
}

sub _connect {
    my ($host, $port, $timeout) = @_;
    my $s = IO::Socket::INET->new(
        PeerAddr => $host, PeerPort => $port, Proto => 'tcp', Timeout => $timeout,
    ) or return;
    $s->blocking(0);
    return $s;
}

sub _close_sockets {
    my ($self) = @_;
    for my $s (grep { defined } @{ $self->{socks} }) {
        close $s if $s->opened;
    }
    $self->{socks} = [];
}

# Instance wrapper around http_request(): defaults to this nginx's port and
# tracks the socket.
sub request {
    my ($self, %o) = @_;
    $o{port} //= $self->port;
    if (!$o{conn}) {
        $o{conn} = $self->connect(port => $o{port}, host => $o{host},
                                  timeout => $o{timeout} // 5);
        $o{_connect_error} = "connect to port $o{port} failed: $!" unless $o{conn};
        $o{keepalive} //= 0;
    }
    return http_request(%o);
}

# Plain function (no nginx instance needed).
#   http_request(method, path, headers => {..}|[..], body, keepalive, conn,
#                timeout, host, port, raw => $bytes, quiet)
# Returns { status, reason, version, headers, header_list, body, raw,
#           request, conn, error, elapsed, trailers, chunked }
# status is 0 on transport errors (then `error` says why).
sub http_request {
    my (%o) = @_;
    my $t0       = _now();
    my $timeout  = $o{timeout} // 5;
    my $deadline = $t0 + $timeout;
    my $method   = uc($o{method} // 'GET');
    my $sock     = $o{conn};
    my $keep     = $o{keepalive} // (defined $o{conn} ? 1 : 0);
    $o{host} //= '127.0.0.1';

    my $req = defined $o{raw} ? $o{raw} : _build_request(%o, method => $method, keepalive => $keep);
    my $r = { status => 0, headers => {}, header_list => [], body => '', raw => '',
              request => $req };
    my $fail = sub {
        $r->{error}   = shift;
        $r->{elapsed} = _now() - $t0;
        close $sock if $sock && $sock->opened;
        delete $r->{conn};
        Test::More::diag("McpTest: HTTP request failed: $r->{error}\n" . explain_response($r))
            unless $o{quiet};
        return $r;
    };

    return $fail->($o{_connect_error} // 'no connection') if $o{_connect_error};
    $sock //= _connect($o{host}, $o{port} // croak('http_request: port required'), $timeout)
        or return $fail->("connect to $o{host}:$o{port} failed: $!");
    $sock->blocking(0);

    my $werr = _write_all($sock, $req, $deadline);
    # On a write error (server closed early) a response may still be readable.
    $r->{write_error} = $werr if $werr;

    my $err = _read_head($sock, $r, $deadline, $method);
    return $fail->($werr ? "$werr; then $err" : $err) if $err;

    my $dec = McpTest::Body->for_response($r, $method);
    my $buf = delete ${*$sock}{mcptest_buf} // '';
    while (1) {
        if (length $buf) {
            my $chunk = $buf;
            $buf = '';
            $r->{raw}  .= $chunk;
            $r->{body} .= $dec->feed($chunk);
            return $fail->("bad body framing: $dec->{error}") if $dec->{error};
        }
        last if $dec->done;
        my ($data, $rerr) = _read_some($sock, $deadline);
        if (!defined $data) {
            if ($rerr ne 'timeout' && $dec->{kind} eq 'close') { $dec->eof; last }
            return $fail->($rerr eq 'timeout'
                ? "timeout after ${timeout}s reading body" : "$rerr while reading body");
        }
        $buf = $data;
    }
    # Bytes after the end of this message belong to the next response.
    my $rest = $dec->rest;
    $r->{raw} = substr($r->{raw}, 0, length($r->{raw}) - length $rest) if length $rest;
    $r->{trailers} = $dec->{chunked}{trailers} if $dec->{chunked};
    $r->{chunked}  = $dec->{kind} eq 'chunked' ? 1 : 0;
    $r->{elapsed}  = _now() - $t0;

    my $conn_hdr = lc($r->{headers}{connection} // '');
    if ($keep && $dec->{kind} ne 'close' && $conn_hdr !~ /\bclose\b/
        && ($r->{version} // '') eq '1.1') {
        ${*$sock}{mcptest_buf} = $rest if length $rest;
        $r->{conn} = $sock;
    }
    else {
        close $sock;
    }
    return $r;
}

sub _build_request {
    my (%o) = @_;
    my @pairs = ref $o{headers} eq 'ARRAY' ? @{ $o{headers} }
              : map { ($_ => $o{headers}{$_}) } sort keys %{ $o{headers} // {} };
    my %have;
    for (my $i = 0; $i < @pairs; $i += 2) { $have{ lc $pairs[$i] } = 1 }

    my @lines = ("$o{method} " . ($o{path} // '/') . " HTTP/1.1");
    push @lines, "Host: $o{host}:$o{port}" unless $have{host};
    for (my $i = 0; $i < @pairs; $i += 2) {
        my ($k, $v) = @pairs[$i, $i + 1];
        next unless defined $v;                          # undef = omit header
        push @lines, map { "$k: $_" } (ref $v eq 'ARRAY' ? @$v : $v);
    }
    my $body = $o{body};
    if (defined $body) {
        utf8::encode($body) if utf8::is_utf8($body);
        push @lines, 'Content-Length: ' . length($body)
            unless $have{'content-length'} || $have{'transfer-encoding'};
    }
    push @lines, 'Connection: close' unless $o{keepalive} || $have{connection};
    return join("\r\n", @lines) . "\r\n\r\n" . ($body // '');
}

# Returns undef on success, an error string otherwise.
sub _write_all {
    my ($sock, $data, $deadline) = @_;
    my $off = 0;
    my $sel = IO::Select->new($sock);
    while ($off < length $data) {
        my $left = $deadline - _now();
        return 'timeout writing request' if $left <= 0;
        next unless $sel->can_write($left);
        my $n = syswrite($sock, $data, length($data) - $off, $off);
        if (!defined $n) {
            next if $!{EAGAIN} || $!{EWOULDBLOCK} || $!{EINTR};
            return "write error: $!";
        }
        $off += $n;
    }
    return undef;
}

# Read some bytes: returns ($data) or (undef, 'timeout' | 'eof' | 'error: ..').
sub _read_some {
    my ($sock, $deadline) = @_;
    my $sel = IO::Select->new($sock);
    while (1) {
        my $left = $deadline - _now();
        return (undef, 'timeout') if $left <= 0;
        next unless $sel->can_read($left);
        my $n = sysread($sock, my $data, 65536);
        if (!defined $n) {
            next if $!{EAGAIN} || $!{EWOULDBLOCK} || $!{EINTR};
            return (undef, "read error: $!");
        }
        return (undef, 'eof') if $n == 0;
        return ($data);
    }
}

# Read and parse the status line and headers into $r; leftover bytes are
# stashed in the socket's buffer.  Interim 1xx responses (except 101) are
# skipped.  Returns an error string or undef.
sub _read_head {
    my ($sock, $r, $deadline, $method) = @_;
    my $buf = delete ${*$sock}{mcptest_buf} // '';
    while (1) {
        my $end = index($buf, "\r\n\r\n");
        my $sep = 4;
        if ($end < 0 && (my $lf = index($buf, "\n\n")) >= 0) { ($end, $sep) = ($lf, 2) }
        if ($end >= 0) {
            my $head = substr($buf, 0, $end);
            $r->{raw} .= substr($buf, 0, $end + $sep);
            $buf = substr($buf, $end + $sep);
            my $err = _parse_head($r, $head);
            return $err if $err;
            if ($r->{status} >= 100 && $r->{status} < 200 && $r->{status} != 101) {
                $r->{headers} = {};
                $r->{header_list} = [];
                next;
            }
            ${*$sock}{mcptest_buf} = $buf if length $buf;
            return undef;
        }
        my ($data, $err) = _read_some($sock, $deadline);
        if (!defined $data) {
            $r->{raw} .= $buf;
            return $err eq 'timeout' ? 'timeout waiting for response headers'
                 : length($buf) ? "$err in the middle of response headers"
                 : "$err before any response (connection closed by server?)";
        }
        $buf .= $data;
    }
}

sub _parse_head {
    my ($r, $head) = @_;
    my @lines = split /\r?\n/, $head;
    my $sl = shift @lines // '';
    $sl =~ m{^HTTP/(\d\.\d) (\d{3})(?: (.*))?$}
        or return "malformed status line: '$sl'";
    @$r{qw(version status reason)} = ($1, $2 + 0, $3 // '');
    for my $l (@lines) {
        my ($k, $v) = $l =~ /^([^:\s]+):[ \t]*(.*?)[ \t]*$/
            or return "malformed header line: '$l'";
        push @{ $r->{header_list} }, [ $k, $v ];
        my $lk = lc $k;
        $r->{headers}{$lk} = exists $r->{headers}{$lk} ? "$r->{headers}{$lk}, $v" : $v;
    }
    return undef;
}

# Human-readable dump of a request/response pair for diagnostics.
sub explain_response {
    my ($r) = @_;
    my $clip = sub {
        my ($s, $max) = @_;
        $s //= '';
        $s = substr($s, 0, $max) . "\n... (" . (length($s) - $max) . " more bytes)"
            if length $s > $max;
        $s =~ s/([^\x09\x0a\x20-\x7e])/sprintf('\\x%02x', ord $1)/ge;
        $s =~ s/\\x0d\n/\\r\n/g;
        return $s;
    };
    my $out = "---- request ----\n" . $clip->($r->{request}, 4000) . "\n";
    $out .= "---- response";
    $out .= " (error: $r->{error})" if $r->{error};
    $out .= sprintf(" (%.3fs)", $r->{elapsed}) if defined $r->{elapsed};
    $out .= " ----\n" . $clip->($r->{raw}, 4000) . "\n";
    return $out;
}

sub diag_response { shift; Test::More::diag(explain_response($_[0])) }

# is($r->{status}, $code) with the full exchange in the diagnostics.
sub status_is {
    my ($self, $r, $code, $name) = @_;
    local $Test::Builder::Level = $Test::Builder::Level + 1;
    my $ok = Test::More::is($r->{status}, $code, $name // "HTTP status $code");
    Test::More::diag(explain_response($r)) unless $ok;
    return $ok;
}

# decode_chunked($bytes) -> ($body, $complete, $rest_after_message, \%trailers)
# Dies on malformed framing.  In scalar context returns $body.
sub decode_chunked {
    my ($bytes) = @_;
    my $c = McpTest::Chunked->new;
    my $body = $c->feed($bytes);
    croak "decode_chunked: $c->{error}" if $c->{error};
    return wantarray ? ($body, $c->{done}, $c->rest, $c->{trailers}) : $body;
}

###########################################################################
package McpTest::Body;
# Incremental response-body decoder: kind is none | length | chunked | close.

use strict;
use warnings;

sub for_response {
    my ($class, $r, $method) = @_;
    my $s = $r->{status};
    my $h = $r->{headers};
    my $self = bless { kind => 'none', rest => '', done => 0 }, $class;
    return $self->_finish
        if $method eq 'HEAD' || $s == 204 || $s == 304 || ($s >= 100 && $s < 200);
    if (($h->{'transfer-encoding'} // '') =~ /\bchunked\s*$/i) {
        $self->{kind}    = 'chunked';
        $self->{chunked} = McpTest::Chunked->new;
    }
    elsif (defined $h->{'content-length'}) {
        if ($h->{'content-length'} !~ /^\d+$/) {
            $self->{error} = "invalid Content-Length '$h->{'content-length'}'";
            return $self;
        }
        $self->{kind} = 'length';
        $self->{left} = $h->{'content-length'} + 0;
        $self->_finish if $self->{left} == 0;
    }
    else {
        $self->{kind} = 'close';
    }
    return $self;
}

sub _finish { $_[0]{done} = 1; $_[0] }

sub feed {
    my ($self, $data) = @_;
    if ($self->{done}) { $self->{rest} .= $data; return '' }
    if ($self->{kind} eq 'chunked') {
        my $out = $self->{chunked}->feed($data);
        $self->{error} = $self->{chunked}{error};
        if ($self->{chunked}{done}) { $self->{done} = 1; $self->{rest} = $self->{chunked}->rest }
        return $out;
    }
    if ($self->{kind} eq 'length') {
        my $out = substr($data, 0, $self->{left});
        $self->{rest} .= substr($data, length $out);
        $self->{left} -= length $out;
        $self->{done} = 1 if $self->{left} == 0;
        return $out;
    }
    return $data;    # close-delimited
}

sub eof  { $_[0]{done} = 1 if $_[0]{kind} eq 'close'; $_[0]{done} }
sub done { $_[0]{done} }
sub rest { $_[0]{rest} }

###########################################################################
package McpTest::Chunked;
# Incremental decoder for HTTP/1.1 chunked transfer coding (strict CRLF).

use strict;
use warnings;

sub new {
    bless { state => 'size', buf => '', left => 0, done => 0, error => undef,
            trailers => {}, sizes => [] }, shift;
}

# Feed raw bytes, return newly decoded payload bytes.
sub feed {
    my ($self, $data) = @_;
    $self->{buf} .= $data;
    my $out = '';
    while (!$self->{done} && !$self->{error}) {
        my $st = $self->{state};
        if ($st eq 'size' || $st eq 'trailer') {
            my $i = index($self->{buf}, "\r\n");
            if ($i < 0) {
                $self->{error} = 'chunk header line too long' if length $self->{buf} > 8192;
                last;
            }
            my $line = substr($self->{buf}, 0, $i);
            substr($self->{buf}, 0, $i + 2, '');
            if ($st eq 'size') {
                if ($line !~ /^([0-9A-Fa-f]{1,15})[ \t]*(?:;.*)?$/) {
                    $self->{error} = "bad chunk-size line '$line'";
                    last;
                }
                my $size = hex $1;
                push @{ $self->{sizes} }, $size;
                if ($size == 0) { $self->{state} = 'trailer' }
                else            { $self->{left} = $size; $self->{state} = 'data' }
            }
            elsif ($line eq '') {
                $self->{done} = 1;
            }
            elsif ($line =~ /^([^:\s]+):[ \t]*(.*?)[ \t]*$/) {
                $self->{trailers}{ lc $1 } = $2;
            }
            else {
                $self->{error} = "bad trailer line '$line'";
            }
        }
        elsif ($st eq 'data') {
            last unless length $self->{buf};
            my $take = substr($self->{buf}, 0, $self->{left}, '');
            $out .= $take;
            $self->{left} -= length $take;
            $self->{state} = 'crlf' if $self->{left} == 0;
        }
        else {    # 'crlf' after chunk data
            last if length $self->{buf} < 2;
            if (substr($self->{buf}, 0, 2) ne "\r\n") {
                $self->{error} = 'missing CRLF after chunk data';
                last;
            }
            substr($self->{buf}, 0, 2, '');
            $self->{state} = 'size';
        }
    }
    return $out;
}

sub done  { $_[0]{done} }
sub error { $_[0]{error} }
sub rest  { $_[0]{done} ? $_[0]{buf} : '' }

1;
