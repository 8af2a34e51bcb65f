
/*
 * libFuzzer target: ngx_http_mcp_schema_validate_opts().  The input is a
 * schema and an instance, both JSON, split at the first NUL byte or,
 * without one, the first newline; without either, the whole input is
 * the instance, checked against a fixed schema.  format asserts when the
 * input's length is odd, so the format checks see the instance strings.
 *
 * Besides memory errors, it checks what the validator promises: a
 * failure (NGX_DECLINED) comes with a NUL-terminated, printable message
 * of at most 255 characters; and the schema compiled (as a tool's is)
 * gives the same verdict.
 */


#include <ngx_config.h>
#include <ngx_core.h>
#include <cjson/cJSON.h>

#include "ngx_http_mcp_schema.h"
#include "ngx_shim.h"


static void ngx_fuzz_check_error(u_char *error);


static char  ngx_fuzz_schema[] =
    "{\"type\":\"object\",\"required\":[\"name\"],"
    "\"properties\":{\"name\":{\"type\":\"string\",\"pattern\":\"^[a-z]+$\","
    "\"maxLength\":8},\"n\":{\"type\":\"integer\",\"minimum\":0,"
    "\"multipleOf\":3},\"tags\":{\"type\":\"array\",\"uniqueItems\":true,"
    "\"items\":{\"$ref\":\"#/$defs/tag\"}}},"
    "\"additionalProperties\":false,"
    "\"$defs\":{\"tag\":{\"enum\":[\"a\",\"b\",1,null]}}}";


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    cJSON                       *schema, *instance;
    u_char                      *error, *sep;
    size_t                       slen;
    ngx_int_t                    rc, crc;
    ngx_pool_t                  *pool;
    ngx_http_mcp_schema_opts_t   opts;

    sep = memchr(data, '\0', size);

    if (sep == NULL) {
        sep = memchr(data, '\n', size);
    }

    if (sep != NULL) {
        slen = sep - data;
        schema = cJSON_ParseWithLength((const char *) data, slen);
        instance = cJSON_ParseWithLength((const char *) sep + 1,
                                         size - slen - 1);

    } else {
        schema = cJSON_Parse(ngx_fuzz_schema);
        instance = cJSON_ParseWithLength((const char *) data, size);
    }

    pool = ngx_shim_pool_create();

    if (pool != NULL && schema != NULL && instance != NULL) {
        error = NULL;

        ngx_memzero(&opts, sizeof(ngx_http_mcp_schema_opts_t));
        opts.format_assert = size & 1;

        rc = ngx_http_mcp_schema_validate_opts(pool, schema, instance, &opts,
                                               &error);

        if (rc == NGX_DECLINED) {
            ngx_fuzz_check_error(error);

        } else if (rc != NGX_OK && rc != NGX_ERROR) {
            fprintf(stderr, "schema_validate() returned %d\n", (int) rc);
            abort();
        }

        opts.compiled = ngx_http_mcp_schema_compile(pool, schema);

        if (rc != NGX_ERROR && opts.compiled != NULL) {
            crc = ngx_http_mcp_schema_validate_opts(pool, schema, instance,
                                                    &opts, &error);

            if (crc != rc && crc != NGX_ERROR) {
                fprintf(stderr, "compiled: %d, not %d\n", (int) crc,
                        (int) rc);
                abort();
            }
        }
    }

    if (pool != NULL) {
        ngx_shim_pool_destroy(pool);
    }

    cJSON_Delete(schema);
    cJSON_Delete(instance);

    return 0;
}


static void
ngx_fuzz_check_error(u_char *error)
{
    size_t  n;

    if (error == NULL) {
        fprintf(stderr, "NGX_DECLINED without a message\n");
        abort();
    }

    /* ASan reports a read past the 256 bytes if the NUL is missing */
    for (n = 0; error[n]; n++) {
        if (error[n] < 0x20 || error[n] == 0x7f) {
            fprintf(stderr, "unprintable byte 0x%02x in \"%s\"\n",
                    error[n], error);
            abort();
        }
    }

    if (n > 255) {
        fprintf(stderr, "message of %zu bytes\n", n);
        abort();
    }
}
