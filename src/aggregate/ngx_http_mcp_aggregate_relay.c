
/*
 * What crosses the gateway over several MCP servers (mcp_backend) while
 * a routed request runs: a backend that answers tools/call, prompts/get
 * or resources/read with an SSE stream has its events read as they
 * come (the fetch's stream mode), each one strictly parsed and bounded
 * by mcp_backend_max_size:
 *
 *   - notifications (progress, log messages, list_changed, a resource
 *     updated) go to the client on the call's own stream; progress with
 *     the client's token, which the backend got unchanged (a backend
 *     session belongs to one client session, so tokens cannot clash);
 *   - the backend's requests (sampling, elicitation, roots) go to the
 *     client as the call's own server requests, through
 *     ngx_http_mcp_call_request(): their ids are the module's, unique in
 *     the client's session, with a wait record in the session store, so
 *     that the client's answer reaches this call from whichever worker
 *     it arrives at; the answer goes back to the backend, in its
 *     session, with the backend's own id;
 *   - the response ends the leg, as a JSON reply does;
 *   - an event's id and retry: are kept: a stream that ends before its
 *     response is resumed from there (ngx_http_mcp_aggregate_leg.c).
 *
 * A client's notifications/cancelled ends the call, and the call's end
 * before its backend's response sends the backend notifications/cancelled
 * with the id the gateway gave the request there; so does the client's
 * leaving (ngx_http_mcp_aggregate_end.c).
 *
 * Why no id of our own that carries the route: the module already has
 * server requests whose answers find their call on any worker, with the
 * ids the client sees checked against the session's wait records; an id
 * the client forges or garbles matches none and is dropped as for any
 * other server request.
 */


#include "ngx_http_mcp_aggregate.h"
#include "ngx_http_mcp_json.h"
#include "ngx_http_mcp_jsonrpc.h"
#include "ngx_http_mcp_sse_read.h"
#include "ngx_http_mcp_call.h"
#include "ngx_http_mcp_store.h"
#include "ngx_http_mcp_core.h"
#include "ngx_http_mcp_trace.h"
#include "ngx_http_mcp_subrequest.h"
#include "ngx_http_mcp_param.h"

static ngx_table_elt_t *ngx_http_mcp_aggregate_direct_headers(
    ngx_http_mcp_aggregate_leg_t *leg, ngx_http_request_t *r, ngx_uint_t *n);
static ngx_int_t ngx_http_mcp_aggregate_name_header(ngx_pool_t *pool,
    ngx_table_elt_t *h, cJSON *params);
static cJSON *ngx_http_mcp_aggregate_client_meta(ngx_http_mcp_call_t *call,
    const char *key);


typedef struct {
    ngx_http_mcp_aggregate_leg_t  *leg;
    u_char                        *id;          /* the backend's, as JSON */
} ngx_http_mcp_aggregate_ask_t;


static ngx_int_t ngx_http_mcp_aggregate_post(ngx_http_mcp_aggregate_leg_t *leg,
    u_char *text, size_t len);
static void ngx_http_mcp_aggregate_restart(ngx_http_mcp_aggregate_op_t *op);
static void ngx_http_mcp_aggregate_event_id(u_char *p, u_char *last,
    ngx_str_t *id, ngx_msec_t *retry);
static ngx_int_t ngx_http_mcp_aggregate_message(void *data, u_char *p,
    size_t len);
static ngx_uint_t ngx_http_mcp_aggregate_is_response(cJSON *json);
static void ngx_http_mcp_aggregate_notification(
    ngx_http_mcp_aggregate_leg_t *leg, const char *method, cJSON *json);
static void ngx_http_mcp_aggregate_request(ngx_http_mcp_aggregate_leg_t *leg,
    const char *method, cJSON *json);
static void ngx_http_mcp_aggregate_answered(ngx_http_mcp_call_t *call,
    cJSON *result, cJSON *error, void *data);
static void ngx_http_mcp_aggregate_answer_backend(
    ngx_http_mcp_aggregate_leg_t *leg, u_char *id, cJSON *result,
    cJSON *error, ngx_int_t code, const char *message);
static void ngx_http_mcp_aggregate_cancel(void *data);
static ngx_int_t ngx_http_mcp_aggregate_post_to(
    ngx_http_mcp_aggregate_leg_t *leg, ngx_http_request_t *r, u_char *text,
    size_t len, ngx_http_mcp_aggregate_wait_t *wait);


/*
 * An event of a backend's stream: it is alive, and the op's timer starts
 * again, but never past mcp_backend_max_time from the op's start, so
 * that a backend sending progress forever is given up on all the same.
 */

static void
ngx_http_mcp_aggregate_restart(ngx_http_mcp_aggregate_op_t *op)
{
    ngx_msec_t  spent, max;

    spent = ngx_current_msec - op->started;
    max = ngx_max(op->conf->max_time, op->conf->timeout);

    if (spent >= max) {
        return;
    }

    if (max - spent <= op->conf->timeout) {
        op->capped = 1;
    }

    ngx_add_timer(&op->timer, ngx_min(op->conf->timeout, max - spent));
}


/*
 * The complete events in the fetch's buffer, in order; last: the reply
 * ended, and what is left is the last event.  NGX_AGAIN: more is to
 * come; NGX_OK: leg->reply is the response; NGX_ERROR: leg->failure
 * says what was wrong.
 */

ngx_int_t
ngx_http_mcp_aggregate_events(ngx_http_mcp_aggregate_leg_t *leg,
    ngx_uint_t last)
{
    ngx_int_t                         rc;
    ngx_uint_t                        taken;
    ngx_http_mcp_aggregate_op_t      *op;
    ngx_http_mcp_aggregate_resume_t  *rs;

    op = leg->op;

    /* NULL (no memory for it): a stream that ends early fails */
    rs = leg->resume;

    rc = ngx_http_mcp_aggregate_sse(leg->st, last,
                                    ngx_http_mcp_aggregate_message, leg,
                                    rs ? &rs->last : NULL,
                                    rs ? &rs->retry : NULL, &taken);

    if (rc == NGX_DECLINED) {
        leg->failure = "an event of its stream is larger than "
                       "mcp_backend_max_size";
        return NGX_ERROR;
    }

    if (rc == NGX_AGAIN && taken && op->timer.timer_set) {
        ngx_http_mcp_aggregate_restart(op);
    }

    return rc;
}


/*
 * Hands the complete SSE events in a stream fetch's buffer to handler,
 * each one's data lines joined, in order, while it returns NGX_AGAIN;
 * last: the reply ended, and what is left is the last event.  What is
 * taken leaves the buffer, so that the bound (st->max) is an event's,
 * not the stream's.  With id, the last event id seen goes there (a
 * resume's Last-Event-ID; one longer than NGX_HTTP_MCP_AGGREGATE_EVENT_ID
 * or with other than visible ASCII is none); with retry, the last
 * retry: field's delay.  NGX_AGAIN: more is to
 * come; NGX_DECLINED: an event is over the bound; else what the handler
 * returned.
 */

ngx_int_t
ngx_http_mcp_aggregate_sse(ngx_http_mcp_fetch_state_t *st,
    ngx_uint_t last, ngx_http_mcp_aggregate_sse_pt handler, void *data,
    ngx_str_t *id, ngx_msec_t *retry, ngx_uint_t *taken)
{
    u_char     *p, *end, *ev, *eol, *next;
    size_t      len;
    ngx_int_t   rc;

    p = st->body;
    end = st->body + st->len;
    ev = p;
    rc = NGX_AGAIN;
    *taken = 0;

    if (!st->began) {
        /* a stream may begin with a BOM, which SSE drops */
        if (!last && ngx_http_mcp_sse_bom_pending(p, end)) {
            return NGX_AGAIN;
        }

        st->began = 1;

        p = ngx_http_mcp_sse_bom(p, end);
        ev = p;
    }

    while (p < end) {
        eol = ngx_http_mcp_sse_eol(p, end, &next);

        if (eol == NULL) {
            break;
        }

        len = eol - p;
        p = next;

        if (len) {
            continue;
        }

        /* a blank line: the event [ev, p) is complete */

        if ((size_t) (p - ev) > st->max) {
            return NGX_DECLINED;
        }

        if (id != NULL) {
            ngx_http_mcp_aggregate_event_id(ev, p, id, retry);
        }

        len = ngx_http_mcp_sse_data(ev, p, ev);
        rc = len ? handler(data, ev, len) : NGX_AGAIN;

        ev = p;

        if (rc != NGX_AGAIN) {
            break;
        }
    }

    if (rc == NGX_AGAIN && (size_t) (end - ev) > st->max) {
        return NGX_DECLINED;
    }

    if (rc == NGX_AGAIN && last && ev < end) {
        len = ngx_http_mcp_sse_data(ev, end, ev);
        rc = len ? handler(data, ev, len) : NGX_AGAIN;
        ev = end;
    }

    if (rc != NGX_AGAIN) {
        return rc;
    }

    *taken = (ev > st->body);

    len = end - ev;

    if (len && ev > st->body) {
        ngx_memmove(st->body, ev, len);
    }

    st->len = len;

    /* what the fetch held, if anything, comes now */
    ngx_http_mcp_fetch_taken(st);

    return NGX_AGAIN;
}


/*
 * An event's "id:" field, when it has one that fits and is visible; and
 * with retry, its "retry:" field, when it is digits only, as SSE wants
 */

static void
ngx_http_mcp_aggregate_event_id(u_char *p, u_char *last, ngx_str_t *id,
    ngx_msec_t *retry)
{
    size_t      i;
    u_char     *line;
    ngx_int_t   n;
    ngx_str_t   v;
    ngx_uint_t  seen;

    seen = 0;

    while (p < last) {
        line = p;
        p = ngx_http_mcp_sse_field(line, last, "id:", &v);

        if (v.data == NULL) {
            if (retry == NULL) {
                continue;
            }

            (void) ngx_http_mcp_sse_field(line, last, "retry:", &v);

            if (v.data != NULL && v.len) {
                n = ngx_atoi(v.data, v.len);

                if (n != NGX_ERROR) {
                    *retry = (ngx_msec_t) n;
                }
            }

            continue;
        }

        if (seen++) {
            continue;
        }

        for (i = 0; i < v.len; i++) {
            if (v.data[i] <= 0x20 || v.data[i] >= 0x7f) {
                break;
            }
        }

        if (i == v.len && v.len <= NGX_HTTP_MCP_AGGREGATE_EVENT_ID) {
            ngx_memcpy(id->data, v.data, v.len);
            id->len = v.len;
        }

        if (retry == NULL) {
            return;
        }
    }
}


static ngx_int_t
ngx_http_mcp_aggregate_message(void *data, u_char *p, size_t len)
{
    ngx_http_mcp_aggregate_leg_t *leg = data;

    cJSON                *json, *method;
    ngx_int_t             rc;
    ngx_pool_t           *pool;
    const char           *failure;
    ngx_http_mcp_call_t  *call;

    call = leg->op->call;

    /*
     * The scan's scratch (escaped names, long numbers) goes with the
     * event: the call's pool would grow with every event of a stream
     * that may not end.  The tree is malloc()ed.
     */
    pool = ngx_create_pool(1024, ngx_http_mcp_call_get_log(call));
    if (pool == NULL) {
        leg->failure = "no memory for an event of its stream";
        return NGX_ERROR;
    }

    rc = ngx_http_mcp_json_parse(pool, p, len, NULL, &json, &failure);

    ngx_destroy_pool(pool);

    if (rc != NGX_OK) {
        leg->failure = "an event of its stream is not JSON, or names a "
                       "member twice";
        return NGX_ERROR;
    }

    method = cJSON_GetObjectItemCaseSensitive(json, "method");

    if (cJSON_IsString(method)) {
        if (cJSON_HasObjectItem(json, "id")) {
            ngx_http_mcp_aggregate_request(leg, method->valuestring, json);

        } else {
            ngx_http_mcp_aggregate_notification(leg, method->valuestring,
                                                json);
        }

        cJSON_Delete(json);
        return NGX_AGAIN;
    }

    if (!ngx_http_mcp_aggregate_is_response(json)) {
        cJSON_Delete(json);
        leg->failure = "an event of its stream is no JSON-RPC message";
        return NGX_ERROR;
    }

    /* the response to our request, and to no other */

    if (!ngx_http_mcp_aggregate_ours(leg, json)) {
        cJSON_Delete(json);
        leg->failure = "its stream has a response to another request";
        return NGX_ERROR;
    }

    leg->reply = json;

    return NGX_OK;
}


/*
 * A JSON-RPC response (a result or an error object), or NULL.  A
 * backend is untrusted: its reply passes the strict scan, as a POST body
 * does, so that a duplicate member or trailing bytes cannot mean one
 * thing here and another to whoever reads the text after us.
 */

cJSON *
ngx_http_mcp_aggregate_response(ngx_pool_t *pool, u_char *p, size_t len)
{
    cJSON       *reply;
    const char  *failure;

    if (ngx_http_mcp_json_parse(pool, p, len, NULL, &reply, &failure)
        != NGX_OK)
    {
        return NULL;
    }

    if (!ngx_http_mcp_aggregate_is_response(reply)) {
        cJSON_Delete(reply);
        return NULL;
    }

    return reply;
}


/* a response to the leg's request: its id is the number the gateway sent */

ngx_uint_t
ngx_http_mcp_aggregate_ours(ngx_http_mcp_aggregate_leg_t *leg, cJSON *json)
{
    cJSON  *id;

    id = cJSON_GetObjectItemCaseSensitive(json, "id");

    /* leg->id is below 2^53: the double holds it exactly */
    return cJSON_IsNumber(id) && id->valuedouble == (double) leg->id;
}


static ngx_uint_t
ngx_http_mcp_aggregate_is_response(cJSON *json)
{
    cJSON  *error;

    if (!cJSON_IsObject(json) || !cJSON_HasObjectItem(json, "id")) {
        return 0;
    }

    error = cJSON_GetObjectItemCaseSensitive(json, "error");

    return cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(json, "result"))
           || (cJSON_IsObject(error)
               && cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(error,
                                                                   "code")));
}


/*
 * A backend's notification, to the client on the call's stream: the
 * ones a client of the gateway knows what to do with.  Progress carries
 * the client's token (the backend's, should it have made one up, is
 * not the client's business), log messages the client's level.
 */

static void
ngx_http_mcp_aggregate_notification(ngx_http_mcp_aggregate_leg_t *leg,
    const char *method, cJSON *json)
{
    cJSON                  *params, *meta, *token, *level;
    ngx_uint_t              i;
    ngx_http_mcp_call_t    *call;
    ngx_http_mcp_reqctx_t  *rctx;

    static const char  *relayed[] = {
        "notifications/progress",
        "notifications/message",
        "notifications/tools/list_changed",
        "notifications/prompts/list_changed",
        "notifications/resources/list_changed",
        "notifications/resources/updated",
        "notifications/elicitation/complete",
        NULL
    };

    call = leg->op->call;

    for (i = 0; relayed[i]; i++) {
        if (ngx_strcmp(method, relayed[i]) == 0) {
            break;
        }
    }

    params = cJSON_GetObjectItemCaseSensitive(json, "params");

    if (relayed[i] == NULL || (params != NULL && !cJSON_IsObject(params))) {
        ngx_log_debug2(NGX_LOG_DEBUG_HTTP, ngx_http_mcp_call_get_log(call), 0,
                       "mcp backend \"%V\": %s not relayed",
                       &leg->backend->name, method);
        return;
    }

    if (i == 0) {
        meta = cJSON_GetObjectItemCaseSensitive(ngx_http_mcp_call_params(call),
                                                "_meta");
        token = cJSON_GetObjectItemCaseSensitive(meta, "progressToken");

        if (token == NULL || params == NULL) {
            return;
        }

        token = cJSON_Duplicate(token, 1);

        if (token == NULL
            || !cJSON_ReplaceItemInObjectCaseSensitive(params,
                                                       "progressToken", token))
        {
            cJSON_Delete(token);
            return;
        }

    } else if (i == 1) {
        rctx = ngx_http_mcp_call_client(call);
        level = cJSON_GetObjectItemCaseSensitive(params, "level");

        if (!cJSON_IsString(level)) {
            return;
        }

        i = ngx_http_mcp_log_level_parse(level->valuestring);

        if (i > NGX_HTTP_MCP_LOG_EMERGENCY || i < rctx->log_level) {
            return;
        }
    }

    if (params != NULL) {
        params = cJSON_DetachItemViaPointer(json, params);
    }

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, ngx_http_mcp_call_get_log(call), 0,
                   "mcp backend \"%V\": %s relayed", &leg->backend->name,
                   method);

    /* a notification lost is no reason to end the call */
    (void) ngx_http_mcp_call_notify(call, method, params);
}


/*
 * A backend's request to the client: asked as the call's own, when the
 * client can be asked it; else the backend hears why not at once.
 */

static void
ngx_http_mcp_aggregate_request(ngx_http_mcp_aggregate_leg_t *leg,
    const char *method, cJSON *json)
{
    u_char                        *id;
    size_t                         len;
    cJSON                         *params, *empty;
    ngx_uint_t                     can;
    const char                    *cap, *mode;
    ngx_http_mcp_call_t           *call;
    ngx_http_mcp_reqctx_t         *rctx;
    ngx_http_mcp_aggregate_ask_t  *ask;

    call = leg->op->call;
    rctx = ngx_http_mcp_call_client(call);

    if (leg->answers >= NGX_HTTP_MCP_AGGREGATE_ANSWERS) {
        /* none would be sent: nothing kept for it in the call's pool */
        ngx_log_debug2(NGX_LOG_DEBUG_HTTP, ngx_http_mcp_call_get_log(call), 0,
                       "mcp backend \"%V\": %s not answered, no more in "
                       "this call", &leg->backend->name, method);
        return;
    }

    id = ngx_http_mcp_json_print(ngx_http_mcp_call_pool(call),
                                 cJSON_GetObjectItemCaseSensitive(json, "id"),
                                 &len);
    ask = ngx_pcalloc(ngx_http_mcp_call_pool(call),
                      sizeof(ngx_http_mcp_aggregate_ask_t));

    if (id == NULL || ask == NULL
        || (ask->id = ngx_pnalloc(ngx_http_mcp_call_pool(call), len + 1))
           == NULL)
    {
        return;
    }

    *ngx_cpymem(ask->id, id, len) = '\0';
    ask->leg = leg;

    if (ngx_strcmp(method, "ping") == 0) {
        empty = cJSON_CreateObject();
        ngx_http_mcp_aggregate_answer_backend(leg, ask->id, empty, NULL, 0,
                                              NULL);
        cJSON_Delete(empty);
        return;
    }

    can = ngx_http_mcp_client_can(rctx, method,
                                  ngx_http_mcp_json_get(json, "params"),
                                  &cap, &mode);

    if (cap == NULL) {
        ngx_http_mcp_aggregate_answer_backend(leg, ask->id, NULL, NULL,
                                              NGX_HTTP_MCP_METHOD_NOT_FOUND,
                                              "Method not found");
        return;
    }

    if (rctx->version >= NGX_HTTP_MCP_VSTATELESS) {
        /* no stream a request could travel on (multi-round: not here) */
        ngx_http_mcp_aggregate_answer_backend(leg, ask->id, NULL, NULL,
                                              NGX_HTTP_MCP_INVALID_REQUEST,
                                              "The client behind the gateway "
                                              "is stateless and cannot be "
                                              "asked");
        return;
    }

    if (!can) {
        ngx_http_mcp_aggregate_answer_backend(leg, ask->id, NULL, NULL,
                                              NGX_HTTP_MCP_INVALID_REQUEST,
                                              "The client behind the gateway "
                                              "did not declare the "
                                              "capability");
        return;
    }

    if (leg->asking >= NGX_HTTP_MCP_AGGREGATE_ASKS) {
        /* each is a wait record in the zone and a question to a person */
        ngx_http_mcp_aggregate_answer_backend(leg, ask->id, NULL, NULL,
                                              NGX_HTTP_MCP_INTERNAL_ERROR,
                                              "Too many requests to the "
                                              "client at once");
        return;
    }

    params = cJSON_GetObjectItemCaseSensitive(json, "params");
    params = (params != NULL) ? cJSON_DetachItemViaPointer(json, params)
                              : NULL;

    /* a task's request (on tasks/result) names it as the client knows it */
    if (ngx_http_mcp_aggregate_prefixed(ngx_http_mcp_call_pool(call),
            leg->backend,
            cJSON_GetObjectItemCaseSensitive(
                cJSON_GetObjectItemCaseSensitive(params, "_meta"),
                "io.modelcontextprotocol/related-task"),
            "taskId")
        != NGX_OK)
    {
        cJSON_Delete(params);
        ngx_http_mcp_aggregate_answer_backend(leg, ask->id, NULL, NULL,
                                              NGX_HTTP_MCP_INTERNAL_ERROR,
                                              "The gateway could not ask "
                                              "the client");
        return;
    }

    ngx_log_debug3(NGX_LOG_DEBUG_HTTP, ngx_http_mcp_call_get_log(call), 0,
                   "mcp backend \"%V\": request %s %s relayed",
                   &leg->backend->name, method, ask->id);

    leg->asking++;

    if (ngx_http_mcp_call_request(call, method, params,
                                  ngx_http_mcp_aggregate_answered, ask)
        != NGX_OK)
    {
        leg->asking--;

        ngx_http_mcp_aggregate_answer_backend(leg, ask->id, NULL, NULL,
                                              NGX_HTTP_MCP_INTERNAL_ERROR,
                                              "The gateway could not ask "
                                              "the client");
    }
}


/* the client's answer (or the time it had for one running out) */

static void
ngx_http_mcp_aggregate_answered(ngx_http_mcp_call_t *call, cJSON *result,
    cJSON *error, void *data)
{
    ngx_http_mcp_aggregate_ask_t *ask = data;

    if (ask->leg->asking) {
        ask->leg->asking--;
    }

    ngx_http_mcp_aggregate_answer_backend(ask->leg, ask->id, result, error,
                                          NGX_HTTP_MCP_INTERNAL_ERROR,
                                          "The client gave no answer");
}


/*
 * A response to the backend's request id, in its session: result, or
 * error, or else code and message.  Nobody waits for what it says.
 */

static void
ngx_http_mcp_aggregate_answer_backend(ngx_http_mcp_aggregate_leg_t *leg,
    u_char *id, cJSON *result, cJSON *error, ngx_int_t code,
    const char *message)
{
    u_char  *text;
    size_t   len;
    cJSON   *msg, *item, *rid, *e;

    if (leg->answers++ >= NGX_HTTP_MCP_AGGREGATE_ANSWERS) {
        /*
         * each is a subrequest that lives as long as the client's POST:
         * a backend that asks without end (pings) waits for its own
         * timeouts instead
         */
        ngx_log_debug1(NGX_LOG_DEBUG_HTTP,
                       ngx_http_mcp_call_get_log(leg->op->call), 0,
                       "mcp backend \"%V\": no more answers in this call",
                       &leg->backend->name);
        return;
    }

    msg = cJSON_CreateObject();
    rid = cJSON_CreateRaw((const char *) id);

    if (msg == NULL || rid == NULL
        || cJSON_AddStringToObject(msg, "jsonrpc", "2.0") == NULL
        || !cJSON_AddItemToObject(msg, "id", rid))
    {
        cJSON_Delete(rid);
        goto failed;
    }

    if (result != NULL || error != NULL) {
        item = cJSON_Duplicate(result ? result : error, 1);

        if (item == NULL
            || !cJSON_AddItemToObject(msg, result ? "result" : "error", item))
        {
            cJSON_Delete(item);
            goto failed;
        }

    } else {
        e = cJSON_AddObjectToObject(msg, "error");

        if (e == NULL
            || cJSON_AddNumberToObject(e, "code", code) == NULL
            || cJSON_AddStringToObject(e, "message", message) == NULL)
        {
            goto failed;
        }
    }

    text = ngx_http_mcp_json_print(ngx_http_mcp_call_pool(leg->op->call), msg,
                                   &len);
    cJSON_Delete(msg);

    if (text == NULL || ngx_http_mcp_aggregate_post(leg, text, len) != NGX_OK)
    {
        ngx_log_error(NGX_LOG_INFO, ngx_http_mcp_call_get_log(leg->op->call),
                      0, "mcp: backend \"%V\": the answer to its request "
                      "was lost", &leg->backend->name);
    }

    return;

failed:

    cJSON_Delete(msg);
}


/*
 * A routed request is under way: should the call end before the
 * backend's response (a client's cancellation, its session gone), the
 * backend is told.  The cleanup comes after the fetch's, so it runs
 * before it, while the fetch's link still says whether the POST is
 * there to carry the notification: the call has let go of it already.
 */

ngx_int_t
ngx_http_mcp_aggregate_watch(ngx_http_mcp_aggregate_leg_t *leg)
{
    ngx_pool_cleanup_t  *cln;

    cln = ngx_pool_cleanup_add(ngx_http_mcp_call_pool(leg->op->call), 0);
    if (cln == NULL) {
        return NGX_ERROR;
    }

    cln->handler = ngx_http_mcp_aggregate_cancel;
    cln->data = leg;

    return NGX_OK;
}


static void
ngx_http_mcp_aggregate_cancel(void *data)
{
    ngx_http_mcp_aggregate_leg_t *leg = data;

    ngx_http_mcp_fetch_state_t  *st;

    st = leg->st;

    if (leg->done || st == NULL || st->link == NULL || st->link->sr == NULL) {
        return;
    }

    (void) ngx_http_mcp_aggregate_cancelled(leg, st->link->sr->parent, NULL);
}


/* the gateway gives up on a request the backend still runs (a timeout) */

void
ngx_http_mcp_aggregate_give_up(ngx_http_mcp_aggregate_leg_t *leg)
{
    ngx_http_request_t  *r;

    r = ngx_http_mcp_call_http_request(leg->op->call);

    if (r != NULL) {
        (void) ngx_http_mcp_aggregate_cancelled(leg, r, NULL);
    }
}


/*
 * The backend is told that the gateway gave up on the leg's request,
 * through r; with wait, as a fetch whose end is waited for (the client
 * went away, see ngx_http_mcp_aggregate_end.c).  NGX_DECLINED: told
 * already, or nothing to tell.
 */

ngx_int_t
ngx_http_mcp_aggregate_cancelled(ngx_http_mcp_aggregate_leg_t *leg,
    ngx_http_request_t *r, ngx_http_mcp_aggregate_wait_t *wait)
{
    u_char  text[sizeof("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/"
                        "cancelled\",\"params\":{\"requestId\":,\"reason\":"
                        "\"cancelled by the gateway's client\"}}")
                 + NGX_INT64_LEN];
    u_char  *p;

    if (leg->cancelled || leg->id == 0) {
        return NGX_DECLINED;
    }

    if (leg->direct) {
        /*
         * 2026-07-28: the end of the request's connection is its
         * cancellation, which the subrequest's end brings; a
         * notification would name a request of no session
         */
        return NGX_DECLINED;
    }

    leg->cancelled = 1;

    p = ngx_sprintf(text, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/"
                    "cancelled\",\"params\":{\"requestId\":%uL,\"reason\":"
                    "\"cancelled by the gateway's client\"}}", leg->id);

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP,
                   ngx_http_mcp_call_get_log(leg->op->call), 0,
                   "mcp backend \"%V\": cancelling request %uL",
                   &leg->backend->name, leg->id);

    return ngx_http_mcp_aggregate_post_to(leg, r, text, p - text, wait);
}


/*
 * The capabilities the gateway declares to a backend: the client's
 * sampling, elicitation and roots, which it relays; a stateless
 * client's requests share their sessions, and it can be asked nothing.
 */

ngx_int_t
ngx_http_mcp_aggregate_client_caps(ngx_http_mcp_aggregate_op_t *op,
    cJSON *caps)
{
    cJSON                  *theirs, *item;
    ngx_uint_t              i;
    ngx_http_mcp_reqctx_t  *rctx;

    static const char  *relayed[] = { "sampling", "elicitation", "roots",
                                      NULL };

    if (op->stateless) {
        return NGX_OK;
    }

    if (op->opening) {
        /* initialize: the session is not there yet, its params are */
        theirs = cJSON_GetObjectItemCaseSensitive(
                     ngx_http_mcp_call_params(op->call), "capabilities");

        for (i = 0; relayed[i]; i++) {
            item = cJSON_GetObjectItemCaseSensitive(theirs, relayed[i]);

            if (!cJSON_IsObject(item)) {
                continue;
            }

            item = cJSON_Duplicate(item, 1);

            if (item == NULL
                || !cJSON_AddItemToObject(caps, relayed[i], item))
            {
                cJSON_Delete(item);
                return NGX_ERROR;
            }
        }

        return NGX_OK;
    }

    rctx = ngx_http_mcp_call_client(op->call);

    /* elicitation with the modes the client declared, no other */
    if ((rctx->sampling && cJSON_AddObjectToObject(caps, "sampling") == NULL)
        || (rctx->elicitation_form
            && ngx_http_mcp_client_required(caps, "elicitation", "form")
               != NGX_OK)
        || (rctx->elicitation_url
            && ngx_http_mcp_client_required(caps, "elicitation", "url")
               != NGX_OK)
        || (rctx->roots && cJSON_AddObjectToObject(caps, "roots") == NULL))
    {
        return NGX_ERROR;
    }

    return NGX_OK;
}


/*
 * Whether the version the backend speaks is known, for the header of a
 * request after its initialize: this worker's, or, where this worker has
 * not spoken with it yet, the one another worker learnt (the zone keeps
 * it: a client's DELETE or GET may come to any worker).
 */

ngx_uint_t
ngx_http_mcp_aggregate_version(ngx_shm_zone_t *zone,
    ngx_http_mcp_backend_t *b)
{
    if (b->version_len == 0 && zone != NULL) {
        (void) ngx_http_mcp_session_backend_version(zone, &b->uri,
                                                    b->version,
                                                    &b->version_len, 0);
    }

    return (b->version_len != 0);
}


/*
 * The headers of a message to the backend's location, in its session;
 * init: initialize, which has no session and no version yet.
 */

ngx_int_t
ngx_http_mcp_aggregate_headers(ngx_http_mcp_aggregate_leg_t *leg,
    ngx_http_request_t *r, ngx_uint_t init, ngx_http_mcp_fetch_t *f)
{
    ngx_uint_t               n;
    ngx_table_elt_t         *h;
    ngx_http_mcp_backend_t  *b;

    b = leg->backend;

    if (leg->direct) {
        h = ngx_http_mcp_aggregate_direct_headers(leg, r, &n);
        if (h == NULL) {
            return NGX_ERROR;
        }

        goto done;
    }

    h = ngx_pcalloc(r->pool, 3 * sizeof(ngx_table_elt_t));
    if (h == NULL) {
        return NGX_ERROR;
    }

    n = 0;

    if (ngx_http_mcp_aggregate_header(r->pool, &h[n++], "Accept", "accept",
            (u_char *) "application/json, text/event-stream",
            sizeof("application/json, text/event-stream") - 1)
        != NGX_OK)
    {
        return NGX_ERROR;
    }

    if (leg->sid.len) {
        if (ngx_http_mcp_aggregate_header(r->pool, &h[n++], "Mcp-Session-Id",
                                          "mcp-session-id", leg->sid.data,
                                          leg->sid.len)
            != NGX_OK)
        {
            return NGX_ERROR;
        }
    }

    if (!init
        && ngx_http_mcp_aggregate_version(
               ngx_http_mcp_call_conf(leg->op->call)->zone, b))
    {
        if (ngx_http_mcp_aggregate_header(r->pool, &h[n++],
                                          "MCP-Protocol-Version",
                                          "mcp-protocol-version",
                                          b->version, b->version_len)
            != NGX_OK)
        {
            return NGX_ERROR;
        }
    }

done:

    f->uri = b->uri;
    f->method = NGX_HTTP_POST;
    ngx_str_set(&f->method_name, "POST");
    f->headers = h;
    f->nheaders = n;
    f->trace = ngx_http_mcp_call_trace(leg->op->call);
    f->max = leg->op->conf->max_size;

    return NGX_OK;
}


ngx_int_t
ngx_http_mcp_aggregate_header(ngx_pool_t *pool, ngx_table_elt_t *h,
    char *key, char *lowcase, u_char *value, size_t len)
{
    h->hash = 1;
    h->key.data = (u_char *) key;
    h->key.len = ngx_strlen(key);
    h->lowcase_key = (u_char *) lowcase;

    h->value.data = ngx_pnalloc(pool, len);
    if (h->value.data == NULL) {
        return NGX_ERROR;
    }

    ngx_memcpy(h->value.data, value, len);
    h->value.len = len;

    return NGX_OK;
}


/* a message (a notification, an answer) to the backend, in its session */

static ngx_int_t
ngx_http_mcp_aggregate_post(ngx_http_mcp_aggregate_leg_t *leg, u_char *text,
    size_t len)
{
    ngx_http_request_t  *r;

    r = ngx_http_mcp_call_http_request(leg->op->call);

    if (r == NULL) {
        /* the client's POST went, and the subrequests with it */
        return NGX_DECLINED;
    }

    return ngx_http_mcp_aggregate_post_to(leg, r, text, len, NULL);
}


static ngx_int_t
ngx_http_mcp_aggregate_post_to(ngx_http_mcp_aggregate_leg_t *leg,
    ngx_http_request_t *r, u_char *text, size_t len,
    ngx_http_mcp_aggregate_wait_t *wait)
{
    ngx_http_mcp_fetch_t  f;

    ngx_memzero(&f, sizeof(ngx_http_mcp_fetch_t));

    f.body.len = len;
    f.body.data = ngx_pnalloc(r->pool, len);

    if (f.body.data == NULL
        || ngx_http_mcp_aggregate_headers(leg, r, 0, &f) != NGX_OK)
    {
        return NGX_ERROR;
    }

    ngx_memcpy(f.body.data, text, len);

    if (wait == NULL) {
        return ngx_http_mcp_fetch_send(r, &f);
    }

    f.handler = wait->handler;
    f.data = wait->data;

    wait->st = ngx_http_mcp_fetch(r, wait->pool,
                                                  r->connection->log, &f);

    return (wait->st != NULL) ? NGX_OK : NGX_ERROR;
}


/* obj[key], a string, with the backend's prefix */

ngx_int_t
ngx_http_mcp_aggregate_prefixed(ngx_pool_t *pool, ngx_http_mcp_backend_t *b,
    cJSON *obj, const char *key)
{
    u_char  *p, *full;
    cJSON   *item;
    size_t   len;

    item = cJSON_GetObjectItemCaseSensitive(obj, key);

    if (!cJSON_IsString(item)) {
        return NGX_OK;
    }

    len = ngx_strlen(item->valuestring);

    full = ngx_pnalloc(pool, b->prefix.len + len + 1);
    if (full == NULL) {
        return NGX_ERROR;
    }

    p = ngx_cpymem(full, b->prefix.data, b->prefix.len);
    ngx_memcpy(p, item->valuestring, len + 1);

    return cJSON_ReplaceItemInObjectCaseSensitive(obj, key,
               cJSON_CreateString((char *) full))
           ? NGX_OK : NGX_ERROR;
}


/*
 * A stateless client's request to a backend, as that client would send
 * it (2026-07-28): its version, Mcp-Method, Mcp-Name with the backend's
 * name, and the client's Mcp-Param-* as they came (the arguments reach
 * the backend unchanged, so the backend holds them to its schema, as it
 * does the client's directly); no session.
 */

static ngx_table_elt_t *
ngx_http_mcp_aggregate_direct_headers(ngx_http_mcp_aggregate_leg_t *leg,
    ngx_http_request_t *r, ngx_uint_t *n)
{
    u_char               *key, *low;
    cJSON                *version;
    size_t                len;
    ngx_uint_t            i, k, nparams;
    ngx_keyval_t         *kv;
    ngx_table_elt_t      *h;
    ngx_http_mcp_call_t  *call;

    call = leg->op->call;
    nparams = (call->param_headers != NULL) ? call->param_headers->nelts : 0;

    h = ngx_pcalloc(r->pool, (4 + nparams) * sizeof(ngx_table_elt_t));
    if (h == NULL) {
        return NULL;
    }

    /* the edge checked that it is the header's */
    version = ngx_http_mcp_aggregate_client_meta(call,
                  "io.modelcontextprotocol/protocolVersion");

    if (!cJSON_IsString(version)) {
        return NULL;
    }

    if (ngx_http_mcp_aggregate_header(r->pool, &h[0], "Accept", "accept",
            (u_char *) "application/json, text/event-stream",
            sizeof("application/json, text/event-stream") - 1)
        != NGX_OK
        || ngx_http_mcp_aggregate_header(r->pool, &h[1],
               "MCP-Protocol-Version", "mcp-protocol-version",
               (u_char *) version->valuestring,
               ngx_strlen(version->valuestring))
           != NGX_OK
        || ngx_http_mcp_aggregate_header(r->pool, &h[2], "Mcp-Method",
               "mcp-method", (u_char *) leg->method,
               ngx_strlen(leg->method))
           != NGX_OK
        || ngx_http_mcp_aggregate_name_header(r->pool, &h[3], leg->params)
           != NGX_OK)
    {
        return NULL;
    }

    kv = nparams ? call->param_headers->elts : NULL;

    for (i = 0; i < nparams; i++) {
        len = sizeof("Mcp-Param-") - 1 + kv[i].key.len;

        key = ngx_pnalloc(r->pool, 2 * (len + 1));
        if (key == NULL) {
            return NULL;
        }

        low = key + len + 1;

        *ngx_cpymem(ngx_cpymem(key, "Mcp-Param-", sizeof("Mcp-Param-") - 1),
                    kv[i].key.data, kv[i].key.len) = '\0';

        for (k = 0; k <= len; k++) {
            low[k] = ngx_tolower(key[k]);
        }

        if (ngx_http_mcp_aggregate_header(r->pool, &h[4 + i], (char *) key,
                                          (char *) low, kv[i].value.data,
                                          kv[i].value.len)
            != NGX_OK)
        {
            return NULL;
        }
    }

    *n = 4 + nparams;

    return h;
}


/*
 * Mcp-Name: the backend's name (or URI), in Base64 when a header could
 * not carry it as it is
 */

static ngx_int_t
ngx_http_mcp_aggregate_name_header(ngx_pool_t *pool, ngx_table_elt_t *h,
    cJSON *params)
{
    cJSON      *item;
    ngx_str_t   plain, out;

    item = cJSON_GetObjectItemCaseSensitive(params, "name");

    if (!cJSON_IsString(item)) {
        item = cJSON_GetObjectItemCaseSensitive(params, "uri");
    }

    if (!cJSON_IsString(item)) {
        return NGX_ERROR;
    }

    plain.data = (u_char *) item->valuestring;
    plain.len = ngx_strlen(item->valuestring);

    if (ngx_http_mcp_param_encode(pool, &plain, &out) != NGX_OK) {
        return NGX_ERROR;
    }

    return ngx_http_mcp_aggregate_header(pool, h, "Mcp-Name", "mcp-name",
                                         out.data, out.len);
}


/*
 * The params of a stateless client's request to a backend: its own
 * io.modelcontextprotocol/ _meta (who it is, what it declared), and the
 * backend's requestState in the place of the gateway's, for the backend
 * that made it only (ngx_http_mcp_aggregate_open_round() checked it)
 */

ngx_int_t
ngx_http_mcp_aggregate_direct_params(ngx_http_mcp_aggregate_leg_t *leg,
    cJSON *p)
{
    cJSON                *cmeta, *meta, *item, *copy, *state, *b, *inner;
    ngx_http_mcp_call_t  *call;

    call = leg->op->call;

    cmeta = cJSON_GetObjectItemCaseSensitive(ngx_http_mcp_call_params(call),
                                             "_meta");

    for (item = cmeta ? cmeta->child : NULL; item; item = item->next) {
        if (item->string == NULL
            || ngx_strncmp(item->string, "io.modelcontextprotocol/",
                           sizeof("io.modelcontextprotocol/") - 1)
               != 0)
        {
            continue;
        }

        meta = cJSON_GetObjectItemCaseSensitive(p, "_meta");

        if (meta == NULL) {
            meta = cJSON_AddObjectToObject(p, "_meta");
        }

        copy = cJSON_Duplicate(item, 1);

        if (!cJSON_IsObject(meta) || copy == NULL) {
            cJSON_Delete(copy);
            return NGX_ERROR;
        }

        cJSON_DeleteItemFromObjectCaseSensitive(meta, item->string);
        cJSON_AddItemToObject(meta, item->string, copy);
    }

    cJSON_DeleteItemFromObjectCaseSensitive(p, "requestState");

    state = ngx_http_mcp_call_state(call);
    b = cJSON_GetObjectItemCaseSensitive(state, "b");
    inner = cJSON_GetObjectItemCaseSensitive(state, "s");

    if (!cJSON_IsString(b) || !cJSON_IsString(inner)
        || leg->backend->name.len != ngx_strlen(b->valuestring)
        || ngx_strncmp(leg->backend->name.data, b->valuestring,
                       leg->backend->name.len)
           != 0)
    {
        return NGX_OK;
    }

    return cJSON_AddStringToObject(p, "requestState", inner->valuestring)
           ? NGX_OK : NGX_ERROR;
}


static cJSON *
ngx_http_mcp_aggregate_client_meta(ngx_http_mcp_call_t *call,
    const char *key)
{
    return cJSON_GetObjectItemCaseSensitive(
               cJSON_GetObjectItemCaseSensitive(
                   ngx_http_mcp_call_params(call), "_meta"),
               key);
}
