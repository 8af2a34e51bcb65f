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

# --- client certificates: an upstream that asks for one -----------------------------------

sub quiet_openssl {
    my (@args) = @_;
    open my $saved, '>&', \*STDERR or die;
    open STDERR, '>', '/dev/null' or die;
    my $rc = system('openssl', @args);
    open STDERR, '>&', $saved or die;
    die "openssl @args[0, 1] failed\n" if $rc;
}

# a CA, the gateway's certificate it signed, and that key encrypted
my ($ca, $ca_key) = cert('client-ca');
quiet_openssl('req', '-newkey', 'rsa:2048', '-nodes', '-subj', '/CN=mcp-gateway',
              '-keyout', "$dir/gw.key", '-out', "$dir/gw.csr");
quiet_openssl('x509', '-req', '-in', "$dir/gw.csr", '-CA', $ca, '-CAkey', $ca_key,
              '-CAcreateserial', '-days', '2', '-out', "$dir/gw.crt");
quiet_openssl('pkey', '-in', "$dir/gw.key", '-aes256', '-passout', 'pass:s3cret',
              '-out', "$dir/gw-enc.key");
open my $pw, '>', "$dir/gw.pass" or die;
print $pw "wrong\ns3cret\n";
close $pw;
my ($stranger, $stranger_key) = cert('stranger');

my $m = McpTest->new(
    ports => 2,
    http  => <<"NGX",
    mcp_session_zone zone=gw:1m;
    log_format conn '\$connection \$http_mcp_session_id';

    # the same TLS upstream as two servers: calls of a session reuse
    # their TLS connections
    upstream pool {
        mcp_affinity;
        server 127.0.0.1:%%PORT2%%;
        server 127.0.0.2:%%PORT2%%;
        keepalive 8;
    }

    # one server: every request through the keepalive cache
    upstream single {
        server 127.0.0.1:%%PORT2%%;
        keepalive 8;
    }

    server {
        listen 127.0.0.1:%%PORT2%% ssl;
        listen 127.0.0.2:%%PORT2%% ssl;
        ssl_certificate        $crt;
        ssl_certificate_key    $key;
        ssl_verify_client      on;
        ssl_client_certificate $ca;
        location = /mcp {
            mcp on;
            mcp_builtin everything;
            access_log %%PREFIX%%/logs/upstream.log conn;
        }
    }
NGX
    server => <<"NGX",
        mcp_session gw;
        mcp_pass_ssl_verify on;
        mcp_pass_ssl_trusted_certificate $crt;

        location = /mcp {
            mcp_pass https://localhost:%%PORT2%%/mcp;
            mcp_pass_ssl_certificate     $dir/gw.crt;
            mcp_pass_ssl_certificate_key $dir/gw.key;
        }
        location = /encrypted {
            mcp_pass https://localhost:%%PORT2%%/mcp;
            mcp_pass_ssl_certificate     $dir/gw.crt;
            mcp_pass_ssl_certificate_key $dir/gw-enc.key;
            mcp_pass_ssl_password_file   $dir/gw.pass;
        }
        location = /no-cert {
            mcp_pass https://localhost:%%PORT2%%/mcp;
        }
        location = /pool {
            mcp_pass https://pool/mcp;
            mcp_pass_ssl_verify off;
            mcp_pass_ssl_certificate     $dir/gw.crt;
            mcp_pass_ssl_certificate_key $dir/gw.key;
        }
        location = /single {
            mcp_pass https://single/mcp;
            mcp_pass_ssl_verify off;
            mcp_pass_ssl_certificate     $dir/gw.crt;
            mcp_pass_ssl_certificate_key $dir/gw.key;
        }
        location = /stranger {
            mcp_pass https://localhost:%%PORT2%%/mcp;
            mcp_pass_ssl_certificate     $stranger;
            mcp_pass_ssl_certificate_key $stranger_key;
        }
NGX
)->start;

for my $path ('/mcp', '/encrypted') {
    my ($sid) = eval { $m->mcp_initialize(path => $path) };
    like($sid // '', qr/^[0-9a-f]{32}$/, "$path: the upstream asks for a client certificate: the "
         . 'gateway\'s gets a session');
    my $res = $m->mcp_call($sid, 'tools/call', { name => 'test_simple_text' }, path => $path);
    is(($res->{content} // [])->[0]{text}, 'This is a simple text response for testing.',
       "$path: tools/call through it");
}

{
    my ($sid) = eval { $m->mcp_initialize(path => '/pool') };
    ok($sid, 'a session through an upstream block of two TLS servers with mcp_affinity');
    my $ok = 0;
    for (1 .. 100) {
        my $res = $m->mcp_call($sid, 'tools/call', { name => 'test_simple_text' }, path => '/pool');
        $ok++ if (($res // {})->{content} // [])->[0]{text};
    }
    is($ok, 100, '... 100 tools/call of it answered');
    McpTest::wait_until(3, sub { (() = (McpTest::_slurp($m->prefix . '/logs/upstream.log') // '') =~ /\n/g) >= 101 });
    my @l = map { [ split / / ] } split /\n/, McpTest::_slurp($m->prefix . '/logs/upstream.log') // '';
    my ($usid) = map { $_->[1] } grep { $_->[1] ne '-' } @l;
    my %conns = map { $_->[0] => 1 } grep { $_->[1] eq ($usid // '') } @l;
    ok(keys %conns >= 1 && keys %conns <= 4, '... over ' . scalar(keys %conns)
       . ' TLS connections (4 gateway workers, keepalive 8), not one a call');
}

{
    # a request on a cached TLS connection was buffered, never sent, until
    # the client gave up: every one after the first of a connection
    my ($sid) = eval { $m->mcp_initialize(path => '/single', timeout => 3) };
    ok($sid, 'a session through a one-server TLS upstream block with keepalive');
    my $ok = 0;
    for (1 .. 10) {
        my $res = $m->mcp_call($sid, 'tools/call', { name => 'test_simple_text' },
                               path => '/single', timeout => 3, quiet => 1);
        $ok++ if (($res // {})->{content} // [])->[0]{text};
    }
    is($ok, 10, '... 10 tools/call of it answered, over cached TLS connections');
}

$m->expect_log_error(qr/upstream answered 400 without a JSON-RPC body/,
                     qr/client sent no required SSL certificate|client SSL certificate verify error/);
for my $path ('/no-cert', '/stranger') {
    my $r = $m->mcp_post(undef, { jsonrpc => '2.0', id => 'c', method => 'initialize',
                                  params => { protocolVersion => '2025-11-25', capabilities => {},
                                              clientInfo => { name => 'x', version => '1' } } },
                         path => $path);
    is_rpc_error_body($r, 502, -32000, 'c', "$path: the upstream refuses the gateway: 502 JSON-RPC error");
    ok(!$r->{headers}{'mcp-session-id'}, "$path: ... and no session");
}
$m->stop;

{
    my $c = McpTest->new(
        ports  => 2,
        server => "location = /mcp { mcp_pass https://localhost:%%PORT2%%/mcp; "
                . "mcp_pass_ssl_certificate $dir/gw.crt; }",
    );
    my ($rc, $out) = $c->nginx_t;
    is($rc, 1, 'nginx -t: mcp_pass_ssl_certificate without its key is refused (exit 1)');
    like($out, qr/"mcp_pass_ssl_certificate" and "mcp_pass_ssl_certificate_key" go together/,
         '... saying so');
    $c = McpTest->new(
        ports  => 2,
        server => "location = /mcp { mcp_pass https://localhost:%%PORT2%%/mcp; "
                . "mcp_pass_ssl_certificate $dir/gw.crt; mcp_pass_ssl_certificate_key $dir/gw-enc.key; }",
    );
    ($rc, $out) = $c->nginx_t;
    is($rc, 1, 'nginx -t: an encrypted key without its password file is refused (exit 1, not a crash)');
    like($out, qr/\[emerg\]/, '... with an [emerg]') or diag($out);
}

done_testing;
