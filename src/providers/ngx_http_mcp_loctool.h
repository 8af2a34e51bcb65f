
/*
 * ngx_http_mcp_loctool_module: tools and resources that nginx locations
 * serve (mcp_tool, mcp_resource ... pass=).  A module of its own on the
 * public API (ngx_http_mcp.h): the configuration is
 * ngx_http_mcp_loctool.c, the call's subrequest
 * ngx_http_mcp_loctool_call.c, the capture of its reply and
 * $mcp_arg_NAME ngx_http_mcp_loctool_capture.c, the reply as a result
 * ngx_http_mcp_loctool_reply.c.
 */


#ifndef _NGX_HTTP_MCP_LOCTOOL_H_INCLUDED_
#define _NGX_HTTP_MCP_LOCTOOL_H_INCLUDED_


#include "ngx_http_mcp.h"


/* a stream's unread events, at most, in multiples of the fetch's bound */
#define NGX_HTTP_MCP_LOCTOOL_BURST  8


/* one mcp_tool block or mcp_resource line; lives as long as the conf */
typedef struct {
    ngx_str_t                  name;        /* tool name, or resource URI */
    ngx_str_t                  uri;         /* pass, without its args */
    ngx_str_t                  args;        /* pass after "?" */
    ngx_str_t                  mime_type;   /* mcp_resource's mime_type= */
    ngx_uint_t                 method;      /* NGX_HTTP_GET, ... */
    ngx_str_t                  method_name;
    ngx_array_t                props;       /* the input schema's
                                               properties, its spelling,
                                               NUL-terminated ngx_str_t */
    unsigned                   structured:1;  /* has an output_schema */
    unsigned                   resource:1;
} ngx_http_mcp_loctool_t;


typedef struct {
    ngx_array_t                args;        /* the NAMEs of every
                                               $mcp_arg_NAME the
                                               configuration uses,
                                               ngx_str_t */
} ngx_http_mcp_loctool_main_conf_t;


typedef struct {
    ngx_msec_t                 timeout;     /* mcp_tool_timeout */
    size_t                     max_size;    /* mcp_tool_max_size */
    ngx_array_t               *args;        /* the main conf's */
} ngx_http_mcp_loctool_loc_conf_t;


typedef struct ngx_http_mcp_loctool_link_s  ngx_http_mcp_loctool_link_t;


/* the call's side, in the call's pool */
typedef struct {
    ngx_http_mcp_call_t          *call;         /* NULL: a fetch without
                                                   a call */
    ngx_pool_t                   *pool;         /* the call's, or the
                                                   fetch's owner's */
    ngx_http_mcp_loctool_t       *tool;
    ngx_http_mcp_loctool_link_t  *link;         /* NULL: cut */
    ngx_event_t                   timer;        /* mcp_tool_timeout */
    ngx_event_t                   event;        /* posted: news */
    size_t                        max;
    ngx_uint_t                    status;
    ngx_str_t                     type;         /* Content-Type, bare */
    u_char                       *body;
    size_t                        len;
    size_t                        size;
    ngx_str_t                     refused;      /* an argument $mcp_arg_
                                                   would not give */
    ngx_str_t                     session_id;   /* Mcp-Session-Id of the
                                                   reply, with
                                                   want_session */
    unsigned                      header:1;
    unsigned                      told:1;       /* progress for it sent */
    unsigned                      done:1;
    unsigned                      failed:1;
    unsigned                      too_big:1;
    unsigned                      gone:1;       /* the POST went */
    unsigned                      want_session:1;
    unsigned                      stream:1;     /* an SSE reply: news of
                                                   every part of the
                                                   body too, max bounds
                                                   an event (the reader
                                                   checks) */
    unsigned                      redirected:1; /* and refused: the
                                                   fetch's no_redirect */
    unsigned                      began:1;      /* a stream's start (a
                                                   BOM) is read */
} ngx_http_mcp_loctool_state_t;


/* what ngx_http_mcp_loctool_fetch() asks of a location */
typedef struct {
    ngx_str_t                     uri;
    ngx_str_t                     args;
    ngx_uint_t                    method;
    ngx_str_t                     method_name;
    ngx_str_t                     body;         /* in the POST's pool */
    ngx_table_elt_t              *headers;      /* added, in the POST's
                                                   pool */
    ngx_uint_t                    nheaders;
    size_t                        max;          /* the reply's bound */
    ngx_event_handler_pt          handler;      /* the state's event;
                                                   NULL: nobody waits for
                                                   the reply (send()) */
    void                         *data;         /* its data */
    unsigned                      copy_headers:1;  /* the POST's own, but
                                                      the client's
                                                      credentials */
    unsigned                      want_session:1;  /* capture the reply's
                                                      Mcp-Session-Id */
    unsigned                      stream:1;     /* an SSE reply's news
                                                   as its body comes */
    unsigned                      no_redirect:1;   /* a reply from another
                                                      location than uri's
                                                      fails the fetch */
} ngx_http_mcp_loctool_fetch_t;


/* the request's side, in the POST's pool */
struct ngx_http_mcp_loctool_link_s {
    ngx_http_mcp_loctool_state_t  *state;       /* NULL: cut */
    ngx_http_request_t            *sr;
    ngx_event_t                    kick;        /* posted: run it */
    ngx_http_post_subrequest_t     ps;
    unsigned                       done:1;      /* the subrequest ended */
    unsigned                       no_redirect:1;  /* fetch's */
};


/* ngx_http_mcp_loctool_call.c */
ngx_int_t ngx_http_mcp_loctool_handler(ngx_http_mcp_call_t *call);
/* the subrequest's post_subrequest handler: also what marks it as ours */
ngx_int_t ngx_http_mcp_loctool_done(ngx_http_request_t *sr, void *data,
    ngx_int_t rc);
ngx_http_mcp_loctool_state_t *ngx_http_mcp_loctool_fetch(
    ngx_http_mcp_call_t *call, ngx_http_mcp_loctool_fetch_t *f);
ngx_http_mcp_loctool_state_t *ngx_http_mcp_loctool_fetch_request(
    ngx_http_request_t *r, ngx_pool_t *pool, ngx_log_t *log,
    ngx_http_mcp_loctool_fetch_t *f);
void ngx_http_mcp_loctool_fetch_close(ngx_http_mcp_loctool_state_t *st);
ngx_int_t ngx_http_mcp_loctool_send(ngx_http_request_t *r,
    ngx_http_mcp_loctool_fetch_t *f);

/* ngx_http_mcp_loctool_capture.c */
ngx_int_t ngx_http_mcp_loctool_add_variables(ngx_conf_t *cf);
ngx_int_t ngx_http_mcp_loctool_init_filters(ngx_conf_t *cf);
ngx_int_t ngx_http_mcp_loctool_redirect_handler(ngx_http_request_t *r);

/* ngx_http_mcp_loctool.c */
ngx_int_t ngx_http_mcp_loctool_find_args(ngx_conf_t *cf,
    ngx_array_t *args);

/* ngx_http_mcp_loctool_reply.c */
cJSON *ngx_http_mcp_loctool_tool_result(ngx_http_mcp_loctool_state_t *st,
    const char **failure);
cJSON *ngx_http_mcp_loctool_resource_result(ngx_http_mcp_loctool_state_t *st);
cJSON *ngx_http_mcp_loctool_error_result(const char *text);
ngx_str_t *ngx_http_mcp_loctool_check_args(ngx_http_mcp_call_t *call,
    ngx_http_mcp_loctool_t *tool, ngx_array_t *names);
cJSON *ngx_http_mcp_loctool_arg(ngx_http_mcp_loctool_t *tool, cJSON *args,
    ngx_str_t *name);
ngx_int_t ngx_http_mcp_loctool_case_clash(ngx_http_mcp_loctool_t *tool,
    cJSON *args, ngx_pool_t *pool, u_char **clash);
ngx_uint_t ngx_http_mcp_loctool_dot_segment(u_char *p, size_t len);


extern ngx_module_t  ngx_http_mcp_loctool_module;


#endif /* _NGX_HTTP_MCP_LOCTOOL_H_INCLUDED_ */
