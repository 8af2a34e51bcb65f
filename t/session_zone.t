# Sessions in the shared memory zone: every worker sees every session,
# sessions survive a reload, zones are separate, LRU eviction of a full
# zone, idle expiry, and no session is ever handed to another client.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Compress::Zlib ();
use Time::HiRes ();
use McpTest;
use McpAssert;

my $SIMPLE = { content => [ { type => 'text', text => 'This is a simple text response for testing.' } ] };

###########################################################################
# 1. One session, 50 fresh connections, 4 workers; reload; zones
###########################################################################

# Port 2 listens with reuseport: the kernel spreads connections over all
# four workers, and the access log there records which worker served each.
my $http = <<'NGX';
    mcp_session_zone zone=named:1m timeout=1h;
    log_format spread '$pid $http_mcp_session_id $status';
    server {
        listen 127.0.0.1:%%PORT2%% reuseport;
        access_log %%PREFIX%%/logs/spread.log spread;
        location = /mcp { mcp on; mcp_builtin everything; }
    }
NGX
my $server = <<'NGX';
        location = /mcp   { mcp on; mcp_builtin everything; }
        location = /named { mcp on; mcp_builtin everything; mcp_session named; }
NGX

my $t = McpTest->new(ports => 2, http => $http, server => $server)->start;
my @w = $t->worker_pids;
is(scalar @w, 4, 'four workers');

{
    my $port = $t->port(2);
    my ($sid) = $t->mcp_initialize(port => $port);
    my $ok = 0;
    for my $i (1 .. 50) {
        my ($msg, $r) = $t->mcp_request($sid, 'tools/call', { name => 'test_simple_text' },
                                        id => $i, port => $port);
        $ok++ if $r->{status} == 200 && ref $msg eq 'HASH'
              && McpTest::encode_json($msg->{result} // {}) eq McpTest::encode_json($SIMPLE);
    }
    is($ok, 50, 'one session: 50 requests on 50 fresh connections all succeed');

    # Which workers served them (the log line is written after the reply).
    my @lines;
    my $deadline = Time::HiRes::time() + 3;
    do {
        @lines = grep { /^\d+ \Q$sid\E 200$/ } split /\n/, McpTest::_slurp($t->prefix . '/logs/spread.log') // '';
        Time::HiRes::sleep(0.05) if @lines < 50;
    } while (@lines < 50 && Time::HiRes::time() < $deadline);
    my %pids = map { (split / /)[0] => 1 } @lines;
    my %workers = map { $_ => 1 } $t->worker_pids;
    is(scalar @lines, 50, 'access log: the 50 calls logged with the session id')
        or diag("log lines: " . scalar @lines);
    is(scalar(grep { $workers{$_} } keys %pids), 4,
       'the session was served by all four worker processes')
        or diag('pids seen: ' . join(' ', sort keys %pids) . '; workers: '
                . join(' ', sort keys %workers));
}

# Reload keeps the sessions of both zones (same names and sizes).
{
    my ($s_default) = $t->mcp_initialize(protocol_version => '2025-03-26');
    my ($s_named)   = $t->mcp_initialize(path => '/named', protocol_version => '2025-06-18');
    $t->mcp_request($s_default, 'logging/setLevel', { level => 'error' });

    my ($msg, $r) = $t->mcp_request($s_default, 'ping', undef, path => '/named', id => 'x');
    is($r->{status}, 404, 'zones are separate: a default-zone session is unknown at /named');
    ($msg, $r) = $t->mcp_request($s_named, 'ping', undef, id => 'y');
    is($r->{status}, 404, 'zones are separate: a named-zone session is unknown at /mcp');

    my %old = map { $_ => 1 } $t->worker_pids;
    ok($t->reload(server => $server . "        location = /gen { return 200 'two'; }\n"),
       'reload with a changed configuration');
    is($t->request(path => '/gen')->{body}, 'two', 'reload: the new configuration is served');
    ok(!grep({ $old{$_} } $t->worker_pids), 'reload: a new generation of workers');

    ($msg, $r) = $t->mcp_request($s_default, 'ping', undef, id => 'd1');
    is_result($msg, {}, 'd1', 'after reload: default-zone session still valid');
    is($r->{headers}{'mcp-protocol-version'}, '2025-03-26',
       'after reload: the session kept its negotiated version');
    $r = $t->mcp_post($s_default, [ { jsonrpc => '2.0', id => 'b1', method => 'ping' } ]);
    ok($r->{status} == 200 && ref $r->{json} eq 'ARRAY',
       'after reload: batches still allowed (2025-03-26 state kept)');
    ($msg, $r) = $t->mcp_request($s_named, 'tools/call', { name => 'test_simple_text' },
                                 path => '/named', id => 'n1');
    is_result($msg, $SIMPLE, 'n1', 'after reload: named-zone session still valid');
    is($r->{headers}{'mcp-protocol-version'}, '2025-06-18', 'after reload: named session version kept');
    my ($fresh) = $t->mcp_initialize;
    ($msg) = $t->mcp_request($fresh, 'ping', undef, id => 'f1');
    is_result($msg, {}, 'f1', 'after reload: new sessions work');

    # A zone whose size changes starts empty: its sessions are gone, cleanly.
    (my $http2 = $http) =~ s/zone=named:1m/zone=named:2m/;
    ok($t->reload(http => $http2, server => $server), 'reload with the named zone resized');
    ($msg, $r) = $t->mcp_request($s_named, 'ping', undef, path => '/named', id => 'n2');
    is($r->{status}, 404, 'resized zone: its old sessions are gone (404)');
    ($msg) = $t->mcp_request($s_default, 'ping', undef, id => 'd2');
    is_result($msg, {}, 'd2', 'resized zone: sessions of the unchanged zone survive');
    my ($s3) = $t->mcp_initialize(path => '/named');
    ($msg) = $t->mcp_request($s3, 'ping', undef, path => '/named', id => 'n3');
    is_result($msg, {}, 'n3', 'resized zone: new sessions work');
}

# No session is handed to another client; state is per session.
{
    my %sess;
    for my $v (qw(2025-03-26 2025-06-18 2025-11-25)) {
        my ($s) = $t->mcp_initialize(protocol_version => $v);
        $sess{$s} = $v;
    }
    is(scalar keys %sess, 3, 'three clients: three different session ids');
    my $wrong = 0;
    my @order = map { (keys %sess)[ $_ % 3 ] } 0 .. 29;
    for my $i (0 .. $#order) {
        my $s = $order[$i];
        my ($msg, $r) = $t->mcp_request($s, 'ping', undef, id => $i);
        $wrong++ unless $r->{status} == 200
            && ($r->{headers}{'mcp-protocol-version'} // '') eq $sess{$s};
    }
    is($wrong, 0, '30 interleaved requests: each reply carries its own session\'s version');
    my ($old) = grep { $sess{$_} eq '2025-03-26' } keys %sess;
    my ($new) = grep { $sess{$_} eq '2025-11-25' } keys %sess;
    $t->mcp_request($old, 'logging/setLevel', { level => 'emergency' });
    $t->mcp_request($new, 'logging/setLevel', { level => 'debug' });
    my $batch = [ { jsonrpc => '2.0', id => 1, method => 'ping' } ];
    is($t->mcp_post($old, $batch)->{status}, 200, 'per-session state: batch allowed in the 2025-03-26 session');
    is($t->mcp_post($new, $batch)->{status}, 400, '... and refused in the 2025-11-25 session');
    $t->status_is($t->mcp_delete($old), 200, 'DELETE of one session');
    my ($msg) = $t->mcp_request($new, 'ping', undef, id => 'z');
    is_result($msg, {}, 'z', 'deleting one session leaves the others');
}

$t->stop;

###########################################################################
# 2. A full zone evicts the least recently used session; idle expiry
###########################################################################

# 32k is the smallest zone the module accepts (8 pages of 4k).
my $z = McpTest->new(
    http   => "mcp_session_zone zone=tiny:32k timeout=1h;\n"
            . "    mcp_session_zone zone=short:1m timeout=1s;",
    server => <<'NGX',
        location = /mcp   { mcp on; mcp_builtin everything; mcp_session tiny; }
        location = /short { mcp on; mcp_builtin everything; mcp_session short; }
NGX
)->start;

{
    my @workers = $z->worker_pids;
    my ($oldest) = $z->mcp_initialize;            # never used again
    my ($kept)   = $z->mcp_initialize;            # used after every new session
    my $mark = $z->log_mark;
    my ($n, $last, $kept_ok) = (0, undef, 1);
    while ($n < 2000) {
        $n++;
        $last = $z->mcp_initialize(skip_initialized => 1);
        my ($msg, $r) = $z->mcp_request($kept, 'ping', undef, id => $n);
        $kept_ok = 0 unless $r->{status} == 200;
        last if $z->log_since($mark) =~ /evict/;
    }
    my ($warn) = grep { /evict/ } split /\n/, $z->log_since($mark);
    ok(defined $warn, "zone full after $n more sessions: a line mentions eviction");
    like($warn // '', qr/\[warn\]/, 'the eviction line is a [warn]');
    like($warn // '', qr/"tiny"/, 'the eviction line names the zone');
    my $tag = sprintf '#%08x', Compress::Zlib::crc32($oldest);
    like($warn // '', qr/\Q$tag\E/,
         'the evicted session is the least recently used one (named by a hash of its id)');
    unlike($warn // '', qr/\Q$oldest\E/, 'the eviction line does not print the session id');
    ok($kept_ok, 'a recently used (but older) session was never evicted');

    my ($msg, $r) = $z->mcp_request($oldest, 'ping', undef, id => 'old');
    is($r->{status}, 404, 'the evicted session gets 404');
    is_error($msg, -32001, 'old', 'the evicted session: session-not-found error');
    ($msg) = $z->mcp_request($kept, 'ping', undef, id => 'kept');
    is_result($msg, {}, 'kept', 'the recently used session still works');
    ($msg) = $z->mcp_request($last, 'tools/call', { name => 'test_simple_text' }, id => 'last');
    is_result($msg, $SIMPLE, 'last', 'the newest session still works');

    # Keep going: every initialize keeps succeeding, each evicting one more.
    my $fail = 0;
    for my $i (1 .. 60) {
        my $s = eval { $z->mcp_initialize(skip_initialized => 1) };
        my ($m) = $s ? $z->mcp_request($s, 'ping', undef, id => "more$i") : ();
        $fail++ unless $s && ref $m eq 'HASH' && exists $m->{result};
    }
    is($fail, 0, '60 more initializes in the full zone: all succeed and work');
    my $evictions = () = $z->log_since($mark) =~ /evicted the least recently used/g;
    cmp_ok($evictions, '>=', 60, "each of them evicted a session ($evictions evictions)");
    is_deeply([ $z->worker_pids ], \@workers, 'no worker crashed (same worker processes)');
}

{
    my ($idle)   = $z->mcp_initialize(path => '/short');
    my ($active) = $z->mcp_initialize(path => '/short');
    my $active_ok = 1;
    for my $i (1 .. 5) {                          # 2.5 s, a request every 0.5 s
        Time::HiRes::sleep(0.5);
        my ($msg, $r) = $z->mcp_request($active, 'ping', undef, path => '/short', id => $i);
        $active_ok = 0 unless $r->{status} == 200;
    }
    ok($active_ok, 'timeout=1s: a session used every 0.5 s stays alive for 2.5 s');
    my ($newer) = $z->mcp_initialize(path => '/short');    # triggers expiry too
    my ($msg, $r) = $z->mcp_request($idle, 'ping', undef, path => '/short', id => 'idle');
    is($r->{status}, 404, 'timeout=1s: a session idle for 2.5 s is gone (404)');
    is_error($msg, -32001, 'idle', 'timeout=1s: expired session gets session-not-found');
    ($msg) = $z->mcp_request($active, 'ping', undef, path => '/short', id => 'active');
    is_result($msg, {}, 'active', 'timeout=1s: the active session still works');
    ($msg) = $z->mcp_request($newer, 'ping', undef, path => '/short', id => 'newer');
    is_result($msg, {}, 'newer', 'timeout=1s: a new session works');
}

$z->stop;
done_testing;
