
/*
 * What mcp_fleet (ngx_http_mcp_fleet.c) asks of the session store:
 * whether this node holds a session at all, and the ids of all the
 * sessions it holds, to say again in Redis that this node owns them.
 */


#include "ngx_http_mcp_store.h"
#include "ngx_http_mcp_session_zone.h"


/* NGX_OK when the zone holds the session, whoever its caller is */

ngx_int_t
ngx_http_mcp_session_held(ngx_shm_zone_t *zone, ngx_str_t *id)
{
    ngx_int_t             rc;
    ngx_http_mcp_zone_t  *ctx;

    ctx = zone->data;

    ngx_shmtx_lock(&ctx->shpool->mutex);

    rc = (ngx_http_mcp_session_find(ctx, id) != NULL) ? NGX_OK
                                                       : NGX_DECLINED;

    ngx_shmtx_unlock(&ctx->shpool->mutex);

    return rc;
}


/*
 * The ids of the zone's sessions (NGX_HTTP_MCP_SESSION_ID_LEN bytes
 * each) go into ids, an array of pool; *timeout is the zone's idle
 * timeout.  The copy is made under the lock, the commands after it.
 */

ngx_int_t
ngx_http_mcp_session_ids(ngx_shm_zone_t *zone, ngx_pool_t *pool,
    ngx_array_t *ids, ngx_msec_t *timeout)
{
    u_char                       *p;
    ngx_queue_t                  *q;
    ngx_http_mcp_zone_t          *ctx;
    ngx_http_mcp_session_node_t  *s;

    ctx = zone->data;
    *timeout = ctx->timeout;

    if (ngx_array_init(ids, pool, 16, NGX_HTTP_MCP_SESSION_ID_LEN)
        != NGX_OK)
    {
        return NGX_ERROR;
    }

    ngx_shmtx_lock(&ctx->shpool->mutex);

    for (q = ngx_queue_head(&ctx->sh->queue);
         q != ngx_queue_sentinel(&ctx->sh->queue);
         q = ngx_queue_next(q))
    {
        s = ngx_queue_data(q, ngx_http_mcp_session_node_t, queue);

        p = ngx_array_push(ids);
        if (p == NULL) {
            ngx_shmtx_unlock(&ctx->shpool->mutex);
            return NGX_ERROR;
        }

        ngx_memcpy(p, s->id, NGX_HTTP_MCP_SESSION_ID_LEN);
    }

    ngx_shmtx_unlock(&ctx->shpool->mutex);

    return NGX_OK;
}


ngx_msec_t
ngx_http_mcp_session_timeout(ngx_shm_zone_t *zone)
{
    ngx_http_mcp_zone_t  *ctx;

    ctx = zone->data;

    return ctx->timeout;
}
