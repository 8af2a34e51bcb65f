
/*
 * mcp_token_exchange's private_key_jwt client authentication (RFC 7523,
 * OpenID Connect Core 9): the gateway signs, for each exchange, a short
 * JWT (iss and sub its client_id, aud the AS, a random jti, a minute's
 * life) with a private key read from a file at configuration time, and
 * sends it as client_assertion.  RSA (RS256), EC P-256 and P-384 (ES256,
 * ES384) and Ed25519 (EdDSA) keys.
 */


#include "ngx_http_mcp_proxy.h"

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/ecdsa.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>


/* an assertion lives this long (s): one exchange's use */
#define NGX_HTTP_MCP_ASSERTION_LIFE  60


static void ngx_http_mcp_exchange_key_cleanup(void *data);
static ngx_int_t ngx_http_mcp_exchange_sign(ngx_http_mcp_exchange_key_t *key,
    u_char *data, size_t len, u_char *sig, size_t *siglen);


/*
 * mcp_token_exchange_client_key file audience=aud [kid=kid]: the key,
 * and the assertion's audience (the AS's issuer or token endpoint URL)
 */

char *
ngx_http_mcp_token_exchange_key(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf)
{
    ngx_http_mcp_proxy_loc_conf_t *plcf = conf;

    BIO                          *bio;
    EVP_PKEY                     *pkey;
    ngx_str_t                    *value, file;
    ngx_uint_t                    i;
    ngx_pool_cleanup_t           *cln;
    ngx_http_mcp_exchange_key_t  *key;

    if (plcf->exchange_key != NGX_CONF_UNSET_PTR) {
        return "is duplicate";
    }

    value = cf->args->elts;

    key = ngx_pcalloc(cf->pool, sizeof(ngx_http_mcp_exchange_key_t));
    cln = ngx_pool_cleanup_add(cf->pool, 0);

    if (key == NULL || cln == NULL) {
        return NGX_CONF_ERROR;
    }

    for (i = 2; i < cf->args->nelts; i++) {

        if (ngx_strncmp(value[i].data, "audience=", 9) == 0
            && value[i].len > 9)
        {
            key->audience.data = value[i].data + 9;
            key->audience.len = value[i].len - 9;
            continue;
        }

        if (ngx_strncmp(value[i].data, "kid=", 4) == 0 && value[i].len > 4) {
            key->kid.data = value[i].data + 4;
            key->kid.len = value[i].len - 4;
            continue;
        }

        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "invalid parameter \"%V\" of "
                           "\"mcp_token_exchange_client_key\"", &value[i]);
        return NGX_CONF_ERROR;
    }

    if (key->audience.len == 0) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"mcp_token_exchange_client_key\" needs "
                           "\"audience=\" (the AS's issuer or token "
                           "endpoint URL)");
        return NGX_CONF_ERROR;
    }

    /* a header's or claim's text is JSON as it stands: no quote, no \ */
    for (i = 0; i < key->kid.len; i++) {
        if (key->kid.data[i] == '"' || key->kid.data[i] == '\\') {
            return "has a \"kid=\" with a quote or a backslash";
        }
    }

    for (i = 0; i < key->audience.len; i++) {
        if (key->audience.data[i] == '"' || key->audience.data[i] == '\\') {
            return "has an \"audience=\" with a quote or a backslash";
        }
    }

    file = value[1];

    if (ngx_conf_full_name(cf->cycle, &file, 1) != NGX_OK) {
        return NGX_CONF_ERROR;
    }

    bio = BIO_new_file((char *) file.data, "r");
    if (bio == NULL) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"mcp_token_exchange_client_key\": cannot read "
                           "\"%V\"", &file);
        return NGX_CONF_ERROR;
    }

    pkey = PEM_read_bio_PrivateKey(bio, NULL, NULL, NULL);
    BIO_free(bio);

    if (pkey == NULL) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"mcp_token_exchange_client_key\": \"%V\" holds "
                           "no PEM private key", &file);
        return NGX_CONF_ERROR;
    }

    key->pkey = pkey;
    cln->handler = ngx_http_mcp_exchange_key_cleanup;
    cln->data = key;

    switch (EVP_PKEY_base_id(pkey)) {

    case EVP_PKEY_RSA:
        if (EVP_PKEY_bits(pkey) < 2048) {
            return "has an RSA key of less than 2048 bits";
        }

        ngx_str_set(&key->alg, "RS256");
        key->md = EVP_sha256();
        break;

    case EVP_PKEY_EC:
        if (EVP_PKEY_bits(pkey) == 256) {
            ngx_str_set(&key->alg, "ES256");
            key->md = EVP_sha256();
            key->part = 32;

        } else if (EVP_PKEY_bits(pkey) == 384) {
            ngx_str_set(&key->alg, "ES384");
            key->md = EVP_sha384();
            key->part = 48;

        } else {
            return "has an EC key that is not P-256 or P-384";
        }

        break;

    case EVP_PKEY_ED25519:
        ngx_str_set(&key->alg, "EdDSA");
        break;

    default:
        return "has a key that is not RSA, EC or Ed25519";
    }

    plcf->exchange_key = key;

    return NGX_CONF_OK;
}


static void
ngx_http_mcp_exchange_key_cleanup(void *data)
{
    ngx_http_mcp_exchange_key_t  *key = data;

    EVP_PKEY_free(key->pkey);
}


/* a fresh client_assertion in r's pool */

ngx_int_t
ngx_http_mcp_exchange_assertion(ngx_http_request_t *r,
    ngx_http_mcp_exchange_key_t *key, ngx_str_t *client_id, ngx_str_t *out)
{
    u_char     *p, *json, *buf;
    u_char      jti[16], sig[1024];
    size_t      len, siglen;
    time_t      now;
    ngx_str_t   src, dst;

    if (RAND_bytes(jti, sizeof(jti)) != 1) {
        return NGX_ERROR;
    }

    now = ngx_time();

    /* the client_id is a directive's text: no quote, no backslash */
    len = sizeof("{\"alg\":\"\",\"typ\":\"JWT\",\"kid\":\"\"}") + key->alg.len
          + key->kid.len
          + sizeof("{\"iss\":\"\",\"sub\":\"\",\"aud\":\"\",\"jti\":\"\","
                   "\"iat\":,\"exp\":}") + 2 * client_id->len
          + key->audience.len + 2 * sizeof(jti) + 2 * NGX_TIME_T_LEN;

    json = ngx_pnalloc(r->pool, len);
    buf = ngx_pnalloc(r->pool, ngx_base64_encoded_length(len)
                               + ngx_base64_encoded_length(sizeof(sig)) + 2);

    if (json == NULL || buf == NULL) {
        return NGX_ERROR;
    }

    /* the header */
    p = ngx_sprintf(json, "{\"alg\":\"%V\",\"typ\":\"JWT\"", &key->alg);

    if (key->kid.len) {
        p = ngx_sprintf(p, ",\"kid\":\"%V\"", &key->kid);
    }

    *p++ = '}';

    src.data = json;
    src.len = p - json;
    dst.data = buf;
    ngx_encode_base64url(&dst, &src);

    out->data = buf;
    out->len = dst.len;
    buf[out->len++] = '.';

    /* the claims */
    p = ngx_sprintf(json, "{\"iss\":\"%V\",\"sub\":\"%V\",\"aud\":\"%V\","
                    "\"jti\":\"%*xs\",\"iat\":%T,\"exp\":%T}",
                    client_id, client_id, &key->audience,
                    sizeof(jti), jti, now,
                    now + NGX_HTTP_MCP_ASSERTION_LIFE);

    src.data = json;
    src.len = p - json;
    dst.data = buf + out->len;
    ngx_encode_base64url(&dst, &src);

    out->len += dst.len;

    siglen = sizeof(sig);

    if (ngx_http_mcp_exchange_sign(key, out->data, out->len, sig, &siglen)
        != NGX_OK)
    {
        ngx_log_error(NGX_LOG_ERR, r->connection->log, 0,
                      "mcp: token exchange: signing the client assertion "
                      "failed");
        return NGX_ERROR;
    }

    buf[out->len++] = '.';

    src.data = sig;
    src.len = siglen;
    dst.data = buf + out->len;
    ngx_encode_base64url(&dst, &src);

    out->len += dst.len;

    return NGX_OK;
}


/* the JWS signature of data: ECDSA's as r || s, each part bytes long */

static ngx_int_t
ngx_http_mcp_exchange_sign(ngx_http_mcp_exchange_key_t *key, u_char *data,
    size_t len, u_char *sig, size_t *siglen)
{
    u_char           der[256];
    size_t           derlen;
    ngx_int_t        rc;
    ECDSA_SIG       *es;
    EVP_MD_CTX      *md;
    const BIGNUM    *br, *bs;
    const u_char    *p;

    md = EVP_MD_CTX_new();
    if (md == NULL) {
        return NGX_ERROR;
    }

    rc = NGX_ERROR;

    if (EVP_DigestSignInit(md, NULL, key->md, NULL, key->pkey) != 1) {
        goto done;
    }

    if (key->part == 0) {
        if (EVP_DigestSign(md, sig, siglen, data, len) == 1) {
            rc = NGX_OK;
        }

        goto done;
    }

    derlen = sizeof(der);

    if (EVP_DigestSign(md, der, &derlen, data, len) != 1) {
        goto done;
    }

    p = der;
    es = d2i_ECDSA_SIG(NULL, &p, derlen);

    if (es == NULL) {
        goto done;
    }

    ECDSA_SIG_get0(es, &br, &bs);

    if (BN_bn2binpad(br, sig, key->part) == (int) key->part
        && BN_bn2binpad(bs, sig + key->part, key->part) == (int) key->part)
    {
        *siglen = 2 * key->part;
        rc = NGX_OK;
    }

    ECDSA_SIG_free(es);

done:

    EVP_MD_CTX_free(md);

    return rc;
}
