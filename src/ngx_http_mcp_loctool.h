
/*
 * ngx_http_mcp_loctool_module: tools and resources that nginx locations
 * serve (mcp_tool, mcp_resource ... pass=).  A module of its own on the
 * public API (ngx_http_mcp.h): the configuration half is
 * ngx_http_mcp_loctool.c, the call half (the subrequest, its capture,
 * $mcp_arg_NAME, the result) ngx_http_mcp_loctool_call.c.
 */


#ifndef _NGX_HTTP_MCP_LOCTOOL_H_INCLUDED_
#define _NGX_HTTP_MCP_LOCTOOL_H_INCLUDED_


#include "ngx_http_mcp.h"


/* one mcp_tool block or mcp_resource line; lives as long as the conf */
typedef struct {
    ngx_str_t                  name;        /* tool name, or resource URI */
    ngx_str_t                  uri;         /* pass, without its args */
    ngx_str_t                  args;        /* pass after "?" */
    ngx_str_t                  mime_type;   /* mcp_resource's mime_type= */
    ngx_uint_t                 method;      /* NGX_HTTP_GET, ... */
    ngx_str_t                  method_name;
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


ngx_int_t ngx_http_mcp_loctool_handler(ngx_http_mcp_call_t *call);
ngx_int_t ngx_http_mcp_loctool_add_variables(ngx_conf_t *cf);
ngx_int_t ngx_http_mcp_loctool_init_filters(ngx_conf_t *cf);
ngx_int_t ngx_http_mcp_loctool_find_args(ngx_conf_t *cf,
    ngx_array_t *args);


extern ngx_module_t  ngx_http_mcp_loctool_module;


#endif /* _NGX_HTTP_MCP_LOCTOOL_H_INCLUDED_ */
