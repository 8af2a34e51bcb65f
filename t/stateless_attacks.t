# Attacks on the 2026-07-28 header/body agreement and on what a client's
# bytes can write into error_log:
#
# - a JSON-RPC method, or a name an error's message repeats ("Unknown
#   tool: ..."), with CR LF in it wrote a line of the client's making
#   into error_log through the error's [info] line (sessions, stateless
#   requests, mcp_pass's upstream alike);
# - an Mcp-Name beside a method that has no name (tools/list) is never
#   compared with the body, yet gave $mcp_name before the body: a
#   server-level if decided on it, and the body's $mcp_name then said
#   something else;
# - what holds: Base64 payloads that decode to NUL or invalid UTF-8, an
#   empty one, white space inside the wrapper, a name encoded twice, the
#   header's name in another case, the header twice in two cases.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Time::HiRes ();
use MIME::Base64 ();
use McpTest;
use McpAssert;

my $t = McpTest->new(
    ports => 2,
    http  => <<'NGX',
    mcp_session_zone zone=gw:1m;
    mcp_session_zone zone=up:1m;

    log_format hdrs escape=json '{"rid":"$mcp_request_id","m":"$mcp_method","n":"$mcp_name",'
        '"en":"$early_n","route":"$route","status":"$status"}';

    server {
        listen 127.0.0.1:%%PORT2%%;
        location = /mcp { mcp on; mcp_session up; mcp_builtin everything; }
    }
NGX
    server => <<'NGX',
        mcp_session gw;
        access_log %%PREFIX%%/logs/hdrs.log hdrs;

        # deciding on the name before the body, as docs/directives.md shows (a
        # return, not a rewrite: a regular expression of the server's
        # makes LeakSanitizer report nginx's own pcre2 context at exit)
        set $early_n $mcp_name;
        set $route "-";
        if ($mcp_name = "blocked_tool") {
            return 418;
        }

        location = /mcp { mcp on; mcp_builtin everything; }
        location = /gw { mcp_pass http://127.0.0.1:%%PORT2%%/mcp;
                         mcp_tools_deny test_simple_text; }
NGX
)->start;

my $META = { 'io.modelcontextprotocol/protocolVersion'    => '2026-07-28',
             'io.modelcontextprotocol/clientCapabilities' => {} };
my $FORGED = qr/^\S+ \S+ \[emerg\] 1#1: forged/m;

sub b64 { '=?base64?' . MIME::Base64::encode_base64($_[0], '') . '?=' }

# one stateless request; headers as given (an array keeps their order)
sub post26 {
    my (%o) = @_;
    my $params = { %{ $o{params} // {} }, _meta => $META };
    my $body = McpTest::encode_json({ jsonrpc => '2.0', id => $o{id}, method => $o{method},
                                      params => $params });
    my $r = $t->request(method => 'POST', path => $o{path} // '/mcp', body => $body,
                        headers => [ 'Content-Type' => 'application/json',
                                     'Accept' => 'application/json, text/event-stream',
                                     'MCP-Protocol-Version' => '2026-07-28',
                                     @{ $o{headers} // [] } ]);
    McpTest::decode_mcp_response($r);
    my ($msg) = grep { ref $_ eq 'HASH' && defined $_->{id} && "$_->{id}" eq "$o{id}" }
                @{ $r->{messages} // [] };
    return wantarray ? ($msg, $r) : $msg;
}

sub hdrs_line {
    my ($rid) = @_;
    my $line;
    McpTest::wait_until(3, sub {
        ($line) = grep { index($_, "\"rid\":\"$rid\"") >= 0 }
                  split /\n/, (McpTest::_slurp($t->prefix . '/logs/hdrs.log') // '');
        $line;
    });
    return $line ? JSON::PP->new->decode($line) : {};
}

sub call_simple {
    my ($path, $id, $name_header, @more) = @_;
    return post26(path => $path, id => $id, method => 'tools/call',
                  params => { name => 'test_simple_text', arguments => {} },
                  headers => [ 'Mcp-Method' => 'tools/call', 'Mcp-Name' => $name_header, @more ]);
}

# --- error_log: a client's CR LF in a method or an error's message ------------

# the escaped forms of the lines below, at [info]
$t->expect_log_any(qr/\[info\] .*(?:method "x%(?:0D%0A2026|22)|Unknown tool: x%0D%0A2026)/);

for my $path ('/mcp', '/gw') {
    my $forge = "x\r\n2026/01/01 00:00:00 [emerg] 1#1: forged";

    my $mark = $t->log_mark;
    my ($sid) = $t->mcp_initialize(path => $path);
    my (undef, $r) = $t->mcp_request($sid, $forge, undef, id => "m1$path", path => $path);
    is_rpc_error_body($r, 200, -32601, "m1$path", "$path: a session's unknown method with CR LF: -32601");
    ok($t->wait_for_log(qr/Method not found .*method "x%0D%0A2026\/01\/01 00:00:00 \[emerg\] 1#1: forged"/, 5, $mark),
       "$path: ... logged on one line, CR LF %-escaped");
    unlike($t->log_since($mark), $FORGED, "$path: ... no line of the client's making in error_log");

    # a quote would end the line's quoted field and begin fields of its own
    $mark = $t->log_mark;
    (undef, $r) = $t->mcp_request($sid, 'x", client: 203.0.113.9, forged: "', undef,
                                  id => "mq$path", path => $path);
    is_rpc_error_body($r, 200, -32601, "mq$path", "$path: a session's unknown method with quotes: -32601");
    ok($t->wait_for_log(qr/method "x%22, client: 203\.0\.113\.9, forged: %22"/, 5, $mark),
       "$path: ... its quotes %-escaped, inside the line's one quoted field");
    unlike($t->log_since($mark), qr/method "x", client: 203/, "$path: ... no field of the client's making");

    $mark = $t->log_mark;
    (undef, $r) = $t->mcp_request($sid, 'tools/call', { name => $forge, arguments => {} },
                                  id => "m2$path", path => $path);
    ok($r->{status} == 200 && ($r->{body} // '') =~ /Unknown tool/,
       "$path: a session's call of an unknown tool named with CR LF: Unknown tool")
        or diag(McpTest::explain_response($r));
    ok($t->wait_for_log(qr/Unknown tool: x%0D%0A2026\/01\/01 00:00:00 \[emerg\] 1#1: forged/, 5, $mark),
       "$path: ... logged on one line, CR LF %-escaped");
    unlike($t->log_since($mark), $FORGED, "$path: ... no line of the client's making in error_log");
    $t->mcp_delete($sid, path => $path);

    # stateless: Mcp-Name in Base64 carries the CR LF the body's name has
    $mark = $t->log_mark;
    my $msg;
    ($msg, $r) = post26(path => $path, id => "m3$path", method => 'tools/call',
                        params => { name => $forge, arguments => {} },
                        headers => [ 'Mcp-Method' => 'tools/call', 'Mcp-Name' => b64($forge) ]);
    like(($msg // {})->{error}{message} // '', qr/Unknown tool/,
         "$path: a stateless call of an unknown tool named with CR LF: Unknown tool");
    Time::HiRes::sleep(0.3);
    unlike($t->log_since($mark), $FORGED, "$path: ... no line of the client's making in error_log");
}

# --- $mcp_name before the body: only beside a method that has a name ---------

{
    my ($msg, $r) = post26(id => 'n1', method => 'tools/list',
                           headers => [ 'Mcp-Method' => 'tools/list', 'Mcp-Name' => 'blocked_tool' ]);
    ok($r->{status} == 200 && ref(($msg // {})->{result}) eq 'HASH',
       'tools/list with an Mcp-Name: not stopped by the server\'s if on $mcp_name, served')
        or diag(McpTest::explain_response($r));
    my $l = hdrs_line('n1');
    is_deeply([ @$l{qw(en n)} ], [ '', '' ],
              '... $mcp_name gives no value before the body, as after it');

    ($msg, $r) = post26(id => 'n2', method => 'tools/call',
                        params => { name => 'blocked_tool', arguments => {} },
                        headers => [ 'Mcp-Method' => 'tools/call', 'Mcp-Name' => 'blocked_tool' ]);
    is($r->{status}, 418, 'a tools/call is still stopped on its Mcp-Name, before its body is read');

    ($msg, $r) = post26(id => 'n3', method => 'tools/call',
                        params => { name => 'blocked_tool', arguments => {} },
                        headers => [ 'Mcp-Method' => 'tools/call', 'Mcp-Method' => 'tools/call',
                                     'Mcp-Name' => 'blocked_tool' ]);
    is_rpc_error_body($r, 400, -32020, 'n3', 'Mcp-Method twice: refused (by the location)');
    is(hdrs_line('n3')->{en}, '', '... and no $mcp_name before the body either');
}

# --- Base64 edge cases: refused built in; denied by the policy at /gw -------

for my $path ('/mcp', '/gw') {
    my $enc = MIME::Base64::encode_base64('test_simple_text', '');
    my @cases = (
        [ 'a NUL after the name', b64("test_simple_text\0"), qr/name or URI/ ],
        [ 'invalid UTF-8 after the name', b64("test_simple_text\xff"), qr/name or URI/ ],
        [ 'an empty payload', '=?base64??=', qr/name or URI/ ],
        [ 'a space inside the wrapper', "=?base64? $enc?=", qr/not valid Base64/ ],
        [ 'a tab inside the wrapper', "=?base64?$enc\t?=", qr/not valid Base64/ ],
        [ 'the name encoded twice', b64(b64('test_simple_text')), qr/name or URI/ ],
        # (obs-fold: nginx's header parser refuses it, before the module)
        [ 'a line folded into the payload', "=?base64?" . substr($enc, 0, 8) . "\r\n " . substr($enc, 8) . "?=",
          undef ],
    );
    for my $k (0 .. $#cases) {
        my ($what, $v, $why) = @{ $cases[$k] };
        my ($msg, $r) = call_simple($path, "b$k$path", $v);
        if (!defined $why) {
            ok($r->{status} == 400 && !defined $msg && ($r->{body} // '') !~ /jsonrpc/,
               "$path: Mcp-Name $what: nginx's 400, before the module")
                or diag(McpTest::explain_response($r));
        }
        elsif ($path eq '/gw') {
            # denied by the gateway's policy whatever the header says
            is_error($msg, -32602, "b$k$path", "$path: Mcp-Name $what: refused by the policy");
            is($r->{status}, 200, "$path: Mcp-Name $what: ... in a 200");
        }
        else {
            is_rpc_error_body($r, 400, -32020, "b$k$path", "$path: Mcp-Name $what: refused");
            like((($msg // {})->{error} // {})->{message} // '', $why, "$path: Mcp-Name $what: ... saying why");
        }
    }
}

# the header's name in any case counts; two in different cases are two
{
    my ($msg, $r) = post26(id => 'c1', method => 'tools/call',
                           params => { name => 'test_simple_text', arguments => {} },
                           headers => [ 'MCP-METHOD' => 'tools/call', 'mCp-NaMe' => 'test_simple_text' ]);
    ok($r->{status} == 200 && ref(($msg // {})->{result}) eq 'HASH', 'Mcp-Name and Mcp-Method in other cases: read');
    ($msg, $r) = call_simple('/mcp', 'c2', 'test_simple_text', 'MCP-NAME' => 'test_simple_text');
    is_rpc_error_body($r, 400, -32020, 'c2', 'Mcp-Name twice in two cases: refused');
    ($msg, $r) = call_simple('/gw', 'c3', 'test_simple_text', 'MCP-NAME' => 'other');
    ok($r->{status} >= 200, '/gw: Mcp-Name twice in two cases: answered');
    isnt(ref(($msg // {})->{result}), 'HASH', '... and not served');
}

$t->stop;
done_testing;
