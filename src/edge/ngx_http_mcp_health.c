
/*
 * Health probes: mcp_health live | startup | ready.  live says the worker
 * answers; startup that the configuration is loaded, the session zones
 * are attached and the worker's wake-up socket is open; ready that every
 * session zone is below its fill threshold and that each upstream named
 * with upstream= has a replica that answers.
 *
 * nginx's own upstream state (fails, max_fails) changes only after
 * traffic has failed, so an idle gateway would look ready with every
 * replica dead.  Instead ready opens a TCP connection to each replica,
 * all at once and without blocking the worker (nginx's own non-blocking
 * connect, with a timeout), and closes it as soon as it is made; what it
 * learns is kept a second in the worker, so that probes from many
 * clients cost the replicas one connection a second at most.
 */


#include "ngx_http_mcp_edge.h"
#include "ngx_http_mcp_store.h"
#include "ngx_http_mcp_core.h"


#define NGX_HTTP_MCP_HEALTH_LIVE     0
#define NGX_HTTP_MCP_HEALTH_STARTUP  1
#define NGX_HTTP_MCP_HEALTH_READY    2

#define NGX_HTTP_MCP_HEALTH_CACHE    1000     /* ms a probe's result holds */
#define NGX_HTTP_MCP_HEALTH_PEERS    64       /* probed per upstream */


typedef struct {
    ngx_str_t                       name;
    ngx_http_upstream_srv_conf_t   *uscf;
    ngx_msec_t                      checked;    /* this worker's last probe */
    ngx_uint_t                      peers;
    ngx_uint_t                      answering;
    unsigned                        known:1;
} ngx_http_mcp_health_upstream_t;


typedef struct {
    ngx_uint_t                      kind;
    ngx_uint_t                      threshold;  /* zone fill, percent */
    ngx_msec_t                      timeout;    /* of a probe's connect */
    ngx_array_t                     upstreams;  /* _health_upstream_t */
} ngx_http_mcp_health_conf_t;


typedef struct {
    ngx_http_request_t             *request;
    ngx_http_mcp_health_conf_t     *hcf;
    ngx_array_t                     probes;     /* _health_probe_t */
    ngx_uint_t                      pending;
    ngx_uint_t                      waiting;    /* the handler returned */
    ngx_uint_t                     *peers;      /* per upstream, probed */
    ngx_uint_t                     *answering;
    ngx_log_t                       log;        /* the probes' own */
} ngx_http_mcp_health_ctx_t;


typedef struct {
    ngx_http_mcp_health_ctx_t      *ctx;
    ngx_uint_t                      upstream;   /* its index */
    ngx_peer_connection_t           pc;
    ngx_str_t                       name;
    unsigned                        done:1;
} ngx_http_mcp_health_probe_t;


static ngx_int_t ngx_http_mcp_health_handler(ngx_http_request_t *r);
static ngx_int_t ngx_http_mcp_health_probe_all(ngx_http_mcp_health_ctx_t *ctx);
static ngx_int_t ngx_http_mcp_health_probe_peers(
    ngx_http_mcp_health_ctx_t *ctx, ngx_uint_t n,
    ngx_http_upstream_rr_peers_t *peers);
static void ngx_http_mcp_health_probe_start(ngx_http_mcp_health_probe_t *p);
static void ngx_http_mcp_health_probe_handler(ngx_event_t *ev);
static void ngx_http_mcp_health_probe_done(ngx_http_mcp_health_probe_t *p,
    ngx_uint_t ok);
static void ngx_http_mcp_health_cleanup(void *data);
static ngx_int_t ngx_http_mcp_health_reply(ngx_http_mcp_health_ctx_t *ctx);
static u_char *ngx_http_mcp_health_zones(ngx_http_request_t *r, u_char *p,
    ngx_http_mcp_health_conf_t *hcf, ngx_uint_t *ok);
static u_char *ngx_http_mcp_health_zone(u_char *p, ngx_shm_zone_t *zone,
    ngx_http_mcp_health_conf_t *hcf, ngx_uint_t *ok);
static u_char *ngx_http_mcp_health_name(u_char *p, const char *kind,
    ngx_str_t *name);


static const char  *ngx_http_mcp_health_kinds[] = {
    "live", "startup", "ready"
};


/*
 * mcp_health live | startup | ready [zone_threshold=N%] [upstream=name]...
 *     [timeout=time];
 */

char *
ngx_http_mcp_health(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_mcp_loc_conf_t *mlcf = conf;

    ngx_int_t                        n;
    ngx_str_t                       *value, s;
    ngx_url_t                        u;
    ngx_uint_t                       i;
    ngx_http_core_loc_conf_t        *clcf;
    ngx_http_mcp_health_conf_t      *hcf;
    ngx_http_mcp_health_upstream_t  *up;

    if (mlcf->health != NULL) {
        return "is duplicate";
    }

    hcf = ngx_pcalloc(cf->pool, sizeof(ngx_http_mcp_health_conf_t));
    if (hcf == NULL
        || ngx_array_init(&hcf->upstreams, cf->pool, 1,
                          sizeof(ngx_http_mcp_health_upstream_t))
           != NGX_OK)
    {
        return NGX_CONF_ERROR;
    }

    value = cf->args->elts;

    for (i = 0; i < 3; i++) {
        if (ngx_strcmp(value[1].data, ngx_http_mcp_health_kinds[i]) == 0) {
            break;
        }
    }

    if (i == 3) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "invalid value \"%V\", expected \"live\", "
                           "\"startup\" or \"ready\"", &value[1]);
        return NGX_CONF_ERROR;
    }

    hcf->kind = i;
    hcf->threshold = 90;
    hcf->timeout = 300;

    for (i = 2; i < cf->args->nelts; i++) {

        if (hcf->kind != NGX_HTTP_MCP_HEALTH_READY) {
            goto invalid;
        }

        if (ngx_strncmp(value[i].data, "zone_threshold=", 15) == 0) {
            s.data = value[i].data + 15;
            s.len = value[i].len - 15;

            if (s.len && s.data[s.len - 1] == '%') {
                s.len--;
            }

            n = ngx_atoi(s.data, s.len);

            if (n < 1 || n > 100) {
                goto invalid;
            }

            hcf->threshold = n;
            continue;
        }

        if (ngx_strncmp(value[i].data, "timeout=", 8) == 0) {
            s.data = value[i].data + 8;
            s.len = value[i].len - 8;

            hcf->timeout = ngx_parse_time(&s, 0);

            if (hcf->timeout == (ngx_msec_t) NGX_ERROR || hcf->timeout == 0) {
                goto invalid;
            }

            continue;
        }

        if (ngx_strncmp(value[i].data, "upstream=", 9) == 0) {

            /* as proxy_pass names one: a block, or host:port */
            ngx_memzero(&u, sizeof(ngx_url_t));

            u.url.data = value[i].data + 9;
            u.url.len = value[i].len - 9;
            u.default_port = 80;
            u.no_resolve = 1;

            up = ngx_array_push(&hcf->upstreams);
            if (up == NULL) {
                return NGX_CONF_ERROR;
            }

            ngx_memzero(up, sizeof(ngx_http_mcp_health_upstream_t));

            up->name = u.url;
            up->uscf = ngx_http_upstream_add(cf, &u, 0);

            if (u.url.len == 0 || up->uscf == NULL) {
                goto invalid;
            }

            continue;
        }

        goto invalid;
    }

    mlcf->health = hcf;

    clcf = ngx_http_conf_get_module_loc_conf(cf, ngx_http_core_module);
    clcf->handler = ngx_http_mcp_health_handler;

    return NGX_CONF_OK;

invalid:

    ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                       "invalid parameter \"%V\"", &value[i]);
    return NGX_CONF_ERROR;
}


static ngx_int_t
ngx_http_mcp_health_handler(ngx_http_request_t *r)
{
    ngx_int_t                    rc;
    ngx_pool_cleanup_t          *cln;
    ngx_http_mcp_loc_conf_t     *mlcf;
    ngx_http_mcp_health_ctx_t   *ctx;
    ngx_http_mcp_health_conf_t  *hcf;

    if (!(r->method & (NGX_HTTP_GET|NGX_HTTP_HEAD))) {
        return NGX_HTTP_NOT_ALLOWED;
    }

    rc = ngx_http_discard_request_body(r);
    if (rc != NGX_OK) {
        return rc;
    }

    mlcf = ngx_http_get_module_loc_conf(r, ngx_http_mcp_module);
    hcf = mlcf->health;

    ctx = ngx_pcalloc(r->pool, sizeof(ngx_http_mcp_health_ctx_t));
    cln = ngx_pool_cleanup_add(r->pool, 0);

    if (ctx == NULL || cln == NULL
        || ngx_array_init(&ctx->probes, r->pool, 4,
                          sizeof(ngx_http_mcp_health_probe_t))
           != NGX_OK)
    {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    ctx->request = r;
    ctx->hcf = hcf;

    cln->handler = ngx_http_mcp_health_cleanup;
    cln->data = ctx;

    if (hcf->kind != NGX_HTTP_MCP_HEALTH_READY || hcf->upstreams.nelts == 0) {
        return ngx_http_mcp_health_reply(ctx);
    }

    if (ngx_http_mcp_health_probe_all(ctx) != NGX_OK) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    if (ctx->pending == 0) {
        return ngx_http_mcp_health_reply(ctx);
    }

    /* the probes finalize the request when the last one is done */
    r->main->count++;
    ctx->waiting = 1;

    return NGX_DONE;
}


/* a probe of every replica of every upstream not probed a second ago */

static ngx_int_t
ngx_http_mcp_health_probe_all(ngx_http_mcp_health_ctx_t *ctx)
{
    ngx_uint_t                       i, n;
    ngx_http_mcp_health_probe_t     *p;
    ngx_http_upstream_rr_peers_t    *peers;
    ngx_http_mcp_health_upstream_t  *up;

    n = ctx->hcf->upstreams.nelts;
    up = ctx->hcf->upstreams.elts;

    ctx->peers = ngx_pcalloc(ctx->request->pool, 2 * n * sizeof(ngx_uint_t));
    if (ctx->peers == NULL) {
        return NGX_ERROR;
    }

    ctx->answering = ctx->peers + n;

    /* a refused connection is what the probe is for: no [error] line */
    ctx->log = *ctx->request->connection->log;
    ctx->log.log_level = NGX_LOG_CRIT;

    for (i = 0; i < n; i++) {
        if (up[i].known
            && ngx_current_msec - up[i].checked < NGX_HTTP_MCP_HEALTH_CACHE)
        {
            continue;
        }

        peers = up[i].uscf->peer.data;

        if (peers == NULL) {
            continue;
        }

        if (ngx_http_mcp_health_probe_peers(ctx, i, peers) != NGX_OK
            || (peers->next != NULL
                && ngx_http_mcp_health_probe_peers(ctx, i, peers->next)
                   != NGX_OK))
        {
            return NGX_ERROR;
        }
    }

    /* started once all are in the array: it does not move them then */
    p = ctx->probes.elts;
    ctx->pending = ctx->probes.nelts;

    for (i = 0; i < ctx->probes.nelts; i++) {
        ngx_http_mcp_health_probe_start(&p[i]);
    }

    return NGX_OK;
}


/* copies of the replicas' addresses: the list may be in a shared zone */

static ngx_int_t
ngx_http_mcp_health_probe_peers(ngx_http_mcp_health_ctx_t *ctx,
    ngx_uint_t n, ngx_http_upstream_rr_peers_t *peers)
{
    ngx_int_t                     rc;
    ngx_uint_t                    count;
    ngx_http_upstream_rr_peer_t  *peer;
    ngx_http_mcp_health_probe_t  *p;

    rc = NGX_OK;
    count = 0;

    ngx_http_upstream_rr_peers_rlock(peers);

    for (peer = peers->peer; peer; peer = peer->next) {

        /* "down" in the configuration: not a replica that may answer */
        if (peer->down || count++ == NGX_HTTP_MCP_HEALTH_PEERS) {
            continue;
        }

        p = ngx_array_push(&ctx->probes);
        if (p == NULL) {
            rc = NGX_ERROR;
            break;
        }

        ngx_memzero(p, sizeof(ngx_http_mcp_health_probe_t));

        p->ctx = ctx;
        p->upstream = n;
        p->pc.socklen = peer->socklen;
        p->pc.sockaddr = ngx_palloc(ctx->request->pool, peer->socklen);
        p->name.len = peer->name.len;
        p->name.data = ngx_pstrdup(ctx->request->pool, &peer->name);

        if (p->pc.sockaddr == NULL || p->name.data == NULL) {
            rc = NGX_ERROR;
            break;
        }

        ngx_memcpy(p->pc.sockaddr, peer->sockaddr, peer->socklen);
    }

    ngx_http_upstream_rr_peers_unlock(peers);

    return rc;
}


static void
ngx_http_mcp_health_probe_start(ngx_http_mcp_health_probe_t *p)
{
    ngx_int_t          rc;
    ngx_connection_t  *c;

    p->ctx->peers[p->upstream]++;

    p->pc.name = &p->name;
    p->pc.get = ngx_event_get_peer;
    p->pc.log = &p->ctx->log;
    p->pc.log_error = NGX_ERROR_ERR;

    rc = ngx_event_connect_peer(&p->pc);

    if (rc == NGX_OK) {
        ngx_http_mcp_health_probe_done(p, 1);
        return;
    }

    if (rc != NGX_AGAIN) {
        /* refused at once, or no socket */
        ngx_http_mcp_health_probe_done(p, 0);
        return;
    }

    c = p->pc.connection;
    c->data = p;
    c->read->handler = ngx_http_mcp_health_probe_handler;
    c->write->handler = ngx_http_mcp_health_probe_handler;

    ngx_add_timer(c->write, p->ctx->hcf->timeout);
}


/* the connect ended: made, refused, or not in time */

static void
ngx_http_mcp_health_probe_handler(ngx_event_t *ev)
{
    int                           err;
    socklen_t                     len;
    ngx_connection_t             *c;
    ngx_http_mcp_health_probe_t  *p;

    c = ev->data;
    p = c->data;

    if (ev->timedout) {
        ngx_http_mcp_health_probe_done(p, 0);
        return;
    }

    err = 0;
    len = sizeof(int);

    if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, (void *) &err, &len) == -1) {
        err = ngx_socket_errno;
    }

    ngx_http_mcp_health_probe_done(p, err == 0);
}


static void
ngx_http_mcp_health_probe_done(ngx_http_mcp_health_probe_t *p, ngx_uint_t ok)
{
    ngx_uint_t                       i, n;
    ngx_http_request_t              *r;
    ngx_http_mcp_health_ctx_t       *ctx;
    ngx_http_mcp_health_upstream_t  *up;

    ctx = p->ctx;
    r = ctx->request;

    if (p->pc.connection != NULL) {
        ngx_close_connection(p->pc.connection);
        p->pc.connection = NULL;
    }

    p->done = 1;
    ctx->answering[p->upstream] += ok;

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "mcp health: %V %s", &p->name,
                   ok ? "answers" : "does not answer");

    if (--ctx->pending) {
        return;
    }

    /* every probe is done: what they found holds for a second */
    n = ctx->hcf->upstreams.nelts;
    up = ctx->hcf->upstreams.elts;

    for (i = 0; i < n; i++) {
        if (ctx->peers[i]) {
            up[i].known = 1;
            up[i].checked = ngx_current_msec;
            up[i].peers = ctx->peers[i];
            up[i].answering = ctx->answering[i];
        }
    }

    if (ctx->waiting) {
        /* the handler returned NGX_DONE: the reply ends the request */
        ngx_http_finalize_request(r, ngx_http_mcp_health_reply(ctx));
    }
}


static void
ngx_http_mcp_health_cleanup(void *data)
{
    ngx_http_mcp_health_ctx_t  *ctx = data;

    ngx_uint_t                    i;
    ngx_http_mcp_health_probe_t  *p;

    p = ctx->probes.elts;

    for (i = 0; i < ctx->probes.nelts; i++) {
        if (p[i].pc.connection != NULL) {
            ngx_close_connection(p[i].pc.connection);
            p[i].pc.connection = NULL;
        }
    }

    ctx->pending = 0;
}


/* the verdict: 200 or 503, with what each check found */

static ngx_int_t
ngx_http_mcp_health_reply(ngx_http_mcp_health_ctx_t *ctx)
{
    size_t                           size;
    u_char                          *p, *start, *body;
    ngx_uint_t                       i, ok, up_ok;
    ngx_shm_zone_t                 **zp;
    ngx_http_request_t              *r;
    ngx_http_mcp_main_conf_t        *mmcf;
    ngx_http_mcp_health_conf_t      *hcf;
    ngx_http_mcp_health_upstream_t  *up;

    r = ctx->request;
    hcf = ctx->hcf;
    ok = 1;

    mmcf = ngx_http_get_module_main_conf(r, ngx_http_mcp_module);

    size = 256 + (mmcf->store.zones.nelts + 1) * 256
           + hcf->upstreams.nelts * 256;

    zp = mmcf->store.zones.elts;

    for (i = 0; i < mmcf->store.zones.nelts; i++) {
        size += 6 * zp[i]->shm.name.len;
    }

    if (mmcf->store.default_zone != NULL) {
        size += 6 * mmcf->store.default_zone->shm.name.len;
    }

    up = hcf->upstreams.elts;

    for (i = 0; i < hcf->upstreams.nelts; i++) {
        size += 6 * up[i].name.len;
    }

    body = ngx_pnalloc(r->pool, size);
    if (body == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    start = body + sizeof("{\"status\":\"unavailable\",") - 1;

    p = ngx_sprintf(start, "\"probe\":\"%s\",\"checks\":{",
                    ngx_http_mcp_health_kinds[hcf->kind]);

    if (hcf->kind == NGX_HTTP_MCP_HEALTH_LIVE) {
        p = ngx_sprintf(p, "\"worker\":{\"status\":\"ok\"}");

    } else {
        if (!ngx_http_mcp_ipc_ready()) {
            ok = 0;
        }

        p = ngx_sprintf(p, "\"configuration\":{\"status\":\"ok\"},"
                        "\"worker\":{\"status\":\"%s\"}",
                        ngx_http_mcp_ipc_ready() ? "ok" : "starting");

        p = ngx_http_mcp_health_zones(r, p, hcf, &ok);
    }

    for (i = 0; i < hcf->upstreams.nelts; i++) {
        up_ok = up[i].known && up[i].answering > 0;
        ok &= up_ok;

        p = ngx_http_mcp_health_name(p, "upstream:", &up[i].name);
        p = ngx_sprintf(p, "{\"status\":\"%s\",\"answering\":%ui,"
                        "\"peers\":%ui}",
                        up_ok ? "ok" : "unavailable", up[i].answering,
                        up[i].peers);
    }

    p = ngx_cpymem(p, "}}\n", 3);

    /* the verdict goes first: the checks above decided it */
    body = ok ? start - (sizeof("{\"status\":\"ok\",") - 1)
              : start - (sizeof("{\"status\":\"unavailable\",") - 1);
    (void) ngx_cpymem(body, ok ? "{\"status\":\"ok\","
                               : "{\"status\":\"unavailable\",",
                      start - body);

    return ngx_http_mcp_send(r, ok ? NGX_HTTP_OK
                                   : NGX_HTTP_SERVICE_UNAVAILABLE,
                             NULL, body, p - body);
}


static u_char *
ngx_http_mcp_health_zones(ngx_http_request_t *r, u_char *p,
    ngx_http_mcp_health_conf_t *hcf, ngx_uint_t *ok)
{
    ngx_uint_t                 i;
    ngx_shm_zone_t           **zp;
    ngx_http_mcp_main_conf_t  *mmcf;

    mmcf = ngx_http_get_module_main_conf(r, ngx_http_mcp_module);

    zp = mmcf->store.zones.elts;

    for (i = 0; i < mmcf->store.zones.nelts; i++) {
        p = ngx_http_mcp_health_zone(p, zp[i], hcf, ok);
    }

    if (mmcf->store.default_zone != NULL) {
        p = ngx_http_mcp_health_zone(p, mmcf->store.default_zone, hcf, ok);
    }

    return p;
}


/* a session zone: attached (startup), and below its threshold (ready) */

static u_char *
ngx_http_mcp_health_zone(u_char *p, ngx_shm_zone_t *zone,
    ngx_http_mcp_health_conf_t *hcf, ngx_uint_t *ok)
{
    ngx_uint_t                 used, zone_ok;
    ngx_http_mcp_zone_stats_t  st;

    p = ngx_http_mcp_health_name(p, "zone:", &zone->shm.name);

    if (ngx_http_mcp_session_zone_stats(zone, &st) != NGX_OK || st.size == 0)
    {
        *ok = 0;
        return ngx_sprintf(p, "{\"status\":\"not attached\"}");
    }

    if (hcf->kind != NGX_HTTP_MCP_HEALTH_READY) {
        return ngx_sprintf(p, "{\"status\":\"ok\"}");
    }

    used = (ngx_uint_t) ((uint64_t) st.used * 100 / st.size);
    zone_ok = (used < hcf->threshold);
    *ok &= zone_ok;

    return ngx_sprintf(p, "{\"status\":\"%s\",\"used_percent\":%ui,"
                       "\"threshold_percent\":%ui,\"sessions\":%ui}",
                       zone_ok ? "ok" : "full", used, hcf->threshold,
                       st.sessions);
}


/* ,"kind:name": with the name escaped for JSON */

static u_char *
ngx_http_mcp_health_name(u_char *p, const char *kind, ngx_str_t *name)
{
    p = ngx_sprintf(p, ",\"%s", kind);
    p = (u_char *) ngx_escape_json(p, name->data, name->len);

    return ngx_cpymem(p, "\":", 2);
}
