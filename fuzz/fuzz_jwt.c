
/*
 * libFuzzer target: the JWT and JWKS parsers of the auth module, and
 * signature and claim checks over what they return; a header's "jwk" (a
 * DPoP proof's key) is thumbprinted and imported too.  The input is a
 * token and a JWK set split at the first newline; without one, an input
 * that starts with '{' is a JWK set, checked with a fixed token, and
 * anything else a token, checked against a fixed set.  The fixed set
 * holds an Ed25519, a P-256 and an RSA key; the seeds are tokens signed
 * with them, so mutations start from signatures that verify.
 *
 * Besides memory errors (and leaks: the keys and trees are freed by the
 * pool's cleanups), it checks that every refusal says why.
 */


#include <ngx_config.h>
#include <ngx_core.h>

#include "ngx_http_mcp_jwt.h"
#include "ngx_shim.h"


static void ngx_fuzz_jwt(ngx_pool_t *pool, u_char *token, size_t tlen,
    u_char *jwks, size_t jlen);
static void ngx_fuzz_check_error(const char *what, const char *error);


static char  ngx_fuzz_jwks[] =
    "{\"keys\":[{\"kty\":\"OKP\",\"crv\":\"Ed25519\",\"kid\":\"ed\",\""
    "x\":\"2kBiqbtoejJRaPrQ8Sue-Ym13riIoqEKbzwbURF543A\",\""
    "use\":\"sig\"},{\"kty\":\"EC\",\"crv\":\"P-256\",\"kid\":\"p256\""
    ",\"alg\":\"ES256\",\"x\":\"mDw9w-hCksBnLilWEvzt00rP_EZ41b"
    "J86Z1pPMkdl30\",\"y\":\"Vfoto38-XP1j8xpR9lGrhmoNoSBuAe"
    "lMWnyp8viQpx8\"},{\"kty\":\"RSA\",\"kid\":\"rsa\",\"n\":\"uKTZ"
    "-wsc3Dm312exyjakHBpWlG4hTNHGxi-Bu44vxNbLLnLyV_bg-v"
    "8UqpLkUfTis2l-PEM3w86c93lbiIHazKetxSQbVk-zdghr5AuT"
    "eJ4LWCvBqiCHupjDgZ59gNdrFoNfl9Pq9yElOFp8gTwvaOPdI4"
    "lR6LUt123wTmcDYSULHSRw4kQCFY3X1F9r-4HHG1C9pfgM3dKk"
    "8Gon04_q0jJsmh6G6Du4ksa38zvZatJkHE6Ulo_WoMtsEl5a2c"
    "SPZFNWtvys32ZuQ2VoFn14ijMxgkFL5RxvFz35g01LpcZr6XOE"
    "jChFnVLKXQRniAAXv_vZW_fFiGXgzz1aq0xbew\",\"e\":\"AQAB\""
    "}]}";


/* signed with the Ed25519 key above; exp 2100-01-01 */

static char  ngx_fuzz_token[] =
    "eyJhbGciOiJFZERTQSIsImtpZCI6ImVkIiwidHlwIjoiSldUIn"
    "0.eyJpc3MiOiJodHRwczovL2lzc3Vlci5leGFtcGxlIiwiYXVk"
    "IjoibWNwIiwic3ViIjoiYWxpY2UiLCJleHAiOjQxMDI0NDQ4MD"
    "AsIm5iZiI6MTcwMDAwMDAwMCwiaWF0IjoxNzAwMDAwMDAwfQ.u"
    "QtwBGZxoj0ZVu7SHGR3-TTnac8idq-iohpsmNB74klKVgyX4I-"
    "EqpVAAjyVxfq6gHH2apfseAKDM2Q3WLB0Cg";


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    u_char      *copy;
    ngx_int_t    rc;
    ngx_str_t    token, jwks;
    ngx_pool_t  *pool;

    pool = ngx_shim_pool_create();
    if (pool == NULL) {
        return 0;
    }

    rc = ngx_shim_split(pool, data, size, &token, &jwks);

    if (rc == NGX_OK) {
        ngx_fuzz_jwt(pool, token.data, token.len, jwks.data, jwks.len);
        goto done;
    }

    if (rc == NGX_ERROR) {
        goto done;
    }

    copy = ngx_shim_copy(pool, data, size);
    if (copy == NULL) {
        goto done;
    }

    if (size && copy[0] == '{') {
        ngx_fuzz_jwt(pool, (u_char *) ngx_fuzz_token,
                     sizeof(ngx_fuzz_token) - 1, copy, size);

    } else {
        ngx_fuzz_jwt(pool, copy, size, (u_char *) ngx_fuzz_jwks,
                     sizeof(ngx_fuzz_jwks) - 1);
    }

done:

    ngx_shim_pool_destroy(pool);

    return 0;
}


static void
ngx_fuzz_jwt(ngx_pool_t *pool, u_char *token, size_t tlen, u_char *jwks,
    size_t jlen)
{
    u_char               digest[32];
    cJSON               *jwk;
    ngx_int_t            rc;
    ngx_str_t            t, *iss;
    const char          *error;
    ngx_array_t         *keys, issuers;
    ngx_http_mcp_jwk_t   key;
    ngx_http_mcp_jwt_t   jwt;

    static ngx_str_t     audience = ngx_string("mcp");
    static ngx_str_t     issuer = ngx_string("https://issuer.example");
    static ngx_str_t     none = ngx_null_string;

    keys = ngx_http_mcp_jwks_parse(pool, jwks, jlen);

    t.data = token;
    t.len = tlen;

    ngx_memzero(&jwt, sizeof(ngx_http_mcp_jwt_t));
    error = NULL;

    rc = ngx_http_mcp_jwt_parse(pool, &t, &jwt, &error);

    if (rc != NGX_OK) {
        ngx_fuzz_check_error("jwt_parse", error);
        return;
    }

    /* a DPoP proof's key (RFC 9449): its thumbprint, then the key */
    jwk = cJSON_GetObjectItemCaseSensitive(jwt.header, "jwk");

    if (jwk != NULL) {
        error = NULL;
        rc = ngx_http_mcp_jwk_thumbprint(pool, jwk, digest, &error);

        if (rc == NGX_OK) {
            error = NULL;
            rc = ngx_http_mcp_jwk_import(pool, jwk, &key, &error);
        }

        if (rc == NGX_DECLINED) {
            ngx_fuzz_check_error("jwk_thumbprint, jwk_import", error);
        }
    }

    if (keys == NULL) {
        return;
    }

    error = NULL;

    rc = ngx_http_mcp_jwt_verify(&jwt, keys, &error);

    if (rc != NGX_OK) {
        ngx_fuzz_check_error("jwt_verify", error);
        return;
    }

    if (ngx_array_init(&issuers, pool, 1, sizeof(ngx_str_t)) != NGX_OK) {
        return;
    }

    iss = ngx_array_push(&issuers);
    if (iss == NULL) {
        return;
    }

    *iss = issuer;

    error = NULL;

    /* 2025-06-15, a minute of leeway */
    rc = ngx_http_mcp_jwt_check_claims(&jwt, 1750000000, 60, &issuers,
                                       &audience, &error);

    if (rc != NGX_OK) {
        ngx_fuzz_check_error("jwt_check_claims", error);
    }

    error = NULL;

    /* no issuer list; the audience is never NULL (auth_module.c defaults it) */
    rc = ngx_http_mcp_jwt_check_claims(&jwt, 1750000000, 0, NULL, &none,
                                       &error);

    if (rc != NGX_OK) {
        ngx_fuzz_check_error("jwt_check_claims", error);
    }
}


static void
ngx_fuzz_check_error(const char *what, const char *error)
{
    if (error == NULL || error[0] == '\0') {
        fprintf(stderr, "%s refused without a reason\n", what);
        abort();
    }

    (void) strlen(error);
}
