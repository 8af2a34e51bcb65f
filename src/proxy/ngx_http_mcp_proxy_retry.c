
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
 * Why per connection, not a location's next_upstream: when a try on a
 * connection that came from the keepalive cache fails before a byte of
 * the reply came, the free hook of its peer, which nginx calls before
 * it weighs next_upstream (ngx_http_upstream_next(), 1.22 to 1.31 alike),
 * points u->conf at the location's copy whose next_upstream allows the
 * try (upstream_retry: an error, not a timeout: a replica that is slow
 * may be running the call) when the request is harmless twice.  So the
 * zone is asked for a tool's hints only on such a failure, not on every
 * call.  Each write of a try, and the reply's first byte
 * (ngx_http_mcp_proxy_process_status()), make u->conf the request's own
 * again: a failure on a new connection, or once the reply began, is the
 * client's error, as without this.  A session's retry goes to its
 * replica, as any of its requests does; initialize and a stateless
 * request may move on.
 */


#include "ngx_http_mcp_proxy.h"
#include "ngx_http_mcp_jsonrpc.h"
#include "ngx_http_mcp_store.h"


static ngx_uint_t ngx_http_mcp_proxy_retry_safe(
    ngx_http_mcp_proxy_ctx_t *pctx);
static void ngx_http_mcp_proxy_retry_free(ngx_peer_connection_t *pc,
    void *data, ngx_uint_t state);
static ngx_int_t ngx_http_mcp_proxy_retry_tool(void *data, cJSON *tool,
    ngx_str_t *name);


/* whether the request pctx relays may be sent twice */

static ngx_uint_t
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
 * The request's writer under mcp_pass_retry: each write of a try, until
 * the reply began, makes u->conf the request's own, and on a connection
 * the keepalive cache gave hooks the peer's free, which decides whether
 * a failure there may try again.
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
        u->conf = pctx->uconf;

        if (u->peer.cached && u->peer.free != ngx_http_mcp_proxy_retry_free)
        {
            pctx->peer_free = u->peer.free;
            u->peer.free = ngx_http_mcp_proxy_retry_free;
        }

        ngx_log_debug1(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                       "mcp proxy: on a %s connection",
                       u->peer.cached ? "cached" : "new");
    }

    return ngx_chain_writer(&u->writer, in);
}


/*
 * The peer's free, which ngx_http_upstream_next() calls before it looks
 * at u->conf->next_upstream: a try on a cached connection that failed
 * before any byte of the reply may go again when the request is
 * harmless twice (asked of the zone only now), else it goes once; on a
 * new connection u->conf stays as it is.  Then the peer's own free.
 * Wrapped here, not in mcp_affinity's balancer: a gateway without it
 * (one server, or a URL) has round robin's or keepalive's free.
 */

static void
ngx_http_mcp_proxy_retry_free(ngx_peer_connection_t *pc, void *data,
    ngx_uint_t state)
{
    ngx_http_request_t        *r;
    ngx_http_upstream_t       *u;
    ngx_http_mcp_proxy_ctx_t  *pctx;

    u = (ngx_http_upstream_t *)
            ((u_char *) pc - offsetof(ngx_http_upstream_t, peer));
    r = u->output.filter_ctx;
    pctx = ngx_http_mcp_proxy_get_ctx(r);

    if ((state & NGX_PEER_FAILED) && pc->cached && !pctx->replied) {
        u->conf = ngx_http_mcp_proxy_retry_safe(pctx)
                  ? &pctx->conf->upstream_retry : pctx->uconf;

        ngx_log_debug1(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                       "mcp proxy: a cached connection failed, %s",
                       (u->conf == pctx->uconf) ? "goes once"
                                                : "may go again");

        /*
         * A kept connection closed or reset before a byte of the reply
         * is the end of that connection (its worker exited at a reload,
         * or was killed), not of the server: counted as the server's
         * failure it took every replica out for fail_timeout at each
         * reload ("no live upstreams" for the requests no session pins,
         * scripts/soak).  A timeout still counts: a hung server is one.
         */

        if (pc->connection == NULL
            || !(pc->connection->read->timedout
                 || pc->connection->write->timedout))
        {
            state &= ~NGX_PEER_FAILED;
        }
    }

    pctx->peer_free(pc, data, state);
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
        /*
         * no room: the calls go once, as for a tool not listed; the
         * list is read again next time, for the room there may be then
         */
        pctx->memo_names = NULL;

        ngx_log_debug0(NGX_LOG_DEBUG_HTTP,
                       pctx->ctx->request->connection->log, 0,
                       "mcp proxy: no room for a tool's hints");
        return NGX_DONE;
    }

    return NGX_OK;
}
