
/*
 * A request's trace context (SEP-414; ngx_http_mcp_trace.c): which one
 * the module takes from a POST, and how it hands it on, in _meta and in
 * HTTP headers.
 */


#ifndef _NGX_HTTP_MCP_TRACE_H_INCLUDED_
#define _NGX_HTTP_MCP_TRACE_H_INCLUDED_


#include "ngx_http_mcp.h"
#include "ngx_http_mcp_w3c.h"


/*
 * The POST's trace into *trace (r's pool), its messages' _meta made to
 * say it: each message's own, its malformed values taken out; a message
 * with none gets the headers' (their malformed values ignored), or with
 * generate and no traceparent in the headers, a new one.  *changed: a
 * message's _meta changed.  NGX_OK, NGX_ERROR.
 */
ngx_int_t ngx_http_mcp_trace_read(ngx_http_request_t *r, ngx_array_t *msgs,
    ngx_uint_t generate, ngx_http_mcp_trace_t *trace, ngx_uint_t *changed);

/* the call's trace (its message's, read when it was made) */
ngx_http_mcp_trace_t *ngx_http_mcp_call_trace(ngx_http_mcp_call_t *call);

/*
 * t written into a message's params._meta (params made if absent); with
 * t empty, nothing.  NGX_OK, NGX_ERROR.
 */
ngx_int_t ngx_http_mcp_trace_message(ngx_http_mcp_trace_t *t,
    cJSON *message);

/* a copy of src into pool; NGX_OK, NGX_ERROR */
ngx_int_t ngx_http_mcp_trace_copy(ngx_pool_t *pool,
    ngx_http_mcp_trace_t *dst, ngx_http_mcp_trace_t *src);

/* the trace as request header lines: their length, and written at p */
size_t ngx_http_mcp_trace_lines_len(ngx_http_mcp_trace_t *t);
u_char *ngx_http_mcp_trace_lines(ngx_http_mcp_trace_t *t, u_char *p);


#endif /* _NGX_HTTP_MCP_TRACE_H_INCLUDED_ */
