
/*
 * Sessions in a shared memory zone, so that every worker sees every
 * session.  The layout follows ngx_http_limit_req_module: an rbtree keyed
 * by a hash of the session id for lookups, and a queue in LRU order
 * (most recently used first) for idle expiry and eviction.  The zone is
 * reused across "nginx -s reload", so sessions survive it.
 */


#include "ngx_http_mcp_internal.h"

#include <openssl/rand.h>


#define NGX_HTTP_MCP_DEFAULT_ZONE       "mcp_sessions"
#define NGX_HTTP_MCP_DEFAULT_ZONE_SIZE  (10 * 1024 * 1024)
#define NGX_HTTP_MCP_DEFAULT_TIMEOUT    (60 * 60 * 1000)


static ngx_int_t ngx_http_mcp_session_init_zone(ngx_shm_zone_t *shm_zone,
    void *data);
static void ngx_http_mcp_session_rbtree_insert(ngx_rbtree_node_t *temp,
    ngx_rbtree_node_t *node, ngx_rbtree_node_t *sentinel);
static ngx_http_mcp_session_node_t *ngx_http_mcp_session_find(
    ngx_http_mcp_zone_t *ctx, ngx_str_t *id);
static void ngx_http_mcp_session_free(ngx_http_mcp_zone_t *ctx,
    ngx_http_mcp_session_node_t *s);
static void ngx_http_mcp_session_expire(ngx_http_mcp_zone_t *ctx,
    ngx_uint_t n);
static ngx_int_t ngx_http_mcp_session_evict(ngx_http_mcp_zone_t *ctx,
    ngx_log_t *log);
static void *ngx_http_mcp_session_alloc(ngx_http_mcp_zone_t *ctx,
    size_t size, ngx_log_t *log);


char *
ngx_http_mcp_session_zone(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_mcp_main_conf_t *mmcf = conf;

    u_char               *p;
    ssize_t               size;
    ngx_str_t            *value, name, s;
    ngx_msec_t            timeout;
    ngx_uint_t            i;
    ngx_shm_zone_t       *shm_zone, **zp;
    ngx_http_mcp_zone_t  *ctx;

    value = cf->args->elts;

    size = 0;
    ngx_str_null(&name);
    timeout = NGX_HTTP_MCP_DEFAULT_TIMEOUT;

    for (i = 1; i < cf->args->nelts; i++) {

        if (ngx_strncmp(value[i].data, "zone=", 5) == 0) {

            name.data = value[i].data + 5;
            p = (u_char *) ngx_strchr(name.data, ':');

            if (p == NULL) {
                ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                                   "invalid zone size \"%V\"", &value[i]);
                return NGX_CONF_ERROR;
            }

            name.len = p - name.data;

            s.data = p + 1;
            s.len = value[i].data + value[i].len - s.data;

            size = ngx_parse_size(&s);

            if (size == NGX_ERROR) {
                ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                                   "invalid zone size \"%V\"", &value[i]);
                return NGX_CONF_ERROR;
            }

            if (size < (ssize_t) (8 * ngx_pagesize)) {
                ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                                   "zone \"%V\" is too small", &value[i]);
                return NGX_CONF_ERROR;
            }

            continue;
        }

        if (ngx_strncmp(value[i].data, "timeout=", 8) == 0) {

            s.data = value[i].data + 8;
            s.len = value[i].len - 8;

            timeout = ngx_parse_time(&s, 0);

            if (timeout == (ngx_msec_t) NGX_ERROR || timeout == 0) {
                ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                                   "invalid timeout \"%V\"", &value[i]);
                return NGX_CONF_ERROR;
            }

            continue;
        }

        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "invalid parameter \"%V\"", &value[i]);
        return NGX_CONF_ERROR;
    }

    if (name.len == 0) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"%V\" must have \"zone\" parameter",
                           &cmd->name);
        return NGX_CONF_ERROR;
    }

    ctx = ngx_pcalloc(cf->pool, sizeof(ngx_http_mcp_zone_t));
    if (ctx == NULL) {
        return NGX_CONF_ERROR;
    }

    ctx->timeout = timeout;
    ctx->name = name;

    shm_zone = ngx_shared_memory_add(cf, &name, size, &ngx_http_mcp_module);
    if (shm_zone == NULL) {
        return NGX_CONF_ERROR;
    }

    if (shm_zone->data) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "duplicate zone \"%V\"", &name);
        return NGX_CONF_ERROR;
    }

    shm_zone->init = ngx_http_mcp_session_init_zone;
    shm_zone->data = ctx;

    zp = ngx_array_push(&mmcf->zones);
    if (zp == NULL) {
        return NGX_CONF_ERROR;
    }

    *zp = shm_zone;

    return NGX_CONF_OK;
}


/* the zone that locations without "mcp_session" share */

ngx_shm_zone_t *
ngx_http_mcp_session_default_zone(ngx_conf_t *cf)
{
    ngx_str_t                  name = ngx_string(NGX_HTTP_MCP_DEFAULT_ZONE);
    ngx_shm_zone_t            *shm_zone;
    ngx_http_mcp_zone_t       *ctx;
    ngx_http_mcp_main_conf_t  *mmcf;

    mmcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_mcp_module);

    if (mmcf->default_zone) {
        return mmcf->default_zone;
    }

    shm_zone = ngx_shared_memory_add(cf, &name,
                                     NGX_HTTP_MCP_DEFAULT_ZONE_SIZE,
                                     &ngx_http_mcp_module);
    if (shm_zone == NULL) {
        return NULL;
    }

    if (shm_zone->data == NULL) {
        ctx = ngx_pcalloc(cf->pool, sizeof(ngx_http_mcp_zone_t));
        if (ctx == NULL) {
            return NULL;
        }

        ctx->timeout = NGX_HTTP_MCP_DEFAULT_TIMEOUT;
        ctx->name = name;

        shm_zone->init = ngx_http_mcp_session_init_zone;
        shm_zone->data = ctx;
    }

    mmcf->default_zone = shm_zone;

    return shm_zone;
}


static ngx_int_t
ngx_http_mcp_session_init_zone(ngx_shm_zone_t *shm_zone, void *data)
{
    ngx_http_mcp_zone_t  *octx = data;

    size_t                len;
    ngx_http_mcp_zone_t  *ctx;

    ctx = shm_zone->data;

    if (octx) {
        /* reload: keep the sessions of the previous cycle */
        ctx->sh = octx->sh;
        ctx->shpool = octx->shpool;
        return NGX_OK;
    }

    ctx->shpool = (ngx_slab_pool_t *) shm_zone->shm.addr;

    if (shm_zone->shm.exists) {
        ctx->sh = ctx->shpool->data;
        return NGX_OK;
    }

    ctx->sh = ngx_slab_alloc(ctx->shpool, sizeof(ngx_http_mcp_shctx_t));
    if (ctx->sh == NULL) {
        return NGX_ERROR;
    }

    ctx->shpool->data = ctx->sh;

    ngx_rbtree_init(&ctx->sh->rbtree, &ctx->sh->sentinel,
                    ngx_http_mcp_session_rbtree_insert);

    ngx_queue_init(&ctx->sh->queue);

    len = sizeof(" in MCP session zone \"\"") + shm_zone->shm.name.len;

    ctx->shpool->log_ctx = ngx_slab_alloc(ctx->shpool, len);
    if (ctx->shpool->log_ctx == NULL) {
        return NGX_ERROR;
    }

    ngx_sprintf(ctx->shpool->log_ctx, " in MCP session zone \"%V\"%Z",
                &shm_zone->shm.name);

    /* a full zone is handled by eviction, not by an error line */
    ctx->shpool->log_nomem = 0;

    return NGX_OK;
}


static void
ngx_http_mcp_session_rbtree_insert(ngx_rbtree_node_t *temp,
    ngx_rbtree_node_t *node, ngx_rbtree_node_t *sentinel)
{
    ngx_rbtree_node_t            **p;
    ngx_http_mcp_session_node_t   *s, *st;

    for ( ;; ) {

        if (node->key < temp->key) {
            p = &temp->left;

        } else if (node->key > temp->key) {
            p = &temp->right;

        } else {
            s = (ngx_http_mcp_session_node_t *) &node->color;
            st = (ngx_http_mcp_session_node_t *) &temp->color;

            p = (ngx_memcmp(s->id, st->id, NGX_HTTP_MCP_SESSION_ID_LEN) < 0)
                ? &temp->left : &temp->right;
        }

        if (*p == sentinel) {
            break;
        }

        temp = *p;
    }

    *p = node;
    node->parent = temp;
    node->left = sentinel;
    node->right = sentinel;
    ngx_rbt_red(node);
}


/* called with the zone locked */

static ngx_http_mcp_session_node_t *
ngx_http_mcp_session_find(ngx_http_mcp_zone_t *ctx, ngx_str_t *id)
{
    ngx_int_t                     rc;
    ngx_uint_t                    hash;
    ngx_rbtree_node_t            *node, *sentinel;
    ngx_http_mcp_session_node_t  *s;

    if (id->len != NGX_HTTP_MCP_SESSION_ID_LEN) {
        return NULL;
    }

    hash = ngx_crc32_short(id->data, id->len);

    node = ctx->sh->rbtree.root;
    sentinel = ctx->sh->rbtree.sentinel;

    while (node != sentinel) {

        if (hash < node->key) {
            node = node->left;
            continue;
        }

        if (hash > node->key) {
            node = node->right;
            continue;
        }

        s = (ngx_http_mcp_session_node_t *) &node->color;

        rc = ngx_memcmp(id->data, s->id, NGX_HTTP_MCP_SESSION_ID_LEN);

        if (rc == 0) {
            return s;
        }

        node = (rc < 0) ? node->left : node->right;
    }

    return NULL;
}


static void
ngx_http_mcp_session_free(ngx_http_mcp_zone_t *ctx,
    ngx_http_mcp_session_node_t *s)
{
    ngx_rbtree_node_t            *node;
    ngx_http_mcp_subscription_t  *sub, *next;

    for (sub = s->subscriptions; sub; sub = next) {
        next = sub->next;
        ngx_slab_free_locked(ctx->shpool, sub);
    }

    ngx_queue_remove(&s->queue);

    node = (ngx_rbtree_node_t *)
               ((u_char *) s - offsetof(ngx_rbtree_node_t, color));

    ngx_rbtree_delete(&ctx->sh->rbtree, node);
    ngx_slab_free_locked(ctx->shpool, node);

    ctx->sh->count--;
}


/* frees up to n sessions idle for longer than the zone's timeout */

static void
ngx_http_mcp_session_expire(ngx_http_mcp_zone_t *ctx, ngx_uint_t n)
{
    ngx_msec_t                    now;
    ngx_queue_t                  *q;
    ngx_http_mcp_session_node_t  *s;

    now = ngx_current_msec;

    while (n-- && !ngx_queue_empty(&ctx->sh->queue)) {

        q = ngx_queue_last(&ctx->sh->queue);
        s = ngx_queue_data(q, ngx_http_mcp_session_node_t, queue);

        if (s->streams || (ngx_msec_int_t) (now - s->last) < 0
            || now - s->last < ctx->timeout)
        {
            return;
        }

        ngx_http_mcp_session_free(ctx, s);
    }
}


/* frees the least recently used session without open streams */

static ngx_int_t
ngx_http_mcp_session_evict(ngx_http_mcp_zone_t *ctx, ngx_log_t *log)
{
    ngx_queue_t                  *q;
    ngx_http_mcp_session_node_t  *s;

    for (q = ngx_queue_last(&ctx->sh->queue);
         q != ngx_queue_sentinel(&ctx->sh->queue);
         q = ngx_queue_prev(q))
    {
        s = ngx_queue_data(q, ngx_http_mcp_session_node_t, queue);

        if (s->streams) {
            continue;
        }

        ngx_log_error(NGX_LOG_WARN, log, 0,
                      "mcp session zone \"%V\" is full, evicted the least "
                      "recently used session %*s (idle %M ms)",
                      &ctx->name, (size_t) NGX_HTTP_MCP_SESSION_ID_LEN,
                      s->id, ngx_current_msec - s->last);

        ngx_http_mcp_session_free(ctx, s);

        return NGX_OK;
    }

    return NGX_DECLINED;
}


static void *
ngx_http_mcp_session_alloc(ngx_http_mcp_zone_t *ctx, size_t size,
    ngx_log_t *log)
{
    void  *p;

    for ( ;; ) {
        p = ngx_slab_alloc_locked(ctx->shpool, size);

        if (p != NULL) {
            return p;
        }

        if (ngx_http_mcp_session_evict(ctx, log) != NGX_OK) {
            return NULL;
        }
    }
}


/*
 * Creates a session and writes its id (NGX_HTTP_MCP_SESSION_ID_LEN
 * visible ASCII characters, from 128 random bits) to id.  Returns
 * NGX_OK, NGX_DECLINED when the zone is full of sessions that cannot
 * be evicted, or NGX_ERROR.
 */

ngx_int_t
ngx_http_mcp_session_create(ngx_shm_zone_t *zone, ngx_log_t *log,
    ngx_http_mcp_session_init_t *init, u_char *id)
{
    size_t                        n;
    u_char                        bytes[NGX_HTTP_MCP_SESSION_ID_LEN / 2];
    ngx_str_t                     sid;
    ngx_rbtree_node_t            *node;
    ngx_http_mcp_zone_t          *ctx;
    ngx_http_mcp_session_node_t  *s;

    ctx = zone->data;

    if (RAND_bytes(bytes, sizeof(bytes)) != 1) {
        ngx_log_error(NGX_LOG_ERR, log, 0, "mcp: RAND_bytes() failed");
        return NGX_ERROR;
    }

    ngx_hex_dump(id, bytes, sizeof(bytes));

    sid.data = id;
    sid.len = NGX_HTTP_MCP_SESSION_ID_LEN;

    n = offsetof(ngx_rbtree_node_t, color)
        + sizeof(ngx_http_mcp_session_node_t);

    ngx_shmtx_lock(&ctx->shpool->mutex);

    ngx_http_mcp_session_expire(ctx, 2);

    if (ngx_http_mcp_session_find(ctx, &sid) != NULL) {
        /* 128 random bits collided: refuse rather than share a session */
        ngx_shmtx_unlock(&ctx->shpool->mutex);
        return NGX_ERROR;
    }

    node = ngx_http_mcp_session_alloc(ctx, n, log);

    if (node == NULL) {
        ngx_shmtx_unlock(&ctx->shpool->mutex);
        return NGX_DECLINED;
    }

    s = (ngx_http_mcp_session_node_t *) &node->color;

    ngx_memzero(s, sizeof(ngx_http_mcp_session_node_t));

    node->key = ngx_crc32_short(id, NGX_HTTP_MCP_SESSION_ID_LEN);
    ngx_memcpy(s->id, id, NGX_HTTP_MCP_SESSION_ID_LEN);

    s->version = (u_char) init->version;
    s->log_level = NGX_HTTP_MCP_LOG_INFO;
    s->sampling = init->sampling;
    s->elicitation = init->elicitation;
    s->roots = init->roots;
    s->last = ngx_current_msec;

    n = ngx_min(init->client_name.len, NGX_HTTP_MCP_CLIENT_NAME_LEN);
    ngx_memcpy(s->client_name, init->client_name.data, n);
    s->client_name_len = (u_char) n;

    ngx_rbtree_insert(&ctx->sh->rbtree, node);
    ngx_queue_insert_head(&ctx->sh->queue, &s->queue);
    ctx->sh->count++;

    ngx_shmtx_unlock(&ctx->shpool->mutex);

    return NGX_OK;
}


/*
 * Finds a session, marks it used, and copies what handlers need into
 * rctx (the id and client name point into id and rctx's own storage).
 * Returns NGX_OK or NGX_DECLINED when there is no such session.
 */

ngx_int_t
ngx_http_mcp_session_lookup(ngx_shm_zone_t *zone, ngx_str_t *id,
    ngx_http_mcp_reqctx_t *rctx)
{
    ngx_http_mcp_zone_t          *ctx;
    ngx_http_mcp_session_node_t  *s;

    ctx = zone->data;

    ngx_shmtx_lock(&ctx->shpool->mutex);

    ngx_http_mcp_session_expire(ctx, 1);

    s = ngx_http_mcp_session_find(ctx, id);

    if (s == NULL) {
        ngx_shmtx_unlock(&ctx->shpool->mutex);
        return NGX_DECLINED;
    }

    s->last = ngx_current_msec;
    ngx_queue_remove(&s->queue);
    ngx_queue_insert_head(&ctx->sh->queue, &s->queue);

    rctx->version = s->version;
    rctx->log_level = s->log_level;
    rctx->sampling = s->sampling;
    rctx->elicitation = s->elicitation;
    rctx->roots = s->roots;
    rctx->session_id = *id;

    if (rctx->client_name.data != NULL) {
        rctx->client_name.len = s->client_name_len;
        ngx_memcpy(rctx->client_name.data, s->client_name,
                   s->client_name_len);
    }

    ngx_shmtx_unlock(&ctx->shpool->mutex);

    return NGX_OK;
}


ngx_int_t
ngx_http_mcp_session_delete(ngx_shm_zone_t *zone, ngx_str_t *id)
{
    ngx_http_mcp_zone_t          *ctx;
    ngx_http_mcp_session_node_t  *s;

    ctx = zone->data;

    ngx_shmtx_lock(&ctx->shpool->mutex);

    s = ngx_http_mcp_session_find(ctx, id);

    if (s != NULL) {
        ngx_http_mcp_session_free(ctx, s);
    }

    ngx_shmtx_unlock(&ctx->shpool->mutex);

    return (s != NULL) ? NGX_OK : NGX_DECLINED;
}


ngx_int_t
ngx_http_mcp_session_set_initialized(ngx_shm_zone_t *zone, ngx_str_t *id)
{
    ngx_http_mcp_zone_t          *ctx;
    ngx_http_mcp_session_node_t  *s;

    ctx = zone->data;

    ngx_shmtx_lock(&ctx->shpool->mutex);

    s = ngx_http_mcp_session_find(ctx, id);

    if (s != NULL) {
        s->initialized = 1;
    }

    ngx_shmtx_unlock(&ctx->shpool->mutex);

    return (s != NULL) ? NGX_OK : NGX_DECLINED;
}


ngx_int_t
ngx_http_mcp_session_set_log_level(ngx_shm_zone_t *zone, ngx_str_t *id,
    ngx_uint_t level)
{
    ngx_http_mcp_zone_t          *ctx;
    ngx_http_mcp_session_node_t  *s;

    ctx = zone->data;

    ngx_shmtx_lock(&ctx->shpool->mutex);

    s = ngx_http_mcp_session_find(ctx, id);

    if (s != NULL) {
        s->log_level = (u_char) level;
    }

    ngx_shmtx_unlock(&ctx->shpool->mutex);

    return (s != NULL) ? NGX_OK : NGX_DECLINED;
}


/*
 * Adds or removes a resource subscription.  Returns NGX_OK, NGX_DECLINED
 * when the session is gone, or NGX_ERROR when the zone has no room.
 */

ngx_int_t
ngx_http_mcp_session_subscribe(ngx_shm_zone_t *zone, ngx_str_t *id,
    ngx_str_t *uri, ngx_uint_t subscribe)
{
    ngx_int_t                      rc;
    ngx_http_mcp_zone_t           *ctx;
    ngx_http_mcp_subscription_t   *sub, **prev;
    ngx_http_mcp_session_node_t   *s;

    ctx = zone->data;
    rc = NGX_OK;

    ngx_shmtx_lock(&ctx->shpool->mutex);

    s = ngx_http_mcp_session_find(ctx, id);

    if (s == NULL) {
        rc = NGX_DECLINED;
        goto done;
    }

    for (prev = &s->subscriptions; *prev; prev = &(*prev)->next) {
        sub = *prev;

        if (sub->len == uri->len
            && ngx_memcmp(sub->uri, uri->data, uri->len) == 0)
        {
            if (!subscribe) {
                *prev = sub->next;
                ngx_slab_free_locked(ctx->shpool, sub);
            }

            goto done;
        }
    }

    if (!subscribe) {
        goto done;
    }

    /* not through eviction: it could free the session at hand */
    sub = ngx_slab_alloc_locked(ctx->shpool,
                                sizeof(ngx_http_mcp_subscription_t)
                                + uri->len);
    if (sub == NULL) {
        rc = NGX_ERROR;
        goto done;
    }

    sub->next = NULL;
    sub->len = uri->len;
    ngx_memcpy(sub->uri, uri->data, uri->len);

    *prev = sub;

done:

    ngx_shmtx_unlock(&ctx->shpool->mutex);

    return rc;
}
