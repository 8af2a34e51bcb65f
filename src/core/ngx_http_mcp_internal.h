
/*
 * ngx_http_mcp_module: types and functions shared by the module's own
 * files.  Not part of the registration API (see ngx_http_mcp.h).
 */


#ifndef _NGX_HTTP_MCP_INTERNAL_H_INCLUDED_
#define _NGX_HTTP_MCP_INTERNAL_H_INCLUDED_


#include "ngx_http_mcp.h"
#include "ngx_http_mcp_call.h"
#include "ngx_http_mcp_auth.h"
#include "ngx_http_mcp_json.h"
#include "ngx_http_mcp_jsonrpc.h"
#include "ngx_http_mcp_uritemplate.h"
#include "ngx_http_mcp_schema.h"
#include "ngx_http_mcp_store.h"


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
    ngx_array_t                zones;       /* ngx_shm_zone_t * */
    ngx_shm_zone_t            *default_zone;
    ngx_http_mcp_set_t        *empty_set;
    void                      *metrics;     /* metrics.c's, or NULL: no
                                               mcp_metrics location */
    ngx_msec_t                 shutdown_timeout;  /* mcp_shutdown_timeout */
    ngx_str_t                  ipc_path;    /* mcp_ipc_path */
    ngx_int_t                  request_id;  /* $request_id's index */
    ngx_uint_t                 audit;       /* NGX_HTTP_MCP_AUDIT_* */
} ngx_http_mcp_main_conf_t;


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
    ngx_http_upstream_conf_t   upstream;    /* mcp_pass */
    ngx_http_upstream_conf_t   upstream_init;  /* the same, for initialize */
    ngx_str_t                  proxy_host;
    ngx_str_t                  proxy_uri;
    ngx_flag_t                 pass_authorization;
    ngx_flag_t                 ssl;         /* https:// upstream */
    ngx_flag_t                 ssl_verify;
    ngx_str_t                  ssl_trusted_certificate;
    ngx_str_t                  ssl_certificate;   /* the gateway's own, */
    ngx_str_t                  ssl_certificate_key;  /* for upstreams */
    ngx_array_t               *ssl_passwords;
    ngx_str_t                  ssl_host;
    size_t                     filter_buffer_size;  /* a reply held for
                                                       tool policy */
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
    void                      *health;      /* mcp_health: health.c's */
    ngx_http_mcp_aggregate_pt  aggregate;   /* mcp_backend's, or NULL */
    unsigned                   own_set:1;   /* set: this level's own
                                               (ngx_http_mcp_conf_set) */
    unsigned                   builtin:1;   /* mcp_builtin given here */
} ngx_http_mcp_loc_conf_t;


/*
 * The MCP headers of a request, found in one walk of its list: a
 * 2026-07-28 request is checked against most of them, each once and
 * each for a second of its name, and a walk a check cost more than the
 * checks.  twice: NGX_HTTP_MCP_HDR_* bits, the names sent more than once
 * (the field then holds the first).
 */
#define NGX_HTTP_MCP_HDR_VERSION   0x01
#define NGX_HTTP_MCP_HDR_SESSION   0x02
#define NGX_HTTP_MCP_HDR_METHOD    0x04
#define NGX_HTTP_MCP_HDR_NAME      0x08
#define NGX_HTTP_MCP_HDR_ORIGIN    0x10

typedef struct {
    ngx_table_elt_t           *version;     /* MCP-Protocol-Version */
    ngx_table_elt_t           *session;     /* Mcp-Session-Id */
    ngx_table_elt_t           *method;      /* Mcp-Method */
    ngx_table_elt_t           *name;        /* Mcp-Name */
    ngx_table_elt_t           *origin;      /* Origin: for CORS */
    ngx_uint_t                 twice;
    unsigned                   params:1;    /* some Mcp-Param-* */
} ngx_http_mcp_headers_t;


/* which of the arguments' variables the configuration uses */
#define NGX_HTTP_MCP_AUDIT_DIGEST      0x01
#define NGX_HTTP_MCP_AUDIT_ARGUMENTS   0x02


/* a stream whose connection this worker holds */
typedef struct {
    ngx_queue_t                queue;       /* the worker's streams */
    ngx_rbtree_node_t          node;        /* key: token */
    ngx_http_request_t        *request;
    ngx_http_mcp_loc_conf_t   *conf;
    u_char                     sid[NGX_HTTP_MCP_SESSION_ID_LEN];
    uint32_t                   id;
    uint32_t                   token;       /* ownership, see stream_sh */
    uint64_t                   sent;        /* last seq written */
    u_char                    *buf;         /* output, while written */
    size_t                     size;
    size_t                     len;         /* of buf, while pulling */
    ngx_buf_t                  out;
    ngx_chain_t                chain;
    ngx_event_t                keepalive;
    unsigned                   prime:1;     /* priming event due */
    unsigned                   fresh:1;     /* nothing written yet */
    unsigned                   busy:1;      /* output not yet written */
    unsigned                   ending:1;
    unsigned                   ended:1;
    unsigned                   quit:1;      /* the worker exits: it ends
                                               with the final event */
    unsigned                   heard:1;     /* a GET's: the get-stream
                                               handlers were told */
} ngx_http_mcp_stream_t;


/* per-request state of the content handler */
struct ngx_http_mcp_ctx_s {
    ngx_http_request_t        *request;
    ngx_http_mcp_loc_conf_t   *conf;
    cJSON                     *root;
    ngx_array_t                msgs;        /* ngx_http_mcp_msg_t */
    ngx_http_mcp_reqctx_t      rctx;
    ngx_http_mcp_headers_t     headers;     /* read when ctx is made */
    ngx_str_t                  new_session;  /* issued by initialize */
    ngx_uint_t                 pending;     /* calls not yet ended */
    ngx_int_t                  status;
    ngx_http_mcp_stream_t     *stream;      /* once the reply is SSE */
    ngx_str_t                  body;
    ngx_int_t                  parse;       /* what parsing the body gave */
    ngx_int_t                  refused;     /* the HTTP status, or 0 */
    ngx_str_t                  error_page;  /* replaces nginx's page */
    void                      *proxy;       /* mcp_pass: its own state */
    ngx_str_t                  var_method;  /* copies for $mcp_*: calls */
    ngx_str_t                  var_tool;    /* take their messages */
    ngx_str_t                  var_name;
    ngx_str_t                  var_id;
    ngx_str_t                  var_client;
    ngx_str_t                  var_tools;   /* of a batch: every tool */
    ngx_str_t                  var_digests;  /* of the arguments */
    ngx_str_t                  var_arguments;
    ngx_int_t                  var_code;    /* the last JSON-RPC error
                                               code sent: of the whole
                                               POST when no message has
                                               an outcome */
    const char                *parse_error;  /* why, or NULL */
    void                     (*detach)(ngx_http_mcp_ctx_t *ctx);
                                            /* its calls, when it goes */
    unsigned                   error_page_sent:1;
    unsigned                   batch:1;
    unsigned                   parsed:1;
    unsigned                   waiting:1;
    unsigned                   stateless:1;  /* 2026-07-28: no session */
    unsigned                   busy:1;      /* no room: 503 */
};


#define ngx_http_mcp_call_conf(call)                                          \
    ((ngx_http_mcp_loc_conf_t *) (call)->conf)


/* which tools a tools/list reply may show: the policy's and the caller's */
typedef ngx_uint_t (*ngx_http_mcp_tool_allowed_pt)(void *data,
    ngx_str_t *name);

typedef struct {
    ngx_http_mcp_tool_allowed_pt   allowed;
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


/*
 * A GET's stream opens (open 1, its connection r, the session, the
 * stream's id) or ends (open 0, the same r, once): the gateway's
 * backend streams live in between (ngx_http_mcp_aggregate_listen.c).
 */
typedef void (*ngx_http_mcp_get_stream_pt)(ngx_http_request_t *r,
    ngx_str_t *sid, uint32_t id, ngx_uint_t open);
/*
 * A client's DELETE of its session, r, just before the store forgets
 * it: the gateway's backend sessions end with it
 * (ngx_http_mcp_aggregate_end.c).
 */
typedef void (*ngx_http_mcp_delete_pt)(ngx_http_request_t *r,
    ngx_str_t *sid);


/* mcp_fleet at the HTTP edge (ngx_http_mcp_fleet.c) */
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
/* ---- http.c: the HTTP edge every entry point shares ---- */

ngx_http_mcp_ctx_t *ngx_http_mcp_ctx_create(ngx_http_request_t *r,
    ngx_http_mcp_loc_conf_t *mlcf, ngx_http_mcp_auth_t *auth);
ngx_int_t ngx_http_mcp_check_origin(ngx_http_request_t *r,
    ngx_http_mcp_loc_conf_t *mlcf);
u_char *ngx_http_mcp_origin_host(ngx_str_t *origin);
ngx_uint_t ngx_http_mcp_accepts(ngx_http_request_t *r, const char *type);
ngx_uint_t ngx_http_mcp_accepts_sse(ngx_http_request_t *r);
ngx_uint_t ngx_http_mcp_accepts_post(ngx_http_request_t *r);
ngx_int_t ngx_http_mcp_version_check(ngx_table_elt_t *h);
ngx_int_t ngx_http_mcp_session_preamble(ngx_http_request_t *r,
    ngx_http_mcp_loc_conf_t *mlcf, ngx_uint_t lookup, ngx_str_t *sid,
    ngx_http_mcp_reqctx_t *rctx, ngx_int_t *rc);
ngx_int_t ngx_http_mcp_session_new(ngx_http_mcp_ctx_t *ctx,
    ngx_http_mcp_session_init_t *init, ngx_log_t *log);
ngx_int_t ngx_http_mcp_session_mint(ngx_http_mcp_ctx_t *ctx,
    ngx_http_mcp_msg_t *msg);
ngx_int_t ngx_http_mcp_reply(ngx_http_mcp_ctx_t *ctx);
ngx_int_t ngx_http_mcp_send(ngx_http_request_t *r, ngx_uint_t status,
    ngx_http_mcp_ctx_t *ctx, u_char *body, size_t len);
ngx_int_t ngx_http_mcp_send_error(ngx_http_request_t *r, ngx_uint_t status,
    cJSON *id, ngx_int_t code, const char *message);
ngx_int_t ngx_http_mcp_send_error_data(ngx_http_request_t *r,
    ngx_uint_t status, cJSON *id, ngx_int_t code, const char *message,
    cJSON *data);
ngx_int_t ngx_http_mcp_session_carrier(ngx_http_mcp_ctx_t *ctx);
const char *ngx_http_mcp_status_error(ngx_uint_t status, ngx_int_t *code);
cJSON *ngx_http_mcp_error_reply(ngx_http_request_t *r, cJSON *id,
    ngx_int_t code, const char *message, ngx_str_t *method);
ngx_int_t ngx_http_mcp_request_id(ngx_http_request_t *r, ngx_uint_t made,
    ngx_str_t *id);

/* the level of an error's line: the module's failures at "error", the
   client's at "info", as nginx logs client errors */
#define ngx_http_mcp_error_level(code)                                       \
    (((code) == NGX_HTTP_MCP_INTERNAL_ERROR) ? NGX_LOG_ERR : NGX_LOG_INFO)

cJSON *ngx_http_mcp_error_reply_at(ngx_log_t *log, ngx_uint_t level,
    ngx_str_t *correlation, cJSON *id, ngx_int_t code, const char *message,
    ngx_str_t *method);
u_char *ngx_http_mcp_error_print(ngx_http_request_t *r, cJSON *id,
    ngx_int_t code, const char *message, size_t *len);


/* ---- headers.c: the request's headers, and a header of the reply ---- */

void ngx_http_mcp_headers_read(ngx_http_request_t *r,
    ngx_http_mcp_headers_t *hs);
ngx_int_t ngx_http_mcp_headers_name(ngx_pool_t *pool,
    ngx_http_mcp_headers_t *hs, ngx_str_t *said);
ngx_table_elt_t *ngx_http_mcp_header_in(ngx_http_request_t *r,
    const char *name, size_t len);
ngx_table_elt_t *ngx_http_mcp_header_in_after(ngx_http_request_t *r,
    ngx_table_elt_t *prev, const char *name, size_t len);
ngx_table_elt_t *ngx_http_mcp_header_prefixed(ngx_http_request_t *r,
    ngx_table_elt_t *prev, const char *prefix, size_t len);
ngx_int_t ngx_http_mcp_header_out(ngx_http_request_t *r, const char *name,
    ngx_str_t *value);


/* ---- stream.c: SSE out of the event log ---- */

ngx_int_t ngx_http_mcp_stream_start(ngx_http_mcp_ctx_t *ctx);
ngx_int_t ngx_http_mcp_stream_reply(ngx_http_mcp_ctx_t *ctx,
    ngx_http_mcp_msg_t *msg);
ngx_int_t ngx_http_mcp_stream_get(ngx_http_request_t *r,
    ngx_http_mcp_loc_conf_t *mlcf);
void ngx_http_mcp_stream_end_http(ngx_http_mcp_stream_t *st);
void ngx_http_mcp_streams_wake(void);
ngx_int_t ngx_http_mcp_stream_poke(uint32_t token);
void ngx_http_mcp_streams_quit(ngx_uint_t deadline);
ngx_int_t ngx_http_mcp_stream_on_get(ngx_http_mcp_get_stream_pt handler);
ngx_int_t ngx_http_mcp_session_on_delete(ngx_http_mcp_delete_pt handler);
ngx_int_t ngx_http_mcp_lists_changed(ngx_cycle_t *cycle);


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


/* ---- call.c: the life of one JSON-RPC request ---- */

ngx_http_mcp_call_t *ngx_http_mcp_call_create(ngx_log_t *log, void *conf,
    ngx_http_mcp_reqctx_t *rctx, ngx_http_mcp_msg_t *msg, cJSON *message,
    ngx_str_t *body);
void ngx_http_mcp_call_run(ngx_http_mcp_call_t *call,
    ngx_http_mcp_handler_pt handler);
void ngx_http_mcp_calls_wake(void);
void ngx_http_mcp_calls_exit(void);
void ngx_http_mcp_calls_quit(ngx_uint_t deadline);
ngx_int_t ngx_http_mcp_client_response(ngx_shm_zone_t *zone, ngx_str_t *sid,
    ngx_http_mcp_msg_t *msg, ngx_pool_t *pool, ngx_log_t *log);
ngx_int_t ngx_http_mcp_client_cancel(ngx_shm_zone_t *zone, ngx_str_t *sid,
    ngx_http_mcp_msg_t *msg, ngx_pool_t *pool, ngx_log_t *log);
ngx_int_t ngx_http_mcp_call_open_state(ngx_http_mcp_call_t *call);
ngx_uint_t ngx_http_mcp_client_can(ngx_http_mcp_reqctx_t *rctx,
    const char *method, cJSON *params, const char **cap, const char **mode);
ngx_int_t ngx_http_mcp_client_required(cJSON *caps, const char *cap,
    const char *mode);
ngx_int_t ngx_http_mcp_call_stream(ngx_http_mcp_call_t *call);
ngx_str_t *ngx_http_mcp_call_correlation(ngx_http_mcp_call_t *call,
    ngx_uint_t going);
void ngx_http_mcp_call_error_passed(ngx_http_mcp_call_t *call, ngx_int_t code,
    const char *message, cJSON *data);


/* ---- dispatch.c: the method table ---- */

ngx_int_t ngx_http_mcp_dispatch(ngx_http_mcp_call_t *call);
ngx_uint_t ngx_http_mcp_dispatch_known(ngx_str_t *method);

/* listen.c: subscriptions/listen, a method of the table */
ngx_int_t ngx_http_mcp_listen(ngx_http_mcp_call_t *call);


/* ---- the gateway: proxy.c, filter.c ---- */

char *ngx_http_mcp_pass(ngx_conf_t *cf, ngx_command_t *cmd, void *conf);
char *ngx_http_mcp_pass_ssl_password_file(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
void ngx_http_mcp_proxy_create_conf(ngx_http_mcp_loc_conf_t *conf);
char *ngx_http_mcp_proxy_merge_conf(ngx_conf_t *cf,
    ngx_http_mcp_loc_conf_t *prev, ngx_http_mcp_loc_conf_t *conf);
ngx_int_t ngx_http_mcp_proxy_post(ngx_http_mcp_ctx_t *ctx);
ngx_int_t ngx_http_mcp_proxy_other(ngx_http_request_t *r,
    ngx_http_mcp_loc_conf_t *mlcf);
ngx_uint_t ngx_http_mcp_proxy_replica_gone(ngx_http_mcp_ctx_t *ctx);
void ngx_http_mcp_proxy_quit(ngx_uint_t deadline);
ngx_int_t ngx_http_mcp_filter_init(ngx_conf_t *cf);


/* ---- cors.c: CORS and the headers every MCP reply carries ---- */

ngx_int_t ngx_http_mcp_cors_init(ngx_conf_t *cf);
ngx_int_t ngx_http_mcp_cors_preflight(ngx_http_request_t *r);
ngx_uint_t ngx_http_mcp_cors_is_preflight(ngx_http_request_t *r);
ngx_int_t ngx_http_mcp_cors_public(ngx_http_request_t *r,
    ngx_uint_t preflight);


/* ---- stateless.c: the HTTP edge of a 2026-07-28 request ---- */

ngx_uint_t ngx_http_mcp_stateless_request(ngx_http_mcp_headers_t *hs);
ngx_int_t ngx_http_mcp_stateless_check(ngx_http_mcp_ctx_t *ctx,
    ngx_int_t *rc);
ngx_uint_t ngx_http_mcp_stateless_status(cJSON *reply);


/* ---- health.c: mcp_health ---- */

char *ngx_http_mcp_health(ngx_conf_t *cf, ngx_command_t *cmd, void *conf);


/* ---- transport.c, variables.c: the entry points ---- */

ngx_int_t ngx_http_mcp_handler(ngx_http_request_t *r);
ngx_int_t ngx_http_mcp_rewrite_handler(ngx_http_request_t *r);
ngx_int_t ngx_http_mcp_add_variables(ngx_conf_t *cf);
ngx_int_t ngx_http_mcp_variables_capture(ngx_http_mcp_ctx_t *ctx);
void ngx_http_mcp_variables_used(ngx_conf_t *cf);
void ngx_http_mcp_variables_outcome(ngx_http_mcp_msg_t *msg, cJSON *reply);


#endif /* _NGX_HTTP_MCP_INTERNAL_H_INCLUDED_ */
