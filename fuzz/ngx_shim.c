
/*
 * Just enough of nginx's core for the module's pure parsers to run in a
 * fuzzer without nginx: pools over malloc (one malloc per allocation, so
 * AddressSanitizer sees every overrun) with their cleanups, arrays, the
 * string helpers the parsers call, a subset of ngx_vslprintf(), base64url,
 * and ngx_regex over PCRE2.  The semantics follow src/core/ngx_array.c,
 * ngx_palloc.c, ngx_string.c and ngx_regex.c of nginx 1.22.  Logging is
 * off: ngx_cycle's log has level 0 and the log functions do nothing.
 */


#include <ngx_config.h>
#include <ngx_core.h>

#include "ngx_shim.h"


static void ngx_shim_regex_cleanup(void *data);


static ngx_log_t    ngx_shim_log;
static ngx_cycle_t  ngx_shim_cycle = { .log = &ngx_shim_log };

volatile ngx_cycle_t  *ngx_cycle = &ngx_shim_cycle;


ngx_pool_t *
ngx_shim_pool_create(void)
{
    return calloc(1, sizeof(ngx_pool_t));
}


/* an exact-size copy of the input: reading past it is an ASan report */

u_char *
ngx_shim_copy(ngx_pool_t *pool, const uint8_t *data, size_t size)
{
    u_char  *p;

    p = ngx_pnalloc(pool, size);
    if (p == NULL) {
        return NULL;
    }

    ngx_memcpy(p, data, size);

    return p;
}


/*
 * the input split at its first LF into two exact-size copies, each an
 * allocation of its own (an overrun of either is an ASan report): NGX_OK,
 * NGX_DECLINED when there is no LF, NGX_ERROR when out of memory
 */

ngx_int_t
ngx_shim_split(ngx_pool_t *pool, const uint8_t *data, size_t size,
    ngx_str_t *first, ngx_str_t *rest)
{
    const uint8_t  *nl;

    nl = memchr(data, '\n', size);
    if (nl == NULL) {
        return NGX_DECLINED;
    }

    first->len = nl - data;
    first->data = ngx_shim_copy(pool, data, first->len);

    rest->len = size - first->len - 1;
    rest->data = ngx_shim_copy(pool, nl + 1, rest->len);

    if (first->data == NULL || rest->data == NULL) {
        return NGX_ERROR;
    }

    return NGX_OK;
}


void
ngx_shim_pool_destroy(ngx_pool_t *pool)
{
    ngx_pool_large_t    *l, *next;
    ngx_pool_cleanup_t  *c;

    for (c = pool->cleanup; c; c = c->next) {
        if (c->handler) {
            c->handler(c->data);
        }
    }

    for (l = pool->large; l; l = next) {
        next = l->next;
        free(l->alloc);
        free(l);
    }

    free(pool);
}


void *
ngx_palloc(ngx_pool_t *pool, size_t size)
{
    ngx_pool_large_t  *l;

    l = malloc(sizeof(ngx_pool_large_t));
    if (l == NULL) {
        return NULL;
    }

    /* malloc(0) may return NULL, which the callers take for failure */
    l->alloc = malloc(size ? size : 1);
    if (l->alloc == NULL) {
        free(l);
        return NULL;
    }

    l->next = pool->large;
    pool->large = l;

    return l->alloc;
}


void *
ngx_pnalloc(ngx_pool_t *pool, size_t size)
{
    return ngx_palloc(pool, size);
}


void *
ngx_pcalloc(ngx_pool_t *pool, size_t size)
{
    void  *p;

    p = ngx_palloc(pool, size);
    if (p != NULL) {
        ngx_memzero(p, size);
    }

    return p;
}


ngx_pool_cleanup_t *
ngx_pool_cleanup_add(ngx_pool_t *p, size_t size)
{
    ngx_pool_cleanup_t  *c;

    c = ngx_palloc(p, sizeof(ngx_pool_cleanup_t));
    if (c == NULL) {
        return NULL;
    }

    if (size) {
        c->data = ngx_palloc(p, size);
        if (c->data == NULL) {
            return NULL;
        }

    } else {
        c->data = NULL;
    }

    c->handler = NULL;
    c->next = p->cleanup;

    p->cleanup = c;

    return c;
}


ngx_array_t *
ngx_array_create(ngx_pool_t *p, ngx_uint_t n, size_t size)
{
    ngx_array_t  *a;

    a = ngx_palloc(p, sizeof(ngx_array_t));
    if (a == NULL) {
        return NULL;
    }

    if (ngx_array_init(a, p, n, size) != NGX_OK) {
        return NULL;
    }

    return a;
}


void *
ngx_array_push(ngx_array_t *a)
{
    return ngx_array_push_n(a, 1);
}


void *
ngx_array_push_n(ngx_array_t *a, ngx_uint_t n)
{
    void        *elt, *new;
    ngx_uint_t   nalloc;

    if (a->nelts + n > a->nalloc) {
        nalloc = 2 * ((n >= a->nalloc) ? n : a->nalloc);

        new = ngx_palloc(a->pool, nalloc * a->size);
        if (new == NULL) {
            return NULL;
        }

        ngx_memcpy(new, a->elts, a->nelts * a->size);
        a->elts = new;
        a->nalloc = nalloc;
    }

    elt = (u_char *) a->elts + a->size * a->nelts;
    a->nelts += n;

    return elt;
}


void *
ngx_alloc(size_t size, ngx_log_t *log)
{
    return malloc(size);
}


/*
 * A UTF-8 sequence at *p, as nginx's ngx_utf8_decode() answers: the code
 * point; 0xffffffff for an invalid sequence (one byte consumed);
 * 0xfffffffe when the n bytes end inside the sequence (none consumed).
 * Overlong forms are invalid.
 */

uint32_t
ngx_utf8_decode(u_char **p, size_t n)
{
    size_t    len, i;
    uint32_t  u, min;
    u_char   *s;

    s = *p;
    u = s[0];

    if (u >= 0xf8 || u < 0xc2) {
        (*p)++;
        return 0xffffffff;
    }

    if (u >= 0xf0) {
        len = 4;
        u &= 0x07;
        min = 0x10000;

    } else if (u >= 0xe0) {
        len = 3;
        u &= 0x0f;
        min = 0x800;

    } else {
        len = 2;
        u &= 0x1f;
        min = 0x80;
    }

    if (n < len) {
        return 0xfffffffe;
    }

    for (i = 1; i < len; i++) {
        if ((s[i] & 0xc0) != 0x80) {
            (*p)++;
            return 0xffffffff;
        }

        u = (u << 6) | (s[i] & 0x3f);
    }

    if (u < min) {
        (*p)++;
        return 0xffffffff;
    }

    *p += len;

    return u;
}


ngx_int_t
ngx_atoi(u_char *line, size_t n)
{
    ngx_int_t  value, cutoff, cutlim;

    if (n == 0) {
        return NGX_ERROR;
    }

    cutoff = NGX_MAX_INT_T_VALUE / 10;
    cutlim = NGX_MAX_INT_T_VALUE % 10;

    for (value = 0; n--; line++) {
        if (*line < '0' || *line > '9') {
            return NGX_ERROR;
        }

        if (value >= cutoff && (value > cutoff || *line - '0' > cutlim)) {
            return NGX_ERROR;
        }

        value = value * 10 + (*line - '0');
    }

    return value;
}


ngx_int_t
ngx_hextoi(u_char *line, size_t n)
{
    u_char     c, ch;
    ngx_int_t  value, cutoff;

    if (n == 0) {
        return NGX_ERROR;
    }

    cutoff = NGX_MAX_INT_T_VALUE / 16;

    for (value = 0; n--; line++) {
        if (value > cutoff) {
            return NGX_ERROR;
        }

        ch = *line;

        if (ch >= '0' && ch <= '9') {
            value = value * 16 + (ch - '0');
            continue;
        }

        c = (u_char) (ch | 0x20);

        if (c >= 'a' && c <= 'f') {
            value = value * 16 + (c - 'a' + 10);
            continue;
        }

        return NGX_ERROR;
    }

    return value;
}


u_char *
ngx_hex_dump(u_char *dst, u_char *src, size_t len)
{
    static u_char  hex[] = "0123456789abcdef";

    while (len--) {
        *dst++ = hex[*src >> 4];
        *dst++ = hex[*src++ & 0xf];
    }

    return dst;
}


/* s2 (n + 1 bytes, as nginx counts) in s1..last, case-insensitive */

u_char *
ngx_strlcasestrn(u_char *s1, u_char *last, u_char *s2, size_t n)
{
    size_t  i;

    n++;

    for ( /* void */ ; (size_t) (last - s1) >= n; s1++) {

        for (i = 0; i < n; i++) {
            if (ngx_tolower(s1[i]) != ngx_tolower(s2[i])) {
                break;
            }
        }

        if (i == n) {
            return s1;
        }
    }

    return NULL;
}


u_char *
ngx_cpystrn(u_char *dst, u_char *src, size_t n)
{
    if (n == 0) {
        return dst;
    }

    while (--n) {
        *dst = *src;

        if (*dst == '\0') {
            return dst;
        }

        dst++;
        src++;
    }

    *dst = '\0';

    return dst;
}


u_char *
ngx_pstrdup(ngx_pool_t *pool, ngx_str_t *src)
{
    u_char  *dst;

    dst = ngx_pnalloc(pool, src->len);
    if (dst == NULL) {
        return NULL;
    }

    ngx_memcpy(dst, src->data, src->len);

    return dst;
}


u_char * ngx_cdecl
ngx_sprintf(u_char *buf, const char *fmt, ...)
{
    u_char   *p;
    va_list   args;

    va_start(args, fmt);
    p = ngx_vslprintf(buf, (void *) -1, fmt, args);
    va_end(args);

    return p;
}


u_char * ngx_cdecl
ngx_snprintf(u_char *buf, size_t max, const char *fmt, ...)
{
    u_char   *p;
    va_list   args;

    va_start(args, fmt);
    p = ngx_vslprintf(buf, buf + max, fmt, args);
    va_end(args);

    return p;
}


u_char * ngx_cdecl
ngx_slprintf(u_char *buf, u_char *last, const char *fmt, ...)
{
    u_char   *p;
    va_list   args;

    va_start(args, fmt);
    p = ngx_vslprintf(buf, last, fmt, args);
    va_end(args);

    return p;
}


/*
 * The conversions the module's pure files use: %V, %s, %*s, %d, %i,
 * %ui, %uz, %z, %L, %c, %%.  Widths, %f, %p and the rest abort, so a new
 * use shows up as a crash rather than as quietly wrong text.
 */

u_char *
ngx_vslprintf(u_char *buf, u_char *last, const char *fmt, va_list args)
{
    u_char      *p, tmp[NGX_INT64_LEN + 1];
    size_t       len, slen;
    int64_t      i64;
    uint64_t     ui64;
    ngx_str_t   *v;
    ngx_uint_t   sign;

    while (*fmt && buf < last) {

        if (*fmt != '%') {
            *buf++ = *fmt++;
            continue;
        }

        fmt++;
        sign = 1;
        slen = (size_t) -1;

        if (*fmt == '*') {
            slen = va_arg(args, size_t);
            fmt++;
        }

        if (*fmt == 'u') {
            sign = 0;
            fmt++;
        }

        switch (*fmt) {

        case 'V':
            v = va_arg(args, ngx_str_t *);
            len = ngx_min((size_t) (last - buf), v->len);
            buf = ngx_cpymem(buf, v->data, len);
            fmt++;
            continue;

        case 's':
            p = va_arg(args, u_char *);

            while (slen-- && *p && buf < last) {
                *buf++ = *p++;
            }

            fmt++;
            continue;

        case 'c':
            *buf++ = (u_char) va_arg(args, int);
            fmt++;
            continue;

        case '%':
            *buf++ = '%';
            fmt++;
            continue;

        case 'd':
            i64 = sign ? (int64_t) va_arg(args, int)
                       : (int64_t) va_arg(args, u_int);
            break;

        case 'i':
            i64 = sign ? (int64_t) va_arg(args, ngx_int_t)
                       : (int64_t) va_arg(args, ngx_uint_t);
            break;

        case 'z':
            i64 = sign ? (int64_t) va_arg(args, ssize_t)
                       : (int64_t) va_arg(args, size_t);
            break;

        case 'L':
            i64 = sign ? va_arg(args, int64_t)
                       : (int64_t) va_arg(args, uint64_t);
            break;

        default:
            abort();
        }

        fmt++;

        if (sign && i64 < 0) {
            *buf++ = '-';
            ui64 = (uint64_t) -i64;

        } else {
            ui64 = (uint64_t) i64;
        }

        p = tmp + NGX_INT64_LEN;

        do {
            *--p = (u_char) (ui64 % 10 + '0');
        } while (ui64 /= 10);

        len = tmp + NGX_INT64_LEN - p;
        len = ngx_min((size_t) (last - buf), len);
        buf = ngx_cpymem(buf, p, len);
    }

    return buf;
}


/* as nginx's: the alphabet, and whether to pad */

static void
ngx_shim_encode_base64(ngx_str_t *dst, ngx_str_t *src, const u_char *basis,
    ngx_uint_t padding)
{
    u_char  *d, *s;
    size_t   len;

    len = src->len;
    s = src->data;
    d = dst->data;

    while (len > 2) {
        *d++ = basis[(s[0] >> 2) & 0x3f];
        *d++ = basis[((s[0] & 3) << 4) | (s[1] >> 4)];
        *d++ = basis[((s[1] & 0x0f) << 2) | (s[2] >> 6)];
        *d++ = basis[s[2] & 0x3f];

        s += 3;
        len -= 3;
    }

    if (len) {
        *d++ = basis[(s[0] >> 2) & 0x3f];

        if (len == 1) {
            *d++ = basis[(s[0] & 3) << 4];

            if (padding) {
                *d++ = '=';
            }

        } else {
            *d++ = basis[((s[0] & 3) << 4) | (s[1] >> 4)];
            *d++ = basis[(s[1] & 0x0f) << 2];
        }

        if (padding) {
            *d++ = '=';
        }
    }

    dst->len = d - dst->data;
}


void
ngx_encode_base64(ngx_str_t *dst, ngx_str_t *src)
{
    static u_char  basis[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
                             "abcdefghijklmnopqrstuvwxyz0123456789+/";

    ngx_shim_encode_base64(dst, src, basis, 1);
}


void
ngx_encode_base64url(ngx_str_t *dst, ngx_str_t *src)
{
    static u_char  basis[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
                             "abcdefghijklmnopqrstuvwxyz0123456789-_";

    ngx_shim_encode_base64(dst, src, basis, 0);
}


ngx_int_t
ngx_decode_base64url(ngx_str_t *dst, ngx_str_t *src)
{
    size_t   len, i;
    u_char  *d, *s, c, b[4];

    for (len = 0; len < src->len; len++) {
        if (src->data[len] == '=') {
            break;
        }

        c = src->data[len];

        if (!(c >= 'A' && c <= 'Z') && !(c >= 'a' && c <= 'z')
            && !(c >= '0' && c <= '9') && c != '-' && c != '_')
        {
            return NGX_ERROR;
        }
    }

    if (len % 4 == 1) {
        return NGX_ERROR;
    }

    s = src->data;
    d = dst->data;

    for (i = 0; i < len; i++) {
        c = s[i];
        c = (c >= 'A' && c <= 'Z') ? c - 'A'
            : (c >= 'a' && c <= 'z') ? c - 'a' + 26
            : (c >= '0' && c <= '9') ? c - '0' + 52
            : (c == '-') ? 62 : 63;

        b[i % 4] = c;

        if (i % 4 == 3) {
            *d++ = (u_char) (b[0] << 2 | b[1] >> 4);
            *d++ = (u_char) (b[1] << 4 | b[2] >> 2);
            *d++ = (u_char) (b[2] << 6 | b[3]);
        }
    }

    if (len % 4 > 1) {
        *d++ = (u_char) (b[0] << 2 | b[1] >> 4);
    }

    if (len % 4 > 2) {
        *d++ = (u_char) (b[1] << 4 | b[2] >> 2);
    }

    dst->len = d - dst->data;

    return NGX_OK;
}


ngx_int_t
ngx_regex_compile(ngx_regex_compile_t *rc)
{
    int                  n, errcode;
    u_char               errstr[128];
    PCRE2_SIZE           erroff;
    pcre2_code          *re;
    ngx_pool_cleanup_t  *cln;

    re = pcre2_compile(rc->pattern.data, rc->pattern.len,
                       (rc->options & NGX_REGEX_CASELESS) ? PCRE2_CASELESS : 0,
                       &errcode, &erroff, NULL);

    if (re == NULL) {
        pcre2_get_error_message(errcode, errstr, sizeof(errstr));

        rc->err.len = ngx_snprintf(rc->err.data, rc->err.len,
                                   "pcre2_compile() failed: %s in \"%V\"",
                                   errstr, &rc->pattern)
                      - rc->err.data;
        return NGX_ERROR;
    }

    cln = ngx_pool_cleanup_add(rc->pool, 0);
    if (cln == NULL) {
        pcre2_code_free(re);
        return NGX_ERROR;
    }

    cln->handler = ngx_shim_regex_cleanup;
    cln->data = re;

    rc->regex = re;

    if (pcre2_pattern_info(re, PCRE2_INFO_CAPTURECOUNT, &n) == 0) {
        rc->captures = n;
    }

    if (pcre2_pattern_info(re, PCRE2_INFO_NAMECOUNT, &n) == 0) {
        rc->named_captures = n;
    }

    return NGX_OK;
}


static void
ngx_shim_regex_cleanup(void *data)
{
    pcre2_code_free(data);
}


ngx_int_t
ngx_regex_exec(ngx_regex_t *re, ngx_str_t *s, int *captures, ngx_uint_t size)
{
    int                rc;
    size_t             i, n;
    PCRE2_SIZE        *ov;
    pcre2_match_data  *md;

    md = pcre2_match_data_create(size / 3 ? size / 3 : 1, NULL);
    if (md == NULL) {
        return PCRE2_ERROR_NOMEMORY;
    }

    rc = pcre2_match(re, s->data, s->len, 0, 0, md, NULL);

    if (rc > 0 && size && captures) {
        n = ngx_min((size_t) rc, size / 3);
        ov = pcre2_get_ovector_pointer(md);

        for (i = 0; i < 2 * n; i++) {
            captures[i] = (int) ov[i];
        }
    }

    pcre2_match_data_free(md);

    return rc;
}


void ngx_cdecl
ngx_log_error_core(ngx_uint_t level, ngx_log_t *log, ngx_err_t err,
    const char *fmt, ...)
{
}


void ngx_cdecl
ngx_conf_log_error(ngx_uint_t level, ngx_conf_t *cf, ngx_err_t err,
    const char *fmt, ...)
{
}
