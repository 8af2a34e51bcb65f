
/*
 * Unit tests of src/ngx_http_mcp_schema.c: each keyword the validator
 * knows with an instance it accepts and one it refuses, the refusal's
 * message and path exactly as a client reads them, and what passes
 * unchecked (unknown keywords, a $ref to another document).  The
 * official suite runs in test_schema_suite.c; these pin the messages.
 */


#include <ngx_config.h>
#include <ngx_core.h>
#include <cjson/cJSON.h>

#include "ngx_http_mcp_schema.h"
#include "ngx_shim.h"
#include "unit.h"


static ngx_int_t ngx_unit_validate(const char *schema, const char *instance,
    const char **error);
static void ngx_unit_valid(const char *schema, const char *instance,
    const char *name);
static void ngx_unit_invalid(const char *schema, const char *instance,
    const char *error, const char *name);
static void test_type(void);
static void test_numbers(void);
static void test_strings(void);
static void test_objects(void);
static void test_arrays(void);
static void test_combinators(void);
static void test_refs(void);
static void test_edges(void);
static void test_2020(void);
static void test_format(void);


static ngx_pool_t  *pool;


NGX_UNIT_MAIN("test_schema", test_type, test_numbers, test_strings,
              test_objects, test_arrays, test_combinators, test_refs,
              test_edges, test_2020, test_format)


/* -100: the test's own JSON does not parse */

static ngx_int_t
ngx_unit_validate(const char *schema, const char *instance,
    const char **error)
{
    cJSON      *s, *i;
    u_char     *e;
    ngx_int_t   rc;

    s = cJSON_Parse(schema);
    i = cJSON_Parse(instance);
    e = NULL;

    if (s == NULL || i == NULL) {
        rc = -100;

    } else {
        rc = ngx_http_mcp_schema_validate(pool, s, i, &e);
    }

    cJSON_Delete(s);
    cJSON_Delete(i);

    *error = (const char *) e;

    return rc;
}


static void
ngx_unit_valid(const char *schema, const char *instance, const char *name)
{
    ngx_int_t    rc;
    const char  *error;

    rc = ngx_unit_validate(schema, instance, &error);

    if (!CHECK(rc == NGX_OK, name)) {
        printf("#   %s against %s: rc %d, \"%s\"\n", instance, schema,
               (int) rc, error ? error : "(null)");
    }
}


static void
ngx_unit_invalid(const char *schema, const char *instance, const char *error,
    const char *name)
{
    ngx_int_t    rc;
    const char  *got;

    rc = ngx_unit_validate(schema, instance, &got);

    if (!CHECK(rc == NGX_DECLINED && ngx_unit_streq(got, error), name)) {
        printf("#   %s against %s: rc %d, got \"%s\", want \"%s\"\n",
               instance, schema, (int) rc, got ? got : "(null)", error);
    }
}


static void
test_type(void)
{
    ngx_unit_valid("{\"type\":\"object\"}", "{}", "type object: {}");
    ngx_unit_invalid("{\"type\":\"object\"}", "[]",
                     "arguments: must be of type object",
                     "type object: [] refused");
    ngx_unit_valid("{\"type\":\"integer\"}", "3", "type integer: 3");
    ngx_unit_valid("{\"type\":\"integer\"}", "3.0",
                   "type integer: 3.0 (a number with no fraction)");
    ngx_unit_invalid("{\"type\":\"integer\"}", "3.5",
                     "arguments: must be of type integer",
                     "type integer: 3.5 refused");
    ngx_unit_valid("{\"type\":\"number\"}", "3.5", "type number: 3.5");
    ngx_unit_invalid("{\"type\":\"string\"}", "5",
                     "arguments: must be of type string",
                     "type string: 5 refused");
    ngx_unit_invalid("{\"type\":\"boolean\"}", "0",
                     "arguments: must be of type boolean",
                     "type boolean: 0 refused");
    ngx_unit_invalid("{\"type\":\"null\"}", "false",
                     "arguments: must be of type null",
                     "type null: false refused");
    ngx_unit_invalid("{\"type\":\"nothing\"}", "1",
                     "arguments: must be of type nothing",
                     "an unknown type name matches nothing");
    ngx_unit_valid("{\"type\":[\"string\",\"null\"]}", "null",
                   "type [string, null]: null");
    ngx_unit_invalid("{\"type\":[\"string\",\"null\"]}", "1",
                     "arguments: has the wrong type",
                     "type [string, null]: 1 refused");

    ngx_unit_valid("{\"enum\":[\"a\",1,{\"k\":[true]}]}", "{\"k\":[true]}",
                   "enum: an object equal to a member");
    ngx_unit_invalid("{\"enum\":[\"a\",1]}", "\"b\"",
                     "arguments: must be one of the enum values",
                     "enum: another string refused");
    ngx_unit_valid("{\"const\":{\"a\":[1,2]}}", "{\"a\":[1,2]}",
                   "const: an equal object");
    ngx_unit_invalid("{\"const\":{\"a\":[1,2]}}", "{\"a\":[2,1]}",
                     "arguments: must equal the const value",
                     "const: order in an array matters");
}


static void
test_numbers(void)
{
    ngx_unit_valid("{\"minimum\":0}", "0", "minimum 0: 0");
    ngx_unit_invalid("{\"minimum\":0}", "-0.5", "arguments: must be >= 0",
                     "minimum 0: -0.5 refused");
    ngx_unit_valid("{\"maximum\":2.5}", "2.5", "maximum 2.5: 2.5");
    ngx_unit_invalid("{\"maximum\":2.5}", "3", "arguments: must be <= 2.5",
                     "maximum 2.5: 3 refused");
    ngx_unit_valid("{\"exclusiveMinimum\":1}", "1.01",
                   "exclusiveMinimum 1: 1.01");
    ngx_unit_invalid("{\"exclusiveMinimum\":1}", "1",
                     "arguments: must be > 1",
                     "exclusiveMinimum 1: 1 refused");
    ngx_unit_valid("{\"exclusiveMaximum\":1e100}", "1e99",
                   "exclusiveMaximum 1e100: 1e99");
    ngx_unit_invalid("{\"exclusiveMaximum\":1e100}", "1e100",
                     "arguments: must be < 1e+100",
                     "exclusiveMaximum 1e100: 1e100 refused");
    ngx_unit_valid("{\"multipleOf\":0.1}", "0.3",
                   "multipleOf 0.1: 0.3 (despite binary fractions)");
    ngx_unit_invalid("{\"multipleOf\":3}", "10",
                     "arguments: must be a multiple of 3",
                     "multipleOf 3: 10 refused");
    ngx_unit_valid("{\"minimum\":5}", "\"1\"",
                   "number keywords ignore a string");
}


static void
test_strings(void)
{
    ngx_unit_valid("{\"minLength\":2}", "\"\xc3\xa9\xc3\xa9\"",
                   "minLength 2: two characters (four bytes)");
    ngx_unit_invalid("{\"minLength\":2}", "\"\xc3\xa9\"",
                     "arguments: must be at least 2 characters long",
                     "minLength 2: one character (two bytes) refused");
    ngx_unit_valid("{\"maxLength\":1}", "\"\xf0\x9f\x98\x80\"",
                   "maxLength 1: one emoji");
    ngx_unit_invalid("{\"maxLength\":1}", "\"ab\"",
                     "arguments: must be at most 1 characters long",
                     "maxLength 1: two characters refused");
    ngx_unit_valid("{\"pattern\":\"^[a-z]+$\"}", "\"abc\"",
                   "pattern: a match");
    ngx_unit_invalid("{\"pattern\":\"^[a-z]+$\"}", "\"abC\"",
                     "arguments: must match the pattern \"^[a-z]+$\"",
                     "pattern: no match refused");
    ngx_unit_valid("{\"pattern\":\"b\"}", "\"abc\"",
                   "pattern: not anchored unless the pattern says so");
    ngx_unit_valid("{\"maxLength\":0}", "[1]",
                   "string keywords ignore an array");
}


static void
test_objects(void)
{
    static const char  *person =
        "{\"type\":\"object\",\"required\":[\"name\"],"
        "\"properties\":{\"name\":{\"type\":\"string\"},"
        "\"age\":{\"type\":\"integer\",\"minimum\":0}},"
        "\"additionalProperties\":false}";

    ngx_unit_valid(person, "{\"name\":\"ann\",\"age\":3}",
                   "properties: both valid");
    ngx_unit_invalid(person, "{\"age\":3}", "arguments: \"name\" is required",
                     "required: a missing property refused");
    ngx_unit_invalid(person, "{\"name\":\"ann\",\"age\":-1}",
                     "arguments.age: must be >= 0",
                     "properties: the failing value's path");
    ngx_unit_invalid(person, "{\"name\":\"ann\",\"x\":1}",
                     "arguments: unknown property \"x\"",
                     "additionalProperties false: an unknown name refused");
    ngx_unit_valid("{\"additionalProperties\":{\"type\":\"number\"},"
                   "\"properties\":{\"s\":{}}}", "{\"s\":\"x\",\"n\":1}",
                   "additionalProperties as a schema: the others pass it");
    ngx_unit_invalid("{\"additionalProperties\":{\"type\":\"number\"}}",
                     "{\"n\":\"x\"}", "arguments.n: must be of type number",
                     "additionalProperties as a schema: refused");
    ngx_unit_valid("{\"patternProperties\":{\"^x_\":{\"type\":\"integer\"}},"
                   "\"additionalProperties\":false}", "{\"x_a\":1}",
                   "patternProperties: a matching name");
    ngx_unit_invalid("{\"patternProperties\":{\"^x_\":{\"type\":\"integer\"}},"
                     "\"additionalProperties\":false}", "{\"x_a\":\"1\"}",
                     "arguments.x_a: must be of type integer",
                     "patternProperties: its schema applies");
    ngx_unit_invalid("{\"patternProperties\":{\"^x_\":{}},"
                     "\"additionalProperties\":false}", "{\"y\":1}",
                     "arguments: unknown property \"y\"",
                     "patternProperties: a name no pattern matches refused");
    ngx_unit_valid("{\"minProperties\":1,\"maxProperties\":2}",
                   "{\"a\":1,\"b\":2}", "min/maxProperties: two of 1..2");
    ngx_unit_invalid("{\"minProperties\":1}", "{}",
                     "arguments: has too few properties",
                     "minProperties 1: {} refused");
    ngx_unit_invalid("{\"maxProperties\":1}", "{\"a\":1,\"b\":2}",
                     "arguments: has too many properties",
                     "maxProperties 1: two refused");
    ngx_unit_invalid("{\"properties\":{\"a\":{\"properties\":{\"b\":"
                     "{\"type\":\"string\"}}}}}", "{\"a\":{\"b\":1}}",
                     "arguments.a.b: must be of type string",
                     "a nested path");
}


static void
test_arrays(void)
{
    ngx_unit_valid("{\"items\":{\"type\":\"integer\"}}", "[1,2,3]",
                   "items: every item valid");
    ngx_unit_invalid("{\"items\":{\"type\":\"integer\"}}", "[1,\"2\"]",
                     "arguments[1]: must be of type integer",
                     "items: the failing item's index");
    ngx_unit_valid("{\"prefixItems\":[{\"type\":\"string\"},"
                   "{\"type\":\"integer\"}],\"items\":false}", "[\"a\",1]",
                   "prefixItems: by position");
    ngx_unit_invalid("{\"prefixItems\":[{\"type\":\"string\"}],"
                     "\"items\":false}", "[\"a\",1]",
                     "arguments[1]: is not allowed",
                     "prefixItems with items false: an extra item refused");
    ngx_unit_invalid("{\"prefixItems\":[{\"type\":\"string\"}]}", "[1]",
                     "arguments[0]: must be of type string",
                     "prefixItems: a wrong first item refused");
    ngx_unit_valid("{\"minItems\":1,\"maxItems\":2}", "[1,2]",
                   "min/maxItems: two of 1..2");
    ngx_unit_invalid("{\"minItems\":1}", "[]",
                     "arguments: must have at least 1 items",
                     "minItems 1: [] refused");
    ngx_unit_invalid("{\"maxItems\":2}", "[1,2,3]",
                     "arguments: must have at most 2 items",
                     "maxItems 2: three refused");
    ngx_unit_valid("{\"uniqueItems\":true}", "[1,\"1\",[1],{\"a\":1}]",
                   "uniqueItems: items of different types");
    ngx_unit_invalid("{\"uniqueItems\":true}", "[{\"a\":[1]},2,{\"a\":[1]}]",
                     "arguments: must have unique items",
                     "uniqueItems: two equal objects refused");
    ngx_unit_valid("{\"uniqueItems\":false}", "[1,1]",
                   "uniqueItems false: repeats allowed");
}


static void
test_combinators(void)
{
    static const char  *any = "{\"anyOf\":[{\"type\":\"string\"},"
                              "{\"type\":\"integer\"}]}";
    static const char  *one = "{\"oneOf\":[{\"type\":\"integer\"},"
                              "{\"minimum\":5}]}";
    static const char  *cond =
        "{\"if\":{\"properties\":{\"kind\":{\"const\":\"n\"}}},"
        "\"then\":{\"properties\":{\"v\":{\"type\":\"number\"}}},"
        "\"else\":{\"properties\":{\"v\":{\"type\":\"string\"}}}}";

    ngx_unit_valid("{\"allOf\":[{\"minimum\":1},{\"maximum\":3}]}", "2",
                   "allOf: both");
    ngx_unit_invalid("{\"allOf\":[{\"minimum\":1},{\"maximum\":3}]}", "4",
                     "arguments: must be <= 3",
                     "allOf: the failing schema's message");
    ngx_unit_valid(any, "\"s\"", "anyOf: the first");
    ngx_unit_valid(any, "7", "anyOf: the second");
    ngx_unit_invalid(any, "1.5",
                     "arguments: must match at least one schema of anyOf",
                     "anyOf: neither refused");
    ngx_unit_valid(one, "3", "oneOf: only the first");
    ngx_unit_valid(one, "5.5", "oneOf: only the second");
    ngx_unit_invalid(one, "7",
                     "arguments: must match exactly one schema of oneOf",
                     "oneOf: both refused");
    ngx_unit_invalid(one, "1.5",
                     "arguments: must match exactly one schema of oneOf",
                     "oneOf: neither refused");
    ngx_unit_valid("{\"not\":{\"type\":\"null\"}}", "0", "not: 0 is no null");
    ngx_unit_invalid("{\"not\":{\"type\":\"null\"}}", "null",
                     "arguments: must not match the schema of not",
                     "not: null refused");
    ngx_unit_valid(cond, "{\"kind\":\"n\",\"v\":1}", "if/then: then applies");
    ngx_unit_invalid(cond, "{\"kind\":\"n\",\"v\":\"1\"}",
                     "arguments.v: must be of type number",
                     "if/then: then refuses");
    ngx_unit_valid(cond, "{\"kind\":\"s\",\"v\":\"1\"}",
                   "if/else: else applies");
    ngx_unit_invalid(cond, "{\"kind\":\"s\",\"v\":1}",
                     "arguments.v: must be of type string",
                     "if/else: else refuses");
}


static void
test_refs(void)
{
    static const char  *defs =
        "{\"$defs\":{\"pos\":{\"type\":\"integer\",\"minimum\":1},"
        "\"a/b\":{\"type\":\"string\"},"
        "\"anchored\":{\"$anchor\":\"flag\",\"type\":\"boolean\"}},"
        "\"properties\":{\"n\":{\"$ref\":\"#/$defs/pos\"},"
        "\"s\":{\"$ref\":\"#/$defs/a~1b\"},"
        "\"f\":{\"$ref\":\"#flag\"},"
        "\"ext\":{\"$ref\":\"https://example.com/s.json\"},"
        "\"tree\":{\"$ref\":\"#\"}},"
        "\"additionalProperties\":false}";

    ngx_unit_valid(defs, "{\"n\":2,\"s\":\"x\",\"f\":true,\"ext\":[],"
                   "\"tree\":{\"n\":1}}", "$ref: every kind of reference");
    ngx_unit_invalid(defs, "{\"n\":0}", "arguments.n: must be >= 1",
                     "$ref #/$defs/pos: its schema applies");
    ngx_unit_invalid(defs, "{\"s\":1}", "arguments.s: must be of type string",
                     "$ref with ~1 (a \"/\" in a name)");
    ngx_unit_invalid(defs, "{\"f\":1}", "arguments.f: must be of type boolean",
                     "$ref to an $anchor");
    ngx_unit_invalid(defs, "{\"tree\":{\"tree\":{\"n\":-1}}}",
                     "arguments.tree.tree.n: must be >= 1",
                     "$ref #: the root, recursively");
    ngx_unit_valid("{\"$ref\":\"#/$defs/missing\"}", "1",
                   "$ref to nothing: passes");

    /*
     * A $ref to the root in both branches of a oneOf (which checks every
     * branch): each level checks the value twice, 2^64 checks down to
     * the depth limit (a fuzz finding that ran for minutes).  Cut short
     * and refused, also under a not, which would turn a failure round.
     */
    ngx_unit_invalid("{\"oneOf\":[{\"$ref\":\"#\"},{\"$ref\":\"#\"}]}",
                     "1",
                     "arguments: takes too many checks against the schema",
                     "$ref # in both branches of oneOf: a bounded number "
                     "of checks");
    ngx_unit_invalid("{\"not\":{\"oneOf\":[{\"$ref\":\"#\"},"
                     "{\"$ref\":\"#\"}]}}", "1",
                     "arguments: takes too many checks against the schema",
                     "... under a not, refused all the same");
}


static void
test_edges(void)
{
    cJSON       *i;
    u_char      *error;
    ngx_int_t    rc;
    const char  *e;

    ngx_unit_valid("true", "{\"x\":1}", "schema true: anything");
    ngx_unit_invalid("false", "{}", "arguments: is not allowed",
                     "schema false: nothing");
    ngx_unit_valid("{\"format\":\"email\",\"title\":\"t\",\"x-y\":1}",
                   "\"not an email\"",
                   "annotations and unknown keywords pass");

    i = cJSON_Parse("{}");
    error = NULL;
    CHECK(ngx_http_mcp_schema_validate(pool, NULL, i, &error) == NGX_OK
          && error == NULL, "no schema: valid");
    cJSON_Delete(i);

    rc = ngx_unit_validate("{\"pattern\":\"(\"}", "\"x\"", &e);
    CHECK_INT(rc, NGX_ERROR, "a pattern that does not compile: NGX_ERROR");

    ngx_unit_invalid("{\"additionalProperties\":false}", "{\"a\\u0001b\":1}",
                     "arguments: unknown property \"a?b\"",
                     "a control byte of a name is shown as \"?\"");
}


/* the keywords the validator learnt with the whole of 2020-12 */

static void
test_2020(void)
{
    cJSON  *s;

    static const char  *uneval =
        "{\"properties\":{\"a\":true},"
        "\"anyOf\":[{\"properties\":{\"b\":true},\"required\":[\"b\"]},"
        "{\"properties\":{\"c\":true},\"required\":[\"c\"]}],"
        "\"unevaluatedProperties\":false}";

    ngx_unit_valid("{\"contains\":{\"type\":\"integer\"}}", "[\"a\",1]",
                   "contains: one item matches");
    ngx_unit_invalid("{\"contains\":{\"type\":\"integer\"}}", "[\"a\"]",
                     "arguments: must contain at least 1 items that match "
                     "contains", "contains: none matches");
    ngx_unit_invalid("{\"contains\":{\"const\":1},\"maxContains\":1}",
                     "[1,1]",
                     "arguments: must contain at most 1 items that match "
                     "contains", "maxContains");
    ngx_unit_valid("{\"contains\":{\"const\":1},\"minContains\":0}", "[]",
                   "minContains 0: an empty array");
    ngx_unit_invalid("{\"propertyNames\":{\"maxLength\":3}}",
                     "{\"abcd\":1}",
                     "arguments: has an invalid property name \"abcd\"",
                     "propertyNames");
    ngx_unit_invalid("{\"dependentRequired\":{\"card\":[\"cvv\"]}}",
                     "{\"card\":1}",
                     "arguments: \"cvv\" is required with \"card\"",
                     "dependentRequired");
    ngx_unit_invalid("{\"dependentSchemas\":{\"a\":"
                     "{\"properties\":{\"b\":{\"type\":\"string\"}}}}}",
                     "{\"a\":1,\"b\":2}",
                     "arguments.b: must be of type string",
                     "dependentSchemas");
    ngx_unit_valid(uneval, "{\"a\":1,\"b\":2}",
                   "unevaluatedProperties: seen through anyOf");
    ngx_unit_invalid(uneval, "{\"a\":1,\"b\":2,\"d\":3}",
                     "arguments: unknown property \"d\"",
                     "unevaluatedProperties false: the one left over");
    ngx_unit_invalid(uneval, "{\"a\":1,\"b\":2,\"c\":3,\"x\":[]}",
                     "arguments: unknown property \"x\"",
                     "unevaluatedProperties: both anyOf branches count");
    ngx_unit_invalid("{\"prefixItems\":[true],\"unevaluatedItems\":"
                     "{\"type\":\"string\"}}", "[1,\"a\",2]",
                     "arguments[2]: must be of type string",
                     "unevaluatedItems: a schema for the rest");
    ngx_unit_invalid("{\"$defs\":{\"n\":{\"$dynamicAnchor\":\"t\","
                     "\"type\":\"string\"}},\"$dynamicAnchor\":\"t\","
                     "\"type\":[\"array\",\"integer\"],"
                     "\"items\":{\"$dynamicRef\":\"#t\"}}", "[[1,\"a\"]]",
                     "arguments[0][1]: has the wrong type",
                     "$dynamicRef: the outermost $dynamicAnchor");
    ngx_unit_invalid("{\"$id\":\"https://example.com/root.json\","
                     "\"properties\":{\"x\":{\"$ref\":\"item.json\"}},"
                     "\"$defs\":{\"i\":{\"$id\":\"item.json\","
                     "\"type\":\"integer\"}}}", "{\"x\":\"1\"}",
                     "arguments.x: must be of type integer",
                     "$ref to an $id relative to the root's");
    ngx_unit_invalid("{\"const\":9007199254740992}", "9007199254740991",
                     "arguments: must equal the const value",
                     "const: 2^53 - 1 is not 2^53");
    ngx_unit_valid("{\"pattern\":\"^\\\\p{Letter}+$\"}", "\"\u00e9t\u00e9\"",
                   "pattern: code points, and long category names");
    ngx_unit_valid("{\"pattern\":\"^a\\\\sb$\"}", "\"a\u00a0b\"",
                   "pattern: \\s is ECMA-262's, no-break space and all");
    ngx_unit_invalid("{\"pattern\":\"^\\\\S+$\"}", "\"a\u2028\"",
                     "arguments: must match the pattern \"^\\S+$\"",
                     "pattern: a line separator is no \\S");
    ngx_unit_valid("{\"pattern\":\"^[^]$\"}", "\"\u00e9\"",
                   "pattern: [^] is any character");

    s = cJSON_Parse("{\"$schema\":\"https://json-schema.org/draft/2020-12/"
                    "schema\"}");
    CHECK(ngx_http_mcp_schema_dialect(s) == NULL, "$schema 2020-12: taken");
    cJSON_Delete(s);

    s = cJSON_Parse("{\"type\":\"object\"}");
    CHECK(ngx_http_mcp_schema_dialect(s) == NULL, "no $schema: taken");
    cJSON_Delete(s);

    s = cJSON_Parse("{\"$schema\":\"http://json-schema.org/draft-07/"
                    "schema#\"}");
    CHECK_STR(ngx_http_mcp_schema_dialect(s),
              "http://json-schema.org/draft-07/schema#",
              "$schema draft-07: named, to be refused");
    cJSON_Delete(s);
}


/* format: an annotation unless asked to assert */

static void
test_format(void)
{
    cJSON                       *s, *i;
    u_char                      *e;
    ngx_int_t                    rc;
    ngx_http_mcp_schema_opts_t   opts;

    ngx_memzero(&opts, sizeof(ngx_http_mcp_schema_opts_t));
    opts.format_assert = 1;

    s = cJSON_Parse("{\"properties\":{\"when\":{\"format\":\"date-time\"},"
                    "\"ip\":{\"format\":\"ipv4\"}}}");

    i = cJSON_Parse("{\"when\":\"2026-02-30T10:00:00Z\"}");
    e = NULL;
    rc = ngx_http_mcp_schema_validate(pool, s, i, &e);
    CHECK(rc == NGX_OK, "format: an annotation by default");

    rc = ngx_http_mcp_schema_validate_opts(pool, s, i, &opts, &e);
    CHECK(rc == NGX_DECLINED
          && ngx_unit_streq((char *) e,
                            "arguments.when: must be a valid date-time"),
          "format asserted: February 30th refused");
    cJSON_Delete(i);

    i = cJSON_Parse("{\"when\":\"2024-02-29T23:59:60Z\",\"ip\":\"10.0.0.1\"}");
    rc = ngx_http_mcp_schema_validate_opts(pool, s, i, &opts, &e);
    CHECK(rc == NGX_OK, "format asserted: a leap day and second, an ipv4");
    cJSON_Delete(i);

    i = cJSON_Parse("{\"ip\":\"10.0.0.01\"}");
    rc = ngx_http_mcp_schema_validate_opts(pool, s, i, &opts, &e);
    CHECK(rc == NGX_DECLINED, "format asserted: a leading zero in ipv4");
    cJSON_Delete(i);

    cJSON_Delete(s);
}
