
/*
 * ngx_http_mcp_auth_module, DPoP (RFC 9449) as a resource server: the
 * proof of a request presented with "Authorization: DPoP", checked
 * against this request (method, URI as the client addressed it, time,
 * the token's hash), the token's cnf.jkt, and the proofs already seen.
 * The replay records live in the session zone (the store's), so that a
 * proof sent again reaches no worker that would take it.  The access
 * phase (ngx_http_mcp_auth_access.c) decides; this file answers.
 */


#include "ngx_http_mcp_auth.h"
#include "ngx_http_mcp_auth_internal.h"
#include "ngx_http_mcp_json.h"
#include "ngx_http_mcp_jwt.h"
#include "ngx_http_mcp_core.h"
#include "ngx_http_mcp_http.h"

#include <openssl/hmac.h>
#include <openssl/sha.h>


#define NGX_HTTP_MCP_DPOP_JTI_MAX  256

/* a nonce: 8 bytes of its period, 16 of their MAC; base64url, 32 bytes */
#define NGX_HTTP_MCP_DPOP_NONCE    24


static ngx_int_t ngx_http_mcp_auth_dpop_key(ngx_http_request_t *r,
    ngx_http_mcp_auth_loc_conf_t *alcf, cJSON *jwk, u_char *jkt,
    ngx_http_mcp_jwk_t *key, const char **error);
static void ngx_http_mcp_auth_dpop_keys_cleanup(void *data);
static ngx_int_t ngx_http_mcp_auth_dpop_nonce_check(
    ngx_http_mcp_auth_loc_conf_t *alcf, cJSON *nonce);
static ngx_int_t ngx_http_mcp_auth_dpop_nonce_mac(
    ngx_http_mcp_auth_loc_conf_t *alcf, uint64_t period, u_char *nonce);
static ngx_int_t ngx_http_mcp_auth_dpop_claims(ngx_http_request_t *r,
    ngx_http_mcp_auth_loc_conf_t *alcf, ngx_http_mcp_jwt_t *jwt,
    ngx_str_t *token, ngx_http_mcp_auth_ctx_t *ctx, const char **error);
static ngx_int_t ngx_http_mcp_auth_dpop_htu(ngx_http_request_t *r,
    u_char *htu);
static ngx_uint_t ngx_http_mcp_auth_dpop_port(u_char *p, u_char *end,
    ngx_uint_t dflt);
static ngx_int_t ngx_http_mcp_auth_dpop_paths(u_char *a, u_char *a_end,
    u_char *b, u_char *b_end);
static ngx_int_t ngx_http_mcp_auth_dpop_unit(u_char **pp, u_char *end);


/* what mcp_auth_dpop_algs is when not set: all ngx_http_mcp_jwt knows */
static ngx_str_t  ngx_http_mcp_auth_dpop_default_algs[] = {
    ngx_string("ES256"),
    ngx_string("ES384"),
    ngx_string("EdDSA"),
    ngx_string("RS256"),
    ngx_string("RS384"),
    ngx_string("RS512"),
    ngx_string("PS256"),
    ngx_string("PS384"),
    ngx_string("PS512"),
    ngx_null_string
};


/*
 * The proof of the request (its one DPoP header) for token: NGX_OK with
 * the proof key's thumbprint and the proof's record in ctx, NGX_DECLINED
 * with *error, NGX_ERROR.  Whether the proof was seen before is the
 * last question (ngx_http_mcp_dpop_record()), once the token is good: a
 * request refused for its token must not use up its proof.
 */

ngx_int_t
ngx_http_mcp_auth_dpop_proof(ngx_http_request_t *r,
    ngx_http_mcp_auth_ctx_t *ctx, ngx_str_t *token, const char **error)
{
    cJSON                         *typ, *jwk;
    ngx_int_t                      rc;
    ngx_str_t                     *alg;
    ngx_uint_t                     i;
    ngx_array_t                    keys;
    ngx_table_elt_t               *h;
    ngx_http_mcp_jwk_t             key;
    ngx_http_mcp_jwt_t             jwt;
    ngx_http_mcp_auth_loc_conf_t  *alcf;

    alcf = ctx->auth.conf;

    h = ngx_http_mcp_header_in(r, "dpop", sizeof("dpop") - 1);

    if (h == NULL) {
        *error = "no DPoP proof";
        return NGX_DECLINED;
    }

    if (ngx_http_mcp_header_in_after(r, h, "dpop", sizeof("dpop") - 1)
        != NULL)
    {
        *error = "more than one DPoP proof";
        return NGX_DECLINED;
    }

    if (ngx_http_mcp_jwt_parse(r->pool, &h->value, &jwt, error) != NGX_OK) {
        *error = "malformed DPoP proof";
        return NGX_DECLINED;
    }

    typ = ngx_http_mcp_json_get(jwt.header, "typ");

    if (!cJSON_IsString(typ)
        || ngx_strcasecmp((u_char *) typ->valuestring,
                          (u_char *) "dpop+jwt") != 0)
    {
        *error = "the proof's typ is not dpop+jwt";
        return NGX_DECLINED;
    }

    /* "none" and HMAC are never in the list: nginx -t refuses them */
    alg = alcf->dpop_algs->elts;

    for (i = 0; i < alcf->dpop_algs->nelts; i++) {
        if (alg[i].len == jwt.alg.len
            && ngx_strncmp(alg[i].data, jwt.alg.data, jwt.alg.len) == 0)
        {
            break;
        }
    }

    if (i == alcf->dpop_algs->nelts) {
        *error = "the proof's alg is not accepted";
        return NGX_DECLINED;
    }

    jwk = ngx_http_mcp_json_get(jwt.header, "jwk");

    rc = ngx_http_mcp_jwk_thumbprint(r->pool, jwk, ctx->jkt, error);

    if (rc != NGX_OK) {
        return rc;
    }

    rc = ngx_http_mcp_auth_dpop_key(r, alcf, jwk, ctx->jkt, &key, error);

    if (rc != NGX_OK) {
        return rc;
    }

    key.kid = jwt.kid;

    ngx_memzero(&keys, sizeof(ngx_array_t));
    keys.elts = &key;
    keys.nelts = 1;
    keys.size = sizeof(ngx_http_mcp_jwk_t);
    keys.nalloc = 1;

    rc = ngx_http_mcp_jwt_verify(&jwt, &keys, error);

    if (rc == NGX_ERROR) {
        return NGX_ERROR;
    }

    if (rc != NGX_OK) {
        *error = "the proof's signature does not verify with its jwk";
        return NGX_DECLINED;
    }

    return ngx_http_mcp_auth_dpop_claims(r, alcf, &jwt, token, ctx, error);
}


/* the proof's key: the worker's, or imported and kept for next time */

static ngx_int_t
ngx_http_mcp_auth_dpop_key(ngx_http_request_t *r,
    ngx_http_mcp_auth_loc_conf_t *alcf, cJSON *jwk, u_char *jkt,
    ngx_http_mcp_jwk_t *key, const char **error)
{
    ngx_int_t                 rc;
    ngx_http_mcp_dpop_key_t  *k;

    k = &alcf->dpop_keys[jkt[0] & (NGX_HTTP_MCP_AUTH_DPOP_KEYS - 1)];

    if (k->pkey != NULL && ngx_memcmp(k->jkt, jkt, 32) == 0) {
        ngx_memzero(key, sizeof(ngx_http_mcp_jwk_t));
        key->type = k->type;
        key->pkey = k->pkey;

        return NGX_OK;
    }

    rc = ngx_http_mcp_jwk_import(r->pool, jwk, key, error);

    if (rc != NGX_OK) {
        return rc;
    }

    /* the request's pool frees its reference, the slot keeps one */
    if (EVP_PKEY_up_ref(key->pkey) == 1) {
        if (k->pkey != NULL) {
            EVP_PKEY_free(k->pkey);
        }

        ngx_memcpy(k->jkt, jkt, 32);
        k->type = key->type;
        k->pkey = key->pkey;
    }

    return NGX_OK;
}


static ngx_int_t
ngx_http_mcp_auth_dpop_claims(ngx_http_request_t *r,
    ngx_http_mcp_auth_loc_conf_t *alcf, ngx_http_mcp_jwt_t *jwt,
    ngx_str_t *token, ngx_http_mcp_auth_ctx_t *ctx, const char **error)
{
    u_char      digest[32], ath[64], *buf;
    cJSON      *htm, *htu, *iat, *jti, *athc;
    size_t      len;
    time_t      now;
    ngx_int_t   rc;
    ngx_str_t   src, dst;

    htm = ngx_http_mcp_json_get(jwt->claims, "htm");
    htu = ngx_http_mcp_json_get(jwt->claims, "htu");
    iat = ngx_http_mcp_json_get(jwt->claims, "iat");
    jti = ngx_http_mcp_json_get(jwt->claims, "jti");
    athc = ngx_http_mcp_json_get(jwt->claims, "ath");

    if (!cJSON_IsString(htm)
        || ngx_strlen(htm->valuestring) != r->method_name.len
        || ngx_strncmp(htm->valuestring, r->method_name.data,
                       r->method_name.len) != 0)
    {
        *error = "the proof's htm is not the request's method";
        return NGX_DECLINED;
    }

    if (!cJSON_IsString(htu)
        || ngx_http_mcp_auth_dpop_htu(r, (u_char *) htu->valuestring)
           != NGX_OK)
    {
        *error = "the proof's htu is not the request's URI";
        return NGX_DECLINED;
    }

    now = ngx_time();

    if (!cJSON_IsNumber(iat)
        || iat->valuedouble < (double) (now - alcf->dpop_window)
        || iat->valuedouble > (double) (now + alcf->dpop_window))
    {
        *error = "the proof's iat is outside the window";
        return NGX_DECLINED;
    }

    len = cJSON_IsString(jti) ? ngx_strlen(jti->valuestring) : 0;

    if (len == 0 || len > NGX_HTTP_MCP_DPOP_JTI_MAX) {
        *error = "the proof has no usable jti";
        return NGX_DECLINED;
    }

    if (ngx_http_mcp_sha256(token->data, token->len, digest) != NGX_OK) {
        return NGX_ERROR;
    }

    src.data = digest;
    src.len = sizeof(digest);
    dst.data = ath;

    ngx_encode_base64url(&dst, &src);

    if (!cJSON_IsString(athc)
        || ngx_strlen(athc->valuestring) != dst.len
        || ngx_strncmp(athc->valuestring, dst.data, dst.len) != 0)
    {
        *error = "the proof's ath is not the token's hash";
        return NGX_DECLINED;
    }

    if (alcf->dpop_nonce) {
        rc = ngx_http_mcp_auth_dpop_nonce_check(alcf,
                                   ngx_http_mcp_json_get(jwt->claims, "nonce"));

        if (rc == NGX_DECLINED) {
            ctx->use_nonce = 1;
            *error = "the proof's nonce is not a recent one of this server";
        }

        if (rc != NGX_OK) {
            return rc;
        }
    }

    /* the record: the key's thumbprint and the jti, one digest */
    buf = ngx_pnalloc(r->pool, sizeof(ctx->jkt) + len);
    if (buf == NULL) {
        return NGX_ERROR;
    }

    ngx_memcpy(buf, ctx->jkt, sizeof(ctx->jkt));
    ngx_memcpy(buf + sizeof(ctx->jkt), jti->valuestring, len);

    if (ngx_http_mcp_sha256(buf, sizeof(ctx->jkt) + len, ctx->proof)
        != NGX_OK)
    {
        return NGX_ERROR;
    }

    /* later the proof is too old to pass: the record may go */
    ctx->proof_expire = (time_t) iat->valuedouble + alcf->dpop_window + 1;

    return NGX_OK;
}


/*
 * RFC 9449 4.3: htu is the URI of the request, query and fragment
 * aside, compared after syntax- and scheme-based normalization (RFC 3986
 * 6.2.2, 6.2.3): scheme and host in any case, the scheme's default port
 * written or not, percent-encodings in any case and unreserved bytes
 * encoded or not.  The request's side is what the client sent: nginx's
 * scheme, the Host header (or the request line's host), the request
 * line's path before nginx decodes and merges it.
 */

static ngx_int_t
ngx_http_mcp_auth_dpop_htu(ngx_http_request_t *r, u_char *htu)
{
    u_char      *p, *end, *host, *host_end, *path, *path_end, *our, *our_end;
    ngx_str_t    scheme;
    ngx_uint_t   dflt, port, our_port;

    ngx_str_set(&scheme, "http");
    dflt = 80;

#if (NGX_HTTP_SSL)
    if (r->connection->ssl) {
        ngx_str_set(&scheme, "https");
        dflt = 443;
    }
#endif

    end = htu + ngx_strlen(htu);

    if ((size_t) (end - htu) < scheme.len + 3
        || ngx_strncasecmp(htu, scheme.data, scheme.len) != 0
        || ngx_strncmp(htu + scheme.len, "://", 3) != 0)
    {
        return NGX_DECLINED;
    }

    host = htu + scheme.len + 3;

    for (path = host; path < end; path++) {
        if (*path == '/' || *path == '?' || *path == '#') {
            break;
        }

        /* userinfo: no request carries it */
        if (*path == '@') {
            return NGX_DECLINED;
        }
    }

    host_end = path;

    if (host < path && host[0] == '[') {
        host_end = ngx_strlchr(host, path, ']');
        if (host_end == NULL) {
            return NGX_DECLINED;
        }

        host_end++;

    } else {
        for (p = host; p < path; p++) {
            if (*p == ':') {
                host_end = p;
                break;
            }
        }
    }

    if (host_end < path && *host_end != ':') {
        return NGX_DECLINED;
    }

    port = ngx_http_mcp_auth_dpop_port(host_end, path, dflt);

    /* the host as the client named it, lowercased and checked by nginx */
    if (r->headers_in.server.len != (size_t) (host_end - host)
        || ngx_strncasecmp(r->headers_in.server.data, host, host_end - host)
           != 0)
    {
        return NGX_DECLINED;
    }

    our_port = dflt;

    if (r->headers_in.host != NULL) {
        p = r->headers_in.host->value.data;
        our_end = p + r->headers_in.host->value.len;

        if (p < our_end && *p == '[') {
            p = ngx_strlchr(p, our_end, ']');
            p = (p == NULL) ? our_end : p + 1;

        } else {
            p = ngx_strlchr(p, our_end, ':');
            if (p == NULL) {
                p = our_end;
            }
        }

        our_port = ngx_http_mcp_auth_dpop_port(p, our_end, dflt);
    }

    if (port == 0 || port != our_port) {
        return NGX_DECLINED;
    }

    for (path_end = path; path_end < end; path_end++) {
        if (*path_end == '?' || *path_end == '#') {
            break;
        }
    }

    our = r->unparsed_uri.data;
    our_end = our + r->unparsed_uri.len;

    if (our_end > our) {
        p = ngx_strlchr(our, our_end, '?');
        if (p != NULL) {
            our_end = p;
        }
    }

    return ngx_http_mcp_auth_dpop_paths(path, path_end, our, our_end);
}


/* ":port" up to end, or nothing: the port; 0 when not a port */

static ngx_uint_t
ngx_http_mcp_auth_dpop_port(u_char *p, u_char *end, ngx_uint_t dflt)
{
    ngx_int_t  n;

    if (p == end || (p + 1 == end && *p == ':')) {
        return dflt;
    }

    if (*p != ':' || end - p > 6) {
        return 0;
    }

    n = ngx_atoi(p + 1, end - p - 1);

    return (n < 1 || n > 65535) ? 0 : (ngx_uint_t) n;
}


/* two paths, "" as "/", equal byte for byte after normalization */

static ngx_int_t
ngx_http_mcp_auth_dpop_paths(u_char *a, u_char *a_end, u_char *b,
    u_char *b_end)
{
    ngx_int_t  ca, cb;

    if (a == a_end) {
        a = (u_char *) "/";
        a_end = a + 1;
    }

    if (b == b_end) {
        b = (u_char *) "/";
        b_end = b + 1;
    }

    do {
        ca = ngx_http_mcp_auth_dpop_unit(&a, a_end);
        cb = ngx_http_mcp_auth_dpop_unit(&b, b_end);

        if (ca != cb) {
            return NGX_DECLINED;
        }

    } while (ca != -1);

    return NGX_OK;
}


/*
 * The next byte of a path: an unreserved byte encoded or not is itself,
 * any other encoded byte is 0x100 plus its value (its hex digits in
 * either case), -1 at the end.
 */

static ngx_int_t
ngx_http_mcp_auth_dpop_unit(u_char **pp, u_char *end)
{
    u_char     *p, c;
    ngx_int_t   n;

    p = *pp;

    if (p == end) {
        return -1;
    }

    if (*p != '%' || end - p < 3) {
        *pp = p + 1;
        return *p;
    }

    n = ngx_hextoi(p + 1, 2);

    if (n == NGX_ERROR) {
        *pp = p + 1;
        return *p;
    }

    *pp = p + 3;
    c = (u_char) n;

    if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z')
        || (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_'
        || c == '~')
    {
        return c;
    }

    return 0x100 + c;
}


/*
 * Server nonces (RFC 9449 8, 9): made by any worker, checked by any,
 * with nothing stored: a nonce is a period's number and its MAC under
 * the zone's key (the one requestState uses, with a label of its own).
 * A period is the window long; a nonce of this period or the one before
 * is good, so a nonce lives one to two windows.
 */

ngx_int_t
ngx_http_mcp_auth_dpop_nonce(ngx_http_request_t *r,
    ngx_http_mcp_auth_loc_conf_t *alcf, ngx_str_t *nonce)
{
    u_char     raw[NGX_HTTP_MCP_DPOP_NONCE];
    time_t     period;
    ngx_str_t  src;

    period = ngx_max(alcf->dpop_window, 1);

    if (ngx_http_mcp_auth_dpop_nonce_mac(alcf, ngx_time() / period, raw)
        != NGX_OK)
    {
        return NGX_ERROR;
    }

    nonce->data = ngx_pnalloc(r->pool,
                              ngx_base64_encoded_length(sizeof(raw)));
    if (nonce->data == NULL) {
        return NGX_ERROR;
    }

    src.data = raw;
    src.len = sizeof(raw);

    ngx_encode_base64url(nonce, &src);

    return NGX_OK;
}


static ngx_int_t
ngx_http_mcp_auth_dpop_nonce_check(ngx_http_mcp_auth_loc_conf_t *alcf,
    cJSON *nonce)
{
    u_char      raw[NGX_HTTP_MCP_DPOP_NONCE + 3];
    u_char      want[NGX_HTTP_MCP_DPOP_NONCE];
    time_t      period;
    uint64_t    n, now;
    ngx_str_t   src, dst;
    ngx_uint_t  i;

    if (!cJSON_IsString(nonce)
        || ngx_strlen(nonce->valuestring)
           != ngx_base64_encoded_length(NGX_HTTP_MCP_DPOP_NONCE))
    {
        return NGX_DECLINED;
    }

    src.data = (u_char *) nonce->valuestring;
    src.len = ngx_strlen(nonce->valuestring);
    dst.data = raw;

    if (ngx_decode_base64url(&dst, &src) != NGX_OK
        || dst.len != NGX_HTTP_MCP_DPOP_NONCE)
    {
        return NGX_DECLINED;
    }

    n = 0;

    for (i = 0; i < 8; i++) {
        n = (n << 8) | raw[i];
    }

    period = ngx_max(alcf->dpop_window, 1);
    now = (uint64_t) (ngx_time() / period);

    if (n != now && n + 1 != now) {
        return NGX_DECLINED;
    }

    if (ngx_http_mcp_auth_dpop_nonce_mac(alcf, n, want) != NGX_OK) {
        return NGX_ERROR;
    }

    return (CRYPTO_memcmp(want, raw, NGX_HTTP_MCP_DPOP_NONCE) == 0)
           ? NGX_OK : NGX_DECLINED;
}


static ngx_int_t
ngx_http_mcp_auth_dpop_nonce_mac(ngx_http_mcp_auth_loc_conf_t *alcf,
    uint64_t period, u_char *nonce)
{
    u_char        key[32], md[EVP_MAX_MD_SIZE];
    u_char        in[sizeof("DPoP-Nonce") - 1 + 8];
    ngx_uint_t    i;
    unsigned int  len;

    if (ngx_http_mcp_session_state_key(alcf->dpop_zone, key) != NGX_OK) {
        return NGX_ERROR;
    }

    for (i = 0; i < 8; i++) {
        nonce[i] = (u_char) (period >> (56 - 8 * i));
    }

    ngx_memcpy(in, "DPoP-Nonce", sizeof("DPoP-Nonce") - 1);
    ngx_memcpy(in + sizeof("DPoP-Nonce") - 1, nonce, 8);

    if (HMAC(EVP_sha256(), key, sizeof(key), in, sizeof(in), md, &len)
        == NULL)
    {
        return NGX_ERROR;
    }

    ngx_memcpy(nonce + 8, md, NGX_HTTP_MCP_DPOP_NONCE - 8);

    return NGX_OK;
}


/*
 * The token's cnf.jkt (RFC 9449 6.1), decoded: *bound 0 for a token
 * without cnf or without jkt in it; NGX_DECLINED for one that is not a
 * base64url SHA-256 digest.
 */

ngx_int_t
ngx_http_mcp_auth_dpop_cnf(ngx_http_mcp_jwt_t *jwt, u_char *jkt,
    ngx_uint_t *bound)
{
    u_char      buf[64];
    cJSON      *cnf, *v;
    ngx_str_t   src, dst;

    *bound = 0;

    cnf = ngx_http_mcp_json_get(jwt->claims, "cnf");
    v = cJSON_IsObject(cnf) ? ngx_http_mcp_json_get(cnf, "jkt") : NULL;

    if (v == NULL) {
        return NGX_OK;
    }

    if (!cJSON_IsString(v) || ngx_strlen(v->valuestring) != 43) {
        return NGX_DECLINED;
    }

    src.data = (u_char *) v->valuestring;
    src.len = 43;
    dst.data = buf;

    if (ngx_decode_base64url(&dst, &src) != NGX_OK || dst.len != 32) {
        return NGX_DECLINED;
    }

    ngx_memcpy(jkt, buf, 32);
    *bound = 1;

    return NGX_OK;
}


/* ------------------------------------------------------------------------
 * Configuration
 */

/* the algorithms and their text for algs="", the zone of the records */

ngx_int_t
ngx_http_mcp_auth_dpop_merge(ngx_conf_t *cf,
    ngx_http_mcp_auth_loc_conf_t *conf)
{
    u_char                    *p;
    size_t                     len;
    ngx_str_t                 *alg, *s;
    ngx_uint_t                 i;
    ngx_pool_cleanup_t        *cln;
    ngx_http_mcp_main_conf_t  *mmcf;

    if (conf->dpop == NGX_HTTP_MCP_DPOP_OFF) {
        return NGX_OK;
    }

    conf->dpop_keys = ngx_pcalloc(cf->pool, NGX_HTTP_MCP_AUTH_DPOP_KEYS
                                            * sizeof(ngx_http_mcp_dpop_key_t));
    cln = ngx_pool_cleanup_add(cf->pool, 0);

    if (conf->dpop_keys == NULL || cln == NULL) {
        return NGX_ERROR;
    }

    cln->handler = ngx_http_mcp_auth_dpop_keys_cleanup;
    cln->data = conf->dpop_keys;

    if (conf->dpop_algs == NULL) {
        conf->dpop_algs = ngx_array_create(cf->pool, 9, sizeof(ngx_str_t));
        if (conf->dpop_algs == NULL) {
            return NGX_ERROR;
        }

        for (s = ngx_http_mcp_auth_dpop_default_algs; s->len; s++) {
            alg = ngx_array_push(conf->dpop_algs);
            if (alg == NULL) {
                return NGX_ERROR;
            }

            *alg = *s;
        }
    }

    alg = conf->dpop_algs->elts;
    len = 0;

    for (i = 0; i < conf->dpop_algs->nelts; i++) {
        len += alg[i].len + 1;
    }

    p = ngx_pnalloc(cf->pool, len);
    if (p == NULL) {
        return NGX_ERROR;
    }

    conf->dpop_algs_text.data = p;

    for (i = 0; i < conf->dpop_algs->nelts; i++) {
        if (i) {
            *p++ = ' ';
        }

        p = ngx_cpymem(p, alg[i].data, alg[i].len);
    }

    conf->dpop_algs_text.len = p - conf->dpop_algs_text.data;

    mmcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_mcp_module);

    conf->dpop_zone = ngx_http_mcp_session_default_zone(cf, &mmcf->store);
    if (conf->dpop_zone == NULL) {
        return NGX_ERROR;
    }

    return NGX_OK;
}


static void
ngx_http_mcp_auth_dpop_keys_cleanup(void *data)
{
    ngx_http_mcp_dpop_key_t  *k = data;

    ngx_uint_t  i;

    for (i = 0; i < NGX_HTTP_MCP_AUTH_DPOP_KEYS; i++) {
        if (k[i].pkey != NULL) {
            EVP_PKEY_free(k[i].pkey);
            k[i].pkey = NULL;
        }
    }
}
