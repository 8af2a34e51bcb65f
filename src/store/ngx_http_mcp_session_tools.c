
/*
 * The store's part of mcp_pass's checks of tools/call
 * (mcp_pass_check_arguments, mcp_pass_check_results), of its pins
 * (mcp_pass_pin) and of its retries (mcp_pass_retry): each upstream's
 * tools as its tools/list replies declared them, their inputSchema and
 * outputSchema as JSON text, the digest last listed and the pin, and
 * two bits of their annotations, which every worker sees, so that a
 * list relayed by one worker checks a call another worker relays.
 * Learnt again whenever a list shows a tool; bounded in number, and the
 * oldest learnt goes first when the zone is short of room: a cache,
 * never a reason to refuse a session.  The zone outlives a reload, and
 * so do the pins learnt in it.
 */


#include "ngx_http_mcp_store.h"
#include "ngx_http_mcp_session_zone.h"
#include "ngx_http_mcp_jsonrpc.h"


/*
 * At most so many tools are kept, all upstreams together, in at most a
 * quarter of the zone: an upstream lists what it likes, and the zone's
 * sessions must not make room for its tools.
 */
#define NGX_HTTP_MCP_TOOLS_MAX  1024
#define NGX_HTTP_MCP_TOOLS_SHARE  4


static ngx_http_mcp_tooldef_sh_t *ngx_http_mcp_tools_find(
    ngx_http_mcp_zone_t *ctx, uint32_t hash, ngx_str_t *upstream,
    ngx_str_t *name);
static void ngx_http_mcp_tools_forget(ngx_http_mcp_zone_t *ctx,
    ngx_http_mcp_tooldef_sh_t *t);
static ngx_http_mcp_tooldef_sh_t *ngx_http_mcp_tools_add(
    ngx_http_mcp_zone_t *ctx, uint32_t hash, ngx_str_t *upstream,
    ngx_str_t *name, ngx_str_t *input, ngx_str_t *output);
static ngx_http_mcp_tooldef_sh_t *ngx_http_mcp_tools_record(
    ngx_http_mcp_zone_t *ctx, uint32_t hash, ngx_str_t *upstream,
    ngx_str_t *name);


static uint32_t
ngx_http_mcp_tools_hash(ngx_str_t *upstream, ngx_str_t *name)
{
    uint32_t  crc;

    ngx_crc32_init(crc);
    ngx_crc32_update(&crc, upstream->data, upstream->len);
    ngx_crc32_update(&crc, (u_char *) "", 1);
    ngx_crc32_update(&crc, name->data, name->len);
    ngx_crc32_final(crc);

    return crc;
}


/*
 * The order of the zone's tree of tools after their hash: upstream and
 * name by length, then by bytes.  Equal hashes (one in 2^32) must not
 * simply go right, as a rotation can lift a later node above an earlier
 * one of the same hash, where a lookup going right would not see it.
 */

static ngx_int_t
ngx_http_mcp_tools_cmp(ngx_str_t *upstream, ngx_str_t *name,
    ngx_http_mcp_tooldef_sh_t *t)
{
    ngx_int_t  rc;

    if (upstream->len != t->upstream_len) {
        return (upstream->len < t->upstream_len) ? -1 : 1;
    }

    if (name->len != t->name_len) {
        return (name->len < t->name_len) ? -1 : 1;
    }

    rc = ngx_memcmp(upstream->data, t->data, upstream->len);

    if (rc != 0) {
        return rc;
    }

    return ngx_memcmp(name->data, t->data + t->upstream_len, name->len);
}


void
ngx_http_mcp_tools_insert(ngx_rbtree_node_t *temp, ngx_rbtree_node_t *node,
    ngx_rbtree_node_t *sentinel)
{
    ngx_str_t                   upstream, name;
    ngx_rbtree_node_t         **p;
    ngx_http_mcp_tooldef_sh_t  *t;

    t = (ngx_http_mcp_tooldef_sh_t *) node;

    upstream.data = t->data;
    upstream.len = t->upstream_len;
    name.data = t->data + t->upstream_len;
    name.len = t->name_len;

    for ( ;; ) {

        if (node->key != temp->key) {
            p = (node->key < temp->key) ? &temp->left : &temp->right;

        } else {
            p = (ngx_http_mcp_tools_cmp(&upstream, &name,
                                        (ngx_http_mcp_tooldef_sh_t *) temp)
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
 * A lookup on every tools/call relayed and on every tool of every list:
 * by the tree, not a walk of up to NGX_HTTP_MCP_TOOLS_MAX records.
 */

static ngx_http_mcp_tooldef_sh_t *
ngx_http_mcp_tools_find(ngx_http_mcp_zone_t *ctx, uint32_t hash,
    ngx_str_t *upstream, ngx_str_t *name)
{
    ngx_int_t                   rc;
    ngx_rbtree_node_t          *node, *sentinel;
    ngx_http_mcp_tooldef_sh_t  *t;

    node = ctx->sh->tools_tree.root;
    sentinel = ctx->sh->tools_tree.sentinel;

    while (node != sentinel) {

        if (hash != node->key) {
            node = (hash < node->key) ? node->left : node->right;
            continue;
        }

        t = (ngx_http_mcp_tooldef_sh_t *) node;

        rc = ngx_http_mcp_tools_cmp(upstream, name, t);

        if (rc == 0) {
            return t;
        }

        node = (rc < 0) ? node->left : node->right;
    }

    return NULL;
}


static void
ngx_http_mcp_tools_forget(ngx_http_mcp_zone_t *ctx,
    ngx_http_mcp_tooldef_sh_t *t)
{
    ctx->sh->tools_version++;
    ngx_queue_remove(&t->queue);
    ngx_rbtree_delete(&ctx->sh->tools_tree, &t->node);
    ctx->sh->ntools--;
    ctx->sh->tools_size -= t->size;
    ngx_slab_free_locked(ctx->shpool, t);
}


/*
 * A tool of upstream as a list declared it; input and output are its
 * schemas as JSON text, len 0 when it declares none.  NGX_DECLINED: no
 * room, even with every other tool forgotten.
 */

ngx_int_t
ngx_http_mcp_tools_learn(ngx_shm_zone_t *zone, ngx_str_t *upstream,
    ngx_str_t *name, ngx_str_t *input, ngx_str_t *output)
{
    u_char                     *p;
    uint32_t                    hash;
    ngx_uint_t                  kept;
    ngx_http_mcp_zone_t        *ctx;
    ngx_http_mcp_tooldef_sh_t  *t, *old;

    ctx = zone->data;
    hash = ngx_http_mcp_tools_hash(upstream, name);
    kept = 0;

    ngx_shmtx_lock(&ctx->shpool->mutex);

    old = ngx_http_mcp_tools_find(ctx, hash, upstream, name);

    if (old != NULL
        && old->input_len == input->len && old->output_len == output->len)
    {
        p = old->data + old->upstream_len + old->name_len;

        if ((input->len == 0 || ngx_memcmp(p, input->data, input->len) == 0)
            && (output->len == 0
                || ngx_memcmp(p + input->len, output->data, output->len)
                   == 0))
        {
            /* as it was: the most recently learnt now */
            ngx_queue_remove(&old->queue);
            ngx_queue_insert_head(&ctx->sh->tools, &old->queue);
            ngx_shmtx_unlock(&ctx->shpool->mutex);
            return NGX_OK;
        }
    }

    /*
     * The new schemas in a record of their size, the old one's pin state
     * copied: the old stays until the new is made (no room: it stays as
     * it was), and cannot be evicted to make room for it meanwhile.
     */
    if (old != NULL) {
        kept = old->kept;
        old->kept = 1;
    }

    t = ngx_http_mcp_tools_add(ctx, hash, upstream, name, input, output);

    if (old != NULL) {
        old->kept = kept;

        if (t != NULL) {
            t->pin = old->pin;
            ngx_memcpy(t->seen, old->seen, sizeof(t->seen));
            ngx_memcpy(t->told, old->told, sizeof(t->told));
            t->pinned = old->pinned;
            t->listed = old->listed;
            t->kept = old->kept;
            t->hints = old->hints;

            ngx_http_mcp_tools_forget(ctx, old);
        }
    }

    ngx_shmtx_unlock(&ctx->shpool->mutex);

    return (t != NULL) ? NGX_OK : NGX_DECLINED;
}


/*
 * A new record, the most recently learnt, room made by forgetting the
 * least recently learnt; NULL: no room even so.  The caller holds the
 * zone's lock.
 */

static ngx_http_mcp_tooldef_sh_t *
ngx_http_mcp_tools_add(ngx_http_mcp_zone_t *ctx, uint32_t hash,
    ngx_str_t *upstream, ngx_str_t *name, ngx_str_t *input,
    ngx_str_t *output)
{
    u_char                     *p;
    size_t                      size, share;
    ngx_queue_t                *q;
    ngx_http_mcp_tooldef_sh_t  *t, *old;

    size = offsetof(ngx_http_mcp_tooldef_sh_t, data)
           + upstream->len + name->len + input->len + output->len;

    share = (ctx->shpool->end - (u_char *) ctx->shpool)
            / NGX_HTTP_MCP_TOOLS_SHARE;

    if (size > share) {
        return NULL;
    }

    for ( ;; ) {
        t = (ctx->sh->ntools < NGX_HTTP_MCP_TOOLS_MAX
             && ctx->sh->tools_size + size <= share)
            ? ngx_slab_calloc_locked(ctx->shpool, size) : NULL;

        if (t != NULL) {
            break;
        }

        /*
         * The least recently learnt makes room, but never a pin: an
         * upstream that lists ever more tools would push other
         * upstreams' pins out, to be learnt anew from a changed list.
         * With only pins left, a new tool gets none (under enforce it is
         * left out: ngx_http_mcp_tools_pin() says NGX_AGAIN).
         */
        old = NULL;

        for (q = ngx_queue_last(&ctx->sh->tools);
             q != ngx_queue_sentinel(&ctx->sh->tools);
             q = ngx_queue_prev(q))
        {
            old = ngx_queue_data(q, ngx_http_mcp_tooldef_sh_t, queue);

            if (!old->kept) {
                break;
            }
        }

        if (q == ngx_queue_sentinel(&ctx->sh->tools)) {
            break;
        }

        ngx_http_mcp_tools_forget(ctx, old);
    }

    if (t == NULL) {
        return NULL;
    }

    t->node.key = hash;
    t->size = size;
    t->upstream_len = upstream->len;
    t->name_len = name->len;
    t->input_len = input->len;
    t->output_len = output->len;

    /* a schema not declared is an empty string: no bytes, no pointer */
    p = ngx_cpymem(t->data, upstream->data, upstream->len);
    p = ngx_cpymem(p, name->data, name->len);

    if (input->len) {
        p = ngx_cpymem(p, input->data, input->len);
    }

    if (output->len) {
        (void) ngx_cpymem(p, output->data, output->len);
    }

    ctx->sh->tools_version++;
    ngx_queue_insert_head(&ctx->sh->tools, &t->queue);
    ngx_rbtree_insert(&ctx->sh->tools_tree, &t->node);
    ctx->sh->ntools++;
    ctx->sh->tools_size += size;

    return t;
}


/*
 * The tool's record, a new one without schemas if none is kept; NULL:
 * no room.  The caller holds the zone's lock.
 */

static ngx_http_mcp_tooldef_sh_t *
ngx_http_mcp_tools_record(ngx_http_mcp_zone_t *ctx, uint32_t hash,
    ngx_str_t *upstream, ngx_str_t *name)
{
    ngx_str_t                   none;
    ngx_http_mcp_tooldef_sh_t  *t;

    t = ngx_http_mcp_tools_find(ctx, hash, upstream, name);

    if (t != NULL) {
        return t;
    }

    ngx_str_null(&none);

    return ngx_http_mcp_tools_add(ctx, hash, upstream, name, &none, &none);
}


/*
 * The schemas upstream's tool name was last listed with, copied into
 * pool (len 0: none declared).  NGX_DECLINED: no list seen shows it.
 */

ngx_int_t
ngx_http_mcp_tools_schemas(ngx_shm_zone_t *zone, ngx_str_t *upstream,
    ngx_str_t *name, ngx_pool_t *pool, ngx_str_t *input, ngx_str_t *output)
{
    u_char                     *p;
    ngx_int_t                   rc;
    ngx_http_mcp_zone_t        *ctx;
    ngx_http_mcp_tooldef_sh_t  *t;

    ctx = zone->data;
    rc = NGX_DECLINED;

    ngx_str_null(input);
    ngx_str_null(output);

    ngx_shmtx_lock(&ctx->shpool->mutex);

    t = ngx_http_mcp_tools_find(ctx, ngx_http_mcp_tools_hash(upstream, name),
                                upstream, name);

    if (t != NULL) {
        rc = NGX_OK;

        p = ngx_pnalloc(pool, t->input_len + t->output_len + 1);

        if (p == NULL) {
            rc = NGX_ERROR;

        } else {
            ngx_memcpy(p, t->data + t->upstream_len + t->name_len,
                       t->input_len + t->output_len);

            input->data = p;
            input->len = t->input_len;
            output->data = p + t->input_len;
            output->len = t->output_len;
        }
    }

    ngx_shmtx_unlock(&ctx->shpool->mutex);

    return rc;
}


/*
 * A tool as a list shows it now (seen) against its pin: with learn, the
 * zone's, made of what was seen first (and copied to *pin); else *pin,
 * a pin file's, or NULL: the file has none for it.  NGX_OK: as pinned;
 * NGX_DECLINED: changed, or new to the file; NGX_AGAIN: no room to
 * keep it.  *tell: a change not told before (told once per digest).
 */

ngx_int_t
ngx_http_mcp_tools_pin(ngx_shm_zone_t *zone, ngx_str_t *upstream,
    ngx_str_t *name, ngx_http_mcp_pin_t *seen, ngx_http_mcp_pin_t *pin,
    ngx_uint_t learn, ngx_uint_t *tell)
{
    uint32_t                    hash;
    ngx_int_t                   rc;
    ngx_http_mcp_zone_t        *ctx;
    ngx_http_mcp_tooldef_sh_t  *t;

    static u_char  zero[32];

    ctx = zone->data;
    hash = ngx_http_mcp_tools_hash(upstream, name);
    *tell = 0;

    ngx_shmtx_lock(&ctx->shpool->mutex);

    t = ngx_http_mcp_tools_record(ctx, hash, upstream, name);

    if (t == NULL) {
        ngx_shmtx_unlock(&ctx->shpool->mutex);
        return NGX_AGAIN;
    }

    if (learn) {
        if (!t->pinned) {
            t->pin = *seen;
            t->pinned = 1;
            ctx->sh->tools_version++;
        }

        *pin = t->pin;
    }

    /* the version moves only with a change: a list as before writes none */
    if (!t->listed || !t->kept
        || ngx_memcmp(t->seen, seen->digest, sizeof(t->seen)) != 0)
    {
        ngx_memcpy(t->seen, seen->digest, sizeof(t->seen));
        t->listed = 1;
        t->kept = 1;
        ctx->sh->tools_version++;
    }

    if (pin != NULL && ngx_memcmp(pin->digest, seen->digest, 32) == 0) {
        /* a change back is told again when it comes again */
        if (ngx_memcmp(t->told, zero, sizeof(t->told)) != 0) {
            ngx_memzero(t->told, sizeof(t->told));
            ctx->sh->tools_version++;
        }

        rc = NGX_OK;

    } else {
        *tell = ngx_memcmp(t->told, seen->digest, 32) != 0;

        if (*tell) {
            ngx_memcpy(t->told, seen->digest, sizeof(t->told));
            ctx->sh->tools_version++;
        }

        rc = NGX_DECLINED;
    }

    ngx_shmtx_unlock(&ctx->shpool->mutex);

    return rc;
}


/*
 * The digest a tool was last listed with, and its learnt pin (zeros:
 * none); NGX_AGAIN: no list relayed has shown it.
 */

ngx_int_t
ngx_http_mcp_tools_seen(ngx_shm_zone_t *zone, ngx_str_t *upstream,
    ngx_str_t *name, u_char *seen, u_char *pin)
{
    ngx_int_t                   rc;
    ngx_http_mcp_zone_t        *ctx;
    ngx_http_mcp_tooldef_sh_t  *t;

    ctx = zone->data;
    rc = NGX_AGAIN;

    ngx_shmtx_lock(&ctx->shpool->mutex);

    t = ngx_http_mcp_tools_find(ctx, ngx_http_mcp_tools_hash(upstream, name),
                                upstream, name);

    if (t != NULL && t->listed) {
        ngx_memcpy(seen, t->seen, 32);

        if (t->pinned) {
            ngx_memcpy(pin, t->pin.digest, 32);

        } else {
            ngx_memzero(pin, 32);
        }

        rc = NGX_OK;
    }

    ngx_shmtx_unlock(&ctx->shpool->mutex);

    return rc;
}


/*
 * The annotations that make upstream's tool name safe to call twice
 * (NGX_HTTP_MCP_TOOL_*), as a list shows them now.  A tool without
 * them takes no room: unknown or none, its calls are sent once.
 * NGX_DECLINED: no room to keep them.
 */

ngx_int_t
ngx_http_mcp_tools_hint(ngx_shm_zone_t *zone, ngx_str_t *upstream,
    ngx_str_t *name, ngx_uint_t hints)
{
    uint32_t                    hash;
    ngx_http_mcp_zone_t        *ctx;
    ngx_http_mcp_tooldef_sh_t  *t;

    ctx = zone->data;
    hash = ngx_http_mcp_tools_hash(upstream, name);

    ngx_shmtx_lock(&ctx->shpool->mutex);

    t = hints ? ngx_http_mcp_tools_record(ctx, hash, upstream, name)
              : ngx_http_mcp_tools_find(ctx, hash, upstream, name);

    if (t != NULL && t->hints != hints) {
        t->hints = hints;
        ctx->sh->tools_version++;
    }

    ngx_shmtx_unlock(&ctx->shpool->mutex);

    return (t != NULL || hints == 0) ? NGX_OK : NGX_DECLINED;
}


/* upstream's tool name's hints as last listed; 0: none, or not listed */

ngx_uint_t
ngx_http_mcp_tools_hints(ngx_shm_zone_t *zone, ngx_str_t *upstream,
    ngx_str_t *name)
{
    ngx_uint_t                  hints;
    ngx_http_mcp_zone_t        *ctx;
    ngx_http_mcp_tooldef_sh_t  *t;

    ctx = zone->data;

    ngx_shmtx_lock(&ctx->shpool->mutex);

    t = ngx_http_mcp_tools_find(ctx, ngx_http_mcp_tools_hash(upstream, name),
                                upstream, name);
    hints = (t != NULL) ? t->hints : 0;

    ngx_shmtx_unlock(&ctx->shpool->mutex);

    return hints;
}


ngx_uint_t
ngx_http_mcp_tools_retry(ngx_shm_zone_t *zone, ngx_str_t *upstream,
    ngx_uint_t type, ngx_str_t *method, cJSON *params)
{
    cJSON      *name;
    ngx_str_t   tool;

    switch (ngx_http_mcp_jsonrpc_retry(type, method)) {

    case NGX_HTTP_MCP_RETRY_SAFE:
        return 1;

    case NGX_HTTP_MCP_RETRY_TOOL:
        break;

    default:
        return 0;
    }

    name = cJSON_GetObjectItemCaseSensitive(params, "name");

    if (!cJSON_IsString(name)) {
        return 0;
    }

    tool.data = (u_char *) name->valuestring;
    tool.len = ngx_strlen(tool.data);

    return ngx_http_mcp_tools_hints(zone, upstream, &tool) != 0;
}


ngx_atomic_uint_t
ngx_http_mcp_tools_version(ngx_shm_zone_t *zone)
{
    ngx_http_mcp_zone_t  *ctx;

    ctx = zone->data;

    return ctx->sh->tools_version;
}
