
/*
 * Waking other workers.  Messages between workers travel through the
 * shm zone (the session's event log and waits); what a worker needs is
 * to learn promptly that there is something for it there.  Each worker
 * binds a datagram socket named after its pid in a directory only
 * nginx's user may enter (mcp_ipc_path), and watches it like any other
 * connection; another worker wakes it with one empty datagram.  Named by
 * pid, the sockets need no slot bookkeeping and keep working across
 * reloads, when old and new workers run side by side.
 *
 * The directory is what keeps other local users out: a name in the
 * abstract namespace, as before, could be bound first by anyone (the
 * pids to come are predictable), and that stopped every worker.  The
 * master makes the directory 0700 and gives it to the workers' user;
 * each worker checks it is so before it binds, and takes a datagram only
 * from its own user or root (SCM_CREDENTIALS).  When any of this fails
 * the worker still runs: it says so once and looks at the zone on a
 * timer instead of waiting to be woken.
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


#include "ngx_http_mcp_store.h"
#include "ngx_http_mcp_hooks.h"

#include <sys/un.h>


/* without wake-ups, how often a worker looks at the zone */
#define NGX_HTTP_MCP_IPC_POLL  100


/* what the ipc holds in one worker process */
typedef struct {
    ngx_event_t                wake;        /* posted: look at shm */
    ngx_event_t                drain;       /* graceful exit: the bound */
    ngx_event_t                poll;        /* no socket: look at shm */
    ngx_msec_t                 shutdown_timeout;  /* mcp_shutdown_timeout */
    ngx_connection_t          *ipc;
    ngx_log_t                 *log;
    unsigned                   bound:1;     /* ipc: others can wake it */
} ngx_http_mcp_worker_t;


static ngx_int_t ngx_http_mcp_ipc_wake(ngx_pid_t pid, ngx_log_t *log);
static ngx_int_t ngx_http_mcp_ipc_addr(struct sockaddr_un *sun,
    socklen_t *len, ngx_pid_t pid);
static ngx_int_t ngx_http_mcp_ipc_dir_ok(ngx_log_t *log);
static ngx_int_t ngx_http_mcp_ipc_bind(ngx_connection_t *c);
static ngx_uint_t ngx_http_mcp_ipc_recv(ngx_connection_t *c);
static void ngx_http_mcp_ipc_read(ngx_event_t *ev);
static void ngx_http_mcp_ipc_poll(ngx_event_t *ev);
static void ngx_http_mcp_wake_handler(ngx_event_t *ev);
static void ngx_http_mcp_ipc_quit_all(ngx_uint_t deadline);
static ngx_uint_t ngx_http_mcp_ipc_busy(void);
static void ngx_http_mcp_ipc_quit(ngx_cycle_t *cycle);
static void ngx_http_mcp_drain_handler(ngx_event_t *ev);


static ngx_http_mcp_worker_t  ngx_http_mcp_worker;

/* mcp_ipc_path of this worker's cycle, NUL-terminated */
static ngx_str_t              ngx_http_mcp_ipc_dir;


/* mcp_ipc_path: a worker's socket name must fit sun_path */

char *
ngx_http_mcp_ipc_check_path(ngx_conf_t *cf, ngx_str_t *path)
{
    struct sockaddr_un  sun;

    /* "/", a pid of up to 10 digits, the NUL */
    if (path->len + 1 + NGX_INT32_LEN + 1 > sizeof(sun.sun_path)) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "mcp_ipc_path \"%V\" is too long for a unix "
                           "socket's name (at most %uz characters)",
                           path, sizeof(sun.sun_path) - NGX_INT32_LEN - 2);
        return NGX_CONF_ERROR;
    }

    return NGX_CONF_OK;
}


/*
 * In the master, at each start and reload: the directory is made, given
 * to the workers' user and closed to everyone else.  A failure is
 * logged; the workers then find the directory wanting and poll.
 */

void
ngx_http_mcp_ipc_prepare(ngx_cycle_t *cycle, ngx_str_t *path)
{
    ngx_err_t         err;
    ngx_uid_t         user;
    ngx_core_conf_t  *ccf;
    ngx_file_info_t   fi;

    if (ngx_test_config) {
        return;
    }

    ccf = (ngx_core_conf_t *) ngx_get_conf(cycle->conf_ctx, ngx_core_module);

    /* workers take the user's uid; "master_process off" keeps its own */
    user = (ccf->master && ccf->user != (ngx_uid_t) NGX_CONF_UNSET_UINT
            && geteuid() == 0)
           ? ccf->user : geteuid();

    /* the parents may be entered by the workers, the directory only */
    err = ngx_create_full_path(path->data, 0755);

    if (err == 0
        && ngx_create_dir(path->data, 0700) == NGX_FILE_ERROR
        && ngx_errno != NGX_EEXIST)
    {
        err = ngx_errno;
    }

    if (err != 0) {
        ngx_log_error(NGX_LOG_ERR, cycle->log, err,
                      "mcp: cannot create mcp_ipc_path \"%V\"", path);
        return;
    }

    /* lstat(): a link there could lead anywhere */
    if (lstat((char *) path->data, &fi) == -1) {
        ngx_log_error(NGX_LOG_ERR, cycle->log, ngx_errno,
                      "mcp: lstat() of mcp_ipc_path \"%V\" failed", path);
        return;
    }

    if (!S_ISDIR(fi.st_mode)) {
        ngx_log_error(NGX_LOG_ERR, cycle->log, 0,
                      "mcp: mcp_ipc_path \"%V\" is not a directory", path);
        return;
    }

    if (fi.st_uid != user && chown((char *) path->data, user, -1) == -1) {
        ngx_log_error(NGX_LOG_ERR, cycle->log, ngx_errno,
                      "mcp: chown() of mcp_ipc_path \"%V\" failed", path);
        return;
    }

    if ((fi.st_mode & 07777) != 0700
        && chmod((char *) path->data, 0700) == -1)
    {
        ngx_log_error(NGX_LOG_ERR, cycle->log, ngx_errno,
                      "mcp: chmod() of mcp_ipc_path \"%V\" failed", path);
    }
}


static ngx_int_t
ngx_http_mcp_ipc_addr(struct sockaddr_un *sun, socklen_t *len, ngx_pid_t pid)
{
    u_char  *p, *last;

    ngx_memzero(sun, sizeof(struct sockaddr_un));

    sun->sun_family = AF_UNIX;

    last = (u_char *) sun->sun_path + sizeof(sun->sun_path) - 1;

    p = ngx_snprintf((u_char *) sun->sun_path, last - (u_char *)
                     sun->sun_path, "%V/%P", &ngx_http_mcp_ipc_dir, pid);

    if (p == last) {
        return NGX_ERROR;
    }

    *p = '\0';
    *len = (socklen_t) (offsetof(struct sockaddr_un, sun_path)
                        + (p - (u_char *) sun->sun_path) + 1);

    return NGX_OK;
}


/*
 * At worker start: the socket, or the poll.  A graceful exit waits for
 * the worker's calls and streams at most shutdown_timeout.
 */

ngx_int_t
ngx_http_mcp_ipc_init(ngx_cycle_t *cycle, ngx_str_t *path,
    ngx_msec_t shutdown_timeout)
{
    int                fd;
    ngx_connection_t  *c;

    ngx_http_mcp_worker.shutdown_timeout = shutdown_timeout;
    ngx_http_mcp_worker.log = cycle->log;

    ngx_http_mcp_worker.wake.handler = ngx_http_mcp_wake_handler;
    ngx_http_mcp_worker.wake.log = cycle->log;
    ngx_http_mcp_worker.wake.data = &ngx_http_mcp_worker;

    ngx_http_mcp_worker.drain.handler = ngx_http_mcp_drain_handler;
    ngx_http_mcp_worker.drain.log = cycle->log;

    ngx_http_mcp_worker.poll.handler = ngx_http_mcp_ipc_poll;
    ngx_http_mcp_worker.poll.log = cycle->log;
    ngx_http_mcp_worker.poll.cancelable = 1;

    ngx_http_mcp_ipc_dir = *path;

    fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd == -1) {
        ngx_log_error(NGX_LOG_ERR, cycle->log, ngx_socket_errno,
                      "mcp: socket(AF_UNIX) failed, the worker runs without "
                      "wake-ups and without notice of its exit");
        ngx_add_timer(&ngx_http_mcp_worker.poll, NGX_HTTP_MCP_IPC_POLL);
        return NGX_OK;
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

    /*
     * idle: ngx_close_idle_connections() tells it the worker exits;
     * that needs no event, so an unbound socket still says it
     */
    c->idle = 1;

    ngx_http_mcp_worker.ipc = c;

    if (ngx_http_mcp_ipc_bind(c) != NGX_OK) {
        ngx_add_timer(&ngx_http_mcp_worker.poll, NGX_HTTP_MCP_IPC_POLL);
        return NGX_OK;
    }

    if (ngx_handle_read_event(c->read, 0) != NGX_OK) {
        return NGX_ERROR;
    }

    ngx_http_mcp_worker.bound = 1;

    return NGX_OK;
}


/*
 * The directory must be ours and closed to others, or a stranger could
 * take a worker's name or speak to it.
 */

static ngx_int_t
ngx_http_mcp_ipc_dir_ok(ngx_log_t *log)
{
    ngx_file_info_t  fi;

    if (lstat((char *) ngx_http_mcp_ipc_dir.data, &fi) == -1) {
        ngx_log_error(NGX_LOG_ERR, log, ngx_errno,
                      "mcp: lstat() of mcp_ipc_path \"%V\" failed, the "
                      "worker polls the zone instead of being woken",
                      &ngx_http_mcp_ipc_dir);
        return NGX_ERROR;
    }

    if (!S_ISDIR(fi.st_mode) || fi.st_uid != geteuid()
        || (fi.st_mode & 077) != 0)
    {
        ngx_log_error(NGX_LOG_ERR, log, 0,
                      "mcp: mcp_ipc_path \"%V\" is not a directory of the "
                      "workers' user closed to others, the worker polls "
                      "the zone instead of being woken",
                      &ngx_http_mcp_ipc_dir);
        return NGX_ERROR;
    }

    return NGX_OK;
}


static ngx_int_t
ngx_http_mcp_ipc_bind(ngx_connection_t *c)
{
    int                 on;
    socklen_t           len;
    struct sockaddr_un  sun;

    if (ngx_http_mcp_ipc_dir_ok(c->log) != NGX_OK) {
        return NGX_ERROR;
    }

    if (ngx_http_mcp_ipc_addr(&sun, &len, ngx_pid) != NGX_OK) {
        return NGX_ERROR;
    }

    /* a worker of the same pid that died left its socket: ours now */
    if (unlink(sun.sun_path) == -1 && ngx_errno != NGX_ENOENT) {
        ngx_log_error(NGX_LOG_ERR, c->log, ngx_errno,
                      "mcp: unlink() of \"%s\" failed", sun.sun_path);
    }

    on = 1;

    if (setsockopt(c->fd, SOL_SOCKET, SO_PASSCRED, &on, sizeof(int)) == -1
        || bind(c->fd, (struct sockaddr *) &sun, len) == -1)
    {
        ngx_log_error(NGX_LOG_ERR, c->log, ngx_socket_errno,
                      "mcp: bind() of the worker socket \"%s\" failed, "
                      "the worker polls the zone instead of being woken",
                      sun.sun_path);
        return NGX_ERROR;
    }

    return NGX_OK;
}


/* 1 once the worker has its socket (bound or not): it is up */

ngx_uint_t
ngx_http_mcp_ipc_ready(void)
{
    return ngx_http_mcp_worker.ipc != NULL;
}


void
ngx_http_mcp_ipc_exit(ngx_cycle_t *cycle)
{
    socklen_t           len;
    struct sockaddr_un  sun;

    if (ngx_http_mcp_worker.poll.timer_set) {
        ngx_del_timer(&ngx_http_mcp_worker.poll);
    }

    if (ngx_http_mcp_worker.ipc == NULL) {
        return;
    }

    if (ngx_http_mcp_worker.bound
        && ngx_http_mcp_ipc_addr(&sun, &len, ngx_pid) == NGX_OK)
    {
        (void) unlink(sun.sun_path);
    }

    ngx_close_connection(ngx_http_mcp_worker.ipc);
    ngx_http_mcp_worker.ipc = NULL;
    ngx_http_mcp_worker.bound = 0;
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


/*
 * A stream of worker pid has new events: this worker's own stream
 * writes them alone (the stream_poke hook), with no look at the tens of
 * thousands of others it may hold; another worker is woken.
 */

ngx_int_t
ngx_http_mcp_notify_stream(ngx_pid_t pid, uint32_t token, ngx_log_t *log)
{
    if (pid == ngx_pid && ngx_http_mcp_hooks.stream_poke(token) == NGX_OK)
    {
        return NGX_OK;
    }

    return ngx_http_mcp_notify_pid(pid, log);
}


static ngx_int_t
ngx_http_mcp_ipc_wake(ngx_pid_t pid, ngx_log_t *log)
{
    u_char              byte;
    socklen_t           len;
    ngx_err_t           err;
    struct sockaddr_un  sun;

    if (!ngx_http_mcp_worker.bound
        || ngx_http_mcp_ipc_addr(&sun, &len, pid) != NGX_OK)
    {
        /*
         * mcp_ipc_path is wanting (this worker said so once): the
         * others poll as this one does, if they live
         */
        return (kill(pid, 0) == 0) ? NGX_OK : NGX_DECLINED;
    }

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
        /*
         * no socket: the worker exited, or it runs without one and
         * looks at the zone by itself
         */
        return (kill(pid, 0) == 0) ? NGX_OK : NGX_DECLINED;
    }

    ngx_log_error(NGX_LOG_ERR, log, err, "mcp: waking worker %P failed",
                  pid);

    return NGX_ERROR;
}


/*
 * Reads every datagram queued; 1 if one of them came from this worker's
 * user or root, the only ones who may wake it.
 */

static ngx_uint_t
ngx_http_mcp_ipc_recv(ngx_connection_t *c)
{
    u_char           buf[64];
    ssize_t          n;
    ngx_uint_t       woken;
    struct iovec     iov;
    struct msghdr    msg;
    struct cmsghdr  *cmsg;
    struct ucred     cred;
    union {
        struct cmsghdr  cm;
        char            space[CMSG_SPACE(sizeof(struct ucred))];
    } control;

    woken = 0;

    for ( ;; ) {
        iov.iov_base = buf;
        iov.iov_len = sizeof(buf);

        ngx_memzero(&msg, sizeof(struct msghdr));
        msg.msg_iov = &iov;
        msg.msg_iovlen = 1;
        msg.msg_control = &control;
        msg.msg_controllen = sizeof(control);

        n = recvmsg(c->fd, &msg, 0);

        if (n < 0) {
            return woken;
        }

        for (cmsg = CMSG_FIRSTHDR(&msg);
             cmsg != NULL;
             cmsg = CMSG_NXTHDR(&msg, cmsg))
        {
            if (cmsg->cmsg_level != SOL_SOCKET
                || cmsg->cmsg_type != SCM_CREDENTIALS
                || cmsg->cmsg_len < CMSG_LEN(sizeof(struct ucred)))
            {
                continue;
            }

            ngx_memcpy(&cred, CMSG_DATA(cmsg), sizeof(struct ucred));

            if (cred.uid == geteuid() || cred.uid == 0) {
                woken = 1;
            }
        }
    }
}


static void
ngx_http_mcp_ipc_read(ngx_event_t *ev)
{
    ngx_uint_t         woken;
    ngx_connection_t  *c;

    c = ev->data;
    woken = 0;

    if (c->close) {
        /* not to be closed: wake-ups still come while calls finish */
        c->close = 0;
        c->idle = 0;
        woken = 1;

        ngx_http_mcp_ipc_quit((ngx_cycle_t *) ngx_cycle);
    }

    if (!ngx_http_mcp_worker.bound) {
        /* the notice of the exit, with no socket to read */
        ngx_http_mcp_wake_handler(&ngx_http_mcp_worker.wake);
        return;
    }

    /* many wake-ups, one look */
    if (ngx_http_mcp_ipc_recv(c)) {
        woken = 1;
    }

    if (ngx_handle_read_event(ev, 0) != NGX_OK) {
        ngx_log_error(NGX_LOG_ALERT, ev->log, 0,
                      "mcp: re-arming the worker socket failed");
    }

    if (woken) {
        ngx_http_mcp_wake_handler(&ngx_http_mcp_worker.wake);
    }
}


/* no socket to be woken through: the worker looks by itself */

static void
ngx_http_mcp_ipc_poll(ngx_event_t *ev)
{
    ngx_http_mcp_wake_handler(ev);

    ngx_add_timer(ev, NGX_HTTP_MCP_IPC_POLL);
}


static void
ngx_http_mcp_wake_handler(ngx_event_t *ev)
{
    ngx_log_debug0(NGX_LOG_DEBUG_EVENT, ev->log, 0, "mcp worker woken");

    ngx_http_mcp_hooks.streams_wake();
    ngx_http_mcp_hooks.calls_wake();
    ngx_http_mcp_hooks.tasks_wake();
    ngx_http_mcp_hooks.stdio_wake();
}


/*
 * The worker's graceful exit, deadline 0 as it starts, 1 when its time
 * is up: calls first, for their responses end streams.
 */

static void
ngx_http_mcp_ipc_quit_all(ngx_uint_t deadline)
{
    ngx_http_mcp_hooks.calls_quit(deadline);
    ngx_http_mcp_hooks.streams_quit(deadline);
    ngx_http_mcp_hooks.proxy_quit(deadline);
}


/* whether the worker holds calls or streams, which its exit waits for */

static ngx_uint_t
ngx_http_mcp_ipc_busy(void)
{
    return ngx_http_mcp_hooks.calls_live() != 0
           || ngx_http_mcp_hooks.streams_live() != 0;
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
    ngx_msec_t        timeout;
    ngx_core_conf_t  *ccf;

    ngx_log_debug0(NGX_LOG_DEBUG_EVENT, cycle->log, 0,
                   "mcp worker exits gracefully");

    ngx_http_mcp_ipc_quit_all(0);

    if (!ngx_http_mcp_ipc_busy()) {
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
    if (ngx_http_mcp_worker.drain.timer_set && !ngx_http_mcp_ipc_busy()) {
        ngx_del_timer(&ngx_http_mcp_worker.drain);
    }
}


/* mcp_shutdown_timeout has passed: the hooks end what is left */

static void
ngx_http_mcp_drain_handler(ngx_event_t *ev)
{
    ngx_uint_t  n;

    n = ngx_http_mcp_hooks.calls_live();

    ngx_log_error(NGX_LOG_WARN, ev->log, 0,
                  "mcp: shutdown timeout, %ui call%s still running "
                  "end with an error", n, n == 1 ? "" : "s");

    ngx_http_mcp_ipc_quit_all(1);
}
