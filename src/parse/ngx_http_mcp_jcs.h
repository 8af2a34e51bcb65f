
/*
 * RFC 8785, the JSON Canonicalization Scheme (ngx_http_mcp_jcs.c): one
 * text for a JSON value however it was written (members sorted by their
 * names' UTF-16 code units, no white space, strings escaped the fewest
 * ways, numbers as ECMAScript prints them), so that its SHA-256 names
 * the value: a tool definition's pin (mcp_pass_pin).  Pure code over
 * pools and cJSON trees.
 */


#ifndef _NGX_HTTP_MCP_JCS_H_INCLUDED_
#define _NGX_HTTP_MCP_JCS_H_INCLUDED_


#include <ngx_config.h>
#include <ngx_core.h>

#include <cjson/cJSON.h>


/* a digest, and as text: SHA-256 in lowercase hex */
#define NGX_HTTP_MCP_JCS_DIGEST_SIZE  32
#define NGX_HTTP_MCP_JCS_DIGEST_LEN   64


/* json's canonical text in pool, or NULL (no memory, or no JSON value) */
u_char *ngx_http_mcp_jcs(ngx_pool_t *pool, cJSON *json, size_t *len);

/* the SHA-256 of json's canonical text, 32 bytes into digest */
ngx_int_t ngx_http_mcp_jcs_digest(ngx_pool_t *pool, cJSON *json,
    u_char *digest);


#endif /* _NGX_HTTP_MCP_JCS_H_INCLUDED_ */
