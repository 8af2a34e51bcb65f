
/*
 * The method table: every JSON-RPC request of a session comes here with
 * its call, is checked for the params its method needs, and goes to the
 * module's own handler (lifecycle, logging, subscriptions) or to the
 * handler of the addressed tool, resource or prompt of the location's set.
 */


#include "ngx_http_mcp_core.h"
#include "ngx_http_mcp_json.h"
#include "ngx_http_mcp_jsonrpc.h"
#include "ngx_http_mcp_param.h"
#include "ngx_http_mcp_schema.h"
#include "ngx_http_mcp_store.h"
#include "ngx_http_mcp_call.h"
#include "ngx_http_mcp_output.h"
#include "ngx_http_mcp_task.h"
#include "ngx_http_mcp_guard.h"


/* which revisions have a method */
#define NGX_HTTP_MCP_SESSIONFUL    0x01    /* 2025-03-26 to 2025-11-25 */
#define NGX_HTTP_MCP_STATELESS     0x02    /* 2026-07-28 */
#define NGX_HTTP_MCP_ANY_ERA       0x03
/* 2026-07-28: its results carry caching hints (ttlMs, cacheScope) */
#define NGX_HTTP_MCP_CACHEABLE     0x04


typedef struct {
    const char                *capability;
    size_t                     offset;      /* of its entries in a set */
    const char                *key;         /* of the list in the result */
} ngx_http_mcp_listing_t;


typedef struct {
    ngx_str_t                  name;
    ngx_http_mcp_handler_pt    handler;
    ngx_uint_t                 flags;       /* eras, cacheable */
    ngx_http_mcp_listing_t    *listing;     /* of a list method */
} ngx_http_mcp_method_t;


static ngx_http_mcp_method_t *ngx_http_mcp_method(ngx_str_t *name);
static ngx_int_t ngx_http_mcp_initialize(ngx_http_mcp_call_t *call);
static ngx_int_t ngx_http_mcp_discover(ngx_http_mcp_call_t *call);
static ngx_int_t ngx_http_mcp_cache_hints(ngx_http_mcp_call_t *call,
    cJSON *result);
static cJSON *ngx_http_mcp_capabilities(ngx_http_mcp_set_t *set,
    ngx_uint_t version);
static ngx_int_t ngx_http_mcp_ping(ngx_http_mcp_call_t *call);
static ngx_int_t ngx_http_mcp_set_level(ngx_http_mcp_call_t *call);
static ngx_int_t ngx_http_mcp_complete(ngx_http_mcp_call_t *call);
static ngx_int_t ngx_http_mcp_list(ngx_http_mcp_call_t *call);
static ngx_uint_t ngx_http_mcp_policy_allows(void *data, ngx_str_t *name);
static ngx_int_t ngx_http_mcp_tools_call(ngx_http_mcp_call_t *call);
static ngx_int_t ngx_http_mcp_resources_read(ngx_http_mcp_call_t *call);
static ngx_int_t ngx_http_mcp_run_entry(ngx_http_mcp_call_t *call);
static ngx_int_t ngx_http_mcp_subscribe(ngx_http_mcp_call_t *call);
static ngx_int_t ngx_http_mcp_guarded(ngx_http_mcp_call_t *call);
static ngx_int_t ngx_http_mcp_prompts_get(ngx_http_mcp_call_t *call);
static ngx_int_t ngx_http_mcp_check_prompt_arguments(
    ngx_http_mcp_call_t *call);
static ngx_http_mcp_entry_t *ngx_http_mcp_find_resource(
    ngx_http_mcp_call_t *call);
static ngx_int_t ngx_http_mcp_param(ngx_http_mcp_call_t *call, cJSON *obj,
    const char *name, int type, ngx_uint_t required, cJSON **value);
static ngx_int_t ngx_http_mcp_invalid_params(ngx_http_mcp_call_t *call,
    const char *fmt, const char *name);
static ngx_int_t ngx_http_mcp_authorize(ngx_http_mcp_call_t *call,
    const char *capability, ngx_str_t *tool);
static ngx_array_t *ngx_http_mcp_permitted_tools(ngx_http_mcp_call_t *call,
    ngx_array_t *tools);
static ngx_int_t ngx_http_mcp_check_param_headers(ngx_http_mcp_call_t *call);
static ngx_int_t ngx_http_mcp_check_arguments(ngx_http_mcp_call_t *call);


/* what a list method lists, and which capability lets a caller see it */

static ngx_http_mcp_listing_t  ngx_http_mcp_list_tools =
    { "tools", offsetof(ngx_http_mcp_set_t, tools), "tools" };

static ngx_http_mcp_listing_t  ngx_http_mcp_list_resources =
    { "resources", offsetof(ngx_http_mcp_set_t, resources), "resources" };

static ngx_http_mcp_listing_t  ngx_http_mcp_list_templates =
    { "resources", offsetof(ngx_http_mcp_set_t, templates),
      "resourceTemplates" };

static ngx_http_mcp_listing_t  ngx_http_mcp_list_prompts =
    { "prompts", offsetof(ngx_http_mcp_set_t, prompts), "prompts" };


/*
 * 2026-07-28 has no lifecycle (initialize, ping), sets the log level per
 * request and replaces resources/subscribe with subscriptions/listen;
 * it adds server/discover.
 */
static ngx_http_mcp_method_t  ngx_http_mcp_methods[] = {
    { ngx_string("initialize"), ngx_http_mcp_initialize,
      NGX_HTTP_MCP_SESSIONFUL, NULL },
    { ngx_string("ping"), ngx_http_mcp_ping, NGX_HTTP_MCP_SESSIONFUL, NULL },
    { ngx_string("server/discover"), ngx_http_mcp_discover,
      NGX_HTTP_MCP_STATELESS|NGX_HTTP_MCP_CACHEABLE, NULL },
    { ngx_string("subscriptions/listen"), ngx_http_mcp_listen,
      NGX_HTTP_MCP_STATELESS, NULL },
    { ngx_string("tools/list"), ngx_http_mcp_list,
      NGX_HTTP_MCP_ANY_ERA|NGX_HTTP_MCP_CACHEABLE, &ngx_http_mcp_list_tools },
    { ngx_string("tools/call"), ngx_http_mcp_tools_call,
      NGX_HTTP_MCP_ANY_ERA, NULL },
    { ngx_string("resources/list"), ngx_http_mcp_list,
      NGX_HTTP_MCP_ANY_ERA|NGX_HTTP_MCP_CACHEABLE,
      &ngx_http_mcp_list_resources },
    { ngx_string("resources/read"), ngx_http_mcp_resources_read,
      NGX_HTTP_MCP_ANY_ERA|NGX_HTTP_MCP_CACHEABLE, NULL },
    { ngx_string("resources/templates/list"), ngx_http_mcp_list,
      NGX_HTTP_MCP_ANY_ERA|NGX_HTTP_MCP_CACHEABLE,
      &ngx_http_mcp_list_templates },
    { ngx_string("resources/subscribe"), ngx_http_mcp_subscribe,
      NGX_HTTP_MCP_SESSIONFUL, NULL },
    { ngx_string("resources/unsubscribe"), ngx_http_mcp_subscribe,
      NGX_HTTP_MCP_SESSIONFUL, NULL },
    { ngx_string("prompts/list"), ngx_http_mcp_list,
      NGX_HTTP_MCP_ANY_ERA|NGX_HTTP_MCP_CACHEABLE,
      &ngx_http_mcp_list_prompts },
    { ngx_string("prompts/get"), ngx_http_mcp_prompts_get,
      NGX_HTTP_MCP_ANY_ERA, NULL },
    { ngx_string("logging/setLevel"), ngx_http_mcp_set_level,
      NGX_HTTP_MCP_SESSIONFUL, NULL },
    { ngx_string("completion/complete"), ngx_http_mcp_complete,
      NGX_HTTP_MCP_ANY_ERA, NULL },
    { ngx_string("tasks/get"), ngx_http_mcp_tasks_get,
      NGX_HTTP_MCP_ANY_ERA, NULL },
    { ngx_string("tasks/cancel"), ngx_http_mcp_tasks_cancel,
      NGX_HTTP_MCP_ANY_ERA, NULL },
    { ngx_string("tasks/update"), ngx_http_mcp_tasks_update,
      NGX_HTTP_MCP_STATELESS, NULL },
    { ngx_string("tasks/result"), ngx_http_mcp_tasks_result,
      NGX_HTTP_MCP_SESSIONFUL, NULL },
    { ngx_string("tasks/list"), ngx_http_mcp_tasks_list,
      NGX_HTTP_MCP_SESSIONFUL, NULL },
    { ngx_null_string, NULL, 0, NULL }
};


static ngx_http_mcp_method_t *
ngx_http_mcp_method(ngx_str_t *name)
{
    ngx_http_mcp_method_t  *m;

    for (m = ngx_http_mcp_methods; m->handler; m++) {
        if (m->name.len == name->len
            && ngx_strncmp(m->name.data, name->data, name->len) == 0)
        {
            return m;
        }
    }

    return NULL;
}


/* whether a session-ful client may call the method */

ngx_uint_t
ngx_http_mcp_dispatch_known(ngx_str_t *method)
{
    ngx_http_mcp_method_t  *m;

    m = ngx_http_mcp_method(method);

    return m != NULL && (m->flags & NGX_HTTP_MCP_SESSIONFUL);
}


/*
 * For a 2026-07-28 request that a server other than ours answers (a
 * stdio child, which speaks a 2025 revision): NGX_DECLINED when the
 * revision has no such method (initialize, ping: -32601 and a 404, as
 * ngx_http_mcp_dispatch() says it); else NGX_OK, and *cacheable set when
 * its result carries the caching hints.  A method we do not know is the
 * server's to answer.
 */

ngx_int_t
ngx_http_mcp_dispatch_stateless(ngx_str_t *method, ngx_uint_t *cacheable)
{
    ngx_http_mcp_method_t  *m;

    m = ngx_http_mcp_method(method);

    *cacheable = (m != NULL && (m->flags & NGX_HTTP_MCP_CACHEABLE));

    if (m != NULL && !(m->flags & NGX_HTTP_MCP_STATELESS)) {
        return NGX_DECLINED;
    }

    return NGX_OK;
}


ngx_int_t
ngx_http_mcp_dispatch(ngx_http_mcp_call_t *call)
{
    ngx_uint_t              era;
    ngx_http_mcp_method_t  *m;

    m = ngx_http_mcp_method(&call->method);

    era = ngx_http_mcp_call_stateless(call)
          ? NGX_HTTP_MCP_STATELESS : NGX_HTTP_MCP_SESSIONFUL;

    if (m == NULL || !(m->flags & era)) {
        ngx_http_mcp_call_error(call, NGX_HTTP_MCP_METHOD_NOT_FOUND,
                                "Method not found");
        return NGX_OK;
    }

    if (era == NGX_HTTP_MCP_STATELESS && (m->flags & NGX_HTTP_MCP_CACHEABLE))
    {
        call->finish = ngx_http_mcp_cache_hints;
    }

    ngx_log_debug1(NGX_LOG_DEBUG_HTTP, call->log, 0, "mcp call \"%V\"",
                   &call->method);

    if (ngx_http_mcp_call_conf(call)->aggregate != NULL
        && (m->handler == ngx_http_mcp_initialize
            || m->handler == ngx_http_mcp_discover
            || m->handler == ngx_http_mcp_listen))
    {
        /* the capabilities, the news are the backends' (mcp_backend) */
        return ngx_http_mcp_call_conf(call)->aggregate(call, m->handler);
    }

    if (ngx_http_mcp_call_conf(call)->aggregate != NULL
        && (era != NGX_HTTP_MCP_SESSIONFUL
            || call->rctx->version >= NGX_HTTP_MCP_V20251125)
        && call->method.len > 6
        && ngx_strncmp(call->method.data, "tasks/", 6) == 0)
    {
        /* a 2025 client's tasks, the extension's, are the backends' */
        return ngx_http_mcp_call_conf(call)->aggregate(call, NULL);
    }

    return m->handler(call);
}


/*
 * initialize: negotiates the protocol version (the client's when we
 * speak it, else our latest), creates the session, and answers with the
 * server's capabilities.
 */

static ngx_int_t
ngx_http_mcp_initialize(ngx_http_mcp_call_t *call)
{
    cJSON                        *version, *caps, *info, *result;
    ngx_http_mcp_session_init_t   init;

    if (ngx_http_mcp_param(call, call->params, "protocolVersion",
                           cJSON_String, 1, &version) != NGX_OK
        || ngx_http_mcp_param(call, call->params, "capabilities",
                              cJSON_Object, 0, &caps) != NGX_OK
        || ngx_http_mcp_param(call, call->params, "clientInfo",
                              cJSON_Object, 0, &info) != NGX_OK)
    {
        return NGX_OK;
    }

    (void) ngx_http_mcp_session_init_params(call->params, &init);

    if (call->ctx == NULL) {
        /* the session's id goes in the POST's reply: no POST, no session */
        return NGX_ERROR;
    }

    switch (call->edge->session(call, &init)) {

    case NGX_OK:
        break;

    case NGX_DECLINED:
        ngx_http_mcp_call_error(call, NGX_HTTP_MCP_SERVER_ERROR,
                                "Service unavailable: no room for a new "
                                "session");
        return NGX_OK;

    default:
        return NGX_ERROR;
    }

    result = cJSON_CreateObject();

    if (result == NULL
        || cJSON_AddStringToObject(result, "protocolVersion",
                                   ngx_http_mcp_version_name(init.version))
           == NULL
        || !cJSON_AddItemToObject(result, "capabilities",
                                  ngx_http_mcp_capabilities(
                                      ngx_http_mcp_call_conf(call)->set,
                                      init.version))
        || ngx_http_mcp_server_info(result, "serverInfo") != NGX_OK)
    {
        cJSON_Delete(result);
        return NGX_ERROR;
    }

    ngx_http_mcp_call_result(call, result);

    return NGX_OK;
}


/*
 * server/discover (2026-07-28): what initialize tells a 2025 client,
 * for a client that has no session: the versions we speak, the
 * capabilities and who we are.
 */

static ngx_int_t
ngx_http_mcp_discover(ngx_http_mcp_call_t *call)
{
    cJSON  *result;

    /* serverInfo is in _meta only (the spec's #3002), as on every result */
    result = cJSON_CreateObject();

    if (result == NULL
        || !cJSON_AddItemToObject(result, "supportedVersions",
                                  ngx_http_mcp_versions_json())
        || !cJSON_AddItemToObject(result, "capabilities",
                                  ngx_http_mcp_capabilities(
                                      ngx_http_mcp_call_conf(call)->set,
                                      NGX_HTTP_MCP_VSTATELESS))
        || ngx_http_mcp_server_meta(result) != NGX_OK)
    {
        cJSON_Delete(result);
        return NGX_ERROR;
    }

    ngx_http_mcp_call_result(call, result);

    return NGX_OK;
}


/*
 * 2026-07-28's caching hints on what a client may cache: lists, reads
 * and discover.  What an authenticated caller sees may be its own
 * (permits filter the tools), so it is private then.
 */

static ngx_int_t
ngx_http_mcp_cache_hints(ngx_http_mcp_call_t *call, cJSON *result)
{
    return ngx_http_mcp_result_cache_hints(result, call->rctx->auth != NULL);
}


/* the hints themselves, on any such result (a stdio child's too) */

ngx_int_t
ngx_http_mcp_result_cache_hints(cJSON *result, ngx_uint_t private)
{
    if (cJSON_AddNumberToObject(result, "ttlMs", 0) == NULL
        || cJSON_AddStringToObject(result, "cacheScope",
                                   private ? "private" : "public")
           == NULL)
    {
        return NGX_ERROR;
    }

    return NGX_OK;
}


/*
 * The capabilities of a set in a protocol version.  A stateless client
 * hears list changes and the updates of the resources it names on a
 * subscriptions/listen stream (ngx_http_mcp_listen.c), a 2025 one on its
 * GET streams.
 */

static cJSON *
ngx_http_mcp_capabilities(ngx_http_mcp_set_t *set, ngx_uint_t version)
{
    cJSON  *caps, *cap;

    caps = cJSON_CreateObject();
    if (caps == NULL) {
        return NULL;
    }

    if (cJSON_AddObjectToObject(caps, "logging") == NULL) {
        goto failed;
    }

    if (set->complete && cJSON_AddObjectToObject(caps, "completions") == NULL)
    {
        goto failed;
    }

    if (set->tools.nelts) {
        cap = cJSON_AddObjectToObject(caps, "tools");

        if (cap == NULL || !cJSON_AddTrueToObject(cap, "listChanged")) {
            goto failed;
        }

        if (ngx_http_mcp_task_capabilities(set, caps, version) != NGX_OK) {
            goto failed;
        }
    }

    if (set->resources.nelts || set->templates.nelts) {
        cap = cJSON_AddObjectToObject(caps, "resources");

        if (cap == NULL
            || !cJSON_AddTrueToObject(cap, "subscribe")
            || !cJSON_AddTrueToObject(cap, "listChanged"))
        {
            goto failed;
        }
    }

    if (set->prompts.nelts) {
        cap = cJSON_AddObjectToObject(caps, "prompts");

        if (cap == NULL || !cJSON_AddTrueToObject(cap, "listChanged")) {
            goto failed;
        }
    }

    return caps;

failed:

    cJSON_Delete(caps);
    return NULL;
}


static ngx_int_t
ngx_http_mcp_ping(ngx_http_mcp_call_t *call)
{
    ngx_http_mcp_call_result(call, cJSON_CreateObject());
    return NGX_OK;
}


static ngx_int_t
ngx_http_mcp_set_level(ngx_http_mcp_call_t *call)
{
    cJSON       *level;
    ngx_uint_t   i;

    if (ngx_http_mcp_param(call, call->params, "level", cJSON_String, 1,
                           &level) != NGX_OK)
    {
        return NGX_OK;
    }

    i = ngx_http_mcp_log_level_parse(level->valuestring);

    if (i == NGX_HTTP_MCP_LOG_NONE) {
        return ngx_http_mcp_invalid_params(call,
                                           "Invalid params: unknown log "
                                           "level%s", "");
    }

    if (ngx_http_mcp_session_set_log_level(ngx_http_mcp_call_conf(call)->zone,
                                           &call->rctx->session_id, i)
        != NGX_OK)
    {
        return NGX_ERROR;
    }

    call->rctx->log_level = i;

    ngx_http_mcp_call_result(call, cJSON_CreateObject());

    return NGX_OK;
}


static ngx_int_t
ngx_http_mcp_complete(ngx_http_mcp_call_t *call)
{
    cJSON               *ref, *arg, *type, *name, *value;
    ngx_str_t            s;
    ngx_http_mcp_set_t  *set;

    set = ngx_http_mcp_call_conf(call)->set;

    if (set->complete == NULL && ngx_http_mcp_call_conf(call)->aggregate
                                 == NULL)
    {
        ngx_http_mcp_call_error(call, NGX_HTTP_MCP_METHOD_NOT_FOUND,
                                "Method not found");
        return NGX_OK;
    }

    if (ngx_http_mcp_param(call, call->params, "ref", cJSON_Object, 1, &ref)
        != NGX_OK
        || ngx_http_mcp_param(call, call->params, "argument", cJSON_Object,
                              1, &arg) != NGX_OK
        || ngx_http_mcp_param(call, ref, "type", cJSON_String, 1, &type)
           != NGX_OK
        || ngx_http_mcp_param(call, arg, "name", cJSON_String, 1, &name)
           != NGX_OK
        || ngx_http_mcp_param(call, arg, "value", cJSON_String, 1, &value)
           != NGX_OK)
    {
        return NGX_OK;
    }

    if (ngx_strcmp(type->valuestring, "ref/prompt") == 0) {
        if (ngx_http_mcp_param(call, ref, "name", cJSON_String, 1, &name)
            != NGX_OK)
        {
            return NGX_OK;
        }

        s.data = (u_char *) name->valuestring;
        s.len = ngx_strlen(s.data);

        call->entry = ngx_http_mcp_find(&set->prompts, &s);

    } else if (ngx_strcmp(type->valuestring, "ref/resource") == 0) {
        if (ngx_http_mcp_param(call, ref, "uri", cJSON_String, 1, &name)
            != NGX_OK)
        {
            return NGX_OK;
        }

        s.data = (u_char *) name->valuestring;
        s.len = ngx_strlen(s.data);

        call->entry = ngx_http_mcp_find(&set->templates, &s);
        if (call->entry == NULL) {
            call->entry = ngx_http_mcp_find(&set->resources, &s);
        }

    } else {
        return ngx_http_mcp_invalid_params(call, "Invalid params: unknown "
                                           "reference type%s", "");
    }

    if (ngx_http_mcp_call_conf(call)->aggregate != NULL) {
        /* a backend's prompt or template (mcp_backend) */
        return ngx_http_mcp_call_conf(call)->aggregate(call, NULL);
    }

    if (call->entry == NULL) {
        return ngx_http_mcp_invalid_params(call, "Invalid params: unknown "
                                           "reference%s", "");
    }

    return set->complete(call);
}


/* tools/list, resources/list, resources/templates/list, prompts/list */

static ngx_int_t
ngx_http_mcp_list(ngx_http_mcp_call_t *call)
{
    cJSON                       *result;
    ngx_int_t                    rc;
    ngx_array_t                 *entries;
    ngx_http_mcp_set_t          *set;
    ngx_http_mcp_listing_t      *l;
    ngx_http_mcp_loc_conf_t     *mlcf;
    ngx_http_mcp_tool_filter_t   filter, *f;

    l = ngx_http_mcp_method(&call->method)->listing;

    if (ngx_http_mcp_authorize(call, l->capability, NULL) != NGX_OK) {
        return NGX_OK;
    }

    mlcf = ngx_http_mcp_call_conf(call);

    if (mlcf->aggregate != NULL) {
        return mlcf->aggregate(call, NULL);
    }

    set = mlcf->set;
    entries = (ngx_array_t *) ((u_char *) set + l->offset);
    f = NULL;

    if (entries == &set->tools) {
        /* a tool the caller or the policy may not call is not there */
        entries = ngx_http_mcp_permitted_tools(call, entries);
        if (entries == NULL) {
            return NGX_ERROR;
        }

        filter.allowed = ngx_http_mcp_policy_allows;
        filter.message = NULL;
        filter.data = mlcf;
        f = &filter;
    }

    result = ngx_http_mcp_list_page(call->pool, entries, l->key,
                                    ngx_http_mcp_json_get(call->params,
                                                          "cursor"),
                                    mlcf->page_size, f, &rc);
    if (rc == NGX_DECLINED) {
        ngx_http_mcp_call_error(call, NGX_HTTP_MCP_INVALID_PARAMS,
                                "Invalid params: invalid cursor");
        return NGX_OK;
    }

    if (result == NULL
        || (f != NULL && ngx_http_mcp_task_listing(call, result) != NGX_OK))
    {
        cJSON_Delete(result);
        return NGX_ERROR;
    }

    ngx_http_mcp_call_result(call, result);

    return NGX_OK;
}


static ngx_uint_t
ngx_http_mcp_policy_allows(void *data, ngx_str_t *name)
{
    return ngx_http_mcp_tool_allowed(data, name);
}


static ngx_int_t
ngx_http_mcp_tools_call(ngx_http_mcp_call_t *call)
{
    cJSON                      *name;
    u_char                      logged[NGX_HTTP_MCP_LOG_NAME_LEN], *end;
    u_char                     *error;
    ngx_int_t                   rc;
    ngx_str_t                   s;
    ngx_http_mcp_aggregate_pt   aggregate;

    if (ngx_http_mcp_param(call, call->params, "name", cJSON_String, 1,
                           &name) != NGX_OK
        || ngx_http_mcp_param(call, call->params, "arguments", cJSON_Object,
                              0, &call->arguments) != NGX_OK)
    {
        return NGX_OK;
    }

    s.data = (u_char *) name->valuestring;
    s.len = ngx_strlen(s.data);

    if (ngx_http_mcp_authorize(call, "tools", &s) != NGX_OK) {
        return NGX_OK;
    }

    aggregate = ngx_http_mcp_call_conf(call)->aggregate;

    if (aggregate == NULL) {
        call->entry = ngx_http_mcp_find(
                          &ngx_http_mcp_call_conf(call)->set->tools, &s);

        if (call->entry == NULL) {
            return ngx_http_mcp_invalid_params(call, "Unknown tool: %s",
                                               name->valuestring);
        }
    }

    /* a backend's tool (mcp_backend): the policy sees its full name */

    if (!ngx_http_mcp_tool_allowed(ngx_http_mcp_call_conf(call), &s)) {
        end = ngx_http_mcp_log_bounded(logged, sizeof(logged), s.data,
                                       s.len);
        ngx_log_error(NGX_LOG_INFO, call->log, 0,
                      "mcp: tool \"%*s\" denied by policy", end - logged,
                      logged);

        ngx_http_mcp_call_error(call, NGX_HTTP_MCP_INVALID_PARAMS,
                                "Tool not allowed");
        return NGX_OK;
    }

    if (aggregate != NULL) {
        /* a backend's tool: the input limits hold here too */
        rc = ngx_http_mcp_hooks.check_input(call->loc_conf, call->pool,
                                           call->arguments, &error);
        if (rc != NGX_OK) {
            ngx_http_mcp_call_error(call, (rc == NGX_DECLINED)
                                          ? NGX_HTTP_MCP_INVALID_PARAMS
                                          : NGX_HTTP_MCP_INTERNAL_ERROR,
                                    (rc == NGX_DECLINED)
                                    ? (const char *) error
                                    : "Internal error");
            return NGX_OK;
        }

        /* before a leg is sent: it is printed from these arguments */
        if (ngx_http_mcp_guarded(call) != NGX_OK) {
            return NGX_OK;
        }

        return aggregate(call, NULL);
    }

    /* a tool that mirrors no argument into a header has none to check */
    if (ngx_http_mcp_call_stateless(call) && call->entry->params
        && ngx_http_mcp_check_param_headers(call) != NGX_OK)
    {
        return NGX_OK;
    }

    /*
     * after the headers (they mirror what the client sent), before the
     * schema (a redacted value is held to it too) and the tool
     */
    if (ngx_http_mcp_guarded(call) != NGX_OK) {
        return NGX_OK;
    }

    if (ngx_http_mcp_check_arguments(call) != NGX_OK) {
        return NGX_OK;
    }

    /* the tool runs, as a task when it goes on (see task.c) */
    return ngx_http_mcp_task_call(call, ngx_http_mcp_run_entry);
}


/* the guardrails on a call's arguments: NGX_OK, or the call answered */

static ngx_int_t
ngx_http_mcp_guarded(ngx_http_mcp_call_t *call)
{
    ngx_int_t    rc;
    const char  *why;

    rc = ngx_http_mcp_guard_call_arguments(call, &why);

    if (rc == NGX_OK) {
        return NGX_OK;
    }

    if (rc == NGX_DECLINED) {
        ngx_log_error(NGX_LOG_INFO, call->log, 0,
                      "mcp: tools/call refused: %s", why);

        ngx_http_mcp_call_error(call, NGX_HTTP_MCP_INVALID_PARAMS, why);
        return NGX_DECLINED;
    }

    ngx_http_mcp_call_error(call, NGX_HTTP_MCP_INTERNAL_ERROR,
                            "Internal error");
    return NGX_DECLINED;
}


static ngx_int_t
ngx_http_mcp_prompts_get(ngx_http_mcp_call_t *call)
{
    cJSON      *name;
    ngx_str_t   s;

    if (ngx_http_mcp_param(call, call->params, "name", cJSON_String, 1,
                           &name) != NGX_OK
        || ngx_http_mcp_param(call, call->params, "arguments", cJSON_Object,
                              0, &call->arguments) != NGX_OK)
    {
        return NGX_OK;
    }

    s.data = (u_char *) name->valuestring;
    s.len = ngx_strlen(s.data);

    if (ngx_http_mcp_authorize(call, "prompts", NULL) != NGX_OK) {
        return NGX_OK;
    }

    if (ngx_http_mcp_call_conf(call)->aggregate != NULL) {
        return ngx_http_mcp_call_conf(call)->aggregate(call, NULL);
    }

    call->entry = ngx_http_mcp_find(
                      &ngx_http_mcp_call_conf(call)->set->prompts, &s);

    if (call->entry == NULL) {
        return ngx_http_mcp_invalid_params(call, "Unknown prompt: %s",
                                           name->valuestring);
    }

    if (ngx_http_mcp_check_prompt_arguments(call) != NGX_OK) {
        return NGX_OK;
    }

    return ngx_http_mcp_run_entry(call);
}


/* every argument the prompt marks required is present, and a string */

static ngx_int_t
ngx_http_mcp_check_prompt_arguments(ngx_http_mcp_call_t *call)
{
    cJSON  *decl, *arg, *name, *required, *value;

    decl = ngx_http_mcp_json_get(call->entry->desc, "arguments");

    cJSON_ArrayForEach(arg, decl) {
        name = ngx_http_mcp_json_get(arg, "name");
        required = ngx_http_mcp_json_get(arg, "required");

        if (!cJSON_IsString(name)) {
            continue;
        }

        value = ngx_http_mcp_json_get(call->arguments, name->valuestring);

        if (value == NULL && cJSON_IsTrue(required)) {
            (void) ngx_http_mcp_invalid_params(call,
                       "Invalid params: missing required argument \"%s\"",
                       name->valuestring);
            return NGX_DECLINED;
        }

        if (value != NULL && !cJSON_IsString(value)) {
            (void) ngx_http_mcp_invalid_params(call,
                       "Invalid params: argument \"%s\" must be a string",
                       name->valuestring);
            return NGX_DECLINED;
        }
    }

    return NGX_OK;
}


static ngx_int_t
ngx_http_mcp_resources_read(ngx_http_mcp_call_t *call)
{
    if (ngx_http_mcp_authorize(call, "resources", NULL) != NGX_OK) {
        return NGX_OK;
    }

    if (ngx_http_mcp_call_conf(call)->aggregate != NULL) {
        return ngx_http_mcp_call_conf(call)->aggregate(call, NULL);
    }

    if (ngx_http_mcp_find_resource(call) == NULL) {
        return NGX_OK;
    }

    return ngx_http_mcp_run_entry(call);
}


/*
 * The handler of a tool, prompt or resource: on a stateless retry, once
 * the answers and the state it brings are checked (see mrtr.c).
 */

static ngx_int_t
ngx_http_mcp_run_entry(ngx_http_mcp_call_t *call)
{
    ngx_int_t  rc;

    if (ngx_http_mcp_call_stateless(call)) {
        rc = ngx_http_mcp_call_open_state(call);

        if (rc != NGX_OK) {
            return (rc == NGX_DECLINED) ? NGX_OK : rc;
        }
    }

    return call->entry->handler(call);
}


static ngx_int_t
ngx_http_mcp_subscribe(ngx_http_mcp_call_t *call)
{
    ngx_int_t   rc;
    ngx_uint_t  subscribe;

    subscribe = (call->method.len == sizeof("resources/subscribe") - 1);

    if (ngx_http_mcp_authorize(call, "resources", NULL) != NGX_OK) {
        return NGX_OK;
    }

    if (ngx_http_mcp_call_conf(call)->aggregate != NULL) {
        /* the backend that has the URI holds the subscription */
        return ngx_http_mcp_call_conf(call)->aggregate(call, NULL);
    }

    if (ngx_http_mcp_find_resource(call) == NULL) {
        return NGX_OK;
    }

    rc = ngx_http_mcp_session_subscribe(ngx_http_mcp_call_conf(call)->zone,
                                        &call->rctx->session_id, &call->uri,
                                        subscribe);
    switch (rc) {

    case NGX_OK:
        break;

    case NGX_ABORT:
        ngx_http_mcp_call_error(call, NGX_HTTP_MCP_INVALID_PARAMS,
                                "Invalid params: the URI is too long to "
                                "subscribe to");
        return NGX_OK;

    case NGX_BUSY:
        ngx_http_mcp_call_error(call, NGX_HTTP_MCP_INVALID_PARAMS,
                                "Invalid params: the session holds as many "
                                "subscriptions as it may");
        return NGX_OK;

    case NGX_DECLINED:
        ngx_http_mcp_call_error(call, NGX_HTTP_MCP_SESSION_NOT_FOUND,
                                "Session not found");
        return NGX_OK;

    default:
        /* an [error] line: the zone is too small for its sessions */
        ngx_http_mcp_call_error(call, NGX_HTTP_MCP_INTERNAL_ERROR,
                                "Internal error: no room in the session "
                                "zone for the subscription");
        return NGX_OK;
    }

    ngx_http_mcp_call_result(call, cJSON_CreateObject());

    return NGX_OK;
}


/*
 * Finds the resource that params.uri names, directly or through a
 * template, and sets call->uri, call->entry and call->vars.  Ends the
 * call with an error and returns NULL when there is none.
 */

static ngx_http_mcp_entry_t *
ngx_http_mcp_find_resource(ngx_http_mcp_call_t *call)
{
    cJSON               *uri;
    ngx_http_mcp_set_t  *set;

    if (ngx_http_mcp_param(call, call->params, "uri", cJSON_String, 1, &uri)
        != NGX_OK)
    {
        return NULL;
    }

    set = ngx_http_mcp_call_conf(call)->set;

    call->uri.data = (u_char *) uri->valuestring;
    call->uri.len = ngx_strlen(uri->valuestring);

    call->entry = ngx_http_mcp_find(&set->resources, &call->uri);

    if (call->entry == NULL
        && ngx_http_mcp_find_template(call->pool, &set->templates,
                                      &call->uri, &call->entry, &call->vars)
           == NGX_ERROR)
    {
        ngx_http_mcp_call_error(call, NGX_HTTP_MCP_INTERNAL_ERROR,
                                "Internal error");
        return NULL;
    }

    if (call->entry == NULL) {
        ngx_http_mcp_call_resource_not_found(call);
    }

    return call->entry;
}


/*
 * Gets obj[name], which must be of the given cJSON type.  On a missing
 * required member or a wrong type ends the call with -32602 and returns
 * NGX_DECLINED.
 */

static ngx_int_t
ngx_http_mcp_param(ngx_http_mcp_call_t *call, cJSON *obj, const char *name,
    int type, ngx_uint_t required, cJSON **value)
{
    *value = ngx_http_mcp_json_get(obj, name);

    if (*value == NULL) {
        if (!required) {
            return NGX_OK;
        }

        (void) ngx_http_mcp_invalid_params(call,
                   "Invalid params: \"%s\" is required", name);
        return NGX_DECLINED;
    }

    if (((*value)->type & 0xff) != type) {
        (void) ngx_http_mcp_invalid_params(call,
                   "Invalid params: \"%s\" has the wrong type", name);
        return NGX_DECLINED;
    }

    return NGX_OK;
}


static ngx_int_t
ngx_http_mcp_invalid_params(ngx_http_mcp_call_t *call, const char *fmt,
    const char *name)
{
    u_char  *msg, *last;

    /* room for the format and a name cut to a sane length */
    msg = ngx_pnalloc(call->pool, 256);
    if (msg == NULL) {
        return NGX_ERROR;
    }

    last = ngx_snprintf(msg, 255, fmt, name);
    *last = '\0';

    ngx_http_mcp_call_error(call, NGX_HTTP_MCP_INVALID_PARAMS,
                            (const char *) msg);

    return NGX_OK;
}


/* ---- authorization and input validation (ngx_http_mcp_auth_module) ---- */

/*
 * NGX_OK when the caller may go on; else the call has ended with an
 * error, and a single request's reply is HTTP 403 with the challenge.
 * Decided from the call's copy of the caller's token, so it holds
 * however long the call outlives its POST.
 */

static ngx_int_t
ngx_http_mcp_authorize(ngx_http_mcp_call_t *call, const char *capability,
    ngx_str_t *tool)
{
    u_char     *msg;
    ngx_str_t   scope;

    if (ngx_http_mcp_hooks.permits(call->rctx->auth, capability, tool, &scope)
        == NGX_OK)
    {
        return NGX_OK;
    }

    if (call->ctx != NULL) {
        call->edge->challenge(call, &scope);
    }

    msg = ngx_pnalloc(call->pool, 128 + scope.len);
    if (msg == NULL) {
        return NGX_ERROR;
    }

    (void) ngx_sprintf(msg, "Forbidden: insufficient scope, \"%V\" is "
                    "required%Z", &scope);

    ngx_http_mcp_call_error(call, NGX_HTTP_MCP_INVALID_REQUEST,
                            (const char *) msg);

    return NGX_DECLINED;
}


/* the tools a caller may call, in the set's order */

static ngx_array_t *
ngx_http_mcp_permitted_tools(ngx_http_mcp_call_t *call, ngx_array_t *tools)
{
    ngx_str_t              scope;
    ngx_uint_t             i;
    ngx_array_t           *list;
    ngx_http_mcp_entry_t  *e, *t;

    if (call->rctx->auth == NULL) {
        return tools;
    }

    list = ngx_array_create(call->pool, ngx_max(tools->nelts, 1),
                            sizeof(ngx_http_mcp_entry_t));
    if (list == NULL) {
        return NULL;
    }

    e = tools->elts;

    for (i = 0; i < tools->nelts; i++) {
        if (ngx_http_mcp_hooks.permits(call->rctx->auth, "tools",
                                      &e[i].name, &scope)
            != NGX_OK)
        {
            continue;
        }

        t = ngx_array_push(list);
        if (t == NULL) {
            return NULL;
        }

        *t = e[i];
    }

    return list;
}


/*
 * 2026-07-28 (SEP-2243): the arguments that the tool's schema mirrors
 * into Mcp-Param-* headers must be what the headers say, or a proxy may
 * have routed on a value the tool never sees.  The edge handed the
 * headers over as data.  NGX_OK, or NGX_DECLINED when the call has ended
 * with -32020, which a stateless POST answers with HTTP 400.
 */

static ngx_int_t
ngx_http_mcp_check_param_headers(ngx_http_mcp_call_t *call)
{
    u_char     *error;
    ngx_int_t   rc;

    rc = ngx_http_mcp_param_check(call->pool,
                                  ngx_http_mcp_json_get(call->entry->desc,
                                                        "inputSchema"),
                                  call->arguments, call->param_headers,
                                  &error);
    if (rc == NGX_OK) {
        return NGX_OK;
    }

    if (rc == NGX_ERROR) {
        ngx_http_mcp_call_error(call, NGX_HTTP_MCP_INTERNAL_ERROR,
                                "Internal error");
        return NGX_DECLINED;
    }

    ngx_http_mcp_call_error(call, NGX_HTTP_MCP_HEADER_MISMATCH,
                            (const char *) error);

    return NGX_DECLINED;
}


/*
 * Input limits, then the tool's inputSchema.  NGX_OK, or NGX_DECLINED
 * when the call has ended: -32602 over a limit, a tool result with
 * isError for arguments the schema refuses.
 */

static ngx_int_t
ngx_http_mcp_check_arguments(ngx_http_mcp_call_t *call)
{
    u_char                      *error;
    cJSON                       *schema, *result, empty;
    ngx_int_t                    rc;
    ngx_http_mcp_schema_opts_t   opts;

    if (ngx_http_mcp_hooks.check_input(call->loc_conf, call->pool,
                                      call->arguments, &error)
        != NGX_OK)
    {
        ngx_http_mcp_call_error(call, NGX_HTTP_MCP_INVALID_PARAMS,
                                (const char *) error);
        return NGX_DECLINED;
    }

    ngx_memzero(&opts, sizeof(ngx_http_mcp_schema_opts_t));
    opts.format_assert = ngx_http_mcp_hooks.format_assert(call->loc_conf);
    opts.compiled = call->entry->input_schema;

    /* a tool added otherwise than by ngx_http_mcp_add() is not compiled */
    schema = (opts.compiled != NULL)
             ? opts.compiled->root
             : ngx_http_mcp_json_get(call->entry->desc, "inputSchema");

    ngx_memzero(&empty, sizeof(cJSON));
    empty.type = cJSON_Object;

    rc = ngx_http_mcp_schema_validate_opts(call->pool, schema,
                                           call->arguments ? call->arguments
                                                           : &empty,
                                           &opts, &error);
    if (rc == NGX_OK) {
        /* what the tool gives back is held to its outputSchema */
        if (call->finish == NULL && call->entry->output_schema != NULL) {
            call->finish = ngx_http_mcp_output_check;
        }

        return NGX_OK;
    }

    if (rc == NGX_ERROR) {
        ngx_http_mcp_call_error(call, NGX_HTTP_MCP_INTERNAL_ERROR,
                                "Internal error");
        return NGX_DECLINED;
    }

    ngx_log_error(NGX_LOG_INFO, call->log, 0,
                  "mcp: tool \"%V\" arguments refused: %s",
                  &call->entry->name, error);

    result = ngx_http_mcp_text_result((const char *) error, 1);

    ngx_http_mcp_call_result(call, result);

    return NGX_DECLINED;
}
