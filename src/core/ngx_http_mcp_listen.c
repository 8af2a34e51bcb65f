
/*
 * subscriptions/listen (2026-07-28): a stateless client's one stream of
 * notifications.  Its params name what the client wants: list changes
 * and, in resourceSubscriptions, the resources whose updates it wants.
 * The reply is a stream that starts with the acknowledgement of what
 * will be sent and then carries it, each notification tagged with the
 * listen request's id.
 *
 * What the server does not agree to send is left out of the
 * acknowledgement rather than refused: that is what the spec makes the
 * acknowledgement for ("the subset the server agreed to honor").  So a
 * URI that names none of the set's resources or templates is dropped.
 * Params that break the schema or the zone's limits (subscriptions=,
 * subscription_uri=, as for resources/subscribe) are refused with
 * -32602 instead: before the acknowledgement, while the call can still
 * end with an error.
 */


#include "ngx_http_mcp_core.h"
#include "ngx_http_mcp_json.h"
#include "ngx_http_mcp_store.h"
#include "ngx_http_mcp_call.h"


static ngx_int_t ngx_http_mcp_listen_lists(ngx_http_mcp_call_t *call,
    cJSON *filter, cJSON *honored, ngx_uint_t *lists);
static ngx_int_t ngx_http_mcp_listen_resources(ngx_http_mcp_call_t *call,
    cJSON *filter, cJSON *honored, ngx_array_t *uris);
static ngx_int_t ngx_http_mcp_listen_known(ngx_http_mcp_call_t *call,
    ngx_array_t *uris, ngx_str_t *uri);
static ngx_int_t ngx_http_mcp_listen_invalid(ngx_http_mcp_call_t *call,
    const char *fmt, ngx_uint_t n);
static void ngx_http_mcp_listen_quit(ngx_http_mcp_call_t *call);


/*
 * The call does not end: its client leaves, the request's session goes,
 * and the call and the listener with it.
 */

ngx_int_t
ngx_http_mcp_listen(ngx_http_mcp_call_t *call)
{
    cJSON        *filter, *honored, *params, *meta;
    ngx_str_t     id;
    ngx_int_t     rc;
    ngx_uint_t    lists;
    ngx_array_t   uris;

    filter = ngx_http_mcp_json_get(call->params, "notifications");

    if (!cJSON_IsObject(filter)) {
        rc = ngx_http_mcp_listen_invalid(call,
                 filter ? "Invalid params: \"notifications\" has the "
                          "wrong type"
                        : "Invalid params: \"notifications\" is required",
                 0);

        return (rc == NGX_DECLINED) ? NGX_OK : rc;
    }

    if (ngx_array_init(&uris, call->pool, 4, sizeof(ngx_str_t)) != NGX_OK) {
        return NGX_ERROR;
    }

    params = cJSON_CreateObject();
    honored = cJSON_AddObjectToObject(params, "notifications");
    meta = cJSON_AddObjectToObject(params, "_meta");

    if (honored == NULL || meta == NULL
        || !cJSON_AddItemToObject(meta,
                                  NGX_HTTP_MCP_SUBSCRIPTION_META,
                                  cJSON_Duplicate(call->id, 1)))
    {
        cJSON_Delete(params);
        return NGX_ERROR;
    }

    rc = ngx_http_mcp_listen_lists(call, filter, honored, &lists);

    if (rc == NGX_OK) {
        rc = ngx_http_mcp_listen_resources(call, filter, honored, &uris);
    }

    if (rc != NGX_OK) {
        cJSON_Delete(params);
        return (rc == NGX_DECLINED) ? NGX_OK : rc;
    }

    /*
     * The acknowledgement goes into the stream before the listener is
     * known to the zone: a change on another worker cannot come first.
     */

    if (ngx_http_mcp_call_notify(call,
                                 "notifications/subscriptions/acknowledged",
                                 params)
        != NGX_OK)
    {
        return NGX_ERROR;
    }

    id.data = ngx_http_mcp_json_print(call->pool, call->id, &id.len);
    if (id.data == NULL) {
        return NGX_ERROR;
    }

    /* an exiting worker ends it, then its stream: the client listens anew */
    call->endless = 1;
    call->quit = ngx_http_mcp_listen_quit;

    return ngx_http_mcp_session_listen(ngx_http_mcp_call_conf(call)->zone,
                                       &call->rctx->session_id, call->stream,
                                       lists, &id, &uris, call->log);
}


/*
 * The server ends the subscription (the worker exits): the listen
 * request's result, empty but for the subscription's id in its _meta,
 * is the stream's last message; ngx_http_mcp_call_result() adds the
 * resultType and who we are.
 */

static void
ngx_http_mcp_listen_quit(ngx_http_mcp_call_t *call)
{
    cJSON  *result, *meta;

    result = cJSON_CreateObject();
    meta = cJSON_AddObjectToObject(result, "_meta");

    if (meta == NULL
        || !cJSON_AddItemToObjectCS(meta, NGX_HTTP_MCP_SUBSCRIPTION_META,
                                    cJSON_Duplicate(call->id, 1)))
    {
        cJSON_Delete(result);
        result = NULL;
    }

    /* NULL: the call ends with an internal error, its stream still ends */
    ngx_http_mcp_call_result(call, result);
}


/* the list changes asked for that the set has lists for */

static ngx_int_t
ngx_http_mcp_listen_lists(ngx_http_mcp_call_t *call, cJSON *filter,
    cJSON *honored, ngx_uint_t *lists)
{
    ngx_uint_t           i;
    ngx_http_mcp_set_t  *set;

    static struct {
        const char      *key;
        ngx_uint_t       list;
        size_t           offset;
    } kinds[] = {
        { "toolsListChanged", NGX_HTTP_MCP_LISTEN_TOOLS,
          offsetof(ngx_http_mcp_set_t, tools) },
        { "promptsListChanged", NGX_HTTP_MCP_LISTEN_PROMPTS,
          offsetof(ngx_http_mcp_set_t, prompts) },
        { "resourcesListChanged", NGX_HTTP_MCP_LISTEN_RESOURCES,
          offsetof(ngx_http_mcp_set_t, resources) },
        { NULL, 0, 0 }
    };

    set = ngx_http_mcp_call_conf(call)->set;
    *lists = 0;

    for (i = 0; kinds[i].key; i++) {
        if (!cJSON_IsTrue(ngx_http_mcp_json_get(filter, kinds[i].key))
            || ((ngx_array_t *) ((u_char *) set + kinds[i].offset))->nelts
               == 0)
        {
            continue;
        }

        if (!cJSON_AddTrueToObject(honored, kinds[i].key)) {
            return NGX_ERROR;
        }

        *lists |= kinds[i].list;
    }

    return NGX_OK;
}


/*
 * resourceSubscriptions: each URI of a resource of the set (or of one of
 * its templates), once, goes into uris and the acknowledgement, when
 * the caller may read resources.  NGX_DECLINED: the call ended with
 * -32602 (not an array of strings, more URIs than a session may
 * subscribe to, a URI longer than one it may subscribe to).
 */

static ngx_int_t
ngx_http_mcp_listen_resources(ngx_http_mcp_call_t *call, cJSON *filter,
    cJSON *honored, ngx_array_t *uris)
{
    cJSON       *list, *item, *acked;
    size_t       max_uri;
    ngx_int_t    rc;
    ngx_str_t    uri, scope, *u;
    ngx_uint_t   i, max;

    list = ngx_http_mcp_json_get(filter, "resourceSubscriptions");

    if (list == NULL) {
        return NGX_OK;
    }

    ngx_http_mcp_session_limits(ngx_http_mcp_call_conf(call)->zone, &max,
                                &max_uri);

    if (!cJSON_IsArray(list)) {
        return ngx_http_mcp_listen_invalid(call, "Invalid params: "
                   "\"resourceSubscriptions\" must be an array of "
                   "strings", 0);
    }

    if ((ngx_uint_t) cJSON_GetArraySize(list) > max) {
        return ngx_http_mcp_listen_invalid(call, "Invalid params: "
                   "\"resourceSubscriptions\" names more than %ui URIs",
                   max);
    }

    cJSON_ArrayForEach(item, list) {
        if (!cJSON_IsString(item)) {
            return ngx_http_mcp_listen_invalid(call, "Invalid params: "
                       "\"resourceSubscriptions\" must be an array of "
                       "strings", 0);
        }

        if (ngx_strlen(item->valuestring) > max_uri) {
            return ngx_http_mcp_listen_invalid(call, "Invalid params: "
                       "a URI of \"resourceSubscriptions\" is longer "
                       "than %ui bytes", (ngx_uint_t) max_uri);
        }
    }

    /* a caller who may not read resources is told of none */
    if (ngx_http_mcp_hooks.permits(call->rctx->auth, "resources", NULL,
                                  &scope)
        != NGX_OK)
    {
        return NGX_OK;
    }

    cJSON_ArrayForEach(item, list) {
        uri.data = (u_char *) item->valuestring;
        uri.len = ngx_strlen(item->valuestring);

        rc = ngx_http_mcp_listen_known(call, uris, &uri);

        if (rc == NGX_DECLINED) {
            continue;
        }

        if (rc != NGX_OK) {
            return NGX_ERROR;
        }

        u = ngx_array_push(uris);
        if (u == NULL) {
            return NGX_ERROR;
        }

        *u = uri;
    }

    if (uris->nelts == 0) {
        return NGX_OK;
    }

    acked = cJSON_AddArrayToObject(honored, "resourceSubscriptions");
    if (acked == NULL) {
        return NGX_ERROR;
    }

    u = uris->elts;

    for (i = 0; i < uris->nelts; i++) {
        if (!cJSON_AddItemToArray(acked,
                                  cJSON_CreateString((char *) u[i].data)))
        {
            return NGX_ERROR;
        }
    }

    return NGX_OK;
}


/*
 * NGX_OK: a URI the set serves, not in uris yet; NGX_DECLINED: another,
 * or one in uris already; NGX_ERROR.
 */

static ngx_int_t
ngx_http_mcp_listen_known(ngx_http_mcp_call_t *call, ngx_array_t *uris,
    ngx_str_t *uri)
{
    ngx_str_t             *u;
    ngx_uint_t             i;
    ngx_array_t           *vars;
    ngx_http_mcp_set_t    *set;
    ngx_http_mcp_entry_t  *entry;

    u = uris->elts;

    for (i = 0; i < uris->nelts; i++) {
        if (u[i].len == uri->len
            && ngx_memcmp(u[i].data, uri->data, uri->len) == 0)
        {
            return NGX_DECLINED;
        }
    }

    set = ngx_http_mcp_call_conf(call)->set;

    if (ngx_http_mcp_find(&set->resources, uri) != NULL) {
        return NGX_OK;
    }

    return ngx_http_mcp_find_template(call->pool, &set->templates, uri,
                                      &entry, &vars);
}


/* ends the call with -32602; fmt may print one number */

static ngx_int_t
ngx_http_mcp_listen_invalid(ngx_http_mcp_call_t *call, const char *fmt,
    ngx_uint_t n)
{
    u_char  *msg;

    msg = ngx_pnalloc(call->pool, ngx_strlen(fmt) + NGX_INT_T_LEN + 1);
    if (msg == NULL) {
        return NGX_ERROR;
    }

    *ngx_sprintf(msg, fmt, n) = '\0';

    ngx_http_mcp_call_error(call, NGX_HTTP_MCP_INVALID_PARAMS,
                            (const char *) msg);

    return NGX_DECLINED;
}
