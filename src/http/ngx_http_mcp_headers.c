
/*
 * The request's headers as the module reads them: by name, a name's
 * next one, names with a prefix (Mcp-Param-*), and the MCP headers all
 * at once (ngx_http_mcp_headers_read(), for the checks of every POST);
 * and a header of the reply.  nginx indexes only the headers it knows
 * itself, so the rest are found by walking the list.
 */


#include "ngx_http_mcp_headers.h"
#include "ngx_http_mcp_param.h"


static ngx_inline ngx_uint_t ngx_http_mcp_header_named(ngx_table_elt_t *h,
    const char *name, size_t len);
static ngx_table_elt_t *ngx_http_mcp_header_next(ngx_http_request_t *r,
    ngx_table_elt_t *prev, const char *name, size_t len, ngx_uint_t whole);


ngx_table_elt_t *
ngx_http_mcp_header_in(ngx_http_request_t *r, const char *name, size_t len)
{
    return ngx_http_mcp_header_in_after(r, NULL, name, len);
}


/* the next header of that name (in lower case) after prev (NULL: the first) */

ngx_table_elt_t *
ngx_http_mcp_header_in_after(ngx_http_request_t *r, ngx_table_elt_t *prev,
    const char *name, size_t len)
{
    return ngx_http_mcp_header_next(r, prev, name, len, 1);
}


/*
 * The next header after prev (NULL: the first) whose name starts with
 * prefix (in lower case) and goes on after it: Mcp-Param-*, say.
 */

ngx_table_elt_t *
ngx_http_mcp_header_prefixed(ngx_http_request_t *r, ngx_table_elt_t *prev,
    const char *prefix, size_t len)
{
    return ngx_http_mcp_header_next(r, prev, prefix, len, 0);
}


/*
 * Last-Event-ID as the module's streams write their event ids:
 * "<stream>-<seq>", a stream from 1 and the event's seq in the session's
 * log (0: the stream's priming event)
 */

ngx_int_t
ngx_http_mcp_last_event_id(ngx_str_t *value, uint32_t *stream, uint64_t *seq)
{
    u_char     *dash;
    ngx_int_t   n, m;

    dash = ngx_strlchr(value->data, value->data + value->len, '-');

    if (dash == NULL) {
        return NGX_ERROR;
    }

    n = ngx_atoi(value->data, dash - value->data);
    m = ngx_atoi(dash + 1, value->data + value->len - dash - 1);

    if (n == NGX_ERROR || m == NGX_ERROR || n == 0 || n > 0xffffffff) {
        return NGX_ERROR;
    }

    *stream = (uint32_t) n;
    *seq = (uint64_t) m;

    return NGX_OK;
}


/* the MCP headers, in one walk: see ngx_http_mcp_headers_t */

void
ngx_http_mcp_headers_read(ngx_http_request_t *r, ngx_http_mcp_headers_t *hs)
{
    size_t             len;
    ngx_uint_t         i, bit;
    const char        *name;
    ngx_list_part_t   *part;
    ngx_table_elt_t   *h, **field;

    ngx_memzero(hs, sizeof(ngx_http_mcp_headers_t));

    part = &r->headers_in.headers.part;
    i = 0;

    while ((h = ngx_http_mcp_header_walk(&part, &i)) != NULL) {

        len = h->key.len;

        /* the names differ in length: the length says which to compare */
        switch (len) {

        case sizeof("mcp-name") - 1:
            name = "mcp-name";
            field = &hs->name;
            bit = NGX_HTTP_MCP_HDR_NAME;
            break;

        case sizeof("mcp-method") - 1:
            name = "mcp-method";
            field = &hs->method;
            bit = NGX_HTTP_MCP_HDR_METHOD;
            break;

        case sizeof("mcp-session-id") - 1:
            name = "mcp-session-id";
            field = &hs->session;
            bit = NGX_HTTP_MCP_HDR_SESSION;
            break;

        case sizeof("mcp-protocol-version") - 1:
            name = "mcp-protocol-version";
            field = &hs->version;
            bit = NGX_HTTP_MCP_HDR_VERSION;
            break;

        case sizeof("origin") - 1:
            name = "origin";
            field = &hs->origin;
            bit = NGX_HTTP_MCP_HDR_ORIGIN;
            break;

        default:
            if (len > sizeof("mcp-param-") - 1
                && ngx_http_mcp_header_named(h, "mcp-param-",
                                             sizeof("mcp-param-") - 1))
            {
                hs->params = 1;
            }

            continue;
        }

        if (!ngx_http_mcp_header_named(h, name, len)) {
            continue;
        }

        if (*field == NULL) {
            *field = h;

        } else {
            hs->twice |= bit;
        }
    }
}


/*
 * What the request's Mcp-Name says (2026-07-28), as the edge compares it
 * with the body, the fleet with a task id and $mcp_name gives it before
 * the body: "=?base64?...?=" decoded, see ngx_http_mcp_param_decode().
 * NGX_OK and *said; NGX_DONE: no Mcp-Name, or two; NGX_DECLINED: not
 * canonical Base64; NGX_ABORT: a literal control character; NGX_ERROR.
 */

ngx_int_t
ngx_http_mcp_headers_name(ngx_pool_t *pool, ngx_http_mcp_headers_t *hs,
    ngx_str_t *said)
{
    if (hs->name == NULL || (hs->twice & NGX_HTTP_MCP_HDR_NAME)) {
        return NGX_DONE;
    }

    return ngx_http_mcp_param_decode(pool, &hs->name->value, said);
}


/*
 * whether h's name starts with name (len bytes, in lower case); the
 * first byte before a call: names of a length are mostly other names
 * (Accept is Origin's length, Content-Length Mcp-Session-Id's)
 */

static ngx_inline ngx_uint_t
ngx_http_mcp_header_named(ngx_table_elt_t *h, const char *name, size_t len)
{
    return h->lowcase_key != NULL
           ? h->lowcase_key[0] == (u_char) name[0]
             && ngx_memcmp(h->lowcase_key, name, len) == 0
           : ngx_strncasecmp(h->key.data, (u_char *) name, len) == 0;
}


/*
 * The walk of both: nginx keeps each name in lower case too, so a
 * memcmp() will do.  whole: the name is all of the header's name.
 */

static ngx_table_elt_t *
ngx_http_mcp_header_next(ngx_http_request_t *r, ngx_table_elt_t *prev,
    const char *name, size_t len, ngx_uint_t whole)
{
    ngx_uint_t        i;
    ngx_list_part_t  *part;
    ngx_table_elt_t  *h;

    part = &r->headers_in.headers.part;
    i = 0;

    if (prev != NULL) {
        /* on from prev, in the part of the list that holds it */
        h = part->elts;

        while (prev < h || prev >= h + part->nelts) {
            part = part->next;

            if (part == NULL) {
                return NULL;
            }

            h = part->elts;
        }

        i = prev - h + 1;
    }

    while ((h = ngx_http_mcp_header_walk(&part, &i)) != NULL) {

        if (whole ? h->key.len != len : h->key.len <= len) {
            continue;
        }

        if (ngx_http_mcp_header_named(h, name, len)) {
            return h;
        }
    }

    return NULL;
}


ngx_int_t
ngx_http_mcp_header_set(ngx_http_request_t *r, u_char *name, size_t len,
    ngx_str_t *value)
{
    if (ngx_http_mcp_header_push(&r->headers_out.headers, name, len, value)
        == NULL)
    {
        return NGX_ERROR;
    }

    return NGX_OK;
}


ngx_table_elt_t *
ngx_http_mcp_header_push(ngx_list_t *headers, u_char *name, size_t len,
    ngx_str_t *value)
{
    ngx_table_elt_t  *h;

    h = ngx_list_push(headers);
    if (h == NULL) {
        return NULL;
    }

    h->hash = 1;
#if (nginx_version >= 1023000)
    h->next = NULL;
#endif
    h->key.data = name;
    h->key.len = len;
    h->value = *value;

    return h;
}
