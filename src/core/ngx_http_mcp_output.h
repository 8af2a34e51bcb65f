
/*
 * A tool's result held to the outputSchema it declares (MCP: a server
 * MUST return structuredContent that conforms to it).  The module's own
 * tools only: the Everything set, the C API's, mcp_tool.
 */


#ifndef _NGX_HTTP_MCP_OUTPUT_H_INCLUDED_
#define _NGX_HTTP_MCP_OUTPUT_H_INCLUDED_


#include "ngx_http_mcp_call.h"


/*
 * The finish hook of a tools/call whose tool has an outputSchema: a
 * result whose structuredContent is missing or does not conform becomes
 * an isError result that names the fault, logged at "warn".  NGX_OK, or
 * NGX_ERROR (the call ends with an internal error).
 */
ngx_int_t ngx_http_mcp_output_check(ngx_http_mcp_call_t *call,
    cJSON *result);


#endif /* _NGX_HTTP_MCP_OUTPUT_H_INCLUDED_ */
