
/*
 * src/stdio: MCP servers that speak JSON-RPC over their stdin and stdout
 * (mcp_stdio), run by the workers as children.  The process layer
 * (ngx_http_mcp_stdio_proc.c) starts, reads, writes, stops and reaps
 * them on nginx's event loop; the module (ngx_http_mcp_stdio_module.c)
 * holds the directives and the content handler; the pool
 * (ngx_http_mcp_stdio_pool.c) serves requests without a session from
 * initialized children, the sessions (ngx_http_mcp_stdio_session.c) a
 * 2025 session from a child of its own, which a worker that does not
 * own it reaches through the session store (ngx_http_mcp_stdio_remote.c).
 * See docs/stdio.md.
 */


#ifndef _NGX_HTTP_MCP_STDIO_H_INCLUDED_
#define _NGX_HTTP_MCP_STDIO_H_INCLUDED_


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>
#include <cjson/cJSON.h>
#include "ngx_http_mcp.h"
#include "ngx_http_mcp_store.h"


/* a child's state */
#define NGX_HTTP_MCP_STDIO_INIT      0   /* initialize sent, not answered */
#define NGX_HTTP_MCP_STDIO_READY     1   /* initialized, no request */
#define NGX_HTTP_MCP_STDIO_BUSY      2   /* one request outstanding */
#define NGX_HTTP_MCP_STDIO_STOPPING  3   /* signalled, not yet reaped */
#define NGX_HTTP_MCP_STDIO_PING      4   /* idle, a ping outstanding */
#define NGX_HTTP_MCP_STDIO_SESSION   5   /* a session's: never the pool's */

/* how long a stopped child has after SIGTERM before SIGKILL */
#define NGX_HTTP_MCP_STDIO_GRACE     2000

/* the longest stderr line logged; the rest of a longer one is dropped */
#define NGX_HTTP_MCP_STDIO_ERRLINE   512

/* progress events a request's stream carries at most */
#define NGX_HTTP_MCP_STDIO_EVENTS    1000

/* a session's requests at its child at once (a polled one holds no
   connection, so connections do not bound them) */
#define NGX_HTTP_MCP_STDIO_SESSION_CALLS  64

/* the SDKs' "request timed out" (the spec leaves it to them) */
#define NGX_HTTP_MCP_REQUEST_TIMEOUT  -32001

/* stderr lines logged a second per child; more are counted, dropped */
#define NGX_HTTP_MCP_STDIO_ERRRATE   50


typedef struct ngx_http_mcp_stdio_pool_s   ngx_http_mcp_stdio_pool_t;
typedef struct ngx_http_mcp_stdio_child_s  ngx_http_mcp_stdio_child_t;
typedef struct ngx_http_mcp_stdio_req_s    ngx_http_mcp_stdio_req_t;
typedef struct ngx_http_mcp_stdio_sess_s   ngx_http_mcp_stdio_sess_t;


typedef struct {
    int                          resource;   /* RLIMIT_* */
    rlim_t                       value;
} ngx_http_mcp_stdio_limit_t;


/* what a child is started with: made at configuration, read after fork */
typedef struct {
    char                       **argv;       /* NULL-terminated */
    char                       **envp;       /* NULL-terminated */
    char                        *dir;
    ngx_array_t                 *limits;     /* _limit_t */
    ngx_uint_t                   err_level;  /* stderr lines' log level */
    size_t                       max_line;   /* a stdout line's bound */
} ngx_http_mcp_stdio_exec_t;


/*
 * A location's children in this worker.  Made at configuration (each
 * worker has its copy after the fork); children and waiting requests
 * are the worker's alone.
 */
struct ngx_http_mcp_stdio_pool_s {
    ngx_http_mcp_stdio_exec_t   *exec;
    ngx_uint_t                   size;       /* children in a worker */
    ngx_uint_t                   total;      /* in all workers; 0: none */
    ngx_uint_t                   index;      /* its row of the counters */
    ngx_msec_t                   timeout;
    ngx_msec_t                   poll;       /* a session POST's stream
                                                ends unanswered after it;
                                                0: held to its answer */
    ngx_msec_t                   retry;      /* the priming's retry: */
    ngx_shm_zone_t              *zone;       /* the counters, or NULL */

    ngx_queue_t                  children;   /* _child_t, all states */
    ngx_queue_t                  waiting;    /* _req_t, not yet sent */
    ngx_queue_t                  sessions;   /* _sess_t, this worker's */
    ngx_queue_t                  remote;     /* _req_t: this worker's
                                                POSTs and GETs of
                                                sessions another owns */
    ngx_shm_zone_t              *store;      /* the session zone, or NULL:
                                                no sessions (mcp_stdio_
                                                sessions off) */
    void                        *mlcf;       /* the location's
                                                ngx_http_mcp_loc_conf_t,
                                                until postconf */
    ngx_uint_t                   live;       /* children not stopping */
    ngx_msec_t                   backoff;    /* crash loop: next delay */
    ngx_msec_t                   next_spawn; /* not before (ngx_current_msec) */
    ngx_event_t                  spawn_ev;   /* the backoff's end */

    /* what the process layer tells the module (a hook: no circle) */
    void                       (*line)(ngx_http_mcp_stdio_child_t *child,
                                       u_char *line, size_t len);
    void                       (*gone)(ngx_http_mcp_stdio_child_t *child,
                                       const char *why);

    unsigned                     ready:1;    /* the worker set it up */
};


struct ngx_http_mcp_stdio_child_s {
    ngx_queue_t                  queue;      /* pool->children, or the
                                                stopping list */
    ngx_http_mcp_stdio_pool_t   *pool;       /* NULL once stopping */
    ngx_pid_t                    pid;
    ngx_uint_t                   state;
    ngx_connection_t            *io;         /* its stdin and stdout */
    ngx_connection_t            *err;        /* its stderr */
    ngx_event_t                  timer;      /* initialize, or the
                                                grace and reap polls */
    ngx_msec_t                   started;
    ngx_msec_t                   stopped;
    ngx_uint_t                   killed;     /* SIGKILL sent */

    u_char                      *in;         /* stdout, a line at most */
    size_t                       in_len;
    size_t                       in_size;
    u_char                      *out;        /* what stdin has not taken */
    size_t                       out_pos;
    size_t                       out_len;
    size_t                       out_size;
    u_char                       errline[NGX_HTTP_MCP_STDIO_ERRLINE];
    size_t                       err_len;
    ngx_uint_t                   err_skip;   /* inside a too long line */
    ngx_msec_t                   err_window;
    ngx_uint_t                   err_count;
    ngx_uint_t                   err_dropped;

    cJSON                       *init;       /* initialize's result */
    ngx_uint_t                   next_id;
    ngx_uint_t                   want_id;    /* the request outstanding */
    ngx_http_mcp_stdio_req_t    *req;        /* its caller, or NULL */
    ngx_http_mcp_stdio_sess_t   *session;    /* its session's, or NULL:
                                                the pool's */
    unsigned                     noise:1;    /* a stray line was logged */
};


/*
 * What the edge does to a stdio location's messages, as to a gateway's
 * (src/edge sets the entries at configuration, as a higher layer sets a
 * hook: no include, no symbol; ngx_http_mcp_stdio_steps.c holds the
 * defaults, which pass everything):
 *
 * request: a POST's body, read, before anything goes to a child: NGX_OK
 *     (*body may be replaced: what the child is to get), or NGX_DECLINED
 *     with *rc the value to finalize the request with, its refusal sent
 *     (the tool policy, the caller's scopes, guardrails, input limits);
 * reply: the child's reply, under the client's id, before it is sent:
 *     it may be changed (tools the policy hides taken out, a guardrail's
 *     redaction); NGX_ERROR: not to be sent;
 * reads: whether reply would change or check this POST's reply: its
 *     answer then goes to this request alone (never to a Last-Event-ID).
 */
typedef struct {
    ngx_int_t                  (*request)(ngx_http_request_t *r,
                                          ngx_str_t *body, ngx_int_t *rc);
    ngx_int_t                  (*reply)(ngx_http_request_t *r,
                                        cJSON *reply);
    ngx_uint_t                 (*reads)(ngx_http_request_t *r);
} ngx_http_mcp_stdio_steps_t;

extern ngx_http_mcp_stdio_steps_t  ngx_http_mcp_stdio_steps;


/* a POST's message on its way to a child and back, or a GET's stream */
struct ngx_http_mcp_stdio_req_s {
    ngx_http_request_t          *r;
    ngx_http_mcp_stdio_pool_t   *pool;
    ngx_queue_t                  queue;      /* pool->waiting, or its
                                                session's inflight */
    ngx_http_mcp_stdio_child_t  *child;
    ngx_http_mcp_stdio_sess_t   *sess;       /* its session's, or NULL */
    cJSON                       *root;       /* the message, id detached */
    cJSON                       *id;         /* the client's id */
    const char                  *method;
    cJSON                       *token;      /* its progressToken, in root */
    ngx_uint_t                   child_id;   /* its id to a session's
                                                child */
    ngx_uint_t                   events;     /* progress events sent */
    ngx_event_t                  timer;      /* while it waits */

    /*
     * A session another worker owns: on this worker (remote), the
     * stream of the session's log its answers come on; on the owner
     * (r NULL), the other worker's request or GET, answered on stream.
     */
    ngx_str_t                    sid;        /* remote: the session's */
    ngx_pid_t                    owner;      /* remote: its owner */
    uint32_t                     stream;
    uint32_t                     stoken;     /* remote: the stream's */
    uint64_t                     seq;        /* remote: the last event */
    uint64_t                     event;      /* remote: the seq of the
                                                event being written */
    ngx_msec_t                   deadline;   /* remote: a request's */
    ngx_msec_t                   poll_at;    /* remote: its stream ends
                                                unanswered, or 0 */

    unsigned                     waiting:1;
    unsigned                     inflight:1; /* on its session's list */
    unsigned                     stateless:1;  /* 2026-07-28 */
    unsigned                     accepts_sse:1;
    unsigned                     sse:1;      /* the reply is a stream now */
    unsigned                     remote:1;   /* on pool->remote */
    unsigned                     get:1;      /* remote: a GET stream */
    unsigned                     ids:1;      /* a stream of the log: its
                                                events carry ids */
    unsigned                     resumed:1;  /* a Last-Event-ID's: no
                                                priming event */
    unsigned                     polled:1;   /* ended unanswered: parked
                                                for its client's poll */
};


/*
 * A 2025 session served by a child of its own, in the worker that took
 * its initialize (ngx_http_mcp_stdio_session.c).  Heap memory: it lives
 * as long as the session, beyond any request.
 */
struct ngx_http_mcp_stdio_sess_s {
    ngx_queue_t                  queue;      /* pool->sessions */
    ngx_http_mcp_stdio_pool_t   *pool;
    u_char                       sid[NGX_HTTP_MCP_SESSION_ID_LEN];
    ngx_http_mcp_stdio_child_t  *child;      /* NULL once it is gone */
    ngx_queue_t                  inflight;   /* _req_t sent to the child */
    ngx_http_mcp_stdio_req_t    *get;        /* the GET stream, or NULL */
    ngx_event_t                  timer;      /* initialize; then the idle
                                                checks and pings */
    ngx_uint_t                   ping;       /* the ping's child id */
    ngx_http_mcp_auth_t          caller;     /* its binding alone: the
                                                store's looks at it
                                                outside a request */
    unsigned                     ready:1;    /* initialize answered */
    unsigned                     bound:1;    /* made by an authorized
                                                caller, bound to it */
};


/* the pool (ngx_http_mcp_stdio_pool.c), whose replies sessions share */
void ngx_http_mcp_stdio_detach(ngx_http_mcp_stdio_req_t *req);
void ngx_http_mcp_stdio_respond(ngx_http_mcp_stdio_req_t *req,
    cJSON *reply);
void ngx_http_mcp_stdio_fail(ngx_http_mcp_stdio_req_t *req, ngx_int_t code,
    const char *message);
ngx_int_t ngx_http_mcp_stdio_map_id(ngx_http_mcp_stdio_req_t *req,
    ngx_uint_t n);
ngx_int_t ngx_http_mcp_stdio_sse(ngx_http_mcp_stdio_req_t *req);
ngx_int_t ngx_http_mcp_stdio_push(ngx_http_mcp_stdio_req_t *req, cJSON *msg);
void ngx_http_mcp_stdio_close(ngx_http_mcp_stdio_req_t *req,
    const char *why);
ngx_int_t ngx_http_mcp_stdio_event(ngx_http_mcp_stdio_req_t *req,
    u_char *json, size_t len, ngx_uint_t last);
ngx_int_t ngx_http_mcp_stdio_send_line(ngx_http_mcp_stdio_child_t *child,
    cJSON *msg);
void ngx_http_mcp_stdio_route(ngx_http_mcp_stdio_pool_t *pool);
void ngx_http_mcp_stdio_backoff(ngx_http_mcp_stdio_pool_t *pool);
void ngx_http_mcp_stdio_local(ngx_http_mcp_stdio_child_t *child,
    ngx_http_mcp_stdio_req_t *req);
void ngx_http_mcp_stdio_wait_timeout(ngx_event_t *ev);
void ngx_http_mcp_stdio_spawn_timer(ngx_event_t *ev);
void ngx_http_mcp_stdio_ready(ngx_http_mcp_stdio_child_t *child);
void ngx_http_mcp_stdio_pool_line(ngx_http_mcp_stdio_child_t *child,
    cJSON *msg);
void ngx_http_mcp_stdio_pool_gone(ngx_http_mcp_stdio_child_t *child,
    const char *why);

/* the sessions: ngx_http_mcp_stdio_session.c */
ngx_int_t ngx_http_mcp_stdio_session_other(ngx_http_request_t *r,
    ngx_http_mcp_stdio_pool_t *pool);
ngx_int_t ngx_http_mcp_stdio_session_post(ngx_http_mcp_stdio_req_t *req,
    cJSON *method);
void ngx_http_mcp_stdio_session_line(ngx_http_mcp_stdio_child_t *child,
    cJSON *msg);
void ngx_http_mcp_stdio_session_gone(ngx_http_mcp_stdio_child_t *child,
    const char *why);
void ngx_http_mcp_stdio_session_cancel(ngx_http_mcp_stdio_req_t *req);
void ngx_http_mcp_stdio_session_exit(ngx_http_mcp_stdio_pool_t *pool);
void ngx_http_mcp_stdio_session_wake(ngx_http_mcp_stdio_pool_t *pool);

/* a session's requests and GETs on a worker that does not own it:
   ngx_http_mcp_stdio_remote.c */
ngx_int_t ngx_http_mcp_stdio_remote_open(ngx_http_mcp_stdio_req_t *req,
    ngx_pid_t owner, ngx_uint_t kind, ngx_int_t *rc);
ngx_int_t ngx_http_mcp_stdio_remote_resume(ngx_http_request_t *r,
    ngx_http_mcp_stdio_sess_t *s, ngx_http_mcp_stdio_pool_t *pool,
    ngx_pid_t owner, ngx_str_t *sid, uint32_t resume, uint64_t seq);
void ngx_http_mcp_stdio_remote_gone(ngx_http_mcp_stdio_req_t *req);
void ngx_http_mcp_stdio_remote_left(ngx_http_mcp_stdio_req_t *req);
void ngx_http_mcp_stdio_remote_cleanup(void *data);
void ngx_http_mcp_stdio_remote_pull_all(ngx_http_mcp_stdio_pool_t *pool);
ngx_uint_t ngx_http_mcp_stdio_remote_owner_live(
    ngx_http_mcp_stdio_pool_t *pool, ngx_str_t *sid, ngx_pid_t owner);
ngx_uint_t ngx_http_mcp_stdio_remote_polls(ngx_http_mcp_stdio_req_t *req);

/* the module: the inter-worker wake-up's entry (the hook table's) */
void ngx_http_mcp_stdio_wake(void);


/* the process layer: what the module asks of it */
ngx_http_mcp_stdio_child_t *ngx_http_mcp_stdio_spawn(
    ngx_http_mcp_stdio_pool_t *pool);
ngx_int_t ngx_http_mcp_stdio_write(ngx_http_mcp_stdio_child_t *child,
    u_char *line, size_t len);
void ngx_http_mcp_stdio_stop(ngx_http_mcp_stdio_child_t *child);
void ngx_http_mcp_stdio_stop_all(ngx_cycle_t *cycle);
void ngx_http_mcp_stdio_proc_init(void);
ngx_int_t ngx_http_mcp_stdio_reserve(ngx_http_mcp_stdio_pool_t *pool);
/* this worker's cell of the total set to its live children: a place
   reserved and not taken given back */
void ngx_http_mcp_stdio_count(ngx_http_mcp_stdio_pool_t *pool);


extern ngx_module_t  ngx_http_mcp_stdio_module;


#endif /* _NGX_HTTP_MCP_STDIO_H_INCLUDED_ */
