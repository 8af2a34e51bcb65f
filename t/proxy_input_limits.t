# The input limits (mcp_max_input_depth, mcp_max_input_string) on every
# path of a tools/call, not only a built-in endpoint's: through mcp_pass
# and through mcp_backend the gateway refuses arguments over its limits
# with -32602 before any upstream sees them, whatever the upstream's own
# limits; arguments within them go through.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Time::HiRes ();
use McpTest;
use McpAssert;

my $t = McpTest->new(
    ports => 2,
    http  => <<'NGX',
    mcp_session_zone zone=up:1m;
    log_format up '$request_method $mcp_method $mcp_name';
    server {
        listen 127.0.0.1:%%PORT2%%;
        mcp_session up;
        location = /mcp { mcp on; mcp_builtin everything;
                          mcp_max_input_depth 64; mcp_max_input_string 1m;
                          access_log %%PREFIX%%/logs/upstream.log up; }
    }
NGX
    server => <<'NGX')->start;
        location = /pass { mcp_pass http://127.0.0.1:%%PORT2%%/mcp;
                           mcp_max_input_depth 3; mcp_max_input_string 16; }
        location = /agg  { mcp_backend up /_b/up;
                           mcp_max_input_depth 3; mcp_max_input_string 16; }
        location = /_b/up { internal;
                            proxy_pass http://127.0.0.1:%%PORT2%%/mcp;
                            proxy_http_version 1.1;
                            proxy_set_header Connection ""; }
NGX

my $deep = { message => { a => { b => { c => 1 } } } };
my $long = { message => 'x' x 17 };
my $ok = { message => 'hello' };

for my $path (qw(/pass /agg)) {
    my ($sid) = $t->mcp_initialize(path => $path);
    ok($sid, "$path: initialized");
    my $tool = $path eq '/agg' ? 'up__test_simple_text' : 'test_simple_text';

    my $before = -s $t->prefix . '/logs/upstream.log' // 0;
    my ($msg) = $t->mcp_request($sid, 'tools/call', { name => $tool, arguments => $deep },
                                path => $path, id => 'deep');
    is_error($msg, -32602, 'deep', "$path: nesting over the limit: -32602 with the id");
    like($msg->{error}{message}, qr/nest too deep \(limit 3\)/, '... saying which limit');

    ($msg) = $t->mcp_request($sid, 'tools/call', { name => $tool, arguments => $long },
                             path => $path, id => 'long');
    is_error($msg, -32602, 'long', "$path: a string over the limit: -32602 with the id");
    like($msg->{error}{message}, qr/string that is too long \(limit 16\)/, '... saying which limit');
    ($msg) = $t->mcp_request($sid, 'tools/call', { name => $tool, arguments => $ok },
                             path => $path);
    ok($msg && $msg->{result} && !$msg->{result}{isError}, "$path: within the limits: relayed")
        or diag(McpTest::encode_json($msg));
    # the upstream logs a request after its reply: wait for a call's
    # line, and half a second more for any other, then every call it
    # logged since the refused two must be the relayed one (the lines of
    # initialize and its notification, which may come late, are not calls)
    my $seen = '';
    my $log = sub {
        $seen = substr(McpTest::_slurp($t->prefix . '/logs/upstream.log') // '', $before);
    };
    McpTest::wait_until(10, sub { $log->() =~ /^POST tools\/call test_simple_text$/m });
    Time::HiRes::sleep(0.5);
    $log->();
    my $calls = () = $seen =~ /^POST tools\/call /mg;
    ok($calls <= 1, "$path: the upstream saw neither") or diag($seen);
    is($calls, 1, "$path: ... the upstream's log has it");
}

done_testing;
