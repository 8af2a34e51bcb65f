
/*
 * JWS-signed JWTs (RFC 7515, 7519) verified with the public keys of a
 * JWK set (RFC 7517, 7518, 8037), with OpenSSL 3.  Only asymmetric
 * algorithms are known here: a token with "alg": "none" or any HMAC
 * algorithm finds no key, so a public key can never serve as an HMAC
 * secret (algorithm confusion).  Each key is tied to its type: an RSA key
 * verifies only RS* and PS*, a P-256 key only ES256, and so on.
 */


#include <ngx_config.h>
#include <ngx_core.h>

#include <openssl/core_names.h>
#include <openssl/param_build.h>
#include <openssl/ecdsa.h>
#include <openssl/err.h>
#include <openssl/rsa.h>
#include <openssl/sha.h>

#include "ngx_http_mcp_jwt.h"
#include "ngx_http_mcp_json.h"


#define NGX_HTTP_MCP_JWT_MAX_LEN    16384
#define NGX_HTTP_MCP_RSA_MIN_BITS   2048


typedef struct {
    ngx_str_t                  name;
    ngx_uint_t                 type;         /* NGX_HTTP_MCP_JWK_* */
    const char                *md;           /* NULL: EdDSA */
    size_t                     ec_len;       /* ES*: r || s length */
    unsigned                   pss:1;
} ngx_http_mcp_jwa_t;


static ngx_http_mcp_jwa_t *ngx_http_mcp_jwa_find(ngx_str_t *alg);
static cJSON *ngx_http_mcp_jwt_decode_json(ngx_pool_t *pool, u_char *p,
    size_t len);
static ngx_int_t ngx_http_mcp_jwt_b64(ngx_pool_t *pool, u_char *p,
    size_t len, ngx_str_t *out);
static ngx_int_t ngx_http_mcp_jwk_string(ngx_pool_t *pool, cJSON *jwk,
    const char *name, ngx_str_t *out);
static ngx_int_t ngx_http_mcp_jwk_bytes(ngx_pool_t *pool, cJSON *jwk,
    const char *name, ngx_str_t *out);
static ngx_int_t ngx_http_mcp_jwk_key(ngx_pool_t *pool, cJSON *jwk,
    char *kty, ngx_http_mcp_jwk_t *key);
static EVP_PKEY *ngx_http_mcp_jwk_rsa(ngx_pool_t *pool, cJSON *jwk);
static EVP_PKEY *ngx_http_mcp_jwk_ec(ngx_pool_t *pool, cJSON *jwk,
    ngx_uint_t *type);
static EVP_PKEY *ngx_http_mcp_jwk_okp(ngx_pool_t *pool, cJSON *jwk);
static EVP_PKEY *ngx_http_mcp_pkey_fromdata(const char *name,
    OSSL_PARAM_BLD *bld);
static ngx_int_t ngx_http_mcp_jwt_verify_key(ngx_http_mcp_jwt_t *jwt,
    ngx_http_mcp_jwa_t *jwa, ngx_http_mcp_jwk_t *key);
static ngx_int_t ngx_http_mcp_ecdsa_der(ngx_str_t *sig, size_t len,
    u_char **der, int *der_len);
static void ngx_http_mcp_json_cleanup(void *data);
static void ngx_http_mcp_pkey_cleanup(void *data);


static ngx_http_mcp_jwa_t  ngx_http_mcp_jwas[] = {
    { ngx_string("RS256"), NGX_HTTP_MCP_JWK_RSA, "SHA256", 0, 0 },
    { ngx_string("RS384"), NGX_HTTP_MCP_JWK_RSA, "SHA384", 0, 0 },
    { ngx_string("RS512"), NGX_HTTP_MCP_JWK_RSA, "SHA512", 0, 0 },
    { ngx_string("PS256"), NGX_HTTP_MCP_JWK_RSA, "SHA256", 0, 1 },
    { ngx_string("PS384"), NGX_HTTP_MCP_JWK_RSA, "SHA384", 0, 1 },
    { ngx_string("PS512"), NGX_HTTP_MCP_JWK_RSA, "SHA512", 0, 1 },
    { ngx_string("ES256"), NGX_HTTP_MCP_JWK_P256, "SHA256", 64, 0 },
    { ngx_string("ES384"), NGX_HTTP_MCP_JWK_P384, "SHA384", 96, 0 },
    { ngx_string("EdDSA"), NGX_HTTP_MCP_JWK_ED25519, NULL, 0, 0 },
    { ngx_null_string, 0, NULL, 0, 0 }
};


ngx_array_t *
ngx_http_mcp_jwks_parse(ngx_pool_t *pool, u_char *data, size_t len)
{
    cJSON               *root, *keys, *jwk, *kty, *use;
    ngx_int_t            rc;
    ngx_array_t         *set;
    ngx_http_mcp_jwk_t  *k;

    root = ngx_http_mcp_jwt_decode_json(pool, data, len);
    if (root == NULL) {
        return NULL;
    }

    keys = cJSON_GetObjectItemCaseSensitive(root, "keys");
    if (!cJSON_IsArray(keys)) {
        return NULL;
    }

    set = ngx_array_create(pool, 4, sizeof(ngx_http_mcp_jwk_t));
    if (set == NULL) {
        return NULL;
    }

    cJSON_ArrayForEach(jwk, keys) {
        kty = cJSON_GetObjectItemCaseSensitive(jwk, "kty");
        use = cJSON_GetObjectItemCaseSensitive(jwk, "use");

        if (!cJSON_IsString(kty)
            || (use != NULL
                && !(cJSON_IsString(use)
                     && ngx_strcmp(use->valuestring, "sig") == 0)))
        {
            continue;
        }

        k = ngx_array_push(set);
        if (k == NULL) {
            return NULL;
        }

        rc = ngx_http_mcp_jwk_key(pool, jwk, kty->valuestring, k);

        if (rc == NGX_DECLINED) {
            set->nelts--;
            continue;
        }

        if (rc != NGX_OK) {
            return NULL;
        }

        if (ngx_http_mcp_jwk_string(pool, jwk, "kid", &k->kid) != NGX_OK
            || ngx_http_mcp_jwk_string(pool, jwk, "alg", &k->alg) != NGX_OK)
        {
            return NULL;
        }
    }

    return set;
}


ngx_int_t
ngx_http_mcp_jwt_parse(ngx_pool_t *pool, ngx_str_t *token,
    ngx_http_mcp_jwt_t *jwt, const char **error)
{
    u_char     *p, *dot1, *dot2, *end;
    cJSON      *alg, *kid, *typ;
    ngx_str_t   part;

    ngx_memzero(jwt, sizeof(ngx_http_mcp_jwt_t));

    *error = "malformed token";

    if (token->len == 0 || token->len > NGX_HTTP_MCP_JWT_MAX_LEN) {
        return NGX_DECLINED;
    }

    end = token->data + token->len;

    for (p = token->data; p < end; p++) {
        if (!((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z')
              || (*p >= '0' && *p <= '9') || *p == '-' || *p == '_'
              || *p == '.'))
        {
            return NGX_DECLINED;
        }
    }

    dot1 = ngx_strlchr(token->data, end, '.');
    if (dot1 == NULL) {
        return NGX_DECLINED;
    }

    dot2 = ngx_strlchr(dot1 + 1, end, '.');
    if (dot2 == NULL || ngx_strlchr(dot2 + 1, end, '.') != NULL) {
        return NGX_DECLINED;
    }

    if (ngx_http_mcp_jwt_b64(pool, token->data, dot1 - token->data, &part)
        != NGX_OK)
    {
        return NGX_DECLINED;
    }

    jwt->header = ngx_http_mcp_jwt_decode_json(pool, part.data, part.len);

    if (ngx_http_mcp_jwt_b64(pool, dot1 + 1, dot2 - dot1 - 1, &part)
        != NGX_OK)
    {
        return NGX_DECLINED;
    }

    jwt->claims = ngx_http_mcp_jwt_decode_json(pool, part.data, part.len);

    if (!cJSON_IsObject(jwt->header) || !cJSON_IsObject(jwt->claims)) {
        return NGX_DECLINED;
    }

    if (ngx_http_mcp_jwt_b64(pool, dot2 + 1, end - dot2 - 1, &jwt->signature)
        != NGX_OK)
    {
        return NGX_DECLINED;
    }

    alg = cJSON_GetObjectItemCaseSensitive(jwt->header, "alg");
    kid = cJSON_GetObjectItemCaseSensitive(jwt->header, "kid");
    typ = cJSON_GetObjectItemCaseSensitive(jwt->header, "typ");

    if (!cJSON_IsString(alg) || (kid != NULL && !cJSON_IsString(kid))) {
        *error = "malformed token header";
        return NGX_DECLINED;
    }

    /* a JWE, or a token with critical extensions we cannot honour */
    if (cJSON_HasObjectItem(jwt->header, "enc")
        || cJSON_HasObjectItem(jwt->header, "crit")
        || (typ != NULL && !cJSON_IsString(typ)))
    {
        *error = "unsupported token type";
        return NGX_DECLINED;
    }

    jwt->alg.data = (u_char *) alg->valuestring;
    jwt->alg.len = ngx_strlen(alg->valuestring);

    if (kid != NULL) {
        jwt->kid.data = (u_char *) kid->valuestring;
        jwt->kid.len = ngx_strlen(kid->valuestring);
    }

    jwt->input.data = token->data;
    jwt->input.len = dot2 - token->data;

    return NGX_OK;
}


ngx_int_t
ngx_http_mcp_jwt_verify(ngx_http_mcp_jwt_t *jwt, ngx_array_t *keys,
    const char **error)
{
    ngx_int_t            rc;
    ngx_uint_t           i, found;
    ngx_http_mcp_jwa_t  *jwa;
    ngx_http_mcp_jwk_t  *k;

    jwa = ngx_http_mcp_jwa_find(&jwt->alg);

    if (jwa == NULL) {
        *error = "unsupported algorithm";
        return NGX_DECLINED;
    }

    found = 0;
    k = (keys != NULL) ? keys->elts : NULL;

    for (i = 0; keys != NULL && i < keys->nelts; i++) {

        if (jwt->kid.len
            && (k[i].kid.len != jwt->kid.len
                || ngx_strncmp(k[i].kid.data, jwt->kid.data, jwt->kid.len)
                   != 0))
        {
            continue;
        }

        found = 1;

        if (k[i].type != jwa->type
            || (k[i].alg.len
                && (k[i].alg.len != jwa->name.len
                    || ngx_strncmp(k[i].alg.data, jwa->name.data,
                                   jwa->name.len) != 0)))
        {
            continue;
        }

        rc = ngx_http_mcp_jwt_verify_key(jwt, jwa, &k[i]);

        if (rc == NGX_OK) {
            return NGX_OK;
        }

        if (rc == NGX_ERROR) {
            *error = "verification failed";
            return NGX_ERROR;
        }
    }

    if (jwt->kid.len && !found) {
        *error = "unknown key id";
        return NGX_ABORT;
    }

    *error = found ? "bad signature" : "no key for the token";

    return NGX_DECLINED;
}


static ngx_http_mcp_jwa_t *
ngx_http_mcp_jwa_find(ngx_str_t *alg)
{
    ngx_http_mcp_jwa_t  *jwa;

    for (jwa = ngx_http_mcp_jwas; jwa->name.len; jwa++) {
        if (jwa->name.len == alg->len
            && ngx_strncmp(jwa->name.data, alg->data, alg->len) == 0)
        {
            return jwa;
        }
    }

    return NULL;
}


ngx_uint_t
ngx_http_mcp_jwt_alg_known(ngx_str_t *alg)
{
    return ngx_http_mcp_jwa_find(alg) != NULL;
}


static ngx_int_t
ngx_http_mcp_jwt_verify_key(ngx_http_mcp_jwt_t *jwt, ngx_http_mcp_jwa_t *jwa,
    ngx_http_mcp_jwk_t *key)
{
    int             rc, der_len;
    u_char         *sig, *der;
    size_t          sig_len;
    EVP_MD         *md;
    EVP_MD_CTX     *mdctx;
    EVP_PKEY_CTX   *pctx;

    der = NULL;
    md = NULL;
    sig = jwt->signature.data;
    sig_len = jwt->signature.len;

    if (jwa->ec_len) {
        if (ngx_http_mcp_ecdsa_der(&jwt->signature, jwa->ec_len, &der,
                                   &der_len)
            != NGX_OK)
        {
            return NGX_DECLINED;
        }

        sig = der;
        sig_len = der_len;
    }

    mdctx = EVP_MD_CTX_new();
    if (mdctx == NULL) {
        OPENSSL_free(der);
        return NGX_ERROR;
    }

    if (jwa->md != NULL) {
        md = EVP_MD_fetch(NULL, jwa->md, NULL);
        if (md == NULL) {
            rc = -1;
            goto done;
        }
    }

    pctx = NULL;

    if (EVP_DigestVerifyInit(mdctx, &pctx, md, NULL, key->pkey) != 1) {
        rc = -1;
        goto done;
    }

    if (jwa->pss
        && (EVP_PKEY_CTX_set_rsa_padding(pctx, RSA_PKCS1_PSS_PADDING) != 1
            || EVP_PKEY_CTX_set_rsa_pss_saltlen(pctx,
                                                RSA_PSS_SALTLEN_DIGEST)
               != 1))
    {
        rc = -1;
        goto done;
    }

    rc = EVP_DigestVerify(mdctx, sig, sig_len, jwt->input.data,
                          jwt->input.len);

done:

    EVP_MD_free(md);
    EVP_MD_CTX_free(mdctx);
    OPENSSL_free(der);

    /* bad signatures leave errors on the thread's queue */
    ERR_clear_error();

    /* a malformed signature is as bad as a wrong one */
    return (rc == 1) ? NGX_OK : NGX_DECLINED;
}


/* JWS ECDSA signatures are r || s; OpenSSL wants DER */

static ngx_int_t
ngx_http_mcp_ecdsa_der(ngx_str_t *sig, size_t len, u_char **der,
    int *der_len)
{
    BIGNUM     *r, *s;
    ECDSA_SIG  *es;

    if (sig->len != len) {
        return NGX_DECLINED;
    }

    es = ECDSA_SIG_new();
    r = BN_bin2bn(sig->data, len / 2, NULL);
    s = BN_bin2bn(sig->data + len / 2, len / 2, NULL);

    if (es == NULL || r == NULL || s == NULL || !ECDSA_SIG_set0(es, r, s)) {
        ECDSA_SIG_free(es);
        BN_free(r);
        BN_free(s);
        return NGX_ERROR;
    }

    *der = NULL;
    *der_len = i2d_ECDSA_SIG(es, der);

    ECDSA_SIG_free(es);

    return (*der_len > 0) ? NGX_OK : NGX_ERROR;
}


ngx_int_t
ngx_http_mcp_jwt_check_claims(ngx_http_mcp_jwt_t *jwt, time_t now,
    time_t leeway, ngx_array_t *issuers, ngx_str_t *audience,
    const char **error)
{
    cJSON       *exp, *nbf, *iss, *aud, *sub, *a;
    ngx_str_t   *is;
    ngx_uint_t   i, ok;

    exp = cJSON_GetObjectItemCaseSensitive(jwt->claims, "exp");
    nbf = cJSON_GetObjectItemCaseSensitive(jwt->claims, "nbf");
    iss = cJSON_GetObjectItemCaseSensitive(jwt->claims, "iss");
    aud = cJSON_GetObjectItemCaseSensitive(jwt->claims, "aud");
    sub = cJSON_GetObjectItemCaseSensitive(jwt->claims, "sub");

    if (!cJSON_IsNumber(exp)) {
        *error = "the token has no expiry";
        return NGX_DECLINED;
    }

    if ((double) now > exp->valuedouble + (double) leeway) {
        *error = "the token expired";
        return NGX_DECLINED;
    }

    if (nbf != NULL
        && (!cJSON_IsNumber(nbf)
            || (double) now + (double) leeway < nbf->valuedouble))
    {
        *error = "the token is not valid yet";
        return NGX_DECLINED;
    }

    if (!cJSON_IsString(sub) || sub->valuestring[0] == '\0') {
        *error = "the token has no subject";
        return NGX_DECLINED;
    }

    if (!cJSON_IsString(iss)) {
        *error = "the token has no issuer";
        return NGX_DECLINED;
    }

    if (issuers != NULL) {
        is = issuers->elts;
        ok = 0;

        for (i = 0; i < issuers->nelts; i++) {
            if (ngx_strlen(iss->valuestring) == is[i].len
                && ngx_strncmp(iss->valuestring, is[i].data, is[i].len) == 0)
            {
                ok = 1;
                break;
            }
        }

        if (!ok) {
            *error = "wrong issuer";
            return NGX_DECLINED;
        }
    }

    ok = 0;

    if (cJSON_IsString(aud)) {
        ok = (ngx_strlen(aud->valuestring) == audience->len
              && ngx_strncmp(aud->valuestring, audience->data,
                             audience->len) == 0);

    } else if (cJSON_IsArray(aud)) {
        cJSON_ArrayForEach(a, aud) {
            if (cJSON_IsString(a)
                && ngx_strlen(a->valuestring) == audience->len
                && ngx_strncmp(a->valuestring, audience->data,
                               audience->len) == 0)
            {
                ok = 1;
                break;
            }
        }
    }

    if (!ok) {
        *error = "wrong audience";
        return NGX_DECLINED;
    }

    return NGX_OK;
}


ngx_int_t
ngx_http_mcp_sha256(u_char *data, size_t len, u_char *digest)
{
    SHA256_CTX  sha;

    /*
     * Not EVP_Digest(): in OpenSSL 3 it fetches the algorithm from the
     * provider store on every call (locks, a name lookup), about 3,400
     * instructions a call (callgrind), more than hashing a short text.
     */

    if (SHA256_Init(&sha) != 1
        || SHA256_Update(&sha, data, len) != 1
        || SHA256_Final(digest, &sha) != 1)
    {
        return NGX_ERROR;
    }

    return NGX_OK;
}


/*
 * Whether two secrets of one length are equal, in a time that depends
 * on the length alone, eight bytes a step: CRYPTO_memcmp() goes a byte
 * at a time, about 4,800 instructions for a 600-byte token, on every
 * call that finds a token in a memo.
 */

ngx_uint_t
ngx_http_mcp_secret_equal(const u_char *a, const u_char *b, size_t len)
{
    size_t    i;
    uint64_t  x, y, diff;

    diff = 0;

    for (i = 0; i + 8 <= len; i += 8) {
        ngx_memcpy(&x, a + i, 8);
        ngx_memcpy(&y, b + i, 8);
        diff |= x ^ y;
    }

    for ( /* void */ ; i < len; i++) {
        diff |= (uint64_t) (a[i] ^ b[i]);
    }

    return diff == 0;
}


/*
 * The public key of one JWK of type kty into key (its kid and alg aside):
 * NGX_DECLINED for a type, curve or key not usable.
 */

static ngx_int_t
ngx_http_mcp_jwk_key(ngx_pool_t *pool, cJSON *jwk, char *kty,
    ngx_http_mcp_jwk_t *key)
{
    EVP_PKEY            *pkey;
    ngx_uint_t           type;
    ngx_pool_cleanup_t  *cln;

    type = 0;
    pkey = NULL;

    if (ngx_strcmp(kty, "RSA") == 0) {
        type = NGX_HTTP_MCP_JWK_RSA;
        pkey = ngx_http_mcp_jwk_rsa(pool, jwk);

    } else if (ngx_strcmp(kty, "EC") == 0) {
        pkey = ngx_http_mcp_jwk_ec(pool, jwk, &type);

    } else if (ngx_strcmp(kty, "OKP") == 0) {
        type = NGX_HTTP_MCP_JWK_ED25519;
        pkey = ngx_http_mcp_jwk_okp(pool, jwk);
    }

    if (pkey == NULL) {
        return NGX_DECLINED;
    }

    cln = ngx_pool_cleanup_add(pool, 0);
    if (cln == NULL) {
        EVP_PKEY_free(pkey);
        return NGX_ERROR;
    }

    cln->handler = ngx_http_mcp_pkey_cleanup;
    cln->data = pkey;

    ngx_memzero(key, sizeof(ngx_http_mcp_jwk_t));
    key->type = type;
    key->pkey = pkey;

    return NGX_OK;
}


/*
 * RFC 7638: the thumbprint hashes the key's required members alone, in
 * lexicographic order, without white space.  Their values are taken as
 * they are: a key whose values would need escaping is no key the import
 * below makes (base64url, a known curve), so a thumbprint of one never
 * matches.
 */

ngx_int_t
ngx_http_mcp_jwk_thumbprint(ngx_pool_t *pool, cJSON *jwk, u_char *thumbprint,
    const char **error)
{
    u_char       *p, *buf;
    cJSON        *kty, *v[4];
    size_t        len;
    ngx_uint_t    i, n;
    const char  **m, *members[4];

    static const char  *private[] = {
        "d", "p", "q", "dp", "dq", "qi", "oth", "k", NULL
    };

    *error = "the proof's jwk is not a public key";

    if (!cJSON_IsObject(jwk)) {
        return NGX_DECLINED;
    }

    for (m = private; *m; m++) {
        if (cJSON_HasObjectItem(jwk, *m)) {
            *error = "the proof's jwk holds a private key";
            return NGX_DECLINED;
        }
    }

    kty = cJSON_GetObjectItemCaseSensitive(jwk, "kty");

    if (!cJSON_IsString(kty)) {
        return NGX_DECLINED;
    }

    members[0] = "crv";
    members[1] = "kty";
    members[2] = "x";
    members[3] = "y";
    n = 4;

    if (ngx_strcmp(kty->valuestring, "RSA") == 0) {
        members[0] = "e";
        members[2] = "n";
        n = 3;

    } else if (ngx_strcmp(kty->valuestring, "OKP") == 0) {
        n = 3;

    } else if (ngx_strcmp(kty->valuestring, "EC") != 0) {
        return NGX_DECLINED;
    }

    len = sizeof("{}");

    for (i = 0; i < n; i++) {
        v[i] = cJSON_GetObjectItemCaseSensitive(jwk, members[i]);

        if (!cJSON_IsString(v[i])) {
            return NGX_DECLINED;
        }

        len += sizeof("\"\":\"\",") + ngx_strlen(members[i])
               + ngx_strlen(v[i]->valuestring);
    }

    buf = ngx_pnalloc(pool, len);
    if (buf == NULL) {
        return NGX_ERROR;
    }

    p = buf;
    *p++ = '{';

    for (i = 0; i < n; i++) {
        p = ngx_sprintf(p, "%s\"%s\":\"%s\"", i ? "," : "", members[i],
                        v[i]->valuestring);
    }

    *p++ = '}';

    return ngx_http_mcp_sha256(buf, p - buf, thumbprint);
}


ngx_int_t
ngx_http_mcp_jwk_import(ngx_pool_t *pool, cJSON *jwk,
    ngx_http_mcp_jwk_t *key, const char **error)
{
    cJSON      *kty;
    ngx_int_t   rc;

    kty = cJSON_GetObjectItemCaseSensitive(jwk, "kty");

    rc = cJSON_IsString(kty)
         ? ngx_http_mcp_jwk_key(pool, jwk, kty->valuestring, key)
         : NGX_DECLINED;

    if (rc == NGX_DECLINED) {
        *error = "the proof's jwk is not a public key";
    }

    return rc;
}


static cJSON *
ngx_http_mcp_jwt_decode_json(ngx_pool_t *pool, u_char *p, size_t len)
{
    cJSON               *json;
    const char          *end;
    const char          *error;
    ngx_pool_cleanup_t  *cln;

    /* one meaning for every parser: no duplicate names, no "\u0000" */
    if (ngx_http_mcp_json_strict(pool, p, len, &error) != NGX_OK) {
        return NULL;
    }

    cln = ngx_pool_cleanup_add(pool, 0);
    if (cln == NULL) {
        return NULL;
    }

    json = cJSON_ParseWithLengthOpts((const char *) p, len, &end, 0);

    if (json != NULL && (size_t) ((u_char *) end - p) < len) {
        while ((size_t) ((u_char *) end - p) < len
               && (*end == ' ' || *end == '\t' || *end == '\r'
                   || *end == '\n'))
        {
            end++;
        }

        if ((size_t) ((u_char *) end - p) < len) {
            cJSON_Delete(json);
            json = NULL;
        }
    }

    cln->handler = ngx_http_mcp_json_cleanup;
    cln->data = json;

    return json;
}


static ngx_int_t
ngx_http_mcp_jwt_b64(ngx_pool_t *pool, u_char *p, size_t len, ngx_str_t *out)
{
    ngx_str_t  src;

    if (len == 0) {
        ngx_str_null(out);
        return NGX_OK;
    }

    src.data = p;
    src.len = len;

    out->data = ngx_pnalloc(pool, ngx_base64_decoded_length(len) + 1);
    if (out->data == NULL) {
        return NGX_ERROR;
    }

    if (ngx_decode_base64url(out, &src) != NGX_OK) {
        return NGX_DECLINED;
    }

    out->data[out->len] = '\0';

    return NGX_OK;
}


static ngx_int_t
ngx_http_mcp_jwk_string(ngx_pool_t *pool, cJSON *jwk, const char *name,
    ngx_str_t *out)
{
    cJSON  *v;

    v = cJSON_GetObjectItemCaseSensitive(jwk, name);

    ngx_str_null(out);

    if (!cJSON_IsString(v)) {
        return NGX_OK;
    }

    out->len = ngx_strlen(v->valuestring);

    out->data = ngx_pnalloc(pool, out->len + 1);
    if (out->data == NULL) {
        return NGX_ERROR;
    }

    ngx_memcpy(out->data, v->valuestring, out->len + 1);

    return NGX_OK;
}


static ngx_int_t
ngx_http_mcp_jwk_bytes(ngx_pool_t *pool, cJSON *jwk, const char *name,
    ngx_str_t *out)
{
    cJSON  *v;

    v = cJSON_GetObjectItemCaseSensitive(jwk, name);

    if (!cJSON_IsString(v) || v->valuestring[0] == '\0') {
        return NGX_DECLINED;
    }

    return ngx_http_mcp_jwt_b64(pool, (u_char *) v->valuestring,
                                ngx_strlen(v->valuestring), out);
}


static EVP_PKEY *
ngx_http_mcp_jwk_rsa(ngx_pool_t *pool, cJSON *jwk)
{
    BIGNUM          *n, *e;
    EVP_PKEY        *pkey;
    ngx_str_t        nb, eb;
    OSSL_PARAM_BLD  *bld;

    if (ngx_http_mcp_jwk_bytes(pool, jwk, "n", &nb) != NGX_OK
        || ngx_http_mcp_jwk_bytes(pool, jwk, "e", &eb) != NGX_OK)
    {
        return NULL;
    }

    pkey = NULL;
    n = BN_bin2bn(nb.data, nb.len, NULL);
    e = BN_bin2bn(eb.data, eb.len, NULL);
    bld = OSSL_PARAM_BLD_new();

    if (n != NULL && e != NULL && bld != NULL
        && OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_N, n)
        && OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_E, e))
    {
        pkey = ngx_http_mcp_pkey_fromdata("RSA", bld);
    }

    OSSL_PARAM_BLD_free(bld);
    BN_free(n);
    BN_free(e);

    if (pkey != NULL && EVP_PKEY_get_bits(pkey) < NGX_HTTP_MCP_RSA_MIN_BITS) {
        EVP_PKEY_free(pkey);
        pkey = NULL;
    }

    return pkey;
}


static EVP_PKEY *
ngx_http_mcp_jwk_ec(ngx_pool_t *pool, cJSON *jwk, ngx_uint_t *type)
{
    u_char          *pub;
    cJSON           *crv;
    size_t           size;
    EVP_PKEY        *pkey;
    ngx_str_t        x, y;
    const char      *group;
    OSSL_PARAM_BLD  *bld;

    crv = cJSON_GetObjectItemCaseSensitive(jwk, "crv");

    if (!cJSON_IsString(crv)) {
        return NULL;
    }

    if (ngx_strcmp(crv->valuestring, "P-256") == 0) {
        *type = NGX_HTTP_MCP_JWK_P256;
        group = "prime256v1";
        size = 32;

    } else if (ngx_strcmp(crv->valuestring, "P-384") == 0) {
        *type = NGX_HTTP_MCP_JWK_P384;
        group = "secp384r1";
        size = 48;

    } else {
        return NULL;
    }

    if (ngx_http_mcp_jwk_bytes(pool, jwk, "x", &x) != NGX_OK
        || ngx_http_mcp_jwk_bytes(pool, jwk, "y", &y) != NGX_OK
        || x.len != size || y.len != size)
    {
        return NULL;
    }

    pub = ngx_pnalloc(pool, 1 + 2 * size);
    if (pub == NULL) {
        return NULL;
    }

    pub[0] = 0x04;
    ngx_memcpy(pub + 1, x.data, size);
    ngx_memcpy(pub + 1 + size, y.data, size);

    pkey = NULL;
    bld = OSSL_PARAM_BLD_new();

    if (bld != NULL
        && OSSL_PARAM_BLD_push_utf8_string(bld, OSSL_PKEY_PARAM_GROUP_NAME,
                                           group, 0)
        && OSSL_PARAM_BLD_push_octet_string(bld, OSSL_PKEY_PARAM_PUB_KEY,
                                            pub, 1 + 2 * size))
    {
        pkey = ngx_http_mcp_pkey_fromdata("EC", bld);
    }

    OSSL_PARAM_BLD_free(bld);

    return pkey;
}


static EVP_PKEY *
ngx_http_mcp_jwk_okp(ngx_pool_t *pool, cJSON *jwk)
{
    cJSON      *crv;
    ngx_str_t   x;

    crv = cJSON_GetObjectItemCaseSensitive(jwk, "crv");

    if (!cJSON_IsString(crv) || ngx_strcmp(crv->valuestring, "Ed25519") != 0
        || ngx_http_mcp_jwk_bytes(pool, jwk, "x", &x) != NGX_OK
        || x.len != 32)
    {
        return NULL;
    }

    return EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, NULL, x.data,
                                       x.len);
}


static EVP_PKEY *
ngx_http_mcp_pkey_fromdata(const char *name, OSSL_PARAM_BLD *bld)
{
    EVP_PKEY      *pkey;
    OSSL_PARAM    *params;
    EVP_PKEY_CTX  *ctx;

    pkey = NULL;
    params = OSSL_PARAM_BLD_to_param(bld);
    ctx = EVP_PKEY_CTX_new_from_name(NULL, name, NULL);

    if (params == NULL || ctx == NULL
        || EVP_PKEY_fromdata_init(ctx) != 1
        || EVP_PKEY_fromdata(ctx, &pkey, EVP_PKEY_PUBLIC_KEY, params) != 1)
    {
        pkey = NULL;
    }

    EVP_PKEY_CTX_free(ctx);
    OSSL_PARAM_free(params);
    ERR_clear_error();

    return pkey;
}


static void
ngx_http_mcp_json_cleanup(void *data)
{
    cJSON_Delete(data);
}


static void
ngx_http_mcp_pkey_cleanup(void *data)
{
    EVP_PKEY_free(data);
}
