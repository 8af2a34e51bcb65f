# Guardrails' look at the raw text (issue #38's bench line): before a
# tools/call's arguments are walked, and instead of parsing a reply that
# only the guardrails read, the patterns run once over the JSON text
# itself; a text with no backslash (and, for a reply, nothing but
# printable ASCII, tab, CR, LF) that no pattern matches holds no value
# that matches, and a clean reply goes as it came, unparsed.  The edges
# of that look, through mcp_pass before an upstream forked here (a Perl
# server answering each case's crafted reply, in JSON or in SSE):
#
# - arguments: a match split by an escape (AKI\u0041...), in a key only,
#   in a key split by an escape, behind a duplicate key, and a body with
#   a backslash elsewhere (refused when it hides a match, relayed when
#   it is clean);
# - results, JSON and SSE: an e-mail address split by an escape
#   (alice@exa\u006dple.com), a tab spelt \t inside a match, a match
#   beside a backslash elsewhere, a duplicate "result" hiding an
#   address, a reply in UTF-16 (NUL bytes), one with UTF-8 text: each
#   is read value by value and redacted or refused; clean replies,
#   with or without a backslash, arrive with their values intact.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use McpTest;
use McpGateway;
use JSON::PP ();

my $V25 = '2025-11-25';
my $conf = "$McpTest::REPO_ROOT/conf";

sub own { my ($id, $content) = @_; qq({"jsonrpc":"2.0","id":$id,"result":{"content":[$content]}}) }
sub text { my ($s) = @_; qq({"type":"text","text":"$s"}) }

# case => sub($id): the reply's JSON text, as the upstream spells it
my %CASE = (
    'clean'        => sub { own($_[0], text('nothing to see here')) },
    'clean-bs'     => sub { own($_[0], text('two\nlines, a \"quote\"')) },
    'clean-utf8'   => sub { own($_[0], text("caf\xc3\xa9")) },
    'plain-mail'   => sub { own($_[0], text('write to alice@example.com')) },
    'split-mail'   => sub { own($_[0], text('write to alice@exa\u006dple.com')) },
    'split-tab'    => sub { own($_[0], text('one\ttwo')) },
    'bs-elsewhere' => sub { own($_[0], text('a\\\\b') . ',' . text('alice@example.com')) },
    'mail-in-key'  => sub { qq({"jsonrpc":"2.0","id":$_[0],"result":{"content":[],)
                            . qq("structuredContent":{"alice\@example.com":1}}}) },
    'dup-result'   => sub { qq({"jsonrpc":"2.0","id":$_[0],"result":{"content":[)
                            . text('ok') . qq(]},"result":{"content":[) . text('alice@example.com') . ']}}' },
    'utf16'        => sub { my $s = own($_[0], text('alice@example.com'));
                            join '', map { "$_\0" } split //, $s },
);

my $fake = guard_case_upstream('raw', sub {
    my ($id, $m, $case) = @_;
    return ($CASE{$case // ''} // $CASE{clean})->($id);
});

my $t = McpTest->new(
    http   => <<"NGX",
    mcp_session_zone zone=gw:1m;
    include $conf/guardrails-secrets.conf;
    mcp_guardrail_set email
        '[A-Za-z0-9._%+-]+\@[A-Za-z0-9-]+(\\.[A-Za-z0-9-]+)*\\.[A-Za-z]{2,}';
    mcp_guardrail_set tabs 'one\\ttwo';
NGX
    server => <<"NGX",
        mcp_session gw;
        location /g/ {
            mcp_pass http://127.0.0.1:$fake->{port};
            mcp_pass_guardrail secrets block arguments;
            mcp_pass_guardrail email redact results;
            mcp_pass_guardrail tabs redact results;
        }
NGX
);
$t->expect_log_error(qr/the upstream's reply to a filtered tools\/list is refused/,
                     qr/an event of the upstream's stream is refused, the stream is cut/);
$t->start;

my ($sid) = try_initialize($t, path => '/g/init', protocol_version => $V25);
ok($sid, 'a session through the guarded location');

my $id = 100;

sub post {
    my ($path, $args, %o) = @_;
    $id++;
    my $r = $t->mcp_post($sid, qq({"jsonrpc":"2.0","id":$id,"method":"tools/call","params":)
                               . qq({"name":"x","arguments":$args}}), path => $path, %o);
    return ($r->{messages}[0], $r);
}

# ---------------------------------------------------------------------------
# arguments
# ---------------------------------------------------------------------------

my ($m, $r);

($m) = post('/g/clean', '{"k":"ok","n":[1,true,null]}');
is($m->{result}{content}[0]{text}, 'nothing to see here', 'arguments: a clean call is relayed');

for my $case ([ 'split by an escape',         '{"k":"AKI\u0041ABCDEFGHIJKLMNOP"}' ],
              [ 'in a key alone',             '{"AKIAABCDEFGHIJKLMNOP":"ok"}' ],
              [ 'in a key split by an escape', '{"AK\u0049AABCDEFGHIJKLMNOP":"ok"}' ],
              [ 'behind a backslash elsewhere', '{"note":"a\tb","k":"AKIAABCDEFGHIJKLMNOP"}' ],
              [ 'split, a backslash elsewhere', '{"note":"x\\\\y","k":"AKIA\u0041BCDEFGHIJKLMNOP"}' ],
              [ 'deep in an array, escaped',   '{"l":[1,{"d":"id AKIAABCDEFGHIJKLMN\u004fP"}]}' ]) {
    ($m) = post('/g/clean', $case->[1]);
    is($m->{error}{code}, -32602, "arguments: an AWS key $case->[0] is refused");
    is($m->{id}, $id, '... with the request\'s id');
}

($m) = post('/g/clean', '{"k":"ok","k":"AKIAABCDEFGHIJKLMNOP"}');
ok($m && $m->{error} && !$m->{result}, 'arguments: a duplicate key hiding an AWS key is refused')
    or diag(explain($m));

($m) = post('/g/clean', '{"note":"two\nlines","path":"C:\\\\tmp"}');
is($m->{result}{content}[0]{text}, 'nothing to see here',
   'arguments: a clean call with backslashes in it is relayed');

# the arguments are read from the first "arguments" in the body on: one
# before the name, a tool named "arguments", one in _meta after them
for my $params ('{"arguments":{"k":"AKIAABCDEFGHIJKLMNOP"},"name":"x"}',
                '{"name":"arguments","arguments":{"k":"AKIAABCDEFGHIJKLMNOP"}}',
                '{"name":"x","arguments":{"k":"AKIAABCDEFGHIJKLMNOP"},"_meta":{"arguments":1}}') {
    $id++;
    my $rr = $t->mcp_post($sid, qq({"jsonrpc":"2.0","id":$id,"method":"tools/call","params":$params}),
                          path => '/g/clean');
    is($rr->{messages}[0]{error}{code}, -32602, "arguments: an AWS key in $params is refused");
}

# a match across two values is no match: the call goes on
($m) = post('/g/clean', '{"a":"AKIA","b":"ABCDEFGHIJKLMNOP"}');
ok($m->{result}, 'arguments: a key split over two values is not one');

# ---------------------------------------------------------------------------
# results, in JSON and in an SSE event
# ---------------------------------------------------------------------------

for my $sse ('', '/sse') {
    my $how = $sse ? 'SSE' : 'JSON';

    ($m, $r) = post("/g/clean$sse", '{}');
    is($m->{result}{content}[0]{text}, 'nothing to see here', "$how: a clean result arrives");
    is($r->{body}, $sse ? "event: message\ndata: " . $CASE{clean}->($id) . "\n\n" : $CASE{clean}->($id),
       '... byte for byte');

    ($m) = post("/g/clean-bs$sse", '{}');
    is($m->{result}{content}[0]{text}, "two\nlines, a \"quote\"", "$how: so does one with escapes");

    ($m) = post("/g/clean-utf8$sse", '{}');
    is($m->{result}{content}[0]{text}, "caf\x{e9}", "$how: and one with UTF-8 text");

    ($m, $r) = post("/g/plain-mail$sse", '{}');
    is($m->{result}{content}[0]{text}, 'write to [redacted:email]', "$how: an address is redacted");

    ($m, $r) = post("/g/split-mail$sse", '{}');
    is($m->{result}{content}[0]{text}, 'write to [redacted:email]',
       "$how: an address split by an escape (exa\\u006dple) is redacted");
    unlike($r->{body}, qr/alice/, '... nothing of it in the reply');

    ($m) = post("/g/split-tab$sse", '{}');
    is($m->{result}{content}[0]{text}, '[redacted:tabs]', "$how: a match holding a tab spelt \\t is redacted");

    ($m, $r) = post("/g/bs-elsewhere$sse", '{}');
    is($m->{result}{content}[1]{text}, '[redacted:email]',
       "$how: an address beside a backslash elsewhere is redacted");
    is($m->{result}{content}[0]{text}, 'a\\b', '... the other value intact');

    ($m, $r) = post("/g/mail-in-key$sse", '{}');
    is_deeply($m->{result}{structuredContent}, { 'alice@example.com' => 1 },
              "$how: a key of structuredContent is not a result's string (keys are read in arguments)");

    ($m, $r) = post("/g/dup-result$sse", '{}', quiet => 1);
    unlike($r->{body} // '', qr/alice/, "$how: a duplicate \"result\" hiding an address is not relayed");
    ok(!($m && $m->{result}), '... and gives no result');

    ($m, $r) = post("/g/utf16$sse", '{}', quiet => 1);
    unlike($r->{body} // '', qr/a\0l\0i\0c\0e/, "$how: a reply in UTF-16 is not relayed unread");
}

$t->stop;
done_testing;
