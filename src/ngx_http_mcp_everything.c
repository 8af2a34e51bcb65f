
/*
 * ngx_http_mcp_module: the built-in "everything" set, the tools,
 * resources, prompts and completions the MCP conformance suite expects
 * of its Everything Server.
 *
 * Only the public API (ngx_http_mcp.h) is used, so the file doubles as an
 * example for other providers.  Entries whose answer never changes keep
 * it as a JSON tree parsed at configuration time (a config error shows a
 * typo at startup) and hand a copy to each call.
 *
 * The tools that send notifications or make requests to the client
 * (logging, progress, sampling, elicitation, reconnection) are not here.
 */


#include "ngx_http_mcp_fixtures.h"


/* a 1x1 red RGBA PNG */
#define NGX_HTTP_MCP_EVERYTHING_PNG                                          \
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAF"   \
    "BQIAX8jx0gAAAABJRU5ErkJggg=="

/* a WAV of 8 silent 8-bit mono samples at 8000 Hz */
#define NGX_HTTP_MCP_EVERYTHING_WAV                                          \
    "UklGRiwAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQgAAACAgICAgICAgA=="

#define NGX_HTTP_MCP_EVERYTHING_NO_ARGS                                      \
    "\"inputSchema\":{\"type\":\"object\",\"properties\":{}}"

#define NGX_HTTP_MCP_EVERYTHING_IMAGE                                        \
    "{\"type\":\"image\",\"data\":\"" NGX_HTTP_MCP_EVERYTHING_PNG "\","      \
    "\"mimeType\":\"image/png\"}"


typedef ngx_int_t (*ngx_http_mcp_everything_add_pt)(ngx_conf_t *cf,
    ngx_http_mcp_set_t *set, const char *json,
    ngx_http_mcp_handler_pt handler, void *data);


typedef struct {
    ngx_http_mcp_everything_add_pt   add;
    const char                      *json;      /* the listing object */
    ngx_http_mcp_handler_pt          handler;
    const char                      *result;    /* fixed answer or NULL */
} ngx_http_mcp_everything_entry_t;


typedef struct {
    const char                      *type;      /* ref/prompt, ref/resource */
    const char                      *ref;       /* prompt name, template */
    const char                      *argument;  /* NULL: none completes */
    const char *const               *values;
} ngx_http_mcp_everything_compl_t;


static ngx_int_t ngx_http_mcp_everything_fixed(ngx_http_mcp_call_t *call);
static ngx_int_t ngx_http_mcp_everything_schema_tool(
    ngx_http_mcp_call_t *call);
static ngx_int_t ngx_http_mcp_everything_template(ngx_http_mcp_call_t *call);
static ngx_int_t ngx_http_mcp_everything_prompt_args(
    ngx_http_mcp_call_t *call);
static ngx_int_t ngx_http_mcp_everything_prompt_resource(
    ngx_http_mcp_call_t *call);
static ngx_int_t ngx_http_mcp_everything_complete(ngx_http_mcp_call_t *call);
static cJSON *ngx_http_mcp_everything_completion(
    ngx_http_mcp_everything_compl_t *c, const char *prefix);
static ngx_int_t ngx_http_mcp_everything_reply(ngx_http_mcp_call_t *call,
    cJSON *result);
static cJSON *ngx_http_mcp_everything_messages(cJSON *first, cJSON *second);
static cJSON *ngx_http_mcp_everything_resource(const char *uri,
    const char *mime, const char *text);
static const char *ngx_http_mcp_everything_string(cJSON *object,
    const char *name);
static char *ngx_http_mcp_everything_cstr(ngx_pool_t *pool, ngx_str_t *s);


/* tools */

static const char  ngx_http_mcp_everything_simple_text[] =
    "{\"name\":\"test_simple_text\","
    "\"description\":\"Tests simple text content response\","
    NGX_HTTP_MCP_EVERYTHING_NO_ARGS "}";

static const char  ngx_http_mcp_everything_simple_text_result[] =
    "{\"content\":[{\"type\":\"text\","
    "\"text\":\"This is a simple text response for testing.\"}]}";

static const char  ngx_http_mcp_everything_image[] =
    "{\"name\":\"test_image_content\","
    "\"description\":\"Tests image content response\","
    NGX_HTTP_MCP_EVERYTHING_NO_ARGS "}";

static const char  ngx_http_mcp_everything_image_result[] =
    "{\"content\":[" NGX_HTTP_MCP_EVERYTHING_IMAGE "]}";

static const char  ngx_http_mcp_everything_audio[] =
    "{\"name\":\"test_audio_content\","
    "\"description\":\"Tests audio content response\","
    NGX_HTTP_MCP_EVERYTHING_NO_ARGS "}";

static const char  ngx_http_mcp_everything_audio_result[] =
    "{\"content\":[{\"type\":\"audio\","
    "\"data\":\"" NGX_HTTP_MCP_EVERYTHING_WAV "\","
    "\"mimeType\":\"audio/wav\"}]}";

static const char  ngx_http_mcp_everything_embedded[] =
    "{\"name\":\"test_embedded_resource\","
    "\"description\":\"Tests embedded resource content response\","
    NGX_HTTP_MCP_EVERYTHING_NO_ARGS "}";

static const char  ngx_http_mcp_everything_embedded_result[] =
    "{\"content\":[{\"type\":\"resource\",\"resource\":{"
    "\"uri\":\"test://embedded-resource\",\"mimeType\":\"text/plain\","
    "\"text\":\"This is an embedded resource content.\"}}]}";

static const char  ngx_http_mcp_everything_multiple[] =
    "{\"name\":\"test_multiple_content_types\","
    "\"description\":\"Tests response with multiple content types "
    "(text, image, resource)\","
    NGX_HTTP_MCP_EVERYTHING_NO_ARGS "}";

static const char  ngx_http_mcp_everything_multiple_result[] =
    "{\"content\":["
    "{\"type\":\"text\",\"text\":\"Multiple content types test:\"},"
    NGX_HTTP_MCP_EVERYTHING_IMAGE ","
    "{\"type\":\"resource\",\"resource\":{"
    "\"uri\":\"test://mixed-content-resource\","
    "\"mimeType\":\"application/json\","
    "\"text\":\"{\\\"test\\\":\\\"data\\\",\\\"value\\\":123}\"}}]}";

static const char  ngx_http_mcp_everything_error[] =
    "{\"name\":\"test_error_handling\","
    "\"description\":\"Tests error response handling\","
    NGX_HTTP_MCP_EVERYTHING_NO_ARGS "}";

/* a failed tool is a result with isError, not a JSON-RPC error */
static const char  ngx_http_mcp_everything_error_result[] =
    "{\"content\":[{\"type\":\"text\","
    "\"text\":\"This tool intentionally returns an error for testing\"}],"
    "\"isError\":true}";

/* the json-schema-2020-12 scenario checks these keywords survive as is */
static const char  ngx_http_mcp_everything_schema[] =
    "{\"name\":\"json_schema_2020_12_tool\","
    "\"description\":\"Tool with JSON Schema 2020-12 features\","
    "\"inputSchema\":{"
    "\"$schema\":\"https://json-schema.org/draft/2020-12/schema\","
    "\"type\":\"object\","
    "\"$defs\":{\"address\":{\"$anchor\":\"addressDef\",\"type\":\"object\","
    "\"properties\":{\"street\":{\"type\":\"string\"},"
    "\"city\":{\"type\":\"string\"}}}},"
    "\"properties\":{\"name\":{\"type\":\"string\"},"
    "\"address\":{\"$ref\":\"#/$defs/address\"},"
    "\"contactMethod\":{\"type\":\"string\",\"enum\":[\"phone\",\"email\"]},"
    "\"phone\":{\"type\":\"string\"},\"email\":{\"type\":\"string\"}},"
    "\"allOf\":[{\"anyOf\":[{\"required\":[\"phone\"]},"
    "{\"required\":[\"email\"]}]}],"
    "\"if\":{\"properties\":{\"contactMethod\":{\"const\":\"phone\"}},"
    "\"required\":[\"contactMethod\"]},"
    "\"then\":{\"required\":[\"phone\"]},"
    "\"else\":{\"required\":[\"email\"]},"
    "\"additionalProperties\":false}}";


/* resources */

static const char  ngx_http_mcp_everything_static_text[] =
    "{\"uri\":\"test://static-text\",\"name\":\"Static Text Resource\","
    "\"description\":\"A static text resource for testing\","
    "\"mimeType\":\"text/plain\"}";

static const char  ngx_http_mcp_everything_static_text_result[] =
    "{\"contents\":[{\"uri\":\"test://static-text\","
    "\"mimeType\":\"text/plain\","
    "\"text\":\"This is the content of the static text resource.\"}]}";

static const char  ngx_http_mcp_everything_static_binary[] =
    "{\"uri\":\"test://static-binary\",\"name\":\"Static Binary Resource\","
    "\"description\":\"A static binary resource (image) for testing\","
    "\"mimeType\":\"image/png\"}";

static const char  ngx_http_mcp_everything_static_binary_result[] =
    "{\"contents\":[{\"uri\":\"test://static-binary\","
    "\"mimeType\":\"image/png\","
    "\"blob\":\"" NGX_HTTP_MCP_EVERYTHING_PNG "\"}]}";

static const char  ngx_http_mcp_everything_watched[] =
    "{\"uri\":\"test://watched-resource\",\"name\":\"Watched Resource\","
    "\"description\":\"A resource that can be subscribed to\","
    "\"mimeType\":\"text/plain\"}";

static const char  ngx_http_mcp_everything_watched_result[] =
    "{\"contents\":[{\"uri\":\"test://watched-resource\","
    "\"mimeType\":\"text/plain\",\"text\":\"Watched resource content\"}]}";

static const char  ngx_http_mcp_everything_template_json[] =
    "{\"uriTemplate\":\"test://template/{id}/data\","
    "\"name\":\"Resource Template\","
    "\"description\":\"A resource template with parameter substitution\","
    "\"mimeType\":\"application/json\"}";


/* prompts */

static const char  ngx_http_mcp_everything_simple_prompt[] =
    "{\"name\":\"test_simple_prompt\","
    "\"description\":\"A simple prompt without arguments\"}";

static const char  ngx_http_mcp_everything_simple_prompt_result[] =
    "{\"messages\":[{\"role\":\"user\",\"content\":{\"type\":\"text\","
    "\"text\":\"This is a simple prompt for testing.\"}}]}";

static const char  ngx_http_mcp_everything_args_prompt[] =
    "{\"name\":\"test_prompt_with_arguments\","
    "\"description\":\"A prompt with required arguments\","
    "\"arguments\":["
    "{\"name\":\"arg1\",\"description\":\"First test argument\","
    "\"required\":true},"
    "{\"name\":\"arg2\",\"description\":\"Second test argument\","
    "\"required\":true}]}";

static const char  ngx_http_mcp_everything_resource_prompt[] =
    "{\"name\":\"test_prompt_with_embedded_resource\","
    "\"description\":\"A prompt that includes an embedded resource\","
    "\"arguments\":["
    "{\"name\":\"resourceUri\",\"description\":\"URI of the resource to "
    "embed\",\"required\":true}]}";

static const char  ngx_http_mcp_everything_image_prompt[] =
    "{\"name\":\"test_prompt_with_image\","
    "\"description\":\"A prompt that includes image content\"}";

static const char  ngx_http_mcp_everything_image_prompt_result[] =
    "{\"messages\":["
    "{\"role\":\"user\",\"content\":" NGX_HTTP_MCP_EVERYTHING_IMAGE "},"
    "{\"role\":\"user\",\"content\":{\"type\":\"text\","
    "\"text\":\"Please analyze the image above.\"}}]}";


static ngx_http_mcp_everything_entry_t  ngx_http_mcp_everything_entries[] = {

    { ngx_http_mcp_add_tool, ngx_http_mcp_everything_simple_text,
      ngx_http_mcp_everything_fixed,
      ngx_http_mcp_everything_simple_text_result },

    { ngx_http_mcp_add_tool, ngx_http_mcp_everything_image,
      ngx_http_mcp_everything_fixed,
      ngx_http_mcp_everything_image_result },

    { ngx_http_mcp_add_tool, ngx_http_mcp_everything_audio,
      ngx_http_mcp_everything_fixed,
      ngx_http_mcp_everything_audio_result },

    { ngx_http_mcp_add_tool, ngx_http_mcp_everything_embedded,
      ngx_http_mcp_everything_fixed,
      ngx_http_mcp_everything_embedded_result },

    { ngx_http_mcp_add_tool, ngx_http_mcp_everything_multiple,
      ngx_http_mcp_everything_fixed,
      ngx_http_mcp_everything_multiple_result },

    { ngx_http_mcp_add_tool, ngx_http_mcp_everything_error,
      ngx_http_mcp_everything_fixed,
      ngx_http_mcp_everything_error_result },

    { ngx_http_mcp_add_tool, ngx_http_mcp_everything_schema,
      ngx_http_mcp_everything_schema_tool, NULL },

    { ngx_http_mcp_add_resource, ngx_http_mcp_everything_static_text,
      ngx_http_mcp_everything_fixed,
      ngx_http_mcp_everything_static_text_result },

    { ngx_http_mcp_add_resource, ngx_http_mcp_everything_static_binary,
      ngx_http_mcp_everything_fixed,
      ngx_http_mcp_everything_static_binary_result },

    { ngx_http_mcp_add_resource, ngx_http_mcp_everything_watched,
      ngx_http_mcp_everything_fixed,
      ngx_http_mcp_everything_watched_result },

    { ngx_http_mcp_add_template, ngx_http_mcp_everything_template_json,
      ngx_http_mcp_everything_template, NULL },

    { ngx_http_mcp_add_prompt, ngx_http_mcp_everything_simple_prompt,
      ngx_http_mcp_everything_fixed,
      ngx_http_mcp_everything_simple_prompt_result },

    { ngx_http_mcp_add_prompt, ngx_http_mcp_everything_args_prompt,
      ngx_http_mcp_everything_prompt_args, NULL },

    { ngx_http_mcp_add_prompt, ngx_http_mcp_everything_resource_prompt,
      ngx_http_mcp_everything_prompt_resource, NULL },

    { ngx_http_mcp_add_prompt, ngx_http_mcp_everything_image_prompt,
      ngx_http_mcp_everything_fixed,
      ngx_http_mcp_everything_image_prompt_result },

    { NULL, NULL, NULL, NULL }
};


/* completion/complete: values offered when they start with what was typed */

static const char *const  ngx_http_mcp_everything_arg1_values[] = {
    "hello", "paris", "park", "party", "test", "testValue1", NULL
};

static const char *const  ngx_http_mcp_everything_arg2_values[] = {
    "test", "testValue2", "world", NULL
};

static const char *const  ngx_http_mcp_everything_uri_values[] = {
    "test://static-binary", "test://static-text", "test://watched-resource",
    NULL
};

static const char *const  ngx_http_mcp_everything_id_values[] = {
    "1", "2", "3", "123", "abc", NULL
};


static ngx_http_mcp_everything_compl_t  ngx_http_mcp_everything_compl[] = {
    { "ref/prompt", "test_simple_prompt", NULL, NULL },
    { "ref/prompt", "test_prompt_with_arguments", "arg1",
      ngx_http_mcp_everything_arg1_values },
    { "ref/prompt", "test_prompt_with_arguments", "arg2",
      ngx_http_mcp_everything_arg2_values },
    { "ref/prompt", "test_prompt_with_embedded_resource", "resourceUri",
      ngx_http_mcp_everything_uri_values },
    { "ref/prompt", "test_prompt_with_image", NULL, NULL },
    { "ref/resource", "test://template/{id}/data", "id",
      ngx_http_mcp_everything_id_values },
    { NULL, NULL, NULL, NULL }
};


ngx_int_t
ngx_http_mcp_everything_init(ngx_conf_t *cf, ngx_http_mcp_set_t *set)
{
    cJSON                            *fixed;
    ngx_http_mcp_everything_entry_t  *e;

    for (e = ngx_http_mcp_everything_entries; e->json; e++) {
        fixed = NULL;

        if (e->result) {
            fixed = ngx_http_mcp_parse_json(cf, e->result);
            if (fixed == NULL) {
                return NGX_ERROR;
            }
        }

        if (e->add(cf, set, e->json, e->handler, fixed) != NGX_OK) {
            return NGX_ERROR;
        }
    }

    set->complete = ngx_http_mcp_everything_complete;

    if (ngx_http_mcp_everything_streaming_init(cf, set) != NGX_OK) {
        return NGX_ERROR;
    }

    if (ngx_http_mcp_everything_mrtr_init(cf, set) != NGX_OK) {
        return NGX_ERROR;
    }

    return ngx_http_mcp_everything_tasks_init(cf, set);
}


/* answers with a copy of the tree parsed at configuration time */

static ngx_int_t
ngx_http_mcp_everything_fixed(ngx_http_mcp_call_t *call)
{
    cJSON  *result;

    result = cJSON_Duplicate(ngx_http_mcp_call_entry_data(call), 1);

    return ngx_http_mcp_everything_reply(call, result);
}


static ngx_int_t
ngx_http_mcp_everything_schema_tool(ngx_http_mcp_call_t *call)
{
    char    *args;
    u_char  *text;
    cJSON   *arguments, *result, *content, *item;

    args = NULL;
    arguments = ngx_http_mcp_call_arguments(call);

    if (arguments != NULL) {
        args = cJSON_PrintUnformatted(arguments);
        if (args == NULL) {
            return NGX_ERROR;
        }
    }

    text = ngx_pnalloc(ngx_http_mcp_call_pool(call),
                       sizeof("JSON Schema 2020-12 tool called with: {}")
                       + ((args != NULL) ? ngx_strlen(args) : 0));

    if (text != NULL) {
        ngx_sprintf(text, "JSON Schema 2020-12 tool called with: %s%Z",
                    (args != NULL) ? (u_char *) args : (u_char *) "{}");
    }

    cJSON_free(args);

    if (text == NULL) {
        return NGX_ERROR;
    }

    result = cJSON_CreateObject();
    content = cJSON_AddArrayToObject(result, "content");
    item = ngx_http_mcp_text_content((char *) text);

    if (!cJSON_AddItemToArray(content, item)) {
        cJSON_Delete(item);
        cJSON_Delete(result);
        return NGX_ERROR;
    }

    return ngx_http_mcp_everything_reply(call, result);
}


/*
 * test://template/{id}/data: the text is JSON built with cJSON, so an id
 * sent by the client cannot break out of its string.
 */

static ngx_int_t
ngx_http_mcp_everything_template(ngx_http_mcp_call_t *call)
{
    char        *id, *uri, *text;
    u_char      *data;
    cJSON       *json, *result;
    ngx_str_t   *var;
    ngx_pool_t  *pool;

    pool = ngx_http_mcp_call_pool(call);
    var = ngx_http_mcp_var(call, "id");

    /* a decoded "%00" would cut the C strings cJSON works with */

    if (var == NULL
        || ngx_strlchr(var->data, var->data + var->len, '\0') != NULL)
    {
        ngx_http_mcp_call_error(call, NGX_HTTP_MCP_INVALID_PARAMS,
                                "Invalid resource id");
        return NGX_OK;
    }

    id = ngx_http_mcp_everything_cstr(pool, var);
    uri = ngx_http_mcp_everything_cstr(pool, ngx_http_mcp_call_uri(call));
    data = ngx_pnalloc(pool, sizeof("Data for ID: ") + var->len);

    if (id == NULL || uri == NULL || data == NULL) {
        return NGX_ERROR;
    }

    ngx_sprintf(data, "Data for ID: %s%Z", id);

    json = cJSON_CreateObject();

    if (json == NULL
        || cJSON_AddStringToObject(json, "id", id) == NULL
        || cJSON_AddTrueToObject(json, "templateTest") == NULL
        || cJSON_AddStringToObject(json, "data", (char *) data) == NULL)
    {
        cJSON_Delete(json);
        return NGX_ERROR;
    }

    text = cJSON_PrintUnformatted(json);
    cJSON_Delete(json);

    if (text == NULL) {
        return NGX_ERROR;
    }

    result = ngx_http_mcp_everything_resource(uri, "application/json", text);
    cJSON_free(text);

    return ngx_http_mcp_everything_reply(call, result);
}


static ngx_int_t
ngx_http_mcp_everything_prompt_args(ngx_http_mcp_call_t *call)
{
    u_char      *text;
    cJSON       *content, *arguments;
    const char  *arg1, *arg2;

    arguments = ngx_http_mcp_call_arguments(call);
    arg1 = ngx_http_mcp_everything_string(arguments, "arg1");
    arg2 = ngx_http_mcp_everything_string(arguments, "arg2");

    /*
     * Prompt arguments are strings: a number or an object is a mistake of
     * the client, not something to guess a text for.
     */

    if (arg1 == NULL || arg2 == NULL) {
        ngx_http_mcp_call_error(call, NGX_HTTP_MCP_INVALID_PARAMS,
                                "Arguments arg1 and arg2 must be strings");
        return NGX_OK;
    }

    text = ngx_pnalloc(ngx_http_mcp_call_pool(call),
                       sizeof("Prompt with arguments: arg1='', arg2=''")
                       + ngx_strlen(arg1) + ngx_strlen(arg2));
    if (text == NULL) {
        return NGX_ERROR;
    }

    ngx_sprintf(text, "Prompt with arguments: arg1='%s', arg2='%s'%Z",
                arg1, arg2);

    content = ngx_http_mcp_text_content((char *) text);

    return ngx_http_mcp_everything_reply(call,
                           ngx_http_mcp_everything_messages(content, NULL));
}


static ngx_int_t
ngx_http_mcp_everything_prompt_resource(ngx_http_mcp_call_t *call)
{
    cJSON       *content, *type, *resource, *text;
    const char  *uri;

    uri = ngx_http_mcp_everything_string(ngx_http_mcp_call_arguments(call),
                                         "resourceUri");

    if (uri == NULL) {
        ngx_http_mcp_call_error(call, NGX_HTTP_MCP_INVALID_PARAMS,
                                "Argument resourceUri must be a string");
        return NGX_OK;
    }

    content = cJSON_CreateObject();
    type = cJSON_AddStringToObject(content, "type", "resource");
    resource = cJSON_AddObjectToObject(content, "resource");

    if (type == NULL
        || resource == NULL
        || cJSON_AddStringToObject(resource, "uri", uri) == NULL
        || cJSON_AddStringToObject(resource, "mimeType", "text/plain")
           == NULL
        || cJSON_AddStringToObject(resource, "text",
                                   "Embedded resource content for testing.")
           == NULL)
    {
        cJSON_Delete(content);
        return NGX_ERROR;
    }

    text = ngx_http_mcp_text_content(
                                "Please process the embedded resource above.");
    if (text == NULL) {
        cJSON_Delete(content);
        return NGX_ERROR;
    }

    return ngx_http_mcp_everything_reply(call,
                           ngx_http_mcp_everything_messages(content, text));
}


static ngx_int_t
ngx_http_mcp_everything_complete(ngx_http_mcp_call_t *call)
{
    cJSON                            *params, *ref, *argument, *result;
    ngx_uint_t                        known;
    const char                       *type, *name, *arg, *value;
    ngx_http_mcp_everything_compl_t  *c, *found;

    params = ngx_http_mcp_call_params(call);
    ref = cJSON_GetObjectItemCaseSensitive(params, "ref");
    argument = cJSON_GetObjectItemCaseSensitive(params, "argument");

    type = ngx_http_mcp_everything_string(ref, "type");
    name = NULL;

    if (type != NULL) {
        name = ngx_http_mcp_everything_string(ref,
                   (ngx_strcmp(type, "ref/prompt") == 0) ? "name" : "uri");
    }

    arg = ngx_http_mcp_everything_string(argument, "name");

    /* an absent value completes from scratch; a non-string is an error */

    value = ngx_http_mcp_everything_string(argument, "value");

    if (cJSON_GetObjectItemCaseSensitive(argument, "value") == NULL) {
        value = "";
    }

    if (name == NULL || arg == NULL || value == NULL) {
        ngx_http_mcp_call_error(call, NGX_HTTP_MCP_INVALID_PARAMS,
                                "Invalid completion reference or argument");
        return NGX_OK;
    }

    known = 0;
    found = NULL;

    for (c = ngx_http_mcp_everything_compl; c->type; c++) {
        if (ngx_strcmp(c->type, type) != 0 || ngx_strcmp(c->ref, name) != 0) {
            continue;
        }

        known = 1;

        if (c->argument && ngx_strcmp(c->argument, arg) == 0) {
            found = c;
            break;
        }
    }

    if (!known) {
        ngx_http_mcp_call_error(call, NGX_HTTP_MCP_INVALID_PARAMS,
                                "Unknown completion reference");
        return NGX_OK;
    }

    /* a known reference with an argument we do not complete: no values */

    result = ngx_http_mcp_everything_completion(found, value);

    return ngx_http_mcp_everything_reply(call, result);
}


/* {"completion":{"values":[...],"total":N,"hasMore":false}} */

static cJSON *
ngx_http_mcp_everything_completion(ngx_http_mcp_everything_compl_t *c,
    const char *prefix)
{
    size_t              len;
    cJSON              *result, *completion, *values;
    ngx_uint_t          n;
    const char *const  *v;

    len = ngx_strlen(prefix);
    n = 0;

    result = cJSON_CreateObject();
    completion = cJSON_AddObjectToObject(result, "completion");
    values = cJSON_AddArrayToObject(completion, "values");

    if (values == NULL) {
        goto failed;
    }

    for (v = (c != NULL) ? c->values : NULL; v != NULL && *v != NULL; v++) {

        if (ngx_strncmp(*v, prefix, len) != 0) {
            continue;
        }

        if (!cJSON_AddItemToArray(values, cJSON_CreateString(*v))) {
            goto failed;
        }

        n++;
    }

    if (cJSON_AddNumberToObject(completion, "total", n) == NULL
        || cJSON_AddFalseToObject(completion, "hasMore") == NULL)
    {
        goto failed;
    }

    return result;

failed:

    cJSON_Delete(result);

    return NULL;
}


/* ends the call with result; NULL means building it ran out of memory */

static ngx_int_t
ngx_http_mcp_everything_reply(ngx_http_mcp_call_t *call, cJSON *result)
{
    if (result == NULL) {
        return NGX_ERROR;
    }

    ngx_http_mcp_call_result(call, result);

    return NGX_OK;
}


/*
 * {"messages":[{"role":"user","content":first},...]}; takes ownership of
 * both contents, second may be NULL only when a single message is meant.
 */

static cJSON *
ngx_http_mcp_everything_messages(cJSON *first, cJSON *second)
{
    cJSON       *result, *messages, *message, *contents[2];
    ngx_uint_t   i, n;

    contents[0] = first;
    contents[1] = second;
    n = (second != NULL) ? 2 : 1;

    result = cJSON_CreateObject();
    messages = cJSON_AddArrayToObject(result, "messages");

    for (i = 0; i < n; i++) {

        if (messages == NULL || contents[i] == NULL) {
            goto failed;
        }

        message = cJSON_CreateObject();

        if (!cJSON_AddItemToArray(messages, message)
            || cJSON_AddStringToObject(message, "role", "user") == NULL
            || !cJSON_AddItemToObject(message, "content", contents[i]))
        {
            goto failed;
        }

        contents[i] = NULL;
    }

    return result;

failed:

    cJSON_Delete(result);
    cJSON_Delete(contents[0]);
    cJSON_Delete(contents[1]);

    return NULL;
}


/* {"contents":[{"uri":uri,"mimeType":mime,"text":text}]} */

static cJSON *
ngx_http_mcp_everything_resource(const char *uri, const char *mime,
    const char *text)
{
    cJSON  *result, *contents, *item;

    result = cJSON_CreateObject();
    contents = cJSON_AddArrayToObject(result, "contents");
    item = cJSON_CreateObject();

    if (!cJSON_AddItemToArray(contents, item)) {
        cJSON_Delete(item);
        cJSON_Delete(result);
        return NULL;
    }

    if (cJSON_AddStringToObject(item, "uri", uri) == NULL
        || cJSON_AddStringToObject(item, "mimeType", mime) == NULL
        || cJSON_AddStringToObject(item, "text", text) == NULL)
    {
        cJSON_Delete(result);
        return NULL;
    }

    return result;
}


/* the string member name of object, or NULL when absent or not a string */

static const char *
ngx_http_mcp_everything_string(cJSON *object, const char *name)
{
    cJSON  *item;

    item = cJSON_GetObjectItemCaseSensitive(object, name);

    return cJSON_IsString(item) ? item->valuestring : NULL;
}


static char *
ngx_http_mcp_everything_cstr(ngx_pool_t *pool, ngx_str_t *s)
{
    u_char  *p;

    p = ngx_pnalloc(pool, s->len + 1);
    if (p == NULL) {
        return NULL;
    }

    *ngx_cpymem(p, s->data, s->len) = '\0';

    return (char *) p;
}
