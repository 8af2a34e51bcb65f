
/*
 * Tasks: a tools/call that goes on after its reply, whose outcome the
 * client polls for (tasks/get) from any worker.  Two eras share the
 * code: 2026-07-28's io.modelcontextprotocol/tasks extension (the server
 * decides, for a client that declares the extension, and the outcome is
 * inlined in tasks/get) and 2025-11-25's experimental tasks (the client
 * asks with params.task, and fetches the outcome with tasks/result).
 *
 * A task runs as an ordinary call of its tool's handler, so handlers
 * need nothing new: a call that ends while dispatch is still running it
 * is answered as usual (an immediate result, or the rounds of a
 * multi-round request before the task exists); one that goes on becomes
 * a task, and its POST gets the task instead of the result.  From then
 * on the call's response is diverted into the task's record in the
 * store.  An input-required result of a running task makes the task
 * input_required; once tasks/update has brought every answer, the
 * worker that took the last one runs the handler again with them, as a
 * stateless client's retry would.
 *
 * tasks/cancel marks the task at once in the store and wakes the worker
 * running it, which ends the call (its handler's pool cleanups stop the
 * work).
 *
 * A 2025-11-25 task's call asks its client as any call of a session
 * does (call_request()), but its requests travel through the task: the
 * task is input_required until the last is answered, and the store
 * sends each to a tasks/result the client has open for the task, else
 * to the session's GET stream, else keeps it for the next tasks/result.
 * The answers come back as to any call.  A handler that asks the
 * 2026-07-28 way, with an input-required result, is asked the same way
 * (see ngx_http_mcp_call_input_required()).
 */


#include "ngx_http_mcp_task.h"
#include "ngx_http_mcp_json.h"
#include "ngx_http_mcp_jsonrpc.h"
#include "ngx_http_mcp_store.h"
#include "ngx_http_mcp_call.h"
#include "ngx_http_mcp_core.h"
#include "ngx_http_mcp_trace.h"

#include <openssl/rand.h>


#define NGX_HTTP_MCP_TASK_POLL          500     /* pollInterval, ms */

#define NGX_HTTP_MCP_TASK_FORBIDDEN     0
#define NGX_HTTP_MCP_TASK_OPTIONAL      1
#define NGX_HTTP_MCP_TASK_REQUIRED      2

#define NGX_HTTP_MCP_TASKS_EXTENSION    "io.modelcontextprotocol/tasks"


/* a task's call on the worker that runs it */
typedef struct {
    ngx_queue_t                queue;       /* ngx_http_mcp_tasks */
    ngx_http_mcp_call_t       *call;
    ngx_http_mcp_task_t        task;
    ngx_uint_t                 asked;       /* 2025: unanswered requests */
    unsigned                   created:1;   /* the store has it */
    unsigned                   queued:1;
} ngx_http_mcp_task_run_t;


static ngx_uint_t ngx_http_mcp_task_support(ngx_http_mcp_call_t *call);
static ngx_int_t ngx_http_mcp_task_eligible(ngx_http_mcp_call_t *call,
    ngx_msec_t *ttl);
static ngx_http_mcp_task_run_t *ngx_http_mcp_task_run_create(
    ngx_http_mcp_call_t *call);
static void ngx_http_mcp_task_run_cleanup(void *data);
static ngx_int_t ngx_http_mcp_task_start(ngx_http_mcp_call_t *call,
    ngx_http_mcp_task_run_t *tr);
static ngx_int_t ngx_http_mcp_task_divert(ngx_http_mcp_call_t *call,
    cJSON *reply);
static ngx_int_t ngx_http_mcp_task_relay(ngx_http_mcp_call_t *call,
    cJSON *message);
static ngx_int_t ngx_http_mcp_task_request(ngx_http_mcp_call_t *call,
    ngx_http_mcp_task_t *t);
static ngx_int_t ngx_http_mcp_task_rerun(ngx_http_mcp_call_t *call);
static ngx_int_t ngx_http_mcp_task_lost(ngx_http_mcp_call_t *call);
static ngx_int_t ngx_http_mcp_task_time(cJSON *obj, const char *name,
    uint64_t ms);


/* the tasks running on this worker: ngx_http_mcp_task_run_t */
static ngx_queue_t  ngx_http_mcp_tasks;


/* at worker start */

void
ngx_http_mcp_tasks_init(void)
{
    ngx_queue_init(&ngx_http_mcp_tasks);
}


/*
 * tools/call of a tool that may run as a task: run() is dispatch's way
 * of running the tool.  NGX_OK or NGX_ERROR, as a handler returns.
 */

ngx_int_t
ngx_http_mcp_task_call(ngx_http_mcp_call_t *call,
    ngx_http_mcp_handler_pt run)
{
    ngx_int_t                 rc;
    ngx_msec_t                ttl;
    ngx_http_mcp_task_run_t  *tr;

    rc = ngx_http_mcp_task_eligible(call, &ttl);

    if (rc == NGX_DECLINED) {
        return run(call);
    }

    if (rc != NGX_OK) {
        /* refused, the call ended */
        return (rc == NGX_ABORT) ? NGX_OK : rc;
    }

    tr = ngx_http_mcp_task_run_create(call);
    if (tr == NULL) {
        return NGX_ERROR;
    }

    tr->task.ttl = ttl;
    tr->task.stateless = ngx_http_mcp_call_stateless(call);

    if (!tr->task.stateless
        && call->rctx->session_id.len == NGX_HTTP_MCP_SESSION_ID_LEN)
    {
        /* whom its status notifications go to */
        ngx_memcpy(tr->task.sid, call->rctx->session_id.data,
                   NGX_HTTP_MCP_SESSION_ID_LEN);
    }

    if (ngx_http_mcp_task_owner(call, tr->task.owner) != NGX_OK
        || ngx_http_mcp_task_quota(call, tr->task.quota) != NGX_OK
        || ngx_http_mcp_task_request(call, &tr->task) != NGX_OK)
    {
        return NGX_ERROR;
    }

    rc = run(call);

    if (rc != NGX_OK || call->done || call->stream) {
        /* ended at once, or it talks on a stream: no task */
        return rc;
    }

    return ngx_http_mcp_task_start(call, tr);
}


/*
 * Whether a tools/call runs as a task.  NGX_OK: yes (*ttl set);
 * NGX_DECLINED: no; NGX_ABORT: refused (the call ended); NGX_ERROR.
 */

static ngx_int_t
ngx_http_mcp_task_eligible(ngx_http_mcp_call_t *call, ngx_msec_t *ttl)
{
    cJSON       *task, *t;
    ngx_uint_t   support;

    support = ngx_http_mcp_task_support(call);
    *ttl = ngx_http_mcp_call_conf(call)->task_timeout;

    if (ngx_http_mcp_call_stateless(call)) {
        /* the server decides, for a client that declares the extension */
        if (support == NGX_HTTP_MCP_TASK_FORBIDDEN) {
            return NGX_DECLINED;
        }

        if (call->rctx->tasks) {
            return NGX_OK;
        }

        if (support == NGX_HTTP_MCP_TASK_OPTIONAL) {
            return NGX_DECLINED;
        }

        return ngx_http_mcp_task_missing(call);
    }

    if (call->rctx->version < NGX_HTTP_MCP_V20251125) {
        return NGX_DECLINED;
    }

    /* 2025-11-25: the client asks, with params.task */
    task = ngx_http_mcp_json_get(call->params, "task");

    if (task == NULL) {
        if (support != NGX_HTTP_MCP_TASK_REQUIRED) {
            return NGX_DECLINED;
        }

        ngx_http_mcp_call_error(call, NGX_HTTP_MCP_METHOD_NOT_FOUND,
                                "Method not found: the tool must be called "
                                "as a task");
        return NGX_ABORT;
    }

    if (!cJSON_IsObject(task)) {
        ngx_http_mcp_call_error(call, NGX_HTTP_MCP_INVALID_PARAMS,
                                "Invalid params: \"task\" must be an object");
        return NGX_ABORT;
    }

    if (support == NGX_HTTP_MCP_TASK_FORBIDDEN) {
        ngx_http_mcp_call_error(call, NGX_HTTP_MCP_METHOD_NOT_FOUND,
                                "Method not found: the tool cannot be "
                                "called as a task");
        return NGX_ABORT;
    }

    /* a shorter ttl than ours is the client's to ask for */
    t = ngx_http_mcp_json_get(task, "ttl");

    if (cJSON_IsNumber(t) && t->valuedouble >= 1
        && t->valuedouble < (double) *ttl)
    {
        *ttl = (ngx_msec_t) t->valuedouble;
    }

    return NGX_OK;
}


/* the tool's execution.taskSupport */

static ngx_uint_t
ngx_http_mcp_task_support(ngx_http_mcp_call_t *call)
{
    cJSON  *support;

    support = ngx_http_mcp_json_get(
                  ngx_http_mcp_json_get(call->entry->desc, "execution"),
                  "taskSupport");

    if (!cJSON_IsString(support)) {
        return NGX_HTTP_MCP_TASK_FORBIDDEN;
    }

    if (ngx_strcmp(support->valuestring, "required") == 0) {
        return NGX_HTTP_MCP_TASK_REQUIRED;
    }

    if (ngx_strcmp(support->valuestring, "optional") == 0) {
        return NGX_HTTP_MCP_TASK_OPTIONAL;
    }

    return NGX_HTTP_MCP_TASK_FORBIDDEN;
}


/* -32021 with the capability it takes */

ngx_int_t
ngx_http_mcp_task_missing(ngx_http_mcp_call_t *call)
{
    cJSON  *data, *caps, *ext;

    data = cJSON_CreateObject();
    caps = cJSON_AddObjectToObject(data, "requiredCapabilities");
    ext = cJSON_AddObjectToObject(caps, "extensions");

    if (ext == NULL
        || cJSON_AddObjectToObject(ext, NGX_HTTP_MCP_TASKS_EXTENSION) == NULL)
    {
        cJSON_Delete(data);
        return NGX_ERROR;
    }

    ngx_http_mcp_call_error_data(call, NGX_HTTP_MCP_MISSING_CAPABILITY,
                                 "Missing required client capability: the "
                                 "io.modelcontextprotocol/tasks extension",
                                 data);
    return NGX_ABORT;
}


static ngx_http_mcp_task_run_t *
ngx_http_mcp_task_run_create(ngx_http_mcp_call_t *call)
{
    ngx_pool_cleanup_t       *cln;
    ngx_http_mcp_task_run_t  *tr;

    tr = ngx_pcalloc(call->pool, sizeof(ngx_http_mcp_task_run_t));
    cln = ngx_pool_cleanup_add(call->pool, 0);

    if (tr == NULL || cln == NULL) {
        return NULL;
    }

    tr->call = call;

    cln->handler = ngx_http_mcp_task_run_cleanup;
    cln->data = tr;

    call->task = tr;
    call->divert = ngx_http_mcp_task_divert;

    if (!ngx_http_mcp_call_stateless(call)) {
        call->relay = ngx_http_mcp_task_relay;
    }

    return tr;
}


static void
ngx_http_mcp_task_run_cleanup(void *data)
{
    ngx_http_mcp_task_run_t  *tr = data;

    if (tr->queued) {
        ngx_queue_remove(&tr->queue);
        tr->queued = 0;
    }
}


/*
 * The call goes on: the task goes into the store, and the POST gets the
 * task instead of the result.
 */

static ngx_int_t
ngx_http_mcp_task_start(ngx_http_mcp_call_t *call,
    ngx_http_mcp_task_run_t *tr)
{
    u_char                    random[NGX_HTTP_MCP_TASK_ID_LEN / 2];
    cJSON                    *result, *wrap, *reply;
    ngx_int_t                 rc;
    ngx_http_mcp_task_t      *t;
    ngx_http_mcp_loc_conf_t  *mlcf;

    if (tr->created) {
        /* it asked the client during dispatch: a task since */
        return NGX_OK;
    }

    t = &tr->task;
    mlcf = ngx_http_mcp_call_conf(call);

    if (RAND_bytes(random, sizeof(random)) != 1) {
        return NGX_ERROR;
    }

    ngx_hex_dump(t->id, random, sizeof(random));
    t->pid = ngx_pid;

    rc = ngx_http_mcp_session_task_create(mlcf->zone, t, call->log);

    switch (rc) {

    case NGX_OK:
        break;

    case NGX_BUSY:
    case NGX_DECLINED:
        ngx_log_error(NGX_LOG_WARN, call->log, 0,
                      "mcp: no room for a new task: %s holds as many tasks "
                      "as it may", rc == NGX_BUSY ? "the zone" : "the client");

        ngx_http_mcp_call_error(call, NGX_HTTP_MCP_SERVER_ERROR,
                                rc == NGX_BUSY
                                ? "Too many tasks: the server holds as many "
                                  "as it may, try again later"
                                : "Too many tasks: this client holds as many "
                                  "as it may, try again later");
        return NGX_OK;

    default:
        ngx_http_mcp_call_error(call, NGX_HTTP_MCP_INTERNAL_ERROR,
                                "Internal error: no room in the zone for "
                                "the task");
        return NGX_OK;
    }

    tr->created = 1;

    ngx_queue_insert_tail(&ngx_http_mcp_tasks, &tr->queue);
    tr->queued = 1;

    result = ngx_http_mcp_task_json(t, t->stateless, 0);

    if (result != NULL && t->stateless) {
        if (ngx_http_mcp_json_add_literal(result, "resultType", "task")
            != NGX_OK
            || ngx_http_mcp_server_meta(result) != NGX_OK)
        {
            cJSON_Delete(result);
            result = NULL;
        }

    } else if (result != NULL) {
        wrap = cJSON_CreateObject();

        if (wrap == NULL || !cJSON_AddItemToObject(wrap, "task", result)) {
            cJSON_Delete(wrap);
            cJSON_Delete(result);
            result = NULL;

        } else {
            result = wrap;
        }
    }

    reply = (result != NULL) ? ngx_http_mcp_jsonrpc_result(call->id, result)
                             : NULL;

    /* mcp_fleet: the POST replies once Redis knows the task's node */
    if (ngx_http_mcp_hooks.task_created(call, t) != NGX_OK) {
        cJSON_Delete(reply);
        return NGX_ERROR;
    }

    if (call->ctx == NULL || call->edge->end(call, reply) != NGX_OK) {
        /* the client left: it may still poll, if it kept the id */
        cJSON_Delete(reply);
    }

    return NGX_OK;
}


/*
 * The call's response, once it is a task's: the task's new status and
 * what it keeps.  NGX_DECLINED before the task exists.
 */

static ngx_int_t
ngx_http_mcp_task_divert(ngx_http_mcp_call_t *call, cJSON *reply)
{
    cJSON                    *result, *error, *type, *state;
    ngx_str_t                 empty = ngx_string("");
    ngx_http_mcp_task_t       t;
    ngx_http_mcp_task_run_t  *tr;

    tr = call->task;

    if (!tr->created) {
        return NGX_DECLINED;
    }

    t = tr->task;
    ngx_memzero(t.blobs, sizeof(t.blobs));

    /* what the task no longer needs goes; the request stays for a round */
    t.blobs[NGX_HTTP_MCP_TASK_INPUTS] = empty;
    t.blobs[NGX_HTTP_MCP_TASK_ANSWERS] = empty;
    t.blobs[NGX_HTTP_MCP_TASK_STATE] = empty;
    t.blobs[NGX_HTTP_MCP_TASK_OUTCOME] = empty;

    result = ngx_http_mcp_json_get(reply, "result");
    error = ngx_http_mcp_json_get(reply, "error");
    type = ngx_http_mcp_json_get(result, "resultType");

    if (reply == NULL) {
        /* cancelled, or memory ran out */
        t.status = NGX_HTTP_MCP_TASK_CANCELLED;

    } else if (cJSON_IsString(type)
               && ngx_strcmp(type->valuestring, "input_required") == 0)
    {
        t.status = NGX_HTTP_MCP_TASK_INPUT_REQUIRED;

        state = ngx_http_mcp_json_get(result, "requestState");

        if (cJSON_IsString(state)) {
            t.blobs[NGX_HTTP_MCP_TASK_STATE].data =
                                              (u_char *) state->valuestring;
            t.blobs[NGX_HTTP_MCP_TASK_STATE].len =
                                              ngx_strlen(state->valuestring);
        }

        if (ngx_http_mcp_task_text(call->pool,
                ngx_http_mcp_json_get(result, "inputRequests"),
                &t.blobs[NGX_HTTP_MCP_TASK_INPUTS])
            != NGX_OK)
        {
            t.status = NGX_HTTP_MCP_TASK_FAILED;
        }

    } else if (result != NULL) {
        t.status = NGX_HTTP_MCP_TASK_COMPLETED;

        if (!tr->task.stateless
            && cJSON_IsTrue(ngx_http_mcp_json_get(result, "isError")))
        {
            /* 2025-11-25: the tool's error fails the task (2026: no) */
            t.status = NGX_HTTP_MCP_TASK_FAILED;
            t.tool_error = 1;
        }

        if (ngx_http_mcp_task_text(call->pool, result,
                                   &t.blobs[NGX_HTTP_MCP_TASK_OUTCOME])
            != NGX_OK)
        {
            t.status = NGX_HTTP_MCP_TASK_FAILED;
            t.tool_error = 0;
        }

    } else {
        t.status = NGX_HTTP_MCP_TASK_FAILED;

        (void) ngx_http_mcp_task_text(call->pool, error,
                                      &t.blobs[NGX_HTTP_MCP_TASK_OUTCOME]);
    }

    if (ngx_http_mcp_task_terminal(t.status)) {
        t.blobs[NGX_HTTP_MCP_TASK_REQUEST] = empty;
        t.blobs[NGX_HTTP_MCP_TASK_PARKED] = empty;
    }

    if (t.status == NGX_HTTP_MCP_TASK_FAILED
        && t.blobs[NGX_HTTP_MCP_TASK_OUTCOME].len == 0)
    {
        ngx_str_set(&t.blobs[NGX_HTTP_MCP_TASK_OUTCOME],
                    "{\"code\":-32603,\"message\":\"Internal error\"}");
    }

    t.pid = 0;
    t.updated = ngx_http_mcp_session_task_now();

    if (ngx_http_mcp_task_notice(&t, call->pool, &call->trace) != NGX_OK
        || ngx_http_mcp_session_task_set(ngx_http_mcp_call_conf(call)->zone,
                                         &t, 0, call->log)
           == NGX_ERROR)
    {
        ngx_log_error(NGX_LOG_ERR, call->log, 0,
                      "mcp: the outcome of task %*s was lost: no room in "
                      "the zone", (size_t) NGX_HTTP_MCP_TASK_ID_LEN, t.id);
    }

    return NGX_OK;
}


/*
 * A 2025 task's request to its client (message), or with message NULL
 * the answer to one: the task is input_required while one is not
 * answered.  A handler that asks during dispatch makes its call a task
 * at once: the client learns of the task before it is asked.
 */

static ngx_int_t
ngx_http_mcp_task_relay(ngx_http_mcp_call_t *call, cJSON *message)
{
    cJSON                    *params;
    ngx_int_t                 rc;
    ngx_http_mcp_task_t       t;
    ngx_http_mcp_task_run_t  *tr;

    tr = call->task;

    if (ngx_http_mcp_task_start(call, tr) != NGX_OK || !tr->created) {
        /* no task: the call ended, saying why */
        return NGX_ERROR;
    }

    t = tr->task;
    ngx_memzero(t.blobs, sizeof(t.blobs));

    if (message == NULL) {
        if (tr->asked == 0 || --tr->asked) {
            return NGX_OK;
        }

        t.status = NGX_HTTP_MCP_TASK_WORKING;

    } else {
        params = ngx_http_mcp_json_get(message, "params");

        if (params == NULL) {
            params = cJSON_AddObjectToObject(message, "params");
        }

        if (ngx_http_mcp_task_relate(params, t.id) != NGX_OK
            || ngx_http_mcp_task_text(call->pool, message, &t.message)
               != NGX_OK)
        {
            return NGX_ERROR;
        }

        tr->asked++;
        t.status = NGX_HTTP_MCP_TASK_INPUT_REQUIRED;
    }

    t.pid = ngx_pid;
    t.updated = ngx_http_mcp_session_task_now();

    if (ngx_http_mcp_task_notice(&t, call->pool, &call->trace) != NGX_OK) {
        return NGX_ERROR;
    }

    rc = ngx_http_mcp_session_task_set(ngx_http_mcp_call_conf(call)->zone,
                                       &t, 0, call->log);

    if (rc == NGX_ERROR) {
        ngx_log_error(NGX_LOG_ERR, call->log, 0,
                      "mcp: task %*s could not ask its client: no room in "
                      "the zone", (size_t) NGX_HTTP_MCP_TASK_ID_LEN, t.id);
        return NGX_ERROR;
    }

    /* NGX_DECLINED: it is over (cancelled), its call ends when woken */
    return NGX_OK;
}


/* obj._meta["io.modelcontextprotocol/related-task"]: {"taskId": id} */

ngx_int_t
ngx_http_mcp_task_relate(cJSON *obj, u_char *id)
{
    char    text[NGX_HTTP_MCP_TASK_ID_LEN + 1];
    cJSON  *meta, *related;

    meta = ngx_http_mcp_json_get(obj, "_meta");

    if (meta == NULL) {
        meta = cJSON_AddObjectToObject(obj, "_meta");
    }

    related = cJSON_AddObjectToObject(meta, NGX_HTTP_MCP_RELATED_TASK);

    *ngx_cpymem(text, id, NGX_HTTP_MCP_TASK_ID_LEN) = '\0';

    if (related == NULL
        || cJSON_AddStringToObject(related, "taskId", text) == NULL)
    {
        return NGX_ERROR;
    }

    return NGX_OK;
}


/* what a task keeps of its tools/call to run it again: name, arguments */

static ngx_int_t
ngx_http_mcp_task_request(ngx_http_mcp_call_t *call, ngx_http_mcp_task_t *t)
{
    cJSON      *request;
    ngx_int_t   rc;

    request = cJSON_CreateObject();

    if (request == NULL
        || cJSON_AddStringToObject(request, "name",
                              (char *) call->entry->name.data) == NULL
        || (call->arguments != NULL
            && !cJSON_AddItemToObject(request, "arguments",
                                      cJSON_Duplicate(call->arguments, 1))))
    {
        cJSON_Delete(request);
        return NGX_ERROR;
    }

    rc = ngx_http_mcp_task_text(call->pool, request,
                                &t->blobs[NGX_HTTP_MCP_TASK_REQUEST]);

    cJSON_Delete(request);

    return rc;
}


/* this worker was woken: its tasks that were cancelled stop */

void
ngx_http_mcp_tasks_wake(void)
{
    ngx_queue_t              *q, *next;
    ngx_http_mcp_task_run_t  *tr;

    for (q = ngx_queue_head(&ngx_http_mcp_tasks);
         q != ngx_queue_sentinel(&ngx_http_mcp_tasks);
         q = next)
    {
        next = ngx_queue_next(q);
        tr = ngx_queue_data(q, ngx_http_mcp_task_run_t, queue);

        if (tr->call->running
            || ngx_http_mcp_session_task_live(
                   ngx_http_mcp_call_conf(tr->call)->zone, tr->task.id)
               == NGX_OK)
        {
            continue;
        }

        ngx_log_debug2(NGX_LOG_DEBUG_HTTP, tr->call->log, 0,
                       "mcp task %*s stops",
                       (size_t) NGX_HTTP_MCP_TASK_ID_LEN, tr->task.id);

        /* the store has the task's end already: this only ends the call */
        ngx_http_mcp_call_error(tr->call, NGX_HTTP_MCP_REQUEST_CANCELLED,
                                "Request cancelled: the task was cancelled");
    }
}


/*
 * Runs the task's tool again on this worker, with every answer and the
 * state its last round left: a call of its own, detached from the POST
 * that brought the last answer.
 */

void
ngx_http_mcp_task_resume(ngx_http_mcp_call_t *from, ngx_http_mcp_task_t *t,
    cJSON *answers)
{
    u_char                   *state;
    cJSON                    *message, *params, *name;
    ngx_str_t                 s, *rid;
    ngx_http_mcp_msg_t        msg;
    ngx_http_mcp_call_t      *call;
    ngx_http_mcp_task_run_t  *tr;

    ngx_memzero(&msg, sizeof(ngx_http_mcp_msg_t));

    message = cJSON_CreateObject();
    params = ngx_http_mcp_task_blob(t, NGX_HTTP_MCP_TASK_REQUEST);

    if (message == NULL || params == NULL
        || !cJSON_AddItemToObject(message, "params", params))
    {
        cJSON_Delete(params);
        goto failed;
    }

    state = NULL;

    if (t->blobs[NGX_HTTP_MCP_TASK_STATE].len) {
        state = ngx_pnalloc(from->pool,
                            t->blobs[NGX_HTTP_MCP_TASK_STATE].len + 1);
        if (state == NULL) {
            goto failed;
        }

        *ngx_cpymem(state, t->blobs[NGX_HTTP_MCP_TASK_STATE].data,
                    t->blobs[NGX_HTTP_MCP_TASK_STATE].len) = '\0';
    }

    name = ngx_http_mcp_json_get(params, "name");
    msg.id = cJSON_CreateStringReference("task");

    if (!cJSON_IsString(name) || msg.id == NULL
        || !cJSON_AddItemToObject(params, "inputResponses",
                                  cJSON_Duplicate(answers, 1))
        || (state != NULL
            && cJSON_AddStringToObject(params, "requestState",
                                       (char *) state) == NULL))
    {
        goto failed;
    }

    ngx_str_set(&msg.method, "tools/call");
    msg.type = NGX_HTTP_MCP_MSG_REQUEST;
    msg.json = message;
    msg.params = params;

    /* the caller is the task's owner: it may run the tool */
    call = ngx_http_mcp_call_create(from->log, from->conf, from->rctx, &msg,
                                    message);
    message = NULL;

    if (call == NULL) {
        goto failed;
    }

    call->loc_conf = from->loc_conf;
    call->arguments = ngx_http_mcp_json_get(params, "arguments");

    /* from may end first: the id goes into the call's own pool */
    rid = ngx_http_mcp_call_correlation(from, 0);
    call->correlation.data = ngx_pstrdup(call->pool, rid);
    call->correlation.len = call->correlation.data ? rid->len : 0;

    s.data = (u_char *) name->valuestring;
    s.len = ngx_strlen(s.data);

    call->entry = ngx_http_mcp_find(&ngx_http_mcp_call_conf(call)->set->tools,
                                    &s);

    tr = ngx_http_mcp_task_run_create(call);

    if (tr == NULL) {
        /* the call ends with an error nobody hears; the task expires */
        ngx_http_mcp_call_run(call, ngx_http_mcp_task_lost);
        goto failed;
    }

    tr->task = *t;
    tr->created = 1;

    ngx_memzero(tr->task.blobs, sizeof(tr->task.blobs));

    ngx_queue_insert_tail(&ngx_http_mcp_tasks, &tr->queue);
    tr->queued = 1;

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, from->log, 0, "mcp task %*s resumes",
                   (size_t) NGX_HTTP_MCP_TASK_ID_LEN, t->id);

    ngx_http_mcp_call_run(call, ngx_http_mcp_task_rerun);

    return;

failed:

    cJSON_Delete(msg.id);
    cJSON_Delete(message);

    ngx_log_error(NGX_LOG_ERR, from->log, 0,
                  "mcp: task %*s could not resume",
                  (size_t) NGX_HTTP_MCP_TASK_ID_LEN, t->id);
}


static ngx_int_t
ngx_http_mcp_task_lost(ngx_http_mcp_call_t *call)
{
    return NGX_ERROR;
}


/* a resumed task's round: its state opened as a retry's is */

static ngx_int_t
ngx_http_mcp_task_rerun(ngx_http_mcp_call_t *call)
{
    ngx_int_t  rc;

    if (call->entry == NULL) {
        /* the tool left the configuration since */
        ngx_http_mcp_call_error(call, NGX_HTTP_MCP_INVALID_PARAMS,
                                "Unknown tool");
        return NGX_OK;
    }

    rc = ngx_http_mcp_call_open_state(call);

    if (rc != NGX_OK) {
        return (rc == NGX_DECLINED) ? NGX_OK : rc;
    }

    return call->entry->handler(call);
}


/*
 * What a set's capabilities say of tasks, when one of its tools may run
 * as one: 2026-07-28 names the extension, 2025-11-25 the methods, and
 * the versions before have no tasks.
 */

ngx_int_t
ngx_http_mcp_task_capabilities(ngx_http_mcp_set_t *set, cJSON *caps,
    ngx_uint_t version)
{
    cJSON                 *ext, *tasks, *requests, *tools;
    ngx_uint_t             i;
    ngx_http_mcp_entry_t  *e;

    if (version < NGX_HTTP_MCP_V20251125) {
        return NGX_OK;
    }

    e = set->tools.elts;

    for (i = 0; i < set->tools.nelts; i++) {
        if (ngx_http_mcp_json_get(e[i].desc, "execution") != NULL) {
            break;
        }
    }

    if (i == set->tools.nelts) {
        return NGX_OK;
    }

    if (version >= NGX_HTTP_MCP_VSTATELESS) {
        ext = ngx_http_mcp_json_get(caps, "extensions");

        if (ext == NULL) {
            ext = cJSON_AddObjectToObject(caps, "extensions");
        }

        return cJSON_AddObjectToObject(ext, NGX_HTTP_MCP_TASKS_EXTENSION)
               ? NGX_OK : NGX_ERROR;
    }

    tasks = cJSON_AddObjectToObject(caps, "tasks");
    requests = cJSON_AddObjectToObject(tasks, "requests");
    tools = cJSON_AddObjectToObject(requests, "tools");

    if (tools == NULL
        || cJSON_AddObjectToObject(tasks, "list") == NULL
        || cJSON_AddObjectToObject(tasks, "cancel") == NULL
        || cJSON_AddObjectToObject(tools, "call") == NULL)
    {
        return NGX_ERROR;
    }

    return NGX_OK;
}


/*
 * A tools/list page in a version without tasks (before 2025-11-25) has
 * no execution.taskSupport: there a tool that may run as a task is a
 * plain tool, and params.task is ignored (see task_eligible()).
 */

ngx_int_t
ngx_http_mcp_task_listing(ngx_http_mcp_call_t *call, cJSON *result)
{
    cJSON  *tools, *tool, *next, *copy;

    if (call->rctx->version >= NGX_HTTP_MCP_V20251125) {
        return NGX_OK;
    }

    tools = ngx_http_mcp_json_get(result, "tools");

    for (tool = tools ? tools->child : NULL; tool; tool = next) {
        next = tool->next;

        if (!cJSON_HasObjectItem(tool, "execution")) {
            continue;
        }

        /* the page refers to the set's descriptions: a copy changes */
        copy = cJSON_Duplicate(tool, 1);

        if (copy == NULL) {
            return NGX_ERROR;
        }

        cJSON_DeleteItemFromObjectCaseSensitive(copy, "execution");

        if (!cJSON_ReplaceItemViaPointer(tools, tool, copy)) {
            cJSON_Delete(copy);
            return NGX_ERROR;
        }
    }

    return NGX_OK;
}


/*
 * A task as the era shows it: 2026-07-28 has ttlMs and pollIntervalMs,
 * and a detailed task inlines its input requests, result or error;
 * 2025-11-25 has ttl and pollInterval.  A task that failed by its tool's
 * error is completed in 2026-07-28's eyes.
 */

cJSON *
ngx_http_mcp_task_json(ngx_http_mcp_task_t *t, ngx_uint_t stateless,
    ngx_uint_t detailed)
{
    char         id[NGX_HTTP_MCP_TASK_ID_LEN + 1];
    cJSON       *json, *blob;
    ngx_uint_t   status;
    const char  *message;

    status = (stateless && t->tool_error) ? NGX_HTTP_MCP_TASK_COMPLETED
                                          : t->status;

    switch (status) {

    case NGX_HTTP_MCP_TASK_FAILED:
        message = t->tool_error ? "The tool reported an error"
                                : "The task failed";
        break;

    case NGX_HTTP_MCP_TASK_CANCELLED:
        message = "The task was cancelled by request.";
        break;

    default:
        message = NULL;
    }

    json = cJSON_CreateObject();

    *ngx_cpymem(id, t->id, NGX_HTTP_MCP_TASK_ID_LEN) = '\0';

    if (json == NULL
        || cJSON_AddStringToObject(json, "taskId", id) == NULL
        || cJSON_AddStringToObject(json, "status",
                                   ngx_http_mcp_task_status_name(status))
           == NULL
        || ngx_http_mcp_task_time(json, "createdAt", t->created) != NGX_OK
        || ngx_http_mcp_task_time(json, "lastUpdatedAt", t->updated)
           != NGX_OK
        || cJSON_AddNumberToObject(json, stateless ? "ttlMs" : "ttl",
                                   (double) t->ttl) == NULL
        || cJSON_AddNumberToObject(json,
                                   stateless ? "pollIntervalMs"
                                             : "pollInterval",
                                   NGX_HTTP_MCP_TASK_POLL) == NULL)
    {
        cJSON_Delete(json);
        return NULL;
    }

    if (message != NULL
        && cJSON_AddStringToObject(json, "statusMessage", message) == NULL)
    {
        cJSON_Delete(json);
        return NULL;
    }

    if (!stateless || !detailed) {
        return json;
    }

    switch (status) {

    case NGX_HTTP_MCP_TASK_INPUT_REQUIRED:
        blob = ngx_http_mcp_task_blob(t, NGX_HTTP_MCP_TASK_INPUTS);

        if (blob == NULL
            || !cJSON_AddItemToObject(json, "inputRequests", blob))
        {
            cJSON_Delete(blob);
            cJSON_Delete(json);
            return NULL;
        }

        break;

    case NGX_HTTP_MCP_TASK_COMPLETED:
    case NGX_HTTP_MCP_TASK_FAILED:
        blob = ngx_http_mcp_task_blob(t, NGX_HTTP_MCP_TASK_OUTCOME);

        if (blob == NULL
            || !cJSON_AddItemToObject(json,
                       status == NGX_HTTP_MCP_TASK_COMPLETED
                       ? "result" : "error", blob))
        {
            cJSON_Delete(blob);
            cJSON_Delete(json);
            return NULL;
        }

        break;

    default:
        break;
    }

    return json;
}


/*
 * t->notice: the notifications/tasks/status that tells t's session of
 * its new status (a 2025-11-25 task's; 2026-07-28 has none on this
 * path).  Params: the task, without related-task _meta.
 */

ngx_int_t
ngx_http_mcp_task_notice(ngx_http_mcp_task_t *t, ngx_pool_t *pool,
    ngx_http_mcp_trace_t *trace)
{
    cJSON      *message, *params;
    ngx_int_t   rc;

    ngx_str_null(&t->notice);

    if (t->stateless) {
        return NGX_OK;
    }

    message = cJSON_CreateObject();
    params = ngx_http_mcp_task_json(t, 0, 0);

    if (message == NULL || params == NULL
        || cJSON_AddStringToObject(message, "jsonrpc", "2.0") == NULL
        || cJSON_AddStringToObject(message, "method",
                                   "notifications/tasks/status") == NULL
        || !cJSON_AddItemToObject(message, "params", params))
    {
        cJSON_Delete(params);
        cJSON_Delete(message);
        return NGX_ERROR;
    }

    /* the trace of the request that changed it: a span joins its trace */
    if (ngx_http_mcp_trace_message(trace, message) != NGX_OK) {
        cJSON_Delete(message);
        return NGX_ERROR;
    }

    rc = ngx_http_mcp_task_text(pool, message, &t->notice);

    cJSON_Delete(message);

    return rc;
}


/* one of a task's texts as JSON, NULL when there is none */

cJSON *
ngx_http_mcp_task_blob(ngx_http_mcp_task_t *t, ngx_uint_t n)
{
    if (t->blobs[n].len == 0) {
        return NULL;
    }

    return cJSON_ParseWithLength((char *) t->blobs[n].data, t->blobs[n].len);
}


ngx_int_t
ngx_http_mcp_task_text(ngx_pool_t *pool, cJSON *json, ngx_str_t *text)
{
    if (json == NULL) {
        return NGX_ERROR;
    }

    text->data = ngx_http_mcp_json_print(pool, json, &text->len);

    return (text->data != NULL) ? NGX_OK : NGX_ERROR;
}


/* RFC 3339, UTC, with milliseconds */

static ngx_int_t
ngx_http_mcp_task_time(cJSON *obj, const char *name, uint64_t ms)
{
    u_char    text[sizeof("1970-01-01T00:00:00.000Z")];
    ngx_tm_t  tm;

    ngx_gmtime((time_t) (ms / 1000), &tm);

    *ngx_sprintf(text, "%4d-%02d-%02dT%02d:%02d:%02d.%03dZ",
                 tm.ngx_tm_year, tm.ngx_tm_mon, tm.ngx_tm_mday,
                 tm.ngx_tm_hour, tm.ngx_tm_min, tm.ngx_tm_sec,
                 (int) (ms % 1000)) = '\0';

    return cJSON_AddStringToObject(obj, name, (char *) text)
           ? NGX_OK : NGX_ERROR;
}
