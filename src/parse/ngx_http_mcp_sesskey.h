
/*
 * Keyed gateway session ids (mcp_session_key): the client-facing session
 * id of an mcp_pass location carries, sealed with AES-256-GCM under a key
 * the gateway nodes share, what the session zone keeps otherwise: the
 * replica, the replica's own session id, the caller's binding, the
 * protocol version and the time it was issued.  Any node holding the key
 * serves any request of the session; no node stores anything.  Pure code
 * over pools and strings, no request objects.
 *
 *   id    = base64url(0x01 || kid[4] || nonce[12] || ciphertext || tag[16])
 *   plain = issued[8, big-endian] || version[1] || flags[1]
 *           || [binding[32] when flags & 1]
 *           || name_len[1] || name || sid_len[2, big-endian] || sid
 *
 * The first 5 bytes (format and key id) are the GCM additional data, and
 * after them the scope the id is sealed for (the location's, see
 * ngx_http_mcp_loc_conf_t): an id opens only where it was made, however
 * many locations or servers share the key.  The key id picks the key
 * among those configured, so that ids sealed with a key being retired
 * still open during a rotation.
 */


#ifndef _NGX_HTTP_MCP_SESSKEY_H_INCLUDED_
#define _NGX_HTTP_MCP_SESSKEY_H_INCLUDED_


#include <ngx_config.h>
#include <ngx_core.h>


#define NGX_HTTP_MCP_SESSKEY_LEN       32    /* AES-256 */
#define NGX_HTTP_MCP_SESSKEY_KID_LEN   4
#define NGX_HTTP_MCP_SESSKEY_BIND_LEN  32
#define NGX_HTTP_MCP_SESSKEY_MAX_NAME  255   /* the replica's name */
#define NGX_HTTP_MCP_SESSKEY_MAX_SID   1024  /* the replica's session id */
#define NGX_HTTP_MCP_SESSKEY_MAX_ID    2048  /* longest id opened */


typedef struct {
    u_char                     key[NGX_HTTP_MCP_SESSKEY_LEN];
    u_char                     kid[NGX_HTTP_MCP_SESSKEY_KID_LEN];
} ngx_http_mcp_sesskey_t;


typedef struct {
    ngx_str_t                  name;        /* the replica: "addr:port" */
    ngx_str_t                  sid;         /* its session id, or empty */
    u_char                    *binding;     /* the caller's, or NULL */
    ngx_uint_t                 version;     /* 0..255 */
    time_t                     issued;
} ngx_http_mcp_sesskey_session_t;


/*
 * The key and its id, derived from secret (the SHA-256 of the key file),
 * each with its own label: the same file as mcp_state_key's gives other
 * keys.  NGX_OK, or NGX_ERROR on an OpenSSL failure.
 */
ngx_int_t ngx_http_mcp_sesskey_init(ngx_http_mcp_sesskey_t *key,
    const u_char *secret);

/*
 * NGX_OK: *id is the sealed session (pool memory, not NUL-terminated);
 * NGX_DECLINED: the name or sid is too long, or the issue time negative;
 * NGX_ERROR: out of memory or an OpenSSL failure.
 */
ngx_int_t ngx_http_mcp_sesskey_seal(ngx_pool_t *pool,
    ngx_http_mcp_sesskey_t *key, ngx_str_t *scope,
    ngx_http_mcp_sesskey_session_t *s, ngx_str_t *id);

/*
 * Opened with whichever of the n keys has its key id.  NGX_OK: *s is the
 * session (name, sid and binding point into pool memory); NGX_DECLINED:
 * malformed, no such key, or forged; NGX_ABORT: authentic but issued
 * more than lifetime seconds before now (0: no limit); NGX_ERROR: out
 * of memory or an OpenSSL failure.
 */
ngx_int_t ngx_http_mcp_sesskey_open(ngx_pool_t *pool,
    ngx_http_mcp_sesskey_t *keys, ngx_uint_t n, ngx_str_t *scope,
    ngx_str_t *id, time_t now, time_t lifetime,
    ngx_http_mcp_sesskey_session_t *s);


#endif /* _NGX_HTTP_MCP_SESSKEY_H_INCLUDED_ */
