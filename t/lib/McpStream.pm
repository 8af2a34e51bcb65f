package McpStream;

# Helpers shared by the streaming tests (t/stream_*.t, t/requests*.t and
# others) on top of
# McpTest: an instance whose workers can be told apart, tool calls whose
# reply is an SSE stream, events with their arrival times, answers to the
# server's requests.  Core Perl only.  See the POD at the end.

use strict;
use warnings;

use Exporter 'import';
use Scalar::Util ();
use Test::More ();
use Time::HiRes ();
use IO::Socket::INET ();
use McpTest ();

our @EXPORT = qw(streaming_server call_msg call_stream take take_all rpc_of
                 id_parts priming_ok ended_ok answer sampling_answer
                 pids_by_tag worker_of pinned_conns conn_on quiet_for next_request
                 until_response post_unread);

# A started instance serving the Everything set at /mcp, with
#   - listen ... reuseport: every worker has its own listening socket and
#     the kernel spreads fresh connections over them, so a test that opens
#     fresh connections reaches several workers;
#   - logs/pids.log: "$pid <X-Tag request header> $request $status" for
#     every request (written when the request ends: a stream's line comes
#     once the stream is over);
#   - an X-Worker: $pid response header, known as soon as the headers are.
# Options: location (more directives in location = /mcp), http, server,
# plus McpTest->new options.
sub streaming_server {
    my (%o) = @_;
    my $loc    = delete $o{location} // '';
    my $http   = delete $o{http} // '';
    my $server = delete $o{server} // '';
    return McpTest->new(
        listen => 'reuseport',
        http   => "log_format mcp_pids '\$pid \$http_x_tag \$request \$status';\n$http",
        server => "access_log %%PREFIX%%/logs/pids.log mcp_pids;\n$server\n"
                . "location = /mcp { mcp on; mcp_builtin everything;"
                . " add_header X-Worker \$pid always; $loc }",
        %o,
    )->start;
}

# {"jsonrpc":"2.0","id":$id,"method":"tools/call","params":{...}}.
# Options: token (params._meta.progressToken).
sub call_msg {
    my ($id, $name, $args, %o) = @_;
    my %params = (name => $name, arguments => $args // {});
    $params{_meta} = { progressToken => $o{token} } if exists $o{token};
    return { jsonrpc => '2.0', id => $id, method => 'tools/call', params => \%params };
}

# POST a tools/call on a fresh connection; returns the McpTest::SSE once
# the response headers are in.  Options: token, tag (X-Tag header), plus
# mcp_post options (headers, port, timeout...).
sub call_stream {
    my ($t, $sid, $id, $name, $args, %o) = @_;
    my %co;
    $co{token} = delete $o{token} if exists $o{token};
    my $tag = delete $o{tag};
    my %h = (%{ delete $o{headers} // {} }, (defined $tag ? ('X-Tag' => $tag) : ()));
    return $t->mcp_post($sid, call_msg($id, $name, $args, %co), stream => 1, headers => \%h, %o);
}

# Next event with its arrival time ($ev->{at}), or undef (timeout / end).
sub take {
    my ($s, $timeout) = @_;
    my $ev = $s->next_event($timeout // 5);
    $ev->{at} = Time::HiRes::time() if $ev;
    return $ev;
}

# Events until the stream ends or $timeout (total) passes.
sub take_all {
    my ($s, $timeout) = @_;
    my $deadline = Time::HiRes::time() + ($timeout // 5);
    my @ev;
    while (1) {
        my $left = $deadline - Time::HiRes::time();
        last if $left <= 0;
        my $ev = take($s, $left) // last;
        push @ev, $ev;
    }
    return @ev;
}

# The next JSON-RPC request (a message with a method and an id) on
# stream $s within $timeout (5 s), or undef; other events are passed over.
sub next_request {
    my ($s, $timeout) = @_;
    my $deadline = Time::HiRes::time() + ($timeout // 5);
    while ((my $left = $deadline - Time::HiRes::time()) > 0) {
        my $ev = take($s, $left) // return undef;
        my $m = $ev->{json};
        return $m if ref $m eq 'HASH' && defined $m->{method} && defined $m->{id};
    }
    return undef;
}

# The JSON-RPC messages on stream $s up to the response with id $id, that
# one last, or those that came within $timeout (10 s) without it.
sub until_response {
    my ($s, $id, $timeout) = @_;
    my @msgs;
    my $deadline = Time::HiRes::time() + ($timeout // 10);
    while ((my $left = $deadline - Time::HiRes::time()) > 0) {
        my $ev = take($s, $left) // last;
        next unless ref $ev->{json} eq 'HASH';
        push @msgs, $ev->{json};
        last if defined $ev->{json}{id} && "$ev->{json}{id}" eq "$id"
                && (exists $ev->{json}{result} || exists $ev->{json}{error});
    }
    return @msgs;
}

# A POST of $msg on a connection of its own (Connection: close), sent and
# not read: the socket, or undef.  Options: path (/mcp), protocol_version
# (2025-11-25).
sub post_unread {
    my ($t, $sid, $msg, %o) = @_;
    my $body = McpTest::encode_json($msg);
    my $c = IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $t->port,
                                  Proto => 'tcp', Timeout => 5) or return undef;
    print {$c} "POST " . ($o{path} // '/mcp') . " HTTP/1.1\r\nHost: 127.0.0.1\r\n"
             . "Content-Type: application/json\r\n"
             . "Accept: application/json, text/event-stream\r\n"
             . "MCP-Protocol-Version: " . ($o{protocol_version} // '2025-11-25')
             . "\r\nMcp-Session-Id: $sid\r\n"
             . "Content-Length: " . length($body) . "\r\nConnection: close\r\n\r\n$body";
    return $c;
}

# The JSON-RPC messages carried by a list of events (priming events and
# events without JSON data are skipped).
sub rpc_of { map { ref $_->{json} eq 'HASH' ? ($_->{json}) : () } @_ }

# "<stream>-<seq>" -> (stream, seq), or () if the id has another form.
sub id_parts {
    my ($id) = @_;
    return () unless defined $id && $id =~ /^(\d+)-(\d+)$/;
    return ($1, $2);
}

# One assertion: $ev is a priming event: "id: <stream>-0", "retry: $retry",
# an empty data line, nothing else.
sub priming_ok {
    my ($ev, $retry, $name) = @_;
    local $Test::Builder::Level = $Test::Builder::Level + 1;
    my @why;
    if (!$ev) {
        @why = ('no event');
    }
    else {
        push @why, 'id ' . ($ev->{id} // 'missing') . ' is not <stream>-0'
            unless ($ev->{id} // '') =~ /^[1-9]\d*-0$/;
        push @why, 'retry ' . ($ev->{retry} // 'missing') . ", want $retry"
            unless defined $ev->{retry} && $ev->{retry} == $retry;
        push @why, 'data is not one empty line'
            unless defined $ev->{data} && $ev->{data} eq '' && $ev->{raw} =~ /^data: ?$/m;
        push @why, 'an event type' if defined $ev->{event};
    }
    my $ok = Test::More::ok(!@why, $name);
    Test::More::diag(join("\n", @why, 'event: ' . ($ev ? $ev->{raw} : '(none)'))) unless $ok;
    return $ok;
}

# One assertion: the stream ended, with the chunked terminator (no
# transport error, no timeout).
sub ended_ok {
    my ($s, $name) = @_;
    local $Test::Builder::Level = $Test::Builder::Level + 1;
    my $ok = Test::More::ok($s->is_done && !$s->{error} && !$s->{timed_out}, $name);
    Test::More::diag('stream ' . ($s->is_done ? 'ended' : 'still open')
        . ($s->{error} ? " (error: $s->{error})" : '') . ";\nbody so far:\n"
        . ($s->{body} // '')) unless $ok;
    return $ok;
}

# POST the client's answer (a result, or with error => {...} an error) to a
# server request; fresh connection.  Options: tag, error, plus mcp_post
# options.  Returns the HTTP response.
sub answer {
    my ($t, $sid, $id, $result, %o) = @_;
    my $tag = delete $o{tag};
    my $err = delete $o{error};
    my %h = (%{ delete $o{headers} // {} }, (defined $tag ? ('X-Tag' => $tag) : ()));
    return $t->mcp_post($sid, { jsonrpc => '2.0', id => $id,
                                ($err ? (error => $err) : (result => $result)) },
                        headers => \%h, %o);
}

# What a client's sampling handler returns.
sub sampling_answer {
    my ($text) = @_;
    return { role => 'assistant', content => { type => 'text', text => $text },
             model => 'test-model', stopReason => 'endTurn' };
}

# Worker pid of each tagged request in logs/pids.log: { tag => [pid, ...] }.
# Waits up to $timeout for every tag in @$want to be there (a stream's line
# is written when it ends).
sub pids_by_tag {
    my ($t, $want, $timeout) = @_;
    my $deadline = Time::HiRes::time() + ($timeout // 3);
    my %pid;
    while (1) {
        %pid = ();
        for my $line (split /\n/, McpTest::_slurp($t->prefix . '/logs/pids.log') // '') {
            my ($pid, $tag) = split / /, $line;
            push @{ $pid{$tag} }, $pid if defined $tag && $tag ne '-';
        }
        last unless grep { !$pid{$_} } @{ $want // [] };
        last if Time::HiRes::time() > $deadline;
        Time::HiRes::sleep(0.05);
    }
    return \%pid;
}

# The worker that answered (X-Worker header of a response or a stream).
sub worker_of {
    my ($r) = @_;
    return ref $r eq 'HASH' && !Scalar::Util::blessed($r)
        ? $r->{headers}{'x-worker'} : $r->header('x-worker');
}

# Kept connections, one a worker: { pid => socket }.  Fresh connections
# reach the workers as the kernel spreads them (reuseport), so a test that
# needs "another worker" keeps one connection on each instead of hoping
# for a spread.  Fewer than 4 entries if 80 tries did not find the next
# one.  Options: port, probe (see conn_on()).
sub pinned_conns {
    my ($t, %o) = @_;
    my %c;
    while (keys %c < 4) {
        my ($c, $w) = conn_on($t, sub { !$c{ $_[0] } }, %o) or last;
        $c{$w} = $c;
    }
    return \%c;
}

# A kept connection to a worker that $ok->($pid) accepts, and its pid;
# () if 80 tries found none.  A test that needs "the session's owner" or
# "another worker" asks for it here rather than opening sessions until
# the kernel happens to spread them so.  probe->($socket) sends one
# request on the socket with keepalive and returns its response, whose
# X-Worker header names the worker that read it; by default a GET of
# /who, a location the test has answer 200 with X-Worker: $pid.
sub conn_on {
    my ($t, $ok, %o) = @_;
    my $probe = $o{probe} // sub {
        $t->request(method => 'GET', path => '/who', conn => $_[0], keepalive => 1,
                    port => $o{port} // $t->port);
    };
    for (1 .. 80) {
        my $c = $t->connect(port => $o{port} // $t->port) or next;
        my $r = $probe->($c);
        my $w = $r->{headers}{'x-worker'};
        return ($c, $w) if $r->{status} == 200 && defined $w && $ok->($w);
        close $c;
    }
    return;
}

# True if no event arrives on any of the streams for $secs seconds (keep-
# alive comments do not count); the events that did arrive are returned in
# list context.  A stream that ended or failed (EOF, a read error, a bad
# framing) is not quiet: nothing could arrive on it.  That is a failed
# test and, in scalar context, false, unless the first argument is
# { ends_ok => 1 } (the caller expects an end and checks it).
sub quiet_for {
    my %o = ref $_[0] eq 'HASH' ? %{ shift() } : ();
    my ($secs, @streams) = @_;
    my $deadline = Time::HiRes::time() + $secs;
    my (@got, @dead);
    for my $s (@streams) {
        # Past the deadline, still take what has arrived already.
        while (1) {
            my $left = $deadline - Time::HiRes::time();
            my $ev = take($s, $left > 0.02 ? $left : 0.02) // last;
            push @got, $ev;
        }
        push @dead, $s->{error} ? "failed: $s->{error}" : 'ended'
            if $s->is_done || $s->{error};
    }
    if (@dead && !$o{ends_ok}) {
        local $Test::Builder::Level = $Test::Builder::Level + 1;
        Test::More::ok(0, 'quiet_for: the streams stayed open while quiet');
        Test::More::diag('quiet_for: a stream ' . join(', ', @dead));
    }
    return @got if wantarray;
    return !@got && (!@dead || $o{ends_ok});
}

1;

__END__

=head1 NAME

McpStream - helpers for the streaming tests of ngx_http_mcp_module

=head1 FUNCTIONS

=over

=item streaming_server(location => '...', http => '...', server => '...', %mcptest_opts) -> $t

Started instance: Everything set at /mcp, C<listen ... reuseport>,
logs/pids.log (C<$pid $http_x_tag $request $status>), C<X-Worker: $pid>.

=item call_msg($id, $name, $args, token => $t) -> \%msg

=item call_stream($t, $sid, $id, $name, $args, token => .., tag => .., %mcp_post_opts) -> $sse

=item take($sse, $timeout) -> $ev (with C<at>), take_all($sse, $timeout) -> @ev

=item next_request($sse, $timeout) -> the next request on the stream | undef

=item until_response($sse, $id, $timeout = 10) -> @messages up to the response to $id

=item rpc_of(@events) -> @messages, id_parts($id) -> ($stream, $seq)

=item priming_ok($ev, $retry, $name), ended_ok($sse, $name)  (one assertion each)

=item post_unread($t, $sid, $msg, path => .., protocol_version => ..) -> $socket

=item answer($t, $sid, $id, $result, tag => .., error => {..}, %opts) -> $r

=item sampling_answer($text) -> \%result

=item pids_by_tag($t, [tags], $timeout) -> { tag => [pids] }, worker_of($r_or_sse) -> $pid

=item pinned_conns($t, port => ..., probe => ...) -> { pid => socket }, one kept connection a worker

=item conn_on($t, sub { $pid ok }, port => ..., probe => ...) -> (socket, pid), a kept connection to such a worker (the probe: GET /who)

=item quiet_for($secs, @sse) -> true if no event arrived (list: the events)

=back

=cut
