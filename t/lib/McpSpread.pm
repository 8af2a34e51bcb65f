package McpSpread;

# 2026-07-28 (stateless) requests spread over the four workers of a test
# nginx, for the tests of what one worker makes and another serves
# (t/tasks.t, t/aggregate_tasks_2026.t).  The instance's port 2 listens
# with reuseport and logs '$pid $http_x_seq' to logs/spread.log (the
# log_format "spread"); each request carries X-Seq, so the log says
# which worker served it, and keepalive connections pinned to known
# workers make the cross-worker steps deterministic.  Core Perl only.

use strict;
use MIME::Base64 ();
use warnings;

use Exporter 'import';
use Time::HiRes ();
use McpTest ();

our @EXPORT = qw(spread_rpc spread_served_by spread_conns);

# the client's capabilities unless a request says otherwise: the tasks
# extension and elicitation
our $EXT = { extensions => { 'io.modelcontextprotocol/tasks' => {} }, elicitation => {} };

my $seq = 0;

# One 2026-07-28 request to port 2 of $t, with the headers that must say
# what its body says; options: caps, client (X-Client, default alice),
# path (default /mcp), conn (a kept connection).  Returns (message,
# response, seq).
sub spread_rpc {
    my ($t, $method, $params, %o) = @_;
    my $id = ++$seq;
    my %p = (%{ $params // {} },
             _meta => { 'io.modelcontextprotocol/protocolVersion' => '2026-07-28',
                        'io.modelcontextprotocol/clientCapabilities' => $o{caps} // $EXT });
    my %h = ('MCP-Protocol-Version' => '2026-07-28', 'Mcp-Method' => $method,
             'X-Client' => $o{client} // 'alice', 'X-Seq' => $id);
    my $name = $method eq 'tools/call' ? $params->{name} : $params->{taskId};
    # a name a header cannot carry as it is goes in the Base64 wrapper
    $name = '=?base64?' . MIME::Base64::encode_base64($name, '') . '?='
        if defined $name && ($name =~ /[^\x20-\x7e]|^ | $|^=\?/);
    $h{'Mcp-Name'} = $name if $method =~ m{^(tools/call|tasks/(get|update|cancel))$};
    my $r = $t->mcp_post(undef, { jsonrpc => '2.0', id => $id, method => $method, params => \%p },
                         headers => \%h, port => $t->port(2), path => $o{path} // '/mcp',
                         ($o{conn} ? (conn => $o{conn}, keepalive => 1) : ()));
    return ($r->{json}, $r, $id);
}

# the worker (its pid) that served request $id, 0 if none within 5 s
sub spread_served_by {
    my ($t, $id) = @_;
    my $deadline = Time::HiRes::time() + 5;
    while (Time::HiRes::time() < $deadline) {
        for (split /\n/, McpTest::_slurp($t->prefix . '/logs/spread.log') // '') {
            return $1 if /^(\d+) \Q$id\E$/;
        }
        Time::HiRes::sleep(0.05);
    }
    return 0;
}

# Keepalive connections, one a worker, found with server/discover:
# ({ pid => connection }, the first discover's message).
sub spread_conns {
    my ($t) = @_;
    my (%conn, $first);
    for (1 .. 60) {
        last if keys %conn == 4;
        my $c = $t->connect(port => $t->port(2)) or next;
        my ($msg, $r, $id) = spread_rpc($t, 'server/discover', {}, conn => $c);
        next unless $r->{status} == 200;
        $first //= $msg;
        my $pid = spread_served_by($t, $id);
        $conn{$pid} //= $c if $pid;
    }
    return (\%conn, $first);
}

1;
