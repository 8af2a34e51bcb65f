
/*
 * JSON Schema 2020-12 validation over cJSON trees; pure (a pool, two
 * trees, ngx_regex for "pattern").  Every keyword of the core,
 * applicator, unevaluated and validation vocabularies; "format" as an
 * annotation, or as an assertion when the caller asks for it (the
 * format-assertion vocabulary).  The first failure is reported, with the
 * path of the failing value.
 *
 * The hard part is unevaluatedProperties and unevaluatedItems: they see
 * what the other keywords of their schema object and every subschema
 * applied in place to the same value evaluated.  Those annotations are a
 * bitmap over the value's members (by position), kept only below a
 * schema object that holds one of the two keywords: a flat object schema
 * passes NULL and pays nothing.  A branch of anyOf, oneOf or if gets a
 * bitmap of its own, merged only when the branch holds.
 *
 * References: "#/pointer" walks the current resource at once; anything
 * else ($id-relative URIs, anchors, $dynamicRef, other documents) goes
 * through an index of the schema's resources and anchors, built on the
 * first such reference of a call only.  Another document is asked of the
 * caller's loader (the unit tests map the suite's remotes); without one,
 * a reference to it passes unchecked: the module fetches nothing.
 */


#include <ngx_config.h>
#include <ngx_core.h>
#include <cjson/cJSON.h>

#include "ngx_http_mcp_schema.h"
#include "ngx_http_mcp_schema_internal.h"
#include "ngx_http_mcp_json.h"


static ngx_int_t ngx_http_mcp_schema_check(ngx_http_mcp_schema_ctx_t *ctx,
    cJSON *schema, cJSON *v, ngx_str_t *path,
    ngx_http_mcp_schema_eval_t *ev);
static ngx_int_t ngx_http_mcp_schema_object(ngx_http_mcp_schema_ctx_t *ctx,
    ngx_http_mcp_schema_kw_t *k, cJSON *v, ngx_str_t *path,
    ngx_http_mcp_schema_eval_t *ev);
static ngx_int_t ngx_http_mcp_schema_members(
    ngx_http_mcp_schema_ctx_t *ctx, ngx_http_mcp_schema_kw_t *k, cJSON *v,
    ngx_str_t *path, ngx_http_mcp_schema_eval_t *ev);
static ngx_int_t ngx_http_mcp_schema_array(ngx_http_mcp_schema_ctx_t *ctx,
    ngx_http_mcp_schema_kw_t *k, cJSON *v, ngx_str_t *path,
    ngx_http_mcp_schema_eval_t *ev);
static ngx_int_t ngx_http_mcp_schema_contains(
    ngx_http_mcp_schema_ctx_t *ctx, ngx_http_mcp_schema_kw_t *k, cJSON *v,
    ngx_str_t *path, ngx_http_mcp_schema_eval_t *ev);
static ngx_int_t ngx_http_mcp_schema_combine(ngx_http_mcp_schema_ctx_t *ctx,
    ngx_http_mcp_schema_kw_t *k, cJSON *v, ngx_str_t *path,
    ngx_http_mcp_schema_eval_t *ev);
static ngx_int_t ngx_http_mcp_schema_unevaluated(
    ngx_http_mcp_schema_ctx_t *ctx, ngx_http_mcp_schema_kw_t *k, cJSON *v,
    ngx_str_t *path, ngx_http_mcp_schema_eval_t *ev);
static ngx_int_t ngx_http_mcp_schema_try(ngx_http_mcp_schema_ctx_t *ctx,
    cJSON *schema, cJSON *v, ngx_str_t *path,
    ngx_http_mcp_schema_eval_t *ev);
static ngx_int_t ngx_http_mcp_schema_follow(ngx_http_mcp_schema_ctx_t *ctx,
    const char *ref, ngx_uint_t dynamic, cJSON *v, ngx_str_t *path,
    ngx_http_mcp_schema_eval_t *ev);
static ngx_int_t ngx_http_mcp_schema_push(ngx_http_mcp_schema_ctx_t *ctx,
    cJSON *res, u_char *base, ngx_str_t *path);
static void ngx_http_mcp_schema_vocabulary(ngx_http_mcp_schema_ctx_t *ctx);


ngx_int_t
ngx_http_mcp_schema_validate(ngx_pool_t *pool, cJSON *schema,
    cJSON *instance, u_char **error)
{
    return ngx_http_mcp_schema_validate_opts(pool, schema, instance, NULL,
                                             error);
}


ngx_int_t
ngx_http_mcp_schema_validate_opts(ngx_pool_t *pool, cJSON *schema,
    cJSON *instance, ngx_http_mcp_schema_opts_t *opts, u_char **error)
{
    ngx_int_t                   rc;
    ngx_str_t                   path = ngx_string("arguments");
    ngx_http_mcp_schema_ctx_t   ctx;

    if (schema == NULL) {
        return NGX_OK;
    }

    /* the regex cache and the scope: only the entries counted are read */
    ngx_memzero(&ctx, offsetof(ngx_http_mcp_schema_ctx_t, regex));

    ctx.pool = pool;
    ctx.root = schema;
    ctx.opts = opts;

    if (opts != NULL) {
        ctx.format = opts->format_assert;

        if (opts->compiled != NULL && opts->compiled->slots != NULL) {
            ctx.compiled = opts->compiled;
        }
    }

    if (opts != NULL && opts->path != NULL) {
        path.data = (u_char *) opts->path;
        path.len = ngx_strlen(opts->path);
    }

    ctx.nscope = 1;
    ctx.scope[0].res = schema;
    ctx.scope[0].base = (u_char *) "";

    /* the root's $id, if any, is read as check() finds it */
    if (opts != NULL && opts->load != NULL
        && ngx_http_mcp_schema_is(schema, cJSON_Object))
    {
        ngx_http_mcp_schema_vocabulary(&ctx);
    }

    rc = ngx_http_mcp_schema_check(&ctx, schema, instance, &path, NULL);

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


/*
 * The dialect of a configured schema: none named, or 2020-12.  NULL, or
 * the $schema that names another (for the nginx -t message).
 */

const char *
ngx_http_mcp_schema_dialect(cJSON *schema)
{
    cJSON   *s;
    size_t   len;

    s = ngx_http_mcp_json_get(schema, "$schema");

    if (s == NULL) {
        return NULL;
    }

    if (!ngx_http_mcp_schema_is(s, cJSON_String)) {
        return "(not a string)";
    }

    len = sizeof(NGX_HTTP_MCP_SCHEMA_DIALECT) - 1;

    if (ngx_strncmp(s->valuestring, NGX_HTTP_MCP_SCHEMA_DIALECT, len) == 0
        && (s->valuestring[len] == '\0'
            || (s->valuestring[len] == '#' && s->valuestring[len + 1] == '\0')))
    {
        return NULL;
    }

    return s->valuestring;
}


/*
 * A $schema naming a meta-schema the loader has: its $vocabulary says
 * whether the validation keywords assert, and whether format does.
 */

static void
ngx_http_mcp_schema_vocabulary(ngx_http_mcp_schema_ctx_t *ctx)
{
    cJSON   *s, *meta, *vocab, *v;
    size_t   len;

    if (ngx_http_mcp_schema_dialect(ctx->root) == NULL) {
        return;
    }

    s = ngx_http_mcp_json_get(ctx->root, "$schema");

    if (!ngx_http_mcp_schema_is(s, cJSON_String)) {
        return;
    }

    meta = ctx->opts->load(ctx->opts->data, s->valuestring);
    vocab = ngx_http_mcp_json_get(meta, "$vocabulary");

    if (!ngx_http_mcp_schema_is(vocab, cJSON_Object)) {
        return;
    }

    ctx->novalidation = 1;
    len = sizeof(NGX_HTTP_MCP_SCHEMA_VOCAB) - 1;

    cJSON_ArrayForEach(v, vocab) {
        if (ngx_strncmp(v->string, NGX_HTTP_MCP_SCHEMA_VOCAB, len) != 0) {
            continue;
        }

        if (ngx_strcmp(v->string + len, "validation") == 0) {
            ctx->novalidation = 0;

        } else if (ngx_strcmp(v->string + len, "format-assertion") == 0) {
            ctx->format = 1;
        }
    }
}


static ngx_int_t
ngx_http_mcp_schema_check(ngx_http_mcp_schema_ctx_t *ctx, cJSON *schema,
    cJSON *v, ngx_str_t *path, ngx_http_mcp_schema_eval_t *ev)
{
    u_char                      *base;
    ngx_int_t                    rc;
    ngx_uint_t                   entered;
    ngx_http_mcp_schema_kw_t     own_k, *k;
    ngx_http_mcp_schema_eval_t  *own;

    if (!ngx_http_mcp_schema_is(schema, cJSON_Object)) {
        return ngx_http_mcp_schema_is(schema, cJSON_False)
               ? ngx_http_mcp_schema_fail(ctx, path, "is not allowed")
               : NGX_OK;
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

    k = (ctx->compiled != NULL)
        ? ngx_http_mcp_schema_compiled(ctx->compiled, schema) : NULL;

    if (k == NULL) {
        ngx_http_mcp_schema_keywords(schema, &own_k);
        k = &own_k;
    }

    entered = 0;

    /* the root's $id: the base of the document */
    if (ngx_http_mcp_schema_is(k->id, cJSON_String)
        && schema == ctx->root && ctx->depth == 1)
    {
        ctx->scope[0].base = ngx_http_mcp_schema_id(ctx, (u_char *) "",
                                                    k->id->valuestring);
        if (ctx->scope[0].base == NULL) {
            ctx->depth--;
            return NGX_ERROR;
        }
    }

    /* a resource of its own: the base of the references inside */
    if (ngx_http_mcp_schema_is(k->id, cJSON_String)
        && schema != ctx->scope[ctx->nscope - 1].res)
    {
        base = ngx_http_mcp_schema_id(ctx, ctx->scope[ctx->nscope - 1].base,
                                      k->id->valuestring);
        if (base == NULL) {
            ctx->depth--;
            return NGX_ERROR;
        }

        rc = ngx_http_mcp_schema_push(ctx, schema, base, path);
        if (rc != NGX_OK) {
            ctx->depth--;
            return rc;
        }

        entered = 1;
    }

    /* the annotations unevaluated* read are this object's own */
    own = ev;

    if ((k->unevaluated_properties != NULL
         && ngx_http_mcp_schema_is(v, cJSON_Object))
        || (k->unevaluated_items != NULL
            && ngx_http_mcp_schema_is(v, cJSON_Array)))
    {
        own = ngx_http_mcp_schema_eval(ctx, v);
        if (own == NULL) {
            rc = NGX_ERROR;
            goto done;
        }
    }

    rc = NGX_OK;

    if (ngx_http_mcp_schema_is(k->ref, cJSON_String)) {
        rc = ngx_http_mcp_schema_follow(ctx, k->ref->valuestring, 0, v, path,
                                        own);
    }

    if (rc == NGX_OK
        && ngx_http_mcp_schema_is(k->dynamic_ref, cJSON_String))
    {
        rc = ngx_http_mcp_schema_follow(ctx, k->dynamic_ref->valuestring, 1,
                                        v, path, own);
    }

    if (rc == NGX_OK && !ctx->novalidation) {
        rc = ngx_http_mcp_schema_type(ctx, k, v, path);
    }

    if (rc == NGX_OK && ngx_http_mcp_schema_is(v, cJSON_Number)
        && !ctx->novalidation)
    {
        rc = ngx_http_mcp_schema_number(ctx, k, v, path);
    }

    if (rc == NGX_OK && ngx_http_mcp_schema_is(v, cJSON_String)) {
        rc = ngx_http_mcp_schema_string(ctx, k, v, path);
    }

    if (rc == NGX_OK && ngx_http_mcp_schema_is(v, cJSON_Object)) {
        rc = ngx_http_mcp_schema_object(ctx, k, v, path, own);
    }

    if (rc == NGX_OK && ngx_http_mcp_schema_is(v, cJSON_Array)) {
        rc = ngx_http_mcp_schema_array(ctx, k, v, path, own);
    }

    if (rc == NGX_OK) {
        rc = ngx_http_mcp_schema_combine(ctx, k, v, path, own);
    }

    if (rc == NGX_OK && own != ev) {
        rc = ngx_http_mcp_schema_unevaluated(ctx, k, v, path, own);

        if (rc == NGX_OK && ev != NULL) {
            rc = ngx_http_mcp_schema_merge(ctx, ev, own);
        }
    }

done:

    if (entered) {
        ctx->nscope--;
    }

    ctx->depth--;

    return rc;
}


static ngx_int_t
ngx_http_mcp_schema_object(ngx_http_mcp_schema_ctx_t *ctx,
    ngx_http_mcp_schema_kw_t *k,
    cJSON *v, ngx_str_t *path, ngx_http_mcp_schema_eval_t *ev)
{
    cJSON       *kw, *item, *dep, *name;
    ngx_int_t    rc;
    ngx_uint_t   n;

    if (!ctx->novalidation) {
        cJSON_ArrayForEach(kw, k->required) {
            if (ngx_http_mcp_schema_is(kw, cJSON_String)
                && ngx_http_mcp_json_get(v, kw->valuestring) == NULL)
            {
                return ngx_http_mcp_schema_fail(ctx, path,
                                                "\"%s\" is required",
                                                kw->valuestring);
            }
        }

        kw = ngx_http_mcp_schema_is(k->dependent_required, cJSON_Object)
             ? k->dependent_required : NULL;

        cJSON_ArrayForEach(dep, kw) {
            if (ngx_http_mcp_json_get(v, dep->string) == NULL) {
                continue;
            }

            cJSON_ArrayForEach(name, dep) {
                if (ngx_http_mcp_schema_is(name, cJSON_String)
                    && ngx_http_mcp_json_get(v, name->valuestring) == NULL)
                {
                    return ngx_http_mcp_schema_fail(ctx, path,
                                                    "\"%s\" is required "
                                                    "with \"%s\"",
                                                    name->valuestring,
                                                    dep->string);
                }
            }
        }
    }

    if (k->properties != NULL || k->pattern_properties != NULL
        || k->additional_properties != NULL)
    {
        rc = ngx_http_mcp_schema_members(ctx, k, v, path, ev);
        if (rc != NGX_OK) {
            return rc;
        }
    }

    kw = k->property_names;

    if (kw != NULL) {
        cJSON_ArrayForEach(item, v) {
            cJSON  name_value;

            ngx_memzero(&name_value, sizeof(cJSON));
            name_value.type = cJSON_String;
            name_value.valuestring = item->string;

            rc = ngx_http_mcp_schema_try(ctx, kw, &name_value, path, NULL);

            if (rc == NGX_DECLINED) {
                return ngx_http_mcp_schema_fail(ctx, path,
                                                "has an invalid property "
                                                "name \"%s\"", item->string);
            }

            if (rc != NGX_OK) {
                return rc;
            }
        }
    }

    kw = ngx_http_mcp_schema_is(k->dependent_schemas, cJSON_Object)
         ? k->dependent_schemas : NULL;

    cJSON_ArrayForEach(dep, kw) {
        if (ngx_http_mcp_json_get(v, dep->string) == NULL) {
            continue;
        }

        rc = ngx_http_mcp_schema_check(ctx, dep, v, path, ev);
        if (rc != NGX_OK) {
            return rc;
        }
    }

    if (ctx->novalidation
        || (k->min_properties == NULL && k->max_properties == NULL))
    {
        return NGX_OK;
    }

    n = cJSON_GetArraySize(v);

    kw = k->min_properties;

    if (ngx_http_mcp_schema_is(kw, cJSON_Number)
        && (double) n < kw->valuedouble)
    {
        return ngx_http_mcp_schema_fail(ctx, path, "has too few properties");
    }

    kw = k->max_properties;

    if (ngx_http_mcp_schema_is(kw, cJSON_Number)
        && (double) n > kw->valuedouble)
    {
        return ngx_http_mcp_schema_fail(ctx, path,
                                        "has too many properties");
    }

    return NGX_OK;
}


/* properties, patternProperties, additionalProperties */

static ngx_int_t
ngx_http_mcp_schema_members(ngx_http_mcp_schema_ctx_t *ctx,
    ngx_http_mcp_schema_kw_t *k, cJSON *v, ngx_str_t *path,
    ngx_http_mcp_schema_eval_t *ev)
{
    cJSON       *props, *pprops, *addl, *item, *sub, *pp;
    ngx_int_t    rc;
    ngx_str_t   *child;
    ngx_uint_t   i, matched;

    props = k->properties;
    pprops = k->pattern_properties;
    addl = k->additional_properties;

    /* the entries of an array have no names to compile */
    if (!ngx_http_mcp_schema_is(pprops, cJSON_Object)) {
        pprops = NULL;
    }

    i = 0;

    for (item = v->child; item != NULL; item = item->next, i++) {
        matched = 0;
        child = NULL;

        sub = ngx_http_mcp_schema_is(props, cJSON_Object)
              ? ngx_http_mcp_json_get(props, item->string)
              : NULL;

        if (sub != NULL) {
            matched = 1;
            child = ngx_http_mcp_schema_path(ctx, path, item->string, 0);

            if (child == NULL) {
                return NGX_ERROR;
            }

            rc = ngx_http_mcp_schema_check(ctx, sub, item, child, NULL);
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

            rc = ngx_http_mcp_schema_check(ctx, pp, item, child, NULL);
            if (rc != NGX_OK) {
                return rc;
            }
        }

        if (!matched && addl != NULL) {
            if (ngx_http_mcp_schema_is(addl, cJSON_False)) {
                return ngx_http_mcp_schema_fail(ctx, path,
                                                "unknown property \"%s\"",
                                                item->string);
            }

            child = ngx_http_mcp_schema_path(ctx, path, item->string, 0);
            if (child == NULL) {
                return NGX_ERROR;
            }

            rc = ngx_http_mcp_schema_check(ctx, addl, item, child, NULL);
            if (rc != NGX_OK) {
                return rc;
            }

            matched = 1;
        }

        if (matched && ev != NULL
            && ngx_http_mcp_schema_mark(ctx, ev, i) != NGX_OK)
        {
            return NGX_ERROR;
        }
    }

    return NGX_OK;
}


static ngx_int_t
ngx_http_mcp_schema_array(ngx_http_mcp_schema_ctx_t *ctx,
    ngx_http_mcp_schema_kw_t *k,
    cJSON *v, ngx_str_t *path, ngx_http_mcp_schema_eval_t *ev)
{
    char         nbuf[NGX_HTTP_MCP_SCHEMA_NUM_LEN];
    cJSON       *items, *prefix, *kw, *item, *p, *other;
    ngx_int_t    rc;
    ngx_str_t   *child;
    ngx_uint_t   i, n;

    items = k->items;
    prefix = k->prefix_items;

    p = ngx_http_mcp_schema_is(prefix, cJSON_Array) ? prefix->child : NULL;
    i = 0;

    cJSON_ArrayForEach(item, v) {
        kw = (p != NULL) ? p : items;

        if (kw != NULL) {
            child = ngx_http_mcp_schema_path(ctx, path, NULL, i);
            if (child == NULL) {
                return NGX_ERROR;
            }

            rc = ngx_http_mcp_schema_check(ctx, kw, item, child, NULL);
            if (rc != NGX_OK) {
                return rc;
            }

            if (ev != NULL && ngx_http_mcp_schema_mark(ctx, ev, i) != NGX_OK)
            {
                return NGX_ERROR;
            }
        }

        if (p != NULL) {
            p = p->next;
        }

        i++;
    }

    n = i;

    if (k->contains != NULL) {
        rc = ngx_http_mcp_schema_contains(ctx, k, v, path, ev);
        if (rc != NGX_OK) {
            return rc;
        }
    }

    if (ctx->novalidation) {
        return NGX_OK;
    }

    kw = k->min_items;

    if (ngx_http_mcp_schema_is(kw, cJSON_Number)
        && (double) n < kw->valuedouble)
    {
        return ngx_http_mcp_schema_fail(ctx, path,
                                        "must have at least %s items",
                                        ngx_http_mcp_schema_num(nbuf,
                                            kw->valuedouble));
    }

    kw = k->max_items;

    if (ngx_http_mcp_schema_is(kw, cJSON_Number)
        && (double) n > kw->valuedouble)
    {
        return ngx_http_mcp_schema_fail(ctx, path,
                                        "must have at most %s items",
                                        ngx_http_mcp_schema_num(nbuf,
                                            kw->valuedouble));
    }

    kw = k->unique_items;

    if (ngx_http_mcp_schema_is(kw, cJSON_True)) {
        cJSON_ArrayForEach(item, v) {
            for (other = item->next; other; other = other->next) {
                if (ngx_http_mcp_schema_equal(item, other)) {
                    return ngx_http_mcp_schema_fail(ctx, path,
                                                    "must have unique "
                                                    "items");
                }
            }
        }
    }

    return NGX_OK;
}


/* contains, minContains, maxContains */

static ngx_int_t
ngx_http_mcp_schema_contains(ngx_http_mcp_schema_ctx_t *ctx,
    ngx_http_mcp_schema_kw_t *k, cJSON *v, ngx_str_t *path,
    ngx_http_mcp_schema_eval_t *ev)
{
    char         nbuf[NGX_HTTP_MCP_SCHEMA_NUM_LEN];
    cJSON       *item;
    double       min;
    ngx_int_t    rc;
    ngx_uint_t   i, n;

    n = 0;
    i = 0;

    for (item = v->child; item != NULL; item = item->next, i++) {
        /* the path is never printed: the failures are quiet */
        rc = ngx_http_mcp_schema_try(ctx, k->contains, item, path, NULL);

        if (rc == NGX_ERROR) {
            return rc;
        }

        if (rc == NGX_OK) {
            n++;

            if (ev != NULL && ngx_http_mcp_schema_mark(ctx, ev, i) != NGX_OK)
            {
                return NGX_ERROR;
            }
        }
    }

    min = 1;

    if (!ctx->novalidation
        && ngx_http_mcp_schema_is(k->min_contains, cJSON_Number))
    {
        min = k->min_contains->valuedouble;
    }

    if ((double) n < min) {
        return ngx_http_mcp_schema_fail(ctx, path,
                                        "must contain at least %s items "
                                        "that match contains",
                                        ngx_http_mcp_schema_num(nbuf, min));
    }

    if (!ctx->novalidation
        && ngx_http_mcp_schema_is(k->max_contains, cJSON_Number)
        && (double) n > k->max_contains->valuedouble)
    {
        return ngx_http_mcp_schema_fail(ctx, path,
                                        "must contain at most %s items "
                                        "that match contains",
                                        ngx_http_mcp_schema_num(nbuf,
                                            k->max_contains->valuedouble));
    }

    return NGX_OK;
}


/* allOf, anyOf, oneOf, not, if/then/else */

static ngx_int_t
ngx_http_mcp_schema_combine(ngx_http_mcp_schema_ctx_t *ctx,
    ngx_http_mcp_schema_kw_t *k,
    cJSON *v, ngx_str_t *path, ngx_http_mcp_schema_eval_t *ev)
{
    cJSON                       *kw, *sub;
    ngx_int_t                    rc;
    ngx_uint_t                   n;
    ngx_http_mcp_schema_eval_t  *branch, *one;

    kw = k->all_of;

    cJSON_ArrayForEach(sub, kw) {
        rc = ngx_http_mcp_schema_check(ctx, sub, v, path, ev);
        if (rc != NGX_OK) {
            return rc;
        }
    }

    kw = k->any_of;

    if (ngx_http_mcp_schema_is(kw, cJSON_Array)) {
        n = 0;

        cJSON_ArrayForEach(sub, kw) {
            if (ngx_http_mcp_schema_branch(ctx, ev, v, &branch) != NGX_OK) {
                return NGX_ERROR;
            }

            rc = ngx_http_mcp_schema_try(ctx, sub, v, path, branch);

            if (rc == NGX_ERROR) {
                return rc;
            }

            if (rc != NGX_OK) {
                continue;
            }

            n++;

            /* annotations are collected from every branch that holds */
            if (ev == NULL) {
                break;
            }

            if (ngx_http_mcp_schema_merge(ctx, ev, branch) != NGX_OK) {
                return NGX_ERROR;
            }
        }

        if (n == 0) {
            return ngx_http_mcp_schema_fail(ctx, path, "must match at least "
                                            "one schema of anyOf");
        }
    }

    kw = k->one_of;

    if (ngx_http_mcp_schema_is(kw, cJSON_Array)) {
        n = 0;
        one = NULL;

        cJSON_ArrayForEach(sub, kw) {
            if (ngx_http_mcp_schema_branch(ctx, ev, v, &branch) != NGX_OK) {
                return NGX_ERROR;
            }

            rc = ngx_http_mcp_schema_try(ctx, sub, v, path, branch);

            if (rc == NGX_ERROR) {
                return rc;
            }

            if (rc == NGX_OK) {
                n++;
                one = branch;
            }
        }

        if (n != 1) {
            return ngx_http_mcp_schema_fail(ctx, path, "must match exactly "
                                            "one schema of oneOf");
        }

        if (ev != NULL && ngx_http_mcp_schema_merge(ctx, ev, one) != NGX_OK) {
            return NGX_ERROR;
        }
    }

    kw = k->not_;

    if (kw != NULL) {
        rc = ngx_http_mcp_schema_try(ctx, kw, v, path, NULL);

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
        if (ngx_http_mcp_schema_branch(ctx, ev, v, &branch) != NGX_OK) {
            return NGX_ERROR;
        }

        rc = ngx_http_mcp_schema_try(ctx, kw, v, path, branch);

        if (rc == NGX_ERROR) {
            return rc;
        }

        if (rc == NGX_OK && ev != NULL
            && ngx_http_mcp_schema_merge(ctx, ev, branch) != NGX_OK)
        {
            return NGX_ERROR;
        }

        sub = (rc == NGX_OK) ? k->then : k->else_;
        if (sub != NULL) {
            return ngx_http_mcp_schema_check(ctx, sub, v, path, ev);
        }
    }

    return NGX_OK;
}


/* unevaluatedProperties, unevaluatedItems: last, over what is left */

static ngx_int_t
ngx_http_mcp_schema_unevaluated(ngx_http_mcp_schema_ctx_t *ctx,
    ngx_http_mcp_schema_kw_t *k, cJSON *v, ngx_str_t *path,
    ngx_http_mcp_schema_eval_t *ev)
{
    cJSON       *kw, *item;
    ngx_int_t    rc;
    ngx_str_t   *child;
    ngx_uint_t   i, object;

    object = ngx_http_mcp_schema_is(v, cJSON_Object);
    kw = object ? k->unevaluated_properties : k->unevaluated_items;

    if (kw == NULL || ev->all) {
        return NGX_OK;
    }

    i = 0;

    for (item = v->child; item != NULL; item = item->next, i++) {

        if (ngx_http_mcp_schema_marked(ev, i)) {
            continue;
        }

        if (ngx_http_mcp_schema_is(kw, cJSON_False)) {
            if (object) {
                return ngx_http_mcp_schema_fail(ctx, path,
                                                "unknown property \"%s\"",
                                                item->string);
            }

            return ngx_http_mcp_schema_fail(ctx, path,
                                            "must have at most %ui items",
                                            i);
        }

        child = ngx_http_mcp_schema_path(ctx, path,
                                         object ? item->string : NULL, i);
        if (child == NULL) {
            return NGX_ERROR;
        }

        rc = ngx_http_mcp_schema_check(ctx, kw, item, child, NULL);
        if (rc != NGX_OK) {
            return rc;
        }
    }

    ev->all = 1;

    return NGX_OK;
}


/* a check whose failure is no error of its own */

static ngx_int_t
ngx_http_mcp_schema_try(ngx_http_mcp_schema_ctx_t *ctx, cJSON *schema,
    cJSON *v, ngx_str_t *path, ngx_http_mcp_schema_eval_t *ev)
{
    ngx_int_t  rc;

    ctx->quiet++;
    rc = ngx_http_mcp_schema_check(ctx, schema, v, path, ev);
    ctx->quiet--;

    return rc;
}


/*
 * $ref and $dynamicRef: the target is checked against the same value,
 * in the resource it stands in (entered into the dynamic scope).  A
 * target that cannot be found passes, as before: the module fetches no
 * other document.
 */

static ngx_int_t
ngx_http_mcp_schema_follow(ngx_http_mcp_schema_ctx_t *ctx, const char *ref,
    ngx_uint_t dynamic, cJSON *v, ngx_str_t *path,
    ngx_http_mcp_schema_eval_t *ev)
{
    cJSON                        *target;
    ngx_int_t                     rc;
    ngx_uint_t                    pushed;
    ngx_http_mcp_schema_scope_t   to, *top;

    target = ngx_http_mcp_schema_lookup(ctx, ref, &to);

    if (target != NULL && dynamic) {
        target = ngx_http_mcp_schema_dynamic(ctx, ref, target, &to);
    }

    if (ctx->failed) {
        return NGX_ERROR;
    }

    if (target == NULL) {
        return NGX_OK;
    }

    top = &ctx->scope[ctx->nscope - 1];
    pushed = 0;

    if (to.res != top->res) {
        rc = ngx_http_mcp_schema_push(ctx, to.res, to.base, path);
        if (rc != NGX_OK) {
            return rc;
        }

        pushed = 1;
    }

    rc = ngx_http_mcp_schema_check(ctx, target, v, path, ev);

    if (pushed) {
        ctx->nscope--;
    }

    return rc;
}


static ngx_int_t
ngx_http_mcp_schema_push(ngx_http_mcp_schema_ctx_t *ctx, cJSON *res,
    u_char *base, ngx_str_t *path)
{
    if (ctx->nscope == NGX_HTTP_MCP_SCHEMA_SCOPE_N) {
        return ngx_http_mcp_schema_fail(ctx, path, "nests too deep for "
                                        "the schema");
    }

    ctx->scope[ctx->nscope].res = res;
    ctx->scope[ctx->nscope].base = base;
    ctx->nscope++;

    return NGX_OK;
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

    if (ngx_http_mcp_schema_is(json, cJSON_String)
        && ngx_strlen(json->valuestring) > max_string)
    {
        *error = "hold a string that is too long";
        return NGX_DECLINED;
    }

    if (!ngx_http_mcp_schema_is(json, cJSON_Object)
        && !ngx_http_mcp_schema_is(json, cJSON_Array))
    {
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
