
/*
 * A session's streams, event log and waits in the shared zone (the
 * sessions themselves: ngx_http_mcp_session.c).  Each function here is
 * a whole operation that takes the zone's lock itself; the stream and
 * call code above ask for what they need and never see the zone.
 *
 * Streams.  Every message a session sends on a stream (a POST's SSE
 * reply or a standalone GET) goes into the session's event log first;
 * the worker whose connection carries the stream (its owner) is woken
 * and pulls what it has not written yet.  So any worker can send on any
 * stream, and Last-Event-ID replays from the log.
 *
 * Waits.  A call still running after dispatch, and each request it
 * sends the client, has a wait record: a notifications/cancelled or an
 * answer arriving at any worker is put there, and the waiting worker is
 * woken to take it.
 *
 * Listeners.  A 2026-07-28 subscriptions/listen is a stream of the
 * request's own session and a record on the zone's list of listeners:
 * what it asked for (lists, resource URIs) and its subscription id.  A
 * change found anywhere walks that list and queues a tagged message on
 * each stream that asked for it, as a resource update does for the
 * sessions that subscribed with resources/subscribe.
 */


#include "ngx_http_mcp_store.h"
#include "ngx_http_mcp_session_zone.h"
#include "ngx_http_mcp_jsonrpc.h"


/* a session's streams, at most; past that the oldest detached one goes */
#define NGX_HTTP_MCP_MAX_STREAMS  32


static ngx_http_mcp_stream_sh_t *ngx_http_mcp_session_stream_lock(
    ngx_http_mcp_zone_t *ctx, ngx_str_t *sid, uint32_t id,
    ngx_http_mcp_session_node_t **s);
static ngx_http_mcp_wait_t *ngx_http_mcp_session_wait_lock(
    ngx_http_mcp_zone_t *ctx, ngx_str_t *sid, ngx_pid_t owner,
    uint64_t request, u_char *id, size_t len,
    ngx_http_mcp_session_node_t **s);
static ngx_int_t ngx_http_mcp_session_pull_locked(ngx_http_mcp_zone_t *ctx,
    u_char *id_data, uint32_t id, uint32_t token, uint64_t after,
    ngx_http_mcp_event_pt handler, void *data, ngx_uint_t *complete);
static ngx_http_mcp_stream_sh_t *ngx_http_mcp_session_stream_add(
    ngx_http_mcp_zone_t *ctx, ngx_http_mcp_session_node_t *s,
    ngx_uint_t standalone, uint32_t pending);
static void ngx_http_mcp_session_stream_free(ngx_http_mcp_zone_t *ctx,
    ngx_http_mcp_session_node_t *s, ngx_http_mcp_stream_sh_t *st);
static void ngx_http_mcp_session_stream_ack(ngx_http_mcp_zone_t *ctx,
    ngx_http_mcp_session_node_t *s, uint32_t id, uint64_t seq);
static void ngx_http_mcp_session_event_free(ngx_http_mcp_zone_t *ctx,
    ngx_http_mcp_session_node_t *s, ngx_http_mcp_event_t *ev);
static ngx_http_mcp_wait_t *ngx_http_mcp_session_wait_add(
    ngx_http_mcp_zone_t *ctx, ngx_http_mcp_session_node_t *s,
    uint64_t request, u_char *id, size_t id_len);
static ngx_int_t ngx_http_mcp_session_listener_send(ngx_http_mcp_zone_t *ctx,
    ngx_http_mcp_listen_sh_t *l, const char *method, ngx_str_t *params,
    ngx_pid_t *owner, ngx_log_t *log);


/*
 * Locks the zone and finds a session's stream (or wait record): NULL
 * when either is gone.  The caller unlocks.
 */

static ngx_http_mcp_stream_sh_t *
ngx_http_mcp_session_stream_lock(ngx_http_mcp_zone_t *ctx, ngx_str_t *sid,
    uint32_t id, ngx_http_mcp_session_node_t **s)
{
    ngx_shmtx_lock(&ctx->shpool->mutex);

    *s = ngx_http_mcp_session_find(ctx, sid);

    return (*s != NULL) ? ngx_http_mcp_session_stream(*s, id) : NULL;
}


/* owner 0 matches any owner */

static ngx_http_mcp_wait_t *
ngx_http_mcp_session_wait_lock(ngx_http_mcp_zone_t *ctx, ngx_str_t *sid,
    ngx_pid_t owner, uint64_t request, u_char *id, size_t len,
    ngx_http_mcp_session_node_t **s)
{
    ngx_shmtx_lock(&ctx->shpool->mutex);

    *s = ngx_http_mcp_session_find(ctx, sid);

    return (*s != NULL)
           ? ngx_http_mcp_session_wait_find(*s, owner, request, id, len)
           : NULL;
}


/*
 * A stream for this worker's connection, with token telling its
 * connections apart.  resume: the stream of a Last-Event-ID, taken over
 * when it is still there (its former owner woken, to let it go), its events
 * up to seq "acked" freed; else a new stream (*id differs from resume),
 * standalone (a GET's) if *standalone is set; *standalone is then what
 * the stream is.  A POST stream waits for pending responses.  NGX_OK,
 * NGX_DECLINED (no such session), NGX_BUSY (no room for another stream),
 * NGX_ABORT (resume names a sealed stream).  seal: the new stream's
 * answer is read by the request that opened it, on its way to the client
 * (a stdio location's policy, guardrails, checks): a Last-Event-ID that
 * names it is refused, so that no other request takes the answer unread.
 */

ngx_int_t
ngx_http_mcp_session_stream_open(ngx_shm_zone_t *zone, ngx_str_t *sid,
    ngx_uint_t *standalone, uint32_t pending, ngx_uint_t seal,
    uint32_t resume, uint64_t acked, uint32_t token, uint32_t *id)
{
    ngx_int_t                     rc;
    ngx_pid_t                     prev;
    ngx_http_mcp_zone_t          *ctx;
    ngx_http_mcp_stream_sh_t     *st;
    ngx_http_mcp_session_node_t  *s;

    ctx = zone->data;
    prev = 0;
    *id = 0;
    rc = NGX_OK;

    ngx_shmtx_lock(&ctx->shpool->mutex);

    s = ngx_http_mcp_session_find(ctx, sid);

    if (s == NULL) {
        rc = NGX_DECLINED;
        goto done;
    }

    st = resume ? ngx_http_mcp_session_stream(s, resume) : NULL;

    if (st != NULL && st->sealed) {
        rc = NGX_ABORT;
        goto done;
    }

    if (st != NULL) {
        /* resumed: this connection replaces the lost one */
        prev = st->owner;
        ngx_http_mcp_session_stream_owner(ctx, s, st, ngx_pid);

        /*
         * SSE delivers a stream's events in order: the client that names
         * one got every earlier event of that stream, which the spec lets
         * the server forget.  Writers copy events under the lock, the
         * former one gives the stream up at its next pull and the new one
         * starts after "acked": none of them reads what goes here.
         */
        ngx_http_mcp_session_stream_ack(ctx, s, st->id, acked);

    } else {
        if (resume && resume == s->next_stream) {
            /* a new stream never has the id asked for: *id != resume
               says it is new (else a seq named with it would skip its
               events) */
            s->next_stream++;
        }

        st = ngx_http_mcp_session_stream_add(ctx, s, *standalone, pending);

        if (st == NULL) {
            rc = NGX_BUSY;
            goto done;
        }

        /* under the lock that made it: no Last-Event-ID comes between */
        st->sealed = (seal != 0);
    }

    st->token = token;
    *id = st->id;
    *standalone = st->standalone;

done:

    ngx_shmtx_unlock(&ctx->shpool->mutex);

    if (prev) {
        /* the former owner, maybe this worker, finds it taken: lets go */
        (void) ngx_http_mcp_notify_pid(prev, ngx_cycle->log);
    }

    return rc;
}


/*
 * The stream loses its owner, if this worker's connection token has it.
 * Parked, it still takes the session's messages until its client resumes
 * it: a GET stream always, whatever ended its connection (the client's
 * close, a cut, a gateway's reload), since its client resumes it with
 * Last-Event-ID at once and a message sent in between would be lost for
 * good; other streams when park says so (an exiting worker ended them).
 * NGX_OK: it was this connection's; NGX_DECLINED: another has it now (a
 * Last-Event-ID took it over), or it is gone.
 */

ngx_int_t
ngx_http_mcp_session_stream_release(ngx_shm_zone_t *zone, ngx_str_t *sid,
    uint32_t id, uint32_t token, ngx_uint_t park)
{
    ngx_int_t                     rc;
    ngx_http_mcp_zone_t          *ctx;
    ngx_http_mcp_stream_sh_t     *st;
    ngx_http_mcp_session_node_t  *s;

    ctx = zone->data;
    rc = NGX_DECLINED;

    st = ngx_http_mcp_session_stream_lock(ctx, sid, id, &s);

    if (st != NULL && st->owner == ngx_pid && st->token == token) {
        ngx_http_mcp_session_stream_owner(ctx, s, st, 0);
        st->parked = (park || st->standalone);
        (void) ngx_http_mcp_session_retired_free(ctx, s);
        rc = NGX_OK;
    }

    ngx_shmtx_unlock(&ctx->shpool->mutex);

    return rc;
}


/*
 * Whether a connection writes the stream now (NGX_OK), or none does:
 * parked, or gone (NGX_DECLINED)
 */

ngx_int_t
ngx_http_mcp_session_stream_held(ngx_shm_zone_t *zone, ngx_str_t *sid,
    uint32_t id)
{
    ngx_pid_t                     owner;
    ngx_http_mcp_zone_t          *ctx;
    ngx_http_mcp_stream_sh_t     *st;
    ngx_http_mcp_session_node_t  *s;

    ctx = zone->data;

    st = ngx_http_mcp_session_stream_lock(ctx, sid, id, &s);
    owner = (st != NULL) ? st->owner : 0;

    ngx_shmtx_unlock(&ctx->shpool->mutex);

    return owner ? NGX_OK : NGX_DECLINED;
}


/* one more response is due on a POST stream */

ngx_int_t
ngx_http_mcp_session_stream_expect(ngx_shm_zone_t *zone, ngx_str_t *sid,
    uint32_t id)
{
    ngx_http_mcp_zone_t          *ctx;
    ngx_http_mcp_stream_sh_t     *st;
    ngx_http_mcp_session_node_t  *s;

    ctx = zone->data;

    st = ngx_http_mcp_session_stream_lock(ctx, sid, id, &s);

    if (st != NULL) {
        st->pending++;
    }

    ngx_shmtx_unlock(&ctx->shpool->mutex);

    return (st != NULL) ? NGX_OK : NGX_DECLINED;
}


/*
 * Appends a message to a stream of a session and wakes the stream's
 * owner.  A response (response == 1) counts down the responses a POST
 * stream waits for; with data NULL it only counts down (a cancelled
 * call sends nothing).  NGX_DECLINED: the session or stream is gone;
 * NGX_ERROR: no room in the zone.
 */

ngx_int_t
ngx_http_mcp_session_send(ngx_shm_zone_t *zone, ngx_str_t *sid,
    uint32_t stream, u_char *data, size_t len, ngx_uint_t response,
    ngx_log_t *log)
{
    uint32_t                      token;
    ngx_pid_t                     owner;
    ngx_http_mcp_zone_t          *ctx;
    ngx_http_mcp_event_t         *ev;
    ngx_http_mcp_stream_sh_t     *st;
    ngx_http_mcp_session_node_t  *s;

    ctx = zone->data;

    st = ngx_http_mcp_session_stream_lock(ctx, sid, stream, &s);

    if (st == NULL) {
        ngx_shmtx_unlock(&ctx->shpool->mutex);
        return NGX_DECLINED;
    }

    if (data != NULL) {
        ev = ngx_http_mcp_session_event_add(ctx, s, len, log);

        if (ev == NULL) {
            ngx_shmtx_unlock(&ctx->shpool->mutex);
            ngx_log_error(NGX_LOG_ERR, log, 0,
                          "mcp: no room in the zone for an event of "
                          "session %s",
                          ngx_http_mcp_session_log_id(sid->data, sid->len));
            return NGX_ERROR;
        }

        ev->stream = stream;
        ev->response = response;
        ngx_memcpy(ev->data, data, len);
    }

    if (response && st->pending) {
        st->pending--;
    }

    owner = st->owner;
    token = st->token;

    ngx_shmtx_unlock(&ctx->shpool->mutex);

    ngx_log_debug4(NGX_LOG_DEBUG_HTTP, log, 0,
                   "mcp session %s stream %uD: %s queued for worker %P",
                   ngx_http_mcp_session_log_id(sid->data, sid->len), stream,
                   response ? "response" : "message", owner);

    if (owner && ngx_http_mcp_notify_stream(owner, token, log)
                 == NGX_DECLINED)
    {

        /* its worker is gone (killed): the stream waits for a resume */

        st = ngx_http_mcp_session_stream_lock(ctx, sid, stream, &s);

        if (st != NULL && st->owner == owner) {
            ngx_http_mcp_session_stream_owner(ctx, s, st, 0);
            st->parked = st->standalone;
            (void) ngx_http_mcp_session_retired_free(ctx, s);
        }

        ngx_shmtx_unlock(&ctx->shpool->mutex);
    }

    return NGX_OK;
}


/*
 * Hands the events of a stream after seq "after" to handler, in order,
 * while the zone is locked (the handler copies them; it must not call
 * the store).  The handler returns NGX_OK for the next event, NGX_AGAIN
 * to stop for now, NGX_ERROR.  Returns NGX_OK with *complete set when a
 * POST stream has all its responses (the stream is then removed from
 * the log), NGX_AGAIN when events are left, NGX_DECLINED when the
 * stream is gone or another connection took it, NGX_ERROR.
 */

ngx_int_t
ngx_http_mcp_session_pull(ngx_shm_zone_t *zone, ngx_str_t *sid,
    uint32_t id, uint32_t token, uint64_t after,
    ngx_http_mcp_event_pt handler, void *data, ngx_uint_t *complete)
{
    ngx_int_t             rc;
    ngx_http_mcp_zone_t  *ctx;

    ctx = zone->data;

    ngx_shmtx_lock(&ctx->shpool->mutex);

    rc = ngx_http_mcp_session_pull_locked(ctx, sid->data, id, token, after,
                                          handler, data, complete);

    ngx_shmtx_unlock(&ctx->shpool->mutex);

    return rc;
}


/*
 * The pulls of many streams under one hold of the lock: a worker woken
 * for a notification to all its streams, tens of thousands, would else
 * take and give back the lock as often, in turn with every other worker
 * doing the same.
 */

void
ngx_http_mcp_session_pull_all(ngx_shm_zone_t *zone, ngx_http_mcp_pull_t *pulls,
    ngx_uint_t n, ngx_http_mcp_event_pt handler)
{
    ngx_uint_t            i;
    ngx_http_mcp_zone_t  *ctx;

    ctx = zone->data;

    ngx_shmtx_lock(&ctx->shpool->mutex);

    for (i = 0; i < n; i++) {
        pulls[i].rc = ngx_http_mcp_session_pull_locked(ctx, pulls[i].sid,
                                                       pulls[i].id,
                                                       pulls[i].token,
                                                       pulls[i].after,
                                                       handler,
                                                       pulls[i].data,
                                                       &pulls[i].complete);
    }

    ngx_shmtx_unlock(&ctx->shpool->mutex);
}


static ngx_int_t
ngx_http_mcp_session_pull_locked(ngx_http_mcp_zone_t *ctx, u_char *id_data,
    uint32_t id, uint32_t token, uint64_t after,
    ngx_http_mcp_event_pt handler, void *data, ngx_uint_t *complete)
{
    ngx_int_t                     rc;
    ngx_str_t                     sid;
    ngx_queue_t                  *q;
    ngx_http_mcp_event_t         *ev;
    ngx_http_mcp_stream_sh_t     *st;
    ngx_http_mcp_session_node_t  *s;

    *complete = 0;

    sid.data = id_data;
    sid.len = NGX_HTTP_MCP_SESSION_ID_LEN;

    s = ngx_http_mcp_session_find(ctx, &sid);
    st = (s != NULL) ? ngx_http_mcp_session_stream(s, id) : NULL;

    if (st == NULL || st->owner != ngx_pid || st->token != token) {
        return NGX_DECLINED;
    }

    for (q = ngx_queue_head(&s->events);
         q != ngx_queue_sentinel(&s->events);
         q = ngx_queue_next(q))
    {
        ev = ngx_queue_data(q, ngx_http_mcp_event_t, queue);

        if (ev->stream != id || ev->seq <= after) {
            continue;
        }

        rc = handler(data, ev->seq, ev->data, ev->len);

        if (rc != NGX_OK) {
            return rc;
        }
    }

    if (!st->standalone && st->pending == 0) {
        *complete = 1;
        ngx_http_mcp_session_stream_free(ctx, s, st);
        (void) ngx_http_mcp_session_retired_free(ctx, s);
    }

    return NGX_OK;
}


/*
 * After a reload: the zone's list hashes become lists; changed[k] says
 * which of them differ from what the zone knew (nothing on first use).
 */

void
ngx_http_mcp_session_lists(ngx_shm_zone_t *zone, uint32_t *lists,
    ngx_uint_t *changed)
{
    ngx_uint_t            k;
    ngx_http_mcp_zone_t  *ctx;

    ctx = zone->data;

    ngx_shmtx_lock(&ctx->shpool->mutex);

    for (k = 0; k < 3; k++) {
        changed[k] = ctx->sh->lists_known && ctx->sh->lists[k] != lists[k];
        ctx->sh->lists[k] = lists[k];
    }

    ctx->sh->lists_known = 1;

    ngx_shmtx_unlock(&ctx->shpool->mutex);
}


/*
 * A wait record for a call (request 0, its JSON-RPC id) or for a request
 * to the client (request != 0; 1 here asks for the session's next
 * request id, returned in *request).  NGX_OK, NGX_DECLINED (no such
 * session), NGX_ERROR (no room).
 */

ngx_int_t
ngx_http_mcp_session_wait(ngx_shm_zone_t *zone, ngx_str_t *sid,
    uint64_t *request, u_char *id, size_t len)
{
    ngx_int_t                     rc;
    ngx_http_mcp_zone_t          *ctx;
    ngx_http_mcp_session_node_t  *s;

    ctx = zone->data;
    rc = NGX_OK;

    ngx_shmtx_lock(&ctx->shpool->mutex);

    s = ngx_http_mcp_session_find(ctx, sid);

    if (s == NULL) {
        rc = NGX_DECLINED;
        goto done;
    }

    if (*request) {
        *request = s->next_request++;
    }

    if (ngx_http_mcp_session_wait_add(ctx, s, *request, id, len) == NULL) {
        rc = NGX_ERROR;
    }

done:

    ngx_shmtx_unlock(&ctx->shpool->mutex);

    return rc;
}


/* removes this worker's wait record for a call (request 0) or a request */

void
ngx_http_mcp_session_unwait(ngx_shm_zone_t *zone, ngx_str_t *sid,
    uint64_t request, u_char *id, size_t len)
{
    ngx_http_mcp_zone_t          *ctx;
    ngx_http_mcp_wait_t          *w;
    ngx_http_mcp_session_node_t  *s;

    ctx = zone->data;

    w = ngx_http_mcp_session_wait_lock(ctx, sid, ngx_pid, request, id, len, &s);

    if (w != NULL) {
        ngx_http_mcp_session_wait_free(ctx, w);
    }

    ngx_shmtx_unlock(&ctx->shpool->mutex);
}


/*
 * What happened to this worker's wait: for a call (request 0), NGX_ABORT
 * when the client cancelled it; for a request, NGX_OK when the client
 * answered (the answer copied into pool, the record freed).  NGX_AGAIN:
 * nothing yet; NGX_DECLINED: the session is gone; NGX_ERROR.
 */

ngx_int_t
ngx_http_mcp_session_waited(ngx_shm_zone_t *zone, ngx_str_t *sid,
    uint64_t request, u_char *id, size_t len, ngx_pool_t *pool,
    ngx_str_t *answer)
{
    ngx_int_t                     rc;
    ngx_http_mcp_zone_t          *ctx;
    ngx_http_mcp_wait_t          *w;
    ngx_http_mcp_session_node_t  *s;

    ctx = zone->data;
    rc = NGX_AGAIN;

    w = ngx_http_mcp_session_wait_lock(ctx, sid, ngx_pid, request, id, len,
                                       &s);
    if (s == NULL) {
        rc = NGX_DECLINED;
        goto done;
    }

    if (w == NULL) {
        goto done;
    }

    if (request == 0) {
        rc = w->cancelled ? NGX_ABORT : NGX_AGAIN;
        goto done;
    }

    if (!w->answered) {
        goto done;
    }

    answer->data = ngx_pnalloc(pool, w->answer_len);

    if (answer->data == NULL) {
        rc = NGX_ERROR;

    } else {
        ngx_memcpy(answer->data, w->answer, w->answer_len);
        answer->len = w->answer_len;
        rc = NGX_OK;
    }

    ngx_http_mcp_session_wait_free(ctx, w);

done:

    ngx_shmtx_unlock(&ctx->shpool->mutex);

    return rc;
}


/*
 * A client's message for a wait, from whichever worker got it: the
 * answer to request (text), or with request 0 the cancellation of the
 * call with JSON-RPC id "id".  The waiting worker is woken.  NGX_OK, or
 * NGX_DECLINED when nobody waits for it.
 */

ngx_int_t
ngx_http_mcp_session_deliver(ngx_shm_zone_t *zone, ngx_str_t *sid,
    uint64_t request, u_char *id, size_t len, u_char *text, size_t text_len,
    ngx_log_t *log)
{
    u_char                       *answer;
    ngx_pid_t                     owner;
    ngx_http_mcp_zone_t          *ctx;
    ngx_http_mcp_wait_t          *w;
    ngx_http_mcp_session_node_t  *s;

    ctx = zone->data;
    owner = 0;

    w = ngx_http_mcp_session_wait_lock(ctx, sid, 0, request, id, len, &s);

    if (w != NULL && request == 0) {
        w->cancelled = 1;
        owner = w->owner;

    } else if (w != NULL && !w->answered) {
        answer = ngx_http_mcp_session_alloc(ctx, text_len, s, log);

        if (answer != NULL) {
            ngx_memcpy(answer, text, text_len);
            w->answer = answer;
            w->answer_len = text_len;
            w->answered = 1;
            owner = w->owner;
        }
    }

    ngx_shmtx_unlock(&ctx->shpool->mutex);

    if (owner == 0) {
        return NGX_DECLINED;
    }

    (void) ngx_http_mcp_notify_pid(owner, log);

    return NGX_OK;
}


ngx_http_mcp_stream_sh_t *
ngx_http_mcp_session_stream(ngx_http_mcp_session_node_t *s, uint32_t id)
{
    ngx_queue_t               *q;
    ngx_http_mcp_stream_sh_t  *st;

    for (q = ngx_queue_head(&s->sstreams);
         q != ngx_queue_sentinel(&s->sstreams);
         q = ngx_queue_next(q))
    {
        st = ngx_queue_data(q, ngx_http_mcp_stream_sh_t, queue);

        if (st->id == id) {
            return st;
        }
    }

    return NULL;
}


/*
 * A new stream, owned by this worker.  A session keeps at most
 * NGX_HTTP_MCP_MAX_STREAMS streams: past that the stream that lost its
 * connection longest ago goes, with its events.
 */

static ngx_http_mcp_stream_sh_t *
ngx_http_mcp_session_stream_add(ngx_http_mcp_zone_t *ctx,
    ngx_http_mcp_session_node_t *s, ngx_uint_t standalone, uint32_t pending)
{
    ngx_uint_t                 n;
    ngx_queue_t               *q;
    ngx_http_mcp_stream_sh_t  *st, *oldest;

    n = 0;
    oldest = NULL;

    for (q = ngx_queue_head(&s->sstreams);
         q != ngx_queue_sentinel(&s->sstreams);
         q = ngx_queue_next(q))
    {
        st = ngx_queue_data(q, ngx_http_mcp_stream_sh_t, queue);
        n++;

        if (st->owner == 0
            && (oldest == NULL
                || (ngx_msec_int_t) (st->detached - oldest->detached) < 0))
        {
            oldest = st;
        }
    }

    if (n >= NGX_HTTP_MCP_MAX_STREAMS) {
        if (oldest == NULL) {
            return NULL;
        }

        ngx_http_mcp_session_stream_free(ctx, s, oldest);
    }

    st = ngx_http_mcp_session_alloc(ctx, sizeof(ngx_http_mcp_stream_sh_t), s,
                                    ngx_cycle->log);
    if (st == NULL) {
        return NULL;
    }

    ngx_memzero(st, sizeof(ngx_http_mcp_stream_sh_t));

    st->id = s->next_stream++;
    st->pending = pending;
    st->standalone = standalone;

    /* newest first: server-initiated messages go to the newest GET */
    ngx_queue_insert_head(&s->sstreams, &st->queue);

    ngx_http_mcp_session_stream_owner(ctx, s, st, ngx_pid);

    return st;
}


static void
ngx_http_mcp_session_stream_free(ngx_http_mcp_zone_t *ctx,
    ngx_http_mcp_session_node_t *s, ngx_http_mcp_stream_sh_t *st)
{
    ngx_http_mcp_session_stream_ack(ctx, s, st->id, (uint64_t) -1);

    ngx_http_mcp_session_stream_owner(ctx, s, st, 0);

    ngx_queue_remove(&st->queue);
    ngx_slab_free_locked(ctx->shpool, st);
}


/* frees the events of stream id up to seq: the client has them */

static void
ngx_http_mcp_session_stream_ack(ngx_http_mcp_zone_t *ctx,
    ngx_http_mcp_session_node_t *s, uint32_t id, uint64_t seq)
{
    ngx_queue_t           *q, *next;
    ngx_http_mcp_event_t  *ev;

    for (q = ngx_queue_head(&s->events);
         q != ngx_queue_sentinel(&s->events);
         q = next)
    {
        next = ngx_queue_next(q);
        ev = ngx_queue_data(q, ngx_http_mcp_event_t, queue);

        /* the log is in seq order: nothing later is acknowledged */
        if (ev->seq > seq) {
            break;
        }

        if (ev->stream == id) {
            ngx_http_mcp_session_event_free(ctx, s, ev);
        }
    }
}


static void
ngx_http_mcp_session_event_free(ngx_http_mcp_zone_t *ctx,
    ngx_http_mcp_session_node_t *s, ngx_http_mcp_event_t *ev)
{
    ngx_queue_remove(&ev->queue);
    s->events_size -= ev->len;
    ctx->sh->events_size -= ev->len;
    ngx_slab_free_locked(ctx->shpool, ev);
}


/* a session with owned streams is busy: it is not evicted */

void
ngx_http_mcp_session_stream_owner(ngx_http_mcp_zone_t *ctx,
    ngx_http_mcp_session_node_t *s, ngx_http_mcp_stream_sh_t *st,
    ngx_pid_t owner)
{
    if (st->owner && !owner) {
        s->streams--;
        ctx->sh->streams--;
        st->detached = ngx_current_msec;

    } else if (!st->owner && owner) {
        s->streams++;
        ctx->sh->streams++;
    }

    st->owner = owner;
    st->parked = 0;
}


/*
 * Room for an event of len bytes at the end of the session's log.  The
 * log holds at most log_size bytes of messages: the oldest events go
 * first to make room, and a reader that resumes after them misses them.
 */

ngx_http_mcp_event_t *
ngx_http_mcp_session_event_add(ngx_http_mcp_zone_t *ctx,
    ngx_http_mcp_session_node_t *s, size_t len, ngx_log_t *log)
{
    ngx_queue_t           *q;
    ngx_http_mcp_event_t  *ev;

    for ( ;; ) {
        if (s->events_size + len <= ctx->log_size
            || ngx_queue_empty(&s->events))
        {
            ev = ngx_http_mcp_session_alloc(ctx,
                                            offsetof(ngx_http_mcp_event_t,
                                                     data) + len,
                                            s, log);
            if (ev != NULL) {
                break;
            }

            if (ngx_queue_empty(&s->events)) {
                return NULL;
            }
        }

        /* notifications go first: a response is what a call waits for */
        for (q = ngx_queue_head(&s->events);
             q != ngx_queue_sentinel(&s->events);
             q = ngx_queue_next(q))
        {
            ev = ngx_queue_data(q, ngx_http_mcp_event_t, queue);

            if (!ev->response) {
                break;
            }
        }

        if (q == ngx_queue_sentinel(&s->events)) {
            q = ngx_queue_head(&s->events);
        }

        ev = ngx_queue_data(q, ngx_http_mcp_event_t, queue);

        ctx->sh->dropped++;

        ngx_log_error(NGX_LOG_INFO, log, 0,
                      "mcp session %s: event log full, dropped %s "
                      "%uD-%uL",
                      ngx_http_mcp_session_log_id(s->id,
                                                  NGX_HTTP_MCP_SESSION_ID_LEN),
                      ev->response ? "response" : "event",
                      ev->stream, ev->seq);

        ngx_http_mcp_session_event_free(ctx, s, ev);
    }

    ngx_memzero(ev, offsetof(ngx_http_mcp_event_t, data));

    ev->seq = s->next_seq++;
    ev->len = len;

    ngx_queue_insert_tail(&s->events, &ev->queue);
    s->events_size += len;
    ctx->sh->events_size += len;

    return ev;
}


static ngx_http_mcp_wait_t *
ngx_http_mcp_session_wait_add(ngx_http_mcp_zone_t *ctx,
    ngx_http_mcp_session_node_t *s, uint64_t request, u_char *id,
    size_t id_len)
{
    ngx_http_mcp_wait_t  *w;

    w = ngx_http_mcp_session_alloc(ctx,
                                   offsetof(ngx_http_mcp_wait_t, id) + id_len,
                                   s, ngx_cycle->log);
    if (w == NULL) {
        return NULL;
    }

    ngx_memzero(w, offsetof(ngx_http_mcp_wait_t, id));

    w->owner = ngx_pid;
    w->request = request;
    ctx->sh->waiting += (request != 0);
    w->id_len = id_len;
    if (id_len) {
        ngx_memcpy(w->id, id, id_len);
    }

    ngx_queue_insert_tail(&s->waits, &w->queue);

    return w;
}


/* owner 0 matches any owner */

ngx_http_mcp_wait_t *
ngx_http_mcp_session_wait_find(ngx_http_mcp_session_node_t *s,
    ngx_pid_t owner, uint64_t request, u_char *id, size_t id_len)
{
    ngx_queue_t          *q;
    ngx_http_mcp_wait_t  *w;

    for (q = ngx_queue_head(&s->waits);
         q != ngx_queue_sentinel(&s->waits);
         q = ngx_queue_next(q))
    {
        w = ngx_queue_data(q, ngx_http_mcp_wait_t, queue);

        if ((owner && w->owner != owner) || w->request != request) {
            continue;
        }

        if (request || (w->id_len == id_len
                        && ngx_memcmp(w->id, id, id_len) == 0))
        {
            return w;
        }
    }

    return NULL;
}


/*
 * A server notification (method, and the members of its params, or
 * NULL) for every session of the zone that subscribed to uri, on its
 * newest open GET stream, and for every listener that named uri, tagged
 * with its subscription id.  With uri NULL: for every session with an
 * open GET stream, and no listener.  The pids of the workers to wake are
 * pushed to owners.  Returns how many sessions and listeners got it.
 */

ngx_uint_t
ngx_http_mcp_session_updated(ngx_shm_zone_t *zone, ngx_str_t *uri,
    const char *method, ngx_str_t *params, ngx_array_t *owners,
    ngx_log_t *log)
{
    size_t                        len;
    u_char                       *data;
    ngx_pid_t                    *pid, owner;
    ngx_uint_t                    n, i;
    ngx_queue_t                  *q;
    ngx_http_mcp_zone_t          *ctx;
    ngx_http_mcp_listen_sh_t     *l;
    ngx_http_mcp_session_node_t  *s;
    ngx_http_mcp_subscription_t  *sub;

    ctx = zone->data;
    n = 0;

    /* the sessions' message is made once, outside the lock */
    len = ngx_http_mcp_jsonrpc_notification(NULL, method, NULL, params);

    data = ngx_alloc(len, log);
    if (data == NULL) {
        return 0;
    }

    (void) ngx_http_mcp_jsonrpc_notification(data, method, NULL, params);

    ngx_shmtx_lock(&ctx->shpool->mutex);

    for (q = ngx_queue_head(&ctx->sh->queue);
         q != ngx_queue_sentinel(&ctx->sh->queue);
         q = ngx_queue_next(q))
    {
        s = ngx_queue_data(q, ngx_http_mcp_session_node_t, queue);

        for (sub = s->subscriptions; uri != NULL && sub; sub = sub->next) {
            if (sub->len == uri->len
                && ngx_memcmp(sub->uri, uri->data, uri->len) == 0)
            {
                break;
            }
        }

        if (uri != NULL && sub == NULL) {
            continue;
        }

        /* without a stream to carry it, it is lost: nothing keeps it */
        if (ngx_http_mcp_session_push_locked(ctx, s, 0, data, len, &owner,
                                             log)
            != NGX_OK)
        {
            continue;
        }

        n++;

        pid = ngx_array_push(owners);
        if (pid != NULL) {
            *pid = owner;
        }
    }

    /* listeners are never evicted: the walk is safe while events are added */

    for (q = ngx_queue_head(&ctx->sh->listeners);
         uri != NULL && q != ngx_queue_sentinel(&ctx->sh->listeners);
         q = ngx_queue_next(q))
    {
        l = ngx_queue_data(q, ngx_http_mcp_listen_sh_t, queue);

        for (i = 0; i < l->nuris; i++) {
            if (l->uris[i].len == uri->len
                && ngx_memcmp(l->uris[i].data, uri->data, uri->len) == 0)
            {
                break;
            }
        }

        if (i == l->nuris
            || ngx_http_mcp_session_listener_send(ctx, l, method, params,
                                                  &owner, log)
               != NGX_OK)
        {
            continue;
        }

        n++;

        pid = (owner != 0) ? ngx_array_push(owners) : NULL;
        if (pid != NULL) {
            *pid = owner;
        }
    }

    ngx_shmtx_unlock(&ctx->shpool->mutex);

    ngx_free(data);

    return n;
}


/*
 * Called with the zone locked: a message for a stream of the session
 * that a connection carries or its client resumes (parked), stream "id",
 * or with id 0 the session's newest GET stream that has a connection,
 * else its newest parked one.  *owner is the worker to wake, or 0.
 * NGX_DECLINED: no such stream; NGX_ERROR: no room in the log.
 */

ngx_int_t
ngx_http_mcp_session_push_locked(ngx_http_mcp_zone_t *ctx,
    ngx_http_mcp_session_node_t *s, uint32_t id, u_char *data, size_t len,
    ngx_pid_t *owner, ngx_log_t *log)
{
    ngx_queue_t               *q;
    ngx_http_mcp_event_t      *ev;
    ngx_http_mcp_stream_sh_t  *st, *parked;

    st = id ? ngx_http_mcp_session_stream(s, id) : NULL;
    parked = NULL;

    /*
     * the newest first (see ngx_http_mcp_session_stream_add()); a stream
     * with a connection before a parked one, whose client may have gone
     */
    for (q = ngx_queue_head(&s->sstreams);
         id == 0 && q != ngx_queue_sentinel(&s->sstreams);
         q = ngx_queue_next(q))
    {
        st = ngx_queue_data(q, ngx_http_mcp_stream_sh_t, queue);

        if (st->standalone && st->owner) {
            break;
        }

        if (st->standalone && st->parked && parked == NULL) {
            parked = st;
        }

        st = NULL;
    }

    if (st == NULL) {
        st = parked;
    }

    if (st == NULL || (st->owner == 0 && !st->parked)) {
        return NGX_DECLINED;
    }

    ev = ngx_http_mcp_session_event_add(ctx, s, len, log);
    if (ev == NULL) {
        return NGX_ERROR;
    }

    ev->stream = st->id;
    ngx_memcpy(ev->data, data, len);

    *owner = st->owner;

    return NGX_OK;
}


/*
 * subscriptions/listen (2026-07-28): the stream of the request's session
 * hears the list changes named by lists and the updates of the resources
 * in uris (ngx_str_t).  id is the listen request's id as JSON, which
 * every notification names as its subscription.
 */

ngx_int_t
ngx_http_mcp_session_listen(ngx_shm_zone_t *zone, ngx_str_t *sid,
    uint32_t stream, ngx_uint_t lists, ngx_str_t *id, ngx_array_t *uris,
    ngx_log_t *log)
{
    u_char                       *p;
    size_t                        size;
    ngx_str_t                    *uri;
    ngx_uint_t                    i;
    ngx_http_mcp_zone_t          *ctx;
    ngx_http_mcp_listen_sh_t     *l;
    ngx_http_mcp_session_node_t  *s;

    ctx = zone->data;
    uri = uris->elts;

    size = sizeof(ngx_http_mcp_listen_sh_t)
           + uris->nelts * sizeof(ngx_str_t) + id->len;

    for (i = 0; i < uris->nelts; i++) {
        size += uri[i].len;
    }

    ngx_shmtx_lock(&ctx->shpool->mutex);

    s = ngx_http_mcp_session_find(ctx, sid);

    if (s == NULL || s->listen != NULL) {
        ngx_shmtx_unlock(&ctx->shpool->mutex);
        return NGX_DECLINED;
    }

    l = ngx_http_mcp_session_alloc(ctx, size, s, log);
    if (l == NULL) {
        ngx_shmtx_unlock(&ctx->shpool->mutex);
        return NGX_ERROR;
    }

    l->session = s;
    l->stream = stream;
    l->lists = lists;
    l->nuris = uris->nelts;
    l->uris = (ngx_str_t *) (l + 1);

    p = (u_char *) (l->uris + l->nuris);

    l->id.data = p;
    l->id.len = id->len;
    p = ngx_cpymem(p, id->data, id->len);

    for (i = 0; i < l->nuris; i++) {
        l->uris[i].data = p;
        l->uris[i].len = uri[i].len;
        p = ngx_cpymem(p, uri[i].data, uri[i].len);
    }

    ngx_queue_insert_tail(&ctx->sh->listeners, &l->queue);
    s->listen = l;

    ngx_shmtx_unlock(&ctx->shpool->mutex);

    return NGX_OK;
}


/*
 * A list changed: each listener that asked for it gets the notification
 * (method) on its stream, and the workers holding those streams are
 * woken.  Returns how many were told.
 */

ngx_uint_t
ngx_http_mcp_session_list_changed(ngx_shm_zone_t *zone, ngx_uint_t list,
    const char *method, ngx_log_t *log)
{
    ngx_pid_t                  owners[64], owner;
    ngx_uint_t                 i, n, told;
    ngx_queue_t               *q;
    ngx_http_mcp_zone_t       *ctx;
    ngx_http_mcp_listen_sh_t  *l;

    ctx = zone->data;
    n = 0;
    told = 0;

    ngx_shmtx_lock(&ctx->shpool->mutex);

    /* listeners are never evicted: the walk is safe while events are added */

    for (q = ngx_queue_head(&ctx->sh->listeners);
         q != ngx_queue_sentinel(&ctx->sh->listeners);
         q = ngx_queue_next(q))
    {
        l = ngx_queue_data(q, ngx_http_mcp_listen_sh_t, queue);

        if (!(l->lists & list)
            || ngx_http_mcp_session_listener_send(ctx, l, method, NULL,
                                                  &owner, log)
               != NGX_OK)
        {
            continue;
        }

        told++;

        for (i = 0; i < n; i++) {
            if (owners[i] == owner) {
                break;
            }
        }

        if (owner != 0 && i == n && n < 64) {
            owners[n++] = owner;
        }
    }

    ngx_shmtx_unlock(&ctx->shpool->mutex);

    for (i = 0; i < n; i++) {
        (void) ngx_http_mcp_notify_pid(owners[i], log);
    }

    return told;
}


/*
 * Queues a notification on a listener's stream, tagged with its
 * subscription id; *owner: the worker to wake (0: none holds the
 * stream).  Called with the zone locked.
 */

static ngx_int_t
ngx_http_mcp_session_listener_send(ngx_http_mcp_zone_t *ctx,
    ngx_http_mcp_listen_sh_t *l, const char *method, ngx_str_t *params,
    ngx_pid_t *owner, ngx_log_t *log)
{
    size_t                     len;
    ngx_http_mcp_event_t      *ev;
    ngx_http_mcp_stream_sh_t  *st;

    len = ngx_http_mcp_jsonrpc_notification(NULL, method, &l->id, params);

    ev = ngx_http_mcp_session_event_add(ctx, l->session, len, log);
    if (ev == NULL) {
        return NGX_ERROR;
    }

    ev->stream = l->stream;
    (void) ngx_http_mcp_jsonrpc_notification(ev->data, method, &l->id,
                                             params);

    st = ngx_http_mcp_session_stream(l->session, l->stream);
    *owner = (st != NULL) ? st->owner : 0;

    return NGX_OK;
}
