
/*
 * ngx_http_mcp_auth_module, the access phase: the bearer token of every
 * request (a JWT, or an API key) is taken, verified and remembered per
 * worker; what it allows is what the MCP module asks (scopes per method
 * and tool, roles).  Deny by default: a request without a valid token
 * gets 401 with a WWW-Authenticate challenge that points to the RFC 9728
 * metadata document.
 */


#include "ngx_http_mcp_auth.h"
#include "ngx_http_mcp_auth_internal.h"
#include "ngx_http_mcp_json.h"
#include "ngx_http_mcp_jwt.h"
#include "ngx_http_mcp_schema.h"
#include "ngx_http_mcp_core.h"
#include "ngx_http_mcp_metrics.h"
#include "ngx_http_mcp_http.h"


static ngx_int_t ngx_http_mcp_auth_authenticate(ngx_http_request_t *r,
    ngx_http_mcp_auth_ctx_t *ctx);
static ngx_int_t ngx_http_mcp_auth_token(ngx_http_request_t *r,
    ngx_str_t *token, ngx_uint_t *apikey, ngx_uint_t *dpop);
static ngx_int_t ngx_http_mcp_auth_dpop(ngx_http_request_t *r,
    ngx_http_mcp_auth_ctx_t *ctx, ngx_str_t *token, ngx_uint_t apikey);
static ngx_int_t ngx_http_mcp_auth_bound(ngx_http_request_t *r,
    ngx_http_mcp_auth_ctx_t *ctx, ngx_uint_t bound, u_char *jkt);
static ngx_int_t ngx_http_mcp_auth_apikey(ngx_http_request_t *r,
    ngx_http_mcp_auth_ctx_t *ctx, ngx_str_t *key);
static ngx_int_t ngx_http_mcp_auth_jwt(ngx_http_request_t *r,
    ngx_http_mcp_auth_ctx_t *ctx, ngx_str_t *token);
static ngx_http_mcp_verified_t *ngx_http_mcp_auth_known(
    ngx_http_mcp_auth_loc_conf_t *alcf, ngx_str_t *token, uint32_t *hash);
static ngx_int_t ngx_http_mcp_auth_recall(ngx_http_request_t *r,
    ngx_http_mcp_auth_t *auth, ngx_http_mcp_verified_t *v);
static void ngx_http_mcp_auth_remember(ngx_http_mcp_verified_t *v,
    uint32_t hash, ngx_str_t *token, ngx_http_mcp_auth_t *auth,
    time_t until, ngx_uint_t gen, ngx_log_t *log);
static ngx_int_t ngx_http_mcp_auth_claims(ngx_http_request_t *r,
    ngx_http_mcp_auth_t *auth, ngx_http_mcp_jwt_t *jwt);
static ngx_int_t ngx_http_mcp_auth_scope_list(ngx_pool_t *pool,
    ngx_array_t *scopes, u_char *p, size_t len);
static ngx_int_t ngx_http_mcp_auth_done(ngx_http_request_t *r,
    ngx_http_mcp_auth_t *auth);
static ngx_int_t ngx_http_mcp_auth_refuse(ngx_http_request_t *r,
    ngx_http_mcp_auth_t *auth, ngx_uint_t status, const char *result,
    const char *error, const char *description);
static ngx_int_t ngx_http_mcp_auth_challenges(ngx_http_request_t *r,
    ngx_http_mcp_auth_loc_conf_t *alcf, ngx_uint_t status, const char *error,
    const char *description);
static ngx_int_t ngx_http_mcp_auth_scheme(ngx_http_request_t *r,
    ngx_http_mcp_auth_loc_conf_t *alcf, const char *scheme,
    ngx_uint_t status, const char *error, const char *description);
static void ngx_http_mcp_auth_strip(ngx_http_request_t *r);
static ngx_uint_t ngx_http_mcp_auth_has_scope(ngx_http_mcp_auth_t *auth,
    ngx_str_t *scope);


/* by rank: NGX_HTTP_MCP_ROLE_* */
static ngx_str_t  ngx_http_mcp_auth_roles[] = {
    ngx_null_string,
    ngx_string("service"),
    ngx_string("viewer"),
    ngx_string("developer"),
    ngx_string("admin")
};


/* ------------------------------------------------------------------------
 * The access phase
 */

ngx_int_t
ngx_http_mcp_auth_handler(ngx_http_request_t *r)
{
    ngx_int_t                      rc;
    ngx_http_mcp_auth_ctx_t       *ctx;
    ngx_http_mcp_loc_conf_t       *mlcf;
    ngx_http_mcp_auth_loc_conf_t  *alcf;

    alcf = ngx_http_get_module_loc_conf(r, ngx_http_mcp_auth_module);

    /* the metadata is what a client without a token reads first */
    if (alcf->realm.len == 0 || r != r->main || alcf->metadata) {
        return NGX_DECLINED;
    }

    /*
     * A browser sends a CORS preflight without a token; the MCP location
     * answers it itself, with nothing but what it allows (never to an
     * upstream), and checks the request it announces as any other.
     */
    mlcf = ngx_http_get_module_loc_conf(r, ngx_http_mcp_module);

    if (mlcf->enable && ngx_http_mcp_cors_is_preflight(r)) {
        return NGX_DECLINED;
    }

    ctx = ngx_http_get_module_ctx(r, ngx_http_mcp_auth_module);

    if (ctx == NULL) {
        ctx = ngx_pcalloc(r->pool, sizeof(ngx_http_mcp_auth_ctx_t));
        if (ctx == NULL) {
            return NGX_ERROR;
        }

        ctx->auth.conf = alcf;
        ngx_str_set(&ctx->auth.result, "none");

        ngx_http_set_ctx(r, ctx, ngx_http_mcp_auth_module);

    } else if (ctx->decided) {
        return NGX_OK;

    } else if (ctx->fetching) {
        if (!ctx->done) {
            return NGX_AGAIN;
        }

        ctx->fetching = 0;
        ctx->fetched = 1;

        ngx_http_mcp_auth_store(r, alcf, ctx);
    }

    rc = ngx_http_mcp_auth_authenticate(r, ctx);

    /* NGX_DONE: refused and finalized, the request may be gone */
    if (rc == NGX_OK) {
        ctx->decided = 1;
        ngx_http_mcp_metrics_auth(r, &ctx->auth.result);
    }

    return rc;
}


/*
 * NGX_OK (authenticated), NGX_AGAIN (a key set is being fetched),
 * NGX_DONE (refused, the refusal sent), NGX_ERROR.
 */

static ngx_int_t
ngx_http_mcp_auth_authenticate(ngx_http_request_t *r,
    ngx_http_mcp_auth_ctx_t *ctx)
{
    ngx_int_t   rc;
    ngx_str_t   token;
    ngx_uint_t  apikey, mode, dpop;

    mode = ((ngx_http_mcp_auth_loc_conf_t *) ctx->auth.conf)->dpop;
    dpop = mode;

    rc = ngx_http_mcp_auth_token(r, &token, &apikey, &dpop);

    if (rc == NGX_DECLINED) {
        return ngx_http_mcp_auth_refuse(r, &ctx->auth, NGX_HTTP_BAD_REQUEST,
                   "query_token", "invalid_request",
                   "access tokens are not accepted in the query string");
    }

    if (rc == NGX_ABORT) {
        return ngx_http_mcp_auth_refuse(r, &ctx->auth, NGX_HTTP_BAD_REQUEST,
                   "invalid", "invalid_request",
                   "more than one X-API-Key header");
    }

    if (token.len == 0) {
        return ngx_http_mcp_auth_refuse(r, &ctx->auth,
                                        NGX_HTTP_UNAUTHORIZED, "missing",
                                        NULL, NULL);
    }

    if (mode != NGX_HTTP_MCP_DPOP_OFF) {
        ctx->dpop = dpop;

        rc = ngx_http_mcp_auth_dpop(r, ctx, &token, apikey);
        if (rc != NGX_OK) {
            return rc;
        }
    }

    if (apikey) {
        return ngx_http_mcp_auth_apikey(r, ctx, &token);
    }

    /* the header's text stays when the header is stripped */
    ctx->auth.token = token;

    return ngx_http_mcp_auth_jwt(r, ctx, &token);
}


/*
 * The token of the Authorization header ("Bearer", or "DPoP" where
 * *dpop, the location's mcp_auth_dpop, is not off: then *dpop says
 * which), or of X-API-Key.
 * NGX_DECLINED when the query string carries one: RFC 6750's URI query
 * method is forbidden by the MCP authorization spec.  NGX_ABORT for two
 * X-API-Key headers: which one counts is a guess another proxy may make
 * otherwise (nginx itself refuses two Authorization headers).
 */

static ngx_int_t
ngx_http_mcp_auth_token(ngx_http_request_t *r, ngx_str_t *token,
    ngx_uint_t *apikey, ngx_uint_t *dpop)
{
    u_char           *p, *end;
    size_t            skip;
    ngx_str_t         value;
    ngx_uint_t        mode;
    ngx_table_elt_t  *h;

    ngx_str_null(token);
    *apikey = 0;
    mode = *dpop;
    *dpop = 0;

    if (r->args.len) {
        p = r->args.data;
        end = p + r->args.len;

        while (p < end) {
            if ((size_t) (end - p) >= sizeof("access_token=") - 1
                && ngx_strncmp(p, "access_token=",
                               sizeof("access_token=") - 1) == 0)
            {
                return NGX_DECLINED;
            }

            p = ngx_strlchr(p, end, '&');
            if (p == NULL) {
                break;
            }

            p++;
        }
    }

    h = r->headers_in.authorization;

    if (h != NULL) {
        value = h->value;

        if (value.len >= sizeof("Bearer ") - 1
            && ngx_strncasecmp(value.data, (u_char *) "Bearer ",
                               sizeof("Bearer ") - 1) == 0)
        {
            skip = sizeof("Bearer ") - 1;

        } else if (mode != NGX_HTTP_MCP_DPOP_OFF
                   && value.len >= sizeof("DPoP ") - 1
                   && ngx_strncasecmp(value.data, (u_char *) "DPoP ",
                                      sizeof("DPoP ") - 1) == 0)
        {
            skip = sizeof("DPoP ") - 1;
            *dpop = 1;

        } else {
            return NGX_OK;
        }

        value.data += skip;
        value.len -= skip;

        while (value.len && value.data[0] == ' ') {
            value.data++;
            value.len--;
        }

        while (value.len && value.data[value.len - 1] == ' ') {
            value.len--;
        }

        *token = value;

        /* a JWT has two dots; anything else may be an API key */
        *apikey = (ngx_strlchr(value.data, value.data + value.len, '.')
                   == NULL);

        return NGX_OK;
    }

    h = ngx_http_mcp_header_in(r, "x-api-key", sizeof("x-api-key") - 1);

    if (h != NULL) {
        if (ngx_http_mcp_header_in_after(r, h, "x-api-key",
                                         sizeof("x-api-key") - 1)
            != NULL)
        {
            return NGX_ABORT;
        }

        *token = h->value;
        *apikey = 1;
    }

    return NGX_OK;
}


/*
 * Where mcp_auth_dpop is not off: a request with the DPoP scheme needs a
 * good proof, "required" wants nothing else.  NGX_OK to go on with the
 * token, NGX_DONE (refused), NGX_ERROR.
 */

static ngx_int_t
ngx_http_mcp_auth_dpop(ngx_http_request_t *r, ngx_http_mcp_auth_ctx_t *ctx,
    ngx_str_t *token, ngx_uint_t apikey)
{
    ngx_int_t                      rc;
    ngx_str_t                      nonce;
    const char                    *error;
    ngx_http_mcp_auth_loc_conf_t  *alcf;

    alcf = ctx->auth.conf;

    if (!ctx->dpop) {
        if (alcf->dpop == NGX_HTTP_MCP_DPOP_REQUIRED) {
            return ngx_http_mcp_auth_refuse(r, &ctx->auth,
                       NGX_HTTP_UNAUTHORIZED, "invalid", "invalid_token",
                       "a DPoP-bound token with a DPoP proof is required");
        }

        return NGX_OK;
    }

    if (apikey) {
        return ngx_http_mcp_auth_refuse(r, &ctx->auth,
                                        NGX_HTTP_UNAUTHORIZED, "invalid",
                                        "invalid_token",
                                        "an API key is not DPoP-bound");
    }

    rc = ngx_http_mcp_auth_dpop_proof(r, ctx, token, &error);

    if (rc == NGX_DECLINED && ctx->use_nonce) {
        if (ngx_http_mcp_auth_dpop_nonce(r, alcf, &nonce) != NGX_OK
            || ngx_http_mcp_header_out(r, "DPoP-Nonce", &nonce) != NGX_OK)
        {
            return NGX_ERROR;
        }

        return ngx_http_mcp_auth_refuse(r, &ctx->auth,
                                        NGX_HTTP_UNAUTHORIZED, "invalid",
                                        "use_dpop_nonce", error);
    }

    if (rc == NGX_DECLINED) {
        return ngx_http_mcp_auth_refuse(r, &ctx->auth,
                                        NGX_HTTP_UNAUTHORIZED, "invalid",
                                        "invalid_dpop_proof", error);
    }

    return rc;
}


/*
 * A good token and how it was presented (RFC 9449 7.1, 7.2): a token
 * bound to a key (cnf.jkt) only with a proof by that key, a proof only
 * with a bound token, and a proof only once.
 */

static ngx_int_t
ngx_http_mcp_auth_bound(ngx_http_request_t *r, ngx_http_mcp_auth_ctx_t *ctx,
    ngx_uint_t bound, u_char *jkt)
{
    ngx_int_t                      rc;
    ngx_table_elt_t               *h;
    ngx_http_mcp_auth_loc_conf_t  *alcf;

    alcf = ctx->auth.conf;

    if (!ctx->dpop) {
        if (bound) {
            return ngx_http_mcp_auth_refuse(r, &ctx->auth,
                       NGX_HTTP_UNAUTHORIZED, "invalid", "invalid_token",
                       "a DPoP-bound token presented as a bearer token");
        }

        return NGX_OK;
    }

    if (!bound) {
        return ngx_http_mcp_auth_refuse(r, &ctx->auth,
                                        NGX_HTTP_UNAUTHORIZED, "invalid",
                                        "invalid_token",
                                        "the token is not DPoP-bound");
    }

    if (CRYPTO_memcmp(jkt, ctx->jkt, sizeof(ctx->jkt)) != 0) {
        return ngx_http_mcp_auth_refuse(r, &ctx->auth,
                   NGX_HTTP_UNAUTHORIZED, "invalid", "invalid_dpop_proof",
                   "the proof's key is not the token's (cnf.jkt)");
    }

    rc = ngx_http_mcp_dpop_record(alcf->dpop_zone, ctx->proof,
                                  ctx->proof_expire);

    if (rc == NGX_DECLINED) {
        return ngx_http_mcp_auth_refuse(r, &ctx->auth,
                                        NGX_HTTP_UNAUTHORIZED, "invalid",
                                        "invalid_dpop_proof",
                                        "the proof was used before (jti)");
    }

    if (rc != NGX_OK) {
        /* a replay let through would be worse than a retry */
        ngx_log_error(NGX_LOG_WARN, r->connection->log, 0,
                      "mcp auth: no room for DPoP proofs in the zone");

        ngx_str_set(&ctx->auth.result, "unavailable");
        ngx_http_mcp_metrics_auth(r, &ctx->auth.result);

        return NGX_HTTP_SERVICE_UNAVAILABLE;
    }

    /* upstreams see the proof no more than the token it goes with */
    if (!alcf->passthrough) {
        h = ngx_http_mcp_header_in(r, "dpop", sizeof("dpop") - 1);

        if (h != NULL) {
            h->value.len = 0;
            h->value.data = (u_char *) "";
        }
    }

    return NGX_OK;
}


static ngx_int_t
ngx_http_mcp_auth_apikey(ngx_http_request_t *r, ngx_http_mcp_auth_ctx_t *ctx,
    ngx_str_t *key)
{
    u_char                         digest[32];
    ngx_uint_t                     i;
    ngx_http_mcp_auth_t           *auth;
    ngx_http_mcp_apikey_t         *k;
    ngx_http_mcp_auth_loc_conf_t  *alcf;

    auth = &ctx->auth;
    alcf = auth->conf;

    if (alcf->api_keys == NULL) {
        return ngx_http_mcp_auth_refuse(r, auth, NGX_HTTP_UNAUTHORIZED,
                                        "invalid", "invalid_token",
                                        "malformed token");
    }

    if (ngx_http_mcp_sha256(key->data, key->len, digest) != NGX_OK) {
        return NGX_ERROR;
    }

    k = alcf->api_keys->elts;

    for (i = 0; i < alcf->api_keys->nelts; i++) {
        if (CRYPTO_memcmp(k[i].digest, digest, sizeof(digest)) != 0) {
            continue;
        }

        auth->subject = k[i].subject;
        auth->role = k[i].role;
        auth->scopes = k[i].scopes;
        ngx_str_set(&auth->issuer, "api-key");
        ngx_str_set(&auth->result, "ok");

        return ngx_http_mcp_auth_done(r, auth);
    }

    return ngx_http_mcp_auth_refuse(r, auth, NGX_HTTP_UNAUTHORIZED,
                                    "invalid", "invalid_token",
                                    "unknown API key");
}


static ngx_int_t
ngx_http_mcp_auth_jwt(ngx_http_request_t *r, ngx_http_mcp_auth_ctx_t *ctx,
    ngx_str_t *token)
{
    u_char                         jkt[32];
    time_t                         until;
    uint32_t                       hash;
    cJSON                         *exp;
    ngx_int_t                      rc;
    ngx_uint_t                     stale, refetch, gen, bound;
    const char                    *error;
    ngx_array_t                   *keys;
    ngx_http_mcp_jwt_t             jwt;
    ngx_http_mcp_verified_t       *v;
    ngx_http_mcp_auth_t           *auth;
    ngx_http_mcp_auth_loc_conf_t  *alcf;

    auth = &ctx->auth;
    alcf = auth->conf;

    v = ngx_http_mcp_auth_known(alcf, token, &hash);

    if (v->data != NULL && v->hash == hash && v->token_len == token->len
        && v->until >= ngx_time()
        && v->gen == ((alcf->cache != NULL) ? alcf->cache->gen : 0)
        && ngx_http_mcp_secret_equal(v->token, token->data, token->len))
    {
        if (alcf->dpop != NGX_HTTP_MCP_DPOP_OFF) {
            rc = ngx_http_mcp_auth_bound(r, ctx, v->bound, v->jkt);
            if (rc != NGX_OK) {
                return rc;
            }
        }

        return ngx_http_mcp_auth_recall(r, auth, v);
    }

    if (ngx_http_mcp_jwt_parse(r->pool, token, &jwt, &error) != NGX_OK) {
        return ngx_http_mcp_auth_refuse(r, auth, NGX_HTTP_UNAUTHORIZED,
                                        "invalid", "invalid_token", error);
    }

    rc = NGX_DECLINED;
    error = "no key for the token";

    if (alcf->file_keys != NULL) {
        rc = ngx_http_mcp_jwt_verify(&jwt, alcf->file_keys, &error);
    }

    if (rc != NGX_OK && rc != NGX_ERROR && alcf->key_request.len) {
        keys = ngx_http_mcp_auth_keys(r, alcf, &stale, &refetch);

        if (((keys == NULL && refetch) || stale) && !ctx->fetched) {
            return ngx_http_mcp_auth_fetch(r, ctx);
        }

        if (keys == NULL) {
            /*
             * No key set: the key server failed (its [error] line says
             * how), or another request's first fetch is under way.  The
             * token may be good, and a 401 would send its client for
             * another: 503 and Retry-After (the JSON-RPC error filter).
             */
            ngx_str_set(&auth->result, "unavailable");
            ngx_http_mcp_metrics_auth(r, &auth->result);

            return NGX_HTTP_SERVICE_UNAVAILABLE;
        }

        rc = ngx_http_mcp_jwt_verify(&jwt, keys, &error);

        /* a key rotated in: refetch, but not more often than allowed */
        if (rc == NGX_ABORT && refetch && !ctx->fetched) {
            return ngx_http_mcp_auth_fetch(r, ctx);
        }
    }

    if (rc == NGX_ERROR) {
        ngx_log_error(NGX_LOG_ERR, r->connection->log, 0,
                      "mcp auth: token verification failed");
        return NGX_ERROR;
    }

    if (rc != NGX_OK) {
        return ngx_http_mcp_auth_refuse(r, auth, NGX_HTTP_UNAUTHORIZED,
                                        "invalid", "invalid_token", error);
    }

    if (ngx_http_mcp_jwt_check_claims(&jwt, ngx_time(), alcf->leeway,
                                      alcf->issuers, &alcf->accept_aud,
                                      &error)
        != NGX_OK)
    {
        return ngx_http_mcp_auth_refuse(r, auth, NGX_HTTP_UNAUTHORIZED,
                   ngx_strstr(error, "expired") ? "expired" : "invalid",
                   "invalid_token", error);
    }

    bound = 0;

    if (alcf->dpop != NGX_HTTP_MCP_DPOP_OFF) {
        if (ngx_http_mcp_auth_dpop_cnf(&jwt, jkt, &bound) != NGX_OK) {
            return ngx_http_mcp_auth_refuse(r, auth, NGX_HTTP_UNAUTHORIZED,
                                            "invalid", "invalid_token",
                                            "malformed cnf.jkt");
        }

        rc = ngx_http_mcp_auth_bound(r, ctx, bound, jkt);
        if (rc != NGX_OK) {
            return rc;
        }
    }

    if (ngx_http_mcp_auth_claims(r, auth, &jwt) != NGX_OK) {
        return NGX_ERROR;
    }

    ngx_str_set(&auth->result, "ok");

    rc = ngx_http_mcp_auth_done(r, auth);

    if (rc == NGX_OK) {
        /*
         * Remembered until the token expires, or the key set changes, or
         * a day passes: an issuer's exp may be 1e300, which no time_t
         * holds (converting it is undefined).
         */
        exp = ngx_http_mcp_json_get(jwt.claims, "exp");
        gen = (alcf->cache != NULL) ? alcf->cache->gen : 0;
        until = ngx_time() + 86400;

        if (exp->valuedouble < (double) until) {
            until = (time_t) exp->valuedouble + alcf->leeway;
        }

        ngx_http_mcp_auth_remember(v, hash, token, auth, until, gen,
                                   r->connection->log);

        v->bound = bound;

        if (bound) {
            ngx_memcpy(v->jkt, jkt, sizeof(jkt));
        }
    }

    return rc;
}


static ngx_http_mcp_verified_t *
ngx_http_mcp_auth_known(ngx_http_mcp_auth_loc_conf_t *alcf,
    ngx_str_t *token, uint32_t *hash)
{
    size_t  n;

    /*
     * The end of a JWS is its signature, as good as random: enough to
     * pick the slot, at a fraction of hashing a long token.  The whole
     * token is compared before an entry counts.
     */
    n = ngx_min(token->len, 32);
    *hash = ngx_crc32_short(token->data + token->len - n, n);

    return &alcf->verified[*hash & (NGX_HTTP_MCP_AUTH_VERIFIED - 1)];
}


/* a known token: what was learnt of it, copied for this request */

static ngx_int_t
ngx_http_mcp_auth_recall(ngx_http_request_t *r, ngx_http_mcp_auth_t *auth,
    ngx_http_mcp_verified_t *v)
{
    ngx_uint_t   i;
    ngx_str_t   *scope;

    auth->subject.len = v->subject.len;
    auth->subject.data = ngx_pstrdup(r->pool, &v->subject);
    auth->issuer.len = v->issuer.len;
    auth->issuer.data = ngx_pstrdup(r->pool, &v->issuer);
    auth->role = v->role;

    auth->scopes = ngx_array_create(r->pool, v->nscopes ? v->nscopes : 1,
                                    sizeof(ngx_str_t));

    if (auth->subject.data == NULL || auth->issuer.data == NULL
        || auth->scopes == NULL)
    {
        return NGX_ERROR;
    }

    for (i = 0; i < v->nscopes; i++) {
        scope = ngx_array_push(auth->scopes);
        if (scope == NULL) {
            return NGX_ERROR;
        }

        scope->len = v->scopes[i].len;
        scope->data = ngx_pstrdup(r->pool, &v->scopes[i]);
        if (scope->data == NULL) {
            return NGX_ERROR;
        }
    }

    ngx_memcpy(auth->binding, v->binding, NGX_HTTP_MCP_AUTH_BINDING_LEN);
    ngx_str_set(&auth->result, "ok");

    auth->authenticated = 1;

    if (!((ngx_http_mcp_auth_loc_conf_t *) auth->conf)->passthrough) {
        ngx_http_mcp_auth_strip(r);
    }

    return NGX_OK;
}


static void
ngx_http_mcp_auth_remember(ngx_http_mcp_verified_t *v, uint32_t hash,
    ngx_str_t *token, ngx_http_mcp_auth_t *auth, time_t until,
    ngx_uint_t gen, ngx_log_t *log)
{
    u_char      *p;
    size_t       len;
    ngx_uint_t   i, n;
    ngx_str_t   *scopes;

    n = auth->scopes->nelts;
    scopes = auth->scopes->elts;

    len = n * sizeof(ngx_str_t) + token->len + auth->subject.len
          + auth->issuer.len;

    for (i = 0; i < n; i++) {
        len += scopes[i].len;
    }

    if (v->data != NULL) {
        ngx_free(v->data);
        v->data = NULL;
    }

    /* the ngx_str_t array first: aligned */
    p = ngx_alloc(len, log);
    if (p == NULL) {
        return;
    }

    v->data = p;
    v->scopes = (ngx_str_t *) p;
    v->nscopes = n;
    p += n * sizeof(ngx_str_t);

    v->token = p;
    p = ngx_cpymem(p, token->data, token->len);

    v->subject.data = p;
    v->subject.len = auth->subject.len;
    p = ngx_cpymem(p, auth->subject.data, auth->subject.len);

    v->issuer.data = p;
    v->issuer.len = auth->issuer.len;
    p = ngx_cpymem(p, auth->issuer.data, auth->issuer.len);

    for (i = 0; i < n; i++) {
        v->scopes[i].data = p;
        v->scopes[i].len = scopes[i].len;
        p = ngx_cpymem(p, scopes[i].data, scopes[i].len);
    }

    v->hash = hash;
    v->token_len = token->len;
    v->until = until;
    v->gen = gen;
    v->role = auth->role;
    ngx_memcpy(v->binding, auth->binding, NGX_HTTP_MCP_AUTH_BINDING_LEN);
}


/* subject, issuer, scopes and role out of verified claims */

static ngx_int_t
ngx_http_mcp_auth_claims(ngx_http_request_t *r, ngx_http_mcp_auth_t *auth,
    ngx_http_mcp_jwt_t *jwt)
{
    cJSON                         *v, *item;
    ngx_str_t                      s, *scope;
    ngx_uint_t                     rank, best;
    ngx_http_mcp_auth_loc_conf_t  *alcf;

    alcf = auth->conf;

    v = ngx_http_mcp_json_get(jwt->claims, "sub");
    auth->subject.data = (u_char *) v->valuestring;
    auth->subject.len = ngx_strlen(v->valuestring);

    v = ngx_http_mcp_json_get(jwt->claims, "iss");
    auth->issuer.data = (u_char *) v->valuestring;
    auth->issuer.len = ngx_strlen(v->valuestring);

    auth->scopes = ngx_array_create(r->pool, 4, sizeof(ngx_str_t));
    if (auth->scopes == NULL) {
        return NGX_ERROR;
    }

    v = ngx_http_mcp_json_get(jwt->claims, "scope");

    if (v == NULL) {
        v = ngx_http_mcp_json_get(jwt->claims, "scp");
    }

    if (cJSON_IsString(v)) {
        if (ngx_http_mcp_auth_scope_list(r->pool, auth->scopes,
                                         (u_char *) v->valuestring,
                                         ngx_strlen(v->valuestring))
            != NGX_OK)
        {
            return NGX_ERROR;
        }

    } else if (cJSON_IsArray(v)) {
        cJSON_ArrayForEach(item, v) {
            if (!cJSON_IsString(item)) {
                continue;
            }

            scope = ngx_array_push(auth->scopes);
            if (scope == NULL) {
                return NGX_ERROR;
            }

            scope->data = (u_char *) item->valuestring;
            scope->len = ngx_strlen(item->valuestring);
        }
    }

    /* the strongest role the claim names */
    v = ngx_http_mcp_json_get(jwt->claims, (char *) alcf->role_claim.data);
    best = NGX_HTTP_MCP_ROLE_NONE;

    if (cJSON_IsString(v) || cJSON_IsArray(v)) {
        item = cJSON_IsString(v) ? v : v->child;

        for ( /* void */ ; item; item = cJSON_IsString(v) ? NULL : item->next)
        {
            if (!cJSON_IsString(item)) {
                continue;
            }

            s.data = (u_char *) item->valuestring;
            s.len = ngx_strlen(item->valuestring);

            rank = ngx_http_mcp_auth_role_rank(&s);

            if (rank > best) {
                best = rank;
            }
        }
    }

    auth->role = ngx_http_mcp_auth_roles[best];

    return NGX_OK;
}


static ngx_int_t
ngx_http_mcp_auth_scope_list(ngx_pool_t *pool, ngx_array_t *scopes,
    u_char *p, size_t len)
{
    u_char     *end, *q;
    ngx_str_t  *scope;

    end = p + len;

    while (p < end) {
        while (p < end && *p == ' ') {
            p++;
        }

        q = p;

        while (q < end && *q != ' ') {
            q++;
        }

        if (q > p) {
            scope = ngx_array_push(scopes);
            if (scope == NULL) {
                return NGX_ERROR;
            }

            scope->data = p;
            scope->len = q - p;
        }

        p = q;
    }

    return NGX_OK;
}


/* the caller is known: bind, and keep the token from upstreams */

static ngx_int_t
ngx_http_mcp_auth_done(ngx_http_request_t *r, ngx_http_mcp_auth_t *auth)
{
    u_char                        *p, *buf;
    ngx_http_mcp_auth_loc_conf_t  *alcf;

    alcf = auth->conf;

    buf = ngx_pnalloc(r->pool, auth->issuer.len + 1 + auth->subject.len);
    if (buf == NULL) {
        return NGX_ERROR;
    }

    /* the issuer cannot hold a NUL: no two pairs give the same text */
    p = ngx_cpymem(buf, auth->issuer.data, auth->issuer.len);
    *p++ = '\0';
    p = ngx_cpymem(p, auth->subject.data, auth->subject.len);

    if (ngx_http_mcp_sha256(buf, p - buf, auth->binding) != NGX_OK) {
        return NGX_ERROR;
    }

    auth->authenticated = 1;

    if (!alcf->passthrough) {
        ngx_http_mcp_auth_strip(r);
    }

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "mcp auth: subject \"%V\", role \"%V\"",
                   &auth->subject, &auth->role);

    return NGX_OK;
}


/*
 * Upstreams of the location (mcp_pass, proxy_pass) must not see the
 * client's token: the header is renamed to one nobody reads, and
 * proxy_pass drops it because its value is empty.
 */

static void
ngx_http_mcp_auth_strip(ngx_http_request_t *r)
{
    ngx_uint_t        i;
    ngx_list_part_t  *part;
    ngx_table_elt_t  *h;

    part = &r->headers_in.headers.part;
    i = 0;

    while ((h = ngx_http_mcp_header_walk(&part, &i)) != NULL) {

        if ((h->key.len == sizeof("Authorization") - 1
             && ngx_strncasecmp(h->key.data, (u_char *) "Authorization",
                                h->key.len) == 0)
            || (h->key.len == sizeof("X-API-Key") - 1
                && ngx_strncasecmp(h->key.data, (u_char *) "X-API-Key",
                                   h->key.len) == 0))
        {
            h->value.len = 0;
            h->value.data = (u_char *) "";
        }
    }

    r->headers_in.authorization = NULL;
}


/*
 * Sends the refusal: 400, 401 or 403 with a WWW-Authenticate challenge
 * and a JSON-RPC error body.
 */

static ngx_int_t
ngx_http_mcp_auth_refuse(ngx_http_request_t *r, ngx_http_mcp_auth_t *auth,
    ngx_uint_t status, const char *result, const char *error,
    const char *description)
{
    u_char                        *msg;
    ngx_int_t                      rc;
    ngx_http_mcp_auth_loc_conf_t  *alcf;

    alcf = auth->conf;

    auth->result.data = (u_char *) result;
    auth->result.len = ngx_strlen(result);

    ngx_http_mcp_metrics_auth(r, &auth->result);

    if (ngx_http_mcp_auth_challenges(r, alcf, status, error, description)
        != NGX_OK)
    {
        return NGX_ERROR;
    }

    msg = ngx_pnalloc(r->pool, 128 + (description ? ngx_strlen(description)
                                                   : 0));
    if (msg == NULL) {
        return NGX_ERROR;
    }

    (void) ngx_sprintf(msg, "%s%s%s%Z",
                       (status == NGX_HTTP_BAD_REQUEST) ? "Bad Request"
                                                        : "Unauthorized",
                       description ? ": " : ": a bearer token is required",
                       description ? description : "");

    rc = ngx_http_discard_request_body(r);

    if (rc != NGX_OK) {
        r->keepalive = 0;
    }

    rc = ngx_http_mcp_send_error(r, status, NULL,
                                 NGX_HTTP_MCP_INVALID_REQUEST,
                                 (const char *) msg);

    ngx_http_finalize_request(r, rc);

    return NGX_DONE;
}


/*
 * The WWW-Authenticate challenges of a refusal: Bearer; where
 * mcp_auth_dpop is not off, DPoP too ("required": DPoP alone).  The
 * error goes with the scheme the client used, a proof's with DPoP.
 */

static ngx_int_t
ngx_http_mcp_auth_challenges(ngx_http_request_t *r,
    ngx_http_mcp_auth_loc_conf_t *alcf, ngx_uint_t status, const char *error,
    const char *description)
{
    ngx_uint_t                dpop;
    ngx_http_mcp_auth_ctx_t  *ctx;

    if (alcf->dpop == NGX_HTTP_MCP_DPOP_OFF) {
        return ngx_http_mcp_auth_scheme(r, alcf, "Bearer", status, error,
                                        description);
    }

    if (description != NULL) {
        ngx_log_error(NGX_LOG_INFO, r->connection->log, 0,
                      "mcp auth: refused: %s", description);
    }

    ctx = ngx_http_get_module_ctx(r, ngx_http_mcp_auth_module);

    dpop = (alcf->dpop == NGX_HTTP_MCP_DPOP_REQUIRED)
           || (ctx != NULL && ctx->dpop)
           || (error != NULL && ngx_strstr(error, "dpop") != NULL);

    if (alcf->dpop == NGX_HTTP_MCP_DPOP_ALLOWED
        && ngx_http_mcp_auth_scheme(r, alcf, "Bearer", status,
                                    dpop ? NULL : error,
                                    dpop ? NULL : description)
           != NGX_OK)
    {
        return NGX_ERROR;
    }

    return ngx_http_mcp_auth_scheme(r, alcf, "DPoP", status,
                                    dpop ? error : NULL,
                                    dpop ? description : NULL);
}


static ngx_int_t
ngx_http_mcp_auth_scheme(ngx_http_request_t *r,
    ngx_http_mcp_auth_loc_conf_t *alcf, const char *scheme,
    ngx_uint_t status, const char *error, const char *description)
{
    u_char      *p;
    size_t       len;
    ngx_str_t    value, *s;
    ngx_uint_t   i;

    len = sizeof("DPoP realm=\"\", error=\"\", error_description=\"\", "
                 "resource_metadata=\"\", scope=\"\", algs=\"\"") - 1
          + alcf->realm.len + alcf->metadata_url.len + 64
          + alcf->dpop_algs_text.len
          + (description ? ngx_strlen(description) : 0);

    s = alcf->scopes ? alcf->scopes->elts : NULL;

    for (i = 0; alcf->scopes && i < alcf->scopes->nelts; i++) {
        len += s[i].len + 1;
    }

    value.data = ngx_pnalloc(r->pool, len);
    if (value.data == NULL) {
        return NGX_ERROR;
    }

    p = ngx_sprintf(value.data, "%s realm=\"%V\"", scheme, &alcf->realm);

    if (error != NULL) {
        p = ngx_sprintf(p, ", error=\"%s\"", error);
    }

    if (description != NULL) {
        p = ngx_sprintf(p, ", error_description=\"%s\"", description);
    }

    p = ngx_sprintf(p, ", resource_metadata=\"%V\"", &alcf->metadata_url);

    if (status == NGX_HTTP_UNAUTHORIZED && alcf->scopes != NULL) {
        p = ngx_cpymem(p, ", scope=\"", sizeof(", scope=\"") - 1);

        for (i = 0; i < alcf->scopes->nelts; i++) {
            if (i) {
                *p++ = ' ';
            }

            p = ngx_cpymem(p, s[i].data, s[i].len);
        }

        *p++ = '"';
    }

    if (scheme[0] == 'D') {
        p = ngx_sprintf(p, ", algs=\"%V\"", &alcf->dpop_algs_text);
    }

    value.len = p - value.data;

    return ngx_http_mcp_header_out(r, "WWW-Authenticate", &value);
}


/* ------------------------------------------------------------------------
 * What the MCP module asks
 */

ngx_http_mcp_auth_t *
ngx_http_mcp_auth_get(ngx_http_request_t *r)
{
    ngx_http_mcp_auth_ctx_t  *ctx;

    ctx = ngx_http_get_module_ctx(r->main, ngx_http_mcp_auth_module);

    if (ctx == NULL || !ctx->auth.authenticated) {
        return NULL;
    }

    return &ctx->auth;
}


ngx_uint_t
ngx_http_mcp_auth_tool_scoped(ngx_http_mcp_auth_t *auth)
{
    ngx_http_mcp_auth_loc_conf_t  *alcf;

    alcf = auth->conf;

    return alcf->tool_scopes != NULL;
}


ngx_int_t
ngx_http_mcp_auth_permits(ngx_http_mcp_auth_t *auth, const char *capability,
    ngx_str_t *tool, ngx_str_t *missing_scope)
{
    u_char                        *p;
    ngx_str_t                      scope;
    ngx_uint_t                     i, rank, granted;
    ngx_keyval_t                  *kv;
    ngx_http_mcp_auth_loc_conf_t  *alcf;

    static ngx_str_t  caps[] = {
        ngx_string("mcp:tools"),
        ngx_string("mcp:resources"),
        ngx_string("mcp:prompts")
    };

    static ngx_str_t  alts[] = {
        ngx_string("tools:execute"),
        ngx_string("resources:read"),
        ngx_string("prompts:get")
    };

    if (auth == NULL) {
        return NGX_OK;
    }

    alcf = auth->conf;
    rank = ngx_http_mcp_auth_role_rank(&auth->role);

    if (rank == NGX_HTTP_MCP_ROLE_ADMIN) {
        return NGX_OK;
    }

    p = (u_char *) capability;

    i = (p[0] == 't') ? 0 : (p[0] == 'r') ? 1 : 2;

    /* viewer reads, developer also calls tools, service only calls */
    granted = (rank == NGX_HTTP_MCP_ROLE_DEVELOPER)
              || (rank == NGX_HTTP_MCP_ROLE_VIEWER && i != 0)
              || (rank == NGX_HTTP_MCP_ROLE_SERVICE && i == 0);

    if (!granted && !ngx_http_mcp_auth_has_scope(auth, &caps[i])
        && !ngx_http_mcp_auth_has_scope(auth, &alts[i]))
    {
        *missing_scope = caps[i];
        return NGX_DECLINED;
    }

    if (tool == NULL || alcf->tool_scopes == NULL) {
        return NGX_OK;
    }

    kv = alcf->tool_scopes->elts;

    for (i = 0; i < alcf->tool_scopes->nelts; i++) {
        if (kv[i].key.len != tool->len
            || ngx_strncmp(kv[i].key.data, tool->data, tool->len) != 0)
        {
            continue;
        }

        scope = kv[i].value;

        if (!ngx_http_mcp_auth_has_scope(auth, &scope)) {
            *missing_scope = scope;
            return NGX_DECLINED;
        }
    }

    return NGX_OK;
}


static ngx_uint_t
ngx_http_mcp_auth_has_scope(ngx_http_mcp_auth_t *auth, ngx_str_t *scope)
{
    ngx_str_t   *s;
    ngx_uint_t   i;

    if (auth->scopes == NULL) {
        return 0;
    }

    s = auth->scopes->elts;

    for (i = 0; i < auth->scopes->nelts; i++) {
        if (s[i].len == scope->len
            && ngx_strncmp(s[i].data, scope->data, scope->len) == 0)
        {
            return 1;
        }
    }

    return 0;
}


ngx_uint_t
ngx_http_mcp_auth_role_rank(ngx_str_t *role)
{
    ngx_uint_t  i;

    for (i = NGX_HTTP_MCP_ROLE_SERVICE; i <= NGX_HTTP_MCP_ROLE_ADMIN; i++) {
        if (role->len == ngx_http_mcp_auth_roles[i].len
            && ngx_strncmp(role->data, ngx_http_mcp_auth_roles[i].data,
                           role->len) == 0)
        {
            return i;
        }
    }

    return NGX_HTTP_MCP_ROLE_NONE;
}


ngx_int_t
ngx_http_mcp_auth_challenge(ngx_http_request_t *r, ngx_str_t *scope)
{
    ngx_str_t                      value;
    ngx_http_mcp_auth_ctx_t       *ctx;
    ngx_http_mcp_auth_loc_conf_t  *alcf;

    ctx = ngx_http_get_module_ctx(r->main, ngx_http_mcp_auth_module);
    alcf = ngx_http_get_module_loc_conf(r, ngx_http_mcp_auth_module);

    if (ctx != NULL) {
        ngx_str_set(&ctx->auth.result, "insufficient_scope");
        ngx_http_mcp_metrics_auth(r, &ctx->auth.result);
    }

    value.len = sizeof("Bearer realm=\"\", error=\"insufficient_scope\", "
                       "scope=\"\", resource_metadata=\"\"") - 1
                + alcf->realm.len + scope->len + alcf->metadata_url.len;

    value.data = ngx_pnalloc(r->pool, value.len);
    if (value.data == NULL) {
        return NGX_ERROR;
    }

    /* RFC 9449 7.1: the scheme the token came with */
    value.len = ngx_sprintf(value.data, "%s realm=\"%V\", "
                            "error=\"insufficient_scope\", scope=\"%V\", "
                            "resource_metadata=\"%V\"",
                            (ctx != NULL && ctx->dpop) ? "DPoP" : "Bearer",
                            &alcf->realm, scope, &alcf->metadata_url)
                - value.data;

    return ngx_http_mcp_header_out(r, "WWW-Authenticate", &value);
}


/* mcp_schema_format of the location: whether format asserts */

ngx_uint_t
ngx_http_mcp_auth_format_assert(void **loc_conf)
{
    ngx_http_mcp_auth_loc_conf_t  *alcf;

    alcf = loc_conf[ngx_http_mcp_auth_module.ctx_index];

    return alcf->schema_format;
}


ngx_int_t
ngx_http_mcp_auth_check_input(void **loc_conf, ngx_pool_t *pool,
    cJSON *arguments, u_char **error)
{
    u_char                        *p;
    const char                    *what;
    ngx_http_mcp_auth_loc_conf_t  *alcf;

    /* the location's conf outlives the request: a call may, too */
    alcf = loc_conf[ngx_http_mcp_auth_module.ctx_index];

    if (arguments == NULL
        || ngx_http_mcp_schema_check_limits(arguments, 1, alcf->max_depth,
                                        alcf->max_string, &what)
           == NGX_OK)
    {
        return NGX_OK;
    }

    p = ngx_pnalloc(pool, 128);
    if (p == NULL) {
        return NGX_ERROR;
    }

    *error = p;

    p = ngx_snprintf(p, 127, "Invalid params: arguments %s (limit %ui)",
                     what, (what[0] == 'n') ? alcf->max_depth
                                            : (ngx_uint_t) alcf->max_string);
    *p = '\0';

    return NGX_DECLINED;
}
