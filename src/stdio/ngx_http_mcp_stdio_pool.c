
/*
 * The sessionless pool (ngx_http_mcp_stdio_pool.c): a location's POSTs
 * without a session, served by initialized children of the worker, one
 * request to a child at a time, its id mapped to the child's own and
 * restored in the reply; and the replies that sessions share.  See
 * docs/stdio.md.
 */


#include "ngx_http_mcp_stdio.h"
#include "ngx_http_mcp_json.h"
#include "ngx_http_mcp_jsonrpc.h"
#include "ngx_http_mcp_core.h"
#include "ngx_http_mcp_http.h"


static ngx_http_mcp_stdio_child_t *ngx_http_mcp_stdio_idle(
    ngx_http_mcp_stdio_pool_t *pool, ngx_uint_t *starting);
static void ngx_http_mcp_stdio_start(ngx_http_mcp_stdio_pool_t *pool);
static void ngx_http_mcp_stdio_bind(ngx_http_mcp_stdio_child_t *child,
    ngx_http_mcp_stdio_req_t *req);
static void ngx_http_mcp_stdio_finish(ngx_http_mcp_stdio_req_t *req,
    ngx_uint_t status, u_char *body, size_t len);
static void ngx_http_mcp_stdio_progress(ngx_http_mcp_stdio_req_t *req,
    cJSON *msg);
static void ngx_http_mcp_stdio_child_timeout(ngx_event_t *ev);
static void ngx_http_mcp_stdio_idle_ping(ngx_event_t *ev);


/* what a child is asked and told as the pool starts it */
static const char  ngx_http_mcp_stdio_initialize[] =
    "{\"protocolVersion\":\"2025-11-25\",\"capabilities\":{},"
    "\"clientInfo\":{\"name\":\"nginx\",\"version\":\"" NGINX_VERSION "\"}}";


/* what ties a request to its pool and child, untied */

void
ngx_http_mcp_stdio_detach(ngx_http_mcp_stdio_req_t *req)
{
    if (req->timer.timer_set) {
        ngx_del_timer(&req->timer);
    }

    if (req->waiting) {
        ngx_queue_remove(&req->queue);
        req->waiting = 0;
    }

    if (req->child) {
        req->child->req = NULL;
        req->child = NULL;
    }

    if (req->inflight) {
        ngx_queue_remove(&req->queue);
        req->inflight = 0;
    }

    if (req->sess != NULL && req->sess->get == req) {
        req->sess->get = NULL;
    }

    if (req->remote) {
        /* of a session another worker owns: its stream is given up */
        ngx_queue_remove(&req->queue);
        req->remote = 0;

        ngx_http_mcp_session_stream_release(req->pool->store, &req->sid,
                                            req->stream, req->stoken,
                                            req->polled);
    }

    req->sess = NULL;
}


/*
 * The waiting requests to idle children; children started while there
 * are more waiting than starting, up to the bounds, unless a crash loop
 * holds the pool back.
 */

void
ngx_http_mcp_stdio_route(ngx_http_mcp_stdio_pool_t *pool)
{
    ngx_uint_t                   starting, waiting, blocked;
    ngx_queue_t                 *q;
    ngx_http_mcp_stdio_req_t    *req;
    ngx_http_mcp_stdio_child_t  *child;

    for ( ;; ) {
        if (ngx_queue_empty(&pool->waiting)) {
            return;
        }

        child = ngx_http_mcp_stdio_idle(pool, &starting);

        if (child == NULL) {
            break;
        }

        q = ngx_queue_head(&pool->waiting);
        req = ngx_queue_data(q, ngx_http_mcp_stdio_req_t, queue);

        ngx_http_mcp_stdio_detach(req);
        ngx_http_mcp_stdio_bind(child, req);
    }

    waiting = 0;

    for (q = ngx_queue_head(&pool->waiting);
         q != ngx_queue_sentinel(&pool->waiting);
         q = ngx_queue_next(q))
    {
        waiting++;
    }

    blocked = 0;

    while (starting < waiting && pool->live < pool->size) {

        if ((ngx_msec_int_t) (pool->next_spawn - ngx_current_msec) > 0) {
            if (!pool->spawn_ev.timer_set) {
                ngx_add_timer(&pool->spawn_ev,
                              pool->next_spawn - ngx_current_msec);
            }

            return;
        }

        if (pool->total && ngx_http_mcp_stdio_reserve(pool) != NGX_OK) {
            blocked = 1;
            break;
        }

        ngx_http_mcp_stdio_start(pool);
        starting++;
    }

    if (blocked && pool->live == 0) {
        /* nothing in this worker will become free: over the bound */
        while (!ngx_queue_empty(&pool->waiting)) {
            q = ngx_queue_head(&pool->waiting);
            req = ngx_queue_data(q, ngx_http_mcp_stdio_req_t, queue);

            ngx_http_mcp_stdio_fail(req, NGX_HTTP_MCP_INTERNAL_ERROR,
                                    "No stdio server can be started: "
                                    "the bound of children is reached");
        }
    }
}


static ngx_http_mcp_stdio_child_t *
ngx_http_mcp_stdio_idle(ngx_http_mcp_stdio_pool_t *pool,
    ngx_uint_t *starting)
{
    ngx_queue_t                 *q;
    ngx_http_mcp_stdio_child_t  *child;

    *starting = 0;

    for (q = ngx_queue_head(&pool->children);
         q != ngx_queue_sentinel(&pool->children);
         q = ngx_queue_next(q))
    {
        child = ngx_queue_data(q, ngx_http_mcp_stdio_child_t, queue);

        if (child->state == NGX_HTTP_MCP_STDIO_READY) {
            return child;
        }

        if (child->state == NGX_HTTP_MCP_STDIO_INIT) {
            (*starting)++;
        }
    }

    return NULL;
}


static void
ngx_http_mcp_stdio_start(ngx_http_mcp_stdio_pool_t *pool)
{
    cJSON                       *msg;
    ngx_http_mcp_stdio_child_t  *child;

    child = ngx_http_mcp_stdio_spawn(pool);

    if (child == NULL) {
        ngx_http_mcp_stdio_backoff(pool);
        return;
    }

    child->timer.handler = ngx_http_mcp_stdio_child_timeout;
    ngx_add_timer(&child->timer, pool->timeout);

    child->want_id = ++child->next_id;

    msg = cJSON_CreateObject();

    if (msg == NULL
        || cJSON_AddStringToObject(msg, "jsonrpc", "2.0") == NULL
        || cJSON_AddNumberToObject(msg, "id", (double) child->want_id) == NULL
        || cJSON_AddStringToObject(msg, "method", "initialize") == NULL
        || !cJSON_AddItemToObject(msg, "params",
                                  cJSON_Parse(ngx_http_mcp_stdio_initialize))
        || ngx_http_mcp_stdio_send_line(child, msg) != NGX_OK)
    {
        cJSON_Delete(msg);
        ngx_http_mcp_stdio_pool_gone(child, "initialize could not be sent");
        return;
    }

    cJSON_Delete(msg);
}


/* a request to an idle child: sent under the child's own id */

static void
ngx_http_mcp_stdio_bind(ngx_http_mcp_stdio_child_t *child,
    ngx_http_mcp_stdio_req_t *req)
{
    if (ngx_strcmp(req->method, "initialize") == 0
        || ngx_strcmp(req->method, "server/discover") == 0)
    {
        ngx_http_mcp_stdio_local(child, req);
        return;
    }

    child->want_id = ++child->next_id;

    if (ngx_http_mcp_stdio_map_id(req, child->want_id) != NGX_OK) {
        return;
    }

    child->state = NGX_HTTP_MCP_STDIO_BUSY;
    child->req = req;
    req->child = child;

    /* a request outstanding holds a graceful exit until it ends */
    child->timer.handler = ngx_http_mcp_stdio_child_timeout;
    child->timer.cancelable = 0;
    ngx_add_timer(&child->timer, req->pool->timeout);

    if (ngx_http_mcp_stdio_send_line(child, req->root) != NGX_OK) {
        ngx_http_mcp_stdio_pool_gone(child, "its stdin failed");
    }
}


/* the child's own id in the request's message; else its caller fails */

ngx_int_t
ngx_http_mcp_stdio_map_id(ngx_http_mcp_stdio_req_t *req, ngx_uint_t n)
{
    cJSON  *id;

    id = cJSON_CreateNumber((double) n);

    if (id == NULL || !cJSON_AddItemToObject(req->root, "id", id)) {
        cJSON_Delete(id);
        ngx_http_mcp_stdio_fail(req, NGX_HTTP_MCP_INTERNAL_ERROR,
                                "Internal error");
        return NGX_ERROR;
    }

    return NGX_OK;
}


/*
 * What the pool answers itself: ping; initialize (a 2025 client, which
 * gets no session: the spec lets a server give none) and server/discover
 * from what the child said to its own initialize.
 */

void
ngx_http_mcp_stdio_local(ngx_http_mcp_stdio_child_t *child,
    ngx_http_mcp_stdio_req_t *req)
{
    cJSON       *reply, *result, *params, *version, *caps, *info, *meta;
    cJSON       *versions;
    const char  *v;

    reply = cJSON_CreateObject();
    result = (child && child->init) ? cJSON_Duplicate(child->init, 1)
                                    : cJSON_CreateObject();

    if (reply == NULL || result == NULL
        || cJSON_AddStringToObject(reply, "jsonrpc", "2.0") == NULL
        || !cJSON_AddItemToObject(reply, "result", result))
    {
        cJSON_Delete(result);
        goto failed;
    }

    if (child == NULL) {
        /* ping */

    } else if (ngx_strcmp(req->method, "initialize") == 0) {
        params = ngx_http_mcp_json_get(req->root, "params");
        version = params ? ngx_http_mcp_json_get(params, "protocolVersion")
                         : NULL;
        v = cJSON_IsString(version) ? version->valuestring : "";

        if (ngx_strcmp(v, "2025-11-25") == 0
            || ngx_strcmp(v, "2025-06-18") == 0
            || ngx_strcmp(v, "2025-03-26") == 0)
        {
            cJSON_DeleteItemFromObject(result, "protocolVersion");

            if (cJSON_AddStringToObject(result, "protocolVersion", v)
                == NULL)
            {
                goto failed;
            }
        }

    } else {
        /* server/discover: the 2026-07-28 shape, serverInfo in _meta */
        caps = cJSON_DetachItemFromObject(result, "capabilities");
        info = cJSON_DetachItemFromObject(result, "serverInfo");

        /* the initialize result goes whole; the new one takes its place */
        cJSON_DeleteItemFromObject(reply, "result");

        result = cJSON_CreateObject();
        meta = cJSON_CreateObject();
        /* the versions served here, as a -32022 lists them */
        versions = ngx_http_mcp_versions_json();

        if (result == NULL || meta == NULL || versions == NULL
            || !cJSON_AddItemToObject(reply, "result", result))
        {
            cJSON_Delete(result);
            cJSON_Delete(meta);
            cJSON_Delete(versions);
            cJSON_Delete(caps);
            cJSON_Delete(info);
            goto failed;
        }

        /* each added at once: the tree owns it, freed with the reply */
        if (!cJSON_AddItemToObject(result, "supportedVersions", versions)) {
            cJSON_Delete(versions);
            cJSON_Delete(meta);
            cJSON_Delete(caps);
            cJSON_Delete(info);
            goto failed;
        }

        if (!cJSON_AddItemToObject(result, "_meta", meta)) {
            cJSON_Delete(meta);
            cJSON_Delete(caps);
            cJSON_Delete(info);
            goto failed;
        }

        if (caps == NULL) {
            caps = cJSON_CreateObject();
        }

        if (caps == NULL
            || !cJSON_AddItemToObject(result, "capabilities", caps))
        {
            cJSON_Delete(caps);
            cJSON_Delete(info);
            goto failed;
        }

        if (info != NULL
            && !cJSON_AddItemToObject(meta, NGX_HTTP_MCP_SERVER_INFO_META,
                                      info))
        {
            cJSON_Delete(info);
            goto failed;
        }
    }

    ngx_http_mcp_stdio_respond(req, reply);
    cJSON_Delete(reply);
    return;

failed:

    cJSON_Delete(reply);
    ngx_http_mcp_stdio_fail(req, NGX_HTTP_MCP_INTERNAL_ERROR,
                            "Internal error");
}


ngx_int_t
ngx_http_mcp_stdio_send_line(ngx_http_mcp_stdio_child_t *child, cJSON *msg)
{
    char       *line;
    ngx_int_t   rc;

    line = cJSON_PrintUnformatted(msg);
    if (line == NULL) {
        return NGX_ERROR;
    }

    /* cJSON escapes every control byte: the line holds no newline */
    rc = ngx_http_mcp_stdio_write(child, (u_char *) line, ngx_strlen(line));

    cJSON_free(line);

    return rc;
}


/* the reply under the client's id: the request ends */

void
ngx_http_mcp_stdio_respond(ngx_http_mcp_stdio_req_t *req, cJSON *reply)
{
    u_char              *body;
    size_t               len;
    cJSON               *id, *result;
    ngx_http_request_t  *r;

    r = req->r;
    ngx_http_mcp_stdio_detach(req);

    id = cJSON_Duplicate(req->id, 1);
    cJSON_DeleteItemFromObject(reply, "id");

    if (id == NULL || !cJSON_AddItemToObject(reply, "id", id)) {
        cJSON_Delete(id);
        ngx_http_finalize_request(r, NGX_HTTP_INTERNAL_SERVER_ERROR);
        return;
    }

    result = ngx_http_mcp_json_get(reply, "result");

    if (req->stateless && cJSON_IsObject(result)
        && ngx_http_mcp_json_get(result, "resultType") == NULL
        && ngx_http_mcp_json_add_literal(result, "resultType", "complete")
           != NGX_OK)
    {
        ngx_http_finalize_request(r, NGX_HTTP_INTERNAL_SERVER_ERROR);
        return;
    }

    /* what mcp_pass reads of a reply: the policy, guardrails, outcome */
    if (ngx_http_mcp_stdio_steps.reply(r, reply) != NGX_OK) {
        ngx_http_mcp_stdio_fail(req, NGX_HTTP_MCP_INTERNAL_ERROR,
                                "The stdio server's reply was refused");
        return;
    }

    body = ngx_http_mcp_json_print(r->pool, reply, &len);

    if (body == NULL) {
        ngx_http_finalize_request(r, NGX_HTTP_INTERNAL_SERVER_ERROR);
        return;
    }

    /* 2026-07-28 says an unknown method with a 404 as well */
    ngx_http_mcp_stdio_finish(req, req->stateless
                                   ? ngx_http_mcp_stateless_status(reply)
                                   : NGX_HTTP_OK,
                              body, len);
}


/*
 * An error for the request's caller, logged once with its correlation
 * id: at "warn", not the module's "error", since what failed is the
 * stdio server or a bound a client's load reaches (its own line says
 * why), not nginx.
 */

void
ngx_http_mcp_stdio_fail(ngx_http_mcp_stdio_req_t *req, ngx_int_t code,
    const char *message)
{
    u_char              *body;
    size_t               len;
    cJSON               *reply;
    ngx_str_t            rid;
    ngx_http_request_t  *r;

    r = req->r;
    ngx_http_mcp_stdio_detach(req);

    if (ngx_http_mcp_request_id(r, 1, &rid) != NGX_OK) {
        ngx_str_null(&rid);
    }

    reply = ngx_http_mcp_error_reply_at(r->connection->log,
                                        code == NGX_HTTP_MCP_INTERNAL_ERROR
                                        ? NGX_LOG_WARN : NGX_LOG_INFO,
                                        &rid, req->id, code, message, NULL);
    if (reply == NULL) {
        ngx_http_finalize_request(r, NGX_HTTP_INTERNAL_SERVER_ERROR);
        return;
    }

    body = ngx_http_mcp_json_print(r->pool, reply, &len);
    cJSON_Delete(reply);

    if (body == NULL) {
        ngx_http_finalize_request(r, NGX_HTTP_INTERNAL_SERVER_ERROR);
        return;
    }

    ngx_http_mcp_stdio_finish(req, NGX_HTTP_OK, body, len);
}


/* the reply: a JSON body, or the last event of a stream already open */

static void
ngx_http_mcp_stdio_finish(ngx_http_mcp_stdio_req_t *req, ngx_uint_t status,
    u_char *body, size_t len)
{
    ngx_int_t  rc;

    if (req->sse) {
        rc = ngx_http_mcp_stdio_event(req, body, len, 1);

    } else {
        rc = ngx_http_mcp_send(req->r, status, NULL, body, len);
    }

    ngx_http_finalize_request(req->r, rc);
}


/*
 * A child's progress notification for the request's progressToken, as
 * an event of the POST's stream (opened by the first); other
 * notifications, which need not be this request's, are not sent.
 */

static void
ngx_http_mcp_stdio_progress(ngx_http_mcp_stdio_req_t *req, cJSON *msg)
{
    cJSON  *method, *params, *token;

    method = ngx_http_mcp_json_get(msg, "method");
    params = ngx_http_mcp_json_get(msg, "params");
    token = cJSON_IsObject(params)
            ? ngx_http_mcp_json_get(params, "progressToken") : NULL;

    if (!req->accepts_sse || req->token == NULL || token == NULL
        || !cJSON_IsString(method)
        || ngx_strcmp(method->valuestring, "notifications/progress") != 0
        || !cJSON_Compare(token, req->token, 1))
    {
        return;
    }

    (void) ngx_http_mcp_stdio_push(req, msg);
}


/*
 * A child's message as an event of req's stream (opened by the first).
 * Each event is in the request's pool until it ends: so many, no more
 * (NGX_DECLINED past them).
 */

ngx_int_t
ngx_http_mcp_stdio_push(ngx_http_mcp_stdio_req_t *req, cJSON *msg)
{
    u_char  *body;
    size_t   len;

    if (req->events++ >= NGX_HTTP_MCP_STDIO_EVENTS) {
        return NGX_DECLINED;
    }

    body = ngx_http_mcp_json_print(req->r->pool, msg, &len);

    if (body == NULL
        || ngx_http_mcp_stdio_event(req, body, len, 0) == NGX_ERROR)
    {
        ngx_log_error(NGX_LOG_INFO, req->r->connection->log, 0,
                      "mcp_stdio: an event could not be sent");
    }

    return NGX_OK;
}


/*
 * The reply turns into an event stream: its header goes, and, for a
 * stream of the session's log that no Last-Event-ID resumed, a priming
 * event (an id, retry:, no data: SEP-1699), so that its client can
 * resume it from the start.
 */

ngx_int_t
ngx_http_mcp_stdio_sse(ngx_http_mcp_stdio_req_t *req)
{
    ngx_int_t            rc;
    ngx_buf_t           *b;
    ngx_chain_t          out;
    ngx_http_request_t  *r;

    static ngx_str_t  type = ngx_string("text/event-stream");

    r = req->r;

    r->headers_out.status = NGX_HTTP_OK;
    r->headers_out.content_length_n = -1;
    r->headers_out.content_type = type;
    r->headers_out.content_type_len = type.len;

    rc = ngx_http_send_header(r);

    if (rc == NGX_ERROR || rc > NGX_OK) {
        return NGX_ERROR;
    }

    req->sse = 1;

    if (!req->ids || req->resumed) {
        return NGX_OK;
    }

    b = ngx_create_temp_buf(r->pool, sizeof("id: -0\nretry: \ndata: \n\n")
                                     + NGX_INT32_LEN + NGX_TIME_T_LEN);
    if (b == NULL) {
        return NGX_ERROR;
    }

    b->last = ngx_sprintf(b->last, "id: %uD-0\nretry: %M\ndata: \n\n",
                          req->stream, req->pool->retry);
    b->flush = 1;

    out.buf = b;
    out.next = NULL;

    return (ngx_http_output_filter(r, &out) == NGX_ERROR) ? NGX_ERROR
                                                          : NGX_OK;
}


ngx_int_t
ngx_http_mcp_stdio_event(ngx_http_mcp_stdio_req_t *req, u_char *json,
    size_t len, ngx_uint_t last)
{
    ngx_int_t            rc;
    ngx_buf_t           *b;
    ngx_chain_t          out;
    ngx_http_request_t  *r;

    static u_char  head[] = "event: message\ndata: ";

    r = req->r;

    if (!req->sse && ngx_http_mcp_stdio_sse(req) != NGX_OK) {
        return NGX_ERROR;
    }

    b = ngx_create_temp_buf(r->pool, sizeof("id: -\n") + NGX_INT32_LEN
                                     + NGX_INT64_LEN + sizeof(head) - 1
                                     + len + 2);
    if (b == NULL) {
        return NGX_ERROR;
    }

    if (req->ids && req->event) {
        /* the event's own place in the log: Last-Event-ID resumes there */
        b->last = ngx_sprintf(b->last, "id: %uD-%uL\n", req->stream,
                              req->event);
    }

    b->last = ngx_cpymem(b->last, head, sizeof(head) - 1);
    b->last = ngx_cpymem(b->last, json, len);
    *b->last++ = '\n';
    *b->last++ = '\n';

    if (last) {
        b->last_buf = (r == r->main) ? 1 : 0;
        b->last_in_chain = 1;

    } else {
        b->flush = 1;
    }

    out.buf = b;
    out.next = NULL;

    rc = ngx_http_output_filter(r, &out);

    return last ? rc : (rc == NGX_ERROR ? NGX_ERROR : NGX_OK);
}


/*
 * A stream of a session ends, its request with it: with an error event
 * when why is given (the session ended), else as the spec lets a server
 * close a stream (its client opens another, or resumes it)
 */

void
ngx_http_mcp_stdio_close(ngx_http_mcp_stdio_req_t *req, const char *why)
{
    u_char              *body;
    size_t               len;
    cJSON               *reply;
    ngx_int_t            rc;
    ngx_http_request_t  *r;

    r = req->r;
    ngx_http_mcp_stdio_detach(req);

    body = NULL;
    len = 0;

    if (why != NULL) {
        reply = ngx_http_mcp_error_reply_at(r->connection->log, NGX_LOG_INFO,
                                            NULL, NULL,
                                            NGX_HTTP_MCP_INTERNAL_ERROR, why,
                                            NULL);
        if (reply != NULL) {
            body = ngx_http_mcp_json_print(r->pool, reply, &len);
            cJSON_Delete(reply);
        }
    }

    if (body != NULL) {
        rc = ngx_http_mcp_stdio_event(req, body, len, 1);

    } else {
        rc = ngx_http_send_special(r, NGX_HTTP_LAST);
    }

    ngx_http_finalize_request(r, rc);
}


void
ngx_http_mcp_stdio_wait_timeout(ngx_event_t *ev)
{
    ngx_http_mcp_stdio_req_t  *req = ev->data;

    ngx_http_mcp_stdio_fail(req, NGX_HTTP_MCP_REQUEST_TIMEOUT,
                            "Request timed out: no stdio server was free");
}


/* a child that does not answer initialize, a request or a ping in time */

static void
ngx_http_mcp_stdio_child_timeout(ngx_event_t *ev)
{
    ngx_http_mcp_stdio_req_t    *req;
    ngx_http_mcp_stdio_pool_t   *pool;
    ngx_http_mcp_stdio_child_t  *child;

    child = ev->data;
    req = child->req;
    pool = child->pool;

    if (child->state == NGX_HTTP_MCP_STDIO_INIT) {
        /* a server that cannot start is a crash loop too */
        ngx_http_mcp_stdio_pool_gone(child, "it did not answer initialize");
        return;
    }

    if (child->state == NGX_HTTP_MCP_STDIO_PING) {
        ngx_log_error(NGX_LOG_WARN, ngx_cycle->log, 0,
                      "mcp_stdio: pid %P did not answer a ping within %M, "
                      "stopped", child->pid, pool->timeout);
        ngx_http_mcp_stdio_stop(child);
        ngx_http_mcp_stdio_route(pool);
        return;
    }

    ngx_log_error(NGX_LOG_WARN, ngx_cycle->log, 0,
                  "mcp_stdio: pid %P did not answer within %M, stopped",
                  child->pid, pool->timeout);

    if (req != NULL) {
        ngx_http_mcp_stdio_detach(req);
    }

    ngx_http_mcp_stdio_stop(child);

    if (req != NULL) {
        ngx_http_mcp_stdio_fail(req, NGX_HTTP_MCP_REQUEST_TIMEOUT,
                                "Request timed out: the stdio server "
                                "did not answer");
    }

    ngx_http_mcp_stdio_route(pool);
}


void
ngx_http_mcp_stdio_spawn_timer(ngx_event_t *ev)
{
    ngx_http_mcp_stdio_route(ev->data);
}


/*
 * A child free for a request.  Idle, it is pinged every
 * mcp_stdio_timeout and must answer within as long again, so that a
 * hung server is found before a request is sent to it.
 */

void
ngx_http_mcp_stdio_ready(ngx_http_mcp_stdio_child_t *child)
{
    child->state = NGX_HTTP_MCP_STDIO_READY;
    child->want_id = 0;
    child->timer.handler = ngx_http_mcp_stdio_idle_ping;
    child->timer.cancelable = 1;

    ngx_add_timer(&child->timer, child->pool->timeout);
}


static void
ngx_http_mcp_stdio_idle_ping(ngx_event_t *ev)
{
    cJSON                       *ping;
    ngx_http_mcp_stdio_child_t  *child;

    child = ev->data;

    if (child->state != NGX_HTTP_MCP_STDIO_READY) {
        return;
    }

    child->want_id = ++child->next_id;
    child->state = NGX_HTTP_MCP_STDIO_PING;
    child->timer.handler = ngx_http_mcp_stdio_child_timeout;
    ngx_add_timer(&child->timer, child->pool->timeout);

    ping = cJSON_Parse("{\"jsonrpc\":\"2.0\",\"method\":\"ping\"}");

    if (ping == NULL
        || cJSON_AddNumberToObject(ping, "id", (double) child->want_id)
           == NULL
        || ngx_http_mcp_stdio_send_line(child, ping) != NGX_OK)
    {
        cJSON_Delete(ping);
        ngx_http_mcp_stdio_pool_gone(child, "its stdin failed");
        return;
    }

    cJSON_Delete(ping);
}


/* a crash loop: each start waits twice as long, up to 30 s */

void
ngx_http_mcp_stdio_backoff(ngx_http_mcp_stdio_pool_t *pool)
{
    pool->backoff = pool->backoff ? ngx_min(pool->backoff * 2, 30000) : 250;
    pool->next_spawn = ngx_current_msec + pool->backoff;
}


/* a line of a pool child's stdout, a JSON object (freed here) */

void
ngx_http_mcp_stdio_pool_line(ngx_http_mcp_stdio_child_t *child, cJSON *msg)
{
    cJSON                      *method, *id, *result, *reply;
    ngx_http_mcp_stdio_req_t   *req;
    ngx_http_mcp_stdio_pool_t  *pool;

    pool = child->pool;

    method = ngx_http_mcp_json_get(msg, "method");
    id = ngx_http_mcp_json_get(msg, "id");

    if (method != NULL) {
        if (id != NULL) {
            /*
             * A request to the client (roots, sampling, elicitation):
             * a sessionless client cannot be asked, so the child is
             * answered at once rather than left waiting.
             */
            reply = cJSON_Parse("{\"jsonrpc\":\"2.0\",\"error\":{\"code\":"
                                "-32601,\"message\":\"Method not found: "
                                "no client session to ask\"}}");

            if (reply != NULL
                && cJSON_AddItemToObject(reply, "id",
                                         cJSON_Duplicate(id, 1)))
            {
                (void) ngx_http_mcp_stdio_send_line(child, reply);
            }

            cJSON_Delete(reply);

        } else if (child->req != NULL) {
            ngx_http_mcp_stdio_progress(child->req, msg);
        }

        cJSON_Delete(msg);
        return;
    }

    if (!cJSON_IsNumber(id) || child->want_id == 0
        || id->valuedouble != (double) child->want_id)
    {
        /* an answer to a request no longer outstanding */
        cJSON_Delete(msg);
        return;
    }

    child->want_id = 0;
    child->timer.cancelable = 1;

    if (child->timer.timer_set) {
        ngx_del_timer(&child->timer);
    }

    if (child->state == NGX_HTTP_MCP_STDIO_INIT) {
        result = ngx_http_mcp_json_get(msg, "result");

        if (!cJSON_IsObject(result)) {
            cJSON_Delete(msg);
            ngx_http_mcp_stdio_pool_gone(child, "initialize failed");
            return;
        }

        child->init = cJSON_DetachItemViaPointer(msg, result);
        cJSON_Delete(msg);

        ngx_http_mcp_stdio_ready(child);
        pool->backoff = 0;

        msg = cJSON_Parse("{\"jsonrpc\":\"2.0\","
                          "\"method\":\"notifications/initialized\"}");

        if (msg == NULL || ngx_http_mcp_stdio_send_line(child, msg) != NGX_OK)
        {
            cJSON_Delete(msg);
            ngx_http_mcp_stdio_pool_gone(child, "its stdin failed");
            return;
        }

        cJSON_Delete(msg);
        ngx_http_mcp_stdio_route(pool);
        return;
    }

    req = child->req;
    child->req = NULL;
    ngx_http_mcp_stdio_ready(child);

    if (req != NULL) {
        req->child = NULL;
        ngx_http_mcp_stdio_respond(req, msg);
    }

    cJSON_Delete(msg);

    ngx_http_mcp_stdio_route(pool);
}


/* a pool child is gone, or must go */

void
ngx_http_mcp_stdio_pool_gone(ngx_http_mcp_stdio_child_t *child, const char *why)
{
    ngx_http_mcp_stdio_req_t   *req;
    ngx_http_mcp_stdio_pool_t  *pool;

    pool = child->pool;

    if (pool == NULL) {
        return;
    }

    ngx_log_error(NGX_LOG_WARN, ngx_cycle->log, 0,
                  "mcp_stdio: pid %P ended: %s", child->pid, why);

    /* one that dies young is a crash loop: each start waits longer */
    if (child->state == NGX_HTTP_MCP_STDIO_INIT
        || ngx_current_msec - child->started < 5000)
    {
        ngx_http_mcp_stdio_backoff(pool);
    }

    req = child->req;

    if (req != NULL) {
        ngx_http_mcp_stdio_detach(req);
    }

    ngx_http_mcp_stdio_stop(child);

    if (req != NULL) {
        ngx_http_mcp_stdio_fail(req, NGX_HTTP_MCP_INTERNAL_ERROR,
                                "The stdio server exited during the "
                                "request");
    }

    ngx_http_mcp_stdio_route(pool);
}
