
/*
 * ngx_http_mcp_loctool_module, its configuration: "mcp_tool NAME { }"
 * and "mcp_resource URI pass=..." describe entries whose content an
 * nginx location serves, and add them to the set of the level they are
 * written at (ngx_http_mcp_conf_set()).  The description is built here
 * once, as the JSON that tools/list shows; schemas come from a file or
 * inline JSON and are checked to be JSON objects, the validator of the
 * dispatch layer applies the input schema to every call.
 */


#include "ngx_http_mcp_loctool.h"
#include "ngx_http_mcp_http.h"


#if (NGX_HTTP_MCP_API_VERSION != 1)
#error "written for version 1 of the ngx_http_mcp_module API"
#endif


#define NGX_HTTP_MCP_LOCTOOL_SCHEMA_MAX  (1024 * 1024)


/* what one mcp_tool block collects while it is parsed */
typedef struct {
    cJSON                     *desc;
    ngx_http_mcp_loctool_t    *tool;
    unsigned                   method:1;
} ngx_http_mcp_loctool_block_t;


static ngx_int_t ngx_http_mcp_loctool_find_args(ngx_conf_t *cf,
    ngx_array_t *args);
static ngx_int_t ngx_http_mcp_loctool_preconfiguration(ngx_conf_t *cf);
static ngx_int_t ngx_http_mcp_loctool_postconfiguration(ngx_conf_t *cf);
static void *ngx_http_mcp_loctool_create_main_conf(ngx_conf_t *cf);
static void *ngx_http_mcp_loctool_create_loc_conf(ngx_conf_t *cf);
static char *ngx_http_mcp_loctool_merge_loc_conf(ngx_conf_t *cf,
    void *parent, void *child);
static char *ngx_http_mcp_loctool_tool(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
static char *ngx_http_mcp_loctool_line(ngx_conf_t *cf, ngx_command_t *dummy,
    void *conf);
static char *ngx_http_mcp_loctool_annotations(ngx_conf_t *cf, cJSON *desc);
static char *ngx_http_mcp_loctool_resource(ngx_conf_t *cf,
    ngx_command_t *cmd, void *conf);
static char *ngx_http_mcp_loctool_pass(ngx_conf_t *cf,
    ngx_http_mcp_loctool_t *tool, ngx_str_t *value);
static cJSON *ngx_http_mcp_loctool_schema(ngx_conf_t *cf, ngx_str_t *value);
static char *ngx_http_mcp_loctool_props(ngx_conf_t *cf,
    ngx_http_mcp_loctool_t *tool, cJSON *schema);
static char *ngx_http_mcp_loctool_add(ngx_conf_t *cf, cJSON *desc,
    ngx_http_mcp_loctool_t *tool);
static void ngx_http_mcp_loctool_json_cleanup(void *data);
static ngx_int_t ngx_http_mcp_loctool_set_string(cJSON *desc,
    const char *key, ngx_str_t *value);


static ngx_command_t  ngx_http_mcp_loctool_commands[] = {

    { ngx_string("mcp_tool"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_BLOCK
                        |NGX_CONF_TAKE1,
      ngx_http_mcp_loctool_tool,
      0,
      0,
      NULL },

    { ngx_string("mcp_resource"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_2MORE,
      ngx_http_mcp_loctool_resource,
      0,
      0,
      NULL },

    { ngx_string("mcp_tool_timeout"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_msec_slot,
      NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(ngx_http_mcp_loctool_loc_conf_t, timeout),
      NULL },

    { ngx_string("mcp_tool_max_size"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_size_slot,
      NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(ngx_http_mcp_loctool_loc_conf_t, max_size),
      NULL },

      ngx_null_command
};


static ngx_http_module_t  ngx_http_mcp_loctool_module_ctx = {
    ngx_http_mcp_loctool_preconfiguration, /* preconfiguration */
    ngx_http_mcp_loctool_postconfiguration, /* postconfiguration */

    ngx_http_mcp_loctool_create_main_conf, /* create main configuration */
    NULL,                                  /* init main configuration */

    NULL,                                  /* create server configuration */
    NULL,                                  /* merge server configuration */

    ngx_http_mcp_loctool_create_loc_conf,  /* create location configuration */
    ngx_http_mcp_loctool_merge_loc_conf    /* merge location configuration */
};


ngx_module_t  ngx_http_mcp_loctool_module = {
    NGX_MODULE_V1,
    &ngx_http_mcp_loctool_module_ctx,      /* module context */
    ngx_http_mcp_loctool_commands,         /* module directives */
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


static ngx_conf_enum_t  ngx_http_mcp_loctool_methods[] = {
    { ngx_string("GET"), NGX_HTTP_GET },
    { ngx_string("POST"), NGX_HTTP_POST },
    { ngx_string("PUT"), NGX_HTTP_PUT },
    { ngx_string("PATCH"), NGX_HTTP_PATCH },
    { ngx_string("DELETE"), NGX_HTTP_DELETE },
    { ngx_null_string, 0 }
};


static char *ngx_http_mcp_loctool_hints[] = {
    "readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint",
    NULL
};


static ngx_int_t
ngx_http_mcp_loctool_preconfiguration(ngx_conf_t *cf)
{
    if (ngx_http_mcp_api_version() != NGX_HTTP_MCP_API_VERSION) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "ngx_http_mcp_loctool_module needs version %d "
                           "of the MCP API, the loaded module has %ui",
                           NGX_HTTP_MCP_API_VERSION,
                           ngx_http_mcp_api_version());
        return NGX_ERROR;
    }

    return ngx_http_mcp_loctool_add_variables(cf);
}


/*
 * Every variable the configuration names is indexed by now: the
 * $mcp_arg_ ones say which arguments may reach a URI.
 */

static ngx_int_t
ngx_http_mcp_loctool_postconfiguration(ngx_conf_t *cf)
{
    ngx_http_mcp_loctool_main_conf_t  *lmcf;

    lmcf = ngx_http_conf_get_module_main_conf(cf,
                                              ngx_http_mcp_loctool_module);

    return ngx_http_mcp_loctool_find_args(cf, &lmcf->args);
}


static void *
ngx_http_mcp_loctool_create_main_conf(ngx_conf_t *cf)
{
    ngx_http_mcp_loctool_main_conf_t  *lmcf;

    lmcf = ngx_pcalloc(cf->pool, sizeof(ngx_http_mcp_loctool_main_conf_t));
    if (lmcf == NULL) {
        return NULL;
    }

    if (ngx_array_init(&lmcf->args, cf->pool, 4, sizeof(ngx_str_t))
        != NGX_OK)
    {
        return NULL;
    }

    return lmcf;
}


static void *
ngx_http_mcp_loctool_create_loc_conf(ngx_conf_t *cf)
{
    ngx_http_mcp_loctool_loc_conf_t  *conf;

    conf = ngx_palloc(cf->pool, sizeof(ngx_http_mcp_loctool_loc_conf_t));
    if (conf == NULL) {
        return NULL;
    }

    conf->args = NULL;

    conf->timeout = NGX_CONF_UNSET_MSEC;
    conf->max_size = NGX_CONF_UNSET_SIZE;

    return conf;
}


static char *
ngx_http_mcp_loctool_merge_loc_conf(ngx_conf_t *cf, void *parent,
    void *child)
{
    ngx_http_mcp_loctool_loc_conf_t *prev = parent;
    ngx_http_mcp_loctool_loc_conf_t *conf = child;

    ngx_http_mcp_loctool_main_conf_t  *lmcf;

    /* filled in at postconfiguration, read at run time */
    lmcf = ngx_http_conf_get_module_main_conf(cf,
                                              ngx_http_mcp_loctool_module);
    conf->args = &lmcf->args;

    ngx_conf_merge_msec_value(conf->timeout, prev->timeout, 30000);
    ngx_conf_merge_size_value(conf->max_size, prev->max_size, 1024 * 1024);

    if (conf->timeout == 0) {
        return "mcp_tool_timeout must be more than 0";
    }

    if (conf->max_size == 0) {
        return "mcp_tool_max_size must be more than 0";
    }

    return NGX_CONF_OK;
}


/* mcp_tool NAME { ... }: the block's lines go to loctool_line() */

static char *
ngx_http_mcp_loctool_tool(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    char                          *rv;
    u_char                        *p;
    ngx_str_t                     *value;
    ngx_uint_t                     i;
    ngx_conf_t                     save;
    ngx_pool_cleanup_t            *cln;
    ngx_http_mcp_loctool_t        *tool;
    ngx_http_mcp_loctool_block_t   block;

    value = cf->args->elts;

    /* the spec's tool names: 1 to 128 of A-Z a-z 0-9 _ - . */

    if (value[1].len == 0 || value[1].len > 128) {
        return "needs a tool name of 1 to 128 characters";
    }

    p = value[1].data;

    for (i = 0; i < value[1].len; i++) {
        if (!(isalnum(p[i]) || p[i] == '_' || p[i] == '-' || p[i] == '.')) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "invalid tool name \"%V\": only letters, "
                               "digits, \"_\", \"-\" and \".\"", &value[1]);
            return NGX_CONF_ERROR;
        }
    }

    tool = ngx_pcalloc(cf->pool, sizeof(ngx_http_mcp_loctool_t));
    if (tool == NULL) {
        return NGX_CONF_ERROR;
    }

    tool->name = value[1];
    tool->method = NGX_HTTP_POST;
    ngx_str_set(&tool->method_name, "POST");

    block.tool = tool;
    block.method = 0;
    block.desc = cJSON_CreateObject();

    cln = ngx_pool_cleanup_add(cf->temp_pool, 0);

    if (block.desc == NULL || cln == NULL) {
        cJSON_Delete(block.desc);
        return NGX_CONF_ERROR;
    }

    /* the description dies with the parse: add_tool() keeps a copy */
    cln->handler = ngx_http_mcp_loctool_json_cleanup;
    cln->data = block.desc;

    if (ngx_http_mcp_loctool_set_string(block.desc, "name", &value[1])
        != NGX_OK)
    {
        return NGX_CONF_ERROR;
    }

    save = *cf;
    cf->handler = ngx_http_mcp_loctool_line;
    cf->handler_conf = (char *) &block;

    rv = ngx_conf_parse(cf, NULL);

    *cf = save;

    if (rv != NGX_CONF_OK) {
        return rv;
    }

    if (!cJSON_HasObjectItem(block.desc, "description")) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "mcp_tool \"%V\" has no \"description\"",
                           &tool->name);
        return NGX_CONF_ERROR;
    }

    if (tool->uri.len == 0) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "mcp_tool \"%V\" has no \"pass\"", &tool->name);
        return NGX_CONF_ERROR;
    }

    if (!cJSON_HasObjectItem(block.desc, "inputSchema")
        && cJSON_AddItemToObject(block.desc, "inputSchema",
                                 cJSON_Parse("{\"type\":\"object\"}"))
           == 0)
    {
        return NGX_CONF_ERROR;
    }

    if (ngx_http_mcp_loctool_props(cf, tool,
            cJSON_GetObjectItemCaseSensitive(block.desc, "inputSchema"))
        != NGX_CONF_OK)
    {
        return NGX_CONF_ERROR;
    }

    return ngx_http_mcp_loctool_add(cf, block.desc, tool);
}


/*
 * The input schema's property names, as it spells them: what
 * $mcp_arg_NAME may read (nginx lowercases NAME).  Two that differ only
 * in case would be one variable.
 */

static char *
ngx_http_mcp_loctool_props(ngx_conf_t *cf, ngx_http_mcp_loctool_t *tool,
    cJSON *schema)
{
    cJSON       *props, *prop;
    ngx_str_t   *name;
    ngx_uint_t   i;

    props = cJSON_GetObjectItemCaseSensitive(schema, "properties");

    if (ngx_array_init(&tool->props, cf->pool, 4, sizeof(ngx_str_t))
        != NGX_OK)
    {
        return NGX_CONF_ERROR;
    }

    if (!cJSON_IsObject(props)) {
        return NGX_CONF_OK;
    }

    for (prop = props->child; prop; prop = prop->next) {

        name = tool->props.elts;

        for (i = 0; i < tool->props.nelts; i++) {
            if (ngx_strcasecmp(name[i].data, (u_char *) prop->string) == 0) {
                ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                                   "mcp_tool \"%V\": the input_schema "
                                   "properties \"%s\" and \"%s\" differ "
                                   "only in case, which $mcp_arg_ cannot "
                                   "tell apart", &tool->name, name[i].data,
                                   prop->string);
                return NGX_CONF_ERROR;
            }
        }

        name = ngx_array_push(&tool->props);
        if (name == NULL) {
            return NGX_CONF_ERROR;
        }

        name->len = ngx_strlen(prop->string);
        name->data = ngx_pnalloc(cf->pool, name->len + 1);
        if (name->data == NULL) {
            return NGX_CONF_ERROR;
        }

        ngx_memcpy(name->data, prop->string, name->len + 1);
    }

    return NGX_CONF_OK;
}


static char *
ngx_http_mcp_loctool_line(ngx_conf_t *cf, ngx_command_t *dummy, void *conf)
{
    ngx_http_mcp_loctool_block_t *block = conf;

    cJSON                   *schema;
    ngx_str_t               *value;
    const char              *key;
    ngx_uint_t               i;
    ngx_conf_enum_t         *m;
    ngx_http_mcp_loctool_t  *tool;

    value = cf->args->elts;
    tool = block->tool;

    if (cf->args->nelts >= 2
        && ngx_strcmp(value[0].data, "annotations") == 0)
    {
        return ngx_http_mcp_loctool_annotations(cf, block->desc);
    }

    if (cf->args->nelts != 2) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "invalid number of arguments in \"%V\" of "
                           "mcp_tool \"%V\"", &value[0], &tool->name);
        return NGX_CONF_ERROR;
    }

    if (ngx_strcmp(value[0].data, "description") == 0
        || ngx_strcmp(value[0].data, "title") == 0)
    {
        key = (const char *) value[0].data;

        if (cJSON_HasObjectItem(block->desc, key)) {
            return "is duplicate";
        }

        if (ngx_http_mcp_loctool_set_string(block->desc, key, &value[1])
            != NGX_OK)
        {
            return NGX_CONF_ERROR;
        }

        return NGX_CONF_OK;
    }

    if (ngx_strcmp(value[0].data, "input_schema") == 0
        || ngx_strcmp(value[0].data, "output_schema") == 0)
    {
        key = (value[0].data[0] == 'i') ? "inputSchema" : "outputSchema";

        if (cJSON_HasObjectItem(block->desc, key)) {
            return "is duplicate";
        }

        schema = ngx_http_mcp_loctool_schema(cf, &value[1]);
        if (schema == NULL) {
            return NGX_CONF_ERROR;
        }

        if (!cJSON_AddItemToObject(block->desc, key, schema)) {
            cJSON_Delete(schema);
            return NGX_CONF_ERROR;
        }

        if (key[0] == 'o') {
            tool->structured = 1;
        }

        return NGX_CONF_OK;
    }

    if (ngx_strcmp(value[0].data, "pass") == 0) {
        if (tool->uri.len) {
            return "is duplicate";
        }

        return ngx_http_mcp_loctool_pass(cf, tool, &value[1]);
    }

    if (ngx_strcmp(value[0].data, "method") == 0) {
        if (block->method) {
            return "is duplicate";
        }

        m = ngx_http_mcp_loctool_methods;

        for (i = 0; m[i].name.len; i++) {
            if (m[i].name.len == value[1].len
                && ngx_strcmp(m[i].name.data, value[1].data) == 0)
            {
                block->method = 1;
                tool->method = m[i].value;
                tool->method_name = m[i].name;
                return NGX_CONF_OK;
            }
        }

        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "invalid method \"%V\" in mcp_tool \"%V\": GET, "
                           "POST, PUT, PATCH or DELETE", &value[1],
                           &tool->name);
        return NGX_CONF_ERROR;
    }

    ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                       "unknown directive \"%V\" in mcp_tool \"%V\"",
                       &value[0], &tool->name);

    return NGX_CONF_ERROR;
}


/* annotations readOnlyHint destructiveHint=false ... */

static char *
ngx_http_mcp_loctool_annotations(ngx_conf_t *cf, cJSON *desc)
{
    cJSON       *ann;
    u_char      *eq;
    ngx_str_t   *value, name, flag;
    ngx_uint_t   i, k, on;

    if (cJSON_HasObjectItem(desc, "annotations")) {
        return "is duplicate";
    }

    ann = cJSON_AddObjectToObject(desc, "annotations");
    if (ann == NULL) {
        return NGX_CONF_ERROR;
    }

    value = cf->args->elts;

    for (i = 1; i < cf->args->nelts; i++) {
        name = value[i];
        on = 1;

        eq = ngx_strlchr(name.data, name.data + name.len, '=');

        if (eq != NULL) {
            name.len = eq - name.data;
            flag.data = eq + 1;
            flag.len = value[i].len - name.len - 1;

            if (flag.len == 4 && ngx_strncmp(flag.data, "true", 4) == 0) {
                on = 1;

            } else if (flag.len == 5
                       && ngx_strncmp(flag.data, "false", 5) == 0)
            {
                on = 0;

            } else {
                ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                                   "invalid annotation \"%V\": the value "
                                   "is true or false", &value[i]);
                return NGX_CONF_ERROR;
            }
        }

        for (k = 0; ngx_http_mcp_loctool_hints[k]; k++) {
            if (ngx_strlen(ngx_http_mcp_loctool_hints[k]) == name.len
                && ngx_strncmp(ngx_http_mcp_loctool_hints[k], name.data,
                               name.len) == 0)
            {
                break;
            }
        }

        if (ngx_http_mcp_loctool_hints[k] == NULL) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "unknown annotation \"%V\": readOnlyHint, "
                               "destructiveHint, idempotentHint or "
                               "openWorldHint", &value[i]);
            return NGX_CONF_ERROR;
        }

        if (cJSON_HasObjectItem(ann, ngx_http_mcp_loctool_hints[k])) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "duplicate annotation \"%V\"", &name);
            return NGX_CONF_ERROR;
        }

        if (cJSON_AddBoolToObject(ann, ngx_http_mcp_loctool_hints[k], on)
            == NULL)
        {
            return NGX_CONF_ERROR;
        }
    }

    return NGX_CONF_OK;
}


/* mcp_resource URI pass=/location [name=] [description=] [mime_type=] */

static char *
ngx_http_mcp_loctool_resource(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf)
{
    char                    *rv;
    cJSON                   *desc;
    ngx_str_t               *value, v;
    ngx_uint_t               i;
    ngx_pool_cleanup_t      *cln;
    ngx_http_mcp_loctool_t  *tool;

    value = cf->args->elts;

    /* a URI has a scheme: "orders://summary", "file:///x", "urn:..." */

    if (ngx_strlchr(value[1].data, value[1].data + value[1].len, ':')
        == NULL)
    {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "invalid resource URI \"%V\": no scheme",
                           &value[1]);
        return NGX_CONF_ERROR;
    }

    tool = ngx_pcalloc(cf->pool, sizeof(ngx_http_mcp_loctool_t));
    desc = cJSON_CreateObject();
    cln = ngx_pool_cleanup_add(cf->temp_pool, 0);

    if (tool == NULL || desc == NULL || cln == NULL) {
        cJSON_Delete(desc);
        return NGX_CONF_ERROR;
    }

    cln->handler = ngx_http_mcp_loctool_json_cleanup;
    cln->data = desc;

    tool->name = value[1];
    tool->resource = 1;
    tool->method = NGX_HTTP_GET;
    ngx_str_set(&tool->method_name, "GET");

    if (ngx_http_mcp_loctool_set_string(desc, "uri", &value[1]) != NGX_OK) {
        return NGX_CONF_ERROR;
    }

    for (i = 2; i < cf->args->nelts; i++) {

        if (ngx_strncmp(value[i].data, "pass=", 5) == 0) {
            if (tool->uri.len) {
                goto duplicate;
            }

            v.data = value[i].data + 5;
            v.len = value[i].len - 5;

            rv = ngx_http_mcp_loctool_pass(cf, tool, &v);
            if (rv != NGX_CONF_OK) {
                return rv;
            }

            continue;
        }

        if (ngx_strncmp(value[i].data, "name=", 5) == 0
            || ngx_strncmp(value[i].data, "description=", 12) == 0
            || ngx_strncmp(value[i].data, "mime_type=", 10) == 0)
        {
            v.data = ngx_strlchr(value[i].data, value[i].data + value[i].len,
                                 '=');
            *v.data++ = '\0';
            v.len = value[i].data + value[i].len - v.data;

            if (v.len == 0) {
                ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                                   "empty \"%s=\" in mcp_resource \"%V\"",
                                   value[i].data, &value[1]);
                return NGX_CONF_ERROR;
            }

            if (value[i].data[0] == 'm') {
                tool->mime_type = v;
                ngx_str_set(&value[i], "mimeType");
            }

            if (cJSON_HasObjectItem(desc, (char *) value[i].data)) {
                goto duplicate;
            }

            if (ngx_http_mcp_loctool_set_string(desc, (char *) value[i].data,
                                                &v)
                != NGX_OK)
            {
                return NGX_CONF_ERROR;
            }

            continue;
        }

        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "invalid parameter \"%V\" in mcp_resource \"%V\"",
                           &value[i], &value[1]);
        return NGX_CONF_ERROR;
    }

    if (tool->uri.len == 0) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "mcp_resource \"%V\" has no \"pass=\"",
                           &value[1]);
        return NGX_CONF_ERROR;
    }

    if (!cJSON_HasObjectItem(desc, "name")
        && ngx_http_mcp_loctool_set_string(desc, "name", &value[1])
           != NGX_OK)
    {
        return NGX_CONF_ERROR;
    }

    return ngx_http_mcp_loctool_add(cf, desc, tool);

duplicate:

    ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                       "duplicate parameter \"%V\" in mcp_resource \"%V\"",
                       &value[i], &value[1]);
    return NGX_CONF_ERROR;
}


/* a URI path of this server, split at "?"; a subrequest needs one */

static char *
ngx_http_mcp_loctool_pass(ngx_conf_t *cf, ngx_http_mcp_loctool_t *tool,
    ngx_str_t *value)
{
    u_char  *q;

    if (value->len == 0 || value->data[0] != '/') {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "invalid pass \"%V\" for \"%V\": a URI that "
                           "starts with \"/\" (named locations cannot "
                           "serve a subrequest)", value, &tool->name);
        return NGX_CONF_ERROR;
    }

    tool->uri = *value;

    q = ngx_strlchr(value->data, value->data + value->len, '?');

    if (q != NULL) {
        tool->uri.len = q - value->data;
        tool->args.data = q + 1;
        tool->args.len = value->data + value->len - q - 1;
    }

    return NGX_CONF_OK;
}


/* a schema: inline JSON text starting with "{", or a file that holds it */

static cJSON *
ngx_http_mcp_loctool_schema(ngx_conf_t *cf, ngx_str_t *value)
{
    cJSON      *schema;
    u_char     *text;
    ngx_str_t   name, file;

    if (value->data[0] == '{') {
        text = value->data;
        ngx_str_set(&name, "inline");
        goto parse;
    }

    name = *value;

    if (ngx_http_mcp_conf_file(cf, &name, NGX_HTTP_MCP_LOCTOOL_SCHEMA_MAX,
                               &file)
        != NGX_OK)
    {
        return NULL;
    }

    text = file.data;

parse:

    schema = cJSON_Parse((char *) text);

    if (!cJSON_IsObject(schema)) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "schema \"%V\" is not a JSON object", &name);
        cJSON_Delete(schema);
        return NULL;
    }

    return schema;
}


static char *
ngx_http_mcp_loctool_add(ngx_conf_t *cf, cJSON *desc,
    ngx_http_mcp_loctool_t *tool)
{
    char                *json;
    ngx_int_t            rc;
    ngx_http_mcp_set_t  *set;

    set = ngx_http_mcp_conf_set(cf);
    json = cJSON_PrintUnformatted(desc);

    if (set == NULL || json == NULL) {
        cJSON_free(json);
        return NGX_CONF_ERROR;
    }

    rc = tool->resource
         ? ngx_http_mcp_add_resource(cf, set, json,
                                     ngx_http_mcp_loctool_handler, tool)
         : ngx_http_mcp_add_tool(cf, set, json,
                                 ngx_http_mcp_loctool_handler, tool);

    cJSON_free(json);

    return (rc == NGX_OK) ? NGX_CONF_OK : NGX_CONF_ERROR;
}


static void
ngx_http_mcp_loctool_json_cleanup(void *data)
{
    cJSON_Delete(data);
}


static ngx_int_t
ngx_http_mcp_loctool_set_string(cJSON *desc, const char *key,
    ngx_str_t *value)
{
    cJSON  *s;

    /* the configuration's strings end with NUL already */
    s = cJSON_CreateString((const char *) value->data);

    if (s == NULL || !cJSON_AddItemToObject(desc, key, s)) {
        cJSON_Delete(s);
        return NGX_ERROR;
    }

    return NGX_OK;
}


/* the NAMEs of the $mcp_arg_NAME variables the configuration indexed */

static ngx_int_t
ngx_http_mcp_loctool_find_args(ngx_conf_t *cf, ngx_array_t *args)
{
    ngx_str_t                  *name;
    ngx_uint_t                  i;
    ngx_http_variable_t        *v;
    ngx_http_core_main_conf_t  *cmcf;

    cmcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_core_module);

    v = cmcf->variables.elts;

    for (i = 0; i < cmcf->variables.nelts; i++) {
        if (v[i].name.len <= sizeof("mcp_arg_") - 1
            || ngx_strncmp(v[i].name.data, "mcp_arg_",
                           sizeof("mcp_arg_") - 1)
               != 0)
        {
            continue;
        }

        name = ngx_array_push(args);
        if (name == NULL) {
            return NGX_ERROR;
        }

        name->len = v[i].name.len - (sizeof("mcp_arg_") - 1);
        name->data = ngx_pnalloc(cf->pool, name->len + 1);
        if (name->data == NULL) {
            return NGX_ERROR;
        }

        ngx_memcpy(name->data, v[i].name.data + sizeof("mcp_arg_") - 1,
                   name->len);
        name->data[name->len] = '\0';
    }

    return NGX_OK;
}
