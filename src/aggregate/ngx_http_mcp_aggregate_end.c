
/*
 * The ends of a client's exchange with the gateway over several MCP
 * servers (mcp_backend) that its backends are told of:
 *
 *   - the client's DELETE of its session: each backend its session has
 *     a session with gets DELETE, with that session's Mcp-Session-Id
 *     and the version it speaks, over a background subrequest of the
 *     client's DELETE whose reply nobody waits for.  The client's answer
 *     goes at once; a backend that is down, or answers 404 or 405, is
 *     no concern of the client's, and nothing is logged above debug.  A
 *     session that ends in the store by itself (idle expiry, eviction
 *     from a full zone) ends under the zone's lock, inside another
 *     request's lookup, with nothing to carry a message: its backend
 *     sessions end by their own timeouts.  A subscriptions/listen's own
 *     backend sessions, when its POST goes, wait in the worker for a
 *     request to carry their DELETEs (ngx_http_mcp_aggregate_park()).
 *
 *   - a client that goes away (its connection closes, a write to it
 *     times out) while a routed request (tools/call, prompts/get,
 *     resources/read) runs at a backend, whether the backend answers
 *     with JSON or is in the middle of its SSE stream: the backend gets
 *     notifications/cancelled with the gateway's id of the request,
 *     through ngx_http_mcp_aggregate_cancelled(), as at
 *     mcp_backend_timeout or on the client's own cancellation.
 *
 * Why the second needs care: nginx ends a request whose client left
 * (ngx_http_terminate_request()) by running its cleanups, then closing
 * it with its subrequests at once, unless it is "blocked", as for a
 * thread's task.  A cleanup of ours, added once the routed request's
 * subrequest has its upstream (so that it runs before the upstream's
 * own), holds the POST blocked: it starts the cancellation as a
 * subrequest of the POST, keeps the routed request's connection to the
 * backend open meanwhile (closed first, it would end the call there
 * before the cancellation could name it), stops what that connection
 * still brings from reaching the call, and lets the POST go when the
 * backend has answered the cancellation, or after
 * NGX_HTTP_MCP_AGGREGATE_CANCEL_WAIT.  The cleanup also runs at a
 * POST's ordinary end, with nothing cut short (its count is 0 then):
 * it does nothing.  An HTTP/2 or HTTP/3 stream is not held: its
 * connection's end may free it whatever its count; its backend
 * connection closes, as before.
 */


#include "ngx_http_mcp_aggregate.h"
#include "ngx_http_mcp_store.h"
#include "ngx_http_mcp_core.h"
#include "ngx_http_mcp_subrequest.h"
#include "ngx_http_mcp_http.h"
#include "ngx_http_mcp_edge.h"


#define NGX_HTTP_MCP_AGGREGATE_CANCEL_WAIT  3000   /* ms a POST is held */
#define NGX_HTTP_MCP_AGGREGATE_HOLDS        32     /* at once, a POST */
#define NGX_HTTP_MCP_AGGREGATE_PARKED       32     /* DELETEs waiting */


/* a routed request's fetch, watched for its client's leaving */
typedef struct {
    ngx_http_mcp_aggregate_leg_t   *leg;
    ngx_http_mcp_fetch_link_t    *link;
    ngx_event_t                     event;
} ngx_http_mcp_aggregate_watch_t;


/* a POST held while its backend hears of the client's leaving */
typedef struct {
    ngx_pool_t                     *pool;
    ngx_http_request_t             *request;
    ngx_http_request_t             *sr;         /* the routed request's */
    ngx_http_cleanup_t             *upstream;   /* its upstream's cleanup,
                                                   held back */
    ngx_http_cleanup_pt             handler;
    ngx_http_mcp_aggregate_wait_t   wait;       /* the cancellation */
    ngx_event_t                     timer;
} ngx_http_mcp_aggregate_hold_t;


/* a backend session whose DELETE waits for a request to carry it */
typedef struct {
    ngx_shm_zone_t                 *zone;
    ngx_http_mcp_backend_t         *backend;
    size_t                          len;
    u_char                          sid[NGX_HTTP_MCP_AGGREGATE_SID_LEN];
} ngx_http_mcp_aggregate_parked_t;


static void ngx_http_mcp_aggregate_deleted(ngx_http_request_t *r,
    ngx_str_t *sid);
static ngx_int_t ngx_http_mcp_aggregate_end_session(ngx_http_request_t *r,
    ngx_shm_zone_t *zone, ngx_http_mcp_backend_t *b, ngx_str_t *sid);
static void ngx_http_mcp_aggregate_watching(ngx_event_t *ev);
static void ngx_http_mcp_aggregate_unwatch(void *data);
static void ngx_http_mcp_aggregate_client_gone(void *data);
static void ngx_http_mcp_aggregate_held(ngx_event_t *ev);
static void ngx_http_mcp_aggregate_release(
    ngx_http_mcp_aggregate_hold_t *h);


/* the worker's: no allocation, nothing to free at its exit */
static ngx_http_mcp_aggregate_parked_t
    ngx_http_mcp_aggregate_parked[NGX_HTTP_MCP_AGGREGATE_PARKED];
static ngx_uint_t  ngx_http_mcp_aggregate_nparked;


ngx_int_t
ngx_http_mcp_aggregate_init(ngx_conf_t *cf)
{
    ngx_http_mcp_hooks.session_deleted = ngx_http_mcp_aggregate_deleted;

    return NGX_OK;
}


/*
 * A backend session whose owner ended with no request left to carry its
 * DELETE (a subscriptions/listen's, when its POST goes): kept, in the
 * worker, until a request of an aggregating location can carry it
 * (ngx_http_mcp_aggregate_unpark()); when too many wait, it is left to
 * expire at its backend.
 */

void
ngx_http_mcp_aggregate_park(ngx_shm_zone_t *zone, ngx_http_mcp_backend_t *b,
    ngx_str_t *sid)
{
    ngx_http_mcp_aggregate_parked_t  *p;

    if (ngx_http_mcp_aggregate_nparked == NGX_HTTP_MCP_AGGREGATE_PARKED
        || sid->len == 0 || sid->len > NGX_HTTP_MCP_AGGREGATE_SID_LEN)
    {
        return;
    }

    p = &ngx_http_mcp_aggregate_parked[ngx_http_mcp_aggregate_nparked++];

    p->zone = zone;
    p->backend = b;
    p->len = sid->len;
    ngx_memcpy(p->sid, sid->data, sid->len);
}


/* r, a request of an aggregating location, carries the waiting DELETEs */

void
ngx_http_mcp_aggregate_unpark(ngx_http_request_t *r)
{
    ngx_str_t                         sid;
    ngx_uint_t                        i;
    ngx_http_mcp_aggregate_parked_t  *p;

    for (i = 0; i < ngx_http_mcp_aggregate_nparked; i++) {
        p = &ngx_http_mcp_aggregate_parked[i];

        sid.data = p->sid;
        sid.len = p->len;

        if (ngx_http_mcp_aggregate_end_session(r, p->zone, p->backend, &sid)
            != NGX_OK)
        {
            ngx_log_debug1(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                           "mcp backend \"%V\": a listen's session is "
                           "left to expire", &p->backend->name);
        }
    }

    ngx_http_mcp_aggregate_nparked = 0;
}


/* the client's DELETE, before the store forgets its backend sessions */

static void
ngx_http_mcp_aggregate_deleted(ngx_http_request_t *r, ngx_str_t *sid)
{
    ngx_str_t                           bsid;
    ngx_uint_t                          i;
    ngx_http_mcp_backend_t             *b;
    ngx_http_mcp_loc_conf_t            *mlcf;
    ngx_http_mcp_aggregate_loc_conf_t  *alcf;

    alcf = ngx_http_get_module_loc_conf(r, ngx_http_mcp_aggregate_module);
    mlcf = ngx_http_get_module_loc_conf(r, ngx_http_mcp_module);

    if (alcf == NULL || alcf->backends == NULL || mlcf->zone == NULL) {
        return;
    }

    b = alcf->backends->elts;

    for (i = 0; i < alcf->backends->nelts; i++) {

        if (ngx_http_mcp_session_backend(mlcf->zone, sid, b[i].index,
                                         r->pool, &bsid)
            != NGX_OK
            || bsid.len == 0)
        {
            continue;
        }

        if (ngx_http_mcp_aggregate_end_session(r, mlcf->zone, &b[i], &bsid)
            != NGX_OK)
        {
            ngx_log_debug1(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                           "mcp backend \"%V\": its session is left to "
                           "expire", &b[i].name);
            continue;
        }

        ngx_log_debug1(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                       "mcp backend \"%V\": ending its session",
                       &b[i].name);
    }
}


static ngx_int_t
ngx_http_mcp_aggregate_end_session(ngx_http_request_t *r,
    ngx_shm_zone_t *zone, ngx_http_mcp_backend_t *b, ngx_str_t *sid)
{
    ngx_uint_t            n;
    ngx_table_elt_t      *h;
    ngx_http_mcp_fetch_t  f;

    h = ngx_pcalloc(r->pool, 2 * sizeof(ngx_table_elt_t));
    if (h == NULL) {
        return NGX_ERROR;
    }

    n = 0;

    if (ngx_http_mcp_aggregate_header(r->pool, &h[n++], "Mcp-Session-Id",
                                      "mcp-session-id", sid->data, sid->len)
        != NGX_OK)
    {
        return NGX_ERROR;
    }

    if (ngx_http_mcp_aggregate_version(zone, b)
        && ngx_http_mcp_aggregate_header(r->pool, &h[n++],
                                         "MCP-Protocol-Version",
                                         "mcp-protocol-version",
                                         b->version, b->version_len)
           != NGX_OK)
    {
        return NGX_ERROR;
    }

    ngx_memzero(&f, sizeof(ngx_http_mcp_fetch_t));

    f.uri = b->uri;
    f.method = NGX_HTTP_DELETE;
    ngx_str_set(&f.method_name, "DELETE");
    f.headers = h;
    f.nheaders = n;

    return ngx_http_mcp_fetch_send(r, &f);
}


/*
 * A routed request's fetch has started: once its subrequest has run (the
 * fetch's own posted event comes first), the POST gets the cleanup that
 * hears of its client's leaving.
 */

ngx_int_t
ngx_http_mcp_aggregate_watch_client(ngx_http_mcp_aggregate_leg_t *leg)
{
    ngx_pool_t                      *pool;
    ngx_pool_cleanup_t              *cln;
    ngx_http_mcp_aggregate_watch_t  *w;

    pool = ngx_http_mcp_call_pool(leg->op->call);

    w = ngx_pcalloc(pool, sizeof(ngx_http_mcp_aggregate_watch_t));
    cln = ngx_pool_cleanup_add(pool, 0);

    if (w == NULL || cln == NULL || leg->st->link == NULL) {
        return NGX_ERROR;
    }

    w->leg = leg;
    w->link = leg->st->link;

    w->event.handler = ngx_http_mcp_aggregate_watching;
    w->event.data = w;
    w->event.log = ngx_http_mcp_call_get_log(leg->op->call);

    cln->handler = ngx_http_mcp_aggregate_unwatch;
    cln->data = w;

    ngx_post_event(&w->event, &ngx_posted_events);

    return NGX_OK;
}


static void
ngx_http_mcp_aggregate_watching(ngx_event_t *ev)
{
    ngx_http_mcp_aggregate_watch_t *w = ev->data;

    ngx_http_cleanup_t            *cln;
    ngx_http_mcp_fetch_state_t  *st;

    st = w->leg->st;

    /* the link is there while the POST is */
    if (w->leg->done || st == NULL || st->link != w->link
        || w->link->done || w->link->sr == NULL)
    {
        return;
    }

    cln = ngx_http_cleanup_add(w->link->sr->main, 0);
    if (cln == NULL) {
        return;
    }

    cln->handler = ngx_http_mcp_aggregate_client_gone;
    cln->data = w->link;
}


static void
ngx_http_mcp_aggregate_unwatch(void *data)
{
    ngx_http_mcp_aggregate_watch_t *w = data;

    if (w->event.posted) {
        ngx_delete_posted_event(&w->event);
    }
}


/* the POST's cleanup: its end, cut short or not */

static void
ngx_http_mcp_aggregate_client_gone(void *data)
{
    ngx_http_mcp_fetch_link_t *link = data;

    ngx_pool_t                     *pool;
    ngx_http_request_t             *r, *sr;
    ngx_http_upstream_t            *u;
    ngx_http_mcp_aggregate_leg_t   *leg;
    ngx_http_mcp_fetch_state_t   *st;
    ngx_http_mcp_aggregate_hold_t  *h;

    st = link->state;
    sr = link->sr;

    if (st == NULL || link->done || sr == NULL) {
        return;
    }

    r = sr->main;
    leg = st->event.data;

    if (r->count == 0
        || r->http_version >= NGX_HTTP_VERSION_20
        || r->blocked >= NGX_HTTP_MCP_AGGREGATE_HOLDS
        || leg->done || leg->cancelled)
    {
        return;
    }

    pool = ngx_create_pool(512, r->connection->log);
    if (pool == NULL) {
        return;
    }

    h = ngx_pcalloc(pool, sizeof(ngx_http_mcp_aggregate_hold_t));
    if (h == NULL) {
        ngx_destroy_pool(pool);
        return;
    }

    h->pool = pool;
    h->request = r;
    h->wait.pool = pool;
    h->wait.handler = ngx_http_mcp_aggregate_held;
    h->wait.data = h;

    ngx_log_debug1(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "mcp backend \"%V\": the client went away",
                   &leg->backend->name);

    if (ngx_http_mcp_aggregate_cancelled(leg, r, &h->wait) != NGX_OK) {
        ngx_destroy_pool(pool);
        return;
    }

    /*
     * the routed request's connection stays until the cancellation is
     * there; ngx_http_upstream_t's cleanup is the handler field of an
     * ngx_http_cleanup_t, its first
     */

    u = sr->upstream;

    if (u != NULL && u->cleanup != NULL && *u->cleanup != NULL) {
        h->sr = sr;
        h->upstream = (ngx_http_cleanup_t *) u->cleanup;
        h->handler = h->upstream->handler;
        h->upstream->handler = NULL;
    }

    /*
     * what it still brings is nobody's now: the leg hears only of the
     * POST's end, at the release, and ends the call then
     */
    leg->abandoned = 1;

    h->timer.handler = ngx_http_mcp_aggregate_held;
    h->timer.data = h;
    h->timer.log = r->connection->log;

    ngx_add_timer(&h->timer, NGX_HTTP_MCP_AGGREGATE_CANCEL_WAIT);

    /*
     * The client's connection, gone, may still say it can be written to
     * or read from, in this very turn of the event loop: that would run
     * the end again, with the cancellation's own upstream among the
     * cleanups.  Its events are nobody's until the release, which closes
     * it.
     */
    r->connection->read->handler = ngx_http_empty_handler;
    r->connection->write->handler = ngx_http_empty_handler;

    r->blocked++;
}


/* news of the cancellation's fetch, or the time for it is up */

static void
ngx_http_mcp_aggregate_held(ngx_event_t *ev)
{
    ngx_http_mcp_aggregate_hold_t *h = ev->data;

    ngx_http_mcp_fetch_state_t  *st;

    st = h->wait.st;

    if (st->gone) {
        /* the POST went all the same: nothing is held any more */

        if (h->timer.timer_set) {
            ngx_del_timer(&h->timer);
        }

        ngx_http_mcp_fetch_close(st);
        ngx_destroy_pool(h->pool);
        return;
    }

    if (ev == &h->timer || st->done || st->too_big) {
        ngx_http_mcp_aggregate_release(h);
    }
}


static void
ngx_http_mcp_aggregate_release(ngx_http_mcp_aggregate_hold_t *h)
{
    ngx_connection_t    *c;
    ngx_http_request_t  *r;

    r = h->request;
    c = r->connection;

    ngx_log_debug1(NGX_LOG_DEBUG_HTTP, c->log, 0,
                   "mcp backend: cancellation %s, the POST goes",
                   h->wait.st->done ? "sent" : "not answered");

    if (h->timer.timer_set) {
        ngx_del_timer(&h->timer);
    }

    ngx_http_mcp_fetch_close(h->wait.st);

    /* while the POST is still held: the upstream's end may count it down */
    if (h->upstream != NULL && h->sr->upstream != NULL
        && h->sr->upstream->cleanup == &h->upstream->handler)
    {
        h->upstream->handler = h->handler;
        h->handler(h->upstream->data);
    }

    ngx_destroy_pool(h->pool);

    if (--r->blocked) {
        return;
    }

    /* the end nginx began when the client went */
    ngx_http_finalize_request(r, NGX_ERROR);
    ngx_http_run_posted_requests(c);
}
