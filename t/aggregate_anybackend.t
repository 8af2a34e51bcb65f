# Any location as a backend of mcp_backend (issue #39, Deliver 2): an
# "mcp on" location and an "mcp_pass" location of the gateway's own nginx
# serve the gateway's subrequests, so that one endpoint aggregates a
# local built-in set with a remote server.  The local one has the empty
# prefix: its tools keep their names, and one of its names that another
# backend's prefix begins is not listed (a call of it goes there).  What
# crosses them: calls, progress on a call's SSE stream, a sampling
# request answered by the client, prompts, resources, the client's GET
# stream fed by the backends' own, the client's DELETE, a stateless
# client; the $mcp_* variables of a backend's subrequest are its own
# message's, not the client's.  nginx -t refuses two empty prefixes in
# one location.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Time::HiRes qw(sleep time);
use McpTest timeout => 120;
use McpStream;
use McpAssert qw(conf_refused);
use McpGateway qw(upstream_log_format upstream_log);

my $V = '2025-11-25';

# --- nginx -t -----------------------------------------------------------------

conf_refused(<<'NGX', qr/mcp_backend "two": "one" has the empty prefix already/,
        location = /mcp {
            mcp_backend one /_b/one prefix=;
            mcp_backend two /_b/two prefix=;
        }
NGX
             'two backends with the empty prefix in one location');
conf_refused(<<'NGX', qr/invalid prefix "a\.b" of mcp_backend "one"/,
        location = /mcp {
            mcp_backend one /_b/one prefix=a.b;
        }
NGX
             'a prefix with a character outside the set');
{
    my ($rc, $out) = McpTest->new(server => <<'NGX')->nginx_t;
        location = /mcp {
            mcp_backend one /_b/one prefix=;
            mcp_backend two /_b/two;
            mcp_backend_separator .;
        }
NGX
    is($rc, 0, 'nginx -t: one empty prefix beside a named one') or diag($out);
}

# --- the remote server: the Everything set and two tools of its own ----------

my $up = McpTest->new(http => upstream_log_format(), server => <<'NGX')->start;
        location = /mcp {
            mcp on;
            mcp_builtin everything;
            access_log %%PREFIX%%/logs/upstream.log mcp_upstream;

            mcp_tool whoami {
                description "says up";
                pass /who;
            }
            mcp_tool shadow {
                description "up's shadow";
                pass /shadow;
            }
        }
        location = /who    { internal; return 200 "up here"; }
        location = /shadow { internal; return 200 "up's shadow"; }
NGX

# --- the gateway: /_b/local is "mcp on", /_b/up "mcp_pass" ---------------------
#
# /_b/local is not internal here, so that the test can reach the sessions
# the gateway opens there; each of its subrequests is logged with the
# $mcp_* variables it sees.

my $t = McpTest->new(
    http => upstream_log_format() . "\n    mcp_session_zone zone=agg:4m;\n"
          . "    mcp_session_zone zone=local:4m;\n"
          . "    log_format local escape=json '{\"method\":\"\$request_method\",\"status\":\"\$status\","
          . "\"sid\":\"\$http_mcp_session_id\",\"sid_out\":\"\$sent_http_mcp_session_id\","
          . "\"rpc\":\"\$mcp_method\",\"msid\":\"\$mcp_session_id\",\"tool\":\"\$mcp_tool\"}';\n",
    server => <<"NGX");
        mcp_session agg;

        location = /mcp {
            mcp_backend local /_b/local prefix=;
            mcp_backend up    /_b/up;
            mcp_backend_timeout 5s;
        }

        location = /_b/local {
            mcp on;
            mcp_session local;
            mcp_builtin everything;
            log_subrequest on;
            access_log %%PREFIX%%/logs/local.log local;

            mcp_tool up__shadow {
                description "local's, hidden by up's prefix";
                pass /local-shadow;
            }
        }
        location = /local-shadow { internal; return 200 "local's shadow"; }

        location = /_b/up {
            internal;
            mcp_pass http://127.0.0.1:@{[ $up->port ]}/mcp;
        }

        # another module's subrequest: not served (no access phase ran)
        location = /mirrored {
            mcp on;
            mcp_session local;
            mcp_builtin everything;
            mirror /_b/local;
        }
NGX

# the mirror's subrequest to /_b/local falls through to the static module
$t->expect_log_error(qr{open\(\) "[^"]*/_b/local" failed});
$t->start;

sub text { (($_[0] // {})->{content} // [ {} ])->[0]{text} // '' }
sub local_log { upstream_log($t, 'local.log') }

# the sessions the gateway opened at local, newest last
sub local_sessions {
    map { $_->{sid_out} } grep { ($_->{rpc} // '') eq 'initialize' && $_->{sid_out} } local_log();
}

my ($sid, $init) = $t->mcp_initialize(protocol_version => $V,
                                      capabilities => { sampling => {} });
ok($sid, 'initialize through the gateway over an mcp on and an mcp_pass location');
ok($init->{capabilities}{tools} && $init->{capabilities}{prompts} && $init->{capabilities}{resources},
   '... its capabilities are the backends\' union');
my @lsid = local_sessions();
is(scalar @lsid, 1, 'the gateway opened one session at the mcp on location');
isnt($lsid[0], $sid, '... its own, not the client\'s');

# --- names ---------------------------------------------------------------------

my $list = $t->mcp_call($sid, 'tools/list', {}, protocol_version => $V);
my @names = map { $_->{name} } @{ $list->{tools} // [] };
ok((grep { $_ eq 'test_simple_text' } @names), 'local\'s tools keep their names (empty prefix)');
ok((grep { $_ eq 'up__test_simple_text' } @names), 'up\'s are prefixed');
ok(!(grep { /^local__/ } @names), 'no name has the local backend\'s name as a prefix');
my @shadow = grep { $_->{name} eq 'up__shadow' } @{ $list->{tools} // [] };
is(scalar @shadow, 1, 'up__shadow is listed once');
is($shadow[0]{description}, "up's shadow", '... as up\'s: local\'s tool of that name could not be called');

# --- calls ---------------------------------------------------------------------

my $r = $t->mcp_call($sid, 'tools/call', { name => 'test_simple_text', arguments => {} }, protocol_version => $V);
is(text($r), 'This is a simple text response for testing.', 'a call served by the mcp on location');
$r = $t->mcp_call($sid, 'tools/call', { name => 'up__whoami', arguments => {} }, protocol_version => $V);
is(text($r), 'up here', 'a call served by the mcp_pass location');
$r = $t->mcp_call($sid, 'tools/call', { name => 'up__shadow', arguments => {} }, protocol_version => $V);
is(text($r), "up's shadow", 'up__shadow goes to up');
$r = $t->mcp_call($sid, 'prompts/get', { name => 'test_simple_prompt' }, protocol_version => $V);
ok(@{ ($r // {})->{messages} // [] }, 'a prompt of the mcp on location, by its own name');
$r = $t->mcp_call($sid, 'resources/read', { uri => 'test://static-text' }, protocol_version => $V);
ok(($r->{contents}[0]{text} // '') ne '', 'a resource read (the first backend has it)');

# what the mcp on location's subrequests saw: their own message, session
my @calls = grep { ($_->{rpc} // '') eq 'tools/call' } local_log();
is(scalar @calls, 1, 'the mcp on location logged its call (log_subrequest)');
is($calls[0]{msid}, $lsid[0], '... $mcp_session_id: the gateway\'s session there, not the client\'s');
ok((grep { $_->{tool} eq 'test_simple_text' } @calls), '... $mcp_tool: the name it was asked for');

# --- streams ---------------------------------------------------------------------

for my $tool ('test_tool_with_progress', 'up__test_tool_with_progress') {
    my $s = call_stream($t, $sid, 300, $tool, {}, token => "tok-$tool", protocol_version => $V);
    my @m = rpc_of(take_all($s, 10));
    my @p = grep { ($_->{method} // '') eq 'notifications/progress' } @m;
    is(scalar @p, 3, "$tool: three progress notifications on the call's stream");
    ok(!(grep { ($_->{params}{progressToken} // '') ne "tok-$tool" } @p), '... with the client\'s token');
    ok((grep { defined $_->{id} && $_->{id} == 300 && $_->{result} } @m), '... and the result');
}

{
    my $s = call_stream($t, $sid, 310, 'test_sampling', { prompt => 'the question' }, protocol_version => $V);
    my $req = next_request($s, 10);
    is($req && $req->{method}, 'sampling/createMessage', 'the mcp on location\'s sampling request reaches the client');
    my $a = answer($t, $sid, $req->{id}, sampling_answer('forty-two'), protocol_version => $V);
    is($a->{status}, 202, '... its answer, POSTed to the gateway: 202');
    my ($res) = grep { defined $_->{id} && $_->{id} == 310 } rpc_of(take_all($s, 10));
    like(text($res && $res->{result}), qr/forty-two/, '... and the tool\'s result has it');
}

# the client's GET stream: the mcp on location's own GET stream feeds it
{
    my $g = $t->mcp_get_stream($sid, protocol_version => $V, timeout => 10);
    is($g->status, 200, 'the client\'s GET stream');
    my $gets = 0;
    my $t0 = time;
    while (time < $t0 + 5) {
        $gets = grep { $_->{method} eq 'GET' } local_log();
        last if $gets;
        sleep 0.05;
    }
    # a GET subrequest is logged when it ends: see it open by the
    # subscription's update instead
    my $sub = $t->mcp_call($lsid[0], 'resources/subscribe', { uri => 'test://watched-resource' },
                           protocol_version => $V, path => '/_b/local');
    is(ref $sub, 'HASH', 'the gateway\'s session at local subscribes to a resource there');
    $r = $t->mcp_call($sid, 'tools/call', { name => 'update_watched_resource', arguments => {} },
                      protocol_version => $V);
    like(text($r), qr/updated/i, 'a call changes the resource at local');
    my $ev;
    my $deadline = time + 8;
    while (time < $deadline) {
        my $e = $g->next_event($deadline - time) or last;
        next unless ref $e->{json} eq 'HASH';
        if (($e->{json}{method} // '') eq 'notifications/resources/updated') { $ev = $e->{json}; last }
    }
    is($ev && $ev->{params}{uri}, 'test://watched-resource',
       'local\'s resources/updated reaches the client\'s GET stream');
    $g->close;
}

# --- a stateless client ------------------------------------------------------------

{
    my $P = 'io.modelcontextprotocol/';
    my $msg = { jsonrpc => '2.0', id => 7, method => 'tools/call',
                params => { name => 'test_simple_text', arguments => {},
                            _meta => { "${P}protocolVersion" => '2026-07-28',
                                       "${P}clientCapabilities" => {} } } };
    my $res = $t->mcp_post(undef, $msg, protocol_version => '2026-07-28',
                           headers => { 'Mcp-Method' => 'tools/call', 'Mcp-Name' => 'test_simple_text' });
    is($res->{status}, 200, 'a stateless (2026-07-28) call through the gateway');
    my ($m) = grep { ref $_ eq 'HASH' && defined $_->{id} && $_->{id} == 7 } @{ $res->{messages} // [] };
    is(text($m && $m->{result}), 'This is a simple text response for testing.', '... served by the mcp on location');
}

# --- another module's subrequest (mirror) is not served -------------------------

{
    my $before = () = local_sessions();
    my ($msid) = $t->mcp_initialize(protocol_version => $V, path => '/mirrored');
    ok($msid, 'an initialize at a location whose requests are mirrored to /_b/local');
    my $deadline = time + 5;
    my @m;
    while (time < $deadline) {
        @m = grep { $_->{method} eq 'POST' && $_->{status} eq '404' } local_log();
        last if @m >= 2;
        sleep 0.05;
    }
    is(scalar @m, 2, '... its mirrors (initialize, initialized) are not served by the mcp on location');
    is(scalar(() = local_sessions()), $before, '... which opened no session for them');
}

# --- the client's DELETE ends the session at both ------------------------------------

{
    my $d = $t->mcp_delete($sid, protocol_version => $V);
    ok($d->{status} == 200 || $d->{status} == 204, 'the client\'s DELETE');
    my $deadline = time + 5;
    my ($at_local, $at_up);
    while (time < $deadline) {
        $at_local = grep { $_->{method} eq 'DELETE' && $_->{sid} eq $lsid[0] } local_log();
        $at_up = grep { $_->{method} eq 'DELETE' } upstream_log($up);
        last if $at_local && $at_up;
        sleep 0.05;
    }
    ok($at_local, '... reaches the mcp on location, with the gateway\'s session there');
    ok($at_up, '... and, through the mcp_pass location, the remote server');
    my $after = $t->mcp_post($lsid[0], { jsonrpc => '2.0', id => 9, method => 'ping' },
                             protocol_version => $V, path => '/_b/local', quiet => 1);
    is($after->{status}, 404, '... whose session at local is gone');
}

$t->check_log;
$up->check_log;

done_testing;
