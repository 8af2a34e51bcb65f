
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


/* mcp_fleet's parameters (the http block's) */
typedef struct {
    ngx_str_t                  redis_host;  /* an IP, NUL-terminated */
    in_port_t                  redis_port;
    ngx_str_t                  node;        /* this node's name */
    ngx_str_t                  forward;     /* "@name" */
    ngx_str_t                  prefix;
    ngx_msec_t                 timeout;
    ngx_int_t                  owner_index;  /* $mcp_fleet_owner */
    unsigned                   enabled:1;
} ngx_http_mcp_fleet_conf_t;


/*
 * What mcp_fleet holds in a worker, set at its start (init_process)
 * when the fleet is on: one instance, ngx_http_mcp_fleet.c's, which
 * hands it to ngx_http_mcp_fleet_task.c then (that file is called by
 * the other, never calls it).
 */
typedef struct {
    /* mcp_fleet's: this node's name, the keys' prefix; NULL: no fleet */
    ngx_http_mcp_fleet_conf_t  *conf;
    /* the module's: the zones whose sessions the refresh walks */
    ngx_http_mcp_main_conf_t   *main;
    /* worker 0's: the node's session keys set again, every period */
    ngx_event_t                 refresh;
    /* a third of the shortest idle timeout of the zones, 1 s to 60 s */
    ngx_msec_t                  period;
    /* a session key's life: the longest idle timeout and two periods,
       so that a key outlives its session until the refresh comes */
    ngx_msec_t                  ttl;
} ngx_http_mcp_fleet_worker_t;


/* a request's wait for Redis: outlives the request if need be */
typedef struct {
    ngx_http_request_t        *request;     /* NULL once it has gone */
    ngx_http_mcp_ctx_t        *ctx;         /* a POST whose reply waits */
    ngx_pool_cleanup_t        *cln;
} ngx_http_mcp_fleet_op_t;


void ngx_http_mcp_fleet_task_setup(ngx_http_mcp_fleet_worker_t *fw);
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
