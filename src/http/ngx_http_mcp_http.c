
/*
 * The HTTP edge: what every entry point of an MCP location shares.  The
 * request context, the checks of the HTTP side of a request (Origin,
 * Accept, Mcp-Session-Id, MCP-Protocol-Version) and the session it
 * names, and the replies: JSON bodies, JSON-RPC errors with a
 * correlation id, and the one table from an HTTP status to the JSON-RPC
 * error that goes with it.
 *
 * Below it are only the session store and the pure parsers; everything
 * that speaks HTTP (the POST transport, GET streams, DELETE, the
 * gateway, the auth module) builds on it.
 */


#include "ngx_http_mcp_http.h"
#include "ngx_http_mcp_json.h"
#include "ngx_http_mcp_jsonrpc.h"
#include "ngx_http_mcp_store.h"
#include "ngx_http_mcp_call.h"
#include "ngx_http_mcp_core.h"
#include "ngx_http_mcp_metrics.h"
#include "ngx_http_mcp_trace.h"


#define NGX_HTTP_MCP_ACCEPT_TYPES       2  /* at most, read at once */


typedef struct {
    ngx_uint_t                 status;
    ngx_int_t                  code;
    const char                *message;
} ngx_http_mcp_status_t;


/* what ends a stateless request's own session with the request */
typedef struct {
    ngx_shm_zone_t            *zone;
    ngx_log_t                 *log;
    ngx_str_t                  id;
} ngx_http_mcp_session_end_t;


static ngx_uint_t ngx_http_mcp_accepts(ngx_http_request_t *r, const char *type);
static ngx_uint_t ngx_http_mcp_localhost_origin(ngx_str_t *origin);
static void ngx_http_mcp_accepts_types(ngx_http_request_t *r,
    ngx_str_t *types, ngx_uint_t n, ngx_uint_t *ok);
static void ngx_http_mcp_accept_q(ngx_str_t *accept, ngx_str_t *types,
    ngx_uint_t n, ngx_uint_t *specificity, ngx_int_t *best_q);
static u_char *ngx_http_mcp_accept_param(u_char *p, u_char *end,
    ngx_int_t *q);
static void ngx_http_mcp_cleanup(void *data);
static ngx_int_t ngx_http_mcp_session_open(ngx_http_mcp_ctx_t *ctx,
    ngx_http_mcp_session_init_t *init, u_char *id, ngx_log_t *log);
static void ngx_http_mcp_session_end(void *data);


static ngx_str_t  ngx_http_mcp_json_type = ngx_string("application/json");


/*
 * What a refusal by HTTP status says in JSON-RPC: the transport's own
 * refusals and the error pages of nginx's modules (limit_req, deny,
 * client_max_body_size, an upstream that failed) alike.
 */

static ngx_http_mcp_status_t  ngx_http_mcp_statuses[] = {
    { NGX_HTTP_BAD_REQUEST, NGX_HTTP_MCP_INVALID_REQUEST, "Bad request" },
    { NGX_HTTP_FORBIDDEN, NGX_HTTP_MCP_INVALID_REQUEST, "Forbidden" },
    { NGX_HTTP_NOT_FOUND, NGX_HTTP_MCP_INVALID_REQUEST, "Not found" },
    { NGX_HTTP_NOT_ALLOWED, NGX_HTTP_MCP_INVALID_REQUEST,
      "Method Not Allowed" },
    { NGX_HTTP_MCP_NOT_ACCEPTABLE, NGX_HTTP_MCP_INVALID_REQUEST,
      "Not Acceptable: the client must accept both application/json and "
      "text/event-stream" },
    { NGX_HTTP_REQUEST_TIME_OUT, NGX_HTTP_MCP_INVALID_REQUEST,
      "Request timeout" },
    { NGX_HTTP_REQUEST_ENTITY_TOO_LARGE, NGX_HTTP_MCP_INVALID_REQUEST,
      "Request body too large" },
    { NGX_HTTP_UNSUPPORTED_MEDIA_TYPE, NGX_HTTP_MCP_INVALID_REQUEST,
      "Unsupported Media Type: Content-Type must be application/json" },
    { NGX_HTTP_TOO_MANY_REQUESTS, NGX_HTTP_MCP_SERVER_ERROR,
      "Too many requests: rate limit exceeded" },
    { NGX_HTTP_INTERNAL_SERVER_ERROR, NGX_HTTP_MCP_INTERNAL_ERROR,
      "Internal error" },
    { NGX_HTTP_BAD_GATEWAY, NGX_HTTP_MCP_SERVER_ERROR,
      "Bad gateway: the upstream MCP server failed" },
    { NGX_HTTP_SERVICE_UNAVAILABLE, NGX_HTTP_MCP_SERVER_ERROR,
      "Service unavailable" },
    { NGX_HTTP_GATEWAY_TIME_OUT, NGX_HTTP_MCP_SERVER_ERROR,
      "Gateway timeout: the upstream MCP server did not answer in time" },
    { 0, 0, NULL }
};


const char *
ngx_http_mcp_status_error(ngx_uint_t status, ngx_int_t *code)
{
    ngx_http_mcp_status_t  *s;

    for (s = ngx_http_mcp_statuses; s->status; s++) {
        if (s->status == status) {
            *code = s->code;
            return s->message;
        }
    }

    if (status >= NGX_HTTP_INTERNAL_SERVER_ERROR) {
        *code = NGX_HTTP_MCP_SERVER_ERROR;
        return "Server error";
    }

    *code = NGX_HTTP_MCP_INVALID_REQUEST;
    return "Bad request";
}


/*
 * What GET, DELETE and the gateway's GET and DELETE check before they
 * touch a session: Accept (a GET stream), Mcp-Session-Id and
 * MCP-Protocol-Version, and that the session exists.  *sid is the
 * session's id.  NGX_OK, or NGX_DECLINED once a refusal is sent, *rc
 * then its value for ngx_http_finalize_request().  With lookup 0 the
 * session is left to the caller (the gateway reads it with its replica).
 */

ngx_int_t
ngx_http_mcp_session_preamble(ngx_http_request_t *r,
    ngx_http_mcp_loc_conf_t *mlcf, ngx_uint_t lookup, ngx_str_t *sid,
    ngx_http_mcp_reqctx_t *rctx, ngx_int_t *rc)
{
    ngx_int_t         code;
    ngx_uint_t        status;
    const char       *message;
    ngx_table_elt_t  *h;

    h = ngx_http_mcp_header_in(r, "mcp-session-id",
                               sizeof("mcp-session-id") - 1);

    status = NGX_HTTP_BAD_REQUEST;
    code = NGX_HTTP_MCP_INVALID_REQUEST;

    if (r->method == NGX_HTTP_GET
        && !ngx_http_mcp_accepts(r, "text/event-stream"))
    {
        status = NGX_HTTP_MCP_NOT_ACCEPTABLE;
        message = "Not Acceptable: a GET stream needs "
                  "Accept: text/event-stream";

    } else if (h == NULL) {
        message = "Bad Request: Mcp-Session-Id header is required";

    } else if (ngx_http_mcp_header_in_after(r, h, "mcp-session-id",
                                            sizeof("mcp-session-id") - 1)
               != NULL)
    {
        message = "Bad Request: more than one Mcp-Session-Id header";

    } else if (ngx_http_mcp_version_check(
                   ngx_http_mcp_header_in(r, "mcp-protocol-version",
                       sizeof("mcp-protocol-version") - 1))
               != NGX_OK)
    {
        message = "Bad Request: unsupported MCP-Protocol-Version";

    } else if (lookup
               && ngx_http_mcp_session_lookup(mlcf->zone, &h->value, rctx)
                  != NGX_OK)
    {
        status = NGX_HTTP_NOT_FOUND;
        code = NGX_HTTP_MCP_SESSION_NOT_FOUND;
        message = "Session not found";

    } else {
        *sid = h->value;
        return NGX_OK;
    }

    *rc = ngx_http_mcp_send_error(r, status, NULL, code, message);

    return NGX_DECLINED;
}


/* an MCP-Protocol-Version header h, when there is one, names a version */

ngx_int_t
ngx_http_mcp_version_check(ngx_table_elt_t *h)
{
    if (h != NULL && ngx_http_mcp_version_parse(&h->value) == 0) {
        return NGX_DECLINED;
    }

    return NGX_OK;
}


/*
 * DNS rebinding protection: a browser page must not reach a local MCP
 * server.  Requests without Origin (non-browser clients) pass.
 */

ngx_int_t
ngx_http_mcp_check_origin(ngx_http_request_t *r,
    ngx_http_mcp_loc_conf_t *mlcf)
{
    ngx_str_t           *allowed, origin;
    ngx_uint_t           i, twice;
    ngx_table_elt_t     *h;
    ngx_http_mcp_ctx_t  *ctx;

    /* a context has read the request's headers (each POST's has) */
    ctx = ngx_http_get_module_ctx(r, ngx_http_mcp_module);

    if (ctx != NULL) {
        h = ctx->headers.origin;
        twice = ctx->headers.twice & NGX_HTTP_MCP_HDR_ORIGIN;

    } else {
        h = ngx_http_mcp_header_in(r, "origin", sizeof("origin") - 1);
        twice = (h != NULL
                 && ngx_http_mcp_header_in_after(r, h, "origin",
                                                 sizeof("origin") - 1)
                    != NULL);
    }

    if (h == NULL) {
        return NGX_OK;
    }

    /* two Origins: which one a browser meant is anybody's guess */
    if (twice) {
        return NGX_DECLINED;
    }

    if (mlcf->any_origin) {
        return NGX_OK;
    }

    origin = h->value;

    while (origin.len > 1 && origin.data[origin.len - 1] == '/') {
        origin.len--;
    }

    if (mlcf->origins == NULL) {
        return ngx_http_mcp_localhost_origin(&origin) ? NGX_OK
                                                      : NGX_DECLINED;
    }

    allowed = mlcf->origins->elts;

    for (i = 0; i < mlcf->origins->nelts; i++) {

        if (allowed[i].len == sizeof("localhost") - 1
            && ngx_strncmp(allowed[i].data, "localhost", allowed[i].len) == 0)
        {
            if (ngx_http_mcp_localhost_origin(&origin)) {
                return NGX_OK;
            }

            continue;
        }

        if (allowed[i].len == origin.len
            && ngx_strncasecmp(allowed[i].data, origin.data, origin.len) == 0)
        {
            return NGX_OK;
        }
    }

    return NGX_DECLINED;
}


/* where the host of an origin starts, past "http://" or "https://" */

u_char *
ngx_http_mcp_origin_host(ngx_str_t *origin)
{
    if (origin->len > 7
        && ngx_strncasecmp(origin->data, (u_char *) "http://", 7) == 0)
    {
        return origin->data + 7;
    }

    if (origin->len > 8
        && ngx_strncasecmp(origin->data, (u_char *) "https://", 8) == 0)
    {
        return origin->data + 8;
    }

    return NULL;
}


/* http(s)://localhost, 127.0.0.1 or [::1], with any port */

static ngx_uint_t
ngx_http_mcp_localhost_origin(ngx_str_t *origin)
{
    u_char      *p, *end;
    ngx_uint_t   i;

    static ngx_str_t  hosts[] = {
        ngx_string("localhost"),
        ngx_string("127.0.0.1"),
        ngx_string("[::1]")
    };

    p = ngx_http_mcp_origin_host(origin);
    end = origin->data + origin->len;

    if (p == NULL) {
        return 0;
    }

    for (i = 0; i < sizeof(hosts) / sizeof(hosts[0]); i++) {

        if ((size_t) (end - p) < hosts[i].len
            || ngx_strncasecmp(p, hosts[i].data, hosts[i].len) != 0)
        {
            continue;
        }

        p += hosts[i].len;

        if (p == end) {
            return 1;
        }

        if (*p++ != ':' || p == end) {
            return 0;
        }

        while (p < end && *p >= '0' && *p <= '9') {
            p++;
        }

        return p == end;
    }

    return 0;
}


/* a POST: the client takes both a JSON reply and an event stream */

ngx_uint_t
ngx_http_mcp_accepts_post(ngx_http_request_t *r)
{
    ngx_uint_t        ok[2];
    ngx_table_elt_t  *h;

    static ngx_str_t  types[] = {
        ngx_string("application/json"), ngx_string("text/event-stream")
    };

    static ngx_str_t  sdk = ngx_string("application/json, text/event-stream");

    /*
     * What the SDKs send matches both types at the most specific level
     * with the highest q, which no other Accept header can lower: taken
     * without reading it element by element.
     */

    h = ngx_http_mcp_header_in(r, "accept", sizeof("accept") - 1);

    if (h != NULL
        && h->value.len == sdk.len
        && ngx_memcmp(h->value.data, sdk.data, sdk.len) == 0)
    {
        return 1;
    }

    ngx_http_mcp_accepts_types(r, types, 2, ok);

    return ok[0] && ok[1];
}


static ngx_uint_t
ngx_http_mcp_accepts(ngx_http_request_t *r, const char *type)
{
    ngx_str_t   t;
    ngx_uint_t  ok;

    t.data = (u_char *) type;
    t.len = ngx_strlen(type);

    ngx_http_mcp_accepts_types(r, &t, 1, &ok);

    return ok;
}


/*
 * The request's Accept headers (RFC 9110 12.5.1) against n types, read
 * once for all of them: for each type, the most specific media range
 * that matches it (type/subtype, type/ *, * / *) decides, and q=0 means
 * not acceptable.  No Accept header: not taken, as the transport
 * requires one.
 */

static void
ngx_http_mcp_accepts_types(ngx_http_request_t *r, ngx_str_t *types,
    ngx_uint_t n, ngx_uint_t *ok)
{
    ngx_int_t         q[NGX_HTTP_MCP_ACCEPT_TYPES];
    ngx_uint_t        i, spec[NGX_HTTP_MCP_ACCEPT_TYPES];
    ngx_table_elt_t  *h;

    for (i = 0; i < n; i++) {
        spec[i] = 0;
        q[i] = 0;
    }

    for (h = ngx_http_mcp_header_in(r, "accept", sizeof("accept") - 1);
         h != NULL;
         h = ngx_http_mcp_header_in_after(r, h, "accept", sizeof("accept") - 1))
    {
        ngx_http_mcp_accept_q(&h->value, types, n, spec, q);
    }

    for (i = 0; i < n; i++) {
        ok[i] = spec[i] && q[i] > 0;
    }
}


/*
 * One Accept value against n types: for each, keeps in specificity[i]
 * and q[i] (0 to 1000) the most specific media range seen so far that
 * matches it (0: none, 1: * / *, 2: type/ *, 3: type/subtype) and its q.
 * A malformed element matches nothing.  Pure: no request, so it can be
 * tested alone.
 */

static void
ngx_http_mcp_accept_q(ngx_str_t *accept, ngx_str_t *types, ngx_uint_t n,
    ngx_uint_t *specificity, ngx_int_t *best_q)
{
    u_char      *p, *end, *start, *tend, *slash, *sub;
    size_t       major;
    ngx_int_t    q;
    ngx_uint_t   i, spec;

    p = accept->data;
    end = p + accept->len;

    while (p < end) {

        while (p < end && (*p == ' ' || *p == '\t' || *p == ',')) {
            p++;
        }

        start = p;
        slash = NULL;

        while (p < end && *p != ';' && *p != ',' && *p != ' '
               && *p != '\t')
        {
            if (*p == '/') {
                slash = p;
            }

            p++;
        }

        tend = p;
        q = 1000;

        while (p < end && *p != ',') {
            p = ngx_http_mcp_accept_param(p, end, &q);
            if (p == NULL) {
                /* a malformed element: skip to the next */
                q = -1;
                p = start;

                while (p < end && *p != ',') {
                    p++;
                }
            }
        }

        if (q < 0 || slash == NULL || slash == start || slash + 1 == tend) {
            continue;
        }

        for (i = 0; i < n; i++) {
            sub = ngx_strlchr(types[i].data, types[i].data + types[i].len,
                              '/');
            major = sub - types[i].data;
            spec = 0;

            if (slash - start == 1 && *start == '*') {
                spec = (tend - slash == 2 && slash[1] == '*') ? 1 : 0;

            } else if ((size_t) (slash - start) == major
                       && ngx_strncasecmp(start, types[i].data, major) == 0)
            {
                if (tend - slash == 2 && slash[1] == '*') {
                    spec = 2;

                } else if ((size_t) (tend - slash - 1)
                           == types[i].len - major - 1
                           && ngx_strncasecmp(slash + 1, sub + 1,
                                              types[i].len - major - 1) == 0)
                {
                    spec = 3;
                }
            }

            if (spec > specificity[i]
                || (spec == specificity[i] && q > best_q[i]))
            {
                specificity[i] = spec;
                best_q[i] = q;
            }
        }
    }
}


/*
 * One ";name=value" of a media range, with white space around it; sets
 * *q from a "q" parameter.  Returns what follows, or NULL if malformed.
 */

static u_char *
ngx_http_mcp_accept_param(u_char *p, u_char *end, ngx_int_t *q)
{
    u_char     *name;
    size_t      len;
    ngx_int_t   v, scale;

    while (p < end && (*p == ' ' || *p == '\t')) {
        p++;
    }

    if (p == end || *p == ',') {
        return p;
    }

    if (*p++ != ';') {
        return NULL;
    }

    while (p < end && (*p == ' ' || *p == '\t')) {
        p++;
    }

    name = p;

    while (p < end && *p != '=' && *p != ';' && *p != ',' && *p != ' ') {
        p++;
    }

    len = p - name;

    if (p == end || *p != '=' || len == 0) {
        return NULL;
    }

    p++;

    if (p < end && *p == '"') {
        for (p++; p < end && *p != '"'; p++) {
            if (*p == '\\') {
                p++;
            }
        }

        return (p < end) ? p + 1 : NULL;
    }

    if (len != 1 || (*name != 'q' && *name != 'Q')) {
        while (p < end && *p != ';' && *p != ',' && *p != ' ' && *p != '\t')
        {
            p++;
        }

        return p;
    }

    /* qvalue = ( "0" [ "." 0*3DIGIT ] ) / ( "1" [ "." 0*3("0") ] ) */

    if (p == end || (*p != '0' && *p != '1')) {
        return NULL;
    }

    v = (*p++ - '0') * 1000;

    if (p < end && *p == '.') {
        p++;

        for (scale = 100; p < end && *p >= '0' && *p <= '9' && scale;
             scale /= 10)
        {
            v += (*p++ - '0') * scale;
        }
    }

    if (v > 1000 || (p < end && *p != ';' && *p != ',' && *p != ' '
                     && *p != '\t'))
    {
        return NULL;
    }

    *q = v;

    return p;
}


ngx_http_mcp_ctx_t *
ngx_http_mcp_ctx_create(ngx_http_request_t *r, ngx_http_mcp_loc_conf_t *mlcf,
    ngx_http_mcp_auth_t *auth)
{
    ngx_uint_t           changed;
    ngx_http_mcp_ctx_t  *ctx;
    ngx_pool_cleanup_t  *cln;

    ctx = ngx_pcalloc(r->pool, sizeof(ngx_http_mcp_ctx_t));
    if (ctx == NULL) {
        return NULL;
    }

    ctx->request = r;
    ctx->conf = mlcf;

    ctx->rctx.auth = auth;

    ngx_http_mcp_headers_read(r, &ctx->headers);

    if (auth != NULL) {
        ctx->rctx.subject = auth->subject;
    }

    if (ngx_array_init(&ctx->msgs, r->pool, 1, sizeof(ngx_http_mcp_msg_t))
        != NGX_OK)
    {
        return NULL;
    }

    /* a POST's trace is read with its body; a GET's, a DELETE's here */
    if (r->method != NGX_HTTP_POST
        && ngx_http_mcp_trace_read(r, &ctx->msgs, mlcf->trace_generate,
                                   &ctx->trace, &changed)
           != NGX_OK)
    {
        return NULL;
    }

    ctx->rctx.client_name.data = ngx_pnalloc(r->pool,
                                             NGX_HTTP_MCP_CLIENT_NAME_LEN);
    if (ctx->rctx.client_name.data == NULL) {
        return NULL;
    }

    cln = ngx_pool_cleanup_add(r->pool, 0);
    if (cln == NULL) {
        return NULL;
    }

    cln->handler = ngx_http_mcp_cleanup;
    cln->data = ctx;

    ngx_http_set_ctx(r, ctx, ngx_http_mcp_module);

    return ctx;
}


/* cJSON trees are malloc()ed: they die with the request's pool */

static void
ngx_http_mcp_cleanup(void *data)
{
    ngx_http_mcp_ctx_t *ctx = data;

    ngx_uint_t           i;
    ngx_http_mcp_msg_t  *msg;

    if (ctx->detach != NULL) {
        /* calls still running go on: they own their messages */
        ctx->detach(ctx);
    }

    msg = ctx->msgs.elts;

    for (i = 0; i < ctx->msgs.nelts; i++) {
        cJSON_Delete(msg[i].id);
        cJSON_Delete(msg[i].reply);
    }

    cJSON_Delete(ctx->root);
}


/* writes the replies of all messages, in order, as one JSON body */

ngx_int_t
ngx_http_mcp_reply(ngx_http_mcp_ctx_t *ctx)
{
    u_char              *body, *p, **texts;
    size_t               len, *lens;
    cJSON               *reply;
    ngx_uint_t           i, n;
    ngx_http_request_t  *r;
    ngx_http_mcp_msg_t  *msg;

    r = ctx->request;
    msg = ctx->msgs.elts;

    texts = ngx_palloc(r->pool, ctx->msgs.nelts * sizeof(u_char *));
    lens = ngx_palloc(r->pool, ctx->msgs.nelts * sizeof(size_t));

    if (texts == NULL || lens == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    n = 0;
    len = 0;

    for (i = 0; i < ctx->msgs.nelts; i++) {
        reply = msg[i].reply;

        if (reply == NULL) {
            /* a notification, a response, or a cancelled call */
            continue;
        }

        texts[n] = ngx_http_mcp_json_print(r->pool, reply, &lens[n]);
        if (texts[n] == NULL) {
            return NGX_HTTP_INTERNAL_SERVER_ERROR;
        }

        len += lens[n++] + 1;
    }

    if (n == 0) {
        return ngx_http_mcp_send(r, NGX_HTTP_ACCEPTED, ctx, NULL, 0);
    }

    if (!ctx->batch) {
        return ngx_http_mcp_send(r, ctx->status, ctx, texts[0], lens[0]);
    }

    body = ngx_pnalloc(r->pool, len + 1);
    if (body == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    p = body;
    *p++ = '[';

    for (i = 0; i < n; i++) {
        if (i) {
            *p++ = ',';
        }

        p = ngx_cpymem(p, texts[i], lens[i]);
    }

    *p++ = ']';

    return ngx_http_mcp_send(r, ctx->status, ctx, body, p - body);
}


/* ctx, when given, supplies the MCP-Protocol-Version and Mcp-Session-Id */

ngx_int_t
ngx_http_mcp_send(ngx_http_request_t *r, ngx_uint_t status,
    ngx_http_mcp_ctx_t *ctx, u_char *body, size_t len)
{
    ngx_int_t     rc;
    ngx_buf_t    *b;
    ngx_str_t     value;
    ngx_chain_t   out;

    r->headers_out.status = status;
    r->headers_out.content_length_n = len;

    if (len) {
        r->headers_out.content_type = ngx_http_mcp_json_type;
        r->headers_out.content_type_len = ngx_http_mcp_json_type.len;

    } else {
        r->header_only = 1;
    }

    if (ctx != NULL && ctx->rctx.version) {
        value.data = (u_char *) ngx_http_mcp_version_name(ctx->rctx.version);
        value.len = ngx_strlen(value.data);

        if (ngx_http_mcp_header_out(r, "MCP-Protocol-Version", &value)
            != NGX_OK)
        {
            return NGX_HTTP_INTERNAL_SERVER_ERROR;
        }
    }

    if (ctx != NULL && ctx->new_session.len
        && ngx_http_mcp_header_out(r, "Mcp-Session-Id", &ctx->new_session)
           != NGX_OK)
    {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    rc = ngx_http_send_header(r);

    if (rc == NGX_ERROR || rc > NGX_OK || r->header_only) {
        return rc;
    }

    b = ngx_calloc_buf(r->pool);
    if (b == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    b->pos = body;
    b->last = body + len;
    b->memory = 1;
    b->last_buf = (r == r->main) ? 1 : 0;
    b->last_in_chain = 1;

    out.buf = b;
    out.next = NULL;

    return ngx_http_output_filter(r, &out);
}


ngx_int_t
ngx_http_mcp_send_error(ngx_http_request_t *r, ngx_uint_t status, cJSON *id,
    ngx_int_t code, const char *message)
{
    return ngx_http_mcp_send_error_data(r, status, id, code, message, NULL);
}


/*
 * A Last-Event-ID that names a sealed stream (the store's NGX_ABORT): the
 * stream's answer is read by the request that opened it, never another
 */

ngx_int_t
ngx_http_mcp_send_sealed(ngx_http_request_t *r)
{
    return ngx_http_mcp_send_error(r, NGX_HTTP_CONFLICT, NULL,
                                   NGX_HTTP_MCP_INVALID_REQUEST,
                                   "Conflict: the stream of Last-Event-ID "
                                   "is its request's alone");
}


/* the same with members for the error's "data" (an object, freed) */

ngx_int_t
ngx_http_mcp_send_error_data(ngx_http_request_t *r, ngx_uint_t status,
    cJSON *id, ngx_int_t code, const char *message, cJSON *data)
{
    u_char              *body;
    size_t               len;
    cJSON               *reply;
    ngx_http_mcp_ctx_t  *ctx;

    reply = ngx_http_mcp_error_reply(r, id, code, message, NULL);

    if (reply == NULL || ngx_http_mcp_jsonrpc_error_data(reply, data) != NGX_OK)
    {
        cJSON_Delete(reply);
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    body = ngx_http_mcp_json_print(r->pool, reply, &len);

    cJSON_Delete(reply);

    if (body == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    ctx = ngx_http_get_module_ctx(r, ngx_http_mcp_module);

    return ngx_http_mcp_send(r, status, ctx, body, len);
}


/* an error reply, logged and printed into the request's pool */

u_char *
ngx_http_mcp_error_print(ngx_http_request_t *r, cJSON *id, ngx_int_t code,
    const char *message, size_t *len)
{
    u_char  *body;
    cJSON   *reply;

    reply = ngx_http_mcp_error_reply(r, id, code, message, NULL);
    if (reply == NULL) {
        return NULL;
    }

    body = ngx_http_mcp_json_print(r->pool, reply, len);

    cJSON_Delete(reply);

    return body;
}


/*
 * A JSON-RPC error reply.  The error is logged once, with a correlation
 * id that the reply's error.data carries too: the request's $request_id,
 * which its access log line can carry; client errors at "info", as nginx
 * logs client errors, internal ones at "error".
 */

cJSON *
ngx_http_mcp_error_reply(ngx_http_request_t *r, cJSON *id, ngx_int_t code,
    const char *message, ngx_str_t *method)
{
    ngx_str_t            rid;
    ngx_http_mcp_ctx_t  *ctx;

    if (ngx_http_mcp_request_id(r, 1, &rid) != NGX_OK) {
        ngx_str_null(&rid);
    }

    ctx = ngx_http_get_module_ctx(ngx_http_mcp_message_request(r),
                                  ngx_http_mcp_module);

    if (ctx != NULL) {
        ctx->var_code = code;
    }

    return ngx_http_mcp_error_reply_at(r->connection->log,
                                       ngx_http_mcp_error_level(code), &rid,
                                       id, code, message, method);
}


/*
 * The request whose MCP message r is about: r, or the nearest of its
 * parents, that an MCP location serves (a backend of mcp_backend is a
 * subrequest with a message and a session of its own); else the
 * client's (a location tool's subrequest is about its call's POST).
 */

ngx_http_request_t *
ngx_http_mcp_message_request(ngx_http_request_t *r)
{
    ngx_http_request_t       *pr;
    ngx_http_mcp_loc_conf_t  *mlcf;

    for (pr = r; pr != r->main; pr = pr->parent) {
        mlcf = ngx_http_get_module_loc_conf(pr, ngx_http_mcp_module);

        if (mlcf->enable) {
            return pr;
        }
    }

    return r->main;
}


/* a new session for ctx's initialize: its id goes to ctx->new_session */

ngx_int_t
ngx_http_mcp_session_new(ngx_http_mcp_ctx_t *ctx,
    ngx_http_mcp_session_init_t *init, ngx_log_t *log)
{
    ngx_int_t  rc;

    ctx->new_session.data = ngx_pnalloc(ctx->request->pool,
                                        NGX_HTTP_MCP_SESSION_ID_LEN);
    if (ctx->new_session.data == NULL) {
        return NGX_ERROR;
    }

    rc = ngx_http_mcp_session_open(ctx, init, ctx->new_session.data, log);

    if (rc == NGX_DECLINED) {
        ngx_log_error(NGX_LOG_WARN, log, 0,
                      "mcp: no room for a new session: the zone's sessions, "
                      "or this client's, are all busy");
    }

    if (rc != NGX_OK) {
        ctx->new_session.data = NULL;
        return rc;
    }

    ctx->new_session.len = NGX_HTTP_MCP_SESSION_ID_LEN;
    ctx->rctx.version = init->version;
    ctx->rctx.session_id = ctx->new_session;

    return NGX_OK;
}


/*
 * A stateless request (2026-07-28) whose reply becomes an SSE stream:
 * the stream's events need a session's log to travel through, so the
 * request gets a session of its own that nobody is told of and that
 * ends with the request.  It counts against the client's sessions.
 */

ngx_int_t
ngx_http_mcp_session_carrier(ngx_http_mcp_ctx_t *ctx)
{
    ngx_int_t                     rc;
    ngx_pool_cleanup_t           *cln;
    ngx_http_mcp_session_init_t   init;
    ngx_http_mcp_session_end_t   *end;

    ngx_memzero(&init, sizeof(ngx_http_mcp_session_init_t));

    init.version = ctx->rctx.version;
    init.client_name = ctx->rctx.client_name;

    cln = ngx_pool_cleanup_add(ctx->request->pool,
                               sizeof(ngx_http_mcp_session_end_t));
    if (cln == NULL) {
        return NGX_ERROR;
    }

    end = cln->data;
    end->zone = ctx->conf->zone;
    end->log = ctx->request->connection->log;
    end->id.len = 0;
    end->id.data = ngx_pnalloc(ctx->request->pool,
                               NGX_HTTP_MCP_SESSION_ID_LEN);
    if (end->id.data == NULL) {
        return NGX_ERROR;
    }

    rc = ngx_http_mcp_session_open(ctx, &init, end->id.data, end->log);
    if (rc != NGX_OK) {
        return rc;
    }

    end->id.len = NGX_HTTP_MCP_SESSION_ID_LEN;
    cln->handler = ngx_http_mcp_session_end;

    ctx->rctx.session_id = end->id;

    return NGX_OK;
}


/*
 * A session of ctx's request, bound to its caller: to the token's issuer
 * and subject when authorization is on, and counted against the client's
 * sessions (per_client=).  Its id goes to id.
 */

static ngx_int_t
ngx_http_mcp_session_open(ngx_http_mcp_ctx_t *ctx,
    ngx_http_mcp_session_init_t *init, u_char *id, ngx_log_t *log)
{
    if (ctx->rctx.auth != NULL) {
        init->binding = ((ngx_http_mcp_auth_t *) ctx->rctx.auth)->binding;
    }

    if (ngx_http_mcp_session_client_key(ctx->conf->zone, ctx->request,
                                        &init->client_key)
        != NGX_OK)
    {
        return NGX_ERROR;
    }

    return ngx_http_mcp_session_create(ctx->conf->zone, log, init, id);
}


static void
ngx_http_mcp_session_end(void *data)
{
    ngx_http_mcp_session_end_t  *end = data;

    (void) ngx_http_mcp_session_delete(end->zone, &end->id, end->log);
}


/* the gateway's initialize: the session exists before the upstream answers */

ngx_int_t
ngx_http_mcp_session_mint(ngx_http_mcp_ctx_t *ctx, ngx_http_mcp_msg_t *msg)
{
    ngx_http_mcp_session_init_t  init;

    (void) ngx_http_mcp_session_init_params(msg->params, &init);

    return ngx_http_mcp_session_new(ctx, &init,
                                    ctx->request->connection->log);
}


/*
 * A module's variables, from a table that ngx_http_null_variable ends,
 * as nginx's own modules add theirs at preconfiguration.
 */

ngx_int_t
ngx_http_mcp_conf_add_variables(ngx_conf_t *cf, ngx_http_variable_t *vars)
{
    ngx_http_variable_t  *var, *v;

    for (v = vars; v->name.len; v++) {
        var = ngx_http_add_variable(cf, &v->name, v->flags);
        if (var == NULL) {
            return NGX_ERROR;
        }

        var->get_handler = v->get_handler;
        var->data = v->data;
    }

    return NGX_OK;
}


/*
 * A file a directive names, read whole at configuration time (relative
 * to the prefix, as nginx's own): NUL-terminated in cf->temp_pool, at
 * most max bytes.  NGX_ERROR: told to the configuration's log.
 */

ngx_int_t
ngx_http_mcp_conf_file(ngx_conf_t *cf, ngx_str_t *path, size_t max,
    ngx_str_t *text)
{
    ssize_t           n;
    ngx_int_t         rc;
    ngx_str_t         name;
    ngx_file_t        file;
    ngx_file_info_t   fi;

    name = *path;

    if (ngx_conf_full_name(cf->cycle, &name, 1) != NGX_OK) {
        return NGX_ERROR;
    }

    ngx_memzero(&file, sizeof(ngx_file_t));
    file.name = name;
    file.log = cf->log;

    file.fd = ngx_open_file(name.data, NGX_FILE_RDONLY, NGX_FILE_OPEN, 0);

    if (file.fd == NGX_INVALID_FILE) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, ngx_errno,
                           ngx_open_file_n " \"%V\" failed", &name);
        return NGX_ERROR;
    }

    rc = NGX_ERROR;

    if (ngx_fd_info(file.fd, &fi) == NGX_FILE_ERROR || !ngx_is_file(&fi)
        || (size_t) ngx_file_size(&fi) > max)
    {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"%V\" is not a readable file of at most %uz "
                           "bytes", &name, max);
        goto close;
    }

    text->len = ngx_file_size(&fi);
    text->data = ngx_pnalloc(cf->temp_pool, text->len + 1);

    if (text->data == NULL) {
        goto close;
    }

    n = ngx_read_file(&file, text->data, text->len, 0);

    if (n != (ssize_t) text->len) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "could not read \"%V\"",
                           &name);
        goto close;
    }

    text->data[n] = '\0';
    rc = NGX_OK;

close:

    if (ngx_close_file(file.fd) == NGX_FILE_ERROR) {
        ngx_log_error(NGX_LOG_ALERT, cf->log, ngx_errno,
                      ngx_close_file_n " \"%V\" failed", &name);
    }

    return rc;
}
