
/*
 * mcp_pass, the reply's body: relayed unbuffered as the upstream sends
 * it, except a reply the tool policy filters (a tools/list result, or a
 * batch holding one), which is held up to mcp_pass_filter_buffer_size,
 * filtered whole and sent; what goes wrong on the way (too big, not
 * strict JSON, cut short) is a JSON-RPC error for the client's request.
 * Under the policy, any other SSE reply is filtered event by event
 * (ngx_http_mcp_proxy_stream.c), and any other JSON reply to a POST is
 * read for its messages' ids as it goes (ngx_http_mcp_jsonguard.c).
 *
 * A JSON reply held whole holds its head back too (an output filter
 * here), so that it leaves with its final Content-Length, head and body
 * in one write: sent chunked, as the head went ahead, the body needs a
 * second write for the last chunk (nginx's at the upstream's end), the
 * held reply's own cost beside an unheld one's (docs/benchmark.md).
 */


#include "ngx_http_mcp_proxy.h"
#include "ngx_http_mcp_jsonguard.h"
#include "ngx_http_mcp_jsonrpc.h"
#include "ngx_http_mcp_call.h"
#include "ngx_http_mcp_core.h"
#include "ngx_http_mcp_http.h"


static ngx_int_t ngx_http_mcp_proxy_output(ngx_http_request_t *r,
    ngx_http_mcp_proxy_ctx_t *pctx, u_char *pos, u_char *last);
static ngx_int_t ngx_http_mcp_proxy_guarded(ngx_http_request_t *r,
    ngx_http_mcp_proxy_ctx_t *pctx, u_char *pos, u_char *last);
static ngx_int_t ngx_http_mcp_proxy_guard_end(ngx_http_request_t *r,
    ngx_http_mcp_proxy_ctx_t *pctx);
static ngx_int_t ngx_http_mcp_proxy_cut(ngx_http_request_t *r);
static ngx_int_t ngx_http_mcp_proxy_unheld(ngx_http_request_t *r,
    ngx_http_mcp_proxy_ctx_t *pctx, u_char *pos, u_char *last);
static ngx_int_t ngx_http_mcp_proxy_too_big(ngx_http_request_t *r,
    ngx_http_mcp_proxy_ctx_t *pctx);
static ngx_int_t ngx_http_mcp_proxy_whole(ngx_http_request_t *r,
    ngx_http_mcp_proxy_ctx_t *pctx, u_char *pos, u_char *last);
static ngx_int_t ngx_http_mcp_proxy_header_filter(ngx_http_request_t *r);
static ngx_int_t ngx_http_mcp_proxy_body_filter(ngx_http_request_t *r,
    ngx_chain_t *in);


static ngx_http_output_header_filter_pt  ngx_http_next_header_filter;
static ngx_http_output_body_filter_pt    ngx_http_next_body_filter;


ngx_int_t
ngx_http_mcp_proxy_filter_init(void *data)
{
    ngx_http_request_t *r = data;

    ngx_http_upstream_t       *u;
    ngx_http_mcp_proxy_ctx_t  *pctx;

    pctx = ngx_http_mcp_proxy_get_ctx(r);
    u = r->upstream;

    if (u->headers_in.status_n == NGX_HTTP_NO_CONTENT
        || u->headers_in.status_n == NGX_HTTP_NOT_MODIFIED
        || r->method == NGX_HTTP_HEAD)
    {
        u->length = 0;
        u->keepalive = !u->headers_in.connection_close;

    } else if (pctx->is_chunked) {
        /* any positive length: the last chunk ends the body */
        u->length = 1;
        ngx_memzero(&pctx->chunked, sizeof(ngx_http_chunked_t));

    } else if (pctx->length == 0) {
        u->length = 0;
        u->keepalive = !u->headers_in.connection_close;

    } else {
        /* -1: up to the close */
        u->length = pctx->length;
    }

    return NGX_OK;
}


/*
 * Unbuffered body: bytes new data at u->buffer.last.  Chunked bodies are
 * decoded (nginx chunks them again for the client); a body held for
 * filtering goes out at its end.
 */

ngx_int_t
ngx_http_mcp_proxy_filter(void *data, ssize_t bytes)
{
    ngx_http_request_t *r = data;

    u_char                    *pos;
    size_t                     size;
    ngx_int_t                  rc;
    ngx_buf_t                 *b;
    ngx_uint_t                 extra;
    ngx_http_upstream_t       *u;
    ngx_http_mcp_proxy_ctx_t  *pctx;

    pctx = ngx_http_mcp_proxy_get_ctx(r);
    u = r->upstream;
    b = &u->buffer;

    if (!pctx->is_chunked) {
        pos = b->last;
        b->last += bytes;

        extra = 0;

        if (u->length != -1) {
            if (bytes > u->length) {
                ngx_log_error(NGX_LOG_WARN, r->connection->log, 0,
                              "mcp: upstream sent more data than "
                              "\"Content-Length\" said");
                bytes = u->length;
                extra = 1;
            }

            u->length -= bytes;
        }

        rc = ngx_http_mcp_proxy_output(r, pctx, pos, pos + bytes);

        if (rc != NGX_OK) {
            return (rc == NGX_DONE) ? NGX_OK : NGX_ERROR;
        }

        if (u->length == 0) {
            /* bytes past the length: the connection is out of step */
            u->keepalive = !u->headers_in.connection_close && !extra;
            return ngx_http_mcp_proxy_flush_filtered(r, pctx);
        }

        return NGX_OK;
    }

    b->pos = b->last;
    b->last += bytes;

    for ( ;; ) {

#if (nginx_version >= 1027002)
        /* 1.27.2 added keeping trailers; an MCP reply has no use for them */
        rc = ngx_http_parse_chunked(r, b, &pctx->chunked, 0);
#else
        rc = ngx_http_parse_chunked(r, b, &pctx->chunked);
#endif

        if (rc == NGX_OK) {
            size = ngx_min((off_t) (b->last - b->pos), pctx->chunked.size);

            rc = ngx_http_mcp_proxy_output(r, pctx, b->pos, b->pos + size);

            if (rc != NGX_OK) {
                return (rc == NGX_DONE) ? NGX_OK : NGX_ERROR;
            }

            b->pos += size;
            pctx->chunked.size -= size;
            continue;
        }

        if (rc == NGX_DONE) {
            u->length = 0;
            u->keepalive = !u->headers_in.connection_close
                           && b->pos == b->last;
            return ngx_http_mcp_proxy_flush_filtered(r, pctx);
        }

        if (rc == NGX_AGAIN) {
            return NGX_OK;
        }

        ngx_log_error(NGX_LOG_ERR, r->connection->log, 0,
                      "mcp: upstream sent an invalid chunked body");
        return NGX_ERROR;
    }
}


/* data of the body: out as it came, or held for the policy filter */

static ngx_int_t
ngx_http_mcp_proxy_output(ngx_http_request_t *r,
    ngx_http_mcp_proxy_ctx_t *pctx, u_char *pos, u_char *last)
{
    u_char     *p;
    size_t      n, size;
    ngx_int_t   rc;
    ngx_str_t   out;

    if (pos == last) {
        return NGX_OK;
    }

    if (pctx->events) {
        rc = ngx_http_mcp_proxy_stream(r, pctx, pos, last, &out);

        if (rc == NGX_ERROR
            || (out.len && ngx_http_mcp_proxy_append(r, out.data,
                                                     out.data + out.len)
                           != NGX_OK))
        {
            return NGX_ERROR;
        }

        return (rc == NGX_OK) ? NGX_OK : ngx_http_mcp_proxy_cut(r);
    }

    if (pctx->filter) {
        n = last - pos;

        if (pctx->acc_len + n > pctx->conf->filter_buffer_size) {
            return pctx->lax ? ngx_http_mcp_proxy_unheld(r, pctx, pos, last)
                             : ngx_http_mcp_proxy_too_big(r, pctx);
        }

        if (pctx->acc_len + n > pctx->acc_size) {
            size = ngx_max(2 * pctx->acc_size, pctx->acc_len + n);
            size = ngx_min(size, pctx->conf->filter_buffer_size);

            p = ngx_pnalloc(r->pool, size);
            if (p == NULL) {
                return NGX_ERROR;
            }

            if (pctx->acc_len) {
                ngx_memcpy(p, pctx->acc, pctx->acc_len);
            }

            pctx->acc = p;
            pctx->acc_size = size;
        }

        ngx_memcpy(pctx->acc + pctx->acc_len, pos, n);
        pctx->acc_len += n;

        return NGX_OK;
    }

    if (pctx->guard != NULL) {
        return ngx_http_mcp_proxy_guarded(r, pctx, pos, last);
    }

    return ngx_http_mcp_proxy_append(r, pos, last);
}


/*
 * A JSON reply read for its messages' ids: out as it came, but for its
 * last bytes, held until the body ended; a foreign message cuts it.
 */

static ngx_int_t
ngx_http_mcp_proxy_guarded(ngx_http_request_t *r,
    ngx_http_mcp_proxy_ctx_t *pctx, u_char *pos, u_char *last)
{
    size_t       send;
    const char  *error;

    if (ngx_http_mcp_jsonguard_read(pctx->guard, pos, last, &send, &error)
        != NGX_OK)
    {
        ngx_log_error(NGX_LOG_ERR, r->connection->log, 0,
                      "mcp: the upstream's JSON reply is refused, the reply "
                      "is cut: %s", error);
        return ngx_http_mcp_proxy_cut(r);
    }

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "mcp proxy jsonguard: %uz bytes read, %uz out",
                   (size_t) (last - pos), send);

    return send ? ngx_http_mcp_proxy_append(r, pos, pos + send) : NGX_OK;
}


/*
 * The JSON reply's body ended: its held last bytes go, if its JSON ended.
 * One that did not is cut; for one without a length, that the
 * upstream's close ended, ngx_http_mcp_proxy_finalize_request() keeps
 * nginx from ending it with the last chunk.
 */

static ngx_int_t
ngx_http_mcp_proxy_guard_end(ngx_http_request_t *r,
    ngx_http_mcp_proxy_ctx_t *pctx)
{
    const char                *error;
    ngx_http_mcp_jsonguard_t  *g;

    g = pctx->guard;
    pctx->guard = NULL;

    if (ngx_http_mcp_jsonguard_end(g, &error) != NGX_OK) {
        ngx_log_error(NGX_LOG_ERR, r->connection->log, 0,
                      "mcp: the upstream's JSON reply is refused, the reply "
                      "is cut: %s", error);
        return ngx_http_mcp_proxy_cut(r);
    }

    if (g->tail_len == 0) {
        return NGX_OK;
    }

    return ngx_http_mcp_proxy_append(r, g->tail, g->tail + g->tail_len);
}


/*
 * A stream the policy cannot let on: the head and the events before the
 * refused one are sent now, as far as the client's connection takes them
 * at once, and NGX_ERROR ends the request without the last chunk.
 */

static ngx_int_t
ngx_http_mcp_proxy_cut(ngx_http_request_t *r)
{
    ngx_chain_t          *cl;
    ngx_http_upstream_t  *u;

    u = r->upstream;
    cl = u->out_bufs;
    u->out_bufs = NULL;

    if (cl != NULL) {
        (void) ngx_http_output_filter(r, cl);

    } else {
        (void) ngx_http_send_special(r, NGX_HTTP_FLUSH);
    }

    return NGX_ERROR;
}


/*
 * A reply held for its outcomes alone grew past the buffer: what was
 * held goes, and the rest as it comes, unread; under the policy, read
 * for its ids as any JSON reply is.
 */

static ngx_int_t
ngx_http_mcp_proxy_unheld(ngx_http_request_t *r,
    ngx_http_mcp_proxy_ctx_t *pctx, u_char *pos, u_char *last)
{
    ngx_log_debug1(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "mcp proxy: reply over %uz, relayed unread",
                   pctx->conf->filter_buffer_size);

    pctx->filter = 0;
    pctx->lax = 0;

    if (pctx->policy) {
        pctx->guard = ngx_palloc(r->pool, sizeof(ngx_http_mcp_jsonguard_t));
        if (pctx->guard == NULL
            || ngx_http_mcp_jsonguard_init(pctx->guard, r->pool,
                                           &pctx->ctx->msgs)
               != NGX_OK)
        {
            return NGX_ERROR;
        }
    }

    if (pctx->acc_len
        && ngx_http_mcp_proxy_output(r, pctx, pctx->acc,
                                     pctx->acc + pctx->acc_len)
           != NGX_OK)
    {
        return NGX_ERROR;
    }

    pctx->acc_len = 0;

    return ngx_http_mcp_proxy_output(r, pctx, pos, last);
}


/* a reply held for tool policy grew past mcp_pass_filter_buffer_size */

static ngx_int_t
ngx_http_mcp_proxy_too_big(ngx_http_request_t *r,
    ngx_http_mcp_proxy_ctx_t *pctx)
{
    ngx_log_error(NGX_LOG_ERR, r->connection->log, 0,
                  "mcp: the upstream's reply is over "
                  "\"mcp_pass_filter_buffer_size\" %uz",
                  pctx->conf->filter_buffer_size);

    return ngx_http_mcp_proxy_bad_reply(r, pctx, NGX_HTTP_MCP_SERVER_ERROR,
                                        "Bad gateway: the upstream MCP "
                                        "server's reply is too large");
}


/*
 * A reply held for tool policy that cannot go out: the client gets a
 * JSON-RPC error for its request instead (the headers are out, the held
 * body is not), and the upstream connection is closed.  Returns NGX_DONE:
 * the reply is over.
 */

ngx_int_t
ngx_http_mcp_proxy_bad_reply(ngx_http_request_t *r,
    ngx_http_mcp_proxy_ctx_t *pctx, ngx_int_t code, const char *message)
{
    u_char               *body, *p, *last;
    size_t                len;
    cJSON                *id;
    ngx_uint_t            i;
    ngx_http_mcp_msg_t   *msg;
    ngx_http_upstream_t  *u;

    u = r->upstream;

    /* the first request's id: a batch's other answers are lost with it */
    id = NULL;
    msg = pctx->ctx->msgs.elts;

    for (i = 0; i < pctx->ctx->msgs.nelts && id == NULL; i++) {
        if (msg[i].type == NGX_HTTP_MCP_MSG_REQUEST) {
            id = msg[i].id;
        }
    }

    body = ngx_http_mcp_error_print(r, id, code, message, &len);
    if (body == NULL) {
        return NGX_ERROR;
    }

    pctx->filter = 0;
    pctx->acc_len = 0;
    u->length = 0;
    u->keepalive = 0;

    if (pctx->sse) {
        p = ngx_pnalloc(r->pool, sizeof("event: message\ndata: \n\n") + len);
        if (p == NULL) {
            return NGX_ERROR;
        }

        last = ngx_cpymem(p, "event: message\ndata: ",
                          sizeof("event: message\ndata: ") - 1);
        last = ngx_cpymem(last, body, len);
        *last++ = '\n';
        *last++ = '\n';

        body = p;
        len = last - p;
    }

    return ngx_http_mcp_proxy_whole(r, pctx, body, body + len) == NGX_OK
           ? NGX_DONE : NGX_ERROR;
}


/* memory for the client, at the end of the upstream's output */

ngx_int_t
ngx_http_mcp_proxy_append(ngx_http_request_t *r, u_char *pos, u_char *last)
{
    ngx_chain_t          *cl, **ll;
    ngx_http_upstream_t  *u;

    u = r->upstream;

    for (cl = u->out_bufs, ll = &u->out_bufs; cl; cl = cl->next) {
        ll = &cl->next;
    }

    cl = ngx_chain_get_free_buf(r->pool, &u->free_bufs);
    if (cl == NULL) {
        return NGX_ERROR;
    }

    *ll = cl;

    cl->buf->flush = 1;
    cl->buf->memory = 1;
    cl->buf->pos = pos;
    cl->buf->last = last;
    cl->buf->tag = u->output.tag;

    return NGX_OK;
}


/* the held reply, its denied tools taken out, goes out whole */

ngx_int_t
ngx_http_mcp_proxy_flush_filtered(ngx_http_request_t *r,
    ngx_http_mcp_proxy_ctx_t *pctx)
{
    ngx_int_t                    rc;
    ngx_str_t                    in, out;
    const char                  *error;
    ngx_http_mcp_tool_filter_t   tf;

    if (pctx->guard != NULL) {
        return ngx_http_mcp_proxy_guard_end(r, pctx);
    }

    if (!pctx->filter || pctx->acc_len == 0) {
        return NGX_OK;
    }

    in.data = pctx->acc;
    in.len = pctx->acc_len;

    /* held for the guardrails alone, and nothing in it they can match */
    rc = ngx_http_mcp_proxy_guard_reply(pctx, in.data, in.data + in.len);

    if (rc == NGX_DECLINED) {
        pctx->acc_len = 0;
        return ngx_http_mcp_proxy_whole(r, pctx, in.data, in.data + in.len);
    }

    if (rc != NGX_OK) {
        return NGX_ERROR;
    }

    ngx_http_mcp_proxy_tool_filter(pctx, &tf);

    /* a list as a worker relayed it before: as it came, unread */
    if (ngx_http_mcp_proxy_list_memo_find(pctx, &tf, &in) == NGX_OK) {
        pctx->acc_len = 0;
        return ngx_http_mcp_proxy_whole(r, pctx, in.data, in.data + in.len);
    }

    rc = ngx_http_mcp_policy_filter_reply(r->pool, &tf, &in, &out, &error);

    if (rc == NGX_DECLINED) {
        /* what the filter cannot read, the client must not read either */
        ngx_log_error(NGX_LOG_ERR, r->connection->log, 0,
                      "mcp: the upstream's reply to a filtered tools/list "
                      "is refused: %s", error ? error : "Parse error");

        rc = ngx_http_mcp_proxy_bad_reply(r, pctx, NGX_HTTP_MCP_SERVER_ERROR,
                                          "Bad gateway: the upstream MCP "
                                          "server's reply is not strict "
                                          "JSON");
        return (rc == NGX_DONE) ? NGX_OK : NGX_ERROR;
    }

    if (rc != NGX_OK) {
        return NGX_ERROR;
    }

    pctx->acc_len = 0;

    if (out.data == in.data && out.len == in.len) {
        ngx_http_mcp_proxy_list_memo_keep(pctx, &in);
    }

    return ngx_http_mcp_proxy_whole(r, pctx, out.data, out.data + out.len);
}


/* the whole body, after the head held back for it */

static ngx_int_t
ngx_http_mcp_proxy_whole(ngx_http_request_t *r,
    ngx_http_mcp_proxy_ctx_t *pctx, u_char *pos, u_char *last)
{
    if (ngx_http_mcp_proxy_send_header(r, pctx, last - pos) != NGX_OK) {
        return NGX_ERROR;
    }

    return ngx_http_mcp_proxy_append(r, pos, last);
}


ngx_int_t
ngx_http_mcp_proxy_head_filter_init(ngx_conf_t *cf)
{
    ngx_http_next_header_filter = ngx_http_top_header_filter;
    ngx_http_top_header_filter = ngx_http_mcp_proxy_header_filter;

    ngx_http_next_body_filter = ngx_http_top_body_filter;
    ngx_http_top_body_filter = ngx_http_mcp_proxy_body_filter;

    return NGX_OK;
}


/*
 * The head of a reply held whole (pctx->hold_header, set as the
 * upstream's head was read) waits for the body: nginx's own head of an
 * error page, or any head after that one, goes on.
 */

static ngx_int_t
ngx_http_mcp_proxy_header_filter(ngx_http_request_t *r)
{
    ngx_http_mcp_ctx_t        *ctx;
    ngx_http_mcp_proxy_ctx_t  *pctx;

    if (r->upstream == NULL || r != r->main) {
        return ngx_http_next_header_filter(r);
    }

    ctx = ngx_http_get_module_ctx(r, ngx_http_mcp_module);

    if (ctx == NULL || ctx->proxy == NULL) {
        return ngx_http_next_header_filter(r);
    }

    pctx = ctx->proxy;

    if (!pctx->hold_header || r->err_status) {
        pctx->hold_header = 0;
        return ngx_http_next_header_filter(r);
    }

    pctx->hold_header = 0;
    pctx->header_held = 1;

    return NGX_OK;
}


/*
 * The head held back goes, with the body's length (-1: chunked): once
 * the body is decided, or before any byte of another body.
 */

ngx_int_t
ngx_http_mcp_proxy_send_header(ngx_http_request_t *r,
    ngx_http_mcp_proxy_ctx_t *pctx, off_t length)
{
    ngx_int_t  rc;

    if (!pctx->header_held) {
        return NGX_OK;
    }

    pctx->header_held = 0;
    r->headers_out.content_length_n = length;

    rc = ngx_http_next_header_filter(r);

    return (rc == NGX_ERROR || rc > NGX_OK) ? NGX_ERROR : NGX_OK;
}


/*
 * Output while the head is held: a flush alone (the upstream module's,
 * after the head it thinks sent) has nothing to send yet; any body
 * (the reply's left unheld, nginx's last buffer at the end) takes the
 * head out first, with its length if it is all there.
 */

static ngx_int_t
ngx_http_mcp_proxy_body_filter(ngx_http_request_t *r, ngx_chain_t *in)
{
    off_t                      size;
    ngx_uint_t                 last;
    ngx_chain_t               *cl;
    ngx_http_mcp_ctx_t        *ctx;
    ngx_http_mcp_proxy_ctx_t  *pctx;

    if (in == NULL || r->upstream == NULL || r != r->main) {
        return ngx_http_next_body_filter(r, in);
    }

    ctx = ngx_http_get_module_ctx(r, ngx_http_mcp_module);

    if (ctx == NULL || ctx->proxy == NULL) {
        return ngx_http_next_body_filter(r, in);
    }

    pctx = ctx->proxy;

    if (!pctx->header_held) {
        return ngx_http_next_body_filter(r, in);
    }

    size = 0;
    last = 0;

    for (cl = in; cl; cl = cl->next) {
        size += ngx_buf_size(cl->buf);
        last |= cl->buf->last_buf;
    }

    if (size == 0 && !last) {
        return NGX_OK;
    }

    if (ngx_http_mcp_proxy_send_header(r, pctx, last ? size : -1) != NGX_OK)
    {
        return NGX_ERROR;
    }

    return ngx_http_next_body_filter(r, in);
}
