
/*
 * mcp_pass (src/proxy): what ngx_http_mcp_proxy_module (its directives
 * and configuration: ngx_http_mcp_proxy_module.c), the gateway's edge
 * (ngx_http_mcp_proxy_request.c) and its upstream side
 * (ngx_http_mcp_proxy_upstream.c, _reply.c, _body.c, _stream.c,
 * _check.c, _hold.c, _sesskey.c, _balancer.c, _retry.c; its
 * credentials: _cred.c; its curated views: _view.c; its guardrails:
 * _guard.c)
 * share, and what the module's HTTP edge asks of it.
 */


#ifndef _NGX_HTTP_MCP_PROXY_H_INCLUDED_
#define _NGX_HTTP_MCP_PROXY_H_INCLUDED_


#include "ngx_http_mcp_jsonguard.h"
#include "ngx_http_mcp_store.h"
#include "ngx_http_mcp_core.h"
#include "ngx_http_mcp_guard.h"
#include "ngx_http_mcp_http.h"


/* a location's memo of definitions digested (ngx_http_mcp_proxy_pin.c) */
typedef struct ngx_http_mcp_pin_memo_s  ngx_http_mcp_pin_memo_t;
/* a location's memo of the lists relayed as they came (the same file) */
typedef struct ngx_http_mcp_list_memo_s  ngx_http_mcp_list_memo_t;


/*
 * mcp_token_exchange (ngx_http_mcp_proxy_exchange.c): where and what for
 * the caller's token is exchanged.
 */
typedef struct {
    ngx_str_t                  uri;         /* the token endpoint's
                                               location */
    ngx_str_t                  audience;
    ngx_str_t                  resource;
    ngx_str_t                  scope;
    ngx_str_t                  requested_type;
    ngx_msec_t                 timeout;
    ngx_msec_t                 margin;      /* s: kept until this much
                                               before expiry */
    ngx_shm_zone_t            *zone;
    struct ngx_http_mcp_exchange_memo_s  *memo;  /* a worker's, made at
                                                    its first call */
} ngx_http_mcp_exchange_conf_t;


/*
 * mcp_token_exchange_client_key (ngx_http_mcp_proxy_exchange_key.c): the
 * private_key_jwt key, read at configuration time.
 */
typedef struct {
    void                      *pkey;        /* EVP_PKEY */
    const void                *md;          /* EVP_MD, NULL: EdDSA */
    ngx_str_t                  alg;
    ngx_str_t                  kid;
    ngx_str_t                  audience;    /* the assertion's aud */
    size_t                     part;        /* ECDSA: r's and s's bytes */
} ngx_http_mcp_exchange_key_t;


/*
 * mcp_pass's location configuration: ngx_http_mcp_proxy_module's
 * (ngx_http_mcp_proxy_module.c).  The core's loc conf says only that a
 * location is a gateway (pass), which the module sets with mcp_pass.
 */
typedef struct {
    ngx_http_upstream_conf_t   upstream;    /* mcp_pass */
    ngx_http_upstream_conf_t   upstream_init;  /* the same, for initialize */
    ngx_http_upstream_conf_t   upstream_retry;  /* the same, while a
                                               request may go again
                                               (ngx_http_mcp_proxy_retry.c) */
    ngx_flag_t                 retry;       /* mcp_pass_retry */
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
    ngx_flag_t                 check_arguments;  /* against the listed */
    ngx_flag_t                 check_results;    /* inputSchema, and
                                                    outputSchema */
    ngx_str_t                  tools_key;   /* whose tools the zone keeps:
                                               the upstream and its URI */
    ngx_uint_t                 pin;         /* NGX_HTTP_MCP_PIN_* */
    ngx_array_t               *pins;        /* a pin file's, or NULL:
                                               learnt in the zone */
    ngx_http_mcp_pin_memo_t   *pin_memo;    /* the worker's last
                                               definitions digested */
    ngx_http_mcp_list_memo_t  *list_memo;   /* the worker's last lists
                                               relayed unchanged */
    ngx_array_t               *set_headers;  /* mcp_pass_set_header:
                                               ngx_http_mcp_proxy_header_t */
    ngx_http_mcp_exchange_conf_t  *exchange;  /* mcp_token_exchange */
    ngx_str_t                  exchange_client_id;
    ngx_int_t                  exchange_secret;  /* a variable's index */
    ngx_uint_t                 exchange_auth;  /* 0 basic, 1 post,
                                                  2 private_key_jwt */
    ngx_http_mcp_exchange_key_t  *exchange_key;
    ngx_array_t               *views;       /* mcp_pass_tool, or NULL
                                               (ngx_http_mcp_proxy_view.c) */
    ngx_array_t               *guards;      /* mcp_guardrail (or its other
                                               name, mcp_pass_guardrail),
                                               the core's: ngx_http_mcp_
                                               guard_t, or NULL */
    ngx_uint_t                 guard_where;  /* what any of them reads:
                                                NGX_HTTP_MCP_GUARD_* */
} ngx_http_mcp_proxy_loc_conf_t;



/*
 * A header mcp_pass sets on the request to the upstream: its value is
 * parts, each a text and the variable after it (index, or -1 for none).
 */
typedef struct {
    ngx_str_t                  text;
    ngx_int_t                  index;
} ngx_http_mcp_proxy_part_t;

typedef struct {
    ngx_str_t                  name;
    ngx_str_t                  lowcase;
    ngx_array_t                parts;       /* ngx_http_mcp_proxy_part_t */
} ngx_http_mcp_proxy_header_t;


/* an SSE reply read event by event for the tool policy */
typedef struct {
    u_char                    *buf;         /* the event not yet whole */
    size_t                     len;
    size_t                     size;
    size_t                     scan;        /* read up to here */
    size_t                     line;        /* the line being read */
    ngx_pool_t                *pool;        /* what was sent from */
    unsigned                   bom_done:1;
    unsigned                   cleanup:1;
} ngx_http_mcp_proxy_stream_t;




typedef struct {
    ngx_http_mcp_ctx_t        *ctx;
    ngx_http_mcp_proxy_loc_conf_t  *conf;
    ngx_http_mcp_target_t      target;      /* the session's replica */
    ngx_str_t                  client_sid;
    ngx_str_t                  upstream_sid;  /* from the reply */
    ngx_table_elt_t           *sid_header;  /* the reply's Mcp-Session-Id */
    ngx_http_status_t          status;
    ngx_http_chunked_t         chunked;
    off_t                      length;      /* the reply's Content-Length */
    u_char                    *acc;         /* a reply held for filtering */
    size_t                     acc_len;
    size_t                     acc_size;
    ngx_http_mcp_proxy_stream_t  stream;
    ngx_http_mcp_jsonguard_t  *guard;       /* a JSON reply to a POST,
                                               under the policy */
    uint64_t                   started;     /* for metrics, or 0 */
    ngx_queue_t                relay;       /* in the endless relays */
    ngx_http_upstream_conf_t  *uconf;       /* u->conf, but while the
                                               request may go again */
    ngx_event_free_peer_pt     peer_free;   /* the peer's own, hooked by
                                               mcp_pass_retry */
    unsigned                   initialize:1;
    unsigned                   pinned:1;
    unsigned                   stateless:1;  /* 2026-07-28: any replica */
    unsigned                   filter:1;
    unsigned                   policy:1;    /* tools/list is filtered */
    unsigned                   events:1;    /* the stream, event by event */
    unsigned                   is_chunked:1;
    unsigned                   sid_seen:1;
    unsigned                   init_ok:1;
    unsigned                   replica_gone:1;
    unsigned                   sse:1;       /* the reply is SSE */
    unsigned                   endless:1;   /* a relayed stream that does
                                               not end by itself */
    unsigned                   read:1;      /* its messages are read, for
                                               the outcomes and checks */
    unsigned                   must_read:1;  /* a reply too large to read
                                               is refused, not relayed */
    unsigned                   lax:1;       /* held for the outcomes only:
                                               too large, it goes unread */
    unsigned                   replied:1;   /* a byte of the reply came */
    unsigned                   hold_header:1;  /* the head waits for the
                                                  body held whole */
    unsigned                   header_held:1;  /* and waits now */
    ngx_uint_t                 pin_no_room;  /* tools of a list left
                                               without a pin */
    ngx_atomic_uint_t          memo_version;  /* the zone's tools before
                                               a list was read */
    ngx_array_t               *memo_names;  /* the names it listed, or
                                               NULL: not to be kept */

    /* a server request held until notifications/initialized */
    ngx_str_t                  held;        /* it, and what came after */
    size_t                     held_size;
    ngx_event_t                hold_timer;
    ngx_msec_t                 hold_start;
    unsigned                   hold:1;      /* requests are looked for */
    unsigned                   holding:1;   /* one is held */
    unsigned                   redacted:1;  /* a guardrail rewrote an
                                               argument: the body is
                                               printed again */

    /*
     * mcp_pass_tool, a redacted argument: the body printed again, and a
     * renamed call's Mcp-Name, or NULL data
     */
    ngx_str_t                  body;
    ngx_str_t                  mcp_name;
} ngx_http_mcp_proxy_ctx_t;


/*
 * How often a held request looks at the zone (ngx_http_mcp_proxy_hold.c):
 * a look is one lock, and a tenth of a second is well within what a
 * person or a client's next step waits.
 */
#define NGX_HTTP_MCP_PROXY_HOLD_POLL  100


/* a relayed request's state, which its MCP context holds */
#define ngx_http_mcp_proxy_get_ctx(r)                                        \
    ((ngx_http_mcp_proxy_ctx_t *)                                            \
     ((ngx_http_mcp_ctx_t *) ngx_http_get_module_ctx(r, ngx_http_mcp_module)) \
     ->proxy)


/* relays a request to its replica: NGX_DONE, or a value to finalize with */
ngx_int_t ngx_http_mcp_proxy_start(ngx_http_request_t *r,
    ngx_http_mcp_proxy_ctx_t *pctx);

/* mcp_session_key (ngx_http_mcp_proxy_sesskey.c), else the zone */
ngx_int_t ngx_http_mcp_proxy_target(ngx_http_mcp_ctx_t *ctx, ngx_str_t *id,
    ngx_http_mcp_target_t *target);
ngx_int_t ngx_http_mcp_proxy_sesskey_mint(ngx_http_request_t *r,
    ngx_http_mcp_proxy_ctx_t *pctx);

/* an upstream's reply head; the URI it is sent (ngx_http_mcp_proxy_reply.c) */
ngx_uint_t ngx_http_mcp_proxy_header_twice(ngx_http_upstream_t *u,
    ngx_table_elt_t *h, ngx_uint_t sid_seen);
ngx_int_t ngx_http_mcp_proxy_reply_head(ngx_http_request_t *r);
ngx_uint_t ngx_http_mcp_proxy_sse_type(ngx_http_upstream_t *u);
ngx_uint_t ngx_http_mcp_proxy_read_as_sse(ngx_http_request_t *r);
ngx_int_t ngx_http_mcp_proxy_filter_init(void *data);
ngx_int_t ngx_http_mcp_proxy_filter(void *data, ssize_t bytes);
ngx_int_t ngx_http_mcp_proxy_flush_filtered(ngx_http_request_t *r,
    ngx_http_mcp_proxy_ctx_t *pctx);
ngx_str_t *ngx_http_mcp_proxy_uri(ngx_http_request_t *r);

/* the tool policy on a relayed SSE stream (ngx_http_mcp_proxy_stream.c) */
ngx_int_t ngx_http_mcp_proxy_stream(ngx_http_request_t *r,
    ngx_http_mcp_proxy_ctx_t *pctx, u_char *pos, u_char *last,
    ngx_str_t *out);

/* mcp_pass_pin */
#define NGX_HTTP_MCP_PIN_OFF      0
#define NGX_HTTP_MCP_PIN_REPORT   1
#define NGX_HTTP_MCP_PIN_ENFORCE  2


/* pinned tool definitions (ngx_http_mcp_proxy_pin.c) */
ngx_int_t ngx_http_mcp_proxy_pin_memo(ngx_conf_t *cf,
    ngx_http_mcp_proxy_loc_conf_t *plcf);
char *ngx_http_mcp_pass_pin_file(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
ngx_int_t ngx_http_mcp_proxy_pin_list(ngx_http_mcp_proxy_ctx_t *pctx,
    cJSON *result, ngx_uint_t *changed);
ngx_int_t ngx_http_mcp_proxy_pin_call(ngx_http_mcp_proxy_ctx_t *pctx,
    ngx_str_t *tool, const char **why);
ngx_int_t ngx_http_mcp_proxy_list_memo(ngx_conf_t *cf,
    ngx_http_mcp_proxy_loc_conf_t *plcf);
ngx_int_t ngx_http_mcp_proxy_list_memo_find(ngx_http_mcp_proxy_ctx_t *pctx,
    ngx_http_mcp_tool_filter_t *tf, ngx_str_t *in);
void ngx_http_mcp_proxy_list_memo_keep(ngx_http_mcp_proxy_ctx_t *pctx,
    ngx_str_t *in);

/* mcp_pass_tool: curated views (ngx_http_mcp_proxy_view.c) */
char *ngx_http_mcp_pass_tool(ngx_conf_t *cf, ngx_command_t *cmd, void *conf);
ngx_int_t ngx_http_mcp_proxy_view_name(ngx_http_mcp_proxy_loc_conf_t *plcf,
    ngx_str_t *real, ngx_str_t *shown);
ngx_int_t ngx_http_mcp_proxy_view_call(ngx_http_mcp_proxy_loc_conf_t *plcf,
    ngx_str_t *name, ngx_str_t *real);
ngx_int_t ngx_http_mcp_proxy_view_list(ngx_http_mcp_proxy_ctx_t *pctx,
    cJSON *result, ngx_uint_t *changed);
ngx_int_t ngx_http_mcp_proxy_view_body(ngx_http_mcp_proxy_ctx_t *pctx);

/* guardrails (ngx_http_mcp_proxy_guard.c) */
ngx_int_t ngx_http_mcp_proxy_guard_arguments(ngx_http_mcp_proxy_ctx_t *pctx,
    cJSON *arguments, const char **why);
ngx_int_t ngx_http_mcp_proxy_guard_result(ngx_http_mcp_proxy_ctx_t *pctx,
    cJSON *result, ngx_uint_t *changed);
ngx_int_t ngx_http_mcp_proxy_guard_list(ngx_http_mcp_proxy_ctx_t *pctx,
    cJSON *result, ngx_uint_t *changed);
ngx_int_t ngx_http_mcp_proxy_guard_reply(ngx_http_mcp_proxy_ctx_t *pctx,
    u_char *start, u_char *end);

/* what mcp_pass reads of a POST and its reply (ngx_http_mcp_proxy_check.c) */
void ngx_http_mcp_proxy_reads(ngx_http_mcp_proxy_ctx_t *pctx);
void ngx_http_mcp_proxy_tool_filter(ngx_http_mcp_proxy_ctx_t *pctx,
    ngx_http_mcp_tool_filter_t *tf);
ngx_int_t ngx_http_mcp_proxy_check_params(ngx_http_mcp_ctx_t *ctx,
    ngx_http_mcp_msg_t *msg, ngx_str_t *tool, u_char **error);
ngx_int_t ngx_http_mcp_proxy_check_arguments(ngx_http_mcp_ctx_t *ctx,
    ngx_str_t *tool, cJSON *arguments, u_char **error);

/* mcp_stdio's messages, checked as a relayed POST's and its reply's */
ngx_int_t ngx_http_mcp_proxy_check_post(ngx_http_mcp_ctx_t *ctx,
    ngx_str_t *body, ngx_int_t *rc);
ngx_int_t ngx_http_mcp_proxy_read_reply(ngx_http_mcp_proxy_ctx_t *pctx,
    cJSON *message);

/* sending a request again (ngx_http_mcp_proxy_retry.c) */
ngx_int_t ngx_http_mcp_proxy_retry_output(void *data, ngx_chain_t *in);
ngx_int_t ngx_http_mcp_proxy_retry_learn(ngx_http_mcp_proxy_ctx_t *pctx,
    cJSON *result);

/* requests before notifications/initialized (ngx_http_mcp_proxy_hold.c) */
ngx_int_t ngx_http_mcp_proxy_hold_init(ngx_http_request_t *r,
    ngx_http_mcp_proxy_ctx_t *pctx);
void ngx_http_mcp_proxy_hold_end(ngx_http_request_t *r,
    ngx_http_mcp_proxy_ctx_t *pctx, ngx_int_t rc);
void ngx_http_mcp_proxy_initialized(ngx_http_mcp_ctx_t *ctx,
    ngx_str_t *sid);

/* the body's output (ngx_http_mcp_proxy_body.c) */
ngx_int_t ngx_http_mcp_proxy_append(ngx_http_request_t *r, u_char *pos,
    u_char *last);
ngx_int_t ngx_http_mcp_proxy_bad_reply(ngx_http_request_t *r,
    ngx_http_mcp_proxy_ctx_t *pctx, ngx_int_t code, const char *message);
ngx_int_t ngx_http_mcp_proxy_send_header(ngx_http_request_t *r,
    ngx_http_mcp_proxy_ctx_t *pctx, off_t length);

/* mcp_secret, mcp_pass_set_header (ngx_http_mcp_proxy_cred.c) */
char *ngx_http_mcp_secret(ngx_conf_t *cf, ngx_command_t *cmd, void *conf);

/* mcp_token_exchange (ngx_http_mcp_proxy_exchange.c) */
char *ngx_http_mcp_token_exchange(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
char *ngx_http_mcp_token_exchange_secret(ngx_conf_t *cf,
    ngx_command_t *cmd, void *conf);
char *ngx_http_mcp_exchange_merge(ngx_conf_t *cf,
    ngx_http_mcp_proxy_loc_conf_t *prev,
    ngx_http_mcp_proxy_loc_conf_t *conf);
char *ngx_http_mcp_token_exchange_key(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
ngx_int_t ngx_http_mcp_exchange_assertion(ngx_http_request_t *r,
    ngx_http_mcp_exchange_key_t *key, ngx_str_t *client_id, ngx_str_t *out);
ngx_int_t ngx_http_mcp_exchange_add_variables(ngx_conf_t *cf);
ngx_int_t ngx_http_mcp_exchange_init(ngx_conf_t *cf);
/* the token exchanged for r's main request, or NULL */
ngx_str_t *ngx_http_mcp_exchange_token(ngx_http_request_t *r);
/* mcp_pass's POST: the status its exchange failed with (0: none) */
ngx_uint_t ngx_http_mcp_exchange_refused(ngx_http_request_t *r);
ngx_int_t ngx_http_mcp_exchange_error(ngx_http_request_t *r, cJSON *id,
    ngx_uint_t status);
char *ngx_http_mcp_pass_set_header(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
ngx_str_t *ngx_http_mcp_proxy_set_headers(ngx_http_request_t *r,
    ngx_http_mcp_proxy_loc_conf_t *plcf, size_t *len);
u_char *ngx_http_mcp_proxy_set_headers_write(
    ngx_http_mcp_proxy_loc_conf_t *plcf, ngx_str_t *values, u_char *p);
ngx_uint_t ngx_http_mcp_proxy_set_header_named(
    ngx_http_mcp_proxy_loc_conf_t *plcf, ngx_table_elt_t *h);

/* mcp_affinity (ngx_http_mcp_proxy_balancer.c) */
ngx_uint_t ngx_http_mcp_balancer_bypass(ngx_http_upstream_srv_conf_t *uscf);
ngx_int_t ngx_http_mcp_balancer_note(ngx_conf_t *cf,
    ngx_http_upstream_srv_conf_t *uscf);

/* what the module asks of mcp_pass (ngx_http_mcp_proxy_request.c, _upstream.c) */

ngx_int_t ngx_http_mcp_proxy_post(ngx_http_mcp_ctx_t *ctx);
ngx_int_t ngx_http_mcp_proxy_other(ngx_http_request_t *r,
    ngx_http_mcp_loc_conf_t *mlcf);
ngx_uint_t ngx_http_mcp_proxy_replica_gone(ngx_http_mcp_ctx_t *ctx);
void ngx_http_mcp_proxy_quit(ngx_uint_t deadline);
ngx_int_t ngx_http_mcp_proxy_head_filter_init(ngx_conf_t *cf);

extern ngx_module_t  ngx_http_mcp_proxy_module;
extern ngx_module_t  ngx_http_mcp_balancer_module;


#endif /* _NGX_HTTP_MCP_PROXY_H_INCLUDED_ */
