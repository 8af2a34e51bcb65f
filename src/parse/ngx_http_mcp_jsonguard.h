
/*
 * The JSON guard (ngx_http_mcp_jsonguard.c): a JSON reply under mcp_pass's
 * tool policy, read as it streams for the ids of its messages, so that
 * only replies to the POST's own requests pass.  Pure code over pools
 * and bytes; the POST's messages are ngx_http_mcp_msg_t
 * (ngx_http_mcp_jsonrpc.h).
 */


#ifndef _NGX_HTTP_MCP_JSONGUARD_H_INCLUDED_
#define _NGX_HTTP_MCP_JSONGUARD_H_INCLUDED_


#include <ngx_config.h>
#include <ngx_core.h>


#define NGX_HTTP_MCP_JSONGUARD_DEPTH  128
#define NGX_HTTP_MCP_JSONGUARD_TOKEN  256

typedef struct {
    ngx_array_t               *msgs;        /* the POST's messages */
    ngx_uint_t                 state;
    ngx_uint_t                 after;       /* a string's state after it */
    ngx_uint_t                 depth;
    ngx_uint_t                 msg_depth;   /* a message's object: 1 or 2 */
    ngx_uint_t                 n;           /* a BOM's or \u escape's bytes
                                               read; a number's or
                                               literal's state */
    size_t                     tok_len;     /* a name or an id, raw */
    size_t                     tok_size;    /* room for the POST's ids */
    size_t                     tail_len;    /* from the JSON's last byte */
    u_char                     stack[NGX_HTTP_MCP_JSONGUARD_DEPTH / 8];
    u_char                    *tok;         /* tok_size bytes */
    u_char                    *value;       /* an id unescaped: as many */
    u_char                     tail[NGX_HTTP_MCP_JSONGUARD_TOKEN];
    unsigned                   capture:2;   /* a name, an id, or neither */
    unsigned                   long_name:1;
    unsigned                   id_seen:1;   /* in this message */
    unsigned                   id_next:1;   /* the next value is its id */
    unsigned                   seen:1;      /* any byte */
} ngx_http_mcp_jsonguard_t;


/* the ids of a JSON reply's messages (ngx_http_mcp_jsonguard.c) */
ngx_int_t ngx_http_mcp_jsonguard_init(ngx_http_mcp_jsonguard_t *g,
    ngx_pool_t *pool, ngx_array_t *msgs);
ngx_int_t ngx_http_mcp_jsonguard_read(ngx_http_mcp_jsonguard_t *g,
    u_char *pos, u_char *last, size_t *send, const char **error);
ngx_int_t ngx_http_mcp_jsonguard_end(ngx_http_mcp_jsonguard_t *g,
    const char **error);


#endif /* _NGX_HTTP_MCP_JSONGUARD_H_INCLUDED_ */
