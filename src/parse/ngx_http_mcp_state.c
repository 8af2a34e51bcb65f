
/*
 * requestState tokens sealed with HMAC-SHA256 (see ngx_http_mcp_state.h
 * for the layout).  The token comes from the client, so open() trusts
 * nothing but cheap syntax until the MAC matches: the expiry is checked
 * and the payload decoded only after that.
 *
 * The MAC is compared as the base64url text the token carries, not as
 * decoded bytes.  43 characters hold 258 bits, and nginx's decoder drops
 * the last 2, so four spellings decode to one MAC: comparing the text
 * leaves exactly one valid token for a state.  Every other part is
 * covered by the MAC as text, so it has one spelling too; the syntax is
 * still checked strictly first (one version, digits without sign or
 * leading zero, base64url without padding) so that a malformed token is
 * refused without an HMAC.
 */


#include <ngx_config.h>
#include <ngx_core.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "ngx_http_mcp_state.h"


#define NGX_HTTP_MCP_STATE_VERSION  "1."
#define NGX_HTTP_MCP_STATE_MAC_LEN  43       /* base64url of 32 bytes */

#define ngx_http_mcp_state_b64_len(len)  (((len) * 4 + 2) / 3)


static ngx_int_t ngx_http_mcp_state_mac(const u_char *key, u_char *data,
    size_t len, u_char *text);
static u_char *ngx_http_mcp_state_time(u_char *p, u_char *last,
    time_t *t);
static size_t ngx_http_mcp_state_time_len(time_t t);
static u_char *ngx_http_mcp_state_b64(u_char *p, u_char *last);


ngx_int_t
ngx_http_mcp_state_seal(ngx_pool_t *pool, const u_char *key, ngx_str_t *bind,
    ngx_str_t *payload, time_t expires, ngx_str_t *token)
{
    u_char     *buf, *p;
    size_t      len, n;
    time_t      t;
    ngx_str_t   dst;

    if (expires < 0 || payload->len > NGX_HTTP_MCP_STATE_MAX_LEN) {
        return NGX_DECLINED;
    }

    n = ngx_http_mcp_state_time_len(expires);

    /* "1." expires "." payload ".", the part the MAC shares with bind */
    len = sizeof(NGX_HTTP_MCP_STATE_VERSION) - 1 + n + 1
          + ngx_http_mcp_state_b64_len(payload->len) + 1;

    if (len + NGX_HTTP_MCP_STATE_MAC_LEN > NGX_HTTP_MCP_STATE_MAX_LEN) {
        return NGX_DECLINED;
    }

    /* bind goes where the MAC will: MACed, then overwritten */
    buf = ngx_pnalloc(pool, len + ngx_max(bind->len,
                                          NGX_HTTP_MCP_STATE_MAC_LEN));
    if (buf == NULL) {
        return NGX_ERROR;
    }

    p = ngx_cpymem(buf, NGX_HTTP_MCP_STATE_VERSION,
                   sizeof(NGX_HTTP_MCP_STATE_VERSION) - 1);

    /* by hand rather than "%T": digits exactly as open() reads them */
    t = expires;
    p += n;

    do {
        *--p = (u_char) ('0' + t % 10);
        t /= 10;
    } while (t);

    p += n;
    *p++ = '.';

    dst.data = p;
    ngx_encode_base64url(&dst, payload);

    p += dst.len;
    *p++ = '.';

    if (bind->len) {
        ngx_memcpy(p, bind->data, bind->len);
    }

    if (ngx_http_mcp_state_mac(key, buf, len + bind->len, p) != NGX_OK) {
        return NGX_ERROR;
    }

    token->data = buf;
    token->len = len + NGX_HTTP_MCP_STATE_MAC_LEN;

    return NGX_OK;
}


ngx_int_t
ngx_http_mcp_state_open(ngx_pool_t *pool, const u_char *key, ngx_str_t *bind,
    ngx_str_t *token, time_t now, ngx_str_t *payload)
{
    u_char     *p, *last, *b64, *buf, mac[NGX_HTTP_MCP_STATE_MAC_LEN];
    size_t      len;
    time_t      expires;
    ngx_str_t   src;

    if (token->len > NGX_HTTP_MCP_STATE_MAX_LEN
        || token->len < sizeof(NGX_HTTP_MCP_STATE_VERSION) - 1
        || ngx_strncmp(token->data, NGX_HTTP_MCP_STATE_VERSION,
                       sizeof(NGX_HTTP_MCP_STATE_VERSION) - 1) != 0)
    {
        return NGX_DECLINED;
    }

    last = token->data + token->len;

    p = ngx_http_mcp_state_time(token->data
                                + sizeof(NGX_HTTP_MCP_STATE_VERSION) - 1,
                                last, &expires);
    if (p == NULL || p == last || *p++ != '.') {
        return NGX_DECLINED;
    }

    b64 = p;
    p = ngx_http_mcp_state_b64(p, last);

    /* 1 character past a multiple of 4 is no base64 of anything */
    if (p == last || *p++ != '.' || (p - 1 - b64) % 4 == 1) {
        return NGX_DECLINED;
    }

    /* '.' is no base64url character: no fifth part can hide in the MAC */
    if (last - p != NGX_HTTP_MCP_STATE_MAC_LEN
        || ngx_http_mcp_state_b64(p, last) != last)
    {
        return NGX_DECLINED;
    }

    len = p - token->data;

    buf = ngx_pnalloc(pool, len + bind->len);
    if (buf == NULL) {
        return NGX_ERROR;
    }

    ngx_memcpy(buf, token->data, len);

    if (bind->len) {
        ngx_memcpy(buf + len, bind->data, bind->len);
    }

    if (ngx_http_mcp_state_mac(key, buf, len + bind->len, mac) != NGX_OK) {
        return NGX_ERROR;
    }

    if (CRYPTO_memcmp(mac, p, NGX_HTTP_MCP_STATE_MAC_LEN) != 0) {
        return NGX_DECLINED;
    }

    if (expires < now) {
        return NGX_ABORT;
    }

    src.data = b64;
    src.len = p - 1 - b64;

    payload->data = ngx_pnalloc(pool, ngx_base64_decoded_length(src.len) + 1);
    if (payload->data == NULL) {
        return NGX_ERROR;
    }

    if (ngx_decode_base64url(payload, &src) != NGX_OK) {
        return NGX_DECLINED;
    }

    /* for callers that hand the payload to a C string parser */
    payload->data[payload->len] = '\0';

    return NGX_OK;
}


/* text: NGX_HTTP_MCP_STATE_MAC_LEN characters of base64url */

static ngx_int_t
ngx_http_mcp_state_mac(const u_char *key, u_char *data, size_t len,
    u_char *text)
{
    u_char        md[EVP_MAX_MD_SIZE];
    ngx_str_t     src, dst;
    unsigned int  n;

    if (HMAC(EVP_sha256(), key, NGX_HTTP_MCP_STATE_KEY_LEN, data, len, md,
             &n)
        == NULL)
    {
        return NGX_ERROR;
    }

    src.data = md;
    src.len = n;
    dst.data = text;

    ngx_encode_base64url(&dst, &src);

    return NGX_OK;
}


/*
 * Decimal digits at p, neither signed nor zero-padded, up to the value
 * time_t holds; the first character past them, or NULL.
 */

static u_char *
ngx_http_mcp_state_time(u_char *p, u_char *last, time_t *t)
{
    u_char  *start;
    time_t   d;

    start = p;
    *t = 0;

    while (p < last && *p >= '0' && *p <= '9') {
        d = *p - '0';

        if (*t > (NGX_MAX_TIME_T_VALUE - d) / 10
            || (size_t) (p - start) == NGX_TIME_T_LEN)
        {
            return NULL;
        }

        *t = *t * 10 + d;
        p++;
    }

    if (p == start || (*start == '0' && p - start > 1)) {
        return NULL;
    }

    return p;
}


static size_t
ngx_http_mcp_state_time_len(time_t t)
{
    size_t  n;

    n = 1;

    while (t /= 10) {
        n++;
    }

    return n;
}


/* the first character at p that is not base64url's (padding is not) */

static u_char *
ngx_http_mcp_state_b64(u_char *p, u_char *last)
{
    while (p < last
           && ((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z')
               || (*p >= '0' && *p <= '9') || *p == '-' || *p == '_'))
    {
        p++;
    }

    return p;
}
