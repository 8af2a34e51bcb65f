
/*
 * The headers of a request as the module reads them, and a header of
 * its reply (ngx_http_mcp_headers.c): nginx's lists walked by name, by
 * prefix (Mcp-Param-*), and the MCP headers all found in one walk.  A
 * part of src/http of its own: the context (ngx_http_mcp_http.h) holds
 * what it found, and it needs nothing of the context.
 */


#ifndef _NGX_HTTP_MCP_HEADERS_H_INCLUDED_
#define _NGX_HTTP_MCP_HEADERS_H_INCLUDED_


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>


/*
 * The MCP headers of a request, found in one walk of its list: a
 * 2026-07-28 request is checked against most of them, each once and
 * each for a second of its name, and a walk a check cost more than the
 * checks.  twice: NGX_HTTP_MCP_HDR_* bits, the names sent more than once
 * (the field then holds the first).
 */
#define NGX_HTTP_MCP_HDR_VERSION   0x01
#define NGX_HTTP_MCP_HDR_SESSION   0x02
#define NGX_HTTP_MCP_HDR_METHOD    0x04
#define NGX_HTTP_MCP_HDR_NAME      0x08
#define NGX_HTTP_MCP_HDR_ORIGIN    0x10

typedef struct {
    ngx_table_elt_t           *version;     /* MCP-Protocol-Version */
    ngx_table_elt_t           *session;     /* Mcp-Session-Id */
    ngx_table_elt_t           *method;      /* Mcp-Method */
    ngx_table_elt_t           *name;        /* Mcp-Name */
    ngx_table_elt_t           *origin;      /* Origin: for CORS */
    ngx_uint_t                 twice;
    unsigned                   params:1;    /* some Mcp-Param-* */
} ngx_http_mcp_headers_t;


void ngx_http_mcp_headers_read(ngx_http_request_t *r,
    ngx_http_mcp_headers_t *hs);
ngx_int_t ngx_http_mcp_headers_name(ngx_pool_t *pool,
    ngx_http_mcp_headers_t *hs, ngx_str_t *said);
ngx_table_elt_t *ngx_http_mcp_header_in(ngx_http_request_t *r,
    const char *name, size_t len);
ngx_table_elt_t *ngx_http_mcp_header_in_after(ngx_http_request_t *r,
    ngx_table_elt_t *prev, const char *name, size_t len);
ngx_table_elt_t *ngx_http_mcp_header_prefixed(ngx_http_request_t *r,
    ngx_table_elt_t *prev, const char *prefix, size_t len);
ngx_int_t ngx_http_mcp_last_event_id(ngx_str_t *value, uint32_t *stream,
    uint64_t *seq);
/* a reply's header; name is a literal (its length is taken at compile
   time: a reply's few headers on every request, no strlen); name ""
   fails to compile for a pointer, whose sizeof would be wrong */
#define ngx_http_mcp_header_out(r, name, value)                              \
    ngx_http_mcp_header_set(r, (u_char *) name "", sizeof(name) - 1, value)
ngx_int_t ngx_http_mcp_header_set(ngx_http_request_t *r, u_char *name,
    size_t len, ngx_str_t *value);
/* a header added to a list of them: a reply's, an upstream reply's */
ngx_table_elt_t *ngx_http_mcp_header_push(ngx_list_t *headers, u_char *name,
    size_t len, ngx_str_t *value);


/*
 * nginx's walk of a list of headers (a request's, a reply's, an
 * upstream's), an element a call: *part starts at the list's first part
 * and *i at 0; NULL past the last.  Inline: it is the walk of every
 * request's headers.
 */

static ngx_inline ngx_table_elt_t *
ngx_http_mcp_header_walk(ngx_list_part_t **part, ngx_uint_t *i)
{
    ngx_table_elt_t  *h;

    if (*i >= (*part)->nelts) {
        if ((*part)->next == NULL) {
            return NULL;
        }

        *part = (*part)->next;
        *i = 0;
    }

    h = (*part)->elts;

    return &h[(*i)++];
}


#endif /* _NGX_HTTP_MCP_HEADERS_H_INCLUDED_ */
