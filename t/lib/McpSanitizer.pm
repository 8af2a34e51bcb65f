package McpSanitizer;

# Part of the test harness; t/lib/McpTest.pm, the facade the tests use,
# has every function and method below under its own name.
#
# What the logs and nginx -t may hold that fails a test whatever the test
# expects (sanitizer reports, leaks in module code, unexpected [error]
# lines), and the environment of nginx under a sanitizer build.  Pure
# functions, but _child_env, which may be called as a method.

use strict;
use warnings;

use Exporter 'import';

# a croak here names the test's line, as when all this was McpTest.pm
our @CARP_NOT = ('McpTest');
our @EXPORT_OK = qw($MODULE_FRAME_RE log_problems_in nginx_t_problems
                    _child_env sanitizer_log_path asan_options_for_preload);
our %EXPORT_TAGS = (all => \@EXPORT_OK);

# A stack frame in the module's own code or in libcjson: the .so path of
# an unsymbolized frame, or a function or source name of a symbolized one.
our $MODULE_FRAME_RE = qr{ngx_http_mcp_module\.so|libcjson|\bcJSON_\w+
                          |\bngx_http_mcp_\w+|/ngx_http_mcp\w*\.[ch]:}x;

# Pure function: problems found in a chunk of log text.
#   log_problems_in($text, [ [qr/../, {error=>1}], ... ]) -> list of strings
#
# Sanitizer reports always count, except LeakSanitizer's: nginx never frees
# some memory by design (e.g. the event arrays of ngx_event_process_init()
# in each worker), so a leak record ("Direct leak of ..." / "Indirect leak
# of ..." and its frames, up to the blank line) counts only when one of
# its frames is in the module or libcjson ($MODULE_FRAME_RE), and is not
# nginx's cached PCRE2 compile context.  The report's
# "ERROR: LeakSanitizer: detected memory leaks" and "SUMMARY: ... leaked"
# lines are judged through its records.
sub log_problems_in {
    my ($text, $expected) = @_;
    my @lines = split /\n/, $text;
    my @problems;
    for (my $i = 0; $i < @lines; $i++) {
        my $line = $lines[$i];
        next if $line =~ /ERROR:\ LeakSanitizer:\ detected\ memory\ leaks
                         |SUMMARY:\ \w+Sanitizer:\ \d+\ byte\(s\)\ leaked\ in\ /x;
        if ($line =~ /^\s*(?:Direct|Indirect)\ leak\ of\ \d+\ byte/x) {
            my $end = $i;
            $end++ while $end + 1 < @lines && $lines[$end + 1] =~ /^\s*#\d+\s/;
            my @frames = @lines[$i + 1 .. $end];
            # nginx's own PCRE2 compile context: made by the first
            # ngx_regex_compile() of a process, whoever calls it (the
            # module's schema "pattern" checks do at run time), and kept
            # for the next ones by design
            my $nginx_cache = grep { /\bpcre2_compile_context_create/ } @frames;
            if (!$nginx_cache && grep { $_ =~ $MODULE_FRAME_RE } @frames) {
                push @problems, "LeakSanitizer: leak in module code:\n"
                    . join("\n", @lines[$i .. $end]);
            }
            $i = $end;
            next;
        }
        if ($line =~ /ERROR:\ (?:AddressSanitizer|LeakSanitizer|ThreadSanitizer|MemorySanitizer)
                      |Sanitizer\ has\ encountered\ a\ fatal\ error
                      |runtime\ error:
                      |WARNING:\ ThreadSanitizer
                      |SUMMARY:\ \w+Sanitizer/x) {
            # Keep the stack trace that follows for the diagnostics.
            my $end = $i;
            $end++ while $end + 1 < @lines && $end - $i < 40
                && $lines[$end + 1] !~ /^\d{4}\/\d\d\/\d\d
                                       |ERROR:\ \w+Sanitizer|runtime\ error:
                                       |^\s*(?:Direct|Indirect)\ leak\ of/x;
            push @problems, join("\n", @lines[$i .. $end]);
            $i = $end;
            next;
        }
        next unless $line =~ /\[(emerg|alert|crit|error)\]/;
        my $level = $1;
        next if grep { $_->[1]{$level} && $line =~ $_->[0] } @{ $expected // [] };
        push @problems, $line;
    }
    return @problems;
}

# Pure: what is wrong with an nginx -t run, whatever its configuration:
# killed by a signal (-1 from _run_capture), or a sanitizer report in its
# output (log_problems_in, with every [level] line allowed: refusing is
# nginx -t's job).
sub nginx_t_problems {
    my ($rc, $out) = @_;
    my @p;
    push @p, "nginx -t was killed by a signal (or timed out)" if $rc == -1;
    push @p, log_problems_in($out // '',
        [[qr/./, { map { $_ => 1 } qw(emerg alert crit error) }]]);
    return @p;
}

# Environment changes for the nginx process (sanitizer builds).
# With MCP_NGINX_PRELOAD set, LeakSanitizer must unwind malloc stacks the
# slow way (the system nginx has no frame pointers): without it a leak's
# stack stops inside nginx and never shows the module frames that decide
# whether the leak is ours (see log_problems_in).  The caller's own
# fast_unwind_on_malloc setting wins.  Called as a method, an empty
# "log_path=" is pointed into the instance's logs/ (see
# sanitizer_log_path).
sub _child_env {
    my ($self) = @_;
    my %env;
    if ($ENV{MCP_NGINX_PRELOAD}) {
        $env{LD_PRELOAD}   = $ENV{MCP_NGINX_PRELOAD};
        $env{ASAN_OPTIONS} = asan_options_for_preload($ENV{ASAN_OPTIONS});
        $env{ASAN_OPTIONS} = sanitizer_log_path($env{ASAN_OPTIONS}, "$self->{prefix}/logs")
            if ref $self;
    }
    return \%env;   # UBSAN_OPTIONS/LSAN_OPTIONS are inherited as-is
}

# Pure: an empty "log_path=" in ASAN_OPTIONS makes ASan write its reports
# to files "./.<pid>" in nginx's working directory (the directory prove
# runs in), where no log check sees them; point it at $dir/sanitizer
# instead (files $dir/sanitizer.<pid>, read by check_log).  Other values
# are kept.
sub sanitizer_log_path {
    my ($opts, $dir) = @_;
    return $opts unless defined $opts;
    $opts =~ s{(^|[:,\s])log_path=(?=[:,\s]|\z)}{${1}log_path=$dir/sanitizer}g;
    return $opts;
}

# Pure: ASAN_OPTIONS for a preloaded sanitizer run, given the caller's.
# An empty log_path= is dropped: ASan takes it for a file prefix and
# writes each report to ./.<pid>, where check_log never looks, instead
# of stderr, which nginx sends to error.log.
sub asan_options_for_preload {
    my ($opts) = @_;
    $opts //= '';
    $opts = join ':', grep { length && $_ ne 'log_path=' } split /:/, $opts;
    return $opts if $opts =~ /(?:^|[:,\s])fast_unwind_on_malloc=/;
    return join ':', grep { length } $opts, 'fast_unwind_on_malloc=0';
}

1;
