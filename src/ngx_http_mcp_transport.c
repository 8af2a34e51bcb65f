
/*
 * The Streamable HTTP transport: the content handler of an "mcp on"
 * location.  It checks the HTTP side of a request (method, Origin,
 * Accept, Content-Type, MCP-Protocol-Version, Mcp-Session-Id), reads the
 * body, splits it into JSON-RPC messages, dispatches the requests and
 * writes the reply once every call has ended.
 */


#include "ngx_http_mcp_internal.h"


#define NGX_HTTP_MCP_SESSION_NOT_FOUND  -32001
#define NGX_HTTP_MCP_CORRELATION_LEN    16
#define NGX_HTTP_MCP_NOT_ACCEPTABLE     406


static ngx_int_t ngx_http_mcp_check_origin(ngx_http_request_t *r,
    ngx_http_mcp_loc_conf_t *mlcf);
static ngx_uint_t ngx_http_mcp_localhost_origin(ngx_str_t *origin);
static ngx_int_t ngx_http_mcp_post(ngx_http_request_t *r,
    ngx_http_mcp_loc_conf_t *mlcf);
static ngx_int_t ngx_http_mcp_delete(ngx_http_request_t *r,
    ngx_http_mcp_loc_conf_t *mlcf);
static ngx_int_t ngx_http_mcp_check_headers(ngx_http_request_t *r);
static ngx_uint_t ngx_http_mcp_accepts(ngx_http_request_t *r,
    const char *type);
static ngx_table_elt_t *ngx_http_mcp_header_in_after(ngx_http_request_t *r,
    ngx_table_elt_t *prev, const char *name, size_t len);
static ngx_int_t ngx_http_mcp_accept_q(ngx_str_t *accept, ngx_str_t *type,
    ngx_uint_t *specificity);
static u_char *ngx_http_mcp_accept_param(u_char *p, u_char *end,
    ngx_int_t *q);
static ngx_http_mcp_ctx_t *ngx_http_mcp_create_ctx(ngx_http_request_t *r,
    ngx_http_mcp_loc_conf_t *mlcf);
static void ngx_http_mcp_cleanup(void *data);
static void ngx_http_mcp_body_handler(ngx_http_request_t *r);
static ngx_int_t ngx_http_mcp_refuse(ngx_http_request_t *r,
    ngx_int_t status);
static ngx_int_t ngx_http_mcp_read_body(ngx_http_request_t *r,
    ngx_str_t *body);
static ngx_int_t ngx_http_mcp_process(ngx_http_mcp_ctx_t *ctx);
static ngx_int_t ngx_http_mcp_find_session(ngx_http_mcp_ctx_t *ctx,
    ngx_int_t *rc);
static ngx_int_t ngx_http_mcp_check_session(ngx_http_mcp_ctx_t *ctx);
static ngx_int_t ngx_http_mcp_handle_message(ngx_http_mcp_ctx_t *ctx,
    ngx_http_mcp_msg_t *msg, ngx_uint_t index);
static ngx_int_t ngx_http_mcp_notification(ngx_http_mcp_ctx_t *ctx,
    ngx_http_mcp_msg_t *msg);
static ngx_int_t ngx_http_mcp_send(ngx_http_request_t *r, ngx_uint_t status,
    ngx_http_mcp_ctx_t *ctx, u_char *body, size_t len);


static ngx_str_t  ngx_http_mcp_json_type = ngx_string("application/json");


ngx_int_t
ngx_http_mcp_handler(ngx_http_request_t *r)
{
    ngx_int_t                 rc;
    ngx_str_t                 allow = ngx_string("GET, POST, DELETE");
    ngx_http_mcp_loc_conf_t  *mlcf;

    mlcf = ngx_http_get_module_loc_conf(r, ngx_http_mcp_module);

    if (r != r->main) {
        return NGX_DECLINED;
    }

    if (r->method != NGX_HTTP_POST) {
        rc = ngx_http_discard_request_body(r);

        if (rc != NGX_OK) {
            return rc;
        }
    }

    if (r->method == NGX_HTTP_POST) {
        return ngx_http_mcp_post(r, mlcf);
    }

    if (ngx_http_mcp_check_origin(r, mlcf) != NGX_OK) {
        return ngx_http_mcp_send_error(r, NGX_HTTP_FORBIDDEN, NULL,
                                       NGX_HTTP_MCP_INVALID_REQUEST,
                                       "Forbidden: Origin not allowed");
    }

    if (mlcf->upstream.upstream
        && (r->method == NGX_HTTP_GET || r->method == NGX_HTTP_DELETE))
    {
        return ngx_http_mcp_proxy_other(r, mlcf);
    }

    if (r->method == NGX_HTTP_DELETE) {
        return ngx_http_mcp_delete(r, mlcf);
    }

    if (r->method == NGX_HTTP_GET) {
        return ngx_http_mcp_stream_get(r, mlcf);
    }

    if (ngx_http_mcp_header_out(r, "Allow", &allow) != NGX_OK) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    return ngx_http_mcp_send_error(r, NGX_HTTP_NOT_ALLOWED, NULL,
                                   NGX_HTTP_MCP_INVALID_REQUEST,
                                   "Method Not Allowed");
}


/*
 * DNS rebinding protection: a browser page must not reach a local MCP
 * server.  Requests without Origin (non-browser clients) pass.
 */

static ngx_int_t
ngx_http_mcp_check_origin(ngx_http_request_t *r,
    ngx_http_mcp_loc_conf_t *mlcf)
{
    ngx_str_t        *allowed, origin;
    ngx_uint_t        i;
    ngx_table_elt_t  *h;

    h = ngx_http_mcp_header_in(r, "Origin", sizeof("Origin") - 1);

    if (h == NULL) {
        return NGX_OK;
    }

    /* two Origins: which one a browser meant is anybody's guess */
    if (ngx_http_mcp_header_in_after(r, h, "Origin", sizeof("Origin") - 1)
        != NULL)
    {
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


/*
 * The rewrite phase reads and parses a POST's body, so that the phases
 * before the content handler (rewrite's "if", limit_req, access) can use
 * the $mcp_* variables.  What is wrong with the request is noted and
 * answered by the content handler.
 */

ngx_int_t
ngx_http_mcp_rewrite_handler(ngx_http_request_t *r)
{
    ngx_int_t                 rc;
    ngx_http_mcp_ctx_t       *ctx;
    ngx_http_mcp_loc_conf_t  *mlcf;

    mlcf = ngx_http_get_module_loc_conf(r, ngx_http_mcp_module);

    if (!mlcf->enable || r != r->main || r->method != NGX_HTTP_POST) {
        return NGX_DECLINED;
    }

    ctx = ngx_http_get_module_ctx(r, ngx_http_mcp_module);

    if (ctx != NULL) {
        /* the phases run again once the body is in */
        return (ctx->parsed || ctx->refused) ? NGX_DECLINED : NGX_DONE;
    }

    ctx = ngx_http_mcp_create_ctx(r, mlcf);
    if (ctx == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    if (ngx_http_mcp_check_origin(r, mlcf) != NGX_OK) {
        ctx->refused = NGX_HTTP_FORBIDDEN;
        return NGX_DECLINED;
    }

    ctx->refused = ngx_http_mcp_check_headers(r);

    if (ctx->refused == NGX_OK
        && r->headers_in.content_length_n > (off_t) mlcf->max_body)
    {
        ctx->refused = NGX_HTTP_REQUEST_ENTITY_TOO_LARGE;
    }

    if (ctx->refused) {
        return NGX_DECLINED;
    }

    r->request_body_in_single_buf = 1;

    rc = ngx_http_read_client_request_body(r, ngx_http_mcp_body_handler);

    if (rc >= NGX_HTTP_SPECIAL_RESPONSE) {
        return rc;
    }

    ngx_http_finalize_request(r, NGX_DONE);

    return NGX_DONE;
}


static void
ngx_http_mcp_body_handler(ngx_http_request_t *r)
{
    ngx_str_t            body;
    ngx_uint_t           batch;
    ngx_http_mcp_ctx_t  *ctx;

    ctx = ngx_http_get_module_ctx(r, ngx_http_mcp_module);

    if (ngx_http_mcp_read_body(r, &body) != NGX_OK) {
        ctx->refused = NGX_HTTP_INTERNAL_SERVER_ERROR;

    } else if (body.len > ctx->conf->max_body) {
        ctx->refused = NGX_HTTP_REQUEST_ENTITY_TOO_LARGE;

    } else {
        ctx->parse = ngx_http_mcp_jsonrpc_parse(r->pool, body.data, body.len,
                                                &ctx->root, &ctx->msgs,
                                                &batch, &ctx->parse_error);
        ctx->batch = batch;
        ctx->parsed = 1;

        if (ctx->parse == NGX_ERROR
            || (ctx->parse == NGX_OK
                && ngx_http_mcp_variables_capture(ctx) != NGX_OK))
        {
            ctx->refused = NGX_HTTP_INTERNAL_SERVER_ERROR;
        }

        ctx->body = body;
        ctx->parsed = 1;
    }

    r->write_event_handler = ngx_http_core_run_phases;
    ngx_http_core_run_phases(r);
}


static ngx_int_t
ngx_http_mcp_post(ngx_http_request_t *r, ngx_http_mcp_loc_conf_t *mlcf)
{
    ngx_int_t            rc;
    ngx_http_mcp_ctx_t  *ctx;

    ctx = ngx_http_get_module_ctx(r, ngx_http_mcp_module);

    if (ctx == NULL) {
        /* not through the rewrite phase: an internal redirect to here */
        return ngx_http_mcp_send_error(r, NGX_HTTP_BAD_REQUEST, NULL,
                                       NGX_HTTP_MCP_INVALID_REQUEST,
                                       "Bad Request");
    }

    if (ctx->refused) {
        return ngx_http_mcp_refuse(r, ctx->refused);
    }

    /* the access phase, after the body was read, knows the caller */
    ctx->rctx.auth = ngx_http_mcp_auth_get(r);

    if (ctx->rctx.auth != NULL) {
        ctx->rctx.subject = ((ngx_http_mcp_auth_t *) ctx->rctx.auth)->subject;
    }

    if (ctx->parse == NGX_DECLINED) {
        return ngx_http_mcp_send_error(r, NGX_HTTP_BAD_REQUEST, NULL,
                                       NGX_HTTP_MCP_PARSE_ERROR,
                                       ctx->parse_error
                                       ? ctx->parse_error : "Parse error");
    }

    if (mlcf->upstream.upstream) {
        return ngx_http_mcp_proxy_post(ctx);
    }

    rc = ngx_http_mcp_process(ctx);

    if (rc == NGX_AGAIN) {
        /* a handler ends its call later and the last one replies */
        ctx->waiting = 1;

        /* a client that leaves is noticed; its calls go on */
        r->read_event_handler = ngx_http_test_reading;
        r->main->count++;

        return NGX_DONE;
    }

    return rc;
}


static ngx_int_t
ngx_http_mcp_refuse(ngx_http_request_t *r, ngx_int_t status)
{
    /* the body is not wanted: do not make the client send it */
    r->expect_tested = 1;

    if (ngx_http_discard_request_body(r) != NGX_OK) {
        r->keepalive = 0;
    }

    return ngx_http_mcp_send_error(r, status, NULL,
               (status == NGX_HTTP_INTERNAL_SERVER_ERROR)
               ? NGX_HTTP_MCP_INTERNAL_ERROR : NGX_HTTP_MCP_INVALID_REQUEST,
               (status == NGX_HTTP_FORBIDDEN)
               ? "Forbidden: Origin not allowed"
               : (status == NGX_HTTP_MCP_NOT_ACCEPTABLE)
               ? "Not Acceptable: the client must accept both "
                 "application/json and text/event-stream"
               : (status == NGX_HTTP_UNSUPPORTED_MEDIA_TYPE)
               ? "Unsupported Media Type: Content-Type must be "
                 "application/json"
               : (status == NGX_HTTP_REQUEST_ENTITY_TOO_LARGE)
               ? "Request body too large"
               : (status == NGX_HTTP_BAD_REQUEST)
               ? "Bad Request: unsupported MCP-Protocol-Version"
               : "Internal error");
}


/* returns NGX_OK or the HTTP status that refuses the request */

static ngx_int_t
ngx_http_mcp_check_headers(ngx_http_request_t *r)
{
    ngx_str_t         type;
    ngx_table_elt_t  *h;

    if (!ngx_http_mcp_accepts(r, "application/json")
        || !ngx_http_mcp_accepts(r, "text/event-stream"))
    {
        return NGX_HTTP_MCP_NOT_ACCEPTABLE;
    }

    if (r->headers_in.content_type == NULL) {
        return NGX_HTTP_UNSUPPORTED_MEDIA_TYPE;
    }

    type = r->headers_in.content_type->value;

    if (type.len < sizeof("application/json") - 1
        || ngx_strncasecmp(type.data, (u_char *) "application/json",
                           sizeof("application/json") - 1) != 0
        || (type.len > sizeof("application/json") - 1
            && type.data[sizeof("application/json") - 1] != ';'
            && type.data[sizeof("application/json") - 1] != ' '))
    {
        return NGX_HTTP_UNSUPPORTED_MEDIA_TYPE;
    }

    h = ngx_http_mcp_header_in(r, "MCP-Protocol-Version",
                               sizeof("MCP-Protocol-Version") - 1);

    if (h != NULL && ngx_http_mcp_version_parse(&h->value) == 0) {
        return NGX_HTTP_BAD_REQUEST;
    }

    return NGX_OK;
}


/* a GET: the client takes an event stream */

ngx_uint_t
ngx_http_mcp_accepts_sse(ngx_http_request_t *r)
{
    return ngx_http_mcp_accepts(r, "text/event-stream");
}


/*
 * The request's Accept headers (RFC 9110 12.5.1) take type: the most
 * specific media range that matches it (type/subtype, type/ *, * / *)
 * decides, and q=0 means not acceptable.  No Accept header: not taken,
 * as the transport requires one.
 */

static ngx_uint_t
ngx_http_mcp_accepts(ngx_http_request_t *r, const char *type)
{
    ngx_int_t         q, best_q;
    ngx_str_t         t;
    ngx_uint_t        spec, best;
    ngx_table_elt_t  *h;

    t.data = (u_char *) type;
    t.len = ngx_strlen(type);

    best = 0;
    best_q = 0;

    for (h = ngx_http_mcp_header_in(r, "Accept", sizeof("Accept") - 1);
         h != NULL;
         h = ngx_http_mcp_header_in_after(r, h, "Accept", sizeof("Accept") - 1))
    {
        q = ngx_http_mcp_accept_q(&h->value, &t, &spec);

        if (spec > best || (spec == best && q > best_q)) {
            best = spec;
            best_q = q;
        }
    }

    return best && best_q > 0;
}


/*
 * One Accept value against a type: returns the q (0 to 1000) of the most
 * specific media range that matches, and sets *specificity (0: none
 * matches, 1: * / *, 2: type/ *, 3: type/subtype).  A malformed element
 * matches nothing.  Pure: no request, so it can be tested alone.
 */

static ngx_int_t
ngx_http_mcp_accept_q(ngx_str_t *accept, ngx_str_t *type,
    ngx_uint_t *specificity)
{
    u_char      *p, *end, *start, *tend, *slash, *sub;
    size_t       major;
    ngx_int_t    q, best_q;
    ngx_uint_t   spec;

    *specificity = 0;
    best_q = 0;

    sub = ngx_strlchr(type->data, type->data + type->len, '/');
    major = sub - type->data;

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

        spec = 0;

        if (slash - start == 1 && *start == '*') {
            spec = (tend - slash == 2 && slash[1] == '*') ? 1 : 0;

        } else if ((size_t) (slash - start) == major
                   && ngx_strncasecmp(start, type->data, major) == 0)
        {
            if (tend - slash == 2 && slash[1] == '*') {
                spec = 2;

            } else if ((size_t) (tend - slash - 1) == type->len - major - 1
                       && ngx_strncasecmp(slash + 1, sub + 1,
                                          type->len - major - 1) == 0)
            {
                spec = 3;
            }
        }

        if (spec > *specificity || (spec == *specificity && q > best_q)) {
            *specificity = spec;
            best_q = q;
        }
    }

    return best_q;
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


static ngx_int_t
ngx_http_mcp_delete(ngx_http_request_t *r, ngx_http_mcp_loc_conf_t *mlcf)
{
    ngx_table_elt_t     *h;
    ngx_http_mcp_ctx_t  *ctx;

    h = ngx_http_mcp_header_in(r, "Mcp-Session-Id",
                               sizeof("Mcp-Session-Id") - 1);

    if (h == NULL) {
        return ngx_http_mcp_send_error(r, NGX_HTTP_BAD_REQUEST, NULL,
                                       NGX_HTTP_MCP_INVALID_REQUEST,
                                       "Bad Request: Mcp-Session-Id header "
                                       "is required");
    }

    h = ngx_http_mcp_header_in(r, "MCP-Protocol-Version",
                               sizeof("MCP-Protocol-Version") - 1);

    if (h != NULL && ngx_http_mcp_version_parse(&h->value) == 0) {
        return ngx_http_mcp_send_error(r, NGX_HTTP_BAD_REQUEST, NULL,
                                       NGX_HTTP_MCP_INVALID_REQUEST,
                                       "Bad Request: unsupported "
                                       "MCP-Protocol-Version");
    }

    h = ngx_http_mcp_header_in(r, "Mcp-Session-Id",
                               sizeof("Mcp-Session-Id") - 1);

    ctx = ngx_http_mcp_create_ctx(r, mlcf);
    if (ctx == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    /* the reply names the session's version, as every reply does */
    if (ngx_http_mcp_session_lookup(mlcf->zone, &h->value, &ctx->rctx)
        != NGX_OK
        || ngx_http_mcp_session_delete(mlcf->zone, &h->value,
                                       r->connection->log)
           != NGX_OK)
    {
        return ngx_http_mcp_send_error(r, NGX_HTTP_NOT_FOUND, NULL,
                                       NGX_HTTP_MCP_SESSION_NOT_FOUND,
                                       "Session not found");
    }

    ngx_log_debug1(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "mcp session %s terminated",
                   ngx_http_mcp_session_log_id(h->value.data, h->value.len));

    r->header_only = 1;

    return ngx_http_mcp_send(r, NGX_HTTP_OK, ctx, NULL, 0);
}


static ngx_http_mcp_ctx_t *
ngx_http_mcp_create_ctx(ngx_http_request_t *r, ngx_http_mcp_loc_conf_t *mlcf)
{
    ngx_http_mcp_ctx_t  *ctx;
    ngx_pool_cleanup_t  *cln;

    ctx = ngx_pcalloc(r->pool, sizeof(ngx_http_mcp_ctx_t));
    if (ctx == NULL) {
        return NULL;
    }

    ctx->request = r;
    ctx->conf = mlcf;

    ctx->rctx.auth = ngx_http_mcp_auth_get(r);

    if (ctx->rctx.auth != NULL) {
        ctx->rctx.subject = ((ngx_http_mcp_auth_t *) ctx->rctx.auth)->subject;
    }

    if (ngx_array_init(&ctx->msgs, r->pool, 1, sizeof(ngx_http_mcp_msg_t))
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

    /* calls still running go on: they own their messages */
    ngx_http_mcp_call_detach(ctx);

    msg = ctx->msgs.elts;

    for (i = 0; i < ctx->msgs.nelts; i++) {
        cJSON_Delete(msg[i].id);
        cJSON_Delete(msg[i].reply);
    }

    cJSON_Delete(ctx->root);
}


/* the body as one piece of memory, wherever nginx kept it */

static ngx_int_t
ngx_http_mcp_read_body(ngx_http_request_t *r, ngx_str_t *body)
{
    off_t         len;
    u_char       *p;
    ssize_t       n;
    ngx_buf_t    *b;
    ngx_chain_t  *cl;

    ngx_str_null(body);

    if (r->request_body == NULL || r->request_body->bufs == NULL) {
        return NGX_OK;
    }

    cl = r->request_body->bufs;

    if (cl->next == NULL && !cl->buf->in_file) {
        body->data = cl->buf->pos;
        body->len = cl->buf->last - cl->buf->pos;
        return NGX_OK;
    }

    len = 0;

    for (cl = r->request_body->bufs; cl; cl = cl->next) {
        len += ngx_buf_size(cl->buf);
    }

    p = ngx_pnalloc(r->pool, len + 1);
    if (p == NULL) {
        return NGX_ERROR;
    }

    body->data = p;

    for (cl = r->request_body->bufs; cl; cl = cl->next) {
        b = cl->buf;

        if (!b->in_file) {
            /* the last buffer of a chunked body may be empty, pos NULL */
            if (b->last > b->pos) {
                p = ngx_cpymem(p, b->pos, b->last - b->pos);
            }

            continue;
        }

        n = ngx_read_file(b->file, p, b->file_last - b->file_pos,
                          b->file_pos);

        if (n != b->file_last - b->file_pos) {
            return NGX_ERROR;
        }

        p += n;
    }

    body->len = p - body->data;

    return NGX_OK;
}


/*
 * Returns the value for ngx_http_finalize_request(), or NGX_AGAIN while
 * calls are still running.
 */

static ngx_int_t
ngx_http_mcp_process(ngx_http_mcp_ctx_t *ctx)
{
    ngx_int_t            rc;
    ngx_uint_t           i;
    ngx_http_request_t  *r;
    ngx_http_mcp_msg_t  *msg;

    r = ctx->request;
    msg = ctx->msgs.elts;

    if (ctx->batch && ctx->msgs.nelts == 0) {
        return ngx_http_mcp_send_error(r, NGX_HTTP_BAD_REQUEST, NULL,
                                       NGX_HTTP_MCP_INVALID_REQUEST,
                                       "Invalid Request: empty batch");
    }

    if (!ctx->batch && msg[0].type == NGX_HTTP_MCP_MSG_REQUEST
        && ngx_strcmp(msg[0].method.data, "initialize") == 0)
    {
        /* the one request that needs no session */
        ctx->status = NGX_HTTP_OK;
        rc = ngx_http_mcp_call_start(ctx, &msg[0], 0);

    } else {
        if (ngx_http_mcp_find_session(ctx, &rc) != NGX_OK) {
            /* refused, and the refusal sent */
            return rc;
        }

        ctx->status = NGX_HTTP_ACCEPTED;

        for (i = 0; i < ctx->msgs.nelts; i++) {
            rc = ngx_http_mcp_handle_message(ctx, &msg[i], i);

            if (rc != NGX_OK) {
                break;
            }
        }
    }

    if (rc != NGX_OK) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    if (ctx->stream != NULL || ctx->pending) {
        /* the stream, or the last call to end, replies */
        return NGX_AGAIN;
    }

    return ngx_http_mcp_reply(ctx);
}


/*
 * Fills the request context from the session that Mcp-Session-Id names.
 * Returns NGX_OK, or NGX_DECLINED when the request was refused; *rc is
 * then the refusal's value for ngx_http_finalize_request().
 */

static ngx_int_t
ngx_http_mcp_find_session(ngx_http_mcp_ctx_t *ctx, ngx_int_t *rc)
{
    *rc = ngx_http_mcp_check_session(ctx);

    return (*rc == NGX_DECLINED) ? NGX_OK : NGX_DECLINED;
}


/* NGX_DECLINED when the session is fine, else the refusal's value */

static ngx_int_t
ngx_http_mcp_check_session(ngx_http_mcp_ctx_t *ctx)
{
    cJSON               *id;
    ngx_uint_t           i;
    ngx_table_elt_t     *h;
    ngx_http_request_t  *r;
    ngx_http_mcp_msg_t  *msg;

    r = ctx->request;
    msg = ctx->msgs.elts;
    id = ctx->batch ? NULL : msg[0].id;

    for (i = 0; i < ctx->msgs.nelts; i++) {
        if (msg[i].type == NGX_HTTP_MCP_MSG_REQUEST
            && ngx_strcmp(msg[i].method.data, "initialize") == 0)
        {
            return ngx_http_mcp_send_error(r, NGX_HTTP_BAD_REQUEST, id,
                       NGX_HTTP_MCP_INVALID_REQUEST,
                       "Invalid Request: initialize must not be batched");
        }
    }

    h = ngx_http_mcp_header_in(r, "Mcp-Session-Id",
                               sizeof("Mcp-Session-Id") - 1);

    if (h == NULL) {
        /*
         * Clients of the stateless revision probe with server/discover
         * and fall back to initialize on a -32601 they can correlate.
         */
        if (!ctx->batch && msg[0].type == NGX_HTTP_MCP_MSG_REQUEST
            && ngx_http_mcp_dispatch_known(&msg[0].method) == 0)
        {
            return ngx_http_mcp_send_error(r, NGX_HTTP_BAD_REQUEST, id,
                                           NGX_HTTP_MCP_METHOD_NOT_FOUND,
                                           "Method not found");
        }

        return ngx_http_mcp_send_error(r, NGX_HTTP_BAD_REQUEST, id,
                                       NGX_HTTP_MCP_INVALID_REQUEST,
                                       "Bad Request: Mcp-Session-Id header "
                                       "is required");
    }

    if (ngx_http_mcp_session_lookup(ctx->conf->zone, &h->value, &ctx->rctx)
        != NGX_OK)
    {
        return ngx_http_mcp_send_error(r, NGX_HTTP_NOT_FOUND, id,
                                       NGX_HTTP_MCP_SESSION_NOT_FOUND,
                                       "Session not found");
    }

    if (ctx->batch && ctx->rctx.version != NGX_HTTP_MCP_V20250326) {
        return ngx_http_mcp_send_error(r, NGX_HTTP_BAD_REQUEST, NULL,
                   NGX_HTTP_MCP_INVALID_REQUEST,
                   "Invalid Request: batches need protocol version "
                   "2025-03-26");
    }

    return NGX_DECLINED;
}


static ngx_int_t
ngx_http_mcp_handle_message(ngx_http_mcp_ctx_t *ctx, ngx_http_mcp_msg_t *msg,
    ngx_uint_t index)
{
    ngx_http_request_t  *r;

    r = ctx->request;

    switch (msg->type) {

    case NGX_HTTP_MCP_MSG_REQUEST:
        ctx->status = NGX_HTTP_OK;
        return ngx_http_mcp_call_start(ctx, msg, index);

    case NGX_HTTP_MCP_MSG_NOTIFICATION:
        return ngx_http_mcp_notification(ctx, msg);

    case NGX_HTTP_MCP_MSG_RESPONSE:
        return ngx_http_mcp_client_response(ctx, msg);

    default:
        if (!ctx->batch) {
            ctx->status = NGX_HTTP_BAD_REQUEST;

        } else if (ctx->status == NGX_HTTP_ACCEPTED) {
            ctx->status = NGX_HTTP_OK;
        }

        msg->reply = ngx_http_mcp_error_reply(r->connection->log, msg->id,
                                              NGX_HTTP_MCP_INVALID_REQUEST,
                                              "Invalid Request", NULL);
        if (msg->reply == NULL) {
            return NGX_ERROR;
        }

        ngx_log_error(NGX_LOG_INFO, r->connection->log, 0,
                      "mcp: invalid JSON-RPC message: %s", msg->error);

        if (ctx->stream != NULL) {
            /* the batch's reply is a stream already: it goes there */
            return ngx_http_mcp_stream_reply(ctx, msg);
        }

        return NGX_OK;
    }
}


static ngx_int_t
ngx_http_mcp_notification(ngx_http_mcp_ctx_t *ctx, ngx_http_mcp_msg_t *msg)
{
    ngx_str_t  *sid;

    sid = &ctx->rctx.session_id;

    if (msg->method.len == sizeof("notifications/initialized") - 1
        && ngx_strncmp(msg->method.data, "notifications/initialized",
                       msg->method.len) == 0)
    {
        (void) ngx_http_mcp_session_set_initialized(ctx->conf->zone, sid);
        return NGX_OK;
    }

    if (msg->method.len == sizeof("notifications/cancelled") - 1
        && ngx_strncmp(msg->method.data, "notifications/cancelled",
                       msg->method.len) == 0)
    {
        return ngx_http_mcp_client_cancel(ctx, msg);
    }

    ngx_log_debug1(NGX_LOG_DEBUG_HTTP, ctx->request->connection->log, 0,
                   "mcp notification \"%V\"", &msg->method);

    return NGX_OK;
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

        texts[n] = ngx_http_mcp_jsonrpc_print(r->pool, reply, &lens[n]);
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

static ngx_int_t
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
    b->last_buf = 1;
    b->last_in_chain = 1;

    out.buf = b;
    out.next = NULL;

    return ngx_http_output_filter(r, &out);
}


ngx_int_t
ngx_http_mcp_send_error(ngx_http_request_t *r, ngx_uint_t status, cJSON *id,
    ngx_int_t code, const char *message)
{
    u_char              *body;
    size_t               len;
    ngx_http_mcp_ctx_t  *ctx;

    body = ngx_http_mcp_error_print(r, id, code, message, &len);
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

    reply = ngx_http_mcp_error_reply(r->connection->log, id, code, message,
                                     NULL);
    if (reply == NULL) {
        return NULL;
    }

    body = ngx_http_mcp_jsonrpc_print(r->pool, reply, len);

    cJSON_Delete(reply);

    return body;
}


/*
 * A JSON-RPC error reply.  The error is logged once, with a correlation
 * id that the reply's error.data carries too; client errors at "info",
 * as nginx logs client errors, internal ones at "error".
 */

cJSON *
ngx_http_mcp_error_reply(ngx_log_t *log, cJSON *id, ngx_int_t code,
    const char *message, ngx_str_t *method)
{
    u_char      correlation[NGX_HTTP_MCP_CORRELATION_LEN + 1];
    ngx_str_t   none = ngx_string("-");
    ngx_uint_t  level;

    if (ngx_http_mcp_correlation_id(correlation, NGX_HTTP_MCP_CORRELATION_LEN)
        != NGX_OK)
    {
        return NULL;
    }

    correlation[NGX_HTTP_MCP_CORRELATION_LEN] = '\0';

    level = (code == NGX_HTTP_MCP_INTERNAL_ERROR) ? NGX_LOG_ERR
                                                  : NGX_LOG_INFO;

    ngx_log_error(level, log, 0,
                  "mcp: %s (code %i, method \"%V\", "
                  "correlation id %s)",
                  message, code, method ? method : &none, correlation);

    return ngx_http_mcp_jsonrpc_error(id, code, message,
                                      (char *) correlation);
}


ngx_table_elt_t *
ngx_http_mcp_header_in(ngx_http_request_t *r, const char *name, size_t len)
{
    return ngx_http_mcp_header_in_after(r, NULL, name, len);
}


/* the next header of that name after prev (NULL: the first) */

static ngx_table_elt_t *
ngx_http_mcp_header_in_after(ngx_http_request_t *r, ngx_table_elt_t *prev,
    const char *name, size_t len)
{
    ngx_uint_t        i;
    ngx_list_part_t  *part;
    ngx_table_elt_t  *h;

    part = &r->headers_in.headers.part;
    h = part->elts;

    for (i = 0; /* void */ ; i++) {

        if (i >= part->nelts) {
            if (part->next == NULL) {
                return NULL;
            }

            part = part->next;
            h = part->elts;
            i = 0;
        }

        if (prev != NULL) {
            if (&h[i] == prev) {
                prev = NULL;
            }

            continue;
        }

        if (h[i].key.len == len
            && ngx_strncasecmp(h[i].key.data, (u_char *) name, len) == 0)
        {
            return &h[i];
        }
    }
}


ngx_int_t
ngx_http_mcp_header_out(ngx_http_request_t *r, const char *name,
    ngx_str_t *value)
{
    ngx_table_elt_t  *h;

    h = ngx_list_push(&r->headers_out.headers);
    if (h == NULL) {
        return NGX_ERROR;
    }

    h->hash = 1;
#if (nginx_version >= 1023000)
    h->next = NULL;
#endif
    h->key.data = (u_char *) name;
    h->key.len = ngx_strlen(name);
    h->value = *value;

    return NGX_OK;
}
