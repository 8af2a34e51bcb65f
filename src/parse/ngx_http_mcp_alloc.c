
/*
 * The allocator behind cJSON.  A JSON-RPC message makes and frees some
 * hundred small nodes and strings at once; glibc keeps only seven free
 * chunks of a size in its thread cache, so the rest went through the
 * arena, and the next request pool's allocation consolidated them
 * again: a quarter of a tools/call's instructions in the worker.  Here
 * a freed chunk of one of four sizes waits on the worker's list for the
 * next message, up to a bound; beyond it, and for bigger chunks, this is
 * malloc() and free().  The lifetime rules stay malloc's: a tree lives
 * until cJSON_Delete(), whichever request, timer or process ends it, so
 * a call or a task may keep its message as long as it likes.
 *
 * A tag before each chunk names its list.  The hooks are set when the
 * http block is first parsed, before this module's first cJSON call;
 * a chunk without the tag (cJSON called by someone before that) is
 * handed to free() as it is.  Sanitizer builds keep no lists, so that
 * a use after free is still a use after free.
 */


#include <ngx_config.h>
#include <ngx_core.h>

#include <cjson/cJSON.h>

#include "ngx_http_mcp_alloc.h"


#define NGX_HTTP_MCP_ALLOC_TAG      0x6e6f736a2d70636dULL  /* "mcp-json" */
#define NGX_HTTP_MCP_ALLOC_SIZES    4
#define NGX_HTTP_MCP_ALLOC_BIG      NGX_HTTP_MCP_ALLOC_SIZES

#if defined(__SANITIZE_ADDRESS__)
#define NGX_HTTP_MCP_ALLOC_KEEP     0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define NGX_HTTP_MCP_ALLOC_KEEP     0
#endif
#endif

#ifndef NGX_HTTP_MCP_ALLOC_KEEP
/* chunks kept a size: 512 of each is 280 KB at most for a worker */
#define NGX_HTTP_MCP_ALLOC_KEEP     512
#endif


/* 16 bytes, so that the chunk after it keeps malloc's alignment */
typedef struct {
    uint64_t                    tag;
    uint64_t                    size;       /* a list, or _BIG */
} ngx_http_mcp_alloc_head_t;


typedef struct ngx_http_mcp_alloc_free_s  ngx_http_mcp_alloc_free_t;

struct ngx_http_mcp_alloc_free_s {
    ngx_http_mcp_alloc_free_t  *next;
};


static void *ngx_http_mcp_alloc(size_t size);
static void ngx_http_mcp_alloc_free(void *p);


/* cJSON's node is 64 bytes; member names and short strings fit in 32 */
static const size_t  ngx_http_mcp_alloc_size[NGX_HTTP_MCP_ALLOC_SIZES] = {
    32, 64, 128, 256
};

/* a worker's own: nginx workers run one thread */
static ngx_http_mcp_alloc_free_t  *ngx_http_mcp_alloc_list[
                                                 NGX_HTTP_MCP_ALLOC_SIZES];
static ngx_uint_t                  ngx_http_mcp_alloc_kept[
                                                 NGX_HTTP_MCP_ALLOC_SIZES];


void
ngx_http_mcp_alloc_init(void)
{
    cJSON_Hooks  hooks;

    hooks.malloc_fn = ngx_http_mcp_alloc;
    hooks.free_fn = ngx_http_mcp_alloc_free;

    cJSON_InitHooks(&hooks);
}


static void *
ngx_http_mcp_alloc(size_t size)
{
    ngx_uint_t                  i;
    ngx_http_mcp_alloc_free_t  *f;
    ngx_http_mcp_alloc_head_t  *h;

    for (i = 0; i < NGX_HTTP_MCP_ALLOC_SIZES; i++) {
        if (size <= ngx_http_mcp_alloc_size[i]) {
            break;
        }
    }

    if (i < NGX_HTTP_MCP_ALLOC_SIZES) {
        f = ngx_http_mcp_alloc_list[i];

        if (f != NULL) {
            ngx_http_mcp_alloc_list[i] = f->next;
            ngx_http_mcp_alloc_kept[i]--;
            return f;
        }

        size = ngx_http_mcp_alloc_size[i];
    }

    h = malloc(sizeof(ngx_http_mcp_alloc_head_t) + size);
    if (h == NULL) {
        return NULL;
    }

    h->tag = NGX_HTTP_MCP_ALLOC_TAG;
    h->size = i;

    return h + 1;
}


static void
ngx_http_mcp_alloc_free(void *p)
{
    ngx_http_mcp_alloc_head_t  *h;
#if (NGX_HTTP_MCP_ALLOC_KEEP)
    uint64_t                    i;
    ngx_http_mcp_alloc_free_t  *f;
#endif

    if (p == NULL) {
        return;
    }

    h = (ngx_http_mcp_alloc_head_t *) p - 1;

    if (h->tag != NGX_HTTP_MCP_ALLOC_TAG) {
        free(p);
        return;
    }

#if (NGX_HTTP_MCP_ALLOC_KEEP)
    i = h->size;

    if (i < NGX_HTTP_MCP_ALLOC_SIZES
        && ngx_http_mcp_alloc_kept[i] < NGX_HTTP_MCP_ALLOC_KEEP)
    {
        f = p;
        f->next = ngx_http_mcp_alloc_list[i];
        ngx_http_mcp_alloc_list[i] = f;
        ngx_http_mcp_alloc_kept[i]++;
        return;
    }
#endif

    h->tag = 0;
    free(h);
}
