
/*
 * mcp_pass, an SSE reply under the tool policy read event by event: a GET
 * stream (resumed or not), or the reply of a POST that was not held for
 * filtering.  The upstream is not trusted: it may put a tools/list answer
 * on any stream, and the client takes it by its id.  So each event whose
 * data lists tools goes out without the denied ones (the policy's own
 * filter, ngx_http_mcp_policy_filter_event()); the others, comments, id:
 * and retry: lines go out as they came.  An event goes as soon as its
 * blank line is read: streams stay live.
 *
 * One event not yet whole is held, up to mcp_pass_filter_buffer_size.
 * An event over that, or one whose data is not strict JSON (a key twice
 * is the attack: a last-wins client reads another "result"), cuts the
 * stream: one [error] line, the reply ends without its last chunk, and
 * the client, who saw nothing of that event, may resume.  An event the
 * stream ends in before its blank line is dropped, as SSE clients do.
 *
 * The lines are read as every SSE reader of the module reads them
 * (ngx_http_mcp_sse_read.c): a client must see the events the filter saw.
 *
 * The same reader holds a request the upstream makes before the client's
 * notifications/initialized (ngx_http_mcp_proxy_hold.c), under the policy
 * or not.
 */


#include "ngx_http_mcp_proxy.h"
#include "ngx_http_mcp_sse_read.h"
#include "ngx_http_mcp_json.h"
#include "ngx_http_mcp_call.h"
#include "ngx_http_mcp_core.h"
#include "ngx_http_mcp_auth.h"
#include "ngx_http_mcp_http.h"


static ngx_int_t ngx_http_mcp_proxy_stream_hold(ngx_http_request_t *r,
    ngx_http_mcp_proxy_stream_t *st, size_t n, size_t max);
static ngx_int_t ngx_http_mcp_proxy_stream_over(ngx_http_request_t *r,
    size_t max);
static ngx_int_t ngx_http_mcp_proxy_stream_unread(ngx_http_request_t *r,
    ngx_http_mcp_proxy_ctx_t *pctx, u_char *pos, u_char *last,
    ngx_str_t *out, size_t *size);
static ngx_uint_t ngx_http_mcp_proxy_stream_bom(
    ngx_http_mcp_proxy_stream_t *st);
static ngx_int_t ngx_http_mcp_proxy_stream_events(ngx_http_request_t *r,
    ngx_http_mcp_proxy_ctx_t *pctx, ngx_str_t *out, size_t *size);
static ngx_int_t ngx_http_mcp_proxy_stream_event(ngx_http_request_t *r,
    ngx_http_mcp_proxy_ctx_t *pctx, u_char *start, u_char *end,
    ngx_str_t *out, size_t *size);
static ngx_int_t ngx_http_mcp_proxy_stream_copy(ngx_pool_t *pool,
    ngx_str_t *out, size_t *size, u_char *start, u_char *end);
static ngx_int_t ngx_http_mcp_proxy_stream_pool(ngx_http_request_t *r,
    ngx_http_mcp_proxy_stream_t *st);
static void ngx_http_mcp_proxy_stream_cleanup(void *data);
static ngx_int_t ngx_http_mcp_proxy_hold_event(ngx_http_request_t *r,
    ngx_http_mcp_proxy_ctx_t *pctx, u_char *start, u_char *end);
static ngx_int_t ngx_http_mcp_proxy_asks(ngx_pool_t *pool, u_char *start,
    u_char *end);
static ngx_uint_t ngx_http_mcp_proxy_is_request(cJSON *json);


/*
 * The body's bytes [pos, last): *out is what goes to the client now (the
 * events that became whole), in memory that lives until it was sent.
 * NGX_DECLINED: the stream is cut (logged) after *out.
 */

ngx_int_t
ngx_http_mcp_proxy_stream(ngx_http_request_t *r,
    ngx_http_mcp_proxy_ctx_t *pctx, u_char *pos, u_char *last,
    ngx_str_t *out)
{
    size_t                        n, max, size;
    ngx_int_t                     rc;
    ngx_http_upstream_t          *u;
    ngx_http_mcp_proxy_stream_t  *st;

    u = r->upstream;
    st = &pctx->stream;
    max = pctx->conf->filter_buffer_size;

    out->data = NULL;
    out->len = 0;
    size = 0;

    /*
     * What went out before was written from st->pool: once nothing of
     * it is waiting for the client, the pool is made anew, so a stream
     * that lasts for days holds no more than one read's worth.
     */
    if (st->pool != NULL && u->out_bufs == NULL && u->busy_bufs == NULL) {
        ngx_destroy_pool(st->pool);
        st->pool = NULL;
    }

    if (st->pool == NULL
        && ngx_http_mcp_proxy_stream_pool(r, st) != NGX_OK)
    {
        return NGX_ERROR;
    }

    while (pos < last) {

        if (st->len == max) {
            /* a BOM not yet told (or a limit of 0): nothing more fits */
            return ngx_http_mcp_proxy_stream_over(r, max);
        }

        n = ngx_min((size_t) (last - pos), max - st->len);

        if (ngx_http_mcp_proxy_stream_hold(r, st, n, max) != NGX_OK) {
            return NGX_ERROR;
        }

        ngx_memcpy(st->buf + st->len, pos, n);
        st->len += n;
        pos += n;

        if (!st->bom_done && !ngx_http_mcp_proxy_stream_bom(st)) {
            /* the first bytes may still be a BOM */
            continue;
        }

        rc = ngx_http_mcp_proxy_stream_events(r, pctx, out, &size);

        if (rc != NGX_OK) {
            return rc;
        }

        if (st->len == max) {
            return ngx_http_mcp_proxy_stream_unread(r, pctx, pos, last, out,
                                                    &size);
        }
    }

    return NGX_OK;
}


/*
 * An event fills mcp_pass_filter_buffer_size.  A stream read for the
 * outcomes alone goes on unread: the event so far, the rest as it comes
 * (ngx_http_mcp_proxy_body.c), as the log is no reason to cut it; one
 * that a policy, a check or a held request reads is cut.
 */

static ngx_int_t
ngx_http_mcp_proxy_stream_unread(ngx_http_request_t *r,
    ngx_http_mcp_proxy_ctx_t *pctx, u_char *pos, u_char *last,
    ngx_str_t *out, size_t *size)
{
    ngx_http_mcp_proxy_stream_t  *st;

    st = &pctx->stream;

    if (pctx->policy || pctx->must_read || pctx->hold || !pctx->read) {
        return ngx_http_mcp_proxy_stream_over(r, st->len);
    }

    ngx_log_debug1(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "mcp proxy stream: an event over %uz, relayed unread",
                   st->len);

    pctx->events = 0;

    if (ngx_http_mcp_proxy_stream_copy(st->pool, out, size, st->buf,
                                       st->buf + st->len)
        != NGX_OK
        || ngx_http_mcp_proxy_stream_copy(st->pool, out, size, pos, last)
           != NGX_OK)
    {
        return NGX_ERROR;
    }

    st->len = 0;

    return NGX_OK;
}


/* the held event, not yet whole, fills mcp_pass_filter_buffer_size */

static ngx_int_t
ngx_http_mcp_proxy_stream_over(ngx_http_request_t *r, size_t max)
{
    ngx_log_error(NGX_LOG_ERR, r->connection->log, 0,
                  "mcp: an event of the upstream's stream is over "
                  "\"mcp_pass_filter_buffer_size\" %uz, the stream is cut",
                  max);

    return NGX_DECLINED;
}


/* room for n bytes more in the held event, which is never over max */

static ngx_int_t
ngx_http_mcp_proxy_stream_hold(ngx_http_request_t *r,
    ngx_http_mcp_proxy_stream_t *st, size_t n, size_t max)
{
    u_char  *p;
    size_t   size;

    if (st->len + n <= st->size) {
        return NGX_OK;
    }

    size = ngx_max(ngx_max(2 * st->size, st->len + n), 4096);
    size = ngx_min(size, max);

    p = ngx_pnalloc(r->pool, size);
    if (p == NULL) {
        return NGX_ERROR;
    }

    if (st->len) {
        ngx_memcpy(p, st->buf, st->len);
    }

    if (st->buf != NULL) {
        /* a large allocation is given back; a small one stays */
        (void) ngx_pfree(r->pool, st->buf);
    }

    st->buf = p;
    st->size = size;

    return NGX_OK;
}


/*
 * The BOMs the stream begins with are dropped: a client drops one, or
 * two (a TextDecoder, then an SSE parser), and reads the first line's
 * name after them; without any left, every client reads what was
 * filtered.  0: too few bytes yet to tell.
 */

static ngx_uint_t
ngx_http_mcp_proxy_stream_bom(ngx_http_mcp_proxy_stream_t *st)
{
    u_char  *p, *end;

    end = st->buf + st->len;

    for (p = st->buf; ngx_http_mcp_sse_bom(p, end) != p; p += 3) {
        /* void */
    }

    if (p != st->buf) {
        st->len = end - p;
        ngx_memmove(st->buf, p, st->len);
    }

    if (ngx_http_mcp_sse_bom_pending(st->buf, st->buf + st->len)) {
        return 0;
    }

    st->bom_done = 1;

    return 1;
}


/*
 * The whole events in the held bytes go to out; what is left of the
 * next one moves to the buffer's start.  A line is read past once only:
 * st->scan and st->line say where the reading stopped.
 */

static ngx_int_t
ngx_http_mcp_proxy_stream_events(ngx_http_request_t *r,
    ngx_http_mcp_proxy_ctx_t *pctx, ngx_str_t *out, size_t *size)
{
    u_char     *p, *end, *eol, *next, *line, *start;
    ngx_int_t   rc;

    start = pctx->stream.buf;
    end = start + pctx->stream.len;
    p = start + pctx->stream.scan;
    line = start + pctx->stream.line;

    for ( ;; ) {
        eol = ngx_http_mcp_sse_eol(p, end, &next);

        if (eol == NULL) {
            p = end;
            break;
        }

        if (*eol == '\r' && next == end && eol != line) {
            /*
             * A CR last, after a line's text: the LF that may come next
             * ends the same line, and is no blank line.  A blank line's
             * CR ends its event at once: an LF after it is an empty line
             * that ends no event, here and at the client.
             */
            p = eol;
            break;
        }

        if (eol == line) {
            /* a blank line: the event [start, next) is whole */

            rc = ngx_http_mcp_proxy_stream_event(r, pctx, start, next, out,
                                                 size);
            if (rc != NGX_OK) {
                return rc;
            }

            start = next;
        }

        p = next;
        line = next;
    }

    pctx->stream.len = end - start;
    pctx->stream.scan = p - start;
    pctx->stream.line = line - start;

    if (start != pctx->stream.buf && pctx->stream.len) {
        ngx_memmove(pctx->stream.buf, start, pctx->stream.len);
    }

    return NGX_OK;
}


/* one whole event: held, or out, filtered under the policy */

static ngx_int_t
ngx_http_mcp_proxy_stream_event(ngx_http_request_t *r,
    ngx_http_mcp_proxy_ctx_t *pctx, u_char *start, u_char *end,
    ngx_str_t *out, size_t *size)
{
    ngx_int_t                    rc;
    const char                  *error;
    ngx_http_mcp_tool_filter_t   tf;

    if (pctx->hold) {
        rc = ngx_http_mcp_proxy_hold_event(r, pctx, start, end);

        if (rc != NGX_AGAIN) {
            return rc;
        }
    }

    if (!pctx->policy && !pctx->read) {
        return ngx_http_mcp_proxy_stream_copy(pctx->stream.pool, out, size,
                                              start, end);
    }

    /* read for the guardrails alone, and nothing in it they can match */
    rc = ngx_http_mcp_proxy_guard_reply(pctx, start, end);

    if (rc == NGX_DECLINED) {
        return ngx_http_mcp_proxy_stream_copy(pctx->stream.pool, out, size,
                                              start, end);
    }

    if (rc != NGX_OK) {
        return NGX_ERROR;
    }

    ngx_http_mcp_proxy_tool_filter(pctx, &tf);

    error = NULL;
    rc = ngx_http_mcp_policy_filter_event(pctx->stream.pool, &tf, start, end,
                                          out, size, &error);

    if (rc == NGX_DECLINED) {
        ngx_log_error(NGX_LOG_ERR, r->connection->log, 0,
                      "mcp: an event of the upstream's stream is "
                      "refused, the stream is cut: %s",
                      error ? error : "Parse error");
        return NGX_DECLINED;
    }

    if (rc != NGX_OK) {
        return NGX_ERROR;
    }

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "mcp proxy stream: event of %uz bytes, %uz out",
                   (size_t) (end - start), out->len);

    return NGX_OK;
}


/* [start, end) after out (of *size bytes), which grows in pool if need be */

static ngx_int_t
ngx_http_mcp_proxy_stream_copy(ngx_pool_t *pool, ngx_str_t *out,
    size_t *size, u_char *start, u_char *end)
{
    u_char  *p;
    size_t   n;

    n = end - start;

    if (*size - out->len < n) {
        *size = ngx_max(2 * *size, out->len + n);

        p = ngx_pnalloc(pool, *size);
        if (p == NULL) {
            return NGX_ERROR;
        }

        if (out->len) {
            ngx_memcpy(p, out->data, out->len);
        }

        out->data = p;
    }

    out->len = ngx_cpymem(out->data + out->len, start, n) - out->data;

    return NGX_OK;
}


static ngx_int_t
ngx_http_mcp_proxy_stream_pool(ngx_http_request_t *r,
    ngx_http_mcp_proxy_stream_t *st)
{
    ngx_pool_cleanup_t  *cln;

    if (!st->cleanup) {
        cln = ngx_pool_cleanup_add(r->pool, 0);
        if (cln == NULL) {
            return NGX_ERROR;
        }

        cln->handler = ngx_http_mcp_proxy_stream_cleanup;
        cln->data = st;
        st->cleanup = 1;
    }

    st->pool = ngx_create_pool(4096, r->connection->log);

    return (st->pool != NULL) ? NGX_OK : NGX_ERROR;
}


static void
ngx_http_mcp_proxy_stream_cleanup(void *data)
{
    ngx_http_mcp_proxy_stream_t  *st = data;

    if (st->pool != NULL) {
        ngx_destroy_pool(st->pool);
        st->pool = NULL;
    }
}


/*
 * A whole event of a relay that looks for requests: NGX_OK, it is held;
 * NGX_AGAIN, it goes on; NGX_DECLINED, the stream is cut (logged).
 */

static ngx_int_t
ngx_http_mcp_proxy_hold_event(ngx_http_request_t *r,
    ngx_http_mcp_proxy_ctx_t *pctx, u_char *start, u_char *end)
{
    size_t               max;
    ngx_int_t            rc;
    ngx_http_mcp_ctx_t  *ctx;

    ctx = pctx->ctx;
    max = pctx->conf->filter_buffer_size;

    if (!pctx->holding) {
        rc = ngx_http_mcp_proxy_asks(pctx->stream.pool, start, end);

        if (rc != NGX_OK) {
            return (rc == NGX_DECLINED) ? NGX_AGAIN : NGX_ERROR;
        }

        if (ngx_http_mcp_session_initialized(ctx->conf->zone,
                                             &pctx->client_sid)
            != NGX_AGAIN)
        {
            /* initialized since the reply began (or gone): no more looks */
            pctx->hold = 0;
            return NGX_AGAIN;
        }

        ngx_log_debug0(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                       "mcp proxy stream: a request waits for "
                       "notifications/initialized");

        /* the timer's handler is set (ngx_http_mcp_proxy_hold_init()) */
        pctx->holding = 1;
        pctx->hold_start = ngx_current_msec;

        ngx_add_timer(&pctx->hold_timer,
                      ngx_min(NGX_HTTP_MCP_PROXY_HOLD_POLL,
                              ctx->conf->request_timeout));
    }

    if (pctx->held.len + (end - start) > max) {
        ngx_log_error(NGX_LOG_ERR, r->connection->log, 0,
                      "mcp: what the upstream sent after a request held "
                      "for notifications/initialized is over "
                      "\"mcp_pass_filter_buffer_size\" %uz, the stream is "
                      "cut", max);
        return NGX_DECLINED;
    }

    return ngx_http_mcp_proxy_stream_copy(r->pool, &pctx->held,
                                          &pctx->held_size, start, end);
}


/*
 * NGX_OK: the event's data is a request (or a batch holding one) other
 * than ping, which the client may get before notifications/initialized;
 * notifications, log messages among them, and responses are not.  Data
 * that is not JSON is no request: the client reads none in it either.
 */

static ngx_int_t
ngx_http_mcp_proxy_asks(ngx_pool_t *pool, u_char *start, u_char *end)
{
    cJSON       *json, *m;
    u_char      *data, *d;
    ngx_int_t    rc;
    ngx_uint_t   asks;
    const char  *error;

    data = ngx_pnalloc(pool, end - start + 1);
    if (data == NULL) {
        return NGX_ERROR;
    }

    d = data + ngx_http_mcp_sse_data(start, end, data);

    if (ngx_http_mcp_json_ws(data, d) == d) {
        /* a priming event, a comment */
        return NGX_DECLINED;
    }

    json = NULL;

    rc = ngx_http_mcp_json_parse(pool, data, d - data, NULL, &json, &error);

    if (rc != NGX_OK) {
        return rc;
    }

    asks = 0;

    if (cJSON_IsArray(json)) {
        cJSON_ArrayForEach(m, json) {
            asks |= ngx_http_mcp_proxy_is_request(m);
        }

    } else {
        asks = ngx_http_mcp_proxy_is_request(json);
    }

    cJSON_Delete(json);

    return asks ? NGX_OK : NGX_DECLINED;
}


static ngx_uint_t
ngx_http_mcp_proxy_is_request(cJSON *json)
{
    cJSON  *method, *id;

    method = ngx_http_mcp_json_get(json, "method");
    id = ngx_http_mcp_json_get(json, "id");

    return cJSON_IsString(method) && id != NULL && !cJSON_IsNull(id)
           && ngx_strcmp(method->valuestring, "ping") != 0;
}

