
/*
 * One Redis connection per worker, on nginx's event loop (hiredis's
 * asynchronous API with an adapter of our own): ngx_http_mcp_redis.c.
 * Used by mcp_fleet (ngx_http_mcp_fleet.c) to say which node owns a
 * session.
 */


#ifndef _NGX_HTTP_MCP_REDIS_H_INCLUDED_
#define _NGX_HTTP_MCP_REDIS_H_INCLUDED_


#include <ngx_config.h>
#include <ngx_core.h>


/*
 * A command's outcome: NGX_OK with a bulk string's bytes (a nil as
 * value->data == NULL), NGX_DONE with a status's or an integer's text
 * (digits), NGX_DECLINED for a reply that is an error or of another
 * type, NGX_ERROR when the connection failed before a reply.
 */
typedef void (*ngx_http_mcp_redis_pt)(void *data, ngx_int_t rc,
    ngx_str_t *value);

/* called once the connection is up (again) */
typedef void (*ngx_http_mcp_redis_up_pt)(void);


ngx_int_t ngx_http_mcp_redis_start(ngx_cycle_t *cycle, ngx_str_t *host,
    in_port_t port, ngx_msec_t timeout, ngx_http_mcp_redis_up_pt up);
void ngx_http_mcp_redis_stop(void);
ngx_uint_t ngx_http_mcp_redis_ready(void);
ngx_int_t ngx_http_mcp_redis_command(ngx_http_mcp_redis_pt handler,
    void *data, int argc, const char **argv, const size_t *argvlen);


#endif /* _NGX_HTTP_MCP_REDIS_H_INCLUDED_ */
