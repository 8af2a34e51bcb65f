
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


static void ngx_http_mcp_auth_fetched(ngx_event_t *ev);
static void ngx_http_mcp_auth_note(ngx_http_mcp_auth_loc_conf_t *alcf,
    ngx_uint_t failed);
static ngx_http_mcp_jwks_node_t *ngx_http_mcp_auth_node(
    ngx_http_mcp_jwks_zone_t *zctx, ngx_str_t *uri, ngx_uint_t create);


/* ------------------------------------------------------------------------
 * Keys from a subrequest, shared through the zone
 */

/*
 * A fetch of the request's (in the access phase, which waits for it):
 * the set in the request's pool, bounded by the key location's
 * subrequest_output_buffer_size.
 */

ngx_int_t
ngx_http_mcp_auth_fetch(ngx_http_request_t *r, ngx_http_mcp_auth_ctx_t *ctx)
{
    ngx_http_mcp_fetch_t           f;
    ngx_http_mcp_auth_loc_conf_t  *alcf;

    alcf = ctx->auth.conf;

    ngx_http_mcp_auth_note(alcf, 0);

    ngx_memzero(&f, sizeof(ngx_http_mcp_fetch_t));

    f.uri = alcf->key_request;
    f.method = NGX_HTTP_GET;
    ngx_str_set(&f.method_name, "GET");
    f.handler = ngx_http_mcp_auth_fetched;
    f.data = r;
    f.copy_headers = 1;

    ctx->fetch = ngx_http_mcp_fetch(r, r->pool, r->connection->log, &f);
    if (ctx->fetch == NULL) {
        return NGX_ERROR;
    }

    ctx->fetching = 1;
    ctx->done = 0;

    ngx_log_debug1(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "mcp auth: fetching keys from \"%V\"",
                   &alcf->key_request);

    return NGX_AGAIN;
}


/*
 * News of the fetch: at its end, or a set too big, the access phase runs
 * again, as for a parent a subrequest woke.  The request cannot go before
 * (the fetch is in its pool).
 */

static void
ngx_http_mcp_auth_fetched(ngx_event_t *ev)
{
    ngx_http_request_t *r = ev->data;

    ngx_http_mcp_auth_ctx_t  *ctx;

    ctx = ngx_http_get_module_ctx(r, ngx_http_mcp_auth_module);

    if (!ctx->fetch->done && !ctx->fetch->too_big) {
        return;
    }

    /* a set too big still comes: no more of it */
    ngx_http_mcp_fetch_close(ctx->fetch);

    ctx->done = 1;

    if (ngx_http_post_request(r, NULL) != NGX_OK) {
        ngx_http_finalize_request(r, NGX_HTTP_INTERNAL_SERVER_ERROR);
        return;
    }

    ngx_http_run_posted_requests(r->connection);
}


/* puts a fetched set that parses into the zone */

void
ngx_http_mcp_auth_store(ngx_http_request_t *r,
    ngx_http_mcp_auth_loc_conf_t *alcf, ngx_http_mcp_auth_ctx_t *ctx)
{
    u_char                      *data;
    size_t                       len;
    ngx_pool_t                  *pool;
    ngx_http_mcp_jwks_zone_t    *zctx;
    ngx_http_mcp_jwks_node_t    *node;
    ngx_http_mcp_fetch_state_t  *st;

    st = ctx->fetch;

    if (st->too_big) {
        ngx_log_error(NGX_LOG_ERR, r->connection->log, 0,
                      "mcp auth: key request \"%V\" failed: the set is "
                      "larger than subrequest_output_buffer_size",
                      &alcf->key_request);
        ngx_http_mcp_auth_note(alcf, 1);
        return;
    }

    if (st->status != NGX_HTTP_OK || st->failed || st->len == 0) {
        ngx_log_error(NGX_LOG_ERR, r->connection->log, 0,
                      "mcp auth: key request \"%V\" failed (status %ui)",
                      &alcf->key_request, st->status);
        ngx_http_mcp_auth_note(alcf, 1);
        return;
    }

    len = st->len;

    /* only a set that parses replaces the one in use */
    pool = ngx_create_pool(1024, r->connection->log);
    if (pool == NULL) {
        return;
    }

    if (ngx_http_mcp_jwks_parse(pool, st->body, len) == NULL) {
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

    ngx_memcpy(data, st->body, len);

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

    ctx->sh = ngx_http_mcp_zone_shared(shm_zone, &ctx->shpool,
                                       (octx != NULL) ? octx->sh : NULL,
                                       sizeof(ngx_http_mcp_jwks_sh_t), NULL);

    return (ctx->sh != NULL) ? NGX_OK : NGX_ERROR;
}
