# mcp_pass, the basics: a gateway in front of this module's Everything set
# (a second server block of the same nginx, with its own session zone and a
# JSON access log that tells what the upstream received).  The gateway
# mints the client-facing session id and keeps the upstream's own id to
# itself; JSON replies, SSE streams (progress, sampling with the answer
# POSTed through the gateway, a GET stream, a stream resumed with
# Last-Event-ID, also after the client lost its POST stream) and DELETE
# are relayed; Authorization goes upstream only with
# mcp_pass_authorization on; unknown session ids never reach the upstream.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Time::HiRes ();
use McpTest;
use McpAssert;
use McpGateway;

my $t = McpTest->new(
    ports => 2,
    http  => everything_upstream_http(<<'NGX'),
    upstream everything {
        server 127.0.0.1:%%PORT2%%;
    }
NGX
    server => <<'NGX',
        location = /mcp   { mcp_pass http://127.0.0.1:%%PORT2%%/mcp; mcp_session gw; }
        location = /named { mcp_pass http://everything/mcp; mcp_session gw; }
        location = /auth  { mcp_pass http://everything/mcp; mcp_session gw;
                            mcp_pass_authorization on; }
NGX
)->start;

my $HEX32 = qr/^[0-9a-f]{32}$/;

sub up_lines { scalar(my @l = upstream_log($t)) }

sub settled_up_lines { upstream_log_settled($t) }

# --- initialize: the gateway's id, not the replica's --------------------------

my ($sid, $init, $ir) = $t->mcp_initialize(id => 'init-1', client_info => { name => 'gw-basic', version => '1' });
like($sid, $HEX32, 'initialize through the gateway: Mcp-Session-Id of 32 hex digits');
is($ir->{headers}{'content-type'}, 'application/json', 'initialize: application/json relayed');
is($init->{serverInfo}{name}, 'ngx_http_mcp_module', 'initialize: the upstream answered (its serverInfo)');
is($init->{protocolVersion}, '2025-11-25', 'initialize: protocol version negotiated by the upstream');
is($ir->{headers}{'mcp-protocol-version'}, '2025-11-25', 'initialize: MCP-Protocol-Version relayed');

my $up_init = wait_upstream($t, sub { $_[0]{rpc} eq 'initialize' && $_[0]{rid} eq 'init-1' });
ok($up_init, 'the upstream got the initialize') or diag(explain [upstream_log($t)]);
my $usid = ($up_init // {})->{sid_out} // '';
like($usid, $HEX32, "the upstream minted its own session id ($usid)");
isnt($usid, $sid, 'the client-facing id is not the upstream\'s');
is($up_init->{sid}, '', 'the initialize reached the upstream without a session id');
unlike($ir->{raw}, qr/\Q$usid\E/, 'the upstream\'s id is nowhere in the reply the client got');

my $up_notif = wait_upstream($t, sub { $_[0]{rpc} eq 'notifications/initialized' && $_[0]{sid} eq $usid });
ok($up_notif, 'notifications/initialized reached the upstream with the upstream\'s id');
is(($up_notif // {})->{status}, '202', '... and was answered 202');
is(($up_notif // {})->{pv}, '2025-11-25', '... with MCP-Protocol-Version relayed');
is(($up_notif // {})->{host}, '127.0.0.1:' . $t->port(2), '... and Host as written in mcp_pass');

{
    # the upstream knows only its own id
    my $r = $t->mcp_post($sid, '{"jsonrpc":"2.0","id":"direct","method":"ping"}', port => $t->port(2));
    is($r->{status}, 404, 'the client-facing id is unknown to the upstream itself (direct request: 404)');
    $r = $t->mcp_post($usid, '{"jsonrpc":"2.0","id":"direct2","method":"ping"}', port => $t->port(2));
    is($r->{status}, 200, 'the upstream\'s own id works directly on the upstream');
}

# --- JSON replies -------------------------------------------------------------

{
    my ($dsid) = $t->mcp_initialize(port => $t->port(2));    # direct, for comparison
    my $direct = $t->mcp_call($dsid, 'tools/list', undef, port => $t->port(2));
    my ($list, undef, $r) = $t->mcp_call($sid, 'tools/list', undef, id => 'tl');
    is($r->{headers}{'content-type'}, 'application/json', 'tools/list: application/json');
    is(ref $list->{tools}, 'ARRAY', 'tools/list through the gateway: a list of tools');
    is(scalar @{ $list->{tools} // [] }, 36, 'tools/list: the 36 Everything tools');
    is_deeply($list, $direct, 'tools/list: exactly what the upstream answers directly');
    $t->mcp_delete($dsid, port => $t->port(2));
}

{
    my ($msg, $r) = $t->mcp_request($sid, 'tools/call', { name => 'test_simple_text' }, id => 'st');
    is($r->{status}, 200, 'tools/call test_simple_text: 200');
    is($r->{headers}{'content-type'}, 'application/json', 'tools/call test_simple_text: application/json');
    is_result($msg, { content => [ { type => 'text', text => 'This is a simple text response for testing.' } ] },
              'st', 'tools/call test_simple_text: the upstream\'s result, id kept');
    is($r->{headers}{'mcp-session-id'}, undef, 'no Mcp-Session-Id on later replies (the upstream sends none)');
    my $l = wait_upstream($t, sub { $_[0]{rid} eq 'st' });
    is(($l // {})->{sid}, $usid, 'tools/call reached the upstream with the upstream\'s id');
    is(($l // {})->{tool}, 'test_simple_text', 'the upstream saw the tool name');
}

{
    # a notification and a ping, on one kept-alive connection
    my $n = $t->mcp_notify($sid, 'notifications/roots/list_changed', undef, keepalive => 1);
    is($n->{status}, 202, 'a notification through the gateway: 202');
    my $r = $t->mcp_post($sid, '{"jsonrpc":"2.0","id":"p1","method":"ping"}', conn => $n->{conn});
    is_result($r->{json}, {}, 'p1', 'ping on the same client connection: {}');
}

# --- SSE: progress, relayed as it is produced --------------------------------

{
    my $t0 = Time::HiRes::time();
    my $s = $t->mcp_post($sid, { jsonrpc => '2.0', id => 'prog', method => 'tools/call',
                                 params => { name => 'test_tool_with_progress',
                                             _meta => { progressToken => 'tok' } } }, stream => 1);
    is($s->status, 200, 'test_tool_with_progress: 200');
    like($s->header('content-type') // '', qr{^text/event-stream}, 'test_tool_with_progress: text/event-stream relayed');
    is($s->header('x-accel-buffering'), 'no', 'X-Accel-Buffering: no relayed');
    is($s->header('content-length'), undef, 'no Content-Length on the relayed stream');
    my (@ev, @at);
    while (my $ev = $s->next_event(5)) { push @ev, $ev; push @at, Time::HiRes::time() - $t0 }
    ok($s->is_done && !$s->{error}, 'the stream ended cleanly after the result')
        or diag($s->{error} // 'timed out');
    my @data = grep { defined $_->{json} } @ev;
    ok(@ev && !length($ev[0]{data} // '') && defined $ev[0]{id} && defined $ev[0]{retry},
       'the upstream\'s priming event (id and retry, no message) is relayed first');
    is_deeply([ map { $_->{json}{params}{progress} } grep { ($_->{json}{method} // '') eq 'notifications/progress' } @data ],
              [ 0, 50, 100 ], 'progress notifications 0, 50, 100, in order');
    is_deeply([ map { $_->{json}{params}{progressToken} } grep { $_->{json}{method} } @data ],
              [ ('tok') x 3 ], 'progress notifications carry the client\'s token');
    is_result($data[-1]{json}, { content => [ { type => 'text', text => 'Tool with progress executed successfully' } ] },
              'prog', 'the result comes last');
    my @ids = map { $_->{id} // 'none' } @ev;
    my ($stream) = ($ids[0] // '') =~ /^(\d+)-0$/;
    ok(defined $stream && (grep { /^\Q$stream\E-\d+$/ } @ids) == @ids,
       "every event has the upstream's id <stream>-<seq> (@ids)");
    is_deeply([ map { /-(\d+)$/ ? $1 : -1 } @ids ], [ 0 .. $#ids ], 'event ids in sequence, none lost or added');
    # The upstream sends the steps about 50 ms apart: relayed unbuffered,
    # they arrive apart too (buffered, they would all come with the result).
    my ($first) = grep { ($ev[$_]{json}{method} // '') eq 'notifications/progress' } 0 .. $#ev;
    ok(defined $first && $at[-1] - $at[$first] >= 0.06,
       sprintf('the first progress arrived %.3fs before the result (relayed as sent)',
               defined $first ? $at[-1] - $at[$first] : -1));
}

# --- SSE: sampling, the client's answer POSTed through the gateway -----------

{
    my ($ssid) = $t->mcp_initialize(capabilities => { sampling => {} });
    my $s = $t->mcp_post($ssid, { jsonrpc => '2.0', id => 'samp', method => 'tools/call',
                                  params => { name => 'test_sampling', arguments => { prompt => 'Say hi' } } },
                         stream => 1);
    is($s->status, 200, 'test_sampling: 200 stream');
    my $req;
    while (my $ev = $s->next_event(5)) {
        if ($ev->{json} && ($ev->{json}{method} // '') eq 'sampling/createMessage') { $req = $ev->{json}; last }
    }
    ok($req && defined $req->{id}, 'sampling/createMessage arrives on the relayed stream');
    is(($req // {})->{params}{messages}[0]{content}{text}, 'Say hi', '... with the prompt');
    my $a = $t->mcp_post($ssid, { jsonrpc => '2.0', id => ($req // {})->{id},
                                  result => { role => 'assistant', model => 'test-model',
                                              content => { type => 'text', text => 'hi there' } } });
    is($a->{status}, 202, 'the client\'s answer POSTed through the gateway: 202');
    my @rest = $s->read_all(5);
    my ($res) = grep { $_->{json} && ($_->{json}{id} // '') eq 'samp' } @rest;
    is_result(($res // {})->{json}, { content => [ { type => 'text', text => 'LLM response: hi there' } ] },
              'samp', 'the tool\'s result used the answer');
    ok($s->is_done, 'the sampling stream ended after the result');
    my $up = wait_upstream($t, sub { $_[0]{method} eq 'POST' && $_[0]{rpc} eq '' && $_[0]{status} eq '202'
                                      && $_[0]{sid} ne $usid && $_[0]{sid} ne '' });
    ok($up, 'the answer reached the upstream (a POST without a method, 202)');
    $t->mcp_delete($ssid);
}

# --- GET stream: server-initiated messages ------------------------------------

{
    my $g = $t->mcp_get_stream($sid);
    is($g->status, 200, 'GET stream through the gateway: 200');
    like($g->header('content-type') // '', qr{^text/event-stream}, 'GET stream: text/event-stream');
    my $prime = $g->next_event(5);
    ok($prime && defined $prime->{id} && !length($prime->{data} // ''), 'GET stream: the priming event is relayed');
    my $sub = $t->mcp_call($sid, 'resources/subscribe', { uri => 'test://watched-resource' });
    is_deeply($sub, {}, 'resources/subscribe through the gateway');
    my $upd = $t->mcp_call($sid, 'tools/call', { name => 'update_watched_resource' });
    is(($upd->{content} // [])->[0]{text}, 'test://watched-resource updated', 'update_watched_resource called');
    my $ev = $g->next_event(5);
    is_deeply(($ev // {})->{json}, { jsonrpc => '2.0', method => 'notifications/resources/updated',
                                     params => { uri => 'test://watched-resource' } },
              'notifications/resources/updated arrives on the GET stream');
    like(($ev // {})->{id} // '', qr/^\d+-\d+$/, '... with the upstream\'s event id');
    $g->close;
    my $l = wait_upstream($t, sub { $_[0]{method} eq 'GET' && $_[0]{last_event_id} eq '' });
    is(($l // {})->{sid}, $usid, 'the GET reached the upstream with the upstream\'s id');
    is(($l // {})->{accept}, 'text/event-stream', '... and Accept: text/event-stream');
}

# --- a stream resumed with Last-Event-ID --------------------------------------

{
    my $s = $t->mcp_post($sid, { jsonrpc => '2.0', id => 'recon', method => 'tools/call',
                                 params => { name => 'test_reconnection' } }, stream => 1);
    my @ev = $s->read_all(5);
    ok($s->is_done, 'test_reconnection: the POST stream ends after the priming event');
    is(scalar(grep { defined $_->{data} && length $_->{data} } @ev), 0, '... with no message');
    my $last = $s->last_id;
    like($last, qr/^\d+-\d+$/, "the priming event's id ($last)");
    my $g = $t->mcp_get_stream($sid, last_event_id => $last);
    is($g->status, 200, 'GET with Last-Event-ID through the gateway: 200');
    my @rest = $g->read_all(5);
    my ($res) = grep { $_->{json} } @rest;
    is_result(($res // {})->{json},
              { content => [ { type => 'text',
                  text => 'Reconnection test completed: the result arrived on the resumed stream' } ] },
              'recon', 'the result arrives on the resumed stream');
    ok($g->is_done, 'the resumed stream ends after the result');
    my $l = wait_upstream($t, sub { $_[0]{method} eq 'GET' && $_[0]{last_event_id} eq $last });
    ok($l, 'Last-Event-ID was relayed to the upstream');
    is(($l // {})->{sid}, $usid, '... with the upstream\'s session id');
}

# --- a client that lost its POST stream resumes it through the gateway ------

{
    my $s = $t->mcp_post($sid, { jsonrpc => '2.0', id => 'lost', method => 'tools/call',
                                 params => { name => 'test_tool_with_progress',
                                             _meta => { progressToken => 'lost-tok' } } }, stream => 1);
    my @got = grep { defined } map { $s->next_event(5) } 1 .. 2;    # priming event, progress 0
    my $last = $s->last_id;
    $s->close;
    is(scalar @got, 2, "a POST stream read up to its first progress ($last), then the client's connection is lost");
    my $g = $t->mcp_get_stream($sid, last_event_id => $last);
    is($g->status, 200, 'GET with that Last-Event-ID through the gateway: 200');
    my @rest = $g->read_all(5);
    is_deeply([ map { $_->{json}{params}{progress} // 'result' } grep { $_->{json} } @rest ], [ 50, 100, 'result' ],
              'the rest of the stream arrives: progress 50, 100, then the result');
    is(($rest[-1]{json} // {})->{id}, 'lost', '... the result of the call that went on');
    ok($g->is_done, '... and the resumed stream ends');
}

# --- named upstream, Authorization -------------------------------------------

{
    my ($nsid) = $t->mcp_initialize(path => '/named');
    like($nsid, $HEX32, 'mcp_pass http://<upstream block>/mcp: initialize');
    my $res = $t->mcp_call($nsid, 'tools/call', { name => 'test_simple_text' }, path => '/named');
    is(($res->{content} // [])->[0]{text}, 'This is a simple text response for testing.',
       'mcp_pass to an upstream block: tools/call');

    my $r = $t->mcp_post($nsid, '{"jsonrpc":"2.0","id":"auth-off","method":"ping"}', path => '/named',
                         headers => { Authorization => 'Bearer s3cr3t-off' });
    is($r->{status}, 200, 'a request with Authorization: 200');
    my $l = wait_upstream($t, sub { $_[0]{rid} eq 'auth-off' });
    ok($l, 'it reached the upstream');
    is(($l // {})->{auth}, '', 'Authorization is not passed upstream by default');

    my ($asid) = $t->mcp_initialize(path => '/auth', headers => { Authorization => 'Bearer s3cr3t-init' });
    $r = $t->mcp_post($asid, '{"jsonrpc":"2.0","id":"auth-on","method":"ping"}', path => '/auth',
                      headers => { Authorization => 'Bearer s3cr3t-on' });
    is($r->{status}, 200, 'mcp_pass_authorization on: 200');
    $l = wait_upstream($t, sub { $_[0]{rid} eq 'auth-on' });
    is(($l // {})->{auth}, 'Bearer s3cr3t-on', 'mcp_pass_authorization on: Authorization passed upstream');
    $l = wait_upstream($t, sub { $_[0]{rpc} eq 'initialize' && $_[0]{auth} ne '' });
    is(($l // {})->{auth}, 'Bearer s3cr3t-init', '... on initialize too');
    $t->mcp_delete($asid, path => '/auth');
    $t->mcp_delete($nsid, path => '/named');
}

# --- unknown or missing session ids never reach the upstream ------------------

{
    my $before = settled_up_lines();
    my $r = $t->mcp_post('0' x 32, '{"jsonrpc":"2.0","id":"unk","method":"ping"}');
    is_rpc_error_body($r, 404, -32001, 'unk', 'unknown session id: 404 JSON-RPC error from the gateway');
    $r = $t->mcp_post(undef, '{"jsonrpc":"2.0","id":"nos","method":"ping"}');
    is_rpc_error_body($r, 400, -32600, 'nos', 'no session id: 400');
    my $g = $t->mcp_get_stream('0' x 32, quiet => 1);
    is($g->status, 404, 'GET with an unknown session id: 404');
    like($g->read_body(2) // '', qr/"code":-32001/, '... a JSON-RPC error');
    $r = $t->mcp_post($sid, '{"jsonrpc":"2.0","id":"mark1","method":"ping"}');
    wait_upstream($t, sub { $_[0]{rid} eq 'mark1' });
    is(up_lines(), $before + 1, 'none of them reached the upstream (only the marker ping did)');
}

# --- DELETE -------------------------------------------------------------------

{
    my $g = $t->mcp_get_stream($sid);
    $g->next_event(5);
    my $r = $t->mcp_delete($sid);
    is($r->{status}, 200, 'DELETE through the gateway: 200');
    my @ev = $g->read_all(3);
    ok($g->is_done && !$g->{timed_out}, 'the session\'s open GET stream ends with it');
    my $l = wait_upstream($t, sub { $_[0]{method} eq 'DELETE' && $_[0]{sid} eq $usid });
    ok($l, 'the DELETE reached the upstream with the upstream\'s id');
    is(($l // {})->{status}, '200', '... which ended its session');
    my $before = settled_up_lines();
    $r = $t->mcp_post($sid, '{"jsonrpc":"2.0","id":"gone","method":"ping"}');
    is_rpc_error_body($r, 404, -32001, 'gone', 'after DELETE: the session is gone (404, -32001)');
    is($r->{json}{error}{message}, 'Session not found', '... "Session not found"');
    $r = $t->mcp_delete($sid);
    is($r->{status}, 404, 'a second DELETE: 404');
    $r = $t->mcp_post($usid, '{"jsonrpc":"2.0","id":"gone2","method":"ping"}', port => $t->port(2));
    is($r->{status}, 404, 'the upstream\'s session is gone too (direct request: 404)');
    wait_upstream($t, sub { $_[0]{rid} eq 'gone2' });
    is(settled_up_lines(), $before + 1, 'the gateway answered for the deleted session itself');
}

$t->stop;
done_testing;
