
/*
 * Prometheus metrics (ngx_http_mcp_metrics.c): the counting hooks that the
 * HTTP edge, calls and the gateway call, and the mcp_metrics endpoint.
 * The counters live in a zone of their own that only metrics.c touches.
 */


#ifndef _NGX_HTTP_MCP_METRICS_H_INCLUDED_
#define _NGX_HTTP_MCP_METRICS_H_INCLUDED_


#include "ngx_http_mcp_core.h"


/* directives and configuration */
char *ngx_http_mcp_metrics(ngx_conf_t *cf, ngx_command_t *cmd, void *conf);
ngx_int_t ngx_http_mcp_metrics_init_conf(ngx_conf_t *cf);

/*
 * The hooks.  A start of 0 means "not counted" (no mcp_metrics location,
 * or mcp_metrics_counting off where the request was served): the end
 * hooks then do nothing.
 */
uint64_t ngx_http_mcp_metrics_start(ngx_http_mcp_loc_conf_t *mlcf);
void ngx_http_mcp_metrics_call(ngx_http_mcp_call_t *call, uint64_t start,
    cJSON *reply);
void ngx_http_mcp_metrics_error(ngx_int_t code);
void ngx_http_mcp_metrics_auth(ngx_http_request_t *r, ngx_str_t *result);
void ngx_http_mcp_metrics_server_timeout(void);
void ngx_http_mcp_metrics_backend_failure(void);
void ngx_http_mcp_metrics_pin_change(void);
ngx_int_t ngx_http_mcp_metrics_guard_set(ngx_conf_t *cf, ngx_str_t *name);
void ngx_http_mcp_metrics_guardrail(ngx_uint_t set, ngx_uint_t action);
void ngx_http_mcp_metrics_upstream_header(uint64_t start);
void ngx_http_mcp_metrics_gateway(ngx_http_request_t *r, ngx_array_t *msgs,
    uint64_t start, ngx_int_t rc, ngx_uint_t sent);


#endif /* _NGX_HTTP_MCP_METRICS_H_INCLUDED_ */
