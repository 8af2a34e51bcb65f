# mcp_pass https://: TLS to the upstream.  The upstream is this module's
# Everything set behind an nginx TLS listener with a certificate made here
# by the openssl CLI.  With mcp_pass_ssl_verify on and that certificate as
# the trusted CA, a session works through the gateway (JSON and SSE); a
# CA that did not sign it gets a 502 JSON-RPC error, never the upstream.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use File::Temp ();
use McpTest;
use McpAssert;

my $dir = File::Temp->newdir;

sub cert {
    my ($name) = @_;
    # quiet: openssl writes its progress to stderr
    open my $saved, '>&', \*STDERR or die;
    open STDERR, '>', '/dev/null' or die;
    my $rc = system('openssl', 'req', '-x509', '-newkey', 'rsa:2048', '-nodes',
                    '-days', '2', '-subj', '/CN=localhost',
                    '-addext', 'subjectAltName=DNS:localhost',
                    '-keyout', "$dir/$name.key", '-out', "$dir/$name.crt");
    open STDERR, '>&', $saved or die;
    die "openssl req failed\n" if $rc;
    return ("$dir/$name.crt", "$dir/$name.key");
}

my ($crt, $key) = cert('upstream');
my ($other) = cert('other');

my $t = McpTest->new(
    ports => 2,
    http  => <<"NGX",
    mcp_session_zone zone=gw:1m;
    mcp_session_zone zone=up:1m;

    server {
        listen 127.0.0.1:%%PORT2%% ssl;
        ssl_certificate     $crt;
        ssl_certificate_key $key;
        location = /mcp { mcp on; mcp_session up; mcp_builtin everything; }
    }
NGX
    server => <<"NGX",
        location = /mcp {
            mcp_pass https://localhost:%%PORT2%%/mcp;
            mcp_session gw;
            mcp_pass_ssl_verify on;
            mcp_pass_ssl_trusted_certificate $crt;
        }
        location = /wrong-ca {
            mcp_pass https://localhost:%%PORT2%%/mcp;
            mcp_session gw;
            mcp_pass_ssl_verify on;
            mcp_pass_ssl_trusted_certificate $other;
        }
NGX
)->start;

my ($sid, $init, $ir) = $t->mcp_initialize(client_info => { name => 'tls', version => '1' });
like($sid // '', qr/^[0-9a-f]{32}$/, 'initialize through a TLS upstream: a session');
is($init->{serverInfo}{name}, 'ngx_http_mcp_module', '... answered by the upstream');

my $res = $t->mcp_call($sid, 'tools/call', { name => 'test_simple_text' });
is($res->{content}[0]{text}, 'This is a simple text response for testing.',
   'tools/call over TLS: the upstream\'s result');

my $r = $t->mcp_post($sid, { jsonrpc => '2.0', id => 'p', method => 'tools/call',
                             params => { name => 'test_tool_with_progress',
                                         _meta => { progressToken => 'tls' } } });
like($r->{headers}{'content-type'} // '', qr{^text/event-stream}, 'an SSE reply relayed over TLS');
my @progress = grep { ($_->{method} // '') eq 'notifications/progress' } @{ $r->{messages} };
is(scalar @progress, 3, '... with its three progress notifications');
is((grep { ($_->{id} // '') eq 'p' } @{ $r->{messages} })[0]{result}{content}[0]{text},
   'Tool with progress executed successfully', '... and its result');

is($t->mcp_delete($sid)->{status}, 200, 'DELETE over TLS: 200');

# a certificate no trusted CA signed: the upstream is never spoken to
$t->expect_log_error(qr/upstream SSL certificate verify error|SSL_do_handshake|certificate verify failed/);
$r = $t->mcp_post(undef, { jsonrpc => '2.0', id => 'i', method => 'initialize',
                           params => { protocolVersion => '2025-11-25', capabilities => {},
                                       clientInfo => { name => 'x', version => '1' } } },
                  path => '/wrong-ca');
is_rpc_error_body($r, 502, -32000, 'i', 'an upstream certificate no trusted CA signed: 502 JSON-RPC error');
ok(!$r->{headers}{'mcp-session-id'}, '... and no session');

$t->stop;
done_testing;
