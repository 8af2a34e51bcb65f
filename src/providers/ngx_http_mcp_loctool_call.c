
/*
 * A call of a location-backed tool or resource: a background subrequest
 * of the POST that carries the call, whose reply a header and a body
 * filter of our own (ngx_http_mcp_loctool_capture.c) catch before any
 * other filter sees it, into the call's pool, bounded by
 * mcp_tool_max_size.
 *
 * Why a background subrequest: an ordinary one would hold back the
 * POST's own output (progress, the other replies of a stream) until it
 * ends, because nginx writes a request's output in subrequest order.
 * Why our own filters rather than NGX_HTTP_SUBREQUEST_IN_MEMORY: that
 * one fits the reply into proxy_buffer_size or
 * subrequest_output_buffer_size, which is not the bound an operator
 * sets for tools, and fails the request past it.
 *
 * Two lives meet here: the call's (its pool, until it ends or is
 * cancelled) and the POST's (its pool, which the subrequest shares).
 * Each side holds the other through a "link" in the POST's pool and a
 * "state" in the call's pool, and each side's pool cleanup cuts the
 * link, so that neither ever touches the other's freed memory:
 *
 *   - the call ends or is cancelled first: the subrequest is aborted,
 *     which for an upstream closes its connection (the upstream's own
 *     cleanup, as when a client goes away); a subrequest with no
 *     upstream runs to its end and its output is dropped;
 *   - the POST goes first (the client left, the stream was closed): its
 *     cleanups have closed the upstream, and the call ends with an error
 *     from a posted event, outside the POST's cleanup.
 *
 * Everything the subrequest tells (its header, its end) is noted and
 * acted on from a posted event, in the call's own time rather than
 * inside the subrequest's stack.
 */


#include "ngx_http_mcp_loctool.h"


static ngx_int_t ngx_http_mcp_loctool_start(ngx_http_mcp_call_t *call,
    ngx_http_request_t *r, ngx_http_mcp_loctool_t *tool);
static ngx_http_mcp_loctool_link_t *ngx_http_mcp_loctool_subrequest(
    ngx_http_request_t *r, ngx_http_mcp_loctool_fetch_t *f);
static ngx_int_t ngx_http_mcp_loctool_headers(ngx_http_request_t *r,
    ngx_http_request_t *sr, ngx_str_t *body, ngx_http_mcp_loctool_fetch_t *f);
static ngx_int_t ngx_http_mcp_loctool_body(ngx_http_mcp_call_t *call,
    ngx_http_request_t *r, ngx_str_t *body);
static void ngx_http_mcp_loctool_kick(ngx_event_t *ev);
static void ngx_http_mcp_loctool_event(ngx_event_t *ev);
static void ngx_http_mcp_loctool_timeout(ngx_event_t *ev);
static void ngx_http_mcp_loctool_abort(ngx_http_mcp_loctool_state_t *st);
static void ngx_http_mcp_loctool_call_cleanup(void *data);
static void ngx_http_mcp_loctool_request_cleanup(void *data);
static void ngx_http_mcp_loctool_finish(ngx_http_mcp_loctool_state_t *st,
    const char *failure);


/* request headers that are the MCP client's, not the location's */
static ngx_str_t  ngx_http_mcp_loctool_hidden[] = {
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
    ngx_null_string
};


ngx_int_t
ngx_http_mcp_loctool_handler(ngx_http_mcp_call_t *call)
{
    u_char                           *p, *clash[2], text[384];
    ngx_int_t                         rc;
    ngx_str_t                        *name;
    ngx_http_request_t               *r;
    ngx_http_mcp_loctool_t           *tool;
    ngx_http_mcp_loctool_loc_conf_t  *lcf;

    tool = ngx_http_mcp_call_entry_data(call);
    r = ngx_http_mcp_call_http_request(call);
    lcf = ngx_http_mcp_call_loc_conf(call, &ngx_http_mcp_loctool_module);

    if (r == NULL) {
        /* no POST to hang a subrequest on (a task's later round) */
        if (tool->resource) {
            ngx_http_mcp_call_error(call, NGX_HTTP_MCP_INTERNAL_ERROR,
                                    "The resource can only be read within "
                                    "its HTTP request");
            return NGX_OK;
        }

        ngx_http_mcp_call_result(call, ngx_http_mcp_loctool_error_result(
                   "The tool can only run within its HTTP request"));
        return NGX_OK;
    }

    if (tool->resource) {
        return ngx_http_mcp_loctool_start(call, r, tool);
    }

    rc = ngx_http_mcp_loctool_case_clash(tool,
                                         ngx_http_mcp_call_arguments(call),
                                         ngx_http_mcp_call_pool(call), clash);

    if (rc == NGX_ERROR) {
        return NGX_ERROR;
    }

    if (rc == NGX_DECLINED) {
        ngx_log_error(NGX_LOG_INFO, ngx_http_mcp_call_get_log(call), 0,
                      "mcp: tool \"%V\": arguments refused, two names "
                      "differ only in case", &tool->name);

        /* whole names only: a cut one could end within a character */
        if (ngx_strlen(clash[0]) > 64) {
            clash[0] = (u_char *) "...";
            clash[1] = clash[0];
        }

        p = ngx_snprintf(text, sizeof(text) - 1, "Invalid params: tool "
                         "\"%V\": the arguments \"%s\" and \"%s\" differ "
                         "only in case", &tool->name, clash[0], clash[1]);
        *p = '\0';

        ngx_http_mcp_call_error(call, NGX_HTTP_MCP_INVALID_PARAMS,
                                (const char *) text);
        return NGX_OK;
    }

    if (lcf != NULL && lcf->args != NULL) {
        name = ngx_http_mcp_loctool_check_args(call, tool, lcf->args);

        if (name != NULL) {
            ngx_log_error(NGX_LOG_INFO, ngx_http_mcp_call_get_log(call), 0,
                          "mcp: tool \"%V\": argument \"%V\" refused, a "
                          "dot segment", &tool->name, name);

            p = ngx_snprintf(text, sizeof(text) - 1, "Tool \"%V\": the "
                             "argument \"%V\" is refused in a URI: it has "
                             "a \".\" or \"..\" segment", &tool->name, name);
            *p = '\0';

            ngx_http_mcp_call_result(call,
                ngx_http_mcp_loctool_error_result((const char *) text));
            return NGX_OK;
        }
    }

    return ngx_http_mcp_loctool_start(call, r, tool);
}


static ngx_int_t
ngx_http_mcp_loctool_start(ngx_http_mcp_call_t *call, ngx_http_request_t *r,
    ngx_http_mcp_loctool_t *tool)
{
    u_char                           *msg;
    ngx_str_t                         body;
    ngx_pool_t                       *pool;
    ngx_http_mcp_loctool_fetch_t      f;
    ngx_http_mcp_loctool_state_t     *st;
    ngx_http_mcp_loctool_loc_conf_t  *lcf;

    pool = ngx_http_mcp_call_pool(call);
    lcf = ngx_http_mcp_call_loc_conf(call, &ngx_http_mcp_loctool_module);

    ngx_str_null(&body);

    if ((tool->method == NGX_HTTP_POST || tool->method == NGX_HTTP_PUT
         || tool->method == NGX_HTTP_PATCH)
        && ngx_http_mcp_loctool_body(call, r, &body) != NGX_OK)
    {
        return NGX_ERROR;
    }

    ngx_memzero(&f, sizeof(ngx_http_mcp_loctool_fetch_t));

    f.uri = tool->uri;
    f.args = tool->args;
    f.method = tool->method;
    f.method_name = tool->method_name;
    f.body = body;
    f.max = lcf ? lcf->max_size : 1024 * 1024;
    f.handler = ngx_http_mcp_loctool_event;
    f.copy_headers = 1;

    /* the reply must be the location's the tool names, and no other's */
    f.no_redirect = 1;

    st = ngx_http_mcp_loctool_fetch(call, &f);
    if (st == NULL) {
        return NGX_ERROR;
    }

    st->tool = tool;
    st->event.data = st;

    st->timer.handler = ngx_http_mcp_loctool_timeout;
    st->timer.data = st;
    st->timer.log = ngx_http_mcp_call_get_log(call);

    ngx_add_timer(&st->timer, lcf ? lcf->timeout : 30000);

    ngx_log_debug3(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "mcp loctool \"%V\": %V %V", &tool->name,
                   &tool->method_name, &tool->uri);

    if (!ngx_http_mcp_call_has_progress_token(call)) {
        return NGX_OK;
    }

    /* the call runs now: a progress message lost is no reason to end it */

    msg = ngx_pnalloc(pool, tool->uri.len + sizeof("calling "));

    if (msg != NULL) {
        ngx_sprintf(msg, "calling %V%Z", &tool->uri);
        (void) ngx_http_mcp_call_progress(call, 0, 2, (const char *) msg);
    }

    return NGX_OK;
}


/*
 * A background subrequest of the call's POST, whose reply the capture
 * filters take into the call's pool, bounded by f->max: for a
 * location-backed tool, and for the gateway over several MCP servers
 * (ngx_http_mcp_aggregate_leg.c).  The state's event, with f->handler,
 * is posted on news: the header, the end, a reply too big, the POST
 * gone.  The call's pool cleanup aborts the subrequest if it still runs.
 */

ngx_http_mcp_loctool_state_t *
ngx_http_mcp_loctool_fetch(ngx_http_mcp_call_t *call,
    ngx_http_mcp_loctool_fetch_t *f)
{
    ngx_http_request_t            *r;
    ngx_http_mcp_loctool_state_t  *st;

    r = ngx_http_mcp_call_http_request(call);
    if (r == NULL) {
        return NULL;
    }

    st = ngx_http_mcp_loctool_fetch_request(r, ngx_http_mcp_call_pool(call),
                                            ngx_http_mcp_call_get_log(call),
                                            f);
    if (st != NULL) {
        st->call = call;
    }

    return st;
}


/*
 * A fetch of r's, with no call: the state lives in pool, which its
 * owner destroys after ngx_http_mcp_loctool_fetch_close(), as a call's
 * end does; r's end, as a POST's, is news (st->gone).
 */

ngx_http_mcp_loctool_state_t *
ngx_http_mcp_loctool_fetch_request(ngx_http_request_t *r, ngx_pool_t *pool,
    ngx_log_t *log, ngx_http_mcp_loctool_fetch_t *f)
{
    ngx_pool_cleanup_t            *ccln;
    ngx_http_mcp_loctool_link_t   *link;
    ngx_http_mcp_loctool_state_t  *st;

    st = ngx_pcalloc(pool, sizeof(ngx_http_mcp_loctool_state_t));
    ccln = ngx_pool_cleanup_add(pool, 0);

    if (st == NULL || ccln == NULL) {
        return NULL;
    }

    st->pool = pool;
    st->max = f->max;
    st->want_session = f->want_session;
    st->stream = f->stream;

    st->event.handler = f->handler;
    st->event.data = f->data;
    st->event.log = log;

    ccln->handler = ngx_http_mcp_loctool_call_cleanup;
    ccln->data = st;

    link = ngx_http_mcp_loctool_subrequest(r, f);
    if (link == NULL) {
        return NULL;
    }

    link->state = st;
    st->link = link;

    return st;
}


/*
 * A message to a location whose reply nobody waits for (a notification,
 * an answer): the link has no state, so the capture filters drop the
 * reply; it lives in the POST's pool alone.
 */

ngx_int_t
ngx_http_mcp_loctool_send(ngx_http_request_t *r,
    ngx_http_mcp_loctool_fetch_t *f)
{
    return (ngx_http_mcp_loctool_subrequest(r, f) != NULL) ? NGX_OK
                                                          : NGX_ERROR;
}


/* the subrequest and its link, without a state yet */

static ngx_http_mcp_loctool_link_t *
ngx_http_mcp_loctool_subrequest(ngx_http_request_t *r,
    ngx_http_mcp_loctool_fetch_t *f)
{
    ngx_str_t                    *args;
    ngx_pool_cleanup_t           *rcln;
    ngx_http_request_t           *sr;
    ngx_http_mcp_loctool_link_t  *link;

    link = ngx_pcalloc(r->pool, sizeof(ngx_http_mcp_loctool_link_t));
    rcln = ngx_pool_cleanup_add(r->pool, 0);

    if (link == NULL || rcln == NULL) {
        return NULL;
    }

    link->kick.handler = ngx_http_mcp_loctool_kick;
    link->kick.data = r->connection;
    link->kick.log = r->connection->log;
    link->ps.handler = ngx_http_mcp_loctool_done;
    link->ps.data = link;
    link->no_redirect = f->no_redirect;

    rcln->handler = ngx_http_mcp_loctool_request_cleanup;
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

    if (ngx_http_mcp_loctool_headers(r, sr, &f->body, f) != NGX_OK) {
        return NULL;
    }

    link->sr = sr;

    /* the subrequest runs when the POST's posted requests do; make sure */
    ngx_post_event(&link->kick, &ngx_posted_events);

    return link;
}


/* the fetch is no longer wanted: its subrequest is aborted, news dropped */

void
ngx_http_mcp_loctool_fetch_close(ngx_http_mcp_loctool_state_t *st)
{
    if (st->event.posted) {
        ngx_delete_posted_event(&st->event);
    }

    ngx_http_mcp_loctool_abort(st);
}


/*
 * The subrequest's headers: the POST's, less what is the MCP client's
 * own (its credentials, its body's framing), plus the JSON body's.
 */

static ngx_int_t
ngx_http_mcp_loctool_headers(ngx_http_request_t *r, ngx_http_request_t *sr,
    ngx_str_t *body, ngx_http_mcp_loctool_fetch_t *f)
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

        for (k = 0; ngx_http_mcp_loctool_hidden[k].len; k++) {
            if (h[i].key.len == ngx_http_mcp_loctool_hidden[k].len
                && ngx_strncasecmp(h[i].key.data,
                                   ngx_http_mcp_loctool_hidden[k].data,
                                   h[i].key.len)
                   == 0)
            {
                break;
            }
        }

        if (ngx_http_mcp_loctool_hidden[k].len) {
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
    ngx_str_set(&n->value, "application/json");
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


/* the arguments object as JSON, in the POST's pool (the subrequest's) */

static ngx_int_t
ngx_http_mcp_loctool_body(ngx_http_mcp_call_t *call, ngx_http_request_t *r,
    ngx_str_t *body)
{
    char   *json;
    cJSON  *args;

    args = ngx_http_mcp_call_arguments(call);

    if (args == NULL) {
        ngx_str_set(body, "{}");
        return NGX_OK;
    }

    json = cJSON_PrintUnformatted(args);
    if (json == NULL) {
        return NGX_ERROR;
    }

    body->len = ngx_strlen(json);
    body->data = ngx_pnalloc(r->pool, body->len);

    if (body->data != NULL) {
        ngx_memcpy(body->data, json, body->len);
    }

    cJSON_free(json);

    return (body->data != NULL) ? NGX_OK : NGX_ERROR;
}


/*
 * The subrequest ends (post_subrequest).  What would terminate the POST
 * along with it (an error, a timeout, 444) ends only the subrequest: the
 * call says it failed.  A status of 300 or more first makes its page,
 * which our filters see, and ends again.
 */

ngx_int_t
ngx_http_mcp_loctool_done(ngx_http_request_t *sr, void *data, ngx_int_t rc)
{
    ngx_http_mcp_loctool_link_t *link = data;

    ngx_http_mcp_loctool_state_t  *st;

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, sr->connection->log, 0,
                   "mcp loctool subrequest \"%V\" done: %i", &sr->uri, rc);

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


static void
ngx_http_mcp_loctool_kick(ngx_event_t *ev)
{
    ngx_connection_t  *c = ev->data;

    ngx_http_run_posted_requests(c);
}


/* news from the subrequest, or of the POST's end */

static void
ngx_http_mcp_loctool_event(ngx_event_t *ev)
{
    ngx_http_mcp_loctool_state_t *st = ev->data;

    u_char  *msg;

    if (st->header && !st->told && !st->too_big) {
        st->told = 1;

        msg = ngx_pnalloc(ngx_http_mcp_call_pool(st->call),
                          st->tool->uri.len + sizeof("HTTP 000 from "));

        if (msg != NULL) {
            ngx_sprintf(msg, "HTTP %03ui from %V%Z", st->status % 1000,
                        &st->tool->uri);
            (void) ngx_http_mcp_call_progress(st->call, 1, 2,
                                              (const char *) msg);
        }
    }

    if (st->too_big) {
        ngx_http_mcp_loctool_finish(st, "the reply is larger than "
                                        "mcp_tool_max_size");
        return;
    }

    if (st->done) {
        ngx_http_mcp_loctool_finish(st, st->redirected
                                        ? "its location's reply was "
                                          "redirected inside nginx (an "
                                          "X-Accel-Redirect, error_page, "
                                          "try_files), refused"
                                        : st->failed
                                        ? "its location failed" : NULL);
        return;
    }

    if (st->gone) {
        ngx_http_mcp_loctool_finish(st, "its HTTP request went away");
    }
}


static void
ngx_http_mcp_loctool_timeout(ngx_event_t *ev)
{
    ngx_http_mcp_loctool_state_t *st = ev->data;

    ngx_log_error(NGX_LOG_INFO, ev->log, 0,
                  "mcp: \"%V\" timed out waiting for %V", &st->tool->name,
                  &st->tool->uri);

    ngx_http_mcp_loctool_finish(st, "timed out (mcp_tool_timeout)");
}


/*
 * Ends the call: the result, or an error when failure is set.  The
 * subrequest, if it still runs, is aborted first, while the POST (and
 * so the subrequest) surely still exists.
 */

static void
ngx_http_mcp_loctool_finish(ngx_http_mcp_loctool_state_t *st,
    const char *failure)
{
    u_char               *p, text[256], line[512];
    cJSON                *result;
    ngx_http_mcp_call_t  *call;

    call = st->call;

    ngx_http_mcp_loctool_abort(st);

    if (st->timer.timer_set) {
        ngx_del_timer(&st->timer);
    }

    if (st->event.posted) {
        ngx_delete_posted_event(&st->event);
    }

    if (failure == NULL && st->refused.len) {
        p = ngx_snprintf(text, sizeof(text) - 1, "the argument \"%V\" is "
                         "refused in a URI: it has a \".\" or \"..\" "
                         "segment", &st->refused);
        *p = '\0';
        failure = (const char *) text;
    }

    if (st->tool->resource) {
        if (failure != NULL) {
            p = ngx_snprintf(line, sizeof(line) - 1,
                             "Resource unavailable: %s", failure);
            *p = '\0';
            ngx_http_mcp_call_error(call, NGX_HTTP_MCP_INTERNAL_ERROR,
                                    (const char *) line);
            return;
        }

        result = ngx_http_mcp_loctool_resource_result(st);

        if (result != NULL) {
            ngx_http_mcp_call_result(call, result);
        }

        return;
    }

    if (failure == NULL
        && (st->status < NGX_HTTP_OK
            || st->status >= NGX_HTTP_SPECIAL_RESPONSE))
    {
        /* the status only: the page may say what the caller must not see */
        p = ngx_snprintf(text, sizeof(text) - 1, "its location answered "
                         "HTTP %03ui", st->status % 1000);
        *p = '\0';
        failure = (const char *) text;
    }

    result = (failure != NULL) ? NULL
             : ngx_http_mcp_loctool_tool_result(st, &failure);

    if (result == NULL && failure != NULL) {
        p = ngx_snprintf(line, sizeof(line) - 1, "Tool \"%V\": %s",
                         &st->tool->name, failure);
        *p = '\0';
        result = ngx_http_mcp_loctool_error_result((const char *) line);
    }

    /* NULL: call_result() answers with an internal error */
    ngx_http_mcp_call_result(call, result);
}


/*
 * Cuts the link; a subrequest that still runs behind an upstream loses
 * it (its connection closed) through the upstream's own cleanup.
 */

static void
ngx_http_mcp_loctool_abort(ngx_http_mcp_loctool_state_t *st)
{
    ngx_http_request_t           *sr;
    ngx_http_mcp_loctool_link_t  *link;

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
                       "mcp loctool: \"%V\" runs on, unheard", &sr->uri);
        return;
    }

    ngx_log_debug1(NGX_LOG_DEBUG_HTTP, sr->connection->log, 0,
                   "mcp loctool: aborting \"%V\"", &sr->uri);

    link->done = 1;

    (*sr->upstream->cleanup)(sr);
}


/* the call's pool goes: the call ended or was cancelled */

static void
ngx_http_mcp_loctool_call_cleanup(void *data)
{
    ngx_http_mcp_loctool_state_t *st = data;

    if (st->timer.timer_set) {
        ngx_del_timer(&st->timer);
    }

    if (st->event.posted) {
        ngx_delete_posted_event(&st->event);
    }

    ngx_http_mcp_loctool_abort(st);
}


/* the POST's pool goes, and the subrequest with it */

static void
ngx_http_mcp_loctool_request_cleanup(void *data)
{
    ngx_http_mcp_loctool_link_t *link = data;

    ngx_http_mcp_loctool_state_t  *st;

    if (link->kick.posted) {
        ngx_delete_posted_event(&link->kick);
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


