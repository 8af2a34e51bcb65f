
/*
 * ngx_http_mcp_proxy_module: mcp_pass and its directives, and their
 * location configuration (ngx_http_mcp_proxy_loc_conf_t); the gateway's
 * work is in the other files of src/proxy.  A location with mcp_pass is
 * an MCP endpoint of ngx_http_mcp_module too: the directive turns it on
 * there and marks it a gateway (its loc conf's pass), which is all the
 * parts below and beside this one ask of it.
 */


#include "ngx_http_mcp_proxy.h"
#include "ngx_http_mcp_core.h"


static void *ngx_http_mcp_proxy_create_loc_conf(ngx_conf_t *cf);
static char *ngx_http_mcp_proxy_merge_loc_conf(ngx_conf_t *cf, void *parent,
    void *child);
static ngx_int_t ngx_http_mcp_proxy_ssl(ngx_conf_t *cf,
    ngx_http_mcp_proxy_loc_conf_t *conf);
static ngx_int_t ngx_http_mcp_proxy_add_variables(ngx_conf_t *cf);
static char *ngx_http_mcp_pass(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
static char *ngx_http_mcp_pass_ssl_password_file(ngx_conf_t *cf,
    ngx_command_t *cmd, void *conf);


static ngx_conf_enum_t  ngx_http_mcp_proxy_pin_modes[] = {
    { ngx_string("off"), NGX_HTTP_MCP_PIN_OFF },
    { ngx_string("report"), NGX_HTTP_MCP_PIN_REPORT },
    { ngx_string("enforce"), NGX_HTTP_MCP_PIN_ENFORCE },
    { ngx_null_string, 0 }
};


/* mcp_token_exchange_client_auth */
static ngx_conf_enum_t  ngx_http_mcp_exchange_client_auth[] = {
    { ngx_string("client_secret_basic"), 0 },
    { ngx_string("client_secret_post"), 1 },
    { ngx_string("private_key_jwt"), 2 },
    { ngx_null_string, 0 }
};


static ngx_command_t  ngx_http_mcp_proxy_commands[] = {

    { ngx_string("mcp_pass"),
      NGX_HTTP_LOC_CONF|NGX_CONF_TAKE1,
      ngx_http_mcp_pass,
      NGX_HTTP_LOC_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("mcp_pass_connect_timeout"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_msec_slot,
      NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(ngx_http_mcp_proxy_loc_conf_t, upstream.connect_timeout),
      NULL },

    { ngx_string("mcp_pass_send_timeout"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_msec_slot,
      NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(ngx_http_mcp_proxy_loc_conf_t, upstream.send_timeout),
      NULL },

    { ngx_string("mcp_pass_read_timeout"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_msec_slot,
      NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(ngx_http_mcp_proxy_loc_conf_t, upstream.read_timeout),
      NULL },

    { ngx_string("mcp_pass_filter_buffer_size"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_size_slot,
      NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(ngx_http_mcp_proxy_loc_conf_t, filter_buffer_size),
      NULL },

    { ngx_string("mcp_pass_pin"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_enum_slot,
      NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(ngx_http_mcp_proxy_loc_conf_t, pin),
      &ngx_http_mcp_proxy_pin_modes },

    { ngx_string("mcp_pass_pin_file"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_TAKE1,
      ngx_http_mcp_pass_pin_file,
      NGX_HTTP_LOC_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("mcp_pass_tool"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_1MORE,
      ngx_http_mcp_pass_tool,
      NGX_HTTP_LOC_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("mcp_pass_guardrail"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_2MORE,
      ngx_http_mcp_guard_directive,         /* mcp_guardrail's other name */
      NGX_HTTP_LOC_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("mcp_pass_check_arguments"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_FLAG,
      ngx_conf_set_flag_slot,
      NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(ngx_http_mcp_proxy_loc_conf_t, check_arguments),
      NULL },

    { ngx_string("mcp_pass_check_results"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_FLAG,
      ngx_conf_set_flag_slot,
      NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(ngx_http_mcp_proxy_loc_conf_t, check_results),
      NULL },

    { ngx_string("mcp_pass_ssl_verify"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_FLAG,
      ngx_conf_set_flag_slot,
      NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(ngx_http_mcp_proxy_loc_conf_t, ssl_verify),
      NULL },

    { ngx_string("mcp_pass_ssl_trusted_certificate"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_str_slot,
      NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(ngx_http_mcp_proxy_loc_conf_t, ssl_trusted_certificate),
      NULL },

    { ngx_string("mcp_pass_ssl_certificate"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_str_slot,
      NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(ngx_http_mcp_proxy_loc_conf_t, ssl_certificate),
      NULL },

    { ngx_string("mcp_pass_ssl_certificate_key"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_str_slot,
      NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(ngx_http_mcp_proxy_loc_conf_t, ssl_certificate_key),
      NULL },

    { ngx_string("mcp_pass_ssl_password_file"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_TAKE1,
      ngx_http_mcp_pass_ssl_password_file,
      NGX_HTTP_LOC_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("mcp_pass_retry"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_FLAG,
      ngx_conf_set_flag_slot,
      NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(ngx_http_mcp_proxy_loc_conf_t, retry),
      NULL },

    { ngx_string("mcp_pass_authorization"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_FLAG,
      ngx_conf_set_flag_slot,
      NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(ngx_http_mcp_proxy_loc_conf_t, pass_authorization),
      NULL },

    { ngx_string("mcp_pass_set_header"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_TAKE2,
      ngx_http_mcp_pass_set_header,
      NGX_HTTP_LOC_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("mcp_token_exchange"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_1MORE,
      ngx_http_mcp_token_exchange,
      NGX_HTTP_LOC_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("mcp_token_exchange_client_id"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_str_slot,
      NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(ngx_http_mcp_proxy_loc_conf_t, exchange_client_id),
      NULL },

    { ngx_string("mcp_token_exchange_client_secret"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_TAKE1,
      ngx_http_mcp_token_exchange_secret,
      NGX_HTTP_LOC_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("mcp_token_exchange_client_auth"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_enum_slot,
      NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(ngx_http_mcp_proxy_loc_conf_t, exchange_auth),
      &ngx_http_mcp_exchange_client_auth },

    { ngx_string("mcp_token_exchange_client_key"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_1MORE,
      ngx_http_mcp_token_exchange_key,
      NGX_HTTP_LOC_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("mcp_secret"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE2,
      ngx_http_mcp_secret,
      NGX_HTTP_LOC_CONF_OFFSET,
      0,
      NULL },

      ngx_null_command
};


static ngx_http_module_t  ngx_http_mcp_proxy_module_ctx = {
    ngx_http_mcp_proxy_add_variables,      /* preconfiguration */
    ngx_http_mcp_exchange_init,            /* postconfiguration */

    NULL,                                  /* create main configuration */
    NULL,                                  /* init main configuration */

    NULL,                                  /* create server configuration */
    NULL,                                  /* merge server configuration */

    ngx_http_mcp_proxy_create_loc_conf,    /* create location configuration */
    ngx_http_mcp_proxy_merge_loc_conf      /* merge location configuration */
};


ngx_module_t  ngx_http_mcp_proxy_module = {
    NGX_MODULE_V1,
    &ngx_http_mcp_proxy_module_ctx,        /* module context */
    ngx_http_mcp_proxy_commands,           /* module directives */
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


/*
 * An MCP server is not an application tier: its X-Accel-* headers would
 * steer nginx (X-Accel-Redirect serves any internal location), so they
 * are neither acted on (ignore_headers, below) nor relayed.  Nor are its
 * cookies: the client's never reach it, and they would be set for the
 * gateway's site.  Nor its CORS and nosniff: the gateway says its own
 * (ngx_http_mcp_cors.c), and a header twice breaks CORS.
 */

static ngx_str_t  ngx_http_mcp_proxy_hide_headers[] = {
    ngx_string("Date"),
    ngx_string("Server"),
    ngx_string("Connection"),
    ngx_string("Keep-Alive"),
    ngx_string("Set-Cookie"),
    ngx_string("X-Accel-Expires"),
    ngx_string("X-Accel-Redirect"),
    ngx_string("X-Accel-Limit-Rate"),
    ngx_string("X-Accel-Buffering"),
    ngx_string("X-Accel-Charset"),
    ngx_string("X-Content-Type-Options"),
    ngx_string("Access-Control-Allow-Origin"),
    ngx_string("Access-Control-Allow-Credentials"),
    ngx_string("Access-Control-Expose-Headers"),
    ngx_null_string
};


/*
 * mcp_pass: the gateway's upstream.  The location is an MCP endpoint of
 * ngx_http_mcp_module's (mcp on, and its pass says a gateway) whose
 * requests come to the transport's content handler, which that module
 * left in its main conf: src/edge is above this part.
 */

static char *
ngx_http_mcp_pass(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_mcp_proxy_loc_conf_t *plcf = conf;

    u_char                    *p;
    size_t                     add;
    in_port_t                  port;
    ngx_url_t                  u;
    ngx_str_t                 *value, url;
    ngx_http_mcp_loc_conf_t   *mlcf;
    ngx_http_core_loc_conf_t  *clcf;
    ngx_http_mcp_main_conf_t  *mmcf;

    if (plcf->upstream.upstream) {
        return "is duplicate";
    }

    value = cf->args->elts;
    url = value[1];

    if (ngx_strncasecmp(url.data, (u_char *) "http://", 7) == 0) {
        add = 7;
        port = 80;

#if (NGX_HTTP_SSL)
    } else if (ngx_strncasecmp(url.data, (u_char *) "https://", 8) == 0) {
        add = 8;
        port = 443;
        plcf->ssl = 1;
#endif

    } else {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "invalid URL prefix in \"%V\": mcp_pass takes "
                           "http(s)://host[:port][/path] or an upstream name "
                           "as http(s)://name", &url);
        return NGX_CONF_ERROR;
    }

    ngx_memzero(&u, sizeof(ngx_url_t));

    u.url.len = url.len - add;
    u.url.data = url.data + add;
    u.default_port = port;
    u.uri_part = 1;
    u.no_resolve = 1;

    plcf->upstream.upstream = ngx_http_upstream_add(cf, &u, 0);
    if (plcf->upstream.upstream == NULL) {
        return NGX_CONF_ERROR;
    }

    if (ngx_http_mcp_balancer_note(cf, plcf->upstream.upstream) != NGX_OK) {
        return NGX_CONF_ERROR;
    }

    /* the Host the upstream gets: host[:port] as written */
    p = ngx_strlchr(u.url.data, u.url.data + u.url.len, '/');
    plcf->proxy_host.data = u.url.data;
    plcf->proxy_host.len = (p ? p : u.url.data + u.url.len) - u.url.data;

    plcf->proxy_uri = u.uri;

    /* the tools an upstream lists are its URL's, whichever location */
    plcf->tools_key = url;

    /* the name TLS checks the upstream's certificate against, and SNI */
    p = ngx_strlchr(plcf->proxy_host.data,
                    plcf->proxy_host.data + plcf->proxy_host.len, ':');
    plcf->ssl_host.data = plcf->proxy_host.data;
    plcf->ssl_host.len = (p ? p : plcf->proxy_host.data
                                  + plcf->proxy_host.len)
                         - plcf->proxy_host.data;

    mlcf = ngx_http_conf_get_module_loc_conf(cf, ngx_http_mcp_module);
    mmcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_mcp_module);

    mlcf->enable = 1;
    mlcf->pass = 1;

    clcf = ngx_http_conf_get_module_loc_conf(cf, ngx_http_core_module);
    clcf->handler = mmcf->handler;

    if (clcf->name.len && clcf->name.data[clcf->name.len - 1] == '/') {
        clcf->auto_redirect = 1;
    }

    return NGX_CONF_OK;
}


static ngx_int_t
ngx_http_mcp_proxy_add_variables(ngx_conf_t *cf)
{
    return ngx_http_mcp_exchange_add_variables(cf);
}


static void *
ngx_http_mcp_proxy_create_loc_conf(ngx_conf_t *cf)
{
    ngx_http_mcp_proxy_loc_conf_t  *conf;

    conf = ngx_pcalloc(cf->pool, sizeof(ngx_http_mcp_proxy_loc_conf_t));
    if (conf == NULL) {
        return NULL;
    }

    conf->upstream.local = NGX_CONF_UNSET_PTR;
    conf->upstream.socket_keepalive = NGX_CONF_UNSET;
    conf->upstream.next_upstream_tries = NGX_CONF_UNSET_UINT;
    conf->upstream.connect_timeout = NGX_CONF_UNSET_MSEC;
    conf->upstream.send_timeout = NGX_CONF_UNSET_MSEC;
    conf->upstream.read_timeout = NGX_CONF_UNSET_MSEC;
    conf->upstream.next_upstream_timeout = NGX_CONF_UNSET_MSEC;
    conf->upstream.buffer_size = NGX_CONF_UNSET_SIZE;
    conf->filter_buffer_size = NGX_CONF_UNSET_SIZE;
    conf->upstream.hide_headers = NGX_CONF_UNSET_PTR;
    conf->upstream.pass_headers = NGX_CONF_UNSET_PTR;
    conf->upstream.intercept_errors = NGX_CONF_UNSET;
    conf->pass_authorization = NGX_CONF_UNSET;
    conf->retry = NGX_CONF_UNSET;
    conf->check_arguments = NGX_CONF_UNSET;
    conf->check_results = NGX_CONF_UNSET;
    conf->pin = NGX_CONF_UNSET_UINT;
    conf->pins = NGX_CONF_UNSET_PTR;
    conf->ssl_verify = NGX_CONF_UNSET;
    conf->ssl_passwords = NGX_CONF_UNSET_PTR;
    conf->set_headers = NGX_CONF_UNSET_PTR;
    conf->exchange = NGX_CONF_UNSET_PTR;
    conf->exchange_secret = NGX_CONF_UNSET;
    conf->exchange_auth = NGX_CONF_UNSET_UINT;
    conf->exchange_key = NGX_CONF_UNSET_PTR;
    conf->views = NGX_CONF_UNSET_PTR;

    /* unbuffered: SSE events go out as they come */
    conf->upstream.cyclic_temp_file = 0;
    conf->upstream.buffering = 0;
    conf->upstream.ignore_client_abort = 0;
    conf->upstream.send_lowat = 0;
    conf->upstream.bufs.num = 0;
    conf->upstream.busy_buffers_size = 0;
    conf->upstream.max_temp_file_size = 0;
    conf->upstream.temp_file_write_size = 0;
    conf->upstream.pass_request_headers = 0;
    conf->upstream.pass_request_body = 0;
    conf->upstream.force_ranges = 0;

    ngx_str_set(&conf->upstream.module, "mcp");

    return conf;
}


static char *
ngx_http_mcp_proxy_merge_loc_conf(ngx_conf_t *cf, void *parent, void *child)
{
    ngx_http_mcp_proxy_loc_conf_t *prev = parent;
    ngx_http_mcp_proxy_loc_conf_t *conf = child;

    ngx_hash_init_t           hash;
    ngx_http_mcp_loc_conf_t  *mlcf;

    ngx_conf_merge_ptr_value(conf->upstream.local, prev->upstream.local,
                              NULL);
    ngx_conf_merge_value(conf->upstream.socket_keepalive,
                         prev->upstream.socket_keepalive, 0);
    ngx_conf_merge_uint_value(conf->upstream.next_upstream_tries,
                              prev->upstream.next_upstream_tries, 0);

    /*
     * A tool call may run for minutes and a stream may idle for as long
     * as the client keeps it: the read timeout is generous.
     */
    ngx_conf_merge_msec_value(conf->upstream.connect_timeout,
                              prev->upstream.connect_timeout, 10000);
    ngx_conf_merge_msec_value(conf->upstream.send_timeout,
                              prev->upstream.send_timeout, 60000);
    ngx_conf_merge_msec_value(conf->upstream.read_timeout,
                              prev->upstream.read_timeout, 3600000);
    ngx_conf_merge_msec_value(conf->upstream.next_upstream_timeout,
                              prev->upstream.next_upstream_timeout, 0);
    ngx_conf_merge_size_value(conf->upstream.buffer_size,
                              prev->upstream.buffer_size, 16384);
    ngx_conf_merge_size_value(conf->filter_buffer_size,
                              prev->filter_buffer_size, 1024 * 1024);
    ngx_conf_merge_value(conf->upstream.intercept_errors,
                         prev->upstream.intercept_errors, 0);
    ngx_conf_merge_value(conf->pass_authorization, prev->pass_authorization,
                         0);
    ngx_conf_merge_value(conf->retry, prev->retry, 1);
    ngx_conf_merge_value(conf->check_arguments, prev->check_arguments, 0);
    ngx_conf_merge_value(conf->check_results, prev->check_results, 0);
    ngx_conf_merge_uint_value(conf->pin, prev->pin, NGX_HTTP_MCP_PIN_OFF);
    ngx_conf_merge_ptr_value(conf->pins, prev->pins, NULL);

    /* mcp_stdio's location takes mcp_pass's checks, but is never retried */
    mlcf = ngx_http_conf_get_module_loc_conf(cf, ngx_http_mcp_module);

    if (mlcf->stdio) {
        conf->retry = 0;
    }

    if (conf->pin != NGX_HTTP_MCP_PIN_OFF
        && ngx_http_mcp_proxy_pin_memo(cf, conf) != NGX_OK)
    {
        return NGX_CONF_ERROR;
    }

    /* the lists that pins or hints read, kept as they came */
    if ((conf->pin != NGX_HTTP_MCP_PIN_OFF || conf->retry)
        && ngx_http_mcp_proxy_list_memo(cf, conf) != NGX_OK)
    {
        return NGX_CONF_ERROR;
    }

    ngx_conf_merge_ptr_value(conf->set_headers, prev->set_headers, NULL);
    ngx_conf_merge_ptr_value(conf->views, prev->views, NULL);

    /* the core's, merged before (mcp_guardrail, mcp_pass_guardrail) */
    conf->guards = mlcf->guards;
    conf->guard_where = mlcf->guard_where;

    if (ngx_http_mcp_exchange_merge(cf, prev, conf) != NGX_CONF_OK) {
        return NGX_CONF_ERROR;
    }

    conf->upstream.ignore_headers = NGX_HTTP_UPSTREAM_IGN_XA_REDIRECT
                                    |NGX_HTTP_UPSTREAM_IGN_XA_EXPIRES
                                    |NGX_HTTP_UPSTREAM_IGN_XA_LIMIT_RATE
                                    |NGX_HTTP_UPSTREAM_IGN_XA_BUFFERING
                                    |NGX_HTTP_UPSTREAM_IGN_XA_CHARSET;

    /* a session's requests must reach its replica: no other try */
    conf->upstream.next_upstream = NGX_CONF_BITMASK_SET
                                   |NGX_HTTP_UPSTREAM_FT_OFF;

    if (conf->upstream.upstream == NULL) {
        conf->upstream.upstream = prev->upstream.upstream;
        conf->proxy_host = prev->proxy_host;
        conf->proxy_uri = prev->proxy_uri;
        conf->tools_key = prev->tools_key;
        conf->ssl = prev->ssl;
        conf->ssl_host = prev->ssl_host;
        conf->upstream.ssl = prev->upstream.ssl;
    }

    /*
     * the tools a stdio location's children list (pins, the listed
     * schemas) are its own: kept under its scope, not an upstream's URL
     */
    if (mlcf->stdio) {
        conf->tools_key.len = sizeof("stdio ") - 1 + mlcf->scope.len;
        conf->tools_key.data = ngx_pnalloc(cf->pool, conf->tools_key.len);

        if (conf->tools_key.data == NULL) {
            return NGX_CONF_ERROR;
        }

        ngx_sprintf(conf->tools_key.data, "stdio %V", &mlcf->scope);
    }

    hash.max_size = 512;
    hash.bucket_size = ngx_align(64, ngx_cacheline_size);
    hash.name = "mcp_pass_headers_hash";

    if (ngx_http_upstream_hide_headers_hash(cf, &conf->upstream,
            &prev->upstream, ngx_http_mcp_proxy_hide_headers, &hash)
        != NGX_OK)
    {
        return NGX_CONF_ERROR;
    }

    ngx_conf_merge_value(conf->ssl_verify, prev->ssl_verify, 0);
    ngx_conf_merge_str_value(conf->ssl_trusted_certificate,
                             prev->ssl_trusted_certificate, "");
    ngx_conf_merge_str_value(conf->ssl_certificate, prev->ssl_certificate, "");
    ngx_conf_merge_str_value(conf->ssl_certificate_key,
                             prev->ssl_certificate_key, "");
    ngx_conf_merge_ptr_value(conf->ssl_passwords, prev->ssl_passwords, NULL);

    if (conf->ssl && conf->upstream.ssl == NULL
        && ngx_http_mcp_proxy_ssl(cf, conf) != NGX_OK)
    {
        return NGX_CONF_ERROR;
    }

    /* initialize has no replica yet: a server that fails, the next one */
    conf->upstream_init = conf->upstream;
    conf->upstream_init.next_upstream = NGX_CONF_BITMASK_SET
                                        |NGX_HTTP_UPSTREAM_FT_ERROR
                                        |NGX_HTTP_UPSTREAM_FT_TIMEOUT;

    /*
     * a request harmless twice, on a reused connection that failed
     * before its reply began: once more (ngx_http_mcp_proxy_retry.c)
     */
    conf->upstream_retry = conf->upstream;
    conf->upstream_retry.next_upstream = NGX_CONF_BITMASK_SET
                                         |NGX_HTTP_UPSTREAM_FT_ERROR
                                         |NGX_HTTP_UPSTREAM_FT_NON_IDEMPOTENT;

    return NGX_CONF_OK;
}


/*
 * TLS to the upstream (mcp_pass https://...): SNI always, the peer's
 * certificate checked against the trusted CAs when asked, the gateway's
 * own certificate shown to upstreams that ask for one.
 */

static ngx_int_t
ngx_http_mcp_proxy_ssl(ngx_conf_t *cf, ngx_http_mcp_proxy_loc_conf_t *conf)
{
#if (NGX_HTTP_SSL)
    ngx_pool_cleanup_t  *cln;

    conf->upstream.ssl = ngx_pcalloc(cf->pool, sizeof(ngx_ssl_t));
    if (conf->upstream.ssl == NULL) {
        return NGX_ERROR;
    }

    conf->upstream.ssl->log = cf->log;

    if (ngx_ssl_create(conf->upstream.ssl,
                       NGX_SSL_TLSv1_2|NGX_SSL_TLSv1_3, NULL)
        != NGX_OK)
    {
        return NGX_ERROR;
    }

    cln = ngx_pool_cleanup_add(cf->pool, 0);
    if (cln == NULL) {
        ngx_ssl_cleanup_ctx(conf->upstream.ssl);
        return NGX_ERROR;
    }

    cln->handler = ngx_ssl_cleanup_ctx;
    cln->data = conf->upstream.ssl;

    conf->upstream.ssl_session_reuse = 1;
    conf->upstream.ssl_server_name = 1;
    conf->upstream.ssl_verify = conf->ssl_verify;

    if (conf->ssl_certificate.len || conf->ssl_certificate_key.len) {
        if (conf->ssl_certificate.len == 0
            || conf->ssl_certificate_key.len == 0)
        {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "\"mcp_pass_ssl_certificate\" and "
                               "\"mcp_pass_ssl_certificate_key\" go "
                               "together: one is missing");
            return NGX_ERROR;
        }

        if (ngx_ssl_certificate(cf, conf->upstream.ssl,
                                &conf->ssl_certificate,
                                &conf->ssl_certificate_key,
                                conf->ssl_passwords)
            != NGX_OK)
        {
            return NGX_ERROR;
        }
    }

    if (conf->ssl_verify) {
        if (conf->ssl_trusted_certificate.len == 0) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "no \"mcp_pass_ssl_trusted_certificate\" "
                               "for \"mcp_pass_ssl_verify\"");
            return NGX_ERROR;
        }

        if (ngx_ssl_trusted_certificate(cf, conf->upstream.ssl,
                                        &conf->ssl_trusted_certificate, 4)
            != NGX_OK)
        {
            return NGX_ERROR;
        }
    }

    return NGX_OK;

#else

    return NGX_ERROR;

#endif
}


/* mcp_pass_ssl_password_file: the passphrases of an encrypted key */

static char *
ngx_http_mcp_pass_ssl_password_file(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf)
{
#if (NGX_HTTP_SSL)
    ngx_http_mcp_proxy_loc_conf_t *plcf = conf;

    ngx_str_t  *value;

    if (plcf->ssl_passwords != NGX_CONF_UNSET_PTR) {
        return "is duplicate";
    }

    value = cf->args->elts;

    plcf->ssl_passwords = ngx_ssl_read_password_file(cf, &value[1]);

    if (plcf->ssl_passwords == NULL) {
        return NGX_CONF_ERROR;
    }

    return NGX_CONF_OK;

#else

    return "requires the http_ssl module";

#endif
}
