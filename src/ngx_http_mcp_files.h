
/*
 * ngx_http_mcp_files_module: resources from a directory (mcp_resources,
 * ngx_http_mcp_files.c) and prompts from files (mcp_prompt,
 * ngx_http_mcp_prompts.c).  One module on the public API alone; the
 * prompt part is called by the module file, never the other way round.
 */


#ifndef _NGX_HTTP_MCP_FILES_H_INCLUDED_
#define _NGX_HTTP_MCP_FILES_H_INCLUDED_


#include "ngx_http_mcp.h"


/* completion/complete answers at most this many values */
#define NGX_HTTP_MCP_FILES_COMPLETIONS  100


typedef struct ngx_http_mcp_prompt_s  ngx_http_mcp_prompt_t;


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
