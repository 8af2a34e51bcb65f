
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
 */


#include "ngx_http_mcp_proxy.h"
#include "ngx_http_mcp_jsonrpc.h"
#include "ngx_http_mcp_call.h"
#include "ngx_http_mcp_core.h"
#include "ngx_http_mcp_auth.h"
#include "ngx_http_mcp_http.h"


static ngx_int_t ngx_http_mcp_proxy_ssl(ngx_conf_t *cf,
    ngx_http_mcp_loc_conf_t *conf);
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
static ngx_int_t ngx_http_mcp_proxy_authorize(ngx_http_mcp_ctx_t *ctx,
    ngx_uint_t i, ngx_int_t *rc);


/*
 * An MCP server is not an application tier: its X-Accel-* headers would
 * steer nginx (X-Accel-Redirect serves any internal location), so they
 * are neither acted on (ignore_headers, below) nor relayed.  Nor are its
 * cookies: the client's never reach it, and they would be set for the
 * gateway's site.  Nor its CORS and nosniff: the gateway says its own
 * (ngx_http_mcp_cors.c), and a header twice breaks CORS.
 */

static ngx_str_t  ngx_http_mcp_proxy_hide_headers[] = {
    ngx_string("Date"),
    ngx_string("Server"),
    ngx_string("Connection"),
    ngx_string("Keep-Alive"),
    ngx_string("Set-Cookie"),
    ngx_string("X-Accel-Expires"),
    ngx_string("X-Accel-Redirect"),
    ngx_string("X-Accel-Limit-Rate"),
    ngx_string("X-Accel-Buffering"),
    ngx_string("X-Accel-Charset"),
    ngx_string("X-Content-Type-Options"),
    ngx_string("Access-Control-Allow-Origin"),
    ngx_string("Access-Control-Allow-Credentials"),
    ngx_string("Access-Control-Expose-Headers"),
    ngx_null_string
};


char *
ngx_http_mcp_pass(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_mcp_loc_conf_t *mlcf = conf;

    u_char                    *p;
    size_t                     add;
    in_port_t                  port;
    ngx_url_t                  u;
    ngx_str_t                 *value, url;
    ngx_http_core_loc_conf_t  *clcf;

    if (mlcf->upstream.upstream) {
        return "is duplicate";
    }

    value = cf->args->elts;
    url = value[1];

    if (ngx_strncasecmp(url.data, (u_char *) "http://", 7) == 0) {
        add = 7;
        port = 80;

#if (NGX_HTTP_SSL)
    } else if (ngx_strncasecmp(url.data, (u_char *) "https://", 8) == 0) {
        add = 8;
        port = 443;
        mlcf->ssl = 1;
#endif

    } else {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "invalid URL prefix in \"%V\": mcp_pass takes "
                           "http(s)://host[:port][/path] or an upstream name "
                           "as http(s)://name", &url);
        return NGX_CONF_ERROR;
    }

    ngx_memzero(&u, sizeof(ngx_url_t));

    u.url.len = url.len - add;
    u.url.data = url.data + add;
    u.default_port = port;
    u.uri_part = 1;
    u.no_resolve = 1;

    mlcf->upstream.upstream = ngx_http_upstream_add(cf, &u, 0);
    if (mlcf->upstream.upstream == NULL) {
        return NGX_CONF_ERROR;
    }

    if (ngx_http_mcp_balancer_note(cf, mlcf->upstream.upstream) != NGX_OK) {
        return NGX_CONF_ERROR;
    }

    /* the Host the upstream gets: host[:port] as written */
    p = ngx_strlchr(u.url.data, u.url.data + u.url.len, '/');
    mlcf->proxy_host.data = u.url.data;
    mlcf->proxy_host.len = (p ? p : u.url.data + u.url.len) - u.url.data;

    mlcf->proxy_uri = u.uri;

    /* the name TLS checks the upstream's certificate against, and SNI */
    p = ngx_strlchr(mlcf->proxy_host.data,
                    mlcf->proxy_host.data + mlcf->proxy_host.len, ':');
    mlcf->ssl_host.data = mlcf->proxy_host.data;
    mlcf->ssl_host.len = (p ? p : mlcf->proxy_host.data
                                  + mlcf->proxy_host.len)
                         - mlcf->proxy_host.data;

    mlcf->enable = 1;

    /* the content handler is the transport's: ngx_http_mcp_module.c */
    clcf = ngx_http_conf_get_module_loc_conf(cf, ngx_http_core_module);

    if (clcf->name.len && clcf->name.data[clcf->name.len - 1] == '/') {
        clcf->auto_redirect = 1;
    }

    return NGX_CONF_OK;
}


void
ngx_http_mcp_proxy_create_conf(ngx_http_mcp_loc_conf_t *conf)
{
    conf->upstream.local = NGX_CONF_UNSET_PTR;
    conf->upstream.socket_keepalive = NGX_CONF_UNSET;
    conf->upstream.next_upstream_tries = NGX_CONF_UNSET_UINT;
    conf->upstream.connect_timeout = NGX_CONF_UNSET_MSEC;
    conf->upstream.send_timeout = NGX_CONF_UNSET_MSEC;
    conf->upstream.read_timeout = NGX_CONF_UNSET_MSEC;
    conf->upstream.next_upstream_timeout = NGX_CONF_UNSET_MSEC;
    conf->upstream.buffer_size = NGX_CONF_UNSET_SIZE;
    conf->filter_buffer_size = NGX_CONF_UNSET_SIZE;
    conf->upstream.hide_headers = NGX_CONF_UNSET_PTR;
    conf->upstream.pass_headers = NGX_CONF_UNSET_PTR;
    conf->upstream.intercept_errors = NGX_CONF_UNSET;
    conf->pass_authorization = NGX_CONF_UNSET;
    conf->ssl_verify = NGX_CONF_UNSET;
    conf->ssl_passwords = NGX_CONF_UNSET_PTR;

    /* unbuffered: SSE events go out as they come */
    conf->upstream.cyclic_temp_file = 0;
    conf->upstream.buffering = 0;
    conf->upstream.ignore_client_abort = 0;
    conf->upstream.send_lowat = 0;
    conf->upstream.bufs.num = 0;
    conf->upstream.busy_buffers_size = 0;
    conf->upstream.max_temp_file_size = 0;
    conf->upstream.temp_file_write_size = 0;
    conf->upstream.pass_request_headers = 0;
    conf->upstream.pass_request_body = 0;
    conf->upstream.force_ranges = 0;

    ngx_str_set(&conf->upstream.module, "mcp");
}


char *
ngx_http_mcp_proxy_merge_conf(ngx_conf_t *cf, ngx_http_mcp_loc_conf_t *prev,
    ngx_http_mcp_loc_conf_t *conf)
{
    ngx_hash_init_t  hash;

    ngx_conf_merge_ptr_value(conf->upstream.local, prev->upstream.local,
                              NULL);
    ngx_conf_merge_value(conf->upstream.socket_keepalive,
                         prev->upstream.socket_keepalive, 0);
    ngx_conf_merge_uint_value(conf->upstream.next_upstream_tries,
                              prev->upstream.next_upstream_tries, 0);

    /*
     * A tool call may run for minutes and a stream may idle for as long
     * as the client keeps it: the read timeout is generous.
     */
    ngx_conf_merge_msec_value(conf->upstream.connect_timeout,
                              prev->upstream.connect_timeout, 10000);
    ngx_conf_merge_msec_value(conf->upstream.send_timeout,
                              prev->upstream.send_timeout, 60000);
    ngx_conf_merge_msec_value(conf->upstream.read_timeout,
                              prev->upstream.read_timeout, 3600000);
    ngx_conf_merge_msec_value(conf->upstream.next_upstream_timeout,
                              prev->upstream.next_upstream_timeout, 0);
    ngx_conf_merge_size_value(conf->upstream.buffer_size,
                              prev->upstream.buffer_size, 16384);
    ngx_conf_merge_size_value(conf->filter_buffer_size,
                              prev->filter_buffer_size, 1024 * 1024);
    ngx_conf_merge_value(conf->upstream.intercept_errors,
                         prev->upstream.intercept_errors, 0);
    ngx_conf_merge_value(conf->pass_authorization, prev->pass_authorization,
                         0);

    conf->upstream.ignore_headers = NGX_HTTP_UPSTREAM_IGN_XA_REDIRECT
                                    |NGX_HTTP_UPSTREAM_IGN_XA_EXPIRES
                                    |NGX_HTTP_UPSTREAM_IGN_XA_LIMIT_RATE
                                    |NGX_HTTP_UPSTREAM_IGN_XA_BUFFERING
                                    |NGX_HTTP_UPSTREAM_IGN_XA_CHARSET;

    /* a session's requests must reach its replica: no other try */
    conf->upstream.next_upstream = NGX_CONF_BITMASK_SET
                                   |NGX_HTTP_UPSTREAM_FT_OFF;

    if (conf->upstream.upstream == NULL) {
        conf->upstream.upstream = prev->upstream.upstream;
        conf->proxy_host = prev->proxy_host;
        conf->proxy_uri = prev->proxy_uri;
        conf->ssl = prev->ssl;
        conf->ssl_host = prev->ssl_host;
        conf->upstream.ssl = prev->upstream.ssl;
    }

    hash.max_size = 512;
    hash.bucket_size = ngx_align(64, ngx_cacheline_size);
    hash.name = "mcp_pass_headers_hash";

    if (ngx_http_upstream_hide_headers_hash(cf, &conf->upstream,
            &prev->upstream, ngx_http_mcp_proxy_hide_headers, &hash)
        != NGX_OK)
    {
        return NGX_CONF_ERROR;
    }

    ngx_conf_merge_value(conf->ssl_verify, prev->ssl_verify, 0);
    ngx_conf_merge_str_value(conf->ssl_trusted_certificate,
                             prev->ssl_trusted_certificate, "");
    ngx_conf_merge_str_value(conf->ssl_certificate, prev->ssl_certificate, "");
    ngx_conf_merge_str_value(conf->ssl_certificate_key,
                             prev->ssl_certificate_key, "");
    ngx_conf_merge_ptr_value(conf->ssl_passwords, prev->ssl_passwords, NULL);

    if (conf->ssl && conf->upstream.ssl == NULL
        && ngx_http_mcp_proxy_ssl(cf, conf) != NGX_OK)
    {
        return NGX_CONF_ERROR;
    }

    /* initialize has no replica yet: a server that fails, the next one */
    conf->upstream_init = conf->upstream;
    conf->upstream_init.next_upstream = NGX_CONF_BITMASK_SET
                                        |NGX_HTTP_UPSTREAM_FT_ERROR
                                        |NGX_HTTP_UPSTREAM_FT_TIMEOUT;

    return NGX_CONF_OK;
}


/*
 * TLS to the upstream (mcp_pass https://...): SNI always, the peer's
 * certificate checked against the trusted CAs when asked, the gateway's
 * own certificate shown to upstreams that ask for one.
 */

static ngx_int_t
ngx_http_mcp_proxy_ssl(ngx_conf_t *cf, ngx_http_mcp_loc_conf_t *conf)
{
#if (NGX_HTTP_SSL)
    ngx_pool_cleanup_t  *cln;

    conf->upstream.ssl = ngx_pcalloc(cf->pool, sizeof(ngx_ssl_t));
    if (conf->upstream.ssl == NULL) {
        return NGX_ERROR;
    }

    conf->upstream.ssl->log = cf->log;

    if (ngx_ssl_create(conf->upstream.ssl,
                       NGX_SSL_TLSv1_2|NGX_SSL_TLSv1_3, NULL)
        != NGX_OK)
    {
        return NGX_ERROR;
    }

    cln = ngx_pool_cleanup_add(cf->pool, 0);
    if (cln == NULL) {
        ngx_ssl_cleanup_ctx(conf->upstream.ssl);
        return NGX_ERROR;
    }

    cln->handler = ngx_ssl_cleanup_ctx;
    cln->data = conf->upstream.ssl;

    conf->upstream.ssl_session_reuse = 1;
    conf->upstream.ssl_server_name = 1;
    conf->upstream.ssl_verify = conf->ssl_verify;

    if (conf->ssl_certificate.len || conf->ssl_certificate_key.len) {
        if (conf->ssl_certificate.len == 0
            || conf->ssl_certificate_key.len == 0)
        {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "\"mcp_pass_ssl_certificate\" and "
                               "\"mcp_pass_ssl_certificate_key\" go "
                               "together: one is missing");
            return NGX_ERROR;
        }

        if (ngx_ssl_certificate(cf, conf->upstream.ssl,
                                &conf->ssl_certificate,
                                &conf->ssl_certificate_key,
                                conf->ssl_passwords)
            != NGX_OK)
        {
            return NGX_ERROR;
        }
    }

    if (conf->ssl_verify) {
        if (conf->ssl_trusted_certificate.len == 0) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "no \"mcp_pass_ssl_trusted_certificate\" "
                               "for \"mcp_pass_ssl_verify\"");
            return NGX_ERROR;
        }

        if (ngx_ssl_trusted_certificate(cf, conf->upstream.ssl,
                                        &conf->ssl_trusted_certificate, 4)
            != NGX_OK)
        {
            return NGX_ERROR;
        }
    }

    return NGX_OK;

#else

    return NGX_ERROR;

#endif
}


/* mcp_pass_ssl_password_file: the passphrases of an encrypted key */

char *
ngx_http_mcp_pass_ssl_password_file(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf)
{
#if (NGX_HTTP_SSL)
    ngx_http_mcp_loc_conf_t *mlcf = conf;

    ngx_str_t  *value;

    if (mlcf->ssl_passwords != NGX_CONF_UNSET_PTR) {
        return "is duplicate";
    }

    value = cf->args->elts;

    mlcf->ssl_passwords = ngx_ssl_read_password_file(cf, &value[1]);

    if (mlcf->ssl_passwords == NULL) {
        return NGX_CONF_ERROR;
    }

    return NGX_CONF_OK;

#else

    return "requires the http_ssl module";

#endif
}


/*
 * A POST, checked and parsed: answered here when the edge refuses it,
 * else relayed.  Returns what the content handler returns.
 */

ngx_int_t
ngx_http_mcp_proxy_post(ngx_http_mcp_ctx_t *ctx)
{
    ngx_int_t                  rc;
    ngx_str_t                  retry = ngx_string("1");
    ngx_uint_t                 i;
    ngx_table_elt_t           *h;
    ngx_http_request_t        *r;
    ngx_http_mcp_msg_t        *msg;
    ngx_http_mcp_proxy_ctx_t  *pctx;

    r = ctx->request;

    pctx = ngx_pcalloc(r->pool, sizeof(ngx_http_mcp_proxy_ctx_t));
    if (pctx == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    pctx->ctx = ctx;
    pctx->policy = ngx_http_mcp_proxy_policy(ctx);
    ctx->proxy = pctx;

    if (ngx_http_mcp_proxy_refuse(r, ctx, &rc) != NGX_OK) {
        return rc;
    }

    msg = ctx->msgs.elts;

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

    for (i = 0; i < ctx->msgs.nelts; i++) {
        if (ngx_http_mcp_proxy_filters(ctx, &msg[i])) {
            pctx->filter = 1;
        }
    }

    return ngx_http_mcp_proxy_go(r, pctx);
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
 * The policy or the caller's scopes hide tools: a tools/list reply is
 * filtered, and so is every SSE stream relayed, as an upstream may put
 * such a reply on any of them
 */

static ngx_uint_t
ngx_http_mcp_proxy_policy(ngx_http_mcp_ctx_t *ctx)
{
    return ngx_http_mcp_policy_on(ctx->conf)
           || (ctx->rctx.auth != NULL
               && ngx_http_mcp_auth_tool_scoped(ctx->rctx.auth));
}


/* the edge's own answers: invalid messages, denied tools */

static ngx_int_t
ngx_http_mcp_proxy_refuse(ngx_http_request_t *r, ngx_http_mcp_ctx_t *ctx,
    ngx_int_t *rc)
{
    cJSON               *name;
    u_char               logged[NGX_HTTP_MCP_LOG_NAME_LEN], *end, *error;
    ngx_int_t            limits;
    ngx_str_t            tool;
    ngx_uint_t           i;
    ngx_http_mcp_msg_t  *msg;

    msg = ctx->msgs.elts;

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

        if (ngx_http_mcp_tool_allowed(ctx->conf, &tool)) {
            /* the input limits hold on every path, mcp_pass too */
            limits = ngx_http_mcp_auth_check_input(r->loc_conf, r->pool,
                         cJSON_GetObjectItemCaseSensitive(msg[i].params,
                                                          "arguments"),
                         &error);
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

        if (msg[i].type != NGX_HTTP_MCP_MSG_REQUEST) {
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

    r->main->count++;

    rc = ngx_http_mcp_proxy_start(r, pctx);

    if (rc != NGX_DONE) {
        r->main->count--;
    }

    return rc;
}


