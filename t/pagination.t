# Pagination: with mcp_page_size 2 every listing comes in pages of two
# with an opaque nextCursor until the last page; the pages add up to the
# full listing; invalid cursors are -32602.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use MIME::Base64 ();
use McpTest;
use McpAssert;

# /mcp inherits "mcp_page_size 2" from the server level; /full has the
# default (100) and gives the whole listings to compare with.
my $t = McpTest->new(server => <<'NGX')->start;
        mcp_page_size 2;
        location = /mcp  { mcp on; mcp_builtin everything; }
        location = /full { mcp on; mcp_builtin everything; mcp_page_size 100; }
        location = /one  { mcp on; mcp_builtin everything; mcp_page_size 1; }
NGX
my ($sid) = $t->mcp_initialize;

my %LISTS = ('tools/list' => 'tools', 'resources/list' => 'resources',
             'resources/templates/list' => 'resourceTemplates', 'prompts/list' => 'prompts');

sub list {
    my ($method, $cursor, %o) = @_;
    my ($msg) = $t->mcp_request($sid, $method, defined $cursor ? { cursor => $cursor } : undef,
                                path => $o{path} // '/mcp', id => $o{id} // 'p');
    return $msg;
}

for my $method (sort keys %LISTS) {
    my $key  = $LISTS{$method};
    my $full = list($method, undef, path => '/full');
    my @all  = @{ $full->{result}{$key} // [] };
    ok(@all && !exists $full->{result}{nextCursor}, "$method (page size 100): one page of "
       . scalar(@all));

    my (@union, @cursors, $bad_page);
    my $msg = list($method);
    my $pages = 0;
    while (1) {
        $pages++;
        my $items = $msg->{result}{$key};
        $bad_page = "page $pages: " . McpTest::encode_json($msg)
            unless ref $items eq 'ARRAY' && @$items >= 1 && @$items <= 2;
        push @union, @{ $items // [] };
        my $next = $msg->{result}{nextCursor};
        last unless defined $next;
        push @cursors, $next;
        last if $pages > 20;
        $msg = list($method, $next, id => "p$pages");
    }
    my $want = int((@all + 1) / 2);
    ok(!$bad_page, "$method: every page has 1 or 2 items") or diag($bad_page);
    is($pages, $want, "$method: " . scalar(@all) . " items in $want page(s) of 2");
    is(scalar @cursors, $want - 1, "$method: a nextCursor on every page but the last");
    is_deeply(\@union, \@all, "$method: the pages add up to the full listing, in order");
    ok(!(grep { ref || !length || /^\d+$/ } @cursors),
       "$method: cursors are non-empty opaque strings");
    my %uniq = map { $_ => 1 } @cursors;
    is(scalar keys %uniq, scalar @cursors, "$method: each page has its own cursor");

    if (@cursors) {
        # A cursor can be used again (and in another session): same page.
        my $again = list($method, $cursors[0], id => 'again');
        my ($s2) = $t->mcp_initialize;
        my ($other) = $t->mcp_request($s2, $method, { cursor => $cursors[0] }, id => 'again');
        is_deeply([ $again->{result}{$key}, $other->{result}{$key} ],
                  [ [ @all[2 .. ($#all < 3 ? $#all : 3)] ], [ @all[2 .. ($#all < 3 ? $#all : 3)] ] ],
                  "$method: the first cursor gives the second page again, in any session");
    }
}

# Page size 1: 36 tools (the seven, eight streaming ones, fourteen stateless ones, seven tasks
# ones), 36 pages.
{
    my ($n, $msg, @names) = (0, list('tools/list', undef, path => '/one'));
    while ($msg && $n < 40) {
        $n++;
        push @names, map { $_->{name} } @{ $msg->{result}{tools} // [] };
        my $next = $msg->{result}{nextCursor} // last;
        $msg = list('tools/list', $next, path => '/one', id => "o$n");
    }
    is($n, 36, 'mcp_page_size 1: 36 tools in 36 pages');
    is(scalar @names, 36, 'mcp_page_size 1: one tool per page');
    is_deeply([ @names[7 .. 14] ],
              [ qw(test_tool_with_logging test_tool_with_progress test_sampling test_elicitation
                   test_elicitation_sep1034_defaults test_elicitation_sep1330_enums
                   test_reconnection update_watched_resource) ],
              'mcp_page_size 1: the streaming tools come after the seven, in order');
}

# --- invalid cursors: -32602 ---------------------------------------------------

my $enc = sub { MIME::Base64::encode_base64url($_[0]) };
for my $case (
    [ 'garbage!',             'not base64url' ],
    [ '',                     'empty' ],
    [ 42,                     'a number' ],
    [ JSON::PP::true(),       'a boolean' ],
    [ { page => 2 },          'an object' ],
    [ $enc->('hello'),        'base64url of something else' ],
    [ $enc->('mcp:'),         'no offset' ],
    [ $enc->('mcp:x'),        'offset not a number' ],
    [ $enc->('mcp:-2'),       'negative offset' ],
    [ $enc->('mcp:999'),      'offset past the end' ],
    [ $enc->('mcp:' . ('9' x 40)), 'huge offset' ],
    [ 'A' x 200,              'very long' ],
) {
    my ($cursor, $what) = @$case;
    for my $method ('tools/list', 'prompts/list') {
        is_error(list($method, $cursor, id => 'bad'), -32602, 'bad',
                 "$method, cursor $what: -32602");
    }
}

$t->stop;
done_testing;
