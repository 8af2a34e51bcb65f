
/*
 * Unit tests of src/ngx_http_mcp_param.c: the values of Mcp-Param-*
 * headers (canonical Base64 only, look-alikes literal), the check of a
 * call's headers against its arguments (missing, repeated, stray,
 * different; numbers by value, booleans by name, nested properties), and
 * the rules on a tool's x-mcp-header declarations.
 */


#include <ngx_config.h>
#include <ngx_core.h>

#include "ngx_http_mcp_param.h"
#include "ngx_shim.h"
#include "unit.h"


#define SCHEMA                                                                \
    "{\"type\":\"object\",\"properties\":{"                                   \
    "\"region\":{\"type\":\"string\",\"x-mcp-header\":\"Region\"},"          \
    "\"priority\":{\"type\":\"integer\",\"x-mcp-header\":\"Priority\"},"     \
    "\"verbose\":{\"type\":\"boolean\",\"x-mcp-header\":\"Verbose\"},"       \
    "\"query\":{\"type\":\"string\"},"                                       \
    "\"where\":{\"type\":\"object\",\"properties\":{"                         \
    "\"zone\":{\"type\":\"string\",\"x-mcp-header\":\"Zone\"}}}}}"


static void ngx_unit_decoded(const char *value, const char *want,
    const char *name);
static void ngx_unit_refused(const char *value, const char *name);
static ngx_int_t ngx_unit_headers(const char *args, const char *error,
    const char *name, ...);
static ngx_uint_t  ngx_unit_declared;

static ngx_int_t ngx_unit_schema(const char *schema, const char *error,
    const char *name);
static void ngx_unit_verdict(ngx_int_t rc, u_char *msg, const char *error,
    const char *name);
static void test_decode(void);
static void test_encode(void);
static void test_check(void);
static void test_numbers(void);
static void test_schema(void);


static ngx_pool_t  *pool;
static cJSON       *schema;


int
main(void)
{
    pool = ngx_shim_pool_create();
    if (pool == NULL) {
        return 2;
    }

    schema = cJSON_Parse(SCHEMA);
    if (schema == NULL) {
        return 2;
    }

    test_decode();
    test_encode();
    test_check();
    test_numbers();
    test_schema();

    cJSON_Delete(schema);
    ngx_shim_pool_destroy(pool);

    return ngx_unit_done("test_param");
}


static void
ngx_unit_decoded(const char *value, const char *want, const char *name)
{
    ngx_str_t  in, out;

    in.data = (u_char *) value;
    in.len = strlen(value);
    ngx_str_null(&out);

    if (CHECK_INT(ngx_http_mcp_param_decode(pool, &in, &out), NGX_OK,
                  name))
    {
        CHECK_MEM(out.data, out.len, want, name);
    }
}


static void
ngx_unit_refused(const char *value, const char *name)
{
    ngx_str_t  in, out;

    in.data = (u_char *) value;
    in.len = strlen(value);

    CHECK_INT(ngx_http_mcp_param_decode(pool, &in, &out), NGX_DECLINED,
              name);
}


/*
 * The arguments (JSON text, or NULL) checked with the headers given as
 * name, value pairs up to a NULL name.  error NULL: the check must pass;
 * else it must refuse with that message.
 */

static ngx_int_t
ngx_unit_headers(const char *args, const char *error, const char *name, ...)
{
    u_char        *msg;
    cJSON         *json;
    va_list        ap;
    ngx_int_t      rc;
    const char    *key;
    ngx_array_t   *headers;
    ngx_keyval_t  *kv;

    json = NULL;

    if (args != NULL) {
        json = cJSON_Parse(args);
        if (json == NULL) {
            CHECK(0, name);
            return NGX_ERROR;
        }
    }

    headers = ngx_array_create(pool, 4, sizeof(ngx_keyval_t));
    if (headers == NULL) {
        cJSON_Delete(json);
        return NGX_ERROR;
    }

    va_start(ap, name);

    while ((key = va_arg(ap, const char *)) != NULL) {
        kv = ngx_array_push(headers);
        if (kv == NULL) {
            va_end(ap);
            cJSON_Delete(json);
            return NGX_ERROR;
        }

        kv->key.data = (u_char *) key;
        kv->key.len = strlen(key);
        kv->value.data = (u_char *) va_arg(ap, const char *);
        kv->value.len = strlen((char *) kv->value.data);
    }

    va_end(ap);

    msg = NULL;
    rc = ngx_http_mcp_param_check(pool, schema, json, headers, &msg);

    ngx_unit_verdict(rc, msg, error, name);

    cJSON_Delete(json);

    return rc;
}


static ngx_int_t
ngx_unit_schema(const char *text, const char *error, const char *name)
{
    u_char     *msg;
    cJSON      *json;
    ngx_int_t   rc;

    json = cJSON_Parse(text);
    if (json == NULL) {
        CHECK(0, name);
        return NGX_ERROR;
    }

    msg = NULL;
    ngx_unit_declared = 0;
    rc = ngx_http_mcp_param_schema(pool, json, &ngx_unit_declared, &msg);

    ngx_unit_verdict(rc, msg, error, name);

    cJSON_Delete(json);

    return rc;
}


/* error NULL: rc must be NGX_OK; else NGX_DECLINED with that message */

static void
ngx_unit_verdict(ngx_int_t rc, u_char *msg, const char *error,
    const char *name)
{
    if (error == NULL) {
        CHECK_INT(rc, NGX_OK, name);

    } else if (CHECK_INT(rc, NGX_DECLINED, name)) {
        CHECK_STR(msg, error, name);
    }
}


static void
test_decode(void)
{
    /* the conformance suite's cases */
    ngx_unit_decoded("=?base64?SGVsbG8=?=", "Hello", "decode: valid Base64");
    ngx_unit_refused("=?base64?SGVsbG8?=", "decode: padding missing");
    ngx_unit_refused("=?base64?SGVs!!!bG8=?=", "decode: bad characters");
    ngx_unit_decoded("SGVsbG8=", "SGVsbG8=", "decode: no wrapper, literal");
    ngx_unit_decoded("=?base64?SGVsbG8=", "=?base64?SGVsbG8=",
                     "decode: no ?= at the end, literal");

    /* what clients encode */
    ngx_unit_decoded("=?base64?SGVsbG8sIOS4lueVjA==?=", "Hello, \xe4\xb8\x96"
                     "\xe7\x95\x8c", "decode: non-ASCII");
    ngx_unit_decoded("=?base64?IHBhZGRlZCA=?=", " padded ",
                     "decode: white space around");
    ngx_unit_decoded("=?base64?bGluZTEKbGluZTI=?=", "line1\nline2",
                     "decode: a line feed");
    ngx_unit_decoded("=?base64?CWluZGVudGVk?=", "\tindented",
                     "decode: no padding needed");
    ngx_unit_decoded("=?base64?SGVsbA==?=", "Hell", "decode: two pads");
    ngx_unit_decoded("=?base64?+/+/?=", "\xfb\xff\xbf",
                     "decode: + and / are the alphabet's");
    ngx_unit_decoded("=?base64?" "?=", "", "decode: an empty payload");

    /* one spelling for one value */
    ngx_unit_refused("=?base64?SGVsbG9=?=", "decode: pad bits not zero (=)");
    ngx_unit_refused("=?base64?SGVsbB==?=", "decode: pad bits not zero (==)");
    ngx_unit_refused("=?base64?SGVs!!!!?=", "decode: bad characters, "
                     "length right");
    ngx_unit_refused("=?base64?SGV sbG8?=", "decode: a space inside");
    ngx_unit_refused("=?base64?-_-_?=", "decode: base64url is not Base64");
    ngx_unit_refused("=?base64?=?=", "decode: a lone pad");
    ngx_unit_refused("=?base64?====?=", "decode: pads only");
    ngx_unit_refused("=?base64?A=B=?=", "decode: a pad inside");
    ngx_unit_refused("=?base64?SGVsbG8=SGVs?=", "decode: a pad mid-way");
    ngx_unit_refused("=?base64?SGVsbG8==?=", "decode: too many pads");
    ngx_unit_refused("=?base64?" "?=?=", "decode: a ? in the payload");

    /* a literal value with a control character had to come in Base64 */
    {
        ngx_str_t    in, out;
        ngx_uint_t   k;
        const char  *bad[] = { "a\x01" "b", "a\x1f" "b", "a\x7f", "\rx" };

        for (k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
            in.data = (u_char *) bad[k];
            in.len = strlen(bad[k]);
            CHECK_INT(ngx_http_mcp_param_decode(pool, &in, &out), NGX_ABORT,
                      "decode: a literal control character: NGX_ABORT");
        }
    }

    ngx_unit_decoded("a\tb", "a\tb", "decode: HTAB is field text");
    ngx_unit_decoded("caf\xc3\xa9", "caf\xc3\xa9",
                     "decode: literal non-ASCII is kept (obs-text)");

    /* look-alikes are literal */
    ngx_unit_decoded("=?BASE64?SGVsbG8=?=", "=?BASE64?SGVsbG8=?=",
                     "decode: the marker is lower case");
    ngx_unit_decoded("=?base64?=", "=?base64?=", "decode: too short");
    ngx_unit_decoded("x=?base64?SGVsbG8=?=", "x=?base64?SGVsbG8=?=",
                     "decode: the marker must start the value");
    ngx_unit_decoded("", "", "decode: an empty value");
}


/* encode: as it is when a header can carry it, else wrapped; decodes back */

static void
test_encode(void)
{
    ngx_str_t    in, out, back;
    ngx_uint_t   k, wrapped;
    const char  *cases[] = { "get_weather", "a b", "name\r\nX-Injected: 1",
                             " lead", "trail ", "\tx", "caf\xc3\xa9",
                             "=?base64?SGVsbG8=?=", "=?", "a\x7f", "" };

    for (k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
        in.data = (u_char *) cases[k];
        in.len = strlen(cases[k]);

        CHECK_INT(ngx_http_mcp_param_encode(pool, &in, &out), NGX_OK,
                  "encode: NGX_OK");

        wrapped = (out.len >= 9 && ngx_strncmp(out.data, "=?base64?", 9) == 0);

        CHECK_INT(wrapped, (k >= 2), "encode: wrapped exactly when a "
                  "header cannot carry the value");
        CHECK_INT(ngx_strlchr(out.data, out.data + out.len, '\r') == NULL
                  && ngx_strlchr(out.data, out.data + out.len, '\n') == NULL,
                  1, "encode: no CR or LF in the header's value");
        CHECK_INT(ngx_http_mcp_param_decode(pool, &out, &back), NGX_OK,
                  "encode: decodes");
        CHECK_INT(back.len == in.len
                  && ngx_memcmp(back.data, in.data, in.len) == 0, 1,
                  "encode: decodes to the value");
    }
}


static void
test_check(void)
{
    ngx_unit_headers("{\"region\":\"us-west1\",\"query\":\"q\"}", NULL,
                   "check: the header says what the body says",
                   "Region", "us-west1", NULL);
    ngx_unit_headers("{\"region\":\"us-west1\"}", NULL,
                   "check: names regardless of case",
                   "rEGION", "us-west1", NULL);
    ngx_unit_headers("{\"region\":\"us-west1\"}",
                   "Header mismatch: Mcp-Param-Region differs from the "
                   "argument", "check: another value",
                   "Region", "us-east1", NULL);
    ngx_unit_headers("{\"region\":\"us-west1\"}",
                   "Header mismatch: Mcp-Param-Region differs from the "
                   "argument", "check: values are case-sensitive",
                   "Region", "US-WEST1", NULL);
    ngx_unit_headers("{\"region\":\"us-west1\"}",
                   "Header mismatch: Mcp-Param-Region is missing",
                   "check: the argument without its header", NULL);
    ngx_unit_headers("{\"region\":\"us-west1\"}",
                   "Header mismatch: Mcp-Param-Region is repeated",
                   "check: the header twice, same value",
                   "Region", "us-west1", "region", "us-west1", NULL);
    ngx_unit_headers("{\"query\":\"q\"}",
                   "Header mismatch: Mcp-Param-Region without its argument",
                   "check: the header without its argument",
                   "Region", "us-west1", NULL);
    ngx_unit_headers("{\"region\":null}", NULL,
                   "check: a null argument needs no header", NULL);
    ngx_unit_headers("{\"region\":null}",
                   "Header mismatch: Mcp-Param-Region without its argument",
                   "check: a null argument with a header",
                   "Region", "null", NULL);
    ngx_unit_headers("{\"query\":\"q\"}", NULL,
                   "check: an argument without x-mcp-header is not mirrored",
                   "Query", "anything", "Other", "x", NULL);
    ngx_unit_headers(NULL, NULL, "check: no arguments, no headers", NULL);
    ngx_unit_headers(NULL,
                   "Header mismatch: Mcp-Param-Region without its argument",
                   "check: no arguments, a header", "Region", "x", NULL);
    ngx_unit_headers("{\"region\":[\"a\"]}", NULL,
                   "check: an array is the schema's to refuse", NULL);

    ngx_unit_headers("{\"region\":\"Hello\"}", NULL,
                   "check: a Base64 value", "Region", "=?base64?SGVsbG8=?=",
                   NULL);
    ngx_unit_headers("{\"region\":\"Hello\"}",
                   "Header mismatch: Mcp-Param-Region is not valid Base64",
                   "check: Base64 without its padding",
                   "Region", "=?base64?SGVsbG8?=", NULL);
    ngx_unit_headers("{\"region\":\"SGVsbG8=\"}", NULL,
                   "check: a literal that looks like Base64",
                   "Region", "SGVsbG8=", NULL);
    ngx_unit_headers("{\"region\":\"=?base64?SGVsbG8=\"}", NULL,
                   "check: a literal that looks like the wrapper",
                   "Region", "=?base64?SGVsbG8=", NULL);
    ngx_unit_headers("{\"region\":\"SGVsbG8=\"}",
                   "Header mismatch: Mcp-Param-Region differs from the "
                   "argument", "check: a look-alike compares as it is",
                   "Region", "=?base64?U0dWc2JHOD0=?=X", NULL);
    ngx_unit_headers("{\"region\":\"SGVsbG8=\"}", NULL,
                   "check: Base64 of Base64",
                   "Region", "=?base64?U0dWc2JHOD0=?=", NULL);

    ngx_unit_headers("{\"verbose\":false}", NULL, "check: false",
                   "Verbose", "false", NULL);
    ngx_unit_headers("{\"verbose\":true}", NULL, "check: true",
                   "Verbose", "true", NULL);
    ngx_unit_headers("{\"verbose\":true}",
                   "Header mismatch: Mcp-Param-Verbose differs from the "
                   "argument", "check: True is not true",
                   "Verbose", "True", NULL);
    ngx_unit_headers("{\"verbose\":false}",
                   "Header mismatch: Mcp-Param-Verbose differs from the "
                   "argument", "check: 0 is not false", "Verbose", "0", NULL);

    ngx_unit_headers("{\"where\":{\"zone\":\"eu-1\"}}", NULL,
                   "check: a nested argument", "Zone", "eu-1", NULL);
    ngx_unit_headers("{\"where\":{\"zone\":\"eu-1\"}}",
                   "Header mismatch: Mcp-Param-Zone is missing",
                   "check: a nested argument without its header", NULL);
    ngx_unit_headers("{\"where\":\"eu-1\"}", NULL,
                   "check: no object, no nested argument", NULL);
    ngx_unit_headers("{\"zone\":\"eu-1\"}", NULL,
                   "check: a nested name at the top is another argument",
                   NULL);

    ngx_unit_headers("{\"region\":\"a\",\"priority\":1,\"verbose\":true,"
                   "\"where\":{\"zone\":\"z\"}}", NULL,
                   "check: all four", "Zone", "z", "Verbose", "true",
                   "Priority", "1", "Region", "a", NULL);
    ngx_unit_headers("{\"region\":\"a\",\"priority\":1,\"verbose\":true}",
                   "Header mismatch: Mcp-Param-Priority is missing",
                   "check: one of three missing",
                   "Verbose", "true", "Region", "a", NULL);
}


static void
test_numbers(void)
{
    ngx_uint_t  i;

    /* the argument, the Mcp-Param-Priority header, and whether they agree */
    static const struct {
        const char  *args;
        const char  *header;
        ngx_uint_t   agree;
        const char  *name;
    } cases[] = {

        { "{\"priority\":42}", "42", 1, "numbers: 42" },
        { "{\"priority\":42}", "42.0", 1, "numbers: 42.0 is 42" },
        { "{\"priority\":42}", "4.2e1", 1, "numbers: 4.2e1 is 42" },
        { "{\"priority\":42.0}", "42", 1, "numbers: 42 is 42.0" },
        { "{\"priority\":0}", "0", 1, "numbers: 0" },
        { "{\"priority\":0}", "-0", 1, "numbers: -0 is 0" },
        { "{\"priority\":-7}", "-7", 1, "numbers: -7" },
        { "{\"priority\":9007199254740991}", "9007199254740991", 1,
          "numbers: 2^53-1" },
        { "{\"priority\":42}", "=?base64?NDI=?=", 1,
          "numbers: Base64 of 42" },

        { "{\"priority\":42}", "43", 0, "numbers: 43 is not 42" },
        { "{\"priority\":42}", "042", 0,
          "numbers: a leading zero is not JSON" },
        { "{\"priority\":42}", "+42", 0, "numbers: a plus sign is not JSON" },
        { "{\"priority\":42}", "0x2a", 0, "numbers: hex is not JSON" },
        { "{\"priority\":42}", "42.", 0, "numbers: 42. is not JSON" },
        { "{\"priority\":42}", "42abc", 0, "numbers: trailing text" },
        { "{\"priority\":42}", "", 0, "numbers: empty" },
        { "{\"priority\":1e300}", "1e400", 0,
          "numbers: infinity is no number" },
        { "{\"priority\":42}", "\"42\"", 0,
          "numbers: the string \"42\" for 42" },
        { "{\"priority\":\"42\"}", "42", 1,
          "numbers: a string argument compares as a string" },
        { "{\"priority\":\"42\"}", "42.0", 0,
          "numbers: ... so 42.0 is not \"42\"" }
    };

    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        ngx_unit_headers(cases[i].args,
                         cases[i].agree ? NULL
                         : "Header mismatch: Mcp-Param-Priority differs "
                           "from the argument",
                         cases[i].name, "Priority", cases[i].header, NULL);
    }
}


static void
test_schema(void)
{
    ngx_unit_schema(SCHEMA, NULL, "schema: the test schema is valid");
    CHECK_INT(ngx_unit_declared, 4, "schema: the test schema declares four");
    ngx_unit_schema("{\"type\":\"object\"}", NULL,
                    "schema: no properties");
    CHECK_INT(ngx_unit_declared, 0, "schema: no properties declare none");
    ngx_unit_schema("{\"type\":\"object\",\"properties\":{\"a\":{\"type\":"
                    "\"string\",\"x-mcp-header\":\"X-Req_ID.v2~!#$%&'*+^`|"
                    "\"}}}", NULL, "schema: every tchar");
    ngx_unit_schema("{\"type\":\"object\",\"properties\":{\"a\":{\"type\":"
                    "\"string\",\"x-mcp-header\":\"\"}}}",
                    "the x-mcp-header of property \"a\" must be a "
                    "non-empty string", "schema: empty");
    ngx_unit_schema("{\"type\":\"object\",\"properties\":{\"a\":{\"type\":"
                    "\"string\",\"x-mcp-header\":5}}}",
                    "the x-mcp-header of property \"a\" must be a "
                    "non-empty string", "schema: a number");
    ngx_unit_schema("{\"type\":\"object\",\"properties\":{\"a\":{\"type\":"
                    "\"string\",\"x-mcp-header\":\"Re gion\"}}}",
                    "x-mcp-header \"Re gion\" is not an HTTP field name "
                    "(token)", "schema: a space");
    ngx_unit_schema("{\"type\":\"object\",\"properties\":{\"a\":{\"type\":"
                    "\"string\",\"x-mcp-header\":\"Re:gion\"}}}",
                    "x-mcp-header \"Re:gion\" is not an HTTP field name "
                    "(token)", "schema: a colon");
    ngx_unit_schema("{\"type\":\"object\",\"properties\":{\"a\":{\"type\":"
                    "\"string\",\"x-mcp-header\":\"R\\u00e9gion\"}}}",
                    "x-mcp-header \"R\xc3\xa9gion\" is not an HTTP field "
                    "name (token)", "schema: non-ASCII");
    ngx_unit_schema("{\"type\":\"object\",\"properties\":{\"a\":{\"type\":"
                    "\"string\",\"x-mcp-header\":\"Re\\rgion\"}}}",
                    "x-mcp-header \"Re\rgion\" is not an HTTP field name "
                    "(token)", "schema: a CR");
    ngx_unit_schema("{\"type\":\"object\",\"properties\":{\"a\":{\"type\":"
                    "\"number\",\"x-mcp-header\":\"A\"}}}",
                    "x-mcp-header \"A\" is on a property that is not of "
                    "type string, integer or boolean", "schema: number");
    ngx_unit_schema("{\"type\":\"object\",\"properties\":{\"a\":{\"type\":"
                    "\"object\",\"x-mcp-header\":\"A\"}}}",
                    "x-mcp-header \"A\" is on a property that is not of "
                    "type string, integer or boolean", "schema: object");
    ngx_unit_schema("{\"type\":\"object\",\"properties\":{\"a\":{\"type\":"
                    "[\"string\",\"null\"],\"x-mcp-header\":\"A\"}}}", NULL,
                    "schema: a nullable string");
    ngx_unit_schema("{\"type\":\"object\",\"properties\":{\"a\":{\"type\":"
                    "[\"null\",\"boolean\"],\"x-mcp-header\":\"A\"}}}", NULL,
                    "schema: a nullable boolean");
    ngx_unit_schema("{\"type\":\"object\",\"properties\":{\"a\":{\"type\":"
                    "[\"string\",\"integer\"],\"x-mcp-header\":\"A\"}}}",
                    "x-mcp-header \"A\" is on a property that is not of "
                    "type string, integer or boolean", "schema: two types");
    ngx_unit_schema("{\"type\":\"object\",\"properties\":{\"a\":{\"type\":"
                    "[\"null\"],\"x-mcp-header\":\"A\"}}}",
                    "x-mcp-header \"A\" is on a property that is not of "
                    "type string, integer or boolean", "schema: null alone");
    ngx_unit_schema("{\"type\":\"object\",\"properties\":{\"a\":{\"type\":"
                    "[[\"string\"]],\"x-mcp-header\":\"A\"}}}",
                    "x-mcp-header \"A\" is on a property that is not of "
                    "type string, integer or boolean",
                    "schema: a list in a list");
    ngx_unit_schema("{\"type\":\"object\",\"properties\":{\"a\":{"
                    "\"x-mcp-header\":\"A\"}}}",
                    "x-mcp-header \"A\" is on a property that is not of "
                    "type string, integer or boolean", "schema: no type");
    ngx_unit_schema("{\"type\":\"object\",\"properties\":{\"a\":{\"type\":"
                    "\"string\",\"x-mcp-header\":\"Region\"},\"b\":{\"type\":"
                    "\"string\",\"x-mcp-header\":\"Region\"}}}",
                    "x-mcp-header \"Region\" is declared twice",
                    "schema: twice, same case");
    ngx_unit_schema("{\"type\":\"object\",\"properties\":{\"a\":{\"type\":"
                    "\"string\",\"x-mcp-header\":\"Region\"},\"b\":{\"type\":"
                    "\"object\",\"properties\":{\"c\":{\"type\":\"boolean\","
                    "\"x-mcp-header\":\"REGION\"}}}}}",
                    "x-mcp-header \"REGION\" is declared twice",
                    "schema: twice, another case, nested");
}
