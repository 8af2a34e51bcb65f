
/*
 * ngx_http_mcp_auth_module: the OAuth 2.1 resource server in front of
 * MCP endpoints (bearer JWTs, API keys, scopes, roles), RFC 9728
 * protected resource metadata, and the input limits on tool arguments.
 * This header is what the MCP module uses of it (the JSON Schema
 * validator is a parser: ngx_http_mcp_schema.h).
 */


#ifndef _NGX_HTTP_MCP_AUTH_H_INCLUDED_
#define _NGX_HTTP_MCP_AUTH_H_INCLUDED_


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>
#include <cjson/cJSON.h>

#include "ngx_http_mcp_store.h"     /* ngx_http_mcp_auth_t */




/* NULL when authorization is off in the request's location */
ngx_http_mcp_auth_t *ngx_http_mcp_auth_get(ngx_http_request_t *r);

/*
 * Whether the caller may use a capability ("tools", "resources",
 * "prompts") and, for tools, the named tool.  NGX_OK, or NGX_DECLINED
 * with *missing_scope set to the scope that would permit it.
 */
ngx_int_t ngx_http_mcp_auth_permits(ngx_http_mcp_auth_t *auth,
    const char *capability, ngx_str_t *tool, ngx_str_t *missing_scope);

/* whether some tools need scopes of their own (mcp_auth_tool_scope) */
ngx_uint_t ngx_http_mcp_auth_tool_scoped(ngx_http_mcp_auth_t *auth);

/* sets WWW-Authenticate for a 403 insufficient_scope reply */
ngx_int_t ngx_http_mcp_auth_challenge(ngx_http_request_t *r,
    ngx_str_t *scope);

/*
 * The input limits of the location (nesting depth, string length) on a
 * tool's or prompt's arguments: NGX_OK, or NGX_DECLINED with *error.
 */
ngx_int_t ngx_http_mcp_auth_check_input(void **loc_conf, ngx_pool_t *pool,
    cJSON *arguments, u_char **error);

/* mcp_schema_format: 1 when format asserts in the location's schemas */
ngx_uint_t ngx_http_mcp_auth_format_assert(void **loc_conf);


extern ngx_module_t  ngx_http_mcp_auth_module;


#endif /* _NGX_HTTP_MCP_AUTH_H_INCLUDED_ */
