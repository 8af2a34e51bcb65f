
/*
 * The Streamable HTTP transport: the content handler of an "mcp on"
 * location.  It checks the HTTP side of a request (method, Origin,
 * Accept, Content-Type, MCP-Protocol-Version, Mcp-Session-Id), reads the
 * body, splits it into JSON-RPC messages, dispatches the requests and
 * writes the reply once every call has ended.
 */


#include "ngx_http_mcp_edge.h"
#include "ngx_http_mcp_jsonrpc.h"
#include "ngx_http_mcp_store.h"
#include "ngx_http_mcp_call.h"
#include "ngx_http_mcp_core.h"
#include "ngx_http_mcp_trace.h"
#include "ngx_http_mcp_subrequest.h"
#include "ngx_http_mcp_auth.h"
#include "ngx_http_mcp_fleet.h"
#include "ngx_http_mcp_proxy.h"


static ngx_int_t ngx_http_mcp_post(ngx_http_request_t *r,
    ngx_http_mcp_loc_conf_t *mlcf);
static ngx_int_t ngx_http_mcp_delete(ngx_http_request_t *r,
    ngx_http_mcp_loc_conf_t *mlcf);
static ngx_int_t ngx_http_mcp_check_headers(ngx_http_request_t *r,
    ngx_http_mcp_ctx_t *ctx);
static void ngx_http_mcp_body_handler(ngx_http_request_t *r);
static void ngx_http_mcp_stdio_unlisten(cJSON *result);
static ngx_int_t ngx_http_mcp_refuse(ngx_http_request_t *r,
    ngx_int_t status);
static ngx_int_t ngx_http_mcp_post_ready(ngx_http_request_t *r,
    ngx_http_mcp_ctx_t *ctx, ngx_int_t *rc);
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
static ngx_int_t ngx_http_mcp_post_call(ngx_http_mcp_ctx_t *ctx,
    ngx_http_mcp_msg_t *msg, ngx_uint_t index);
static ngx_int_t ngx_http_mcp_post_failed(ngx_http_mcp_call_t *call);
static void ngx_http_mcp_post_detach(ngx_http_mcp_ctx_t *ctx);
static ngx_int_t ngx_http_mcp_post_end(ngx_http_mcp_call_t *call,
    cJSON *reply);
static ngx_int_t ngx_http_mcp_post_stream(ngx_http_mcp_call_t *call);
static void ngx_http_mcp_post_close_stream(ngx_http_mcp_call_t *call);
static void ngx_http_mcp_post_challenge(ngx_http_mcp_call_t *call,
    ngx_str_t *scope);
static ngx_int_t ngx_http_mcp_post_session(ngx_http_mcp_call_t *call,
    ngx_http_mcp_session_init_t *init);


/* what a call of a POST reports to it, while the POST is there */
static ngx_http_mcp_call_edge_t  ngx_http_mcp_post_edge = {
    ngx_http_mcp_post_end,
    ngx_http_mcp_post_stream,
    ngx_http_mcp_post_close_stream,
    ngx_http_mcp_post_challenge,
    ngx_http_mcp_post_session
};

ngx_int_t
ngx_http_mcp_handler(ngx_http_request_t *r)
{
    ngx_int_t                 rc;
    ngx_str_t                 allow = ngx_string("GET, POST, DELETE");
    ngx_http_mcp_loc_conf_t  *mlcf;

    mlcf = ngx_http_get_module_loc_conf(r, ngx_http_mcp_module);

    /*
     * A subrequest is served when it is the module's own (mcp_backend's):
     * nginx runs no access phase for one, and another module's (SSI,
     * mirror, auth_request) would reach the endpoint past mcp_auth_*.
     */
    if (r != r->main && !ngx_http_mcp_fetched(r)) {
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

    /* a browser's preflight, for a gateway too: nothing goes upstream */
    if (r->method == NGX_HTTP_OPTIONS) {
        rc = ngx_http_mcp_cors_preflight(r);

        if (rc != NGX_DECLINED) {
            return rc;
        }
    }

    if (mlcf->pass
        && (r->method == NGX_HTTP_GET || r->method == NGX_HTTP_DELETE))
    {
        return ngx_http_mcp_proxy_other(r, mlcf);
    }

    /* mcp_fleet: a session another node owns is answered there */
    rc = ngx_http_mcp_fleet_route(r, mlcf);

    if (rc != NGX_DECLINED) {
        return rc;
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

    if (!mlcf->enable || r->method != NGX_HTTP_POST
        || (r != r->main && !ngx_http_mcp_fetched(r)))
    {
        return NGX_DECLINED;
    }

    ctx = ngx_http_get_module_ctx(r, ngx_http_mcp_module);

    if (ctx != NULL) {
        /* the phases run again once the body is in */
        return (ctx->parsed || ctx->refused) ? NGX_DECLINED : NGX_DONE;
    }

    /* the caller is known after the access phase: see post() */
    ctx = ngx_http_mcp_ctx_create(r, mlcf, NULL);
    if (ctx == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    ctx->detach = ngx_http_mcp_post_detach;

    if (ngx_http_mcp_check_origin(r, mlcf) != NGX_OK) {
        ctx->refused = NGX_HTTP_FORBIDDEN;
        return NGX_DECLINED;
    }

    ctx->stateless = ngx_http_mcp_stateless_request(&ctx->headers);
    ctx->refused = ngx_http_mcp_check_headers(r, ctx);

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
    ngx_uint_t           batch, changed;
    ngx_http_mcp_ctx_t  *ctx;

    ctx = ngx_http_get_module_ctx(r, ngx_http_mcp_module);
    changed = 0;

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
                && (ngx_http_mcp_trace_read(r, &ctx->msgs,
                                            ctx->conf->trace_generate,
                                            &ctx->trace, &changed)
                    != NGX_OK
                    || ngx_http_mcp_variables_capture(ctx) != NGX_OK)))
        {
            ctx->refused = NGX_HTTP_INTERNAL_SERVER_ERROR;
        }

        ctx->body = body;
        ctx->parsed = 1;
        ctx->trace_changed = changed;
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

    if (ngx_http_mcp_post_ready(r, ctx, &rc) != NGX_OK) {
        return rc;
    }

    if (mlcf->pass) {
        return ngx_http_mcp_proxy_post(ctx);
    }

    /* mcp_fleet: a session or task another node owns is answered there */
    rc = ngx_http_mcp_fleet_route(r, mlcf);

    if (rc != NGX_DECLINED) {
        return rc;
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


/*
 * What every POST is refused for before its messages are served: NGX_OK,
 * or NGX_DECLINED with *rc the reply sent.
 */

static ngx_int_t
ngx_http_mcp_post_ready(ngx_http_request_t *r, ngx_http_mcp_ctx_t *ctx,
    ngx_int_t *rc)
{
    if (ctx == NULL) {
        /* not through the rewrite phase: an internal redirect to here */
        *rc = ngx_http_mcp_send_error(r, NGX_HTTP_BAD_REQUEST, NULL,
                                      NGX_HTTP_MCP_INVALID_REQUEST,
                                      "Bad Request");
        return NGX_DECLINED;
    }

    if (ctx->refused) {
        *rc = ngx_http_mcp_refuse(r, ctx->refused);
        return NGX_DECLINED;
    }

    /* the access phase, after the body was read, knows the caller */
    ctx->rctx.auth = ngx_http_mcp_auth_get(r);

    if (ctx->rctx.auth != NULL) {
        ctx->rctx.subject = ((ngx_http_mcp_auth_t *) ctx->rctx.auth)->subject;
    }

    if (ctx->parse == NGX_DECLINED) {
        *rc = ngx_http_mcp_send_error(r, NGX_HTTP_BAD_REQUEST, NULL,
                                      NGX_HTTP_MCP_PARSE_ERROR,
                                      ctx->parse_error
                                      ? ctx->parse_error : "Parse error");
        return NGX_DECLINED;
    }

    return NGX_OK;
}


/*
 * mcp_stdio's POST (its module's content handler asks, through
 * ngx_http_mcp_stdio_steps): the edge routes it as a gateway's, its
 * refusals first, then a 2026-07-28 request's checks as the built-in
 * endpoint makes them (the child speaks a 2025 revision: nginx is the
 * 2026-07-28 server here), then mcp_pass's checks; NGX_OK, or
 * NGX_DECLINED with *rc the reply sent.
 */

ngx_int_t
ngx_http_mcp_stdio_request(ngx_http_request_t *r, ngx_str_t *body,
    ngx_int_t *rc)
{
    ngx_uint_t           cacheable;
    ngx_http_mcp_msg_t  *msg;
    ngx_http_mcp_ctx_t  *ctx;

    ctx = ngx_http_get_module_ctx(r, ngx_http_mcp_module);

    if (ngx_http_mcp_post_ready(r, ctx, rc) != NGX_OK) {
        return NGX_DECLINED;
    }

    if (ctx->stateless) {
        if (ngx_http_mcp_stateless_check(ctx, rc) != NGX_OK) {
            return NGX_DECLINED;
        }

        msg = ctx->msgs.elts;

        /* the child would answer initialize and ping: the revision not */
        if (ngx_http_mcp_dispatch_stateless(&msg[0].method, &cacheable)
            != NGX_OK)
        {
            *rc = ngx_http_mcp_send_error(r, NGX_HTTP_NOT_FOUND, msg[0].id,
                                          NGX_HTTP_MCP_METHOD_NOT_FOUND,
                                          "Method not found");
            return NGX_DECLINED;
        }
    }

    return ngx_http_mcp_proxy_check_post(ctx, body, rc);
}


/*
 * The child's reply, read as mcp_pass reads one it relays; a 2026-07-28
 * result the caching hints the built-in endpoint gives it, unless the
 * child gave its own.
 */

ngx_int_t
ngx_http_mcp_stdio_reply(ngx_http_request_t *r, cJSON *reply)
{
    cJSON               *result;
    ngx_uint_t           cacheable;
    ngx_http_mcp_msg_t  *msg;
    ngx_http_mcp_ctx_t  *ctx;

    ctx = ngx_http_get_module_ctx(r, ngx_http_mcp_module);

    msg = (ctx != NULL && ctx->stateless && !ctx->batch && ctx->msgs.nelts)
          ? ctx->msgs.elts : NULL;

    /* a 2026-07-28 request reaches a child only as one checked request */
    if (msg != NULL && msg[0].type == NGX_HTTP_MCP_MSG_REQUEST) {
        result = ngx_http_mcp_json_get(reply, "result");

        if (cJSON_IsObject(result)
            && ngx_strcmp(msg[0].method.data, "server/discover") == 0)
        {
            ngx_http_mcp_stdio_unlisten(result);
        }

        if (cJSON_IsObject(result)
            && ngx_http_mcp_json_get(result, "ttlMs") == NULL
            && ngx_http_mcp_json_get(result, "cacheScope") == NULL
            && ngx_http_mcp_dispatch_stateless(&msg[0].method, &cacheable)
               == NGX_OK
            && cacheable
            && ngx_http_mcp_result_cache_hints(result,
                                               ctx->rctx.auth != NULL)
               != NGX_OK)
        {
            return NGX_ERROR;
        }
    }

    if (ctx == NULL || ctx->proxy == NULL) {
        return NGX_OK;
    }

    return ngx_http_mcp_proxy_read_reply(ctx->proxy, reply);
}


/*
 * Whether the reply step changes or checks the reply of this POST (the
 * policy's filter, the caller's scopes, a check, a guardrail): its
 * answer must then reach its client through this request alone.
 */

ngx_uint_t
ngx_http_mcp_stdio_reads(ngx_http_request_t *r)
{
    ngx_http_mcp_ctx_t        *ctx;
    ngx_http_mcp_proxy_ctx_t  *pctx;

    ctx = ngx_http_get_module_ctx(r, ngx_http_mcp_module);
    pctx = (ctx != NULL) ? ctx->proxy : NULL;

    return pctx != NULL && (pctx->policy || pctx->must_read);
}


/*
 * A stdio location serves no subscriptions/listen (its pool keeps no
 * stream for what a child says unasked): a 2026-07-28 client is not
 * told of list changes or resource updates it could not hear of, and
 * does not open a stream that would get a 404.
 */

static void
ngx_http_mcp_stdio_unlisten(cJSON *result)
{
    cJSON       *caps, *cap;
    ngx_uint_t   i;

    static const char  *kinds[] = { "tools", "prompts", "resources" };

    caps = ngx_http_mcp_json_get(result, "capabilities");

    for (i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
        cap = cJSON_IsObject(caps) ? ngx_http_mcp_json_get(caps, kinds[i])
                                   : NULL;

        if (cJSON_IsObject(cap)) {
            cJSON_DeleteItemFromObjectCaseSensitive(cap, "listChanged");
            cJSON_DeleteItemFromObjectCaseSensitive(cap, "subscribe");
        }
    }
}


static ngx_int_t
ngx_http_mcp_refuse(ngx_http_request_t *r, ngx_int_t status)
{
    ngx_int_t    code;
    const char  *message;

    /* the body is not wanted: do not make the client send it */
    r->expect_tested = 1;

    if (ngx_http_discard_request_body(r) != NGX_OK) {
        r->keepalive = 0;
    }

    message = ngx_http_mcp_status_error(status, &code);

    /* the transport refuses with these two for one reason each */
    if (status == NGX_HTTP_FORBIDDEN) {
        message = "Forbidden: Origin not allowed";

    } else if (status == NGX_HTTP_BAD_REQUEST) {
        message = "Bad Request: unsupported MCP-Protocol-Version";
    }

    return ngx_http_mcp_send_error(r, status, NULL, code, message);
}


/* returns NGX_OK or the HTTP status that refuses the request */

static ngx_int_t
ngx_http_mcp_check_headers(ngx_http_request_t *r, ngx_http_mcp_ctx_t *ctx)
{
    ngx_str_t  type;

    if (!ngx_http_mcp_accepts_post(r)) {
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

    /* a stateless request's version is answered with its id: -32022 */
    if (!ctx->stateless
        && ngx_http_mcp_version_check(ctx->headers.version) != NGX_OK)
    {
        return NGX_HTTP_BAD_REQUEST;
    }

    return NGX_OK;
}


static ngx_int_t
ngx_http_mcp_delete(ngx_http_request_t *r, ngx_http_mcp_loc_conf_t *mlcf)
{
    ngx_int_t            rc;
    ngx_str_t            sid;
    ngx_http_mcp_ctx_t  *ctx;

    ctx = ngx_http_mcp_session_request(r, mlcf, &sid, &rc);
    if (ctx == NULL) {
        return rc;
    }

    /* while the store still knows what the session has elsewhere */
    ngx_http_mcp_hooks.session_deleted(r, &sid);

    if (ngx_http_mcp_session_delete(mlcf->zone, &sid, r->connection->log)
        != NGX_OK)
    {
        return ngx_http_mcp_send_error(r, NGX_HTTP_NOT_FOUND, NULL,
                                       NGX_HTTP_MCP_SESSION_NOT_FOUND,
                                       "Session not found");
    }

    ngx_http_mcp_fleet_forget(r, &sid);

    ngx_log_debug1(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "mcp session %s terminated",
                   ngx_http_mcp_session_log_id(sid.data, sid.len));

    r->header_only = 1;

    return ngx_http_mcp_send(r, NGX_HTTP_OK, ctx, NULL, 0);
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

    if (ctx->stateless) {
        /* 2026-07-28: the request says who its client is, no session */
        if (ngx_http_mcp_stateless_check(ctx, &rc) != NGX_OK) {
            return rc;
        }

        ctx->status = NGX_HTTP_OK;
        rc = ngx_http_mcp_post_call(ctx, &msg[0], 0);

    } else if (!ctx->batch && msg[0].type == NGX_HTTP_MCP_MSG_REQUEST
               && ngx_strcmp(msg[0].method.data, "initialize") == 0)
    {
        /* the one request that needs no session */
        if (ngx_http_mcp_fleet_ready(ctx, msg[0].id, &rc) != NGX_OK) {
            return rc;
        }

        ctx->status = NGX_HTTP_OK;
        rc = ngx_http_mcp_post_call(ctx, &msg[0], 0);

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

    h = ctx->headers.session;

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

    if (ctx->headers.twice & NGX_HTTP_MCP_HDR_SESSION) {
        /* which one a proxy in front routed by, nobody can say */
        return ngx_http_mcp_send_error(r, NGX_HTTP_BAD_REQUEST, id,
                                       NGX_HTTP_MCP_INVALID_REQUEST,
                                       "Bad Request: more than one "
                                       "Mcp-Session-Id header");
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
        return ngx_http_mcp_post_call(ctx, msg, index);

    case NGX_HTTP_MCP_MSG_NOTIFICATION:
        return ngx_http_mcp_notification(ctx, msg);

    case NGX_HTTP_MCP_MSG_RESPONSE:
        return ngx_http_mcp_client_response(ctx->conf->zone,
                                            &ctx->rctx.session_id, msg,
                                            r->pool, r->connection->log);

    default:
        if (!ctx->batch) {
            ctx->status = NGX_HTTP_BAD_REQUEST;

        } else if (ctx->status == NGX_HTTP_ACCEPTED) {
            ctx->status = NGX_HTTP_OK;
        }

        msg->reply = ngx_http_mcp_error_reply(r, msg->id,
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
        (void) ngx_http_mcp_session_set_initialized(ctx->conf->zone, sid,
                                            ctx->request->connection->log);
        return NGX_OK;
    }

    if (msg->method.len == sizeof("notifications/cancelled") - 1
        && ngx_strncmp(msg->method.data, "notifications/cancelled",
                       msg->method.len) == 0)
    {
        return ngx_http_mcp_client_cancel(ctx->conf->zone, sid, msg,
                                          ctx->request->pool,
                                          ctx->request->connection->log);
    }

    ngx_log_debug1(NGX_LOG_DEBUG_HTTP, ctx->request->connection->log, 0,
                   "mcp notification \"%V\"", &msg->method);

    return NGX_OK;
}


/*
 * A request of the POST becomes a call, which owns its message from now
 * on and reports back through the POST's edge hooks while the POST is
 * there; dispatch runs it.
 */

static ngx_int_t
ngx_http_mcp_post_call(ngx_http_mcp_ctx_t *ctx, ngx_http_mcp_msg_t *msg,
    ngx_uint_t index)
{
    cJSON                *message;
    ngx_str_t             key;
    ngx_http_mcp_call_t  *call;

    if (ctx->batch) {
        message = cJSON_DetachItemViaPointer(ctx->root, msg->json);

    } else {
        message = ctx->root;
        ctx->root = NULL;
    }

    /* whose tasks the call sees (ngx_http_mcp_task.c) */
    if (ngx_http_mcp_session_client_key(ctx->conf->zone, ctx->request, &key)
        != NGX_OK)
    {
        cJSON_Delete(message);
        return NGX_ERROR;
    }

    call = ngx_http_mcp_call_create(ctx->request->connection->log, ctx->conf,
                                    &ctx->rctx, msg, message);
    if (call == NULL) {
        return NGX_ERROR;
    }

    /* the request's value dies with it; the call may not */
    call->client_key.len = key.len;
    call->client_key.data = ngx_pstrdup(call->pool, &key);

    call->ctx = ctx;
    call->request = ctx->request;
    call->edge = &ngx_http_mcp_post_edge;
    call->loc_conf = ctx->request->loc_conf;
    call->index = index;
    msg->call = call;

    ctx->pending++;

    if (ctx->stream != NULL) {
        /* a later message of a batch whose reply is a stream already */
        call->stream = ctx->stream->id;

        if (ngx_http_mcp_session_stream_expect(ctx->conf->zone,
                                               &ctx->rctx.session_id,
                                               call->stream)
            != NGX_OK)
        {
            call->stream = 0;
        }
    }

    ngx_http_mcp_call_run(call, (key.len && call->client_key.data == NULL)
                                ? ngx_http_mcp_post_failed
                                : ngx_http_mcp_dispatch);

    return NGX_OK;
}


/* a call that could not be set up: an internal error */

static ngx_int_t
ngx_http_mcp_post_failed(ngx_http_mcp_call_t *call)
{
    return NGX_ERROR;
}


/* the POST goes: its calls go on without it */

static void
ngx_http_mcp_post_detach(ngx_http_mcp_ctx_t *ctx)
{
    ngx_uint_t           i;
    ngx_http_mcp_msg_t  *msg;

    msg = ctx->msgs.elts;

    for (i = 0; i < ctx->msgs.nelts; i++) {
        if (msg[i].call != NULL) {
            /* its later errors still name the POST's $request_id */
            (void) ngx_http_mcp_call_correlation(msg[i].call, 1);

            msg[i].call->ctx = NULL;
            msg[i].call->request = NULL;
            msg[i].call = NULL;
        }
    }
}


/*
 * A call ended: its response (NULL: none) goes into the POST's JSON
 * reply, sent once the last call ends.  NGX_DECLINED when the reply is a
 * stream: the call sends it there.
 */

static ngx_int_t
ngx_http_mcp_post_end(ngx_http_mcp_call_t *call, cJSON *reply)
{
    ngx_http_mcp_ctx_t  *ctx;
    ngx_http_mcp_msg_t  *msg;

    ctx = call->ctx;
    msg = ctx->msgs.elts;

    msg[call->index].call = NULL;
    call->ctx = NULL;
    call->request = NULL;
    ctx->pending--;

    if (ctx->stream != NULL) {
        /* the reply goes to the stream: $mcp_outcome hears of it now */
        ngx_http_mcp_jsonrpc_outcome(&msg[call->index], reply);
        return NGX_DECLINED;
    }

    msg[call->index].reply = reply;

    if (ctx->stateless && reply != NULL) {
        ctx->status = ctx->busy ? NGX_HTTP_SERVICE_UNAVAILABLE
                                : ngx_http_mcp_stateless_status(reply);
    }

    if (ctx->waiting && ctx->pending == 0) {
        ngx_http_finalize_request(ctx->request, ngx_http_mcp_reply(ctx));
    }

    return NGX_OK;
}


/*
 * A call sends the client something before its result: the POST's reply
 * becomes an SSE stream that its running calls write to; the replies
 * ready already go first.
 */

static ngx_int_t
ngx_http_mcp_post_stream(ngx_http_mcp_call_t *call)
{
    ngx_int_t            rc;
    ngx_str_t            retry = ngx_string("1");
    ngx_uint_t           i;
    ngx_http_mcp_ctx_t  *ctx;
    ngx_http_mcp_msg_t  *msg;

    ctx = call->ctx;

    if (ctx->stateless && ctx->rctx.session_id.len == 0) {
        /* the stream's events travel through a session of the request's */
        rc = ngx_http_mcp_session_carrier(ctx);

        if (rc == NGX_DECLINED) {
            /* no room, or the client's sessions all busy: as initialize */
            if (ngx_http_mcp_header_out(ctx->request, "Retry-After", &retry)
                != NGX_OK)
            {
                return NGX_ERROR;
            }

            ctx->busy = 1;
            ngx_http_mcp_call_error(call, NGX_HTTP_MCP_SERVER_ERROR,
                                    "Service unavailable: no room for the "
                                    "request's stream");
            return NGX_ERROR;
        }

        if (rc != NGX_OK) {
            return NGX_ERROR;
        }

        call->rctx->session_id.data = ngx_pstrdup(call->pool,
                                                  &ctx->rctx.session_id);
        if (call->rctx->session_id.data == NULL) {
            return NGX_ERROR;
        }

        call->rctx->session_id.len = ctx->rctx.session_id.len;
    }

    rc = ngx_http_mcp_stream_start(ctx);

    /* the client's own limits, as a GET meets them: no [error] line */

    if (rc == NGX_BUSY) {
        ngx_http_mcp_call_error(call, NGX_HTTP_MCP_SERVER_ERROR,
                                "Too many streams");
        return NGX_ERROR;
    }

    if (rc == NGX_DECLINED) {
        ngx_http_mcp_call_error(call, NGX_HTTP_MCP_SESSION_NOT_FOUND,
                                "Session not found");
        return NGX_ERROR;
    }

    if (rc != NGX_OK) {
        return NGX_ERROR;
    }

    msg = ctx->msgs.elts;

    for (i = 0; i < ctx->msgs.nelts; i++) {

        if (msg[i].call != NULL) {
            ngx_http_mcp_call_set_stream(msg[i].call, ctx->stream->id);
            continue;
        }

        if (msg[i].reply != NULL
            && ngx_http_mcp_stream_reply(ctx, &msg[i]) != NGX_OK)
        {
            return NGX_ERROR;
        }
    }

    return NGX_OK;
}


static void
ngx_http_mcp_post_close_stream(ngx_http_mcp_call_t *call)
{
    ngx_http_mcp_ctx_t  *ctx;

    ctx = call->ctx;

    if (ctx->stream != NULL) {
        ngx_http_mcp_stream_end_http(ctx->stream);
    }
}


/* a single request refused for its scope: 403 with the challenge */

static void
ngx_http_mcp_post_challenge(ngx_http_mcp_call_t *call, ngx_str_t *scope)
{
    ngx_http_mcp_ctx_t  *ctx;

    ctx = call->ctx;

    if (!ctx->batch
        && ngx_http_mcp_auth_challenge(ctx->request, scope) == NGX_OK)
    {
        ctx->status = NGX_HTTP_FORBIDDEN;
    }
}


/* initialize: the session, whose id the POST's reply carries */

static ngx_int_t
ngx_http_mcp_post_session(ngx_http_mcp_call_t *call,
    ngx_http_mcp_session_init_t *init)
{
    ngx_int_t            rc;
    ngx_str_t            retry = ngx_string("1");
    ngx_http_mcp_ctx_t  *ctx;

    ctx = call->ctx;

    rc = ngx_http_mcp_session_new(ctx, init, call->log);

    if (rc == NGX_DECLINED) {
        /* nothing could be freed: 503, and the client may try again */
        if (ngx_http_mcp_header_out(ctx->request, "Retry-After", &retry)
            != NGX_OK)
        {
            return NGX_ERROR;
        }

        ctx->status = NGX_HTTP_SERVICE_UNAVAILABLE;
    }

    if (rc == NGX_OK) {
        /*
         * the call, made before the session, learns its id: what its
         * handler keeps with the session (a gateway's backend sessions)
         * needs it
         */
        call->rctx->session_id.data = ngx_pstrdup(call->pool,
                                                  &ctx->rctx.session_id);
        if (call->rctx->session_id.data == NULL) {
            return NGX_ERROR;
        }

        call->rctx->session_id.len = ctx->rctx.session_id.len;

        /* mcp_fleet: the reply waits until Redis knows the owner */
        switch (ngx_http_mcp_fleet_register(ctx)) {

        case NGX_AGAIN:
            ctx->pending++;
            break;

        case NGX_ERROR:
            return NGX_ERROR;
        }
    }

    return rc;
}


