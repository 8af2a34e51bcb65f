
/*
 * The session store's configuration: the mcp_session_zone directive, the
 * zone that locations without one share, and the per_client key.  The
 * zone's contents are the business of ngx_http_mcp_session.c.
 */


#include "ngx_http_mcp_store.h"
#include "ngx_http_mcp_session_zone.h"


#define NGX_HTTP_MCP_DEFAULT_ZONE       "mcp_sessions"
#define NGX_HTTP_MCP_DEFAULT_ZONE_SIZE  (10 * 1024 * 1024)
#define NGX_HTTP_MCP_DEFAULT_TIMEOUT    (60 * 60 * 1000)
#define NGX_HTTP_MCP_DEFAULT_LOG_SIZE   (256 * 1024)
#define NGX_HTTP_MCP_DEFAULT_SUBS       64
#define NGX_HTTP_MCP_DEFAULT_URI        NGX_HTTP_MCP_SUBSCRIPTION_URI_LEN
#define NGX_HTTP_MCP_DEFAULT_TASKS      1024
#define NGX_HTTP_MCP_DEFAULT_CLIENT_TASKS  256


/* how a numeric parameter reads: "1h", "256k", or a plain count */
#define NGX_HTTP_MCP_ZONE_MSEC    0
#define NGX_HTTP_MCP_ZONE_SIZE    1
#define NGX_HTTP_MCP_ZONE_COUNT   2


/* what the parameters of one mcp_session_zone make */
typedef struct {
    ngx_http_mcp_zone_t       *ctx;
    ssize_t                    size;        /* of zone=name:size */
} ngx_http_mcp_session_zone_args_t;


typedef struct ngx_http_mcp_session_zone_param_s
    ngx_http_mcp_session_zone_param_t;

typedef ngx_int_t (*ngx_http_mcp_session_zone_set_pt)(ngx_conf_t *cf,
    ngx_http_mcp_session_zone_param_t *param, ngx_str_t *value,
    ngx_str_t *arg, ngx_http_mcp_session_zone_args_t *args);

struct ngx_http_mcp_session_zone_param_s {
    ngx_str_t                          key;     /* "timeout=" */
    ngx_http_mcp_session_zone_set_pt   set;
    ngx_uint_t                         unit;    /* how a number reads */
    ngx_uint_t                         offset;  /* in ngx_http_mcp_zone_t */
    ngx_uint_t                         min;     /* the least taken */
    char                              *what;    /* "invalid <what> ..." */
};


static ngx_int_t ngx_http_mcp_session_zone_param(ngx_conf_t *cf,
    ngx_str_t *value, ngx_http_mcp_session_zone_args_t *args);
static ngx_int_t ngx_http_mcp_session_zone_name(ngx_conf_t *cf,
    ngx_http_mcp_session_zone_param_t *param, ngx_str_t *value,
    ngx_str_t *arg, ngx_http_mcp_session_zone_args_t *args);
static ngx_int_t ngx_http_mcp_session_zone_number(ngx_conf_t *cf,
    ngx_http_mcp_session_zone_param_t *param, ngx_str_t *value,
    ngx_str_t *arg, ngx_http_mcp_session_zone_args_t *args);
static ngx_int_t ngx_http_mcp_session_zone_per_client(ngx_conf_t *cf,
    ngx_http_mcp_session_zone_param_t *param, ngx_str_t *value,
    ngx_str_t *arg, ngx_http_mcp_session_zone_args_t *args);
static char *ngx_http_mcp_session_zone_add(ngx_conf_t *cf,
    ngx_http_mcp_store_conf_t *scf, ngx_http_mcp_session_zone_args_t *args);
static void ngx_http_mcp_session_zone_defaults(ngx_http_mcp_zone_t *ctx);


/*
 * The mcp_session_zone parameters, in the manner of ngx_command_t: each
 * names the step that reads its value into the zone being made, and
 * "what" completes the "invalid ..." message of a value it refuses.
 */

static ngx_http_mcp_session_zone_param_t  ngx_http_mcp_session_zone_params[] = {

    { ngx_string("zone="),
      ngx_http_mcp_session_zone_name, 0,
      0, 0,
      "zone size" },

    { ngx_string("timeout="),
      ngx_http_mcp_session_zone_number, NGX_HTTP_MCP_ZONE_MSEC,
      offsetof(ngx_http_mcp_zone_t, timeout), 1,
      "timeout" },

    { ngx_string("log="),
      ngx_http_mcp_session_zone_number, NGX_HTTP_MCP_ZONE_SIZE,
      offsetof(ngx_http_mcp_zone_t, log_size), 1024,
      "event log size" },

    { ngx_string("subscriptions="),
      ngx_http_mcp_session_zone_number, NGX_HTTP_MCP_ZONE_COUNT,
      offsetof(ngx_http_mcp_zone_t, max_subscriptions), 0,
      "number of subscriptions" },

    { ngx_string("subscription_uri="),
      ngx_http_mcp_session_zone_number, NGX_HTTP_MCP_ZONE_SIZE,
      offsetof(ngx_http_mcp_zone_t, max_uri), 1,
      "URI length" },

    { ngx_string("tasks="),
      ngx_http_mcp_session_zone_number, NGX_HTTP_MCP_ZONE_COUNT,
      offsetof(ngx_http_mcp_zone_t, max_tasks), 0,
      "number of tasks" },

    { ngx_string("tasks_per_client="),
      ngx_http_mcp_session_zone_number, NGX_HTTP_MCP_ZONE_COUNT,
      offsetof(ngx_http_mcp_zone_t, max_client_tasks), 0,
      "number of tasks" },

    { ngx_string("per_client="),
      ngx_http_mcp_session_zone_per_client, 0,
      0, 0,
      NULL },

    { ngx_null_string, NULL, 0, 0, 0, NULL }
};


char *
ngx_http_mcp_session_zone(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_mcp_store_conf_t *scf = (ngx_http_mcp_store_conf_t *)
                                         ((u_char *) conf + cmd->offset);

    ngx_str_t                         *value;
    ngx_uint_t                         i;
    ngx_http_mcp_zone_t               *ctx;
    ngx_http_mcp_session_zone_args_t   args;

    value = cf->args->elts;

    ctx = ngx_pcalloc(cf->pool, sizeof(ngx_http_mcp_zone_t));
    if (ctx == NULL) {
        return NGX_CONF_ERROR;
    }

    ngx_http_mcp_session_zone_defaults(ctx);

    args.ctx = ctx;
    args.size = 0;

    for (i = 1; i < cf->args->nelts; i++) {
        if (ngx_http_mcp_session_zone_param(cf, &value[i], &args) != NGX_OK) {
            return NGX_CONF_ERROR;
        }
    }

    if (ctx->name.len == 0) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"%V\" must have \"zone\" parameter",
                           &cmd->name);
        return NGX_CONF_ERROR;
    }

    return ngx_http_mcp_session_zone_add(cf, scf, &args);
}


/* one parameter: the step of the table's entry that names it */

static ngx_int_t
ngx_http_mcp_session_zone_param(ngx_conf_t *cf, ngx_str_t *value,
    ngx_http_mcp_session_zone_args_t *args)
{
    ngx_int_t                           rc;
    ngx_str_t                           arg;
    ngx_http_mcp_session_zone_param_t  *p;

    for (p = ngx_http_mcp_session_zone_params; p->key.len; p++) {
        if (ngx_strncmp(value->data, p->key.data, p->key.len) == 0) {
            break;
        }
    }

    if (p->key.len == 0) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "invalid parameter \"%V\"", value);
        return NGX_ERROR;
    }

    arg.data = value->data + p->key.len;
    arg.len = value->len - p->key.len;

    rc = p->set(cf, p, value, &arg, args);

    if (rc == NGX_DECLINED) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "invalid %s \"%V\"", p->what, value);
        return NGX_ERROR;
    }

    return rc;
}


/* zone=name:size, at least 8 pages as limit_req_zone asks */

static ngx_int_t
ngx_http_mcp_session_zone_name(ngx_conf_t *cf,
    ngx_http_mcp_session_zone_param_t *param, ngx_str_t *value,
    ngx_str_t *arg, ngx_http_mcp_session_zone_args_t *args)
{
    u_char     *p;
    ssize_t     size;
    ngx_str_t   s;

    p = (u_char *) ngx_strchr(arg->data, ':');

    if (p == NULL) {
        return NGX_DECLINED;
    }

    args->ctx->name.data = arg->data;
    args->ctx->name.len = p - arg->data;

    s.data = p + 1;
    s.len = arg->data + arg->len - s.data;

    size = ngx_parse_size(&s);

    if (size == NGX_ERROR) {
        return NGX_DECLINED;
    }

    if (size < (ssize_t) (8 * ngx_pagesize)) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "zone \"%V\" is too small", value);
        return NGX_ERROR;
    }

    args->size = size;

    return NGX_OK;
}


/*
 * A numeric parameter, read as its entry's unit says; the fields it sets
 * (ngx_msec_t, size_t, ngx_uint_t) all have the width of ngx_uint_t, as
 * nginx's own slot setters take for granted.
 */

static ngx_int_t
ngx_http_mcp_session_zone_number(ngx_conf_t *cf,
    ngx_http_mcp_session_zone_param_t *param, ngx_str_t *value,
    ngx_str_t *arg, ngx_http_mcp_session_zone_args_t *args)
{
    ngx_int_t  n;

    switch (param->unit) {

    case NGX_HTTP_MCP_ZONE_MSEC:
        n = ngx_parse_time(arg, 0);
        break;

    case NGX_HTTP_MCP_ZONE_SIZE:
        n = ngx_parse_size(arg);
        break;

    default: /* NGX_HTTP_MCP_ZONE_COUNT */
        n = ngx_atoi(arg->data, arg->len);
    }

    if (n == NGX_ERROR || n < (ngx_int_t) param->min) {
        return NGX_DECLINED;
    }

    *(ngx_uint_t *) ((char *) args->ctx + param->offset) = n;

    return NGX_OK;
}


/* per_client=$variable:N: at most N sessions for one value of it */

static ngx_int_t
ngx_http_mcp_session_zone_per_client(ngx_conf_t *cf,
    ngx_http_mcp_session_zone_param_t *param, ngx_str_t *value,
    ngx_str_t *arg, ngx_http_mcp_session_zone_args_t *args)
{
    u_char                            *colon;
    ngx_int_t                          n;
    ngx_str_t                          var;
    ngx_http_mcp_zone_t               *ctx;
    ngx_http_compile_complex_value_t   ccv;

    ctx = args->ctx;
    var = *arg;

    colon = NULL;

    for (n = var.len - 1; n >= 0; n--) {
        if (var.data[n] == ':') {
            colon = &var.data[n];
            break;
        }
    }

    if (colon == NULL || var.len == 0 || var.data[0] != '$') {
        goto invalid;
    }

    n = ngx_atoi(colon + 1, var.data + var.len - colon - 1);
    var.len = colon - var.data;

    if (n == NGX_ERROR || n == 0 || var.len < 2) {
        goto invalid;
    }

    ctx->per_client_max = n;

    ctx->per_client = ngx_palloc(cf->pool, sizeof(ngx_http_complex_value_t));
    if (ctx->per_client == NULL) {
        return NGX_ERROR;
    }

    ngx_memzero(&ccv, sizeof(ngx_http_compile_complex_value_t));

    ccv.cf = cf;
    ccv.value = &var;
    ccv.complex_value = ctx->per_client;

    if (ngx_http_compile_complex_value(&ccv) != NGX_OK) {
        return NGX_ERROR;
    }

    return NGX_OK;

invalid:

    ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                       "invalid \"per_client\" parameter \"%V\", "
                       "expected per_client=$variable:number", value);
    return NGX_ERROR;
}


/* after the parameters: the zone itself, under a name not yet taken */

static char *
ngx_http_mcp_session_zone_add(ngx_conf_t *cf, ngx_http_mcp_store_conf_t *scf,
    ngx_http_mcp_session_zone_args_t *args)
{
    ngx_shm_zone_t  *shm_zone, **zp;

    shm_zone = ngx_shared_memory_add(cf, &args->ctx->name, args->size,
                                     &ngx_http_mcp_module);
    if (shm_zone == NULL) {
        return NGX_CONF_ERROR;
    }

    if (shm_zone->data) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "duplicate zone \"%V\"", &args->ctx->name);
        return NGX_CONF_ERROR;
    }

    shm_zone->init = ngx_http_mcp_session_init_zone;
    shm_zone->data = args->ctx;

    zp = ngx_array_push(&scf->zones);
    if (zp == NULL) {
        return NGX_CONF_ERROR;
    }

    *zp = shm_zone;

    return NGX_CONF_OK;
}


/* what a zone holds for the parameters its directive leaves out */

static void
ngx_http_mcp_session_zone_defaults(ngx_http_mcp_zone_t *ctx)
{
    ctx->timeout = NGX_HTTP_MCP_DEFAULT_TIMEOUT;
    ctx->log_size = NGX_HTTP_MCP_DEFAULT_LOG_SIZE;
    ctx->max_subscriptions = NGX_HTTP_MCP_DEFAULT_SUBS;
    ctx->max_uri = NGX_HTTP_MCP_DEFAULT_URI;
    ctx->max_tasks = NGX_HTTP_MCP_DEFAULT_TASKS;
    ctx->max_client_tasks = NGX_HTTP_MCP_DEFAULT_CLIENT_TASKS;
}


/* the value that tells one client's sessions from another's, or empty */

ngx_int_t
ngx_http_mcp_session_client_key(ngx_shm_zone_t *zone, ngx_http_request_t *r,
    ngx_str_t *key)
{
    ngx_http_mcp_zone_t  *ctx;

    ctx = zone->data;

    ngx_str_null(key);

    if (ctx->per_client == NULL) {
        return NGX_OK;
    }

    return ngx_http_complex_value(r, ctx->per_client, key);
}


/* the zone that locations without "mcp_session" share */

ngx_shm_zone_t *
ngx_http_mcp_session_default_zone(ngx_conf_t *cf,
    ngx_http_mcp_store_conf_t *scf)
{
    ngx_str_t                  name = ngx_string(NGX_HTTP_MCP_DEFAULT_ZONE);
    ngx_shm_zone_t            *shm_zone;
    ngx_http_mcp_zone_t       *ctx;

    if (scf->default_zone) {
        return scf->default_zone;
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

        ngx_http_mcp_session_zone_defaults(ctx);
        ctx->name = name;

        shm_zone->init = ngx_http_mcp_session_init_zone;
        shm_zone->data = ctx;
    }

    scf->default_zone = shm_zone;

    return shm_zone;
}


/*
 * What health and metrics tell of a zone: its figures, read under the
 * lock in one go.  Bytes count whole slab pages: a page that holds one
 * small allocation is used.  NGX_DECLINED while the zone is not attached
 * (the cycle has not made it yet).
 */

ngx_int_t
ngx_http_mcp_session_zone_stats(ngx_shm_zone_t *zone,
    ngx_http_mcp_zone_stats_t *st)
{
    size_t                pages;
    ngx_http_mcp_zone_t  *ctx;

    ctx = zone->data;

    ngx_memzero(st, sizeof(ngx_http_mcp_zone_stats_t));
    st->name = zone->shm.name;

    if (ctx == NULL || ctx->sh == NULL || ctx->shpool == NULL) {
        return NGX_DECLINED;
    }

    pages = ctx->shpool->last - ctx->shpool->pages;

    ngx_shmtx_lock(&ctx->shpool->mutex);

    st->size = pages << ngx_pagesize_shift;
    st->free = ctx->shpool->pfree << ngx_pagesize_shift;
    st->sessions = ctx->sh->count;
    st->streams = ctx->sh->streams;
    st->waiting = ctx->sh->waiting;
    st->dropped = ctx->sh->dropped;
    st->tasks = ctx->sh->ntasks;
    st->events = ctx->sh->events_size;

    ngx_shmtx_unlock(&ctx->shpool->mutex);

    st->used = st->size - st->free;

    return NGX_OK;
}
