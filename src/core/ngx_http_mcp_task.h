
/*
 * ngx_http_mcp_module: tasks, a tools/call that runs on after its reply
 * and whose outcome the client fetches later (2025-11-25's experimental
 * tasks, 2026-07-28's io.modelcontextprotocol/tasks extension).  The
 * store keeps them (ngx_http_mcp_session_task.c, its part in
 * ngx_http_mcp_store.h); the call side is ngx_http_mcp_task.c, the
 * owner ngx_http_mcp_task_owner.c, the methods
 * ngx_http_mcp_task_methods.c.
 */


#ifndef _NGX_HTTP_MCP_TASK_H_INCLUDED_
#define _NGX_HTTP_MCP_TASK_H_INCLUDED_


#include "ngx_http_mcp_core.h"
#include "ngx_http_mcp_store.h"


/* JSON-RPC's "request cancelled" (LSP's code, which MCP SDKs use) */
#define NGX_HTTP_MCP_REQUEST_CANCELLED  -32800
#define NGX_HTTP_MCP_RELATED_TASK       "io.modelcontextprotocol/related-task"


/* ---- the call side: ngx_http_mcp_task.c ---- */

ngx_int_t ngx_http_mcp_task_call(ngx_http_mcp_call_t *call,
    ngx_http_mcp_handler_pt run);
ngx_int_t ngx_http_mcp_task_capabilities(ngx_http_mcp_set_t *set,
    cJSON *caps, ngx_uint_t version);
ngx_int_t ngx_http_mcp_task_listing(ngx_http_mcp_call_t *call,
    cJSON *result);
void ngx_http_mcp_tasks_init(void);
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
    ngx_pool_t *pool, ngx_http_mcp_trace_t *trace);
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
