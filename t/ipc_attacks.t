# Attacks on the workers' wake-up channel (ngx_http_mcp_ipc.c), as a
# local user of another uid would make them: squat the names the next
# workers will bind, spray datagrams at the workers, then wait for a
# reload and a worker's crash.  Before, the channel was an abstract unix
# socket named after the worker's pid: the squat made every new worker
# exit with "bind() of the worker socket failed", and nginx kept none
# (every server block stopped answering).  Now the sockets are files in
# mcp_ipc_path, a directory closed to everyone but nginx's user: the
# stranger can neither bind there nor send, every worker stays up, and a
# sampling answer POSTed to another worker still reaches its call.
#
# Also: a mcp_ipc_path the workers cannot trust (here a plain file) is
# said once by each worker, which still serves and looks at the zone on
# a timer; and a session's 33rd stream gets -32000 "Too many streams",
# as a GET past the cap does, with no [error] line.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Socket qw(AF_UNIX SOCK_DGRAM pack_sockaddr_un);
use POSIX ();
use McpTest;
use McpAssert;
use McpStream;

plan skip_all => 'the attacker needs another uid: run as root' if $> != 0;

my $STRANGER = 65534;    # nobody

my $t = streaming_server(
    location => 'mcp_request_timeout 30s;',
    server   => 'location = /plain { return 200 "plain\n"; }',
);

my $dir = $t->prefix . '/tmp/mcp_ipc';
my %CAPS = (sampling => {}, elicitation => {});

sub text_of { ((($_[0] // {})->{result} // {})->{content} // [ {} ])->[0]{text} }

# --- the directory ------------------------------------------------------------------------

{
    my @st = lstat $dir;
    ok(@st && -d _, "mcp_ipc_path defaults to tmp/mcp_ipc beside client_body_temp_path");
    is(sprintf('%04o', $st[2] & 07777), '0700', 'the directory is closed to others (0700)');
    is($st[4], 0, 'the directory belongs to the workers\' user (root here)');
    my @workers = $t->worker_pids;
    is(scalar(grep { -S "$dir/$_" } @workers), scalar @workers,
       'every worker has its socket in the directory (' . scalar(@workers) . ' workers)');
}

# --- the stranger: squats, binds, sprays; holds its sockets until told ---------------------

# Runs as uid 65534; reports what it managed on $w, then waits for EOF on $r.
sub stranger {
    my ($w, $r, @workers) = @_;
    POSIX::setgid($STRANGER);
    POSIX::setuid($STRANGER) or die "setuid: $!";
    die "still root\n" if $> == 0;

    open my $fh, '<', '/proc/sys/kernel/ns_last_pid' or die "ns_last_pid: $!";
    my $last = <$fh>;
    chomp $last;

    my (@held, %got);
    $got{last} = $last;

    # the old attack: the abstract names of the next 400 pids
    for my $pid ($last + 1 .. $last + 400) {
        socket(my $s, AF_UNIX, SOCK_DGRAM, 0) or next;
        if (bind($s, pack_sockaddr_un("\0ngx_http_mcp/$pid"))) {
            push @held, $s;
            $got{abstract_bound}++;
        }
    }

    # the same names in the directory: refused
    for my $pid ($last + 1 .. $last + 400) {
        socket(my $s, AF_UNIX, SOCK_DGRAM, 0) or next;
        if (bind($s, pack_sockaddr_un("$dir/$pid"))) {
            push @held, $s;
            $got{dir_bound}++;
        }
        else {
            $got{dir_refused}++ if $! == POSIX::EACCES;
        }
    }

    # spray every worker, at both kinds of name
    socket(my $spray, AF_UNIX, SOCK_DGRAM, 0) or die "socket: $!";
    for my $round (1 .. 200) {
        for my $pid (@workers) {
            if (send($spray, "x", 0, pack_sockaddr_un("$dir/$pid"))) {
                $got{dir_sent}++;
            }
            elsif ($! == POSIX::EACCES) {
                $got{dir_send_refused}++;
            }
            $got{abstract_sent}++ if send($spray, "x", 0, pack_sockaddr_un("\0ngx_http_mcp/$pid"));
        }
    }

    print $w join(' ', map { "$_=$got{$_}" } sort keys %got), "\n";
    close $w;
    my $eof = <$r>;    # hold the squat until the parent is done
    POSIX::_exit(0);
}

pipe(my $from_r, my $from_w) or die;
pipe(my $to_r, my $to_w) or die;
my @before = $t->worker_pids;
my $child = fork // die "fork: $!";
if ($child == 0) {
    close $from_r;
    close $to_w;
    eval { stranger($from_w, $to_r, @before) };
    print $from_w "error=$@\n";
    POSIX::_exit(1);
}
close $from_w;
close $to_r;

my $line = <$from_r> // '';
chomp $line;
my %got = map { split /=/, $_, 2 } split / /, $line;
is($got{error}, undef, 'the stranger ran as uid 65534') or diag($line);
cmp_ok($got{abstract_bound} // 0, '>', 0, "the stranger squats abstract names of the next pids"
       . " ($line)");
is($got{dir_bound} // 0, 0, 'the stranger binds no name in mcp_ipc_path');
is($got{dir_refused} // 0, 400, 'each of its 400 binds there is refused (EACCES)');
is($got{dir_sent} // 0, 0, 'no datagram of the stranger reaches a worker socket');
is($got{dir_send_refused} // 0, 200 * @before, 'each of its sends there is refused (EACCES)');

# --- a reload and a crash under the squat --------------------------------------------------

$t->reload;
my @after_reload = $t->worker_pids;
is(scalar @after_reload, 4, 'after a reload under the squat: 4 workers');
ok(!(grep { my $p = $_; grep { $_ == $p } @before } @after_reload),
   'they are new workers (new pids)');
# the squat must have covered them, or the reload proves nothing
my @squatted = grep { $_ > ($got{last} // 0) && $_ <= ($got{last} // 0) + 400 } @after_reload;
cmp_ok(scalar @squatted, '>', 0, scalar(@squatted) . ' of them have a pid whose abstract name the '
       . 'stranger holds');

my $victim = $after_reload[0];
kill 'KILL', $victim;
$t->expect_log_any(qr/worker process $victim exited on signal 9/);
my $respawned = McpTest::wait_until(10, sub {
    my @w = $t->worker_pids;
    @w == 4 && !(grep { $_ == $victim } @w) ? \@w : undef;
});
ok($respawned, 'after a worker\'s SIGKILL under the squat: 4 workers again');

{
    my $r = $t->request(path => '/plain');
    is($r->{status}, 200, 'a plain location answers');
    my @w = $t->worker_pids;
    is(scalar(grep { -S "$dir/$_" } @w), scalar @w, 'every worker bound its socket');
    unlike($t->error_log, qr/bind\(\) of the worker socket|cannot be respawned|polls the zone/,
           'no worker failed to bind or fell back to polling');
}

# --- cross-worker wake-ups still work: answers on fresh connections ------------------------

{
    my $rounds = 24;
    my ($ok, @fail) = (0);
    for my $n (1 .. $rounds) {
        my ($s_n) = $t->mcp_initialize(capabilities => \%CAPS);
        my $s = call_stream($t, $s_n, "round-$n", 'test_sampling', { prompt => "p$n" },
                            tag => "call-$n");
        take($s, 3);
        my $req = take($s, 3);
        my $r = answer($t, $s_n, $req && $req->{json}{id}, sampling_answer("answer $n"),
                       tag => "answer-$n");
        my @ev = take_all($s, 3);
        my $text = text_of($ev[-1] && $ev[-1]{json}) // '';
        if ($r->{status} == 202 && $text eq "LLM response: answer $n" && $s->is_done) { $ok++ }
        else { push @fail, "round $n: answer $r->{status}, result '$text'" }
    }
    is($ok, $rounds, "$rounds sampling calls answered on fresh connections: all complete")
        or diag(join "\n", @fail);
    my $pids = pids_by_tag($t, [ map { ("call-$_", "answer-$_") } 1 .. $rounds ]);
    my @cross = grep { $pids->{"call-$_"} && $pids->{"answer-$_"}
                       && $pids->{"call-$_"}[0] != $pids->{"answer-$_"}[0] } 1 .. $rounds;
    cmp_ok(scalar @cross, '>=', 1, scalar(@cross) . " of $rounds answers reached another worker"
           . ' than the waiting call');
}

close $to_w;
waitpid $child, 0;

# --- a session's 33rd stream ---------------------------------------------------------------

{
    my ($sid) = $t->mcp_initialize(capabilities => \%CAPS);
    my (@open, @asked);
    for my $n (1 .. 32) {
        my $s = call_stream($t, $sid, "hold-$n", 'test_sampling', { prompt => "h$n" });
        take($s, 3);
        my $req = take($s, 3);
        push @open, $s;
        push @asked, $req && $req->{json}{id};
    }
    is(scalar(grep { $_->status == 200 && !$_->is_done } @open), 32,
       '32 sampling calls hold 32 streams of one session');

    my $mark = $t->log_mark;
    my $r = $t->mcp_post($sid, call_msg('over', 'test_sampling', { prompt => 'one more' }));
    is($r->{status}, 200, 'the 33rd call: 200');
    my $j = $r->{json} // {};
    is($j->{id}, 'over', 'the 33rd call: its own id');
    is(($j->{error} // {})->{code}, -32000, 'the 33rd call: -32000');
    is(($j->{error} // {})->{message}, 'Too many streams', 'the 33rd call: "Too many streams"');
    my $log = $t->log_since($mark);
    unlike($log, qr/\[(error|crit|alert|emerg)\]/, 'no [error] line for the client\'s own limit');
    like($log, qr/\[info\].*Too many streams/, 'logged at [info]');

    # the 32 end as their answers come: the worker exits when asked
    answer($t, $sid, $_, sampling_answer('late')) for grep { defined } @asked;
    my $ended = grep { take_all($_, 3); $_->is_done } @open;
    is($ended, 32, 'the 32 calls end with their answers');
}

$t->stop;

# --- a directory the workers cannot trust: they say so and poll ----------------------------

{
    my $bad = McpTest->new(
        listen => 'reuseport',
        http   => "mcp_ipc_path %%PREFIX%%/tmp/not-a-dir;\n"
                . "log_format mcp_pids '\$pid \$http_x_tag \$request \$status';",
        server => "access_log %%PREFIX%%/logs/pids.log mcp_pids;\n"
                . "location = /mcp { mcp on; mcp_builtin everything; mcp_request_timeout 30s; }",
    );
    $bad->write_file('tmp/not-a-dir', "a file\n");
    $bad->expect_log_error(qr/mcp_ipc_path .* is not a directory/);
    $bad->start;

    my @w = $bad->worker_pids;
    my @said = ($bad->error_log =~ /(\d+)#\d+: mcp: mcp_ipc_path .* polls the zone/g);
    is_deeply([ sort { $a <=> $b } @said ], [ sort { $a <=> $b } @w ],
              'each worker says once that it polls (' . scalar(@w) . ')');

    my ($ok, $rounds) = (0, 12);
    for my $n (1 .. $rounds) {
        my ($s_n) = $bad->mcp_initialize(capabilities => \%CAPS);
        my $s = call_stream($bad, $s_n, "r$n", 'test_sampling', { prompt => "p$n" });
        take($s, 3);
        my $req = take($s, 3);
        my $r = answer($bad, $s_n, $req && $req->{json}{id}, sampling_answer("a$n"));
        my @ev = take_all($s, 3);
        $ok++ if $r->{status} == 202 && (text_of($ev[-1] && $ev[-1]{json}) // '') eq "LLM response: a$n";
    }
    is($ok, $rounds, "without wake-ups: $rounds sampling calls answered on fresh connections"
       . ' all complete');
    $bad->stop;
}

# --- master_process off: the one process keeps root's uid, so does the directory -----------

{
    my $single = McpTest->new(workers => 0, conf => <<'NGX');
%%LOAD_MODULE%%master_process off;
daemon off;
pid %%PREFIX%%/logs/nginx.pid;
error_log %%PREFIX%%/logs/error.log info;
events { worker_connections 256; }
http {
    access_log off;
    client_body_temp_path %%PREFIX%%/tmp/client_body;
    server {
        listen 127.0.0.1:%%PORT%%;
        location = /mcp { mcp on; mcp_builtin everything; }
    }
}
NGX
    {
        # a single process exits without freeing nginx's own event arrays
        # (no frame of the module's): LeakSanitizer's exit code would be
        # nginx's; the multi-process instances above check the module
        local $ENV{ASAN_OPTIONS} = join ':', grep { length } $ENV{ASAN_OPTIONS} // '',
                                                          'detect_leaks=0'
            if $ENV{MCP_NGINX_PRELOAD};
        $single->start;
    }
    my $sdir = $single->prefix . '/tmp/mcp_ipc';
    my @st = lstat $sdir;
    is($st[4], 0, 'master_process off, no user directive: the directory stays root\'s'
       . ' (the process never takes nobody\'s uid)');
    ok(-S "$sdir/" . $single->master_pid, 'the process bound its socket there');
    my ($sid) = $single->mcp_initialize;
    ok($sid, 'and serves');
    unlike($single->error_log, qr/polls the zone/, 'with no fallback to polling');
    $single->stop;
}

# --- nginx -t refuses a path too long for a socket's name ----------------------------------

{
    my $long = McpTest->new(http => 'mcp_ipc_path /tmp/' . ('x' x 100) . ';');
    my ($rc, $out) = $long->nginx_t;
    isnt($rc, 0, 'nginx -t: a mcp_ipc_path too long for a unix socket\'s name is refused');
    like($out, qr/mcp_ipc_path ".*" is too long for a unix socket's name/, 'with a message naming it');
}

done_testing;
