
/*
 * The strict JSON scan (ngx_http_mcp_json.c): one meaning for every
 * parser.  Used by jsonrpc.c for POST bodies, by jwt.c for tokens and
 * key sets, and for what a backend (mcp_backend), a tool's location
 * (mcp_tool) or a client's cursor hands the module as JSON.
 */


#ifndef _NGX_HTTP_MCP_JSON_H_INCLUDED_
#define _NGX_HTTP_MCP_JSON_H_INCLUDED_


#include <ngx_config.h>
#include <ngx_core.h>
#include <cjson/cJSON.h>


/*
 * Scans p whole, building the tree cJSON_Parse() would make of it; but a
 * number that is the value of a member named "progressToken" keeps its
 * text as written in valuestring, NUL-terminated (cJSON leaves it NULL).
 * With ids, collects the raw text of the "id" member of the top-level
 * object, or of each object of a top-level array (ngx_str_t, an empty
 * one when absent).  NGX_OK, NGX_DECLINED (*error says why) or
 * NGX_ERROR.
 */
ngx_int_t ngx_http_mcp_json_parse(ngx_pool_t *pool, u_char *p, size_t len,
    ngx_array_t *ids, cJSON **root, const char **error);
ngx_int_t ngx_http_mcp_json_strict(ngx_pool_t *pool, u_char *p, size_t len,
    const char **error);
/* a string's text between its quotes, unescaped; NGX_ERROR: refused */
ssize_t ngx_http_mcp_json_decode(u_char *p, size_t len, u_char *dst);

/*
 * The grammar of a number, true, false or null, a byte at a time, for a
 * reader that cannot see the token whole: state is _TOKEN before its
 * first byte, then what the last call returned, until _TOKEN_END (the
 * token ended before c) or _TOKEN_BAD (not JSON).
 */
#define NGX_HTTP_MCP_JSON_TOKEN       0
#define NGX_HTTP_MCP_JSON_TOKEN_END   64
#define NGX_HTTP_MCP_JSON_TOKEN_BAD   65

ngx_uint_t ngx_http_mcp_json_token(ngx_uint_t state, u_char c);


/*
 * The _meta keys of the stateless revision.  A built member whose name
 * is one of them, written without escapes, points at it
 * (cJSON_StringIsConst), so that the edge finds them by address.
 */
extern const char  ngx_http_mcp_json_meta_version[];
extern const char  ngx_http_mcp_json_meta_caps[];
extern const char  ngx_http_mcp_json_meta_info[];
extern const char  ngx_http_mcp_json_meta_level[];

/* json_print.c: a tree's text (what cJSON_PrintUnformatted() makes) */
u_char *ngx_http_mcp_json_print(ngx_pool_t *pool, cJSON *json, size_t *len);

/*
 * The member of object named name, or NULL: what
 * cJSON_GetObjectItemCaseSensitive() finds, without its strcmp() for
 * each member passed over, most of which differ in the first byte.  A
 * request is looked up in some twenty times on its way through the
 * module, and the library's lookups were a tenth of its instructions.
 */
static ngx_inline cJSON *
ngx_http_mcp_json_get(cJSON *object, const char *name)
{
    cJSON  *item;

    if (object == NULL) {
        return NULL;
    }

    for (item = object->child; item != NULL; item = item->next) {

        if (item->string == NULL) {
            /* an array's element: cJSON's lookup stops there too */
            return NULL;
        }

        if (item->string[0] == name[0]
            && ngx_strcmp(item->string, name) == 0)
        {
            return item;
        }
    }

    return NULL;
}


/*
 * JSON's whitespace from p on: where it ends.  Bodies are mostly compact,
 * so a byte above the space ends it at the first test.
 */
static ngx_inline u_char *
ngx_http_mcp_json_ws(u_char *p, u_char *end)
{
    while (p < end && *p <= ' '
           && (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n'))
    {
        p++;
    }

    return p;
}


#endif /* _NGX_HTTP_MCP_JSON_H_INCLUDED_ */
