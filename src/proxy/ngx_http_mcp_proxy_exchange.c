
/*
 * mcp_token_exchange: the caller's validated access token is exchanged
 * (OAuth 2.0 Token Exchange, RFC 8693) at the authorization server's
 * token endpoint, reached through a location of nginx by the module's
 * subrequest client, for a token whose audience is the upstream
 * (RFC 8707).  A handler of the precontent phase does it, after the
 * access phase validated the caller and before any content handler
 * (mcp_pass, or an MCP location whose mcp_backend and location tools
 * read $mcp_upstream_token) runs; mcp_pass sends the token as its
 * Authorization, never the caller's.
 *
 * The tokens are kept in a zone (ngx_http_mcp_session_exchange.c) per
 * SHA-256 of the caller's token and what is asked for, until shortly
 * before they expire; one exchange per key is in flight across all
 * workers, the others poll the zone until it ends, and after a failure
 * the key waits a second before the next attempt.  No token is ever
 * logged: only the endpoint, the status and the AS's error code.
 */


#include "ngx_http_mcp_proxy.h"
#include "ngx_http_mcp_exchange_store.h"
#include "ngx_http_mcp_auth.h"
#include "ngx_http_mcp_subrequest.h"
#include "ngx_http_mcp_jwt.h"
#include <cjson/cJSON.h>


#define NGX_HTTP_MCP_EXCHANGE_POLL     50       /* ms */
#define NGX_HTTP_MCP_EXCHANGE_SIZE     (1024 * 1024)
#define NGX_HTTP_MCP_EXCHANGE_ENTRIES  4096
#define NGX_HTTP_MCP_EXCHANGE_REPLY    (64 * 1024)

/* the worker's memo of keys: slots, and the longest token it keeps */
#define NGX_HTTP_MCP_EXCHANGE_MEMO     16
#define NGX_HTTP_MCP_EXCHANGE_MEMO_MAX 4096

#define NGX_HTTP_MCP_GRANT_TOKEN_EXCHANGE                                     \
    "urn:ietf:params:oauth:grant-type:token-exchange"
#define NGX_HTTP_MCP_TOKEN_TYPE_ACCESS                                        \
    "urn:ietf:params:oauth:token-type:access_token"
#define NGX_HTTP_MCP_ASSERTION_TYPE                                           \
    "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"


typedef struct {
    ngx_http_mcp_fetch_state_t   *fetch;
    ngx_http_request_t           *request;
    ngx_event_t                   timer;       /* polls the zone */
    ngx_msec_t                    deadline;
    ngx_str_t                     token;       /* the exchanged one */
    u_char                        key[NGX_HTTP_MCP_EXCHANGE_KEY_LEN];
    ngx_uint_t                    refused;     /* the status mcp_pass's
                                                  POST answers with */
    unsigned                      fetching:1;
    unsigned                      fetched:1;
    unsigned                      waiting:1;
    unsigned                      woken:1;
    unsigned                      decided:1;
} ngx_http_mcp_exchange_ctx_t;


/*
 * A key this worker computed, with the token it was computed from: a
 * caller who calls again costs a compare, not a SHA-256 of the token
 * (a few hundred bytes).  The memo hangs off the mcp_token_exchange
 * conf and lives in its cycle's pool, so a reload's new conf starts
 * empty; a slot also names the location (its client_id is in the key).
 */

typedef struct ngx_http_mcp_exchange_memo_s {
    ngx_http_mcp_proxy_loc_conf_t  *plcf;
    size_t                          len;
    u_char                         *token;   /* MEMO_MAX bytes, or NULL */
    u_char                          key[NGX_HTTP_MCP_EXCHANGE_KEY_LEN];
} ngx_http_mcp_exchange_memo_t;


static ngx_int_t ngx_http_mcp_exchange_handler(ngx_http_request_t *r);
static ngx_int_t ngx_http_mcp_exchange_key(ngx_http_request_t *r,
    ngx_http_mcp_proxy_loc_conf_t *plcf, ngx_str_t *subject, u_char *key);
static ngx_int_t ngx_http_mcp_exchange_digest(ngx_http_request_t *r,
    ngx_http_mcp_proxy_loc_conf_t *plcf, ngx_str_t *subject, u_char *key);
static ngx_int_t ngx_http_mcp_exchange_look(ngx_http_request_t *r,
    ngx_http_mcp_proxy_loc_conf_t *plcf, ngx_http_mcp_exchange_ctx_t *ctx);
static ngx_int_t ngx_http_mcp_exchange_start(ngx_http_request_t *r,
    ngx_http_mcp_proxy_loc_conf_t *plcf, ngx_http_mcp_exchange_ctx_t *ctx,
    ngx_str_t *subject);
static void ngx_http_mcp_exchange_fetched(ngx_event_t *ev);
static void ngx_http_mcp_exchange_poll(ngx_event_t *ev);
static void ngx_http_mcp_exchange_cleanup(void *data);
static ngx_int_t ngx_http_mcp_exchange_reply(ngx_http_request_t *r,
    ngx_http_mcp_proxy_loc_conf_t *plcf, ngx_http_mcp_exchange_ctx_t *ctx);
static time_t ngx_http_mcp_exchange_lifetime(ngx_pool_t *pool,
    ngx_str_t *token);
static ngx_int_t ngx_http_mcp_exchange_refuse(ngx_http_request_t *r,
    ngx_uint_t status);
static u_char *ngx_http_mcp_exchange_form(u_char *p, const char *name,
    ngx_str_t *value);
static size_t ngx_http_mcp_exchange_escape(u_char *dst, ngx_str_t *src);
static ngx_int_t ngx_http_mcp_exchange_variable(ngx_http_request_t *r,
    ngx_http_variable_value_t *v, uintptr_t data);


static ngx_str_t  ngx_http_mcp_exchange_var = ngx_string("mcp_upstream_token");
static ngx_str_t  ngx_http_mcp_exchange_grant =
    ngx_string(NGX_HTTP_MCP_GRANT_TOKEN_EXCHANGE);
static ngx_str_t  ngx_http_mcp_exchange_type =
    ngx_string(NGX_HTTP_MCP_TOKEN_TYPE_ACCESS);
static ngx_str_t  ngx_http_mcp_exchange_assertion_type =
    ngx_string(NGX_HTTP_MCP_ASSERTION_TYPE);


/* ------------------------------------------------------------------------
 * Configuration
 */

/*
 * mcp_token_exchange uri audience=... [resource=...] [scope=...]
 *     [requested_token_type=...] [timeout=time] [margin=time] | off
 */

char *
ngx_http_mcp_token_exchange(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_mcp_proxy_loc_conf_t *plcf = conf;

    ngx_str_t                     *value, *v, t;
    ngx_msec_t                     ms;
    ngx_uint_t                     i, n;
    ngx_http_mcp_exchange_conf_t  *ex;

    if (plcf->exchange != NGX_CONF_UNSET_PTR) {
        return "is duplicate";
    }

    value = cf->args->elts;

    if (cf->args->nelts == 2
        && ngx_strcmp(value[1].data, "off") == 0)
    {
        plcf->exchange = NULL;
        return NGX_CONF_OK;
    }

    if (value[1].len == 0 || value[1].data[0] != '/') {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"mcp_token_exchange\" needs the URI of a "
                           "location, not \"%V\"", &value[1]);
        return NGX_CONF_ERROR;
    }

    ex = ngx_pcalloc(cf->pool, sizeof(ngx_http_mcp_exchange_conf_t));
    if (ex == NULL) {
        return NGX_CONF_ERROR;
    }

    ex->uri = value[1];
    ex->timeout = 5000;
    ex->margin = 30;

    for (i = 2; i < cf->args->nelts; i++) {

        if (ngx_strncmp(value[i].data, "audience=", 9) == 0) {
            v = &ex->audience;
            v->data = value[i].data + 9;
            v->len = value[i].len - 9;

        } else if (ngx_strncmp(value[i].data, "resource=", 9) == 0) {
            v = &ex->resource;
            v->data = value[i].data + 9;
            v->len = value[i].len - 9;

        } else if (ngx_strncmp(value[i].data, "scope=", 6) == 0) {
            v = &ex->scope;
            v->data = value[i].data + 6;
            v->len = value[i].len - 6;

        } else if (ngx_strncmp(value[i].data, "requested_token_type=", 21)
                   == 0)
        {
            v = &ex->requested_type;
            v->data = value[i].data + 21;
            v->len = value[i].len - 21;

        } else if (ngx_strncmp(value[i].data, "timeout=", 8) == 0
                   || ngx_strncmp(value[i].data, "margin=", 7) == 0)
        {
            n = (value[i].data[0] == 't') ? 8 : 7;
            t.data = value[i].data + n;
            t.len = value[i].len - n;

            ms = ngx_parse_time(&t, 0);

            if (ms == (ngx_msec_t) NGX_ERROR || ms == 0) {
                ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                                   "invalid \"%V\" of \"mcp_token_exchange\"",
                                   &value[i]);
                return NGX_CONF_ERROR;
            }

            if (n == 8) {
                ex->timeout = ms;

            } else {
                ex->margin = ms / 1000;
            }

            continue;

        } else {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "invalid parameter \"%V\" of "
                               "\"mcp_token_exchange\"", &value[i]);
            return NGX_CONF_ERROR;
        }

        if (v->len == 0) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "empty \"%V\" of \"mcp_token_exchange\"",
                               &value[i]);
            return NGX_CONF_ERROR;
        }
    }

    if (ex->audience.len == 0 && ex->resource.len == 0) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"mcp_token_exchange\" needs \"audience=\" or "
                           "\"resource=\"");
        return NGX_CONF_ERROR;
    }

    ex->zone = ngx_http_mcp_exchange_zone(cf, NGX_HTTP_MCP_EXCHANGE_SIZE,
                                          NGX_HTTP_MCP_EXCHANGE_ENTRIES);
    if (ex->zone == NULL) {
        return NGX_CONF_ERROR;
    }

    plcf->exchange = ex;

    return NGX_CONF_OK;
}


/* mcp_token_exchange_client_secret $variable (an mcp_secret's) */

char *
ngx_http_mcp_token_exchange_secret(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf)
{
    ngx_http_mcp_proxy_loc_conf_t *plcf = conf;

    ngx_str_t  *value, name;

    if (plcf->exchange_secret != NGX_CONF_UNSET) {
        return "is duplicate";
    }

    value = cf->args->elts;

    if (value[1].len < 2 || value[1].data[0] != '$') {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"mcp_token_exchange_client_secret\" takes a "
                           "variable (mcp_secret's), not \"%V\"",
                           &value[1]);
        return NGX_CONF_ERROR;
    }

    name.data = value[1].data + 1;
    name.len = value[1].len - 1;

    plcf->exchange_secret = ngx_http_get_variable_index(cf, &name);

    if (plcf->exchange_secret == NGX_ERROR) {
        return NGX_CONF_ERROR;
    }

    return NGX_CONF_OK;
}


/* the merge's part: the inherited settings, and what they need */

char *
ngx_http_mcp_exchange_merge(ngx_conf_t *cf,
    ngx_http_mcp_proxy_loc_conf_t *prev, ngx_http_mcp_proxy_loc_conf_t *conf)
{
    ngx_uint_t                    i;
    ngx_http_mcp_proxy_header_t  *hd;

    ngx_conf_merge_ptr_value(conf->exchange, prev->exchange, NULL);
    ngx_conf_merge_str_value(conf->exchange_client_id,
                             prev->exchange_client_id, "");
    ngx_conf_merge_value(conf->exchange_secret, prev->exchange_secret,
                         NGX_CONF_UNSET);
    ngx_conf_merge_ptr_value(conf->exchange_key, prev->exchange_key, NULL);
    ngx_conf_merge_uint_value(conf->exchange_auth, prev->exchange_auth, 0);

    if (conf->exchange == NULL) {
        return NGX_CONF_OK;
    }

    if (conf->exchange_client_id.len == 0) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"mcp_token_exchange\" needs "
                           "\"mcp_token_exchange_client_id\"");
        return NGX_CONF_ERROR;
    }

    if ((conf->exchange_auth == 2) != (conf->exchange_key != NULL)) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"mcp_token_exchange_client_auth "
                           "private_key_jwt\" and "
                           "\"mcp_token_exchange_client_key\" go "
                           "together");
        return NGX_CONF_ERROR;
    }

    /* the exchanged token is the Authorization mcp_pass sends */
    hd = conf->set_headers ? conf->set_headers->elts : NULL;

    for (i = 0; conf->set_headers && i < conf->set_headers->nelts; i++) {
        if (hd[i].lowcase.len == sizeof("authorization") - 1
            && ngx_strncmp(hd[i].lowcase.data, "authorization",
                           hd[i].lowcase.len) == 0)
        {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "\"mcp_pass_set_header Authorization\" and "
                               "\"mcp_token_exchange\" in one location");
            return NGX_CONF_ERROR;
        }
    }

    return NGX_CONF_OK;
}


ngx_int_t
ngx_http_mcp_exchange_add_variables(ngx_conf_t *cf)
{
    ngx_http_variable_t  *var;

    var = ngx_http_add_variable(cf, &ngx_http_mcp_exchange_var,
                                NGX_HTTP_VAR_NOCACHEABLE);
    if (var == NULL) {
        return NGX_ERROR;
    }

    var->get_handler = ngx_http_mcp_exchange_variable;

    return NGX_OK;
}


ngx_int_t
ngx_http_mcp_exchange_init(ngx_conf_t *cf)
{
    ngx_http_handler_pt        *h;
    ngx_http_core_main_conf_t  *cmcf;

    cmcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_core_module);

    h = ngx_array_push(&cmcf->phases[NGX_HTTP_PRECONTENT_PHASE].handlers);
    if (h == NULL) {
        return NGX_ERROR;
    }

    *h = ngx_http_mcp_exchange_handler;

    return NGX_OK;
}


/* ------------------------------------------------------------------------
 * The precontent phase
 */

static ngx_int_t
ngx_http_mcp_exchange_handler(ngx_http_request_t *r)
{
    ngx_pool_cleanup_t             *cln;
    ngx_http_mcp_auth_t            *auth;
    ngx_http_mcp_exchange_ctx_t    *ctx;
    ngx_http_mcp_proxy_loc_conf_t  *plcf;

    if (r != r->main) {
        return NGX_DECLINED;
    }

    plcf = ngx_http_get_module_loc_conf(r, ngx_http_mcp_proxy_module);

    if (plcf->exchange == NULL || r->method == NGX_HTTP_OPTIONS) {
        return NGX_DECLINED;
    }

    ctx = ngx_http_get_module_ctx(r, ngx_http_mcp_proxy_module);

    if (ctx != NULL) {
        if (ctx->decided) {
            return NGX_DECLINED;
        }

        if (ctx->fetching) {
            if (!ctx->fetched) {
                return NGX_AGAIN;
            }

            ctx->fetching = 0;

            return ngx_http_mcp_exchange_reply(r, plcf, ctx);
        }

        if (ctx->waiting) {
            if (!ctx->woken) {
                return NGX_AGAIN;
            }

            ctx->woken = 0;

            return ngx_http_mcp_exchange_look(r, plcf, ctx);
        }

        return NGX_DECLINED;
    }

    auth = ngx_http_mcp_auth_get(r);

    /*
     * No caller here (authorization off: a metadata document, a file of
     * a server with the exchange at its level): nothing to exchange.  An
     * mcp_pass location relays nothing without a token.
     */
    if (auth == NULL && plcf->upstream.upstream == NULL) {
        return NGX_DECLINED;
    }

    if (auth == NULL || auth->token.len == 0) {
        ngx_log_error(NGX_LOG_INFO, r->connection->log, 0,
                      "mcp: no access token to exchange (the location "
                      "needs mcp_auth_jwt and a caller with a JWT)");
        return ngx_http_mcp_exchange_refuse(r, NGX_HTTP_FORBIDDEN);
    }

    ctx = ngx_pcalloc(r->pool, sizeof(ngx_http_mcp_exchange_ctx_t));
    cln = ngx_pool_cleanup_add(r->pool, 0);

    if (ctx == NULL || cln == NULL) {
        return NGX_ERROR;
    }

    ctx->request = r;
    ctx->timer.handler = ngx_http_mcp_exchange_poll;
    ctx->timer.data = ctx;
    ctx->timer.log = r->connection->log;

    cln->handler = ngx_http_mcp_exchange_cleanup;
    cln->data = ctx;

    ngx_http_set_ctx(r, ctx, ngx_http_mcp_proxy_module);

    if (ngx_http_mcp_exchange_key(r, plcf, &auth->token, ctx->key)
        != NGX_OK)
    {
        return NGX_ERROR;
    }

    ctx->deadline = ngx_current_msec + plcf->exchange->timeout + 1000;

    return ngx_http_mcp_exchange_look(r, plcf, ctx);
}


/*
 * The key, from the worker's memo when this location saw the token
 * before.  The slot comes from the token's last bytes (a JWT's end is
 * its signature); a crafted token that shares a slot only evicts.  The
 * compare takes the same time for any two tokens of one length.
 */

static ngx_int_t
ngx_http_mcp_exchange_key(ngx_http_request_t *r,
    ngx_http_mcp_proxy_loc_conf_t *plcf, ngx_str_t *subject, u_char *key)
{
    u_char                        *end;
    ngx_uint_t                     slot;
    ngx_http_mcp_exchange_memo_t  *memo;

    if (subject->len < 2 || subject->len > NGX_HTTP_MCP_EXCHANGE_MEMO_MAX) {
        return ngx_http_mcp_exchange_digest(r, plcf, subject, key);
    }

    if (plcf->exchange->memo == NULL) {
        plcf->exchange->memo = ngx_pcalloc(ngx_cycle->pool,
                                      sizeof(ngx_http_mcp_exchange_memo_t)
                                      * NGX_HTTP_MCP_EXCHANGE_MEMO);
        if (plcf->exchange->memo == NULL) {
            return ngx_http_mcp_exchange_digest(r, plcf, subject, key);
        }
    }

    end = subject->data + subject->len;
    slot = (end[-1] ^ (end[-2] << 3) ^ subject->len)
           % NGX_HTTP_MCP_EXCHANGE_MEMO;
    memo = &plcf->exchange->memo[slot];

    if (memo->plcf == plcf
        && memo->len == subject->len
        && ngx_http_mcp_secret_equal(memo->token, subject->data,
                                     subject->len))
    {
        ngx_memcpy(key, memo->key, NGX_HTTP_MCP_EXCHANGE_KEY_LEN);
        return NGX_OK;
    }

    if (ngx_http_mcp_exchange_digest(r, plcf, subject, key) != NGX_OK) {
        return NGX_ERROR;
    }

    if (memo->token == NULL) {
        /* the conf's, for its life: at most MEMO x MEMO_MAX bytes */
        memo->token = ngx_palloc(ngx_cycle->pool,
                                 NGX_HTTP_MCP_EXCHANGE_MEMO_MAX);
        if (memo->token == NULL) {
            return NGX_OK;
        }
    }

    memo->plcf = plcf;
    memo->len = subject->len;
    ngx_memcpy(memo->token, subject->data, subject->len);
    ngx_memcpy(memo->key, key, NGX_HTTP_MCP_EXCHANGE_KEY_LEN);

    return NGX_OK;
}


/*
 * The key: SHA-256 of the caller's token and all that is asked for it,
 * by whom (the gateway's client_id)
 */

static ngx_int_t
ngx_http_mcp_exchange_digest(ngx_http_request_t *r,
    ngx_http_mcp_proxy_loc_conf_t *plcf, ngx_str_t *subject, u_char *key)
{
    u_char      *p, *buf;
    size_t       len;
    ngx_str_t   *s[6];
    ngx_uint_t   i;

    s[0] = subject;
    s[1] = &plcf->exchange->audience;
    s[2] = &plcf->exchange->resource;
    s[3] = &plcf->exchange->scope;
    s[4] = &plcf->exchange->uri;
    s[5] = &plcf->exchange_client_id;

    len = 0;

    for (i = 0; i < 6; i++) {
        len += s[i]->len + 1;
    }

    buf = ngx_pnalloc(r->pool, len);
    if (buf == NULL) {
        return NGX_ERROR;
    }

    p = buf;

    /* a NUL after each: no two lists give the same text */
    for (i = 0; i < 6; i++) {
        if (s[i]->len) {
            p = ngx_cpymem(p, s[i]->data, s[i]->len);
        }

        *p++ = '\0';
    }

    return ngx_http_mcp_sha256(buf, len, key);
}


/* the zone's answer for the key: go on, wait, exchange or refuse */

static ngx_int_t
ngx_http_mcp_exchange_look(ngx_http_request_t *r,
    ngx_http_mcp_proxy_loc_conf_t *plcf, ngx_http_mcp_exchange_ctx_t *ctx)
{
    ngx_http_mcp_auth_t  *auth;

    switch (ngx_http_mcp_exchange_lookup(plcf->exchange->zone, ctx->key,
                                         plcf->exchange->timeout + 1000,
                                         r->pool, &ctx->token))
    {
    case NGX_HTTP_MCP_EXCHANGE_HIT:
        ctx->decided = 1;
        ctx->waiting = 0;
        return NGX_DECLINED;

    case NGX_HTTP_MCP_EXCHANGE_WAIT:
        if ((ngx_msec_int_t) (ngx_current_msec - ctx->deadline) >= 0) {
            ngx_log_error(NGX_LOG_WARN, r->connection->log, 0,
                          "mcp: token exchange at \"%V\" took too long",
                          &plcf->exchange->uri);
            return ngx_http_mcp_exchange_refuse(r,
                                            NGX_HTTP_SERVICE_UNAVAILABLE);
        }

        ctx->waiting = 1;
        ngx_add_timer(&ctx->timer, NGX_HTTP_MCP_EXCHANGE_POLL);
        return NGX_AGAIN;

    case NGX_HTTP_MCP_EXCHANGE_FAILED:
        return ngx_http_mcp_exchange_refuse(r, NGX_HTTP_SERVICE_UNAVAILABLE);

    case NGX_HTTP_MCP_EXCHANGE_REFUSED:
        return ngx_http_mcp_exchange_refuse(r, NGX_HTTP_FORBIDDEN);

    default: /* NGX_HTTP_MCP_EXCHANGE_GO */
        break;
    }

    ctx->waiting = 0;
    auth = ngx_http_mcp_auth_get(r);

    return ngx_http_mcp_exchange_start(r, plcf, ctx, &auth->token);
}


static ngx_int_t
ngx_http_mcp_exchange_start(ngx_http_request_t *r,
    ngx_http_mcp_proxy_loc_conf_t *plcf, ngx_http_mcp_exchange_ctx_t *ctx,
    ngx_str_t *subject)
{
    u_char                        *p, *b;
    size_t                         len;
    ngx_str_t                      id, secret, cred, basic, enc,
                                   assertion;
    ngx_table_elt_t               *h;
    ngx_http_mcp_fetch_t           f;
    ngx_http_variable_value_t     *vv;
    ngx_http_mcp_exchange_conf_t  *ex;

    ex = plcf->exchange;
    id = plcf->exchange_client_id;
    ngx_str_null(&secret);

    if (plcf->exchange_secret != NGX_CONF_UNSET) {
        vv = ngx_http_get_indexed_variable(r, plcf->exchange_secret);

        if (vv != NULL && !vv->not_found) {
            secret.data = vv->data;
            secret.len = vv->len;
        }
    }

    ngx_str_null(&assertion);

    if (plcf->exchange_auth == 2
        && ngx_http_mcp_exchange_assertion(r, plcf->exchange_key, &id,
                                           &assertion)
           != NGX_OK)
    {
        ngx_http_mcp_exchange_fail(ex->zone, ctx->key, 0);
        return NGX_ERROR;
    }

    len = sizeof("grant_type=&subject_token=&subject_token_type="
                 "&audience=&resource=&scope=&requested_token_type="
                 "&client_id=&client_secret=&client_assertion_type="
                 "&client_assertion=") - 1
          + assertion.len
          + 3 * (sizeof(NGX_HTTP_MCP_ASSERTION_TYPE)
                 + sizeof(NGX_HTTP_MCP_GRANT_TOKEN_EXCHANGE)
                 + sizeof(NGX_HTTP_MCP_TOKEN_TYPE_ACCESS)
                 + subject->len + ex->audience.len + ex->resource.len
                 + ex->scope.len + ex->requested_type.len + id.len
                 + secret.len);

    b = ngx_pnalloc(r->pool, len);
    if (b == NULL) {
        return NGX_ERROR;
    }

    p = ngx_http_mcp_exchange_form(b, "grant_type=",
                                   &ngx_http_mcp_exchange_grant);
    p = ngx_http_mcp_exchange_form(p, "&subject_token=", subject);
    p = ngx_http_mcp_exchange_form(p, "&subject_token_type=",
                                   &ngx_http_mcp_exchange_type);

    if (ex->audience.len) {
        p = ngx_http_mcp_exchange_form(p, "&audience=", &ex->audience);
    }

    if (ex->resource.len) {
        p = ngx_http_mcp_exchange_form(p, "&resource=", &ex->resource);
    }

    if (ex->scope.len) {
        p = ngx_http_mcp_exchange_form(p, "&scope=", &ex->scope);
    }

    if (ex->requested_type.len) {
        p = ngx_http_mcp_exchange_form(p, "&requested_token_type=",
                                       &ex->requested_type);
    }

    ngx_memzero(&f, sizeof(ngx_http_mcp_fetch_t));

    if (plcf->exchange_auth == 2) {
        /* private_key_jwt (RFC 7523 2.2) */
        p = ngx_http_mcp_exchange_form(p, "&client_id=", &id);
        p = ngx_http_mcp_exchange_form(p, "&client_assertion_type=",
                                       &ngx_http_mcp_exchange_assertion_type);
        p = ngx_cpymem(p, "&client_assertion=",
                       sizeof("&client_assertion=") - 1);
        p = ngx_cpymem(p, assertion.data, assertion.len);

    } else if (plcf->exchange_auth == 1) {
        /* client_secret_post */
        p = ngx_http_mcp_exchange_form(p, "&client_id=", &id);

        if (secret.len) {
            p = ngx_http_mcp_exchange_form(p, "&client_secret=", &secret);
        }

    } else {
        /* client_secret_basic: RFC 6749 2.3.1, each part form-encoded */
        cred.data = ngx_pnalloc(r->pool, 3 * (id.len + secret.len) + 1);
        basic.data = ngx_pnalloc(r->pool, sizeof("Basic ") - 1
                                 + ngx_base64_encoded_length(
                                       3 * (id.len + secret.len) + 1));
        h = ngx_pcalloc(r->pool, sizeof(ngx_table_elt_t));

        if (cred.data == NULL || basic.data == NULL || h == NULL) {
            return NGX_ERROR;
        }

        cred.len = ngx_http_mcp_exchange_escape(cred.data, &id);
        cred.data[cred.len++] = ':';
        cred.len += ngx_http_mcp_exchange_escape(cred.data + cred.len,
                                                 &secret);

        ngx_memcpy(basic.data, "Basic ", sizeof("Basic ") - 1);
        enc.data = basic.data + sizeof("Basic ") - 1;
        ngx_encode_base64(&enc, &cred);
        basic.len = sizeof("Basic ") - 1 + enc.len;

        h->hash = 1;
        ngx_str_set(&h->key, "Authorization");
        h->lowcase_key = (u_char *) "authorization";
        h->value = basic;

        f.headers = h;
        f.nheaders = 1;
    }

    f.uri = ex->uri;
    f.method = NGX_HTTP_POST;
    ngx_str_set(&f.method_name, "POST");
    f.body.data = b;
    f.body.len = p - b;
    ngx_str_set(&f.content_type, "application/x-www-form-urlencoded");
    f.max = NGX_HTTP_MCP_EXCHANGE_REPLY;
    f.timeout = ex->timeout;
    f.handler = ngx_http_mcp_exchange_fetched;
    f.data = ctx;

    ctx->fetch = ngx_http_mcp_fetch(r, r->pool, r->connection->log, &f);
    if (ctx->fetch == NULL) {
        ngx_http_mcp_exchange_fail(ex->zone, ctx->key, 0);
        return NGX_ERROR;
    }

    ctx->fetching = 1;
    ctx->fetched = 0;

    ngx_log_debug1(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "mcp: token exchange at \"%V\"", &ex->uri);

    return NGX_AGAIN;
}


/* news of the fetch: at its end (or a reply too big) the phase runs on */

static void
ngx_http_mcp_exchange_fetched(ngx_event_t *ev)
{
    ngx_http_mcp_exchange_ctx_t  *ctx = ev->data;

    ngx_http_request_t  *r;

    r = ctx->request;

    if (!ctx->fetch->done && !ctx->fetch->too_big && !ctx->fetch->timed_out
        && !ctx->fetch->failed)
    {
        return;
    }

    ngx_http_mcp_fetch_close(ctx->fetch);

    ctx->fetched = 1;

    if (ngx_http_post_request(r, NULL) != NGX_OK) {
        ngx_http_finalize_request(r, NGX_HTTP_INTERNAL_SERVER_ERROR);
        return;
    }

    ngx_http_run_posted_requests(r->connection);
}


static void
ngx_http_mcp_exchange_poll(ngx_event_t *ev)
{
    ngx_http_mcp_exchange_ctx_t  *ctx = ev->data;

    ngx_http_request_t  *r;

    r = ctx->request;
    ctx->woken = 1;

    if (ngx_http_post_request(r, NULL) != NGX_OK) {
        ngx_http_finalize_request(r, NGX_HTTP_INTERNAL_SERVER_ERROR);
        return;
    }

    ngx_http_run_posted_requests(r->connection);
}


static void
ngx_http_mcp_exchange_cleanup(void *data)
{
    ngx_http_mcp_exchange_ctx_t  *ctx = data;

    if (ctx->timer.timer_set) {
        ngx_del_timer(&ctx->timer);
    }
}


/* the AS's reply: the token into the zone, or the refusal */

static ngx_int_t
ngx_http_mcp_exchange_reply(ngx_http_request_t *r,
    ngx_http_mcp_proxy_loc_conf_t *plcf, ngx_http_mcp_exchange_ctx_t *ctx)
{
    time_t                         life, margin;
    cJSON                         *json, *item;
    ngx_uint_t                     i;
    ngx_str_t                      type;
    ngx_http_mcp_fetch_state_t    *st;
    ngx_http_mcp_exchange_conf_t  *ex;

    st = ctx->fetch;
    ex = plcf->exchange;

    if (st->status == NGX_HTTP_BAD_REQUEST
        || st->status == NGX_HTTP_UNAUTHORIZED
        || st->status == NGX_HTTP_FORBIDDEN)
    {
        /* the AS's error code says why; never more of its reply */
        json = (st->body != NULL && !st->too_big)
               ? cJSON_ParseWithLength((char *) st->body, st->len) : NULL;
        item = cJSON_GetObjectItemCaseSensitive(json, "error");

        type.data = (u_char *) "";
        type.len = 0;

        if (cJSON_IsString(item) && ngx_strlen(item->valuestring) < 64) {
            type.data = (u_char *) item->valuestring;
            type.len = ngx_strlen(item->valuestring);

            /* an error code is a word (RFC 6749 5.2): nothing else shown */
            for (i = 0; i < type.len; i++) {
                if (type.data[i] < 0x21 || type.data[i] > 0x7e
                    || type.data[i] == '"' || type.data[i] == '\\')
                {
                    type.len = 0;
                    break;
                }
            }
        }

        ngx_log_error(NGX_LOG_WARN, r->connection->log, 0,
                      "mcp: token exchange at \"%V\" refused (status %ui, "
                      "error \"%V\")", &ex->uri, st->status, &type);

        cJSON_Delete(json);
        ngx_http_mcp_exchange_fail(ex->zone, ctx->key, 1);

        return ngx_http_mcp_exchange_refuse(r, NGX_HTTP_FORBIDDEN);
    }

    if (st->status != NGX_HTTP_OK || st->too_big || st->timed_out
        || st->failed || st->len == 0)
    {
        ngx_log_error(NGX_LOG_WARN, r->connection->log, 0,
                      "mcp: token exchange at \"%V\" failed (status %ui%s)",
                      &ex->uri, st->status,
                      st->timed_out ? ", timed out"
                                    : (st->too_big ? ", reply too big" : ""));
        ngx_http_mcp_exchange_fail(ex->zone, ctx->key, 0);

        return ngx_http_mcp_exchange_refuse(r, NGX_HTTP_SERVICE_UNAVAILABLE);
    }

    json = cJSON_ParseWithLength((char *) st->body, st->len);

    item = cJSON_GetObjectItemCaseSensitive(json, "access_token");

    if (!cJSON_IsString(item) || item->valuestring[0] == '\0') {
        cJSON_Delete(json);
        ngx_log_error(NGX_LOG_WARN, r->connection->log, 0,
                      "mcp: token exchange at \"%V\" returned no "
                      "access_token", &ex->uri);
        ngx_http_mcp_exchange_fail(ex->zone, ctx->key, 0);

        return ngx_http_mcp_exchange_refuse(r, NGX_HTTP_SERVICE_UNAVAILABLE);
    }

    ctx->token.len = ngx_strlen(item->valuestring);
    ctx->token.data = ngx_pnalloc(r->pool, ctx->token.len);

    if (ctx->token.data == NULL) {
        cJSON_Delete(json);
        return NGX_ERROR;
    }

    ngx_memcpy(ctx->token.data, item->valuestring, ctx->token.len);

    /* a header value: nothing that would end the line */
    for (i = 0; i < ctx->token.len; i++) {
        if (ctx->token.data[i] < 0x21 || ctx->token.data[i] > 0x7e) {
            cJSON_Delete(json);
            ngx_log_error(NGX_LOG_WARN, r->connection->log, 0,
                          "mcp: token exchange at \"%V\" returned a token "
                          "that is no header value", &ex->uri);
            ngx_http_mcp_exchange_fail(ex->zone, ctx->key, 0);

            return ngx_http_mcp_exchange_refuse(r,
                                            NGX_HTTP_SERVICE_UNAVAILABLE);
        }
    }

    item = cJSON_GetObjectItemCaseSensitive(json, "expires_in");

    life = cJSON_IsNumber(item) && item->valuedouble > 0
           && item->valuedouble < 86400.0 * 365
           ? (time_t) item->valuedouble
           : ngx_http_mcp_exchange_lifetime(r->pool, &ctx->token);

    cJSON_Delete(json);

    /*
     * Kept until margin before it expires; one that lives no longer than
     * twice the margin is kept for half its life.
     */
    margin = (time_t) ex->margin;
    life = (life > 2 * margin) ? life - margin : life / 2;

    ctx->decided = 1;

    if (life > 0) {
        (void) ngx_http_mcp_exchange_put(ex->zone, ctx->key, &ctx->token,
                                         ngx_time() + life,
                                         r->connection->log);

    } else {
        ngx_http_mcp_exchange_fail(ex->zone, ctx->key, 0);
    }

    return NGX_DECLINED;
}


/* the JWT's exp less now, or 0 (not a JWT: not kept) */

static time_t
ngx_http_mcp_exchange_lifetime(ngx_pool_t *pool, ngx_str_t *token)
{
    u_char     *dot, *end;
    time_t      life;
    cJSON      *json, *exp;
    ngx_str_t   src, dst;

    end = token->data + token->len;
    dot = ngx_strlchr(token->data, end, '.');

    if (dot == NULL) {
        return 0;
    }

    src.data = dot + 1;
    dot = ngx_strlchr(src.data, end, '.');

    if (dot == NULL) {
        return 0;
    }

    src.len = dot - src.data;

    dst.data = ngx_pnalloc(pool, ngx_base64_decoded_length(src.len) + 1);
    if (dst.data == NULL) {
        return 0;
    }

    if (ngx_decode_base64url(&dst, &src) != NGX_OK) {
        return 0;
    }

    json = cJSON_ParseWithLength((char *) dst.data, dst.len);
    exp = cJSON_GetObjectItemCaseSensitive(json, "exp");

    life = cJSON_IsNumber(exp) ? (time_t) exp->valuedouble - ngx_time() : 0;

    cJSON_Delete(json);

    return (life > 0) ? life : 0;
}


/*
 * The refusal: 403 when the AS refused, 503 with Retry-After when it
 * could not answer.  mcp_pass's POST is refused once its body is read,
 * so that the JSON-RPC error carries the request's id (its relay checks
 * first: ngx_http_mcp_exchange_refused()); any other request now, its
 * error's id null.
 */

static ngx_int_t
ngx_http_mcp_exchange_refuse(ngx_http_request_t *r, ngx_uint_t status)
{
    ngx_int_t                       rc;
    ngx_http_mcp_exchange_ctx_t    *ctx;
    ngx_http_mcp_proxy_loc_conf_t  *plcf;

    plcf = ngx_http_get_module_loc_conf(r, ngx_http_mcp_proxy_module);
    ctx = ngx_http_get_module_ctx(r, ngx_http_mcp_proxy_module);

    if (ctx != NULL && r->method == NGX_HTTP_POST
        && plcf->upstream.upstream != NULL)
    {
        ctx->refused = status;
        ctx->decided = 1;
        ctx->waiting = 0;
        ngx_str_null(&ctx->token);

        return NGX_DECLINED;
    }

    rc = ngx_http_discard_request_body(r);

    if (rc != NGX_OK) {
        r->keepalive = 0;
    }

    rc = ngx_http_mcp_exchange_error(r, NULL, status);

    ngx_http_finalize_request(r, rc);

    return NGX_DONE;
}


/* the JSON-RPC error of a refusal, sent; what to finalize with */

ngx_int_t
ngx_http_mcp_exchange_error(ngx_http_request_t *r, cJSON *id,
    ngx_uint_t status)
{
    ngx_int_t  code;
    ngx_str_t  after = ngx_string("1");

    if (status == NGX_HTTP_SERVICE_UNAVAILABLE
        && ngx_http_mcp_header_out(r, "Retry-After", &after) != NGX_OK)
    {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    (void) ngx_http_mcp_status_error(status, &code);

    return ngx_http_mcp_send_error(r, status, id, code,
               (status == NGX_HTTP_FORBIDDEN)
               ? "Forbidden: no token for the upstream (token exchange "
                 "refused)"
               : "Service Unavailable: token exchange failed, retry later");
}


/* the status mcp_pass's POST is refused with, or 0 */

ngx_uint_t
ngx_http_mcp_exchange_refused(ngx_http_request_t *r)
{
    ngx_http_mcp_exchange_ctx_t  *ctx;

    ctx = ngx_http_get_module_ctx(r->main, ngx_http_mcp_proxy_module);

    return (ctx != NULL) ? ctx->refused : 0;
}


static u_char *
ngx_http_mcp_exchange_form(u_char *p, const char *name, ngx_str_t *value)
{
    p = ngx_cpymem(p, name, ngx_strlen(name));

    return p + ngx_http_mcp_exchange_escape(p, value);
}


/* application/x-www-form-urlencoded: all but the unreserved escaped */

static size_t
ngx_http_mcp_exchange_escape(u_char *dst, ngx_str_t *src)
{
    u_char     c, *p;
    ngx_uint_t i;

    static u_char  hex[] = "0123456789ABCDEF";

    p = dst;

    for (i = 0; i < src->len; i++) {
        c = src->data[i];

        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
            || (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_'
            || c == '~')
        {
            *p++ = c;
            continue;
        }

        *p++ = '%';
        *p++ = hex[c >> 4];
        *p++ = hex[c & 0xf];
    }

    return p - dst;
}


/* ------------------------------------------------------------------------
 * What the rest asks
 */

/* the exchanged token of r's main request, or NULL */

ngx_str_t *
ngx_http_mcp_exchange_token(ngx_http_request_t *r)
{
    ngx_http_mcp_exchange_ctx_t  *ctx;

    ctx = ngx_http_get_module_ctx(r->main, ngx_http_mcp_proxy_module);

    if (ctx == NULL || !ctx->decided || ctx->token.len == 0) {
        return NULL;
    }

    return &ctx->token;
}


static ngx_int_t
ngx_http_mcp_exchange_variable(ngx_http_request_t *r,
    ngx_http_variable_value_t *v, uintptr_t data)
{
    ngx_str_t  *token;

    token = ngx_http_mcp_exchange_token(r);

    if (token == NULL) {
        v->not_found = 1;
        return NGX_OK;
    }

    v->data = token->data;
    v->len = token->len;
    v->valid = 1;
    v->no_cacheable = 1;
    v->not_found = 0;

    return NGX_OK;
}
