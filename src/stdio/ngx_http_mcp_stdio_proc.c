
/*
 * The process layer of mcp_stdio: a child started over two socketpairs
 * (stdin and stdout on one, stderr on the other), both ends in the worker
 * nonblocking and read by nginx's event loop; its stdout split into
 * lines for the module, its stderr into error.log lines (bounded in
 * length and rate); stopped with SIGTERM to its process group, SIGKILL
 * after a grace period, and reaped by this worker with waitpid() on its
 * own pid, never waitpid(-1).  See docs/stdio.md.
 */


#include "ngx_http_mcp_stdio.h"

#include <sys/resource.h>
#include <sys/wait.h>
#if (NGX_LINUX)
#include <sys/prctl.h>
#include <sys/syscall.h>
#endif


static void ngx_http_mcp_stdio_child_exec(ngx_http_mcp_stdio_exec_t *exec,
    int io, int err, ngx_pid_t parent);
static ngx_connection_t *ngx_http_mcp_stdio_conn(
    ngx_http_mcp_stdio_child_t *child, int fd, ngx_event_handler_pt read);
static void ngx_http_mcp_stdio_read(ngx_event_t *rev);
static void ngx_http_mcp_stdio_lines(ngx_http_mcp_stdio_child_t *child);
static void ngx_http_mcp_stdio_send(ngx_event_t *wev);
static void ngx_http_mcp_stdio_err_read(ngx_event_t *rev);
static void ngx_http_mcp_stdio_err_line(ngx_http_mcp_stdio_child_t *child);
static void ngx_http_mcp_stdio_signal(ngx_http_mcp_stdio_child_t *child,
    int signo);
static void ngx_http_mcp_stdio_reap_poll(ngx_event_t *ev);
static ngx_int_t ngx_http_mcp_stdio_reap(ngx_http_mcp_stdio_child_t *child);
static void ngx_http_mcp_stdio_free(ngx_http_mcp_stdio_child_t *child);


/* this worker's children that were stopped and are not yet reaped */
static ngx_queue_t  ngx_http_mcp_stdio_stopping;


void
ngx_http_mcp_stdio_proc_init(void)
{
    struct sigaction  sa;

    ngx_queue_init(&ngx_http_mcp_stdio_stopping);

    /*
     * A worker inherits the master's SIGCHLD handler, which reaps with
     * waitpid(-1) and logs each child as an "unknown process": it would
     * take our children's statuses, and a pid reaped behind our back may
     * be another process's by the time we signal it.  The default
     * disposition leaves a dead child a zombie until this worker reaps it
     * by its pid, so a pid we signal is always still ours.
     */
    ngx_memzero(&sa, sizeof(struct sigaction));
    sa.sa_handler = SIG_DFL;
    sigemptyset(&sa.sa_mask);

    if (sigaction(SIGCHLD, &sa, NULL) == -1) {
        ngx_log_error(NGX_LOG_ALERT, ngx_cycle->log, ngx_errno,
                      "mcp_stdio: sigaction(SIGCHLD) failed");
    }
}


ngx_http_mcp_stdio_child_t *
ngx_http_mcp_stdio_spawn(ngx_http_mcp_stdio_pool_t *pool)
{
    int                          io[2], err[2];
    sigset_t                     all, mask;
    ngx_pid_t                    pid, parent;
    ngx_http_mcp_stdio_child_t  *child;

    child = ngx_calloc(sizeof(ngx_http_mcp_stdio_child_t), ngx_cycle->log);
    if (child == NULL) {
        return NULL;
    }

    child->in_size = 4096;
    child->in = ngx_alloc(child->in_size, ngx_cycle->log);
    if (child->in == NULL) {
        ngx_free(child);
        return NULL;
    }

    if (socketpair(AF_UNIX, SOCK_STREAM, 0, io) == -1) {
        ngx_log_error(NGX_LOG_ALERT, ngx_cycle->log, ngx_errno,
                      "mcp_stdio: socketpair() failed");
        goto failed;
    }

    if (socketpair(AF_UNIX, SOCK_STREAM, 0, err) == -1) {
        ngx_log_error(NGX_LOG_ALERT, ngx_cycle->log, ngx_errno,
                      "mcp_stdio: socketpair() failed");
        close(io[0]);
        close(io[1]);
        goto failed;
    }

    /*
     * Until the child has set its signals back to their defaults, a
     * SIGTERM (a stop at once) would reach nginx's handler, copied with
     * the worker, and be lost: the child is born with every signal
     * blocked, and unblocks them when its handlers are the defaults.
     */
    sigfillset(&all);
    (void) sigprocmask(SIG_BLOCK, &all, &mask);

    parent = ngx_getpid();
    pid = fork();

    if (pid != 0) {
        (void) sigprocmask(SIG_SETMASK, &mask, NULL);
    }

    if (pid == 0) {
        close(io[0]);
        close(err[0]);
        ngx_http_mcp_stdio_child_exec(pool->exec, io[1], err[1], parent);
        _exit(127);
    }

    close(io[1]);
    close(err[1]);

    if (pid == -1) {
        ngx_log_error(NGX_LOG_ALERT, ngx_cycle->log, ngx_errno,
                      "mcp_stdio: fork() failed");
        close(io[0]);
        close(err[0]);
        goto failed;
    }

    child->pid = pid;
    child->pool = pool;
    child->started = ngx_current_msec;
    child->state = NGX_HTTP_MCP_STDIO_INIT;
    child->timer.handler = ngx_http_mcp_stdio_reap_poll;
    child->timer.data = child;
    child->timer.log = ngx_cycle->log;
    child->timer.cancelable = 1;

    ngx_queue_insert_tail(&pool->children, &child->queue);
    pool->live++;
    ngx_http_mcp_stdio_count(pool);

    /* each descriptor is its connection's now, closed with it */
    child->io = ngx_http_mcp_stdio_conn(child, io[0],
                                        ngx_http_mcp_stdio_read);
    child->err = ngx_http_mcp_stdio_conn(child, err[0],
                                         ngx_http_mcp_stdio_err_read);

    ngx_log_error(NGX_LOG_INFO, ngx_cycle->log, 0,
                  "mcp_stdio: started \"%s\", pid %P",
                  pool->exec->argv[0], pid);

    if (child->io == NULL) {
        /* stopped and reaped as any other; the pool backs off */
        child->pool->gone(child, "its stdout could not be read");
        return NULL;
    }

    return child;

failed:

    ngx_free(child->in);
    ngx_free(child);

    /* the place reserved for it is given back */
    ngx_http_mcp_stdio_count(pool);

    return NULL;
}


/*
 * After fork(), in the child: only async-signal-safe calls until
 * execve().  Nothing of the worker is left to it but the two sockets,
 * made its 0, 1 and 2.
 */

static void
ngx_http_mcp_stdio_child_exec(ngx_http_mcp_stdio_exec_t *exec, int io,
    int err, ngx_pid_t parent)
{
    int                          fd, max;
    sigset_t                     set;
    ngx_uint_t                   i;
    struct rlimit                rl;
    struct sigaction             sa;
    ngx_http_mcp_stdio_limit_t  *lim;

    /* nginx's handlers and its ignored SIGPIPE are not the child's */
    ngx_memzero(&sa, sizeof(struct sigaction));
    sa.sa_handler = SIG_DFL;
    sigemptyset(&sa.sa_mask);

    for (i = 1; i < NSIG; i++) {
        (void) sigaction(i, &sa, NULL);
    }

    sigemptyset(&set);
    (void) sigprocmask(SIG_SETMASK, &set, NULL);

    /* its own group: a stop reaches the processes it starts too */
    (void) setpgid(0, 0);

#if (NGX_LINUX)
    /* a worker that dies without its exit (SIGKILL, a crash) takes it */
    (void) prctl(PR_SET_PDEATHSIG, SIGKILL);

    if (getppid() != parent) {
        _exit(127);
    }
#else
    (void) parent;
#endif

    if (dup2(io, 0) == -1 || dup2(io, 1) == -1 || dup2(err, 2) == -1) {
        _exit(127);
    }

#if (NGX_LINUX && defined SYS_close_range)
    if (syscall(SYS_close_range, 3, ~0U, 0) == 0) {
        goto closed;
    }
#endif

    max = 1024;

    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY
        && rl.rlim_cur < 1048576)
    {
        max = (int) rl.rlim_cur;
    }

    for (fd = 3; fd < max; fd++) {
        (void) close(fd);
    }

#if (NGX_LINUX && defined SYS_close_range)
closed:
#endif

    if (chdir(exec->dir) == -1) {
        _exit(126);
    }

    if (exec->limits) {
        lim = exec->limits->elts;

        for (i = 0; i < exec->limits->nelts; i++) {
            rl.rlim_cur = lim[i].value;
            rl.rlim_max = lim[i].value;

            if (setrlimit(lim[i].resource, &rl) == -1) {
                _exit(126);
            }
        }
    }

    (void) execve(exec->argv[0], exec->argv, exec->envp);

    _exit(127);
}


/* fd as a connection on the worker's events; closed when it fails */

static ngx_connection_t *
ngx_http_mcp_stdio_conn(ngx_http_mcp_stdio_child_t *child, int fd,
    ngx_event_handler_pt read)
{
    ngx_connection_t  *c;

    if (ngx_nonblocking(fd) == -1
        || fcntl(fd, F_SETFD, FD_CLOEXEC) == -1)
    {
        ngx_log_error(NGX_LOG_ALERT, ngx_cycle->log, ngx_socket_errno,
                      "mcp_stdio: fcntl() failed");
        (void) close(fd);
        return NULL;
    }

    c = ngx_get_connection(fd, ngx_cycle->log);
    if (c == NULL) {
        (void) close(fd);
        return NULL;
    }

    c->data = child;
    /* a child that exits with our bytes unread resets: its end is logged */
    c->log_error = NGX_ERROR_INFO;
    c->recv = ngx_recv;
    c->send = ngx_send;
    c->read->handler = read;
    c->write->handler = ngx_http_mcp_stdio_send;
    c->read->log = ngx_cycle->log;
    c->write->log = ngx_cycle->log;
    c->write->ready = 1;

    if (ngx_handle_read_event(c->read, 0) != NGX_OK) {
        ngx_close_connection(c);
        return NULL;
    }

    return c;
}


static void
ngx_http_mcp_stdio_read(ngx_event_t *rev)
{
    u_char                      *p;
    size_t                       size;
    ssize_t                      n;
    ngx_connection_t            *c;
    ngx_http_mcp_stdio_child_t  *child;

    c = rev->data;
    child = c->data;

    while (rev->ready) {

        if (child->in_len == child->in_size) {
            if (child->in_size >= child->pool->exec->max_line) {
                ngx_log_error(NGX_LOG_ERR, ngx_cycle->log, 0,
                              "mcp_stdio: pid %P wrote a line longer "
                              "than %uz bytes", child->pid,
                              child->pool->exec->max_line);
                child->pool->gone(child, "a message too long");
                return;
            }

            size = ngx_min(child->in_size * 2, child->pool->exec->max_line);
            p = ngx_alloc(size, ngx_cycle->log);
            if (p == NULL) {
                child->pool->gone(child, "no memory");
                return;
            }

            ngx_memcpy(p, child->in, child->in_len);
            ngx_free(child->in);
            child->in = p;
            child->in_size = size;
        }

        n = c->recv(c, child->in + child->in_len,
                    child->in_size - child->in_len);

        if (n == NGX_AGAIN) {
            break;
        }

        if (n == 0 || n == NGX_ERROR) {
            child->pool->gone(child, "it exited");
            return;
        }

        child->in_len += n;

        ngx_http_mcp_stdio_lines(child);

        if (child->pool == NULL || child->io == NULL) {
            /* a line ended it */
            return;
        }
    }

    if (ngx_handle_read_event(rev, 0) != NGX_OK) {
        child->pool->gone(child, "its stdout could not be read");
    }
}


/* each whole line to the module; a line may stop the child */

static void
ngx_http_mcp_stdio_lines(ngx_http_mcp_stdio_child_t *child)
{
    u_char  *p, *start, *end;

    start = child->in;
    end = child->in + child->in_len;

    while (start < end) {
        p = ngx_strlchr(start, end, '\n');
        if (p == NULL) {
            break;
        }

        child->pool->line(child, start, p - start);

        if (child->pool == NULL) {
            return;
        }

        start = p + 1;
    }

    child->in_len = end - start;

    if (child->in_len && start != child->in) {
        ngx_memmove(child->in, start, child->in_len);
    }
}


/* a line for the child's stdin: queued whole, written as it takes it */

ngx_int_t
ngx_http_mcp_stdio_write(ngx_http_mcp_stdio_child_t *child, u_char *line,
    size_t len)
{
    u_char  *p;
    size_t   size;

    if (child->io == NULL) {
        return NGX_ERROR;
    }

    if (child->out_pos == child->out_len) {
        child->out_pos = 0;
        child->out_len = 0;
    }

    if (child->out_size - child->out_len < len + 1) {
        size = ngx_max(child->out_len - child->out_pos + len + 1, 4096);

        p = ngx_alloc(size, ngx_cycle->log);
        if (p == NULL) {
            return NGX_ERROR;
        }

        if (child->out) {
            ngx_memcpy(p, child->out + child->out_pos,
                       child->out_len - child->out_pos);
            ngx_free(child->out);
        }

        child->out_len -= child->out_pos;
        child->out_pos = 0;

        child->out = p;
        child->out_size = size;
    }

    p = ngx_cpymem(child->out + child->out_len, line, len);
    *p = '\n';
    child->out_len += len + 1;

    ngx_http_mcp_stdio_send(child->io->write);

    return child->io ? NGX_OK : NGX_ERROR;
}


static void
ngx_http_mcp_stdio_send(ngx_event_t *wev)
{
    ssize_t                      n;
    ngx_connection_t            *c;
    ngx_http_mcp_stdio_child_t  *child;

    c = wev->data;
    child = c->data;

    if (c != child->io) {
        /* stderr's connection is never written */
        return;
    }

    while (child->out_pos < child->out_len) {
        n = c->send(c, child->out + child->out_pos,
                    child->out_len - child->out_pos);

        if (n == NGX_AGAIN) {
            if (ngx_handle_write_event(wev, 0) != NGX_OK) {
                child->pool->gone(child, "its stdin failed");
            }

            return;
        }

        if (n == NGX_ERROR) {
            child->pool->gone(child, "its stdin is closed");
            return;
        }

        child->out_pos += n;
    }
}


static void
ngx_http_mcp_stdio_err_read(ngx_event_t *rev)
{
    u_char                       buf[2048], *p, *end;
    ssize_t                      n;
    ngx_connection_t            *c;
    ngx_http_mcp_stdio_child_t  *child;

    c = rev->data;
    child = c->data;

    while (rev->ready) {
        n = c->recv(c, buf, sizeof(buf));

        if (n == NGX_AGAIN) {
            break;
        }

        if (n == 0 || n == NGX_ERROR) {
            if (child->err_len) {
                ngx_http_mcp_stdio_err_line(child);
            }

            ngx_close_connection(c);
            child->err = NULL;
            return;
        }

        for (p = buf, end = buf + n; p < end; p++) {
            if (*p == '\n') {
                if (!child->err_skip) {
                    ngx_http_mcp_stdio_err_line(child);
                }

                child->err_len = 0;
                child->err_skip = 0;
                continue;
            }

            if (child->err_skip) {
                continue;
            }

            if (child->err_len == NGX_HTTP_MCP_STDIO_ERRLINE) {
                /* the first part of a long line, the rest skipped */
                ngx_http_mcp_stdio_err_line(child);
                child->err_skip = 1;
                continue;
            }

            /* a control byte is not written into the log as it is */
            child->errline[child->err_len++] = (*p < 0x20 && *p != '\t')
                                               ? '?' : *p;
        }
    }

    if (ngx_handle_read_event(rev, 0) != NGX_OK) {
        ngx_close_connection(c);
        child->err = NULL;
    }
}


static void
ngx_http_mcp_stdio_err_line(ngx_http_mcp_stdio_child_t *child)
{
    ngx_uint_t  level;

    level = child->pool ? child->pool->exec->err_level : NGX_LOG_INFO;

    if (ngx_current_msec - child->err_window >= 1000) {
        if (child->err_dropped) {
            ngx_log_error(level, ngx_cycle->log, 0,
                          "mcp_stdio: pid %P: %ui stderr lines not logged",
                          child->pid, child->err_dropped);
        }

        child->err_window = ngx_current_msec;
        child->err_count = 0;
        child->err_dropped = 0;
    }

    if (child->err_count++ >= NGX_HTTP_MCP_STDIO_ERRRATE) {
        child->err_dropped++;
        child->err_len = 0;
        return;
    }

    ngx_log_error(level, ngx_cycle->log, 0, "mcp_stdio: pid %P: %*s",
                  child->pid, child->err_len, child->errline);

    child->err_len = 0;
}


/*
 * Stops a child: its pipes closed, SIGTERM to its group, SIGKILL when
 * the grace period ends, reaped by its pid as soon as it is dead.  It
 * leaves its pool at once (its place may be taken) and waits on the
 * worker's stopping list.
 */

void
ngx_http_mcp_stdio_stop(ngx_http_mcp_stdio_child_t *child)
{
    ngx_http_mcp_stdio_pool_t  *pool;

    pool = child->pool;

    if (pool == NULL) {
        return;
    }

    ngx_queue_remove(&child->queue);
    pool->live--;
    ngx_http_mcp_stdio_count(pool);

    child->pool = NULL;
    child->state = NGX_HTTP_MCP_STDIO_STOPPING;
    child->timer.cancelable = 1;
    child->stopped = ngx_current_msec;

    if (child->io) {
        ngx_close_connection(child->io);
        child->io = NULL;
    }

    if (child->err) {
        ngx_close_connection(child->err);
        child->err = NULL;
    }

    ngx_queue_insert_tail(&ngx_http_mcp_stdio_stopping, &child->queue);

    /*
     * Reaped by the timer, never here: the caller (a read handler, a
     * request) still holds the child.  A child that has exited is a
     * zombie until then, so its pid is not another's.
     */
    ngx_http_mcp_stdio_signal(child, SIGTERM);

    if (child->timer.timer_set) {
        ngx_del_timer(&child->timer);
    }

    child->timer.handler = ngx_http_mcp_stdio_reap_poll;
    ngx_add_timer(&child->timer, 10);
}


/*
 * To its group, which holds what it started (npx's node, a shell's
 * commands); to the child alone in the moment after fork() before its
 * setpgid().
 */

static void
ngx_http_mcp_stdio_signal(ngx_http_mcp_stdio_child_t *child, int signo)
{
    if (kill(-child->pid, signo) == -1) {
        (void) kill(child->pid, signo);
    }
}


static void
ngx_http_mcp_stdio_reap_poll(ngx_event_t *ev)
{
    ngx_http_mcp_stdio_child_t  *child;

    child = ev->data;

    if (ngx_http_mcp_stdio_reap(child) == NGX_OK) {
        return;
    }

    if (!child->killed
        && ngx_current_msec - child->stopped >= NGX_HTTP_MCP_STDIO_GRACE)
    {
        ngx_log_error(NGX_LOG_WARN, ngx_cycle->log, 0,
                      "mcp_stdio: pid %P did not exit on SIGTERM, killed",
                      child->pid);

        child->killed = 1;

        ngx_http_mcp_stdio_signal(child, SIGKILL);
    }

    ngx_add_timer(ev, 50);
}


/* NGX_OK: reaped (and freed), NGX_AGAIN: still running */

static ngx_int_t
ngx_http_mcp_stdio_reap(ngx_http_mcp_stdio_child_t *child)
{
    int         status;
    ngx_pid_t   pid;
    ngx_uint_t  level;

    pid = waitpid(child->pid, &status, WNOHANG);

    if (pid == 0) {
        return NGX_AGAIN;
    }

    if (pid == -1) {
        if (ngx_errno == NGX_EINTR) {
            return NGX_AGAIN;
        }

        ngx_log_error(NGX_LOG_ALERT, ngx_cycle->log, ngx_errno,
                      "mcp_stdio: waitpid(%P) failed", child->pid);

    } else if (WIFSIGNALED(status)) {
        level = (child->killed || WTERMSIG(status) == SIGTERM)
                ? NGX_LOG_INFO : NGX_LOG_WARN;

        ngx_log_error(level, ngx_cycle->log, 0,
                      "mcp_stdio: pid %P exited on signal %d",
                      child->pid, WTERMSIG(status));

    } else {
        ngx_log_error(NGX_LOG_INFO, ngx_cycle->log, 0,
                      "mcp_stdio: pid %P exited with code %d",
                      child->pid, WEXITSTATUS(status));
    }

    ngx_queue_remove(&child->queue);

    if (child->timer.timer_set) {
        ngx_del_timer(&child->timer);
    }

    ngx_http_mcp_stdio_free(child);

    return NGX_OK;
}


static void
ngx_http_mcp_stdio_free(ngx_http_mcp_stdio_child_t *child)
{
    if (child->init) {
        cJSON_Delete(child->init);
    }

    if (child->out) {
        ngx_free(child->out);
    }

    ngx_free(child->in);
    ngx_free(child);
}


/*
 * The worker exits: every child of every pool is stopped, and waited
 * for here, since nothing runs after this.  A bounded wait (nginx's own
 * exit waits likewise): SIGTERM, up to the grace period, then SIGKILL,
 * which cannot be refused.
 */

void
ngx_http_mcp_stdio_stop_all(ngx_cycle_t *cycle)
{
    ngx_uint_t                   waited;
    ngx_queue_t                 *q, *next;
    ngx_http_mcp_stdio_child_t  *child;

    if (ngx_http_mcp_stdio_stopping.next == NULL) {
        /* no mcp_stdio location: never set up */
        return;
    }

    for (waited = 0; !ngx_queue_empty(&ngx_http_mcp_stdio_stopping);
         waited += 10)
    {
        for (q = ngx_queue_head(&ngx_http_mcp_stdio_stopping);
             q != ngx_queue_sentinel(&ngx_http_mcp_stdio_stopping);
             q = next)
        {
            next = ngx_queue_next(q);
            child = ngx_queue_data(q, ngx_http_mcp_stdio_child_t, queue);

            if (ngx_http_mcp_stdio_reap(child) == NGX_OK) {
                continue;
            }

            if (waited >= NGX_HTTP_MCP_STDIO_GRACE && !child->killed) {
                child->killed = 1;

                ngx_http_mcp_stdio_signal(child, SIGKILL);
            }
        }

        if (waited >= 2 * NGX_HTTP_MCP_STDIO_GRACE) {
            ngx_log_error(NGX_LOG_ALERT, cycle->log, 0,
                          "mcp_stdio: children left unreaped at exit");
            break;
        }

        if (!ngx_queue_empty(&ngx_http_mcp_stdio_stopping)) {
            ngx_msleep(10);
        }
    }
}


/* this worker's live children of the pool, in its row of the counters */

void
ngx_http_mcp_stdio_count(ngx_http_mcp_stdio_pool_t *pool)
{
    ngx_atomic_t  *row;

    if (pool->zone == NULL || ngx_process_slot < 0
        || ngx_process_slot >= NGX_MAX_PROCESSES)
    {
        return;
    }

    row = (ngx_atomic_t *) pool->zone->data + pool->index * NGX_MAX_PROCESSES;
    row[ngx_process_slot] = pool->live;
}


/*
 * A place for one more child within the pool's total: the cells summed
 * and this worker's raised in one step under the zone's lock, so that
 * two workers never both take the last place.  NGX_DECLINED: none left.
 */

ngx_int_t
ngx_http_mcp_stdio_reserve(ngx_http_mcp_stdio_pool_t *pool)
{
    ngx_uint_t        i, n;
    ngx_atomic_t     *row;
    ngx_slab_pool_t  *shpool;

    if (pool->zone == NULL || ngx_process_slot < 0
        || ngx_process_slot >= NGX_MAX_PROCESSES)
    {
        return NGX_OK;
    }

    shpool = (ngx_slab_pool_t *) pool->zone->shm.addr;
    row = (ngx_atomic_t *) pool->zone->data + pool->index * NGX_MAX_PROCESSES;

    ngx_shmtx_lock(&shpool->mutex);

    n = 0;

    for (i = 0; i < NGX_MAX_PROCESSES; i++) {
        n += row[i];
    }

    if (n >= pool->total) {
        ngx_shmtx_unlock(&shpool->mutex);
        return NGX_DECLINED;
    }

    /* the spawn sets it to live, the same number, or back if it fails */
    row[ngx_process_slot] = pool->live + 1;

    ngx_shmtx_unlock(&shpool->mutex);

    return NGX_OK;
}
