
/*
 * ngx_http_mcp_auth_module: makes a location an OAuth 2.1 protected
 * resource.  An access-phase handler takes the bearer token of every
 * request (a JWT, or an API key), verifies it and leaves what it learned
 * in the request's ngx_http_mcp_auth_t; the MCP module asks it about
 * scopes per method and tool.  Deny by default: once "mcp_auth_jwt" is on,
 * a request without a valid token gets 401 with a WWW-Authenticate
 * challenge that points to the RFC 9728 metadata document, which the
 * "mcp_auth_metadata" content handler serves.
 *
 * Keys come from a JWKS file (read at configuration time) and from a
 * JWKS fetched with a subrequest (so proxy_pass, proxy_cache and the rest
 * of nginx do the HTTP).  A fetched set is kept as text in a shared
 * memory zone with the time it arrived, so every worker uses the same
 * set; each worker parses a set once and keeps the keys until the zone
 * holds a newer one.
 */


#include "ngx_http_mcp_auth.h"
#include "ngx_http_mcp_auth_internal.h"
#include "ngx_http_mcp_json.h"
#include "ngx_http_mcp_core.h"
#include "ngx_http_mcp_http.h"


static ngx_int_t ngx_http_mcp_auth_metadata_handler(ngx_http_request_t *r);
static ngx_int_t ngx_http_mcp_auth_variable(ngx_http_request_t *r,
    ngx_http_variable_value_t *v, uintptr_t data);
static ngx_int_t ngx_http_mcp_auth_init(ngx_conf_t *cf);
static void *ngx_http_mcp_auth_create_main_conf(ngx_conf_t *cf);
static void *ngx_http_mcp_auth_create_loc_conf(ngx_conf_t *cf);
static char *ngx_http_mcp_auth_merge_loc_conf(ngx_conf_t *cf, void *parent,
    void *child);
static void ngx_http_mcp_auth_merge_checked(ngx_conf_t *cf, ngx_array_t *keys);
static ngx_int_t ngx_http_mcp_auth_merge_needs(ngx_conf_t *cf,
    ngx_http_mcp_auth_loc_conf_t *conf);
static ngx_int_t ngx_http_mcp_auth_merge_metadata_url(ngx_conf_t *cf,
    ngx_http_mcp_auth_loc_conf_t *conf);
static ngx_int_t ngx_http_mcp_auth_merge_caches(ngx_conf_t *cf,
    ngx_http_mcp_auth_loc_conf_t *conf);
static char *ngx_http_mcp_auth_metadata(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
static void ngx_http_mcp_auth_cache_cleanup(void *data);
static void ngx_http_mcp_auth_verified_cleanup(void *data);


/* format in the schemas a location checks: 2020-12's two vocabularies */
static ngx_conf_enum_t  ngx_http_mcp_auth_schema_formats[] = {
    { ngx_string("annotation"), 0 },
    { ngx_string("assertion"), 1 },
    { ngx_null_string, 0 }
};


static ngx_conf_enum_t  ngx_http_mcp_auth_dpop_modes[] = {
    { ngx_string("off"), NGX_HTTP_MCP_DPOP_OFF },
    { ngx_string("allowed"), NGX_HTTP_MCP_DPOP_ALLOWED },
    { ngx_string("required"), NGX_HTTP_MCP_DPOP_REQUIRED },
    { ngx_null_string, 0 }
};


static ngx_command_t  ngx_http_mcp_auth_commands[] = {

    { ngx_string("mcp_auth_jwt"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_TAKE1,
      ngx_http_mcp_auth_jwt_slot,
      NGX_HTTP_LOC_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("mcp_auth_jwt_key_file"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_TAKE1,
      ngx_http_mcp_auth_key_file,
      NGX_HTTP_LOC_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("mcp_auth_jwt_key_request"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_TAKE1,
      ngx_http_mcp_auth_key_request,
      NGX_HTTP_LOC_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("mcp_auth_jwt_key_cache"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_TAKE12,
      ngx_http_mcp_auth_key_cache,
      NGX_HTTP_LOC_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("mcp_auth_jwt_leeway"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_sec_slot,
      NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(ngx_http_mcp_auth_loc_conf_t, leeway),
      NULL },

    { ngx_string("mcp_auth_jwt_issuer"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_1MORE,
      ngx_http_mcp_auth_str_array,
      NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(ngx_http_mcp_auth_loc_conf_t, issuers),
      NULL },

    { ngx_string("mcp_auth_jwt_audience"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_str_slot,
      NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(ngx_http_mcp_auth_loc_conf_t, audience),
      NULL },

    { ngx_string("mcp_auth_resource"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_str_slot,
      NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(ngx_http_mcp_auth_loc_conf_t, resource),
      &ngx_http_mcp_auth_token_post },

    { ngx_string("mcp_auth_authorization_servers"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_1MORE,
      ngx_http_mcp_auth_str_array,
      NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(ngx_http_mcp_auth_loc_conf_t, servers),
      NULL },

    { ngx_string("mcp_auth_scopes_supported"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_1MORE,
      ngx_http_mcp_auth_str_array,
      NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(ngx_http_mcp_auth_loc_conf_t, scopes),
      NULL },

    { ngx_string("mcp_auth_tool_scope"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_TAKE2,
      ngx_http_mcp_auth_tool_scope,
      NGX_HTTP_LOC_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("mcp_auth_role_claim"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_str_slot,
      NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(ngx_http_mcp_auth_loc_conf_t, role_claim),
      NULL },

    { ngx_string("mcp_auth_api_keys"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_TAKE1,
      ngx_http_mcp_auth_api_keys,
      NGX_HTTP_LOC_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("mcp_auth_token_passthrough"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_FLAG,
      ngx_conf_set_flag_slot,
      NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(ngx_http_mcp_auth_loc_conf_t, passthrough),
      NULL },

    { ngx_string("mcp_auth_dpop"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_enum_slot,
      NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(ngx_http_mcp_auth_loc_conf_t, dpop),
      &ngx_http_mcp_auth_dpop_modes },

    { ngx_string("mcp_auth_dpop_algs"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_1MORE,
      ngx_http_mcp_auth_dpop_algs,
      NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(ngx_http_mcp_auth_loc_conf_t, dpop_algs),
      NULL },

    { ngx_string("mcp_auth_dpop_window"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_sec_slot,
      NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(ngx_http_mcp_auth_loc_conf_t, dpop_window),
      NULL },

    { ngx_string("mcp_auth_dpop_nonce"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_FLAG,
      ngx_conf_set_flag_slot,
      NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(ngx_http_mcp_auth_loc_conf_t, dpop_nonce),
      NULL },

    { ngx_string("mcp_auth_metadata"),
      NGX_HTTP_LOC_CONF|NGX_CONF_NOARGS,
      ngx_http_mcp_auth_metadata,
      NGX_HTTP_LOC_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("mcp_max_input_depth"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_num_slot,
      NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(ngx_http_mcp_auth_loc_conf_t, max_depth),
      NULL },

    { ngx_string("mcp_max_input_string"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_size_slot,
      NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(ngx_http_mcp_auth_loc_conf_t, max_string),
      NULL },

    { ngx_string("mcp_schema_format"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_enum_slot,
      NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(ngx_http_mcp_auth_loc_conf_t, schema_format),
      &ngx_http_mcp_auth_schema_formats },

      ngx_null_command
};


static ngx_http_module_t  ngx_http_mcp_auth_module_ctx = {
    ngx_http_mcp_auth_preconfiguration,    /* preconfiguration */
    ngx_http_mcp_auth_init,                /* postconfiguration */

    ngx_http_mcp_auth_create_main_conf,    /* create main configuration */
    NULL,                                  /* init main configuration */

    NULL,                                  /* create server configuration */
    NULL,                                  /* merge server configuration */

    ngx_http_mcp_auth_create_loc_conf,     /* create location configuration */
    ngx_http_mcp_auth_merge_loc_conf       /* merge location configuration */
};


ngx_module_t  ngx_http_mcp_auth_module = {
    NGX_MODULE_V1,
    &ngx_http_mcp_auth_module_ctx,         /* module context */
    ngx_http_mcp_auth_commands,            /* module directives */
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


#define NGX_HTTP_MCP_AUTH_VAR_SUBJECT   0
#define NGX_HTTP_MCP_AUTH_VAR_SCOPES    1
#define NGX_HTTP_MCP_AUTH_VAR_ROLE      2
#define NGX_HTTP_MCP_AUTH_VAR_RESULT    3
#define NGX_HTTP_MCP_AUTH_VAR_ISSUER    4



static ngx_http_variable_t  ngx_http_mcp_auth_vars[] = {

    { ngx_string("mcp_auth_subject"), NULL, ngx_http_mcp_auth_variable,
      NGX_HTTP_MCP_AUTH_VAR_SUBJECT, NGX_HTTP_VAR_NOCACHEABLE, 0 },

    { ngx_string("mcp_auth_scopes"), NULL, ngx_http_mcp_auth_variable,
      NGX_HTTP_MCP_AUTH_VAR_SCOPES, NGX_HTTP_VAR_NOCACHEABLE, 0 },

    { ngx_string("mcp_auth_role"), NULL, ngx_http_mcp_auth_variable,
      NGX_HTTP_MCP_AUTH_VAR_ROLE, NGX_HTTP_VAR_NOCACHEABLE, 0 },

    { ngx_string("mcp_auth_result"), NULL, ngx_http_mcp_auth_variable,
      NGX_HTTP_MCP_AUTH_VAR_RESULT, NGX_HTTP_VAR_NOCACHEABLE, 0 },

    { ngx_string("mcp_auth_issuer"), NULL, ngx_http_mcp_auth_variable,
      NGX_HTTP_MCP_AUTH_VAR_ISSUER, NGX_HTTP_VAR_NOCACHEABLE, 0 },

      ngx_http_null_variable
};


/* ------------------------------------------------------------------------
 * RFC 9728 metadata
 */

static ngx_int_t
ngx_http_mcp_auth_metadata_handler(ngx_http_request_t *r)
{
    u_char                        *body;
    size_t                         len;
    cJSON                         *doc, *list;
    ngx_int_t                      rc;
    ngx_str_t                     *s;
    ngx_uint_t                     i, k;
    ngx_array_t                   *arrays[3];
    const char                    *names[3];
    ngx_http_mcp_auth_loc_conf_t  *alcf;

    /* a browser client finds its authorization server here too */
    if (ngx_http_mcp_cors_is_preflight(r)) {
        rc = ngx_http_discard_request_body(r);
        return (rc != NGX_OK) ? rc : ngx_http_mcp_cors_public(r, 1);
    }

    if (!(r->method & (NGX_HTTP_GET|NGX_HTTP_HEAD))) {
        return NGX_HTTP_NOT_ALLOWED;
    }

    rc = ngx_http_discard_request_body(r);

    if (rc != NGX_OK) {
        return rc;
    }

    alcf = ngx_http_get_module_loc_conf(r, ngx_http_mcp_auth_module);

    if (alcf->resource.len == 0) {
        ngx_log_error(NGX_LOG_ERR, r->connection->log, 0,
                      "mcp auth: \"mcp_auth_metadata\" without "
                      "\"mcp_auth_resource\"");
        return NGX_HTTP_NOT_FOUND;
    }

    doc = cJSON_CreateObject();

    if (doc == NULL
        || cJSON_AddStringToObject(doc, "resource",
                                   (char *) alcf->resource.data) == NULL)
    {
        goto failed;
    }

    arrays[0] = alcf->servers;
    names[0] = "authorization_servers";
    arrays[1] = alcf->scopes;
    names[1] = "scopes_supported";
    arrays[2] = alcf->dpop ? alcf->dpop_algs : NULL;
    names[2] = "dpop_signing_alg_values_supported";

    for (k = 0; k < 3; k++) {
        if (arrays[k] == NULL) {
            continue;
        }

        list = cJSON_AddArrayToObject(doc, names[k]);
        if (list == NULL) {
            goto failed;
        }

        s = arrays[k]->elts;

        for (i = 0; i < arrays[k]->nelts; i++) {
            if (!cJSON_AddItemToArray(list,
                                      cJSON_CreateString((char *) s[i].data)))
            {
                goto failed;
            }
        }
    }

    list = cJSON_AddArrayToObject(doc, "bearer_methods_supported");

    if (list == NULL
        || !cJSON_AddItemToArray(list, cJSON_CreateString("header")))
    {
        goto failed;
    }

    if (alcf->dpop != NGX_HTTP_MCP_DPOP_OFF
        && cJSON_AddBoolToObject(doc, "dpop_bound_access_tokens_required",
                                 alcf->dpop == NGX_HTTP_MCP_DPOP_REQUIRED)
           == NULL)
    {
        goto failed;
    }

    body = ngx_http_mcp_json_print(r->pool, doc, &len);

    cJSON_Delete(doc);

    if (body == NULL || ngx_http_mcp_cors_public(r, 0) != NGX_OK) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    return ngx_http_mcp_send(r, NGX_HTTP_OK, NULL, body, len);

failed:

    cJSON_Delete(doc);
    return NGX_HTTP_INTERNAL_SERVER_ERROR;
}


ngx_int_t
ngx_http_mcp_auth_preconfiguration(ngx_conf_t *cf)
{
    return ngx_http_mcp_auth_add_variables(cf);
}


/* ------------------------------------------------------------------------
 * Variables
 */

ngx_int_t
ngx_http_mcp_auth_add_variables(ngx_conf_t *cf)
{
    return ngx_http_mcp_conf_add_variables(cf, ngx_http_mcp_auth_vars);
}


static ngx_int_t
ngx_http_mcp_auth_variable(ngx_http_request_t *r,
    ngx_http_variable_value_t *v, uintptr_t data)
{
    u_char                   *p;
    size_t                    len;
    ngx_str_t                *s, value;
    ngx_uint_t                i;
    ngx_http_mcp_auth_ctx_t  *ctx;

    ctx = ngx_http_get_module_ctx(r->main, ngx_http_mcp_auth_module);

    if (ctx == NULL) {
        v->not_found = 1;
        return NGX_OK;
    }

    switch (data) {

    case NGX_HTTP_MCP_AUTH_VAR_SUBJECT:
        value = ctx->auth.subject;
        break;

    case NGX_HTTP_MCP_AUTH_VAR_ROLE:
        value = ctx->auth.role;
        break;

    case NGX_HTTP_MCP_AUTH_VAR_RESULT:
        value = ctx->auth.result;
        break;

    case NGX_HTTP_MCP_AUTH_VAR_ISSUER:
        value = ctx->auth.issuer;
        break;

    default: /* scopes */

        ngx_str_null(&value);

        if (ctx->auth.scopes == NULL || ctx->auth.scopes->nelts == 0) {
            break;
        }

        s = ctx->auth.scopes->elts;
        len = 0;

        for (i = 0; i < ctx->auth.scopes->nelts; i++) {
            len += s[i].len + 1;
        }

        p = ngx_pnalloc(r->pool, len);
        if (p == NULL) {
            return NGX_ERROR;
        }

        value.data = p;

        for (i = 0; i < ctx->auth.scopes->nelts; i++) {
            if (i) {
                *p++ = ' ';
            }

            p = ngx_cpymem(p, s[i].data, s[i].len);
        }

        value.len = p - value.data;
    }

    v->len = value.len;
    v->data = value.data;
    v->valid = 1;
    v->no_cacheable = 1;
    v->not_found = 0;

    return NGX_OK;
}


/* ------------------------------------------------------------------------
 * Configuration
 */

static void *
ngx_http_mcp_auth_create_main_conf(ngx_conf_t *cf)
{
    ngx_http_mcp_auth_main_conf_t  *amcf;

    amcf = ngx_pcalloc(cf->pool, sizeof(ngx_http_mcp_auth_main_conf_t));
    if (amcf == NULL) {
        return NULL;
    }

    if (ngx_array_init(&amcf->keyfiles, cf->pool, 2,
                       sizeof(ngx_http_mcp_auth_keyfile_t))
        != NGX_OK)
    {
        return NULL;
    }

    return amcf;
}


static ngx_int_t
ngx_http_mcp_auth_init(ngx_conf_t *cf)
{
    ngx_uint_t                      i;
    ngx_http_handler_pt            *h;
    ngx_http_core_main_conf_t      *cmcf;
    ngx_http_mcp_auth_keyfile_t    *kf;
    ngx_http_mcp_auth_main_conf_t  *amcf;

    /*
     * API keys are keys for mcp_auth_jwt, which turns checking on: keys
     * that no block with it on inherits check nothing anywhere, which is
     * easy to miss (an operator reads the keys as the lock).  Keys of a
     * server whose locations turn it on are checked there: no warning.
     */

    ngx_http_mcp_hooks.permits = ngx_http_mcp_auth_permits;
    ngx_http_mcp_hooks.check_input = ngx_http_mcp_auth_check_input;
    ngx_http_mcp_hooks.format_assert = ngx_http_mcp_auth_format_assert;

    amcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_mcp_auth_module);
    kf = amcf->keyfiles.elts;

    for (i = 0; i < amcf->keyfiles.nelts; i++) {
        if (!kf[i].checked) {
            ngx_log_error(NGX_LOG_WARN, cf->log, 0,
                          "\"mcp_auth_api_keys\" in %V:%ui without "
                          "\"mcp_auth_jwt\" in any block that inherits "
                          "them: no request is checked with these keys",
                          &kf[i].file, kf[i].line);
        }
    }

    cmcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_core_module);

    h = ngx_array_push(&cmcf->phases[NGX_HTTP_ACCESS_PHASE].handlers);
    if (h == NULL) {
        return NGX_ERROR;
    }

    *h = ngx_http_mcp_auth_handler;

    return NGX_OK;
}


static void *
ngx_http_mcp_auth_create_loc_conf(ngx_conf_t *cf)
{
    ngx_http_mcp_auth_loc_conf_t  *conf;

    conf = ngx_pcalloc(cf->pool, sizeof(ngx_http_mcp_auth_loc_conf_t));
    if (conf == NULL) {
        return NULL;
    }

    /*
     * set by ngx_pcalloc():
     *
     *     conf->realm = { 0, NULL };
     *     conf->resource = { 0, NULL };
     *     conf->key_request = { 0, NULL };
     *     conf->zone = NULL;
     */

    conf->realm.data = NGX_CONF_UNSET_PTR;
    conf->issuers = NGX_CONF_UNSET_PTR;
    conf->servers = NGX_CONF_UNSET_PTR;
    conf->scopes = NGX_CONF_UNSET_PTR;
    conf->tool_scopes = NGX_CONF_UNSET_PTR;
    conf->file_keys = NGX_CONF_UNSET_PTR;
    conf->api_keys = NGX_CONF_UNSET_PTR;
    conf->key_request.data = NGX_CONF_UNSET_PTR;
    conf->leeway = NGX_CONF_UNSET;
    conf->key_cache = NGX_CONF_UNSET;
    conf->key_refresh = NGX_CONF_UNSET;
    conf->passthrough = NGX_CONF_UNSET;
    conf->max_depth = NGX_CONF_UNSET_UINT;
    conf->max_string = NGX_CONF_UNSET_SIZE;
    conf->schema_format = NGX_CONF_UNSET_UINT;
    conf->dpop = NGX_CONF_UNSET_UINT;
    conf->dpop_algs = NGX_CONF_UNSET_PTR;
    conf->dpop_window = NGX_CONF_UNSET;
    conf->dpop_nonce = NGX_CONF_UNSET;

    return conf;
}


static char *
ngx_http_mcp_auth_merge_loc_conf(ngx_conf_t *cf, void *parent, void *child)
{
    ngx_http_mcp_auth_loc_conf_t *prev = parent;
    ngx_http_mcp_auth_loc_conf_t *conf = child;

    ngx_int_t  rc;

    if (conf->realm.data == NGX_CONF_UNSET_PTR) {
        conf->realm = (prev->realm.data == NGX_CONF_UNSET_PTR)
                      ? (ngx_str_t) ngx_null_string : prev->realm;
    }

    ngx_conf_merge_str_value(conf->resource, prev->resource, "");
    ngx_conf_merge_str_value(conf->audience, prev->audience, "");
    ngx_conf_merge_str_value(conf->role_claim, prev->role_claim, "role");
    ngx_conf_merge_ptr_value(conf->issuers, prev->issuers, NULL);
    ngx_conf_merge_ptr_value(conf->servers, prev->servers, NULL);
    ngx_conf_merge_ptr_value(conf->scopes, prev->scopes, NULL);
    ngx_conf_merge_ptr_value(conf->tool_scopes, prev->tool_scopes, NULL);
    ngx_conf_merge_ptr_value(conf->file_keys, prev->file_keys, NULL);
    ngx_conf_merge_ptr_value(conf->api_keys, prev->api_keys, NULL);
    ngx_conf_merge_sec_value(conf->leeway, prev->leeway, 60);
    ngx_conf_merge_sec_value(conf->key_cache, prev->key_cache, 3600);
    ngx_conf_merge_sec_value(conf->key_refresh, prev->key_refresh, 10);
    ngx_conf_merge_value(conf->passthrough, prev->passthrough, 0);
    ngx_conf_merge_uint_value(conf->max_depth, prev->max_depth, 5);
    ngx_conf_merge_size_value(conf->max_string, prev->max_string, 10000);
    ngx_conf_merge_uint_value(conf->schema_format, prev->schema_format, 0);
    ngx_conf_merge_uint_value(conf->dpop, prev->dpop, NGX_HTTP_MCP_DPOP_OFF);
    ngx_conf_merge_ptr_value(conf->dpop_algs, prev->dpop_algs, NULL);
    ngx_conf_merge_sec_value(conf->dpop_window, prev->dpop_window, 300);
    ngx_conf_merge_value(conf->dpop_nonce, prev->dpop_nonce, 0);

    if (ngx_http_mcp_auth_dpop_merge(cf, conf) != NGX_OK) {
        return NGX_CONF_ERROR;
    }

    if (conf->key_request.data == NGX_CONF_UNSET_PTR) {
        if (prev->key_request.data == NGX_CONF_UNSET_PTR) {
            ngx_str_null(&conf->key_request);

        } else {
            conf->key_request = prev->key_request;
            conf->zone = prev->zone;
        }
    }

    /* these keys are checked somewhere: see ngx_http_mcp_auth_init() */
    if (conf->realm.len && conf->api_keys != NULL) {
        ngx_http_mcp_auth_merge_checked(cf, conf->api_keys);
    }

    /*
     * Derived here, not merged: a location with its own resource must not
     * inherit the audience its server derived from the server's resource.
     */
    conf->accept_aud = conf->audience.len ? conf->audience : conf->resource;

    rc = ngx_http_mcp_auth_merge_needs(cf, conf);

    if (rc != NGX_OK) {
        return (rc == NGX_DONE) ? NGX_CONF_OK : NGX_CONF_ERROR;
    }

    if (conf->metadata_url.len == 0
        && ngx_http_mcp_auth_merge_metadata_url(cf, conf) != NGX_OK)
    {
        return NGX_CONF_ERROR;
    }

    if (ngx_http_mcp_auth_merge_caches(cf, conf) != NGX_OK) {
        return NGX_CONF_ERROR;
    }

    return NGX_CONF_OK;
}


static void
ngx_http_mcp_auth_merge_checked(ngx_conf_t *cf, ngx_array_t *keys)
{
    ngx_uint_t                      i;
    ngx_http_mcp_auth_keyfile_t    *kf;
    ngx_http_mcp_auth_main_conf_t  *amcf;

    amcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_mcp_auth_module);
    kf = amcf->keyfiles.elts;

    for (i = 0; i < amcf->keyfiles.nelts; i++) {
        if (kf[i].keys == keys) {
            kf[i].checked = 1;
        }
    }
}


/*
 * What mcp_auth_jwt needs: a resource, keys, and an issuer for the keys
 * of JWTs.  NGX_DONE: no resource, nothing to derive from it.
 */

static ngx_int_t
ngx_http_mcp_auth_merge_needs(ngx_conf_t *cf,
    ngx_http_mcp_auth_loc_conf_t *conf)
{
    if (conf->resource.len == 0) {
        if (conf->realm.len) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "\"mcp_auth_jwt\" needs \"mcp_auth_resource\", "
                               "the canonical URI of the resource");
            return NGX_ERROR;
        }

        return NGX_DONE;
    }

    if (conf->realm.len && conf->file_keys == NULL
        && conf->key_request.len == 0 && conf->api_keys == NULL)
    {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"mcp_auth_jwt\" needs keys: "
                           "\"mcp_auth_jwt_key_file\", "
                           "\"mcp_auth_jwt_key_request\" or "
                           "\"mcp_auth_api_keys\"");
        return NGX_ERROR;
    }

    if (conf->realm.len && conf->issuers == NULL
        && (conf->file_keys != NULL || conf->key_request.len))
    {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"mcp_auth_jwt\" needs \"mcp_auth_jwt_issuer\"");
        return NGX_ERROR;
    }

    return NGX_OK;
}


/* RFC 9728 3.1: the well-known path goes before the resource's path */

static ngx_int_t
ngx_http_mcp_auth_merge_metadata_url(ngx_conf_t *cf,
    ngx_http_mcp_auth_loc_conf_t *conf)
{
    u_char  *p, *host, *path, *end;

    host = (u_char *) ngx_strstr(conf->resource.data, "://");

    if (host == NULL) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "invalid resource URI \"%V\"", &conf->resource);
        return NGX_ERROR;
    }

    end = conf->resource.data + conf->resource.len;
    path = ngx_strlchr(host + 3, end, '/');

    if (path == NULL) {
        path = end;
    }

    p = ngx_pnalloc(cf->pool, conf->resource.len
                              + sizeof(NGX_HTTP_MCP_AUTH_WELL_KNOWN));
    if (p == NULL) {
        return NGX_ERROR;
    }

    conf->metadata_url.data = p;
    p = ngx_cpymem(p, conf->resource.data, path - conf->resource.data);
    p = ngx_cpymem(p, NGX_HTTP_MCP_AUTH_WELL_KNOWN,
                   sizeof(NGX_HTTP_MCP_AUTH_WELL_KNOWN) - 1);

    if (end - path > 1) {
        p = ngx_cpymem(p, path, end - path);
    }

    conf->metadata_url.len = p - conf->metadata_url.data;

    return NGX_OK;
}


/* a worker's tokens already verified, its parsed copy of fetched keys */

static ngx_int_t
ngx_http_mcp_auth_merge_caches(ngx_conf_t *cf,
    ngx_http_mcp_auth_loc_conf_t *conf)
{
    ngx_pool_cleanup_t  *cln;

    if (conf->realm.len && conf->verified == NULL) {
        conf->verified = ngx_pcalloc(cf->pool, NGX_HTTP_MCP_AUTH_VERIFIED
                                     * sizeof(ngx_http_mcp_verified_t));
        cln = ngx_pool_cleanup_add(cf->pool, 0);

        if (conf->verified == NULL || cln == NULL) {
            return NGX_ERROR;
        }

        cln->handler = ngx_http_mcp_auth_verified_cleanup;
        cln->data = conf->verified;
    }

    if (conf->key_request.len && conf->cache == NULL) {
        conf->cache = ngx_pcalloc(cf->pool,
                                  sizeof(ngx_http_mcp_jwks_cache_t));
        if (conf->cache == NULL) {
            return NGX_ERROR;
        }

        cln = ngx_pool_cleanup_add(cf->pool, 0);
        if (cln == NULL) {
            return NGX_ERROR;
        }

        cln->handler = ngx_http_mcp_auth_cache_cleanup;
        cln->data = conf->cache;
    }

    return NGX_OK;
}


static void
ngx_http_mcp_auth_verified_cleanup(void *data)
{
    ngx_http_mcp_verified_t  *v = data;

    ngx_uint_t  i;

    for (i = 0; i < NGX_HTTP_MCP_AUTH_VERIFIED; i++) {
        if (v[i].data != NULL) {
            ngx_free(v[i].data);
            v[i].data = NULL;
        }
    }
}


static void
ngx_http_mcp_auth_cache_cleanup(void *data)
{
    ngx_http_mcp_jwks_cache_t  *cache = data;

    if (cache->pool != NULL) {
        ngx_destroy_pool(cache->pool);
        cache->pool = NULL;
    }
}


static char *
ngx_http_mcp_auth_metadata(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_mcp_auth_loc_conf_t *alcf = conf;

    ngx_http_core_loc_conf_t  *clcf;

    clcf = ngx_http_conf_get_module_loc_conf(cf, ngx_http_core_module);
    clcf->handler = ngx_http_mcp_auth_metadata_handler;
    alcf->metadata = 1;

    return NGX_CONF_OK;
}
