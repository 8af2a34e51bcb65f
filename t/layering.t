#!/usr/bin/perl
# scripts/layering, the check of the layers' direction (issue #36): fed a
# copy of the tree with an upward include, a circle, an upward call, or an
# exception that no longer occurs, it fails and names the file; the real
# tree passes (every violation tolerated, no exception stale).  No nginx:
# the includes are read from the sources, the calls from object files (a
# few compiled here, or the last build's).

use strict;
use warnings;

use Cwd ();
use File::Basename ();
use File::Path ();
use File::Spec;
use File::Temp ();
use Test::More;

my $repo = Cwd::abs_path(File::Spec->catdir(
    File::Basename::dirname(Cwd::abs_path(__FILE__)), '..'));
my $script = "$repo/scripts/layering";
my $objdir = "$repo/build/nginx-src/objs/addon";
my $built = () = glob("$objdir/*/ngx_http_mcp*.o");

# runs scripts/layering with @args: (exit status, output)
sub layering {
    my @args = @_;
    my $cmd = join ' ', map { quotemeta } $script, @args;
    my $out = `$cmd 2>&1`;
    return ($? >> 8, $out);
}

# a copy of the tree the script reads: src/, fixtures/, the module file
sub copy_tree {
    my $dir = File::Temp::tempdir('mcplayering-XXXXXX', TMPDIR => 1,
                                  CLEANUP => 1);
    system('cp', '-R', "$repo/src", "$repo/fixtures",
           "$repo/ngx_http_mcp_module.c", $dir) == 0
        or BAIL_OUT("cp the tree to $dir: $?");
    return $dir;
}

# write ('>') or append ('>>') $text to $file
sub put {
    my ($mode, $file, $text) = @_;
    open my $fh, $mode, $file or die "$file: $!";
    print $fh $text;
    close $fh or die "$file: $!";
}

sub append { put('>>', @_) }
sub spew   { put('>', @_) }

sub slurp {
    my ($file) = @_;
    open my $fh, '<', $file or die "$file: $!";
    local $/;
    return scalar <$fh>;
}

# the report's short name (parse/json.c) to a path in a tree
sub path_of {
    my ($dir, $short) = @_;
    my ($folder, $name) = split m{/}, $short, 2;
    $name = "ngx_http_mcp_$name" unless $name eq 'ngx_http_mcp.h';
    return "$dir/$name" if $folder eq 'module';
    return "$dir/fixtures/$name" if $folder eq 'fixtures';
    return "$dir/src/$folder/$name";
}

###########################################################################
# 1. An include of a rank-6 header in a rank-1 file fails, names the file
###########################################################################

{
    my $dir = copy_tree();
    my ($victim) = sort glob("$dir/src/parse/*.c");
    (my $short = $victim) =~ s{.*/src/parse/ngx_http_mcp_}{parse/};
    append($victim, "\n#include \"ngx_http_mcp_aggregate.h\"\n");

    my ($rc, $out) = layering('--tree', $dir, '--includes-only');
    is($rc, 1, 'upward include: exits 1 (includes only)')
        or diag($out);
    like($out, qr{^parse -> aggregate \(upward, 1 -> \d+\)$}m,
         'upward include: the pair of folders is named, with the ranks');
    like($out, qr{^\s+\Q$short\E -> aggregate/aggregate\.h: #include\s+FAILS$}m,
         "upward include: $short is named, FAILS");
    like($out, qr{^layering: .*FAILS}m, 'upward include: the verdict');

    SKIP: {
        skip 'the check with the objects: no build (scripts/build)', 2
            unless $built;
        ($rc, $out) = layering('--tree', $dir, $objdir);
        is($rc, 1, 'upward include: exits 1 with the objects too')
            or diag($out);
        like($out, qr{\Q$short\E -> aggregate/aggregate\.h: #include\s+FAILS},
             "upward include: $short named with the objects");
    }
}

###########################################################################
# 2. A circle between two headers of one folder (no arrow up) fails
###########################################################################

{
    my $dir = copy_tree();
    my @h = sort glob("$dir/src/parse/ngx_http_mcp_*.h");
    my ($a, $b) = map { File::Basename::basename($_) } @h[0, 1];
    append($h[0], "\n#include \"$b\"\n");
    append($h[1], "\n#include \"$a\"\n");
    s/^ngx_http_mcp_/parse\// for $a, $b;

    my ($rc, $out) = layering('--tree', $dir, '--includes-only');
    is($rc, 1, 'circle: exits 1') or diag($out);
    like($out, qr{^a circle between files: \Q$a\E -> \Q$b\E -> \Q$a\E\s+FAILS$}m,
         "circle: $a -> $b -> $a named");
    unlike($out, qr{^parse -> parse}m, 'circle: no arrow up reported');
}

###########################################################################
# 3. Calls read from objects: an upward call and a circle of calls
###########################################################################

SKIP: {
    my $cc = $ENV{CC} || 'cc';
    skip "no C compiler ($cc) to build the objects", 5
        unless system("$cc --version > /dev/null 2>&1") == 0;

    my $dir = copy_tree();
    my $objs = "$dir/objs";
    my %src = (
        'parse/zz_a' => "void ngx_http_mcp_zz_b(void);\n"
                      . "void ngx_http_mcp_zz_up(void);\n"
                      . "void ngx_http_mcp_zz_a(void)\n"
                      . "{ ngx_http_mcp_zz_b(); ngx_http_mcp_zz_up(); }\n",
        'parse/zz_b' => "void ngx_http_mcp_zz_a(void);\n"
                      . "void ngx_http_mcp_zz_b(void) { ngx_http_mcp_zz_a(); }\n",
        'fleet/zz_up' => "void ngx_http_mcp_zz_up(void) { }\n",
    );
    for my $f (sort keys %src) {
        my ($folder, $name) = split m{/}, $f;
        my $c = "$dir/src/$folder/ngx_http_mcp_$name.c";
        spew($c, $src{$f});
        File::Path::make_path("$objs/$folder");
        system($cc, '-c', '-o', "$objs/$folder/ngx_http_mcp_$name.o", $c) == 0
            or BAIL_OUT("$cc -c $c: $?");
    }

    my ($rc, $out) = layering('--tree', $dir, $objs);
    is($rc, 1, 'calls: exits 1') or diag($out);
    like($out, qr{^parse -> fleet \(upward, 1 -> \d+\)$}m,
         'calls: parse -> fleet named upward');
    like($out, qr{^\s+parse/zz_a\.c -> fleet/zz_up\.c: ngx_http_mcp_zz_up\s+FAILS$}m,
         'calls: the upward call named with its symbol');
    like($out, qr{^a circle between files: parse/zz_a\.c -> parse/zz_b\.c -> parse/zz_a\.c\s+FAILS$}m,
         'calls: the circle zz_a.c <-> zz_b.c named');
    like($out, qr{^\s+parse/zz_b\.c -> parse/zz_a\.c: ngx_http_mcp_zz_a\s+FAILS$}m,
         'calls: the circle\'s arrows listed with their symbols');
}

###########################################################################
# 4. An exception that no longer occurs is stale, and fails
###########################################################################

{
    # the list is empty today: a copy of the script gains an exception
    # for an include that no file makes
    my $dir = copy_tree();
    my ($from, $to) = ('parse/json.c', 'aggregate/aggregate.h');
    my $text = slurp($script);
    $text =~ s{^EXCEPTIONS = """\n}{EXCEPTIONS = """\n$from -> $to: #include: a test's, no such include\n}m
        or BAIL_OUT('no EXCEPTIONS list in scripts/layering');
    File::Path::make_path("$dir/scripts");
    spew("$dir/scripts/layering", $text);
    chmod 0755, "$dir/scripts/layering";

    my $cmd = join ' ', map { quotemeta } "$dir/scripts/layering", '--tree', $dir,
                                          '--includes-only';
    my $out = `$cmd 2>&1`;
    is($? >> 8, 1, "stale: an exception for $from -> $to, which no include makes: exits 1")
        or diag($out);
    like($out, qr{^stale exception: \Q$from\E -> \Q$to\E: no such arrow$}m,
         'stale: the exception is named');
}

###########################################################################
# 5. The real tree: every violation in the list, no exception stale
###########################################################################

{
    my ($rc, $out) = layering('--includes-only');
    is($rc, 0, 'real tree, includes: passes') or diag($out);
    unlike($out, qr{FAILS|stale}, 'real tree, includes: nothing untolerated');

    SKIP: {
        skip 'the real tree with its calls: no build (scripts/build)', 4
            unless $built;
        ($rc, $out) = layering();
        is($rc, 0, 'real tree with the objects: passes') or diag($out);
        unlike($out, qr{FAILS|stale},
               'real tree: no untolerated violation, no stale exception');
        like($out, qr{^layering: \d+ upward includes, \d+ upward calls, \d+ circles.*\d+ tolerated}m,
             'real tree: the summary');
        my ($list) = $out =~ /the list: (\d+) exceptions/;
        my $tolerated = () = $out =~ /\stolerated$/mg;
        ok(defined $list && $tolerated >= $list,
           "real tree: each of the list's exceptions tolerates an arrow "
           . "or a circle ($list in the list)");
    }
}

done_testing();
