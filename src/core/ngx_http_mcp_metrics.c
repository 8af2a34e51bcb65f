
/*
 * Prometheus metrics.  Counting must cost next to nothing on the hot
 * path, and a scrape must see every worker's counts: each worker adds to
 * its own slot of a shared zone (cache-line aligned, so that no two
 * workers write one line) with one atomic add per counter, and the
 * endpoint sums the slots.  No lock is ever taken to count; a scrape
 * reads while workers add, so two counters of one request may be one
 * apart in a scrape, never for long.  Where a histogram's buckets and
 * _count must agree, _count is the sum of the buckets it prints.
 *
 * The layout is fixed when the configuration is read: methods are an
 * enum ("other" for the rest), tools are the names the built-in sets
 * registered (at most NGX_HTTP_MCP_METRICS_TOOLS, then "other"), so that
 * label cardinality is bounded whatever clients send.  What the session
 * store owns (sessions, streams, dropped events, event log bytes, pending
 * server requests, zone bytes) is asked of the store at scrape time.
 */


#include "ngx_http_mcp_metrics.h"
#include "ngx_http_mcp_json.h"
#include "ngx_http_mcp_jsonrpc.h"
#include "ngx_http_mcp_store.h"
#include "ngx_http_mcp_call.h"
#include "ngx_http_mcp_core.h"

#include <time.h>


#define NGX_HTTP_MCP_METRICS_ZONE     "mcp_metrics"
#define NGX_HTTP_MCP_METRICS_TOOLS    64
#define NGX_HTTP_MCP_METRICS_BUCKETS  14
#define NGX_HTTP_MCP_METRICS_LINE     128   /* a line without a name */
#define NGX_HTTP_MCP_METRICS_GUARDS   32    /* guardrail sets by name */


typedef struct {
    ngx_atomic_t               le[NGX_HTTP_MCP_METRICS_BUCKETS + 1];
                                            /* per bucket, not cumulative;
                                               the last: over the top */
    ngx_atomic_t               sum;         /* microseconds */
} ngx_http_mcp_histogram_t;


enum {
    NGX_HTTP_MCP_M_OK = 0,
    NGX_HTTP_MCP_M_ERROR,
    NGX_HTTP_MCP_M_RESULTS
};

enum {
    NGX_HTTP_MCP_M_TOOL_OK = 0,
    NGX_HTTP_MCP_M_TOOL_IS_ERROR,
    NGX_HTTP_MCP_M_TOOL_ERROR,
    NGX_HTTP_MCP_M_OUTCOMES
};

enum {
    NGX_HTTP_MCP_M_UNREACHABLE = 0,
    NGX_HTTP_MCP_M_TIMEOUT,
    NGX_HTTP_MCP_M_BAD_REPLY,
    NGX_HTTP_MCP_M_UPSTREAM_ERRORS
};


#define NGX_HTTP_MCP_M_METHODS  21
#define NGX_HTTP_MCP_M_CODES    12
#define NGX_HTTP_MCP_M_AUTH     7


/* one worker's counters */
typedef struct {
    ngx_atomic_t               requests[NGX_HTTP_MCP_M_METHODS]
                                       [NGX_HTTP_MCP_M_RESULTS];
    ngx_http_mcp_histogram_t   duration[NGX_HTTP_MCP_M_METHODS];
    ngx_atomic_t               errors[NGX_HTTP_MCP_M_CODES];
    ngx_atomic_t               auth[NGX_HTTP_MCP_M_AUTH];
    ngx_atomic_t               timeouts;    /* server requests */
    ngx_atomic_t               backend_failures;  /* mcp_backend's */
    ngx_atomic_t               pin_changes;  /* mcp_pass_pin's */
    ngx_atomic_t               guardrails[NGX_HTTP_MCP_METRICS_GUARDS + 1]
                                         [3];  /* by set ("other" first)
                                                  and action: block,
                                                  redact, log */
    ngx_atomic_t               upstream_errors[NGX_HTTP_MCP_M_UPSTREAM_ERRORS];
    ngx_http_mcp_histogram_t   upstream;    /* time to the reply's header */
    ngx_atomic_t               tools[1];    /* (ntools + 1) * outcomes */
} ngx_http_mcp_metrics_slot_t;


typedef struct {
    uint32_t                   layout;      /* what the slots hold */
    ngx_uint_t                 nslots;
} ngx_http_mcp_metrics_sh_t;


typedef struct {
    ngx_shm_zone_t            *zone;
    ngx_hash_t                 tools;       /* name -> index + 1 */
    ngx_str_t                 *tool_names;
    ngx_uint_t                 ntools;
    ngx_uint_t                 nslots;
    size_t                     slot_size;
    uint32_t                   layout;
} ngx_http_mcp_metrics_conf_t;


static ngx_int_t ngx_http_mcp_metrics_init_zone(ngx_shm_zone_t *shm_zone,
    void *data);
static ngx_int_t ngx_http_mcp_metrics_tools(ngx_conf_t *cf,
    ngx_http_mcp_metrics_conf_t *mcf);
static ngx_http_mcp_metrics_slot_t *ngx_http_mcp_metrics_slot(
    ngx_http_mcp_metrics_conf_t **mcfp);
static ngx_http_mcp_metrics_slot_t *ngx_http_mcp_metrics_nth(
    ngx_http_mcp_metrics_conf_t *mcf, ngx_uint_t n);
static uint64_t ngx_http_mcp_metrics_now(void);
static ngx_uint_t ngx_http_mcp_metrics_method(ngx_str_t *method);
static void ngx_http_mcp_metrics_observe(ngx_http_mcp_histogram_t *h,
    uint64_t us);
static ngx_int_t ngx_http_mcp_metrics_handler(ngx_http_request_t *r);
static u_char *ngx_http_mcp_metrics_counters(u_char *p,
    ngx_http_mcp_metrics_conf_t *mcf);
static u_char *ngx_http_mcp_metrics_labeled(u_char *p,
    ngx_http_mcp_metrics_conf_t *mcf, const char *name, const char *label,
    ngx_str_t *values, ngx_uint_t n, ngx_uint_t offset);
static u_char *ngx_http_mcp_metrics_guards(u_char *p,
    ngx_http_mcp_metrics_conf_t *mcf);
static u_char *ngx_http_mcp_metrics_histogram(u_char *p, const char *name,
    ngx_http_mcp_metrics_conf_t *mcf, ngx_uint_t offset, const char *label,
    ngx_str_t *value);
static u_char *ngx_http_mcp_metrics_zones(u_char *p,
    ngx_http_mcp_main_conf_t *mmcf);
static u_char *ngx_http_mcp_metrics_zone(u_char *p, ngx_shm_zone_t *zone);
static u_char *ngx_http_mcp_metrics_label(u_char *p, ngx_str_t *value);
static uint64_t ngx_http_mcp_metrics_sum(ngx_http_mcp_metrics_conf_t *mcf,
    ngx_uint_t offset);


static ngx_str_t  ngx_http_mcp_metrics_methods[NGX_HTTP_MCP_M_METHODS] = {
    ngx_string("initialize"),
    ngx_string("ping"),
    ngx_string("server/discover"),
    ngx_string("subscriptions/listen"),
    ngx_string("tools/list"),
    ngx_string("tools/call"),
    ngx_string("resources/list"),
    ngx_string("resources/read"),
    ngx_string("resources/templates/list"),
    ngx_string("resources/subscribe"),
    ngx_string("resources/unsubscribe"),
    ngx_string("prompts/list"),
    ngx_string("prompts/get"),
    ngx_string("logging/setLevel"),
    ngx_string("completion/complete"),
    ngx_string("tasks/get"),
    ngx_string("tasks/cancel"),
    ngx_string("tasks/update"),
    ngx_string("tasks/result"),
    ngx_string("tasks/list"),
    ngx_string("other")                     /* the last: the rest */
};

#define NGX_HTTP_MCP_M_TOOLS_CALL  5


static ngx_int_t  ngx_http_mcp_metrics_codes[NGX_HTTP_MCP_M_CODES - 1] = {
    -32700, -32600, -32601, -32602, -32603, -32000, -32001, -32002,
    -32020, -32021, -32022
};


static ngx_str_t  ngx_http_mcp_metrics_auth_results[NGX_HTTP_MCP_M_AUTH] = {
    ngx_string("ok"),
    ngx_string("missing"),
    ngx_string("invalid"),
    ngx_string("expired"),
    ngx_string("query_token"),
    ngx_string("insufficient_scope"),
    ngx_string("other")
};


static ngx_str_t  ngx_http_mcp_metrics_outcomes[NGX_HTTP_MCP_M_OUTCOMES] = {
    ngx_string("ok"),
    ngx_string("tool_error"),
    ngx_string("error")
};


static ngx_str_t  ngx_http_mcp_metrics_upstream_kinds[] = {
    ngx_string("unreachable"),
    ngx_string("timeout"),
    ngx_string("bad_reply")
};


/* the buckets' upper bounds: in microseconds, and as Prometheus prints */
static uint64_t  ngx_http_mcp_metrics_bounds[NGX_HTTP_MCP_METRICS_BUCKETS] = {
    500, 1000, 2500, 5000, 10000, 25000, 50000, 100000, 250000, 500000,
    1000000, 2500000, 5000000, 10000000
};

static const char  *ngx_http_mcp_metrics_le[NGX_HTTP_MCP_METRICS_BUCKETS] = {
    "0.0005", "0.001", "0.0025", "0.005", "0.01", "0.025", "0.05", "0.1",
    "0.25", "0.5", "1", "2.5", "5", "10"
};


/* mcp_metrics: the location serves the counters */

char *
ngx_http_mcp_metrics(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_core_loc_conf_t  *clcf;
    ngx_http_mcp_main_conf_t  *mmcf;

    mmcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_mcp_module);

    if (mmcf->metrics == NULL) {
        mmcf->metrics = ngx_pcalloc(cf->pool,
                                    sizeof(ngx_http_mcp_metrics_conf_t));
        if (mmcf->metrics == NULL) {
            return NGX_CONF_ERROR;
        }
    }

    clcf = ngx_http_conf_get_module_loc_conf(cf, ngx_http_core_module);
    clcf->handler = ngx_http_mcp_metrics_handler;

    return NGX_CONF_OK;
}


/*
 * After the configuration is read (the sets are built): the tools'
 * names, one slot a worker, and the zone.  Without an mcp_metrics
 * location there is no zone and nothing is counted.
 */

ngx_int_t
ngx_http_mcp_metrics_init_conf(ngx_conf_t *cf)
{
    size_t                        size;
    ngx_str_t                     name = ngx_string(NGX_HTTP_MCP_METRICS_ZONE);
    ngx_str_t                    *gs;
    ngx_uint_t                    i;
    ngx_core_conf_t              *ccf;
    ngx_http_mcp_main_conf_t     *mmcf;
    ngx_http_mcp_metrics_conf_t  *mcf;

    mmcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_mcp_module);
    mcf = mmcf->metrics;

    if (mcf == NULL) {
        return NGX_OK;
    }

    if (ngx_http_mcp_metrics_tools(cf, mcf) != NGX_OK) {
        return NGX_ERROR;
    }

    /* a slot a worker; a worker past them shares one (adds are atomic) */
    ccf = (ngx_core_conf_t *) ngx_get_conf(cf->cycle->conf_ctx,
                                           ngx_core_module);
    mcf->nslots = (ccf->worker_processes > 0) ? ccf->worker_processes : 1;

    mcf->slot_size = ngx_align(offsetof(ngx_http_mcp_metrics_slot_t, tools)
                               + (mcf->ntools + 1) * NGX_HTTP_MCP_M_OUTCOMES
                                 * sizeof(ngx_atomic_t),
                               128);

    /* the layout: a zone kept over a reload keeps its counts only if so */
    mcf->layout = ngx_crc32_short((u_char *) &mcf->slot_size, sizeof(size_t));

    for (i = 0; i < mcf->ntools; i++) {
        mcf->layout ^= ngx_crc32_short(mcf->tool_names[i].data,
                                       mcf->tool_names[i].len) + i;
    }

    /* the guardrail sets' rows are theirs by order */
    gs = (mmcf->guard_sets != NULL) ? mmcf->guard_sets->elts : NULL;

    for (i = 0; gs != NULL && i < mmcf->guard_sets->nelts; i++) {
        mcf->layout ^= ngx_crc32_short(gs[i].data, gs[i].len) + 1000 + i;
    }

    size = 8 * ngx_pagesize + 128 + mcf->nslots * mcf->slot_size;

    mcf->zone = ngx_shared_memory_add(cf, &name, size, &ngx_http_mcp_module);
    if (mcf->zone == NULL) {
        return NGX_ERROR;
    }

    if (mcf->zone->data) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "duplicate zone \"%V\"", &name);
        return NGX_ERROR;
    }

    mcf->zone->init = ngx_http_mcp_metrics_init_zone;
    mcf->zone->data = mcf;

    return NGX_OK;
}


static ngx_int_t
ngx_http_mcp_metrics_init_zone(ngx_shm_zone_t *shm_zone, void *data)
{
    ngx_http_mcp_metrics_conf_t  *omcf = data;

    size_t                        size;
    ngx_slab_pool_t              *shpool;
    ngx_http_mcp_metrics_sh_t    *sh;
    ngx_http_mcp_metrics_conf_t  *mcf;

    mcf = shm_zone->data;
    shpool = (ngx_slab_pool_t *) shm_zone->shm.addr;

    size = sizeof(ngx_http_mcp_metrics_sh_t) + 128
           + mcf->nslots * mcf->slot_size;

    if (omcf != NULL || shm_zone->shm.exists) {
        sh = shpool->data;

        if (sh->layout == mcf->layout && sh->nslots == mcf->nslots) {
            /* a reload with the same tools: the counts go on */
            return NGX_OK;
        }

        /* other tools, other slots: the counts start again */
        ngx_memzero(sh, size);

    } else {
        sh = ngx_slab_alloc(shpool, size);
        if (sh == NULL) {
            return NGX_ERROR;
        }

        ngx_memzero(sh, size);
        shpool->data = sh;
    }

    sh->layout = mcf->layout;
    sh->nslots = mcf->nslots;

    return NGX_OK;
}


/* the tools of every built set, each name once, the first ones first */

static ngx_int_t
ngx_http_mcp_metrics_tools(ngx_conf_t *cf, ngx_http_mcp_metrics_conf_t *mcf)
{
    ngx_int_t                  rc;
    ngx_uint_t                 i, j;
    ngx_hash_init_t            hash;
    ngx_http_mcp_entry_t      *e;
    ngx_hash_keys_arrays_t     ha;
    ngx_http_mcp_provider_t   *p;
    ngx_http_mcp_main_conf_t  *mmcf;

    mmcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_mcp_module);

    ngx_memzero(&ha, sizeof(ngx_hash_keys_arrays_t));

    ha.pool = cf->pool;
    ha.temp_pool = cf->temp_pool;

    if (ngx_hash_keys_array_init(&ha, NGX_HASH_SMALL) != NGX_OK) {
        return NGX_ERROR;
    }

    mcf->tool_names = ngx_palloc(cf->pool, NGX_HTTP_MCP_METRICS_TOOLS
                                           * sizeof(ngx_str_t));
    if (mcf->tool_names == NULL) {
        return NGX_ERROR;
    }

    p = mmcf->providers.elts;

    for (i = 0; i < mmcf->providers.nelts; i++) {
        if (p[i].set == NULL) {
            continue;
        }

        e = p[i].set->tools.elts;

        for (j = 0; j < p[i].set->tools.nelts; j++) {
            if (mcf->ntools == NGX_HTTP_MCP_METRICS_TOOLS) {
                break;
            }

            rc = ngx_hash_add_key(&ha, &e[j].name,
                                  (void *) (uintptr_t) (mcf->ntools + 1),
                                  NGX_HASH_READONLY_KEY);
            if (rc == NGX_BUSY) {
                continue;
            }

            if (rc != NGX_OK) {
                return NGX_ERROR;
            }

            mcf->tool_names[mcf->ntools++] = e[j].name;
        }
    }

    hash.hash = &mcf->tools;
    hash.key = ngx_hash_key;
    hash.max_size = 1024;
    hash.bucket_size = ngx_align(64, ngx_cacheline_size);
    hash.name = "mcp_metrics_tools_hash";
    hash.pool = cf->pool;
    hash.temp_pool = NULL;

    return ngx_hash_init(&hash, ha.keys.elts, ha.keys.nelts);
}


/* ---- counting ---- */

static ngx_http_mcp_metrics_slot_t *
ngx_http_mcp_metrics_slot(ngx_http_mcp_metrics_conf_t **mcfp)
{
    ngx_http_mcp_main_conf_t     *mmcf;
    ngx_http_mcp_metrics_conf_t  *mcf;

    mmcf = ngx_http_cycle_get_module_main_conf(ngx_cycle,
                                               ngx_http_mcp_module);
    if (mmcf == NULL || mmcf->metrics == NULL) {
        return NULL;
    }

    mcf = mmcf->metrics;

    if (mcf->zone == NULL || mcf->zone->shm.addr == NULL) {
        return NULL;
    }

    if (mcfp != NULL) {
        *mcfp = mcf;
    }

    return ngx_http_mcp_metrics_nth(mcf, ngx_worker % mcf->nslots);
}


static ngx_http_mcp_metrics_slot_t *
ngx_http_mcp_metrics_nth(ngx_http_mcp_metrics_conf_t *mcf, ngx_uint_t n)
{
    u_char           *base;
    ngx_slab_pool_t  *shpool;

    shpool = (ngx_slab_pool_t *) mcf->zone->shm.addr;

    base = ngx_align_ptr((u_char *) shpool->data
                         + sizeof(ngx_http_mcp_metrics_sh_t), 128);

    return (ngx_http_mcp_metrics_slot_t *) (base + n * mcf->slot_size);
}


/* microseconds on a monotonic clock, never 0 */

static uint64_t
ngx_http_mcp_metrics_now(void)
{
    struct timespec  ts;

    (void) clock_gettime(CLOCK_MONOTONIC, &ts);

    return (uint64_t) ts.tv_sec * 1000000 + ts.tv_nsec / 1000 + 1;
}


uint64_t
ngx_http_mcp_metrics_start(ngx_http_mcp_loc_conf_t *mlcf)
{
    ngx_http_mcp_main_conf_t  *mmcf;

    if (!mlcf->counting) {
        return 0;
    }

    mmcf = ngx_http_cycle_get_module_main_conf(ngx_cycle,
                                               ngx_http_mcp_module);

    if (mmcf == NULL || mmcf->metrics == NULL) {
        return 0;
    }

    return ngx_http_mcp_metrics_now();
}


static ngx_uint_t
ngx_http_mcp_metrics_method(ngx_str_t *method)
{
    ngx_uint_t  i;

    for (i = 0; i < NGX_HTTP_MCP_M_METHODS - 1; i++) {
        if (method->len == ngx_http_mcp_metrics_methods[i].len
            && ngx_strncmp(method->data, ngx_http_mcp_metrics_methods[i].data,
                           method->len)
               == 0)
        {
            return i;
        }
    }

    return NGX_HTTP_MCP_M_METHODS - 1;
}


static void
ngx_http_mcp_metrics_observe(ngx_http_mcp_histogram_t *h, uint64_t us)
{
    ngx_uint_t  i;

    for (i = 0; i < NGX_HTTP_MCP_METRICS_BUCKETS; i++) {
        if (us <= ngx_http_mcp_metrics_bounds[i]) {
            break;
        }
    }

    (void) ngx_atomic_fetch_add(&h->le[i], 1);
    (void) ngx_atomic_fetch_add(&h->sum, us);
}


/* a call ended with reply (NULL: no response went out) */

void
ngx_http_mcp_metrics_call(ngx_http_mcp_call_t *call, uint64_t start,
    cJSON *reply)
{
    cJSON                        *error, *result, *is_error;
    uintptr_t                     tool;
    uint64_t                      us;
    ngx_uint_t                    m, outcome;
    ngx_http_mcp_metrics_conf_t  *mcf;
    ngx_http_mcp_metrics_slot_t  *slot;

    if (start == 0) {
        return;
    }

    slot = ngx_http_mcp_metrics_slot(&mcf);
    if (slot == NULL) {
        return;
    }

    us = ngx_http_mcp_metrics_now() - start;
    m = ngx_http_mcp_metrics_method(&call->method);

    error = ngx_http_mcp_json_get(reply, "error");

    (void) ngx_atomic_fetch_add(&slot->requests[m][(reply == NULL
                                                   || error != NULL)
                                                  ? NGX_HTTP_MCP_M_ERROR
                                                  : NGX_HTTP_MCP_M_OK],
                                1);

    ngx_http_mcp_metrics_observe(&slot->duration[m], us);

    if (m != NGX_HTTP_MCP_M_TOOLS_CALL) {
        return;
    }

    tool = 0;

    if (call->entry != NULL) {
        tool = (uintptr_t) ngx_hash_find(&mcf->tools,
                                         ngx_hash_key(call->entry->name.data,
                                                      call->entry->name.len),
                                         call->entry->name.data,
                                         call->entry->name.len);
    }

    if (reply == NULL || error != NULL) {
        outcome = NGX_HTTP_MCP_M_TOOL_ERROR;

    } else {
        result = ngx_http_mcp_json_get(reply, "result");
        is_error = ngx_http_mcp_json_get(result, "isError");
        outcome = cJSON_IsTrue(is_error) ? NGX_HTTP_MCP_M_TOOL_IS_ERROR
                                         : NGX_HTTP_MCP_M_TOOL_OK;
    }

    /* index 0 is "other": names the sets do not have */
    (void) ngx_atomic_fetch_add(&slot->tools[tool * NGX_HTTP_MCP_M_OUTCOMES
                                             + outcome], 1);
}


/* every JSON-RPC error the module answers with, by code */

void
ngx_http_mcp_metrics_error(ngx_int_t code)
{
    ngx_uint_t                    i;
    ngx_http_mcp_metrics_slot_t  *slot;

    slot = ngx_http_mcp_metrics_slot(NULL);
    if (slot == NULL) {
        return;
    }

    for (i = 0; i < NGX_HTTP_MCP_M_CODES - 1; i++) {
        if (ngx_http_mcp_metrics_codes[i] == code) {
            break;
        }
    }

    (void) ngx_atomic_fetch_add(&slot->errors[i], 1);
}


/* an authorization decision: its $mcp_auth_result */

void
ngx_http_mcp_metrics_auth(ngx_http_request_t *r, ngx_str_t *result)
{
    ngx_uint_t                    i;
    ngx_http_mcp_loc_conf_t      *mlcf;
    ngx_http_mcp_metrics_slot_t  *slot;

    mlcf = ngx_http_get_module_loc_conf(r, ngx_http_mcp_module);

    if (!mlcf->counting) {
        return;
    }

    slot = ngx_http_mcp_metrics_slot(NULL);
    if (slot == NULL) {
        return;
    }

    for (i = 0; i < NGX_HTTP_MCP_M_AUTH - 1; i++) {
        if (result->len == ngx_http_mcp_metrics_auth_results[i].len
            && ngx_strncmp(result->data,
                           ngx_http_mcp_metrics_auth_results[i].data,
                           result->len)
               == 0)
        {
            break;
        }
    }

    (void) ngx_atomic_fetch_add(&slot->auth[i], 1);
}


/* a request to the client (sampling, elicitation) got no answer in time */

void
ngx_http_mcp_metrics_server_timeout(void)
{
    ngx_http_mcp_metrics_slot_t  *slot;

    slot = ngx_http_mcp_metrics_slot(NULL);

    if (slot != NULL) {
        (void) ngx_atomic_fetch_add(&slot->timeouts, 1);
    }
}


/* mcp_pass_pin: a tool not as pinned, told (see proxy_pin.c) */

void
ngx_http_mcp_metrics_pin_change(void)
{
    ngx_http_mcp_metrics_slot_t  *slot;

    slot = ngx_http_mcp_metrics_slot(NULL);

    if (slot != NULL) {
        (void) ngx_atomic_fetch_add(&slot->pin_changes, 1);
    }
}


/*
 * mcp_guardrail_set: a set's row in the counters, 1 to
 * NGX_HTTP_MCP_METRICS_GUARDS in the order of definition, 0 ("other")
 * past them, or NGX_ERROR
 */

ngx_int_t
ngx_http_mcp_metrics_guard_set(ngx_conf_t *cf, ngx_str_t *name)
{
    ngx_str_t                 *s;
    ngx_http_mcp_main_conf_t  *mmcf;

    mmcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_mcp_module);

    if (mmcf->guard_sets == NULL) {
        mmcf->guard_sets = ngx_array_create(cf->pool, 4, sizeof(ngx_str_t));
        if (mmcf->guard_sets == NULL) {
            return NGX_ERROR;
        }
    }

    if (mmcf->guard_sets->nelts == NGX_HTTP_MCP_METRICS_GUARDS) {
        return 0;
    }

    s = ngx_array_push(mmcf->guard_sets);
    if (s == NULL) {
        return NGX_ERROR;
    }

    *s = *name;

    return mmcf->guard_sets->nelts;
}


/* mcp_guardrail: a set matched (see guard.c) */

void
ngx_http_mcp_metrics_guardrail(ngx_uint_t set, ngx_uint_t action)
{
    ngx_http_mcp_metrics_slot_t  *slot;

    slot = ngx_http_mcp_metrics_slot(NULL);

    if (slot != NULL && set <= NGX_HTTP_MCP_METRICS_GUARDS && action < 3) {
        (void) ngx_atomic_fetch_add(&slot->guardrails[set][action], 1);
    }
}


/* mcp_backend: a backend failed a request (see aggregate_leg.c) */

void
ngx_http_mcp_metrics_backend_failure(void)
{
    ngx_http_mcp_metrics_slot_t  *slot;

    slot = ngx_http_mcp_metrics_slot(NULL);

    if (slot != NULL) {
        (void) ngx_atomic_fetch_add(&slot->backend_failures, 1);
    }
}


/* mcp_pass: the upstream's reply header came, start ago */

void
ngx_http_mcp_metrics_upstream_header(uint64_t start)
{
    ngx_http_mcp_metrics_slot_t  *slot;

    if (start == 0) {
        return;
    }

    slot = ngx_http_mcp_metrics_slot(NULL);

    if (slot != NULL) {
        ngx_http_mcp_metrics_observe(&slot->upstream,
                                     ngx_http_mcp_metrics_now() - start);
    }
}


/*
 * mcp_pass: a relayed POST, r with its messages msgs, ended with rc (nginx's, as the upstream
 * finalizes it); sent tells whether the request reached the upstream (or
 * a stdio server's child, when it ends: rc NGX_OK).
 * Each JSON-RPC request of the POST counts; the result is the upstream's
 * HTTP answer, as the gateway does not read the replies it relays.
 */

void
ngx_http_mcp_metrics_gateway(ngx_http_request_t *r, ngx_array_t *msgs,
    uint64_t start, ngx_int_t rc, ngx_uint_t sent)
{
    uint64_t                      us;
    ngx_uint_t                    i, m, result, status;
    ngx_http_mcp_msg_t           *msg;
    ngx_http_upstream_t          *u;
    ngx_http_mcp_metrics_slot_t  *slot;

    if (start == 0) {
        return;
    }

    slot = ngx_http_mcp_metrics_slot(NULL);
    if (slot == NULL) {
        return;
    }

    us = ngx_http_mcp_metrics_now() - start;

    if (rc == NGX_HTTP_BAD_GATEWAY) {
        (void) ngx_atomic_fetch_add(
                   &slot->upstream_errors[sent ? NGX_HTTP_MCP_M_BAD_REPLY
                                               : NGX_HTTP_MCP_M_UNREACHABLE],
                   1);

    } else if (rc == NGX_HTTP_GATEWAY_TIME_OUT) {
        (void) ngx_atomic_fetch_add(
                   &slot->upstream_errors[NGX_HTTP_MCP_M_TIMEOUT], 1);
    }

    /* a server that is not an upstream (mcp_stdio): what the client got */
    u = r->upstream;
    status = (u != NULL) ? u->headers_in.status_n : r->headers_out.status;

    result = ((rc >= NGX_HTTP_SPECIAL_RESPONSE
               && rc != NGX_HTTP_CLIENT_CLOSED_REQUEST)
              || status == 0 || status >= NGX_HTTP_BAD_REQUEST)
             ? NGX_HTTP_MCP_M_ERROR : NGX_HTTP_MCP_M_OK;

    msg = msgs->elts;

    for (i = 0; i < msgs->nelts; i++) {
        if (msg[i].type != NGX_HTTP_MCP_MSG_REQUEST) {
            continue;
        }

        m = ngx_http_mcp_metrics_method(&msg[i].method);

        (void) ngx_atomic_fetch_add(&slot->requests[m][result], 1);
        ngx_http_mcp_metrics_observe(&slot->duration[m], us);
    }
}


/* ---- the endpoint ---- */

static ngx_int_t
ngx_http_mcp_metrics_handler(ngx_http_request_t *r)
{
    size_t                        size;
    u_char                       *p;
    ngx_int_t                     rc;
    ngx_buf_t                    *b;
    ngx_str_t                    *gs;
    ngx_uint_t                    i, nzones;
    ngx_chain_t                   out;
    ngx_shm_zone_t              **zp;
    ngx_http_mcp_main_conf_t     *mmcf;
    ngx_http_mcp_metrics_conf_t  *mcf;

    if (!(r->method & (NGX_HTTP_GET|NGX_HTTP_HEAD))) {
        return NGX_HTTP_NOT_ALLOWED;
    }

    rc = ngx_http_discard_request_body(r);
    if (rc != NGX_OK) {
        return rc;
    }

    mmcf = ngx_http_get_module_main_conf(r, ngx_http_mcp_module);

    if (ngx_http_mcp_metrics_slot(&mcf) == NULL) {
        return NGX_HTTP_SERVICE_UNAVAILABLE;
    }

    /* a bound of what is printed: label values are escaped, at most 2x */
    size = 16384
           + NGX_HTTP_MCP_M_METHODS
             * (NGX_HTTP_MCP_M_RESULTS + NGX_HTTP_MCP_METRICS_BUCKETS + 4)
             * (NGX_HTTP_MCP_METRICS_LINE + 64);

    for (i = 0; i < mcf->ntools; i++) {
        size += NGX_HTTP_MCP_M_OUTCOMES
                * (NGX_HTTP_MCP_METRICS_LINE + 2 * mcf->tool_names[i].len);
    }

    size += 3 * (NGX_HTTP_MCP_METRICS_GUARDS + 1)
            * (NGX_HTTP_MCP_METRICS_LINE + 64);
    gs = (mmcf->guard_sets != NULL) ? mmcf->guard_sets->elts : NULL;

    for (i = 0; gs != NULL && i < mmcf->guard_sets->nelts; i++) {
        size += 3 * 2 * gs[i].len;
    }

    nzones = mmcf->store.zones.nelts + (mmcf->store.default_zone != NULL);
    zp = mmcf->store.zones.elts;

    for (i = 0; i < mmcf->store.zones.nelts; i++) {
        size += 9 * (NGX_HTTP_MCP_METRICS_LINE + 2 * zp[i]->shm.name.len);
    }

    size += nzones * 9 * (NGX_HTTP_MCP_METRICS_LINE + 64);

    b = ngx_create_temp_buf(r->pool, size);
    if (b == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    p = ngx_http_mcp_metrics_counters(b->last, mcf);
    p = ngx_http_mcp_metrics_zones(p, mmcf);
    b->last = p;

    b->last_buf = (r == r->main) ? 1 : 0;
    b->last_in_chain = 1;

    r->headers_out.status = NGX_HTTP_OK;
    r->headers_out.content_length_n = b->last - b->pos;
    ngx_str_set(&r->headers_out.content_type, "text/plain; version=0.0.4");
    r->headers_out.content_type_len = r->headers_out.content_type.len;
    r->headers_out.content_type_lowcase = NULL;

    rc = ngx_http_send_header(r);

    if (rc == NGX_ERROR || rc > NGX_OK || r->header_only) {
        return rc;
    }

    out.buf = b;
    out.next = NULL;

    return ngx_http_output_filter(r, &out);
}


/* the sum over the slots of the counter at offset bytes into a slot */

static uint64_t
ngx_http_mcp_metrics_sum(ngx_http_mcp_metrics_conf_t *mcf, ngx_uint_t offset)
{
    uint64_t     n;
    ngx_uint_t   i;

    n = 0;

    for (i = 0; i < mcf->nslots; i++) {
        n += *(ngx_atomic_t *) ((u_char *) ngx_http_mcp_metrics_nth(mcf, i)
                                + offset);
    }

    return n;
}


#define ngx_http_mcp_metrics_at(field)                                        \
    offsetof(ngx_http_mcp_metrics_slot_t, field)


static u_char *
ngx_http_mcp_metrics_counters(u_char *p, ngx_http_mcp_metrics_conf_t *mcf)
{
    ngx_str_t   other = ngx_string("other");
    ngx_uint_t  i, j, off;

    p = ngx_sprintf(p,
            "# HELP mcp_requests_total JSON-RPC requests answered, "
            "by method and result.\n"
            "# TYPE mcp_requests_total counter\n");

    for (i = 0; i < NGX_HTTP_MCP_M_METHODS; i++) {
        for (j = 0; j < NGX_HTTP_MCP_M_RESULTS; j++) {
            p = ngx_sprintf(p,
                    "mcp_requests_total{method=\"%V\",result=\"%s\"} %uL\n",
                    &ngx_http_mcp_metrics_methods[i], j ? "error" : "ok",
                    ngx_http_mcp_metrics_sum(mcf,
                        ngx_http_mcp_metrics_at(requests)
                        + (i * NGX_HTTP_MCP_M_RESULTS + j)
                          * sizeof(ngx_atomic_t)));
        }
    }

    p = ngx_sprintf(p,
            "# HELP mcp_request_duration_seconds Time from a request to "
            "its response, by method.\n"
            "# TYPE mcp_request_duration_seconds histogram\n");

    for (i = 0; i < NGX_HTTP_MCP_M_METHODS; i++) {
        off = ngx_http_mcp_metrics_at(duration)
              + i * sizeof(ngx_http_mcp_histogram_t);

        p = ngx_http_mcp_metrics_histogram(p, "mcp_request_duration_seconds",
                                           mcf, off, "method",
                                           &ngx_http_mcp_metrics_methods[i]);
    }

    p = ngx_sprintf(p,
            "# HELP mcp_jsonrpc_errors_total JSON-RPC errors answered, "
            "by code.\n"
            "# TYPE mcp_jsonrpc_errors_total counter\n");

    for (i = 0; i < NGX_HTTP_MCP_M_CODES; i++) {
        off = ngx_http_mcp_metrics_at(errors) + i * sizeof(ngx_atomic_t);

        if (i < NGX_HTTP_MCP_M_CODES - 1) {
            p = ngx_sprintf(p, "mcp_jsonrpc_errors_total{code=\"%i\"} %uL\n",
                            ngx_http_mcp_metrics_codes[i],
                            ngx_http_mcp_metrics_sum(mcf, off));

        } else {
            p = ngx_sprintf(p,
                            "mcp_jsonrpc_errors_total{code=\"other\"} %uL\n",
                            ngx_http_mcp_metrics_sum(mcf, off));
        }
    }

    p = ngx_sprintf(p,
            "# HELP mcp_tool_calls_total tools/call requests, by tool and "
            "outcome (tool_error: a result with isError).\n"
            "# TYPE mcp_tool_calls_total counter\n");

    for (i = 0; i <= mcf->ntools; i++) {
        for (j = 0; j < NGX_HTTP_MCP_M_OUTCOMES; j++) {
            off = ngx_http_mcp_metrics_at(tools)
                  + (i * NGX_HTTP_MCP_M_OUTCOMES + j) * sizeof(ngx_atomic_t);

            p = ngx_cpymem(p, "mcp_tool_calls_total{tool=\"",
                           sizeof("mcp_tool_calls_total{tool=\"") - 1);
            p = ngx_http_mcp_metrics_label(p, i ? &mcf->tool_names[i - 1]
                                                : &other);
            p = ngx_sprintf(p, "\",outcome=\"%V\"} %uL\n",
                            &ngx_http_mcp_metrics_outcomes[j],
                            ngx_http_mcp_metrics_sum(mcf, off));
        }
    }

    p = ngx_sprintf(p,
            "# HELP mcp_auth_results_total Authorization decisions, by "
            "result ($mcp_auth_result).\n"
            "# TYPE mcp_auth_results_total counter\n");

    p = ngx_http_mcp_metrics_labeled(p, mcf, "mcp_auth_results_total",
                                     "result",
                                     ngx_http_mcp_metrics_auth_results,
                                     NGX_HTTP_MCP_M_AUTH,
                                     ngx_http_mcp_metrics_at(auth));

    p = ngx_sprintf(p,
            "# HELP mcp_server_requests_timed_out_total Requests to "
            "clients (sampling, elicitation) not answered in time.\n"
            "# TYPE mcp_server_requests_timed_out_total counter\n"
            "mcp_server_requests_timed_out_total %uL\n",
            ngx_http_mcp_metrics_sum(mcf, ngx_http_mcp_metrics_at(timeouts)));

    p = ngx_sprintf(p,
            "# HELP mcp_backend_failures_total Requests to an mcp_backend "
            "that failed (no answer, an HTTP error, a bad or oversize "
            "reply).\n"
            "# TYPE mcp_backend_failures_total counter\n"
            "mcp_backend_failures_total %uL\n",
            ngx_http_mcp_metrics_sum(mcf,
                ngx_http_mcp_metrics_at(backend_failures)));

    p = ngx_sprintf(p,
            "# HELP mcp_tool_pin_changes_total Tools an mcp_pass upstream "
            "listed not as pinned (mcp_pass_pin), each digest once.\n"
            "# TYPE mcp_tool_pin_changes_total counter\n"
            "mcp_tool_pin_changes_total %uL\n",
            ngx_http_mcp_metrics_sum(mcf,
                ngx_http_mcp_metrics_at(pin_changes)));

    p = ngx_http_mcp_metrics_guards(p, mcf);

    p = ngx_sprintf(p,
            "# HELP mcp_upstream_errors_total mcp_pass requests that failed "
            "at the upstream, by kind.\n"
            "# TYPE mcp_upstream_errors_total counter\n");

    p = ngx_http_mcp_metrics_labeled(p, mcf, "mcp_upstream_errors_total",
                                     "kind",
                                     ngx_http_mcp_metrics_upstream_kinds,
                                     NGX_HTTP_MCP_M_UPSTREAM_ERRORS,
                                     ngx_http_mcp_metrics_at(upstream_errors));

    p = ngx_sprintf(p,
            "# HELP mcp_upstream_header_duration_seconds mcp_pass: time "
            "from a request to the upstream's reply header.\n"
            "# TYPE mcp_upstream_header_duration_seconds histogram\n");

    return ngx_http_mcp_metrics_histogram(p,
               "mcp_upstream_header_duration_seconds", mcf,
               ngx_http_mcp_metrics_at(upstream), NULL, NULL);
}


/* a counter of n series by one label: values[i] is at offset + i atomics */

static u_char *
ngx_http_mcp_metrics_labeled(u_char *p, ngx_http_mcp_metrics_conf_t *mcf,
    const char *name, const char *label, ngx_str_t *values, ngx_uint_t n,
    ngx_uint_t offset)
{
    ngx_uint_t  i;

    for (i = 0; i < n; i++) {
        p = ngx_sprintf(p, "%s{%s=\"%V\"} %uL\n", name, label, &values[i],
                        ngx_http_mcp_metrics_sum(mcf,
                            offset + i * sizeof(ngx_atomic_t)));
    }

    return p;
}


/* mcp_guardrail_matches_total, by set and action */

static u_char *
ngx_http_mcp_metrics_guards(u_char *p, ngx_http_mcp_metrics_conf_t *mcf)
{
    ngx_str_t                  other = ngx_string("other"), *names, *set;
    ngx_uint_t                 i, j, n;
    ngx_http_mcp_main_conf_t  *mmcf;

    static ngx_str_t  actions[] = {
        ngx_string("block"), ngx_string("redact"), ngx_string("log")
    };

    mmcf = ngx_http_cycle_get_module_main_conf(ngx_cycle,
                                               ngx_http_mcp_module);

    p = ngx_sprintf(p,
            "# HELP mcp_guardrail_matches_total Guardrail sets that matched "
            "(mcp_guardrail), by set and action.\n"
            "# TYPE mcp_guardrail_matches_total counter\n");

    if (mmcf == NULL || mmcf->guard_sets == NULL) {
        return p;
    }

    names = mmcf->guard_sets->elts;
    n = mmcf->guard_sets->nelts;

    /* "other" only when there are more sets than rows */
    for (i = (n == NGX_HTTP_MCP_METRICS_GUARDS) ? 0 : 1; i <= n; i++) {

        set = i ? &names[i - 1] : &other;

        for (j = 0; j < 3; j++) {
            p = ngx_cpymem(p, "mcp_guardrail_matches_total{set=\"",
                           sizeof("mcp_guardrail_matches_total{set=\"")
                           - 1);
            p = ngx_http_mcp_metrics_label(p, set);
            p = ngx_sprintf(p, "\",action=\"%V\"} %uL\n", &actions[j],
                            ngx_http_mcp_metrics_sum(mcf,
                                ngx_http_mcp_metrics_at(guardrails[i][j])));
        }
    }

    return p;
}


/*
 * One histogram's series (none while it is empty): cumulative buckets,
 * and a _count that is the +Inf bucket, from the same reads.
 */

static u_char *
ngx_http_mcp_metrics_histogram(u_char *p, const char *name,
    ngx_http_mcp_metrics_conf_t *mcf, ngx_uint_t offset, const char *label,
    ngx_str_t *value)
{
    uint64_t    n[NGX_HTTP_MCP_METRICS_BUCKETS + 1], total, sum;
    ngx_uint_t  i;
    u_char      labels[128], *l;

    total = 0;

    for (i = 0; i <= NGX_HTTP_MCP_METRICS_BUCKETS; i++) {
        n[i] = ngx_http_mcp_metrics_sum(mcf, offset
                   + offsetof(ngx_http_mcp_histogram_t, le)
                   + i * sizeof(ngx_atomic_t));
        total += n[i];
    }

    if (total == 0) {
        return p;
    }

    sum = ngx_http_mcp_metrics_sum(mcf, offset
                                   + offsetof(ngx_http_mcp_histogram_t, sum));

    l = labels;

    if (label != NULL) {
        l = ngx_snprintf(labels, sizeof(labels) - 1, "%s=\"%V\",",
                         label, value);
    }

    *l = '\0';

    total = 0;

    for (i = 0; i < NGX_HTTP_MCP_METRICS_BUCKETS; i++) {
        total += n[i];
        p = ngx_sprintf(p, "%s_bucket{%sle=\"%s\"} %uL\n", name, labels,
                        ngx_http_mcp_metrics_le[i], total);
    }

    total += n[NGX_HTTP_MCP_METRICS_BUCKETS];

    p = ngx_sprintf(p, "%s_bucket{%sle=\"+Inf\"} %uL\n", name, labels, total);

    if (label != NULL) {
        l[-1] = '\0';        /* no trailing comma */
        p = ngx_sprintf(p, "%s_sum{%s} %uL.%06uL\n%s_count{%s} %uL\n",
                        name, labels, sum / 1000000, sum % 1000000,
                        name, labels, total);

    } else {
        p = ngx_sprintf(p, "%s_sum %uL.%06uL\n%s_count %uL\n",
                        name, sum / 1000000, sum % 1000000, name, total);
    }

    return p;
}


/* what the store tells of each session zone */

static u_char *
ngx_http_mcp_metrics_zones(u_char *p, ngx_http_mcp_main_conf_t *mmcf)
{
    ngx_uint_t        i;
    ngx_shm_zone_t  **zp;

    p = ngx_sprintf(p,
            "# HELP mcp_sessions Live sessions in a session zone.\n"
            "# TYPE mcp_sessions gauge\n"
            "# HELP mcp_streams_open SSE streams a worker is writing.\n"
            "# TYPE mcp_streams_open gauge\n"
            "# HELP mcp_server_requests_pending Requests to clients "
            "waiting for their answer.\n"
            "# TYPE mcp_server_requests_pending gauge\n"
            "# HELP mcp_tasks Tasks in a session zone.\n"
            "# TYPE mcp_tasks gauge\n"
            "# HELP mcp_events_dropped_total Events dropped from full "
            "session event logs.\n"
            "# TYPE mcp_events_dropped_total counter\n"
            "# HELP mcp_session_events_bytes Bytes of messages in the "
            "session event logs of a zone.\n"
            "# TYPE mcp_session_events_bytes gauge\n"
            "# HELP mcp_zone_size_bytes A session zone's slab pages.\n"
            "# TYPE mcp_zone_size_bytes gauge\n"
            "# HELP mcp_zone_used_bytes Bytes of a session zone's pages "
            "in use.\n"
            "# TYPE mcp_zone_used_bytes gauge\n"
            "# HELP mcp_zone_free_bytes Bytes of a session zone's free "
            "pages.\n"
            "# TYPE mcp_zone_free_bytes gauge\n");

    zp = mmcf->store.zones.elts;

    for (i = 0; i < mmcf->store.zones.nelts; i++) {
        p = ngx_http_mcp_metrics_zone(p, zp[i]);
    }

    if (mmcf->store.default_zone != NULL) {
        p = ngx_http_mcp_metrics_zone(p, mmcf->store.default_zone);
    }

    return p;
}


static u_char *
ngx_http_mcp_metrics_zone(u_char *p, ngx_shm_zone_t *zone)
{
    u_char                     name[256], *last;
    ngx_http_mcp_zone_stats_t  st;

    if (ngx_http_mcp_session_zone_stats(zone, &st) != NGX_OK
        || st.name.len > 100)
    {
        return p;
    }

    last = ngx_http_mcp_metrics_label(name, &st.name);
    *last = '\0';

    return ngx_sprintf(p,
                       "mcp_sessions{zone=\"%s\"} %ui\n"
                       "mcp_streams_open{zone=\"%s\"} %ui\n"
                       "mcp_server_requests_pending{zone=\"%s\"} %ui\n"
                       "mcp_tasks{zone=\"%s\"} %ui\n"
                       "mcp_events_dropped_total{zone=\"%s\"} %ui\n"
                       "mcp_session_events_bytes{zone=\"%s\"} %uz\n"
                       "mcp_zone_size_bytes{zone=\"%s\"} %uz\n"
                       "mcp_zone_used_bytes{zone=\"%s\"} %uz\n"
                       "mcp_zone_free_bytes{zone=\"%s\"} %uz\n",
                       name, st.sessions, name, st.streams, name, st.waiting,
                       name, st.tasks, name, st.dropped, name, st.events,
                       name, st.size,
                       name, st.used, name, st.free);
}


/* a label value: backslash, double quote and newline escaped */

static u_char *
ngx_http_mcp_metrics_label(u_char *p, ngx_str_t *value)
{
    u_char  *s, *end;

    end = value->data + value->len;

    for (s = value->data; s < end; s++) {
        if (*s == '\\' || *s == '"') {
            *p++ = '\\';
            *p++ = *s;

        } else if (*s == '\n') {
            *p++ = '\\';
            *p++ = 'n';

        } else {
            *p++ = *s;
        }
    }

    return p;
}
