# Prompts from files (mcp_prompt NAME FILE { description; argument ...; }):
# the listing, {{argument}} substitution (spaces allowed, values never
# expanded again, unknown placeholders left as they are and warned about
# by nginx -t), required arguments (-32602 when missing or not a string),
# optional ones empty, completion from values=, next to mcp_builtin
# everything's own completion, a reload that re-reads the file, a
# 2026-07-28 stateless prompts/get, and "nginx -t" errors.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use McpTest;
use McpAssert;

my $t = McpTest->new(
    server => <<'CONF',
location = /mcp {
    mcp on;
    mcp_prompt review %%PREFIX%%/conf/review.md {
        description "Review a change";
        argument    code required "The code to review";
        argument    style "House style" values=nginx,kernel,gnu,google;
    }
    mcp_prompt plain %%PREFIX%%/conf/plain.txt { }
    mcp_prompt "two words" %%PREFIX%%/conf/plain.txt {
        argument extra;
    }
}
location = /both {
    mcp on;
    mcp_prompt review %%PREFIX%%/conf/review.md {
        argument code required;
        argument style values=nginx,kernel;
    }
    mcp_builtin everything;
}
CONF
);

$t->write_file('conf/review.md',
    "Review this code in {{ style }} style:\n\n{{code}}\n\nKeep {{unknown}} and {{ code } as they are.\n");
$t->write_file('conf/plain.txt', "No arguments, caf\x{c3}\x{a9}.\n");

{
    my ($rc, $out) = $t->nginx_t;
    is($rc, 0, 'nginx -t') or diag($out);
    like($out, qr/\[warn\].*prompt "review": "\{\{unknown\}\}" is no declared argument/,
         'nginx -t warns about an undeclared {{unknown}}');
}

$t->start;
my ($sid) = $t->mcp_initialize;

sub req {
    my ($method, $params, %o) = @_;
    my $s = delete $o{sid} // $sid;
    my ($msg) = $t->mcp_request($s, $method, $params, id => 'p', %o);
    return $msg;
}

sub get { req('prompts/get', { name => $_[0], (defined $_[1] ? (arguments => $_[1]) : ()) }, @_[2 .. $#_]) }

is_result(req('prompts/list'), { prompts => [
    { name => 'review', description => 'Review a change', arguments => [
        { name => 'code', description => 'The code to review', required => JSON::PP::true },
        { name => 'style', description => 'House style', required => JSON::PP::false } ] },
    { name => 'plain', arguments => [] },
    { name => 'two words', arguments => [ { name => 'extra', required => JSON::PP::false } ] },
] }, 'p', 'prompts/list: names, descriptions, arguments in order');

is_result(get('review', { code => 'int x;', style => 'nginx' }), {
    description => 'Review a change',
    messages => [ { role => 'user', content => { type => 'text', text =>
        "Review this code in nginx style:\n\nint x;\n\nKeep {{unknown}} and {{ code } as they are.\n" } } ],
}, 'p', 'prompts/get: both arguments substituted, the rest as it is');

is(get('review', { code => 'x' })->{result}{messages}[0]{content}{text},
   "Review this code in  style:\n\nx\n\nKeep {{unknown}} and {{ code } as they are.\n",
   'an optional argument not given: empty');

is(get('review', { code => '{{style}} {{code}}', style => '{{code}}' })->{result}{messages}[0]{content}{text},
   "Review this code in {{code}} style:\n\n{{style}} {{code}}\n\nKeep {{unknown}} and {{ code } as they are.\n",
   'values that hold placeholders are not expanded again');

is(get('review', { code => 'x', other => 'ignored' })->{result}{messages}[0]{content}{text} =~ /ignored/ ? 1 : 0, 0,
   'an undeclared argument is ignored');

{
    my $big = 'y' x 100_000;
    my $text = get('review', { code => $big })->{result}{messages}[0]{content}{text} // '';
    ok(index($text, $big) >= 0, 'a 100 kB value is substituted whole');
}

{
    my $msg = get('review', {});
    is_error($msg, -32602, 'p', 'a required argument missing: -32602');
    like($msg->{error}{message} // '', qr/missing required argument "code"/, '... naming it');
    is_error(get('review'), -32602, 'p', 'no arguments at all: -32602');
    $msg = get('review', { code => 42 });
    is_error($msg, -32602, 'p', 'a number for a string argument: -32602');
    like($msg->{error}{message} // '', qr/"code".*string/, '... naming it');
}

is_result(get('plain'), { messages => [ { role => 'user', content => { type => 'text',
          text => "No arguments, caf\x{e9}.\n" } } ] }, 'p',
          'a prompt without arguments nor description: the file\'s text, UTF-8');
is(get('two words', {})->{result}{messages}[0]{content}{text}, "No arguments, caf\x{e9}.\n",
   'a prompt name with a space');
is_error(get('nope', {}), -32602, 'p', 'an unknown prompt: -32602');

# --- completion -----------------------------------------------------------------------

sub complete {
    my ($name, $arg, $value, %o) = @_;
    return req('completion/complete', { ref => { type => 'ref/prompt', name => $name },
                                        argument => { name => $arg, value => $value } }, %o);
}

is_result(complete('review', 'style', 'g'),
          { completion => { values => [ 'gnu', 'google' ], total => 2, hasMore => JSON::PP::false } },
          'p', 'completion of style from values=: the ones that begin with "g"');
is_result(complete('review', 'style', ''),
          { completion => { values => [ qw(nginx kernel gnu google) ], total => 4, hasMore => JSON::PP::false } },
          'p', 'an empty value: all of them, in order');
is_result(complete('review', 'code', 'x'),
          { completion => { values => [], total => 0, hasMore => JSON::PP::false } },
          'p', 'an argument without values=: none');
is_result(complete('review', 'nope', ''),
          { completion => { values => [], total => 0, hasMore => JSON::PP::false } },
          'p', 'an unknown argument: none');
is_error(complete('nope', 'style', ''), -32602, 'p', 'an unknown prompt: -32602');

{
    # with mcp_builtin everything at the same level: both sets complete
    my ($s) = $t->mcp_initialize(path => '/both');
    is_deeply(complete('review', 'style', 'k', sid => $s, path => '/both')->{result}{completion}{values},
              [ 'kernel' ], 'next to mcp_builtin everything: our prompt completes');
    my $c = complete('test_prompt_with_arguments', 'arg1', '', sid => $s, path => '/both');
    ok(ref $c->{result}{completion}{values} eq 'ARRAY', '... and everything\'s prompt still does')
        or diag(explain $c);
    ok(get('test_simple_prompt', {}, sid => $s, path => '/both')->{result}{messages},
       '... and everything\'s prompts are served');
}

# --- a reload reads the file again ---------------------------------------------------------

$t->write_file('conf/plain.txt', "Reloaded.\n");
$t->reload;
{
    my ($s) = $t->mcp_initialize;
    is(get('plain', undef, sid => $s)->{result}{messages}[0]{content}{text}, "Reloaded.\n",
       'after a reload: the file as it is now');
}

# --- 2026-07-28 stateless ---------------------------------------------------------------

{
    my $r = $t->mcp_post(undef, {
        jsonrpc => '2.0', id => 's1', method => 'prompts/get',
        params => { name => 'review', arguments => { code => 'int y;' },
                    _meta => { 'io.modelcontextprotocol/protocolVersion' => '2026-07-28',
                               'io.modelcontextprotocol/clientInfo' => { name => 'x', version => '1' },
                               'io.modelcontextprotocol/clientCapabilities' => {} } },
    }, headers => { 'MCP-Protocol-Version' => '2026-07-28', 'Mcp-Method' => 'prompts/get',
                    'Mcp-Name' => 'review' }, protocol_version => undef, quiet => 1);
    my ($msg) = grep { ref $_ eq 'HASH' && ($_->{id} // '') eq 's1' } @{ $r->{messages} // [] };
    like($msg->{result}{messages}[0]{content}{text} // '', qr/\n\nint y;\n\n/,
         '2026-07-28 stateless prompts/get') or diag(McpTest::explain_response($r));
}

$t->stop;

# --- nginx -t errors -----------------------------------------------------------------------

my $p = $t->prefix;
$t->write_file('conf/latin1.txt', "caf\xe9\n");
$t->write_file('conf/huge.txt', 'z' x (256 * 1024 + 1));
mkdir "$p/conf/adir";

for my $case (
    [ "mcp_prompt a $p/conf/missing.md { }",                   qr/missing\.md.*failed/,          'a missing prompt file' ],
    [ "mcp_prompt a $p/conf/adir { }",                         qr/is not a regular file/,        'a directory' ],
    [ "mcp_prompt a $p/conf/latin1.txt { }",                   qr/is not UTF-8 text/,            'a file that is no UTF-8' ],
    [ "mcp_prompt a $p/conf/huge.txt { }",                     qr/larger than 262144 bytes/,     'a file over 256k' ],
    [ "mcp_prompt a $p/conf/plain.txt { color red; }",      qr/unknown directive "color" in mcp_prompt/, 'an unknown directive' ],
    [ "mcp_prompt a $p/conf/plain.txt { argument; }",       qr/needs a name/,                 'argument without a name' ],
    [ "mcp_prompt a $p/conf/plain.txt { argument a.b; }",   qr/invalid argument name "a\.b"/, 'a bad argument name' ],
    [ "mcp_prompt a $p/conf/plain.txt { argument a; argument a; }", qr/duplicate argument "a"/, 'an argument twice' ],
    [ "mcp_prompt a $p/conf/plain.txt { argument a x y; }", qr/invalid parameter "y"/,        'two descriptions' ],
    [ "mcp_prompt a $p/conf/plain.txt { argument a values=x,,y; }", qr/empty value/,           'an empty value' ],
    [ "mcp_prompt a $p/conf/plain.txt { description a; description b; }", qr/is duplicate/,    'description twice' ],
    [ "mcp_prompt a $p/conf/plain.txt { } mcp_prompt a $p/conf/plain.txt { }", qr/duplicate MCP prompt "a"/, 'a prompt twice' ],
    [ "mcp_prompt \"\" $p/conf/plain.txt { }",                 qr/invalid prompt name ""/,       'an empty name' ],
) {
    my ($conf, $re, $what) = @$case;
    conf_refused("location = /mcp { mcp on; $conf }", $re, $what);
}

done_testing;
