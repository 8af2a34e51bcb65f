
/*
 * The hook table (ngx_http_mcp_hooks.c): what a part asks of the parts
 * above it, which it may not name (src/ranks).  One table, each entry
 * set by the part that answers, at postconfiguration; it sits in the
 * store, the lowest part that asks, so that every part that asks sees
 * it without reaching up.
 */


#ifndef _NGX_HTTP_MCP_HOOKS_H_INCLUDED_
#define _NGX_HTTP_MCP_HOOKS_H_INCLUDED_


#include "ngx_http_mcp_store.h"


typedef struct {
    /*
     * ---- asked by src/store (ipc.c), of what this worker holds; set by
     * ngx_http_mcp_module.c's postconfiguration, for these parts are
     * its own ----
     */

    /* the worker was woken (or polls): what the zone holds for it is
       taken, in this order: src/edge (stream.c), its streams write
       their events; src/core (call.c), calls take answers and
       cancellations; src/core (task.c), tasks cancelled elsewhere stop */
    void                     (*streams_wake)(void);
    void                     (*calls_wake)(void);
    void                     (*tasks_wake)(void);
    /* src/stdio: stdio sessions, what other workers queued for the
       children this one owns, and the answers for the streams it
       holds of sessions that another owns; after the three above */
    void                     (*stdio_wake)(void);
    /* src/edge (stream.c): the stream with this token writes its events
       alone; NGX_DECLINED: not here, the worker is woken instead */
    ngx_int_t                (*stream_poke)(uint32_t token);
    /* the graceful exit, deadline 0 as it starts, 1 when
       mcp_shutdown_timeout has passed; in this order, for a call's
       response ends its stream: src/core (call.c), src/edge (stream.c),
       src/proxy (mcp_pass's streams) */
    void                     (*calls_quit)(ngx_uint_t deadline);
    void                     (*streams_quit)(ngx_uint_t deadline);
    void                     (*proxy_quit)(ngx_uint_t deadline);
    /* how many calls the worker holds (src/core, call.c), and whether
       it holds streams (src/edge, stream.c, 0 or 1): its exit waits
       until none is left; asked at exit only */
    ngx_uint_t               (*calls_live)(void);
    ngx_uint_t               (*streams_live)(void);

    /* ---- asked by src/core; set by src/auth's, src/fleet's ---- */

    /* src/auth: whether the caller may use a capability ("tools",
       "resources", "prompts") and the named tool: NGX_OK, or
       NGX_DECLINED with the scope that would permit it */
    ngx_int_t                (*permits)(ngx_http_mcp_auth_t *auth,
                                        const char *capability,
                                        ngx_str_t *tool,
                                        ngx_str_t *missing_scope);
    /* src/auth: the location's input limits on a call's arguments */
    ngx_int_t                (*check_input)(void **loc_conf,
                                            ngx_pool_t *pool,
                                            cJSON *arguments,
                                            u_char **error);
    /* src/auth: mcp_schema_format, 1 when format asserts */
    ngx_uint_t               (*format_assert)(void **loc_conf);
    /* src/fleet: a stateless call's new task, told to the fleet */
    ngx_int_t                (*task_created)(ngx_http_mcp_call_t *call,
                                             ngx_http_mcp_task_t *t);

    /* ---- asked by src/edge; set by src/aggregate's ---- */

    /* src/aggregate: a GET's stream opens (open 1, its connection r,
       the session, the stream's id) or ends (open 0, the same r, once):
       the gateway's backend streams live in between */
    void                     (*get_stream)(ngx_http_request_t *r,
                                           ngx_str_t *sid, uint32_t id,
                                           ngx_uint_t open);
    /* src/aggregate: a client's DELETE of its session, r, just before
       the store forgets it: the gateway's backend sessions end with it */
    void                     (*session_deleted)(ngx_http_request_t *r,
                                                ngx_str_t *sid);
} ngx_http_mcp_hooks_t;


extern ngx_http_mcp_hooks_t  ngx_http_mcp_hooks;


#endif /* _NGX_HTTP_MCP_HOOKS_H_INCLUDED_ */
