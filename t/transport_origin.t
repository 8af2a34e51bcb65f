# Origin allowlist (DNS rebinding protection): the localhost default, an
# explicit list, "*", and invalid values refused by nginx -t.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use McpTest;
use McpAssert;

my $t = McpTest->new(server => <<'NGX')->start;
        location = /mcp { mcp on; mcp_builtin everything; }
        location = /app { mcp on; mcp_builtin everything;
                          mcp_allowed_origins https://app.example.com; }
        location = /two { mcp on; mcp_allowed_origins localhost https://b.example.org:8443/; }
        location = /any { mcp on; mcp_builtin everything; mcp_allowed_origins *; }
NGX
my $port = $t->port;

sub ping_with_origin {
    my ($path, $origin, $sid) = @_;
    return $t->mcp_post($sid, { jsonrpc => '2.0', id => 'o', method => 'ping' },
                        path => $path, headers => { Origin => $origin });
}

sub check {
    my ($path, $sid, $origin, $allowed) = @_;
    my $r = ping_with_origin($path, $origin, $sid);
    my $show = $origin // '(none)';
    if ($allowed) {
        ok($r->{status} == 200 && ref $r->{json} eq 'HASH' && exists $r->{json}{result},
           "$path: Origin $show passes") or diag(McpTest::explain_response($r));
    }
    else {
        is_rpc_error_body($r, 403, -32600, undef, "$path: Origin $show gets 403 with a JSON-RPC error");
    }
}

# --- default: no Origin and localhost origins -------------------------------

my ($sid) = $t->mcp_initialize;
check('/mcp', $sid, $_, 1) for (undef, "http://localhost:$port", "http://127.0.0.1:$port",
    "http://[::1]:$port", 'http://localhost', 'https://localhost:8443', 'http://127.0.0.1',
    "HTTP://LOCALHOST:$port", "http://localhost:$port/");
check('/mcp', $sid, $_, 0) for ('http://evil.example.com', 'https://evil.example.com:443',
    'http://localhost.evil.com', "http://localhost.evil.com:$port", 'http://127.0.0.1.nip.io',
    "http://127.0.0.2:$port", 'http://[::2]', 'http://localhost:', 'http://localhost:80x',
    'http://evil.com/localhost', 'file://localhost', 'null', 'localhost', '');

{
    # Refused requests change nothing: no session made, none deleted.
    my $r = $t->mcp_post(undef, { jsonrpc => '2.0', id => 1, method => 'initialize',
                                  params => { protocolVersion => '2025-11-25', capabilities => {},
                                              clientInfo => { name => 'x', version => '1' } } },
                         headers => { Origin => 'http://evil.example.com' });
    is_rpc_error_body($r, 403, -32600, undef, 'initialize from a foreign Origin: 403');
    ok(!defined $r->{headers}{'mcp-session-id'}, '... and no session issued');
    my $d = $t->mcp_delete($sid, headers => { Origin => 'http://evil.example.com' });
    is_rpc_error_body($d, 403, -32600, undef, 'DELETE from a foreign Origin: 403');
    my ($msg) = $t->mcp_request($sid, 'ping', undef, id => 'alive');
    is_result($msg, {}, 'alive', '... and the session was not deleted');
    my $g = $t->request(method => 'GET', path => '/mcp',
                        headers => { Accept => 'text/event-stream', Origin => 'http://evil.example.com' });
    is_rpc_error_body($g, 403, -32600, undef, 'GET from a foreign Origin: 403');
}

# --- an explicit list --------------------------------------------------------

my ($sid_app) = $t->mcp_initialize(path => '/app');
check('/app', $sid_app, $_, 1) for (undef, 'https://app.example.com', 'https://app.example.com/');
check('/app', $sid_app, $_, 0) for ('http://app.example.com', 'https://app.example.com:8443',
    'https://evil.example.com', 'https://app.example.com.evil.com', 'https://sub.app.example.com',
    "http://localhost:$port", "http://127.0.0.1:$port");

my ($sid_two) = $t->mcp_initialize(path => '/two');
check('/two', $sid_two, $_, 1) for ("http://localhost:$port", 'https://b.example.org:8443');
check('/two', $sid_two, $_, 0) for ('https://b.example.org', 'http://b.example.org:8443',
    'http://evil.example.com');

# --- "*" ---------------------------------------------------------------------

my ($sid_any) = $t->mcp_initialize(path => '/any');
check('/any', $sid_any, $_, 1) for (undef, 'http://evil.example.com', 'null',
    "http://localhost:$port");

# --- invalid values: nginx -t fails with a clear message -------------------

for my $case ([ 'example.com',           qr/invalid origin "example\.com"/ ],
              [ 'ftp://files.example',   qr/invalid origin "ftp:\/\/files\.example"/ ],
              [ '*.example.com',         qr/invalid origin "\*\.example\.com"/ ],
              [ 'localhost //bad',       qr/invalid origin "\/\/bad"/ ]) {
    my ($value, $re) = @$case;
    my $bad = McpTest->new(server => "location = /mcp { mcp on; mcp_allowed_origins $value; }");
    my ($rc, $out) = $bad->nginx_t;
    isnt($rc, 0, "mcp_allowed_origins $value: nginx -t fails");
    like($out, $re, "mcp_allowed_origins $value: the message names the bad origin");
    like($out, qr/\[emerg\].*nginx\.conf:\d+/, "mcp_allowed_origins $value: with file and line");
}

{
    for my $value ('https://app.example.com/path', 'http://', 'https://a.example:port') {
        my $bad = McpTest->new(server => "location = /mcp { mcp on; mcp_allowed_origins '$value'; }");
        my ($rc, $out) = $bad->nginx_t;
        ok($rc != 0 && $out =~ /invalid origin "\Q$value\E"/,
           "mcp_allowed_origins '$value': nginx -t fails naming it");
    }
}

$t->stop;
done_testing;
