package McpLog;

# Part of the test harness; t/lib/McpTest.pm, the facade the tests use,
# has every function and method below under its own name.
#
# Error-log discipline: the logs of an instance, the lines a test
# declares expected, waiting for a line, and check_log, the one
# assertion that nothing unexpected was logged.  Core Perl only.

use strict;
use warnings;

use Exporter 'import';
use File::Basename ();
use Test::More ();
use Time::HiRes ();

use McpSanitizer qw(log_problems_in);
use McpUtil qw(_now _slurp);

# a croak here names the test's line, as when all this was McpTest.pm
our @CARP_NOT = ('McpTest');
our @EXPORT_OK = qw(error_log stderr_log access_log _log_tail
                    expect_log_error expect_log_any clear_expected_log
                    log_mark log_since wait_for_log _scan_logs
                    log_problems check_log);
our %EXPORT_TAGS = (all => \@EXPORT_OK);

###########################################################################
# Error-log discipline
###########################################################################

sub error_log  { _slurp("$_[0]{prefix}/logs/error.log")  // '' }
sub stderr_log { _slurp("$_[0]{prefix}/logs/stderr.log") // '' }
sub access_log { _slurp("$_[0]{prefix}/logs/access.log") // '' }

sub _log_tail {
    my ($self, $n) = @_;
    my @l = split /\n/, $self->error_log;
    @l = @l[-$n .. -1] if @l > $n;
    return join("\n", @l) . "\n";
}

# [error] lines matching $re are expected (not failures).
sub expect_log_error {
    my ($self, @re) = @_;
    push @{ $self->{expected} }, [ $_, { error => 1 } ] for @re;
    return $self;
}

# Lines of any nginx level (error, crit, alert, emerg) matching $re are
# expected.  Sanitizer reports can never be declared expected.
sub expect_log_any {
    my ($self, @re) = @_;
    push @{ $self->{expected} }, [ $_, { map { $_ => 1 } qw(error crit alert emerg) } ]
        for @re;
    return $self;
}

sub clear_expected_log { $_[0]{expected} = []; $_[0] }

# Offset-based helpers to look at log output produced by a step.
sub log_mark  { -s "$_[0]{prefix}/logs/error.log" // 0 }

sub log_since {
    my ($self, $mark) = @_;
    my $log = $self->error_log;
    return length($log) > ($mark // 0) ? substr($log, $mark // 0) : '';
}

# Wait until error.log (after $mark, default: whole log) matches $re.
# Returns the first matching line, or undef on timeout.
sub wait_for_log {
    my ($self, $re, $timeout, $mark) = @_;
    my $deadline = _now() + ($timeout // 5);
    while (1) {
        for my $line (split /\n/, $self->log_since($mark // 0)) {
            return $line if $line =~ $re;
        }
        return undef if _now() >= $deadline;
        Time::HiRes::sleep(0.05);
    }
}

sub _scan_logs {
    my ($self, %o) = @_;
    my @problems;
    my @san = map { File::Basename::basename($_) } glob("$self->{prefix}/logs/sanitizer.*");
    for my $f (qw(error.log stderr.log), sort @san) {
        my $text = _slurp("$self->{prefix}/logs/$f") // next;
        my $off  = $self->{log_offsets}{$f} // 0;
        $off = 0 if $off > length $text;    # truncated
        my $chunk = substr($text, $off);
        # While nginx runs, leave a trailing partial line for next time.
        unless ($o{final}) {
            my $nl = rindex($chunk, "\n");
            $chunk = $nl >= 0 ? substr($chunk, 0, $nl + 1) : '';
        }
        push @problems, map { "$f: $_" } log_problems_in($chunk, $self->{expected});
        $self->{log_offsets}{$f} = $off + length $chunk if $o{advance};
    }
    return @problems;
}

# Problems in the not-yet-checked part of the logs, without asserting.
sub log_problems { $_[0]->_scan_logs(advance => 0) }

# One assertion: no unexpected error/crit/alert/emerg lines and no sanitizer
# reports since the previous check.  Options: name, extra => [problems].
sub check_log {
    my ($self, %o) = @_;
    my @problems = (@{ $o{extra} // [] },
                    $self->_scan_logs(advance => 1, final => $o{final} || !$self->{pid}));
    return 1 if !@problems && $o{quiet_pass};
    my $name = $o{name} // 'nginx error log is clean';
    local $Test::Builder::Level = $Test::Builder::Level + 1;
    my $ok = Test::More->builder->ok(!@problems, $name);
    if (!$ok) {
        my @show = @problems > 30 ? (@problems[0 .. 29], '...') : @problems;
        Test::More::diag("unexpected log content:\n  " . join("\n  ", @show));
        Test::More::diag("prefix: $self->{prefix}"
            . ($ENV{MCP_TEST_KEEP} ? '' : ' (set MCP_TEST_KEEP=1 to keep it)'));
    }
    return $ok;
}

1;
