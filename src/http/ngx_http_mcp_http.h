
/*
 * The HTTP side every entry point shares (src/http): a request's context
 * and its checks and replies (ngx_http_mcp_http.c), the headers read
 * and written (ngx_http_mcp_headers.c, ngx_http_mcp_headers.h), CORS
 * (ngx_http_mcp_cors.c), a 2026-07-28 request's checks
 * (ngx_http_mcp_stateless.c), and the one subrequest client
 * (ngx_http_mcp_subrequest.c, ngx_http_mcp_subrequest.h).  The entry
 * points themselves are the edge (src/edge, ngx_http_mcp_edge.h): they
 * and the gateways call these.
 */


#ifndef _NGX_HTTP_MCP_HTTP_H_INCLUDED_
#define _NGX_HTTP_MCP_HTTP_H_INCLUDED_


#include "ngx_http_mcp.h"
#include "ngx_http_mcp_jsonrpc.h"
#include "ngx_http_mcp_store.h"
#include "ngx_http_mcp_core.h"
#include "ngx_http_mcp_headers.h"


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
    ngx_http_mcp_trace_t       trace;       /* of the first message, or
                                               the headers' (SEP-414) */
    const char                *parse_error;  /* why, or NULL */
    void                     (*detach)(ngx_http_mcp_ctx_t *ctx);
                                            /* its calls, when it goes */
    unsigned                   error_page_sent:1;
    unsigned                   batch:1;
    unsigned                   parsed:1;
    unsigned                   waiting:1;
    unsigned                   stateless:1;  /* 2026-07-28: no session */
    unsigned                   busy:1;      /* no room: 503 */
    unsigned                   trace_changed:1;  /* the body's _meta: a
                                               trace dropped or added */
};


/* ---- http.c: the HTTP edge every entry point shares ---- */

ngx_http_mcp_ctx_t *ngx_http_mcp_ctx_create(ngx_http_request_t *r,
    ngx_http_mcp_loc_conf_t *mlcf, ngx_http_mcp_auth_t *auth);
ngx_int_t ngx_http_mcp_check_origin(ngx_http_request_t *r,
    ngx_http_mcp_loc_conf_t *mlcf);
u_char *ngx_http_mcp_origin_host(ngx_str_t *origin);
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
ngx_int_t ngx_http_mcp_send_sealed(ngx_http_request_t *r);
ngx_int_t ngx_http_mcp_send_error_data(ngx_http_request_t *r,
    ngx_uint_t status, cJSON *id, ngx_int_t code, const char *message,
    cJSON *data);
ngx_int_t ngx_http_mcp_session_carrier(ngx_http_mcp_ctx_t *ctx);
const char *ngx_http_mcp_status_error(ngx_uint_t status, ngx_int_t *code);
cJSON *ngx_http_mcp_error_reply(ngx_http_request_t *r, cJSON *id,
    ngx_int_t code, const char *message, ngx_str_t *method);
ngx_http_request_t *ngx_http_mcp_message_request(ngx_http_request_t *r);

u_char *ngx_http_mcp_error_print(ngx_http_request_t *r, cJSON *id,
    ngx_int_t code, const char *message, size_t *len);
ngx_int_t ngx_http_mcp_conf_add_variables(ngx_conf_t *cf,
    ngx_http_variable_t *vars);
ngx_int_t ngx_http_mcp_conf_file(ngx_conf_t *cf, ngx_str_t *path,
    size_t max, ngx_str_t *text);


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


#endif /* _NGX_HTTP_MCP_HTTP_H_INCLUDED_ */
