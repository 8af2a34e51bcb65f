
/*
 * What mcp_pass takes of an upstream's reply head.  The upstream is not
 * trusted, and the gateway tells the client the reply again: a head that
 * two readers could read apart (two lengths, a length beside chunked, a
 * coding that merely holds "chunked", two session ids or media types),
 * an interim status, a redirect, or a body that is no MCP reply is
 * refused with a JSON-RPC error.  nginx before 1.23 checks the framing
 * for its proxy module only, in code of the proxy module's own.  And
 * the request's URI, as the location was chosen by it.
 */


#include "ngx_http_mcp_proxy.h"
#include "ngx_http_mcp_call.h"
#include "ngx_http_mcp_http.h"


static ngx_uint_t ngx_http_mcp_proxy_mcp_type(ngx_http_upstream_t *u);
static ngx_uint_t ngx_http_mcp_proxy_coded(ngx_http_request_t *r);
static ngx_int_t ngx_http_mcp_proxy_chunks_valid(ngx_http_request_t *r);


/*
 * A header that says one thing once, seen again: the session id, the
 * body's framing (nginx before 1.23 keeps the last of each), and the
 * media type: the gateway reads the first, and nginx before 1.23 gives
 * the client the last, so a stream the gateway took for JSON reached
 * the client as SSE, past the tool policy's event filter.
 */

ngx_uint_t
ngx_http_mcp_proxy_header_twice(ngx_http_upstream_t *u, ngx_table_elt_t *h,
    ngx_uint_t sid_seen)
{
    if (h->key.len == sizeof("mcp-session-id") - 1
        && ngx_strncmp(h->lowcase_key, "mcp-session-id", h->key.len) == 0)
    {
        return sid_seen;
    }

    if (h->key.len == sizeof("content-length") - 1
        && ngx_strncmp(h->lowcase_key, "content-length", h->key.len) == 0)
    {
        return u->headers_in.content_length != NULL;
    }

    if (h->key.len == sizeof("transfer-encoding") - 1
        && ngx_strncmp(h->lowcase_key, "transfer-encoding", h->key.len) == 0)
    {
        return u->headers_in.transfer_encoding != NULL;
    }

    if (h->key.len == sizeof("content-type") - 1
        && ngx_strncmp(h->lowcase_key, "content-type", h->key.len) == 0)
    {
        return u->headers_in.content_type != NULL;
    }

    return 0;
}


/*
 * The whole head is read: NGX_OK, or NGX_HTTP_UPSTREAM_INVALID_HEADER
 * (the client gets a 502 with a JSON-RPC error) with an [error] line.
 */

ngx_int_t
ngx_http_mcp_proxy_reply_head(ngx_http_request_t *r)
{
    ngx_uint_t            status;
    ngx_table_elt_t      *te;
    ngx_http_upstream_t  *u;

    u = r->upstream;

    /*
     * An interim response (1xx, 101 too): nginx would send it as the
     * final one, and the client would read the upstream's next response,
     * never looked at, as its answer, and what follows that as the answer
     * to its next request.  A redirect would send the client elsewhere,
     * to an address of the upstream's side.  An MCP server has no use for
     * either.
     */

    status = u->headers_in.status_n;

    if (status < NGX_HTTP_OK
        || (status >= NGX_HTTP_SPECIAL_RESPONSE
            && status < NGX_HTTP_BAD_REQUEST))
    {
        ngx_log_error(NGX_LOG_ERR, r->connection->log, 0,
                      "mcp: upstream sent %s (%ui)",
                      status < NGX_HTTP_OK ? "an interim response"
                                           : "a redirect", status);
        return NGX_HTTP_UPSTREAM_INVALID_HEADER;
    }

    /*
     * An error page, not MCP, or a body of another type where a JSON-RPC
     * reply was due (a notification's 202 and a DELETE's answer need
     * none): the client gets a JSON-RPC error.
     */

    if (!ngx_http_mcp_proxy_mcp_type(u)
        && (status >= NGX_HTTP_BAD_REQUEST
            || (u->headers_in.content_length_n != 0
                && status != NGX_HTTP_ACCEPTED
                && status != NGX_HTTP_NO_CONTENT
                && r->method != NGX_HTTP_DELETE)))
    {
        ngx_log_error(NGX_LOG_ERR, r->connection->log, 0,
                      "mcp: upstream answered %ui without a JSON-RPC "
                      "body", status);
        return NGX_HTTP_UPSTREAM_INVALID_HEADER;
    }

    /*
     * A Content-Length beside chunked: the client would be told the
     * length, get the chunks' bytes, and read those after the length as
     * the answer to its next request on the connection.
     */

    te = u->headers_in.transfer_encoding;

    if (te != NULL
        && (u->headers_in.content_length != NULL
            || te->value.len != sizeof("chunked") - 1
            || ngx_strncasecmp(te->value.data, (u_char *) "chunked",
                               sizeof("chunked") - 1)
               != 0))
    {
        ngx_log_error(NGX_LOG_ERR, r->connection->log, 0,
                      "mcp: upstream sent \"Transfer-Encoding: %V\"%s",
                      &te->value,
                      u->headers_in.content_length != NULL
                      ? " with \"Content-Length\"" : "");
        return NGX_HTTP_UPSTREAM_INVALID_HEADER;
    }

    if (u->headers_in.chunked && ngx_http_mcp_proxy_chunks_valid(r) != NGX_OK)
    {
        return NGX_HTTP_UPSTREAM_INVALID_HEADER;
    }

    if (ngx_http_mcp_proxy_coded(r)) {
        return NGX_HTTP_UPSTREAM_INVALID_HEADER;
    }

    return NGX_OK;
}


/*
 * A reply held for the tool policy with a coded body (gzip, br): the
 * filter read the coded bytes as an SSE stream of no event and passed
 * them on, and the client, whose fetch() undoes the coding, listed the
 * denied tools.  The same for an SSE reply the policy reads event by
 * event, or a JSON reply to a POST read for its ids.  The gateway asks
 * for no coding (no Accept-Encoding).
 */

static ngx_uint_t
ngx_http_mcp_proxy_coded(ngx_http_request_t *r)
{
    ngx_uint_t                 i;
    ngx_list_part_t           *part;
    ngx_table_elt_t           *h;
    ngx_http_mcp_proxy_ctx_t  *pctx;

    pctx = ngx_http_mcp_proxy_get_ctx(r);

    if (!pctx->filter
        && !(pctx->policy && (ngx_http_mcp_proxy_read_as_sse(r)
                              || r->method == NGX_HTTP_POST)))
    {
        return 0;
    }

    part = &r->upstream->headers_in.headers.part;
    i = 0;

    while ((h = ngx_http_mcp_header_walk(&part, &i)) != NULL) {

        if (h->key.len != sizeof("content-encoding") - 1
            || ngx_strncmp(h->lowcase_key, "content-encoding",
                           h->key.len) != 0
            || (h->value.len == sizeof("identity") - 1
                && ngx_strncasecmp(h->value.data, (u_char *) "identity",
                                   h->value.len) == 0))
        {
            continue;
        }

        ngx_log_error(NGX_LOG_ERR, r->connection->log, 0,
                      "mcp: upstream sent \"Content-Encoding: %V\" in a "
                      "reply the tool policy filters", &h->value);
        return 1;
    }

    return 0;
}


/* application/json or text/event-stream: what MCP servers answer */

static ngx_uint_t
ngx_http_mcp_proxy_mcp_type(ngx_http_upstream_t *u)
{
    ngx_str_t  *type;

    if (u->headers_in.content_type == NULL) {
        return u->headers_in.content_length_n == 0;
    }

    type = &u->headers_in.content_type->value;

    return (type->len >= sizeof("application/json") - 1
            && ngx_strncasecmp(type->data, (u_char *) "application/json",
                               sizeof("application/json") - 1) == 0)
           || ngx_http_mcp_proxy_sse_type(u);
}


/*
 * A reply a client may read as SSE: one of that type, and any 2xx reply
 * to a GET, whose body the TypeScript SDK's client reads as SSE whatever
 * its media type (an application/json or a 202 of any type carried a
 * tools/list answer past the policy's event filter).
 */

ngx_uint_t
ngx_http_mcp_proxy_read_as_sse(ngx_http_request_t *r)
{
    ngx_http_upstream_t  *u;

    u = r->upstream;

    return ngx_http_mcp_proxy_sse_type(u)
           || (r->method == NGX_HTTP_GET
               && u->headers_in.status_n >= NGX_HTTP_OK
               && u->headers_in.status_n < NGX_HTTP_SPECIAL_RESPONSE);
}


/* a text/event-stream reply */

ngx_uint_t
ngx_http_mcp_proxy_sse_type(ngx_http_upstream_t *u)
{
    ngx_str_t  *type;

    if (u->headers_in.content_type == NULL) {
        return 0;
    }

    type = &u->headers_in.content_type->value;

    return type->len >= sizeof("text/event-stream") - 1
           && ngx_strncasecmp(type->data, (u_char *) "text/event-stream",
                              sizeof("text/event-stream") - 1) == 0;
}


/*
 * The chunked body bytes that came with the headers, checked before the
 * headers go to the client: a body broken from the start is a 502 with
 * a JSON-RPC error; broken later, only the connection can end.
 */

static ngx_int_t
ngx_http_mcp_proxy_chunks_valid(ngx_http_request_t *r)
{
    off_t               size;
    ngx_int_t           rc;
    ngx_buf_t           b;
    ngx_http_chunked_t  chunked;

    /* copies: the body's real parse starts from the beginning */
    b = r->upstream->buffer;
    ngx_memzero(&chunked, sizeof(ngx_http_chunked_t));

    for ( ;; ) {

#if (nginx_version >= 1027002)
        rc = ngx_http_parse_chunked(r, &b, &chunked, 0);
#else
        rc = ngx_http_parse_chunked(r, &b, &chunked);
#endif

        if (rc == NGX_OK) {
            size = ngx_min((off_t) (b.last - b.pos), chunked.size);
            b.pos += size;
            chunked.size -= size;
            continue;
        }

        if (rc == NGX_DONE || rc == NGX_AGAIN) {
            return NGX_OK;
        }

        ngx_log_error(NGX_LOG_ERR, r->connection->log, 0,
                      "mcp: upstream sent an invalid chunked body");
        return NGX_ERROR;
    }
}


/* the request's URI as nginx matched it, escaped, and its arguments */

ngx_str_t *
ngx_http_mcp_proxy_uri(ngx_http_request_t *r)
{
    u_char     *p;
    size_t      len;
    uintptr_t   escape;
    ngx_str_t  *uri;

    escape = 2 * ngx_escape_uri(NULL, r->uri.data, r->uri.len,
                                NGX_ESCAPE_URI);
    len = r->uri.len + escape + (r->args.len ? 1 + r->args.len : 0);

    uri = ngx_palloc(r->pool, sizeof(ngx_str_t));
    p = ngx_pnalloc(r->pool, len);

    if (uri == NULL || p == NULL) {
        return NULL;
    }

    uri->data = p;

    if (escape) {
        p = (u_char *) ngx_escape_uri(p, r->uri.data, r->uri.len,
                                      NGX_ESCAPE_URI);

    } else {
        p = ngx_cpymem(p, r->uri.data, r->uri.len);
    }

    if (r->args.len) {
        *p++ = '?';
        p = ngx_cpymem(p, r->args.data, r->args.len);
    }

    uri->len = p - uri->data;

    return uri;
}
