
/*
 * What crosses the gateway over several MCP servers (mcp_backend)
 * outside any call: while a client's GET stream (a 2025 session) is
 * open at an aggregating location, the gateway holds a GET stream open
 * at each backend that has a session for that client, and relays what
 * the backend says there to the client's GET stream, through the
 * session's event log (ngx_http_mcp_session_send()), as the module's
 * own notifications go: with their event ids, Last-Event-ID resumes and
 * any worker's delivery.
 *
 * Each event is strictly parsed and bounded by mcp_backend_max_size:
 *
 *   - notifications/message at the client's log level (read from the
 *     session as it comes, so that logging/setLevel counts at once),
 *     the three list_changed and resources/updated (resource URIs are
 *     not prefixed: the client knows them as they are) go to the client;
 *   - progress belongs to a request, and a GET stream has none: dropped,
 *     as any other notification;
 *   - a backend's request there (sampling, elicitation) has no call of
 *     the client's to carry it: the backend gets a JSON-RPC error;
 *   - a response, bad JSON, a duplicate member or an event over the
 *     bound ends that backend's stream for as long as the client's is
 *     open; more than NGX_HTTP_MCP_LISTEN_RATE events a second are
 *     dropped.
 *
 * The backend streams are background subrequests of the client's GET
 * (ngx_http_mcp_fetch()), so they hold the GET's
 * request: they are aborted when its stream ends for any reason (the
 * client left, DELETE, the session's end, a resume on another
 * connection, the worker's exit), from the edge's GET-stream hook
 * (ngx_http_mcp_hooks.get_stream), before the GET's last write; the GET's
 * resume, or a new GET, opens them again.  In a worker, the newest
 * GET stream of a session holds them (the older one's are closed first:
 * a backend may take one GET stream a session); across workers, the
 * newer one's is refused 409 until the older one's ends, and asks again
 * a second later, NGX_HTTP_MCP_LISTEN_CONFLICTS times at most.
 *
 * A backend whose GET stream ends while the client's is open is reopened
 * after a second, with the Last-Event-ID of its last event, so that
 * nothing sent meanwhile (a reload there tells its clients what changed)
 * is lost.  Each open costs the client's GET request a subrequest's
 * memory, so a client stream opens NGX_HTTP_MCP_LISTEN_OPENS at most;
 * then the client's stream ends, as at a graceful exit, and its client
 * resumes it on a fresh request.  405 or any other failure: not
 * relayed, nothing logged above debug.
 *
 * A stateless client's subscriptions/listen (2026-07-28) is fed the
 * same way (ngx_http_mcp_aggregate_feed()), from the backend sessions
 * opened for it (ngx_http_mcp_aggregate_subscribe.c): only the list
 * changes it asked for and resources/updated, each tagged with the
 * listen's id, on the listen's stream.  Those streams are subrequests
 * of the listen's POST, closed with its call.
 */


#include "ngx_http_mcp_aggregate.h"
#include "ngx_http_mcp_json.h"
#include "ngx_http_mcp_jsonrpc.h"
#include "ngx_http_mcp_store.h"
#include "ngx_http_mcp_call.h"
#include "ngx_http_mcp_core.h"
#include "ngx_http_mcp_subrequest.h"
#include "ngx_http_mcp_http.h"
#include "ngx_http_mcp_edge.h"


#define NGX_HTTP_MCP_LISTEN_DELAY   1000    /* ms before a reopen */
#define NGX_HTTP_MCP_LISTEN_OPENS   32      /* opens of a backend stream,
                                               at most, for one client
                                               stream: each one costs the
                                               GET's pool a subrequest */
#define NGX_HTTP_MCP_LISTEN_CONFLICTS  8    /* 409s in a row, at most */
#define NGX_HTTP_MCP_LISTEN_RATE    64      /* events relayed a second */


typedef struct ngx_http_mcp_listen_s  ngx_http_mcp_listen_t;


/* one backend's GET stream, for the client's */
typedef struct {
    ngx_http_mcp_listen_t         *listen;
    ngx_http_mcp_backend_t        *backend;
    ngx_str_t                      sid;         /* its session there */
    ngx_pool_t                    *pool;        /* the fetch's */
    ngx_http_mcp_fetch_state_t  *st;
    ngx_event_t                    reopen;
    ngx_uint_t                     opens;
    ngx_uint_t                     conflicts;   /* 409s in a row */
    ngx_uint_t                     answers;     /* errors sent it */
    ngx_str_t                      last;        /* its last event's id */
    u_char                         last_id[NGX_HTTP_MCP_AGGREGATE_EVENT_ID];
    ngx_msec_t                     second;      /* of the rate's count */
    ngx_uint_t                     events;      /* in that second */
    unsigned                       open:1;      /* 200, an SSE stream */
} ngx_http_mcp_listen_backend_t;


/* the client's GET stream's, in a pool of its own */
struct ngx_http_mcp_listen_s {
    ngx_queue_t                     queue;      /* the worker's */
    ngx_pool_t                     *pool;
    ngx_http_request_t             *request;
    ngx_shm_zone_t                 *zone;
    ngx_str_t                       sid;        /* the client's session */
    uint32_t                        stream;
    ngx_http_mcp_reqctx_t           rctx;       /* for the log level */
    ngx_http_mcp_aggregate_loc_conf_t  *conf;
    ngx_http_mcp_listen_backend_t  *backends;
    ngx_uint_t                      n;
    ngx_str_t                       subscription;  /* a listen's id, as
                                                      JSON; empty: a GET
                                                      stream's */
    ngx_uint_t                      lists;      /* the listen's */
};


static void ngx_http_mcp_aggregate_listen(ngx_http_request_t *r,
    ngx_str_t *sid, uint32_t id, ngx_uint_t open);
static void ngx_http_mcp_listen_close(ngx_http_request_t *r);
static void ngx_http_mcp_listen_open(ngx_http_mcp_listen_backend_t *lb);
static void ngx_http_mcp_listen_end(ngx_http_mcp_listen_backend_t *lb,
    ngx_uint_t again, const char *why);
static void ngx_http_mcp_listen_reopen(ngx_event_t *ev);
static void ngx_http_mcp_listen_event(ngx_event_t *ev);
static ngx_int_t ngx_http_mcp_listen_message(void *data, u_char *p,
    size_t len);
static void ngx_http_mcp_listen_notification(
    ngx_http_mcp_listen_backend_t *lb, const char *method, cJSON *json);
static void ngx_http_mcp_listen_tagged(ngx_http_mcp_listen_t *l,
    const char *method, cJSON *params);
static void ngx_http_mcp_listen_refuse(ngx_http_mcp_listen_backend_t *lb,
    cJSON *id);
static ngx_int_t ngx_http_mcp_listen_task_id(
    ngx_http_mcp_listen_backend_t *lb, cJSON *params);
static ngx_int_t ngx_http_mcp_listen_headers(
    ngx_http_mcp_listen_backend_t *lb, ngx_http_mcp_fetch_t *f,
    ngx_uint_t post);
static void ngx_http_mcp_listen_free(void *data);


/* the worker's client streams with backend streams */
static ngx_queue_t  ngx_http_mcp_listens;


ngx_int_t
ngx_http_mcp_aggregate_listen_init(ngx_conf_t *cf)
{
    ngx_queue_init(&ngx_http_mcp_listens);

    ngx_http_mcp_hooks.get_stream = ngx_http_mcp_aggregate_listen;

    return NGX_OK;
}


static void
ngx_http_mcp_aggregate_listen(ngx_http_request_t *r, ngx_str_t *sid,
    uint32_t id, ngx_uint_t open)
{
    ngx_str_t                           bsid;
    ngx_uint_t                          i, n;
    ngx_pool_t                         *pool;
    ngx_queue_t                        *q;
    ngx_http_mcp_ctx_t                 *ctx;
    ngx_http_mcp_listen_t              *l;
    ngx_http_mcp_backend_t             *b;
    ngx_http_mcp_loc_conf_t            *mlcf;
    ngx_http_mcp_listen_backend_t      *lb;
    ngx_http_mcp_aggregate_loc_conf_t  *alcf;

    if (!open) {
        ngx_http_mcp_listen_close(r);
        return;
    }

    alcf = ngx_http_get_module_loc_conf(r, ngx_http_mcp_aggregate_module);
    mlcf = ngx_http_get_module_loc_conf(r, ngx_http_mcp_module);
    ctx = ngx_http_get_module_ctx(r, ngx_http_mcp_module);

    if (alcf == NULL || alcf->backends == NULL || mlcf->zone == NULL
        || ctx == NULL
        || ngx_http_get_module_ctx(r, ngx_http_mcp_aggregate_module) != NULL)
    {
        return;
    }

    /* the session's older stream in this worker lets its backends go */

    for (q = ngx_queue_head(&ngx_http_mcp_listens);
         q != ngx_queue_sentinel(&ngx_http_mcp_listens);
         q = ngx_queue_next(q))
    {
        l = ngx_queue_data(q, ngx_http_mcp_listen_t, queue);

        if (l->zone == mlcf->zone
            && l->sid.len == sid->len
            && ngx_memcmp(l->sid.data, sid->data, sid->len) == 0)
        {
            ngx_http_mcp_listen_close(l->request);
            break;
        }
    }

    pool = ngx_create_pool(2048, r->connection->log);
    if (pool == NULL) {
        return;
    }

    l = ngx_pcalloc(pool, sizeof(ngx_http_mcp_listen_t));
    lb = ngx_pcalloc(pool, alcf->backends->nelts
                           * sizeof(ngx_http_mcp_listen_backend_t));
    if (l == NULL || lb == NULL) {
        goto failed;
    }

    l->pool = pool;
    l->request = r;
    l->zone = mlcf->zone;
    l->stream = id;
    l->rctx = ctx->rctx;
    l->conf = alcf;
    l->backends = lb;

    l->sid.data = ngx_pstrdup(pool, sid);
    l->sid.len = sid->len;

    if (l->sid.data == NULL) {
        goto failed;
    }

    b = alcf->backends->elts;
    n = 0;

    for (i = 0; i < alcf->backends->nelts; i++) {
        if (ngx_http_mcp_session_backend(mlcf->zone, sid, b[i].index, pool,
                                         &bsid)
            != NGX_OK
            || bsid.len == 0)
        {
            continue;
        }

        lb[n].listen = l;
        lb[n].backend = &b[i];
        lb[n].sid = bsid;
        lb[n].last.data = lb[n].last_id;
        lb[n].reopen.handler = ngx_http_mcp_listen_reopen;
        lb[n].reopen.data = &lb[n];
        lb[n].reopen.log = r->connection->log;
        lb[n].reopen.cancelable = 1;
        n++;
    }

    if (n == 0) {
        ngx_destroy_pool(pool);
        return;
    }

    l->n = n;

    ngx_http_set_ctx(r, l, ngx_http_mcp_aggregate_module);
    ngx_queue_insert_tail(&ngx_http_mcp_listens, &l->queue);

    for (i = 0; i < n; i++) {
        ngx_http_mcp_listen_open(&lb[i]);
    }

    return;

failed:

    ngx_destroy_pool(pool);
}


/* caps.<list>.listChanged is true: a backend's changes reach the client */

ngx_int_t
ngx_http_mcp_aggregate_list_changed(cJSON *caps, const char *list)
{
    cJSON  *obj;

    obj = cJSON_GetObjectItemCaseSensitive(caps, list);

    if (!cJSON_IsObject(obj)) {
        return NGX_ERROR;
    }

    cJSON_DeleteItemFromObjectCaseSensitive(obj, "listChanged");

    return (cJSON_AddTrueToObject(obj, "listChanged") != NULL) ? NGX_OK
                                                               : NGX_ERROR;
}


/* the client's stream ends: every backend's with it, at once */

static void
ngx_http_mcp_listen_close(ngx_http_request_t *r)
{
    ngx_uint_t              i;
    ngx_http_mcp_listen_t  *l;

    l = ngx_http_get_module_ctx(r, ngx_http_mcp_aggregate_module);
    if (l == NULL) {
        return;
    }

    ngx_http_set_ctx(r, NULL, ngx_http_mcp_aggregate_module);
    ngx_queue_remove(&l->queue);

    ngx_log_debug1(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "mcp gateway: stream %uD ends, and its backends' streams",
                   l->stream);

    for (i = 0; i < l->n; i++) {
        ngx_http_mcp_listen_end(&l->backends[i], 0, NULL);
    }

    ngx_destroy_pool(l->pool);
}


static void
ngx_http_mcp_listen_open(ngx_http_mcp_listen_backend_t *lb)
{
    ngx_pool_t             *pool;
    ngx_http_request_t     *r;
    ngx_http_mcp_ctx_t     *ctx;
    ngx_http_mcp_listen_t  *l;
    ngx_http_mcp_fetch_t    f;

    l = lb->listen;
    r = l->request;

    if (ngx_exiting) {
        return;
    }

    if (lb->opens++ >= NGX_HTTP_MCP_LISTEN_OPENS) {
        if (l->subscription.len) {
            /* a listen's: that backend's news stop */
            return;
        }

        /* the client's stream ends: its client resumes it afresh */
        ctx = ngx_http_get_module_ctx(r, ngx_http_mcp_module);

        ngx_log_debug1(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                       "mcp gateway: stream %uD opened its backends' "
                       "enough, ends", l->stream);

        if (ctx != NULL && ctx->stream != NULL) {
            /* this frees lb: nothing of it is touched after */
            ngx_http_mcp_stream_end_http(ctx->stream);
        }

        return;
    }

    ngx_memzero(&f, sizeof(ngx_http_mcp_fetch_t));

    if (ngx_http_mcp_listen_headers(lb, &f, 0) != NGX_OK) {
        return;
    }

    pool = ngx_create_pool(4096, r->connection->log);
    if (pool == NULL) {
        return;
    }

    f.method = NGX_HTTP_GET;
    ngx_str_set(&f.method_name, "GET");
    f.handler = ngx_http_mcp_listen_event;
    f.data = lb;
    f.stream = 1;

    lb->st = ngx_http_mcp_fetch(r, pool, r->connection->log,
                                                &f);
    if (lb->st == NULL) {
        ngx_destroy_pool(pool);
        return;
    }

    lb->pool = pool;
    lb->open = 0;

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "mcp gateway: stream %uD opens backend \"%V\"'s",
                   l->stream, &lb->backend->name);
}


/* the backend's stream ends; again: it opens once more, a little later */

static void
ngx_http_mcp_listen_end(ngx_http_mcp_listen_backend_t *lb, ngx_uint_t again,
    const char *why)
{
    if (why != NULL) {
        ngx_log_debug3(NGX_LOG_DEBUG_HTTP, lb->listen->request->connection->log,
                       0, "mcp gateway: backend \"%V\"'s stream ends: %s%s",
                       &lb->backend->name, why,
                       again ? ", opens again" : "");
    }

    if (lb->reopen.timer_set) {
        ngx_del_timer(&lb->reopen);
    }

    if (lb->st != NULL) {
        ngx_http_mcp_fetch_close(lb->st);
        lb->st = NULL;
    }

    if (lb->pool != NULL) {
        ngx_destroy_pool(lb->pool);
        lb->pool = NULL;
    }

    if (again && !ngx_exiting) {
        ngx_add_timer(&lb->reopen, NGX_HTTP_MCP_LISTEN_DELAY);
    }
}


static void
ngx_http_mcp_listen_reopen(ngx_event_t *ev)
{
    ngx_http_mcp_listen_open(ev->data);
}


/* news from a backend's stream: its header, events, its end */

static void
ngx_http_mcp_listen_event(ngx_event_t *ev)
{
    ngx_http_mcp_listen_backend_t *lb = ev->data;

    ngx_int_t                      rc;
    ngx_uint_t                     taken;
    ngx_http_mcp_fetch_state_t  *st;

    st = lb->st;

    if (st == NULL || st->gone) {
        /* the client's GET goes: its stream's end closes it all */
        return;
    }

    if (st->too_big) {
        ngx_http_mcp_listen_end(lb, 0, "an event over mcp_backend_max_size");
        return;
    }

    if (!st->header) {
        if (st->done) {
            ngx_http_mcp_listen_end(lb, 0, "failed");
        }

        return;
    }

    if (!lb->open) {
        if (st->status == NGX_HTTP_CONFLICT) {
            /* its stream for the session is still open: a resume raced */
            ngx_http_mcp_listen_end(lb,
                          ++lb->conflicts < NGX_HTTP_MCP_LISTEN_CONFLICTS,
                          "409");
            return;
        }

        if (st->status != NGX_HTTP_OK || !st->stream) {
            ngx_http_mcp_listen_end(lb, 0, "not an SSE stream");
            return;
        }

        lb->open = 1;
        lb->conflicts = 0;
    }

    rc = ngx_http_mcp_aggregate_sse(st, st->done,
                                    ngx_http_mcp_listen_message, lb,
                                    &lb->last, NULL, &taken);

    if (rc == NGX_DECLINED) {
        ngx_http_mcp_listen_end(lb, 0, "an event over mcp_backend_max_size");
        return;
    }

    if (rc != NGX_AGAIN) {
        ngx_http_mcp_listen_end(lb, 0, "a bad event");
        return;
    }

    if (st->done) {
        ngx_http_mcp_listen_end(lb, !st->failed, "it ended");
    }
}


/* one event's data: NGX_AGAIN for the next, NGX_ERROR ends the stream */

static ngx_int_t
ngx_http_mcp_listen_message(void *data, u_char *p, size_t len)
{
    ngx_http_mcp_listen_backend_t *lb = data;

    cJSON       *json, *method, *id;
    ngx_int_t    rc;
    ngx_msec_t   second;
    ngx_pool_t  *pool;
    const char  *failure;

    pool = ngx_create_pool(1024, lb->listen->request->connection->log);
    if (pool == NULL) {
        return NGX_ERROR;
    }

    rc = ngx_http_mcp_json_parse(pool, p, len, NULL, &json, &failure);

    ngx_destroy_pool(pool);

    if (rc != NGX_OK) {
        return NGX_ERROR;
    }

    method = cJSON_GetObjectItemCaseSensitive(json, "method");

    if (!cJSON_IsObject(json) || !cJSON_IsString(method)) {
        /* a response: there was no request on this stream */
        cJSON_Delete(json);
        return NGX_ERROR;
    }

    id = cJSON_GetObjectItemCaseSensitive(json, "id");

    second = ngx_current_msec / 1000;

    if (second != lb->second) {
        lb->second = second;
        lb->events = 0;
    }

    if (lb->events++ >= NGX_HTTP_MCP_LISTEN_RATE) {
        ngx_log_debug1(NGX_LOG_DEBUG_HTTP,
                       lb->listen->request->connection->log, 0,
                       "mcp gateway: backend \"%V\" floods, dropped",
                       &lb->backend->name);

    } else if (id != NULL) {
        ngx_http_mcp_listen_refuse(lb, id);

    } else {
        ngx_http_mcp_listen_notification(lb, method->valuestring, json);
    }

    cJSON_Delete(json);

    return NGX_AGAIN;
}


static void
ngx_http_mcp_listen_notification(ngx_http_mcp_listen_backend_t *lb,
    const char *method, cJSON *json)
{
    char                   *text;
    cJSON                  *params, *level, *msg;
    ngx_uint_t              i;
    ngx_log_t              *log;
    ngx_http_mcp_listen_t  *l;
    ngx_http_mcp_reqctx_t   rctx;

    static const char  *relayed[] = {
        "notifications/message",
        "notifications/tools/list_changed",
        "notifications/prompts/list_changed",
        "notifications/resources/list_changed",
        "notifications/resources/updated",
        "notifications/tasks/status",
        NULL
    };

    static ngx_uint_t  listed[] = {
        0, NGX_HTTP_MCP_LISTEN_TOOLS, NGX_HTTP_MCP_LISTEN_PROMPTS,
        NGX_HTTP_MCP_LISTEN_RESOURCES, 0, 0
    };

    l = lb->listen;
    log = l->request->connection->log;

    for (i = 0; relayed[i]; i++) {
        if (ngx_strcmp(method, relayed[i]) == 0) {
            break;
        }
    }

    params = cJSON_GetObjectItemCaseSensitive(json, "params");

    if (l->subscription.len && relayed[i] != NULL
        && (i == 0 || i == 5 || (listed[i] && !(l->lists & listed[i]))))
    {
        /* a listen hears no log, and only the list changes it asked for */
        return;
    }

    if (relayed[i] == NULL || (params != NULL && !cJSON_IsObject(params))) {
        ngx_log_debug2(NGX_LOG_DEBUG_HTTP, log, 0,
                       "mcp gateway: backend \"%V\"'s %s not relayed",
                       &lb->backend->name, method);
        return;
    }

    if (i == 0) {
        level = cJSON_GetObjectItemCaseSensitive(params, "level");

        if (!cJSON_IsString(level)) {
            return;
        }

        /* the client's level now: logging/setLevel may have come since */
        rctx = l->rctx;

        if (ngx_http_mcp_session_peek(l->zone, &l->sid, &rctx) != NGX_OK) {
            return;
        }

        i = ngx_http_mcp_log_level_parse(level->valuestring);

        if (i > NGX_HTTP_MCP_LOG_EMERGENCY || i < rctx.log_level) {
            return;
        }
    }

    if (l->subscription.len) {
        ngx_http_mcp_listen_tagged(l, method, params);
        return;
    }

    if (i == 5
        && ngx_http_mcp_listen_task_id(lb, params) != NGX_OK)
    {
        return;
    }

    /* what the client gets is what was understood, not the bytes */

    msg = cJSON_CreateObject();

    if (msg == NULL
        || cJSON_AddStringToObject(msg, "jsonrpc", "2.0") == NULL
        || cJSON_AddStringToObject(msg, "method", method) == NULL)
    {
        cJSON_Delete(msg);
        return;
    }

    if (params != NULL) {
        params = cJSON_DetachItemViaPointer(json, params);
        cJSON_AddItemToObject(msg, "params", params);
    }

    text = cJSON_PrintUnformatted(msg);
    cJSON_Delete(msg);

    if (text == NULL) {
        return;
    }

    ngx_log_debug3(NGX_LOG_DEBUG_HTTP, log, 0,
                   "mcp gateway: backend \"%V\"'s %s to stream %uD",
                   &lb->backend->name, method, l->stream);

    /* DECLINED: the client's stream is gone; its end closes this one */
    (void) ngx_http_mcp_session_send(l->zone, &l->sid, l->stream,
                                     (u_char *) text, ngx_strlen(text), 0,
                                     log);
    cJSON_free(text);
}


/* a task's status: its id, as the client knows it, has the prefix */

static ngx_int_t
ngx_http_mcp_listen_task_id(ngx_http_mcp_listen_backend_t *lb, cJSON *params)
{
    u_char                  *p, *full;
    cJSON                   *id;
    size_t                   len;
    ngx_http_mcp_backend_t  *b;

    b = lb->backend;
    id = cJSON_GetObjectItemCaseSensitive(params, "taskId");

    if (!cJSON_IsString(id)) {
        return NGX_ERROR;
    }

    len = ngx_strlen(id->valuestring);

    full = ngx_alloc(b->prefix.len + len + 1,
                     lb->listen->request->connection->log);
    if (full == NULL) {
        return NGX_ERROR;
    }

    p = ngx_cpymem(full, b->prefix.data, b->prefix.len);
    ngx_memcpy(p, id->valuestring, len + 1);

    id = cJSON_CreateString((char *) full);
    ngx_free(full);

    return cJSON_ReplaceItemInObjectCaseSensitive(params, "taskId", id)
           ? NGX_OK : NGX_ERROR;
}


/*
 * A backend's request on its GET stream: no call of the client's is
 * there to carry it to the client and bring the answer back, so the
 * backend is told so, in its session.
 */

static void
ngx_http_mcp_listen_refuse(ngx_http_mcp_listen_backend_t *lb, cJSON *id)
{
    char                          *text;
    cJSON                         *msg, *error;
    ngx_http_request_t            *r;
    ngx_http_mcp_fetch_t   f;

    r = lb->listen->request;

    if ((!cJSON_IsString(id) && !cJSON_IsNumber(id))
        || lb->answers++ >= NGX_HTTP_MCP_AGGREGATE_ASKS)
    {
        return;
    }

    msg = cJSON_CreateObject();
    error = cJSON_CreateObject();

    if (msg == NULL || error == NULL
        || cJSON_AddStringToObject(msg, "jsonrpc", "2.0") == NULL
        || cJSON_AddNumberToObject(error, "code",
                                   NGX_HTTP_MCP_METHOD_NOT_FOUND)
           == NULL
        || cJSON_AddStringToObject(error, "message",
                                   "The gateway relays no request of a "
                                   "server outside a call")
           == NULL)
    {
        cJSON_Delete(msg);
        cJSON_Delete(error);
        return;
    }

    cJSON_AddItemToObject(msg, "id", cJSON_Duplicate(id, 1));
    cJSON_AddItemToObject(msg, "error", error);

    text = cJSON_PrintUnformatted(msg);
    cJSON_Delete(msg);

    if (text == NULL) {
        return;
    }

    ngx_memzero(&f, sizeof(ngx_http_mcp_fetch_t));

    f.body.len = ngx_strlen(text);
    f.body.data = ngx_pnalloc(r->pool, f.body.len);

    if (f.body.data != NULL
        && ngx_http_mcp_listen_headers(lb, &f, 1) == NGX_OK)
    {
        ngx_memcpy(f.body.data, text, f.body.len);
        f.method = NGX_HTTP_POST;
        ngx_str_set(&f.method_name, "POST");

        ngx_log_debug1(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                       "mcp gateway: backend \"%V\"'s request refused",
                       &lb->backend->name);

        (void) ngx_http_mcp_fetch_send(r, &f);
    }

    cJSON_free(text);
}


/* to the backend's location, in its session; post: a message, else GET */

static ngx_int_t
ngx_http_mcp_listen_headers(ngx_http_mcp_listen_backend_t *lb,
    ngx_http_mcp_fetch_t *f, ngx_uint_t post)
{
    ngx_uint_t                n;
    ngx_pool_t               *pool;
    ngx_table_elt_t          *h;
    ngx_http_mcp_backend_t   *b;
    ngx_http_mcp_loc_conf_t  *mlcf;

    b = lb->backend;
    pool = lb->listen->request->pool;
    mlcf = ngx_http_get_module_loc_conf(lb->listen->request,
                                        ngx_http_mcp_module);

    h = ngx_pcalloc(pool, 4 * sizeof(ngx_table_elt_t));
    if (h == NULL) {
        return NGX_ERROR;
    }

    n = 0;

    if (post) {
        if (ngx_http_mcp_aggregate_header(pool, &h[n++], "Accept", "accept",
                (u_char *) "application/json, text/event-stream",
                sizeof("application/json, text/event-stream") - 1)
            != NGX_OK)
        {
            return NGX_ERROR;
        }

    } else if (ngx_http_mcp_aggregate_header(pool, &h[n++], "Accept",
                   "accept", (u_char *) "text/event-stream",
                   sizeof("text/event-stream") - 1)
               != NGX_OK)
    {
        return NGX_ERROR;
    }

    if (ngx_http_mcp_aggregate_header(pool, &h[n++], "Mcp-Session-Id",
                                      "mcp-session-id", lb->sid.data,
                                      lb->sid.len)
        != NGX_OK)
    {
        return NGX_ERROR;
    }

    if (ngx_http_mcp_aggregate_version(mlcf->zone, b)
        && ngx_http_mcp_aggregate_header(pool, &h[n++],
                                         "MCP-Protocol-Version",
                                         "mcp-protocol-version",
                                         b->version, b->version_len)
           != NGX_OK)
    {
        return NGX_ERROR;
    }

    /* a reopened stream resumes where the last one was (a reload there) */
    if (!post && lb->last.len
        && ngx_http_mcp_aggregate_header(pool, &h[n++], "Last-Event-ID",
                                         "last-event-id", lb->last.data,
                                         lb->last.len)
           != NGX_OK)
    {
        return NGX_ERROR;
    }

    f->uri = b->uri;
    f->headers = h;
    f->nheaders = n;
    f->max = lb->listen->conf->max_size;

    return NGX_OK;
}


/*
 * A notification to a listen's stream, as the module's own go there: its
 * params with the listen's id as _meta's subscriptionId (the backend's
 * own _meta left out).
 */

static void
ngx_http_mcp_listen_tagged(ngx_http_mcp_listen_t *l, const char *method,
    cJSON *params)
{
    char       *text;
    u_char     *data;
    size_t      len;
    ngx_str_t   members;

    ngx_str_null(&members);
    text = NULL;

    if (params != NULL) {
        cJSON_DeleteItemFromObjectCaseSensitive(params, "_meta");

        if (params->child != NULL) {
            text = cJSON_PrintUnformatted(params);
            if (text == NULL) {
                return;
            }

            /* its members: {...} without the braces */
            members.data = (u_char *) text + 1;
            members.len = ngx_strlen(text) - 2;
        }
    }

    len = ngx_http_mcp_jsonrpc_notification(NULL, method, &l->subscription,
                                            members.len ? &members : NULL);

    data = ngx_alloc(len, l->request->connection->log);

    if (data != NULL) {
        (void) ngx_http_mcp_jsonrpc_notification(data, method,
                                                 &l->subscription,
                                                 members.len ? &members
                                                             : NULL);

        /* DECLINED: the listen's stream is gone; its call's end closes us */
        (void) ngx_http_mcp_session_send(l->zone, &l->sid, l->stream, data,
                                         len, 0,
                                         l->request->connection->log);
        ngx_free(data);
    }

    if (text != NULL) {
        cJSON_free(text);
    }
}


/* the backends' GET streams in the listen's sessions, for the call */

ngx_int_t
ngx_http_mcp_aggregate_feed(ngx_http_mcp_call_t *call,
    ngx_http_mcp_aggregate_loc_conf_t *conf, ngx_str_t *sids,
    ngx_uint_t lists, ngx_str_t *id)
{
    ngx_uint_t                      i, n;
    ngx_pool_t                     *pool;
    ngx_http_cleanup_t             *cln;
    ngx_http_request_t             *r;
    ngx_http_mcp_listen_t          *l;
    ngx_http_mcp_backend_t         *b;
    ngx_http_mcp_listen_backend_t  *lb;

    r = ngx_http_mcp_call_http_request(call);
    b = conf->backends->elts;

    if (r == NULL) {
        return NGX_ERROR;
    }

    pool = ngx_create_pool(2048, r->connection->log);
    if (pool == NULL) {
        return NGX_ERROR;
    }

    l = ngx_pcalloc(pool, sizeof(ngx_http_mcp_listen_t));
    lb = ngx_pcalloc(pool, conf->backends->nelts
                           * sizeof(ngx_http_mcp_listen_backend_t));
    cln = ngx_http_cleanup_add(r, 0);

    if (l == NULL || lb == NULL || cln == NULL) {
        ngx_destroy_pool(pool);
        return NGX_ERROR;
    }

    l->pool = pool;
    l->request = r;
    l->zone = ngx_http_mcp_call_conf(call)->zone;
    l->stream = call->stream;
    l->rctx = *call->rctx;
    l->conf = conf;
    l->backends = lb;
    l->lists = lists;

    l->sid.data = ngx_pstrdup(pool, &call->rctx->session_id);
    l->sid.len = call->rctx->session_id.len;
    l->subscription.data = ngx_pstrdup(pool, id);
    l->subscription.len = id->len;

    if (l->sid.data == NULL || l->subscription.data == NULL) {
        ngx_destroy_pool(pool);
        return NGX_ERROR;
    }

    n = 0;

    for (i = 0; i < conf->backends->nelts; i++) {
        if (sids[i].len == 0) {
            continue;
        }

        lb[n].listen = l;
        lb[n].backend = &b[i];
        lb[n].sid.data = ngx_pstrdup(pool, &sids[i]);
        lb[n].sid.len = sids[i].len;
        lb[n].last.data = lb[n].last_id;
        lb[n].reopen.handler = ngx_http_mcp_listen_reopen;
        lb[n].reopen.data = &lb[n];
        lb[n].reopen.log = r->connection->log;
        lb[n].reopen.cancelable = 1;

        if (lb[n].sid.data == NULL) {
            ngx_destroy_pool(pool);
            return NGX_ERROR;
        }

        n++;
    }

    l->n = n;

    /*
     * the POST's end closes them (not the worker's queue: no GET's):
     * the call may outlive its request a moment, the streams may not
     */
    cln->handler = ngx_http_mcp_listen_free;
    cln->data = l;

    for (i = 0; i < n; i++) {
        ngx_http_mcp_listen_open(&lb[i]);
    }

    return NGX_OK;
}


static void
ngx_http_mcp_listen_free(void *data)
{
    ngx_http_mcp_listen_t *l = data;

    ngx_uint_t  i;

    for (i = 0; i < l->n; i++) {
        ngx_http_mcp_listen_end(&l->backends[i], 0, NULL);

        /* the listen's own session there: its DELETE with the next request */
        ngx_http_mcp_aggregate_park(l->zone, l->backends[i].backend,
                                    &l->backends[i].sid);
    }

    ngx_destroy_pool(l->pool);
}
