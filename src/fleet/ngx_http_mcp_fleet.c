
/*
 * mcp_fleet: the built-in endpoints across several nginx nodes.  A
 * session lives wholly in the shm zone of the node that created it, its
 * owner, as on one node; Redis only says which node that is (key: the
 * prefix and the session id, value: the owner's node name).
 *
 *  - initialize: the owner sets the key (with a TTL beyond the zone's
 *    idle timeout) before its reply goes out; with Redis down the
 *    initialize is refused (503): no session that the other nodes would
 *    call unknown.
 *  - a request naming a session this node does not hold: the node asks
 *    Redis (the request waits on the event loop) and forwards the whole
 *    request to the owner through the operator's named location
 *    ("forward=@name", which proxies to $mcp_fleet_owner), marked with
 *    Mcp-Fleet-Hop: a marked request is never forwarded again.  Unknown
 *    in Redis: today's 404 -32001.  Redis down: 503 -32000.
 *  - an owner asked about a session it no longer holds (a stale key)
 *    deletes the key if it still names this node, and answers 404.
 *  - DELETE: the owner deletes the key.  Idle expiry: the key's TTL;
 *    worker 0 sets the keys of all the node's sessions again every third
 *    of the idle timeout, and every worker does so when its connection
 *    comes (back) up: after a Redis restart nothing is missing.
 *
 * A client's own Mcp-Fleet-Hop header only stops a forward: the node
 * then answers as if it were alone, and deletes only a key that names
 * itself for a session it does not hold.
 *
 * 2026-07-28 tasks (no session) go the same way, keyed by task id:
 * ngx_http_mcp_fleet_task.c sets their keys and says which stateless
 * request names a task held elsewhere; the lookup and forward are here.
 */


#include "ngx_http_mcp_fleet.h"
#include "ngx_http_mcp_jsonrpc.h"
#include "ngx_http_mcp_store.h"
#include "ngx_http_mcp_call.h"
#include "ngx_http_mcp_core.h"
#include "ngx_http_mcp_http.h"
#include "ngx_http_mcp_redis.h"


#define NGX_HTTP_MCP_FLEET_NAME_LEN    255


#if (NGX_HTTP_MCP_HIREDIS)

typedef ngx_int_t (*ngx_http_mcp_fleet_conf_pt)(ngx_conf_t *cf,
    ngx_http_mcp_fleet_conf_t *fcf, ngx_str_t *value, ngx_str_t *arg);

/* a parameter of mcp_fleet and the step that reads its value */
typedef struct {
    ngx_str_t                    key;       /* "redis=" */
    ngx_http_mcp_fleet_conf_pt   set;
} ngx_http_mcp_fleet_param_t;

#endif


/* the request's, in this module's context slot */
typedef struct {
    ngx_str_t                  id;          /* the session's or task's */
    ngx_http_mcp_ctx_t        *ctx;         /* saved: the POST's */
    unsigned                   asked:1;     /* the lookup is done */
    unsigned                   task:1;      /* id is a 2026 task's */
} ngx_http_mcp_fleet_ctx_t;


static ngx_int_t ngx_http_mcp_fleet_preconfiguration(ngx_conf_t *cf);
static ngx_int_t ngx_http_mcp_fleet_postconfiguration(ngx_conf_t *cf);
static ngx_uint_t ngx_http_mcp_fleet_endpoints(
    ngx_http_core_loc_conf_t *clcf);
static ngx_uint_t ngx_http_mcp_fleet_tree(
    ngx_http_location_tree_node_t *node);
static void *ngx_http_mcp_fleet_create_conf(ngx_conf_t *cf);
static char *ngx_http_mcp_fleet(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
#if (NGX_HTTP_MCP_HIREDIS)
static ngx_int_t ngx_http_mcp_fleet_param(ngx_conf_t *cf,
    ngx_http_mcp_fleet_conf_t *fcf, ngx_str_t *value);
static ngx_int_t ngx_http_mcp_fleet_conf_redis(ngx_conf_t *cf,
    ngx_http_mcp_fleet_conf_t *fcf, ngx_str_t *value, ngx_str_t *arg);
static ngx_int_t ngx_http_mcp_fleet_conf_node(ngx_conf_t *cf,
    ngx_http_mcp_fleet_conf_t *fcf, ngx_str_t *value, ngx_str_t *arg);
static ngx_int_t ngx_http_mcp_fleet_conf_forward(ngx_conf_t *cf,
    ngx_http_mcp_fleet_conf_t *fcf, ngx_str_t *value, ngx_str_t *arg);
static ngx_int_t ngx_http_mcp_fleet_conf_prefix(ngx_conf_t *cf,
    ngx_http_mcp_fleet_conf_t *fcf, ngx_str_t *value, ngx_str_t *arg);
static ngx_int_t ngx_http_mcp_fleet_conf_timeout(ngx_conf_t *cf,
    ngx_http_mcp_fleet_conf_t *fcf, ngx_str_t *value, ngx_str_t *arg);
#endif
static ngx_int_t ngx_http_mcp_fleet_init_process(ngx_cycle_t *cycle);
static void ngx_http_mcp_fleet_exit_process(ngx_cycle_t *cycle);
static ngx_int_t ngx_http_mcp_fleet_owner_variable(ngx_http_request_t *r,
    ngx_http_variable_value_t *v, uintptr_t data);
static ngx_int_t ngx_http_mcp_fleet_unavailable(ngx_http_request_t *r,
    cJSON *id);
static void ngx_http_mcp_fleet_owner(void *data, ngx_int_t rc,
    ngx_str_t *value);
static ngx_int_t ngx_http_mcp_fleet_forward(ngx_http_request_t *r,
    ngx_str_t *owner);
static ngx_int_t ngx_http_mcp_fleet_set(ngx_str_t *sid, void *data,
    ngx_http_mcp_redis_pt handler);
static void ngx_http_mcp_fleet_release(ngx_str_t *id, ngx_uint_t task);
static size_t ngx_http_mcp_fleet_key(u_char *buf, ngx_str_t *sid);
static ngx_uint_t ngx_http_mcp_fleet_name_ok(ngx_str_t *name);
static void ngx_http_mcp_fleet_walk(void);
static ngx_shm_zone_t *ngx_http_mcp_fleet_zone(ngx_uint_t i);
static void ngx_http_mcp_fleet_saved_cleanup(void *data);
static void ngx_http_mcp_fleet_refresh(ngx_event_t *ev);


#if (NGX_HTTP_MCP_HIREDIS)

static ngx_http_mcp_fleet_param_t  ngx_http_mcp_fleet_params[] = {
    { ngx_string("redis="), ngx_http_mcp_fleet_conf_redis },
    { ngx_string("node="), ngx_http_mcp_fleet_conf_node },
    { ngx_string("forward="), ngx_http_mcp_fleet_conf_forward },
    { ngx_string("prefix="), ngx_http_mcp_fleet_conf_prefix },
    { ngx_string("timeout="), ngx_http_mcp_fleet_conf_timeout },
    { ngx_null_string, NULL }
};

#endif


static ngx_command_t  ngx_http_mcp_fleet_commands[] = {

    { ngx_string("mcp_fleet"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_1MORE,
      ngx_http_mcp_fleet,
      NGX_HTTP_MAIN_CONF_OFFSET,
      0,
      NULL },

      ngx_null_command
};


static ngx_http_module_t  ngx_http_mcp_fleet_module_ctx = {
    ngx_http_mcp_fleet_preconfiguration,   /* preconfiguration */
    ngx_http_mcp_fleet_postconfiguration,  /* postconfiguration */

    ngx_http_mcp_fleet_create_conf,        /* create main configuration */
    NULL,                                  /* init main configuration */

    NULL,                                  /* create server configuration */
    NULL,                                  /* merge server configuration */

    NULL,                                  /* create location configuration */
    NULL                                   /* merge location configuration */
};


ngx_module_t  ngx_http_mcp_fleet_module = {
    NGX_MODULE_V1,
    &ngx_http_mcp_fleet_module_ctx,        /* module context */
    ngx_http_mcp_fleet_commands,           /* module directives */
    NGX_HTTP_MODULE,                       /* module type */
    NULL,                                  /* init master */
    NULL,                                  /* init module */
    ngx_http_mcp_fleet_init_process,       /* init process */
    NULL,                                  /* init thread */
    NULL,                                  /* exit thread */
    ngx_http_mcp_fleet_exit_process,       /* exit process */
    NULL,                                  /* exit master */
    NGX_MODULE_V1_PADDING
};


static ngx_str_t  ngx_http_mcp_fleet_owner_name =
    ngx_string("mcp_fleet_owner");


/* the worker's fleet: see ngx_http_mcp_fleet_worker_t */
static ngx_http_mcp_fleet_worker_t  ngx_http_mcp_fleet_worker;


static ngx_int_t
ngx_http_mcp_fleet_preconfiguration(ngx_conf_t *cf)
{
    ngx_http_variable_t  *var;

    var = ngx_http_add_variable(cf, &ngx_http_mcp_fleet_owner_name, 0);
    if (var == NULL) {
        return NGX_ERROR;
    }

    var->get_handler = ngx_http_mcp_fleet_owner_variable;

    return NGX_OK;
}


/*
 * forward= names a named location that every server with endpoints of
 * this module has (named locations are a server's): a typo, or a server
 * left out, fails.
 */

static ngx_int_t
ngx_http_mcp_fleet_postconfiguration(ngx_conf_t *cf)
{
    ngx_uint_t                   s, found, has;
    ngx_http_core_loc_conf_t   **clcfp, *clcf;
    ngx_http_core_srv_conf_t   **cscfp, *without;
    ngx_http_core_main_conf_t   *cmcf;
    ngx_http_mcp_fleet_conf_t   *fcf;

    /* a task is told to the fleet (if there is one: else it is not) */
    ngx_http_mcp_hooks.task_created = ngx_http_mcp_fleet_task_register;

    fcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_mcp_fleet_module);

    if (!fcf->enabled) {
        return NGX_OK;
    }

    cmcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_core_module);
    cscfp = cmcf->servers.elts;
    found = 0;
    without = NULL;

    for (s = 0; s < cmcf->servers.nelts; s++) {

        has = 0;
        clcfp = cscfp[s]->named_locations;

        for ( /* void */ ; clcfp != NULL && *clcfp != NULL; clcfp++) {
            if ((*clcfp)->name.len == fcf->forward.len
                && ngx_strncmp((*clcfp)->name.data, fcf->forward.data,
                               fcf->forward.len)
                   == 0)
            {
                has = 1;
                break;
            }
        }

        found |= has;

        clcf = cscfp[s]->ctx->loc_conf[ngx_http_core_module.ctx_index];

        if (!has && without == NULL && ngx_http_mcp_fleet_endpoints(clcf)) {
            without = cscfp[s];
        }
    }

    if (!found) {
        ngx_log_error(NGX_LOG_EMERG, cf->log, 0,
                      "mcp_fleet: no server has the location \"%V\" that "
                      "forward= names", &fcf->forward);
        return NGX_ERROR;
    }

    if (without != NULL) {
        ngx_log_error(NGX_LOG_EMERG, cf->log, 0,
                      "mcp_fleet: a server with locations of this module "
                      "(server_name \"%V\") has no location \"%V\" that "
                      "forward= names (named locations are a server's)",
                      &without->server_name, &fcf->forward);
        return NGX_ERROR;
    }

    return NGX_OK;
}


/* a location of the module that may forward, at or under clcf */

static ngx_uint_t
ngx_http_mcp_fleet_endpoints(ngx_http_core_loc_conf_t *clcf)
{
    ngx_http_mcp_loc_conf_t  *mlcf;
#if (NGX_PCRE)
    ngx_http_core_loc_conf_t  **clcfp;
#endif

    /* a server's own has none: its locations have theirs */
    if (clcf->loc_conf != NULL) {
        mlcf = clcf->loc_conf[ngx_http_mcp_module.ctx_index];

        /* a gateway's and a stdio server's POSTs are never forwarded */
        if (mlcf->enable && !mlcf->pass && !mlcf->stdio) {
            return 1;
        }
    }

    if (ngx_http_mcp_fleet_tree(clcf->static_locations)) {
        return 1;
    }

#if (NGX_PCRE)
    for (clcfp = clcf->regex_locations;
         clcfp != NULL && *clcfp != NULL;
         clcfp++)
    {
        if (ngx_http_mcp_fleet_endpoints(*clcfp)) {
            return 1;
        }
    }
#endif

    return 0;
}


static ngx_uint_t
ngx_http_mcp_fleet_tree(ngx_http_location_tree_node_t *node)
{
    if (node == NULL) {
        return 0;
    }

    return (node->exact && ngx_http_mcp_fleet_endpoints(node->exact))
           || (node->inclusive
               && ngx_http_mcp_fleet_endpoints(node->inclusive))
           || ngx_http_mcp_fleet_tree(node->left)
           || ngx_http_mcp_fleet_tree(node->right)
           || ngx_http_mcp_fleet_tree(node->tree);
}


static void *
ngx_http_mcp_fleet_create_conf(ngx_conf_t *cf)
{
    ngx_http_mcp_fleet_conf_t  *fcf;

    fcf = ngx_pcalloc(cf->pool, sizeof(ngx_http_mcp_fleet_conf_t));
    if (fcf == NULL) {
        return NULL;
    }

    fcf->owner_index = NGX_ERROR;

    return fcf;
}


/*
 * mcp_fleet redis=ADDRESS:PORT node=NAME forward=@LOCATION
 *           [prefix=STRING] [timeout=TIME]
 */

static char *
ngx_http_mcp_fleet(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_mcp_fleet_conf_t *fcf = conf;

#if (NGX_HTTP_MCP_HIREDIS)
    ngx_str_t   *value;
    ngx_uint_t   i;

    if (fcf->enabled) {
        return "is duplicate";
    }

    value = cf->args->elts;

    ngx_str_set(&fcf->prefix, "mcp:session:");
    fcf->timeout = 1000;

    for (i = 1; i < cf->args->nelts; i++) {
        if (ngx_http_mcp_fleet_param(cf, fcf, &value[i]) != NGX_OK) {
            return NGX_CONF_ERROR;
        }
    }

    if (fcf->redis_host.len == 0 || fcf->node.len == 0
        || fcf->forward.len == 0)
    {
        return "needs redis=, node= and forward=";
    }

    fcf->owner_index = ngx_http_get_variable_index(cf,
                                               &ngx_http_mcp_fleet_owner_name);
    if (fcf->owner_index == NGX_ERROR) {
        return NGX_CONF_ERROR;
    }

    fcf->enabled = 1;

    return NGX_CONF_OK;

#else

    (void) fcf;

    return "needs the module built with hiredis (Debian's libhiredis-dev "
           "was not found when it was built)";

#endif
}


#if (NGX_HTTP_MCP_HIREDIS)

/* one parameter: the step of the table's entry that names it */

static ngx_int_t
ngx_http_mcp_fleet_param(ngx_conf_t *cf, ngx_http_mcp_fleet_conf_t *fcf,
    ngx_str_t *value)
{
    ngx_int_t                    rc;
    ngx_str_t                    arg;
    ngx_http_mcp_fleet_param_t  *p;

    for (p = ngx_http_mcp_fleet_params; p->key.len; p++) {
        if (ngx_strncmp(value->data, p->key.data, p->key.len) == 0) {
            break;
        }
    }

    rc = NGX_DECLINED;

    if (p->key.len) {
        arg.data = value->data + p->key.len;
        arg.len = value->len - p->key.len;

        rc = p->set(cf, fcf, value, &arg);
    }

    if (rc == NGX_DECLINED) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "mcp_fleet: invalid parameter \"%V\"", value);
        return NGX_ERROR;
    }

    return rc;
}


/* redis=ADDRESS:PORT: an IP address, never a name to look up */

static ngx_int_t
ngx_http_mcp_fleet_conf_redis(ngx_conf_t *cf,
    ngx_http_mcp_fleet_conf_t *fcf, ngx_str_t *value, ngx_str_t *arg)
{
    u_char      *colon;
    ngx_int_t    port;
    ngx_str_t    host;
    ngx_addr_t   addr;

    for (colon = arg->data + arg->len; colon > arg->data; colon--) {
        if (colon[-1] == ':') {
            break;
        }
    }

    if (colon == arg->data) {
        return NGX_DECLINED;
    }

    colon--;

    host.data = arg->data;
    host.len = colon - arg->data;

    if (host.len > 2 && host.data[0] == '['
        && host.data[host.len - 1] == ']')
    {
        host.data++;
        host.len -= 2;
    }

    port = ngx_atoi(colon + 1, arg->data + arg->len - colon - 1);

    if (host.len == 0 || port < 1 || port > 65535
        || ngx_parse_addr(cf->pool, &addr, host.data, host.len) != NGX_OK)
    {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "mcp_fleet: \"%V\" is not an IP address "
                           "and port (a host name would need a "
                           "blocking lookup)", value);
        return NGX_ERROR;
    }

    fcf->redis_host.data = ngx_pnalloc(cf->pool, host.len + 1);
    if (fcf->redis_host.data == NULL) {
        return NGX_ERROR;
    }

    (void) ngx_cpystrn(fcf->redis_host.data, host.data, host.len + 1);
    fcf->redis_host.len = host.len;
    fcf->redis_port = (in_port_t) port;

    return NGX_OK;
}


static ngx_int_t
ngx_http_mcp_fleet_conf_node(ngx_conf_t *cf,
    ngx_http_mcp_fleet_conf_t *fcf, ngx_str_t *value, ngx_str_t *arg)
{
    fcf->node = *arg;

    if (!ngx_http_mcp_fleet_name_ok(&fcf->node)) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "mcp_fleet: node= must be 1 to 255 of "
                           "A-Z a-z 0-9 . : _ - [ ] (the name the "
                           "other nodes proxy to), not \"%V\"",
                           &fcf->node);
        return NGX_ERROR;
    }

    return NGX_OK;
}


static ngx_int_t
ngx_http_mcp_fleet_conf_forward(ngx_conf_t *cf,
    ngx_http_mcp_fleet_conf_t *fcf, ngx_str_t *value, ngx_str_t *arg)
{
    fcf->forward = *arg;

    if (fcf->forward.len < 2 || fcf->forward.data[0] != '@') {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "mcp_fleet: forward= must name a named "
                           "location (\"@name\"), not \"%V\"",
                           &fcf->forward);
        return NGX_ERROR;
    }

    return NGX_OK;
}


static ngx_int_t
ngx_http_mcp_fleet_conf_prefix(ngx_conf_t *cf,
    ngx_http_mcp_fleet_conf_t *fcf, ngx_str_t *value, ngx_str_t *arg)
{
    fcf->prefix = *arg;

    if (fcf->prefix.len == 0
        || fcf->prefix.len > NGX_HTTP_MCP_FLEET_PREFIX_LEN)
    {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "mcp_fleet: prefix= must be 1 to %d "
                           "bytes", NGX_HTTP_MCP_FLEET_PREFIX_LEN);
        return NGX_ERROR;
    }

    return NGX_OK;
}


static ngx_int_t
ngx_http_mcp_fleet_conf_timeout(ngx_conf_t *cf,
    ngx_http_mcp_fleet_conf_t *fcf, ngx_str_t *value, ngx_str_t *arg)
{
    fcf->timeout = ngx_parse_time(arg, 0);

    if (fcf->timeout == (ngx_msec_t) NGX_ERROR
        || fcf->timeout == 0 || fcf->timeout > 60000)
    {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "mcp_fleet: timeout= must be a time "
                           "from 1ms to 60s, not \"%V\"", arg);
        return NGX_ERROR;
    }

    return NGX_OK;
}

#endif


static ngx_uint_t
ngx_http_mcp_fleet_name_ok(ngx_str_t *name)
{
    u_char      c;
    ngx_uint_t  i;

    if (name->len == 0 || name->len > NGX_HTTP_MCP_FLEET_NAME_LEN) {
        return 0;
    }

    for (i = 0; i < name->len; i++) {
        c = name->data[i];

        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
            || (c >= '0' && c <= '9') || c == '.' || c == ':' || c == '_'
            || c == '-' || c == '[' || c == ']')
        {
            continue;
        }

        return 0;
    }

    return 1;
}


static ngx_int_t
ngx_http_mcp_fleet_init_process(ngx_cycle_t *cycle)
{
    ngx_uint_t                    i;
    ngx_msec_t                    timeout;
    ngx_shm_zone_t               *zone;
    ngx_http_mcp_fleet_conf_t    *fcf;
    ngx_http_mcp_fleet_worker_t  *fw;

    if (ngx_process != NGX_PROCESS_WORKER
        && ngx_process != NGX_PROCESS_SINGLE)
    {
        return NGX_OK;
    }

    fcf = ngx_http_cycle_get_module_main_conf(cycle,
                                              ngx_http_mcp_fleet_module);

    if (fcf == NULL || !fcf->enabled) {
        return NGX_OK;
    }

    fw = &ngx_http_mcp_fleet_worker;

    fw->conf = fcf;
    fw->main = ngx_http_cycle_get_module_main_conf(cycle, ngx_http_mcp_module);

    ngx_http_mcp_fleet_task_setup(fw);

    /*
     * The keys are set again every third of the shortest idle timeout
     * (1 s to 60 s), and live for the longest one and two periods more.
     */
    fw->period = 60000;
    fw->ttl = 0;

    for (i = 0; (zone = ngx_http_mcp_fleet_zone(i)) != NULL; i++) {
        timeout = ngx_http_mcp_session_timeout(zone);

        if (timeout / 3 < fw->period) {
            fw->period = ngx_max(timeout / 3, 1000);
        }

        if (timeout > fw->ttl) {
            fw->ttl = timeout;
        }
    }

    fw->ttl += 2 * fw->period;

    if (ngx_worker == 0) {
        fw->refresh.handler = ngx_http_mcp_fleet_refresh;
        fw->refresh.log = cycle->log;
        fw->refresh.data = fcf;
        fw->refresh.cancelable = 1;

        ngx_add_timer(&fw->refresh, fw->period);
    }

    return ngx_http_mcp_redis_start(cycle, &fcf->redis_host, fcf->redis_port,
                                    fcf->timeout, ngx_http_mcp_fleet_walk);
}


static void
ngx_http_mcp_fleet_exit_process(ngx_cycle_t *cycle)
{
    if (ngx_http_mcp_fleet_worker.conf == NULL) {
        return;
    }

    if (ngx_http_mcp_fleet_worker.refresh.timer_set) {
        ngx_del_timer(&ngx_http_mcp_fleet_worker.refresh);
    }

    ngx_http_mcp_redis_stop();
}


static ngx_int_t
ngx_http_mcp_fleet_owner_variable(ngx_http_request_t *r,
    ngx_http_variable_value_t *v, uintptr_t data)
{
    /* set by the lookup before the forward; otherwise nothing */
    v->not_found = 1;

    return NGX_OK;
}


/*
 * The HTTP edge: a POST, GET or DELETE of a built-in endpoint, before
 * it touches its session.  NGX_DECLINED: go on here; NGX_DONE: the
 * request waits for Redis; else the value of a refusal already sent.
 */

ngx_int_t
ngx_http_mcp_fleet_route(ngx_http_request_t *r, ngx_http_mcp_loc_conf_t *mlcf)
{
    size_t                      len;
    u_char                      key[NGX_HTTP_MCP_FLEET_KEY_LEN];
    ngx_str_t                   id;
    ngx_uint_t                  task;
    const char                 *argv[2];
    size_t                      argvlen[2];
    ngx_table_elt_t            *h;
    ngx_http_mcp_ctx_t         *ctx;
    ngx_http_mcp_fleet_op_t    *op;
    ngx_http_mcp_fleet_ctx_t   *fctx;
    ngx_http_mcp_fleet_conf_t  *fcf;

    fcf = ngx_http_get_module_main_conf(r, ngx_http_mcp_fleet_module);

    if (!fcf->enabled || mlcf->zone == NULL) {
        return NGX_DECLINED;
    }

    fctx = ngx_http_get_module_ctx(r, ngx_http_mcp_fleet_module);

    if (fctx != NULL) {
        /* the phases run again after the lookup: go on here */
        return NGX_DECLINED;
    }

    ctx = ngx_http_get_module_ctx(r, ngx_http_mcp_module);

    if (r->method == NGX_HTTP_POST && ctx != NULL && ctx->stateless) {

        /* 2026-07-28: no session, but maybe a task another node holds */
        if (ngx_http_mcp_fleet_task_named(ctx, mlcf->zone, &id) != NGX_OK) {
            return NGX_DECLINED;
        }

        task = 1;

    } else {
        h = ngx_http_mcp_header_in(r, "mcp-session-id",
                                   sizeof("mcp-session-id") - 1);

        if (h == NULL
            || ngx_http_mcp_header_in_after(r, h, "mcp-session-id",
                                            sizeof("mcp-session-id") - 1)
               != NULL)
        {
            /* none, or two: refused here, not forwarded by the first */
            return NGX_DECLINED;
        }

        id = h->value;

        /* no id of this module's: nobody's, answered here (404) */
        if (id.len != NGX_HTTP_MCP_SESSION_ID_LEN
            || ngx_http_mcp_session_held(mlcf->zone, &id) == NGX_OK)
        {
            return NGX_DECLINED;
        }

        task = 0;
    }

    fctx = ngx_pcalloc(r->pool, sizeof(ngx_http_mcp_fleet_ctx_t));
    if (fctx == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    fctx->id = id;
    fctx->asked = 1;
    fctx->task = task;
    ngx_http_set_ctx(r, fctx, ngx_http_mcp_fleet_module);

    if (ngx_http_mcp_header_in(r, "mcp-fleet-hop",
                               sizeof("mcp-fleet-hop") - 1)
        != NULL)
    {
        /* forwarded here: this node answers, and a key naming it goes */
        ngx_log_debug0(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                       "mcp fleet: forwarded, not held here");

        ngx_http_mcp_fleet_release(&id, task);
        return NGX_DECLINED;
    }

    if (!ngx_http_mcp_redis_ready()) {
        return ngx_http_mcp_fleet_unavailable(r, NULL);
    }

    op = ngx_http_mcp_fleet_op(r);
    if (op == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    len = task ? ngx_http_mcp_fleet_task_key(key, id.data)
               : ngx_http_mcp_fleet_key(key, &id);

    argv[0] = "GET";
    argvlen[0] = 3;
    argv[1] = (const char *) key;
    argvlen[1] = len;

    if (ngx_http_mcp_redis_command(ngx_http_mcp_fleet_owner, op, 2, argv,
                                   argvlen)
        != NGX_OK)
    {
        ngx_http_mcp_fleet_op_done(op);
        return ngx_http_mcp_fleet_unavailable(r, NULL);
    }

    ngx_log_debug0(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "mcp fleet: asking who owns the session or task");

    r->main->count++;

    return NGX_DONE;
}


static void
ngx_http_mcp_fleet_owner(void *data, ngx_int_t rc, ngx_str_t *value)
{
    ngx_connection_t           *c;
    ngx_http_request_t         *r;
    ngx_http_mcp_fleet_op_t    *op = data;
    ngx_http_mcp_fleet_ctx_t   *fctx;
    ngx_http_mcp_fleet_conf_t  *fcf;

    r = op->request;
    ngx_http_mcp_fleet_op_done(op);

    if (r == NULL) {
        return;
    }

    c = r->connection;
    fcf = ngx_http_get_module_main_conf(r, ngx_http_mcp_fleet_module);

    if (rc != NGX_OK) {
        ngx_http_finalize_request(r, ngx_http_mcp_fleet_unavailable(r, NULL));

    } else if (value->data != NULL
               && !(value->len == fcf->node.len
                    && ngx_memcmp(value->data, fcf->node.data, value->len)
                       == 0))
    {
        ngx_http_finalize_request(r, ngx_http_mcp_fleet_forward(r, value));

    } else {
        /* unknown, or a stale key naming this node: answered here */
        ngx_log_debug1(NGX_LOG_DEBUG_HTTP, c->log, 0,
                       "mcp fleet: %s here",
                       value->data ? "stale" : "unknown");

        fctx = ngx_http_get_module_ctx(r, ngx_http_mcp_fleet_module);

        if (value->data != NULL) {
            ngx_http_mcp_fleet_release(&fctx->id, fctx->task);
        }

        r->write_event_handler = ngx_http_core_run_phases;
        ngx_http_core_run_phases(r);
    }

    ngx_http_run_posted_requests(c);
}


/* the whole request goes to its session's owner, through forward= */

static ngx_int_t
ngx_http_mcp_fleet_forward(ngx_http_request_t *r, ngx_str_t *owner)
{
    ngx_table_elt_t            *h;
    ngx_pool_cleanup_t         *cln;
    ngx_http_mcp_fleet_ctx_t   *fctx, *saved;
    ngx_http_variable_value_t  *v;
    ngx_http_mcp_fleet_conf_t  *fcf;

    fcf = ngx_http_get_module_main_conf(r, ngx_http_mcp_fleet_module);

    if (!ngx_http_mcp_fleet_name_ok(owner)) {
        ngx_log_error(NGX_LOG_ERR, r->connection->log, 0,
                      "mcp_fleet: redis names an owner that is not a node "
                      "name: not forwarded");
        return ngx_http_mcp_fleet_unavailable(r, NULL);
    }

    v = &r->variables[fcf->owner_index];

    v->data = ngx_pnalloc(r->pool, owner->len);
    if (v->data == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    ngx_memcpy(v->data, owner->data, owner->len);
    v->len = owner->len;
    v->valid = 1;
    v->no_cacheable = 0;
    v->not_found = 0;

    /* the owner answers, whatever Redis says there */
    h = ngx_list_push(&r->headers_in.headers);
    if (h == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    h->hash = 1;
#if (nginx_version >= 1023000)
    h->next = NULL;
#endif
    ngx_str_set(&h->key, "Mcp-Fleet-Hop");
    ngx_str_set(&h->value, "1");
    h->lowcase_key = (u_char *) "mcp-fleet-hop";

    cln = ngx_pool_cleanup_add(r->pool, sizeof(ngx_http_mcp_fleet_ctx_t));
    if (cln == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    fctx = ngx_http_get_module_ctx(r, ngx_http_mcp_fleet_module);

    saved = cln->data;
    *saved = *fctx;
    saved->ctx = ngx_http_get_module_ctx(r, ngx_http_mcp_module);

    cln->handler = ngx_http_mcp_fleet_saved_cleanup;

    ngx_log_debug1(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "mcp fleet: forwarding to \"%V\"", owner);

    (void) ngx_http_named_location(r, &fcf->forward);

    return NGX_DONE;
}


/*
 * The request is being forwarded to its session's owner ($mcp_fleet_owner
 * is set only then, and survives the redirect): nginx's error page for
 * it becomes a JSON-RPC error too.
 */

ngx_uint_t
ngx_http_mcp_fleet_forwarded(ngx_http_request_t *r)
{
    ngx_http_variable_value_t  *v;
    ngx_http_mcp_fleet_conf_t  *fcf;

    fcf = ngx_http_get_module_main_conf(r, ngx_http_mcp_fleet_module);

    if (fcf == NULL || !fcf->enabled || r->variables == NULL) {
        return 0;
    }

    v = &r->variables[fcf->owner_index];

    return v->valid && !v->not_found && v->len;
}


/*
 * A forwarded request's context of before the redirect (which empties
 * the modules' contexts), for the JSON-RPC error of a failed forward:
 * the message's id, and whether the forward was for a 2026 task.  It
 * hangs off the request's pool as a cleanup that does nothing.
 */

ngx_http_mcp_ctx_t *
ngx_http_mcp_fleet_saved(ngx_http_request_t *r, ngx_uint_t *task)
{
    ngx_pool_cleanup_t        *cln;
    ngx_http_mcp_fleet_ctx_t  *saved;

    if (!ngx_http_mcp_fleet_forwarded(r)) {
        return NULL;
    }

    for (cln = r->pool->cleanup; cln != NULL; cln = cln->next) {
        if (cln->handler == ngx_http_mcp_fleet_saved_cleanup) {
            saved = cln->data;
            *task = saved->task;
            return saved->ctx;
        }
    }

    return NULL;
}


static void
ngx_http_mcp_fleet_saved_cleanup(void *data)
{
    /* a mark only: the pool frees the data */
}


/*
 * A forward's 502 before anything reached the owner (nobody listens
 * there): the session went with its node.  Once the request was sent,
 * the owner may have it: the 502 stays (a kept connection that the
 * owner closed in a reload, say).
 */

ngx_uint_t
ngx_http_mcp_fleet_owner_gone(ngx_http_request_t *r)
{
    return ngx_http_mcp_fleet_forwarded(r)
           && r->upstream != NULL && !r->upstream->request_sent;
}


static ngx_int_t
ngx_http_mcp_fleet_unavailable(ngx_http_request_t *r, cJSON *id)
{
    ngx_str_t            retry = ngx_string("1");
    ngx_http_mcp_ctx_t  *ctx;
    ngx_http_mcp_msg_t  *msg;

    ctx = ngx_http_get_module_ctx(r, ngx_http_mcp_module);

    /* a POST of one request: the error answers it by its id */
    if (id == NULL && ctx != NULL && ctx->parsed && !ctx->batch
        && ctx->msgs.nelts == 1)
    {
        msg = ctx->msgs.elts;

        if (msg[0].type == NGX_HTTP_MCP_MSG_REQUEST) {
            id = msg[0].id;
        }
    }

    if (ngx_http_mcp_header_out(r, "Retry-After", &retry) != NGX_OK) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    return ngx_http_mcp_send_error(r, NGX_HTTP_SERVICE_UNAVAILABLE, id,
                                   NGX_HTTP_MCP_SERVER_ERROR,
                                   "Service unavailable: the session "
                                   "registry (Redis) is unreachable");
}


/*
 * initialize, before it makes a session: NGX_OK when the session can be
 * registered, else the 503 is sent and *rc is its value.
 */

ngx_int_t
ngx_http_mcp_fleet_ready(ngx_http_mcp_ctx_t *ctx, cJSON *id, ngx_int_t *rc)
{
    ngx_http_mcp_fleet_conf_t  *fcf;

    fcf = ngx_http_get_module_main_conf(ctx->request,
                                        ngx_http_mcp_fleet_module);

    if (!fcf->enabled || ngx_http_mcp_redis_ready()) {
        return NGX_OK;
    }

    *rc = ngx_http_mcp_fleet_unavailable(ctx->request, id);

    return NGX_DECLINED;
}


/*
 * A new session of ctx's initialize: its key is set, and the reply
 * waits for Redis's answer (NGX_AGAIN; the caller counts it as a call
 * pending).  A connection lost meanwhile: the session stays, and the
 * walk on reconnect registers it.
 */

ngx_int_t
ngx_http_mcp_fleet_register(ngx_http_mcp_ctx_t *ctx)
{
    ngx_http_mcp_fleet_op_t    *op;
    ngx_http_mcp_fleet_conf_t  *fcf;

    fcf = ngx_http_get_module_main_conf(ctx->request,
                                        ngx_http_mcp_fleet_module);

    if (!fcf->enabled || ctx->new_session.len == 0) {
        return NGX_OK;
    }

    op = ngx_http_mcp_fleet_op(ctx->request);
    if (op == NULL) {
        return NGX_ERROR;
    }

    op->ctx = ctx;

    if (ngx_http_mcp_fleet_set(&ctx->new_session, op,
                               ngx_http_mcp_fleet_registered)
        != NGX_OK)
    {
        ngx_http_mcp_fleet_op_done(op);
        return NGX_OK;
    }

    return NGX_AGAIN;
}


/* DELETE: the owner's key goes */

void
ngx_http_mcp_fleet_forget(ngx_http_request_t *r, ngx_str_t *sid)
{
    ngx_http_mcp_fleet_conf_t  *fcf;

    fcf = ngx_http_get_module_main_conf(r, ngx_http_mcp_fleet_module);

    if (fcf->enabled) {
        ngx_http_mcp_fleet_release(sid, 0);
    }
}


/*
 * Deletes the session's (or the 2026 task's) key if it names this node,
 * atomically; not while a zone of this node holds it (a request may
 * name it at a location of another zone).
 */

static void
ngx_http_mcp_fleet_release(ngx_str_t *id, ngx_uint_t task)
{
    ngx_int_t        rc;
    u_char           key[NGX_HTTP_MCP_FLEET_KEY_LEN];
    ngx_uint_t       i;
    const char      *argv[5];
    size_t           argvlen[5];
    ngx_shm_zone_t  *zone;

    static const char  script[] =
        "if redis.call('get', KEYS[1]) == ARGV[1] then "
        "return redis.call('del', KEYS[1]) end return 0";

    for (i = 0; (zone = ngx_http_mcp_fleet_zone(i)) != NULL; i++) {
        rc = task ? ngx_http_mcp_session_task_held(zone, id->data)
                  : ngx_http_mcp_session_held(zone, id);

        if (rc == NGX_OK) {
            return;
        }
    }

    argv[0] = "EVAL";
    argvlen[0] = 4;
    argv[1] = script;
    argvlen[1] = sizeof(script) - 1;
    argv[2] = "1";
    argvlen[2] = 1;
    argv[3] = (const char *) key;
    argvlen[3] = task ? ngx_http_mcp_fleet_task_key(key, id->data)
                      : ngx_http_mcp_fleet_key(key, id);
    argv[4] = (const char *) ngx_http_mcp_fleet_worker.conf->node.data;
    argvlen[4] = ngx_http_mcp_fleet_worker.conf->node.len;

    (void) ngx_http_mcp_redis_command(ngx_http_mcp_fleet_ignore, NULL, 5,
                                      argv, argvlen);
}


/* the session's key: a ttl beyond the idle timeout and a refresh */

static ngx_int_t
ngx_http_mcp_fleet_set(ngx_str_t *sid, void *data,
    ngx_http_mcp_redis_pt handler)
{
    u_char  key[NGX_HTTP_MCP_FLEET_KEY_LEN];

    return ngx_http_mcp_fleet_own(key, ngx_http_mcp_fleet_key(key, sid),
                                  ngx_http_mcp_fleet_worker.ttl + 1000, data,
                                  handler);
}


static size_t
ngx_http_mcp_fleet_key(u_char *buf, ngx_str_t *sid)
{
    size_t      len;
    ngx_str_t  *prefix;

    /* route() and the store let no other length through */
    prefix = &ngx_http_mcp_fleet_worker.conf->prefix;
    len = ngx_min(sid->len, NGX_HTTP_MCP_SESSION_ID_LEN);

    ngx_memcpy(buf, prefix->data, prefix->len);
    ngx_memcpy(buf + prefix->len, sid->data, len);

    return prefix->len + len;
}


/* the node says again that it owns each of its sessions */

static void
ngx_http_mcp_fleet_walk(void)
{
    ngx_str_t         sid;
    ngx_uint_t        i, j;
    ngx_msec_t        timeout;
    ngx_pool_t       *pool;
    ngx_array_t       ids;
    ngx_shm_zone_t   *zone;

    pool = ngx_create_pool(4096, ngx_cycle->log);
    if (pool == NULL) {
        return;
    }

    for (i = 0; (zone = ngx_http_mcp_fleet_zone(i)) != NULL; i++) {

        if (ngx_http_mcp_session_ids(zone, pool, &ids, &timeout) != NGX_OK) {
            break;
        }

        ngx_log_debug1(NGX_LOG_DEBUG_EVENT, ngx_cycle->log, 0,
                       "mcp fleet: registering %ui sessions", ids.nelts);

        for (j = 0; j < ids.nelts; j++) {
            sid.data = (u_char *) ids.elts + j * NGX_HTTP_MCP_SESSION_ID_LEN;
            sid.len = NGX_HTTP_MCP_SESSION_ID_LEN;

            if (ngx_http_mcp_fleet_set(&sid, NULL, ngx_http_mcp_fleet_ignore)
                != NGX_OK)
            {
                break;
            }
        }

        ngx_http_mcp_fleet_task_walk(zone, pool);
    }

    ngx_destroy_pool(pool);
}


/* the node's session zones: mcp_session_zone's, then the default one */

static ngx_shm_zone_t *
ngx_http_mcp_fleet_zone(ngx_uint_t i)
{
    ngx_http_mcp_main_conf_t  *mmcf;

    mmcf = ngx_http_mcp_fleet_worker.main;

    if (mmcf == NULL) {
        return NULL;
    }

    if (i < mmcf->store.zones.nelts) {
        return ((ngx_shm_zone_t **) mmcf->store.zones.elts)[i];
    }

    return (i == mmcf->store.zones.nelts) ? mmcf->store.default_zone : NULL;
}


static void
ngx_http_mcp_fleet_refresh(ngx_event_t *ev)
{
    if (ngx_exiting || ngx_quit || ngx_terminate) {
        return;
    }

    if (ngx_http_mcp_redis_ready()) {
        ngx_http_mcp_fleet_walk();
    }

    ngx_add_timer(ev, ngx_http_mcp_fleet_worker.period);
}
