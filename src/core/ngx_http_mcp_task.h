
/*
 * ngx_http_mcp_module: tasks, a tools/call that runs on after its reply
 * and whose outcome the client fetches later (2025-11-25's experimental
 * tasks, 2026-07-28's io.modelcontextprotocol/tasks extension).  The
 * store keeps them (ngx_http_mcp_session_task.c); the call side is
 * ngx_http_mcp_task.c, the methods ngx_http_mcp_task_methods.c.
 */


#ifndef _NGX_HTTP_MCP_TASK_H_INCLUDED_
#define _NGX_HTTP_MCP_TASK_H_INCLUDED_


#include "ngx_http_mcp_internal.h"


#define NGX_HTTP_MCP_TASK_ID_LEN        32      /* 128 random bits, hex */
#define NGX_HTTP_MCP_TASK_OWNER_LEN     32      /* SHA-256 of the owner */

/* JSON-RPC's "request cancelled" (LSP's code, which MCP SDKs use) */
#define NGX_HTTP_MCP_REQUEST_CANCELLED  -32800

#define NGX_HTTP_MCP_TASK_WORKING         0
#define NGX_HTTP_MCP_TASK_INPUT_REQUIRED  1
#define NGX_HTTP_MCP_TASK_COMPLETED       2
#define NGX_HTTP_MCP_TASK_FAILED          3
#define NGX_HTTP_MCP_TASK_CANCELLED       4

#define ngx_http_mcp_task_terminal(status)                                    \
    ((status) >= NGX_HTTP_MCP_TASK_COMPLETED)

/* what a task keeps as JSON texts */
#define NGX_HTTP_MCP_TASK_REQUEST       0       /* the tools/call params */
#define NGX_HTTP_MCP_TASK_INPUTS        1       /* input requests due */
#define NGX_HTTP_MCP_TASK_ANSWERS       2       /* the answers so far */
#define NGX_HTTP_MCP_TASK_STATE         3       /* the sealed requestState */
#define NGX_HTTP_MCP_TASK_OUTCOME       4       /* result or error */
#define NGX_HTTP_MCP_TASK_PARKED        5       /* 2025: requests for the
                                                   client that no stream
                                                   took yet, one a line */
#define NGX_HTTP_MCP_TASK_BLOBS         6

#define NGX_HTTP_MCP_RELATED_TASK       "io.modelcontextprotocol/related-task"


/* a task as a worker sees it: a copy, or what to write */
typedef struct {
    u_char                     id[NGX_HTTP_MCP_TASK_ID_LEN];
    u_char                     owner[NGX_HTTP_MCP_TASK_OWNER_LEN];
    u_char                     quota[NGX_HTTP_MCP_TASK_OWNER_LEN];
                                            /* whose tasks_per_client it
                                               counts against */
    u_char                     sid[NGX_HTTP_MCP_SESSION_ID_LEN];
                                            /* 2025: its session's id */
    ngx_uint_t                 status;
    uint64_t                   created;     /* ms since the epoch */
    uint64_t                   updated;
    ngx_msec_t                 ttl;
    uint32_t                   version;
    ngx_pid_t                  pid;
    unsigned                   stateless:1;
    unsigned                   tool_error:1;  /* failed: the result says
                                                 isError (2025-11-25) */
    ngx_str_t                  blobs[NGX_HTTP_MCP_TASK_BLOBS];
    ngx_str_t                  notice;      /* to write: its session's
                                               notifications/tasks/status
                                               of the new status */
    ngx_str_t                  message;     /* to write: a request for
                                               its client (2025) */
} ngx_http_mcp_task_t;


/* a task's id and what is left of its ttl (mcp_fleet's Redis keys) */
typedef struct {
    u_char                     id[NGX_HTTP_MCP_TASK_ID_LEN];
    ngx_msec_t                 ttl;
} ngx_http_mcp_task_key_t;


/* ---- the store: ngx_http_mcp_session_task.c ---- */

ngx_int_t ngx_http_mcp_session_task_create(ngx_shm_zone_t *zone,
    ngx_http_mcp_task_t *t, ngx_log_t *log);
ngx_int_t ngx_http_mcp_session_task_get(ngx_shm_zone_t *zone, u_char *id,
    u_char *owner, ngx_pool_t *pool, ngx_http_mcp_task_t *t, ngx_log_t *log);
ngx_int_t ngx_http_mcp_session_task_set(ngx_shm_zone_t *zone,
    ngx_http_mcp_task_t *t, ngx_uint_t check, ngx_log_t *log);
ngx_int_t ngx_http_mcp_session_task_cancel(ngx_shm_zone_t *zone,
    ngx_http_mcp_task_t *t, ngx_log_t *log);
ngx_int_t ngx_http_mcp_session_task_live(ngx_shm_zone_t *zone, u_char *id);
ngx_int_t ngx_http_mcp_session_task_listen(ngx_shm_zone_t *zone, u_char *id,
    u_char *owner, uint32_t stream, ngx_log_t *log);
ngx_int_t ngx_http_mcp_session_task_list(ngx_shm_zone_t *zone,
    u_char *owner, u_char *after, ngx_uint_t n, ngx_pool_t *pool,
    ngx_array_t *tasks, ngx_uint_t *more, ngx_log_t *log);
ngx_int_t ngx_http_mcp_session_task_held(ngx_shm_zone_t *zone, u_char *id);
ngx_int_t ngx_http_mcp_session_task_ids(ngx_shm_zone_t *zone,
    ngx_pool_t *pool, ngx_array_t *ids);
const char *ngx_http_mcp_task_status_name(ngx_uint_t status);
uint64_t ngx_http_mcp_session_task_now(void);


/* ---- the call side: ngx_http_mcp_task.c ---- */

ngx_int_t ngx_http_mcp_task_call(ngx_http_mcp_call_t *call,
    ngx_http_mcp_handler_pt run);
ngx_int_t ngx_http_mcp_task_capabilities(ngx_http_mcp_set_t *set,
    cJSON *caps, ngx_uint_t version);
ngx_int_t ngx_http_mcp_task_listing(ngx_http_mcp_call_t *call,
    cJSON *result);
void ngx_http_mcp_tasks_wake(void);
void ngx_http_mcp_task_resume(ngx_http_mcp_call_t *from,
    ngx_http_mcp_task_t *t, cJSON *answers);
ngx_int_t ngx_http_mcp_task_missing(ngx_http_mcp_call_t *call);
ngx_int_t ngx_http_mcp_task_owner(ngx_http_mcp_call_t *call, u_char *owner);
ngx_int_t ngx_http_mcp_task_quota(ngx_http_mcp_call_t *call, u_char *quota);
cJSON *ngx_http_mcp_task_json(ngx_http_mcp_task_t *t, ngx_uint_t stateless,
    ngx_uint_t detailed);
cJSON *ngx_http_mcp_task_blob(ngx_http_mcp_task_t *t, ngx_uint_t n);
ngx_int_t ngx_http_mcp_task_notice(ngx_http_mcp_task_t *t,
    ngx_pool_t *pool);
ngx_int_t ngx_http_mcp_task_relate(cJSON *obj, u_char *id);
ngx_int_t ngx_http_mcp_task_text(ngx_pool_t *pool, cJSON *json,
    ngx_str_t *text);


/* ---- the methods: ngx_http_mcp_task_methods.c ---- */

ngx_int_t ngx_http_mcp_tasks_get(ngx_http_mcp_call_t *call);
ngx_int_t ngx_http_mcp_tasks_update(ngx_http_mcp_call_t *call);
ngx_int_t ngx_http_mcp_tasks_cancel(ngx_http_mcp_call_t *call);
ngx_int_t ngx_http_mcp_tasks_result(ngx_http_mcp_call_t *call);
ngx_int_t ngx_http_mcp_tasks_list(ngx_http_mcp_call_t *call);


#endif /* _NGX_HTTP_MCP_TASK_H_INCLUDED_ */
