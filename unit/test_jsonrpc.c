
/*
 * Unit tests of the pure JSON-RPC files: the strict scan
 * (ngx_http_mcp_json.c) and message parsing and building
 * (ngx_http_mcp_jsonrpc.c).
 */


#include <ngx_config.h>
#include <ngx_core.h>

#include "ngx_http_mcp_internal.h"
#include "ngx_shim.h"
#include "unit.h"


/* parses text; returns the parse's result, *msgs filled */
static ngx_int_t
parse(ngx_pool_t *pool, const char *text, ngx_array_t *msgs, cJSON **root,
    ngx_uint_t *batch, const char **error)
{
    ngx_array_init(msgs, pool, 2, sizeof(ngx_http_mcp_msg_t));

    return ngx_http_mcp_jsonrpc_parse(pool, (u_char *) text, strlen(text),
                                      root, msgs, batch, error);
}


static ngx_int_t
strict(ngx_pool_t *pool, const char *text, const char **error)
{
    return ngx_http_mcp_json_strict(pool, (u_char *) text, strlen(text),
                                    error);
}


static void
test_strict(ngx_pool_t *pool)
{
    const char  *error;

    UNIT_CHECK(strict(pool, "{\"a\":1,\"b\":[true,false,null]}", &error)
               == NGX_OK, "strict: a plain object passes");
    UNIT_CHECK(strict(pool, "{\"a\":1,\"a\":2}", &error) == NGX_DECLINED,
               "strict: two members with one name are refused");
    UNIT_CHECK(strict(pool, "{\"name\":1,\"na\\u006de\":2}", &error)
               == NGX_DECLINED,
               "strict: names equal after unescaping are refused");
    UNIT_CHECK(strict(pool, "{\"o\":{\"x\":1,\"x\":1}}", &error)
               == NGX_DECLINED, "strict: duplicates at depth are refused");
    UNIT_CHECK(strict(pool,
                      "{\"a\":1,\"b\":2,\"c\":3,\"d\":4,\"e\":5,\"f\":6,"
                      "\"g\":7,\"h\":8,\"i\":9,\"j\":10,\"e\":11}", &error)
               == NGX_DECLINED,
               "strict: a duplicate in a large object (hash table)");
    UNIT_CHECK(strict(pool,
                      "{\"a\":1,\"b\":2,\"c\":3,\"d\":4,\"e\":5,\"f\":6,"
                      "\"g\":7,\"h\":8,\"i\":9,\"j\":10,\"k\":11}", &error)
               == NGX_OK, "strict: a large object without duplicates");
    UNIT_CHECK(strict(pool, "[{\"a\":1},{\"a\":1}]", &error) == NGX_OK,
               "strict: one name in two objects is fine");
    UNIT_CHECK(strict(pool, "\"\\u0000\"", &error) == NGX_DECLINED,
               "strict: \\u0000 is refused");
    UNIT_CHECK(strict(pool, "\"\\ud800\"", &error) == NGX_DECLINED,
               "strict: a lone high surrogate is refused");
    UNIT_CHECK(strict(pool, "\"\\udc00\"", &error) == NGX_DECLINED,
               "strict: a lone low surrogate is refused");
    UNIT_CHECK(strict(pool, "\"\\ud83d\\ude00\"", &error) == NGX_OK,
               "strict: a surrogate pair passes");
    UNIT_CHECK(strict(pool, "\"\xc0\xaf\"", &error) == NGX_DECLINED,
               "strict: overlong UTF-8 is refused");
    UNIT_CHECK(strict(pool, "\"\xed\xa0\x80\"", &error) == NGX_DECLINED,
               "strict: an encoded surrogate is refused");
    UNIT_CHECK(strict(pool, "\"\xe2\x82\xac\"", &error) == NGX_OK,
               "strict: valid UTF-8 passes");
    UNIT_CHECK(strict(pool, "\"a\tb\"", &error) == NGX_DECLINED,
               "strict: a raw control byte in a string is refused");
    UNIT_CHECK(strict(pool, "\xef\xbb\xbf{}", &error) == NGX_DECLINED,
               "strict: a BOM is refused");
    UNIT_CHECK(strict(pool, "01", &error) == NGX_DECLINED,
               "strict: a leading zero is refused");
    UNIT_CHECK(strict(pool, "1e999", &error) == NGX_DECLINED,
               "strict: a number beyond a double is refused");
    UNIT_CHECK(strict(pool, "-0.5e-3", &error) == NGX_OK,
               "strict: a negative exponent number passes");
    UNIT_CHECK(strict(pool, "{\"a\":1,}", &error) == NGX_DECLINED,
               "strict: a trailing comma is refused");
    UNIT_CHECK(strict(pool, "{} {}", &error) == NGX_DECLINED,
               "strict: trailing bytes are refused");
    UNIT_CHECK(strict(pool, "", &error) == NGX_DECLINED && error != NULL,
               "strict: empty input is refused with a reason");
    UNIT_CHECK(strict(pool, "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["
                      "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["
                      "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["
                      "[[[[[[[[[[[[[[[[[[[[[[[", &error) == NGX_DECLINED,
               "strict: nesting beyond the limit is refused");
}


static void
test_parse(ngx_pool_t *pool)
{
    cJSON               *root;
    ngx_int_t            rc;
    ngx_uint_t           batch;
    ngx_array_t          msgs;
    const char          *error;
    ngx_http_mcp_msg_t  *msg;

    rc = parse(pool, "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"ping\"}",
               &msgs, &root, &batch, &error);
    msg = msgs.elts;
    UNIT_CHECK(rc == NGX_OK && msgs.nelts == 1 && !batch,
               "parse: one request");
    UNIT_CHECK(msg[0].type == NGX_HTTP_MCP_MSG_REQUEST,
               "parse: classified as a request");
    UNIT_CHECK(UNIT_STR_EQ(msg[0].method.data, msg[0].method.len, "ping"),
               "parse: its method");
    UNIT_CHECK(cJSON_IsRaw(msg[0].id)
               && strcmp(msg[0].id->valuestring, "7") == 0,
               "parse: the id is kept as raw text");
    cJSON_Delete(msg[0].id);
    cJSON_Delete(root);

    rc = parse(pool, "{\"jsonrpc\":\"2.0\",\"id\":12345678901234567890123,"
               "\"method\":\"ping\"}", &msgs, &root, &batch, &error);
    msg = msgs.elts;
    UNIT_CHECK(rc == NGX_OK && cJSON_IsRaw(msg[0].id)
               && strcmp(msg[0].id->valuestring, "12345678901234567890123")
                  == 0,
               "parse: an id beyond 2^53 is echoed digit for digit");
    cJSON_Delete(msg[0].id);
    cJSON_Delete(root);

    rc = parse(pool, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/"
               "initialized\"}", &msgs, &root, &batch, &error);
    msg = msgs.elts;
    UNIT_CHECK(rc == NGX_OK && msg[0].type == NGX_HTTP_MCP_MSG_NOTIFICATION,
               "parse: a notification");
    cJSON_Delete(root);

    rc = parse(pool, "{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{}}",
               &msgs, &root, &batch, &error);
    msg = msgs.elts;
    UNIT_CHECK(rc == NGX_OK && msg[0].type == NGX_HTTP_MCP_MSG_RESPONSE,
               "parse: a response");
    cJSON_Delete(msg[0].id);
    cJSON_Delete(root);

    rc = parse(pool, "{\"jsonrpc\":\"2.0\",\"id\":-0,\"method\":\"ping\"}",
               &msgs, &root, &batch, &error);
    msg = msgs.elts;
    UNIT_CHECK(rc == NGX_OK && msg[0].type == NGX_HTTP_MCP_MSG_INVALID,
               "parse: id -0 makes the message invalid");
    cJSON_Delete(msg[0].id);
    cJSON_Delete(root);

    rc = parse(pool, "{\"jsonrpc\":\"1.0\",\"id\":1,\"method\":\"ping\"}",
               &msgs, &root, &batch, &error);
    msg = msgs.elts;
    UNIT_CHECK(rc == NGX_OK && msg[0].type == NGX_HTTP_MCP_MSG_INVALID,
               "parse: jsonrpc other than 2.0 is invalid");
    cJSON_Delete(msg[0].id);
    cJSON_Delete(root);

    rc = parse(pool, "[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"a\"},"
               "{\"jsonrpc\":\"2.0\",\"method\":\"b\"},5]",
               &msgs, &root, &batch, &error);
    msg = msgs.elts;
    UNIT_CHECK(rc == NGX_OK && batch && msgs.nelts == 3,
               "parse: a batch of three");
    UNIT_CHECK(msgs.nelts == 3 && msg[0].type == NGX_HTTP_MCP_MSG_REQUEST
               && msg[1].type == NGX_HTTP_MCP_MSG_NOTIFICATION
               && msg[2].type == NGX_HTTP_MCP_MSG_INVALID,
               "parse: a batch's members are classified one by one");
    if (msgs.nelts == 3) {
        cJSON_Delete(msg[0].id);
        cJSON_Delete(msg[2].id);
    }
    cJSON_Delete(root);

    rc = parse(pool, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\","
               "\"method\":\"tools/call\"}", &msgs, &root, &batch, &error);
    UNIT_CHECK(rc == NGX_DECLINED && error != NULL
               && strstr(error, "Parse error") != NULL,
               "parse: a duplicate method is a parse error");

    rc = parse(pool, "{\"jsonrpc\":", &msgs, &root, &batch, &error);
    UNIT_CHECK(rc == NGX_DECLINED, "parse: truncated JSON is refused");
}


static void
test_build(ngx_pool_t *pool)
{
    u_char  *text;
    size_t   len;
    cJSON   *id, *reply;
    u_char   buf[17];

    id = cJSON_CreateRaw("42");
    reply = ngx_http_mcp_jsonrpc_result(id, cJSON_CreateObject());
    text = ngx_http_mcp_jsonrpc_print(pool, reply, &len);
    UNIT_CHECK(text != NULL
               && UNIT_STR_EQ(text, len,
                              "{\"jsonrpc\":\"2.0\",\"id\":42,\"result\":{}}"),
               "build: a result echoes the raw id");
    cJSON_Delete(reply);

    reply = ngx_http_mcp_jsonrpc_error(id, NGX_HTTP_MCP_INVALID_PARAMS,
                                       "bad", "abcd");
    text = ngx_http_mcp_jsonrpc_print(pool, reply, &len);
    UNIT_CHECK(text != NULL
               && strstr((char *) text, "\"code\":-32602") != NULL
               && strstr((char *) text, "\"message\":\"bad\"") != NULL
               && strstr((char *) text, "abcd") != NULL,
               "build: an error has code, message and correlation id");
    cJSON_Delete(reply);

    reply = ngx_http_mcp_jsonrpc_error(NULL, NGX_HTTP_MCP_PARSE_ERROR,
                                       "Parse error", "x");
    text = ngx_http_mcp_jsonrpc_print(pool, reply, &len);
    UNIT_CHECK(text != NULL && strstr((char *) text, "\"id\":null") != NULL,
               "build: an error without an id has id null");
    cJSON_Delete(reply);
    cJSON_Delete(id);

    UNIT_CHECK(ngx_http_mcp_correlation_id(buf, 16) == NGX_OK,
               "build: a correlation id is made");
    buf[16] = '\0';
    UNIT_CHECK(strspn((char *) buf, "0123456789abcdef") == 16,
               "build: the correlation id is 16 hex digits");
}


static void
test_versions(void)
{
    ngx_str_t  v;

    ngx_str_set(&v, "2025-11-25");
    UNIT_CHECK(ngx_http_mcp_version_parse(&v) == NGX_HTTP_MCP_V20251125,
               "versions: 2025-11-25 is known");
    ngx_str_set(&v, "2025-03-26");
    UNIT_CHECK(ngx_http_mcp_version_parse(&v) == NGX_HTTP_MCP_V20250326,
               "versions: 2025-03-26 is known");
    ngx_str_set(&v, "2024-11-05");
    UNIT_CHECK(ngx_http_mcp_version_parse(&v) == 0,
               "versions: 2024-11-05 is not spoken");
    UNIT_CHECK(strcmp(ngx_http_mcp_version_name(NGX_HTTP_MCP_V20250618),
                      "2025-06-18") == 0,
               "versions: names round-trip");
}


static void
test_raw_number(void)
{
    u_char     *p;
    size_t      len;
    ngx_str_t   body;

    ngx_str_set(&body, "{\"params\":{\"_meta\":{\"progressToken\": "
                "9007199254740993}}}");

    p = ngx_http_mcp_json_raw_number(&body, "progressToken",
                                     9007199254740993.0, &len);
    UNIT_CHECK(p != NULL && UNIT_STR_EQ(p, len, "9007199254740993"),
               "raw number: the token as the client wrote it");

    p = ngx_http_mcp_json_raw_number(&body, "progressToken", 5.0, &len);
    UNIT_CHECK(p == NULL, "raw number: another value is not found");
}


int
main(void)
{
    ngx_pool_t  *pool;

    pool = ngx_shim_pool_create();

    test_strict(pool);
    test_parse(pool);
    test_build(pool);
    test_versions();
    test_raw_number();

    ngx_shim_pool_destroy(pool);

    return unit_done("jsonrpc");
}
