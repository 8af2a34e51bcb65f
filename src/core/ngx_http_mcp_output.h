
/*
 * A tool's result held to the outputSchema it declares (MCP: a server
 * MUST return structuredContent that conforms to it).  The module's own
 * tools: the Everything set, the C API's, mcp_tool; and an upstream's
 * under mcp_pass_check_results.
 */


#ifndef _NGX_HTTP_MCP_OUTPUT_H_INCLUDED_
#define _NGX_HTTP_MCP_OUTPUT_H_INCLUDED_


#include "ngx_http_mcp_call.h"
#include "ngx_http_mcp_schema.h"


/*
 * The finish hook of a tools/call whose tool has an outputSchema: a
 * result whose structuredContent is missing or does not conform becomes
 * an isError result that names the fault, logged at "warn".  NGX_OK, or
 * NGX_ERROR (the call ends with an internal error).
 */
ngx_int_t ngx_http_mcp_output_check(ngx_http_mcp_call_t *call,
    cJSON *result);

/*
 * The same for tool name's result against schema (NULL: none declared;
 * compiled: its compiled form, or NULL), the fault logged to log;
 * format_assert: "format" is an assertion.
 */
ngx_int_t ngx_http_mcp_output_conform(ngx_pool_t *pool, ngx_log_t *log,
    ngx_str_t *name, cJSON *schema, ngx_http_mcp_schema_t *compiled,
    cJSON *result, ngx_uint_t format_assert);


#endif /* _NGX_HTTP_MCP_OUTPUT_H_INCLUDED_ */
