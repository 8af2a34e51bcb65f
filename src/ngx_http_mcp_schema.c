
/*
 * JSON Schema 2020-12 validation of tool arguments, over cJSON trees;
 * pure (a pool, two trees, ngx_regex for "pattern").  Keywords: type,
 * enum, const, minimum, maximum, exclusiveMinimum, exclusiveMaximum,
 * multipleOf, minLength, maxLength, pattern, properties,
 * patternProperties, additionalProperties, required, minProperties,
 * maxProperties, items, prefixItems, minItems, maxItems, uniqueItems,
 * allOf, anyOf, oneOf, not, if/then/else, $ref (local JSON pointers and
 * anchors).  Other keywords are annotations here and pass; a $ref to
 * another document passes too.  The first failure is reported, with the
 * path of the failing value.
 */


#include <ngx_config.h>
#include <ngx_core.h>
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>

#include "ngx_http_mcp_auth.h"
#include "ngx_http_mcp_json.h"


#define NGX_HTTP_MCP_SCHEMA_MAX_DEPTH  64

/*
 * Subschemas checked for one instance, at most: a $ref back into
 * anyOf, oneOf or not re-checks the same value on every branch, and 64
 * levels of two branches are 2^64 checks.  A million covers instances of
 * the largest request many times over and bounds a worker's time at a
 * fraction of a second.
 */
#define NGX_HTTP_MCP_SCHEMA_MAX_STEPS  1000000
#define NGX_HTTP_MCP_SCHEMA_ERROR_LEN  256
#define NGX_HTTP_MCP_SCHEMA_NUM_LEN    32


typedef struct {
    ngx_pool_t                *pool;
    cJSON                     *root;
    u_char                    *error;
    ngx_uint_t                 depth;
    ngx_uint_t                 steps;       /* subschemas checked */
    ngx_uint_t                 exhausted;   /* past MAX_STEPS: refused,
                                               whatever a not makes of it */
    ngx_uint_t                 quiet;       /* inside anyOf, oneOf, not */
    ngx_int_t                  failed;      /* NGX_ERROR seen */
} ngx_http_mcp_schema_ctx_t;


/* a schema object's keywords, found in one walk of its members */
typedef struct {
    cJSON                     *ref;
    cJSON                     *additional_properties;
    cJSON                     *all_of;
    cJSON                     *any_of;
    cJSON                     *const_;
    cJSON                     *else_;
    cJSON                     *enum_;
    cJSON                     *exclusive_maximum;
    cJSON                     *exclusive_minimum;
    cJSON                     *if_;
    cJSON                     *items;
    cJSON                     *max_items;
    cJSON                     *max_length;
    cJSON                     *max_properties;
    cJSON                     *maximum;
    cJSON                     *min_items;
    cJSON                     *min_length;
    cJSON                     *min_properties;
    cJSON                     *minimum;
    cJSON                     *multiple_of;
    cJSON                     *not_;
    cJSON                     *one_of;
    cJSON                     *pattern;
    cJSON                     *pattern_properties;
    cJSON                     *prefix_items;
    cJSON                     *properties;
    cJSON                     *required;
    cJSON                     *then;
    cJSON                     *type;
    cJSON                     *unique_items;
} ngx_http_mcp_schema_kw_t;


typedef struct {
    const char                *name;
    size_t                     offset;
} ngx_http_mcp_schema_keyword_t;


static ngx_int_t ngx_http_mcp_schema_check(ngx_http_mcp_schema_ctx_t *ctx,
    cJSON *schema, cJSON *v, ngx_str_t *path);
static void ngx_http_mcp_schema_keywords(cJSON *schema,
    ngx_http_mcp_schema_kw_t *k);
static ngx_int_t ngx_http_mcp_schema_type(ngx_http_mcp_schema_ctx_t *ctx,
    ngx_http_mcp_schema_kw_t *k, cJSON *v, ngx_str_t *path);
static ngx_uint_t ngx_http_mcp_schema_is_type(cJSON *v, const char *type);
static ngx_int_t ngx_http_mcp_schema_number(ngx_http_mcp_schema_ctx_t *ctx,
    ngx_http_mcp_schema_kw_t *k, cJSON *v, ngx_str_t *path);
static ngx_int_t ngx_http_mcp_schema_string(ngx_http_mcp_schema_ctx_t *ctx,
    ngx_http_mcp_schema_kw_t *k, cJSON *v, ngx_str_t *path);
static ngx_int_t ngx_http_mcp_schema_object(ngx_http_mcp_schema_ctx_t *ctx,
    ngx_http_mcp_schema_kw_t *k, cJSON *v, ngx_str_t *path);
static ngx_int_t ngx_http_mcp_schema_array(ngx_http_mcp_schema_ctx_t *ctx,
    ngx_http_mcp_schema_kw_t *k, cJSON *v, ngx_str_t *path);
static ngx_int_t ngx_http_mcp_schema_combine(ngx_http_mcp_schema_ctx_t *ctx,
    ngx_http_mcp_schema_kw_t *k, cJSON *v, ngx_str_t *path);
static ngx_int_t ngx_http_mcp_schema_try(ngx_http_mcp_schema_ctx_t *ctx,
    cJSON *schema, cJSON *v, ngx_str_t *path);
static cJSON *ngx_http_mcp_schema_ref(ngx_http_mcp_schema_ctx_t *ctx,
    const char *ref);
static cJSON *ngx_http_mcp_schema_anchor(cJSON *schema, const char *name);
static ngx_int_t ngx_http_mcp_schema_match(ngx_http_mcp_schema_ctx_t *ctx,
    const char *pattern, const char *s);
static ngx_str_t *ngx_http_mcp_schema_path(ngx_http_mcp_schema_ctx_t *ctx,
    ngx_str_t *path, const char *name, ngx_uint_t index);
static ngx_int_t ngx_http_mcp_schema_fail(ngx_http_mcp_schema_ctx_t *ctx,
    ngx_str_t *path, const char *fmt, ...);
static char *ngx_http_mcp_schema_num(char *buf, double d);


/* sorted by name (strcmp), for the binary search */
static ngx_http_mcp_schema_keyword_t  ngx_http_mcp_schema_keywords_all[] = {
    { "$ref", offsetof(ngx_http_mcp_schema_kw_t, ref) },
    { "additionalProperties", offsetof(ngx_http_mcp_schema_kw_t, additional_properties) },
    { "allOf", offsetof(ngx_http_mcp_schema_kw_t, all_of) },
    { "anyOf", offsetof(ngx_http_mcp_schema_kw_t, any_of) },
    { "const", offsetof(ngx_http_mcp_schema_kw_t, const_) },
    { "else", offsetof(ngx_http_mcp_schema_kw_t, else_) },
    { "enum", offsetof(ngx_http_mcp_schema_kw_t, enum_) },
    { "exclusiveMaximum", offsetof(ngx_http_mcp_schema_kw_t, exclusive_maximum) },
    { "exclusiveMinimum", offsetof(ngx_http_mcp_schema_kw_t, exclusive_minimum) },
    { "if", offsetof(ngx_http_mcp_schema_kw_t, if_) },
    { "items", offsetof(ngx_http_mcp_schema_kw_t, items) },
    { "maxItems", offsetof(ngx_http_mcp_schema_kw_t, max_items) },
    { "maxLength", offsetof(ngx_http_mcp_schema_kw_t, max_length) },
    { "maxProperties", offsetof(ngx_http_mcp_schema_kw_t, max_properties) },
    { "maximum", offsetof(ngx_http_mcp_schema_kw_t, maximum) },
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
    { "required", offsetof(ngx_http_mcp_schema_kw_t, required) },
    { "then", offsetof(ngx_http_mcp_schema_kw_t, then) },
    { "type", offsetof(ngx_http_mcp_schema_kw_t, type) },
    { "uniqueItems", offsetof(ngx_http_mcp_schema_kw_t, unique_items) },
};


ngx_int_t
ngx_http_mcp_schema_validate(ngx_pool_t *pool, cJSON *schema,
    cJSON *instance, u_char **error)
{
    ngx_int_t                   rc;
    ngx_str_t                   path = ngx_string("arguments");
    ngx_http_mcp_schema_ctx_t   ctx;

    ngx_memzero(&ctx, sizeof(ngx_http_mcp_schema_ctx_t));

    ctx.pool = pool;
    ctx.root = schema;

    if (schema == NULL) {
        return NGX_OK;
    }

    rc = ngx_http_mcp_schema_check(&ctx, schema, instance, &path);

    if (ctx.failed) {
        return NGX_ERROR;
    }

    if (ctx.exhausted) {
        /* the verdict of no branch counts: the checks were cut short */
        ctx.quiet = 0;
        rc = ngx_http_mcp_schema_fail(&ctx, &path, "takes too many checks "
                                      "against the schema");
        if (ctx.failed) {
            return NGX_ERROR;
        }
    }

    *error = ctx.error;

    return rc;
}


static ngx_int_t
ngx_http_mcp_schema_check(ngx_http_mcp_schema_ctx_t *ctx, cJSON *schema,
    cJSON *v, ngx_str_t *path)
{
    cJSON                     *kw, *target;
    ngx_int_t                  rc;
    ngx_http_mcp_schema_kw_t   k;

    if (cJSON_IsTrue(schema)) {
        return NGX_OK;
    }

    if (cJSON_IsFalse(schema)) {
        return ngx_http_mcp_schema_fail(ctx, path, "is not allowed");
    }

    if (!cJSON_IsObject(schema)) {
        return NGX_OK;
    }

    if (ctx->exhausted || ++ctx->steps > NGX_HTTP_MCP_SCHEMA_MAX_STEPS) {
        ctx->exhausted = 1;
        return NGX_DECLINED;
    }

    if (ctx->depth++ > NGX_HTTP_MCP_SCHEMA_MAX_DEPTH) {
        ctx->depth--;
        return ngx_http_mcp_schema_fail(ctx, path, "nests too deep for "
                                        "the schema");
    }

    rc = NGX_OK;

    ngx_http_mcp_schema_keywords(schema, &k);

    kw = k.ref;

    if (cJSON_IsString(kw)) {
        target = ngx_http_mcp_schema_ref(ctx, kw->valuestring);

        if (target != NULL) {
            rc = ngx_http_mcp_schema_check(ctx, target, v, path);
        }
    }

    if (rc == NGX_OK) {
        rc = ngx_http_mcp_schema_type(ctx, &k, v, path);
    }

    if (rc == NGX_OK && cJSON_IsNumber(v)) {
        rc = ngx_http_mcp_schema_number(ctx, &k, v, path);
    }

    if (rc == NGX_OK && cJSON_IsString(v)) {
        rc = ngx_http_mcp_schema_string(ctx, &k, v, path);
    }

    if (rc == NGX_OK && cJSON_IsObject(v)) {
        rc = ngx_http_mcp_schema_object(ctx, &k, v, path);
    }

    if (rc == NGX_OK && cJSON_IsArray(v)) {
        rc = ngx_http_mcp_schema_array(ctx, &k, v, path);
    }

    if (rc == NGX_OK) {
        rc = ngx_http_mcp_schema_combine(ctx, &k, v, path);
    }

    ctx->depth--;

    return rc;
}


/*
 * A schema object's keywords in one walk of its members, instead of a
 * walk of them for each of the thirty keywords: each member's name is
 * looked up in the sorted table.  The first member of a name wins, as
 * ngx_http_mcp_json_get() would have it.
 */

static void
ngx_http_mcp_schema_keywords(cJSON *schema, ngx_http_mcp_schema_kw_t *k)
{
    cJSON       *m, **slot;
    ngx_int_t    rc;
    ngx_uint_t   lo, hi, mid;

    ngx_memzero(k, sizeof(ngx_http_mcp_schema_kw_t));

    for (m = schema->child; m != NULL; m = m->next) {

        if (m->string == NULL) {
            continue;
        }

        lo = 0;
        hi = sizeof(ngx_http_mcp_schema_keywords_all)
             / sizeof(ngx_http_mcp_schema_keyword_t);

        while (lo < hi) {
            mid = (lo + hi) / 2;
            rc = ngx_strcmp(m->string,
                            ngx_http_mcp_schema_keywords_all[mid].name);

            if (rc == 0) {
                slot = (cJSON **) ((u_char *) k
                          + ngx_http_mcp_schema_keywords_all[mid].offset);

                if (*slot == NULL) {
                    *slot = m;
                }

                break;
            }

            if (rc < 0) {
                hi = mid;

            } else {
                lo = mid + 1;
            }
        }
    }
}


/* type, enum, const */

static ngx_int_t
ngx_http_mcp_schema_type(ngx_http_mcp_schema_ctx_t *ctx,
    ngx_http_mcp_schema_kw_t *k,
    cJSON *v, ngx_str_t *path)
{
    cJSON  *kw, *t;

    kw = k->type;

    if (cJSON_IsString(kw)) {
        if (!ngx_http_mcp_schema_is_type(v, kw->valuestring)) {
            return ngx_http_mcp_schema_fail(ctx, path, "must be of type %s",
                                            kw->valuestring);
        }

    } else if (cJSON_IsArray(kw)) {
        cJSON_ArrayForEach(t, kw) {
            if (cJSON_IsString(t)
                && ngx_http_mcp_schema_is_type(v, t->valuestring))
            {
                break;
            }
        }

        if (t == NULL) {
            return ngx_http_mcp_schema_fail(ctx, path, "has the wrong type");
        }
    }

    kw = k->enum_;

    if (cJSON_IsArray(kw)) {
        cJSON_ArrayForEach(t, kw) {
            if (cJSON_Compare(t, v, 1)) {
                break;
            }
        }

        if (t == NULL) {
            return ngx_http_mcp_schema_fail(ctx, path,
                                            "must be one of the enum values");
        }
    }

    kw = k->const_;

    if (kw != NULL && !cJSON_Compare(kw, v, 1)) {
        return ngx_http_mcp_schema_fail(ctx, path,
                                        "must equal the const value");
    }

    return NGX_OK;
}


static ngx_uint_t
ngx_http_mcp_schema_is_type(cJSON *v, const char *type)
{
    double  d;

    switch (type[0]) {

    case 'o':
        return cJSON_IsObject(v) && ngx_strcmp(type, "object") == 0;

    case 'a':
        return cJSON_IsArray(v) && ngx_strcmp(type, "array") == 0;

    case 's':
        return cJSON_IsString(v) && ngx_strcmp(type, "string") == 0;

    case 'b':
        return cJSON_IsBool(v) && ngx_strcmp(type, "boolean") == 0;

    case 'n':
        if (ngx_strcmp(type, "null") == 0) {
            return cJSON_IsNull(v);
        }

        return cJSON_IsNumber(v) && ngx_strcmp(type, "number") == 0;

    case 'i':
        if (!cJSON_IsNumber(v) || ngx_strcmp(type, "integer") != 0) {
            return 0;
        }

        d = v->valuedouble;

        return isfinite(d) && floor(d) == d;

    default:
        return 0;
    }
}


static ngx_int_t
ngx_http_mcp_schema_number(ngx_http_mcp_schema_ctx_t *ctx,
    ngx_http_mcp_schema_kw_t *k,
    cJSON *v, ngx_str_t *path)
{
    char     nbuf[NGX_HTTP_MCP_SCHEMA_NUM_LEN];
    cJSON   *kw;
    double   d, q;

    d = v->valuedouble;

    kw = k->minimum;

    if (cJSON_IsNumber(kw) && d < kw->valuedouble) {
        return ngx_http_mcp_schema_fail(ctx, path, "must be >= %s",
                                        ngx_http_mcp_schema_num(nbuf,
                                            kw->valuedouble));
    }

    kw = k->maximum;

    if (cJSON_IsNumber(kw) && d > kw->valuedouble) {
        return ngx_http_mcp_schema_fail(ctx, path, "must be <= %s",
                                        ngx_http_mcp_schema_num(nbuf,
                                            kw->valuedouble));
    }

    kw = k->exclusive_minimum;

    if (cJSON_IsNumber(kw) && d <= kw->valuedouble) {
        return ngx_http_mcp_schema_fail(ctx, path, "must be > %s",
                                        ngx_http_mcp_schema_num(nbuf,
                                            kw->valuedouble));
    }

    kw = k->exclusive_maximum;

    if (cJSON_IsNumber(kw) && d >= kw->valuedouble) {
        return ngx_http_mcp_schema_fail(ctx, path, "must be < %s",
                                        ngx_http_mcp_schema_num(nbuf,
                                            kw->valuedouble));
    }

    kw = k->multiple_of;

    if (cJSON_IsNumber(kw) && kw->valuedouble > 0) {
        q = d / kw->valuedouble;

        if (!isfinite(q) || fabs(q - floor(q + 0.5)) > 1e-9) {
            return ngx_http_mcp_schema_fail(ctx, path,
                                            "must be a multiple of %s",
                                        ngx_http_mcp_schema_num(nbuf,
                                            kw->valuedouble));
        }
    }

    return NGX_OK;
}


static ngx_int_t
ngx_http_mcp_schema_string(ngx_http_mcp_schema_ctx_t *ctx,
    ngx_http_mcp_schema_kw_t *k,
    cJSON *v, ngx_str_t *path)
{
    char        nbuf[NGX_HTTP_MCP_SCHEMA_NUM_LEN];
    u_char     *p;
    cJSON      *kw;
    ngx_int_t   rc;
    ngx_uint_t  n;

    /* lengths count code points */
    n = 0;

    for (p = (u_char *) v->valuestring; *p; p++) {
        n += ((*p & 0xc0) != 0x80);
    }

    kw = k->min_length;

    if (cJSON_IsNumber(kw) && (double) n < kw->valuedouble) {
        return ngx_http_mcp_schema_fail(ctx, path,
                                        "must be at least %s characters "
                                        "long",
                                        ngx_http_mcp_schema_num(nbuf,
                                            kw->valuedouble));
    }

    kw = k->max_length;

    if (cJSON_IsNumber(kw) && (double) n > kw->valuedouble) {
        return ngx_http_mcp_schema_fail(ctx, path,
                                        "must be at most %s characters "
                                        "long",
                                        ngx_http_mcp_schema_num(nbuf,
                                            kw->valuedouble));
    }

    kw = k->pattern;

    if (cJSON_IsString(kw)) {
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


static ngx_int_t
ngx_http_mcp_schema_object(ngx_http_mcp_schema_ctx_t *ctx,
    ngx_http_mcp_schema_kw_t *k,
    cJSON *v, ngx_str_t *path)
{
    cJSON       *props, *pprops, *addl, *req, *kw, *item, *sub, *pp;
    ngx_int_t    rc;
    ngx_str_t   *child;
    ngx_uint_t   n, matched;

    props = k->properties;
    pprops = k->pattern_properties;
    addl = k->additional_properties;
    req = k->required;

    /* the entries of an array have no names to compile */
    if (!cJSON_IsObject(pprops)) {
        pprops = NULL;
    }

    cJSON_ArrayForEach(kw, req) {
        if (cJSON_IsString(kw)
            && ngx_http_mcp_json_get(v, kw->valuestring) == NULL)
        {
            return ngx_http_mcp_schema_fail(ctx, path,
                                            "\"%s\" is required",
                                            kw->valuestring);
        }
    }

    n = 0;

    cJSON_ArrayForEach(item, v) {
        n++;
        matched = 0;
        child = NULL;

        sub = cJSON_IsObject(props)
              ? ngx_http_mcp_json_get(props, item->string)
              : NULL;

        if (sub != NULL) {
            matched = 1;
            child = ngx_http_mcp_schema_path(ctx, path, item->string, 0);

            if (child == NULL) {
                return NGX_ERROR;
            }

            rc = ngx_http_mcp_schema_check(ctx, sub, item, child);
            if (rc != NGX_OK) {
                return rc;
            }
        }

        cJSON_ArrayForEach(pp, pprops) {
            rc = ngx_http_mcp_schema_match(ctx, pp->string, item->string);

            if (rc == NGX_DECLINED) {
                continue;
            }

            if (rc != NGX_OK) {
                return rc;
            }

            matched = 1;

            if (child == NULL) {
                child = ngx_http_mcp_schema_path(ctx, path, item->string, 0);

                if (child == NULL) {
                    return NGX_ERROR;
                }
            }

            rc = ngx_http_mcp_schema_check(ctx, pp, item, child);
            if (rc != NGX_OK) {
                return rc;
            }
        }

        if (matched || addl == NULL) {
            continue;
        }

        if (cJSON_IsFalse(addl)) {
            return ngx_http_mcp_schema_fail(ctx, path,
                                            "unknown property \"%s\"",
                                            item->string);
        }

        child = ngx_http_mcp_schema_path(ctx, path, item->string, 0);
        if (child == NULL) {
            return NGX_ERROR;
        }

        rc = ngx_http_mcp_schema_check(ctx, addl, item, child);
        if (rc != NGX_OK) {
            return rc;
        }
    }

    kw = k->min_properties;

    if (cJSON_IsNumber(kw) && (double) n < kw->valuedouble) {
        return ngx_http_mcp_schema_fail(ctx, path, "has too few properties");
    }

    kw = k->max_properties;

    if (cJSON_IsNumber(kw) && (double) n > kw->valuedouble) {
        return ngx_http_mcp_schema_fail(ctx, path,
                                        "has too many properties");
    }

    return NGX_OK;
}


static ngx_int_t
ngx_http_mcp_schema_array(ngx_http_mcp_schema_ctx_t *ctx,
    ngx_http_mcp_schema_kw_t *k,
    cJSON *v, ngx_str_t *path)
{
    char         nbuf[NGX_HTTP_MCP_SCHEMA_NUM_LEN];
    cJSON       *items, *prefix, *kw, *item, *p, *other;
    ngx_int_t    rc;
    ngx_str_t   *child;
    ngx_uint_t   i, n;

    items = k->items;
    prefix = k->prefix_items;

    p = cJSON_IsArray(prefix) ? prefix->child : NULL;
    i = 0;

    cJSON_ArrayForEach(item, v) {
        kw = (p != NULL) ? p : items;

        if (kw != NULL) {
            child = ngx_http_mcp_schema_path(ctx, path, NULL, i);
            if (child == NULL) {
                return NGX_ERROR;
            }

            rc = ngx_http_mcp_schema_check(ctx, kw, item, child);
            if (rc != NGX_OK) {
                return rc;
            }
        }

        if (p != NULL) {
            p = p->next;
        }

        i++;
    }

    n = i;

    kw = k->min_items;

    if (cJSON_IsNumber(kw) && (double) n < kw->valuedouble) {
        return ngx_http_mcp_schema_fail(ctx, path,
                                        "must have at least %s items",
                                        ngx_http_mcp_schema_num(nbuf,
                                            kw->valuedouble));
    }

    kw = k->max_items;

    if (cJSON_IsNumber(kw) && (double) n > kw->valuedouble) {
        return ngx_http_mcp_schema_fail(ctx, path,
                                        "must have at most %s items",
                                        ngx_http_mcp_schema_num(nbuf,
                                            kw->valuedouble));
    }

    kw = k->unique_items;

    if (cJSON_IsTrue(kw)) {
        cJSON_ArrayForEach(item, v) {
            for (other = item->next; other; other = other->next) {
                if (cJSON_Compare(item, other, 1)) {
                    return ngx_http_mcp_schema_fail(ctx, path,
                                                    "must have unique "
                                                    "items");
                }
            }
        }
    }

    return NGX_OK;
}


/* allOf, anyOf, oneOf, not, if/then/else */

static ngx_int_t
ngx_http_mcp_schema_combine(ngx_http_mcp_schema_ctx_t *ctx,
    ngx_http_mcp_schema_kw_t *k,
    cJSON *v, ngx_str_t *path)
{
    cJSON       *kw, *sub;
    ngx_int_t    rc;
    ngx_uint_t   n;

    kw = k->all_of;

    cJSON_ArrayForEach(sub, kw) {
        rc = ngx_http_mcp_schema_check(ctx, sub, v, path);
        if (rc != NGX_OK) {
            return rc;
        }
    }

    kw = k->any_of;

    if (cJSON_IsArray(kw)) {
        rc = NGX_DECLINED;

        cJSON_ArrayForEach(sub, kw) {
            rc = ngx_http_mcp_schema_try(ctx, sub, v, path);

            if (rc != NGX_DECLINED) {
                break;
            }
        }

        if (rc == NGX_DECLINED) {
            return ngx_http_mcp_schema_fail(ctx, path, "must match at least "
                                            "one schema of anyOf");
        }

        if (rc != NGX_OK) {
            return rc;
        }
    }

    kw = k->one_of;

    if (cJSON_IsArray(kw)) {
        n = 0;

        cJSON_ArrayForEach(sub, kw) {
            rc = ngx_http_mcp_schema_try(ctx, sub, v, path);

            if (rc == NGX_ERROR) {
                return rc;
            }

            n += (rc == NGX_OK);
        }

        if (n != 1) {
            return ngx_http_mcp_schema_fail(ctx, path, "must match exactly "
                                            "one schema of oneOf");
        }
    }

    kw = k->not_;

    if (kw != NULL) {
        rc = ngx_http_mcp_schema_try(ctx, kw, v, path);

        if (rc == NGX_OK) {
            return ngx_http_mcp_schema_fail(ctx, path, "must not match the "
                                            "schema of not");
        }

        if (rc == NGX_ERROR) {
            return rc;
        }
    }

    kw = k->if_;

    if (kw != NULL) {
        rc = ngx_http_mcp_schema_try(ctx, kw, v, path);

        if (rc == NGX_ERROR) {
            return rc;
        }

        sub = (rc == NGX_OK) ? k->then : k->else_;
        if (sub != NULL) {
            return ngx_http_mcp_schema_check(ctx, sub, v, path);
        }
    }

    return NGX_OK;
}


/* a check whose failure is no error of its own */

static ngx_int_t
ngx_http_mcp_schema_try(ngx_http_mcp_schema_ctx_t *ctx, cJSON *schema,
    cJSON *v, ngx_str_t *path)
{
    ngx_int_t  rc;

    ctx->quiet++;
    rc = ngx_http_mcp_schema_check(ctx, schema, v, path);
    ctx->quiet--;

    return rc;
}


static cJSON *
ngx_http_mcp_schema_ref(ngx_http_mcp_schema_ctx_t *ctx, const char *ref)
{
    u_char  *p, *q, *d, name[128];
    cJSON   *node;

    if (ref[0] != '#') {
        /* another document: not ours to fetch */
        return NULL;
    }

    if (ref[1] != '/' && ref[1] != '\0') {
        return ngx_http_mcp_schema_anchor(ctx->root, ref + 1);
    }

    node = ctx->root;
    p = (u_char *) ref + 1;

    while (*p == '/' && node != NULL) {
        p++;
        q = p;
        d = name;

        /* RFC 6901 escapes: ~0 is "~", ~1 is "/" */
        while (*q && *q != '/' && d < name + sizeof(name) - 1) {
            if (q[0] == '~' && (q[1] == '0' || q[1] == '1')) {
                *d++ = (q[1] == '0') ? '~' : '/';
                q += 2;
                continue;
            }

            *d++ = *q++;
        }

        *d = '\0';
        p = q;

        node = ngx_http_mcp_json_get(node, (char *) name);
    }

    return node;
}


static cJSON *
ngx_http_mcp_schema_anchor(cJSON *schema, const char *name)
{
    cJSON  *item, *found;

    if (!cJSON_IsObject(schema) && !cJSON_IsArray(schema)) {
        return NULL;
    }

    item = ngx_http_mcp_json_get(schema, "$anchor");

    if (cJSON_IsObject(schema) && cJSON_IsString(item)
        && ngx_strcmp(item->valuestring, name) == 0)
    {
        return schema;
    }

    cJSON_ArrayForEach(item, schema) {
        found = ngx_http_mcp_schema_anchor(item, name);

        if (found != NULL) {
            return found;
        }
    }

    return NULL;
}


static ngx_int_t
ngx_http_mcp_schema_match(ngx_http_mcp_schema_ctx_t *ctx,
    const char *pattern, const char *s)
{
    u_char               errstr[NGX_MAX_CONF_ERRSTR];
    ngx_int_t            rc;
    ngx_str_t            subject;
    ngx_regex_compile_t  rc_re;

    ngx_memzero(&rc_re, sizeof(ngx_regex_compile_t));

    rc_re.pattern.data = (u_char *) pattern;
    rc_re.pattern.len = ngx_strlen(pattern);
    rc_re.pool = ctx->pool;
    rc_re.err.len = NGX_MAX_CONF_ERRSTR;
    rc_re.err.data = errstr;

    if (ngx_regex_compile(&rc_re) != NGX_OK) {
        /* the tool's schema is broken: the call cannot be checked */
        ngx_log_error(NGX_LOG_ERR, ngx_cycle->log, 0,
                      "mcp: invalid pattern in a tool's inputSchema: %V",
                      &rc_re.err);
        ctx->failed = 1;
        return NGX_ERROR;
    }

    subject.data = (u_char *) s;
    subject.len = ngx_strlen(s);

    rc = ngx_regex_exec(rc_re.regex, &subject, NULL, 0);

    if (rc == NGX_REGEX_NO_MATCHED) {
        return NGX_DECLINED;
    }

    if (rc < 0) {
        /* match limits hit: refuse rather than spin */
        return NGX_DECLINED;
    }

    return NGX_OK;
}


static ngx_str_t *
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


static ngx_int_t
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

static char *
ngx_http_mcp_schema_num(char *buf, double d)
{
    (void) snprintf(buf, NGX_HTTP_MCP_SCHEMA_NUM_LEN, "%.15g", d);

    return buf;
}


/*
 * The input limits: no string (value or member name) over max_string
 * bytes, no nesting deeper than max_depth.  NGX_OK, or NGX_DECLINED with
 * *error saying which.
 */

ngx_int_t
ngx_http_mcp_schema_check_limits(cJSON *json, ngx_uint_t depth,
    ngx_uint_t max_depth, size_t max_string, const char **error)
{
    cJSON  *item;

    if (cJSON_IsString(json)
        && ngx_strlen(json->valuestring) > max_string)
    {
        *error = "hold a string that is too long";
        return NGX_DECLINED;
    }

    if (!cJSON_IsObject(json) && !cJSON_IsArray(json)) {
        return NGX_OK;
    }

    if (depth > max_depth) {
        *error = "nest too deep";
        return NGX_DECLINED;
    }

    cJSON_ArrayForEach(item, json) {
        if (item->string != NULL && ngx_strlen(item->string) > max_string) {
            *error = "hold a string that is too long";
            return NGX_DECLINED;
        }

        if (ngx_http_mcp_schema_check_limits(item, depth + 1, max_depth,
                                         max_string, error)
            != NGX_OK)
        {
            return NGX_DECLINED;
        }
    }

    return NGX_OK;
}
