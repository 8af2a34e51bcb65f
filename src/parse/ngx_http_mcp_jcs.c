
/*
 * RFC 8785, the JSON Canonicalization Scheme.  A value is written as
 * ECMAScript's JSON.stringify() writes it once every object's members
 * are sorted by their names as UTF-16 code units (what JavaScript's
 * sort() compares): so a pin made by a script of a few lines in any
 * JavaScript runtime (tools/mcp-pin.mjs) is the pin computed here.
 *
 * Numbers are read as doubles (cJSON, like JSON.parse(), keeps no more)
 * and printed in the fewest digits that read back as the same double,
 * in ECMAScript's Number::toString form: digits, a point or zeros as
 * the exponent places them, and an exponent past 21 digits or below
 * 10^-6.
 */


#include "ngx_http_mcp_jcs.h"

#include <openssl/sha.h>


typedef struct {
    ngx_pool_t  *pool;
    u_char      *start;
    u_char      *pos;
    u_char      *end;
} ngx_http_mcp_jcs_buf_t;


static ngx_int_t ngx_http_mcp_jcs_value(ngx_http_mcp_jcs_buf_t *b,
    cJSON *json, ngx_uint_t depth);
static ngx_int_t ngx_http_mcp_jcs_object(ngx_http_mcp_jcs_buf_t *b,
    cJSON *json, ngx_uint_t depth);
static int ngx_http_mcp_jcs_cmp(const void *one, const void *two);
static ngx_uint_t ngx_http_mcp_jcs_unit(u_char **p, ngx_uint_t *low);
static ngx_int_t ngx_http_mcp_jcs_string(ngx_http_mcp_jcs_buf_t *b,
    const char *s);
static ngx_int_t ngx_http_mcp_jcs_number(ngx_http_mcp_jcs_buf_t *b,
    double d);
static ngx_int_t ngx_http_mcp_jcs_put(ngx_http_mcp_jcs_buf_t *b,
    const void *data, size_t len);


/* the deepest value written: the module's parser refuses deeper ones */
#define NGX_HTTP_MCP_JCS_DEPTH  512


u_char *
ngx_http_mcp_jcs(ngx_pool_t *pool, cJSON *json, size_t *len)
{
    ngx_http_mcp_jcs_buf_t  b;

    b.pool = pool;
    b.start = NULL;
    b.pos = NULL;
    b.end = NULL;

    if (ngx_http_mcp_jcs_value(&b, json, 0) != NGX_OK) {
        return NULL;
    }

    *len = b.pos - b.start;

    return b.start;
}


ngx_int_t
ngx_http_mcp_jcs_digest(ngx_pool_t *pool, cJSON *json, u_char *digest)
{
    u_char      *text;
    size_t       len;
    SHA256_CTX   sha;

    text = ngx_http_mcp_jcs(pool, json, &len);
    if (text == NULL) {
        return NGX_ERROR;
    }

    /*
     * Not SHA256(): in OpenSSL 3 that fetches the algorithm from the
     * provider store on every call (locks, a name lookup), some 3,000
     * instructions a call (callgrind), more than hashing a short field.
     */

    if (SHA256_Init(&sha) != 1
        || SHA256_Update(&sha, text, len) != 1
        || SHA256_Final(digest, &sha) != 1)
    {
        return NGX_ERROR;
    }

    return NGX_OK;
}


static ngx_int_t
ngx_http_mcp_jcs_value(ngx_http_mcp_jcs_buf_t *b, cJSON *json,
    ngx_uint_t depth)
{
    cJSON  *item;

    if (json == NULL || depth > NGX_HTTP_MCP_JCS_DEPTH) {
        return NGX_ERROR;
    }

    switch (json->type & 0xff) {

    case cJSON_NULL:
        return ngx_http_mcp_jcs_put(b, "null", 4);

    case cJSON_True:
        return ngx_http_mcp_jcs_put(b, "true", 4);

    case cJSON_False:
        return ngx_http_mcp_jcs_put(b, "false", 5);

    case cJSON_Number:
        return ngx_http_mcp_jcs_number(b, json->valuedouble);

    case cJSON_String:
        return ngx_http_mcp_jcs_string(b, json->valuestring);

    case cJSON_Array:
        if (ngx_http_mcp_jcs_put(b, "[", 1) != NGX_OK) {
            return NGX_ERROR;
        }

        for (item = json->child; item; item = item->next) {
            if ((item != json->child && ngx_http_mcp_jcs_put(b, ",", 1)
                                        != NGX_OK)
                || ngx_http_mcp_jcs_value(b, item, depth + 1) != NGX_OK)
            {
                return NGX_ERROR;
            }
        }

        return ngx_http_mcp_jcs_put(b, "]", 1);

    case cJSON_Object:
        return ngx_http_mcp_jcs_object(b, json, depth);

    default:
        /* a raw text: nothing the module's parser makes */
        return NGX_ERROR;
    }
}


static ngx_int_t
ngx_http_mcp_jcs_object(ngx_http_mcp_jcs_buf_t *b, cJSON *json,
    ngx_uint_t depth)
{
    cJSON       *item, **members;
    ngx_uint_t   i, n;

    n = 0;

    for (item = json->child; item; item = item->next) {
        n++;
    }

    members = ngx_palloc(b->pool, (n ? n : 1) * sizeof(cJSON *));
    if (members == NULL) {
        return NGX_ERROR;
    }

    for (i = 0, item = json->child; item; item = item->next) {
        members[i++] = item;
    }

    qsort(members, n, sizeof(cJSON *), ngx_http_mcp_jcs_cmp);

    if (ngx_http_mcp_jcs_put(b, "{", 1) != NGX_OK) {
        return NGX_ERROR;
    }

    for (i = 0; i < n; i++) {
        if ((i && ngx_http_mcp_jcs_put(b, ",", 1) != NGX_OK)
            || ngx_http_mcp_jcs_string(b, members[i]->string) != NGX_OK
            || ngx_http_mcp_jcs_put(b, ":", 1) != NGX_OK
            || ngx_http_mcp_jcs_value(b, members[i], depth + 1) != NGX_OK)
        {
            return NGX_ERROR;
        }
    }

    return ngx_http_mcp_jcs_put(b, "}", 1);
}


/* two members by their names' UTF-16 code units */

static int
ngx_http_mcp_jcs_cmp(const void *one, const void *two)
{
    u_char      *a, *b;
    ngx_uint_t   ua, ub, la, lb;

    a = (u_char *) (*(cJSON **) one)->string;
    b = (u_char *) (*(cJSON **) two)->string;
    la = 0;
    lb = 0;

    for ( ;; ) {
        ua = ngx_http_mcp_jcs_unit(&a, &la);
        ub = ngx_http_mcp_jcs_unit(&b, &lb);

        if (ua != ub) {
            return (ua < ub) ? -1 : 1;
        }

        if (ua == 0) {
            return 0;
        }
    }
}


/*
 * The next UTF-16 code unit of a UTF-8 text, 0 at its end; *low holds
 * the second half of a pair until it is read.  The text is valid UTF-8:
 * the module's parser made it.
 */

static ngx_uint_t
ngx_http_mcp_jcs_unit(u_char **p, ngx_uint_t *low)
{
    u_char      *s;
    ngx_uint_t   c, unit;

    if (*low) {
        unit = *low;
        *low = 0;
        return unit;
    }

    s = *p;

    if (*s == '\0') {
        return 0;
    }

    if (*s < 0x80) {
        c = *s++;

    } else if ((*s & 0xe0) == 0xc0) {
        c = ((ngx_uint_t) (s[0] & 0x1f) << 6) | (s[1] & 0x3f);
        s += 2;

    } else if ((*s & 0xf0) == 0xe0) {
        c = ((ngx_uint_t) (s[0] & 0x0f) << 12)
            | ((ngx_uint_t) (s[1] & 0x3f) << 6) | (s[2] & 0x3f);
        s += 3;

    } else {
        c = ((ngx_uint_t) (s[0] & 0x07) << 18)
            | ((ngx_uint_t) (s[1] & 0x3f) << 12)
            | ((ngx_uint_t) (s[2] & 0x3f) << 6) | (s[3] & 0x3f);
        s += 4;
    }

    *p = s;

    if (c < 0x10000) {
        return c;
    }

    c -= 0x10000;
    *low = 0xdc00 + (c & 0x3ff);

    return 0xd800 + (c >> 10);
}


/* as JSON.stringify(): the two escapes JSON needs, and control bytes */

static ngx_int_t
ngx_http_mcp_jcs_string(ngx_http_mcp_jcs_buf_t *b, const char *s)
{
    u_char       esc[6];
    const char  *p, *run;

    static u_char  hex[] = "0123456789abcdef";

    if (ngx_http_mcp_jcs_put(b, "\"", 1) != NGX_OK) {
        return NGX_ERROR;
    }

    run = s;

    for (p = s; *p; p++) {

        if ((u_char) *p >= 0x20 && *p != '"' && *p != '\\') {
            continue;
        }

        if (ngx_http_mcp_jcs_put(b, run, p - run) != NGX_OK) {
            return NGX_ERROR;
        }

        esc[0] = '\\';

        switch (*p) {
        case '"':  esc[1] = '"';  break;
        case '\\': esc[1] = '\\'; break;
        case '\b': esc[1] = 'b';  break;
        case '\f': esc[1] = 'f';  break;
        case '\n': esc[1] = 'n';  break;
        case '\r': esc[1] = 'r';  break;
        case '\t': esc[1] = 't';  break;

        default:
            esc[1] = 'u';
            esc[2] = '0';
            esc[3] = '0';
            esc[4] = hex[((u_char) *p) >> 4];
            esc[5] = hex[((u_char) *p) & 0xf];

            if (ngx_http_mcp_jcs_put(b, esc, 6) != NGX_OK) {
                return NGX_ERROR;
            }

            run = p + 1;
            continue;
        }

        if (ngx_http_mcp_jcs_put(b, esc, 2) != NGX_OK) {
            return NGX_ERROR;
        }

        run = p + 1;
    }

    if (ngx_http_mcp_jcs_put(b, run, p - run) != NGX_OK) {
        return NGX_ERROR;
    }

    return ngx_http_mcp_jcs_put(b, "\"", 1);
}


/* ECMAScript's Number::toString(d), d finite */

static ngx_int_t
ngx_http_mcp_jcs_number(ngx_http_mcp_jcs_buf_t *b, double d)
{
    int      k, n, p, i;
    char     sci[32], digits[24], out[40], *e, *o;

    if (d == 0) {
        /* -0 too */
        return ngx_http_mcp_jcs_put(b, "0", 1);
    }

    if (d != d || d - d != 0) {
        /* NaN or an infinity: no JSON has them */
        return NGX_ERROR;
    }

    /* the fewest significant digits that read back as d */
    for (p = 1; p <= 17; p++) {
        snprintf(sci, sizeof(sci), "%.*e", p - 1, d);

        if (strtod(sci, NULL) == d) {
            break;
        }
    }

    /* "-d.ddde+XX": the digits, and n, where the point goes */
    o = sci;
    k = 0;

    if (*o == '-') {
        o++;
    }

    for ( /* void */ ; *o != 'e'; o++) {
        if (*o != '.') {
            digits[k++] = *o;
        }
    }

    n = atoi(o + 1) + 1;

    while (k > 1 && digits[k - 1] == '0') {
        k--;
    }

    e = out;

    if (d < 0) {
        *e++ = '-';
    }

    if (k <= n && n <= 21) {
        e = (char *) ngx_cpymem(e, digits, k);

        for (i = k; i < n; i++) {
            *e++ = '0';
        }

    } else if (0 < n && n <= 21) {
        e = (char *) ngx_cpymem(e, digits, n);
        *e++ = '.';
        e = (char *) ngx_cpymem(e, digits + n, k - n);

    } else if (-6 < n && n <= 0) {
        *e++ = '0';
        *e++ = '.';

        for (i = 0; i < -n; i++) {
            *e++ = '0';
        }

        e = (char *) ngx_cpymem(e, digits, k);

    } else {
        *e++ = digits[0];

        if (k > 1) {
            *e++ = '.';
            e = (char *) ngx_cpymem(e, digits + 1, k - 1);
        }

        e += snprintf(e, out + sizeof(out) - e, "e%c%d",
                      n - 1 < 0 ? '-' : '+', n - 1 < 0 ? 1 - n : n - 1);
    }

    return ngx_http_mcp_jcs_put(b, out, e - out);
}


static ngx_int_t
ngx_http_mcp_jcs_put(ngx_http_mcp_jcs_buf_t *b, const void *data, size_t len)
{
    u_char  *p;
    size_t   size;

    if ((size_t) (b->end - b->pos) < len) {
        size = ngx_max(2 * (size_t) (b->end - b->start),
                       (size_t) (b->pos - b->start) + len);
        size = ngx_max(size, 256);

        p = ngx_pnalloc(b->pool, size);
        if (p == NULL) {
            return NGX_ERROR;
        }

        if (b->start != NULL) {
            ngx_memcpy(p, b->start, b->pos - b->start);
        }

        b->pos = p + (b->pos - b->start);
        b->start = p;
        b->end = p + size;
    }

    if (len) {
        b->pos = ngx_cpymem(b->pos, data, len);
    }

    return NGX_OK;
}
