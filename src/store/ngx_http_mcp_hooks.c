
/*
 * The hook table (ngx_http_mcp_hooks.h): what a part asks of the parts
 * above it, each entry set by the part that answers, at its
 * postconfiguration.  The asking part never names those parts (it sits
 * below them); until one registers, its entry answers as if it were not
 * configured: a woken or exiting worker holds nothing, every capability
 * is permitted, no input limit applies, format only annotates, a new
 * task, a GET's stream, a DELETE are told to nobody.  The entries are
 * functions, never configuration: a reload sets the same ones again.
 */


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_mcp_hooks.h"


static void ngx_http_mcp_hooks_nothing(void);
static ngx_int_t ngx_http_mcp_hooks_stream_poke(uint32_t token);
static void ngx_http_mcp_hooks_quit(ngx_uint_t deadline);
static ngx_uint_t ngx_http_mcp_hooks_none(void);
static ngx_int_t ngx_http_mcp_hooks_permits(ngx_http_mcp_auth_t *auth,
    const char *capability, ngx_str_t *tool, ngx_str_t *missing_scope);
static ngx_int_t ngx_http_mcp_hooks_check_input(void **loc_conf,
    ngx_pool_t *pool, cJSON *arguments, u_char **error);
static ngx_uint_t ngx_http_mcp_hooks_format_assert(void **loc_conf);
static ngx_int_t ngx_http_mcp_hooks_task_created(ngx_http_mcp_call_t *call,
    ngx_http_mcp_task_t *t);
static void ngx_http_mcp_hooks_get_stream(ngx_http_request_t *r,
    ngx_str_t *sid, uint32_t id, ngx_uint_t open);
static void ngx_http_mcp_hooks_session_deleted(ngx_http_request_t *r,
    ngx_str_t *sid);


ngx_http_mcp_hooks_t  ngx_http_mcp_hooks = {
    ngx_http_mcp_hooks_nothing,
    ngx_http_mcp_hooks_nothing,
    ngx_http_mcp_hooks_nothing,
    ngx_http_mcp_hooks_nothing,
    ngx_http_mcp_hooks_stream_poke,
    ngx_http_mcp_hooks_quit,
    ngx_http_mcp_hooks_quit,
    ngx_http_mcp_hooks_quit,
    ngx_http_mcp_hooks_none,
    ngx_http_mcp_hooks_none,

    ngx_http_mcp_hooks_permits,
    ngx_http_mcp_hooks_check_input,
    ngx_http_mcp_hooks_format_assert,
    ngx_http_mcp_hooks_task_created,

    ngx_http_mcp_hooks_get_stream,
    ngx_http_mcp_hooks_session_deleted
};


static void
ngx_http_mcp_hooks_nothing(void)
{
}


static ngx_int_t
ngx_http_mcp_hooks_stream_poke(uint32_t token)
{
    return NGX_DECLINED;
}


static void
ngx_http_mcp_hooks_quit(ngx_uint_t deadline)
{
}


static ngx_uint_t
ngx_http_mcp_hooks_none(void)
{
    return 0;
}


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


static void
ngx_http_mcp_hooks_get_stream(ngx_http_request_t *r, ngx_str_t *sid,
    uint32_t id, ngx_uint_t open)
{
}


static void
ngx_http_mcp_hooks_session_deleted(ngx_http_request_t *r, ngx_str_t *sid)
{
}
