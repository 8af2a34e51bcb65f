
/*
 * Reading an event stream (text/event-stream): the pure part.
 */


#ifndef _NGX_HTTP_MCP_SSE_READ_H_INCLUDED_
#define _NGX_HTTP_MCP_SSE_READ_H_INCLUDED_


#include <ngx_config.h>
#include <ngx_core.h>


u_char *ngx_http_mcp_sse_bom(u_char *p, u_char *end);
ngx_uint_t ngx_http_mcp_sse_bom_pending(u_char *p, u_char *end);
u_char *ngx_http_mcp_sse_eol(u_char *p, u_char *end, u_char **next);
u_char *ngx_http_mcp_sse_field(u_char *p, u_char *last, const char *name,
    ngx_str_t *value);
u_char *ngx_http_mcp_sse_event_end(u_char *p, u_char *end);
size_t ngx_http_mcp_sse_data(u_char *p, u_char *last, u_char *dst);


#endif /* _NGX_HTTP_MCP_SSE_READ_H_INCLUDED_ */
