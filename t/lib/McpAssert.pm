package McpAssert;

# Assertions shared by the t/*.t files on top of McpTest: JSON-RPC replies
# (error and result shapes), the seed's payloads, error-log correlation.
# Core Perl only.  See the POD at the end.

use strict;
use warnings;

use Exporter 'import';
use MIME::Base64 ();
use Test::More ();
use McpTest ();

our @EXPORT = qw(everything is_error is_result is_rpc_error_body no_internal_detail
                 correlation_logged_once png_ok wav_ok $PNG_B64 $WAV_B64 conf_refused
                 %SEED_CAPABILITIES %SERVER_META $ACK);

# The Everything set's 1x1 PNG and silent WAV (base64).
our $PNG_B64 = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAF'
             . 'BQIAX8jx0gAAAABJRU5ErkJggg==';
our $WAV_B64 = 'UklGRiwAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQgAAACAgICAgICAgA==';

# Seed "Capabilities Declaration" (what the Everything set must declare).
our %SEED_CAPABILITIES = (
    tools       => { listChanged => JSON::PP::true() },
    resources   => { subscribe => JSON::PP::true(), listChanged => JSON::PP::true() },
    prompts     => { listChanged => JSON::PP::true() },
    logging     => {},
    completions => {},
    # a tool of the set may run as a task (2025-11-25's experimental tasks)
    tasks       => { list => {}, cancel => {}, requests => { tools => { call => {} } } },
);

# Who answers, in the _meta of every 2026-07-28 result of the module's
# (the spec's #3002), and the empty result of such a request (an ack);
# the version is the one src/api/ngx_http_mcp.h says.
our %SERVER_META = ('io.modelcontextprotocol/serverInfo' => {
    name    => 'ngx_http_mcp_module',
    version => do {
        my $h = McpTest::_slurp(__FILE__ =~ s{t/lib/[^/]+$}{src/api/ngx_http_mcp.h}r) // '';
        $h =~ /NGX_HTTP_MCP_MODULE_VERSION\s+"([^"]+)"/ ? $1 : '?';
    },
});
our $ACK = { resultType => 'complete', _meta => \%SERVER_META };

# Two checks: nginx -t refuses the server{} conf $server ("nginx -t
# fails: $what") and says why, its output matching $re.
sub conf_refused {
    my ($server, $re, $what) = @_;
    local $Test::Builder::Level = $Test::Builder::Level + 1;
    my ($rc, $out) = McpTest->new(server => $server)->nginx_t;
    Test::More::isnt($rc, 0, "nginx -t fails: $what");
    Test::More::like($out, $re, '... saying why') or Test::More::diag($out);
}

# A started instance serving the Everything set at /mcp.  Options: location
# (extra directives inside the location), plus McpTest->new options.
sub everything {
    my (%o) = @_;
    my $extra = delete $o{location} // '';
    return McpTest->new(
        server => "location = /mcp { mcp on; mcp_builtin everything; $extra }",
        %o,
    )->start;
}

sub _show { defined $_[0] ? (ref $_[0] ? McpTest::encode_json($_[0]) : "'$_[0]'") : 'null' }

sub _same_id {
    my ($got, $want) = @_;
    return !defined $got if !defined $want;
    return 0 if !defined $got || (ref $got && ref $got ne 'Math::BigInt');
    return "$got" eq "$want";
}

# is_error($msg, $code, $id, $name): $msg is a JSON-RPC error reply: jsonrpc
# "2.0", an "id" member equal to $id (undef: null), an error object with
# that code and a non-empty message, error.data.correlationId (32 hex
# digits), and no result.  $code undef: any integer code.
sub is_error {
    my ($msg, $code, $id, $name) = @_;
    local $Test::Builder::Level = $Test::Builder::Level + 1;
    my @why;
    if (ref $msg ne 'HASH') {
        @why = ('no JSON-RPC message');
    }
    else {
        push @why, 'jsonrpc is not "2.0"' unless ($msg->{jsonrpc} // '') eq '2.0';
        push @why, 'has a "result" next to "error"' if exists $msg->{result};
        push @why, 'no "id" member' unless exists $msg->{id};
        push @why, 'id is ' . _show($msg->{id}) . ', want ' . _show($id)
            unless _same_id($msg->{id}, $id);
        my $e = $msg->{error};
        if (ref $e ne 'HASH') {
            push @why, 'no error object';
        }
        else {
            if (defined $code) {
                push @why, 'code is ' . _show($e->{code}) . ", want $code"
                    unless defined $e->{code} && $e->{code} =~ /^-?\d+$/ && $e->{code} == $code;
            }
            else {
                push @why, 'code is not an integer' unless ($e->{code} // '') =~ /^-?\d+$/;
            }
            push @why, 'no message'
                unless defined $e->{message} && !ref $e->{message} && length $e->{message};
            push @why, 'no error.data.correlationId of 32 hex digits (the $request_id)'
                unless ref $e->{data} eq 'HASH'
                    && ($e->{data}{correlationId} // '') =~ /^[0-9a-f]{32}$/;
        }
    }
    my $ok = Test::More::ok(!@why, $name);
    Test::More::diag(join("\n", @why, 'message: ' . _show($msg))) unless $ok;
    return $ok;
}

# is_result($msg, $expected, $id, $name): a JSON-RPC success reply with that
# id whose result is deeply $expected; no "error" member.
sub is_result {
    my ($msg, $expected, $id, $name) = @_;
    local $Test::Builder::Level = $Test::Builder::Level + 1;
    if (ref $msg ne 'HASH' || exists $msg->{error} || !exists $msg->{result}
        || ($msg->{jsonrpc} // '') ne '2.0' || !_same_id($msg->{id}, $id))
    {
        Test::More::ok(0, $name);
        Test::More::diag('not a success reply with id ' . _show($id) . ': ' . _show($msg));
        return 0;
    }
    return Test::More::is_deeply($msg->{result}, $expected, $name);
}

# The HTTP response carries a JSON-RPC error as its whole body (not an HTML
# page): status, Content-Type application/json, is_error on the body.
sub is_rpc_error_body {
    my ($r, $status, $code, $id, $name) = @_;
    local $Test::Builder::Level = $Test::Builder::Level + 1;
    my @why;
    push @why, "status $r->{status}, want $status" unless $r->{status} == $status;
    push @why, 'Content-Type is ' . _show($r->{headers}{'content-type'})
        unless ($r->{headers}{'content-type'} // '') =~ m{^application/json\b};
    push @why, 'HTML in the body' if $r->{body} =~ /<html|<body|<center>/i;
    my $msg = eval { McpTest::decode_json($r->{body}) };
    push @why, 'body is not JSON' unless ref $msg eq 'HASH';
    if (@why) {
        Test::More::ok(0, $name);
        Test::More::diag(join("\n", @why) . "\n" . McpTest::explain_response($r));
        return 0;
    }
    return is_error($msg, $code, $id, $name);
}

# An error object tells nothing of the implementation: only code, message
# and data.correlationId; no source files, C names, paths, addresses, errno.
sub no_internal_detail {
    my ($msg, $name) = @_;
    local $Test::Builder::Level = $Test::Builder::Level + 1;
    my $e = ref $msg eq 'HASH' ? $msg->{error} : undef;
    my @why;
    if (ref $e ne 'HASH') {
        @why = ('no error object');
    }
    else {
        my @keys = sort keys %$e;
        push @why, "error members: @keys" unless "@keys" eq 'code data message';
        my @dkeys = ref $e->{data} eq 'HASH' ? sort keys %{ $e->{data} } : ('(not an object)');
        push @why, "error.data members: @dkeys" unless "@dkeys" eq 'correlationId';
        my $text = McpTest::encode_json($e);
        push @why, "internal detail in $text"
            if $text =~ m{\.[ch]:\d|\bngx_|cjson|\bslab\b|\bshm\b|errno|\(\d+:\ |
                          /tmp/|/work/|/usr/|/var/|\b0x[0-9a-f]{4,}|\bline\ \d+|
                          alloc\(|malloc|failed|segfault|assert}xi;
    }
    my $ok = Test::More::ok(!@why, $name);
    Test::More::diag(join "\n", @why) unless $ok;
    return $ok;
}

# The correlation id occurs in exactly one error.log line, at $level
# (default info).  Returns that line.
sub correlation_logged_once {
    my ($t, $cid, $level, $name) = @_;
    local $Test::Builder::Level = $Test::Builder::Level + 1;
    $level //= 'info';
    my @lines = grep { index($_, $cid) >= 0 } split /\n/, $t->error_log;
    my $ok = Test::More::ok(@lines == 1 && $lines[0] =~ /\[\Q$level\E\]/
                            && $lines[0] =~ /correlation id \Q$cid\E\b/, $name);
    Test::More::diag("lines with $cid:\n" . join("\n", @lines)) unless $ok;
    return $lines[0];
}

sub png_ok {
    my ($b64, $name) = @_;
    local $Test::Builder::Level = $Test::Builder::Level + 1;
    my $bin = MIME::Base64::decode_base64($b64 // '');
    return Test::More::ok(($b64 // '') eq $PNG_B64 && substr($bin, 0, 8) eq "\x89PNG\r\n\x1a\n",
                          $name);
}

sub wav_ok {
    my ($b64, $name) = @_;
    local $Test::Builder::Level = $Test::Builder::Level + 1;
    my $bin = MIME::Base64::decode_base64($b64 // '');
    return Test::More::ok(($b64 // '') eq $WAV_B64 && $bin =~ /\ARIFF....WAVEfmt /s, $name);
}

1;

__END__

=head1 NAME

McpAssert - JSON-RPC and MCP assertions for the t/*.t files

=head1 FUNCTIONS

=over

=item everything(location => '...', %mcptest_new_options) -> started McpTest

=item is_error($msg, $code, $id, $name)

JSON-RPC error reply with that code (undef: any) and id (undef: null),
a message, error.data.correlationId, no result.

=item is_result($msg, \%expected_result, $id, $name)

=item is_rpc_error_body($http_response, $status, $code, $id, $name)

Status, Content-Type application/json, no HTML, and is_error on the body.

=item no_internal_detail($msg, $name)

=item correlation_logged_once($t, $correlation_id, $level = 'info', $name) -> $line

=item conf_refused($server_conf, qr/why/, $what)  (two assertions: nginx -t fails, and says why)

=item png_ok($base64, $name), wav_ok($base64, $name)

=back

=cut
