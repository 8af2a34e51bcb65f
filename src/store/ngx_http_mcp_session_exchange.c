
/*
 * The zone of mcp_token_exchange's tokens (ngx_http_mcp_exchange_store.h):
 * a red-black tree by key and a queue by age, the oldest evicted when the
 * zone is full or holds its maximum of entries.  Times of exchanges in
 * flight and of failures are ngx_current_msec, the same monotonic clock
 * in every worker.
 */


#include "ngx_http_mcp_store.h"
#include "ngx_http_mcp_exchange_store.h"


#define NGX_HTTP_MCP_EXCHANGE_ZONE  "mcp_token_exchange"


typedef struct {
    ngx_rbtree_node_t             node;       /* key: the key's 4 bytes */
    ngx_queue_t                   queue;      /* by age, newest first */
    u_char                        key[NGX_HTTP_MCP_EXCHANGE_KEY_LEN];
    u_char                       *token;      /* in the pool, or NULL */
    size_t                        len;
    time_t                        until;
    ngx_msec_t                    since;      /* in flight since */
    ngx_msec_t                    failed;     /* the last failure's time */
    unsigned                      in_flight:1;
    unsigned                      has_failed:1;
    unsigned                      refused:1;
} ngx_http_mcp_exchange_node_t;


typedef struct {
    ngx_rbtree_t                  rbtree;
    ngx_rbtree_node_t             sentinel;
    ngx_queue_t                   queue;
    ngx_uint_t                    count;
} ngx_http_mcp_exchange_sh_t;


typedef struct {
    ngx_http_mcp_exchange_sh_t   *sh;
    ngx_slab_pool_t              *shpool;
    ngx_uint_t                    max;
} ngx_http_mcp_exchange_zone_t;


static ngx_int_t ngx_http_mcp_exchange_init_zone(ngx_shm_zone_t *shm_zone,
    void *data);
static ngx_http_mcp_exchange_node_t *ngx_http_mcp_exchange_find(
    ngx_http_mcp_exchange_zone_t *ctx, u_char *key);
static ngx_http_mcp_exchange_node_t *ngx_http_mcp_exchange_add(
    ngx_http_mcp_exchange_zone_t *ctx, u_char *key);
static void ngx_http_mcp_exchange_evict(ngx_http_mcp_exchange_zone_t *ctx);
static void ngx_http_mcp_exchange_free(ngx_http_mcp_exchange_zone_t *ctx,
    ngx_http_mcp_exchange_node_t *n);


/* the zone's tag: one zone of this name, whoever adds it */
static ngx_uint_t  ngx_http_mcp_exchange_store_tag;


ngx_shm_zone_t *
ngx_http_mcp_exchange_zone(ngx_conf_t *cf, size_t size, ngx_uint_t max)
{
    ngx_str_t                      name;
    ngx_shm_zone_t                *zone;
    ngx_http_mcp_exchange_zone_t  *ctx;

    ngx_str_set(&name, NGX_HTTP_MCP_EXCHANGE_ZONE);

    zone = ngx_shared_memory_add(cf, &name, size,
                                 &ngx_http_mcp_exchange_store_tag);
    if (zone == NULL) {
        return NULL;
    }

    if (zone->data == NULL) {
        ctx = ngx_pcalloc(cf->pool, sizeof(ngx_http_mcp_exchange_zone_t));
        if (ctx == NULL) {
            return NULL;
        }

        ctx->max = max;

        zone->init = ngx_http_mcp_exchange_init_zone;
        zone->data = ctx;
    }

    return zone;
}


static ngx_int_t
ngx_http_mcp_exchange_init_zone(ngx_shm_zone_t *shm_zone, void *data)
{
    ngx_http_mcp_exchange_zone_t  *octx = data;

    ngx_uint_t                     fresh;
    ngx_http_mcp_exchange_zone_t  *ctx;

    ctx = shm_zone->data;
    fresh = 0;

    ctx->sh = ngx_http_mcp_zone_shared(shm_zone, &ctx->shpool,
                                       (octx != NULL) ? octx->sh : NULL,
                                       sizeof(ngx_http_mcp_exchange_sh_t),
                                       &fresh);
    if (ctx->sh == NULL) {
        return NGX_ERROR;
    }

    if (fresh) {
        ngx_rbtree_init(&ctx->sh->rbtree, &ctx->sh->sentinel,
                        ngx_rbtree_insert_value);
        ngx_queue_init(&ctx->sh->queue);
    }

    return NGX_OK;
}


ngx_http_mcp_exchange_found_e
ngx_http_mcp_exchange_lookup(ngx_shm_zone_t *zone, u_char *key,
    ngx_msec_t stale, ngx_pool_t *pool, ngx_str_t *token)
{
    time_t                         now;
    ngx_http_mcp_exchange_found_e  found;
    ngx_http_mcp_exchange_node_t  *n;
    ngx_http_mcp_exchange_zone_t  *ctx;

    ctx = zone->data;
    now = ngx_time();

    ngx_shmtx_lock(&ctx->shpool->mutex);

    n = ngx_http_mcp_exchange_find(ctx, key);

    if (n != NULL && n->token != NULL && n->until > now) {
        token->len = n->len;
        token->data = ngx_pnalloc(pool, n->len);

        if (token->data == NULL) {
            ngx_shmtx_unlock(&ctx->shpool->mutex);
            return NGX_HTTP_MCP_EXCHANGE_FAILED;
        }

        ngx_memcpy(token->data, n->token, n->len);
        ngx_shmtx_unlock(&ctx->shpool->mutex);

        return NGX_HTTP_MCP_EXCHANGE_HIT;
    }

    if (n != NULL && n->in_flight
        && (ngx_msec_int_t) (ngx_current_msec - n->since) < (ngx_msec_int_t)
                                                              stale)
    {
        found = NGX_HTTP_MCP_EXCHANGE_WAIT;

    } else if (n != NULL && n->has_failed
               && (ngx_msec_int_t) (ngx_current_msec - n->failed) < 1000)
    {
        /*
         * signed: this worker's clock was read at its last event and may
         * be a little behind the one that failed; unsigned, the hold-off
         * read as long past, and a second attempt went 1 ms after it
         */
        found = n->refused ? NGX_HTTP_MCP_EXCHANGE_REFUSED
                           : NGX_HTTP_MCP_EXCHANGE_FAILED;

    } else {
        if (n == NULL) {
            n = ngx_http_mcp_exchange_add(ctx, key);
        }

        if (n == NULL) {
            /* no room even after evicting: exchange without a record */
            ngx_shmtx_unlock(&ctx->shpool->mutex);
            return NGX_HTTP_MCP_EXCHANGE_GO;
        }

        n->in_flight = 1;
        n->since = ngx_current_msec;
        found = NGX_HTTP_MCP_EXCHANGE_GO;
    }

    ngx_shmtx_unlock(&ctx->shpool->mutex);

    return found;
}


ngx_int_t
ngx_http_mcp_exchange_put(ngx_shm_zone_t *zone, u_char *key,
    ngx_str_t *token, time_t until, ngx_log_t *log)
{
    u_char                        *p;
    ngx_http_mcp_exchange_node_t  *n;
    ngx_http_mcp_exchange_zone_t  *ctx;

    ctx = zone->data;

    ngx_shmtx_lock(&ctx->shpool->mutex);

    n = ngx_http_mcp_exchange_find(ctx, key);

    if (n == NULL) {
        n = ngx_http_mcp_exchange_add(ctx, key);
    }

    p = NULL;

    if (n != NULL) {
        p = ngx_slab_alloc_locked(ctx->shpool, token->len);

        while (p == NULL && ctx->sh->count > 1) {
            ngx_http_mcp_exchange_evict(ctx);
            p = ngx_slab_alloc_locked(ctx->shpool, token->len);
        }
    }

    if (p == NULL) {
        if (n != NULL) {
            n->in_flight = 0;
        }

        ngx_shmtx_unlock(&ctx->shpool->mutex);
        ngx_log_error(NGX_LOG_WARN, log, 0,
                      "mcp: no room for an exchanged token in zone \""
                      NGX_HTTP_MCP_EXCHANGE_ZONE "\"");
        return NGX_DECLINED;
    }

    if (n->token != NULL) {
        ngx_slab_free_locked(ctx->shpool, n->token);
    }

    ngx_memcpy(p, token->data, token->len);

    n->token = p;
    n->len = token->len;
    n->until = until;
    n->in_flight = 0;
    n->has_failed = 0;
    n->refused = 0;

    /* the newest at the head: eviction takes the tail */
    ngx_queue_remove(&n->queue);
    ngx_queue_insert_head(&ctx->sh->queue, &n->queue);

    ngx_shmtx_unlock(&ctx->shpool->mutex);

    return NGX_OK;
}


void
ngx_http_mcp_exchange_fail(ngx_shm_zone_t *zone, u_char *key,
    ngx_uint_t refused)
{
    ngx_http_mcp_exchange_node_t  *n;
    ngx_http_mcp_exchange_zone_t  *ctx;

    ctx = zone->data;

    ngx_shmtx_lock(&ctx->shpool->mutex);

    n = ngx_http_mcp_exchange_find(ctx, key);

    if (n != NULL) {
        n->in_flight = 0;
        n->has_failed = 1;
        n->refused = refused ? 1 : 0;
        n->failed = ngx_current_msec;
    }

    ngx_shmtx_unlock(&ctx->shpool->mutex);
}


static ngx_http_mcp_exchange_node_t *
ngx_http_mcp_exchange_find(ngx_http_mcp_exchange_zone_t *ctx, u_char *key)
{
    uint32_t                       hash;
    ngx_rbtree_node_t             *node, *sentinel;
    ngx_http_mcp_exchange_node_t  *n;

    ngx_memcpy(&hash, key, sizeof(uint32_t));

    node = ctx->sh->rbtree.root;
    sentinel = ctx->sh->rbtree.sentinel;

    while (node != sentinel) {

        if (hash != node->key) {
            node = (hash < node->key) ? node->left : node->right;
            continue;
        }

        n = (ngx_http_mcp_exchange_node_t *) node;

        if (ngx_memcmp(n->key, key, NGX_HTTP_MCP_EXCHANGE_KEY_LEN) == 0) {
            return n;
        }

        /* equal hashes go right (ngx_rbtree_insert_value) */
        node = node->right;
    }

    return NULL;
}


static ngx_http_mcp_exchange_node_t *
ngx_http_mcp_exchange_add(ngx_http_mcp_exchange_zone_t *ctx, u_char *key)
{
    ngx_http_mcp_exchange_node_t  *n;

    while (ctx->sh->count >= ctx->max && ctx->sh->count > 0) {
        ngx_http_mcp_exchange_evict(ctx);
    }

    n = ngx_slab_calloc_locked(ctx->shpool,
                               sizeof(ngx_http_mcp_exchange_node_t));

    while (n == NULL && ctx->sh->count > 0) {
        ngx_http_mcp_exchange_evict(ctx);
        n = ngx_slab_calloc_locked(ctx->shpool,
                                   sizeof(ngx_http_mcp_exchange_node_t));
    }

    if (n == NULL) {
        return NULL;
    }

    ngx_memcpy(n->key, key, NGX_HTTP_MCP_EXCHANGE_KEY_LEN);
    ngx_memcpy(&n->node.key, key, sizeof(uint32_t));

    ngx_rbtree_insert(&ctx->sh->rbtree, &n->node);
    ngx_queue_insert_head(&ctx->sh->queue, &n->queue);
    ctx->sh->count++;

    return n;
}


static void
ngx_http_mcp_exchange_evict(ngx_http_mcp_exchange_zone_t *ctx)
{
    ngx_queue_t  *q;

    if (ngx_queue_empty(&ctx->sh->queue)) {
        return;
    }

    q = ngx_queue_last(&ctx->sh->queue);

    ngx_http_mcp_exchange_free(ctx,
        ngx_queue_data(q, ngx_http_mcp_exchange_node_t, queue));
}


static void
ngx_http_mcp_exchange_free(ngx_http_mcp_exchange_zone_t *ctx,
    ngx_http_mcp_exchange_node_t *n)
{
    ngx_queue_remove(&n->queue);
    ngx_rbtree_delete(&ctx->sh->rbtree, &n->node);

    if (n->token != NULL) {
        ngx_slab_free_locked(ctx->shpool, n->token);
    }

    ngx_slab_free_locked(ctx->shpool, n);
    ctx->sh->count--;
}
