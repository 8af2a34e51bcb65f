# Two real clients against tools and resources that nginx locations serve
# (mcp_tool, mcp_resource pass=) in front of a REST service
# (t/py/rest_upstream.py): the MCP Inspector's CLI mode
# (@modelcontextprotocol/inspector-cli, Streamable HTTP) lists the tools,
# calls one and reads a resource, and reads a file that mcp_resources
# serves from a directory; the TypeScript SDK client does the same, with
# structuredContent and an argument the schema refuses.
#
# Needs build/npm (Node 22 and the pinned packages): scripts/test
# installs it, or ". scripts/lib.sh; mcp_install_npm_clients".

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use McpTest timeout => 180;
use McpAssert;
use McpGateway qw(start_python_upstream npm_dir node_bin run_node_script);

my $cli = npm_dir() . '/node_modules/@modelcontextprotocol/inspector-cli/build/cli.js';
my @missing = grep { !-e $_ } node_bin(), $cli,
    npm_dir() . '/node_modules/@modelcontextprotocol/sdk/package.json';
if (@missing) {
    fail('the Inspector CLI and the SDK are installed in ' . npm_dir());
    diag("missing: @missing\nrun scripts/test, or: . scripts/lib.sh; mcp_install_npm_clients");
    done_testing;
    exit;
}

my $t = McpTest->new(
    ports => 2,
    http  => 'upstream rest { server 127.0.0.1:%%PORT2%%; keepalive 4; }
    proxy_http_version 1.1;
    proxy_set_header Connection "";
    types { text/markdown md; }',
    server => <<'NGX',
        mcp_tool get_order {
            description   "Look up an order by id";
            input_schema  '{"type":"object","properties":{"id":{"type":"string"}},"required":["id"]}';
            output_schema '{"type":"object","properties":{"id":{"type":"string"}}}';
            annotations   readOnlyHint;
            pass          /internal/orders;
            method        GET;
        }
        mcp_resource orders://summary pass=/internal/summary mime_type=application/json;
        mcp_resources %%PREFIX%%/docs uri=file:///docs/ watch=off;
        location = /mcp { mcp on; }
        location /internal/orders  { internal; proxy_pass http://rest/orders/$mcp_arg_id; }
        location /internal/summary { internal; proxy_pass http://rest/orders/summary; }
NGX
);
start_python_upstream($t, 'rest_upstream', $t->port(2));
$t->write_file('docs/runbook.md', "# Runbook\n\nRestart the orders service.\n");
$t->start;

my $url = 'http://127.0.0.1:' . $t->port . '/mcp';

sub inspector {
    my (@args) = @_;
    # inspector-cli 1.0.3 finds its package.json relative to the working
    # directory ("../package.json"): it runs from its build/ directory
    (my $dir = $cli) =~ s{/[^/]+$}{};
    my ($rc, $out) = McpTest::_run_capture(
        [ '/bin/sh', '-c', 'cd "$0" && exec "$@"', $dir,
          node_bin(), $cli, '--cli', $url, '--transport', 'http', @args ], 60);
    my ($json) = $out =~ /(\{.*\})/s;
    my $j = defined $json ? eval { McpTest::decode_json($json) } : undef;
    return ($rc, $j, $out);
}

# --- the Inspector CLI ----------------------------------------------------------

{
    my ($rc, $j, $out) = inspector('--method', 'tools/list');
    is($rc, 0, 'inspector --cli tools/list: exit 0') or diag($out);
    is_deeply([ map { $_->{name} } @{ $j->{tools} // [] } ], ['get_order'],
              'the Inspector lists the location-backed tool') or diag($out);

    ($rc, $j, $out) = inspector('--method', 'tools/call', '--tool-name', 'get_order',
                                '--tool-arg', 'id=insp-1');
    is($rc, 0, 'inspector --cli tools/call: exit 0') or diag($out);
    is(($j->{structuredContent} // {})->{id}, 'insp-1',
       'the Inspector calls it: the REST service\'s reply as structuredContent') or diag($out);
    ok(!$j->{isError}, '... not an error');

    ($rc, $j, $out) = inspector('--method', 'resources/read', '--uri', 'orders://summary');
    is($rc, 0, 'inspector --cli resources/read: exit 0') or diag($out);
    like((($j->{contents} // [])->[0] // {})->{text} // '', qr{"/orders/summary"},
         'the Inspector reads the location-backed resource') or diag($out);

    ($rc, $j, $out) = inspector('--method', 'resources/list');
    is($rc, 0, 'inspector --cli resources/list: exit 0') or diag($out);
    ok((grep { ($_->{uri} // '') eq 'file:///docs/runbook.md' } @{ $j->{resources} // [] }),
       'the Inspector lists the file that mcp_resources serves') or diag($out);

    ($rc, $j, $out) = inspector('--method', 'resources/read', '--uri', 'file:///docs/runbook.md');
    is($rc, 0, 'inspector --cli resources/read of a file: exit 0') or diag($out);
    my $c = (($j->{contents} // [])->[0] // {});
    is($c->{text}, "# Runbook\n\nRestart the orders service.\n",
       'the Inspector reads the file resource: its text') or diag($out);
    is($c->{mimeType}, 'text/markdown', '... typed by nginx\'s types') or diag($out);
}

# --- the TypeScript SDK client ------------------------------------------------------

{
    my ($rc, $out) = run_node_script('loctool_client.mjs', [ $url ], timeout => 60);
    is($rc, 0, 'node loctool_client.mjs: exit 0') or diag($out);
    my ($line) = grep { /^\{/ } split /\n/, $out // '';
    my $j = eval { McpTest::decode_json($line // '') } // {};
    is_deeply($j->{tools}, ['get_order'], 'the SDK lists the tool');
    is(($j->{call}{structuredContent} // {})->{id}, 'sdk-7',
       'the SDK calls it: structuredContent from the location');
    like(($j->{call}{content} // [ {} ])->[0]{text} // '', qr/"target": "\/orders\/sdk-7"/,
         '... and the same JSON as text');
    ok($j->{bad}{isError}, 'a missing required argument: isError through the SDK');
    is(($j->{read}{contents} // [ {} ])->[0]{mimeType}, 'application/json',
       'the SDK reads the resource');
}

done_testing;
