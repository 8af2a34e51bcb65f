
/*
 * Unit tests of src/ngx_http_mcp_uritemplate.c: RFC 6570 matching (the
 * file matches URIs against templates; it does not expand them).  Every
 * operator the file supports, percent-decoding, prefixes, explode, the
 * ambiguous cases it resolves, and the templates it refuses.
 */


#include <ngx_config.h>
#include <ngx_core.h>

#include "ngx_http_mcp_uritemplate.h"
#include "ngx_shim.h"
#include "unit.h"


static ngx_int_t ngx_unit_match(const char *tmpl, const char *uri,
    char *out, size_t size);
static void ngx_unit_matches(const char *tmpl, const char *uri,
    const char *want, const char *name);
static void ngx_unit_declines(const char *tmpl, const char *uri,
    const char *name);
static void ngx_unit_malformed(const char *tmpl, const char *name);
static void test_simple(void);
static void test_operators(void);
static void test_lists(void);
static void test_prefix(void);
static void test_malformed(void);
static void test_vars_array(void);


static ngx_pool_t  *pool;


NGX_UNIT_MAIN("test_uritemplate", test_simple, test_operators, test_lists,
              test_prefix, test_malformed, test_vars_array)


/*
 * Matches and writes the variables found as "key=value;key=value" into
 * out.  Template and URI are exact-size copies: a read past either is an
 * ASan report.  Checks the matcher's promises on the way: keys and
 * values NUL-terminated, no variables left behind when it declines.
 */

static ngx_int_t
ngx_unit_match(const char *tmpl, const char *uri, char *out, size_t size)
{
    char          *o;
    ngx_int_t      rc;
    ngx_str_t      t, u;
    ngx_uint_t     i;
    ngx_array_t   *vars;
    ngx_keyval_t  *kv;

    out[0] = '\0';

    t.len = strlen(tmpl);
    t.data = ngx_pnalloc(pool, t.len);
    u.len = strlen(uri);
    u.data = ngx_pnalloc(pool, u.len);
    vars = ngx_array_create(pool, 2, sizeof(ngx_keyval_t));

    if (t.data == NULL || u.data == NULL || vars == NULL) {
        return -100;
    }

    ngx_memcpy(t.data, tmpl, t.len);
    ngx_memcpy(u.data, uri, u.len);

    rc = ngx_http_mcp_uritemplate_match(pool, &t, &u, vars);

    if (rc != NGX_OK) {
        return (vars->nelts == 0) ? rc : -101;
    }

    kv = vars->elts;
    o = out;

    for (i = 0; i < vars->nelts; i++) {
        if (kv[i].key.data[kv[i].key.len] != '\0'
            || kv[i].value.data[kv[i].value.len] != '\0')
        {
            return -102;
        }

        o += snprintf(o, size - (o - out), "%s%s=%s", i ? ";" : "",
                      (char *) kv[i].key.data, (char *) kv[i].value.data);

        if ((size_t) (o - out) >= size) {
            return -103;
        }
    }

    return NGX_OK;
}


static void
ngx_unit_matches(const char *tmpl, const char *uri, const char *want,
    const char *name)
{
    char       got[512];
    ngx_int_t  rc;

    rc = ngx_unit_match(tmpl, uri, got, sizeof(got));

    if (!CHECK(rc == NGX_OK && strcmp(got, want) == 0, name)) {
        printf("#   %s ~ %s: rc %d, got \"%s\", want \"%s\"\n", tmpl, uri,
               (int) rc, got, want);
    }
}


static void
ngx_unit_declines(const char *tmpl, const char *uri, const char *name)
{
    char       got[512];
    ngx_int_t  rc;

    rc = ngx_unit_match(tmpl, uri, got, sizeof(got));

    if (!CHECK(rc == NGX_DECLINED, name)) {
        printf("#   %s ~ %s: rc %d, got \"%s\", want NGX_DECLINED\n", tmpl,
               uri, (int) rc, got);
    }
}


static void
ngx_unit_malformed(const char *tmpl, const char *name)
{
    char       got[512];
    ngx_int_t  rc;

    /* an error whatever the URI, even one equal to the template */
    rc = ngx_unit_match(tmpl, tmpl, got, sizeof(got));

    if (!CHECK(rc == NGX_ERROR, name)) {
        printf("#   %s: rc %d, want NGX_ERROR\n", tmpl, (int) rc);
    }
}


static void
test_simple(void)
{
    ngx_unit_matches("test://static", "test://static", "",
                     "a template without expressions matches itself");
    ngx_unit_declines("test://static", "test://statics",
                      "... and nothing longer");
    ngx_unit_declines("test://static", "test://stati",
                      "... and nothing shorter");

    ngx_unit_matches("test://template/{id}/data", "test://template/42/data",
                     "id=42", "{id}: the value between the literals");
    ngx_unit_matches("test://template/{id}/data",
                     "test://template/a%20b%2Fc/data", "id=a b/c",
                     "{id}: percent-decoded value");
    ngx_unit_matches("test://template/{id}/data",
                     "test://template/%C3%A9t%c3%a9/data",
                     "id=\xc3\xa9t\xc3\xa9",
                     "{id}: UTF-8 triplets decoded, either case of hex");
    ngx_unit_declines("test://template/{id}/data", "test://template//data",
                      "{id}: an empty value does not match");
    ngx_unit_declines("test://template/{id}/data",
                      "test://template/a/b/data",
                      "{id}: a \"/\" is no part of a simple value");
    ngx_unit_declines("test://template/{id}/data",
                      "test://template/a%2/data",
                      "{id}: a broken percent triplet does not match");
    ngx_unit_declines("test://template/{id}/data",
                      "test://other/42/data",
                      "a different literal does not match");
    ngx_unit_matches("x{a}{b}", "xyz", "a=y;b=z",
                     "{a}{b}: the first takes the longest run that leaves "
                     "the second a value");
}


static void
test_operators(void)
{
    ngx_unit_matches("file:///{+path}", "file:///a/b/c.txt?x=1#f",
                     "path=a/b/c.txt?x=1#f",
                     "{+path}: reserved characters are part of the value");
    ngx_unit_declines("file:///{+path}", "file:///",
                      "{+path}: an empty value does not match");

    ngx_unit_matches("http://h/{#frag}", "http://h/#sec/1",
                     "frag=sec/1", "{#frag}: the fragment");
    ngx_unit_matches("http://h/{#frag}", "http://h/", "",
                     "{#frag}: absent, the variable is undefined");

    ngx_unit_matches("file{.ext}", "file.txt", "ext=txt", "{.ext}: a label");
    ngx_unit_matches("file{.ext}", "file.tar.gz", "ext=tar.gz",
                     "{.ext}: the last variable takes the other labels");
    ngx_unit_declines("file{.ext}", "filetxt",
                      "{.ext}: no \".\", no match");

    ngx_unit_matches("http://h{/a,b}", "http://h/x/y", "a=x;b=y",
                     "{/a,b}: one segment each");
    ngx_unit_matches("http://h{/a,b}", "http://h/x", "a=x",
                     "{/a,b}: b undefined");
    ngx_unit_declines("http://h{/a,b}", "http://h/x/y/z",
                      "{/a,b}: more segments than variables");

    ngx_unit_matches("/s{?q,lang}", "/s?q=cat&lang=en", "q=cat;lang=en",
                     "{?q,lang}: both");
    ngx_unit_matches("/s{?q,lang}", "/s?lang=en&q=c%26t", "lang=en;q=c&t",
                     "{?q,lang}: in another order, decoded");
    ngx_unit_matches("/s{?q,lang}", "/s?lang=", "lang=",
                     "{?q,lang}: one, with an empty value");
    ngx_unit_matches("/s{?q,lang}", "/s", "",
                     "{?q,lang}: none");
    ngx_unit_declines("/s{?q,lang}", "/s?z=1",
                      "{?q,lang}: a name the template lacks");
    ngx_unit_declines("/s{?q,lang}", "/s?q=1&q=2",
                      "{?q,lang}: a name twice");
    ngx_unit_matches("/s?fixed=1{&q}", "/s?fixed=1&q=x", "q=x",
                     "{&q}: a query continued");

    ngx_unit_matches("x{;p,r}", "x;p;r=5", "p=;r=5",
                     "{;p,r}: \";p\" is an empty value, \";r=5\" a value");
}


static void
test_lists(void)
{
    ngx_unit_matches("/{a,b}", "/1,2", "a=1;b=2", "{a,b}: two values");
    ngx_unit_matches("/{a,b}", "/1", "a=1", "{a,b}: b undefined");
    ngx_unit_declines("/{a,b}", "/1,2,3",
                      "{a,b}: more items than variables");
    ngx_unit_matches("/{a,b*}", "/1,2,3", "a=1;b=2,3",
                     "{a,b*}: an exploded last variable takes the rest");
    ngx_unit_matches("/{+a,b}", "/1,2,3", "a=1;b=2,3",
                     "{+a,b}: a reserved last variable takes the rest");
    ngx_unit_matches("/list{/items*}", "/list/a/b/c", "items=a/b/c",
                     "{/items*}: exploded path segments");
}


static void
test_prefix(void)
{
    ngx_unit_matches("/{id:3}", "/abc", "id=abc", "{id:3}: three chars");
    ngx_unit_declines("/{id:3}", "/abcd", "{id:3}: four chars do not");
    ngx_unit_matches("/{id:2}", "/%C3%A9%C3%A9", "id=\xc3\xa9\xc3\xa9",
                     "{id:2}: characters, not bytes, are counted");
    ngx_unit_declines("/{id:2}", "/%C3%A9%C3%A9x",
                      "{id:2}: three characters do not");
    ngx_unit_matches("/{id:3}/{rest}", "/abc/def", "id=abc;rest=def",
                     "{id:3}/{rest}: both");
}


static void
test_malformed(void)
{
    ngx_unit_malformed("a{id", "an unclosed brace: NGX_ERROR");
    ngx_unit_malformed("a}b", "a stray \"}\": NGX_ERROR");
    ngx_unit_malformed("a{}", "an empty expression: NGX_ERROR");
    ngx_unit_malformed("a{=x}", "a reserved operator (=): NGX_ERROR");
    ngx_unit_malformed("a{|x}", "a reserved operator (|): NGX_ERROR");
    ngx_unit_malformed("a{x:0}", "a prefix of 0: NGX_ERROR");
    ngx_unit_malformed("a{x:10000}", "a prefix beyond 9999: NGX_ERROR");
    ngx_unit_malformed("a{x y}", "a space in a name: NGX_ERROR");
    ngx_unit_malformed("a{x%zz}", "a bad triplet in a name: NGX_ERROR");
    ngx_unit_malformed("a{..x}", "a name starting with \".\": NGX_ERROR");
    ngx_unit_malformed("a{a,b,c,d,e,f,g,h,i,j,k,l,m,n,o,p,q}",
                       "17 variables in one expression: NGX_ERROR");
    ngx_unit_malformed("{ok}/{x,}", "an empty name after a comma: NGX_ERROR");

    ngx_unit_matches("a{a,b,c,d,e,f,g,h,i,j,k,l,m,n,o,p}", "a1", "a=1",
                     "16 variables in one expression: accepted");
    ngx_unit_matches("/{x.y_Z%41}", "/v", "x.y_Z%41=v",
                     "dots, underscores and triplets in a name: accepted");
}


static void
test_vars_array(void)
{
    ngx_str_t      t, u;
    ngx_array_t   *vars;
    ngx_keyval_t  *kv;

    vars = ngx_array_create(pool, 1, sizeof(ngx_keyval_t));
    if (vars == NULL) {
        CHECK(0, "array");
        return;
    }

    kv = ngx_array_push(vars);
    if (kv == NULL) {
        CHECK(0, "array");
        return;
    }

    ngx_str_set(&kv->key, "before");
    ngx_str_set(&kv->value, "kept");

    ngx_str_set(&t, "/{a}/{b}");
    ngx_str_set(&u, "/1/2/3");

    CHECK(ngx_http_mcp_uritemplate_match(pool, &t, &u, vars) == NGX_DECLINED
          && vars->nelts == 1,
          "a failed match leaves the caller's variables as they were");

    ngx_str_set(&u, "/1/2");

    CHECK(ngx_http_mcp_uritemplate_match(pool, &t, &u, vars) == NGX_OK
          && vars->nelts == 3,
          "a match appends to the caller's variables");

    kv = vars->elts;

    CHECK(kv[0].value.len == 4 && ngx_strncmp(kv[0].value.data, "kept", 4) == 0
          && kv[1].key.len == 1 && kv[1].key.data[0] == 'a'
          && kv[2].value.len == 1 && kv[2].value.data[0] == '2',
          "... after them, in template order");
}
