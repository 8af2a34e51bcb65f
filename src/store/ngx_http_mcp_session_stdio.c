
/*
 * What a stdio session (mcp_stdio_sessions) keeps in the zone so that
 * every worker serves it: the worker that owns its child, and the
 * messages other workers took for that child (its inbound queue).  The
 * child's answers go back the other way on the session's event log, on
 * streams the other workers opened (ngx_http_mcp_session_stream.c):
 * the log is made for one worker writing what another holds, and its
 * bounds and eviction apply unchanged.  The queue is bounded per
 * session (messages and bytes), since the owner may be slow or stopped:
 * a full queue is refused at once, never waited on.  Its entries are
 * the session's allocations, freed with it (ngx_http_mcp_session.c).
 */


#include "ngx_http_mcp_store.h"
#include "ngx_http_mcp_session_zone.h"


/* a session's inbound messages, at most; the bytes: its log's size */
#define NGX_HTTP_MCP_INBOUND_MAX  64


/*
 * This worker (pid) has the session's child, for the stdio location
 * numbered location (two may share a zone): the others send to it.
 */

ngx_int_t
ngx_http_mcp_session_stdio_own(ngx_shm_zone_t *zone, ngx_str_t *sid,
    ngx_pid_t pid, ngx_uint_t location)
{
    ngx_int_t                     rc;
    ngx_http_mcp_zone_t          *ctx;
    ngx_http_mcp_session_node_t  *s;

    ctx = zone->data;

    ngx_shmtx_lock(&ctx->shpool->mutex);

    s = ngx_http_mcp_session_find(ctx, sid);

    if (s != NULL) {
        s->stdio_owner = pid;
        s->stdio_location = location;
        rc = NGX_OK;

    } else {
        rc = NGX_DECLINED;
    }

    ngx_shmtx_unlock(&ctx->shpool->mutex);

    return rc;
}


/* the worker with the session's child (0: none, or no session), and
   the location's number */

ngx_pid_t
ngx_http_mcp_session_stdio_owner(ngx_shm_zone_t *zone, ngx_str_t *sid,
    ngx_uint_t *location)
{
    ngx_pid_t                     pid;
    ngx_http_mcp_zone_t          *ctx;
    ngx_http_mcp_session_node_t  *s;

    ctx = zone->data;

    ngx_shmtx_lock(&ctx->shpool->mutex);

    s = ngx_http_mcp_session_find(ctx, sid);
    pid = (s != NULL) ? s->stdio_owner : 0;
    *location = (s != NULL) ? s->stdio_location : 0;

    ngx_shmtx_unlock(&ctx->shpool->mutex);

    return pid;
}


/*
 * A message for the session's child, queued for its owner (*owner: the
 * worker to wake).  NGX_OK; NGX_BUSY: the queue is full; NGX_DECLINED:
 * no such session, or none owns it; NGX_ERROR: no room in the zone.
 */

ngx_int_t
ngx_http_mcp_session_inbound_push(ngx_shm_zone_t *zone, ngx_str_t *sid,
    ngx_uint_t kind, uint32_t stream, u_char *data, size_t len,
    ngx_pid_t *owner, ngx_log_t *log)
{
    ngx_int_t                     rc;
    ngx_http_mcp_zone_t          *ctx;
    ngx_http_mcp_inbound_t       *in;
    ngx_http_mcp_session_node_t  *s;

    ctx = zone->data;
    *owner = 0;

    ngx_shmtx_lock(&ctx->shpool->mutex);

    s = ngx_http_mcp_session_find(ctx, sid);

    if (s == NULL || s->stdio_owner == 0) {
        rc = NGX_DECLINED;
        goto done;
    }

    *owner = s->stdio_owner;

    if (s->inbound_n >= NGX_HTTP_MCP_INBOUND_MAX
        || s->inbound_size + len > ctx->log_size)
    {
        rc = NGX_BUSY;
        goto done;
    }

    in = ngx_http_mcp_session_alloc(ctx,
                                    offsetof(ngx_http_mcp_inbound_t, data)
                                    + len, s, log);
    if (in == NULL) {
        rc = NGX_ERROR;
        goto done;
    }

    in->stream = stream;
    in->kind = kind;
    in->len = len;

    if (len) {
        ngx_memcpy(in->data, data, len);
    }

    ngx_queue_insert_tail(&s->inbound, &in->queue);
    s->inbound_n++;
    s->inbound_size += len;

    rc = NGX_OK;

done:

    ngx_shmtx_unlock(&ctx->shpool->mutex);

    return rc;
}


/*
 * The owner takes its session's queued messages, oldest first, copied
 * into out (ngx_http_mcp_inbound_msg_t, in pool).  NGX_DECLINED: the
 * store has no such session (deleted elsewhere, expired, evicted).
 */

ngx_int_t
ngx_http_mcp_session_inbound_take(ngx_shm_zone_t *zone, ngx_str_t *sid,
    ngx_pool_t *pool, ngx_array_t *out)
{
    u_char                       *p;
    ngx_int_t                     rc;
    ngx_queue_t                  *q;
    ngx_http_mcp_zone_t          *ctx;
    ngx_http_mcp_inbound_t       *in;
    ngx_http_mcp_inbound_msg_t   *m;
    ngx_http_mcp_session_node_t  *s;

    ctx = zone->data;
    rc = NGX_OK;

    ngx_shmtx_lock(&ctx->shpool->mutex);

    s = ngx_http_mcp_session_find(ctx, sid);

    if (s == NULL) {
        rc = NGX_DECLINED;
        goto done;
    }

    while (!ngx_queue_empty(&s->inbound)) {
        q = ngx_queue_head(&s->inbound);
        in = ngx_queue_data(q, ngx_http_mcp_inbound_t, queue);

        m = ngx_array_push(out);
        p = ngx_pnalloc(pool, in->len);

        if (m == NULL || p == NULL) {
            /* the rest waits for the next look */
            if (m != NULL) {
                out->nelts--;
            }

            break;
        }

        m->kind = in->kind;
        m->stream = in->stream;
        m->text.data = p;
        m->text.len = in->len;
        ngx_memcpy(p, in->data, in->len);

        ngx_queue_remove(q);
        s->inbound_n--;
        s->inbound_size -= in->len;
        ngx_slab_free_locked(ctx->shpool, in);
    }

done:

    ngx_shmtx_unlock(&ctx->shpool->mutex);

    return rc;
}
