# The gateway must decide from the message the upstream will read.  The
# upstream here is a real server on Python's json module (t/py), which
# keeps the LAST of two equal member names, where cJSON keeps the first:
# every body that the two could read differently is refused at the
# gateway, and the upstream's own log shows that it never arrived.  With
# "mcp_tools_deny delete_everything", that tool never runs.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use McpTest;
use McpAssert;
use McpGateway;
use JSON::PP ();

my $t = McpTest->new(
    ports  => 2,
    http   => 'mcp_session_zone zone=gw:1m;',
    server => <<'NGX',
        mcp_session gw;
        location = /mcp { mcp_pass http://127.0.0.1:%%PORT2%%/mcp;
                          mcp_tools_deny delete_everything; }
NGX
);

my ($py, $log) = start_python_upstream($t, 'lastkey_upstream', $t->port(2));
$t->start;

sub arrived {
    open my $f, '<', $log or return ();
    return map { JSON::PP->new->decode($_) } grep { /\S/ } <$f>;
}
sub ran { grep { ($_->{method} // '') eq 'tools/call' && ($_->{tool} // '') eq $_[0] } arrived() }

my ($sid) = try_initialize($t);
ok($sid, 'a session through the gateway');

# the policy holds for a plain request
{
    my $r = $t->mcp_post($sid, '{"jsonrpc":"2.0","id":2,"method":"tools/call",'
                             . '"params":{"name":"delete_everything","arguments":{}}}');
    is_error($r->{json}, -32602, 2, 'plain call of the denied tool: refused');
    my $ok = $t->mcp_post($sid, '{"jsonrpc":"2.0","id":3,"method":"tools/call",'
                              . '"params":{"name":"harmless","arguments":{}}}');
    is($ok->{json}{result}{content}[0]{text}, 'ran harmless', 'an allowed tool runs upstream');
}

# what the upstream would read differently
my @attacks = (
    [ 'two "name" members',
      '{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"harmless",'
      . '"name":"delete_everything","arguments":{}}}' ],
    [ 'two "method" members',
      '{"jsonrpc":"2.0","id":4,"method":"ping","method":"tools/call",'
      . '"params":{"name":"delete_everything","arguments":{}}}' ],
    [ 'two "params" members',
      '{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"harmless","arguments":{}},'
      . '"params":{"name":"delete_everything","arguments":{}}}' ],
    [ 'an escaped second "name"',
      '{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"harmless",'
      . '"na\u006de":"delete_everything","arguments":{}}}' ],
    [ 'an escaped second "method"',
      '{"jsonrpc":"2.0","id":7,"method":"ping","\u006d\u0065thod":"tools/call",'
      . '"params":{"name":"delete_everything","arguments":{}}}' ],
    [ 'an escaped first "name"',
      '{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"n\u0061me":"harmless",'
      . '"name":"delete_everything","arguments":{}}}' ],
    [ 'a batch with a duplicate in its second message',
      '[{"jsonrpc":"2.0","id":9,"method":"ping"},{"jsonrpc":"2.0","id":10,"method":"tools/call",'
      . '"params":{"name":"harmless","name":"delete_everything","arguments":{}}}]' ],
    [ '"\u0000" cutting the name short for cJSON',
      '{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"name":"harmless\u0000x",'
      . '"arguments":{}}}' ],
    [ 'a lone surrogate in the name',
      '{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":"delete_everything\ud800",'
      . '"arguments":{}}}' ],
    [ 'a raw control byte in the name',
      qq({"jsonrpc":"2.0","id":13,"method":"tools/call","params":{"name":"delete_everything\x01",)
      . '"arguments":{}}}' ],
    [ 'a number beyond a double in the arguments',
      '{"jsonrpc":"2.0","id":14,"method":"tools/call","params":{"name":"harmless",'
      . '"arguments":{"n":1e400}}}' ],
    [ 'a byte-order mark',
      "\xef\xbb\xbf" . '{"jsonrpc":"2.0","id":15,"method":"tools/call","params":{"name":"harmless",'
      . '"arguments":{}}}' ],
);

my $before = scalar arrived();

for my $a (@attacks) {
    my ($name, $body) = @$a;
    my $r = $t->mcp_post($sid, $body);
    is_rpc_error_body($r, 400, -32700, undef, "$name: refused at the gateway");
}

is(scalar arrived(), $before, 'none of the refused bodies reached the upstream');
is(scalar ran('delete_everything'), 0, 'delete_everything never ran upstream');

# and the session is intact
{
    my $r = $t->mcp_post($sid, '{"jsonrpc":"2.0","id":99,"method":"tools/call",'
                             . '"params":{"name":"harmless","arguments":{"x":"\u00e9"}}}');
    is($r->{json}{result}{content}[0]{text}, 'ran harmless', 'the session goes on');
    my @last = arrived();
    is_deeply($last[-1]{arguments}, { x => "\x{e9}" }, 'the arguments arrived as the gateway read them');
}

stop_process($py);
$t->check_log;
done_testing;
