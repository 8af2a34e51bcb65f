
/*
 * libFuzzer target: ngx_http_mcp_uritemplate_match().  The input is a
 * template and a URI separated by the first newline; without one, the
 * whole input is the URI matched against a fixed set of templates.
 *
 * Besides memory errors, it checks what the matcher promises: values
 * and keys are NUL-terminated, keys are variable names of the template.
 */


#include <ngx_config.h>
#include <ngx_core.h>

#include "ngx_http_mcp_uritemplate.h"
#include "ngx_shim.h"


static void ngx_fuzz_match(ngx_pool_t *pool, ngx_str_t *tmpl,
    ngx_str_t *uri);


static char  *ngx_fuzz_templates[] = {
    "test://template/{id}/data",
    "file:///{+path}",
    "http://example.com{/a,b}{?q,lang}{#frag}",
    "x{;p*}{&list*}{.ext:3}",
    NULL
};


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ngx_int_t    rc;
    ngx_str_t    tmpl, uri;
    ngx_uint_t   i;
    ngx_pool_t  *pool;

    pool = ngx_shim_pool_create();
    if (pool == NULL) {
        return 0;
    }

    rc = ngx_shim_split(pool, data, size, &tmpl, &uri);

    if (rc == NGX_OK) {
        ngx_fuzz_match(pool, &tmpl, &uri);
        goto done;
    }

    if (rc == NGX_ERROR) {
        goto done;
    }

    uri.len = size;
    uri.data = ngx_shim_copy(pool, data, size);
    if (uri.data == NULL) {
        goto done;
    }

    for (i = 0; ngx_fuzz_templates[i]; i++) {
        tmpl.data = (u_char *) ngx_fuzz_templates[i];
        tmpl.len = ngx_strlen(ngx_fuzz_templates[i]);

        ngx_fuzz_match(pool, &tmpl, &uri);
    }

done:

    ngx_shim_pool_destroy(pool);

    return 0;
}


static void
ngx_fuzz_match(ngx_pool_t *pool, ngx_str_t *tmpl, ngx_str_t *uri)
{
    ngx_int_t      rc;
    ngx_uint_t     i;
    ngx_array_t   *vars;
    ngx_keyval_t  *kv;

    vars = ngx_array_create(pool, 4, sizeof(ngx_keyval_t));
    if (vars == NULL) {
        return;
    }

    rc = ngx_http_mcp_uritemplate_match(pool, tmpl, uri, vars);

    if (rc != NGX_OK) {
        if (vars->nelts != 0) {
            fprintf(stderr, "no match, yet %u variables\n",
                    (unsigned) vars->nelts);
            abort();
        }

        return;
    }

    kv = vars->elts;

    for (i = 0; i < vars->nelts; i++) {
        if (kv[i].key.data[kv[i].key.len] != '\0'
            || kv[i].value.data[kv[i].value.len] != '\0'
            || kv[i].key.len == 0
            || ngx_strlchr(tmpl->data, tmpl->data + tmpl->len, '{') == NULL)
        {
            fprintf(stderr, "bad variable %u\n", (unsigned) i);
            abort();
        }
    }
}
