
/*
 * The session store (src/store): what the module keeps in the shared
 * zone and what every other part may ask of it.  Sessions, their
 * streams, event logs and waits (ngx_http_mcp_session.c,
 * _session_stream.c, _session_conf.c), gateway sessions' replicas and
 * backends' health (ngx_http_mcp_session.c, _session_backend.c), tasks
 * (ngx_http_mcp_session_task.c), mcp_fleet's questions
 * (ngx_http_mcp_session_fleet.c), and the waking of workers
 * (ngx_http_mcp_ipc.c).  Only the store locks the zone; its layout
 * there is ngx_http_mcp_session_zone.h, the store's alone.
 */


#ifndef _NGX_HTTP_MCP_STORE_H_INCLUDED_
#define _NGX_HTTP_MCP_STORE_H_INCLUDED_


#include "ngx_http_mcp.h"


#define NGX_HTTP_MCP_SUBSCRIPTION_URI_LEN  512


#define NGX_HTTP_MCP_AUTH_BINDING_LEN  32     /* SHA-256 */


/*
 * The caller of one request, as the access phase found it
 * (ngx_http_mcp_auth_module): plain data that the store binds sessions
 * and tasks to (binding), the core reads (scopes, role) and the edge
 * hands on.  Here, at the bottom, so that no layer needs the auth
 * module to read it.
 */
typedef struct {
    ngx_str_t                  subject;
    ngx_str_t                  issuer;
    ngx_str_t                  role;
    ngx_array_t               *scopes;       /* ngx_str_t */
    ngx_str_t                  result;       /* for $mcp_auth_result */
    ngx_str_t                  token;        /* the JWT presented, for
                                                mcp_token_exchange */
    void                      *conf;         /* the location's */
    u_char                     binding[NGX_HTTP_MCP_AUTH_BINDING_LEN];
    unsigned                   authenticated:1;
} ngx_http_mcp_auth_t;


/*
 * The session zones of the http block: every mcp_session_zone, and the
 * one that locations without mcp_session share (made when first asked
 * for).  Kept in the module's main conf, filled by the store.
 */
typedef struct {
    ngx_array_t                zones;       /* ngx_shm_zone_t * */
    ngx_shm_zone_t            *default_zone;
} ngx_http_mcp_store_conf_t;


/* what the store tells of a session zone (health, metrics) */
typedef struct {
    ngx_str_t                  name;
    size_t                     size;        /* bytes of slab pages */
    size_t                     used;
    size_t                     free;
    ngx_uint_t                 sessions;
    ngx_uint_t                 streams;     /* open: a worker writes them */
    ngx_uint_t                 waiting;     /* server requests pending */
    ngx_uint_t                 dropped;     /* events out of full logs */
    ngx_uint_t                 tasks;
    size_t                     events;      /* bytes of event logs */
} ngx_http_mcp_zone_stats_t;


/* where a gateway session lives: its replica and that replica's id */
typedef struct {
    struct sockaddr           *sockaddr;
    socklen_t                  socklen;
    ngx_str_t                  name;
    ngx_str_t                  sid;
} ngx_http_mcp_target_t;

/* what initialize learns from the client */
typedef struct {
    ngx_uint_t                 version;
    ngx_str_t                  client_name;
    u_char                    *binding;     /* issuer + subject hash, or
                                               NULL */
    ngx_str_t                  client_key;  /* per_client's value */
    unsigned                   sampling:1;
    unsigned                   elicitation:1;  /* its form mode */
    unsigned                   roots:1;
    unsigned                   elicitation_url:1;
} ngx_http_mcp_session_init_t;


/* an event of a session's log, handed to a stream's writer */
typedef ngx_int_t (*ngx_http_mcp_event_pt)(void *data, uint64_t seq,
    u_char *text, size_t len);

/* one stream's pull in ngx_http_mcp_session_pull_all() */
typedef struct {
    u_char                    *sid;         /* NGX_HTTP_MCP_SESSION_ID_LEN */
    uint32_t                   id;
    uint32_t                   token;
    uint64_t                   after;
    void                      *data;        /* the handler's */
    ngx_int_t                  rc;          /* as ngx_http_mcp_session_pull */
    ngx_uint_t                 complete;
} ngx_http_mcp_pull_t;


/* ---- the session store: session.c, session_stream.c ---- */

char *ngx_http_mcp_session_zone(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
ngx_shm_zone_t *ngx_http_mcp_session_default_zone(ngx_conf_t *cf,
    ngx_http_mcp_store_conf_t *scf);
ngx_int_t ngx_http_mcp_session_zone_stats(ngx_shm_zone_t *zone,
    ngx_http_mcp_zone_stats_t *st);
void *ngx_http_mcp_zone_shared(ngx_shm_zone_t *shm_zone,
    ngx_slab_pool_t **shpool, void *old, size_t size, ngx_uint_t *fresh);
/* the elicitation modes a client declares: NGX_HTTP_MCP_ELICIT_* bits */
#define NGX_HTTP_MCP_ELICIT_FORM   0x01
#define NGX_HTTP_MCP_ELICIT_URL    0x02

ngx_uint_t ngx_http_mcp_elicitation_modes(cJSON *elicitation);
ngx_int_t ngx_http_mcp_session_init_params(cJSON *params,
    ngx_http_mcp_session_init_t *init);
ngx_int_t ngx_http_mcp_session_client_key(ngx_shm_zone_t *zone,
    ngx_http_request_t *r, ngx_str_t *key);
ngx_int_t ngx_http_mcp_session_create(ngx_shm_zone_t *zone, ngx_log_t *log,
    ngx_http_mcp_session_init_t *init, u_char *id);
ngx_int_t ngx_http_mcp_session_lookup(ngx_shm_zone_t *zone, ngx_str_t *id,
    ngx_http_mcp_reqctx_t *rctx);
ngx_int_t ngx_http_mcp_session_peek(ngx_shm_zone_t *zone, ngx_str_t *id,
    ngx_http_mcp_reqctx_t *rctx);
ngx_int_t ngx_http_mcp_session_delete(ngx_shm_zone_t *zone, ngx_str_t *id,
    ngx_log_t *log);
ngx_int_t ngx_http_mcp_session_alive(ngx_shm_zone_t *zone, ngx_str_t *id);
ngx_int_t ngx_http_mcp_session_set_initialized(ngx_shm_zone_t *zone,
    ngx_str_t *id, ngx_log_t *log);
/* NGX_OK: initialized; NGX_AGAIN: not yet; NGX_DECLINED: no such session */
ngx_int_t ngx_http_mcp_session_initialized(ngx_shm_zone_t *zone,
    ngx_str_t *id);

/* mcp_fleet's questions to the store (ngx_http_mcp_session_fleet.c) */
ngx_int_t ngx_http_mcp_session_held(ngx_shm_zone_t *zone, ngx_str_t *id);
ngx_int_t ngx_http_mcp_session_ids(ngx_shm_zone_t *zone, ngx_pool_t *pool,
    ngx_array_t *ids, ngx_msec_t *timeout);
ngx_msec_t ngx_http_mcp_session_timeout(ngx_shm_zone_t *zone);

ngx_int_t ngx_http_mcp_session_set_log_level(ngx_shm_zone_t *zone,
    ngx_str_t *id, ngx_uint_t level);
ngx_int_t ngx_http_mcp_session_subscribe(ngx_shm_zone_t *zone,
    ngx_str_t *id, ngx_str_t *uri, ngx_uint_t subscribe);
ngx_int_t ngx_http_mcp_session_target(ngx_shm_zone_t *zone, ngx_str_t *id,
    ngx_pool_t *pool, ngx_http_mcp_target_t *target,
    ngx_http_mcp_reqctx_t *rctx);
ngx_int_t ngx_http_mcp_session_backend_set(ngx_shm_zone_t *zone,
    ngx_str_t *id, ngx_uint_t backend, ngx_str_t *sid);
ngx_int_t ngx_http_mcp_session_backend(ngx_shm_zone_t *zone, ngx_str_t *id,
    ngx_uint_t backend, ngx_pool_t *pool, ngx_str_t *sid);
ngx_uint_t ngx_http_mcp_session_backend_down(ngx_shm_zone_t *zone,
    ngx_str_t *uri, ngx_msec_t retry);
ngx_int_t ngx_http_mcp_session_backend_health(ngx_shm_zone_t *zone,
    ngx_str_t *uri, ngx_uint_t ok);
/* a protocol version's date, YYYY-MM-DD, with room */
#define NGX_HTTP_MCP_BACKEND_VERSION_LEN  32
ngx_int_t ngx_http_mcp_session_backend_version(ngx_shm_zone_t *zone,
    ngx_str_t *uri, u_char *version, size_t *len, ngx_uint_t set);

/*
 * An upstream's tools as listed, for mcp_pass's checks and pins
 * (session_tools.c).  A pin: the SHA-256 of a tool's definition, and of
 * each of its fields (name, title, description, inputSchema,
 * outputSchema, annotations; zeros: absent), to tell which changed.
 */
#define NGX_HTTP_MCP_PIN_FIELDS  6

typedef struct {
    u_char                     digest[32];
    u_char                     fields[NGX_HTTP_MCP_PIN_FIELDS][32];
} ngx_http_mcp_pin_t;

ngx_int_t ngx_http_mcp_tools_learn(ngx_shm_zone_t *zone, ngx_str_t *upstream,
    ngx_str_t *name, ngx_str_t *input, ngx_str_t *output);
ngx_int_t ngx_http_mcp_tools_schemas(ngx_shm_zone_t *zone,
    ngx_str_t *upstream, ngx_str_t *name, ngx_pool_t *pool, ngx_str_t *input,
    ngx_str_t *output);
ngx_int_t ngx_http_mcp_tools_pin(ngx_shm_zone_t *zone, ngx_str_t *upstream,
    ngx_str_t *name, ngx_http_mcp_pin_t *seen, ngx_http_mcp_pin_t *pin,
    ngx_uint_t learn, ngx_uint_t *tell);
ngx_int_t ngx_http_mcp_tools_seen(ngx_shm_zone_t *zone, ngx_str_t *upstream,
    ngx_str_t *name, u_char *seen, u_char *pin);
/*
 * A number that moves whenever a tool's record does (made, forgotten,
 * its schemas, pin, digest listed or told, hints): a worker that read it
 * unmoved across a list it relayed knows the zone holds what that list
 * writes (ngx_http_mcp_proxy_pin.c's memo of lists)
 */
ngx_atomic_uint_t ngx_http_mcp_tools_version(ngx_shm_zone_t *zone);

/*
 * a tool's annotations that let its call go again (NGX_HTTP_MCP_TOOL_*
 * of ngx_http_mcp_jsonrpc.h), upstream a mcp_pass URL or a mcp_backend
 * location
 */
ngx_int_t ngx_http_mcp_tools_hint(ngx_shm_zone_t *zone, ngx_str_t *upstream,
    ngx_str_t *name, ngx_uint_t hints);
ngx_uint_t ngx_http_mcp_tools_hints(ngx_shm_zone_t *zone,
    ngx_str_t *upstream, ngx_str_t *name);
/*
 * whether a message to upstream may go twice: the rule of
 * ngx_http_mcp_jsonrpc_retry() (type an ngx_http_mcp_msg_type_e), a
 * tools/call by its tool's hints (params' name: upstream's own)
 */
ngx_uint_t ngx_http_mcp_tools_retry(ngx_shm_zone_t *zone,
    ngx_str_t *upstream, ngx_uint_t type, ngx_str_t *method, cJSON *params);

/*
 * A DPoP proof (RFC 9449 11.1) by the SHA-256 digest of its key and jti,
 * kept until expire (session_dpop.c): NGX_OK the first time, NGX_DECLINED
 * for a proof seen before, by any worker; NGX_ERROR: no room.
 */
ngx_int_t ngx_http_mcp_dpop_record(ngx_shm_zone_t *zone, u_char *digest,
    time_t expire);
ngx_int_t ngx_http_mcp_session_target_set(ngx_shm_zone_t *zone,
    ngx_str_t *id, ngx_http_mcp_target_t *target);
u_char *ngx_http_mcp_session_log_id(u_char *id, size_t len);
ngx_int_t ngx_http_mcp_session_state_key(ngx_shm_zone_t *zone, u_char *key);
void ngx_http_mcp_session_limits(ngx_shm_zone_t *zone,
    ngx_uint_t *subscriptions, size_t *uri);
ngx_int_t ngx_http_mcp_session_listen(ngx_shm_zone_t *zone, ngx_str_t *sid,
    uint32_t stream, ngx_uint_t lists, ngx_str_t *id, ngx_array_t *uris,
    ngx_log_t *log);
ngx_uint_t ngx_http_mcp_session_list_changed(ngx_shm_zone_t *zone,
    ngx_uint_t list, const char *method, ngx_log_t *log);

ngx_int_t ngx_http_mcp_session_stream_open(ngx_shm_zone_t *zone,
    ngx_str_t *sid, ngx_uint_t *standalone, uint32_t pending,
    ngx_uint_t seal, uint32_t resume, uint64_t acked, uint32_t token,
    uint32_t *id);
ngx_int_t ngx_http_mcp_session_stream_release(ngx_shm_zone_t *zone,
    ngx_str_t *sid, uint32_t id, uint32_t token, ngx_uint_t park);
ngx_int_t ngx_http_mcp_session_stream_held(ngx_shm_zone_t *zone,
    ngx_str_t *sid, uint32_t id);
ngx_int_t ngx_http_mcp_session_stream_expect(ngx_shm_zone_t *zone,
    ngx_str_t *sid, uint32_t id);
ngx_int_t ngx_http_mcp_session_send(ngx_shm_zone_t *zone, ngx_str_t *sid,
    uint32_t stream, u_char *data, size_t len, ngx_uint_t response,
    ngx_log_t *log);
ngx_int_t ngx_http_mcp_session_pull(ngx_shm_zone_t *zone, ngx_str_t *sid,
    uint32_t id, uint32_t token, uint64_t after,
    ngx_http_mcp_event_pt handler, void *data, ngx_uint_t *complete);
void ngx_http_mcp_session_pull_all(ngx_shm_zone_t *zone,
    ngx_http_mcp_pull_t *pulls, ngx_uint_t n, ngx_http_mcp_event_pt handler);
void ngx_http_mcp_session_lists(ngx_shm_zone_t *zone, uint32_t *lists,
    ngx_uint_t *changed);
ngx_uint_t ngx_http_mcp_session_updated(ngx_shm_zone_t *zone,
    ngx_str_t *uri, const char *method, ngx_str_t *params,
    ngx_array_t *owners, ngx_log_t *log);
ngx_int_t ngx_http_mcp_session_wait(ngx_shm_zone_t *zone, ngx_str_t *sid,
    uint64_t *request, u_char *id, size_t len);
void ngx_http_mcp_session_unwait(ngx_shm_zone_t *zone, ngx_str_t *sid,
    uint64_t request, u_char *id, size_t len);
ngx_int_t ngx_http_mcp_session_waited(ngx_shm_zone_t *zone, ngx_str_t *sid,
    uint64_t request, u_char *id, size_t len, ngx_pool_t *pool,
    ngx_str_t *answer);
ngx_int_t ngx_http_mcp_session_deliver(ngx_shm_zone_t *zone,
    ngx_str_t *sid, uint64_t request, u_char *id, size_t len, u_char *text,
    size_t text_len, ngx_log_t *log);
ngx_int_t ngx_http_mcp_session_wait_stream(ngx_shm_zone_t *zone,
    ngx_str_t *sid, u_char *id, size_t len, uint32_t stream);
void ngx_http_mcp_session_lost_start(ngx_cycle_t *cycle,
    ngx_http_mcp_store_conf_t *scf);


/*
 * ---- a stdio session's owner and inbound queue: session_stdio.c ----
 * what a worker other than the owner sends the session's child: a
 * message as it is (a notification, a response); a request, answered
 * on the stream named (a client that takes, or not, an event stream);
 * a GET stream opened; a stream's client gone (its request cancelled,
 * the GET closed)
 */
#define NGX_HTTP_MCP_INBOUND_MESSAGE      0
#define NGX_HTTP_MCP_INBOUND_REQUEST      1
#define NGX_HTTP_MCP_INBOUND_REQUEST_SSE  2
#define NGX_HTTP_MCP_INBOUND_GET          3
#define NGX_HTTP_MCP_INBOUND_GONE         4

typedef struct {
    ngx_uint_t                 kind;
    uint32_t                   stream;
    ngx_str_t                  text;
} ngx_http_mcp_inbound_msg_t;

ngx_int_t ngx_http_mcp_session_stdio_own(ngx_shm_zone_t *zone,
    ngx_str_t *sid, ngx_pid_t pid, ngx_uint_t location);
ngx_pid_t ngx_http_mcp_session_stdio_owner(ngx_shm_zone_t *zone,
    ngx_str_t *sid, ngx_uint_t *location);
/*
 * the owner ends the session (its child stopped): as delete(), but while
 * other workers hold streams of it the session is only retired, found by
 * no lookup, until they pulled what the owner wrote last (an answer, an
 * error) and let go of them
 */
ngx_int_t ngx_http_mcp_session_stdio_retire(ngx_shm_zone_t *zone,
    ngx_str_t *sid, ngx_log_t *log);
ngx_int_t ngx_http_mcp_session_inbound_push(ngx_shm_zone_t *zone,
    ngx_str_t *sid, ngx_uint_t kind, uint32_t stream, u_char *data,
    size_t len, ngx_pid_t *owner, ngx_log_t *log);
ngx_int_t ngx_http_mcp_session_inbound_take(ngx_shm_zone_t *zone,
    ngx_str_t *sid, ngx_pool_t *pool, ngx_array_t *out);


/* ---- tasks: ngx_http_mcp_session_task.c (the call side: _task.h) ---- */

#define NGX_HTTP_MCP_TASK_ID_LEN        32      /* 128 random bits, hex */
#define NGX_HTTP_MCP_TASK_OWNER_LEN     32      /* SHA-256 of the owner */

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


/* ---- ipc.c: waking workers, their graceful exit ---- */

/* a call or a stream of this worker went: see the hooks' calls_live */
void ngx_http_mcp_ipc_drained(void);
char *ngx_http_mcp_ipc_check_path(ngx_conf_t *cf, ngx_str_t *path);
void ngx_http_mcp_ipc_prepare(ngx_cycle_t *cycle, ngx_str_t *path);
ngx_int_t ngx_http_mcp_ipc_init(ngx_cycle_t *cycle, ngx_str_t *path,
    ngx_msec_t shutdown_timeout);
ngx_uint_t ngx_http_mcp_ipc_ready(void);
void ngx_http_mcp_ipc_exit(ngx_cycle_t *cycle);
ngx_int_t ngx_http_mcp_notify_pid(ngx_pid_t pid, ngx_log_t *log);
ngx_int_t ngx_http_mcp_notify_stream(ngx_pid_t pid, uint32_t token,
    ngx_log_t *log);


#endif /* _NGX_HTTP_MCP_STORE_H_INCLUDED_ */
