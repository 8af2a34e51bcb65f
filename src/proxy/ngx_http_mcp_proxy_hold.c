
/*
 * mcp_pass and the session's lifecycle: no request but ping reaches a
 * 2025 client before its notifications/initialized (the module's own
 * tools wait for it in ngx_http_mcp_call_request()).  An upstream may ask
 * earlier, so a relayed SSE reply of a session not initialized when it
 * began has its events looked at (ngx_http_mcp_proxy_stream.c), and the
 * first request but ping is held there, with every byte after it, in
 * order, up to mcp_pass_filter_buffer_size (over it, the stream is cut).
 * Notifications, log messages among them, go on meanwhile.
 *
 * The notification may reach any worker, which records it in the zone
 * (ngx_http_mcp_proxy_initialized() below); the held bytes' timer looks
 * there, and the upstream module's writer then sends them as it sends
 * what its read handler leaves in u->out_bufs.  Past mcp_request_timeout,
 * as for the module's own tools, the request is dropped: a POST's client
 * gets a JSON-RPC error for its request, a GET stream ends, and the
 * upstream connection is closed, so that the upstream stops waiting.
 *
 * Why a timer that looks and not the wake-up the module's own calls get
 * (wait records, ngx_http_mcp_ipc.c): those records are the module's
 * request ids, which the client answers; an upstream's request has its
 * own id, and holding is rare and short, so a look every tenth of a second
 * is simpler than another kind of record in the zone.
 *
 * With mcp_session_key the gateway keeps no record of the session: it
 * cannot tell, and relays as it comes.
 */


#include "ngx_http_mcp_proxy.h"
#include "ngx_http_mcp_store.h"
#include "ngx_http_mcp_core.h"
#include "ngx_http_mcp_http.h"


static void ngx_http_mcp_proxy_hold_wait(ngx_event_t *ev);
static void ngx_http_mcp_proxy_hold_expire(ngx_http_request_t *r,
    ngx_http_mcp_proxy_ctx_t *pctx);
static void ngx_http_mcp_proxy_hold_cleanup(void *data);


/*
 * A relay whose requests are looked for: a 2025 session's SSE reply,
 * relayed as it comes, whose session is not initialized yet; its events
 * are read one by one (ngx_http_mcp_proxy_stream.c), as under the tool
 * policy.  The one look at the zone is what an initialized session's
 * relay costs.  NGX_DECLINED: nothing is looked for.
 */

ngx_int_t
ngx_http_mcp_proxy_hold_init(ngx_http_request_t *r,
    ngx_http_mcp_proxy_ctx_t *pctx)
{
    ngx_pool_cleanup_t  *cln;
    ngx_http_mcp_ctx_t  *ctx;

    ctx = pctx->ctx;

    if (!pctx->pinned || pctx->stateless || pctx->initialize || pctx->filter
        || ctx->conf->session_keys != NULL
        || r->upstream->headers_in.status_n >= 300
        || !ngx_http_mcp_proxy_read_as_sse(r)
        || ngx_http_mcp_session_initialized(ctx->conf->zone,
                                            &pctx->client_sid)
           != NGX_AGAIN)
    {
        return NGX_DECLINED;
    }

    cln = ngx_pool_cleanup_add(r->pool, 0);
    if (cln == NULL) {
        return NGX_ERROR;
    }

    cln->handler = ngx_http_mcp_proxy_hold_cleanup;
    cln->data = pctx;

    pctx->hold_timer.handler = ngx_http_mcp_proxy_hold_wait;
    pctx->hold_timer.data = pctx;
    pctx->hold_timer.log = r->connection->log;

    pctx->hold = 1;
    pctx->events = 1;

    return NGX_OK;
}


/*
 * The held bytes go to the client once the session is initialized, or are
 * dropped past mcp_request_timeout; then the upstream module's writer, as
 * the downstream's write handler, sends them (or the end).
 */

static void
ngx_http_mcp_proxy_hold_wait(ngx_event_t *ev)
{
    ngx_msec_t                 timeout, spent;
    ngx_connection_t          *c;
    ngx_http_request_t        *r;
    ngx_http_mcp_ctx_t        *ctx;
    ngx_http_mcp_proxy_ctx_t  *pctx;

    pctx = ev->data;
    ctx = pctx->ctx;
    r = ctx->request;
    c = r->connection;

    timeout = ctx->conf->request_timeout;
    spent = ngx_current_msec - pctx->hold_start;

    if (ngx_http_mcp_session_initialized(ctx->conf->zone, &pctx->client_sid)
        != NGX_OK)
    {
        if (spent < timeout) {
            ngx_add_timer(ev, ngx_min(NGX_HTTP_MCP_PROXY_HOLD_POLL,
                                      timeout - spent));
            return;
        }

        ngx_http_mcp_proxy_hold_expire(r, pctx);

    } else {
        ngx_log_debug1(NGX_LOG_DEBUG_HTTP, c->log, 0,
                       "mcp proxy stream: %uz held bytes go after "
                       "notifications/initialized", pctx->held.len);

        pctx->hold = 0;
        pctx->holding = 0;

        if (ngx_http_mcp_proxy_append(r, pctx->held.data,
                                      pctx->held.data + pctx->held.len)
            != NGX_OK)
        {
            ngx_http_finalize_request(r, NGX_ERROR);
            ngx_http_run_posted_requests(c);
            return;
        }

        /* out_bufs points at it now: what comes next is held anew */
        ngx_str_null(&pctx->held);
        pctx->held_size = 0;
    }

    r->write_event_handler(r);
    ngx_http_run_posted_requests(c);
}


/* past mcp_request_timeout (the file's opening comment) */

static void
ngx_http_mcp_proxy_hold_expire(ngx_http_request_t *r,
    ngx_http_mcp_proxy_ctx_t *pctx)
{
    ngx_http_upstream_t  *u;

    u = r->upstream;

    ngx_log_error(NGX_LOG_INFO, r->connection->log, 0,
                  "mcp: the client did not send notifications/initialized "
                  "in time, the upstream's request held for it is dropped");

    pctx->hold = 0;
    pctx->holding = 0;
    pctx->held.len = 0;

    if (r->method == NGX_HTTP_POST
        && ngx_http_mcp_proxy_bad_reply(r, pctx,
                                        NGX_HTTP_MCP_REQUEST_TIMED_OUT,
                                        "Request timed out: the upstream "
                                        "MCP server asked the client "
                                        "before notifications/initialized")
           == NGX_DONE)
    {
        return;
    }

    u->length = 0;
    u->keepalive = 0;
}


/*
 * The relay ends (rc as the upstream module's finalizer has it) with
 * bytes held: after a whole reply (0) a POST's go out, as its response
 * may be among them and no later moment comes; a GET stream's, or any
 * after a failure, are dropped.  The timer goes: nothing is held now.
 */

void
ngx_http_mcp_proxy_hold_end(ngx_http_request_t *r,
    ngx_http_mcp_proxy_ctx_t *pctx, ngx_int_t rc)
{
    ngx_http_upstream_t  *u;

    if (!pctx->holding) {
        return;
    }

    pctx->holding = 0;

    if (pctx->hold_timer.timer_set) {
        ngx_del_timer(&pctx->hold_timer);
    }

    u = r->upstream;

    if (rc != 0 || r->method != NGX_HTTP_POST || !r->header_sent
        || ngx_http_mcp_proxy_append(r, pctx->held.data,
                                     pctx->held.data + pctx->held.len)
           != NGX_OK)
    {
        return;
    }

    (void) ngx_http_output_filter(r, u->out_bufs);
    u->out_bufs = NULL;
}


static void
ngx_http_mcp_proxy_hold_cleanup(void *data)
{
    ngx_http_mcp_proxy_ctx_t  *pctx = data;

    if (pctx->hold_timer.timer_set) {
        ngx_del_timer(&pctx->hold_timer);
    }
}


/*
 * The client's notifications/initialized, relayed: the zone records it,
 * as the module's own endpoint does (ngx_http_mcp_notification()), so
 * that a relay holding a request, at any worker, lets it go.
 */

void
ngx_http_mcp_proxy_initialized(ngx_http_mcp_ctx_t *ctx, ngx_str_t *sid)
{
    ngx_uint_t           i;
    ngx_http_mcp_msg_t  *msg;

    if (ctx->conf->session_keys != NULL) {
        /* no zone record */
        return;
    }

    msg = ctx->msgs.elts;

    for (i = 0; i < ctx->msgs.nelts; i++) {
        if (msg[i].type == NGX_HTTP_MCP_MSG_NOTIFICATION
            && msg[i].method.len == sizeof("notifications/initialized") - 1
            && ngx_strncmp(msg[i].method.data, "notifications/initialized",
                           msg[i].method.len)
               == 0)
        {
            (void) ngx_http_mcp_session_set_initialized(ctx->conf->zone, sid,
                                              ctx->request->connection->log);
            return;
        }
    }
}
