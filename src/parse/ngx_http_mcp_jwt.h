
/*
 * JWT (RFC 7519) and JWK (RFC 7517) for ngx_http_mcp_auth_module: pure
 * code over pools and strings, no request objects.
 */


#ifndef _NGX_HTTP_MCP_JWT_H_INCLUDED_
#define _NGX_HTTP_MCP_JWT_H_INCLUDED_


#include <ngx_config.h>
#include <ngx_core.h>
#include <cjson/cJSON.h>
#include <openssl/evp.h>


#define NGX_HTTP_MCP_JWK_RSA      1
#define NGX_HTTP_MCP_JWK_P256     2
#define NGX_HTTP_MCP_JWK_P384     3
#define NGX_HTTP_MCP_JWK_ED25519  4


typedef struct {
    ngx_str_t                  kid;
    ngx_str_t                  alg;          /* empty: any that fits */
    ngx_uint_t                 type;
    EVP_PKEY                  *pkey;
} ngx_http_mcp_jwk_t;


typedef struct {
    cJSON                     *header;
    cJSON                     *claims;
    ngx_str_t                  alg;
    ngx_str_t                  kid;          /* empty: none */
    ngx_str_t                  input;        /* header.payload, signed */
    ngx_str_t                  signature;    /* decoded */
} ngx_http_mcp_jwt_t;


/*
 * JWKS text to an array of ngx_http_mcp_jwk_t; keys that are not
 * usable (private parts aside, unknown kty, "use" other than "sig") are
 * skipped.  The keys are freed with the pool.  NULL on a malformed set.
 */
ngx_array_t *ngx_http_mcp_jwks_parse(ngx_pool_t *pool, u_char *data,
    size_t len);

/* splits and decodes; the cJSON trees are freed with the pool */
ngx_int_t ngx_http_mcp_jwt_parse(ngx_pool_t *pool, ngx_str_t *token,
    ngx_http_mcp_jwt_t *jwt, const char **error);

/*
 * NGX_OK when a key of the set verifies the signature, NGX_DECLINED
 * when none does, NGX_ABORT when the token names a kid the set lacks.
 */
ngx_int_t ngx_http_mcp_jwt_verify(ngx_http_mcp_jwt_t *jwt,
    ngx_array_t *keys, const char **error);

/* exp, nbf, iss, aud, sub */
ngx_int_t ngx_http_mcp_jwt_check_claims(ngx_http_mcp_jwt_t *jwt,
    time_t now, time_t leeway, ngx_array_t *issuers, ngx_str_t *audience,
    const char **error);

ngx_int_t ngx_http_mcp_sha256(u_char *data, size_t len, u_char *digest);
/* a and b of len bytes equal, in a time that depends on len alone */
ngx_uint_t ngx_http_mcp_secret_equal(const u_char *a, const u_char *b,
    size_t len);

/* whether alg names an algorithm that ngx_http_mcp_jwt_verify() knows */
ngx_uint_t ngx_http_mcp_jwt_alg_known(ngx_str_t *alg);

/*
 * A JWK that must be a public key and nothing more (a DPoP proof's, RFC
 * 9449 4.2): its RFC 7638 SHA-256 thumbprint into thumbprint (32 bytes),
 * NGX_DECLINED with *error for a private member, a type not known, a
 * required member missing.  The key itself is a separate step: a worker
 * that knows the thumbprint knows the key.
 */
ngx_int_t ngx_http_mcp_jwk_thumbprint(ngx_pool_t *pool, cJSON *jwk,
    u_char *thumbprint, const char **error);

/* the key of a JWK (kid and alg aside), freed with the pool */
ngx_int_t ngx_http_mcp_jwk_import(ngx_pool_t *pool, cJSON *jwk,
    ngx_http_mcp_jwk_t *key, const char **error);

#endif /* _NGX_HTTP_MCP_JWT_H_INCLUDED_ */
