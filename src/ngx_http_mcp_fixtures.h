
/*
 * ngx_http_mcp_fixtures_module: the sets the tests and the conformance
 * suite use, "everything" and "validation".  Built on ngx_http_mcp.h
 * alone, as a module of another vendor would be, and left out of a build
 * with MCP_FIXTURES=0.
 */


#ifndef _NGX_HTTP_MCP_FIXTURES_H_INCLUDED_
#define _NGX_HTTP_MCP_FIXTURES_H_INCLUDED_


#include "ngx_http_mcp.h"


ngx_int_t ngx_http_mcp_everything_init(ngx_conf_t *cf,
    ngx_http_mcp_set_t *set);
ngx_int_t ngx_http_mcp_everything_streaming_init(ngx_conf_t *cf,
    ngx_http_mcp_set_t *set);
ngx_int_t ngx_http_mcp_everything_mrtr_init(ngx_conf_t *cf,
    ngx_http_mcp_set_t *set);
ngx_int_t ngx_http_mcp_everything_tasks_init(ngx_conf_t *cf,
    ngx_http_mcp_set_t *set);
ngx_int_t ngx_http_mcp_validation_set(ngx_conf_t *cf,
    ngx_http_mcp_set_t *set);


#endif /* _NGX_HTTP_MCP_FIXTURES_H_INCLUDED_ */
