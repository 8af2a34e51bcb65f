
/*
 * ngx_http_mcp_auth_module, keys from a subrequest: a JWKS fetched
 * through nginx (so proxy_pass, proxy_cache and the rest do the HTTP) is
 * kept as text in a shared memory zone with the time it arrived, so
 * every worker uses the same set; each worker parses a set once and keeps
 * the keys until the zone holds a newer one.
 */


#include "ngx_http_mcp_auth.h"
#include "ngx_http_mcp_auth_internal.h"
#include "ngx_http_mcp_jwt.h"


static ngx_int_t ngx_http_mcp_auth_fetch_done(ngx_http_request_t *r,
    void *data, ngx_int_t rc);
static void ngx_http_mcp_auth_note(ngx_http_mcp_auth_loc_conf_t *alcf,
    ngx_uint_t failed);
static ngx_http_mcp_jwks_node_t *ngx_http_mcp_auth_node(
    ngx_http_mcp_jwks_zone_t *zctx, ngx_str_t *uri, ngx_uint_t create);


/* ------------------------------------------------------------------------
 * Keys from a subrequest, shared through the zone
 */

ngx_int_t
ngx_http_mcp_auth_fetch(ngx_http_request_t *r, ngx_http_mcp_auth_ctx_t *ctx)
{
    ngx_http_request_t            *sr;
    ngx_http_post_subrequest_t    *ps;
    ngx_http_mcp_auth_loc_conf_t  *alcf;

    alcf = ctx->auth.conf;

    ngx_http_mcp_auth_note(alcf, 0);

    ps = ngx_palloc(r->pool, sizeof(ngx_http_post_subrequest_t));
    if (ps == NULL) {
        return NGX_ERROR;
    }

    ps->handler = ngx_http_mcp_auth_fetch_done;
    ps->data = ctx;

    if (ngx_http_subrequest(r, &alcf->key_request, NULL, &sr, ps,
                            NGX_HTTP_SUBREQUEST_WAITED
                            |NGX_HTTP_SUBREQUEST_IN_MEMORY)
        != NGX_OK)
    {
        return NGX_ERROR;
    }

    /* no body to read, and none to pass on */
    sr->request_body = ngx_pcalloc(r->pool, sizeof(ngx_http_request_body_t));
    if (sr->request_body == NULL) {
        return NGX_ERROR;
    }

    sr->method = NGX_HTTP_GET;
    ngx_str_set(&sr->method_name, "GET");

    ctx->subrequest = sr;
    ctx->fetching = 1;
    ctx->done = 0;

    ngx_log_debug1(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "mcp auth: fetching keys from \"%V\"",
                   &alcf->key_request);

    return NGX_AGAIN;
}


static ngx_int_t
ngx_http_mcp_auth_fetch_done(ngx_http_request_t *r, void *data, ngx_int_t rc)
{
    ngx_http_mcp_auth_ctx_t  *ctx = data;

    ctx->done = 1;
    ctx->status = r->headers_out.status;

    /*
     * NGX_ERROR (a set larger than subrequest_output_buffer_size, say)
     * ends the client's request too, before ngx_http_mcp_auth_store()
     * could count the failure: counted here, or every request would
     * fetch, and be dropped, again.
     */
    if (rc == NGX_ERROR) {
        ngx_http_mcp_auth_note(ctx->auth.conf, 1);
    }

    return rc;
}


/* puts a fetched set that parses into the zone */

void
ngx_http_mcp_auth_store(ngx_http_request_t *r,
    ngx_http_mcp_auth_loc_conf_t *alcf, ngx_http_mcp_auth_ctx_t *ctx)
{
    u_char                    *data;
    size_t                     len;
    ngx_buf_t                 *b;
    ngx_pool_t                *pool;
    ngx_http_request_t        *sr;
    ngx_http_mcp_jwks_zone_t  *zctx;
    ngx_http_mcp_jwks_node_t  *node;

    sr = ctx->subrequest;

    if (ctx->status != NGX_HTTP_OK || sr->out == NULL
        || sr->out->buf == NULL)
    {
        ngx_log_error(NGX_LOG_ERR, r->connection->log, 0,
                      "mcp auth: key request \"%V\" failed (status %i)",
                      &alcf->key_request, ctx->status);
        ngx_http_mcp_auth_note(alcf, 1);
        return;
    }

    b = sr->out->buf;
    len = b->last - b->pos;

    /* only a set that parses replaces the one in use */
    pool = ngx_create_pool(1024, r->connection->log);
    if (pool == NULL) {
        return;
    }

    if (ngx_http_mcp_jwks_parse(pool, b->pos, len) == NULL) {
        ngx_destroy_pool(pool);
        ngx_log_error(NGX_LOG_ERR, r->connection->log, 0,
                      "mcp auth: key request \"%V\" returned no valid JWK "
                      "set", &alcf->key_request);
        ngx_http_mcp_auth_note(alcf, 1);
        return;
    }

    ngx_destroy_pool(pool);

    zctx = alcf->zone->data;

    ngx_shmtx_lock(&zctx->shpool->mutex);

    node = ngx_http_mcp_auth_node(zctx, &alcf->key_request, 1);
    data = (node != NULL) ? ngx_slab_alloc_locked(zctx->shpool, len) : NULL;

    if (data == NULL) {
        ngx_shmtx_unlock(&zctx->shpool->mutex);
        ngx_log_error(NGX_LOG_ERR, r->connection->log, 0,
                      "mcp auth: no room for a JWK set in zone \""
                      NGX_HTTP_MCP_AUTH_ZONE "\"");
        return;
    }

    if (node->data != NULL) {
        ngx_slab_free_locked(zctx->shpool, node->data);
    }

    ngx_memcpy(data, b->pos, len);

    node->data = data;
    node->len = len;
    node->fetched = ngx_time();
    node->gen = ++zctx->sh->gen;

    ngx_shmtx_unlock(&zctx->shpool->mutex);
}


/*
 * The time a fetch started, or failed: either holds off the next fetch
 * of every worker for a second.  Without a set, each request with a JWT
 * would fetch again, and any client could make the key server (and
 * error_log) take one per request.
 */

static void
ngx_http_mcp_auth_note(ngx_http_mcp_auth_loc_conf_t *alcf, ngx_uint_t failed)
{
    ngx_http_mcp_jwks_zone_t  *zctx;
    ngx_http_mcp_jwks_node_t  *node;

    zctx = alcf->zone->data;

    ngx_shmtx_lock(&zctx->shpool->mutex);

    node = ngx_http_mcp_auth_node(zctx, &alcf->key_request, 1);

    if (node != NULL) {
        if (failed) {
            node->failed = ngx_time();

        } else {
            node->tried = ngx_time();
        }
    }

    ngx_shmtx_unlock(&zctx->shpool->mutex);
}


/*
 * The worker's parsed copy of the location's fetched set, renewed when
 * the zone holds a newer one.  *stale: older than the cache time;
 * *refetch: an unknown kid may trigger a fetch now, or, without a set,
 * a fetch may be tried (none started or failed in the last second).
 */

ngx_array_t *
ngx_http_mcp_auth_keys(ngx_http_request_t *r,
    ngx_http_mcp_auth_loc_conf_t *alcf, ngx_uint_t *stale,
    ngx_uint_t *refetch)
{
    time_t                      now;
    ngx_pool_t                 *pool;
    ngx_array_t                *keys;
    ngx_http_mcp_jwks_zone_t   *zctx;
    ngx_http_mcp_jwks_node_t   *node;
    ngx_http_mcp_jwks_cache_t  *cache;

    zctx = alcf->zone->data;
    cache = alcf->cache;
    now = ngx_time();

    *stale = 0;
    *refetch = 0;

    ngx_shmtx_lock(&zctx->shpool->mutex);

    node = ngx_http_mcp_auth_node(zctx, &alcf->key_request, 0);

    /*
     * Without a set, one fetch a second: a key server that hangs would
     * otherwise get a connection from each request made meanwhile.
     */
    if (node == NULL || node->data == NULL) {
        *refetch = (node == NULL
                    || (now - node->failed >= 1 && now - node->tried >= 1));
        ngx_shmtx_unlock(&zctx->shpool->mutex);
        return NULL;
    }

    /* one request of all workers refetches a stale set; others go on */
    if (now - node->fetched >= alcf->key_cache && now - node->tried >= 1) {
        *stale = 1;
    }

    *refetch = (now - node->tried >= alcf->key_refresh);

    if (cache->keys == NULL || cache->gen != node->gen) {
        pool = ngx_create_pool(2048, ngx_cycle->log);

        keys = (pool != NULL) ? ngx_http_mcp_jwks_parse(pool, node->data,
                                                        node->len)
                              : NULL;
        if (keys != NULL) {
            if (cache->pool != NULL) {
                ngx_destroy_pool(cache->pool);
            }

            cache->pool = pool;
            cache->keys = keys;
            cache->gen = node->gen;

        } else if (pool != NULL) {
            ngx_destroy_pool(pool);
        }
    }

    ngx_shmtx_unlock(&zctx->shpool->mutex);

    return cache->keys;
}


static ngx_http_mcp_jwks_node_t *
ngx_http_mcp_auth_node(ngx_http_mcp_jwks_zone_t *zctx, ngx_str_t *uri,
    ngx_uint_t create)
{
    ngx_http_mcp_jwks_node_t  *node;

    for (node = zctx->sh->nodes; node; node = node->next) {
        if (node->uri_len == uri->len
            && ngx_memcmp(node->uri, uri->data, uri->len) == 0)
        {
            return node;
        }
    }

    if (!create) {
        return NULL;
    }

    node = ngx_slab_calloc_locked(zctx->shpool,
                                  sizeof(ngx_http_mcp_jwks_node_t)
                                  + uri->len);
    if (node == NULL) {
        return NULL;
    }

    node->uri_len = uri->len;
    ngx_memcpy(node->uri, uri->data, uri->len);

    node->next = zctx->sh->nodes;
    zctx->sh->nodes = node;

    return node;
}


ngx_int_t
ngx_http_mcp_auth_init_zone(ngx_shm_zone_t *shm_zone, void *data)
{
    ngx_http_mcp_jwks_zone_t  *octx = data;

    ngx_http_mcp_jwks_zone_t  *ctx;

    ctx = shm_zone->data;

    if (octx != NULL) {
        ctx->sh = octx->sh;
        ctx->shpool = octx->shpool;
        return NGX_OK;
    }

    ctx->shpool = (ngx_slab_pool_t *) shm_zone->shm.addr;

    if (shm_zone->shm.exists) {
        ctx->sh = ctx->shpool->data;
        return NGX_OK;
    }

    ctx->sh = ngx_slab_calloc(ctx->shpool, sizeof(ngx_http_mcp_jwks_sh_t));
    if (ctx->sh == NULL) {
        return NGX_ERROR;
    }

    ctx->shpool->data = ctx->sh;

    return NGX_OK;
}
