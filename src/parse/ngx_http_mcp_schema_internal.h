
/*
 * The JSON Schema validator's parts among themselves: the state of one
 * validation, and what each file gives the others.  schema.c applies
 * subschemas (the applicators, unevaluated*, $ref); schema_value.c holds
 * what one schema object asserts of one value and the record of
 * annotations; schema_ref.c finds what a reference names; schema_format.c
 * checks formats and turns ECMA-262 patterns into PCRE ones.  The calls go
 * that way down, never back.
 */


#ifndef _NGX_HTTP_MCP_SCHEMA_INTERNAL_H_INCLUDED_
#define _NGX_HTTP_MCP_SCHEMA_INTERNAL_H_INCLUDED_


#include <ngx_config.h>
#include <ngx_core.h>
#include <cjson/cJSON.h>

#include "ngx_http_mcp_schema.h"
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
#define NGX_HTTP_MCP_SCHEMA_REGEX_N    8

/* resources entered: at most one per level, and the root */
#define NGX_HTTP_MCP_SCHEMA_SCOPE_N    (NGX_HTTP_MCP_SCHEMA_MAX_DEPTH + 2)

#define NGX_HTTP_MCP_SCHEMA_DIALECT                                          \
    "https://json-schema.org/draft/2020-12/schema"
#define NGX_HTTP_MCP_SCHEMA_VOCAB                                            \
    "https://json-schema.org/draft/2020-12/vocab/"


/* a schema resource entered: the dynamic scope of $dynamicRef */
typedef struct {
    cJSON                     *res;
    u_char                    *base;        /* absolute, no fragment */
} ngx_http_mcp_schema_scope_t;


/* an identifier of the index: a resource, an anchor */
typedef struct {
    u_char                    *key;         /* the URI it is found by */
    u_char                    *base;        /* its resource's own URI */
    const char                *anchor;      /* NULL: the resource */
    ngx_uint_t                 dynamic;     /* a $dynamicAnchor */
    cJSON                     *node;
    cJSON                     *res;
} ngx_http_mcp_schema_id_t;


/* the members or items of one value that keywords evaluated */
typedef struct {
    ngx_uint_t                 all;
    ngx_uint_t                 n;
    u_char                    *bits;        /* NULL: none yet */
} ngx_http_mcp_schema_eval_t;


typedef struct {
    const char                *pattern;
    ngx_regex_t               *regex;
} ngx_http_mcp_schema_regex_t;


typedef struct {
    ngx_pool_t                *pool;
    cJSON                     *root;
    ngx_http_mcp_schema_opts_t *opts;
    ngx_http_mcp_schema_t     *compiled;    /* NULL: none */
    u_char                    *error;
    ngx_uint_t                 depth;
    ngx_uint_t                 steps;       /* subschemas checked */
    ngx_uint_t                 exhausted;   /* past MAX_STEPS: refused,
                                               whatever a not makes of it */
    ngx_uint_t                 quiet;       /* inside anyOf, oneOf, not */
    ngx_int_t                  failed;      /* NGX_ERROR seen */
    ngx_uint_t                 novalidation; /* the validation vocabulary
                                                is off */
    ngx_uint_t                 format;      /* format asserts */
    ngx_array_t               *ids;         /* NULL until a reference
                                               needs the index */
    ngx_uint_t                 nregex;
    ngx_uint_t                 nscope;
    /* not zeroed: only the entries counted above are read */
    ngx_http_mcp_schema_regex_t  regex[NGX_HTTP_MCP_SCHEMA_REGEX_N];
    ngx_http_mcp_schema_scope_t  scope[NGX_HTTP_MCP_SCHEMA_SCOPE_N];
} ngx_http_mcp_schema_ctx_t;


/*
 * The types a "type" keyword allows, as bits: the bit of a value's type
 * (and INTEGER for a number that is one) against them, instead of a
 * string compare a call.
 */
#define NGX_HTTP_MCP_SCHEMA_T_NULL     0x01
#define NGX_HTTP_MCP_SCHEMA_T_BOOLEAN  0x02
#define NGX_HTTP_MCP_SCHEMA_T_OBJECT   0x04
#define NGX_HTTP_MCP_SCHEMA_T_ARRAY    0x08
#define NGX_HTTP_MCP_SCHEMA_T_NUMBER   0x10
#define NGX_HTTP_MCP_SCHEMA_T_STRING   0x20
#define NGX_HTTP_MCP_SCHEMA_T_INTEGER  0x40


/* a schema object's keywords, found in one walk of its members */
struct ngx_http_mcp_schema_kw_s {
    cJSON                     *object;      /* the schema object itself */
    ngx_uint_t                 types;       /* T_* bits "type" allows */
    cJSON                     *dynamic_ref;
    cJSON                     *id;
    cJSON                     *ref;
    cJSON                     *additional_properties;
    cJSON                     *all_of;
    cJSON                     *any_of;
    cJSON                     *const_;
    cJSON                     *contains;
    cJSON                     *dependent_required;
    cJSON                     *dependent_schemas;
    cJSON                     *else_;
    cJSON                     *enum_;
    cJSON                     *exclusive_maximum;
    cJSON                     *exclusive_minimum;
    cJSON                     *format;
    cJSON                     *if_;
    cJSON                     *items;
    cJSON                     *max_contains;
    cJSON                     *max_items;
    cJSON                     *max_length;
    cJSON                     *max_properties;
    cJSON                     *maximum;
    cJSON                     *min_contains;
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
    cJSON                     *property_names;
    cJSON                     *required;
    cJSON                     *then;
    cJSON                     *type;
    cJSON                     *unevaluated_items;
    cJSON                     *unevaluated_properties;
    cJSON                     *unique_items;
};


typedef struct {
    const char                *name;
    size_t                     offset;
} ngx_http_mcp_schema_keyword_t;


/* whether v is of cJSON type t (a call into libcjson costs more) */
static ngx_inline ngx_uint_t
ngx_http_mcp_schema_is(cJSON *v, int t)
{
    return v != NULL && (v->type & 0xff) == t;
}


/* a compiled schema's keywords of the object schema; NULL: not there */
static ngx_inline ngx_http_mcp_schema_kw_t *
ngx_http_mcp_schema_compiled(ngx_http_mcp_schema_t *c, cJSON *schema)
{
    ngx_uint_t                 i;
    ngx_http_mcp_schema_kw_t  *k;

    /* cJSON's nodes are 64 bytes apart at least */
    for (i = ((uintptr_t) schema >> 6) & c->mask;
         (k = c->slots[i]) != NULL;
         i = (i + 1) & c->mask)
    {
        if (k->object == schema) {
            return k;
        }
    }

    return NULL;
}


/* schema_value.c */
void ngx_http_mcp_schema_keywords(cJSON *schema, ngx_http_mcp_schema_kw_t *k);
ngx_int_t ngx_http_mcp_schema_type(ngx_http_mcp_schema_ctx_t *ctx,
    ngx_http_mcp_schema_kw_t *k, cJSON *v, ngx_str_t *path);
ngx_int_t ngx_http_mcp_schema_number(ngx_http_mcp_schema_ctx_t *ctx,
    ngx_http_mcp_schema_kw_t *k, cJSON *v, ngx_str_t *path);
ngx_int_t ngx_http_mcp_schema_string(ngx_http_mcp_schema_ctx_t *ctx,
    ngx_http_mcp_schema_kw_t *k, cJSON *v, ngx_str_t *path);
ngx_uint_t ngx_http_mcp_schema_equal(cJSON *a, cJSON *b);
ngx_http_mcp_schema_eval_t *ngx_http_mcp_schema_eval(
    ngx_http_mcp_schema_ctx_t *ctx, cJSON *v);
ngx_int_t ngx_http_mcp_schema_branch(ngx_http_mcp_schema_ctx_t *ctx,
    ngx_http_mcp_schema_eval_t *ev, cJSON *v,
    ngx_http_mcp_schema_eval_t **branch);
ngx_int_t ngx_http_mcp_schema_mark(ngx_http_mcp_schema_ctx_t *ctx,
    ngx_http_mcp_schema_eval_t *ev, ngx_uint_t i);
ngx_uint_t ngx_http_mcp_schema_marked(ngx_http_mcp_schema_eval_t *ev,
    ngx_uint_t i);
ngx_int_t ngx_http_mcp_schema_merge(ngx_http_mcp_schema_ctx_t *ctx,
    ngx_http_mcp_schema_eval_t *dst, ngx_http_mcp_schema_eval_t *src);
ngx_int_t ngx_http_mcp_schema_match(ngx_http_mcp_schema_ctx_t *ctx,
    const char *pattern, const char *s);
ngx_str_t *ngx_http_mcp_schema_path(ngx_http_mcp_schema_ctx_t *ctx,
    ngx_str_t *path, const char *name, ngx_uint_t index);
ngx_int_t ngx_http_mcp_schema_fail(ngx_http_mcp_schema_ctx_t *ctx,
    ngx_str_t *path, const char *fmt, ...);
char *ngx_http_mcp_schema_num(char *buf, double d);

/* schema_ref.c */
cJSON *ngx_http_mcp_schema_lookup(ngx_http_mcp_schema_ctx_t *ctx,
    const char *ref, ngx_http_mcp_schema_scope_t *to);
cJSON *ngx_http_mcp_schema_dynamic(ngx_http_mcp_schema_ctx_t *ctx,
    const char *ref, cJSON *target, ngx_http_mcp_schema_scope_t *to);
u_char *ngx_http_mcp_schema_id(ngx_http_mcp_schema_ctx_t *ctx,
    u_char *base, const char *id);

/* schema_format.c */
ngx_int_t ngx_http_mcp_schema_format(ngx_pool_t *pool, const char *format,
    const char *s);
ngx_int_t ngx_http_mcp_schema_regex(ngx_pool_t *pool, const char *pattern,
    ngx_regex_t **regex);


#endif /* _NGX_HTTP_MCP_SCHEMA_INTERNAL_H_INCLUDED_ */
