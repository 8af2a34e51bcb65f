
/*
 * The module's one subrequest client (ngx_http_mcp_subrequest.c): a
 * "fetch" is a background subrequest to a location (its method, body and
 * headers), whose reply a header and a body filter of ours catch in
 * memory, bounded, and never pass on.  No internal redirect is followed:
 * the reply is the location's the fetch names, or it fails.  News of it
 * (the header, the end, a reply too big, the timeout, the request gone)
 * goes to the caller's handler from a posted event.  Used by location
 * tools and resources (src/providers), mcp_backend (src/aggregate) and
 * the JWKS of mcp_auth_jwt_key_request (src/auth).  A part of src/http
 * of its own: it needs nothing of the context.
 */


#ifndef _NGX_HTTP_MCP_SUBREQUEST_H_INCLUDED_
#define _NGX_HTTP_MCP_SUBREQUEST_H_INCLUDED_


#include "ngx_http_mcp.h"
#include "ngx_http_mcp_w3c.h"


/* a stream's unread events, at most, in multiples of the fetch's bound */
#define NGX_HTTP_MCP_FETCH_BURST  8

/*
 * A stream's bytes taken in before its reader had them, at most (more
 * waits in the upstream's buffer and socket): a backend that writes
 * faster than the events are relayed costs no more than this
 */
#define NGX_HTTP_MCP_FETCH_WINDOW  65536


typedef struct ngx_http_mcp_fetch_link_s  ngx_http_mcp_fetch_link_t;


/* what a fetch asks of a location */
typedef struct {
    ngx_str_t                     uri;
    ngx_str_t                     args;
    ngx_uint_t                    method;
    ngx_str_t                     method_name;
    ngx_str_t                     body;         /* in the request's pool */
    ngx_str_t                     content_type;  /* the body's; empty:
                                                    application/json */
    ngx_table_elt_t              *headers;      /* added, in the
                                                   request's pool */
    ngx_uint_t                    nheaders;
    ngx_http_mcp_trace_t         *trace;        /* the call's, as headers;
                                                   the client's never go */
    size_t                        max;          /* the reply's bound; 0:
                                                   the location's
                                                   subrequest_output_
                                                   buffer_size */
    ngx_msec_t                    timeout;      /* 0: none */
    size_t                        size;         /* of the state, 0: its
                                                   own; more: the owner's
                                                   struct that begins
                                                   with it, one
                                                   allocation */
    ngx_event_handler_pt          handler;      /* the state's event;
                                                   NULL: nobody waits for
                                                   the reply (send()) */
    void                         *data;         /* its data; NULL: the
                                                   state */
    unsigned                      copy_headers:1;  /* the request's own,
                                                      but the client's
                                                      credentials */
    unsigned                      want_session:1;  /* capture the reply's
                                                      Mcp-Session-Id */
    unsigned                      stream:1;     /* an SSE reply's news
                                                   as its body comes */
} ngx_http_mcp_fetch_t;


/* the fetch's side, in its owner's pool: the reply as it comes */
typedef struct {
    ngx_http_mcp_call_t          *call;         /* NULL: a fetch without
                                                   a call */
    ngx_pool_t                   *pool;         /* the call's, or the
                                                   fetch's owner's */
    ngx_http_mcp_fetch_link_t    *link;         /* NULL: cut */
    ngx_event_t                   timer;        /* f->timeout */
    ngx_event_t                   event;        /* posted: news */
    size_t                        max;
    ngx_uint_t                    status;
    ngx_str_t                     type;         /* Content-Type, bare */
    u_char                       *body;
    size_t                        len;
    size_t                        size;
    size_t                        fresh;        /* a stream's, taken in
                                                   since its reader ran */
    ngx_str_t                     session_id;   /* Mcp-Session-Id of the
                                                   reply, with
                                                   want_session */
    unsigned                      header:1;
    unsigned                      done:1;
    unsigned                      failed:1;
    unsigned                      too_big:1;
    unsigned                      timed_out:1;
    unsigned                      gone:1;       /* the request went */
    unsigned                      want_session:1;
    unsigned                      stream:1;     /* an SSE reply: news of
                                                   every part of the
                                                   body too, max bounds
                                                   an event (the reader
                                                   checks) */
    unsigned                      redirected:1; /* and refused */
    unsigned                      began:1;      /* a stream's start (a
                                                   BOM) is read */
    unsigned                      unreplied:1;  /* 502: the upstream's
                                                   connection, a kept
                                                   one reused, failed
                                                   before a byte of the
                                                   reply */
} ngx_http_mcp_fetch_state_t;


/* the request's side, in its pool */
struct ngx_http_mcp_fetch_link_s {
    ngx_http_mcp_fetch_state_t    *state;       /* NULL: cut */
    ngx_http_request_t            *sr;
    ngx_event_t                    kick;        /* posted: run it */
    ngx_event_t                    more;        /* posted: a stream's
                                                   reader took its events,
                                                   the upstream goes on */
    ngx_chain_t                   *held;        /* a stream's reply not
                                                   taken in yet: the
                                                   upstream's buffers */
    ngx_http_post_subrequest_t     ps;
    unsigned                       done:1;      /* the subrequest ended */
};


/* a fetch of r, its state in pool (whose cleanup closes it) */
ngx_http_mcp_fetch_state_t *ngx_http_mcp_fetch(ngx_http_request_t *r,
    ngx_pool_t *pool, ngx_log_t *log, ngx_http_mcp_fetch_t *f);
/* the same from the call's POST, in the call's pool; NULL: no POST */
ngx_http_mcp_fetch_state_t *ngx_http_mcp_fetch_call(
    ngx_http_mcp_call_t *call, ngx_http_mcp_fetch_t *f);
/* a fetch nobody waits for: its reply is dropped */
ngx_int_t ngx_http_mcp_fetch_send(ngx_http_request_t *r,
    ngx_http_mcp_fetch_t *f);
/* a stream's reader took the whole events: the rest of the reply may come */
void ngx_http_mcp_fetch_taken(ngx_http_mcp_fetch_state_t *st);
/* no longer wanted: the subrequest aborted, no more news */
void ngx_http_mcp_fetch_close(ngx_http_mcp_fetch_state_t *st);
/* the fetch a subrequest (or a subrequest of it) serves, or NULL */
ngx_http_mcp_fetch_state_t *ngx_http_mcp_fetch_of(ngx_http_request_t *r);
/* r is a fetch's own subrequest, whether its reply is waited for or not */
ngx_uint_t ngx_http_mcp_fetched(ngx_http_request_t *r);
/* the capture filters and the redirect handler, at postconfiguration */
ngx_int_t ngx_http_mcp_subrequest_init(ngx_conf_t *cf);


#endif /* _NGX_HTTP_MCP_SUBREQUEST_H_INCLUDED_ */
