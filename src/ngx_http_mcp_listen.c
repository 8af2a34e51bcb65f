
/*
 * subscriptions/listen (2026-07-28): a stateless client's one stream of
 * notifications.  Its params name what the client wants; the reply is a
 * stream that starts with the acknowledgement of what will be sent (the
 * lists asked for that the set has) and then carries those lists'
 * changes, each naming the listen request's id as its subscription.
 */


#include "ngx_http_mcp_internal.h"


static ngx_int_t ngx_http_mcp_listen_lists(ngx_http_mcp_call_t *call,
    cJSON *filter, cJSON *honored, ngx_uint_t *lists);
static ngx_int_t ngx_http_mcp_listen_invalid(ngx_http_mcp_call_t *call,
    const char *fmt, ngx_uint_t n);


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

    filter = cJSON_GetObjectItemCaseSensitive(call->params, "notifications");

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
                                  "io.modelcontextprotocol/subscriptionId",
                                  cJSON_Duplicate(call->id, 1))
        || ngx_http_mcp_listen_lists(call, filter, honored, &lists) != NGX_OK)
    {
        cJSON_Delete(params);
        return NGX_ERROR;
    }

    if (ngx_http_mcp_call_notify(call,
                                 "notifications/subscriptions/acknowledged",
                                 params)
        != NGX_OK)
    {
        return NGX_ERROR;
    }

    id.data = ngx_http_mcp_jsonrpc_print(call->pool, call->id, &id.len);
    if (id.data == NULL) {
        return NGX_ERROR;
    }

    return ngx_http_mcp_session_listen(ngx_http_mcp_call_conf(call)->zone,
                                       &call->rctx->session_id, call->stream,
                                       lists, &id, &uris, call->log);
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
        if (!cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(filter,
                                                           kinds[i].key))
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
