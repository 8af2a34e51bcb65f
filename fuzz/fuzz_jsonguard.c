
/*
 * libFuzzer target: ngx_http_mcp_jsonguard_read() and _end(), the reader
 * of a JSON reply to a POST under the tool policy.  The input's first
 * byte seeds how the rest is cut into reads; the rest is the reply.  The
 * POST's requests have the ids "c9" and 7.
 *
 * Besides memory errors, it checks that the verdict does not depend on
 * where the reads were cut, that a reply let through comes out unchanged,
 * and that it is JSON (cJSON reads it) whose every message carries no id,
 * null, "c9" or 7 (cJSON takes the first "id"; the reader refuses two).
 * cJSON refuses a lone surrogate escape, which JSON.parse and the reader
 * take in a string: such inputs skip the cJSON check.
 */


#include <ngx_config.h>
#include <ngx_core.h>

#include "ngx_http_mcp_jsonguard.h"
#include "ngx_http_mcp_jsonrpc.h"
#include "ngx_shim.h"


static ngx_int_t ngx_fuzz_feed(const uint8_t *data, size_t size,
    unsigned seed, u_char *out, size_t *out_len);
static void ngx_fuzz_check_json(const uint8_t *data, size_t size);
static void ngx_fuzz_check_message(cJSON *msg);


static ngx_array_t          ngx_fuzz_msgs;
static ngx_http_mcp_msg_t   ngx_fuzz_elts[2];


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    u_char     *out1, *out2;
    size_t      len1, len2;
    ngx_int_t   rc1, rc2;

    if (size < 1) {
        return 0;
    }

    if (ngx_fuzz_msgs.elts == NULL) {
        ngx_fuzz_elts[0].type = NGX_HTTP_MCP_MSG_REQUEST;
        ngx_fuzz_elts[0].id = cJSON_CreateString("c9");
        ngx_fuzz_elts[1].type = NGX_HTTP_MCP_MSG_REQUEST;
        ngx_fuzz_elts[1].id = cJSON_CreateRaw("7");

        ngx_fuzz_msgs.elts = ngx_fuzz_elts;
        ngx_fuzz_msgs.nelts = 2;
        ngx_fuzz_msgs.size = sizeof(ngx_http_mcp_msg_t);
        ngx_fuzz_msgs.nalloc = 2;
    }

    out1 = malloc(size);
    out2 = malloc(size);

    if (out1 == NULL || out2 == NULL) {
        free(out1);
        free(out2);
        return 0;
    }

    rc1 = ngx_fuzz_feed(data + 1, size - 1, 0, out1, &len1);
    rc2 = ngx_fuzz_feed(data + 1, size - 1, data[0] | 1, out2, &len2);

    if (rc1 != rc2) {
        abort();
    }

    if (rc1 == NGX_OK) {
        if (len1 != size - 1 || len2 != size - 1
            || ngx_memcmp(out1, data + 1, len1) != 0
            || ngx_memcmp(out2, data + 1, len2) != 0)
        {
            abort();
        }

        ngx_fuzz_check_json(data + 1, size - 1);
    }

    free(out1);
    free(out2);

    return 0;
}


/* seed 0: one read; else reads of 1 to 8 bytes, as the seed says */

static ngx_int_t
ngx_fuzz_feed(const uint8_t *data, size_t size, unsigned seed, u_char *out,
    size_t *out_len)
{
    size_t                    at, n, send;
    ngx_int_t                 rc;
    ngx_pool_t               *pool;
    const char               *error;
    ngx_http_mcp_jsonguard_t  g;

    *out_len = 0;

    pool = ngx_shim_pool_create();
    if (pool == NULL) {
        return NGX_ERROR;
    }

    rc = ngx_http_mcp_jsonguard_init(&g, pool, &ngx_fuzz_msgs);
    if (rc != NGX_OK) {
        goto done;
    }

    for (at = 0; at < size; at += n) {
        if (seed == 0) {
            n = size;

        } else {
            seed = seed * 1103515245 + 12345;
            n = ngx_min(1 + ((seed >> 16) % 8), size - at);
        }

        rc = ngx_http_mcp_jsonguard_read(&g, (u_char *) data + at,
                                         (u_char *) data + at + n, &send,
                                         &error);
        if (rc != NGX_OK) {
            goto done;
        }

        ngx_memcpy(out + *out_len, data + at, send);
        *out_len += send;
    }

    rc = ngx_http_mcp_jsonguard_end(&g, &error);

    if (rc == NGX_OK) {
        ngx_memcpy(out + *out_len, g.tail, g.tail_len);
        *out_len += g.tail_len;
    }

done:

    ngx_shim_pool_destroy(pool);

    return rc;
}


static void
ngx_fuzz_check_json(const uint8_t *data, size_t size)
{
    size_t   i;
    cJSON   *json, *msg;

    if (size == 0) {
        return;
    }

    for (i = 0; i + 2 < size; i++) {
        if (data[i] == '\\' && data[i + 1] == 'u'
            && (data[i + 2] | 0x20) == 'd')
        {
            /* a surrogate escape: cJSON may refuse what is JSON */
            return;
        }
    }

    if (size >= 3 && ngx_memcmp(data, "\xef\xbb\xbf", 3) == 0) {
        data += 3;
        size -= 3;
    }

    json = cJSON_ParseWithLength((const char *) data, size);

    if (json == NULL) {
        abort();
    }

    if (cJSON_IsArray(json)) {
        cJSON_ArrayForEach(msg, json) {
            ngx_fuzz_check_message(msg);
        }

    } else {
        ngx_fuzz_check_message(json);
    }

    cJSON_Delete(json);
}


static void
ngx_fuzz_check_message(cJSON *msg)
{
    cJSON  *id;

    if (!cJSON_IsObject(msg)) {
        abort();
    }

    id = cJSON_GetObjectItemCaseSensitive(msg, "id");

    if (id == NULL || cJSON_IsNull(id)
        || (cJSON_IsString(id) && strcmp(id->valuestring, "c9") == 0)
        || (cJSON_IsNumber(id) && id->valuedouble == 7))
    {
        return;
    }

    abort();
}
