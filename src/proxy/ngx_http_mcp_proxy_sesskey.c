
/*
 * mcp_pass with mcp_session_key: the gateway tier without shared state.
 * The client-facing session id is sealed after the replica's initialize
 * reply (ngx_http_mcp_sesskey.c) and carries the replica and its session
 * id; every later request opens it instead of looking in the zone, so
 * any gateway node holding the key serves any request of any session.
 *
 * The id is the gateway's own doing, but a client could replay one made
 * for another location, or one naming a replica the upstream no longer
 * has: the replica it names must be one of the servers of this
 * location's upstream, by the name the balancer gives it, and the
 * request goes to that server's configured address, never to an address
 * read from the id.  Without a store nothing can be revoked: a DELETE
 * goes to the replica, which forgets the session; the id still opens
 * until its lifetime ends, and the replica answers 404 to it.
 */


#include "ngx_http_mcp_proxy.h"
#include "ngx_http_mcp_jsonrpc.h"
#include "ngx_http_mcp_sesskey.h"
#include "ngx_http_mcp_store.h"
#include "ngx_http_mcp_call.h"
#include "ngx_http_mcp_auth.h"
#include "ngx_http_mcp_http.h"


static ngx_int_t ngx_http_mcp_proxy_sesskey_open(ngx_http_mcp_ctx_t *ctx,
    ngx_str_t *id, ngx_http_mcp_target_t *target);
static ngx_addr_t *ngx_http_mcp_proxy_sesskey_peer(
    ngx_http_upstream_srv_conf_t *uscf, ngx_str_t *name);


/*
 * The session's replica and upstream id, from the keyed id or from the
 * zone: NGX_OK, or NGX_DECLINED for a session the client gets 404 for.
 */

ngx_int_t
ngx_http_mcp_proxy_target(ngx_http_mcp_ctx_t *ctx, ngx_str_t *id,
    ngx_http_mcp_target_t *target)
{
    if (ctx->conf->session_keys == NULL) {
        return ngx_http_mcp_session_target(ctx->conf->zone, id,
                                           ctx->request->pool, target,
                                           &ctx->rctx);
    }

    return ngx_http_mcp_proxy_sesskey_open(ctx, id, target);
}


static ngx_int_t
ngx_http_mcp_proxy_sesskey_open(ngx_http_mcp_ctx_t *ctx, ngx_str_t *id,
    ngx_http_mcp_target_t *target)
{
    ngx_int_t                        rc;
    ngx_log_t                       *log;
    ngx_addr_t                      *addr;
    ngx_array_t                     *keys;
    ngx_http_mcp_auth_t             *auth;
    ngx_http_mcp_sesskey_session_t   s;
    ngx_http_mcp_proxy_loc_conf_t   *plcf;

    log = ctx->request->connection->log;
    keys = ctx->conf->session_keys;

    rc = ngx_http_mcp_sesskey_open(ctx->request->pool, keys->elts,
                                   keys->nelts, &ctx->conf->scope, id,
                                   ngx_time(), ctx->conf->session_lifetime,
                                   &s);

    if (rc == NGX_ERROR) {
        return NGX_ERROR;
    }

    if (rc != NGX_OK) {
        ngx_log_debug2(NGX_LOG_DEBUG_HTTP, log, 0,
                       "mcp session %s: keyed id %s",
                       ngx_http_mcp_session_log_id(id->data, id->len),
                       rc == NGX_ABORT ? "expired" : "refused");
        return NGX_DECLINED;
    }

    /* a session is its caller's: to anyone else it does not exist */
    auth = ctx->rctx.auth;

    if ((s.binding != NULL) != (auth != NULL)
        || (auth != NULL
            && ngx_memcmp(s.binding, auth->binding,
                          NGX_HTTP_MCP_AUTH_BINDING_LEN) != 0))
    {
        ngx_log_debug1(NGX_LOG_DEBUG_HTTP, log, 0,
                       "mcp session %s: another caller's",
                       ngx_http_mcp_session_log_id(id->data, id->len));
        return NGX_DECLINED;
    }

    plcf = ngx_http_get_module_loc_conf(ctx->request,
                                        ngx_http_mcp_proxy_module);

    addr = ngx_http_mcp_proxy_sesskey_peer(plcf->upstream.upstream, &s.name);
    if (addr == NULL) {
        ngx_log_error(NGX_LOG_INFO, log, 0,
                      "mcp: session %s names \"%V\", not a server of the "
                      "upstream",
                      ngx_http_mcp_session_log_id(id->data, id->len),
                      &s.name);
        return NGX_DECLINED;
    }

    target->sockaddr = addr->sockaddr;
    target->socklen = addr->socklen;
    target->name = addr->name;
    target->sid = s.sid;

    ctx->rctx.version = s.version;
    ctx->rctx.session_id = *id;

    return NGX_OK;
}


/* the configured address the balancer names name, or NULL */

static ngx_addr_t *
ngx_http_mcp_proxy_sesskey_peer(ngx_http_upstream_srv_conf_t *uscf,
    ngx_str_t *name)
{
    ngx_uint_t                     i, j;
    ngx_http_upstream_rr_peer_t   *peer;
    ngx_http_upstream_rr_peers_t  *peers;
    ngx_http_upstream_server_t    *server;

    static ngx_addr_t  found;

    if (uscf->servers != NULL) {
        server = uscf->servers->elts;

        for (i = 0; i < uscf->servers->nelts; i++) {
            for (j = 0; j < server[i].naddrs; j++) {
                if (server[i].addrs[j].name.len == name->len
                    && ngx_strncmp(server[i].addrs[j].name.data, name->data,
                                   name->len) == 0)
                {
                    return &server[i].addrs[j];
                }
            }
        }

        return NULL;
    }

    /*
     * An upstream that mcp_pass's URL made (a host name resolved when
     * the configuration was read): its addresses are its round-robin
     * peers, which no other balancer can replace, and which a zone does
     * not change.
     */

    for (peers = uscf->peer.data; peers != NULL; peers = peers->next) {
        for (peer = peers->peer; peer != NULL; peer = peer->next) {
            if (peer->name.len == name->len
                && ngx_strncmp(peer->name.data, name->data, name->len) == 0)
            {
                found.sockaddr = peer->sockaddr;
                found.socklen = peer->socklen;
                found.name = peer->name;
                return &found;
            }
        }
    }

    return NULL;
}


/*
 * The replica answered initialize: the session's keyed id, sealed now
 * that its replica and upstream id are known, becomes the client's
 * Mcp-Session-Id.  NGX_DECLINED: the replica's id is too long to carry.
 */

ngx_int_t
ngx_http_mcp_proxy_sesskey_mint(ngx_http_request_t *r,
    ngx_http_mcp_proxy_ctx_t *pctx)
{
    ngx_int_t                        rc;
    ngx_http_upstream_t             *u;
    ngx_http_mcp_ctx_t              *ctx;
    ngx_http_mcp_auth_t             *auth;
    ngx_http_mcp_sesskey_session_t   s;
    ngx_http_mcp_session_init_t      init;
    ngx_http_mcp_msg_t              *msg;

    ctx = pctx->ctx;
    u = r->upstream;
    auth = ctx->rctx.auth;
    msg = ctx->msgs.elts;

    (void) ngx_http_mcp_session_init_params(msg[0].params, &init);

    ngx_memzero(&s, sizeof(ngx_http_mcp_sesskey_session_t));
    s.name = *u->peer.name;
    s.sid = pctx->upstream_sid;
    s.binding = (auth != NULL) ? auth->binding : NULL;
    s.version = init.version;
    s.issued = ngx_time();

    rc = ngx_http_mcp_sesskey_seal(r->pool, ctx->conf->session_keys->elts,
                                   &ctx->conf->scope, &s, &pctx->client_sid);

    if (rc == NGX_DECLINED) {
        ngx_log_error(NGX_LOG_ERR, r->connection->log, 0,
                      "mcp: the session id of replica \"%V\" is too long "
                      "for a keyed session id (%uz bytes)",
                      &s.name, s.sid.len);
        return NGX_DECLINED;
    }

    if (rc != NGX_OK) {
        return NGX_ERROR;
    }

    /* as a minted session's: for $mcp_session_id and the logs */
    ctx->new_session = pctx->client_sid;
    ctx->rctx.session_id = pctx->client_sid;
    ctx->rctx.version = init.version;

    ngx_log_debug1(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "mcp session %s: keyed id sealed",
                   ngx_http_mcp_session_log_id(pctx->client_sid.data,
                                               pctx->client_sid.len));

    /* the replica's own id, taken from the reply, gives way to it */
    if (pctx->sid_header != NULL) {
        pctx->sid_header->value = pctx->client_sid;
    }

    return NGX_OK;
}
