
/*
 * The strings of JSON Schema that are not JSON: format as an assertion
 * (RFC 3339 dates and times, RFC 3986 URIs, hostnames, addresses,
 * pointers), and ECMA-262 patterns as PCRE reads them.  Pure functions of
 * a string and a pool.
 */


#include <ngx_config.h>
#include <ngx_core.h>
#include <cjson/cJSON.h>
#include <ctype.h>

#include "ngx_http_mcp_schema.h"
#include "ngx_http_mcp_schema_internal.h"


/* ECMA-262's white space and line terminators, as a class's inside */
#define NGX_HTTP_MCP_SCHEMA_ECMA_SPACE                                       \
    "\\s\\x{a0}\\x{1680}\\x{2000}-\\x{200a}\\x{2028}\\x{2029}"                \
    "\\x{202f}\\x{205f}\\x{3000}\\x{feff}"


static ngx_int_t ngx_http_mcp_schema_ecma(ngx_pool_t *pool,
    const char *pattern, ngx_str_t *out);
/*
 * format as an assertion (only where the caller asks: by default it is
 * an annotation).  NGX_OK, NGX_DECLINED, or NGX_OK for a format this
 * file does not know, as the format-assertion vocabulary allows.
 */

static ngx_uint_t ngx_http_mcp_schema_digits(const u_char **p, ngx_uint_t n,
    ngx_uint_t *value);
static ngx_uint_t ngx_http_mcp_schema_is_date(const u_char **p);
static ngx_uint_t ngx_http_mcp_schema_is_time(const u_char *p);
static ngx_uint_t ngx_http_mcp_schema_is_duration(const u_char *p);
static ngx_uint_t ngx_http_mcp_schema_is_hostname(const u_char *p,
    size_t len, ngx_uint_t idn);
static ngx_uint_t ngx_http_mcp_schema_is_email(const u_char *p,
    ngx_uint_t idn);
static ngx_uint_t ngx_http_mcp_schema_is_ipv4(const u_char *p, size_t len);
static ngx_uint_t ngx_http_mcp_schema_is_ipv6(const u_char *p, size_t len);
static ngx_uint_t ngx_http_mcp_schema_is_uri(const u_char *p,
    ngx_uint_t absolute, ngx_uint_t iri);
static ngx_uint_t ngx_http_mcp_schema_is_pointer(const u_char *p);
static ngx_uint_t ngx_http_mcp_schema_is_uuid(const u_char *p);
static ngx_uint_t ngx_http_mcp_schema_is_template(const u_char *p);
static ngx_uint_t ngx_http_mcp_schema_is_pcre_only(const u_char *p);
static ngx_int_t ngx_http_mcp_schema_bytes(ngx_regex_compile_t *rc);


ngx_int_t
ngx_http_mcp_schema_format(ngx_pool_t *pool, const char *format,
    const char *s)
{
    ngx_int_t      rc;
    ngx_uint_t     ok;
    const u_char  *p;

    p = (const u_char *) s;

    if (ngx_strcmp(format, "date-time") == 0) {
        ok = ngx_http_mcp_schema_is_date(&p)
             && (*p == 'T' || *p == 't')
             && ngx_http_mcp_schema_is_time(p + 1);

    } else if (ngx_strcmp(format, "date") == 0) {
        ok = ngx_http_mcp_schema_is_date(&p) && *p == '\0';

    } else if (ngx_strcmp(format, "time") == 0) {
        ok = ngx_http_mcp_schema_is_time(p);

    } else if (ngx_strcmp(format, "duration") == 0) {
        ok = ngx_http_mcp_schema_is_duration(p);

    } else if (ngx_strcmp(format, "email") == 0) {
        ok = ngx_http_mcp_schema_is_email(p, 0);

    } else if (ngx_strcmp(format, "idn-email") == 0) {
        ok = ngx_http_mcp_schema_is_email(p, 1);

    } else if (ngx_strcmp(format, "idn-hostname") == 0) {
        ok = ngx_http_mcp_schema_is_hostname(p, ngx_strlen(p), 1);

    } else if (ngx_strcmp(format, "hostname") == 0) {
        ok = ngx_http_mcp_schema_is_hostname(p, ngx_strlen(p), 0);

    } else if (ngx_strcmp(format, "ipv4") == 0) {
        ok = ngx_http_mcp_schema_is_ipv4(p, ngx_strlen(p));

    } else if (ngx_strcmp(format, "ipv6") == 0) {
        ok = ngx_http_mcp_schema_is_ipv6(p, ngx_strlen(p));

    } else if (ngx_strcmp(format, "uri") == 0) {
        ok = ngx_http_mcp_schema_is_uri(p, 1, 0);

    } else if (ngx_strcmp(format, "uri-reference") == 0) {
        ok = ngx_http_mcp_schema_is_uri(p, 0, 0);

    } else if (ngx_strcmp(format, "iri") == 0) {
        ok = ngx_http_mcp_schema_is_uri(p, 1, 1);

    } else if (ngx_strcmp(format, "iri-reference") == 0) {
        ok = ngx_http_mcp_schema_is_uri(p, 0, 1);

    } else if (ngx_strcmp(format, "uuid") == 0) {
        ok = ngx_http_mcp_schema_is_uuid(p);

    } else if (ngx_strcmp(format, "json-pointer") == 0) {
        ok = ngx_http_mcp_schema_is_pointer(p);

    } else if (ngx_strcmp(format, "relative-json-pointer") == 0) {
        ok = (*p >= '0' && *p <= '9');

        if (ok && *p == '0') {
            p++;

        } else {
            while (*p >= '0' && *p <= '9') {
                p++;
            }
        }

        ok = ok && ((p[0] == '#' && p[1] == '\0')
                    || ngx_http_mcp_schema_is_pointer(p));

    } else if (ngx_strcmp(format, "uri-template") == 0) {
        ok = ngx_http_mcp_schema_is_template(p);

    } else if (ngx_strcmp(format, "regex") == 0) {
        /* what PCRE takes and ECMA-262 does not */
        if (ngx_http_mcp_schema_is_pcre_only(p)) {
            return NGX_DECLINED;
        }

        rc = ngx_http_mcp_schema_regex(pool, s, NULL);

        if (rc == NGX_ERROR) {
            return rc;
        }

        ok = (rc == NGX_OK);

    } else {
        return NGX_OK;
    }

    return ok ? NGX_OK : NGX_DECLINED;
}


/* exactly n digits */

static ngx_uint_t
ngx_http_mcp_schema_digits(const u_char **p, ngx_uint_t n, ngx_uint_t *value)
{
    ngx_uint_t  i;

    *value = 0;

    for (i = 0; i < n; i++) {
        if ((*p)[i] < '0' || (*p)[i] > '9') {
            return 0;
        }

        *value = *value * 10 + ((*p)[i] - '0');
    }

    *p += n;

    return 1;
}


/* RFC 3339 full-date; *p is left after it */

static ngx_uint_t
ngx_http_mcp_schema_is_date(const u_char **p)
{
    ngx_uint_t  y, m, d, days;

    static ngx_uint_t  mdays[] = { 31, 29, 31, 30, 31, 30, 31, 31, 30, 31,
                                   30, 31 };

    if (!ngx_http_mcp_schema_digits(p, 4, &y) || *(*p)++ != '-'
        || !ngx_http_mcp_schema_digits(p, 2, &m) || *(*p)++ != '-'
        || !ngx_http_mcp_schema_digits(p, 2, &d)
        || m < 1 || m > 12 || d < 1)
    {
        return 0;
    }

    days = mdays[m - 1];

    if (m == 2 && !(y % 4 == 0 && (y % 100 != 0 || y % 400 == 0))) {
        days = 28;
    }

    return d <= days;
}


/* RFC 3339 full-time, a leap second only at 23:59:60 UTC */

static ngx_uint_t
ngx_http_mcp_schema_is_time(const u_char *p)
{
    ngx_int_t   minutes;
    ngx_uint_t  h, m, s, oh, om, sign;

    if (!ngx_http_mcp_schema_digits(&p, 2, &h) || *p++ != ':'
        || !ngx_http_mcp_schema_digits(&p, 2, &m) || *p++ != ':'
        || !ngx_http_mcp_schema_digits(&p, 2, &s)
        || h > 23 || m > 59 || s > 60)
    {
        return 0;
    }

    if (*p == '.') {
        p++;

        if (*p < '0' || *p > '9') {
            return 0;
        }

        while (*p >= '0' && *p <= '9') {
            p++;
        }
    }

    oh = 0;
    om = 0;
    sign = 0;

    if (*p == 'Z' || *p == 'z') {
        p++;

    } else if (*p == '+' || *p == '-') {
        sign = (*p++ == '-');

        if (!ngx_http_mcp_schema_digits(&p, 2, &oh) || *p++ != ':'
            || !ngx_http_mcp_schema_digits(&p, 2, &om) || oh > 23 || om > 59)
        {
            return 0;
        }

    } else {
        return 0;
    }

    if (*p != '\0') {
        return 0;
    }

    if (s == 60) {
        minutes = (ngx_int_t) (h * 60 + m)
                  + (sign ? 1 : -1) * (ngx_int_t) (oh * 60 + om);
        minutes = (minutes + 1440) % 1440;

        return minutes == 23 * 60 + 59;
    }

    return 1;
}


/* ISO 8601 duration as RFC 3339's appendix A has it */

static ngx_uint_t
ngx_http_mcp_schema_is_duration(const u_char *p)
{
    ngx_uint_t   any, time, weeks, order;
    const char  *units, *u;

    if (*p++ != 'P') {
        return 0;
    }

    any = 0;
    time = 0;
    weeks = 0;
    order = 0;
    units = "YMD";

    while (*p) {
        if (*p == 'T') {
            if (time || weeks) {
                return 0;
            }

            time = 1;
            units = "HMS";
            order = 0;
            p++;

            if (*p == '\0') {
                return 0;
            }

            continue;
        }

        if (*p < '0' || *p > '9') {
            return 0;
        }

        while (*p >= '0' && *p <= '9') {
            p++;
        }

        if (*p == 'W' && !time && !any) {
            weeks = 1;
            any = 1;
            p++;
            continue;
        }

        u = ngx_strchr(units + order, *p);

        if (*p == '\0' || u == NULL || weeks) {
            return 0;
        }

        /* each unit the next of the one before: P1Y2D lacks the months */
        if (order != 0 && u != units + order) {
            return 0;
        }

        order = u - units + 1;
        any = 1;
        p++;
    }

    return any && (!weeks || !time);
}


/*
 * RFC 1123 host names; with idn, any non-ASCII character counts as a
 * letter too: the IDNA 2008 rules for which code points may stand where
 * are not checked, nor are A-labels (xn--) decoded.
 */

static ngx_uint_t
ngx_http_mcp_schema_is_hostname(const u_char *p, size_t len, ngx_uint_t idn)
{
    size_t      label;
    ngx_uint_t  i;

    if (len == 0 || (len > 253 && !idn)) {
        return 0;
    }

    label = 0;

    for (i = 0; i < len; i++) {

        if (p[i] == '.') {
            if (label == 0 || p[i - 1] == '-') {
                return 0;
            }

            label = 0;
            continue;
        }

        if (!((p[i] >= 'a' && p[i] <= 'z') || (p[i] >= 'A' && p[i] <= 'Z')
              || (p[i] >= '0' && p[i] <= '9') || p[i] == '-'
              || (p[i] >= 0x80 && idn)))
        {
            return 0;
        }

        if (label == 0 && p[i] == '-') {
            return 0;
        }

        /* "--" in the 3rd and 4th places is for A-labels only */
        if (label == 3 && p[i] == '-' && p[i - 1] == '-'
            && !((p[i - 3] | 0x20) == 'x' && (p[i - 2] | 0x20) == 'n'))
        {
            return 0;
        }

        if (++label > 63 && !idn) {
            return 0;
        }
    }

    return label > 0 && p[len - 1] != '-';
}


static ngx_uint_t
ngx_http_mcp_schema_is_email(const u_char *p, ngx_uint_t idn)
{
    const u_char  *at, *q, *end;

    end = p + ngx_strlen(p);

    if (p[0] == '"') {
        /* a quoted local part: anything printable up to its quote */
        for (q = p + 1; *q && *q != '"'; q++) {
            if (*q == '\\' && q[1]) {
                q++;
            }
        }

        at = (*q == '"') ? q + 1 : NULL;

        if (at == NULL || *at != '@') {
            return 0;
        }

    } else {
        at = (const u_char *) ngx_strchr(p, '@');

        if (at == NULL || at == p || ngx_strchr(at + 1, '@') != NULL) {
            return 0;
        }

        if (p[0] == '.' || at[-1] == '.') {
            return 0;
        }

        for (q = p; q < at; q++) {
            if (*q <= 0x20 || (*q >= 0x7f && !idn)
                || ngx_strchr("()<>[]:;,\\\"", *q)
                || (*q == '.' && q[1] == '.'))
            {
                return 0;
            }
        }
    }

    q = at + 1;

    if (*q == '[' && end[-1] == ']') {
        if (ngx_strncmp(q + 1, "IPv6:", 5) == 0) {
            return ngx_http_mcp_schema_is_ipv6(q + 6, end - q - 7);
        }

        return ngx_http_mcp_schema_is_ipv4(q + 1, end - q - 2);
    }

    return ngx_http_mcp_schema_is_hostname(q, end - q, idn);
}


static ngx_uint_t
ngx_http_mcp_schema_is_ipv4(const u_char *p, size_t len)
{
    ngx_uint_t  parts, value, digits;
    size_t      i;

    parts = 0;
    value = 0;
    digits = 0;

    for (i = 0; i <= len; i++) {

        if (i == len || p[i] == '.') {
            if (digits == 0 || value > 255) {
                return 0;
            }

            parts++;
            value = 0;
            digits = 0;
            continue;
        }

        if (p[i] < '0' || p[i] > '9' || (digits == 1 && value == 0)) {
            return 0;
        }

        value = value * 10 + (p[i] - '0');
        digits++;
    }

    return parts == 4;
}


static ngx_uint_t
ngx_http_mcp_schema_is_ipv6(const u_char *p, size_t len)
{
    size_t      i, start;
    ngx_uint_t  groups, gap, digits;

    groups = 0;
    gap = 0;
    digits = 0;
    start = 0;

    if (len >= 2 && p[0] == ':' && p[1] == ':') {
        gap = 1;
        start = 2;

        if (len == 2) {
            return 1;
        }

    } else if (len > 0 && p[0] == ':') {
        return 0;
    }

    for (i = start; i < len; i++) {

        if (p[i] == ':') {
            if (digits == 0) {
                /* "::" once, and not after a group's colon twice */
                if (gap || i == 0 || p[i - 1] != ':') {
                    return 0;
                }

                gap = 1;
                continue;
            }

            groups++;
            digits = 0;

            if (i + 1 == len) {
                return 0;
            }

            continue;
        }

        if (p[i] == '.') {
            /* the last 32 bits as IPv4 */
            while (i > start && p[i - 1] != ':') {
                i--;
            }

            if (!ngx_http_mcp_schema_is_ipv4(p + i, len - i)) {
                return 0;
            }

            groups += 2;
            digits = 0;
            break;
        }

        if (!((p[i] >= '0' && p[i] <= '9') || ((p[i] | 0x20) >= 'a'
                                              && (p[i] | 0x20) <= 'f'))
            || ++digits > 4)
        {
            return 0;
        }
    }

    if (digits) {
        groups++;
    }

    return gap ? groups < 8 : groups == 8;
}


/*
 * RFC 3986 (3987 with iri): the characters, percent-escapes, a scheme
 * where one is needed, and the authority's parts: userinfo, one "@", an
 * IP literal in brackets, a numeric port.
 */

static ngx_uint_t
ngx_http_mcp_schema_is_uri(const u_char *p, ngx_uint_t absolute,
    ngx_uint_t iri)
{
    const u_char  *s, *q, *a, *end, *at, *host;

    s = p;

    while ((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z')
           || (s > p && ((*s >= '0' && *s <= '9') || *s == '+' || *s == '-'
                         || *s == '.')))
    {
        s++;
    }

    if (s > p && *s == ':') {
        s++;

    } else if (absolute) {
        return 0;

    } else {
        /* a relative-path reference: no ":" in its first segment */
        for (q = p; *q && *q != '/' && *q != '?' && *q != '#'; q++) {
            if (*q == ':') {
                return 0;
            }
        }

        s = p;
    }

    for (q = p; *q; q++) {

        if (*q == '%') {
            if (!isxdigit(q[1]) || !isxdigit(q[2])) {
                return 0;
            }

            q += 2;
            continue;
        }

        if (*q >= 0x80) {
            if (!iri) {
                return 0;
            }

            continue;
        }

        if (*q <= 0x20 || *q == 0x7f || ngx_strchr("\"<>\\^`{|}", *q)) {
            return 0;
        }
    }

    if (s[0] != '/' || s[1] != '/') {
        return ngx_strchr(s, '[') == NULL && ngx_strchr(s, ']') == NULL;
    }

    a = s + 2;

    for (end = a; *end && *end != '/' && *end != '?' && *end != '#'; end++) {
        /* void */
    }

    at = NULL;

    for (q = a; q < end; q++) {
        if (*q == '@') {
            if (at != NULL) {
                return 0;
            }

            at = q;
        }
    }

    host = a;

    if (at != NULL) {
        for (q = a; q < at; q++) {
            if (*q == '[' || *q == ']') {
                return 0;
            }
        }

        host = at + 1;
    }

    if (*host == '[') {
        for (q = host; q < end && *q != ']'; q++) { /* void */ }

        if (q == end) {
            return 0;
        }

        /* IPvFuture, "v" 1*HEXDIG "." 1*(...), or IPv6 */
        if ((host[1] | 0x20) == 'v') {
            if (!isxdigit(host[2]) || ngx_strchr(host, '.') == NULL) {
                return 0;
            }

        } else if (!ngx_http_mcp_schema_is_ipv6(host + 1, q - host - 1)) {
            return 0;
        }

        q++;

    } else {
        for (q = host; q < end && *q != ':'; q++) {
            if (*q == '[' || *q == ']') {
                return 0;
            }
        }
    }

    if (q < end && *q++ != ':') {
        return 0;
    }

    /* the port: digits only */
    for ( /* void */ ; q < end; q++) {
        if (*q < '0' || *q > '9') {
            return 0;
        }
    }

    return ngx_strchr(end, '[') == NULL && ngx_strchr(end, ']') == NULL;
}


static ngx_uint_t
ngx_http_mcp_schema_is_pointer(const u_char *p)
{
    if (*p != '\0' && *p != '/') {
        return 0;
    }

    for ( /* void */ ; *p; p++) {
        if (*p == '~' && p[1] != '0' && p[1] != '1') {
            return 0;
        }
    }

    return 1;
}


static ngx_uint_t
ngx_http_mcp_schema_is_uuid(const u_char *p)
{
    ngx_uint_t  i;

    for (i = 0; i < 36; i++) {
        if (i == 8 || i == 13 || i == 18 || i == 23) {
            if (p[i] != '-') {
                return 0;
            }

        } else if (!isxdigit(p[i])) {
            return 0;
        }
    }

    return p[36] == '\0';
}


/* RFC 6570: literals, and expressions of an operator and varspecs */

static ngx_uint_t
ngx_http_mcp_schema_is_template(const u_char *p)
{
    ngx_uint_t  digits, name;

    while (*p) {

        if (*p == '%') {
            if (!isxdigit(p[1]) || !isxdigit(p[2])) {
                return 0;
            }

            p += 3;
            continue;
        }

        if (*p != '{') {
            if (*p <= 0x20 || *p == 0x7f || ngx_strchr("\"<>\\^`|}", *p)) {
                return 0;
            }

            p++;
            continue;
        }

        p++;

        if (*p && ngx_strchr("+#./;?&", *p)) {
            p++;
        }

        for ( ;; ) {
            /* varname: varchars, single dots between them */
            name = 0;

            while ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z')
                   || (*p >= '0' && *p <= '9') || *p == '_' || *p == '%'
                   || (*p == '.' && name && p[1] != '.' && p[1] != '}'
                       && p[1] != ',' && p[1] != ':' && p[1] != '*'))
            {
                if (*p == '%') {
                    if (!isxdigit(p[1]) || !isxdigit(p[2])) {
                        return 0;
                    }

                    p += 2;
                }

                p++;
                name++;
            }

            if (name == 0) {
                return 0;
            }

            if (*p == ':') {
                p++;

                if (*p < '1' || *p > '9') {
                    return 0;
                }

                for (digits = 0; *p >= '0' && *p <= '9'; p++) {
                    digits++;
                }

                if (digits > 4) {
                    return 0;
                }

            } else if (*p == '*') {
                p++;
            }

            if (*p == ',') {
                p++;
                continue;
            }

            if (*p != '}') {
                return 0;
            }

            p++;
            break;
        }
    }

    return 1;
}


/*
 * Syntax of PCRE's that ECMA-262 has not: \a, Python's (?P...), comments
 * (?#...), and flags for the rest of the pattern, (?i).
 */

static ngx_uint_t
ngx_http_mcp_schema_is_pcre_only(const u_char *p)
{
    const u_char  *q;

    for ( /* void */ ; *p; p++) {

        if (p[0] == '\\' && p[1] != '\0') {
            if (p[1] == 'a') {
                return 1;
            }

            p++;
            continue;
        }

        if (p[0] != '(' || p[1] != '?') {
            continue;
        }

        if (p[2] == 'P' || p[2] == '#') {
            return 1;
        }

        for (q = p + 2; *q && ngx_strchr("imsx-", *q); q++) { /* void */ }

        if (q > p + 2 && *q == ')') {
            return 1;
        }
    }

    return 0;
}


/*
 * A pattern compiled: NGX_OK, NGX_DECLINED when it is no regular
 * expression (logged where a match needs it), NGX_ERROR.
 */

ngx_int_t
ngx_http_mcp_schema_regex(ngx_pool_t *pool, const char *pattern,
    ngx_regex_t **regex)
{
    u_char               errstr[NGX_MAX_CONF_ERRSTR];
    ngx_regex_compile_t  rc_re;

    ngx_memzero(&rc_re, sizeof(ngx_regex_compile_t));

    if (ngx_http_mcp_schema_ecma(pool, pattern, &rc_re.pattern) != NGX_OK) {
        return NGX_ERROR;
    }

    rc_re.pool = pool;
    rc_re.err.len = NGX_MAX_CONF_ERRSTR;
    rc_re.err.data = errstr;

    if (ngx_regex_compile(&rc_re) != NGX_OK
        && (ngx_http_mcp_schema_bytes(&rc_re) != NGX_OK))
    {
        if (regex != NULL) {
            ngx_log_error(NGX_LOG_ERR, ngx_cycle->log, 0,
                          "mcp: invalid pattern in a tool's schema: %V",
                          &rc_re.err);
        }

        return NGX_DECLINED;
    }

    if (regex != NULL) {
        *regex = rc_re.regex;
    }

    return NGX_OK;
}


/*
 * A PCRE built without Unicode refuses "(*UTF)": the pattern is then
 * read over bytes, as the module did before, rather than refused.
 */

static ngx_int_t
ngx_http_mcp_schema_bytes(ngx_regex_compile_t *rc)
{
    size_t  utf;

    utf = sizeof("(*UTF)") - 1;

    if (rc->pattern.len < utf
        || ngx_strncmp(rc->pattern.data, "(*UTF)", utf) != 0)
    {
        return NGX_DECLINED;
    }

    rc->pattern.data += utf;
    rc->pattern.len -= utf;
    rc->err.len = NGX_MAX_CONF_ERRSTR;

    return ngx_regex_compile(rc);
}


/*
 * An ECMA-262 pattern (with its "u" flag, as JSON Schema means it) as
 * PCRE reads it: over code points, not bytes, and with the long names of
 * Unicode general categories (\p{Letter}) the PCRE of Debian 12 does not
 * know spelled short.
 */

static ngx_http_mcp_schema_keyword_t  ngx_http_mcp_schema_categories[] = {
    { "Cased_Letter", 'L' | 'C' << 8 },
    { "Close_Punctuation", 'P' | 'e' << 8 },
    { "Connector_Punctuation", 'P' | 'c' << 8 },
    { "Control", 'C' | 'c' << 8 },
    { "Currency_Symbol", 'S' | 'c' << 8 },
    { "Dash_Punctuation", 'P' | 'd' << 8 },
    { "Decimal_Number", 'N' | 'd' << 8 },
    { "Enclosing_Mark", 'M' | 'e' << 8 },
    { "Final_Punctuation", 'P' | 'f' << 8 },
    { "Format", 'C' | 'f' << 8 },
    { "Initial_Punctuation", 'P' | 'i' << 8 },
    { "Letter", 'L' },
    { "Letter_Number", 'N' | 'l' << 8 },
    { "Line_Separator", 'Z' | 'l' << 8 },
    { "Lowercase_Letter", 'L' | 'l' << 8 },
    { "Mark", 'M' },
    { "Math_Symbol", 'S' | 'm' << 8 },
    { "Modifier_Letter", 'L' | 'm' << 8 },
    { "Modifier_Symbol", 'S' | 'k' << 8 },
    { "Nonspacing_Mark", 'M' | 'n' << 8 },
    { "Number", 'N' },
    { "Open_Punctuation", 'P' | 's' << 8 },
    { "Other", 'C' },
    { "Other_Letter", 'L' | 'o' << 8 },
    { "Other_Number", 'N' | 'o' << 8 },
    { "Other_Punctuation", 'P' | 'o' << 8 },
    { "Other_Symbol", 'S' | 'o' << 8 },
    { "Paragraph_Separator", 'Z' | 'p' << 8 },
    { "Private_Use", 'C' | 'o' << 8 },
    { "Punctuation", 'P' },
    { "Separator", 'Z' },
    { "Space_Separator", 'Z' | 's' << 8 },
    { "Spacing_Mark", 'M' | 'c' << 8 },
    { "Surrogate", 'C' | 's' << 8 },
    { "Symbol", 'S' },
    { "Titlecase_Letter", 'L' | 't' << 8 },
    { "Unassigned", 'C' | 'n' << 8 },
    { "Uppercase_Letter", 'L' | 'u' << 8 },
    { "Combining_Mark", 'M' },
    { "cntrl", 'C' | 'c' << 8 },
    { "digit", 'N' | 'd' << 8 },
    { "punct", 'P' },
    { NULL, 0 }
};


static ngx_int_t
ngx_http_mcp_schema_ecma(ngx_pool_t *pool, const char *pattern,
    ngx_str_t *out)
{
    u_char                         *p;
    size_t                          len, n;
    ngx_uint_t                      class;
    const char                     *s, *end;
    ngx_http_mcp_schema_keyword_t  *c;

    /* what a "\s" or "[" may grow to, at most */
    len = sizeof("(*UTF)") - 1;

    for (s = pattern; *s; s++) {
        len += (*s == '\\' || *s == '[')
               ? sizeof(NGX_HTTP_MCP_SCHEMA_ECMA_SPACE) + 4 : 1;
    }

    out->data = ngx_pnalloc(pool, len);
    if (out->data == NULL) {
        return NGX_ERROR;
    }

    p = ngx_cpymem(out->data, "(*UTF)", sizeof("(*UTF)") - 1);
    class = 0;

    for (s = pattern; *s; s++) {

        if (!class && s[0] == '[') {
            /* the empty classes PCRE reads otherwise: none, and any */
            if (s[1] == ']') {
                p = ngx_cpymem(p, "(?!)", 4);
                s++;
                continue;
            }

            if (s[1] == '^' && s[2] == ']') {
                p = ngx_cpymem(p, "[\\s\\S]", 6);
                s += 2;
                continue;
            }

            class = 1;
            *p++ = *s;

            if (s[1] == '^') {
                *p++ = *++s;
            }

            continue;
        }

        if (class && s[0] == ']') {
            class = 0;
            *p++ = *s;
            continue;
        }

        if (s[0] != '\\' || s[1] == '\0') {
            *p++ = *s;
            continue;
        }

        /* ECMA-262's \s is Unicode's white space, PCRE's ASCII's */
        if (s[1] == 's' || (s[1] == 'S' && !class)) {
            if (!class) {
                *p++ = '[';

                if (s[1] == 'S') {
                    *p++ = '^';
                }
            }

            p = ngx_cpymem(p, NGX_HTTP_MCP_SCHEMA_ECMA_SPACE,
                           sizeof(NGX_HTTP_MCP_SCHEMA_ECMA_SPACE) - 1);

            if (!class) {
                *p++ = ']';
            }

            s++;
            continue;
        }

        end = ((s[1] == 'p' || s[1] == 'P') && s[2] == '{')
              ? ngx_strchr(s + 3, '}') : NULL;

        if (end == NULL) {
            /* an escape: its next byte is no "\p" of its own */
            *p++ = *s++;
            *p++ = *s;
            continue;
        }

        /* General_Category=Letter, gc=Letter: the name alone */
        for (n = 3; s + n < end && s[n] != '='; n++) { /* void */ }

        n = (s + n < end) ? n + 1 : 3;

        for (c = ngx_http_mcp_schema_categories; c->name; c++) {
            if ((size_t) (end - s - n) == ngx_strlen(c->name)
                && ngx_strncmp(s + n, c->name, end - s - n) == 0)
            {
                break;
            }
        }

        if (c->name == NULL) {
            *p++ = *s;
            continue;
        }

        *p++ = '\\';
        *p++ = s[1];
        *p++ = '{';
        *p++ = (u_char) (c->offset & 0xff);

        if (c->offset >> 8) {
            *p++ = (u_char) (c->offset >> 8);
        }

        *p++ = '}';
        s = end;
    }

    out->len = p - out->data;

    return NGX_OK;
}
