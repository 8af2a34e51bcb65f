
/*
 * mcp_pass_retry: a relayed request sent again on another connection
 * when the keepalive connection it went on, one reused from the cache,
 * failed before any byte of the reply came: the replica's worker was
 * closing it (a reload, its keepalive_timeout) as the gateway wrote.
 *
 * nginx gives such a failure one more try already, but not to a POST
 * once it was written (next_upstream "non_idempotent"), and mcp_pass's
 * session requests get no other try at all (next_upstream is off: there
 * is no other replica for them).  The replica may have read the request
 * before it closed, so only what is harmless twice goes again: requests
 * that read (initialize, the lists: a method that ends in "/list",
 * resources/read, prompts/get, ping, completion/complete, tasks/get,
 * server/discover; the 2026-07-28 cacheable ones are among them),
 * notifications and client answers (a server takes an answer to its
 * request once and drops a second; a second notification tells what
 * the first told), a GET (a stream opens; nothing runs) and a DELETE
 * (HTTP's idempotent method), and a tools/call of a tool whose
 * upstream's list declared it readOnlyHint or idempotentHint (the rule
 * is ngx_http_mcp_jsonrpc_retry()'s, which mcp_backend's legs follow
 * too).  A POST is sent again only when each of its messages may be.
 *
 * Why per connection, not a location's next_upstream: the request's
 * first write on a connection points u->conf at the location's copy
 * whose next_upstream allows the try (upstream_retry: an error, not a
 * timeout: a replica that is slow may be running the call), when that
 * connection came from the cache; on a new connection, or once a byte
 * of the reply came (ngx_http_mcp_proxy_process_status()), u->conf is
 * the request's own again, and a failure is the client's error, as
 * without this.  A session's retry goes to its replica, as any of its
 * requests does; initialize and a stateless request may move on.
 */


#include "ngx_http_mcp_proxy.h"
#include "ngx_http_mcp_jsonrpc.h"
#include "ngx_http_mcp_store.h"


static ngx_int_t ngx_http_mcp_proxy_retry_tool(void *data, cJSON *tool,
    ngx_str_t *name);


/* whether the request pctx relays may be sent twice */

ngx_uint_t
ngx_http_mcp_proxy_retry_safe(ngx_http_mcp_proxy_ctx_t *pctx)
{
    ngx_uint_t           i;
    ngx_http_request_t  *r;
    ngx_http_mcp_msg_t  *msg;

    r = pctx->ctx->request;

    if (!pctx->conf->retry) {
        return 0;
    }

    if (r->method != NGX_HTTP_POST) {
        return r->method == NGX_HTTP_GET || r->method == NGX_HTTP_DELETE;
    }

    msg = pctx->ctx->msgs.elts;

    for (i = 0; i < pctx->ctx->msgs.nelts; i++) {
        /*
         * a tools/call by the upstream's name, as the hints were learnt:
         * a view's renamed call says it by now
         * (ngx_http_mcp_proxy_view_body())
         */
        if (!ngx_http_mcp_tools_retry(pctx->ctx->conf->zone,
                                      &pctx->conf->tools_key, msg[i].type,
                                      &msg[i].method, msg[i].params))
        {
            return 0;
        }
    }

    return pctx->ctx->msgs.nelts != 0;
}


/*
 * The request's writer while it may go again: each write on a
 * connection the keepalive cache gave lets a failure there try again
 * (upstream_retry); on a connection of its own, or once the reply
 * began, u->conf is the request's.
 */

ngx_int_t
ngx_http_mcp_proxy_retry_output(void *data, ngx_chain_t *in)
{
    ngx_http_request_t *r = data;

    ngx_http_upstream_t       *u;
    ngx_http_mcp_proxy_ctx_t  *pctx;

    u = r->upstream;
    pctx = ngx_http_mcp_proxy_get_ctx(r);

    if (!pctx->replied) {
        u->conf = u->peer.cached ? &pctx->conf->upstream_retry : pctx->uconf;

        ngx_log_debug2(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                       "mcp proxy: on a %s connection, %s",
                       u->peer.cached ? "cached" : "new",
                       u->peer.cached ? "may go again" : "goes once");
    }

    return ngx_chain_writer(&u->writer, in);
}


/*
 * A tools/list result relayed: each tool's readOnlyHint and
 * idempotentHint, kept in the zone for every worker's retries.  The
 * hints are the upstream's word on its own tools; mcp_pass_retry off
 * is for an upstream whose word is not to be taken.
 */

ngx_int_t
ngx_http_mcp_proxy_retry_learn(ngx_http_mcp_proxy_ctx_t *pctx,
    cJSON *result)
{
    ngx_uint_t  changed;

    changed = 0;

    return ngx_http_mcp_jsonrpc_tools(result, ngx_http_mcp_proxy_retry_tool,
                                      pctx, &changed);
}


static ngx_int_t
ngx_http_mcp_proxy_retry_tool(void *data, cJSON *tool, ngx_str_t *name)
{
    ngx_http_mcp_proxy_ctx_t *pctx = data;

    if (ngx_http_mcp_tools_hint(pctx->ctx->conf->zone,
                                &pctx->conf->tools_key, name,
                                ngx_http_mcp_jsonrpc_tool_hints(tool))
        != NGX_OK)
    {
        /* no room: the calls go once, as for a tool not listed */
        ngx_log_debug0(NGX_LOG_DEBUG_HTTP,
                       pctx->ctx->request->connection->log, 0,
                       "mcp proxy: no room for a tool's hints");
        return NGX_DONE;
    }

    return NGX_OK;
}
