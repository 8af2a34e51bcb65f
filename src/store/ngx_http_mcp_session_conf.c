
/*
 * The session store's configuration: the mcp_session_zone directive, the
 * zone that locations without one share, and the per_client key.  The
 * zone's contents are the business of ngx_http_mcp_session.c.
 */


#include "ngx_http_mcp_store.h"
#include "ngx_http_mcp_session_zone.h"
#include "ngx_http_mcp_core.h"


#define NGX_HTTP_MCP_DEFAULT_ZONE       "mcp_sessions"
#define NGX_HTTP_MCP_DEFAULT_ZONE_SIZE  (10 * 1024 * 1024)
#define NGX_HTTP_MCP_DEFAULT_TIMEOUT    (60 * 60 * 1000)
#define NGX_HTTP_MCP_DEFAULT_LOG_SIZE   (256 * 1024)
#define NGX_HTTP_MCP_DEFAULT_SUBS       64
#define NGX_HTTP_MCP_DEFAULT_URI        NGX_HTTP_MCP_SUBSCRIPTION_URI_LEN
#define NGX_HTTP_MCP_DEFAULT_TASKS      1024
#define NGX_HTTP_MCP_DEFAULT_CLIENT_TASKS  256


static char *ngx_http_mcp_session_zone_per_client(ngx_conf_t *cf,
    ngx_http_mcp_zone_t *ctx, ngx_str_t *value);


char *
ngx_http_mcp_session_zone(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_mcp_main_conf_t *mmcf = conf;

    u_char               *p;
    ssize_t               size, log_size, n;
    ngx_str_t            *value, name, s;
    ngx_msec_t            timeout;
    ngx_uint_t            i;
    ngx_shm_zone_t       *shm_zone, **zp;
    ngx_http_mcp_zone_t  *ctx;

    value = cf->args->elts;

    size = 0;
    ngx_str_null(&name);
    timeout = NGX_HTTP_MCP_DEFAULT_TIMEOUT;
    log_size = NGX_HTTP_MCP_DEFAULT_LOG_SIZE;

    ctx = ngx_pcalloc(cf->pool, sizeof(ngx_http_mcp_zone_t));
    if (ctx == NULL) {
        return NGX_CONF_ERROR;
    }

    ctx->max_subscriptions = NGX_HTTP_MCP_DEFAULT_SUBS;
    ctx->max_uri = NGX_HTTP_MCP_DEFAULT_URI;
    ctx->max_tasks = NGX_HTTP_MCP_DEFAULT_TASKS;
    ctx->max_client_tasks = NGX_HTTP_MCP_DEFAULT_CLIENT_TASKS;

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

        if (ngx_strncmp(value[i].data, "log=", 4) == 0) {

            s.data = value[i].data + 4;
            s.len = value[i].len - 4;

            log_size = ngx_parse_size(&s);

            if (log_size == NGX_ERROR || log_size < 1024) {
                ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                                   "invalid event log size \"%V\"",
                                   &value[i]);
                return NGX_CONF_ERROR;
            }

            continue;
        }

        if (ngx_strncmp(value[i].data, "subscriptions=", 14) == 0) {

            n = ngx_atoi(value[i].data + 14, value[i].len - 14);

            if (n == NGX_ERROR) {
                ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                                   "invalid number of subscriptions \"%V\"",
                                   &value[i]);
                return NGX_CONF_ERROR;
            }

            ctx->max_subscriptions = n;
            continue;
        }

        if (ngx_strncmp(value[i].data, "subscription_uri=", 17) == 0) {

            s.data = value[i].data + 17;
            s.len = value[i].len - 17;

            n = ngx_parse_size(&s);

            if (n == NGX_ERROR || n == 0) {
                ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                                   "invalid URI length \"%V\"", &value[i]);
                return NGX_CONF_ERROR;
            }

            ctx->max_uri = n;
            continue;
        }

        if (ngx_strncmp(value[i].data, "tasks=", 6) == 0) {

            n = ngx_atoi(value[i].data + 6, value[i].len - 6);

            if (n == NGX_ERROR) {
                ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                                   "invalid number of tasks \"%V\"",
                                   &value[i]);
                return NGX_CONF_ERROR;
            }

            ctx->max_tasks = n;
            continue;
        }

        if (ngx_strncmp(value[i].data, "tasks_per_client=", 17) == 0) {

            n = ngx_atoi(value[i].data + 17, value[i].len - 17);

            if (n == NGX_ERROR) {
                ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                                   "invalid number of tasks \"%V\"",
                                   &value[i]);
                return NGX_CONF_ERROR;
            }

            ctx->max_client_tasks = n;
            continue;
        }

        if (ngx_strncmp(value[i].data, "per_client=", 11) == 0) {

            if (ngx_http_mcp_session_zone_per_client(cf, ctx, &value[i])
                != NGX_CONF_OK)
            {
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

    ctx->timeout = timeout;
    ctx->log_size = log_size;
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


/* per_client=$variable:N: at most N sessions for one value of it */

static char *
ngx_http_mcp_session_zone_per_client(ngx_conf_t *cf,
    ngx_http_mcp_zone_t *ctx, ngx_str_t *value)
{
    u_char                            *colon;
    ngx_int_t                          n;
    ngx_str_t                          var;
    ngx_http_compile_complex_value_t   ccv;

    var.data = value->data + 11;
    var.len = value->len - 11;

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
        return NGX_CONF_ERROR;
    }

    ngx_memzero(&ccv, sizeof(ngx_http_compile_complex_value_t));

    ccv.cf = cf;
    ccv.value = &var;
    ccv.complex_value = ctx->per_client;

    if (ngx_http_compile_complex_value(&ccv) != NGX_OK) {
        return NGX_CONF_ERROR;
    }

    return NGX_CONF_OK;

invalid:

    ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                       "invalid \"per_client\" parameter \"%V\", "
                       "expected per_client=$variable:number", value);
    return NGX_CONF_ERROR;
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
        ctx->log_size = NGX_HTTP_MCP_DEFAULT_LOG_SIZE;
        ctx->max_subscriptions = NGX_HTTP_MCP_DEFAULT_SUBS;
        ctx->max_uri = NGX_HTTP_MCP_DEFAULT_URI;
        ctx->max_tasks = NGX_HTTP_MCP_DEFAULT_TASKS;
        ctx->max_client_tasks = NGX_HTTP_MCP_DEFAULT_CLIENT_TASKS;
        ctx->name = name;

        shm_zone->init = ngx_http_mcp_session_init_zone;
        shm_zone->data = ctx;
    }

    mmcf->default_zone = shm_zone;

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

    ngx_shmtx_unlock(&ctx->shpool->mutex);

    st->used = st->size - st->free;

    return NGX_OK;
}
