
/*
 * Guardrails on mcp_pass: the core's engine (ngx_http_mcp_guard.c) held
 * to what a tools/call carries and what comes back:
 *
 * - arguments: as the module's strict parser read them, before anything
 *   is relayed.  "redact" rewrites the parsed message, and the body the
 *   upstream gets is that message printed again
 *   (ngx_http_mcp_proxy_view_body()), not the client's bytes: the
 *   upstream reads what the guard read, one spelling of each value.  A
 *   POST with Mcp-Param-* headers is refused instead, for they mirror
 *   arguments and are relayed as they are;
 * - results and lists: in a JSON reply held whole or an SSE event
 *   (ngx_http_mcp_proxy_check.c), printed again when changed.
 *
 * A reply is read whole or event by event within mcp_pass_filter_buffer
 * _size: one larger is refused, not relayed unread.
 */


#include "ngx_http_mcp_proxy.h"
#include "ngx_http_mcp_param.h"


static void ngx_http_mcp_proxy_guard_ctx(ngx_http_mcp_proxy_ctx_t *pctx,
    ngx_http_mcp_guard_ctx_t *gc);
static ngx_uint_t ngx_http_mcp_proxy_guard_params(ngx_http_request_t *r);


/* NGX_OK, NGX_DECLINED (*why: refused before anything is relayed) */

ngx_int_t
ngx_http_mcp_proxy_guard_arguments(ngx_http_mcp_proxy_ctx_t *pctx,
    cJSON *arguments, const char **why)
{
    ngx_int_t                 rc;
    ngx_uint_t                changed;
    ngx_http_mcp_guard_ctx_t  gc;

    if (!(pctx->conf->guard_where & NGX_HTTP_MCP_GUARD_ARGS)) {
        return NGX_OK;
    }

    ngx_http_mcp_proxy_guard_ctx(pctx, &gc);
    changed = 0;

    rc = ngx_http_mcp_guard_arguments(&gc, arguments, 1, &changed, why);

    if (rc != NGX_OK || !changed) {
        return rc;
    }

    if (ngx_http_mcp_proxy_guard_params(pctx->ctx->request)) {
        *why = "Arguments refused by a guardrail: a redacted call may not "
               "carry Mcp-Param headers";
        return NGX_DECLINED;
    }

    pctx->redacted = 1;

    return NGX_OK;
}


ngx_int_t
ngx_http_mcp_proxy_guard_result(ngx_http_mcp_proxy_ctx_t *pctx,
    cJSON *result, ngx_uint_t *changed)
{
    ngx_http_mcp_guard_ctx_t  gc;

    if (!(pctx->conf->guard_where & NGX_HTTP_MCP_GUARD_RESULTS)) {
        return NGX_OK;
    }

    ngx_http_mcp_proxy_guard_ctx(pctx, &gc);

    return ngx_http_mcp_guard_result(&gc, result, changed);
}


ngx_int_t
ngx_http_mcp_proxy_guard_list(ngx_http_mcp_proxy_ctx_t *pctx,
    cJSON *result, ngx_uint_t *changed)
{
    ngx_http_mcp_guard_ctx_t  gc;

    if (!(pctx->conf->guard_where & NGX_HTTP_MCP_GUARD_LISTS)) {
        return NGX_OK;
    }

    ngx_http_mcp_proxy_guard_ctx(pctx, &gc);

    return ngx_http_mcp_guard_list(&gc, result, changed);
}


static void
ngx_http_mcp_proxy_guard_ctx(ngx_http_mcp_proxy_ctx_t *pctx,
    ngx_http_mcp_guard_ctx_t *gc)
{
    ngx_http_request_t  *r;

    r = pctx->ctx->request;

    gc->guards = pctx->conf->guards;
    gc->pool = r->pool;
    gc->log = r->connection->log;
    gc->request = r;
    gc->key_hit = 0;
}


/* whether the POST carries an Mcp-Param-* header (relayed as it is) */

static ngx_uint_t
ngx_http_mcp_proxy_guard_params(ngx_http_request_t *r)
{
    ngx_uint_t        i;
    ngx_list_part_t  *part;
    ngx_table_elt_t  *h;

    part = &r->headers_in.headers.part;
    h = part->elts;

    for (i = 0; /* void */; i++) {

        if (i >= part->nelts) {
            if (part->next == NULL) {
                return 0;
            }

            part = part->next;
            h = part->elts;
            i = 0;
        }

        if (h[i].key.len > sizeof(NGX_HTTP_MCP_PARAM_PREFIX) - 1
            && ngx_strncasecmp(h[i].key.data,
                               (u_char *) NGX_HTTP_MCP_PARAM_PREFIX,
                               sizeof(NGX_HTTP_MCP_PARAM_PREFIX) - 1)
               == 0)
        {
            return 1;
        }
    }
}
