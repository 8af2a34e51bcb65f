
/*
 * Keyed gateway session ids, sealed with AES-256-GCM (see
 * ngx_http_mcp_sesskey.h for the layout).  The id comes from the client,
 * so open() trusts nothing but its length and alphabet until the tag
 * matches: the issue time and the fields are read only after that.
 *
 * An id has one spelling: base64url without padding, and the text must
 * be what the decoded bytes encode to again (nginx's decoder ignores the
 * last character's spare bits and stops at '='), so that no two strings
 * name one session.  Each id has a fresh random nonce: one key seals
 * about 2^32 ids before the nonces risk repeating, which a rotation
 * keeps far away.
 */


#include <ngx_config.h>
#include <ngx_core.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include "ngx_http_mcp_sesskey.h"


#define NGX_HTTP_MCP_SESSKEY_FORMAT     0x01
#define NGX_HTTP_MCP_SESSKEY_NONCE_LEN  12
#define NGX_HTTP_MCP_SESSKEY_TAG_LEN    16
#define NGX_HTTP_MCP_SESSKEY_HEAD_LEN                                        \
    (1 + NGX_HTTP_MCP_SESSKEY_KID_LEN + NGX_HTTP_MCP_SESSKEY_NONCE_LEN)
#define NGX_HTTP_MCP_SESSKEY_AAD_LEN    (1 + NGX_HTTP_MCP_SESSKEY_KID_LEN)
#define NGX_HTTP_MCP_SESSKEY_MIN_PLAIN  (8 + 1 + 1 + 1 + 2)
#define NGX_HTTP_MCP_SESSKEY_BOUND      0x01

#define ngx_http_mcp_sesskey_b64_len(len)  (((len) * 4 + 2) / 3)


static ngx_int_t ngx_http_mcp_sesskey_parse(u_char *p, size_t len,
    ngx_http_mcp_sesskey_session_t *s);


ngx_int_t
ngx_http_mcp_sesskey_init(ngx_http_mcp_sesskey_t *key, const u_char *secret)
{
    u_char        kid[EVP_MAX_MD_SIZE];
    unsigned int  n;

    static const u_char  label_key[] = "mcp_session_key aes-256-gcm";
    static const u_char  label_kid[] = "mcp_session_key id";

    if (HMAC(EVP_sha256(), secret, NGX_HTTP_MCP_SESSKEY_LEN, label_key,
             sizeof(label_key) - 1, key->key, &n)
        == NULL
        || HMAC(EVP_sha256(), secret, NGX_HTTP_MCP_SESSKEY_LEN, label_kid,
                sizeof(label_kid) - 1, kid, &n)
           == NULL)
    {
        return NGX_ERROR;
    }

    ngx_memcpy(key->kid, kid, NGX_HTTP_MCP_SESSKEY_KID_LEN);

    return NGX_OK;
}


ngx_int_t
ngx_http_mcp_sesskey_seal(ngx_pool_t *pool, ngx_http_mcp_sesskey_t *key,
    ngx_str_t *scope, ngx_http_mcp_sesskey_session_t *s, ngx_str_t *id)
{
    int                n;
    u_char            *raw, *plain, *p;
    size_t             plen, rlen;
    uint64_t           t;
    ngx_int_t          rc;
    ngx_str_t          src;
    ngx_uint_t         i;
    EVP_CIPHER_CTX    *c;

    if (s->name.len > NGX_HTTP_MCP_SESSKEY_MAX_NAME
        || s->sid.len > NGX_HTTP_MCP_SESSKEY_MAX_SID
        || s->version > 255 || s->issued < 0)
    {
        return NGX_DECLINED;
    }

    plen = NGX_HTTP_MCP_SESSKEY_MIN_PLAIN + s->name.len + s->sid.len
           + (s->binding ? NGX_HTTP_MCP_SESSKEY_BIND_LEN : 0);
    rlen = NGX_HTTP_MCP_SESSKEY_HEAD_LEN + plen + NGX_HTTP_MCP_SESSKEY_TAG_LEN;

    plain = ngx_pnalloc(pool, plen + rlen
                              + ngx_http_mcp_sesskey_b64_len(rlen));
    if (plain == NULL) {
        return NGX_ERROR;
    }

    raw = plain + plen;

    p = plain;
    t = (uint64_t) s->issued;

    for (i = 0; i < 8; i++) {
        *p++ = (u_char) (t >> (56 - 8 * i));
    }

    *p++ = (u_char) s->version;
    *p++ = s->binding ? NGX_HTTP_MCP_SESSKEY_BOUND : 0;

    if (s->binding) {
        p = ngx_cpymem(p, s->binding, NGX_HTTP_MCP_SESSKEY_BIND_LEN);
    }

    *p++ = (u_char) s->name.len;
    p = ngx_cpymem(p, s->name.data, s->name.len);
    *p++ = (u_char) (s->sid.len >> 8);
    *p++ = (u_char) s->sid.len;

    if (s->sid.len) {
        ngx_memcpy(p, s->sid.data, s->sid.len);
    }

    raw[0] = NGX_HTTP_MCP_SESSKEY_FORMAT;
    ngx_memcpy(raw + 1, key->kid, NGX_HTTP_MCP_SESSKEY_KID_LEN);

    if (RAND_bytes(raw + NGX_HTTP_MCP_SESSKEY_AAD_LEN,
                   NGX_HTTP_MCP_SESSKEY_NONCE_LEN)
        != 1)
    {
        return NGX_ERROR;
    }

    c = EVP_CIPHER_CTX_new();
    if (c == NULL) {
        return NGX_ERROR;
    }

    rc = NGX_ERROR;
    p = raw + NGX_HTTP_MCP_SESSKEY_HEAD_LEN;

    if (EVP_EncryptInit_ex(c, EVP_aes_256_gcm(), NULL, key->key,
                           raw + NGX_HTTP_MCP_SESSKEY_AAD_LEN) != 1
        || EVP_EncryptUpdate(c, NULL, &n, raw, NGX_HTTP_MCP_SESSKEY_AAD_LEN)
           != 1
        || (scope->len
            && EVP_EncryptUpdate(c, NULL, &n, scope->data, (int) scope->len)
               != 1)
        || EVP_EncryptUpdate(c, p, &n, plain, (int) plen) != 1
        || (size_t) n != plen
        || EVP_EncryptFinal_ex(c, p + n, &n) != 1
        || EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_GET_TAG,
                               NGX_HTTP_MCP_SESSKEY_TAG_LEN, p + plen)
           != 1)
    {
        goto done;
    }

    src.data = raw;
    src.len = rlen;
    id->data = raw + rlen;
    ngx_encode_base64url(id, &src);

    rc = NGX_OK;

done:

    OPENSSL_cleanse(plain, plen);
    EVP_CIPHER_CTX_free(c);

    return rc;
}


ngx_int_t
ngx_http_mcp_sesskey_open(ngx_pool_t *pool, ngx_http_mcp_sesskey_t *keys,
    ngx_uint_t n, ngx_str_t *scope, ngx_str_t *id, time_t now,
    time_t lifetime, ngx_http_mcp_sesskey_session_t *s)
{
    int                     len;
    u_char                 *raw, *plain, *text, *ct;
    size_t                  clen;
    ngx_int_t               rc;
    ngx_str_t               dst, again;
    ngx_uint_t              i;
    EVP_CIPHER_CTX         *c;
    ngx_http_mcp_sesskey_t *key;

    if (id->len > NGX_HTTP_MCP_SESSKEY_MAX_ID
        || id->len < ngx_http_mcp_sesskey_b64_len(
                         NGX_HTTP_MCP_SESSKEY_HEAD_LEN
                         + NGX_HTTP_MCP_SESSKEY_MIN_PLAIN
                         + NGX_HTTP_MCP_SESSKEY_TAG_LEN)
        || id->len % 4 == 1)
    {
        return NGX_DECLINED;
    }

    raw = ngx_pnalloc(pool, 2 * (id->len + 3));
    if (raw == NULL) {
        return NGX_ERROR;
    }

    dst.data = raw;

    if (ngx_decode_base64url(&dst, id) != NGX_OK) {
        return NGX_DECLINED;
    }

    /* one spelling only: '=' and spare bits are refused here */
    text = raw + id->len + 3;
    again.data = text;
    ngx_encode_base64url(&again, &dst);

    if (again.len != id->len || ngx_memcmp(text, id->data, id->len) != 0) {
        return NGX_DECLINED;
    }

    if (raw[0] != NGX_HTTP_MCP_SESSKEY_FORMAT) {
        return NGX_DECLINED;
    }

    key = NULL;

    for (i = 0; i < n; i++) {
        if (ngx_memcmp(keys[i].kid, raw + 1, NGX_HTTP_MCP_SESSKEY_KID_LEN)
            == 0)
        {
            key = &keys[i];
            break;
        }
    }

    if (key == NULL) {
        return NGX_DECLINED;
    }

    ct = raw + NGX_HTTP_MCP_SESSKEY_HEAD_LEN;
    clen = dst.len - NGX_HTTP_MCP_SESSKEY_HEAD_LEN
           - NGX_HTTP_MCP_SESSKEY_TAG_LEN;

    /* the decoded bytes' copy of the text is done with: plain goes there */
    plain = text;

    c = EVP_CIPHER_CTX_new();
    if (c == NULL) {
        return NGX_ERROR;
    }

    rc = NGX_DECLINED;

    if (EVP_DecryptInit_ex(c, EVP_aes_256_gcm(), NULL, key->key,
                           raw + NGX_HTTP_MCP_SESSKEY_AAD_LEN) != 1
        || EVP_DecryptUpdate(c, NULL, &len, raw, NGX_HTTP_MCP_SESSKEY_AAD_LEN)
           != 1
        || (scope->len
            && EVP_DecryptUpdate(c, NULL, &len, scope->data,
                                 (int) scope->len)
               != 1)
        || EVP_DecryptUpdate(c, plain, &len, ct, (int) clen) != 1
        || EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_SET_TAG,
                               NGX_HTTP_MCP_SESSKEY_TAG_LEN, ct + clen)
           != 1)
    {
        rc = NGX_ERROR;
        goto done;
    }

    /* a tag that does not match: forged, garbled, or another key's */
    if (EVP_DecryptFinal_ex(c, plain + len, &len) != 1) {
        goto done;
    }

    if (ngx_http_mcp_sesskey_parse(plain, clen, s) != NGX_OK) {
        goto done;
    }

    rc = (lifetime > 0 && now - s->issued > lifetime) ? NGX_ABORT : NGX_OK;

done:

    EVP_CIPHER_CTX_free(c);

    return rc;
}


/* authentic plaintext, still parsed strictly: exact lengths, no tail */

static ngx_int_t
ngx_http_mcp_sesskey_parse(u_char *p, size_t len,
    ngx_http_mcp_sesskey_session_t *s)
{
    u_char      *last, flags;
    uint64_t     t;
    ngx_uint_t   i;

    last = p + len;

    if (len < NGX_HTTP_MCP_SESSKEY_MIN_PLAIN) {
        return NGX_DECLINED;
    }

    t = 0;

    for (i = 0; i < 8; i++) {
        t = (t << 8) | *p++;
    }

    if (t > (uint64_t) NGX_MAX_TIME_T_VALUE) {
        return NGX_DECLINED;
    }

    s->issued = (time_t) t;
    s->version = *p++;
    flags = *p++;

    if (flags & ~NGX_HTTP_MCP_SESSKEY_BOUND) {
        return NGX_DECLINED;
    }

    s->binding = NULL;

    if (flags & NGX_HTTP_MCP_SESSKEY_BOUND) {
        if (last - p < NGX_HTTP_MCP_SESSKEY_BIND_LEN + 3) {
            return NGX_DECLINED;
        }

        s->binding = p;
        p += NGX_HTTP_MCP_SESSKEY_BIND_LEN;
    }

    s->name.len = *p++;

    if ((size_t) (last - p) < s->name.len + 2) {
        return NGX_DECLINED;
    }

    s->name.data = p;
    p += s->name.len;

    s->sid.len = (size_t) p[0] << 8 | p[1];
    p += 2;

    if ((size_t) (last - p) != s->sid.len
        || s->sid.len > NGX_HTTP_MCP_SESSKEY_MAX_SID)
    {
        return NGX_DECLINED;
    }

    s->sid.data = p;

    return NGX_OK;
}
