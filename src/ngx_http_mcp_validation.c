
/*
 * "mcp_builtin validation": one tool whose inputSchema uses every keyword
 * the schema validator knows, to try it from outside.  A test fixture,
 * built on the registration API (ngx_http_mcp.h) alone.
 */


#include "ngx_http_mcp.h"


static ngx_int_t ngx_http_mcp_validated(ngx_http_mcp_call_t *call);


static const char  ngx_http_mcp_validate_tool[] =
    "{\"name\":\"validate\","
    "\"description\":\"Answers ok when its arguments fit the schema\","
    "\"inputSchema\":{\"type\":\"object\","
    "\"$defs\":{\"tag\":{\"type\":\"string\",\"pattern\":\"^[a-z]+$\"}},"
    "\"properties\":{"
    "\"name\":{\"type\":\"string\",\"minLength\":2,\"maxLength\":8},"
    "\"age\":{\"type\":\"integer\",\"minimum\":0,\"maximum\":150},"
    "\"ratio\":{\"type\":\"number\",\"exclusiveMinimum\":0,"
    "\"exclusiveMaximum\":1},"
    "\"color\":{\"enum\":[\"red\",\"green\"]},"
    "\"kind\":{\"const\":\"fixed\"},"
    "\"tags\":{\"type\":\"array\",\"items\":{\"$ref\":\"#/$defs/tag\"},"
    "\"minItems\":1,\"maxItems\":3,\"uniqueItems\":true},"
    "\"id\":{\"anyOf\":[{\"type\":\"integer\"},"
    "{\"type\":\"string\",\"pattern\":\"^id-\"}]},"
    "\"one\":{\"oneOf\":[{\"type\":\"integer\"},{\"minimum\":10}]},"
    "\"code\":{\"allOf\":[{\"type\":\"string\"},{\"maxLength\":3}],"
    "\"not\":{\"const\":\"bad\"}},"
    "\"nested\":{\"type\":\"object\",\"required\":[\"x\"],"
    "\"properties\":{\"x\":{\"type\":\"boolean\"}},"
    "\"additionalProperties\":false}},"
    "\"required\":[\"name\"],"
    "\"additionalProperties\":false}}";


ngx_int_t
ngx_http_mcp_validation_set(ngx_conf_t *cf, ngx_http_mcp_set_t *set)
{
    return ngx_http_mcp_add_tool(cf, set, ngx_http_mcp_validate_tool,
                                 ngx_http_mcp_validated, NULL);
}


static ngx_int_t
ngx_http_mcp_validated(ngx_http_mcp_call_t *call)
{
    cJSON  *content;

    content = cJSON_CreateArray();

    if (content == NULL
        || !cJSON_AddItemToArray(content, ngx_http_mcp_text_content("ok")))
    {
        cJSON_Delete(content);
        return NGX_ERROR;
    }

    ngx_http_mcp_call_result(call, ngx_http_mcp_tool_result(content, 0));

    return NGX_OK;
}
