package McpSse;

# Part of the test harness; t/lib/McpTest.pm, the facade the tests use,
# has every function and method below under its own name.
#
# Server-Sent Events: a live event stream read event by event
# (McpTest::SSE) and the incremental text/event-stream parser
# (McpTest::SSEParser).  Core Perl only.

use strict;
use warnings;

use Exporter 'import';
use Test::More ();

use McpHttp qw(_build_request _read_head _read_some _write_all explain_response);
use McpJson ();
use McpUtil qw(_now);

# a croak here names the test's line, as when all this was McpTest.pm
our @CARP_NOT = ('McpTest');
our @EXPORT_OK = qw(sse_open parse_sse parse_sse_chunk);
our %EXPORT_TAGS = (all => \@EXPORT_OK);

###########################################################################
# SSE
###########################################################################

# Send a request and return an McpTest::SSE stream once headers arrived.
# Same options as request(); default GET mcp_path with Accept: text/event-stream.
sub sse_open {
    my ($self, %o) = @_;
    $o{method} = uc($o{method} // 'GET');
    $o{path} //= $self->{mcp_path};
    $o{headers} //= { Accept => 'text/event-stream' };
    $o{port} //= $self->port;
    $o{host} //= '127.0.0.1';
    my $timeout = $o{timeout} // 5;
    my $r = { status => 0, headers => {}, header_list => [], raw => '', body => '' };
    # conn: a kept socket to send on (a worker chosen); the stream owns it
    my $sock = $o{conn} // $self->connect(port => $o{port}, timeout => $timeout);
    $r->{request} = defined $o{raw} ? $o{raw} : _build_request(%o, keepalive => 1);
    if (!$sock) {
        $r->{error} = "connect failed: $!";
    }
    else {
        my $deadline = _now() + $timeout;
        my $werr = _write_all($sock, $r->{request}, $deadline);
        my $err  = _read_head($sock, $r, $deadline, $o{method});
        $r->{error} = $werr ? "$werr; $err" : $err if $err;
    }
    if ($r->{error} && !$o{quiet}) {
        Test::More::diag("McpTest: sse_open failed: $r->{error}\n" . explain_response($r));
    }
    return McpTest::SSE->new($sock, $r, $o{method});
}

# Stateless helpers for unit tests / decoding complete bodies.
sub parse_sse {
    my ($text) = @_;
    my $p = McpTest::SSEParser->new;
    return ($p->feed($text), $p->finish);
}

sub parse_sse_chunk {
    my ($text) = @_;
    return McpTest::SSEParser->new->feed($text);
}

###########################################################################
package McpTest::SSEParser;
# Incremental text/event-stream parser following the WHATWG SSE rules:
# lines end in CRLF, LF or CR; ':' starts a comment; one leading space after
# the colon is removed; data lines are joined with "\n"; a blank line ends
# an event.  Deviation (useful for testing): an event is reported whenever
# any field was seen (e.g. an id-only "priming" event), with data => undef
# when no data line was present.  An unterminated event at EOF is dropped.

use strict;
use warnings;

sub new {
    bless { buf => '', comments => 0, pending_comments => 0, last_id => '',
            bom_done => 0 }, shift;
}

sub _reset_event {
    my ($self) = @_;
    delete @$self{qw(ev_id ev_event ev_data ev_retry ev_seen ev_raw)};
}

# Feed bytes; returns the list of events completed by them.
# Event: { id, event, type, data, retry, last_id, comments, raw }
#   id     - value of this event's id field (undef if none)
#   event  - event field (undef if none); type = event // 'message'
#   data   - data lines joined by "\n" (undef if no data line)
#   retry  - integer retry field (undef if none or invalid)
#   last_id  - the stream's last-event-id after this event (spec semantics)
#   comments - comment lines seen since the previous event
sub feed {
    my ($self, $text) = @_;
    $self->{buf} .= $text;
    if (!$self->{bom_done}) {
        return () if length $self->{buf} < 3 && "\xEF\xBB\xBF" =~ /^\Q$self->{buf}\E/;
        $self->{buf} =~ s/^\xEF\xBB\xBF//;
        $self->{bom_done} = 1;
    }
    my @events;
    while ($self->{buf} =~ /\r\n|\r|\n/) {
        my ($pos, $end) = ($-[0], $+[0]);
        # A CR at the very end may be the first half of a CRLF split across
        # reads: wait for the next byte.
        last if $end == length($self->{buf}) && substr($self->{buf}, $pos) eq "\r";
        my $line = substr($self->{buf}, 0, $pos);
        substr($self->{buf}, 0, $end, '');
        push @events, $self->_line($line);
    }
    return @events;
}

# End of stream: a trailing lone CR terminates its line; an unterminated
# event is discarded (per spec).  Returns any events completed.
sub finish {
    my ($self) = @_;
    my @ev;
    if ($self->{buf} =~ /\r\z/) {
        chop $self->{buf};
        @ev = $self->_line(delete $self->{buf});
    }
    $self->{buf} = '';
    $self->_reset_event;
    return @ev;
}

sub comments { $_[0]{comments} }
sub last_id  { $_[0]{last_id} }

sub _line {
    my ($self, $line) = @_;
    if ($line eq '') {
        return () unless $self->{ev_seen};
        my $ev = {
            id       => $self->{ev_id},
            event    => $self->{ev_event},
            type     => $self->{ev_event} // 'message',
            data     => $self->{ev_data} ? join("\n", @{ $self->{ev_data} }) : undef,
            retry    => $self->{ev_retry},
            last_id  => $self->{last_id},
            comments => $self->{pending_comments},
            raw      => $self->{ev_raw},
        };
        $self->{pending_comments} = 0;
        $self->_reset_event;
        return ($ev);
    }
    if ($line =~ /^:/) {
        $self->{comments}++;
        $self->{pending_comments}++;
        return ();
    }
    $self->{ev_raw} .= "$line\n";
    my ($field, $value) = $line =~ /^([^:]*)(?::(.*))?$/s;
    $value //= '';
    $value =~ s/^ //;
    if    ($field eq 'data')  { push @{ $self->{ev_data} }, $value; $self->{ev_seen} = 1 }
    elsif ($field eq 'event') { $self->{ev_event} = $value; $self->{ev_seen} = 1 }
    elsif ($field eq 'id') {
        $self->{ev_seen} = 1;
        if ($value !~ /\0/) { $self->{ev_id} = $value; $self->{last_id} = $value }
    }
    elsif ($field eq 'retry') {
        $self->{ev_seen} = 1;
        $self->{ev_retry} = $value + 0 if $value =~ /^\d+$/;
    }
    # Unknown fields are ignored.
    return ();
}

###########################################################################
package McpTest::SSE;
# A live event-stream response.  Fields: status, reason, headers,
# header_list, error, raw (head bytes), body (decoded bytes so far),
# events (all events returned so far), done, timed_out.

use strict;
use warnings;

sub new {
    my ($class, $sock, $r, $method) = @_;
    my $self = bless { %$r, sock => $sock, events => [], queue => [],
                       parser => McpTest::SSEParser->new, done => 0 }, $class;
    if ($r->{error} || !$sock) {
        $self->{done} = 1;
        CORE::close($sock) if $sock && $sock->opened;
        return $self;
    }
    $self->{decoder} = McpTest::Body->for_response($r, $method);
    my $buf = delete ${*$sock}{mcptest_buf} // '';
    $self->_consume($buf) if length $buf;
    return $self;
}

sub status  { $_[0]{status} }
sub headers { $_[0]{headers} }
sub header  { $_[0]{headers}{ lc $_[1] } }
sub is_done { $_[0]{done} }

sub _consume {
    my ($self, $data) = @_;
    my $dec  = $self->{decoder};
    my $body = $dec->feed($data);
    if ($dec->{error}) {
        $self->{error} = "bad body framing: $dec->{error}";
        $self->_end;
        return;
    }
    $self->{body} .= $body;
    for my $ev ($self->{parser}->feed($body)) {
        if (defined $ev->{data} && length $ev->{data}) {
            my $j = eval { McpJson::decode_json($ev->{data}) };
            $ev->{json} = $j if defined $j;
        }
        push @{ $self->{queue} }, $ev;
    }
    $self->_end if $dec->done;
}

sub _end {
    my ($self) = @_;
    $self->{done} = 1;
    push @{ $self->{queue} }, $self->{parser}->finish;
    CORE::close($self->{sock}) if $self->{sock} && $self->{sock}->opened;
}

# Next event, or undef on timeout (timed_out set) / end of stream (done set).
sub next_event {
    my ($self, $timeout) = @_;
    my $deadline = McpUtil::_now() + ($timeout // 5);
    $self->{timed_out} = 0;
    while (1) {
        if (@{ $self->{queue} }) {
            my $ev = shift @{ $self->{queue} };
            push @{ $self->{events} }, $ev;
            return $ev;
        }
        return undef if $self->{done};
        my ($data, $err) = McpHttp::_read_some($self->{sock}, $deadline);
        if (!defined $data) {
            if ($err eq 'timeout') { $self->{timed_out} = 1; return undef }
            if ($self->{decoder}{kind} ne 'close') {
                $self->{error} = "$err before end of body";
            }
            $self->_end;
            next;
        }
        $self->_consume($data);
    }
}

# Events until end of stream or until $timeout elapses in total.
sub read_all {
    my ($self, $timeout) = @_;
    my $deadline = McpUtil::_now() + ($timeout // 5);
    my @ev;
    while (defined(my $ev = $self->next_event($deadline - McpUtil::_now()))) {
        push @ev, $ev;
    }
    return @ev;
}

# Read the rest of the body (e.g. a JSON error response) and return all of it.
sub read_body {
    my ($self, $timeout) = @_;
    1 while defined $self->next_event($timeout // 5);
    return $self->{body};
}

sub comments { $_[0]{parser}->comments }
sub last_id  { $_[0]{parser}->last_id }

sub close {
    my ($self) = @_;
    $self->{done} = 1;
    CORE::close($self->{sock}) if $self->{sock} && $self->{sock}->opened;
}

1;
