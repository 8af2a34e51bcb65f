# mcp_affinity: a gateway's sessions reach their replicas through the upstream
# block's balancer, and so through its keepalive cache.  Two replicas (this
# module's Everything set, each an nginx of its own with one worker, whose
# access log writes $connection), a gateway with
#     upstream { mcp_affinity; server A; server B; keepalive 16; }
# (with a zone, as deployments have) 1,000 tools/call of one session go to
# its replica over a handful of connections; two sessions on the two
# replicas both reuse theirs; a replica
# marked down or stopped ends its sessions with a JSON-RPC error (never a
# silent move to the other) while new sessions go to the other; a block
# without the directive still works, a connection per request, and nginx -t
# warns about it; the directive's misplacements are refused.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use McpTest;
use McpAssert;
use Time::HiRes ();

my $CALLS = $ENV{MCP_KEEPALIVE_CALLS} // 1000;

my @rep = map {
    McpTest->new(
        workers => 1,
        http    => q{log_format rep '$connection $http_mcp_session_id $request_method $status';},
        server  => 'location = /mcp { mcp on; mcp_builtin everything; '
                 . 'access_log %%PREFIX%%/logs/replica.log rep; }',
    )->start
} 0, 1;
my @port = map { $_->port } @rep;
my %replica_of_port = map { ($port[$_] => $_) } 0, 1;

sub gw_http {
    my (%o) = @_;
    my $down = $o{down} // -1;
    my @srv = map { "server 127.0.0.1:$port[$_]" . ($_ == $down ? ' down' : '') . ';' }
              grep { !defined $o{only} || $_ == $o{only} } 0, 1;
    return <<"NGX";
    mcp_session_zone zone=gw:1m;
    log_format gw '\$mcp_request_id \$upstream_addr \$status';
    upstream aff {
        mcp_affinity;
        zone aff 64k;
        @srv
        keepalive 16;
    }
    upstream plain {
        server 127.0.0.1:$port[0];
        server 127.0.0.1:$port[1];
        keepalive 16;
    }
NGX
}

my $gw = McpTest->new(
    workers => 2,
    http    => gw_http(),
    server  => <<'NGX',
        location = /mcp {
            mcp_pass http://aff/mcp;
            mcp_session gw;
            access_log %%PREFIX%%/logs/gateway.log gw;
        }
        location = /plain {
            mcp_pass http://plain/mcp;
            mcp_session gw;
            access_log %%PREFIX%%/logs/gateway.log gw;
        }
NGX
)->start;

# the replica's lines: [connection, the replica's session id, method, status]
sub replica_lines {
    my ($i) = @_;
    my $text = McpTest::_slurp($rep[$i]->prefix . '/logs/replica.log') // '';
    return map { [ split / / ] } split /\n/, $text;
}

# the lines settle once the replica has written them all
sub settled_lines {
    my ($i, $want) = @_;
    my @l;
    McpTest::wait_until(3, sub { @l = replica_lines($i); @l >= $want });
    return @l;
}

# which replica served the gateway's request with JSON-RPC id $rid
sub replica_of_request {
    my ($rid) = @_;
    my $line;
    McpTest::wait_until(3, sub {
        my $text = McpTest::_slurp($gw->prefix . '/logs/gateway.log') // '';
        ($line) = grep { /^\Q$rid\E / } split /\n/, $text;
        defined $line;
    });
    return undef unless defined $line;
    my (undef, $addr) = split / /, $line;
    my ($p) = $addr =~ /:(\d+)$/;
    return defined $p ? $replica_of_port{$p} : undef;
}

# a session on the location, and the replica it lives on
my $n = 0;
sub session {
    my (%o) = @_;
    my $rid = 'init-' . ++$n;
    my ($sid) = $gw->mcp_initialize(id => $rid, path => $o{path} // '/mcp');
    return ($sid, replica_of_request($rid));
}

# $k tools/call of a session; how many answered as the replica does
sub calls {
    my ($sid, $k, %o) = @_;
    my $ok = 0;
    for (1 .. $k) {
        my $res = $gw->mcp_call($sid, 'tools/call', { name => 'test_simple_text' },
                                path => $o{path} // '/mcp');
        $ok++ if ((($res // {})->{content} // [])->[0]{text} // '')
                 eq 'This is a simple text response for testing.';
    }
    return $ok;
}

# the replica's own session id of the lines added since $from
sub new_lines {
    my ($i, $from, $want) = @_;
    my @l = settled_lines($i, $from + $want);
    return @l[$from .. $#l];
}

sub distinct { my %h = map { $_ => 1 } @_; scalar keys %h }

# the lines of tools/call: a session's POST answered 200 (an initialize
# has no session id yet, its notifications/initialized is a 202: a
# replica may log those of a session made just before after the count
# of lines was taken)
sub call_lines { grep { $_->[2] eq 'POST' && $_->[1] ne '-' && ($_->[3] // '') eq '200' } @_ }

like($gw->stderr_log . $gw->error_log, qr/\[warn\] .*mcp_pass to upstream "plain" .*no "mcp_affinity"/,
     'a gateway to a block of two servers without mcp_affinity: a [warn] at start');
unlike($gw->stderr_log . $gw->error_log, qr/mcp_pass to upstream "aff"/, '... and none for the block with it');

# --- 1,000 calls of one session: a handful of connections -----------------------------

{
    my ($sid, $r) = session();
    ok(defined $r, "a session on replica " . ($r // '?'));
    my @before = map { scalar replica_lines($_) } 0, 1;
    is(calls($sid, $CALLS), $CALLS, "$CALLS tools/call of the session: every one answered");
    my @l = new_lines($r, $before[$r], $CALLS);
    my @calls = call_lines(@l);
    is(scalar @calls, $CALLS, "... all $CALLS reached the session's replica");
    is(distinct(map { $_->[1] } @calls), 1, '... with one replica session id');
    my $conns = distinct(map { $_->[0] } @calls);
    cmp_ok($conns, '<=', 4, "... over $conns connections (2 gateway workers, keepalive 16)");
    is(scalar replica_lines(1 - $r), $before[1 - $r], '... and none went to the other replica');
}

# --- two sessions on the two replicas both reuse their connections ---------------------

my @s;    # the session of replica 0, of replica 1
for (1 .. 8) {
    my ($sid, $r) = session();
    $s[$r] //= $sid if defined $r;
    last if defined $s[0] && defined $s[1];
}
ok(defined $s[0] && defined $s[1], 'new sessions are spread over both replicas');

SKIP: {
    skip 'no session on each replica', 5 unless defined $s[0] && defined $s[1];
    my @before = map { scalar replica_lines($_) } 0, 1;
    my $ok = 0;
    for (1 .. 100) {
        $ok += calls($s[0], 1) + calls($s[1], 1);
    }
    is($ok, 200, '100 calls of each session, interleaved: every one answered');
    for my $i (0, 1) {
        my @calls = call_lines(new_lines($i, $before[$i], 100));
        is(scalar @calls, 100, "replica $i: its session's 100 calls, no other");
        my $conns = distinct(map { $_->[0] } @calls);
        cmp_ok($conns, '<=', 4, "replica $i: over $conns connections");
    }
}

# --- without mcp_affinity: still pinned, a connection per request ----------------------

{
    my ($sid, $r) = session(path => '/plain');
    ok(defined $r, 'a session through the block without mcp_affinity');
    my @before = map { scalar replica_lines($_) } 0, 1;
    is(calls($sid, 30, path => '/plain'), 30, '30 calls of it: every one answered');
    my @calls = call_lines(new_lines($r, $before[$r], 30));
    is(scalar @calls, 30, '... all at the session\'s replica');
    is(distinct(map { $_->[0] } @calls), 30, '... each over a connection of its own');
}

# --- a replica marked down: its sessions end, new ones go to the other -----------------

SKIP: {
    skip 'no session on each replica', 14 unless defined $s[0] && defined $s[1];
    my $down = 0;
    ok($gw->reload(http => gw_http(down => $down)), "reload: replica $down marked down");
    $gw->expect_log_error(qr/no live upstreams/);

    my ($msg, $r) = $gw->mcp_request($s[$down], 'tools/call', { name => 'test_simple_text' },
                                     id => 'on-down');
    is_rpc_error_body($r, 404, -32001, 'on-down',
                      'a call of a session on the down replica: 404, JSON-RPC -32001');
    is(replica_of_request('on-down'), undef, '... relayed to no replica') or diag explain $r;
    like($gw->error_log, qr/mcp affinity: the session's replica 127\.0\.0\.1:$port[$down] is down/,
         '... the reason at [info]');
    is(calls($s[1 - $down], 5), 5, 'the session on the other replica goes on');

    my %to;
    for (1 .. 4) {
        my ($sid, $r) = session();
        $to{ $r // 'none' }++;
    }
    is_deeply(\%to, { 1 - $down => 4 }, 'four new sessions: all on the replica that is up');

    ok($gw->reload(http => gw_http()), 'reload: both replicas up again');

    # a replica no longer in the block: the same
    my $sid0;
    for (1 .. 8) {
        my ($sid, $r) = session();
        $sid0 = $sid, last if defined $r && $r == 0;
    }
    ok($sid0, 'a session on replica 0 again');
    ok($gw->reload(http => gw_http(only => 1)), 'reload: replica 0 left the block');
    ($msg, $r) = $gw->mcp_request($sid0, 'ping', undef, id => 'gone-from-block');
    is_rpc_error_body($r, 404, -32001, 'gone-from-block',
                      'a request of its session: 404, JSON-RPC -32001');
    like($gw->error_log, qr/the session's replica 127\.0\.0\.1:$port[0] is not a server of the upstream block/,
         '... the reason at [info]');
    is(calls($s[1], 2), 2, 'the session on replica 1 goes on');
    ok($gw->reload(http => gw_http()), 'reload: both replicas in the block again');
}

# --- a replica stops: its sessions end with an error, never moved ----------------------

{
    my ($sid0, $sid1);
    for (1 .. 8) {
        my ($sid, $r) = session();
        $sid0 //= $sid if defined $r && $r == 0;
        $sid1 //= $sid if defined $r && $r == 1;
        last if $sid0 && $sid1;
    }
    ok($sid0 && $sid1, 'a session on each replica again');
    is(calls($sid0, 3) + calls($sid1, 3), 6, '... both answering, over cached connections');

    $rep[0]->stop;
    $gw->expect_log_error(qr/connect\(\) failed \(111: Connection refused\) while connecting to upstream/,
                          qr/upstream prematurely closed connection/);
    Time::HiRes::sleep(0.3);    # the gateway sees its cached connections close

    my $before = scalar replica_lines(1);
    my ($msg, $r) = $gw->mcp_request($sid0, 'tools/call', { name => 'test_simple_text' },
                                     id => 'on-dead', quiet => 1);
    ok($msg && $msg->{error}, 'a call of a session on the stopped replica: a JSON-RPC error ('
       . "HTTP $r->{status}, " . (($msg // {})->{error}{code} // '?') . ')');
    is(scalar replica_lines(1), $before, '... not moved to the other replica');
    ($msg, $r) = $gw->mcp_request($sid0, 'ping', undef, id => 'after', quiet => 1);
    is_rpc_error_body($r, 404, -32001, 'after', '... then the session is gone: 404, -32001');

    is(calls($sid1, 3), 3, 'the session on the live replica goes on');
    my ($sid, $rr) = session();
    is($rr, 1, 'a new session: on the live replica');
}

$gw->stop;
$rep[1]->stop;

# --- nginx -t: the directive's place ----------------------------------------------------

sub conf_t {
    my ($block) = @_;
    my $c = McpTest->new(
        http   => "upstream u { $block server 127.0.0.1:1; server 127.0.0.2:1; }",
        server => 'location = /mcp { mcp_pass http://u/mcp; }',
    );
    return $c->nginx_t;
}

{
    my ($rc, $out) = conf_t('hash $remote_addr; mcp_affinity;');
    isnt($rc, 0, 'nginx -t: mcp_affinity after hash is refused');
    like($out, qr/"mcp_affinity" must come before "keepalive"/, '... saying why');

    ($rc, $out) = conf_t('mcp_affinity; mcp_affinity;');
    isnt($rc, 0, 'nginx -t: mcp_affinity twice is refused');
    like($out, qr/"mcp_affinity" directive is duplicate/, '... as a duplicate');

    ($rc, $out) = conf_t('mcp_affinity; keepalive 8;');
    is($rc, 0, 'nginx -t: mcp_affinity then keepalive: ok');
    unlike($out, qr/mcp_pass to upstream/, '... without the warning');

    # nginx 1.22's keepalive wraps the method before it; later ones wrap
    # whatever the block has once it is read
    ($rc, $out) = conf_t('keepalive 8; mcp_affinity;');
    if ($rc) {
        like($out, qr/"mcp_affinity" must come before "keepalive"/,
             'nginx -t: keepalive then mcp_affinity is refused here, saying why');
    } else {
        unlike($out, qr/mcp_pass to upstream/, 'nginx -t: keepalive then mcp_affinity: fine here');
    }

    ($rc, $out) = conf_t('mcp_affinity; hash $remote_addr;');
    like($out, qr/mcp_pass to upstream "u" .*no "mcp_affinity"/,
         'nginx -t: hash after mcp_affinity replaces it, and the gateway is told');

    my $c = McpTest->new(http => 'server { listen 127.0.0.1:1; location / { mcp_affinity; } }');
    ($rc, $out) = $c->nginx_t;
    like($out, qr/"mcp_affinity" directive is not allowed here/, 'mcp_affinity outside an upstream block: refused');
}

done_testing;
