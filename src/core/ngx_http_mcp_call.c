
/*
 * The life of a call: one JSON-RPC request, from dispatch to its
 * response.  A call has its own pool and owns its message, so it can
 * outlive the POST that brought it: when the client disconnects, or the
 * server ends the response early (SEP-1699), the call goes on and its
 * response waits in the session's event log for the client to resume.
 *
 * A call that is still running after dispatch is "live": it is on this
 * worker's list and has a wait record in the session, through which a
 * notifications/cancelled arriving at any worker reaches it.  Its
 * requests to the client (sampling, elicitation) have wait records too;
 * the client's answer may arrive at any worker, which stores it in the
 * record and wakes this one.
 */


#include "ngx_http_mcp_core.h"
#include "ngx_http_mcp_json.h"
#include "ngx_http_mcp_jsonrpc.h"
#include "ngx_http_mcp_store.h"
#include "ngx_http_mcp_call.h"
#include "ngx_http_mcp_metrics.h"
#include "ngx_http_mcp_guard.h"
#include "ngx_http_mcp_trace.h"


#define NGX_HTTP_MCP_CALL_POOL_SIZE     2048

/* an error's correlation id: made, 16; the most of a given one
   ($request_id has 32), 64 */
#define NGX_HTTP_MCP_CORRELATION_LEN    16
#define NGX_HTTP_MCP_CORRELATION_MAX    64

/* what an error's log line repeats of its message, escaped */
#define NGX_HTTP_MCP_LOG_MESSAGE_LEN    1024


typedef struct {
    uint64_t                   id;
    ngx_http_mcp_call_t       *call;
    ngx_http_mcp_answer_pt     handler;
    void                      *data;
    ngx_event_t                timer;
    cJSON                     *held;        /* not sent before the client's
                                               notifications/initialized */
    unsigned                   active:1;
} ngx_http_mcp_request_t;


static ngx_http_mcp_auth_t *ngx_http_mcp_call_auth_copy(ngx_pool_t *pool,
    ngx_http_mcp_auth_t *auth);
static void ngx_http_mcp_call_error_at(ngx_http_mcp_call_t *call,
    ngx_uint_t level, ngx_int_t code, const char *message, cJSON *data);
static void ngx_http_mcp_call_end(ngx_http_mcp_call_t *call, cJSON *reply);
static void ngx_http_mcp_call_free(ngx_http_mcp_call_t *call);
static ngx_int_t ngx_http_mcp_call_result_type(ngx_http_mcp_call_t *call,
    cJSON *result);
static void ngx_http_mcp_call_live(ngx_http_mcp_call_t *call);
static void ngx_http_mcp_call_unwait(ngx_http_mcp_call_t *call);
static ngx_int_t ngx_http_mcp_call_check(ngx_http_mcp_call_t *call);
static void ngx_http_mcp_call_cancelled(ngx_http_mcp_call_t *call);
static ngx_int_t ngx_http_mcp_call_answer(ngx_http_mcp_request_t *req,
    u_char *text, size_t len);
static void ngx_http_mcp_request_timeout(ngx_event_t *ev);
static void ngx_http_mcp_request_cancel(ngx_http_mcp_request_t *req);
static ngx_int_t ngx_http_mcp_request_send(ngx_http_mcp_call_t *call,
    cJSON *message);
static ngx_int_t ngx_http_mcp_call_release(ngx_http_mcp_call_t *call);
static void ngx_http_mcp_call_missing(ngx_http_mcp_call_t *call,
    const char *cap, const char *mode);
static ngx_int_t ngx_http_mcp_call_send(ngx_http_mcp_call_t *call,
    cJSON *message, ngx_uint_t response);
static u_char *ngx_http_mcp_call_id_text(ngx_http_mcp_call_t *call,
    size_t *len);
static ngx_int_t ngx_http_mcp_call_raw_token(ngx_http_mcp_call_t *call);
static ngx_int_t ngx_http_mcp_call_param_headers(ngx_http_mcp_call_t *call,
    ngx_array_t *from);
static cJSON *ngx_http_mcp_message(cJSON *id, const char *method,
    cJSON *params);


/* this worker's live calls: the store asks how many (calls_live) */
static ngx_queue_t  ngx_http_mcp_calls;


/* at worker start */

void
ngx_http_mcp_calls_init(void)
{
    ngx_queue_init(&ngx_http_mcp_calls);
}


/*
 * The hooks' calls_live: a graceful exit waits for none to be left, and
 * its timeout tells how many were; asked at exit only, so counted here.
 */

ngx_uint_t
ngx_http_mcp_calls_live(void)
{
    ngx_uint_t    n;
    ngx_queue_t  *q;

    n = 0;

    for (q = ngx_queue_head(&ngx_http_mcp_calls);
         q != ngx_queue_sentinel(&ngx_http_mcp_calls);
         q = ngx_queue_next(q))
    {
        n++;
    }

    return n;
}


/*
 * Runs a call's handler (dispatch, for a request of a POST).  A call
 * ended inside it is freed here; one still running becomes live.
 */

void
ngx_http_mcp_call_run(ngx_http_mcp_call_t *call,
    ngx_http_mcp_handler_pt handler)
{
    ngx_int_t  rc;

    /* running: a call ended during dispatch is freed here, not there */
    call->running = 1;

    rc = handler(call);

    if (rc != NGX_OK && !call->done) {
        ngx_http_mcp_call_error(call, NGX_HTTP_MCP_INTERNAL_ERROR,
                                "Internal error");
    }

    call->running = 0;

    if (call->done) {
        ngx_log_debug1(NGX_LOG_DEBUG_HTTP, call->log, 0,
                       "mcp call \"%V\" done in dispatch", &call->method);
        ngx_http_mcp_call_free(call);
        return;
    }

    ngx_log_debug1(NGX_LOG_DEBUG_HTTP, call->log, 0,
                   "mcp call \"%V\" goes on after dispatch", &call->method);

    ngx_http_mcp_call_live(call);
}


/*
 * A call for a request: its own pool and log, a copy of what the caller
 * is (rctx), and its message, which it owns from now on (a numeric
 * progress token's text is on its node: the scan kept it).
 */

ngx_http_mcp_call_t *
ngx_http_mcp_call_create(ngx_log_t *clog, void *conf,
    ngx_http_mcp_reqctx_t *from, ngx_http_mcp_msg_t *msg, cJSON *message)
{
    cJSON                  *meta;
    ngx_log_t              *log;
    ngx_uint_t              dropped;
    ngx_pool_t             *pool;
    ngx_http_mcp_call_t    *call;
    ngx_http_mcp_trace_t    trace;
    ngx_http_mcp_reqctx_t  *rctx;

    pool = ngx_create_pool(NGX_HTTP_MCP_CALL_POOL_SIZE, clog);
    if (pool == NULL) {
        cJSON_Delete(message);
        return NULL;
    }

    /* the connection's log dies with the connection; the call's may not */
    log = ngx_palloc(pool, sizeof(ngx_log_t));
    call = ngx_pcalloc(pool, sizeof(ngx_http_mcp_call_t));
    rctx = ngx_palloc(pool, sizeof(ngx_http_mcp_reqctx_t));

    if (log == NULL || call == NULL || rctx == NULL) {
        ngx_destroy_pool(pool);
        cJSON_Delete(message);
        return NULL;
    }

    *log = *clog;
    log->handler = NULL;
    log->data = NULL;
    log->action = NULL;
    pool->log = log;

    *rctx = *from;

    rctx->session_id.data = ngx_pstrdup(pool, &from->session_id);
    rctx->client_name.data = ngx_pstrdup(pool, &from->client_name);
    rctx->subject.data = ngx_pstrdup(pool, &from->subject);

    /* the caller's auth dies with its request: a copy of what it allows */
    rctx->auth = (from->auth != NULL)
                 ? ngx_http_mcp_call_auth_copy(pool, from->auth) : NULL;

    call->pool = pool;
    call->log = log;
    call->rctx = rctx;
    call->conf = conf;
    call->message = message;
    call->id = msg->id;
    msg->id = NULL;
    call->method = msg->method;
    call->params = msg->params;
    call->started = ngx_http_mcp_metrics_start(conf);

    if ((from->session_id.len && rctx->session_id.data == NULL)
        || (from->client_name.len && rctx->client_name.data == NULL)
        || (from->subject.len && rctx->subject.data == NULL)
        || (from->auth != NULL && rctx->auth == NULL))
    {
        ngx_http_mcp_call_free(call);
        return NULL;
    }

    meta = ngx_http_mcp_json_get(msg->params, "_meta");
    call->progress_token = ngx_http_mcp_json_get(meta, "progressToken");

    /* the edge left a well-formed trace there, or none */
    dropped = 0;
    (void) ngx_http_mcp_w3c_meta(meta, &trace, &dropped);

    if (ngx_http_mcp_trace_copy(pool, &call->trace, &trace) != NGX_OK) {
        ngx_http_mcp_call_free(call);
        return NULL;
    }

    if ((cJSON_IsNumber(call->progress_token)
         && ngx_http_mcp_call_raw_token(call) != NGX_OK)
        || (msg->param_headers != NULL
            && ngx_http_mcp_call_param_headers(call, msg->param_headers)
               != NGX_OK))
    {
        ngx_http_mcp_call_free(call);
        return NULL;
    }

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, log, 0,
                   "mcp call \"%V\" created in session %s", &call->method,
                   ngx_http_mcp_session_log_id(rctx->session_id.data,
                                               rctx->session_id.len));

    return call;
}


/*
 * What the caller may do, copied into pool for a call that may outlive
 * the request the token came with.
 */

static ngx_http_mcp_auth_t *
ngx_http_mcp_call_auth_copy(ngx_pool_t *pool, ngx_http_mcp_auth_t *auth)
{
    ngx_str_t            *from, *to;
    ngx_uint_t            i;
    ngx_http_mcp_auth_t  *copy;

    copy = ngx_palloc(pool, sizeof(ngx_http_mcp_auth_t));
    if (copy == NULL) {
        return NULL;
    }

    *copy = *auth;

    copy->subject.data = ngx_pstrdup(pool, &auth->subject);
    copy->issuer.data = ngx_pstrdup(pool, &auth->issuer);
    copy->role.data = ngx_pstrdup(pool, &auth->role);
    copy->result.data = ngx_pstrdup(pool, &auth->result);

    if (copy->subject.data == NULL || copy->issuer.data == NULL
        || copy->role.data == NULL || copy->result.data == NULL)
    {
        return NULL;
    }

    if (auth->scopes == NULL) {
        return copy;
    }

    copy->scopes = ngx_array_create(pool, ngx_max(auth->scopes->nelts, 1),
                                    sizeof(ngx_str_t));
    if (copy->scopes == NULL) {
        return NULL;
    }

    from = auth->scopes->elts;

    for (i = 0; i < auth->scopes->nelts; i++) {
        to = ngx_array_push(copy->scopes);
        if (to == NULL) {
            return NULL;
        }

        to->len = from[i].len;
        to->data = ngx_pstrdup(pool, &from[i]);

        if (to->data == NULL) {
            return NULL;
        }
    }

    return copy;
}


/* a 2026-07-28 result says what it is: "complete" unless it says so */

static ngx_int_t
ngx_http_mcp_call_result_type(ngx_http_mcp_call_t *call, cJSON *result)
{
    if (!ngx_http_mcp_call_stateless(call)
        || ngx_http_mcp_json_get(result, "resultType") != NULL)
    {
        return NGX_OK;
    }

    return ngx_http_mcp_json_add_literal(result, "resultType", "complete");
}


void
ngx_http_mcp_call_result(ngx_http_mcp_call_t *call, cJSON *result)
{
    cJSON  *reply;

    if (call->done) {
        cJSON_Delete(result);
        return;
    }

    /*
     * the guardrails read the result the finish hook made; a blocked one
     * is replaced whole, so a 2026-07-28 result's resultType and _meta
     * are (re)made after them
     */

    if (result == NULL
        || ngx_http_mcp_call_result_type(call, result) != NGX_OK
        || (call->finish != NULL && call->finish(call, result) != NGX_OK)
        || ngx_http_mcp_guard_call_result(call, result) != NGX_OK
        || ngx_http_mcp_call_result_type(call, result) != NGX_OK
        || (ngx_http_mcp_call_stateless(call)
            && ngx_http_mcp_server_meta(result) != NGX_OK))
    {
        cJSON_Delete(result);
        ngx_http_mcp_call_error(call, NGX_HTTP_MCP_INTERNAL_ERROR,
                                "Internal error");
        return;
    }

    reply = ngx_http_mcp_jsonrpc_result(call->id, result);

    if (reply == NULL) {
        ngx_http_mcp_call_error(call, NGX_HTTP_MCP_INTERNAL_ERROR,
                                "Internal error");
        return;
    }

    ngx_http_mcp_call_end(call, reply);
}


/*
 * Who we are, in the "_meta" of every 2026-07-28 result (SHOULD, the
 * spec's #3002): a result's _meta gets a serverInfo beside what it has,
 * and one that names a serverInfo already (a task's result kept with
 * it) keeps its own.
 */

ngx_int_t
ngx_http_mcp_server_meta(cJSON *result)
{
    cJSON  *meta;

    meta = ngx_http_mcp_json_get(result, "_meta");

    if (meta == NULL) {
        meta = cJSON_CreateObject();

        if (meta == NULL || !cJSON_AddItemToObjectCS(result, "_meta", meta)) {
            cJSON_Delete(meta);
            return NGX_ERROR;
        }

    } else if (!cJSON_IsObject(meta)
               || ngx_http_mcp_json_get(meta, NGX_HTTP_MCP_SERVER_INFO_META)
                  != NULL)
    {
        return NGX_OK;
    }

    return ngx_http_mcp_server_info(meta, NGX_HTTP_MCP_SERVER_INFO_META);
}


/*
 * Who we are: initialize's serverInfo, the results' _meta serverInfo.
 * A reference to one tree made once a process (key a literal): every
 * 2026-07-28 result has it, and pays one node for it, not a copy of
 * the tree.  A reference's children are never freed by its owner.
 */

ngx_int_t
ngx_http_mcp_server_info(cJSON *parent, const char *key)
{
    cJSON  *ref;

    static cJSON  *info;

    if (info == NULL) {
        info = cJSON_CreateObject();

        if (info == NULL
            || cJSON_AddStringToObject(info, "name", "ngx_http_mcp_module")
               == NULL
            || cJSON_AddStringToObject(info, "version",
                                       NGX_HTTP_MCP_MODULE_VERSION) == NULL)
        {
            cJSON_Delete(info);
            info = NULL;
            return NGX_ERROR;
        }
    }

    ref = cJSON_CreateObjectReference(info->child);

    if (ref == NULL || !cJSON_AddItemToObjectCS(parent, key, ref)) {
        cJSON_Delete(ref);
        return NGX_ERROR;
    }

    return NGX_OK;
}


void
ngx_http_mcp_call_error(ngx_http_mcp_call_t *call, ngx_int_t code,
    const char *message)
{
    ngx_http_mcp_call_error_data(call, code, message, NULL);
}


void
ngx_http_mcp_call_error_data(ngx_http_mcp_call_t *call, ngx_int_t code,
    const char *message, cJSON *data)
{
    ngx_http_mcp_call_error_at(call, ngx_http_mcp_error_level(code), code,
                               message, data);
}


/*
 * An error that is not the module's own, passed on with its code: the
 * client's answer to a request of the call's (its -32603 is its own
 * failure), or a task's outcome given again (logged when it happened).
 * Logged at "info" whatever the code.
 */

void
ngx_http_mcp_call_error_passed(ngx_http_mcp_call_t *call, ngx_int_t code,
    const char *message, cJSON *data)
{
    ngx_http_mcp_call_error_at(call, NGX_LOG_INFO, code, message, data);
}


static void
ngx_http_mcp_call_error_at(ngx_http_mcp_call_t *call, ngx_uint_t level,
    ngx_int_t code, const char *message, cJSON *data)
{
    cJSON  *reply;

    if (call->done) {
        cJSON_Delete(data);
        return;
    }

    reply = ngx_http_mcp_error_reply_at(call->log, level,
                                        ngx_http_mcp_call_correlation(call, 0),
                                        call->id, code, message,
                                        &call->method);

    if (reply != NULL
        && ngx_http_mcp_jsonrpc_error_data(reply, data) != NGX_OK)
    {
        cJSON_Delete(reply);
        reply = NULL;

    } else if (reply == NULL) {
        cJSON_Delete(data);
    }

    ngx_http_mcp_call_end(call, reply);
}


/*
 * The correlation id of the call's errors: the $request_id of the POST
 * that brought it, the id of that POST's access log line.  nginx makes
 * it when first asked (16 random bytes), so it is asked for an error
 * only; a POST that goes (going: 1) leaves it to its running calls when
 * it was made (for its log line): else their errors get a random one.
 * Kept in the call's pool.
 */

ngx_str_t *
ngx_http_mcp_call_correlation(ngx_http_mcp_call_t *call, ngx_uint_t going)
{
    ngx_str_t  rid;

    if (call->correlation.len == 0 && call->request != NULL
        && ngx_http_mcp_request_id(call->request, !going, &rid)
           == NGX_OK)
    {
        call->correlation.data = ngx_pstrdup(call->pool, &rid);
        call->correlation.len = call->correlation.data ? rid.len : 0;
    }

    return &call->correlation;
}


void
ngx_http_mcp_call_resource_not_found(ngx_http_mcp_call_t *call)
{
    cJSON  *data;

    if (!ngx_http_mcp_call_stateless(call)) {
        ngx_http_mcp_call_error(call, NGX_HTTP_MCP_RESOURCE_NOT_FOUND,
                                "Resource not found");
        return;
    }

    data = cJSON_CreateObject();

    if (data != NULL
        && cJSON_AddStringToObject(data, "uri", (char *) call->uri.data)
           == NULL)
    {
        cJSON_Delete(data);
        data = NULL;
    }

    ngx_http_mcp_call_error_data(call, NGX_HTTP_MCP_INVALID_PARAMS,
                                 "Resource not found", data);
}


/*
 * The response goes into the POST's JSON reply while there is one (its
 * edge takes it), else to the call's stream.  reply is NULL when memory
 * ran out or the call was cancelled.
 */

static void
ngx_http_mcp_call_end(ngx_http_mcp_call_t *call, cJSON *reply)
{
    call->done = 1;

    ngx_http_mcp_metrics_call(call, call->started, reply);

    if (call->divert != NULL && call->divert(call, reply) == NGX_OK) {
        cJSON_Delete(reply);

        if (!call->running) {
            ngx_http_mcp_call_free(call);
        }

        return;
    }

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, call->log, 0,
                   "mcp call \"%V\" ended, %s", &call->method,
                   call->ctx ? "its POST is there" : "by its stream");

    if (call->ctx != NULL && call->edge->end(call, reply) == NGX_OK) {
        /* the POST's JSON reply has it */
        if (!call->running) {
            ngx_http_mcp_call_free(call);
        }

        return;
    }

    if (call->stream == 0) {
        /* the client left before the reply became a stream */
        ngx_log_debug1(NGX_LOG_DEBUG_HTTP, call->log, 0,
                       "mcp call \"%V\" ended, nobody to tell",
                       &call->method);

    } else if (ngx_http_mcp_call_send(call, reply, 1) == NGX_ERROR) {
        ngx_log_error(NGX_LOG_ERR, call->log, 0,
                      "mcp: the response to \"%V\" was lost",
                      &call->method);
    }

    cJSON_Delete(reply);

    if (!call->running) {
        ngx_http_mcp_call_free(call);
    }
}


static void
ngx_http_mcp_call_free(ngx_http_mcp_call_t *call)
{
    ngx_uint_t                i;
    ngx_http_mcp_request_t  **req;

    if (call->live) {
        ngx_queue_remove(&call->queue);
        ngx_http_mcp_call_unwait(call);

        /* the last one lets an exiting worker go */
        ngx_http_mcp_ipc_drained();
    }

    if (call->requests) {
        req = call->requests->elts;

        for (i = 0; i < call->requests->nelts; i++) {
            if (req[i]->timer.timer_set) {
                ngx_del_timer(&req[i]->timer);
            }

            cJSON_Delete(req[i]->held);
        }
    }

    cJSON_Delete(call->message);
    cJSON_Delete(call->id);
    cJSON_Delete(call->token_raw);
    cJSON_Delete(call->state);

    /* the handler's cleanup handlers remove its timers */
    ngx_destroy_pool(call->pool);
}


/* a call still running after dispatch can be cancelled from any worker */

static void
ngx_http_mcp_call_live(ngx_http_mcp_call_t *call)
{
    u_char                   *id;
    size_t                    len;
    uint64_t                  call_wait;
    ngx_http_mcp_loc_conf_t  *mlcf;

    if (call->live) {
        return;
    }

    call->live = 1;
    ngx_queue_insert_tail(&ngx_http_mcp_calls, &call->queue);

    if (call->rctx->session_id.len == 0) {
        /* stateless, without a stream: nothing can cancel it by id */
        return;
    }

    id = ngx_http_mcp_call_id_text(call, &len);
    if (id == NULL) {
        return;
    }

    mlcf = call->conf;
    call_wait = 0;

    if (ngx_http_mcp_session_wait(mlcf->zone, &call->rctx->session_id,
                                  &call_wait, id, len)
        != NGX_OK)
    {
        ngx_log_error(NGX_LOG_INFO, call->log, 0,
                      "mcp: call \"%V\" cannot be cancelled: no room in the "
                      "zone", &call->method);
        return;
    }

    if (call->stream) {
        (void) ngx_http_mcp_session_wait_stream(mlcf->zone,
                                                &call->rctx->session_id,
                                                id, len, call->stream);
    }
}


/*
 * The call answers on a stream from now on.  A live call tells the zone,
 * so that another worker answers it with an error should this one die
 * (see src/store/ngx_http_mcp_session_lost.c).
 */

void
ngx_http_mcp_call_set_stream(ngx_http_mcp_call_t *call, uint32_t stream)
{
    u_char                   *id;
    size_t                    len;
    ngx_http_mcp_loc_conf_t  *mlcf;

    call->stream = stream;

    if (!call->live || call->rctx->session_id.len == 0) {
        return;
    }

    id = ngx_http_mcp_call_id_text(call, &len);
    if (id == NULL) {
        return;
    }

    mlcf = call->conf;

    (void) ngx_http_mcp_session_wait_stream(mlcf->zone,
                                            &call->rctx->session_id, id, len,
                                            stream);
}


/* removes the call's wait records: its own and its requests' */

static void
ngx_http_mcp_call_unwait(ngx_http_mcp_call_t *call)
{
    u_char                    *id;
    size_t                     len;
    ngx_str_t                 *sid;
    ngx_uint_t                 i;
    ngx_http_mcp_request_t   **req;
    ngx_http_mcp_loc_conf_t   *mlcf;

    mlcf = call->conf;
    sid = &call->rctx->session_id;

    if (sid->len == 0) {
        return;
    }

    id = ngx_http_mcp_call_id_text(call, &len);

    if (id != NULL) {
        ngx_http_mcp_session_unwait(mlcf->zone, sid, 0, id, len);
    }

    if (call->requests == NULL) {
        return;
    }

    req = call->requests->elts;

    for (i = 0; i < call->requests->nelts; i++) {
        if (req[i]->active) {
            ngx_http_mcp_session_unwait(mlcf->zone, sid, req[i]->id, NULL, 0);
        }
    }
}


/* this worker was woken: answers and cancellations for its calls */

void
ngx_http_mcp_calls_wake(void)
{
    ngx_queue_t          *q, *next;
    ngx_http_mcp_call_t  *call;

    for (q = ngx_queue_head(&ngx_http_mcp_calls);
         q != ngx_queue_sentinel(&ngx_http_mcp_calls);
         q = next)
    {
        /* a check may end the call; a call never ends another */
        next = ngx_queue_next(q);
        call = ngx_queue_data(q, ngx_http_mcp_call_t, queue);

        /*
         * A look takes one answer (its handler may ask the next
         * question), and wake-ups that came together are one look: the
         * answers to two questions asked at once may both be there, so
         * the call is looked at again while it takes one.
         */
        while (ngx_http_mcp_call_check(call) == NGX_AGAIN) {
            /* void */
        }
    }
}


/*
 * What the store holds for a live call: its session gone, a
 * cancellation, or one answer (a look takes one: the handler may ask the
 * next question).  NGX_AGAIN: it took an answer and lives on, another
 * may be there.
 */

static ngx_int_t
ngx_http_mcp_call_check(ngx_http_mcp_call_t *call)
{
    u_char                    *id;
    size_t                     len;
    ngx_int_t                  rc;
    ngx_str_t                 *sid, answer;
    ngx_uint_t                 i;
    ngx_http_mcp_request_t   **req;
    ngx_http_mcp_loc_conf_t   *mlcf;

    mlcf = call->conf;
    sid = &call->rctx->session_id;

    if (sid->len == 0) {
        /* a stateless call has no session to lose nor a wait record */
        return NGX_OK;
    }

    if (call->holding && ngx_http_mcp_call_release(call) == NGX_DONE) {
        /* the call ended and is gone */
        return NGX_OK;
    }

    id = ngx_http_mcp_call_id_text(call, &len);

    rc = (id != NULL)
         ? ngx_http_mcp_session_waited(mlcf->zone, sid, 0, id, len, NULL,
                                       NULL)
         : NGX_AGAIN;

    if (rc == NGX_AGAIN && call->requests) {
        req = call->requests->elts;

        for (i = 0; i < call->requests->nelts; i++) {
            if (!req[i]->active) {
                continue;
            }

            rc = ngx_http_mcp_session_waited(mlcf->zone, sid, req[i]->id,
                                             NULL, 0, call->pool, &answer);
            if (rc == NGX_OK) {
                return (ngx_http_mcp_call_answer(req[i], answer.data,
                                                 answer.len)
                        == NGX_DONE) ? NGX_OK : NGX_AGAIN;
            }

            if (rc != NGX_AGAIN) {
                break;
            }
        }
    }

    switch (rc) {

    case NGX_DECLINED:
        ngx_log_debug1(NGX_LOG_DEBUG_HTTP, call->log, 0,
                       "mcp call \"%V\": its session is gone",
                       &call->method);
        ngx_http_mcp_call_error(call, NGX_HTTP_MCP_INVALID_REQUEST,
                                "Session terminated");
        return NGX_OK;

    case NGX_ABORT:
        ngx_http_mcp_call_cancelled(call);
        return NGX_OK;

    default:
        return NGX_OK;
    }
}


/* no response for a cancelled request; its stream still ends */

static void
ngx_http_mcp_call_cancelled(ngx_http_mcp_call_t *call)
{
    ngx_log_error(NGX_LOG_INFO, call->log, 0,
                  "mcp: call \"%V\" cancelled by the client", &call->method);

    ngx_http_mcp_call_end(call, NULL);
}


/* NGX_DONE: the call ended in its handler and is freed */

static ngx_int_t
ngx_http_mcp_call_answer(ngx_http_mcp_request_t *req, u_char *text,
    size_t len)
{
    cJSON                *json;
    ngx_http_mcp_call_t  *call;

    call = req->call;
    req->active = 0;

    if (req->timer.timer_set) {
        ngx_del_timer(&req->timer);
    }

    json = cJSON_ParseWithLength((const char *) text, len);

    call->running = 1;

    if (call->relay != NULL) {
        (void) call->relay(call, NULL);
    }

    req->handler(call, ngx_http_mcp_json_get(json, "result"),
                 ngx_http_mcp_json_get(json, "error"), req->data);
    call->running = 0;

    cJSON_Delete(json);

    if (call->done) {
        ngx_http_mcp_call_free(call);
        return NGX_DONE;
    }

    return NGX_OK;
}


static void
ngx_http_mcp_request_timeout(ngx_event_t *ev)
{
    cJSON                   *error;
    ngx_http_mcp_call_t     *call;
    ngx_http_mcp_request_t  *req;

    req = ev->data;
    call = req->call;

    ngx_log_error(NGX_LOG_INFO, call->log, 0,
                  "mcp: the client did not answer request %uL of call "
                  "\"%V\" in time", req->id, &call->method);

    ngx_http_mcp_metrics_server_timeout();

    error = cJSON_CreateObject();

    if (error != NULL
        && (cJSON_AddNumberToObject(error, "code",
                                    NGX_HTTP_MCP_REQUEST_TIMED_OUT) == NULL
            || cJSON_AddStringToObject(error, "message", "Request timed out")
               == NULL))
    {
        cJSON_Delete(error);
        error = NULL;
    }

    ngx_http_mcp_call_unwait(call);
    req->active = 0;

    call->running = 1;

    if (req->held != NULL) {
        /* never sent: there is nothing for the client to cancel */
        cJSON_Delete(req->held);
        req->held = NULL;

    } else if (call->relay != NULL) {
        (void) call->relay(call, NULL);

    } else {
        ngx_http_mcp_request_cancel(req);
    }

    req->handler(call, NULL, error, req->data);
    call->running = 0;

    cJSON_Delete(error);

    if (call->done) {
        ngx_http_mcp_call_free(call);
    }
}


/* the call's messages need a stream: the POST's reply becomes one */

ngx_int_t
ngx_http_mcp_call_stream(ngx_http_mcp_call_t *call)
{
    if (call->stream) {
        return NGX_OK;
    }

    if (call->ctx == NULL) {
        return NGX_DECLINED;
    }

    if (call->edge->stream(call) != NGX_OK) {
        return NGX_ERROR;
    }

    return call->stream ? NGX_OK : NGX_ERROR;
}


static ngx_int_t
ngx_http_mcp_call_send(ngx_http_mcp_call_t *call, cJSON *message,
    ngx_uint_t response)
{
    u_char                   *text;
    size_t                    len;
    ngx_int_t                 rc;
    ngx_pool_t               *pool;
    ngx_http_mcp_loc_conf_t  *mlcf;

    mlcf = call->conf;

    /*
     * The zone keeps a copy.  A notification's text goes with a pool of
     * its own: a call may send them without end (a backend's progress
     * relayed), and the call's pool would grow with each.
     */
    pool = response ? call->pool : ngx_create_pool(1024, call->log);

    if (pool == NULL) {
        return NGX_ERROR;
    }

    len = 0;
    text = (message != NULL)
           ? ngx_http_mcp_json_print(pool, message, &len) : NULL;

    if (text == NULL && !response) {
        ngx_destroy_pool(pool);
        return NGX_ERROR;
    }

    /* a lost response still counts: the stream must end */
    rc = ngx_http_mcp_session_send(mlcf->zone, &call->rctx->session_id,
                                   call->stream, text, text ? len : 0,
                                   response, call->log);

    if (pool != call->pool) {
        ngx_destroy_pool(pool);
    }

    return rc;
}


ngx_int_t
ngx_http_mcp_call_notify(ngx_http_mcp_call_t *call, const char *method,
    cJSON *params)
{
    cJSON      *message;
    ngx_int_t   rc;

    if (call->done || ngx_http_mcp_call_stream(call) != NGX_OK) {
        cJSON_Delete(params);
        return NGX_ERROR;
    }

    message = ngx_http_mcp_message(NULL, method, params);
    if (message == NULL) {
        return NGX_ERROR;
    }

    rc = ngx_http_mcp_call_send(call, message, 0);

    cJSON_Delete(message);

    return rc;
}


ngx_int_t
ngx_http_mcp_call_log(ngx_http_mcp_call_t *call, ngx_uint_t level,
    const char *logger, const char *text)
{
    cJSON  *params;

    if (level < call->rctx->log_level || level > NGX_HTTP_MCP_LOG_EMERGENCY) {
        return NGX_OK;
    }

    params = cJSON_CreateObject();

    if (params == NULL
        || cJSON_AddStringToObject(params, "level",
                                   ngx_http_mcp_log_level_name(level))
           == NULL
        || (logger != NULL
            && cJSON_AddStringToObject(params, "logger", logger) == NULL)
        || cJSON_AddStringToObject(params, "data", text) == NULL)
    {
        cJSON_Delete(params);
        return NGX_ERROR;
    }

    return ngx_http_mcp_call_notify(call, "notifications/message", params);
}


ngx_int_t
ngx_http_mcp_call_progress(ngx_http_mcp_call_t *call, double progress,
    double total, const char *message)
{
    cJSON  *params, *token;

    if (call->progress_token == NULL) {
        return NGX_OK;
    }

    params = cJSON_CreateObject();
    token = cJSON_Duplicate(call->progress_token, 1);

    if (params == NULL || token == NULL
        || !cJSON_AddItemToObject(params, "progressToken", token))
    {
        cJSON_Delete(token);
        cJSON_Delete(params);
        return NGX_ERROR;
    }

    if (cJSON_AddNumberToObject(params, "progress", progress) == NULL
        || (total > 0
            && cJSON_AddNumberToObject(params, "total", total) == NULL)
        || (message != NULL
            && cJSON_AddStringToObject(params, "message", message) == NULL))
    {
        cJSON_Delete(params);
        return NGX_ERROR;
    }

    return ngx_http_mcp_call_notify(call, "notifications/progress", params);
}


/*
 * A request to the client.  Its id is unique in the session; its wait
 * record lets whichever worker receives the answer hand it over.
 */

ngx_int_t
ngx_http_mcp_call_request(ngx_http_mcp_call_t *call, const char *method,
    cJSON *params, ngx_http_mcp_answer_pt handler, void *data)
{
    cJSON                    *message, *id;
    uint64_t                  n;
    ngx_int_t                 rc;
    const char               *cap, *mode;
    ngx_http_mcp_request_t   *req, **rp;
    ngx_http_mcp_loc_conf_t  *mlcf;

    if (ngx_http_mcp_call_stateless(call)) {
        /* no stream for requests: see ngx_http_mcp_call_input_required() */
        cJSON_Delete(params);
        ngx_http_mcp_call_error(call, NGX_HTTP_MCP_INVALID_REQUEST,
                                "Invalid Request: this tool sends requests "
                                "to the client, which needs a 2025-11-25 "
                                "session");
        return NGX_DECLINED;
    }

    /* what the client did not declare is never asked (-32021) */
    if (!ngx_http_mcp_client_can(call->rctx, method, params, &cap, &mode)
        && cap != NULL)
    {
        cJSON_Delete(params);
        ngx_http_mcp_call_missing(call, cap, mode);
        return NGX_DECLINED;
    }

    /* a task's requests go where the task says, not on a POST's reply */
    if (call->done
        || (call->relay == NULL && ngx_http_mcp_call_stream(call) != NGX_OK))
    {
        cJSON_Delete(params);
        return NGX_ERROR;
    }

    if (call->requests == NULL) {
        call->requests = ngx_array_create(call->pool, 2,
                                          sizeof(ngx_http_mcp_request_t *));
    }

    req = ngx_pcalloc(call->pool, sizeof(ngx_http_mcp_request_t));
    rp = call->requests ? ngx_array_push(call->requests) : NULL;

    if (req == NULL || rp == NULL) {
        cJSON_Delete(params);
        return NGX_ERROR;
    }

    *rp = req;

    mlcf = call->conf;
    n = 1;

    if (ngx_http_mcp_session_wait(mlcf->zone, &call->rctx->session_id, &n,
                                  NULL, 0)
        != NGX_OK)
    {
        cJSON_Delete(params);
        return NGX_ERROR;
    }

    req->id = n;
    req->call = call;
    req->handler = handler;
    req->data = data;
    req->active = 1;

    req->timer.handler = ngx_http_mcp_request_timeout;
    req->timer.data = req;
    req->timer.log = call->log;

    /* the drain timer, not this one, keeps an exiting worker for it */
    req->timer.cancelable = 1;

    ngx_add_timer(&req->timer, mlcf->request_timeout);

    ngx_http_mcp_call_live(call);

    id = cJSON_CreateNumber((double) n);
    message = ngx_http_mcp_message(id, method, params);

    if (message == NULL) {
        return NGX_ERROR;
    }

    /* the client's trace goes on with what is asked on its behalf */
    if (ngx_http_mcp_trace_message(&call->trace, message) != NGX_OK) {
        cJSON_Delete(message);
        return NGX_ERROR;
    }

    /*
     * No request but ping before the client's notifications/initialized
     * (lifecycle): it waits, within the same mcp_request_timeout.  The
     * wait record made above is there before the look, so that the
     * notification, at whichever worker, wakes this one.
     */
    if (!call->initialized && ngx_strcmp(method, "ping") != 0) {
        if (ngx_http_mcp_session_initialized(mlcf->zone,
                                             &call->rctx->session_id)
            == NGX_AGAIN)
        {
            ngx_log_debug2(NGX_LOG_DEBUG_HTTP, call->log, 0,
                           "mcp call \"%V\": request %uL waits for "
                           "notifications/initialized", &call->method, n);

            req->held = message;
            call->holding = 1;
            return NGX_OK;
        }

        call->initialized = 1;
    }

    rc = ngx_http_mcp_request_send(call, message);

    cJSON_Delete(message);

    return rc;
}


static ngx_int_t
ngx_http_mcp_request_send(ngx_http_mcp_call_t *call, cJSON *message)
{
    return (call->relay != NULL) ? call->relay(call, message)
                                 : ngx_http_mcp_call_send(call, message, 0);
}


/*
 * The session's client has sent notifications/initialized: the requests
 * held for it go out, in the order they were made.  NGX_DONE: the call
 * ended meanwhile (a task that could not ask) and is freed.
 */

static ngx_int_t
ngx_http_mcp_call_release(ngx_http_mcp_call_t *call)
{
    cJSON                     *message;
    ngx_uint_t                 i;
    ngx_http_mcp_request_t   **req;
    ngx_http_mcp_loc_conf_t   *mlcf;

    mlcf = call->conf;

    if (ngx_http_mcp_session_initialized(mlcf->zone, &call->rctx->session_id)
        == NGX_AGAIN)
    {
        return NGX_OK;
    }

    call->holding = 0;
    call->initialized = 1;
    call->running = 1;

    req = call->requests->elts;

    for (i = 0; i < call->requests->nelts && !call->done; i++) {
        message = req[i]->held;

        if (message == NULL) {
            continue;
        }

        req[i]->held = NULL;

        ngx_log_debug2(NGX_LOG_DEBUG_HTTP, call->log, 0,
                       "mcp call \"%V\": request %uL sent after "
                       "notifications/initialized", &call->method,
                       req[i]->id);

        if (ngx_http_mcp_request_send(call, message) == NGX_ERROR) {
            ngx_log_error(NGX_LOG_INFO, call->log, 0,
                          "mcp: request %uL of call \"%V\" could not be "
                          "sent", req[i]->id, &call->method);
        }

        cJSON_Delete(message);
    }

    call->running = 0;

    if (call->done) {
        ngx_http_mcp_call_free(call);
        return NGX_DONE;
    }

    return NGX_OK;
}


/*
 * A request the client did not answer in time: it is told to stop
 * (notifications/cancelled), as the side that gives up on a request
 * does.  The client may be gone: nothing to do then.
 */

static void
ngx_http_mcp_request_cancel(ngx_http_mcp_request_t *req)
{
    cJSON  *params;

    params = cJSON_CreateObject();

    if (params == NULL
        || cJSON_AddNumberToObject(params, "requestId", (double) req->id)
           == NULL
        || cJSON_AddStringToObject(params, "reason", "Request timed out")
           == NULL)
    {
        cJSON_Delete(params);
        return;
    }

    if (ngx_http_mcp_call_notify(req->call, "notifications/cancelled",
                                 params)
        != NGX_OK)
    {
        ngx_log_debug1(NGX_LOG_DEBUG_HTTP, req->call->log, 0,
                       "mcp: no notifications/cancelled for request %uL",
                       req->id);
    }
}


/*
 * Whether the client declared what a request to it takes: the
 * capability, and for elicitation the mode (form when params names
 * none).  *cap: the capability's name, NULL for a method that is not a
 * request to a client; *mode: elicitation's mode, or NULL.
 */

ngx_uint_t
ngx_http_mcp_client_can(ngx_http_mcp_reqctx_t *rctx, const char *method,
    cJSON *params, const char **cap, const char **mode)
{
    cJSON  *m;

    *mode = NULL;

    if (ngx_strcmp(method, "sampling/createMessage") == 0) {
        *cap = "sampling";
        return rctx->sampling;
    }

    if (ngx_strcmp(method, "roots/list") == 0) {
        *cap = "roots";
        return rctx->roots;
    }

    if (ngx_strcmp(method, "elicitation/create") != 0) {
        *cap = NULL;
        return 1;
    }

    *cap = "elicitation";
    m = ngx_http_mcp_json_get(params, "mode");

    if (m == NULL || (cJSON_IsString(m)
                      && ngx_strcmp(m->valuestring, "form") == 0))
    {
        *mode = "form";
        return rctx->elicitation_form;
    }

    if (cJSON_IsString(m) && ngx_strcmp(m->valuestring, "url") == 0) {
        *mode = "url";
        return rctx->elicitation_url;
    }

    /* a mode there is no capability for */
    return 0;
}


/*
 * Adds cap (and its mode) to a capabilities object: what -32021 says
 * the client lacks, what the gateway declares for it.  An empty
 * elicitation is its form mode (2025-11-25), and says so for clients of
 * every revision: form is named only beside url.
 */

ngx_int_t
ngx_http_mcp_client_required(cJSON *caps, const char *cap, const char *mode)
{
    cJSON       *item;
    ngx_uint_t   form;

    form = (mode != NULL && ngx_strcmp(mode, "form") == 0);
    item = ngx_http_mcp_json_get(caps, cap);

    if (item == NULL) {
        item = cJSON_AddObjectToObject(caps, cap);

        if (item == NULL
            || (mode != NULL && !form
                && cJSON_AddObjectToObject(item, mode) == NULL))
        {
            return NGX_ERROR;
        }

        return NGX_OK;
    }

    if (mode == NULL || cJSON_HasObjectItem(item, mode)
        || (form && item->child == NULL))
    {
        return NGX_OK;
    }

    /* {} meant form: named now that another mode stands beside it */
    if (item->child == NULL && !form
        && cJSON_AddObjectToObject(item, "form") == NULL)
    {
        return NGX_ERROR;
    }

    return (cJSON_AddObjectToObject(item, mode) != NULL) ? NGX_OK : NGX_ERROR;
}


static void
ngx_http_mcp_call_missing(ngx_http_mcp_call_t *call, const char *cap,
    const char *mode)
{
    cJSON  *data, *caps;

    data = cJSON_CreateObject();
    caps = cJSON_AddObjectToObject(data, "requiredCapabilities");

    if (caps == NULL || ngx_http_mcp_client_required(caps, cap, mode)
                        != NGX_OK)
    {
        cJSON_Delete(data);
        data = NULL;
    }

    ngx_http_mcp_call_error_data(call, NGX_HTTP_MCP_MISSING_CAPABILITY,
                                 "Missing required client capability", data);
}


ngx_int_t
ngx_http_mcp_call_close_stream(ngx_http_mcp_call_t *call)
{
    ngx_int_t  rc;

    if (ngx_http_mcp_call_stateless(call)) {
        /* a stateless client cannot resume: the result stays on this one */
        return NGX_DECLINED;
    }

    rc = ngx_http_mcp_call_stream(call);

    if (rc != NGX_OK) {
        return rc;
    }

    if (call->ctx != NULL) {
        call->edge->close_stream(call);
    }

    return NGX_OK;
}


/*
 * A client's response to a server request, arriving at this worker: it
 * goes to the wait record, and the worker that waits is woken.
 */

ngx_int_t
ngx_http_mcp_client_response(ngx_shm_zone_t *zone, ngx_str_t *sid,
    ngx_http_mcp_msg_t *msg, ngx_pool_t *pool, ngx_log_t *log)
{
    u_char     *text;
    size_t      len;
    ngx_int_t   n;

    if (msg->id == NULL || !cJSON_IsRaw(msg->id)) {
        return NGX_OK;
    }

    n = ngx_atoi((u_char *) msg->id->valuestring,
                 ngx_strlen(msg->id->valuestring));

    if (n <= 0) {
        return NGX_OK;
    }

    text = ngx_http_mcp_json_print(pool, msg->json, &len);
    if (text == NULL) {
        return NGX_ERROR;
    }

    if (ngx_http_mcp_session_deliver(zone, sid, n, NULL, 0, text, len, log)
        != NGX_OK)
    {
        ngx_log_error(NGX_LOG_INFO, log, 0,
                      "mcp: response to unknown or expired request %i "
                      "ignored", n);
    }

    return NGX_OK;
}


/* notifications/cancelled: the call is marked, its worker woken */

ngx_int_t
ngx_http_mcp_client_cancel(ngx_shm_zone_t *zone, ngx_str_t *sid,
    ngx_http_mcp_msg_t *msg, ngx_pool_t *pool, ngx_log_t *log)
{
    u_char  *id;
    size_t   len;
    cJSON   *rid;

    rid = ngx_http_mcp_json_get(msg->params, "requestId");

    if (!cJSON_IsString(rid) && !cJSON_IsNumber(rid)) {
        return NGX_OK;
    }

    id = ngx_http_mcp_json_print(pool, rid, &len);
    if (id == NULL) {
        return NGX_ERROR;
    }

    if (ngx_http_mcp_session_deliver(zone, sid, 0, id, len, NULL, 0, log)
        != NGX_OK)
    {
        ngx_log_debug0(NGX_LOG_DEBUG_HTTP, log, 0,
                       "mcp: cancellation of a call that is not running");
    }

    return NGX_OK;
}


/*
 * The worker exits gracefully: calls in flight go on, for their answers
 * may still come (through any worker); when mcp_shutdown_timeout has
 * passed, those left end as at exit.
 */

void
ngx_http_mcp_calls_quit(ngx_uint_t deadline)
{
    ngx_queue_t          *q, *next;
    ngx_http_mcp_call_t  *call;

    if (deadline) {
        ngx_http_mcp_calls_exit();
        return;
    }

    /*
     * A call that never ends by itself (subscriptions/listen) ends now
     * with its result, which tells its client that the server ended it
     * (the spec's #3171), not the network: its stream ends after it.
     */

    for (q = ngx_queue_head(&ngx_http_mcp_calls);
         q != ngx_queue_sentinel(&ngx_http_mcp_calls);
         q = next)
    {
        next = ngx_queue_next(q);
        call = ngx_queue_data(q, ngx_http_mcp_call_t, queue);

        if (call->quit != NULL && !call->done) {
            call->quit(call);
        }
    }
}


/*
 * The worker exits: calls still running end with an error (an endless
 * one as it ends on a graceful exit), so that their streams end for the
 * clients that resume them.
 */

void
ngx_http_mcp_calls_exit(void)
{
    ngx_queue_t          *q;
    ngx_http_mcp_call_t  *call;

    while (!ngx_queue_empty(&ngx_http_mcp_calls)) {
        q = ngx_queue_head(&ngx_http_mcp_calls);
        call = ngx_queue_data(q, ngx_http_mcp_call_t, queue);

        if (call->done) {
            /* ended inside a handler that has not returned: not here */
            ngx_queue_remove(q);
            call->live = 0;
            continue;
        }

        if (call->quit != NULL) {
            /* an endless call: the server ends it, no failure */
            call->quit(call);
            continue;
        }

        /* not an internal error: the client resumes on a new worker */
        ngx_http_mcp_call_error(call, NGX_HTTP_MCP_SERVER_ERROR,
                                "Server is shutting down");
    }
}


static u_char *
ngx_http_mcp_call_id_text(ngx_http_mcp_call_t *call, size_t *len)
{
    if (call->id_text == NULL) {
        call->id_text = ngx_http_mcp_json_print(call->pool, call->id,
                                                &call->id_len);
    }

    *len = call->id_len;

    return call->id_text;
}


/*
 * A numeric progress token, digit for digit as the client sent it: the
 * scan keeps its text (ngx_http_mcp_json_parse()); a tree built
 * otherwise has none, and the token is echoed as its double.
 */

static ngx_int_t
ngx_http_mcp_call_raw_token(ngx_http_mcp_call_t *call)
{
    if (call->progress_token->valuestring == NULL) {
        return NGX_OK;
    }

    call->token_raw = cJSON_CreateRaw(call->progress_token->valuestring);
    if (call->token_raw == NULL) {
        return NGX_ERROR;
    }

    call->progress_token = call->token_raw;

    return NGX_OK;
}


/* a stateless call's Mcp-Param-* headers: the call outlives its request */

static ngx_int_t
ngx_http_mcp_call_param_headers(ngx_http_mcp_call_t *call, ngx_array_t *from)
{
    ngx_uint_t     i;
    ngx_keyval_t  *src, *dst;

    call->param_headers = ngx_array_create(call->pool, ngx_max(from->nelts, 1),
                                           sizeof(ngx_keyval_t));
    if (call->param_headers == NULL) {
        return NGX_ERROR;
    }

    src = from->elts;

    for (i = 0; i < from->nelts; i++) {
        dst = ngx_array_push(call->param_headers);
        if (dst == NULL) {
            return NGX_ERROR;
        }

        dst->key.len = src[i].key.len;
        dst->key.data = ngx_pstrdup(call->pool, &src[i].key);
        dst->value.len = src[i].value.len;
        dst->value.data = ngx_pstrdup(call->pool, &src[i].value);

        if (dst->key.data == NULL || dst->value.data == NULL) {
            return NGX_ERROR;
        }
    }

    return NGX_OK;
}


/* {"jsonrpc":"2.0"[,"id":id],"method":method,"params":params}; takes both */

static cJSON *
ngx_http_mcp_message(cJSON *id, const char *method, cJSON *params)
{
    cJSON  *message;

    message = cJSON_CreateObject();

    if (message == NULL
        || cJSON_AddStringToObject(message, "jsonrpc", "2.0") == NULL
        || (id != NULL && !cJSON_AddItemToObject(message, "id", id)))
    {
        cJSON_Delete(message);
        cJSON_Delete(id);
        cJSON_Delete(params);
        return NULL;
    }

    if (cJSON_AddStringToObject(message, "method", method) == NULL
        || (params != NULL
            && !cJSON_AddItemToObject(message, "params", params)))
    {
        cJSON_Delete(message);
        cJSON_Delete(params);
        return NULL;
    }

    return message;
}


/*
 * The request's $request_id, the one its access log line has.  made: 0
 * when the request is going (its pool is, and nginx could not make the
 * value): NGX_DECLINED unless it was made before, for its log line say.
 */

ngx_int_t
ngx_http_mcp_request_id(ngx_http_request_t *r, ngx_uint_t made,
    ngx_str_t *id)
{
    ngx_http_variable_value_t  *v;
    ngx_http_mcp_main_conf_t   *mmcf;

    mmcf = ngx_http_get_module_main_conf(r, ngx_http_mcp_module);

    if (mmcf == NULL || mmcf->request_id == NGX_ERROR) {
        return NGX_DECLINED;
    }

    /* the main request's: a subrequest's variables are its own */
    if (!made) {
        v = &r->main->variables[mmcf->request_id];

        if (!v->valid) {
            return NGX_DECLINED;
        }

    } else {
        v = ngx_http_get_indexed_variable(r->main, mmcf->request_id);
    }

    if (v == NULL || v->not_found || v->len == 0) {
        return NGX_DECLINED;
    }

    id->data = v->data;
    id->len = v->len;

    return NGX_OK;
}


/*
 * A JSON-RPC error reply with its log line, at level whatever the code; the correlation id is
 * the one given (a call's, its POST's $request_id) or, when there is
 * none, a random one.
 */

cJSON *
ngx_http_mcp_error_reply_at(ngx_log_t *log, ngx_uint_t level,
    ngx_str_t *given, cJSON *id, ngx_int_t code, const char *message,
    ngx_str_t *method)
{
    u_char      correlation[NGX_HTTP_MCP_CORRELATION_MAX + 1];
    u_char      text[NGX_HTTP_MCP_LOG_MESSAGE_LEN];
    u_char      name[NGX_HTTP_MCP_LOG_NAME_LEN];
    u_char     *text_end, *name_end;
    ngx_str_t   none = ngx_string("-");

    if (given != NULL && given->len) {
        (void) ngx_cpystrn(correlation, given->data,
                           ngx_min(given->len, NGX_HTTP_MCP_CORRELATION_MAX)
                           + 1);

    } else if (ngx_http_mcp_correlation_id(correlation,
                                           NGX_HTTP_MCP_CORRELATION_LEN)
               != NGX_OK)
    {
        return NULL;

    } else {
        correlation[NGX_HTTP_MCP_CORRELATION_LEN] = '\0';
    }

    ngx_http_mcp_metrics_error(code);

    /*
     * The message may repeat a name of the body ("Unknown tool: ..."),
     * and the method is the body's: a JSON string may hold CR LF, with
     * which a client would write lines of its own into error_log.
     */

    if (method == NULL) {
        method = &none;
    }

    text_end = ngx_http_mcp_log_bounded(text, sizeof(text),
                                        (u_char *) message,
                                        ngx_strlen(message));
    name_end = ngx_http_mcp_log_bounded(name, sizeof(name), method->data,
                                        method->len);

    ngx_log_error(level, log, 0,
                  "mcp: %*s (code %i, method \"%*s\", "
                  "correlation id %s)",
                  text_end - text, text, code, name_end - name, name,
                  correlation);

    return ngx_http_mcp_jsonrpc_error(id, code, message,
                                      (char *) correlation);
}
