
/*
 * The registry: sets of tools, resources, resource templates and prompts,
 * built at configuration time by providers, and the lookups and paginated
 * listings the dispatcher serves from them.
 */


#include "ngx_http_mcp_core.h"
#include "ngx_http_mcp_json.h"
#include "ngx_http_mcp_param.h"
#include "ngx_http_mcp_schema.h"
#include "ngx_http_mcp_uritemplate.h"


#define NGX_HTTP_MCP_CURSOR_PREFIX  "mcp:"


static ngx_http_mcp_set_t *ngx_http_mcp_set_create(ngx_conf_t *cf,
    ngx_str_t *name);
static ngx_int_t ngx_http_mcp_add(ngx_conf_t *cf, ngx_http_mcp_set_t *set,
    ngx_array_t *entries, const char *json, const char *key,
    ngx_http_mcp_handler_pt handler, void *data);
static ngx_int_t ngx_http_mcp_registry_dialect(ngx_conf_t *cf,
    ngx_http_mcp_set_t *set, ngx_str_t *name, cJSON *desc, const char *key);
static ngx_int_t ngx_http_mcp_registry_compile(ngx_conf_t *cf, cJSON *desc,
    const char *key, ngx_http_mcp_schema_t **schema);
static void ngx_http_mcp_json_cleanup(void *data);
static ngx_int_t ngx_http_mcp_cursor_parse(cJSON *cursor, ngx_uint_t *offset);
static char *ngx_http_mcp_cursor_make(ngx_pool_t *pool, ngx_uint_t offset);


ngx_int_t
ngx_http_mcp_add_provider(ngx_conf_t *cf, char *name,
    ngx_http_mcp_provider_pt init)
{
    size_t                     len;
    ngx_uint_t                 i;
    ngx_http_mcp_provider_t   *p;
    ngx_http_mcp_main_conf_t  *mmcf;

    mmcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_mcp_module);

    /* two modules that pick one name: neither would know which is served */

    len = ngx_strlen(name);
    p = mmcf->providers.elts;

    for (i = 0; i < mmcf->providers.nelts; i++) {
        if (p[i].name.len == len
            && ngx_strncmp(p[i].name.data, name, len) == 0)
        {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "duplicate MCP set \"%s\"", name);
            return NGX_ERROR;
        }
    }

    p = ngx_array_push(&mmcf->providers);
    if (p == NULL) {
        return NGX_ERROR;
    }

    p->name.data = (u_char *) name;
    p->name.len = len;
    p->init = init;
    p->set = NULL;

    return NGX_OK;
}


static ngx_http_mcp_set_t *
ngx_http_mcp_set_create(ngx_conf_t *cf, ngx_str_t *name)
{
    ngx_http_mcp_set_t  *set;

    set = ngx_pcalloc(cf->pool, sizeof(ngx_http_mcp_set_t));
    if (set == NULL) {
        return NULL;
    }

    set->name = *name;

    if (ngx_array_init(&set->tools, cf->pool, 8,
                       sizeof(ngx_http_mcp_entry_t)) != NGX_OK
        || ngx_array_init(&set->resources, cf->pool, 8,
                          sizeof(ngx_http_mcp_entry_t)) != NGX_OK
        || ngx_array_init(&set->templates, cf->pool, 4,
                          sizeof(ngx_http_mcp_entry_t)) != NGX_OK
        || ngx_array_init(&set->prompts, cf->pool, 4,
                          sizeof(ngx_http_mcp_entry_t)) != NGX_OK)
    {
        return NULL;
    }

    return set;
}


/*
 * The set a provider builds, built once per configuration and shared by
 * every location that names it; NULL name: the empty set of a location
 * without "mcp_builtin".
 */

ngx_http_mcp_set_t *
ngx_http_mcp_set_get(ngx_conf_t *cf, ngx_str_t *name)
{
    ngx_str_t                  empty = ngx_string("none");
    ngx_uint_t                 i;
    ngx_http_mcp_provider_t   *p;
    ngx_http_mcp_main_conf_t  *mmcf;

    mmcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_mcp_module);

    if (name == NULL) {
        if (mmcf->empty_set == NULL) {
            mmcf->empty_set = ngx_http_mcp_set_create(cf, &empty);
        }

        return mmcf->empty_set;
    }

    p = mmcf->providers.elts;

    for (i = 0; i < mmcf->providers.nelts; i++) {

        if (p[i].name.len != name->len
            || ngx_strncmp(p[i].name.data, name->data, name->len) != 0)
        {
            continue;
        }

        if (p[i].set == NULL) {
            p[i].set = ngx_http_mcp_set_create(cf, name);

            if (p[i].set == NULL || p[i].init(cf, p[i].set) != NGX_OK) {
                p[i].set = NULL;
                return NULL;
            }
        }

        return p[i].set;
    }

    ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                       "unknown MCP builtin set \"%V\"", name);

    return NULL;
}


ngx_http_mcp_set_t *
ngx_http_mcp_conf_set(ngx_conf_t *cf)
{
    ngx_str_t                  name;
    ngx_http_mcp_set_t        *set;
    ngx_http_mcp_loc_conf_t   *mlcf;
    ngx_http_core_loc_conf_t  *clcf;

    mlcf = ngx_http_conf_get_module_loc_conf(cf, ngx_http_mcp_module);

    if (mlcf->own_set) {
        return mlcf->set;
    }

    /* the name that error messages give: the location's, or "server" */

    clcf = ngx_http_conf_get_module_loc_conf(cf, ngx_http_core_module);

    if (clcf->name.len) {
        name = clcf->name;

    } else {
        ngx_str_set(&name, "server");
    }

    set = ngx_http_mcp_set_create(cf, &name);
    if (set == NULL) {
        return NULL;
    }

    if (mlcf->builtin && ngx_http_mcp_set_copy(cf, set, mlcf->set) != NGX_OK) {
        return NULL;
    }

    mlcf->set = set;
    mlcf->own_set = 1;

    return set;
}


/*
 * A named set's entries added to a level's own set: the descriptions,
 * handlers and data are shared, both live as long as the configuration.
 */

ngx_int_t
ngx_http_mcp_set_copy(ngx_conf_t *cf, ngx_http_mcp_set_t *dst,
    ngx_http_mcp_set_t *src)
{
    ngx_uint_t             i, k;
    ngx_array_t           *from[4], *to[4];
    ngx_http_mcp_entry_t  *e, *n;

    from[0] = &src->tools;      to[0] = &dst->tools;
    from[1] = &src->resources;  to[1] = &dst->resources;
    from[2] = &src->templates;  to[2] = &dst->templates;
    from[3] = &src->prompts;    to[3] = &dst->prompts;

    for (k = 0; k < 4; k++) {
        e = from[k]->elts;

        for (i = 0; i < from[k]->nelts; i++) {

            if (ngx_http_mcp_find(to[k], &e[i].name) != NULL) {
                ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                                   "duplicate MCP entry \"%V\" in set "
                                   "\"%V\" and set \"%V\"",
                                   &e[i].name, &src->name, &dst->name);
                return NGX_ERROR;
            }

            n = ngx_array_push(to[k]);
            if (n == NULL) {
                return NGX_ERROR;
            }

            *n = e[i];
        }
    }

    if (dst->complete == NULL) {
        dst->complete = src->complete;
    }

    return NGX_OK;
}


ngx_int_t
ngx_http_mcp_add_tool(ngx_conf_t *cf, ngx_http_mcp_set_t *set,
    const char *json, ngx_http_mcp_handler_pt handler, void *data)
{
    return ngx_http_mcp_add(cf, set, &set->tools, json, "name", handler,
                            data);
}


ngx_int_t
ngx_http_mcp_add_resource(ngx_conf_t *cf, ngx_http_mcp_set_t *set,
    const char *json, ngx_http_mcp_handler_pt handler, void *data)
{
    return ngx_http_mcp_add(cf, set, &set->resources, json, "uri", handler,
                            data);
}


ngx_int_t
ngx_http_mcp_add_template(ngx_conf_t *cf, ngx_http_mcp_set_t *set,
    const char *json, ngx_http_mcp_handler_pt handler, void *data)
{
    return ngx_http_mcp_add(cf, set, &set->templates, json, "uriTemplate",
                            handler, data);
}


ngx_int_t
ngx_http_mcp_add_prompt(ngx_conf_t *cf, ngx_http_mcp_set_t *set,
    const char *json, ngx_http_mcp_handler_pt handler, void *data)
{
    return ngx_http_mcp_add(cf, set, &set->prompts, json, "name", handler,
                            data);
}


static ngx_int_t
ngx_http_mcp_add(ngx_conf_t *cf, ngx_http_mcp_set_t *set,
    ngx_array_t *entries, const char *json, const char *key,
    ngx_http_mcp_handler_pt handler, void *data)
{
    u_char                 *error;
    cJSON                  *desc, *name;
    ngx_int_t               rc;
    ngx_str_t               s;
    ngx_uint_t              params;
    ngx_http_mcp_entry_t   *e;
    ngx_http_mcp_schema_t  *schemas[2];

    desc = ngx_http_mcp_parse_json(cf, json);
    if (desc == NULL) {
        return NGX_ERROR;
    }

    name = ngx_http_mcp_json_get(desc, key);

    if (!cJSON_IsObject(desc) || !cJSON_IsString(name)) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "MCP entry without a string \"%s\": %s",
                           key, json);
        return NGX_ERROR;
    }

    s.data = (u_char *) name->valuestring;
    s.len = ngx_strlen(s.data);

    if (ngx_http_mcp_find(entries, &s) != NULL) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "duplicate MCP %s \"%V\" in set \"%V\"",
                           (entries == &set->tools) ? "tool"
                           : (entries == &set->prompts) ? "prompt"
                           : (entries == &set->resources) ? "resource"
                           : "resource template",
                           &s, &set->name);
        return NGX_ERROR;
    }

    /* a client drops a tool whose x-mcp-header breaks the rules */

    params = 0;
    schemas[0] = NULL;
    schemas[1] = NULL;

    if (entries == &set->tools) {
        if (ngx_http_mcp_registry_dialect(cf, set, &s, desc, "inputSchema")
               != NGX_OK
            || ngx_http_mcp_registry_dialect(cf, set, &s, desc,
                                             "outputSchema")
               != NGX_OK)
        {
            return NGX_ERROR;
        }

        rc = ngx_http_mcp_param_schema(cf->pool,
                 ngx_http_mcp_json_get(desc, "inputSchema"),
                 &params, &error);

        if (rc == NGX_DECLINED) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "MCP tool \"%V\" in set \"%V\": %s",
                               &s, &set->name, error);
        }

        if (rc != NGX_OK) {
            return NGX_ERROR;
        }

        /* once here, not on every call */
        if (ngx_http_mcp_registry_compile(cf, desc, "inputSchema",
                                          &schemas[0])
               != NGX_OK
            || ngx_http_mcp_registry_compile(cf, desc, "outputSchema",
                                             &schemas[1])
               != NGX_OK)
        {
            return NGX_ERROR;
        }
    }

    e = ngx_array_push(entries);
    if (e == NULL) {
        return NGX_ERROR;
    }

    e->name = s;
    e->desc = desc;
    e->handler = handler;
    e->data = data;
    e->params = (params != 0);
    e->input_schema = schemas[0];
    e->output_schema = schemas[1];

    return NGX_OK;
}


/* a tool's schema compiled for its calls; *schema NULL: none given */

static ngx_int_t
ngx_http_mcp_registry_compile(ngx_conf_t *cf, cJSON *desc, const char *key,
    ngx_http_mcp_schema_t **schema)
{
    cJSON  *s;

    s = ngx_http_mcp_json_get(desc, key);

    if (s == NULL) {
        *schema = NULL;
        return NGX_OK;
    }

    *schema = ngx_http_mcp_schema_compile(cf->pool, s);

    return (*schema != NULL) ? NGX_OK : NGX_ERROR;
}


/*
 * The module validates JSON Schema 2020-12, the dialect MCP names: a
 * tool's schema that says it is another one would be read wrong.
 */

static ngx_int_t
ngx_http_mcp_registry_dialect(ngx_conf_t *cf, ngx_http_mcp_set_t *set,
    ngx_str_t *name, cJSON *desc, const char *key)
{
    const char  *dialect;

    dialect = ngx_http_mcp_schema_dialect(ngx_http_mcp_json_get(desc, key));

    if (dialect == NULL) {
        return NGX_OK;
    }

    ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                       "MCP tool \"%V\" in set \"%V\": the %s's $schema "
                       "\"%s\" is not JSON Schema 2020-12 (%s)", name,
                       &set->name, key, dialect,
                       "https://json-schema.org/draft/2020-12/schema");

    return NGX_ERROR;
}


/* a JSON text parsed at configuration time, freed with the cycle */

cJSON *
ngx_http_mcp_parse_json(ngx_conf_t *cf, const char *json)
{
    cJSON               *root;
    ngx_pool_cleanup_t  *cln;

    cln = ngx_pool_cleanup_add(cf->pool, 0);
    if (cln == NULL) {
        return NULL;
    }

    root = cJSON_Parse(json);
    if (root == NULL) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "invalid MCP JSON: %s",
                           json);
        return NULL;
    }

    cln->handler = ngx_http_mcp_json_cleanup;
    cln->data = root;

    return root;
}


static void
ngx_http_mcp_json_cleanup(void *data)
{
    cJSON_Delete(data);
}


ngx_http_mcp_entry_t *
ngx_http_mcp_find(ngx_array_t *entries, ngx_str_t *name)
{
    ngx_uint_t             i;
    ngx_http_mcp_entry_t  *e;

    e = entries->elts;

    for (i = 0; i < entries->nelts; i++) {
        if (e[i].name.len == name->len
            && ngx_strncmp(e[i].name.data, name->data, name->len) == 0)
        {
            return &e[i];
        }
    }

    return NULL;
}


/*
 * The first template that matches uri, its variables in *vars
 * (ngx_keyval_t): NGX_OK, NGX_DECLINED when none matches, NGX_ERROR.
 */

ngx_int_t
ngx_http_mcp_find_template(ngx_pool_t *pool, ngx_array_t *templates,
    ngx_str_t *uri, ngx_http_mcp_entry_t **entry, ngx_array_t **vars)
{
    ngx_int_t              rc;
    ngx_uint_t             i;
    ngx_http_mcp_entry_t  *e;

    e = templates->elts;
    *entry = NULL;
    *vars = NULL;

    for (i = 0; i < templates->nelts; i++) {

        *vars = ngx_array_create(pool, 4, sizeof(ngx_keyval_t));
        if (*vars == NULL) {
            return NGX_ERROR;
        }

        rc = ngx_http_mcp_uritemplate_match(pool, &e[i].name, uri, *vars);

        if (rc == NGX_OK) {
            *entry = &e[i];
            return NGX_OK;
        }

        if (rc == NGX_ERROR) {
            return NGX_ERROR;
        }
    }

    *vars = NULL;

    return NGX_DECLINED;
}


/*
 * A page of a listing: {key: [...], "nextCursor": "..."}, the page
 * after cursor (NULL: the first), without the entries filter refuses.
 * The listing objects are referenced, not copied: they live as long as
 * the configuration, longer than the reply.  NULL with *rc NGX_DECLINED
 * for a cursor that is not ours, NGX_ERROR when memory ran out.
 */

cJSON *
ngx_http_mcp_list_page(ngx_pool_t *pool, ngx_array_t *entries,
    const char *key, cJSON *cursor, ngx_uint_t page_size,
    ngx_http_mcp_tool_filter_t *filter, ngx_int_t *rc)
{
    char                  *next;
    cJSON                 *result, *list, *item;
    ngx_uint_t             i, offset, end;
    ngx_http_mcp_entry_t  *e;

    if (ngx_http_mcp_cursor_parse(cursor, &offset) != NGX_OK
        || offset > entries->nelts)
    {
        *rc = NGX_DECLINED;
        return NULL;
    }

    *rc = NGX_ERROR;
    end = ngx_min(entries->nelts, offset + page_size);

    result = cJSON_CreateObject();
    list = cJSON_AddArrayToObject(result, key);

    if (list == NULL) {
        goto failed;
    }

    e = entries->elts;

    for (i = offset; i < end; i++) {

        if (filter != NULL && !filter->allowed(filter->data, &e[i].name)) {
            continue;
        }

        item = cJSON_CreateObjectReference(e[i].desc->child);

        if (item == NULL || !cJSON_AddItemToArray(list, item)) {
            cJSON_Delete(item);
            goto failed;
        }
    }

    if (end < entries->nelts) {
        next = ngx_http_mcp_cursor_make(pool, end);

        if (next == NULL
            || cJSON_AddStringToObject(result, "nextCursor", next) == NULL)
        {
            goto failed;
        }
    }

    *rc = NGX_OK;

    return result;

failed:

    cJSON_Delete(result);
    return NULL;
}


/* cursors are opaque to clients: base64url of "mcp:<offset>" */

static ngx_int_t
ngx_http_mcp_cursor_parse(cJSON *cursor, ngx_uint_t *offset)
{
    u_char     buf[64];
    ngx_int_t  n;
    ngx_str_t  src, dst;

    *offset = 0;

    if (cursor == NULL) {
        return NGX_OK;
    }

    if (!cJSON_IsString(cursor)) {
        return NGX_ERROR;
    }

    src.data = (u_char *) cursor->valuestring;
    src.len = ngx_strlen(src.data);

    if (src.len == 0 || ngx_base64_decoded_length(src.len) >= sizeof(buf)) {
        return NGX_ERROR;
    }

    dst.data = buf;

    if (ngx_decode_base64url(&dst, &src) != NGX_OK
        || dst.len <= sizeof(NGX_HTTP_MCP_CURSOR_PREFIX) - 1
        || ngx_strncmp(buf, NGX_HTTP_MCP_CURSOR_PREFIX,
                       sizeof(NGX_HTTP_MCP_CURSOR_PREFIX) - 1) != 0)
    {
        return NGX_ERROR;
    }

    n = ngx_atoi(buf + sizeof(NGX_HTTP_MCP_CURSOR_PREFIX) - 1,
                 dst.len - (sizeof(NGX_HTTP_MCP_CURSOR_PREFIX) - 1));

    if (n == NGX_ERROR) {
        return NGX_ERROR;
    }

    *offset = n;

    return NGX_OK;
}


static char *
ngx_http_mcp_cursor_make(ngx_pool_t *pool, ngx_uint_t offset)
{
    u_char     buf[64];
    ngx_str_t  src, dst;

    src.data = buf;
    src.len = ngx_sprintf(buf, NGX_HTTP_MCP_CURSOR_PREFIX "%ui", offset)
              - buf;

    dst.data = ngx_pnalloc(pool, ngx_base64_encoded_length(src.len) + 1);
    if (dst.data == NULL) {
        return NULL;
    }

    ngx_encode_base64url(&dst, &src);
    dst.data[dst.len] = '\0';

    return (char *) dst.data;
}


cJSON *
ngx_http_mcp_text_content(const char *text)
{
    cJSON  *content;

    content = cJSON_CreateObject();

    if (cJSON_AddStringToObject(content, "type", "text") == NULL
        || cJSON_AddStringToObject(content, "text", text) == NULL)
    {
        cJSON_Delete(content);
        return NULL;
    }

    return content;
}


/* {"content": content, "isError": true}; takes content */

cJSON *
ngx_http_mcp_tool_result(cJSON *content, ngx_uint_t is_error)
{
    cJSON  *result;

    if (content == NULL) {
        return NULL;
    }

    result = cJSON_CreateObject();

    if (result == NULL || !cJSON_AddItemToObject(result, "content", content))
    {
        cJSON_Delete(result);
        cJSON_Delete(content);
        return NULL;
    }

    if (is_error && !cJSON_AddTrueToObject(result, "isError")) {
        cJSON_Delete(result);
        return NULL;
    }

    return result;
}


cJSON *
ngx_http_mcp_text_result(const char *text, ngx_uint_t is_error)
{
    cJSON  *content;

    content = cJSON_CreateArray();

    if (content != NULL
        && !cJSON_AddItemToArray(content, ngx_http_mcp_text_content(text)))
    {
        cJSON_Delete(content);
        content = NULL;
    }

    return ngx_http_mcp_tool_result(content, is_error);
}


/*
 * A hash of one of a set's lists, as tools/list and its kin show it: a
 * reload that changes it tells the sessions (list_changed).
 */

uint32_t
ngx_http_mcp_set_hash(ngx_http_mcp_set_t *set, ngx_uint_t list)
{
    char                  *text;
    uint32_t               crc;
    ngx_uint_t             i, k, n;
    ngx_array_t           *lists[2];
    ngx_http_mcp_entry_t  *e;

    n = 1;
    lists[0] = (list == NGX_HTTP_MCP_LIST_TOOLS) ? &set->tools
               : (list == NGX_HTTP_MCP_LIST_PROMPTS) ? &set->prompts
               : &set->resources;

    if (list == NGX_HTTP_MCP_LIST_RESOURCES) {
        lists[n++] = &set->templates;
    }

    ngx_crc32_init(crc);

    for (k = 0; k < n; k++) {
        e = lists[k]->elts;

        for (i = 0; i < lists[k]->nelts; i++) {
            text = cJSON_PrintUnformatted(e[i].desc);
            if (text == NULL) {
                continue;
            }

            ngx_crc32_update(&crc, (u_char *) text, ngx_strlen(text));
            cJSON_free(text);
        }
    }

    ngx_crc32_final(crc);

    return crc;
}


ngx_int_t
ngx_http_mcp_bind(ngx_conf_t *cf, ngx_shm_zone_t *zone,
    ngx_http_mcp_set_t *set)
{
    ngx_uint_t                 i;
    ngx_http_mcp_binding_t    *b;
    ngx_http_mcp_main_conf_t  *mmcf;

    mmcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_mcp_module);

    b = mmcf->bindings.elts;

    for (i = 0; i < mmcf->bindings.nelts; i++) {
        if (b[i].zone == zone && b[i].set == set) {
            return NGX_OK;
        }
    }

    b = ngx_array_push(&mmcf->bindings);
    if (b == NULL) {
        return NGX_ERROR;
    }

    b->zone = zone;
    b->set = set;

    return NGX_OK;
}
