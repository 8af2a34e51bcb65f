
/*
 * ngx_http_mcp_fixtures_module: registers the test sets ("mcp_builtin
 * everything", "mcp_builtin validation").  A module of its own that sees
 * only the public API, so that the API is proven from outside and a
 * production build can leave the fixtures out (MCP_FIXTURES=0).  It
 * comes after ngx_http_mcp_module in the .so, though any order works:
 * nginx creates every module's main configuration before it calls the
 * first preconfiguration.
 */


#include "ngx_http_mcp_fixtures.h"


#if (NGX_HTTP_MCP_API_VERSION != 1)
#error "written for version 1 of the ngx_http_mcp_module API"
#endif


static ngx_int_t ngx_http_mcp_fixtures_preconfiguration(ngx_conf_t *cf);


static ngx_http_module_t  ngx_http_mcp_fixtures_module_ctx = {
    ngx_http_mcp_fixtures_preconfiguration, /* preconfiguration */
    NULL,                                  /* postconfiguration */

    NULL,                                  /* create main configuration */
    NULL,                                  /* init main configuration */

    NULL,                                  /* create server configuration */
    NULL,                                  /* merge server configuration */

    NULL,                                  /* create location configuration */
    NULL                                   /* merge location configuration */
};


ngx_module_t  ngx_http_mcp_fixtures_module = {
    NGX_MODULE_V1,
    &ngx_http_mcp_fixtures_module_ctx,     /* module context */
    NULL,                                  /* module directives */
    NGX_HTTP_MODULE,                       /* module type */
    NULL,                                  /* init master */
    NULL,                                  /* init module */
    NULL,                                  /* init process */
    NULL,                                  /* init thread */
    NULL,                                  /* exit thread */
    NULL,                                  /* exit process */
    NULL,                                  /* exit master */
    NGX_MODULE_V1_PADDING
};


static ngx_int_t
ngx_http_mcp_fixtures_preconfiguration(ngx_conf_t *cf)
{
    if (ngx_http_mcp_api_version() != NGX_HTTP_MCP_API_VERSION) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "ngx_http_mcp_fixtures_module needs version %d "
                           "of the MCP API, the loaded module has %ui",
                           NGX_HTTP_MCP_API_VERSION,
                           ngx_http_mcp_api_version());
        return NGX_ERROR;
    }

    if (ngx_http_mcp_add_provider(cf, "everything",
                                  ngx_http_mcp_everything_init)
        != NGX_OK)
    {
        return NGX_ERROR;
    }

    return ngx_http_mcp_add_provider(cf, "validation",
                                     ngx_http_mcp_validation_set);
}
