
/*
 * Multi-round requests (2026-07-28): instead of sending a stateless
 * client requests it has no stream for, a handler ends its call with an
 * input-required result, and the client retries the same request with
 * the answers (inputResponses) and the state it was given
 * (requestState).
 *
 * The client holds the state so that no worker or node has to: any of
 * them opens it with the shared key (mcp_state_key, else the zone's).
 * The state is attacker-controlled input, so it is sealed with an HMAC
 * that also covers what it was made for (method, name or URI, caller)
 * and an expiry; what does not open is refused before the handler runs.
 *
 * A 2025-11-25 task has a session to ask its client through, and no
 * client that would retry: there the module asks the requests itself
 * (call_request(), through the task) and runs the handler again with
 * the answers once all are in; the state stays in the call, unsealed.
 */


#include "ngx_http_mcp_core.h"
#include "ngx_http_mcp_json.h"
#include "ngx_http_mcp_jsonrpc.h"
#include "ngx_http_mcp_state.h"
#include "ngx_http_mcp_store.h"
#include "ngx_http_mcp_call.h"
#include "ngx_http_mcp_trace.h"


static ngx_int_t ngx_http_mcp_mrtr_bind(ngx_http_mcp_call_t *call,
    ngx_str_t *bind);
static ngx_uint_t ngx_http_mcp_mrtr_declared(cJSON *request,
    ngx_http_mcp_reqctx_t *rctx, const char **cap, const char **mode);
static ngx_int_t ngx_http_mcp_mrtr_invalid(ngx_http_mcp_call_t *call,
    const char *message);
static ngx_int_t ngx_http_mcp_mrtr_answerable(ngx_http_mcp_call_t *call,
    cJSON *requests, cJSON *missing, ngx_uint_t *n);
static void ngx_http_mcp_mrtr_missing(ngx_http_mcp_call_t *call,
    cJSON *missing);
static ngx_int_t ngx_http_mcp_mrtr_result(ngx_http_mcp_call_t *call,
    cJSON *requests, cJSON *state, cJSON **resultp);
static ngx_int_t ngx_http_mcp_mrtr_seal(ngx_http_mcp_call_t *call,
    cJSON *result, cJSON *state);
static void ngx_http_mcp_mrtr_ask(ngx_http_mcp_call_t *call,
    cJSON *requests, cJSON *state);
static void ngx_http_mcp_mrtr_answered(ngx_http_mcp_call_t *call,
    cJSON *result, cJSON *error, void *data);
static void ngx_http_mcp_mrtr_round_cleanup(void *data);


/* a 2025 task's round of requests: the handler runs again after it */
typedef struct {
    cJSON                     *answers;     /* key -> the client's result */
    cJSON                     *state;       /* the handler's, for then */
    ngx_uint_t                 due;         /* answers still missing */
} ngx_http_mcp_mrtr_round_t;

typedef struct {
    ngx_http_mcp_mrtr_round_t  *round;
    char                       *key;
} ngx_http_mcp_mrtr_ask_t;


/*
 * Before the handler of a retry runs: inputResponses must be an object
 * of objects, and requestState must open.  Returns NGX_OK, or
 * NGX_DECLINED when the call was ended with -32602.
 */

ngx_int_t
ngx_http_mcp_call_open_state(ngx_http_mcp_call_t *call)
{
    u_char      key[NGX_HTTP_MCP_STATE_KEY_LEN];
    cJSON      *inputs, *input, *token;
    ngx_int_t   rc;
    ngx_str_t   bind, text, payload;

    inputs = ngx_http_mcp_json_get(call->params, "inputResponses");

    if (inputs != NULL) {
        if (!cJSON_IsObject(inputs)) {
            return ngx_http_mcp_mrtr_invalid(call, "Invalid params: "
                                             "inputResponses must be an "
                                             "object");
        }

        cJSON_ArrayForEach(input, inputs) {
            if (!cJSON_IsObject(input)) {
                return ngx_http_mcp_mrtr_invalid(call, "Invalid params: "
                                                 "each of inputResponses "
                                                 "must be an object");
            }
        }

        call->inputs = inputs;
    }

    token = ngx_http_mcp_json_get(call->params, "requestState");

    if (token == NULL) {
        return NGX_OK;
    }

    if (!cJSON_IsString(token)) {
        return ngx_http_mcp_mrtr_invalid(call, "Invalid params: "
                                         "requestState must be a string");
    }

    if (ngx_http_mcp_mrtr_bind(call, &bind) != NGX_OK) {
        return NGX_ERROR;
    }

    if (ngx_http_mcp_call_state_key(call, key) != NGX_OK) {
        return NGX_ERROR;
    }

    text.data = (u_char *) token->valuestring;
    text.len = ngx_strlen(token->valuestring);

    rc = ngx_http_mcp_state_open(call->pool, key, &bind, &text, ngx_time(),
                                 &payload);

    ngx_explicit_memzero(key, sizeof(key));

    switch (rc) {

    case NGX_OK:
        break;

    case NGX_ABORT:
        return ngx_http_mcp_mrtr_invalid(call, "Invalid params: "
                                         "requestState has expired");

    case NGX_DECLINED:
        /* the refusal's own [info] line says so, with its correlation id */
        return ngx_http_mcp_mrtr_invalid(call, "Invalid params: "
                                         "requestState is not valid");

    default:
        return NGX_ERROR;
    }

    call->state = cJSON_ParseWithLength((char *) payload.data, payload.len);

    if (call->state == NULL) {
        /* we sealed it: only memory can fail here */
        return NGX_ERROR;
    }

    return NGX_OK;
}


void
ngx_http_mcp_call_input_required(ngx_http_mcp_call_t *call, cJSON *requests,
    cJSON *state)
{
    cJSON       *result, *missing;
    ngx_int_t    rc;
    ngx_uint_t   n;

    if (!ngx_http_mcp_call_stateless(call) && call->relay == NULL) {
        /* a session's client is asked with call_request() instead */
        cJSON_Delete(requests);
        cJSON_Delete(state);
        ngx_http_mcp_call_error(call, NGX_HTTP_MCP_INVALID_REQUEST,
                                "Invalid Request: this tool asks for input "
                                "the way of protocol version 2026-07-28");
        return;
    }

    missing = cJSON_CreateObject();

    if (requests == NULL || missing == NULL
        || ngx_http_mcp_mrtr_answerable(call, requests, missing, &n)
           != NGX_OK)
    {
        cJSON_Delete(requests);
        cJSON_Delete(state);
        cJSON_Delete(missing);
        goto failed;
    }

    if (n == 0 && missing->child != NULL) {
        cJSON_Delete(requests);
        cJSON_Delete(state);
        ngx_http_mcp_mrtr_missing(call, missing);
        return;
    }

    cJSON_Delete(missing);

    if (call->relay != NULL) {
        /* a 2025 task's call */
        ngx_http_mcp_mrtr_ask(call, requests, state);
        return;
    }

    rc = ngx_http_mcp_mrtr_result(call, requests, state, &result);

    if (rc == NGX_DECLINED) {
        /* what the client sent made the state too large to hand back */
        ngx_http_mcp_call_error(call, NGX_HTTP_MCP_INVALID_PARAMS,
                                "Invalid params: the request's state "
                                "would be too large");
        return;
    }

    if (rc != NGX_OK) {
        goto failed;
    }

    ngx_log_debug1(NGX_LOG_DEBUG_HTTP, call->log, 0,
                   "mcp call \"%V\" needs input from the client",
                   &call->method);

    ngx_http_mcp_call_result(call, result);

    return;

failed:

    ngx_http_mcp_call_error(call, NGX_HTTP_MCP_INTERNAL_ERROR,
                            "Internal error");
}


/*
 * What the client cannot answer is not asked: such a request is dropped
 * and the capability it needs noted in missing.  *n: the requests left.
 */

static ngx_int_t
ngx_http_mcp_mrtr_answerable(ngx_http_mcp_call_t *call, cJSON *requests,
    cJSON *missing, ngx_uint_t *n)
{
    cJSON       *request, *next;
    const char  *capability, *mode;

    *n = 0;

    for (request = requests->child; request; request = next) {
        next = request->next;

        if (ngx_http_mcp_mrtr_declared(request, call->rctx, &capability,
                                       &mode))
        {
            (*n)++;
            continue;
        }

        if (capability != NULL
            && ngx_http_mcp_client_required(missing, capability, mode)
               != NGX_OK)
        {
            return NGX_ERROR;
        }

        cJSON_Delete(cJSON_DetachItemViaPointer(requests, request));
    }

    return NGX_OK;
}


/* none of the requests could be asked: the call ends with what is missing */

static void
ngx_http_mcp_mrtr_missing(ngx_http_mcp_call_t *call, cJSON *missing)
{
    cJSON  *data;

    data = cJSON_CreateObject();

    if (data == NULL
        || !cJSON_AddItemToObject(data, "requiredCapabilities", missing))
    {
        cJSON_Delete(data);
        cJSON_Delete(missing);
        data = NULL;
    }

    ngx_http_mcp_call_error_data(call, NGX_HTTP_MCP_MISSING_CAPABILITY,
                                 "Missing required client capability",
                                 data);
}


/*
 * The input-required result: the requests left, and the handler's state
 * sealed as requestState.  Takes both.  Returns NGX_DECLINED if the
 * state is too large to seal.
 */

static ngx_int_t
ngx_http_mcp_mrtr_result(ngx_http_mcp_call_t *call, cJSON *requests,
    cJSON *state, cJSON **resultp)
{
    cJSON      *result, *request;
    ngx_int_t   rc;

    /* each a request to the client on the call's behalf: its trace too */
    for (request = requests->child; request; request = request->next) {
        if (cJSON_IsObject(request)
            && ngx_http_mcp_trace_message(&call->trace, request) != NGX_OK)
        {
            cJSON_Delete(requests);
            cJSON_Delete(state);
            return NGX_ERROR;
        }
    }

    result = cJSON_CreateObject();

    if (result == NULL
        || ngx_http_mcp_json_add_literal(result, "resultType",
                                         "input_required")
           != NGX_OK)
    {
        cJSON_Delete(result);
        cJSON_Delete(requests);
        cJSON_Delete(state);
        return NGX_ERROR;
    }

    if (requests->child != NULL) {
        cJSON_AddItemToObject(result, "inputRequests", requests);

    } else {
        cJSON_Delete(requests);
    }

    if (state != NULL) {
        rc = ngx_http_mcp_mrtr_seal(call, result, state);

        if (rc != NGX_OK) {
            cJSON_Delete(result);
            return rc;
        }
    }

    *resultp = result;

    return NGX_OK;
}


/*
 * The handler's state into the result as requestState, sealed for this
 * call until the location's state timeout.  Takes the state.  Returns
 * NGX_DECLINED if it is too large to seal.
 */

static ngx_int_t
ngx_http_mcp_mrtr_seal(ngx_http_mcp_call_t *call, cJSON *result,
    cJSON *state)
{
    char                     *text;
    u_char                    key[NGX_HTTP_MCP_STATE_KEY_LEN];
    ngx_int_t                 rc;
    ngx_str_t                 bind, payload, token;
    ngx_http_mcp_loc_conf_t  *mlcf;

    text = cJSON_PrintUnformatted(state);
    cJSON_Delete(state);

    if (text == NULL || ngx_http_mcp_mrtr_bind(call, &bind) != NGX_OK) {
        cJSON_free(text);
        return NGX_ERROR;
    }

    payload.data = (u_char *) text;
    payload.len = ngx_strlen(text);

    mlcf = ngx_http_mcp_call_conf(call);

    if (ngx_http_mcp_call_state_key(call, key) != NGX_OK) {
        cJSON_free(text);
        return NGX_ERROR;
    }

    rc = ngx_http_mcp_state_seal(call->pool, key, &bind, &payload,
                                 ngx_time() + mlcf->state_timeout / 1000,
                                 &token);

    ngx_explicit_memzero(key, sizeof(key));
    cJSON_free(text);

    if (rc != NGX_OK) {
        return rc;
    }

    text = ngx_pnalloc(call->pool, token.len + 1);
    if (text == NULL) {
        return NGX_ERROR;
    }

    *ngx_cpymem(text, token.data, token.len) = '\0';

    if (cJSON_AddStringToObject(result, "requestState", text) == NULL) {
        return NGX_ERROR;
    }

    return NGX_OK;
}


/* a 2025 task asks the requests that its client can answer */

static void
ngx_http_mcp_mrtr_ask(ngx_http_mcp_call_t *call, cJSON *requests,
    cJSON *state)
{
    size_t                      len;
    cJSON                      *request, *method;
    ngx_pool_cleanup_t         *cln;
    ngx_http_mcp_mrtr_ask_t    *ask;
    ngx_http_mcp_mrtr_round_t  *round;

    round = ngx_pcalloc(call->pool, sizeof(ngx_http_mcp_mrtr_round_t));
    cln = ngx_pool_cleanup_add(call->pool, 0);

    if (round == NULL || cln == NULL) {
        cJSON_Delete(state);
        goto failed;
    }

    round->state = state;

    cln->handler = ngx_http_mcp_mrtr_round_cleanup;
    cln->data = round;

    round->answers = cJSON_CreateObject();

    if (round->answers == NULL || requests->child == NULL) {
        /* nothing to ask would run the handler again and again */
        goto failed;
    }

    cJSON_ArrayForEach(request, requests) {
        round->due++;
    }

    cJSON_ArrayForEach(request, requests) {
        method = ngx_http_mcp_json_get(request, "method");
        ask = ngx_palloc(call->pool, sizeof(ngx_http_mcp_mrtr_ask_t));
        len = ngx_strlen(request->string) + 1;

        if (ask == NULL || !cJSON_IsString(method)
            || (ask->key = ngx_pnalloc(call->pool, len)) == NULL)
        {
            goto failed;
        }

        ngx_memcpy(ask->key, request->string, len);
        ask->round = round;

        if (ngx_http_mcp_call_request(call, method->valuestring,
                cJSON_DetachItemFromObjectCaseSensitive(request, "params"),
                ngx_http_mcp_mrtr_answered, ask)
            != NGX_OK)
        {
            goto failed;
        }
    }

    cJSON_Delete(requests);

    return;

failed:

    cJSON_Delete(requests);

    /* nothing when the call ended already */
    ngx_http_mcp_call_error(call, NGX_HTTP_MCP_INTERNAL_ERROR,
                            "Internal error");
}


static void
ngx_http_mcp_mrtr_answered(ngx_http_mcp_call_t *call, cJSON *result,
    cJSON *error, void *data)
{
    ngx_http_mcp_mrtr_ask_t *ask = data;

    cJSON                      *code, *message;
    ngx_http_mcp_mrtr_round_t  *round;

    round = ask->round;

    if (result == NULL) {
        /* refused, or not answered in time: that ends the call, with
           the client's error (its -32603 is no failure of ours) */
        code = ngx_http_mcp_json_get(error, "code");
        message = ngx_http_mcp_json_get(error, "message");

        ngx_http_mcp_call_error_passed(call,
                                cJSON_IsNumber(code)
                                ? code->valueint : NGX_HTTP_MCP_INTERNAL_ERROR,
                                cJSON_IsString(message)
                                ? message->valuestring : "Internal error",
                                NULL);
        return;
    }

    if (!cJSON_AddItemToObject(round->answers, ask->key,
                               cJSON_Duplicate(result, 1)))
    {
        ngx_http_mcp_call_error(call, NGX_HTTP_MCP_INTERNAL_ERROR,
                                "Internal error");
        return;
    }

    if (--round->due) {
        return;
    }

    /* all are in: the handler's next round, as a client's retry is */
    cJSON_Delete(call->state);
    call->state = round->state;
    round->state = NULL;
    call->inputs = round->answers;

    if (call->entry->handler(call) != NGX_OK) {
        ngx_http_mcp_call_error(call, NGX_HTTP_MCP_INTERNAL_ERROR,
                                "Internal error");
    }
}


static void
ngx_http_mcp_mrtr_round_cleanup(void *data)
{
    ngx_http_mcp_mrtr_round_t  *round = data;

    cJSON_Delete(round->answers);
    cJSON_Delete(round->state);
}


cJSON *
ngx_http_mcp_call_input(ngx_http_mcp_call_t *call, const char *key)
{
    return ngx_http_mcp_json_get(call->inputs, key);
}


cJSON *
ngx_http_mcp_call_state(ngx_http_mcp_call_t *call)
{
    return call->state;
}


/*
 * What a state was made for: "method\nname or URI\nscope\ncaller", the
 * scope the location's (its server's name and its own: another location
 * or server with the same key does not take it), the caller the digest
 * of issuer and subject: "alice" of an API key is not "alice" of a JWT
 * issuer.
 */

static ngx_int_t
ngx_http_mcp_mrtr_bind(ngx_http_mcp_call_t *call, ngx_str_t *bind)
{
    u_char               *p;
    ngx_str_t            *name, *scope, none = ngx_null_string;
    ngx_http_mcp_auth_t  *auth;

    name = (call->entry != NULL) ? &call->entry->name : &none;

    if (call->uri.len) {
        name = &call->uri;
    }

    auth = call->rctx->auth;

    scope = &ngx_http_mcp_call_conf(call)->scope;

    bind->len = call->method.len + 1 + name->len + 1 + scope->len + 1
                + (auth ? NGX_HTTP_MCP_AUTH_BINDING_LEN : 0);

    bind->data = ngx_pnalloc(call->pool, bind->len);
    if (bind->data == NULL) {
        return NGX_ERROR;
    }

    /* an empty name or scope may have no data: memcpy() must not see it */

    p = ngx_cpymem(bind->data, call->method.data, call->method.len);
    *p++ = '\n';

    if (name->len) {
        p = ngx_cpymem(p, name->data, name->len);
    }

    *p++ = '\n';

    if (scope->len) {
        p = ngx_cpymem(p, scope->data, scope->len);
    }

    *p++ = '\n';

    if (auth != NULL) {
        ngx_memcpy(p, auth->binding, NGX_HTTP_MCP_AUTH_BINDING_LEN);
    }

    return NGX_OK;
}


/* the key of requestState, and of the task ids mcp_backend hands out */

ngx_int_t
ngx_http_mcp_call_state_key(ngx_http_mcp_call_t *call, u_char *key)
{
    ngx_http_mcp_loc_conf_t  *mlcf;

    mlcf = ngx_http_mcp_call_conf(call);

    if (mlcf->state_key != NULL) {
        ngx_memcpy(key, mlcf->state_key, NGX_HTTP_MCP_STATE_KEY_LEN);
        return NGX_OK;
    }

    if (ngx_http_mcp_session_state_key(mlcf->zone, key) != NGX_OK) {
        ngx_log_error(NGX_LOG_ERR, call->log, 0, "mcp: RAND_bytes() failed");
        return NGX_ERROR;
    }

    return NGX_OK;
}


/*
 * Whether the client declared what an input request needs (*cap, and
 * for elicitation *mode); one that is no request to a client is not
 * asked either.
 */

static ngx_uint_t
ngx_http_mcp_mrtr_declared(cJSON *request, ngx_http_mcp_reqctx_t *rctx,
    const char **cap, const char **mode)
{
    cJSON       *method;
    ngx_uint_t   declared;

    method = ngx_http_mcp_json_get(request, "method");
    *cap = NULL;
    *mode = NULL;

    if (!cJSON_IsString(method)) {
        return 0;
    }

    declared = ngx_http_mcp_client_can(rctx, method->valuestring,
                                       ngx_http_mcp_json_get(request,
                                                             "params"),
                                       cap, mode);

    return (*cap != NULL) && declared;
}


static ngx_int_t
ngx_http_mcp_mrtr_invalid(ngx_http_mcp_call_t *call, const char *message)
{
    ngx_http_mcp_call_error(call, NGX_HTTP_MCP_INVALID_PARAMS, message);
    return NGX_DECLINED;
}
