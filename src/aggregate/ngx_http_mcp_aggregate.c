
/*
 * mcp_backend: one MCP endpoint over several MCP servers.
 *
 *     location /mcp {
 *         mcp_backend github /_mcp/github;
 *         mcp_backend files  /_mcp/files prefix=fs;
 *     }
 *
 * The location is an MCP server of this module (sessions, stateless
 * requests, authorization, tool policy are its own); dispatch hands it
 * the methods it routes (ngx_http_mcp_loc_conf_t's aggregate hook):
 *
 *   - tools/list, prompts/list: every backend's, each name prefixed
 *     with the backend's prefix and the separator ("github__search"),
 *     but for the one backend whose prefix may be empty ("prefix="),
 *     whose names are its own; the tool policy and the scopes see the
 *     names the client sees;
 *   - resources/list, resources/templates/list: every backend's, URIs
 *     as they are;
 *   - a list's page holds the pages of every backend asked; its cursor
 *     names the backends that have more and their own cursors;
 *   - tools/call, prompts/get: to the backend whose prefix the name
 *     has, without it; resources/read: to every backend, the first
 *     that has the URI answers (in the configuration's order);
 *   - completion/complete: a prompt's as prompts/get, a template's as
 *     resources/read;
 *   - resources/subscribe, unsubscribe: to the backend resources/read
 *     would answer from; subscriptions/listen: see _subscribe.c;
 *   - a 2025-11-25 client's tasks: a task's id is the backend's with
 *     its prefix, tasks/get, result, cancel go by it, tasks/list merges;
 *     a 2026-07-28 client's (the extension): see _task.c;
 *   - initialize, server/discover: the capabilities are the union of
 *     the backends' (tools, resources, prompts, completions, tasks).
 *
 * A backend that fails is left out of lists; its tools answer a tool
 * error that names it (ngx_http_mcp_aggregate_leg.c).
 */


#include "ngx_http_mcp_aggregate.h"
#include "ngx_http_mcp_json.h"
#include "ngx_http_mcp_call.h"
#include "ngx_http_mcp_core.h"
#include "ngx_http_mcp_auth.h"
#include "ngx_http_mcp_http.h"
#include "ngx_http_mcp_edge.h"


#define NGX_HTTP_MCP_AGGREGATE_CURSOR  8192    /* a client's cursor, at most */
#define NGX_HTTP_MCP_AGGREGATE_NAME    1024    /* a prefixed name, at most */


static ngx_int_t ngx_http_mcp_aggregate_postconfiguration(ngx_conf_t *cf);
static void *ngx_http_mcp_aggregate_create_loc_conf(ngx_conf_t *cf);
static char *ngx_http_mcp_aggregate_merge_loc_conf(ngx_conf_t *cf,
    void *parent, void *child);
static ngx_int_t ngx_http_mcp_aggregate_merge_separator(ngx_conf_t *cf,
    ngx_http_mcp_aggregate_loc_conf_t *conf);
static ngx_int_t ngx_http_mcp_aggregate_merge_prefixes(ngx_conf_t *cf,
    ngx_http_mcp_aggregate_loc_conf_t *conf);
static ngx_int_t ngx_http_mcp_aggregate_merge_distinct(ngx_conf_t *cf,
    ngx_http_mcp_aggregate_loc_conf_t *conf);
static char *ngx_http_mcp_aggregate_backend(ngx_conf_t *cf,
    ngx_command_t *cmd, void *conf);
static void ngx_http_mcp_aggregate_conf_cleanup(void *data);
static ngx_uint_t ngx_http_mcp_aggregate_name_ok(ngx_str_t *s);
static ngx_int_t ngx_http_mcp_aggregate_handler(ngx_http_mcp_call_t *call,
    ngx_http_mcp_handler_pt next);
static const char *ngx_http_mcp_aggregate_key(ngx_str_t *method);
static ngx_int_t ngx_http_mcp_aggregate_list(ngx_http_mcp_aggregate_op_t *op);
static ngx_int_t ngx_http_mcp_aggregate_route(ngx_http_mcp_aggregate_op_t *op);
static ngx_int_t ngx_http_mcp_aggregate_complete(ngx_http_mcp_call_t *call,
    ngx_http_mcp_aggregate_loc_conf_t *alcf);
static void ngx_http_mcp_aggregate_owned(ngx_http_mcp_aggregate_op_t *op);
static ngx_int_t ngx_http_mcp_aggregate_task(ngx_http_mcp_call_t *call,
    ngx_http_mcp_aggregate_loc_conf_t *alcf);
static ngx_int_t ngx_http_mcp_aggregate_task_ids(ngx_pool_t *pool,
    ngx_http_mcp_backend_t *b, cJSON *result);
static void ngx_http_mcp_aggregate_opened_all(
    ngx_http_mcp_aggregate_op_t *op);
static ngx_int_t ngx_http_mcp_aggregate_capabilities(
    ngx_http_mcp_call_t *call, cJSON *result);
static void ngx_http_mcp_aggregate_listed(ngx_http_mcp_aggregate_op_t *op);
static ngx_int_t ngx_http_mcp_aggregate_merge(ngx_http_mcp_aggregate_op_t *op,
    ngx_http_mcp_aggregate_leg_t *leg, const char *key, cJSON *out,
    cJSON *next);
static void ngx_http_mcp_aggregate_routed(ngx_http_mcp_aggregate_op_t *op);
static void ngx_http_mcp_aggregate_read(ngx_http_mcp_aggregate_op_t *op);


static ngx_command_t  ngx_http_mcp_aggregate_commands[] = {

    { ngx_string("mcp_backend"),
      NGX_HTTP_LOC_CONF|NGX_CONF_TAKE23,
      ngx_http_mcp_aggregate_backend,
      NGX_HTTP_LOC_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("mcp_backend_separator"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_str_slot,
      NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(ngx_http_mcp_aggregate_loc_conf_t, separator),
      NULL },

    { ngx_string("mcp_backend_timeout"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_msec_slot,
      NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(ngx_http_mcp_aggregate_loc_conf_t, timeout),
      NULL },

    { ngx_string("mcp_backend_max_time"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_msec_slot,
      NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(ngx_http_mcp_aggregate_loc_conf_t, max_time),
      NULL },

    { ngx_string("mcp_backend_retry"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_msec_slot,
      NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(ngx_http_mcp_aggregate_loc_conf_t, retry),
      NULL },

    { ngx_string("mcp_backend_max_size"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_size_slot,
      NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(ngx_http_mcp_aggregate_loc_conf_t, max_size),
      NULL },

      ngx_null_command
};


static ngx_http_module_t  ngx_http_mcp_aggregate_module_ctx = {
    NULL,                                  /* preconfiguration */
    ngx_http_mcp_aggregate_postconfiguration, /* postconfiguration */

    NULL,                                  /* create main configuration */
    NULL,                                  /* init main configuration */

    NULL,                                  /* create server configuration */
    NULL,                                  /* merge server configuration */

    ngx_http_mcp_aggregate_create_loc_conf, /* create location configuration */
    ngx_http_mcp_aggregate_merge_loc_conf  /* merge location configuration */
};


ngx_module_t  ngx_http_mcp_aggregate_module = {
    NGX_MODULE_V1,
    &ngx_http_mcp_aggregate_module_ctx,    /* module context */
    ngx_http_mcp_aggregate_commands,       /* module directives */
    NGX_HTTP_MODULE,                       /* module type */
    NULL,                                  /* init master */
    NULL,                                  /* init module */
    NULL,                                  /* init process */
    NULL,                                  /* init thread */
    NULL,                                  /* exit thread */
    NULL,                                  /* exit process */
    NULL,                                  /* exit master */
    NGX_MODULE_V1_PADDING
};


/* the hooks of the client's end (_end.c) and of its GET streams (_listen.c) */

static ngx_int_t
ngx_http_mcp_aggregate_postconfiguration(ngx_conf_t *cf)
{
    if (ngx_http_mcp_aggregate_init(cf) != NGX_OK) {
        return NGX_ERROR;
    }

    return ngx_http_mcp_aggregate_listen_init(cf);
}


static void *
ngx_http_mcp_aggregate_create_loc_conf(ngx_conf_t *cf)
{
    ngx_http_mcp_aggregate_loc_conf_t  *conf;

    conf = ngx_pcalloc(cf->pool, sizeof(ngx_http_mcp_aggregate_loc_conf_t));
    if (conf == NULL) {
        return NULL;
    }

    /*
     * set by ngx_pcalloc():
     *
     *     conf->backends = NULL;
     *     conf->separator = { 0, NULL };
     */

    conf->timeout = NGX_CONF_UNSET_MSEC;
    conf->max_time = NGX_CONF_UNSET_MSEC;
    conf->retry = NGX_CONF_UNSET_MSEC;
    conf->max_size = NGX_CONF_UNSET_SIZE;

    return conf;
}


static char *
ngx_http_mcp_aggregate_merge_loc_conf(ngx_conf_t *cf, void *parent,
    void *child)
{
    ngx_http_mcp_aggregate_loc_conf_t *prev = parent;
    ngx_http_mcp_aggregate_loc_conf_t *conf = child;

    ngx_pool_cleanup_t       *cln;
    ngx_http_mcp_loc_conf_t  *mlcf;

    ngx_conf_merge_str_value(conf->separator, prev->separator, "__");
    ngx_conf_merge_msec_value(conf->timeout, prev->timeout, 10000);
    ngx_conf_merge_msec_value(conf->max_time, prev->max_time,
                              NGX_HTTP_MCP_AGGREGATE_MAX_TIME);
    ngx_conf_merge_msec_value(conf->retry, prev->retry, 10000);

    if (conf->max_time == 0) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "\"mcp_backend_max_time\" "
                           "must be more than 0");
        return NGX_CONF_ERROR;
    }

    /*
     * Below mcp_backend_timeout it is refused, but for the default: a
     * configuration that only sets a longer timeout (written before the
     * maximum was) keeps working, its maximum then the timeout.
     */
    if (conf->max_time < conf->timeout
        && (conf->max_time != prev->max_time
            || conf->max_time != NGX_HTTP_MCP_AGGREGATE_MAX_TIME))
    {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "\"mcp_backend_max_time\" "
                           "%M is less than \"mcp_backend_timeout\" %M",
                           conf->max_time, conf->timeout);
        return NGX_CONF_ERROR;
    }
    ngx_conf_merge_size_value(conf->max_size, prev->max_size, 1024 * 1024);

    /* the backends are the location's own: not inherited */

    if (ngx_http_mcp_aggregate_merge_separator(cf, conf) != NGX_OK) {
        return NGX_CONF_ERROR;
    }

    if (conf->backends == NULL) {
        return NGX_CONF_OK;
    }

    mlcf = ngx_http_conf_get_module_loc_conf(cf, ngx_http_mcp_module);

    if (mlcf->pass) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "\"mcp_backend\" is for a "
                           "location without \"mcp_pass\"");
        return NGX_CONF_ERROR;
    }

    /* what the workers learn of the backends goes with the configuration */

    cln = ngx_pool_cleanup_add(cf->pool, 0);
    if (cln == NULL) {
        return NGX_CONF_ERROR;
    }

    cln->handler = ngx_http_mcp_aggregate_conf_cleanup;
    cln->data = conf->backends;

    if (ngx_http_mcp_aggregate_merge_prefixes(cf, conf) != NGX_OK
        || ngx_http_mcp_aggregate_merge_distinct(cf, conf) != NGX_OK)
    {
        return NGX_CONF_ERROR;
    }

    return NGX_CONF_OK;
}


static ngx_int_t
ngx_http_mcp_aggregate_merge_separator(ngx_conf_t *cf,
    ngx_http_mcp_aggregate_loc_conf_t *conf)
{
    ngx_uint_t  i;

    if (conf->separator.len == 0 || conf->separator.len > 16) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "\"mcp_backend_separator\" "
                           "must be 1 to 16 characters");
        return NGX_ERROR;
    }

    for (i = 0; i < conf->separator.len; i++) {
        if (conf->separator.data[i] <= ' ' || conf->separator.data[i] >= 0x7f)
        {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "\"mcp_backend_"
                               "separator\" \"%V\" has a space or a "
                               "character that is not ASCII",
                               &conf->separator);
            return NGX_ERROR;
        }
    }

    return NGX_OK;
}


/* a backend's prefix and the separator: what its tools' names begin with */

static ngx_int_t
ngx_http_mcp_aggregate_merge_prefixes(ngx_conf_t *cf,
    ngx_http_mcp_aggregate_loc_conf_t *conf)
{
    u_char                  *p;
    ngx_uint_t               i;
    ngx_http_mcp_backend_t  *b;

    b = conf->backends->elts;

    for (i = 0; i < conf->backends->nelts; i++) {

        if (b[i].prefix.len == 0) {
            /* its names are the backend's own */
            continue;
        }

        /* a prefix with the separator in it would make names ambiguous */

        if (ngx_strnstr(b[i].prefix.data, (char *) conf->separator.data,
                        b[i].prefix.len)
            != NULL)
        {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "the prefix \"%V\" of "
                               "mcp_backend \"%V\" has the separator "
                               "\"%V\" in it", &b[i].prefix, &b[i].name,
                               &conf->separator);
            return NGX_ERROR;
        }

        p = ngx_pnalloc(cf->pool, b[i].prefix.len + conf->separator.len);
        if (p == NULL) {
            return NGX_ERROR;
        }

        ngx_memcpy(p, b[i].prefix.data, b[i].prefix.len);
        ngx_memcpy(p + b[i].prefix.len, conf->separator.data,
                   conf->separator.len);

        b[i].prefix.data = p;
        b[i].prefix.len += conf->separator.len;
    }

    return NGX_OK;
}


/*
 * "a__" begins "a___": a tool "_x" of backend "a" and a tool "x" of
 * backend "a_" would both be "a___x", and a call could only go to one.
 * The empty prefix begins every name: the backend that has it gets the
 * names no other prefix claims (ngx_http_mcp_aggregate_owner()).
 */

static ngx_int_t
ngx_http_mcp_aggregate_merge_distinct(ngx_conf_t *cf,
    ngx_http_mcp_aggregate_loc_conf_t *conf)
{
    ngx_uint_t               i, k;
    ngx_http_mcp_backend_t  *b;

    b = conf->backends->elts;

    for (i = 0; i < conf->backends->nelts; i++) {
        for (k = 0; k < conf->backends->nelts; k++) {
            if (k != i && b[i].prefix.len != 0
                && b[i].prefix.len <= b[k].prefix.len
                && ngx_strncmp(b[i].prefix.data, b[k].prefix.data,
                               b[i].prefix.len) == 0)
            {
                ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "the names of "
                                   "mcp_backend \"%V\" (\"%V\") begin with "
                                   "those of \"%V\" (\"%V\"): one name could "
                                   "be a tool of both", &b[k].name,
                                   &b[k].prefix, &b[i].name, &b[i].prefix);
                return NGX_ERROR;
            }
        }
    }

    return NGX_OK;
}


static void
ngx_http_mcp_aggregate_conf_cleanup(void *data)
{
    ngx_array_t *backends = data;

    ngx_uint_t               i;
    ngx_http_mcp_backend_t  *b;

    b = backends->elts;

    for (i = 0; i < backends->nelts; i++) {
        cJSON_Delete(b[i].caps);
        b[i].caps = NULL;
    }
}


/* mcp_backend NAME URI [prefix=PREFIX] */

static char *
ngx_http_mcp_aggregate_backend(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf)
{
    ngx_http_mcp_aggregate_loc_conf_t *alcf = conf;

    ngx_str_t                 *value, prefix;
    ngx_uint_t                 i;
    ngx_http_mcp_backend_t    *b;
    ngx_http_mcp_loc_conf_t   *mlcf;
    ngx_http_core_loc_conf_t  *clcf;

    value = cf->args->elts;

    if (!ngx_http_mcp_aggregate_name_ok(&value[1])) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "invalid mcp_backend name "
                           "\"%V\": 1 to 64 of A-Z a-z 0-9 - _", &value[1]);
        return NGX_CONF_ERROR;
    }

    if (value[2].len == 0 || value[2].data[0] != '/') {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "mcp_backend \"%V\": \"%V\" "
                           "is no location URI (it starts with \"/\")",
                           &value[1], &value[2]);
        return NGX_CONF_ERROR;
    }

    prefix = value[1];

    if (cf->args->nelts == 4) {
        if (value[3].len < 7
            || ngx_strncmp(value[3].data, "prefix=", 7) != 0)
        {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "invalid parameter "
                               "\"%V\" of mcp_backend \"%V\"", &value[3],
                               &value[1]);
            return NGX_CONF_ERROR;
        }

        prefix.data = value[3].data + 7;
        prefix.len = value[3].len - 7;

        /* "prefix=": the tools keep their names */
        if (prefix.len && !ngx_http_mcp_aggregate_name_ok(&prefix)) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "invalid prefix \"%V\" "
                               "of mcp_backend \"%V\": empty, or 1 to 64 "
                               "of A-Z a-z 0-9 - _", &prefix, &value[1]);
            return NGX_CONF_ERROR;
        }
    }

    if (alcf->backends == NULL) {
        alcf->backends = ngx_array_create(cf->pool, 4,
                                          sizeof(ngx_http_mcp_backend_t));
        if (alcf->backends == NULL) {
            return NGX_CONF_ERROR;
        }
    }

    b = alcf->backends->elts;

    for (i = 0; i < alcf->backends->nelts; i++) {
        if (prefix.len == 0 && b[i].prefix.len == 0) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "mcp_backend \"%V\": "
                               "\"%V\" has the empty prefix already, and "
                               "a location has at most one",
                               &value[1], &b[i].name);
            return NGX_CONF_ERROR;
        }

        if ((b[i].name.len == value[1].len
             && ngx_strncmp(b[i].name.data, value[1].data, value[1].len) == 0)
            || (b[i].prefix.len == prefix.len
                && ngx_strncmp(b[i].prefix.data, prefix.data, prefix.len)
                   == 0))
        {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "mcp_backend \"%V\": "
                               "its name or prefix \"%V\" is taken",
                               &value[1], &prefix);
            return NGX_CONF_ERROR;
        }
    }

    if (alcf->backends->nelts == NGX_HTTP_MCP_AGGREGATE_MAX) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "more than %d mcp_backend "
                           "in a location", NGX_HTTP_MCP_AGGREGATE_MAX);
        return NGX_CONF_ERROR;
    }

    b = ngx_array_push(alcf->backends);
    if (b == NULL) {
        return NGX_CONF_ERROR;
    }

    ngx_memzero(b, sizeof(ngx_http_mcp_backend_t));

    b->name = value[1];
    b->uri = value[2];
    b->prefix = prefix;
    b->index = alcf->backends->nelts - 1;

    /* the location is an MCP server of this module's, with the hook */

    mlcf = ngx_http_conf_get_module_loc_conf(cf, ngx_http_mcp_module);

    if (mlcf->pass) {
        return "is for a location without \"mcp_pass\"";
    }

    mlcf->enable = 1;
    mlcf->aggregate = ngx_http_mcp_aggregate_handler;

    clcf = ngx_http_conf_get_module_loc_conf(cf, ngx_http_core_module);
    clcf->handler = ngx_http_mcp_handler;

    return NGX_CONF_OK;
}


static ngx_uint_t
ngx_http_mcp_aggregate_name_ok(ngx_str_t *s)
{
    ngx_uint_t  i;

    if (s->len == 0 || s->len > 64) {
        return 0;
    }

    for (i = 0; i < s->len; i++) {
        if (!((s->data[i] >= 'a' && s->data[i] <= 'z')
              || (s->data[i] >= 'A' && s->data[i] <= 'Z')
              || (s->data[i] >= '0' && s->data[i] <= '9')
              || s->data[i] == '-' || s->data[i] == '_'))
        {
            return 0;
        }
    }

    return 1;
}


/*
 * The backend a tool's or prompt's name goes to: the one whose prefix
 * the name has, else the one with the empty prefix; nelts for none.
 * Prefixes are distinct (none begins another), so at most one matches.
 */

ngx_uint_t
ngx_http_mcp_aggregate_owner(ngx_http_mcp_aggregate_loc_conf_t *conf,
    const char *name)
{
    ngx_uint_t               i, n, bare;
    ngx_http_mcp_backend_t  *b;

    b = conf->backends->elts;
    n = conf->backends->nelts;
    bare = n;

    for (i = 0; i < n; i++) {
        if (b[i].prefix.len == 0) {
            bare = i;

        } else if (ngx_strncmp(name, b[i].prefix.data, b[i].prefix.len) == 0
                   && name[b[i].prefix.len] != '\0')
        {
            return i;
        }
    }

    return (name[0] != '\0') ? bare : n;
}


/* ---- the methods ---- */

static ngx_int_t
ngx_http_mcp_aggregate_handler(ngx_http_mcp_call_t *call,
    ngx_http_mcp_handler_pt next)
{
    ngx_str_t                          *method;
    ngx_uint_t                          i;
    ngx_http_mcp_aggregate_op_t        *op;
    ngx_http_mcp_aggregate_loc_conf_t  *alcf;

    alcf = ngx_http_mcp_call_loc_conf(call, &ngx_http_mcp_aggregate_module);
    method = ngx_http_mcp_call_method(call);

    if (ngx_http_mcp_call_http_request(call) == NULL) {
        /* no POST to hang the subrequests on (a task's later round) */
        ngx_http_mcp_call_error(call, NGX_HTTP_MCP_INTERNAL_ERROR,
                                "The backends can only be asked within "
                                "the HTTP request");
        return NGX_OK;
    }

    /* the DELETEs of ended listens' backend sessions go with it */
    ngx_http_mcp_aggregate_unpark(ngx_http_mcp_call_http_request(call));

    if (method->len == sizeof("subscriptions/listen") - 1
        && ngx_strncmp(method->data, "subscriptions/listen", method->len)
           == 0)
    {
        return ngx_http_mcp_aggregate_subscriptions(call, alcf);
    }

    if (next != NULL) {
        /* initialize, server/discover: every backend's session first */

        op = ngx_http_mcp_aggregate_op(call, alcf,
                                       ngx_http_mcp_aggregate_opened_all);
        if (op == NULL) {
            return NGX_ERROR;
        }

        op->next = next;
        op->opening = (method->len == sizeof("initialize") - 1);

        for (i = 0; i < alcf->backends->nelts; i++) {
            ngx_http_mcp_aggregate_ask(op, i, NULL, NULL);
        }

        ngx_http_mcp_aggregate_run(op);
        return NGX_OK;
    }

    if (ngx_http_mcp_aggregate_key(method) != NULL) {
        op = ngx_http_mcp_aggregate_op(call, alcf,
                                       ngx_http_mcp_aggregate_listed);
        if (op == NULL) {
            return NGX_ERROR;
        }

        return ngx_http_mcp_aggregate_list(op);
    }

    if ((method->len == sizeof("resources/read") - 1
         && ngx_strncmp(method->data, "resources/read", method->len) == 0)
        || (method->len >= sizeof("resources/subscribe") - 1
            && ngx_strncmp(method->data, "resources/", 10) == 0
            && ngx_strncmp(method->data + method->len - 9, "subscribe", 9)
               == 0))
    {
        /* a subscription: the read finds the backend that has the URI */
        op = ngx_http_mcp_aggregate_op(call, alcf,
                 (method->len == sizeof("resources/read") - 1)
                 ? ngx_http_mcp_aggregate_read
                 : ngx_http_mcp_aggregate_owned);
        if (op == NULL) {
            return NGX_ERROR;
        }

        return ngx_http_mcp_aggregate_route(op);
    }

    if (method->len == sizeof("completion/complete") - 1
        && ngx_strncmp(method->data, "completion/complete", method->len) == 0)
    {
        return ngx_http_mcp_aggregate_complete(call, alcf);
    }

    if (method->len > 6 && ngx_strncmp(method->data, "tasks/", 6) == 0) {
        if (ngx_http_mcp_call_client(call)->version
            >= NGX_HTTP_MCP_VSTATELESS)
        {
            /* the extension's: by the sealed id (_task.c) */
            return ngx_http_mcp_aggregate_task_method(call, alcf);
        }

        /* tasks/get, tasks/result, tasks/cancel: by the task id's prefix */
        return ngx_http_mcp_aggregate_task(call, alcf);
    }

    /* tools/call, prompts/get */

    op = ngx_http_mcp_aggregate_op(call, alcf,
                                   ngx_http_mcp_aggregate_routed);
    if (op == NULL) {
        return NGX_ERROR;
    }

    return ngx_http_mcp_aggregate_route(op);
}


/* what a list method's result holds its items in */

static const char *
ngx_http_mcp_aggregate_key(ngx_str_t *method)
{
    static struct {
        ngx_str_t    method;
        const char  *key;
    } lists[] = {
        { ngx_string("tools/list"), "tools" },
        { ngx_string("prompts/list"), "prompts" },
        { ngx_string("resources/list"), "resources" },
        { ngx_string("resources/templates/list"), "resourceTemplates" },
        { ngx_string("tasks/list"), "tasks" },
        { ngx_null_string, NULL }
    };

    ngx_uint_t  i;

    for (i = 0; lists[i].key; i++) {
        if (lists[i].method.len == method->len
            && ngx_strncmp(lists[i].method.data, method->data, method->len)
               == 0)
        {
            return lists[i].key;
        }
    }

    return NULL;
}


/*
 * A list: the first page asks every backend; a later one, the backends
 * its cursor names, each with its own cursor.  The cursor is base64url
 * of [[index, "backend's cursor"], ...]; a forged one can name only
 * backends of the location, and a backend judges its own cursor.
 */

static ngx_int_t
ngx_http_mcp_aggregate_list(ngx_http_mcp_aggregate_op_t *op)
{
    char        *method;
    cJSON       *cursor, *pairs, *pair, *index, *their, *params;
    ngx_str_t    src, dst, *m;
    ngx_uint_t   i, n;
    const char  *failure;

    m = ngx_http_mcp_call_method(op->call);

    method = ngx_pnalloc(ngx_http_mcp_call_pool(op->call), m->len + 1);
    if (method == NULL) {
        return NGX_ERROR;
    }

    (void) ngx_cpystrn((u_char *) method, m->data, m->len + 1);

    n = op->conf->backends->nelts;
    cursor = cJSON_GetObjectItemCaseSensitive(
                 ngx_http_mcp_call_params(op->call), "cursor");

    if (cursor == NULL || cJSON_IsNull(cursor)) {
        for (i = 0; i < n; i++) {
            ngx_http_mcp_aggregate_ask(op, i, method, NULL);
        }

        ngx_http_mcp_aggregate_run(op);
        return NGX_OK;
    }

    op->cursor = 1;
    pairs = NULL;

    if (!cJSON_IsString(cursor)) {
        goto invalid;
    }

    src.data = (u_char *) cursor->valuestring;
    src.len = ngx_strlen(cursor->valuestring);

    if (src.len == 0 || src.len > NGX_HTTP_MCP_AGGREGATE_CURSOR) {
        goto invalid;
    }

    dst.data = ngx_pnalloc(ngx_http_mcp_call_pool(op->call),
                           ngx_base64_decoded_length(src.len));
    if (dst.data == NULL) {
        return NGX_ERROR;
    }

    if (ngx_decode_base64url(&dst, &src) != NGX_OK) {
        goto invalid;
    }

    /* the client's text: the strict scan, as for any body it sends */
    if (ngx_http_mcp_json_parse(ngx_http_mcp_call_pool(op->call), dst.data,
                                dst.len, NULL, &pairs, &failure)
        != NGX_OK)
    {
        goto invalid;
    }

    if (!cJSON_IsArray(pairs) || cJSON_GetArraySize(pairs) == 0) {
        goto invalid;
    }

    cJSON_ArrayForEach(pair, pairs) {
        index = cJSON_GetArrayItem(pair, 0);
        their = cJSON_GetArrayItem(pair, 1);

        if (!cJSON_IsArray(pair) || cJSON_GetArraySize(pair) != 2
            || !cJSON_IsNumber(index) || !cJSON_IsString(their)
            || index->valuedouble < 0 || index->valuedouble >= n
            || index->valuedouble != (double) index->valueint
            || op->legs[index->valueint].asked)
        {
            goto invalid;
        }

        params = cJSON_CreateObject();

        if (params == NULL
            || cJSON_AddStringToObject(params, "cursor", their->valuestring)
               == NULL)
        {
            cJSON_Delete(params);
            cJSON_Delete(pairs);
            return NGX_ERROR;
        }

        ngx_http_mcp_aggregate_ask(op, index->valueint, method, params);
    }

    cJSON_Delete(pairs);

    ngx_http_mcp_aggregate_run(op);
    return NGX_OK;

invalid:

    cJSON_Delete(pairs);

    /* the legs asked so far go with the call (their params too) */
    for (i = 0; i < n; i++) {
        op->legs[i].asked = 0;
    }

    ngx_http_mcp_call_error(op->call, NGX_HTTP_MCP_INVALID_PARAMS,
                            "Invalid params: invalid cursor");
    return NGX_OK;
}


/*
 * tools/call, prompts/get: to the backend whose prefix the name has;
 * resources/read: to every backend.
 */

static ngx_int_t
ngx_http_mcp_aggregate_route(ngx_http_mcp_aggregate_op_t *op)
{
    char                    *method;
    cJSON                   *params, *name, *uri, *task;
    ngx_int_t                rc;
    ngx_str_t               *m;
    ngx_uint_t               i, n;
    ngx_http_mcp_call_t     *call;
    ngx_http_mcp_backend_t  *b;

    call = op->call;
    m = ngx_http_mcp_call_method(call);
    n = op->conf->backends->nelts;
    b = op->conf->backends->elts;

    method = ngx_pnalloc(ngx_http_mcp_call_pool(call), m->len + 1);
    if (method == NULL) {
        return NGX_ERROR;
    }

    (void) ngx_cpystrn((u_char *) method, m->data, m->len + 1);

    if (op->done == ngx_http_mcp_aggregate_read
        || op->done == ngx_http_mcp_aggregate_owned)
    {
        uri = cJSON_GetObjectItemCaseSensitive(ngx_http_mcp_call_params(call),
                                               "uri");
        if (!cJSON_IsString(uri)) {
            ngx_http_mcp_call_error(call, NGX_HTTP_MCP_INVALID_PARAMS,
                                    "Invalid params: \"uri\" is required");
            return NGX_OK;
        }

        call->uri.data = (u_char *) uri->valuestring;
        call->uri.len = ngx_strlen(uri->valuestring);

        for (i = 0; i < n; i++) {
            params = ngx_http_mcp_aggregate_params(call);
            if (params == NULL) {
                return NGX_ERROR;
            }

            ngx_http_mcp_aggregate_ask(op, i, "resources/read", params);
        }

        ngx_http_mcp_aggregate_run(op);
        return NGX_OK;
    }

    name = cJSON_GetObjectItemCaseSensitive(ngx_http_mcp_call_params(call),
                                            "name");
    if (!cJSON_IsString(name)) {
        ngx_http_mcp_call_error(call, NGX_HTTP_MCP_INVALID_PARAMS,
                                "Invalid params: \"name\" is required");
        return NGX_OK;
    }

    i = ngx_http_mcp_aggregate_owner(op->conf, name->valuestring);

    if (i == n) {
        ngx_http_mcp_call_error(call, NGX_HTTP_MCP_INVALID_PARAMS,
                                (m->len == sizeof("tools/call") - 1)
                                ? "Unknown tool" : "Unknown prompt");
        return NGX_OK;
    }

    /* a stateless client's tools/call that may become a task (_task.c) */
    rc = ngx_http_mcp_aggregate_task_call(call, op->conf, i);

    if (rc != NGX_DECLINED) {
        return rc;
    }

    params = ngx_http_mcp_aggregate_params(call);

    if (params == NULL
        || !cJSON_ReplaceItemInObjectCaseSensitive(params, "name",
               cJSON_CreateString(name->valuestring + b[i].prefix.len)))
    {
        cJSON_Delete(params);
        return NGX_ERROR;
    }

    task = cJSON_GetObjectItemCaseSensitive(ngx_http_mcp_call_params(call),
                                            "task");

    if (task != NULL && !op->stateless
        && ngx_http_mcp_call_client(call)->version >= NGX_HTTP_MCP_V20251125
        && !cJSON_AddItemToObject(params, "task", cJSON_Duplicate(task, 1)))
    {
        /* a 2025-11-25 client's task is the backend's to run */
        cJSON_Delete(params);
        return NGX_ERROR;
    }

    op->target = i;

    ngx_http_mcp_aggregate_ask(op, i, method, params);
    ngx_http_mcp_aggregate_run(op);

    return NGX_OK;
}


/*
 * completion/complete (dispatch checked its reference): a prompt's to
 * the backend whose prefix the prompt's name has, without it; a
 * resource template's to every backend, as resources/read (the URIs
 * are the backends' own), the first in order with a result answering.
 */

static ngx_int_t
ngx_http_mcp_aggregate_complete(ngx_http_mcp_call_t *call,
    ngx_http_mcp_aggregate_loc_conf_t *alcf)
{
    cJSON                        *ref, *type, *name, *params;
    ngx_uint_t                    i, n;
    ngx_http_mcp_backend_t       *b;
    ngx_http_mcp_aggregate_op_t  *op;

    ref = cJSON_GetObjectItemCaseSensitive(ngx_http_mcp_call_params(call),
                                           "ref");
    type = cJSON_GetObjectItemCaseSensitive(ref, "type");
    n = alcf->backends->nelts;
    b = alcf->backends->elts;

    if (ngx_strcmp(type->valuestring, "ref/resource") == 0) {
        op = ngx_http_mcp_aggregate_op(call, alcf,
                                       ngx_http_mcp_aggregate_read);
        if (op == NULL) {
            return NGX_ERROR;
        }

        for (i = 0; i < n; i++) {
            params = ngx_http_mcp_aggregate_params(call);
            if (params == NULL) {
                return NGX_ERROR;
            }

            ngx_http_mcp_aggregate_ask(op, i, "completion/complete", params);
        }

        ngx_http_mcp_aggregate_run(op);
        return NGX_OK;
    }

    name = cJSON_GetObjectItemCaseSensitive(ref, "name");
    i = ngx_http_mcp_aggregate_owner(alcf, name->valuestring);

    if (i == n) {
        ngx_http_mcp_call_error(call, NGX_HTTP_MCP_INVALID_PARAMS,
                                "Invalid params: unknown reference");
        return NGX_OK;
    }

    op = ngx_http_mcp_aggregate_op(call, alcf,
                                   ngx_http_mcp_aggregate_routed);
    params = ngx_http_mcp_aggregate_params(call);

    if (op == NULL || params == NULL
        || !cJSON_ReplaceItemInObjectCaseSensitive(
               cJSON_GetObjectItemCaseSensitive(params, "ref"), "name",
               cJSON_CreateString(name->valuestring + b[i].prefix.len)))
    {
        cJSON_Delete(params);
        return NGX_ERROR;
    }

    op->target = i;

    ngx_http_mcp_aggregate_ask(op, i, "completion/complete", params);
    ngx_http_mcp_aggregate_run(op);

    return NGX_OK;
}


/* initialize, server/discover: the backends' sessions are open */

static void
ngx_http_mcp_aggregate_opened_all(ngx_http_mcp_aggregate_op_t *op)
{
    ngx_http_mcp_call_t  *call;

    call = op->call;

    op->finish = call->finish;
    call->finish = ngx_http_mcp_aggregate_capabilities;

    if (op->next(call) != NGX_OK) {
        ngx_http_mcp_call_error(call, NGX_HTTP_MCP_INTERNAL_ERROR,
                                "Internal error");
    }
}


/*
 * The result of initialize or server/discover: the capabilities are the
 * union of the backends' (the last this worker saw of each); a new
 * session keeps the sessions opened for it.
 */

static ngx_int_t
ngx_http_mcp_aggregate_capabilities(ngx_http_mcp_call_t *call,
    cJSON *result)
{
    cJSON                        *caps, *res;
    ngx_uint_t                    i, k, tasks;
    ngx_http_mcp_backend_t       *b;
    ngx_http_mcp_aggregate_op_t  *op;

    static const char  *routed[] = { "tools", "resources", "prompts",
                                     "completions", NULL };

    op = ngx_http_mcp_call_data(call);
    caps = cJSON_GetObjectItemCaseSensitive(result, "capabilities");

    if (!cJSON_IsObject(caps)) {
        return NGX_ERROR;
    }

    b = op->conf->backends->elts;

    for (i = 0; i < op->conf->backends->nelts; i++) {
        for (k = 0; b[i].caps != NULL && routed[k]; k++) {
            if (cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(b[i].caps,
                                                                routed[k]))
                && !cJSON_HasObjectItem(caps, routed[k])
                && cJSON_AddObjectToObject(caps, routed[k]) == NULL)
            {
                return NGX_ERROR;
            }

            /*
             * a 2025 client's GET stream and a stateless client's
             * subscriptions/listen carry the backends' list changes
             * (ngx_http_mcp_aggregate_listen.c, _subscribe.c)
             */
            if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(
                       cJSON_GetObjectItemCaseSensitive(b[i].caps,
                                                        routed[k]),
                       "listChanged"))
                && ngx_http_mcp_aggregate_list_changed(caps, routed[k])
                   != NGX_OK)
            {
                return NGX_ERROR;
            }
        }
    }

    /* a 2025-11-25 client's tasks are the backends' (the first one's) */

    res = cJSON_GetObjectItemCaseSensitive(result, "protocolVersion");
    tasks = op->opening && cJSON_IsString(res)
            && ngx_strcmp(res->valuestring, "2025-11-25") >= 0;

    for (i = 0; tasks && i < op->conf->backends->nelts; i++) {
        res = cJSON_GetObjectItemCaseSensitive(b[i].caps, "tasks");

        if (cJSON_IsObject(res) && !cJSON_HasObjectItem(caps, "tasks")) {
            if (!cJSON_AddItemToObject(caps, "tasks",
                                       cJSON_Duplicate(res, 1)))
            {
                return NGX_ERROR;
            }

            break;
        }
    }

    /* a stateless client's: the extension (_task.c) */
    if (!op->opening && ngx_http_mcp_aggregate_task_extension(op, caps)
                        != NGX_OK)
    {
        return NGX_ERROR;
    }

    /*
     * subscriptions go to the backend that has the URI (a 2025 client's)
     * or to every backend that offers them (subscriptions/listen)
     */

    for (i = 0; i < op->conf->backends->nelts; i++) {
        if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(
                cJSON_GetObjectItemCaseSensitive(b[i].caps, "resources"),
                "subscribe")))
        {
            res = cJSON_GetObjectItemCaseSensitive(caps, "resources");

            if (cJSON_IsObject(res) && !cJSON_HasObjectItem(res, "subscribe")
                && cJSON_AddTrueToObject(res, "subscribe") == NULL)
            {
                return NGX_ERROR;
            }

            break;
        }
    }

    if (op->opening && ngx_http_mcp_aggregate_keep_sessions(op) != NGX_OK) {
        return NGX_ERROR;
    }

    return (op->finish != NULL) ? op->finish(call, result) : NGX_OK;
}


/* a list's page: every answer merged, and the cursor of what is left */

static void
ngx_http_mcp_aggregate_listed(ngx_http_mcp_aggregate_op_t *op)
{
    char                          *json;
    cJSON                         *result, *items, *next;
    ngx_str_t                      src, dst;
    ngx_uint_t                     i;
    const char                    *key;
    ngx_http_mcp_call_t           *call;
    ngx_http_mcp_aggregate_leg_t  *leg;

    call = op->call;
    key = ngx_http_mcp_aggregate_key(ngx_http_mcp_call_method(call));

    result = cJSON_CreateObject();
    items = cJSON_AddArrayToObject(result, key);
    next = cJSON_CreateArray();

    if (result == NULL || items == NULL || next == NULL) {
        goto failed;
    }

    for (i = 0; i < op->conf->backends->nelts; i++) {
        leg = &op->legs[i];

        if (!leg->asked || leg->failed || leg->reply == NULL) {
            continue;
        }

        if (cJSON_HasObjectItem(leg->reply, "error")) {
            if (op->cursor) {
                /* a backend's cursor that the backend refuses */
                cJSON_Delete(result);
                cJSON_Delete(next);
                ngx_http_mcp_call_error(call, NGX_HTTP_MCP_INVALID_PARAMS,
                                        "Invalid params: invalid cursor");
                return;
            }

            /* a backend without the list (no prompts, say) */
            continue;
        }

        if (ngx_http_mcp_aggregate_merge(op, leg, key, items, next)
            != NGX_OK)
        {
            goto failed;
        }
    }

    if (cJSON_GetArraySize(next) > 0) {
        json = cJSON_PrintUnformatted(next);
        if (json == NULL) {
            goto failed;
        }

        src.data = (u_char *) json;
        src.len = ngx_strlen(json);

        dst.data = ngx_pnalloc(ngx_http_mcp_call_pool(call),
                               ngx_base64_encoded_length(src.len) + 1);

        if (dst.data == NULL) {
            cJSON_free(json);
            goto failed;
        }

        ngx_encode_base64url(&dst, &src);
        dst.data[dst.len] = '\0';
        cJSON_free(json);

        if (cJSON_AddStringToObject(result, "nextCursor", (char *) dst.data)
            == NULL)
        {
            goto failed;
        }
    }

    cJSON_Delete(next);

    ngx_http_mcp_call_result(call, result);
    return;

failed:

    cJSON_Delete(result);
    cJSON_Delete(next);
    ngx_http_mcp_call_error(call, NGX_HTTP_MCP_INTERNAL_ERROR,
                            "Internal error");
}


/*
 * One backend's page into the merged one: tools and prompts by their
 * prefixed names, the tools the policy and the caller's scopes allow.
 */

static ngx_int_t
ngx_http_mcp_aggregate_merge(ngx_http_mcp_aggregate_op_t *op,
    ngx_http_mcp_aggregate_leg_t *leg, const char *key, cJSON *out,
    cJSON *next)
{
    u_char                  *p;
    cJSON                   *result, *items, *item, *copy, *name, *cursor,
                            *pair;
    size_t                   len;
    ngx_str_t                full, scope, own;
    ngx_uint_t               tools, renamed;
    ngx_http_mcp_backend_t  *b;
    ngx_http_mcp_reqctx_t   *rctx;

    b = leg->backend;
    rctx = ngx_http_mcp_call_client(op->call);
    result = cJSON_GetObjectItemCaseSensitive(leg->reply, "result");
    items = cJSON_GetObjectItemCaseSensitive(result, key);

    tools = (ngx_strcmp(key, "tools") == 0);
    renamed = tools || ngx_strcmp(key, "prompts") == 0;

    cJSON_ArrayForEach(item, items) {
        if (!cJSON_IsObject(item)) {
            continue;
        }

        if (ngx_strcmp(key, "tasks") == 0) {
            /* a task's id is the backend's prefixed (see task_ids()) */
            copy = cJSON_Duplicate(item, 1);

            if (copy == NULL
                || ngx_http_mcp_aggregate_prefixed(
                       ngx_http_mcp_call_pool(op->call), b, copy, "taskId")
                   != NGX_OK)
            {
                cJSON_Delete(copy);
                return NGX_ERROR;
            }

        } else if (renamed) {
            name = cJSON_GetObjectItemCaseSensitive(item, "name");

            if (!cJSON_IsString(name)) {
                continue;
            }

            len = ngx_strlen(name->valuestring);

            if (len == 0 || b->prefix.len + len > NGX_HTTP_MCP_AGGREGATE_NAME)
            {
                continue;
            }

            full.len = b->prefix.len + len;
            full.data = ngx_pnalloc(ngx_http_mcp_call_pool(op->call),
                                    full.len + 1);
            if (full.data == NULL) {
                return NGX_ERROR;
            }

            p = ngx_cpymem(full.data, b->prefix.data, b->prefix.len);
            ngx_memcpy(p, name->valuestring, len + 1);

            if (tools) {
                /* its hints, for its calls' retries, under its own name */
                own.data = (u_char *) name->valuestring;
                own.len = len;
                ngx_http_mcp_aggregate_learn(op, b, item, &own);
            }

            /*
             * a name of the backend with the empty prefix that another's
             * prefix begins would go to that one: it cannot be called
             */
            if (ngx_http_mcp_aggregate_owner(op->conf, (char *) full.data)
                != b->index)
            {
                continue;
            }

            if (tools
                && (!ngx_http_mcp_tool_allowed(
                        ngx_http_mcp_call_conf(op->call), &full)
                    || (rctx->auth != NULL
                        && ngx_http_mcp_auth_permits(rctx->auth, "tools",
                                                     &full, &scope)
                           != NGX_OK)))
            {
                continue;
            }

            copy = cJSON_Duplicate(item, 1);

            if (copy == NULL
                || !cJSON_ReplaceItemInObjectCaseSensitive(copy, "name",
                        cJSON_CreateString((char *) full.data)))
            {
                cJSON_Delete(copy);
                return NGX_ERROR;
            }

        } else {
            copy = cJSON_Duplicate(item, 1);
            if (copy == NULL) {
                return NGX_ERROR;
            }
        }

        if (!cJSON_AddItemToArray(out, copy)) {
            cJSON_Delete(copy);
            return NGX_ERROR;
        }
    }

    cursor = cJSON_GetObjectItemCaseSensitive(result, "nextCursor");

    if (!cJSON_IsString(cursor) || cursor->valuestring[0] == '\0'
        || ngx_strlen(cursor->valuestring) > NGX_HTTP_MCP_AGGREGATE_CURSOR / 4)
    {
        return NGX_OK;
    }

    pair = cJSON_CreateArray();

    if (pair == NULL
        || !cJSON_AddItemToArray(pair, cJSON_CreateNumber(b->index))
        || !cJSON_AddItemToArray(pair, cJSON_CreateString(cursor->valuestring))
        || !cJSON_AddItemToArray(next, pair))
    {
        cJSON_Delete(pair);
        return NGX_ERROR;
    }

    return NGX_OK;
}


/* tools/call, prompts/get: the backend's answer, or why there is none */

static void
ngx_http_mcp_aggregate_routed(ngx_http_mcp_aggregate_op_t *op)
{
    ngx_http_mcp_aggregate_leg_t  *leg;

    leg = &op->legs[op->target];

    if (leg->failed || leg->reply == NULL) {
        ngx_http_mcp_aggregate_unavailable(op, leg);
        return;
    }

    if (ngx_http_mcp_aggregate_task_required(op, leg)) {
        return;
    }

    /* a task's id is the backend's prefixed, as a tool's name */
    if (ngx_http_mcp_aggregate_task_ids(ngx_http_mcp_call_pool(op->call),
            leg->backend,
            cJSON_GetObjectItemCaseSensitive(leg->reply, "result"))
        != NGX_OK)
    {
        ngx_http_mcp_call_error(op->call, NGX_HTTP_MCP_INTERNAL_ERROR,
                                "Internal error");
        return;
    }

    ngx_http_mcp_aggregate_relay(op->call, leg->reply);
}


/*
 * A 2025 client's tasks/get, tasks/result, tasks/cancel: to the backend
 * whose prefix the task id has (tools/call gave the id so), with the
 * backend's own id, in the client's session there.
 */

static ngx_int_t
ngx_http_mcp_aggregate_task(ngx_http_mcp_call_t *call,
    ngx_http_mcp_aggregate_loc_conf_t *alcf)
{
    char                         *method;
    cJSON                        *id, *params;
    ngx_str_t                    *m;
    ngx_uint_t                    i;
    ngx_http_mcp_backend_t       *b;
    ngx_http_mcp_aggregate_op_t  *op;

    m = ngx_http_mcp_call_method(call);
    b = alcf->backends->elts;

    id = cJSON_GetObjectItemCaseSensitive(ngx_http_mcp_call_params(call),
                                          "taskId");
    if (!cJSON_IsString(id)) {
        ngx_http_mcp_call_error(call, NGX_HTTP_MCP_INVALID_PARAMS,
                                "Invalid params: \"taskId\" is required");
        return NGX_OK;
    }

    i = ngx_http_mcp_aggregate_owner(alcf, id->valuestring);

    if (i == alcf->backends->nelts) {
        ngx_http_mcp_call_error(call, NGX_HTTP_MCP_INVALID_PARAMS,
                                "Invalid params: unknown task");
        return NGX_OK;
    }

    method = ngx_pnalloc(ngx_http_mcp_call_pool(call), m->len + 1);
    op = ngx_http_mcp_aggregate_op(call, alcf,
                                   ngx_http_mcp_aggregate_routed);
    params = ngx_http_mcp_aggregate_params(call);

    if (method == NULL || op == NULL || params == NULL
        || !cJSON_ReplaceItemInObjectCaseSensitive(params, "taskId",
               cJSON_CreateString(id->valuestring + b[i].prefix.len)))
    {
        cJSON_Delete(params);
        return NGX_ERROR;
    }

    (void) ngx_cpystrn((u_char *) method, m->data, m->len + 1);

    op->target = i;

    ngx_http_mcp_aggregate_ask(op, i, method, params);
    ngx_http_mcp_aggregate_run(op);

    return NGX_OK;
}


/*
 * The task ids of a backend's result, prefixed: a Task's (tasks/get,
 * tasks/cancel), a CreateTaskResult's task, the related task of a
 * tasks/result.
 */

static ngx_int_t
ngx_http_mcp_aggregate_task_ids(ngx_pool_t *pool, ngx_http_mcp_backend_t *b,
    cJSON *result)
{
    cJSON  *meta;

    if (!cJSON_IsObject(result)) {
        return NGX_OK;
    }

    meta = cJSON_GetObjectItemCaseSensitive(result, "_meta");

    if (ngx_http_mcp_aggregate_prefixed(pool, b, result, "taskId") != NGX_OK
        || ngx_http_mcp_aggregate_prefixed(pool, b,
               cJSON_GetObjectItemCaseSensitive(result, "task"), "taskId")
           != NGX_OK
        || ngx_http_mcp_aggregate_prefixed(pool, b,
               cJSON_GetObjectItemCaseSensitive(meta,
                   "io.modelcontextprotocol/related-task"),
               "taskId")
           != NGX_OK)
    {
        return NGX_ERROR;
    }

    return NGX_OK;
}



/*
 * resources/subscribe, unsubscribe: every backend was asked to read the
 * URI; the first, in order, that has it (the one resources/read
 * answers from) is sent the client's request, with the client's session
 * there, so that its updates come on that session's GET stream, which
 * the gateway relays to the client's (ngx_http_mcp_aggregate_listen.c).
 */

static void
ngx_http_mcp_aggregate_owned(ngx_http_mcp_aggregate_op_t *op)
{
    cJSON                         *params;
    ngx_str_t                     *m;
    ngx_uint_t                     i;
    ngx_http_mcp_call_t           *call;
    ngx_http_mcp_aggregate_op_t   *sub;
    ngx_http_mcp_aggregate_leg_t  *leg;

    call = op->call;

    for (i = 0; i < op->conf->backends->nelts; i++) {
        leg = &op->legs[i];

        if (!leg->failed && leg->reply != NULL
            && cJSON_HasObjectItem(leg->reply, "result"))
        {
            break;
        }
    }

    if (i == op->conf->backends->nelts) {
        /* none has it: the read's error (not found, or who failed) */
        ngx_http_mcp_aggregate_read(op);
        return;
    }

    m = ngx_http_mcp_call_method(call);

    sub = ngx_http_mcp_aggregate_op(call, op->conf,
                                    ngx_http_mcp_aggregate_routed);
    params = ngx_http_mcp_aggregate_params(call);

    if (sub == NULL || params == NULL) {
        cJSON_Delete(params);
        ngx_http_mcp_call_error(call, NGX_HTTP_MCP_INTERNAL_ERROR,
                                "Internal error");
        return;
    }

    sub->target = i;

    ngx_http_mcp_aggregate_ask(sub, i,
                               (m->len == sizeof("resources/subscribe") - 1)
                               ? "resources/subscribe"
                               : "resources/unsubscribe",
                               params);
    ngx_http_mcp_aggregate_run(sub);
}


/* resources/read: the first backend, in order, that has the URI */

static void
ngx_http_mcp_aggregate_read(ngx_http_mcp_aggregate_op_t *op)
{
    u_char                        *p, text[512];
    cJSON                         *refused;
    ngx_uint_t                     i, failed;
    ngx_http_mcp_backend_t        *b;
    ngx_http_mcp_aggregate_leg_t  *leg;

    failed = 0;
    b = NULL;
    refused = NULL;

    for (i = 0; i < op->conf->backends->nelts; i++) {
        leg = &op->legs[i];

        if (leg->failed || leg->reply == NULL) {
            failed++;
            b = leg->backend;
            continue;
        }

        if (cJSON_HasObjectItem(leg->reply, "result")) {
            ngx_http_mcp_aggregate_relay(op->call, leg->reply);
            return;
        }

        if (refused == NULL) {
            refused = leg->reply;
        }
    }

    if (failed == 0 && refused != NULL
        && ngx_http_mcp_call_method(op->call)->len
           == sizeof("completion/complete") - 1)
    {
        /* a template no backend has: the first one's refusal says so */
        ngx_http_mcp_aggregate_relay(op->call, refused);
        return;
    }

    if (failed == 0) {
        ngx_http_mcp_call_resource_not_found(op->call);
        return;
    }

    p = ngx_snprintf(text, sizeof(text) - 1, "Resource unavailable: no "
                     "backend that answered has it, and %ui did not answer "
                     "(\"%V\" among them)", failed, &b->name);
    *p = '\0';

    /* -32000, not -32603: the gateway is fine, an [info] line is enough */
    ngx_http_mcp_call_error(op->call, NGX_HTTP_MCP_SERVER_ERROR,
                            (const char *) text);
}
