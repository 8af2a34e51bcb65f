
/*
 * Custom parameter headers (MCP 2026-07-28, SEP-2243): a property of a
 * tool's inputSchema may carry "x-mcp-header": "Region", and a client
 * calling the tool over HTTP then mirrors the argument's value into an
 * Mcp-Param-Region header, so that proxies can route on it without the
 * body.  The server must refuse a call whose headers do not say what its
 * body says.  Pure code over pools, strings and cJSON trees: the HTTP
 * edge collects the headers, dispatch checks them against the tool.
 */


#ifndef _NGX_HTTP_MCP_PARAM_H_INCLUDED_
#define _NGX_HTTP_MCP_PARAM_H_INCLUDED_


#include <ngx_config.h>
#include <ngx_core.h>
#include <cjson/cJSON.h>


#define NGX_HTTP_MCP_PARAM_PREFIX  "Mcp-Param-"


/*
 * A header's value as the client meant it: "=?base64?<payload>?=" is
 * decoded, anything else is literal.  NGX_OK: *out is the value (pool
 * memory, or value's own); NGX_DECLINED: the payload is not canonical
 * Base64 (RFC 4648 alphabet, padded to a multiple of 4, zero pad bits);
 * NGX_ABORT: a literal value with a control character (HTAB aside),
 * which a client must send in Base64; NGX_ERROR: out of memory.
 */
ngx_int_t ngx_http_mcp_param_decode(ngx_pool_t *pool, ngx_str_t *value,
    ngx_str_t *out);

/*
 * A value for a header: as it is, or "=?base64?<payload>?=" when a
 * header cannot carry it so.  NGX_OK, or NGX_ERROR: out of memory.
 */
ngx_int_t ngx_http_mcp_param_encode(ngx_pool_t *pool, ngx_str_t *value,
    ngx_str_t *out);

/*
 * Checks the headers (ngx_keyval_t: the name after "Mcp-Param-", the
 * value; NULL: none) against the arguments (NULL: none) of a call of a
 * tool with the schema.  Every annotated argument present and not null
 * needs exactly one header of its name (case-insensitive) whose value
 * is the argument's: the string itself, "true" or "false", or a number
 * equal to it.  A header for an absent or null argument is refused too.
 * NGX_OK; NGX_DECLINED: *error says which header and why; NGX_ERROR.
 */
ngx_int_t ngx_http_mcp_param_check(ngx_pool_t *pool, cJSON *schema,
    cJSON *arguments, ngx_array_t *headers, u_char **error);

/*
 * Whether a tool's schema declares its headers as SEP-2243 wants them:
 * each x-mcp-header a non-empty HTTP token, unique regardless of case,
 * on a property of type string, integer or boolean (or that and null).
 * Clients drop a tool that breaks these rules, so a server should never
 * list one.  NGX_OK, and *declared says how many it declares;
 * NGX_DECLINED: *error says what is wrong; NGX_ERROR.
 */
ngx_int_t ngx_http_mcp_param_schema(ngx_pool_t *pool, cJSON *schema,
    ngx_uint_t *declared, u_char **error);


#endif /* _NGX_HTTP_MCP_PARAM_H_INCLUDED_ */
