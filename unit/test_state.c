
/*
 * Unit tests of src/ngx_http_mcp_state.c: requestState tokens sealed and
 * opened again; refused when any bit of them changed, when opened with
 * another bind or key, and when malformed; expired only once the MAC
 * matched.  The malformed tokens that matter carry a correct MAC (made
 * here with HMAC()), so that it is the syntax check that refuses them
 * and not the MAC.  Every token is opened from an exact-size copy, or
 * from a buffer with more text after it, so that a read past its length
 * is an ASan report or a wrong answer.
 */


#include <ngx_config.h>
#include <ngx_core.h>

#include <openssl/hmac.h>

#include "ngx_http_mcp_state.h"
#include "ngx_shim.h"
#include "unit.h"


#define NGX_UNIT_NOW     1750000000
#define NGX_UNIT_BIND    "tools/call:deploy\nalice"


static ngx_str_t ngx_unit_seal(const char *bind, const u_char *payload,
    size_t len, time_t expires);
static ngx_int_t ngx_unit_open(const u_char *k, const char *bind,
    const u_char *token, size_t len, time_t now, ngx_str_t *payload);
static ngx_int_t ngx_unit_open_str(const char *token);
static char *ngx_unit_forge(const char *prefix, const char *bind);
static char *ngx_unit_cstr(ngx_str_t *s);
static void test_round_trip(void);
static void test_seal_limits(void);
static void test_tamper(void);
static void test_bind_key(void);
static void test_expiry(void);
static void test_malformed(void);
static void test_unterminated(void);


static ngx_pool_t  *pool;
static u_char       key[NGX_HTTP_MCP_STATE_KEY_LEN];
static u_char       key_other[NGX_HTTP_MCP_STATE_KEY_LEN];


int
main(void)
{
    ngx_uint_t  i;

    pool = ngx_shim_pool_create();
    if (pool == NULL) {
        return 2;
    }

    for (i = 0; i < NGX_HTTP_MCP_STATE_KEY_LEN; i++) {
        key[i] = (u_char) (i * 7 + 1);
        key_other[i] = (u_char) (i * 11 + 3);
    }

    test_round_trip();
    test_seal_limits();
    test_tamper();
    test_bind_key();
    test_expiry();
    test_malformed();
    test_unterminated();

    ngx_shim_pool_destroy(pool);

    return ngx_unit_done("test_state");
}


/* sealed with key; data NULL on failure */

static ngx_str_t
ngx_unit_seal(const char *bind, const u_char *payload, size_t len,
    time_t expires)
{
    ngx_str_t  b, p, token;

    b.data = (u_char *) bind;
    b.len = strlen(bind);
    p.data = (u_char *) payload;
    p.len = len;

    if (ngx_http_mcp_state_seal(pool, key, &b, &p, expires, &token)
        != NGX_OK)
    {
        ngx_str_null(&token);
    }

    return token;
}


/* opened from an exact-size copy of the token */

static ngx_int_t
ngx_unit_open(const u_char *k, const char *bind, const u_char *token,
    size_t len, time_t now, ngx_str_t *payload)
{
    u_char     *copy;
    ngx_str_t   b, t;

    copy = ngx_pnalloc(pool, len ? len : 1);
    if (copy == NULL) {
        return NGX_ERROR;
    }

    if (len) {
        ngx_memcpy(copy, token, len);
    }

    b.data = (u_char *) bind;
    b.len = strlen(bind);
    t.data = copy;
    t.len = len;

    ngx_str_null(payload);

    return ngx_http_mcp_state_open(pool, k, &b, &t, now, payload);
}


/* with the test's key and bind, before the expiry */

static ngx_int_t
ngx_unit_open_str(const char *token)
{
    ngx_str_t  payload;

    if (token == NULL) {
        return NGX_ERROR;
    }

    return ngx_unit_open(key, NGX_UNIT_BIND, (u_char *) token,
                         strlen(token), NGX_UNIT_NOW, &payload);
}


/* prefix followed by its correct MAC, whatever the prefix's syntax */

static char *
ngx_unit_forge(const char *prefix, const char *bind)
{
    u_char        *in, md[EVP_MAX_MD_SIZE];
    size_t         plen, blen;
    ngx_str_t      src, dst;
    unsigned int   n;

    plen = strlen(prefix);
    blen = strlen(bind);

    in = ngx_pnalloc(pool, plen + blen + 44 + 1);
    if (in == NULL) {
        return NULL;
    }

    ngx_memcpy(in, prefix, plen);
    ngx_memcpy(in + plen, bind, blen);

    if (HMAC(EVP_sha256(), key, sizeof(key), in, plen + blen, md, &n)
        == NULL)
    {
        return NULL;
    }

    src.data = md;
    src.len = n;
    dst.data = in + plen;

    ngx_encode_base64url(&dst, &src);
    dst.data[dst.len] = '\0';

    return (char *) in;
}


static char *
ngx_unit_cstr(ngx_str_t *s)
{
    char  *p;

    p = ngx_pnalloc(pool, s->len + 1);
    if (p == NULL) {
        return NULL;
    }

    ngx_memcpy(p, s->data, s->len);
    p[s->len] = '\0';

    return p;
}


static void
test_round_trip(void)
{
    char       *s;
    ngx_int_t   rc;
    ngx_str_t   token, again, payload;

    static u_char  bin[] = { 0, 1, 0xff, '.', '=', 0, 0x80 };

    token = ngx_unit_seal(NGX_UNIT_BIND, (u_char *) "{\"step\":2}", 10,
                          NGX_UNIT_NOW + 60);
    CHECK(token.data != NULL, "seal: NGX_OK");
    CHECK(token.len > 13
          && ngx_strncmp(token.data, "1.1750000060.", 13) == 0,
          "seal: version and expires lead the token");
    CHECK_MEM(token.data + 13, token.len - 13,
              "eyJzdGVwIjoyfQ.D0qzZnQSuN_Jj-AY9aqtaFJUvtC9kLE4eD2rrPjuSGg",
              "seal: payload and MAC as Python's hmac and base64 make them");

    rc = ngx_unit_open(key, NGX_UNIT_BIND, token.data, token.len,
                       NGX_UNIT_NOW, &payload);
    CHECK_INT(rc, NGX_OK, "open: NGX_OK");
    CHECK_MEM(payload.data, payload.len, "{\"step\":2}",
              "open: the sealed payload");
    CHECK(payload.data != NULL && payload.data[payload.len] == '\0',
          "open: the payload is NUL-terminated");

    again = ngx_unit_seal(NGX_UNIT_BIND, (u_char *) "{\"step\":2}", 10,
                          NGX_UNIT_NOW + 60);
    CHECK(again.len == token.len
          && ngx_memcmp(again.data, token.data, token.len) == 0,
          "seal: the same state, the same token");

    token = ngx_unit_seal(NGX_UNIT_BIND, bin, sizeof(bin), NGX_UNIT_NOW);
    rc = ngx_unit_open(key, NGX_UNIT_BIND, token.data, token.len,
                       NGX_UNIT_NOW, &payload);
    CHECK(rc == NGX_OK && payload.len == sizeof(bin)
          && ngx_memcmp(payload.data, bin, sizeof(bin)) == 0,
          "binary payload with NUL, '.' and '=': round trip");

    token = ngx_unit_seal(NGX_UNIT_BIND, NULL, 0, NGX_UNIT_NOW);
    s = ngx_unit_cstr(&token);
    CHECK(s != NULL && strncmp(s, "1.1750000000..", 14) == 0
          && strlen(s) == 14 + 43,
          "empty payload: an empty third part");
    rc = ngx_unit_open(key, NGX_UNIT_BIND, token.data, token.len,
                       NGX_UNIT_NOW, &payload);
    CHECK(rc == NGX_OK && payload.len == 0 && payload.data != NULL
          && payload.data[0] == '\0',
          "empty payload: round trip");

    token = ngx_unit_seal("", (u_char *) "x", 1, NGX_UNIT_NOW);
    rc = ngx_unit_open(key, "", token.data, token.len, NGX_UNIT_NOW,
                       &payload);
    CHECK(rc == NGX_OK && payload.len == 1 && payload.data[0] == 'x',
          "empty bind: round trip");

    token = ngx_unit_seal(NGX_UNIT_BIND, (u_char *) "x", 1, 0);
    rc = ngx_unit_open(key, NGX_UNIT_BIND, token.data, token.len, 0,
                       &payload);
    CHECK(rc == NGX_OK && token.len > 4
          && ngx_strncmp(token.data, "1.0.", 4) == 0,
          "expires 0: written \"0\", round trip");

    token = ngx_unit_seal(NGX_UNIT_BIND, (u_char *) "x", 1,
                          NGX_MAX_TIME_T_VALUE);
    rc = ngx_unit_open(key, NGX_UNIT_BIND, token.data, token.len,
                       NGX_UNIT_NOW, &payload);
    CHECK_INT(rc, NGX_OK, "largest time_t expires: round trip");
}


static void
test_seal_limits(void)
{
    u_char     *big;
    ngx_int_t   rc;
    ngx_str_t   token, payload, b;

    big = ngx_pnalloc(pool, 65536);
    if (big == NULL) {
        CHECK(0, "seal limits: no memory");
        return;
    }

    ngx_memset(big, 'a', 65536);

    /* 1.1750000000. + 65432 + . + 43 = 65489: fits */
    token = ngx_unit_seal(NGX_UNIT_BIND, big, 49074, NGX_UNIT_NOW);
    CHECK(token.data != NULL && token.len <= NGX_HTTP_MCP_STATE_MAX_LEN,
          "seal: a 48 KB payload fits");
    rc = ngx_unit_open(key, NGX_UNIT_BIND, token.data, token.len,
                       NGX_UNIT_NOW, &payload);
    CHECK(rc == NGX_OK && payload.len == 49074,
          "open: the longest payload's token");

    token = ngx_unit_seal(NGX_UNIT_BIND, big, 49152, NGX_UNIT_NOW);
    CHECK(token.data == NULL, "seal: a token over 64 KB refused");

    b.data = (u_char *) "";
    b.len = 0;
    payload.data = big;
    payload.len = 1;

    CHECK_INT(ngx_http_mcp_state_seal(pool, key, &b, &payload, -1, &token),
              NGX_DECLINED, "seal: negative expires refused");
}


static void
test_tamper(void)
{
    char        *t, *c;
    u_char      *buf;
    size_t       i, len;
    ngx_int_t    rc;
    ngx_str_t    token, other, payload;
    ngx_uint_t   bit, accepted;

    static const char  abc[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
                               "abcdefghijklmnopqrstuvwxyz0123456789-_";

    token = ngx_unit_seal(NGX_UNIT_BIND, (u_char *) "{\"k\":\"v\"}", 9,
                          NGX_UNIT_NOW + 60);
    t = ngx_unit_cstr(&token);
    if (t == NULL) {
        CHECK(0, "tamper: no token");
        return;
    }

    len = token.len;

    buf = ngx_pnalloc(pool, len);
    if (buf == NULL) {
        CHECK(0, "tamper: no memory");
        return;
    }

    /* version, expires, payload, MAC: one byte in each */
    ngx_memcpy(buf, t, len);
    buf[0] ^= 0x02;
    CHECK_INT(ngx_unit_open(key, NGX_UNIT_BIND, buf, len, NGX_UNIT_NOW,
                            &payload), NGX_DECLINED, "flipped version");

    ngx_memcpy(buf, t, len);
    buf[11] ^= 0x01;
    CHECK_INT(ngx_unit_open(key, NGX_UNIT_BIND, buf, len, NGX_UNIT_NOW,
                            &payload), NGX_DECLINED,
              "flipped expires digit (a later expiry)");

    ngx_memcpy(buf, t, len);
    buf[14] ^= 0x01;
    CHECK_INT(ngx_unit_open(key, NGX_UNIT_BIND, buf, len, NGX_UNIT_NOW,
                            &payload), NGX_DECLINED, "flipped payload");

    ngx_memcpy(buf, t, len);
    buf[len - 10] ^= 0x01;
    CHECK_INT(ngx_unit_open(key, NGX_UNIT_BIND, buf, len, NGX_UNIT_NOW,
                            &payload), NGX_DECLINED, "flipped MAC");

    /* the MAC's last character carries 2 bits no decoder reads */
    ngx_memcpy(buf, t, len);
    c = strchr(abc, buf[len - 1]);
    buf[len - 1] = abc[(c - abc) ^ 1];
    CHECK_INT(ngx_unit_open(key, NGX_UNIT_BIND, buf, len, NGX_UNIT_NOW,
                            &payload), NGX_DECLINED,
              "MAC spelled otherwise in its unused bits");

    accepted = 0;

    for (i = 0; i < len; i++) {
        for (bit = 0; bit < 8; bit++) {
            ngx_memcpy(buf, t, len);
            buf[i] ^= (u_char) (1 << bit);

            rc = ngx_unit_open(key, NGX_UNIT_BIND, buf, len, NGX_UNIT_NOW,
                               &payload);
            if (rc != NGX_DECLINED) {
                accepted++;
            }
        }
    }

    CHECK_INT(accepted, 0, "every bit of every byte flipped: NGX_DECLINED");

    CHECK_INT(ngx_unit_open(key, NGX_UNIT_BIND, (u_char *) t, len - 1,
                            NGX_UNIT_NOW, &payload), NGX_DECLINED,
              "MAC cut short");

    /* another token's payload under this token's MAC, and the reverse */
    other = ngx_unit_seal(NGX_UNIT_BIND, (u_char *) "{\"k\":\"w\"}", 9,
                          NGX_UNIT_NOW + 60);
    if (other.data == NULL || other.len != len) {
        CHECK(0, "tamper: no second token");
        return;
    }

    ngx_memcpy(buf, other.data, len - 43);
    ngx_memcpy(buf + len - 43, t + len - 43, 43);
    CHECK_INT(ngx_unit_open(key, NGX_UNIT_BIND, buf, len, NGX_UNIT_NOW,
                            &payload), NGX_DECLINED,
              "payload of one token, MAC of another");
}


static void
test_bind_key(void)
{
    ngx_str_t  token, payload;

    token = ngx_unit_seal(NGX_UNIT_BIND, (u_char *) "s", 1, NGX_UNIT_NOW);

    CHECK_INT(ngx_unit_open(key, "tools/call:deploy\nmallory", token.data,
                            token.len, NGX_UNIT_NOW, &payload),
              NGX_DECLINED, "another subject: NGX_DECLINED");
    CHECK_INT(ngx_unit_open(key, "tools/call:delete\nalice", token.data,
                            token.len, NGX_UNIT_NOW, &payload),
              NGX_DECLINED, "another tool: NGX_DECLINED");
    CHECK_INT(ngx_unit_open(key, NGX_UNIT_BIND "x", token.data, token.len,
                            NGX_UNIT_NOW, &payload),
              NGX_DECLINED, "bind extended: NGX_DECLINED");
    CHECK_INT(ngx_unit_open(key, "", token.data, token.len, NGX_UNIT_NOW,
                            &payload),
              NGX_DECLINED, "empty bind: NGX_DECLINED");
    CHECK_INT(ngx_unit_open(key_other, NGX_UNIT_BIND, token.data, token.len,
                            NGX_UNIT_NOW, &payload),
              NGX_DECLINED, "another key: NGX_DECLINED");

    key[31] ^= 0x80;
    CHECK_INT(ngx_unit_open(key, NGX_UNIT_BIND, token.data, token.len,
                            NGX_UNIT_NOW, &payload),
              NGX_DECLINED, "key with one bit changed: NGX_DECLINED");
    key[31] ^= 0x80;

    CHECK_INT(ngx_unit_open(key, NGX_UNIT_BIND, token.data, token.len,
                            NGX_UNIT_NOW, &payload),
              NGX_OK, "the right key and bind again: NGX_OK");
}


static void
test_expiry(void)
{
    ngx_str_t  token, payload;

    token = ngx_unit_seal(NGX_UNIT_BIND, (u_char *) "s", 1, NGX_UNIT_NOW);

    CHECK_INT(ngx_unit_open(key, NGX_UNIT_BIND, token.data, token.len,
                            NGX_UNIT_NOW - 3600, &payload),
              NGX_OK, "an hour before the expiry: NGX_OK");
    CHECK_INT(ngx_unit_open(key, NGX_UNIT_BIND, token.data, token.len,
                            NGX_UNIT_NOW, &payload),
              NGX_OK, "at the expiry second: NGX_OK");
    CHECK_INT(ngx_unit_open(key, NGX_UNIT_BIND, token.data, token.len,
                            NGX_UNIT_NOW + 1, &payload),
              NGX_ABORT, "one second after: NGX_ABORT");
    CHECK(payload.data == NULL, "expired: no payload given");
    CHECK_INT(ngx_unit_open(key, NGX_UNIT_BIND, token.data, token.len,
                            NGX_MAX_TIME_T_VALUE, &payload),
              NGX_ABORT, "long expired: NGX_ABORT");

    /* the MAC is checked first: a forged expired token is not "expired" */
    CHECK_INT(ngx_unit_open(key, "other", token.data, token.len,
                            NGX_UNIT_NOW + 1, &payload),
              NGX_DECLINED, "expired, another bind: NGX_DECLINED");
    CHECK_INT(ngx_unit_open(key_other, NGX_UNIT_BIND, token.data, token.len,
                            NGX_UNIT_NOW + 1, &payload),
              NGX_DECLINED, "expired, another key: NGX_DECLINED");
}


static void
test_malformed(void)
{
    char        *big, *forged;
    size_t       len;
    ngx_str_t    token;
    ngx_uint_t   i;

    /* tokens the syntax check refuses, each with a correct MAC */
    static const struct {
        const char  *text;
        const char  *name;
    }  syntax[] = {
        { "2.1750000000.eA.", "version 2" },
        { "01.1750000000.eA.", "version 01" },
        { "1..eA.", "empty expires" },
        { "1.17500x0000.eA.", "non-digit in expires" },
        { "1.+1750000000.eA.", "expires with '+'" },
        { "1.-1.eA.", "expires with '-'" },
        { "1.01750000000.eA.", "expires with a leading zero" },
        { "1. 1750000000.eA.", "expires with a leading space" },
        { "1.9223372036854775808.eA.", "expires past time_t" },
        { "1.99999999999999999999999999999.eA.", "expires of 29 digits" },
        { "1.1750000000.eA==.", "payload padded with '='" },
        { "1.1750000000.eA=x.", "payload with '=' inside" },
        { "1.1750000000.e+/A.", "payload in base64, not base64url" },
        { "1.1750000000.e\xff.", "payload with a byte over 0x7f" },
        { "1.1750000000.eAAAA.", "payload of 4n+1 characters" },
    };


    CHECK_INT(ngx_unit_open_str(""), NGX_DECLINED, "empty token");
    CHECK_INT(ngx_unit_open_str("1"), NGX_DECLINED, "version only");
    CHECK_INT(ngx_unit_open_str("1."), NGX_DECLINED, "version and dot");
    CHECK_INT(ngx_unit_open_str(ngx_unit_forge("1.1750000000.",
                                               NGX_UNIT_BIND)),
              NGX_DECLINED, "3 parts, MAC correct");
    CHECK_INT(ngx_unit_open_str("1.1750000000.eA"), NGX_DECLINED,
              "3 parts (no MAC part)");
    CHECK_INT(ngx_unit_open_str(ngx_unit_forge("1.1750000000.eA.eA.",
                                               NGX_UNIT_BIND)),
              NGX_DECLINED, "5 parts, MAC correct");

    token = ngx_unit_seal(NGX_UNIT_BIND, (u_char *) "x", 1, NGX_UNIT_NOW);
    forged = ngx_unit_cstr(&token);
    len = forged ? strlen(forged) : 0;
    big = ngx_pnalloc(pool, len + 3);
    if (big != NULL && forged != NULL) {
        snprintf(big, len + 3, "%s.x", forged);
    }
    CHECK_INT(ngx_unit_open_str(big), NGX_DECLINED,
              "5 parts, a part after a good MAC");

    for (i = 0; i < sizeof(syntax) / sizeof(syntax[0]); i++) {
        CHECK_INT(ngx_unit_open_str(ngx_unit_forge(syntax[i].text,
                                                   NGX_UNIT_BIND)),
                  NGX_DECLINED, syntax[i].name);
    }

    forged = ngx_unit_forge("1.1750000000.eA.", NGX_UNIT_BIND);
    CHECK_INT(ngx_unit_open_str(forged), NGX_OK,
              "the forge makes tokens that open");
    if (forged != NULL) {
        forged[strlen(forged) - 1] = '=';
    }
    CHECK_INT(ngx_unit_open_str(forged), NGX_DECLINED,
              "MAC ending in '='");
    CHECK_INT(ngx_unit_open_str("1.1750000000.eA.AAAAAAAAAAAAAAAAAAAAAAAAAA"
                                "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"),
              NGX_DECLINED, "MAC of 44 characters");

    CHECK_INT(ngx_unit_open(key, NGX_UNIT_BIND,
                            (u_char *) "1.17500\0000.eA.x",
                            sizeof("1.17500\0000.eA.x") - 1,
                            NGX_UNIT_NOW, &token),
              NGX_DECLINED, "NUL inside expires");

    /* tokens of 64 KB and one byte more, both with a correct MAC */
    len = NGX_HTTP_MCP_STATE_MAX_LEN - 43;

    big = ngx_pnalloc(pool, len + 2);
    if (big == NULL) {
        CHECK(0, "malformed: no memory");
        return;
    }

    ngx_memcpy(big, "1.1750000000.", 13);
    ngx_memset(big + 13, 'A', len - 14);
    big[len - 1] = '.';
    big[len] = '\0';

    forged = ngx_unit_forge(big, NGX_UNIT_BIND);
    CHECK(forged != NULL && strlen(forged) == NGX_HTTP_MCP_STATE_MAX_LEN
          && ngx_unit_open_str(forged) == NGX_OK,
          "token of 65536 bytes: NGX_OK");

    ngx_memset(big + 13, 'A', len - 13);
    big[len] = '.';
    big[len + 1] = '\0';

    forged = ngx_unit_forge(big, NGX_UNIT_BIND);
    CHECK(forged != NULL
          && strlen(forged) == NGX_HTTP_MCP_STATE_MAX_LEN + 1
          && ngx_unit_open_str(forged) == NGX_DECLINED,
          "token of 65537 bytes, MAC correct: NGX_DECLINED");
}


static void
test_unterminated(void)
{
    u_char      *buf;
    size_t       len;
    ngx_str_t    token, payload, bind;
    ngx_uint_t   i;

    ngx_str_set(&bind, NGX_UNIT_BIND);

    token = ngx_unit_seal(NGX_UNIT_BIND, (u_char *) "data", 4, NGX_UNIT_NOW);
    len = token.len;

    struct {
        size_t       len;
        const char  *name;
    }  cuts[] = {
        { len - 1, "length one short, the last byte in the buffer" },
        { 13, "length up to the payload: NGX_DECLINED" },
        { 12, "length up to the expires' last digit" },
        { 0, "length 0 of a full buffer" },
    };

    buf = ngx_pnalloc(pool, len + 8);
    if (buf == NULL || token.data == NULL) {
        CHECK(0, "unterminated: no memory");
        return;
    }

    /* garbage a reader past the length would take for more MAC */
    ngx_memcpy(buf, token.data, len);
    ngx_memcpy(buf + len, "AAAA.x=\xff", 8);

    token.data = buf;
    CHECK_INT(ngx_http_mcp_state_open(pool, key, &bind, &token,
                                      NGX_UNIT_NOW, &payload),
              NGX_OK, "token followed by base64url text: NGX_OK");
    CHECK_MEM(payload.data, payload.len, "data",
              "token followed by text: its payload");

    /* lengths short of the token (13: a 3-part prefix of the buffer):
     * the rest is past the length */
    for (i = 0; i < sizeof(cuts) / sizeof(cuts[0]); i++) {
        token.len = cuts[i].len;
        CHECK_INT(ngx_http_mcp_state_open(pool, key, &bind, &token,
                                          NGX_UNIT_NOW, &payload),
                  NGX_DECLINED, cuts[i].name);
    }
}
