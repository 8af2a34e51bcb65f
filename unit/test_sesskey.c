
/*
 * Unit tests of src/ngx_http_mcp_sesskey.c: keyed gateway session ids
 * sealed and opened again, with and without a binding and a replica
 * session id; opened with the second of two keys (a rotation); refused
 * when any bit of them changed, when truncated or lengthened, when
 * spelled another way (padding, spare bits), under an unknown key, and
 * expired only once authentic; the sealed bytes show neither the
 * replica's name nor its session id (a seal that skipped encryption but
 * kept the tag would round-trip).  Every id is opened from an exact-size
 * copy, so that a read past its length is an ASan report.
 */


#include <ngx_config.h>
#include <ngx_core.h>

#include "ngx_http_mcp_sesskey.h"
#include "ngx_shim.h"
#include "unit.h"


#define NGX_UNIT_NOW  1750000000

/* the id's layout (src/ngx_http_mcp_sesskey.h): format, key id, nonce */
#define NGX_UNIT_HEAD  (1 + NGX_HTTP_MCP_SESSKEY_KID_LEN + 12)
#define NGX_UNIT_TAG   16


static ngx_int_t ngx_unit_open(ngx_http_mcp_sesskey_t *keys, ngx_uint_t n,
    const u_char *id, size_t len, time_t now, time_t lifetime,
    ngx_http_mcp_sesskey_session_t *s);
static ngx_str_t ngx_unit_seal(ngx_http_mcp_sesskey_t *key,
    const char *name, const char *sid, u_char *binding, time_t issued);
static ngx_uint_t ngx_unit_contains(ngx_str_t *hay, const char *needle);
static void test_round_trip(void);
static void test_hidden(void);
static void test_limits(void);
static void test_rotation(void);
static void test_tamper(void);
static void test_spelling(void);
static void test_expiry(void);


static ngx_pool_t              *pool;
static ngx_http_mcp_sesskey_t   keys[2];    /* new, old */
static ngx_http_mcp_sesskey_t   other;
static ngx_str_t                unit_scope = ngx_string("localhost /mcp");


int
main(void)
{
    u_char      secret[3][NGX_HTTP_MCP_SESSKEY_LEN];
    ngx_uint_t  i;

    pool = ngx_shim_pool_create();
    if (pool == NULL) {
        return 2;
    }

    for (i = 0; i < NGX_HTTP_MCP_SESSKEY_LEN; i++) {
        secret[0][i] = (u_char) (i * 7 + 1);
        secret[1][i] = (u_char) (i * 11 + 3);
        secret[2][i] = (u_char) (i * 13 + 5);
    }

    CHECK(ngx_http_mcp_sesskey_init(&keys[0], secret[0]) == NGX_OK,
          "init key 0");
    CHECK(ngx_http_mcp_sesskey_init(&keys[1], secret[1]) == NGX_OK,
          "init key 1");
    CHECK(ngx_http_mcp_sesskey_init(&other, secret[2]) == NGX_OK,
          "init other key");
    CHECK(ngx_memcmp(keys[0].kid, keys[1].kid, NGX_HTTP_MCP_SESSKEY_KID_LEN)
          != 0, "two keys, two key ids");
    CHECK(ngx_memcmp(keys[0].key, secret[0], NGX_HTTP_MCP_SESSKEY_LEN) != 0,
          "the AES key is derived, not the file's digest itself");

    test_round_trip();
    test_hidden();
    test_limits();
    test_rotation();
    test_tamper();
    test_spelling();
    test_expiry();

    ngx_shim_pool_destroy(pool);

    return ngx_unit_done("test_sesskey");
}


static ngx_int_t
ngx_unit_open(ngx_http_mcp_sesskey_t *k, ngx_uint_t n, const u_char *id,
    size_t len, time_t now, time_t lifetime,
    ngx_http_mcp_sesskey_session_t *s)
{
    u_char     *copy;
    ngx_int_t   rc;
    ngx_str_t   t;

    copy = malloc(len ? len : 1);
    if (copy == NULL) {
        return NGX_ERROR;
    }

    ngx_memcpy(copy, id, len);
    t.data = copy;
    t.len = len;

    rc = ngx_http_mcp_sesskey_open(pool, k, n, &unit_scope, &t, now, lifetime,
                                   s);

    free(copy);

    return rc;
}


static ngx_str_t
ngx_unit_seal(ngx_http_mcp_sesskey_t *key, const char *name, const char *sid,
    u_char *binding, time_t issued)
{
    ngx_str_t                        id;
    ngx_http_mcp_sesskey_session_t   s;

    ngx_memzero(&s, sizeof(s));
    s.name.data = (u_char *) name;
    s.name.len = strlen(name);
    s.sid.data = (u_char *) sid;
    s.sid.len = strlen(sid);
    s.binding = binding;
    s.version = 3;
    s.issued = issued;

    if (ngx_http_mcp_sesskey_seal(pool, key, &unit_scope, &s, &id) != NGX_OK) {
        id.data = NULL;
        id.len = 0;
    }

    return id;
}


static void
test_round_trip(void)
{
    u_char                           bind[NGX_HTTP_MCP_SESSKEY_BIND_LEN];
    size_t                           i;
    ngx_str_t                        id, id2;
    ngx_http_mcp_sesskey_session_t   s;

    for (i = 0; i < sizeof(bind); i++) {
        bind[i] = (u_char) (0xa0 + i);
    }

    id = ngx_unit_seal(&keys[0], "127.0.0.1:8081",
                       "3f2c9a1e-5b7d-4e8f-9a0b-1c2d3e4f5a6b", NULL,
                       NGX_UNIT_NOW);
    CHECK(id.data != NULL, "sealed");

    for (i = 0; i < id.len; i++) {
        if (!((id.data[i] >= 'A' && id.data[i] <= 'Z')
              || (id.data[i] >= 'a' && id.data[i] <= 'z')
              || (id.data[i] >= '0' && id.data[i] <= '9')
              || id.data[i] == '-' || id.data[i] == '_'))
        {
            break;
        }
    }

    CHECK(i == id.len, "the id is base64url text, visible ASCII");
    CHECK(id.len < 160, "the id of a typical session is under 160 chars");

    ngx_memzero(&s, sizeof(s));
    CHECK_INT(ngx_unit_open(keys, 2, id.data, id.len, NGX_UNIT_NOW, 0, &s),
              NGX_OK, "opened");
    CHECK_MEM(s.name.data, s.name.len, "127.0.0.1:8081", "replica name");
    CHECK_MEM(s.sid.data, s.sid.len, "3f2c9a1e-5b7d-4e8f-9a0b-1c2d3e4f5a6b",
              "replica session id");
    CHECK(s.binding == NULL, "no binding");
    CHECK_INT(s.version, 3, "version");
    CHECK_INT(s.issued, NGX_UNIT_NOW, "issue time");

    id2 = ngx_unit_seal(&keys[0], "127.0.0.1:8081",
                        "3f2c9a1e-5b7d-4e8f-9a0b-1c2d3e4f5a6b", NULL,
                        NGX_UNIT_NOW);
    CHECK(id2.len == id.len && ngx_memcmp(id.data, id2.data, id.len) != 0,
          "the same session sealed twice: two ids (fresh nonces)");

    /* a stateless replica gives no id; with a binding */
    id = ngx_unit_seal(&keys[0], "unix:/run/mcp.sock", "", bind,
                       NGX_UNIT_NOW);
    CHECK_INT(ngx_unit_open(keys, 2, id.data, id.len, NGX_UNIT_NOW, 0, &s),
              NGX_OK, "no replica id, bound: opened");
    CHECK_INT(s.sid.len, 0, "empty replica session id");
    CHECK_MEM(s.name.data, s.name.len, "unix:/run/mcp.sock", "unix name");
    CHECK(s.binding != NULL
          && ngx_memcmp(s.binding, bind, sizeof(bind)) == 0, "binding");
}


static ngx_uint_t
ngx_unit_contains(ngx_str_t *hay, const char *needle)
{
    size_t  i, n;

    n = strlen(needle);

    for (i = 0; i + n <= hay->len; i++) {
        if (ngx_memcmp(hay->data + i, needle, n) == 0) {
            return 1;
        }
    }

    return 0;
}


static void
test_hidden(void)
{
    size_t                           i, bad;
    ngx_str_t                        id, raw, text;
    ngx_http_mcp_sesskey_session_t   s;

    static const char  name[] = "127.0.0.1:8081";
    static const char  sid[] = "3f2c9a1e-5b7d-4e8f-9a0b-1c2d3e4f5a6b";

    id = ngx_unit_seal(&keys[0], name, sid, NULL, NGX_UNIT_NOW);
    raw.data = ngx_pnalloc(pool, id.len);
    text.data = ngx_pnalloc(pool, id.len + 4);
    CHECK(id.data != NULL && raw.data != NULL && text.data != NULL
          && ngx_decode_base64url(&raw, &id) == NGX_OK
          && raw.len > NGX_UNIT_HEAD + NGX_UNIT_TAG, "sealed and decoded");

    if (raw.len <= NGX_UNIT_HEAD + NGX_UNIT_TAG) {
        return;
    }

    /* encrypted: neither the name, its port, nor the session id or a
     * piece of it, in clear in the id's bytes or in its text */
    CHECK(!ngx_unit_contains(&raw, name), "the replica's name is hidden");
    CHECK(!ngx_unit_contains(&raw, "8081"), "... its port too");
    CHECK(!ngx_unit_contains(&raw, sid), "the replica's session id is hidden");
    CHECK(!ngx_unit_contains(&raw, "3f2c9a1e"), "... any piece of it");
    CHECK(!ngx_unit_contains(&raw, "4e8f"), "... any piece of it (2)");
    CHECK(!ngx_unit_contains(&id, "8081"), "the id's text shows no port");

    /* every byte of the ciphertext and of the tag inverted: refused */
    bad = 0;

    for (i = NGX_UNIT_HEAD; i < raw.len; i++) {
        raw.data[i] ^= 0xff;
        ngx_encode_base64url(&text, &raw);

        if (ngx_unit_open(keys, 2, text.data, text.len, NGX_UNIT_NOW, 0, &s)
            != NGX_DECLINED)
        {
            bad++;
        }

        raw.data[i] ^= 0xff;
    }

    CHECK_INT(bad, 0, "every byte of the ciphertext and tag flipped: refused");

    ngx_encode_base64url(&text, &raw);
    CHECK_INT(ngx_unit_open(keys, 2, text.data, text.len, NGX_UNIT_NOW, 0,
                            &s),
              NGX_OK, "... and the bytes put back open again");
}


static void
test_limits(void)
{
    char                             name[300], sid[1100];
    ngx_str_t                        id;
    ngx_http_mcp_sesskey_session_t   s;

    ngx_memset(name, 'n', sizeof(name));
    ngx_memset(sid, 's', sizeof(sid));

    name[NGX_HTTP_MCP_SESSKEY_MAX_NAME] = '\0';
    sid[NGX_HTTP_MCP_SESSKEY_MAX_SID] = '\0';

    id = ngx_unit_seal(&keys[0], name, sid, keys[1].key, NGX_UNIT_NOW);
    CHECK(id.data != NULL, "the longest name and id: sealed");
    CHECK(id.len <= NGX_HTTP_MCP_SESSKEY_MAX_ID, "... and within open()'s");
    CHECK_INT(ngx_unit_open(keys, 2, id.data, id.len, NGX_UNIT_NOW, 0, &s),
              NGX_OK, "... and opened");
    CHECK_INT(s.sid.len, NGX_HTTP_MCP_SESSKEY_MAX_SID, "... whole");

    name[NGX_HTTP_MCP_SESSKEY_MAX_NAME] = 'n';
    name[NGX_HTTP_MCP_SESSKEY_MAX_NAME + 1] = '\0';
    id = ngx_unit_seal(&keys[0], name, "x", NULL, NGX_UNIT_NOW);
    CHECK(id.data == NULL, "a name one byte too long: declined");

    sid[NGX_HTTP_MCP_SESSKEY_MAX_SID] = 's';
    sid[NGX_HTTP_MCP_SESSKEY_MAX_SID + 1] = '\0';
    id = ngx_unit_seal(&keys[0], "a:1", sid, NULL, NGX_UNIT_NOW);
    CHECK(id.data == NULL, "a replica id one byte too long: declined");

    id = ngx_unit_seal(&keys[0], "a:1", "x", NULL, -1);
    CHECK(id.data == NULL, "a negative issue time: declined");
}


static void
test_rotation(void)
{
    ngx_str_t                        id;
    ngx_http_mcp_sesskey_session_t   s;

    /* sealed with the old key; opened by a node with [new, old] */
    id = ngx_unit_seal(&keys[1], "10.0.0.2:80", "abc", NULL, NGX_UNIT_NOW);
    CHECK_INT(ngx_unit_open(keys, 2, id.data, id.len, NGX_UNIT_NOW, 0, &s),
              NGX_OK, "old key's id opens with [new, old]");
    CHECK_INT(ngx_unit_open(keys, 1, id.data, id.len, NGX_UNIT_NOW, 0, &s),
              NGX_DECLINED, "... not with [new] alone");
    CHECK_INT(ngx_unit_open(&other, 1, id.data, id.len, NGX_UNIT_NOW, 0, &s),
              NGX_DECLINED, "... nor with an unrelated key");

    /* sealed for one location: another with the same keys refuses it */
    unit_scope.len = sizeof("localhost /mcp") - 2;
    CHECK_INT(ngx_unit_open(keys, 2, id.data, id.len, NGX_UNIT_NOW, 0, &s),
              NGX_DECLINED, "... nor at another scope (\"localhost /mc\")");
    unit_scope.len = 0;
    CHECK_INT(ngx_unit_open(keys, 2, id.data, id.len, NGX_UNIT_NOW, 0, &s),
              NGX_DECLINED, "... nor with no scope");
    unit_scope.len = sizeof("localhost /mcp") - 1;

    /* the key id names the key: the same key id, another key is forged */
    other.kid[0] = keys[1].kid[0];
    other.kid[1] = keys[1].kid[1];
    other.kid[2] = keys[1].kid[2];
    other.kid[3] = keys[1].kid[3];
    CHECK_INT(ngx_unit_open(&other, 1, id.data, id.len, NGX_UNIT_NOW, 0, &s),
              NGX_DECLINED, "a key with a colliding key id: tag refuses");
}


static void
test_tamper(void)
{
    u_char                          *copy;
    size_t                           i, bad;
    ngx_str_t                        id, raw, text;
    ngx_uint_t                       bit;
    ngx_http_mcp_sesskey_session_t   s;

    id = ngx_unit_seal(&keys[0], "127.0.0.1:8081", "sid-1", NULL,
                       NGX_UNIT_NOW);

    /* every bit of the decoded id flipped, encoded again */
    raw.data = ngx_pnalloc(pool, id.len);
    text.data = ngx_pnalloc(pool, id.len + 4);
    (void) ngx_decode_base64url(&raw, &id);

    bad = 0;

    for (i = 0; i < raw.len; i++) {
        for (bit = 0; bit < 8; bit++) {
            raw.data[i] ^= (u_char) (1 << bit);
            ngx_encode_base64url(&text, &raw);

            if (ngx_unit_open(keys, 2, text.data, text.len, NGX_UNIT_NOW, 0,
                              &s)
                != NGX_DECLINED)
            {
                bad++;
            }

            raw.data[i] ^= (u_char) (1 << bit);
        }
    }

    CHECK_INT(bad, 0, "every one-bit change of the sealed bytes refused");

    /* truncated at every length, and one character more */
    bad = 0;

    for (i = 0; i < id.len; i++) {
        if (ngx_unit_open(keys, 2, id.data, i, NGX_UNIT_NOW, 0, &s)
            != NGX_DECLINED)
        {
            bad++;
        }
    }

    CHECK_INT(bad, 0, "every truncation refused");

    copy = ngx_pnalloc(pool, id.len + 1);
    ngx_memcpy(copy, id.data, id.len);
    copy[id.len] = 'A';
    CHECK_INT(ngx_unit_open(keys, 2, copy, id.len + 1, NGX_UNIT_NOW, 0, &s),
              NGX_DECLINED, "one character appended: refused");

    CHECK_INT(ngx_unit_open(keys, 2, (u_char *) "", 0, NGX_UNIT_NOW, 0, &s),
              NGX_DECLINED, "empty id refused");

    copy = ngx_pnalloc(pool, NGX_HTTP_MCP_SESSKEY_MAX_ID + 4);
    ngx_memset(copy, 'A', NGX_HTTP_MCP_SESSKEY_MAX_ID + 4);
    CHECK_INT(ngx_unit_open(keys, 2, copy, NGX_HTTP_MCP_SESSKEY_MAX_ID + 4,
                            NGX_UNIT_NOW, 0, &s),
              NGX_DECLINED, "an overlong id refused");

    CHECK_INT(ngx_unit_open(keys, 2,
                            (u_char *) "0123456789abcdef0123456789abcdef"
                                       "0123456789abcdef0123456789abcdef",
                            64, NGX_UNIT_NOW, 0, &s),
              NGX_DECLINED, "a zone-style hex id refused");
}


static void
test_spelling(void)
{
    u_char                          *copy, *v;
    ngx_str_t                        id;
    ngx_http_mcp_sesskey_session_t   s;

    static u_char  basis[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
                             "abcdefghijklmnopqrstuvwxyz0123456789-_";

    /* find an id whose last character carries spare bits */
    do {
        id = ngx_unit_seal(&keys[0], "127.0.0.1:8081", "sid-2", NULL,
                           NGX_UNIT_NOW);
    } while (id.len % 4 == 0);

    copy = ngx_pnalloc(pool, id.len + 2);
    ngx_memcpy(copy, id.data, id.len);

    copy[id.len] = '=';
    CHECK_INT(ngx_unit_open(keys, 2, copy, id.len + 1, NGX_UNIT_NOW, 0, &s),
              NGX_DECLINED, "padding refused");

    copy[id.len] = '=';
    copy[id.len + 1] = 'x';
    CHECK_INT(ngx_unit_open(keys, 2, copy, id.len + 2, NGX_UNIT_NOW, 0, &s),
              NGX_DECLINED, "text after '=' refused");

    /* the last character with a spare bit set: the same bytes decoded */
    v = (u_char *) ngx_strchr(basis, copy[id.len - 1]);
    copy[id.len - 1] = basis[(v - basis) ^ 1];
    CHECK_INT(ngx_unit_open(keys, 2, copy, id.len, NGX_UNIT_NOW, 0, &s),
              NGX_DECLINED, "another spelling of the last character refused");

    copy[id.len - 1] = id.data[id.len - 1];
    copy[3] = '+';
    CHECK_INT(ngx_unit_open(keys, 2, copy, id.len, NGX_UNIT_NOW, 0, &s),
              NGX_DECLINED, "a character outside base64url refused");
}


static void
test_expiry(void)
{
    ngx_str_t                        id;
    ngx_http_mcp_sesskey_session_t   s;

    id = ngx_unit_seal(&keys[0], "127.0.0.1:8081", "sid-3", NULL,
                       NGX_UNIT_NOW - 100);

    CHECK_INT(ngx_unit_open(keys, 2, id.data, id.len, NGX_UNIT_NOW, 100, &s),
              NGX_OK, "issued exactly a lifetime ago: still valid");
    CHECK_INT(ngx_unit_open(keys, 2, id.data, id.len, NGX_UNIT_NOW + 1, 100,
                            &s),
              NGX_ABORT, "a second later: expired");
    CHECK_INT(ngx_unit_open(keys, 2, id.data, id.len, NGX_UNIT_NOW + 1000000,
                            0, &s),
              NGX_OK, "lifetime 0: no limit");
    CHECK_INT(ngx_unit_open(&other, 1, id.data, id.len, NGX_UNIT_NOW + 1, 100,
                            &s),
              NGX_DECLINED, "expired under an unknown key: declined, not "
                            "expired");
}
