package McpClient;

# Part of the test harness; t/lib/McpTest.pm, the facade the tests use,
# has every function and method below under its own name.
#
# The MCP client: JSON-RPC messages POSTed to an endpoint (Streamable
# HTTP), GET streams, DELETE, replies decoded whether JSON or SSE,
# initialize with notifications/initialized.  Core Perl only.

use strict;
use warnings;

use Carp qw(croak);
use Exporter 'import';
use Test::More ();

use McpHttp qw(explain_response);
use McpJson qw(encode_json decode_json);
use McpSse ();

# a croak here names the test's line, as when all this was McpTest.pm
our @CARP_NOT = ('McpTest');
our @EXPORT_OK = qw($DEFAULT_PROTOCOL_VERSION mcp_path next_id
                    _mcp_headers mcp_post mcp_get_stream mcp_delete
                    decode_mcp_response mcp_initialize mcp_request
                    mcp_call mcp_notify);
our %EXPORT_TAGS = (all => \@EXPORT_OK);

our $DEFAULT_PROTOCOL_VERSION = '2025-11-25';

###########################################################################
# MCP helpers
###########################################################################

sub mcp_path { $_[0]{mcp_path} }

sub next_id { $_[0]{next_id}++ }

sub _mcp_headers {
    my ($self, $sid, %o) = @_;
    my %h = (
        'Content-Type' => 'application/json',
        'Accept'       => 'application/json, text/event-stream',
    );
    $h{'Mcp-Session-Id'} = $sid if defined $sid;
    my $pv = exists $o{protocol_version} ? $o{protocol_version}
           : defined $sid ? ($self->{session_pv}{$sid} // $self->{protocol_version})
           : undef;
    $h{'MCP-Protocol-Version'} = $pv if defined $pv;
    # Overrides: case-insensitive; undef value omits the header.
    for my $k (keys %{ $o{headers} // {} }) {
        delete $h{$_} for grep { lc $_ eq lc $k } keys %h;
        $h{$k} = $o{headers}{$k};
    }
    return \%h;
}

# POST one JSON-RPC message (or batch / raw string) to the MCP endpoint.
# Options: headers => {Name => value|undef}, protocol_version, path, timeout,
#          keepalive, conn, port, stream => 1 (return an McpTest::SSE).
sub mcp_post {
    my ($self, $sid, $msg, %o) = @_;
    my $body = ref $msg ? encode_json($msg) : $msg;
    my %req = (
        method  => $o{method} // 'POST',
        path    => $o{path} // $self->{mcp_path},
        headers => $self->_mcp_headers($sid, %o),
        body    => $body,
        map { exists $o{$_} ? ($_ => $o{$_}) : () } qw(timeout keepalive conn port quiet),
    );
    return $self->sse_open(%req) if $o{stream};
    my $r = $self->request(%req);
    decode_mcp_response($r);
    return $r;
}

# GET stream on the MCP endpoint (server-initiated messages).
# Options: last_event_id, headers, protocol_version, timeout.
sub mcp_get_stream {
    my ($self, $sid, %o) = @_;
    my $h = $self->_mcp_headers($sid, %o,
        headers => { 'Content-Type' => undef, Accept => 'text/event-stream',
                     (defined $o{last_event_id} ? ('Last-Event-ID' => $o{last_event_id}) : ()),
                     %{ $o{headers} // {} } });
    return $self->sse_open(method => 'GET', path => $o{path} // $self->{mcp_path},
                           headers => $h, timeout => $o{timeout}, quiet => $o{quiet},
                           (defined $o{port} ? (port => $o{port}) : ()));
}

# DELETE the session.  Returns the HTTP response.
sub mcp_delete {
    my ($self, $sid, %o) = @_;
    my $h = $self->_mcp_headers($sid, %o,
        headers => { 'Content-Type' => undef, Accept => undef, %{ $o{headers} // {} } });
    return $self->request(method => 'DELETE', path => $o{path} // $self->{mcp_path},
                          headers => $h, timeout => $o{timeout},
                          (defined $o{port} ? (port => $o{port}) : ()));
}

# Fill $r->{json}, $r->{events}, $r->{messages}, $r->{session_id}.
sub decode_mcp_response {
    my ($r) = @_;
    my $ct = lc($r->{headers}{'content-type'} // '');
    $r->{messages}   = [];
    $r->{session_id} = $r->{headers}{'mcp-session-id'};
    if ($ct =~ m{^application/json\b} && length $r->{body}) {
        $r->{json} = eval { decode_json($r->{body}) };
        $r->{json_error} = $@ if $@;
        if (defined $r->{json}) {
            push @{ $r->{messages} }, ref $r->{json} eq 'ARRAY' ? @{ $r->{json} } : $r->{json};
        }
    }
    elsif ($ct =~ m{^text/event-stream\b}) {
        $r->{events} = [ McpTest::SSEParser->new->feed($r->{body}) ];
        for my $ev (@{ $r->{events} }) {
            next unless defined $ev->{data} && length $ev->{data};
            $ev->{json} = eval { decode_json($ev->{data}) };
            push @{ $r->{messages} }, $ev->{json} if defined $ev->{json};
        }
    }
    return $r;
}

# initialize + notifications/initialized.  Dies (with the exchange) on failure.
# Options: protocol_version, capabilities, client_info, params (extra/override),
#          headers, id, skip_initialized, path (default mcp_path), port.
# Returns ($session_id, $initialize_result, $http_response); scalar: $session_id.
sub mcp_initialize {
    my ($self, %o) = @_;
    my $id = $o{id} // $self->next_id;
    my $params = {
        protocolVersion => $o{protocol_version} // $self->{protocol_version},
        capabilities    => $o{capabilities} // {},
        clientInfo      => $o{client_info} // { name => 'mcp-test', version => '1.0' },
        %{ $o{params} // {} },
    };
    my $r = $self->mcp_post(undef,
        { jsonrpc => '2.0', id => $id, method => 'initialize', params => $params },
        headers => $o{headers}, timeout => $o{timeout}, path => $o{path}, port => $o{port});
    croak "mcp_initialize: expected HTTP 200, got $r->{status}\n" . explain_response($r)
        unless $r->{status} == 200;
    my ($resp) = grep { ref $_ eq 'HASH' && defined $_->{id} && "$_->{id}" eq "$id" }
                 @{ $r->{messages} };
    croak "mcp_initialize: no successful JSON-RPC response with id $id\n" . explain_response($r)
        unless $resp && ref $resp->{result} eq 'HASH';
    my $sid = $r->{headers}{'mcp-session-id'};
    $self->{session_pv}{$sid} = $resp->{result}{protocolVersion}
        if defined $sid && defined $resp->{result}{protocolVersion};

    unless ($o{skip_initialized}) {
        my $n = $self->mcp_post($sid, { jsonrpc => '2.0', method => 'notifications/initialized' },
                                timeout => $o{timeout}, path => $o{path}, port => $o{port});
        croak "mcp_initialize: notifications/initialized: expected HTTP 202, got $n->{status}\n"
            . explain_response($n) unless $n->{status} == 202;
    }
    return wantarray ? ($sid, $resp->{result}, $r) : $sid;
}

# Send a request; returns the matching JSON-RPC response message (hashref
# with result or error), or undef.  List context: ($message, $http_response).
# Options: id (default auto-increment) plus mcp_post options.
sub mcp_request {
    my ($self, $sid, $method, $params, %o) = @_;
    my $id = exists $o{id} ? delete $o{id} : $self->next_id;
    my %msg = (jsonrpc => '2.0', id => $id, method => $method);
    $msg{params} = $params if defined $params;
    my $r = $self->mcp_post($sid, \%msg, %o);
    my ($resp) = grep { ref $_ eq 'HASH' && defined $_->{id} && "$_->{id}" eq "$id"
                        && (exists $_->{result} || exists $_->{error}) } @{ $r->{messages} // [] };
    if (!$resp && !$o{quiet}) {
        Test::More::diag("McpTest: no JSON-RPC response with id $id to '$method'\n"
            . explain_response($r));
    }
    return wantarray ? ($resp, $r) : $resp;
}

# Like mcp_request but returns the result, or the error object ({code,
# message, data}) for error responses.  List: ($value, $message, $http_response).
sub mcp_call {
    my ($self, @args) = @_;
    my ($resp, $r) = $self->mcp_request(@args);
    my $v = !$resp ? undef : exists $resp->{error} ? $resp->{error} : $resp->{result};
    return wantarray ? ($v, $resp, $r) : $v;
}

# Send a notification (no id); returns the HTTP response (expect 202).
sub mcp_notify {
    my ($self, $sid, $method, $params, %o) = @_;
    my %msg = (jsonrpc => '2.0', method => $method);
    $msg{params} = $params if defined $params;
    return $self->mcp_post($sid, \%msg, %o);
}

1;
