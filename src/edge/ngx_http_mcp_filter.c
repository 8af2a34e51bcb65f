
/*
 * An MCP endpoint never answers with nginx's HTML error page: when nginx
 * itself ends a request of an MCP location with an error (limit_req's
 * 429 or 503, a 413 from reading a chunked body, an upstream that is
 * down or timed out), these filters swap the page for a JSON-RPC error
 * with the same status, the request's id where there is one, and a
 * correlation id that the error_log line carries too.  A rate limit also
 * gets Retry-After.
 */


#include "ngx_http_mcp_edge.h"
#include "ngx_http_mcp_jsonrpc.h"
#include "ngx_http_mcp_call.h"
#include "ngx_http_mcp_core.h"
#include "ngx_http_mcp_fleet.h"
#include "ngx_http_mcp_proxy.h"


static ngx_int_t ngx_http_mcp_header_filter(ngx_http_request_t *r);
static ngx_int_t ngx_http_mcp_body_filter(ngx_http_request_t *r,
    ngx_chain_t *in);


static ngx_http_output_header_filter_pt  ngx_http_next_header_filter;
static ngx_http_output_body_filter_pt    ngx_http_next_body_filter;


ngx_int_t
ngx_http_mcp_filter_init(ngx_conf_t *cf)
{
    ngx_http_next_header_filter = ngx_http_top_header_filter;
    ngx_http_top_header_filter = ngx_http_mcp_header_filter;

    ngx_http_next_body_filter = ngx_http_top_body_filter;
    ngx_http_top_body_filter = ngx_http_mcp_body_filter;

    return NGX_OK;
}


static ngx_int_t
ngx_http_mcp_header_filter(ngx_http_request_t *r)
{
    cJSON                    *id;
    u_char                   *body;
    size_t                    len;
    ngx_int_t                 code;
    ngx_str_t                 retry = ngx_string("1");
    ngx_uint_t                i;
    ngx_uint_t                gone, task;
    const char               *text;
    ngx_http_mcp_ctx_t       *ctx;
    ngx_http_mcp_msg_t       *msg;
    ngx_http_mcp_loc_conf_t  *mlcf;

    mlcf = ngx_http_get_module_loc_conf(r, ngx_http_mcp_module);

    /* only nginx's own error pages: they set err_status */
    if ((!mlcf->enable && !ngx_http_mcp_fleet_forwarded(r))
        || r != r->main || r->err_status < 400
        || r->headers_out.status != (ngx_uint_t) r->err_status)
    {
        return ngx_http_next_header_filter(r);
    }

    ctx = ngx_http_get_module_ctx(r, ngx_http_mcp_module);
    task = 0;

    if (ctx == NULL) {
        /* a forward to an mcp_fleet node: the context before it */
        ctx = ngx_http_mcp_fleet_saved(r, &task);

        if (ctx != NULL) {
            ngx_http_set_ctx(r, ctx, ngx_http_mcp_module);
        }
    }

    if (ctx == NULL) {
        ctx = ngx_pcalloc(r->pool, sizeof(ngx_http_mcp_ctx_t));
        if (ctx == NULL) {
            return NGX_ERROR;
        }

        ctx->request = r;
        ctx->conf = mlcf;
        ngx_http_set_ctx(r, ctx, ngx_http_mcp_module);

        /* as every context has them: $mcp_method reads them */
        ngx_http_mcp_headers_read(r, &ctx->headers);
    }

    id = NULL;

    if (ctx->parsed) {
        msg = ctx->msgs.elts;

        for (i = 0; i < ctx->msgs.nelts && id == NULL; i++) {
            if (msg[i].type == NGX_HTTP_MCP_MSG_REQUEST) {
                id = msg[i].id;
            }
        }
    }

    /*
     * The session went with its replica, or with the mcp_fleet node that
     * owned it (its forward found nobody there): the client starts anew.
     */
    gone = ngx_http_mcp_proxy_replica_gone(ctx)
           || (r->headers_out.status == NGX_HTTP_BAD_GATEWAY
               && ngx_http_mcp_fleet_owner_gone(r));

    if (gone) {
        r->headers_out.status = NGX_HTTP_NOT_FOUND;
        r->headers_out.status_line.len = 0;
    }

    text = ngx_http_mcp_status_error(r->headers_out.status, &code);

    if (gone) {
        text = "Session not found";
        code = NGX_HTTP_MCP_SESSION_NOT_FOUND;
    }

    if (gone && task) {
        /* a 2026-07-28 task that went with its node: unknown, as a
         * node answers for a task it does not hold */
        r->headers_out.status = NGX_HTTP_OK;
        text = "Invalid params: no such task";
        code = NGX_HTTP_MCP_INVALID_PARAMS;
    }

    body = ngx_http_mcp_error_print(r, id, code, text, &len);
    if (body == NULL) {
        return NGX_ERROR;
    }

    ctx->error_page.data = body;
    ctx->error_page.len = len;

    r->headers_out.content_type.len = sizeof("application/json") - 1;
    r->headers_out.content_type.data = (u_char *) "application/json";
    r->headers_out.content_type_len = r->headers_out.content_type.len;
    r->headers_out.content_type_lowcase = NULL;
    r->headers_out.content_length_n = len;

    if (r->headers_out.content_length) {
        r->headers_out.content_length->hash = 0;
        r->headers_out.content_length = NULL;
    }

    if ((r->headers_out.status == NGX_HTTP_TOO_MANY_REQUESTS
         || r->headers_out.status == NGX_HTTP_SERVICE_UNAVAILABLE)
        && ngx_http_mcp_header_out(r, "Retry-After", &retry) != NGX_OK)
    {
        return NGX_ERROR;
    }

    return ngx_http_next_header_filter(r);
}


/* the page nginx wrote goes, the JSON-RPC error goes out instead */

static ngx_int_t
ngx_http_mcp_body_filter(ngx_http_request_t *r, ngx_chain_t *in)
{
    ngx_buf_t           *b;
    ngx_chain_t          out;
    ngx_http_mcp_ctx_t  *ctx;

    ctx = ngx_http_get_module_ctx(r, ngx_http_mcp_module);

    if (ctx == NULL || ctx->error_page.data == NULL) {
        return ngx_http_next_body_filter(r, in);
    }

    if (ctx->error_page_sent || r->header_only) {
        return NGX_OK;
    }

    ctx->error_page_sent = 1;

    b = ngx_calloc_buf(r->pool);
    if (b == NULL) {
        return NGX_ERROR;
    }

    b->pos = ctx->error_page.data;
    b->last = b->pos + ctx->error_page.len;
    b->memory = 1;
    b->last_buf = 1;
    b->last_in_chain = 1;

    out.buf = b;
    out.next = NULL;

    return ngx_http_next_body_filter(r, &out);
}
