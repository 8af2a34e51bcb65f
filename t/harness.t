#!/usr/bin/perl
# Smoke test of the test harness itself (t/lib/McpTest.pm).
# Does not need ngx_http_mcp_module: nginx runs with module => 0 and stock
# directives stand in for the server side.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use IO::Socket::INET;
use POSIX ();
use McpTest qw(decode_chunked parse_sse http_request);

###########################################################################
# 1. Pure unit tests: chunked decoder, SSE parser, log classifier, timeouts
###########################################################################

{
    my $wire = "5\r\nhello\r\n6;name=val\r\n world\r\n0\r\nX-Trailer: yes\r\n\r\nNEXT";
    my ($body, $done, $rest, $trailers) = decode_chunked($wire);
    is($body, 'hello world', 'chunked: body decoded (with chunk extension)');
    ok($done, 'chunked: terminal chunk seen');
    is($rest, 'NEXT', 'chunked: bytes after the message are left over');
    is_deeply($trailers, { 'x-trailer' => 'yes' }, 'chunked: trailer parsed');

    # Same stream fed one byte at a time.
    my $c = McpTest::Chunked->new;
    my $out = join '', map { $c->feed($_) } split //, $wire;
    is($out, 'hello world', 'chunked: byte-at-a-time feed gives same body');
    ok($c->done && $c->rest eq 'NEXT', 'chunked: byte-at-a-time completes');

    my ($partial, $pdone) = decode_chunked("a\r\n0123");
    ok($partial eq '0123' && !$pdone, 'chunked: incomplete input is not done');

    ok(!eval { decode_chunked("zz\r\nabc\r\n"); 1 } && $@ =~ /bad chunk-size/,
       'chunked: malformed size line is an error');
    ok(!eval { decode_chunked("3\r\nabcXX"); 1 } && $@ =~ /missing CRLF/,
       'chunked: missing CRLF after data is an error');
}

{
    my $stream = "\xEF\xBB\xBF"                    # BOM is ignored
        . ": keepalive comment\n"
        . "id: 1\nevent: message\ndata: first\ndata:  two spaces\n\n"
        . "data\r\n\r\n"                            # field with no colon
        . "id: 2\rdata: cr-only\r\r"                # bare CR line endings
        . "retry: 1500\nretry: bogus\n: c2\ndata: x\n\n"
        . "id: 3\n\n"                               # priming event: id only
        . "unknown: field\n\n"                      # ignored entirely
        . "data: unterminated";                     # dropped at EOF
    my @ev = parse_sse($stream);
    is(scalar @ev, 5, 'sse: five events dispatched');
    is($ev[0]{data}, "first\n two spaces", 'sse: multi-line data joined, one space stripped');
    is_deeply([ @{ $ev[0] }{qw(id event type comments)} ], [ '1', 'message', 'message', 1 ],
              'sse: id/event/type and preceding comment count');
    is($ev[1]{data}, '', 'sse: "data" without colon is an empty data line');
    is($ev[1]{last_id}, '1', 'sse: last event id persists across events');
    ok(!defined $ev[1]{id}, 'sse: event without id field has id undef');
    is_deeply([ @{ $ev[2] }{qw(id data)} ], [ '2', 'cr-only' ], 'sse: CR line endings');
    is_deeply([ @{ $ev[3] }{qw(retry data comments)} ], [ 1500, 'x', 1 ],
              'sse: valid retry kept, invalid ignored, comment counted');
    ok($ev[4]{id} eq '3' && !defined $ev[4]{data}, 'sse: id-only priming event reported');

    # Byte-at-a-time feeding (CRLF split across reads) gives identical events.
    my $p = McpTest::SSEParser->new;
    my @ev2 = ((map { $p->feed($_) } split //, $stream), $p->finish);
    is_deeply(\@ev2, \@ev, 'sse: byte-at-a-time parsing matches whole-buffer parsing');
    is($p->comments, 2, 'sse: parser counts all comment lines');
}

{
    my $log = join "\n",
        '2025/01/01 00:00:00 [notice] 1#1: start worker processes',
        '2025/01/01 00:00:00 [error] 2#2: *1 open() "/x/nope" failed (2: No such file or directory)',
        '2025/01/01 00:00:00 [error] 2#2: *2 something unexpected',
        '2025/01/01 00:00:00 [alert] 1#1: worker process 2 exited on signal 11',
        '==123==ERROR: AddressSanitizer: heap-use-after-free on address 0x602000000010',
        '    #0 0x7f in ngx_http_mcp_handler src/x.c:10',
        '2025/01/01 00:00:01 [info] 2#2: *3 client closed connection',
        'src/x.c:20:5: runtime error: signed integer overflow',
        '';
    my @p = McpTest::log_problems_in($log, [ [ qr/open\(\) .* failed \(2:/, { error => 1 } ] ]);
    is(scalar @p, 4, 'log: expected [error] skipped; other error, alert and 2 sanitizer reports found');
    like($p[2], qr/heap-use-after-free.*\n.*ngx_http_mcp_handler/,
         'log: sanitizer report includes its stack trace');
    my @p2 = McpTest::log_problems_in($log, [ [ qr/exited on signal/, { error => 1 } ] ]);
    ok((grep { /exited on signal/ } @p2), 'log: an [error] expectation does not excuse [alert]');
}

{
    # LeakSanitizer reports: only records with a module or libcjson frame count.
    my $nginx_only = join "\n",
        'Indirect leak of 245760 byte(s) in 1 object(s) allocated from:',
        '    #0 0x7f82c96b89cf in __interceptor_malloc ../../../../src/libsanitizer/asan/asan_malloc_linux.cpp:69',
        '    #1 0x559b79a9fcfe in ngx_alloc (/usr/sbin/nginx+0x4ccfe)',
        '    #2 0x559b79a9ab68  (/usr/sbin/nginx+0x47b68)',
        '    #3 0x559b79aa3212 in ngx_spawn_process (/usr/sbin/nginx+0x50212)',
        '    #4 0x7f82c8e45249 in __libc_start_call_main ../sysdeps/nptl/libc_start_call_main.h:58',
        '';
    my $module_so = join "\n",
        'Direct leak of 64 byte(s) in 1 object(s) allocated from:',
        '    #0 0x7f82c96b89cf in __interceptor_malloc ../../../../src/libsanitizer/asan/asan_malloc_linux.cpp:69',
        '    #1 0x7f82c9000123  (/work/main/build/asan/ngx_http_mcp_module.so+0x1234)',
        '    #2 0x559b79aa3212 in ngx_http_core_content_phase (/usr/sbin/nginx+0x50212)',
        '';
    my $symbolized = join "\n",
        'Direct leak of 32 byte(s) in 1 object(s) allocated from:',
        '    #0 0x7f82c96b89cf in __interceptor_malloc ../../../../src/libsanitizer/asan/asan_malloc_linux.cpp:69',
        '    #1 0x7f82c9000456 in ngx_http_mcp_session_create /work/main/src/ngx_http_mcp_session.c:300',
        '';
    my $cjson = join "\n",
        'Indirect leak of 16 byte(s) in 1 object(s) allocated from:',
        '    #0 0x7f82c96b89cf in __interceptor_malloc ../../../../src/libsanitizer/asan/asan_malloc_linux.cpp:69',
        '    #1 0x7f82c9111111  (/lib/x86_64-linux-gnu/libcjson.so.1+0x3a11)',
        '    #2 0x559b79aa3212 in main (/usr/sbin/nginx+0x50212)',
        '';
    # nginx's PCRE2 compile context, made at a module's first
    # ngx_regex_compile() and kept by design
    my $pcre2_context = join "\n",
        'Direct leak of 72 byte(s) in 1 object(s) allocated from:',
        '    #0 0x7f2177eb89cf in __interceptor_malloc ../../../../src/libsanitizer/asan/asan_malloc_linux.cpp:69',
        '    #1 0x557e64f72cfe in ngx_alloc (/usr/sbin/nginx+0x4ccfe)',
        '    #2 0x7f217858bc6e  (/lib/x86_64-linux-gnu/libpcre2-8.so.0+0x11c6e)',
        '    #3 0x7f217858bd30 in pcre2_compile_context_create_8 (/lib/x86_64-linux-gnu/libpcre2-8.so.0+0x11d30)',
        '    #4 0x557e64f87922 in ngx_regex_compile (/usr/sbin/nginx+0x61922)',
        '    #5 0x7f2175837c6f in ngx_http_mcp_schema_match /work/main/src/ngx_http_mcp_schema.c:944',
        '';
    my $report = sub {
        join "\n", '==17208==ERROR: LeakSanitizer: detected memory leaks', '', @_,
            'SUMMARY: AddressSanitizer: 442368 byte(s) leaked in 3 allocation(s).', '';
    };
    my @p = McpTest::log_problems_in($report->($nginx_only, $nginx_only));
    is(scalar @p, 0, 'leak filter: leaks with only nginx/libc frames are ignored')
        or diag(explain \@p);
    @p = McpTest::log_problems_in($report->($nginx_only, $module_so, $nginx_only));
    is(scalar @p, 1, 'leak filter: a record with a frame in ngx_http_mcp_module.so counts');
    like($p[0] // '', qr/Direct leak of 64 byte.*ngx_http_mcp_module\.so/s,
         'leak filter: the problem shows that record and its frames');
    unlike($p[0] // '', qr/245760/, 'leak filter: ignored records are not part of it');
    @p = McpTest::log_problems_in($report->($symbolized));
    is(scalar @p, 1, 'leak filter: a symbolized module frame (function/source) counts');
    @p = McpTest::log_problems_in($report->($cjson));
    is(scalar @p, 1, 'leak filter: a record with a libcjson frame counts');
    @p = McpTest::log_problems_in($report->($pcre2_context));
    is(scalar @p, 0, 'leak filter: nginx\'s cached PCRE2 compile context is nginx\'s, whoever made it')
        or diag(explain \@p);
    # Interleaved with nginx log lines (several workers exiting at once).
    @p = McpTest::log_problems_in(join "\n",
        '2025/01/01 00:00:00 [notice] 1#1: exit', $report->($nginx_only),
        '2025/01/01 00:00:00 [notice] 1#1: signal 17 (SIGCHLD) received', $report->($cjson));
    is(scalar @p, 1, 'leak filter: several reports in one log are judged record by record');
    # Every other sanitizer report still fails, even next to ignored leaks.
    @p = McpTest::log_problems_in(join "\n", $report->($nginx_only),
        '==9==ERROR: AddressSanitizer: heap-buffer-overflow on address 0x6020',
        '    #0 0x7f in ngx_http_mcp_jsonrpc_parse src/ngx_http_mcp_jsonrpc.c:10',
        'SUMMARY: AddressSanitizer: heap-buffer-overflow src/x.c:10',
        'src/ngx_http_mcp_registry.c:5:3: runtime error: load of null pointer');
    is(scalar @p, 2, 'leak filter: AddressSanitizer errors and runtime errors always count');
    like($p[0] // '', qr/heap-buffer-overflow/, 'leak filter: ASan error reported');
    like($p[1] // '', qr/runtime error/, 'leak filter: UBSan runtime error reported');
    @p = McpTest::log_problems_in('==9==LeakSanitizer has encountered a fatal error.');
    is(scalar @p, 1, 'leak filter: a LeakSanitizer fatal error counts');

    is(McpTest::asan_options_for_preload(undef), 'fast_unwind_on_malloc=0',
       'ASAN_OPTIONS: slow malloc unwinding added when unset');
    is(McpTest::asan_options_for_preload('detect_leaks=1:log_path=/tmp/x'),
       'detect_leaks=1:log_path=/tmp/x:fast_unwind_on_malloc=0',
       'ASAN_OPTIONS: appended to the caller\'s options');
    is(McpTest::sanitizer_log_path('detect_leaks=1:log_path=:x=1', '/p/logs'),
       'detect_leaks=1:log_path=/p/logs/sanitizer:x=1',
       'ASAN_OPTIONS: an empty log_path goes to the prefix\'s logs/sanitizer');
    is(McpTest::sanitizer_log_path('log_path=stderr', '/p/logs'), 'log_path=stderr',
       'ASAN_OPTIONS: a log_path of the caller\'s own is kept');
    is(McpTest::asan_options_for_preload('detect_leaks=1:log_path='),
       'detect_leaks=1:fast_unwind_on_malloc=0',
       'ASAN_OPTIONS: an empty log_path= (reports to ./.<pid> files) is dropped');
    is(McpTest::asan_options_for_preload('detect_leaks=1:fast_unwind_on_malloc=1'),
       'detect_leaks=1:fast_unwind_on_malloc=1',
       'ASAN_OPTIONS: the caller\'s own fast_unwind_on_malloc is kept');
    {
        local $ENV{MCP_NGINX_PRELOAD} = '/nonexistent/libasan.so';
        local $ENV{ASAN_OPTIONS} = 'detect_leaks=1';
        is_deeply(McpTest::_child_env(),
                  { LD_PRELOAD => '/nonexistent/libasan.so',
                    ASAN_OPTIONS => 'detect_leaks=1:fast_unwind_on_malloc=0' },
                  'child env: preload and ASAN_OPTIONS with slow unwinding');
        local $ENV{MCP_NGINX_PRELOAD} = '';
        is_deeply(McpTest::_child_env(), {}, 'child env: nothing without MCP_NGINX_PRELOAD');
    }
}

{
    # A listener that never answers: the client must time out, not hang.
    my $l = IO::Socket::INET->new(LocalAddr => '127.0.0.1', LocalPort => 0,
                                  Listen => 5, Proto => 'tcp') or die $!;
    my $r = http_request(port => $l->sockport, path => '/', timeout => 1, quiet => 1);
    is($r->{status}, 0, 'client: no response gives status 0');
    like($r->{error}, qr/timeout/, 'client: error says timeout');
    ok($r->{elapsed} >= 0.9 && $r->{elapsed} < 3, 'client: timeout honoured (~1s)');
}

###########################################################################
# 2. Against a real nginx (no MCP module loaded)
###########################################################################

my $server = <<'NGX';
        location = /ok {
            default_type application/json;
            return 200 '{"ok":true}';
        }
        location = /conn {
            return 200 "$connection:$connection_requests";
        }
        location /static/ {
            root %%PREFIX%%/html;
        }
        # SSI drops Content-Length, so nginx answers with chunked coding.
        location = /chunked {
            default_type text/plain;
            ssi on; ssi_types *;
            alias %%PREFIX%%/html/ssi.txt;
        }
        location = /sse {
            default_type text/event-stream;
            ssi on; ssi_types *;
            alias %%PREFIX%%/html/events.txt;
        }
        # Minimal stand-ins for an MCP endpoint.
        location = /mcp {
            default_type application/json;
            add_header Mcp-Session-Id "sess-123" always;
            if ($http_mcp_session_id) {
                return 202;
            }
            return 200 '{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-06-18","capabilities":{},"serverInfo":{"name":"mock","version":"0"}}}';
        }
        # $request_body is only filled once a handler (here: proxy) reads it.
        location = /echo-headers {
            proxy_set_header X-Body $request_body;
            proxy_pass http://127.0.0.1:%%PORT2%%/echo;
        }
        location = /bigid {
            default_type application/json;
            return 200 '{"jsonrpc":"2.0","id":9007199254740993,"result":{"big":18446744073709551617}}';
        }
        location = /mcp-sse {
            default_type text/event-stream;
            return 200 'event: message\nid: 7\ndata: {"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":1}}\n\nevent: message\ndata: {"jsonrpc":"2.0","id":5,"result":{"v":1}}\n\n';
        }
        location = /mcp-err {
            default_type application/json;
            return 200 '{"jsonrpc":"2.0","id":6,"error":{"code":-32601,"message":"Method not found"}}';
        }
NGX

my $t = McpTest->new(
    module => 0,
    ports  => 2,
    http   => <<'NGX',
    server {
        listen 127.0.0.1:%%PORT2%%;
        location / { return 200 "second server"; }
        location = /echo {
            return 200 "$http_mcp_protocol_version|$http_mcp_session_id|$http_accept|$content_type|$http_x_body";
        }
    }
NGX
    server => $server,
);

my $big = join '', map { sprintf("line %06d %s\n", $_, 'x' x 50) } 1 .. 4000;
$t->write_file('html/static/big.txt', $big);
$t->write_file('html/ssi.txt', "before <!--# echo var=\"arg_x\" default=\"none\" --> after\n");
$t->write_file('html/events.txt',
    ": hello\n\nid: 1\nevent: greet\ndata: line one\ndata: line two\n\n"
  . "id: 2\ndata: {\"n\":2}\n\n: tail comment\n");

my ($rc, $out) = $t->nginx_t;
is($rc, 0, 'nginx -t accepts the generated config') or diag($out);
like(McpTest::_slurp($t->conf_file), qr/^(?!.*load_module)/s, 'module => 0 omits load_module');

$t->start;
my @workers = $t->worker_pids;
is(scalar @workers, 4, 'four worker processes by default');
isnt($t->port, $t->port(2), 'two distinct ports allocated');

my $r = $t->request(path => '/ok');
$t->status_is($r, 200, 'GET /ok');
is($r->{body}, '{"ok":true}', 'GET /ok body');
is($r->{headers}{'content-type'}, 'application/json', 'content-type header (lowercased name)');
is($r->{headers}{'content-length'}, 11, 'content-length header');
ok(!$r->{conn}, 'connection not kept without keepalive');

$r = $t->request(path => '/', port => $t->port(2));
is($r->{body}, 'second server', '%%PORT2%% server answers');

# Keep-alive: the second request reuses the first connection.
my $r1 = $t->request(path => '/conn', keepalive => 1);
ok($r1->{conn}, 'keepalive response hands back the connection');
my $r2 = $t->request(path => '/conn', conn => $r1->{conn});
my ($c1, $n1) = split /:/, $r1->{body};
my ($c2, $n2) = split /:/, $r2->{body};
ok($c1 == $c2 && $n1 == 1 && $n2 == 2, 'second request served on the same connection')
    or diag("r1=$r1->{body} r2=$r2->{body}");
close $r2->{conn} if $r2->{conn};

# Content-Length body, large.
$r = $t->request(path => '/static/big.txt');
ok($r->{status} == 200 && !$r->{chunked} && $r->{body} eq $big,
   'large static file via Content-Length');

# Real chunked response from nginx.
$r = $t->request(path => '/chunked?x=hello');
is($r->{headers}{'transfer-encoding'}, 'chunked', 'SSI response is chunked');
is($r->{body}, "before hello after\n", 'chunked body decoded');

# Real chunked SSE stream read incrementally.
my $s = $t->sse_open(path => '/sse');
is($s->status, 200, 'sse_open: status');
like($s->header('Content-Type'), qr{^text/event-stream}, 'sse_open: content type');
my $e1 = $s->next_event(5);
is_deeply([ @{$e1}{qw(id event data comments)} ], [ 1, 'greet', "line one\nline two", 1 ],
          'sse stream: first event');
my $e2 = $s->next_event(5);
is_deeply($e2->{json}, { n => 2 }, 'sse stream: JSON data decoded');
ok(!defined $s->next_event(5) && $s->is_done && !$s->{timed_out}, 'sse stream: end of stream');
is($s->comments, 2, 'sse stream: comments counted');

# 404 + error log discipline.
$r = $t->request(path => '/static/nope.txt');
is($r->{status}, 404, 'missing file gives 404');
my @problems = $t->wait_for_log(qr/open\(\).*nope\.txt/, 5) ? $t->log_problems : ();
ok((grep { /\[error\].*open\(\).*nope\.txt/ } @problems),
   'undeclared [error] line is reported as a problem');
$t->expect_log_error(qr/open\(\) ".*nope\.txt" failed \(2: No such file/);
is(scalar $t->log_problems, 0, 'declared [error] line is accepted');

# MCP helpers against the stand-in endpoint.
my ($sid, $init) = $t->mcp_initialize;
is($sid, 'sess-123', 'mcp_initialize: session id from header');
is($init->{serverInfo}{name}, 'mock', 'mcp_initialize: result returned');

$r = $t->mcp_post($sid, { jsonrpc => '2.0', id => 99, method => 'ping' }, path => '/echo-headers');
is($r->{body},
   '2025-06-18|sess-123|application/json, text/event-stream|application/json|'
   . '{"id":99,"jsonrpc":"2.0","method":"ping"}',
   'mcp_post: default headers (negotiated version) and canonical JSON body');
$r = $t->mcp_post(undef, 'raw{', path => '/echo-headers',
                  headers => { Accept => undef, 'mcp-protocol-version' => 'X' });
is($r->{body}, 'X|||application/json|raw{', 'mcp_post: raw body, header override and omission');

$r = $t->mcp_post($sid, { jsonrpc => '2.0', id => 1, method => 'x' }, path => '/bigid');
is("$r->{json}{id}", '9007199254740993', 'JSON: id beyond 2^53 survives');
is("$r->{json}{result}{big}", '18446744073709551617', 'JSON: integer beyond 2^64 survives');

my ($v, $msg, $http) = $t->mcp_call($sid, 'tools/call', {}, path => '/mcp-sse', id => 5);
is_deeply($v, { v => 1 }, 'mcp_call: result picked from SSE response by id');
is(scalar @{ $http->{events} }, 2, 'mcp_call: SSE events parsed (notification + response)');
is($http->{events}[0]{id}, '7', 'mcp_call: SSE event id');

$v = $t->mcp_call($sid, 'nope', undef, path => '/mcp-err', id => 6);
is($v->{code}, -32601, 'mcp_call: error object returned for JSON-RPC errors');

# Reload with a changed config: new worker generation serves it.
my %old = map { $_ => 1 } $t->worker_pids;
(my $server2 = $server) =~ s/\{"ok":true\}/{"ok":2}/;
ok($t->reload(server => $server2), 'reload succeeded');
my @new = $t->worker_pids;
ok(@new == 4 && !grep({ $old{$_} } @new), 'reload: entirely new worker generation');
is($t->request(path => '/ok')->{body}, '{"ok":2}', 'reload: new config served');

$t->check_log(name => 'explicit check_log passes');
$t->stop;    # asserts the error log once more
ok(!$t->is_running, 'nginx stopped');
ok(!IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $t->port, Timeout => 1),
   'port closed after stop');

###########################################################################
# 3. A broken config: nginx -t and start fail with useful output
###########################################################################

my $bad = McpTest->new(module => 0, server => 'bogus_directive on;');
($rc, $out) = $bad->nginx_t;
ok($rc != 0 && $out =~ /unknown directive "bogus_directive"/, 'nginx -t reports bad config');
# nginx_t fails the test on a sanitizer report or a crash of nginx -t,
# which a refusal's exit code (1 after an ASan report too) cannot show
{
    my $refusal = "nginx: [emerg] unknown directive \"x\" in /p/nginx.conf:3\n"
        . "nginx: configuration file /p/nginx.conf test failed\n";
    is_deeply([McpTest::nginx_t_problems(1, $refusal)], [],
              'nginx_t_problems: a plain refusal is not a problem');
    my @p = McpTest::nginx_t_problems(1, $refusal
        . "=================================================================\n"
        . "==4242==ERROR: AddressSanitizer: heap-use-after-free on address 0x6020\n"
        . "    #0 0x7f in ngx_http_mcp_conf_x ngx_http_mcp_conf.c:12\n");
    is(scalar @p, 1, 'nginx_t_problems: an ASan report after the [emerg] is one');
    @p = McpTest::nginx_t_problems(1, $refusal
        . "src/ngx_http_mcp_conf.c:40:7: runtime error: signed integer overflow\n");
    is(scalar @p, 1, 'nginx_t_problems: a UBSan report is one');
    @p = McpTest::nginx_t_problems(-1, $refusal);
    like("@p", qr/killed by a signal/, 'nginx_t_problems: nginx -t killed is one');
}
# a child's status once reaped (by is_running, or a test's own wait) is
# what the next wait gets, not a clean exit
{
    my $pid = fork // die "fork: $!";
    POSIX::_exit(3) unless $pid;
    my $st = McpTest::_wait_pid($pid, 5);
    is($st, 3 << 8, '_wait_pid: the exit status');
    is(McpTest::_wait_pid($pid, 5), 3 << 8, '_wait_pid: the same status again, not 0');
    McpTest::_forget_pid($pid);
    is(McpTest::_wait_pid($pid, 1), -1, '_wait_pid: a pid not ours: -1, not 0');
}
ok(!eval { $bad->start; 1 }, 'start dies on bad config');
like($@, qr/unknown directive "bogus_directive".*nginx\.conf:\d+/s,
     'start failure message carries nginx output');
ok(scalar($bad->log_problems) >= 1, '[emerg] from failed start is a problem');
$bad->expect_log_any(qr/unknown directive "bogus_directive"/);
$bad->check_log(name => 'expect_log_any excuses the declared [emerg]');

# The real module is not needed here, but a missing one must be explained.
{
    local $ENV{MCP_MODULE} = '/nonexistent/ngx_http_mcp_module.so';
    my $m = McpTest->new;
    ok(!eval { $m->start; 1 } && $@ =~ /module not found at \/nonexistent/,
       'missing module gives a clear error');
}

# The test sets' module (fixtures/) is loaded after the module, from
# beside it unless MCP_FIXTURES_MODULE or fixtures => PATH says otherwise.
{
    local $ENV{MCP_MODULE} = '/x/ngx_http_mcp_module.so';
    local $ENV{MCP_FIXTURES_MODULE};
    my $m = McpTest->new;
    is($m->fixtures_path, '/x/ngx_http_mcp_fixtures_module.so',
       'fixtures_path: beside the module by default');
    like(McpTest::_slurp($m->conf_file),
         qr{^load_module /x/ngx_http_mcp_module\.so;\nload_module /x/ngx_http_mcp_fixtures_module\.so;\n}m,
         'the fixtures module is loaded after the module');
    $ENV{MCP_FIXTURES_MODULE} = '/y/fx.so';
    is(McpTest->new->fixtures_path, '/y/fx.so', 'fixtures_path: MCP_FIXTURES_MODULE');
    is(McpTest->new(module => '/z/m.so')->fixtures_path, '/z/ngx_http_mcp_fixtures_module.so',
       'fixtures_path: beside a module given by path');
    my $n = McpTest->new(fixtures => 0);
    ok(!defined $n->fixtures_path, 'fixtures => 0: none');
    unlike(McpTest::_slurp($n->conf_file), qr/fixtures/, 'fixtures => 0: not loaded');
    $ENV{MCP_MODULE} = 'static';
    unlike(McpTest::_slurp(McpTest->new->conf_file), qr/load_module/,
           'MCP_MODULE=static: no load_module for either');
    $ENV{MCP_MODULE} = "$McpTest::REPO_ROOT/build/ngx_http_mcp_module.so";
    my $f = McpTest->new(fixtures => '/nonexistent/ngx_http_mcp_fixtures_module.so');
    ok(!eval { $f->start; 1 } && $@ =~ /test sets' module not found at \/nonexistent/,
       'a missing fixtures module gives a clear error');
}

done_testing;
