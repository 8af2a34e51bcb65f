# Hardening, second pass (issue 35): location tools, task quotas, and the
# attacks tried on surfaces nobody had tried before.
#
# What broke and is fixed (each test here failed on 51aaf50):
# - row 1: a location tool's upstream that answered with X-Accel-Redirect
#   (or a reply that error_page or a named location took over) had nginx
#   run another location, one the tool's caller may not reach (a denied
#   tool's, with the gateway's own credentials), and its reply was the
#   tool's result.  The redirect is now stopped before that location
#   runs and the call is an isError result (mcp_resource pass=: an
#   error); the upstream behind the other location sees nothing;
# - row 2: $mcp_arg_NAME took the lowercase member first, then any case:
#   {"userId":"12","userid":"admin"} passed the schema on userId and
#   sent "admin".  It now reads the input schema's property of that name,
#   as the schema spells it; names that differ only in case (two
#   arguments, or an argument and a property) are -32602; a member that
#   no property names reaches no variable.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Time::HiRes ();
use McpTest timeout => 180;
use McpAssert;
use McpGateway qw(start_python_upstream);

my $V26 = '2026-07-28';
my $P   = 'io.modelcontextprotocol/';
my $TASKS = { extensions => { "${P}tasks" => {} } };

my $USER_SCHEMA = '{"type":"object","properties":{'
    . '"userId":{"type":"string","pattern":"^[0-9]{1,4}$"},'
    . '"id":{"type":"string","pattern":"^[0-9]+$"},'
    . '"q":{"type":"string"}},"required":["userId"]}';

my $t = McpTest->new(
    ports => 4,
    http  => <<'NGX',
    proxy_http_version 1.1;
    mcp_session_zone zone=anon:1m tasks=6 tasks_per_client=3;
    mcp_session_zone zone=pc:1m per_client=$http_x_client:10 tasks=5 tasks_per_client=2;

    # the weather API a tool proxies to: hostile, it answers with orders
    # for nginx
    server {
        listen 127.0.0.1:%%PORT2%%;
        access_log %%PREFIX%%/logs/weather.log;
        default_type application/json;
        location /redirect { add_header X-Accel-Redirect /internal/billing/refund-all;
                             return 200 '{"weather":"sunny"}'; }
        location /named    { add_header X-Accel-Redirect @billing;
                             return 200 '{"weather":"sunny"}'; }
        location /missing  { return 404; }
        location /plain    { return 200 '{"weather":"rain"}'; }
    }

    # billing: what only the denied refund_all tool may reach
    server {
        listen 127.0.0.1:%%PORT3%%;
        access_log %%PREFIX%%/logs/billing.log;
        default_type application/json;
        location / { return 200 '{"refunded":"everything"}'; }
    }
NGX
    server => <<NGX,
        set_real_ip_from 127.0.0.1;
        real_ip_header X-Real-IP;

        mcp_tool weather       { description "Weather"; pass /internal/wx/redirect; method GET; }
        mcp_tool weather_named { description "Weather"; pass /internal/wx/named; method GET; }
        mcp_tool weather_page  { description "Weather"; pass /internal/wx-page; method GET; }
        mcp_tool weather_plain { description "Weather"; pass /internal/wx/plain; method GET; }
        mcp_tool refund_all    { description "Refund everything"; pass /internal/billing/refund-all; }
        mcp_resource wx://doc pass=/internal/wx/redirect mime_type=application/json;

        mcp_tool lookup    { description "A user"; input_schema '$USER_SCHEMA';
                             pass /internal/lookup; method GET; }
        mcp_tool post_user { description "A user, posted"; input_schema '$USER_SCHEMA';
                             pass /internal/post; }

        location = /mcp   { mcp on; mcp_tools_deny refund_all; }
        location = /anon  { mcp on; mcp_builtin everything; mcp_session anon; }
        location = /pc    { mcp on; mcp_builtin everything; mcp_session pc; }

        location /internal/wx/ { internal; proxy_pass http://127.0.0.1:%%PORT2%%/; }
        location /internal/wx-page { internal; proxy_intercept_errors on;
                                     error_page 404 = /internal/billing/refund-all;
                                     proxy_pass http://127.0.0.1:%%PORT2%%/missing; }
        location /internal/billing/ { internal;
                                      proxy_set_header Authorization "Bearer gateway-own-secret";
                                      proxy_pass http://127.0.0.1:%%PORT3%%/; }
        location \@billing { proxy_pass http://127.0.0.1:%%PORT3%%; }
        location /internal/lookup { internal;
            proxy_pass http://127.0.0.1:%%PORT4%%/echo/\$mcp_arg_userId?id=\$mcp_arg_id&extra=\$mcp_arg_extra; }
        location /internal/post { internal; proxy_pass http://127.0.0.1:%%PORT4%%/echo/post; }
NGX
);
my ($py, $ulog) = start_python_upstream($t, 'rest_upstream', $t->port(4));
$t->expect_log_error(qr/a backend's reply is refused: it comes from "(\/internal\/billing\/refund-all|\@billing)" after an internal redirect/,
                     qr/Resource unavailable: its location's reply was redirected inside nginx/);
$t->start;

sub slurp { open my $fh, '<', $_[0] or return ''; local $/; <$fh> }
sub lines_of { scalar(() = slurp($_[0]) =~ /\n/g) }
sub upstream_entries { map { McpTest::decode_json($_) } grep { /\S/ } split /\n/, slurp($ulog) }
sub text_of { ((($_[0] // {})->{content} // [ {} ])->[0] // {})->{text} // '' }

my ($sid) = $t->mcp_initialize;
my $billing = $t->prefix . '/logs/billing.log';

sub call_tool {
    my ($name, $args, %o) = @_;
    return scalar $t->mcp_call($sid, 'tools/call', { name => $name, arguments => $args // {} },
                               timeout => 15, %o);
}

# --- row 1: a tool's reply that nginx redirected internally ---------------------------------

{
    my $r = call_tool('refund_all');
    is($r->{code}, -32602, 'refund_all is denied here');

    my $plain = call_tool('weather_plain');
    is(text_of($plain), '{"weather":"rain"}', 'a plain weather reply is the result');

    for my $tool ('weather', 'weather_named', 'weather_page') {
        $r = call_tool($tool);
        ok($r->{isError}, "$tool: the redirected reply is an isError result")
            or diag(McpTest::encode_json($r));
        unlike(text_of($r), qr/refunded/, '... with nothing of the other location\'s reply');
        like(text_of($r), qr/redirected/, '... saying it was redirected');
    }
    is(lines_of($billing), 0, 'billing never got a request: the redirect was not followed');

    my ($m) = $t->mcp_request($sid, 'resources/read', { uri => 'wx://doc' }, id => 'res-redirect');
    is_error($m, -32603, 'res-redirect', 'mcp_resource pass=: a redirected reply is an error');
    unlike(McpTest::encode_json($m // {}), qr/refunded/, '... with nothing of billing\'s reply');
    is(lines_of($billing), 0, '... and billing still saw nothing');
}

# --- row 2: $mcp_arg_NAME is the member the schema validated --------------------------------

{
    my $r = call_tool('lookup', { userId => '12' });
    ok(!$r->{isError}, 'lookup 12: a result') or diag(McpTest::encode_json($r));
    is((upstream_entries())[-1]{target}, '/echo/12?id=&extra=', '... $mcp_arg_userId is 12');

    my $n = () = upstream_entries();
    for my $case ([ { userId => '12', userid => 'admin' }, 'userId and userid' ],
                  [ { userId => '12', ID => 'x' }, 'ID where the schema has id (not required)' ],
                  [ { userId => '12', Extra => 'a', EXTRA => 'b' }, 'Extra and EXTRA, no property' ])
    {
        for my $tool ('lookup', 'post_user') {
            my ($m) = $t->mcp_request($sid, 'tools/call', { name => $tool, arguments => $case->[0] },
                                      id => "case-$tool");
            is_error($m, -32602, "case-$tool", "$tool: $case->[1]: -32602");
        }
    }
    my $r2 = call_tool('lookup', { userid => '1' });
    ok($r2->{isError} || $r2->{code}, 'userid alone, the schema requires userId: refused');
    is(scalar(() = upstream_entries()), $n, '... and none of them reached the upstream');

    $r = call_tool('lookup', { userId => '7', id => '3', extra => 'free' });
    is((upstream_entries())[-1]{target}, '/echo/7?id=3&extra=',
       'a member no property names ("extra") reaches no $mcp_arg_');

    $r = call_tool('post_user', { userId => '12', q => 'x' });
    is_deeply((upstream_entries())[-1]{body}, { userId => '12', q => 'x' },
              'the POST body: the members the schema validated');
}

{
    my $c = McpTest->new(server => <<'NGX');
        mcp_tool clash { description "Two ids"; pass /x;
                         input_schema '{"type":"object","properties":{"Id":{},"iD":{}}}'; }
        location = /mcp { mcp on; }
NGX
    my ($rc, $out) = $c->nginx_t;
    isnt($rc, 0, 'properties that differ only in case: nginx -t fails');
    like($out, qr/"Id" and "iD" differ only in case/, '... naming them');
}

done_testing;
