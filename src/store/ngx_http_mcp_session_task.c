
/*
 * Tasks in the shared zone.  A task is a tools/call that goes on after
 * its reply; any worker may be asked about it, so its record lives in
 * the zone: status, times, and what it keeps as JSON texts (its request,
 * the input it waits for, the answers, the outcome).  Each function is a
 * whole operation that takes the zone's lock; the JSON itself is the
 * business of ngx_http_mcp_task.c, which reads a copy and writes back
 * with a version check, so nothing is parsed under the lock.
 *
 * A task belongs to its owner (a digest of the auth subject, the session
 * or the client key): a task of another owner is not found.  Tasks live
 * for their ttl from creation, however they end; an expired task is
 * freed when the store next meets it, and creating one frees every
 * expired task first.  The zone and each owner hold a bounded number.
 * Every change of status is logged at "info" by the task's id alone.
 *
 * A 2025-11-25 task also belongs to the session that created it: each
 * change of its status sends the session notifications/tasks/status on
 * its GET stream, in the same locked step as the change, so that the
 * notifications of a task come in the order of its changes whichever
 * workers make them.  The caller writes the notification (t->notice):
 * the store only carries it.  So with the task's requests to its client
 * (t->message): to the stream of a tasks/result that listens for the
 * task, else to the session's GET stream, else they wait in the task
 * for the next tasks/result.
 */


#include "ngx_http_mcp_store.h"
#include "ngx_http_mcp_session_zone.h"


static ngx_http_mcp_task_sh_t *ngx_http_mcp_session_task_find(
    ngx_http_mcp_zone_t *ctx, u_char *id, ngx_log_t *log);
static ngx_http_mcp_task_sh_t *ngx_http_mcp_session_task_owned(
    ngx_http_mcp_zone_t *ctx, u_char *id, u_char *owner, ngx_log_t *log);
static void ngx_http_mcp_session_task_expire(ngx_http_mcp_zone_t *ctx,
    ngx_log_t *log);
static void ngx_http_mcp_session_task_evict(ngx_http_mcp_zone_t *ctx,
    ngx_http_mcp_task_sh_t *ts, ngx_log_t *log);
static ngx_uint_t ngx_http_mcp_session_task_expired(
    ngx_http_mcp_task_sh_t *ts, uint64_t now);
static void ngx_http_mcp_session_task_free(ngx_http_mcp_zone_t *ctx,
    ngx_http_mcp_task_sh_t *ts);
static ngx_int_t ngx_http_mcp_session_task_blob(ngx_http_mcp_zone_t *ctx,
    ngx_str_t *to, ngx_str_t *from);
static ngx_int_t ngx_http_mcp_session_task_copy(ngx_http_mcp_task_sh_t *ts,
    ngx_pool_t *pool, ngx_http_mcp_task_t *t, ngx_uint_t blobs);
static ngx_pid_t ngx_http_mcp_session_task_notify(ngx_http_mcp_zone_t *ctx,
    ngx_http_mcp_task_sh_t *ts, ngx_str_t *notice, ngx_log_t *log);
static ngx_pid_t ngx_http_mcp_session_task_ask(ngx_http_mcp_zone_t *ctx,
    ngx_http_mcp_task_sh_t *ts, ngx_str_t *message, ngx_log_t *log);
static ngx_http_mcp_session_node_t *ngx_http_mcp_session_task_session(
    ngx_http_mcp_zone_t *ctx, ngx_http_mcp_task_sh_t *ts);


static const char  *ngx_http_mcp_task_statuses[] = {
    "working", "input_required", "completed", "failed", "cancelled"
};


const char *
ngx_http_mcp_task_status_name(ngx_uint_t status)
{
    return ngx_http_mcp_task_statuses[status];
}


/*
 * A new task, working.  NGX_OK; NGX_BUSY when the zone holds as many
 * tasks as it may, NGX_DECLINED when the owner does, NGX_ERROR when the
 * zone has no room.
 */

ngx_int_t
ngx_http_mcp_session_task_create(ngx_shm_zone_t *zone, ngx_http_mcp_task_t *t,
    ngx_log_t *log)
{
    ngx_int_t                rc;
    ngx_uint_t               i, n;
    ngx_queue_t             *q;
    ngx_http_mcp_zone_t     *ctx;
    ngx_http_mcp_task_sh_t  *ts, *mine, *over;

    ctx = zone->data;
    rc = NGX_OK;

    t->created = ngx_http_mcp_session_task_now();
    t->updated = t->created;
    t->status = NGX_HTTP_MCP_TASK_WORKING;
    t->version = 1;

    ngx_shmtx_lock(&ctx->shpool->mutex);

    ngx_http_mcp_session_task_expire(ctx, log);

    /*
     * A task that is over holds its slot only until one is wanted: its
     * client's own, oldest first, makes room under the client's quota,
     * and any client's, oldest first, under the zone's.  Only tasks
     * that still run count against a limit then: one client, over its
     * quota, is refused alone, and it cannot fill the zone with tasks
     * it left behind.
     */

    n = 0;
    mine = NULL;
    over = NULL;

    for (q = ngx_queue_head(&ctx->sh->task_queue);
         q != ngx_queue_sentinel(&ctx->sh->task_queue);
         q = ngx_queue_next(q))
    {
        ts = ngx_queue_data(q, ngx_http_mcp_task_sh_t, queue);

        if (ngx_memcmp(ts->quota, t->quota, NGX_HTTP_MCP_TASK_OWNER_LEN)
            != 0)
        {
            if (over == NULL && ngx_http_mcp_task_terminal(ts->status)) {
                over = ts;
            }

            continue;
        }

        n++;

        if (mine == NULL && ngx_http_mcp_task_terminal(ts->status)) {
            mine = ts;
        }
    }

    if (n >= ctx->max_client_tasks) {
        if (mine == NULL) {
            rc = NGX_DECLINED;
            goto done;
        }

        ngx_http_mcp_session_task_evict(ctx, mine, log);
        mine = NULL;
    }

    if (ctx->sh->ntasks >= ctx->max_tasks) {
        ts = (mine != NULL) ? mine : over;

        if (ts == NULL) {
            rc = NGX_BUSY;
            goto done;
        }

        ngx_http_mcp_session_task_evict(ctx, ts, log);
    }

    ts = ngx_slab_calloc_locked(ctx->shpool, sizeof(ngx_http_mcp_task_sh_t));
    if (ts == NULL) {
        rc = NGX_ERROR;
        goto done;
    }

    ngx_memcpy(ts->id, t->id, NGX_HTTP_MCP_TASK_ID_LEN);
    ngx_memcpy(ts->owner, t->owner, NGX_HTTP_MCP_TASK_OWNER_LEN);
    ngx_memcpy(ts->quota, t->quota, NGX_HTTP_MCP_TASK_OWNER_LEN);
    ngx_memcpy(ts->sid, t->sid, NGX_HTTP_MCP_SESSION_ID_LEN);
    ngx_memcpy(&ts->node.key, t->id, sizeof(uint32_t));

    ts->status = t->status;
    ts->created = t->created;
    ts->updated = t->updated;
    ts->ttl = t->ttl;
    ts->version = t->version;
    ts->pid = t->pid;
    ts->stateless = t->stateless;

    for (i = 0; i < NGX_HTTP_MCP_TASK_BLOBS; i++) {
        if (ngx_http_mcp_session_task_blob(ctx, &ts->blobs[i], &t->blobs[i])
            != NGX_OK)
        {
            ngx_http_mcp_session_task_free(ctx, ts);
            rc = NGX_ERROR;
            goto done;
        }
    }

    ngx_rbtree_insert(&ctx->sh->tasks, &ts->node);
    ngx_queue_insert_tail(&ctx->sh->task_queue, &ts->queue);
    ctx->sh->ntasks++;

    ngx_log_error(NGX_LOG_INFO, log, 0, "mcp task %*s created, working",
                  (size_t) NGX_HTTP_MCP_TASK_ID_LEN, ts->id);

done:

    ngx_shmtx_unlock(&ctx->shpool->mutex);

    return rc;
}


/* a copy of the owner's task, its texts in pool; NGX_DECLINED: none */

ngx_int_t
ngx_http_mcp_session_task_get(ngx_shm_zone_t *zone, u_char *id,
    u_char *owner, ngx_pool_t *pool, ngx_http_mcp_task_t *t, ngx_log_t *log)
{
    ngx_int_t                rc;
    ngx_http_mcp_zone_t     *ctx;
    ngx_http_mcp_task_sh_t  *ts;

    ctx = zone->data;

    ngx_shmtx_lock(&ctx->shpool->mutex);

    ts = ngx_http_mcp_session_task_owned(ctx, id, owner, log);

    if (ts == NULL) {
        rc = NGX_DECLINED;

    } else {
        rc = ngx_http_mcp_session_task_copy(ts, pool, t, 1);
    }

    ngx_shmtx_unlock(&ctx->shpool->mutex);

    return rc;
}


/*
 * Writes what t says of a task that is not over: its status (and
 * whether a failure is the tool's), pid, the time of the change and
 * texts (a NULL data keeps a text, an empty one drops it); a new status
 * sends t->notice, if any, and then t->message goes, if any.  check:
 * only when the task is still at t->version.  NGX_OK; NGX_AGAIN when it
 * changed meanwhile; NGX_DECLINED when it is gone or over; NGX_ERROR
 * when the zone has no room (the task is left as it was, but for texts
 * already written).
 */

ngx_int_t
ngx_http_mcp_session_task_set(ngx_shm_zone_t *zone, ngx_http_mcp_task_t *t,
    ngx_uint_t check, ngx_log_t *log)
{
    ngx_int_t                rc;
    ngx_pid_t                wake, asked;
    ngx_uint_t               i;
    ngx_http_mcp_zone_t     *ctx;
    ngx_http_mcp_task_sh_t  *ts;

    ctx = zone->data;
    rc = NGX_OK;
    wake = 0;
    asked = 0;

    ngx_shmtx_lock(&ctx->shpool->mutex);

    ts = ngx_http_mcp_session_task_find(ctx, t->id, log);

    if (ts == NULL || ngx_http_mcp_task_terminal(ts->status)) {
        rc = NGX_DECLINED;
        goto done;
    }

    if (check && ts->version != t->version) {
        rc = NGX_AGAIN;
        goto done;
    }

    for (i = 0; i < NGX_HTTP_MCP_TASK_BLOBS; i++) {
        if (t->blobs[i].data == NULL) {
            continue;
        }

        if (ngx_http_mcp_session_task_blob(ctx, &ts->blobs[i], &t->blobs[i])
            != NGX_OK)
        {
            rc = NGX_ERROR;
            goto done;
        }
    }

    if (ts->status != t->status) {
        ngx_log_error(NGX_LOG_INFO, log, 0, "mcp task %*s %s",
                      (size_t) NGX_HTTP_MCP_TASK_ID_LEN, ts->id,
                      ngx_http_mcp_task_status_name(t->status));

        wake = ngx_http_mcp_session_task_notify(ctx, ts, &t->notice, log);
    }

    ts->status = t->status;
    ts->tool_error = t->tool_error;
    ts->pid = t->pid;
    ts->version++;
    ts->updated = t->updated;

    t->version = ts->version;

    if (t->message.len) {
        asked = ngx_http_mcp_session_task_ask(ctx, ts, &t->message, log);
    }

done:

    ngx_shmtx_unlock(&ctx->shpool->mutex);

    if (wake) {
        (void) ngx_http_mcp_notify_pid(wake, log);
    }

    if (asked && asked != wake) {
        (void) ngx_http_mcp_notify_pid(asked, log);
    }

    return rc;
}


/*
 * The owner (t->owner) cancels task t->id at t->updated: one not over is
 * cancelled at once, with t->notice, and t->pid is the worker running
 * it, to be woken; one over stays as it is.  NGX_DECLINED: no such task.
 */

ngx_int_t
ngx_http_mcp_session_task_cancel(ngx_shm_zone_t *zone,
    ngx_http_mcp_task_t *t, ngx_log_t *log)
{
    ngx_int_t                rc;
    ngx_pid_t                wake;
    ngx_http_mcp_zone_t     *ctx;
    ngx_http_mcp_task_sh_t  *ts;

    ctx = zone->data;
    t->pid = 0;
    wake = 0;
    rc = NGX_OK;

    ngx_shmtx_lock(&ctx->shpool->mutex);

    ts = ngx_http_mcp_session_task_owned(ctx, t->id, t->owner, log);

    if (ts == NULL) {
        rc = NGX_DECLINED;
        goto done;
    }

    if (ngx_http_mcp_task_terminal(ts->status)) {
        goto done;
    }

    t->pid = ts->pid;

    ts->status = NGX_HTTP_MCP_TASK_CANCELLED;
    ts->pid = 0;
    ts->version++;
    ts->updated = t->updated;

    ngx_log_error(NGX_LOG_INFO, log, 0, "mcp task %*s cancelled",
                  (size_t) NGX_HTTP_MCP_TASK_ID_LEN, ts->id);

    wake = ngx_http_mcp_session_task_notify(ctx, ts, &t->notice, log);

done:

    ngx_shmtx_unlock(&ctx->shpool->mutex);

    if (wake) {
        (void) ngx_http_mcp_notify_pid(wake, log);
    }

    return rc;
}


/*
 * A tasks/result of the owner's 2025 task listens on stream, a stream of
 * the task's session: the task's requests to the client go there from
 * now on, and those that waited for one go now.  NGX_DECLINED: no such
 * task.
 */

ngx_int_t
ngx_http_mcp_session_task_listen(ngx_shm_zone_t *zone, u_char *id,
    u_char *owner, uint32_t stream, ngx_log_t *log)
{
    u_char                       *p, *last, *eol;
    ngx_int_t                     rc;
    ngx_pid_t                     wake;
    ngx_str_t                    *parked;
    ngx_http_mcp_zone_t          *ctx;
    ngx_http_mcp_task_sh_t       *ts;
    ngx_http_mcp_session_node_t  *s;

    ctx = zone->data;
    wake = 0;
    rc = NGX_OK;

    ngx_shmtx_lock(&ctx->shpool->mutex);

    ts = ngx_http_mcp_session_task_owned(ctx, id, owner, log);

    if (ts == NULL) {
        rc = NGX_DECLINED;
        goto done;
    }

    ts->listener = stream;

    parked = &ts->blobs[NGX_HTTP_MCP_TASK_PARKED];
    s = ngx_http_mcp_session_task_session(ctx, ts);

    if (parked->len == 0 || s == NULL) {
        goto done;
    }

    p = parked->data;
    last = p + parked->len;

    while (p < last) {
        eol = ngx_strlchr(p, last, '\n');

        if (eol == NULL) {
            eol = last;
        }

        if (ngx_http_mcp_session_push_locked(ctx, s, stream, p, eol - p,
                                             &wake, log)
            != NGX_OK)
        {
            ngx_log_error(NGX_LOG_ERR, log, 0,
                          "mcp: a request of task %*s to its client was "
                          "lost: no room in the zone",
                          (size_t) NGX_HTTP_MCP_TASK_ID_LEN, ts->id);
        }

        p = eol + 1;
    }

    ngx_slab_free_locked(ctx->shpool, parked->data);
    ngx_str_null(parked);

done:

    ngx_shmtx_unlock(&ctx->shpool->mutex);

    if (wake) {
        (void) ngx_http_mcp_notify_pid(wake, log);
    }

    return rc;
}


/* whether this worker should go on with a task: NGX_OK, or NGX_ABORT */

ngx_int_t
ngx_http_mcp_session_task_live(ngx_shm_zone_t *zone, u_char *id)
{
    ngx_int_t                rc;
    ngx_http_mcp_zone_t     *ctx;
    ngx_http_mcp_task_sh_t  *ts;

    ctx = zone->data;

    ngx_shmtx_lock(&ctx->shpool->mutex);

    ts = ngx_http_mcp_session_task_find(ctx, id, ngx_cycle->log);

    rc = (ts != NULL && !ngx_http_mcp_task_terminal(ts->status)
          && ts->pid == ngx_pid)
         ? NGX_OK : NGX_ABORT;

    ngx_shmtx_unlock(&ctx->shpool->mutex);

    return rc;
}


/*
 * mcp_fleet: NGX_OK when the zone holds a stateless task of the id,
 * whoever its owner is (the node then answers about it itself).
 */

ngx_int_t
ngx_http_mcp_session_task_held(ngx_shm_zone_t *zone, u_char *id)
{
    ngx_int_t                rc;
    ngx_http_mcp_zone_t     *ctx;
    ngx_http_mcp_task_sh_t  *ts;

    ctx = zone->data;

    ngx_shmtx_lock(&ctx->shpool->mutex);

    ts = ngx_http_mcp_session_task_find(ctx, id, ngx_cycle->log);

    rc = (ts != NULL && ts->stateless) ? NGX_OK : NGX_DECLINED;

    ngx_shmtx_unlock(&ctx->shpool->mutex);

    return rc;
}


/*
 * mcp_fleet: the zone's live stateless tasks, for this node to say again
 * in Redis that it holds them: into ids, an array of pool of
 * ngx_http_mcp_task_key_t (each with what is left of its ttl).
 */

ngx_int_t
ngx_http_mcp_session_task_ids(ngx_shm_zone_t *zone, ngx_pool_t *pool,
    ngx_array_t *ids)
{
    uint64_t                  now;
    ngx_queue_t              *q;
    ngx_http_mcp_zone_t      *ctx;
    ngx_http_mcp_task_sh_t   *ts;
    ngx_http_mcp_task_key_t  *k;

    ctx = zone->data;

    if (ngx_array_init(ids, pool, 16, sizeof(ngx_http_mcp_task_key_t))
        != NGX_OK)
    {
        return NGX_ERROR;
    }

    now = ngx_http_mcp_session_task_now();

    ngx_shmtx_lock(&ctx->shpool->mutex);

    for (q = ngx_queue_head(&ctx->sh->task_queue);
         q != ngx_queue_sentinel(&ctx->sh->task_queue);
         q = ngx_queue_next(q))
    {
        ts = ngx_queue_data(q, ngx_http_mcp_task_sh_t, queue);

        if (!ts->stateless
            || ngx_http_mcp_session_task_expired(ts, now))
        {
            continue;
        }

        k = ngx_array_push(ids);
        if (k == NULL) {
            ngx_shmtx_unlock(&ctx->shpool->mutex);
            return NGX_ERROR;
        }

        ngx_memcpy(k->id, ts->id, NGX_HTTP_MCP_TASK_ID_LEN);
        k->ttl = (ngx_msec_t) (ts->created + ts->ttl - now);
    }

    ngx_shmtx_unlock(&ctx->shpool->mutex);

    return NGX_OK;
}


/*
 * Up to n of the owner's tasks, oldest first, after the task "after"
 * (NULL: from the first), without their texts.  *more: some are left.
 * NGX_DECLINED: "after" is not one of the owner's tasks.
 */

ngx_int_t
ngx_http_mcp_session_task_list(ngx_shm_zone_t *zone, u_char *owner,
    u_char *after, ngx_uint_t n, ngx_pool_t *pool, ngx_array_t *tasks,
    ngx_uint_t *more, ngx_log_t *log)
{
    ngx_int_t                rc;
    ngx_queue_t             *q;
    ngx_http_mcp_task_t     *t;
    ngx_http_mcp_zone_t     *ctx;
    ngx_http_mcp_task_sh_t  *ts;

    ctx = zone->data;
    *more = 0;
    rc = NGX_OK;

    ngx_shmtx_lock(&ctx->shpool->mutex);

    ngx_http_mcp_session_task_expire(ctx, log);

    q = ngx_queue_head(&ctx->sh->task_queue);

    if (after != NULL) {
        ts = ngx_http_mcp_session_task_owned(ctx, after, owner, log);

        if (ts == NULL) {
            rc = NGX_DECLINED;
            goto done;
        }

        q = ngx_queue_next(&ts->queue);
    }

    for ( /* void */ ;
         q != ngx_queue_sentinel(&ctx->sh->task_queue);
         q = ngx_queue_next(q))
    {
        ts = ngx_queue_data(q, ngx_http_mcp_task_sh_t, queue);

        if (ngx_memcmp(ts->owner, owner, NGX_HTTP_MCP_TASK_OWNER_LEN) != 0) {
            continue;
        }

        if (tasks->nelts == n) {
            *more = 1;
            break;
        }

        t = ngx_array_push(tasks);
        if (t == NULL) {
            rc = NGX_ERROR;
            break;
        }

        (void) ngx_http_mcp_session_task_copy(ts, pool, t, 0);
    }

done:

    ngx_shmtx_unlock(&ctx->shpool->mutex);

    return rc;
}


/*
 * Called with the zone locked: a 2025 task's status notification goes
 * to its session's GET stream.  Returns the worker to wake, or 0 (no
 * notification, no session, no GET stream: it is not kept).
 */

static ngx_pid_t
ngx_http_mcp_session_task_notify(ngx_http_mcp_zone_t *ctx,
    ngx_http_mcp_task_sh_t *ts, ngx_str_t *notice, ngx_log_t *log)
{
    ngx_pid_t                     owner;
    ngx_http_mcp_session_node_t  *s;

    if (notice->len == 0) {
        return 0;
    }

    s = ngx_http_mcp_session_task_session(ctx, ts);

    if (s == NULL
        || ngx_http_mcp_session_push_locked(ctx, s, 0, notice->data,
                                            notice->len, &owner, log)
           != NGX_OK)
    {
        return 0;
    }

    return owner;
}


/*
 * Called with the zone locked: a 2025 task's request to its client goes
 * to the tasks/result that listens, else to the GET stream, else it
 * waits in the task.  Returns the worker to wake, or 0.
 */

static ngx_pid_t
ngx_http_mcp_session_task_ask(ngx_http_mcp_zone_t *ctx,
    ngx_http_mcp_task_sh_t *ts, ngx_str_t *message, ngx_log_t *log)
{
    u_char                       *p, *data;
    size_t                        len;
    ngx_pid_t                     owner;
    ngx_str_t                    *parked;
    ngx_http_mcp_session_node_t  *s;

    s = ngx_http_mcp_session_task_session(ctx, ts);

    if (s == NULL) {
        /* the session is gone, and the call with it */
        return 0;
    }

    if ((ts->listener
         && ngx_http_mcp_session_push_locked(ctx, s, ts->listener,
                                             message->data, message->len,
                                             &owner, log)
            == NGX_OK)
        || ngx_http_mcp_session_push_locked(ctx, s, 0, message->data,
                                            message->len, &owner, log)
           == NGX_OK)
    {
        return owner;
    }

    /* one message a line: printed JSON has no raw newline */
    parked = &ts->blobs[NGX_HTTP_MCP_TASK_PARKED];
    len = parked->len + (parked->len ? 1 : 0) + message->len;

    data = ngx_slab_alloc_locked(ctx->shpool, len);

    if (data == NULL) {
        ngx_log_error(NGX_LOG_ERR, log, 0,
                      "mcp: a request of task %*s to its client was lost: "
                      "no room in the zone",
                      (size_t) NGX_HTTP_MCP_TASK_ID_LEN, ts->id);
        return 0;
    }

    p = data;

    if (parked->len) {
        p = ngx_cpymem(p, parked->data, parked->len);
        *p++ = '\n';
        ngx_slab_free_locked(ctx->shpool, parked->data);
    }

    ngx_memcpy(p, message->data, message->len);

    parked->data = data;
    parked->len = len;

    return 0;
}


/* called with the zone locked: a 2025 task's session, if it is there */

static ngx_http_mcp_session_node_t *
ngx_http_mcp_session_task_session(ngx_http_mcp_zone_t *ctx,
    ngx_http_mcp_task_sh_t *ts)
{
    ngx_str_t  sid;

    if (ts->stateless) {
        return NULL;
    }

    sid.len = NGX_HTTP_MCP_SESSION_ID_LEN;
    sid.data = ts->sid;

    return ngx_http_mcp_session_find(ctx, &sid);
}


/* called with the zone locked; an expired task found is freed */

static ngx_http_mcp_task_sh_t *
ngx_http_mcp_session_task_find(ngx_http_mcp_zone_t *ctx, u_char *id,
    ngx_log_t *log)
{
    uint32_t                 key;
    ngx_http_mcp_task_sh_t  *ts;

    ngx_memcpy(&key, id, sizeof(uint32_t));

    ts = (ngx_http_mcp_task_sh_t *) ngx_http_mcp_session_rbtree_lookup(
               &ctx->sh->tasks, key, id, offsetof(ngx_http_mcp_task_sh_t, id),
               NGX_HTTP_MCP_TASK_ID_LEN);

    if (ts == NULL
        || !ngx_http_mcp_session_task_expired(ts,
                                            ngx_http_mcp_session_task_now()))
    {
        return ts;
    }

    ngx_log_error(NGX_LOG_INFO, log, 0, "mcp task %*s expired",
                  (size_t) NGX_HTTP_MCP_TASK_ID_LEN, ts->id);

    ngx_http_mcp_session_task_free(ctx, ts);

    return NULL;
}


/*
 * The owner's task of that id, or NULL: to an owner, another's task is
 * as one that is not there.  Called with the zone locked.
 */

static ngx_http_mcp_task_sh_t *
ngx_http_mcp_session_task_owned(ngx_http_mcp_zone_t *ctx, u_char *id,
    u_char *owner, ngx_log_t *log)
{
    ngx_http_mcp_task_sh_t  *ts;

    ts = ngx_http_mcp_session_task_find(ctx, id, log);

    if (ts == NULL
        || ngx_memcmp(ts->owner, owner, NGX_HTTP_MCP_TASK_OWNER_LEN) != 0)
    {
        return NULL;
    }

    return ts;
}


static void
ngx_http_mcp_session_task_expire(ngx_http_mcp_zone_t *ctx, ngx_log_t *log)
{
    uint64_t                 now;
    ngx_queue_t             *q, *next;
    ngx_http_mcp_task_sh_t  *ts;

    now = ngx_http_mcp_session_task_now();

    for (q = ngx_queue_head(&ctx->sh->task_queue);
         q != ngx_queue_sentinel(&ctx->sh->task_queue);
         q = next)
    {
        next = ngx_queue_next(q);
        ts = ngx_queue_data(q, ngx_http_mcp_task_sh_t, queue);

        if (!ngx_http_mcp_session_task_expired(ts, now)) {
            continue;
        }

        ngx_log_error(NGX_LOG_INFO, log, 0, "mcp task %*s expired",
                      (size_t) NGX_HTTP_MCP_TASK_ID_LEN, ts->id);

        ngx_http_mcp_session_task_free(ctx, ts);
    }
}


/* a task that is over goes before its ttl: a new one needs its slot */

static void
ngx_http_mcp_session_task_evict(ngx_http_mcp_zone_t *ctx,
    ngx_http_mcp_task_sh_t *ts, ngx_log_t *log)
{
    ngx_log_error(NGX_LOG_INFO, log, 0, "mcp task %*s evicted, %s, for a "
                  "new task", (size_t) NGX_HTTP_MCP_TASK_ID_LEN, ts->id,
                  ngx_http_mcp_task_status_name(ts->status));

    ngx_http_mcp_session_task_free(ctx, ts);
}


static ngx_uint_t
ngx_http_mcp_session_task_expired(ngx_http_mcp_task_sh_t *ts, uint64_t now)
{
    return now >= ts->created + ts->ttl;
}


/* a task not yet in the tree has no queue links either */

static void
ngx_http_mcp_session_task_free(ngx_http_mcp_zone_t *ctx,
    ngx_http_mcp_task_sh_t *ts)
{
    ngx_uint_t  i;

    for (i = 0; i < NGX_HTTP_MCP_TASK_BLOBS; i++) {
        if (ts->blobs[i].data != NULL) {
            ngx_slab_free_locked(ctx->shpool, ts->blobs[i].data);
        }
    }

    if (ts->queue.next != NULL) {
        ngx_rbtree_delete(&ctx->sh->tasks, &ts->node);
        ngx_queue_remove(&ts->queue);
        ctx->sh->ntasks--;
    }

    ngx_slab_free_locked(ctx->shpool, ts);
}


/* replaces a text: a copy of from, or none when from is empty */

static ngx_int_t
ngx_http_mcp_session_task_blob(ngx_http_mcp_zone_t *ctx, ngx_str_t *to,
    ngx_str_t *from)
{
    u_char  *p;

    p = NULL;

    if (from->len) {
        p = ngx_slab_alloc_locked(ctx->shpool, from->len);
        if (p == NULL) {
            return NGX_ERROR;
        }

        ngx_memcpy(p, from->data, from->len);
    }

    if (to->data != NULL) {
        ngx_slab_free_locked(ctx->shpool, to->data);
    }

    to->data = p;
    to->len = from->len;

    return NGX_OK;
}


static ngx_int_t
ngx_http_mcp_session_task_copy(ngx_http_mcp_task_sh_t *ts, ngx_pool_t *pool,
    ngx_http_mcp_task_t *t, ngx_uint_t blobs)
{
    ngx_uint_t  i;

    ngx_memzero(t, sizeof(ngx_http_mcp_task_t));

    ngx_memcpy(t->id, ts->id, NGX_HTTP_MCP_TASK_ID_LEN);
    ngx_memcpy(t->owner, ts->owner, NGX_HTTP_MCP_TASK_OWNER_LEN);
    ngx_memcpy(t->sid, ts->sid, NGX_HTTP_MCP_SESSION_ID_LEN);

    t->status = ts->status;
    t->created = ts->created;
    t->updated = ts->updated;
    t->ttl = ts->ttl;
    t->version = ts->version;
    t->pid = ts->pid;
    t->stateless = ts->stateless;
    t->tool_error = ts->tool_error;

    if (!blobs) {
        return NGX_OK;
    }

    for (i = 0; i < NGX_HTTP_MCP_TASK_BLOBS; i++) {
        if (ts->blobs[i].len == 0) {
            continue;
        }

        t->blobs[i].data = ngx_pnalloc(pool, ts->blobs[i].len);
        if (t->blobs[i].data == NULL) {
            return NGX_ERROR;
        }

        ngx_memcpy(t->blobs[i].data, ts->blobs[i].data, ts->blobs[i].len);
        t->blobs[i].len = ts->blobs[i].len;
    }

    return NGX_OK;
}


uint64_t
ngx_http_mcp_session_task_now(void)
{
    ngx_time_t  *tp;

    tp = ngx_timeofday();

    return (uint64_t) tp->sec * 1000 + tp->msec;
}
