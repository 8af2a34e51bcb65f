# The gateway's own credentials to its upstreams (issue 37, item 1):
# mcp_secret reads a secret from a file into a variable, and
# mcp_pass_set_header sends it (or any value with variables) on every
# request an mcp_pass location relays, in place of the client's header
# of that name; mcp_backend and location tools send it with their
# internal location's proxy_set_header, the caller's own credentials
# stripped.  The upstreams are the module's Everything set (and a plain
# location) on another port, whose access log shows what they received;
# the gateway runs with a debug-level error log, which must never hold
# the secret.  nginx -t refuses a missing, empty or multi-line secret.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use McpTest;
use McpGateway;

my $CALLER = 'caller-token-' . join '', map { int rand 10 } 1 .. 12;
my $SA = 'sk-alpha-' . join '', map { sprintf '%x', int rand 16 } 1 .. 24;
my $SB = 'sk-beta-' . join '', map { sprintf '%x', int rand 16 } 1 .. 24;
my $SA2 = 'sk-rotated-' . join '', map { sprintf '%x', int rand 16 } 1 .. 24;

# what each upstream location received, one JSON line per request
my $CREDS_FORMAT = 'log_format creds escape=json \'{"uri":"$request_uri",'
    . '"auth":"$http_authorization","tenant":"$http_x_tenant_key",'
    . '"gw":"$http_x_gateway","key":"$http_x_api_key","cookie":"$http_cookie"}\';';

sub upstream_locations {
    my (@paths) = @_;
    return join '', map { <<"NGX" } @paths;
        location = /up/$_ {
            mcp on; mcp_builtin everything;
            access_log %%PREFIX%%/logs/creds.log creds;
        }
NGX
}

sub creds {
    my ($t, $path) = @_;
    return grep { ($_->{uri} // '') eq $path } upstream_log($t, 'creds.log');
}

sub secret_file {
    my ($t, $name, $text, $mode) = @_;
    my $path = $t->write_file("conf/$name", $text);
    chmod $mode // 0600, $path;
    return $path;
}

# --- mcp_pass ------------------------------------------------------------------

my $t = McpTest->new(
    ports     => 2,
    log_level => 'debug',
    http      => everything_upstream_http({ locations =>
        # the upstream's own debug lines (the headers it received) go
        # elsewhere: error.log is the gateway's alone
        "        error_log %%PREFIX%%/logs/upstream_error.log info;\n"
        . upstream_locations(qw(a b passed plain inh cleared lb)) },
        $CREDS_FORMAT,
        'mcp_secret $secret_a %%PREFIX%%/conf/secret_a;',
        'mcp_secret $secret_b %%PREFIX%%/conf/secret_b;',
        'map $http_x_tenant $tenant_key { default ""; acme "tenant-acme"; '
        . 'globex "tenant-globex"; }'),
    server => <<'NGX',
        mcp_session gw;
        mcp_pass_set_header X-Gateway "gw-$server_port";

        location = /a {
            mcp_pass http://127.0.0.1:%%PORT2%%/up/a;
            mcp_pass_set_header Authorization "Bearer $secret_a";
            mcp_pass_set_header X-Tenant-Key $tenant_key;
        }
        location = /b {
            mcp_pass http://127.0.0.1:%%PORT2%%/up/b;
            mcp_pass_set_header Authorization "Bearer ${secret_b}";
        }
        location = /passed {
            mcp_pass http://127.0.0.1:%%PORT2%%/up/passed;
            mcp_pass_authorization on;
            mcp_pass_set_header Authorization "Bearer $secret_a";
        }
        location = /plain {
            mcp_pass http://127.0.0.1:%%PORT2%%/up/plain;
            mcp_pass_authorization on;
        }
        location = /inh {
            mcp_pass http://127.0.0.1:%%PORT2%%/up/inh;
        }
        location /lb/ {
            mcp_pass http://127.0.0.1:%%PORT2%%/up/lb;
            mcp_pass_set_header X-Tenant-Key "<$uri>";
        }
        location = /cleared {
            mcp_pass http://127.0.0.1:%%PORT2%%/up/cleared;
            mcp_pass_authorization on;
            mcp_pass_set_header Authorization "";
        }
NGX
);
secret_file($t, 'secret_a', "$SA\n");
secret_file($t, 'secret_b', "$SB\r\n");
$t->start;

my %H = (Authorization => "Bearer $CALLER");

sub session {
    my ($path, %h) = @_;
    my ($sid) = try_initialize($t, path => $path, headers => { %H, %h });
    return $sid;
}

sub list {
    my ($sid, $path, %h) = @_;
    my $r = $t->mcp_post($sid, '{"jsonrpc":"2.0","id":"l","method":"tools/list"}',
                         path => $path, headers => { %H, %h });
    return $r->{status};
}

{
    my $sid = session('/a', 'X-Tenant' => 'acme');
    ok($sid, '/a: a session through the gateway');
    is(list($sid, '/a', 'X-Tenant' => 'globex'), 200, '/a: tools/list relayed');
    is(list($sid, '/a'), 200, '/a: tools/list without a tenant');
    upstream_log_settled($t, 'creds.log');

    my @a = creds($t, '/up/a');
    is(scalar @a, 4, '/up/a: the upstream logged each request');
    is_deeply([ grep { $_->{auth} ne "Bearer $SA" } @a ], [],
              "/a: every request carried the file's secret, its line end cut");
    is_deeply([ grep { ($_->{auth} // '') =~ /\Q$CALLER\E/ } @a ], [],
              "/a: never the caller's token");
    # initialize (X-Tenant: acme), notifications/initialized (the harness
    # sends it with no header of ours), tools/list twice
    is_deeply([ map { $_->{tenant} } @a ],
              [ 'tenant-acme', '', 'tenant-globex', '' ],
              '/a: a value with variables (a map of a client header) is '
              . 'evaluated per request; empty, the header is not sent');
    is_deeply([ grep { $_->{gw} ne '' } @a ], [],
              "/a: its own mcp_pass_set_header list, not the server's");
}

{
    my $sid = session('/b');
    is(list($sid, '/b'), 200, '/b: tools/list relayed');
    upstream_log_settled($t, 'creds.log');
    my @b = creds($t, '/up/b');
    ok(@b >= 3 && !grep({ $_->{auth} ne "Bearer $SB" } @b),
       '/b: another upstream gets its own secret (a CRLF line end cut)')
        or diag explain \@b;
}

{
    my $sid = session('/passed');
    is(list($sid, '/passed'), 200, '/passed: relayed');
    my $sid2 = session('/plain');
    is(list($sid2, '/plain'), 200, '/plain: relayed');
    $sid = session('/cleared');
    is(list($sid, '/cleared'), 200, '/cleared: relayed');
    $sid = session('/inh');
    upstream_log_settled($t, 'creds.log');

    my @plain = creds($t, '/up/plain');
    ok((grep { $_->{auth} eq "Bearer $CALLER" } @plain) == 2,
       "mcp_pass_authorization on alone: the caller's token goes upstream "
       . '(the log would show it)');
    my @p = creds($t, '/up/passed');
    ok(@p && !grep({ $_->{auth} ne "Bearer $SA" } @p),
       "mcp_pass_authorization on with mcp_pass_set_header Authorization: "
       . "the location's alone") or diag explain \@p;
    my @c = creds($t, '/up/cleared');
    ok(@c && !grep({ $_->{auth} ne '' } @c),
       'mcp_pass_set_header Authorization "": no Authorization at all')
        or diag explain \@c;
    my @i = creds($t, '/up/inh');
    ok(@i && !grep({ $_->{gw} ne 'gw-' . $t->port } @i),
       "a location with no mcp_pass_set_header inherits the server's")
        or diag explain \@i;
}

{
    # $uri is decoded: %0A is a line feed, which would end the header
    # and start one the client wrote
    my $r = $t->request(method => 'POST', path => '/lb/%0AX-Gateway:%20forged',
        headers => { 'Content-Type' => 'application/json',
                     Accept => 'application/json, text/event-stream' },
        body => '{"jsonrpc":"2.0","id":1,"method":"initialize","params":'
              . '{"protocolVersion":"2025-11-25","capabilities":{},'
              . '"clientInfo":{"name":"t","version":"1"}}}');
    is($r->{status}, 200, 'a value with a decoded line feed: relayed');
    my $plain = $t->request(method => 'POST', path => '/lb/x',
        headers => { 'Content-Type' => 'application/json',
                     Accept => 'application/json, text/event-stream' },
        body => '{"jsonrpc":"2.0","id":1,"method":"initialize","params":'
              . '{"protocolVersion":"2025-11-25","capabilities":{},'
              . '"clientInfo":{"name":"t","version":"1"}}}');
    upstream_log_settled($t, 'creds.log');
    my @lb = creds($t, '/up/lb');
    is_deeply([ map { [ $_->{tenant}, $_->{gw} ] } @lb ], [ [ '', '' ], [ '</lb/x>', '' ] ],
              '... without the header, and no header the client wrote; '
              . 'the same value without one is sent');
    like($t->error_log, qr/\[info\].*"mcp_pass_set_header X-Tenant-Key" holds a line break/,
         '... which error.log says at info');
}

{
    my $log = $t->error_log;
    SKIP: {
        # without --with-debug (nginx.org's packages, most source builds)
        # nginx writes no debug line at all: there is nothing to look through
        skip 'this nginx is built without --with-debug: no debug log', 2
            unless $t->_nginx_configure_args =~ /--with-debug\b/;
        like($log, qr/\[debug\]/, 'the error log is at debug level');
        like($log, qr/\Q$CALLER\E/,
             "... where nginx prints the headers it receives (the caller's token)");
    }
    unlike($log, qr/\Q$SA\E/, '... and the first secret appears nowhere');
    unlike($log, qr/\Q$SB\E/, '... nor the second');
}

# a reload reads the file again
secret_file($t, 'secret_a', "$SA2\n");
ok($t->reload, 'reload with a rotated secret');
{
    my $sid = session('/a');
    is(list($sid, '/a'), 200, 'after the reload: relayed');
    upstream_log_settled($t, 'creds.log');
    my @a = creds($t, '/up/a');
    is($a[-1]{auth}, "Bearer $SA2", 'after the reload: the new secret');
    unlike($t->error_log, qr/\Q$SA2\E/, '... which is not logged either');
}

$t->stop;

# --- mcp_backend and location tools ------------------------------------------

my $k = McpTest->new(
    ports => 2,
    http  => everything_upstream_http({ locations =>
        upstream_locations(qw(one two)) . <<'NGX' },
        location = /rest {
            access_log %%PREFIX%%/logs/creds.log creds;
            default_type application/json;
            return 200 '{"ok":true}';
        }
NGX
        $CREDS_FORMAT,
        'mcp_secret $secret_a %%PREFIX%%/conf/secret_a;',
        'mcp_secret $secret_b %%PREFIX%%/conf/secret_b;'),
    server => <<'NGX',
        mcp_session gw;

        location = /agg {
            mcp_backend one /_b/one;
            mcp_backend two /_b/two;
        }
        location /_b/one {
            internal;
            proxy_pass http://127.0.0.1:%%PORT2%%/up/one;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_set_header Authorization "Bearer $secret_a";
        }
        location /_b/two {
            internal;
            proxy_pass http://127.0.0.1:%%PORT2%%/up/two;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_set_header Authorization "Bearer $secret_b";
        }

        location = /tools {
            mcp on;
            mcp_tool rest { description "A REST call"; pass /_t/rest;
                            method GET; }
        }
        location /_t/rest {
            internal;
            proxy_pass http://127.0.0.1:%%PORT2%%/rest;
            proxy_set_header Authorization "Bearer $secret_a";
            proxy_set_header X-Api-Key $secret_b;
        }
NGX
);
secret_file($k, 'secret_a', "$SA\n");
secret_file($k, 'secret_b', "$SB\n");
$k->start;

my %CALLER_H = (%H, 'X-Api-Key' => 'caller-key', Cookie => 'c=caller-cookie');

{
    my ($sid) = try_initialize($k, path => '/agg', headers => \%CALLER_H);
    ok($sid, 'mcp_backend: a session');
    my $r = $k->mcp_post($sid, '{"jsonrpc":"2.0","id":"l","method":"tools/list"}',
                         path => '/agg', headers => \%CALLER_H);
    my @names = map { $_->{name} } @{ $r->{json}{result}{tools} // [] };
    ok((grep { /^one__/ } @names) && (grep { /^two__/ } @names),
       'mcp_backend: both backends listed');
    upstream_log_settled($k, 'creds.log');

    my @one = creds($k, '/up/one');
    my @two = creds($k, '/up/two');
    ok(@one && !grep({ $_->{auth} ne "Bearer $SA" } @one),
       "mcp_backend: the first backend gets its location's secret")
        or diag explain \@one;
    ok(@two && !grep({ $_->{auth} ne "Bearer $SB" } @two),
       '... the second its own') or diag explain \@two;
    is_deeply([ grep { $_->{key} ne '' || $_->{cookie} ne '' } @one, @two ], [],
              "... and neither the caller's API key nor its cookie");
}

{
    my ($sid) = try_initialize($k, path => '/tools', headers => \%CALLER_H);
    my $r = $k->mcp_post($sid,
        '{"jsonrpc":"2.0","id":"c","method":"tools/call","params":{"name":"rest","arguments":{}}}',
        path => '/tools', headers => \%CALLER_H);
    ok($r->{json} && $r->{json}{result} && !$r->{json}{result}{isError},
       'a location tool: called') or diag explain $r->{json};
    upstream_log_settled($k, 'creds.log');
    my @rest = creds($k, '/rest');
    is(scalar @rest, 1, 'a location tool: one request upstream');
    is($rest[0]{auth}, "Bearer $SA",
       "a location tool: the internal location's Authorization, not the caller's");
    is($rest[0]{key}, $SB,
       "... and its X-Api-Key (a header the fetch strips of the caller's)");
    is($rest[0]{cookie}, '', "... no caller's cookie");
}

unlike($k->error_log, qr/\Q$SA\E|\Q$SB\E/, 'the secrets are not in error.log');
$k->stop;

# --- nginx -t ------------------------------------------------------------------------

my $c = McpTest->new(ports => 2);

sub conf_t {
    my ($http, $server) = @_;
    $c->write_config(http => $http, server => $server // <<'NGX');
        location = /mcp {
            mcp_pass http://127.0.0.1:%%PORT2%%/mcp;
            mcp_pass_set_header Authorization "Bearer $s";
        }
NGX
    return $c->nginx_t;
}

{
    my ($rc, $out) = conf_t('mcp_secret $s %%PREFIX%%/conf/missing;');
    isnt($rc, 0, 'nginx -t: a missing secret file is refused');
    like($out, qr/mcp_secret: open\(\) ".*missing" failed/, '... saying which');

    secret_file($c, 'empty', "\n");
    ($rc, $out) = conf_t('mcp_secret $s %%PREFIX%%/conf/empty;');
    isnt($rc, 0, 'nginx -t: an empty secret file (a line end alone) is refused');
    like($out, qr/mcp_secret: ".*empty" is empty/, '... saying so');

    secret_file($c, 'lines', "one\ntwo\n");
    ($rc, $out) = conf_t('mcp_secret $s %%PREFIX%%/conf/lines;');
    isnt($rc, 0, 'nginx -t: a secret of two lines is refused');
    like($out, qr/holds a line break/, '... saying why');
    unlike($out, qr/one|two/, '... without printing it');

    secret_file($c, 'open', "$SA\n", 0644);
    ($rc, $out) = conf_t('mcp_secret $s %%PREFIX%%/conf/open;');
    is($rc, 0, 'nginx -t: a secret readable by everyone is taken');
    like($out, qr/\[warn\].*mcp_secret: ".*open" is readable by every user/,
         '... with a warning');
    unlike($out, qr/\Q$SA\E/, '... that does not print it');

    secret_file($c, 'ok', "$SA\n");
    ($rc, $out) = conf_t('mcp_secret $host %%PREFIX%%/conf/ok;');
    isnt($rc, 0, 'nginx -t: mcp_secret over a defined variable is refused');

    ($rc, $out) = conf_t("mcp_secret \$s %%PREFIX%%/conf/ok;\n"
                         . 'mcp_secret $s %%PREFIX%%/conf/ok;');
    isnt($rc, 0, 'nginx -t: one variable twice is refused');

    ($rc, $out) = conf_t('mcp_secret s %%PREFIX%%/conf/ok;');
    isnt($rc, 0, 'nginx -t: a name without $ is refused');

    for my $bad ('Host x', 'Content-Length 1', 'Mcp-Session-Id x',
                 'Transfer-Encoding chunked', '"Bad Name" x',
                 'X-C $1', 'X-D "${secret"', 'X-E "a$"', 'X-F $no_such_variable',
                 'X-A x;mcp_pass_set_header x-a y')
    {
        ($rc, $out) = conf_t('', <<"NGX");
        location = /mcp {
            mcp_pass http://127.0.0.1:%%PORT2%%/mcp;
            mcp_pass_set_header $bad;
        }
NGX
        isnt($rc, 0, "nginx -t: mcp_pass_set_header $bad is refused");
        like($out, qr/regex captures are not taken/, '... saying why')
            if $bad =~ /\$1/;
        like($out, qr/invalid variable name in the value of mcp_pass_set_header "X-[DE]"/,
             '... saying why') if $bad =~ /X-[DE]/;
    }
    like($out, qr/set twice/, '... a name set twice, case aside, says so');

    ($rc, $out) = conf_t('', <<'NGX');
        location = /mcp {
            mcp_pass http://127.0.0.1:%%PORT2%%/mcp;
            mcp_pass_set_header X-Id "$request_id";
        }
NGX
    is($rc, 0, 'nginx -t: a header with a variable') or diag $out;
}

done_testing;
