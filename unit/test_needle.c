
/*
 * Unit tests of src/parse/ngx_http_mcp_needle.c, the guardrails'
 * needles: what run of literal bytes is read from a pattern (and when
 * none is: scoped options, alternations, classes, escapes, \Q..\E,
 * quantifiers on the literal), the caseless search, and against PCRE2
 * itself: for each pattern, compiled as nginx compiles it (no options)
 * and with UTF and UCP, every spelling in case of texts it matches (and
 * those with the Kelvin sign or the long s for "k" and "s") holds the
 * needle whenever PCRE2 finds a match, and texts without it are skipped.
 */


#include <ngx_config.h>
#include <ngx_core.h>

#define PCRE2_CODE_UNIT_WIDTH  8
#include <pcre2.h>

#include "ngx_http_mcp_needle.h"
#include "ngx_shim.h"
#include "unit.h"


/* the needle of a pattern ("" for none), and whether it is caseless */

static void
ngx_unit_literal(const char *pattern, ngx_uint_t unicode, const char *want,
    ngx_uint_t want_caseless, const char *name)
{
    u_char      buf[512];
    ngx_str_t   p, best;
    ngx_uint_t  caseless;

    p.data = (u_char *) pattern;
    p.len = strlen(pattern);
    caseless = 0;

    ngx_http_mcp_needle_literal(&p, buf, &best, &caseless, unicode, NULL);

    CHECK_MEM(best.data, best.len, want, name);

    if (best.len) {
        CHECK_INT(caseless, want_caseless, name);
    }
}


static void
test_literal(void)
{
    /* case-sensitive, as before */
    ngx_unit_literal("AccountKey=[0-9A-Za-z+/]{40,}", 0, "AccountKey=", 0,
                     "a run before a class");
    ngx_unit_literal("\\bgithub_pat_[0-9A-Za-z_]{22,}\\b", 0, "github_pat_", 0,
                     "a run between escapes");
    ngx_unit_literal("(?s)Foo.Bar", 0, "Foo", 0,
                     "(?s) changes no literal: a case-sensitive run");

    /* a leading (?i) */
    ngx_unit_literal("(?i)\\byou are now\\b", 0, "you are now", 1,
                     "(?i): the run in lower case, caseless");
    ngx_unit_literal("(?i)IGNORE Previous", 0, "ignore previous", 1,
                     "(?i): capitals lowered");
    ngx_unit_literal("(?i)\\bdo not (tell|inform) the user\\b", 0,
                     " the user", 1, "(?i): the longest run outside groups");
    ngx_unit_literal("(?is)Foo.Bar", 0, "foo", 1, "(?is)");
    ngx_unit_literal("(?mi)a-b", 0, "a-b", 1, "(?mi), a sign in the run");
    ngx_unit_literal("(?i)ab\\.cd", 0, "ab.cd", 1, "(?i), an escaped sign");

    /* scoped or other options: none */
    ngx_unit_literal("(?i:abc)def", 0, "", 0, "(?i:...) gives none");
    ngx_unit_literal("abc(?i)def", 0, "", 0, "(?i) not at the start");
    ngx_unit_literal("(?i)abc(?-i)def", 0, "", 0, "(?-i) later");
    ngx_unit_literal("(?-i)abcdef", 0, "", 0, "(?-i) at the start");
    ngx_unit_literal("(?ix)a b c", 0, "", 0, "(?ix): extended");
    ngx_unit_literal("(?x)abc", 0, "", 0, "(?x)");
    ngx_unit_literal("(?^i)abc", 0, "", 0, "(?^i)");
    ngx_unit_literal("(?i)(?s)abc", 0, "", 0, "a second option group");
    ngx_unit_literal("(?)abc", 0, "", 0, "(?) with no letter");
    ngx_unit_literal("(*UTF)(?i)abc", 0, "", 0, "a verb first");
    ngx_unit_literal("(?i)", 0, "", 0, "(?i) alone");

    /* what the run must leave out under (?i) */
    ngx_unit_literal("(?i)ab|cd", 0, "", 0, "(?i), a top alternation");
    ngx_unit_literal("(?i)a\\Qbc\\E", 0, "", 0, "(?i), \\Q..\\E");
    ngx_unit_literal("(?i)abc{0}de", 0, "ab", 1, "(?i), {0} on a letter");
    ngx_unit_literal("(?i)abc?de", 0, "ab", 1, "(?i), ? on a letter");
    ngx_unit_literal("(?i)abc*de", 0, "ab", 1, "(?i), * on a letter");
    ngx_unit_literal("(?i)abcd{0,1}", 0, "abc", 1, "(?i), {0,1}");
    ngx_unit_literal("(?i)ab[c]de", 0, "ab", 1, "(?i), a class");
    ngx_unit_literal("(?i)ab\\x41cd", 0, "ab", 1, "(?i), \\x41");
    ngx_unit_literal("(?i)ab\\pLcd", 0, "ab", 1, "(?i), \\pL");
    ngx_unit_literal("(?i)caf\xc3\xa9 au lait", 0, " au lait", 1,
                     "(?i), bytes outside ASCII end the run");
    ngx_unit_literal("(?i)\xc3\xa9t\xc3\xa9", 0, "t", 1,
                     "(?i), only the ASCII between");

    /* UTF or UCP: "k" and "s" have partners outside ASCII */
    ngx_unit_literal("(?i)risk task", 1, " ta", 1,
                     "(?i) under UCP: k and s end the run");
    ngx_unit_literal("(?i)KISS", 1, "i", 1, "(?i) under UCP: K and S too");
    ngx_unit_literal("risk task", 1, "risk task", 0,
                     "case-sensitive under UCP: k and s stay");
    ngx_unit_literal("(?i)risk task", 0, "risk task", 1,
                     "(?i) without UCP: k and s stay");
}


/* a group's alternatives' runs, joined by "|" ("" for none) */

static void
ngx_unit_alts(const char *pattern, ngx_uint_t unicode, const char *want,
    const char *name)
{
    u_char                      buf[512], out[256], *o;
    ngx_str_t                   p, best;
    ngx_uint_t                  caseless, i;
    ngx_http_mcp_needle_alts_t  alts;

    p.data = (u_char *) pattern;
    p.len = strlen(pattern);
    caseless = 0;

    ngx_http_mcp_needle_literal(&p, buf, &best, &caseless, unicode, &alts);

    o = out;

    for (i = 0; i < alts.n; i++) {
        if (i) {
            *o++ = '|';
        }

        o = ngx_cpymem(o, alts.runs[i].data, alts.runs[i].len);
    }

    CHECK_MEM(out, (size_t) (o - out), want, name);
}


static void
test_alts(void)
{
    ngx_unit_alts("(?i)\\b(ignore|disregard|forget) (all |any )*"
                  "(instructions|rules|prompts?)\\b", 0,
                  "ignore|disregard|forget", "the first group of three");
    ngx_unit_alts("(?i)\\b(ignore|disregard|forget) (all |any )*"
                  "(instructions|rules|prompts?)\\b", 1,
                  "ignore|regard|forget", "under UCP, s ends a run");
    ngx_unit_alts("(?i)<\\s*/?\\s*(system|important|instructions?)\\s*>", 0,
                  "system|important|instruction", "a last s? left out");
    ngx_unit_alts("x(?:abc|defg)y", 0, "abc|defg", "(?:");
    ngx_unit_alts("(abc|de)(fghi|jklm)", 0, "fghi|jklm",
                  "the group whose shortest run is longest");
    ngx_unit_alts("(abc|def)?", 0, "", "a group that ? can skip");
    ngx_unit_alts("(abc|def)*", 0, "", "a group that * can skip");
    ngx_unit_alts("(abc|def){0}", 0, "", "a group {0} skips");
    ngx_unit_alts("(abc|def)+", 0, "", "+: not read (kept simple)");
    ngx_unit_alts("(abc|)", 0, "", "an empty alternative");
    ngx_unit_alts("(abc|.*)", 0, "", "an alternative with no run");
    ngx_unit_alts("(abc|d(e|f)g)", 0, "abc|d", "a nested group's bar");
    ngx_unit_alts("(abc|d[|]efg)", 0, "abc|efg", "a bar in a class");
    ngx_unit_alts("(abc|d\\|efg)", 0, "abc|d|efg", "an escaped bar");
    ngx_unit_alts("(a|b|c|d|e|f|g|h)", 0, "a|b|c|d|e|f|g|h", "eight");
    ngx_unit_alts("(a|b|c|d|e|f|g|h|i)", 0, "", "nine: too many");
    ngx_unit_alts("(abc|def)|x", 0, "", "a top alternation");
    ngx_unit_alts("(abc|def)\\Q", 0, "", "\\Q after it");
    ngx_unit_alts("(?=abc)(def|ghi)", 0, "", "a lookahead");
    ngx_unit_alts("(?<n>abc|def)", 0, "", "a named group");
    ngx_unit_alts("(?|abc|def)", 0, "", "a branch reset");
    ngx_unit_alts("(?>abc|def)", 0, "", "an atomic group");
    ngx_unit_alts("(?i)(ABC|Def)", 0, "abc|def", "(?i): lower case");
}


static void
ngx_unit_found(const char *needle, const char *text, ngx_uint_t want,
    const char *name)
{
    size_t  len, i, rare;

    len = strlen(needle);

    /* the answer does not hang on which byte is looked for first */
    for (rare = 0; rare < len; rare++) {
        i = ngx_http_mcp_needle_caseless((u_char *) needle, len, rare,
                                         (u_char *) text, strlen(text));
        if (!CHECK_INT(i, want, name)) {
            printf("#   rare byte %zu\n", rare);
        }
    }
}


static void
test_caseless(void)
{
    ngx_unit_found("you are now", "YOU ARE NOW", 1, "all capitals");
    ngx_unit_found("you are now", "well, You Are Now free", 1, "mixed");
    ngx_unit_found("you are now", "you are now", 1, "the whole text");
    ngx_unit_found("you are now", "yOu aRe nOW.", 1, "at the start");
    ngx_unit_found("you are now", "...yoU ARE noW", 1, "at the end");
    ngx_unit_found("you are now", "you are no", 0, "cut short");
    ngx_unit_found("you are now", "you are not", 0, "one byte off");
    ngx_unit_found("you are now", "You Are Nor you are Now", 1,
                   "a near miss, then a match");
    ngx_unit_found("you are now", "", 0, "an empty text");
    ngx_unit_found("a-b", "A-B", 1, "a sign stays a sign");
    ngx_unit_found("a-b", "A_B", 0, "no folding of signs");
    ngx_unit_found("a@b", "A`B", 0, "@ and ` are not a case pair");
    ngx_unit_found("a[b", "A{B", 0, "[ and { are not a case pair");
    ngx_unit_found("ab", "\xc1\xc2", 0, "bytes outside ASCII are not folded");
    ngx_unit_found("x", "X", 1, "one byte");
    ngx_unit_found("a@b", "xxxxxxxxxxxxxxxxxxxxA`BxxxxxxxxxxxxA@B", 1,
                   "a near miss in a long text, then a match");
    ngx_unit_found("a", "``````````````````````````````````", 0,
                   "bytes that fold like a letter are not one");
}


/* the needle at every place of a text, and the text's end after it */

static void
test_caseless_places(void)
{
    u_char      text[128];
    size_t      pad, len, rare, fails;
    const char *needle;

    needle = "you are now";
    len = strlen(needle);
    fails = 0;

    for (pad = 0; pad + len + 8 <= sizeof(text); pad++) {
        ngx_memset(text, '.', sizeof(text));

        for (rare = 0; rare < len; rare++) {
            /* "YoU aRe NoW" at pad, the text ending 0 to 7 bytes after */
            ngx_memcpy(text + pad, "YoU aRe NoW", len);

            fails += !ngx_http_mcp_needle_caseless((u_char *) needle, len,
                                                   rare, text,
                                                   pad + len + (pad % 8));

            /* its last byte off, or cut one short: none */
            text[pad + len - 1] = 'T';

            fails += ngx_http_mcp_needle_caseless((u_char *) needle, len,
                                                  rare, text,
                                                  pad + len + (pad % 8));

            fails += ngx_http_mcp_needle_caseless((u_char *) needle, len,
                                                  rare, text, pad + len - 1);
        }
    }

    CHECK_INT(fails, 0, "the needle at every place, every byte looked for");
}


/* PCRE2 against the needle: a match without it would be a miss */

typedef struct {
    const char  *pattern;
    const char  *texts[6];          /* matched: each spelling in case */
    const char  *misses[3];         /* texts without the needle */
} ngx_unit_pair_t;


static ngx_unit_pair_t  ngx_unit_pairs[] = {

    { "(?i)\\byou are now\\b",
      { "you are now", "and you are now free", "see: you are now.", NULL },
      { "you are not", "yo u are now", NULL } },

    { "(?i)\\b(ignore|disregard|forget) (all |any |the |your |previous "
      "|prior |above |earlier )*(instructions|rules|prompts?)\\b",
      { "ignore previous instructions", "forget the rules",
        "disregard all prior prompts", NULL },
      { "ignore_previous_instructions", "a quiet day", NULL } },

    { "(?i)\\bdo not (tell|inform|mention (this |it )?to) the user\\b",
      { "do not tell the user", "do not mention it to the user", NULL },
      { "do not tell the users", "tell the user", "do not tell anyone" } },

    { "(?i)<\\s*/?\\s*(system|important|instructions?)\\s*>",
      { "<system>", "< /Important >", "<instructions>", NULL },
      { "system>", "a <b> tag", NULL } },

    { "x(?:abc|defg)y",
      { "xabcy", "xdefgy", NULL },
      { "xaby", NULL } },

    { "\\b(AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}\\b",
      { "id AKIAIOSFODNN7EXAMPLE", "ASIAIOSFODNN7EXAMPLE", NULL },
      { "AKI", "akia iosfodnn7example", NULL } },

    { "(?i)secret key",
      { "my secret key", "a SECRET KEY here", NULL },
      { "secret-key", NULL } },

    { "(?is)ask.*task",
      { "ask\nthe task", "ASK a TASK", NULL },
      { "or tik", NULL } },

    { "(?i)x{0}yz\\.json",
      { "yz.json", "a YZ.JSON file", NULL },
      { "yzXjson", NULL } },

    { "(?i)k8s",
      { "k8s", "K8S", NULL },
      { "kas", NULL } },

    { "(?i)caf\xc3\xa9 au lait",
      { "caf\xc3\xa9 au lait", "CAF\xc3\x89 AU LAIT", NULL },
      { "cafe au lai", NULL } },

    { "AKIA[0-9A-Z]{16}",
      { "AKIAIOSFODNN7EXAMPLE", NULL },
      { "akiaiosfodnn7example", NULL } },
};


/* text with its ASCII letters in the cases of mask's bits */

static size_t
ngx_unit_spell(const char *text, unsigned long mask, u_char *out)
{
    size_t    i;
    u_char    c;
    unsigned  bit;

    bit = 0;

    for (i = 0; text[i]; i++) {
        c = text[i];

        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) {
            c = ((mask >> (bit++ % 64)) & 1) ? (c & ~0x20) : (c | 0x20);
        }

        out[i] = c;
    }

    return i;
}


/* text with its "k"s as U+212A and its "s"s as U+017F, in UTF-8 */

static size_t
ngx_unit_unicode(const u_char *text, size_t len, u_char *out)
{
    size_t  i, n;

    for (i = 0, n = 0; i < len; i++) {
        if ((text[i] | 0x20) == 'k') {
            ngx_memcpy(out + n, "\xe2\x84\xaa", 3);
            n += 3;

        } else if ((text[i] | 0x20) == 's') {
            ngx_memcpy(out + n, "\xc5\xbf", 2);
            n += 2;

        } else {
            out[n++] = text[i];
        }
    }

    return n;
}


static ngx_uint_t
ngx_unit_has(ngx_str_t *needle, ngx_uint_t caseless, u_char *s, size_t len)
{
    size_t  i;

    if (caseless) {
        return ngx_http_mcp_needle_caseless(needle->data, needle->len, 0,
                                            s, len);
    }

    for (i = 0; i + needle->len <= len; i++) {
        if (ngx_memcmp(s + i, needle->data, needle->len) == 0) {
            return 1;
        }
    }

    return 0;
}


static ngx_uint_t
ngx_unit_any(ngx_http_mcp_needle_alts_t *alts, ngx_uint_t caseless, u_char *s,
    size_t len)
{
    ngx_uint_t  i;

    for (i = 0; i < alts->n; i++) {
        if (ngx_unit_has(&alts->runs[i], caseless, s, len)) {
            return 1;
        }
    }

    return 0;
}


static void
ngx_unit_against_pcre2(ngx_unit_pair_t *pair, uint32_t options)
{
    int                  err;
    u_char               buf[512], text[256], wide[768], *s;
    size_t               len, n, off, letters, i, l;
    uint32_t             all;
    ngx_str_t            pattern, best;
    ngx_uint_t           caseless, unicode, t, matched, missed, skipped;
    PCRE2_SIZE           erroff;
    pcre2_code          *re;
    unsigned long        mask, masks;
    pcre2_match_data    *md;
    const char          *name;
    ngx_http_mcp_needle_alts_t  alts;

    name = pair->pattern;

    re = pcre2_compile((PCRE2_SPTR) pair->pattern, PCRE2_ZERO_TERMINATED,
                       options, &err, &erroff, NULL);
    if (!CHECK(re != NULL, name)) {
        return;
    }

    md = pcre2_match_data_create_from_pattern(re, NULL);

    pcre2_pattern_info(re, PCRE2_INFO_ALLOPTIONS, &all);
    caseless = (all & PCRE2_CASELESS) ? 1 : 0;
    unicode = (all & (PCRE2_UTF|PCRE2_UCP)) ? 1 : 0;

    pattern.data = (u_char *) pair->pattern;
    pattern.len = strlen(pair->pattern);

    ngx_http_mcp_needle_literal(&pattern, buf, &best, &caseless, unicode,
                                &alts);

    if (!CHECK(best.len > 0 || alts.n > 0, name)) {
        printf("#   no needle\n");
        goto done;
    }

    matched = 0;
    missed = 0;

    for (t = 0; t < 6 && pair->texts[t]; t++) {

        for (i = 0, letters = 0; pair->texts[t][i]; i++) {
            letters += ((pair->texts[t][i] | 0x20) >= 'a'
                        && (pair->texts[t][i] | 0x20) <= 'z');
        }

        /* every spelling up to 12 letters, a spread of them past that */
        masks = (letters <= 12) ? (1UL << letters) : 4096;

        for (mask = 0; mask < masks; mask++) {
            off = 0;
            len = ngx_unit_spell(pair->texts[t],
                                 (letters <= 12) ? mask
                                 : (mask == 0) ? ~0UL
                                 : mask * 0x9e3779b97f4a7c15UL, text);

            for (n = 0; n < 2; n++) {
                s = text;
                l = len;

                if (n == 1) {
                    if (!(options & PCRE2_UTF)) {
                        break;
                    }

                    l = ngx_unit_unicode(text, len, wide);
                    s = wide;
                }

                if (pcre2_match(re, s, l, off, 0, md, NULL) < 0) {
                    continue;
                }

                matched++;

                if ((best.len && !ngx_unit_has(&best, caseless, s, l))
                    || (alts.n && !ngx_unit_any(&alts, caseless, s, l)))
                {
                    if (missed++ == 0) {
                        printf("#   a match without the needle \"%.*s\" "
                               "or %u alternatives: \"%.*s\"\n",
                               (int) best.len, best.data,
                               (unsigned) alts.n, (int) l, s);
                    }
                }
            }
        }
    }

    CHECK(matched > 0, name);

    if (!CHECK_INT(missed, 0, name)) {
        printf("#   options 0x%x\n", options);
    }

    /* texts without the needle: skipped, and PCRE2 agrees they miss */
    skipped = 0;

    for (t = 0; t < 3 && pair->misses[t]; t++) {
        len = strlen(pair->misses[t]);

        /* the needle the guard would use */
        if (alts.n && alts.shortest > best.len
            ? !ngx_unit_any(&alts, caseless, (u_char *) pair->misses[t], len)
            : !ngx_unit_has(&best, caseless, (u_char *) pair->misses[t], len))
        {
            skipped++;
        }

        CHECK(pcre2_match(re, (PCRE2_SPTR) pair->misses[t], len, 0, 0, md,
                          NULL) < 0, name);
    }

    CHECK(skipped > 0, name);

done:

    pcre2_match_data_free(md);
    pcre2_code_free(re);
}


static void
test_against_pcre2(void)
{
    ngx_uint_t  i;

    for (i = 0; i < sizeof(ngx_unit_pairs) / sizeof(ngx_unit_pairs[0]); i++) {
        /* as nginx compiles a pattern, and with UTF and UCP */
        ngx_unit_against_pcre2(&ngx_unit_pairs[i], 0);
        ngx_unit_against_pcre2(&ngx_unit_pairs[i], PCRE2_UTF|PCRE2_UCP);
    }
}


/*
 * Random patterns of a small grammar (letters with case partners in
 * Unicode, signs, escapes, classes, groups with alternatives, every kind
 * of quantifier, a leading (?i) or not) against random texts over the
 * same letters and the Kelvin sign and the long s: no text PCRE2
 * matches may lack the needle, in either mode
 */

static u_long  ngx_unit_seed = 38;


static u_long
ngx_unit_rand(u_long n)
{
    ngx_unit_seed = ngx_unit_seed * 6364136223846793005UL
                    + 1442695040888963407UL;

    return (ngx_unit_seed >> 33) % n;
}


static u_char *
ngx_unit_item(u_char *p, ngx_uint_t depth)
{
    ngx_uint_t   i, n;
    const char  *atom;

    static const char  *atoms[] = {
        "a", "A", "b", "k", "K", "s", "S", "x", " ", "-", "<",
        "\\.", "\\-", "[ab]", "[^a]", ".", "\\s", "\\w", "\\x41"
    };

    static const char  *quants[] = {
        "", "", "", "", "?", "*", "+", "{0}", "{1,2}", "{2}", "{0,1}",
        "??", "*+"
    };

    if (depth < 2 && ngx_unit_rand(4) == 0) {
        p = ngx_cpymem(p, "(", 1);

        if (ngx_unit_rand(2)) {
            p = ngx_cpymem(p, "?:", 2);
        }

        n = 1 + ngx_unit_rand(3);

        for (i = 0; i < n; i++) {
            if (i) {
                *p++ = '|';
            }

            p = ngx_unit_item(p, depth + 1);

            if (ngx_unit_rand(2)) {
                p = ngx_unit_item(p, depth + 1);
            }
        }

        *p++ = ')';

    } else {
        atom = atoms[ngx_unit_rand(sizeof(atoms) / sizeof(atoms[0]))];
        p = ngx_cpymem(p, atom, strlen(atom));
    }

    atom = quants[ngx_unit_rand(sizeof(quants) / sizeof(quants[0]))];

    return ngx_cpymem(p, atom, strlen(atom));
}


static void
test_random(void)
{
    int                          err;
    u_char                       pat[512], buf[1024], text[64], *p;
    size_t                       tlen;
    uint32_t                     all, mode;
    ngx_str_t                    pattern, best;
    ngx_uint_t                   i, j, k, n, caseless, unicode, matched;
    ngx_uint_t                   missed, needles, nletters;
    PCRE2_SIZE                   erroff;
    pcre2_code                  *re;
    const char                  *l;
    pcre2_match_data            *md;
    ngx_http_mcp_needle_alts_t   alts;

    static const char  *letters[] = {
        "a", "A", "b", "B", "k", "K", "s", "S", "x", " ", "-", "<", ".",
        "\xc5\xbf", "\xe2\x84\xaa"
    };

    nletters = sizeof(letters) / sizeof(letters[0]);
    matched = 0;
    missed = 0;
    needles = 0;

    for (i = 0; i < 4000; i++) {
        mode = (i % 2) ? PCRE2_UTF|PCRE2_UCP : 0;

        p = pat;

        if (ngx_unit_rand(2)) {
            p = ngx_cpymem(p, "(?i)", 4);
        }

        n = 1 + ngx_unit_rand(5);

        for (j = 0; j < n; j++) {
            p = ngx_unit_item(p, 0);
        }

        *p = '\0';

        re = pcre2_compile(pat, p - pat, mode, &err, &erroff, NULL);
        if (re == NULL) {
            continue;
        }

        pcre2_pattern_info(re, PCRE2_INFO_ALLOPTIONS, &all);
        caseless = (all & PCRE2_CASELESS) ? 1 : 0;
        unicode = (all & (PCRE2_UTF|PCRE2_UCP)) ? 1 : 0;

        pattern.data = pat;
        pattern.len = p - pat;

        ngx_http_mcp_needle_literal(&pattern, buf, &best, &caseless, unicode,
                                    &alts);

        needles += (best.len || alts.n);

        md = pcre2_match_data_create_from_pattern(re, NULL);

        for (j = 0; j < 60; j++) {
            p = text;
            n = ngx_unit_rand(10);

            for (k = 0; k < n; k++) {
                l = letters[ngx_unit_rand(nletters)];
                p = ngx_cpymem(p, l, strlen(l));
            }

            tlen = p - text;

            if (pcre2_match(re, text, tlen, 0, 0, md, NULL) < 0) {
                continue;
            }

            matched++;

            if ((best.len && !ngx_unit_has(&best, caseless, text, tlen))
                || (alts.n && !ngx_unit_any(&alts, caseless, text, tlen)))
            {
                if (missed++ == 0) {
                    printf("#   /%s/ (mode 0x%x) matches \"%.*s\" without "
                           "\"%.*s\" or its %u alternatives\n", pat, mode,
                           (int) tlen, text, (int) best.len, best.data,
                           (unsigned) alts.n);
                }
            }
        }

        pcre2_match_data_free(md);
        pcre2_code_free(re);
    }

    CHECK(matched > 1000, "random patterns: enough matches to tell");
    CHECK(needles > 1000, "random patterns: enough needles to tell");
    CHECK_INT(missed, 0, "random patterns: no match without the needle");

    if (ngx_unit_verbose()) {
        printf("# %u matches, %u patterns with a needle\n",
               (unsigned) matched, (unsigned) needles);
    }
}


int
main(void)
{
    test_literal();
    test_alts();
    test_caseless();
    test_caseless_places();
    test_against_pcre2();
    test_random();

    return ngx_unit_done("test_needle");
}
