#!/usr/bin/perl
# docs/directives.md against the sources: every directive the module's
# ngx_command_t arrays register and every variable it adds is documented
# there (a "### name" heading; for a directive its "Syntax:" line and the
# "Context:" the code allows), and the document names no directive or
# variable the code does not register.  Needs no nginx.

use strict;
use warnings;

use FindBin;
use File::Find;
use Test::More;

my $root = "$FindBin::Bin/..";

###########################################################################
# 1. What the sources register
###########################################################################

my @files = ("$root/ngx_http_mcp_module.c");
find(sub { push @files, $File::Find::name if /\.c\z/ },
     "$root/src", "$root/fixtures");
@files = sort @files;

sub slurp {
    my ($path) = @_;
    open(my $fh, '<', $path) or die "$path: $!";
    local $/;
    my $text = <$fh>;
    close $fh;
    $text =~ s{/\*.*?\*/}{ }gs;    # comments name directives too
    return $text;
}

my %ctx_name = (
    NGX_HTTP_MAIN_CONF => 'http',
    NGX_HTTP_SRV_CONF  => 'server',
    NGX_HTTP_LOC_CONF  => 'location',
    NGX_HTTP_UPS_CONF  => 'upstream',
);

my (%directive, %variable, %prefix, %arrays, @modules);

for my $path (@files) {
    my $c = slurp($path);
    (my $rel = $path) =~ s{^\Q$root\E/}{};

    # ngx_command_t NAME[] = { { ngx_string("x"), FLAGS, ... }, ...
    #                          ngx_null_command };
    while ($c =~ /ngx_command_t\s+(\w+)\s*\[\s*\]\s*=\s*\{(.*?)ngx_null_command/gs) {
        my ($array, $body) = ($1, $2);
        $arrays{$array} = $rel;
        my $entries = () = $body =~ /\{\s*ngx_string\(/g;
        my $n = 0;
        while ($body =~ /\{\s*ngx_string\("([^"]+)"\)\s*,\s*([^,]+),/g) {
            my ($name, $flags) = ($1, $2);
            die "$rel: directive $name registered twice\n"
                if $directive{$name};
            my @ctx = map { $ctx_name{$_} }
                      grep { $flags =~ /\b$_\b/ }
                      qw(NGX_HTTP_MAIN_CONF NGX_HTTP_SRV_CONF
                         NGX_HTTP_LOC_CONF NGX_HTTP_UPS_CONF);
            $directive{$name} = { file => $rel, context => \@ctx };
            $n++;
        }
        is($n, $entries, "$rel: $array: all $entries entries read");
    }

    # each module's directives: an array read above, or NULL
    while ($c =~ /ngx_module_t\s+(\w+)\s*=\s*\{\s*NGX_MODULE_V1\s*,\s*[^,]+,\s*(\w+)\s*,/gs) {
        push @modules, [ $1, $2, $rel ];
    }

    # ngx_http_variable_t NAME[] = { { ngx_string("x"), ... },
    #                                ngx_http_null_variable };
    while ($c =~ /ngx_http_variable_t\s+\w+\s*\[\s*\]\s*=\s*\{(.*?)ngx_http_null_variable/gs) {
        my $body = $1;
        while ($body =~ /\{\s*ngx_string\("([^"]+)"\)\s*,\s*[^,]+,\s*[^,]+,\s*[^,]+,\s*([^,]+),/g) {
            my ($name, $flags) = ($1, $2);
            ($flags =~ /NGX_HTTP_VAR_PREFIX/ ? \%prefix : \%variable)
                ->{$name} = $rel;
        }
    }

    # ngx_http_add_variable(cf, &name, flags) with a name of its own
    # (a table's loop passes &v->name: read above; a name taken from
    # the directive's arguments, as mcp_secret's, is the operator's)
    while ($c =~ /ngx_http_add_variable\(\s*\w+\s*,\s*&([\w>.-]+)\s*,\s*([^)]*)\)/g) {
        my ($ident, $flags) = ($1, $2);
        next if $ident =~ /->name\z/;
        next if $c =~ /\b\Q$ident\E\s*=\s*value\[\d\]\s*;/;
        my ($name) = $c =~ /\b\Q$ident\E\s*=\s*ngx_string\("([^"]+)"\)/;
        die "$rel: ngx_http_add_variable(&$ident): its name not found\n"
            unless defined $name;
        ($flags =~ /NGX_HTTP_VAR_PREFIX/ ? \%prefix : \%variable)
            ->{$name} = $rel;
    }
}

for my $m (@modules) {
    my ($module, $commands, $rel) = @$m;
    ok($commands eq 'NULL' || $arrays{$commands},
       "$rel: $module: its directives ($commands) read");
}

my $ndir = keys %directive;
my $nvar = keys(%variable) + keys(%prefix);

# a floor, so that a broken pattern cannot pass by reading nothing
cmp_ok($ndir, '>=', 60, "the sources register $ndir directives");
cmp_ok($nvar, '>=', 19, "the sources register $nvar variables");

###########################################################################
# 2. What docs/directives.md documents
###########################################################################

my $doc_path = "$root/docs/directives.md";
open(my $fh, '<', $doc_path) or die "$doc_path: $!";
my @lines = <$fh>;
close $fh;

my (%doc_dir, %doc_var, %doc_prefix, %syntax, @stray, $current);
my $in_code = 0;

for my $line (@lines) {
    $in_code = !$in_code if $line =~ /^```/;
    next if $in_code;

    if ($line =~ /^### (mcp\w*)\s*$/) {
        $current = $1;
        push @stray, "$1 twice" if $doc_dir{$1}++;
        next;
    }
    if ($line =~ /^### \$(mcp_\w+?)([A-Z][A-Z_]*)?\s*$/) {
        $current = undef;
        if (defined $2) {
            $doc_prefix{$1}++;
        } else {
            push @stray, "\$$1 twice" if $doc_var{$1}++;
        }
        next;
    }
    if ($line =~ /^#/) {
        $current = undef;
        next;
    }
    next unless defined $current;

    if ($line =~ /^\s+Syntax:\s+([^\s;]+)/) {
        push @{ $syntax{$current}{names} }, $1;
    } elsif ($line =~ /^\s+Context:\s+(.*?)\s*$/) {
        $syntax{$current}{context} = $1;
    }
}

###########################################################################
# 3. Both ways
###########################################################################

for my $name (sort keys %directive) {
    my $d = $directive{$name};
    ok($doc_dir{$name}, "directive $name ($d->{file}) has a heading")
        or next;
    my $s = $syntax{$name} || {};
    is_deeply($s->{names}, [ $name ], "directive $name: its Syntax line");
    is($s->{context}, join(', ', @{ $d->{context} }),
       "directive $name: its Context is the code's");
}

for my $name (sort keys %variable) {
    ok($doc_var{$name}, "variable \$$name ($variable{$name}) has a heading");
}

for my $name (sort keys %prefix) {
    ok($doc_prefix{$name},
       "prefix variable \$${name}NAME ($prefix{$name}) has a heading");
}

for my $name (sort keys %doc_dir) {
    ok($directive{$name}, "documented directive $name is registered");
}

for my $name (sort keys %doc_var) {
    ok($variable{$name}, "documented variable \$$name is registered");
}

for my $name (sort keys %doc_prefix) {
    ok($prefix{$name}, "documented prefix variable \$$name... is registered");
}

is_deeply(\@stray, [], 'no directive or variable documented twice');

pass("docs/directives.md: $ndir directives and $nvar variables checked");

done_testing();
