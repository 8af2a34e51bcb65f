
/*
 * A request's trace context (SEP-414, 2026-07-28): W3C traceparent,
 * tracestate and baggage, in a message's params._meta or in the POST's
 * HTTP headers.  The module starts no spans; it reads the context, logs
 * it ($mcp_traceparent...) and hands it on to whatever it asks on the
 * request's behalf, so that a client's trace, the access log and an
 * upstream's spans join.
 *
 * One trace a message, decided once at the edge and written into the
 * message itself: the body's when its _meta has one, else the headers'
 * (inserted into _meta).  Every later hop then reads the same one: an
 * mcp_pass upstream gets the body and the headers agreeing, a call's
 * server requests, location tools and mcp_backend legs the call's.  A
 * malformed value is dropped where it stood, never passed on.
 */


#include "ngx_http_mcp_core.h"
#include "ngx_http_mcp_trace.h"

#include <openssl/rand.h>


static ngx_int_t ngx_http_mcp_trace_headers(ngx_http_request_t *r,
    ngx_http_mcp_trace_t *t);
static ngx_int_t ngx_http_mcp_trace_new(ngx_pool_t *pool,
    ngx_http_mcp_trace_t *t);
static ngx_int_t ngx_http_mcp_trace_join(ngx_pool_t *pool, ngx_str_t *to,
    ngx_str_t *value);
static ngx_int_t ngx_http_mcp_trace_msg(ngx_http_mcp_msg_t *msg,
    ngx_http_mcp_trace_t *from, ngx_http_mcp_trace_t *t,
    ngx_uint_t *changed);


ngx_int_t
ngx_http_mcp_trace_read(ngx_http_request_t *r, ngx_array_t *msgs,
    ngx_uint_t generate, ngx_http_mcp_trace_t *trace, ngx_uint_t *changed)
{
    ngx_uint_t             i, first;
    ngx_http_mcp_msg_t    *msg;
    ngx_http_mcp_trace_t   from, t;

    ngx_memzero(trace, sizeof(ngx_http_mcp_trace_t));
    *changed = 0;

    if (ngx_http_mcp_trace_headers(r, &from) != NGX_OK
        || (generate && from.traceparent.len == 0
            && ngx_http_mcp_trace_new(r->pool, &from) != NGX_OK))
    {
        return NGX_ERROR;
    }

    msg = msgs->elts;
    first = 1;

    for (i = 0; i < msgs->nelts; i++) {

        if (msg[i].type != NGX_HTTP_MCP_MSG_REQUEST
            && msg[i].type != NGX_HTTP_MCP_MSG_NOTIFICATION)
        {
            continue;
        }

        if (ngx_http_mcp_trace_msg(&msg[i], &from, &t, changed)
            != NGX_OK)
        {
            return NGX_ERROR;
        }

        /* the POST's, for the log and an upstream's headers: the first */
        if (first) {
            first = 0;

            if (ngx_http_mcp_trace_copy(r->pool, trace, &t) != NGX_OK) {
                return NGX_ERROR;
            }
        }
    }

    /* no message to carry one (answers alone): the headers' */
    return first ? ngx_http_mcp_trace_copy(r->pool, trace, &from) : NGX_OK;
}


/* one message's trace: its _meta's, or else from's written into it */

static ngx_int_t
ngx_http_mcp_trace_msg(ngx_http_mcp_msg_t *msg,
    ngx_http_mcp_trace_t *from, ngx_http_mcp_trace_t *t, ngx_uint_t *changed)
{
    cJSON       *meta, *params;
    ngx_uint_t   dropped;

    meta = cJSON_IsObject(msg->params)
           ? cJSON_GetObjectItemCaseSensitive(msg->params, "_meta") : NULL;

    dropped = 0;

    if (ngx_http_mcp_w3c_meta(meta, t, &dropped) || dropped) {
        /*
         * the body said something of a trace: what is left of it is the
         * message's whole trace, never mixed with a header's
         */
        *changed |= (dropped != 0);
        return NGX_OK;
    }

    if (from->traceparent.len == 0 && from->baggage.len == 0) {
        return NGX_OK;
    }

    /* params or _meta not an object: for dispatch to refuse, untouched */
    params = cJSON_GetObjectItemCaseSensitive(msg->json, "params");

    if ((params != NULL && !cJSON_IsObject(params))
        || (meta != NULL && !cJSON_IsObject(meta)))
    {
        return NGX_OK;
    }

    if (ngx_http_mcp_trace_message(from, msg->json) != NGX_OK) {
        return NGX_ERROR;
    }

    msg->params = cJSON_GetObjectItemCaseSensitive(msg->json, "params");

    *t = *from;
    *changed = 1;

    return NGX_OK;
}


/*
 * The headers' trace, each value checked: one traceparent line (two are
 * no trace), tracestate and baggage lines joined as HTTP joins them.
 */

static ngx_int_t
ngx_http_mcp_trace_headers(ngx_http_request_t *r, ngx_http_mcp_trace_t *t)
{
    ngx_str_t        *to;
    ngx_uint_t        i, k, parents;
    ngx_list_part_t  *part;
    ngx_table_elt_t  *h;

    ngx_memzero(t, sizeof(ngx_http_mcp_trace_t));

    parents = 0;
    part = &r->headers_in.headers.part;
    h = part->elts;

    for (i = 0; /* void */; i++) {

        if (i >= part->nelts) {
            if (part->next == NULL) {
                break;
            }

            part = part->next;
            h = part->elts;
            i = 0;
        }

        for (k = 0; k < 3; k++) {
            if (h[i].key.len == ngx_http_mcp_w3c_names[k].len
                && ngx_strncasecmp(h[i].key.data,
                                   ngx_http_mcp_w3c_names[k].data,
                                   h[i].key.len)
                   == 0)
            {
                break;
            }
        }

        if (k == 3) {
            continue;
        }

        if (k == 0) {
            parents++;
            t->traceparent = h[i].value;
            continue;
        }

        to = (k == 1) ? &t->tracestate : &t->baggage;

        if (ngx_http_mcp_trace_join(r->pool, to, &h[i].value) != NGX_OK) {
            return NGX_ERROR;
        }
    }

    if (parents != 1
        || ngx_http_mcp_w3c_traceparent(t->traceparent.data,
                                        t->traceparent.len)
           != NGX_OK)
    {
        ngx_str_null(&t->traceparent);
    }

    /* a tracestate is of its traceparent: alone it is dropped */
    if (t->traceparent.len == 0
        || (t->tracestate.len
            && ngx_http_mcp_w3c_tracestate(t->tracestate.data,
                                           t->tracestate.len)
               != NGX_OK))
    {
        ngx_str_null(&t->tracestate);
    }

    if (t->baggage.len
        && ngx_http_mcp_w3c_baggage(t->baggage.data, t->baggage.len)
           != NGX_OK)
    {
        ngx_str_null(&t->baggage);
    }

    return NGX_OK;
}


/*
 * mcp_trace_generate: a trace for a request that came without one, so
 * that its log line and what the upstream records share an id.  Sampled:
 * an upstream that samples by its parent records it.  A header's
 * baggage, if any, stays.
 */

static ngx_int_t
ngx_http_mcp_trace_new(ngx_pool_t *pool, ngx_http_mcp_trace_t *t)
{
    u_char  *p, rnd[24];

    if (RAND_bytes(rnd, sizeof(rnd)) != 1) {
        return NGX_ERROR;
    }

    /* an all-zero id is invalid: one bit set keeps it an id */
    rnd[0] |= 0x01;
    rnd[16] |= 0x01;

    p = ngx_pnalloc(pool, sizeof("00-") - 1 + 32 + 1 + 16 + sizeof("-01") - 1);
    if (p == NULL) {
        return NGX_ERROR;
    }

    t->traceparent.data = p;

    p = ngx_cpymem(p, "00-", 3);
    p = ngx_hex_dump(p, rnd, 16);
    *p++ = '-';
    p = ngx_hex_dump(p, rnd + 16, 8);
    p = ngx_cpymem(p, "-01", 3);

    t->traceparent.len = p - t->traceparent.data;
    ngx_str_null(&t->tracestate);

    return NGX_OK;
}


static ngx_int_t
ngx_http_mcp_trace_join(ngx_pool_t *pool, ngx_str_t *to, ngx_str_t *value)
{
    u_char  *p;

    if (to->data == NULL) {
        *to = *value;
        return NGX_OK;
    }

    p = ngx_pnalloc(pool, to->len + 1 + value->len);
    if (p == NULL) {
        return NGX_ERROR;
    }

    to->data = ngx_cpymem(p, to->data, to->len);
    *to->data++ = ',';
    ngx_memcpy(to->data, value->data, value->len);

    to->len += 1 + value->len;
    to->data = p;

    return NGX_OK;
}


ngx_int_t
ngx_http_mcp_trace_message(ngx_http_mcp_trace_t *t, cJSON *message)
{
    cJSON  *params;

    if (t->traceparent.len == 0 && t->baggage.len == 0) {
        return NGX_OK;
    }

    params = cJSON_GetObjectItemCaseSensitive(message, "params");

    if (params == NULL) {
        params = cJSON_AddObjectToObject(message, "params");
    }

    if (!cJSON_IsObject(params)) {
        return NGX_ERROR;
    }

    return ngx_http_mcp_w3c_meta_set(params, t);
}


ngx_http_mcp_trace_t *
ngx_http_mcp_call_trace(ngx_http_mcp_call_t *call)
{
    return &call->trace;
}


ngx_int_t
ngx_http_mcp_trace_copy(ngx_pool_t *pool, ngx_http_mcp_trace_t *dst,
    ngx_http_mcp_trace_t *src)
{
    ngx_uint_t   k;
    ngx_str_t   *s, *d;

    for (k = 0; k < 3; k++) {
        s = ngx_http_mcp_trace_value(src, k);
        d = ngx_http_mcp_trace_value(dst, k);

        ngx_str_null(d);

        if (s->len == 0) {
            continue;
        }

        d->data = ngx_pnalloc(pool, s->len);
        if (d->data == NULL) {
            return NGX_ERROR;
        }

        ngx_memcpy(d->data, s->data, s->len);
        d->len = s->len;
    }

    return NGX_OK;
}


size_t
ngx_http_mcp_trace_lines_len(ngx_http_mcp_trace_t *t)
{
    size_t       len;
    ngx_str_t   *value;
    ngx_uint_t   k;

    len = 0;

    for (k = 0; k < 3; k++) {
        value = ngx_http_mcp_trace_value(t, k);

        if (value->len) {
            len += ngx_http_mcp_w3c_names[k].len + sizeof(": " CRLF) - 1
                   + value->len;
        }
    }

    return len;
}


u_char *
ngx_http_mcp_trace_lines(ngx_http_mcp_trace_t *t, u_char *p)
{
    ngx_str_t   *value;
    ngx_uint_t   k;

    for (k = 0; k < 3; k++) {
        value = ngx_http_mcp_trace_value(t, k);

        if (value->len) {
            p = ngx_sprintf(p, "%V: %V" CRLF, &ngx_http_mcp_w3c_names[k],
                            value);
        }
    }

    return p;
}
