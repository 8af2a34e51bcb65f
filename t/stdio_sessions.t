# mcp_stdio_sessions on: a 2025 client's initialize on a stdio location
# starts a child of its own for the session (the real
# @modelcontextprotocol/server-everything over its stdio transport), the
# reply carries the store's Mcp-Session-Id and the child's own initialize
# result; the session's requests reach its child and come back under the
# client's ids; a server request (sampling) goes on the POST stream of
# the call and the client's answer, POSTed, reaches the child; the
# bounds refuse an initialize with a JSON-RPC error; DELETE stops the
# child and the session is then unknown (404); a child killed with
# SIGKILL mid-call answers its caller with a JSON-RPC error at once and
# ends the session; reload and quit leave no child, and a GET stream open
# at the reload is closed as the old worker exits.  One worker: the
# requests all land on the owner.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Time::HiRes qw(sleep time);
use JSON::PP qw(encode_json decode_json);
use McpTest timeout => 120;
use McpAssert;
use McpGateway qw(node_available node_bin npm_dir);

my $why = node_available('@modelcontextprotocol/server-everything');
plan skip_all => $why if $why;
my $NODE = Cwd::abs_path(node_bin());
my $EV   = Cwd::abs_path(npm_dir() . '/node_modules/@modelcontextprotocol/server-everything/dist/index.js');

my $t = McpTest->new(
    workers => 1,
    server  => <<"NGX",
        location = /mcp {
            mcp_stdio $NODE $EV stdio;
            mcp_stdio_sessions on;
            mcp_stdio_pool size=2;
            mcp_stdio_timeout 10s;
            mcp_stdio_env PATH=/usr/bin:/bin;
        }
        location = /pool {
            mcp_stdio $NODE $EV stdio;
            mcp_stdio_pool size=1;
        }
NGX
);
$t->start;

# the worker's children: pid => command
sub children {
    my %c;
    for my $w ($t->worker_pids) {
        for (`ps -o pid=,stat=,args= --ppid $w 2>/dev/null`) {
            my ($pid, $st, $cmd) = /^\s*(\d+)\s+(\S+)\s+(.*)$/ or next;
            $c{$pid} = $st;
        }
    }
    return \%c;
}

sub live { scalar grep { $_ !~ /^Z/ } values %{ children() } }

sub wait_live {
    my ($n) = @_;
    for (1 .. 60) { return live() if live() == $n; sleep 0.1 }
    return live();
}

sub post {
    my ($sid, $msg, %o) = @_;
    return $t->mcp_post($sid, $msg, protocol_version => $o{version} // '2025-11-25',
                        timeout => $o{timeout} // 15, path => $o{path} // '/mcp',
                        ($o{stream} ? (stream => 1) : ()));
}

sub init {
    my (%o) = @_;
    return post(undef, { jsonrpc => '2.0', id => $o{id} // 'init-1', method => 'initialize',
        params => { protocolVersion => '2025-11-25',
                    capabilities => $o{caps} // {},
                    clientInfo => { name => 't', version => '1' } } });
}

# --- a session: its own child, the store's id ---------------------------------

is(live(), 0, 'no child before a request');

my $r = init(caps => { sampling => {} });
is($r->{status}, 200, 'initialize: 200');
is($r->{json}{id}, 'init-1', 'initialize: the client\'s id');
like($r->{json}{result}{serverInfo}{name} // '', qr/everything/i,
     'initialize: the child\'s own serverInfo');
my $sid = $r->{headers}{'mcp-session-id'};
ok(defined $sid && $sid =~ /^[0-9A-Za-z_-]{16,}$/, 'initialize: a Mcp-Session-Id');
is(live(), 1, 'a child for the session');

$r = post($sid, { jsonrpc => '2.0', method => 'notifications/initialized' });
is($r->{status}, 202, 'notifications/initialized: 202');

$r = post($sid, { jsonrpc => '2.0', id => 'tl', method => 'tools/list' });
is($r->{status}, 200, 'tools/list: 200');
# the child's list_changed (its conditional tools) may make it a stream
my $m = $r->{messages}[-1] // {};
is($m->{id}, 'tl', 'tools/list: the client\'s id');
my %tools = map { $_->{name} => 1 } @{ $m->{result}{tools} // [] };
ok($tools{echo}, 'tools/list: the child\'s tools');
ok($tools{'trigger-sampling-request'},
   'tools/list: the tools the child registered for this client\'s sampling capability '
   . '(the client\'s own initialize reached it)');

$r = post($sid, { jsonrpc => '2.0', id => 7, method => 'tools/call',
                  params => { name => 'echo', arguments => { message => 'hi there' } } });
is($r->{json}{id}, 7, 'tools/call: the client\'s numeric id');
is($r->{json}{result}{content}[0]{text}, 'Echo: hi there', 'tools/call: the child\'s answer');

$r = post($sid, { jsonrpc => '2.0', id => 'p', method => 'ping' });
is($r->{json}{id}, 'p', 'ping: answered');
ok(exists $r->{json}{result}, 'ping: a result');

# a request without the header is the pool's, as before
$r = post(undef, { jsonrpc => '2.0', id => 'nosid', method => 'tools/list' });
is($r->{json}{id}, 'nosid', 'no Mcp-Session-Id: served by the pool');
ok(ref $r->{json}{result}{tools} eq 'ARRAY', 'no Mcp-Session-Id: tools listed')
    or diag explain $r->{json};
is(wait_live(2), 2, 'the pool\'s child beside the session\'s (size=2)');

# --- sampling: a server request on the call's POST stream, answered by POST ----

my $st = post($sid, { jsonrpc => '2.0', id => 'samp', method => 'tools/call',
                      params => { name => 'trigger-sampling-request',
                                  arguments => { prompt => 'say hi', maxTokens => 10 } } },
              stream => 1);
is($st->status, 200, 'sampling call: 200');
my $ev = $st->next_event(10);
my $ask = $ev && defined $ev->{data} ? decode_json($ev->{data}) : {};
is($ask->{method}, 'sampling/createMessage', 'the child\'s sampling request on the call\'s stream');
ok(defined $ask->{id}, 'the sampling request has an id');

$r = post($sid, { jsonrpc => '2.0', id => $ask->{id},
                  result => { role => 'assistant', model => 'm',
                              content => { type => 'text', text => 'sampled-reply-42' } } });
is($r->{status}, 202, 'the client\'s answer: 202');

$ev = $st->next_event(10);
my $done = $ev && defined $ev->{data} ? decode_json($ev->{data}) : {};
is($done->{id}, 'samp', 'the call\'s result under the client\'s id');
like($done->{result}{content}[0]{text} // '', qr/sampled-reply-42/,
     'the child got the client\'s sampling answer');
$st->close;

# --- the bound: a session's child counts in size= -----------------------------

my $r2 = init(id => 'init-2');
my $sid2 = $r2->{headers}{'mcp-session-id'};
ok(defined $sid2 && $sid2 ne $sid, 'a second session (the idle pool child gave its place up)');
is(wait_live(2), 2, 'two children: two sessions');

my $r3 = init(id => 'init-3');
is($r3->{json}{id}, 'init-3', 'over the bound: the initialize\'s id');
ok($r3->{json}{error}, 'over the bound: a JSON-RPC error, not a hang');
ok(!defined $r3->{headers}{'mcp-session-id'}, 'over the bound: no session');

# --- unknown sessions; GET ------------------------------------------------------

$r = post('0123456789abcdef0123456789abcdef', { jsonrpc => '2.0', id => 1, method => 'tools/list' });
is($r->{status}, 404, 'an unknown session: 404');
is($r->{json}{id}, 1, 'an unknown session: the request\'s id');

my $g = $t->mcp_get_stream($sid, timeout => 5);
is($g->status, 200, 'GET with the session: a stream');
my $g2 = $t->mcp_get_stream($sid, timeout => 5, quiet => 1);
is($g2->status, 409, 'a second GET stream: 409');
$g2->close;

# --- DELETE: the child stops, the session is gone ---------------------------------

$r = $t->mcp_delete($sid2);
is($r->{status}, 200, 'DELETE: 200');
is(wait_live(1), 1, 'DELETE: its child stopped');
$r = post($sid2, { jsonrpc => '2.0', id => 2, method => 'tools/list' });
is($r->{status}, 404, 'after DELETE: 404');

# --- a child killed mid-call ---------------------------------------------------------

# the session's child: the live one (a child DELETE stopped may still be
# a zombie here, until its worker's next poll reaps it)
my %kids = %{ children() };
my ($pid) = grep { $kids{$_} !~ /^Z/ } keys %kids;
my $call = post($sid, { jsonrpc => '2.0', id => 'long', method => 'tools/call',
                        params => { name => 'trigger-long-running-operation',
                                    arguments => { duration => 30, steps => 3 } } },
                stream => 1);
sleep 0.5;
my $t0 = time;
kill 'KILL', -$pid;
kill 'KILL', $pid;
my $body = $call->read_body(5);
my $elapsed = time - $t0;
# JSON, or the stream's last event when progress made it one
my ($json) = $body =~ /^\s*\{/ ? ($body) : ($body =~ /.*^data: ([^\n]*)/ms);
my $last = eval { decode_json($json // '') } // {};
is($last->{id}, 'long', 'killed mid-call: the caller\'s id');
ok($last->{error}, 'killed mid-call: a JSON-RPC error');
cmp_ok($elapsed, '<', 1, 'killed mid-call: within a second');
my $gev = $g->next_event(5);
my $gmsg = $gev && defined $gev->{data} ? decode_json($gev->{data}) : {};
ok($gmsg->{error}, 'killed: the GET stream ends with a JSON-RPC error')
    or diag explain $gev;
$g->close;
$r = post($sid, { jsonrpc => '2.0', id => 3, method => 'tools/list' });
is($r->{status}, 404, 'killed: the session is gone (404)');
is(wait_live(0), 0, 'killed: no child left');
ok(!grep({ /^Z/ } values %{ children() }), 'killed: reaped, no zombie');

$r = init(id => 'again');
ok(defined $r->{headers}{'mcp-session-id'}, 'the next initialize works');

# --- reload and quit -----------------------------------------------------------------

my $sid3 = $r->{headers}{'mcp-session-id'};
post($sid3, { jsonrpc => '2.0', method => 'notifications/initialized' });
# a GET stream open as the worker exits: its connection is closed with
# it (nginx aborted the old worker with "open socket left" [alert]s)
my $g3 = $t->mcp_get_stream($sid3, timeout => 5);
is($g3->status, 200, 'a GET stream open across the reload');
$t->reload;
for (1 .. 50) { last unless grep { $_ } map { `ps -o pid= --ppid $_` } $t->worker_pids; sleep 0.1 }
1 while defined $g3->next_event(5);
ok($g3->{done}, 'after a reload: the old worker closed the GET stream');
ok(!grep({ /open socket|aborting/ } $t->log_problems),
   'after a reload: no socket left open at the old worker\'s exit')
    or diag join "\n", $t->log_problems;
$r = post($sid3, { jsonrpc => '2.0', id => 4, method => 'tools/list' });
is($r->{status}, 404, 'after a reload: the old worker\'s session is gone (404)');

my $master = $t->master_pid;
my @kids = map { /(\d+)/ ? $1 : () } `ps -o pid= --ppid $master`;
$t->stop;
sleep 0.5;
my $left = 0;
for (`ps -eo pid=,ppid=,args=`) {
    $left++ if /\Q$EV\E/ && /^\s*\d+\s+1\s/;
}
is($left, 0, 'after quit: no orphan child');

done_testing;
