
/*
 * The steps a stdio location's messages take through the edge
 * (ngx_http_mcp_stdio_steps_t): until the edge sets them, a POST goes to
 * the child as it came and the reply to the client as the child wrote
 * it, so the module never tests for NULL.
 */


#include "ngx_http_mcp_stdio.h"


static ngx_int_t ngx_http_mcp_stdio_pass_request(ngx_http_request_t *r,
    ngx_str_t *body, ngx_int_t *rc);
static ngx_int_t ngx_http_mcp_stdio_pass_reply(ngx_http_request_t *r,
    cJSON *reply);
static ngx_uint_t ngx_http_mcp_stdio_pass_reads(ngx_http_request_t *r);


ngx_http_mcp_stdio_steps_t  ngx_http_mcp_stdio_steps = {
    ngx_http_mcp_stdio_pass_request,
    ngx_http_mcp_stdio_pass_reply,
    ngx_http_mcp_stdio_pass_reads
};


static ngx_int_t
ngx_http_mcp_stdio_pass_request(ngx_http_request_t *r, ngx_str_t *body,
    ngx_int_t *rc)
{
    return NGX_OK;
}


static ngx_int_t
ngx_http_mcp_stdio_pass_reply(ngx_http_request_t *r, cJSON *reply)
{
    return NGX_OK;
}


static ngx_uint_t
ngx_http_mcp_stdio_pass_reads(ngx_http_request_t *r)
{
    return 0;
}
