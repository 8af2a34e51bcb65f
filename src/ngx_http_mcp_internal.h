
/*
 * ngx_http_mcp_module: types and functions shared by the module's own
 * files.  Not part of the registration API (see ngx_http_mcp.h).
 */


#ifndef _NGX_HTTP_MCP_INTERNAL_H_INCLUDED_
#define _NGX_HTTP_MCP_INTERNAL_H_INCLUDED_


#include "ngx_http_mcp.h"


#define NGX_HTTP_MCP_SUBSCRIPTION_URI_LEN  512


typedef struct {
    ngx_str_t                  name;
    ngx_http_mcp_provider_pt   init;
    ngx_http_mcp_set_t        *set;         /* built on first use */
} ngx_http_mcp_provider_t;


typedef struct {
    ngx_array_t                providers;   /* ngx_http_mcp_provider_t */
    ngx_array_t                zones;       /* ngx_shm_zone_t * */
    ngx_shm_zone_t            *default_zone;
    ngx_http_mcp_set_t        *empty_set;
} ngx_http_mcp_main_conf_t;


typedef struct {
    ngx_flag_t                 enable;
    ngx_http_mcp_set_t        *set;
    ngx_shm_zone_t            *zone;
    ngx_array_t               *origins;     /* ngx_str_t; NULL: localhost */
    ngx_flag_t                 any_origin;
    size_t                     max_body;
    ngx_uint_t                 page_size;
} ngx_http_mcp_loc_conf_t;


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
    ngx_uint_t                 streams;     /* open streams: not idle */
    ngx_queue_t                queue;
    ngx_msec_t                 last;
    ngx_http_mcp_subscription_t  *subscriptions;
    u_char                     id[NGX_HTTP_MCP_SESSION_ID_LEN];
    u_char                     client_name[NGX_HTTP_MCP_CLIENT_NAME_LEN];
} ngx_http_mcp_session_node_t;


typedef struct {
    ngx_rbtree_t               rbtree;
    ngx_rbtree_node_t          sentinel;
    ngx_queue_t                queue;       /* LRU, most recent first */
    ngx_uint_t                 count;
} ngx_http_mcp_shctx_t;


typedef struct {
    ngx_http_mcp_shctx_t      *sh;
    ngx_slab_pool_t           *shpool;
    ngx_msec_t                 timeout;
    ngx_str_t                  name;
} ngx_http_mcp_zone_t;


/* what initialize learns from the client */
typedef struct {
    ngx_uint_t                 version;
    ngx_str_t                  client_name;
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


/* per-request state of the content handler */
struct ngx_http_mcp_ctx_s {
    ngx_http_request_t        *request;
    ngx_http_mcp_loc_conf_t   *conf;
    cJSON                     *root;
    ngx_array_t                msgs;        /* ngx_http_mcp_msg_t */
    ngx_array_t                calls;       /* ngx_http_mcp_call_t * */
    ngx_http_mcp_reqctx_t      rctx;
    ngx_str_t                  new_session;  /* issued by initialize */
    ngx_uint_t                 pending;
    ngx_int_t                  status;
    unsigned                   batch:1;
    unsigned                   waiting:1;
    unsigned                   replied:1;
};


/* jsonrpc */
ngx_int_t ngx_http_mcp_jsonrpc_parse(ngx_pool_t *pool, u_char *body,
    size_t len, cJSON **root, ngx_array_t *msgs, ngx_uint_t *batch);
cJSON *ngx_http_mcp_jsonrpc_result(cJSON *id, cJSON *result);
cJSON *ngx_http_mcp_jsonrpc_error(cJSON *id, ngx_int_t code,
    const char *message, const char *correlation);
u_char *ngx_http_mcp_jsonrpc_print(ngx_pool_t *pool, cJSON *json,
    size_t *len);
ngx_int_t ngx_http_mcp_correlation_id(u_char *buf, size_t len);

/* session */
char *ngx_http_mcp_session_zone(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
ngx_shm_zone_t *ngx_http_mcp_session_default_zone(ngx_conf_t *cf);
ngx_int_t ngx_http_mcp_session_create(ngx_shm_zone_t *zone, ngx_log_t *log,
    ngx_http_mcp_session_init_t *init, u_char *id);
ngx_int_t ngx_http_mcp_session_lookup(ngx_shm_zone_t *zone, ngx_str_t *id,
    ngx_http_mcp_reqctx_t *rctx);
ngx_int_t ngx_http_mcp_session_delete(ngx_shm_zone_t *zone, ngx_str_t *id);
ngx_int_t ngx_http_mcp_session_set_initialized(ngx_shm_zone_t *zone,
    ngx_str_t *id);
ngx_int_t ngx_http_mcp_session_set_log_level(ngx_shm_zone_t *zone,
    ngx_str_t *id, ngx_uint_t level);
ngx_int_t ngx_http_mcp_session_subscribe(ngx_shm_zone_t *zone,
    ngx_str_t *id, ngx_str_t *uri, ngx_uint_t subscribe);

/* transport */
ngx_int_t ngx_http_mcp_handler(ngx_http_request_t *r);
u_char *ngx_http_mcp_origin_host(ngx_str_t *origin);

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


#endif /* _NGX_HTTP_MCP_INTERNAL_H_INCLUDED_ */
