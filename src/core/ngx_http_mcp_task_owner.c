
/*
 * Whose a task is (it sees it: ngx_http_mcp_task_owner()) and whose
 * tasks_per_client it counts against (ngx_http_mcp_task_quota()): both
 * the call side (ngx_http_mcp_task.c) and the methods
 * (ngx_http_mcp_task_methods.c) ask.
 */


#include "ngx_http_mcp_task.h"
#include "ngx_http_mcp_call.h"

#include <openssl/sha.h>


static ngx_int_t ngx_http_mcp_task_digest(u_char *out, const char *kind,
    u_char *data, size_t len);


/*
 * Whose tasks a call sees: the authenticated subject's; without
 * authorization, a 2025 session's, or else the client's (the zone's
 * per_client value, empty when there is none: then any client that
 * knows a task's id, 128 random bits, may see it).
 */

ngx_int_t
ngx_http_mcp_task_owner(ngx_http_mcp_call_t *call, u_char *owner)
{
    ngx_http_mcp_auth_t    *auth;
    ngx_http_mcp_reqctx_t  *rctx;

    rctx = call->rctx;
    auth = rctx->auth;

    if (auth != NULL) {
        return ngx_http_mcp_task_digest(owner, "auth:", auth->binding,
                                        NGX_HTTP_MCP_AUTH_BINDING_LEN);
    }

    if (rctx->version < NGX_HTTP_MCP_VSTATELESS) {
        return ngx_http_mcp_task_digest(owner, "session:",
                                        rctx->session_id.data,
                                        rctx->session_id.len);
    }

    return ngx_http_mcp_task_digest(owner, "client:", call->client_key.data,
                                    call->client_key.len);
}


/*
 * Whose tasks_per_client a new task counts against: the authenticated
 * subject's; else the client's that per_client= names, over all its
 * sessions and requests; else a stateless client's address (anonymous
 * stateless clients are not all one client); else the session's.
 */

ngx_int_t
ngx_http_mcp_task_quota(ngx_http_mcp_call_t *call, u_char *quota)
{
    ngx_http_request_t  *r;

    r = ngx_http_mcp_call_http_request(call);

    if (call->rctx->auth == NULL && call->client_key.len) {
        return ngx_http_mcp_task_digest(quota, "client:",
                                        call->client_key.data,
                                        call->client_key.len);
    }

    if (call->rctx->auth == NULL && r != NULL
        && ngx_http_mcp_call_stateless(call))
    {
        return ngx_http_mcp_task_digest(quota, "address:",
                                        r->connection->addr_text.data,
                                        r->connection->addr_text.len);
    }

    return ngx_http_mcp_task_owner(call, quota);
}


/* SHA-256 of kind and data: an owner or a quota, 32 bytes */

static ngx_int_t
ngx_http_mcp_task_digest(u_char *out, const char *kind, u_char *data,
    size_t len)
{
    SHA256_CTX  sha;

    if (SHA256_Init(&sha) != 1) {
        return NGX_ERROR;
    }

    SHA256_Update(&sha, kind, ngx_strlen(kind));
    SHA256_Update(&sha, data, len);

    return (SHA256_Final(out, &sha) == 1) ? NGX_OK : NGX_ERROR;
}
