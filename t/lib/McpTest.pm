package McpTest;

# In-repo test harness for ngx_http_mcp_module.
#
# Starts a private nginx instance per test (temp prefix, free loopback port),
# enforces error-log discipline, and provides a small HTTP/1.1 + SSE client
# plus MCP (Streamable HTTP) helpers.  Core Perl only.  See the POD at the end
# of this file for the API summary.

use strict;
use warnings;

use Carp qw(croak);
use Config ();
use Cwd ();
use Exporter ();
use File::Basename ();
use File::Path ();
use File::Spec;
use File::Temp ();
use IO::Select;
use IO::Socket::INET;
use JSON::PP ();
use POSIX qw(WNOHANG);
use Scalar::Util qw(weaken refaddr blessed);
use Test::More ();
use Time::HiRes ();

our $VERSION = '0.01';

our @ISA       = ('Exporter');
our @EXPORT_OK = qw(encode_json decode_json parse_sse parse_sse_chunk
                    decode_chunked explain_response http_request wait_until);
our %EXPORT_TAGS = (all => \@EXPORT_OK);

# Repository root: this file lives in <repo>/t/lib/McpTest.pm.
our $REPO_ROOT = Cwd::abs_path(File::Spec->catdir(
    File::Basename::dirname(Cwd::abs_path(__FILE__)), '..', '..'));

our $DEFAULT_PROTOCOL_VERSION = '2025-11-25';

# Per-test-file wall clock guard (seconds); 0 disables.
# Precedence: $ENV{MCP_TEST_TIMEOUT} > "use McpTest timeout => N" > 120.
our $TIMEOUT = 120;

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

sub _now { Time::HiRes::time() }

###########################################################################
# Process-wide guards: timeout, SIGPIPE, cleanup of nginx on exit.
###########################################################################

my %LIVE;          # refaddr => weak ref of every instance created by this process
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
# Construction and configuration
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

sub prefix { $_[0]{prefix} }

# 1-based: port() / port(1) is the main server's port, port(2) is %%PORT2%% ...
sub port {
    my ($self, $n) = @_;
    $n //= 1;
    croak "port($n): only $self->{nports} port(s) allocated (use ports => N)"
        if $n < 1 || $n > $self->{nports};
    return $self->{ports}[$n - 1];
}

# Grab N distinct free loopback ports: bind them all at once so they differ,
# then release.  A race with another process is handled by start() retrying.
sub _pick_ports {
    my ($self) = @_;
    my @socks;
    for (1 .. $self->{nports}) {
        my $s = IO::Socket::INET->new(
            LocalAddr => '127.0.0.1', LocalPort => 0, Proto => 'tcp', Listen => 1,
        ) or croak "cannot bind a free port: $!";
        push @socks, $s;
    }
    $self->{ports} = [ map { $_->sockport } @socks ];
    close $_ for @socks;
}

sub module_path {
    my ($self) = @_;
    my $m = ref $self ? $self->{module} : 1;
    return $m if defined $m && $m ne '1' && $m ne '0';
    return $ENV{MCP_MODULE} // "$REPO_ROOT/build/ngx_http_mcp_module.so";
}

# MCP_MODULE=static: the nginx binary has the module linked in.
sub _load_module_line {
    my ($self) = @_;
    return '' unless $self->{module};
    return '' if $self->module_path eq 'static';
    return 'load_module ' . $self->module_path . ";\n";
}

# Replace %%PORT%%, %%PORTn%%, %%PREFIX%% and %%LOAD_MODULE%%.
sub subst {
    my ($self, $text) = @_;
    return '' unless defined $text;
    $text =~ s/%%PORT(\d*)%%/$self->port($1 eq '' ? 1 : $1)/ge;
    $text =~ s/%%PREFIX%%/$self->{prefix}/g;
    $text =~ s/%%LOAD_MODULE%%/$self->_load_module_line/ge;
    return $text;
}

# Which *_temp_path directives this nginx binary understands.
my %FEATURES_CACHE;
sub _nginx_configure_args {
    my ($self) = @_;
    my $bin = $self->{nginx};
    return $FEATURES_CACHE{$bin} //= do {
        my (undef, $out) = _run_capture([$bin, '-V'], 10);
        $out // '';
    };
}

sub render_config {
    my ($self) = @_;
    return $self->subst($self->{conf}) if defined $self->{conf};

    my $p    = $self->{prefix};
    my $args = $self->_nginx_configure_args;
    my @temp = ("client_body_temp_path $p/tmp/client_body;");
    for my $m (qw(proxy fastcgi uwsgi scgi)) {
        next if $args =~ /--without-http_${m}_module/;
        push @temp, "${m}_temp_path $p/tmp/$m;";
    }
    my $temp = join "\n    ", @temp;
    my $user = defined $self->{user} ? "user $self->{user};\n" : '';
    my $listen = length $self->{listen} ? " $self->{listen}" : '';

    my $conf = <<"CONF";
# Generated by t/lib/McpTest.pm -- do not edit.
%%LOAD_MODULE%%${user}worker_processes $self->{workers};
master_process on;
daemon off;
pid $p/logs/nginx.pid;
error_log $p/logs/error.log $self->{log_level};

$self->{main}

events {
    worker_connections 1024;
$self->{events}
}

http {
    access_log $p/logs/access.log;
    $temp

$self->{http}

    server {
        listen 127.0.0.1:%%PORT%%$listen;
        server_name localhost;

$self->{server}
    }
}
CONF
    return $self->subst($conf);
}

sub conf_file { "$_[0]{prefix}/conf/nginx.conf" }

sub write_config {
    my ($self, %o) = @_;
    for my $k (qw(http server main events conf)) {
        $self->{$k} = $o{$k} if exists $o{$k};
    }
    _spew($self->conf_file, $self->render_config);
    return $self;
}

# Write a file inside the prefix (path relative to it); returns the full path.
sub write_file {
    my ($self, $rel, $content) = @_;
    my $path = "$self->{prefix}/$rel";
    File::Path::make_path(File::Basename::dirname($path));
    _spew($path, $content);
    return $path;
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

sub start {
    my ($self) = @_;
    croak "nginx already running (pid $self->{pid})" if $self->{pid};
    if ($self->{module} && $self->module_path ne 'static' && !-e $self->module_path) {
        croak "McpTest: module not found at " . $self->module_path
            . " (build it first, or set MCP_MODULE=/path/to/ngx_http_mcp_module.so)";
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

sub master_pid { $_[0]{pid} }

# Reaping the master here keeps its status for stop() (see _wait_pid).
sub is_running {
    my ($self) = @_;
    return 0 unless $self->{pid};
    return defined _wait_pid($self->{pid}, 0) ? 0 : 1;
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

sub _children_pids { map { $_->{pid} } _children_of($_[0]) }

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

###########################################################################
# SSE
###########################################################################

# Send a request and return an McpTest::SSE stream once headers arrived.
# Same options as request(); default GET mcp_path with Accept: text/event-stream.
sub sse_open {
    my ($self, %o) = @_;
    $o{method} = uc($o{method} // 'GET');
    $o{path} //= $self->{mcp_path};
    $o{headers} //= { Accept => 'text/event-stream' };
    $o{port} //= $self->port;
    $o{host} //= '127.0.0.1';
    my $timeout = $o{timeout} // 5;
    my $r = { status => 0, headers => {}, header_list => [], raw => '', body => '' };
    my $sock = $self->connect(port => $o{port}, timeout => $timeout);
    $r->{request} = defined $o{raw} ? $o{raw} : _build_request(%o, keepalive => 1);
    if (!$sock) {
        $r->{error} = "connect failed: $!";
    }
    else {
        my $deadline = _now() + $timeout;
        my $werr = _write_all($sock, $r->{request}, $deadline);
        my $err  = _read_head($sock, $r, $deadline, $o{method});
        $r->{error} = $werr ? "$werr; $err" : $err if $err;
    }
    if ($r->{error} && !$o{quiet}) {
        Test::More::diag("McpTest: sse_open failed: $r->{error}\n" . explain_response($r));
    }
    return McpTest::SSE->new($sock, $r, $o{method});
}

# Stateless helpers for unit tests / decoding complete bodies.
sub parse_sse {
    my ($text) = @_;
    my $p = McpTest::SSEParser->new;
    return ($p->feed($text), $p->finish);
}

sub parse_sse_chunk {
    my ($text) = @_;
    return McpTest::SSEParser->new->feed($text);
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
# MCP helpers
###########################################################################

sub mcp_path { $_[0]{mcp_path} }

sub next_id { $_[0]{next_id}++ }

sub _mcp_headers {
    my ($self, $sid, %o) = @_;
    my %h = (
        'Content-Type' => 'application/json',
        'Accept'       => 'application/json, text/event-stream',
    );
    $h{'Mcp-Session-Id'} = $sid if defined $sid;
    my $pv = exists $o{protocol_version} ? $o{protocol_version}
           : defined $sid ? ($self->{session_pv}{$sid} // $self->{protocol_version})
           : undef;
    $h{'MCP-Protocol-Version'} = $pv if defined $pv;
    # Overrides: case-insensitive; undef value omits the header.
    for my $k (keys %{ $o{headers} // {} }) {
        delete $h{$_} for grep { lc $_ eq lc $k } keys %h;
        $h{$k} = $o{headers}{$k};
    }
    return \%h;
}

# POST one JSON-RPC message (or batch / raw string) to the MCP endpoint.
# Options: headers => {Name => value|undef}, protocol_version, path, timeout,
#          keepalive, conn, port, stream => 1 (return an McpTest::SSE).
sub mcp_post {
    my ($self, $sid, $msg, %o) = @_;
    my $body = ref $msg ? encode_json($msg) : $msg;
    my %req = (
        method  => $o{method} // 'POST',
        path    => $o{path} // $self->{mcp_path},
        headers => $self->_mcp_headers($sid, %o),
        body    => $body,
        map { exists $o{$_} ? ($_ => $o{$_}) : () } qw(timeout keepalive conn port quiet),
    );
    return $self->sse_open(%req) if $o{stream};
    my $r = $self->request(%req);
    decode_mcp_response($r);
    return $r;
}

# GET stream on the MCP endpoint (server-initiated messages).
# Options: last_event_id, headers, protocol_version, timeout.
sub mcp_get_stream {
    my ($self, $sid, %o) = @_;
    my $h = $self->_mcp_headers($sid, %o,
        headers => { 'Content-Type' => undef, Accept => 'text/event-stream',
                     (defined $o{last_event_id} ? ('Last-Event-ID' => $o{last_event_id}) : ()),
                     %{ $o{headers} // {} } });
    return $self->sse_open(method => 'GET', path => $o{path} // $self->{mcp_path},
                           headers => $h, timeout => $o{timeout}, quiet => $o{quiet},
                           (defined $o{port} ? (port => $o{port}) : ()));
}

# DELETE the session.  Returns the HTTP response.
sub mcp_delete {
    my ($self, $sid, %o) = @_;
    my $h = $self->_mcp_headers($sid, %o,
        headers => { 'Content-Type' => undef, Accept => undef, %{ $o{headers} // {} } });
    return $self->request(method => 'DELETE', path => $o{path} // $self->{mcp_path},
                          headers => $h, timeout => $o{timeout},
                          (defined $o{port} ? (port => $o{port}) : ()));
}

# Fill $r->{json}, $r->{events}, $r->{messages}, $r->{session_id}.
sub decode_mcp_response {
    my ($r) = @_;
    my $ct = lc($r->{headers}{'content-type'} // '');
    $r->{messages}   = [];
    $r->{session_id} = $r->{headers}{'mcp-session-id'};
    if ($ct =~ m{^application/json\b} && length $r->{body}) {
        $r->{json} = eval { decode_json($r->{body}) };
        $r->{json_error} = $@ if $@;
        if (defined $r->{json}) {
            push @{ $r->{messages} }, ref $r->{json} eq 'ARRAY' ? @{ $r->{json} } : $r->{json};
        }
    }
    elsif ($ct =~ m{^text/event-stream\b}) {
        $r->{events} = [ McpTest::SSEParser->new->feed($r->{body}) ];
        for my $ev (@{ $r->{events} }) {
            next unless defined $ev->{data} && length $ev->{data};
            $ev->{json} = eval { decode_json($ev->{data}) };
            push @{ $r->{messages} }, $ev->{json} if defined $ev->{json};
        }
    }
    return $r;
}

# initialize + notifications/initialized.  Dies (with the exchange) on failure.
# Options: protocol_version, capabilities, client_info, params (extra/override),
#          headers, id, skip_initialized, path (default mcp_path), port.
# Returns ($session_id, $initialize_result, $http_response); scalar: $session_id.
sub mcp_initialize {
    my ($self, %o) = @_;
    my $id = $o{id} // $self->next_id;
    my $params = {
        protocolVersion => $o{protocol_version} // $self->{protocol_version},
        capabilities    => $o{capabilities} // {},
        clientInfo      => $o{client_info} // { name => 'mcp-test', version => '1.0' },
        %{ $o{params} // {} },
    };
    my $r = $self->mcp_post(undef,
        { jsonrpc => '2.0', id => $id, method => 'initialize', params => $params },
        headers => $o{headers}, timeout => $o{timeout}, path => $o{path}, port => $o{port});
    croak "mcp_initialize: expected HTTP 200, got $r->{status}\n" . explain_response($r)
        unless $r->{status} == 200;
    my ($resp) = grep { ref $_ eq 'HASH' && defined $_->{id} && "$_->{id}" eq "$id" }
                 @{ $r->{messages} };
    croak "mcp_initialize: no successful JSON-RPC response with id $id\n" . explain_response($r)
        unless $resp && ref $resp->{result} eq 'HASH';
    my $sid = $r->{headers}{'mcp-session-id'};
    $self->{session_pv}{$sid} = $resp->{result}{protocolVersion}
        if defined $sid && defined $resp->{result}{protocolVersion};

    unless ($o{skip_initialized}) {
        my $n = $self->mcp_post($sid, { jsonrpc => '2.0', method => 'notifications/initialized' },
                                timeout => $o{timeout}, path => $o{path}, port => $o{port});
        croak "mcp_initialize: notifications/initialized: expected HTTP 202, got $n->{status}\n"
            . explain_response($n) unless $n->{status} == 202;
    }
    return wantarray ? ($sid, $resp->{result}, $r) : $sid;
}

# Send a request; returns the matching JSON-RPC response message (hashref
# with result or error), or undef.  List context: ($message, $http_response).
# Options: id (default auto-increment) plus mcp_post options.
sub mcp_request {
    my ($self, $sid, $method, $params, %o) = @_;
    my $id = exists $o{id} ? delete $o{id} : $self->next_id;
    my %msg = (jsonrpc => '2.0', id => $id, method => $method);
    $msg{params} = $params if defined $params;
    my $r = $self->mcp_post($sid, \%msg, %o);
    my ($resp) = grep { ref $_ eq 'HASH' && defined $_->{id} && "$_->{id}" eq "$id"
                        && (exists $_->{result} || exists $_->{error}) } @{ $r->{messages} // [] };
    if (!$resp && !$o{quiet}) {
        Test::More::diag("McpTest: no JSON-RPC response with id $id to '$method'\n"
            . explain_response($r));
    }
    return wantarray ? ($resp, $r) : $resp;
}

# Like mcp_request but returns the result, or the error object ({code,
# message, data}) for error responses.  List: ($value, $message, $http_response).
sub mcp_call {
    my ($self, @args) = @_;
    my ($resp, $r) = $self->mcp_request(@args);
    my $v = !$resp ? undef : exists $resp->{error} ? $resp->{error} : $resp->{result};
    return wantarray ? ($v, $resp, $r) : $v;
}

# Send a notification (no id); returns the HTTP response (expect 202).
sub mcp_notify {
    my ($self, $sid, $method, $params, %o) = @_;
    my %msg = (jsonrpc => '2.0', method => $method);
    $msg{params} = $params if defined $params;
    return $self->mcp_post($sid, \%msg, %o);
}

###########################################################################
# Small utilities
###########################################################################

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

###########################################################################
package McpTest::SSEParser;
# Incremental text/event-stream parser following the WHATWG SSE rules:
# lines end in CRLF, LF or CR; ':' starts a comment; one leading space after
# the colon is removed; data lines are joined with "\n"; a blank line ends
# an event.  Deviation (useful for testing): an event is reported whenever
# any field was seen (e.g. an id-only "priming" event), with data => undef
# when no data line was present.  An unterminated event at EOF is dropped.

use strict;
use warnings;

sub new {
    bless { buf => '', comments => 0, pending_comments => 0, last_id => '',
            bom_done => 0 }, shift;
}

sub _reset_event {
    my ($self) = @_;
    delete @$self{qw(ev_id ev_event ev_data ev_retry ev_seen ev_raw)};
}

# Feed bytes; returns the list of events completed by them.
# Event: { id, event, type, data, retry, last_id, comments, raw }
#   id     - value of this event's id field (undef if none)
#   event  - event field (undef if none); type = event // 'message'
#   data   - data lines joined by "\n" (undef if no data line)
#   retry  - integer retry field (undef if none or invalid)
#   last_id  - the stream's last-event-id after this event (spec semantics)
#   comments - comment lines seen since the previous event
sub feed {
    my ($self, $text) = @_;
    $self->{buf} .= $text;
    if (!$self->{bom_done}) {
        return () if length $self->{buf} < 3 && "\xEF\xBB\xBF" =~ /^\Q$self->{buf}\E/;
        $self->{buf} =~ s/^\xEF\xBB\xBF//;
        $self->{bom_done} = 1;
    }
    my @events;
    while ($self->{buf} =~ /\r\n|\r|\n/) {
        my ($pos, $end) = ($-[0], $+[0]);
        # A CR at the very end may be the first half of a CRLF split across
        # reads: wait for the next byte.
        last if $end == length($self->{buf}) && substr($self->{buf}, $pos) eq "\r";
        my $line = substr($self->{buf}, 0, $pos);
        substr($self->{buf}, 0, $end, '');
        push @events, $self->_line($line);
    }
    return @events;
}

# End of stream: a trailing lone CR terminates its line; an unterminated
# event is discarded (per spec).  Returns any events completed.
sub finish {
    my ($self) = @_;
    my @ev;
    if ($self->{buf} =~ /\r\z/) {
        chop $self->{buf};
        @ev = $self->_line(delete $self->{buf});
    }
    $self->{buf} = '';
    $self->_reset_event;
    return @ev;
}

sub comments { $_[0]{comments} }
sub last_id  { $_[0]{last_id} }

sub _line {
    my ($self, $line) = @_;
    if ($line eq '') {
        return () unless $self->{ev_seen};
        my $ev = {
            id       => $self->{ev_id},
            event    => $self->{ev_event},
            type     => $self->{ev_event} // 'message',
            data     => $self->{ev_data} ? join("\n", @{ $self->{ev_data} }) : undef,
            retry    => $self->{ev_retry},
            last_id  => $self->{last_id},
            comments => $self->{pending_comments},
            raw      => $self->{ev_raw},
        };
        $self->{pending_comments} = 0;
        $self->_reset_event;
        return ($ev);
    }
    if ($line =~ /^:/) {
        $self->{comments}++;
        $self->{pending_comments}++;
        return ();
    }
    $self->{ev_raw} .= "$line\n";
    my ($field, $value) = $line =~ /^([^:]*)(?::(.*))?$/s;
    $value //= '';
    $value =~ s/^ //;
    if    ($field eq 'data')  { push @{ $self->{ev_data} }, $value; $self->{ev_seen} = 1 }
    elsif ($field eq 'event') { $self->{ev_event} = $value; $self->{ev_seen} = 1 }
    elsif ($field eq 'id') {
        $self->{ev_seen} = 1;
        if ($value !~ /\0/) { $self->{ev_id} = $value; $self->{last_id} = $value }
    }
    elsif ($field eq 'retry') {
        $self->{ev_seen} = 1;
        $self->{ev_retry} = $value + 0 if $value =~ /^\d+$/;
    }
    # Unknown fields are ignored.
    return ();
}

###########################################################################
package McpTest::SSE;
# A live event-stream response.  Fields: status, reason, headers,
# header_list, error, raw (head bytes), body (decoded bytes so far),
# events (all events returned so far), done, timed_out.

use strict;
use warnings;

sub new {
    my ($class, $sock, $r, $method) = @_;
    my $self = bless { %$r, sock => $sock, events => [], queue => [],
                       parser => McpTest::SSEParser->new, done => 0 }, $class;
    if ($r->{error} || !$sock) {
        $self->{done} = 1;
        CORE::close($sock) if $sock && $sock->opened;
        return $self;
    }
    $self->{decoder} = McpTest::Body->for_response($r, $method);
    my $buf = delete ${*$sock}{mcptest_buf} // '';
    $self->_consume($buf) if length $buf;
    return $self;
}

sub status  { $_[0]{status} }
sub headers { $_[0]{headers} }
sub header  { $_[0]{headers}{ lc $_[1] } }
sub is_done { $_[0]{done} }

sub _consume {
    my ($self, $data) = @_;
    my $dec  = $self->{decoder};
    my $body = $dec->feed($data);
    if ($dec->{error}) {
        $self->{error} = "bad body framing: $dec->{error}";
        $self->_end;
        return;
    }
    $self->{body} .= $body;
    for my $ev ($self->{parser}->feed($body)) {
        if (defined $ev->{data} && length $ev->{data}) {
            my $j = eval { McpTest::decode_json($ev->{data}) };
            $ev->{json} = $j if defined $j;
        }
        push @{ $self->{queue} }, $ev;
    }
    $self->_end if $dec->done;
}

sub _end {
    my ($self) = @_;
    $self->{done} = 1;
    push @{ $self->{queue} }, $self->{parser}->finish;
    CORE::close($self->{sock}) if $self->{sock} && $self->{sock}->opened;
}

# Next event, or undef on timeout (timed_out set) / end of stream (done set).
sub next_event {
    my ($self, $timeout) = @_;
    my $deadline = McpTest::_now() + ($timeout // 5);
    $self->{timed_out} = 0;
    while (1) {
        if (@{ $self->{queue} }) {
            my $ev = shift @{ $self->{queue} };
            push @{ $self->{events} }, $ev;
            return $ev;
        }
        return undef if $self->{done};
        my ($data, $err) = McpTest::_read_some($self->{sock}, $deadline);
        if (!defined $data) {
            if ($err eq 'timeout') { $self->{timed_out} = 1; return undef }
            if ($self->{decoder}{kind} ne 'close') {
                $self->{error} = "$err before end of body";
            }
            $self->_end;
            next;
        }
        $self->_consume($data);
    }
}

# Events until end of stream or until $timeout elapses in total.
sub read_all {
    my ($self, $timeout) = @_;
    my $deadline = McpTest::_now() + ($timeout // 5);
    my @ev;
    while (defined(my $ev = $self->next_event($deadline - McpTest::_now()))) {
        push @ev, $ev;
    }
    return @ev;
}

# Read the rest of the body (e.g. a JSON error response) and return all of it.
sub read_body {
    my ($self, $timeout) = @_;
    1 while defined $self->next_event($timeout // 5);
    return $self->{body};
}

sub comments { $_[0]{parser}->comments }
sub last_id  { $_[0]{parser}->last_id }

sub close {
    my ($self) = @_;
    $self->{done} = 1;
    CORE::close($self->{sock}) if $self->{sock} && $self->{sock}->opened;
}

package McpTest;

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
path), C<log_level> (info), C<user> (root when run as root), C<mcp_path>
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

=item $t->port($n = 1), $t->prefix, $t->conf_file, $t->module_path, $t->subst($text)

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
linked in), MCP_NGINX or NGINX_BIN (the nginx binary,
default /usr/sbin/nginx),
MCP_NGINX_PRELOAD (LD_PRELOAD for nginx, for sanitizer builds; ASAN_OPTIONS
etc. pass through, except that C<fast_unwind_on_malloc=0> is added to
ASAN_OPTIONS unless it sets fast_unwind_on_malloc itself, so leak stacks
reach the module's frames; see C<McpTest::asan_options_for_preload>), MCP_TEST_KEEP=1 (keep temp prefixes), MCP_TEST_TIMEOUT
(per-file guard, default 120 s, 0 = off; overrides C<use McpTest timeout
=E<gt> N>), MCP_TEST_START_TIMEOUT (default 10), MCP_TEST_TMPDIR (where
prefixes are created).

=cut
