package McpUtil;

# Part of the test harness; t/lib/McpTest.pm, the facade the tests use,
# has every function and method below under its own name.
#
# Small utilities: the clock, polling, files, a command run with a
# timeout; the processes of /proc (children, liveness, memory) and the
# wait status of our own children.  Core Perl only.

use strict;
use warnings;

use Carp qw(croak);
use Config ();
use Exporter 'import';
use IO::Select;
use IO::Socket::INET;
use POSIX qw(WNOHANG);
use Time::HiRes ();

# a croak here names the test's line, as when all this was McpTest.pm
our @CARP_NOT = ('McpTest');
our @EXPORT_OK = qw(_now wait_until _slurp _spew _number_lines
                    _run_capture _set_parent_death_signal _port_open
                    rss_kb _children_of _children_pids _alive _forget_pid
                    _wait_pid _describe_status process_mark marked_pids);
our %EXPORT_TAGS = (all => \@EXPORT_OK);

sub _now { Time::HiRes::time() }

# Polls $cond every 20 ms until it is true or $secs pass; returns its
# last value (a function, not a method).
sub wait_until {
    my ($secs, $cond) = @_;
    my $deadline = _now() + $secs;
    while (1) {
        my $v = $cond->();
        return $v if $v || _now() > $deadline;
        Time::HiRes::sleep(0.02);
    }
}

sub _slurp {
    my ($path) = @_;
    open(my $fh, '<:raw', $path) or return undef;
    local $/;
    my $s = <$fh>;
    return $s // '';
}

sub _spew {
    my ($path, $content) = @_;
    open(my $fh, '>:raw', $path) or croak "write $path: $!";
    print {$fh} $content;
    close $fh or croak "close $path: $!";
}

sub _number_lines {
    my ($text) = @_;
    my $n = 0;
    return join '', map { sprintf("%4d  %s\n", ++$n, $_) } split /\n/, $text // '';
}

# Run a command with a timeout, capturing stdout+stderr.
# Returns (exit code or -1 on timeout/exec failure, output).
sub _run_capture {
    my ($cmd, $timeout, $env) = @_;
    pipe(my $r, my $w) or croak "pipe: $!";
    my $pid = fork // croak "fork: $!";
    if (!$pid) {
        close $r;
        open STDIN,  '<',  '/dev/null';
        open STDOUT, '>&', $w;
        open STDERR, '>&', $w;
        $SIG{$_} = 'DEFAULT' for qw(PIPE ALRM TERM INT);
        $ENV{$_} = $env->{$_} for keys %{ $env // {} };
        { exec { $cmd->[0] } @$cmd }
        print STDERR "exec $cmd->[0]: $!\n";
        POSIX::_exit(127);
    }
    close $w;
    my $out = '';
    my $sel = IO::Select->new($r);
    my $deadline = _now() + $timeout;
    while ((my $left = $deadline - _now()) > 0) {
        next unless $sel->can_read($left);
        my $n = sysread($r, my $buf, 65536);
        next if !defined $n && $!{EINTR};
        last unless $n;
        $out .= $buf;
    }
    close $r;
    my $st = _wait_pid($pid, 1);
    if (!defined $st) {
        kill 'KILL', $pid;
        _wait_pid($pid, 5);
        _forget_pid($pid);
        return (-1, $out . "\n[McpTest: killed after ${timeout}s]\n");
    }
    _forget_pid($pid);
    return (($st & 127) ? -1 : $st >> 8, $out);
}

###########################################################################
# Processes
###########################################################################

# Ask the kernel to SIGTERM nginx's master if this test process dies, so a
# killed test never leaves nginx behind.  Linux only; best effort.
sub _set_parent_death_signal {
    my %nr = (x86_64 => 157, aarch64 => 167, i386 => 172, i686 => 172);
    my ($arch) = $Config::Config{archname} =~ /^([^-]+)/;
    my $nr = $nr{$arch // ''} or return;
    eval { syscall($nr, 1, 15) };    # prctl(PR_SET_PDEATHSIG, SIGTERM)
}

sub _port_open {
    my ($port) = @_;
    my $s = IO::Socket::INET->new(
        PeerAddr => '127.0.0.1', PeerPort => $port, Proto => 'tcp', Timeout => 1);
    return 0 unless $s;
    close $s;
    return 1;
}

# The resident memory of processes, in kB (VmRSS), summed.
sub rss_kb {
    my $sum = 0;
    for my $pid (@_) {
        open my $fh, '<', "/proc/$pid/status" or next;
        while (<$fh>) { $sum += $1 if /^VmRSS:\s+(\d+)/ }
    }
    return $sum;
}

sub _children_of {
    my ($ppid) = @_;
    my @kids;
    opendir(my $dh, '/proc') or return;
    for my $d (readdir $dh) {
        next unless $d =~ /^\d+$/;
        my $stat = _slurp("/proc/$d/stat") // next;
        # comm may contain spaces/parens: fields start after the last ')'.
        my $rest = substr($stat, rindex($stat, ')') + 1);
        my (undef, $state, $pp) = split /\s+/, $rest;
        next unless defined $pp && $pp == $ppid && $state ne 'Z' && $state ne 'X';
        my $cmd = _slurp("/proc/$d/cmdline") // '';
        $cmd =~ s/\0.*//s;
        $cmd =~ s/\s+$//;
        push @kids, { pid => $d, cmd => $cmd };
    }
    return @kids;
}

sub _alive {
    my ($pid) = @_;
    return 0 unless kill 0, $pid;
    my $stat = _slurp("/proc/$pid/stat") // return 0;
    my $rest = substr($stat, rindex($stat, ')') + 1);
    my (undef, $state) = split /\s+/, $rest;
    return ($state // 'X') !~ /^[ZX]$/;
}

sub _children_pids { map { $_->{pid} } _children_of($_[0]) }

# A mark to put in the environment of what a test starts (mcp_stdio_env
# takes it as NAME=VALUE), and the processes that carry it: a check for
# leftovers then finds this test's processes, not those of another test
# that runs the same program beside it (prove -j).
sub process_mark { "MCP_TEST_MARK=$_[0]-$$-" . int(_now() * 1000) }

sub marked_pids {
    my ($mark) = @_;
    return grep {
        my $env = _slurp("/proc/$_/environ") // '';
        index("\0$env\0", "\0$mark\0") >= 0;
    } map { m{^/proc/(\d+)$} ? $1 : () } glob '/proc/[0-9]*';
}

# The wait status of child $pid within $timeout s, undef if it still
# runs.  A status reaped by an earlier call is kept for the next ones
# (until _forget_pid), so that is_running, or a test's own wait, does not
# make stop() take a crash for a clean exit; a pid neither our child nor
# reaped here gives -1 (unknown, not 0).
my %REAPED;

sub _forget_pid { delete $REAPED{$_[0]} }

sub _wait_pid {
    my ($pid, $timeout) = @_;
    local $?;    # waitpid sets $? (to -1 while the child runs): keep it private
    my $deadline = _now() + $timeout;
    while (1) {
        return $REAPED{$pid} if exists $REAPED{$pid};
        my $w = waitpid($pid, WNOHANG);
        if ($w == $pid) { $REAPED{$pid} = $?; next }
        return -1 if $w == -1 && !_alive($pid);    # not our child
        return undef if _now() >= $deadline;
        Time::HiRes::sleep(0.02);
    }
}

sub _describe_status {
    my ($st) = @_;
    return 'an unknown status (reaped elsewhere, or not a child)' if $st == -1;
    return 'exit code ' . ($st >> 8) unless $st & 127;
    return 'signal ' . ($st & 127) . (($st & 128) ? ' (core dumped)' : '');
}

1;
