
/*
 * W3C Trace Context (traceparent, tracestate) and W3C Baggage values, as
 * MCP carries them in a message's params._meta (SEP-414, 2026-07-28) and
 * HTTP carries them in headers (ngx_http_mcp_w3c.c).  Pure code over
 * strings and cJSON trees: the core decides which source a request's
 * trace comes from, this file decides whether a value is one.
 */


#ifndef _NGX_HTTP_MCP_W3C_H_INCLUDED_
#define _NGX_HTTP_MCP_W3C_H_INCLUDED_


#include <ngx_config.h>
#include <ngx_core.h>
#include <cjson/cJSON.h>


/* a trace context: each value well-formed, or empty (len 0) */
typedef struct {
    ngx_str_t                  traceparent;
    ngx_str_t                  tracestate;
    ngx_str_t                  baggage;
} ngx_http_mcp_trace_t;


/* the three, by index: their names, NUL-terminated, and t's values */
extern ngx_str_t  ngx_http_mcp_w3c_names[3];

#define ngx_http_mcp_trace_value(t, k)                                       \
    ((k) == 0 ? &(t)->traceparent                                            \
              : (k) == 1 ? &(t)->tracestate : &(t)->baggage)


/* whether a value is well-formed: NGX_OK or NGX_DECLINED */
ngx_int_t ngx_http_mcp_w3c_traceparent(u_char *p, size_t len);
ngx_int_t ngx_http_mcp_w3c_tracestate(u_char *p, size_t len);
ngx_int_t ngx_http_mcp_w3c_baggage(u_char *p, size_t len);

/*
 * The trace context of a _meta object (NULL: none) into *t, its values
 * the tree's own strings.  A malformed value, or a tracestate without a
 * traceparent to go with it, is taken out of the tree: *dropped counts
 * them.  Returns how many of the three keys the tree keeps.
 */
ngx_uint_t ngx_http_mcp_w3c_meta(cJSON *meta, ngx_http_mcp_trace_t *t,
    ngx_uint_t *dropped);

/*
 * t's values added to obj._meta (obj: a message's params), the object
 * made if absent; a key already there is replaced.  NGX_OK, NGX_ERROR.
 */
ngx_int_t ngx_http_mcp_w3c_meta_set(cJSON *obj, ngx_http_mcp_trace_t *t);


#endif /* _NGX_HTTP_MCP_W3C_H_INCLUDED_ */
