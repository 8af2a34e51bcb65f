
/*
 * libFuzzer target: a POST body through ngx_http_mcp_jsonrpc_parse(),
 * then every message's reply built as the transport builds it.
 *
 * Besides memory errors, it checks the parser's promise: an id is
 * echoed as the client wrote it, and what is echoed is JSON, so every
 * reply must parse again.
 */


#include <ngx_config.h>
#include <ngx_core.h>

#include "ngx_http_mcp_jsonrpc.h"
#include "ngx_http_mcp_json.h"
#include "ngx_shim.h"


static void ngx_fuzz_check_reply(ngx_pool_t *pool, cJSON *reply);


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    u_char              *body;
    cJSON               *root, *reply;
    ngx_int_t            rc;
    const char          *error;
    ngx_uint_t           i, batch;
    ngx_pool_t          *pool;
    ngx_array_t          msgs;
    ngx_http_mcp_msg_t  *msg;

    pool = ngx_shim_pool_create();
    if (pool == NULL) {
        return 0;
    }

    body = ngx_shim_copy(pool, data, size);
    if (body == NULL) {
        goto done;
    }

    if (ngx_array_init(&msgs, pool, 1, sizeof(ngx_http_mcp_msg_t))
        != NGX_OK)
    {
        goto done;
    }

    rc = ngx_http_mcp_jsonrpc_parse(pool, body, size, &root, &msgs, &batch,
                                    &error);

    if (rc == NGX_OK) {
        msg = msgs.elts;

        for (i = 0; i < msgs.nelts; i++) {
            if (msg[i].type == NGX_HTTP_MCP_MSG_INVALID) {
                reply = ngx_http_mcp_jsonrpc_error(msg[i].id,
                                                   NGX_HTTP_MCP_INVALID_REQUEST,
                                                   msg[i].error, "0123");

            } else {
                reply = ngx_http_mcp_jsonrpc_result(msg[i].id,
                                                    cJSON_CreateObject());
            }

            ngx_fuzz_check_reply(pool, reply);

            cJSON_Delete(reply);
            cJSON_Delete(msg[i].id);
        }
    }

    cJSON_Delete(root);

done:

    ngx_shim_pool_destroy(pool);

    return 0;
}


static void
ngx_fuzz_check_reply(ngx_pool_t *pool, cJSON *reply)
{
    u_char  *text;
    cJSON   *again;
    size_t   len;

    if (reply == NULL) {
        return;
    }

    text = ngx_http_mcp_json_print(pool, reply, &len);
    if (text == NULL) {
        return;
    }

    again = cJSON_ParseWithLength((const char *) text, len);

    if (again == NULL) {
        fprintf(stderr, "reply is not JSON: %.*s\n", (int) len, text);
        abort();
    }

    cJSON_Delete(again);
}
