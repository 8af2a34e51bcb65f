
/*
 * The session store's own view of the shared zone: what a session, its
 * streams, event log and waits look like there, and its tasks.  Included
 * by the store's files (ngx_http_mcp_session.c, ngx_http_mcp_session_*.c)
 * and nothing else: every other file asks the store for whole operations.
 */


#ifndef _NGX_HTTP_MCP_SESSION_ZONE_H_INCLUDED_
#define _NGX_HTTP_MCP_SESSION_ZONE_H_INCLUDED_


#include "ngx_http_mcp_store.h"


/* one message of a session's event log */
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
    unsigned                   parked:1;    /* no owner, but its client
                                               comes back: see release */
    unsigned                   sealed:1;    /* its request reads its
                                               answer: never resumed */
} ngx_http_mcp_stream_sh_t;

/* a message for a stdio session's child, from a worker not its owner */
typedef struct {
    ngx_queue_t                queue;
    uint32_t                   stream;      /* where its answers go */
    ngx_uint_t                 kind;        /* NGX_HTTP_MCP_INBOUND_* */
    size_t                     len;
    u_char                     data[1];
} ngx_http_mcp_inbound_t;


/* an answer a worker waits for, or a call a client may cancel */
typedef struct {
    ngx_queue_t                queue;
    ngx_pid_t                  owner;
    uint64_t                   request;     /* server request id, or 0 */
    u_char                    *answer;      /* the client's response */
    size_t                     answer_len;
    unsigned                   answered:1;
    unsigned                   cancelled:1;
    uint32_t                   stream;      /* a call: where it answers,
                                               or 0 (no stream yet) */
    size_t                     id_len;      /* a call: its JSON-RPC id */
    u_char                     id[1];
} ngx_http_mcp_wait_t;


/* a gateway session's replica and upstream id */
typedef struct {
    socklen_t                  socklen;
    size_t                     name_len;
    size_t                     sid_len;
    u_char                     data[1];     /* sockaddr, name, sid */
} ngx_http_mcp_target_sh_t;


/* an mcp_backend's health and version, the same for every worker (by
   its URI) */
typedef struct {
    ngx_queue_t                queue;
    ngx_msec_t                 failed;      /* when it last failed */
    ngx_uint_t                 down;        /* in a failure episode */
    u_char                     version[NGX_HTTP_MCP_BACKEND_VERSION_LEN];
    size_t                     version_len;  /* 0: not learnt yet */
    size_t                     len;
    u_char                     uri[1];
} ngx_http_mcp_health_sh_t;


/* an upstream's tool as its list declared it, for mcp_pass's checks
   and pins */
typedef struct {
    ngx_rbtree_node_t          node;        /* key: ngx_http_mcp_tools_hash()
                                               of the upstream and name */
    ngx_queue_t                queue;       /* most recently learnt first */
    size_t                     size;        /* the whole record's */
    size_t                     upstream_len;
    size_t                     name_len;
    size_t                     input_len;   /* inputSchema as JSON, or 0 */
    size_t                     output_len;  /* outputSchema */
    ngx_http_mcp_pin_t         pin;         /* learnt on first sight */
    u_char                     seen[32];    /* the digest last listed */
    u_char                     told[32];    /* the change last logged */
    unsigned                   pinned:1;
    unsigned                   listed:1;    /* seen is set */
    unsigned                   kept:1;      /* under a pin: never evicted */
    unsigned                   hints:2;     /* NGX_HTTP_MCP_TOOL_READ_ONLY..,
                                               as last listed */
    u_char                     data[1];     /* upstream, name, input,
                                               output */
} ngx_http_mcp_tooldef_sh_t;


/* a client's sessions, for "mcp_session_zone ... per_client=" */
typedef struct {
    ngx_rbtree_node_t          node;        /* key: the digest's start */
    ngx_uint_t                 sessions;
    u_char                     digest[32];  /* SHA-256 of the key */
} ngx_http_mcp_client_t;


/* the workers a zone keeps track of, at most (see session_lost.c) */
#define NGX_HTTP_MCP_LOST_WORKERS  64


/* a session as the shm zone keeps it */
typedef struct ngx_http_mcp_subscription_s  ngx_http_mcp_subscription_t;
typedef struct ngx_http_mcp_listen_sh_s  ngx_http_mcp_listen_sh_t;

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
    unsigned                   elicitation_url:1;  /* elicitation: form */
    unsigned                   retired:1;   /* its stdio owner ended it:
                                               only its held streams are
                                               left to be pulled */
    ngx_uint_t                 streams;     /* owned streams: not idle */
    ngx_queue_t                queue;
    ngx_msec_t                 last;
    ngx_http_mcp_subscription_t  *subscriptions;
    ngx_uint_t                 nsubscriptions;
    ngx_http_mcp_client_t     *client;      /* per_client=, or NULL */
    ngx_http_mcp_target_sh_t  *target;      /* mcp_pass sessions */
    u_char                    *backends;    /* mcp_backend: the ids of
                                               the session at each, see
                                               session_backend_set() */
    size_t                     backends_len;
    ngx_http_mcp_listen_sh_t  *listen;      /* subscriptions/listen */
    ngx_queue_t                events;      /* ngx_http_mcp_event_t */
    size_t                     events_size;
    ngx_queue_t                sstreams;    /* ngx_http_mcp_stream_sh_t */
    ngx_queue_t                waits;       /* ngx_http_mcp_wait_t */
    uint64_t                   next_seq;
    uint64_t                   next_request;
    uint32_t                   next_stream;
    ngx_pid_t                  stdio_owner;  /* mcp_stdio_sessions: the
                                               worker with its child */
    ngx_uint_t                 stdio_location;  /* and its location's
                                               number */
    ngx_queue_t                inbound;     /* ngx_http_mcp_inbound_t:
                                               for that worker */
    ngx_uint_t                 inbound_n;
    size_t                     inbound_size;
    u_char                     id[NGX_HTTP_MCP_SESSION_ID_LEN];
    u_char                     client_name[NGX_HTTP_MCP_CLIENT_NAME_LEN];
    u_char                     binding[NGX_HTTP_MCP_AUTH_BINDING_LEN];
} ngx_http_mcp_session_node_t;


/*
 * A stateless client's subscriptions/listen: the session of its request
 * and the stream that hears the list changes and the resource updates
 * it asked for.  One allocation: the URIs and the texts follow it.
 */
struct ngx_http_mcp_listen_sh_s {
    ngx_queue_t                queue;       /* the zone's listeners */
    ngx_http_mcp_session_node_t  *session;
    uint32_t                   stream;
    ngx_uint_t                 lists;       /* NGX_HTTP_MCP_LISTEN_* */
    ngx_str_t                  id;          /* the listen request's id,
                                               as JSON */
    ngx_uint_t                 nuris;
    ngx_str_t                 *uris;        /* resourceSubscriptions */
};


/* a task (ngx_http_mcp_session_task.c): blobs are zone allocations */
typedef struct {
    ngx_rbtree_node_t          node;        /* key: the id's first bytes */
    ngx_queue_t                queue;       /* the zone's, oldest first */
    u_char                     id[NGX_HTTP_MCP_TASK_ID_LEN];
    u_char                     owner[NGX_HTTP_MCP_TASK_OWNER_LEN];
    u_char                     quota[NGX_HTTP_MCP_TASK_OWNER_LEN];
    u_char                     sid[NGX_HTTP_MCP_SESSION_ID_LEN];
                                            /* 2025: the session's */
    ngx_uint_t                 status;
    uint64_t                   created;     /* ms since the epoch */
    uint64_t                   updated;
    ngx_msec_t                 ttl;
    uint32_t                   version;     /* changes with every write */
    ngx_pid_t                  pid;         /* the worker running it */
    uint32_t                   listener;    /* 2025: the session's stream
                                               of a tasks/result, or 0 */
    unsigned                   stateless:1;
    unsigned                   tool_error:1;
    ngx_str_t                  blobs[NGX_HTTP_MCP_TASK_BLOBS];
} ngx_http_mcp_task_sh_t;


/* a DPoP proof seen (ngx_http_mcp_session_dpop.c) */
typedef struct {
    ngx_rbtree_node_t          node;        /* key: the digest's start */
    ngx_queue_t                queue;       /* the zone's, oldest first */
    time_t                     expire;      /* when its iat is too old */
    u_char                     digest[32];  /* of its key and jti */
} ngx_http_mcp_dpop_sh_t;


typedef struct {
    ngx_rbtree_t               rbtree;
    ngx_rbtree_node_t          sentinel;
    ngx_queue_t                queue;       /* LRU, most recent first */
    ngx_uint_t                 count;
    uint32_t                   lists[3];    /* what the lists were */
    ngx_uint_t                 lists_known;
    ngx_rbtree_t               clients;     /* ngx_http_mcp_client_t */
    ngx_rbtree_node_t          clients_sentinel;
    ngx_queue_t                listeners;   /* ngx_http_mcp_listen_sh_t */
    u_char                     state_key[32];  /* requestState's HMAC key
                                                 when mcp_state_key is not
                                                 set: made on first use,
                                                 kept over reloads */
    ngx_uint_t                 state_key_made;
    ngx_rbtree_t               tasks;       /* ngx_http_mcp_task_sh_t */
    ngx_rbtree_node_t          tasks_sentinel;
    ngx_queue_t                task_queue;
    ngx_uint_t                 ntasks;
    ngx_uint_t                 streams;     /* with an owner: open */
    ngx_uint_t                 waiting;     /* server requests pending */
    ngx_uint_t                 dropped;     /* events out of full logs */
    ngx_queue_t                backends;    /* ngx_http_mcp_health_sh_t */
    ngx_queue_t                tools;       /* ngx_http_mcp_tooldef_sh_t */
    ngx_rbtree_t               tools_tree;  /* the same, by upstream and
                                               name */
    ngx_rbtree_node_t          tools_sentinel;
    ngx_uint_t                 ntools;
    size_t                     tools_size;  /* their bytes */
    ngx_atomic_t               tools_version;  /* moves with any change
                                               of them: read unlocked */
    ngx_rbtree_t               dpop;        /* ngx_http_mcp_dpop_sh_t */
    ngx_rbtree_node_t          dpop_sentinel;
    ngx_queue_t                dpop_queue;
    ngx_uint_t                 ndpop;
    size_t                     events_size;  /* the sessions' event logs:
                                                their messages' bytes */
    ngx_pid_t                  workers[NGX_HTTP_MCP_LOST_WORKERS];
                                            /* that used the zone: one
                                               gone is looked for, see
                                               ngx_http_mcp_session_lost.c */
    ngx_uint_t                 nworkers;
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
    ngx_uint_t                 max_tasks;   /* the zone's tasks, at most */
    ngx_uint_t                 max_client_tasks;  /* one owner's */
    ngx_str_t                  name;
} ngx_http_mcp_zone_t;


ngx_int_t ngx_http_mcp_session_init_zone(ngx_shm_zone_t *shm_zone,
    void *data);
void ngx_http_mcp_tools_insert(ngx_rbtree_node_t *temp,
    ngx_rbtree_node_t *node, ngx_rbtree_node_t *sentinel);

/* a session node's id, from its rbtree node (the node ends at color) */
#define NGX_HTTP_MCP_SESSION_ID_OFF                                          \
    (offsetof(ngx_rbtree_node_t, color)                                      \
     + offsetof(ngx_http_mcp_session_node_t, id))

/* called with the zone locked */
ngx_rbtree_node_t *ngx_http_mcp_session_rbtree_lookup(ngx_rbtree_t *tree,
    ngx_rbtree_key_t key, u_char *id, size_t off, size_t len);
ngx_http_mcp_session_node_t *ngx_http_mcp_session_find(
    ngx_http_mcp_zone_t *ctx, ngx_str_t *id);
ngx_uint_t ngx_http_mcp_session_retired_free(ngx_http_mcp_zone_t *ctx,
    ngx_http_mcp_session_node_t *s);
void *ngx_http_mcp_session_alloc(ngx_http_mcp_zone_t *ctx, size_t size,
    ngx_http_mcp_session_node_t *keep, ngx_log_t *log);
void ngx_http_mcp_session_wait_free(ngx_http_mcp_zone_t *ctx,
    ngx_http_mcp_wait_t *w);
ngx_int_t ngx_http_mcp_session_push_locked(ngx_http_mcp_zone_t *ctx,
    ngx_http_mcp_session_node_t *s, uint32_t id, u_char *data, size_t len,
    ngx_pid_t *owner, ngx_log_t *log);
ngx_http_mcp_stream_sh_t *ngx_http_mcp_session_stream(
    ngx_http_mcp_session_node_t *s, uint32_t id);
void ngx_http_mcp_session_stream_owner(ngx_http_mcp_zone_t *ctx,
    ngx_http_mcp_session_node_t *s, ngx_http_mcp_stream_sh_t *st,
    ngx_pid_t owner);
ngx_http_mcp_event_t *ngx_http_mcp_session_event_add(ngx_http_mcp_zone_t *ctx,
    ngx_http_mcp_session_node_t *s, size_t len, ngx_log_t *log);
ngx_http_mcp_wait_t *ngx_http_mcp_session_wait_find(
    ngx_http_mcp_session_node_t *s, ngx_pid_t owner, uint64_t request,
    u_char *id, size_t id_len);


#endif /* _NGX_HTTP_MCP_SESSION_ZONE_H_INCLUDED_ */
