
/*
 * The module's core (src/core): its configuration (made by
 * ngx_http_mcp_module.c), the life of one JSON-RPC request
 * (ngx_http_mcp_call.c, ngx_http_mcp_mrtr.c), the method table
 * (ngx_http_mcp_dispatch.c, ngx_http_mcp_listen.c), the registry of
 * sets (ngx_http_mcp_registry.c) and the tool policy
 * (ngx_http_mcp_policy.c).  What a call is: ngx_http_mcp_call.h; tasks,
 * metrics and the output check have headers of their own
 * (ngx_http_mcp_task.h, ngx_http_mcp_metrics.h, ngx_http_mcp_output.h).
 */


#ifndef _NGX_HTTP_MCP_CORE_H_INCLUDED_
#define _NGX_HTTP_MCP_CORE_H_INCLUDED_


#include "ngx_http_mcp.h"
#include "ngx_http_mcp_jsonrpc.h"
#include "ngx_http_mcp_store.h"
#include "ngx_http_mcp_hooks.h"
#include "ngx_http_mcp_call.h"


typedef struct {
    ngx_str_t                  name;
    ngx_http_mcp_provider_pt   init;
    ngx_http_mcp_set_t        *set;         /* built on first use */
} ngx_http_mcp_provider_t;


/* a zone and a set that locations serve together */
typedef struct {
    ngx_shm_zone_t            *zone;
    ngx_http_mcp_set_t        *set;
} ngx_http_mcp_binding_t;


#define NGX_HTTP_MCP_LIST_TOOLS      0
#define NGX_HTTP_MCP_LIST_RESOURCES  1
#define NGX_HTTP_MCP_LIST_PROMPTS    2

/* what a subscriptions/listen asked for */
#define NGX_HTTP_MCP_LISTEN_TOOLS      0x01
#define NGX_HTTP_MCP_LISTEN_PROMPTS    0x02
#define NGX_HTTP_MCP_LISTEN_RESOURCES  0x04


typedef struct {
    ngx_array_t                providers;   /* ngx_http_mcp_provider_t */
    ngx_array_t                bindings;    /* ngx_http_mcp_binding_t */
    ngx_http_mcp_store_conf_t  store;       /* the session zones */
    ngx_http_mcp_set_t        *empty_set;
    void                      *metrics;     /* metrics.c's, or NULL: no
                                               mcp_metrics location */
    ngx_array_t               *guard_sets;  /* ngx_str_t: the names of
                                               mcp_guardrail_set, counted
                                               by name in the metrics */
    ngx_array_t               *guardrails;  /* mcp_guardrail_set's
                                               ngx_http_mcp_guard_set_t
                                               (ngx_http_mcp_guard.h) */
    ngx_int_t                  guard_vars[2];  /* $mcp_guardrail(_action)'s
                                                  indexes */
    ngx_msec_t                 shutdown_timeout;  /* mcp_shutdown_timeout */
    ngx_str_t                  ipc_path;    /* mcp_ipc_path */
    ngx_int_t                  request_id;  /* $request_id's index */
    ngx_uint_t                 audit;       /* NGX_HTTP_MCP_AUDIT_* */
    ngx_http_handler_pt        handler;     /* the transport's content
                                               handler, for the parts
                                               below src/edge that make a
                                               location an MCP endpoint
                                               (mcp_pass) */
} ngx_http_mcp_main_conf_t;


/* which of the arguments' variables the configuration uses */
#define NGX_HTTP_MCP_AUDIT_DIGEST      0x01
#define NGX_HTTP_MCP_AUDIT_ARGUMENTS   0x02
#define NGX_HTTP_MCP_AUDIT_OUTCOME     0x04    /* mcp_pass reads replies */


/*
 * mcp_backend: a location that serves several MCP servers as one
 * (ngx_http_mcp_aggregate*.c) answers through this hook the methods it
 * routes, once dispatch has checked the caller's scopes and the tool
 * policy; next is the method's own handler, for initialize and
 * server/discover, which it runs once the backends have answered.
 */
typedef ngx_int_t (*ngx_http_mcp_aggregate_pt)(ngx_http_mcp_call_t *call,
    ngx_http_mcp_handler_pt next);


typedef struct {
    ngx_flag_t                 enable;
    ngx_array_t               *tools_allow;  /* ngx_http_mcp_pattern_t */
    ngx_array_t               *tools_deny;
    ngx_http_mcp_set_t        *set;
    ngx_shm_zone_t            *zone;
    ngx_array_t               *origins;     /* ngx_str_t; NULL: localhost */
    ngx_flag_t                 any_origin;
    size_t                     max_body;
    ngx_uint_t                 page_size;
    ngx_msec_t                 keepalive;   /* SSE comment interval */
    ngx_msec_t                 retry;       /* SSE retry: field */
    ngx_msec_t                 request_timeout;  /* server requests */
    u_char                    *state_key;   /* mcp_state_key's, or NULL:
                                               the zone's */
    ngx_msec_t                 state_timeout;  /* requestState lifetime */
    ngx_array_t               *session_keys;  /* mcp_session_key's
                                                 ngx_http_mcp_sesskey_t,
                                                 or NULL: the zone's
                                                 sessions */
    time_t                     session_lifetime;  /* a keyed id's */
    ngx_str_t                  scope;       /* "server_name location": what
                                               a requestState and a keyed
                                               session id are sealed for,
                                               the same on every node of
                                               one configuration */
    ngx_msec_t                 task_timeout;   /* a task's ttl */
    ngx_flag_t                 counting;    /* mcp_metrics_counting */
    ngx_flag_t                 trace_generate;  /* mcp_trace_generate */
    void                      *health;      /* mcp_health: health.c's */
    ngx_http_mcp_aggregate_pt  aggregate;   /* mcp_backend's, or NULL */
    ngx_array_t               *guards;      /* mcp_guardrail's
                                               ngx_http_mcp_guard_t, or
                                               NULL (every path reads it:
                                               mcp_pass copies it) */
    ngx_uint_t                 guard_where;  /* what any of them reads:
                                                NGX_HTTP_MCP_GUARD_* */
    unsigned                   own_set:1;   /* set: this level's own
                                               (ngx_http_mcp_conf_set) */
    unsigned                   builtin:1;   /* mcp_builtin given here */
    unsigned                   pass:1;      /* a gateway: mcp_pass here or
                                               above (src/proxy sets it;
                                               the rest is its loc conf's) */
    unsigned                   stdio:1;     /* mcp_stdio here (src/stdio
                                               sets it): its own content
                                               handler, the gateway's
                                               checks through its steps */
} ngx_http_mcp_loc_conf_t;


#define ngx_http_mcp_call_conf(call)                                          \
    ((ngx_http_mcp_loc_conf_t *) (call)->conf)


/* which tools a tools/list reply may show: the policy's and the caller's */
typedef ngx_uint_t (*ngx_http_mcp_tool_allowed_pt)(void *data,
    ngx_str_t *name);

/*
 * What else reads each message of a reply the policy filters: mcp_pass's
 * outcomes and checks (ngx_http_mcp_proxy_check.c), or NULL.  It may
 * change the message and set *changed; NGX_ERROR ends the reply.
 */
typedef ngx_int_t (*ngx_http_mcp_reply_message_pt)(void *data,
    cJSON *message, ngx_uint_t *changed);

typedef struct {
    ngx_http_mcp_tool_allowed_pt   allowed;
    ngx_http_mcp_reply_message_pt  message;
    void                          *data;
} ngx_http_mcp_tool_filter_t;


/*
 * What a call of a POST reports to the POST, while it is there (its
 * call->ctx is not NULL): the hooks the transport registers for it, so
 * that calls, dispatch and handlers never reach up into HTTP.
 */
struct ngx_http_mcp_call_edge_s {
    /* the response (NULL: none) goes into the POST's JSON reply: NGX_OK,
       or NGX_DECLINED when the reply is a stream and the call sends it */
    ngx_int_t                (*end)(ngx_http_mcp_call_t *call, cJSON *reply);
    /* the POST's reply becomes an SSE stream; sets call->stream */
    ngx_int_t                (*stream)(ngx_http_mcp_call_t *call);
    /* ends the HTTP response that carries the stream (SEP-1699) */
    void                     (*close_stream)(ngx_http_mcp_call_t *call);
    /* a refusal for a missing scope: 403 with WWW-Authenticate */
    void                     (*challenge)(ngx_http_mcp_call_t *call,
                                          ngx_str_t *scope);
    /* initialize: a session whose id the reply carries; NGX_OK,
       NGX_DECLINED (no room: 503, Retry-After), NGX_ERROR */
    ngx_int_t                (*session)(ngx_http_mcp_call_t *call,
                                        ngx_http_mcp_session_init_t *init);
};


/* ---- call.c: a call's errors, and any request's ---- */

ngx_int_t ngx_http_mcp_request_id(ngx_http_request_t *r, ngx_uint_t made,
    ngx_str_t *id);
/* the level of an error's line: the module's failures at "error", the
   client's at "info", as nginx logs client errors */
#define ngx_http_mcp_error_level(code)                                       \
    (((code) == NGX_HTTP_MCP_INTERNAL_ERROR) ? NGX_LOG_ERR : NGX_LOG_INFO)

cJSON *ngx_http_mcp_error_reply_at(ngx_log_t *log, ngx_uint_t level,
    ngx_str_t *correlation, cJSON *id, ngx_int_t code, const char *message,
    ngx_str_t *method);


/* ---- registry.c: sets, lookups and listings, data only ---- */

ngx_http_mcp_set_t *ngx_http_mcp_set_get(ngx_conf_t *cf, ngx_str_t *name);
ngx_int_t ngx_http_mcp_set_copy(ngx_conf_t *cf, ngx_http_mcp_set_t *dst,
    ngx_http_mcp_set_t *src);
ngx_int_t ngx_http_mcp_bind(ngx_conf_t *cf, ngx_shm_zone_t *zone,
    ngx_http_mcp_set_t *set);
uint32_t ngx_http_mcp_set_hash(ngx_http_mcp_set_t *set, ngx_uint_t list);
ngx_http_mcp_entry_t *ngx_http_mcp_find(ngx_array_t *entries,
    ngx_str_t *name);
ngx_int_t ngx_http_mcp_find_template(ngx_pool_t *pool,
    ngx_array_t *templates, ngx_str_t *uri, ngx_http_mcp_entry_t **entry,
    ngx_array_t **vars);
cJSON *ngx_http_mcp_list_page(ngx_pool_t *pool, ngx_array_t *entries,
    const char *key, cJSON *cursor, ngx_uint_t page_size,
    ngx_http_mcp_tool_filter_t *filter, ngx_int_t *rc);


/* ---- policy.c: mcp_tools_allow, mcp_tools_deny ---- */

char *ngx_http_mcp_tools_policy(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
ngx_uint_t ngx_http_mcp_policy_on(ngx_http_mcp_loc_conf_t *mlcf);
ngx_uint_t ngx_http_mcp_tool_allowed(ngx_http_mcp_loc_conf_t *mlcf,
    ngx_str_t *name);
ngx_int_t ngx_http_mcp_policy_filter_reply(ngx_pool_t *pool,
    ngx_http_mcp_tool_filter_t *tf, ngx_str_t *in, ngx_str_t *out,
    const char **error);
/* a parsed message (or batch) without them, then tf->message on each */
ngx_int_t ngx_http_mcp_policy_filter_tree(cJSON *json,
    ngx_http_mcp_tool_filter_t *tf, ngx_uint_t *changed);
/* one SSE event without the denied tools: mcp_pass's streams */
ngx_int_t ngx_http_mcp_policy_filter_event(ngx_pool_t *pool,
    ngx_http_mcp_tool_filter_t *tf, u_char *start, u_char *end,
    ngx_str_t *out, size_t *size, const char **error);


/* ---- call.c: the life of one JSON-RPC request ---- */

/* the _meta keys of who answers, and of a listen stream's messages */
#define NGX_HTTP_MCP_SERVER_INFO_META   "io.modelcontextprotocol/serverInfo"
#define NGX_HTTP_MCP_SUBSCRIPTION_META                                       \
    "io.modelcontextprotocol/subscriptionId"

ngx_http_mcp_call_t *ngx_http_mcp_call_create(ngx_log_t *log, void *conf,
    ngx_http_mcp_reqctx_t *rctx, ngx_http_mcp_msg_t *msg, cJSON *message);
void ngx_http_mcp_call_run(ngx_http_mcp_call_t *call,
    ngx_http_mcp_handler_pt handler);
void ngx_http_mcp_calls_init(void);
ngx_uint_t ngx_http_mcp_calls_live(void);
void ngx_http_mcp_calls_wake(void);
void ngx_http_mcp_calls_exit(void);
void ngx_http_mcp_calls_quit(ngx_uint_t deadline);
ngx_int_t ngx_http_mcp_server_meta(cJSON *result);
ngx_int_t ngx_http_mcp_server_info(cJSON *parent, const char *key);
ngx_int_t ngx_http_mcp_client_response(ngx_shm_zone_t *zone, ngx_str_t *sid,
    ngx_http_mcp_msg_t *msg, ngx_pool_t *pool, ngx_log_t *log);
ngx_int_t ngx_http_mcp_client_cancel(ngx_shm_zone_t *zone, ngx_str_t *sid,
    ngx_http_mcp_msg_t *msg, ngx_pool_t *pool, ngx_log_t *log);
ngx_int_t ngx_http_mcp_call_open_state(ngx_http_mcp_call_t *call);
ngx_int_t ngx_http_mcp_call_state_key(ngx_http_mcp_call_t *call, u_char *key);
ngx_uint_t ngx_http_mcp_client_can(ngx_http_mcp_reqctx_t *rctx,
    const char *method, cJSON *params, const char **cap, const char **mode);
ngx_int_t ngx_http_mcp_client_required(cJSON *caps, const char *cap,
    const char *mode);
ngx_int_t ngx_http_mcp_call_stream(ngx_http_mcp_call_t *call);
void ngx_http_mcp_call_set_stream(ngx_http_mcp_call_t *call,
    uint32_t stream);
ngx_str_t *ngx_http_mcp_call_correlation(ngx_http_mcp_call_t *call,
    ngx_uint_t going);
void ngx_http_mcp_call_error_passed(ngx_http_mcp_call_t *call, ngx_int_t code,
    const char *message, cJSON *data);


/* ---- dispatch.c: the method table ---- */

ngx_int_t ngx_http_mcp_dispatch(ngx_http_mcp_call_t *call);
ngx_uint_t ngx_http_mcp_dispatch_known(ngx_str_t *method);
ngx_int_t ngx_http_mcp_dispatch_stateless(ngx_str_t *method,
    ngx_uint_t *cacheable);
ngx_int_t ngx_http_mcp_result_cache_hints(cJSON *result,
    ngx_uint_t private);

/* listen.c: subscriptions/listen, a method of the table */
ngx_int_t ngx_http_mcp_listen(ngx_http_mcp_call_t *call);


#endif /* _NGX_HTTP_MCP_CORE_H_INCLUDED_ */
