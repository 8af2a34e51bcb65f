
/*
 * A leg's request sent again (mcp_backend's share of issue 44's reload
 * safety): the backend's location is a proxy_pass with a keepalive cache
 * as a rule, and a backend that reloads closes its idle connections; a
 * request written on one just then fails before any byte of the reply
 * (the fetch's "unreplied", ngx_http_mcp_subrequest.c), and nginx never
 * tries a written POST again on its own.  The leg sends it again when
 * acting on it twice is harmless, by the rule mcp_pass_retry follows
 * (ngx_http_mcp_jsonrpc_retry()); a tools/call only when the backend's
 * own tools/list, as the gateway last merged it, declared the tool
 * readOnlyHint or idempotentHint.  Those two bits are kept per backend
 * tool in the session zone, as mcp_pass keeps an upstream's, under the
 * backend's location (no mcp_pass URL looks like one) and the tool's
 * name at the backend: every worker's legs see them.
 */


#include "ngx_http_mcp_aggregate.h"
#include "ngx_http_mcp_jsonrpc.h"
#include "ngx_http_mcp_store.h"
#include "ngx_http_mcp_core.h"


/*
 * A tool of backend b's tools/list, name its own: its hints, for its
 * calls' retries.  No room in the zone: its calls go once, as an
 * unlisted tool's.
 */

void
ngx_http_mcp_aggregate_learn(ngx_http_mcp_aggregate_op_t *op,
    ngx_http_mcp_backend_t *b, cJSON *tool, ngx_str_t *name)
{
    if (ngx_http_mcp_tools_hint(ngx_http_mcp_call_conf(op->call)->zone,
                                &b->uri, name,
                                ngx_http_mcp_jsonrpc_tool_hints(tool))
        != NGX_OK)
    {
        ngx_log_debug1(NGX_LOG_DEBUG_HTTP,
                       ngx_http_mcp_call_get_log(op->call), 0,
                       "mcp backend \"%V\": no room for a tool's hints",
                       &b->name);
    }
}


/* whether what the leg sent (method; NULL: its notification) may go twice */

ngx_uint_t
ngx_http_mcp_aggregate_retry_safe(ngx_http_mcp_aggregate_leg_t *leg,
    const char *method)
{
    ngx_str_t  m;

    if (method == NULL) {
        return ngx_http_mcp_jsonrpc_retry(NGX_HTTP_MCP_MSG_NOTIFICATION, NULL)
               == NGX_HTTP_MCP_RETRY_SAFE;
    }

    m.data = (u_char *) method;
    m.len = ngx_strlen(method);

    /* a tools/call's name is the backend's own: route() took the prefix */
    return ngx_http_mcp_tools_retry(
               ngx_http_mcp_call_conf(leg->op->call)->zone,
               &leg->backend->uri, NGX_HTTP_MCP_MSG_REQUEST, &m, leg->params);
}
