
/*
 * Unit tests of src/parse/ngx_http_mcp_jcs.c, RFC 8785: the RFC's own
 * examples (its sorting example, its example object, the numbers of its
 * appendix B) and the digest of a text, as JavaScript's
 * JSON.stringify() of the sorted value and sha256sum give it.
 */


#include <ngx_config.h>
#include <ngx_core.h>

#include "ngx_http_mcp_jcs.h"
#include "ngx_shim.h"
#include "unit.h"


static ngx_pool_t  *pool;


static void
ngx_unit_jcs(const char *in, const char *want, const char *name)
{
    cJSON   *json;
    u_char  *out;
    size_t   len;

    json = cJSON_Parse(in);

    if (!CHECK(json != NULL, name)) {
        return;
    }

    out = ngx_http_mcp_jcs(pool, json, &len);

    if (CHECK(out != NULL, name)) {
        CHECK_MEM(out, len, want, name);
    }

    cJSON_Delete(json);
}


static void
test_rfc_examples(void)
{
    /* RFC 8785 3.2.2: the example object */
    ngx_unit_jcs("{\"numbers\": [333333333.33333329, 1E30, 4.50, 2e-3, "
                 "0.000000000000000000000000001], \"string\": "
                 "\"\\u20ac$\\u000F\\u000aA'\\u0042\\u0022\\u005c\\\\"
                 "\\\"\\/\", \"literals\": [null, true, false]}",
                 "{\"literals\":[null,true,false],\"numbers\":"
                 "[333333333.3333333,1e+30,4.5,0.002,1e-27],\"string\":"
                 "\"\xe2\x82\xac$\\u000f\\nA'B\\\"\\\\\\\\\\\"/\"}",
                 "RFC 8785 3.2.2: the example object");

    /* RFC 8785 3.2.3: names sorted by UTF-16 code units */
    ngx_unit_jcs("{\"\\u20ac\": \"Euro Sign\", \"\\r\": \"Carriage Return\", "
                 "\"\\ufb33\": \"Hebrew Letter Dalet With Dagesh\", "
                 "\"1\": \"One\", \"\\ud83d\\ude00\": \"Emoji: Grinning "
                 "Face\", \"\\u0080\": \"Control\", \"\\u00f6\": "
                 "\"Latin Small Letter O With Diaeresis\"}",
                 "{\"\\r\":\"Carriage Return\",\"1\":\"One\","
                 "\"\xc2\x80\":\"Control\","
                 "\"\xc3\xb6\":\"Latin Small Letter O With Diaeresis\","
                 "\"\xe2\x82\xac\":\"Euro Sign\","
                 "\"\xf0\x9f\x98\x80\":\"Emoji: Grinning Face\","
                 "\"\xef\xac\xb3\":\"Hebrew Letter Dalet With Dagesh\"}",
                 "RFC 8785 3.2.3: a pair's code units before U+FB33's");

    ngx_unit_jcs("{\"b\": {\"z\": 1, \"a\": [ {\"y\": 2, \"x\": 1} ]}, "
                 "\"a\": \"\\u001f\\b\\t\"}",
                 "{\"a\":\"\\u001f\\b\\t\",\"b\":{\"a\":[{\"x\":1,\"y\":2}],"
                 "\"z\":1}}",
                 "nested objects sorted, arrays kept in order");
}


static void
test_numbers(void)
{
    size_t   i;
    char     in[64], want[64];

    /* RFC 8785 appendix B, by the double's value */
    static const char  *cases[][2] = {
        { "0", "0" },
        { "-0", "0" },
        { "5e-324", "5e-324" },
        { "-5e-324", "-5e-324" },
        { "1.7976931348623157e308", "1.7976931348623157e+308" },
        { "-1.7976931348623157e308", "-1.7976931348623157e+308" },
        { "9007199254740992", "9007199254740992" },
        { "-9007199254740992", "-9007199254740992" },
        { "295147905179352830000", "295147905179352830000" },
        { "9.999999999999997e22", "9.999999999999997e+22" },
        { "1e23", "1e+23" },
        { "1e21", "1e+21" },
        { "1e20", "100000000000000000000" },
        { "999999999999999700000", "999999999999999700000" },
        { "0.000001", "0.000001" },
        { "0.0000001", "1e-7" },
        { "1.5e-7", "1.5e-7" },
        { "4.5", "4.5" },
        { "0.1", "0.1" },
        { "123.456", "123.456" },
        { "-1.25", "-1.25" },
        { "3", "3" }
    };

    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        snprintf(in, sizeof(in), "[%s]", cases[i][0]);
        snprintf(want, sizeof(want), "[%s]", cases[i][1]);
        ngx_unit_jcs(in, want, cases[i][0]);
    }
}


static void
test_digest(void)
{
    cJSON   *json;
    u_char   digest[NGX_HTTP_MCP_JCS_DIGEST_SIZE];
    u_char   hex[NGX_HTTP_MCP_JCS_DIGEST_LEN + 1];

    /* printf '{"a":1,"b":[true,null]}' | sha256sum */
    json = cJSON_Parse("{ \"b\": [true, null], \"a\": 1.0 }");

    if (CHECK(json != NULL, "digest: parsed")
        && CHECK_INT(ngx_http_mcp_jcs_digest(pool, json, digest), NGX_OK,
                     "digest: made"))
    {
        *ngx_hex_dump(hex, digest, NGX_HTTP_MCP_JCS_DIGEST_SIZE) = '\0';
        CHECK_STR(hex, "1cc69c7fa23616ca2ec3ee70d24390a6"
                  "225c8832db8a4c814c7e0e7f942f8668",
                  "digest: the canonical text's");
    }

    cJSON_Delete(json);
}


NGX_UNIT_MAIN("test_jcs", test_rfc_examples, test_numbers, test_digest)
