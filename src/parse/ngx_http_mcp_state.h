
/*
 * The requestState of MCP 2026-07-28 multi-round-trip requests: an
 * opaque string the server hands the client in an "input_required"
 * result and takes back on the client's retry.  The client keeps the
 * state so that no worker or node has to: any of them holding the shared
 * key can open it.  Pure code over pools and strings, no request objects.
 *
 *   token = "1." expires "." base64url(payload) "." base64url(mac)
 *   mac   = HMAC-SHA256(key, "1." expires "." base64url(payload) "." bind)
 *
 * expires is in decimal unix seconds.  The payload is authenticated, not
 * encrypted: the client can read it.  bind (the method and tool name, the
 * auth subject) is covered by the MAC but not carried in the token, so a
 * state handed to one caller for one call opens for no other.
 */


#ifndef _NGX_HTTP_MCP_STATE_H_INCLUDED_
#define _NGX_HTTP_MCP_STATE_H_INCLUDED_


#include <ngx_config.h>
#include <ngx_core.h>


#define NGX_HTTP_MCP_STATE_KEY_LEN  32       /* HMAC-SHA256 key bytes */
#define NGX_HTTP_MCP_STATE_MAX_LEN  65536    /* longest token opened */


/*
 * NGX_OK: *token is the sealed state (pool memory, not NUL-terminated);
 * NGX_DECLINED: expires is negative, or the token would be longer than
 * open() takes; NGX_ERROR: out of memory or an OpenSSL failure.
 */
ngx_int_t ngx_http_mcp_state_seal(ngx_pool_t *pool, const u_char *key,
    ngx_str_t *bind, ngx_str_t *payload, time_t expires, ngx_str_t *token);

/*
 * NGX_OK: *payload is the sealed payload (pool memory, followed by a NUL
 * that len does not count); NGX_DECLINED: malformed or forged (MAC
 * mismatch, wrong bind, wrong version); NGX_ABORT: authentic but
 * expired (expires < now); NGX_ERROR: out of memory or an OpenSSL
 * failure.
 */
ngx_int_t ngx_http_mcp_state_open(ngx_pool_t *pool, const u_char *key,
    ngx_str_t *bind, ngx_str_t *token, time_t now, ngx_str_t *payload);


#endif /* _NGX_HTTP_MCP_STATE_H_INCLUDED_ */
