
/*
 * The allocator behind cJSON (see ngx_http_mcp_alloc.c).
 */


#ifndef _NGX_HTTP_MCP_ALLOC_H_INCLUDED_
#define _NGX_HTTP_MCP_ALLOC_H_INCLUDED_


void ngx_http_mcp_alloc_init(void);


#endif /* _NGX_HTTP_MCP_ALLOC_H_INCLUDED_ */
