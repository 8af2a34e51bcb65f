
/*
 * RFC 6570 URI templates matched against a URI (ngx_http_mcp_uritemplate.c):
 * the variables of a resource template.  Pure code over pools and strings.
 */


#ifndef _NGX_HTTP_MCP_URITEMPLATE_H_INCLUDED_
#define _NGX_HTTP_MCP_URITEMPLATE_H_INCLUDED_


#include <ngx_config.h>
#include <ngx_core.h>


ngx_int_t ngx_http_mcp_uritemplate_match(ngx_pool_t *pool, ngx_str_t *tmpl,
    ngx_str_t *uri, ngx_array_t *vars);


#endif /* _NGX_HTTP_MCP_URITEMPLATE_H_INCLUDED_ */
