
/*
 * JSON Schema 2020-12 validation (ngx_http_mcp_schema*.c): tool arguments
 * against a tool's inputSchema, a result against its outputSchema.  Pure
 * code over pools and cJSON trees; the validator's parts share
 * ngx_http_mcp_schema_internal.h among themselves.
 */


#ifndef _NGX_HTTP_MCP_SCHEMA_H_INCLUDED_
#define _NGX_HTTP_MCP_SCHEMA_H_INCLUDED_


#include <ngx_config.h>
#include <ngx_core.h>
#include <cjson/cJSON.h>


/*
 * JSON Schema 2020-12 validation: NGX_OK valid, NGX_DECLINED invalid
 * (*error says what and where), NGX_ERROR.
 */
ngx_int_t ngx_http_mcp_schema_validate(ngx_pool_t *pool, cJSON *schema,
    cJSON *instance, u_char **error);

/*
 * A schema compiled once, when it is configured: the keywords of each of
 * its objects found in advance, by the object's address, so that a
 * validation (every tools/call) reads them instead of walking each
 * object's members for them.  The tree must not change while it is used.
 */
typedef struct ngx_http_mcp_schema_kw_s  ngx_http_mcp_schema_kw_t;

typedef struct ngx_http_mcp_schema_s {
    cJSON                      *root;
    ngx_uint_t                  mask;       /* slots - 1 */
    ngx_http_mcp_schema_kw_t  **slots;      /* NULL: none */
} ngx_http_mcp_schema_t;


/*
 * What a caller may ask beyond that: format as an assertion; a loader of
 * other documents by absolute URI (NULL: a $ref to one passes); the name
 * the error's path starts with (NULL: "arguments"); the schema's compiled
 * form (NULL: none; else compiled from the schema validated with it).
 */
typedef struct {
    ngx_uint_t                  format_assert;
    cJSON                    *(*load)(void *data, const char *uri);
    void                       *data;
    const char                 *path;
    ngx_http_mcp_schema_t      *compiled;
} ngx_http_mcp_schema_opts_t;

ngx_int_t ngx_http_mcp_schema_validate_opts(ngx_pool_t *pool,
    cJSON *schema, cJSON *instance, ngx_http_mcp_schema_opts_t *opts,
    u_char **error);

/*
 * The schema compiled, in pool (configuration time): NULL when memory ran
 * out; a schema that is no object, or too big to be worth it, has no
 * slots and is validated as it is.
 */
ngx_http_mcp_schema_t *ngx_http_mcp_schema_compile(ngx_pool_t *pool,
    cJSON *schema);

/* NULL: $schema absent or 2020-12; else the other dialect it names */
const char *ngx_http_mcp_schema_dialect(cJSON *schema);
ngx_int_t ngx_http_mcp_schema_check_limits(cJSON *json, ngx_uint_t depth,
    ngx_uint_t max_depth, size_t max_string, const char **error);


#endif /* _NGX_HTTP_MCP_SCHEMA_H_INCLUDED_ */
