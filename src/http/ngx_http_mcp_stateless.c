
/*
 * The HTTP edge of the stateless revision (2026-07-28): a request that
 * names such a version in MCP-Protocol-Version and carries no
 * Mcp-Session-Id is a whole conversation in itself.  Its params._meta
 * says who the client is and what it can do, and the standard headers
 * (Mcp-Method, Mcp-Name) must say what its body says, because nginx and
 * every proxy before us route on them without reading the body.
 *
 * The checks run in the spec's order, each refusal a JSON-RPC error that
 * echoes the request's id: an unknown version (-32022, with the ones we
 * speak), missing _meta keys (-32602), a version in _meta that differs
 * from the header's (-32020), headers that differ from the body
 * (-32020).  What passes fills the request context that a session would
 * fill for a 2025 client.
 */


#include "ngx_http_mcp_http.h"
#include "ngx_http_mcp_json.h"
#include "ngx_http_mcp_jsonrpc.h"
#include "ngx_http_mcp_param.h"
#include "ngx_http_mcp_store.h"
#include "ngx_http_mcp_call.h"


#define NGX_HTTP_MCP_META_PREFIX  "io.modelcontextprotocol/"


static ngx_int_t ngx_http_mcp_stateless_version(ngx_http_mcp_ctx_t *ctx,
    cJSON *id, ngx_uint_t *version, ngx_int_t *rc);
static ngx_int_t ngx_http_mcp_stateless_meta(ngx_http_mcp_ctx_t *ctx,
    ngx_http_mcp_msg_t *msg, ngx_uint_t version, ngx_int_t *rc);
static void ngx_http_mcp_stateless_meta_keys(cJSON *meta, cJSON **version,
    cJSON **caps, cJSON **level, cJSON **info);
static void ngx_http_mcp_stateless_caps(cJSON *caps,
    ngx_http_mcp_reqctx_t *rctx);
static ngx_int_t ngx_http_mcp_stateless_headers(ngx_http_mcp_ctx_t *ctx,
    ngx_http_mcp_msg_t *msg, ngx_int_t *rc);
static ngx_int_t ngx_http_mcp_stateless_params(ngx_http_request_t *r,
    ngx_http_mcp_msg_t *msg);
static ngx_int_t ngx_http_mcp_stateless_refuse(ngx_http_mcp_ctx_t *ctx,
    cJSON *id, ngx_uint_t status, ngx_int_t code, const char *message,
    cJSON *data, ngx_int_t *rc);
static ngx_uint_t ngx_http_mcp_header_is(ngx_str_t *said,
    const char *value, size_t len);


/*
 * Whether a POST is of the stateless revision, from its headers alone:
 * a version that is not one of the session-ful ones (a stateless one, or
 * one we do not know, answered with -32022 once the id is known) and no
 * session.  A 2025 client that names a version we do not speak keeps
 * its old answer: it sends Mcp-Session-Id, or no version at initialize.
 */

ngx_uint_t
ngx_http_mcp_stateless_request(ngx_http_mcp_headers_t *hs)
{
    ngx_uint_t  v;

    if (hs->version == NULL || hs->session != NULL) {
        return 0;
    }

    v = ngx_http_mcp_version_parse(&hs->version->value);

    return v == 0 || v >= NGX_HTTP_MCP_VSTATELESS;
}


/*
 * Checks a stateless POST's one message and fills ctx->rctx from it.
 * Returns NGX_OK, or NGX_DECLINED when the request was refused; *rc is
 * then the refusal's value for ngx_http_finalize_request().
 */

ngx_int_t
ngx_http_mcp_stateless_check(ngx_http_mcp_ctx_t *ctx, ngx_int_t *rc)
{
    ngx_uint_t           version;
    ngx_http_mcp_msg_t  *msg;

    msg = ctx->msgs.elts;

    if (ngx_http_mcp_stateless_version(ctx, ctx->batch ? NULL : msg[0].id,
                                       &version, rc)
        != NGX_OK)
    {
        return NGX_DECLINED;
    }

    if (ctx->batch) {
        return ngx_http_mcp_stateless_refuse(ctx, NULL, NGX_HTTP_BAD_REQUEST,
                   NGX_HTTP_MCP_INVALID_REQUEST,
                   "Invalid Request: a stateless request is one message, "
                   "not a batch", NULL, rc);
    }

    if (msg[0].type != NGX_HTTP_MCP_MSG_REQUEST) {
        /* nothing to answer: responses and notifications need a session */
        return ngx_http_mcp_stateless_refuse(ctx, msg[0].id,
                   NGX_HTTP_BAD_REQUEST, NGX_HTTP_MCP_INVALID_REQUEST,
                   msg[0].type == NGX_HTTP_MCP_MSG_INVALID
                   ? "Invalid Request"
                   : "Invalid Request: a stateless request must be a "
                     "JSON-RPC request", NULL, rc);
    }

    if (ngx_http_mcp_stateless_meta(ctx, &msg[0], version, rc) != NGX_OK
        || ngx_http_mcp_stateless_headers(ctx, &msg[0], rc) != NGX_OK)
    {
        return NGX_DECLINED;
    }

    if (ctx->headers.params
        && ngx_http_mcp_stateless_params(ctx->request, &msg[0]) != NGX_OK)
    {
        *rc = NGX_HTTP_INTERNAL_SERVER_ERROR;
        return NGX_DECLINED;
    }

    ngx_log_debug1(NGX_LOG_DEBUG_HTTP, ctx->request->connection->log, 0,
                   "mcp stateless request \"%V\"", &msg[0].method);

    return NGX_OK;
}


/*
 * The version comes first: one MCP-Protocol-Version header, naming a
 * version we speak (*version; else -32022 with the ones we do).  id: the
 * request's, NULL for a batch.
 */

static ngx_int_t
ngx_http_mcp_stateless_version(ngx_http_mcp_ctx_t *ctx, cJSON *id,
    ngx_uint_t *version, ngx_int_t *rc)
{
    cJSON            *data, *list;
    ngx_str_t         s;
    ngx_table_elt_t  *h;

    h = ctx->headers.version;

    if (ctx->headers.twice & NGX_HTTP_MCP_HDR_VERSION) {
        return ngx_http_mcp_stateless_refuse(ctx, id, NGX_HTTP_BAD_REQUEST,
                   NGX_HTTP_MCP_HEADER_MISMATCH,
                   "Header mismatch: MCP-Protocol-Version sent twice", NULL,
                   rc);
    }

    *version = ngx_http_mcp_version_parse(&h->value);

    if (*version != 0) {
        return NGX_OK;
    }

    /* the header's value, which is not NUL-terminated */
    s.len = h->value.len;
    s.data = ngx_pnalloc(ctx->request->pool, s.len + 1);

    if (s.data == NULL) {
        *rc = NGX_HTTP_INTERNAL_SERVER_ERROR;
        return NGX_DECLINED;
    }

    *ngx_cpymem(s.data, h->value.data, s.len) = '\0';

    data = cJSON_CreateObject();
    list = ngx_http_mcp_versions_json();

    if (data == NULL || list == NULL
        || !cJSON_AddItemToObject(data, "supported", list))
    {
        cJSON_Delete(list);
        cJSON_Delete(data);
        *rc = NGX_HTTP_INTERNAL_SERVER_ERROR;
        return NGX_DECLINED;
    }

    if (cJSON_AddStringToObject(data, "requested", (char *) s.data) == NULL) {
        cJSON_Delete(data);
        *rc = NGX_HTTP_INTERNAL_SERVER_ERROR;
        return NGX_DECLINED;
    }

    return ngx_http_mcp_stateless_refuse(ctx, id, NGX_HTTP_BAD_REQUEST,
               NGX_HTTP_MCP_UNSUPPORTED_VERSION,
               "Unsupported protocol version", data, rc);
}


/* the version, the client and its capabilities, from params._meta */

static ngx_int_t
ngx_http_mcp_stateless_meta(ngx_http_mcp_ctx_t *ctx, ngx_http_mcp_msg_t *msg,
    ngx_uint_t version, ngx_int_t *rc)
{
    cJSON                  *meta, *named, *caps, *info, *name, *level;
    ngx_http_mcp_reqctx_t  *rctx;

    meta = ngx_http_mcp_json_get(msg->params, "_meta");

    ngx_http_mcp_stateless_meta_keys(meta, &named, &caps, &level, &info);
    if (!cJSON_IsString(named) || !cJSON_IsObject(caps)) {
        return ngx_http_mcp_stateless_refuse(ctx, msg->id,
                   NGX_HTTP_BAD_REQUEST, NGX_HTTP_MCP_INVALID_PARAMS,
                   "Invalid params: _meta needs "
                   "io.modelcontextprotocol/protocolVersion and "
                   "io.modelcontextprotocol/clientCapabilities", NULL, rc);
    }

    /* the header named exactly this version's name */
    if (ngx_strcmp(named->valuestring, ngx_http_mcp_version_name(version))
        != 0)
    {
        return ngx_http_mcp_stateless_refuse(ctx, msg->id,
                   NGX_HTTP_BAD_REQUEST, NGX_HTTP_MCP_HEADER_MISMATCH,
                   "Header mismatch: MCP-Protocol-Version differs from "
                   "_meta's protocolVersion", NULL, rc);
    }

    rctx = &ctx->rctx;

    rctx->version = version;
    ngx_http_mcp_stateless_caps(caps, rctx);

    /* no level, no log messages: the client did not ask for them */
    rctx->log_level = cJSON_IsString(level)
                      ? ngx_http_mcp_log_level_parse(level->valuestring)
                      : NGX_HTTP_MCP_LOG_NONE;

    name = ngx_http_mcp_json_get(info, "name");

    if (cJSON_IsString(name)) {
        /* a copy: the call takes the message, and $mcp_client_name is
           read in the log phase, after the call is gone */
        rctx->client_name.len = ngx_min(ngx_strlen(name->valuestring),
                                        NGX_HTTP_MCP_CLIENT_NAME_LEN);
        rctx->client_name.data = ngx_pnalloc(ctx->request->pool,
                                             rctx->client_name.len);
        if (rctx->client_name.data == NULL) {
            *rc = NGX_HTTP_INTERNAL_SERVER_ERROR;
            return NGX_DECLINED;
        }

        ngx_memcpy(rctx->client_name.data, name->valuestring,
                   rctx->client_name.len);
    }

    return NGX_OK;
}


/*
 * The four _meta keys the edge reads, in one walk of _meta rather than a
 * lookup each: their names share a 24-byte prefix, which made every
 * lookup compare it again for each member.  The scan makes a name
 * written plainly point at its literal (cJSON_StringIsConst): the two
 * every request has are found by address first; the others, and names
 * written with escapes (copies), are compared as text.  A body has no
 * two members of one name (the strict scan refused it), so the first
 * match is the one.
 */

static void
ngx_http_mcp_stateless_meta_keys(cJSON *meta, cJSON **version, cJSON **caps,
    cJSON **level, cJSON **info)
{
    char   *key;
    cJSON  *item;

    *version = NULL;
    *caps = NULL;
    *level = NULL;
    *info = NULL;

    if (!cJSON_IsObject(meta)) {
        return;
    }

    for (item = meta->child; item != NULL; item = item->next) {
        key = item->string;

        if (key == ngx_http_mcp_json_meta_version) {
            *version = item;
            continue;
        }

        if (key == ngx_http_mcp_json_meta_caps) {
            *caps = item;
            continue;
        }

        if (ngx_strncmp(key, NGX_HTTP_MCP_META_PREFIX,
                        sizeof(NGX_HTTP_MCP_META_PREFIX) - 1)
            != 0)
        {
            continue;
        }

        key += sizeof(NGX_HTTP_MCP_META_PREFIX) - 1;

        /* the first byte tells which to compare with */
        switch (key[0]) {

        case 'p':
            if (ngx_strcmp(key, "protocolVersion") == 0) {
                *version = item;
            }
            break;

        case 'c':
            if (ngx_strcmp(key, "clientCapabilities") == 0) {
                *caps = item;

            } else if (ngx_strcmp(key, "clientInfo") == 0) {
                *info = item;
            }
            break;

        case 'l':
            if (ngx_strcmp(key, "logLevel") == 0) {
                *level = item;
            }
            break;
        }
    }
}


/* what the client can do, from its capabilities: one walk of them */

static void
ngx_http_mcp_stateless_caps(cJSON *caps, ngx_http_mcp_reqctx_t *rctx)
{
    cJSON       *item;
    ngx_uint_t   modes;

    rctx->sampling = 0;
    rctx->elicitation = 0;
    rctx->elicitation_form = 0;
    rctx->elicitation_url = 0;
    rctx->roots = 0;
    rctx->tasks = 0;

    for (item = caps->child; item != NULL; item = item->next) {

        if (!cJSON_IsObject(item)) {
            continue;
        }

        if (ngx_strcmp(item->string, "sampling") == 0) {
            rctx->sampling = 1;

        } else if (ngx_strcmp(item->string, "elicitation") == 0) {
            modes = ngx_http_mcp_elicitation_modes(item);
            rctx->elicitation = (modes != 0);
            rctx->elicitation_form = (modes & NGX_HTTP_MCP_ELICIT_FORM)
                                     ? 1 : 0;
            rctx->elicitation_url = (modes & NGX_HTTP_MCP_ELICIT_URL)
                                    ? 1 : 0;

        } else if (ngx_strcmp(item->string, "roots") == 0) {
            rctx->roots = 1;

        } else if (ngx_strcmp(item->string, "extensions") == 0) {
            rctx->tasks = cJSON_IsObject(ngx_http_mcp_json_get(
                              item, NGX_HTTP_MCP_META_PREFIX "tasks"));
        }
    }
}


/*
 * Mcp-Method must be there and be the body's method; Mcp-Name must be
 * there and be the body's name, URI or task id for the methods that have
 * one.  Values compare exactly: header names are case-insensitive,
 * values are not.  A name a header cannot carry as it is (non-ASCII,
 * control characters, white space at its ends, or text that looks like
 * the wrapper) comes as "=?base64?<payload>?=", decoded before the
 * comparison as the spec says, strictly, as Mcp-Param-* values are; a
 * literal one with a control character is refused, even the body's.
 */

static ngx_int_t
ngx_http_mcp_stateless_headers(ngx_http_mcp_ctx_t *ctx,
    ngx_http_mcp_msg_t *msg, ngx_int_t *rc)
{
    cJSON            *name;
    ngx_int_t         said_rc;
    ngx_str_t         said;
    const char       *param;
    ngx_table_elt_t  *h;

    h = ctx->headers.method;

    if (h == NULL
        || (ctx->headers.twice & NGX_HTTP_MCP_HDR_METHOD)
        || !ngx_http_mcp_header_is(&h->value, (char *) msg->method.data,
                                   msg->method.len))
    {
        return ngx_http_mcp_stateless_refuse(ctx, msg->id,
                   NGX_HTTP_BAD_REQUEST, NGX_HTTP_MCP_HEADER_MISMATCH,
                   "Header mismatch: Mcp-Method must be the request's "
                   "method", NULL, rc);
    }

    param = ngx_http_mcp_jsonrpc_name_param(&msg->method);

    if (param == NULL) {
        return NGX_OK;
    }

    name = ngx_http_mcp_json_get(msg->params, param);

    said_rc = cJSON_IsString(name)
              ? ngx_http_mcp_headers_name(ctx->request->pool, &ctx->headers,
                                          &said)
              : NGX_DONE;

    if (said_rc == NGX_ERROR) {
        *rc = NGX_HTTP_INTERNAL_SERVER_ERROR;
        return NGX_DECLINED;
    }

    if (said_rc == NGX_DECLINED || said_rc == NGX_ABORT) {
        return ngx_http_mcp_stateless_refuse(ctx, msg->id,
                   NGX_HTTP_BAD_REQUEST, NGX_HTTP_MCP_HEADER_MISMATCH,
                   said_rc == NGX_DECLINED
                   ? "Header mismatch: Mcp-Name is not valid Base64"
                   : "Header mismatch: Mcp-Name has a control character: "
                     "it must come in Base64",
                   NULL, rc);
    }

    if (said_rc != NGX_OK
        || !ngx_http_mcp_header_is(&said, name->valuestring,
                                   ngx_strlen(name->valuestring)))
    {
        return ngx_http_mcp_stateless_refuse(ctx, msg->id,
                   NGX_HTTP_BAD_REQUEST, NGX_HTTP_MCP_HEADER_MISMATCH,
                   "Header mismatch: Mcp-Name must be the request's name "
                   "or URI", NULL, rc);
    }

    return NGX_OK;
}


/*
 * A tools/call's Mcp-Param-* headers, as data that goes with its message:
 * which of them the call needs, and what they must say, is in the tool's
 * schema, which the edge does not know and dispatch does (SEP-2243).
 * The values point into the request's headers; the call copies them.
 */

static ngx_int_t
ngx_http_mcp_stateless_params(ngx_http_request_t *r, ngx_http_mcp_msg_t *msg)
{
    size_t            len;
    ngx_keyval_t     *kv;
    ngx_table_elt_t  *h;

    if (msg->method.len != sizeof("tools/call") - 1
        || ngx_strncmp(msg->method.data, "tools/call", msg->method.len) != 0)
    {
        return NGX_OK;
    }

    len = sizeof(NGX_HTTP_MCP_PARAM_PREFIX) - 1;

    for (h = ngx_http_mcp_header_prefixed(r, NULL, "mcp-param-", len);
         h != NULL;
         h = ngx_http_mcp_header_prefixed(r, h, "mcp-param-", len))
    {
        if (msg->param_headers == NULL) {
            msg->param_headers = ngx_array_create(r->pool, 4,
                                                  sizeof(ngx_keyval_t));
            if (msg->param_headers == NULL) {
                return NGX_ERROR;
            }
        }

        kv = ngx_array_push(msg->param_headers);
        if (kv == NULL) {
            return NGX_ERROR;
        }

        kv->key.data = h->key.data + len;
        kv->key.len = h->key.len - len;
        kv->value = h->value;
    }

    return NGX_OK;
}


static ngx_int_t
ngx_http_mcp_stateless_refuse(ngx_http_mcp_ctx_t *ctx, cJSON *id,
    ngx_uint_t status, ngx_int_t code, const char *message, cJSON *data,
    ngx_int_t *rc)
{
    *rc = ngx_http_mcp_send_error_data(ctx->request, status, id, code,
                                       message, data);
    return NGX_DECLINED;
}


/*
 * The HTTP status of a stateless reply: the errors that say the request
 * was wrong for this endpoint are HTTP errors too, so that nginx's
 * access log, limit_req and proxies see them.
 */

ngx_uint_t
ngx_http_mcp_stateless_status(cJSON *reply)
{
    cJSON  *error, *code;

    /* most replies are results: a walk of the reply's three members */

    error = NULL;

    cJSON_ArrayForEach(error, reply) {
        if (error->string != NULL && error->string[0] == 'e'
            && ngx_strcmp(error->string, "error") == 0)
        {
            break;
        }
    }

    code = ngx_http_mcp_json_get(error, "code");

    if (!cJSON_IsNumber(code)) {
        return NGX_HTTP_OK;
    }

    switch (code->valueint) {

    case NGX_HTTP_MCP_METHOD_NOT_FOUND:
        return NGX_HTTP_NOT_FOUND;

    case NGX_HTTP_MCP_HEADER_MISMATCH:
    case NGX_HTTP_MCP_MISSING_CAPABILITY:
    case NGX_HTTP_MCP_UNSUPPORTED_VERSION:
        return NGX_HTTP_BAD_REQUEST;

    default:
        return NGX_HTTP_OK;
    }
}


/* what a header said (its value, or the value decoded) is value */

static ngx_uint_t
ngx_http_mcp_header_is(ngx_str_t *said, const char *value, size_t len)
{
    return said->len == len && ngx_memcmp(said->data, value, len) == 0;
}
