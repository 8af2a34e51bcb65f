
/*
 * Unit tests of RFC 6570 template matching (ngx_http_mcp_uritemplate.c):
 * resources/read finds a template's resource and its variables.
 */


#include <ngx_config.h>
#include <ngx_core.h>

#include "ngx_http_mcp_internal.h"
#include "ngx_shim.h"
#include "unit.h"


static ngx_array_t *
match(ngx_pool_t *pool, const char *tmpl, const char *uri, ngx_int_t *rc)
{
    ngx_str_t     t, u;
    ngx_array_t  *vars;

    t.data = (u_char *) tmpl;
    t.len = strlen(tmpl);
    u.data = (u_char *) uri;
    u.len = strlen(uri);

    vars = ngx_array_create(pool, 4, sizeof(ngx_keyval_t));
    *rc = ngx_http_mcp_uritemplate_match(pool, &t, &u, vars);

    return vars;
}


/* the value of variable name, or NULL */
static const char *
var(ngx_array_t *vars, const char *name)
{
    ngx_uint_t     i;
    ngx_keyval_t  *kv;

    kv = vars->elts;

    for (i = 0; i < vars->nelts; i++) {
        if (UNIT_STR_EQ(kv[i].key.data, kv[i].key.len, name)) {
            return (const char *) kv[i].value.data;
        }
    }

    return NULL;
}


int
main(void)
{
    ngx_int_t     rc;
    const char   *v;
    ngx_pool_t   *pool;
    ngx_array_t  *vars;

    pool = ngx_shim_pool_create();

    vars = match(pool, "test://template/{id}/data", "test://template/42/data",
                 &rc);
    UNIT_CHECK(rc == NGX_OK, "simple: matches");
    v = var(vars, "id");
    UNIT_CHECK(v != NULL && strcmp(v, "42") == 0, "simple: id is 42");

    (void) match(pool, "test://template/{id}/data",
                 "test://template/42/other", &rc);
    UNIT_CHECK(rc == NGX_DECLINED, "simple: another suffix does not match");

    (void) match(pool, "test://template/{id}/data",
                 "test://template/a/b/data", &rc);
    UNIT_CHECK(rc == NGX_DECLINED,
               "simple: a simple variable takes no slash");

    vars = match(pool, "test://template/{id}/data",
                 "test://template/a%20b/data", &rc);
    v = var(vars, "id");
    UNIT_CHECK(rc == NGX_OK && v != NULL && strcmp(v, "a b") == 0,
               "simple: percent-encoding is decoded");

    vars = match(pool, "file:///{+path}", "file:///etc/nginx/nginx.conf",
                 &rc);
    v = var(vars, "path");
    UNIT_CHECK(rc == NGX_OK && v != NULL
               && strcmp(v, "etc/nginx/nginx.conf") == 0,
               "reserved: {+path} takes slashes");

    vars = match(pool, "http://example.com/search{?q,lang}",
                 "http://example.com/search?q=cat&lang=en", &rc);
    UNIT_CHECK(rc == NGX_OK, "query: matches");
    v = var(vars, "q");
    UNIT_CHECK(v != NULL && strcmp(v, "cat") == 0, "query: q");
    v = var(vars, "lang");
    UNIT_CHECK(v != NULL && strcmp(v, "en") == 0, "query: lang");

    vars = match(pool, "http://example.com/search{?q,lang}",
                 "http://example.com/search?q=cat", &rc);
    UNIT_CHECK(rc == NGX_OK && var(vars, "lang") == NULL,
               "query: a missing parameter is left out");

    vars = match(pool, "http://example.com{/a,b}",
                 "http://example.com/x/y", &rc);
    UNIT_CHECK(rc == NGX_OK && var(vars, "a") != NULL
               && strcmp(var(vars, "a"), "x") == 0
               && var(vars, "b") != NULL && strcmp(var(vars, "b"), "y") == 0,
               "path segments: {/a,b}");

    vars = match(pool, "doc{#frag}", "doc#intro", &rc);
    v = var(vars, "frag");
    UNIT_CHECK(rc == NGX_OK && v != NULL && strcmp(v, "intro") == 0,
               "fragment: {#frag}");

    vars = match(pool, "x{.ext}", "x.json", &rc);
    v = var(vars, "ext");
    UNIT_CHECK(rc == NGX_OK && v != NULL && strcmp(v, "json") == 0,
               "label: {.ext}");

    (void) match(pool, "a{id}b", "a", &rc);
    UNIT_CHECK(rc == NGX_DECLINED, "a URI shorter than the template");

    (void) match(pool, "plain://uri", "plain://uri", &rc);
    UNIT_CHECK(rc == NGX_OK, "a template without variables matches itself");

    (void) match(pool, "plain://uri", "plain://uri2", &rc);
    UNIT_CHECK(rc == NGX_DECLINED, "... and nothing longer");

    (void) match(pool, "bad{id", "bad1", &rc);
    UNIT_CHECK(rc != NGX_OK, "an unclosed expression matches nothing");

    ngx_shim_pool_destroy(pool);

    return unit_done("uritemplate");
}
