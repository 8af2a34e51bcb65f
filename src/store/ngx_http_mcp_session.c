
/*
 * Sessions in a shared memory zone, so that every worker sees every
 * session.  The layout follows ngx_http_limit_req_module: an rbtree keyed
 * by a hash of the session id for lookups, and a queue in LRU order
 * (most recently used first) for idle expiry and eviction.  The zone is
 * reused across "nginx -s reload", so sessions survive it.
 */


#include "ngx_http_mcp_store.h"
#include "ngx_http_mcp_session_zone.h"
#include "ngx_http_mcp_json.h"
#include "ngx_http_mcp_jsonrpc.h"

#include <openssl/rand.h>
#include <openssl/sha.h>




static void ngx_http_mcp_session_rbtree_insert(ngx_rbtree_node_t *temp,
    ngx_rbtree_node_t *node, ngx_rbtree_node_t *sentinel);
static void ngx_http_mcp_session_client_insert(ngx_rbtree_node_t *temp,
    ngx_rbtree_node_t *node, ngx_rbtree_node_t *sentinel);
static void ngx_http_mcp_session_task_insert(ngx_rbtree_node_t *temp,
    ngx_rbtree_node_t *node, ngx_rbtree_node_t *sentinel);
static void ngx_http_mcp_session_dpop_insert(ngx_rbtree_node_t *temp,
    ngx_rbtree_node_t *node, ngx_rbtree_node_t *sentinel);
static void ngx_http_mcp_session_rbtree_link(ngx_rbtree_node_t *temp,
    ngx_rbtree_node_t *node, ngx_rbtree_node_t *sentinel, size_t off,
    size_t len);
static ngx_int_t ngx_http_mcp_session_end(ngx_shm_zone_t *zone,
    ngx_str_t *id, ngx_uint_t retire, ngx_log_t *log);
static void ngx_http_mcp_session_free(ngx_http_mcp_zone_t *ctx,
    ngx_http_mcp_session_node_t *s);
static void ngx_http_mcp_session_expire(ngx_http_mcp_zone_t *ctx,
    ngx_uint_t n);
static ngx_http_mcp_client_t *ngx_http_mcp_session_client(
    ngx_http_mcp_zone_t *ctx, ngx_str_t *key, ngx_log_t *log);
static ngx_int_t ngx_http_mcp_session_quota(ngx_http_mcp_zone_t *ctx,
    ngx_http_mcp_client_t *client, ngx_log_t *log);
static ngx_uint_t ngx_http_mcp_session_idle(ngx_http_mcp_session_node_t *s);
static ngx_int_t ngx_http_mcp_session_evict(ngx_http_mcp_zone_t *ctx,
    ngx_http_mcp_session_node_t *keep, ngx_log_t *log);
static ngx_http_mcp_session_node_t *ngx_http_mcp_session_get_locked(
    ngx_http_mcp_zone_t *ctx, ngx_str_t *id, ngx_http_mcp_reqctx_t *rctx,
    ngx_uint_t use);
static ngx_int_t ngx_http_mcp_session_get(ngx_shm_zone_t *zone,
    ngx_str_t *id, ngx_http_mcp_reqctx_t *rctx, ngx_uint_t use);


/*
 * A zone's slab pool and shared part at its init: old, the previous
 * cycle's (a reload keeps what the zone holds); the one already there;
 * or a new one of size bytes, zeroed, for the caller to set up: then
 * *fresh (if not NULL) is set to 1.  A reused zone keeps its address:
 * the pool is always the zone's start.  NULL: no room.
 */

void *
ngx_http_mcp_zone_shared(ngx_shm_zone_t *shm_zone, ngx_slab_pool_t **shpool,
    void *old, size_t size, ngx_uint_t *fresh)
{
    void  *sh;

    *shpool = (ngx_slab_pool_t *) shm_zone->shm.addr;

    if (old != NULL) {
        return old;
    }

    if (shm_zone->shm.exists) {
        return (*shpool)->data;
    }

    sh = ngx_slab_calloc(*shpool, size);
    if (sh == NULL) {
        return NULL;
    }

    (*shpool)->data = sh;

    if (fresh != NULL) {
        *fresh = 1;
    }

    return sh;
}


ngx_int_t
ngx_http_mcp_session_init_zone(ngx_shm_zone_t *shm_zone, void *data)
{
    ngx_http_mcp_zone_t  *octx = data;

    size_t                len;
    ngx_uint_t            fresh;
    ngx_http_mcp_zone_t  *ctx;

    ctx = shm_zone->data;
    fresh = 0;

    /* reload: keep the sessions of the previous cycle */
    ctx->sh = ngx_http_mcp_zone_shared(shm_zone, &ctx->shpool,
                                       (octx != NULL) ? octx->sh : NULL,
                                       sizeof(ngx_http_mcp_shctx_t), &fresh);
    if (ctx->sh == NULL) {
        return NGX_ERROR;
    }

    if (!fresh) {
        return NGX_OK;
    }

    ngx_rbtree_init(&ctx->sh->rbtree, &ctx->sh->sentinel,
                    ngx_http_mcp_session_rbtree_insert);

    ngx_queue_init(&ctx->sh->queue);
    ngx_queue_init(&ctx->sh->listeners);
    ngx_queue_init(&ctx->sh->backends);
    ngx_queue_init(&ctx->sh->tools);
    ngx_rbtree_init(&ctx->sh->tools_tree, &ctx->sh->tools_sentinel,
                    ngx_http_mcp_tools_insert);
    ctx->sh->state_key_made = 0;

    ngx_rbtree_init(&ctx->sh->clients, &ctx->sh->clients_sentinel,
                    ngx_http_mcp_session_client_insert);

    ngx_rbtree_init(&ctx->sh->tasks, &ctx->sh->tasks_sentinel,
                    ngx_http_mcp_session_task_insert);
    ngx_queue_init(&ctx->sh->task_queue);
    ctx->sh->ntasks = 0;

    ngx_rbtree_init(&ctx->sh->dpop, &ctx->sh->dpop_sentinel,
                    ngx_http_mcp_session_dpop_insert);
    ngx_queue_init(&ctx->sh->dpop_queue);
    ctx->sh->ndpop = 0;
    ctx->sh->nworkers = 0;

    ctx->sh->streams = 0;
    ctx->sh->waiting = 0;
    ctx->sh->dropped = 0;

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
    ngx_http_mcp_session_rbtree_link(temp, node, sentinel,
                                     NGX_HTTP_MCP_SESSION_ID_OFF,
                                     NGX_HTTP_MCP_SESSION_ID_LEN);
}


/*
 * Clients and tasks are ordered by key, then by digest or id, as
 * sessions are: with equal keys simply going right a rotation can lift a
 * later node above an earlier one of the same key, where a lookup going
 * right would no longer see it.  A task's key holds but 16 bits of its
 * id (4 hex digits); a client's, 32 bits of a digest of what the client
 * sends.
 */

static void
ngx_http_mcp_session_client_insert(ngx_rbtree_node_t *temp,
    ngx_rbtree_node_t *node, ngx_rbtree_node_t *sentinel)
{
    ngx_http_mcp_session_rbtree_link(temp, node, sentinel,
                                     offsetof(ngx_http_mcp_client_t, digest),
                                     SHA256_DIGEST_LENGTH);
}


static void
ngx_http_mcp_session_task_insert(ngx_rbtree_node_t *temp,
    ngx_rbtree_node_t *node, ngx_rbtree_node_t *sentinel)
{
    ngx_http_mcp_session_rbtree_link(temp, node, sentinel,
                                     offsetof(ngx_http_mcp_task_sh_t, id),
                                     NGX_HTTP_MCP_TASK_ID_LEN);
}


static void
ngx_http_mcp_session_dpop_insert(ngx_rbtree_node_t *temp,
    ngx_rbtree_node_t *node, ngx_rbtree_node_t *sentinel)
{
    ngx_http_mcp_session_rbtree_link(temp, node, sentinel,
                                     offsetof(ngx_http_mcp_dpop_sh_t, digest),
                                     SHA256_DIGEST_LENGTH);
}


/* by key, then by the len bytes of id at off from the node */

static void
ngx_http_mcp_session_rbtree_link(ngx_rbtree_node_t *temp,
    ngx_rbtree_node_t *node, ngx_rbtree_node_t *sentinel, size_t off,
    size_t len)
{
    ngx_rbtree_node_t  **p;

    for ( ;; ) {

        if (node->key < temp->key) {
            p = &temp->left;

        } else if (node->key > temp->key) {
            p = &temp->right;

        } else {
            p = (ngx_memcmp((u_char *) node + off, (u_char *) temp + off, len)
                 < 0)
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


/*
 * The node of tree whose key is key and whose len bytes at off are id's,
 * or NULL: the walk that the insert above orders the tree for, for
 * sessions, clients and tasks alike.
 */

ngx_rbtree_node_t *
ngx_http_mcp_session_rbtree_lookup(ngx_rbtree_t *tree, ngx_rbtree_key_t key,
    u_char *id, size_t off, size_t len)
{
    ngx_int_t           rc;
    ngx_rbtree_node_t  *node, *sentinel;

    node = tree->root;
    sentinel = tree->sentinel;

    while (node != sentinel) {

        if (key != node->key) {
            node = (key < node->key) ? node->left : node->right;
            continue;
        }

        rc = ngx_memcmp(id, (u_char *) node + off, len);

        if (rc == 0) {
            return node;
        }

        node = (rc < 0) ? node->left : node->right;
    }

    return NULL;
}


/* called with the zone locked */

ngx_http_mcp_session_node_t *
ngx_http_mcp_session_find(ngx_http_mcp_zone_t *ctx, ngx_str_t *id)
{
    ngx_rbtree_node_t  *node;

    if (id->len != NGX_HTTP_MCP_SESSION_ID_LEN) {
        return NULL;
    }

    node = ngx_http_mcp_session_rbtree_lookup(&ctx->sh->rbtree,
               ngx_crc32_short(id->data, id->len), id->data,
               NGX_HTTP_MCP_SESSION_ID_OFF, NGX_HTTP_MCP_SESSION_ID_LEN);

    return (node != NULL) ? (ngx_http_mcp_session_node_t *) &node->color
                          : NULL;
}


/*
 * A retired session (ngx_http_mcp_session_stdio_retire()) goes once no
 * worker holds a stream of it: what was written for them is taken, or
 * their clients are gone.  Called with the zone locked; 1 if it went.
 */

ngx_uint_t
ngx_http_mcp_session_retired_free(ngx_http_mcp_zone_t *ctx,
    ngx_http_mcp_session_node_t *s)
{
    if (!s->retired || s->streams != 0) {
        return 0;
    }

    ngx_http_mcp_session_free(ctx, s);

    return 1;
}


static void
ngx_http_mcp_session_free(ngx_http_mcp_zone_t *ctx,
    ngx_http_mcp_session_node_t *s)
{
    ngx_queue_t                  *q;
    ngx_rbtree_node_t            *node;
    ngx_http_mcp_stream_sh_t     *st;
    ngx_http_mcp_subscription_t  *sub, *next;

    for (sub = s->subscriptions; sub; sub = next) {
        next = sub->next;
        ngx_slab_free_locked(ctx->shpool, sub);
    }

    if (s->target) {
        ngx_slab_free_locked(ctx->shpool, s->target);
    }

    if (s->backends) {
        ngx_slab_free_locked(ctx->shpool, s->backends);
    }

    if (s->listen) {
        ngx_queue_remove(&s->listen->queue);
        ngx_slab_free_locked(ctx->shpool, s->listen);
    }

    ctx->sh->events_size -= s->events_size;

    while (!ngx_queue_empty(&s->inbound)) {
        q = ngx_queue_head(&s->inbound);
        ngx_queue_remove(q);
        ngx_slab_free_locked(ctx->shpool, q);
    }

    while (!ngx_queue_empty(&s->events)) {
        q = ngx_queue_head(&s->events);
        ngx_queue_remove(q);
        ngx_slab_free_locked(ctx->shpool, q);
    }

    while (!ngx_queue_empty(&s->sstreams)) {
        q = ngx_queue_head(&s->sstreams);
        st = ngx_queue_data(q, ngx_http_mcp_stream_sh_t, queue);
        ctx->sh->streams -= (st->owner != 0);
        ngx_queue_remove(q);
        ngx_slab_free_locked(ctx->shpool, q);
    }

    while (!ngx_queue_empty(&s->waits)) {
        ngx_http_mcp_session_wait_free(ctx,
            ngx_queue_data(ngx_queue_head(&s->waits), ngx_http_mcp_wait_t,
                           queue));
    }

    if (s->client && --s->client->sessions == 0) {
        ngx_rbtree_delete(&ctx->sh->clients, &s->client->node);
        ngx_slab_free_locked(ctx->shpool, s->client);
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

        ngx_log_debug1(NGX_LOG_DEBUG_HTTP, ngx_cycle->log, 0,
                       "mcp session %s expired, idle",
                       ngx_http_mcp_session_log_id(s->id,
                                                   NGX_HTTP_MCP_SESSION_ID_LEN));

        ngx_http_mcp_session_free(ctx, s);
    }
}


/* no open stream and no server request waiting: nobody loses a reply */

static ngx_uint_t
ngx_http_mcp_session_idle(ngx_http_mcp_session_node_t *s)
{
    return s->streams == 0 && ngx_queue_empty(&s->waits) && s->listen == NULL;
}


/*
 * Frees the least recently used idle session, never keep (the session
 * the caller is working on).
 */

static ngx_int_t
ngx_http_mcp_session_evict(ngx_http_mcp_zone_t *ctx,
    ngx_http_mcp_session_node_t *keep, ngx_log_t *log)
{
    ngx_queue_t                  *q;
    ngx_http_mcp_session_node_t  *s;

    for (q = ngx_queue_last(&ctx->sh->queue);
         q != ngx_queue_sentinel(&ctx->sh->queue);
         q = ngx_queue_prev(q))
    {
        s = ngx_queue_data(q, ngx_http_mcp_session_node_t, queue);

        if (s == keep || !ngx_http_mcp_session_idle(s)) {
            continue;
        }

        ngx_log_error(NGX_LOG_WARN, log, 0,
                      "mcp session zone \"%V\" is full, evicted the least "
                      "recently used session %s (idle %M ms)",
                      &ctx->name,
                      ngx_http_mcp_session_log_id(s->id,
                                                  NGX_HTTP_MCP_SESSION_ID_LEN),
                      ngx_current_msec - s->last);

        ngx_http_mcp_session_free(ctx, s);

        return NGX_OK;
    }

    return NGX_DECLINED;
}


/*
 * Every allocation in the zone: when it is full, the least recently used
 * idle session goes (never keep) and the allocation is tried again.
 */

void *
ngx_http_mcp_session_alloc(ngx_http_mcp_zone_t *ctx, size_t size,
    ngx_http_mcp_session_node_t *keep, ngx_log_t *log)
{
    void  *p;

    for ( ;; ) {
        p = ngx_slab_alloc_locked(ctx->shpool, size);

        if (p != NULL) {
            return p;
        }

        if (ngx_http_mcp_session_evict(ctx, keep, log) != NGX_OK) {
            return NULL;
        }
    }
}


/* the client that key names, made when it has no session yet */

static ngx_http_mcp_client_t *
ngx_http_mcp_session_client(ngx_http_mcp_zone_t *ctx, ngx_str_t *key,
    ngx_log_t *log)
{
    u_char                  digest[SHA256_DIGEST_LENGTH];
    uint32_t                hash;
    ngx_http_mcp_client_t  *c;

    (void) SHA256(key->data, key->len, digest);
    ngx_memcpy(&hash, digest, sizeof(uint32_t));

    c = (ngx_http_mcp_client_t *) ngx_http_mcp_session_rbtree_lookup(
              &ctx->sh->clients, hash, digest,
              offsetof(ngx_http_mcp_client_t, digest), SHA256_DIGEST_LENGTH);

    if (c != NULL) {
        return c;
    }

    c = ngx_http_mcp_session_alloc(ctx, sizeof(ngx_http_mcp_client_t), NULL,
                                   log);
    if (c == NULL) {
        return NULL;
    }

    c->node.key = hash;
    c->sessions = 0;
    ngx_memcpy(c->digest, digest, sizeof(c->digest));

    ngx_rbtree_insert(&ctx->sh->clients, &c->node);

    return c;
}


/*
 * A client at its quota: its own least recently used idle session goes,
 * never another client's.  NGX_DECLINED when all of its sessions are
 * busy.
 */

static ngx_int_t
ngx_http_mcp_session_quota(ngx_http_mcp_zone_t *ctx,
    ngx_http_mcp_client_t *client, ngx_log_t *log)
{
    ngx_queue_t                  *q;
    ngx_http_mcp_session_node_t  *s;

    /* the new session is counted already */
    if (client->sessions <= ctx->per_client_max) {
        return NGX_OK;
    }

    for (q = ngx_queue_last(&ctx->sh->queue);
         q != ngx_queue_sentinel(&ctx->sh->queue);
         q = ngx_queue_prev(q))
    {
        s = ngx_queue_data(q, ngx_http_mcp_session_node_t, queue);

        if (s->client != client || !ngx_http_mcp_session_idle(s)) {
            continue;
        }

        ngx_log_error(NGX_LOG_INFO, log, 0,
                      "mcp session zone \"%V\": a client at its quota of "
                      "%ui sessions, its least recently used session %s "
                      "ended", &ctx->name, ctx->per_client_max,
                      ngx_http_mcp_session_log_id(s->id,
                                                  NGX_HTTP_MCP_SESSION_ID_LEN));

        /* the client keeps a session: its node stays */
        ngx_http_mcp_session_free(ctx, s);

        return NGX_OK;
    }

    return NGX_DECLINED;
}


/*
 * The modes of a client's elicitation capability (2025-11-25): its
 * "form" and "url" members.  One with neither is form mode only, as
 * clients declared it before there were modes; for the same reason a
 * 2025 client's elicitation that is not an object (initialize is read
 * leniently) is taken for form mode.
 */

ngx_uint_t
ngx_http_mcp_elicitation_modes(cJSON *elicitation)
{
    cJSON  *form, *url;

    if (elicitation == NULL || cJSON_IsNull(elicitation)) {
        return 0;
    }

    form = ngx_http_mcp_json_get(elicitation, "form");
    url = ngx_http_mcp_json_get(elicitation, "url");

    if (!cJSON_IsObject(elicitation) || (form == NULL && url == NULL)) {
        return NGX_HTTP_MCP_ELICIT_FORM;
    }

    return (cJSON_IsObject(form) ? NGX_HTTP_MCP_ELICIT_FORM : 0)
           | (cJSON_IsObject(url) ? NGX_HTTP_MCP_ELICIT_URL : 0);
}


/*
 * What initialize's params tell a session: the version (ours, when the
 * client's is not one we speak), capabilities and client name.  Lenient:
 * the gateway passes the params on for the upstream to judge.
 */

ngx_int_t
ngx_http_mcp_session_init_params(cJSON *params,
    ngx_http_mcp_session_init_t *init)
{
    cJSON       *version, *caps, *name;
    ngx_str_t    s;
    ngx_uint_t   modes;

    ngx_memzero(init, sizeof(ngx_http_mcp_session_init_t));

    version = cJSON_GetObjectItemCaseSensitive(params, "protocolVersion");
    caps = cJSON_GetObjectItemCaseSensitive(params, "capabilities");
    name = cJSON_GetObjectItemCaseSensitive(
               cJSON_GetObjectItemCaseSensitive(params, "clientInfo"), "name");

    if (cJSON_IsString(version)) {
        s.data = (u_char *) version->valuestring;
        s.len = ngx_strlen(s.data);

        init->version = ngx_http_mcp_version_parse(&s);
    }

    /* a stateless revision has no initialize: offer our latest with one */
    if (init->version == 0 || init->version > NGX_HTTP_MCP_VLATEST) {
        init->version = NGX_HTTP_MCP_VLATEST;
    }

    init->sampling = (cJSON_GetObjectItemCaseSensitive(caps, "sampling")
                      != NULL);
    modes = ngx_http_mcp_elicitation_modes(
                cJSON_GetObjectItemCaseSensitive(caps, "elicitation"));
    init->elicitation = (modes & NGX_HTTP_MCP_ELICIT_FORM) ? 1 : 0;
    init->elicitation_url = (modes & NGX_HTTP_MCP_ELICIT_URL) ? 1 : 0;
    init->roots = (cJSON_GetObjectItemCaseSensitive(caps, "roots")
                   != NULL);

    if (cJSON_IsString(name)) {
        init->client_name.data = (u_char *) name->valuestring;
        init->client_name.len = ngx_strlen(name->valuestring);
    }

    return NGX_OK;
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
    ngx_http_mcp_client_t        *client;
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

    client = NULL;

    if (init->client_key.len) {
        client = ngx_http_mcp_session_client(ctx, &init->client_key, log);

        if (client == NULL) {
            ngx_shmtx_unlock(&ctx->shpool->mutex);
            return NGX_DECLINED;
        }

        /*
         * Counted now, before any eviction: freeing the client's last
         * other session must not free the client under our hands.
         */
        client->sessions++;

        if (ngx_http_mcp_session_quota(ctx, client, log) != NGX_OK) {
            if (--client->sessions == 0) {
                ngx_rbtree_delete(&ctx->sh->clients, &client->node);
                ngx_slab_free_locked(ctx->shpool, client);
            }

            ngx_shmtx_unlock(&ctx->shpool->mutex);
            return NGX_DECLINED;
        }
    }

    node = ngx_http_mcp_session_alloc(ctx, n, NULL, log);

    if (node == NULL) {
        if (client && --client->sessions == 0) {
            ngx_rbtree_delete(&ctx->sh->clients, &client->node);
            ngx_slab_free_locked(ctx->shpool, client);
        }

        ngx_shmtx_unlock(&ctx->shpool->mutex);
        return NGX_DECLINED;
    }

    s = (ngx_http_mcp_session_node_t *) &node->color;

    ngx_memzero(s, sizeof(ngx_http_mcp_session_node_t));

    node->key = ngx_crc32_short(id, NGX_HTTP_MCP_SESSION_ID_LEN);
    ngx_memcpy(s->id, id, NGX_HTTP_MCP_SESSION_ID_LEN);

    s->client = client;
    s->version = (u_char) init->version;
    s->log_level = NGX_HTTP_MCP_LOG_INFO;
    s->sampling = init->sampling;
    s->elicitation = init->elicitation;
    s->elicitation_url = init->elicitation_url;
    s->roots = init->roots;
    s->last = ngx_current_msec;

    if (init->binding != NULL) {
        s->bound = 1;
        ngx_memcpy(s->binding, init->binding, NGX_HTTP_MCP_AUTH_BINDING_LEN);
    }

    /* no clientInfo.name, or not a string: an empty name (data NULL) */
    n = ngx_min(init->client_name.len, NGX_HTTP_MCP_CLIENT_NAME_LEN);
    if (n) {
        ngx_memcpy(s->client_name, init->client_name.data, n);
    }
    s->client_name_len = (u_char) n;

    ngx_queue_init(&s->events);
    ngx_queue_init(&s->sstreams);
    ngx_queue_init(&s->waits);
    ngx_queue_init(&s->inbound);
    s->next_seq = 1;
    s->next_request = 1;
    s->next_stream = 1;

    ngx_rbtree_insert(&ctx->sh->rbtree, node);
    ngx_queue_insert_head(&ctx->sh->queue, &s->queue);
    ctx->sh->count++;

    ngx_shmtx_unlock(&ctx->shpool->mutex);

    ngx_log_debug3(NGX_LOG_DEBUG_HTTP, log, 0,
                   "mcp session %s created, version %ui, %ui in the zone",
                   ngx_http_mcp_session_log_id(id,
                                               NGX_HTTP_MCP_SESSION_ID_LEN),
                   init->version, ctx->sh->count);

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
    return ngx_http_mcp_session_get(zone, id, rctx, 1);
}


/* a look that does not count as use: for variables and logs */

ngx_int_t
ngx_http_mcp_session_peek(ngx_shm_zone_t *zone, ngx_str_t *id,
    ngx_http_mcp_reqctx_t *rctx)
{
    return ngx_http_mcp_session_get(zone, id, rctx, 0);
}


/*
 * Whether a session lives, for a holder of something that must end with
 * it (a stdio session's child): NGX_DECLINED when it is gone, or idle
 * past the zone's timeout (then it goes now, rather than when a use of
 * the zone sweeps it), NGX_OK otherwise.  Not a use.
 */

ngx_int_t
ngx_http_mcp_session_alive(ngx_shm_zone_t *zone, ngx_str_t *id)
{
    ngx_msec_t                    now;
    ngx_http_mcp_zone_t          *ctx;
    ngx_http_mcp_session_node_t  *s;

    ctx = zone->data;
    now = ngx_current_msec;

    ngx_shmtx_lock(&ctx->shpool->mutex);

    s = ngx_http_mcp_session_find(ctx, id);

    if (s != NULL && s->retired) {
        /* ended: only its readers pull what is left */
        s = NULL;

    } else if (s != NULL && ngx_http_mcp_session_idle(s)
        && (ngx_msec_int_t) (now - s->last) >= 0
        && now - s->last >= ctx->timeout)
    {
        ngx_http_mcp_session_free(ctx, s);
        s = NULL;
    }

    ngx_shmtx_unlock(&ctx->shpool->mutex);

    return (s != NULL) ? NGX_OK : NGX_DECLINED;
}


static ngx_int_t
ngx_http_mcp_session_get(ngx_shm_zone_t *zone, ngx_str_t *id,
    ngx_http_mcp_reqctx_t *rctx, ngx_uint_t use)
{
    ngx_http_mcp_zone_t          *ctx;
    ngx_http_mcp_session_node_t  *s;

    ctx = zone->data;

    ngx_shmtx_lock(&ctx->shpool->mutex);

    s = ngx_http_mcp_session_get_locked(ctx, id, rctx, use);

    ngx_shmtx_unlock(&ctx->shpool->mutex);

    return (s != NULL) ? NGX_OK : NGX_DECLINED;
}


/* the session of id, if it is the caller's, and its request context */

static ngx_http_mcp_session_node_t *
ngx_http_mcp_session_get_locked(ngx_http_mcp_zone_t *ctx, ngx_str_t *id,
    ngx_http_mcp_reqctx_t *rctx, ngx_uint_t use)
{
    ngx_http_mcp_auth_t          *auth;
    ngx_http_mcp_session_node_t  *s;

    auth = rctx->auth;

    if (use) {
        ngx_http_mcp_session_expire(ctx, 1);
    }

    s = ngx_http_mcp_session_find(ctx, id);

    /*
     * a session is its caller's: to anyone else it does not exist; a
     * retired one, to nobody
     */
    if (s == NULL
        || s->retired
        || s->bound != (auth != NULL)
        || (auth != NULL
            && ngx_memcmp(s->binding, auth->binding,
                          NGX_HTTP_MCP_AUTH_BINDING_LEN) != 0))
    {
        return NULL;
    }

    if (use) {
        s->last = ngx_current_msec;
        ngx_queue_remove(&s->queue);
        ngx_queue_insert_head(&ctx->sh->queue, &s->queue);
    }

    rctx->version = s->version;
    rctx->log_level = s->log_level;
    rctx->sampling = s->sampling;
    rctx->elicitation = s->elicitation || s->elicitation_url;
    rctx->elicitation_form = s->elicitation;
    rctx->elicitation_url = s->elicitation_url;
    rctx->roots = s->roots;
    rctx->session_id = *id;

    if (rctx->client_name.data != NULL) {
        rctx->client_name.len = s->client_name_len;
        ngx_memcpy(rctx->client_name.data, s->client_name,
                   s->client_name_len);
    }

    return s;
}


/*
 * Ends a session.  The workers that hold its streams or run its calls
 * are woken: they find the session gone, end the streams and drop the
 * calls.
 */

ngx_int_t
ngx_http_mcp_session_delete(ngx_shm_zone_t *zone, ngx_str_t *id,
    ngx_log_t *log)
{
    return ngx_http_mcp_session_end(zone, id, 0, log);
}


/*
 * A stdio session's owner ends it.  Deleting it at once would lose what
 * the owner has just written on streams that other workers hold and have
 * not pulled yet: the answer of a call a graceful exit waited for, the
 * error of one it ends.  So while a stream is held the session is only
 * retired: no lookup finds it, no message reaches its child, and it goes
 * with the last of those streams (ngx_http_mcp_session_retired_free()).
 */

ngx_int_t
ngx_http_mcp_session_stdio_retire(ngx_shm_zone_t *zone, ngx_str_t *sid,
    ngx_log_t *log)
{
    return ngx_http_mcp_session_end(zone, sid, 1, log);
}


static ngx_int_t
ngx_http_mcp_session_end(ngx_shm_zone_t *zone, ngx_str_t *id,
    ngx_uint_t retire, ngx_log_t *log)
{
    ngx_uint_t                    i, n;
    ngx_pid_t                     owners[16];
    ngx_queue_t                  *q;
    ngx_http_mcp_zone_t          *ctx;
    ngx_http_mcp_wait_t          *w;
    ngx_http_mcp_stream_sh_t     *st;
    ngx_http_mcp_session_node_t  *s;

    ctx = zone->data;
    n = 0;

    ngx_shmtx_lock(&ctx->shpool->mutex);

    s = ngx_http_mcp_session_find(ctx, id);

    if (s != NULL) {
        for (q = ngx_queue_head(&s->sstreams);
             q != ngx_queue_sentinel(&s->sstreams) && n < 8;
             q = ngx_queue_next(q))
        {
            st = ngx_queue_data(q, ngx_http_mcp_stream_sh_t, queue);

            if (st->owner) {
                owners[n++] = st->owner;
            }
        }

        for (q = ngx_queue_head(&s->waits);
             q != ngx_queue_sentinel(&s->waits) && n < 16;
             q = ngx_queue_next(q))
        {
            w = ngx_queue_data(q, ngx_http_mcp_wait_t, queue);
            owners[n++] = w->owner;
        }

        /* with no stream held, nothing is left to read: it goes now */
        retire = retire && s->streams != 0;

        if (retire) {
            s->retired = 1;
            s->stdio_owner = 0;

        } else {
            ngx_http_mcp_session_free(ctx, s);
        }
    }

    ngx_shmtx_unlock(&ctx->shpool->mutex);

    ngx_log_debug3(NGX_LOG_DEBUG_HTTP, log, 0,
                   "mcp session %s %s, %ui workers to tell",
                   ngx_http_mcp_session_log_id(id->data, id->len),
                   s == NULL ? "to delete not found"
                             : retire ? "retired" : "deleted", n);

    for (i = 0; i < n; i++) {
        (void) ngx_http_mcp_notify_pid(owners[i], log);
    }

    return (s != NULL) ? NGX_OK : NGX_DECLINED;
}


/*
 * notifications/initialized: the calls that hold requests for it (see
 * ngx_http_mcp_call_request()) have wait records; their workers are
 * woken to send them.
 */

ngx_int_t
ngx_http_mcp_session_set_initialized(ngx_shm_zone_t *zone, ngx_str_t *id,
    ngx_log_t *log)
{
    ngx_uint_t                    i, j, n;
    ngx_pid_t                     owners[16];
    ngx_queue_t                  *q;
    ngx_http_mcp_wait_t          *w;
    ngx_http_mcp_zone_t          *ctx;
    ngx_http_mcp_session_node_t  *s;

    ctx = zone->data;
    n = 0;

    ngx_shmtx_lock(&ctx->shpool->mutex);

    s = ngx_http_mcp_session_find(ctx, id);

    if (s != NULL && !s->initialized) {
        s->initialized = 1;

        for (q = ngx_queue_head(&s->waits);
             q != ngx_queue_sentinel(&s->waits) && n < 16;
             q = ngx_queue_next(q))
        {
            w = ngx_queue_data(q, ngx_http_mcp_wait_t, queue);

            for (j = 0; j < n && owners[j] != w->owner; j++) {
                /* void */
            }

            if (j == n) {
                owners[n++] = w->owner;
            }
        }
    }

    ngx_shmtx_unlock(&ctx->shpool->mutex);

    for (i = 0; i < n; i++) {
        (void) ngx_http_mcp_notify_pid(owners[i], log);
    }

    return (s != NULL) ? NGX_OK : NGX_DECLINED;
}


ngx_int_t
ngx_http_mcp_session_initialized(ngx_shm_zone_t *zone, ngx_str_t *id)
{
    ngx_int_t                     rc;
    ngx_http_mcp_zone_t          *ctx;
    ngx_http_mcp_session_node_t  *s;

    ctx = zone->data;

    ngx_shmtx_lock(&ctx->shpool->mutex);

    s = ngx_http_mcp_session_find(ctx, id);

    if (s == NULL) {
        rc = NGX_DECLINED;

    } else {
        rc = s->initialized ? NGX_OK : NGX_AGAIN;
    }

    ngx_shmtx_unlock(&ctx->shpool->mutex);

    return rc;
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
 * What one session may subscribe to, or one subscriptions/listen name:
 * how many URIs (subscriptions=), how long each (subscription_uri=).
 * Configuration: no lock.
 */

void
ngx_http_mcp_session_limits(ngx_shm_zone_t *zone, ngx_uint_t *subscriptions,
    size_t *uri)
{
    ngx_http_mcp_zone_t  *ctx;

    ctx = zone->data;

    *subscriptions = ctx->max_subscriptions;
    *uri = ctx->max_uri;
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

    if (subscribe && uri->len > ctx->max_uri) {
        rc = NGX_ABORT;
        goto done;
    }

    for (prev = &s->subscriptions; *prev; prev = &(*prev)->next) {
        sub = *prev;

        if (sub->len == uri->len
            && ngx_memcmp(sub->uri, uri->data, uri->len) == 0)
        {
            if (!subscribe) {
                *prev = sub->next;
                s->nsubscriptions--;
                ngx_slab_free_locked(ctx->shpool, sub);
            }

            goto done;
        }
    }

    if (!subscribe) {
        goto done;
    }

    if (s->nsubscriptions >= ctx->max_subscriptions) {
        rc = NGX_BUSY;
        goto done;
    }

    sub = ngx_http_mcp_session_alloc(ctx,
                                     sizeof(ngx_http_mcp_subscription_t)
                                     + uri->len, s, ngx_cycle->log);
    if (sub == NULL) {
        rc = NGX_ERROR;
        goto done;
    }

    s->nsubscriptions++;

    sub->next = NULL;
    sub->len = uri->len;
    ngx_memcpy(sub->uri, uri->data, uri->len);

    *prev = sub;

done:

    ngx_shmtx_unlock(&ctx->shpool->mutex);

    return rc;
}


/* the gateway: where a session lives upstream */

ngx_int_t
ngx_http_mcp_session_target_set(ngx_shm_zone_t *zone, ngx_str_t *id,
    ngx_http_mcp_target_t *target)
{
    u_char                       *p;
    ngx_int_t                     rc;
    ngx_http_mcp_zone_t          *ctx;
    ngx_http_mcp_target_sh_t     *t;
    ngx_http_mcp_session_node_t  *s;

    ctx = zone->data;
    rc = NGX_OK;

    ngx_shmtx_lock(&ctx->shpool->mutex);

    s = ngx_http_mcp_session_find(ctx, id);

    if (s == NULL) {
        rc = NGX_DECLINED;
        goto done;
    }

    t = ngx_http_mcp_session_alloc(ctx,
                                   offsetof(ngx_http_mcp_target_sh_t, data)
                                   + target->socklen + target->name.len
                                   + target->sid.len, s, ngx_cycle->log);
    if (t == NULL) {
        rc = NGX_ERROR;
        goto done;
    }

    t->socklen = target->socklen;
    t->name_len = target->name.len;
    t->sid_len = target->sid.len;

    p = ngx_cpymem(t->data, target->sockaddr, target->socklen);
    p = ngx_cpymem(p, target->name.data, target->name.len);

    if (target->sid.len) {
        /* a stateless upstream gives no id */
        ngx_memcpy(p, target->sid.data, target->sid.len);
    }

    if (s->target) {
        ngx_slab_free_locked(ctx->shpool, s->target);
    }

    s->target = t;

done:

    ngx_shmtx_unlock(&ctx->shpool->mutex);

    return rc;
}


/*
 * A gateway session's replica and upstream id, copied into pool, and the
 * session's request context.  NGX_DECLINED: no such session, or not one
 * of the gateway's.
 */

ngx_int_t
ngx_http_mcp_session_target(ngx_shm_zone_t *zone, ngx_str_t *id,
    ngx_pool_t *pool, ngx_http_mcp_target_t *target,
    ngx_http_mcp_reqctx_t *rctx)
{
    u_char                       *p;
    size_t                        len;
    ngx_http_mcp_zone_t          *ctx;
    ngx_http_mcp_target_sh_t     *t;
    ngx_http_mcp_session_node_t  *s;

    ctx = zone->data;
    p = NULL;

    /* one look: the session, its context and its target together */

    ngx_shmtx_lock(&ctx->shpool->mutex);

    s = ngx_http_mcp_session_get_locked(ctx, id, rctx, 1);
    t = (s != NULL) ? s->target : NULL;

    if (t != NULL) {
        len = t->socklen + t->name_len + t->sid_len;

        /* aligned: a struct sockaddr starts it */
        p = ngx_palloc(pool, len);

        if (p != NULL) {
            ngx_memcpy(p, t->data, len);

            target->sockaddr = (struct sockaddr *) p;
            target->socklen = t->socklen;
            target->name.data = p + t->socklen;
            target->name.len = t->name_len;
            target->sid.data = p + t->socklen + t->name_len;
            target->sid.len = t->sid_len;
        }
    }

    ngx_shmtx_unlock(&ctx->shpool->mutex);

    return (p != NULL) ? NGX_OK : NGX_DECLINED;
}


/*
 * A session id is a credential: a log line names a session by a short
 * hash of its id instead, the same in every worker, so that the lines of
 * one session can be found.  The buffer is reused: one call per line.
 */

u_char *
ngx_http_mcp_session_log_id(u_char *id, size_t len)
{
    static u_char  buf[sizeof("#ffffffff")];

    ngx_sprintf(buf, "#%08xD%Z", ngx_crc32_long(id, len));

    return buf;
}


void
ngx_http_mcp_session_wait_free(ngx_http_mcp_zone_t *ctx,
    ngx_http_mcp_wait_t *w)
{
    if (w->answer) {
        ngx_slab_free_locked(ctx->shpool, w->answer);
    }

    ctx->sh->waiting -= (w->request != 0);

    ngx_queue_remove(&w->queue);
    ngx_slab_free_locked(ctx->shpool, w);
}


/*
 * The zone's requestState key: every worker of every cycle has the same.
 * It is made on first use, in a worker: not when the zone is made, as
 * "nginx -t" makes zones too, and OpenSSL's random generator set up
 * there outlives the test's exit.
 */

ngx_int_t
ngx_http_mcp_session_state_key(ngx_shm_zone_t *zone, u_char *key)
{
    ngx_int_t             rc;
    ngx_http_mcp_zone_t  *ctx;

    ctx = zone->data;
    rc = NGX_OK;

    ngx_shmtx_lock(&ctx->shpool->mutex);

    if (!ctx->sh->state_key_made) {
        if (RAND_bytes(ctx->sh->state_key, sizeof(ctx->sh->state_key)) == 1) {
            ctx->sh->state_key_made = 1;

        } else {
            rc = NGX_ERROR;
        }
    }

    ngx_memcpy(key, ctx->sh->state_key, sizeof(ctx->sh->state_key));

    ngx_shmtx_unlock(&ctx->shpool->mutex);

    return rc;
}
