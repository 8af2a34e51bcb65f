# mcp_health: live, startup and ready, JSON bodies, 200 or 503.  ready is
# real: with upstream= it connects to every replica (a non-blocking probe,
# its result kept a second), so it turns 503 when the only
# @modelcontextprotocol/server-everything behind mcp_pass is killed and 200
# again when it is back; and it turns 503 when a session zone fills past
# zone_threshold.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Time::HiRes ();
use McpTest qw(decode_json);
use McpGateway;

my $why = node_available('@modelcontextprotocol/server-everything');
plan skip_all => "server-everything: $why" if $why;

# --- configuration errors ----------------------------------------------------------

for my $bad ('mcp_health sometimes;', 'mcp_health live upstream=ups;',
             'mcp_health ready zone_threshold=0%;', 'mcp_health ready zone_threshold=101%;',
             'mcp_health ready timeout=0;', 'mcp_health ready bogus=1;')
{
    my $c = McpTest->new(server => "location = /h { $bad }");
    my ($rc, $out) = $c->nginx_t;
    isnt($rc, 0, "nginx -t refuses \"$bad\"");
    like($out, qr/\[emerg\].*(invalid value|invalid parameter)/, '... with an [emerg] that says why');
}

my $t = McpTest->new(
    ports => 2,    # 2: the replica
    http  => <<'NGX',
    mcp_session_zone zone=gw:1m;
    mcp_session_zone zone=small:64k;
    upstream ups {
        server 127.0.0.1:%%PORT2%%;
    }
NGX
    server => <<'NGX',
        location = /mcp {
            mcp_pass http://ups/mcp;
            mcp_session gw;
        }
        location = /small {
            mcp on;
            mcp_session small;
        }
        location = /health { mcp_health live; }
        location = /startup { mcp_health startup; }
        location = /ready { mcp_health ready upstream=ups; }
        location = /ready-zone { mcp_health ready zone_threshold=50%; }
NGX
)->start;

my $log = $t->prefix . '/logs/replica.log';
my $node = start_everything_node(port => $t->port(2), log => $log);

sub probe {
    my ($path) = @_;
    my $r = $t->request(path => $path);
    my $json = eval { decode_json($r->{body}) };
    return ($r, $json);
}

# ready until it says $status (probes are kept a second): the last reply
sub ready_becomes {
    my ($path, $status) = @_;
    my ($r, $j);
    my $deadline = Time::HiRes::time() + 10;
    while (1) {
        ($r, $j) = probe($path);
        last if $r->{status} == $status || Time::HiRes::time() > $deadline;
        Time::HiRes::sleep(0.1);
    }
    return ($r, $j);
}

# --- live and startup --------------------------------------------------------------

{
    my ($r, $j) = probe('/health');
    is($r->{status}, 200, 'live: 200');
    is($r->{headers}{'content-type'}, 'application/json', 'live: application/json');
    is($j && $j->{status}, 'ok', 'live: {"status":"ok"}');
    is($j && $j->{checks}{worker}{status}, 'ok', 'live: the worker answers');

    ($r, $j) = probe('/startup');
    is($r->{status}, 200, 'startup: 200');
    is($j && $j->{status}, 'ok', 'startup: ok');
    is($j && $j->{checks}{configuration}{status}, 'ok', 'startup: the configuration is loaded');
    is($j && $j->{checks}{'zone:gw'}{status}, 'ok', 'startup: zone gw attached');
    is($j && $j->{checks}{'zone:small'}{status}, 'ok', 'startup: zone small attached');
    is($j && $j->{checks}{worker}{status}, 'ok', 'startup: the worker\'s wake-up socket is open');

    is($t->request(method => 'POST', path => '/health', body => 'x')->{status}, 405,
       'POST to a health location: 405');
}

# --- ready and the upstream -----------------------------------------------------------

{
    my ($r, $j) = ready_becomes('/ready', 200);
    is($r->{status}, 200, 'ready: 200 while the replica runs');
    is_deeply($j && $j->{checks}{'upstream:ups'}, { status => 'ok', answering => 1, peers => 1 },
              'ready: upstream ups, 1 replica of 1 answering');
    is($j && $j->{checks}{'zone:gw'}{status}, 'ok', 'ready: zone gw below its threshold');
    is($j && $j->{checks}{'zone:gw'}{threshold_percent}, 90, 'ready: the default threshold is 90%');

    my ($sid) = $t->mcp_initialize;
    ok($sid, 'a session through the gateway');

    McpGateway::stop_process($node->{pid}, 'KILL');

    ($r, $j) = ready_becomes('/ready', 503);
    is($r->{status}, 503, 'ready: 503 once the only replica is killed');
    is($j && $j->{status}, 'unavailable', 'ready: {"status":"unavailable"}');
    is_deeply($j && $j->{checks}{'upstream:ups'}, { status => 'unavailable', answering => 0, peers => 1 },
              'ready: the upstream has no replica answering');
    is($j && $j->{checks}{'zone:gw'}{status}, 'ok', 'ready: the zones are still fine');

    ($r, $j) = probe('/health');
    is($r->{status}, 200, 'live stays 200: the worker answers');

    $node = start_everything_node(port => $t->port(2), log => $log);

    ($r, $j) = ready_becomes('/ready', 200);
    is($r->{status}, 200, 'ready: 200 again once the replica is back');
    is($j && $j->{checks}{'upstream:ups'}{answering}, 1, 'ready: it answers');

    my ($sid2) = $t->mcp_initialize;
    ok($sid2, 'and the gateway serves a new session');
}

# --- ready and a full zone --------------------------------------------------------------

{
    my ($r, $j) = probe('/ready-zone');
    is($r->{status}, 200, 'ready (zone_threshold=50%): 200 with an empty zone');
    my $start = $j && $j->{checks}{'zone:small'}{used_percent};
    cmp_ok($start, '<', 50, "zone small: $start% used at the start");

    my $n = 0;
    while ($n < 200) {
        $t->mcp_initialize(path => '/small');
        $n++;
        ($r, $j) = probe('/ready-zone');
        last if $r->{status} == 503;
    }
    is($r->{status}, 503, "ready: 503 once zone small is past 50% ($n sessions)");
    is($j && $j->{checks}{'zone:small'}{status}, 'full', 'ready: zone small is "full"');
    cmp_ok($j && $j->{checks}{'zone:small'}{used_percent}, '>=', 50, 'ready: its used_percent is past the threshold');
    is($j && $j->{checks}{'zone:small'}{threshold_percent}, 50, 'ready: threshold_percent 50');
    is($j && $j->{checks}{'zone:gw'}{status}, 'ok', 'ready: zone gw is fine');

    ($r, $j) = probe('/startup');
    is($r->{status}, 200, 'startup does not look at the fill: 200');
}

McpGateway::stop_process($node->{pid}, 'TERM');
$t->stop;
done_testing;
