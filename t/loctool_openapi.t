# tools/openapi2mcp (issue 13, item 4) on real public OpenAPI documents:
# those @readme/oas-examples ships (pinned in scripts/npm, installed in
# build/npm): the Swagger Petstore in 3.0 and 3.1, the USPTO data set API,
# the Train Travel API, ReadMe's API v1 and v2, STAPI (120 operations, no
# operationId), and two of its circular-$ref documents.  For each:
# - one mcp_tool per operation (METHOD and path of every operation, path
#   items behind $ref included), names valid for MCP clients and unique,
#   pass and method right, readOnlyHint on GET, destructiveHint on DELETE;
# - every input_schema (inline, read back with nginx's quoting rules, or a
#   file with --schema-dir) is JSON of an object schema whose required
#   members are properties, whose $refs resolve inside it, and which
#   requires the operation's path and required parameters;
# - the internal locations load in a stock nginx (`nginx -t`) and, with
#   $mcp_arg_ read as $arg_, proxy real calls to a Python stdlib server
#   playing the Petstore (t/py/petstore_upstream.py): the path filled,
#   only the present query parameters, header parameters, form bodies,
#   no header of the caller (Authorization) passed through;
# - a document built to attack the quoting (quotes, backslashes, $, {, ;,
#   #, newlines, a long and a repeated operationId) reads back the same;
#   odd ones (a lone surrogate, $ref cycles, names that are no names, a
#   server URL carrying directives) give warnings, not a crash or an
#   injected directive; the Petstore as YAML gives the same output;
# - the whole output loads with the module (`nginx -t` with mcp_tool),
#   the Petstore tools answer tools/list and tools/call end to end (a
#   404 an isError naming the status, a bad argument refused before the
#   API, no MCP client header at the API), the attack document's tool
#   too, and --output-schema gives structuredContent;
# - conf/mcp-from-config.conf passes nginx -t and serves its tools, its
#   docs folder and its prompt.
# The module parts need mcp_tool (the loctool branch); the example also
# mcp_resources and mcp_prompt (the files branch).  Without mcp_tool they
# fail once ("the module has mcp_tool") and are skipped.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use File::Path ();
use File::Temp ();
use Digest::SHA ();
use Time::HiRes qw(time);
use McpTest timeout => 300;
use McpAssert;
use McpGateway qw(start_python_upstream npm_dir);

my $ROOT = $McpTest::REPO_ROOT;
my $GEN  = "$ROOT/tools/openapi2mcp";
my $OAS  = npm_dir() . '/node_modules/@readme/oas-examples';
my $JSON = JSON::PP->new->utf8->canonical;

unless (-f "$OAS/3.0/json/petstore.json") {
    fail("\@readme/oas-examples is installed in " . npm_dir());
    diag("run scripts/test, or: . scripts/lib.sh; mcp_install_npm_clients");
    done_testing();
    exit;
}

# [document, id, schema files]: the three large ones have schemas over
# the 4 KB nginx takes in one argument
my @DOCS = (
    [ '3.0/json/petstore.json',                 'd1', 0 ],
    [ '3.1/json/petstore.json',                 'd2', 0 ],
    [ '3.0/json/uspto.json',                    'd3', 0 ],
    [ '3.1/json/train-travel.json',             'd4', 0 ],
    [ '3.0/json/readme-legacy.json',            'd5', 0 ],
    [ '3.1/json/readme.json',                   'd6', 1 ],
    [ '3.0/json/star-trek.json',                'd7', 1 ],
    [ '3.0/json/schema-circular.json',          'd8', 0 ],
    [ '3.0/json/circular-request-bodies.json',  'd9', 0 ],
);

my $WORK = File::Temp::tempdir('openapi-XXXXXX', TMPDIR => 1, CLEANUP => 1);

# --- helpers ------------------------------------------------------------

sub slurp { open my $f, '<:raw', $_[0] or die "$_[0]: $!"; local $/; <$f> }

sub spew {
    my ($path, $text) = @_;
    open my $f, '>:raw', $path or die "$path: $!";
    print $f $text;
    close $f;
}

# Runs the generator; returns (exit code, stdout, stderr).
sub generate {
    my (@args) = @_;
    my $err = "$WORK/stderr";
    my $pid = open(my $out, '-|') // die "fork: $!";
    if (!$pid) {
        open STDERR, '>', $err or die;
        exec '/usr/bin/python3', $GEN, @args or die "exec: $!";
    }
    local $/;
    my $text = <$out> // '';
    close $out;
    return ($? >> 8, $text, -f $err ? slurp($err) : '');
}

# nginx's reading of a configuration (ngx_conf_read_token): statements
# [tokens..., children] with a block's statements as children; quoted
# tokens lose their quotes, \" \' \\ become the character, \n \r \t
# control characters, any other backslash stays.  A comment "# METHOD
# /path" is kept as the `op` of the next statement.
sub parse_conf {
    my ($text) = @_;
    my @stack = ([]);
    my (@tokens, $op);
    pos($text) = 0;
    while (pos($text) < length $text) {
        if ($text =~ /\G\s+/gc) { next }
        if ($text =~ /\G#([^\n]*)/gc) {
            my $c = $1;
            $op = "$1 $2" if $c =~ /^ ([A-Z]+) (\S.*)$/ && !@tokens;
            next;
        }
        if ($text =~ /\G;/gc) {
            push @{ $stack[-1] }, { tokens => [@tokens], op => $op };
            (@tokens, $op) = ();
            next;
        }
        if ($text =~ /\G\{/gc) {
            my $st = { tokens => [@tokens], op => $op, children => [] };
            push @{ $stack[-1] }, $st;
            push @stack, $st->{children};
            (@tokens, $op) = ();
            next;
        }
        if ($text =~ /\G\}/gc) {
            die "unbalanced }" if @stack == 1;
            pop @stack;
            next;
        }
        if ($text =~ /\G(["'])((?:[^"'\\]|\\.|(?!\1)["'])*)\1/gcs) {
            my $v = $2;
            $v =~ s/\\(["'\\])|\\([nrt])/defined $1 ? $1 : {n => "\n", r => "\r", t => "\t"}->{$2}/ge;
            push @tokens, $v;
            next;
        }
        if ($text =~ /\G((?:[^\s;{}"'\\]|\\.|\$\{[A-Za-z0-9_]+\})+)/gc) {
            push @tokens, $1;
            next;
        }
        die 'cannot read the configuration at: ' . substr($text, pos($text), 40);
    }
    die 'unclosed block' if @stack != 1;
    return $stack[0];
}

# The operations of a document: { "METHOD /path" => [operation, path item] }
sub doc_ops {
    my ($doc) = @_;
    my %ops;
    for my $path (keys %{ $doc->{paths} // {} }) {
        my $item = deref($doc, $doc->{paths}{$path});
        for my $m (qw(get put post delete options head patch trace)) {
            $ops{ uc($m) . " $path" } = [ $item->{$m}, $item ] if ref $item->{$m} eq 'HASH';
        }
    }
    return \%ops;
}

sub deref {
    my ($doc, $node) = @_;
    for (1 .. 10) {
        last unless ref $node eq 'HASH' && defined $node->{'$ref'};
        my $n = $doc;
        for my $part (split m{/}, substr($node->{'$ref'}, 2)) {
            $part =~ s/~1/\//g;
            $part =~ s/~0/~/g;
            $n = ref $n eq 'HASH' ? $n->{$part} : undef;
        }
        $node = $n;
    }
    return $node;
}

# every $ref of a schema points at one of its own $defs
sub refs_resolve {
    my ($schema) = @_;
    my @bad;
    my @todo = ($schema);
    while (@todo) {
        my $n = shift @todo;
        if (ref $n eq 'HASH') {
            if (exists $n->{'$ref'}) {
                my ($name) = ($n->{'$ref'} // '') =~ m{^#/\$defs/(.+)$};
                push @bad, $n->{'$ref'}
                    unless defined $name && exists $schema->{'$defs'}{$name};
            }
            push @todo, values %$n;
        }
        elsif (ref $n eq 'ARRAY') {
            push @todo, @$n;
        }
    }
    return @bad;
}

# { name => { op, directives => { key => [args] } } } of mcp_tool blocks
sub tools_of {
    my ($tree) = @_;
    my (%tools, @order);
    for my $st (@$tree) {
        next unless ($st->{tokens}[0] // '') eq 'mcp_tool';
        my $name = $st->{tokens}[1];
        my %d;
        for my $c (@{ $st->{children} }) {
            my ($k, @v) = @{ $c->{tokens} };
            $d{$k} = \@v;
        }
        push @order, $name;
        $tools{$name} //= { op => $st->{op}, d => \%d, count => 0 };
        $tools{$name}{count}++;
    }
    return (\%tools, \@order);
}

# { URI => [directives] } of the locations, nested ones included
sub locations_of {
    my ($tree, $loc) = @_;
    $loc //= {};
    for my $st (@$tree) {
        my @tk = @{ $st->{tokens} };
        next unless ($tk[0] // '') eq 'location';
        $loc->{ $tk[-1] } = [ map { join ' ', @{ $_->{tokens} } } @{ $st->{children} } ];
        locations_of($st->{children}, $loc);
    }
    return $loc;
}

# the input schema a tool names: inline JSON or a file
sub schema_of {
    my ($arg) = @_;
    my $text = $arg =~ /^\{/ ? $arg : eval { slurp($arg) };
    return eval { $JSON->decode($text) };
}

# --- 1. the documents ------------------------------------------------------

# The https APIs' locations name a CA file, which nginx reads for each of
# them (1.22 does; later versions share one TLS context): one certificate
# of the system's bundle keeps that short, under a sanitizer too.
my $CA = "$WORK/ca.pem";
{
    my ($first) = (slurp('/etc/ssl/certs/ca-certificates.crt')
                   =~ /(-----BEGIN CERTIFICATE-----.*?-----END CERTIFICATE-----\n)/s);
    spew($CA, $first // '');
}

my $t = McpTest->new(module => 0, ports => 2, workers => 1);
my %OUT;    # id => { parts, tools, ... }

for my $d (@DOCS) {
    my ($file, $id, $big) = @$d;
    my $doc  = $JSON->decode(slurp("$OAS/$file"));
    my @opts = ('--upstream', '127.0.0.1:' . $t->port(2), '--upstream-name', "openapi_$id",
                '--ca-file', $CA);
    push @opts, '--schema-dir', "$WORK/$id" if $big;

    my ($rc, $all, $err) = generate("$OAS/$file", @opts);
    is($rc, 0, "$file: openapi2mcp exits 0") or diag($err);
    my %part;
    for my $p (qw(http server tools locations)) {
        (my $prc, $part{$p}) = generate("$OAS/$file", @opts, '--part', $p);
    }

    if ($big) {
        my ($brc, undef, $berr) = generate("$OAS/$file", @opts[0 .. 3]);
        is($brc, 2, "$file: without --schema-dir, a schema over 4 KB is refused");
        like($berr, qr/use --schema-dir/, "$file: ... saying what to do");
    }

    my $tree = eval { parse_conf($all) };
    ok($tree, "$file: the output reads as nginx configuration") or diag($@);
    $tree //= [];
    my ($tools, $order) = tools_of($tree);
    my $locs = locations_of($tree);
    my $ops  = doc_ops($doc);

    is(scalar @$order, scalar keys %$ops,
       "$file: one mcp_tool per operation (" . scalar(keys %$ops) . ')');
    is_deeply([ sort map { $_->{op} // '?' } values %$tools ], [ sort keys %$ops ],
              "$file: the tools are the document's operations (METHOD /path)");
    is_deeply([ grep { !/^[A-Za-z0-9_-]{1,64}$/ } @$order ], [],
              "$file: tool names of 1 to 64 A-Z a-z 0-9 _ -");
    is(scalar(keys %$tools), scalar @$order, "$file: tool names unique");

    my (@bad_schema, @bad_req, @bad_refs, @bad_pass, @bad_method, @bad_ann, @bad_loc,
        @bad_id, @bad_desc);
    for my $name (@$order) {
        my $tool = $tools->{$name};
        my $dir  = $tool->{d};
        my ($op, $item) = @{ $ops->{ $tool->{op} // '' } // [] };
        next unless $op;
        my ($method) = split / /, $tool->{op};

        push @bad_desc, $name unless length(($dir->{description} // [''])->[0]);
        push @bad_pass, $name
            unless ($dir->{pass} // [''])->[0] eq "/mcp-openapi/$name";
        push @bad_method, $name unless ($dir->{method} // [''])->[0] eq $method;
        my %ann = map { $_ => 1 } @{ $dir->{annotations} // [] };
        push @bad_ann, $name if $method eq 'GET' && !$ann{readOnlyHint};
        push @bad_ann, $name if $method eq 'DELETE' && !$ann{destructiveHint};
        push @bad_ann, $name if $method =~ /^(POST|PATCH|DELETE)$/ && $ann{readOnlyHint};
        push @bad_loc, $name
            unless grep { $_ eq 'internal' } @{ $locs->{"/mcp-openapi/$name"} // [] };
        my $oid = $op->{operationId};
        push @bad_id, "$name ($oid)"
            if defined $oid && $oid =~ /^[A-Za-z0-9_-]{1,64}$/ && $name ne $oid
               && !$tools->{$oid};

        my $arg = ($dir->{input_schema} // [''])->[0];
        my $s = schema_of($arg);
        if (ref $s ne 'HASH' || ($s->{type} // '') ne 'object'
            || ref $s->{properties} ne 'HASH') {
            push @bad_schema, $name;
            next;
        }
        push @bad_schema, "$name (a \$ in the inline text)" if $arg =~ /^\{/ && $arg =~ /\$/;
        push @bad_schema, "$name (required not in properties)"
            if grep { !exists $s->{properties}{$_} } @{ $s->{required} // [] };
        push @bad_refs, map { "$name: $_" } refs_resolve($s);
        my %req = map { $_ => 1 } @{ $s->{required} // [] };
        for my $p (@{ $item->{parameters} // [] }, @{ $op->{parameters} // [] }) {
            $p = deref($doc, $p);
            next unless ref $p eq 'HASH' && ($p->{in} // '') =~ /^(path|query|header)$/;
            next unless $p->{in} eq 'path' || $p->{required};
            next if $p->{in} eq 'header' && $p->{name} =~ /^(accept|content-type|authorization)$/i;
            next unless $p->{name} =~ /^[A-Za-z0-9_]+$/;
            push @bad_req, "$name: $p->{in} $p->{name}" unless $req{ $p->{name} };
        }
    }
    is_deeply(\@bad_schema, [], "$file: every input_schema is JSON of an object schema");
    is_deeply(\@bad_refs, [], "$file: every \$ref of a schema resolves in its \$defs");
    is_deeply(\@bad_req, [], "$file: path and required parameters are required arguments");
    is_deeply(\@bad_desc, [], "$file: every tool has a description");
    is_deeply(\@bad_pass, [], "$file: pass /mcp-openapi/NAME");
    is_deeply(\@bad_method, [], "$file: method is the operation's");
    is_deeply(\@bad_ann, [], "$file: readOnlyHint on GET, destructiveHint on DELETE");
    is_deeply(\@bad_loc, [], "$file: an internal location per tool");
    ok((grep { $_ eq 'internal' } @{ $locs->{'/mcp-openapi/'} // [] }),
       "$file: inside an internal /mcp-openapi/ (the TLS settings' one place)");
    is_deeply(\@bad_id, [], "$file: a valid operationId is the tool's name");

    $OUT{$id} = { %part, file => $file, doc => $doc, tools => $tools, locs => $locs };
}

# what the generator made of some operations, by their meaning
{
    my $p = $OUT{d1}{tools};
    my $add = schema_of($p->{addPet}{d}{input_schema}[0]);
    is_deeply($add->{required}, [qw(name photoUrls)],
              'petstore addPet: the body\'s required members are required arguments');
    ok(!exists $add->{properties}{id}, 'petstore addPet: the readOnly id is no argument');
    is($add->{properties}{tags}{items}{'$ref'}, '#/$defs/Tag', 'petstore addPet: Tag by $ref');
    is($p->{deletePet}{d}{annotations}[0], 'destructiveHint', 'petstore deletePet: destructive');
    my $circ = $OUT{d8}{tools};
    my ($recursive) = grep { $_->{d}{input_schema}[0] =~ /ZoneRules/ } values %$circ;
    my $rs = $recursive ? schema_of($recursive->{d}{input_schema}[0]) : {};
    is($rs->{'$defs'}{ZoneOffset}{properties}{rules}{'$ref'}, '#/$defs/ZoneRules',
       'schema-circular: a recursive schema stays a $ref cycle in $defs');
}

# --- 2. an attack on the quoting --------------------------------------------

my $NASTY = qq{say "hi"; it's \\ {x} \$remote_addr # not a comment\n\tnext line};
my $evil = {
    openapi => '3.0.3',
    info    => { title => qq{Evil "API"; {\$x}}, version => '1' },
    servers => [ { url => 'http://127.0.0.1:1/base path' } ],
    paths   => {
        q{/it's/"q"/$var;#/{id}} => {
            get => {
                operationId => 'evil op/../name;{}',
                summary     => $NASTY,
                description => $NASTY,
                parameters  => [
                    { name => 'id', in => 'path', required => JSON::PP::true(),
                      schema => { type => 'string' } },
                    { name => 'page[size]', in => 'query', required => JSON::PP::true(),
                      schema => { type => 'integer' } },
                    { name => 'q', in => 'query', description => $NASTY,
                      schema => { type => 'string', pattern => '^\\d+$', default => '$HOME',
                                  enum => [ q{'"\\;{}$x}, '1' ] } },
                    { name => 'X-Trace-Id', in => 'header', schema => { type => 'string' } },
                ],
                responses => { 200 => { description => 'ok' } },
            },
            post => {
                operationId => 'x' x 200,
                requestBody => { required => JSON::PP::true(), content => { 'application/json' => {
                    schema => { type => 'object', required => [q{a'b"c$d}],
                                properties => { q{a'b"c$d} => { type => 'string',
                                                                 description => $NASTY } } } } } },
                responses => { 200 => { description => 'ok' } },
            },
        },
        '/same' => {
            get    => { operationId => 'dup', responses => { 200 => { description => 'ok' } } },
            delete => { operationId => 'dup', responses => { 200 => { description => 'ok' } },
                        requestBody => { content => { 'application/json' => { schema => {
                            type => 'object', properties => { reason => { type => 'string' } } } } } } },
        },
    },
};
spew("$WORK/evil.json", $JSON->encode($evil));
{
    my @opts = ('--upstream', '127.0.0.1:' . $t->port(2), '--upstream-name', 'openapi_evil');
    my ($rc, $all, $err) = generate("$WORK/evil.json", @opts);
    is($rc, 0, 'attack document: openapi2mcp exits 0') or diag($err);
    my $tree = eval { parse_conf($all) } // [];
    my ($tools, $order) = tools_of($tree);
    is_deeply([ sort @$order ],
              [ sort 'evil_op_name', 'x' x 55 . '_' . substr(Digest::SHA::sha1_hex('x' x 200), 0, 8),
                'dup', 'dup_2' ],
              'attack document: names cleaned, cut to 64 with a digest, made unique');
    my $ev = $tools->{evil_op_name}{d} // {};
    (my $want = $NASTY) =~ s/[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]//g;
    is($ev->{description}[0], $want, 'attack document: the description reads back the same');
    my $s = schema_of($ev->{input_schema}[0] // '') // {};
    is_deeply($s->{properties}{q},
              { type => 'string', pattern => '^\\d+$', default => '$HOME',
                enum => [ q{'"\\;{}$x}, '1' ], description => $NASTY },
              'attack document: pattern, default, enum and description read back the same');
    is_deeply([ sort keys %{ $s->{properties} } ], [ sort qw(id page_size_ q X_Trace_Id) ],
              'attack document: argument names nginx can read as variables');
    is_deeply($s->{required}, [qw(id page_size_)], 'attack document: required arguments');
    # (canonical JSON puts "delete" before "get": the DELETE is dup)
    is($tools->{dup}{op}, 'DELETE /same', 'attack document: dup is the DELETE');
    is($tools->{dup}{d}{method}[0], 'POST',
       'attack document: a DELETE with a body is a POST subrequest (which has the body)');
    my $loc = locations_of($tree)->{'/mcp-openapi/dup'} // [];
    ok((grep { $_ eq 'proxy_method DELETE' } @$loc), '... sent on to the API as DELETE');
    ok((grep { $_ eq 'proxy_ignore_headers X-Accel-Redirect X-Accel-Expires X-Accel-Limit-Rate '
                     . 'X-Accel-Buffering X-Accel-Charset' } @$loc),
       '... and no X-Accel-* of the API\'s reply is acted on');
    my ($post) = grep { /^x+_/ } @$order;
    my $ps = schema_of($tools->{$post // ''}{d}{input_schema}[0] // '') // {};
    is_deeply($ps->{required}, [ 'id', q{a'b"c$d} ],
              'attack document: a body member named with quotes (and the path\'s {id},'
              . ' undeclared on POST)');
    like($err, qr/POST .*path variable \{id\} has no parameter/,
         'attack document: ... which the generator warns about');
    # descriptions and titles are text (a $ there is a $); elsewhere a $
    # is a variable nginx reads
    unlike($all =~ s/^\s*(?:#|description |title ).*$//mgr,
           qr/\$(?!\{?(?:mcp_arg_|openapi2mcp_))/,
           'attack document: no $ but the variables the generator means (JSON has \\u0024)');
    $OUT{evil} = { map { $_ => (generate("$WORK/evil.json", @opts, '--part', $_))[1] }
                   qw(http server locations) };
}

# a lone surrogate, $ref cycles, a $ref to the whole document, names that
# are no names: warnings, not a crash, and a configuration that loads
{
    spew("$WORK/odd.json", <<'JSON');
{"openapi":"3.0.3","info":{"title":"a\ud800b"},"servers":[{"url":"http://127.0.0.1:9/"}],
 "components":{"schemas":{"A":{"$ref":"#/components/schemas/B"},
                          "B":{"$ref":"#/components/schemas/A"},"S":{"$ref":"#"}}},
 "paths":{"/x/{p}":{"post":{"operationId":"odd\ud800","description":"d\ud800",
   "parameters":[{"name":"p","in":"path","required":true,"schema":{"$ref":"#/components/schemas/A"}},
                 {"name":"Bad Header","in":"header","schema":{"type":"string"}},
                 {"name":"","in":"query"},{"name":5,"in":"query"},
                 {"name":"LONGLONGLONGLONGLONGLONGLONGLONGLONGLONGLONGLONGLONGLONGLONGLONGLONGLONGLONGLONGLONGLONGLONGLONGLONGLONG","in":"query"}],
   "requestBody":{"content":{"application/json":{"schema":{"$ref":"#/components/schemas/S"}}}},
   "responses":{}}}}}
JSON
    my @opts = ('--upstream', '127.0.0.1:' . $t->port(2), '--upstream-name', 'openapi_odd');
    my ($rc, $all, $err) = generate("$WORK/odd.json", @opts);
    is($rc, 0, 'odd document: openapi2mcp exits 0') or diag($err);
    like($err, qr/refers only to itself/, 'odd document: a $ref cycle warned about');
    like($err, qr/'Bad Header' is no header name/, 'odd document: a bad header name left out');
    like($err, qr/parameter name of 104 characters left out/, 'odd document: a long name left out');
    my ($tools) = tools_of(eval { parse_conf($all) } // []);
    my $s = schema_of($tools->{odd}{d}{input_schema}[0] // '') // {};
    is_deeply($s, { type => 'object', properties => { p => { '$ref' => '#/$defs/A' } },
                    required => ['p'], '$defs' => { A => {} } },
              'odd document: the cycle is "any value", the rest left out');
    $OUT{odd} = { map { $_ => (generate("$WORK/odd.json", @opts, '--part', $_))[1] }
                  qw(http server locations) };
}

# a server URL that would write directives into the upstream block
{
    spew("$WORK/inject.json", $JSON->encode({
        openapi => '3.0.3', info => { title => 't', version => '1' },
        servers => [ { url => 'http://evil.example:80 ;include /etc/passwd;#/x' } ],
        paths   => { '/a' => { get => { responses => {} } } } }));
    my ($rc, $all, $err) = generate("$WORK/inject.json");
    is($rc, 0, 'a server URL with directives in it: openapi2mcp exits 0');
    like($err, qr/not a usable http\(s\) URL/, '... warns that it cannot use it');
    unlike($all, qr/passwd|evil/, '... and writes nothing of it');
    like($all, qr/server 127\.0\.0\.1:8080;\n/, '... but the placeholder');
    ($rc) = generate("$WORK/inject.json", '--server', 'http://a b/');
    is($rc, 2, 'a --server that is no URL: refused');
}

# the same document as YAML (python3-yaml, which scripts/test installs)
SKIP: {
    skip 'no python3-yaml', 1 if system('/usr/bin/python3', '-c', 'import yaml') != 0;
    system('/usr/bin/python3', '-c',
           'import json, sys, yaml; yaml.safe_dump(json.load(open(sys.argv[1])),'
           . ' open(sys.argv[2], "w"), sort_keys=False)',
           "$OAS/3.0/json/petstore.json", "$WORK/petstore.yaml");
    my @o = ('--upstream', '127.0.0.1:1');
    my $json = (generate("$OAS/3.0/json/petstore.json", @o))[1];
    my $yaml = (generate("$WORK/petstore.yaml", @o))[1];
    s/^# Generated .*\n// for $json, $yaml;
    ok(length $json && $json eq $yaml, 'the Petstore as YAML: the same configuration');
}

# --tag, --prefix, --skip-deprecated
{
my $pet = "$OAS/3.0/json/petstore.json";
my @o = ('--upstream', '127.0.0.1:1', '--part', 'tools');
my ($tools, $order) = tools_of(parse_conf((generate($pet, @o, '--tag', 'store'))[1]));
is_deeply([ sort @$order ], [ sort qw(getInventory placeOrder getOrderById deleteOrder) ],
          '--tag store: the four store operations');
($tools, $order) = tools_of(parse_conf((generate($pet, @o, '--tag', 'store',
                                                 '--prefix', 'pets_'))[1]));
is_deeply([ sort @$order ], [ sort map { "pets_$_" } qw(getInventory placeOrder
                                                         getOrderById deleteOrder) ],
          '--prefix pets_: every name prefixed');
is($tools->{pets_getInventory}{d}{pass}[0], '/mcp-openapi/pets_getInventory',
   '--prefix pets_: the location too');
($tools, $order) = tools_of(parse_conf((generate($pet, @o, '--skip-deprecated'))[1]));
ok(@$order == 19 && !$tools->{findPetsByTags},
   '--skip-deprecated: the deprecated findPetsByTags left out');
}

# bad options are refused
for my $bad ([ '--upstream', 'x;y' ], [ '--upstream-name', 'a b' ], [ '--prefix', 'a;b' ],
             [ '--location-prefix', '/a;b/' ], [ '--set-header', 'bad header' ]) {
    my ($rc) = generate("$OAS/3.0/json/petstore.json", @$bad);
    is($rc, 2, "openapi2mcp refuses @$bad");
}

# --- 3. the locations in a stock nginx, against the Petstore --------------------

# $mcp_arg_NAME is the argument percent-encoded as one URI component; $arg_NAME
# of a query string written so is the same text: the locations, made public,
# run as they would in the subrequest of a tool
sub as_public {
    my ($text) = @_;
    $text =~ s/\$mcp_arg_/\$arg_/g;
    $text =~ s/\$\{mcp_arg_/\${arg_/g;
    $text =~ s/^\s*internal;\n//mg;
    return $text;
}

my $http = '';
my $servers = '';
for my $id (sort keys %OUT) {
    $t->write_file("conf/$id.http.conf", $OUT{$id}{http});
    $t->write_file("conf/$id.loc.conf", as_public($OUT{$id}{locations}));
    $http .= "include %%PREFIX%%/conf/$id.http.conf;\n";
    next if $id eq 'd1';
    $servers .= "server { listen 127.0.0.1:%%PORT%%; server_name $id;"
              . " include %%PREFIX%%/conf/$id.loc.conf; }\n";
}
$t->write_config(http => $http . $servers,
                 server => 'include %%PREFIX%%/conf/d1.loc.conf;');
# this nginx has no module: a sanitizer run has nothing to check in it
# (and a preloaded ASan makes its thousands of locations crawl)
my $PRELOAD = delete $ENV{MCP_NGINX_PRELOAD};
my ($trc, $tout) = $t->nginx_t;
is($trc, 0, 'stock nginx -t: the http parts and the locations of every document load')
    or diag($tout);

my ($py, $log) = start_python_upstream($t, 'petstore_upstream', $t->port(2));
$t->start;
$ENV{MCP_NGINX_PRELOAD} = $PRELOAD if defined $PRELOAD;

sub upstream_requests {
    my @l;
    for my $line (split /\n/, (-f $log ? slurp($log) : '')) {
        push @l, $JSON->decode($line);
    }
    return @l;
}

# ($code's value, the last request the API received while $code ran or undef)
sub upstream_after {
    my ($code) = @_;
    my $before = () = upstream_requests();
    my $r = $code->();
    my @all = upstream_requests();
    return ($r, @all > $before ? $all[-1] : undef);
}

sub via_location {
    my ($method, $uri, %o) = @_;
    return upstream_after(sub { $t->request(method => $method, path => $uri, %o) });
}

{
    my ($r, $up) = via_location(GET => '/mcp-openapi/getPetById?petId=7',
                                headers => { Authorization => 'Bearer secret',
                                             Cookie => 'sid=1', 'Mcp-Session-Id' => 'abc' });
    is($r->{status}, 200, 'getPetById: 200 from the API');
    is($JSON->decode($r->{body})->{name}, 'doggie', 'getPetById: the pet');
    is($up->{path}, '/v2/pet/7', 'getPetById: the base path and the path template filled');
    is($up->{method}, 'GET', 'getPetById: GET');
    is_deeply([ sort grep { !/^(host|accept)$/ } keys %{ $up->{headers} } ], [],
              'getPetById: no header of the caller (Authorization, Cookie,'
              . ' Mcp-Session-Id) reaches the API');
    is($up->{headers}{host}, 'petstore.swagger.io', 'getPetById: Host of the server URL');

    ($r, $up) = via_location(GET => '/mcp-openapi/getPetById?petId=8');
    is($r->{status}, 404, 'getPetById 8: the API\'s 404 comes back');

    ($r, $up) = via_location(GET => '/mcp-openapi/loginUser?username=a%20b&password=0');
    is($up->{query}, 'username=a%20b&password=0',
       'loginUser: both query parameters, percent-encoded as given (0 counts as present)');
    is($r->{body}, 'token-a b', 'loginUser: the API\'s text');

    ($r, $up) = via_location(GET => '/mcp-openapi/loginUser?password=x');
    is($up->{query}, 'password=x', 'loginUser: an absent parameter is left out');
    ($r, $up) = via_location(GET => '/mcp-openapi/findPetsByStatus');
    is($up->{query}, '', 'findPetsByStatus: no parameter, no query string');
    is($up->{path}, '/v2/pet/findByStatus', 'findPetsByStatus: no "?" either');

    ($r, $up) = via_location(POST => '/mcp-openapi/addPet',
                             body => '{"name":"rex","photoUrls":[]}',
                             headers => { 'Content-Type' => 'text/plain',
                                          Authorization => 'Bearer secret' });
    is($up->{method}, 'POST', 'addPet: POST');
    is($up->{headers}{'content-type'}, 'application/json', 'addPet: Content-Type of the body');
    is($up->{body}, '{"name":"rex","photoUrls":[]}', 'addPet: the body as it came');
    ok(!exists $up->{headers}{authorization}, 'addPet: no Authorization passed through');
    is($JSON->decode($r->{body})->{id}, 99, 'addPet: the API\'s reply');

    ($r, $up) = via_location(POST => '/mcp-openapi/updatePetWithForm?petId=5&name=x%26y&status=0',
                             body => '{"ignored":true}');
    is($up->{path}, '/v2/pet/5', 'updatePetWithForm: path');
    is($up->{headers}{'content-type'}, 'application/x-www-form-urlencoded',
       'updatePetWithForm: a form body');
    is($up->{body}, 'name=x%26y&status=0', 'updatePetWithForm: built from the present arguments');

    ($r, $up) = via_location(DELETE => '/mcp-openapi/deletePet?petId=7&api_key=k1',
                             body => '{"jsonrpc":"2.0"}');
    is($up->{method}, 'DELETE', 'deletePet: DELETE');
    is($up->{headers}{api_key}, 'k1', 'deletePet: the header parameter');
    is($up->{body}, '', 'deletePet: no body sent on DELETE');
    ok(!exists $up->{headers}{'content-length'} || $up->{headers}{'content-length'} eq '0',
       'deletePet: no Content-Length of a body that is not sent');
}

# the attack document's location, on its own server name
{
    my (undef, $up) = via_location(GET => '/mcp-openapi/evil_op_name'
                                   . '?id=a%2Fb&page_size_=3&q=%24x&X_Trace_Id=t1',
                                   headers => { Host => 'evil' });
    $up //= {};
    is($up->{path}, q{/base%20path/it's/%22q%22/%24var;%23/a%2Fb},
       'attack document: literal path parts percent-encoded, the argument as given');
    is($up->{query}, 'page%5Bsize%5D=3&q=%24x', 'attack document: the query key encoded');
    is($up->{headers}{'x-trace-id'}, 't1', 'attack document: the header parameter');
}

# --- 4. with the module: mcp_tool (needs the loctool branch) -------------------
# a module without mcp_tool (a branch before the loctool one) fails here
# once, not once per check
my $HAS_MCP_TOOL = do {
    my $m = McpTest->new(workers => 1);
    $m->write_config(server => 'mcp_tool probe { description "p"; pass /p; }'
                             . ' location = /mcp { mcp on; }');
    my ($rc, $out) = $m->nginx_t;
    ok($rc == 0, 'the module has mcp_tool') or diag($out);
    $rc == 0;
};

SKIP: {
    skip 'the module has no mcp_tool', 1 unless $HAS_MCP_TOOL;

    # each document in a server with `mcp on` (one nginx -t each: under a
    # sanitizer a configuration of every document at once outgrows the time
    # nginx -t is given)
    for my $id (sort keys %OUT) {
        next unless $OUT{$id}{server};
        my $m = McpTest->new(workers => 1);
        $m->write_file("conf/$id.http.conf", $OUT{$id}{http});
        $m->write_file("conf/$id.server.conf", $OUT{$id}{server});
        $m->write_config(http => "include %%PREFIX%%/conf/$id.http.conf;\n",
                         server => "include %%PREFIX%%/conf/$id.server.conf;\n"
                                 . 'location = /mcp { mcp on; }');
        my $t0 = time;
        # nginx -t returns before it makes the configuration it tested the
        # current cycle (core/nginx.c), so LeakSanitizer may take that
        # cycle's pools for "indirect" leaks; the running instances below
        # keep the leak check
        local $ENV{ASAN_OPTIONS} = join ':', grep { length } $ENV{ASAN_OPTIONS} // '',
                                                             'detect_leaks=0';
        my ($rc, $out) = $m->nginx_t;
        is($rc, 0, 'nginx -t with the module: the tools and locations of '
                   . ($OUT{$id}{file} // "the $id document")) or diag($out);
        note(sprintf '%s: nginx -t in %.1fs', $id, time - $t0);
    }

    # the Petstore tools end to end (the upstream block names the Python server)
    my $e = McpTest->new(
        http   => $OUT{d1}{http},
        server => $OUT{d1}{server} . "\nlocation = /mcp { mcp on; }\n",
    );
    my ($erc, $eout) = $e->nginx_t;
    is($erc, 0, 'the Petstore tools: nginx -t') or diag($eout);
    if ($erc == 0) {
        $e->start;
        my ($sid) = $e->mcp_initialize;
        my ($list) = $e->mcp_request($sid, 'tools/list');
        my %by = map { $_->{name} => $_ } @{ $list->{result}{tools} // [] };
        is(scalar keys %by, scalar keys %{ $OUT{d1}{tools} }, 'tools/list: the 20 Petstore tools');
        is_deeply($by{getPetById}{inputSchema},
                  schema_of($OUT{d1}{tools}{getPetById}{d}{input_schema}[0]),
                  'tools/list: getPetById with the generated inputSchema');
        is($by{getPetById}{annotations}{readOnlyHint}, JSON::PP::true(),
           'tools/list: getPetById readOnlyHint');

        my $call = sub {
            my ($name, $args) = @_;
            return upstream_after(sub {
                scalar $e->mcp_call($sid, 'tools/call', { name => $name, arguments => $args },
                                    headers => { Authorization => 'Bearer secret' });
            });
        };

        my ($res, $up) = $call->(getPetById => { petId => 7 });
        ok(!$res->{isError}, 'tools/call getPetById 7: a result');
        is(eval { $JSON->decode($res->{content}[0]{text})->{name} }, 'doggie',
           'tools/call getPetById 7: the pet as text');
        is($up->{path}, '/v2/pet/7', 'tools/call getPetById: the API got /v2/pet/7');
        ok(!exists $up->{headers}{authorization} && !exists $up->{headers}{'mcp-session-id'},
           'tools/call getPetById: no header of the MCP client reached the API');

        ($res, $up) = $call->(getPetById => { petId => 8 });
        is($res->{isError}, JSON::PP::true(), 'tools/call getPetById 8: isError');
        like($res->{content}[0]{text} // '', qr/404/, 'tools/call getPetById 8: says 404');
        unlike($res->{content}[0]{text} // '', qr/Pet not found/, '... and not the API\'s body');

        ($res, $up) = $call->(getPetById => { petId => 'abc' });
        is($res->{isError}, JSON::PP::true(), 'tools/call getPetById "abc": refused by the schema');
        is($up, undef, 'tools/call getPetById "abc": the API was not called');

        ($res, $up) = $call->(loginUser => { username => 'a b', password => '0' });
        is($up->{query}, 'username=a%20b&password=0', 'tools/call loginUser: the query');
        is($res->{content}[0]{text}, 'token-a b', 'tools/call loginUser: the API\'s text');

        ($res, $up) = $call->(addPet => { name => 'rex', photoUrls => [] });
        is($up->{method}, 'POST', 'tools/call addPet: POST');
        is_deeply(eval { $JSON->decode($up->{body}) }, { name => 'rex', photoUrls => [] },
                  'tools/call addPet: the arguments as the JSON body');
        is($up->{headers}{'content-type'}, 'application/json', 'tools/call addPet: JSON');

        ($res, $up) = $call->(deletePet => { petId => 7, api_key => 'k1' });
        is($up->{method}, 'DELETE', 'tools/call deletePet: DELETE');
        is($up->{headers}{api_key}, 'k1', 'tools/call deletePet: the header parameter');
        is($up->{body}, '', 'tools/call deletePet: no body');

        ($res, $up) = $call->(updatePetWithForm => { petId => 5, name => 'x&y' });
        is($up->{body}, 'name=x%26y', 'tools/call updatePetWithForm: the form body');

        $e->stop;
    }

    # the attack document's tool through the module: its schema (pattern,
    # enum with quotes) holds, its location sends what the arguments say
    {
        my $a = McpTest->new(http   => $OUT{evil}{http},
                             server => $OUT{evil}{server} . "\nlocation = /mcp { mcp on; }\n");
        $a->start;
        my ($sid) = $a->mcp_initialize;
        my $call = sub {
            my ($name, $args) = @_;
            my (undef, $up) = upstream_after(sub {
                scalar $a->mcp_call($sid, 'tools/call', { name => $name, arguments => $args });
            });
            return $up // {};
        };
        my $up = $call->(evil_op_name => { id => 'a/b', page_size_ => 3, q => '1',
                                           X_Trace_Id => 't1' });
        is($up->{path}, q{/base%20path/it's/%22q%22/%24var;%23/a%2Fb},
           'attack document through the module: the path, the argument one component');
        is($up->{query}, 'page%5Bsize%5D=3&q=1', 'attack document through the module: the query');
        is($up->{headers}{'x-trace-id'}, 't1', 'attack document through the module: the header');
        $up = $call->(dup => { reason => 'r' });
        is("$up->{method} $up->{path}", 'DELETE /base%20path/same',
           'attack document through the module: DELETE with a body');
        is($up->{body}, '{"reason":"r"}', '... the body the arguments');
        my $res = $a->mcp_call($sid, 'tools/call', { name => 'evil_op_name', arguments => {
            id => 'x', page_size_ => 3, q => '2' } });
        like($res->{content}[0]{text} // '', qr/arguments\.q/,
             'attack document through the module: the enum (\'1\' and one with quotes)'
             . ' refuses "2"');
        $res = $a->mcp_call($sid, 'tools/call', { name => 'evil_op_name', arguments => {
            id => 'x', page_size_ => 3, q => '1x' } });
        like($res->{content}[0]{text} // '', qr/arguments\.q/,
             'attack document through the module: the pattern ^\\d+$ refuses "1x"');
        $a->stop;
    }

    # --output-schema: a JSON object reply becomes structuredContent
    {
        my @o = ('--upstream', '127.0.0.1:' . $t->port(2), '--output-schema');
        my $conf = (generate("$OAS/3.0/json/petstore.json", @o, '--part', 'server'))[1];
        my ($tools) = tools_of(eval { parse_conf($conf) } // []);
        my $os = schema_of($tools->{getPetById}{d}{output_schema}[0] // '') // {};
        is($os->{type}, 'object', '--output-schema: getPetById has an object output_schema');
        ok(!$tools->{findPetsByStatus}{d}{output_schema},
           '--output-schema: none for findPetsByStatus (its reply is an array)');
        my $o = McpTest->new(http   => (generate("$OAS/3.0/json/petstore.json", @o,
                                                 '--part', 'http'))[1],
                             server => $conf . "\nlocation = /mcp { mcp on; }\n");
        $o->start;
        my ($sid) = $o->mcp_initialize;
        my $res = $o->mcp_call($sid, 'tools/call', { name => 'getPetById',
                                                     arguments => { petId => 7 } });
        is(($res->{structuredContent} // {})->{name}, 'doggie',
           '--output-schema: getPetById 7 as structuredContent');
        $o->stop;
    }

    # --- 5. conf/mcp-from-config.conf (needs mcp_tool, mcp_resources and
    # mcp_prompt: the loctool and files branches) -------------------------------

    {
        my $conf = slurp("$ROOT/conf/mcp-from-config.conf");
        my $m = McpTest->new(workers => 2);
        my $p = $m->prefix;
        my $ok = 1;
        $conf =~ s{^load_module\s+modules/ngx_http_mcp_module\.so;}{%%LOAD_MODULE%%}m or $ok = 0;
        $conf =~ s{^worker_processes\s+\S+;}{worker_processes 2;}m or $ok = 0;
        $conf =~ s{/var/log/nginx/}{$p/logs/}g;
        $conf =~ s{/run/nginx\.pid}{$p/logs/nginx.pid} or $ok = 0;
        $conf =~ s{^(\s*)listen\s+8080;}{${1}listen 127.0.0.1:%%PORT%%;}m or $ok = 0;
        $conf =~ s{127\.0\.0\.1:3001}{'127.0.0.1:' . $t->port(2)}ge or $ok = 0;
        $conf =~ s{/srv/docs}{$p/docs}g or $ok = 0;
        $conf =~ s{/etc/nginx/mcp/triage\.md}{$p/triage.md}g or $ok = 0;
        my $temp = join '', map { "    ${_}_temp_path $p/tmp/$_;\n" }
                            qw(client_body proxy fastcgi uwsgi scgi);
        $conf =~ s/^http\s*\{\n/http {\n$temp/m or $ok = 0;
        my $user = $> == 0 ? "user root;\n" : '';
        ok($ok, 'mcp-from-config.conf: adapted for the test');
        $m->{conf} = "daemon off;\nmaster_process on;\n$user$conf";
        $m->write_file('docs/readme.md', "# Pets\n\nAsk the store.\n");
        $m->write_file('triage.md', "Answer this report in a {{tone}} tone:\n\n{{report}}\n");
        my ($rc, $out) = $m->nginx_t;
        is($rc, 0, 'mcp-from-config.conf: nginx -t passes') or diag($out);
        if ($rc == 0) {
            $m->start;
            my ($sid) = $m->mcp_initialize;
            my $list = $m->mcp_call($sid, 'tools/list');
            is_deeply([ map { $_->{name} } @{ $list->{tools} // [] } ],
                      [qw(get_pet find_pets add_pet)], 'mcp-from-config.conf: its three tools');
            my $res = $m->mcp_call($sid, 'tools/call', { name => 'get_pet', arguments => { id => 7 } });
            is(eval { $JSON->decode($res->{content}[0]{text})->{name} }, 'doggie',
               'mcp-from-config.conf: get_pet 7 through the Petstore');
            $res = $m->mcp_call($sid, 'tools/call', { name => 'get_pet', arguments => { id => 0 } });
            is($res->{isError}, JSON::PP::true(), 'mcp-from-config.conf: get_pet 0: refused by the schema');
            $res = $m->mcp_call($sid, 'tools/call',
                                { name => 'find_pets', arguments => { status => 'available' } });
            is(eval { $JSON->decode($res->{content}[0]{text})->[0]{id} }, 7,
               'mcp-from-config.conf: find_pets');
            $res = $m->mcp_call($sid, 'tools/call',
                                { name => 'add_pet', arguments => { name => 'rex', photoUrls => [] } });
            is(eval { $JSON->decode($res->{content}[0]{text})->{id} }, 99,
               'mcp-from-config.conf: add_pet');
            $res = $m->mcp_call($sid, 'resources/list');
            ok((grep { $_->{uri} eq 'file:///docs/readme.md' } @{ $res->{resources} // [] }),
               'mcp-from-config.conf: the docs folder listed');
            $res = $m->mcp_call($sid, 'resources/read', { uri => 'file:///docs/readme.md' });
            like($res->{contents}[0]{text} // '', qr/Ask the store/, 'mcp-from-config.conf: a doc read');
            $res = $m->mcp_call($sid, 'prompts/get',
                                { name => 'triage', arguments => { report => 'My cat is late',
                                                                   tone => 'friendly' } });
            is($res->{messages}[0]{content}{text},
               "Answer this report in a friendly tone:\n\nMy cat is late\n",
               'mcp-from-config.conf: the prompt, its arguments filled');
            $m->stop;
        }
    }

}

$t->stop;
done_testing();
