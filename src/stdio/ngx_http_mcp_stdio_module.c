
/*
 * ngx_http_mcp_stdio_module: mcp_stdio and its directives, and the
 * location's content handler, which hands a message to a session
 * (ngx_http_mcp_stdio_session.c) or to the sessionless pool
 * (ngx_http_mcp_stdio_pool.c), and a child's lines and end to the one
 * the child serves.  The children themselves are the process layer's
 * (ngx_http_mcp_stdio_proc.c).  See docs/stdio.md.
 */


#include "ngx_http_mcp_stdio.h"
#include "ngx_http_mcp_json.h"
#include "ngx_http_mcp_jsonrpc.h"
#include "ngx_http_mcp_core.h"
#include "ngx_http_mcp_http.h"


typedef struct {
    ngx_array_t                 *pools;      /* _pool_t *, every location */
    ngx_shm_zone_t              *zone;
} ngx_http_mcp_stdio_main_conf_t;


typedef struct {
    ngx_array_t                 *args;       /* ngx_str_t: mcp_stdio */
    ngx_array_t                 *env;        /* ngx_str_t: NAME[=VALUE] */
    ngx_str_t                    dir;
    ngx_array_t                 *limits;     /* _limit_t */
    ngx_uint_t                   size;
    ngx_uint_t                   total;
    ngx_msec_t                   timeout;
    size_t                       max_line;
    ngx_uint_t                   err_level;
    ngx_flag_t                   sessions;
    ngx_msec_t                   poll;
    ngx_http_mcp_stdio_pool_t   *pool;
} ngx_http_mcp_stdio_loc_conf_t;


static ngx_int_t ngx_http_mcp_stdio_handler(ngx_http_request_t *r);
static void ngx_http_mcp_stdio_body(ngx_http_request_t *r);
static void ngx_http_mcp_stdio_cleanup(void *data);
static void ngx_http_mcp_stdio_line(ngx_http_mcp_stdio_child_t *child,
    u_char *line, size_t len);
static void ngx_http_mcp_stdio_gone(ngx_http_mcp_stdio_child_t *child,
    const char *why);

static void *ngx_http_mcp_stdio_create_main_conf(ngx_conf_t *cf);
static void *ngx_http_mcp_stdio_create_loc_conf(ngx_conf_t *cf);
static char *ngx_http_mcp_stdio_merge_loc_conf(ngx_conf_t *cf, void *parent,
    void *child);
static ngx_int_t ngx_http_mcp_stdio_exec(ngx_conf_t *cf,
    ngx_http_mcp_stdio_loc_conf_t *conf, ngx_http_mcp_stdio_exec_t *exec);
static char *ngx_http_mcp_stdio(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
static char *ngx_http_mcp_stdio_env(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
static char *ngx_http_mcp_stdio_limit(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
static char *ngx_http_mcp_stdio_pool(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
static char *ngx_http_mcp_stdio_stderr(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
static ngx_int_t ngx_http_mcp_stdio_postconf(ngx_conf_t *cf);
static ngx_int_t ngx_http_mcp_stdio_init_zone(ngx_shm_zone_t *shm_zone,
    void *data);
static ngx_int_t ngx_http_mcp_stdio_init_process(ngx_cycle_t *cycle);
static void ngx_http_mcp_stdio_exit_process(ngx_cycle_t *cycle);


typedef struct {
    ngx_str_t                    name;
    int                          resource;
    ngx_uint_t                   size;       /* a size (k, m, g), not a count */
} ngx_http_mcp_stdio_rlimit_t;


static ngx_http_mcp_stdio_rlimit_t  ngx_http_mcp_stdio_rlimits[] = {
    { ngx_string("nofile"), RLIMIT_NOFILE, 0 },
    { ngx_string("nproc"), RLIMIT_NPROC, 0 },
    { ngx_string("cpu"), RLIMIT_CPU, 0 },
    { ngx_string("as"), RLIMIT_AS, 1 },
    { ngx_string("data"), RLIMIT_DATA, 1 },
    { ngx_string("fsize"), RLIMIT_FSIZE, 1 },
    { ngx_string("core"), RLIMIT_CORE, 1 },
    { ngx_null_string, 0, 0 }
};


static ngx_command_t  ngx_http_mcp_stdio_commands[] = {

    { ngx_string("mcp_stdio"),
      NGX_HTTP_LOC_CONF|NGX_CONF_1MORE,
      ngx_http_mcp_stdio,
      NGX_HTTP_LOC_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("mcp_stdio_env"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_TAKE1,
      ngx_http_mcp_stdio_env,
      NGX_HTTP_LOC_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("mcp_stdio_dir"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_str_slot,
      NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(ngx_http_mcp_stdio_loc_conf_t, dir),
      NULL },

    { ngx_string("mcp_stdio_limit"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_1MORE,
      ngx_http_mcp_stdio_limit,
      NGX_HTTP_LOC_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("mcp_stdio_pool"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_1MORE,
      ngx_http_mcp_stdio_pool,
      NGX_HTTP_LOC_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("mcp_stdio_timeout"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_msec_slot,
      NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(ngx_http_mcp_stdio_loc_conf_t, timeout),
      NULL },

    { ngx_string("mcp_stdio_max_message"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_size_slot,
      NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(ngx_http_mcp_stdio_loc_conf_t, max_line),
      NULL },

    { ngx_string("mcp_stdio_stderr"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_TAKE1,
      ngx_http_mcp_stdio_stderr,
      NGX_HTTP_LOC_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("mcp_stdio_sessions"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_FLAG,
      ngx_conf_set_flag_slot,
      NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(ngx_http_mcp_stdio_loc_conf_t, sessions),
      NULL },

    { ngx_string("mcp_stdio_poll"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_msec_slot,
      NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(ngx_http_mcp_stdio_loc_conf_t, poll),
      NULL },

      ngx_null_command
};


static ngx_http_module_t  ngx_http_mcp_stdio_module_ctx = {
    NULL,                                  /* preconfiguration */
    ngx_http_mcp_stdio_postconf,           /* postconfiguration */

    ngx_http_mcp_stdio_create_main_conf,   /* create main configuration */
    NULL,                                  /* init main configuration */

    NULL,                                  /* create server configuration */
    NULL,                                  /* merge server configuration */

    ngx_http_mcp_stdio_create_loc_conf,    /* create location configuration */
    ngx_http_mcp_stdio_merge_loc_conf      /* merge location configuration */
};


ngx_module_t  ngx_http_mcp_stdio_module = {
    NGX_MODULE_V1,
    &ngx_http_mcp_stdio_module_ctx,        /* module context */
    ngx_http_mcp_stdio_commands,           /* module directives */
    NGX_HTTP_MODULE,                       /* module type */
    NULL,                                  /* init master */
    NULL,                                  /* init module */
    ngx_http_mcp_stdio_init_process,       /* init process */
    NULL,                                  /* init thread */
    NULL,                                  /* exit thread */
    ngx_http_mcp_stdio_exit_process,       /* exit process */
    NULL,                                  /* exit master */
    NGX_MODULE_V1_PADDING
};


/* the requests */

static ngx_int_t
ngx_http_mcp_stdio_handler(ngx_http_request_t *r)
{
    ngx_int_t                       rc;
    ngx_http_mcp_stdio_loc_conf_t  *slcf;

    slcf = ngx_http_get_module_loc_conf(r, ngx_http_mcp_stdio_module);

    if (slcf->pool->store != NULL
        && (r->method & (NGX_HTTP_GET|NGX_HTTP_DELETE)))
    {
        return ngx_http_mcp_stdio_session_other(r, slcf->pool);
    }

    if (r->method != NGX_HTTP_POST) {
        /* no session, so no GET stream and nothing to DELETE */
        if (ngx_http_discard_request_body(r) != NGX_OK) {
            return NGX_HTTP_INTERNAL_SERVER_ERROR;
        }

        return ngx_http_mcp_send_error(r, NGX_HTTP_NOT_ALLOWED, NULL,
                                       NGX_HTTP_MCP_INVALID_REQUEST,
                                       "Method not allowed: POST only");
    }

    rc = ngx_http_read_client_request_body(r, ngx_http_mcp_stdio_body);

    if (rc >= NGX_HTTP_SPECIAL_RESPONSE) {
        return rc;
    }

    return NGX_DONE;
}


static void
ngx_http_mcp_stdio_body(ngx_http_request_t *r)
{
    u_char                         *p, *body;
    size_t                          len;
    cJSON                          *root, *method, *id, *params, *meta;
    ngx_int_t                       rc;
    ngx_str_t                       text;
    ngx_chain_t                    *cl;
    const char                     *error;
    ngx_table_elt_t                *h, *session;
    ngx_pool_cleanup_t             *cln;
    ngx_http_mcp_stdio_req_t       *req;
    ngx_http_mcp_stdio_loc_conf_t  *slcf;

    slcf = ngx_http_get_module_loc_conf(r, ngx_http_mcp_stdio_module);

    if (r->request_body == NULL || r->request_body->temp_file) {
        rc = ngx_http_mcp_send_error(r, NGX_HTTP_REQUEST_ENTITY_TOO_LARGE,
                                     NULL, NGX_HTTP_MCP_INVALID_REQUEST,
                                     "Request body larger than "
                                     "client_body_buffer_size");
        ngx_http_finalize_request(r, rc);
        return;
    }

    len = 0;

    for (cl = r->request_body->bufs; cl; cl = cl->next) {
        len += ngx_buf_size(cl->buf);
    }

    body = ngx_pnalloc(r->pool, len + 1);
    if (body == NULL) {
        ngx_http_finalize_request(r, NGX_HTTP_INTERNAL_SERVER_ERROR);
        return;
    }

    p = body;

    for (cl = r->request_body->bufs; cl; cl = cl->next) {
        p = ngx_cpymem(p, cl->buf->pos, cl->buf->last - cl->buf->pos);
    }

    /* the edge's refusals and the gateway's checks, as for mcp_pass */
    text.data = body;
    text.len = len;

    if (ngx_http_mcp_stdio_steps.request(r, &text, &rc) != NGX_OK) {
        ngx_http_finalize_request(r, rc);
        return;
    }

    body = text.data;
    len = text.len;

    req = ngx_pcalloc(r->pool, sizeof(ngx_http_mcp_stdio_req_t));
    cln = ngx_pool_cleanup_add(r->pool, 0);

    if (req == NULL || cln == NULL) {
        ngx_http_finalize_request(r, NGX_HTTP_INTERNAL_SERVER_ERROR);
        return;
    }

    req->r = r;
    req->pool = slcf->pool;
    cln->handler = ngx_http_mcp_stdio_cleanup;
    cln->data = req;

    root = NULL;
    error = NULL;

    rc = ngx_http_mcp_json_parse(r->pool, body, len, NULL, &root, &error);
    req->root = root;

    if (rc != NGX_OK) {
        rc = ngx_http_mcp_send_error(r, NGX_HTTP_BAD_REQUEST, NULL,
                                     NGX_HTTP_MCP_PARSE_ERROR,
                                     "Parse error");
        ngx_http_finalize_request(r, rc);
        return;
    }

    method = ngx_http_mcp_json_get(root, "method");
    id = ngx_http_mcp_json_get(root, "id");

    if (!cJSON_IsObject(root)
        || (method != NULL && !cJSON_IsString(method))
        || (id != NULL && !cJSON_IsString(id) && !cJSON_IsNumber(id)))
    {
        rc = ngx_http_mcp_send_error(r, NGX_HTTP_BAD_REQUEST,
                                     cJSON_IsObject(root) ? id : NULL,
                                     NGX_HTTP_MCP_INVALID_REQUEST,
                                     cJSON_IsArray(root)
                                     ? "Invalid Request: no batches"
                                     : "Invalid Request");
        ngx_http_finalize_request(r, rc);
        return;
    }

    if (method != NULL && id != NULL) {
        req->id = cJSON_DetachItemViaPointer(root, id);
        req->method = method->valuestring;
    }

    /*
     * A session's id where no session is given out names none (the
     * built-in endpoint's 404): and served as if sessionless, such a
     * request would go past the edge's 2026-07-28 checks, which a
     * session id turns off, and still be answered as a 2026-07-28 one.
     */
    session = ngx_http_mcp_header_in(r, "mcp-session-id",
                                     sizeof("mcp-session-id") - 1);

    if (session != NULL && req->pool->store == NULL) {
        ngx_http_finalize_request(r,
            ngx_http_mcp_send_error(r, NGX_HTTP_NOT_FOUND, req->id,
                                    NGX_HTTP_MCP_SESSION_NOT_FOUND,
                                    "Session not found"));
        return;
    }

    h = ngx_http_mcp_header_in(r, "mcp-protocol-version",
                               sizeof("mcp-protocol-version") - 1);

    /* as the edge decides it: the version, and no session */
    req->stateless = (session == NULL && h != NULL && h->value.len == 10
                      && ngx_strncmp(h->value.data, "2026-07-28", 10) == 0);

    /* a progressToken's notifications go on the POST's own stream */
    h = ngx_http_mcp_header_in(r, "accept", sizeof("accept") - 1);

    req->accepts_sse = (h != NULL
                        && ngx_strlcasestrn(h->value.data,
                                            h->value.data + h->value.len,
                                            (u_char *) "text/event-stream",
                                            sizeof("text/event-stream") - 2)
                           != NULL);

    params = ngx_http_mcp_json_get(root, "params");
    meta = cJSON_IsObject(params) ? ngx_http_mcp_json_get(params, "_meta")
                                  : NULL;
    req->token = cJSON_IsObject(meta)
                 ? ngx_http_mcp_json_get(meta, "progressToken") : NULL;

    /* a session's message, or a 2025 initialize that starts one */
    if (req->pool->store != NULL
        && ngx_http_mcp_stdio_session_post(req, method) != NGX_DECLINED)
    {
        return;
    }

    if (req->id == NULL) {
        /*
         * A notification or a response: no child has a request of this
         * client outstanding (each request is its own exchange), so it
         * is taken and dropped, as a stateless server does.
         */
        ngx_http_finalize_request(r, ngx_http_mcp_send(r, NGX_HTTP_ACCEPTED,
                                                       NULL, NULL, 0));
        return;
    }

    if (ngx_strcmp(req->method, "ping") == 0) {
        ngx_http_mcp_stdio_local(NULL, req);
        return;
    }

    /* a client's end while it waits is seen, and cleans up */
    r->read_event_handler = ngx_http_test_reading;

    req->timer.handler = ngx_http_mcp_stdio_wait_timeout;
    req->timer.data = req;
    req->timer.log = r->connection->log;
    ngx_add_timer(&req->timer, req->pool->timeout);

    ngx_queue_insert_tail(&req->pool->waiting, &req->queue);
    req->waiting = 1;

    ngx_http_mcp_stdio_route(req->pool);
}


static void
ngx_http_mcp_stdio_cleanup(void *data)
{
    ngx_http_mcp_stdio_req_t  *req = data;

    cJSON                       *note;
    ngx_http_mcp_stdio_child_t  *child;

    if (req->inflight) {
        /* a session's request: its child is told, as a pool child is */
        ngx_http_mcp_stdio_session_cancel(req);
    }

    if (req->remote) {
        /* of a session's log: parked for a resume, or its owner told */
        ngx_http_mcp_stdio_remote_left(req);
    }

    child = req->child;
    ngx_http_mcp_stdio_detach(req);

    if (child != NULL && child->io != NULL) {
        /* the client went away: the child is told, and free when it ends */
        note = cJSON_Parse("{\"jsonrpc\":\"2.0\","
                           "\"method\":\"notifications/cancelled\","
                           "\"params\":{\"reason\":\"client gone\"}}");

        if (note != NULL) {
            if (cJSON_AddNumberToObject(ngx_http_mcp_json_get(note, "params"),
                                        "requestId",
                                        (double) child->want_id)
                != NULL)
            {
                (void) ngx_http_mcp_stdio_send_line(child, note);
            }

            cJSON_Delete(note);
        }

        /*
         * A cancelled request is not answered (the spec's SHOULD NOT):
         * the child takes the next one now, and a late answer to this
         * one, under an id no longer outstanding, is dropped.
         */
        if (child->pool != NULL && child->state == NGX_HTTP_MCP_STDIO_BUSY) {
            ngx_http_mcp_stdio_ready(child);
            ngx_http_mcp_stdio_route(child->pool);
        }
    }

    if (req->id) {
        cJSON_Delete(req->id);
        req->id = NULL;
    }

    if (req->root) {
        cJSON_Delete(req->root);
        req->root = NULL;
    }
}


/* what the process layer tells: a line of the child's stdout */

static void
ngx_http_mcp_stdio_line(ngx_http_mcp_stdio_child_t *child, u_char *line,
    size_t len)
{
    cJSON  *msg;

    msg = cJSON_ParseWithLength((const char *) line, len);

    if (!cJSON_IsObject(msg)) {
        /* said once a child: a chatty server must not fill the log */
        if (!child->noise) {
            child->noise = 1;
            ngx_log_error(NGX_LOG_INFO, ngx_cycle->log, 0,
                          "mcp_stdio: pid %P wrote a line that is not "
                          "a JSON-RPC message, ignored (and any more)",
                          child->pid);
        }

        cJSON_Delete(msg);
        return;
    }

    if (child->session != NULL) {
        ngx_http_mcp_stdio_session_line(child, msg);
        return;
    }

    ngx_http_mcp_stdio_pool_line(child, msg);
}


/* what the process layer tells: the child is gone, or must go */

static void
ngx_http_mcp_stdio_gone(ngx_http_mcp_stdio_child_t *child, const char *why)
{
    if (child->pool == NULL) {
        return;
    }

    if (child->session != NULL) {
        ngx_http_mcp_stdio_session_gone(child, why);
        return;
    }

    ngx_http_mcp_stdio_pool_gone(child, why);
}


/* the configuration */

static void *
ngx_http_mcp_stdio_create_main_conf(ngx_conf_t *cf)
{
    ngx_http_mcp_stdio_main_conf_t  *smcf;

    smcf = ngx_pcalloc(cf->pool, sizeof(ngx_http_mcp_stdio_main_conf_t));
    if (smcf == NULL) {
        return NULL;
    }

    smcf->pools = ngx_array_create(cf->pool, 2,
                                   sizeof(ngx_http_mcp_stdio_pool_t *));
    if (smcf->pools == NULL) {
        return NULL;
    }

    return smcf;
}


static void *
ngx_http_mcp_stdio_create_loc_conf(ngx_conf_t *cf)
{
    ngx_http_mcp_stdio_loc_conf_t  *conf;

    conf = ngx_pcalloc(cf->pool, sizeof(ngx_http_mcp_stdio_loc_conf_t));
    if (conf == NULL) {
        return NULL;
    }

    /*
     * set by ngx_pcalloc():
     *
     *     conf->args = NULL;
     *     conf->dir = { 0, NULL };
     *     conf->pool = NULL;
     */

    conf->env = NGX_CONF_UNSET_PTR;
    conf->limits = NGX_CONF_UNSET_PTR;
    conf->size = NGX_CONF_UNSET_UINT;
    conf->total = NGX_CONF_UNSET_UINT;
    conf->timeout = NGX_CONF_UNSET_MSEC;
    conf->max_line = NGX_CONF_UNSET_SIZE;
    conf->err_level = NGX_CONF_UNSET_UINT;
    conf->sessions = NGX_CONF_UNSET;
    conf->poll = NGX_CONF_UNSET_MSEC;

    return conf;
}


static char *
ngx_http_mcp_stdio_merge_loc_conf(ngx_conf_t *cf, void *parent, void *child)
{
    ngx_http_mcp_stdio_loc_conf_t  *prev = parent;
    ngx_http_mcp_stdio_loc_conf_t  *conf = child;

    ngx_http_mcp_stdio_exec_t       *exec;
    ngx_http_mcp_stdio_pool_t      **pp;
    ngx_http_mcp_stdio_main_conf_t  *smcf;

    ngx_conf_merge_ptr_value(conf->env, prev->env, NULL);
    ngx_conf_merge_str_value(conf->dir, prev->dir, "/");
    ngx_conf_merge_ptr_value(conf->limits, prev->limits, NULL);
    ngx_conf_merge_uint_value(conf->size, prev->size, 4);
    ngx_conf_merge_uint_value(conf->total, prev->total, 0);
    ngx_conf_merge_msec_value(conf->timeout, prev->timeout, 60000);
    ngx_conf_merge_size_value(conf->max_line, prev->max_line,
                              4 * 1024 * 1024);
    ngx_conf_merge_uint_value(conf->err_level, prev->err_level,
                              NGX_LOG_INFO);
    ngx_conf_merge_value(conf->sessions, prev->sessions, 0);
    ngx_conf_merge_msec_value(conf->poll, prev->poll, 0);

    if (conf->max_line < 4096) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "mcp_stdio_max_message must be 4k or more");
        return NGX_CONF_ERROR;
    }

    if (conf->args == NULL || conf->pool != NULL) {
        return NGX_CONF_OK;
    }

    /* a location with mcp_stdio: its pool, made once */
    exec = ngx_pcalloc(cf->pool, sizeof(ngx_http_mcp_stdio_exec_t));
    conf->pool = ngx_pcalloc(cf->pool, sizeof(ngx_http_mcp_stdio_pool_t));

    if (exec == NULL || conf->pool == NULL
        || ngx_http_mcp_stdio_exec(cf, conf, exec) != NGX_OK)
    {
        return NGX_CONF_ERROR;
    }

    conf->pool->exec = exec;
    conf->pool->size = conf->size;
    conf->pool->total = conf->total;
    conf->pool->timeout = conf->timeout;
    conf->pool->poll = conf->poll;
    conf->pool->line = ngx_http_mcp_stdio_line;

    /* its session zone is known once every module has merged: postconf */
    if (conf->sessions) {
        conf->pool->mlcf = ngx_http_conf_get_module_loc_conf(cf,
                                                       ngx_http_mcp_module);
    }

    conf->pool->gone = ngx_http_mcp_stdio_gone;

    smcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_mcp_stdio_module);

    conf->pool->index = smcf->pools->nelts;

    pp = ngx_array_push(smcf->pools);
    if (pp == NULL) {
        return NGX_CONF_ERROR;
    }

    *pp = conf->pool;

    return NGX_CONF_OK;
}


/* argv and envp as execve() takes them, made before any fork */

static ngx_int_t
ngx_http_mcp_stdio_exec(ngx_conf_t *cf, ngx_http_mcp_stdio_loc_conf_t *conf,
    ngx_http_mcp_stdio_exec_t *exec)
{
    u_char      *p;
    char        *value;
    size_t       len;
    ngx_str_t   *s;
    ngx_uint_t   i, n;

    s = conf->args->elts;
    exec->argv = ngx_pcalloc(cf->pool,
                             (conf->args->nelts + 1) * sizeof(char *));
    if (exec->argv == NULL) {
        return NGX_ERROR;
    }

    for (i = 0; i < conf->args->nelts; i++) {
        exec->argv[i] = (char *) s[i].data;   /* NUL-terminated by the parser */
    }

    n = conf->env ? conf->env->nelts : 0;

    exec->envp = ngx_pcalloc(cf->pool, (n + 1) * sizeof(char *));
    if (exec->envp == NULL) {
        return NGX_ERROR;
    }

    s = conf->env ? conf->env->elts : NULL;

    for (i = 0; i < n; i++) {
        if (ngx_strlchr(s[i].data, s[i].data + s[i].len, '=') != NULL) {
            exec->envp[i] = (char *) s[i].data;
            continue;
        }

        /* NAME alone: nginx's own value, read as the configuration loads */
        value = getenv((char *) s[i].data);

        if (value == NULL) {
            value = "";
        }

        len = s[i].len + 1 + ngx_strlen(value) + 1;
        p = ngx_pnalloc(cf->pool, len);
        if (p == NULL) {
            return NGX_ERROR;
        }

        ngx_sprintf(p, "%V=%s%Z", &s[i], value);
        exec->envp[i] = (char *) p;
    }

    exec->dir = (char *) conf->dir.data;
    exec->limits = conf->limits;
    exec->err_level = conf->err_level;
    exec->max_line = conf->max_line;

    return NGX_OK;
}


static char *
ngx_http_mcp_stdio(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_mcp_stdio_loc_conf_t  *slcf = conf;

    ngx_str_t                 *value, *arg;
    ngx_uint_t                 i;
    ngx_file_info_t            fi;
    ngx_http_mcp_loc_conf_t   *mlcf;
    ngx_http_core_loc_conf_t  *clcf;

    if (slcf->args != NULL) {
        return "is duplicate";
    }

    value = cf->args->elts;

    if (value[1].data[0] != '/') {
        /* no PATH search: what runs is what the configuration names */
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "mcp_stdio: \"%V\" is not an absolute path",
                           &value[1]);
        return NGX_CONF_ERROR;
    }

    if (ngx_file_info(value[1].data, &fi) == NGX_FILE_ERROR
        || !ngx_is_file(&fi) || access((char *) value[1].data, X_OK) != 0)
    {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, ngx_errno,
                           "mcp_stdio: \"%V\" is not an executable file",
                           &value[1]);
        return NGX_CONF_ERROR;
    }

    slcf->args = ngx_array_create(cf->pool, cf->args->nelts - 1,
                                  sizeof(ngx_str_t));
    if (slcf->args == NULL) {
        return NGX_CONF_ERROR;
    }

    for (i = 1; i < cf->args->nelts; i++) {
        arg = ngx_array_push(slcf->args);
        if (arg == NULL) {
            return NGX_CONF_ERROR;
        }

        *arg = value[i];
    }

    clcf = ngx_http_conf_get_module_loc_conf(cf, ngx_http_core_module);
    clcf->handler = ngx_http_mcp_stdio_handler;

    /* the edge parses its POSTs, as a gateway's: variables, checks */
    mlcf = ngx_http_conf_get_module_loc_conf(cf, ngx_http_mcp_module);
    mlcf->enable = 1;
    mlcf->stdio = 1;

    return NGX_CONF_OK;
}


static char *
ngx_http_mcp_stdio_env(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_mcp_stdio_loc_conf_t  *slcf = conf;

    ngx_str_t  *value, *env;

    value = cf->args->elts;

    if (value[1].len == 0 || value[1].data[0] == '=') {
        return "takes NAME or NAME=VALUE";
    }

    if (slcf->env == NGX_CONF_UNSET_PTR) {
        slcf->env = ngx_array_create(cf->pool, 4, sizeof(ngx_str_t));
        if (slcf->env == NULL) {
            return NGX_CONF_ERROR;
        }
    }

    env = ngx_array_push(slcf->env);
    if (env == NULL) {
        return NGX_CONF_ERROR;
    }

    *env = value[1];

    return NGX_CONF_OK;
}


static char *
ngx_http_mcp_stdio_limit(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_mcp_stdio_loc_conf_t  *slcf = conf;

    u_char                       *eq;
    ssize_t                       size;
    ngx_int_t                     n;
    ngx_str_t                    *value, name, arg;
    ngx_uint_t                    i;
    ngx_http_mcp_stdio_limit_t   *lim;
    ngx_http_mcp_stdio_rlimit_t  *rl;

    if (slcf->limits != NGX_CONF_UNSET_PTR) {
        return "is duplicate";
    }

    slcf->limits = ngx_array_create(cf->pool, cf->args->nelts,
                                    sizeof(ngx_http_mcp_stdio_limit_t));
    if (slcf->limits == NULL) {
        return NGX_CONF_ERROR;
    }

    value = cf->args->elts;

    for (i = 1; i < cf->args->nelts; i++) {
        eq = ngx_strlchr(value[i].data, value[i].data + value[i].len, '=');
        if (eq == NULL) {
            goto invalid;
        }

        name.data = value[i].data;
        name.len = eq - value[i].data;
        arg.data = eq + 1;
        arg.len = value[i].data + value[i].len - arg.data;

        for (rl = ngx_http_mcp_stdio_rlimits; rl->name.len; rl++) {
            if (name.len == rl->name.len
                && ngx_strncmp(name.data, rl->name.data, name.len) == 0)
            {
                break;
            }
        }

        if (rl->name.len == 0) {
            goto invalid;
        }

        lim = ngx_array_push(slcf->limits);
        if (lim == NULL) {
            return NGX_CONF_ERROR;
        }

        lim->resource = rl->resource;

        if (rl->size) {
            size = ngx_parse_size(&arg);
            if (size == NGX_ERROR) {
                goto invalid;
            }

            lim->value = (rlim_t) size;

        } else {
            n = ngx_atoi(arg.data, arg.len);
            if (n == NGX_ERROR) {
                goto invalid;
            }

            lim->value = (rlim_t) n;
        }
    }

    return NGX_CONF_OK;

invalid:

    ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                       "mcp_stdio_limit: invalid \"%V\" (nofile=, nproc=, "
                       "cpu=, as=, data=, fsize=, core=)", &value[i]);
    return NGX_CONF_ERROR;
}


static char *
ngx_http_mcp_stdio_pool(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_mcp_stdio_loc_conf_t  *slcf = conf;

    ngx_int_t    n;
    ngx_str_t   *value;
    ngx_uint_t   i;

    if (slcf->size != NGX_CONF_UNSET_UINT) {
        return "is duplicate";
    }

    value = cf->args->elts;

    for (i = 1; i < cf->args->nelts; i++) {
        if (ngx_strncmp(value[i].data, "size=", 5) == 0) {
            n = ngx_atoi(value[i].data + 5, value[i].len - 5);
            if (n <= 0 || n > 1024) {
                goto invalid;
            }

            slcf->size = n;
            continue;
        }

        if (ngx_strncmp(value[i].data, "total=", 6) == 0) {
            n = ngx_atoi(value[i].data + 6, value[i].len - 6);
            if (n <= 0) {
                goto invalid;
            }

            slcf->total = n;
            continue;
        }

        goto invalid;
    }

    if (slcf->size == NGX_CONF_UNSET_UINT) {
        return "needs size=N";
    }

    return NGX_CONF_OK;

invalid:

    ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                       "mcp_stdio_pool: invalid \"%V\" (size=1..1024, "
                       "total=N)", &value[i]);
    return NGX_CONF_ERROR;
}


static char *
ngx_http_mcp_stdio_stderr(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_mcp_stdio_loc_conf_t  *slcf = conf;

    ngx_str_t   *value;
    ngx_uint_t   n;

    static const char  *levels[] = {
        "", "emerg", "alert", "crit", "error", "warn", "notice", "info",
        "debug", NULL
    };

    if (slcf->err_level != NGX_CONF_UNSET_UINT) {
        return "is duplicate";
    }

    value = cf->args->elts;

    for (n = 1; levels[n]; n++) {
        if (ngx_strcmp(value[1].data, levels[n]) == 0) {
            slcf->err_level = n;
            return NGX_CONF_OK;
        }
    }

    return "takes a log level (emerg ... debug)";
}


/* the total bound's counters: a row per pool, a cell per worker slot */

static ngx_int_t
ngx_http_mcp_stdio_postconf(ngx_conf_t *cf)
{
    ngx_str_t                        name = ngx_string("mcp_stdio");
    ngx_uint_t                       i;
    ngx_http_mcp_loc_conf_t         *mlcf;
    ngx_http_mcp_main_conf_t        *mmcf;
    ngx_http_mcp_stdio_pool_t      **pp;
    ngx_http_mcp_stdio_main_conf_t  *smcf;

    smcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_mcp_stdio_module);
    pp = smcf->pools->elts;

    for (i = 0; i < smcf->pools->nelts; i++) {
        if (pp[i]->mlcf != NULL) {
            /* mcp_session's zone, else the one such locations share */
            mlcf = pp[i]->mlcf;
            pp[i]->store = mlcf->zone;
            pp[i]->retry = mlcf->retry;

            if (pp[i]->store == NULL) {
                mmcf = ngx_http_conf_get_module_main_conf(cf,
                                                          ngx_http_mcp_module);
                pp[i]->store = ngx_http_mcp_session_default_zone(cf,
                                                                &mmcf->store);
                if (pp[i]->store == NULL) {
                    return NGX_ERROR;
                }
            }
        }

        if (pp[i]->total == 0) {
            continue;
        }

        if (smcf->zone == NULL) {
            smcf->zone = ngx_shared_memory_add(cf, &name,
                             8 * ngx_pagesize
                             + smcf->pools->nelts * NGX_MAX_PROCESSES
                               * sizeof(ngx_atomic_t),
                             &ngx_http_mcp_stdio_module);
            if (smcf->zone == NULL) {
                return NGX_ERROR;
            }

            smcf->zone->init = ngx_http_mcp_stdio_init_zone;
            smcf->zone->data = smcf;
        }

        pp[i]->zone = smcf->zone;
    }

    return NGX_OK;
}


static ngx_int_t
ngx_http_mcp_stdio_init_zone(ngx_shm_zone_t *shm_zone, void *data)
{
    ngx_slab_pool_t                 *shpool;
    ngx_http_mcp_stdio_main_conf_t  *smcf;

    if (data) {
        /* the same size: the same rows; old workers' cells count on */
        shm_zone->data = data;
        return NGX_OK;
    }

    smcf = shm_zone->data;
    shpool = (ngx_slab_pool_t *) shm_zone->shm.addr;

    shm_zone->data = ngx_slab_calloc(shpool, smcf->pools->nelts
                                             * NGX_MAX_PROCESSES
                                             * sizeof(ngx_atomic_t));
    if (shm_zone->data == NULL) {
        return NGX_ERROR;
    }

    return NGX_OK;
}


static ngx_int_t
ngx_http_mcp_stdio_init_process(ngx_cycle_t *cycle)
{
    ngx_uint_t                       i;
    ngx_atomic_t                    *row;
    ngx_http_mcp_stdio_pool_t      **pp, *pool;
    ngx_http_mcp_stdio_main_conf_t  *smcf;

    smcf = ngx_http_cycle_get_module_main_conf(cycle,
                                               ngx_http_mcp_stdio_module);

    if (smcf == NULL || smcf->pools->nelts == 0
        || (ngx_process != NGX_PROCESS_WORKER
            && ngx_process != NGX_PROCESS_SINGLE))
    {
        return NGX_OK;
    }

    ngx_http_mcp_stdio_proc_init();

    pp = smcf->pools->elts;

    for (i = 0; i < smcf->pools->nelts; i++) {
        pool = pp[i];

        ngx_queue_init(&pool->children);
        ngx_queue_init(&pool->waiting);
        ngx_queue_init(&pool->sessions);
        ngx_queue_init(&pool->remote);
        pool->live = 0;
        pool->spawn_ev.handler = ngx_http_mcp_stdio_spawn_timer;
        pool->spawn_ev.data = pool;
        pool->spawn_ev.log = cycle->log;
        pool->spawn_ev.cancelable = 1;
        pool->ready = 1;

        if (pool->zone && ngx_process_slot >= 0
            && ngx_process_slot < NGX_MAX_PROCESSES)
        {
            /* a worker that died in this slot left its count behind */
            row = (ngx_atomic_t *) pool->zone->data
                  + pool->index * NGX_MAX_PROCESSES;
            row[ngx_process_slot] = 0;
        }
    }

    return NGX_OK;
}


/*
 * The worker was woken (the hook table's stdio_wake, after the edge's
 * streams and the core's calls): each location's sessions take what
 * other workers queued for the children this one owns, and the
 * requests and GETs this one holds of sessions another owns write what
 * their owners sent.
 */

void
ngx_http_mcp_stdio_wake(void)
{
    ngx_uint_t                       i;
    ngx_http_mcp_stdio_pool_t      **pp;
    ngx_http_mcp_stdio_main_conf_t  *smcf;

    smcf = ngx_http_cycle_get_module_main_conf((ngx_cycle_t *) ngx_cycle,
                                               ngx_http_mcp_stdio_module);

    if (smcf == NULL) {
        return;
    }

    pp = smcf->pools->elts;

    for (i = 0; i < smcf->pools->nelts; i++) {
        if (pp[i]->ready && pp[i]->store != NULL) {
            ngx_http_mcp_stdio_session_wake(pp[i]);
        }
    }
}


static void
ngx_http_mcp_stdio_exit_process(ngx_cycle_t *cycle)
{
    ngx_uint_t                       i;
    ngx_queue_t                     *q;
    ngx_http_mcp_stdio_pool_t      **pp, *pool;
    ngx_http_mcp_stdio_child_t      *child;
    ngx_http_mcp_stdio_main_conf_t  *smcf;

    smcf = ngx_http_cycle_get_module_main_conf(cycle,
                                               ngx_http_mcp_stdio_module);

    if (smcf == NULL) {
        return;
    }

    pp = smcf->pools->elts;

    for (i = 0; i < smcf->pools->nelts; i++) {
        pool = pp[i];

        if (!pool->ready) {
            continue;
        }

        if (pool->spawn_ev.timer_set) {
            ngx_del_timer(&pool->spawn_ev);
        }

        /* a child cannot move to another process: its sessions end */
        ngx_http_mcp_stdio_session_exit(pool);

        while (!ngx_queue_empty(&pool->children)) {
            q = ngx_queue_head(&pool->children);
            child = ngx_queue_data(q, ngx_http_mcp_stdio_child_t, queue);

            ngx_http_mcp_stdio_stop(child);
        }
    }

    ngx_http_mcp_stdio_stop_all(cycle);
}
