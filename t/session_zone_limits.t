# The session zone is a common (issue #18, rows 2 and 3): per-session
# limits on subscriptions (how many, how long a URI); a zone that fills up
# evicts the least recently used idle session before anything fails; a
# per-client quota (per_client=$variable:N) makes a client over it lose its
# own oldest session, never another client's; a client whose sessions are
# all busy gets 503 with Retry-After; log lines name sessions by a hash.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Compress::Zlib ();
use McpTest;
use McpAssert;

my $t = McpTest->new(
    http   => 'mcp_session_zone zone=small:256k subscriptions=8 subscription_uri=600;'
            . ' mcp_session_zone zone=quota:1m per_client=$http_x_client:3;'
            . ' mcp_session_zone zone=one:1m per_client=$http_x_client:1;',
    server => <<'NGX',
        location = /mcp   { mcp on; mcp_builtin everything; mcp_session small; }
        location = /quota { mcp on; mcp_builtin everything; mcp_session quota; }
        location = /one   { mcp on; mcp_builtin everything; mcp_session one; }
NGX
)->start;

sub subscribe {
    my ($sid, $uri, $id, %o) = @_;
    my ($msg) = $t->mcp_request($sid, 'resources/subscribe', { uri => $uri }, id => $id, %o);
    return $msg;
}

# --- per-session subscription limits ---------------------------------------------

my ($sid) = $t->mcp_initialize;
{
    my $long = 'test://template/' . ('y' x 700) . '/data';
    is_error(subscribe($sid, $long, 'long'), -32602, 'long', 'a 700-byte URI over subscription_uri=600: -32602');
    my $n = 0;
    $n++ while $n < 20 && !(subscribe($sid, "test://template/$n/data", "s$n") // {})->{error};
    is($n, 8, 'subscriptions=8: the ninth subscription is refused');
    is_error(subscribe($sid, 'test://template/x/data', 'over'), -32602, 'over', 'over the limit: -32602 with the id');
    is_result(subscribe($sid, 'test://template/0/data', 'again'), {}, 'again', 'an existing subscription: still {}');
    my ($msg) = $t->mcp_request($sid, 'resources/unsubscribe', { uri => 'test://template/0/data' }, id => 'u');
    is_result($msg, {}, 'u', 'unsubscribe frees a place');
    is_result(subscribe($sid, 'test://template/x/data', 'after'), {}, 'after', '... which a new one takes');
}

# --- a flood of sessions and subscriptions: eviction, never failure -----------------

{
    my $made = 0;
    for my $i (1 .. 1500) {
        my $r = $t->mcp_post(undef, { jsonrpc => '2.0', id => $i, method => 'initialize',
            params => { protocolVersion => '2025-11-25', capabilities => {},
                        clientInfo => { name => 'flood', version => '1' } } });
        last unless $r->{status} == 200 && $r->{headers}{'mcp-session-id'};
        my $s = $r->{headers}{'mcp-session-id'};
        $made++;
        subscribe($s, "test://template/$i-$_/" . ('z' x 500), "f$_", quiet => 1) for 1 .. 8;
    }
    is($made, 1500, '1,500 sessions, each with 8 long subscriptions, in a 256k zone: every initialize served');
    my ($new) = $t->mcp_initialize;
    ok($new, 'after the flood a new client initializes');
    my $res = $t->mcp_call($new, 'tools/call', { name => 'test_simple_text' });
    is($res->{content}[0]{text}, 'This is a simple text response for testing.', '... and calls a tool');
    my @evicted = $t->error_log =~ /evicted the least recently used session (\S+)/g;
    ok(@evicted > 100, scalar(@evicted) . ' idle sessions were evicted to make room');
    # a correlation id is the request's $request_id, 32 hex digits too
    (my $log = $t->error_log) =~ s/correlation id [0-9a-f]{32}\b//g;
    unlike($log, qr/\b[0-9a-f]{32}\b/, 'no whole session id in error.log');
}

# --- per_client: a client over its quota loses its own oldest session ------------------

sub init_as {
    my ($who, %o) = @_;
    my $r = $t->mcp_post(undef, { jsonrpc => '2.0', id => "i-$who", method => 'initialize',
        params => { protocolVersion => '2025-11-25', capabilities => {},
                    clientInfo => { name => $who, version => '1' } } },
        path => '/quota', headers => { 'X-Client' => $who });
    return ($r->{headers}{'mcp-session-id'}, $r);
}

sub alive {
    my ($s, $who) = @_;
    my $r = $t->mcp_post($s, { jsonrpc => '2.0', id => 'p', method => 'ping' },
                         path => '/quota', headers => { 'X-Client' => $who });
    return $r->{status} == 200;
}

{
    my @a = map { (init_as('alice'))[0] } 1 .. 3;
    my ($b) = init_as('bob');
    ok(alive($_, 'alice'), 'alice\'s session lives') for @a;
    alive($a[$_], 'alice') for 1, 2;    # the first is the least recently used
    my $mark = $t->log_mark;
    my ($a4) = init_as('alice');
    ok($a4, 'alice\'s fourth session: made');
    ok(!alive($a[0], 'alice'), 'alice\'s least recently used session ended');
    ok(alive($a[$_], 'alice'), "alice's session $_ lives") for 1, 2;
    ok(alive($b, 'bob'), 'bob\'s session lives: a client never evicts another\'s');
    my $tag = sprintf '#%08x', Compress::Zlib::crc32($a[0]);
    like($t->log_since($mark), qr/at its quota of 3 sessions, its least recently used session \Q$tag\E ended/,
         'the log line names the session by its hash');
    unlike($t->log_since($mark), qr/\Q$a[0]\E/, '... and not by its id');

    # all of carol's sessions busy (open GET streams): the next is refused
    my @c = map { (init_as('carol'))[0] } 1 .. 3;
    my @streams = map { $t->mcp_get_stream($_, path => '/quota', headers => { 'X-Client' => 'carol' }) } @c;
    is(scalar(grep { $_->status == 200 } @streams), 3, 'carol holds 3 open streams');
    my (undef, $r) = init_as('carol');
    is_rpc_error_body($r, 503, -32000, 'i-carol', 'carol at her quota with every session busy: 503');
    is($r->{headers}{'retry-after'}, '1', '... with Retry-After');
    my ($d) = init_as('dave');
    ok($d, 'another client is not affected');
    $_->close for @streams;
}

# a quota of one: the new session replaces the old (the client's record
# must outlive the eviction of its only other session)
{
    my @one;
    for my $i (1 .. 3) {
        my $r = $t->mcp_post(undef, { jsonrpc => '2.0', id => "o$i", method => 'initialize',
            params => { protocolVersion => '2025-11-25', capabilities => {},
                        clientInfo => { name => 'one', version => '1' } } },
            path => '/one', headers => { 'X-Client' => 'erin' });
        push @one, $r->{headers}{'mcp-session-id'};
    }
    is(scalar(grep { defined } @one), 3, 'per_client=...:1: three initializes in a row, three sessions');
    my @alive = grep {
        $t->mcp_post($_, { jsonrpc => '2.0', id => 'p', method => 'ping' }, path => '/one',
                     headers => { 'X-Client' => 'erin' })->{status} == 200
    } grep { defined } @one;
    is_deeply(\@alive, [ $one[2] ], '... only the newest lives');
}

$t->check_log;
done_testing;
