
/*
 * The strict JSON scan.  A gateway decides from a message (its method,
 * its tool, its scopes) and then forwards the bytes to another parser,
 * so a body must have one meaning for every parser: before cJSON reads
 * it, this scanner walks it once and refuses what RFC 8259 and I-JSON
 * (RFC 7493) leave to the parser's taste: two members of one object with
 * the same name after unescaping (JSON.parse and Python keep the last,
 * cJSON the first), control bytes and invalid UTF-8 in strings, lone
 * surrogates, "\u0000" (cJSON ends a string there, other parsers do
 * not), numbers beyond a double, and anything the grammar does not
 * allow.  The same walk keeps the raw text of each message's "id" (and
 * of a numeric progress token) and, for a POST body, builds the cJSON
 * tree the module reads, so that the body is read once (and by the
 * parser that checked it), not scanned and then parsed again by cJSON.
 *
 * Pure: no HTTP; unit tested and fuzzed on its own, and its trees are
 * compared with cJSON_Parse()'s by the differential test.
 */


#include "ngx_http_mcp_json.h"

#include <float.h>
#include <limits.h>
#include <openssl/rand.h>


#define NGX_HTTP_MCP_JSON_MAX_DEPTH   128

/* x86-64 always has SSE2: sixteen bytes of a string a step */
#if (defined __SSE2__ && defined __GNUC__)
#define NGX_HTTP_MCP_JSON_SSE2        1
#include <emmintrin.h>
#else
#define NGX_HTTP_MCP_JSON_SSE2        0
#endif


/* members an object may have before its names move to the hash table */
#define NGX_HTTP_MCP_JSON_SMALL       8

/* a number's text that a stack buffer holds for strtod() */
#define NGX_HTTP_MCP_JSON_NUMBER_LEN  64

/* the prefix of the _meta keys of the MCP revisions */
#define NGX_HTTP_MCP_JSON_META        "io.modelcontextprotocol/"


/* the states of ngx_http_mcp_json_token() between a token's bytes */
enum {
    NGX_HTTP_MCP_JSON_T_MINUS = NGX_HTTP_MCP_JSON_TOKEN + 1,
    NGX_HTTP_MCP_JSON_T_ZERO,
    NGX_HTTP_MCP_JSON_T_INT,
    NGX_HTTP_MCP_JSON_T_DOT,
    NGX_HTTP_MCP_JSON_T_FRAC,
    NGX_HTTP_MCP_JSON_T_EXP,
    NGX_HTTP_MCP_JSON_T_EXP_SIGN,
    NGX_HTTP_MCP_JSON_T_EXP_DIGITS,
    NGX_HTTP_MCP_JSON_T_WORD           /* + the index of the byte next */
};                                     /* in "true\0false\0null" */


/* a member name: where it stands, and what it says once unescaped */
typedef struct {
    u_char                     *key;        /* at the opening quote */
    uint32_t                    hash;       /* table entries only */
    uint32_t                    len;        /* unescaped, in bytes */
    uint32_t                    object;     /* table entries: whose */
    uint32_t                    plain;      /* no escapes: the bytes as
                                               they are */
} ngx_http_mcp_json_name_t;


typedef struct {
    u_char                     *end;
    ngx_pool_t                 *pool;
    const char                 *error;
    ngx_http_mcp_json_name_t   *table;      /* names of large objects */
    ngx_uint_t                  size;       /* slots, a power of two */
    ngx_uint_t                  used;
    uint32_t                    objects;    /* large objects seen */
    uint32_t                    seed;
    ngx_uint_t                  nomem;      /* building: out of memory */
} ngx_http_mcp_json_scan_t;


static ngx_int_t ngx_http_mcp_json_check(ngx_pool_t *pool, u_char *p,
    size_t len, ngx_array_t *ids, const char **error);
static ngx_inline u_char *ngx_http_mcp_json_plain_run(u_char *p,
    u_char *end);
#if (NGX_HAVE_LITTLE_ENDIAN && defined __GNUC__)
static ngx_inline uint64_t ngx_http_mcp_json_stop8(u_char *p);
#endif
static ngx_inline u_char *ngx_http_mcp_json_string(
    ngx_http_mcp_json_scan_t *scan, u_char *p, ngx_http_mcp_json_name_t *name);
static u_char *ngx_http_mcp_json_string_rest(ngx_http_mcp_json_scan_t *scan,
    u_char *p, uint32_t len, ngx_http_mcp_json_name_t *name);
static u_char *ngx_http_mcp_json_escape(ngx_http_mcp_json_scan_t *scan,
    u_char *p, uint32_t *cp);
static size_t ngx_http_mcp_json_utf8(u_char *dst, uint32_t cp);
static size_t ngx_http_mcp_json_unescape(u_char *p, u_char *dst);
static ngx_uint_t ngx_http_mcp_json_names_equal(
    ngx_http_mcp_json_scan_t *scan, ngx_http_mcp_json_name_t *a,
    ngx_http_mcp_json_name_t *b);
static ngx_int_t ngx_http_mcp_json_name_hash(ngx_http_mcp_json_scan_t *scan,
    ngx_http_mcp_json_name_t *name);
static ngx_int_t ngx_http_mcp_json_name_add(ngx_http_mcp_json_scan_t *scan,
    ngx_http_mcp_json_name_t *name);
static cJSON *ngx_http_mcp_json_node(ngx_http_mcp_json_scan_t *scan,
    cJSON *parent, int type);
static ngx_int_t ngx_http_mcp_json_leaf(ngx_http_mcp_json_scan_t *scan,
    cJSON *parent, u_char *p, u_char *end);
static char *ngx_http_mcp_json_text(ngx_http_mcp_json_scan_t *scan,
    u_char *p, size_t raw, ngx_uint_t plain);
static char *ngx_http_mcp_json_known(u_char *p, size_t len);
static ngx_int_t ngx_http_mcp_json_source(ngx_http_mcp_json_scan_t *scan,
    cJSON *node, u_char *p, u_char *end);
static u_char *ngx_http_mcp_json_literal(u_char *p, u_char *end);
static ngx_uint_t ngx_http_mcp_json_number_fits(u_char *p, u_char *end);
static ngx_int_t ngx_http_mcp_json_number(ngx_pool_t *pool, cJSON *node,
    u_char *p, u_char *end);
static u_char *ngx_http_mcp_json_value(ngx_http_mcp_json_scan_t *scan,
    u_char *p, ngx_uint_t depth, cJSON *parent);
static u_char *ngx_http_mcp_json_object(ngx_http_mcp_json_scan_t *scan,
    u_char *p, ngx_uint_t depth, ngx_str_t *id, cJSON *parent);
static u_char *ngx_http_mcp_json_array(ngx_http_mcp_json_scan_t *scan,
    u_char *p, ngx_uint_t depth, cJSON *parent);
static ngx_int_t ngx_http_mcp_json_scan(ngx_http_mcp_json_scan_t *scan,
    u_char *p, ngx_array_t *ids, cJSON *top);
static ngx_int_t ngx_http_mcp_json_run(ngx_pool_t *pool, u_char *p,
    size_t len, ngx_array_t *ids, cJSON *top, const char **error);


/* bytes a string holds as they are: printable ASCII, not quote or backslash */
static const u_char  ngx_http_mcp_json_plain[256] = {
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,    /* 0x00 */
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    1, 1, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,    /* 0x20: quote */
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,    /* 0x40 */
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 1, 1, 1,    /* 0x50: backslash */
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,    /* 0x60 */
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    /* 0x80 to 0xff: UTF-8, decoded and checked one by one */
};


static uint32_t  ngx_http_mcp_json_seed;

const char  ngx_http_mcp_json_meta_version[] =
    NGX_HTTP_MCP_JSON_META "protocolVersion";
const char  ngx_http_mcp_json_meta_caps[] =
    NGX_HTTP_MCP_JSON_META "clientCapabilities";
const char  ngx_http_mcp_json_meta_info[] =
    NGX_HTTP_MCP_JSON_META "clientInfo";
const char  ngx_http_mcp_json_meta_level[] =
    NGX_HTTP_MCP_JSON_META "logLevel";



/*
 * Where the run of plain bytes (see the table above) that starts at p
 * ends, sixteen (SSE2) or eight (a word) bytes a step where the machine
 * allows: a string's bytes are mostly plain and member names long
 * ("io.modelcontextprotocol/clientCapabilities"), and the byte loop
 * took six instructions a byte.
 */

static ngx_inline u_char *
ngx_http_mcp_json_plain_run(u_char *p, u_char *end)
{
#if (NGX_HTTP_MCP_JSON_SSE2)
    int       mask;
    __m128i   v, quote, backslash, space, stops;
#endif
#if (NGX_HAVE_LITTLE_ENDIAN && defined __GNUC__)
    uint64_t  stop;
#endif

#if (NGX_HTTP_MCP_JSON_SSE2)
    quote = _mm_set1_epi8('"');
    backslash = _mm_set1_epi8('\\');
    space = _mm_set1_epi8(' ');

    while (end - p >= 16) {
        v = _mm_loadu_si128((const __m128i *) p);

        /* a signed compare: bytes from 0x80 are below the space too */
        stops = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, quote),
                                          _mm_cmpeq_epi8(v, backslash)),
                             _mm_cmplt_epi8(v, space));

        mask = _mm_movemask_epi8(stops);

        if (mask != 0) {
            return p + __builtin_ctz(mask);
        }

        p += 16;
    }
#endif

#if (NGX_HAVE_LITTLE_ENDIAN && defined __GNUC__)
    while (end - p >= 8) {
        stop = ngx_http_mcp_json_stop8(p);

        if (stop != 0) {
            /* the lowest flag is the first byte that is not plain */
            return p + __builtin_ctzll(stop) / 8;
        }

        p += 8;
    }
#endif

    while (p < end && ngx_http_mcp_json_plain[*p]) {
        p++;
    }

    return p;
}


#if (NGX_HAVE_LITTLE_ENDIAN && defined __GNUC__)

#define NGX_HTTP_MCP_JSON_ONES  0x0101010101010101ULL
#define NGX_HTTP_MCP_JSON_HIGH  0x8080808080808080ULL

/*
 * The bytes of the eight at p that are not plain, as the high bit of
 * each: below 0x20, a quote, a backslash, from 0x80.  "(x - ones) & ~x"
 * flags a zero byte, and "(x - n * ones) & ~x" a byte below n; a
 * borrow may flag bytes above a flagged one too, never below it, so
 * the lowest flag is exact.
 */

static ngx_inline uint64_t
ngx_http_mcp_json_stop8(u_char *p)
{
    uint64_t  w, quote, backslash, control;

    ngx_memcpy(&w, p, sizeof(uint64_t));

    quote = w ^ (NGX_HTTP_MCP_JSON_ONES * '"');
    backslash = w ^ (NGX_HTTP_MCP_JSON_ONES * '\\');

    quote = (quote - NGX_HTTP_MCP_JSON_ONES) & ~quote;
    backslash = (backslash - NGX_HTTP_MCP_JSON_ONES) & ~backslash;
    control = (w - NGX_HTTP_MCP_JSON_ONES * 0x20) & ~w;

    return (quote | backslash | control | w) & NGX_HTTP_MCP_JSON_HIGH;
}

#endif


/*
 * p points at the opening quote; returns the position after the closing
 * one.  Sets the length of the string's unescaped bytes in name, and
 * whether it has escapes: equal member names are found however they were
 * escaped, and a string without escapes is copied as it stands.
 *
 * Inline for the common case, a string of plain bytes only: the rest of
 * the loop, which saves more registers and keeps a stack guard for its
 * buffer, cost a string more than its bytes did.
 */

static ngx_inline u_char *
ngx_http_mcp_json_string(ngx_http_mcp_json_scan_t *scan, u_char *p,
    ngx_http_mcp_json_name_t *name)
{
    u_char  *q;

    q = ngx_http_mcp_json_plain_run(p + 1, scan->end);

    if (q < scan->end && *q == '"') {
        name->len = q - p - 1;
        name->plain = 1;

        return q + 1;
    }

    return ngx_http_mcp_json_string_rest(scan, q, q - p - 1, name);
}


/*
 * The string from p on, the first byte that is not plain, len bytes of
 * it read: escapes, UTF-8, its end, or an error.
 */

static u_char *
ngx_http_mcp_json_string_rest(ngx_http_mcp_json_scan_t *scan, u_char *p,
    uint32_t len, ngx_http_mcp_json_name_t *name)
{
    u_char    *end, *q, *run, utf8[4];
    uint32_t   cp, plain;

    end = scan->end;
    plain = 1;

    while (p < end) {

        if (*p == '"') {
            name->len = len;
            name->plain = plain;

            return p + 1;
        }

        if (*p < 0x20) {
            scan->error = "Parse error: control character in a string";
            return NULL;
        }

        if (*p == '\\') {
            p = ngx_http_mcp_json_escape(scan, p, &cp);
            if (p == NULL) {
                return NULL;
            }

            plain = 0;
            len += ngx_http_mcp_json_utf8(utf8, cp);

        } else {
            q = p;
            cp = ngx_utf8_decode(&p, end - p);

            /* UTF-16 surrogates have no place in UTF-8 (RFC 3629) */
            if (cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) {
                scan->error = "Parse error: invalid UTF-8";
                return NULL;
            }

            len += p - q;
        }

        /* printable ASCII again, one byte a character */

        run = p;
        p = ngx_http_mcp_json_plain_run(p, end);

        len += p - run;
    }

    scan->error = "Parse error: unterminated string";

    return NULL;
}


/*
 * p points at a backslash; sets *cp to the code point it stands for and
 * returns the position after the escape (after both halves of a
 * surrogate pair).
 */

static u_char *
ngx_http_mcp_json_escape(ngx_http_mcp_json_scan_t *scan, u_char *p,
    uint32_t *cp)
{
    u_char     *end;
    ngx_int_t   hi, lo;

    end = scan->end;

    if (end - p < 2) {
        scan->error = "Parse error: unterminated string";
        return NULL;
    }

    switch (p[1]) {
    case '"':  *cp = '"';  return p + 2;
    case '\\': *cp = '\\'; return p + 2;
    case '/':  *cp = '/';  return p + 2;
    case 'b':  *cp = '\b'; return p + 2;
    case 'f':  *cp = '\f'; return p + 2;
    case 'n':  *cp = '\n'; return p + 2;
    case 'r':  *cp = '\r'; return p + 2;
    case 't':  *cp = '\t'; return p + 2;
    case 'u':  break;
    default:
        scan->error = "Parse error: invalid escape in a string";
        return NULL;
    }

    hi = (end - p >= 6) ? ngx_hextoi(p + 2, 4) : NGX_ERROR;

    if (hi == NGX_ERROR) {
        scan->error = "Parse error: invalid escape in a string";
        return NULL;
    }

    p += 6;

    if (hi == 0) {
        /* cJSON's strings end at a NUL, other parsers' do not */
        scan->error = "Parse error: NUL character in a string";
        return NULL;
    }

    if (hi >= 0xdc00 && hi <= 0xdfff) {
        scan->error = "Parse error: lone surrogate in a string";
        return NULL;
    }

    if (hi < 0xd800 || hi > 0xdbff) {
        *cp = hi;
        return p;
    }

    lo = (end - p >= 6 && p[0] == '\\' && p[1] == 'u')
         ? ngx_hextoi(p + 2, 4) : NGX_ERROR;

    if (lo < 0xdc00 || lo > 0xdfff) {
        scan->error = "Parse error: lone surrogate in a string";
        return NULL;
    }

    *cp = 0x10000 + (((uint32_t) hi - 0xd800) << 10)
          + ((uint32_t) lo - 0xdc00);

    return p + 6;
}


static size_t
ngx_http_mcp_json_utf8(u_char *dst, uint32_t cp)
{
    if (cp < 0x80) {
        dst[0] = (u_char) cp;
        return 1;
    }

    if (cp < 0x800) {
        dst[0] = (u_char) (0xc0 | (cp >> 6));
        dst[1] = (u_char) (0x80 | (cp & 0x3f));
        return 2;
    }

    if (cp < 0x10000) {
        dst[0] = (u_char) (0xe0 | (cp >> 12));
        dst[1] = (u_char) (0x80 | ((cp >> 6) & 0x3f));
        dst[2] = (u_char) (0x80 | (cp & 0x3f));
        return 3;
    }

    dst[0] = (u_char) (0xf0 | (cp >> 18));
    dst[1] = (u_char) (0x80 | ((cp >> 12) & 0x3f));
    dst[2] = (u_char) (0x80 | ((cp >> 6) & 0x3f));
    dst[3] = (u_char) (0x80 | (cp & 0x3f));
    return 4;
}


/*
 * The unescaped bytes of a string the scanner has accepted: p points at
 * its opening quote; dst holds at least as many bytes as the string.
 */

static size_t
ngx_http_mcp_json_unescape(u_char *p, u_char *dst)
{
    u_char                    *d;
    uint32_t                   cp;
    ngx_http_mcp_json_scan_t   scan;

    scan.end = p + 1;
    d = dst;

    for (p++; *p != '"'; /* void */) {

        if (*p != '\\') {
            *d++ = *p++;
            continue;
        }

        /* accepted already: the escape is whole and valid */
        scan.end = p + 12;
        p = ngx_http_mcp_json_escape(&scan, p, &cp);
        d += ngx_http_mcp_json_utf8(d, cp);
    }

    return d - dst;
}


static ngx_uint_t
ngx_http_mcp_json_names_equal(ngx_http_mcp_json_scan_t *scan,
    ngx_http_mcp_json_name_t *a, ngx_http_mcp_json_name_t *b)
{
    u_char  *da, *db;
    size_t   na, nb;

    if (a->len != b->len) {
        return 0;
    }

    if (a->plain && b->plain) {
        return ngx_memcmp(a->key + 1, b->key + 1, a->len) == 0;
    }

    da = ngx_pnalloc(scan->pool, 2 * (size_t) a->len + 8);
    if (da == NULL) {
        return 1;                    /* refused either way */
    }

    db = da + a->len + 4;

    na = ngx_http_mcp_json_unescape(a->key, da);
    nb = ngx_http_mcp_json_unescape(b->key, db);

    return na == nb && ngx_memcmp(da, db, na) == 0;
}


/*
 * The seeded hash of a name's unescaped bytes, for the table: only the
 * names of large objects need one.
 */

static ngx_int_t
ngx_http_mcp_json_name_hash(ngx_http_mcp_json_scan_t *scan,
    ngx_http_mcp_json_name_t *name)
{
    u_char    *p, *last;
    uint32_t   hash;

    p = name->key + 1;

    if (!name->plain) {
        p = ngx_pnalloc(scan->pool, name->len + 4);
        if (p == NULL) {
            return NGX_ERROR;
        }

        (void) ngx_http_mcp_json_unescape(name->key, p);
    }

    hash = scan->seed;

    for (last = p + name->len; p < last; p++) {
        hash = (hash ^ *p) * 16777619;
    }

    name->hash = hash;

    return NGX_OK;
}


/*
 * The names of objects with many members live in one open-addressing
 * table for the whole body, keyed by object and name, so that a body of
 * 100,000 members costs linear time.  The hash is seeded per process:
 * names chosen to collide cannot be made ahead of time.
 */

static ngx_int_t
ngx_http_mcp_json_name_add(ngx_http_mcp_json_scan_t *scan,
    ngx_http_mcp_json_name_t *name)
{
    ngx_uint_t                 i, k, size;
    ngx_http_mcp_json_name_t  *table, *slot;

    if (ngx_http_mcp_json_name_hash(scan, name) != NGX_OK) {
        return NGX_ERROR;
    }

    if (2 * (scan->used + 1) > scan->size) {
        size = scan->size ? 2 * scan->size : 64;

        table = ngx_alloc(size * sizeof(ngx_http_mcp_json_name_t),
                          scan->pool->log);
        if (table == NULL) {
            return NGX_ERROR;
        }

        ngx_memzero(table, size * sizeof(ngx_http_mcp_json_name_t));

        for (i = 0; i < scan->size; i++) {
            if (scan->table[i].key == NULL) {
                continue;
            }

            k = (scan->table[i].hash ^ scan->table[i].object) & (size - 1);

            while (table[k].key != NULL) {
                k = (k + 1) & (size - 1);
            }

            table[k] = scan->table[i];
        }

        if (scan->table) {
            ngx_free(scan->table);
        }

        scan->table = table;
        scan->size = size;
    }

    k = (name->hash ^ name->object) & (scan->size - 1);

    for ( ;; ) {
        slot = &scan->table[k];

        if (slot->key == NULL) {
            *slot = *name;
            scan->used++;
            return NGX_OK;
        }

        if (slot->object == name->object && slot->hash == name->hash
            && ngx_http_mcp_json_names_equal(scan, slot, name))
        {
            return NGX_DECLINED;
        }

        k = (k + 1) & (scan->size - 1);
    }
}


/*
 * The grammar of a number, true, false or null, a byte at a time: the
 * scan's, and that of the guard that reads an upstream's reply as it
 * streams (ngx_http_mcp_jsonguard.c), which cannot see a token whole.
 * One definition, so that the two cannot disagree on what is JSON.
 * state: NGX_HTTP_MCP_JSON_TOKEN before the token's first byte, then
 * what the last call returned; the state after c, or _TOKEN_END: the
 * token ended before c (which is not its own), or _TOKEN_BAD.
 *
 * Strict where cJSON is lenient ("01", "1.", ".5", "-"): an id is echoed
 * as the client wrote it, so what the module echoes must be JSON.
 */

ngx_uint_t
ngx_http_mcp_json_token(ngx_uint_t state, u_char c)
{
    u_char      want;
    ngx_uint_t  digit;

    /* in a word, the state is T_WORD + the index of the byte it waits for */
    static const u_char  words[] = "true\0false\0null";

    digit = (c >= '0' && c <= '9');

    switch (state) {

    case NGX_HTTP_MCP_JSON_TOKEN:
        switch (c) {
        case '-':
            return NGX_HTTP_MCP_JSON_T_MINUS;
        case '0':
            return NGX_HTTP_MCP_JSON_T_ZERO;
        case 't':
            return NGX_HTTP_MCP_JSON_T_WORD + 1;
        case 'f':
            return NGX_HTTP_MCP_JSON_T_WORD + 6;
        case 'n':
            return NGX_HTTP_MCP_JSON_T_WORD + 12;
        }

        return digit ? NGX_HTTP_MCP_JSON_T_INT : NGX_HTTP_MCP_JSON_TOKEN_BAD;

    case NGX_HTTP_MCP_JSON_T_MINUS:
        return (c == '0') ? NGX_HTTP_MCP_JSON_T_ZERO
               : digit ? NGX_HTTP_MCP_JSON_T_INT
               : NGX_HTTP_MCP_JSON_TOKEN_BAD;

    case NGX_HTTP_MCP_JSON_T_ZERO:
        if (digit) {
            /* no leading zeros: "01" is not "1" to every parser */
            return NGX_HTTP_MCP_JSON_TOKEN_BAD;
        }

        /* fall through */

    case NGX_HTTP_MCP_JSON_T_INT:
        if (digit) {
            return NGX_HTTP_MCP_JSON_T_INT;
        }

        return (c == '.') ? NGX_HTTP_MCP_JSON_T_DOT
               : (c == 'e' || c == 'E') ? NGX_HTTP_MCP_JSON_T_EXP
               : NGX_HTTP_MCP_JSON_TOKEN_END;

    case NGX_HTTP_MCP_JSON_T_DOT:
        return digit ? NGX_HTTP_MCP_JSON_T_FRAC : NGX_HTTP_MCP_JSON_TOKEN_BAD;

    case NGX_HTTP_MCP_JSON_T_FRAC:
        return digit ? NGX_HTTP_MCP_JSON_T_FRAC
               : (c == 'e' || c == 'E') ? NGX_HTTP_MCP_JSON_T_EXP
               : NGX_HTTP_MCP_JSON_TOKEN_END;

    case NGX_HTTP_MCP_JSON_T_EXP:
        return (c == '+' || c == '-') ? NGX_HTTP_MCP_JSON_T_EXP_SIGN
               : digit ? NGX_HTTP_MCP_JSON_T_EXP_DIGITS
               : NGX_HTTP_MCP_JSON_TOKEN_BAD;

    case NGX_HTTP_MCP_JSON_T_EXP_SIGN:
        return digit ? NGX_HTTP_MCP_JSON_T_EXP_DIGITS
                     : NGX_HTTP_MCP_JSON_TOKEN_BAD;

    case NGX_HTTP_MCP_JSON_T_EXP_DIGITS:
        return digit ? NGX_HTTP_MCP_JSON_T_EXP_DIGITS
                     : NGX_HTTP_MCP_JSON_TOKEN_END;
    }

    /* in a word: what follows a whole one is for the caller to judge */

    want = words[state - NGX_HTTP_MCP_JSON_T_WORD];

    if (want == '\0') {
        return NGX_HTTP_MCP_JSON_TOKEN_END;
    }

    return (c == want) ? state + 1 : NGX_HTTP_MCP_JSON_TOKEN_BAD;
}


/*
 * A number, true, false or null from p on, read by the grammar above:
 * where it ends, or NULL.  The body's end ends a token as a space does.
 */

static u_char *
ngx_http_mcp_json_literal(u_char *p, u_char *end)
{
    ngx_uint_t  state;

    state = NGX_HTTP_MCP_JSON_TOKEN;

    for ( ;; ) {
        state = ngx_http_mcp_json_token(state, (p < end) ? *p : ' ');

        if (state >= NGX_HTTP_MCP_JSON_TOKEN_END) {
            return (state == NGX_HTTP_MCP_JSON_TOKEN_END) ? p : NULL;
        }

        p++;
    }
}


/*
 * A number that a double holds: 1e400 is infinity to cJSON and Python
 * and an exact integer to Python when written out in 400 digits, so
 * neither may pass.  The decimal magnitude is worked out from the text;
 * only numbers at the very edge go to strtod().
 */

static ngx_uint_t
ngx_http_mcp_json_number_fits(u_char *p, u_char *end)
{
    u_char     *q, buf[512];
    double      d;
    ngx_int_t   mag, exp, digits, lead;
    ngx_uint_t  neg;

    q = p;

    if (*q == '-') {
        q++;
    }

    if (*q < '0' || *q > '9') {
        return 1;                    /* true, false, null */
    }

    digits = 0;
    lead = 0;                        /* zeros after the point, before */
                                     /* the first significant digit */
    for ( /* void */ ; q < end && *q >= '0' && *q <= '9'; q++) {
        digits++;
    }

    if (digits == 1 && q[-1] == '0') {
        digits = 0;

        if (q == end || *q != '.') {
            return 1;                /* a zero, whatever its exponent */
        }

        for (q++; q < end && *q == '0'; q++) {
            lead++;
        }

        if (q == end || *q < '1' || *q > '9') {
            return 1;
        }
    }

    while (q < end && ((*q >= '0' && *q <= '9') || *q == '.')) {
        q++;
    }

    exp = 0;
    neg = 0;

    if (q < end && (*q == 'e' || *q == 'E')) {
        q++;

        if (*q == '+' || *q == '-') {
            neg = (*q++ == '-');
        }

        for ( /* void */ ; q < end && *q >= '0' && *q <= '9'; q++) {
            if (exp < 100000) {
                exp = exp * 10 + (*q - '0');
            }
        }
    }

    mag = (digits ? digits - 1 : -(lead + 1)) + (neg ? -exp : exp);

    if (mag < 308) {
        return 1;
    }

    if (mag > 308 || (size_t) (end - p) >= sizeof(buf)) {
        return 0;
    }

    *ngx_cpymem(buf, p, end - p) = '\0';

    d = strtod((char *) buf, NULL);

    return d <= DBL_MAX && d >= -DBL_MAX;
}


/* with parent set, the value is built and appended to parent */

static u_char *
ngx_http_mcp_json_value(ngx_http_mcp_json_scan_t *scan, u_char *p,
    ngx_uint_t depth, cJSON *parent)
{
    u_char                    *start, *q;
    cJSON                     *node;
    ngx_http_mcp_json_name_t   text;

    if (p == scan->end) {
        scan->error = "Parse error: unexpected end of input";
        return NULL;
    }

    switch (*p) {

    case '"':
        q = ngx_http_mcp_json_string(scan, p, &text);

        if (q == NULL || parent == NULL) {
            return q;
        }

        node = ngx_http_mcp_json_node(scan, parent, cJSON_String);
        if (node == NULL) {
            return NULL;
        }

        node->valuestring = ngx_http_mcp_json_text(scan, p, q - p - 2,
                                                   text.plain);

        return (node->valuestring != NULL) ? q : NULL;

    case '{':
        return ngx_http_mcp_json_object(scan, p, depth, NULL, parent);

    case '[':
        return ngx_http_mcp_json_array(scan, p, depth, parent);
    }

    start = p;
    p = ngx_http_mcp_json_literal(p, scan->end);

    if (p == NULL) {
        scan->error = NULL;
        return NULL;
    }

    if (!ngx_http_mcp_json_number_fits(start, p)) {
        scan->error = "Parse error: number out of range";
        return NULL;
    }

    if (parent != NULL
        && ngx_http_mcp_json_leaf(scan, parent, start, p) != NGX_OK)
    {
        return NULL;
    }

    return p;
}


/*
 * p points at '{'; with id set, keeps the raw text of the "id" member
 * (the object is a message).  Returns the position after the object.
 */

static u_char *
ngx_http_mcp_json_object(ngx_http_mcp_json_scan_t *scan, u_char *p,
    ngx_uint_t depth, ngx_str_t *id, cJSON *parent)
{
    u_char                    *value, two[4];
    size_t                     raw;
    cJSON                     *obj, *member;
    uint32_t                   object;
    ngx_uint_t                 i, n;
    ngx_http_mcp_json_name_t   names[NGX_HTTP_MCP_JSON_SMALL], name;

    if (depth == NGX_HTTP_MCP_JSON_MAX_DEPTH) {
        scan->error = "Parse error: nesting too deep";
        return NULL;
    }

    obj = NULL;

    if (parent != NULL) {
        obj = ngx_http_mcp_json_node(scan, parent, cJSON_Object);
        if (obj == NULL) {
            return NULL;
        }
    }

    p = ngx_http_mcp_json_ws(p + 1, scan->end);

    if (p < scan->end && *p == '}') {
        return p + 1;
    }

    n = 0;
    object = 0;

    for ( ;; ) {

        if (p == scan->end || *p != '"') {
            return NULL;
        }

        name.key = p;
        name.object = 0;

        p = ngx_http_mcp_json_string(scan, p, &name);
        if (p == NULL) {
            return NULL;
        }

        raw = p - name.key - 2;

        p = ngx_http_mcp_json_ws(p, scan->end);

        if (p == scan->end || *p != ':') {
            return NULL;
        }

        value = ngx_http_mcp_json_ws(p + 1, scan->end);

        p = ngx_http_mcp_json_value(scan, value, depth + 1, obj);
        if (p == NULL) {
            return NULL;
        }

        if (obj != NULL) {
            /* the member just built is the last child */
            member = obj->child->prev;
            member->string = (name.len == raw)
                             ? ngx_http_mcp_json_known(name.key + 1, raw)
                             : NULL;

            if (member->string != NULL) {
                member->type |= cJSON_StringIsConst;

            } else {
                member->string = ngx_http_mcp_json_text(scan, name.key, raw,
                                                        name.len == raw);
                if (member->string == NULL) {
                    return NULL;
                }
            }

            if ((member->type & 0xff) == cJSON_Number && name.len == 13
                && ngx_strcmp(member->string, "progressToken") == 0
                && ngx_http_mcp_json_source(scan, member, value, p)
                   != NGX_OK)
            {
                return NULL;
            }
        }

        if (n < NGX_HTTP_MCP_JSON_SMALL) {
            for (i = 0; i < n; i++) {
                /* most names differ in length: no call for those */
                if (names[i].len == name.len
                    && ngx_http_mcp_json_names_equal(scan, &names[i], &name))
                {
                    goto duplicate;
                }
            }

            names[n++] = name;

        } else {
            if (object == 0) {
                /* too many to compare pairwise: into the table */
                object = ++scan->objects;

                for (i = 0; i < n; i++) {
                    names[i].object = object;

                    if (ngx_http_mcp_json_name_add(scan, &names[i])
                        != NGX_OK)
                    {
                        return NULL;
                    }
                }
            }

            name.object = object;

            switch (ngx_http_mcp_json_name_add(scan, &name)) {
            case NGX_OK:
                break;
            case NGX_DECLINED:
                goto duplicate;
            default:
                scan->error = "Parse error: out of memory";
                return NULL;
            }
        }

        if (id != NULL && id->data == NULL && name.len == 2
            && ngx_http_mcp_json_unescape(name.key, two) == 2
            && two[0] == 'i' && two[1] == 'd')
        {
            id->data = value;
            id->len = p - value;
        }

        p = ngx_http_mcp_json_ws(p, scan->end);

        if (p < scan->end && *p == '}') {
            return p + 1;
        }

        if (p == scan->end || *p != ',') {
            return NULL;
        }

        p = ngx_http_mcp_json_ws(p + 1, scan->end);
    }

duplicate:

    scan->error = "Parse error: duplicate member name";

    return NULL;
}


static u_char *
ngx_http_mcp_json_array(ngx_http_mcp_json_scan_t *scan, u_char *p,
    ngx_uint_t depth, cJSON *parent)
{
    cJSON  *array;

    if (depth == NGX_HTTP_MCP_JSON_MAX_DEPTH) {
        scan->error = "Parse error: nesting too deep";
        return NULL;
    }

    array = NULL;

    if (parent != NULL) {
        array = ngx_http_mcp_json_node(scan, parent, cJSON_Array);
        if (array == NULL) {
            return NULL;
        }
    }

    p = ngx_http_mcp_json_ws(p + 1, scan->end);

    if (p < scan->end && *p == ']') {
        return p + 1;
    }

    for ( ;; ) {
        p = ngx_http_mcp_json_value(scan, p, depth + 1, array);
        if (p == NULL) {
            return NULL;
        }

        p = ngx_http_mcp_json_ws(p, scan->end);

        if (p < scan->end && *p == ']') {
            return p + 1;
        }

        if (p == scan->end || *p != ',') {
            return NULL;
        }

        p = ngx_http_mcp_json_ws(p + 1, scan->end);
    }
}


/*
 * The whole body, once: a message or a batch of them, and nothing after.
 * Pushes one ngx_str_t per message to ids: the raw id text, or empty.
 * Without ids, the body is any one JSON text.
 */

static ngx_int_t
ngx_http_mcp_json_scan(ngx_http_mcp_json_scan_t *scan, u_char *p,
    ngx_array_t *ids, cJSON *top)
{
    cJSON      *batch;
    ngx_str_t  *id;

    p = ngx_http_mcp_json_ws(p, scan->end);

    if (ids == NULL) {
        /* any JSON text, not a message */
        p = ngx_http_mcp_json_value(scan, p, 0, top);
        if (p == NULL) {
            return NGX_DECLINED;
        }

        goto done;
    }

    if (p < scan->end && *p == '[') {
        batch = NULL;

        if (top != NULL) {
            batch = ngx_http_mcp_json_node(scan, top, cJSON_Array);
            if (batch == NULL) {
                return NGX_DECLINED;
            }
        }

        p = ngx_http_mcp_json_ws(p + 1, scan->end);

        if (p < scan->end && *p == ']') {
            p++;
            goto done;
        }

        for ( ;; ) {
            id = ngx_array_push(ids);
            if (id == NULL) {
                return NGX_ERROR;
            }

            ngx_str_null(id);

            p = (p < scan->end && *p == '{')
                ? ngx_http_mcp_json_object(scan, p, 1, id, batch)
                : ngx_http_mcp_json_value(scan, p, 1, batch);

            if (p == NULL) {
                return NGX_DECLINED;
            }

            p = ngx_http_mcp_json_ws(p, scan->end);

            if (p < scan->end && *p == ']') {
                p++;
                goto done;
            }

            if (p == scan->end || *p != ',') {
                return NGX_DECLINED;
            }

            p = ngx_http_mcp_json_ws(p + 1, scan->end);
        }
    }

    id = ngx_array_push(ids);
    if (id == NULL) {
        return NGX_ERROR;
    }

    ngx_str_null(id);

    p = (p < scan->end && *p == '{')
        ? ngx_http_mcp_json_object(scan, p, 0, id, top)
        : ngx_http_mcp_json_value(scan, p, 0, top);

    if (p == NULL) {
        return NGX_DECLINED;
    }

done:

    if (ngx_http_mcp_json_ws(p, scan->end) != scan->end) {
        scan->error = "Parse error: data after the message";
        return NGX_DECLINED;
    }

    return NGX_OK;
}


/*
 * The text of a JSON string between its quotes, [p, p + len), unescaped
 * into dst (len bytes are room enough: escapes only shrink), as the scan
 * reads it.  Returns the length, or NGX_ERROR: an escape the scan refuses
 * (not whole, "\u0000", a lone surrogate).  mcp_pass reads the ids of an
 * upstream's streamed reply with it.
 */

ssize_t
ngx_http_mcp_json_decode(u_char *p, size_t len, u_char *dst)
{
    u_char                    *d, *end;
    uint32_t                   cp;
    ngx_http_mcp_json_scan_t   scan;

    end = p + len;
    scan.end = end;
    d = dst;

    while (p < end) {

        if (*p != '\\') {
            *d++ = *p++;
            continue;
        }

        p = ngx_http_mcp_json_escape(&scan, p, &cp);
        if (p == NULL) {
            return NGX_ERROR;
        }

        d += ngx_http_mcp_json_utf8(d, cp);
    }

    return d - dst;
}


/* the scan without a tree; ids as ngx_http_mcp_json_parse() takes them */

static ngx_int_t
ngx_http_mcp_json_check(ngx_pool_t *pool, u_char *p, size_t len,
    ngx_array_t *ids, const char **error)
{
    return ngx_http_mcp_json_run(pool, p, len, ids, NULL, error);
}


/*
 * The scan that also builds the tree: *root is what cJSON_Parse() would
 * have made of the body (free it with cJSON_Delete()), NULL unless
 * NGX_OK.
 */

ngx_int_t
ngx_http_mcp_json_parse(ngx_pool_t *pool, u_char *p, size_t len,
    ngx_array_t *ids, cJSON **root, const char **error)
{
    cJSON      top;
    ngx_int_t  rc;

    /* a parent for the top-level value, which then stands alone */

    ngx_memzero(&top, sizeof(cJSON));
    top.type = cJSON_Array;

    rc = ngx_http_mcp_json_run(pool, p, len, ids, &top, error);

    if (rc != NGX_OK) {
        cJSON_Delete(top.child);
        *root = NULL;
        return rc;
    }

    *root = top.child;
    (*root)->prev = NULL;

    return NGX_OK;
}


static ngx_int_t
ngx_http_mcp_json_run(ngx_pool_t *pool, u_char *p, size_t len,
    ngx_array_t *ids, cJSON *top, const char **error)
{
    ngx_int_t                  rc;
    ngx_http_mcp_json_scan_t   scan;

    while (ngx_http_mcp_json_seed == 0) {
        if (RAND_bytes((u_char *) &ngx_http_mcp_json_seed,
                       sizeof(uint32_t)) != 1)
        {
            return NGX_ERROR;
        }
    }

    if (len == 0) {
        /* an empty body may have no buffer at all */
        *error = "Parse error: unexpected end of input";
        return NGX_DECLINED;
    }

    ngx_memzero(&scan, sizeof(ngx_http_mcp_json_scan_t));
    scan.end = p + len;
    scan.pool = pool;
    scan.seed = ngx_http_mcp_json_seed;

    rc = ngx_http_mcp_json_scan(&scan, p, ids, top);

    if (scan.table) {
        ngx_free(scan.table);
    }

    *error = scan.error;

    return scan.nomem ? NGX_ERROR : rc;
}


/*
 * A node appended to parent, as cJSON links a list: the first child's
 * prev is the last child, the last child's next is NULL.
 */

static cJSON *
ngx_http_mcp_json_node(ngx_http_mcp_json_scan_t *scan, cJSON *parent,
    int type)
{
    cJSON  *node, *last;

    node = cJSON_malloc(sizeof(cJSON));
    if (node == NULL) {
        scan->error = "Parse error: out of memory";
        scan->nomem = 1;
        return NULL;
    }

    ngx_memzero(node, sizeof(cJSON));
    node->type = type;

    if (parent->child == NULL) {
        parent->child = node;

    } else {
        last = parent->child->prev;
        last->next = node;
        node->prev = last;
    }

    parent->child->prev = node;

    return node;
}


/* a number, true, false or null (p to end, checked) as cJSON makes it */

static ngx_int_t
ngx_http_mcp_json_leaf(ngx_http_mcp_json_scan_t *scan, cJSON *parent,
    u_char *p, u_char *end)
{
    cJSON  *node;

    node = ngx_http_mcp_json_node(scan, parent,
                                  (*p == 't') ? cJSON_True
                                  : (*p == 'f') ? cJSON_False
                                  : (*p == 'n') ? cJSON_NULL
                                  : cJSON_Number);
    if (node == NULL) {
        return NGX_ERROR;
    }

    if (node->type == cJSON_True) {
        node->valueint = 1;
    }

    if (node->type == cJSON_Number
        && ngx_http_mcp_json_number(scan->pool, node, p, end) != NGX_OK)
    {
        scan->error = "Parse error: out of memory";
        scan->nomem = 1;
        return NGX_ERROR;
    }

    return NGX_OK;
}


/*
 * A number the scan accepted (p to end) as cJSON_Parse() holds it: the
 * double from strtod(), valueint saturated.  NGX_ERROR: out of memory.
 */

static ngx_int_t
ngx_http_mcp_json_number(ngx_pool_t *pool, cJSON *node, u_char *p,
    u_char *end)
{
    u_char   *text, *q, buf[NGX_HTTP_MCP_JSON_NUMBER_LEN];
    double    d;
    int64_t   n;

    /*
     * An integer of up to 15 digits (ids, counts) is exact in a double:
     * its value is the one strtod() would give, without strtod()'s cost.
     */

    q = (*p == '-') ? p + 1 : p;

    if (end - q <= 15) {
        for (n = 0; q < end && *q >= '0' && *q <= '9'; q++) {
            n = n * 10 + (*q - '0');
        }

        if (q == end) {
            d = (*p == '-') ? -(double) n : (double) n;
            goto done;
        }
    }

    text = buf;

    if ((size_t) (end - p) >= sizeof(buf)) {
        /* many digits, in range: number_fits() checked it */
        text = ngx_pnalloc(pool, end - p + 1);
        if (text == NULL) {
            return NGX_ERROR;
        }
    }

    *ngx_cpymem(text, p, end - p) = '\0';

    d = strtod((char *) text, NULL);

done:

    node->valuedouble = d;
    node->valueint = (d >= INT_MAX) ? INT_MAX
                     : (d <= (double) INT_MIN) ? INT_MIN
                     : (int) d;

    return NGX_OK;
}


/*
 * A number's text as the client wrote it (p to end), kept in its node's
 * valuestring: cJSON holds a double, and a progress token beyond 2^53 is
 * echoed digit for digit.  cJSON_Delete() frees the text, and
 * cJSON_Duplicate() copies it; printing reads the double.  Only where it
 * is needed: a copy and an allocation for every number of a body would
 * cost every request, for the few numbers whose text is echoed.
 */

static ngx_int_t
ngx_http_mcp_json_source(ngx_http_mcp_json_scan_t *scan, cJSON *node,
    u_char *p, u_char *end)
{
    u_char  *text;

    text = cJSON_malloc(end - p + 1);
    if (text == NULL) {
        scan->error = "Parse error: out of memory";
        scan->nomem = 1;
        return NGX_ERROR;
    }

    *ngx_cpymem(text, p, end - p) = '\0';

    node->valuestring = (char *) text;

    return NGX_OK;
}


/*
 * A string the scan accepted (p at its opening quote, raw bytes between
 * the quotes) as cJSON holds it: unescaped, NUL-terminated.  plain: it
 * has no escapes (the scan saw none).
 */

static char *
ngx_http_mcp_json_text(ngx_http_mcp_json_scan_t *scan, u_char *p, size_t raw,
    ngx_uint_t plain)
{
    u_char  *text;
    size_t   len;

    text = cJSON_malloc(raw + 1);
    if (text == NULL) {
        scan->error = "Parse error: out of memory";
        scan->nomem = 1;
        return NULL;
    }

    if (plain) {
        len = raw;
        ngx_memcpy(text, p + 1, raw);

    } else {
        /* escapes only shrink: the text fits in raw bytes */
        len = ngx_http_mcp_json_unescape(p, text);
    }

    text[len] = '\0';

    return (char *) text;
}


/*
 * The member names every MCP request has, or many do: a built member
 * whose name is one of them points at the literal (cJSON_StringIsConst:
 * cJSON_Delete() leaves it) instead of a copy, an allocation, a copy
 * and a free fewer a member.  p: the name's bytes without escapes, len
 * of them.  NULL: not one of them.
 */

static char *
ngx_http_mcp_json_known(u_char *p, size_t len)
{
    const char  *name;

    switch (len) {

    case 2:
        name = "id";
        break;

    case 4:
        name = (p[0] == 'n') ? "name" : "task";
        break;

    case 5:
        name = "_meta";
        break;

    case 6:
        name = (p[0] == 'm') ? "method"
               : (p[0] == 'p') ? "params" : "cursor";
        break;

    case 7:
        name = (p[0] == 'j') ? "jsonrpc" : "version";
        break;

    case 9:
        name = "arguments";
        break;

    case 13:
        name = "progressToken";
        break;

    case 32:
        name = ngx_http_mcp_json_meta_level;
        break;

    case 34:
        name = ngx_http_mcp_json_meta_info;
        break;

    case 39:
        name = ngx_http_mcp_json_meta_version;
        break;

    case 42:
        name = ngx_http_mcp_json_meta_caps;
        break;

    default:
        return NULL;
    }

    return (ngx_memcmp(p, name, len) == 0) ? (char *) name : NULL;
}


/*
 * Any JSON the module reads besides a POST body (a token's header and
 * claims, a key set) passes the same strict scan: "aud" with a
 * "\u0000" in it, or two "sub" members, must not mean one thing here and
 * another to the token's issuer.  NGX_OK, NGX_DECLINED or NGX_ERROR.
 */

ngx_int_t
ngx_http_mcp_json_strict(ngx_pool_t *pool, u_char *p, size_t len,
    const char **error)
{
    return ngx_http_mcp_json_check(pool, p, len, NULL, error);
}
