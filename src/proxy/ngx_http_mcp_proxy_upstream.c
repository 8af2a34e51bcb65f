
/*
 * mcp_pass, the upstream side: the request to the replica, the reply's
 * status and headers (the replica's session id is taken, never relayed);
 * its body goes through ngx_http_mcp_proxy_body.c, unbuffered, or through
 * the tool policy when tools/list replies are filtered.  An upstream is
 * untrusted: what is held of its reply is bounded, and each of its
 * failures is a JSON-RPC error.
 */


#include "ngx_http_mcp_proxy.h"
#include "ngx_http_mcp_jsonguard.h"
#include "ngx_http_mcp_jsonrpc.h"
#include "ngx_http_mcp_param.h"
#include "ngx_http_mcp_store.h"
#include "ngx_http_mcp_call.h"
#include "ngx_http_mcp_core.h"
#include "ngx_http_mcp_metrics.h"
#include "ngx_http_mcp_trace.h"
#include "ngx_http_mcp_http.h"


static ngx_int_t ngx_http_mcp_proxy_create_request(ngx_http_request_t *r);
static size_t ngx_http_mcp_proxy_client_headers(ngx_http_request_t *r,
    ngx_http_mcp_proxy_loc_conf_t *plcf, ngx_buf_t *b);
static ngx_uint_t ngx_http_mcp_proxy_relayed(ngx_table_elt_t *h,
    ngx_http_mcp_proxy_loc_conf_t *plcf, ngx_uint_t *seen);
static ngx_int_t ngx_http_mcp_proxy_reinit_request(ngx_http_request_t *r);
static ngx_int_t ngx_http_mcp_proxy_process_status(ngx_http_request_t *r);
static ngx_int_t ngx_http_mcp_proxy_process_header(ngx_http_request_t *r);
static ngx_int_t ngx_http_mcp_proxy_headers_done(ngx_http_request_t *r,
    ngx_http_mcp_proxy_ctx_t *pctx);
static void ngx_http_mcp_proxy_abort_request(ngx_http_request_t *r);
static void ngx_http_mcp_proxy_finalize_request(ngx_http_request_t *r,
    ngx_int_t rc);
static ngx_int_t ngx_http_mcp_proxy_relay_add(ngx_http_request_t *r,
    ngx_http_mcp_proxy_ctx_t *pctx);
static void ngx_http_mcp_proxy_relay_cleanup(void *data);


/*
 * The worker's relayed streams that end only when the client or the
 * upstream ends them (GET streams, subscriptions/listen): a graceful
 * exit ends them, as it ends the module's own, or the old worker would
 * live as long as they do.
 */
static ngx_queue_t  ngx_http_mcp_proxy_relays = {
    &ngx_http_mcp_proxy_relays, &ngx_http_mcp_proxy_relays
};


ngx_int_t
ngx_http_mcp_proxy_start(ngx_http_request_t *r,
    ngx_http_mcp_proxy_ctx_t *pctx)
{
    ngx_http_upstream_t            *u;
    ngx_http_mcp_loc_conf_t        *mlcf;
    ngx_http_mcp_proxy_loc_conf_t  *plcf;

    mlcf = pctx->ctx->conf;
    plcf = pctx->conf;

    if (ngx_http_upstream_create(r) != NGX_OK) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    u = r->upstream;

    /*
     * A session's requests stay on its replica; initialize and stateless
     * requests, which no replica holds state for, may move on.
     */
    u->conf = (pctx->initialize || pctx->stateless) ? &plcf->upstream_init
                                                    : &plcf->upstream;
    u->output.tag = (ngx_buf_tag_t) &ngx_http_mcp_module;

    /*
     * one that may go again: its writer and a failed connection's free
     * choose, connection by connection (ngx_http_mcp_proxy_retry.c)
     */
    pctx->uconf = u->conf;

    if (plcf->retry) {
        u->output.output_filter = ngx_http_mcp_proxy_retry_output;
        u->output.filter_ctx = r;
    }

    u->create_request = ngx_http_mcp_proxy_create_request;
    u->reinit_request = ngx_http_mcp_proxy_reinit_request;
    u->process_header = ngx_http_mcp_proxy_process_status;
    u->abort_request = ngx_http_mcp_proxy_abort_request;
    u->finalize_request = ngx_http_mcp_proxy_finalize_request;

    u->input_filter_init = ngx_http_mcp_proxy_filter_init;
    u->input_filter = ngx_http_mcp_proxy_filter;
    u->input_filter_ctx = r;

    u->buffering = 0;

    pctx->started = ngx_http_mcp_metrics_start(mlcf);

#if (NGX_HTTP_SSL)
    u->ssl = plcf->ssl;
    u->ssl_name = plcf->ssl_host;
#endif

    if (pctx->pinned && ngx_http_mcp_balancer_bypass(plcf->upstream.upstream))
    {
        /*
         * The replica that created the session, not the balancer's pick:
         * a connection of its own (mcp_affinity picks it, and keeps it).
         */
        u->resolved = ngx_pcalloc(r->pool,
                                  sizeof(ngx_http_upstream_resolved_t));
        if (u->resolved == NULL) {
            return NGX_HTTP_INTERNAL_SERVER_ERROR;
        }

        u->resolved->sockaddr = pctx->target.sockaddr;
        u->resolved->socklen = pctx->target.socklen;
        u->resolved->name = pctx->target.name;
        u->resolved->naddrs = 1;
        u->resolved->port = ngx_inet_get_port(pctx->target.sockaddr);

        /* the name TLS verifies and sends (SNI), not the address */
        u->resolved->host = plcf->ssl_host.len ? plcf->ssl_host
                                               : pctx->target.name;
    }

    ngx_http_upstream_init(r);

    return NGX_DONE;
}


static ngx_int_t
ngx_http_mcp_proxy_create_request(ngx_http_request_t *r)
{
    size_t                     len, set_len;
    ngx_buf_t                 *b;
    ngx_str_t                 *uri, sid, *set, *token, *content;
    ngx_chain_t               *cl, *body;
    ngx_http_mcp_ctx_t             *ctx;
    ngx_http_mcp_proxy_ctx_t       *pctx;
    ngx_http_mcp_proxy_loc_conf_t  *plcf;

    ctx = ngx_http_get_module_ctx(r, ngx_http_mcp_module);
    pctx = ctx->proxy;
    plcf = pctx->conf;

    uri = &plcf->proxy_uri;

    if (uri->len == 0) {
        /*
         * The URI the location was chosen by, escaped, not the client's
         * spelling of it: "/admin/..%2Fmcp" is "/mcp" here, and an upstream
         * that routes the raw text would read "/admin".
         */
        uri = ngx_http_mcp_proxy_uri(r);
        if (uri == NULL) {
            return NGX_ERROR;
        }
    }

    sid = pctx->target.sid;

    /* a view's renamed call: the body printed with the real name */
    content = pctx->body.data ? &pctx->body : &ctx->body;

    /* mcp_pass_set_header: evaluated once, for the length and the text */
    set = NULL;
    set_len = 0;

    if (plcf->set_headers != NULL) {
        set = ngx_http_mcp_proxy_set_headers(r, plcf, &set_len);
        if (set == NULL) {
            return NGX_ERROR;
        }
    }

    /* mcp_token_exchange: the exchanged token, never the caller's */
    token = NULL;

    if (plcf->exchange != NULL) {
        token = ngx_http_mcp_exchange_token(r);

        /* no exchanged token: nothing goes, the caller's least of all */
        if (token == NULL) {
            ngx_log_error(NGX_LOG_ERR, r->connection->log, 0,
                          "mcp: no exchanged token to relay with");
            return NGX_ERROR;
        }
    }

    len = r->method_name.len + 1 + uri->len + sizeof(" HTTP/1.1\r\n") - 1
          + (token ? sizeof("Authorization: Bearer \r\n") - 1 + token->len
                   : 0)
          + sizeof("Host: \r\n") - 1 + plcf->proxy_host.len
          + sizeof("Mcp-Session-Id: \r\n") - 1 + sid.len
          + sizeof("Content-Length: \r\n") - 1 + NGX_OFF_T_LEN
          + sizeof("\r\n") - 1 + set_len
          + ngx_http_mcp_trace_lines_len(&ctx->trace)
          + ngx_http_mcp_proxy_client_headers(r, plcf, NULL);

    b = ngx_create_temp_buf(r->pool, len);
    if (b == NULL) {
        return NGX_ERROR;
    }

    b->last = ngx_cpymem(b->last, r->method_name.data, r->method_name.len);
    *b->last++ = ' ';
    b->last = ngx_cpymem(b->last, uri->data, uri->len);
    b->last = ngx_cpymem(b->last, " HTTP/1.1" CRLF "Host: ",
                         sizeof(" HTTP/1.1" CRLF "Host: ") - 1);
    b->last = ngx_cpymem(b->last, plcf->proxy_host.data, plcf->proxy_host.len);
    b->last = ngx_cpymem(b->last, CRLF, sizeof(CRLF) - 1);

    (void) ngx_http_mcp_proxy_client_headers(r, plcf, b);

    /* the trace the body says (the edge made it so), not the client's */
    b->last = ngx_http_mcp_trace_lines(&ctx->trace, b->last);

    if (set != NULL) {
        b->last = ngx_http_mcp_proxy_set_headers_write(plcf, set, b->last);
    }

    if (token != NULL) {
        b->last = ngx_cpymem(b->last, "Authorization: Bearer ",
                             sizeof("Authorization: Bearer ") - 1);
        b->last = ngx_cpymem(b->last, token->data, token->len);
        b->last = ngx_cpymem(b->last, CRLF, sizeof(CRLF) - 1);
    }

    if (sid.len) {
        b->last = ngx_cpymem(b->last, "Mcp-Session-Id: ",
                             sizeof("Mcp-Session-Id: ") - 1);
        b->last = ngx_cpymem(b->last, sid.data, sid.len);
        b->last = ngx_cpymem(b->last, CRLF, sizeof(CRLF) - 1);
    }

    if (r->method == NGX_HTTP_POST) {
        b->last = ngx_sprintf(b->last, "Content-Length: %uz" CRLF,
                              content->len);
    }

    *b->last++ = CR;
    *b->last++ = LF;

    cl = ngx_alloc_chain_link(r->pool);
    if (cl == NULL) {
        return NGX_ERROR;
    }

    cl->buf = b;
    cl->next = NULL;

    /*
     * The client's bytes go on unchanged.  Policy and scopes were decided
     * on the parsed message, and the parser refuses every body that
     * another parser could read differently (duplicate names, escapes
     * that cJSON and others decode apart, numbers beyond a double), so
     * the upstream reads what was checked; printing the message again
     * would cost a print per request and change ids' spelling.  A call a
     * view renames is the exception: printed from the parsed messages,
     * what the edge checked, with the ids as the client wrote them
     * (ngx_http_mcp_proxy_view.c).
     */

    if (r->method == NGX_HTTP_POST && content->len) {
        body = ngx_alloc_chain_link(r->pool);
        b = ngx_calloc_buf(r->pool);

        if (body == NULL || b == NULL) {
            return NGX_ERROR;
        }

        /* sent again from its start: nginx rewinds pos to start */
        b->start = content->data;
        b->pos = b->start;
        b->last = content->data + content->len;
        b->end = b->last;
        b->memory = 1;

        body->buf = b;
        body->next = NULL;
        cl->next = body;
    }

    /*
     * The request's end: a TLS connection buffers what it is given until
     * a flush.  A fresh connection's next write event flushes it; one
     * from the keepalive cache gets no such event and held the request
     * unsent until the client gave up.
     */
    b->flush = 1;

    r->upstream->request_bufs = cl;

    return NGX_OK;
}


/*
 * The client's headers the upstream gets, written to b; with b NULL,
 * their length.  One walk of the list, in the client's order.  A name
 * the location sets (mcp_pass_set_header) is the location's alone: its
 * Authorization replaces the client's, whatever mcp_pass_authorization
 * says.
 */

static size_t
ngx_http_mcp_proxy_client_headers(ngx_http_request_t *r,
    ngx_http_mcp_proxy_loc_conf_t *plcf, ngx_buf_t *b)
{
    size_t                     len;
    ngx_str_t                 *value;
    ngx_uint_t                 i, seen;
    ngx_list_part_t           *part;
    ngx_table_elt_t           *h;
    ngx_http_mcp_proxy_ctx_t  *pctx;

    len = 0;
    seen = 0;
    pctx = ngx_http_mcp_proxy_get_ctx(r);

    part = &r->headers_in.headers.part;
    i = 0;

    while ((h = ngx_http_mcp_header_walk(&part, &i)) != NULL) {

        if (!ngx_http_mcp_proxy_relayed(h, plcf, &seen)
            || (plcf->set_headers != NULL
                && ngx_http_mcp_proxy_set_header_named(plcf, h)))
        {
            continue;
        }

        /* a renamed call's Mcp-Name says the body's real name */
        value = (pctx->mcp_name.data != NULL
                 && h->key.len == sizeof("mcp-name") - 1
                 && ngx_strncmp(h->lowcase_key, "mcp-name",
                                sizeof("mcp-name") - 1) == 0)
                ? &pctx->mcp_name : &h->value;

        if (b == NULL) {
            len += h->key.len + sizeof(": " CRLF) - 1 + value->len;
            continue;
        }

        b->last = ngx_cpymem(b->last, h->key.data, h->key.len);
        *b->last++ = ':';
        *b->last++ = ' ';
        b->last = ngx_cpymem(b->last, value->data, value->len);
        b->last = ngx_cpymem(b->last, CRLF, sizeof(CRLF) - 1);
    }

    return len;
}


/*
 * Whether the upstream gets client header h: the first of each name
 * below (Authorization only if asked; seen: the names met so far, a bit
 * each), and every Mcp-Param-* header, which the upstream checks against
 * the body (its tools declare them in x-mcp-header, which the gateway
 * does not know).
 */

static ngx_uint_t
ngx_http_mcp_proxy_relayed(ngx_table_elt_t *h,
    ngx_http_mcp_proxy_loc_conf_t *plcf, ngx_uint_t *seen)
{
    ngx_uint_t  k;

    /* by the index the switch below gives a name's length */
    static ngx_str_t  relayed[] = {
        ngx_string("accept"),                   /* 0 */
        ngx_string("mcp-name"),                 /* 1 */
        ngx_string("mcp-method"),               /* 2 */
        ngx_string("content-type"),             /* 3 */
        ngx_string("last-event-id"),            /* 4 */
        ngx_string("authorization"),            /* 5: only if asked */
        ngx_string("mcp-protocol-version")      /* 6 */
    };

    if (h->key.len > sizeof(NGX_HTTP_MCP_PARAM_PREFIX) - 1
        && h->lowcase_key[0] == 'm'
        && ngx_memcmp(h->lowcase_key, "mcp-param-",
                      sizeof(NGX_HTTP_MCP_PARAM_PREFIX) - 1) == 0)
    {
        return 1;
    }

    /* a header a name: its length says which name it may be */

    switch (h->key.len) {

    case sizeof("accept") - 1:
        k = 0;
        break;

    case sizeof("mcp-name") - 1:
        k = 1;
        break;

    case sizeof("mcp-method") - 1:
        k = 2;
        break;

    case sizeof("content-type") - 1:
        k = 3;
        break;

    case sizeof("last-event-id") - 1:
        k = (h->lowcase_key[0] == 'l') ? 4 : 5;
        break;

    case sizeof("mcp-protocol-version") - 1:
        k = 6;
        break;

    default:
        return 0;
    }

    if (ngx_memcmp(h->lowcase_key, relayed[k].data, relayed[k].len) != 0
        || (*seen & (1 << k))
        || (k == 5 && (!plcf->pass_authorization || plcf->exchange)))
    {
        return 0;
    }

    *seen |= 1 << k;

    return 1;
}


static ngx_int_t
ngx_http_mcp_proxy_reinit_request(ngx_http_request_t *r)
{
    ngx_http_mcp_proxy_ctx_t  *pctx;

    pctx = ngx_http_mcp_proxy_get_ctx(r);

    ngx_memzero(&pctx->status, sizeof(ngx_http_status_t));
    pctx->sid_seen = 0;
    pctx->sid_header = NULL;
    pctx->acc_len = 0;
    pctx->replied = 0;

    r->upstream->process_header = ngx_http_mcp_proxy_process_status;
    r->state = 0;

    return NGX_OK;
}


static ngx_int_t
ngx_http_mcp_proxy_process_status(ngx_http_request_t *r)
{
    size_t                     len;
    ngx_int_t                  rc;
    ngx_http_upstream_t       *u;
    ngx_http_mcp_proxy_ctx_t  *pctx;

    pctx = ngx_http_mcp_proxy_get_ctx(r);
    u = r->upstream;

    /*
     * The replica took the request: whatever fails now, it is not sent
     * again (ngx_http_mcp_proxy_retry.c).
     */
    pctx->replied = 1;
    u->conf = pctx->uconf;

    rc = ngx_http_parse_status_line(r, &u->buffer, &pctx->status);

    if (rc == NGX_AGAIN) {
        return rc;
    }

    if (rc == NGX_ERROR) {
        ngx_log_error(NGX_LOG_ERR, r->connection->log, 0,
                      "mcp: upstream sent no valid HTTP status line");
        return NGX_HTTP_UPSTREAM_INVALID_HEADER;
    }

    if (pctx->status.http_version < NGX_HTTP_VERSION_11) {
        /* HTTP/1.0: the body may end with the connection */
        u->headers_in.connection_close = 1;
    }

    u->headers_in.status_n = pctx->status.code;

    if (u->state && u->state->status == 0) {
        u->state->status = pctx->status.code;
    }

    len = pctx->status.end - pctx->status.start;

    u->headers_in.status_line.len = len;
    u->headers_in.status_line.data = ngx_pnalloc(r->pool, len);
    if (u->headers_in.status_line.data == NULL) {
        return NGX_ERROR;
    }

    ngx_memcpy(u->headers_in.status_line.data, pctx->status.start, len);

    u->process_header = ngx_http_mcp_proxy_process_header;

    return ngx_http_mcp_proxy_process_header(r);
}


static ngx_int_t
ngx_http_mcp_proxy_process_header(ngx_http_request_t *r)
{
    ngx_int_t                       rc;
    ngx_table_elt_t                *h;
    ngx_http_upstream_t            *u;
    ngx_http_upstream_header_t     *hh;
    ngx_http_mcp_proxy_ctx_t       *pctx;
    ngx_http_upstream_main_conf_t  *umcf;

    umcf = ngx_http_get_module_main_conf(r, ngx_http_upstream_module);
    pctx = ngx_http_mcp_proxy_get_ctx(r);
    u = r->upstream;

    for ( ;; ) {

        rc = ngx_http_parse_header_line(r, &u->buffer, 1);

        if (rc == NGX_HTTP_PARSE_HEADER_DONE) {
            return ngx_http_mcp_proxy_headers_done(r, pctx);
        }

        if (rc == NGX_AGAIN) {
            return NGX_AGAIN;
        }

        if (rc != NGX_OK) {
            ngx_log_error(NGX_LOG_ERR, r->connection->log, 0,
                          "mcp: upstream sent an invalid header line");
            return NGX_HTTP_UPSTREAM_INVALID_HEADER;
        }

        h = ngx_list_push(&u->headers_in.headers);
        if (h == NULL) {
            return NGX_ERROR;
        }

        h->hash = r->header_hash;

        h->key.len = r->header_name_end - r->header_name_start;
        h->value.len = r->header_end - r->header_start;

        h->key.data = ngx_pnalloc(r->pool,
                           h->key.len + 1 + h->value.len + 1 + h->key.len);
        if (h->key.data == NULL) {
            return NGX_ERROR;
        }

        h->value.data = h->key.data + h->key.len + 1;
        h->lowcase_key = h->key.data + h->key.len + 1 + h->value.len + 1;

#if (nginx_version >= 1023000)
        /* since 1.23.0 nginx chains headers with the same name */
        h->next = NULL;
#endif

        ngx_memcpy(h->key.data, r->header_name_start, h->key.len);
        h->key.data[h->key.len] = '\0';
        ngx_memcpy(h->value.data, r->header_start, h->value.len);
        h->value.data[h->value.len] = '\0';

        if (h->key.len == r->lowcase_index) {
            ngx_memcpy(h->lowcase_key, r->lowcase_header, h->key.len);

        } else {
            ngx_strlow(h->lowcase_key, h->key.data, h->key.len);
        }

        if (ngx_http_mcp_proxy_header_twice(u, h, pctx->sid_seen)) {
            ngx_log_error(NGX_LOG_ERR, r->connection->log, 0,
                          "mcp: upstream sent the \"%V\" header twice",
                          &h->key);
            return NGX_HTTP_UPSTREAM_INVALID_HEADER;
        }

        if (h->key.len == sizeof("mcp-session-id") - 1
            && ngx_strncmp(h->lowcase_key, "mcp-session-id", h->key.len) == 0)
        {
            /* the client sees the gateway's id, never the replica's */
            pctx->upstream_sid = h->value;
            pctx->sid_seen = 1;
            pctx->sid_header = h;
            h->value = pctx->client_sid;
            continue;
        }

        hh = ngx_hash_find(&umcf->headers_in_hash, h->hash, h->lowcase_key,
                           h->key.len);

        if (hh) {
            rc = hh->handler(r, h, hh->offset);

            if (rc != NGX_OK) {
                /*
                 * 1.23 checks the framing headers in their handlers (a
                 * length beside chunked, an unknown coding): a bad reply
                 * head, as our own checks call it, not our error
                 */
                return (rc == NGX_HTTP_UPSTREAM_INVALID_HEADER)
                       ? rc : NGX_ERROR;
            }
        }
    }
}


static ngx_int_t
ngx_http_mcp_proxy_headers_done(ngx_http_request_t *r,
    ngx_http_mcp_proxy_ctx_t *pctx)
{
    ngx_str_t               no = ngx_string("no");
    ngx_int_t               rc;
    ngx_uint_t              status;
    ngx_table_elt_t        *h;
    ngx_http_upstream_t    *u;
    ngx_http_mcp_ctx_t     *ctx;
    ngx_http_mcp_target_t   target;

    u = r->upstream;
    ctx = pctx->ctx;
    status = u->headers_in.status_n;

    ngx_http_mcp_metrics_upstream_header(pctx->started);

    rc = ngx_http_mcp_proxy_reply_head(r);

    if (rc != NGX_OK) {
        return rc;
    }

    pctx->is_chunked = u->headers_in.chunked;
    pctx->length = u->headers_in.content_length_n;
    pctx->sse = ngx_http_mcp_proxy_sse_type(u);

    /* the upstream's own X-Accel-* are hidden: this one is the gateway's */
    if (pctx->sse
        && ngx_http_mcp_header_out(r, "X-Accel-Buffering", &no) != NGX_OK)
    {
        return NGX_ERROR;
    }

    if (pctx->sse && status < 300
        && ngx_http_mcp_proxy_relay_add(r, pctx) != NGX_OK)
    {
        return NGX_ERROR;
    }

    /*
     * A reply read for its outcomes or checks: an SSE reply event by
     * event, a JSON reply to a POST held whole, but for one too large to
     * hold that is read for the outcome alone: it goes on unread.
     */
    if (pctx->read && !pctx->filter && !ngx_http_mcp_proxy_read_as_sse(r)
        && r->method == NGX_HTTP_POST && status >= 200 && status < 300)
    {
        pctx->filter = 1;
        pctx->lax = !pctx->must_read;

        if (pctx->lax
            && pctx->length > (off_t) pctx->conf->filter_buffer_size)
        {
            pctx->filter = 0;
            pctx->lax = 0;
        }
    }

    if (pctx->filter && pctx->length > (off_t) pctx->conf->filter_buffer_size)
    {
        ngx_log_error(NGX_LOG_ERR, r->connection->log, 0,
                      "mcp: the upstream's reply of %O bytes is over "
                      "\"mcp_pass_filter_buffer_size\" %uz",
                      pctx->length, pctx->conf->filter_buffer_size);
        return NGX_HTTP_UPSTREAM_INVALID_HEADER;
    }

    /* else filtered event by event (ngx_http_mcp_proxy_stream.c) */
    pctx->events = (pctx->policy || pctx->read) && !pctx->filter
                   && ngx_http_mcp_proxy_read_as_sse(r);

    /* and so when a request may come before notifications/initialized */
    if (ngx_http_mcp_proxy_hold_init(r, pctx) == NGX_ERROR) {
        return NGX_ERROR;
    }

    /*
     * else a JSON reply to a POST (the tools/call of a large result) goes
     * out as it comes, its messages' ids read on the way
     */
    pctx->guard = NULL;

    if (pctx->policy && !pctx->filter && !pctx->events
        && r->method == NGX_HTTP_POST && status >= 200 && status < 300)
    {
        /* a client reads messages from a 2xx reply only */
        pctx->guard = ngx_palloc(r->pool, sizeof(ngx_http_mcp_jsonguard_t));
        if (pctx->guard == NULL
            || ngx_http_mcp_jsonguard_init(pctx->guard, r->pool, &ctx->msgs)
               != NGX_OK)
        {
            return NGX_ERROR;
        }
    }

    if (pctx->filter || pctx->events) {
        /* the reply changes length: it goes out chunked */
        u->headers_in.content_length_n = -1;
    }

    /*
     * or, held whole, with its head held back for it and its own length
     * (ngx_http_mcp_proxy_body.c); not a HEAD's, a 204's, nor an HTTP/2
     * or HTTP/3 one's, whose head and body are frames of their own
     */
    pctx->hold_header = pctx->filter && r == r->main
                        && r->method == NGX_HTTP_POST
                        && r->http_version < NGX_HTTP_VERSION_20
                        && status >= 200 && status < 300
                        && status != NGX_HTTP_NO_CONTENT;
    pctx->header_held = 0;

    if (pctx->initialize) {
        if (status >= 200 && status < 300) {
            pctx->init_ok = 1;

            /* evicted meanwhile (NGX_DECLINED): the client finds it gone */
            target.sockaddr = u->peer.sockaddr;
            target.socklen = u->peer.socklen;
            target.name = *u->peer.name;
            target.sid = pctx->upstream_sid;

            if (ctx->conf->session_keys != NULL) {
                rc = ngx_http_mcp_proxy_sesskey_mint(r, pctx);

                if (rc != NGX_OK) {
                    /* the replica's id does not fit: as a bad reply */
                    return (rc == NGX_DECLINED)
                           ? NGX_HTTP_UPSTREAM_INVALID_HEADER : NGX_ERROR;
                }

            } else if (ngx_http_mcp_session_target_set(ctx->conf->zone,
                                                       &pctx->client_sid,
                                                       &target)
                       == NGX_ERROR)
            {
                return NGX_ERROR;
            }

            if (!pctx->sid_seen) {
                /* a stateless replica: the client still gets a session */
                h = ngx_http_mcp_header_push(&u->headers_in.headers,
                                             (u_char *) "Mcp-Session-Id",
                                             sizeof("Mcp-Session-Id") - 1,
                                             &pctx->client_sid);
                if (h == NULL) {
                    return NGX_ERROR;
                }

                /* read by the upstream module's hide and copy lookups */
                h->lowcase_key = (u_char *) "mcp-session-id";
            }

        } else {
            (void) ngx_http_mcp_session_delete(ctx->conf->zone,
                                               &pctx->client_sid,
                                               r->connection->log);
        }
    }

    if (pctx->pinned
        && (status == NGX_HTTP_NOT_FOUND
            || (r->method == NGX_HTTP_DELETE && status >= 200
                && status < 300)))
    {
        /* the replica forgot the session, or the client ended it */
        (void) ngx_http_mcp_session_delete(ctx->conf->zone,
                                           &pctx->client_sid,
                                           r->connection->log);
    }

    return NGX_OK;
}


static void
ngx_http_mcp_proxy_abort_request(ngx_http_request_t *r)
{
    ngx_log_debug0(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "mcp proxy request aborted");
}


/*
 * The session's replica did not answer: the session is gone with it.
 * The error page filter answers 404, and the client initializes again.
 */

static void
ngx_http_mcp_proxy_finalize_request(ngx_http_request_t *r, ngx_int_t rc)
{
    ngx_http_mcp_ctx_t        *ctx;
    ngx_http_mcp_proxy_ctx_t  *pctx;

    ctx = ngx_http_get_module_ctx(r, ngx_http_mcp_module);
    pctx = ctx->proxy;

    ngx_http_mcp_metrics_gateway(r, &ctx->msgs, pctx->started, rc,
                                 r->upstream->request_sent);

    /* a held reply that the upstream's close ended: no filter saw it end */
    if (rc == 0 && (pctx->filter || pctx->guard != NULL)
        && (r->header_sent || pctx->header_held)
        && r->upstream->length == -1)
    {
        if (ngx_http_mcp_proxy_flush_filtered(r, pctx) != NGX_OK) {
            /*
             * Cut: nginx would end the reply with its last chunk (rc is
             * 0, the upstream's close is its end), and the client would
             * take what it holds for a whole reply.  A connection in
             * error ends without it, as after an upstream's failure.
             */
            r->connection->error = 1;

        } else if (r->upstream->out_bufs != NULL) {
            (void) ngx_http_output_filter(r, r->upstream->out_bufs);
            r->upstream->out_bufs = NULL;
        }
    }

    /*
     * A reply held whole failed (the upstream timed out, closed early, sent
     * a bad body): its head goes as it went before the body was held with
     * it, chunked, and nginx ends the reply without the last chunk.  Not
     * when the client is gone, or the request is being freed (NGX_DONE).
     */
    if (pctx->header_held && !r->connection->error
        && (rc == NGX_ERROR || rc >= NGX_HTTP_SPECIAL_RESPONSE)
        && rc != NGX_HTTP_REQUEST_TIME_OUT
        && rc != NGX_HTTP_CLIENT_CLOSED_REQUEST)
    {
        if (ngx_http_mcp_proxy_send_header(r, pctx, -1) != NGX_OK
            || ngx_http_send_special(r, NGX_HTTP_FLUSH) == NGX_ERROR)
        {
            r->connection->error = 1;
        }
    }

    ngx_http_mcp_proxy_hold_end(r, pctx, rc);

    if (pctx->initialize && !pctx->init_ok) {
        /* no replica took the session: it was never made */
        (void) ngx_http_mcp_session_delete(ctx->conf->zone,
                                           &pctx->client_sid,
                                           r->connection->log);
        return;
    }

    /*
     * A replica that took the request is alive, however it answered (or
     * did not, in time): only one that could not be reached is gone.
     */
    if (pctx->pinned && !r->upstream->request_sent && !r->header_sent
        && (rc == NGX_HTTP_BAD_GATEWAY || rc == NGX_HTTP_GATEWAY_TIME_OUT))
    {
        ngx_log_error(NGX_LOG_INFO, r->connection->log, 0,
                      "mcp: the replica of session %s is gone",
                      ngx_http_mcp_session_log_id(pctx->client_sid.data,
                                                  pctx->client_sid.len));

        pctx->replica_gone = 1;

        (void) ngx_http_mcp_session_delete(ctx->conf->zone,
                                           &pctx->client_sid,
                                           r->connection->log);
    }
}


ngx_uint_t
ngx_http_mcp_proxy_replica_gone(ngx_http_mcp_ctx_t *ctx)
{
    ngx_http_mcp_proxy_ctx_t  *pctx;

    pctx = ctx->proxy;

    return pctx != NULL && pctx->replica_gone;
}


/* a relayed SSE reply that only the client or the upstream would end */

static ngx_int_t
ngx_http_mcp_proxy_relay_add(ngx_http_request_t *r,
    ngx_http_mcp_proxy_ctx_t *pctx)
{
    ngx_http_mcp_msg_t  *msg;
    ngx_pool_cleanup_t  *cln;

    msg = pctx->ctx->msgs.nelts ? pctx->ctx->msgs.elts : NULL;

    if (r->method != NGX_HTTP_GET
        && !(msg != NULL && pctx->ctx->msgs.nelts == 1
             && msg->method.len == sizeof("subscriptions/listen") - 1
             && ngx_strncmp(msg->method.data, "subscriptions/listen",
                            msg->method.len) == 0))
    {
        return NGX_OK;
    }

    cln = ngx_pool_cleanup_add(r->pool, 0);
    if (cln == NULL) {
        return NGX_ERROR;
    }

    ngx_queue_insert_tail(&ngx_http_mcp_proxy_relays, &pctx->relay);
    pctx->endless = 1;

    cln->handler = ngx_http_mcp_proxy_relay_cleanup;
    cln->data = pctx;

    return NGX_OK;
}


static void
ngx_http_mcp_proxy_relay_cleanup(void *data)
{
    ngx_http_mcp_proxy_ctx_t  *pctx = data;

    if (pctx->endless) {
        ngx_queue_remove(&pctx->relay);
        pctx->endless = 0;
    }
}


/*
 * The worker exits gracefully: each endless relay ends as if the
 * upstream had finished its reply, with the chunked body's last chunk,
 * so the client sees a whole response and reconnects (a 2025 client with
 * Last-Event-ID, which the upstream resumes) to a worker that stays.
 * The same at the deadline: nothing else is left to wait for.
 */

void
ngx_http_mcp_proxy_quit(ngx_uint_t deadline)
{
    ngx_queue_t               *q;
    ngx_connection_t          *c;
    ngx_http_request_t        *r;
    ngx_http_mcp_proxy_ctx_t  *pctx;

    (void) deadline;

    while (!ngx_queue_empty(&ngx_http_mcp_proxy_relays)) {
        q = ngx_queue_head(&ngx_http_mcp_proxy_relays);
        ngx_queue_remove(q);

        pctx = ngx_queue_data(q, ngx_http_mcp_proxy_ctx_t, relay);
        pctx->endless = 0;

        r = pctx->ctx->request;
        c = r->connection;

        if (r->upstream == NULL || !r->upstream->header_sent) {
            continue;
        }

        ngx_log_debug0(NGX_LOG_DEBUG_HTTP, c->log, 0,
                       "mcp proxy: relayed stream ends, worker exits");

        /* nothing more to come: the next write ends the reply */
        r->upstream->length = 0;
        r->write_event_handler(r);
        ngx_http_run_posted_requests(c);
    }
}
