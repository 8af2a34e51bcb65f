
/*
 * mcp_fleet (ngx_http_mcp_fleet.c) and its tasks
 * (ngx_http_mcp_fleet_task.c): which node owns a session or a
 * 2026-07-28 task, in Redis.
 */


#ifndef _NGX_HTTP_MCP_FLEET_H_INCLUDED_
#define _NGX_HTTP_MCP_FLEET_H_INCLUDED_


#include "ngx_http_mcp_store.h"
#include "ngx_http_mcp_core.h"
#include "ngx_http_mcp_redis.h"


#define NGX_HTTP_MCP_FLEET_PREFIX_LEN  64

/* a task's key: the prefix, "task:" and the task's id */
#define NGX_HTTP_MCP_FLEET_TASK        "task:"
#define NGX_HTTP_MCP_FLEET_KEY_LEN                                            \
    (NGX_HTTP_MCP_FLEET_PREFIX_LEN + sizeof(NGX_HTTP_MCP_FLEET_TASK) - 1     \
     + ngx_max(NGX_HTTP_MCP_SESSION_ID_LEN, NGX_HTTP_MCP_TASK_ID_LEN))


/* a request's wait for Redis: outlives the request if need be */
typedef struct {
    ngx_http_request_t        *request;     /* NULL once it has gone */
    ngx_http_mcp_ctx_t        *ctx;         /* a POST whose reply waits */
    ngx_pool_cleanup_t        *cln;
} ngx_http_mcp_fleet_op_t;


void ngx_http_mcp_fleet_task_setup(ngx_str_t *prefix, ngx_str_t *node);
ngx_http_mcp_fleet_op_t *ngx_http_mcp_fleet_op(ngx_http_request_t *r);
void ngx_http_mcp_fleet_op_done(ngx_http_mcp_fleet_op_t *op);
void ngx_http_mcp_fleet_registered(void *data, ngx_int_t rc,
    ngx_str_t *value);
void ngx_http_mcp_fleet_ignore(void *data, ngx_int_t rc, ngx_str_t *value);
ngx_int_t ngx_http_mcp_fleet_own(u_char *key, size_t len, ngx_msec_t ttl,
    void *data, ngx_http_mcp_redis_pt handler);

ngx_int_t ngx_http_mcp_fleet_task_register(ngx_http_mcp_call_t *call,
    ngx_http_mcp_task_t *t);
ngx_int_t ngx_http_mcp_fleet_task_named(ngx_http_mcp_ctx_t *ctx,
    ngx_shm_zone_t *zone, ngx_str_t *id);
size_t ngx_http_mcp_fleet_task_key(u_char *buf, u_char *id);
void ngx_http_mcp_fleet_task_walk(ngx_shm_zone_t *zone, ngx_pool_t *pool);


/* what the HTTP edge asks of mcp_fleet (ngx_http_mcp_fleet.c) */
ngx_int_t ngx_http_mcp_fleet_route(ngx_http_request_t *r,
    ngx_http_mcp_loc_conf_t *mlcf);
ngx_int_t ngx_http_mcp_fleet_ready(ngx_http_mcp_ctx_t *ctx, cJSON *id,
    ngx_int_t *rc);
ngx_int_t ngx_http_mcp_fleet_register(ngx_http_mcp_ctx_t *ctx);
void ngx_http_mcp_fleet_forget(ngx_http_request_t *r, ngx_str_t *sid);
ngx_uint_t ngx_http_mcp_fleet_forwarded(ngx_http_request_t *r);
ngx_uint_t ngx_http_mcp_fleet_owner_gone(ngx_http_request_t *r);
ngx_http_mcp_ctx_t *ngx_http_mcp_fleet_saved(ngx_http_request_t *r,
    ngx_uint_t *task);


#endif /* _NGX_HTTP_MCP_FLEET_H_INCLUDED_ */
