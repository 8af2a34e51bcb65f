
/*
 * What every reply of an MCP location says to a browser: CORS for the
 * origins mcp_allowed_origins lets in, and that a reply is neither to be
 * sniffed nor stored.
 *
 * The origin a reply allows is the request's own, echoed, never "*":
 * with "*" a cache could hand one origin's reply to another, and a
 * listed origin means that origin alone.  No Allow-Credentials: an MCP
 * client sends its token in Authorization (or X-API-Key), which CORS
 * lets through once Allow-Headers names it, and cookies never mean
 * anything here.  A preflight passes authorization (the browser sends
 * none with it) and is answered here, before anything else looks at it;
 * the request it announces is checked as any other.
 */


#include "ngx_http_mcp_http.h"
#include "ngx_http_mcp_call.h"
#include "ngx_http_mcp_core.h"


/* Chromium caps Access-Control-Max-Age at 2 hours */
#define NGX_HTTP_MCP_CORS_MAX_AGE  "7200"


static ngx_int_t ngx_http_mcp_cors_header_filter(ngx_http_request_t *r);
static ngx_int_t ngx_http_mcp_cors_allow(ngx_http_request_t *r,
    ngx_str_t *methods);
static ngx_int_t ngx_http_mcp_cors_allow_headers(ngx_http_request_t *r,
    ngx_str_t *value);
static ngx_uint_t ngx_http_mcp_cors_tchar(u_char c);
static ngx_uint_t ngx_http_mcp_cors_cacheable(ngx_http_mcp_ctx_t *ctx,
    ngx_http_request_t *r);
static ngx_uint_t ngx_http_mcp_cors_has_header(ngx_http_request_t *r,
    const char *name, size_t len);


static ngx_int_t ngx_http_mcp_cors_add(ngx_http_request_t *r,
    ngx_table_elt_t *header);


static ngx_http_output_header_filter_pt  ngx_http_next_header_filter;

/* the two headers of every reply, made once (ngx_http_mcp_cors_init()) */
static ngx_table_elt_t  ngx_http_mcp_cors_nosniff;
static ngx_table_elt_t  ngx_http_mcp_cors_no_store;


/* the request headers an MCP client sends that CORS does not let pass */
static u_char  ngx_http_mcp_cors_headers[] =
    "Content-Type, Authorization, X-API-Key, DPoP, Mcp-Session-Id, "
    "MCP-Protocol-Version, Mcp-Method, Mcp-Name, Last-Event-ID";

/* the reply headers a client must read (DPoP-Nonce: RFC 9449 8) */
static ngx_str_t  ngx_http_mcp_cors_expose = ngx_string(
    "Mcp-Session-Id, MCP-Protocol-Version, WWW-Authenticate, Retry-After, "
    "DPoP-Nonce");


ngx_int_t
ngx_http_mcp_cors_init(ngx_conf_t *cf)
{
    ngx_table_elt_t  *h;

    h = &ngx_http_mcp_cors_nosniff;
    h->hash = 1;
    ngx_str_set(&h->key, "X-Content-Type-Options");
    ngx_str_set(&h->value, "nosniff");

    h = &ngx_http_mcp_cors_no_store;
    h->hash = 1;
    ngx_str_set(&h->key, "Cache-Control");
    ngx_str_set(&h->value, "no-store");

    ngx_http_next_header_filter = ngx_http_top_header_filter;
    ngx_http_top_header_filter = ngx_http_mcp_cors_header_filter;

    return NGX_OK;
}


/*
 * A preflight (OPTIONS with Origin and Access-Control-Request-Method),
 * whose Origin the caller has checked: 204 with what the endpoint
 * allows.  NGX_DECLINED: not a preflight.
 */

ngx_int_t
ngx_http_mcp_cors_preflight(ngx_http_request_t *r)
{
    ngx_str_t  methods = ngx_string("GET, POST, DELETE");

    if (!ngx_http_mcp_cors_is_preflight(r)) {
        return NGX_DECLINED;
    }

    return ngx_http_mcp_cors_allow(r, &methods);
}


/*
 * A public document (the RFC 9728 metadata, which a client reads before
 * it has a token): any origin may read it, and nothing it reads differs
 * by origin or by caller.  preflight: the 204 of a preflight, sent;
 * else NGX_OK or NGX_ERROR, the header added to the reply to come.
 */

ngx_int_t
ngx_http_mcp_cors_public(ngx_http_request_t *r, ngx_uint_t preflight)
{
    ngx_str_t  any = ngx_string("*");
    ngx_str_t  methods = ngx_string("GET");

    if (ngx_http_mcp_header_out(r, "Access-Control-Allow-Origin", &any)
        != NGX_OK)
    {
        return preflight ? NGX_HTTP_INTERNAL_SERVER_ERROR : NGX_ERROR;
    }

    return preflight ? ngx_http_mcp_cors_allow(r, &methods) : NGX_OK;
}


/* a preflight's 204: the methods, the headers, how long a browser keeps it */

static ngx_int_t
ngx_http_mcp_cors_allow(ngx_http_request_t *r, ngx_str_t *methods)
{
    ngx_str_t  value;
    ngx_str_t  max_age = ngx_string(NGX_HTTP_MCP_CORS_MAX_AGE);
    ngx_str_t  vary = ngx_string("Access-Control-Request-Headers");

    if (ngx_http_mcp_cors_allow_headers(r, &value) != NGX_OK
        || ngx_http_mcp_header_out(r, "Access-Control-Allow-Methods",
                                   methods) != NGX_OK
        || ngx_http_mcp_header_out(r, "Access-Control-Allow-Headers",
                                   &value) != NGX_OK
        || ngx_http_mcp_header_out(r, "Access-Control-Max-Age", &max_age)
           != NGX_OK
        || ngx_http_mcp_header_out(r, "Vary", &vary) != NGX_OK)
    {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    return ngx_http_mcp_send(r, NGX_HTTP_NO_CONTENT, NULL, NULL, 0);
}


ngx_uint_t
ngx_http_mcp_cors_is_preflight(ngx_http_request_t *r)
{
    return r->method == NGX_HTTP_OPTIONS
           && ngx_http_mcp_header_in(r, "origin", sizeof("origin") - 1)
              != NULL
           && ngx_http_mcp_header_in(r, "access-control-request-method",
                                sizeof("access-control-request-method") - 1)
              != NULL;
}


static ngx_int_t
ngx_http_mcp_cors_header_filter(ngx_http_request_t *r)
{
    ngx_str_t                 vary = ngx_string("Origin");
    ngx_table_elt_t          *origin;
    ngx_http_mcp_ctx_t       *ctx;
    ngx_http_mcp_loc_conf_t  *mlcf;

    mlcf = ngx_http_get_module_loc_conf(r, ngx_http_mcp_module);

    if (!mlcf->enable || r != r->main) {
        return ngx_http_next_header_filter(r);
    }

    ctx = ngx_http_get_module_ctx(r, ngx_http_mcp_module);

    if (ngx_http_mcp_cors_add(r, &ngx_http_mcp_cors_nosniff) != NGX_OK) {
        return NGX_ERROR;
    }

    /*
     * An SSE stream (a GET's, or a POST's: ctx->stream) or an upstream
     * may have said already; a POST's JSON reply has not.
     */
    if (!ngx_http_mcp_cors_cacheable(ctx, r)
        && ((ctx != NULL && ctx->stream == NULL
             && !mlcf->pass)
            || !ngx_http_mcp_cors_has_header(r, "cache-control",
                                             sizeof("cache-control") - 1))
        && ngx_http_mcp_cors_add(r, &ngx_http_mcp_cors_no_store) != NGX_OK)
    {
        return NGX_ERROR;
    }

    /* a POST's were read with its context */
    origin = (ctx != NULL)
             ? ctx->headers.origin
             : ngx_http_mcp_header_in(r, "origin", sizeof("origin") - 1);

    /* a refused origin (its 403) gets no CORS header */
    if (origin == NULL || ngx_http_mcp_check_origin(r, mlcf) != NGX_OK) {
        return ngx_http_next_header_filter(r);
    }

    if (ngx_http_mcp_header_out(r, "Access-Control-Allow-Origin",
                                &origin->value) != NGX_OK
        || ngx_http_mcp_header_out(r, "Access-Control-Expose-Headers",
                                   &ngx_http_mcp_cors_expose) != NGX_OK
        || ngx_http_mcp_header_out(r, "Vary", &vary) != NGX_OK)
    {
        return NGX_ERROR;
    }

    return ngx_http_next_header_filter(r);
}


/* a header made once, added to the reply: a copy, nothing to build */

static ngx_int_t
ngx_http_mcp_cors_add(ngx_http_request_t *r, ngx_table_elt_t *header)
{
    ngx_table_elt_t  *h;

    h = ngx_list_push(&r->headers_out.headers);
    if (h == NULL) {
        return NGX_ERROR;
    }

    *h = *header;

    return NGX_OK;
}


/*
 * The MCP headers, and every Mcp-Param-* the preflight names: which
 * ones a tool declares only the tool's schema says (an upstream's, for
 * a gateway), and the call is refused when its Mcp-Param-* headers are
 * not what its tool declares, whoever sends them.
 */

static ngx_int_t
ngx_http_mcp_cors_allow_headers(ngx_http_request_t *r, ngx_str_t *value)
{
    u_char           *p, *start, *end, *out;
    size_t            len;
    ngx_table_elt_t  *h;

    h = ngx_http_mcp_header_in(r, "access-control-request-headers",
                               sizeof("access-control-request-headers") - 1);

    len = sizeof(ngx_http_mcp_cors_headers) - 1;

    if (h == NULL) {
        value->data = ngx_http_mcp_cors_headers;
        value->len = len;
        return NGX_OK;
    }

    out = ngx_pnalloc(r->pool, len + 2 * h->value.len);
    if (out == NULL) {
        return NGX_ERROR;
    }

    value->data = out;
    out = ngx_cpymem(out, ngx_http_mcp_cors_headers, len);

    p = h->value.data;
    end = p + h->value.len;

    while (p < end) {

        while (p < end && (*p == ' ' || *p == '\t' || *p == ',')) {
            p++;
        }

        start = p;

        while (p < end && *p != ',' && *p != ' ' && *p != '\t') {
            p++;
        }

        len = p - start;

        /* a name, not the prefix alone, and an HTTP token (RFC 9110) */
        if (len <= sizeof("mcp-param-") - 1
            || ngx_strncasecmp(start, (u_char *) "mcp-param-",
                               sizeof("mcp-param-") - 1)
               != 0)
        {
            continue;
        }

        while (start < p && ngx_http_mcp_cors_tchar(*start)) {
            start++;
        }

        if (start != p) {
            continue;
        }

        *out++ = ',';
        *out++ = ' ';
        out = ngx_cpymem(out, p - len, len);
    }

    value->len = out - value->data;

    return NGX_OK;
}


static ngx_uint_t
ngx_http_mcp_cors_tchar(u_char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z')
           || (c >= 'A' && c <= 'Z')
           || (c != '\0' && ngx_strchr("!#$%&'*+-.^_`|~", c) != NULL);
}


/*
 * A 2026-07-28 list (no session: the same for every caller with the
 * same token) keeps its caching hints: nginx's proxy_cache may store it
 * (README, "Caching lists").  Every other reply is one caller's.
 */

static ngx_uint_t
ngx_http_mcp_cors_cacheable(ngx_http_mcp_ctx_t *ctx, ngx_http_request_t *r)
{
    ngx_uint_t  i;

    static ngx_str_t  lists[] = {
        ngx_string("tools/list"),
        ngx_string("prompts/list"),
        ngx_string("resources/list"),
        ngx_string("resources/templates/list")
    };

    if (ctx == NULL || !ctx->stateless || !ctx->parsed || ctx->batch
        || r->headers_out.status != NGX_HTTP_OK)
    {
        return 0;
    }

    for (i = 0; i < sizeof(lists) / sizeof(lists[0]); i++) {
        if (ctx->var_method.len == lists[i].len
            && ngx_strncmp(ctx->var_method.data, lists[i].data,
                           lists[i].len)
               == 0)
        {
            return 1;
        }
    }

    return 0;
}


/* whether the reply has a header of that name (len bytes, lower case) */

static ngx_uint_t
ngx_http_mcp_cors_has_header(ngx_http_request_t *r, const char *name,
    size_t len)
{
    ngx_uint_t        i;
    ngx_list_part_t  *part;
    ngx_table_elt_t  *h;

    part = &r->headers_out.headers.part;
    i = 0;

    while ((h = ngx_http_mcp_header_walk(&part, &i)) != NULL) {

        if (h->hash != 0 && h->key.len == len
            && ngx_strncasecmp(h->key.data, (u_char *) name, len) == 0)
        {
            return 1;
        }
    }

    return 0;
}
