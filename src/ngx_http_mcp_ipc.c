
/*
 * Waking other workers.  Messages between workers travel through the
 * shm zone (the session's event log and waits); what a worker needs is
 * to learn promptly that there is something for it there.  Each worker
 * binds a datagram socket in the Linux abstract namespace, named after
 * its pid, and watches it like any other connection; any process wakes
 * it with one empty datagram.  Unlike pipes opened before fork, this
 * needs no slot bookkeeping and keeps working across reloads, when old
 * and new workers run side by side.
 *
 * A wake-up carries no data, so a lost or merged datagram loses
 * nothing: a woken worker looks at everything it holds.
 *
 * The socket also tells the worker when its graceful exit starts
 * (reload, quit): nginx then closes its idle connections, and this one
 * says it is idle, so its read handler runs with c->close set, before
 * the worker decides whether anything keeps it alive.  The quit hooks
 * end the streams that never end by themselves; the calls in flight go
 * on, and the drain timer (not cancelable) keeps the worker until the
 * last of them and their streams is gone, or mcp_shutdown_timeout has
 * passed: then the hooks end the rest.
 */


#include "ngx_http_mcp_internal.h"

#include <sys/un.h>


#define NGX_HTTP_MCP_IPC_NAME  "ngx_http_mcp/%P"


static socklen_t ngx_http_mcp_ipc_addr(struct sockaddr_un *sun,
    ngx_pid_t pid);
static void ngx_http_mcp_ipc_read(ngx_event_t *ev);
static void ngx_http_mcp_wake_handler(ngx_event_t *ev);
static void ngx_http_mcp_ipc_quit(ngx_cycle_t *cycle);
static void ngx_http_mcp_drain_handler(ngx_event_t *ev);


#define NGX_HTTP_MCP_WAKE_HANDLERS  4
#define NGX_HTTP_MCP_QUIT_HANDLERS  4


ngx_http_mcp_worker_t  ngx_http_mcp_worker;

/* who looks at the zone when this worker is woken: streams, calls */
static ngx_http_mcp_wake_pt  ngx_http_mcp_wake_handlers[
                                 NGX_HTTP_MCP_WAKE_HANDLERS];
static ngx_uint_t            ngx_http_mcp_nwake_handlers;

/* who ends what the worker holds when it exits: calls, then streams */
static ngx_http_mcp_quit_pt  ngx_http_mcp_quit_handlers[
                                 NGX_HTTP_MCP_QUIT_HANDLERS];
static ngx_uint_t            ngx_http_mcp_nquit_handlers;


/* called at worker start, before ngx_http_mcp_ipc_init() */

ngx_int_t
ngx_http_mcp_ipc_on_wake(ngx_http_mcp_wake_pt handler)
{
    if (ngx_http_mcp_nwake_handlers == NGX_HTTP_MCP_WAKE_HANDLERS) {
        return NGX_ERROR;
    }

    ngx_http_mcp_wake_handlers[ngx_http_mcp_nwake_handlers++] = handler;

    return NGX_OK;
}


/* called at worker start, before ngx_http_mcp_ipc_init(); run in order */

ngx_int_t
ngx_http_mcp_ipc_on_quit(ngx_http_mcp_quit_pt handler)
{
    if (ngx_http_mcp_nquit_handlers == NGX_HTTP_MCP_QUIT_HANDLERS) {
        return NGX_ERROR;
    }

    ngx_http_mcp_quit_handlers[ngx_http_mcp_nquit_handlers++] = handler;

    return NGX_OK;
}


static socklen_t
ngx_http_mcp_ipc_addr(struct sockaddr_un *sun, ngx_pid_t pid)
{
    u_char  *p;

    ngx_memzero(sun, sizeof(struct sockaddr_un));

    sun->sun_family = AF_UNIX;

    /* sun_path[0] == '\0': the abstract namespace, no file */
    p = ngx_sprintf((u_char *) sun->sun_path + 1, NGX_HTTP_MCP_IPC_NAME, pid);

    return (socklen_t) (p - (u_char *) sun);
}


ngx_int_t
ngx_http_mcp_ipc_init(ngx_cycle_t *cycle)
{
    int                  fd;
    socklen_t            len;
    ngx_connection_t    *c;
    struct sockaddr_un   sun;

    ngx_queue_init(&ngx_http_mcp_worker.streams);
    ngx_queue_init(&ngx_http_mcp_worker.calls);
    ngx_queue_init(&ngx_http_mcp_worker.tasks);

    ngx_http_mcp_worker.log = cycle->log;

    ngx_http_mcp_worker.wake.handler = ngx_http_mcp_wake_handler;
    ngx_http_mcp_worker.wake.log = cycle->log;
    ngx_http_mcp_worker.wake.data = &ngx_http_mcp_worker;

    ngx_http_mcp_worker.drain.handler = ngx_http_mcp_drain_handler;
    ngx_http_mcp_worker.drain.log = cycle->log;

    fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd == -1) {
        ngx_log_error(NGX_LOG_ALERT, cycle->log, ngx_socket_errno,
                      "mcp: socket(AF_UNIX) failed");
        return NGX_ERROR;
    }

    len = ngx_http_mcp_ipc_addr(&sun, ngx_pid);

    if (bind(fd, (struct sockaddr *) &sun, len) == -1) {
        ngx_log_error(NGX_LOG_ALERT, cycle->log, ngx_socket_errno,
                      "mcp: bind() of the worker socket failed");
        (void) close(fd);
        return NGX_ERROR;
    }

    c = ngx_get_connection(fd, cycle->log);
    if (c == NULL) {
        (void) close(fd);
        return NGX_ERROR;
    }

    c->data = &ngx_http_mcp_worker;
    c->read->handler = ngx_http_mcp_ipc_read;
    c->read->log = cycle->log;

    /* like nginx's own channel: not a client connection left at exit */
    c->read->channel = 1;

    /* idle: ngx_close_idle_connections() tells it the worker exits */
    c->idle = 1;

    if (ngx_handle_read_event(c->read, 0) != NGX_OK) {
        ngx_close_connection(c);
        return NGX_ERROR;
    }

    ngx_http_mcp_worker.ipc = c;

    return NGX_OK;
}


void
ngx_http_mcp_ipc_exit(ngx_cycle_t *cycle)
{
    if (ngx_http_mcp_worker.ipc) {
        ngx_close_connection(ngx_http_mcp_worker.ipc);
        ngx_http_mcp_worker.ipc = NULL;
    }
}


/*
 * Wakes the worker with the given pid; this worker is woken through a
 * posted event, after the handler at hand returns.  NGX_DECLINED: no
 * such worker (it exited).
 */

ngx_int_t
ngx_http_mcp_notify_pid(ngx_pid_t pid, ngx_log_t *log)
{
    if (pid == 0) {
        return NGX_DECLINED;
    }

    if (pid == ngx_pid) {
        if (!ngx_http_mcp_worker.wake.posted) {
            ngx_post_event(&ngx_http_mcp_worker.wake, &ngx_posted_events);
        }

        return NGX_OK;
    }

    return ngx_http_mcp_ipc_wake(pid, log);
}


ngx_int_t
ngx_http_mcp_ipc_wake(ngx_pid_t pid, ngx_log_t *log)
{
    u_char              byte;
    socklen_t           len;
    ngx_err_t           err;
    struct sockaddr_un  sun;

    if (ngx_http_mcp_worker.ipc == NULL) {
        return NGX_ERROR;
    }

    len = ngx_http_mcp_ipc_addr(&sun, pid);
    byte = 0;

    if (sendto(ngx_http_mcp_worker.ipc->fd, &byte, 1, 0,
               (struct sockaddr *) &sun, len)
        != -1)
    {
        return NGX_OK;
    }

    err = ngx_socket_errno;

    if (err == NGX_EAGAIN) {
        /* its queue is full: it has wake-ups pending already */
        return NGX_OK;
    }

    if (err == NGX_ECONNREFUSED || err == NGX_ENOENT) {
        return NGX_DECLINED;
    }

    ngx_log_error(NGX_LOG_ERR, log, err, "mcp: waking worker %P failed",
                  pid);

    return NGX_ERROR;
}


static void
ngx_http_mcp_ipc_read(ngx_event_t *ev)
{
    u_char             buf[64];
    ssize_t            n;
    ngx_connection_t  *c;

    c = ev->data;

    if (c->close) {
        /* not to be closed: wake-ups still come while calls finish */
        c->close = 0;
        c->idle = 0;

        ngx_http_mcp_ipc_quit((ngx_cycle_t *) ngx_cycle);
    }

    /* many wake-ups, one look */
    do {
        n = recv(c->fd, buf, sizeof(buf), 0);
    } while (n >= 0);

    if (ngx_handle_read_event(ev, 0) != NGX_OK) {
        ngx_log_error(NGX_LOG_ALERT, ev->log, 0,
                      "mcp: re-arming the worker socket failed");
    }

    ngx_http_mcp_wake_handler(&ngx_http_mcp_worker.wake);
}


static void
ngx_http_mcp_wake_handler(ngx_event_t *ev)
{
    ngx_uint_t  i;

    ngx_log_debug0(NGX_LOG_DEBUG_EVENT, ev->log, 0, "mcp worker woken");

    for (i = 0; i < ngx_http_mcp_nwake_handlers; i++) {
        ngx_http_mcp_wake_handlers[i]();
    }
}


/*
 * The graceful exit starts: what never ends by itself ends now, and
 * the worker stays (the drain timer is not cancelable) while calls or
 * streams are left, at most mcp_shutdown_timeout, and never longer than
 * worker_shutdown_timeout, after which nginx closes every connection.
 */

static void
ngx_http_mcp_ipc_quit(ngx_cycle_t *cycle)
{
    ngx_uint_t        i;
    ngx_msec_t        timeout;
    ngx_core_conf_t  *ccf;

    ngx_log_debug0(NGX_LOG_DEBUG_EVENT, cycle->log, 0,
                   "mcp worker exits gracefully");

    for (i = 0; i < ngx_http_mcp_nquit_handlers; i++) {
        ngx_http_mcp_quit_handlers[i](0);
    }

    if (ngx_queue_empty(&ngx_http_mcp_worker.calls)
        && ngx_queue_empty(&ngx_http_mcp_worker.streams))
    {
        return;
    }

    ccf = (ngx_core_conf_t *) ngx_get_conf(cycle->conf_ctx, ngx_core_module);
    timeout = ngx_http_mcp_worker.shutdown_timeout;

    if (ccf->shutdown_timeout && ccf->shutdown_timeout < timeout) {
        timeout = ccf->shutdown_timeout;
    }

    ngx_add_timer(&ngx_http_mcp_worker.drain, timeout);
}


/* a call or a stream went: once none is left, the worker may exit */

void
ngx_http_mcp_ipc_drained(void)
{
    if (ngx_http_mcp_worker.drain.timer_set
        && ngx_queue_empty(&ngx_http_mcp_worker.calls)
        && ngx_queue_empty(&ngx_http_mcp_worker.streams))
    {
        ngx_del_timer(&ngx_http_mcp_worker.drain);
    }
}


/* mcp_shutdown_timeout has passed: the hooks end what is left */

static void
ngx_http_mcp_drain_handler(ngx_event_t *ev)
{
    ngx_uint_t    i, n;
    ngx_queue_t  *q;

    n = 0;

    for (q = ngx_queue_head(&ngx_http_mcp_worker.calls);
         q != ngx_queue_sentinel(&ngx_http_mcp_worker.calls);
         q = ngx_queue_next(q))
    {
        n++;
    }

    ngx_log_error(NGX_LOG_WARN, ev->log, 0,
                  "mcp: shutdown timeout, %ui call%s still running "
                  "end with an error", n, n == 1 ? "" : "s");

    for (i = 0; i < ngx_http_mcp_nquit_handlers; i++) {
        ngx_http_mcp_quit_handlers[i](1);
    }
}
