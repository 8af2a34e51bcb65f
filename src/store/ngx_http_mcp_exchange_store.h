
/*
 * The tokens of mcp_token_exchange (RFC 8693), shared by every worker in
 * a zone of their own (ngx_http_mcp_session_exchange.c): one per key (a
 * SHA-256 of the caller's token and what was asked for it), kept until
 * shortly before it expires, with the state of its exchange (in flight
 * since, failed or refused at) so that all workers make one exchange per
 * key at a time and at most one a second after a failure.
 */


#ifndef _NGX_HTTP_MCP_EXCHANGE_STORE_H_INCLUDED_
#define _NGX_HTTP_MCP_EXCHANGE_STORE_H_INCLUDED_


#include "ngx_http_mcp.h"


#define NGX_HTTP_MCP_EXCHANGE_KEY_LEN  32     /* SHA-256 */


/* what a lookup found */
typedef enum {
    NGX_HTTP_MCP_EXCHANGE_HIT = 0,      /* *token set, in the pool */
    NGX_HTTP_MCP_EXCHANGE_GO,           /* the caller exchanges now */
    NGX_HTTP_MCP_EXCHANGE_WAIT,         /* another request exchanges */
    NGX_HTTP_MCP_EXCHANGE_FAILED,       /* the last attempt failed, less
                                           than a second ago */
    NGX_HTTP_MCP_EXCHANGE_REFUSED       /* the AS refused it, less than a
                                           second ago */
} ngx_http_mcp_exchange_found_e;


/* the zone (created once, whatever the number of locations) */
ngx_shm_zone_t *ngx_http_mcp_exchange_zone(ngx_conf_t *cf, size_t size,
    ngx_uint_t max);
/*
 * The key's token, or what to do.  An exchange in flight longer than
 * stale ms is taken over (its worker died, or its reply was lost).
 */
ngx_http_mcp_exchange_found_e ngx_http_mcp_exchange_lookup(
    ngx_shm_zone_t *zone, u_char *key, ngx_msec_t stale, ngx_pool_t *pool,
    ngx_str_t *token);
/* the exchanged token, valid until the time "until" (seconds) */
ngx_int_t ngx_http_mcp_exchange_put(ngx_shm_zone_t *zone, u_char *key,
    ngx_str_t *token, time_t until, ngx_log_t *log);
/* the exchange failed (refused: the AS said no); a second's hold-off */
void ngx_http_mcp_exchange_fail(ngx_shm_zone_t *zone, u_char *key,
    ngx_uint_t refused);


#endif /* _NGX_HTTP_MCP_EXCHANGE_STORE_H_INCLUDED_ */
