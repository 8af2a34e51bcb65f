
/*
 * Unit tests of JWT and JWK handling (ngx_http_mcp_jwt.c): a key pair is
 * made here with OpenSSL, its public half given as a JWKS, and tokens
 * signed with the private half are parsed, verified and checked.
 */


#include <ngx_config.h>
#include <ngx_core.h>

#include "ngx_http_mcp_jwt.h"
#include "ngx_shim.h"
#include "unit.h"

#include <openssl/evp.h>


static EVP_PKEY  *key;


/* base64url without padding of len bytes, into pool (with OpenSSL's) */
static ngx_str_t
b64(ngx_pool_t *pool, u_char *data, size_t len)
{
    size_t     i;
    ngx_str_t  dst;

    dst.data = ngx_pnalloc(pool, 4 * ((len + 2) / 3) + 1);
    dst.len = EVP_EncodeBlock(dst.data, data, len);

    while (dst.len && dst.data[dst.len - 1] == '=') {
        dst.len--;
    }

    for (i = 0; i < dst.len; i++) {
        if (dst.data[i] == '+') {
            dst.data[i] = '-';

        } else if (dst.data[i] == '/') {
            dst.data[i] = '_';
        }
    }

    dst.data[dst.len] = '\0';

    return dst;
}


/* header.claims.signature, signed with key (Ed25519) */
static ngx_str_t
token(ngx_pool_t *pool, const char *header, const char *claims,
    ngx_uint_t corrupt)
{
    u_char      *input, sig[64];
    size_t       siglen;
    ngx_str_t    h, c, s, t;
    EVP_MD_CTX  *md;

    h = b64(pool, (u_char *) header, strlen(header));
    c = b64(pool, (u_char *) claims, strlen(claims));

    input = ngx_pnalloc(pool, h.len + c.len + 2);
    *ngx_sprintf(input, "%V.%V", &h, &c) = '\0';

    md = EVP_MD_CTX_new();
    siglen = sizeof(sig);
    EVP_DigestSignInit(md, NULL, NULL, NULL, key);
    EVP_DigestSign(md, sig, &siglen, input, h.len + c.len + 1);
    EVP_MD_CTX_free(md);

    if (corrupt) {
        sig[0] ^= 1;
    }

    s = b64(pool, sig, siglen);

    t.data = ngx_pnalloc(pool, h.len + c.len + s.len + 3);
    t.len = ngx_sprintf(t.data, "%s.%V", input, &s) - t.data;
    t.data[t.len] = '\0';

    return t;
}


int
main(void)
{
    u_char               raw[32], digest[32], *jwks;
    size_t               rawlen;
    time_t               now;
    ngx_str_t            x, t, aud, *iss;
    ngx_int_t            rc;
    ngx_pool_t          *pool;
    const char          *error;
    ngx_array_t         *keys, *issuers;
    ngx_http_mcp_jwt_t   jwt;

    pool = ngx_shim_pool_create();

    key = EVP_PKEY_Q_keygen(NULL, NULL, "ED25519");
    rawlen = sizeof(raw);
    EVP_PKEY_get_raw_public_key(key, raw, &rawlen);
    x = b64(pool, raw, rawlen);

    jwks = ngx_pnalloc(pool, 256);
    *ngx_sprintf(jwks, "{\"keys\":[{\"kty\":\"OKP\",\"crv\":\"Ed25519\","
                 "\"kid\":\"k1\",\"x\":\"%V\"}]}", &x) = '\0';

    keys = ngx_http_mcp_jwks_parse(pool, jwks, strlen((char *) jwks));
    UNIT_CHECK(keys != NULL && keys->nelts == 1, "jwks: one key parsed");

    UNIT_CHECK(ngx_http_mcp_jwks_parse(pool, (u_char *) "{\"keys\":1}", 10)
               == NULL, "jwks: keys that are no array are refused");
    UNIT_CHECK(ngx_http_mcp_jwks_parse(pool,
                   (u_char *) "{\"keys\":[],\"keys\":[]}", 21) == NULL,
               "jwks: duplicate members are refused");

    now = time(NULL);

    t = token(pool, "{\"alg\":\"EdDSA\",\"kid\":\"k1\"}",
              "{\"sub\":\"alice\",\"iss\":\"https://as\",\"aud\":\"mcp\","
              "\"exp\":4102444800}", 0);

    rc = ngx_http_mcp_jwt_parse(pool, &t, &jwt, &error);
    UNIT_CHECK(rc == NGX_OK, "token: parsed");
    UNIT_CHECK(UNIT_STR_EQ(jwt.alg.data, jwt.alg.len, "EdDSA")
               && UNIT_STR_EQ(jwt.kid.data, jwt.kid.len, "k1"),
               "token: alg and kid");
    UNIT_CHECK(keys != NULL
               && ngx_http_mcp_jwt_verify(&jwt, keys, &error) == NGX_OK,
               "token: the signature verifies");

    issuers = ngx_array_create(pool, 1, sizeof(ngx_str_t));
    iss = ngx_array_push(issuers);
    ngx_str_set(iss, "https://as");
    ngx_str_set(&aud, "mcp");

    UNIT_CHECK(ngx_http_mcp_jwt_check_claims(&jwt, now, 0, issuers, &aud,
                                             &error) == NGX_OK,
               "claims: issuer, audience and expiry are fine");

    ngx_str_set(&aud, "other");
    UNIT_CHECK(ngx_http_mcp_jwt_check_claims(&jwt, now, 0, issuers, &aud,
                                             &error) != NGX_OK,
               "claims: another audience is refused");

    ngx_str_set(&aud, "mcp");
    UNIT_CHECK(ngx_http_mcp_jwt_check_claims(&jwt, 4102444900, 60, issuers,
                                             &aud, &error) != NGX_OK,
               "claims: an expired token is refused");
    UNIT_CHECK(ngx_http_mcp_jwt_check_claims(&jwt, 4102444830, 60, issuers,
                                             &aud, &error) == NGX_OK,
               "claims: the leeway is allowed");

    t = token(pool, "{\"alg\":\"EdDSA\",\"kid\":\"k1\"}",
              "{\"sub\":\"alice\",\"iss\":\"https://evil\",\"aud\":\"mcp\","
              "\"exp\":4102444800}", 0);
    rc = ngx_http_mcp_jwt_parse(pool, &t, &jwt, &error);
    UNIT_CHECK(rc == NGX_OK
               && ngx_http_mcp_jwt_check_claims(&jwt, now, 0, issuers, &aud,
                                                &error) != NGX_OK,
               "claims: another issuer is refused");

    t = token(pool, "{\"alg\":\"EdDSA\",\"kid\":\"k1\"}",
              "{\"sub\":\"alice\",\"exp\":4102444800}", 1);
    rc = ngx_http_mcp_jwt_parse(pool, &t, &jwt, &error);
    UNIT_CHECK(rc == NGX_OK
               && ngx_http_mcp_jwt_verify(&jwt, keys, &error) == NGX_DECLINED,
               "verify: a changed signature is refused");

    t = token(pool, "{\"alg\":\"EdDSA\",\"kid\":\"k2\"}",
              "{\"sub\":\"alice\"}", 0);
    rc = ngx_http_mcp_jwt_parse(pool, &t, &jwt, &error);
    UNIT_CHECK(rc == NGX_OK
               && ngx_http_mcp_jwt_verify(&jwt, keys, &error) == NGX_ABORT,
               "verify: an unknown kid is told apart");

    t = token(pool, "{\"alg\":\"none\"}", "{\"sub\":\"alice\"}", 0);
    rc = ngx_http_mcp_jwt_parse(pool, &t, &jwt, &error);
    UNIT_CHECK(rc != NGX_OK
               || ngx_http_mcp_jwt_verify(&jwt, keys, &error) != NGX_OK,
               "verify: alg none never verifies");

    t = token(pool, "{\"alg\":\"EdDSA\",\"kid\":\"k1\"}",
              "{\"sub\":\"alice\",\"sub\":\"admin\"}", 0);
    UNIT_CHECK(ngx_http_mcp_jwt_parse(pool, &t, &jwt, &error) != NGX_OK,
               "parse: claims with a duplicate member are refused");

    ngx_str_set(&t, "a.b");
    UNIT_CHECK(ngx_http_mcp_jwt_parse(pool, &t, &jwt, &error) != NGX_OK,
               "parse: two parts are refused");

    ngx_str_set(&t, "..");
    UNIT_CHECK(ngx_http_mcp_jwt_parse(pool, &t, &jwt, &error) != NGX_OK,
               "parse: empty parts are refused");

    UNIT_CHECK(ngx_http_mcp_sha256((u_char *) "abc", 3, digest) == NGX_OK
               && digest[0] == 0xba && digest[31] == 0xad,
               "sha256: the digest of \"abc\"");

    EVP_PKEY_free(key);
    ngx_shim_pool_destroy(pool);

    return unit_done("jwt");
}
