
/*
 * ngx_http_mcp_module: types and functions shared by the module's own
 * files.  Not part of the registration API (see ngx_http_mcp.h).
 */


#ifndef _NGX_HTTP_MCP_INTERNAL_H_INCLUDED_
#define _NGX_HTTP_MCP_INTERNAL_H_INCLUDED_


#include "ngx_http_mcp.h"
#include "ngx_http_mcp_auth.h"
#include "ngx_http_mcp_json.h"


#define NGX_HTTP_MCP_SUBSCRIPTION_URI_LEN  512


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


typedef struct {
    ngx_array_t                providers;   /* ngx_http_mcp_provider_t */
    ngx_array_t                bindings;    /* ngx_http_mcp_binding_t */
    ngx_array_t                zones;       /* ngx_shm_zone_t * */
    ngx_shm_zone_t            *default_zone;
    ngx_http_mcp_set_t        *empty_set;
} ngx_http_mcp_main_conf_t;


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
} ngx_http_mcp_loc_conf_t;


/*
 * Streams.  Every message a session sends on a stream (a POST's SSE
 * reply or a standalone GET) goes into the session's event log in the
 * shm zone first; the worker whose connection carries the stream (its
 * owner) writes it from there.  So any worker can send on any stream,
 * and Last-Event-ID replays from the log.
 */

typedef struct {
    ngx_queue_t                queue;
    uint64_t                   seq;         /* per session, from 1 */
    uint32_t                   stream;
    uint32_t                   len;
    unsigned                   response:1;  /* ends a call of a POST */
    u_char                     data[1];     /* one JSON-RPC message */
} ngx_http_mcp_event_t;

typedef struct {
    ngx_queue_t                queue;
    uint32_t                   id;          /* per session, from 1 */
    uint32_t                   pending;     /* responses still due */
    ngx_pid_t                  owner;       /* writing worker, 0: none */
    uint32_t                   token;       /* which of its connections */
    ngx_msec_t                 detached;    /* when it lost its owner */
    unsigned                   standalone:1;  /* a GET stream */
} ngx_http_mcp_stream_sh_t;

/* an answer a worker waits for, or a call a client may cancel */
typedef struct {
    ngx_queue_t                queue;
    ngx_pid_t                  owner;
    uint64_t                   request;     /* server request id, or 0 */
    u_char                    *answer;      /* the client's response */
    size_t                     answer_len;
    unsigned                   answered:1;
    unsigned                   cancelled:1;
    size_t                     id_len;      /* a call: its JSON-RPC id */
    u_char                     id[1];
} ngx_http_mcp_wait_t;


/* where a gateway session lives: its replica and that replica's id */
typedef struct {
    struct sockaddr           *sockaddr;
    socklen_t                  socklen;
    ngx_str_t                  name;
    ngx_str_t                  sid;
} ngx_http_mcp_target_t;

typedef struct {
    socklen_t                  socklen;
    size_t                     name_len;
    size_t                     sid_len;
    u_char                     data[1];     /* sockaddr, name, sid */
} ngx_http_mcp_target_sh_t;


/* a client's sessions, for "mcp_session_zone ... per_client=" */
typedef struct {
    ngx_rbtree_node_t          node;        /* key: the digest's start */
    ngx_uint_t                 sessions;
    u_char                     digest[32];  /* SHA-256 of the key */
} ngx_http_mcp_client_t;


/* a session as the shm zone keeps it */
typedef struct ngx_http_mcp_subscription_s  ngx_http_mcp_subscription_t;

struct ngx_http_mcp_subscription_s {
    ngx_http_mcp_subscription_t  *next;
    size_t                        len;
    u_char                        uri[1];
};

typedef struct {
    u_char                     color;
    u_char                     version;
    u_char                     log_level;
    u_char                     client_name_len;
    unsigned                   initialized:1;
    unsigned                   sampling:1;
    unsigned                   elicitation:1;
    unsigned                   roots:1;
    unsigned                   bound:1;     /* to an authenticated caller */
    ngx_uint_t                 streams;     /* owned streams: not idle */
    ngx_queue_t                queue;
    ngx_msec_t                 last;
    ngx_http_mcp_subscription_t  *subscriptions;
    ngx_uint_t                 nsubscriptions;
    ngx_http_mcp_client_t     *client;      /* per_client=, or NULL */
    ngx_http_mcp_target_sh_t  *target;      /* mcp_pass sessions */
    ngx_queue_t                events;      /* ngx_http_mcp_event_t */
    size_t                     events_size;
    ngx_queue_t                sstreams;    /* ngx_http_mcp_stream_sh_t */
    ngx_queue_t                waits;       /* ngx_http_mcp_wait_t */
    uint64_t                   next_seq;
    uint64_t                   next_request;
    uint32_t                   next_stream;
    u_char                     id[NGX_HTTP_MCP_SESSION_ID_LEN];
    u_char                     client_name[NGX_HTTP_MCP_CLIENT_NAME_LEN];
    u_char                     binding[NGX_HTTP_MCP_AUTH_BINDING_LEN];
} ngx_http_mcp_session_node_t;


typedef struct {
    ngx_rbtree_t               rbtree;
    ngx_rbtree_node_t          sentinel;
    ngx_queue_t                queue;       /* LRU, most recent first */
    ngx_uint_t                 count;
    uint32_t                   lists[3];    /* what the lists were */
    ngx_uint_t                 lists_known;
    ngx_rbtree_t               clients;     /* ngx_http_mcp_client_t */
    ngx_rbtree_node_t          clients_sentinel;
} ngx_http_mcp_shctx_t;


typedef struct {
    ngx_http_mcp_shctx_t      *sh;
    ngx_slab_pool_t           *shpool;
    ngx_msec_t                 timeout;
    size_t                     log_size;    /* a session's event log */
    ngx_uint_t                 max_subscriptions;  /* a session's */
    size_t                     max_uri;     /* a subscription's URI */
    ngx_http_complex_value_t  *per_client;  /* whose sessions, or NULL */
    ngx_uint_t                 per_client_max;
    ngx_str_t                  name;
} ngx_http_mcp_zone_t;


/* what initialize learns from the client */
typedef struct {
    ngx_uint_t                 version;
    ngx_str_t                  client_name;
    u_char                    *binding;     /* issuer + subject hash, or
                                               NULL */
    ngx_str_t                  client_key;  /* per_client's value */
    unsigned                   sampling:1;
    unsigned                   elicitation:1;
    unsigned                   roots:1;
} ngx_http_mcp_session_init_t;


/* one JSON-RPC message of a POST body */
typedef enum {
    NGX_HTTP_MCP_MSG_INVALID = 0,
    NGX_HTTP_MCP_MSG_REQUEST,
    NGX_HTTP_MCP_MSG_NOTIFICATION,
    NGX_HTTP_MCP_MSG_RESPONSE
} ngx_http_mcp_msg_type_e;

typedef struct {
    ngx_http_mcp_msg_type_e    type;
    cJSON                     *json;        /* the message object */
    cJSON                     *id;          /* a copy to echo; NULL: null */
    ngx_str_t                  method;
    cJSON                     *params;
    const char                *error;       /* why it is invalid */
    ngx_http_mcp_call_t       *call;        /* a request's call */
    cJSON                     *reply;       /* the error for an invalid
                                               message */
} ngx_http_mcp_msg_t;


/* a stream whose connection this worker holds */
typedef struct {
    ngx_queue_t                queue;       /* the worker's streams */
    ngx_http_request_t        *request;
    ngx_http_mcp_loc_conf_t   *conf;
    u_char                     sid[NGX_HTTP_MCP_SESSION_ID_LEN];
    uint32_t                   id;
    uint32_t                   token;       /* ownership, see stream_sh */
    uint64_t                   sent;        /* last seq written */
    u_char                    *buf;         /* output, reused */
    size_t                     size;
    ngx_buf_t                  out;
    ngx_chain_t                chain;
    ngx_event_t                keepalive;
    unsigned                   prime:1;     /* priming event due */
    unsigned                   fresh:1;     /* nothing written yet */
    unsigned                   busy:1;      /* output not yet written */
    unsigned                   ending:1;
    unsigned                   ended:1;
} ngx_http_mcp_stream_t;


/* per-request state of the content handler */
struct ngx_http_mcp_ctx_s {
    ngx_http_request_t        *request;
    ngx_http_mcp_loc_conf_t   *conf;
    cJSON                     *root;
    ngx_array_t                msgs;        /* ngx_http_mcp_msg_t */
    ngx_http_mcp_reqctx_t      rctx;
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
    ngx_str_t                  var_id;
    ngx_str_t                  var_client;
    const char                *parse_error;  /* why, or NULL */
    unsigned                   error_page_sent:1;
    unsigned                   batch:1;
    unsigned                   parsed:1;
    unsigned                   waiting:1;
};


/* what one worker process holds */
typedef struct {
    ngx_queue_t                streams;     /* ngx_http_mcp_stream_t */
    ngx_queue_t                calls;       /* live ngx_http_mcp_call_t */
    ngx_event_t                wake;        /* posted: look at shm */
    ngx_event_t                watch;       /* notices shutdown */
    ngx_connection_t          *ipc;
    ngx_log_t                 *log;
    uint32_t                   tokens;      /* stream ownership tokens */
} ngx_http_mcp_worker_t;


extern ngx_http_mcp_worker_t  ngx_http_mcp_worker;


#define ngx_http_mcp_call_conf(call)                                          \
    ((ngx_http_mcp_loc_conf_t *) (call)->conf)


/* which tools a tools/list reply may show: the policy's and the caller's */
typedef ngx_uint_t (*ngx_http_mcp_tool_allowed_pt)(void *data,
    ngx_str_t *name);

typedef struct {
    ngx_http_mcp_tool_allowed_pt   allowed;
    void                          *data;
} ngx_http_mcp_tool_filter_t;


/* proxy (mcp_pass) and tool policy */
char *ngx_http_mcp_pass(ngx_conf_t *cf, ngx_command_t *cmd, void *conf);
void ngx_http_mcp_proxy_create_conf(ngx_http_mcp_loc_conf_t *conf);
char *ngx_http_mcp_proxy_merge_conf(ngx_conf_t *cf,
    ngx_http_mcp_loc_conf_t *prev, ngx_http_mcp_loc_conf_t *conf);
ngx_int_t ngx_http_mcp_proxy_post(ngx_http_mcp_ctx_t *ctx);
ngx_int_t ngx_http_mcp_proxy_other(ngx_http_request_t *r,
    ngx_http_mcp_loc_conf_t *mlcf);
ngx_uint_t ngx_http_mcp_proxy_replica_gone(ngx_http_mcp_ctx_t *ctx);
char *ngx_http_mcp_tools_policy(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
ngx_uint_t ngx_http_mcp_policy_on(ngx_http_mcp_loc_conf_t *mlcf);
ngx_uint_t ngx_http_mcp_tool_allowed(ngx_http_mcp_loc_conf_t *mlcf,
    ngx_str_t *name);
ngx_int_t ngx_http_mcp_policy_filter_reply(ngx_pool_t *pool,
    ngx_http_mcp_tool_filter_t *tf, ngx_str_t *in, ngx_str_t *out);


/* variables, filter */
ngx_int_t ngx_http_mcp_add_variables(ngx_conf_t *cf);
ngx_int_t ngx_http_mcp_variables_capture(ngx_http_mcp_ctx_t *ctx);
ngx_int_t ngx_http_mcp_filter_init(ngx_conf_t *cf);


/* jsonrpc */
ngx_int_t ngx_http_mcp_jsonrpc_parse(ngx_pool_t *pool, u_char *body,
    size_t len, cJSON **root, ngx_array_t *msgs, ngx_uint_t *batch,
    const char **error);
cJSON *ngx_http_mcp_jsonrpc_result(cJSON *id, cJSON *result);
cJSON *ngx_http_mcp_jsonrpc_error(cJSON *id, ngx_int_t code,
    const char *message, const char *correlation);
u_char *ngx_http_mcp_jsonrpc_print(ngx_pool_t *pool, cJSON *json,
    size_t *len);
ngx_int_t ngx_http_mcp_correlation_id(u_char *buf, size_t len);
u_char *ngx_http_mcp_json_raw_number(ngx_str_t *body, const char *key,
    double value, size_t *len);

/* session */
char *ngx_http_mcp_session_zone(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
ngx_shm_zone_t *ngx_http_mcp_session_default_zone(ngx_conf_t *cf);
ngx_int_t ngx_http_mcp_session_create(ngx_shm_zone_t *zone, ngx_log_t *log,
    ngx_http_mcp_session_init_t *init, u_char *id);
ngx_int_t ngx_http_mcp_session_lookup(ngx_shm_zone_t *zone, ngx_str_t *id,
    ngx_http_mcp_reqctx_t *rctx);
ngx_int_t ngx_http_mcp_session_mint(ngx_http_mcp_ctx_t *ctx,
    ngx_http_mcp_msg_t *msg);
ngx_int_t ngx_http_mcp_session_target(ngx_shm_zone_t *zone, ngx_str_t *id,
    ngx_pool_t *pool, ngx_http_mcp_target_t *target,
    ngx_http_mcp_reqctx_t *rctx);
ngx_int_t ngx_http_mcp_session_target_set(ngx_shm_zone_t *zone,
    ngx_str_t *id, ngx_http_mcp_target_t *target);
ngx_int_t ngx_http_mcp_session_init_params(cJSON *params,
    ngx_http_mcp_session_init_t *init);
ngx_int_t ngx_http_mcp_session_new(ngx_http_mcp_ctx_t *ctx,
    ngx_http_mcp_session_init_t *init, ngx_log_t *log);
ngx_int_t ngx_http_mcp_session_peek(ngx_shm_zone_t *zone, ngx_str_t *id,
    ngx_http_mcp_reqctx_t *rctx);
ngx_int_t ngx_http_mcp_session_delete(ngx_shm_zone_t *zone, ngx_str_t *id,
    ngx_log_t *log);
ngx_int_t ngx_http_mcp_session_set_initialized(ngx_shm_zone_t *zone,
    ngx_str_t *id);
ngx_int_t ngx_http_mcp_session_set_log_level(ngx_shm_zone_t *zone,
    ngx_str_t *id, ngx_uint_t level);
ngx_int_t ngx_http_mcp_session_subscribe(ngx_shm_zone_t *zone,
    ngx_str_t *id, ngx_str_t *uri, ngx_uint_t subscribe);
ngx_http_mcp_session_node_t *ngx_http_mcp_session_find_locked(
    ngx_http_mcp_zone_t *ctx, ngx_str_t *id);
ngx_http_mcp_stream_sh_t *ngx_http_mcp_session_stream(
    ngx_http_mcp_session_node_t *s, uint32_t id);
ngx_http_mcp_stream_sh_t *ngx_http_mcp_session_stream_add(
    ngx_http_mcp_zone_t *ctx, ngx_http_mcp_session_node_t *s,
    ngx_uint_t standalone, uint32_t pending);
void ngx_http_mcp_session_stream_free(ngx_http_mcp_zone_t *ctx,
    ngx_http_mcp_session_node_t *s, ngx_http_mcp_stream_sh_t *st);
void ngx_http_mcp_session_stream_owner(ngx_http_mcp_session_node_t *s,
    ngx_http_mcp_stream_sh_t *st, ngx_pid_t owner);
ngx_http_mcp_event_t *ngx_http_mcp_session_event_add(
    ngx_http_mcp_zone_t *ctx, ngx_http_mcp_session_node_t *s, size_t len,
    ngx_log_t *log);
ngx_http_mcp_wait_t *ngx_http_mcp_session_wait_add(ngx_http_mcp_zone_t *ctx,
    ngx_http_mcp_session_node_t *s, uint64_t request, u_char *id,
    size_t id_len);
ngx_http_mcp_wait_t *ngx_http_mcp_session_wait_find(
    ngx_http_mcp_session_node_t *s, ngx_pid_t owner, uint64_t request,
    u_char *id, size_t id_len);
void ngx_http_mcp_session_wait_free(ngx_http_mcp_zone_t *ctx,
    ngx_http_mcp_wait_t *w);
ngx_uint_t ngx_http_mcp_session_updated(ngx_shm_zone_t *zone,
    ngx_str_t *uri, u_char *data, size_t len, ngx_array_t *owners,
    ngx_log_t *log);
ngx_int_t ngx_http_mcp_lists_changed(ngx_cycle_t *cycle);
ngx_int_t ngx_http_mcp_bind(ngx_conf_t *cf, ngx_shm_zone_t *zone,
    ngx_http_mcp_set_t *set);
uint32_t ngx_http_mcp_set_hash(ngx_http_mcp_set_t *set, ngx_uint_t list);
u_char *ngx_http_mcp_session_log_id(u_char *id, size_t len);
ngx_int_t ngx_http_mcp_session_client_key(ngx_shm_zone_t *zone,
    ngx_http_request_t *r, ngx_str_t *key);

/* transport */
ngx_int_t ngx_http_mcp_handler(ngx_http_request_t *r);
ngx_int_t ngx_http_mcp_rewrite_handler(ngx_http_request_t *r);
u_char *ngx_http_mcp_origin_host(ngx_str_t *origin);
ngx_uint_t ngx_http_mcp_accepts_sse(ngx_http_request_t *r);
ngx_int_t ngx_http_mcp_reply(ngx_http_mcp_ctx_t *ctx);
ngx_int_t ngx_http_mcp_send_error(ngx_http_request_t *r, ngx_uint_t status,
    cJSON *id, ngx_int_t code, const char *message);
ngx_table_elt_t *ngx_http_mcp_header_in(ngx_http_request_t *r,
    const char *name, size_t len);
ngx_int_t ngx_http_mcp_header_out(ngx_http_request_t *r, const char *name,
    ngx_str_t *value);
cJSON *ngx_http_mcp_error_reply(ngx_log_t *log, cJSON *id, ngx_int_t code,
    const char *message, ngx_str_t *method);
u_char *ngx_http_mcp_error_print(ngx_http_request_t *r, cJSON *id,
    ngx_int_t code, const char *message, size_t *len);

/* call: the life of one JSON-RPC request */
ngx_int_t ngx_http_mcp_call_start(ngx_http_mcp_ctx_t *ctx,
    ngx_http_mcp_msg_t *msg, ngx_uint_t index);
void ngx_http_mcp_call_detach(ngx_http_mcp_ctx_t *ctx);
void ngx_http_mcp_calls_wake(void);
void ngx_http_mcp_calls_exit(void);
ngx_int_t ngx_http_mcp_client_response(ngx_http_mcp_ctx_t *ctx,
    ngx_http_mcp_msg_t *msg);
ngx_int_t ngx_http_mcp_client_cancel(ngx_http_mcp_ctx_t *ctx,
    ngx_http_mcp_msg_t *msg);

/* stream: SSE out of the event log */
ngx_int_t ngx_http_mcp_stream_start(ngx_http_mcp_ctx_t *ctx);
ngx_int_t ngx_http_mcp_stream_reply(ngx_http_mcp_ctx_t *ctx,
    ngx_http_mcp_msg_t *msg);
ngx_int_t ngx_http_mcp_stream_get(ngx_http_request_t *r,
    ngx_http_mcp_loc_conf_t *mlcf);
ngx_int_t ngx_http_mcp_stream_send(ngx_shm_zone_t *zone, ngx_str_t *sid,
    uint32_t stream, u_char *data, size_t len, ngx_uint_t response,
    ngx_log_t *log);
ngx_int_t ngx_http_mcp_stream_expect(ngx_shm_zone_t *zone, ngx_str_t *sid,
    uint32_t stream);
void ngx_http_mcp_stream_end_http(ngx_http_mcp_stream_t *st);
void ngx_http_mcp_streams_wake(void);
ngx_int_t ngx_http_mcp_notify_pid(ngx_pid_t pid, ngx_log_t *log);

/* ipc: waking other workers */
ngx_int_t ngx_http_mcp_ipc_init(ngx_cycle_t *cycle);
void ngx_http_mcp_ipc_exit(ngx_cycle_t *cycle);
ngx_int_t ngx_http_mcp_ipc_wake(ngx_pid_t pid, ngx_log_t *log);

/* dispatch */
ngx_int_t ngx_http_mcp_dispatch(ngx_http_mcp_call_t *call);
ngx_uint_t ngx_http_mcp_dispatch_known(ngx_str_t *method);
ngx_uint_t ngx_http_mcp_version_parse(ngx_str_t *s);
const char *ngx_http_mcp_version_name(ngx_uint_t version);

/* registry */
ngx_http_mcp_set_t *ngx_http_mcp_set_get(ngx_conf_t *cf, ngx_str_t *name);
ngx_int_t ngx_http_mcp_list(ngx_http_mcp_call_t *call, ngx_array_t *entries,
    const char *key);
ngx_http_mcp_entry_t *ngx_http_mcp_find(ngx_array_t *entries,
    ngx_str_t *name);
ngx_http_mcp_entry_t *ngx_http_mcp_find_template(ngx_http_mcp_call_t *call,
    ngx_array_t *templates, ngx_str_t *uri);

/* uritemplate: RFC 6570 matching, pure */
ngx_int_t ngx_http_mcp_uritemplate_match(ngx_pool_t *pool, ngx_str_t *tmpl,
    ngx_str_t *uri, ngx_array_t *vars);

/* everything */
ngx_int_t ngx_http_mcp_everything_init(ngx_conf_t *cf,
    ngx_http_mcp_set_t *set);
ngx_int_t ngx_http_mcp_everything_streaming_init(ngx_conf_t *cf,
    ngx_http_mcp_set_t *set);


#endif /* _NGX_HTTP_MCP_INTERNAL_H_INCLUDED_ */
