
/*
 * A module of another vendor, in a .so of its own, for
 * t/extension_api.t: built against the nginx tree the tested
 * ngx_http_mcp_module.so came from and loaded after it.  It includes
 * the public header alone and answers with what the accessors give, so
 * that the test sees the extension API from outside.
 *
 *   -DEXT_API=N            claims version N of the API
 *   -DEXT_DUPLICATE_SET    registers its set twice
 *   -DEXT_DUPLICATE_TOOL   adds its tool twice
 */


#include "ngx_http_mcp.h"


#if (NGX_HTTP_MCP_API_VERSION != 1)
#error "written for version 1 of the ngx_http_mcp_module API"
#endif

#ifndef EXT_API
#define EXT_API  NGX_HTTP_MCP_API_VERSION
#endif


typedef struct {
    ngx_str_t                  greeting;
} ngx_http_mcp_ext_loc_conf_t;


static ngx_int_t ngx_http_mcp_ext_preconfiguration(ngx_conf_t *cf);
static void *ngx_http_mcp_ext_create_loc_conf(ngx_conf_t *cf);
static char *ngx_http_mcp_ext_merge_loc_conf(ngx_conf_t *cf, void *parent,
    void *child);
static ngx_int_t ngx_http_mcp_ext_set(ngx_conf_t *cf,
    ngx_http_mcp_set_t *set);
static ngx_int_t ngx_http_mcp_ext_echo(ngx_http_mcp_call_t *call);
static ngx_int_t ngx_http_mcp_ext_item(ngx_http_mcp_call_t *call);
static ngx_int_t ngx_http_mcp_ext_complete(ngx_http_mcp_call_t *call);
static char *ngx_http_mcp_ext_cstr(ngx_http_mcp_call_t *call, ngx_str_t *s);


static ngx_command_t  ngx_http_mcp_ext_commands[] = {

    { ngx_string("mcp_ext_greeting"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_str_slot,
      NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(ngx_http_mcp_ext_loc_conf_t, greeting),
      NULL },

      ngx_null_command
};


static ngx_http_module_t  ngx_http_mcp_ext_test_module_ctx = {
    ngx_http_mcp_ext_preconfiguration,     /* preconfiguration */
    NULL,                                  /* postconfiguration */

    NULL,                                  /* create main configuration */
    NULL,                                  /* init main configuration */

    NULL,                                  /* create server configuration */
    NULL,                                  /* merge server configuration */

    ngx_http_mcp_ext_create_loc_conf,      /* create location configuration */
    ngx_http_mcp_ext_merge_loc_conf        /* merge location configuration */
};


ngx_module_t  ngx_http_mcp_ext_test_module = {
    NGX_MODULE_V1,
    &ngx_http_mcp_ext_test_module_ctx,     /* module context */
    ngx_http_mcp_ext_commands,             /* module directives */
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


static ngx_int_t
ngx_http_mcp_ext_preconfiguration(ngx_conf_t *cf)
{
    if (ngx_http_mcp_api_version() != EXT_API) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "ngx_http_mcp_ext_test_module needs version %d "
                           "of the MCP API, the loaded module has %ui",
                           EXT_API, ngx_http_mcp_api_version());
        return NGX_ERROR;
    }

#ifdef EXT_DUPLICATE_SET
    if (ngx_http_mcp_add_provider(cf, "ext", ngx_http_mcp_ext_set)
        != NGX_OK)
    {
        return NGX_ERROR;
    }
#endif

    return ngx_http_mcp_add_provider(cf, "ext", ngx_http_mcp_ext_set);
}


static void *
ngx_http_mcp_ext_create_loc_conf(ngx_conf_t *cf)
{
    return ngx_pcalloc(cf->pool, sizeof(ngx_http_mcp_ext_loc_conf_t));
}


static char *
ngx_http_mcp_ext_merge_loc_conf(ngx_conf_t *cf, void *parent, void *child)
{
    ngx_http_mcp_ext_loc_conf_t *prev = parent;
    ngx_http_mcp_ext_loc_conf_t *conf = child;

    ngx_conf_merge_str_value(conf->greeting, prev->greeting, "none");

    return NGX_CONF_OK;
}


static ngx_int_t
ngx_http_mcp_ext_set(ngx_conf_t *cf, ngx_http_mcp_set_t *set)
{
    static char  tool[] = "{\"name\":\"ext_echo\","
                          "\"inputSchema\":{\"type\":\"object\"}}";

#ifdef EXT_DUPLICATE_TOOL
    if (ngx_http_mcp_add_tool(cf, set, tool, ngx_http_mcp_ext_echo, NULL)
        != NGX_OK)
    {
        return NGX_ERROR;
    }
#endif

#ifdef EXT_BAD_HEADER
    /* no client could send this header: clients drop the tool */
    if (ngx_http_mcp_add_tool(cf, set,
                              "{\"name\":\"ext_bad_header\",\"inputSchema\":"
                              "{\"type\":\"object\",\"properties\":{\"r\":"
                              "{\"type\":\"string\","
                              "\"x-mcp-header\":\"Re gion\"}}}}",
                              ngx_http_mcp_ext_echo, NULL)
        != NGX_OK)
    {
        return NGX_ERROR;
    }
#endif

    if (ngx_http_mcp_add_tool(cf, set, tool, ngx_http_mcp_ext_echo,
                              "the echo's data")
        != NGX_OK
        || ngx_http_mcp_add_template(cf, set,
                                     "{\"uriTemplate\":\"ext://item/{id}\","
                                     "\"name\":\"Item\"}",
                                     ngx_http_mcp_ext_item, NULL)
           != NGX_OK)
    {
        return NGX_ERROR;
    }

    set->complete = ngx_http_mcp_ext_complete;

    return NGX_OK;
}


/* the call as the accessors show it, as JSON in a text content */

static ngx_int_t
ngx_http_mcp_ext_echo(ngx_http_mcp_call_t *call)
{
    char                         *text, *method, *name, *greeting;
    cJSON                        *report, *client, *args, *content;
    ngx_http_mcp_reqctx_t        *rctx;
    ngx_http_mcp_ext_loc_conf_t  *elcf;

    elcf = ngx_http_mcp_call_loc_conf(call, &ngx_http_mcp_ext_test_module);
    rctx = ngx_http_mcp_call_client(call);

    ngx_http_mcp_call_set_data(call, elcf);

    method = ngx_http_mcp_ext_cstr(call, ngx_http_mcp_call_method(call));
    name = ngx_http_mcp_ext_cstr(call, ngx_http_mcp_call_entry_name(call));
    greeting = ngx_http_mcp_ext_cstr(call, &elcf->greeting);

    client = NULL;
    report = cJSON_CreateObject();
    args = ngx_http_mcp_call_arguments(call);

    if (report == NULL
        || method == NULL || name == NULL || greeting == NULL
        || cJSON_AddStringToObject(report, "method", method) == NULL
        || cJSON_AddStringToObject(report, "entry", name) == NULL
        || cJSON_AddStringToObject(report, "entry_data",
                                   ngx_http_mcp_call_entry_data(call))
           == NULL
        || cJSON_AddStringToObject(report, "greeting", greeting) == NULL
        || cJSON_AddBoolToObject(report, "progress",
                                 ngx_http_mcp_call_has_progress_token(call))
           == NULL
        || cJSON_AddBoolToObject(report, "data",
                                 ngx_http_mcp_call_data(call) == elcf)
           == NULL
        || cJSON_AddBoolToObject(report, "pool_and_log",
                                 ngx_http_mcp_call_pool(call) != NULL
                                 && ngx_http_mcp_call_get_log(call) != NULL)
           == NULL
        || cJSON_AddBoolToObject(report, "params",
                                 ngx_http_mcp_call_params(call) != NULL)
           == NULL
        || !cJSON_AddItemToObject(report, "arguments",
                                  (args != NULL) ? cJSON_Duplicate(args, 1)
                                                 : cJSON_CreateNull())
        || (client = cJSON_AddObjectToObject(report, "client")) == NULL)
    {
        cJSON_Delete(report);
        return NGX_ERROR;
    }

    name = ngx_http_mcp_ext_cstr(call, &rctx->client_name);

    if (name == NULL
        || cJSON_AddStringToObject(client, "name", name) == NULL
        || cJSON_AddNumberToObject(client, "version", rctx->version) == NULL
        || cJSON_AddBoolToObject(client, "sampling", rctx->sampling) == NULL
        || cJSON_AddBoolToObject(client, "elicitation", rctx->elicitation)
           == NULL
        || cJSON_AddBoolToObject(client, "roots", rctx->roots) == NULL)
    {
        cJSON_Delete(report);
        return NGX_ERROR;
    }

    text = cJSON_PrintUnformatted(report);
    cJSON_Delete(report);

    if (text == NULL) {
        return NGX_ERROR;
    }

    content = cJSON_CreateArray();

    if (content == NULL
        || !cJSON_AddItemToArray(content, ngx_http_mcp_text_content(text)))
    {
        cJSON_free(text);
        cJSON_Delete(content);
        return NGX_ERROR;
    }

    cJSON_free(text);

    ngx_http_mcp_call_result(call, ngx_http_mcp_tool_result(content, 0));

    return NGX_OK;
}


/* ext://item/{id}: the URI read and the template's variable */

static ngx_int_t
ngx_http_mcp_ext_item(ngx_http_mcp_call_t *call)
{
    char       *uri, *id;
    cJSON      *result, *contents, *item;
    ngx_str_t  *var;

    var = ngx_http_mcp_var(call, "id");
    if (var == NULL) {
        ngx_http_mcp_call_error(call, NGX_HTTP_MCP_INVALID_PARAMS, "No id");
        return NGX_OK;
    }

    uri = ngx_http_mcp_ext_cstr(call, ngx_http_mcp_call_uri(call));
    id = ngx_http_mcp_ext_cstr(call, var);

    result = cJSON_CreateObject();
    contents = cJSON_AddArrayToObject(result, "contents");
    item = cJSON_CreateObject();

    if (uri == NULL || id == NULL || contents == NULL
        || !cJSON_AddItemToArray(contents, item)
        || cJSON_AddStringToObject(item, "uri", uri) == NULL
        || cJSON_AddStringToObject(item, "text", id) == NULL)
    {
        if (contents == NULL || contents->child != item) {
            cJSON_Delete(item);
        }

        cJSON_Delete(result);
        return NGX_ERROR;
    }

    ngx_http_mcp_call_result(call, result);

    return NGX_OK;
}


/* completion/complete: the entry its ref names, and the method */

static ngx_int_t
ngx_http_mcp_ext_complete(ngx_http_mcp_call_t *call)
{
    char   *name, *method;
    cJSON  *result, *completion, *values;

    name = ngx_http_mcp_ext_cstr(call, ngx_http_mcp_call_entry_name(call));
    method = ngx_http_mcp_ext_cstr(call, ngx_http_mcp_call_method(call));

    result = cJSON_CreateObject();
    completion = cJSON_AddObjectToObject(result, "completion");
    values = cJSON_AddArrayToObject(completion, "values");

    if (values == NULL || name == NULL || method == NULL
        || !cJSON_AddItemToArray(values, cJSON_CreateString(name))
        || !cJSON_AddItemToArray(values, cJSON_CreateString(method)))
    {
        cJSON_Delete(result);
        return NGX_ERROR;
    }

    ngx_http_mcp_call_result(call, result);

    return NGX_OK;
}


static char *
ngx_http_mcp_ext_cstr(ngx_http_mcp_call_t *call, ngx_str_t *s)
{
    u_char  *p;

    if (s == NULL) {
        return NULL;
    }

    p = ngx_pnalloc(ngx_http_mcp_call_pool(call), s->len + 1);
    if (p == NULL) {
        return NULL;
    }

    *ngx_cpymem(p, s->data, s->len) = '\0';

    return (char *) p;
}
