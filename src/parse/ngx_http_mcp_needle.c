
/*
 * What every match of a regular expression holds, read from its text:
 * the guardrails' needles.  The reading follows PCRE2's syntax only as
 * far as it can be sure of it, and gives nothing where it is not.
 */


#include "ngx_http_mcp_needle.h"


static void ngx_http_mcp_needle_group(ngx_str_t *pattern, u_char *group,
    u_char **bars, ngx_uint_t nbars, u_char *close, u_char *buf,
    ngx_uint_t caseless, ngx_uint_t unicode,
    ngx_http_mcp_needle_alts_t *alts);
static void ngx_http_mcp_needle_run(ngx_str_t *best, u_char **run,
    size_t *n, ngx_uint_t *lit);
static u_char *ngx_http_mcp_needle_skip(u_char *p, u_char *last,
    u_char close);


/*
 * The longest run of literal characters at the top level of a pattern,
 * none of them quantified, into buf: each match holds it.  Read to be
 * sure, not to find much: any construct this does not follow (a "(?"
 * other than "(?:", a verb, \Q, \E, an alternation at the top level, a
 * POSIX class) gives no run at all, and an escape of a letter or digit
 * ends a run, with what such an escape takes after it (\x41, \p{Lu},
 * \k<name>, \cA) skipped.  A quantifier takes the character before it
 * out of its run.  Groups, classes, dots and assertions end a run.
 * Options set at the very start for the whole pattern ("(?i)", "(?is)")
 * are read, when they change no literal; caseless ("i"), the run is
 * kept in lower case, and a byte whose case partners a lower-case ASCII
 * needle cannot stand for ends it.
 */

void
ngx_http_mcp_needle_literal(ngx_str_t *pattern, u_char *buf, ngx_str_t *best,
    ngx_uint_t *caseless, ngx_uint_t unicode,
    ngx_http_mcp_needle_alts_t *alts)
{
    u_char      c, *p, *q, *last, *run, *group, *bars[NGX_HTTP_MCP_NEEDLE_ALTS];
    size_t      n;
    ngx_uint_t  depth, lit, i, nbars;

    p = pattern->data;
    last = p + pattern->len;

    /*
     * options set for the whole pattern at its start ("(?i)", "(?is)"):
     * those that change no literal, and "i"; any other "(?" gives none
     */
    if (last - p > 3 && p[0] == '(' && p[1] == '?') {
        i = *caseless;

        for (q = p + 2; q < last && *q != '\0' && *q != ')'; q++) {
            if (ngx_strchr("imnsJU", *q) == NULL) {
                break;
            }

            if (*q == 'i') {
                i = 1;
            }
        }

        if (q < last && *q == ')' && q > p + 2) {
            p = q + 1;
            *caseless = i;
        }
    }

    best->data = buf;
    best->len = 0;

    if (alts != NULL) {
        alts->n = 0;
        alts->shortest = 0;
    }

    run = buf;
    n = 0;
    depth = 0;
    lit = 0;
    group = NULL;
    nbars = 0;

    while (p < last) {
        c = *p++;

        if (c == '\\') {
            if (p == last) {
                goto none;
            }

            c = *p++;

            if (c < 0x80 && !ngx_http_mcp_needle_alnum(c)) {
                /* an escaped sign is that sign */
                if (depth == 0) {
                    run[n++] = c;
                    lit = 1;
                }

                continue;
            }

            if (c == 'Q' || c == 'E') {
                goto none;
            }

            if (depth == 0) {
                ngx_http_mcp_needle_run(best, &run, &n, &lit);
            }

            /* what the escape takes after it */
            switch (c) {

            case 'c':
                p++;
                break;

            case 'x':
            case 'o':
            case 'N':
            case 'p':
            case 'P':
            case 'g':
            case 'k':
                if (p < last && (*p == '{' || *p == '<' || *p == '\'')) {
                    p = ngx_http_mcp_needle_skip(p + 1, last,
                                                (*p == '{') ? '}'
                                                : (*p == '<') ? '>' : '\'');
                    if (p == NULL) {
                        goto none;
                    }

                    break;
                }

                if (c == 'p' || c == 'P') {
                    p++;
                    break;
                }

                while (p < last
                       && (ngx_http_mcp_needle_alnum(*p)
                           || *p == '+' || *p == '-'))
                {
                    p++;
                }

                break;

            default:
                while (c >= '0' && c <= '9' && p < last
                       && *p >= '0' && *p <= '9')
                {
                    p++;
                }
            }

            if (p > last) {
                goto none;
            }

            continue;
        }

        if (c == '[') {
            if (depth == 0) {
                ngx_http_mcp_needle_run(best, &run, &n, &lit);
            }

            if (p < last && *p == '^') {
                p++;
            }

            if (p < last && *p == ']') {
                p++;
            }

            for ( ;; ) {
                if (p >= last || *p == '[') {
                    goto none;
                }

                if (*p == '\\') {
                    if (p + 1 >= last || p[1] == 'Q' || p[1] == 'E') {
                        goto none;
                    }

                    p += 2;
                    continue;
                }

                if (*p++ == ']') {
                    break;
                }
            }

            continue;
        }

        if (c == '(') {
            if (p < last && (*p == '*' || (*p == '?' && (p + 1 == last
                                                         || p[1] != ':'))))
            {
                goto none;
            }

            if (depth == 0) {
                ngx_http_mcp_needle_run(best, &run, &n, &lit);

                /* where its first alternative begins */
                group = (p < last && *p == '?') ? p + 2 : p;
                nbars = 0;
            }

            depth++;
            continue;
        }

        if (c == ')') {
            if (depth == 0) {
                goto none;
            }

            /* a group of the top level that no quantifier can skip */
            if (--depth == 0 && alts != NULL
                && (p == last || ngx_strchr("*+?{", *p) == NULL))
            {
                ngx_http_mcp_needle_group(pattern, group, bars, nbars, p - 1,
                                          buf + pattern->len, *caseless,
                                          unicode, alts);
            }

            continue;
        }

        if (c == '|') {
            if (depth == 0) {
                goto none;
            }

            if (depth == 1) {
                /* too many alternatives: the group is not read */
                if (nbars < NGX_HTTP_MCP_NEEDLE_ALTS - 1) {
                    bars[nbars] = p - 1;
                }

                nbars++;
            }

            continue;
        }

        if (depth > 0) {
            continue;
        }

        if (c == '*' || c == '+' || c == '?' || c == '{') {

            if (c == '{') {
                /* {n}, {n,}, {n,m}, {,m}, spaces in them: else a sign */
                while (p < last
                       && ((*p >= '0' && *p <= '9') || *p == ','
                           || *p == ' ' || *p == '\t'))
                {
                    p++;
                }

                if (p == last) {
                    goto none;
                }

                if (*p == '}') {
                    p++;

                } else {
                    /* "{" as a sign: the run ends, nothing is taken out */
                    ngx_http_mcp_needle_run(best, &run, &n, &lit);
                    continue;
                }
            }

            if (lit) {
                n--;
            }

            ngx_http_mcp_needle_run(best, &run, &n, &lit);
            continue;
        }

        if (c == '.' || c == '^' || c == '$') {
            ngx_http_mcp_needle_run(best, &run, &n, &lit);
            continue;
        }

        if (*caseless) {
            /*
             * a byte outside ASCII may have case partners a lower-case
             * needle misses; under UTF or UCP so may "k" and "s" (the
             * Kelvin sign, the long s): such a byte ends the run
             */
            if (c >= 0x80
                || (unicode && ((c | 0x20) == 'k' || (c | 0x20) == 's')))
            {
                ngx_http_mcp_needle_run(best, &run, &n, &lit);
                continue;
            }

            c = ngx_tolower(c);
        }

        run[n++] = c;
        lit = 1;
    }

    if (depth == 0) {
        ngx_http_mcp_needle_run(best, &run, &n, &lit);
        return;
    }

none:

    best->len = 0;

    if (alts != NULL) {
        alts->n = 0;
    }
}


/*
 * A group's alternatives, [group, close) cut at bars, each read as a
 * pattern of its own: when each has a run and the shortest of them is
 * longer than that of the group kept so far, they are kept instead.  A
 * run is written where its alternative is in the pattern, in buf (the
 * second half of the reader's), so that the groups' runs do not meet.
 */

static void
ngx_http_mcp_needle_group(ngx_str_t *pattern, u_char *group, u_char **bars,
    ngx_uint_t nbars, u_char *close, u_char *buf, ngx_uint_t caseless,
    ngx_uint_t unicode, ngx_http_mcp_needle_alts_t *alts)
{
    u_char      *start, *end;
    ngx_str_t    alt, runs[NGX_HTTP_MCP_NEEDLE_ALTS];
    ngx_uint_t   i, ci;
    size_t       shortest;

    if (nbars >= NGX_HTTP_MCP_NEEDLE_ALTS) {
        return;
    }

    shortest = 0;

    for (i = 0; i <= nbars; i++) {
        start = (i == 0) ? group : bars[i - 1] + 1;
        end = (i == nbars) ? close : bars[i];

        alt.data = start;
        alt.len = end - start;
        ci = caseless;

        ngx_http_mcp_needle_literal(&alt, buf + (start - pattern->data),
                                    &runs[i], &ci, unicode, NULL);

        if (runs[i].len == 0) {
            return;
        }

        if (i == 0 || runs[i].len < shortest) {
            shortest = runs[i].len;
        }
    }

    if (shortest <= alts->shortest) {
        return;
    }

    for (i = 0; i <= nbars; i++) {
        alts->runs[i] = runs[i];
    }

    alts->n = nbars + 1;
    alts->shortest = shortest;
}


/* the run ends: the longest so far is kept, the next begins after it */

static void
ngx_http_mcp_needle_run(ngx_str_t *best, u_char **run, size_t *n,
    ngx_uint_t *lit)
{
    if (*n > best->len) {
        best->data = *run;
        best->len = *n;
    }

    *run += *n;
    *n = 0;
    *lit = 0;
}


/* past the first close in [p, last), or NULL */

static u_char *
ngx_http_mcp_needle_skip(u_char *p, u_char *last, u_char close)
{
    p = ngx_strlchr(p, last, close);

    return (p != NULL) ? p + 1 : NULL;
}


/*
 * A caseless needle: the byte at rare found in either case by memchr()
 * (two streams, the nearer taken first), then the whole compared with
 * the text's ASCII letters folded to lower case.  Bytes outside ASCII
 * are compared as they are: a needle holds none.
 */

ngx_uint_t
ngx_http_mcp_needle_caseless(u_char *needle, size_t len, size_t rare,
    u_char *s, size_t slen)
{
    u_char  c, uc, *p, *q, *lo, *up, *last;
    size_t  i;

    if (len == 0 || len > slen) {
        return len == 0;
    }

    /* where the rare byte can be */
    p = s + rare;
    last = s + (slen - len) + rare + 1;

    c = needle[rare];
    uc = (c >= 'a' && c <= 'z') ? (u_char) (c & ~0x20) : c;

    lo = memchr(p, c, last - p);
    up = (uc != c) ? memchr(p, uc, last - p) : NULL;

    while (lo != NULL || up != NULL) {

        if (up == NULL || (lo != NULL && lo < up)) {
            q = lo;
            lo = memchr(q + 1, c, last - (q + 1));

        } else {
            q = up;
            up = memchr(q + 1, uc, last - (q + 1));
        }

        q -= rare;

        for (i = 0; i < len; i++) {
            if (ngx_tolower(q[i]) != needle[i]) {
                break;
            }
        }

        if (i == len) {
            return 1;
        }
    }

    return 0;
}
