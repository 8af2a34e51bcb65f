
/*
 * 2025 sessions on a stdio location (mcp_stdio_sessions on): a stdio
 * server serves one client, so a session gets a child of its own,
 * started by the worker that takes its initialize (the owner) and
 * counted in the pool's bounds.  The session's id is the session
 * store's, made as the built-in endpoint makes one; the child is the
 * owner's alone.  Requests go to the child under ids of its own and
 * their answers come back under the client's; what the child asks or
 * tells the client goes on a stream of the session.  DELETE, expiry,
 * eviction, the child's exit and the owner's exit end the session.
 *
 * A request of the session that lands on another worker reaches the
 * child through the session store: that worker queues the message for
 * the owner (the session's inbound queue) and wakes it; the owner
 * writes it to the child, and sends what the child answers, and what
 * it says on its own, on a stream of the session's event log that the
 * other worker opened and writes to its client.  That worker's side is
 * ngx_http_mcp_stdio_remote.c; the owner's records of its requests and
 * GET are here.  See docs/stdio.md.
 */


#include "ngx_http_mcp_stdio.h"
#include "ngx_http_mcp_json.h"
#include "ngx_http_mcp_jsonrpc.h"
#include "ngx_http_mcp_core.h"
#include "ngx_http_mcp_http.h"
#include "ngx_http_mcp_auth.h"


static ngx_int_t ngx_http_mcp_stdio_session_start(
    ngx_http_mcp_stdio_req_t *req);
static ngx_int_t ngx_http_mcp_stdio_session_room(
    ngx_http_mcp_stdio_pool_t *pool);
static ngx_http_mcp_stdio_sess_t *ngx_http_mcp_stdio_session_find(
    ngx_http_mcp_stdio_pool_t *pool, ngx_str_t *sid);
static void ngx_http_mcp_stdio_session_push(ngx_http_mcp_stdio_req_t *req,
    cJSON *msg);
static void ngx_http_mcp_stdio_session_close(ngx_http_mcp_stdio_req_t *req,
    const char *why);
static ngx_int_t ngx_http_mcp_stdio_session_elsewhere(
    ngx_http_mcp_stdio_pool_t *pool, ngx_str_t *sid, ngx_http_request_t *r);
static ngx_http_mcp_stdio_sess_t *ngx_http_mcp_stdio_session_of(
    ngx_http_request_t *r, ngx_http_mcp_stdio_pool_t *pool, cJSON *id,
    ngx_int_t *rc, ngx_pid_t *owner, ngx_str_t *sid);
static ngx_int_t ngx_http_mcp_stdio_session_note(
    ngx_http_mcp_stdio_sess_t *s, cJSON *root);
static ngx_int_t ngx_http_mcp_stdio_session_request(
    ngx_http_mcp_stdio_sess_t *s, ngx_http_mcp_stdio_req_t *req);
static ngx_int_t ngx_http_mcp_stdio_session_write(
    ngx_http_mcp_stdio_child_t *c, cJSON *msg);
static ngx_int_t ngx_http_mcp_stdio_session_cancel_id(
    ngx_http_mcp_stdio_sess_t *s, ngx_uint_t child_id);
static ngx_int_t ngx_http_mcp_stdio_session_inbound(
    ngx_http_mcp_stdio_sess_t *s, ngx_http_mcp_inbound_msg_t *m);
static ngx_http_mcp_stdio_req_t *ngx_http_mcp_stdio_session_record(
    ngx_http_mcp_stdio_sess_t *s, uint32_t stream);
static void ngx_http_mcp_stdio_session_record_free(
    ngx_http_mcp_stdio_req_t *req);
static void ngx_http_mcp_stdio_session_respond(ngx_http_mcp_stdio_req_t *req,
    cJSON *msg);
static void ngx_http_mcp_stdio_session_fail(ngx_http_mcp_stdio_req_t *req,
    ngx_int_t code, const char *message);
static void ngx_http_mcp_stdio_session_answer(ngx_http_mcp_stdio_req_t *req,
    cJSON *msg);
static void ngx_http_mcp_stdio_session_error(ngx_http_mcp_stdio_req_t *req,
    ngx_int_t code, const char *message);
static ngx_uint_t ngx_http_mcp_stdio_session_held(
    ngx_http_mcp_stdio_req_t *req);
static ngx_http_mcp_stdio_req_t *ngx_http_mcp_stdio_session_stream(
    ngx_http_mcp_stdio_sess_t *s, ngx_uint_t get_first);
static void ngx_http_mcp_stdio_session_end(ngx_http_mcp_stdio_sess_t *s,
    const char *why, ngx_uint_t forget);
static void ngx_http_mcp_stdio_session_drop(ngx_http_mcp_stdio_req_t *req);
static void ngx_http_mcp_stdio_session_free(ngx_http_mcp_stdio_sess_t *s,
    ngx_uint_t forget);
static void ngx_http_mcp_stdio_session_timer(ngx_event_t *ev);
static void ngx_http_mcp_stdio_session_timeout(ngx_event_t *ev);


/*
 * A POST of a stdio location with sessions: NGX_DECLINED leaves it to
 * the pool (no Mcp-Session-Id, not an initialize); otherwise it is
 * answered here.  req->id is the client's id of a request, NULL for a
 * notification or a response, which stay whole in req->root.
 */

ngx_int_t
ngx_http_mcp_stdio_session_post(ngx_http_mcp_stdio_req_t *req, cJSON *method)
{
    ngx_int_t                   rc;
    ngx_pid_t                   owner;
    ngx_table_elt_t            *h;
    ngx_http_request_t         *r;
    ngx_http_mcp_stdio_sess_t  *s;

    r = req->r;

    h = ngx_http_mcp_header_in(r, "mcp-session-id",
                               sizeof("mcp-session-id") - 1);

    if (h == NULL) {
        if (req->id != NULL && !req->stateless
            && ngx_strcmp(req->method, "initialize") == 0)
        {
            return ngx_http_mcp_stdio_session_start(req);
        }

        return NGX_DECLINED;
    }

    s = ngx_http_mcp_stdio_session_of(r, req->pool, req->id, &rc, &owner,
                                      &req->sid);

    if (s == NULL && owner == 0) {
        ngx_http_finalize_request(r, rc);
        return NGX_OK;
    }

    if (req->id != NULL && ngx_strcmp(req->method, "initialize") == 0) {
        ngx_http_finalize_request(r,
            ngx_http_mcp_send_error(r, NGX_HTTP_BAD_REQUEST, req->id,
                                    NGX_HTTP_MCP_INVALID_REQUEST,
                                    "Invalid Request: the session is "
                                    "initialized already"));
        return NGX_OK;
    }

    if (s == NULL) {
        /* another worker's: queued for it, answered through the store */
        if (req->id != NULL) {
            if (ngx_http_mcp_stdio_remote_open(req, owner,
                                       req->accepts_sse
                                       ? NGX_HTTP_MCP_INBOUND_REQUEST_SSE
                                       : NGX_HTTP_MCP_INBOUND_REQUEST,
                                       &rc)
                != NGX_OK)
            {
                ngx_http_finalize_request(r, rc);
            }

            return NGX_OK;
        }

        if (ngx_http_mcp_stdio_remote_open(req, owner,
                                           NGX_HTTP_MCP_INBOUND_MESSAGE,
                                           &rc)
            == NGX_OK)
        {
            rc = ngx_http_mcp_send(r, NGX_HTTP_ACCEPTED, NULL, NULL, 0);
        }

        ngx_http_finalize_request(r, rc);
        return NGX_OK;
    }

    if (req->id != NULL && ngx_http_mcp_stdio_remote_polls(req)) {
        /* through the log, as another worker's: its stream may end */
        req->sid = h->value;

        if (ngx_http_mcp_stdio_remote_open(req, ngx_pid,
                                           NGX_HTTP_MCP_INBOUND_REQUEST_SSE,
                                           &rc)
            != NGX_OK)
        {
            ngx_http_finalize_request(r, rc);
        }

        return NGX_OK;
    }

    if (req->id != NULL) {
        (void) ngx_http_mcp_stdio_session_request(s, req);
        return NGX_OK;
    }

    /* a notification or a response: to the child as it is, taken (202) */

    rc = ngx_http_mcp_send(r, NGX_HTTP_ACCEPTED, NULL, NULL, 0);

    /* last: a child whose stdin fails ends the session here */
    if (ngx_http_mcp_stdio_session_note(s, req->root) == NGX_OK) {
        (void) ngx_http_mcp_stdio_session_write(s->child, req->root);
    }

    ngx_http_finalize_request(r, rc);

    return NGX_OK;
}


/*
 * A notification or a response of the client, on its way to the child
 * (from this worker or another): notifications/initialized is told to
 * the store, notifications/cancelled has its requestId made the child's
 * (NGX_DECLINED: not a request of the child's, nothing to send).
 */

static ngx_int_t
ngx_http_mcp_stdio_session_note(ngx_http_mcp_stdio_sess_t *s, cJSON *root)
{
    cJSON                     *method, *params, *rid, *cid;
    ngx_str_t                  sid;
    ngx_queue_t               *qq;
    ngx_http_mcp_stdio_req_t  *q;

    method = ngx_http_mcp_json_get(root, "method");

    if (!cJSON_IsString(method)) {
        return NGX_OK;
    }

    if (ngx_strcmp(method->valuestring, "notifications/initialized") == 0) {
        sid.data = s->sid;
        sid.len = NGX_HTTP_MCP_SESSION_ID_LEN;

        (void) ngx_http_mcp_session_set_initialized(s->pool->store, &sid,
                                                    ngx_cycle->log);
        return NGX_OK;
    }

    if (ngx_strcmp(method->valuestring, "notifications/cancelled") != 0) {
        return NGX_OK;
    }

    /* the client's id of the request, made the child's */
    params = ngx_http_mcp_json_get(root, "params");
    rid = cJSON_IsObject(params) ? ngx_http_mcp_json_get(params, "requestId")
                                 : NULL;
    cid = NULL;

    for (qq = ngx_queue_head(&s->inflight);
         rid != NULL && qq != ngx_queue_sentinel(&s->inflight);
         qq = ngx_queue_next(qq))
    {
        q = ngx_queue_data(qq, ngx_http_mcp_stdio_req_t, queue);

        if (q->id != NULL && cJSON_Compare(q->id, rid, 1)) {
            cid = cJSON_CreateNumber((double) q->child_id);
            break;
        }
    }

    if (cid == NULL || !cJSON_ReplaceItemInObject(params, "requestId", cid)) {
        /* not one of the child's: nothing to cancel */
        cJSON_Delete(cid);
        return NGX_DECLINED;
    }

    return NGX_OK;
}


/*
 * A 2025 client's initialize: a session in the store, a child for it,
 * the client's initialize its first line; the child's answer is the
 * reply, with the session's id.  Over the bounds: an error at once.
 */

static ngx_int_t
ngx_http_mcp_stdio_session_start(ngx_http_mcp_stdio_req_t *req)
{
    u_char                       id[NGX_HTTP_MCP_SESSION_ID_LEN];
    cJSON                       *params;
    ngx_int_t                    rc;
    ngx_str_t                    sid;
    ngx_http_request_t          *r;
    ngx_http_mcp_auth_t         *auth;
    ngx_http_mcp_stdio_sess_t   *s;
    ngx_http_mcp_stdio_pool_t   *pool;
    ngx_http_mcp_stdio_child_t  *child;
    ngx_http_mcp_session_init_t  init;

    r = req->r;
    pool = req->pool;

    rc = ngx_http_mcp_stdio_session_room(pool);

    if (rc == NGX_BUSY) {
        ngx_http_mcp_stdio_fail(req, NGX_HTTP_MCP_INTERNAL_ERROR,
                                "No stdio server can be started for a "
                                "session now: it exited too often, and "
                                "the next start waits (try again later)");
        return NGX_OK;
    }

    if (rc != NGX_OK) {
        ngx_http_mcp_stdio_fail(req, NGX_HTTP_MCP_INTERNAL_ERROR,
                                "No stdio server can be started for a "
                                "session: the bound of children is "
                                "reached");
        return NGX_OK;
    }

    ngx_memzero(&init, sizeof(ngx_http_mcp_session_init_t));

    params = ngx_http_mcp_json_get(req->root, "params");
    (void) ngx_http_mcp_session_init_params(params, &init);

    /*
     * bound to its caller (as the access phase found it, on a POST, GET
     * or DELETE alike), as the built-in endpoint binds one: one caller's
     * session id is nothing to another
     */
    auth = ngx_http_mcp_auth_get(r);

    if (auth != NULL) {
        init.binding = auth->binding;
    }

    if (ngx_http_mcp_session_client_key(pool->store, r, &init.client_key)
        != NGX_OK
        || ngx_http_mcp_session_create(pool->store, r->connection->log,
                                       &init, id)
           != NGX_OK)
    {
        /* what refused it (room, per_client) logged its own line */
        ngx_http_mcp_stdio_count(pool);
        ngx_http_mcp_stdio_fail(req, NGX_HTTP_MCP_INTERNAL_ERROR,
                                "No session can be made");
        return NGX_OK;
    }

    sid.data = id;
    sid.len = NGX_HTTP_MCP_SESSION_ID_LEN;

    s = ngx_calloc(sizeof(ngx_http_mcp_stdio_sess_t), ngx_cycle->log);

    if (s == NULL) {
        (void) ngx_http_mcp_session_delete(pool->store, &sid,
                                           r->connection->log);
        ngx_http_mcp_stdio_count(pool);
        ngx_http_mcp_stdio_fail(req, NGX_HTTP_MCP_INTERNAL_ERROR,
                                "Internal error");
        return NGX_OK;
    }

    child = ngx_http_mcp_stdio_spawn(pool);

    if (child == NULL) {
        ngx_free(s);
        (void) ngx_http_mcp_session_delete(pool->store, &sid,
                                           r->connection->log);
        ngx_http_mcp_stdio_backoff(pool);
        ngx_http_mcp_stdio_fail(req, NGX_HTTP_MCP_INTERNAL_ERROR,
                                "The stdio server could not be started");
        return NGX_OK;
    }

    ngx_memcpy(s->sid, id, NGX_HTTP_MCP_SESSION_ID_LEN);
    s->pool = pool;
    s->child = child;

    /* the other workers send this one what they take for the child */
    (void) ngx_http_mcp_session_stdio_own(pool->store, &sid, ngx_pid,
                                          pool->index);

    if (auth != NULL) {
        ngx_memcpy(s->caller.binding, auth->binding,
                   NGX_HTTP_MCP_AUTH_BINDING_LEN);
        s->bound = 1;
    }

    ngx_queue_init(&s->inflight);
    ngx_queue_insert_tail(&pool->sessions, &s->queue);

    s->timer.handler = ngx_http_mcp_stdio_session_timer;
    s->timer.data = s;
    s->timer.log = ngx_cycle->log;
    s->timer.cancelable = 1;

    /* neither idle nor starting to the pool: its requests are this one's */
    child->session = s;
    child->state = NGX_HTTP_MCP_STDIO_SESSION;

    (void) ngx_http_mcp_stdio_session_request(s, req);

    return NGX_OK;
}


/*
 * A place for a session's child in this worker: an idle child of the
 * pool gives its place up (sessionless requests start another when
 * there is room), then the total across workers is reserved.
 * NGX_BUSY: the server exited too often, and its backoff is not over;
 * NGX_DECLINED: a bound is reached.
 */

static ngx_int_t
ngx_http_mcp_stdio_session_room(ngx_http_mcp_stdio_pool_t *pool)
{
    ngx_queue_t                 *q;
    ngx_http_mcp_stdio_child_t  *child;

    if ((ngx_msec_int_t) (pool->next_spawn - ngx_current_msec) > 0) {
        /* a crash loop: no start before its backoff ends */
        return NGX_BUSY;
    }

    if (pool->live >= pool->size) {
        for (q = ngx_queue_head(&pool->children);
             q != ngx_queue_sentinel(&pool->children);
             q = ngx_queue_next(q))
        {
            child = ngx_queue_data(q, ngx_http_mcp_stdio_child_t, queue);

            if (child->session == NULL
                && child->state == NGX_HTTP_MCP_STDIO_READY)
            {
                ngx_http_mcp_stdio_stop(child);
                break;
            }
        }
    }

    if (pool->live >= pool->size) {
        return NGX_DECLINED;
    }

    if (pool->total && ngx_http_mcp_stdio_reserve(pool) != NGX_OK) {
        return NGX_DECLINED;
    }

    return NGX_OK;
}


static ngx_http_mcp_stdio_sess_t *
ngx_http_mcp_stdio_session_find(ngx_http_mcp_stdio_pool_t *pool,
    ngx_str_t *sid)
{
    ngx_queue_t                *q;
    ngx_http_mcp_stdio_sess_t  *s;

    if (sid->len != NGX_HTTP_MCP_SESSION_ID_LEN) {
        return NULL;
    }

    for (q = ngx_queue_head(&pool->sessions);
         q != ngx_queue_sentinel(&pool->sessions);
         q = ngx_queue_next(q))
    {
        s = ngx_queue_data(q, ngx_http_mcp_stdio_sess_t, queue);

        if (ngx_memcmp(s->sid, sid->data, NGX_HTTP_MCP_SESSION_ID_LEN) == 0) {
            return s;
        }
    }

    return NULL;
}


/*
 * A session the store has that is not this worker's (its child is its
 * owner's): the store forgets it, and its owner is woken to stop the
 * child (it finds the session gone).  NGX_DECLINED: the store has none.
 */

static ngx_int_t
ngx_http_mcp_stdio_session_elsewhere(ngx_http_mcp_stdio_pool_t *pool,
    ngx_str_t *sid, ngx_http_request_t *r)
{
    ngx_int_t              rc;
    ngx_pid_t              owner;
    ngx_uint_t             location;
    ngx_http_mcp_reqctx_t  rctx;

    ngx_memzero(&rctx, sizeof(ngx_http_mcp_reqctx_t));
    rctx.auth = ngx_http_mcp_auth_get(r);

    /* the lookup, as for any request: a session is its caller's alone */
    if (ngx_http_mcp_session_lookup(pool->store, sid, &rctx) != NGX_OK) {
        return NGX_DECLINED;
    }

    owner = ngx_http_mcp_session_stdio_owner(pool->store, sid, &location);

    if (owner != 0 && location != pool->index) {
        /* another stdio location's: not this one's to end */
        return NGX_DECLINED;
    }

    rc = ngx_http_mcp_session_delete(pool->store, sid, r->connection->log);

    if (rc == NGX_OK && owner != 0) {
        (void) ngx_http_mcp_notify_pid(owner, r->connection->log);
    }

    return rc;
}


/*
 * The session a request names, in the store (which marks it used) and
 * in this worker; NULL with *owner set (and *sid, the header's id):
 * the session is another live worker's; else NULL and the reply's code
 * in *rc: 400 without the header, 404 for a session that is not (or
 * whose owner died: the store forgets it).
 */

static ngx_http_mcp_stdio_sess_t *
ngx_http_mcp_stdio_session_of(ngx_http_request_t *r,
    ngx_http_mcp_stdio_pool_t *pool, cJSON *id, ngx_int_t *rc,
    ngx_pid_t *owner, ngx_str_t *sid)
{
    ngx_pid_t                   pid;
    ngx_uint_t                  location;
    ngx_table_elt_t            *h;
    ngx_http_mcp_reqctx_t       rctx;
    ngx_http_mcp_stdio_sess_t  *s;

    *owner = 0;

    h = ngx_http_mcp_header_in(r, "mcp-session-id",
                               sizeof("mcp-session-id") - 1);

    if (h == NULL) {
        *rc = ngx_http_mcp_send_error(r, NGX_HTTP_BAD_REQUEST, id,
                                      NGX_HTTP_MCP_INVALID_REQUEST,
                                      "Bad Request: Mcp-Session-Id "
                                      "header required");
        return NULL;
    }

    ngx_memzero(&rctx, sizeof(ngx_http_mcp_reqctx_t));

    /* a session is its caller's: to anyone else it does not exist */
    rctx.auth = ngx_http_mcp_auth_get(r);

    s = NULL;

    if (ngx_http_mcp_session_lookup(pool->store, &h->value, &rctx)
        == NGX_OK)
    {
        s = ngx_http_mcp_stdio_session_find(pool, &h->value);

        if (s == NULL) {
            pid = ngx_http_mcp_session_stdio_owner(pool->store, &h->value,
                                                   &location);

            /* another stdio location's session (a shared zone) is not
               this one's, as on its owner */
            if (location == pool->index && pid != ngx_pid
                && ngx_http_mcp_stdio_remote_owner_live(pool, &h->value,
                                                        pid))
            {
                *owner = pid;
                *sid = h->value;
                return NULL;
            }
        }
    }

    if (s == NULL || s->child == NULL) {
        *rc = ngx_http_mcp_send_error(r, NGX_HTTP_NOT_FOUND, id,
                                      NGX_HTTP_MCP_SESSION_NOT_FOUND,
                                      "Session not found");
        return NULL;
    }

    return s;
}


/*
 * A request to the session's child, under the child's own id: this
 * worker's POST, or another's (r NULL).  NGX_ERROR: the child's stdin
 * failed, and the session ended.
 */

static ngx_int_t
ngx_http_mcp_stdio_session_request(ngx_http_mcp_stdio_sess_t *s,
    ngx_http_mcp_stdio_req_t *req)
{
    ngx_uint_t                   calls;
    ngx_queue_t                 *q;
    ngx_http_mcp_stdio_child_t  *child;

    calls = 0;

    for (q = ngx_queue_head(&s->inflight);
         q != ngx_queue_sentinel(&s->inflight);
         q = ngx_queue_next(q))
    {
        calls++;
    }

    if (calls >= NGX_HTTP_MCP_STDIO_SESSION_CALLS) {
        ngx_http_mcp_stdio_session_fail(req, NGX_HTTP_MCP_INTERNAL_ERROR,
                                        "The session has too many requests "
                                        "at its stdio server");
        return NGX_OK;
    }

    child = s->child;

    req->child_id = ++child->next_id;

    if (req->r == NULL) {
        if (!cJSON_AddItemToObject(req->root, "id",
                                   cJSON_CreateNumber((double) req->child_id)))
        {
            ngx_http_mcp_stdio_session_error(req, NGX_HTTP_MCP_INTERNAL_ERROR,
                                             "Internal error");
            return NGX_OK;
        }

    } else if (ngx_http_mcp_stdio_map_id(req, req->child_id) != NGX_OK) {
        return NGX_OK;
    }

    req->sess = s;
    req->inflight = 1;
    ngx_queue_insert_tail(&s->inflight, &req->queue);

    /* an answer outstanding holds a graceful exit until it ends */
    req->timer.handler = ngx_http_mcp_stdio_session_timeout;
    req->timer.data = req;
    req->timer.log = ngx_cycle->log;

    if (req->r != NULL) {
        /* a client's end while it waits is seen, and cleans up */
        req->r->read_event_handler = ngx_http_test_reading;
        req->timer.log = req->r->connection->log;
    }

    ngx_add_timer(&req->timer, s->pool->timeout);

    /* last: a child whose stdin fails ends the session, and this too */
    return ngx_http_mcp_stdio_session_write(child, req->root);
}


/*
 * A line to a session's child.  One that its stdin does not take ends
 * the session (the pool's gone(), as for any child): the caller touches
 * neither the session nor its requests after it.
 */

static ngx_int_t
ngx_http_mcp_stdio_session_write(ngx_http_mcp_stdio_child_t *child,
    cJSON *msg)
{
    if (ngx_http_mcp_stdio_send_line(child, msg) == NGX_OK) {
        return NGX_OK;
    }

    if (child->pool != NULL) {
        child->pool->gone(child, "its stdin failed");
    }

    return NGX_ERROR;
}


/*
 * What a session's child writes (msg, freed here): an answer to one of
 * the client's requests, under the client's id; a notification or a
 * request of its own, on a stream of the session.  The spec's stdio
 * transport does not say which request a server's message belongs to
 * (the SDKs' relatedRequestId does not reach the wire), so progress
 * goes by its token, another notification to the GET stream (else a
 * POST's), and a server request to the oldest POST stream still open
 * (a tool asks while its call runs), else the GET stream.
 */

void
ngx_http_mcp_stdio_session_line(ngx_http_mcp_stdio_child_t *child,
    cJSON *msg)
{
    cJSON                      *method, *id, *params, *token, *reply;
    ngx_str_t                   sid;
    ngx_queue_t                *q;
    ngx_http_mcp_stdio_req_t   *req, *to;
    ngx_http_mcp_stdio_sess_t  *s;

    s = child->session;

    method = ngx_http_mcp_json_get(msg, "method");
    id = ngx_http_mcp_json_get(msg, "id");

    if (method != NULL && id == NULL) {
        params = ngx_http_mcp_json_get(msg, "params");
        token = cJSON_IsObject(params)
                ? ngx_http_mcp_json_get(params, "progressToken") : NULL;
        to = NULL;

        if (token != NULL) {
            for (q = ngx_queue_head(&s->inflight);
                 q != ngx_queue_sentinel(&s->inflight);
                 q = ngx_queue_next(q))
            {
                req = ngx_queue_data(q, ngx_http_mcp_stdio_req_t, queue);

                if (req->token != NULL && req->accepts_sse
                    && cJSON_Compare(req->token, token, 1))
                {
                    to = req;
                    break;
                }
            }

        } else {
            to = ngx_http_mcp_stdio_session_stream(s, 1);
        }

        if (to != NULL) {
            ngx_http_mcp_stdio_session_push(to, msg);
        }

        cJSON_Delete(msg);
        return;
    }

    if (method != NULL) {
        to = ngx_http_mcp_stdio_session_stream(s, 0);

        if (to != NULL) {
            ngx_http_mcp_stdio_session_push(to, msg);
            cJSON_Delete(msg);
            return;
        }

        /* no stream to ask the client on: the child is not left waiting */
        reply = cJSON_Parse("{\"jsonrpc\":\"2.0\",\"error\":{\"code\":"
                            "-32603,\"message\":\"No client stream is "
                            "open to carry the request\"}}");

        if (reply == NULL
            || !cJSON_AddItemToObject(reply, "id", cJSON_Duplicate(id, 1)))
        {
            cJSON_Delete(reply);
            cJSON_Delete(msg);
            return;
        }

        cJSON_Delete(msg);
        (void) ngx_http_mcp_stdio_session_write(child, reply);
        cJSON_Delete(reply);
        return;
    }

    /* an answer: to a ping of ours, or to a request of the client's */

    if (!cJSON_IsNumber(id)) {
        cJSON_Delete(msg);
        return;
    }

    if (s->ping != 0 && id->valuedouble == (double) s->ping) {
        s->ping = 0;
        cJSON_Delete(msg);
        return;
    }

    to = NULL;

    for (q = ngx_queue_head(&s->inflight);
         q != ngx_queue_sentinel(&s->inflight);
         q = ngx_queue_next(q))
    {
        req = ngx_queue_data(q, ngx_http_mcp_stdio_req_t, queue);

        if (id->valuedouble == (double) req->child_id) {
            to = req;
            break;
        }
    }

    if (to == NULL) {
        /* an answer to a request no longer outstanding */
        cJSON_Delete(msg);
        return;
    }

    if (s->ready) {
        ngx_http_mcp_stdio_session_respond(to, msg);
        cJSON_Delete(msg);
        return;
    }

    /* the answer to the client's initialize: the session starts, or not */

    if (!cJSON_IsObject(ngx_http_mcp_json_get(msg, "result"))) {
        ngx_http_mcp_stdio_detach(to);
        to->sess = NULL;
        ngx_http_mcp_stdio_respond(to, msg);
        cJSON_Delete(msg);
        ngx_http_mcp_stdio_session_end(s, "initialize failed", 1);
        return;
    }

    s->ready = 1;
    s->pool->backoff = 0;
    ngx_add_timer(&s->timer, s->pool->timeout);

    /* what other workers queued while it started is taken now */
    (void) ngx_http_mcp_notify_pid(ngx_pid, ngx_cycle->log);

    sid.data = s->sid;
    sid.len = NGX_HTTP_MCP_SESSION_ID_LEN;

    if (ngx_http_mcp_header_out(to->r, "Mcp-Session-Id", &sid) != NGX_OK) {
        cJSON_Delete(msg);
        ngx_http_mcp_stdio_fail(to, NGX_HTTP_MCP_INTERNAL_ERROR,
                                "Internal error");
        ngx_http_mcp_stdio_session_end(s, "no memory", 1);
        return;
    }

    ngx_http_mcp_stdio_respond(to, msg);
    cJSON_Delete(msg);
}


/*
 * The stream a server's own message goes on: the GET stream first, or
 * the oldest POST stream (get_first 0: the reverse), a POST only when
 * its client takes an event stream and the session has started.  A
 * stream a connection writes now comes before a parked one (its client
 * left, and may resume it): a request there would wait for the resume,
 * while its answer, which goes to the child by its id, may come on any
 * stream of the session.
 */

static ngx_http_mcp_stdio_req_t *
ngx_http_mcp_stdio_session_stream(ngx_http_mcp_stdio_sess_t *s,
    ngx_uint_t get_first)
{
    ngx_queue_t               *q;
    ngx_http_mcp_stdio_req_t  *req, *parked;

    parked = NULL;

    if (get_first && s->get != NULL) {
        if (ngx_http_mcp_stdio_session_held(s->get)) {
            return s->get;
        }

        parked = s->get;
    }

    for (q = ngx_queue_head(&s->inflight);
         s->ready && q != ngx_queue_sentinel(&s->inflight);
         q = ngx_queue_next(q))
    {
        req = ngx_queue_data(q, ngx_http_mcp_stdio_req_t, queue);

        if (!req->accepts_sse) {
            continue;
        }

        if (ngx_http_mcp_stdio_session_held(req)) {
            return req;
        }

        if (parked == NULL) {
            parked = req;
        }
    }

    /* no stream is held but perhaps the GET: it, else the first parked */

    if (parked != NULL
        && (get_first || s->get == NULL
            || !ngx_http_mcp_stdio_session_held(s->get)))
    {
        return parked;
    }

    return s->get;
}


/*
 * Whether a stream is written to a client now: this worker's own
 * request, or another worker's (a record) whose stream in the log a
 * connection holds, not parked
 */

static ngx_uint_t
ngx_http_mcp_stdio_session_held(ngx_http_mcp_stdio_req_t *req)
{
    if (req->r != NULL) {
        return 1;
    }

    return ngx_http_mcp_session_stream_held(req->pool->store, &req->sid,
                                            req->stream)
           == NGX_OK;
}


/*
 * An event of a stream: a POST's turns into a stream with the first.
 * Another worker's stream (r NULL) gets it through the session's log.
 */

static void
ngx_http_mcp_stdio_session_push(ngx_http_mcp_stdio_req_t *req, cJSON *msg)
{
    char  *text;

    if (req->r == NULL) {
        text = cJSON_PrintUnformatted(msg);

        if (text == NULL) {
            return;
        }

        if (ngx_http_mcp_session_send(req->pool->store, &req->sid,
                                      req->stream, (u_char *) text,
                                      ngx_strlen(text), 0, ngx_cycle->log)
            == NGX_DECLINED
            && req->get)
        {
            /* its stream is gone: its worker ended, or the session */
            ngx_http_mcp_stdio_session_record_free(req);
        }

        cJSON_free(text);
        return;
    }

    if (ngx_http_mcp_stdio_push(req, msg) == NGX_DECLINED
        && ((req->sess != NULL && req->sess->get == req) || req->get))
    {
        /* the client opens another (the spec lets a server close one) */
        ngx_http_mcp_stdio_session_close(req, NULL);
    }
}


/*
 * GET (the session's stream for what the server says on its own) and
 * DELETE (the session ends) of a stdio location with sessions.
 */

ngx_int_t
ngx_http_mcp_stdio_session_other(ngx_http_request_t *r,
    ngx_http_mcp_stdio_pool_t *pool)
{
    uint32_t                    resume;
    uint64_t                    seq;
    ngx_int_t                   rc;
    ngx_pid_t                   owner;
    ngx_str_t                   sid;
    ngx_table_elt_t            *h;
    ngx_pool_cleanup_t         *cln;
    ngx_http_mcp_stdio_req_t   *req;
    ngx_http_mcp_stdio_sess_t  *s;

    if (ngx_http_discard_request_body(r) != NGX_OK) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    h = ngx_http_mcp_header_in(r, "mcp-session-id",
                               sizeof("mcp-session-id") - 1);

    if (r->method == NGX_HTTP_DELETE && h != NULL
        && ngx_http_mcp_stdio_session_find(pool, &h->value) == NULL
        && ngx_http_mcp_stdio_session_elsewhere(pool, &h->value, r) == NGX_OK)
    {
        /* another worker's: its owner stops the child at its next look */
        r->header_only = 1;

        return ngx_http_mcp_send(r, NGX_HTTP_OK, NULL, NULL, 0);
    }

    s = ngx_http_mcp_stdio_session_of(r, pool, NULL, &rc, &owner, &sid);

    if (s == NULL && owner == 0) {
        return rc;
    }

    if (s == NULL && r->method == NGX_HTTP_DELETE) {
        /* the store forgot it between the two looks: gone all the same */
        return ngx_http_mcp_send_error(r, NGX_HTTP_NOT_FOUND, NULL,
                                       NGX_HTTP_MCP_SESSION_NOT_FOUND,
                                       "Session not found");
    }

    if (r->method == NGX_HTTP_DELETE) {
        ngx_http_mcp_stdio_session_end(s, "The session was deleted", 1);

        r->header_only = 1;

        return ngx_http_mcp_send(r, NGX_HTTP_OK, NULL, NULL, 0);
    }

    h = ngx_http_mcp_header_in(r, "accept", sizeof("accept") - 1);

    if (h == NULL
        || ngx_strlcasestrn(h->value.data, h->value.data + h->value.len,
                            (u_char *) "text/event-stream",
                            sizeof("text/event-stream") - 2)
           == NULL)
    {
        return ngx_http_mcp_send_error(r, NGX_HTTP_MCP_NOT_ACCEPTABLE, NULL,
                                       NGX_HTTP_MCP_INVALID_REQUEST,
                                       "Not Acceptable: the client must "
                                       "accept text/event-stream");
    }

    h = ngx_http_mcp_header_in(r, "last-event-id",
                               sizeof("last-event-id") - 1);

    if (h != NULL
        && ngx_http_mcp_last_event_id(&h->value, &resume, &seq) == NGX_OK)
    {
        if (s != NULL) {
            sid.data = s->sid;
            sid.len = NGX_HTTP_MCP_SESSION_ID_LEN;
            owner = ngx_pid;
        }

        return ngx_http_mcp_stdio_remote_resume(r, s, pool, owner, &sid,
                                                resume, seq);
    }

    if (s != NULL && s->get != NULL) {
        return ngx_http_mcp_send_error(r, NGX_HTTP_CONFLICT, NULL,
                                       NGX_HTTP_MCP_INVALID_REQUEST,
                                       "Conflict: the session's GET "
                                       "stream is open already");
    }

    req = ngx_pcalloc(r->pool, sizeof(ngx_http_mcp_stdio_req_t));
    cln = ngx_pool_cleanup_add(r->pool, 0);

    if (req == NULL || cln == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    req->r = r;
    req->pool = pool;
    req->accepts_sse = 1;
    cln->handler = ngx_http_mcp_stdio_remote_cleanup;
    cln->data = req;

    if (s == NULL) {
        /* another worker's session: its owner sends on this stream */
        req->get = 1;
        req->sid = sid;

        if (ngx_http_mcp_stdio_remote_open(req, owner,
                                           NGX_HTTP_MCP_INBOUND_GET, &rc)
            != NGX_OK)
        {
            return rc;
        }

    } else {
        req->sess = s;
    }

    if (ngx_http_mcp_stdio_sse(req) != NGX_OK
        || ngx_http_send_special(r, NGX_HTTP_FLUSH) == NGX_ERROR)
    {
        return NGX_ERROR;
    }

    if (s != NULL) {
        s->get = req;
    }

    /* the stream stays open until the client, or the session, ends it */
    r->read_event_handler = ngx_http_test_reading;
    r->main->count++;

    return NGX_DONE;
}


/* a stream of the session ends: with an error event when why is given */

static void
ngx_http_mcp_stdio_session_close(ngx_http_mcp_stdio_req_t *req,
    const char *why)
{
    if (req->r == NULL) {
        /* another worker's GET: it sees the session's end by itself */
        ngx_http_mcp_stdio_session_record_free(req);
        return;
    }

    ngx_http_mcp_stdio_close(req, why);
}


/*
 * The session ends: its child stopped, its requests answered with an
 * error, its GET stream closed with one, forgotten by the store unless
 * the store ended it (forget 0), its place in the pool given back.
 */

static void
ngx_http_mcp_stdio_session_end(ngx_http_mcp_stdio_sess_t *s,
    const char *why, ngx_uint_t forget)
{
    ngx_queue_t                *q;
    ngx_http_mcp_stdio_req_t   *req;
    ngx_http_mcp_stdio_pool_t  *pool;

    pool = s->pool;

    /* first: no line of it is read while its requests are answered */
    if (s->child != NULL) {
        s->child->session = NULL;
        ngx_http_mcp_stdio_stop(s->child);
        s->child = NULL;
    }

    while (!ngx_queue_empty(&s->inflight)) {
        q = ngx_queue_head(&s->inflight);
        req = ngx_queue_data(q, ngx_http_mcp_stdio_req_t, queue);

        ngx_http_mcp_stdio_session_fail(req, NGX_HTTP_MCP_INTERNAL_ERROR,
                                        why);
    }

    if (s->get != NULL) {
        ngx_http_mcp_stdio_session_close(s->get, why);
    }

    ngx_http_mcp_stdio_session_free(s, forget);

    /* a place in the pool is free: waiting sessionless requests take it */
    ngx_http_mcp_stdio_route(pool);
}


/* what the process layer tells of a session's child: it is gone */

void
ngx_http_mcp_stdio_session_gone(ngx_http_mcp_stdio_child_t *child,
    const char *why)
{
    ngx_http_mcp_stdio_sess_t  *s;

    s = child->session;

    ngx_log_error(NGX_LOG_WARN, ngx_cycle->log, 0,
                  "mcp_stdio: pid %P of a session ended: %s",
                  child->pid, why);

    /* one that dies young is a crash loop: each start waits longer */
    if (!s->ready || ngx_current_msec - child->started < 5000) {
        ngx_http_mcp_stdio_backoff(s->pool);
    }

    ngx_http_mcp_stdio_session_end(s, "The stdio server of the session "
                                      "exited", 1);
}


/*
 * A session's request that its client left: the child is told (not
 * for initialize, which may not be cancelled: the session ends with it).
 */

void
ngx_http_mcp_stdio_session_cancel(ngx_http_mcp_stdio_req_t *req)
{
    ngx_http_mcp_stdio_sess_t  *s;

    s = req->sess;

    ngx_http_mcp_stdio_detach(req);

    if (s == NULL || s->child == NULL) {
        return;
    }

    if (!s->ready) {
        ngx_http_mcp_stdio_session_end(s, "The client left during "
                                          "initialize", 1);
        return;
    }

    (void) ngx_http_mcp_stdio_session_cancel_id(s, req->child_id);
}


/* the child's request child_id is cancelled; NGX_ERROR: the session
   ended (its stdin failed) */

static ngx_int_t
ngx_http_mcp_stdio_session_cancel_id(ngx_http_mcp_stdio_sess_t *s,
    ngx_uint_t child_id)
{
    cJSON      *note;
    ngx_int_t   rc;

    note = cJSON_Parse("{\"jsonrpc\":\"2.0\","
                       "\"method\":\"notifications/cancelled\","
                       "\"params\":{\"reason\":\"client gone\"}}");

    if (note == NULL) {
        return NGX_OK;
    }

    rc = NGX_OK;

    if (cJSON_AddNumberToObject(ngx_http_mcp_json_get(note, "params"),
                                "requestId", (double) child_id)
        != NULL)
    {
        rc = ngx_http_mcp_stdio_session_write(s->child, note);
    }

    cJSON_Delete(note);

    return rc;
}


/* a session's request that its child does not answer in time */

static void
ngx_http_mcp_stdio_session_timeout(ngx_event_t *ev)
{
    ngx_http_mcp_stdio_req_t   *req = ev->data;

    ngx_http_mcp_stdio_sess_t  *s;

    s = req->sess;

    if (s != NULL && !s->ready) {
        ngx_log_error(NGX_LOG_WARN, ngx_cycle->log, 0,
                      "mcp_stdio: pid %P did not answer a session's "
                      "initialize within %M, stopped",
                      s->child->pid, s->pool->timeout);

        ngx_http_mcp_stdio_detach(req);
        ngx_http_mcp_stdio_fail(req, NGX_HTTP_MCP_REQUEST_TIMEOUT,
                                "Request timed out: the stdio server "
                                "did not answer");
        ngx_http_mcp_stdio_backoff(s->pool);
        ngx_http_mcp_stdio_session_end(s, "initialize timed out", 1);
        return;
    }

    /* the child is told, as for a client that left; the session goes on */
    ngx_http_mcp_stdio_session_cancel(req);

    ngx_http_mcp_stdio_session_fail(req, NGX_HTTP_MCP_REQUEST_TIMEOUT,
                                    "Request timed out: the stdio server "
                                    "did not answer");
}


/*
 * Every mcp_stdio_timeout of a started session: a session the store no
 * longer has (expired, evicted, deleted through another worker) ends;
 * an idle child is pinged and must answer by the next time; a worker
 * that exits ends its sessions (the timer is cancelable: nginx runs it
 * as the exit starts, so a GET stream does not hold the exit).
 */

static void
ngx_http_mcp_stdio_session_timer(ngx_event_t *ev)
{
    cJSON                      *ping;
    ngx_str_t                   sid;
    ngx_http_mcp_reqctx_t       rctx;
    ngx_http_mcp_stdio_sess_t  *s;

    s = ev->data;

    if (ngx_exiting || ngx_quit || ngx_terminate) {
        ngx_http_mcp_stdio_session_end(s, "The server is shutting down", 1);
        return;
    }

    sid.data = s->sid;
    sid.len = NGX_HTTP_MCP_SESSION_ID_LEN;

    ngx_memzero(&rctx, sizeof(ngx_http_mcp_reqctx_t));
    rctx.auth = s->bound ? &s->caller : NULL;

    /*
     * A session with a stream open or a request in flight is in use, as
     * the store counts its own streams; an idle one is only looked at,
     * and goes when idle past the zone's timeout.
     */
    if ((s->get != NULL || !ngx_queue_empty(&s->inflight)
         ? ngx_http_mcp_session_lookup(s->pool->store, &sid, &rctx)
         : ngx_http_mcp_session_alive(s->pool->store, &sid))
        != NGX_OK)
    {
        ngx_http_mcp_stdio_session_end(s, "The session expired", 0);
        return;
    }

    if (s->ping != 0) {
        ngx_log_error(NGX_LOG_WARN, ngx_cycle->log, 0,
                      "mcp_stdio: pid %P of a session did not answer a "
                      "ping within %M, stopped",
                      s->child->pid, s->pool->timeout);

        ngx_http_mcp_stdio_session_end(s, "The stdio server did not "
                                          "answer", 1);
        return;
    }

    ngx_add_timer(&s->timer, s->pool->timeout);

    if (!ngx_queue_empty(&s->inflight)) {
        /* it answers, or its requests time out */
        return;
    }

    s->ping = ++s->child->next_id;

    ping = cJSON_Parse("{\"jsonrpc\":\"2.0\",\"method\":\"ping\"}");

    if (ping == NULL
        || cJSON_AddNumberToObject(ping, "id", (double) s->ping) == NULL)
    {
        cJSON_Delete(ping);
        return;
    }

    (void) ngx_http_mcp_stdio_session_write(s->child, ping);
    cJSON_Delete(ping);
}


/*
 * The worker exits: its sessions end with it (a child cannot move to
 * another process), forgotten by the store so that their clients get a
 * 404 and initialize again.  Nothing runs after exit_process: no
 * request is answered here; their connections are closed now, as
 * worker_shutdown_timeout closes them (c->close, the read handler),
 * else nginx finds a GET stream's socket left open and aborts ([alert]).
 */

static void
ngx_http_mcp_stdio_session_drop(ngx_http_mcp_stdio_req_t *req)
{
    ngx_connection_t  *c;

    c = req->r->connection;
    ngx_http_mcp_stdio_detach(req);

    c->close = 1;
    c->error = 1;
    c->read->handler(c->read);
}


void
ngx_http_mcp_stdio_session_exit(ngx_http_mcp_stdio_pool_t *pool)
{
    ngx_queue_t                *q, *rq;
    ngx_http_mcp_stdio_req_t   *req;
    ngx_http_mcp_stdio_sess_t  *s;

    if (pool->store == NULL) {
        return;
    }

    while (!ngx_queue_empty(&pool->sessions)) {
        q = ngx_queue_head(&pool->sessions);
        s = ngx_queue_data(q, ngx_http_mcp_stdio_sess_t, queue);

        while (!ngx_queue_empty(&s->inflight)) {
            rq = ngx_queue_head(&s->inflight);
            req = ngx_queue_data(rq, ngx_http_mcp_stdio_req_t, queue);

            if (req->r == NULL) {
                /* another worker's: answered on its stream */
                ngx_http_mcp_stdio_session_error(req,
                                                 NGX_HTTP_MCP_INTERNAL_ERROR,
                                                 "The server is shutting "
                                                 "down");
                continue;
            }

            ngx_http_mcp_stdio_session_drop(req);
        }

        if (s->get != NULL && s->get->r == NULL) {
            ngx_http_mcp_stdio_session_record_free(s->get);

        } else if (s->get != NULL) {
            ngx_http_mcp_stdio_session_drop(s->get);
        }

        ngx_http_mcp_stdio_session_free(s, 1);
    }

    /* this worker's requests and GETs of other workers' sessions */
    while (!ngx_queue_empty(&pool->remote)) {
        q = ngx_queue_head(&pool->remote);
        req = ngx_queue_data(q, ngx_http_mcp_stdio_req_t, queue);
        ngx_http_mcp_stdio_session_drop(req);
    }
}


/* a session's child stopped, the store told (forget), the memory freed */

static void
ngx_http_mcp_stdio_session_free(ngx_http_mcp_stdio_sess_t *s,
    ngx_uint_t forget)
{
    ngx_str_t  sid;

    if (s->timer.timer_set) {
        ngx_del_timer(&s->timer);
    }

    if (s->child != NULL) {
        s->child->session = NULL;
        ngx_http_mcp_stdio_stop(s->child);
        s->child = NULL;
    }

    if (forget) {
        sid.data = s->sid;
        sid.len = NGX_HTTP_MCP_SESSION_ID_LEN;

        /* what it wrote last for other workers' streams is still read */
        (void) ngx_http_mcp_session_stdio_retire(s->pool->store, &sid,
                                                 ngx_cycle->log);
    }

    ngx_queue_remove(&s->queue);
    ngx_free(s);
}


/*
 * The worker was woken: its remote requests and GETs pull their
 * streams; its sessions take what other workers queued for their
 * children, and end when the store no longer has them (a DELETE
 * through another worker wakes the owner for this).
 */

void
ngx_http_mcp_stdio_session_wake(ngx_http_mcp_stdio_pool_t *pool)
{
    ngx_str_t                    sid;
    ngx_uint_t                   i;
    ngx_pool_t                  *tmp;
    ngx_array_t                  in;
    ngx_queue_t                 *q, *next;
    ngx_http_mcp_stdio_sess_t   *s;
    ngx_http_mcp_inbound_msg_t  *m;

    ngx_http_mcp_stdio_remote_pull_all(pool);

    if (ngx_queue_empty(&pool->sessions)) {
        return;
    }

    tmp = ngx_create_pool(4096, ngx_cycle->log);
    if (tmp == NULL) {
        return;
    }

    for (q = ngx_queue_head(&pool->sessions);
         q != ngx_queue_sentinel(&pool->sessions);
         q = next)
    {
        next = ngx_queue_next(q);
        s = ngx_queue_data(q, ngx_http_mcp_stdio_sess_t, queue);

        if (!s->ready || s->child == NULL) {
            continue;
        }

        sid.data = s->sid;
        sid.len = NGX_HTTP_MCP_SESSION_ID_LEN;

        if (ngx_array_init(&in, tmp, 4, sizeof(ngx_http_mcp_inbound_msg_t))
            != NGX_OK)
        {
            break;
        }

        if (ngx_http_mcp_session_inbound_take(s->pool->store, &sid, tmp, &in)
            == NGX_DECLINED)
        {
            ngx_http_mcp_stdio_session_end(s, "The session was deleted", 0);
            continue;
        }

        m = in.elts;

        for (i = 0; i < in.nelts; i++) {
            if (ngx_http_mcp_stdio_session_inbound(s, &m[i]) != NGX_OK) {
                /* the session ended: the rest has nowhere to go */
                break;
            }
        }

        ngx_reset_pool(tmp);
    }

    ngx_destroy_pool(tmp);
}


/*
 * One message another worker queued for a session's child (the owner
 * side).  NGX_ERROR: the session ended (its child's stdin failed).
 */

static ngx_int_t
ngx_http_mcp_stdio_session_inbound(ngx_http_mcp_stdio_sess_t *s,
    ngx_http_mcp_inbound_msg_t *m)
{
    cJSON                     *msg, *method, *params, *meta;
    ngx_int_t                  rc;
    ngx_str_t                  sid;
    ngx_uint_t                 child_id;
    ngx_queue_t               *q;
    ngx_http_mcp_stdio_req_t  *req;

    switch (m->kind) {

    case NGX_HTTP_MCP_INBOUND_GONE:

        sid.data = s->sid;
        sid.len = NGX_HTTP_MCP_SESSION_ID_LEN;

        if (ngx_http_mcp_session_stream_held(s->pool->store, &sid, m->stream)
            == NGX_OK)
        {
            /* resumed elsewhere since its client left: still wanted */
            return NGX_OK;
        }

        if (s->get != NULL && s->get->r == NULL
            && s->get->stream == m->stream)
        {
            ngx_http_mcp_stdio_session_record_free(s->get);
            return NGX_OK;
        }

        for (q = ngx_queue_head(&s->inflight);
             q != ngx_queue_sentinel(&s->inflight);
             q = ngx_queue_next(q))
        {
            req = ngx_queue_data(q, ngx_http_mcp_stdio_req_t, queue);

            if (req->r == NULL && req->stream == m->stream) {
                /* its client left: the child is told, as for a local one */
                child_id = req->child_id;
                ngx_http_mcp_stdio_session_record_free(req);

                return ngx_http_mcp_stdio_session_cancel_id(s, child_id);
            }
        }

        return NGX_OK;

    case NGX_HTTP_MCP_INBOUND_GET:

        if (s->get != NULL && s->get->r != NULL) {
            /* this worker's GET is open: the other gets nothing */
            return NGX_OK;
        }

        req = ngx_http_mcp_stdio_session_record(s, m->stream);
        if (req == NULL) {
            return NGX_OK;
        }

        if (s->get != NULL) {
            /* the newer GET takes the session's messages */
            ngx_http_mcp_stdio_session_record_free(s->get);
        }

        req->get = 1;
        req->accepts_sse = 1;
        req->sess = s;
        s->get = req;

        return NGX_OK;

    default:
        break;
    }

    msg = cJSON_ParseWithLength((char *) m->text.data, m->text.len);

    if (msg == NULL) {
        return NGX_OK;
    }

    if (m->kind == NGX_HTTP_MCP_INBOUND_MESSAGE) {
        rc = NGX_OK;

        if (ngx_http_mcp_stdio_session_note(s, msg) == NGX_OK) {
            rc = ngx_http_mcp_stdio_session_write(s->child, msg);
        }

        cJSON_Delete(msg);
        return rc;
    }

    /* a request: answered on its stream */

    method = ngx_http_mcp_json_get(msg, "method");

    if (!cJSON_IsString(method) || ngx_http_mcp_json_get(msg, "id") == NULL)
    {
        cJSON_Delete(msg);
        return NGX_OK;
    }

    req = ngx_http_mcp_stdio_session_record(s, m->stream);

    if (req == NULL) {
        cJSON_Delete(msg);
        return NGX_OK;
    }

    req->root = msg;
    req->id = cJSON_DetachItemFromObject(msg, "id");
    req->method = method->valuestring;
    req->accepts_sse = (m->kind == NGX_HTTP_MCP_INBOUND_REQUEST_SSE);

    params = ngx_http_mcp_json_get(msg, "params");
    meta = cJSON_IsObject(params) ? ngx_http_mcp_json_get(params, "_meta")
                                  : NULL;
    req->token = cJSON_IsObject(meta)
                 ? ngx_http_mcp_json_get(meta, "progressToken") : NULL;

    return ngx_http_mcp_stdio_session_request(s, req);
}


/* the owner's record of another worker's request or GET: heap memory */

static ngx_http_mcp_stdio_req_t *
ngx_http_mcp_stdio_session_record(ngx_http_mcp_stdio_sess_t *s,
    uint32_t stream)
{
    ngx_http_mcp_stdio_req_t  *req;

    req = ngx_calloc(sizeof(ngx_http_mcp_stdio_req_t)
                     + NGX_HTTP_MCP_SESSION_ID_LEN, ngx_cycle->log);
    if (req == NULL) {
        return NULL;
    }

    req->pool = s->pool;
    req->stream = stream;
    req->sid.data = (u_char *) (req + 1);
    req->sid.len = NGX_HTTP_MCP_SESSION_ID_LEN;
    ngx_memcpy(req->sid.data, s->sid, NGX_HTTP_MCP_SESSION_ID_LEN);

    return req;
}


static void
ngx_http_mcp_stdio_session_record_free(ngx_http_mcp_stdio_req_t *req)
{
    ngx_http_mcp_stdio_detach(req);

    cJSON_Delete(req->id);
    cJSON_Delete(req->root);
    ngx_free(req);
}


/*
 * The owner answers another worker's request: the answer, under the
 * client's id, ends the request's stream; the owner's record goes.
 */

static void
ngx_http_mcp_stdio_session_answer(ngx_http_mcp_stdio_req_t *req, cJSON *msg)
{
    char   *text;
    cJSON  *id;

    id = cJSON_Duplicate(req->id, 1);
    cJSON_DeleteItemFromObject(msg, "id");

    if (id != NULL && !cJSON_AddItemToObject(msg, "id", id)) {
        cJSON_Delete(id);
    }

    text = cJSON_PrintUnformatted(msg);

    if (text != NULL) {
        (void) ngx_http_mcp_session_send(req->pool->store, &req->sid,
                                         req->stream, (u_char *) text,
                                         ngx_strlen(text), 1, ngx_cycle->log);
        cJSON_free(text);
    }

    ngx_http_mcp_stdio_session_record_free(req);
}


static void
ngx_http_mcp_stdio_session_error(ngx_http_mcp_stdio_req_t *req,
    ngx_int_t code, const char *message)
{
    cJSON  *reply;

    reply = ngx_http_mcp_error_reply_at(ngx_cycle->log, NGX_LOG_INFO, NULL,
                                        req->id, code, message, NULL);
    if (reply == NULL) {
        ngx_http_mcp_stdio_session_record_free(req);
        return;
    }

    ngx_http_mcp_stdio_session_answer(req, reply);
    cJSON_Delete(reply);
}


/* an answer, or an error, to this worker's request or another's */

static void
ngx_http_mcp_stdio_session_respond(ngx_http_mcp_stdio_req_t *req, cJSON *msg)
{
    if (req->r == NULL) {
        ngx_http_mcp_stdio_session_answer(req, msg);
        return;
    }

    ngx_http_mcp_stdio_respond(req, msg);
}


static void
ngx_http_mcp_stdio_session_fail(ngx_http_mcp_stdio_req_t *req,
    ngx_int_t code, const char *message)
{
    if (req->r == NULL) {
        ngx_http_mcp_stdio_session_error(req, code, message);
        return;
    }

    ngx_http_mcp_stdio_fail(req, code, message);
}
