# Several nodes with no shared state (issue #16, items 1 and 3).
#
# The keyed gateway tier: three gateway nginx instances (separate processes,
# so separate zones) with one mcp_session_key and no session zone of their
# own, behind a front nginx whose plain round-robin upstream has no
# affinity, in front of two replicas (the built-in Everything set, each
# its own nginx: a request that reached the wrong replica would get 404).
# One 2025-11-25 session's initialize, tools/list, tools/call, GET stream
# and DELETE each reach a different gateway node and succeed; many
# sessions spread over both replicas; key rotation ([new, old] opens ids
# sealed with old; a node with [new] alone refuses them); forged,
# tampered, truncated, re-spelled ids, another key's ids and an id naming
# a replica outside the location's upstream all get 404 with the JSON-RPC
# -32001 error; a DELETE ends the session on its replica and later uses
# get the replica's 404; a gateway node killed mid-run: the sessions go on
# through the others.  The official 2025-11-25 conformance suite runs
# through the front and the keyed gateways.
#
# The 2026-07-28 stateless path: two nodes sharing one mcp_state_key file
# behind the front: a three-round input_required conversation whose rounds
# land on different nodes completes, directly and through the gateway
# tier; with a key of each node's own, the second round is refused with
# -32602.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Time::HiRes qw(sleep);
use Digest::SHA qw(sha256_hex);
use McpTest timeout => 600;
use McpAssert;
use McpGateway qw(stop_process conformance_2025_11_25 served_by);

my $V26 = '2026-07-28';
my $P   = 'io.modelcontextprotocol/';
my $MR  = 'test_input_required_result_multi_round';
my %EL  = (elicitation => {});

# --- the key files ---------------------------------------------------------------------

my $keys = McpTest->new(server => '');
my $key_a   = $keys->write_file('conf/a.key', "session-key-a-" . ('a' x 40) . "\n");
my $key_b   = $keys->write_file('conf/b.key', "session-key-b-" . ('b' x 40) . "\n");
my $key_x   = $keys->write_file('conf/x.key', "session-key-x-" . ('x' x 40) . "\n");
my $state   = $keys->write_file('conf/state.key', "state-key-" . ('s' x 40) . "\n");
my $state_1 = $keys->write_file('conf/state1.key', "state-key-one-" . ('1' x 40) . "\n");
my $state_2 = $keys->write_file('conf/state2.key', "state-key-two-" . ('2' x 40) . "\n");
my $api_keys = $keys->write_file('conf/api_keys',
    join '', map { sha256_hex($_->[0]) . " $_->[1] mcp:tools mcp:resources mcp:prompts\n" }
                 [ 'sk_t81_alice', 'alice' ], [ 'sk_t81_bob', 'bob' ]);

# --- replicas: r1, r2 in the gateways' upstream, r3 outside it ---------------------------

my @own = ($state_1, $state_2, $state_1);
my @rep = map {
    McpTest->new(workers => 2, server => <<"NGX")->start
        location = /mcp { mcp on; mcp_builtin everything; mcp_state_key $state; }
        location = /own { mcp on; mcp_builtin everything; mcp_state_key $own[$_]; }
NGX
} 0 .. 2;
my %rep_of = map { ('127.0.0.1:' . $rep[$_]->port => $_) } 0 .. 2;

# --- gateways: one key, no mcp_session zone ---------------------------------------------

sub gateway_conf {
    my (@keys) = @_;
    my $k = join '', map { " mcp_session_key $_;" } @keys;
    return (server => <<"NGX");
        access_log %%PREFIX%%/logs/gw.log gw;
        access_log %%PREFIX%%/logs/sid.log sid;
        location = /mcp   { mcp_pass http://replicas/mcp;$k }
        location = /auth  { mcp_pass http://replicas/mcp;$k mcp_auth_jwt "MCP";
                            mcp_auth_resource http://127.0.0.1/auth; mcp_auth_api_keys $api_keys; }
        location = /other { mcp_pass http://127.0.0.1:@{[ $rep[2]->port ]}/mcp;$k }
NGX
}

my $gw_http = <<"NGX";
    log_format gw '\$http_x_tag \$request_method \$upstream_addr \$status';
    log_format sid '\$http_x_tag \$mcp_session_id';
    # as docs/gateway.md advises: keyed ids pick the replica, mcp_affinity
    # takes it through the block and its keepalive cache
    upstream replicas {
        mcp_affinity;
        server 127.0.0.1:@{[ $rep[0]->port ]};
        server 127.0.0.1:@{[ $rep[1]->port ]};
        keepalive 8;
    }
NGX

my @gw = map { McpTest->new(workers => 2, http => $gw_http, gateway_conf($key_a))->start } 0 .. 2;
my %gw_of = map { ('127.0.0.1:' . $gw[$_]->port => $_) } 0 .. 2;

# --- the front: plain round robin, no affinity -------------------------------------------

my $front = McpTest->new(workers => 1, McpGateway::front_conf(<<"NGX", <<'NGX'))->start;
    upstream gateways {
@{[ join '', map { "        server 127.0.0.1:" . $_->port . ";\n" } @gw ]}    }
    upstream nodes {
        server 127.0.0.1:@{[ $rep[0]->port ]};
        server 127.0.0.1:@{[ $rep[1]->port ]};
    }
NGX
        location = /mcp   { proxy_pass http://gateways; }
        location = /keyed { proxy_pass http://nodes/mcp; }
        location = /own   { proxy_pass http://nodes/own; }
NGX

sub tag { (headers => { 'X-Tag' => $_[0] }) }

# the Everything set's test_custom_header_tool echoes its arguments
sub echo_args { { name => 'test_custom_header_tool',
                  arguments => { region => 'eu', priority => 1, verbose => JSON::PP::false(), query => $_[0] } } }
sub echo_ok { text_of($_[0]) =~ /^Called with: \{.*"query":"\Q$_[1]\E"/ }

sub text_of { ((($_[0] // {})->{result} // {})->{content} // [ {} ])->[0]{text} // '' }

# --- (1) one session, every request on another gateway ------------------------------------

my $n = 0;
{
    my ($sid, $init, $ir) = $front->mcp_initialize(id => 'i-1', headers => { 'X-Tag' => 's1-init' });
    my $g_init = served_by($front, 'front.log', 's1-init', \%gw_of);
    like($sid, qr/^[A-Za-z0-9_-]{80,200}$/, 'initialize through the front: a keyed session id, base64url, '
         . length($sid) . ' characters');
    my $replica = served_by($gw[$g_init], 'gw.log', 's1-init', \%rep_of);
    ok(defined $replica, "initialize: gateway $g_init, replica " . ($replica // '?'));

    my ($list, $lr) = $front->mcp_request($sid, 'tools/list', undef, id => 'l-1', tag('s1-list'));
    ok(ref(($list // {})->{result}) && @{ $list->{result}{tools} // [] } > 5, 'tools/list: the tools');
    my ($call) = $front->mcp_request($sid, 'tools/call', echo_args('hop'),
                                     id => 'c-1', tag('s1-call'));
    ok(echo_ok($call, 'hop'), 'tools/call echo: answered');
    my $g = $front->mcp_get_stream($sid, headers => { 'X-Tag' => 's1-get' });
    is($g->status, 200, 'GET stream: 200');
    like($g->header('content-type') // '', qr{^text/event-stream}, '... text/event-stream');
    $g->close;
    my $d = $front->mcp_delete($sid, headers => { 'X-Tag' => 's1-delete' });
    ok($d->{status} == 200 || $d->{status} == 204, "DELETE: $d->{status}");

    my @g = map { served_by($front, 'front.log', "s1-$_", \%gw_of) } qw(init list call get delete);
    my %distinct = map { ($_ // 'none') => 1 } @g;
    is(scalar(grep { defined } @g), 5, 'the front logged the gateway of every request');
    is(scalar keys %distinct, 3, 'the five requests reached all three gateway nodes (' . join(' ', map { $_ // '?' } @g) . ')');
    my @r = map { served_by($gw[$g[$_]], 'gw.log', "s1-" . (qw(init list call get delete))[$_], \%rep_of) } 0 .. 4;
    is_deeply(\@r, [ ($replica) x 5 ], 'every gateway sent them to the session\'s replica');

    my $r = $front->mcp_post($sid, { jsonrpc => '2.0', id => 'after-delete', method => 'ping' });
    is_rpc_error_body($r, 404, -32001, 'after-delete', 'after DELETE: 404, -32001 (the replica forgot it)');

    for my $inst (@gw) {
        unlike($inst->error_log, qr/\Q$sid\E/, 'the session id is in no gateway\'s error.log');
    }
    my ($line) = grep { /^s1-init / } split /\n/, McpTest::_slurp($gw[$g_init]->prefix . '/logs/sid.log') // '';
    is($line, "s1-init $sid", '$mcp_session_id at initialize: the keyed id');
    ($line) = grep { /^s1-list / } split /\n/, McpTest::_slurp($gw[$g[1]]->prefix . '/logs/sid.log') // '';
    is($line, "s1-list $sid", '... and on a later request on another node');
}

# --- (2) sessions spread over the replicas, pinned whatever the gateway -------------------

my @s;
{
    for my $i (1 .. 6) {
        my $sid = $front->mcp_initialize(id => "m-$i", headers => { 'X-Tag' => "m$i-init" });
        my $gi = served_by($front, 'front.log', "m$i-init", \%gw_of);
        push @s, { sid => $sid, n => $i, replica => served_by($gw[$gi], 'gw.log', "m$i-init", \%rep_of) };
    }
    my %per;
    $per{ $_->{replica} // 'none' }++ for @s;
    is_deeply([ sort keys %per ], [ 0, 1 ], 'six sessions spread over both replicas');

    my ($ok, %gws) = (1);
    for my $round (1 .. 3) {
        for my $x (@s) {
            my $tag = "m$x->{n}-r$round";
            my ($m) = $front->mcp_request($x->{sid}, 'tools/call',
                echo_args("$x->{n}.$round"), tag($tag));
            $ok &&= echo_ok($m, "$x->{n}.$round");
            $gws{ served_by($front, 'front.log', $tag, \%gw_of) // 'none' }++;
        }
    }
    ok($ok, '3 rounds of tools/call over the six sessions: all answered by their replicas');
    is_deeply([ sort keys %gws ], [ 0, 1, 2 ], 'spread over the three gateways');
}

# --- (3) refused ids: 404 with the JSON-RPC error -----------------------------------------

{
    my $sid = $s[0]{sid};
    my $flip = sub { my ($s, $i) = @_; my $c = substr($s, $i, 1); substr($s, $i, 1) = $c eq 'A' ? 'B' : 'A'; $s };
    my $other = $gw[0]->mcp_initialize(path => '/other');
    ok(length $other > 80, 'a session of another location of the same key (replica 3, outside /mcp\'s upstream)');

    my %bad = (
        'tampered (a character of the ciphertext)' => $flip->($sid, int(length($sid) / 2)),
        'tampered (the tag)'                       => $flip->($sid, length($sid) - 2),
        'tampered (the key id)'                    => $flip->($sid, 2),
        'truncated'                                => substr($sid, 0, length($sid) - 4),
        'truncated to a third'                     => substr($sid, 0, int(length($sid) / 3)),
        'lengthened'                               => $sid . 'AAAA',
        'padded'                                   => $sid . '=',
        'not base64url'                            => substr($sid, 0, 10) . '+/' . substr($sid, 12),
        'garbage of the same length'               => 'Q' x length($sid),
        'a zone-style hex id'                      => '0123456789abcdef' x 4,
        'a replica outside the upstream'           => $other,
    );
    for my $what (sort keys %bad) {
        my $b = $bad{$what};
        my $r = $front->mcp_post($b, { jsonrpc => '2.0', id => 'bad', method => 'tools/list' });
        is_rpc_error_body($r, 404, -32001, 'bad', "POST with an id $what: 404, -32001");
        my $g = $front->mcp_get_stream($b);
        is($g->status, 404, "GET with an id $what: 404");
        $g->close;
        my $d = $front->mcp_delete($b);
        is_rpc_error_body($d, 404, -32001, undef, "DELETE with an id $what: 404, -32001");
    }
    my $big = 'A' x 6000;
    my $r = $front->mcp_post($big, { jsonrpc => '2.0', id => 'big', method => 'ping' });
    is_rpc_error_body($r, 404, -32001, 'big', 'a 6000-character id: 404, -32001');

    my ($m) = $gw[0]->mcp_request($other, 'tools/call', echo_args('r3'),
                                  path => '/other');
    ok(echo_ok($m, 'r3'), '... while on its own location that session works');
    # an id is sealed for its location (issue 35): another location's is
    # refused by its tag, before the replica it names is looked at
    unlike($gw[0]->error_log, qr/not a server of the upstream/,
           'the other location\'s id: refused by its seal, its replica never looked at');
    my $m1 = $front->mcp_request($s[0]{sid}, 'ping', undef, id => 'still');
    ok($m1 && $m1->{result}, 'the untampered id still works');
}

# --- (3b) a session is its caller's ----------------------------------------------------------

{
    my %alice = (Authorization => 'Bearer sk_t81_alice');
    my %bob   = (Authorization => 'Bearer sk_t81_bob');
    my $sid = $gw[0]->mcp_initialize(path => '/auth', headers => \%alice, skip_initialized => 1);
    my $n = $gw[2]->mcp_notify($sid, 'notifications/initialized', undef, path => '/auth', headers => \%alice);
    is($n->{status}, 202, 'a bound session (mcp_auth_api_keys): initialized on another node');
    my ($m) = $gw[1]->mcp_request($sid, 'ping', undef, id => 'a-1', path => '/auth', headers => \%alice);
    ok($m && $m->{result}, 'a bound session: its caller goes on on another node');
    my $r = $gw[1]->mcp_post($sid, { jsonrpc => '2.0', id => 'a-2', method => 'ping' }, path => '/auth',
                             headers => \%bob);
    is_rpc_error_body($r, 404, -32001, 'a-2', 'another caller with the id: 404, -32001');
    $r = $gw[2]->mcp_post($sid, { jsonrpc => '2.0', id => 'a-3', method => 'ping' });
    is_rpc_error_body($r, 404, -32001, 'a-3', 'the bound id on the location without authorization: 404, -32001');
    my $open = $front->mcp_initialize;
    $r = $gw[1]->mcp_post($open, { jsonrpc => '2.0', id => 'a-4', method => 'ping' }, path => '/auth',
                          headers => \%alice);
    is_rpc_error_body($r, 404, -32001, 'a-4', 'an unbound id on the authorized location: 404, -32001');
}

# --- (4) key rotation ----------------------------------------------------------------------

{
    my $x = $s[1];
    # gateway 2 rotates: [b, a]
    $gw[2]->write_config(gateway_conf($key_b, $key_a));
    $gw[2]->reload;
    my ($m) = $gw[2]->mcp_request($x->{sid}, 'tools/call', echo_args('old'));
    ok(echo_ok($m, 'old'), 'a node with [new, old] opens an id sealed with old');
    my $new = $gw[2]->mcp_initialize;
    ($m) = $gw[2]->mcp_request($new, 'tools/call', echo_args('new'));
    ok(echo_ok($m, 'new'), '... and seals new sessions with new');
    my $r = $gw[0]->mcp_post($new, { jsonrpc => '2.0', id => 'rot-1', method => 'ping' });
    is_rpc_error_body($r, 404, -32001, 'rot-1', 'a node with [old] only: the new key\'s id is 404, -32001');

    # the others follow; then old is retired on gateway 2
    for my $i (0, 1) {
        $gw[$i]->write_config(gateway_conf($key_b, $key_a));
        $gw[$i]->reload;
    }
    ($m) = $gw[0]->mcp_request($new, 'tools/call', echo_args('new2'));
    ok(echo_ok($m, 'new2'), 'after its rotation the node opens it');
    $gw[2]->write_config(gateway_conf($key_b));
    $gw[2]->reload;
    $r = $gw[2]->mcp_post($x->{sid}, { jsonrpc => '2.0', id => 'rot-2', method => 'ping' });
    is_rpc_error_body($r, 404, -32001, 'rot-2', 'old retired ([new] only): an old id is 404, -32001');
    ($m) = $gw[2]->mcp_request($new, 'ping', undef, id => 'rot-3');
    ok($m && $m->{result}, '... a new one still opens');
    $gw[2]->write_config(gateway_conf($key_b, $key_a));
    $gw[2]->reload;

    # another key altogether
    my $gx = McpTest->new(workers => 1, http => $gw_http, gateway_conf($key_x))->start;
    $r = $gx->mcp_post($x->{sid}, { jsonrpc => '2.0', id => 'kx', method => 'ping' });
    is_rpc_error_body($r, 404, -32001, 'kx', 'a node of another key: 404, -32001');
    $gx->stop;
}

# --- (4b) what a replica's session id may be -------------------------------------------------

{
    # initialize: an Mcp-Session-Id of the length clientInfo.name asks
    # ("len-N"; "none": a stateless server); anything else: the id it got
    my $fake = McpGateway::fake_upstream(sub {
        my ($c, $head, $body) = @_;
        my ($id) = $body =~ /"id":("[^"]*"|\d+)/;
        my ($got) = $head =~ /^Mcp-Session-Id:\s*(\S+)/mi;
        my ($sid, $json) = ('', '');
        if ($body =~ /"method":"initialize"/) {
            my ($len) = $body =~ /"name":"len-(\d+)"/;
            $sid = defined $len ? "Mcp-Session-Id: " . ('x' x $len) . "\r\n" : '';
            $json = qq({"jsonrpc":"2.0","id":$id,"result":{"protocolVersion":"2025-11-25","capabilities":{},)
                  . qq("serverInfo":{"name":"fake","version":"1"}}});
        } elsif (defined $id) {
            $json = qq({"jsonrpc":"2.0","id":$id,"result":{"got":") . ($got // 'none') . qq("}});
        }
        print $c length $json
            ? "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n${sid}Content-Length: "
              . length($json) . "\r\nConnection: close\r\n\r\n$json"
            : "HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
    });
    my $gf = McpTest->new(workers => 1, server => <<"NGX")->start;
        location = /mcp { mcp_pass http://127.0.0.1:$fake->{port}/mcp; mcp_session_key $key_a; }
NGX
    my $init = sub {
        my ($name) = @_;
        return $gf->mcp_post(undef, { jsonrpc => '2.0', id => 1, method => 'initialize',
            params => { protocolVersion => '2025-11-25', capabilities => {},
                        clientInfo => { name => $name, version => '1' } } });
    };
    my $r = $init->('len-1024');
    my $sid = $r->{headers}{'mcp-session-id'} // '';
    ok($r->{status} == 200 && length $sid > 1300, 'a replica id of 1024 bytes: carried (a keyed id of '
       . length($sid) . ' characters)');
    my ($m) = $gf->mcp_request($sid, 'ping', undef, id => 'f-1');
    is((($m // {})->{result} // {})->{got}, 'x' x 1024, '... and sent back to the replica whole');
    $gf->expect_log_error(qr/the session id of replica "127\.0\.0\.1:\d+" is too long for a keyed session id \(1025 bytes\)/);
    $r = $init->('len-1025');
    ok($r->{status} == 502 && !defined $r->{headers}{'mcp-session-id'}
       && ((($r->{json} // {})->{error} // {})->{code} // 0) < 0,
       "a replica id of 1025 bytes: $r->{status} with a JSON-RPC error, no session");
    $r = $init->('none');
    $sid = $r->{headers}{'mcp-session-id'} // '';
    ok($r->{status} == 200 && length $sid > 60, 'a stateless replica (no id): the client still gets a keyed id');
    ($m) = $gf->mcp_request($sid, 'ping', undef, id => 'f-2');
    is((($m // {})->{result} // {})->{got}, 'none', '... and the replica gets no Mcp-Session-Id');
    $gf->stop;
    stop_process($fake->{pid}, 'TERM');
}

# --- (5) nginx -t -------------------------------------------------------------------------

{
    my $bad = McpTest->new(workers => 1, http => $gw_http, server => '');
    my $short = $bad->write_file('conf/short.key', 'k' x 31);
    my %cases = (
        "mcp_session_key $short;"  => qr/"\Q$short\E" must hold at least 32 bytes/,
        'mcp_session_key %%PREFIX%%/conf/none.key;' => qr/none\.key" failed/,
        "mcp_session_key $key_a; mcp_session_key $key_a;" => qr/"mcp_session_key" directive names a key twice/,
    );
    for my $d (sort keys %cases) {
        $bad->write_config(server => "location = /mcp { mcp_pass http://replicas/mcp; $d }");
        my ($rc, $out) = $bad->nginx_t;
        ok($rc != 0 && $out =~ /\[emerg\].*$cases{$d}/, "nginx -t refuses \"$d\"") or diag($out);
        unlike($out, qr/aaaa|kkkk/, '... and shows no key material');
    }
    $bad->write_config(server => "location = /mcp { mcp on; mcp_builtin everything; mcp_session_key $key_a; }");
    my ($rc, $out) = $bad->nginx_t;
    ok($rc != 0 && $out =~ /\[emerg\].*"mcp_session_key" is for a location with "mcp_pass"/,
       'nginx -t refuses mcp_session_key without mcp_pass') or diag($out);
    $bad->write_config(server => "location = /mcp { mcp_pass http://replicas/mcp; mcp_session_key $key_b;"
                               . " mcp_session_key $key_a; mcp_session_key_lifetime 1h; }");
    ($rc, $out) = $bad->nginx_t;
    is($rc, 0, 'two keys and a lifetime: nginx -t passes') or diag($out);
}

# --- (6) the lifetime ---------------------------------------------------------------------

{
    my $gl = McpTest->new(workers => 1, http => $gw_http, server => <<"NGX")->start;
        location = /mcp { mcp_pass http://replicas/mcp; mcp_session_key $key_b; mcp_session_key_lifetime 2s; }
NGX
    my $sid = $gl->mcp_initialize;
    my ($m) = $gl->mcp_request($sid, 'ping', undef, id => 'life-1');
    ok($m && $m->{result}, 'lifetime 2s: the session works at once');
    sleep 3.5;
    my $r = $gl->mcp_post($sid, { jsonrpc => '2.0', id => 'life-2', method => 'ping' });
    is_rpc_error_body($r, 404, -32001, 'life-2', '... and is 404, -32001 once its lifetime passed');
    ($m) = $gw[0]->mcp_request($sid, 'ping', undef, id => 'life-3');
    ok($m && $m->{result}, '... on that node: another node with the default lifetime (24h) still opens it');
    $gl->stop;
}

# --- (7) the 2026-07-28 stateless path: the requestState key across nodes -------------------

sub sl_call {
    my ($path, $tag, %o) = @_;
    my %p = (name => $MR, arguments => {},
             _meta => { "${P}protocolVersion" => $V26, "${P}clientCapabilities" => \%EL,
                        "${P}clientInfo" => { name => 't81', version => '1' } });
    $p{inputResponses} = $o{inputs} if $o{inputs};
    $p{requestState} = $o{state} if defined $o{state};
    my $r = $front->mcp_post(undef, { jsonrpc => '2.0', id => $tag, method => 'tools/call', params => \%p },
                             path => $path, protocol_version => undef,
                             headers => { 'MCP-Protocol-Version' => $V26, 'Mcp-Method' => 'tools/call',
                                          'Mcp-Name' => $MR, 'X-Tag' => $tag });
    my ($msg) = grep { ref $_ eq 'HASH' && exists $_->{id} } @{ $r->{messages} // [] };
    return $msg // {};
}

sub conversation {
    my ($path, $tag) = @_;
    my $m1 = sl_call($path, "$tag-1");
    my $s1 = $m1->{result} // {};
    my $m2 = sl_call($path, "$tag-2", state => $s1->{requestState},
                     inputs => { step1 => { action => 'accept', content => { name => 'Ada' } } });
    my $s2 = $m2->{result} // {};
    my $m3 = sl_call($path, "$tag-3", state => $s2->{requestState},
                     inputs => { step2 => { action => 'accept', content => { color => 'green' } } });
    return ($m1, $m2, $m3);
}

{
    my $map = { %rep_of };
    my ($m1, $m2, $m3) = conversation('/keyed', 'k');
    my @nodes = map { served_by($front, 'front.log', "k-$_", $map) } 1 .. 3;
    is(($m1->{result} // {})->{resultType}, 'input_required', 'stateless round 1: input_required');
    is(($m2->{result} // {})->{resultType}, 'input_required', 'round 2: input_required');
    is(text_of($m3), 'Ada likes green', 'round 3: complete, "Ada likes green"');
    ok(defined $nodes[0] && defined $nodes[1] && $nodes[0] != $nodes[1] && $nodes[1] != $nodes[2],
       'each round on another node than the one before (' . join(' ', map { $_ // '?' } @nodes) . '): one shared mcp_state_key');

    ($m1, $m2) = conversation('/own', 'o');
    my @o = map { served_by($front, 'front.log', "o-$_", $map) } 1 .. 2;
    ok(defined $o[0] && defined $o[1] && $o[0] != $o[1], "own keys: rounds 1 and 2 on nodes $o[0] and $o[1]");
    is_error($m2, -32602, 'o-2', 'a key of each node\'s own: the second round is refused, -32602');

    # through the keyed gateway tier: stateless requests need nothing of it
    ($m1, $m2, $m3) = conversation('/mcp', 'g');
    is(text_of($m3), 'Ada likes green', 'the conversation through the front and the keyed gateways: complete');
    my @g = map { served_by($front, 'front.log', "g-$_", \%gw_of) } 1 .. 3;
    my %d = map { ($_ // '?') => 1 } @g;
    is(scalar keys %d, 3, '... its rounds on the three gateway nodes');
}

# --- (8) the 2025-11-25 conformance suite through the front and keyed gateways ----------------

conformance_2025_11_25($front, 'the front and three keyed gateways');

# --- (9) a gateway node killed mid-run ---------------------------------------------------------

{
    $front->expect_log_error(qr/connect\(\) failed \(111: Connection refused\) while connecting to upstream/);
    my $dead = 1;
    my @pids = ($gw[$dead]->master_pid, $gw[$dead]->worker_pids);
    kill 'KILL', @pids;
    McpTest::wait_until(5, sub { !grep { kill 0, $_ } @pids });
    delete $gw[$dead]{pid};
    ok(!McpGateway::port_open($gw[$dead]->port), "gateway $dead killed (SIGKILL)");

    my ($ok, %used) = (1);
    for my $round (1 .. 3) {
        for my $x (@s) {
            my $tag = "k$x->{n}-$round";
            my ($m) = $front->mcp_request($x->{sid}, 'tools/call',
                echo_args("after $round"), tag($tag));
            $ok &&= echo_ok($m, "after $round");
            $used{ served_by($front, 'front.log', $tag, \%gw_of) // 'none' }++;
        }
    }
    ok($ok, 'every session goes on through the two live gateways (18 calls)');
    is_deeply([ sort keys %used ], [ grep { $_ != $dead } 0 .. 2 ], '... served by the live ones');
    my $sid = $front->mcp_initialize;
    ok($sid, 'a new session initializes too');
}

$front->stop;
$_->stop for grep { $_->{pid} } @gw;
$_->stop for @rep;

done_testing;
