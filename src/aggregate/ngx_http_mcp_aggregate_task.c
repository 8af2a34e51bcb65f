
/*
 * A stateless (2026-07-28) client's tasks, the io.modelcontextprotocol/
 * tasks extension, through an aggregating location (mcp_backend).
 *
 * The gateway's own sessions at the backends are each worker's, so a
 * task run in one of them could not be polled from another worker.  A
 * client that declares the extension therefore has its tools/call, and
 * its tasks/get, tasks/update and tasks/cancel, sent to the backend as
 * the stateless requests they are, without a session: the backend (one
 * that serves 2026-07-28, as this module's endpoints do) decides on the
 * task, keeps it in its own store and serves it to whichever worker
 * asks, its multi-round requests included.  Whether a backend serves
 * 2026-07-28 each worker asks once (server/discover); one that does
 * not gets the calls the sessions' way.
 *
 * The task id the client gets is not the backend's: it is sealed
 * (ngx_http_mcp_state_seal(), the key of requestState) over the
 * backend's index and its id, and bound to the client's owner
 * (ngx_http_mcp_task_owner()), so any worker or node with the key
 * routes it back, and a forged id, or one handed to another client,
 * reaches no backend: -32602, as an unknown task.
 *
 * A client that does not declare the extension goes the sessions' way
 * (ngx_http_mcp_aggregate.c); a backend's refusal there of a tool that
 * must run as a task (2025-11-25's -32601) becomes -32021.
 */


#include "ngx_http_mcp_aggregate.h"
#include "ngx_http_mcp_json.h"
#include "ngx_http_mcp_call.h"
#include "ngx_http_mcp_core.h"
#include "ngx_http_mcp_task.h"
#include "ngx_http_mcp_state.h"
#include "ngx_http_mcp_sse_read.h"
#include "ngx_http_mcp_param.h"
#include "ngx_http_mcp_trace.h"


#define NGX_HTTP_MCP_AGGREGATE_TASK_LIFE  86400  /* s, a task without ttl */
#define NGX_HTTP_MCP_AGGREGATE_TASK_BIND  "mcp_backend task:"


/* a request to one backend, in the call's pool */
typedef struct {
    ngx_http_mcp_call_t                *call;
    ngx_http_mcp_aggregate_loc_conf_t  *conf;
    ngx_http_mcp_backend_t             *backend;
    ngx_http_mcp_fetch_state_t         *st;
    char                               *token;  /* the client's task id,
                                                   or NULL: a tools/call */
    unsigned                            probing:1;  /* server/discover */
} ngx_http_mcp_aggregate_task_t;


static ngx_int_t ngx_http_mcp_aggregate_task_forward(
    ngx_http_mcp_aggregate_task_t *at);
static void ngx_http_mcp_aggregate_task_probed(
    ngx_http_mcp_aggregate_task_t *at, cJSON *reply);
static ngx_int_t ngx_http_mcp_aggregate_task_send(
    ngx_http_mcp_aggregate_task_t *at, const char *method, cJSON *params,
    const char *name);
static void ngx_http_mcp_aggregate_task_event(ngx_event_t *ev);
static cJSON *ngx_http_mcp_aggregate_task_reply(ngx_pool_t *pool,
    ngx_http_mcp_fetch_state_t *st);
static ngx_int_t ngx_http_mcp_aggregate_task_seal(
    ngx_http_mcp_aggregate_task_t *at, cJSON *result);
static ngx_int_t ngx_http_mcp_aggregate_task_open(ngx_http_mcp_call_t *call,
    ngx_http_mcp_aggregate_loc_conf_t *conf, const char *token,
    ngx_uint_t *index, ngx_str_t *id);
static ngx_int_t ngx_http_mcp_aggregate_task_bind(ngx_http_mcp_call_t *call,
    ngx_str_t *bind);
static ngx_int_t ngx_http_mcp_aggregate_task_rename(cJSON *obj,
    const char *key, const char *id);


/*
 * A stateless client's tools/call, when it declared the extension: to
 * backend i, whose prefix the name has, as the stateless request it is.
 * NGX_DECLINED: not such a call (the sessions' way).
 */

ngx_int_t
ngx_http_mcp_aggregate_task_call(ngx_http_mcp_call_t *call,
    ngx_http_mcp_aggregate_loc_conf_t *conf, ngx_uint_t i)
{
    cJSON                          *params;
    ngx_int_t                       rc;
    ngx_str_t                      *m;
    ngx_http_mcp_backend_t         *b;
    ngx_http_mcp_reqctx_t          *rctx;
    ngx_http_mcp_aggregate_task_t  *at;

    m = ngx_http_mcp_call_method(call);
    rctx = ngx_http_mcp_call_client(call);

    if (rctx->version < NGX_HTTP_MCP_VSTATELESS || !rctx->tasks
        || m->len != sizeof("tools/call") - 1
        || ngx_strncmp(m->data, "tools/call", m->len) != 0)
    {
        return NGX_DECLINED;
    }

    b = conf->backends->elts;

    if (b[i].stateless == NGX_HTTP_MCP_AGGREGATE_SESSIONS) {
        return NGX_DECLINED;
    }

    at = ngx_pcalloc(ngx_http_mcp_call_pool(call),
                     sizeof(ngx_http_mcp_aggregate_task_t));
    if (at == NULL) {
        return NGX_ERROR;
    }

    at->call = call;
    at->conf = conf;
    at->backend = &b[i];

    if (b[i].stateless == NGX_HTTP_MCP_AGGREGATE_STATELESS) {
        return ngx_http_mcp_aggregate_task_forward(at);
    }

    /*
     * whether it serves 2026-07-28 at all, this worker's first time:
     * a 2025-only server refuses a request without a session
     */

    params = cJSON_CreateObject();

    if (params == NULL
        || !cJSON_AddItemToObject(params, "_meta",
               cJSON_Duplicate(ngx_http_mcp_json_get(
                                   ngx_http_mcp_call_params(call), "_meta"),
                               1)))
    {
        cJSON_Delete(params);
        return NGX_ERROR;
    }

    at->probing = 1;

    rc = ngx_http_mcp_aggregate_task_send(at, "server/discover", params,
                                          NULL);
    cJSON_Delete(params);

    return rc;
}


/* the client's tools/call, to the backend the name has the prefix of */

static ngx_int_t
ngx_http_mcp_aggregate_task_forward(ngx_http_mcp_aggregate_task_t *at)
{
    cJSON      *name, *params;
    ngx_int_t   rc;
    ngx_str_t  *prefix;

    name = cJSON_GetObjectItemCaseSensitive(
               ngx_http_mcp_call_params(at->call), "name");
    prefix = &at->backend->prefix;

    /* its _meta as it is: the backend reads the client's from it */
    params = cJSON_Duplicate(ngx_http_mcp_call_params(at->call), 1);

    if (params == NULL
        || !cJSON_ReplaceItemInObjectCaseSensitive(params, "name",
               cJSON_CreateString(name->valuestring + prefix->len)))
    {
        cJSON_Delete(params);
        return NGX_ERROR;
    }

    rc = ngx_http_mcp_aggregate_task_send(at, "tools/call", params,
                                          name->valuestring + prefix->len);
    cJSON_Delete(params);

    return rc;
}


/*
 * The probe's answer: a backend that lists 2026-07-28 gets the call as
 * it is, else the sessions' way (the location's handler again, which
 * now declines here).  A backend that did not answer is asked again
 * with the next call.
 */

static void
ngx_http_mcp_aggregate_task_probed(ngx_http_mcp_aggregate_task_t *at,
    cJSON *reply)
{
    cJSON                   *versions, *v;
    ngx_int_t                rc;
    ngx_http_mcp_call_t     *call;
    ngx_http_mcp_backend_t  *b;

    call = at->call;
    b = at->backend;

    if (reply != NULL) {
        b->stateless = NGX_HTTP_MCP_AGGREGATE_SESSIONS;

        versions = ngx_http_mcp_json_get(
                       ngx_http_mcp_json_get(reply, "result"),
                       "supportedVersions");

        cJSON_ArrayForEach(v, versions) {
            if (cJSON_IsString(v)
                && ngx_strcmp(v->valuestring, "2026-07-28") >= 0)
            {
                b->stateless = NGX_HTTP_MCP_AGGREGATE_STATELESS;
                break;
            }
        }
    }

    if (b->stateless == NGX_HTTP_MCP_AGGREGATE_STATELESS) {
        rc = ngx_http_mcp_aggregate_task_forward(at);

    } else {
        b->stateless = NGX_HTTP_MCP_AGGREGATE_SESSIONS;
        rc = ngx_http_mcp_call_conf(call)->aggregate(call, NULL);

        if (reply == NULL) {
            /* no answer: the sessions' way this once */
            b->stateless = 0;
        }
    }

    if (rc != NGX_OK) {
        ngx_http_mcp_call_error(call, NGX_HTTP_MCP_INTERNAL_ERROR,
                                "Internal error");
    }
}


/*
 * A stateless client's tasks/get, tasks/update, tasks/cancel: to the
 * backend its id names, with the backend's own id.
 */

ngx_int_t
ngx_http_mcp_aggregate_task_method(ngx_http_mcp_call_t *call,
    ngx_http_mcp_aggregate_loc_conf_t *conf)
{
    char                           *method;
    cJSON                          *id, *params;
    ngx_int_t                       rc;
    ngx_str_t                      *m, backend_id;
    ngx_uint_t                      i;
    ngx_http_mcp_aggregate_task_t  *at;

    m = ngx_http_mcp_call_method(call);

    if (!ngx_http_mcp_call_client(call)->tasks) {
        /* before anything else, as the backend would */
        return (ngx_http_mcp_task_missing(call) == NGX_ERROR)
               ? NGX_ERROR : NGX_OK;
    }

    if (!((m->len == sizeof("tasks/get") - 1
           && ngx_strncmp(m->data, "tasks/get", m->len) == 0)
          || (m->len == sizeof("tasks/update") - 1
              && ngx_strncmp(m->data, "tasks/update", m->len) == 0)
          || (m->len == sizeof("tasks/cancel") - 1
              && ngx_strncmp(m->data, "tasks/cancel", m->len) == 0)))
    {
        ngx_http_mcp_call_error(call, NGX_HTTP_MCP_METHOD_NOT_FOUND,
                                "Method not found");
        return NGX_OK;
    }

    id = cJSON_GetObjectItemCaseSensitive(ngx_http_mcp_call_params(call),
                                          "taskId");
    if (!cJSON_IsString(id)) {
        ngx_http_mcp_call_error(call, NGX_HTTP_MCP_INVALID_PARAMS,
                                "Invalid params: \"taskId\" is required");
        return NGX_OK;
    }

    rc = ngx_http_mcp_aggregate_task_open(call, conf, id->valuestring, &i,
                                          &backend_id);
    if (rc == NGX_ERROR) {
        return NGX_ERROR;
    }

    if (rc != NGX_OK) {
        /* forged, another client's or expired: as a task nobody has */
        ngx_http_mcp_call_error(call, NGX_HTTP_MCP_INVALID_PARAMS,
                                "Invalid params: no such task");
        return NGX_OK;
    }

    at = ngx_pcalloc(ngx_http_mcp_call_pool(call),
                     sizeof(ngx_http_mcp_aggregate_task_t));
    method = ngx_pnalloc(ngx_http_mcp_call_pool(call), m->len + 1);

    if (at == NULL || method == NULL) {
        return NGX_ERROR;
    }

    (void) ngx_cpystrn((u_char *) method, m->data, m->len + 1);

    at->call = call;
    at->conf = conf;
    at->backend = (ngx_http_mcp_backend_t *) conf->backends->elts + i;
    at->token = id->valuestring;

    /* its _meta as it is: the backend reads the client's from it */
    params = cJSON_Duplicate(ngx_http_mcp_call_params(call), 1);

    if (params == NULL
        || !cJSON_ReplaceItemInObjectCaseSensitive(params, "taskId",
               cJSON_CreateString((char *) backend_id.data)))
    {
        cJSON_Delete(params);
        return NGX_ERROR;
    }

    /* a task's Mcp-Name is its id, the backend's here */
    rc = ngx_http_mcp_aggregate_task_send(at, method, params,
                                          (char *) backend_id.data);
    cJSON_Delete(params);

    return rc;
}


/*
 * A stateless client's tools/call that a backend answered the sessions'
 * way with -32601: in 2025-11-25 a tool that must run as a task says so
 * to a call without "task"; this client can have it as a task only by
 * declaring the extension, which the backend then needs: -32021.
 * Whether it answered the call.
 */

ngx_uint_t
ngx_http_mcp_aggregate_task_required(ngx_http_mcp_aggregate_op_t *op,
    ngx_http_mcp_aggregate_leg_t *leg)
{
    cJSON      *code;
    ngx_str_t  *m;

    m = ngx_http_mcp_call_method(op->call);

    if (!op->stateless
        || m->len != sizeof("tools/call") - 1
        || ngx_strncmp(m->data, "tools/call", m->len) != 0
        || !cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(
                               leg->backend->caps, "tasks")))
    {
        return 0;
    }

    code = cJSON_GetObjectItemCaseSensitive(
               cJSON_GetObjectItemCaseSensitive(leg->reply, "error"), "code");

    if (!cJSON_IsNumber(code)
        || code->valueint != NGX_HTTP_MCP_METHOD_NOT_FOUND)
    {
        return 0;
    }

    if (ngx_http_mcp_task_missing(op->call) == NGX_ERROR) {
        ngx_http_mcp_call_error(op->call, NGX_HTTP_MCP_INTERNAL_ERROR,
                                "Internal error");
    }

    return 1;
}


/*
 * server/discover: the extension, when a backend runs tools as tasks
 * (what it declared at its 2025-11-25 initialize).
 */

ngx_int_t
ngx_http_mcp_aggregate_task_extension(ngx_http_mcp_aggregate_op_t *op,
    cJSON *caps)
{
    cJSON                   *ext;
    ngx_uint_t               i;
    ngx_http_mcp_backend_t  *b;

    b = op->conf->backends->elts;

    for (i = 0; i < op->conf->backends->nelts; i++) {
        if (cJSON_IsObject(ngx_http_mcp_json_get(
                ngx_http_mcp_json_get(
                    ngx_http_mcp_json_get(b[i].caps, "tasks"), "requests"),
                "tools")))
        {
            break;
        }
    }

    if (i == op->conf->backends->nelts) {
        return NGX_OK;
    }

    ext = cJSON_GetObjectItemCaseSensitive(caps, "extensions");

    if (ext == NULL) {
        ext = cJSON_AddObjectToObject(caps, "extensions");
    }

    if (!cJSON_IsObject(ext)) {
        return NGX_ERROR;
    }

    if (cJSON_HasObjectItem(ext, "io.modelcontextprotocol/tasks")) {
        return NGX_OK;
    }

    return cJSON_AddObjectToObject(ext, "io.modelcontextprotocol/tasks")
           ? NGX_OK : NGX_ERROR;
}


/*
 * The request to the backend, without a session: the client's params
 * (its _meta says its version and capabilities), and the 2026-07-28
 * headers that must say what the body says.
 */

static ngx_int_t
ngx_http_mcp_aggregate_task_send(ngx_http_mcp_aggregate_task_t *at,
    const char *method, cJSON *params, const char *name)
{
    cJSON                 *msg, *p, *version;
    ngx_uint_t             n;
    ngx_str_t              plain, value;
    const char            *v;
    ngx_table_elt_t       *h;
    ngx_http_request_t    *r;
    ngx_http_mcp_fetch_t   f;

    r = ngx_http_mcp_call_http_request(at->call);

    version = ngx_http_mcp_json_get(
                  ngx_http_mcp_json_get(params, "_meta"),
                  "io.modelcontextprotocol/protocolVersion");
    v = cJSON_IsString(version) ? version->valuestring : "2026-07-28";

    msg = cJSON_CreateObject();
    p = cJSON_Duplicate(params, 1);

    if (msg == NULL || p == NULL
        || cJSON_AddStringToObject(msg, "jsonrpc", "2.0") == NULL
        || cJSON_AddNumberToObject(msg, "id", 1) == NULL
        || cJSON_AddStringToObject(msg, "method", method) == NULL
        || !cJSON_AddItemToObject(msg, "params", p))
    {
        cJSON_Delete(p);
        cJSON_Delete(msg);
        return NGX_ERROR;
    }

    ngx_memzero(&f, sizeof(ngx_http_mcp_fetch_t));

    if (ngx_http_mcp_aggregate_body(at->call, r->pool, msg, &f.body)
        != NGX_OK)
    {
        return NGX_ERROR;
    }

    h = ngx_pcalloc(r->pool, 4 * sizeof(ngx_table_elt_t));

    if (h == NULL) {
        return NGX_ERROR;
    }

    n = 0;

    if (ngx_http_mcp_aggregate_header(r->pool, &h[n++], "Accept", "accept",
            (u_char *) "application/json, text/event-stream",
            sizeof("application/json, text/event-stream") - 1)
        != NGX_OK
        || ngx_http_mcp_aggregate_header(r->pool, &h[n++],
                                         "MCP-Protocol-Version",
                                         "mcp-protocol-version",
                                         (u_char *) v, ngx_strlen(v))
           != NGX_OK
        || ngx_http_mcp_aggregate_header(r->pool, &h[n++], "Mcp-Method",
                                         "mcp-method", (u_char *) method,
                                         ngx_strlen(method))
           != NGX_OK)
    {
        return NGX_ERROR;
    }

    if (name != NULL) {
        plain.data = (u_char *) name;
        plain.len = ngx_strlen(name);

        /* a client's or a backend's text: never raw into a header */
        if (ngx_http_mcp_param_encode(r->pool, &plain, &value) != NGX_OK
            || ngx_http_mcp_aggregate_header(r->pool, &h[n++], "Mcp-Name",
                                             "mcp-name", value.data,
                                             value.len)
               != NGX_OK)
        {
            return NGX_ERROR;
        }
    }

    f.uri = at->backend->uri;
    f.method = NGX_HTTP_POST;
    ngx_str_set(&f.method_name, "POST");
    f.headers = h;
    f.nheaders = n;
    f.trace = ngx_http_mcp_call_trace(at->call);
    f.max = at->conf->max_size;
    f.timeout = at->conf->max_time;
    f.handler = ngx_http_mcp_aggregate_task_event;
    f.data = at;

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "mcp backend \"%V\": stateless %s",
                   &at->backend->name, method);

    at->st = ngx_http_mcp_fetch_call(at->call, &f);

    return (at->st != NULL) ? NGX_OK : NGX_ERROR;
}


static void
ngx_http_mcp_aggregate_task_event(ngx_event_t *ev)
{
    ngx_http_mcp_aggregate_task_t *at = ev->data;

    u_char                      *p, text[512];
    cJSON                       *reply, *result;
    const char                  *failure;
    ngx_http_mcp_fetch_state_t  *st;

    st = at->st;

    if (st == NULL || st->gone) {
        return;
    }

    if (!st->done && !st->too_big && !st->timed_out) {
        return;
    }

    at->st = NULL;

    reply = (st->done && !st->failed && !st->too_big)
            ? ngx_http_mcp_aggregate_task_reply(
                  ngx_http_mcp_call_pool(at->call), st)
            : NULL;

    failure = st->too_big ? "its reply is larger than mcp_backend_max_size"
              : st->timed_out ? "no answer in mcp_backend_max_time"
              : "no JSON-RPC response";

    ngx_http_mcp_fetch_close(st);

    if (at->probing) {
        at->probing = 0;
        ngx_http_mcp_aggregate_task_probed(at, reply);
        cJSON_Delete(reply);
        return;
    }

    if (reply == NULL) {
        /* -32000, not -32603: the gateway is fine */
        p = ngx_snprintf(text, sizeof(text) - 1, "Backend \"%V\" is "
                         "unavailable: %s", &at->backend->name, failure);
        *p = '\0';

        ngx_http_mcp_call_error(at->call, NGX_HTTP_MCP_SERVER_ERROR,
                                (const char *) text);
        return;
    }

    result = cJSON_GetObjectItemCaseSensitive(reply, "result");

    if (cJSON_IsObject(result)
        && ngx_http_mcp_aggregate_task_seal(at, result) != NGX_OK)
    {
        cJSON_Delete(reply);
        ngx_http_mcp_call_error(at->call, NGX_HTTP_MCP_INTERNAL_ERROR,
                                "Internal error");
        return;
    }

    ngx_http_mcp_aggregate_relay(at->call, reply);
    cJSON_Delete(reply);
}


/*
 * The backend's JSON-RPC response, whatever the status (a 2026-07-28
 * refusal is a 4xx with its error): the body, or the SSE event that
 * holds it (what else the stream carried is not relayed).
 */

static cJSON *
ngx_http_mcp_aggregate_task_reply(ngx_pool_t *pool,
    ngx_http_mcp_fetch_state_t *st)
{
    u_char  *p, *end, *next, *data;
    cJSON   *reply;
    size_t   n;

    if (st->body == NULL || st->len == 0) {
        return NULL;
    }

    if (st->type.len != sizeof("text/event-stream") - 1
        || ngx_strncasecmp(st->type.data, (u_char *) "text/event-stream",
                           st->type.len)
           != 0)
    {
        return ngx_http_mcp_aggregate_response(pool, st->body, st->len);
    }

    data = ngx_pnalloc(pool, st->len);
    if (data == NULL) {
        return NULL;
    }

    end = st->body + st->len;
    p = ngx_http_mcp_sse_bom(st->body, end);

    while (p < end) {
        next = ngx_http_mcp_sse_event_end(p, end);

        if (next == NULL) {
            next = end;
        }

        n = ngx_http_mcp_sse_data(p, next, data);

        if (n) {
            reply = ngx_http_mcp_aggregate_response(pool, data, n);

            if (reply != NULL) {
                return reply;
            }
        }

        p = next;
    }

    return NULL;
}


/*
 * A backend's result to a client: a new task's id (a CreateTaskResult)
 * sealed for this client, a known one put back as the client has it,
 * in the task and in its inlined result's related task.
 */

static ngx_int_t
ngx_http_mcp_aggregate_task_seal(ngx_http_mcp_aggregate_task_t *at,
    cJSON *result)
{
    u_char      *buf, *q;
    cJSON       *id, *ttl, *inner;
    time_t       expires;
    ngx_str_t    bind, payload, token;
    ngx_pool_t  *pool;
    u_char       key[NGX_HTTP_MCP_STATE_KEY_LEN];

    id = cJSON_GetObjectItemCaseSensitive(result, "taskId");

    if (!cJSON_IsString(id)) {
        return NGX_OK;
    }

    if (at->token == NULL) {
        /* a new task of tools/call: the id this client polls it by */

        pool = ngx_http_mcp_call_pool(at->call);
        ttl = cJSON_GetObjectItemCaseSensitive(result, "ttlMs");

        expires = ngx_time() + NGX_HTTP_MCP_AGGREGATE_TASK_LIFE;

        if (cJSON_IsNumber(ttl) && ttl->valuedouble > 0
            && ttl->valuedouble < 1000.0 * NGX_HTTP_MCP_AGGREGATE_TASK_LIFE)
        {
            /* a minute more: the backend's clock runs its own way */
            expires = ngx_time() + (time_t) (ttl->valuedouble / 1000) + 60;
        }

        buf = ngx_pnalloc(pool, NGX_INT_T_LEN + 1
                                + ngx_strlen(id->valuestring));
        if (buf == NULL) {
            return NGX_ERROR;
        }

        q = ngx_sprintf(buf, "%ui %s", at->backend->index, id->valuestring);

        payload.data = buf;
        payload.len = q - buf;

        if (ngx_http_mcp_aggregate_task_bind(at->call, &bind) != NGX_OK
            || ngx_http_mcp_call_state_key(at->call, key) != NGX_OK
            || ngx_http_mcp_state_seal(pool, key, &bind, &payload, expires,
                                       &token)
               != NGX_OK)
        {
            return NGX_ERROR;
        }

        at->token = ngx_pnalloc(pool, token.len + 1);
        if (at->token == NULL) {
            return NGX_ERROR;
        }

        (void) ngx_cpystrn((u_char *) at->token, token.data, token.len + 1);
    }

    inner = cJSON_GetObjectItemCaseSensitive(result, "result");

    if (ngx_http_mcp_aggregate_task_rename(result, "taskId", at->token)
        != NGX_OK
        || ngx_http_mcp_aggregate_task_rename(
               cJSON_GetObjectItemCaseSensitive(
                   cJSON_GetObjectItemCaseSensitive(inner, "_meta"),
                   NGX_HTTP_MCP_RELATED_TASK),
               "taskId", at->token)
           != NGX_OK)
    {
        return NGX_ERROR;
    }

    return NGX_OK;
}


/*
 * A client's task id: the backend's index and id (*id, NUL-terminated),
 * NGX_OK; NGX_DECLINED: forged, another client's, expired, or naming
 * a backend the location does not have.
 */

static ngx_int_t
ngx_http_mcp_aggregate_task_open(ngx_http_mcp_call_t *call,
    ngx_http_mcp_aggregate_loc_conf_t *conf, const char *token,
    ngx_uint_t *index, ngx_str_t *id)
{
    u_char     *sp;
    ngx_int_t   rc, i;
    ngx_str_t   bind, text, payload;
    u_char      key[NGX_HTTP_MCP_STATE_KEY_LEN];

    text.data = (u_char *) token;
    text.len = ngx_strlen(token);

    if (text.len == 0 || text.len > NGX_HTTP_MCP_STATE_MAX_LEN) {
        return NGX_DECLINED;
    }

    if (ngx_http_mcp_aggregate_task_bind(call, &bind) != NGX_OK
        || ngx_http_mcp_call_state_key(call, key) != NGX_OK)
    {
        return NGX_ERROR;
    }

    rc = ngx_http_mcp_state_open(ngx_http_mcp_call_pool(call), key, &bind,
                                 &text, ngx_time(), &payload);
    if (rc == NGX_ERROR) {
        return NGX_ERROR;
    }

    if (rc != NGX_OK) {
        return NGX_DECLINED;
    }

    sp = ngx_strlchr(payload.data, payload.data + payload.len, ' ');

    if (sp == NULL || sp == payload.data) {
        return NGX_DECLINED;
    }

    i = ngx_atoi(payload.data, sp - payload.data);

    /* a key that outlived a reload may name a backend no longer there */
    if (i == NGX_ERROR || (ngx_uint_t) i >= conf->backends->nelts) {
        return NGX_DECLINED;
    }

    *index = i;
    id->data = sp + 1;
    id->len = payload.data + payload.len - id->data;

    return NGX_OK;
}


/* what a task id is bound to: the client it was handed to */

static ngx_int_t
ngx_http_mcp_aggregate_task_bind(ngx_http_mcp_call_t *call, ngx_str_t *bind)
{
    u_char  *p;

    p = ngx_pnalloc(ngx_http_mcp_call_pool(call),
                    sizeof(NGX_HTTP_MCP_AGGREGATE_TASK_BIND) - 1
                    + NGX_HTTP_MCP_TASK_OWNER_LEN);
    if (p == NULL) {
        return NGX_ERROR;
    }

    bind->data = p;
    bind->len = sizeof(NGX_HTTP_MCP_AGGREGATE_TASK_BIND) - 1
                + NGX_HTTP_MCP_TASK_OWNER_LEN;

    p = ngx_cpymem(p, NGX_HTTP_MCP_AGGREGATE_TASK_BIND,
                   sizeof(NGX_HTTP_MCP_AGGREGATE_TASK_BIND) - 1);

    return ngx_http_mcp_task_owner(call, p);
}


/* obj's key, when it is a string, replaced by id */

static ngx_int_t
ngx_http_mcp_aggregate_task_rename(cJSON *obj, const char *key,
    const char *id)
{
    if (!cJSON_IsString(cJSON_GetObjectItemCaseSensitive(obj, key))) {
        return NGX_OK;
    }

    return cJSON_ReplaceItemInObjectCaseSensitive(obj, key,
                                                  cJSON_CreateString(id))
           ? NGX_OK : NGX_ERROR;
}
