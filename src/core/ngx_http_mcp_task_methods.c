
/*
 * The tasks methods: tasks/get, tasks/update and tasks/cancel of both
 * eras, tasks/result and tasks/list of 2025-11-25.  Each finds the
 * caller's task in the store (a stateless caller must declare the
 * extension first, an unknown or foreign id is -32602) and answers from
 * a copy of it; the call side of a task is ngx_http_mcp_task.c.
 */


#include "ngx_http_mcp_task.h"
#include "ngx_http_mcp_json.h"
#include "ngx_http_mcp_store.h"
#include "ngx_http_mcp_call.h"
#include "ngx_http_mcp_core.h"

#define NGX_HTTP_MCP_TASK_WAIT          100     /* tasks/result's look */
#define NGX_HTTP_MCP_TASK_RETRIES       8       /* tasks/update's writes */
#define NGX_HTTP_MCP_TASK_PAGE          10      /* tasks/list */

/* the answers a task keeps in the zone until the last comes, at most */
#define NGX_HTTP_MCP_TASK_ANSWERS_MAX   65536


/* tasks/result waiting for a task to end */
typedef struct {
    ngx_http_mcp_call_t       *call;
    u_char                     id[NGX_HTTP_MCP_TASK_ID_LEN];
    u_char                     owner[NGX_HTTP_MCP_TASK_OWNER_LEN];
    ngx_event_t                timer;
} ngx_http_mcp_task_wait_t;


static ngx_int_t ngx_http_mcp_task_answer(ngx_http_mcp_task_t *t,
    cJSON *responses, ngx_pool_t *pool, cJSON **answers,
    ngx_uint_t *resume);
static ngx_int_t ngx_http_mcp_task_era(ngx_http_mcp_call_t *call);
static ngx_int_t ngx_http_mcp_task_find(ngx_http_mcp_call_t *call,
    ngx_http_mcp_task_t *t);
static ngx_int_t ngx_http_mcp_task_id_param(ngx_http_mcp_call_t *call,
    u_char **id);
static ngx_int_t ngx_http_mcp_task_outcome(ngx_http_mcp_call_t *call,
    ngx_http_mcp_task_t *t);
static void ngx_http_mcp_task_wait_handler(ngx_event_t *ev);
static void ngx_http_mcp_task_wait_cleanup(void *data);


/* tasks/get */

ngx_int_t
ngx_http_mcp_tasks_get(ngx_http_mcp_call_t *call)
{
    cJSON                *result;
    ngx_int_t             rc;
    ngx_http_mcp_task_t   t;

    rc = ngx_http_mcp_task_find(call, &t);

    if (rc != NGX_OK) {
        return (rc == NGX_DECLINED) ? NGX_OK : rc;
    }

    result = ngx_http_mcp_task_json(&t, ngx_http_mcp_call_stateless(call),
                                    1);
    if (result == NULL) {
        return NGX_ERROR;
    }

    ngx_http_mcp_call_result(call, result);

    return NGX_OK;
}


/*
 * tasks/update (2026-07-28): answers to a task's input requests, an
 * object.  Keys it did not ask, or no longer waits for, are ignored;
 * once every key is answered this worker runs the tool again with the
 * answers.
 */

ngx_int_t
ngx_http_mcp_tasks_update(ngx_http_mcp_call_t *call)
{
    cJSON                *responses, *answers;
    ngx_int_t             rc;
    ngx_uint_t            i, resume;
    ngx_http_mcp_task_t   t, read;

    responses = ngx_http_mcp_json_get(call->params, "inputResponses");

    for (i = 0; i < NGX_HTTP_MCP_TASK_RETRIES; i++) {

        rc = ngx_http_mcp_task_find(call, &t);

        if (rc != NGX_OK) {
            return (rc == NGX_DECLINED) ? NGX_OK : rc;
        }

        if (!cJSON_IsObject(responses)) {
            /* as a retry's inputResponses (call_open_state()) */
            ngx_http_mcp_call_error(call, NGX_HTTP_MCP_INVALID_PARAMS,
                                    "Invalid params: inputResponses must be "
                                    "an object");
            return NGX_OK;
        }

        if (t.status != NGX_HTTP_MCP_TASK_INPUT_REQUIRED) {
            break;
        }

        answers = NULL;
        read = t;

        rc = ngx_http_mcp_task_answer(&t, responses, call->pool, &answers,
                                      &resume);
        if (rc == NGX_DECLINED) {
            /* nothing it waits for */
            cJSON_Delete(answers);
            break;
        }

        if (rc == NGX_ABORT) {
            cJSON_Delete(answers);
            ngx_http_mcp_call_error(call, NGX_HTTP_MCP_INVALID_PARAMS,
                                    "Invalid params: the answers are too "
                                    "large to keep");
            return NGX_OK;
        }

        if (rc == NGX_OK) {
            t.updated = ngx_http_mcp_session_task_now();

            rc = ngx_http_mcp_session_task_set(
                     ngx_http_mcp_call_conf(call)->zone, &t, 1, call->log);
        }

        if (rc == NGX_AGAIN) {
            /* another worker wrote first: read it again */
            cJSON_Delete(answers);
            continue;
        }

        if (rc == NGX_OK && resume) {
            /* what was read: the request and the state to run it with */
            ngx_http_mcp_task_resume(call, &read, answers);
        }

        cJSON_Delete(answers);

        if (rc == NGX_ERROR) {
            return NGX_ERROR;
        }

        break;
    }

    ngx_http_mcp_call_result(call, cJSON_CreateObject());

    return NGX_OK;
}


/*
 * Takes the responses to what the task waits for: t is what to write,
 * *resume says the last was answered (*answers: all of them).
 * NGX_DECLINED: none of them was waited for; NGX_ABORT: the answers to
 * keep until the last comes are too large for the zone (a client's
 * bytes in shared memory: bounded, as a sealed state is).
 */

static ngx_int_t
ngx_http_mcp_task_answer(ngx_http_mcp_task_t *t, cJSON *responses,
    ngx_pool_t *pool, cJSON **answers, ngx_uint_t *resume)
{
    cJSON       *inputs, *response, *copy;
    ngx_int_t    rc;
    ngx_str_t    empty = ngx_string("");
    ngx_uint_t   taken;

    inputs = ngx_http_mcp_task_blob(t, NGX_HTTP_MCP_TASK_INPUTS);
    *answers = ngx_http_mcp_task_blob(t, NGX_HTTP_MCP_TASK_ANSWERS);

    if (*answers == NULL) {
        *answers = cJSON_CreateObject();
    }

    *resume = 0;
    taken = 0;
    rc = NGX_ERROR;

    if (inputs == NULL || *answers == NULL) {
        goto done;
    }

    cJSON_ArrayForEach(response, responses) {
        if (!cJSON_IsObject(response)
            || !cJSON_HasObjectItem(inputs, response->string))
        {
            continue;
        }

        copy = cJSON_Duplicate(response, 1);

        if (copy == NULL
            || !cJSON_AddItemToObject(*answers, response->string, copy))
        {
            cJSON_Delete(copy);
            goto done;
        }

        cJSON_DeleteItemFromObjectCaseSensitive(inputs, response->string);
        taken++;
    }

    if (taken == 0) {
        rc = NGX_DECLINED;
        goto done;
    }

    ngx_memzero(t->blobs, sizeof(t->blobs));

    if (inputs->child == NULL) {
        *resume = 1;
        t->status = NGX_HTTP_MCP_TASK_WORKING;
        t->pid = ngx_pid;
        t->blobs[NGX_HTTP_MCP_TASK_INPUTS] = empty;
        t->blobs[NGX_HTTP_MCP_TASK_ANSWERS] = empty;

    } else if (ngx_http_mcp_task_text(pool, inputs,
                                      &t->blobs[NGX_HTTP_MCP_TASK_INPUTS])
               != NGX_OK
               || ngx_http_mcp_task_text(pool, *answers,
                                    &t->blobs[NGX_HTTP_MCP_TASK_ANSWERS])
                  != NGX_OK)
    {
        goto done;

    } else if (t->blobs[NGX_HTTP_MCP_TASK_ANSWERS].len
               > NGX_HTTP_MCP_TASK_ANSWERS_MAX)
    {
        rc = NGX_ABORT;
        goto done;
    }

    rc = NGX_OK;

done:

    cJSON_Delete(inputs);

    return rc;
}


/*
 * tasks/cancel.  2026-07-28 acknowledges, whatever the task's status;
 * 2025-11-25 answers with the cancelled task, and refuses a task that
 * is over.
 */

ngx_int_t
ngx_http_mcp_tasks_cancel(ngx_http_mcp_call_t *call)
{
    cJSON                    *result;
    ngx_int_t                 rc;
    ngx_http_mcp_task_t       t;
    ngx_http_mcp_loc_conf_t  *mlcf;

    rc = ngx_http_mcp_task_find(call, &t);

    if (rc != NGX_OK) {
        return (rc == NGX_DECLINED) ? NGX_OK : rc;
    }

    if (!ngx_http_mcp_call_stateless(call)
        && ngx_http_mcp_task_terminal(t.status))
    {
        ngx_http_mcp_call_error(call, NGX_HTTP_MCP_INVALID_PARAMS,
                                "Invalid params: the task is over already");
        return NGX_OK;
    }

    mlcf = ngx_http_mcp_call_conf(call);

    /* what its session hears, if the task is not over meanwhile */
    t.status = NGX_HTTP_MCP_TASK_CANCELLED;
    t.tool_error = 0;
    t.updated = ngx_http_mcp_session_task_now();

    if (ngx_http_mcp_task_notice(&t, call->pool, &call->trace) != NGX_OK) {
        return NGX_ERROR;
    }

    rc = ngx_http_mcp_session_task_cancel(mlcf->zone, &t, call->log);

    if (rc != NGX_OK) {
        ngx_http_mcp_call_error(call, NGX_HTTP_MCP_INVALID_PARAMS,
                                "Invalid params: no such task");
        return NGX_OK;
    }

    if (t.pid != 0 && ngx_http_mcp_notify_pid(t.pid, call->log) != NGX_OK) {
        ngx_log_debug2(NGX_LOG_DEBUG_HTTP, call->log, 0,
                       "mcp task %*s: its worker is gone",
                       (size_t) NGX_HTTP_MCP_TASK_ID_LEN, t.id);
    }

    if (ngx_http_mcp_call_stateless(call)) {
        ngx_http_mcp_call_result(call, cJSON_CreateObject());
        return NGX_OK;
    }

    if (ngx_http_mcp_session_task_get(mlcf->zone, t.id, t.owner, call->pool,
                                      &t, call->log)
        != NGX_OK)
    {
        return NGX_ERROR;
    }

    result = ngx_http_mcp_task_json(&t, 0, 0);
    if (result == NULL) {
        return NGX_ERROR;
    }

    ngx_http_mcp_call_result(call, result);

    return NGX_OK;
}


/*
 * tasks/result (2025-11-25): what the tools/call would have answered,
 * once the task is over; until then the call waits, looking at the
 * store now and then (the task may run on another worker), and its
 * reply is a stream that carries the task's requests to the client.
 */

ngx_int_t
ngx_http_mcp_tasks_result(ngx_http_mcp_call_t *call)
{
    ngx_int_t                  rc;
    ngx_pool_cleanup_t        *cln;
    ngx_http_mcp_task_t        t;
    ngx_http_mcp_task_wait_t  *w;

    rc = ngx_http_mcp_task_find(call, &t);

    if (rc != NGX_OK) {
        return (rc == NGX_DECLINED) ? NGX_OK : rc;
    }

    if (ngx_http_mcp_task_terminal(t.status)) {
        return ngx_http_mcp_task_outcome(call, &t);
    }

    /*
     * Its requests travel in its session's log: a tasks/result of another
     * session of the same subject does not carry them.
     */
    if (!t.stateless
        && call->rctx->session_id.len == NGX_HTTP_MCP_SESSION_ID_LEN
        && ngx_memcmp(call->rctx->session_id.data, t.sid,
                      NGX_HTTP_MCP_SESSION_ID_LEN) == 0
        && ngx_http_mcp_call_stream(call) == NGX_OK)
    {
        /* a gone task is the timer's to tell */
        (void) ngx_http_mcp_session_task_listen(
                   ngx_http_mcp_call_conf(call)->zone, t.id, t.owner,
                   call->stream, call->log);
    }

    w = ngx_pcalloc(call->pool, sizeof(ngx_http_mcp_task_wait_t));
    cln = ngx_pool_cleanup_add(call->pool, 0);

    if (w == NULL || cln == NULL) {
        return NGX_ERROR;
    }

    w->call = call;
    ngx_memcpy(w->id, t.id, NGX_HTTP_MCP_TASK_ID_LEN);
    ngx_memcpy(w->owner, t.owner, NGX_HTTP_MCP_TASK_OWNER_LEN);

    w->timer.handler = ngx_http_mcp_task_wait_handler;
    w->timer.data = w;
    w->timer.log = call->log;
    w->timer.cancelable = 1;

    cln->handler = ngx_http_mcp_task_wait_cleanup;
    cln->data = w;

    ngx_add_timer(&w->timer, NGX_HTTP_MCP_TASK_WAIT);

    return NGX_OK;
}


static void
ngx_http_mcp_task_wait_handler(ngx_event_t *ev)
{
    ngx_int_t                  rc;
    ngx_http_mcp_call_t       *call;
    ngx_http_mcp_task_t        t;
    ngx_http_mcp_task_wait_t  *w;

    w = ev->data;
    call = w->call;

    rc = ngx_http_mcp_session_task_get(ngx_http_mcp_call_conf(call)->zone,
                                       w->id, w->owner, call->pool, &t,
                                       call->log);

    if (rc == NGX_OK && !ngx_http_mcp_task_terminal(t.status)) {
        ngx_add_timer(&w->timer, NGX_HTTP_MCP_TASK_WAIT);
        return;
    }

    if (rc == NGX_DECLINED) {
        ngx_http_mcp_call_error(call, NGX_HTTP_MCP_INVALID_PARAMS,
                                "Invalid params: no such task");
        return;
    }

    if (rc != NGX_OK || ngx_http_mcp_task_outcome(call, &t) != NGX_OK) {
        ngx_http_mcp_call_error(call, NGX_HTTP_MCP_INTERNAL_ERROR,
                                "Internal error");
    }
}


static void
ngx_http_mcp_task_wait_cleanup(void *data)
{
    ngx_http_mcp_task_wait_t  *w = data;

    if (w->timer.timer_set) {
        ngx_del_timer(&w->timer);
    }
}


/* a task's outcome as tasks/result gives it, related to the task */

static ngx_int_t
ngx_http_mcp_task_outcome(ngx_http_mcp_call_t *call, ngx_http_mcp_task_t *t)
{
    cJSON  *outcome, *code, *message, *data;

    outcome = ngx_http_mcp_task_blob(t, NGX_HTTP_MCP_TASK_OUTCOME);

    /* a tool's error is its result, even when it failed the task */
    if ((t->status == NGX_HTTP_MCP_TASK_COMPLETED || t->tool_error)
        && outcome != NULL)
    {
        if (ngx_http_mcp_task_relate(outcome, t->id) != NGX_OK) {
            cJSON_Delete(outcome);
            return NGX_ERROR;
        }

        ngx_http_mcp_call_result(call, outcome);
        return NGX_OK;
    }

    code = ngx_http_mcp_json_get(outcome, "code");
    message = ngx_http_mcp_json_get(outcome, "message");
    data = cJSON_DetachItemFromObjectCaseSensitive(outcome, "data");

    if (data != NULL && !cJSON_IsObject(data)) {
        /* the reply's data is an object its items merge into */
        cJSON_Delete(data);
        data = NULL;
    }

    /* this reply has a correlation id of its own: no second key */
    cJSON_DeleteItemFromObjectCaseSensitive(data, "correlationId");

    if (cJSON_IsNumber(code) && cJSON_IsString(message)) {
        /* logged when the task's call ended: not again at its level */
        ngx_http_mcp_call_error_passed(call, code->valueint,
                                       message->valuestring, data);
        data = NULL;

    } else if (t->status == NGX_HTTP_MCP_TASK_CANCELLED) {
        /* the client's doing, as the call's own end was: no internal error */
        ngx_http_mcp_call_error(call, NGX_HTTP_MCP_REQUEST_CANCELLED,
                                "Request cancelled: the task was cancelled");

    } else {
        ngx_http_mcp_call_error(call, NGX_HTTP_MCP_INTERNAL_ERROR,
                                "Internal error");
    }

    cJSON_Delete(data);
    cJSON_Delete(outcome);

    return NGX_OK;
}


/* tasks/list (2025-11-25): the caller's tasks, oldest first */

ngx_int_t
ngx_http_mcp_tasks_list(ngx_http_mcp_call_t *call)
{
    u_char                   *after, owner[NGX_HTTP_MCP_TASK_OWNER_LEN];
    cJSON                    *cursor, *result, *list, *task;
    ngx_int_t                 rc;
    ngx_uint_t                i, more;
    ngx_array_t               tasks;
    ngx_http_mcp_task_t      *t;

    if (ngx_http_mcp_task_era(call) != NGX_OK) {
        return NGX_OK;
    }

    cursor = ngx_http_mcp_json_get(call->params, "cursor");
    after = NULL;

    if (cursor != NULL) {
        if (!cJSON_IsString(cursor)
            || ngx_strlen(cursor->valuestring) != NGX_HTTP_MCP_TASK_ID_LEN)
        {
            goto invalid;
        }

        after = (u_char *) cursor->valuestring;
    }

    if (ngx_http_mcp_task_owner(call, owner) != NGX_OK
        || ngx_array_init(&tasks, call->pool, NGX_HTTP_MCP_TASK_PAGE,
                          sizeof(ngx_http_mcp_task_t))
           != NGX_OK)
    {
        return NGX_ERROR;
    }

    rc = ngx_http_mcp_session_task_list(ngx_http_mcp_call_conf(call)->zone,
                                        owner, after, NGX_HTTP_MCP_TASK_PAGE,
                                        call->pool, &tasks, &more, call->log);
    if (rc == NGX_DECLINED) {
        goto invalid;
    }

    if (rc != NGX_OK) {
        return NGX_ERROR;
    }

    result = cJSON_CreateObject();
    list = cJSON_AddArrayToObject(result, "tasks");

    if (list == NULL) {
        cJSON_Delete(result);
        return NGX_ERROR;
    }

    t = tasks.elts;

    for (i = 0; i < tasks.nelts; i++) {
        task = ngx_http_mcp_task_json(&t[i], 0, 0);

        if (task == NULL || !cJSON_AddItemToArray(list, task)) {
            cJSON_Delete(task);
            cJSON_Delete(result);
            return NGX_ERROR;
        }
    }

    if (more
        && cJSON_AddItemToObject(result, "nextCursor",
               cJSON_Duplicate(ngx_http_mcp_json_get(
                                   cJSON_GetArrayItem(list, i - 1), "taskId"),
                               1))
           == 0)
    {
        cJSON_Delete(result);
        return NGX_ERROR;
    }

    ngx_http_mcp_call_result(call, result);

    return NGX_OK;

invalid:

    ngx_http_mcp_call_error(call, NGX_HTTP_MCP_INVALID_PARAMS,
                            "Invalid params: invalid cursor");
    return NGX_OK;
}


/*
 * The task params.taskId names, the caller's.  NGX_DECLINED when the
 * call ended with an error: a stateless caller that did not declare the
 * extension (before anything else), no or a foreign or unknown task.
 */

static ngx_int_t
ngx_http_mcp_task_find(ngx_http_mcp_call_t *call, ngx_http_mcp_task_t *t)
{
    u_char     *id, owner[NGX_HTTP_MCP_TASK_OWNER_LEN];
    ngx_int_t   rc;

    if (ngx_http_mcp_task_era(call) != NGX_OK) {
        return NGX_DECLINED;
    }

    if (ngx_http_mcp_call_stateless(call) && !call->rctx->tasks)
    {
        rc = ngx_http_mcp_task_missing(call);
        return (rc == NGX_ABORT) ? NGX_DECLINED : rc;
    }

    if (ngx_http_mcp_task_id_param(call, &id) != NGX_OK) {
        return NGX_DECLINED;
    }

    if (ngx_http_mcp_task_owner(call, owner) != NGX_OK) {
        return NGX_ERROR;
    }

    rc = (id != NULL)
         ? ngx_http_mcp_session_task_get(ngx_http_mcp_call_conf(call)->zone,
                                         id, owner, call->pool, t, call->log)
         : NGX_DECLINED;

    if (rc == NGX_DECLINED) {
        ngx_http_mcp_call_error(call, NGX_HTTP_MCP_INVALID_PARAMS,
                                "Invalid params: no such task");
    }

    return rc;
}


/*
 * A session of a version before 2025-11-25 has no tasks methods: the
 * call ends with -32601 (NGX_DECLINED).
 */

static ngx_int_t
ngx_http_mcp_task_era(ngx_http_mcp_call_t *call)
{
    if (call->rctx->version >= NGX_HTTP_MCP_V20251125) {
        return NGX_OK;
    }

    ngx_http_mcp_call_error(call, NGX_HTTP_MCP_METHOD_NOT_FOUND,
                            "Method not found");
    return NGX_DECLINED;
}


/* params.taskId: *id NULL when it cannot be one of ours */

static ngx_int_t
ngx_http_mcp_task_id_param(ngx_http_mcp_call_t *call, u_char **id)
{
    cJSON  *tid;

    tid = ngx_http_mcp_json_get(call->params, "taskId");

    if (!cJSON_IsString(tid)) {
        ngx_http_mcp_call_error(call, NGX_HTTP_MCP_INVALID_PARAMS,
                                "Invalid params: \"taskId\" is required");
        return NGX_DECLINED;
    }

    *id = (ngx_strlen(tid->valuestring) == NGX_HTTP_MCP_TASK_ID_LEN)
          ? (u_char *) tid->valuestring : NULL;

    return NGX_OK;
}
