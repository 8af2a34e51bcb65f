
/*
 * What a $ref or $dynamicRef names.  A "#/pointer" walks the resource at
 * hand; anything else is an URI resolved (RFC 3986) against the base of
 * the resource it stands in and found in an index of the schema's
 * resources ($id), anchors and dynamic anchors, built on the first such
 * reference of a call only, so that a schema without them pays nothing.
 * Another document comes from the caller's loader, if any.
 */


#include <ngx_config.h>
#include <ngx_core.h>
#include <cjson/cJSON.h>

#include "ngx_http_mcp_schema.h"
#include "ngx_http_mcp_schema_internal.h"
#include "ngx_http_mcp_json.h"


typedef struct {
    u_char   *scheme, *auth, *path, *query, *frag;
    size_t    scheme_len, auth_len, path_len, query_len, frag_len;
} ngx_http_mcp_schema_uri_t;


static cJSON *ngx_http_mcp_schema_pointer(ngx_http_mcp_schema_ctx_t *ctx,
    const char *p, ngx_http_mcp_schema_scope_t *to);
static ngx_int_t ngx_http_mcp_schema_index(ngx_http_mcp_schema_ctx_t *ctx);
static ngx_int_t ngx_http_mcp_schema_index_walk(
    ngx_http_mcp_schema_ctx_t *ctx, cJSON *node, u_char *base, cJSON *res,
    ngx_uint_t depth);
static ngx_int_t ngx_http_mcp_schema_index_add(
    ngx_http_mcp_schema_ctx_t *ctx, u_char *key, u_char *base,
    const char *anchor, ngx_uint_t dynamic, cJSON *node, cJSON *res);
static ngx_http_mcp_schema_id_t *ngx_http_mcp_schema_find(
    ngx_http_mcp_schema_ctx_t *ctx, u_char *key, const char *anchor,
    ngx_uint_t dynamic);
static ngx_http_mcp_schema_id_t *ngx_http_mcp_schema_load(
    ngx_http_mcp_schema_ctx_t *ctx, u_char *uri);
static u_char *ngx_http_mcp_schema_resolve(ngx_pool_t *pool,
    const u_char *base, const u_char *ref);
static size_t ngx_http_mcp_schema_dots(u_char *path, size_t len);
static void ngx_http_mcp_schema_split(const u_char *s,
    ngx_http_mcp_schema_uri_t *u);


/*
 * Where subschemas stand, for the index: a schema, an object of schemas,
 * an array of schemas.  An $id anywhere else (inside an enum, an unknown
 * keyword) names nothing.
 */
static const char  *ngx_http_mcp_schema_in_schema[] = {
    "additionalProperties", "contains", "else", "if", "items", "not",
    "propertyNames", "then", "unevaluatedItems", "unevaluatedProperties",
    NULL
};

static const char  *ngx_http_mcp_schema_in_object[] = {
    "$defs", "definitions", "dependentSchemas", "patternProperties",
    "properties", NULL
};

static const char  *ngx_http_mcp_schema_in_array[] = {
    "allOf", "anyOf", "oneOf", "prefixItems", NULL
};


cJSON *
ngx_http_mcp_schema_lookup(ngx_http_mcp_schema_ctx_t *ctx, const char *ref,
    ngx_http_mcp_schema_scope_t *to)
{
    u_char                    *uri, *frag;
    ngx_http_mcp_schema_id_t  *id;

    *to = ctx->scope[ctx->nscope - 1];

    /* the common case: a pointer into the resource at hand */
    if (ref[0] == '#' && (ref[1] == '/' || ref[1] == '\0')) {
        return ngx_http_mcp_schema_pointer(ctx, ref + 1, to);
    }

    uri = ngx_http_mcp_schema_resolve(ctx->pool, to->base, (u_char *) ref);

    if (uri == NULL || ngx_http_mcp_schema_index(ctx) != NGX_OK) {
        ctx->failed = 1;
        return NULL;
    }

    frag = (u_char *) ngx_strchr(uri, '#');

    if (frag != NULL) {
        *frag++ = '\0';
    }

    id = ngx_http_mcp_schema_find(ctx, uri, NULL, 0);

    if (id == NULL) {
        id = ngx_http_mcp_schema_load(ctx, uri);

        if (id == NULL) {
            return NULL;
        }
    }

    to->res = id->res;
    to->base = id->base;

    if (frag == NULL || *frag == '\0') {
        return id->node;
    }

    if (*frag == '/') {
        return ngx_http_mcp_schema_pointer(ctx, (char *) frag, to);
    }

    id = ngx_http_mcp_schema_find(ctx, id->base, (char *) frag, 0);

    if (id == NULL) {
        return NULL;
    }

    to->res = id->res;
    to->base = id->base;

    return id->node;
}


/*
 * A $dynamicRef whose first target bears the $dynamicAnchor it names
 * goes to the outermost resource of the dynamic scope that has one.
 */

cJSON *
ngx_http_mcp_schema_dynamic(ngx_http_mcp_schema_ctx_t *ctx, const char *ref,
    cJSON *target, ngx_http_mcp_schema_scope_t *to)
{
    cJSON                     *anchor;
    const char                *name;
    ngx_uint_t                 i;
    ngx_http_mcp_schema_id_t  *id;

    name = ngx_strchr(ref, '#');

    if (name == NULL || name[1] == '\0' || name[1] == '/') {
        return target;
    }

    name++;

    anchor = ngx_http_mcp_json_get(target, "$dynamicAnchor");

    if (!cJSON_IsString(anchor) || ngx_strcmp(anchor->valuestring, name) != 0)
    {
        return target;
    }

    if (ngx_http_mcp_schema_index(ctx) != NGX_OK) {
        ctx->failed = 1;
        return NULL;
    }

    for (i = 0; i < ctx->nscope; i++) {
        id = ngx_http_mcp_schema_find(ctx, ctx->scope[i].base, name, 1);

        if (id != NULL) {
            to->res = id->res;
            to->base = id->base;
            return id->node;
        }
    }

    return target;
}


/*
 * An RFC 6901 pointer, percent-decoded (it came as a URI fragment), from
 * to->res; an $id on the way moves to->res and to->base along.
 */

static cJSON *
ngx_http_mcp_schema_pointer(ngx_http_mcp_schema_ctx_t *ctx, const char *p,
    ngx_http_mcp_schema_scope_t *to)
{
    u_char     *d, *last, name[256];
    cJSON      *node, *id;
    ngx_int_t   c, index;

    node = to->res;

    while (*p == '/' && node != NULL) {
        p++;
        d = name;
        last = name + sizeof(name) - 1;

        while (*p && *p != '/') {
            if (d == last) {
                return NULL;
            }

            if (p[0] == '%' && p[1] && p[2]
                && (c = ngx_hextoi((u_char *) p + 1, 2)) != NGX_ERROR)
            {
                *d++ = (u_char) c;
                p += 3;
                continue;
            }

            /* RFC 6901 escapes: ~0 is "~", ~1 is "/" */
            if (p[0] == '~' && (p[1] == '0' || p[1] == '1')) {
                *d++ = (p[1] == '0') ? '~' : '/';
                p += 2;
                continue;
            }

            *d++ = *p++;
        }

        *d = '\0';

        if (cJSON_IsArray(node)) {
            index = ngx_atoi(name, d - name);
            node = (index == NGX_ERROR) ? NULL
                                        : cJSON_GetArrayItem(node, index);

        } else {
            node = ngx_http_mcp_json_get(node, (char *) name);
        }

        id = cJSON_IsObject(node) ? ngx_http_mcp_json_get(node, "$id") : NULL;

        if (cJSON_IsString(id)) {
            to->base = ngx_http_mcp_schema_id(ctx, to->base, id->valuestring);
            if (to->base == NULL) {
                return NULL;
            }

            to->res = node;
        }
    }

    return (*p == '\0') ? node : NULL;
}


/* an $id against the base it stands under, without its fragment */

u_char *
ngx_http_mcp_schema_id(ngx_http_mcp_schema_ctx_t *ctx, u_char *base,
    const char *id)
{
    u_char  *uri, *frag;

    uri = ngx_http_mcp_schema_resolve(ctx->pool, base, (u_char *) id);

    if (uri == NULL) {
        ctx->failed = 1;
        return NULL;
    }

    frag = (u_char *) ngx_strchr(uri, '#');

    if (frag != NULL) {
        *frag = '\0';
    }

    return uri;
}


/* the schema's resources and anchors, once a reference needs them */

static ngx_int_t
ngx_http_mcp_schema_index(ngx_http_mcp_schema_ctx_t *ctx)
{
    if (ctx->ids != NULL) {
        return NGX_OK;
    }

    ctx->ids = ngx_array_create(ctx->pool, 8,
                                sizeof(ngx_http_mcp_schema_id_t));
    if (ctx->ids == NULL) {
        return NGX_ERROR;
    }

    if (ngx_http_mcp_schema_index_add(ctx, ctx->scope[0].base,
                                      ctx->scope[0].base, NULL, 0,
                                      ctx->root, ctx->root)
        != NGX_OK)
    {
        return NGX_ERROR;
    }

    return ngx_http_mcp_schema_index_walk(ctx, ctx->root, ctx->scope[0].base,
                                          ctx->root, 0);
}


static ngx_int_t
ngx_http_mcp_schema_index_walk(ngx_http_mcp_schema_ctx_t *ctx, cJSON *node,
    u_char *base, cJSON *res, ngx_uint_t depth)
{
    cJSON        *m, *sub, *a;
    ngx_uint_t    i;
    const char  **names;

    if (!cJSON_IsObject(node) || depth > 2 * NGX_HTTP_MCP_SCHEMA_MAX_DEPTH) {
        return NGX_OK;
    }

    a = ngx_http_mcp_json_get(node, "$id");

    if (cJSON_IsString(a) && node != res) {
        base = ngx_http_mcp_schema_id(ctx, base, a->valuestring);

        if (base == NULL
            || ngx_http_mcp_schema_index_add(ctx, base, base, NULL, 0, node,
                                             node)
               != NGX_OK)
        {
            return NGX_ERROR;
        }

        res = node;
    }

    a = ngx_http_mcp_json_get(node, "$anchor");

    if (cJSON_IsString(a)
        && ngx_http_mcp_schema_index_add(ctx, base, base, a->valuestring, 0,
                                         node, res)
           != NGX_OK)
    {
        return NGX_ERROR;
    }

    a = ngx_http_mcp_json_get(node, "$dynamicAnchor");

    if (cJSON_IsString(a)
        && ngx_http_mcp_schema_index_add(ctx, base, base, a->valuestring, 1,
                                         node, res)
           != NGX_OK)
    {
        return NGX_ERROR;
    }

    cJSON_ArrayForEach(m, node) {

        for (names = ngx_http_mcp_schema_in_schema; *names; names++) {
            if (ngx_strcmp(m->string, *names) == 0) {
                if (ngx_http_mcp_schema_index_walk(ctx, m, base, res,
                                                   depth + 1)
                    != NGX_OK)
                {
                    return NGX_ERROR;
                }

                break;
            }
        }

        i = 0;

        for (names = ngx_http_mcp_schema_in_object; *names; names++) {
            i |= (ngx_strcmp(m->string, *names) == 0 && cJSON_IsObject(m));
        }

        for (names = ngx_http_mcp_schema_in_array; *names; names++) {
            i |= (ngx_strcmp(m->string, *names) == 0 && cJSON_IsArray(m));
        }

        if (!i) {
            continue;
        }

        cJSON_ArrayForEach(sub, m) {
            if (ngx_http_mcp_schema_index_walk(ctx, sub, base, res,
                                               depth + 1)
                != NGX_OK)
            {
                return NGX_ERROR;
            }
        }
    }

    return NGX_OK;
}


static ngx_int_t
ngx_http_mcp_schema_index_add(ngx_http_mcp_schema_ctx_t *ctx, u_char *key,
    u_char *base, const char *anchor, ngx_uint_t dynamic, cJSON *node,
    cJSON *res)
{
    ngx_http_mcp_schema_id_t  *id;

    id = ngx_array_push(ctx->ids);
    if (id == NULL) {
        return NGX_ERROR;
    }

    id->key = key;
    id->base = base;
    id->anchor = anchor;
    id->dynamic = dynamic;
    id->node = node;
    id->res = res;

    return NGX_OK;
}


/* a resource (anchor NULL), an anchor, or only a $dynamicAnchor */

static ngx_http_mcp_schema_id_t *
ngx_http_mcp_schema_find(ngx_http_mcp_schema_ctx_t *ctx, u_char *key,
    const char *anchor, ngx_uint_t dynamic)
{
    ngx_uint_t                 i;
    ngx_http_mcp_schema_id_t  *id;

    id = ctx->ids->elts;

    for (i = 0; i < ctx->ids->nelts; i++) {

        if (ngx_strcmp(id[i].key, key) != 0) {
            continue;
        }

        if (anchor == NULL) {
            if (id[i].anchor == NULL) {
                return &id[i];
            }

            continue;
        }

        if (id[i].anchor != NULL && ngx_strcmp(id[i].anchor, anchor) == 0
            && (id[i].dynamic || !dynamic))
        {
            return &id[i];
        }
    }

    return NULL;
}


/* another document, from the caller's loader: indexed under its URI */

static ngx_http_mcp_schema_id_t *
ngx_http_mcp_schema_load(ngx_http_mcp_schema_ctx_t *ctx, u_char *uri)
{
    cJSON                     *doc, *id;
    u_char                    *base;

    if (ctx->opts == NULL || ctx->opts->load == NULL) {
        return NULL;
    }

    doc = ctx->opts->load(ctx->opts->data, (const char *) uri);

    if (doc == NULL) {
        return NULL;
    }

    base = uri;
    id = ngx_http_mcp_json_get(doc, "$id");

    if (cJSON_IsObject(doc) && cJSON_IsString(id)) {
        base = ngx_http_mcp_schema_id(ctx, uri, id->valuestring);
        if (base == NULL) {
            return NULL;
        }
    }

    /* the retrieval URI, then the document's own */
    if (ngx_http_mcp_schema_index_add(ctx, uri, base, NULL, 0, doc, doc)
        != NGX_OK
        || (base != uri
            && ngx_http_mcp_schema_index_add(ctx, base, base, NULL, 0, doc,
                                             doc)
               != NGX_OK)
        || ngx_http_mcp_schema_index_walk(ctx, doc, base, doc, 0) != NGX_OK)
    {
        ctx->failed = 1;
        return NULL;
    }

    return ngx_http_mcp_schema_find(ctx, uri, NULL, 0);
}


/*
 * RFC 3986 section 5.2: ref against base, both NUL-terminated; the
 * result in the pool, fragment and all.
 */

static void
ngx_http_mcp_schema_split(const u_char *s, ngx_http_mcp_schema_uri_t *u)
{
    const u_char  *p;

    ngx_memzero(u, sizeof(ngx_http_mcp_schema_uri_t));

    for (p = s; *p; p++) {
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z')
              || (p > s && ((*p >= '0' && *p <= '9') || *p == '+'
                            || *p == '-' || *p == '.'))))
        {
            break;
        }
    }

    if (p > s && *p == ':') {
        u->scheme = (u_char *) s;
        u->scheme_len = p - s;
        s = p + 1;
    }

    if (s[0] == '/' && s[1] == '/') {
        s += 2;
        u->auth = (u_char *) s;

        while (*s && *s != '/' && *s != '?' && *s != '#') {
            s++;
        }

        u->auth_len = s - u->auth;
    }

    u->path = (u_char *) s;

    while (*s && *s != '?' && *s != '#') {
        s++;
    }

    u->path_len = s - u->path;

    if (*s == '?') {
        u->query = (u_char *) ++s;

        while (*s && *s != '#') {
            s++;
        }

        u->query_len = s - u->query;
    }

    if (*s == '#') {
        u->frag = (u_char *) ++s;
        u->frag_len = ngx_strlen(s);
    }
}


static u_char *
ngx_http_mcp_schema_resolve(ngx_pool_t *pool, const u_char *base,
    const u_char *ref)
{
    u_char                     *out, *p, *path, *slash;
    size_t                      len;
    ngx_http_mcp_schema_uri_t   b, r, t;

    ngx_http_mcp_schema_split(base, &b);
    ngx_http_mcp_schema_split(ref, &r);

    len = ngx_strlen(base) + ngx_strlen(ref) + 8;

    path = ngx_pnalloc(pool, len);
    out = ngx_pnalloc(pool, len);

    if (path == NULL || out == NULL) {
        return NULL;
    }

    t = r;

    if (r.scheme == NULL) {
        t.scheme = b.scheme;
        t.scheme_len = b.scheme_len;

        if (r.auth == NULL) {
            t.auth = b.auth;
            t.auth_len = b.auth_len;

            if (r.path_len == 0) {
                t.path = b.path;
                t.path_len = b.path_len;

                if (r.query == NULL) {
                    t.query = b.query;
                    t.query_len = b.query_len;
                }

            } else if (r.path[0] != '/') {
                /* merge: the base's directory, then the reference */
                p = path;

                if (b.auth != NULL && b.path_len == 0) {
                    *p++ = '/';

                } else {
                    for (slash = b.path + b.path_len; slash > b.path;
                         slash--)
                    {
                        if (slash[-1] == '/') {
                            break;
                        }
                    }

                    p = ngx_cpymem(p, b.path, slash - b.path);
                }

                p = ngx_cpymem(p, r.path, r.path_len);

                t.path = path;
                t.path_len = p - path;
            }
        }
    }

    if (t.path != path) {
        ngx_memcpy(path, t.path, t.path_len);
        t.path = path;
    }

    t.path_len = ngx_http_mcp_schema_dots(path, t.path_len);

    p = out;

    if (t.scheme != NULL) {
        p = ngx_cpymem(p, t.scheme, t.scheme_len);
        *p++ = ':';
    }

    if (t.auth != NULL) {
        *p++ = '/';
        *p++ = '/';
        p = ngx_cpymem(p, t.auth, t.auth_len);
    }

    p = ngx_cpymem(p, t.path, t.path_len);

    if (t.query != NULL) {
        *p++ = '?';
        p = ngx_cpymem(p, t.query, t.query_len);
    }

    if (t.frag != NULL) {
        *p++ = '#';
        p = ngx_cpymem(p, t.frag, t.frag_len);
    }

    *p = '\0';

    return out;
}


/* RFC 3986 section 5.2.4, in place: the new length */

static size_t
ngx_http_mcp_schema_dots(u_char *path, size_t len)
{
    u_char  *in, *end, *out, *seg;

    in = path;
    end = path + len;
    out = path;

    while (in < end) {

        if (end - in >= 3 && ngx_strncmp(in, "../", 3) == 0) {
            in += 3;

        } else if (end - in >= 2 && ngx_strncmp(in, "./", 2) == 0) {
            in += 2;

        } else if (end - in >= 3 && ngx_strncmp(in, "/./", 3) == 0) {
            in += 2;

        } else if (end - in == 2 && ngx_strncmp(in, "/.", 2) == 0) {
            in += 1;
            *in = '/';

        } else if (end - in >= 4 && ngx_strncmp(in, "/../", 4) == 0) {
            in += 3;

            while (out > path && *--out != '/') { /* void */ }

        } else if (end - in == 3 && ngx_strncmp(in, "/..", 3) == 0) {
            in += 2;
            *in = '/';

            while (out > path && *--out != '/') { /* void */ }

        } else if ((end - in == 1 && in[0] == '.')
                   || (end - in == 2 && in[0] == '.' && in[1] == '.'))
        {
            in = end;

        } else {
            seg = in;

            if (*in == '/') {
                in++;
            }

            while (in < end && *in != '/') {
                in++;
            }

            /* out never passes in: the bytes move down or stay */
            while (seg < in) {
                *out++ = *seg++;
            }
        }
    }

    return out - path;
}
