package McpNginx;

# Part of the test harness; t/lib/McpTest.pm, the facade the tests use,
# has every function and method below under its own name.
#
# An nginx instance of a test: made in a prefix of its own, nginx -t,
# started, reloaded, stopped (the stop checks the logs), killed at the
# end of the test process whatever happens.  Core Perl only.

use strict;
use warnings;

use Carp qw(croak);
use Exporter 'import';
use File::Path ();
use File::Spec;
use File::Temp ();
use POSIX qw(WNOHANG);
use Scalar::Util qw(weaken refaddr);
use Test::More ();
use Time::HiRes ();

use McpClient qw($DEFAULT_PROTOCOL_VERSION);
use McpSanitizer qw(nginx_t_problems);
use McpUtil qw(:all);

# a croak here names the test's line, as when all this was McpTest.pm
our @CARP_NOT = ('McpTest');
our @EXPORT_OK = qw(_kill_all new nginx_t start _startup_report _try_start
                    master_pid is_running workers_rss worker_pids reload
                    restart stop _stop_at_exit _kill_hard _cleanup_prefix
                    DESTROY);
our %EXPORT_TAGS = (all => \@EXPORT_OK);

my %LIVE;          # refaddr => weak ref of every instance created by this process

# Hard stop of every instance: used on timeout and signals.
sub _kill_all {
    my (%o) = @_;
    for my $t (grep { defined } values %LIVE) {
        next unless $t->{owner} == $$;
        if ($o{dump_log} && $t->{pid}) {
            Test::More::diag("error.log tail of $t->{prefix}:\n" . $t->_log_tail(40));
        }
        $t->_kill_hard;
        $t->_cleanup_prefix;
    }
}

END {
    my $rc = $?;
    for my $t (grep { defined } values %LIVE) {
        next unless $t->{owner} == $$;
        $t->_stop_at_exit;
        $t->_cleanup_prefix;
    }
    # Never let cleanup mask the test's own exit status.
    $? = $rc;
}

###########################################################################
# Construction (the configuration: McpConfig.pm)
###########################################################################

sub new {
    my ($class, %o) = @_;
    my $self = bless {
        http          => $o{http}   // '',
        server        => $o{server} // '',
        main          => $o{main}   // '',
        events        => $o{events} // '',
        conf          => $o{conf},                 # full config override
        workers       => $o{workers} // 4,
        nports        => $o{ports} // 1,
        log_level     => $o{log_level} // 'info',
        module        => exists $o{module} ? $o{module} : 1,
        fixtures      => exists $o{fixtures} ? $o{fixtures} : 1,
        user          => exists $o{user} ? $o{user} : ($> == 0 ? 'root' : undef),
        mcp_path      => $o{mcp_path} // '/mcp',
        listen        => $o{listen} // '',          # extra listen parameters
        protocol_version => $o{protocol_version} // $DEFAULT_PROTOCOL_VERSION,
        check_log_at_stop => $o{check_log} // 1,
        start_timeout => $o{start_timeout} // $ENV{MCP_TEST_START_TIMEOUT} // 10,
        stop_timeout  => $o{stop_timeout} // 10,
        nginx         => $o{nginx} // $ENV{MCP_NGINX} // $ENV{NGINX_BIN} // '/usr/sbin/nginx',
        expected      => [],     # [ qr/.../, { level => 1, ... } ]
        log_offsets   => {},     # file => bytes already checked
        owner         => $$,
        next_id       => 1,
        socks         => [],     # weak refs to sockets opened for this instance
        session_pv    => {},     # session id => negotiated protocol version
    }, $class;

    my $base = $ENV{MCP_TEST_TMPDIR} // File::Spec->tmpdir;
    $self->{prefix} = File::Temp::tempdir('mcptest-XXXXXX', DIR => $base, CLEANUP => 0);
    chmod 0755, $self->{prefix};
    for my $d (qw(conf logs html tmp)) {
        mkdir "$self->{prefix}/$d" or croak "mkdir $self->{prefix}/$d: $!";
    }

    $LIVE{refaddr $self} = $self;
    weaken $LIVE{refaddr $self};

    $self->_pick_ports;
    $self->write_config;
    return $self;
}

###########################################################################
# nginx lifecycle
###########################################################################

# nginx -t returns from main() with its configuration's cycle referenced
# from main()'s stack only (ngx_cycle still names the bootstrap cycle), so
# whether LeakSanitizer calls the whole cycle leaked at exit depends on
# which globals of the loaded libraries happen to point into it (linking
# libhiredis turned it over).  Leaks are checked where the cycle is the
# running one: at the exit of the master and the workers.
#
# Its output is read for sanitizer reports: on a refused configuration
# nginx has not yet sent stderr to the error log, so an ASan or UBSan
# report on a configuration's error path lands there (or in
# logs/sanitizer.*), and the exit code (1 after an ASan report, as for
# a refusal) does not tell them apart.  A report, or nginx -t killed by a
# signal, is a failed test here, whatever the caller checks.
sub nginx_t {
    my ($self) = @_;
    $self->write_config;
    my $env = $self->_child_env;
    $env->{ASAN_OPTIONS} = join ':', grep { length } $env->{ASAN_OPTIONS}, 'detect_leaks=0'
        if exists $env->{ASAN_OPTIONS};
    my %before = map { $_ => 1 } glob("$self->{prefix}/logs/sanitizer.*");
    my ($rc, $out) = _run_capture(
        [$self->{nginx}, '-t', '-p', "$self->{prefix}/", '-c', $self->conf_file],
        30, $env);
    my $san = join "\n", $out,
        map { _slurp($_) // '' } grep { !$before{$_} } glob("$self->{prefix}/logs/sanitizer.*");
    my @problems = nginx_t_problems($rc, $san);
    if (@problems) {
        local $Test::Builder::Level = $Test::Builder::Level + 1;
        Test::More::ok(0, 'nginx -t: no sanitizer report, no crash');
        Test::More::diag(join "\n", @problems);
    }
    return ($rc, $out);
}

sub start {
    my ($self) = @_;
    croak "nginx already running (pid $self->{pid})" if $self->{pid};
    if ($self->{module} && $self->module_path ne 'static' && !-e $self->module_path) {
        croak "McpTest: module not found at " . $self->module_path
            . " (build it first, or set MCP_MODULE=/path/to/ngx_http_mcp_module.so)";
    }
    my $fixtures = $self->fixtures_path;
    if (defined $fixtures && $fixtures ne 'static' && !-e $fixtures) {
        croak "McpTest: the test sets' module not found at $fixtures"
            . " (scripts/build builds it beside the module; or set"
            . " MCP_FIXTURES_MODULE=/path/to/ngx_http_mcp_fixtures_module.so,"
            . " or pass fixtures => 0)";
    }
    for my $attempt (1 .. 3) {
        my $res = $self->_try_start;
        return $self if $res eq 'ok';
        if ($res eq 'addrinuse' && $attempt < 3 && !defined $self->{conf_fixed_ports}) {
            # Someone grabbed our port between probing and binding: new ports.
            Test::More::note("McpTest: port collision, retrying with new ports");
            $self->_pick_ports;
            $self->write_config;
            _spew("$self->{prefix}/logs/$_", '') for qw(error.log stderr.log);
            $self->{log_offsets} = {};
            next;
        }
        croak "McpTest: nginx failed to start ($res)\n" . $self->_startup_report;
    }
}

sub _startup_report {
    my ($self) = @_;
    return "---- conf/nginx.conf ----\n" . _number_lines(_slurp($self->conf_file))
         . "---- logs/stderr.log ----\n" . $self->stderr_log
         . "---- logs/error.log (tail) ----\n" . $self->_log_tail(40);
}

sub _try_start {
    my ($self) = @_;
    $self->write_config;
    my $p   = $self->{prefix};
    my $bin = $self->{nginx};
    my $env = $self->_child_env;

    my $pid = fork // croak "fork: $!";
    if (!$pid) {
        # Child: detach stdio from the TAP stream (prove waits for EOF on it).
        open STDIN,  '<',  '/dev/null';
        open STDOUT, '>>', "$p/logs/stderr.log";
        open STDERR, '>&', \*STDOUT;
        $SIG{$_} = 'DEFAULT' for qw(PIPE ALRM TERM INT);
        _set_parent_death_signal();
        $ENV{$_} = $env->{$_} for keys %$env;
        { exec { $bin } $bin, '-p', "$p/", '-c', "$p/conf/nginx.conf" }
        print STDERR "McpTest: exec $bin failed: $!\n";
        POSIX::_exit(127);
    }
    $self->{pid} = $pid;

    local $?;
    my $want     = $self->{workers} =~ /^\d+$/ ? $self->{workers} : 1;
    my $deadline = _now() + $self->{start_timeout};
    while (_now() < $deadline) {
        my $w = waitpid($pid, WNOHANG);
        if ($w == $pid) {
            my $st = $?;
            delete $self->{pid};
            my $logs = $self->stderr_log . $self->error_log;
            return 'addrinuse' if $logs =~ /Address already in use/;
            return 'nginx exited during startup with ' . _describe_status($st);
        }
        my @workers = $self->worker_pids;
        if (@workers >= $want && _port_open($self->port)) {
            return 'ok';
        }
        Time::HiRes::sleep(0.05);
    }
    $self->_kill_hard;
    return "not accepting connections on port " . $self->port
         . " after $self->{start_timeout}s";
}

sub master_pid { $_[0]{pid} }

# Reaping the master here keeps its status for stop() (see _wait_pid).
sub is_running {
    my ($self) = @_;
    return 0 unless $self->{pid};
    return defined _wait_pid($self->{pid}, 0) ? 0 : 1;
}

# The resident memory of the live workers, in kB, summed.
sub workers_rss {
    my ($self) = @_;
    return rss_kb($self->worker_pids);
}

# Children of the master.  By default only live (not shutting down) workers;
# all => 1 returns every child (old workers, cache manager, ...).
sub worker_pids {
    my ($self, %o) = @_;
    return () unless $self->{pid};
    my @pids;
    for my $c (_children_of($self->{pid})) {
        next if !$o{all} && $c->{cmd} !~ /worker process$/;
        push @pids, $c->{pid};
    }
    return sort { $a <=> $b } @pids;
}

# Send HUP and wait for a new generation of workers.  Optional snippet args
# (http/server/main/events/conf) rewrite the config first.  Returns 1 on
# success, 0 if no new generation appeared (e.g. invalid config: nginx keeps
# the old one and logs [emerg]; declare it with expect_log_any).
sub reload {
    my ($self, %o) = @_;
    croak "reload: nginx not running" unless $self->{pid};
    my %cfg = map { exists $o{$_} ? ($_ => $o{$_}) : () } qw(http server main events conf);
    $self->write_config(%cfg);

    my %old  = map { $_ => 1 } $self->worker_pids(all => 1);
    my $mark = $self->log_mark;
    my $want = $self->{workers} =~ /^\d+$/ ? $self->{workers} : 1;
    kill 'HUP', $self->{pid} or croak "kill HUP $self->{pid}: $!";

    my $deadline = _now() + ($o{timeout} // 10);
    my $ok = 0;
    while (_now() < $deadline) {
        my @new = grep { !$old{$_} } $self->worker_pids;
        if (@new >= $want) { $ok = 1; last }
        if ($self->log_since($mark) =~ /\[emerg\]/) { last }
        Time::HiRes::sleep(0.05);
    }
    if (!$ok) {
        Test::More::diag("McpTest: reload did not produce new workers;"
            . " error.log since HUP:\n" . $self->log_since($mark));
        return 0;
    }
    # Let the old generation drain so later requests hit the new config.
    if ($o{wait_old} // 1) {
        my $until = _now() + ($o{old_timeout} // 5);
        while (_now() < $until && grep { _alive($_) } keys %old) {
            Time::HiRes::sleep(0.05);
        }
    }
    return 1;
}

sub restart {
    my ($self, %o) = @_;
    $self->stop(%o);
    return $self->start;
}

# Graceful stop (QUIT), escalating to TERM/KILL.  A shutdown hang, a crash of
# the master, or leftover workers count as failures; then the error log is checked (one Test::More
# assertion) unless check => 0, and then those failures are still one
# failed assertion.
sub stop {
    my ($self, %o) = @_;
    return $self unless $self->{pid} && $self->{owner} == $$;
    $self->_close_sockets;

    my $pid      = $self->{pid};
    my @children = $self->worker_pids(all => 1);
    my @problems;

    # (not when reaped already: the pid may be another process's now)
    kill 'QUIT', $pid unless defined _wait_pid($pid, 0);
    my $status = _wait_pid($pid, $o{timeout} // $self->{stop_timeout});
    if (!defined $status) {
        push @problems, "nginx did not exit within "
            . ($o{timeout} // $self->{stop_timeout})
            . "s of SIGQUIT (graceful shutdown hang: live non-cancelable timers"
            . " or open connections?) -- children: "
            . join(', ', map { "$_->{pid} '$_->{cmd}'" } _children_of($pid));
        kill 'TERM', $pid;
        $status = _wait_pid($pid, 5);
        if (!defined $status) {
            kill 'KILL', $pid, _children_pids($pid);
            $status = _wait_pid($pid, 5);
        }
    }
    elsif ($status != 0) {
        push @problems, "nginx master exited with " . _describe_status($status);
    }
    my @left = grep { _alive($_) } @children;
    if (@left) {
        push @problems, "worker process(es) still alive after master exit: @left";
        kill 'KILL', @left;
    }
    _forget_pid($pid);
    delete $self->{pid};

    if ($o{check} // $self->{check_log_at_stop}) {
        $self->check_log(extra => \@problems, quiet_pass => $o{quiet_pass},
                         final => 1);
    }
    elsif (@problems) {
        local $Test::Builder::Level = $Test::Builder::Level + 1;
        Test::More::ok(0, 'nginx stopped cleanly');
        Test::More::diag("McpTest: $_") for @problems;
    }
    return $self;
}

sub _stop_at_exit {
    my ($self) = @_;
    return unless $self->{pid};
    local ($?, $!, $@);
    eval { $self->stop(quiet_pass => 1); 1 }
        or eval { $self->_kill_hard };
}

sub _kill_hard {
    my ($self) = @_;
    my $pid = $self->{pid} or return;
    my @kids = _children_pids($pid);
    kill 'TERM', $pid;
    if (!defined _wait_pid($pid, 3)) {
        kill 'KILL', $pid, @kids;
        _wait_pid($pid, 3);
    }
    kill 'KILL', grep { _alive($_) } @kids;
    _forget_pid($pid);
    delete $self->{pid};
}

sub _cleanup_prefix {
    my ($self) = @_;
    return if $self->{pid} || !$self->{prefix} || !-d $self->{prefix};
    return if $self->{cleaned}++;
    if ($ENV{MCP_TEST_KEEP}) {
        Test::More::note("McpTest: keeping prefix $self->{prefix}");
        return;
    }
    File::Path::remove_tree($self->{prefix});
}

sub DESTROY {
    my ($self) = @_;
    return unless $self->{owner} && $self->{owner} == $$;
    return if ${^GLOBAL_PHASE} eq 'DESTRUCT' && !$self->{pid};
    $self->_stop_at_exit;
    $self->_cleanup_prefix;
}

1;
