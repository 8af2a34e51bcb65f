
/*
 * SSE streams.  A POST reply becomes a stream when a call sends the
 * client something before its result; a GET opens a standalone stream
 * for server-initiated messages, or resumes a stream with Last-Event-ID.
 *
 * Every event goes into the session's event log in the shm zone first
 * (see ngx_http_mcp_session_send()); the worker that holds the stream's
 * connection, its owner, is woken and writes what it has not written
 * yet.  Event ids are "<stream>-<seq>": unique in the session, and they
 * name the stream that Last-Event-ID resumes; the resume acknowledges
 * that stream's events up to seq, which the store then frees.
 *
 * Output memory is one buffer per stream, there only while events are
 * written: new events are read from the log only once the previous
 * write has gone out, so a slow client holds back its own events in the
 * log, never worker memory, and a waiting stream holds no buffer.
 *
 * When the worker exits gracefully (reload, quit), a stream that never
 * ends by itself (a GET's, a listener's) ends at once, after what the
 * log holds for it, with a final event: the id of the last event written
 * and the reconnection delay, so that its client resumes on another
 * worker.  A POST's stream ends as usual, with its responses; see
 * src/store/ngx_http_mcp_ipc.c for the bound.
 */


#include "ngx_http_mcp_edge.h"
#include "ngx_http_mcp_json.h"
#include "ngx_http_mcp_jsonrpc.h"
#include "ngx_http_mcp_store.h"
#include "ngx_http_mcp_call.h"
#include "ngx_http_mcp_core.h"
#include "ngx_http_mcp_auth.h"


#define NGX_HTTP_MCP_STREAM_CHUNK   65536

/* the streams that pull under one hold of the zone's lock */
#define NGX_HTTP_MCP_STREAM_BATCH   64


static ngx_http_mcp_stream_t *ngx_http_mcp_stream_create(
    ngx_http_request_t *r, ngx_http_mcp_loc_conf_t *mlcf, ngx_str_t *sid,
    uint32_t id, uint32_t token, uint64_t sent);
static ngx_int_t ngx_http_mcp_stream_headers(ngx_http_request_t *r,
    ngx_uint_t version);
static ngx_int_t ngx_http_mcp_stream_write(ngx_http_mcp_stream_t *st,
    u_char *data, size_t len, ngx_uint_t last);
static ngx_int_t ngx_http_mcp_stream_prime(ngx_http_mcp_stream_t *st,
    size_t *len);
static ngx_int_t ngx_http_mcp_stream_final(ngx_http_mcp_stream_t *st,
    size_t *len);
static void ngx_http_mcp_stream_last(ngx_http_mcp_stream_t *st);
static ngx_uint_t ngx_http_mcp_stream_endless(ngx_http_mcp_stream_t *st);
static void ngx_http_mcp_stream_flush(ngx_http_mcp_stream_t *st);
static ngx_int_t ngx_http_mcp_stream_emit(ngx_http_mcp_stream_t *st,
    ngx_int_t rc, ngx_uint_t complete);
static ngx_int_t ngx_http_mcp_stream_frame(void *data, uint64_t seq,
    u_char *text, size_t len);
static ngx_int_t ngx_http_mcp_stream_reserve(ngx_http_mcp_stream_t *st,
    size_t size);
static void ngx_http_mcp_stream_idle(ngx_http_mcp_stream_t *st);
static void ngx_http_mcp_stream_write_handler(ngx_http_request_t *r);
static void ngx_http_mcp_stream_keepalive_handler(ngx_event_t *ev);
static void ngx_http_mcp_stream_cleanup(void *data);
static void ngx_http_mcp_stream_detach(ngx_http_mcp_stream_t *st);
static ngx_int_t ngx_http_mcp_stream_post(ngx_http_mcp_stream_t *st);
static void ngx_http_mcp_stream_begin(ngx_http_request_t *r);


static ngx_str_t  ngx_http_mcp_sse_type = ngx_string("text/event-stream");

/* this worker's streams: the store asks whether any is left */
static ngx_queue_t        ngx_http_mcp_streams;

/* the last stream ownership token this worker gave */
static uint32_t           ngx_http_mcp_stream_tokens;

/* this worker's streams by token: see ngx_http_mcp_stream_poke() */
static ngx_rbtree_t       ngx_http_mcp_stream_tree;
static ngx_rbtree_node_t  ngx_http_mcp_stream_sentinel;


/* at worker start */

void
ngx_http_mcp_streams_init(void)
{
    ngx_queue_init(&ngx_http_mcp_streams);
}


/* the hooks' streams_live: a graceful exit waits for none to be left */

ngx_uint_t
ngx_http_mcp_streams_live(void)
{
    return !ngx_queue_empty(&ngx_http_mcp_streams);
}


/*
 * The reply of a POST becomes an SSE stream: the calls still running
 * write their messages and responses to it, and it ends after the last
 * response.  NGX_BUSY: the session holds as many streams as it may;
 * NGX_DECLINED: the session is gone.
 */

ngx_int_t
ngx_http_mcp_stream_start(ngx_http_mcp_ctx_t *ctx)
{
    uint32_t                id, token;
    ngx_int_t               rc;
    ngx_uint_t              standalone;
    ngx_http_request_t     *r;
    ngx_http_mcp_stream_t  *st;

    r = ctx->request;
    token = ++ngx_http_mcp_stream_tokens;

    standalone = 0;

    rc = ngx_http_mcp_session_stream_open(ctx->conf->zone,
                                          &ctx->rctx.session_id, &standalone,
                                          ctx->pending, 0, 0, 0, token,
                                          &id);

    if (rc != NGX_OK) {
        /* the session's streams at their cap, or the session gone */
        return rc;
    }

    st = ngx_http_mcp_stream_create(r, ctx->conf, &ctx->rctx.session_id, id,
                                    token, 0);
    if (st == NULL) {
        return NGX_ERROR;
    }

    ctx->stream = st;

    if (ngx_http_mcp_stream_headers(r, ctx->rctx.version) != NGX_OK) {
        return NGX_ERROR;
    }

    r->read_event_handler = ngx_http_test_reading;

    /* the priming event and the first events go out from a posted event */
    st->prime = 1;

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "mcp session %s: POST reply is stream %uD",
                   ngx_http_mcp_session_log_id(ctx->rctx.session_id.data,
                                               ctx->rctx.session_id.len),
                   id);

    if (ngx_http_mcp_stream_post(st) == NGX_OK) {
        return NGX_OK;
    }

    return ngx_http_mcp_notify_pid(ngx_pid, r->connection->log);
}


/* a reply made before the POST's reply became a stream goes onto it */

ngx_int_t
ngx_http_mcp_stream_reply(ngx_http_mcp_ctx_t *ctx, ngx_http_mcp_msg_t *msg)
{
    u_char              *text;
    size_t               len;
    ngx_http_request_t  *r;

    r = ctx->request;

    text = ngx_http_mcp_json_print(r->pool, msg->reply, &len);
    if (text == NULL) {
        return NGX_ERROR;
    }

    cJSON_Delete(msg->reply);
    msg->reply = NULL;

    return ngx_http_mcp_session_send(ctx->conf->zone, &ctx->rctx.session_id,
                                     ctx->stream->id, text, len, 0,
                                     r->connection->log);
}


/*
 * A GET or a DELETE, which name a session: the request's context, the
 * session checked and found; NULL with *rc the request's status.  The
 * reply names the session's version, as every reply does.
 */

ngx_http_mcp_ctx_t *
ngx_http_mcp_session_request(ngx_http_request_t *r,
    ngx_http_mcp_loc_conf_t *mlcf, ngx_str_t *sid, ngx_int_t *rc)
{
    ngx_http_mcp_ctx_t  *ctx;

    ctx = ngx_http_mcp_ctx_create(r, mlcf, ngx_http_mcp_auth_get(r));
    if (ctx == NULL) {
        *rc = NGX_HTTP_INTERNAL_SERVER_ERROR;
        return NULL;
    }

    if (ngx_http_mcp_session_preamble(r, mlcf, 1, sid, &ctx->rctx, rc)
        != NGX_OK)
    {
        return NULL;
    }

    return ctx;
}


/*
 * GET: a standalone stream for server-initiated messages, or, with
 * Last-Event-ID, the rest of a stream the client lost.
 */

ngx_int_t
ngx_http_mcp_stream_get(ngx_http_request_t *r, ngx_http_mcp_loc_conf_t *mlcf)
{
    uint32_t                resume, id, token;
    uint64_t                seq;
    ngx_int_t               rc;
    ngx_str_t               sid;
    ngx_uint_t              standalone;
    ngx_table_elt_t        *last;
    ngx_http_mcp_ctx_t     *ctx;
    ngx_http_mcp_stream_t  *st;

    ctx = ngx_http_mcp_session_request(r, mlcf, &sid, &rc);
    if (ctx == NULL) {
        return rc;
    }

    last = ngx_http_mcp_header_in(r, "last-event-id",
                                  sizeof("last-event-id") - 1);

    if (last == NULL
        || ngx_http_mcp_last_event_id(&last->value, &resume, &seq)
           != NGX_OK)
    {
        resume = 0;
        seq = 0;
    }

    token = ++ngx_http_mcp_stream_tokens;

    standalone = 1;

    rc = ngx_http_mcp_session_stream_open(mlcf->zone, &sid, &standalone, 0,
                                          0, resume, seq, token, &id);

    if (rc == NGX_DECLINED) {
        return ngx_http_mcp_send_error(r, NGX_HTTP_NOT_FOUND, NULL,
                                       NGX_HTTP_MCP_SESSION_NOT_FOUND,
                                       "Session not found");
    }

    if (rc == NGX_ABORT) {
        /* a stdio session's stream (a zone shared with mcp_stdio) */
        return ngx_http_mcp_send_sealed(r);
    }

    if (rc != NGX_OK) {
        /* the client's doing, not the server's: no [error] line */
        return ngx_http_mcp_send_error(r, NGX_HTTP_SERVICE_UNAVAILABLE,
                                       NULL, NGX_HTTP_MCP_SERVER_ERROR,
                                       "Too many streams");
    }

    if (resume && id != resume) {
        ngx_log_error(NGX_LOG_INFO, r->connection->log, 0,
                      "mcp: stream %uD of Last-Event-ID is gone, "
                      "a new stream starts", resume);
        seq = 0;
    }

    ngx_log_debug3(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "mcp session %s: GET stream %uD from event %uL",
                   ngx_http_mcp_session_log_id(sid.data, sid.len), id, seq);

    st = ngx_http_mcp_stream_create(r, mlcf, &sid, id, token, seq);
    if (st == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    ctx->stream = st;

    if (ngx_http_mcp_stream_headers(r, ctx->rctx.version) != NGX_OK) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    r->read_event_handler = ngx_http_test_reading;
    r->main->count++;

    /*
     * output starts from a posted event, never inside this handler; the
     * stream's own, not the worker's wake-up, which looks at every
     * stream the worker holds: tens of thousands opening one by one
     */
    st->prime = (id != resume);

    /* a worker that exits already: the client goes on at another one */
    st->quit = (ngx_exiting != 0);

    if (ngx_http_mcp_stream_post(st) != NGX_OK) {
        (void) ngx_http_mcp_notify_pid(ngx_pid, r->connection->log);
    }

    /* a resumed POST's stream ends with its responses: not the GET's */
    if (!st->quit && standalone) {
        st->heard = 1;

        ngx_http_mcp_hooks.get_stream(r, &sid, id, 1);
    }

    return NGX_DONE;
}


/*
 * A stream of this worker has new events in the log: it alone writes
 * them, from a posted event, where the worker's wake-up would look at
 * every stream the worker holds (tens of thousands of idle GETs, for
 * each progress notification of a call).  NGX_DECLINED: no such stream
 * here, or it cannot be told alone; the caller wakes the worker.
 */

ngx_int_t
ngx_http_mcp_stream_poke(uint32_t token)
{
    ngx_rbtree_node_t  *node, *sentinel;

    node = ngx_http_mcp_stream_tree.root;
    sentinel = ngx_http_mcp_stream_tree.sentinel;

    while (node != NULL && node != sentinel) {

        if (token != node->key) {
            node = (token < node->key) ? node->left : node->right;
            continue;
        }

        return ngx_http_mcp_stream_post(ngx_rbtree_data(node,
                                                        ngx_http_mcp_stream_t,
                                                        node));
    }

    return NGX_DECLINED;
}


/*
 * The stream writes what the log holds from a posted write event of its
 * connection.  A busy one needs nothing: its write handler looks once
 * the output is out.  NGX_DECLINED when the request does not take the
 * connection's write events (an active subrequest) or has a handler of
 * its own for them.
 */

static ngx_int_t
ngx_http_mcp_stream_post(ngx_http_mcp_stream_t *st)
{
    ngx_http_request_t  *r;

    r = st->request;

    if (st->busy) {
        return NGX_OK;
    }

    if (st->ended || r->connection->data != r
        || (r->write_event_handler != ngx_http_request_empty_handler
            && r->write_event_handler != ngx_http_mcp_stream_begin))
    {
        return NGX_DECLINED;
    }

    r->write_event_handler = ngx_http_mcp_stream_begin;
    ngx_post_event(r->connection->write, &ngx_posted_events);

    return NGX_OK;
}


static void
ngx_http_mcp_stream_begin(ngx_http_request_t *r)
{
    ngx_http_mcp_ctx_t     *ctx;
    ngx_http_mcp_stream_t  *st;

    r->write_event_handler = ngx_http_request_empty_handler;

    ctx = ngx_http_get_module_ctx(r, ngx_http_mcp_module);
    st = (ctx != NULL) ? ctx->stream : NULL;

    if (st != NULL && !st->busy && !st->ended) {
        ngx_http_mcp_stream_flush(st);
    }
}


static ngx_http_mcp_stream_t *
ngx_http_mcp_stream_create(ngx_http_request_t *r,
    ngx_http_mcp_loc_conf_t *mlcf, ngx_str_t *sid, uint32_t id,
    uint32_t token, uint64_t sent)
{
    ngx_pool_cleanup_t     *cln;
    ngx_http_mcp_stream_t  *st;

    st = ngx_pcalloc(r->pool, sizeof(ngx_http_mcp_stream_t));
    if (st == NULL) {
        return NULL;
    }

    cln = ngx_pool_cleanup_add(r->pool, 0);
    if (cln == NULL) {
        return NULL;
    }

    st->request = r;
    st->conf = mlcf;
    st->id = id;
    st->token = token;
    st->sent = sent;
    st->fresh = 1;
    ngx_memcpy(st->sid, sid->data, NGX_HTTP_MCP_SESSION_ID_LEN);

    st->keepalive.handler = ngx_http_mcp_stream_keepalive_handler;
    st->keepalive.data = st;
    st->keepalive.log = r->connection->log;

    cln->handler = ngx_http_mcp_stream_cleanup;
    cln->data = st;

    ngx_queue_insert_tail(&ngx_http_mcp_streams, &st->queue);

    if (ngx_http_mcp_stream_tree.root == NULL) {
        ngx_rbtree_init(&ngx_http_mcp_stream_tree,
                        &ngx_http_mcp_stream_sentinel,
                        ngx_rbtree_insert_value);
    }

    st->node.key = token;
    ngx_rbtree_insert(&ngx_http_mcp_stream_tree, &st->node);

    ngx_add_timer(&st->keepalive, mlcf->keepalive);

    return st;
}


static ngx_int_t
ngx_http_mcp_stream_headers(ngx_http_request_t *r, ngx_uint_t version)
{
    ngx_int_t  rc;
    ngx_str_t  value;

    static ngx_str_t  no_cache = ngx_string("no-cache");
    static ngx_str_t  no = ngx_string("no");

    r->headers_out.status = NGX_HTTP_OK;
    r->headers_out.content_type = ngx_http_mcp_sse_type;
    r->headers_out.content_type_len = ngx_http_mcp_sse_type.len;
    r->headers_out.content_length_n = -1;

    if (ngx_http_mcp_header_out(r, "Cache-Control", &no_cache) != NGX_OK
        || ngx_http_mcp_header_out(r, "X-Accel-Buffering", &no) != NGX_OK)
    {
        return NGX_ERROR;
    }

    if (version) {
        value.data = (u_char *) ngx_http_mcp_version_name(version);
        value.len = ngx_strlen(value.data);

        if (ngx_http_mcp_header_out(r, "MCP-Protocol-Version", &value)
            != NGX_OK)
        {
            return NGX_ERROR;
        }
    }

    rc = ngx_http_send_header(r);

    return (rc == NGX_ERROR || rc > NGX_OK) ? NGX_ERROR : NGX_OK;
}


/*
 * Every stream of the worker that is not busy writes what the log holds
 * for it: a batch of streams of one zone pulls under one hold of the
 * zone's lock (see ngx_http_mcp_session_pull_all()), then writes.
 */

void
ngx_http_mcp_streams_wake(void)
{
    ngx_uint_t              i, n;
    ngx_queue_t            *q, *next;
    ngx_shm_zone_t         *zone;
    ngx_http_mcp_pull_t     pulls[NGX_HTTP_MCP_STREAM_BATCH];
    ngx_http_mcp_stream_t  *st, *batch[NGX_HTTP_MCP_STREAM_BATCH];

    q = ngx_queue_head(&ngx_http_mcp_streams);

    while (q != ngx_queue_sentinel(&ngx_http_mcp_streams)) {

        n = 0;
        zone = NULL;

        for ( /* void */ ;
             q != ngx_queue_sentinel(&ngx_http_mcp_streams)
             && n < NGX_HTTP_MCP_STREAM_BATCH;
             q = next)
        {
            next = ngx_queue_next(q);
            st = ngx_queue_data(q, ngx_http_mcp_stream_t, queue);

            if (st->busy || st->ended) {
                continue;
            }

            if (zone != NULL && st->conf->zone != zone) {
                break;
            }

            /* a failed start ends the request: st may be gone */
            if (ngx_http_mcp_stream_prime(st, &st->len) != NGX_OK) {
                ngx_http_finalize_request(st->request, NGX_ERROR);
                continue;
            }

            zone = st->conf->zone;

            pulls[n].sid = st->sid;
            pulls[n].id = st->id;
            pulls[n].token = st->token;
            pulls[n].after = st->sent;
            pulls[n].data = st;
            batch[n++] = st;
        }

        if (n == 0) {
            continue;
        }

        ngx_http_mcp_session_pull_all(zone, pulls, n,
                                      ngx_http_mcp_stream_frame);

        /* a write may end its own stream only: the rest of the batch stays */
        for (i = 0; i < n; i++) {
            if (ngx_http_mcp_stream_emit(batch[i], pulls[i].rc,
                                         pulls[i].complete)
                == NGX_AGAIN)
            {
                ngx_http_mcp_stream_flush(batch[i]);
            }
        }
    }
}


/* writes the events of the log this stream has not written yet */

/* the priming event, when due, starts the buffer: *len is its length */

static ngx_int_t
ngx_http_mcp_stream_prime(ngx_http_mcp_stream_t *st, size_t *len)
{
    *len = 0;

    if (!st->prime) {
        return NGX_OK;
    }

    st->prime = 0;

    return ngx_http_mcp_stream_final(st, len);
}


/*
 * An id to resume from, the reconnection delay, no data: the priming
 * event, and the final one of a stream that the server ends; appended
 * to the buffer at *len.
 */

static ngx_int_t
ngx_http_mcp_stream_final(ngx_http_mcp_stream_t *st, size_t *len)
{
    u_char  *p;

    if (ngx_http_mcp_stream_reserve(st, *len + 128) != NGX_OK) {
        return NGX_ERROR;
    }

    p = ngx_sprintf(st->buf + *len, "id: %uD-%uL\nretry: %M\ndata: \n\n",
                    st->id, st->sent, st->conf->retry);

    *len = p - st->buf;

    return NGX_OK;
}


/*
 * Writes what the log holds for the stream, a chunk at a time, until it
 * is all out or the connection pushes back (the write handler then comes
 * back here): a live client gets every event, however many are queued.
 */

static void
ngx_http_mcp_stream_flush(ngx_http_mcp_stream_t *st)
{
    ngx_int_t   rc;
    ngx_str_t   sid;
    ngx_uint_t  complete;

    sid.data = st->sid;
    sid.len = NGX_HTTP_MCP_SESSION_ID_LEN;

    do {
        if (ngx_http_mcp_stream_prime(st, &st->len) != NGX_OK) {
            ngx_http_finalize_request(st->request, NGX_ERROR);
            return;
        }

        rc = ngx_http_mcp_session_pull(st->conf->zone, &sid, st->id,
                                       st->token, st->sent,
                                       ngx_http_mcp_stream_frame, st,
                                       &complete);

    } while (ngx_http_mcp_stream_emit(st, rc, complete) == NGX_AGAIN);
}


/*
 * Writes what a pull put in the buffer (st->len bytes, after the priming
 * event if it was due): rc and complete are the pull's, see
 * ngx_http_mcp_session_pull().  NGX_AGAIN: all went out and the log
 * holds more for another chunk; NGX_DONE: nothing more now, and st may
 * be gone.
 */

static ngx_int_t
ngx_http_mcp_stream_emit(ngx_http_mcp_stream_t *st, ngx_int_t rc,
    ngx_uint_t complete)
{
    size_t      len;
    ngx_uint_t  more;

    more = (rc == NGX_AGAIN);
    len = st->len;

    if (rc == NGX_ERROR) {
        ngx_http_finalize_request(st->request, NGX_ERROR);
        return NGX_DONE;
    }

    if (rc == NGX_DECLINED) {
        /* the session or the stream is gone, or another worker has it */
        ngx_http_mcp_stream_end_http(st);
        return NGX_DONE;
    }

    if (st->quit && !complete && !more) {
        /* all the log held is in the buffer: the final event ends it */
        ngx_http_mcp_stream_detach(st);

        if (ngx_http_mcp_stream_final(st, &len) != NGX_OK) {
            ngx_http_finalize_request(st->request, NGX_ERROR);
            return NGX_DONE;
        }

        (void) ngx_http_mcp_stream_write(st, st->buf, len, 1);
        return NGX_DONE;
    }

    if (len == 0 && !complete && !st->fresh) {
        return NGX_DONE;
    }

    /* a fresh stream with nothing yet still sends its header now */
    if (ngx_http_mcp_stream_write(st, len ? st->buf : (u_char *) "", len,
                                  complete)
        != NGX_OK)
    {
        return NGX_DONE;
    }

    /* complete means no more: st may be gone once the stream ended */
    if (!more || st->busy) {
        return NGX_DONE;
    }

    ngx_log_debug1(NGX_LOG_DEBUG_HTTP, st->request->connection->log, 0,
                   "mcp stream %uD: another chunk of queued events", st->id);

    return NGX_AGAIN;
}


/* one event as an SSE frame, at the end of the buffer; zone locked */

static ngx_int_t
ngx_http_mcp_stream_frame(void *data, uint64_t seq, u_char *text,
    size_t len)
{
    ngx_http_mcp_stream_t *st = data;

    u_char  *p;
    size_t   need;

    if (st->len >= NGX_HTTP_MCP_STREAM_CHUNK) {
        return NGX_AGAIN;
    }

    need = st->len + sizeof("id: 4294967295-18446744073709551615\n"
                            "data: \n\n") + len;

    if (ngx_http_mcp_stream_reserve(st, need) != NGX_OK) {
        return NGX_ERROR;
    }

    p = ngx_sprintf(st->buf + st->len, "id: %uD-%uL\ndata: ", st->id, seq);
    p = ngx_cpymem(p, text, len);
    *p++ = '\n';
    *p++ = '\n';

    st->len = p - st->buf;
    st->sent = seq;

    return NGX_OK;
}


/* the stream's buffer can be replaced: nothing of it is in flight */

static ngx_int_t
ngx_http_mcp_stream_reserve(ngx_http_mcp_stream_t *st, size_t size)
{
    u_char  *p;
    size_t   n;

    if (size <= st->size) {
        return NGX_OK;
    }

    n = ngx_max(size, 2 * st->size);
    n = ngx_max(n, 4096);

    p = ngx_alloc(n, st->request->connection->log);
    if (p == NULL) {
        return NGX_ERROR;
    }

    if (st->buf) {
        ngx_memcpy(p, st->buf, st->size);
        ngx_free(st->buf);
    }

    st->buf = p;
    st->size = n;

    return NGX_OK;
}


/*
 * Writes data and, with last, ends the response; the request may be
 * finalized on return.  Back-pressure: the rest goes out from the write
 * handler, and nothing new is read from the log meanwhile.
 */

static ngx_int_t
ngx_http_mcp_stream_write(ngx_http_mcp_stream_t *st, u_char *data,
    size_t len, ngx_uint_t last)
{
    ngx_int_t                  rc;
    ngx_http_request_t        *r;
    ngx_http_core_loc_conf_t  *clcf;

    r = st->request;
    st->fresh = 0;

    ngx_memzero(&st->out, sizeof(ngx_buf_t));

    st->out.pos = data;
    st->out.last = data + len;
    st->out.memory = (len != 0);
    st->out.flush = 1;
    st->out.last_buf = last;
    st->out.last_in_chain = 1;

    st->chain.buf = &st->out;
    st->chain.next = NULL;

    if (last) {
        st->ending = 1;
    }

    rc = ngx_http_output_filter(r, &st->chain);

    if (rc == NGX_ERROR) {
        ngx_http_finalize_request(r, NGX_ERROR);
        return NGX_ERROR;
    }

    if (rc == NGX_OK) {
        ngx_http_mcp_stream_idle(st);
    }

    if (rc == NGX_AGAIN) {
        st->busy = 1;
        r->write_event_handler = ngx_http_mcp_stream_write_handler;

        clcf = ngx_http_get_module_loc_conf(r, ngx_http_core_module);

        ngx_add_timer(r->connection->write, clcf->send_timeout);

        if (ngx_handle_write_event(r->connection->write, clcf->send_lowat)
            != NGX_OK)
        {
            ngx_http_finalize_request(r, NGX_ERROR);
            return NGX_ERROR;
        }

        return NGX_OK;
    }

    if (st->ending) {
        st->ended = 1;
        ngx_http_finalize_request(r, NGX_OK);
    }

    return NGX_OK;
}


/*
 * All that was written is out: the buffer goes until the next events.
 * A stream waits far longer than it writes, and 4 kB a stream is most
 * of what 100,000 waiting streams would hold.
 */

static void
ngx_http_mcp_stream_idle(ngx_http_mcp_stream_t *st)
{
    ngx_http_request_t  *r;

    r = st->request;

    if (st->buf == NULL || r->out != NULL || r->connection->buffered) {
        return;
    }

    ngx_free(st->buf);
    st->buf = NULL;
    st->size = 0;
}


static void
ngx_http_mcp_stream_write_handler(ngx_http_request_t *r)
{
    ngx_int_t               rc;
    ngx_event_t            *wev;
    ngx_http_mcp_ctx_t     *ctx;
    ngx_http_mcp_stream_t  *st;

    wev = r->connection->write;
    ctx = ngx_http_get_module_ctx(r, ngx_http_mcp_module);
    st = ctx->stream;

    if (wev->timedout) {
        r->connection->timedout = 1;
        ngx_http_finalize_request(r, NGX_HTTP_REQUEST_TIME_OUT);
        return;
    }

    rc = ngx_http_output_filter(r, NULL);

    if (rc == NGX_ERROR) {
        ngx_http_finalize_request(r, NGX_ERROR);
        return;
    }

    if (rc == NGX_AGAIN) {
        if (ngx_handle_write_event(wev, 0) != NGX_OK) {
            ngx_http_finalize_request(r, NGX_ERROR);
        }

        return;
    }

    if (wev->timer_set) {
        ngx_del_timer(wev);
    }

    r->write_event_handler = ngx_http_request_empty_handler;
    st->busy = 0;

    ngx_http_mcp_stream_idle(st);

    if (st->ending && !st->out.last_buf) {
        /* ended while busy: the end goes out now */
        ngx_http_mcp_stream_last(st);
        return;
    }

    if (st->ending) {
        st->ended = 1;
        ngx_http_finalize_request(r, NGX_OK);
        return;
    }

    /* what arrived while the connection was busy */
    ngx_http_mcp_stream_flush(st);
}


static void
ngx_http_mcp_stream_keepalive_handler(ngx_event_t *ev)
{
    ngx_http_mcp_stream_t  *st;

    static u_char  comment[] = ": keepalive\n\n";

    st = ev->data;

    ngx_add_timer(&st->keepalive, st->conf->keepalive);

    if (!st->busy && !st->ending) {
        (void) ngx_http_mcp_stream_write(st, comment, sizeof(comment) - 1,
                                         0);
    }
}


/*
 * The worker exits gracefully (see src/store/ngx_http_mcp_ipc.c): the
 * streams that never end by themselves end now, after what the log
 * holds for them; at the deadline, every stream does.  A POST's stream ends with
 * its calls' responses, when they come.
 */

void
ngx_http_mcp_streams_quit(ngx_uint_t deadline)
{
    ngx_queue_t            *q, *next;
    ngx_http_mcp_stream_t  *st;

    for (q = ngx_queue_head(&ngx_http_mcp_streams);
         q != ngx_queue_sentinel(&ngx_http_mcp_streams);
         q = next)
    {
        next = ngx_queue_next(q);
        st = ngx_queue_data(q, ngx_http_mcp_stream_t, queue);

        if (st->ending || st->quit
            || !(deadline || ngx_http_mcp_stream_endless(st)))
        {
            continue;
        }

        st->quit = 1;

        /* a busy stream ends from its write handler; a flush may free st */
        if (!st->busy) {
            ngx_http_mcp_stream_flush(st);
        }
    }
}


/* a GET's stream, or the stream of a call that never ends by itself */

static ngx_uint_t
ngx_http_mcp_stream_endless(ngx_http_mcp_stream_t *st)
{
    ngx_uint_t           i;
    ngx_http_mcp_ctx_t  *ctx;
    ngx_http_mcp_msg_t  *msg;

    if (st->request->method == NGX_HTTP_GET) {
        return 1;
    }

    ctx = ngx_http_get_module_ctx(st->request, ngx_http_mcp_module);
    msg = ctx->msgs.elts;

    for (i = 0; i < ctx->msgs.nelts; i++) {
        if (msg[i].call != NULL && msg[i].call->endless) {
            return 1;
        }
    }

    return 0;
}


/*
 * Ends the HTTP response but not the stream: its events stay in the
 * log for the client to resume with Last-Event-ID.
 */

void
ngx_http_mcp_stream_end_http(ngx_http_mcp_stream_t *st)
{
    if (st->ending) {
        return;
    }

    ngx_http_mcp_stream_detach(st);

    if (st->busy) {
        /* the write handler ends it once the output is out */
        st->ending = 1;
        return;
    }

    ngx_http_mcp_stream_last(st);
}


/* the end of the response: the priming event first, if still due */

static void
ngx_http_mcp_stream_last(ngx_http_mcp_stream_t *st)
{
    size_t  len;

    if (ngx_http_mcp_stream_prime(st, &len) != NGX_OK) {
        ngx_http_finalize_request(st->request, NGX_ERROR);
        return;
    }

    (void) ngx_http_mcp_stream_write(st, len ? st->buf : (u_char *) "", len,
                                     1);
}


/* the stream in the log loses its owner, if this connection still is it */

static void
ngx_http_mcp_stream_detach(ngx_http_mcp_stream_t *st)
{
    ngx_str_t  sid;

    sid.data = st->sid;
    sid.len = NGX_HTTP_MCP_SESSION_ID_LEN;

    if (st->heard) {
        st->heard = 0;

        ngx_http_mcp_hooks.get_stream(st->request, &sid, st->id, 0);
    }

    ngx_log_debug1(NGX_LOG_DEBUG_HTTP, st->request->connection->log, 0,
                   "mcp stream %uD: connection lets go", st->id);

    /* a GET stream waits for its client; others if the exit ended them */
    ngx_http_mcp_session_stream_release(st->conf->zone, &sid, st->id,
                                        st->token, st->quit);
}


static void
ngx_http_mcp_stream_cleanup(void *data)
{
    ngx_http_mcp_stream_t *st = data;

    ngx_http_mcp_ctx_t  *ctx;

    ngx_http_mcp_stream_detach(st);

    ngx_queue_remove(&st->queue);
    ngx_rbtree_delete(&ngx_http_mcp_stream_tree, &st->node);

    if (st->keepalive.timer_set) {
        ngx_del_timer(&st->keepalive);
    }

    /* the last one lets an exiting worker go */
    ngx_http_mcp_ipc_drained();

    if (st->buf) {
        ngx_free(st->buf);
    }

    ctx = ngx_http_get_module_ctx(st->request, ngx_http_mcp_module);

    if (ctx != NULL && ctx->stream == st) {
        ctx->stream = NULL;
    }
}


/*
 * notifications/resources/updated to every session, in every zone, that
 * subscribed to uri, on its newest GET stream, and to every listener
 * (subscriptions/listen) that named it, on its stream.  A session
 * without a GET stream, open or parked for a resume, misses it: server
 * notifications are not kept for later.
 */

ngx_int_t
ngx_http_mcp_resource_updated(ngx_str_t *uri)
{
    char                      *text;
    u_char                    *s;
    cJSON                     *json;
    ngx_str_t                  params;
    ngx_uint_t                 i, j;
    ngx_pid_t                 *pid;
    ngx_pool_t                *pool;
    ngx_array_t               *owners;
    ngx_shm_zone_t           **zone;
    ngx_http_mcp_main_conf_t  *mmcf;

    static const char  method[] = "notifications/resources/updated";

    mmcf = ngx_http_cycle_get_module_main_conf(ngx_cycle,
                                               ngx_http_mcp_module);

    pool = ngx_create_pool(1024, ngx_cycle->log);
    if (pool == NULL) {
        return NGX_ERROR;
    }

    owners = ngx_array_create(pool, 8, sizeof(ngx_pid_t));
    s = ngx_pnalloc(pool, uri->len + 1);

    if (owners == NULL || s == NULL) {
        ngx_destroy_pool(pool);
        return NGX_ERROR;
    }

    *ngx_cpymem(s, uri->data, uri->len) = '\0';

    /* the params' members, "uri":"...", with the URI escaped for JSON */

    json = cJSON_CreateString((char *) s);
    text = json ? cJSON_PrintUnformatted(json) : NULL;
    cJSON_Delete(json);

    params.len = sizeof("\"uri\":") - 1 + (text ? ngx_strlen(text) : 0);
    params.data = text ? ngx_pnalloc(pool, params.len) : NULL;

    if (params.data == NULL) {
        cJSON_free(text);
        ngx_destroy_pool(pool);
        return NGX_ERROR;
    }

    ngx_sprintf(params.data, "\"uri\":%s", text);
    cJSON_free(text);

    zone = mmcf->store.zones.elts;

    for (i = 0; i < mmcf->store.zones.nelts; i++) {
        (void) ngx_http_mcp_session_updated(zone[i], uri, method, &params,
                                            owners, ngx_cycle->log);
    }

    if (mmcf->store.default_zone) {
        (void) ngx_http_mcp_session_updated(mmcf->store.default_zone, uri, method,
                                            &params, owners, ngx_cycle->log);
    }

    pid = owners->elts;

    for (i = 0; i < owners->nelts; i++) {
        for (j = 0; j < i; j++) {
            if (pid[j] == pid[i]) {
                break;
            }
        }

        if (j == i) {
            (void) ngx_http_mcp_notify_pid(pid[i], ngx_cycle->log);
        }
    }

    ngx_destroy_pool(pool);

    return NGX_OK;
}


/*
 * After a reload, one worker compares the lists of the sets each zone's
 * sessions are served from with what they were, and tells every session
 * with an open GET stream what changed (notifications/.../list_changed).
 */

ngx_int_t
ngx_http_mcp_lists_changed(ngx_cycle_t *cycle)
{
    uint32_t                   lists[3];
    ngx_uint_t                 i, j, k, changed[3];
    ngx_pid_t                 *pid;
    ngx_pool_t                *pool;
    ngx_array_t               *owners;
    ngx_http_mcp_binding_t    *b;
    ngx_http_mcp_main_conf_t  *mmcf;

    static const char  *methods[] = {
        "notifications/tools/list_changed",
        "notifications/resources/list_changed",
        "notifications/prompts/list_changed"
    };

    mmcf = ngx_http_cycle_get_module_main_conf(cycle, ngx_http_mcp_module);
    b = mmcf->bindings.elts;

    pool = ngx_create_pool(1024, cycle->log);
    owners = pool ? ngx_array_create(pool, 8, sizeof(ngx_pid_t)) : NULL;

    if (owners == NULL) {
        if (pool) {
            ngx_destroy_pool(pool);
        }

        return NGX_ERROR;
    }

    for (i = 0; i < mmcf->bindings.nelts; i++) {

        for (j = 0; j < i; j++) {
            if (b[j].zone == b[i].zone) {
                break;
            }
        }

        if (j < i) {
            continue;           /* the zone is done */
        }

        /* all the sets of the zone's locations, together */
        lists[0] = lists[1] = lists[2] = 0;

        for (j = i; j < mmcf->bindings.nelts; j++) {
            if (b[j].zone == b[i].zone) {
                for (k = 0; k < 3; k++) {
                    lists[k] ^= ngx_http_mcp_set_hash(b[j].set, k);
                }
            }
        }

        ngx_http_mcp_session_lists(b[i].zone, lists, changed);

        for (k = 0; k < 3; k++) {
            if (!changed[k]) {
                continue;
            }

            (void) ngx_http_mcp_session_updated(b[i].zone, NULL,
                                                methods[k], NULL, owners,
                                                cycle->log);
        }
    }

    pid = owners->elts;

    for (i = 0; i < owners->nelts; i++) {
        (void) ngx_http_mcp_notify_pid(pid[i], cycle->log);
    }

    ngx_destroy_pool(pool);

    return NGX_OK;
}


ngx_int_t
ngx_http_mcp_list_changed(const char *list)
{
    char                       method[64];
    ngx_uint_t                 i, bit;
    ngx_shm_zone_t           **zone;
    ngx_http_mcp_main_conf_t  *mmcf;

    if (ngx_strcmp(list, "tools") == 0) {
        bit = NGX_HTTP_MCP_LISTEN_TOOLS;

    } else if (ngx_strcmp(list, "prompts") == 0) {
        bit = NGX_HTTP_MCP_LISTEN_PROMPTS;

    } else if (ngx_strcmp(list, "resources") == 0) {
        bit = NGX_HTTP_MCP_LISTEN_RESOURCES;

    } else {
        return NGX_ERROR;
    }

    ngx_sprintf((u_char *) method, "notifications/%s/list_changed%Z", list);

    mmcf = ngx_http_cycle_get_module_main_conf(ngx_cycle,
                                               ngx_http_mcp_module);
    zone = mmcf->store.zones.elts;

    for (i = 0; i < mmcf->store.zones.nelts; i++) {
        (void) ngx_http_mcp_session_list_changed(zone[i], bit, method,
                                                 ngx_cycle->log);
    }

    /* the zone of locations without mcp_session is not on the list */
    if (mmcf->store.default_zone) {
        (void) ngx_http_mcp_session_list_changed(mmcf->store.default_zone, bit,
                                                 method, ngx_cycle->log);
    }

    return NGX_OK;
}
