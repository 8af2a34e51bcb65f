
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
 *
 * Before the parse, the raw text (ngx_http_mcp_guard_raw()): a POST's
 * body with no backslash that no pattern matches holds no argument that
 * does; so for a reply, or an SSE event, that nothing but the
 * guardrails reads, which then goes as it came, unparsed.
 */


#include "ngx_http_mcp_proxy.h"
#include "ngx_http_mcp_param.h"
#include "ngx_http_mcp_auth.h"


static void ngx_http_mcp_proxy_guard_ctx(ngx_http_mcp_proxy_ctx_t *pctx,
    ngx_http_mcp_guard_ctx_t *gc);
static ngx_uint_t ngx_http_mcp_proxy_guard_params(ngx_http_request_t *r);
static ngx_uint_t ngx_http_mcp_proxy_guard_alone(
    ngx_http_mcp_proxy_ctx_t *pctx);


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

    /* the body the arguments were parsed from, strictly */
    rc = ngx_http_mcp_guard_raw(gc.guards, NGX_HTTP_MCP_GUARD_ARGS,
                                pctx->ctx->body.data, pctx->ctx->body.len,
                                1, gc.log);

    if (rc != NGX_OK) {
        return (rc == NGX_DECLINED) ? NGX_OK : NGX_ERROR;
    }

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


/*
 * A reply held whole, or one SSE event [start, end): NGX_DECLINED when
 * it may go as it came, unparsed (only the guardrails read it, and its
 * bytes prove they match nothing in it); NGX_OK: read it; NGX_ERROR.
 */

ngx_int_t
ngx_http_mcp_proxy_guard_reply(ngx_http_mcp_proxy_ctx_t *pctx,
    u_char *start, u_char *end)
{
    if (!(pctx->conf->guard_where
          & (NGX_HTTP_MCP_GUARD_RESULTS | NGX_HTTP_MCP_GUARD_LISTS))
        || !ngx_http_mcp_proxy_guard_alone(pctx))
    {
        return NGX_OK;
    }

    return ngx_http_mcp_guard_raw(pctx->conf->guards,
                                  NGX_HTTP_MCP_GUARD_RESULTS
                                  | NGX_HTTP_MCP_GUARD_LISTS,
                                  start, end - start, 0,
                                  pctx->ctx->request->connection->log);
}


/*
 * Whether the guardrails are all that reads a reply: no tool policy,
 * scopes, view or pins (which read any tools/list answer in it), no
 * outputSchema check or learning, no $mcp_outcome, and no request of the
 * POST but tools/call (a list's reply is read for the retry hints).
 * Else it is parsed, as any reply read is.
 */

static ngx_uint_t
ngx_http_mcp_proxy_guard_alone(ngx_http_mcp_proxy_ctx_t *pctx)
{
    ngx_uint_t                 i;
    ngx_http_mcp_ctx_t        *ctx;
    ngx_http_mcp_msg_t        *msg;
    ngx_http_mcp_main_conf_t  *mmcf;

    ctx = pctx->ctx;

    if (ngx_http_mcp_policy_on(ctx->conf)
        || pctx->conf->views != NULL
        || pctx->conf->pin != NGX_HTTP_MCP_PIN_OFF
        || pctx->conf->check_arguments
        || pctx->conf->check_results
        || (ctx->rctx.auth != NULL
            && ngx_http_mcp_auth_tool_scoped(ctx->rctx.auth)))
    {
        return 0;
    }

    mmcf = ngx_http_get_module_main_conf(ctx->request, ngx_http_mcp_module);

    if (mmcf->audit & NGX_HTTP_MCP_AUDIT_OUTCOME) {
        return 0;
    }

    msg = ctx->msgs.elts;

    for (i = 0; i < ctx->msgs.nelts; i++) {
        if (msg[i].type == NGX_HTTP_MCP_MSG_REQUEST
            && !(msg[i].method.len == sizeof("tools/call") - 1
                 && ngx_strncmp(msg[i].method.data, "tools/call",
                                msg[i].method.len)
                    == 0))
        {
            return 0;
        }
    }

    return 1;
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
