package McpJson;

# Part of the test harness; t/lib/McpTest.pm, the facade the tests use,
# has every function and method below under its own name.
#
# The JSON codec: byte strings in and out, canonical key order, and ids
# beyond 2**64 kept exact.  Core Perl only.

use strict;
use warnings;

use Exporter 'import';
use JSON::PP ();

# a croak here names the test's line, as when all this was McpTest.pm
our @CARP_NOT = ('McpTest');
our @EXPORT_OK = qw(encode_json decode_json _unmark_bigints);
our %EXPORT_TAGS = (all => \@EXPORT_OK);

# JSON codec: byte strings in/out, canonical key order, big numbers preserved
# (ids beyond 2**53 or even 2**64 survive a round trip as Math::BigInt).
my $JSON = JSON::PP->new->utf8->canonical->allow_nonref->allow_bignum;

sub encode_json { $JSON->encode($_[0]) }

# JSON::PP (4.07) turns 20-digit integers above 2**64 into floats even with
# allow_bignum, so such tokens are marked as strings before decoding and
# turned into Math::BigInt afterwards.  Numbers that fit 64 bits stay native.
my $BIG_MARK = "\x01mcptest-bigint:";

sub decode_json {
    my ($text) = @_;
    return $JSON->decode($text) unless $text =~ /\d{20}/;
    my $out = '';
    while ($text =~ /\G( "(?:[^"\\]++|\\.)*+"                       # string
                       | -?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)? # number
                       | [^"\d-]++ | . )/gcsx) {
        my $tok = $1;
        $out .= $tok =~ /^-?\d{20,}$/ ? "\"\\u0001mcptest-bigint:$tok\"" : $tok;
    }
    return _unmark_bigints($JSON->decode($out));
}

sub _unmark_bigints {
    my ($v) = @_;
    if (ref $v eq 'HASH')  { $_ = _unmark_bigints($_) for values %$v }
    elsif (ref $v eq 'ARRAY') { $_ = _unmark_bigints($_) for @$v }
    elsif (defined $v && !ref $v && index($v, $BIG_MARK) == 0) {
        require Math::BigInt;
        return Math::BigInt->new(substr($v, length $BIG_MARK));
    }
    return $v;
}

1;
