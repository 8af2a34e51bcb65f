
/*
 * A leg: what one backend of an mcp_backend location is asked for a
 * client's request, over background subrequests of the client's POST to
 * the backend's location (ngx_http_mcp_fetch_call()); and, at the
 * end, the client's params as a backend gets them and a backend's answer
 * (or its absence) as the client gets it.
 *
 * The session: the gateway speaks 2025-11-25 with sessions to every
 * backend.  A 2025 client's session has its own session at each backend,
 * opened at its initialize or the first time the backend is needed, its
 * id kept with the client's session in the zone; stateless (2026-07-28)
 * clients share one session per backend and worker, but for their
 * routed requests (tools/call, prompts/get, resources/read), which go
 * as the client's own revision, without a session, to a backend that
 * speaks it: its input_required rounds, its capabilities and its
 * Mcp-Param-* headers reach the backend as the client sent them (one
 * that refuses the revision is asked in a session from then on, by that
 * worker).  A backend that
 * answers 404 (or 400, as some do) to a request with a session id lost
 * it (it restarted): the leg opens a new one and asks again, once.
 *
 * Failures: no answer within mcp_backend_timeout, or within
 * mcp_backend_max_time however many events a stream sends (but for a
 * tool's call, which may just run long, and whose backend is told it was
 * given up on), an HTTP error, a reply that is not a JSON-RPC response or is
 * larger than mcp_backend_max_size, a routed request's SSE stream that
 * breaks off (see ngx_http_mcp_aggregate_relay.c) where it cannot be
 * resumed (ngx_http_mcp_aggregate_resume()).  The first failure
 * of an episode is one [warn] line; every worker then leaves the backend
 * out for mcp_backend_retry after its last failure (the session zone
 * keeps its health), tries it again after, and a [notice] line says when
 * it answers again.  A JSON-RPC error is an answer, not a failure; nor
 * is what is ours (the client gone, no memory).  Nor, the first times,
 * a kept connection that failed before any byte of the reply (a
 * backend's reload) when the request is harmless twice: it goes again
 * (ngx_http_mcp_aggregate_retry.c).
 */


#include "ngx_http_mcp_aggregate.h"
#include "ngx_http_mcp_sse_read.h"
#include "ngx_http_mcp_store.h"
#include "ngx_http_mcp_core.h"
#include "ngx_http_mcp_metrics.h"
#include "ngx_http_mcp_trace.h"
#include "ngx_http_mcp_subrequest.h"


#define NGX_HTTP_MCP_LEG_INIT         0
#define NGX_HTTP_MCP_LEG_INITIALIZED  1
#define NGX_HTTP_MCP_LEG_REQUEST      2

#define NGX_HTTP_MCP_LEG_RESUMES      8     /* of a routed request's
                                               stream, at most: each is a
                                               subrequest of the POST */
#define NGX_HTTP_MCP_LEG_RESUME_WAIT  5000  /* ms: the longest retry:
                                               honoured */
#define NGX_HTTP_MCP_LEG_RESUME_DELAY 1000  /* ms, without a retry: */


/*
 * The client's POST, held (a count of its own) once its stream ended
 * before the call's response: its subrequests are the call's resumes
 */
typedef struct ngx_http_mcp_aggregate_keep_s {
    ngx_http_request_t               *request;
    ngx_http_mcp_aggregate_resume_t  *resume;   /* NULL: let go */
    ngx_event_t                       release;
} ngx_http_mcp_aggregate_keep_t;


static void ngx_http_mcp_aggregate_start(ngx_http_mcp_aggregate_leg_t *leg);
static ngx_int_t ngx_http_mcp_aggregate_send(ngx_http_mcp_aggregate_leg_t *leg,
    const char *method, cJSON *params, ngx_uint_t request);
static void ngx_http_mcp_aggregate_event(ngx_event_t *ev);
static ngx_int_t ngx_http_mcp_aggregate_again(
    ngx_http_mcp_aggregate_leg_t *leg);
static void ngx_http_mcp_aggregate_stream(ngx_http_mcp_aggregate_leg_t *leg);
static ngx_int_t ngx_http_mcp_aggregate_resume(
    ngx_http_mcp_aggregate_leg_t *leg);
static ngx_int_t ngx_http_mcp_aggregate_hold(
    ngx_http_mcp_aggregate_leg_t *leg, ngx_http_request_t *r);
static void ngx_http_mcp_aggregate_let_go(
    ngx_http_mcp_aggregate_resume_t *rs);
static void ngx_http_mcp_aggregate_release(ngx_event_t *ev);
static void ngx_http_mcp_aggregate_resume_cleanup(void *data);
static void ngx_http_mcp_aggregate_keep_cleanup(void *data);
static void ngx_http_mcp_aggregate_resume_handler(ngx_event_t *ev);
static ngx_int_t ngx_http_mcp_aggregate_resume_send(
    ngx_http_mcp_aggregate_leg_t *leg);
static void ngx_http_mcp_aggregate_answer(ngx_http_mcp_aggregate_leg_t *leg);
static void ngx_http_mcp_aggregate_opened(ngx_http_mcp_aggregate_leg_t *leg,
    cJSON *reply);
static ngx_int_t ngx_http_mcp_aggregate_sid(ngx_http_mcp_aggregate_leg_t *leg,
    ngx_str_t *sid);
static cJSON *ngx_http_mcp_aggregate_parse(ngx_http_mcp_fetch_state_t *st);
static ngx_uint_t ngx_http_mcp_aggregate_date(const char *s);
static void ngx_http_mcp_aggregate_fail(ngx_http_mcp_aggregate_leg_t *leg,
    const char *failure);
static void ngx_http_mcp_aggregate_lost(ngx_http_mcp_aggregate_leg_t *leg,
    const char *failure);
static void ngx_http_mcp_aggregate_end(ngx_http_mcp_aggregate_leg_t *leg);
static void ngx_http_mcp_aggregate_timeout(ngx_event_t *ev);
static void ngx_http_mcp_aggregate_cleanup(void *data);
static ngx_uint_t ngx_http_mcp_aggregate_stateless_method(u_char *p,
    size_t len);
static ngx_int_t ngx_http_mcp_aggregate_open_round(
    ngx_http_mcp_aggregate_op_t *op);
static ngx_int_t ngx_http_mcp_aggregate_refused(
    ngx_http_mcp_aggregate_leg_t *leg, ngx_http_mcp_fetch_state_t *st);
static ngx_int_t ngx_http_mcp_aggregate_input_required(
    ngx_http_mcp_call_t *call, cJSON *reply, cJSON *result);


ngx_http_mcp_aggregate_op_t *
ngx_http_mcp_aggregate_op(ngx_http_mcp_call_t *call,
    ngx_http_mcp_aggregate_loc_conf_t *conf,
    ngx_http_mcp_aggregate_done_pt done)
{
    ngx_uint_t                    i;
    ngx_pool_t                   *pool;
    ngx_pool_cleanup_t           *cln;
    ngx_http_mcp_backend_t       *b;
    ngx_http_mcp_aggregate_op_t  *op;

    pool = ngx_http_mcp_call_pool(call);

    op = ngx_pcalloc(pool, sizeof(ngx_http_mcp_aggregate_op_t));
    if (op == NULL) {
        return NULL;
    }

    op->legs = ngx_pcalloc(pool, conf->backends->nelts
                                 * sizeof(ngx_http_mcp_aggregate_leg_t));
    cln = ngx_pool_cleanup_add(pool, 0);

    if (op->legs == NULL || cln == NULL) {
        return NULL;
    }

    op->call = call;
    op->conf = conf;
    op->done = done;
    op->stateless = ngx_http_mcp_call_client(call)->version
                    >= NGX_HTTP_MCP_VSTATELESS;

    b = conf->backends->elts;

    for (i = 0; i < conf->backends->nelts; i++) {
        op->legs[i].op = op;
        op->legs[i].backend = &b[i];
    }

    op->timer.handler = ngx_http_mcp_aggregate_timeout;
    op->timer.data = op;
    op->timer.log = ngx_http_mcp_call_get_log(call);

    cln->handler = ngx_http_mcp_aggregate_cleanup;
    cln->data = op;

    ngx_http_mcp_call_set_data(call, op);

    return op;
}


/* backend i is to be asked method (NULL: only its session), params owned */

void
ngx_http_mcp_aggregate_ask(ngx_http_mcp_aggregate_op_t *op, ngx_uint_t i,
    const char *method, cJSON *params)
{
    op->legs[i].asked = 1;
    op->legs[i].method = method;
    op->legs[i].params = params;
}


void
ngx_http_mcp_aggregate_run(ngx_http_mcp_aggregate_op_t *op)
{
    ngx_uint_t  i, n;

    n = op->conf->backends->nelts;

    if (op->stateless && ngx_http_mcp_aggregate_open_round(op) != NGX_OK) {
        /* the call ended: its requestState is not this request's */
        return;
    }

    /* one more, so that a leg that ends at once does not end the op */
    op->pending = 1;

    for (i = 0; i < n; i++) {
        if (op->legs[i].asked) {
            op->pending++;
        }
    }

    op->started = ngx_current_msec;
    ngx_add_timer(&op->timer, op->conf->timeout);

    for (i = 0; i < n; i++) {
        if (op->legs[i].asked) {
            ngx_http_mcp_aggregate_start(&op->legs[i]);
        }
    }

    if (--op->pending == 0) {
        op->ended = 1;

        if (op->timer.timer_set) {
            ngx_del_timer(&op->timer);
        }

        op->done(op);
    }
}


static void
ngx_http_mcp_aggregate_start(ngx_http_mcp_aggregate_leg_t *leg)
{
    ngx_str_t                     sid;
    ngx_http_mcp_backend_t       *b;
    ngx_http_mcp_reqctx_t        *rctx;
    ngx_http_mcp_aggregate_op_t  *op;

    op = leg->op;
    b = leg->backend;

    if (ngx_http_mcp_session_backend_down(
            ngx_http_mcp_call_conf(op->call)->zone, &b->uri, op->conf->retry))
    {
        leg->failed = 1;
        leg->failure = "it failed a moment ago, and is left out until "
                       "mcp_backend_retry has passed";
        ngx_http_mcp_aggregate_end(leg);
        return;
    }

    ngx_str_null(&sid);

    if (op->stateless
        && b->stateless != NGX_HTTP_MCP_AGGREGATE_SESSIONS
        && op->sids == NULL
        && leg->method != NULL
        && ngx_http_mcp_aggregate_stateless_method((u_char *) leg->method,
                                                   ngx_strlen(leg->method)))
    {
        /*
         * the client's own revision, so that what needs it (a round of
         * input_required, its capabilities, its Mcp-Param-* headers)
         * reaches the backend as the client sent it
         */
        leg->direct = 1;
        leg->sid = sid;
        leg->step = NGX_HTTP_MCP_LEG_REQUEST;

        goto request;
    }

    leg->direct = 0;

    if (op->opening) {
        /* a new client session: a new session at every backend */

    } else if (op->sids != NULL) {
        sid = op->sids[b->index];

    } else if (op->stateless) {
        if (b->opened) {
            sid.data = b->sid;
            sid.len = b->sid_len;
        }

    } else {
        rctx = ngx_http_mcp_call_client(op->call);

        if (ngx_http_mcp_session_backend(
                ngx_http_mcp_call_conf(op->call)->zone, &rctx->session_id,
                b->index, ngx_http_mcp_call_pool(op->call), &sid)
            == NGX_ERROR)
        {
            ngx_http_mcp_aggregate_lost(leg, "no memory");
            return;
        }
    }

    leg->sid = sid;

    if (sid.len == 0 && !(b->sessionless && (b->opened || !op->stateless)))
    {
        leg->step = NGX_HTTP_MCP_LEG_INIT;

    } else if (leg->method == NULL) {
        /* the session is there already */
        ngx_http_mcp_aggregate_end(leg);
        return;

    } else {
        leg->step = NGX_HTTP_MCP_LEG_REQUEST;
    }

    if (leg->step == NGX_HTTP_MCP_LEG_INIT) {
        if (ngx_http_mcp_aggregate_send(leg, "initialize", NULL, 1)
            != NGX_OK)
        {
            ngx_http_mcp_aggregate_lost(leg, "could not start a "
                                             "subrequest");
        }

        return;
    }

request:

    if (ngx_http_mcp_aggregate_send(leg, leg->method, leg->params, 1)
        != NGX_OK)
    {
        ngx_http_mcp_aggregate_lost(leg, "could not start a subrequest");
    }
}


/*
 * A JSON-RPC message to the backend's location, with the session's
 * headers; request: it has an id (1: one request a subrequest).
 */

static ngx_int_t
ngx_http_mcp_aggregate_send(ngx_http_mcp_aggregate_leg_t *leg,
    const char *method, cJSON *params, ngx_uint_t request)
{
    cJSON                         *msg, *p, *caps, *info;
    ngx_http_request_t            *r;
    ngx_http_mcp_fetch_t           f;

    static uint64_t                next;

    r = ngx_http_mcp_call_http_request(leg->op->call);

    if (r == NULL) {
        return NGX_ERROR;
    }

    /*
     * unique among this backend session's requests, whichever worker
     * sends them: a cancellation names one
     */
    leg->id = ((uint64_t) ngx_worker << 36) + ++next;

    msg = cJSON_CreateObject();
    if (msg == NULL) {
        return NGX_ERROR;
    }

    if (cJSON_AddStringToObject(msg, "jsonrpc", "2.0") == NULL
        || (request
            && cJSON_AddNumberToObject(msg, "id", (double) leg->id) == NULL)
        || cJSON_AddStringToObject(msg, "method", method) == NULL)
    {
        goto failed;
    }

    if (leg->step == NGX_HTTP_MCP_LEG_INIT) {
        p = cJSON_AddObjectToObject(msg, "params");
        caps = (p != NULL) ? cJSON_AddObjectToObject(p, "capabilities")
                           : NULL;
        info = (p != NULL) ? cJSON_AddObjectToObject(p, "clientInfo") : NULL;

        if (caps == NULL || info == NULL
            || ngx_http_mcp_aggregate_client_caps(leg->op, caps) != NGX_OK
            || cJSON_AddStringToObject(p, "protocolVersion", "2025-11-25")
               == NULL
            || cJSON_AddStringToObject(info, "name", "nginx-mcp-gateway")
               == NULL
            || cJSON_AddStringToObject(info, "version",
                                       NGX_HTTP_MCP_MODULE_VERSION)
               == NULL)
        {
            goto failed;
        }

    } else if (params != NULL) {
        p = cJSON_Duplicate(params, 1);

        if (p == NULL
            || (leg->direct
                && ngx_http_mcp_aggregate_direct_params(leg, p) != NGX_OK)
            || !cJSON_AddItemToObject(msg, "params", p))
        {
            cJSON_Delete(p);
            goto failed;
        }
    }

    ngx_memzero(&f, sizeof(ngx_http_mcp_fetch_t));

    if (ngx_http_mcp_aggregate_body(leg->op->call, r->pool, msg, &f.body)
        != NGX_OK
        || ngx_http_mcp_aggregate_headers(leg, r,
                                          leg->step == NGX_HTTP_MCP_LEG_INIT,
                                          &f)
           != NGX_OK)
    {
        return NGX_ERROR;
    }

    f.handler = ngx_http_mcp_aggregate_event;
    f.data = leg;
    f.want_session = (leg->step == NGX_HTTP_MCP_LEG_INIT);

    /* a routed request's events are relayed as they come */
    f.stream = (leg->step == NGX_HTTP_MCP_LEG_REQUEST && request
                && (ngx_strcmp(method, "tools/call") == 0
                    || ngx_strcmp(method, "prompts/get") == 0
                    || ngx_strcmp(method, "resources/read") == 0
                    || ngx_strcmp(method, "tasks/result") == 0));
    leg->routed = f.stream;

    ngx_log_debug3(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "mcp backend \"%V\": %s to %V",
                   &leg->backend->name, method, &leg->backend->uri);

    leg->st = ngx_http_mcp_fetch_call(leg->op->call, &f);

    if (leg->st == NULL
        || (f.stream
            && (ngx_http_mcp_aggregate_watch(leg) != NGX_OK
                || ngx_http_mcp_aggregate_watch_client(leg) != NGX_OK)))
    {
        return NGX_ERROR;
    }

    return NGX_OK;

failed:

    cJSON_Delete(msg);
    return NGX_ERROR;
}


/*
 * A request's body to a backend: the message, with the call's trace
 * context in its _meta (every leg of a traced call, a list's and an
 * initialize's too), as JSON in the pool.  Takes msg.
 */

ngx_int_t
ngx_http_mcp_aggregate_body(ngx_http_mcp_call_t *call, ngx_pool_t *pool,
    cJSON *msg, ngx_str_t *body)
{
    char  *json;

    if (ngx_http_mcp_trace_message(ngx_http_mcp_call_trace(call), msg)
        != NGX_OK)
    {
        cJSON_Delete(msg);
        return NGX_ERROR;
    }

    json = cJSON_PrintUnformatted(msg);
    cJSON_Delete(msg);

    if (json == NULL) {
        return NGX_ERROR;
    }

    body->len = ngx_strlen(json);
    body->data = ngx_pnalloc(pool, body->len);

    if (body->data != NULL) {
        ngx_memcpy(body->data, json, body->len);
    }

    cJSON_free(json);

    return (body->data != NULL) ? NGX_OK : NGX_ERROR;
}


/* news of the leg's fetch */

static void
ngx_http_mcp_aggregate_event(ngx_event_t *ev)
{
    ngx_http_mcp_aggregate_leg_t *leg = ev->data;

    const char                    *failure;
    ngx_http_mcp_fetch_state_t  *st;

    st = leg->st;

    if (leg->done || st == NULL) {
        return;
    }

    if (leg->abandoned) {
        /*
         * the backend was told of the client's leaving: the POST's end;
         * its events are nobody's, dropped as they come
         */
        if (st->stream) {
            st->len = 0;
            ngx_http_mcp_fetch_taken(st);
        }

        if (st->gone) {
            ngx_http_mcp_aggregate_lost(leg, "the client's request went "
                                             "away");
        }

        return;
    }

    if (st->too_big) {
        leg->broken = st->stream;
        failure = st->stream ? "its events came faster than they could be "
                               "relayed"
                             : "its reply is larger than "
                               "mcp_backend_max_size";

        if (leg->routed) {
            /*
             * the answer to what the client chose to ask: the backend
             * stays in the others' lists
             */
            ngx_http_mcp_aggregate_lost(leg, failure);
            return;
        }

        ngx_http_mcp_aggregate_fail(leg, failure);
        return;
    }

    /* the stream mode stays for an SSE reply only */
    if (st->stream && st->header && st->status == NGX_HTTP_OK) {
        ngx_http_mcp_aggregate_stream(leg);
        return;
    }

    if (st->done && leg->resume != NULL && leg->resume->resuming) {
        /* no SSE stream: the backend would not resume it */
        leg->broken = 1;
        ngx_http_mcp_aggregate_fail(leg, "its stream ended before its "
                                         "response, and its resume was "
                                         "refused");
        return;
    }

    if (st->done) {
        if (st->unreplied && ngx_http_mcp_aggregate_again(leg) == NGX_OK) {
            return;
        }

        if (st->failed) {
            ngx_http_mcp_aggregate_fail(leg, "its location failed");
            return;
        }

        ngx_http_mcp_aggregate_answer(leg);
        return;
    }

    if (st->gone) {
        ngx_http_mcp_aggregate_lost(leg, "the client's request went away");
    }
}


/*
 * The fetch failed on a kept connection before any byte of the reply (a
 * backend's reload, see ngx_http_mcp_aggregate_retry.c): the same
 * message again, on another connection, when it is harmless twice.
 * Each try that fails so took a kept connection out of the cache (nginx
 * closes it), so the tries soon come to a new one; a failure there, or
 * once a byte came, is the leg's failure.  NGX_DECLINED: not again.
 */

static ngx_int_t
ngx_http_mcp_aggregate_again(ngx_http_mcp_aggregate_leg_t *leg)
{
    ngx_uint_t   request;
    const char  *method;

    switch (leg->step) {

    case NGX_HTTP_MCP_LEG_INIT:
        method = "initialize";
        request = 1;
        break;

    case NGX_HTTP_MCP_LEG_INITIALIZED:
        method = "notifications/initialized";
        request = 0;
        break;

    default:
        method = leg->method;
        request = 1;
    }

    if (leg->resends == NGX_HTTP_MCP_AGGREGATE_RESENDS
        || !ngx_http_mcp_aggregate_retry_safe(leg, request ? method : NULL))
    {
        return NGX_DECLINED;
    }

    leg->resends++;

    ngx_http_mcp_fetch_close(leg->st);
    leg->st = NULL;

    ngx_log_error(NGX_LOG_INFO, ngx_http_mcp_call_get_log(leg->op->call), 0,
                  "mcp: backend \"%V\": %s sent again, a kept connection "
                  "failed before its reply", &leg->backend->name, method);

    if (ngx_http_mcp_aggregate_send(leg, method,
                                    request ? leg->params : NULL, request)
        != NGX_OK)
    {
        ngx_http_mcp_aggregate_lost(leg, "could not start a subrequest");
    }

    return NGX_OK;
}


/* a routed request's SSE reply: its events so far */

static void
ngx_http_mcp_aggregate_stream(ngx_http_mcp_aggregate_leg_t *leg)
{
    ngx_int_t                         rc;
    ngx_pool_t                       *pool;
    ngx_pool_cleanup_t               *cln;
    ngx_http_mcp_fetch_state_t       *st;
    ngx_http_mcp_aggregate_resume_t  *rs;

    st = leg->st;
    leg->streamed = 1;

    if (leg->resume == NULL) {
        /* where the stream is: without memory for it, none to resume */
        pool = ngx_http_mcp_call_pool(leg->op->call);

        rs = ngx_pcalloc(pool, sizeof(ngx_http_mcp_aggregate_resume_t));
        cln = ngx_pool_cleanup_add(pool, 0);

        if (rs != NULL && cln != NULL) {
            rs->last.data = rs->last_id;
            rs->retry = NGX_CONF_UNSET_MSEC;
            rs->timer.log = ngx_http_mcp_call_get_log(leg->op->call);

            cln->handler = ngx_http_mcp_aggregate_resume_cleanup;
            cln->data = rs;

            leg->resume = rs;
        }
    }

    rc = ngx_http_mcp_aggregate_events(leg, st->done);

    switch (rc) {

    case NGX_OK:
        leg->st = NULL;
        ngx_http_mcp_fetch_close(st);
        ngx_http_mcp_aggregate_end(leg);
        return;

    case NGX_ERROR:
        leg->broken = 1;
        ngx_http_mcp_aggregate_fail(leg, leg->failure);
        return;

    default:
        break;
    }

    if (st->done) {
        if (ngx_http_mcp_aggregate_resume(leg) == NGX_OK) {
            return;
        }

        leg->broken = 1;
        ngx_http_mcp_aggregate_fail(leg, st->failed
                                    ? "its location failed"
                                    : (leg->resume && leg->resume->resumes)
                                    ? "its resumed stream ended before its "
                                      "response"
                                    : "its stream ended before its "
                                      "response");
        return;
    }

    if (st->gone) {
        ngx_http_mcp_aggregate_lost(leg, "the client's request went away");
    }
}


/*
 * A routed request's stream that ended before its response, after an
 * event with an id: the backend may have ended it on purpose (SEP-1699
 * polling: a long call's stream closes, and its client resumes it with
 * a GET and Last-Event-ID once retry: has passed), or lost it.  The leg
 * resumes it as a client would, and relays what follows; the op's timer
 * runs on meanwhile.  NGX_DECLINED: not to be resumed (no id, resumed
 * enough, told to cancel), the stream has failed.
 */

static ngx_int_t
ngx_http_mcp_aggregate_resume(ngx_http_mcp_aggregate_leg_t *leg)
{
    ngx_msec_t                        delay;
    ngx_http_mcp_aggregate_resume_t  *rs;

    rs = leg->resume;

    if (rs == NULL || rs->last.len == 0
        || rs->resumes >= NGX_HTTP_MCP_LEG_RESUMES
        || leg->abandoned || leg->cancelled)
    {
        return NGX_DECLINED;
    }

    rs->resumes++;
    rs->resuming = 0;

    ngx_http_mcp_fetch_close(leg->st);
    leg->st = NULL;

    delay = (rs->retry == NGX_CONF_UNSET_MSEC)
            ? NGX_HTTP_MCP_LEG_RESUME_DELAY
            : ngx_min(rs->retry, NGX_HTTP_MCP_LEG_RESUME_WAIT);

    rs->timer.handler = ngx_http_mcp_aggregate_resume_handler;
    rs->timer.data = leg;

    ngx_add_timer(&rs->timer, delay);

    ngx_log_debug3(NGX_LOG_DEBUG_HTTP,
                   ngx_http_mcp_call_get_log(leg->op->call), 0,
                   "mcp backend \"%V\": its stream ended before its "
                   "response, resumed after \"%V\" in %M ms",
                   &leg->backend->name, &rs->last, delay);

    return NGX_OK;
}


static void
ngx_http_mcp_aggregate_resume_handler(ngx_event_t *ev)
{
    ngx_http_mcp_aggregate_leg_t *leg = ev->data;

    if (leg->done) {
        return;
    }

    if (ngx_http_mcp_aggregate_resume_send(leg) != NGX_OK) {
        leg->broken = 1;
        ngx_http_mcp_aggregate_lost(leg, "its stream ended before its "
                                         "response, and could not be "
                                         "resumed");
    }
}


/* GET, in the leg's session, from the last event id on */

static ngx_int_t
ngx_http_mcp_aggregate_resume_send(ngx_http_mcp_aggregate_leg_t *leg)
{
    ngx_table_elt_t                  *h;
    ngx_http_request_t               *r;
    ngx_http_mcp_fetch_t              f;
    ngx_http_mcp_aggregate_resume_t  *rs;

    rs = leg->resume;
    r = ngx_http_mcp_call_http_request(leg->op->call);

    if (r == NULL) {
        return NGX_ERROR;
    }

    ngx_memzero(&f, sizeof(ngx_http_mcp_fetch_t));

    if (ngx_http_mcp_aggregate_headers(leg, r, 0, &f) != NGX_OK) {
        return NGX_ERROR;
    }

    h = ngx_palloc(r->pool, (f.nheaders + 1) * sizeof(ngx_table_elt_t));
    if (h == NULL) {
        return NGX_ERROR;
    }

    ngx_memcpy(h, f.headers, f.nheaders * sizeof(ngx_table_elt_t));

    if (ngx_http_mcp_aggregate_header(r->pool, &h[f.nheaders],
                                      "Last-Event-ID", "last-event-id",
                                      rs->last.data, rs->last.len)
        != NGX_OK)
    {
        return NGX_ERROR;
    }

    f.headers = h;
    f.nheaders++;
    f.method = NGX_HTTP_GET;
    ngx_str_set(&f.method_name, "GET");
    f.handler = ngx_http_mcp_aggregate_event;
    f.data = leg;
    f.stream = 1;

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "mcp backend \"%V\": GET to %V, resuming",
                   &leg->backend->name, &leg->backend->uri);

    leg->st = ngx_http_mcp_fetch_call(leg->op->call, &f);

    if (leg->st == NULL || ngx_http_mcp_aggregate_watch_client(leg) != NGX_OK)
    {
        return NGX_ERROR;
    }

    rs->resuming = 1;

    /*
     * The client's stream ends as the backend's did (its priming event
     * said where it is): what follows reaches the client when it resumes
     * at the gateway.  The POST is held meanwhile: its end would end the
     * call's subrequests, and the next resume could not be asked.  Not a
     * stateless client's (it cannot resume), nor an HTTP/2 or HTTP/3
     * stream (its connection's end frees it whatever its count): their
     * streams stay, and carry what follows.
     */
    if (rs->resumes == 1 && !leg->op->stateless
        && r->main->http_version < NGX_HTTP_VERSION_20
        && ngx_http_mcp_aggregate_hold(leg, r->main) == NGX_OK
        && ngx_http_mcp_call_close_stream(leg->op->call) != NGX_OK)
    {
        ngx_http_mcp_aggregate_let_go(rs);
    }

    return NGX_OK;
}


static ngx_int_t
ngx_http_mcp_aggregate_hold(ngx_http_mcp_aggregate_leg_t *leg,
    ngx_http_request_t *r)
{
    ngx_pool_cleanup_t             *cln;
    ngx_http_mcp_aggregate_keep_t  *keep;

    keep = ngx_pcalloc(r->pool, sizeof(ngx_http_mcp_aggregate_keep_t));
    cln = ngx_pool_cleanup_add(r->pool, 0);

    if (keep == NULL || cln == NULL) {
        return NGX_ERROR;
    }

    keep->request = r;
    keep->resume = leg->resume;
    keep->release.handler = ngx_http_mcp_aggregate_release;
    keep->release.data = keep;
    keep->release.log = r->connection->log;

    cln->handler = ngx_http_mcp_aggregate_keep_cleanup;
    cln->data = keep;

    r->count++;
    leg->resume->keep = keep;

    return NGX_OK;
}


/* the call is over: the POST goes its way, from an event of its own */

static void
ngx_http_mcp_aggregate_let_go(ngx_http_mcp_aggregate_resume_t *rs)
{
    ngx_http_mcp_aggregate_keep_t  *keep;

    keep = rs->keep;

    if (keep == NULL) {
        return;
    }

    rs->keep = NULL;
    keep->resume = NULL;

    ngx_post_event(&keep->release, &ngx_posted_events);
}


static void
ngx_http_mcp_aggregate_release(ngx_event_t *ev)
{
    ngx_http_mcp_aggregate_keep_t *keep = ev->data;

    ngx_connection_t  *c;

    c = keep->request->connection;

    ngx_http_finalize_request(keep->request, NGX_DONE);
    ngx_http_run_posted_requests(c);
}


/* the call ended (a resume may be waiting) */

static void
ngx_http_mcp_aggregate_resume_cleanup(void *data)
{
    ngx_http_mcp_aggregate_resume_t *rs = data;

    if (rs->timer.timer_set) {
        ngx_del_timer(&rs->timer);
    }

    ngx_http_mcp_aggregate_let_go(rs);
}


/* the POST went all the same (its connection failed) */

static void
ngx_http_mcp_aggregate_keep_cleanup(void *data)
{
    ngx_http_mcp_aggregate_keep_t *keep = data;

    if (keep->release.posted) {
        ngx_delete_posted_event(&keep->release);
    }

    if (keep->resume != NULL) {
        keep->resume->keep = NULL;
        keep->resume = NULL;
    }
}


static void
ngx_http_mcp_aggregate_answer(ngx_http_mcp_aggregate_leg_t *leg)
{
    u_char                      *p;
    cJSON                       *reply;
    ngx_str_t                    none = ngx_null_string;
    ngx_uint_t                   failed;
    ngx_http_mcp_fetch_state_t  *st;

    st = leg->st;
    leg->st = NULL;
    failed = 1;

    ngx_http_mcp_fetch_close(st);

    if ((st->status == NGX_HTTP_NOT_FOUND
         || st->status == NGX_HTTP_BAD_REQUEST)
        && leg->sid.len
        && leg->step != NGX_HTTP_MCP_LEG_INIT && !leg->retried)
    {
        /*
         * the backend lost the session (it restarted): a new one, once;
         * 404 is the spec's answer, 400 what some servers give
         */

        ngx_log_debug1(NGX_LOG_DEBUG_HTTP, ngx_http_mcp_call_get_log(
                       leg->op->call), 0,
                       "mcp backend \"%V\": session lost, reopening",
                       &leg->backend->name);

        leg->retried = 1;

        if (!leg->op->opening) {
            (void) ngx_http_mcp_aggregate_sid(leg, &none);
        }

        ngx_str_null(&leg->sid);
        leg->step = NGX_HTTP_MCP_LEG_INIT;

        if (ngx_http_mcp_aggregate_send(leg, "initialize", NULL, 1)
            != NGX_OK)
        {
            ngx_http_mcp_aggregate_lost(leg, "could not start a "
                                             "subrequest");
        }

        return;
    }

    if (leg->step == NGX_HTTP_MCP_LEG_INITIALIZED) {
        if (st->status < NGX_HTTP_OK
            || st->status >= NGX_HTTP_SPECIAL_RESPONSE)
        {
            goto status;
        }

        if (!leg->op->opening
            && ngx_http_mcp_aggregate_sid(leg, &leg->sid) != NGX_OK)
        {
            ngx_http_mcp_aggregate_lost(leg, "no room to keep its session");
            return;
        }

        if (leg->method == NULL) {
            ngx_http_mcp_aggregate_end(leg);
            return;
        }

        leg->step = NGX_HTTP_MCP_LEG_REQUEST;

        if (ngx_http_mcp_aggregate_send(leg, leg->method, leg->params, 1)
            != NGX_OK)
        {
            ngx_http_mcp_aggregate_lost(leg, "could not start a "
                                             "subrequest");
        }

        return;
    }

    if (leg->direct && st->status != NGX_HTTP_OK
        && st->status < NGX_HTTP_INTERNAL_SERVER_ERROR)
    {
        if (ngx_http_mcp_aggregate_refused(leg, st) == NGX_OK) {
            return;
        }

        /*
         * the client's headers (Mcp-Param-*) reach the backend with such
         * a request: its refusal of them fails this request alone, as
         * an answer too big or too late does, not the backend
         */
        failed = 0;
        goto status;
    }

    if (st->status != NGX_HTTP_OK) {
        goto status;
    }

    reply = ngx_http_mcp_aggregate_parse(st);

    if (reply == NULL) {
        ngx_http_mcp_aggregate_fail(leg, "its reply is no JSON-RPC "
                                         "response");
        return;
    }

    if (!ngx_http_mcp_aggregate_ours(leg, reply)) {
        cJSON_Delete(reply);
        ngx_http_mcp_aggregate_fail(leg, "its reply answers another "
                                         "request");
        return;
    }

    if (leg->step == NGX_HTTP_MCP_LEG_INIT) {
        leg->sid = st->session_id;
        ngx_http_mcp_aggregate_opened(leg, reply);
        return;
    }

    leg->reply = reply;

    ngx_http_mcp_aggregate_end(leg);
    return;

status:

    /* the status only: the page may say what the client must not see */
    p = ngx_pnalloc(ngx_http_mcp_call_pool(leg->op->call),
                    sizeof("it answered HTTP 000"));

    if (p != NULL) {
        ngx_sprintf(p, "it answered HTTP %03ui%Z", st->status % 1000);
    }

    if (!failed) {
        ngx_http_mcp_aggregate_lost(leg, p ? (const char *) p
                                           : "it answered an HTTP error");
        return;
    }

    ngx_http_mcp_aggregate_fail(leg, p ? (const char *) p
                                       : "it answered an HTTP error");
}


/* initialize's answer: what the backend speaks; then notifications/init */

static void
ngx_http_mcp_aggregate_opened(ngx_http_mcp_aggregate_leg_t *leg,
    cJSON *reply)
{
    cJSON                   *result, *version, *caps;
    ngx_http_mcp_backend_t  *b;

    b = leg->backend;

    result = cJSON_GetObjectItemCaseSensitive(reply, "result");
    version = cJSON_GetObjectItemCaseSensitive(result, "protocolVersion");
    caps = cJSON_GetObjectItemCaseSensitive(result, "capabilities");

    /*
     * the version goes into a header of each later request: a date
     * (YYYY-MM-DD), as every revision is named, and nothing else
     */
    if (!cJSON_IsString(version) || !cJSON_IsObject(caps)
        || !ngx_http_mcp_aggregate_date(version->valuestring))
    {
        cJSON_Delete(reply);
        ngx_http_mcp_aggregate_fail(leg, "it refused initialize");
        return;
    }

    b->version_len = ngx_strlen(version->valuestring);
    ngx_memcpy(b->version, version->valuestring, b->version_len);

    /* for every other worker's requests there (see aggregate_version) */
    (void) ngx_http_mcp_session_backend_version(
               ngx_http_mcp_call_conf(leg->op->call)->zone, &b->uri,
               b->version, &b->version_len, 1);

    /* kept by the worker, for the capabilities of later sessions */
    cJSON_Delete(b->caps);
    b->caps = cJSON_DetachItemViaPointer(result, caps);

    cJSON_Delete(reply);

    b->sessionless = (leg->sid.len == 0);

    leg->step = NGX_HTTP_MCP_LEG_INITIALIZED;

    if (ngx_http_mcp_aggregate_send(leg, "notifications/initialized", NULL, 0)
        != NGX_OK)
    {
        ngx_http_mcp_aggregate_lost(leg, "could not start a subrequest");
    }
}


/* YYYY-MM-DD */

static ngx_uint_t
ngx_http_mcp_aggregate_date(const char *s)
{
    ngx_uint_t  i;

    for (i = 0; i < sizeof("YYYY-MM-DD") - 1; i++) {
        if ((i == 4 || i == 7) ? s[i] != '-' : (s[i] < '0' || s[i] > '9')) {
            return 0;
        }
    }

    return s[i] == '\0';
}


/* keeps (or with an empty one, forgets) the leg's session at its backend */

static ngx_int_t
ngx_http_mcp_aggregate_sid(ngx_http_mcp_aggregate_leg_t *leg, ngx_str_t *sid)
{
    ngx_http_mcp_backend_t  *b;
    ngx_http_mcp_reqctx_t   *rctx;

    b = leg->backend;

    if (leg->op->sids != NULL) {
        /* a session of the op's own: what was lost is forgotten */
        leg->op->sids[b->index] = *sid;
        return NGX_OK;
    }

    if (leg->op->stateless) {
        if (sid->len > sizeof(b->sid)) {
            return NGX_ERROR;
        }

        ngx_memcpy(b->sid, sid->data, sid->len);
        b->sid_len = sid->len;
        b->opened = (sid->len || b->sessionless);
        return NGX_OK;
    }

    rctx = ngx_http_mcp_call_client(leg->op->call);

    if (ngx_http_mcp_session_backend_set(
            ngx_http_mcp_call_conf(leg->op->call)->zone, &rctx->session_id,
            b->index, sid)
        == NGX_ERROR)
    {
        return NGX_ERROR;
    }

    return NGX_OK;
}


/* a new client session's ids at its backends, once the session exists */

ngx_int_t
ngx_http_mcp_aggregate_keep_sessions(ngx_http_mcp_aggregate_op_t *op)
{
    ngx_uint_t                     i;
    ngx_http_mcp_aggregate_leg_t  *leg;

    op->opening = 0;

    for (i = 0; i < op->conf->backends->nelts; i++) {
        leg = &op->legs[i];

        if (!leg->asked || leg->failed || leg->sid.len == 0) {
            continue;
        }

        if (ngx_http_mcp_aggregate_sid(leg, &leg->sid) != NGX_OK) {
            return NGX_ERROR;
        }
    }

    return NGX_OK;
}


/*
 * The reply: a JSON-RPC response as application/json, or the response
 * among the events of a text/event-stream (a list's, or a session's
 * opening: a routed request's are relayed as they come, see
 * ngx_http_mcp_aggregate_relay.c).
 */

static cJSON *
ngx_http_mcp_aggregate_parse(ngx_http_mcp_fetch_state_t *st)
{
    u_char  *p, *last, *ev, *data;
    cJSON   *reply;
    size_t   len;

    if (st->len == 0) {
        return NULL;
    }

    if (st->type.len != sizeof("text/event-stream") - 1
        || ngx_strncmp(st->type.data, "text/event-stream", st->type.len)
           != 0)
    {
        return ngx_http_mcp_aggregate_response(ngx_http_mcp_call_pool(st->call),
                                                st->body, st->len);
    }

    /* an event's data lines, joined: never longer than the body */
    data = ngx_pnalloc(ngx_http_mcp_call_pool(st->call), st->len);
    if (data == NULL) {
        return NULL;
    }

    last = st->body + st->len;
    p = ngx_http_mcp_sse_bom(st->body, last);

    while (p < last) {
        ev = p;
        p = ngx_http_mcp_sse_event_end(p, last);

        if (p == NULL) {
            /* the last event, without its blank line */
            p = last;
        }

        len = ngx_http_mcp_sse_data(ev, p, data);

        if (len == 0) {
            continue;
        }

        reply = ngx_http_mcp_aggregate_response(
                    ngx_http_mcp_call_pool(st->call), data, len);

        if (reply != NULL) {
            return reply;
        }
    }

    return NULL;
}


static void
ngx_http_mcp_aggregate_fail(ngx_http_mcp_aggregate_leg_t *leg,
    const char *failure)
{
    ngx_http_mcp_backend_t  *b;

    b = leg->backend;

    if (leg->st != NULL) {
        ngx_http_mcp_fetch_close(leg->st);
        leg->st = NULL;
    }

    leg->failed = 1;
    leg->failure = failure;

    ngx_http_mcp_metrics_backend_failure();

    if (ngx_http_mcp_session_backend_health(
            ngx_http_mcp_call_conf(leg->op->call)->zone, &b->uri, 0)
        == NGX_OK)
    {
        ngx_log_error(NGX_LOG_WARN, ngx_http_mcp_call_get_log(leg->op->call),
                      0, "mcp: backend \"%V\" (%V) failed: %s; it is left "
                      "out until it answers again", &b->name, &b->uri,
                      failure);
    }

    if (leg->op->stateless) {
        /* its session may be gone with it */
        b->opened = 0;
        b->sid_len = 0;
    }

    ngx_http_mcp_aggregate_end(leg);
}


/*
 * A leg that ends without an answer for a reason of ours (the client
 * went, no memory): the backend is not to blame.
 */

static void
ngx_http_mcp_aggregate_lost(ngx_http_mcp_aggregate_leg_t *leg,
    const char *failure)
{
    if (leg->st != NULL) {
        ngx_http_mcp_fetch_close(leg->st);
        leg->st = NULL;
    }

    leg->failed = 1;
    leg->failure = failure;

    ngx_http_mcp_aggregate_end(leg);
}


static void
ngx_http_mcp_aggregate_end(ngx_http_mcp_aggregate_leg_t *leg)
{
    ngx_http_mcp_backend_t       *b;
    ngx_http_mcp_aggregate_op_t  *op;

    op = leg->op;
    b = leg->backend;

    if (leg->done) {
        return;
    }

    leg->done = 1;

    if (!leg->failed && (leg->reply != NULL || leg->method == NULL)
        && ngx_http_mcp_session_backend_health(
               ngx_http_mcp_call_conf(op->call)->zone, &b->uri, 1)
           == NGX_OK)
    {
        ngx_log_error(NGX_LOG_NOTICE, ngx_http_mcp_call_get_log(op->call), 0,
                      "mcp: backend \"%V\" answers again", &b->name);
    }

    if (--op->pending || op->ended) {
        return;
    }

    op->ended = 1;

    if (op->timer.timer_set) {
        ngx_del_timer(&op->timer);
    }

    /* the last thing: it may end the call, and the op with it */
    op->done(op);
}


static void
ngx_http_mcp_aggregate_timeout(ngx_event_t *ev)
{
    ngx_http_mcp_aggregate_op_t *op = ev->data;

    ngx_uint_t                     i, n;
    const char                    *failure;
    ngx_http_mcp_aggregate_leg_t  *leg;

    n = op->conf->backends->nelts;

    failure = op->capped ? "no answer within mcp_backend_max_time"
                         : "no answer within mcp_backend_timeout";

    /* one more, so that the op ends once, after the loop */
    op->pending++;

    for (i = 0; i < n; i++) {
        leg = &op->legs[i];

        if (!leg->asked || leg->done) {
            continue;
        }

        if (leg->step == NGX_HTTP_MCP_LEG_REQUEST && leg->routed) {
            /*
             * a tool that runs long, a read or a get of the client's
             * choosing: the backend itself may be fine (it stays in the
             * other clients' lists), and is told that the gateway gave
             * up on the request
             */
            ngx_http_mcp_aggregate_give_up(leg);
            ngx_http_mcp_aggregate_lost(leg, failure);
            continue;
        }

        ngx_http_mcp_aggregate_fail(leg, failure);
    }

    if (--op->pending == 0 && !op->ended) {
        op->ended = 1;
        op->done(op);
    }
}


/* the call ended or was cancelled: what the op holds goes */

static void
ngx_http_mcp_aggregate_cleanup(void *data)
{
    ngx_http_mcp_aggregate_op_t *op = data;

    ngx_uint_t  i;

    if (op->timer.timer_set) {
        ngx_del_timer(&op->timer);
    }

    for (i = 0; i < op->conf->backends->nelts; i++) {
        cJSON_Delete(op->legs[i].reply);
        cJSON_Delete(op->legs[i].params);
        op->legs[i].reply = NULL;
        op->legs[i].params = NULL;
    }
}


/*
 * The client's params as a backend gets them: without what belongs to
 * the client's exchange with the gateway, a 2026-07-28 request's
 * io.modelcontextprotocol/ _meta (the backend speaks 2025-11-25 in a
 * session; a request sent as the client's revision gets it back,
 * ngx_http_mcp_aggregate_direct_params()) and a task (the gateway
 * offers none).
 */

cJSON *
ngx_http_mcp_aggregate_params(ngx_http_mcp_call_t *call)
{
    cJSON  *params, *meta, *item, *next;

    params = cJSON_Duplicate(ngx_http_mcp_call_params(call), 1);
    if (params == NULL) {
        return NULL;
    }

    cJSON_DeleteItemFromObjectCaseSensitive(params, "task");

    meta = cJSON_GetObjectItemCaseSensitive(params, "_meta");

    for (item = meta ? meta->child : NULL; item; item = next) {
        next = item->next;

        if (item->string != NULL
            && ngx_strncmp(item->string, "io.modelcontextprotocol/",
                           sizeof("io.modelcontextprotocol/") - 1)
               == 0)
        {
            cJSON_Delete(cJSON_DetachItemViaPointer(meta, item));
        }
    }

    if (meta != NULL && meta->child == NULL) {
        cJSON_DeleteItemFromObjectCaseSensitive(params, "_meta");
    }

    return params;
}


/* a backend's JSON-RPC response as the client's */

void
ngx_http_mcp_aggregate_relay(ngx_http_mcp_call_t *call, cJSON *reply)
{
    cJSON  *result, *error, *code, *message, *data;

    result = cJSON_GetObjectItemCaseSensitive(reply, "result");

    if (result != NULL
        && ngx_http_mcp_aggregate_input_required(call, reply, result)
           == NGX_OK)
    {
        return;
    }

    if (result != NULL) {
        ngx_http_mcp_call_result(call,
                                 cJSON_DetachItemViaPointer(reply, result));
        return;
    }

    error = cJSON_GetObjectItemCaseSensitive(reply, "error");
    code = cJSON_GetObjectItemCaseSensitive(error, "code");
    message = cJSON_GetObjectItemCaseSensitive(error, "message");
    data = cJSON_GetObjectItemCaseSensitive(error, "data");

    if (data != NULL) {
        data = cJSON_DetachItemViaPointer(error, data);

        /* the backend's log's: the gateway adds its own */
        cJSON_DeleteItemFromObjectCaseSensitive(data, "correlationId");
    }

    ngx_http_mcp_call_error_data(call, code->valueint,
                                 cJSON_IsString(message)
                                 ? message->valuestring : "Backend error",
                                 data);
}


/*
 * A backend that did not answer: a tool's call is a tool error that
 * names it (the model sees it and may try another way), a prompt an
 * error; so is a call whose stream broke off (an event not JSON-RPC or
 * too big, the end before the response), for the tool may have run.
 */

void
ngx_http_mcp_aggregate_unavailable(ngx_http_mcp_aggregate_op_t *op,
    ngx_http_mcp_aggregate_leg_t *leg)
{
    u_char     *p, text[512];
    ngx_str_t  *method;

    p = ngx_snprintf(text, sizeof(text) - 1, "Backend \"%V\" is "
                     "unavailable: %s", &leg->backend->name,
                     leg->failure ? leg->failure : "no answer");
    *p = '\0';

    method = ngx_http_mcp_call_method(op->call);

    if (!leg->broken
        && method->len == sizeof("tools/call") - 1
        && ngx_strncmp(method->data, "tools/call", method->len) == 0)
    {
        /* NULL: call_result() answers with an internal error */
        ngx_http_mcp_call_result(op->call,
                        ngx_http_mcp_text_result((const char *) text, 1));
        return;
    }

    /* -32000, not -32603: the gateway is fine, an [info] line is enough */
    ngx_http_mcp_call_error(op->call, NGX_HTTP_MCP_SERVER_ERROR,
                            (const char *) text);
}


/* what a stateless client's request goes to a backend as: its own */

static ngx_uint_t
ngx_http_mcp_aggregate_stateless_method(u_char *p, size_t len)
{
    return (len == sizeof("tools/call") - 1
            && ngx_strncmp(p, "tools/call", len) == 0)
           || (len == sizeof("prompts/get") - 1
               && ngx_strncmp(p, "prompts/get", len) == 0)
           || (len == sizeof("resources/read") - 1
               && ngx_strncmp(p, "resources/read", len) == 0);
}


/*
 * A stateless retry: its requestState is the gateway's, sealed for this
 * location, method and caller (ngx_http_mcp_call_open_state()), and
 * holds the backend's with what it was made for; one made for another
 * name or backend is refused here, so that no round reaches a backend
 * that did not start it.  NGX_OK, or NGX_DECLINED once the call ended.
 */

static ngx_int_t
ngx_http_mcp_aggregate_open_round(ngx_http_mcp_aggregate_op_t *op)
{
    cJSON                   *params, *state, *name, *backend, *what;
    ngx_int_t                rc;
    ngx_str_t               *m;
    ngx_uint_t               i, n;
    ngx_http_mcp_backend_t  *b;

    m = ngx_http_mcp_call_method(op->call);

    if (!ngx_http_mcp_aggregate_stateless_method(m->data, m->len)) {
        return NGX_OK;
    }

    rc = ngx_http_mcp_call_open_state(op->call);

    if (rc == NGX_DECLINED) {
        return NGX_DECLINED;
    }

    if (rc != NGX_OK) {
        ngx_http_mcp_call_error(op->call, NGX_HTTP_MCP_INTERNAL_ERROR,
                                "Internal error");
        return NGX_DECLINED;
    }

    state = ngx_http_mcp_call_state(op->call);

    if (state == NULL) {
        return NGX_OK;
    }

    params = ngx_http_mcp_call_params(op->call);
    what = cJSON_GetObjectItemCaseSensitive(params, "name");

    if (what == NULL) {
        what = cJSON_GetObjectItemCaseSensitive(params, "uri");
    }

    name = cJSON_GetObjectItemCaseSensitive(state, "n");
    backend = cJSON_GetObjectItemCaseSensitive(state, "b");

    if (cJSON_IsString(what) && cJSON_IsString(name)
        && cJSON_IsString(backend)
        && ngx_strcmp(what->valuestring, name->valuestring) == 0)
    {
        n = op->conf->backends->nelts;
        b = op->conf->backends->elts;

        for (i = 0; i < n; i++) {
            if (op->legs[i].asked
                && b[i].name.len == ngx_strlen(backend->valuestring)
                && ngx_strncmp(b[i].name.data, backend->valuestring,
                               b[i].name.len)
                   == 0)
            {
                return NGX_OK;
            }
        }
    }

    ngx_http_mcp_call_error(op->call, NGX_HTTP_MCP_INVALID_PARAMS,
                            "Invalid params: requestState is not valid");

    return NGX_DECLINED;
}


/*
 * A stateless request's reply other than 200: a JSON-RPC error of the
 * revision to it (a header that differs from the body, a capability the
 * client did not declare: HTTP 400) is the backend's answer; -32022, or
 * a JSON-RPC error to no request (a 2025 server's "no session"), says
 * that it does not speak the revision, and the request goes again in a
 * session, as to a 2025 server, and so do the worker's next ones there.
 * Anything else (a page, a 413) is no such sign, and the client's
 * headers or body may have caused it: NGX_DECLINED, the request fails.
 */

static ngx_int_t
ngx_http_mcp_aggregate_refused(ngx_http_mcp_aggregate_leg_t *leg,
    ngx_http_mcp_fetch_state_t *st)
{
    cJSON       *reply, *code;
    ngx_uint_t   ours, unsupported;

    reply = ngx_http_mcp_aggregate_parse(st);

    code = cJSON_GetObjectItemCaseSensitive(
               cJSON_GetObjectItemCaseSensitive(reply, "error"), "code");

    ours = (reply != NULL && ngx_http_mcp_aggregate_ours(leg, reply));
    unsupported = (cJSON_IsNumber(code)
                   && code->valueint == NGX_HTTP_MCP_UNSUPPORTED_VERSION);

    if (ours && cJSON_IsNumber(code) && !unsupported) {
        leg->reply = reply;
        ngx_http_mcp_aggregate_end(leg);
        return NGX_OK;
    }

    if (reply == NULL || leg->backend->stateless == NGX_HTTP_MCP_AGGREGATE_SESSIONS
        || (ours && !unsupported)) {
        cJSON_Delete(reply);
        return NGX_DECLINED;
    }

    cJSON_Delete(reply);

    ngx_log_debug1(NGX_LOG_DEBUG_HTTP, ngx_http_mcp_call_get_log(
                   leg->op->call), 0,
                   "mcp backend \"%V\": no 2026-07-28, in a session",
                   &leg->backend->name);

    /* this worker's: another worker learns it on its own first request */
    leg->backend->stateless = NGX_HTTP_MCP_AGGREGATE_SESSIONS;

    ngx_http_mcp_aggregate_start(leg);

    return NGX_OK;
}


/*
 * A backend's input_required result to a stateless request: the client
 * is asked what it declared it can answer (-32021 if nothing), and the
 * backend's requestState, opaque to the gateway, goes back sealed in
 * the gateway's with the backend and the name it was made for.
 * NGX_DECLINED: not such a result.
 */

static ngx_int_t
ngx_http_mcp_aggregate_input_required(ngx_http_mcp_call_t *call,
    cJSON *reply, cJSON *result)
{
    char                          *name;
    cJSON                         *type, *requests, *state, *inner, *what;
    ngx_uint_t                     i;
    ngx_http_mcp_backend_t        *b;
    ngx_http_mcp_aggregate_op_t   *op;

    type = cJSON_GetObjectItemCaseSensitive(result, "resultType");

    if (!cJSON_IsString(type)
        || ngx_strcmp(type->valuestring, "input_required") != 0)
    {
        return NGX_DECLINED;
    }

    op = ngx_http_mcp_call_data(call);
    b = NULL;

    for (i = 0; op != NULL && i < op->conf->backends->nelts; i++) {
        if (op->legs[i].reply == reply && op->legs[i].direct) {
            b = op->legs[i].backend;
            break;
        }
    }

    if (b == NULL) {
        /* only a request the gateway sent as the client's revision */
        return NGX_DECLINED;
    }

    what = cJSON_GetObjectItemCaseSensitive(ngx_http_mcp_call_params(call),
                                            "name");
    if (what == NULL) {
        what = cJSON_GetObjectItemCaseSensitive(
                   ngx_http_mcp_call_params(call), "uri");
    }

    name = ngx_pnalloc(ngx_http_mcp_call_pool(call), b->name.len + 1);
    requests = cJSON_DetachItemFromObjectCaseSensitive(result,
                                                       "inputRequests");
    if (requests == NULL) {
        requests = cJSON_CreateObject();
    }

    inner = cJSON_GetObjectItemCaseSensitive(result, "requestState");
    state = cJSON_CreateObject();

    if (name == NULL || requests == NULL || state == NULL
        || !cJSON_IsObject(requests) || !cJSON_IsString(what))
    {
        goto failed;
    }

    (void) ngx_cpystrn((u_char *) name, b->name.data, b->name.len + 1);

    if (cJSON_AddStringToObject(state, "b", name) == NULL
        || cJSON_AddStringToObject(state, "n", what->valuestring) == NULL
        || (cJSON_IsString(inner)
            && cJSON_AddStringToObject(state, "s", inner->valuestring)
               == NULL))
    {
        goto failed;
    }

    ngx_http_mcp_call_input_required(call, requests, state);

    return NGX_OK;

failed:

    cJSON_Delete(requests);
    cJSON_Delete(state);

    ngx_http_mcp_call_error(call, NGX_HTTP_MCP_INTERNAL_ERROR,
                            "Internal error");

    return NGX_OK;
}
