
/*
 * Unit tests of src/ngx_http_mcp_jwt.c: tokens split and decoded (and
 * refused, each with its reason), JWK sets read, signatures verified
 * with keys the test makes with OpenSSL (RSA, P-256, Ed25519: RS256,
 * PS256, ES256, EdDSA), the claims checks, SHA-256, a DPoP proof's
 * public JWK and its RFC 7638 thumbprint.
 *
 * HS256 is signed here too, with a real HMAC, but only to show that it
 * is refused: the file knows asymmetric algorithms only, so that a
 * public key can never serve as an HMAC secret (algorithm confusion).
 */


#include <ngx_config.h>
#include <ngx_core.h>

#include <openssl/core_names.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/hmac.h>
#include <openssl/rsa.h>

#include "ngx_http_mcp_jwt.h"
#include "ngx_shim.h"
#include "unit.h"


#define NGX_UNIT_NOW     1750000000
#define NGX_UNIT_CLAIMS                                                      \
    "{\"iss\":\"https://issuer.example\",\"aud\":\"mcp\","                   \
    "\"sub\":\"alice\",\"exp\":4102444800,\"nbf\":1700000000}"


static u_char *ngx_unit_b64url(const void *src, size_t len);
static ngx_int_t ngx_unit_sign(EVP_PKEY *key, const char *alg,
    const u_char *in, size_t len, u_char *sig, size_t *siglen);
static char *ngx_unit_token(const char *header, const char *claims,
    EVP_PKEY *key, const char *alg);
static char *ngx_unit_token_hs256(const char *header, const char *claims,
    const u_char *secret, size_t slen);
static char *ngx_unit_jwk(EVP_PKEY *key, const char *kid, const char *extra);
static ngx_array_t *ngx_unit_jwks(const char *text);
static ngx_int_t ngx_unit_parse(const char *token, ngx_http_mcp_jwt_t *jwt,
    const char **error);
static void ngx_unit_verifies(const char *token, ngx_array_t *keys,
    ngx_int_t want, const char *error, const char *name);
static void ngx_unit_claims(const char *claims, time_t now, time_t leeway,
    ngx_uint_t issuers, const char *error, const char *name);
static void test_parse(void);
static void test_jwks(void);
static void test_verify(void);
static void test_algorithm_confusion(void);
static void test_claims(void);
static void test_sha256(void);
static void test_secret_equal(void);
static ngx_int_t ngx_unit_jwk_public(cJSON *jwk, ngx_http_mcp_jwk_t *key,
    u_char *digest, const char **error);
static void test_jwk_public(void);


static ngx_pool_t   *pool;
static EVP_PKEY     *rsa, *rsa_other, *rsa_small, *p256, *p384, *ed25519;
static ngx_array_t  *keys;


int
main(void)
{
    pool = ngx_shim_pool_create();
    if (pool == NULL) {
        return 2;
    }

    rsa = EVP_RSA_gen(2048);
    rsa_other = EVP_RSA_gen(2048);
    rsa_small = EVP_RSA_gen(1024);
    p256 = EVP_EC_gen("P-256");
    p384 = EVP_EC_gen("P-384");
    ed25519 = EVP_PKEY_Q_keygen(NULL, NULL, "ED25519");

    if (rsa == NULL || rsa_other == NULL || rsa_small == NULL
        || p256 == NULL || p384 == NULL || ed25519 == NULL)
    {
        printf("Bail out! cannot make keys\n");
        return 2;
    }

    test_parse();
    test_jwks();
    test_verify();
    test_algorithm_confusion();
    test_claims();
    test_sha256();
    test_jwk_public();

    ngx_shim_pool_destroy(pool);

    EVP_PKEY_free(rsa);
    EVP_PKEY_free(rsa_other);
    EVP_PKEY_free(rsa_small);
    EVP_PKEY_free(p256);
    EVP_PKEY_free(p384);
    EVP_PKEY_free(ed25519);

    return ngx_unit_done("test_jwt");
}


/* base64url without padding, NUL-terminated, in the pool */

static u_char *
ngx_unit_b64url(const void *src, size_t len)
{
    u_char        *dst, *d;
    uint32_t       v;
    const u_char  *s;
    size_t         i, n;

    static const char  abc[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
                               "abcdefghijklmnopqrstuvwxyz0123456789-_";

    dst = ngx_pnalloc(pool, (len + 2) / 3 * 4 + 1);
    if (dst == NULL) {
        return NULL;
    }

    s = src;
    d = dst;

    for (i = 0; i < len; i += 3) {
        n = ngx_min(len - i, 3);
        v = (uint32_t) s[i] << 16;
        v |= (n > 1) ? (uint32_t) s[i + 1] << 8 : 0;
        v |= (n > 2) ? (uint32_t) s[i + 2] : 0;

        *d++ = abc[(v >> 18) & 63];
        *d++ = abc[(v >> 12) & 63];

        if (n > 1) {
            *d++ = abc[(v >> 6) & 63];
        }

        if (n > 2) {
            *d++ = abc[v & 63];
        }
    }

    *d = '\0';

    return dst;
}


/* a JWS signature as RFC 7518 lays it out (ECDSA: r || s, not DER) */

static ngx_int_t
ngx_unit_sign(EVP_PKEY *key, const char *alg, const u_char *in, size_t len,
    u_char *sig, size_t *siglen)
{
    int            ok;
    u_char         der[256];
    size_t         der_len, half;
    const char    *md;
    EVP_MD_CTX    *ctx;
    EVP_PKEY_CTX  *pctx;
    ECDSA_SIG     *es;
    const u_char  *p;
    const BIGNUM  *r, *s;

    md = (strcmp(alg, "EdDSA") == 0) ? NULL
         : (strcmp(alg + 2, "384") == 0) ? "SHA384"
         : (strcmp(alg + 2, "512") == 0) ? "SHA512" : "SHA256";

    ctx = EVP_MD_CTX_new();
    if (ctx == NULL) {
        return NGX_ERROR;
    }

    pctx = NULL;
    der_len = sizeof(der);

    ok = EVP_DigestSignInit_ex(ctx, &pctx, md, NULL, NULL, key, NULL) == 1;

    if (ok && alg[0] == 'P') {
        ok = EVP_PKEY_CTX_set_rsa_padding(pctx, RSA_PKCS1_PSS_PADDING) == 1
             && EVP_PKEY_CTX_set_rsa_pss_saltlen(pctx, RSA_PSS_SALTLEN_DIGEST)
                == 1;
    }

    if (alg[0] != 'E' || alg[1] != 'S') {
        ok = ok && EVP_DigestSign(ctx, sig, siglen, in, len) == 1;
        EVP_MD_CTX_free(ctx);
        return ok ? NGX_OK : NGX_ERROR;
    }

    ok = ok && EVP_DigestSign(ctx, der, &der_len, in, len) == 1;
    EVP_MD_CTX_free(ctx);

    if (!ok) {
        return NGX_ERROR;
    }

    p = der;
    es = d2i_ECDSA_SIG(NULL, &p, der_len);
    if (es == NULL) {
        return NGX_ERROR;
    }

    half = (strcmp(alg, "ES384") == 0) ? 48 : 32;
    ECDSA_SIG_get0(es, &r, &s);

    ok = BN_bn2binpad(r, sig, half) == (int) half
         && BN_bn2binpad(s, sig + half, half) == (int) half;

    ECDSA_SIG_free(es);
    *siglen = 2 * half;

    return ok ? NGX_OK : NGX_ERROR;
}


/* header.claims.signature; a NULL key: an empty signature */

static char *
ngx_unit_token(const char *header, const char *claims, EVP_PKEY *key,
    const char *alg)
{
    u_char  *h, *c, *input, *token, sig[1024];
    size_t   len, siglen;

    h = ngx_unit_b64url(header, strlen(header));
    c = ngx_unit_b64url(claims, strlen(claims));

    if (h == NULL || c == NULL) {
        return NULL;
    }

    len = ngx_strlen(h) + 1 + ngx_strlen(c);

    input = ngx_pnalloc(pool, len + 1);
    if (input == NULL) {
        return NULL;
    }

    snprintf((char *) input, len + 1, "%s.%s", h, c);

    siglen = 0;

    if (key != NULL) {
        siglen = sizeof(sig);

        if (ngx_unit_sign(key, alg, input, len, sig, &siglen) != NGX_OK) {
            ERR_clear_error();
            return NULL;
        }
    }

    h = ngx_unit_b64url(sig, siglen);
    if (h == NULL) {
        return NULL;
    }

    len += 1 + ngx_strlen(h) + 1;

    token = ngx_pnalloc(pool, len);
    if (token == NULL) {
        return NULL;
    }

    snprintf((char *) token, len, "%s.%s", input, h);

    return (char *) token;
}


static char *
ngx_unit_token_hs256(const char *header, const char *claims,
    const u_char *secret, size_t slen)
{
    char          *token, *dot;
    u_char        *mac, *out, md[EVP_MAX_MD_SIZE];
    size_t         len;
    unsigned int   mdlen;

    /* sign with no key, then put the HMAC in place of the empty part */
    token = ngx_unit_token(header, claims, NULL, NULL);
    if (token == NULL) {
        return NULL;
    }

    dot = strrchr(token, '.');

    if (HMAC(EVP_sha256(), secret, (int) slen, (u_char *) token,
             dot - token, md, &mdlen) == NULL)
    {
        return NULL;
    }

    mac = ngx_unit_b64url(md, mdlen);
    if (mac == NULL) {
        return NULL;
    }

    len = strlen(token) + ngx_strlen(mac) + 1;

    out = ngx_pnalloc(pool, len);
    if (out == NULL) {
        return NULL;
    }

    snprintf((char *) out, len, "%s%s", token, mac);

    return (char *) out;
}


/* the public half of a key as a JWK; extra: more members, ",\"a\":.." */

static char *
ngx_unit_jwk(EVP_PKEY *key, const char *kid, const char *extra)
{
    char     *jwk, group[64];
    u_char    a[512], b[512];
    size_t    alen, blen, half;
    BIGNUM   *x, *y;

    jwk = ngx_pnalloc(pool, 2048);
    if (jwk == NULL) {
        return NULL;
    }

    x = NULL;
    y = NULL;

    if (EVP_PKEY_is_a(key, "RSA")) {
        if (EVP_PKEY_get_bn_param(key, OSSL_PKEY_PARAM_RSA_N, &x) != 1
            || EVP_PKEY_get_bn_param(key, OSSL_PKEY_PARAM_RSA_E, &y) != 1)
        {
            return NULL;
        }

        alen = BN_bn2bin(x, a);
        blen = BN_bn2bin(y, b);

        snprintf(jwk, 2048, "{\"kty\":\"RSA\",\"kid\":\"%s\",\"n\":\"%s\","
                 "\"e\":\"%s\"%s}", kid, ngx_unit_b64url(a, alen),
                 ngx_unit_b64url(b, blen), extra);

    } else if (EVP_PKEY_is_a(key, "EC")) {
        if (EVP_PKEY_get_utf8_string_param(key, OSSL_PKEY_PARAM_GROUP_NAME,
                                           group, sizeof(group), NULL) != 1
            || EVP_PKEY_get_bn_param(key, OSSL_PKEY_PARAM_EC_PUB_X, &x) != 1
            || EVP_PKEY_get_bn_param(key, OSSL_PKEY_PARAM_EC_PUB_Y, &y) != 1)
        {
            return NULL;
        }

        half = (strcmp(group, "prime256v1") == 0) ? 32 : 48;

        BN_bn2binpad(x, a, half);
        BN_bn2binpad(y, b, half);

        snprintf(jwk, 2048, "{\"kty\":\"EC\",\"crv\":\"%s\",\"kid\":\"%s\","
                 "\"x\":\"%s\",\"y\":\"%s\"%s}",
                 half == 32 ? "P-256" : "P-384", kid,
                 ngx_unit_b64url(a, half), ngx_unit_b64url(b, half), extra);

    } else {
        alen = sizeof(a);

        if (EVP_PKEY_get_raw_public_key(key, a, &alen) != 1) {
            return NULL;
        }

        snprintf(jwk, 2048, "{\"kty\":\"OKP\",\"crv\":\"Ed25519\","
                 "\"kid\":\"%s\",\"x\":\"%s\"%s}", kid,
                 ngx_unit_b64url(a, alen), extra);
    }

    BN_free(x);
    BN_free(y);

    return jwk;
}


static ngx_array_t *
ngx_unit_jwks(const char *text)
{
    u_char  *copy;
    size_t   len;

    /* an exact-size copy: a read past the set is an ASan report */
    len = strlen(text);

    copy = ngx_pnalloc(pool, len);
    if (copy == NULL) {
        return NULL;
    }

    ngx_memcpy(copy, text, len);

    return ngx_http_mcp_jwks_parse(pool, copy, len);
}


static ngx_int_t
ngx_unit_parse(const char *token, ngx_http_mcp_jwt_t *jwt,
    const char **error)
{
    ngx_str_t  t;

    *error = NULL;

    if (token == NULL) {
        *error = "(the test could not make the token)";
        return -100;
    }

    t.len = strlen(token);
    t.data = ngx_pnalloc(pool, t.len);

    if (t.data == NULL) {
        return -100;
    }

    ngx_memcpy(t.data, token, t.len);

    return ngx_http_mcp_jwt_parse(pool, &t, jwt, error);
}


static void
ngx_unit_verifies(const char *token, ngx_array_t *set, ngx_int_t want,
    const char *error, const char *name)
{
    ngx_int_t            rc;
    const char          *e;
    ngx_http_mcp_jwt_t   jwt;

    rc = ngx_unit_parse(token, &jwt, &e);

    if (rc == NGX_OK) {
        e = NULL;
        rc = ngx_http_mcp_jwt_verify(&jwt, set, &e);
    }

    if (!CHECK(rc == want && (want == NGX_OK || ngx_unit_streq(e, error)),
               name))
    {
        printf("#   got rc %d, \"%s\"; want rc %d, \"%s\"\n", (int) rc,
               e ? e : "(null)", (int) want, error ? error : "(null)");
    }
}


/* issuers: 0 no list, 1 the list of https://issuer.example */

static void
ngx_unit_claims(const char *claims, time_t now, time_t leeway,
    ngx_uint_t issuers, const char *error, const char *name)
{
    ngx_int_t            rc;
    ngx_str_t           *iss;
    const char          *e;
    ngx_array_t          list;
    ngx_http_mcp_jwt_t   jwt;

    static ngx_str_t     audience = ngx_string("mcp");

    rc = ngx_unit_parse(ngx_unit_token("{\"alg\":\"EdDSA\"}", claims, NULL,
                                       NULL), &jwt, &e);

    if (rc == NGX_OK) {
        if (ngx_array_init(&list, pool, 2, sizeof(ngx_str_t)) != NGX_OK
            || (iss = ngx_array_push_n(&list, 2)) == NULL)
        {
            return;
        }

        ngx_str_set(&iss[0], "https://other.example");
        ngx_str_set(&iss[1], "https://issuer.example");

        e = NULL;
        rc = ngx_http_mcp_jwt_check_claims(&jwt, now, leeway,
                                           issuers ? &list : NULL,
                                           &audience, &e);
    }

    if (!CHECK(error == NULL ? rc == NGX_OK
                             : rc == NGX_DECLINED && ngx_unit_streq(e, error),
               name))
    {
        printf("#   %s: got rc %d, \"%s\"; want \"%s\"\n", claims, (int) rc,
               e ? e : "(null)", error ? error : "(NGX_OK)");
    }
}


static void
test_parse(void)
{
    char                *token, *dot, *big;
    u_char              *h, *c;
    cJSON               *sub;
    ngx_int_t            rc;
    ngx_uint_t           i;
    const char          *e;
    ngx_http_mcp_jwt_t   jwt;

    static const char   *shapes[] = {
        "", "abc", "%s.%s", "%s.%s.x.y", "%s.%s.A", "%s.%s.AAAA=",
        "%s.%s.AA+A", "%s .%s.AAAA", "Bearer %s.%s.AAAA"
    };

    static const struct {
        const char  *header;
        const char  *claims;
        const char  *error;
        const char  *name;
    } bad[] = {
        { "[\"RS256\"]", "{}", "malformed token",
          "a header that is an array: malformed" },
        { "{\"alg\":\"RS256\"}", "\"alice\"", "malformed token",
          "claims that are a string: malformed" },
        { "{\"alg\":\"RS256\",\"alg\":\"none\"}", "{}", "malformed token",
          "a header naming alg twice: malformed" },
        { "{\"alg\":\"RS256\"}", "{\"sub\":\"a\\u0000b\"}", "malformed token",
          "a \\u0000 in the claims: malformed" },
        { "{\"alg\":\"RS256\"} x", "{}", "malformed token",
          "bytes after the header's JSON: malformed" },
        { "{\"alg\":1}", "{}", "malformed token header",
          "alg a number: malformed header" },
        { "{\"kid\":\"k\"}", "{}", "malformed token header",
          "no alg: malformed header" },
        { "{\"alg\":\"RS256\",\"kid\":5}", "{}", "malformed token header",
          "kid a number: malformed header" },
        { "{\"alg\":\"RS256\",\"enc\":\"A128GCM\"}", "{}",
          "unsupported token type", "a JWE (enc): unsupported" },
        { "{\"alg\":\"RS256\",\"crit\":[\"x\"]}", "{}",
          "unsupported token type", "crit: unsupported" },
        { "{\"alg\":\"RS256\",\"typ\":7}", "{}",
          "unsupported token type", "typ a number: unsupported" },
    };

    token = ngx_unit_token("{\"alg\":\"RS256\",\"kid\":\"rsa\","
                           "\"typ\":\"JWT\"}", NGX_UNIT_CLAIMS, rsa, "RS256");
    rc = ngx_unit_parse(token, &jwt, &e);
    CHECK_INT(rc, NGX_OK, "parse: a signed token");
    CHECK_MEM(jwt.alg.data, jwt.alg.len, "RS256", "parse: alg");
    CHECK_MEM(jwt.kid.data, jwt.kid.len, "rsa", "parse: kid");
    dot = token ? strrchr(token, '.') : NULL;
    CHECK(dot != NULL && jwt.input.len == (size_t) (dot - token)
          && ngx_strncmp(jwt.input.data, token, jwt.input.len) == 0,
          "parse: the signed input is header.claims");
    CHECK_INT(jwt.signature.len, 256, "parse: a 2048-bit signature decoded");
    sub = cJSON_GetObjectItemCaseSensitive(jwt.claims, "sub");
    CHECK(cJSON_IsString(sub) && strcmp(sub->valuestring, "alice") == 0,
          "parse: the claims");

    rc = ngx_unit_parse(ngx_unit_token("{\"alg\":\"EdDSA\"}", "{}", NULL,
                                       NULL), &jwt, &e);
    CHECK(rc == NGX_OK && jwt.kid.len == 0 && jwt.signature.len == 0,
          "parse: no kid, an empty signature");

    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        rc = ngx_unit_parse(ngx_unit_token(bad[i].header, bad[i].claims,
                                           NULL, NULL), &jwt, &e);

        if (!CHECK(rc == NGX_DECLINED && ngx_unit_streq(e, bad[i].error),
                   bad[i].name))
        {
            printf("#   got rc %d, \"%s\"\n", (int) rc, e ? e : "(null)");
        }
    }

    h = ngx_unit_b64url("{\"alg\":\"RS256\"}", 15);
    c = ngx_unit_b64url("{}", 2);

    for (i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++) {
        big = ngx_pnalloc(pool, 256);
        if (big == NULL) {
            return;
        }

        snprintf(big, 256, shapes[i], h, c);
        rc = ngx_unit_parse(big, &jwt, &e);

        if (!CHECK(rc == NGX_DECLINED && ngx_unit_streq(e, "malformed token"),
                   "token shapes: malformed"))
        {
            printf("#   \"%s\": rc %d, \"%s\"\n", big, (int) rc,
                   e ? e : "(null)");
        }
    }

    big = ngx_pnalloc(pool, 16386);
    if (big == NULL || token == NULL) {
        return;
    }

    ngx_memset(big, 'A', 16385);
    big[16385] = '\0';
    ngx_memcpy(big, token, ngx_min(strlen(token), 16385));
    rc = ngx_unit_parse(big, &jwt, &e);
    CHECK(rc == NGX_DECLINED && ngx_unit_streq(e, "malformed token"),
          "a token over 16384 bytes: malformed");
}


static void
test_jwks(void)
{
    char                *set;
    ngx_array_t         *s;
    ngx_http_mcp_jwk_t  *k;

    set = ngx_pnalloc(pool, 16384);
    if (set == NULL) {
        return;
    }

    snprintf(set, 16384, "{\"keys\":[%s,%s,%s,%s,%s,%s,%s,%s,%s,%s]}",
             ngx_unit_jwk(rsa, "rsa", ",\"use\":\"sig\""),
             ngx_unit_jwk(p256, "p256", ",\"alg\":\"ES256\""),
             ngx_unit_jwk(ed25519, "ed", ""),
             ngx_unit_jwk(p384, "p384", ""),
             ngx_unit_jwk(rsa_other, "rsa512", ",\"alg\":\"RS512\""),
             ngx_unit_jwk(rsa_other, "enc", ",\"use\":\"enc\""),
             ngx_unit_jwk(rsa_small, "small", ""),
             "{\"kty\":\"oct\",\"kid\":\"hmac\",\"k\":\"c2VjcmV0\"}",
             "{\"kty\":\"EC\",\"crv\":\"P-256\",\"kid\":\"short\","
             "\"x\":\"AAAA\",\"y\":\"AAAA\"}",
             "{\"kty\":\"OKP\",\"crv\":\"X25519\",\"kid\":\"x\","
             "\"x\":\"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\"}");

    keys = ngx_unit_jwks(set);
    k = keys ? keys->elts : NULL;

    if (!CHECK(keys != NULL && keys->nelts == 5,
               "jwks: five usable keys of ten"))
    {
        printf("#   %u keys\n", keys ? (unsigned) keys->nelts : 0);
        keys = NULL;
        return;
    }

    CHECK(k[0].type == NGX_HTTP_MCP_JWK_RSA && k[1].type
          == NGX_HTTP_MCP_JWK_P256 && k[2].type == NGX_HTTP_MCP_JWK_ED25519
          && k[3].type == NGX_HTTP_MCP_JWK_P384
          && k[4].type == NGX_HTTP_MCP_JWK_RSA,
          "jwks: each key's type");
    CHECK(k[0].kid.len == 3 && ngx_strncmp(k[0].kid.data, "rsa", 3) == 0
          && k[4].kid.len == 6
          && ngx_strncmp(k[4].kid.data, "rsa512", 6) == 0,
          "jwks: kids kept");
    CHECK(k[0].alg.len == 0 && k[1].alg.len == 5
          && ngx_strncmp(k[1].alg.data, "ES256", 5) == 0,
          "jwks: alg kept where given, empty otherwise");

    s = ngx_unit_jwks("{\"keys\":[]}");
    CHECK(s != NULL && s->nelts == 0, "jwks: an empty set");
    CHECK(ngx_unit_jwks("{\"keys\":{}}") == NULL,
          "jwks: keys not an array: NULL");
    CHECK(ngx_unit_jwks("{\"kid\":\"x\"}") == NULL, "jwks: no keys: NULL");
    CHECK(ngx_unit_jwks("{\"keys\":[]") == NULL, "jwks: broken JSON: NULL");
    CHECK(ngx_unit_jwks("{\"keys\":[],\"keys\":[]}") == NULL,
          "jwks: keys twice: NULL");
}


static void
test_verify(void)
{
    char    *token, *tampered, *dot, *h;
    size_t   len;

    if (keys == NULL) {
        CHECK(0, "verify: no key set to verify with");
        return;
    }

    ngx_unit_verifies(ngx_unit_token("{\"alg\":\"RS256\",\"kid\":\"rsa\"}",
                                     NGX_UNIT_CLAIMS, rsa, "RS256"),
                      keys, NGX_OK, NULL, "RS256 with its kid: verified");
    ngx_unit_verifies(ngx_unit_token("{\"alg\":\"RS256\"}", NGX_UNIT_CLAIMS,
                                     rsa, "RS256"),
                      keys, NGX_OK, NULL,
                      "RS256 without a kid: a key of the type verifies");
    ngx_unit_verifies(ngx_unit_token("{\"alg\":\"PS256\",\"kid\":\"rsa\"}",
                                     NGX_UNIT_CLAIMS, rsa, "PS256"),
                      keys, NGX_OK, NULL, "PS256: verified");
    ngx_unit_verifies(ngx_unit_token("{\"alg\":\"RS512\",\"kid\":\"rsa512\"}",
                                     NGX_UNIT_CLAIMS, rsa_other, "RS512"),
                      keys, NGX_OK, NULL, "RS512 with its pinned key: "
                      "verified");
    ngx_unit_verifies(ngx_unit_token("{\"alg\":\"ES256\",\"kid\":\"p256\"}",
                                     NGX_UNIT_CLAIMS, p256, "ES256"),
                      keys, NGX_OK, NULL, "ES256: verified");
    ngx_unit_verifies(ngx_unit_token("{\"alg\":\"ES384\"}",
                                     NGX_UNIT_CLAIMS, p384, "ES384"),
                      keys, NGX_OK, NULL, "ES384: verified");
    ngx_unit_verifies(ngx_unit_token("{\"alg\":\"EdDSA\",\"kid\":\"ed\"}",
                                     NGX_UNIT_CLAIMS, ed25519, "EdDSA"),
                      keys, NGX_OK, NULL, "EdDSA: verified");

    /* the claims of one token with the signature of another */
    token = ngx_unit_token("{\"alg\":\"RS256\",\"kid\":\"rsa\"}",
                           NGX_UNIT_CLAIMS, rsa, "RS256");
    tampered = ngx_unit_token("{\"alg\":\"RS256\",\"kid\":\"rsa\"}",
                              "{\"sub\":\"mallory\"}", NULL, NULL);

    if (token != NULL && tampered != NULL) {
        dot = strrchr(token, '.');
        len = strlen(tampered) + strlen(dot) + 1;
        h = ngx_pnalloc(pool, len);

        if (h != NULL) {
            /* "header.claims." of one, ".signature" of the other */
            snprintf(h, len, "%.*s%s", (int) strlen(tampered) - 1, tampered,
                     dot);
            tampered = h;
        }
    }

    ngx_unit_verifies(tampered, keys, NGX_DECLINED, "bad signature",
                      "other claims under a valid signature: bad signature");
    ngx_unit_verifies(ngx_unit_token("{\"alg\":\"RS256\",\"kid\":\"rsa\"}",
                                     NGX_UNIT_CLAIMS, rsa_other, "RS256"),
                      keys, NGX_DECLINED, "bad signature",
                      "signed with another key than its kid's: "
                      "bad signature");
    ngx_unit_verifies(ngx_unit_token("{\"alg\":\"RS256\",\"kid\":\"rsa512\"}",
                                     NGX_UNIT_CLAIMS, rsa_other, "RS256"),
                      keys, NGX_DECLINED, "bad signature",
                      "RS256 with a key pinned to RS512: bad signature");
    ngx_unit_verifies(ngx_unit_token("{\"alg\":\"ES256\",\"kid\":\"rsa\"}",
                                     NGX_UNIT_CLAIMS, p256, "ES256"),
                      keys, NGX_DECLINED, "bad signature",
                      "ES256 naming an RSA key: bad signature");
    ngx_unit_verifies(ngx_unit_token("{\"alg\":\"ES256\",\"kid\":\"p384\"}",
                                     NGX_UNIT_CLAIMS, p256, "ES256"),
                      keys, NGX_DECLINED, "bad signature",
                      "ES256 naming a P-384 key: bad signature");
    ngx_unit_verifies(ngx_unit_token("{\"alg\":\"RS256\",\"kid\":\"nope\"}",
                                     NGX_UNIT_CLAIMS, rsa, "RS256"),
                      keys, NGX_ABORT, "unknown key id",
                      "a kid the set lacks: NGX_ABORT");
    ngx_unit_verifies(ngx_unit_token("{\"alg\":\"RS256\",\"kid\":\"enc\"}",
                                     NGX_UNIT_CLAIMS, rsa_other, "RS256"),
                      keys, NGX_ABORT, "unknown key id",
                      "the kid of an encryption key (skipped): unknown");
    ngx_unit_verifies(ngx_unit_token("{\"alg\":\"RS256\"}", NGX_UNIT_CLAIMS,
                                     rsa, "RS256"),
                      NULL, NGX_DECLINED, "no key for the token",
                      "no key set: no key for the token");
    ngx_unit_verifies(ngx_unit_token("{\"alg\":\"RS256\"}", NGX_UNIT_CLAIMS,
                                     rsa_small, "RS256"),
                      keys, NGX_DECLINED, "bad signature",
                      "signed with the 1024-bit key (not in the set): "
                      "bad signature");
    ngx_unit_verifies(ngx_unit_token("{\"alg\":\"ES256\",\"kid\":\"p256\"}",
                                     NGX_UNIT_CLAIMS, NULL, NULL),
                      keys, NGX_DECLINED, "bad signature",
                      "ES256 with an empty signature: bad signature");
}


static void
test_algorithm_confusion(void)
{
    u_char  n[512];
    BIGNUM  *bn;
    size_t   len;

    static u_char  secret[] = "a shared secret of thirty-two by";

    if (keys == NULL) {
        CHECK(0, "algorithm confusion: no key set");
        return;
    }

    ngx_unit_verifies(ngx_unit_token_hs256("{\"alg\":\"HS256\"}",
                                           NGX_UNIT_CLAIMS, secret, 32),
                      keys, NGX_DECLINED, "unsupported algorithm",
                      "HS256 with a real HMAC: unsupported algorithm");

    /* the RSA key's public modulus as the HMAC secret */
    bn = NULL;
    len = 0;

    if (EVP_PKEY_get_bn_param(rsa, OSSL_PKEY_PARAM_RSA_N, &bn) == 1) {
        len = BN_bn2bin(bn, n);
        BN_free(bn);
    }

    ngx_unit_verifies(ngx_unit_token_hs256("{\"alg\":\"HS256\","
                                           "\"kid\":\"rsa\"}",
                                           NGX_UNIT_CLAIMS, n, len),
                      keys, NGX_DECLINED, "unsupported algorithm",
                      "HS256 keyed with the RSA key's modulus: "
                      "unsupported algorithm");
    ngx_unit_verifies(ngx_unit_token("{\"alg\":\"none\"}", NGX_UNIT_CLAIMS,
                                     NULL, NULL),
                      keys, NGX_DECLINED, "unsupported algorithm",
                      "alg none: unsupported algorithm");
    ngx_unit_verifies(ngx_unit_token("{\"alg\":\"rs256\",\"kid\":\"rsa\"}",
                                     NGX_UNIT_CLAIMS, rsa, "RS256"),
                      keys, NGX_DECLINED, "unsupported algorithm",
                      "alg names are case-sensitive");
}


static void
test_claims(void)
{
    ngx_unit_claims(NGX_UNIT_CLAIMS, NGX_UNIT_NOW, 0, 1, NULL,
                    "claims: all as expected");
    ngx_unit_claims("{\"iss\":\"i\",\"aud\":\"mcp\",\"sub\":\"a\"}",
                    NGX_UNIT_NOW, 0, 0, "the token has no expiry",
                    "claims: no exp");
    ngx_unit_claims("{\"iss\":\"i\",\"aud\":\"mcp\",\"sub\":\"a\","
                    "\"exp\":\"4102444800\"}", NGX_UNIT_NOW, 0, 0,
                    "the token has no expiry", "claims: exp a string");
    ngx_unit_claims("{\"iss\":\"i\",\"aud\":\"mcp\",\"sub\":\"a\","
                    "\"exp\":1000}", 1001, 0, 0, "the token expired",
                    "claims: a second past exp");
    ngx_unit_claims("{\"iss\":\"i\",\"aud\":\"mcp\",\"sub\":\"a\","
                    "\"exp\":1000}", 1060, 60, 0, NULL,
                    "claims: past exp within the leeway");
    ngx_unit_claims("{\"iss\":\"i\",\"aud\":\"mcp\",\"sub\":\"a\","
                    "\"exp\":9000,\"nbf\":2000}", 1999, 0, 0,
                    "the token is not valid yet", "claims: before nbf");
    ngx_unit_claims("{\"iss\":\"i\",\"aud\":\"mcp\",\"sub\":\"a\","
                    "\"exp\":9000,\"nbf\":2000}", 1940, 60, 0, NULL,
                    "claims: before nbf within the leeway");
    ngx_unit_claims("{\"iss\":\"i\",\"aud\":\"mcp\",\"sub\":\"a\","
                    "\"exp\":9000,\"nbf\":\"x\"}", 5000, 0, 0,
                    "the token is not valid yet", "claims: nbf a string");
    ngx_unit_claims("{\"iss\":\"i\",\"aud\":\"mcp\",\"exp\":9000}", 5000, 0,
                    0, "the token has no subject", "claims: no sub");
    ngx_unit_claims("{\"iss\":\"i\",\"aud\":\"mcp\",\"sub\":\"\","
                    "\"exp\":9000}", 5000, 0, 0, "the token has no subject",
                    "claims: an empty sub");
    ngx_unit_claims("{\"aud\":\"mcp\",\"sub\":\"a\",\"exp\":9000}", 5000, 0,
                    0, "the token has no issuer", "claims: no iss");
    ngx_unit_claims("{\"iss\":\"https://evil.example\",\"aud\":\"mcp\","
                    "\"sub\":\"a\",\"exp\":9000}", 5000, 0, 1,
                    "wrong issuer", "claims: an issuer not in the list");
    ngx_unit_claims("{\"iss\":\"https://issuer.example/\",\"aud\":\"mcp\","
                    "\"sub\":\"a\",\"exp\":9000}", 5000, 0, 1,
                    "wrong issuer", "claims: issuers compared exactly");
    ngx_unit_claims("{\"iss\":\"https://evil.example\",\"aud\":\"mcp\","
                    "\"sub\":\"a\",\"exp\":9000}", 5000, 0, 0, NULL,
                    "claims: any issuer without a list");
    ngx_unit_claims("{\"iss\":\"i\",\"aud\":[\"x\",\"mcp\"],\"sub\":\"a\","
                    "\"exp\":9000}", 5000, 0, 0, NULL,
                    "claims: the audience in an aud array");
    ngx_unit_claims("{\"iss\":\"i\",\"aud\":[\"x\",\"mcpx\"],\"sub\":\"a\","
                    "\"exp\":9000}", 5000, 0, 0, "wrong audience",
                    "claims: an aud array without it");
    ngx_unit_claims("{\"iss\":\"i\",\"aud\":\"MCP\",\"sub\":\"a\","
                    "\"exp\":9000}", 5000, 0, 0, "wrong audience",
                    "claims: aud compared case-sensitively");
    ngx_unit_claims("{\"iss\":\"i\",\"sub\":\"a\",\"exp\":9000}", 5000, 0, 0,
                    "wrong audience", "claims: no aud");
}


static void
test_sha256(void)
{
    u_char  digest[32], hex[65];

    CHECK_INT(ngx_http_mcp_sha256((u_char *) "abc", 3, digest), NGX_OK,
              "sha256: NGX_OK");

    *ngx_hex_dump(hex, digest, 32) = '\0';

    CHECK_STR(hex, "ba7816bf8f01cfea414140de5dae2223"
              "b00361a396177a9cb410ff61f20015ad", "sha256(\"abc\")");

    test_secret_equal();
}


/* equal or not, whichever byte differs, at every length about a word */

static void
test_secret_equal(void)
{
    u_char      a[40], b[40];
    size_t      len, at;
    ngx_uint_t  wrong;

    wrong = 0;

    for (len = 0; len <= sizeof(a); len++) {
        ngx_memset(a, 'x', sizeof(a));
        ngx_memset(b, 'x', sizeof(b));

        if (!ngx_http_mcp_secret_equal(a, b, len)) {
            wrong++;
        }

        for (at = 0; at < len; at++) {
            b[at] ^= 0x80;

            if (ngx_http_mcp_secret_equal(a, b, len)) {
                wrong++;
            }

            b[at] ^= 0x80;
        }

        /* a difference past len is not looked at */
        if (len < sizeof(a)) {
            b[len] = 'y';

            if (!ngx_http_mcp_secret_equal(a, b, len)) {
                wrong++;
            }
        }
    }

    CHECK_INT(wrong, 0, "secret_equal: equal, and any one byte differing, "
              "at lengths 0 to 40");
}


/* RFC 7638 3.1: the example key and its thumbprint */
#define NGX_UNIT_RFC7638_N                                                   \
    "0vx7agoebGcQSuuPiLJXZptN9nndrQmbXEps2aiAFbWhM78LhWx4cbbfAAtVT86zwu1RK7" \
    "aPFFxuhDR1L6tSoc_BJECPebWKRXjBZCiFV4n3oknjhMstn64tZ_2W-5JsGY4Hc5n9yBXA" \
    "rwl93lqt7_RN5w6Cf0h4QyQ5v-65YGjQR0_FDW2QvzqY368QQMicAtaSqzs8KJZgnYb9c7" \
    "d0zgdAZHzu6qMQvRL5hajrn1n91CbOpbISD08qNLyrdkt-bFTWhAI4vMQFh6WeZu0fM4lF" \
    "d2NcRwr3XPksINHaQ-G_xBniIqbw0Ls1jF44-csFCur-kEgU8awapJzKnqDKgw"


/* what a DPoP proof's jwk goes through: its thumbprint, then its key */

static ngx_int_t
ngx_unit_jwk_public(cJSON *jwk, ngx_http_mcp_jwk_t *key, u_char *digest,
    const char **error)
{
    ngx_int_t  rc;

    rc = ngx_http_mcp_jwk_thumbprint(pool, jwk, digest, error);

    return (rc == NGX_OK) ? ngx_http_mcp_jwk_import(pool, jwk, key, error)
                          : rc;
}


static void
test_jwk_public(void)
{
    u_char               digest[32], text[64];
    cJSON               *jwk;
    ngx_str_t            src, dst;
    ngx_int_t            rc;
    ngx_uint_t           i;
    const char          *error;
    ngx_http_mcp_jwk_t   key;

    static const char  *bad[][2] = {
        { "{\"kty\":\"RSA\",\"e\":\"AQAB\",\"n\":\"" NGX_UNIT_RFC7638_N
          "\",\"d\":\"AQAB\"}", "the proof's jwk holds a private key" },
        { "{\"kty\":\"oct\",\"k\":\"c2VjcmV0\"}",
          "the proof's jwk holds a private key" },
        { "{\"kty\":\"EC\",\"crv\":\"P-256\",\"x\":\"AQAB\","
          "\"y\":\"AQAB\",\"p\":\"AQAB\"}",
          "the proof's jwk holds a private key" },
        { "{\"kty\":\"DSA\",\"y\":\"AQAB\"}",
          "the proof's jwk is not a public key" },
        { "{\"kty\":\"EC\",\"crv\":\"P-256\",\"x\":\"AQAB\","
          "\"y\":\"AQAB\"}", "the proof's jwk is not a public key" },
        { "[1]", "the proof's jwk is not a public key" }
    };

    /* members not in the thumbprint, and in another order, change nothing */
    jwk = cJSON_Parse("{\"kid\":\"2011-04-29\",\"n\":\""
                      NGX_UNIT_RFC7638_N "\",\"alg\":\"RS256\","
                      "\"e\":\"AQAB\",\"kty\":\"RSA\"}");

    rc = ngx_unit_jwk_public(jwk, &key, digest, &error);
    cJSON_Delete(jwk);

    src.data = digest;
    src.len = 32;
    dst.data = text;
    ngx_encode_base64url(&dst, &src);
    text[dst.len] = '\0';

    CHECK(rc == NGX_OK && key.type == NGX_HTTP_MCP_JWK_RSA,
          "jwk_thumbprint, jwk_import: the RFC 7638 example key");
    CHECK_STR(text, "NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs",
              "jwk_thumbprint: the RFC 7638 example's thumbprint");

    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        jwk = cJSON_Parse(bad[i][0]);
        rc = ngx_unit_jwk_public(jwk, &key, digest, &error);
        cJSON_Delete(jwk);

        if (!CHECK(rc == NGX_DECLINED && ngx_unit_streq(error, bad[i][1]),
                   "jwk_thumbprint, jwk_import: refused with its reason"))
        {
            printf("#   %s\n", bad[i][0]);
        }
    }
}
