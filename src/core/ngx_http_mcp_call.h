
/*
 * ngx_http_mcp_module: what a call is inside the module.  Handlers see
 * ngx_http_mcp_call_t as an opaque type and use the accessors of
 * ngx_http_mcp.h, so that this structure can change without breaking a
 * module built against an older header.
 */


#ifndef _NGX_HTTP_MCP_CALL_H_INCLUDED_
#define _NGX_HTTP_MCP_CALL_H_INCLUDED_


#include "ngx_http_mcp.h"
#include "ngx_http_mcp_w3c.h"


typedef struct ngx_http_mcp_ctx_s   ngx_http_mcp_ctx_t;
typedef struct ngx_http_mcp_call_edge_s  ngx_http_mcp_call_edge_t;


struct ngx_http_mcp_call_s {
    ngx_pool_t                *pool;            /* the call's own */
    ngx_log_t                 *log;
    ngx_http_mcp_reqctx_t     *rctx;

    ngx_str_t                  method;
    cJSON                     *params;          /* NULL when absent */
    cJSON                     *arguments;       /* params.arguments */
    cJSON                     *progress_token;  /* params._meta.
                                                   progressToken */
    ngx_http_mcp_entry_t      *entry;           /* addressed entry */
    ngx_str_t                  uri;             /* resources/read */
    ngx_array_t               *vars;            /* template variables,
                                                   ngx_keyval_t */
    void                      *data;            /* the handler's own */
    cJSON                     *inputs;          /* params.inputResponses */
    cJSON                     *state;           /* opened requestState,
                                                   owned */
    ngx_array_t               *param_headers;   /* Mcp-Param-* of a
                                                   stateless tools/call,
                                                   ngx_keyval_t; NULL:
                                                   none */
    ngx_int_t                (*finish)(ngx_http_mcp_call_t *call,
                                       cJSON *result);
                                                /* what the method adds
                                                   to every result */
    ngx_int_t                (*divert)(ngx_http_mcp_call_t *call,
                                       cJSON *reply);
                                                /* a task's: its response
                                                   goes to the task, not
                                                   to the client; NGX_OK,
                                                   or NGX_DECLINED: send
                                                   it as usual */
    ngx_int_t                (*relay)(ngx_http_mcp_call_t *call,
                                      cJSON *message);
                                                /* a 2025 task's: its
                                                   requests to the client
                                                   (message) go through
                                                   the task, which hears
                                                   of each answer (NULL) */
    void                     (*quit)(ngx_http_mcp_call_t *call);
                                                /* an endless call's: ends
                                                   it when the worker
                                                   exits */
    void                      *task;            /* the task's own */
    ngx_str_t                  client_key;      /* mcp_session_zone's
                                                   per_client value */
    ngx_str_t                  correlation;     /* its POST's $request_id,
                                                   for its errors, once
                                                   asked: see ngx_http_
                                                   mcp_call_correlation() */

    /* owned by the module */
    ngx_http_mcp_ctx_t        *ctx;             /* its POST, while it lasts */
    ngx_http_request_t        *request;         /* that POST's request */
    ngx_http_mcp_call_edge_t  *edge;            /* the POST's hooks */
    void                      *conf;            /* the location's */
    void                     **loc_conf;        /* every module's, there */
    cJSON                     *message;         /* the request */
    cJSON                     *id;
    ngx_uint_t                 index;           /* in ctx->msgs */
    uint32_t                   stream;          /* SSE stream, 0: none */
    ngx_queue_t                queue;           /* the worker's live calls */
    ngx_array_t               *requests;        /* to the client, pending */
    u_char                    *id_text;         /* the id as JSON */
    cJSON                     *token_raw;       /* an integer token, as
                                                   the client wrote it */
    size_t                     id_len;
    ngx_http_mcp_trace_t       trace;           /* its message's, in its
                                                   pool: for what it asks
                                                   on its behalf */
    uint64_t                   started;         /* for metrics, or 0 */
    unsigned                   done:1;
    unsigned                   running:1;
    unsigned                   live:1;          /* in the worker's list */
    unsigned                   endless:1;       /* never ends by itself
                                                   (subscriptions/listen):
                                                   its stream ends at once,
                                                   after what quit sends,
                                                   when the worker exits */
    unsigned                   initialized:1;   /* its session's client
                                                   sent notifications/
                                                   initialized */
    unsigned                   holding:1;       /* requests wait for it */
};


/* a call of the stateless revision (2026-07-28): no session behind it */
#define ngx_http_mcp_call_stateless(call)                                    \
    ((call)->rctx->version >= NGX_HTTP_MCP_VSTATELESS)


#endif /* _NGX_HTTP_MCP_CALL_H_INCLUDED_ */
