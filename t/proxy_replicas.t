# mcp_pass in front of three replicas of @modelcontextprotocol/server-everything
# (node, streamableHttp) in an upstream block (round robin, state shared by
# the workers through a zone): sessions spread over the replicas, every
# request of a session goes to the replica that created it (server-everything
# answers 400 for a session id it does not know, so a request that strayed
# would fail), and when a replica dies its sessions get 404 (-32001) while
# the others go on, and their clients initialize again on a live replica.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Compress::Zlib ();
use Time::HiRes ();
use McpTest;
use McpAssert;
use McpGateway;

my $why = node_available('@modelcontextprotocol/server-everything');
plan skip_all => "server-everything: $why" if $why;

my $t = McpTest->new(
    ports => 4,    # 2, 3, 4: the replicas
    http  => <<'NGX',
    mcp_session_zone zone=gw:1m;
    log_format gw escape=json '{"sid":"$mcp_session_id","upstream":"$upstream_addr","status":"$status",'
                              '"rid":"$mcp_request_id","m":"$mcp_method","method":"$request_method"}';
    upstream replicas {
        zone replicas 64k;
        server 127.0.0.1:%%PORT2%%;
        server 127.0.0.1:%%PORT3%%;
        server 127.0.0.1:%%PORT4%%;
    }
NGX
    server => <<'NGX',
        location = /mcp {
            mcp_pass http://replicas/mcp;
            mcp_session gw;
            access_log %%PREFIX%%/logs/gateway.log gw;
        }
NGX
)->start;

# a replica that died: nginx cannot connect to it
$t->expect_log_error(qr/connect\(\) failed \(111: Connection refused\) while connecting to upstream/);

my @nodes = start_everything_nodes(ports => [ map { $t->port($_) } 2 .. 4 ],
                                   logs  => [ map { $t->prefix . "/logs/replica$_.log" } 1 .. 3 ]);
my %replica_of_port = map { ("127.0.0.1:$nodes[$_]{port}" => $_) } 0 .. $#nodes;

sub gw_log { upstream_log($t, 'gateway.log') }

# which replica served a request: the gateway's $upstream_addr
sub replica_of {
    my ($pred) = @_;
    my $l = wait_upstream($t, $pred, 5, 'gateway.log') or return undef;
    # an initialize that moved on lists every server it tried: the last answered
    return $replica_of_port{ (split /, /, $l->{upstream})[-1] };
}

sub node_sessions {
    my ($n) = @_;
    my @ids = (McpTest::_slurp($n->{log}) // '') =~ /Session initialized with ID: (\S+)/g;
    return @ids;
}

# --- sessions spread over the replicas ----------------------------------------------

my @s;    # { sid, replica }
for my $i (1 .. 6) {
    my ($sid, $init) = $t->mcp_initialize(id => "init-$i", client_info => { name => "client-$i", version => '1' });
    my $rep = replica_of(sub { $_[0]{rid} eq "init-$i" });
    push @s, { sid => $sid, replica => $rep, n => $i };
    ok(defined $rep, "session $i: initialized on replica " . ($rep // '?'));
}
my %per;
$per{ $_->{replica} // 'none' }++ for @s;
is_deeply([ sort keys %per ], [ 0, 1, 2 ], 'the sessions are spread over all three replicas ('
          . join(', ', map { "replica $_: $per{$_}" } sort keys %per) . ')');
is_deeply([ map { scalar node_sessions($_) } @nodes ], [ map { $per{$_} // 0 } 0 .. 2 ],
          'each replica\'s own log shows the sessions it initialized');
my %uniq = map { $_->{sid} => 1 } @s;
is(scalar keys %uniq, 6, 'six distinct client-facing session ids');
my @replica_ids = map { node_sessions($_) } @nodes;
ok(!grep({ $uniq{$_} } @replica_ids), 'none of them is a replica\'s own id');

# --- pinning: every request of a session goes to its replica ---------------------------

my $pinned_ok = 1;
for my $round (1 .. 3) {
    for my $x (@s) {
        my $id = "echo-$x->{n}-$round";
        my ($msg, $r) = $t->mcp_request($x->{sid}, 'tools/call',
            { name => 'echo', arguments => { message => "session $x->{n} round $round" } }, id => $id);
        my $text = ((($msg // {})->{result} // {})->{content} // [])->[0]{text} // '';
        $pinned_ok = 0 unless $r->{status} == 200 && $text eq "Echo: session $x->{n} round $round";
        my $rep = replica_of(sub { $_[0]{rid} eq $id });
        $pinned_ok = 0 unless defined $rep && $rep == $x->{replica};
        diag("session $x->{n}: request $id: status $r->{status}, '$text', replica " . ($rep // '?')
             . ", want replica $x->{replica}") unless $pinned_ok;
    }
}
ok($pinned_ok, '3 rounds of tools/call echo over the 6 sessions: each answered by its session\'s replica');

{
    # a GET stream and a notification are pinned too
    my $x = $s[1];
    my $g = $t->mcp_get_stream($x->{sid});
    is($g->status, 200, 'GET stream of a session: 200');
    like($g->header('content-type') // '', qr{^text/event-stream}, '... text/event-stream from its replica');
    $g->close;
    my $rep = replica_of(sub { $_[0]{method} eq 'GET' && $_[0]{sid} eq $x->{sid} });
    is($rep, $x->{replica}, '... and it went to the session\'s replica');
    my $r = $t->mcp_notify($x->{sid}, 'notifications/roots/list_changed');
    is($r->{status}, 202, 'a notification of the session: 202 from its replica');
}

# --- a replica dies ---------------------------------------------------------------------

my $dead = $s[0]{replica};
my $st = stop_process($nodes[$dead]{pid}, 'KILL');
ok(defined $st && !McpGateway::port_open($nodes[$dead]{port}), "replica $dead killed (SIGKILL)");

my @lost = grep { $_->{replica} == $dead } @s;
my @live = grep { $_->{replica} != $dead } @s;

for my $x (@live) {
    my ($msg, $r) = $t->mcp_request($x->{sid}, 'tools/call',
        { name => 'echo', arguments => { message => "still here $x->{n}" } }, id => "live-$x->{n}");
    is(((($msg // {})->{result} // {})->{content} // [])->[0]{text}, "Echo: still here $x->{n}",
       "session $x->{n} on replica $x->{replica}: goes on");
}

for my $x (@lost) {
    my $m = $t->log_mark;
    my $r = $t->mcp_post($x->{sid}, qq({"jsonrpc":"2.0","id":"lost-$x->{n}","method":"ping"}));
    is_rpc_error_body($r, 404, -32001, "lost-$x->{n}", "session $x->{n} on the dead replica: 404, JSON-RPC -32001");
    is(($r->{json}{error} // {})->{message}, 'Session not found', "session $x->{n}: \"Session not found\"");
    my $tag = sprintf '#%08x', Compress::Zlib::crc32($x->{sid});
    ok($t->wait_for_log(qr/\[info\].*mcp: the replica of session \Q$tag\E is gone/, 3, $m),
       "session $x->{n}: error.log names the session (by a hash of its id) and the replica gone");
    $r = $t->mcp_post($x->{sid}, qq({"jsonrpc":"2.0","id":"lost2-$x->{n}","method":"ping"}));
    is($r->{status}, 404, "session $x->{n}: stays gone");
}

# After the crash, clients initialize (again): a helper that retries like
# a client would, returning the session, its replica, and the status of
# each try.
sub initialize_after_crash {
    my ($tag) = @_;
    my ($sid, $rep, @status);
    for my $try (1 .. 3) {
        my $id = "$tag-$try";
        my $r = $t->mcp_post(undef, qq({"jsonrpc":"2.0","id":"$id","method":"initialize","params":)
                                  . '{"protocolVersion":"2025-11-25","capabilities":{},'
                                  . '"clientInfo":{"name":"again","version":"1"}}}');
        push @status, $r->{status};
        if ($r->{status} == 200 && $r->{headers}{'mcp-session-id'}) {
            $sid = $r->{headers}{'mcp-session-id'};
            $rep = replica_of(sub { $_[0]{rid} eq $id });
            last;
        }
        is_rpc_error_body($r, 502, -32000, $id, "$tag: an initialize the balancer sent to the dead replica: 502 JSON-RPC error");
    }
    return ($sid, $rep, @status);
}

# the clients of the lost sessions initialize again, then four new clients
my (@again, @first_try);
for my $x (@lost, map { { n => "new$_" } } 1 .. 4) {
    my ($sid, $rep, @status) = initialize_after_crash("reinit-$x->{n}");
    push @first_try, $status[0];
    ok(defined $sid, "client $x->{n} initializes (tries: @status)");
    ok(defined $rep && $rep != $dead, "... on a live replica (" . ($rep // '?') . ')');
    push @again, { sid => $sid, replica => $rep, n => "$x->{n}b" } if $sid;
}
{
    is_deeply(\@first_try, [ (200) x @first_try ], 'every client\'s first initialize after the crash succeeds');
}

for my $x (@again) {
    $t->mcp_notify($x->{sid}, 'notifications/initialized');
    my $res = $t->mcp_call($x->{sid}, 'tools/call', { name => 'get-sum', arguments => { a => 2, b => 3 } });
    is((($res // {})->{content} // [])->[0]{text}, 'The sum of 2 and 3 is 5.', "the new session $x->{n} works");
}

{
    my @ends = grep { $_->{replica} != $dead } @s, @again;
    my @codes = map { $t->mcp_delete($_->{sid})->{status} } @ends;
    is_deeply(\@codes, [ (200) x @ends ], 'DELETE of every live session, each through to its replica: 200');
    my @after = map { $t->mcp_post($_->{sid}, '{"jsonrpc":"2.0","id":"x","method":"ping"}')->{status} } @ends;
    is_deeply(\@after, [ (404) x @ends ], '... and then they are gone');
}

$t->stop;
stop_process($_->{pid}) for grep { $_ != $nodes[$dead] } @nodes;
done_testing;
