#!/usr/bin/perl
# 2026-07-28 tasks (the io.modelcontextprotocol/tasks extension) through
# an aggregating location (mcp_backend, issue #39): a task made on
# backend "beta" through the gateway is polled from another worker,
# answered (input_required, tasks/update) and its result fetched from a
# third; the id the gateway hands out is sealed and bound to the client,
# so a forged one, one altered to name the other backend, the backend's
# own id, or another client's (per_client) is -32602 by the request's
# id; a client without the extension gets -32021.  A backend that does
# not serve 2026-07-28 (a fake 2025-11-25 server) is asked once a worker
# (server/discover) and then gets such a client's calls in a session.
#
# Port 2 listens with reuseport (four workers); each request carries
# X-Seq and the access log says which worker served it, as in t/tasks.t.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Time::HiRes ();
use MIME::Base64 qw(encode_base64url decode_base64url);
use McpTest;
use McpAssert qw($ACK);
use McpSpread;
use McpGateway qw(fake_mcp_server);

my $log = "/tmp/aggregate-tasks-2026-fake-$$.log";
unlink $log;
END { unlink $log if defined $log }

# a 2025-11-25 server: initialize, tools/list and old_tool; anything else
# (server/discover) -32601
my $fake = fake_mcp_server(log => $log, tools => ['old_tool'], call => sub {
    my ($c, $name, $id) = @_;
    my $s = qq({"jsonrpc":"2.0","id":$id,"result":{"content":[{"type":"text","text":"old"}]}});
    print $c "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "
           . length($s) . "\r\nConnection: close\r\n\r\n$s";
});
sub fake_bodies { open my $fh, '<', $log or return (); my @l = <$fh>; chomp @l; @l }

my $http = <<"NGX";
    mcp_session_zone zone=gw:1m per_client=\$http_x_client:100;
    mcp_session_zone zone=bz:1m;
    mcp_session_zone zone=gz:1m;
    log_format spread '\$pid \$http_x_seq';
    server {
        listen 127.0.0.1:%%PORT2%% reuseport;
        access_log %%PREFIX%%/logs/spread.log spread;
        keepalive_requests 1000;
        location = /mcp {
            mcp_backend beta  /_b/beta;
            mcp_backend gamma /_b/gamma;
            mcp_backend old   /_b/old;
            mcp_backend delta /_b/delta;
            mcp_session gw;
        }
        location = /_b/old { internal;
                             proxy_pass http://127.0.0.1:$fake->{port}/mcp; }
        location = /_b/beta  { internal; mcp on; mcp_builtin everything;
                               mcp_session bz; }
        location = /_b/gamma { internal; mcp on; mcp_builtin everything;
                               mcp_session gz; }
        location = /_b/delta { internal;
                               proxy_pass http://127.0.0.1:%%PORT%%/mcp; }
    }
NGX

my $t = McpTest->new(ports => 2, http => $http,
                     server => 'location = /mcp { mcp on; mcp_builtin everything; }')->start;
my @w = $t->worker_pids;
is(scalar @w, 4, 'four workers');

# one 2026-07-28 request to the gateway; returns (message, response, seq)
sub rpc { spread_rpc($t, @_) }

# the worker that served request $id
sub served_by { spread_served_by($t, @_) }

# tasks/get on $conn until the task is $status; the last answer
sub poll {
    my ($tid, $status, $conn) = @_;
    my $got;
    for (1 .. 60) {
        ($got) = rpc('tasks/get', { taskId => $tid }, conn => $conn);
        last if (($got->{result} // {})->{status} // '') eq $status;
        Time::HiRes::sleep(0.1);
    }
    return $got;
}

# keepalive connections, one per worker, found with server/discover
my ($conns, $disc) = spread_conns($t);
my %conn = %$conns;
my @pids = sort keys %conn;
cmp_ok(scalar @pids, '>=', 3, 'keepalive connections to at least three workers');
my ($A, $B, $C) = @pids;

ok(ref $disc->{result}{capabilities}{extensions}{'io.modelcontextprotocol/tasks'} eq 'HASH',
   'server/discover through the gateway offers the tasks extension');

# --- made on A (backend beta), polled on B, completed seen on C ----------------

my ($created) = rpc('tools/call', { name => 'beta__slow_compute',
                                    arguments => { seconds => 1, label => 'x' } },
                    conn => $conn{$A});
my $res = $created->{result} // {};
is($res->{resultType}, 'task', 'beta__slow_compute with the extension: a task')
    or diag(McpTest::encode_json($created));
my $id = $res->{taskId} // 'none';
unlike($id, qr/^[0-9a-f]{32}$/, 'the id is the gateway\'s, not the backend\'s');
is($res->{status}, 'working', 'created working');

my ($got, undef, $gseq) = rpc('tasks/get', { taskId => $id }, conn => $conn{$B});
is(served_by($gseq), $B, 'tasks/get served by another worker');
is(($got->{result} // {})->{taskId}, $id, '... finds the task, by the client\'s id')
    or diag(McpTest::encode_json($got));

my $done = poll($id, 'completed', $conn{$C});
is($done->{result}{status}, 'completed', 'tasks/get on a third worker: completed');
ok(ref $done->{result}{result}{content} eq 'ARRAY', '... its result inlined');

# --- input_required on beta, answered through the gateway ---------------------

my ($ask) = rpc('tools/call', { name => 'beta__confirm_delete',
                                arguments => { filename => 'f.txt' } }, conn => $conn{$A});
my $aid = ($ask->{result} // {})->{taskId} // 'none';
my $wait = poll($aid, 'input_required', $conn{$B});
is_deeply([ keys %{ $wait->{result}{inputRequests} // {} } ], ['confirm'],
          'confirm_delete: input_required on another worker, one request')
    or diag(McpTest::encode_json($wait));
my ($ack, undef, $useq) = rpc('tasks/update', { taskId => $aid,
        inputResponses => { confirm => { action => 'accept', content => { confirm => \1 } } } },
    conn => $conn{$C});
is_deeply($ack->{result}, $ACK, 'tasks/update on a third worker: ack');
$wait = poll($aid, 'completed', $conn{$A});
is(($wait->{result}{result}{content} // [{}])->[0]{text}, 'Deleted f.txt',
   'the task resumed with the answer and completed, fetched on the first worker');

# --- ids that reach no backend ------------------------------------------------

# the sealed id: "1." expires "." base64url(index " " backend id) "." mac
my ($v, $exp, $payload, $mac) = split /\./, $id;
my ($index, $bid) = split / /, decode_base64url($payload // '') // '';
is($index, 0, 'the id carries the backend (beta, the first)');

sub refused {
    my ($tid, $what, %o) = @_;
    my ($m, undef, $rid) = rpc('tasks/get', { taskId => $tid }, %o);
    is(($m->{error} // {})->{code}, -32602, "$what: -32602")
        or diag(McpTest::encode_json($m));
    is($m->{id}, $rid, '... by the request\'s id');
}

refused(join('.', $v, $exp, encode_base64url("1 $bid"), $mac),
        'the id altered to name the other backend');
refused($bid, 'the backend\'s own id');
refused('tasks-nonexistent-12345', 'a made-up id');
refused(join('.', $v, $exp + 1, $payload, $mac), 'the id with its expiry changed');
refused($id, 'another client\'s (per_client) id', client => 'bob');

my ($cancel) = rpc('tasks/cancel', { taskId => join('.', $v, $exp, encode_base64url("0 $bid"), 'x' x 43) });
is(($cancel->{error} // {})->{code}, -32602, 'tasks/cancel with a forged mac: -32602');

# --- a client without the extension -------------------------------------------

my ($no) = rpc('tasks/get', { taskId => $id }, caps => {});
is(($no->{error} // {})->{code}, -32021, 'tasks/get without the extension: -32021');
ok(exists $no->{error}{data}{requiredCapabilities}{extensions}{'io.modelcontextprotocol/tasks'},
   '... naming it');
($no) = rpc('tools/call', { name => 'beta__failing_job', arguments => {} }, caps => {});
is(($no->{error} // {})->{code}, -32021,
   'a tool that must run as a task, called without the extension: -32021')
    or diag(McpTest::encode_json($no));

my ($sync) = rpc('tools/call', { name => 'gamma__greet', arguments => { name => 'x' } });
ok(ref(($sync->{result} // {})->{content}) eq 'ARRAY' && !exists $sync->{result}{taskId},
   'a tool that finishes at once, with the extension: its result, no task')
    or diag(McpTest::encode_json($sync));

# --- a name with CR LF (Base64 in the client's Mcp-Name) reaches a proxied
# backend in the wrapper, never raw in a header line of its own

my ($inj) = rpc('tools/call', { name => "delta__nope\r\nX-Injected: 1",
                                arguments => {} });
is(($inj->{error} // {})->{code}, -32602,
   'a tool name with CR LF through a proxied backend: its unknown-tool error, '
   . 'the name\'s header and body agreeing there')
    or diag(McpTest::encode_json($inj));

# --- a backend that serves only 2025-11-25 --------------------------------------

my ($o1) = rpc('tools/call', { name => 'old__old_tool', arguments => {} }, conn => $conn{$A});
is((($o1->{result} // {})->{content} // [{}])->[0]{text}, 'old',
   'a 2025-only backend\'s tool, with the extension: its result')
    or diag(McpTest::encode_json($o1));
my ($o2) = rpc('tools/call', { name => 'old__old_tool', arguments => {} }, conn => $conn{$A});
is((($o2->{result} // {})->{content} // [{}])->[0]{text}, 'old', '... again');
my @bodies = fake_bodies();
is(scalar(grep { /"method":"server\/discover"/ } @bodies), 1,
   '... it was asked once whether it serves 2026-07-28');
my @calls = grep { /"method":"tools\/call"/ } @bodies;
is(scalar @calls, 2, '... and got both calls');
is(scalar(grep { /io\.modelcontextprotocol\/protocolVersion/ } @calls), 0,
   '... the sessions\' way (no 2026-07-28 _meta)');

unlike($t->error_log, qr/\[(error|alert|crit|emerg)\]/, 'no [error] or worse')
    or diag(join "\n", grep { /\[(error|alert|crit|emerg)\]/ } split /\n/, $t->error_log);

done_testing();
