
/*
 * The HTTP edge (src/edge): the entry points of an MCP location, where a
 * request comes in: the content handler and the POST's life
 * (ngx_http_mcp_transport.c), SSE streams out of the event log and GET
 * streams (ngx_http_mcp_stream.c), the $mcp_* variables
 * (ngx_http_mcp_variables.c), nginx's own errors as JSON-RPC
 * (ngx_http_mcp_filter.c) and mcp_health (ngx_http_mcp_health.c).  The
 * top of the request's path: it calls the gateways (mcp_pass, mcp_fleet)
 * and the core; mcp_backend and the module call it.
 */


#ifndef _NGX_HTTP_MCP_EDGE_H_INCLUDED_
#define _NGX_HTTP_MCP_EDGE_H_INCLUDED_


#include "ngx_http_mcp_http.h"


/* ---- stream.c: SSE out of the event log ---- */

ngx_int_t ngx_http_mcp_stream_start(ngx_http_mcp_ctx_t *ctx);
ngx_int_t ngx_http_mcp_stream_reply(ngx_http_mcp_ctx_t *ctx,
    ngx_http_mcp_msg_t *msg);
ngx_http_mcp_ctx_t *ngx_http_mcp_session_request(ngx_http_request_t *r,
    ngx_http_mcp_loc_conf_t *mlcf, ngx_str_t *sid, ngx_int_t *rc);
ngx_int_t ngx_http_mcp_stream_get(ngx_http_request_t *r,
    ngx_http_mcp_loc_conf_t *mlcf);
void ngx_http_mcp_stream_end_http(ngx_http_mcp_stream_t *st);
void ngx_http_mcp_streams_init(void);
ngx_uint_t ngx_http_mcp_streams_live(void);
void ngx_http_mcp_streams_wake(void);
ngx_int_t ngx_http_mcp_stream_poke(uint32_t token);
void ngx_http_mcp_streams_quit(ngx_uint_t deadline);
ngx_int_t ngx_http_mcp_lists_changed(ngx_cycle_t *cycle);


/* ---- health.c: mcp_health ---- */

char *ngx_http_mcp_health(ngx_conf_t *cf, ngx_command_t *cmd, void *conf);


/* ---- transport.c, variables.c, filter.c: the entry points ---- */

ngx_int_t ngx_http_mcp_handler(ngx_http_request_t *r);
ngx_int_t ngx_http_mcp_rewrite_handler(ngx_http_request_t *r);
/* mcp_stdio's steps (the stdio module's table): its POST and reply */
ngx_int_t ngx_http_mcp_stdio_request(ngx_http_request_t *r, ngx_str_t *body,
    ngx_int_t *rc);
ngx_int_t ngx_http_mcp_stdio_reply(ngx_http_request_t *r, cJSON *reply);
ngx_uint_t ngx_http_mcp_stdio_reads(ngx_http_request_t *r);
ngx_int_t ngx_http_mcp_add_variables(ngx_conf_t *cf);
ngx_int_t ngx_http_mcp_variables_capture(ngx_http_mcp_ctx_t *ctx);
void ngx_http_mcp_variables_used(ngx_conf_t *cf);

ngx_int_t ngx_http_mcp_filter_init(ngx_conf_t *cf);


#endif /* _NGX_HTTP_MCP_EDGE_H_INCLUDED_ */
