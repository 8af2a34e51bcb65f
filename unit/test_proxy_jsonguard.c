
/*
 * Unit tests of src/parse/ngx_http_mcp_jsonguard.c: a JSON reply read in
 * pieces, whole, cut in two at every byte, and one byte at a time, must
 * be read the same: a reply whose messages carry the POST's ids goes out
 * unchanged (what was sent, then the held tail), any other is refused,
 * and before a refusal never all of it went out (but for a reply that
 * ended before its JSON did, which no client reads as JSON).  Numbers
 * and literals are read as the strict scan (ngx_http_mcp_json.c) reads
 * them: the two take and refuse the same ones.
 */


#include <ngx_config.h>
#include <ngx_core.h>

#include "ngx_http_mcp_jsonguard.h"
#include "ngx_http_mcp_json.h"
#include "ngx_http_mcp_jsonrpc.h"
#include "ngx_shim.h"
#include "unit.h"


#define MAX_BODY  4096


static ngx_array_t  msgs;


/* numbers and literals, JSON or not (1: JSON) */
static struct {
    const char  *text;
    ngx_uint_t   json;
} tokens[] = {
    { "0", 1 }, { "-0", 1 }, { "7", 1 }, { "-12", 1 }, { "0.5", 1 },
    { "-0.5e-3", 1 }, { "1E+2", 1 }, { "1e2", 1 }, { "10.25E09", 1 },
    { "true", 1 }, { "false", 1 }, { "null", 1 },
    { "01", 0 }, { "-01", 0 }, { "00", 0 }, { "-", 0 }, { "+1", 0 },
    { ".5", 0 }, { "1.", 0 }, { "1.e2", 0 }, { "1e", 0 }, { "1e+", 0 },
    { "1e-a", 0 }, { "--1", 0 }, { "0x1", 0 }, { "1.5.3", 0 },
    { "1 2", 0 }, { "truex", 0 }, { "tru", 0 }, { "nul", 0 },
    { "nulll", 0 }, { "True", 0 }, { "NaN", 0 }, { "-Infinity", 0 }
};


/* n bytes c at p: where they end */

static char *
fill(char *p, int c, ngx_uint_t n)
{
    ngx_memset(p, c, n);

    return p + n;
}


/* the reply fed in pieces of the sizes in cuts (0-ended; the rest last) */

static ngx_int_t
feed(const char *body, size_t len, const size_t *cuts, u_char *out,
    size_t *out_len, const char **error)
{
    size_t                     at, n, send;
    ngx_int_t                  rc;
    ngx_pool_t                *pool;
    ngx_http_mcp_jsonguard_t   g;

    *out_len = 0;
    *error = "out of memory";

    pool = ngx_shim_pool_create();
    if (pool == NULL) {
        return NGX_ERROR;
    }

    rc = ngx_http_mcp_jsonguard_init(&g, pool, &msgs);
    if (rc != NGX_OK) {
        goto done;
    }

    *error = NULL;

    for (at = 0; at < len; at += n) {
        n = (*cuts != 0) ? ngx_min(*cuts++, len - at) : len - at;

        rc = ngx_http_mcp_jsonguard_read(&g, (u_char *) body + at,
                                         (u_char *) body + at + n, &send,
                                         error);
        if (rc != NGX_OK) {
            goto done;
        }

        ngx_memcpy(out + *out_len, body + at, send);
        *out_len += send;
    }

    rc = ngx_http_mcp_jsonguard_end(&g, error);

    if (rc == NGX_OK) {
        ngx_memcpy(out + *out_len, g.tail, g.tail_len);
        *out_len += g.tail_len;
    }

done:

    ngx_shim_pool_destroy(pool);

    return rc;
}


/*
 * want NGX_OK: every way of feeding gives the body back whole; else
 * every way is refused with the error, and what went out is never all.
 */

static void check(const char *name, const char *body, ngx_int_t want,
    const char *why);


/*
 * Each token in a reply, as the guard reads it (whole, cut anywhere, a
 * byte at a time) and as the scan does: both as the table says.
 */

static void
check_tokens(void)
{
    char         body[128];
    ngx_int_t    rc;
    ngx_uint_t   i;
    ngx_pool_t  *pool;
    const char  *error;

    pool = ngx_shim_pool_create();

    for (i = 0; i < sizeof(tokens) / sizeof(tokens[0]); i++) {
        snprintf(body, sizeof(body), "{\"id\":7,\"result\":[%s]}",
                 tokens[i].text);

        rc = ngx_http_mcp_json_strict(pool, (u_char *) body, strlen(body),
                                      &error);
        CHECK(rc == (tokens[i].json ? NGX_OK : NGX_DECLINED),
              tokens[i].text);

        check(tokens[i].text, body, tokens[i].json ? NGX_OK : NGX_DECLINED,
              "strict");
    }

    ngx_shim_pool_destroy(pool);
}


static void
check(const char *name, const char *body, ngx_int_t want, const char *why)
{
    size_t       len, k, out_len, cuts[MAX_BODY + 1];
    u_char       out[MAX_BODY];
    ngx_int_t    rc;
    ngx_uint_t   bad;
    const char  *error;
    char         what[256];

    len = strlen(body);
    bad = 0;

    /* whole (k = 0), cut in two at k, then one byte at a time (k = len) */
    for (k = 0; k <= len && !bad; k++) {

        if (k == len) {
            for (out_len = 0; out_len < len; out_len++) {
                cuts[out_len] = 1;
            }

            cuts[len] = 0;

        } else {
            cuts[0] = k;
            cuts[1] = 0;
        }

        rc = feed(body, len, cuts, out, &out_len, &error);

        if (want == NGX_OK) {
            bad = (rc != NGX_OK || out_len != len
                   || ngx_memcmp(out, body, len) != 0);

        } else {
            /* a reply cut short went out: it is no whole JSON text */
            bad = (rc != NGX_DECLINED
                   || (out_len >= len && strstr(why, "ended") == NULL)
                   || error == NULL || strstr(error, why) == NULL);
        }

        if (bad) {
            snprintf(what, sizeof(what), "%s: split at %zu: rc %d, %zu of "
                     "%zu out, %s", name, k, (int) rc, out_len, len,
                     error ? error : "-");
            CHECK(0, what);
        }
    }

    if (!bad) {
        CHECK(1, name);
    }
}


int
main(void)
{
    char                 deep[1024], *p;
    ngx_uint_t           i;
    ngx_http_mcp_msg_t  *m;

    char                 longid[301], escaped[2048];

    static ngx_http_mcp_msg_t  elts[5];

    msgs.elts = elts;
    msgs.nelts = 4;
    msgs.size = sizeof(ngx_http_mcp_msg_t);
    msgs.nalloc = 5;

    m = elts;
    m[0].type = NGX_HTTP_MCP_MSG_REQUEST;
    m[0].id = cJSON_CreateString("c9");
    m[1].type = NGX_HTTP_MCP_MSG_REQUEST;
    m[1].id = cJSON_CreateRaw("7");
    m[2].type = NGX_HTTP_MCP_MSG_REQUEST;
    m[2].id = cJSON_CreateString("\xc3\xa9\xf0\x9f\x98\x80");
    m[3].type = NGX_HTTP_MCP_MSG_NOTIFICATION;
    m[3].id = NULL;

    /* what goes through, unchanged */

    check("an object", "{\"jsonrpc\":\"2.0\",\"id\":\"c9\",\"result\":{}}",
          NGX_OK, NULL);
    check("an integer id", "{\"id\":7,\"result\":{\"content\":[1,-2.5e+3,0]}}",
          NGX_OK, NULL);
    check("a batch", "[{\"id\":7,\"result\":{}} , {\"id\":\"c9\",\"error\""
          ":{\"code\":-1}},{\"id\":null,\"error\":{}},{\"error\":{}}]",
          NGX_OK, NULL);
    check("an empty batch", "[ ]", NGX_OK, NULL);
    check("an escaped name and id", "{\"\\u0069\\u0064\":\"\\u0063\\u0039\","
          "\"result\":{}}", NGX_OK, NULL);
    check("an id in UTF-8, escaped", "{\"id\":\"\\u00e9\\ud83d\\ude00\","
          "\"result\":{}}", NGX_OK, NULL);
    check("an id in UTF-8", "{\"id\":\"\xc3\xa9\xf0\x9f\x98\x80\",\"result\""
          ":{\"t\":\"\xe2\x82\xac\"}}", NGX_OK, NULL);
    check("strings of braces and quotes", "{\"id\":\"c9\",\"result\":{\"t\":"
          "\"}]}{\\\"id\\\":9}[\\\\\",\"u\":\"\\\\\\\\\",\"id\":[9],"
          "\"x\":{\"id\":9,\"id\":8}}}", NGX_OK, NULL);
    check("a BOM and whitespace", "\xef\xbb\xbf \t\r\n{\"id\":7,\"result\""
          ":true} \n", NGX_OK, NULL);
    check("literals", "{\"id\":7,\"result\":[true,false,null,\"\"]}",
          NGX_OK, NULL);
    check("an id then a literal", "{\"id\":null,\"r\":true}", NGX_OK, NULL);

    check_tokens();

    p = deep;
    p += sprintf(p, "{\"id\":7,\"result\":");
    p = fill(fill(p, '[', 127), ']', 127);
    sprintf(p, "}");
    check("128 deep", deep, NGX_OK, NULL);

    /* what is refused */

    check("another id", "{\"id\":9,\"result\":{\"tools\":[]}}",
          NGX_DECLINED, "another request");
    check("another id in a batch", "[{\"id\":7,\"result\":{}},{\"id\":9,"
          "\"result\":{}}]", NGX_DECLINED, "another request");
    check("another id, escaped name", "{\"\\u0069d\":9}",
          NGX_DECLINED, "another request");
    check("another id last", "{\"result\":{\"tools\":[]},\"id\":9}",
          NGX_DECLINED, "another request");
    check("a string for an integer", "{\"id\":\"7\"}",
          NGX_DECLINED, "another request");
    check("another integer text", "{\"id\":7.0}",
          NGX_DECLINED, "another request");
    check("a notification's id", "{\"id\":true}",
          NGX_DECLINED, "another request");
    check("a lone surrogate", "{\"id\":\"\\ud83d\"}",
          NGX_DECLINED, "another request");
    check("an id twice", "{\"id\":7,\"id\":7}", NGX_DECLINED, "twice");
    check("an id twice, escaped", "{\"id\":7,\"i\\u0064\":9}",
          NGX_DECLINED, "twice");
    check("an object id", "{\"id\":{}}", NGX_DECLINED, "no string");
    check("a string", "\"hello\"", NGX_DECLINED, "no JSON-RPC message");
    check("a number", "42", NGX_DECLINED, "no JSON-RPC message");
    check("a number in a batch", "[{\"id\":7},1]",
          NGX_DECLINED, "no JSON-RPC message");
    check("an array in a batch", "[[{\"id\":9}]]",
          NGX_DECLINED, "no JSON-RPC message");
    check("two BOMs", "\xef\xbb\xbf\xef\xbb\xbf{}",
          NGX_DECLINED, "no JSON-RPC message");
    check("a BOM after a space", " \xef\xbb\xbf{}",
          NGX_DECLINED, "no JSON-RPC message");
    check("two texts", "{\"id\":7} {\"id\":9}", NGX_DECLINED, "after");
    check("a trailing comma", "{\"id\":7,}", NGX_DECLINED, "strict");
    check("a bad escape", "{\"id\":7,\"r\":\"\\x\"}", NGX_DECLINED, "strict");
    check("a control character", "{\"id\":7,\"r\":\"\n\"}",
          NGX_DECLINED, "strict");
    check("a leading zero", "{\"id\":7,\"r\":01}", NGX_DECLINED, "strict");
    check("single quotes", "{'id':9}", NGX_DECLINED, "strict");
    check("a comment", "{\"id\":7 /* \"id\":9 */}", NGX_DECLINED, "strict");
    check("mismatched", "{\"id\":7,\"r\":[}]}", NGX_DECLINED, "strict");
    check("cut short", "{\"id\":7,\"r\":[", NGX_DECLINED, "ended before");
    check("cut in a string", "{\"id\":7,\"r\":\"a\\", NGX_DECLINED,
          "ended before");

    deep[0] = '\0';
    p = deep;
    p += sprintf(p, "{\"id\":7,\"result\":");
    p = fill(fill(p, '[', 128), ']', 128);
    sprintf(p, "}");
    check("129 deep", deep, NGX_DECLINED, "too deeply");

    p = deep;
    p += sprintf(p, "{\"id\":\"");
    p = fill(p, 'c', 300);
    sprintf(p, "\"}");
    check("a long id", deep, NGX_DECLINED, "too long");

    p = deep;
    p += sprintf(p, "{\"");
    p = fill(p, 'n', 300);
    sprintf(p, "\":1,\"id\":9}");
    check("a long name, then another id", deep, NGX_DECLINED,
          "another request");

    /* a POST with an id longer than a token: its reply's id has room */

    ngx_memset(longid, 'L', 300);
    longid[300] = '\0';

    m[4].type = NGX_HTTP_MCP_MSG_REQUEST;
    m[4].id = cJSON_CreateString(longid);
    msgs.nelts = 5;

    p = escaped;
    p += sprintf(p, "{\"id\":\"%s\",\"result\":{}}", longid);
    check("a POST's id of 300 bytes", escaped, NGX_OK, NULL);

    p = escaped;
    p += sprintf(p, "{\"id\":\"");
    for (i = 0; i < 300; i++) {
        p += sprintf(p, "\\u004c");
    }
    sprintf(p, "\",\"result\":{}}");
    check("a POST's id of 300 bytes, each escaped", escaped, NGX_OK, NULL);

    p = escaped;
    p += sprintf(p, "{\"id\":\"%sL\",\"result\":{}}", longid);
    check("an id a byte longer than the POST's", escaped, NGX_DECLINED,
          "another request");

    for (i = 0; i < 5; i++) {
        cJSON_Delete(m[i].id);
    }

    return ngx_unit_done("test_proxy_jsonguard");
}
