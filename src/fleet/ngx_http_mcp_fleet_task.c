
/*
 * mcp_fleet's 2026-07-28 tasks, and the waits for Redis that sessions
 * and tasks share.  A stateless client's task lives in the zone of the
 * node that ran its tool, its owner, as a session does; Redis says
 * which node that is (key: the prefix, "task:" and the task's id;
 * value: the owner's node name; TTL: what is left of the task's life).
 *
 *  - the POST whose reply carries a new task's id waits for the SET, so
 *    that no other node calls the task unknown; with Redis down the
 *    task is answered all the same (the walk on reconnect registers it).
 *  - tasks/get, tasks/update and tasks/cancel naming a task this node
 *    does not hold go to its owner as a session's requests do
 *    (ngx_http_mcp_fleet_route()): the id is the one of the message the
 *    node would act on, which the Mcp-Name header had to match.
 *  - the owner's stale key goes when it is asked about a task it no
 *    longer holds; an expired task's key expires with it.
 *
 * Whose task it is (the auth subject, the client key) stays the
 * owner's business: a forwarded request is checked there.
 */


#include "ngx_http_mcp_fleet.h"
#include "ngx_http_mcp_jsonrpc.h"
#include "ngx_http_mcp_store.h"
#include "ngx_http_mcp_call.h"
#include "ngx_http_mcp_http.h"
#include "ngx_http_mcp_redis.h"


static void ngx_http_mcp_fleet_op_cleanup(void *data);
static ngx_int_t ngx_http_mcp_fleet_task_set(u_char *id, ngx_msec_t ttl,
    void *data, ngx_http_mcp_redis_pt handler);


/* the worker's fleet, ngx_http_mcp_fleet.c's; NULL: no fleet */
static ngx_http_mcp_fleet_worker_t  *ngx_http_mcp_fleet_task_worker;


/* at the start of a worker of a fleet (mcp_fleet's init_process) */

void
ngx_http_mcp_fleet_task_setup(ngx_http_mcp_fleet_worker_t *fw)
{
    ngx_http_mcp_fleet_task_worker = fw;
}


/*
 * A new task of a stateless call: its key is set, and the POST that
 * gets the task waits for Redis's answer (one more call pending).  No
 * POST to answer (the client left): the key is set all the same.
 */

ngx_int_t
ngx_http_mcp_fleet_task_register(ngx_http_mcp_call_t *call,
    ngx_http_mcp_task_t *t)
{
    ngx_http_mcp_ctx_t       *ctx;
    ngx_http_mcp_fleet_op_t  *op;

    if (ngx_http_mcp_fleet_task_worker == NULL || !t->stateless) {
        return NGX_OK;
    }

    ctx = call->ctx;

    if (ctx == NULL || ctx->stream != NULL) {
        (void) ngx_http_mcp_fleet_task_set(t->id, t->ttl, NULL,
                                           ngx_http_mcp_fleet_ignore);
        return NGX_OK;
    }

    op = ngx_http_mcp_fleet_op(ctx->request);
    if (op == NULL) {
        return NGX_ERROR;
    }

    op->ctx = ctx;

    if (ngx_http_mcp_fleet_task_set(t->id, t->ttl, op,
                                    ngx_http_mcp_fleet_registered)
        != NGX_OK)
    {
        ngx_http_mcp_fleet_op_done(op);
        return NGX_OK;
    }

    ngx_log_debug0(NGX_LOG_DEBUG_HTTP, call->log, 0,
                   "mcp fleet: registering a task");

    ctx->pending++;

    return NGX_OK;
}


/*
 * The task that a stateless POST's one request names, when this node
 * does not hold it: NGX_OK and *id.  NGX_DECLINED: nothing to look up
 * (another method, no id that can be one of ours, a Mcp-Name header
 * that is not the id, a task held here): the node answers itself.
 */

ngx_int_t
ngx_http_mcp_fleet_task_named(ngx_http_mcp_ctx_t *ctx, ngx_shm_zone_t *zone,
    ngx_str_t *id)
{
    cJSON               *tid;
    u_char               c;
    ngx_uint_t           i;
    ngx_str_t            said;
    const char          *param;
    ngx_http_mcp_msg_t  *msg;

    if (!ctx->parsed || ctx->batch || ctx->msgs.nelts != 1) {
        return NGX_DECLINED;
    }

    msg = ctx->msgs.elts;

    if (msg->type != NGX_HTTP_MCP_MSG_REQUEST) {
        return NGX_DECLINED;
    }

    /* tasks/get, tasks/update, tasks/cancel: what Mcp-Name names */
    param = ngx_http_mcp_jsonrpc_name_param(&msg->method);

    if (param == NULL || ngx_strcmp(param, "taskId") != 0) {
        return NGX_DECLINED;
    }

    tid = cJSON_GetObjectItemCaseSensitive(msg->params, "taskId");

    if (!cJSON_IsString(tid)
        || ngx_strlen(tid->valuestring) != NGX_HTTP_MCP_TASK_ID_LEN)
    {
        return NGX_DECLINED;
    }

    for (i = 0; i < NGX_HTTP_MCP_TASK_ID_LEN; i++) {
        c = tid->valuestring[i];

        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) {
            /* not one that any node made */
            return NGX_DECLINED;
        }
    }

    /* a Mcp-Name that disagrees is refused here, not forwarded */
    if (ngx_http_mcp_headers_name(ctx->request->pool, &ctx->headers, &said)
        != NGX_OK
        || said.len != NGX_HTTP_MCP_TASK_ID_LEN
        || ngx_memcmp(said.data, tid->valuestring, NGX_HTTP_MCP_TASK_ID_LEN)
           != 0)
    {
        return NGX_DECLINED;
    }

    if (ngx_http_mcp_session_task_held(zone, (u_char *) tid->valuestring)
        == NGX_OK)
    {
        return NGX_DECLINED;
    }

    id->data = (u_char *) tid->valuestring;
    id->len = NGX_HTTP_MCP_TASK_ID_LEN;

    return NGX_OK;
}


size_t
ngx_http_mcp_fleet_task_key(u_char *buf, u_char *id)
{
    u_char     *p;
    ngx_str_t  *prefix;

    prefix = &ngx_http_mcp_fleet_task_worker->conf->prefix;

    p = ngx_cpymem(buf, prefix->data, prefix->len);
    p = ngx_cpymem(p, NGX_HTTP_MCP_FLEET_TASK,
                   sizeof(NGX_HTTP_MCP_FLEET_TASK) - 1);
    p = ngx_cpymem(p, id, NGX_HTTP_MCP_TASK_ID_LEN);

    return p - buf;
}


/* the task's key: for the task's life */

static ngx_int_t
ngx_http_mcp_fleet_task_set(u_char *id, ngx_msec_t ttl, void *data,
    ngx_http_mcp_redis_pt handler)
{
    u_char  key[NGX_HTTP_MCP_FLEET_KEY_LEN];

    return ngx_http_mcp_fleet_own(key, ngx_http_mcp_fleet_task_key(key, id),
                                  ttl, data, handler);
}


/* SET key node EX ttl: this node owns the key's session or task */

ngx_int_t
ngx_http_mcp_fleet_own(u_char *key, size_t len, ngx_msec_t ttl, void *data,
    ngx_http_mcp_redis_pt handler)
{
    u_char       ex[NGX_INT_T_LEN];
    const char  *argv[5];
    size_t       argvlen[5];

    argv[0] = "SET";
    argvlen[0] = 3;
    argv[1] = (const char *) key;
    argvlen[1] = len;
    argv[2] = (const char *) ngx_http_mcp_fleet_task_worker->conf->node.data;
    argvlen[2] = ngx_http_mcp_fleet_task_worker->conf->node.len;
    argv[3] = "EX";
    argvlen[3] = 2;
    argv[4] = (const char *) ex;
    argvlen[4] = ngx_sprintf(ex, "%M", (ttl + 999) / 1000) - ex;

    return ngx_http_mcp_redis_command(handler, data, 5, argv, argvlen);
}


/* the node says again that it holds each live task of the zone */

void
ngx_http_mcp_fleet_task_walk(ngx_shm_zone_t *zone, ngx_pool_t *pool)
{
    ngx_uint_t                i;
    ngx_array_t               ids;
    ngx_http_mcp_task_key_t  *k;

    if (ngx_http_mcp_session_task_ids(zone, pool, &ids) != NGX_OK) {
        return;
    }

    ngx_log_debug1(NGX_LOG_DEBUG_EVENT, ngx_cycle->log, 0,
                   "mcp fleet: registering %ui tasks", ids.nelts);

    k = ids.elts;

    for (i = 0; i < ids.nelts; i++) {
        if (k[i].ttl == 0) {
            continue;
        }

        if (ngx_http_mcp_fleet_task_set(k[i].id, k[i].ttl, NULL,
                                        ngx_http_mcp_fleet_ignore)
            != NGX_OK)
        {
            break;
        }
    }
}


/*
 * A session's or a task's key is set: the POST of its reply goes on,
 * and replies if it was the last thing it waited for.
 */

void
ngx_http_mcp_fleet_registered(void *data, ngx_int_t rc, ngx_str_t *value)
{
    ngx_connection_t         *c;
    ngx_http_request_t       *r;
    ngx_http_mcp_ctx_t       *ctx;
    ngx_http_mcp_fleet_op_t  *op = data;

    r = op->request;
    ctx = op->ctx;
    ngx_http_mcp_fleet_op_done(op);

    if (r == NULL) {
        return;
    }

    c = r->connection;

    ngx_log_debug1(NGX_LOG_DEBUG_HTTP, c->log, 0,
                   "mcp fleet: registered: %i", rc);

    ctx->pending--;

    if (ctx->waiting && ctx->pending == 0 && ctx->stream == NULL) {
        ngx_http_finalize_request(r, ngx_http_mcp_reply(ctx));
        ngx_http_run_posted_requests(c);
    }
}


void
ngx_http_mcp_fleet_ignore(void *data, ngx_int_t rc, ngx_str_t *value)
{
    ngx_log_debug1(NGX_LOG_DEBUG_EVENT, ngx_cycle->log, 0,
                   "mcp fleet: redis answered: %i", rc);
}


/* a wait for Redis that its request may not outlive */

ngx_http_mcp_fleet_op_t *
ngx_http_mcp_fleet_op(ngx_http_request_t *r)
{
    ngx_pool_cleanup_t       *cln;
    ngx_http_mcp_fleet_op_t  *op;

    cln = ngx_pool_cleanup_add(r->pool, 0);
    if (cln == NULL) {
        return NULL;
    }

    op = ngx_calloc(sizeof(ngx_http_mcp_fleet_op_t), r->connection->log);
    if (op == NULL) {
        return NULL;
    }

    op->request = r;
    op->cln = cln;

    cln->handler = ngx_http_mcp_fleet_op_cleanup;
    cln->data = op;

    return op;
}


static void
ngx_http_mcp_fleet_op_cleanup(void *data)
{
    ngx_http_mcp_fleet_op_t  *op = data;

    op->request = NULL;
    op->cln = NULL;
}


void
ngx_http_mcp_fleet_op_done(ngx_http_mcp_fleet_op_t *op)
{
    if (op->cln != NULL) {
        op->cln->handler = NULL;
    }

    ngx_free(op);
}
