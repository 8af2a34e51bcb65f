# Lifecycle: initialize (version negotiation, capabilities, serverInfo,
# invalid params), notifications/initialized, ping, logging/setLevel,
# DELETE.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use McpTest;
use McpAssert;

my $t = everything();

sub init_msg {
    my ($params, $id) = @_;
    return { jsonrpc => '2.0', id => $id // 1, method => 'initialize',
             (defined $params ? (params => $params) : ()) };
}
my %client = (capabilities => {}, clientInfo => { name => 'lifecycle-test', version => '1.0' });

# --- initialize result ------------------------------------------------------

{
    my $r = $t->mcp_post(undef, init_msg({ protocolVersion => '2025-11-25', %client }, 'init-1'));
    $t->status_is($r, 200, 'initialize: 200');
    my $msg = $r->{json};
    ok(ref $msg eq 'HASH' && !exists $msg->{error} && $msg->{id} eq 'init-1',
       'initialize: a result with the request id');
    my $res = $msg->{result} // {};
    is($res->{protocolVersion}, '2025-11-25', 'initialize: protocolVersion 2025-11-25');
    is_deeply($res->{capabilities}, \%SEED_CAPABILITIES,
              'initialize: capabilities are the seed\'s (tools, resources+subscribe, prompts, '
              . 'logging, completions, tasks)');
    ok(ref $res->{serverInfo} eq 'HASH' && ($res->{serverInfo}{name} // '') ne ''
       && ($res->{serverInfo}{version} // '') =~ /^\d+\.\d+/,
       'initialize: serverInfo has a name and a version');
    is_deeply([ sort keys %$res ], [ qw(capabilities protocolVersion serverInfo) ],
              'initialize: result has protocolVersion, capabilities, serverInfo');
    like($r->{headers}{'mcp-session-id'} // '', qr/^[0-9a-f]{32}$/, 'initialize: session issued');
}

# --- version negotiation -----------------------------------------------------

for my $case (
    [ '2025-11-25', '2025-11-25' ],
    [ '2025-06-18', '2025-06-18' ],
    [ '2025-03-26', '2025-03-26' ],
    [ '2024-11-05', '2025-11-25' ],
    [ '2026-07-28', '2025-11-25' ],
    [ '2099-12-31', '2025-11-25' ],
    [ 'not-a-version', '2025-11-25' ],
) {
    my ($asked, $want) = @$case;
    my ($sid, $res, $r) = $t->mcp_initialize(protocol_version => $asked);
    is($res->{protocolVersion}, $want, "client asks $asked: server answers $want");
    is($r->{headers}{'mcp-protocol-version'}, $want, "client asks $asked: header $want");
    my ($ping, $pr) = $t->mcp_request($sid, 'ping', undef, protocol_version => $want);
    is($pr->{headers}{'mcp-protocol-version'}, $want,
       "client asks $asked: later replies carry $want");
}

# --- initialize with invalid params: -32602, no session -------------------------

for my $case (
    [ undef,                                                 'no params' ],
    [ {},                                                    'empty params' ],
    [ { %client },                                           'protocolVersion missing' ],
    [ { protocolVersion => 20251125, %client },              'protocolVersion a number' ],
    [ { protocolVersion => '2025-11-25', %client, capabilities => [] },
                                                             'capabilities an array' ],
    [ { protocolVersion => '2025-11-25', %client, clientInfo => 'me' },
                                                             'clientInfo a string' ],
) {
    my ($params, $what) = @$case;
    my $r = $t->mcp_post(undef, init_msg($params, "bad"));
    is_error($r->{json}, -32602, 'bad', "initialize, $what: -32602");
    ok(!defined $r->{headers}{'mcp-session-id'}, "initialize, $what: no session issued");
}

# --- initialized notification, ping -------------------------------------------

{
    my ($sid) = $t->mcp_initialize(skip_initialized => 1);
    my ($msg) = $t->mcp_request($sid, 'ping', undef, id => 'early');
    is_result($msg, {}, 'early', 'ping before notifications/initialized: {}');
    my $n = $t->mcp_notify($sid, 'notifications/initialized');
    ok($n->{status} == 202 && $n->{body} eq '', 'notifications/initialized: 202, no body');
    ($msg) = $t->mcp_request($sid, 'ping', undef, id => 'p');
    is_result($msg, {}, 'p', 'ping: empty result');
    ($msg) = $t->mcp_request($sid, 'ping', {}, id => 'p2');
    is_result($msg, {}, 'p2', 'ping with empty params: empty result');
    ($msg) = $t->mcp_request($sid, 'ping', { _meta => { progressToken => 'x' } }, id => 'p3');
    is_result($msg, {}, 'p3', 'ping with _meta: empty result');
}

# --- logging/setLevel -----------------------------------------------------------

{
    my ($sid) = $t->mcp_initialize;
    for my $level (qw(debug info notice warning error critical alert emergency)) {
        my ($msg) = $t->mcp_request($sid, 'logging/setLevel', { level => $level }, id => $level);
        is_result($msg, {}, $level, "logging/setLevel $level: {}");
    }
    for my $case ([ { level => 'verbose' }, 'unknown level' ],
                  [ { level => 'INFO' },    'level in upper case' ],
                  [ { level => 'warn' },    'syslog-style "warn"' ],
                  [ { level => 3 },         'level a number' ],
                  [ {},                     'level missing' ],
                  [ undef,                  'no params' ]) {
        my ($params, $what) = @$case;
        my ($msg) = $t->mcp_request($sid, 'logging/setLevel', $params, id => 'lv');
        is_error($msg, -32602, 'lv', "logging/setLevel, $what: -32602");
    }
}

# --- DELETE ends the session; a new initialize starts a new one ---------------

{
    my ($a) = $t->mcp_initialize;
    my ($b) = $t->mcp_initialize;
    isnt($a, $b, 'two initializes: two sessions');
    $t->status_is($t->mcp_delete($a), 200, 'DELETE: 200');
    my ($msg, $r) = $t->mcp_request($a, 'ping', undef, id => 1);
    is($r->{status}, 404, 'after DELETE: 404');
    is_error($msg, -32001, 1, 'after DELETE: session-not-found error with the id');
    ($msg) = $t->mcp_request($b, 'ping', undef, id => 2);
    is_result($msg, {}, 2, 'the other session still works');
    my ($c) = $t->mcp_initialize;
    ok($c ne $a && $c ne $b, 're-initialize after DELETE: a new session id');
}

$t->stop;
done_testing;
