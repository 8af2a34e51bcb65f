
/*
 * ngx_http_mcp_files_module: resources from a directory (mcp_resources,
 * ngx_http_mcp_files.c, ngx_http_mcp_files_read.c) and prompts from
 * files (mcp_prompt, ngx_http_mcp_prompts.c).  One module on the public
 * API alone; the module file calls the parts, never the other way round
 * (files_read.c and prompts.c know the module only by its structures).
 */


#ifndef _NGX_HTTP_MCP_FILES_H_INCLUDED_
#define _NGX_HTTP_MCP_FILES_H_INCLUDED_


#include "ngx_http_mcp.h"


/* completion/complete answers at most this many values */
#define NGX_HTTP_MCP_FILES_COMPLETIONS  100
#define NGX_HTTP_MCP_FILES_DEPTH     32
#define NGX_HTTP_MCP_FILES_PATH      4096


typedef struct {
    ngx_str_t                  path;      /* full, NUL-terminated */
    ngx_str_t                  rel;       /* in path, after the root */
    ngx_str_t                  uri;
    cJSON                     *desc;      /* the listing object */
    ino_t                      ino;
    off_t                      size;
    time_t                     mtime;
    long                       mtime_ns;
} ngx_http_mcp_file_t;


typedef struct {
    ngx_str_t                  root;      /* no trailing slash, NUL */
    ngx_str_t                  prefix;    /* uri= */
    size_t                     max_size;
    ngx_msec_t                 watch;     /* 0: off */
    ngx_msec_t                 polled;    /* when it was last polled */
    ngx_array_t                files;     /* ngx_http_mcp_file_t */
    ngx_http_core_loc_conf_t  *clcf;      /* types, default_type */
} ngx_http_mcp_tree_t;


/* a set that serves our entries: its completion handler before ours */
typedef struct {
    ngx_http_mcp_set_t        *set;
    ngx_http_mcp_handler_pt    next;
} ngx_http_mcp_files_set_t;


typedef struct {
    ngx_array_t                trees;     /* ngx_http_mcp_tree_t * */
    ngx_array_t                prompts;   /* ngx_http_mcp_prompt_t * */
    ngx_array_t                sets;      /* ngx_http_mcp_files_set_t */
    ngx_msec_t                 watch;     /* the shortest interval */
    ngx_event_t                timer;
} ngx_http_mcp_files_main_conf_t;


typedef struct ngx_http_mcp_prompt_s  ngx_http_mcp_prompt_t;


/* ngx_http_mcp_files_read.c: resources/read, the MIME type, watch= */
ngx_int_t ngx_http_mcp_files_read(ngx_http_mcp_call_t *call);
void ngx_http_mcp_files_type(ngx_http_mcp_tree_t *tree, ngx_str_t *path,
    ngx_str_t *type);
void ngx_http_mcp_files_poll(ngx_event_t *ev);
void ngx_http_mcp_files_stamp(ngx_http_mcp_file_t *f, ngx_file_info_t *fi);


/* the "mcp_prompt" directive: the prompt it added to set, or NULL */
ngx_http_mcp_prompt_t *ngx_http_mcp_prompt_conf(ngx_conf_t *cf,
    ngx_http_mcp_set_t *set);
/* completion/complete of one of prompt's arguments */
ngx_int_t ngx_http_mcp_prompt_complete(ngx_http_mcp_call_t *call,
    ngx_http_mcp_prompt_t *prompt);

/*
 * Ends a completion/complete call with the values (n of them) that begin
 * with the argument's value: {"completion": {"values": [...], "total",
 * "hasMore"}}.  The files part completes its template's path with it.
 */
ngx_int_t ngx_http_mcp_prompt_values(ngx_http_mcp_call_t *call,
    ngx_str_t *values, ngx_uint_t n);
/* completion/complete: params.argument's name and value */
void ngx_http_mcp_prompt_argument(ngx_http_mcp_call_t *call,
    ngx_str_t *name, ngx_str_t *value);

/* whether text is valid UTF-8 without NUL, what a JSON string may hold */
ngx_uint_t ngx_http_mcp_prompt_utf8(u_char *p, size_t len);


#endif /* _NGX_HTTP_MCP_FILES_H_INCLUDED_ */
