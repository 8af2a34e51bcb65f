
/*
 * A 2025 session of a stdio location (mcp_stdio_sessions) on a worker
 * that does not own it: the reader's side.  This worker holds the
 * client's POST or GET; the owner holds the child
 * (ngx_http_mcp_stdio_session.c).  The message goes to the owner's
 * inbound queue in the store (bounded: a full queue is an error at
 * once), and a request or GET gets a stream of the session's log, on
 * which the owner sends what the child answers or says; this worker is
 * woken, pulls the stream and writes it as it writes its own children's
 * lines (the reply steps, the event stream).  The owner's own POST goes
 * this way too when its stream may be polled out (mcp_stdio_poll), and
 * a GET with Last-Event-ID resumes any stream of the log here.  See
 * docs/stdio.md.
 */


#include "ngx_http_mcp_stdio.h"
#include "ngx_http_mcp_json.h"
#include "ngx_http_mcp_jsonrpc.h"
#include "ngx_http_mcp_core.h"
#include "ngx_http_mcp_http.h"


static ngx_int_t ngx_http_mcp_stdio_remote_refuse(ngx_http_request_t *r,
    ngx_uint_t status, cJSON *id, const char *message);
static ngx_int_t ngx_http_mcp_stdio_remote_pull(
    ngx_http_mcp_stdio_req_t *req);
static ngx_int_t ngx_http_mcp_stdio_remote_pulled(
    ngx_http_mcp_stdio_req_t *req, ngx_array_t *events, ngx_int_t rc);
static ngx_int_t ngx_http_mcp_stdio_remote_event_in(void *data,
    uint64_t seq, u_char *text, size_t len);
static void ngx_http_mcp_stdio_remote_ended(ngx_http_mcp_stdio_req_t *req,
    const char *why);
static void ngx_http_mcp_stdio_remote_tick(ngx_event_t *ev);
static void ngx_http_mcp_stdio_remote_reader(ngx_http_mcp_stdio_req_t *req,
    ngx_pid_t owner, uint32_t stream, uint32_t token, uint64_t seq);
static void ngx_http_mcp_stdio_remote_poll_out(
    ngx_http_mcp_stdio_req_t *req);
static void ngx_http_mcp_stdio_remote_resumed(ngx_http_mcp_stdio_req_t *req,
    ngx_str_t *text);


/*
 * What a pull of a remote stream copies, for after the zone's lock: in
 * a pool of the pull's own, not the request's, for a GET stream lives
 * long and is pulled at every wake-up of its worker and every second
 */
typedef struct {
    ngx_http_mcp_stdio_req_t    *req;
    ngx_pool_t                  *pool;
    ngx_array_t                  events;     /* _pulled_t */
} ngx_http_mcp_stdio_pull_t;

typedef struct {
    uint64_t                     seq;        /* its place in the log */
    ngx_str_t                    text;
} ngx_http_mcp_stdio_pulled_t;


/* the tokens of this worker's remote streams (the edge has its own) */
static uint32_t  ngx_http_mcp_stdio_tokens;


/*
 * A message of the client's to the owner's inbound queue (kind: a
 * request, one whose client takes a stream, a GET, or a notification
 * or response), and for all but the last a stream of the session's log
 * for its answers, which this worker reads (remote_reader()).  req->sid:
 * the session's id, as session_of() found it another worker's (or this
 * one's, for a POST that may be polled).  NGX_OK, or NGX_ERROR with *rc
 * what to finalize the request with (its error reply sent).
 */

ngx_int_t
ngx_http_mcp_stdio_remote_open(ngx_http_mcp_stdio_req_t *req,
    ngx_pid_t owner, ngx_uint_t kind, ngx_int_t *rc_out)
{
    u_char                     *text;
    size_t                      len;
    cJSON                      *id;
    uint32_t                    stream, token;
    ngx_int_t                   rc;
    ngx_pid_t                   to;
    ngx_uint_t                  standalone, polls;
    ngx_http_request_t         *r;
    ngx_http_mcp_stdio_pool_t  *pool;

    r = req->r;
    pool = req->pool;
    stream = 0;
    token = 0;

    polls = (kind == NGX_HTTP_MCP_INBOUND_REQUEST_SSE
             && ngx_http_mcp_stdio_remote_polls(req));

    if (kind != NGX_HTTP_MCP_INBOUND_MESSAGE) {
        /* the high bit: never one of the edge's tokens */
        token = 0x80000000 | (++ngx_http_mcp_stdio_tokens & 0x7fffffff);
        standalone = (kind == NGX_HTTP_MCP_INBOUND_GET);

        /* a request's answer is its own, unless its stream may be polled */
        rc = ngx_http_mcp_session_stream_open(pool->store, &req->sid,
                                              &standalone,
                                              standalone ? 0 : 1,
                                              !standalone && !polls, 0, 0,
                                              token, &stream);
        if (rc == NGX_DECLINED) {
            *rc_out = ngx_http_mcp_send_error(r, NGX_HTTP_NOT_FOUND,
                                              req->id,
                                              NGX_HTTP_MCP_SESSION_NOT_FOUND,
                                              "Session not found");
            return NGX_ERROR;
        }

        if (rc != NGX_OK) {
            *rc_out = ngx_http_mcp_stdio_remote_refuse(r,
                                             NGX_HTTP_SERVICE_UNAVAILABLE,
                                             req->id,
                                             "The session has too many "
                                             "streams open");
            return NGX_ERROR;
        }
    }

    text = NULL;
    len = 0;

    if (req->root != NULL && kind != NGX_HTTP_MCP_INBOUND_GET) {
        /* the client's message whole again, its id with it */
        id = (req->id != NULL) ? cJSON_Duplicate(req->id, 1) : NULL;

        if (id != NULL && !cJSON_AddItemToObject(req->root, "id", id)) {
            cJSON_Delete(id);
            id = NULL;
        }

        text = ngx_http_mcp_json_print(r->pool, req->root, &len);

        if (id != NULL) {
            cJSON_DeleteItemFromObject(req->root, "id");
        }

        if (text == NULL) {
            rc = NGX_ERROR;
            goto failed;
        }
    }

    rc = ngx_http_mcp_session_inbound_push(pool->store, &req->sid, kind,
                                           stream, text, len, &to,
                                           r->connection->log);
    if (rc != NGX_OK) {
        goto failed;
    }

    (void) ngx_http_mcp_notify_pid(to, r->connection->log);

    if (kind == NGX_HTTP_MCP_INBOUND_MESSAGE) {
        return NGX_OK;
    }

    if (polls) {
        /* its stream may end unanswered, for its client to resume */
        req->poll_at = ngx_current_msec + pool->poll;
    }

    ngx_http_mcp_stdio_remote_reader(req, to, stream, token, 0);

    return NGX_OK;

failed:

    if (stream != 0) {
        ngx_http_mcp_session_stream_release(pool->store, &req->sid, stream,
                                            token, 0);
    }

    if (rc == NGX_DECLINED) {
        *rc_out = ngx_http_mcp_send_error(r, NGX_HTTP_NOT_FOUND, req->id,
                                          NGX_HTTP_MCP_SESSION_NOT_FOUND,
                                          "Session not found");
        return NGX_ERROR;
    }

    if (rc == NGX_BUSY) {
        /* the owner is slow or stopped: refused now, the client retries */
        *rc_out = ngx_http_mcp_stdio_remote_refuse(r,
                                             NGX_HTTP_SERVICE_UNAVAILABLE,
                                             req->id,
                                             "The session's queue of "
                                             "messages to its stdio server "
                                             "is full");
        return NGX_ERROR;
    }

    *rc_out = ngx_http_mcp_send_error(r, NGX_HTTP_INTERNAL_SERVER_ERROR,
                                      req->id, NGX_HTTP_MCP_INTERNAL_ERROR,
                                      "Internal error");
    return NGX_ERROR;
}


/*
 * req reads a stream of the session's log that owner writes to: pulled
 * at each wake-up of this worker and looked at every second (a missed
 * wake-up, the owner's death, the session's end elsewhere, a request's
 * timeout: the owner's own comes first).  A request's holds a graceful
 * exit as a local one does; a GET's does not.
 */

static void
ngx_http_mcp_stdio_remote_reader(ngx_http_mcp_stdio_req_t *req,
    ngx_pid_t owner, uint32_t stream, uint32_t token, uint64_t seq)
{
    ngx_msec_t  first;

    req->owner = owner;
    req->stream = stream;
    req->stoken = token;
    req->seq = seq;
    req->ids = 1;
    req->remote = 1;
    ngx_queue_insert_tail(&req->pool->remote, &req->queue);

    /* a client's end while it waits is seen, and cleans up */
    req->r->read_event_handler = ngx_http_test_reading;

    first = req->poll_at ? ngx_min(1000, req->pool->poll) : 1000;

    req->deadline = ngx_current_msec + req->pool->timeout + 1000;
    req->timer.handler = ngx_http_mcp_stdio_remote_tick;
    req->timer.data = req;
    req->timer.log = req->r->connection->log;
    req->timer.cancelable = req->get;
    ngx_add_timer(&req->timer, first);
}


/*
 * GET with Last-Event-ID: the stream it names, resumed from the log
 * after its event (a POST's that mcp_stdio_poll ended, or a GET's), on
 * whichever worker; a stream gone gives a new GET stream.  NGX_DONE, or
 * the status of a refusal sent.
 */

ngx_int_t
ngx_http_mcp_stdio_remote_resume(ngx_http_request_t *r,
    ngx_http_mcp_stdio_sess_t *s, ngx_http_mcp_stdio_pool_t *pool,
    ngx_pid_t owner, ngx_str_t *sid, uint32_t resume, uint64_t seq)
{
    uint32_t                   id, token;
    ngx_int_t                  rc;
    ngx_pid_t                  to;
    ngx_uint_t                 standalone;
    ngx_pool_cleanup_t        *cln;
    ngx_http_mcp_stdio_req_t  *req;

    req = ngx_pcalloc(r->pool, sizeof(ngx_http_mcp_stdio_req_t));
    cln = ngx_pool_cleanup_add(r->pool, 0);

    if (req == NULL || cln == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    /* the session's record may go before this request: a copy */
    req->sid.data = ngx_pstrdup(r->pool, sid);
    if (req->sid.data == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    req->sid.len = sid->len;
    req->r = r;
    req->pool = pool;
    req->accepts_sse = 1;
    cln->handler = ngx_http_mcp_stdio_remote_cleanup;
    cln->data = req;

    token = 0x80000000 | (++ngx_http_mcp_stdio_tokens & 0x7fffffff);
    standalone = 1;

    rc = ngx_http_mcp_session_stream_open(pool->store, &req->sid,
                                          &standalone, 0, 0, resume, seq,
                                          token, &id);

    if (rc == NGX_DECLINED) {
        return ngx_http_mcp_send_error(r, NGX_HTTP_NOT_FOUND, NULL,
                                       NGX_HTTP_MCP_SESSION_NOT_FOUND,
                                       "Session not found");
    }

    if (rc == NGX_ABORT) {
        return ngx_http_mcp_send_sealed(r);
    }

    if (rc != NGX_OK) {
        return ngx_http_mcp_stdio_remote_refuse(r,
                                             NGX_HTTP_SERVICE_UNAVAILABLE,
                                             NULL,
                                             "The session has too many "
                                             "streams open");
    }

    if (id != resume) {
        ngx_log_error(NGX_LOG_INFO, r->connection->log, 0,
                      "mcp_stdio: stream %uD of Last-Event-ID is gone, "
                      "a new stream starts", resume);
        seq = 0;

    } else {
        req->resumed = 1;
    }

    if (standalone && s != NULL && s->get != NULL && s->get->r != NULL) {
        /* the owner's own GET is open: one at a time, as without an id */
        (void) ngx_http_mcp_session_stream_release(pool->store, &req->sid,
                                                   id, token, 0);

        return ngx_http_mcp_send_error(r, NGX_HTTP_CONFLICT, NULL,
                                       NGX_HTTP_MCP_INVALID_REQUEST,
                                       "Conflict: the session's GET "
                                       "stream is open already");
    }

    if (standalone) {
        /* the owner sends the session's messages to it, as to a GET */
        req->get = 1;

        if (ngx_http_mcp_session_inbound_push(pool->store, &req->sid,
                                              NGX_HTTP_MCP_INBOUND_GET, id,
                                              NULL, 0, &to,
                                              r->connection->log)
            != NGX_OK)
        {
            ngx_http_mcp_session_stream_release(pool->store, &req->sid, id,
                                                token, 0);
            return ngx_http_mcp_stdio_remote_refuse(r,
                                             NGX_HTTP_SERVICE_UNAVAILABLE,
                                             NULL,
                                             "The session's queue of "
                                             "messages to its stdio server "
                                             "is full");
        }

        (void) ngx_http_mcp_notify_pid(to, r->connection->log);
    }

    /* a POST's stream resumed waits for its answer: no second poll */
    ngx_http_mcp_stdio_remote_reader(req, owner, id, token, seq);

    if (ngx_http_mcp_stdio_sse(req) != NGX_OK
        || ngx_http_send_special(r, NGX_HTTP_FLUSH) == NGX_ERROR)
    {
        return NGX_ERROR;
    }

    r->main->count++;

    /* what the log holds already goes at once, from a posted event */
    (void) ngx_http_mcp_notify_pid(ngx_pid, r->connection->log);

    return NGX_DONE;
}


/*
 * A refusal that is the load's, not a fault (a full queue, too many
 * streams): -32603 with a 503, logged at info, as the pool's bounds are
 */

static ngx_int_t
ngx_http_mcp_stdio_remote_refuse(ngx_http_request_t *r, ngx_uint_t status,
    cJSON *id, const char *message)
{
    u_char  *body;
    size_t   len;
    cJSON   *reply;

    reply = ngx_http_mcp_error_reply_at(r->connection->log, NGX_LOG_INFO,
                                        NULL, id,
                                        NGX_HTTP_MCP_INTERNAL_ERROR, message,
                                        NULL);
    if (reply == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    body = ngx_http_mcp_json_print(r->pool, reply, &len);
    cJSON_Delete(reply);

    if (body == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    return ngx_http_mcp_send(r, status,
                             ngx_http_get_module_ctx(r, ngx_http_mcp_module),
                             body, len);
}


/*
 * A remote request's client left (or it timed out), or a remote GET
 * ended: the owner is told, so that the child's request is cancelled
 * and the GET's messages go elsewhere.
 */

void
ngx_http_mcp_stdio_remote_gone(ngx_http_mcp_stdio_req_t *req)
{
    ngx_pid_t  to;

    /*
     * Only a stream this request still holds: one a Last-Event-ID took
     * over is its new reader's (the owner looks again: see inbound)
     */
    if (ngx_http_mcp_session_stream_release(req->pool->store, &req->sid,
                                            req->stream, req->stoken, 0)
        == NGX_OK
        && ngx_http_mcp_session_inbound_push(req->pool->store, &req->sid,
                                             NGX_HTTP_MCP_INBOUND_GONE,
                                             req->stream, NULL, 0, &to,
                                             ngx_cycle->log)
           == NGX_OK)
    {
        (void) ngx_http_mcp_notify_pid(to, ngx_cycle->log);
    }

    ngx_http_mcp_stdio_detach(req);
}


/*
 * The pool cleanup of a request that session_other() or remote_resume()
 * made: a GET stream, or a POST's stream that a Last-Event-ID resumed.
 * One that reads the session's log is parked or its owner told (as the
 * module's cleanup does for a POST); the owner's own GET is let go.
 */

void
ngx_http_mcp_stdio_remote_cleanup(void *data)
{
    ngx_http_mcp_stdio_req_t  *req = data;

    if (req->remote) {
        ngx_http_mcp_stdio_remote_left(req);
    }

    ngx_http_mcp_stdio_detach(req);
}


/*
 * A remote request's client left.  A stream it may resume (not sealed:
 * one that mcp_stdio_poll may end, or one a Last-Event-ID resumed; its
 * client has had an event id) is parked, as at its poll time, and the
 * call goes on: the spec has a disconnection not be a cancellation (a
 * client cancels with notifications/cancelled), and the answer waits in
 * the log for a GET with Last-Event-ID.  Any other stream is gone: the
 * owner cancels the call, or forgets the GET.
 */

void
ngx_http_mcp_stdio_remote_left(ngx_http_mcp_stdio_req_t *req)
{
    if (!req->get && req->sse && (req->poll_at || req->resumed)) {
        req->polled = 1;
        ngx_http_mcp_stdio_detach(req);
        return;
    }

    ngx_http_mcp_stdio_remote_gone(req);
}


/*
 * What the owner sent on a remote stream, written to the client: the
 * answer ends a POST (the reply steps, as for this worker's children),
 * other messages are its events.  NGX_DONE: the request ended.
 */

static ngx_int_t
ngx_http_mcp_stdio_remote_pull(ngx_http_mcp_stdio_req_t *req)
{
    ngx_int_t                   rc;
    ngx_uint_t                  complete;
    ngx_http_mcp_stdio_pull_t   pl;

    pl.req = req;
    pl.pool = ngx_create_pool(1024, req->r->connection->log);

    if (pl.pool == NULL) {
        return NGX_OK;
    }

    if (ngx_array_init(&pl.events, pl.pool, 2,
                       sizeof(ngx_http_mcp_stdio_pulled_t))
        != NGX_OK)
    {
        ngx_destroy_pool(pl.pool);
        return NGX_OK;
    }

    rc = ngx_http_mcp_session_pull(req->pool->store, &req->sid, req->stream,
                                   req->stoken, req->seq,
                                   ngx_http_mcp_stdio_remote_event_in, &pl,
                                   &complete);

    rc = ngx_http_mcp_stdio_remote_pulled(req, &pl.events, rc);

    ngx_destroy_pool(pl.pool);

    return rc;
}


/*
 * Every remote stream of this worker's location pulled under one lock
 * of the zone (as the edge pulls its streams), then written.
 */

void
ngx_http_mcp_stdio_remote_pull_all(ngx_http_mcp_stdio_pool_t *pool)
{
    ngx_uint_t                  i, n;
    ngx_pool_t                 *tmp;
    ngx_queue_t                *q;
    ngx_http_mcp_pull_t        *pulls;
    ngx_http_mcp_stdio_req_t   *req;
    ngx_http_mcp_stdio_pull_t  *pl;

    n = 0;

    for (q = ngx_queue_head(&pool->remote);
         q != ngx_queue_sentinel(&pool->remote);
         q = ngx_queue_next(q))
    {
        n++;
    }

    if (n == 0) {
        return;
    }

    tmp = ngx_create_pool(1024, ngx_cycle->log);
    if (tmp == NULL) {
        return;
    }

    pulls = ngx_pcalloc(tmp, n * sizeof(ngx_http_mcp_pull_t));
    pl = ngx_pcalloc(tmp, n * sizeof(ngx_http_mcp_stdio_pull_t));

    if (pulls == NULL || pl == NULL) {
        ngx_destroy_pool(tmp);
        return;
    }

    i = 0;

    for (q = ngx_queue_head(&pool->remote);
         q != ngx_queue_sentinel(&pool->remote);
         q = ngx_queue_next(q))
    {
        req = ngx_queue_data(q, ngx_http_mcp_stdio_req_t, queue);

        pl[i].req = req;
        pl[i].pool = tmp;

        if (ngx_array_init(&pl[i].events, tmp, 2,
                           sizeof(ngx_http_mcp_stdio_pulled_t))
            != NGX_OK)
        {
            continue;
        }

        pulls[i].sid = req->sid.data;
        pulls[i].id = req->stream;
        pulls[i].token = req->stoken;
        pulls[i].after = req->seq;
        pulls[i].data = &pl[i];
        i++;
    }

    n = i;

    ngx_http_mcp_session_pull_all(pool->store, pulls, n,
                                  ngx_http_mcp_stdio_remote_event_in);

    /* each writes its own: one ended touches no other */
    for (i = 0; i < n; i++) {
        (void) ngx_http_mcp_stdio_remote_pulled(pl[i].req, &pl[i].events,
                                                pulls[i].rc);
    }

    ngx_destroy_pool(tmp);
}


/*
 * What a pull of a remote stream copied (events), written; rc the
 * pull's: NGX_DECLINED, the stream or the session is gone.  NGX_DONE:
 * the request ended.
 */

static ngx_int_t
ngx_http_mcp_stdio_remote_pulled(ngx_http_mcp_stdio_req_t *req,
    ngx_array_t *events, ngx_int_t rc)
{
    cJSON                        *msg;
    ngx_uint_t                    i;
    ngx_http_mcp_stdio_pulled_t  *ev;

    ev = events->elts;

    for (i = 0; i < events->nelts; i++) {
        msg = cJSON_ParseWithLength((char *) ev[i].text.data,
                                    ev[i].text.len);

        if (msg == NULL) {
            continue;
        }

        req->event = ev[i].seq;

        if (ngx_http_mcp_json_get(msg, "method") == NULL
            && ngx_http_mcp_json_get(msg, "id") != NULL)
        {
            if (req->get) {
                cJSON_Delete(msg);
                continue;
            }

            if (req->resumed) {
                ngx_http_mcp_stdio_remote_resumed(req, &ev[i].text);

            } else {
                ngx_http_mcp_stdio_respond(req, msg);
            }

            cJSON_Delete(msg);
            return NGX_DONE;
        }

        if (ngx_http_mcp_stdio_push(req, msg) == NGX_DECLINED && req->get) {
            /* the client opens another (the spec lets a server close one) */
            ngx_http_mcp_stdio_close(req, NULL);
        }

        cJSON_Delete(msg);

        if (!req->remote) {
            /* a GET past its events: closed */
            return NGX_DONE;
        }
    }

    if (rc == NGX_DECLINED) {
        if (ngx_http_mcp_session_alive(req->pool->store, &req->sid)
            == NGX_OK)
        {
            /* a Last-Event-ID took the stream over: its client reads on */
            if (req->get) {
                ngx_http_mcp_stdio_close(req, NULL);

            } else {
                ngx_http_mcp_stdio_remote_poll_out(req);
            }

            return NGX_DONE;
        }

        ngx_http_mcp_stdio_remote_ended(req, "The session ended");
        return NGX_DONE;
    }

    return NGX_OK;
}


static ngx_int_t
ngx_http_mcp_stdio_remote_event_in(void *data, uint64_t seq, u_char *text,
    size_t len)
{
    ngx_http_mcp_stdio_pull_t  *pl = data;

    ngx_http_mcp_stdio_pulled_t  *ev;

    ev = ngx_array_push(&pl->events);
    if (ev == NULL) {
        return NGX_ERROR;
    }

    ev->text.data = ngx_pnalloc(pl->pool, len);
    if (ev->text.data == NULL) {
        pl->events.nelts--;
        return NGX_ERROR;
    }

    ngx_memcpy(ev->text.data, text, len);
    ev->text.len = len;
    ev->seq = seq;
    pl->req->seq = seq;

    return NGX_OK;
}


/* a remote request or GET whose session ended: an error to its client */

static void
ngx_http_mcp_stdio_remote_ended(ngx_http_mcp_stdio_req_t *req,
    const char *why)
{
    if (req->get) {
        ngx_http_mcp_stdio_close(req, why);
        return;
    }

    ngx_http_mcp_stdio_fail(req, NGX_HTTP_MCP_INTERNAL_ERROR, why);
}


/*
 * Whether a session's owner lives (pid 0: none).  One that died (a
 * crash: its exit would have ended its sessions) leaves its sessions in
 * the store; they end here, so that their clients initialize again.
 */

ngx_uint_t
ngx_http_mcp_stdio_remote_owner_live(ngx_http_mcp_stdio_pool_t *pool,
    ngx_str_t *sid, ngx_pid_t owner)
{
    if (owner == ngx_pid) {
        /*
         * this worker's own POST, through the log (mcp_stdio_poll): its
         * session's end here forgets it in the store, which the caller
         * looked at
         */
        return 1;
    }

    if (owner == 0) {
        return 0;
    }

    if (kill(owner, 0) == -1 && ngx_errno == NGX_ESRCH) {
        ngx_log_error(NGX_LOG_NOTICE, ngx_cycle->log, 0,
                      "mcp_stdio: the worker %P of a session is gone, "
                      "the session ends", owner);

        (void) ngx_http_mcp_session_delete(pool->store, sid, ngx_cycle->log);
        return 0;
    }

    return 1;
}


static void
ngx_http_mcp_stdio_remote_tick(ngx_event_t *ev)
{
    ngx_uint_t                 live;
    ngx_http_mcp_stdio_req_t  *req = ev->data;

    if (req->get && (ngx_exiting || ngx_quit || ngx_terminate)) {
        ngx_http_mcp_stdio_close(req, "The server is shutting down");
        return;
    }

    /*
     * asked before the pull: what the owner wrote as it ended the
     * session is then read before the request ends (a retired session
     * keeps it for this stream, ngx_http_mcp_session_stdio_retire());
     * whether the owner died is asked after it, as its asking deletes
     * the session
     */
    live = (ngx_http_mcp_session_alive(req->pool->store, &req->sid)
            == NGX_OK);

    if (ngx_http_mcp_stdio_remote_pull(req) == NGX_DONE) {
        return;
    }

    if (req->poll_at
        && (ngx_msec_int_t) (ngx_current_msec - req->poll_at) >= 0)
    {
        ngx_http_mcp_stdio_remote_poll_out(req);
        return;
    }

    if (!live
        || !ngx_http_mcp_stdio_remote_owner_live(req->pool, &req->sid,
                                                 req->owner))
    {
        ngx_http_mcp_stdio_remote_ended(req, "The session ended");
        return;
    }

    if (!req->get
        && (ngx_msec_int_t) (ngx_current_msec - req->deadline) >= 0)
    {
        ngx_http_mcp_stdio_remote_gone(req);
        ngx_http_mcp_stdio_fail(req, NGX_HTTP_MCP_REQUEST_TIMEOUT,
                                "Request timed out: the stdio server did "
                                "not answer");
        return;
    }

    ngx_add_timer(ev, req->poll_at ? ngx_min(1000, req->poll_at
                                                   - ngx_current_msec)
                                   : 1000);
}


/*
 * Whether a request's stream may end unanswered (mcp_stdio_poll): its
 * client takes a stream, and no reply step reads its answer (else that
 * answer is its request's alone: its stream is sealed)
 */

ngx_uint_t
ngx_http_mcp_stdio_remote_polls(ngx_http_mcp_stdio_req_t *req)
{
    return req->accepts_sse && req->pool->poll
           && !ngx_http_mcp_stdio_steps.reads(req->r);
}


/*
 * mcp_stdio_poll: a POST's stream that its answer did not end in time
 * ends (after its priming event, and what came so far), parked in the
 * log: the answer goes there, and the client gets it with a GET that
 * names the stream's last event (SEP-1699's polling).  The child's
 * request goes on.
 */

static void
ngx_http_mcp_stdio_remote_poll_out(ngx_http_mcp_stdio_req_t *req)
{
    ngx_int_t            rc;
    ngx_http_request_t  *r;

    r = req->r;

    if (!req->sse && ngx_http_mcp_stdio_sse(req) != NGX_OK) {
        ngx_http_mcp_stdio_remote_gone(req);
        ngx_http_finalize_request(r, NGX_ERROR);
        return;
    }

    req->polled = 1;
    ngx_http_mcp_stdio_detach(req);

    rc = ngx_http_send_special(r, NGX_HTTP_LAST);

    ngx_http_finalize_request(r, rc);
}


/*
 * The answer on a POST's stream that a GET resumed (a polled one): the
 * last event, as the log has it; its request's steps found nothing to
 * read in it (a stream whose answer they read is sealed: never resumed).
 */

static void
ngx_http_mcp_stdio_remote_resumed(ngx_http_mcp_stdio_req_t *req,
    ngx_str_t *text)
{
    ngx_int_t            rc;
    ngx_http_request_t  *r;

    r = req->r;
    ngx_http_mcp_stdio_detach(req);

    rc = ngx_http_mcp_stdio_event(req, text->data, text->len, 1);

    ngx_http_finalize_request(r, rc);
}