
/*
 * ngx_http_mcp_loctool_module: tools and resources that nginx locations
 * serve (mcp_tool, mcp_resource ... pass=).  A module of its own on the
 * public API (ngx_http_mcp.h) and the module's subrequest client
 * (ngx_http_mcp_subrequest.h): the configuration is
 * ngx_http_mcp_loctool.c, the call's fetch ngx_http_mcp_loctool_call.c,
 * $mcp_arg_NAME ngx_http_mcp_loctool_args.c, the reply as a result
 * ngx_http_mcp_loctool_reply.c.
 */


#ifndef _NGX_HTTP_MCP_LOCTOOL_H_INCLUDED_
#define _NGX_HTTP_MCP_LOCTOOL_H_INCLUDED_


#include "ngx_http_mcp.h"
#include "ngx_http_mcp_subrequest.h"


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


/* a call's fetch and what the tool adds, one allocation in its pool */
typedef struct {
    ngx_http_mcp_fetch_state_t    fetch;        /* first: its reply, its
                                                   call */
    ngx_http_mcp_loctool_t       *tool;
    u_char                       *refused;      /* an argument $mcp_arg_
                                                   would not give, NUL-
                                                   terminated: the state
                                                   as small as when it
                                                   was one (a call's pool
                                                   block) */
    unsigned                      told:1;       /* progress for it sent */
} ngx_http_mcp_loctool_state_t;


/* ngx_http_mcp_loctool_call.c */
ngx_int_t ngx_http_mcp_loctool_handler(ngx_http_mcp_call_t *call);
/* the fetch's handler: also what marks a fetch as a call's */
void ngx_http_mcp_loctool_event(ngx_event_t *ev);

/* ngx_http_mcp_loctool_args.c */
ngx_int_t ngx_http_mcp_loctool_add_variables(ngx_conf_t *cf);

/* ngx_http_mcp_loctool.c */

/* ngx_http_mcp_loctool_reply.c */
cJSON *ngx_http_mcp_loctool_tool_result(ngx_http_mcp_loctool_state_t *st,
    const char **failure);
cJSON *ngx_http_mcp_loctool_resource_result(ngx_http_mcp_loctool_state_t *st);
ngx_str_t *ngx_http_mcp_loctool_check_args(ngx_http_mcp_call_t *call,
    ngx_http_mcp_loctool_t *tool, ngx_array_t *names);
cJSON *ngx_http_mcp_loctool_arg(ngx_http_mcp_loctool_t *tool, cJSON *args,
    ngx_str_t *name);
ngx_int_t ngx_http_mcp_loctool_case_clash(ngx_http_mcp_loctool_t *tool,
    cJSON *args, ngx_pool_t *pool, u_char **clash);
ngx_uint_t ngx_http_mcp_loctool_dot_segment(u_char *p, size_t len);


extern ngx_module_t  ngx_http_mcp_loctool_module;


#endif /* _NGX_HTTP_MCP_LOCTOOL_H_INCLUDED_ */
