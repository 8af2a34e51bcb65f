
/*
 * What mcp_pass reads of the messages it relays, beyond the tool policy:
 *
 * - the outcome of each request of a POST (a result, one with isError,
 *   or a JSON-RPC error and its code), when a log reads $mcp_outcome or
 *   $mcp_error_code;
 * - with mcp_pass_check_arguments or mcp_pass_check_results, the tools
 *   the upstream lists, kept in the zone for every worker
 *   (ngx_http_mcp_session_tools.c); a tools/call's arguments are then
 *   checked against the inputSchema listed before it is relayed, and
 *   its result against the outputSchema, as the module holds its own
 *   tools to theirs (ngx_http_mcp_output.c).
 *
 * With mcp_pass_guardrail, each result and list read is held to the
 * location's pattern sets too (ngx_http_mcp_proxy_guard.c).  With
 * mcp_pass_retry (on by default) every tools/list reply that can be is
 * read for its tools' readOnlyHint and idempotentHint
 * (ngx_http_mcp_proxy_retry.c).
 *
 * A tool no list relayed through the gateway has shown yet is relayed
 * unchecked: the checks are the gateway's second look, the upstream's
 * own is the first.  The replies are read where the policy reads them:
 * a JSON reply held whole (ngx_http_mcp_proxy_body.c), an SSE reply
 * event by event (ngx_http_mcp_proxy_stream.c).
 */


#include "ngx_http_mcp_proxy.h"
#include "ngx_http_mcp_jsonrpc.h"
#include "ngx_http_mcp_schema.h"
#include "ngx_http_mcp_output.h"
#include "ngx_http_mcp_json.h"
#include "ngx_http_mcp_param.h"
#include "ngx_http_mcp_auth.h"
#include "ngx_http_mcp_core.h"


static ngx_uint_t ngx_http_mcp_proxy_tool_visible(void *data,
    ngx_str_t *name);
static ngx_int_t ngx_http_mcp_proxy_reply_message(void *data,
    cJSON *message, ngx_uint_t *changed);
static ngx_http_mcp_msg_t *ngx_http_mcp_proxy_request_of(
    ngx_http_mcp_ctx_t *ctx, cJSON *id);
static ngx_uint_t ngx_http_mcp_proxy_id_number(cJSON *id, double *n);
static ngx_int_t ngx_http_mcp_proxy_foreign_list(
    ngx_http_mcp_proxy_ctx_t *pctx, cJSON *result, ngx_uint_t *changed);
static ngx_int_t ngx_http_mcp_proxy_learn(ngx_http_mcp_proxy_ctx_t *pctx,
    cJSON *result);
static ngx_int_t ngx_http_mcp_proxy_learn_tool(void *data, cJSON *tool,
    ngx_str_t *name);
static ngx_int_t ngx_http_mcp_proxy_learn_schema(ngx_pool_t *pool,
    cJSON *tool, const char *name, ngx_str_t *text);
static ngx_int_t ngx_http_mcp_proxy_check_result(
    ngx_http_mcp_proxy_ctx_t *pctx, ngx_http_mcp_msg_t *msg, cJSON *result,
    ngx_uint_t *changed);
static cJSON *ngx_http_mcp_proxy_schema(ngx_http_mcp_proxy_ctx_t *pctx,
    ngx_str_t *tool, ngx_uint_t output);
static ngx_uint_t ngx_http_mcp_proxy_is(ngx_http_mcp_msg_t *msg,
    const char *method, size_t len);
static ngx_uint_t ngx_http_mcp_proxy_learns(ngx_http_mcp_proxy_ctx_t *pctx);


#define ngx_http_mcp_proxy_method(msg, m)                                    \
    ngx_http_mcp_proxy_is(msg, m, sizeof(m) - 1)


/*
 * Which of a POST's replies are read: pctx->read when any message is,
 * pctx->must_read when a check needs it (a reply too large to read is
 * then refused as the policy refuses one; for the outcome alone it goes
 * on unread).
 */

void
ngx_http_mcp_proxy_reads(ngx_http_mcp_proxy_ctx_t *pctx)
{
    ngx_uint_t                 i, learn;
    ngx_http_mcp_msg_t        *msg;
    ngx_http_mcp_main_conf_t  *mmcf;

    mmcf = ngx_http_get_module_main_conf(pctx->ctx->request,
                                         ngx_http_mcp_module);
    learn = ngx_http_mcp_proxy_learns(pctx)
            || pctx->conf->pin != NGX_HTTP_MCP_PIN_OFF;
    msg = pctx->ctx->msgs.elts;

    for (i = 0; i < pctx->ctx->msgs.nelts; i++) {

        if (msg[i].type != NGX_HTTP_MCP_MSG_REQUEST) {
            continue;
        }

        if (mmcf->audit & NGX_HTTP_MCP_AUDIT_OUTCOME) {
            pctx->read = 1;
        }

        /* for the hints of mcp_pass_retry: read when it can be */
        if (pctx->conf->retry
            && ngx_http_mcp_proxy_method(&msg[i], "tools/list"))
        {
            pctx->read = 1;
        }

        if (((learn || pctx->conf->views != NULL)
             && ngx_http_mcp_proxy_method(&msg[i], "tools/list"))
            || ((pctx->conf->check_results
                 || (pctx->conf->guard_where & NGX_HTTP_MCP_GUARD_RESULTS))
                && ngx_http_mcp_proxy_method(&msg[i], "tools/call"))
            || ((pctx->conf->guard_where & NGX_HTTP_MCP_GUARD_LISTS)
                && (ngx_http_mcp_proxy_method(&msg[i], "tools/list")
                    || ngx_http_mcp_proxy_method(&msg[i], "prompts/list"))))
        {
            pctx->read = 1;
            pctx->must_read = 1;
        }
    }
}


/* the policy's filter of a reply, and what this file reads of it */

void
ngx_http_mcp_proxy_tool_filter(ngx_http_mcp_proxy_ctx_t *pctx,
    ngx_http_mcp_tool_filter_t *tf)
{
    tf->allowed = ngx_http_mcp_proxy_tool_visible;

    /*
     * pins and views read the tools/list answers of every stream too,
     * guardrails its results and lists
     */
    tf->message = (pctx->read || pctx->conf->pin != NGX_HTTP_MCP_PIN_OFF
                   || pctx->conf->views != NULL
                   || (pctx->conf->guard_where
                       & (NGX_HTTP_MCP_GUARD_RESULTS
                          | NGX_HTTP_MCP_GUARD_LISTS)))
                  ? ngx_http_mcp_proxy_reply_message : NULL;
    tf->data = pctx->ctx;
}


/*
 * mcp_stdio: a child's reply to the POST's request, parsed and under the
 * client's id, read as mcp_pass reads a relayed one: the tools the
 * policy, the view or the caller's scopes hide taken out, then pins,
 * checks, guardrails and the outcome.  NGX_ERROR: not to be sent.
 */

ngx_int_t
ngx_http_mcp_proxy_read_reply(ngx_http_mcp_proxy_ctx_t *pctx,
    cJSON *message)
{
    ngx_uint_t                  changed;
    ngx_http_mcp_tool_filter_t  tf;

    if (!pctx->policy && !pctx->read) {
        return NGX_OK;
    }

    ngx_http_mcp_proxy_tool_filter(pctx, &tf);
    changed = 0;

    return ngx_http_mcp_policy_filter_tree(message, &tf, &changed);
}


/*
 * a tool the location's view shows, and, by the name it shows, the
 * policy allows and the caller may call; a list's names are noted for
 * the memo of lists, which asks again for each caller
 * (ngx_http_mcp_proxy_list_memo_find())
 */

static ngx_uint_t
ngx_http_mcp_proxy_tool_visible(void *data, ngx_str_t *name)
{
    ngx_http_mcp_ctx_t *ctx = data;

    ngx_str_t                 *note;
    ngx_str_t                  scope, shown;
    ngx_http_mcp_proxy_ctx_t  *pctx;

    pctx = ctx->proxy;

    if (pctx->memo_names != NULL) {
        note = ngx_array_push(pctx->memo_names);

        if (note == NULL) {
            pctx->memo_names = NULL;

        } else {
            note->len = name->len;
            note->data = ngx_pstrdup(ctx->request->pool, name);

            if (note->data == NULL) {
                pctx->memo_names = NULL;
            }
        }
    }

    if (ngx_http_mcp_proxy_view_name(pctx->conf, name, &shown) != NGX_OK) {
        return 0;
    }

    return ngx_http_mcp_tool_allowed(ctx->conf, &shown)
           && (ctx->rctx.auth == NULL
               || ngx_http_mcp_auth_permits(ctx->rctx.auth, "tools", &shown,
                                            &scope)
                  == NGX_OK);
}


/*
 * A tools/call's arguments against the inputSchema its upstream listed:
 * NGX_OK (valid, or nothing listed to check against), NGX_DECLINED with
 * *error, or NGX_ERROR.
 */

ngx_int_t
ngx_http_mcp_proxy_check_arguments(ngx_http_mcp_ctx_t *ctx, ngx_str_t *tool,
    cJSON *arguments, u_char **error)
{
    cJSON                          *schema, empty;
    ngx_int_t                       rc;
    ngx_http_request_t             *r;
    ngx_http_mcp_proxy_ctx_t       *pctx;
    ngx_http_mcp_schema_opts_t      opts;

    pctx = ctx->proxy;

    if (!pctx->conf->check_arguments) {
        return NGX_OK;
    }

    schema = ngx_http_mcp_proxy_schema(pctx, tool, 0);

    if (schema == NULL) {
        return NGX_OK;
    }

    r = ctx->request;

    ngx_memzero(&empty, sizeof(cJSON));
    empty.type = cJSON_Object;

    ngx_memzero(&opts, sizeof(ngx_http_mcp_schema_opts_t));
    opts.format_assert = ngx_http_mcp_hooks.format_assert(r->loc_conf);

    rc = ngx_http_mcp_schema_validate_opts(r->pool, schema,
                                           arguments ? arguments : &empty,
                                           &opts, error);
    cJSON_Delete(schema);

    return rc;
}


/*
 * A 2026-07-28 tools/call's Mcp-Param-* headers against the x-mcp-header
 * arguments of the inputSchema its tool was listed with, as the built-in
 * endpoint holds its own tools' (ngx_http_mcp_param_check()), on a stdio
 * location: its child never sees the headers (mcp_pass leaves the check
 * to its upstream, which does).  NGX_OK (they agree, or the tool is not
 * listed yet), NGX_DECLINED with *error, or NGX_ERROR.
 */

ngx_int_t
ngx_http_mcp_proxy_check_params(ngx_http_mcp_ctx_t *ctx,
    ngx_http_mcp_msg_t *msg, ngx_str_t *tool, u_char **error)
{
    cJSON      *schema;
    ngx_int_t   rc;

    if (!ctx->stateless || !ctx->conf->stdio) {
        return NGX_OK;
    }

    schema = ngx_http_mcp_proxy_schema(ctx->proxy, tool, 0);

    if (schema == NULL) {
        return NGX_OK;
    }

    rc = ngx_http_mcp_param_check(ctx->request->pool, schema,
                                  cJSON_GetObjectItemCaseSensitive(
                                      msg->params, "arguments"),
                                  msg->param_headers, error);
    cJSON_Delete(schema);

    return rc;
}


/* one message of a reply read: the reply of one of the POST's requests */

static ngx_int_t
ngx_http_mcp_proxy_reply_message(void *data, cJSON *message,
    ngx_uint_t *changed)
{
    ngx_http_mcp_ctx_t *ctx = data;

    cJSON                     *result;
    ngx_http_mcp_msg_t        *msg;
    ngx_http_mcp_proxy_ctx_t  *pctx;

    if (!cJSON_IsObject(message)
        || cJSON_GetObjectItemCaseSensitive(message, "method") != NULL)
    {
        /* a request or notification of the upstream's own */
        return NGX_OK;
    }

    msg = ngx_http_mcp_proxy_request_of(ctx,
              cJSON_GetObjectItemCaseSensitive(message, "id"));

    pctx = ctx->proxy;
    result = cJSON_GetObjectItemCaseSensitive(message, "result");

    if (msg == NULL) {
        /*
         * another request's answer (a GET stream's, or one put in this
         * POST's reply): the client takes it by its id, so a tools/list
         * answer is held to the pins and shown through the view as the
         * POST's own; nothing is learnt from it
         */
        return cJSON_IsObject(result)
               ? ngx_http_mcp_proxy_foreign_list(pctx, result, changed)
               : NGX_OK;
    }

    if (cJSON_IsObject(result)
        && pctx->conf->pin != NGX_HTTP_MCP_PIN_OFF
        && ngx_http_mcp_proxy_method(msg, "tools/list")
        && ngx_http_mcp_proxy_pin_list(pctx, result, changed) != NGX_OK)
    {
        return NGX_ERROR;
    }

    if (cJSON_IsObject(result)
        && ngx_http_mcp_proxy_learns(pctx)
        && ngx_http_mcp_proxy_method(msg, "tools/list")
        && ngx_http_mcp_proxy_learn(pctx, result) != NGX_OK)
    {
        return NGX_ERROR;
    }

    /* the hints a call may go again by (mcp_pass_retry) */
    if (cJSON_IsObject(result)
        && pctx->conf->retry
        && ngx_http_mcp_proxy_method(msg, "tools/list")
        && ngx_http_mcp_proxy_retry_learn(pctx, result) != NGX_OK)
    {
        return NGX_ERROR;
    }

    /* the view rewrites what the pins and the checks read as listed */
    if (cJSON_IsObject(result)
        && pctx->conf->views != NULL
        && ngx_http_mcp_proxy_method(msg, "tools/list")
        && ngx_http_mcp_proxy_view_list(pctx, result, changed) != NGX_OK)
    {
        return NGX_ERROR;
    }

    if (cJSON_IsObject(result)
        && pctx->conf->check_results
        && ngx_http_mcp_proxy_method(msg, "tools/call")
        && ngx_http_mcp_proxy_check_result(pctx, msg, result, changed)
           != NGX_OK)
    {
        return NGX_ERROR;
    }

    /* the guardrails read what the client is to see, view and all */
    if (cJSON_IsObject(result)
        && pctx->conf->guard_where != 0
        && (ngx_http_mcp_proxy_method(msg, "tools/call")
            ? ngx_http_mcp_proxy_guard_result(pctx, result, changed)
            : (ngx_http_mcp_proxy_method(msg, "tools/list")
               || ngx_http_mcp_proxy_method(msg, "prompts/list"))
              ? ngx_http_mcp_proxy_guard_list(pctx, result, changed)
              : NGX_OK)
           != NGX_OK)
    {
        return NGX_ERROR;
    }

    ngx_http_mcp_jsonrpc_outcome(msg, message);

    return NGX_OK;
}


static ngx_int_t
ngx_http_mcp_proxy_foreign_list(ngx_http_mcp_proxy_ctx_t *pctx,
    cJSON *result, ngx_uint_t *changed)
{
    /* its method unknown: a result is taken for what it holds */
    if (pctx->conf->guard_where != 0) {
        if (cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(result,
                                                           "content")))
        {
            return ngx_http_mcp_proxy_guard_result(pctx, result, changed);
        }

        if (cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(result,
                                                           "prompts")))
        {
            return ngx_http_mcp_proxy_guard_list(pctx, result, changed);
        }
    }

    if (!cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(result, "tools"))) {
        return NGX_OK;
    }

    if (pctx->conf->pin != NGX_HTTP_MCP_PIN_OFF
        && ngx_http_mcp_proxy_pin_list(pctx, result, changed) != NGX_OK)
    {
        return NGX_ERROR;
    }

    if (pctx->conf->views != NULL
        && ngx_http_mcp_proxy_view_list(pctx, result, changed) != NGX_OK)
    {
        return NGX_ERROR;
    }

    return ngx_http_mcp_proxy_guard_list(pctx, result, changed);
}


/* the POST's request a reply's id answers, or NULL */

static ngx_http_mcp_msg_t *
ngx_http_mcp_proxy_request_of(ngx_http_mcp_ctx_t *ctx, cJSON *id)
{
    double               n, m;
    ngx_uint_t           i;
    ngx_http_mcp_msg_t  *msg;

    if (id == NULL || cJSON_IsNull(id)) {
        return NULL;
    }

    msg = ctx->msgs.elts;

    for (i = 0; i < ctx->msgs.nelts; i++) {

        if (msg[i].type != NGX_HTTP_MCP_MSG_REQUEST || msg[i].id == NULL) {
            continue;
        }

        /*
         * a number is kept as the client wrote it (ngx_http_mcp_jsonrpc.c)
         * and read back here as cJSON reads the reply's: two ids of one
         * POST that differ past a double's 53 bits are one to this look
         */
        if (cJSON_IsRaw(msg[i].id)
            ? cJSON_IsNumber(id)
              && strtod(msg[i].id->valuestring, NULL) == id->valuedouble
            : cJSON_Compare(msg[i].id, id, 1))
        {
            return &msg[i];
        }
    }

    /*
     * A client may read an id as a number whatever its type (the
     * TypeScript SDK takes a reply by Number(id)): a string id answers a
     * number one, and a number a string one, when they are one number
     * so; read otherwise, such a reply would reach the client unchecked.
     */

    if (!ngx_http_mcp_proxy_id_number(id, &n)) {
        return NULL;
    }

    for (i = 0; i < ctx->msgs.nelts; i++) {

        if (msg[i].type == NGX_HTTP_MCP_MSG_REQUEST && msg[i].id != NULL
            && cJSON_IsString(msg[i].id) != cJSON_IsString(id)
            && ngx_http_mcp_proxy_id_number(msg[i].id, &m) && m == n)
        {
            return &msg[i];
        }
    }

    return NULL;
}


/*
 * An id as a number, as JavaScript's Number() reads it (white space
 * around it, an empty string 0, hex); 0: not a number
 */

static ngx_uint_t
ngx_http_mcp_proxy_id_number(cJSON *id, double *n)
{
    char  *p, *end;

    if (cJSON_IsNumber(id)) {
        *n = id->valuedouble;
        return 1;
    }

    if (!cJSON_IsString(id) && !cJSON_IsRaw(id)) {
        return 0;
    }

    p = id->valuestring;

    while (*p == ' ' || (*p >= '\t' && *p <= '\r')) {
        p++;
    }

    if (*p == '\0') {
        *n = 0;
        return 1;
    }

    *n = strtod(p, &end);

    if (end == p) {
        return 0;
    }

    while (*end == ' ' || (*end >= '\t' && *end <= '\r')) {
        end++;
    }

    return *end == '\0';
}


/*
 * The tools a list shows, kept for every worker's checks.  A zone too
 * full to keep one is told at "info": its calls go on unchecked.
 */

static ngx_int_t
ngx_http_mcp_proxy_learn(ngx_http_mcp_proxy_ctx_t *pctx, cJSON *result)
{
    ngx_uint_t  changed;

    changed = 0;

    return ngx_http_mcp_jsonrpc_tools(result, ngx_http_mcp_proxy_learn_tool,
                                      pctx, &changed);
}


static ngx_int_t
ngx_http_mcp_proxy_learn_tool(void *data, cJSON *tool, ngx_str_t *name)
{
    ngx_http_mcp_proxy_ctx_t *pctx = data;

    ngx_str_t            input, output;
    ngx_http_request_t  *r;

    r = pctx->ctx->request;

    if (ngx_http_mcp_proxy_learn_schema(r->pool, tool, "inputSchema", &input)
        != NGX_OK
        || ngx_http_mcp_proxy_learn_schema(r->pool, tool, "outputSchema",
                                           &output)
           != NGX_OK)
    {
        return NGX_ERROR;
    }

    if (ngx_http_mcp_tools_learn(pctx->ctx->conf->zone,
                                 &pctx->conf->tools_key, name, &input,
                                 &output)
        != NGX_OK)
    {
        ngx_log_error(NGX_LOG_INFO, r->connection->log, 0,
                      "mcp: no room in the zone for the tools the "
                      "upstream lists, their calls are not checked");
        return NGX_DONE;
    }

    return NGX_OK;
}


/* a tool's schema as JSON text; none (or no object) is empty */

static ngx_int_t
ngx_http_mcp_proxy_learn_schema(ngx_pool_t *pool, cJSON *tool,
    const char *name, ngx_str_t *text)
{
    cJSON  *schema;

    ngx_str_null(text);

    schema = cJSON_GetObjectItemCaseSensitive(tool, name);

    if (!cJSON_IsObject(schema)) {
        return NGX_OK;
    }

    text->data = ngx_http_mcp_json_print(pool, schema, &text->len);

    return (text->data != NULL) ? NGX_OK : NGX_ERROR;
}


/*
 * A relayed tools/call result against the outputSchema its tool was
 * listed with: one that does not conform becomes an isError result that
 * names the fault, as for the module's own tools.
 */

static ngx_int_t
ngx_http_mcp_proxy_check_result(ngx_http_mcp_proxy_ctx_t *pctx,
    ngx_http_mcp_msg_t *msg, cJSON *result, ngx_uint_t *changed)
{
    cJSON               *name, *schema;
    ngx_int_t            rc;
    ngx_str_t            tool;
    ngx_uint_t           was;
    ngx_http_request_t  *r;

    name = cJSON_GetObjectItemCaseSensitive(msg->params, "name");

    if (!cJSON_IsString(name)) {
        return NGX_OK;
    }

    tool.data = (u_char *) name->valuestring;
    tool.len = ngx_strlen(tool.data);

    schema = ngx_http_mcp_proxy_schema(pctx, &tool, 1);

    if (schema == NULL) {
        return NGX_OK;
    }

    r = pctx->ctx->request;
    was = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(result, "isError"));

    rc = ngx_http_mcp_output_conform(r->pool, r->connection->log, &tool,
                                     schema, NULL, result,
                                     ngx_http_mcp_hooks.format_assert(
                                         r->loc_conf));
    cJSON_Delete(schema);

    if (!was
        && cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(result, "isError")))
    {
        *changed = 1;
    }

    return rc;
}


/*
 * The inputSchema (output 0) or outputSchema a tool was last listed
 * with, parsed; NULL when none is known or declared.
 */

static cJSON *
ngx_http_mcp_proxy_schema(ngx_http_mcp_proxy_ctx_t *pctx, ngx_str_t *tool,
    ngx_uint_t output)
{
    cJSON               *schema;
    ngx_str_t            input, out, *text;
    const char          *error;
    ngx_http_request_t  *r;

    r = pctx->ctx->request;

    if (ngx_http_mcp_tools_schemas(pctx->ctx->conf->zone,
                                   &pctx->conf->tools_key, tool, r->pool,
                                   &input, &out)
        != NGX_OK)
    {
        ngx_log_debug1(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                       "mcp proxy: tool \"%V\" not listed yet, unchecked",
                       tool);
        return NULL;
    }

    text = output ? &out : &input;

    if (text->len == 0) {
        return NULL;
    }

    /* the gateway printed it: it parses, but for a lack of memory */
    if (ngx_http_mcp_json_parse(r->pool, text->data, text->len, NULL,
                                &schema, &error)
        != NGX_OK)
    {
        return NULL;
    }

    return schema;
}


static ngx_uint_t
ngx_http_mcp_proxy_is(ngx_http_mcp_msg_t *msg, const char *method,
    size_t len)
{
    return msg->method.len == len
           && ngx_strncmp(msg->method.data, method, len) == 0;
}


/*
 * Whether the tools a list shows are kept: for the checks, and on a
 * stdio location for its 2026-07-28 calls' Mcp-Param-* headers
 */

static ngx_uint_t
ngx_http_mcp_proxy_learns(ngx_http_mcp_proxy_ctx_t *pctx)
{
    return pctx->conf->check_arguments || pctx->conf->check_results
           || pctx->ctx->conf->stdio;
}
