package McpTest;

# In-repo test harness for ngx_http_mcp_module.
#
# Starts a private nginx instance per test (temp prefix, free loopback port),
# enforces error-log discipline, and provides a small HTTP/1.1 + SSE client
# plus MCP (Streamable HTTP) helpers.  Core Perl only.  See the POD at the end
# of this file for the API summary.
#
# This file is the facade the tests use: the harness is in modules by
# concern, and every function and method of theirs is here under its
# own name (McpTest->new, $t->mcp_call, McpTest::_slurp, ...):
#
#   McpUtil.pm       the clock, polling, files, commands run with a
#                    timeout, processes (/proc, wait statuses)
#   McpJson.pm       the JSON codec (ids beyond 2**64 kept exact)
#   McpSanitizer.pm  sanitizer reports and unexpected lines in a log,
#                    the environment of nginx under a sanitizer build
#   McpConfig.pm     an instance's ports, module and nginx.conf template
#   McpLog.pm        error-log discipline (expected lines, check_log)
#   McpHttp.pm       the HTTP/1.1 client, body decoders
#   McpSse.pm        event streams and the SSE parser
#   McpClient.pm     MCP requests, notifications, initialize
#   McpNginx.pm      an instance's life: new, nginx -t, start, reload, stop
#
# Here: "use McpTest" itself, with the per-file time limit and the
# signal handlers.

use strict;
use warnings;

use Exporter ();
use Test::More ();

use McpUtil      qw(:all);
use McpJson      qw(:all);
use McpSanitizer qw(:all);
use McpConfig    qw(:all);
use McpLog       qw(:all);
use McpHttp      qw(:all);
use McpSse       qw(:all);
use McpClient    qw(:all);
use McpNginx     qw(:all);

our $VERSION = '0.01';

our @ISA       = ('Exporter');
our @EXPORT_OK = qw(encode_json decode_json parse_sse parse_sse_chunk
                    decode_chunked explain_response http_request wait_until);
our %EXPORT_TAGS = (all => \@EXPORT_OK);

# The modules trust this file and it trusts them: a croak in any of them
# names the test's line, as when they were one file.
our @CARP_NOT = qw(Exporter McpUtil McpJson McpSanitizer McpConfig McpLog
                   McpHttp McpSse McpClient McpNginx);

# Per-test-file wall clock guard (seconds); 0 disables.
# Precedence: $ENV{MCP_TEST_TIMEOUT} > "use McpTest timeout => N" > 120.
our $TIMEOUT = 120;

###########################################################################
# Process-wide guards: timeout, SIGPIPE, cleanup of nginx on exit.
###########################################################################

my $GUARDS_SET;

sub import {
    my ($class, @args) = @_;
    my @export;
    while (@args) {
        my $arg = shift @args;
        if ($arg eq 'timeout') { $TIMEOUT = shift @args }
        else                   { push @export, $arg }
    }
    $TIMEOUT = $ENV{MCP_TEST_TIMEOUT} if defined $ENV{MCP_TEST_TIMEOUT};
    _install_guards();
    __PACKAGE__->export_to_level(1, $class, @export) if @export;
}

sub _install_guards {
    return if $GUARDS_SET++;
    # A peer closing the socket must produce EPIPE, not kill the test.
    $SIG{PIPE} = 'IGNORE';
    $SIG{ALRM} = \&_on_timeout;
    for my $sig (qw(TERM INT)) {
        $SIG{$sig} = sub {
            Test::More::diag("McpTest: caught SIG$sig, stopping nginx");
            _kill_all();
            exit(128 + ($sig eq 'TERM' ? 15 : 2));
        };
    }
    alarm($TIMEOUT) if $TIMEOUT;
}

# Re-arm (or disable with 0) the per-file guard from inside a test.
sub set_timeout {
    my @args = @_;
    shift @args if @args && defined $args[0] && $args[0] eq __PACKAGE__;   # McpTest->set_timeout
    $TIMEOUT = $args[0] // 0;
    alarm($TIMEOUT || 0);
}

sub _on_timeout {
    Test::More::diag("McpTest: test file exceeded its ${TIMEOUT}s time limit;"
        . " killing nginx and aborting (set MCP_TEST_TIMEOUT or"
        . " 'use McpTest timeout => N' to change)");
    _kill_all(dump_log => 1);
    Test::More->builder->ok(0, "test file finished within ${TIMEOUT}s");
    exit(255);
}

1;

__END__

=head1 NAME

McpTest - test harness for ngx_http_mcp_module (core Perl only)

=head1 SYNOPSIS

    use strict; use warnings;
    use FindBin; use lib "$FindBin::Bin/lib";
    use Test::More;
    use McpTest;                       # or: use McpTest timeout => 300;

    my $t = McpTest->new(
        http   => '...http-level directives...',
        server => 'location = /mcp { ...module directives... }',
    )->start;

    my ($sid, $init) = $t->mcp_initialize;
    my $res = $t->mcp_call($sid, 'tools/list', {});
    ok($res->{tools}, 'tools listed');

    $t->stop;                          # one assertion: error log is clean
    done_testing;

=head1 INSTANCE

=over

=item McpTest->new(%opt)

Creates a temp prefix (conf/ logs/ html/ tmp/) and writes conf/nginx.conf;
does not start nginx.  Options: C<http>, C<server>, C<main>, C<events>
(config snippets), C<conf> (whole config instead of the template; use
C<%%LOAD_MODULE%%>), C<workers> (4), C<ports> (1), C<listen> (extra
parameters of the main server's C<listen>, e.g. C<reuseport>), C<module> (1 = load
$ENV{MCP_MODULE} or <repo>/build/ngx_http_mcp_module.so, 0 = none, or a
path), C<fixtures> (1 = also load the test sets' module after it,
$ENV{MCP_FIXTURES_MODULE} or the ngx_http_mcp_fixtures_module.so beside
the module; 0 = not loaded: no "mcp_builtin everything"; or a path),
C<log_level> (info), C<user> (root when run as root), C<mcp_path>
(/mcp), C<protocol_version> (2025-11-25), C<check_log> (1: assert at stop),
C<start_timeout> (10), C<stop_timeout> (10), C<nginx> (binary).
Placeholders in snippets: C<%%PORT%%> (= C<%%PORT1%%>), C<%%PORT2%%>...,
C<%%PREFIX%%>, C<%%LOAD_MODULE%%>.  The template puts the C<server> snippet
in C<server { listen 127.0.0.1:%%PORT%%; server_name localhost; ... }>
inside C<http>, after the C<http> snippet.

=item $t->start

Runs nginx (master_process on, daemon off, as a child of the test; stderr
to logs/stderr.log; LD_PRELOAD=$ENV{MCP_NGINX_PRELOAD} if set) and waits
until the port accepts and all workers run.  Retries with new ports on a
port collision.  Dies with conf, stderr and error.log on failure.  Returns
$t.

=item $t->stop(%opt)

QUIT, then TERM/KILL after C<timeout> (stop_timeout).  Closes the
harness's own client sockets first.  A shutdown hang, non-zero master exit
or leftover workers are failures; then runs C<check_log> (skip with
C<< check => 0 >>).  Also done automatically at END/DESTROY (then a clean
log emits no assertion), never in a forked child.

=item $t->reload(%opt)

Optionally rewrites the config (C<http>, C<server>, C<main>, C<events>,
C<conf>), sends HUP, waits for a full new generation of workers and (unless
C<< wait_old => 0 >>) for the old ones to exit (C<old_timeout> 5).  Returns
1, or 0 if no new generation appeared within C<timeout> (10) or an
[emerg] was logged.

=item $t->restart, $t->nginx_t -> ($exit_code, $output), $t->write_config(%snippets)

=item $t->write_file($relpath, $content) -> $fullpath

=item $t->port($n = 1), $t->prefix, $t->conf_file, $t->module_path, $t->fixtures_path, $t->subst($text)

=item $t->master_pid, $t->worker_pids(all => 0|1), $t->is_running

=back

=head1 ERROR LOG

=over

=item $t->check_log(name => ..)

One assertion: no [emerg]/[alert]/[crit] lines, no [error] lines except
declared ones, no sanitizer reports (AddressSanitizer, "runtime error:",
...) in logs/error.log, logs/stderr.log and logs/sanitizer.* (see
sanitizer_log_path) since the previous check.
LeakSanitizer reports are judged record by record: a "Direct leak of" /
"Indirect leak of" record counts only when one of its stack frames is in
the module or libcjson (C<$McpTest::MODULE_FRAME_RE>: the .so path, an
C<ngx_http_mcp_*> or C<cJSON_*> function, an C<ngx_http_mcp*.c> source);
leaks whose stacks are all nginx and libc (nginx's own never-freed memory,
such as the worker event arrays) are ignored.

=item $t->expect_log_error(qr/.../, ...)

Declare [error] lines matching the regex as expected.

=item $t->expect_log_any(qr/.../, ...)

Same for any level (error, crit, alert, emerg).  Sanitizer reports can
never be declared expected.

=item $t->log_problems -> @lines

What check_log would report now, without asserting.

=item $t->error_log, $t->stderr_log, $t->access_log -> $text

=item $t->log_mark -> $offset; $t->log_since($offset) -> $text

=item $t->wait_for_log(qr/.../, $timeout = 5, $mark = 0) -> $line | undef

=item McpTest::log_problems_in($text, [[qr/../, {error => 1}], ...]) -> @problems

=item McpTest::asan_options_for_preload($asan_options) -> $asan_options

=item McpTest::sanitizer_log_path($asan_options, $dir) -> $asan_options

An empty C<log_path=> becomes C<log_path=$dir/sanitizer>: nginx started by
the harness writes ASan reports to logs/sanitizer.<pid> in its prefix,
which check_log reads like error.log (instead of files F<./.E<lt>pidE<gt>>
in the current directory that nothing reads).

=back

=head1 HTTP CLIENT

=over

=item $t->request(%opt) -> $r

Options: C<method> (GET), C<path> (/), C<headers> (hashref, or arrayref of
pairs to control order/duplicates; value undef omits, arrayref repeats),
C<body> (bytes; Content-Length added), C<raw> (send these bytes verbatim
instead), C<keepalive> (0: sends Connection: close), C<conn> (reuse a
socket from a previous C<< $r->{conn} >>; implies keepalive), C<timeout>
(5), C<port> (default port(1)), C<quiet> (no diag on transport errors).

Response: C<status> (0 on transport error, then C<error> says why),
C<reason>, C<version>, C<headers> (lowercase names, repeated headers joined
with ", "), C<header_list> ([name, value] in order), C<body> (de-chunked),
C<chunked>, C<trailers>, C<raw> (bytes received), C<request> (bytes sent),
C<conn> (socket if kept alive), C<elapsed>.

=item McpTest::http_request(%opt) -> $r

Same without an instance (C<port> required).

=item $t->connect(port => .., timeout => ..) -> non-blocking socket

=item $t->status_is($r, $code, $name), $t->diag_response($r), McpTest::explain_response($r)

=back

=head1 SSE

=over

=item $t->sse_open(%opt) -> $s

Like request() (default GET mcp_path, Accept: text/event-stream), returns
once the response headers arrived.  C<< $s->status >>, C<< $s->header($name) >>,
C<< $s->{headers} >>, C<< $s->{error} >>.

=item $s->next_event($timeout = 5) -> $ev | undef

Undef on timeout (C<< $s->{timed_out} >>) or end of stream (C<< $s->is_done >>).
Event: C<id> (this event's id field or undef), C<event> (or undef), C<type>
(event // 'message'), C<data> (lines joined with "\n"; undef if no data
line), C<retry>, C<last_id> (stream's last event id), C<comments> (comment
lines before it), C<json> (decoded data, if JSON), C<raw>.  Unlike browsers,
events with no data line (e.g. an id-only priming event) are reported.

=item $s->read_all($timeout), $s->read_body($timeout), $s->comments, $s->last_id, $s->close

=item McpTest::parse_sse($text) -> @events (whole stream), McpTest::parse_sse_chunk($text)

=item McpTest::SSEParser->new; ->feed($bytes) -> @events; ->finish

=item McpTest::decode_chunked($bytes) -> ($body, $complete, $rest, \%trailers)

Dies on malformed framing.  Incremental: McpTest::Chunked->new->feed($bytes).

=back

=head1 MCP

=over

=item $t->mcp_post($sid, $msg_or_raw_string, %opt) -> $r

POST to mcp_path with Content-Type: application/json, Accept:
application/json, text/event-stream, Mcp-Session-Id ($sid if defined) and
MCP-Protocol-Version (when $sid is defined: the version negotiated by
mcp_initialize for that session, else 2025-11-25).  Options: C<headers>
(case-insensitive overrides; undef omits), C<protocol_version> (undef
omits), C<path>, C<method>, C<timeout>, C<keepalive>, C<conn>, C<port>,
C<stream> (return an SSE object instead).  Adds C<json> (application/json),
C<events> (text/event-stream), C<messages> (all JSON-RPC messages found),
C<session_id>.

=item $t->mcp_initialize(%opt) -> ($sid, $result, $r)  (scalar: $sid)

initialize (C<protocol_version>, C<capabilities>, C<client_info>, C<params>
merged in, C<id>, C<headers>, C<path>, C<port>), requires 200 + a result, then sends
notifications/initialized and requires 202 (skip with C<skip_initialized>).
Dies with the exchange on failure.

=item $t->mcp_request($sid, $method, $params, %opt) -> $msg  (list: ($msg, $r))

The JSON-RPC response with the matching id (auto-increment, or C<id>).

=item $t->mcp_call(...) -> $result or $error_object  (list: ($value, $msg, $r))

=item $t->mcp_notify($sid, $method, $params, %opt) -> $r

=item $t->mcp_get_stream($sid, last_event_id => .., %opt) -> $s

Options: C<last_event_id>, C<headers>, C<protocol_version>, C<timeout>,
C<path>, C<port>, C<quiet>.

=item $t->mcp_delete($sid, %opt) -> $r

Options: C<headers>, C<protocol_version>, C<timeout>, C<path>, C<port>.

=item $t->next_id, McpTest::encode_json, McpTest::decode_json, McpTest::decode_mcp_response($r)

JSON is canonical UTF-8; integers that do not fit 64 bits decode to
Math::BigInt (and encode back as bare numbers).

=back

=head1 ENVIRONMENT

MCP_MODULE (module .so path, or C<static> for an nginx with the module
and the test sets' module linked in), MCP_FIXTURES_MODULE (the test sets'
module, fixtures/, loaded after the module; default: the
ngx_http_mcp_fixtures_module.so beside MCP_MODULE), MCP_NGINX or NGINX_BIN (the nginx binary,
default /usr/sbin/nginx),
MCP_NGINX_PRELOAD (LD_PRELOAD for nginx, for sanitizer builds; ASAN_OPTIONS
etc. pass through, except that C<fast_unwind_on_malloc=0> is added to
ASAN_OPTIONS unless it sets fast_unwind_on_malloc itself, so leak stacks
reach the module's frames; see C<McpTest::asan_options_for_preload>), MCP_TEST_KEEP=1 (keep temp prefixes), MCP_TEST_TIMEOUT
(per-file guard, default 120 s, 0 = off; overrides C<use McpTest timeout
=E<gt> N>), MCP_TEST_START_TIMEOUT (default 10), MCP_TEST_TMPDIR (where
prefixes are created).

=cut
