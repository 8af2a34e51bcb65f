
/*
 * The module's JSON printer: a cJSON tree into one buffer of the pool,
 * with the text that cJSON_PrintUnformatted() would make: the same
 * escapes, the same numbers.  cJSON's printer grows a malloc()ed buffer
 * and walks each string twice a write; every reply of the module is
 * printed, so this is on the path of every request.
 *
 * A reply of a few kilobytes, as most are, is printed in one walk on
 * the stack, then copied to the pool; a longer one in two walks, the
 * size, then the bytes in a buffer of that size.  Strings are most of a
 * reply's bytes, and most need no escape: a string's length comes from
 * strlen(), which glibc reads a vector at a time, and its bytes to
 * escape are looked for eight at a time; the first of the two walks
 * keeps both for the second.  A string is never read past its NUL.
 *
 * Pure: no HTTP; its output is compared with cJSON's by the differential
 * test.
 */


#include "ngx_http_mcp_json.h"

#include <float.h>
#include <math.h>


/* a number's text at most: "%1.17g" of a double, a sign, an exponent */
#define NGX_HTTP_MCP_JSON_PRINT_NUMBER   32

/* the text printed on the stack, in one walk, when it fits */
#define NGX_HTTP_MCP_JSON_PRINT_SCRATCH  8192

/*
 * The strings whose length the first of two walks keeps for the second,
 * in the order both walk them; those after are measured again.
 */
#define NGX_HTTP_MCP_JSON_PRINT_KEPT     256

/*
 * print_string() in print_value(): GCC would call it, and the call costs
 * more than copying the few bytes of a name
 */
#if (defined __GNUC__)
#define NGX_HTTP_MCP_JSON_PRINT_INLINE                                       \
    ngx_inline __attribute__((always_inline))
#else
#define NGX_HTTP_MCP_JSON_PRINT_INLINE   ngx_inline
#endif

#if (NGX_HAVE_LITTLE_ENDIAN && defined __GNUC__)
#define NGX_HTTP_MCP_JSON_PRINT_SWAR     1
#define NGX_HTTP_MCP_JSON_PRINT_ONES     0x0101010101010101ULL
#define NGX_HTTP_MCP_JSON_PRINT_HIGH     0x8080808080808080ULL

/* x86-64 always has SSE2: sixteen bytes of a long string a step */
#if (defined __SSE2__)
#define NGX_HTTP_MCP_JSON_PRINT_SSE2     1
#include <emmintrin.h>
#endif
#endif


typedef struct {
    /* the end of the buffer print_value() writes in */
    u_char                      *end;
    /* the strings the first walk measured, 0 in the one walk */
    ngx_uint_t                   measured;
    ngx_uint_t                   printed;
    /* a string's length << 1, | 1 when it has no byte to escape */
    size_t                       kept[NGX_HTTP_MCP_JSON_PRINT_KEPT];
} ngx_http_mcp_json_print_t;


static size_t ngx_http_mcp_json_print_size(ngx_http_mcp_json_print_t *ctx,
    cJSON *json);
static ngx_inline size_t ngx_http_mcp_json_string_size(
    ngx_http_mcp_json_print_t *ctx, const char *s);
static size_t ngx_http_mcp_json_print_escapes(const u_char *p,
    const u_char *end);
static u_char *ngx_http_mcp_json_print_value(ngx_http_mcp_json_print_t *ctx,
    u_char *p, cJSON *json);
static NGX_HTTP_MCP_JSON_PRINT_INLINE u_char *ngx_http_mcp_json_print_string(
    ngx_http_mcp_json_print_t *ctx, u_char *p, const char *s);
static u_char *ngx_http_mcp_json_print_kept(ngx_http_mcp_json_print_t *ctx,
    u_char *p, const u_char *q);
static u_char *ngx_http_mcp_json_print_text(ngx_http_mcp_json_print_t *ctx,
    u_char *p, const u_char *q, size_t len);
static u_char *ngx_http_mcp_json_print_escaped(u_char *p, const u_char *q,
    const u_char *end);
static ngx_inline u_char *ngx_http_mcp_json_print_escape(u_char *p,
    u_char c);
#if (NGX_HTTP_MCP_JSON_PRINT_SWAR)
static ngx_inline u_char *ngx_http_mcp_json_print_copy(u_char *p,
    const u_char *q, size_t n);
static ngx_inline uint64_t ngx_http_mcp_json_print_short(const u_char *p,
    size_t n);
static ngx_inline uint64_t ngx_http_mcp_json_print_stop8(uint64_t w);
#endif
#if (NGX_HTTP_MCP_JSON_PRINT_SSE2)
static ngx_inline unsigned ngx_http_mcp_json_print_stop16(__m128i v);
#endif
static u_char *ngx_http_mcp_json_print_number(u_char *p, cJSON *json);


/*
 * The bytes a string's byte takes printed: 1 as it is, 2 for the short
 * escapes (\" \\ \b \f \n \r \t), 6 for the other control bytes
 * (\u00XX); bytes from 0x80 are UTF-8, printed as they are.
 */
static const u_char  ngx_http_mcp_json_escaped[256] = {
    6, 6, 6, 6, 6, 6, 6, 6, 2, 2, 2, 6, 2, 2, 6, 6,    /* 0x00 */
    6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6,
    1, 1, 2, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,    /* 0x20: quote */
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,    /* 0x40 */
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 1, 1, 1,    /* 0x50: backslash */
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,    /* 0x60 */
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,    /* 0x80 */
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,    /* 0xc0 */
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1
};


/*
 * The text of json, NUL-terminated, in the pool; NULL: out of memory, or
 * a tree cJSON would not print either (an invalid item, a raw item
 * without text).
 */

u_char *
ngx_http_mcp_json_print(ngx_pool_t *pool, cJSON *json, size_t *len)
{
    u_char                     *text, *last;
    size_t                      size;
    ngx_http_mcp_json_print_t   ctx;
    u_char                      scratch[NGX_HTTP_MCP_JSON_PRINT_SCRATCH];

    ctx.end = scratch + sizeof(scratch);
    ctx.measured = 0;

    last = ngx_http_mcp_json_print_value(&ctx, scratch, json);

    if (last != ctx.end) {
        size = last - scratch;

        text = ngx_pnalloc(pool, size + 1);
        if (text == NULL) {
            return NULL;
        }

        ngx_memcpy(text, scratch, size);
        text[size] = '\0';
        *len = size;

        return text;
    }

    /* longer than the scratch, or a tree not to print: two walks */

    size = ngx_http_mcp_json_print_size(&ctx, json);
    if (size == 0) {
        return NULL;
    }

    text = ngx_pnalloc(pool, size + 1);
    if (text == NULL) {
        return NULL;
    }

    /* the NUL's byte too: a text that ends there has failed */
    ctx.end = text + size + 1;
    ctx.printed = 0;

    last = ngx_http_mcp_json_print_value(&ctx, text, json);
    if (last == ctx.end) {
        return NULL;
    }

    *last = '\0';
    *len = last - text;

    return text;
}


/*
 * The bytes json takes at most (numbers), exactly (the rest); 0: none.
 * A member's name is measured before its value, as print_value() prints
 * them: the kept lengths are taken in this order.
 */

static size_t
ngx_http_mcp_json_print_size(ngx_http_mcp_json_print_t *ctx, cJSON *json)
{
    size_t   size, n;
    cJSON   *item;

    switch (json->type & 0xff) {

    case cJSON_NULL:
    case cJSON_True:
        return 4;

    case cJSON_False:
        return 5;

    case cJSON_Number:
        return NGX_HTTP_MCP_JSON_PRINT_NUMBER;

    case cJSON_Raw:
        return (json->valuestring != NULL) ? ngx_strlen(json->valuestring)
                                           : 0;

    case cJSON_String:
        return ngx_http_mcp_json_string_size(ctx, json->valuestring);

    case cJSON_Array:
    case cJSON_Object:
        size = 2;

        for (item = json->child; item != NULL; item = item->next) {

            if ((json->type & 0xff) == cJSON_Object) {
                size += ngx_http_mcp_json_string_size(ctx, item->string) + 1;
            }

            n = ngx_http_mcp_json_print_size(ctx, item);
            if (n == 0) {
                return 0;
            }

            size += n + (item->next != NULL);
        }

        return size;

    default:
        return 0;
    }
}


static ngx_inline size_t
ngx_http_mcp_json_string_size(ngx_http_mcp_json_print_t *ctx, const char *s)
{
    size_t         len, size;
    ngx_uint_t     i;
    const u_char  *p;

    /* cJSON prints a string without text as "" */
    p = (const u_char *) ((s != NULL) ? s : "");

    len = ngx_strlen(p);
    size = ngx_http_mcp_json_print_escapes(p, p + len);

    i = ctx->measured++;

    if (i < NGX_HTTP_MCP_JSON_PRINT_KEPT) {
        ctx->kept[i] = (len << 1) | (size == 0);
    }

    return len + 2 + size;
}


/*
 * The bytes the escapes in [p, end) add.  The bytes of a string of fewer
 * than eight are tested in one word of two loads that overlap, the last
 * ones of a longer string in the eight that end at its end, less the
 * flags of those counted already.
 */

static size_t
ngx_http_mcp_json_print_escapes(const u_char *p, const u_char *end)
{
    size_t         size;
#if (NGX_HTTP_MCP_JSON_PRINT_SWAR)
    uint64_t       w, stop, mask;
    const u_char  *last;
#endif
#if (NGX_HTTP_MCP_JSON_PRINT_SSE2)
    unsigned       bits;
#endif

    size = 0;

#if (NGX_HTTP_MCP_JSON_PRINT_SSE2)
    while (end - p >= 16) {
        bits = ngx_http_mcp_json_print_stop16(
                   _mm_loadu_si128((const __m128i *) p));

        for ( /* void */ ; bits != 0; bits &= bits - 1) {
            size += ngx_http_mcp_json_escaped[p[__builtin_ctz(bits)]] - 1;
        }

        p += 16;
    }

    /* the rest, fewer than sixteen, as a string of its own */
#endif

#if (NGX_HTTP_MCP_JSON_PRINT_SWAR)

    if (end - p < 8) {
        w = ngx_http_mcp_json_print_short(p, end - p);

        if (ngx_http_mcp_json_print_stop8(w) == 0) {
            return size;
        }

        /* which bytes: a short string with escapes is rare */
        goto bytes;
    }

    last = end - 8;
    mask = ~0ULL;

    for ( ;; ) {
        ngx_memcpy(&w, p, sizeof(uint64_t));

        /* the flag is the byte's bit 7 */
        for (stop = ngx_http_mcp_json_print_stop8(w) & mask;
             stop != 0;
             stop &= stop - 1)
        {
            size += ngx_http_mcp_json_escaped[
                        (u_char) (w >> (__builtin_ctzll(stop) - 7))] - 1;
        }

        if (p == last) {
            return size;
        }

        p += 8;

        if (p > last) {
            mask = ~0ULL << (8 * (p - last));
            p = last;
        }
    }

bytes:

#endif

    while (p < end) {
        size += ngx_http_mcp_json_escaped[*p++] - 1;
    }

    return size;
}


/*
 * Writes json at p, up to ctx->end; returns the end of the text, or
 * ctx->end: it did not fit, or is not to print.
 */

static u_char *
ngx_http_mcp_json_print_value(ngx_http_mcp_json_print_t *ctx, u_char *p,
    cJSON *json)
{
    size_t       n;
    cJSON       *item;
    u_char      *end;
    ngx_uint_t   object;

    end = ctx->end;

    switch (json->type & 0xff) {

    case cJSON_NULL:
        return (end - p > 4) ? ngx_cpymem(p, "null", 4) : end;

    case cJSON_True:
        return (end - p > 4) ? ngx_cpymem(p, "true", 4) : end;

    case cJSON_False:
        return (end - p > 5) ? ngx_cpymem(p, "false", 5) : end;

    case cJSON_Number:
        if (end - p <= NGX_HTTP_MCP_JSON_PRINT_NUMBER) {
            return end;
        }

        p = ngx_http_mcp_json_print_number(p, json);

        return (p != NULL) ? p : end;

    case cJSON_Raw:
        if (json->valuestring == NULL) {
            return end;
        }

        n = ngx_strlen(json->valuestring);

        return ((size_t) (end - p) > n) ? ngx_cpymem(p, json->valuestring, n)
                                        : end;

    case cJSON_String:
        return ngx_http_mcp_json_print_string(ctx, p, json->valuestring);

    case cJSON_Array:
    case cJSON_Object:

        /*
         * The room for each byte written here is checked: for the
         * brackets at the start; after a name or a value, which returns
         * end when it does not fit, for the ':', ',' or bracket after it.
         */

        if (end - p <= 2) {
            return end;
        }

        object = ((json->type & 0xff) == cJSON_Object);

        *p++ = object ? '{' : '[';

        for (item = json->child; item != NULL; item = item->next) {

            if (object) {
                p = ngx_http_mcp_json_print_string(ctx, p, item->string);
                if (p == end) {
                    return end;
                }

                *p++ = ':';
            }

            /* a string, the most frequent item, without a call */
            if ((item->type & 0xff) == cJSON_String) {
                p = ngx_http_mcp_json_print_string(ctx, p, item->valuestring);

            } else {
                p = ngx_http_mcp_json_print_value(ctx, p, item);
            }

            if (p == end) {
                return end;
            }

            if (item->next != NULL) {
                *p++ = ',';
            }
        }

        *p++ = object ? '}' : ']';

        return p;

    default:
        return end;
    }
}


/*
 * A string in the one walk: one of up to 16 bytes without an escape, as
 * most names and many values are, here, in two moves that overlap; the
 * rest by print_text().
 */

static NGX_HTTP_MCP_JSON_PRINT_INLINE u_char *
ngx_http_mcp_json_print_string(ngx_http_mcp_json_print_t *ctx, u_char *p,
    const char *s)
{
    size_t         len;
    const u_char  *q;
#if (NGX_HTTP_MCP_JSON_PRINT_SWAR)
    uint64_t       w, last;
#endif

    /* cJSON prints a string without text as "" */
    q = (const u_char *) ((s != NULL) ? s : "");

    if (ctx->measured != 0) {
        return ngx_http_mcp_json_print_kept(ctx, p, q);
    }

    len = ngx_strlen(q);

#if (NGX_HTTP_MCP_JSON_PRINT_SWAR)
    if (ctx->end - p > 18) {

        if (len < 8) {
            if (ngx_http_mcp_json_print_stop8(
                    ngx_http_mcp_json_print_short(q, len))
                == 0)
            {
                *p++ = '"';
                p = ngx_http_mcp_json_print_copy(p, q, len);
                *p++ = '"';

                return p;
            }

        } else if (len <= 16) {
            ngx_memcpy(&w, q, sizeof(uint64_t));
            ngx_memcpy(&last, q + len - 8, sizeof(uint64_t));

            if ((ngx_http_mcp_json_print_stop8(w)
                 | ngx_http_mcp_json_print_stop8(last))
                == 0)
            {
                *p++ = '"';
                ngx_memcpy(p, &w, sizeof(uint64_t));
                ngx_memcpy(p + len - 8, &last, sizeof(uint64_t));
                p += len;
                *p++ = '"';

                return p;
            }
        }
    }
#endif

    return ngx_http_mcp_json_print_text(ctx, p, q, len);
}


/* a string in the second of two walks, at the length the first kept */

static u_char *
ngx_http_mcp_json_print_kept(ngx_http_mcp_json_print_t *ctx, u_char *p,
    const u_char *q)
{
    size_t      len;
    ngx_uint_t  i;

    i = ctx->printed++;

    if (i >= NGX_HTTP_MCP_JSON_PRINT_KEPT) {
        return ngx_http_mcp_json_print_text(ctx, p, q, ngx_strlen(q));
    }

    len = ctx->kept[i] >> 1;

    *p++ = '"';

    if (ctx->kept[i] & 1) {
        p = ngx_cpymem(p, q, len);

    } else {
        p = ngx_http_mcp_json_print_escaped(p, q, q + len);
    }

    *p++ = '"';

    return p;
}


/*
 * The len bytes at q, quoted and escaped, if they fit before ctx->end,
 * else ctx->end: each byte prints as six at most, and a string that may
 * not fit so is measured first.
 */

static u_char *
ngx_http_mcp_json_print_text(ngx_http_mcp_json_print_t *ctx, u_char *p,
    const u_char *q, size_t len)
{
    size_t  size;

    if ((size_t) (ctx->end - p) / 6 <= len) {
        size = ngx_http_mcp_json_print_escapes(q, q + len);

        if ((size_t) (ctx->end - p) <= len + 2 + size) {
            return ctx->end;
        }

        if (size == 0) {
            *p++ = '"';
            p = ngx_cpymem(p, q, len);
            *p++ = '"';

            return p;
        }
    }

    *p++ = '"';
    p = ngx_http_mcp_json_print_escaped(p, q, q + len);
    *p++ = '"';

    return p;
}


/* [q, end) escaped at p, which holds their escaped size */

static u_char *
ngx_http_mcp_json_print_escaped(u_char *p, const u_char *q, const u_char *end)
{
    u_char         c;
#if (NGX_HTTP_MCP_JSON_PRINT_SWAR)
    size_t         n;
    uint64_t       w, stop;
    const u_char  *start;
#endif
#if (NGX_HTTP_MCP_JSON_PRINT_SSE2)
    __m128i        v;
    unsigned       bits;
#endif

#if (NGX_HTTP_MCP_JSON_PRINT_SWAR)

    start = q;

    /*
     * The sixteen or eight bytes are stored whole, those from a byte to
     * escape on to be written over: each of them prints at least one
     * byte, and the closing quote follows, so the store stays in the
     * room the caller found for the string.
     */

#if (NGX_HTTP_MCP_JSON_PRINT_SSE2)
    while (end - q >= 16) {
        v = _mm_loadu_si128((const __m128i *) q);
        _mm_storeu_si128((__m128i *) p, v);

        bits = ngx_http_mcp_json_print_stop16(v);
        if (bits == 0) {
            p += 16;
            q += 16;
            continue;
        }

        n = __builtin_ctz(bits);
        p = ngx_http_mcp_json_print_escape(p + n, q[n]);
        q += n + 1;
    }
#endif

    while (end - q >= 8) {
        ngx_memcpy(&w, q, sizeof(uint64_t));
        ngx_memcpy(p, &w, sizeof(uint64_t));

        stop = ngx_http_mcp_json_print_stop8(w);
        if (stop == 0) {
            p += 8;
            q += 8;
            continue;
        }

        n = __builtin_ctzll(stop) / 8;
        p = ngx_http_mcp_json_print_escape(p + n, q[n]);
        q += n + 1;
    }

    if (q != end && end - start >= 8) {

        /*
         * The last bytes, in the eight that end at end: when none of
         * the eight is to escape, those before q were copied as they
         * are, and the eight are stored over them again.
         */

        ngx_memcpy(&w, end - 8, sizeof(uint64_t));

        if (ngx_http_mcp_json_print_stop8(w) == 0) {
            n = end - q;
            ngx_memcpy(p + n - 8, &w, sizeof(uint64_t));

            return p + n;
        }
    }
#endif

    while (q < end) {
        c = *q++;

        if (ngx_http_mcp_json_escaped[c] == 1) {
            *p++ = c;
            continue;
        }

        p = ngx_http_mcp_json_print_escape(p, c);
    }

    return p;
}


static ngx_inline u_char *
ngx_http_mcp_json_print_escape(u_char *p, u_char c)
{
    static const u_char  hex[] = "0123456789abcdef";

    /* from 0x08: \b \t \n, 0x0b has none, \f \r */
    static const u_char  letter[] = "btn\0fr";

    p[0] = '\\';

    if (c == '"' || c == '\\') {
        p[1] = c;
        return p + 2;
    }

    if (c >= '\b' && c <= '\r' && c != 0x0b) {
        p[1] = letter[c - '\b'];
        return p + 2;
    }

    p[1] = 'u';
    p[2] = '0';
    p[3] = '0';
    p[4] = hex[c >> 4];
    p[5] = hex[c & 0x0f];

    return p + 6;
}


#if (NGX_HTTP_MCP_JSON_PRINT_SWAR)

/* ngx_cpymem() of fewer than eight bytes, less its call */

static ngx_inline u_char *
ngx_http_mcp_json_print_copy(u_char *p, const u_char *q, size_t n)
{
    uint16_t  v16;
    uint32_t  v32;

    /* two moves that overlap, of the first and the last bytes */

    if (n >= 4) {
        ngx_memcpy(&v32, q, sizeof(uint32_t));
        ngx_memcpy(p, &v32, sizeof(uint32_t));
        ngx_memcpy(&v32, q + n - 4, sizeof(uint32_t));
        ngx_memcpy(p + n - 4, &v32, sizeof(uint32_t));

    } else if (n >= 2) {
        ngx_memcpy(&v16, q, sizeof(uint16_t));
        ngx_memcpy(p, &v16, sizeof(uint16_t));
        ngx_memcpy(&v16, q + n - 2, sizeof(uint16_t));
        ngx_memcpy(p + n - 2, &v16, sizeof(uint16_t));

    } else if (n == 1) {
        *p = *q;
    }

    return p + n;
}


/*
 * The n (below 8) bytes at p as a word to test: the first and the last
 * bytes again in the rest of it, never a byte after p + n.
 */

static ngx_inline uint64_t
ngx_http_mcp_json_print_short(const u_char *p, size_t n)
{
    uint16_t  lo16, hi16;
    uint32_t  lo32, hi32;
    uint64_t  w;

    if (n >= 4) {
        ngx_memcpy(&lo32, p, sizeof(uint32_t));
        ngx_memcpy(&hi32, p + n - 4, sizeof(uint32_t));

        return lo32 | ((uint64_t) hi32 << 32);
    }

    if (n >= 2) {
        ngx_memcpy(&lo16, p, sizeof(uint16_t));
        ngx_memcpy(&hi16, p + n - 2, sizeof(uint16_t));
        w = lo16 | ((uint64_t) hi16 << 16);

        return w | (w << 32);
    }

    /* "" as a word of spaces */
    return ((n == 1) ? *p : ' ') * NGX_HTTP_MCP_JSON_PRINT_ONES;
}


/*
 * The bytes of w that print escaped, as the high bit of each: below
 * 0x20, a quote, a backslash; not those from 0x80, which print as they
 * are.  Each byte's low seven bits are tested apart: "x + 0x7f" sets
 * bit 7 when x is not 0, "x + 0x60" when x is 0x20 or more, and no
 * carry leaves a byte, so every flag is exact.
 */

static ngx_inline uint64_t
ngx_http_mcp_json_print_stop8(uint64_t w)
{
    uint64_t  low, quote, backslash, control;

    low = w & ~NGX_HTTP_MCP_JSON_PRINT_HIGH;

    quote = (low ^ (NGX_HTTP_MCP_JSON_PRINT_ONES * '"'))
            + NGX_HTTP_MCP_JSON_PRINT_ONES * 0x7f;
    backslash = (low ^ (NGX_HTTP_MCP_JSON_PRINT_ONES * '\\'))
                + NGX_HTTP_MCP_JSON_PRINT_ONES * 0x7f;
    control = low + NGX_HTTP_MCP_JSON_PRINT_ONES * 0x60;

    /* plain: from 0x80, or none of the three */
    return ~((quote & backslash & control) | w) & NGX_HTTP_MCP_JSON_PRINT_HIGH;
}

#endif


#if (NGX_HTTP_MCP_JSON_PRINT_SSE2)

/*
 * The bytes of v that print escaped, a bit each: a quote, a backslash,
 * one of 0x1f and below (unsigned: its minimum with 0x1f is itself);
 * those from 0x80 print as they are.
 */

static ngx_inline unsigned
ngx_http_mcp_json_print_stop16(__m128i v)
{
    __m128i  special, control;

    special = _mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('"')),
                           _mm_cmpeq_epi8(v, _mm_set1_epi8('\\')));
    control = _mm_cmpeq_epi8(_mm_min_epu8(v, _mm_set1_epi8(0x1f)), v);

    return (unsigned) _mm_movemask_epi8(_mm_or_si128(special, control));
}

#endif


/*
 * As cJSON (1.7.15) prints a number: null for NaN and infinities, else
 * 15 significant digits ("%1.15g") when they read back as the same
 * double (within DBL_EPSILON, as cJSON compares), 17 otherwise.  An
 * integer of fewer than 16 digits prints as "%1.15g" would print it,
 * its digits made here: ids and counts are most of a reply's numbers.
 */

static u_char *
ngx_http_mcp_json_print_number(u_char *p, cJSON *json)
{
    int       n;
    char      buf[NGX_HTTP_MCP_JSON_PRINT_NUMBER + 1];
    u_char   *end;
    double    d, test, max;
    uint64_t  v, t;

    d = json->valuedouble;

    if (isnan(d) || isinf(d)) {
        return ngx_cpymem(p, "null", 4);
    }

    /* an integer: it converts to int64_t and back unchanged */
    if (fabs(d) < 1e15 && d == (double) (int64_t) d) {

        if (d == 0) {
            return signbit(d) ? ngx_cpymem(p, "-0", 2) : ngx_cpymem(p, "0", 1);
        }

        if (d < 0) {
            *p++ = '-';
            d = -d;
        }

        v = (uint64_t) d;

        /* the digits, written from the last back */
        end = p + 1;

        for (t = v / 10; t != 0; t /= 10) {
            end++;
        }

        p = end;

        do {
            *--p = (u_char) ('0' + v % 10);
            v /= 10;
        } while (v != 0);

        return end;
    }

    n = snprintf(buf, sizeof(buf), "%1.15g", d);
    test = strtod(buf, NULL);

    max = (fabs(test) > fabs(d)) ? fabs(test) : fabs(d);

    if (!(fabs(test - d) <= max * DBL_EPSILON)) {
        n = snprintf(buf, sizeof(buf), "%1.17g", d);
    }

    if (n < 0 || n > NGX_HTTP_MCP_JSON_PRINT_NUMBER) {
        return NULL;
    }

    return ngx_cpymem(p, buf, n);
}
