
/*
 * $mcp_* variables: MCP facts for the rest of nginx (log_format, map,
 * limit_req_zone keys, if).  A POST's body is parsed in the rewrite
 * phase, so they are there from that phase on.  Of a batch, they tell
 * the first message.
 *
 * A stateless (2026-07-28) request says its method and name in the
 * Mcp-Method and Mcp-Name headers too, so that nginx can route on them
 * without the body; the edge refuses the request (-32020) when the body
 * says otherwise.  Until the body is parsed, and wherever nobody parses
 * it (a location without "mcp"), $mcp_method and $mcp_name are those
 * headers: in the server's rewrite phase, in a map, in proxy_cache_key.
 *
 * The audit ones tell every message of a batch, in its order, joined by
 * commas ("-" for a message without one): its tool, how its call ended,
 * its error code, a digest of its arguments.  A call takes its message
 * away and may end after the POST, so the names and digests are copied
 * when the body is parsed, the outcomes as each call ends.
 */


#include "ngx_http_mcp_edge.h"
#include "ngx_http_mcp_json.h"
#include "ngx_http_mcp_jsonrpc.h"
#include "ngx_http_mcp_jwt.h"
#include "ngx_http_mcp_store.h"
#include "ngx_http_mcp_call.h"
#include "ngx_http_mcp_core.h"


#define NGX_HTTP_MCP_DIGEST_LEN  32         /* SHA-256 */


typedef enum {
    NGX_HTTP_MCP_VAR_METHOD = 0,
    NGX_HTTP_MCP_VAR_NAME,
    NGX_HTTP_MCP_VAR_TOOL,
    NGX_HTTP_MCP_VAR_SESSION_ID,
    NGX_HTTP_MCP_VAR_REQUEST_ID,
    NGX_HTTP_MCP_VAR_PROTOCOL_VERSION,
    NGX_HTTP_MCP_VAR_CLIENT_NAME,
    NGX_HTTP_MCP_VAR_TOOLS,
    NGX_HTTP_MCP_VAR_OUTCOME,
    NGX_HTTP_MCP_VAR_ERROR_CODE,
    NGX_HTTP_MCP_VAR_DIGEST,
    NGX_HTTP_MCP_VAR_ARGUMENTS,
    NGX_HTTP_MCP_VAR_TRACEPARENT,
    NGX_HTTP_MCP_VAR_TRACESTATE,
    NGX_HTTP_MCP_VAR_BAGGAGE
} ngx_http_mcp_var_e;


static ngx_int_t ngx_http_mcp_variable(ngx_http_request_t *r,
    ngx_http_variable_value_t *v, uintptr_t data);
static ngx_uint_t ngx_http_mcp_variable_unsafe(ngx_str_t *value);
static ngx_http_mcp_msg_t *ngx_http_mcp_variable_msg(ngx_http_mcp_ctx_t *ctx);
static ngx_int_t ngx_http_mcp_variable_tool(ngx_http_mcp_msg_t *msg,
    ngx_str_t *value);
static void ngx_http_mcp_variable_name(ngx_http_mcp_msg_t *msg,
    ngx_str_t *value);
static void ngx_http_mcp_variable_header(ngx_http_request_t *r,
    ngx_http_mcp_ctx_t *ctx, ngx_uint_t which, ngx_str_t *value);
static ngx_int_t ngx_http_mcp_variable_client_name(ngx_http_request_t *r,
    ngx_http_mcp_ctx_t *ctx, ngx_str_t *value);
static ngx_int_t ngx_http_mcp_variable_outcomes(ngx_http_request_t *r,
    ngx_http_mcp_ctx_t *ctx, ngx_uint_t codes, ngx_str_t *value);
static ngx_uint_t ngx_http_mcp_variable_answered(ngx_http_mcp_msg_t *msg);
static ngx_int_t ngx_http_mcp_variables_capture_all(ngx_http_mcp_ctx_t *ctx);
static ngx_int_t ngx_http_mcp_variables_digests(ngx_http_mcp_ctx_t *ctx);
static ngx_int_t ngx_http_mcp_variables_arguments(ngx_http_mcp_ctx_t *ctx);


static ngx_http_variable_t  ngx_http_mcp_vars[] = {

    { ngx_string("mcp_method"), NULL, ngx_http_mcp_variable,
      NGX_HTTP_MCP_VAR_METHOD, NGX_HTTP_VAR_NOCACHEABLE, 0 },

    { ngx_string("mcp_name"), NULL, ngx_http_mcp_variable,
      NGX_HTTP_MCP_VAR_NAME, NGX_HTTP_VAR_NOCACHEABLE, 0 },

    { ngx_string("mcp_tool"), NULL, ngx_http_mcp_variable,
      NGX_HTTP_MCP_VAR_TOOL, NGX_HTTP_VAR_NOCACHEABLE, 0 },

    { ngx_string("mcp_session_id"), NULL, ngx_http_mcp_variable,
      NGX_HTTP_MCP_VAR_SESSION_ID, NGX_HTTP_VAR_NOCACHEABLE, 0 },

    { ngx_string("mcp_request_id"), NULL, ngx_http_mcp_variable,
      NGX_HTTP_MCP_VAR_REQUEST_ID, NGX_HTTP_VAR_NOCACHEABLE, 0 },

    { ngx_string("mcp_protocol_version"), NULL, ngx_http_mcp_variable,
      NGX_HTTP_MCP_VAR_PROTOCOL_VERSION, NGX_HTTP_VAR_NOCACHEABLE, 0 },

    { ngx_string("mcp_client_name"), NULL, ngx_http_mcp_variable,
      NGX_HTTP_MCP_VAR_CLIENT_NAME, NGX_HTTP_VAR_NOCACHEABLE, 0 },

    { ngx_string("mcp_tools"), NULL, ngx_http_mcp_variable,
      NGX_HTTP_MCP_VAR_TOOLS, NGX_HTTP_VAR_NOCACHEABLE, 0 },

    { ngx_string("mcp_outcome"), NULL, ngx_http_mcp_variable,
      NGX_HTTP_MCP_VAR_OUTCOME, NGX_HTTP_VAR_NOCACHEABLE, 0 },

    { ngx_string("mcp_error_code"), NULL, ngx_http_mcp_variable,
      NGX_HTTP_MCP_VAR_ERROR_CODE, NGX_HTTP_VAR_NOCACHEABLE, 0 },

    { ngx_string("mcp_arguments_digest"), NULL, ngx_http_mcp_variable,
      NGX_HTTP_MCP_VAR_DIGEST, NGX_HTTP_VAR_NOCACHEABLE, 0 },

    { ngx_string("mcp_arguments"), NULL, ngx_http_mcp_variable,
      NGX_HTTP_MCP_VAR_ARGUMENTS, NGX_HTTP_VAR_NOCACHEABLE, 0 },

    { ngx_string("mcp_traceparent"), NULL, ngx_http_mcp_variable,
      NGX_HTTP_MCP_VAR_TRACEPARENT, NGX_HTTP_VAR_NOCACHEABLE, 0 },

    { ngx_string("mcp_tracestate"), NULL, ngx_http_mcp_variable,
      NGX_HTTP_MCP_VAR_TRACESTATE, NGX_HTTP_VAR_NOCACHEABLE, 0 },

    { ngx_string("mcp_baggage"), NULL, ngx_http_mcp_variable,
      NGX_HTTP_MCP_VAR_BAGGAGE, NGX_HTTP_VAR_NOCACHEABLE, 0 },

      ngx_http_null_variable
};


ngx_int_t
ngx_http_mcp_add_variables(ngx_conf_t *cf)
{
    return ngx_http_mcp_conf_add_variables(cf, ngx_http_mcp_vars);
}


static ngx_int_t
ngx_http_mcp_variable(ngx_http_request_t *r, ngx_http_variable_value_t *v,
    uintptr_t data)
{
    ngx_int_t            rc;
    ngx_str_t            value;
    ngx_table_elt_t     *h;
    ngx_http_request_t  *mr;
    ngx_http_mcp_ctx_t  *ctx;

    /* a subrequest's are its call's, or its own when it is a backend's */
    mr = ngx_http_mcp_message_request(r);
    ctx = ngx_http_get_module_ctx(mr, ngx_http_mcp_module);

    ngx_str_null(&value);
    rc = NGX_OK;

    switch (data) {

    case NGX_HTTP_MCP_VAR_METHOD:
        if (ctx != NULL && ctx->parsed) {
            value = ctx->var_method;
            break;
        }

        ngx_http_mcp_variable_header(mr, ctx, NGX_HTTP_MCP_HDR_METHOD,
                                     &value);
        break;

    case NGX_HTTP_MCP_VAR_NAME:
        if (ctx != NULL && ctx->parsed) {
            value = ctx->var_name;
            break;
        }

        ngx_http_mcp_variable_header(mr, ctx, NGX_HTTP_MCP_HDR_NAME,
                                     &value);
        break;

    case NGX_HTTP_MCP_VAR_TOOL:
        if (ctx != NULL) {
            value = ctx->var_tool;
        }

        break;

    case NGX_HTTP_MCP_VAR_SESSION_ID:
        if (ctx != NULL && ctx->new_session.len) {
            value = ctx->new_session;
            break;
        }

        h = ngx_http_mcp_header_in(mr, "mcp-session-id",
                                   sizeof("mcp-session-id") - 1);
        if (h != NULL) {
            value = h->value;
        }

        break;

    case NGX_HTTP_MCP_VAR_REQUEST_ID:
        if (ctx != NULL) {
            value = ctx->var_id;
        }

        break;

    case NGX_HTTP_MCP_VAR_PROTOCOL_VERSION:
        if (ctx != NULL && ctx->rctx.version) {
            value.data = (u_char *) ngx_http_mcp_version_name(
                                                        ctx->rctx.version);
            value.len = ngx_strlen(value.data);
            break;
        }

        h = ngx_http_mcp_header_in(mr, "mcp-protocol-version",
                                   sizeof("mcp-protocol-version") - 1);
        if (h != NULL) {
            value = h->value;
        }

        break;

    case NGX_HTTP_MCP_VAR_TOOLS:
        if (ctx != NULL) {
            value = ctx->batch ? ctx->var_tools : ctx->var_tool;
        }

        break;

    case NGX_HTTP_MCP_VAR_OUTCOME:
    case NGX_HTTP_MCP_VAR_ERROR_CODE:
        if (ctx != NULL) {
            rc = ngx_http_mcp_variable_outcomes(r, ctx,
                                    data == NGX_HTTP_MCP_VAR_ERROR_CODE,
                                    &value);
        }

        break;

    case NGX_HTTP_MCP_VAR_DIGEST:
        if (ctx != NULL) {
            value = ctx->var_digests;
        }

        break;

    case NGX_HTTP_MCP_VAR_ARGUMENTS:
        if (ctx != NULL) {
            value = ctx->var_arguments;
        }

        break;

    /* the trace the module took and passes on, never a malformed one */
    case NGX_HTTP_MCP_VAR_TRACEPARENT:
        if (ctx != NULL) {
            value = ctx->trace.traceparent;
        }

        break;

    case NGX_HTTP_MCP_VAR_TRACESTATE:
        if (ctx != NULL) {
            value = ctx->trace.tracestate;
        }

        break;

    case NGX_HTTP_MCP_VAR_BAGGAGE:
        if (ctx != NULL) {
            value = ctx->trace.baggage;
        }

        break;

    default: /* NGX_HTTP_MCP_VAR_CLIENT_NAME */
        rc = ngx_http_mcp_variable_client_name(mr, ctx, &value);
        break;
    }

    if (rc != NGX_OK) {
        return rc;
    }

    if (value.len == 0 || ngx_http_mcp_variable_unsafe(&value)) {
        v->not_found = 1;
        return NGX_OK;
    }

    v->data = value.data;
    v->len = value.len;
    v->valid = 1;
    v->no_cacheable = 1;
    v->not_found = 0;

    return NGX_OK;
}


/*
 * Whether a value holds a control character.  JSON strings and Base64
 * can carry CR and LF where no raw header can, and a variable may end
 * in proxy_set_header or add_header (where nginx writes it as it is),
 * or in a location where nobody compared it with the body: such a value
 * says nothing.
 */

static ngx_uint_t
ngx_http_mcp_variable_unsafe(ngx_str_t *value)
{
    u_char  *p, *end;

    end = value->data + value->len;

    for (p = value->data; p < end; p++) {
        if (*p < 0x20 || *p == 0x7f) {
            return 1;
        }
    }

    return 0;
}


/* the first request of the body, else its first message */

static ngx_http_mcp_msg_t *
ngx_http_mcp_variable_msg(ngx_http_mcp_ctx_t *ctx)
{
    ngx_uint_t           i;
    ngx_http_mcp_msg_t  *msg;

    if (!ctx->parsed || ctx->msgs.nelts == 0) {
        return NULL;
    }

    msg = ctx->msgs.elts;

    for (i = 0; i < ctx->msgs.nelts; i++) {
        if (msg[i].type == NGX_HTTP_MCP_MSG_REQUEST) {
            return &msg[i];
        }
    }

    return &msg[0];
}


/* tools/call and prompts/get: the name; resources/read: the URI */

static ngx_int_t
ngx_http_mcp_variable_tool(ngx_http_mcp_msg_t *msg, ngx_str_t *value)
{
    cJSON       *item;
    const char  *key;

    if (msg == NULL || msg->method.len == 0) {
        return NGX_OK;
    }

    if (ngx_strcmp(msg->method.data, "tools/call") == 0
        || ngx_strcmp(msg->method.data, "prompts/get") == 0)
    {
        key = "name";

    } else if (ngx_strcmp(msg->method.data, "resources/read") == 0
               || ngx_strcmp(msg->method.data, "resources/subscribe") == 0
               || ngx_strcmp(msg->method.data, "resources/unsubscribe") == 0)
    {
        key = "uri";

    } else {
        return NGX_OK;
    }

    item = ngx_http_mcp_json_get(msg->params, key);

    if (cJSON_IsString(item)) {
        value->data = (u_char *) item->valuestring;
        value->len = ngx_strlen(item->valuestring);
    }

    return NGX_OK;
}


/*
 * What Mcp-Name says: the name, URI or task id of the methods that have
 * one; else what $mcp_tool says (resources/subscribe of a session).
 */

static void
ngx_http_mcp_variable_name(ngx_http_mcp_msg_t *msg, ngx_str_t *value)
{
    cJSON       *item;
    const char  *param;

    param = ngx_http_mcp_jsonrpc_name_param(&msg->method);

    if (param == NULL) {
        (void) ngx_http_mcp_variable_tool(msg, value);
        return;
    }

    item = ngx_http_mcp_json_get(msg->params, param);

    if (cJSON_IsString(item)) {
        value->data = (u_char *) item->valuestring;
        value->len = ngx_strlen(item->valuestring);
    }
}


/*
 * A stateless request's Mcp-Method or Mcp-Name, before or without its
 * body.  Two of them say nothing: the request is refused anyway, and
 * nginx must not route on either.  A name sent as "=?base64?...?=" is
 * the name decoded, what the body will say; one that does not decode
 * says nothing either, nor does Mcp-Name beside a method that has no
 * name.
 */

static void
ngx_http_mcp_variable_header(ngx_http_request_t *r, ngx_http_mcp_ctx_t *ctx,
    ngx_uint_t which, ngx_str_t *value)
{
    ngx_str_t                said;
    ngx_table_elt_t         *h;
    ngx_http_mcp_headers_t   read, *hs;

    if (r->method != NGX_HTTP_POST) {
        return;
    }

    /* read when the context was made; before that, read here */
    hs = (ctx != NULL) ? &ctx->headers : &read;

    if (ctx == NULL) {
        ngx_http_mcp_headers_read(r, &read);
    }

    if (!ngx_http_mcp_stateless_request(hs)) {
        return;
    }

    h = (which == NGX_HTTP_MCP_HDR_METHOD) ? hs->method : hs->name;

    if (h == NULL || (hs->twice & which)) {
        return;
    }

    if (which == NGX_HTTP_MCP_HDR_METHOD) {
        *value = h->value;
        return;
    }

    /*
     * Only the methods that have a name have their Mcp-Name compared
     * with the body: on another (tools/list) the header is not looked
     * at, and the body's $mcp_name will not be what it says.
     */

    if (hs->method == NULL
        || (hs->twice & NGX_HTTP_MCP_HDR_METHOD)
        || ngx_http_mcp_jsonrpc_name_param(&hs->method->value) == NULL)
    {
        return;
    }

    if (ngx_http_mcp_headers_name(r->pool, hs, &said) == NGX_OK) {
        *value = said;
    }
}


/*
 * Copies what the variables tell of the first message into the request's
 * pool: a call takes its message away when it starts.
 */

ngx_int_t
ngx_http_mcp_variables_capture(ngx_http_mcp_ctx_t *ctx)
{
    cJSON               *info, *name;
    ngx_str_t            s;
    ngx_pool_t          *pool;
    ngx_http_mcp_msg_t  *msg;

    msg = ngx_http_mcp_variable_msg(ctx);

    if (msg == NULL) {
        return NGX_OK;
    }

    pool = ctx->request->pool;

    ctx->var_method.len = msg->method.len;
    ctx->var_method.data = ngx_pstrdup(pool, &msg->method);

    ngx_str_null(&s);
    (void) ngx_http_mcp_variable_tool(msg, &s);

    ctx->var_tool.len = s.len;
    ctx->var_tool.data = s.len ? ngx_pstrdup(pool, &s) : NULL;

    ngx_str_null(&s);
    ngx_http_mcp_variable_name(msg, &s);

    ctx->var_name.len = s.len;
    ctx->var_name.data = s.len ? ngx_pstrdup(pool, &s) : NULL;

    ngx_str_null(&s);

    if (cJSON_IsString(msg->id) || cJSON_IsRaw(msg->id)) {
        s.data = (u_char *) msg->id->valuestring;
        s.len = ngx_strlen(s.data);
    }

    ctx->var_id.len = s.len;
    ctx->var_id.data = s.len ? ngx_pstrdup(pool, &s) : NULL;

    ngx_str_null(&s);

    if (msg->method.len && ngx_strcmp(msg->method.data, "initialize") == 0) {
        info = ngx_http_mcp_json_get(msg->params, "clientInfo");
        name = ngx_http_mcp_json_get(info, "name");

        if (cJSON_IsString(name)) {
            s.data = (u_char *) name->valuestring;
            s.len = ngx_strlen(s.data);
        }
    }

    ctx->var_client.len = s.len;
    ctx->var_client.data = s.len ? ngx_pstrdup(pool, &s) : NULL;

    if ((msg->method.len && ctx->var_method.data == NULL)
        || (ctx->var_tool.len && ctx->var_tool.data == NULL)
        || (ctx->var_name.len && ctx->var_name.data == NULL)
        || (ctx->var_id.len && ctx->var_id.data == NULL)
        || (ctx->var_client.len && ctx->var_client.data == NULL))
    {
        return NGX_ERROR;
    }

    return ngx_http_mcp_variables_capture_all(ctx);
}


/*
 * What every message tells: a batch's tools; the arguments' digests and
 * text only when the configuration names them (printing and hashing
 * every call's arguments is not free).
 */

static ngx_int_t
ngx_http_mcp_variables_capture_all(ngx_http_mcp_ctx_t *ctx)
{
    u_char                    *p;
    size_t                     len;
    ngx_str_t                  s;
    ngx_uint_t                 i;
    ngx_http_mcp_msg_t        *msg;
    ngx_http_mcp_main_conf_t  *mmcf;

    mmcf = ngx_http_get_module_main_conf(ctx->request, ngx_http_mcp_module);

    if (((mmcf->audit & NGX_HTTP_MCP_AUDIT_DIGEST)
         && ngx_http_mcp_variables_digests(ctx) != NGX_OK)
        || ((mmcf->audit & NGX_HTTP_MCP_AUDIT_ARGUMENTS)
            && ngx_http_mcp_variables_arguments(ctx) != NGX_OK))
    {
        return NGX_ERROR;
    }

    if (!ctx->batch) {
        /* $mcp_tools is $mcp_tool */
        return NGX_OK;
    }

    msg = ctx->msgs.elts;
    len = 0;

    for (i = 0; i < ctx->msgs.nelts; i++) {
        ngx_str_null(&s);
        (void) ngx_http_mcp_variable_tool(&msg[i], &s);
        len += (s.len ? s.len : 1) + 1;
    }

    p = ngx_pnalloc(ctx->request->pool, len);
    if (p == NULL) {
        return NGX_ERROR;
    }

    ctx->var_tools.data = p;

    for (i = 0; i < ctx->msgs.nelts; i++) {

        if (!ngx_http_mcp_variable_answered(&msg[i])) {
            continue;
        }

        if (p != ctx->var_tools.data) {
            *p++ = ',';
        }

        ngx_str_null(&s);
        (void) ngx_http_mcp_variable_tool(&msg[i], &s);

        p = s.len ? ngx_cpymem(p, s.data, s.len) : ngx_cpymem(p, "-", 1);
    }

    ctx->var_tools.len = p - ctx->var_tools.data;

    return NGX_OK;
}


/* a message that gets a reply: a request, or one that is no message */

static ngx_uint_t
ngx_http_mcp_variable_answered(ngx_http_mcp_msg_t *msg)
{
    return msg->type == NGX_HTTP_MCP_MSG_REQUEST
           || msg->type == NGX_HTTP_MCP_MSG_INVALID;
}


/* SHA-256 of each request's arguments as JSON text, in hex */

static ngx_int_t
ngx_http_mcp_variables_digests(ngx_http_mcp_ctx_t *ctx)
{
    u_char              *p, *text;
    u_char               digest[NGX_HTTP_MCP_DIGEST_LEN];
    size_t               len;
    cJSON               *args;
    ngx_uint_t           i, any;
    ngx_http_mcp_msg_t  *msg;

    msg = ctx->msgs.elts;

    p = ngx_pnalloc(ctx->request->pool,
                    ctx->msgs.nelts * (2 * NGX_HTTP_MCP_DIGEST_LEN + 1));
    if (p == NULL) {
        return NGX_ERROR;
    }

    ctx->var_digests.data = p;
    any = 0;

    for (i = 0; i < ctx->msgs.nelts; i++) {

        if (!ngx_http_mcp_variable_answered(&msg[i])) {
            continue;
        }

        if (p != ctx->var_digests.data) {
            *p++ = ',';
        }

        args = ngx_http_mcp_json_get(msg[i].params, "arguments");

        if (args == NULL) {
            *p++ = '-';
            continue;
        }

        text = ngx_http_mcp_json_print(ctx->request->pool, args, &len);

        if (text == NULL || ngx_http_mcp_sha256(text, len, digest) != NGX_OK)
        {
            return NGX_ERROR;
        }

        p = ngx_hex_dump(p, digest, NGX_HTTP_MCP_DIGEST_LEN);
        any = 1;
    }

    ctx->var_digests.len = any ? (size_t) (p - ctx->var_digests.data) : 0;

    return NGX_OK;
}


/* the arguments themselves: an object, or of a batch an array */

static ngx_int_t
ngx_http_mcp_variables_arguments(ngx_http_mcp_ctx_t *ctx)
{
    cJSON               *list, *args, *item;
    ngx_uint_t           i;
    ngx_http_mcp_msg_t  *msg;

    msg = ctx->msgs.elts;

    if (!ctx->batch) {
        args = ngx_http_mcp_json_get(msg[0].params, "arguments");

        if (args != NULL) {
            ctx->var_arguments.data = ngx_http_mcp_json_print(
                                          ctx->request->pool, args,
                                          &ctx->var_arguments.len);
            if (ctx->var_arguments.data == NULL) {
                return NGX_ERROR;
            }
        }

        return NGX_OK;
    }

    list = cJSON_CreateArray();
    if (list == NULL) {
        return NGX_ERROR;
    }

    for (i = 0; i < ctx->msgs.nelts; i++) {

        if (!ngx_http_mcp_variable_answered(&msg[i])) {
            continue;
        }

        args = ngx_http_mcp_json_get(msg[i].params, "arguments");
        item = (args != NULL) ? cJSON_Duplicate(args, 1) : cJSON_CreateNull();

        if (item == NULL || !cJSON_AddItemToArray(list, item)) {
            cJSON_Delete(item);
            cJSON_Delete(list);
            return NGX_ERROR;
        }
    }

    ctx->var_arguments.data = ngx_http_mcp_json_print(ctx->request->pool,
                                                      list,
                                                      &ctx->var_arguments.len);
    cJSON_Delete(list);

    return (ctx->var_arguments.data != NULL) ? NGX_OK : NGX_ERROR;
}


/*
 * $mcp_outcome (ok, is_error, error) or $mcp_error_code of every message
 * that gets a reply.  When none has one, the POST was refused whole (a
 * parse error, an unknown session, a missing token): its error is the
 * outcome.
 */

static ngx_int_t
ngx_http_mcp_variable_outcomes(ngx_http_request_t *r,
    ngx_http_mcp_ctx_t *ctx, ngx_uint_t codes, ngx_str_t *value)
{
    u_char              *p, *start;
    ngx_uint_t           i, any;
    ngx_http_mcp_msg_t  *msg;

    static ngx_str_t  names[] = {
        ngx_string("-"),
        ngx_string("ok"),
        ngx_string("is_error"),
        ngx_string("error")
    };

    msg = ctx->msgs.elts;

    start = ngx_pnalloc(r->pool,
                        (ctx->msgs.nelts + 1) * (NGX_INT_T_LEN + 1));
    if (start == NULL) {
        return NGX_ERROR;
    }

    p = start;
    any = 0;

    for (i = 0; i < ctx->msgs.nelts; i++) {

        if (!ngx_http_mcp_variable_answered(&msg[i])) {
            continue;
        }

        if (msg[i].outcome == NGX_HTTP_MCP_OUTCOME_NONE
            && msg[i].reply != NULL)
        {
            ngx_http_mcp_jsonrpc_outcome(&msg[i], msg[i].reply);
        }

        if (p != start) {
            *p++ = ',';
        }

        if (msg[i].outcome != NGX_HTTP_MCP_OUTCOME_NONE) {
            any = 1;
        }

        if (!codes) {
            p = ngx_cpymem(p, names[msg[i].outcome].data,
                           names[msg[i].outcome].len);

        } else if (msg[i].outcome == NGX_HTTP_MCP_OUTCOME_ERROR) {
            p = ngx_sprintf(p, "%i", msg[i].code);

        } else {
            *p++ = '-';
        }
    }

    if (!any) {
        if (ctx->var_code == 0) {
            return NGX_OK;
        }

        p = codes ? ngx_sprintf(start, "%i", ctx->var_code)
                  : ngx_cpymem(start, "error", sizeof("error") - 1);
    }

    value->data = start;
    value->len = p - start;

    return NGX_OK;
}


/* the variables that cost a call something when nobody reads them */

void
ngx_http_mcp_variables_used(ngx_conf_t *cf)
{
    ngx_uint_t                  i, j;
    ngx_http_variable_t        *v;
    ngx_http_mcp_main_conf_t   *mmcf;
    ngx_http_core_main_conf_t  *cmcf;

    static struct {
        ngx_str_t               name;
        ngx_uint_t              flag;
    } costly[] = {
        { ngx_string("mcp_arguments_digest"), NGX_HTTP_MCP_AUDIT_DIGEST },
        { ngx_string("mcp_arguments"), NGX_HTTP_MCP_AUDIT_ARGUMENTS },
        /* mcp_pass reads the replies it relays for them */
        { ngx_string("mcp_outcome"), NGX_HTTP_MCP_AUDIT_OUTCOME },
        { ngx_string("mcp_error_code"), NGX_HTTP_MCP_AUDIT_OUTCOME }
    };

    cmcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_core_module);
    mmcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_mcp_module);

    v = cmcf->variables.elts;

    for (i = 0; i < cmcf->variables.nelts; i++) {
        for (j = 0; j < sizeof(costly) / sizeof(costly[0]); j++) {

            if (v[i].name.len == costly[j].name.len
                && ngx_strncasecmp(v[i].name.data, costly[j].name.data,
                                   costly[j].name.len)
                   == 0)
            {
                mmcf->audit |= costly[j].flag;
            }
        }
    }
}


/* from initialize's clientInfo, else from the session */

static ngx_int_t
ngx_http_mcp_variable_client_name(ngx_http_request_t *r,
    ngx_http_mcp_ctx_t *ctx, ngx_str_t *value)
{
    ngx_table_elt_t          *h;
    ngx_http_mcp_reqctx_t     rctx;
    ngx_http_mcp_loc_conf_t  *mlcf;

    if (ctx != NULL && ctx->rctx.client_name.len) {
        *value = ctx->rctx.client_name;
        return NGX_OK;
    }

    if (ctx != NULL && ctx->var_client.len) {
        *value = ctx->var_client;
        return NGX_OK;
    }

    /* before the content handler looked: ask the zone */
    mlcf = ngx_http_get_module_loc_conf(r, ngx_http_mcp_module);

    h = ngx_http_mcp_header_in(r, "mcp-session-id",
                               sizeof("mcp-session-id") - 1);

    if (h == NULL || mlcf->zone == NULL) {
        return NGX_OK;
    }

    ngx_memzero(&rctx, sizeof(ngx_http_mcp_reqctx_t));

    rctx.client_name.data = ngx_pnalloc(r->pool, NGX_HTTP_MCP_CLIENT_NAME_LEN);
    if (rctx.client_name.data == NULL) {
        return NGX_ERROR;
    }

    if (ngx_http_mcp_session_peek(mlcf->zone, &h->value, &rctx) == NGX_OK) {
        *value = rctx.client_name;
    }

    return NGX_OK;
}
