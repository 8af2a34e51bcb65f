# A routed call's SSE stream that its backend ends before the response
# (issue #39; SEP-1699 polling): the aggregating location resumes it as a
# client would, with a GET in the backend session carrying Last-Event-ID
# (the last event id it saw), once the stream's retry: has passed (capped
# at 5 s).  The client's stream ends as the backend's did, and what
# follows reaches it when it resumes at the gateway (a stateless client's
# stays open and carries it), the second and later resumes included,
# for which the gateway holds the client's POST.  A stream that
# ends without an event id is a failure as before; so is a resume the
# backend refuses, and a stream that ends again and again (8 resumes at
# most).  The backends: the module's own Everything set on an internal
# "mcp on" location with the empty prefix (test_reconnection, which the
# conformance suite's server-sse-polling calls), and a fake server whose
# tools end their streams in each of those ways.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use File::Temp qw(tempdir);
use Time::HiRes qw(sleep time);
use McpTest timeout => 120;
use McpStream;
use McpGateway qw(fake_mcp_server);

my $dir = tempdir(CLEANUP => 1);
my $flog = "$dir/fake.log";

# the fake's requests: "time method last-event-id session tool", a line each
sub fake_requests {
    open my $fh, '<', $flog or return ();
    return map { chomp; my @f = split / /; { at => $f[0], method => $f[1], lei => $f[2],
                                                  sid => $f[3], tool => $f[4] } } <$fh>;
}

sub fake_log {
    if (open my $fh, '>>', $flog) {
        printf $fh "%.3f %s\n", time, join ' ', map { $_ // '-' } @_;
        close $fh;
    }
}

my $sse = sub {
    my $c = shift;
    print $c "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
           . "Connection: close\r\n\r\n";
    print $c $_ for @_;
};
sub progress { qq(data: {"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"theirs","progress":$_[0]}}\n\n) }
sub final { qq(data: {"jsonrpc":"2.0","id":$_[0],"result":{"content":[{"type":"text","text":"done $_[1]"}]}}\n\n) }

my $fake = fake_mcp_server(tools => [ qw(polled twice capped noid refused forever) ], call => sub {
    my ($c, $tool, $id) = @_;
    fake_log('POST', undef, undef, $tool);
    if ($tool eq 'polled') {
        $sse->($c, "id: polled-$id-0\nretry: 300\ndata: \n\n", "id: polled-$id-1\n" . progress(1));
    }
    elsif ($tool eq 'noid') {
        $sse->($c, "retry: 100\n" . progress(1));
    }
    elsif ($tool eq 'capped') {
        # an hour: the gateway waits 5 s, then resumes
        $sse->($c, "id: polled-$id-1\nretry: 3600000\ndata: \n\n");
    }
    else {
        $sse->($c, "id: $tool-$id-1\nretry: 100\ndata: \n\n");
    }
}, get => sub {
    my ($c, $head) = @_;
    my ($lei) = $head =~ /^Last-Event-ID:[ \t]*(\S+)/mi;
    my ($sid) = $head =~ /^Mcp-Session-Id:[ \t]*(\S+)/mi;
    fake_log('GET', $lei, $sid);
    # "<tool>-<the request's id>-<n>": where the stream was
    my ($t, $rid, $n) = ($lei // '') =~ /^(\w+)-(\d+)-(\d+)$/;
    if (!defined $t || $t eq 'refused') {
        print $c "HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
    }
    elsif ($t eq 'polled') {
        $sse->($c, "id: polled-$rid-2\n" . progress(2), "id: polled-$rid-3\n" . final($rid, 'after 1'));
    }
    elsif ($t eq 'twice' && $n == 1) {
        $sse->($c, "id: twice-$rid-2\nretry: 100\n" . progress(2));
    }
    elsif ($t eq 'twice') {
        $sse->($c, "id: twice-$rid-3\n" . final($rid, "after $n"));
    }
    else {
        # forever: ends again, with a new id
        $sse->($c, "id: $t-$rid-" . ($n + 1) . "\nretry: 50\ndata: \n\n");
    }
});
my $fport = $fake->{port};

my $t = McpTest->new(
    http => "    mcp_session_zone zone=agg:4m;\n    mcp_session_zone zone=local:4m;\n",
    server => <<"NGX");
        mcp_session agg;

        location = /mcp {
            mcp_backend local /_b/local prefix=;
            mcp_backend fake  /_b/fake;
            mcp_backend_timeout 8s;
            mcp_backend_retry 1ms;
        }

        location = /_b/local {
            internal;
            mcp on;
            mcp_session local;
            mcp_builtin everything;
        }

        location = /_b/fake {
            internal;
            proxy_pass http://127.0.0.1:$fport/mcp;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
        }
NGX
$t->start;

sub text { (($_[0] // {})->{content} // [ {} ])->[0]{text} // '' }

# A tools/call as a client makes it: its stream, and when that ends before
# the response, a GET at the gateway with the last event id it had.
# Returns whether the POST's stream ended so, and the messages of both.
sub polled_call {
    my ($sid, $id, $name, %o) = @_;
    my $s = call_stream($t, $sid, $id, $name, {}, timeout => 15, %o);
    my ($last, @msgs);
    my $deadline = time + 15;
    while ((my $left = $deadline - time) > 0) {
        my $ev = take($s, $left) // last;
        $last = $ev->{id} if defined $ev->{id};
        next unless ref $ev->{json} eq 'HASH';
        push @msgs, $ev->{json};
        return (0, @msgs) if defined $ev->{json}{id} && "$ev->{json}{id}" eq "$id";
    }
    return (0, @msgs) unless $s->is_done && defined $last;
    my $g = $t->mcp_get_stream($sid, last_event_id => $last, timeout => 15);
    return (1, @msgs, until_response($g, $id, 15));
}

my ($sid) = $t->mcp_initialize(protocol_version => '2025-11-25');
ok($sid, 'initialize through the aggregating location');

# --- the module's own test_reconnection, through the empty prefix -------------

for my $n (1 .. 2) {
    my ($closed, @m) = polled_call($sid, "rc$n", 'test_reconnection');
    ok($closed, "test_reconnection ($n): the client's stream ends before the response, as the backend's did");
    like(text($m[-1] && $m[-1]{result}), qr/^Reconnection test completed/,
         "... and the result comes on the client's resumed stream at the gateway ("
         . (($m[-1] && $m[-1]{error}) ? $m[-1]{error}{message} : 'a result') . ')');
}

# --- a fake backend's streams --------------------------------------------------

# one resume: what came before and after the end relayed, in order
{
    my ($closed, @m) = polled_call($sid, 10, 'fake__polled', token => 'mine');
    my @p = grep { ($_->{method} // '') eq 'notifications/progress' } @m;
    is_deeply([ map { $_->{params}{progress} } @p ], [ 1, 2 ],
              'polled: the progress before the stream\'s end and after its resume, in order');
    is($p[1] && $p[1]{params}{progressToken}, 'mine', '... with the client\'s token');
    is(text($m[-1] && $m[-1]{result}), 'done after 1', '... then the result, from the resumed stream');

    my @r = fake_requests();
    my ($post) = grep { ($_->{tool} // '') eq 'polled' } @r;
    my @get = grep { $_->{method} eq 'GET' } @r;
    is(scalar @get, 1, 'polled: one GET');
    like($get[0] && $get[0]{lei}, qr/^polled-\d+-1$/, '... with Last-Event-ID: the last event id seen');
    is($get[0] && $get[0]{sid}, 'fake-session', '... in the backend session');
    my $gap = $get[0] && $post ? $get[0]{at} - $post->{at} : -1;
    ok($gap >= 0.28 && $gap < 3, sprintf('... once retry: 300 had passed (%.2f s after the POST)', $gap));
}

# two resumes: the second with the id the first stream's events gave
{
    unlink $flog;
    my ($closed, @m) = polled_call($sid, 11, 'fake__twice');
    is(text($m[-1] && $m[-1]{result}), 'done after 2', 'twice: the result after a second resume');
    my @lei = map { $_->{lei} } grep { $_->{method} eq 'GET' } fake_requests();
    is(scalar @lei, 2, '... two GETs');
    like(join(' ', @lei), qr/^twice-\d+-1 twice-\d+-2$/, '... each from the last id seen so far');
}

# retry: an hour, honoured up to 5 s
{
    unlink $flog;
    my ($closed, @m) = polled_call($sid, 12, 'fake__capped');
    is(text($m[-1] && $m[-1]{result}), 'done after 1', 'retry: 3600000: the call still ends with its result');
    my @r = fake_requests();
    my ($post) = grep { ($_->{tool} // '') eq 'capped' } @r;
    my ($get) = grep { $_->{method} eq 'GET' } @r;
    my $gap = $get && $post ? $get->{at} - $post->{at} : -1;
    ok($gap >= 4.8 && $gap < 6.5, sprintf('... resumed after 5 s, the cap (%.2f s)', $gap));
}

# what is not resumed, or not for ever
my $mark = $t->log_mark;
for my $case ([ 'noid', qr/its stream ended before its response$/, 0, 'a stream without an event id' ],
              [ 'refused', qr/its resume was refused/, 1, 'a resume answered 405' ],
              [ 'forever', qr/its resumed stream ended before its response/, 8,
                'a stream that ends again after every resume' ]) {
    my ($tool, $re, $gets, $what) = @$case;
    unlink $flog;
    my ($closed, @m) = $tool eq 'noid'
        ? (0, { error => scalar $t->mcp_call($sid, 'tools/call', { name => 'fake__noid', arguments => {} }) })
        : polled_call($sid, "x$tool", "fake__$tool");
    my $e = $m[-1] && $m[-1]{error};
    ok($e && $e->{code} == -32000 && $e->{message} =~ $re,
       "$what: a JSON-RPC error -32000 (" . ($e ? $e->{message} : 'none') . ')');
    is(scalar(grep { $_->{method} eq 'GET' } fake_requests()), $gets, "... after $gets GET(s)");
}
like($t->log_since($mark), qr/\[warn\].*backend "fake".*stream ended before its response/,
     'a [warn] names the backend');

# a stateless client's stream cannot be resumed: it stays, with the result
{
    my $P = 'io.modelcontextprotocol/';
    my $msg = { jsonrpc => '2.0', id => 7, method => 'tools/call',
                params => { name => 'fake__polled', arguments => {},
                            _meta => { "${P}protocolVersion" => '2026-07-28',
                                       "${P}clientCapabilities" => {} } } };
    my $res = $t->mcp_post(undef, $msg, protocol_version => '2026-07-28', timeout => 15,
                           headers => { 'Mcp-Method' => 'tools/call', 'Mcp-Name' => 'fake__polled' });
    my ($m) = grep { ref $_ eq 'HASH' && defined $_->{id} && $_->{id} == 7 } @{ $res->{messages} // [] };
    is(text($m && $m->{result}), 'done after 1', 'a stateless (2026-07-28) client: the result on its own stream');
}

# a client that goes once its stream has ended, without resuming: the
# call runs on to its end, the POST it held goes then
{
    unlink $flog;
    my $s = call_stream($t, $sid, 13, 'fake__twice', {}, timeout => 15);
    my @ev = take_all($s, 5);
    ok($s->is_done && !grep({ ref $_->{json} eq 'HASH' && defined $_->{json}{id} } @ev),
       'a client whose stream ended before the response, gone without resuming');
    $s->close if $s->can('close');
    McpTest::wait_until(5, sub { 2 == grep { $_->{method} eq 'GET' } fake_requests() });
    sleep 0.3;
    is(scalar(grep { $_->{method} eq 'GET' } fake_requests()), 2, '... the gateway still resumed the backend\'s twice');
}

# the gateway and the local backend still answer
{
    my $r = $t->mcp_call($sid, 'tools/call', { name => 'test_simple_text', arguments => {} });
    like(text($r), qr/simple text/i, 'the local backend still answers');
}

$t->stop;
done_testing;
