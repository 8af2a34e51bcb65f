
/*
 * What a location's reply and a call's arguments become: the tool result
 * or resources/read result of a reply caught in memory, and the checks of
 * the arguments $mcp_arg_NAME puts in a URI.  Functions of the call's
 * data only; the subrequest is ngx_http_mcp_loctool_call.c.
 */


#include "ngx_http_mcp_loctool.h"
#include "ngx_http_mcp_json.h"


static cJSON *ngx_http_mcp_loctool_base64(ngx_http_mcp_loctool_state_t *st);
static ngx_uint_t ngx_http_mcp_loctool_is_text(ngx_str_t *type);
static ngx_uint_t ngx_http_mcp_loctool_utf8(u_char *p, size_t len);


/*
 * A 2xx reply as a tool result: JSON under an output_schema is
 * structuredContent and its text; images and audio are base64; text is
 * text.  NULL with *failure set
 * when the reply cannot be a result.  Whether the structuredContent
 * conforms to the output_schema is checked where every tool's result is
 * (ngx_http_mcp_output.c).
 */

cJSON *
ngx_http_mcp_loctool_tool_result(ngx_http_mcp_loctool_state_t *st,
    const char **failure)
{
    u_char                      *text;
    cJSON                       *content, *item, *json, *result;
    const char                  *kind, *error;
    ngx_http_mcp_fetch_state_t  *fetch;

    fetch = &st->fetch;

    content = cJSON_CreateArray();
    if (content == NULL) {
        return NULL;
    }

    json = NULL;
    kind = NULL;

    if (fetch->type.len > 6
        && (ngx_strncmp(fetch->type.data, "image/", 6) == 0
            || ngx_strncmp(fetch->type.data, "audio/", 6) == 0))
    {
        kind = (fetch->type.data[0] == 'i') ? "image" : "audio";

        item = cJSON_CreateObject();

        if (item == NULL
            || !cJSON_AddItemToArray(content, item)
            || cJSON_AddStringToObject(item, "type", kind) == NULL
            || !cJSON_AddItemToObject(item, "data",
                                      ngx_http_mcp_loctool_base64(st))
            || cJSON_AddStringToObject(item, "mimeType",
                                       (char *) fetch->type.data)
               == NULL)
        {
            cJSON_Delete(content);
            return NULL;
        }

        return ngx_http_mcp_tool_result(content, 0);
    }

    if (!ngx_http_mcp_loctool_utf8(fetch->body, fetch->len)) {
        cJSON_Delete(content);
        *failure = "its location answered with content that is not text, "
                   "an image or audio";
        return NULL;
    }

    text = ngx_pnalloc(ngx_http_mcp_call_pool(fetch->call), fetch->len + 1);
    if (text == NULL) {
        cJSON_Delete(content);
        return NULL;
    }

    ngx_memcpy(text, fetch->body, fetch->len);
    text[fetch->len] = '\0';

    if (st->tool->structured
        && ngx_http_mcp_loctool_is_text(&fetch->type) == 2)
    {
        /*
         * The strict scan, as for a POST body: structuredContent is what
         * the text beside it says to any other reader (no duplicate
         * member, nothing after the object).
         */
        if (ngx_http_mcp_json_parse(ngx_http_mcp_call_pool(fetch->call),
                                    fetch->body, fetch->len, NULL, &json,
                                    &error)
            != NGX_OK)
        {
            json = NULL;
        }

        if (!cJSON_IsObject(json)) {
            cJSON_Delete(json);
            cJSON_Delete(content);
            *failure = "its location's JSON reply is not an object";
            return NULL;
        }
    }

    if (!cJSON_AddItemToArray(content,
                              ngx_http_mcp_text_content((char *) text)))
    {
        cJSON_Delete(json);
        cJSON_Delete(content);
        return NULL;
    }

    result = ngx_http_mcp_tool_result(content, 0);

    if (result != NULL && json != NULL
        && !cJSON_AddItemToObject(result, "structuredContent", json))
    {
        cJSON_Delete(result);
        result = NULL;

    } else if (result == NULL) {
        cJSON_Delete(json);
    }

    return result;
}


/* resources/read: 404 is -32002, other failures -32603 */

cJSON *
ngx_http_mcp_loctool_resource_result(ngx_http_mcp_loctool_state_t *st)
{
    u_char                      *text, msg[96];
    cJSON                       *result, *contents, *item;
    ngx_str_t                   *type;
    ngx_http_mcp_call_t         *call;
    ngx_http_mcp_fetch_state_t  *fetch;

    fetch = &st->fetch;
    call = fetch->call;

    if (fetch->status == NGX_HTTP_NOT_FOUND) {
        ngx_http_mcp_call_resource_not_found(call);
        return NULL;
    }

    if (fetch->status >= NGX_HTTP_SPECIAL_RESPONSE
        || fetch->status < NGX_HTTP_OK)
    {
        ngx_sprintf(msg, "Resource unavailable: its location answered "
                    "HTTP %03ui%Z", fetch->status % 1000);
        ngx_http_mcp_call_error(call, NGX_HTTP_MCP_INTERNAL_ERROR,
                                (const char *) msg);
        return NULL;
    }

    type = st->tool->mime_type.len ? &st->tool->mime_type : &fetch->type;

    result = cJSON_CreateObject();
    contents = cJSON_AddArrayToObject(result, "contents");
    item = cJSON_CreateObject();

    if (result == NULL || contents == NULL || item == NULL
        || !cJSON_AddItemToArray(contents, item)
        || cJSON_AddStringToObject(item, "uri",
                                   (char *) st->tool->name.data) == NULL
        || (type->len
            && cJSON_AddStringToObject(item, "mimeType", (char *) type->data)
               == NULL))
    {
        cJSON_Delete(item);
        cJSON_Delete(result);
        return NULL;
    }

    if (ngx_http_mcp_loctool_is_text(type)
        && ngx_http_mcp_loctool_utf8(fetch->body, fetch->len))
    {
        text = ngx_pnalloc(ngx_http_mcp_call_pool(call), fetch->len + 1);

        if (text == NULL) {
            cJSON_Delete(result);
            return NULL;
        }

        ngx_memcpy(text, fetch->body, fetch->len);
        text[fetch->len] = '\0';

        if (cJSON_AddStringToObject(item, "text", (char *) text) == NULL) {
            cJSON_Delete(result);
            return NULL;
        }

        return result;
    }

    if (!cJSON_AddItemToObject(item, "blob", ngx_http_mcp_loctool_base64(st)))
    {
        cJSON_Delete(result);
        return NULL;
    }

    return result;
}


static cJSON *
ngx_http_mcp_loctool_base64(ngx_http_mcp_loctool_state_t *st)
{
    ngx_str_t  src, dst;

    src.data = st->fetch.body;
    src.len = st->fetch.len;

    dst.data = ngx_pnalloc(ngx_http_mcp_call_pool(st->fetch.call),
                           ngx_base64_encoded_length(src.len) + 1);
    if (dst.data == NULL) {
        return NULL;
    }

    ngx_encode_base64(&dst, &src);
    dst.data[dst.len] = '\0';

    return cJSON_CreateString((char *) dst.data);
}


/* 0: not text; 1: text; 2: JSON */

static ngx_uint_t
ngx_http_mcp_loctool_is_text(ngx_str_t *type)
{
    u_char  *p, *end;

    if (type->len >= 5 && ngx_strncmp(type->data, "text/", 5) == 0) {
        return 1;
    }

    if (type->len == 16
        && ngx_strncmp(type->data, "application/json", 16) == 0)
    {
        return 2;
    }

    end = type->data + type->len;

    if (type->len > 5 && ngx_strncmp(end - 5, "+json", 5) == 0) {
        return 2;
    }

    if (type->len > 4 && ngx_strncmp(end - 4, "+xml", 4) == 0) {
        return 1;
    }

    p = ngx_strlchr(type->data, end, '/');

    if (p == NULL) {
        return 0;
    }

    p++;

    return ((end - p == 3 && ngx_strncmp(p, "xml", 3) == 0)
            || (end - p == 4 && ngx_strncmp(p, "yaml", 4) == 0)
            || (end - p == 10 && ngx_strncmp(p, "javascript", 10) == 0)
            || (end - p == 21
                && ngx_strncmp(p, "x-www-form-urlencoded", 21) == 0));
}


/* valid UTF-8 without NUL, as a JSON string can carry it */

static ngx_uint_t
ngx_http_mcp_loctool_utf8(u_char *p, size_t len)
{
    u_char    *end;
    uint32_t   u;

    end = p + len;

    while (p < end) {
        if (*p == '\0') {
            return 0;
        }

        if (*p < 0x80) {
            p++;
            continue;
        }

        u = ngx_utf8_decode(&p, end - p);

        /* surrogates are no characters: JSON text cannot carry them */
        if (u > 0x10ffff || (u >= 0xd800 && u <= 0xdfff)) {
            return 0;
        }
    }

    return 1;
}


/*
 * A string argument that $mcp_arg_ would put in a URI with a "." or ".."
 * segment refuses the call before anything is sent: nginx would evaluate
 * the refused variable as empty and send the request all the same.
 */

ngx_str_t *
ngx_http_mcp_loctool_check_args(ngx_http_mcp_call_t *call,
    ngx_http_mcp_loctool_t *tool, ngx_array_t *names)
{
    cJSON       *arg;
    ngx_str_t   *name;
    ngx_uint_t   i;

    name = names->elts;

    for (i = 0; i < names->nelts; i++) {
        arg = ngx_http_mcp_loctool_arg(tool,
                                       ngx_http_mcp_call_arguments(call),
                                       &name[i]);

        if (cJSON_IsString(arg)
            && ngx_http_mcp_loctool_dot_segment((u_char *) arg->valuestring,
                                                ngx_strlen(arg->valuestring)))
        {
            return &name[i];
        }
    }

    return NULL;
}


/*
 * The argument $mcp_arg_NAME reads.  nginx lowercases variable names:
 * NAME finds the input schema's property of that name in any case, and
 * the argument is the member of the property's own spelling, the one
 * the schema validated.  A member no property names reaches no
 * variable.
 */

cJSON *
ngx_http_mcp_loctool_arg(ngx_http_mcp_loctool_t *tool, cJSON *args,
    ngx_str_t *name)
{
    ngx_str_t   *prop;
    ngx_uint_t   i;

    prop = tool->props.elts;

    for (i = 0; i < tool->props.nelts; i++) {
        if (prop[i].len == name->len
            && ngx_strncasecmp(prop[i].data, name->data, name->len) == 0)
        {
            return cJSON_GetObjectItemCaseSensitive(args,
                                                    (char *) prop[i].data);
        }
    }

    return NULL;
}


static int ngx_libc_cdecl
ngx_http_mcp_loctool_name_cmp(const void *one, const void *two)
{
    return ngx_strcasecmp(*(u_char **) one, *(u_char **) two);
}


/*
 * Two names of the arguments, or one and a property of the input schema,
 * that differ only in case: $mcp_arg_ could not tell them apart, nor
 * could an upstream that binds JSON members regardless of case, and the
 * schema checked one of them only.  NGX_DECLINED with the two in clash;
 * NGX_OK: none.  Sorted regardless of case, the clashes are neighbours.
 */

ngx_int_t
ngx_http_mcp_loctool_case_clash(ngx_http_mcp_loctool_t *tool, cJSON *args,
    ngx_pool_t *pool, u_char **clash)
{
    u_char      **names;
    cJSON        *member;
    ngx_str_t    *prop;
    ngx_uint_t    i, n;

    n = tool->props.nelts;

    for (member = args ? args->child : NULL; member; member = member->next) {
        n++;
    }

    if (n < 2) {
        return NGX_OK;
    }

    names = ngx_palloc(pool, n * sizeof(u_char *));
    if (names == NULL) {
        return NGX_ERROR;
    }

    prop = tool->props.elts;

    for (i = 0; i < tool->props.nelts; i++) {
        names[i] = prop[i].data;
    }

    for (member = args ? args->child : NULL; member; member = member->next) {
        names[i++] = (u_char *) member->string;
    }

    ngx_qsort(names, n, sizeof(u_char *), ngx_http_mcp_loctool_name_cmp);

    for (i = 1; i < n; i++) {
        if (ngx_strcasecmp(names[i - 1], names[i]) == 0
            && ngx_strcmp(names[i - 1], names[i]) != 0)
        {
            clash[0] = names[i - 1];
            clash[1] = names[i];
            return NGX_DECLINED;
        }
    }

    return NGX_OK;
}


/* a "." or ".." between slashes or backslashes, or as the whole value */

ngx_uint_t
ngx_http_mcp_loctool_dot_segment(u_char *p, size_t len)
{
    size_t  i, start;

    start = 0;

    for (i = 0; i <= len; i++) {
        if (i < len && p[i] != '/' && p[i] != '\\') {
            continue;
        }

        if ((i - start == 1 && p[start] == '.')
            || (i - start == 2 && p[start] == '.' && p[start + 1] == '.'))
        {
            return 1;
        }

        start = i + 1;
    }

    return 0;
}
