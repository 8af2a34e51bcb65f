
/*
 * The extension API: what a handler may read of its call (see
 * ngx_http_mcp.h), so that the call's structure stays the module's own.
 * Accessors only; the life of a call is ngx_http_mcp_call.c.
 */


#include "ngx_http_mcp_core.h"
#include "ngx_http_mcp_call.h"


ngx_str_t *
ngx_http_mcp_var(ngx_http_mcp_call_t *call, char *name)
{
    size_t         len;
    ngx_uint_t     i;
    ngx_keyval_t  *kv;

    if (call->vars == NULL) {
        return NULL;
    }

    len = ngx_strlen(name);
    kv = call->vars->elts;

    for (i = 0; i < call->vars->nelts; i++) {
        if (kv[i].key.len == len
            && ngx_strncmp(kv[i].key.data, name, len) == 0)
        {
            return &kv[i].value;
        }
    }

    return NULL;
}


ngx_uint_t
ngx_http_mcp_api_version(void)
{
    return NGX_HTTP_MCP_API_VERSION;
}


ngx_pool_t *
ngx_http_mcp_call_pool(ngx_http_mcp_call_t *call)
{
    return call->pool;
}


ngx_log_t *
ngx_http_mcp_call_get_log(ngx_http_mcp_call_t *call)
{
    return call->log;
}


ngx_str_t *
ngx_http_mcp_call_method(ngx_http_mcp_call_t *call)
{
    return &call->method;
}


cJSON *
ngx_http_mcp_call_params(ngx_http_mcp_call_t *call)
{
    return call->params;
}


cJSON *
ngx_http_mcp_call_arguments(ngx_http_mcp_call_t *call)
{
    return call->arguments;
}


ngx_str_t *
ngx_http_mcp_call_uri(ngx_http_mcp_call_t *call)
{
    return &call->uri;
}


ngx_str_t *
ngx_http_mcp_call_entry_name(ngx_http_mcp_call_t *call)
{
    return (call->entry != NULL) ? &call->entry->name : NULL;
}


void *
ngx_http_mcp_call_entry_data(ngx_http_mcp_call_t *call)
{
    return (call->entry != NULL) ? call->entry->data : NULL;
}


void *
ngx_http_mcp_call_data(ngx_http_mcp_call_t *call)
{
    return call->data;
}


void
ngx_http_mcp_call_set_data(ngx_http_mcp_call_t *call, void *data)
{
    call->data = data;
}


ngx_uint_t
ngx_http_mcp_call_has_progress_token(ngx_http_mcp_call_t *call)
{
    return call->progress_token != NULL;
}


ngx_http_mcp_reqctx_t *
ngx_http_mcp_call_client(ngx_http_mcp_call_t *call)
{
    return call->rctx;
}


/* the request's loc_conf array, kept by the call: it outlives the request */

void *
ngx_http_mcp_call_loc_conf(ngx_http_mcp_call_t *call, ngx_module_t *module)
{
    if (call->loc_conf == NULL || module->type != NGX_HTTP_MODULE) {
        return NULL;
    }

    return call->loc_conf[module->ctx_index];
}


ngx_http_mcp_set_t *
ngx_http_mcp_call_set(ngx_http_mcp_call_t *call)
{
    return ngx_http_mcp_call_conf(call)->set;
}


/* the POST's request while the call is in it (its edge is there) */

ngx_http_request_t *
ngx_http_mcp_call_http_request(ngx_http_mcp_call_t *call)
{
    return call->request;
}
