
/*
 * The module's one subrequest client: a "fetch" is a background
 * subrequest of a request (a call's POST, a GET stream, a request in
 * the access phase) to a location, whose reply a header and a body
 * filter of our own catch before any other filter sees it, into the
 * fetch's pool, bounded.  Location tools and resources, mcp_backend and
 * the JWKS of mcp_auth_jwt_key_request all fetch this way.
 *
 * Why a background subrequest: an ordinary one would hold back the
 * request's own output (progress, the other replies of a stream) until
 * it ends, because nginx writes a request's output in subrequest order.
 * Why our own filters rather than NGX_HTTP_SUBREQUEST_IN_MEMORY: that
 * one fits the reply into proxy_buffer_size or
 * subrequest_output_buffer_size, which is not the bound an operator
 * sets for tools, and ends the client's request past it.  A fetch with
 * no bound of its own (the JWKS) takes subrequest_output_buffer_size,
 * and past it fails alone.
 *
 * No internal redirect is followed (see the redirect handler): the
 * reply is the location's the fetch names, or the fetch fails.
 *
 * Two lives meet here: the fetch's owner's (a call's pool, until it ends
 * or is cancelled) and the request's (its pool, which the subrequest
 * shares).  Each side holds the other through a "link" in the request's
 * pool and a "state" in the owner's pool, and each side's pool cleanup
 * cuts the link, so that neither ever touches the other's freed memory:
 *
 *   - the owner ends first: the subrequest is aborted, which for an
 *     upstream closes its connection (the upstream's own cleanup, as
 *     when a client goes away); a subrequest with no upstream runs to
 *     its end and its output is dropped;
 *   - the request goes first (the client left, the stream was closed):
 *     its cleanups have closed the upstream, and the owner hears of it
 *     (st->gone) from a posted event, outside the request's cleanup.
 *
 * Everything the subrequest tells (its header, its end) is noted and
 * told to the owner's handler from a posted event, in the owner's own
 * time rather than inside the subrequest's stack.  A subrequest is ours
 * when its post_subrequest handler is, which survives the internal
 * redirects that clear a request's module contexts.
 */


#include "ngx_http_mcp_subrequest.h"


static ngx_http_mcp_fetch_link_t *ngx_http_mcp_fetch_subrequest(
    ngx_http_request_t *r, ngx_http_mcp_fetch_t *f);
static ngx_int_t ngx_http_mcp_fetch_trace(ngx_http_request_t *r,
    ngx_http_request_t *sr, ngx_http_mcp_trace_t *t);
static ngx_int_t ngx_http_mcp_fetch_headers(ngx_http_request_t *r,
    ngx_http_request_t *sr, ngx_str_t *body, ngx_http_mcp_fetch_t *f);
static void ngx_http_mcp_fetch_cleanup(void *data);
static void ngx_http_mcp_fetch_timeout(ngx_event_t *ev);
static ngx_int_t ngx_http_mcp_fetch_done(ngx_http_request_t *sr, void *data,
    ngx_int_t rc);
static ngx_uint_t ngx_http_mcp_fetch_unreplied(ngx_http_request_t *sr);
static void ngx_http_mcp_fetch_kick(ngx_event_t *ev);
static void ngx_http_mcp_fetch_more(ngx_event_t *ev);
static void ngx_http_mcp_fetch_abort(ngx_http_mcp_fetch_state_t *st);
static void ngx_http_mcp_fetch_request_cleanup(void *data);
static ngx_int_t ngx_http_mcp_fetch_redirect_handler(ngx_http_request_t *r);
static ngx_int_t ngx_http_mcp_fetch_header_filter(ngx_http_request_t *r);
static ngx_int_t ngx_http_mcp_fetch_session_id(ngx_http_request_t *r,
    ngx_http_mcp_fetch_state_t *st);
static ngx_int_t ngx_http_mcp_fetch_body_filter(ngx_http_request_t *r,
    ngx_chain_t *in);
static ngx_uint_t ngx_http_mcp_fetch_holds(ngx_http_request_t *r,
    ngx_http_mcp_fetch_link_t *link, ngx_buf_t *b);
static ngx_int_t ngx_http_mcp_fetch_append(ngx_http_mcp_fetch_state_t *st,
    ngx_buf_t *b);


/* request headers that are the MCP client's, not the location's */
static ngx_str_t  ngx_http_mcp_fetch_hidden[] = {
    ngx_string("authorization"),
    ngx_string("proxy-authorization"),
    ngx_string("cookie"),
    ngx_string("x-api-key"),                /* mcp_auth_api_keys' */
    ngx_string("content-length"),
    ngx_string("content-type"),
    ngx_string("transfer-encoding"),
    ngx_string("expect"),
    ngx_string("accept"),
    ngx_string("last-event-id"),
    ngx_string("traceparent"),              /* the call's trace goes: */
    ngx_string("tracestate"),               /* the edge chose it, and */
    ngx_string("baggage"),                  /* dropped what was wrong */
    ngx_null_string
};


static ngx_http_output_header_filter_pt  ngx_http_next_header_filter;
static ngx_http_output_body_filter_pt    ngx_http_next_body_filter;


/*
 * A fetch of the call's POST, in the call's pool: for a location-backed
 * tool, and for the gateway over several MCP servers.  The call's pool
 * cleanup aborts the subrequest if it still runs.
 */

ngx_http_mcp_fetch_state_t *
ngx_http_mcp_fetch_call(ngx_http_mcp_call_t *call, ngx_http_mcp_fetch_t *f)
{
    ngx_http_request_t          *r;
    ngx_http_mcp_fetch_state_t  *st;

    r = ngx_http_mcp_call_http_request(call);
    if (r == NULL) {
        return NULL;
    }

    st = ngx_http_mcp_fetch(r, ngx_http_mcp_call_pool(call),
                            ngx_http_mcp_call_get_log(call), f);
    if (st != NULL) {
        st->call = call;
    }

    return st;
}


/*
 * A background subrequest of r, whose reply the capture filters take
 * into pool, bounded by f->max.  The state's event, with f->handler and
 * f->data, is posted on news: the header, the end, a reply too big, r
 * gone; the timeout (f->timeout) calls it at once.  The state lives in
 * pool, whose cleanup closes the fetch (ngx_http_mcp_fetch_close()): a
 * call's end stops its fetches.
 */

ngx_http_mcp_fetch_state_t *
ngx_http_mcp_fetch(ngx_http_request_t *r, ngx_pool_t *pool,
    ngx_log_t *log, ngx_http_mcp_fetch_t *f)
{
    ngx_pool_cleanup_t          *ccln;
    ngx_http_mcp_fetch_link_t   *link;
    ngx_http_mcp_fetch_state_t  *st;

    st = ngx_pcalloc(pool, ngx_max(f->size,
                                   sizeof(ngx_http_mcp_fetch_state_t)));
    ccln = ngx_pool_cleanup_add(pool, 0);

    if (st == NULL || ccln == NULL) {
        return NULL;
    }

    st->pool = pool;
    st->max = f->max;
    st->want_session = f->want_session;
    st->stream = f->stream;

    st->event.handler = f->handler;
    st->event.data = f->data ? f->data : st;
    st->event.log = log;

    st->timer.handler = ngx_http_mcp_fetch_timeout;
    st->timer.data = st;
    st->timer.log = log;

    ccln->handler = ngx_http_mcp_fetch_cleanup;
    ccln->data = st;

    link = ngx_http_mcp_fetch_subrequest(r, f);
    if (link == NULL) {
        return NULL;
    }

    link->state = st;
    st->link = link;

    if (f->timeout) {
        ngx_add_timer(&st->timer, f->timeout);
    }

    return st;
}


/*
 * A message to a location whose reply nobody waits for (a notification,
 * an answer): the link has no state, so the capture filters drop the
 * reply; it lives in r's pool alone.
 */

ngx_int_t
ngx_http_mcp_fetch_send(ngx_http_request_t *r, ngx_http_mcp_fetch_t *f)
{
    return (ngx_http_mcp_fetch_subrequest(r, f) != NULL) ? NGX_OK
                                                        : NGX_ERROR;
}


/* the subrequest and its link, without a state yet */

static ngx_http_mcp_fetch_link_t *
ngx_http_mcp_fetch_subrequest(ngx_http_request_t *r, ngx_http_mcp_fetch_t *f)
{
    ngx_str_t                  *args;
    ngx_pool_cleanup_t         *rcln;
    ngx_http_request_t         *sr;
    ngx_http_mcp_fetch_link_t  *link;

    link = ngx_pcalloc(r->pool, sizeof(ngx_http_mcp_fetch_link_t));
    rcln = ngx_pool_cleanup_add(r->pool, 0);

    if (link == NULL || rcln == NULL) {
        return NULL;
    }

    link->kick.handler = ngx_http_mcp_fetch_kick;
    link->kick.data = r->connection;
    link->kick.log = r->connection->log;
    link->more.handler = ngx_http_mcp_fetch_more;
    link->more.data = link;
    link->more.log = r->connection->log;
    link->ps.handler = ngx_http_mcp_fetch_done;
    link->ps.data = link;

    rcln->handler = ngx_http_mcp_fetch_request_cleanup;
    rcln->data = link;

    args = f->args.len ? &f->args : NULL;

    if (ngx_http_subrequest(r, &f->uri, args, &sr, &link->ps,
                            NGX_HTTP_SUBREQUEST_BACKGROUND)
        != NGX_OK)
    {
        return NULL;
    }

    sr->method = f->method;
    sr->method_name = f->method_name;

    if (ngx_http_mcp_fetch_headers(r, sr, &f->body, f) != NGX_OK) {
        return NULL;
    }

    link->sr = sr;

    /* the subrequest runs when r's posted requests do; make sure */
    ngx_post_event(&link->kick, &ngx_posted_events);

    return link;
}


/*
 * The subrequest's headers: r's (with f->copy_headers), less what is the
 * MCP client's own (its credentials, its body's framing), plus the
 * caller's and the JSON body's.
 */

static ngx_int_t
ngx_http_mcp_fetch_headers(ngx_http_request_t *r, ngx_http_request_t *sr,
    ngx_str_t *body, ngx_http_mcp_fetch_t *f)
{
    ngx_uint_t                i, k;
    ngx_buf_t                *b;
    ngx_chain_t              *cl;
    ngx_list_part_t          *part;
    ngx_table_elt_t          *h, *n;
    ngx_http_request_body_t  *rb;

    if (ngx_list_init(&sr->headers_in.headers, r->pool, 8,
                      sizeof(ngx_table_elt_t))
        != NGX_OK)
    {
        return NGX_ERROR;
    }

    part = &r->headers_in.headers.part;
    h = part->elts;

    for (i = 0; f->copy_headers; i++) {

        if (i >= part->nelts) {
            if (part->next == NULL) {
                break;
            }

            part = part->next;
            h = part->elts;
            i = 0;
        }

        if (h[i].key.len > 4
            && ngx_strncasecmp(h[i].key.data, (u_char *) "mcp-", 4) == 0)
        {
            continue;
        }

        for (k = 0; ngx_http_mcp_fetch_hidden[k].len; k++) {
            if (h[i].key.len == ngx_http_mcp_fetch_hidden[k].len
                && ngx_strncasecmp(h[i].key.data,
                                   ngx_http_mcp_fetch_hidden[k].data,
                                   h[i].key.len)
                   == 0)
            {
                break;
            }
        }

        if (ngx_http_mcp_fetch_hidden[k].len) {
            continue;
        }

        n = ngx_list_push(&sr->headers_in.headers);
        if (n == NULL) {
            return NGX_ERROR;
        }

        *n = h[i];
    }

    sr->headers_in.content_length = NULL;
    sr->headers_in.content_type = NULL;
    sr->headers_in.transfer_encoding = NULL;
    sr->headers_in.authorization = NULL;
    sr->headers_in.chunked = 0;
    sr->headers_in.content_length_n = -1;

    for (k = 0; k < f->nheaders; k++) {

        /*
         * the caller's values may come from a reply (a backend's protocol
         * version): a CR or LF would be a header line, or a request, of
         * its own in what proxy_pass sends on
         */
        for (i = 0; i < f->headers[k].value.len; i++) {
            if (f->headers[k].value.data[i] < 0x20
                && f->headers[k].value.data[i] != '\t')
            {
                ngx_log_error(NGX_LOG_ERR, r->connection->log, 0,
                              "mcp: the \"%V\" header for %V has a control "
                              "character in it", &f->headers[k].key,
                              &f->uri);
                return NGX_ERROR;
            }
        }

        n = ngx_list_push(&sr->headers_in.headers);
        if (n == NULL) {
            return NGX_ERROR;
        }

        *n = f->headers[k];
    }

    if (f->trace != NULL
        && ngx_http_mcp_fetch_trace(r, sr, f->trace) != NGX_OK)
    {
        return NGX_ERROR;
    }

    rb = ngx_pcalloc(r->pool, sizeof(ngx_http_request_body_t));
    if (rb == NULL) {
        return NGX_ERROR;
    }

    sr->request_body = rb;

    if (body->len == 0) {
        return NGX_OK;
    }

    n = ngx_list_push(&sr->headers_in.headers);
    b = ngx_calloc_buf(r->pool);
    cl = ngx_alloc_chain_link(r->pool);

    if (n == NULL || b == NULL || cl == NULL) {
        return NGX_ERROR;
    }

    ngx_memzero(n, sizeof(ngx_table_elt_t));
    n->hash = 1;
    ngx_str_set(&n->key, "Content-Type");
    if (f->content_type.len) {
        n->value = f->content_type;

    } else {
        ngx_str_set(&n->value, "application/json");
    }
    n->lowcase_key = (u_char *) "content-type";

    sr->headers_in.content_type = n;
    sr->headers_in.content_length_n = body->len;

    b->pos = body->data;
    b->last = body->data + body->len;
    b->start = b->pos;
    b->end = b->last;
    b->memory = 1;
    b->last_buf = 1;

    cl->buf = b;
    cl->next = NULL;
    rb->bufs = cl;

    return NGX_OK;
}


/* the call's trace, well-formed (the edge checked it), in r's pool */

static ngx_int_t
ngx_http_mcp_fetch_trace(ngx_http_request_t *r, ngx_http_request_t *sr,
    ngx_http_mcp_trace_t *t)
{
    ngx_str_t        *value;
    ngx_uint_t        k;
    ngx_table_elt_t  *n;

    for (k = 0; k < 3; k++) {
        value = ngx_http_mcp_trace_value(t, k);

        if (value->len == 0) {
            continue;
        }

        n = ngx_list_push(&sr->headers_in.headers);
        if (n == NULL) {
            return NGX_ERROR;
        }

        ngx_memzero(n, sizeof(ngx_table_elt_t));

        n->hash = 1;
        n->key = ngx_http_mcp_w3c_names[k];
        n->lowcase_key = ngx_http_mcp_w3c_names[k].data;
        n->value.len = value->len;
        n->value.data = ngx_pstrdup(r->pool, value);

        if (n->value.data == NULL) {
            return NGX_ERROR;
        }
    }

    return NGX_OK;
}


/*
 * The fetch is no longer wanted: its subrequest is aborted, news dropped.
 * Also its pool's cleanup: the call ended or was cancelled.
 */

void
ngx_http_mcp_fetch_close(ngx_http_mcp_fetch_state_t *st)
{
    if (st->timer.timer_set) {
        ngx_del_timer(&st->timer);
    }

    if (st->event.posted) {
        ngx_delete_posted_event(&st->event);
    }

    ngx_http_mcp_fetch_abort(st);
}


static void
ngx_http_mcp_fetch_cleanup(void *data)
{
    ngx_http_mcp_fetch_close(data);
}


/* the timeout is news of its own, told at once as the timer's */

static void
ngx_http_mcp_fetch_timeout(ngx_event_t *ev)
{
    ngx_http_mcp_fetch_state_t *st = ev->data;

    st->timed_out = 1;

    if (st->event.posted) {
        ngx_delete_posted_event(&st->event);
    }

    st->event.handler(&st->event);
}


/*
 * The subrequest ends (post_subrequest).  What would terminate r along
 * with it (an error, a timeout, 444) ends only the subrequest: the fetch
 * failed.  A status of 300 or more first makes its page, which our
 * filters see, and ends again.
 */

static ngx_int_t
ngx_http_mcp_fetch_done(ngx_http_request_t *sr, void *data, ngx_int_t rc)
{
    ngx_http_mcp_fetch_link_t *link = data;

    ngx_http_mcp_fetch_state_t  *st;

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, sr->connection->log, 0,
                   "mcp subrequest \"%V\" done: %i", &sr->uri, rc);

    if (link->done || rc == NGX_AGAIN) {
        return rc;
    }

    if (rc == NGX_ERROR || rc == NGX_HTTP_REQUEST_TIME_OUT
        || rc == NGX_HTTP_CLIENT_CLOSED_REQUEST || rc == NGX_HTTP_CLOSE)
    {
        if (sr->connection->error) {
            /* the client's connection broke: nginx ends it all */
            return rc;
        }

        st = link->state;

        if (st != NULL) {
            st->failed = 1;
        }

        rc = NGX_OK;

    } else if (rc >= NGX_HTTP_SPECIAL_RESPONSE
               || rc == NGX_HTTP_CREATED || rc == NGX_HTTP_NO_CONTENT)
    {
        if (!sr->header_sent) {
            st = link->state;

            if (st != NULL && rc == NGX_HTTP_BAD_GATEWAY) {
                st->unreplied = ngx_http_mcp_fetch_unreplied(sr);
            }

            return rc;
        }

        /* a status after the header: a page cannot follow it */
        st = link->state;

        if (st != NULL) {
            st->failed = 1;
        }

        rc = NGX_OK;
    }

    link->done = 1;
    st = link->state;

    if (st != NULL) {
        st->done = 1;
        ngx_post_event(&st->event, &ngx_posted_events);
    }

    return rc;
}


/*
 * A 502 of nginx's own (no header of the upstream was sent on): whether
 * the upstream's last try was on a connection the keepalive cache gave
 * and failed before any byte of the reply, which is how a reload's
 * closing worker, or a keepalive_timeout met as the request was written,
 * looks.  nginx tries again such a failure itself, but not a POST once
 * written (proxy_next_upstream non_idempotent), so the fetch's owner may.
 * A new connection that fails, or a reply that began, is not this.
 */

static ngx_uint_t
ngx_http_mcp_fetch_unreplied(ngx_http_request_t *sr)
{
    ngx_http_upstream_t  *u;

    u = sr->upstream;

    return u != NULL && u->peer.cached && u->state != NULL
           && u->state->bytes_received == 0;
}


static void
ngx_http_mcp_fetch_kick(ngx_event_t *ev)
{
    ngx_connection_t  *c = ev->data;

    ngx_http_run_posted_requests(c);
}


/*
 * A stream's reader took the whole events it had: what the body filter
 * held goes in, and the upstream, which waits for its buffers back, may
 * read again.
 */

void
ngx_http_mcp_fetch_taken(ngx_http_mcp_fetch_state_t *st)
{
    ngx_http_mcp_fetch_link_t  *link;

    st->fresh = 0;
    link = st->link;

    if (link != NULL && link->held != NULL && !link->more.posted) {
        ngx_post_event(&link->more, &ngx_posted_events);
    }
}


/*
 * The subrequest's writing side as an unbuffered upstream has it
 * (ngx_http_upstream_process_non_buffered_downstream()): the body filter
 * has its buffers again, the held ones are taken in or held anew, and
 * those it gives back go to the upstream's next reads.
 */

static void
ngx_http_mcp_fetch_more(ngx_event_t *ev)
{
    ngx_http_mcp_fetch_link_t *link = ev->data;

    ngx_connection_t    *c;
    ngx_http_request_t  *sr;

    sr = link->sr;

    if (link->held == NULL || link->done || sr == NULL
        || sr->upstream == NULL || sr->upstream->peer.connection == NULL)
    {
        return;
    }

    c = sr->connection;

    ngx_log_debug1(NGX_LOG_DEBUG_HTTP, c->log, 0,
                   "mcp subrequest \"%V\": its reader took, read on",
                   &sr->uri);

    sr->write_event_handler(sr);

    ngx_http_run_posted_requests(c);
}


/*
 * Cuts the link; a subrequest that still runs behind an upstream loses
 * it (its connection closed) through the upstream's own cleanup.
 */

static void
ngx_http_mcp_fetch_abort(ngx_http_mcp_fetch_state_t *st)
{
    ngx_http_request_t         *sr;
    ngx_http_mcp_fetch_link_t  *link;

    link = st->link;

    if (link == NULL) {
        return;
    }

    link->state = NULL;
    st->link = NULL;

    sr = link->sr;

    if (link->done || sr == NULL) {
        return;
    }

    if (sr->upstream == NULL
        || sr->upstream->cleanup == NULL
        || *sr->upstream->cleanup == NULL)
    {
        ngx_log_debug1(NGX_LOG_DEBUG_HTTP, sr->connection->log, 0,
                       "mcp subrequest: \"%V\" runs on, unheard", &sr->uri);
        return;
    }

    ngx_log_debug1(NGX_LOG_DEBUG_HTTP, sr->connection->log, 0,
                   "mcp subrequest: aborting \"%V\"", &sr->uri);

    link->done = 1;

    (*sr->upstream->cleanup)(sr);
}


/* r's pool goes, and the subrequest with it */

static void
ngx_http_mcp_fetch_request_cleanup(void *data)
{
    ngx_http_mcp_fetch_link_t *link = data;

    ngx_http_mcp_fetch_state_t  *st;

    if (link->kick.posted) {
        ngx_delete_posted_event(&link->kick);
    }

    if (link->more.posted) {
        ngx_delete_posted_event(&link->more);
    }

    st = link->state;

    if (st == NULL) {
        return;
    }

    link->state = NULL;
    st->link = NULL;
    st->gone = 1;

    ngx_post_event(&st->event, &ngx_posted_events);
}


/*
 * Last of the module's postconfiguration, after every filter of nginx
 * and of the module (CORS, nginx's errors as JSON-RPC): the capture
 * filters are the first of the chains, so no other filter sees a fetch's
 * reply; the redirect handler is the first of the rewrite phase.
 */

ngx_int_t
ngx_http_mcp_subrequest_init(ngx_conf_t *cf)
{
    ngx_http_handler_pt        *h;
    ngx_http_core_main_conf_t  *cmcf;

    cmcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_core_module);

    h = ngx_array_push(&cmcf->phases[NGX_HTTP_REWRITE_PHASE].handlers);
    if (h == NULL) {
        return NGX_ERROR;
    }

    *h = ngx_http_mcp_fetch_redirect_handler;

    ngx_http_next_header_filter = ngx_http_top_header_filter;
    ngx_http_top_header_filter = ngx_http_mcp_fetch_header_filter;

    ngx_http_next_body_filter = ngx_http_top_body_filter;
    ngx_http_top_body_filter = ngx_http_mcp_fetch_body_filter;

    return NGX_OK;
}


/*
 * The location rewrite phase, which every internal redirect passes
 * before any content (an X-Accel-Redirect that proxy_pass acts on,
 * error_page, try_files, rewrite ... last, a named location): a
 * subrequest of ours ends here, failed, before the location it was sent
 * to runs.  Its reply would be some other location's, one the upstream
 * of the first must not reach (a denied tool's, one with the gateway's
 * own credentials, a set of keys of its choosing).
 */

static ngx_int_t
ngx_http_mcp_fetch_redirect_handler(ngx_http_request_t *r)
{
    ngx_http_core_loc_conf_t    *clcf;
    ngx_http_mcp_fetch_link_t   *link;
    ngx_http_mcp_fetch_state_t  *st;

    if (r == r->main || r->uri_changes > NGX_HTTP_MAX_URI_CHANGES
        || r->post_subrequest == NULL
        || r->post_subrequest->handler != ngx_http_mcp_fetch_done)
    {
        return NGX_DECLINED;
    }

    link = r->post_subrequest->data;

    clcf = ngx_http_get_module_loc_conf(r, ngx_http_core_module);

    ngx_log_error(NGX_LOG_ERR, r->connection->log, 0,
                  "mcp: a backend's reply is refused: it comes from "
                  "\"%V\" after an internal redirect",
                  clcf->named ? &clcf->name : &r->uri);

    st = link->state;

    if (st != NULL) {
        st->redirected = 1;
    }

    /* the post_subrequest handler notes the failure and ends it quietly */
    return NGX_ERROR;
}


static ngx_int_t
ngx_http_mcp_fetch_header_filter(ngx_http_request_t *r)
{
    u_char                      *p;
    size_t                       len;
    ngx_http_upstream_t         *u;
    ngx_http_core_loc_conf_t    *clcf;
    ngx_http_mcp_fetch_link_t   *link;
    ngx_http_mcp_fetch_state_t  *st;

    if (r == r->main || r->post_subrequest == NULL
        || r->post_subrequest->handler != ngx_http_mcp_fetch_done)
    {
        return ngx_http_next_header_filter(r);
    }

    /* what ngx_http_header_filter() would do for a subrequest */
    r->header_sent = 1;

    /*
     * A buffered upstream reply reaches a background subrequest's filters
     * only at its end (the event pipe writes only for the request that
     * owns the connection, c->data), spooled to a temporary file up to
     * proxy_max_temp_file_size until then.  Unbuffered, it comes as it
     * arrives, and mcp_tool_max_size stops it at the bound.  A reply
     * being cached or stored keeps the buffering these need.  The
     * upstream chooses after sending the header, as for X-Accel-Buffering.
     */

    u = r->upstream;

    if (u != NULL && !u->cacheable && !u->store) {
        u->buffering = 0;
    }

    link = r->post_subrequest->data;
    st = link->state;

    if (st == NULL || st->header) {
        return NGX_OK;
    }

    st->header = 1;
    st->status = r->headers_out.status;

    if (st->max == 0) {
        /* the bound nginx's in-memory subrequests have */
        clcf = ngx_http_get_module_loc_conf(r, ngx_http_core_module);
        st->max = clcf->subrequest_output_buffer_size;
    }

    /* the bare type, lowercased: "application/json; charset=utf-8" */

    len = r->headers_out.content_type.len;
    p = ngx_strlchr(r->headers_out.content_type.data,
                    r->headers_out.content_type.data + len, ';');

    if (p != NULL) {
        len = p - r->headers_out.content_type.data;
    }

    while (len && r->headers_out.content_type.data[len - 1] == ' ') {
        len--;
    }

    st->type.data = ngx_pnalloc(st->pool, len + 1);
    if (st->type.data == NULL) {
        return NGX_ERROR;
    }

    ngx_strlow(st->type.data, r->headers_out.content_type.data, len);
    st->type.data[len] = '\0';
    st->type.len = len;

    if (st->stream
        && (len != sizeof("text/event-stream") - 1
            || ngx_strncmp(st->type.data, "text/event-stream", len) != 0))
    {
        /* a JSON reply is read whole, as without the stream mode */
        st->stream = 0;
    }

    if (!st->stream && r->headers_out.content_length_n > (off_t) st->max) {
        st->too_big = 1;
    }

    if (st->want_session
        && ngx_http_mcp_fetch_session_id(r, st) != NGX_OK)
    {
        return NGX_ERROR;
    }

    ngx_post_event(&st->event, &ngx_posted_events);

    return NGX_OK;
}


/*
 * The reply's Mcp-Session-Id, for the gateway over several MCP servers;
 * an id over 1024 bytes is not kept (the backend is then sessionless
 * for us, and its next request fails as a bad session would).
 */

static ngx_int_t
ngx_http_mcp_fetch_session_id(ngx_http_request_t *r,
    ngx_http_mcp_fetch_state_t *st)
{
    ngx_uint_t        i;
    ngx_list_part_t  *part;
    ngx_table_elt_t  *h;

    part = &r->headers_out.headers.part;
    h = part->elts;

    for (i = 0; /* void */; i++) {

        if (i >= part->nelts) {
            if (part->next == NULL) {
                return NGX_OK;
            }

            part = part->next;
            h = part->elts;
            i = 0;
        }

        if (h[i].hash == 0
            || h[i].key.len != sizeof("Mcp-Session-Id") - 1
            || ngx_strncasecmp(h[i].key.data, (u_char *) "Mcp-Session-Id",
                               h[i].key.len) != 0
            || h[i].value.len == 0 || h[i].value.len > 1024)
        {
            continue;
        }

        st->session_id.data = ngx_pstrdup(st->pool,
                                          &h[i].value);
        if (st->session_id.data == NULL) {
            return NGX_ERROR;
        }

        st->session_id.len = h[i].value.len;

        return NGX_OK;
    }
}


static ngx_int_t
ngx_http_mcp_fetch_body_filter(ngx_http_request_t *r, ngx_chain_t *in)
{
    ngx_uint_t                   pass;
    ngx_chain_t                 *cl, *next, *held, *hl, **ll;
    ngx_http_mcp_fetch_link_t   *link;
    ngx_http_mcp_fetch_state_t  *st;

    if (r == r->main || r->post_subrequest == NULL
        || r->post_subrequest->handler != ngx_http_mcp_fetch_done)
    {
        return ngx_http_next_body_filter(r, in);
    }

    link = r->post_subrequest->data;

    /*
     * What was held before goes first, then in: each buffer is taken
     * (or dropped), and free again; or held, in order, while a stream's
     * reader has not had what was taken (ngx_http_mcp_fetch_holds()).
     */

    held = link->held;
    link->held = NULL;
    ll = &link->held;

    for (pass = 0; pass < 2; pass++) {

        for (cl = pass ? in : held; cl; cl = cl->next) {

            if (ngx_http_mcp_fetch_holds(r, link, cl->buf)) {
                hl = ngx_alloc_chain_link(r->pool);
                if (hl == NULL) {
                    return NGX_ERROR;
                }

                hl->buf = cl->buf;
                hl->next = NULL;
                *ll = hl;
                ll = &hl->next;

                continue;
            }

            st = link->state;

            if (st != NULL && !st->too_big
                && ngx_http_mcp_fetch_append(st, cl->buf) != NGX_OK)
            {
                return NGX_ERROR;
            }

            cl->buf->pos = cl->buf->last;

            if (cl->buf->in_file) {
                cl->buf->file_pos = cl->buf->file_last;
            }
        }
    }

    for (cl = held; cl; cl = next) {
        next = cl->next;
        ngx_free_chain(r->pool, cl);
    }

    return NGX_OK;
}


/*
 * Whether b waits: an SSE stream's reply that comes faster than its
 * reader takes the events (a backend's progress without end) is held
 * once NGX_HTTP_MCP_FETCH_WINDOW bytes came since the reader last ran.
 * The upstream, unbuffered, reads no more until it has its buffer back
 * (ngx_http_mcp_fetch_taken()), so the reply waits in the socket, and
 * the fetch holds no more than a window and the event not yet whole,
 * whatever the number of events.  A reply nobody reads as it comes (not
 * a 200, or the upstream buffered) is taken as before.
 */

static ngx_uint_t
ngx_http_mcp_fetch_holds(ngx_http_request_t *r,
    ngx_http_mcp_fetch_link_t *link, ngx_buf_t *b)
{
    ngx_http_mcp_fetch_state_t  *st;

    st = link->state;

    if (st == NULL || !st->stream || st->too_big
        || st->status != NGX_HTTP_OK
        || r->upstream == NULL || r->upstream->buffering
        || ngx_buf_special(b) || !ngx_buf_in_memory(b))
    {
        return 0;
    }

    return link->held != NULL || st->fresh >= NGX_HTTP_MCP_FETCH_WINDOW;
}


static ngx_int_t
ngx_http_mcp_fetch_append(ngx_http_mcp_fetch_state_t *st, ngx_buf_t *b)
{
    off_t    size;
    u_char  *p;
    size_t   limit;
    ssize_t  n;

    size = ngx_buf_size(b);

    if (size == 0 || ngx_buf_special(b)) {
        return NGX_OK;
    }

    /*
     * A stream's reader takes its events as they come, and bounds each;
     * what it has not taken yet may be several, read in one go before
     * it could run: up to NGX_HTTP_MCP_FETCH_BURST times the bound.
     */
    limit = st->stream ? st->max * NGX_HTTP_MCP_FETCH_BURST : st->max;

    if ((off_t) (limit - st->len) < size) {
        st->too_big = 1;
        ngx_post_event(&st->event, &ngx_posted_events);
        return NGX_OK;
    }

    if (st->len + size > st->size) {
        /* doubling, up to the bound */
        st->size = ngx_max(st->size * 2, st->len + (size_t) size);
        st->size = ngx_max(st->size, 1024);
        st->size = ngx_min(st->size, limit);

        p = ngx_pnalloc(st->pool, st->size);
        if (p == NULL) {
            return NGX_ERROR;
        }

        if (st->len) {
            ngx_memcpy(p, st->body, st->len);
        }

        if (st->body != NULL) {
            /* a large allocation is given back; a small one stays */
            (void) ngx_pfree(st->pool, st->body);
        }

        st->body = p;
    }

    if (ngx_buf_in_memory(b)) {
        st->len = ngx_cpymem(st->body + st->len, b->pos, size) - st->body;

    } else {
        n = ngx_read_file(b->file, st->body + st->len, size, b->file_pos);

        if (n != size) {
            return NGX_ERROR;
        }

        st->len += size;
    }

    st->fresh += size;

    if (st->stream) {
        ngx_post_event(&st->event, &ngx_posted_events);
    }

    return NGX_OK;
}


ngx_uint_t
ngx_http_mcp_fetched(ngx_http_request_t *r)
{
    return r != r->main && r->post_subrequest != NULL
           && r->post_subrequest->handler == ngx_http_mcp_fetch_done;
}


/*
 * The state of the fetch r is, or is a subrequest of; NULL for any other
 * request, or a fetch nobody waits for (send()).
 */

ngx_http_mcp_fetch_state_t *
ngx_http_mcp_fetch_of(ngx_http_request_t *r)
{
    ngx_http_mcp_fetch_link_t  *link;

    for ( /* void */ ; r != r->main; r = r->parent) {
        if (r->post_subrequest != NULL
            && r->post_subrequest->handler == ngx_http_mcp_fetch_done)
        {
            link = r->post_subrequest->data;
            return link->state;
        }
    }

    return NULL;
}
