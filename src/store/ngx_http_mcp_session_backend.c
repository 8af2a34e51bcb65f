
/*
 * The session store's part of the gateway over several MCP servers
 * (mcp_backend, ngx_http_mcp_aggregate*.c): a client session's ids at
 * its backends, kept with the session in the zone and freed with it; and
 * each backend's health, which every worker sees, so that a backend that
 * failed is left out by all of them and the failure is told once.
 */


#include "ngx_http_mcp_store.h"
#include "ngx_http_mcp_session_zone.h"


/*
 * The gateway over several MCP servers (mcp_backend): the id the
 * session has at each backend, as records of the backend's index (one
 * byte), the id's length (two) and the id, at most 255 backends and ids
 * of 1024 bytes.  sid->len 0 forgets the backend's.  NGX_DECLINED: no
 * such session.
 */

ngx_int_t
ngx_http_mcp_session_backend_set(ngx_shm_zone_t *zone, ngx_str_t *id,
    ngx_uint_t backend, ngx_str_t *sid)
{
    u_char                       *p, *q, *last, *blob;
    size_t                        len, n;
    ngx_int_t                     rc;
    ngx_http_mcp_zone_t          *ctx;
    ngx_http_mcp_session_node_t  *s;

    if (backend > 255 || sid->len > 1024) {
        return NGX_ERROR;
    }

    ctx = zone->data;
    rc = NGX_OK;

    ngx_shmtx_lock(&ctx->shpool->mutex);

    s = ngx_http_mcp_session_find(ctx, id);

    if (s == NULL) {
        rc = NGX_DECLINED;
        goto done;
    }

    len = s->backends_len + 3 + sid->len;
    blob = ngx_http_mcp_session_alloc(ctx, len, s, ngx_cycle->log);

    if (blob == NULL) {
        rc = NGX_ERROR;
        goto done;
    }

    /* the other backends' records, then this one's */

    q = blob;
    p = s->backends;
    last = p + s->backends_len;

    while (p + 3 <= last) {
        n = (p[1] << 8) | p[2];

        if (p[0] != backend) {
            q = ngx_cpymem(q, p, 3 + n);
        }

        p += 3 + n;
    }

    if (sid->len) {
        *q++ = (u_char) backend;
        *q++ = (u_char) (sid->len >> 8);
        *q++ = (u_char) (sid->len & 0xff);
        q = ngx_cpymem(q, sid->data, sid->len);
    }

    if (s->backends) {
        ngx_slab_free_locked(ctx->shpool, s->backends);
    }

    s->backends = blob;
    s->backends_len = q - blob;

done:

    ngx_shmtx_unlock(&ctx->shpool->mutex);

    return rc;
}


/* the session's id at a backend, copied into pool; empty: none yet */

ngx_int_t
ngx_http_mcp_session_backend(ngx_shm_zone_t *zone, ngx_str_t *id,
    ngx_uint_t backend, ngx_pool_t *pool, ngx_str_t *sid)
{
    u_char                       *p, *last;
    size_t                        n;
    ngx_int_t                     rc;
    ngx_http_mcp_zone_t          *ctx;
    ngx_http_mcp_session_node_t  *s;

    ctx = zone->data;
    rc = NGX_OK;
    ngx_str_null(sid);

    ngx_shmtx_lock(&ctx->shpool->mutex);

    s = ngx_http_mcp_session_find(ctx, id);

    if (s == NULL) {
        rc = NGX_DECLINED;
        goto done;
    }

    p = s->backends;
    last = p + s->backends_len;

    while (p + 3 <= last) {
        n = (p[1] << 8) | p[2];

        if (p[0] == backend) {
            sid->data = ngx_pnalloc(pool, n);

            if (sid->data == NULL) {
                rc = NGX_ERROR;
                goto done;
            }

            ngx_memcpy(sid->data, p + 3, n);
            sid->len = n;
            break;
        }

        p += 3 + n;
    }

done:

    ngx_shmtx_unlock(&ctx->shpool->mutex);

    return rc;
}


static ngx_http_mcp_health_sh_t *ngx_http_mcp_session_health_find(
    ngx_http_mcp_zone_t *ctx, ngx_str_t *uri);
static ngx_http_mcp_health_sh_t *ngx_http_mcp_session_health_add(
    ngx_http_mcp_zone_t *ctx, ngx_str_t *uri);


static ngx_http_mcp_health_sh_t *
ngx_http_mcp_session_health_find(ngx_http_mcp_zone_t *ctx, ngx_str_t *uri)
{
    ngx_queue_t               *q;
    ngx_http_mcp_health_sh_t  *h;

    for (q = ngx_queue_head(&ctx->sh->backends);
         q != ngx_queue_sentinel(&ctx->sh->backends);
         q = ngx_queue_next(q))
    {
        h = ngx_queue_data(q, ngx_http_mcp_health_sh_t, queue);

        if (h->len == uri->len && ngx_memcmp(h->uri, uri->data, uri->len) == 0)
        {
            return h;
        }
    }

    return NULL;
}


static ngx_http_mcp_health_sh_t *
ngx_http_mcp_session_health_add(ngx_http_mcp_zone_t *ctx, ngx_str_t *uri)
{
    ngx_http_mcp_health_sh_t  *h;

    h = ngx_http_mcp_session_alloc(ctx,
                                   offsetof(ngx_http_mcp_health_sh_t, uri)
                                   + uri->len, NULL, ngx_cycle->log);
    if (h == NULL) {
        return NULL;
    }

    h->failed = 0;
    h->down = 0;
    h->version_len = 0;
    h->len = uri->len;
    ngx_memcpy(h->uri, uri->data, uri->len);
    ngx_queue_insert_tail(&ctx->sh->backends, &h->queue);

    return h;
}


/*
 * The protocol version the backend at uri speaks, which the worker that
 * initialized a session with it learnt and every worker puts into the
 * requests it sends there after that (a client's DELETE may come to any
 * worker): set, from version and *len; else read into version (at most
 * NGX_HTTP_MCP_BACKEND_VERSION_LEN bytes) and *len.  NGX_DECLINED: none
 * known, or no room to keep it.
 */

ngx_int_t
ngx_http_mcp_session_backend_version(ngx_shm_zone_t *zone, ngx_str_t *uri,
    u_char *version, size_t *len, ngx_uint_t set)
{
    ngx_int_t                  rc;
    ngx_http_mcp_zone_t       *ctx;
    ngx_http_mcp_health_sh_t  *h;

    if (set && *len > NGX_HTTP_MCP_BACKEND_VERSION_LEN) {
        return NGX_DECLINED;
    }

    ctx = zone->data;
    rc = NGX_DECLINED;

    ngx_shmtx_lock(&ctx->shpool->mutex);

    h = ngx_http_mcp_session_health_find(ctx, uri);

    if (set) {
        if (h == NULL) {
            h = ngx_http_mcp_session_health_add(ctx, uri);
        }

        if (h != NULL) {
            ngx_memcpy(h->version, version, *len);
            h->version_len = *len;
            rc = NGX_OK;
        }

    } else if (h != NULL && h->version_len) {
        ngx_memcpy(version, h->version, h->version_len);
        *len = h->version_len;
        rc = NGX_OK;
    }

    ngx_shmtx_unlock(&ctx->shpool->mutex);

    return rc;
}


/*
 * Whether the backend at uri is to be left out: it failed less than
 * retry ago.
 */

ngx_uint_t
ngx_http_mcp_session_backend_down(ngx_shm_zone_t *zone, ngx_str_t *uri,
    ngx_msec_t retry)
{
    ngx_uint_t                 down;
    ngx_http_mcp_zone_t       *ctx;
    ngx_http_mcp_health_sh_t  *h;

    ctx = zone->data;

    ngx_shmtx_lock(&ctx->shpool->mutex);

    h = ngx_http_mcp_session_health_find(ctx, uri);

    down = (h != NULL && h->down
            && (ngx_msec_int_t) (ngx_current_msec - h->failed)
               < (ngx_msec_int_t) retry);

    ngx_shmtx_unlock(&ctx->shpool->mutex);

    return down;
}


/*
 * The backend at uri answered (ok) or failed.  NGX_OK: its episode
 * began or ended with this, for the one line that tells; NGX_DECLINED:
 * nothing changed.  A backend that never failed, and whose version no
 * worker learnt, keeps no record.
 */

ngx_int_t
ngx_http_mcp_session_backend_health(ngx_shm_zone_t *zone, ngx_str_t *uri,
    ngx_uint_t ok)
{
    ngx_int_t                  rc;
    ngx_http_mcp_zone_t       *ctx;
    ngx_http_mcp_health_sh_t  *h;

    ctx = zone->data;
    rc = NGX_DECLINED;

    ngx_shmtx_lock(&ctx->shpool->mutex);

    h = ngx_http_mcp_session_health_find(ctx, uri);

    if (ok) {
        if (h != NULL && h->down) {
            h->down = 0;
            rc = NGX_OK;
        }

        goto done;
    }

    if (h == NULL) {
        h = ngx_http_mcp_session_health_add(ctx, uri);
        if (h == NULL) {
            /* no room: every worker then tells its own */
            rc = NGX_OK;
            goto done;
        }
    }

    if (!h->down) {
        h->down = 1;
        rc = NGX_OK;
    }

    h->failed = ngx_current_msec;

done:

    ngx_shmtx_unlock(&ctx->shpool->mutex);

    return rc;
}
