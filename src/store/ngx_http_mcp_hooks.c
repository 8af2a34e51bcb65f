
/*
 * The hook table (ngx_http_mcp_hooks.h): what a part asks of the parts
 * above it, each entry set by the part that answers, at its
 * postconfiguration.  The asking part never names those parts (it sits
 * below them); until one registers, its entry answers as if it were not
 * configured: every capability is permitted, no input limit applies,
 * format only annotates, a new task is told to nobody.  The entries are
 * functions, never configuration: a reload sets the same ones again.
 */


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_mcp_hooks.h"


static ngx_int_t ngx_http_mcp_hooks_permits(ngx_http_mcp_auth_t *auth,
    const char *capability, ngx_str_t *tool, ngx_str_t *missing_scope);
static ngx_int_t ngx_http_mcp_hooks_check_input(void **loc_conf,
    ngx_pool_t *pool, cJSON *arguments, u_char **error);
static ngx_uint_t ngx_http_mcp_hooks_format_assert(void **loc_conf);
static ngx_int_t ngx_http_mcp_hooks_task_created(ngx_http_mcp_call_t *call,
    ngx_http_mcp_task_t *t);


ngx_http_mcp_hooks_t  ngx_http_mcp_hooks = {
    ngx_http_mcp_hooks_permits,
    ngx_http_mcp_hooks_check_input,
    ngx_http_mcp_hooks_format_assert,
    ngx_http_mcp_hooks_task_created
};


static ngx_int_t
ngx_http_mcp_hooks_permits(ngx_http_mcp_auth_t *auth, const char *capability,
    ngx_str_t *tool, ngx_str_t *missing_scope)
{
    return NGX_OK;
}


static ngx_int_t
ngx_http_mcp_hooks_check_input(void **loc_conf, ngx_pool_t *pool,
    cJSON *arguments, u_char **error)
{
    return NGX_OK;
}


static ngx_uint_t
ngx_http_mcp_hooks_format_assert(void **loc_conf)
{
    return 0;
}


static ngx_int_t
ngx_http_mcp_hooks_task_created(ngx_http_mcp_call_t *call,
    ngx_http_mcp_task_t *t)
{
    return NGX_OK;
}
