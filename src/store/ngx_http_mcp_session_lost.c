
/*
 * What a dead worker leaves in a session zone.  A worker that exits
 * gracefully ends its calls and streams; one killed (SIGKILL, a crash)
 * ends nothing: the wait records of its calls and of the server
 * requests they sent, and the streams its connections held, stay in the
 * zone.  A client that resumes such a call's stream would wait for a
 * response nobody writes, its answer to a sampling request would find
 * a wait nobody reads, and the session, never idle, would never expire.
 *
 * So the zone keeps the pids of the workers that use it, and each
 * worker checks them at its start (the master starts one in a dead
 * worker's place at once) and then every second: a few kill(pid, 0),
 * and no walk of the sessions while all live.  The first worker to find
 * one gone takes it off the list and walks the sessions for records
 * whose owner is gone (a worker that exited gracefully left none, and
 * the walk finds nothing).  Each call of a dead worker that has a
 * stream gets a JSON-RPC error with its id (-32603) in the session's
 * event log, as its response would have been, and the worker holding
 * the stream now (a resume) is woken to write it; the dead worker's
 * server requests are cleared, and its streams lose their owner (a GET
 * stream is parked for a resume, as ngx_http_mcp_session_send() does
 * when it finds the owner gone).
 *
 * A pid is gone when kill(pid, 0) says there is no such process, or one
 * of another user (the pid was reused).  Reuse by a process of nginx's
 * user is not told apart: its records wait for that process to end.
 */


#include "ngx_http_mcp_store.h"
#include "ngx_http_mcp_session_zone.h"
#include "ngx_http_mcp_jsonrpc.h"


/* how often a worker checks that the workers the zone has seen live */
#define NGX_HTTP_MCP_LOST_CHECK  1000

/* the pids one walk remembers as dead or alive */
#define NGX_HTTP_MCP_LOST_PIDS   16

/* the workers to wake after a walk, at most (more: they poll anyway) */
#define NGX_HTTP_MCP_LOST_WAKE   64


typedef struct {
    ngx_pid_t                  pid[NGX_HTTP_MCP_LOST_PIDS];
    ngx_uint_t                 dead[NGX_HTTP_MCP_LOST_PIDS];
    ngx_uint_t                 npids;
    ngx_pid_t                  wake[NGX_HTTP_MCP_LOST_WAKE];
    ngx_uint_t                 nwake;
    ngx_uint_t                 calls;       /* answered with an error */
    ngx_uint_t                 requests;    /* server requests cleared */
    ngx_uint_t                 streams;     /* released */
    ngx_log_t                 *log;
} ngx_http_mcp_lost_t;


static void ngx_http_mcp_session_lost_timer(ngx_event_t *ev);
static void ngx_http_mcp_session_lost_zone(ngx_shm_zone_t *zone,
    ngx_uint_t start, ngx_log_t *log);
static ngx_uint_t ngx_http_mcp_session_lost_workers(ngx_http_mcp_zone_t *ctx,
    ngx_uint_t start);
static void ngx_http_mcp_session_lost_walk(ngx_http_mcp_zone_t *ctx,
    ngx_http_mcp_lost_t *lost);
static void ngx_http_mcp_session_lost_call(ngx_http_mcp_zone_t *ctx,
    ngx_http_mcp_session_node_t *s, ngx_http_mcp_wait_t *w,
    ngx_http_mcp_lost_t *lost);
static ngx_uint_t ngx_http_mcp_session_lost_dead(ngx_http_mcp_lost_t *lost,
    ngx_pid_t pid);
static ngx_uint_t ngx_http_mcp_session_pid_gone(ngx_pid_t pid);


static ngx_event_t                 ngx_http_mcp_lost_event;
static ngx_http_mcp_store_conf_t  *ngx_http_mcp_lost_conf;


/*
 * At a worker's start: what dead workers left in every session zone is
 * answered now, and the zones are checked every second from now on.
 */

void
ngx_http_mcp_session_lost_start(ngx_cycle_t *cycle,
    ngx_http_mcp_store_conf_t *scf)
{
    if (scf->zones.nelts == 0 && scf->default_zone == NULL) {
        return;
    }

    ngx_http_mcp_lost_conf = scf;

    ngx_http_mcp_lost_event.handler = ngx_http_mcp_session_lost_timer;
    ngx_http_mcp_lost_event.log = cycle->log;
    ngx_http_mcp_lost_event.data = scf;

    /* a graceful exit does not wait for it */
    ngx_http_mcp_lost_event.cancelable = 1;

    ngx_http_mcp_session_lost_timer(&ngx_http_mcp_lost_event);
}


static void
ngx_http_mcp_session_lost_timer(ngx_event_t *ev)
{
    ngx_uint_t                  i, start;
    ngx_shm_zone_t            **zone;
    ngx_http_mcp_store_conf_t  *scf;

    scf = ngx_http_mcp_lost_conf;
    start = !ev->timedout;
    ev->timedout = 0;

    zone = scf->zones.elts;

    for (i = 0; i < scf->zones.nelts; i++) {
        ngx_http_mcp_session_lost_zone(zone[i], start, ev->log);
    }

    if (scf->default_zone != NULL) {
        ngx_http_mcp_session_lost_zone(scf->default_zone, start, ev->log);
    }

    if (!ngx_exiting && !ngx_terminate && !ngx_quit) {
        ngx_add_timer(ev, NGX_HTTP_MCP_LOST_CHECK);
    }
}


/*
 * One zone: a walk of every session when a worker the zone has seen is
 * gone, and at a worker's start when the zone's list of workers is
 * full (a worker it could not take may have died).
 */

static void
ngx_http_mcp_session_lost_zone(ngx_shm_zone_t *zone, ngx_uint_t start,
    ngx_log_t *log)
{
    ngx_uint_t            i;
    ngx_http_mcp_zone_t  *ctx;
    ngx_http_mcp_lost_t   lost;

    ctx = zone->data;

    if (ctx == NULL || ctx->sh == NULL) {
        return;
    }

    ngx_memzero(&lost, sizeof(ngx_http_mcp_lost_t));
    lost.log = log;

    ngx_shmtx_lock(&ctx->shpool->mutex);

    if (ngx_http_mcp_session_lost_workers(ctx, start)
        || (start && ctx->sh->nworkers == NGX_HTTP_MCP_LOST_WORKERS))
    {
        ngx_http_mcp_session_lost_walk(ctx, &lost);
    }

    ngx_shmtx_unlock(&ctx->shpool->mutex);

    for (i = 0; i < lost.nwake; i++) {
        (void) ngx_http_mcp_notify_pid(lost.wake[i], log);
    }

    if (lost.calls || lost.requests || lost.streams) {
        ngx_log_error(NGX_LOG_WARN, log, 0,
                      "mcp session zone \"%V\": a lost worker left %ui "
                      "call%s, answered with an error, %ui server "
                      "request%s, cleared, and %ui stream%s, released",
                      &ctx->name, lost.calls, lost.calls == 1 ? "" : "s",
                      lost.requests, lost.requests == 1 ? "" : "s",
                      lost.streams, lost.streams == 1 ? "" : "s");
    }
}


/*
 * Called with the zone locked: the zone's workers that are gone leave
 * its list (1 if one did), and this worker joins it at its start.  A
 * full list takes no more: those workers are then found by the walk of
 * a worker's start only.
 */

static ngx_uint_t
ngx_http_mcp_session_lost_workers(ngx_http_mcp_zone_t *ctx, ngx_uint_t start)
{
    ngx_uint_t             i, gone, me;
    ngx_http_mcp_shctx_t  *sh;

    sh = ctx->sh;
    gone = 0;
    me = 0;

    for (i = 0; i < sh->nworkers; /* void */ ) {

        if (sh->workers[i] == ngx_pid) {
            me = 1;

        } else if (ngx_http_mcp_session_pid_gone(sh->workers[i])) {
            sh->workers[i] = sh->workers[--sh->nworkers];
            gone = 1;
            continue;
        }

        i++;
    }

    if (start && !me && sh->nworkers < NGX_HTTP_MCP_LOST_WORKERS) {
        sh->workers[sh->nworkers++] = ngx_pid;
    }

    return gone;
}


/*
 * Called with the zone locked: every session with a stream or a wait
 * of a dead worker.  An error written may evict idle sessions (never
 * the one at hand): the next session is taken after the work on this
 * one, from its links, which stay valid.
 */

static void
ngx_http_mcp_session_lost_walk(ngx_http_mcp_zone_t *ctx,
    ngx_http_mcp_lost_t *lost)
{
    ngx_queue_t                  *q, *wq, *next;
    ngx_http_mcp_wait_t          *w;
    ngx_http_mcp_stream_sh_t     *st;
    ngx_http_mcp_session_node_t  *s;

    for (q = ngx_queue_head(&ctx->sh->queue);
         q != ngx_queue_sentinel(&ctx->sh->queue);
         q = ngx_queue_next(q))
    {
        s = ngx_queue_data(q, ngx_http_mcp_session_node_t, queue);

        for (wq = ngx_queue_head(&s->waits);
             wq != ngx_queue_sentinel(&s->waits);
             wq = next)
        {
            next = ngx_queue_next(wq);
            w = ngx_queue_data(wq, ngx_http_mcp_wait_t, queue);

            if (!ngx_http_mcp_session_lost_dead(lost, w->owner)) {
                continue;
            }

            if (w->request) {
                lost->requests++;

            } else {
                ngx_http_mcp_session_lost_call(ctx, s, w, lost);
            }

            ngx_http_mcp_session_wait_free(ctx, w);
        }

        if (s->streams == 0) {
            continue;
        }

        for (wq = ngx_queue_head(&s->sstreams);
             wq != ngx_queue_sentinel(&s->sstreams);
             wq = ngx_queue_next(wq))
        {
            st = ngx_queue_data(wq, ngx_http_mcp_stream_sh_t, queue);

            if (st->owner == 0
                || !ngx_http_mcp_session_lost_dead(lost, st->owner))
            {
                continue;
            }

            ngx_http_mcp_session_stream_owner(ctx, s, st, 0);
            st->parked = st->standalone;
            lost->streams++;
        }
    }
}


/*
 * Called with the zone locked: a dead worker's call answers on its
 * stream with an error, as the call itself would have at its end (see
 * ngx_http_mcp_session_send()).  Without a stream (its POST waited for
 * a JSON reply, and its connection died with the worker) nobody can
 * take an answer.
 */

static void
ngx_http_mcp_session_lost_call(ngx_http_mcp_zone_t *ctx,
    ngx_http_mcp_session_node_t *s, ngx_http_mcp_wait_t *w,
    ngx_http_mcp_lost_t *lost)
{
    size_t                     len;
    u_char                    *p, correlation[32];
    ngx_uint_t                 i;
    ngx_http_mcp_event_t      *ev;
    ngx_http_mcp_stream_sh_t  *st;

    static u_char  head[] = "{\"jsonrpc\":\"2.0\",\"id\":";
    static u_char  error[] = ",\"error\":{\"code\":-32603,"
                             "\"message\":\"Internal error: the worker "
                             "running the request was lost\","
                             "\"data\":{\"correlationId\":\"";
    static u_char  tail[] = "\"}}}";

    st = w->stream ? ngx_http_mcp_session_stream(s, w->stream) : NULL;

    if (st == NULL || st->standalone || st->pending == 0 || w->id_len == 0) {
        return;
    }

    if (ngx_http_mcp_correlation_id(correlation, sizeof(correlation))
        != NGX_OK)
    {
        ngx_memset(correlation, '0', sizeof(correlation));
    }

    len = sizeof(head) - 1 + w->id_len + sizeof(error) - 1
          + sizeof(correlation) + sizeof(tail) - 1;

    ev = ngx_http_mcp_session_event_add(ctx, s, len, lost->log);

    if (ev == NULL) {
        ngx_log_error(NGX_LOG_ERR, lost->log, 0,
                      "mcp: no room in the zone for the error of a call "
                      "of a lost worker");
        return;
    }

    ev->stream = st->id;
    ev->response = 1;

    p = ngx_cpymem(ev->data, head, sizeof(head) - 1);
    p = ngx_cpymem(p, w->id, w->id_len);
    p = ngx_cpymem(p, error, sizeof(error) - 1);
    p = ngx_cpymem(p, correlation, sizeof(correlation));
    (void) ngx_cpymem(p, tail, sizeof(tail) - 1);

    st->pending--;
    lost->calls++;

    ngx_log_error(NGX_LOG_WARN, lost->log, 0,
                  "mcp: a call of lost worker %P ended with an error, "
                  "correlation id %*s", w->owner, sizeof(correlation),
                  correlation);

    /* its stream's owner now, if a live one, writes it */

    if (st->owner == 0 || ngx_http_mcp_session_lost_dead(lost, st->owner)) {
        return;
    }

    for (i = 0; i < lost->nwake && lost->wake[i] != st->owner; i++) {
        /* void */
    }

    if (i == lost->nwake && lost->nwake < NGX_HTTP_MCP_LOST_WAKE) {
        lost->wake[lost->nwake++] = st->owner;
    }
}


/* whether a record's owner is dead; this walk remembers what it found */

static ngx_uint_t
ngx_http_mcp_session_lost_dead(ngx_http_mcp_lost_t *lost, ngx_pid_t pid)
{
    ngx_uint_t  i, dead;

    if (pid == ngx_pid || pid == 0) {
        return 0;
    }

    for (i = 0; i < lost->npids; i++) {
        if (lost->pid[i] == pid) {
            return lost->dead[i];
        }
    }

    dead = ngx_http_mcp_session_pid_gone(pid);

    if (lost->npids < NGX_HTTP_MCP_LOST_PIDS) {
        lost->pid[lost->npids] = pid;
        lost->dead[lost->npids] = dead;
        lost->npids++;
    }

    return dead;
}


static ngx_uint_t
ngx_http_mcp_session_pid_gone(ngx_pid_t pid)
{
    ngx_err_t  err;

    if (kill(pid, 0) == 0) {
        return 0;
    }

    err = ngx_errno;

    /* EPERM: another user's process took the pid */
    return err == NGX_ESRCH || err == NGX_EPERM;
}


/*
 * The stream a call of this worker answers on, so that the call can be
 * answered if the worker dies.  NGX_DECLINED: the session or the call's
 * wait record is gone.
 */

ngx_int_t
ngx_http_mcp_session_wait_stream(ngx_shm_zone_t *zone, ngx_str_t *sid,
    u_char *id, size_t len, uint32_t stream)
{
    ngx_http_mcp_zone_t          *ctx;
    ngx_http_mcp_wait_t          *w;
    ngx_http_mcp_session_node_t  *s;

    ctx = zone->data;

    ngx_shmtx_lock(&ctx->shpool->mutex);

    s = ngx_http_mcp_session_find(ctx, sid);
    w = (s != NULL) ? ngx_http_mcp_session_wait_find(s, ngx_pid, 0, id, len)
                    : NULL;

    if (w != NULL) {
        w->stream = stream;
    }

    ngx_shmtx_unlock(&ctx->shpool->mutex);

    return (w != NULL) ? NGX_OK : NGX_DECLINED;
}
