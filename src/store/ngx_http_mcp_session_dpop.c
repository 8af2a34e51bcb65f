
/*
 * The store's part of DPoP (RFC 9449 11.1): the proofs the auth module
 * accepted, one record per proof's key and jti, so that a proof sent
 * again is refused whichever worker it reaches.  A record is worth
 * keeping only while its proof's iat is inside the window (later the
 * proof is refused for its age anyway): the oldest go first, expired or
 * not, when the records reach their bound.  Bounded in number and to a
 * share of the zone: the zone is for sessions, and a client with a valid
 * token makes proofs as fast as it likes.
 */


#include "ngx_http_mcp_store.h"
#include "ngx_http_mcp_session_zone.h"

#include <openssl/sha.h>


#define NGX_HTTP_MCP_DPOP_MAX    16384
#define NGX_HTTP_MCP_DPOP_SHARE  8


static void ngx_http_mcp_dpop_forget(ngx_http_mcp_zone_t *ctx,
    ngx_http_mcp_dpop_sh_t *d);


ngx_int_t
ngx_http_mcp_dpop_record(ngx_shm_zone_t *zone, u_char *digest,
    time_t expire)
{
    time_t                   now;
    uint32_t                 hash;
    ngx_uint_t               max;
    ngx_queue_t             *q;
    ngx_rbtree_key_t         key;
    ngx_http_mcp_zone_t     *ctx;
    ngx_http_mcp_dpop_sh_t  *d;

    ctx = zone->data;
    now = ngx_time();

    ngx_memcpy(&hash, digest, sizeof(uint32_t));
    key = hash;

    /* a slab allocation of this size takes a power of two */
    max = (ctx->shpool->end - (u_char *) ctx->shpool)
          / NGX_HTTP_MCP_DPOP_SHARE / 128;

    if (max > NGX_HTTP_MCP_DPOP_MAX) {
        max = NGX_HTTP_MCP_DPOP_MAX;
    }

    ngx_shmtx_lock(&ctx->shpool->mutex);

    d = (ngx_http_mcp_dpop_sh_t *) ngx_http_mcp_session_rbtree_lookup(
             &ctx->sh->dpop, key, digest,
             offsetof(ngx_http_mcp_dpop_sh_t, digest), SHA256_DIGEST_LENGTH);

    if (d != NULL && d->expire >= now) {
        ngx_shmtx_unlock(&ctx->shpool->mutex);
        return NGX_DECLINED;
    }

    if (d != NULL) {
        ngx_http_mcp_dpop_forget(ctx, d);
    }

    /* the expired go, then the oldest while the records are at their bound */
    while (!ngx_queue_empty(&ctx->sh->dpop_queue)) {
        q = ngx_queue_last(&ctx->sh->dpop_queue);
        d = ngx_queue_data(q, ngx_http_mcp_dpop_sh_t, queue);

        if (d->expire >= now && ctx->sh->ndpop < max) {
            break;
        }

        ngx_http_mcp_dpop_forget(ctx, d);
    }

    for ( ;; ) {
        d = ngx_slab_alloc_locked(ctx->shpool,
                                  sizeof(ngx_http_mcp_dpop_sh_t));

        if (d != NULL || ngx_queue_empty(&ctx->sh->dpop_queue)) {
            break;
        }

        q = ngx_queue_last(&ctx->sh->dpop_queue);
        ngx_http_mcp_dpop_forget(ctx,
                                 ngx_queue_data(q, ngx_http_mcp_dpop_sh_t,
                                                queue));
    }

    if (d == NULL) {
        ngx_shmtx_unlock(&ctx->shpool->mutex);
        return NGX_ERROR;
    }

    d->node.key = key;
    d->expire = expire;
    ngx_memcpy(d->digest, digest, SHA256_DIGEST_LENGTH);

    ngx_rbtree_insert(&ctx->sh->dpop, &d->node);
    ngx_queue_insert_head(&ctx->sh->dpop_queue, &d->queue);
    ctx->sh->ndpop++;

    ngx_shmtx_unlock(&ctx->shpool->mutex);

    return NGX_OK;
}


static void
ngx_http_mcp_dpop_forget(ngx_http_mcp_zone_t *ctx, ngx_http_mcp_dpop_sh_t *d)
{
    ngx_rbtree_delete(&ctx->sh->dpop, &d->node);
    ngx_queue_remove(&d->queue);
    ctx->sh->ndpop--;
    ngx_slab_free_locked(ctx->shpool, d);
}
