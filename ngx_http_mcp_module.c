
/*
 * ngx_http_mcp_module: the Model Context Protocol (Streamable HTTP
 * transport) inside nginx.  This file holds the directives, the
 * configuration structures and their create/merge functions; the work is
 * done in src/.
 */


#include "ngx_http_mcp_alloc.h"
#include "ngx_http_mcp_sesskey.h"
#include "ngx_http_mcp_store.h"
#include "ngx_http_mcp_core.h"
#include "ngx_http_mcp_metrics.h"
#include "ngx_http_mcp_guard.h"
#include "ngx_http_mcp_task.h"
#include "ngx_http_mcp_http.h"
#include "ngx_http_mcp_subrequest.h"
#include "ngx_http_mcp_edge.h"
#include "ngx_http_mcp_proxy.h"
#include "ngx_http_mcp_stdio.h"

#include <openssl/evp.h>
#include <openssl/sha.h>


static ngx_int_t ngx_http_mcp_preconfiguration(ngx_conf_t *cf);
static ngx_int_t ngx_http_mcp_postconfiguration(ngx_conf_t *cf);
static ngx_int_t ngx_http_mcp_ipc_path(ngx_conf_t *cf,
    ngx_http_mcp_main_conf_t *mmcf);
static ngx_int_t ngx_http_mcp_init_module(ngx_cycle_t *cycle);
static ngx_int_t ngx_http_mcp_init_process(ngx_cycle_t *cycle);
static void ngx_http_mcp_exit_process(ngx_cycle_t *cycle);
static void *ngx_http_mcp_create_main_conf(ngx_conf_t *cf);
static void *ngx_http_mcp_create_loc_conf(ngx_conf_t *cf);
static ngx_int_t ngx_http_mcp_scope(ngx_conf_t *cf, ngx_str_t *scope);
static char *ngx_http_mcp_merge_loc_conf(ngx_conf_t *cf, void *parent,
    void *child);
static char *ngx_http_mcp(ngx_conf_t *cf, ngx_command_t *cmd, void *conf);
static char *ngx_http_mcp_builtin(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
static ngx_int_t ngx_http_mcp_builtin_fixtures(ngx_conf_t *cf,
    ngx_str_t *name);
static char *ngx_http_mcp_session(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
static char *ngx_http_mcp_allowed_origins(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
static char *ngx_http_mcp_state_key(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
static char *ngx_http_mcp_session_key(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
static char *ngx_http_mcp_key_file(ngx_conf_t *cf, ngx_str_t *file,
    u_char *key);


static char *ngx_http_mcp_check_page_size(ngx_conf_t *cf, void *post,
    void *data);
static ngx_int_t ngx_http_mcp_parse_origin(ngx_str_t *origin);


static ngx_conf_post_handler_pt  ngx_http_mcp_page_size_post =
    ngx_http_mcp_check_page_size;


static ngx_command_t  ngx_http_mcp_commands[] = {

    { ngx_string("mcp"),
      NGX_HTTP_LOC_CONF|NGX_CONF_FLAG,
      ngx_http_mcp,
      NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(ngx_http_mcp_loc_conf_t, enable),
      NULL },

    { ngx_string("mcp_builtin"),
      NGX_HTTP_LOC_CONF|NGX_CONF_TAKE1,
      ngx_http_mcp_builtin,
      NGX_HTTP_LOC_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("mcp_session_zone"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_1MORE,
      ngx_http_mcp_session_zone,
      NGX_HTTP_MAIN_CONF_OFFSET,
      offsetof(ngx_http_mcp_main_conf_t, store),
      NULL },

    { ngx_string("mcp_session"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_TAKE1,
      ngx_http_mcp_session,
      NGX_HTTP_LOC_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("mcp_allowed_origins"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_1MORE,
      ngx_http_mcp_allowed_origins,
      NGX_HTTP_LOC_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("mcp_max_request_size"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_size_slot,
      NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(ngx_http_mcp_loc_conf_t, max_body),
      NULL },

    { ngx_string("mcp_stream_keepalive"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_msec_slot,
      NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(ngx_http_mcp_loc_conf_t, keepalive),
      NULL },

    { ngx_string("mcp_stream_retry"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_msec_slot,
      NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(ngx_http_mcp_loc_conf_t, retry),
      NULL },

    { ngx_string("mcp_shutdown_timeout"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_msec_slot,
      NGX_HTTP_MAIN_CONF_OFFSET,
      offsetof(ngx_http_mcp_main_conf_t, shutdown_timeout),
      NULL },

    { ngx_string("mcp_ipc_path"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_str_slot,
      NGX_HTTP_MAIN_CONF_OFFSET,
      offsetof(ngx_http_mcp_main_conf_t, ipc_path),
      NULL },

    { ngx_string("mcp_request_timeout"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_msec_slot,
      NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(ngx_http_mcp_loc_conf_t, request_timeout),
      NULL },

    { ngx_string("mcp_state_key"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_TAKE1,
      ngx_http_mcp_state_key,
      NGX_HTTP_LOC_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("mcp_state_timeout"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_msec_slot,
      NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(ngx_http_mcp_loc_conf_t, state_timeout),
      NULL },

    { ngx_string("mcp_task_timeout"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_msec_slot,
      NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(ngx_http_mcp_loc_conf_t, task_timeout),
      NULL },

    { ngx_string("mcp_session_key"),
      NGX_HTTP_LOC_CONF|NGX_CONF_TAKE1,
      ngx_http_mcp_session_key,
      NGX_HTTP_LOC_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("mcp_session_key_lifetime"),
      NGX_HTTP_LOC_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_sec_slot,
      NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(ngx_http_mcp_loc_conf_t, session_lifetime),
      NULL },

    { ngx_string("mcp_guardrail_set"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_2MORE,
      ngx_http_mcp_guard_set_directive,
      NGX_HTTP_MAIN_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("mcp_guardrail"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_2MORE,
      ngx_http_mcp_guard_directive,
      NGX_HTTP_LOC_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("mcp_tools_allow"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_1MORE,
      ngx_http_mcp_tools_policy,
      NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(ngx_http_mcp_loc_conf_t, tools_allow),
      NULL },

    { ngx_string("mcp_tools_deny"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_1MORE,
      ngx_http_mcp_tools_policy,
      NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(ngx_http_mcp_loc_conf_t, tools_deny),
      NULL },

    { ngx_string("mcp_page_size"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_num_slot,
      NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(ngx_http_mcp_loc_conf_t, page_size),
      &ngx_http_mcp_page_size_post },

    { ngx_string("mcp_health"),
      NGX_HTTP_LOC_CONF|NGX_CONF_1MORE,
      ngx_http_mcp_health,
      NGX_HTTP_LOC_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("mcp_metrics"),
      NGX_HTTP_LOC_CONF|NGX_CONF_NOARGS,
      ngx_http_mcp_metrics,
      NGX_HTTP_LOC_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("mcp_trace_generate"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_FLAG,
      ngx_conf_set_flag_slot,
      NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(ngx_http_mcp_loc_conf_t, trace_generate),
      NULL },

    { ngx_string("mcp_metrics_counting"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_FLAG,
      ngx_conf_set_flag_slot,
      NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(ngx_http_mcp_loc_conf_t, counting),
      NULL },

      ngx_null_command
};


static ngx_http_module_t  ngx_http_mcp_module_ctx = {
    ngx_http_mcp_preconfiguration,         /* preconfiguration */
    ngx_http_mcp_postconfiguration,        /* postconfiguration */

    ngx_http_mcp_create_main_conf,         /* create main configuration */
    NULL,                                  /* init main configuration */

    NULL,                                  /* create server configuration */
    NULL,                                  /* merge server configuration */

    ngx_http_mcp_create_loc_conf,          /* create location configuration */
    ngx_http_mcp_merge_loc_conf            /* merge location configuration */
};


ngx_module_t  ngx_http_mcp_module = {
    NGX_MODULE_V1,
    &ngx_http_mcp_module_ctx,              /* module context */
    ngx_http_mcp_commands,                 /* module directives */
    NGX_HTTP_MODULE,                       /* module type */
    NULL,                                  /* init master */
    ngx_http_mcp_init_module,              /* init module */
    ngx_http_mcp_init_process,             /* init process */
    NULL,                                  /* init thread */
    NULL,                                  /* exit thread */
    ngx_http_mcp_exit_process,             /* exit process */
    NULL,                                  /* exit master */
    NGX_MODULE_V1_PADDING
};


static ngx_int_t
ngx_http_mcp_preconfiguration(ngx_conf_t *cf)
{
    if (ngx_http_mcp_guard_add_variables(cf) != NGX_OK) {
        return NGX_ERROR;
    }

    return ngx_http_mcp_add_variables(cf);
}


static ngx_int_t
ngx_http_mcp_postconfiguration(ngx_conf_t *cf)
{
    ngx_str_t                   request_id = ngx_string("request_id");
    ngx_http_handler_pt        *h;
    ngx_http_mcp_main_conf_t   *mmcf;
    ngx_http_core_main_conf_t  *cmcf;

    cmcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_core_module);
    mmcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_mcp_module);

    if (ngx_http_mcp_ipc_path(cf, mmcf) != NGX_OK) {
        return NGX_ERROR;
    }

    /* a reply's correlationId is its access log line's $request_id */
    mmcf->request_id = ngx_http_get_variable_index(cf, &request_id);

    if (mmcf->request_id == NGX_ERROR) {
        return NGX_ERROR;
    }

    ngx_http_mcp_variables_used(cf);

    /*
     * What the store's ipc asks of a worker's streams, calls and tasks,
     * and of mcp_pass's streams (the hook table: src/store)
     */
    ngx_http_mcp_hooks.streams_wake = ngx_http_mcp_streams_wake;
    ngx_http_mcp_hooks.calls_wake = ngx_http_mcp_calls_wake;
    ngx_http_mcp_hooks.tasks_wake = ngx_http_mcp_tasks_wake;
    ngx_http_mcp_hooks.stream_poke = ngx_http_mcp_stream_poke;
    ngx_http_mcp_hooks.stdio_wake = ngx_http_mcp_stdio_wake;
    ngx_http_mcp_hooks.calls_quit = ngx_http_mcp_calls_quit;
    ngx_http_mcp_hooks.streams_quit = ngx_http_mcp_streams_quit;
    ngx_http_mcp_hooks.proxy_quit = ngx_http_mcp_proxy_quit;
    ngx_http_mcp_hooks.calls_live = ngx_http_mcp_calls_live;
    ngx_http_mcp_hooks.streams_live = ngx_http_mcp_streams_live;

    /* a stdio location's messages take the edge's and mcp_pass's steps */
    ngx_http_mcp_stdio_steps.request = ngx_http_mcp_stdio_request;
    ngx_http_mcp_stdio_steps.reply = ngx_http_mcp_stdio_reply;
    ngx_http_mcp_stdio_steps.reads = ngx_http_mcp_stdio_reads;

    /*
     * A POST's body is read in the rewrite phase: the phases before the
     * content handler see the $mcp_* variables.  This module's handler,
     * added after the stock modules', runs before them in that phase.
     */
    h = ngx_array_push(&cmcf->phases[NGX_HTTP_REWRITE_PHASE].handlers);
    if (h == NULL) {
        return NGX_ERROR;
    }

    *h = ngx_http_mcp_rewrite_handler;

    if (ngx_http_mcp_metrics_init_conf(cf) != NGX_OK) {
        return NGX_ERROR;
    }

    /*
     * First, so under the module's other filters (errors as JSON-RPC,
     * CORS, the fetches' capture): the head mcp_pass holds back is one
     * they have made already
     */
    if (ngx_http_mcp_proxy_head_filter_init(cf) != NGX_OK) {
        return NGX_ERROR;
    }

    if (ngx_http_mcp_filter_init(cf) != NGX_OK) {
        return NGX_ERROR;
    }

    if (ngx_http_mcp_cors_init(cf) != NGX_OK) {
        return NGX_ERROR;
    }

    /* last: the first of the filters and of the rewrite phase */
    return ngx_http_mcp_subrequest_init(cf);
}


/*
 * mcp_ipc_path, where the workers' wake-up sockets are: by default
 * mcp_ipc beside the request bodies' temporary files, a directory nginx
 * already owns (Debian's /var/lib/nginx, a source build's prefix).
 */

static ngx_int_t
ngx_http_mcp_ipc_path(ngx_conf_t *cf, ngx_http_mcp_main_conf_t *mmcf)
{
    u_char                    *p;
    ngx_str_t                  temp, *path;
    ngx_http_core_loc_conf_t  *clcf;

    path = &mmcf->ipc_path;

    if (path->data != NULL) {
        if (ngx_conf_full_name(cf->cycle, path, 0) != NGX_OK) {
            return NGX_ERROR;
        }

        while (path->len > 1 && path->data[path->len - 1] == '/') {
            path->data[--path->len] = '\0';
        }

    } else {
        clcf = ngx_http_conf_get_module_loc_conf(cf, ngx_http_core_module);

        if (clcf->client_body_temp_path != NULL) {
            temp = clcf->client_body_temp_path->name;

        } else {
            ngx_str_set(&temp, NGX_HTTP_CLIENT_TEMP_PATH);

            if (ngx_conf_full_name(cf->cycle, &temp, 0) != NGX_OK) {
                return NGX_ERROR;
            }
        }

        while (temp.len > 1 && temp.data[temp.len - 1] != '/') {
            temp.len--;
        }

        path->len = temp.len + sizeof("mcp_ipc") - 1;
        path->data = ngx_pnalloc(cf->pool, path->len + 1);
        if (path->data == NULL) {
            return NGX_ERROR;
        }

        p = ngx_cpymem(path->data, temp.data, temp.len);
        p = ngx_cpymem(p, "mcp_ipc", sizeof("mcp_ipc") - 1);
        *p = '\0';
    }

    if (ngx_http_mcp_ipc_check_path(cf, path) != NGX_CONF_OK) {
        return NGX_ERROR;
    }

    return NGX_OK;
}


/* the master makes the workers' socket directory (see ipc.c) */

static ngx_int_t
ngx_http_mcp_init_module(ngx_cycle_t *cycle)
{
    ngx_http_mcp_main_conf_t  *mmcf;

    mmcf = ngx_http_cycle_get_module_main_conf(cycle, ngx_http_mcp_module);

    if (mmcf != NULL) {
        ngx_http_mcp_ipc_prepare(cycle, &mmcf->ipc_path);
    }

    return NGX_OK;
}


/*
 * Each worker starts with no streams, calls or tasks (their owners'
 * queues) and gets its wake-up socket (see src/store/ngx_http_mcp_ipc.c).
 */

static ngx_int_t
ngx_http_mcp_init_process(ngx_cycle_t *cycle)
{
    ngx_http_mcp_main_conf_t  *mmcf;

    if (ngx_process != NGX_PROCESS_WORKER
        && ngx_process != NGX_PROCESS_SINGLE)
    {
        return NGX_OK;
    }

    mmcf = ngx_http_cycle_get_module_main_conf(cycle, ngx_http_mcp_module);

    if (mmcf == NULL) {
        return NGX_OK;
    }

    ngx_http_mcp_calls_init();
    ngx_http_mcp_tasks_init();
    ngx_http_mcp_streams_init();

    /* a graceful exit waits this long for calls in flight */
    if (ngx_http_mcp_ipc_init(cycle, &mmcf->ipc_path,
                              (mmcf->shutdown_timeout == NGX_CONF_UNSET_MSEC)
                              ? 30000 : mmcf->shutdown_timeout)
        != NGX_OK)
    {
        return NGX_ERROR;
    }

    /* what a killed worker left in the zones is answered */
    ngx_http_mcp_session_lost_start(cycle, &mmcf->store);

    /* one worker of the new generation tells of changed lists */
    return (ngx_worker == 0) ? ngx_http_mcp_lists_changed(cycle) : NGX_OK;
}


static void
ngx_http_mcp_exit_process(ngx_cycle_t *cycle)
{
    if (!ngx_http_mcp_ipc_ready()) {
        return;
    }

    /*
     * After a graceful exit nothing is left here; after a fast one
     * (SIGTERM) the calls' errors and the streams' final events are
     * written as far as the sockets take them, without waiting.
     */
    ngx_http_mcp_calls_exit();
    ngx_http_mcp_streams_quit(1);
    ngx_http_mcp_ipc_exit(cycle);
}


static void *
ngx_http_mcp_create_main_conf(ngx_conf_t *cf)
{
    ngx_http_mcp_main_conf_t  *mmcf;

    /* before any module of this .so makes its first cJSON tree */
    ngx_http_mcp_alloc_init();

    mmcf = ngx_pcalloc(cf->pool, sizeof(ngx_http_mcp_main_conf_t));
    if (mmcf == NULL) {
        return NULL;
    }

    if (ngx_array_init(&mmcf->providers, cf->pool, 4,
                       sizeof(ngx_http_mcp_provider_t))
        != NGX_OK)
    {
        return NULL;
    }

    if (ngx_array_init(&mmcf->store.zones, cf->pool, 4, sizeof(ngx_shm_zone_t *))
        != NGX_OK
        || ngx_array_init(&mmcf->bindings, cf->pool, 4,
                          sizeof(ngx_http_mcp_binding_t))
           != NGX_OK)
    {
        return NULL;
    }

    mmcf->shutdown_timeout = NGX_CONF_UNSET_MSEC;
    mmcf->handler = ngx_http_mcp_handler;

    return mmcf;
}


static void *
ngx_http_mcp_create_loc_conf(ngx_conf_t *cf)
{
    ngx_http_mcp_loc_conf_t  *mlcf;

    mlcf = ngx_pcalloc(cf->pool, sizeof(ngx_http_mcp_loc_conf_t));
    if (mlcf == NULL) {
        return NULL;
    }

    /*
     * set by ngx_pcalloc():
     *
     *     mlcf->origins = NULL;
     */

    mlcf->enable = NGX_CONF_UNSET;
    mlcf->set = NGX_CONF_UNSET_PTR;
    mlcf->zone = NGX_CONF_UNSET_PTR;
    mlcf->tools_allow = NGX_CONF_UNSET_PTR;
    mlcf->tools_deny = NGX_CONF_UNSET_PTR;
    mlcf->any_origin = NGX_CONF_UNSET;
    mlcf->max_body = NGX_CONF_UNSET_SIZE;
    mlcf->page_size = NGX_CONF_UNSET_UINT;

    mlcf->keepalive = NGX_CONF_UNSET_MSEC;
    mlcf->retry = NGX_CONF_UNSET_MSEC;
    mlcf->request_timeout = NGX_CONF_UNSET_MSEC;
    mlcf->state_key = NGX_CONF_UNSET_PTR;
    mlcf->session_keys = NGX_CONF_UNSET_PTR;
    mlcf->session_lifetime = NGX_CONF_UNSET;
    mlcf->state_timeout = NGX_CONF_UNSET_MSEC;
    mlcf->task_timeout = NGX_CONF_UNSET_MSEC;
    mlcf->counting = NGX_CONF_UNSET;
    mlcf->guards = NGX_CONF_UNSET_PTR;
    mlcf->trace_generate = NGX_CONF_UNSET;

    return mlcf;
}


static char *
ngx_http_mcp_merge_loc_conf(ngx_conf_t *cf, void *parent, void *child)
{
    ngx_http_mcp_loc_conf_t *prev = parent;
    ngx_http_mcp_loc_conf_t *conf = child;

    ngx_http_mcp_main_conf_t  *mmcf;

    ngx_conf_merge_value(conf->enable, prev->enable, 0);

    ngx_conf_merge_ptr_value(conf->set, prev->set, NULL);
    ngx_conf_merge_ptr_value(conf->tools_allow, prev->tools_allow, NULL);
    ngx_conf_merge_ptr_value(conf->tools_deny, prev->tools_deny, NULL);

    /* a location's guardrails are its own, or all of the level above's */
    if (conf->guards == NGX_CONF_UNSET_PTR) {
        conf->guards = (prev->guards == NGX_CONF_UNSET_PTR) ? NULL
                                                            : prev->guards;
        conf->guard_where = prev->guard_where;
    }

    /*
     * A gateway's nested locations are gateways too, as they inherit its
     * upstream (ngx_http_mcp_proxy_module, whose loc conf holds the rest
     * of mcp_pass, merges after this module).
     */
    if (prev->pass) {
        conf->pass = 1;
    }

    ngx_conf_merge_ptr_value(conf->zone, prev->zone, NULL);

    if (conf->origins == NULL && conf->any_origin == NGX_CONF_UNSET) {
        conf->origins = prev->origins;
        conf->any_origin = prev->any_origin;
    }

    ngx_conf_merge_value(conf->any_origin, prev->any_origin, 0);
    ngx_conf_merge_size_value(conf->max_body, prev->max_body, 1024 * 1024);
    ngx_conf_merge_uint_value(conf->page_size, prev->page_size, 100);
    ngx_conf_merge_msec_value(conf->keepalive, prev->keepalive, 15000);
    ngx_conf_merge_msec_value(conf->retry, prev->retry, 1000);
    ngx_conf_merge_msec_value(conf->request_timeout, prev->request_timeout,
                              60000);
    ngx_conf_merge_ptr_value(conf->state_key, prev->state_key, NULL);
    ngx_conf_merge_ptr_value(conf->session_keys, prev->session_keys, NULL);
    ngx_conf_merge_sec_value(conf->session_lifetime, prev->session_lifetime,
                             86400);

    /* one server a location: a child's, an upstream's or the backends' */
    if (conf->stdio && (conf->pass || conf->aggregate != NULL)) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"mcp_stdio\" is for a location without "
                           "\"mcp_pass\" or \"mcp_backend\"");
        return NGX_CONF_ERROR;
    }

    if (conf->session_keys != NULL && !conf->pass) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"mcp_session_key\" is for a location with "
                           "\"mcp_pass\"");
        return NGX_CONF_ERROR;
    }
    if (ngx_http_mcp_scope(cf, &conf->scope) != NGX_OK) {
        return NGX_CONF_ERROR;
    }

    ngx_conf_merge_msec_value(conf->state_timeout, prev->state_timeout,
                              600000);
    ngx_conf_merge_msec_value(conf->task_timeout, prev->task_timeout,
                              3600000);
    ngx_conf_merge_value(conf->counting, prev->counting, 1);
    ngx_conf_merge_value(conf->trace_generate, prev->trace_generate, 0);

    if (conf->enable && conf->zone == NULL) {
        mmcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_mcp_module);
        conf->zone = ngx_http_mcp_session_default_zone(cf, &mmcf->store);
        if (conf->zone == NULL) {
            return NGX_CONF_ERROR;
        }
    }

    if (conf->enable && conf->set == NULL) {
        conf->set = ngx_http_mcp_set_get(cf, NULL);
        if (conf->set == NULL) {
            return NGX_CONF_ERROR;
        }
    }

    if (conf->enable && !conf->pass && !conf->stdio
        && ngx_http_mcp_bind(cf, conf->zone, conf->set) != NGX_OK)
    {
        return NGX_CONF_ERROR;
    }

    return NGX_CONF_OK;
}


/*
 * The scope of a location's sealed tokens: its server's first name and
 * its own, so that two locations, or two servers, that share
 * mcp_state_key or mcp_session_key do not take each other's; the nodes
 * of one configuration share it.
 */

static ngx_int_t
ngx_http_mcp_scope(ngx_conf_t *cf, ngx_str_t *scope)
{
    ngx_http_core_loc_conf_t  *clcf;
    ngx_http_core_srv_conf_t  *cscf;

    clcf = ngx_http_conf_get_module_loc_conf(cf, ngx_http_core_module);
    cscf = ngx_http_conf_get_module_srv_conf(cf, ngx_http_core_module);

    scope->len = cscf->server_name.len + 1 + clcf->name.len;
    scope->data = ngx_pnalloc(cf->pool, scope->len);

    if (scope->data == NULL) {
        return NGX_ERROR;
    }

    ngx_sprintf(scope->data, "%V %V", &cscf->server_name, &clcf->name);

    return NGX_OK;
}


static char *
ngx_http_mcp(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_core_loc_conf_t  *clcf;
    ngx_http_mcp_loc_conf_t   *mlcf = conf;
    char                      *rv;

    rv = ngx_conf_set_flag_slot(cf, cmd, conf);
    if (rv != NGX_CONF_OK) {
        return rv;
    }

    if (mlcf->enable) {
        clcf = ngx_http_conf_get_module_loc_conf(cf, ngx_http_core_module);
        clcf->handler = ngx_http_mcp_handler;
    }

    return NGX_CONF_OK;
}


/*
 * The test sets ("everything", "validation") are registered by
 * ngx_http_mcp_fixtures_module, an addon of its own (fixtures/) that a
 * production build leaves out: naming one without that module loaded
 * says which module is missing, not only that the set is unknown.
 */

static ngx_int_t
ngx_http_mcp_builtin_fixtures(ngx_conf_t *cf, ngx_str_t *name)
{
    ngx_uint_t  i;

    if ((name->len != sizeof("everything") - 1
         || ngx_strncmp(name->data, "everything", name->len) != 0)
        && (name->len != sizeof("validation") - 1
            || ngx_strncmp(name->data, "validation", name->len) != 0))
    {
        return NGX_OK;
    }

    for (i = 0; cf->cycle->modules[i]; i++) {
        if (ngx_strcmp(cf->cycle->modules[i]->name,
                       "ngx_http_mcp_fixtures_module")
            == 0)
        {
            return NGX_OK;
        }
    }

    ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                       "unknown MCP builtin set \"%V\": the test sets are "
                       "in ngx_http_mcp_fixtures_module, which is not loaded "
                       "(load_module ngx_http_mcp_fixtures_module.so after "
                       "ngx_http_mcp_module.so)", name);

    return NGX_ERROR;
}


static char *
ngx_http_mcp_builtin(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_mcp_loc_conf_t *mlcf = conf;

    ngx_str_t           *value;
    ngx_http_mcp_set_t  *set;

    if (mlcf->builtin) {
        return "is duplicate";
    }

    value = cf->args->elts;

    if (ngx_http_mcp_builtin_fixtures(cf, &value[1]) != NGX_OK) {
        return NGX_CONF_ERROR;
    }

    set = ngx_http_mcp_set_get(cf, &value[1]);
    if (set == NULL) {
        return NGX_CONF_ERROR;
    }

    mlcf->builtin = 1;

    /* entries this level defined before: the named set's join them */

    if (mlcf->own_set) {
        return (ngx_http_mcp_set_copy(cf, mlcf->set, set) == NGX_OK)
               ? NGX_CONF_OK : NGX_CONF_ERROR;
    }

    mlcf->set = set;

    return NGX_CONF_OK;
}


static char *
ngx_http_mcp_session(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_mcp_loc_conf_t *mlcf = conf;

    ngx_str_t  *value;

    if (mlcf->zone != NGX_CONF_UNSET_PTR) {
        return "is duplicate";
    }

    value = cf->args->elts;

    /* the zone may be defined later in the file; its size is checked then */
    mlcf->zone = ngx_shared_memory_add(cf, &value[1], 0,
                                       &ngx_http_mcp_module);
    if (mlcf->zone == NULL) {
        return NGX_CONF_ERROR;
    }

    return NGX_CONF_OK;
}


static char *
ngx_http_mcp_allowed_origins(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_mcp_loc_conf_t *mlcf = conf;

    ngx_str_t   *value, *origin;
    ngx_uint_t   i;

    if (mlcf->origins != NULL || mlcf->any_origin != NGX_CONF_UNSET) {
        return "is duplicate";
    }

    value = cf->args->elts;

    mlcf->any_origin = 0;
    mlcf->origins = ngx_array_create(cf->pool, cf->args->nelts,
                                     sizeof(ngx_str_t));
    if (mlcf->origins == NULL) {
        return NGX_CONF_ERROR;
    }

    for (i = 1; i < cf->args->nelts; i++) {

        if (ngx_strcmp(value[i].data, "*") == 0) {
            mlcf->any_origin = 1;
            continue;
        }

        origin = ngx_array_push(mlcf->origins);
        if (origin == NULL) {
            return NGX_CONF_ERROR;
        }

        *origin = value[i];

        /* origins compare as "scheme://host[:port]", without a slash */
        if (origin->len > 1 && origin->data[origin->len - 1] == '/') {
            origin->len--;
        }

        if (ngx_strcmp(value[i].data, "localhost") != 0
            && ngx_http_mcp_parse_origin(origin) != NGX_OK)
        {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "invalid origin \"%V\": expected \"*\", "
                               "\"localhost\" or scheme://host[:port]",
                               &value[i]);
            return NGX_CONF_ERROR;
        }
    }

    return NGX_CONF_OK;
}


/* scheme://host[:port], the form browsers send in Origin */

static ngx_int_t
ngx_http_mcp_parse_origin(ngx_str_t *origin)
{
    u_char  *p, *end, *host;

    p = ngx_http_mcp_origin_host(origin);
    end = origin->data + origin->len;

    if (p == NULL) {
        return NGX_ERROR;
    }

    host = p;

    if (p < end && *p == '[') {
        while (p < end && *p != ']') {
            p++;
        }

        if (p == end) {
            return NGX_ERROR;
        }

        p++;

    } else {
        while (p < end && (isalnum(*p) || *p == '-' || *p == '.')) {
            p++;
        }
    }

    if (p == host) {
        return NGX_ERROR;
    }

    if (p < end && *p == ':') {
        if (++p == end) {
            return NGX_ERROR;
        }

        while (p < end && *p >= '0' && *p <= '9') {
            p++;
        }
    }

    return (p == end) ? NGX_OK : NGX_ERROR;
}


static char *
ngx_http_mcp_check_page_size(ngx_conf_t *cf, void *post, void *data)
{
    ngx_uint_t  *np = data;

    if (*np < 1 || *np > 10000) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"mcp_page_size\" must be between 1 and 10000, "
                           "not \"%ui\"", *np);
        return NGX_CONF_ERROR;
    }

    return NGX_CONF_OK;
}


/*
 * mcp_state_key file: the requestState key that every node serving the
 * endpoint shares.  The file holds at least 32 random bytes (for
 * example "openssl rand -hex 32"); the key is the SHA-256 of all of it.
 */

static char *
ngx_http_mcp_state_key(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_mcp_loc_conf_t  *mlcf = conf;

    u_char     *key;
    ngx_str_t  *value;

    if (mlcf->state_key != NGX_CONF_UNSET_PTR) {
        return "is duplicate";
    }

    value = cf->args->elts;

    key = ngx_palloc(cf->pool, SHA256_DIGEST_LENGTH);
    if (key == NULL) {
        return NGX_CONF_ERROR;
    }

    if (ngx_http_mcp_key_file(cf, &value[1], key) != NGX_CONF_OK) {
        return NGX_CONF_ERROR;
    }

    mlcf->state_key = key;

    return NGX_CONF_OK;
}


/*
 * mcp_session_key file: a key of the gateway's keyed session ids; the
 * first of a location's keys seals, all of them open.  The file is read
 * as mcp_state_key's; the keys are derived from its digest.
 */

static char *
ngx_http_mcp_session_key(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_mcp_loc_conf_t  *mlcf = conf;

    u_char                   secret[SHA256_DIGEST_LENGTH];
    char                    *rv;
    ngx_str_t               *value;
    ngx_uint_t               i;
    ngx_http_mcp_sesskey_t  *key, *keys;

    value = cf->args->elts;

    if (mlcf->session_keys == NGX_CONF_UNSET_PTR) {
        mlcf->session_keys = ngx_array_create(cf->pool, 2,
                                              sizeof(ngx_http_mcp_sesskey_t));
        if (mlcf->session_keys == NULL) {
            return NGX_CONF_ERROR;
        }
    }

    key = ngx_array_push(mlcf->session_keys);
    if (key == NULL) {
        return NGX_CONF_ERROR;
    }

    rv = ngx_http_mcp_key_file(cf, &value[1], secret);

    if (rv == NGX_CONF_OK && ngx_http_mcp_sesskey_init(key, secret) != NGX_OK)
    {
        rv = NGX_CONF_ERROR;
    }

    ngx_explicit_memzero(secret, sizeof(secret));

    if (rv != NGX_CONF_OK) {
        return rv;
    }

    keys = mlcf->session_keys->elts;

    for (i = 0; i + 1 < mlcf->session_keys->nelts; i++) {
        if (ngx_memcmp(keys[i].kid, key->kid, NGX_HTTP_MCP_SESSKEY_KID_LEN)
            == 0)
        {
            return "names a key twice";
        }
    }

    return NGX_CONF_OK;
}


/*
 * A key file: at least 32 bytes of anything (random bytes, or their hex
 * or base64 text), of which key gets the SHA-256.  Nothing of the file
 * is logged.
 */

static char *
ngx_http_mcp_key_file(ngx_conf_t *cf, ngx_str_t *file, u_char *key)
{
    off_t            offset;
    u_char           buf[4096];
    char            *rv;
    ssize_t          n;
    ngx_fd_t         fd;
    ngx_str_t        name;
    ngx_file_t       f;
    EVP_MD_CTX      *md;
    ngx_file_info_t  fi;

    name = *file;

    if (ngx_conf_full_name(cf->cycle, &name, 1) != NGX_OK) {
        return NGX_CONF_ERROR;
    }

    md = EVP_MD_CTX_new();

    if (md == NULL || EVP_DigestInit_ex(md, EVP_sha256(), NULL) != 1) {
        EVP_MD_CTX_free(md);
        return NGX_CONF_ERROR;
    }

    fd = ngx_open_file(name.data, NGX_FILE_RDONLY, NGX_FILE_OPEN, 0);
    if (fd == NGX_INVALID_FILE) {
        EVP_MD_CTX_free(md);
        ngx_conf_log_error(NGX_LOG_EMERG, cf, ngx_errno,
                           ngx_open_file_n " \"%V\" failed", &name);
        return NGX_CONF_ERROR;
    }

    ngx_memzero(&f, sizeof(ngx_file_t));
    f.fd = fd;
    f.name = name;
    f.log = cf->log;

    rv = NGX_CONF_ERROR;
    offset = 0;

    if (ngx_fd_info(fd, &fi) == NGX_FILE_ERROR || !ngx_is_file(&fi)) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"%V\" is not a file", &name);
        goto done;
    }

    for ( ;; ) {
        n = ngx_read_file(&f, buf, sizeof(buf), offset);

        if (n == NGX_ERROR) {
            goto done;
        }

        if (n == 0) {
            break;
        }

        if (EVP_DigestUpdate(md, buf, n) != 1) {
            goto done;
        }

        offset += n;
    }

    if (offset < 32) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"%V\" must hold at least 32 bytes", &name);
        goto done;
    }

    if (EVP_DigestFinal_ex(md, key, NULL) != 1) {
        goto done;
    }

    rv = NGX_CONF_OK;

done:

    ngx_explicit_memzero(buf, sizeof(buf));
    EVP_MD_CTX_free(md);

    if (ngx_close_file(fd) == NGX_FILE_ERROR) {
        ngx_conf_log_error(NGX_LOG_ALERT, cf, ngx_errno,
                           ngx_close_file_n " \"%V\" failed", &name);
    }

    return rv;
}
