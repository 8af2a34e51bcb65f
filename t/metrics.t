# mcp_metrics: Prometheus text from counters in shared memory, summed over
# the 4 workers.  A known sequence of requests, each on a connection of its
# own (listen reuseport spreads them over the workers; the access log's
# $pid shows which served each), moves every counter by exactly what it
# should: requests by method and result, JSON-RPC errors by code, tool
# calls by tool and outcome ("other" for a name the sets do not have), the
# duration histogram (cumulative buckets, +Inf == _count == the requests),
# what the store tells (sessions, open streams, server requests pending,
# zone bytes), server requests that timed out.  A location with
# mcp_metrics_counting off counts nothing.  The output is checked by
# Prometheus's own parser (promtool check metrics, Debian's prometheus).

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use McpTest;
use McpStream;

my $t = McpTest->new(
    listen => 'reuseport',
    http   => <<'NGX',
    mcp_session_zone zone=m:1m;
    mcp_session_zone zone=n:1m;
    log_format pids '$pid $request_uri $status';
NGX
    server => <<'NGX',
        access_log %%PREFIX%%/logs/pids.log pids;
        location = /mcp {
            mcp on;
            mcp_builtin everything;
            mcp_session m;
            mcp_request_timeout 1s;
        }
        location = /nocount {
            mcp on;
            mcp_builtin everything;
            mcp_session n;
            mcp_metrics_counting off;
        }
        location = /metrics {
            mcp_metrics;
        }
NGX
)->start;

# --- a real Prometheus parser ------------------------------------------------------

my $promtool = find_promtool();

sub find_promtool {
    for my $p (split /:/, "$ENV{PATH}:/usr/bin") {
        return "$p/promtool" if -x "$p/promtool";
    }
    # scripts/lib.sh installs Debian's prometheus (it ships promtool)
    if ($> == 0) {
        system('bash', '-c', ". '$McpTest::REPO_ROOT/scripts/lib.sh' && "
               . 'mcp_apt_install prometheus >/dev/null 2>&1');
        return '/usr/bin/promtool' if -x '/usr/bin/promtool';
    }
    return undef;
}

sub scrape {
    my $r = $t->request(path => '/metrics');
    is($r->{status}, 200, 'GET /metrics: 200');
    is($r->{headers}{'content-type'}, 'text/plain; version=0.0.4', '... Prometheus text format 0.0.4');
    return $r->{body};
}

# { 'name{labels}' => value } from the text; every line either a comment or a sample
sub parse {
    my ($text) = @_;
    my (%v, @bad);
    for my $l (split /\n/, $text) {
        next if $l =~ /^# (HELP|TYPE) /;
        if ($l =~ /^([a-z_]+)(\{[^}]*\})? (\S+)$/) { $v{ $1 . ($2 // '') } = $3 }
        else { push @bad, $l }
    }
    ok(!@bad, 'every line a sample or HELP/TYPE') or diag(join "\n", @bad);
    return \%v;
}

sub promtool_ok {
    my ($text, $what) = @_;
  SKIP: {
        skip 'promtool not installable here (Debian package prometheus)', 1 unless $promtool;
        my $file = $t->write_file("metrics-$what.txt", $text);
        my $out = `'$promtool' check metrics < '$file' 2>&1`;
        is($? >> 8, 0, "promtool check metrics: $what parses and lints clean") or diag($out);
    }
}

sub delta {
    my ($a, $b, $key) = @_;
    return ($b->{$key} // 0) - ($a->{$key} // 0);
}

my $text0 = scrape();
promtool_ok($text0, 'at start');
my $m0 = parse($text0);
is($m0->{'mcp_sessions{zone="m"}'}, 0, 'no session yet in zone m');
is($m0->{'mcp_zone_size_bytes{zone="m"}'},
   $m0->{'mcp_zone_used_bytes{zone="m"}'} + $m0->{'mcp_zone_free_bytes{zone="m"}'},
   'zone m: used + free == size');

# --- the known sequence, a connection a request ------------------------------------

my @sids = map { scalar $t->mcp_initialize } 1 .. 3;
my $sid = $sids[0];

my $n_simple = 12;
for my $i (1 .. $n_simple) {
    my $res = $t->mcp_call($sids[$i % 3], 'tools/call', { name => 'test_simple_text', arguments => {} });
    ok($res && $res->{content}, "tools/call test_simple_text $i: a result") if $i == 1;
}
for my $i (1 .. 2) {
    my $res = $t->mcp_call($sid, 'tools/call', { name => 'test_error_handling', arguments => {} });
    ok($res && $res->{isError}, 'test_error_handling: a result with isError') if $i == 1;
}
for my $i (1 .. 3) {
    my $err = $t->mcp_call($sid, 'tools/call', { name => 'no_such_tool', arguments => {} });
    is($err && $err->{code}, -32602, 'an unknown tool: -32602') if $i == 1;
}
$t->mcp_call($sids[$_ % 3], 'ping', {}) for 1 .. 4;
for my $i (1 .. 2) {
    my $err = $t->mcp_call($sid, 'foo/bar', {});
    is($err && $err->{code}, -32601, 'an unknown method: -32601') if $i == 1;
}
my $bad = $t->mcp_post($sid, '{"jsonrpc":');
is($bad->{status}, 400, 'a body that is not JSON: 400 (-32700)');

# a location with counting off: these count nowhere
my $nsid = $t->mcp_initialize(path => '/nocount');
$t->mcp_call($nsid, 'tools/call', { name => 'test_simple_text', arguments => {} }, path => '/nocount')
    for 1 .. 5;

# one session ends
is($t->mcp_delete($sids[2])->{status}, 200, 'DELETE of the third session');

my $text1 = scrape();
promtool_ok($text1, 'after the sequence');
my $m1 = parse($text1);

my %pids;
for my $l (split /\n/, McpTest::_slurp($t->prefix . '/logs/pids.log') // '') {
    my ($pid, $uri) = split / /, $l;
    $pids{$pid}++ if $uri =~ m{^/mcp};
}
cmp_ok(scalar keys %pids, '>=', 2,
       'the requests were served by several workers (' . join(', ', map { "$_: $pids{$_}" } sort keys %pids) . ')');

my %want = (
    'mcp_requests_total{method="initialize",result="ok"}'   => 3,
    'mcp_requests_total{method="tools/call",result="ok"}'   => $n_simple + 2,
    'mcp_requests_total{method="tools/call",result="error"}' => 3,
    'mcp_requests_total{method="ping",result="ok"}'         => 4,
    'mcp_requests_total{method="other",result="error"}'     => 2,
    'mcp_requests_total{method="tools/list",result="ok"}'   => 0,
    'mcp_jsonrpc_errors_total{code="-32602"}'               => 3,
    'mcp_jsonrpc_errors_total{code="-32601"}'               => 2,
    'mcp_jsonrpc_errors_total{code="-32700"}'               => 1,
    'mcp_jsonrpc_errors_total{code="-32603"}'               => 0,
    'mcp_tool_calls_total{tool="test_simple_text",outcome="ok"}'            => $n_simple,
    'mcp_tool_calls_total{tool="test_error_handling",outcome="tool_error"}' => 2,
    'mcp_tool_calls_total{tool="test_error_handling",outcome="ok"}'         => 0,
    'mcp_tool_calls_total{tool="other",outcome="error"}'                    => 3,
);
for my $k (sort keys %want) {
    is(delta($m0, $m1, $k), $want{$k}, "$k moved by $want{$k}");
}

# the histogram of tools/call: cumulative, +Inf == _count == the requests
{
    my $h = 'mcp_request_duration_seconds';
    my @le = map { /le="([^"]+)"/ ? $1 : () }
             grep { /^\Q$h\E_bucket\{method="tools\/call",/ } sort keys %$m1;
    my %order = map { $_ => ($_ eq '+Inf' ? 1e99 : $_) } @le;
    @le = sort { $order{$a} <=> $order{$b} } @le;
    is(scalar @le, 15, 'tools/call: 14 buckets and +Inf');
    my @counts = map { $m1->{"${h}_bucket{method=\"tools/call\",le=\"$_\"}"} } @le;
    my $mono = 1;
    $mono &&= $counts[$_] >= $counts[$_ - 1] for 1 .. $#counts;
    ok($mono, 'the buckets are cumulative (never decrease)') or diag("@counts");
    my $count = $m1->{"${h}_count{method=\"tools/call\"}"};
    is($counts[-1], $count, 'le="+Inf" == _count');
    is($count, $n_simple + 2 + 3, '_count == the tools/call requests (counting off counted none)');
    cmp_ok($m1->{"${h}_sum{method=\"tools/call\"}"}, '>', 0, '_sum > 0');
    is($m1->{"${h}_count{method=\"ping\"}"}, 4, 'ping: _count 4');
}

# what the store tells
is($m1->{'mcp_sessions{zone="m"}'}, 2, 'zone m: 2 live sessions (3 made, 1 deleted)');
is($m1->{'mcp_sessions{zone="n"}'}, 1, 'zone n: the session of the location that does not count');
cmp_ok($m1->{'mcp_zone_used_bytes{zone="m"}'}, '>', 0, 'zone m: bytes used');
is($m1->{'mcp_zone_size_bytes{zone="m"}'},
   $m1->{'mcp_zone_used_bytes{zone="m"}'} + $m1->{'mcp_zone_free_bytes{zone="m"}'},
   'zone m: used + free == size');
is($m1->{'mcp_streams_open{zone="m"}'}, 0, 'no stream open');

# --- streams and server requests ---------------------------------------------------

{
    my $g = $t->mcp_get_stream($sid);
    is($g->status, 200, 'a GET stream opens');
    my $m = parse(scrape());
    is($m->{'mcp_streams_open{zone="m"}'}, 1, 'mcp_streams_open: 1 while it is open');
    $g->close;
    my $gone;
    for (1 .. 50) {
        $gone = parse_quiet(scrape_quiet())->{'mcp_streams_open{zone="m"}'};
        last if $gone == 0;
        select(undef, undef, undef, 0.1);
    }
    is($gone, 0, 'mcp_streams_open: back to 0 once the client left');
}

{
    my ($ssid) = $t->mcp_initialize(capabilities => { sampling => {} });
    my $before = parse_quiet(scrape_quiet());
    my $s = call_stream($t, $ssid, 'sa', 'test_sampling', { prompt => 'x' });
    my $prime = take($s, 3);
    my $req = take($s, 3);
    is($req && $req->{json} && $req->{json}{method}, 'sampling/createMessage',
       'test_sampling asks the client');
    my $m = parse(scrape());
    is($m->{'mcp_server_requests_pending{zone="m"}'}, 1, 'mcp_server_requests_pending: 1 while unanswered');
    my @rest = take_all($s, 5);     # mcp_request_timeout 1s: the tool ends
    my $m2 = parse(scrape());
    is($m2->{'mcp_server_requests_pending{zone="m"}'}, 0, '... 0 after the timeout');
    is(delta($before, $m2, 'mcp_server_requests_timed_out_total'), 1,
       'mcp_server_requests_timed_out_total moved by 1');
}

sub scrape_quiet { $t->request(path => '/metrics')->{body} // '' }

sub parse_quiet {
    my %v;
    for my $l (split /\n/, $_[0]) { $v{ $1 . ($2 // '') } = $3 if $l =~ /^([a-z_]+)(\{[^}]*\})? (\S+)$/ }
    return \%v;
}

is($t->request(method => 'POST', path => '/metrics', body => 'x')->{status}, 405, 'POST /metrics: 405');

$t->stop;
done_testing;
