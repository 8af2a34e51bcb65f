
/*
 * What one schema object says of one value, without descending into it:
 * its keywords found in one walk, the assertions on numbers, strings and
 * types, equality, pattern matches (each pattern compiled once a call),
 * the record of evaluated members or items that unevaluated* reads, and
 * the failure message with the path of the value.
 */


#include <ngx_config.h>
#include <ngx_core.h>
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>

#include "ngx_http_mcp_schema.h"
#include "ngx_http_mcp_schema_internal.h"
#include "ngx_http_mcp_json.h"


static ngx_uint_t ngx_http_mcp_schema_type_bit(const char *type);
static ngx_uint_t ngx_http_mcp_schema_objects(cJSON *node);
static ngx_int_t ngx_http_mcp_schema_compile_node(ngx_pool_t *pool,
    ngx_http_mcp_schema_t *c, cJSON *node);
static ngx_uint_t ngx_http_mcp_schema_value_type(cJSON *v);


/* sorted by name (strcmp), for the binary search */
static ngx_http_mcp_schema_keyword_t  ngx_http_mcp_schema_keywords_all[] = {
    { "$dynamicRef", offsetof(ngx_http_mcp_schema_kw_t, dynamic_ref) },
    { "$id", offsetof(ngx_http_mcp_schema_kw_t, id) },
    { "$ref", offsetof(ngx_http_mcp_schema_kw_t, ref) },
    { "additionalProperties", offsetof(ngx_http_mcp_schema_kw_t, additional_properties) },
    { "allOf", offsetof(ngx_http_mcp_schema_kw_t, all_of) },
    { "anyOf", offsetof(ngx_http_mcp_schema_kw_t, any_of) },
    { "const", offsetof(ngx_http_mcp_schema_kw_t, const_) },
    { "contains", offsetof(ngx_http_mcp_schema_kw_t, contains) },
    { "dependentRequired", offsetof(ngx_http_mcp_schema_kw_t, dependent_required) },
    { "dependentSchemas", offsetof(ngx_http_mcp_schema_kw_t, dependent_schemas) },
    { "else", offsetof(ngx_http_mcp_schema_kw_t, else_) },
    { "enum", offsetof(ngx_http_mcp_schema_kw_t, enum_) },
    { "exclusiveMaximum", offsetof(ngx_http_mcp_schema_kw_t, exclusive_maximum) },
    { "exclusiveMinimum", offsetof(ngx_http_mcp_schema_kw_t, exclusive_minimum) },
    { "format", offsetof(ngx_http_mcp_schema_kw_t, format) },
    { "if", offsetof(ngx_http_mcp_schema_kw_t, if_) },
    { "items", offsetof(ngx_http_mcp_schema_kw_t, items) },
    { "maxContains", offsetof(ngx_http_mcp_schema_kw_t, max_contains) },
    { "maxItems", offsetof(ngx_http_mcp_schema_kw_t, max_items) },
    { "maxLength", offsetof(ngx_http_mcp_schema_kw_t, max_length) },
    { "maxProperties", offsetof(ngx_http_mcp_schema_kw_t, max_properties) },
    { "maximum", offsetof(ngx_http_mcp_schema_kw_t, maximum) },
    { "minContains", offsetof(ngx_http_mcp_schema_kw_t, min_contains) },
    { "minItems", offsetof(ngx_http_mcp_schema_kw_t, min_items) },
    { "minLength", offsetof(ngx_http_mcp_schema_kw_t, min_length) },
    { "minProperties", offsetof(ngx_http_mcp_schema_kw_t, min_properties) },
    { "minimum", offsetof(ngx_http_mcp_schema_kw_t, minimum) },
    { "multipleOf", offsetof(ngx_http_mcp_schema_kw_t, multiple_of) },
    { "not", offsetof(ngx_http_mcp_schema_kw_t, not_) },
    { "oneOf", offsetof(ngx_http_mcp_schema_kw_t, one_of) },
    { "pattern", offsetof(ngx_http_mcp_schema_kw_t, pattern) },
    { "patternProperties", offsetof(ngx_http_mcp_schema_kw_t, pattern_properties) },
    { "prefixItems", offsetof(ngx_http_mcp_schema_kw_t, prefix_items) },
    { "properties", offsetof(ngx_http_mcp_schema_kw_t, properties) },
    { "propertyNames", offsetof(ngx_http_mcp_schema_kw_t, property_names) },
    { "required", offsetof(ngx_http_mcp_schema_kw_t, required) },
    { "then", offsetof(ngx_http_mcp_schema_kw_t, then) },
    { "type", offsetof(ngx_http_mcp_schema_kw_t, type) },
    { "unevaluatedItems", offsetof(ngx_http_mcp_schema_kw_t, unevaluated_items) },
    { "unevaluatedProperties", offsetof(ngx_http_mcp_schema_kw_t, unevaluated_properties) },
    { "uniqueItems", offsetof(ngx_http_mcp_schema_kw_t, unique_items) },
};


/*
 * A schema object's keywords in one walk of its members, instead of a
 * walk of them for each of the forty keywords: each member's name is
 * compared with the few keywords of its first byte only (an index into
 * the sorted table, made once from it), the second byte before the rest.
 * This runs for every subschema of every call: a flat object schema's
 * members cost a comparison or two each.  The first member of a name
 * wins, as ngx_http_mcp_json_get() would have it.
 */

void
ngx_http_mcp_schema_keywords(cJSON *schema, ngx_http_mcp_schema_kw_t *k)
{
    cJSON                          *m, **slot;
    u_char                         *name;
    ngx_uint_t                      i, c, n;
    ngx_http_mcp_schema_keyword_t  *kw;

    /* first[c]: the first keyword whose first byte is c or more */
    static u_char                   first[257];
    static ngx_uint_t               indexed;

    kw = ngx_http_mcp_schema_keywords_all;

    if (!indexed) {
        n = sizeof(ngx_http_mcp_schema_keywords_all)
            / sizeof(ngx_http_mcp_schema_keyword_t);
        i = 0;

        for (c = 0; c < 257; c++) {
            while (i < n && (ngx_uint_t) (u_char) kw[i].name[0] < c) {
                i++;
            }

            first[c] = (u_char) i;
        }

        indexed = 1;
    }

    ngx_memzero(k, sizeof(ngx_http_mcp_schema_kw_t));

    for (m = schema->child; m != NULL; m = m->next) {

        name = (u_char *) m->string;

        if (name == NULL || name[0] == '\0') {
            continue;
        }

        for (i = first[name[0]]; i < first[name[0] + 1]; i++) {

            if (name[1] != (u_char) kw[i].name[1]
                || ngx_strcmp(name + 1, kw[i].name + 1) != 0)
            {
                continue;
            }

            slot = (cJSON **) ((u_char *) k + kw[i].offset);

            if (*slot == NULL) {
                *slot = m;
            }

            break;
        }
    }

    k->object = schema;

    if (ngx_http_mcp_schema_is(k->type, cJSON_String)) {
        k->types = ngx_http_mcp_schema_type_bit(k->type->valuestring);

    } else if (ngx_http_mcp_schema_is(k->type, cJSON_Array)) {
        cJSON_ArrayForEach(m, k->type) {
            if (ngx_http_mcp_schema_is(m, cJSON_String)) {
                k->types |= ngx_http_mcp_schema_type_bit(m->valuestring);
            }
        }
    }
}


/* a type's name as a T_* bit; 0: no type of 2020-12 */

static ngx_uint_t
ngx_http_mcp_schema_type_bit(const char *type)
{
    ngx_uint_t  i;

    static struct {
        const char  *name;
        ngx_uint_t   bit;
    } types[] = {
        { "object", NGX_HTTP_MCP_SCHEMA_T_OBJECT },
        { "array", NGX_HTTP_MCP_SCHEMA_T_ARRAY },
        { "string", NGX_HTTP_MCP_SCHEMA_T_STRING },
        { "boolean", NGX_HTTP_MCP_SCHEMA_T_BOOLEAN },
        { "null", NGX_HTTP_MCP_SCHEMA_T_NULL },
        { "number", NGX_HTTP_MCP_SCHEMA_T_NUMBER },
        { "integer", NGX_HTTP_MCP_SCHEMA_T_INTEGER }
    };

    for (i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
        if (ngx_strcmp(type, types[i].name) == 0) {
            return types[i].bit;
        }
    }

    return 0;
}


/*
 * Compiling: the keywords of every object of the schema's tree, a table
 * by address.  Objects that are no schema (a const's, the "properties"
 * map) cost a record each and are never looked up; a $ref may name any
 * of them.  Past the cap a schema is validated as it is: its records
 * would weigh more than the walks they save.
 */

#define NGX_HTTP_MCP_SCHEMA_COMPILE_MAX  4096


ngx_http_mcp_schema_t *
ngx_http_mcp_schema_compile(ngx_pool_t *pool, cJSON *schema)
{
    ngx_uint_t              n, size;
    ngx_http_mcp_schema_t  *c;

    c = ngx_pcalloc(pool, sizeof(ngx_http_mcp_schema_t));
    if (c == NULL) {
        return NULL;
    }

    c->root = schema;

    if (!ngx_http_mcp_schema_is(schema, cJSON_Object)) {
        return c;
    }

    n = ngx_http_mcp_schema_objects(schema);

    if (n > NGX_HTTP_MCP_SCHEMA_COMPILE_MAX) {
        return c;
    }

    /* at most half full: a miss ends soon */
    for (size = 2; size < 2 * n; size <<= 1) { /* void */ }

    c->slots = ngx_pcalloc(pool, size * sizeof(ngx_http_mcp_schema_kw_t *));
    if (c->slots == NULL) {
        return NULL;
    }

    c->mask = size - 1;

    if (ngx_http_mcp_schema_compile_node(pool, c, schema) != NGX_OK) {
        return NULL;
    }

    return c;
}


static ngx_uint_t
ngx_http_mcp_schema_objects(cJSON *node)
{
    cJSON       *m;
    ngx_uint_t   n;

    n = ngx_http_mcp_schema_is(node, cJSON_Object);

    for (m = node->child; m != NULL; m = m->next) {
        n += ngx_http_mcp_schema_objects(m);
    }

    return n;
}


static ngx_int_t
ngx_http_mcp_schema_compile_node(ngx_pool_t *pool, ngx_http_mcp_schema_t *c,
    cJSON *node)
{
    cJSON                     *m;
    ngx_uint_t                 i;
    ngx_http_mcp_schema_kw_t  *k;

    if (ngx_http_mcp_schema_is(node, cJSON_Object)) {
        k = ngx_palloc(pool, sizeof(ngx_http_mcp_schema_kw_t));
        if (k == NULL) {
            return NGX_ERROR;
        }

        ngx_http_mcp_schema_keywords(node, k);

        i = ((uintptr_t) node >> 6) & c->mask;

        while (c->slots[i] != NULL) {
            i = (i + 1) & c->mask;
        }

        c->slots[i] = k;
    }

    for (m = node->child; m != NULL; m = m->next) {
        if (ngx_http_mcp_schema_compile_node(pool, c, m) != NGX_OK) {
            return NGX_ERROR;
        }
    }

    return NGX_OK;
}


/* type, enum, const */

ngx_int_t
ngx_http_mcp_schema_type(ngx_http_mcp_schema_ctx_t *ctx,
    ngx_http_mcp_schema_kw_t *k,
    cJSON *v, ngx_str_t *path)
{
    cJSON  *kw, *t;

    kw = k->type;

    if ((ngx_http_mcp_schema_is(kw, cJSON_String)
         || ngx_http_mcp_schema_is(kw, cJSON_Array))
        && (k->types & ngx_http_mcp_schema_value_type(v)) == 0)
    {
        if (ngx_http_mcp_schema_is(kw, cJSON_String)) {
            return ngx_http_mcp_schema_fail(ctx, path, "must be of type %s",
                                            kw->valuestring);
        }

        return ngx_http_mcp_schema_fail(ctx, path, "has the wrong type");
    }

    kw = k->enum_;

    if (ngx_http_mcp_schema_is(kw, cJSON_Array)) {
        cJSON_ArrayForEach(t, kw) {
            if (ngx_http_mcp_schema_equal(t, v)) {
                break;
            }
        }

        if (t == NULL) {
            return ngx_http_mcp_schema_fail(ctx, path,
                                            "must be one of the enum values");
        }
    }

    kw = k->const_;

    if (kw != NULL && !ngx_http_mcp_schema_equal(kw, v)) {
        return ngx_http_mcp_schema_fail(ctx, path,
                                        "must equal the const value");
    }

    return NGX_OK;
}


/* the T_* bits of a value's type: a number that is an integer has two */

static ngx_uint_t
ngx_http_mcp_schema_value_type(cJSON *v)
{
    double  d;

    switch (v->type & 0xff) {

    case cJSON_NULL:
        return NGX_HTTP_MCP_SCHEMA_T_NULL;

    case cJSON_True:
    case cJSON_False:
        return NGX_HTTP_MCP_SCHEMA_T_BOOLEAN;

    case cJSON_Object:
        return NGX_HTTP_MCP_SCHEMA_T_OBJECT;

    case cJSON_Array:
        return NGX_HTTP_MCP_SCHEMA_T_ARRAY;

    case cJSON_String:
        return NGX_HTTP_MCP_SCHEMA_T_STRING;

    case cJSON_Number:
        d = v->valuedouble;

        return (isfinite(d) && floor(d) == d)
               ? NGX_HTTP_MCP_SCHEMA_T_NUMBER | NGX_HTTP_MCP_SCHEMA_T_INTEGER
               : NGX_HTTP_MCP_SCHEMA_T_NUMBER;

    default:
        return 0;
    }
}


/*
 * JSON equality: numbers by value exactly (cJSON_Compare() lets numbers
 * a rounding apart be equal, and 2^53 - 1 is not 2^53), objects whatever
 * their members' order.
 */

ngx_uint_t
ngx_http_mcp_schema_equal(cJSON *a, cJSON *b)
{
    cJSON  *x, *y;

    if ((a->type & 0xff) != (b->type & 0xff)) {
        return 0;
    }

    switch (a->type & 0xff) {

    case cJSON_Number:
        return a->valuedouble == b->valuedouble;

    case cJSON_String:
        return ngx_strcmp(a->valuestring, b->valuestring) == 0;

    case cJSON_Array:
        for (x = a->child, y = b->child; x && y; x = x->next, y = y->next) {
            if (!ngx_http_mcp_schema_equal(x, y)) {
                return 0;
            }
        }

        return x == NULL && y == NULL;

    case cJSON_Object:
        if (cJSON_GetArraySize(a) != cJSON_GetArraySize(b)) {
            return 0;
        }

        for (x = a->child; x; x = x->next) {
            y = ngx_http_mcp_json_get(b, x->string);

            if (y == NULL || !ngx_http_mcp_schema_equal(x, y)) {
                return 0;
            }
        }

        return 1;

    default:
        /* true, false, null: the type says it all */
        return 1;
    }
}


ngx_int_t
ngx_http_mcp_schema_number(ngx_http_mcp_schema_ctx_t *ctx,
    ngx_http_mcp_schema_kw_t *k,
    cJSON *v, ngx_str_t *path)
{
    char     nbuf[NGX_HTTP_MCP_SCHEMA_NUM_LEN];
    cJSON   *kw;
    double   d, q;

    d = v->valuedouble;

    kw = k->minimum;

    if (ngx_http_mcp_schema_is(kw, cJSON_Number) && d < kw->valuedouble) {
        return ngx_http_mcp_schema_fail(ctx, path, "must be >= %s",
                                        ngx_http_mcp_schema_num(nbuf,
                                            kw->valuedouble));
    }

    kw = k->maximum;

    if (ngx_http_mcp_schema_is(kw, cJSON_Number) && d > kw->valuedouble) {
        return ngx_http_mcp_schema_fail(ctx, path, "must be <= %s",
                                        ngx_http_mcp_schema_num(nbuf,
                                            kw->valuedouble));
    }

    kw = k->exclusive_minimum;

    if (ngx_http_mcp_schema_is(kw, cJSON_Number) && d <= kw->valuedouble) {
        return ngx_http_mcp_schema_fail(ctx, path, "must be > %s",
                                        ngx_http_mcp_schema_num(nbuf,
                                            kw->valuedouble));
    }

    kw = k->exclusive_maximum;

    if (ngx_http_mcp_schema_is(kw, cJSON_Number) && d >= kw->valuedouble) {
        return ngx_http_mcp_schema_fail(ctx, path, "must be < %s",
                                        ngx_http_mcp_schema_num(nbuf,
                                            kw->valuedouble));
    }

    kw = k->multiple_of;

    if (ngx_http_mcp_schema_is(kw, cJSON_Number) && kw->valuedouble > 0) {
        q = d / kw->valuedouble;

        /*
         * Past a double's range the quotient is lost; d is then an
         * integer, a multiple of any 1/n (no fmod(): the module links
         * no libm).
         */
        if (!isfinite(q) && isfinite(d)) {
            q = 1 / kw->valuedouble;
            q = (isfinite(q) && floor(q) == q) ? 0 : 0.5;
        }

        if (!isfinite(q) || fabs(q - floor(q + 0.5)) > 1e-9) {
            return ngx_http_mcp_schema_fail(ctx, path,
                                            "must be a multiple of %s",
                                        ngx_http_mcp_schema_num(nbuf,
                                            kw->valuedouble));
        }
    }

    return NGX_OK;
}


ngx_int_t
ngx_http_mcp_schema_string(ngx_http_mcp_schema_ctx_t *ctx,
    ngx_http_mcp_schema_kw_t *k,
    cJSON *v, ngx_str_t *path)
{
    char        nbuf[NGX_HTTP_MCP_SCHEMA_NUM_LEN];
    u_char     *p;
    cJSON      *kw;
    ngx_int_t   rc;
    ngx_uint_t  n;

    kw = k->format;

    if (ctx->format && ngx_http_mcp_schema_is(kw, cJSON_String)) {
        rc = ngx_http_mcp_schema_format(ctx->pool, kw->valuestring,
                                        v->valuestring);

        if (rc == NGX_DECLINED) {
            return ngx_http_mcp_schema_fail(ctx, path, "must be a valid %s",
                                            kw->valuestring);
        }

        if (rc != NGX_OK) {
            ctx->failed = 1;
            return NGX_ERROR;
        }
    }

    if (ctx->novalidation) {
        return NGX_OK;
    }

    /* lengths count code points */
    n = 0;

    for (p = (u_char *) v->valuestring; *p; p++) {
        n += ((*p & 0xc0) != 0x80);
    }

    kw = k->min_length;

    if (ngx_http_mcp_schema_is(kw, cJSON_Number)
        && (double) n < kw->valuedouble)
    {
        return ngx_http_mcp_schema_fail(ctx, path,
                                        "must be at least %s characters "
                                        "long",
                                        ngx_http_mcp_schema_num(nbuf,
                                            kw->valuedouble));
    }

    kw = k->max_length;

    if (ngx_http_mcp_schema_is(kw, cJSON_Number)
        && (double) n > kw->valuedouble)
    {
        return ngx_http_mcp_schema_fail(ctx, path,
                                        "must be at most %s characters "
                                        "long",
                                        ngx_http_mcp_schema_num(nbuf,
                                            kw->valuedouble));
    }

    kw = k->pattern;

    if (ngx_http_mcp_schema_is(kw, cJSON_String)) {
        rc = ngx_http_mcp_schema_match(ctx, kw->valuestring, v->valuestring);

        if (rc == NGX_DECLINED) {
            return ngx_http_mcp_schema_fail(ctx, path,
                                            "must match the pattern \"%s\"",
                                            kw->valuestring);
        }

        if (rc != NGX_OK) {
            return rc;
        }
    }

    return NGX_OK;
}


/* a new record of the members or items of v that keywords evaluated */

ngx_http_mcp_schema_eval_t *
ngx_http_mcp_schema_eval(ngx_http_mcp_schema_ctx_t *ctx, cJSON *v)
{
    ngx_http_mcp_schema_eval_t  *ev;

    ev = ngx_pcalloc(ctx->pool, sizeof(ngx_http_mcp_schema_eval_t));
    if (ev == NULL) {
        ctx->failed = 1;
        return NULL;
    }

    ev->n = cJSON_GetArraySize(v);

    return ev;
}


/* a branch's own record where annotations are kept, NULL where not */

ngx_int_t
ngx_http_mcp_schema_branch(ngx_http_mcp_schema_ctx_t *ctx,
    ngx_http_mcp_schema_eval_t *ev, cJSON *v,
    ngx_http_mcp_schema_eval_t **branch)
{
    *branch = NULL;

    if (ev == NULL) {
        return NGX_OK;
    }

    *branch = ngx_http_mcp_schema_eval(ctx, v);

    return (*branch != NULL) ? NGX_OK : NGX_ERROR;
}


ngx_int_t
ngx_http_mcp_schema_mark(ngx_http_mcp_schema_ctx_t *ctx,
    ngx_http_mcp_schema_eval_t *ev, ngx_uint_t i)
{
    if (ev->bits == NULL) {
        ev->bits = ngx_pcalloc(ctx->pool, ev->n / 8 + 1);
        if (ev->bits == NULL) {
            ctx->failed = 1;
            return NGX_ERROR;
        }
    }

    if (i < ev->n) {
        ev->bits[i / 8] |= (u_char) (1 << (i % 8));
    }

    return NGX_OK;
}


ngx_uint_t
ngx_http_mcp_schema_marked(ngx_http_mcp_schema_eval_t *ev, ngx_uint_t i)
{
    return ev->all
           || (ev->bits != NULL && i < ev->n
               && (ev->bits[i / 8] & (1 << (i % 8))));
}


ngx_int_t
ngx_http_mcp_schema_merge(ngx_http_mcp_schema_ctx_t *ctx,
    ngx_http_mcp_schema_eval_t *dst, ngx_http_mcp_schema_eval_t *src)
{
    ngx_uint_t  i;

    dst->all |= src->all;

    if (src->bits == NULL || dst->all) {
        return NGX_OK;
    }

    if (dst->bits == NULL) {
        dst->bits = ngx_pcalloc(ctx->pool, dst->n / 8 + 1);
        if (dst->bits == NULL) {
            ctx->failed = 1;
            return NGX_ERROR;
        }
    }

    for (i = 0; i < ngx_min(dst->n, src->n) / 8 + 1; i++) {
        dst->bits[i] |= src->bits[i];
    }

    return NGX_OK;
}


ngx_int_t
ngx_http_mcp_schema_match(ngx_http_mcp_schema_ctx_t *ctx,
    const char *pattern, const char *s)
{
    ngx_int_t                     rc;
    ngx_str_t                     subject;
    ngx_uint_t                    i;
    ngx_regex_t                  *regex;
    ngx_http_mcp_schema_regex_t  *re;

    /* patternProperties tries each pattern on every member: once each */
    for (i = 0; i < ctx->nregex; i++) {
        if (ctx->regex[i].pattern == pattern) {
            break;
        }
    }

    if (i < ctx->nregex) {
        regex = ctx->regex[i].regex;

    } else {
        rc = ngx_http_mcp_schema_regex(ctx->pool, pattern, &regex);

        if (rc != NGX_OK) {
            /* the tool's schema is broken: the call cannot be checked */
            ctx->failed = 1;
            return NGX_ERROR;
        }

        re = &ctx->regex[ctx->nregex % NGX_HTTP_MCP_SCHEMA_REGEX_N];
        re->pattern = pattern;
        re->regex = regex;

        if (ctx->nregex < NGX_HTTP_MCP_SCHEMA_REGEX_N) {
            ctx->nregex++;
        }
    }

    subject.data = (u_char *) s;
    subject.len = ngx_strlen(s);

    rc = ngx_regex_exec(regex, &subject, NULL, 0);

    if (rc == NGX_REGEX_NO_MATCHED) {
        return NGX_DECLINED;
    }

    if (rc < 0) {
        /* match limits hit, or bytes that are no UTF-8: refuse */
        return NGX_DECLINED;
    }

    return NGX_OK;
}


ngx_str_t *
ngx_http_mcp_schema_path(ngx_http_mcp_schema_ctx_t *ctx, ngx_str_t *path,
    const char *name, ngx_uint_t index)
{
    size_t      len;
    ngx_str_t  *child;

    child = ngx_palloc(ctx->pool, sizeof(ngx_str_t));
    if (child == NULL) {
        ctx->failed = 1;
        return NULL;
    }

    /* long paths are cut: the message stays readable */
    len = path->len + (name ? ngx_min(ngx_strlen(name), 64) + 1
                            : NGX_INT_T_LEN + 2);

    child->data = ngx_pnalloc(ctx->pool, len);
    if (child->data == NULL) {
        ctx->failed = 1;
        return NULL;
    }

    if (name != NULL) {
        child->len = ngx_snprintf(child->data, len, "%V.%*s", path,
                                  ngx_min(ngx_strlen(name), 64), name)
                     - child->data;

    } else {
        child->len = ngx_snprintf(child->data, len, "%V[%ui]", path, index)
                     - child->data;
    }

    return child;
}


ngx_int_t
ngx_http_mcp_schema_fail(ngx_http_mcp_schema_ctx_t *ctx, ngx_str_t *path,
    const char *fmt, ...)
{
    u_char   *p, *last, *c;
    va_list   args;

    if (ctx->quiet) {
        return NGX_DECLINED;
    }

    if (ctx->error == NULL) {
        ctx->error = ngx_pnalloc(ctx->pool, NGX_HTTP_MCP_SCHEMA_ERROR_LEN);
        if (ctx->error == NULL) {
            ctx->failed = 1;
            return NGX_ERROR;
        }
    }

    last = ctx->error + NGX_HTTP_MCP_SCHEMA_ERROR_LEN - 1;

    p = ngx_slprintf(ctx->error, last, "%V: ", path);

    va_start(args, fmt);
    p = ngx_vslprintf(p, last, fmt, args);
    va_end(args);

    *p = '\0';

    /* names come from the client and the schema: no control bytes in logs */
    for (c = ctx->error; c < p; c++) {
        if (*c < 0x20 || *c == 0x7f) {
            *c = '?';
        }
    }

    return NGX_DECLINED;
}


/* a number of a schema as people write it: 0, 2.5, 1e+100 */

char *
ngx_http_mcp_schema_num(char *buf, double d)
{
    (void) snprintf(buf, NGX_HTTP_MCP_SCHEMA_NUM_LEN, "%.15g", d);

    return buf;
}
