
/*
 * libFuzzer target: ngx_http_mcp_policy_filter_reply(), the filter that
 * takes the tools mcp_tools_deny denies out of an upstream's tools/list
 * reply, JSON or SSE.  The input is the reply body; the deny list holds
 * two exact names.
 *
 * policy.c is included, not linked: its pattern type is private, and
 * the deny list is built here as the directive builds it.
 *
 * Besides memory errors, it checks that a JSON reply the filter changed
 * is JSON that names no denied tool.  The output has no fixed bound: a
 * message printed again may be longer than it came (1e9 is 1000000000,
 * a raw control byte \u0001), which once overran the SSE path's buffer
 * of twice the input plus 16 bytes.
 */


#include "../src/core/ngx_http_mcp_policy.c"

#include "ngx_shim.h"


static void ngx_fuzz_check_json(ngx_str_t *out);
static ngx_uint_t ngx_fuzz_allowed(void *data, ngx_str_t *name);


static ngx_str_t  ngx_fuzz_denied[] = {
    ngx_string("delete_file"),
    ngx_string("exec"),
    ngx_null_string
};


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t               *p;
    ngx_int_t                    rc;
    ngx_str_t                    in, out, *name;
    const char                  *error;
    ngx_pool_t                  *pool;
    ngx_http_mcp_pattern_t      *pat;
    ngx_http_mcp_loc_conf_t      mlcf;
    ngx_http_mcp_tool_filter_t   tf;

    pool = ngx_shim_pool_create();
    if (pool == NULL) {
        return 0;
    }

    ngx_memzero(&mlcf, sizeof(ngx_http_mcp_loc_conf_t));

    mlcf.tools_deny = ngx_array_create(pool, 2,
                                       sizeof(ngx_http_mcp_pattern_t));
    if (mlcf.tools_deny == NULL) {
        goto done;
    }

    for (name = ngx_fuzz_denied; name->len; name++) {
        pat = ngx_array_push(mlcf.tools_deny);
        if (pat == NULL) {
            goto done;
        }

        pat->name = *name;
        pat->regex = NULL;
    }

    in.len = size;
    in.data = ngx_shim_copy(pool, data, size);
    if (in.data == NULL) {
        goto done;
    }

    tf.allowed = ngx_fuzz_allowed;
    tf.message = NULL;
    tf.data = &mlcf;

    /* NGX_DECLINED: not strict JSON, refused whole (nothing to check) */
    rc = ngx_http_mcp_policy_filter_reply(pool, &tf, &in, &out, &error);

    if (rc != NGX_OK) {
        goto done;
    }

    /*
     * A JSON reply filtered stays JSON.  The filter takes a body as JSON
     * when its first non-blank byte is { or [, else as SSE: the same test
     * here, or a rewritten SSE event whose first field line starts with {
     * would pass for JSON.
     */
    for (p = data; p < data + size && (*p == ' ' || *p == '\t'
                                       || *p == '\r' || *p == '\n'); p++)
    {
        /* void */
    }

    if (out.data != in.data && p < data + size && (*p == '{' || *p == '['))
    {
        ngx_fuzz_check_json(&out);
    }

done:

    ngx_shim_pool_destroy(pool);

    return 0;
}


static ngx_uint_t
ngx_fuzz_allowed(void *data, ngx_str_t *name)
{
    return ngx_http_mcp_tool_allowed(data, name);
}


static void
ngx_fuzz_check_json(ngx_str_t *out)
{
    cJSON  *json, *msg, *tools, *tool, *name;

    if (out->len == 0 || (out->data[0] != '{' && out->data[0] != '[')) {
        return;
    }

    json = cJSON_ParseWithLength((const char *) out->data, out->len);

    if (json == NULL) {
        fprintf(stderr, "filtered reply is not JSON: %.*s\n",
                (int) out->len, out->data);
        abort();
    }

    msg = cJSON_IsArray(json) ? json->child : json;

    for ( /* void */ ; msg; msg = cJSON_IsArray(json) ? msg->next : NULL) {
        tools = cJSON_GetObjectItemCaseSensitive(
                    cJSON_GetObjectItemCaseSensitive(msg, "result"), "tools");

        cJSON_ArrayForEach(tool, tools) {
            name = cJSON_GetObjectItemCaseSensitive(tool, "name");

            if (cJSON_IsString(name)
                && (strcmp(name->valuestring, "delete_file") == 0
                    || strcmp(name->valuestring, "exec") == 0))
            {
                fprintf(stderr, "denied tool %s left in the reply\n",
                        name->valuestring);
                abort();
            }
        }
    }

    cJSON_Delete(json);
}
