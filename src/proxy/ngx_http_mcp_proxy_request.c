
/*
 * mcp_pass: an MCP-aware reverse proxy on nginx's upstream machinery.
 *
 * Requests are validated at the edge by the transport, as for built-in
 * endpoints, and relayed over HTTP/1.1.  Replies are relayed unbuffered,
 * so SSE events reach the client as the upstream sends them.
 *
 * Sessions: the gateway mints the client-facing session id at
 * initialize and keeps, in its session zone, the replica that answered
 * and that replica's own session id.  Every later request of the session
 * goes to that replica with that id, whatever the balancer would pick;
 * when the replica is gone the client gets 404 and initializes again,
 * on a replica that is up.  With mcp_session_key the id itself carries
 * the replica and its id, sealed, and no zone keeps them
 * (ngx_http_mcp_proxy_sesskey.c).
 *
 * Tool policy: a denied tools/call is answered at the edge; denied tools
 * are taken out of tools/list replies, JSON or SSE.
 *
 * The directives and their configuration are ngx_http_mcp_proxy_module's
 * (ngx_http_mcp_proxy_module.c); this file is the gateway's edge.
 */


#include "ngx_http_mcp_proxy.h"
#include "ngx_http_mcp_jsonrpc.h"
#include "ngx_http_mcp_call.h"
#include "ngx_http_mcp_core.h"
#include "ngx_http_mcp_metrics.h"
#include "ngx_http_mcp_auth.h"
#include "ngx_http_mcp_http.h"


static ngx_http_mcp_proxy_ctx_t *ngx_http_mcp_proxy_begin(
    ngx_http_mcp_ctx_t *ctx, ngx_int_t *rc);
static void ngx_http_mcp_proxy_counted(void *data);
static void ngx_http_mcp_proxy_body_ready(ngx_http_request_t *r);
static ngx_int_t ngx_http_mcp_proxy_go(ngx_http_request_t *r,
    ngx_http_mcp_proxy_ctx_t *pctx);
static ngx_uint_t ngx_http_mcp_proxy_policy(ngx_http_mcp_ctx_t *ctx);
static ngx_uint_t ngx_http_mcp_proxy_filters(ngx_http_mcp_ctx_t *ctx,
    ngx_http_mcp_msg_t *msg);
static ngx_int_t ngx_http_mcp_proxy_refuse(ngx_http_request_t *r,
    ngx_http_mcp_ctx_t *ctx, ngx_int_t *rc);
static ngx_int_t ngx_http_mcp_proxy_refuse_batch(ngx_http_mcp_ctx_t *ctx,
    ngx_uint_t denied, ngx_int_t code, const char *why);
static ngx_int_t ngx_http_mcp_proxy_refuse_arguments(
    ngx_http_mcp_ctx_t *ctx, ngx_uint_t bad, ngx_str_t *tool, u_char *error);
static ngx_int_t ngx_http_mcp_proxy_authorize(ngx_http_mcp_ctx_t *ctx,
    ngx_uint_t i, ngx_int_t *rc);


/*
 * A POST, checked and parsed: answered here when the edge refuses it,
 * else relayed.  Returns what the content handler returns.
 */

ngx_int_t
ngx_http_mcp_proxy_post(ngx_http_mcp_ctx_t *ctx)
{
    ngx_int_t                  rc;
    ngx_str_t                  retry = ngx_string("1");
    ngx_uint_t                 i, status;
    ngx_table_elt_t           *h;
    ngx_http_request_t        *r;
    ngx_http_mcp_msg_t        *msg;
    ngx_http_mcp_proxy_ctx_t  *pctx;

    r = ctx->request;

    pctx = ngx_http_mcp_proxy_begin(ctx, &rc);
    if (pctx == NULL) {
        return rc;
    }

    msg = ctx->msgs.elts;

    /* mcp_token_exchange failed: the refusal now carries the id */
    status = ngx_http_mcp_exchange_refused(r);

    if (status) {
        return ngx_http_mcp_exchange_error(r, ctx->batch ? NULL : msg[0].id,
                                           status);
    }

    ngx_http_mcp_proxy_reads(pctx);

    if (ctx->stateless) {
        /*
         * 2026-07-28: checked here as the upstream will check it, so that
         * what the gateway decided on is what the upstream reads; then
         * to any replica, as no replica holds a session for it.
         */
        if (ngx_http_mcp_stateless_check(ctx, &rc) != NGX_OK) {
            return rc;
        }

        pctx->stateless = 1;
        pctx->filter = ngx_http_mcp_proxy_filters(ctx, &msg[0]);

        return ngx_http_mcp_proxy_go(r, pctx);
    }

    if (!ctx->batch && msg[0].type == NGX_HTTP_MCP_MSG_REQUEST
        && ngx_strcmp(msg[0].method.data, "initialize") == 0
        && ctx->conf->session_keys != NULL)
    {
        /* a keyed id is sealed once the replica answered */
        pctx->initialize = 1;

        return ngx_http_mcp_proxy_go(r, pctx);
    }

    if (!ctx->batch && msg[0].type == NGX_HTTP_MCP_MSG_REQUEST
        && ngx_strcmp(msg[0].method.data, "initialize") == 0)
    {
        /* the client-facing id exists before the upstream is chosen */
        rc = ngx_http_mcp_session_mint(ctx, &msg[0]);

        if (rc == NGX_DECLINED) {
            /* the zone is full of busy sessions: 503 and Retry-After */
            if (ngx_http_mcp_header_out(r, "Retry-After", &retry) != NGX_OK) {
                return NGX_HTTP_INTERNAL_SERVER_ERROR;
            }

            return ngx_http_mcp_send_error(r, NGX_HTTP_SERVICE_UNAVAILABLE,
                                           msg[0].id,
                                           NGX_HTTP_MCP_SERVER_ERROR,
                                           "Service unavailable: no room "
                                           "for a new session");
        }

        if (rc != NGX_OK) {
            return NGX_HTTP_INTERNAL_SERVER_ERROR;
        }

        pctx->initialize = 1;
        pctx->client_sid = ctx->new_session;

        return ngx_http_mcp_proxy_go(r, pctx);
    }

    h = ngx_http_mcp_header_in(r, "mcp-session-id",
                               sizeof("mcp-session-id") - 1);

    if (h == NULL) {
        return ngx_http_mcp_send_error(r, NGX_HTTP_BAD_REQUEST,
                                       ctx->batch ? NULL : msg[0].id,
                                       NGX_HTTP_MCP_INVALID_REQUEST,
                                       "Bad Request: Mcp-Session-Id header "
                                       "is required");
    }

    rc = ngx_http_mcp_proxy_target(ctx, &h->value, &pctx->target);

    if (rc == NGX_ERROR) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    if (rc != NGX_OK) {
        return ngx_http_mcp_send_error(r, NGX_HTTP_NOT_FOUND,
                                       ctx->batch ? NULL : msg[0].id,
                                       NGX_HTTP_MCP_SESSION_NOT_FOUND,
                                       "Session not found");
    }

    pctx->pinned = 1;
    pctx->client_sid = h->value;

    ngx_http_mcp_proxy_initialized(ctx, &pctx->client_sid);

    for (i = 0; i < ctx->msgs.nelts; i++) {
        if (ngx_http_mcp_proxy_filters(ctx, &msg[i])) {
            pctx->filter = 1;
        }
    }

    return ngx_http_mcp_proxy_go(r, pctx);
}


/*
 * A POST's state, and the edge's refusals (invalid messages, the scopes,
 * the view, the policy, pins, input limits, guardrails, the listed
 * schemas): the state, or NULL with *rc the reply sent.
 */

static ngx_http_mcp_proxy_ctx_t *
ngx_http_mcp_proxy_begin(ngx_http_mcp_ctx_t *ctx, ngx_int_t *rc)
{
    ngx_http_request_t        *r;
    ngx_http_mcp_proxy_ctx_t  *pctx;

    r = ctx->request;

    pctx = ngx_pcalloc(r->pool, sizeof(ngx_http_mcp_proxy_ctx_t));
    if (pctx == NULL) {
        *rc = NGX_HTTP_INTERNAL_SERVER_ERROR;
        return NULL;
    }

    pctx->ctx = ctx;
    pctx->conf = ngx_http_get_module_loc_conf(r, ngx_http_mcp_proxy_module);
    pctx->policy = ngx_http_mcp_proxy_policy(ctx);
    ctx->proxy = pctx;

    if (ngx_http_mcp_proxy_refuse(r, ctx, rc) != NGX_OK) {
        return NULL;
    }

    return pctx;
}


/*
 * mcp_stdio: a POST to a server that is a child, not an upstream, held
 * to the gateway's checks as a relayed one is (the edge asks, through
 * the stdio module's steps).  NGX_OK with *body what the child is to get
 * (the client's bytes, or the messages printed again when a view renamed
 * a call or a guardrail redacted an argument); else NGX_DECLINED, *rc
 * the reply sent.  Its reply is read by ngx_http_mcp_proxy_read_reply().
 */

ngx_int_t
ngx_http_mcp_proxy_check_post(ngx_http_mcp_ctx_t *ctx, ngx_str_t *body,
    ngx_int_t *rc)
{
    ngx_pool_cleanup_t        *cln;
    ngx_http_mcp_proxy_ctx_t  *pctx;

    pctx = ngx_http_mcp_proxy_begin(ctx, rc);
    if (pctx == NULL) {
        return NGX_DECLINED;
    }

    ngx_http_mcp_proxy_reads(pctx);

    /* after every check of the client's message: a view's real names */
    if (ngx_http_mcp_proxy_view_body(pctx) != NGX_OK) {
        *rc = NGX_HTTP_INTERNAL_SERVER_ERROR;
        return NGX_DECLINED;
    }

    if (pctx->body.data != NULL) {
        *body = pctx->body;
    }

    /* counted as a relayed POST is, when the request ends */
    pctx->started = ngx_http_mcp_metrics_start(ctx->conf);

    if (pctx->started) {
        cln = ngx_pool_cleanup_add(ctx->request->pool, 0);
        if (cln == NULL) {
            *rc = NGX_HTTP_INTERNAL_SERVER_ERROR;
            return NGX_DECLINED;
        }

        cln->handler = ngx_http_mcp_proxy_counted;
        cln->data = pctx;
    }

    return NGX_OK;
}


static void
ngx_http_mcp_proxy_counted(void *data)
{
    ngx_http_mcp_proxy_ctx_t  *pctx = data;

    ngx_http_mcp_metrics_gateway(pctx->ctx->request, &pctx->ctx->msgs,
                                 pctx->started, NGX_OK, 1);
}


/* a tools/list whose reply the policy or the caller's scopes filter */

static ngx_uint_t
ngx_http_mcp_proxy_filters(ngx_http_mcp_ctx_t *ctx, ngx_http_mcp_msg_t *msg)
{
    return msg->type == NGX_HTTP_MCP_MSG_REQUEST
           && msg->method.len == sizeof("tools/list") - 1
           && ngx_strcmp(msg->method.data, "tools/list") == 0
           && ngx_http_mcp_proxy_policy(ctx);
}


/*
 * The policy, the caller's scopes or the location's view (mcp_pass_tool)
 * hide tools: a tools/list reply is
 * filtered, and so is every SSE stream relayed, as an upstream may put
 * such a reply on any of them
 */

static ngx_uint_t
ngx_http_mcp_proxy_policy(ngx_http_mcp_ctx_t *ctx)
{
    ngx_http_mcp_proxy_loc_conf_t  *plcf;

    plcf = ngx_http_get_module_loc_conf(ctx->request,
                                        ngx_http_mcp_proxy_module);

    /*
     * a view hides and renames as the policy hides; pins take a changed
     * tool out of a list, whichever stream it comes on; guardrails read
     * the results and lists of every stream
     */
    return ngx_http_mcp_policy_on(ctx->conf) || plcf->views != NULL
           || plcf->pin != NGX_HTTP_MCP_PIN_OFF
           || (plcf->guard_where
               & (NGX_HTTP_MCP_GUARD_RESULTS | NGX_HTTP_MCP_GUARD_LISTS))
           || (ctx->rctx.auth != NULL
               && ngx_http_mcp_auth_tool_scoped(ctx->rctx.auth));
}


/* the edge's own answers: invalid messages, denied tools */

static ngx_int_t
ngx_http_mcp_proxy_refuse(ngx_http_request_t *r, ngx_http_mcp_ctx_t *ctx,
    ngx_int_t *rc)
{
    cJSON                     *name, *args;
    u_char                     logged[NGX_HTTP_MCP_LOG_NAME_LEN], *end;
    u_char                    *error;
    ngx_int_t                  limits;
    ngx_str_t                  tool, real;
    ngx_uint_t                 i;
    const char                *why;
    ngx_http_mcp_msg_t        *msg;
    ngx_http_mcp_proxy_ctx_t  *pctx;

    msg = ctx->msgs.elts;
    pctx = ctx->proxy;

    if (ctx->batch && ctx->msgs.nelts == 0) {
        *rc = ngx_http_mcp_send_error(r, NGX_HTTP_BAD_REQUEST, NULL,
                                      NGX_HTTP_MCP_INVALID_REQUEST,
                                      "Invalid Request: empty batch");
        return NGX_DECLINED;
    }

    for (i = 0; i < ctx->msgs.nelts; i++) {

        if (msg[i].type == NGX_HTTP_MCP_MSG_INVALID) {
            ngx_log_error(NGX_LOG_INFO, r->connection->log, 0,
                          "mcp: invalid JSON-RPC message: %s", msg[i].error);

            *rc = ngx_http_mcp_send_error(r, NGX_HTTP_BAD_REQUEST,
                                          msg[i].id,
                                          NGX_HTTP_MCP_INVALID_REQUEST,
                                          "Invalid Request");
            return NGX_DECLINED;
        }

        if (msg[i].type != NGX_HTTP_MCP_MSG_REQUEST) {
            continue;
        }

        if (ngx_http_mcp_proxy_authorize(ctx, i, rc) != NGX_OK) {
            return NGX_DECLINED;
        }

        if (ngx_strcmp(msg[i].method.data, "tools/call") != 0) {
            continue;
        }

        name = cJSON_GetObjectItemCaseSensitive(msg[i].params, "name");

        if (!cJSON_IsString(name)) {
            continue;
        }

        tool.data = (u_char *) name->valuestring;
        tool.len = ngx_strlen(tool.data);

        /*
         * the policy and the scopes read the name the client sees; the
         * pins and the listed schemas are the upstream's, of its name
         */
        if (ngx_http_mcp_proxy_view_call(pctx->conf, &tool, &real)
            != NGX_OK)
        {
            end = ngx_http_mcp_log_bounded(logged, sizeof(logged),
                                           tool.data, tool.len);
            ngx_log_error(NGX_LOG_INFO, r->connection->log, 0,
                          "mcp: tool \"%*s\" is not in the location's view",
                          end - logged, logged);

            *rc = ngx_http_mcp_proxy_refuse_batch(ctx, i,
                                                  NGX_HTTP_MCP_INVALID_PARAMS,
                                                  "Unknown tool");
            return NGX_DECLINED;
        }

        if (ngx_http_mcp_tool_allowed(ctx->conf, &tool)) {
            /* the input limits hold on every path, mcp_pass too */
            args = cJSON_GetObjectItemCaseSensitive(msg[i].params,
                                                    "arguments");
            limits = ngx_http_mcp_auth_check_input(r->loc_conf, r->pool,
                                                   args, &error);
            if (ngx_http_mcp_proxy_pin_call(pctx, &real, &why) != NGX_OK) {
                ngx_log_error(NGX_LOG_INFO, r->connection->log, 0,
                              "mcp: tools/call refused: %s", why);

                *rc = ngx_http_mcp_proxy_refuse_batch(ctx, i,
                                                   NGX_HTTP_MCP_INVALID_PARAMS,
                                                   why);
                return NGX_DECLINED;
            }

            /* a guardrail's refusal: nothing of the POST is relayed */
            if (limits == NGX_OK) {
                limits = ngx_http_mcp_proxy_guard_arguments(pctx, args, &why);

                if (limits == NGX_DECLINED) {
                    error = (u_char *) why;
                }
            }

            if (limits == NGX_OK) {
                limits = ngx_http_mcp_proxy_check_arguments(ctx, &real, args,
                                                            &error);
                if (limits == NGX_DECLINED) {
                    *rc = ngx_http_mcp_proxy_refuse_arguments(ctx, i, &tool,
                                                              error);
                    return NGX_DECLINED;
                }
            }

            /* the headers, as the built-in endpoint says: 400 and -32020 */
            if (limits == NGX_OK) {
                limits = ngx_http_mcp_proxy_check_params(ctx, &msg[i], &real,
                                                         &error);
                if (limits == NGX_DECLINED) {
                    *rc = ngx_http_mcp_send_error(r, NGX_HTTP_BAD_REQUEST,
                                                  msg[i].id,
                                                  NGX_HTTP_MCP_HEADER_MISMATCH,
                                                  (char *) error);
                    return NGX_DECLINED;
                }
            }

            if (limits == NGX_OK) {
                continue;
            }

            if (limits == NGX_ERROR) {
                *rc = NGX_HTTP_INTERNAL_SERVER_ERROR;
                return NGX_DECLINED;
            }

            ngx_log_error(NGX_LOG_INFO, r->connection->log, 0,
                          "mcp: tools/call refused: %s", error);

            *rc = ctx->batch
                  ? ngx_http_mcp_proxy_refuse_batch(ctx, i,
                                                   NGX_HTTP_MCP_INVALID_PARAMS,
                                                   (char *) error)
                  : ngx_http_mcp_send_error(r, NGX_HTTP_OK, msg[i].id,
                                            NGX_HTTP_MCP_INVALID_PARAMS,
                                            (char *) error);
            return NGX_DECLINED;
        }

        end = ngx_http_mcp_log_bounded(logged, sizeof(logged), tool.data,
                                       tool.len);
        ngx_log_error(NGX_LOG_INFO, r->connection->log, 0,
                      "mcp: tool \"%*s\" denied by policy", end - logged,
                      logged);

        if (ctx->batch) {
            *rc = ngx_http_mcp_proxy_refuse_batch(ctx, i,
                                                  NGX_HTTP_MCP_INVALID_PARAMS,
                                                  "Tool not allowed");
            return NGX_DECLINED;
        }

        /* a JSON-RPC error, as for an unknown tool; nothing goes on */
        *rc = ngx_http_mcp_send_error(r, NGX_HTTP_OK, msg[i].id,
                                      NGX_HTTP_MCP_INVALID_PARAMS,
                                      "Tool not allowed");
        return NGX_DECLINED;
    }

    return NGX_OK;
}


/*
 * The caller's scopes, role and per-tool scopes, as on a built-in
 * endpoint, for message i: NGX_OK, or NGX_DECLINED with *rc the reply
 * (403 insufficient_scope with its challenge; in a batch, every request
 * an error).  Nothing the caller may not do reaches the upstream.
 */

static ngx_int_t
ngx_http_mcp_proxy_authorize(ngx_http_mcp_ctx_t *ctx, ngx_uint_t i,
    ngx_int_t *rc)
{
    u_char              *text;
    cJSON               *name;
    ngx_str_t            scope, tool, *m;
    const char          *capability;
    ngx_http_mcp_msg_t  *msg;

    if (ctx->rctx.auth == NULL) {
        return NGX_OK;
    }

    msg = ctx->msgs.elts;
    m = &msg[i].method;

#define ngx_http_mcp_prefix(s)                                                \
    (m->len > sizeof(s) - 1 && ngx_strncmp(m->data, s, sizeof(s) - 1) == 0)

    if (ngx_http_mcp_prefix("tools/")) {
        capability = "tools";

    } else if (ngx_http_mcp_prefix("resources/")) {
        capability = "resources";

    } else if (ngx_http_mcp_prefix("prompts/")) {
        capability = "prompts";

    } else {
        /* ping, logging, completion: a valid token is enough */
        return NGX_OK;
    }

#undef ngx_http_mcp_prefix

    ngx_str_null(&tool);

    if (ngx_strcmp(m->data, "tools/call") == 0) {
        name = cJSON_GetObjectItemCaseSensitive(msg[i].params, "name");

        if (cJSON_IsString(name)) {
            tool.data = (u_char *) name->valuestring;
            tool.len = ngx_strlen(tool.data);
        }
    }

    if (ngx_http_mcp_auth_permits(ctx->rctx.auth, capability,
                                  tool.len ? &tool : NULL, &scope)
        == NGX_OK)
    {
        return NGX_OK;
    }

    text = ngx_pnalloc(ctx->request->pool, 128 + scope.len);
    if (text == NULL) {
        *rc = NGX_HTTP_INTERNAL_SERVER_ERROR;
        return NGX_DECLINED;
    }

    (void) ngx_sprintf(text, "Forbidden: insufficient scope, \"%V\" is "
                       "required%Z", &scope);

    if (ctx->batch) {
        *rc = ngx_http_mcp_proxy_refuse_batch(ctx, i,
                                              NGX_HTTP_MCP_INVALID_REQUEST,
                                              (const char *) text);
        return NGX_DECLINED;
    }

    if (ngx_http_mcp_auth_challenge(ctx->request, &scope) != NGX_OK) {
        *rc = NGX_HTTP_INTERNAL_SERVER_ERROR;
        return NGX_DECLINED;
    }

    *rc = ngx_http_mcp_send_error(ctx->request, NGX_HTTP_FORBIDDEN,
                                  msg[i].id, NGX_HTTP_MCP_INVALID_REQUEST,
                                  (const char *) text);
    return NGX_DECLINED;
}


/*
 * Arguments the tool's listed inputSchema refuses: the call's result is
 * an isError result naming the fault, as a built-in tool's is, which a
 * model can read and correct; the upstream sees nothing of the POST.
 */

static ngx_int_t
ngx_http_mcp_proxy_refuse_arguments(ngx_http_mcp_ctx_t *ctx, ngx_uint_t bad,
    ngx_str_t *tool, u_char *error)
{
    u_char              logged[NGX_HTTP_MCP_LOG_NAME_LEN], *end;
    cJSON              *result;
    ngx_http_mcp_msg_t  *msg;

    msg = ctx->msgs.elts;

    end = ngx_http_mcp_log_bounded(logged, sizeof(logged), tool->data,
                                   tool->len);
    ngx_log_error(NGX_LOG_INFO, ctx->request->connection->log, 0,
                  "mcp: tool \"%*s\" arguments refused: %s", end - logged,
                  logged, error);

    result = ngx_http_mcp_text_result((const char *) error, 1);

    /* 2026-07-28: the gateway's own result says what it is, and who */
    if (result != NULL && ctx->stateless
        && (ngx_http_mcp_json_add_literal(result, "resultType", "complete")
            != NGX_OK
            || ngx_http_mcp_server_meta(result) != NGX_OK))
    {
        cJSON_Delete(result);
        result = NULL;
    }

    msg[bad].reply = ngx_http_mcp_jsonrpc_result(msg[bad].id, result);
    if (msg[bad].reply == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    return ngx_http_mcp_proxy_refuse_batch(ctx, bad, 0, NULL);
}


/*
 * A batch is relayed whole or not at all: with a denied call in it, each
 * of its requests gets an error, in an array as any batch's reply.
 */

static ngx_int_t
ngx_http_mcp_proxy_refuse_batch(ngx_http_mcp_ctx_t *ctx, ngx_uint_t denied,
    ngx_int_t code, const char *why)
{
    ngx_uint_t           i;
    ngx_http_mcp_msg_t  *msg;

    msg = ctx->msgs.elts;

    for (i = 0; i < ctx->msgs.nelts; i++) {

        if (msg[i].type != NGX_HTTP_MCP_MSG_REQUEST
            || (i == denied && msg[i].reply != NULL))
        {
            continue;
        }

        msg[i].reply = ngx_http_mcp_error_reply(ctx->request, msg[i].id,
                           (i == denied) ? code
                                         : NGX_HTTP_MCP_INVALID_REQUEST,
                           (i == denied) ? why
                                         : "Not relayed: the batch holds a "
                                           "refused request",
                           &msg[i].method);

        if (msg[i].reply == NULL) {
            return NGX_HTTP_INTERNAL_SERVER_ERROR;
        }
    }

    ctx->status = NGX_HTTP_OK;

    return ngx_http_mcp_reply(ctx);
}


/* GET (a stream) and DELETE go to the session's replica as they are */

ngx_int_t
ngx_http_mcp_proxy_other(ngx_http_request_t *r, ngx_http_mcp_loc_conf_t *mlcf)
{
    ngx_int_t                  rc;
    ngx_http_mcp_ctx_t        *ctx;
    ngx_http_mcp_proxy_ctx_t  *pctx;

    ctx = ngx_http_mcp_ctx_create(r, mlcf, ngx_http_mcp_auth_get(r));
    pctx = ngx_pcalloc(r->pool, sizeof(ngx_http_mcp_proxy_ctx_t));

    if (ctx == NULL || pctx == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    ctx->proxy = pctx;
    pctx->ctx = ctx;
    pctx->conf = ngx_http_get_module_loc_conf(r, ngx_http_mcp_proxy_module);

    /* the session is read with its replica, below */
    if (ngx_http_mcp_session_preamble(r, mlcf, 0, &pctx->client_sid,
                                      &ctx->rctx, &rc)
        != NGX_OK)
    {
        return rc;
    }

    rc = ngx_http_mcp_proxy_target(ctx, &pctx->client_sid, &pctx->target);

    if (rc == NGX_ERROR) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    if (rc != NGX_OK) {
        return ngx_http_mcp_send_error(r, NGX_HTTP_NOT_FOUND, NULL,
                                       NGX_HTTP_MCP_SESSION_NOT_FOUND,
                                       "Session not found");
    }

    pctx->pinned = 1;
    pctx->policy = ngx_http_mcp_proxy_policy(ctx);

    /* the upstream module wants a request body, even an empty one */
    rc = ngx_http_read_client_request_body(r, ngx_http_mcp_proxy_body_ready);

    if (rc >= NGX_HTTP_SPECIAL_RESPONSE) {
        return rc;
    }

    return NGX_DONE;
}


/* reading the body took the request reference the upstream keeps */

static void
ngx_http_mcp_proxy_body_ready(ngx_http_request_t *r)
{
    ngx_int_t            rc;
    ngx_http_mcp_ctx_t  *ctx;

    ctx = ngx_http_get_module_ctx(r, ngx_http_mcp_module);

    rc = ngx_http_mcp_proxy_start(r, ctx->proxy);

    if (rc != NGX_DONE) {
        ngx_http_finalize_request(r, rc);
    }
}


/* the body was read in the rewrite phase: the upstream takes a reference */

static ngx_int_t
ngx_http_mcp_proxy_go(ngx_http_request_t *r, ngx_http_mcp_proxy_ctx_t *pctx)
{
    ngx_int_t  rc;

    /* after every check of the client's message: a view's real names */
    if (ngx_http_mcp_proxy_view_body(pctx) != NGX_OK) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    r->main->count++;

    rc = ngx_http_mcp_proxy_start(r, pctx);

    if (rc != NGX_DONE) {
        r->main->count--;
    }

    return rc;
}


