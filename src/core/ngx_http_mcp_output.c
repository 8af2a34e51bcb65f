
/*
 * A tool's structuredContent against its outputSchema.  The check runs
 * as the call's finish hook, on the result the tool gave, before the
 * reply is built (or a task keeps it): every kind of tool (Everything,
 * the C API's, mcp_tool) comes through ngx_http_mcp_call_result(), so
 * one place holds them all to their word.  A result that breaks it is a
 * fault of the tool, not of the client: the client gets an isError
 * result naming the fault, which a model can read and act on, and the
 * log a "warn" line for the operator, whose tool (or location behind an
 * mcp_tool) no longer answers as it declares.
 */


#include "ngx_http_mcp_output.h"
#include "ngx_http_mcp_core.h"
#include "ngx_http_mcp_json.h"
#include "ngx_http_mcp_schema.h"
#include "ngx_http_mcp_call.h"


#define NGX_HTTP_MCP_OUTPUT_PREFIX                                           \
    "The tool's result does not conform to its outputSchema: "


ngx_int_t
ngx_http_mcp_output_check(ngx_http_mcp_call_t *call, cJSON *result)
{
    ngx_http_mcp_schema_t  *compiled;

    compiled = call->entry->output_schema;

    /* a tool added otherwise than by ngx_http_mcp_add() is not compiled */
    return ngx_http_mcp_output_conform(call->pool, call->log,
               &call->entry->name,
               compiled ? compiled->root
                        : ngx_http_mcp_json_get(call->entry->desc,
                                                "outputSchema"),
               compiled, result,
               ngx_http_mcp_hooks.format_assert(call->loc_conf));
}


/*
 * The check itself, for any tool: the module's own, and an upstream's
 * whose result mcp_pass_check_results holds to the outputSchema the
 * upstream listed (ngx_http_mcp_proxy_check.c).
 */

ngx_int_t
ngx_http_mcp_output_conform(ngx_pool_t *pool, ngx_log_t *log,
    ngx_str_t *name, cJSON *schema, ngx_http_mcp_schema_t *compiled,
    cJSON *result, ngx_uint_t format_assert)
{
    u_char                      *error, *text;
    cJSON                       *sc, *type, *content, *item;
    size_t                       len;
    ngx_int_t                    rc;
    ngx_http_mcp_schema_opts_t   opts;

    type = ngx_http_mcp_json_get(result, "resultType");

    /* an error of the tool's own, a task begun, input asked for */
    if (schema == NULL
        || cJSON_IsTrue(ngx_http_mcp_json_get(result, "isError"))
        || ngx_http_mcp_json_get(result, "task") != NULL
        || (cJSON_IsString(type)
            && ngx_strcmp(type->valuestring, "complete") != 0))
    {
        return NGX_OK;
    }

    sc = ngx_http_mcp_json_get(result, "structuredContent");

    if (sc == NULL) {
        error = (u_char *) "structuredContent is missing";

    } else {
        ngx_memzero(&opts, sizeof(ngx_http_mcp_schema_opts_t));
        opts.format_assert = format_assert;
        opts.path = "structuredContent";
        opts.compiled = compiled;

        error = NULL;

        rc = ngx_http_mcp_schema_validate_opts(pool, schema, sc, &opts,
                                               &error);
        if (rc == NGX_OK) {
            return NGX_OK;
        }

        if (rc != NGX_DECLINED || error == NULL) {
            return NGX_ERROR;
        }
    }

    ngx_log_error(NGX_LOG_WARN, log, 0,
                  "mcp: tool \"%V\" result breaks its outputSchema: %s",
                  name, error);

    len = sizeof(NGX_HTTP_MCP_OUTPUT_PREFIX) - 1 + ngx_strlen(error);

    text = ngx_pnalloc(pool, len + 1);
    if (text == NULL) {
        return NGX_ERROR;
    }

    *ngx_cpymem(ngx_cpymem(text, NGX_HTTP_MCP_OUTPUT_PREFIX,
                           sizeof(NGX_HTTP_MCP_OUTPUT_PREFIX) - 1),
                error, ngx_strlen(error)) = '\0';

    /* the result in place: the hook's caller owns it */
    cJSON_DeleteItemFromObjectCaseSensitive(result, "structuredContent");
    cJSON_DeleteItemFromObjectCaseSensitive(result, "content");
    cJSON_DeleteItemFromObjectCaseSensitive(result, "isError");

    content = cJSON_CreateArray();
    item = ngx_http_mcp_text_content((char *) text);

    if (content == NULL || item == NULL) {
        cJSON_Delete(content);
        cJSON_Delete(item);
        return NGX_ERROR;
    }

    cJSON_AddItemToArray(content, item);

    if (!cJSON_AddItemToObject(result, "content", content)) {
        cJSON_Delete(content);
        return NGX_ERROR;
    }

    if (!cJSON_AddTrueToObject(result, "isError")) {
        return NGX_ERROR;
    }

    return NGX_OK;
}
