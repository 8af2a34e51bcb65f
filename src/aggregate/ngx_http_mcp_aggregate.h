
/*
 * ngx_http_mcp_aggregate_module: one MCP endpoint over several MCP
 * servers (mcp_backend).  Each backend is an nginx location that speaks
 * MCP over HTTP (proxy_pass to the server, as a rule); the location that
 * names them serves the merged lists and routes calls, prompt gets and
 * resource reads to them over background subrequests of the client's
 * POST (ngx_http_mcp_fetch_call()).  The configuration, the methods
 * and the merges are ngx_http_mcp_aggregate.c; a leg, the exchange with
 * one backend (its session, a retry after it lost it, its reply, its
 * failures), ngx_http_mcp_aggregate_leg.c; what a routed request's SSE
 * reply carries before its response (notifications, the backend's
 * requests to the client) and its cancellation,
 * ngx_http_mcp_aggregate_relay.c; the backends' own GET streams while
 * the client's is open, ngx_http_mcp_aggregate_listen.c; what the
 * backends are told of the client's end (its DELETE, its leaving in the
 * middle of a call), ngx_http_mcp_aggregate_end.c; which requests go
 * again after a kept connection failed them, the backends' tool hints,
 * ngx_http_mcp_aggregate_retry.c; a stateless client's tasks (the
 * 2026-07-28 extension), ngx_http_mcp_aggregate_task.c.
 */


#ifndef _NGX_HTTP_MCP_AGGREGATE_H_INCLUDED_
#define _NGX_HTTP_MCP_AGGREGATE_H_INCLUDED_


#include "ngx_http_mcp_store.h"
#include "ngx_http_mcp_core.h"
#include "ngx_http_mcp_subrequest.h"


#define NGX_HTTP_MCP_AGGREGATE_MAX      32      /* backends a location */
#define NGX_HTTP_MCP_AGGREGATE_SID_LEN  1024    /* a backend's session id */
#define NGX_HTTP_MCP_AGGREGATE_MAX_TIME 600000  /* mcp_backend_max_time */
#define NGX_HTTP_MCP_AGGREGATE_ASKS     16      /* a backend's requests to
                                                   the client, pending */
#define NGX_HTTP_MCP_AGGREGATE_ANSWERS  256     /* answers to a backend in
                                                   a call */
#define NGX_HTTP_MCP_AGGREGATE_EVENT_ID 128     /* a backend's event id,
                                                   kept for a resume */
#define NGX_HTTP_MCP_AGGREGATE_RESENDS  4       /* a request sent again
                                                   after kept connections
                                                   failed it, at most */

/* what a worker knows of a backend's 2026-07-28 (its stateless bits) */
#define NGX_HTTP_MCP_AGGREGATE_UNKNOWN    0
#define NGX_HTTP_MCP_AGGREGATE_STATELESS  1
#define NGX_HTTP_MCP_AGGREGATE_SESSIONS   2


/* one mcp_backend line; the part after "worker" is each worker's own */
typedef struct {
    ngx_str_t                  name;
    ngx_str_t                  uri;
    ngx_str_t                  prefix;      /* the prefix and separator;
                                               empty: names as they are */
    ngx_uint_t                 index;

    /* worker */
    cJSON                     *caps;        /* its last capabilities */
    u_char                     version[NGX_HTTP_MCP_BACKEND_VERSION_LEN];
                                            /* the version it speaks */
    size_t                     version_len;
    u_char                     sid[NGX_HTTP_MCP_AGGREGATE_SID_LEN];
    size_t                     sid_len;     /* stateless clients' session */
    unsigned                   sessionless:1;  /* gave no session id */
    unsigned                   opened:1;    /* sid is this worker's */
    unsigned                   stateless:2; /* serves 2026-07-28 without
                                               a session (this worker's
                                               knowledge): ..._UNKNOWN,
                                               ..._STATELESS, or
                                               ..._SESSIONS (it refused
                                               one, or did not list the
                                               revision) */
} ngx_http_mcp_backend_t;


typedef struct {
    ngx_array_t               *backends;    /* ngx_http_mcp_backend_t */
    ngx_str_t                  separator;
    ngx_msec_t                 timeout;
    ngx_msec_t                 max_time;    /* events do not restart it */
    ngx_msec_t                 retry;
    size_t                     max_size;
} ngx_http_mcp_aggregate_loc_conf_t;


typedef struct ngx_http_mcp_aggregate_op_s  ngx_http_mcp_aggregate_op_t;

/* one SSE event's data: NGX_AGAIN for the next one */
typedef ngx_int_t (*ngx_http_mcp_aggregate_sse_pt)(void *data, u_char *p,
    size_t len);

typedef void (*ngx_http_mcp_aggregate_done_pt)(
    ngx_http_mcp_aggregate_op_t *op);


/*
 * Where a routed request's SSE stream is, should the backend end it
 * before its response (SEP-1699 polling): the leg resumes it there
 */
typedef struct {
    ngx_str_t                      last;        /* the last event id */
    u_char                         last_id[NGX_HTTP_MCP_AGGREGATE_EVENT_ID];
    ngx_msec_t                     retry;       /* its last retry:, or
                                                   NGX_CONF_UNSET_MSEC */
    ngx_uint_t                     resumes;
    ngx_event_t                    timer;       /* until the next */
    struct ngx_http_mcp_aggregate_keep_s  *keep;  /* the POST, held */
    unsigned                       resuming:1;  /* the fetch is a GET */
} ngx_http_mcp_aggregate_resume_t;


/* what one backend is asked, and what it answered */
typedef struct {
    ngx_http_mcp_aggregate_op_t   *op;
    ngx_http_mcp_backend_t        *backend;
    ngx_http_mcp_fetch_state_t  *st;          /* the fetch under way */
    const char                    *method;      /* NULL: open the session
                                                   only */
    cJSON                         *params;      /* the op's */
    ngx_str_t                      sid;
    ngx_uint_t                     step;
    cJSON                         *reply;       /* the JSON-RPC response,
                                                   freed with the op */
    const char                    *failure;
    uint64_t                       id;          /* of its request there */
    ngx_http_mcp_aggregate_resume_t  *resume;   /* a routed request's
                                                   stream, or NULL */
    ngx_uint_t                     asking;      /* its requests to the
                                                   client, pending */
    ngx_uint_t                     answers;     /* sent it */
    ngx_uint_t                     resends;     /* kept connections
                                                   that failed it */
    unsigned                       retried:1;
    unsigned                       done:1;
    unsigned                       failed:1;
    unsigned                       asked:1;     /* in the op */
    unsigned                       streamed:1;  /* its events are relayed
                                                   to the client */
    unsigned                       broken:1;    /* its stream broke off */
    unsigned                       cancelled:1; /* the backend was told */
    unsigned                       routed:1;    /* a call, a get, a read:
                                                   the client's choice */
    unsigned                       abandoned:1; /* its client went away:
                                                   only the POST's end
                                                   counts */
    unsigned                       direct:1;    /* a stateless client's
                                                   request, sent as such:
                                                   no session */
} ngx_http_mcp_aggregate_leg_t;


/* a client's request over the backends, in the call's pool */
struct ngx_http_mcp_aggregate_op_s {
    ngx_http_mcp_call_t                *call;
    ngx_http_mcp_aggregate_loc_conf_t  *conf;
    ngx_http_mcp_aggregate_leg_t       *legs;   /* one per backend */
    ngx_uint_t                          pending;
    ngx_event_t                         timer;
    ngx_msec_t                          started;  /* the timer's first */
    ngx_http_mcp_aggregate_done_pt      done;
    ngx_http_mcp_handler_pt             next;   /* initialize, discover */
    ngx_int_t                         (*finish)(ngx_http_mcp_call_t *call,
                                                cJSON *result);
    ngx_uint_t                          target; /* the routed backend */
    ngx_str_t                          *sids;   /* sessions of its own, a
                                                   backend each (a
                                                   subscriptions/listen's),
                                                   or NULL */
    void                               *data;   /* its done's */
    unsigned                            stateless:1;
    unsigned                            opening:1;  /* initialize */
    unsigned                            cursor:1;   /* a list's later page */
    unsigned                            ended:1;
    unsigned                            capped:1;  /* its timer is at
                                                      max_time */
};


/* a message to a backend whose end is waited for: a fetch in pool */
typedef struct {
    ngx_pool_t                    *pool;
    ngx_event_handler_pt           handler;     /* the fetch's news */
    void                          *data;
    ngx_http_mcp_fetch_state_t  *st;          /* the fetch */
} ngx_http_mcp_aggregate_wait_t;


/* ngx_http_mcp_aggregate.c */
ngx_uint_t ngx_http_mcp_aggregate_owner(
    ngx_http_mcp_aggregate_loc_conf_t *conf, const char *name);

/* ngx_http_mcp_aggregate_leg.c */
ngx_http_mcp_aggregate_op_t *ngx_http_mcp_aggregate_op(
    ngx_http_mcp_call_t *call, ngx_http_mcp_aggregate_loc_conf_t *conf,
    ngx_http_mcp_aggregate_done_pt done);
void ngx_http_mcp_aggregate_ask(ngx_http_mcp_aggregate_op_t *op,
    ngx_uint_t i, const char *method, cJSON *params);
void ngx_http_mcp_aggregate_run(ngx_http_mcp_aggregate_op_t *op);
ngx_int_t ngx_http_mcp_aggregate_keep_sessions(
    ngx_http_mcp_aggregate_op_t *op);
cJSON *ngx_http_mcp_aggregate_params(ngx_http_mcp_call_t *call);
void ngx_http_mcp_aggregate_relay(ngx_http_mcp_call_t *call, cJSON *reply);
void ngx_http_mcp_aggregate_unavailable(ngx_http_mcp_aggregate_op_t *op,
    ngx_http_mcp_aggregate_leg_t *leg);

/* ngx_http_mcp_aggregate_relay.c */
ngx_int_t ngx_http_mcp_aggregate_headers(ngx_http_mcp_aggregate_leg_t *leg,
    ngx_http_request_t *r, ngx_uint_t init, ngx_http_mcp_fetch_t *f);
cJSON *ngx_http_mcp_aggregate_response(ngx_pool_t *pool, u_char *p,
    size_t len);
ngx_int_t ngx_http_mcp_aggregate_events(ngx_http_mcp_aggregate_leg_t *leg,
    ngx_uint_t last);
ngx_int_t ngx_http_mcp_aggregate_sse(ngx_http_mcp_fetch_state_t *st,
    ngx_uint_t last, ngx_http_mcp_aggregate_sse_pt handler, void *data,
    ngx_str_t *id, ngx_msec_t *retry, ngx_uint_t *taken);
ngx_uint_t ngx_http_mcp_aggregate_version(ngx_shm_zone_t *zone,
    ngx_http_mcp_backend_t *b);
/* a request's body to a backend, traced, as JSON in the pool; takes msg */
ngx_int_t ngx_http_mcp_aggregate_body(ngx_http_mcp_call_t *call,
    ngx_pool_t *pool, cJSON *msg, ngx_str_t *body);
ngx_int_t ngx_http_mcp_aggregate_header(ngx_pool_t *pool, ngx_table_elt_t *h,
    char *key, char *lowcase, u_char *value, size_t len);
ngx_int_t ngx_http_mcp_aggregate_direct_params(
    ngx_http_mcp_aggregate_leg_t *leg, cJSON *p);
ngx_int_t ngx_http_mcp_aggregate_client_caps(ngx_http_mcp_aggregate_op_t *op,
    cJSON *caps);
ngx_int_t ngx_http_mcp_aggregate_watch(ngx_http_mcp_aggregate_leg_t *leg);
void ngx_http_mcp_aggregate_give_up(ngx_http_mcp_aggregate_leg_t *leg);
ngx_int_t ngx_http_mcp_aggregate_cancelled(ngx_http_mcp_aggregate_leg_t *leg,
    ngx_http_request_t *r, ngx_http_mcp_aggregate_wait_t *wait);
ngx_int_t ngx_http_mcp_aggregate_prefixed(ngx_pool_t *pool,
    ngx_http_mcp_backend_t *b, cJSON *obj, const char *key);

/* ngx_http_mcp_aggregate_end.c */
ngx_int_t ngx_http_mcp_aggregate_init(ngx_conf_t *cf);
ngx_int_t ngx_http_mcp_aggregate_watch_client(
    ngx_http_mcp_aggregate_leg_t *leg);
void ngx_http_mcp_aggregate_park(ngx_shm_zone_t *zone,
    ngx_http_mcp_backend_t *b, ngx_str_t *sid);
void ngx_http_mcp_aggregate_unpark(ngx_http_request_t *r);

/* ngx_http_mcp_aggregate_listen.c */
ngx_int_t ngx_http_mcp_aggregate_listen_init(ngx_conf_t *cf);
ngx_int_t ngx_http_mcp_aggregate_feed(ngx_http_mcp_call_t *call,
    ngx_http_mcp_aggregate_loc_conf_t *conf, ngx_str_t *sids,
    ngx_uint_t lists, ngx_str_t *id);
ngx_int_t ngx_http_mcp_aggregate_list_changed(cJSON *caps, const char *list);
ngx_uint_t ngx_http_mcp_aggregate_ours(ngx_http_mcp_aggregate_leg_t *leg,
    cJSON *json);

/* ngx_http_mcp_aggregate_retry.c */
void ngx_http_mcp_aggregate_learn(ngx_http_mcp_aggregate_op_t *op,
    ngx_http_mcp_backend_t *b, cJSON *tool, ngx_str_t *name);
ngx_uint_t ngx_http_mcp_aggregate_retry_safe(
    ngx_http_mcp_aggregate_leg_t *leg, const char *method);


/* ngx_http_mcp_aggregate_subscribe.c */
ngx_int_t ngx_http_mcp_aggregate_subscriptions(ngx_http_mcp_call_t *call,
    ngx_http_mcp_aggregate_loc_conf_t *conf);

/* ngx_http_mcp_aggregate_task.c */
ngx_int_t ngx_http_mcp_aggregate_task_call(ngx_http_mcp_call_t *call,
    ngx_http_mcp_aggregate_loc_conf_t *conf, ngx_uint_t i);
ngx_int_t ngx_http_mcp_aggregate_task_method(ngx_http_mcp_call_t *call,
    ngx_http_mcp_aggregate_loc_conf_t *conf);
ngx_uint_t ngx_http_mcp_aggregate_task_required(
    ngx_http_mcp_aggregate_op_t *op, ngx_http_mcp_aggregate_leg_t *leg);
ngx_int_t ngx_http_mcp_aggregate_task_extension(
    ngx_http_mcp_aggregate_op_t *op, cJSON *caps);


extern ngx_module_t  ngx_http_mcp_aggregate_module;


#endif /* _NGX_HTTP_MCP_AGGREGATE_H_INCLUDED_ */
