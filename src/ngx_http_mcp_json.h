
/*
 * The strict JSON scan of ngx_http_mcp_jsonrpc.c, for the module's pure
 * files that read JSON and know nothing of HTTP (jwt.c).
 */


#ifndef _NGX_HTTP_MCP_JSON_H_INCLUDED_
#define _NGX_HTTP_MCP_JSON_H_INCLUDED_


#include <ngx_config.h>
#include <ngx_core.h>


ngx_int_t ngx_http_mcp_json_strict(ngx_pool_t *pool, u_char *p, size_t len,
    const char **error);


#endif /* _NGX_HTTP_MCP_JSON_H_INCLUDED_ */
