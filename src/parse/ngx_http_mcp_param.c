
/*
 * Mcp-Param-* headers against a tool call's arguments (see
 * ngx_http_mcp_param.h).
 *
 * The hardest choice is what a value means.  A client sends a value that
 * a header cannot carry (non-ASCII, control characters, leading or
 * trailing white space) as "=?base64?<payload>?=", and the server must
 * refuse a payload that is not valid Base64.  Lenient decoders (nginx's,
 * Node's) take a payload without its padding or with stray bits, which
 * gives one value many spellings, and a proxy that routed on the header
 * text would see a value the tool never gets: here only the canonical
 * spelling of RFC 4648 decodes.  A value that merely resembles the
 * wrapper (no "?=" at its end, "=?BASE64?") is literal, as the spec's
 * own examples say, and compares as it is.
 */


#include "ngx_http_mcp_param.h"
#include "ngx_http_mcp_json.h"


#define NGX_HTTP_MCP_PARAM_B64_HEAD  "=?base64?"
#define NGX_HTTP_MCP_PARAM_B64_TAIL  "?="

/* nesting past this is not looked into (arguments stop at 5 by default) */
#define NGX_HTTP_MCP_PARAM_DEPTH     32

/* the most of a header's name an error message repeats */
#define NGX_HTTP_MCP_PARAM_NAME_LEN  64


typedef ngx_int_t (*ngx_http_mcp_param_pt)(void *data, cJSON *prop,
    cJSON *name, cJSON *value);


typedef struct {
    ngx_pool_t                *pool;
    ngx_array_t               *headers;     /* ngx_keyval_t, or NULL */
    ngx_array_t               *names;       /* ngx_str_t: declared so far */
    u_char                   **error;
} ngx_http_mcp_param_ctx_t;


static ngx_int_t ngx_http_mcp_param_walk(cJSON *schema, cJSON *args,
    ngx_uint_t depth, ngx_http_mcp_param_pt handler, void *data);
static ngx_int_t ngx_http_mcp_param_one(void *data, cJSON *prop,
    cJSON *name, cJSON *value);
static ngx_int_t ngx_http_mcp_param_declared(void *data, cJSON *prop,
    cJSON *name, cJSON *value);
static ngx_int_t ngx_http_mcp_param_base64(ngx_pool_t *pool, u_char *p,
    size_t len, ngx_str_t *out);
static ngx_int_t ngx_http_mcp_param_b64_value(u_char c);
static ngx_int_t ngx_http_mcp_param_matches(ngx_pool_t *pool, cJSON *value,
    ngx_str_t *text);
static ngx_uint_t ngx_http_mcp_param_primitive(cJSON *type);
static ngx_uint_t ngx_http_mcp_param_is_number(ngx_str_t *text);
static ngx_uint_t ngx_http_mcp_param_is_token(const char *name);
static ngx_uint_t ngx_http_mcp_param_name_is(ngx_str_t *s, const char *name);
static ngx_int_t ngx_http_mcp_param_refuse(ngx_pool_t *pool, u_char **error,
    const char *fmt, const char *name);


ngx_int_t
ngx_http_mcp_param_decode(ngx_pool_t *pool, ngx_str_t *value, ngx_str_t *out)
{
    size_t   head, tail, i;
    u_char  *p;

    head = sizeof(NGX_HTTP_MCP_PARAM_B64_HEAD) - 1;
    tail = sizeof(NGX_HTTP_MCP_PARAM_B64_TAIL) - 1;
    p = value->data;

    /* most values are plain: their first byte says so */

    if (value->len < head + tail
        || p[0] != '='
        || ngx_strncmp(p, NGX_HTTP_MCP_PARAM_B64_HEAD, head) != 0
        || ngx_strncmp(p + value->len - tail, NGX_HTTP_MCP_PARAM_B64_TAIL,
                       tail)
           != 0)
    {
        /*
         * A value with control characters had to come in Base64: nginx
         * takes them in a header (all but CR, LF and NUL), and a proxy
         * before us may have read them otherwise.  HTAB is field text.
         */

        for (i = 0; i < value->len; i++) {

            /* printable ASCII, nearly every byte, in one comparison */
            if ((u_char) (p[i] - 0x20) < 0x5f) {
                continue;
            }

            if ((p[i] < 0x20 && p[i] != '\t') || p[i] == 0x7f) {
                return NGX_ABORT;
            }
        }

        *out = *value;
        return NGX_OK;
    }

    return ngx_http_mcp_param_base64(pool, p + head,
                                     value->len - head - tail, out);
}


/*
 * The other way: a value as it is when a header can carry it so, else
 * in the wrapper (a byte past ASCII, a control character, white space
 * at an end, or text that looks like the wrapper).  A name a client
 * sent in Base64 (CR or LF in it) never reaches a next hop raw.
 */

ngx_int_t
ngx_http_mcp_param_encode(ngx_pool_t *pool, ngx_str_t *value, ngx_str_t *out)
{
    u_char      *p, *last;
    ngx_str_t    b64;
    ngx_uint_t   plain;

    p = value->data;
    last = p + value->len;

    plain = (value->len > 0
             && *p != ' ' && *p != '\t' && last[-1] != ' ' && last[-1] != '\t'
             && !(value->len >= 2 && p[0] == '=' && p[1] == '?'));

    for ( /* void */ ; plain && p < last; p++) {
        if (*p < 0x20 || *p >= 0x7f) {
            plain = 0;
        }
    }

    if (plain) {
        *out = *value;
        return NGX_OK;
    }

    out->len = sizeof(NGX_HTTP_MCP_PARAM_B64_HEAD) - 1
               + ngx_base64_encoded_length(value->len)
               + sizeof(NGX_HTTP_MCP_PARAM_B64_TAIL) - 1;
    out->data = ngx_pnalloc(pool, out->len);
    if (out->data == NULL) {
        return NGX_ERROR;
    }

    b64.data = ngx_cpymem(out->data, NGX_HTTP_MCP_PARAM_B64_HEAD,
                          sizeof(NGX_HTTP_MCP_PARAM_B64_HEAD) - 1);
    ngx_encode_base64(&b64, value);

    (void) ngx_cpymem(b64.data + b64.len, NGX_HTTP_MCP_PARAM_B64_TAIL,
                      sizeof(NGX_HTTP_MCP_PARAM_B64_TAIL) - 1);

    return NGX_OK;
}


ngx_int_t
ngx_http_mcp_param_check(ngx_pool_t *pool, cJSON *schema, cJSON *arguments,
    ngx_array_t *headers, u_char **error)
{
    ngx_http_mcp_param_ctx_t  ctx;

    ctx.pool = pool;
    ctx.headers = headers;
    ctx.names = NULL;
    ctx.error = error;

    return ngx_http_mcp_param_walk(schema, arguments, 0,
                                   ngx_http_mcp_param_one, &ctx);
}


ngx_int_t
ngx_http_mcp_param_schema(ngx_pool_t *pool, cJSON *schema,
    ngx_uint_t *declared, u_char **error)
{
    ngx_int_t                 rc;
    ngx_http_mcp_param_ctx_t  ctx;

    ctx.pool = pool;
    ctx.headers = NULL;
    ctx.error = error;

    ctx.names = ngx_array_create(pool, 4, sizeof(ngx_str_t));
    if (ctx.names == NULL) {
        return NGX_ERROR;
    }

    rc = ngx_http_mcp_param_walk(schema, NULL, 0,
                                 ngx_http_mcp_param_declared, &ctx);

    *declared = ctx.names->nelts;

    return rc;
}


/*
 * Every property reachable through "properties" from the schema, with
 * the argument at the same place (NULL when absent): the annotated ones
 * go to the handler.  Annotations under items, allOf and the like name
 * no single argument and are not followed.
 */

static ngx_int_t
ngx_http_mcp_param_walk(cJSON *schema, cJSON *args, ngx_uint_t depth,
    ngx_http_mcp_param_pt handler, void *data)
{
    cJSON      *props, *prop, *name, *value;
    ngx_int_t   rc;

    props = ngx_http_mcp_json_get(schema, "properties");

    if (!cJSON_IsObject(props) || depth >= NGX_HTTP_MCP_PARAM_DEPTH) {
        return NGX_OK;
    }

    cJSON_ArrayForEach(prop, props) {

        if (!cJSON_IsObject(prop)) {
            continue;
        }

        value = cJSON_IsObject(args)
                ? ngx_http_mcp_json_get(args, prop->string)
                : NULL;

        name = ngx_http_mcp_json_get(prop, "x-mcp-header");

        if (name != NULL) {
            rc = handler(data, prop, name, value);
            if (rc != NGX_OK) {
                return rc;
            }
        }

        rc = ngx_http_mcp_param_walk(prop, value, depth + 1, handler, data);
        if (rc != NGX_OK) {
            return rc;
        }
    }

    return NGX_OK;
}


/* one annotated argument of a call and its header */

static ngx_int_t
ngx_http_mcp_param_one(void *data, cJSON *prop, cJSON *name, cJSON *value)
{
    ngx_http_mcp_param_ctx_t *ctx = data;

    ngx_int_t      rc;
    ngx_str_t      text;
    ngx_uint_t     i, n;
    ngx_keyval_t  *kv, *h;

    if (!cJSON_IsString(name)
        || !ngx_http_mcp_param_is_token(name->valuestring))
    {
        /* not a header name: no client can have sent it */
        return NGX_OK;
    }

    h = NULL;
    n = 0;

    if (ctx->headers != NULL) {
        kv = ctx->headers->elts;

        for (i = 0; i < ctx->headers->nelts; i++) {
            if (ngx_http_mcp_param_name_is(&kv[i].key, name->valuestring)) {
                h = &kv[i];
                n++;
            }
        }
    }

    if (n > 1) {
        /* which one a proxy routed on is anybody's guess */
        return ngx_http_mcp_param_refuse(ctx->pool, ctx->error,
                   "Header mismatch: " NGX_HTTP_MCP_PARAM_PREFIX "%*s "
                   "is repeated", name->valuestring);
    }

    if (value == NULL || cJSON_IsNull(value)) {
        if (n == 0) {
            return NGX_OK;
        }

        return ngx_http_mcp_param_refuse(ctx->pool, ctx->error,
                   "Header mismatch: " NGX_HTTP_MCP_PARAM_PREFIX "%*s "
                   "without its argument", name->valuestring);
    }

    if (!cJSON_IsString(value) && !cJSON_IsNumber(value)
        && !cJSON_IsBool(value))
    {
        /* no header can carry it; the schema refuses it */
        return NGX_OK;
    }

    if (h == NULL) {
        return ngx_http_mcp_param_refuse(ctx->pool, ctx->error,
                   "Header mismatch: " NGX_HTTP_MCP_PARAM_PREFIX "%*s "
                   "is missing", name->valuestring);
    }

    rc = ngx_http_mcp_param_decode(ctx->pool, &h->value, &text);

    if (rc == NGX_ABORT) {
        return ngx_http_mcp_param_refuse(ctx->pool, ctx->error,
                   "Header mismatch: " NGX_HTTP_MCP_PARAM_PREFIX "%*s "
                   "has a control character: it must come in Base64",
                   name->valuestring);
    }

    if (rc == NGX_DECLINED) {
        return ngx_http_mcp_param_refuse(ctx->pool, ctx->error,
                   "Header mismatch: " NGX_HTTP_MCP_PARAM_PREFIX "%*s "
                   "is not valid Base64", name->valuestring);
    }

    if (rc != NGX_OK) {
        return NGX_ERROR;
    }

    rc = ngx_http_mcp_param_matches(ctx->pool, value, &text);

    if (rc == NGX_DECLINED) {
        return ngx_http_mcp_param_refuse(ctx->pool, ctx->error,
                   "Header mismatch: " NGX_HTTP_MCP_PARAM_PREFIX "%*s "
                   "differs from the argument", name->valuestring);
    }

    return rc;
}


/* one annotation of a tool's schema, at configuration time */

static ngx_int_t
ngx_http_mcp_param_declared(void *data, cJSON *prop, cJSON *name,
    cJSON *value)
{
    ngx_http_mcp_param_ctx_t *ctx = data;

    cJSON       *type;
    ngx_str_t   *seen, *s;
    ngx_uint_t   i;

    if (!cJSON_IsString(name) || name->valuestring[0] == '\0') {
        return ngx_http_mcp_param_refuse(ctx->pool, ctx->error,
                   "the x-mcp-header of property \"%*s\" must be a "
                   "non-empty string", prop->string);
    }

    if (!ngx_http_mcp_param_is_token(name->valuestring)) {
        return ngx_http_mcp_param_refuse(ctx->pool, ctx->error,
                   "x-mcp-header \"%*s\" is not an HTTP field name (token)",
                   name->valuestring);
    }

    type = ngx_http_mcp_json_get(prop, "type");

    if (!ngx_http_mcp_param_primitive(type)) {
        return ngx_http_mcp_param_refuse(ctx->pool, ctx->error,
                   "x-mcp-header \"%*s\" is on a property that is not of "
                   "type string, integer or boolean", name->valuestring);
    }

    seen = ctx->names->elts;

    for (i = 0; i < ctx->names->nelts; i++) {
        if (ngx_http_mcp_param_name_is(&seen[i], name->valuestring)) {
            return ngx_http_mcp_param_refuse(ctx->pool, ctx->error,
                       "x-mcp-header \"%*s\" is declared twice",
                       name->valuestring);
        }
    }

    s = ngx_array_push(ctx->names);
    if (s == NULL) {
        return NGX_ERROR;
    }

    s->data = (u_char *) name->valuestring;
    s->len = ngx_strlen(s->data);

    return NGX_OK;
}


/*
 * "string", "integer" or "boolean", or a list of one of them and "null":
 * a null argument has no header, so a nullable one may be mirrored too.
 */

static ngx_uint_t
ngx_http_mcp_param_primitive(cJSON *type)
{
    cJSON       *t;
    ngx_uint_t   n;

    if (cJSON_IsString(type)) {
        return ngx_strcmp(type->valuestring, "string") == 0
               || ngx_strcmp(type->valuestring, "integer") == 0
               || ngx_strcmp(type->valuestring, "boolean") == 0;
    }

    if (!cJSON_IsArray(type)) {
        return 0;
    }

    n = 0;

    cJSON_ArrayForEach(t, type) {

        if (cJSON_IsString(t) && ngx_strcmp(t->valuestring, "null") == 0) {
            continue;
        }

        if (n++ || !cJSON_IsString(t) || !ngx_http_mcp_param_primitive(t)) {
            return 0;
        }
    }

    return n == 1;
}


/* canonical RFC 4648 Base64 only: one spelling for one value */

static ngx_int_t
ngx_http_mcp_param_base64(ngx_pool_t *pool, u_char *p, size_t len,
    ngx_str_t *out)
{
    u_char      *d;
    size_t       i, pad;
    ngx_int_t    v[4];
    ngx_uint_t   k;

    if (len % 4) {
        return NGX_DECLINED;
    }

    pad = 0;

    if (len && p[len - 1] == '=') {
        pad = (p[len - 2] == '=') ? 2 : 1;
    }

    d = ngx_pnalloc(pool, len / 4 * 3 + 1);
    if (d == NULL) {
        return NGX_ERROR;
    }

    out->data = d;

    for (i = 0; i < len; i += 4) {

        for (k = 0; k < 4; k++) {
            if (i + k >= len - pad) {
                v[k] = 0;
                continue;
            }

            v[k] = ngx_http_mcp_param_b64_value(p[i + k]);

            if (v[k] < 0) {
                return NGX_DECLINED;
            }
        }

        *d++ = (u_char) (v[0] << 2 | v[1] >> 4);

        if (i + 4 < len || pad == 0) {
            *d++ = (u_char) ((v[1] & 0x0f) << 4 | v[2] >> 2);
            *d++ = (u_char) ((v[2] & 0x03) << 6 | v[3]);
            continue;
        }

        /* the last group: the bits the padding leaves over must be 0 */

        if (pad == 2) {
            if (v[1] & 0x0f) {
                return NGX_DECLINED;
            }

            break;
        }

        if (v[2] & 0x03) {
            return NGX_DECLINED;
        }

        *d++ = (u_char) ((v[1] & 0x0f) << 4 | v[2] >> 2);
    }

    *d = '\0';
    out->len = d - out->data;

    return NGX_OK;
}


static ngx_int_t
ngx_http_mcp_param_b64_value(u_char c)
{
    if (c >= 'A' && c <= 'Z') {
        return c - 'A';
    }

    if (c >= 'a' && c <= 'z') {
        return c - 'a' + 26;
    }

    if (c >= '0' && c <= '9') {
        return c - '0' + 52;
    }

    if (c == '+') {
        return 62;
    }

    if (c == '/') {
        return 63;
    }

    return -1;
}


/*
 * A string is its own text; a boolean is "true" or "false"; a number is
 * any JSON number of the same value, so that 42, 42.0 and 4.2e1 agree
 * as they do for a client that prints numbers its own way.
 */

static ngx_int_t
ngx_http_mcp_param_matches(ngx_pool_t *pool, cJSON *value, ngx_str_t *text)
{
    u_char  *s;
    size_t   len;
    double   d;

    if (cJSON_IsString(value)) {
        len = ngx_strlen(value->valuestring);

        return (len == text->len
                && ngx_memcmp(value->valuestring, text->data, len) == 0)
               ? NGX_OK : NGX_DECLINED;
    }

    if (cJSON_IsBool(value)) {
        s = (u_char *) (cJSON_IsTrue(value) ? "true" : "false");
        len = ngx_strlen(s);

        return (len == text->len && ngx_memcmp(s, text->data, len) == 0)
               ? NGX_OK : NGX_DECLINED;
    }

    if (!ngx_http_mcp_param_is_number(text)) {
        return NGX_DECLINED;
    }

    s = ngx_pnalloc(pool, text->len + 1);
    if (s == NULL) {
        return NGX_ERROR;
    }

    *ngx_cpymem(s, text->data, text->len) = '\0';

    d = strtod((char *) s, NULL);

    return (d == value->valuedouble) ? NGX_OK : NGX_DECLINED;
}


/* the JSON number grammar (RFC 8259), nothing around it */

static ngx_uint_t
ngx_http_mcp_param_is_number(ngx_str_t *text)
{
    u_char  *p, *last;

    p = text->data;
    last = p + text->len;

    if (p < last && *p == '-') {
        p++;
    }

    if (p == last || *p < '0' || *p > '9') {
        return 0;
    }

    if (*p++ != '0') {
        while (p < last && *p >= '0' && *p <= '9') {
            p++;
        }
    }

    if (p < last && *p == '.') {
        if (++p == last || *p < '0' || *p > '9') {
            return 0;
        }

        while (p < last && *p >= '0' && *p <= '9') {
            p++;
        }
    }

    if (p < last && (*p == 'e' || *p == 'E')) {
        p++;

        if (p < last && (*p == '+' || *p == '-')) {
            p++;
        }

        if (p == last || *p < '0' || *p > '9') {
            return 0;
        }

        while (p < last && *p >= '0' && *p <= '9') {
            p++;
        }
    }

    return p == last;
}


/* 1*tchar (RFC 9110, 5.6.2) */

static ngx_uint_t
ngx_http_mcp_param_is_token(const char *name)
{
    u_char  c;

    if (*name == '\0') {
        return 0;
    }

    while ((c = (u_char) *name++) != '\0') {

        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
            || (c >= '0' && c <= '9'))
        {
            continue;
        }

        if (ngx_strchr("!#$%&'*+-.^_`|~", c) == NULL) {
            return 0;
        }
    }

    return 1;
}


/* header names compare regardless of case */

static ngx_uint_t
ngx_http_mcp_param_name_is(ngx_str_t *s, const char *name)
{
    size_t  i;

    for (i = 0; i < s->len; i++) {
        if (name[i] == '\0'
            || ngx_tolower(s->data[i]) != ngx_tolower((u_char) name[i]))
        {
            return 0;
        }
    }

    return name[i] == '\0';
}


static ngx_int_t
ngx_http_mcp_param_refuse(ngx_pool_t *pool, u_char **error, const char *fmt,
    const char *name)
{
    u_char  *p;
    size_t   len;

    len = ngx_min(ngx_strlen(name), NGX_HTTP_MCP_PARAM_NAME_LEN);

    p = ngx_pnalloc(pool, ngx_strlen(fmt) + len + 1);
    if (p == NULL) {
        return NGX_ERROR;
    }

    *ngx_snprintf(p, ngx_strlen(fmt) + len, fmt, len, name) = '\0';

    *error = p;

    return NGX_DECLINED;
}
