
/*
 * mcp_affinity: a balancing method for the upstream blocks mcp_pass
 * relays to, so that a session's requests reach its replica through the
 * block's balancer, and so through its keepalive cache.
 *
 * A session lives on the replica that answered its initialize; the
 * gateway keeps that replica's address in the session zone.  Without
 * this method a pinned request names the address itself (u->resolved),
 * which bypasses the block's peers, and every request of a session opens
 * a connection of its own.  With it, the request goes through the block
 * as any other: the round-robin peer whose address is the session's is
 * chosen here, and keepalive, which wraps this method as it wraps hash,
 * finds a cached connection to it.
 *
 * Requests that hold no session (initialize, 2026-07-28 stateless
 * requests) are balanced by round robin.  A pinned request never moves:
 * when its replica is marked down or has left the block, the request
 * fails and the session is gone, as when the replica cannot be reached.
 * A replica's failure counts (max_fails) are not consulted for pinned
 * requests: one slow or broken tool call would else end every session
 * of a live replica for fail_timeout; the connect decides, as it did.
 *
 * A directive, not a hook the module installs by itself: balancing
 * methods, and keepalive in older nginx (1.22), wrap the block's method as
 * they are read, and the module's own configuration hooks run after the
 * upstream module has initialized the blocks; so a gateway to a block of
 * several servers without it is told at nginx -t, and works as before.
 */


#include "ngx_http_mcp_proxy.h"
#include "ngx_http_mcp_store.h"
#include "ngx_http_mcp_call.h"
#include "ngx_http_mcp_http.h"


typedef struct {
    ngx_flag_t                          affinity;   /* the directive */
    ngx_flag_t                          installed;  /* and it balances */
} ngx_http_mcp_balancer_srv_conf_t;


/* an mcp_pass to an upstream block, for the check at the end */
typedef struct {
    ngx_http_upstream_srv_conf_t       *uscf;
    ngx_str_t                           file;
    ngx_uint_t                          line;
} ngx_http_mcp_balancer_pass_t;


typedef struct {
    ngx_array_t                         passes;
} ngx_http_mcp_balancer_main_conf_t;


typedef struct {
    /* the round robin data must be first */
    ngx_http_upstream_rr_peer_data_t    rrp;
    ngx_http_mcp_target_t              *target;
} ngx_http_mcp_balancer_peer_data_t;


static ngx_int_t ngx_http_mcp_balancer_init(ngx_conf_t *cf,
    ngx_http_upstream_srv_conf_t *us);
static ngx_int_t ngx_http_mcp_balancer_init_peer(ngx_http_request_t *r,
    ngx_http_upstream_srv_conf_t *us);
static ngx_int_t ngx_http_mcp_balancer_get_peer(ngx_peer_connection_t *pc,
    void *data);
static ngx_http_upstream_rr_peer_t *ngx_http_mcp_balancer_find(
    ngx_http_upstream_rr_peers_t *peers, ngx_http_mcp_target_t *target);
static ngx_uint_t ngx_http_mcp_balancer_one_peer(
    ngx_http_upstream_srv_conf_t *uscf);
static void *ngx_http_mcp_balancer_create_main_conf(ngx_conf_t *cf);
static char *ngx_http_mcp_balancer_init_main_conf(ngx_conf_t *cf,
    void *conf);
static void *ngx_http_mcp_balancer_create_srv_conf(ngx_conf_t *cf);
static char *ngx_http_mcp_affinity(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);


static ngx_command_t  ngx_http_mcp_balancer_commands[] = {

    { ngx_string("mcp_affinity"),
      NGX_HTTP_UPS_CONF|NGX_CONF_NOARGS,
      ngx_http_mcp_affinity,
      NGX_HTTP_SRV_CONF_OFFSET,
      0,
      NULL },

      ngx_null_command
};


static ngx_http_module_t  ngx_http_mcp_balancer_module_ctx = {
    NULL,                                  /* preconfiguration */
    NULL,                                  /* postconfiguration */

    ngx_http_mcp_balancer_create_main_conf, /* create main configuration */
    ngx_http_mcp_balancer_init_main_conf,  /* init main configuration */

    ngx_http_mcp_balancer_create_srv_conf, /* create server configuration */
    NULL,                                  /* merge server configuration */

    NULL,                                  /* create location configuration */
    NULL                                   /* merge location configuration */
};


ngx_module_t  ngx_http_mcp_balancer_module = {
    NGX_MODULE_V1,
    &ngx_http_mcp_balancer_module_ctx,     /* module context */
    ngx_http_mcp_balancer_commands,        /* module directives */
    NGX_HTTP_MODULE,                       /* module type */
    NULL,                                  /* init master */
    NULL,                                  /* init module */
    NULL,                                  /* init process */
    NULL,                                  /* init thread */
    NULL,                                  /* exit thread */
    NULL,                                  /* exit process */
    NULL,                                  /* exit master */
    NGX_MODULE_V1_PADDING
};


static ngx_int_t
ngx_http_mcp_balancer_init(ngx_conf_t *cf, ngx_http_upstream_srv_conf_t *us)
{
    ngx_http_mcp_balancer_srv_conf_t  *bcf;

    if (ngx_http_upstream_init_round_robin(cf, us) != NGX_OK) {
        return NGX_ERROR;
    }

    us->peer.init = ngx_http_mcp_balancer_init_peer;

    /* another method named after this one replaces it: then not set */
    bcf = ngx_http_conf_upstream_srv_conf(us, ngx_http_mcp_balancer_module);
    bcf->installed = 1;

    return NGX_OK;
}


static ngx_int_t
ngx_http_mcp_balancer_init_peer(ngx_http_request_t *r,
    ngx_http_upstream_srv_conf_t *us)
{
    ngx_http_mcp_ctx_t                 *ctx;
    ngx_http_mcp_proxy_ctx_t           *pctx;
    ngx_http_mcp_balancer_peer_data_t  *bp;

    bp = ngx_palloc(r->pool, sizeof(ngx_http_mcp_balancer_peer_data_t));
    if (bp == NULL) {
        return NGX_ERROR;
    }

    r->upstream->peer.data = &bp->rrp;

    if (ngx_http_upstream_init_round_robin_peer(r, us) != NGX_OK) {
        return NGX_ERROR;
    }

    bp->target = NULL;

    /* the block may serve other requests than mcp_pass's too */
    ctx = ngx_http_get_module_ctx(r, ngx_http_mcp_module);
    pctx = (ctx != NULL) ? ctx->proxy : NULL;

    if (pctx == NULL || !pctx->pinned) {
        ngx_log_debug0(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                       "mcp affinity: no session, round robin");
        return NGX_OK;
    }

    bp->target = &pctx->target;
    r->upstream->peer.get = ngx_http_mcp_balancer_get_peer;

    return NGX_OK;
}


/*
 * The session's replica, as ngx_http_upstream_hash_module picks a peer:
 * under the peers' lock, counted in its conns, freed by round robin's
 * free (and so kept by keepalive's).  One try: there is no other place
 * for the session, whatever next_upstream says.
 */

static ngx_int_t
ngx_http_mcp_balancer_get_peer(ngx_peer_connection_t *pc, void *data)
{
    ngx_http_mcp_balancer_peer_data_t  *bp = data;

    time_t                         now;
    ngx_http_upstream_rr_peer_t   *peer;
    ngx_http_upstream_rr_peers_t  *peers, *next;

    ngx_log_debug1(NGX_LOG_DEBUG_HTTP, pc->log, 0,
                   "mcp affinity: get peer \"%V\"", &bp->target->name);

    pc->cached = 0;
    pc->connection = NULL;

    now = ngx_time();

    /* the primary servers, then the backup ones */
    for (peers = bp->rrp.peers; peers != NULL; peers = next) {

        ngx_http_upstream_rr_peers_rlock(peers);

        peer = ngx_http_mcp_balancer_find(peers, bp->target);

        if (peer != NULL) {
            goto found;
        }

        next = peers->next;

        ngx_http_upstream_rr_peers_unlock(peers);
    }

    /* nginx logs "no live upstreams" at [error]; the session is gone */
    ngx_log_error(NGX_LOG_INFO, pc->log, 0,
                  "mcp affinity: the session's replica %V is not a server "
                  "of the upstream block", &bp->target->name);

    /* as round robin's: nginx logs and copies the name of the attempt */
    pc->name = bp->rrp.peers->name;

    return NGX_BUSY;

found:

    if (peer->down) {
        ngx_http_upstream_rr_peer_unlock(peers, peer);
        ngx_http_upstream_rr_peers_unlock(peers);

        ngx_log_error(NGX_LOG_INFO, pc->log, 0,
                      "mcp affinity: the session's replica %V is down",
                      &bp->target->name);

        pc->name = peers->name;

        return NGX_BUSY;
    }

    bp->rrp.peers = peers;
    bp->rrp.current = peer;

#ifdef ngx_http_upstream_rr_peer_ref
    ngx_http_upstream_rr_peer_ref(peers, peer);
#endif

    pc->sockaddr = peer->sockaddr;
    pc->socklen = peer->socklen;
    pc->name = &peer->name;

#if (NGX_HTTP_UPSTREAM_SID)
    pc->sid = &peer->sid;
#endif

    pc->tries = 1;

    peer->conns++;

    if (now - peer->checked > peer->fail_timeout) {
        peer->checked = now;
    }

    ngx_http_upstream_rr_peer_unlock(peers, peer);
    ngx_http_upstream_rr_peers_unlock(peers);

    return NGX_OK;
}


/* the peer at the target's address, locked; the peers are read-locked */

static ngx_http_upstream_rr_peer_t *
ngx_http_mcp_balancer_find(ngx_http_upstream_rr_peers_t *peers,
    ngx_http_mcp_target_t *target)
{
    ngx_http_upstream_rr_peer_t  *peer;

    for (peer = peers->peer; peer != NULL; peer = peer->next) {

        if (ngx_cmp_sockaddr(peer->sockaddr, peer->socklen,
                             target->sockaddr, target->socklen, 1)
            != NGX_OK)
        {
            continue;
        }

        ngx_http_upstream_rr_peer_lock(peers, peer);

        return peer;
    }

    return NULL;
}


/*
 * Whether a pinned request must name its replica's address itself
 * (u->resolved): an upstream of more than one server whose balancer
 * does not know sessions.  With one server there is nothing to choose.
 */

ngx_uint_t
ngx_http_mcp_balancer_bypass(ngx_http_upstream_srv_conf_t *uscf)
{
    ngx_http_mcp_balancer_srv_conf_t  *bcf;

    if (ngx_http_mcp_balancer_one_peer(uscf)) {
        return 0;
    }

    if (uscf->srv_conf == NULL) {
        /* an address, not a block: no balancing method of ours */
        return 1;
    }

    bcf = ngx_http_conf_upstream_srv_conf(uscf, ngx_http_mcp_balancer_module);

    return !bcf->installed;
}


static ngx_uint_t
ngx_http_mcp_balancer_one_peer(ngx_http_upstream_srv_conf_t *uscf)
{
    ngx_http_upstream_server_t  *server;

    if (uscf->servers == NULL || uscf->servers->nelts != 1) {
        return 0;
    }

    server = uscf->servers->elts;

    return server[0].naddrs == 1;
}


/* mcp_pass notes its upstream, to be checked once the blocks are read */

ngx_int_t
ngx_http_mcp_balancer_note(ngx_conf_t *cf, ngx_http_upstream_srv_conf_t *uscf)
{
    ngx_http_mcp_balancer_pass_t       *pass;
    ngx_http_mcp_balancer_main_conf_t  *bmcf;

    bmcf = ngx_http_conf_get_module_main_conf(cf,
                                              ngx_http_mcp_balancer_module);

    pass = ngx_array_push(&bmcf->passes);
    if (pass == NULL) {
        return NGX_ERROR;
    }

    pass->uscf = uscf;
    pass->line = cf->conf_file->line;
    pass->file.len = cf->conf_file->file.name.len;
    pass->file.data = ngx_pstrdup(cf->pool, &cf->conf_file->file.name);

    if (pass->file.data == NULL) {
        return NGX_ERROR;
    }

    return NGX_OK;
}


static void *
ngx_http_mcp_balancer_create_main_conf(ngx_conf_t *cf)
{
    ngx_http_mcp_balancer_main_conf_t  *bmcf;

    bmcf = ngx_pcalloc(cf->pool, sizeof(ngx_http_mcp_balancer_main_conf_t));
    if (bmcf == NULL) {
        return NULL;
    }

    if (ngx_array_init(&bmcf->passes, cf->pool, 4,
                       sizeof(ngx_http_mcp_balancer_pass_t))
        != NGX_OK)
    {
        return NULL;
    }

    return bmcf;
}


/*
 * The upstream blocks are initialized by now (ngx_http_upstream_module
 * comes first): a gateway to several servers without mcp_affinity works,
 * but opens a connection per request of a session; the operator is told.
 */

static char *
ngx_http_mcp_balancer_init_main_conf(ngx_conf_t *cf, void *conf)
{
    ngx_http_mcp_balancer_main_conf_t *bmcf = conf;

    ngx_uint_t                     i;
    ngx_http_mcp_balancer_pass_t  *pass;

    pass = bmcf->passes.elts;

    for (i = 0; i < bmcf->passes.nelts; i++) {

        if (pass[i].uscf->srv_conf == NULL
            || !ngx_http_mcp_balancer_bypass(pass[i].uscf))
        {
            continue;
        }

        ngx_log_error(NGX_LOG_WARN, cf->log, 0,
                      "mcp_pass to upstream \"%V\" in %V:%ui: the block has "
                      "several servers and no \"mcp_affinity\", so each "
                      "request of a session opens a connection of its own",
                      &pass[i].uscf->host, &pass[i].file, pass[i].line);
    }

    return NGX_CONF_OK;
}


static void *
ngx_http_mcp_balancer_create_srv_conf(ngx_conf_t *cf)
{
    ngx_http_mcp_balancer_srv_conf_t  *bcf;

    bcf = ngx_pcalloc(cf->pool, sizeof(ngx_http_mcp_balancer_srv_conf_t));
    if (bcf == NULL) {
        return NULL;
    }

    /*
     * set by ngx_pcalloc():
     *
     *     bcf->affinity = 0;
     *     bcf->installed = 0;
     */

    return bcf;
}


static char *
ngx_http_mcp_affinity(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_mcp_balancer_srv_conf_t *bcf = conf;

    ngx_http_upstream_srv_conf_t  *uscf;

    if (bcf->affinity) {
        return "is duplicate";
    }

    uscf = ngx_http_conf_get_module_srv_conf(cf, ngx_http_upstream_module);

    /*
     * An older nginx's keepalive (Debian's 1.22) wraps the method it finds
     * when it is read: this one, written after it, would drop the cache.
     * Another method would lose the sessions.  Later wrappers are fine.
     */
    if (uscf->peer.init_upstream) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"mcp_affinity\" must come before \"keepalive\" "
                           "in the upstream block and cannot be combined "
                           "with another balancing method (\"hash\", "
                           "\"least_conn\", ...)");
        return NGX_CONF_ERROR;
    }

    bcf->affinity = 1;

    /* the servers' parameters are round robin's, as are the new sessions */
    uscf->peer.init_upstream = ngx_http_mcp_balancer_init;

    return NGX_CONF_OK;
}
