
/*
 * A worker's Redis connection, on nginx's event loop.  hiredis's
 * asynchronous API does the protocol; this file gives it the events:
 * the connection's socket becomes an ngx_connection_t whose read and
 * write events (level-triggered: hiredis reads one buffer at a time)
 * call hiredis's handlers.  Nothing here blocks the worker.
 *
 * A connection is ready once Redis answered its first PING; an idle
 * one sends a PING every second, so that every worker learns of an
 * outage without a request paying for it.  A connection that fails,
 * closes or leaves a command unanswered for the timeout is dropped:
 * hiredis calls the commands still waiting with no reply, and a timer
 * connects again after a backoff (100 ms, doubled up to 5 s).  An
 * outage is told once in error.log, by worker 0, and its end once; the
 * callers answer their clients meanwhile.
 */


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_event.h>

#include "ngx_http_mcp_redis.h"


#if (NGX_HTTP_MCP_HIREDIS)

#include <hiredis/hiredis.h>
#include <hiredis/async.h>


#define NGX_HTTP_MCP_REDIS_BACKOFF      100
#define NGX_HTTP_MCP_REDIS_BACKOFF_MAX  5000
#define NGX_HTTP_MCP_REDIS_PING         1000


typedef struct {
    redisAsyncContext         *ac;
    ngx_connection_t          *conn;
    ngx_event_t                retry;       /* connects again */
    ngx_event_t                timer;       /* a reply is overdue */
    ngx_event_t                ping;        /* an idle connection's */
    ngx_msec_t                 backoff;
    ngx_msec_t                 timeout;
    ngx_uint_t                 pending;     /* commands sent, unanswered */
    ngx_log_t                 *log;
    char                      *host;
    int                        port;
    ngx_http_mcp_redis_up_pt   up;
    unsigned                   connected:1;
    unsigned                   ready:1;     /* PING answered */
    unsigned                   down:1;      /* an outage told */
    unsigned                   stopping:1;
} ngx_http_mcp_redis_t;


typedef struct {
    ngx_http_mcp_redis_pt      handler;
    void                      *data;
} ngx_http_mcp_redis_cmd_t;


static void ngx_http_mcp_redis_connect(ngx_event_t *ev);
static void ngx_http_mcp_redis_schedule(void);
static void ngx_http_mcp_redis_outage(const char *why);
static void ngx_http_mcp_redis_drop(const char *why);
static void ngx_http_mcp_redis_timeout(ngx_event_t *ev);
static void ngx_http_mcp_redis_keepalive(ngx_event_t *ev);
static void ngx_http_mcp_redis_pong(void *data, ngx_int_t rc,
    ngx_str_t *value);
static ngx_int_t ngx_http_mcp_redis_ping(void);
static void ngx_http_mcp_redis_on_connect(const redisAsyncContext *ac,
    int status);
static void ngx_http_mcp_redis_on_disconnect(const redisAsyncContext *ac,
    int status);
static void ngx_http_mcp_redis_reply(redisAsyncContext *ac, void *r,
    void *privdata);
static void ngx_http_mcp_redis_read(ngx_event_t *ev);
static void ngx_http_mcp_redis_write(ngx_event_t *ev);
static void ngx_http_mcp_redis_add_read(void *privdata);
static void ngx_http_mcp_redis_del_read(void *privdata);
static void ngx_http_mcp_redis_add_write(void *privdata);
static void ngx_http_mcp_redis_del_write(void *privdata);
static void ngx_http_mcp_redis_add(ngx_event_t *ev, ngx_int_t event);
static void ngx_http_mcp_redis_del(ngx_event_t *ev, ngx_int_t event);
static void ngx_http_mcp_redis_cleanup(void *privdata);


static ngx_http_mcp_redis_t  ngx_http_mcp_redis;


ngx_int_t
ngx_http_mcp_redis_start(ngx_cycle_t *cycle, ngx_str_t *host,
    in_port_t port, ngx_msec_t timeout, ngx_http_mcp_redis_up_pt up)
{
    ngx_http_mcp_redis_t  *rd = &ngx_http_mcp_redis;

    ngx_memzero(rd, sizeof(ngx_http_mcp_redis_t));

    rd->host = ngx_alloc(host->len + 1, cycle->log);
    if (rd->host == NULL) {
        return NGX_ERROR;
    }

    (void) ngx_cpystrn((u_char *) rd->host, host->data, host->len + 1);

    rd->port = port;
    rd->timeout = timeout;
    rd->up = up;
    rd->log = cycle->log;
    rd->backoff = NGX_HTTP_MCP_REDIS_BACKOFF;

    rd->retry.handler = ngx_http_mcp_redis_connect;
    rd->retry.log = cycle->log;
    rd->retry.data = rd;
    rd->retry.cancelable = 1;

    rd->timer.handler = ngx_http_mcp_redis_timeout;
    rd->timer.log = cycle->log;
    rd->timer.data = rd;
    rd->timer.cancelable = 1;

    rd->ping.handler = ngx_http_mcp_redis_keepalive;
    rd->ping.log = cycle->log;
    rd->ping.data = rd;
    rd->ping.cancelable = 1;

    ngx_add_timer(&rd->ping, NGX_HTTP_MCP_REDIS_PING);

    ngx_http_mcp_redis_connect(&rd->retry);

    return NGX_OK;
}


/* the worker exits: no more connections */

void
ngx_http_mcp_redis_stop(void)
{
    redisAsyncContext     *ac;
    ngx_http_mcp_redis_t  *rd = &ngx_http_mcp_redis;

    if (rd->host == NULL || rd->stopping) {
        return;
    }

    rd->stopping = 1;
    rd->connected = 0;
    rd->ready = 0;

    if (rd->retry.timer_set) {
        ngx_del_timer(&rd->retry);
    }

    if (rd->ping.timer_set) {
        ngx_del_timer(&rd->ping);
    }

    if (rd->timer.timer_set) {
        ngx_del_timer(&rd->timer);
    }

    ac = rd->ac;
    rd->ac = NULL;

    if (ac != NULL) {
        redisAsyncFree(ac);
    }
}


ngx_uint_t
ngx_http_mcp_redis_ready(void)
{
    return ngx_http_mcp_redis.ready;
}


/*
 * Sends one command (binary-safe arguments).  NGX_OK: the handler is
 * called later, whatever happens; NGX_DECLINED: not connected, and the
 * handler is not called.
 */

ngx_int_t
ngx_http_mcp_redis_command(ngx_http_mcp_redis_pt handler, void *data,
    int argc, const char **argv, const size_t *argvlen)
{
    ngx_http_mcp_redis_t      *rd = &ngx_http_mcp_redis;
    ngx_http_mcp_redis_cmd_t  *cmd;

    if (!rd->connected || rd->ac == NULL) {
        return NGX_DECLINED;
    }

    cmd = ngx_alloc(sizeof(ngx_http_mcp_redis_cmd_t), rd->log);
    if (cmd == NULL) {
        return NGX_DECLINED;
    }

    cmd->handler = handler;
    cmd->data = data;

    if (redisAsyncCommandArgv(rd->ac, ngx_http_mcp_redis_reply, cmd, argc,
                              argv, argvlen)
        != REDIS_OK)
    {
        ngx_free(cmd);
        return NGX_DECLINED;
    }

    rd->pending++;

    if (!rd->timer.timer_set) {
        ngx_add_timer(&rd->timer, rd->timeout);
    }

    return NGX_OK;
}


static void
ngx_http_mcp_redis_connect(ngx_event_t *ev)
{
    ngx_connection_t      *c;
    redisAsyncContext     *ac;
    ngx_http_mcp_redis_t  *rd = &ngx_http_mcp_redis;

    if (rd->stopping || ngx_exiting || ngx_quit || ngx_terminate) {
        return;
    }

    ac = redisAsyncConnect(rd->host, rd->port);

    if (ac == NULL) {
        ngx_http_mcp_redis_outage("no memory");
        ngx_http_mcp_redis_schedule();
        return;
    }

    if (ac->err) {
        ngx_http_mcp_redis_outage(ac->errstr);
        redisAsyncFree(ac);
        ngx_http_mcp_redis_schedule();
        return;
    }

    c = ngx_get_connection(ac->c.fd, rd->log);
    if (c == NULL) {
        ngx_http_mcp_redis_outage("no free connection");
        redisAsyncFree(ac);
        ngx_http_mcp_redis_schedule();
        return;
    }

    c->log = rd->log;
    c->read->log = rd->log;
    c->write->log = rd->log;
    c->read->handler = ngx_http_mcp_redis_read;
    c->write->handler = ngx_http_mcp_redis_write;
    c->data = rd;

    /* ngx_close_idle_connections() tells it that the worker exits */
    c->idle = 1;

    rd->ac = ac;
    rd->conn = c;

    ac->ev.data = c;
    ac->ev.addRead = ngx_http_mcp_redis_add_read;
    ac->ev.delRead = ngx_http_mcp_redis_del_read;
    ac->ev.addWrite = ngx_http_mcp_redis_add_write;
    ac->ev.delWrite = ngx_http_mcp_redis_del_write;
    ac->ev.cleanup = ngx_http_mcp_redis_cleanup;

    /* the connect's outcome comes with the first write event */
    (void) redisAsyncSetConnectCallback(ac, ngx_http_mcp_redis_on_connect);
    (void) redisAsyncSetDisconnectCallback(ac,
                                           ngx_http_mcp_redis_on_disconnect);

    ngx_log_debug0(NGX_LOG_DEBUG_EVENT, rd->log, 0, "mcp redis: connecting");
}


static void
ngx_http_mcp_redis_schedule(void)
{
    ngx_http_mcp_redis_t  *rd = &ngx_http_mcp_redis;

    if (rd->stopping || rd->retry.timer_set) {
        return;
    }

    ngx_add_timer(&rd->retry, rd->backoff);

    rd->backoff *= 2;

    if (rd->backoff > NGX_HTTP_MCP_REDIS_BACKOFF_MAX) {
        rd->backoff = NGX_HTTP_MCP_REDIS_BACKOFF_MAX;
    }
}


/* told once per outage, by one worker: not once per request */

static void
ngx_http_mcp_redis_outage(const char *why)
{
    ngx_http_mcp_redis_t  *rd = &ngx_http_mcp_redis;

    if (rd->down || rd->stopping) {
        ngx_log_debug1(NGX_LOG_DEBUG_EVENT, rd->log, 0,
                       "mcp redis: still down: %s", why);
        return;
    }

    rd->down = 1;

    if (ngx_worker == 0) {
        ngx_log_error(NGX_LOG_WARN, rd->log, 0,
                      "mcp_fleet: redis at %s:%d unreachable (%s): "
                      "requests that need it are refused with 503 until "
                      "it is back", rd->host, rd->port, why);
    }
}


/* drops the connection; hiredis calls the waiting commands with none */

static void
ngx_http_mcp_redis_drop(const char *why)
{
    redisAsyncContext     *ac;
    ngx_http_mcp_redis_t  *rd = &ngx_http_mcp_redis;

    ngx_http_mcp_redis_outage(why);

    rd->connected = 0;
    rd->ready = 0;

    if (rd->timer.timer_set) {
        ngx_del_timer(&rd->timer);
    }

    ac = rd->ac;
    rd->ac = NULL;

    if (ac != NULL) {
        redisAsyncFree(ac);
    }

    ngx_http_mcp_redis_schedule();
}


static void
ngx_http_mcp_redis_timeout(ngx_event_t *ev)
{
    ngx_http_mcp_redis_drop("no reply in time");
}


static void
ngx_http_mcp_redis_on_connect(const redisAsyncContext *ac, int status)
{
    ngx_http_mcp_redis_t  *rd = &ngx_http_mcp_redis;

    if (status != REDIS_OK) {
        /* hiredis frees the context after this returns */
        rd->ac = NULL;
        rd->connected = 0;
        rd->ready = 0;
        ngx_http_mcp_redis_outage(ac->errstr[0] ? ac->errstr
                                                : "connect failed");
        ngx_http_mcp_redis_schedule();
        return;
    }

    rd->connected = 1;

    ngx_log_debug0(NGX_LOG_DEBUG_EVENT, rd->log, 0, "mcp redis: connected");

    /*
     * Ready once Redis answers: a socket that accepts is not enough.  A
     * PING that could not be sent is sent again by the keepalive timer.
     */
    (void) ngx_http_mcp_redis_ping();
}


static ngx_int_t
ngx_http_mcp_redis_ping(void)
{
    const char  *argv[1];
    size_t       argvlen[1];

    argv[0] = "PING";
    argvlen[0] = 4;

    return ngx_http_mcp_redis_command(ngx_http_mcp_redis_pong, NULL, 1, argv,
                                      argvlen);
}


static void
ngx_http_mcp_redis_pong(void *data, ngx_int_t rc, ngx_str_t *value)
{
    ngx_http_mcp_redis_t  *rd = &ngx_http_mcp_redis;

    if (rc == NGX_ERROR || rd->ready) {
        /* dropped already (and told), or a keepalive's answer */
        return;
    }

    if (rc != NGX_DONE) {
        /* +PONG is a status */
        ngx_http_mcp_redis_drop("PING refused");
        return;
    }

    rd->ready = 1;
    rd->backoff = NGX_HTTP_MCP_REDIS_BACKOFF;

    if (rd->down) {
        rd->down = 0;

        if (ngx_worker == 0) {
            ngx_log_error(NGX_LOG_NOTICE, rd->log, 0,
                          "mcp_fleet: redis at %s:%d reachable again",
                          rd->host, rd->port);
        }
    }

    ngx_log_debug0(NGX_LOG_DEBUG_EVENT, rd->log, 0, "mcp redis: ready");

    if (rd->up) {
        rd->up();
    }
}


/* an idle connection's PING: an outage is seen without a request */

static void
ngx_http_mcp_redis_keepalive(ngx_event_t *ev)
{
    ngx_http_mcp_redis_t  *rd = &ngx_http_mcp_redis;

    if (rd->stopping || ngx_exiting || ngx_quit || ngx_terminate) {
        return;
    }

    if (rd->connected && rd->pending == 0) {
        (void) ngx_http_mcp_redis_ping();
    }

    ngx_add_timer(ev, NGX_HTTP_MCP_REDIS_PING);
}


static void
ngx_http_mcp_redis_on_disconnect(const redisAsyncContext *ac, int status)
{
    ngx_http_mcp_redis_t  *rd = &ngx_http_mcp_redis;

    if (rd->ac == ac) {
        rd->ac = NULL;
    }

    rd->connected = 0;
    rd->ready = 0;

    if (rd->stopping) {
        return;
    }

    ngx_http_mcp_redis_outage(ac->errstr[0] ? ac->errstr
                                            : "connection closed");

    if (rd->timer.timer_set) {
        ngx_del_timer(&rd->timer);
    }

    ngx_http_mcp_redis_schedule();
}


static void
ngx_http_mcp_redis_reply(redisAsyncContext *ac, void *r, void *privdata)
{
    u_char                     buf[NGX_INT64_LEN];
    ngx_int_t                  rc;
    ngx_str_t                  value;
    redisReply                *reply = r;
    ngx_http_mcp_redis_t      *rd = &ngx_http_mcp_redis;
    ngx_http_mcp_redis_cmd_t   cmd;

    cmd = *(ngx_http_mcp_redis_cmd_t *) privdata;
    ngx_free(privdata);

    if (rd->pending) {
        rd->pending--;
    }

    if (rd->timer.timer_set) {
        ngx_del_timer(&rd->timer);
    }

    if (rd->pending && rd->connected) {
        ngx_add_timer(&rd->timer, rd->timeout);
    }

    value.len = 0;
    value.data = NULL;
    rc = NGX_OK;

    if (reply == NULL) {
        rc = NGX_ERROR;

    } else if (reply->type == REDIS_REPLY_STRING) {
        value.data = (u_char *) reply->str;
        value.len = reply->len;

    } else if (reply->type == REDIS_REPLY_STATUS) {
        /* a status is no stored value: a GET answered so is garbage */
        value.data = (u_char *) reply->str;
        value.len = reply->len;
        rc = NGX_DONE;

    } else if (reply->type == REDIS_REPLY_INTEGER) {
        value.data = buf;
        value.len = ngx_sprintf(buf, "%L", (int64_t) reply->integer) - buf;
        rc = NGX_DONE;

    } else if (reply->type != REDIS_REPLY_NIL) {
        /* an error, or a type that none of our commands gets */
        rc = NGX_DECLINED;
    }

    cmd.handler(cmd.data, rc, &value);
}


static void
ngx_http_mcp_redis_read(ngx_event_t *ev)
{
    ngx_connection_t      *c = ev->data;
    ngx_http_mcp_redis_t  *rd = c->data;

    if (c->close) {
        /* the worker exits */
        ngx_http_mcp_redis_stop();
        return;
    }

    if (rd->ac != NULL) {
        redisAsyncHandleRead(rd->ac);
    }
}


static void
ngx_http_mcp_redis_write(ngx_event_t *ev)
{
    ngx_connection_t      *c = ev->data;
    ngx_http_mcp_redis_t  *rd = c->data;

    if (rd->ac != NULL) {
        redisAsyncHandleWrite(rd->ac);
    }
}


/* the adapter: level-triggered, as hiredis expects */

static void
ngx_http_mcp_redis_add_read(void *privdata)
{
    ngx_http_mcp_redis_add(((ngx_connection_t *) privdata)->read,
                           NGX_READ_EVENT);
}


static void
ngx_http_mcp_redis_del_read(void *privdata)
{
    ngx_http_mcp_redis_del(((ngx_connection_t *) privdata)->read,
                           NGX_READ_EVENT);
}


static void
ngx_http_mcp_redis_add_write(void *privdata)
{
    ngx_http_mcp_redis_add(((ngx_connection_t *) privdata)->write,
                           NGX_WRITE_EVENT);
}


static void
ngx_http_mcp_redis_del_write(void *privdata)
{
    ngx_http_mcp_redis_del(((ngx_connection_t *) privdata)->write,
                           NGX_WRITE_EVENT);
}


static void
ngx_http_mcp_redis_add(ngx_event_t *ev, ngx_int_t event)
{
    if (!ev->active && ngx_add_event(ev, event, NGX_LEVEL_EVENT) != NGX_OK) {
        ngx_log_error(NGX_LOG_ALERT, ev->log, 0, "mcp redis: add event");
    }
}


static void
ngx_http_mcp_redis_del(ngx_event_t *ev, ngx_int_t event)
{
    if (ev->active) {
        (void) ngx_del_event(ev, event, 0);
    }
}


/* hiredis frees its context and then closes the socket itself */

static void
ngx_http_mcp_redis_cleanup(void *privdata)
{
    ngx_connection_t      *c = privdata;
    ngx_http_mcp_redis_t  *rd = c->data;

    ngx_http_mcp_redis_del_read(c);
    ngx_http_mcp_redis_del_write(c);

    if (c->read->posted) {
        ngx_delete_posted_event(c->read);
    }

    if (c->write->posted) {
        ngx_delete_posted_event(c->write);
    }

    if (rd->conn == c) {
        rd->conn = NULL;
    }

    ngx_free_connection(c);
    c->fd = (ngx_socket_t) -1;
}

#else /* built without hiredis: mcp_fleet refuses at nginx -t */


ngx_int_t
ngx_http_mcp_redis_start(ngx_cycle_t *cycle, ngx_str_t *host,
    in_port_t port, ngx_msec_t timeout, ngx_http_mcp_redis_up_pt up)
{
    return NGX_ERROR;
}


void
ngx_http_mcp_redis_stop(void)
{
}


ngx_uint_t
ngx_http_mcp_redis_ready(void)
{
    return 0;
}


ngx_int_t
ngx_http_mcp_redis_command(ngx_http_mcp_redis_pt handler, void *data,
    int argc, const char **argv, const size_t *argvlen)
{
    return NGX_DECLINED;
}

#endif
