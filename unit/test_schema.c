
/*
 * Unit tests of JSON Schema 2020-12 validation and the input limits
 * (ngx_http_mcp_schema.c): every keyword, once valid and once not.
 */


#include <ngx_config.h>
#include <ngx_core.h>

#include "ngx_http_mcp_internal.h"
#include "ngx_shim.h"
#include "unit.h"


static ngx_int_t
check(ngx_pool_t *pool, const char *schema, const char *instance)
{
    u_char     *error;
    cJSON      *s, *i;
    ngx_int_t   rc;

    s = cJSON_Parse(schema);
    i = cJSON_Parse(instance);

    rc = ngx_http_mcp_schema_validate(pool, s, i, &error);

    cJSON_Delete(s);
    cJSON_Delete(i);

    return rc;
}


#define VALID(schema, instance, what)                                         \
    UNIT_CHECK(check(pool, schema, instance) == NGX_OK, what ": valid")
#define INVALID(schema, instance, what)                                       \
    UNIT_CHECK(check(pool, schema, instance) == NGX_DECLINED,                 \
               what ": invalid")


int
main(void)
{
    cJSON        *json;
    const char   *error;
    ngx_pool_t   *pool;

    pool = ngx_shim_pool_create();

    VALID("{\"type\":\"string\"}", "\"a\"", "type string");
    INVALID("{\"type\":\"string\"}", "1", "type string");
    VALID("{\"type\":\"integer\"}", "3", "type integer");
    INVALID("{\"type\":\"integer\"}", "3.5", "type integer");
    VALID("{\"type\":[\"string\",\"null\"]}", "null", "type list");
    INVALID("{\"type\":[\"string\",\"null\"]}", "true", "type list");
    VALID("{\"minLength\":2,\"maxLength\":3}", "\"ab\"", "string lengths");
    INVALID("{\"minLength\":2,\"maxLength\":3}", "\"abcd\"", "string lengths");
    INVALID("{\"minLength\":2}", "\"\xe2\x82\xac\"",
            "minLength counts characters, not bytes");
    VALID("{\"pattern\":\"^[a-z]+$\"}", "\"abc\"", "pattern");
    INVALID("{\"pattern\":\"^[a-z]+$\"}", "\"aB\"", "pattern");
    VALID("{\"minimum\":0,\"maximum\":10}", "10", "minimum/maximum");
    INVALID("{\"minimum\":0,\"maximum\":10}", "-1", "minimum/maximum");
    VALID("{\"exclusiveMinimum\":0}", "0.1", "exclusiveMinimum");
    INVALID("{\"exclusiveMinimum\":0}", "0", "exclusiveMinimum");
    INVALID("{\"exclusiveMaximum\":1}", "1", "exclusiveMaximum");
    VALID("{\"multipleOf\":3}", "9", "multipleOf");
    INVALID("{\"multipleOf\":3}", "10", "multipleOf");
    VALID("{\"enum\":[\"red\",1]}", "1", "enum");
    INVALID("{\"enum\":[\"red\",1]}", "\"blue\"", "enum");
    VALID("{\"const\":{\"a\":[1]}}", "{\"a\":[1]}", "const");
    INVALID("{\"const\":{\"a\":[1]}}", "{\"a\":[2]}", "const");
    VALID("{\"required\":[\"a\"]}", "{\"a\":1}", "required");
    INVALID("{\"required\":[\"a\"]}", "{\"A\":1}",
            "required is case-sensitive");
    VALID("{\"properties\":{\"a\":{\"type\":\"string\"}}}", "{\"a\":\"x\"}",
          "properties");
    INVALID("{\"properties\":{\"a\":{\"type\":\"string\"}}}", "{\"a\":1}",
            "properties");
    INVALID("{\"properties\":{\"a\":{}},\"additionalProperties\":false}",
            "{\"b\":1}", "additionalProperties false");
    VALID("{\"additionalProperties\":{\"type\":\"integer\"}}", "{\"b\":1}",
          "additionalProperties schema");
    VALID("{\"items\":{\"type\":\"integer\"},\"minItems\":1,\"maxItems\":2}",
          "[1,2]", "items and counts");
    INVALID("{\"items\":{\"type\":\"integer\"}}", "[1,\"2\"]", "items");
    INVALID("{\"maxItems\":2}", "[1,2,3]", "maxItems");
    VALID("{\"uniqueItems\":true}", "[1,2]", "uniqueItems");
    INVALID("{\"uniqueItems\":true}", "[1,1]", "uniqueItems");
    VALID("{\"anyOf\":[{\"type\":\"integer\"},{\"type\":\"string\"}]}",
          "\"x\"", "anyOf");
    INVALID("{\"anyOf\":[{\"type\":\"integer\"},{\"type\":\"string\"}]}",
            "true", "anyOf");
    VALID("{\"oneOf\":[{\"type\":\"integer\"},{\"minimum\":10}]}", "5",
          "oneOf");
    INVALID("{\"oneOf\":[{\"type\":\"integer\"},{\"minimum\":10}]}", "12",
            "oneOf (both match)");
    INVALID("{\"allOf\":[{\"type\":\"string\"},{\"maxLength\":1}]}",
            "\"ab\"", "allOf");
    INVALID("{\"not\":{\"const\":\"bad\"}}", "\"bad\"", "not");
    VALID("{\"$defs\":{\"t\":{\"type\":\"string\"}},\"$ref\":\"#/$defs/t\"}",
          "\"x\"", "$ref");
    INVALID("{\"$defs\":{\"t\":{\"type\":\"string\"}},\"$ref\":\"#/$defs/t\"}",
            "1", "$ref");
    VALID("true", "{\"anything\":1}", "the schema true");
    INVALID("false", "1", "the schema false");

    json = cJSON_Parse("{\"a\":{\"b\":{\"c\":1}}}");
    UNIT_CHECK(ngx_http_mcp_schema_check_limits(json, 1, 2, 100, &error)
               == NGX_DECLINED && strstr(error, "deep") != NULL,
               "limits: nesting over the depth");
    UNIT_CHECK(ngx_http_mcp_schema_check_limits(json, 1, 3, 100, &error)
               == NGX_OK, "limits: nesting within the depth");
    cJSON_Delete(json);

    json = cJSON_Parse("{\"k\":\"0123456789\"}");
    UNIT_CHECK(ngx_http_mcp_schema_check_limits(json, 1, 8, 9, &error)
               == NGX_DECLINED && strstr(error, "long") != NULL,
               "limits: a string over the length");
    cJSON_Delete(json);

    json = cJSON_Parse("{\"0123456789\":1}");
    UNIT_CHECK(ngx_http_mcp_schema_check_limits(json, 1, 8, 9, &error)
               == NGX_DECLINED, "limits: a member name over the length");
    cJSON_Delete(json);

    ngx_shim_pool_destroy(pool);

    return unit_done("schema");
}
