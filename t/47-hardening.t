# The built-in endpoint, attacked (issue #18): initialize without a
# clientInfo name or with a number for it (undefined behaviour in the
# session code before: memcpy from NULL under the zone lock; now an empty
# client name, as documented).

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use McpTest;
use McpAssert;

my $t = everything();

sub init {
    my (%params) = @_;
    return $t->mcp_post(undef, { jsonrpc => '2.0', id => 1, method => 'initialize',
        params => { protocolVersion => '2025-11-25', capabilities => {}, %params } });
}

# --- row 8: clientInfo without a usable name ---------------------------------------

for my $case ([ 'no clientInfo', {} ],
              [ 'clientInfo without name', { clientInfo => { version => '1' } } ],
              [ 'clientInfo.name a number', { clientInfo => { name => 5, version => '1' } } ],
              [ 'clientInfo.name null', { clientInfo => { name => undef, version => '1' } } ],
              [ 'clientInfo.name an object', { clientInfo => { name => { a => 1 }, version => '1' } } ],
              [ 'clientInfo.name empty', { clientInfo => { name => '', version => '1' } } ]) {
    my ($name, $params) = @$case;
    my $r = init(%$params);
    is($r->{status}, 200, "$name: 200");
    like($r->{headers}{'mcp-session-id'} // '', qr/^[0-9a-f]{32}$/, "$name: a session");
    my $sid = $r->{headers}{'mcp-session-id'} or next;
    my $p = $t->mcp_post($sid, { jsonrpc => '2.0', id => 2, method => 'ping' });
    is_result($p->{json}, {}, 2, "$name: the session serves");
}

{
    my $r = init(clientInfo => 'x');
    is_error($r->{json}, -32602, 1, 'clientInfo a string: invalid params');
    $r = init(clientInfo => { name => ('n' x 300), version => '1' });
    is($r->{status}, 200, 'a 300-byte client name: 200');
}

$t->check_log;
done_testing;
