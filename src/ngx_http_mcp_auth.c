
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


#include "ngx_http_mcp_internal.h"
#include "ngx_http_mcp_auth.h"
#include "ngx_http_mcp_jwt.h"

#include <openssl/crypto.h>


#define NGX_HTTP_MCP_AUTH_ZONE          "mcp_auth_jwks"
#define NGX_HTTP_MCP_AUTH_ZONE_SIZE     (1024 * 1024)
#define NGX_HTTP_MCP_AUTH_WELL_KNOWN    "/.well-known/oauth-protected-resource"

#define NGX_HTTP_MCP_AUTH_VERIFIED      1024   /* per location, a power
                                                   of 2 */

#define NGX_HTTP_MCP_ROLE_NONE          0
#define NGX_HTTP_MCP_ROLE_SERVICE       1
#define NGX_HTTP_MCP_ROLE_VIEWER        2
#define NGX_HTTP_MCP_ROLE_DEVELOPER     3
#define NGX_HTTP_MCP_ROLE_ADMIN         4


typedef struct {
    u_char                     digest[32];   /* SHA-256 of the key */
    ngx_str_t                  subject;
    ngx_str_t                  role;
    ngx_array_t               *scopes;       /* ngx_str_t */
} ngx_http_mcp_apikey_t;


/* a fetched JWKS in the zone */
typedef struct ngx_http_mcp_jwks_node_s  ngx_http_mcp_jwks_node_t;

struct ngx_http_mcp_jwks_node_s {
    ngx_http_mcp_jwks_node_t  *next;
    ngx_uint_t                 gen;
    time_t                     fetched;      /* 0: never */
    time_t                     tried;        /* last fetch started */
    u_char                    *data;
    size_t                     len;
    size_t                     uri_len;
    u_char                     uri[1];
};

typedef struct {
    ngx_http_mcp_jwks_node_t  *nodes;
    ngx_uint_t                 gen;
} ngx_http_mcp_jwks_sh_t;

typedef struct {
    ngx_http_mcp_jwks_sh_t    *sh;
    ngx_slab_pool_t           *shpool;
} ngx_http_mcp_jwks_zone_t;


/* a worker's parsed copy of a fetched set */
typedef struct {
    ngx_pool_t                *pool;
    ngx_array_t               *keys;         /* ngx_http_mcp_jwk_t */
    ngx_uint_t                 gen;
} ngx_http_mcp_jwks_cache_t;


/*
 * Tokens a worker has accepted, with what it learnt of them: a client
 * sends the same token with every request, and parsing and checking it
 * cost far more than finding it here.  An entry lasts until the token
 * expires or the key set changes; a token seen again before its nbf was
 * never accepted, so never cached.
 */
typedef struct {
    uint32_t                   hash;         /* of the token */
    time_t                     until;        /* the token's exp */
    ngx_uint_t                 gen;          /* of the fetched set */
    u_char                    *data;         /* ngx_alloc(): all below */
    u_char                    *token;
    size_t                     token_len;
    ngx_str_t                  subject;
    ngx_str_t                  issuer;
    ngx_str_t                  role;
    ngx_str_t                 *scopes;
    ngx_uint_t                 nscopes;
    u_char                     binding[NGX_HTTP_MCP_AUTH_BINDING_LEN];
} ngx_http_mcp_verified_t;


typedef struct {
    ngx_str_t                  realm;        /* empty: off */
    ngx_str_t                  resource;
    ngx_str_t                  metadata_url;
    ngx_str_t                  audience;     /* as configured */
    ngx_str_t                  accept_aud;   /* it, or the resource */
    ngx_array_t               *issuers;      /* ngx_str_t */
    ngx_array_t               *servers;      /* ngx_str_t */
    ngx_array_t               *scopes;       /* ngx_str_t */
    ngx_array_t               *tool_scopes;  /* ngx_keyval_t */
    ngx_str_t                  role_claim;
    time_t                     leeway;
    ngx_array_t               *file_keys;    /* ngx_http_mcp_jwk_t */
    ngx_str_t                  key_request;
    time_t                     key_cache;
    time_t                     key_refresh;
    ngx_shm_zone_t            *zone;
    ngx_http_mcp_jwks_cache_t *cache;
    ngx_http_mcp_verified_t   *verified;     /* NGX_HTTP_MCP_AUTH_VERIFIED */
    ngx_array_t               *api_keys;     /* ngx_http_mcp_apikey_t */
    ngx_flag_t                 passthrough;
    ngx_uint_t                 max_depth;
    size_t                     max_string;
} ngx_http_mcp_auth_loc_conf_t;


typedef struct {
    ngx_http_mcp_auth_t        auth;
    ngx_http_request_t        *subrequest;
    ngx_int_t                  status;       /* the subrequest's */
    unsigned                   fetching:1;
    unsigned                   done:1;
    unsigned                   fetched:1;
    unsigned                   decided:1;
} ngx_http_mcp_auth_ctx_t;


static ngx_int_t ngx_http_mcp_auth_handler(ngx_http_request_t *r);
static ngx_int_t ngx_http_mcp_auth_authenticate(ngx_http_request_t *r,
    ngx_http_mcp_auth_ctx_t *ctx);
static ngx_int_t ngx_http_mcp_auth_token(ngx_http_request_t *r,
    ngx_str_t *token, ngx_uint_t *apikey);
static ngx_int_t ngx_http_mcp_auth_apikey(ngx_http_request_t *r,
    ngx_http_mcp_auth_ctx_t *ctx, ngx_str_t *key);
static ngx_int_t ngx_http_mcp_auth_jwt(ngx_http_request_t *r,
    ngx_http_mcp_auth_ctx_t *ctx, ngx_str_t *token);
static ngx_http_mcp_verified_t *ngx_http_mcp_auth_known(
    ngx_http_mcp_auth_loc_conf_t *alcf, ngx_str_t *token, uint32_t *hash);
static ngx_int_t ngx_http_mcp_auth_recall(ngx_http_request_t *r,
    ngx_http_mcp_auth_t *auth, ngx_http_mcp_verified_t *v);
static void ngx_http_mcp_auth_remember(ngx_http_mcp_verified_t *v,
    uint32_t hash, ngx_str_t *token, ngx_http_mcp_auth_t *auth,
    time_t until, ngx_uint_t gen, ngx_log_t *log);
static ngx_int_t ngx_http_mcp_auth_claims(ngx_http_request_t *r,
    ngx_http_mcp_auth_t *auth, ngx_http_mcp_jwt_t *jwt);
static ngx_int_t ngx_http_mcp_auth_scope_list(ngx_pool_t *pool,
    ngx_array_t *scopes, u_char *p, size_t len);
static ngx_int_t ngx_http_mcp_auth_done(ngx_http_request_t *r,
    ngx_http_mcp_auth_t *auth);
static ngx_int_t ngx_http_mcp_auth_refuse(ngx_http_request_t *r,
    ngx_http_mcp_auth_t *auth, ngx_uint_t status, const char *result,
    const char *error, const char *description);
static void ngx_http_mcp_auth_strip(ngx_http_request_t *r);
static ngx_uint_t ngx_http_mcp_auth_role_rank(ngx_str_t *role);
static ngx_uint_t ngx_http_mcp_auth_has_scope(ngx_http_mcp_auth_t *auth,
    ngx_str_t *scope);
static ngx_int_t ngx_http_mcp_auth_fetch(ngx_http_request_t *r,
    ngx_http_mcp_auth_ctx_t *ctx);
static ngx_int_t ngx_http_mcp_auth_fetch_done(ngx_http_request_t *r,
    void *data, ngx_int_t rc);
static void ngx_http_mcp_auth_store(ngx_http_request_t *r,
    ngx_http_mcp_auth_loc_conf_t *alcf, ngx_http_mcp_auth_ctx_t *ctx);
static ngx_array_t *ngx_http_mcp_auth_keys(ngx_http_request_t *r,
    ngx_http_mcp_auth_loc_conf_t *alcf, ngx_uint_t *stale,
    ngx_uint_t *refetch);
static ngx_http_mcp_jwks_node_t *ngx_http_mcp_auth_node(
    ngx_http_mcp_jwks_zone_t *zctx, ngx_str_t *uri, ngx_uint_t create);
static ngx_int_t ngx_http_mcp_auth_metadata_handler(ngx_http_request_t *r);
static ngx_int_t ngx_http_mcp_auth_check_json(cJSON *json, ngx_uint_t depth,
    ngx_uint_t max_depth, size_t max_string, const char **error);

static ngx_int_t ngx_http_mcp_auth_preconfiguration(ngx_conf_t *cf);
static ngx_int_t ngx_http_mcp_auth_validation_set(ngx_conf_t *cf,
    ngx_http_mcp_set_t *set);
static ngx_int_t ngx_http_mcp_auth_validated(ngx_http_mcp_call_t *call);
static ngx_int_t ngx_http_mcp_auth_add_variables(ngx_conf_t *cf);
static ngx_int_t ngx_http_mcp_auth_variable(ngx_http_request_t *r,
    ngx_http_variable_value_t *v, uintptr_t data);
static ngx_int_t ngx_http_mcp_auth_init(ngx_conf_t *cf);
static void *ngx_http_mcp_auth_create_loc_conf(ngx_conf_t *cf);
static char *ngx_http_mcp_auth_merge_loc_conf(ngx_conf_t *cf, void *parent,
    void *child);
static char *ngx_http_mcp_auth_jwt_slot(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
static ngx_int_t ngx_http_mcp_auth_read_file(ngx_conf_t *cf,
    ngx_str_t *name, size_t max, const char *what, ngx_str_t *text);
static char *ngx_http_mcp_auth_key_file(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
static char *ngx_http_mcp_auth_key_request(ngx_conf_t *cf,
    ngx_command_t *cmd, void *conf);
static char *ngx_http_mcp_auth_key_cache(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
static char *ngx_http_mcp_auth_tool_scope(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
static char *ngx_http_mcp_auth_api_keys(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
static char *ngx_http_mcp_auth_metadata(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
static char *ngx_http_mcp_auth_str_array(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
static ngx_int_t ngx_http_mcp_auth_init_zone(ngx_shm_zone_t *shm_zone,
    void *data);
static void ngx_http_mcp_auth_cache_cleanup(void *data);
static void ngx_http_mcp_auth_verified_cleanup(void *data);


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
      NULL },

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

      ngx_null_command
};


static ngx_http_module_t  ngx_http_mcp_auth_module_ctx = {
    ngx_http_mcp_auth_preconfiguration,    /* preconfiguration */
    ngx_http_mcp_auth_init,                /* postconfiguration */

    NULL,                                  /* create main configuration */
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


static ngx_str_t  ngx_http_mcp_auth_roles[] = {
    ngx_null_string,
    ngx_string("service"),
    ngx_string("viewer"),
    ngx_string("developer"),
    ngx_string("admin")
};


/* ------------------------------------------------------------------------
 * The access phase
 */

static ngx_int_t
ngx_http_mcp_auth_handler(ngx_http_request_t *r)
{
    ngx_int_t                      rc;
    ngx_http_mcp_auth_ctx_t       *ctx;
    ngx_http_core_loc_conf_t      *clcf;
    ngx_http_mcp_auth_loc_conf_t  *alcf;

    alcf = ngx_http_get_module_loc_conf(r, ngx_http_mcp_auth_module);

    if (alcf->realm.len == 0 || r != r->main) {
        return NGX_DECLINED;
    }

    /* the metadata is what a client without a token reads first */
    clcf = ngx_http_get_module_loc_conf(r, ngx_http_core_module);

    if (clcf->handler == ngx_http_mcp_auth_metadata_handler) {
        return NGX_DECLINED;
    }

    ctx = ngx_http_get_module_ctx(r, ngx_http_mcp_auth_module);

    if (ctx == NULL) {
        ctx = ngx_pcalloc(r->pool, sizeof(ngx_http_mcp_auth_ctx_t));
        if (ctx == NULL) {
            return NGX_ERROR;
        }

        ctx->auth.conf = alcf;
        ngx_str_set(&ctx->auth.result, "none");

        ngx_http_set_ctx(r, ctx, ngx_http_mcp_auth_module);

    } else if (ctx->decided) {
        return NGX_OK;

    } else if (ctx->fetching) {
        if (!ctx->done) {
            return NGX_AGAIN;
        }

        ctx->fetching = 0;
        ctx->fetched = 1;

        ngx_http_mcp_auth_store(r, alcf, ctx);
    }

    rc = ngx_http_mcp_auth_authenticate(r, ctx);

    /* NGX_DONE: refused and finalized, the request may be gone */
    if (rc == NGX_OK) {
        ctx->decided = 1;
    }

    return rc;
}


/*
 * NGX_OK (authenticated), NGX_AGAIN (a key set is being fetched),
 * NGX_DONE (refused, the refusal sent), NGX_ERROR.
 */

static ngx_int_t
ngx_http_mcp_auth_authenticate(ngx_http_request_t *r,
    ngx_http_mcp_auth_ctx_t *ctx)
{
    ngx_int_t   rc;
    ngx_str_t   token;
    ngx_uint_t  apikey;

    rc = ngx_http_mcp_auth_token(r, &token, &apikey);

    if (rc == NGX_DECLINED) {
        return ngx_http_mcp_auth_refuse(r, &ctx->auth, NGX_HTTP_BAD_REQUEST,
                   "query_token", "invalid_request",
                   "access tokens are not accepted in the query string");
    }

    if (token.len == 0) {
        return ngx_http_mcp_auth_refuse(r, &ctx->auth,
                                        NGX_HTTP_UNAUTHORIZED, "missing",
                                        NULL, NULL);
    }

    if (apikey) {
        return ngx_http_mcp_auth_apikey(r, ctx, &token);
    }

    return ngx_http_mcp_auth_jwt(r, ctx, &token);
}


/*
 * The token of the Authorization header ("Bearer"), or of X-API-Key.
 * NGX_DECLINED when the query string carries one: RFC 6750's URI query
 * method is forbidden by the MCP authorization spec.
 */

static ngx_int_t
ngx_http_mcp_auth_token(ngx_http_request_t *r, ngx_str_t *token,
    ngx_uint_t *apikey)
{
    u_char           *p, *end;
    ngx_str_t         value;
    ngx_table_elt_t  *h;

    ngx_str_null(token);
    *apikey = 0;

    if (r->args.len) {
        p = r->args.data;
        end = p + r->args.len;

        while (p < end) {
            if ((size_t) (end - p) >= sizeof("access_token=") - 1
                && ngx_strncmp(p, "access_token=",
                               sizeof("access_token=") - 1) == 0)
            {
                return NGX_DECLINED;
            }

            p = ngx_strlchr(p, end, '&');
            if (p == NULL) {
                break;
            }

            p++;
        }
    }

    h = r->headers_in.authorization;

    if (h != NULL) {
        value = h->value;

        if (value.len < sizeof("Bearer ") - 1
            || ngx_strncasecmp(value.data, (u_char *) "Bearer ",
                               sizeof("Bearer ") - 1) != 0)
        {
            return NGX_OK;
        }

        value.data += sizeof("Bearer ") - 1;
        value.len -= sizeof("Bearer ") - 1;

        while (value.len && value.data[0] == ' ') {
            value.data++;
            value.len--;
        }

        while (value.len && value.data[value.len - 1] == ' ') {
            value.len--;
        }

        *token = value;

        /* a JWT has two dots; anything else may be an API key */
        *apikey = (ngx_strlchr(value.data, value.data + value.len, '.')
                   == NULL);

        return NGX_OK;
    }

    h = ngx_http_mcp_header_in(r, "X-API-Key", sizeof("X-API-Key") - 1);

    if (h != NULL) {
        *token = h->value;
        *apikey = 1;
    }

    return NGX_OK;
}


static ngx_int_t
ngx_http_mcp_auth_apikey(ngx_http_request_t *r, ngx_http_mcp_auth_ctx_t *ctx,
    ngx_str_t *key)
{
    u_char                         digest[32];
    ngx_uint_t                     i;
    ngx_http_mcp_auth_t           *auth;
    ngx_http_mcp_apikey_t         *k;
    ngx_http_mcp_auth_loc_conf_t  *alcf;

    auth = &ctx->auth;
    alcf = auth->conf;

    if (alcf->api_keys == NULL) {
        return ngx_http_mcp_auth_refuse(r, auth, NGX_HTTP_UNAUTHORIZED,
                                        "invalid", "invalid_token",
                                        "malformed token");
    }

    if (ngx_http_mcp_sha256(key->data, key->len, digest) != NGX_OK) {
        return NGX_ERROR;
    }

    k = alcf->api_keys->elts;

    for (i = 0; i < alcf->api_keys->nelts; i++) {
        if (CRYPTO_memcmp(k[i].digest, digest, sizeof(digest)) != 0) {
            continue;
        }

        auth->subject = k[i].subject;
        auth->role = k[i].role;
        auth->scopes = k[i].scopes;
        ngx_str_set(&auth->issuer, "api-key");
        ngx_str_set(&auth->result, "ok");

        return ngx_http_mcp_auth_done(r, auth);
    }

    return ngx_http_mcp_auth_refuse(r, auth, NGX_HTTP_UNAUTHORIZED,
                                    "invalid", "invalid_token",
                                    "unknown API key");
}


static ngx_int_t
ngx_http_mcp_auth_jwt(ngx_http_request_t *r, ngx_http_mcp_auth_ctx_t *ctx,
    ngx_str_t *token)
{
    uint32_t                       hash;
    cJSON                         *exp;
    ngx_int_t                      rc;
    ngx_uint_t                     stale, refetch, gen;
    const char                    *error;
    ngx_array_t                   *keys;
    ngx_http_mcp_jwt_t             jwt;
    ngx_http_mcp_verified_t       *v;
    ngx_http_mcp_auth_t           *auth;
    ngx_http_mcp_auth_loc_conf_t  *alcf;

    auth = &ctx->auth;
    alcf = auth->conf;

    v = ngx_http_mcp_auth_known(alcf, token, &hash);

    if (v->data != NULL && v->hash == hash && v->token_len == token->len
        && v->until >= ngx_time()
        && v->gen == ((alcf->cache != NULL) ? alcf->cache->gen : 0)
        && CRYPTO_memcmp(v->token, token->data, token->len) == 0)
    {
        return ngx_http_mcp_auth_recall(r, auth, v);
    }

    if (ngx_http_mcp_jwt_parse(r->pool, token, &jwt, &error) != NGX_OK) {
        return ngx_http_mcp_auth_refuse(r, auth, NGX_HTTP_UNAUTHORIZED,
                                        "invalid", "invalid_token", error);
    }

    rc = NGX_DECLINED;
    error = "no key for the token";

    if (alcf->file_keys != NULL) {
        rc = ngx_http_mcp_jwt_verify(&jwt, alcf->file_keys, &error);
    }

    if (rc != NGX_OK && rc != NGX_ERROR && alcf->key_request.len) {
        keys = ngx_http_mcp_auth_keys(r, alcf, &stale, &refetch);

        if ((keys == NULL || stale) && !ctx->fetched) {
            return ngx_http_mcp_auth_fetch(r, ctx);
        }

        rc = ngx_http_mcp_jwt_verify(&jwt, keys, &error);

        /* a key rotated in: refetch, but not more often than allowed */
        if (rc == NGX_ABORT && refetch && !ctx->fetched) {
            return ngx_http_mcp_auth_fetch(r, ctx);
        }
    }

    if (rc == NGX_ERROR) {
        ngx_log_error(NGX_LOG_ERR, r->connection->log, 0,
                      "mcp auth: token verification failed");
        return NGX_ERROR;
    }

    if (rc != NGX_OK) {
        return ngx_http_mcp_auth_refuse(r, auth, NGX_HTTP_UNAUTHORIZED,
                                        "invalid", "invalid_token", error);
    }

    if (ngx_http_mcp_jwt_check_claims(&jwt, ngx_time(), alcf->leeway,
                                      alcf->issuers, &alcf->accept_aud,
                                      &error)
        != NGX_OK)
    {
        return ngx_http_mcp_auth_refuse(r, auth, NGX_HTTP_UNAUTHORIZED,
                   ngx_strstr(error, "expired") ? "expired" : "invalid",
                   "invalid_token", error);
    }

    if (ngx_http_mcp_auth_claims(r, auth, &jwt) != NGX_OK) {
        return NGX_ERROR;
    }

    ngx_str_set(&auth->result, "ok");

    rc = ngx_http_mcp_auth_done(r, auth);

    if (rc == NGX_OK) {
        /* remembered until the token expires, or the key set changes */
        exp = cJSON_GetObjectItemCaseSensitive(jwt.claims, "exp");
        gen = (alcf->cache != NULL) ? alcf->cache->gen : 0;

        ngx_http_mcp_auth_remember(v, hash, token, auth,
                                   (time_t) exp->valuedouble + alcf->leeway,
                                   gen, r->connection->log);
    }

    return rc;
}


static ngx_http_mcp_verified_t *
ngx_http_mcp_auth_known(ngx_http_mcp_auth_loc_conf_t *alcf,
    ngx_str_t *token, uint32_t *hash)
{
    size_t  n;

    /*
     * The end of a JWS is its signature, as good as random: enough to
     * pick the slot, at a fraction of hashing a long token.  The whole
     * token is compared before an entry counts.
     */
    n = ngx_min(token->len, 32);
    *hash = ngx_crc32_short(token->data + token->len - n, n);

    return &alcf->verified[*hash & (NGX_HTTP_MCP_AUTH_VERIFIED - 1)];
}


/* a known token: what was learnt of it, copied for this request */

static ngx_int_t
ngx_http_mcp_auth_recall(ngx_http_request_t *r, ngx_http_mcp_auth_t *auth,
    ngx_http_mcp_verified_t *v)
{
    ngx_uint_t   i;
    ngx_str_t   *scope;

    auth->subject.len = v->subject.len;
    auth->subject.data = ngx_pstrdup(r->pool, &v->subject);
    auth->issuer.len = v->issuer.len;
    auth->issuer.data = ngx_pstrdup(r->pool, &v->issuer);
    auth->role = v->role;

    auth->scopes = ngx_array_create(r->pool, v->nscopes ? v->nscopes : 1,
                                    sizeof(ngx_str_t));

    if (auth->subject.data == NULL || auth->issuer.data == NULL
        || auth->scopes == NULL)
    {
        return NGX_ERROR;
    }

    for (i = 0; i < v->nscopes; i++) {
        scope = ngx_array_push(auth->scopes);
        if (scope == NULL) {
            return NGX_ERROR;
        }

        scope->len = v->scopes[i].len;
        scope->data = ngx_pstrdup(r->pool, &v->scopes[i]);
        if (scope->data == NULL) {
            return NGX_ERROR;
        }
    }

    ngx_memcpy(auth->binding, v->binding, NGX_HTTP_MCP_AUTH_BINDING_LEN);
    ngx_str_set(&auth->result, "ok");

    auth->authenticated = 1;

    if (!((ngx_http_mcp_auth_loc_conf_t *) auth->conf)->passthrough) {
        ngx_http_mcp_auth_strip(r);
    }

    return NGX_OK;
}


static void
ngx_http_mcp_auth_remember(ngx_http_mcp_verified_t *v, uint32_t hash,
    ngx_str_t *token, ngx_http_mcp_auth_t *auth, time_t until,
    ngx_uint_t gen, ngx_log_t *log)
{
    u_char      *p;
    size_t       len;
    ngx_uint_t   i, n;
    ngx_str_t   *scopes;

    n = auth->scopes->nelts;
    scopes = auth->scopes->elts;

    len = n * sizeof(ngx_str_t) + token->len + auth->subject.len
          + auth->issuer.len;

    for (i = 0; i < n; i++) {
        len += scopes[i].len;
    }

    if (v->data != NULL) {
        ngx_free(v->data);
        v->data = NULL;
    }

    /* the ngx_str_t array first: aligned */
    p = ngx_alloc(len, log);
    if (p == NULL) {
        return;
    }

    v->data = p;
    v->scopes = (ngx_str_t *) p;
    v->nscopes = n;
    p += n * sizeof(ngx_str_t);

    v->token = p;
    p = ngx_cpymem(p, token->data, token->len);

    v->subject.data = p;
    v->subject.len = auth->subject.len;
    p = ngx_cpymem(p, auth->subject.data, auth->subject.len);

    v->issuer.data = p;
    v->issuer.len = auth->issuer.len;
    p = ngx_cpymem(p, auth->issuer.data, auth->issuer.len);

    for (i = 0; i < n; i++) {
        v->scopes[i].data = p;
        v->scopes[i].len = scopes[i].len;
        p = ngx_cpymem(p, scopes[i].data, scopes[i].len);
    }

    v->hash = hash;
    v->token_len = token->len;
    v->until = until;
    v->gen = gen;
    v->role = auth->role;
    ngx_memcpy(v->binding, auth->binding, NGX_HTTP_MCP_AUTH_BINDING_LEN);
}


/* subject, issuer, scopes and role out of verified claims */

static ngx_int_t
ngx_http_mcp_auth_claims(ngx_http_request_t *r, ngx_http_mcp_auth_t *auth,
    ngx_http_mcp_jwt_t *jwt)
{
    cJSON                         *v, *item;
    ngx_str_t                      s, *scope;
    ngx_uint_t                     rank, best;
    ngx_http_mcp_auth_loc_conf_t  *alcf;

    alcf = auth->conf;

    v = cJSON_GetObjectItemCaseSensitive(jwt->claims, "sub");
    auth->subject.data = (u_char *) v->valuestring;
    auth->subject.len = ngx_strlen(v->valuestring);

    v = cJSON_GetObjectItemCaseSensitive(jwt->claims, "iss");
    auth->issuer.data = (u_char *) v->valuestring;
    auth->issuer.len = ngx_strlen(v->valuestring);

    auth->scopes = ngx_array_create(r->pool, 4, sizeof(ngx_str_t));
    if (auth->scopes == NULL) {
        return NGX_ERROR;
    }

    v = cJSON_GetObjectItemCaseSensitive(jwt->claims, "scope");

    if (v == NULL) {
        v = cJSON_GetObjectItemCaseSensitive(jwt->claims, "scp");
    }

    if (cJSON_IsString(v)) {
        if (ngx_http_mcp_auth_scope_list(r->pool, auth->scopes,
                                         (u_char *) v->valuestring,
                                         ngx_strlen(v->valuestring))
            != NGX_OK)
        {
            return NGX_ERROR;
        }

    } else if (cJSON_IsArray(v)) {
        cJSON_ArrayForEach(item, v) {
            if (!cJSON_IsString(item)) {
                continue;
            }

            scope = ngx_array_push(auth->scopes);
            if (scope == NULL) {
                return NGX_ERROR;
            }

            scope->data = (u_char *) item->valuestring;
            scope->len = ngx_strlen(item->valuestring);
        }
    }

    /* the strongest role the claim names */
    v = cJSON_GetObjectItemCaseSensitive(jwt->claims,
                                         (char *) alcf->role_claim.data);
    best = NGX_HTTP_MCP_ROLE_NONE;

    if (cJSON_IsString(v) || cJSON_IsArray(v)) {
        item = cJSON_IsString(v) ? v : v->child;

        for ( /* void */ ; item; item = cJSON_IsString(v) ? NULL : item->next)
        {
            if (!cJSON_IsString(item)) {
                continue;
            }

            s.data = (u_char *) item->valuestring;
            s.len = ngx_strlen(item->valuestring);

            rank = ngx_http_mcp_auth_role_rank(&s);

            if (rank > best) {
                best = rank;
            }
        }
    }

    auth->role = ngx_http_mcp_auth_roles[best];

    return NGX_OK;
}


static ngx_int_t
ngx_http_mcp_auth_scope_list(ngx_pool_t *pool, ngx_array_t *scopes,
    u_char *p, size_t len)
{
    u_char     *end, *q;
    ngx_str_t  *scope;

    end = p + len;

    while (p < end) {
        while (p < end && *p == ' ') {
            p++;
        }

        q = p;

        while (q < end && *q != ' ') {
            q++;
        }

        if (q > p) {
            scope = ngx_array_push(scopes);
            if (scope == NULL) {
                return NGX_ERROR;
            }

            scope->data = p;
            scope->len = q - p;
        }

        p = q;
    }

    return NGX_OK;
}


/* the caller is known: bind, and keep the token from upstreams */

static ngx_int_t
ngx_http_mcp_auth_done(ngx_http_request_t *r, ngx_http_mcp_auth_t *auth)
{
    u_char                        *p, *buf;
    ngx_http_mcp_auth_loc_conf_t  *alcf;

    alcf = auth->conf;

    buf = ngx_pnalloc(r->pool, auth->issuer.len + 1 + auth->subject.len);
    if (buf == NULL) {
        return NGX_ERROR;
    }

    /* the issuer cannot hold a NUL: no two pairs give the same text */
    p = ngx_cpymem(buf, auth->issuer.data, auth->issuer.len);
    *p++ = '\0';
    p = ngx_cpymem(p, auth->subject.data, auth->subject.len);

    if (ngx_http_mcp_sha256(buf, p - buf, auth->binding) != NGX_OK) {
        return NGX_ERROR;
    }

    auth->authenticated = 1;

    if (!alcf->passthrough) {
        ngx_http_mcp_auth_strip(r);
    }

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "mcp auth: subject \"%V\", role \"%V\"",
                   &auth->subject, &auth->role);

    return NGX_OK;
}


/*
 * Upstreams of the location (mcp_pass, proxy_pass) must not see the
 * client's token: the header is renamed to one nobody reads, and
 * proxy_pass drops it because its value is empty.
 */

static void
ngx_http_mcp_auth_strip(ngx_http_request_t *r)
{
    ngx_uint_t        i;
    ngx_list_part_t  *part;
    ngx_table_elt_t  *h;

    part = &r->headers_in.headers.part;
    h = part->elts;

    for (i = 0; /* void */ ; i++) {

        if (i >= part->nelts) {
            if (part->next == NULL) {
                break;
            }

            part = part->next;
            h = part->elts;
            i = 0;
        }

        if ((h[i].key.len == sizeof("Authorization") - 1
             && ngx_strncasecmp(h[i].key.data, (u_char *) "Authorization",
                                h[i].key.len) == 0)
            || (h[i].key.len == sizeof("X-API-Key") - 1
                && ngx_strncasecmp(h[i].key.data, (u_char *) "X-API-Key",
                                   h[i].key.len) == 0))
        {
            h[i].value.len = 0;
            h[i].value.data = (u_char *) "";
        }
    }

    r->headers_in.authorization = NULL;
}


/*
 * Sends the refusal: 400, 401 or 403 with a WWW-Authenticate challenge
 * and a JSON-RPC error body.
 */

static ngx_int_t
ngx_http_mcp_auth_refuse(ngx_http_request_t *r, ngx_http_mcp_auth_t *auth,
    ngx_uint_t status, const char *result, const char *error,
    const char *description)
{
    u_char                        *p, *msg;
    size_t                         len;
    ngx_int_t                      rc;
    ngx_str_t                      value, *s;
    ngx_uint_t                     i;
    ngx_http_mcp_auth_loc_conf_t  *alcf;

    alcf = auth->conf;

    auth->result.data = (u_char *) result;
    auth->result.len = ngx_strlen(result);

    len = sizeof("Bearer realm=\"\", error=\"\", error_description=\"\", "
                 "resource_metadata=\"\", scope=\"\"") - 1
          + alcf->realm.len + alcf->metadata_url.len + 64
          + (description ? ngx_strlen(description) : 0);

    s = alcf->scopes ? alcf->scopes->elts : NULL;

    for (i = 0; alcf->scopes && i < alcf->scopes->nelts; i++) {
        len += s[i].len + 1;
    }

    value.data = ngx_pnalloc(r->pool, len);
    if (value.data == NULL) {
        return NGX_ERROR;
    }

    p = ngx_sprintf(value.data, "Bearer realm=\"%V\"", &alcf->realm);

    if (error != NULL) {
        p = ngx_sprintf(p, ", error=\"%s\"", error);
    }

    if (description != NULL) {
        p = ngx_sprintf(p, ", error_description=\"%s\"", description);
    }

    p = ngx_sprintf(p, ", resource_metadata=\"%V\"", &alcf->metadata_url);

    if (status == NGX_HTTP_UNAUTHORIZED && alcf->scopes != NULL) {
        p = ngx_cpymem(p, ", scope=\"", sizeof(", scope=\"") - 1);

        for (i = 0; i < alcf->scopes->nelts; i++) {
            if (i) {
                *p++ = ' ';
            }

            p = ngx_cpymem(p, s[i].data, s[i].len);
        }

        *p++ = '"';
    }

    value.len = p - value.data;

    if (ngx_http_mcp_header_out(r, "WWW-Authenticate", &value) != NGX_OK) {
        return NGX_ERROR;
    }

    msg = ngx_pnalloc(r->pool, 128 + (description ? ngx_strlen(description)
                                                   : 0));
    if (msg == NULL) {
        return NGX_ERROR;
    }

    p = ngx_sprintf(msg, "%s%s%s%Z",
                    (status == NGX_HTTP_BAD_REQUEST) ? "Bad Request"
                                                     : "Unauthorized",
                    description ? ": " : ": a bearer token is required",
                    description ? description : "");

    rc = ngx_http_discard_request_body(r);

    if (rc != NGX_OK) {
        r->keepalive = 0;
    }

    rc = ngx_http_mcp_send_error(r, status, NULL,
                                 NGX_HTTP_MCP_INVALID_REQUEST,
                                 (const char *) msg);

    ngx_http_finalize_request(r, rc);

    return NGX_DONE;
}


/* ------------------------------------------------------------------------
 * Keys from a subrequest, shared through the zone
 */

static ngx_int_t
ngx_http_mcp_auth_fetch(ngx_http_request_t *r, ngx_http_mcp_auth_ctx_t *ctx)
{
    ngx_http_request_t            *sr;
    ngx_http_post_subrequest_t    *ps;
    ngx_http_mcp_jwks_zone_t      *zctx;
    ngx_http_mcp_jwks_node_t      *node;
    ngx_http_mcp_auth_loc_conf_t  *alcf;

    alcf = ctx->auth.conf;
    zctx = alcf->zone->data;

    ngx_shmtx_lock(&zctx->shpool->mutex);

    node = ngx_http_mcp_auth_node(zctx, &alcf->key_request, 1);

    if (node != NULL) {
        node->tried = ngx_time();
    }

    ngx_shmtx_unlock(&zctx->shpool->mutex);

    ps = ngx_palloc(r->pool, sizeof(ngx_http_post_subrequest_t));
    if (ps == NULL) {
        return NGX_ERROR;
    }

    ps->handler = ngx_http_mcp_auth_fetch_done;
    ps->data = ctx;

    if (ngx_http_subrequest(r, &alcf->key_request, NULL, &sr, ps,
                            NGX_HTTP_SUBREQUEST_WAITED
                            |NGX_HTTP_SUBREQUEST_IN_MEMORY)
        != NGX_OK)
    {
        return NGX_ERROR;
    }

    /* no body to read, and none to pass on */
    sr->request_body = ngx_pcalloc(r->pool, sizeof(ngx_http_request_body_t));
    if (sr->request_body == NULL) {
        return NGX_ERROR;
    }

    sr->method = NGX_HTTP_GET;
    ngx_str_set(&sr->method_name, "GET");

    ctx->subrequest = sr;
    ctx->fetching = 1;
    ctx->done = 0;

    ngx_log_debug1(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "mcp auth: fetching keys from \"%V\"",
                   &alcf->key_request);

    return NGX_AGAIN;
}


static ngx_int_t
ngx_http_mcp_auth_fetch_done(ngx_http_request_t *r, void *data, ngx_int_t rc)
{
    ngx_http_mcp_auth_ctx_t  *ctx = data;

    ctx->done = 1;
    ctx->status = r->headers_out.status;

    return rc;
}


/* puts a fetched set that parses into the zone */

static void
ngx_http_mcp_auth_store(ngx_http_request_t *r,
    ngx_http_mcp_auth_loc_conf_t *alcf, ngx_http_mcp_auth_ctx_t *ctx)
{
    u_char                    *data;
    size_t                     len;
    ngx_buf_t                 *b;
    ngx_pool_t                *pool;
    ngx_http_request_t        *sr;
    ngx_http_mcp_jwks_zone_t  *zctx;
    ngx_http_mcp_jwks_node_t  *node;

    sr = ctx->subrequest;

    if (ctx->status != NGX_HTTP_OK || sr->out == NULL
        || sr->out->buf == NULL)
    {
        ngx_log_error(NGX_LOG_ERR, r->connection->log, 0,
                      "mcp auth: key request \"%V\" failed (status %i)",
                      &alcf->key_request, ctx->status);
        return;
    }

    b = sr->out->buf;
    len = b->last - b->pos;

    /* only a set that parses replaces the one in use */
    pool = ngx_create_pool(1024, r->connection->log);
    if (pool == NULL) {
        return;
    }

    if (ngx_http_mcp_jwks_parse(pool, b->pos, len) == NULL) {
        ngx_destroy_pool(pool);
        ngx_log_error(NGX_LOG_ERR, r->connection->log, 0,
                      "mcp auth: key request \"%V\" returned no valid JWK "
                      "set", &alcf->key_request);
        return;
    }

    ngx_destroy_pool(pool);

    zctx = alcf->zone->data;

    ngx_shmtx_lock(&zctx->shpool->mutex);

    node = ngx_http_mcp_auth_node(zctx, &alcf->key_request, 1);
    data = (node != NULL) ? ngx_slab_alloc_locked(zctx->shpool, len) : NULL;

    if (data == NULL) {
        ngx_shmtx_unlock(&zctx->shpool->mutex);
        ngx_log_error(NGX_LOG_ERR, r->connection->log, 0,
                      "mcp auth: no room for a JWK set in zone \""
                      NGX_HTTP_MCP_AUTH_ZONE "\"");
        return;
    }

    if (node->data != NULL) {
        ngx_slab_free_locked(zctx->shpool, node->data);
    }

    ngx_memcpy(data, b->pos, len);

    node->data = data;
    node->len = len;
    node->fetched = ngx_time();
    node->gen = ++zctx->sh->gen;

    ngx_shmtx_unlock(&zctx->shpool->mutex);
}


/*
 * The worker's parsed copy of the location's fetched set, renewed when
 * the zone holds a newer one.  *stale: older than the cache time;
 * *refetch: an unknown kid may trigger a fetch now.
 */

static ngx_array_t *
ngx_http_mcp_auth_keys(ngx_http_request_t *r,
    ngx_http_mcp_auth_loc_conf_t *alcf, ngx_uint_t *stale,
    ngx_uint_t *refetch)
{
    time_t                      now;
    ngx_pool_t                 *pool;
    ngx_array_t                *keys;
    ngx_http_mcp_jwks_zone_t   *zctx;
    ngx_http_mcp_jwks_node_t   *node;
    ngx_http_mcp_jwks_cache_t  *cache;

    zctx = alcf->zone->data;
    cache = alcf->cache;
    now = ngx_time();

    *stale = 0;
    *refetch = 0;

    ngx_shmtx_lock(&zctx->shpool->mutex);

    node = ngx_http_mcp_auth_node(zctx, &alcf->key_request, 0);

    if (node == NULL || node->data == NULL) {
        ngx_shmtx_unlock(&zctx->shpool->mutex);
        return NULL;
    }

    /* one request of all workers refetches a stale set; others go on */
    if (now - node->fetched >= alcf->key_cache && now - node->tried >= 1) {
        *stale = 1;
    }

    *refetch = (now - node->tried >= alcf->key_refresh);

    if (cache->keys == NULL || cache->gen != node->gen) {
        pool = ngx_create_pool(2048, ngx_cycle->log);

        keys = (pool != NULL) ? ngx_http_mcp_jwks_parse(pool, node->data,
                                                        node->len)
                              : NULL;
        if (keys != NULL) {
            if (cache->pool != NULL) {
                ngx_destroy_pool(cache->pool);
            }

            cache->pool = pool;
            cache->keys = keys;
            cache->gen = node->gen;

        } else if (pool != NULL) {
            ngx_destroy_pool(pool);
        }
    }

    ngx_shmtx_unlock(&zctx->shpool->mutex);

    return cache->keys;
}


static ngx_http_mcp_jwks_node_t *
ngx_http_mcp_auth_node(ngx_http_mcp_jwks_zone_t *zctx, ngx_str_t *uri,
    ngx_uint_t create)
{
    ngx_http_mcp_jwks_node_t  *node;

    for (node = zctx->sh->nodes; node; node = node->next) {
        if (node->uri_len == uri->len
            && ngx_memcmp(node->uri, uri->data, uri->len) == 0)
        {
            return node;
        }
    }

    if (!create) {
        return NULL;
    }

    node = ngx_slab_calloc_locked(zctx->shpool,
                                  sizeof(ngx_http_mcp_jwks_node_t)
                                  + uri->len);
    if (node == NULL) {
        return NULL;
    }

    node->uri_len = uri->len;
    ngx_memcpy(node->uri, uri->data, uri->len);

    node->next = zctx->sh->nodes;
    zctx->sh->nodes = node;

    return node;
}


static ngx_int_t
ngx_http_mcp_auth_init_zone(ngx_shm_zone_t *shm_zone, void *data)
{
    ngx_http_mcp_jwks_zone_t  *octx = data;

    ngx_http_mcp_jwks_zone_t  *ctx;

    ctx = shm_zone->data;

    if (octx != NULL) {
        ctx->sh = octx->sh;
        ctx->shpool = octx->shpool;
        return NGX_OK;
    }

    ctx->shpool = (ngx_slab_pool_t *) shm_zone->shm.addr;

    if (shm_zone->shm.exists) {
        ctx->sh = ctx->shpool->data;
        return NGX_OK;
    }

    ctx->sh = ngx_slab_calloc(ctx->shpool, sizeof(ngx_http_mcp_jwks_sh_t));
    if (ctx->sh == NULL) {
        return NGX_ERROR;
    }

    ctx->shpool->data = ctx->sh;

    return NGX_OK;
}


/* ------------------------------------------------------------------------
 * What the MCP module asks
 */

ngx_http_mcp_auth_t *
ngx_http_mcp_auth_get(ngx_http_request_t *r)
{
    ngx_http_mcp_auth_ctx_t  *ctx;

    ctx = ngx_http_get_module_ctx(r->main, ngx_http_mcp_auth_module);

    if (ctx == NULL || !ctx->auth.authenticated) {
        return NULL;
    }

    return &ctx->auth;
}


/*
 * What the caller may do, copied into pool for a call that may outlive
 * the request the token came with.
 */

ngx_http_mcp_auth_t *
ngx_http_mcp_auth_copy(ngx_pool_t *pool, ngx_http_mcp_auth_t *auth)
{
    ngx_str_t            *from, *to;
    ngx_uint_t            i;
    ngx_http_mcp_auth_t  *copy;

    copy = ngx_palloc(pool, sizeof(ngx_http_mcp_auth_t));
    if (copy == NULL) {
        return NULL;
    }

    *copy = *auth;

    copy->subject.data = ngx_pstrdup(pool, &auth->subject);
    copy->issuer.data = ngx_pstrdup(pool, &auth->issuer);
    copy->role.data = ngx_pstrdup(pool, &auth->role);
    copy->result.data = ngx_pstrdup(pool, &auth->result);

    if (copy->subject.data == NULL || copy->issuer.data == NULL
        || copy->role.data == NULL || copy->result.data == NULL)
    {
        return NULL;
    }

    if (auth->scopes == NULL) {
        return copy;
    }

    copy->scopes = ngx_array_create(pool, ngx_max(auth->scopes->nelts, 1),
                                    sizeof(ngx_str_t));
    if (copy->scopes == NULL) {
        return NULL;
    }

    from = auth->scopes->elts;

    for (i = 0; i < auth->scopes->nelts; i++) {
        to = ngx_array_push(copy->scopes);
        if (to == NULL) {
            return NULL;
        }

        to->len = from[i].len;
        to->data = ngx_pstrdup(pool, &from[i]);

        if (to->data == NULL) {
            return NULL;
        }
    }

    return copy;
}


ngx_uint_t
ngx_http_mcp_auth_tool_scoped(ngx_http_mcp_auth_t *auth)
{
    ngx_http_mcp_auth_loc_conf_t  *alcf;

    alcf = auth->conf;

    return alcf->tool_scopes != NULL;
}


ngx_int_t
ngx_http_mcp_auth_permits(ngx_http_mcp_auth_t *auth, const char *capability,
    ngx_str_t *tool, ngx_str_t *missing_scope)
{
    u_char                        *p;
    ngx_str_t                      scope;
    ngx_uint_t                     i, rank, granted;
    ngx_keyval_t                  *kv;
    ngx_http_mcp_auth_loc_conf_t  *alcf;

    static ngx_str_t  caps[] = {
        ngx_string("mcp:tools"),
        ngx_string("mcp:resources"),
        ngx_string("mcp:prompts")
    };

    static ngx_str_t  alts[] = {
        ngx_string("tools:execute"),
        ngx_string("resources:read"),
        ngx_string("prompts:get")
    };

    if (auth == NULL) {
        return NGX_OK;
    }

    alcf = auth->conf;
    rank = ngx_http_mcp_auth_role_rank(&auth->role);

    if (rank == NGX_HTTP_MCP_ROLE_ADMIN) {
        return NGX_OK;
    }

    p = (u_char *) capability;

    i = (p[0] == 't') ? 0 : (p[0] == 'r') ? 1 : 2;

    /* viewer reads, developer also calls tools, service only calls */
    granted = (rank == NGX_HTTP_MCP_ROLE_DEVELOPER)
              || (rank == NGX_HTTP_MCP_ROLE_VIEWER && i != 0)
              || (rank == NGX_HTTP_MCP_ROLE_SERVICE && i == 0);

    if (!granted && !ngx_http_mcp_auth_has_scope(auth, &caps[i])
        && !ngx_http_mcp_auth_has_scope(auth, &alts[i]))
    {
        *missing_scope = caps[i];
        return NGX_DECLINED;
    }

    if (tool == NULL || alcf->tool_scopes == NULL) {
        return NGX_OK;
    }

    kv = alcf->tool_scopes->elts;

    for (i = 0; i < alcf->tool_scopes->nelts; i++) {
        if (kv[i].key.len != tool->len
            || ngx_strncmp(kv[i].key.data, tool->data, tool->len) != 0)
        {
            continue;
        }

        scope = kv[i].value;

        if (!ngx_http_mcp_auth_has_scope(auth, &scope)) {
            *missing_scope = scope;
            return NGX_DECLINED;
        }
    }

    return NGX_OK;
}


static ngx_uint_t
ngx_http_mcp_auth_has_scope(ngx_http_mcp_auth_t *auth, ngx_str_t *scope)
{
    ngx_str_t   *s;
    ngx_uint_t   i;

    if (auth->scopes == NULL) {
        return 0;
    }

    s = auth->scopes->elts;

    for (i = 0; i < auth->scopes->nelts; i++) {
        if (s[i].len == scope->len
            && ngx_strncmp(s[i].data, scope->data, scope->len) == 0)
        {
            return 1;
        }
    }

    return 0;
}


static ngx_uint_t
ngx_http_mcp_auth_role_rank(ngx_str_t *role)
{
    ngx_uint_t  i;

    for (i = NGX_HTTP_MCP_ROLE_SERVICE; i <= NGX_HTTP_MCP_ROLE_ADMIN; i++) {
        if (role->len == ngx_http_mcp_auth_roles[i].len
            && ngx_strncmp(role->data, ngx_http_mcp_auth_roles[i].data,
                           role->len) == 0)
        {
            return i;
        }
    }

    return NGX_HTTP_MCP_ROLE_NONE;
}


ngx_int_t
ngx_http_mcp_auth_challenge(ngx_http_request_t *r, ngx_str_t *scope)
{
    ngx_str_t                      value;
    ngx_http_mcp_auth_ctx_t       *ctx;
    ngx_http_mcp_auth_loc_conf_t  *alcf;

    ctx = ngx_http_get_module_ctx(r->main, ngx_http_mcp_auth_module);
    alcf = ngx_http_get_module_loc_conf(r, ngx_http_mcp_auth_module);

    if (ctx != NULL) {
        ngx_str_set(&ctx->auth.result, "insufficient_scope");
    }

    value.len = sizeof("Bearer realm=\"\", error=\"insufficient_scope\", "
                       "scope=\"\", resource_metadata=\"\"") - 1
                + alcf->realm.len + scope->len + alcf->metadata_url.len;

    value.data = ngx_pnalloc(r->pool, value.len);
    if (value.data == NULL) {
        return NGX_ERROR;
    }

    value.len = ngx_sprintf(value.data, "Bearer realm=\"%V\", "
                            "error=\"insufficient_scope\", scope=\"%V\", "
                            "resource_metadata=\"%V\"",
                            &alcf->realm, scope, &alcf->metadata_url)
                - value.data;

    return ngx_http_mcp_header_out(r, "WWW-Authenticate", &value);
}


ngx_int_t
ngx_http_mcp_auth_forbidden(ngx_http_request_t *r, ngx_str_t *scope)
{
    u_char  msg[256], *p;

    if (ngx_http_mcp_auth_challenge(r, scope) != NGX_OK) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    p = ngx_snprintf(msg, sizeof(msg) - 1,
                     "Forbidden: insufficient scope, \"%V\" is required",
                     scope);
    *p = '\0';

    return ngx_http_mcp_send_error(r, NGX_HTTP_FORBIDDEN, NULL,
                                   NGX_HTTP_MCP_INVALID_REQUEST,
                                   (const char *) msg);
}


ngx_int_t
ngx_http_mcp_auth_check_input(void **loc_conf, ngx_pool_t *pool,
    cJSON *arguments, u_char **error)
{
    u_char                        *p;
    const char                    *what;
    ngx_http_mcp_auth_loc_conf_t  *alcf;

    /* the location's conf outlives the request: a call may, too */
    alcf = loc_conf[ngx_http_mcp_auth_module.ctx_index];

    if (arguments == NULL
        || ngx_http_mcp_auth_check_json(arguments, 1, alcf->max_depth,
                                        alcf->max_string, &what)
           == NGX_OK)
    {
        return NGX_OK;
    }

    p = ngx_pnalloc(pool, 128);
    if (p == NULL) {
        return NGX_ERROR;
    }

    *error = p;

    p = ngx_snprintf(p, 127, "Invalid params: arguments %s (limit %ui)",
                     what, (what[0] == 'n') ? alcf->max_depth
                                            : (ngx_uint_t) alcf->max_string);
    *p = '\0';

    return NGX_DECLINED;
}


static ngx_int_t
ngx_http_mcp_auth_check_json(cJSON *json, ngx_uint_t depth,
    ngx_uint_t max_depth, size_t max_string, const char **error)
{
    cJSON  *item;

    if (cJSON_IsString(json)
        && ngx_strlen(json->valuestring) > max_string)
    {
        *error = "hold a string that is too long";
        return NGX_DECLINED;
    }

    if (!cJSON_IsObject(json) && !cJSON_IsArray(json)) {
        return NGX_OK;
    }

    if (depth > max_depth) {
        *error = "nest too deep";
        return NGX_DECLINED;
    }

    cJSON_ArrayForEach(item, json) {
        if (item->string != NULL && ngx_strlen(item->string) > max_string) {
            *error = "hold a string that is too long";
            return NGX_DECLINED;
        }

        if (ngx_http_mcp_auth_check_json(item, depth + 1, max_depth,
                                         max_string, error)
            != NGX_OK)
        {
            return NGX_DECLINED;
        }
    }

    return NGX_OK;
}


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
    ngx_str_t                     *s, type = ngx_string("application/json");
    ngx_buf_t                     *b;
    ngx_uint_t                     i, k;
    ngx_chain_t                    out;
    ngx_array_t                   *arrays[2];
    const char                    *names[2];
    ngx_http_mcp_auth_loc_conf_t  *alcf;

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

    for (k = 0; k < 2; k++) {
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

    body = ngx_http_mcp_jsonrpc_print(r->pool, doc, &len);

    cJSON_Delete(doc);

    if (body == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    r->headers_out.status = NGX_HTTP_OK;
    r->headers_out.content_length_n = len;
    r->headers_out.content_type = type;
    r->headers_out.content_type_len = type.len;

    rc = ngx_http_send_header(r);

    if (rc == NGX_ERROR || rc > NGX_OK || r->header_only) {
        return rc;
    }

    b = ngx_calloc_buf(r->pool);
    if (b == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    b->pos = body;
    b->last = body + len;
    b->memory = 1;
    b->last_buf = 1;

    out.buf = b;
    out.next = NULL;

    return ngx_http_output_filter(r, &out);

failed:

    cJSON_Delete(doc);
    return NGX_HTTP_INTERNAL_SERVER_ERROR;
}


/* ------------------------------------------------------------------------
 * "mcp_builtin validation": one tool whose inputSchema uses every keyword
 * the validator knows, to try it from outside
 */

static const char  ngx_http_mcp_auth_validate_tool[] =
    "{\"name\":\"validate\","
    "\"description\":\"Answers ok when its arguments fit the schema\","
    "\"inputSchema\":{\"type\":\"object\","
    "\"$defs\":{\"tag\":{\"type\":\"string\",\"pattern\":\"^[a-z]+$\"}},"
    "\"properties\":{"
    "\"name\":{\"type\":\"string\",\"minLength\":2,\"maxLength\":8},"
    "\"age\":{\"type\":\"integer\",\"minimum\":0,\"maximum\":150},"
    "\"ratio\":{\"type\":\"number\",\"exclusiveMinimum\":0,"
    "\"exclusiveMaximum\":1},"
    "\"color\":{\"enum\":[\"red\",\"green\"]},"
    "\"kind\":{\"const\":\"fixed\"},"
    "\"tags\":{\"type\":\"array\",\"items\":{\"$ref\":\"#/$defs/tag\"},"
    "\"minItems\":1,\"maxItems\":3,\"uniqueItems\":true},"
    "\"id\":{\"anyOf\":[{\"type\":\"integer\"},"
    "{\"type\":\"string\",\"pattern\":\"^id-\"}]},"
    "\"one\":{\"oneOf\":[{\"type\":\"integer\"},{\"minimum\":10}]},"
    "\"code\":{\"allOf\":[{\"type\":\"string\"},{\"maxLength\":3}],"
    "\"not\":{\"const\":\"bad\"}},"
    "\"nested\":{\"type\":\"object\",\"required\":[\"x\"],"
    "\"properties\":{\"x\":{\"type\":\"boolean\"}},"
    "\"additionalProperties\":false}},"
    "\"required\":[\"name\"],"
    "\"additionalProperties\":false}}";


static ngx_int_t
ngx_http_mcp_auth_preconfiguration(ngx_conf_t *cf)
{
    if (ngx_http_mcp_add_provider(cf, "validation",
                                  ngx_http_mcp_auth_validation_set)
        != NGX_OK)
    {
        return NGX_ERROR;
    }

    return ngx_http_mcp_auth_add_variables(cf);
}


static ngx_int_t
ngx_http_mcp_auth_validation_set(ngx_conf_t *cf, ngx_http_mcp_set_t *set)
{
    return ngx_http_mcp_add_tool(cf, set, ngx_http_mcp_auth_validate_tool,
                                 ngx_http_mcp_auth_validated, NULL);
}


static ngx_int_t
ngx_http_mcp_auth_validated(ngx_http_mcp_call_t *call)
{
    cJSON  *content;

    content = cJSON_CreateArray();

    if (content == NULL
        || !cJSON_AddItemToArray(content, ngx_http_mcp_text_content("ok")))
    {
        cJSON_Delete(content);
        return NGX_ERROR;
    }

    ngx_http_mcp_call_result(call, ngx_http_mcp_tool_result(content, 0));

    return NGX_OK;
}


/* ------------------------------------------------------------------------
 * Variables
 */

static ngx_int_t
ngx_http_mcp_auth_add_variables(ngx_conf_t *cf)
{
    ngx_http_variable_t  *var, *v;

    for (v = ngx_http_mcp_auth_vars; v->name.len; v++) {
        var = ngx_http_add_variable(cf, &v->name, v->flags);
        if (var == NULL) {
            return NGX_ERROR;
        }

        var->get_handler = v->get_handler;
        var->data = v->data;
    }

    return NGX_OK;
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

static ngx_int_t
ngx_http_mcp_auth_init(ngx_conf_t *cf)
{
    ngx_http_handler_pt        *h;
    ngx_http_core_main_conf_t  *cmcf;

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

    return conf;
}


static char *
ngx_http_mcp_auth_merge_loc_conf(ngx_conf_t *cf, void *parent, void *child)
{
    ngx_http_mcp_auth_loc_conf_t *prev = parent;
    ngx_http_mcp_auth_loc_conf_t *conf = child;

    u_char              *p, *host, *path, *end;
    ngx_pool_cleanup_t  *cln;

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

    if (conf->key_request.data == NGX_CONF_UNSET_PTR) {
        if (prev->key_request.data == NGX_CONF_UNSET_PTR) {
            ngx_str_null(&conf->key_request);

        } else {
            conf->key_request = prev->key_request;
            conf->zone = prev->zone;
        }
    }

    /*
     * Derived here, not merged: a location with its own resource must not
     * inherit the audience its server derived from the server's resource.
     */
    conf->accept_aud = conf->audience.len ? conf->audience : conf->resource;

    if (conf->resource.len == 0) {
        if (conf->realm.len) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "\"mcp_auth_jwt\" needs \"mcp_auth_resource\", "
                               "the canonical URI of the resource");
            return NGX_CONF_ERROR;
        }

        return NGX_CONF_OK;
    }

    if (conf->realm.len && conf->file_keys == NULL
        && conf->key_request.len == 0 && conf->api_keys == NULL)
    {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"mcp_auth_jwt\" needs keys: "
                           "\"mcp_auth_jwt_key_file\", "
                           "\"mcp_auth_jwt_key_request\" or "
                           "\"mcp_auth_api_keys\"");
        return NGX_CONF_ERROR;
    }

    if (conf->realm.len && conf->issuers == NULL
        && (conf->file_keys != NULL || conf->key_request.len))
    {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"mcp_auth_jwt\" needs \"mcp_auth_jwt_issuer\"");
        return NGX_CONF_ERROR;
    }

    /* RFC 9728 3.1: the well-known path goes before the resource's path */
    if (conf->metadata_url.len == 0) {
        host = (u_char *) ngx_strstr(conf->resource.data, "://");

        if (host == NULL) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "invalid resource URI \"%V\"",
                               &conf->resource);
            return NGX_CONF_ERROR;
        }

        end = conf->resource.data + conf->resource.len;
        path = ngx_strlchr(host + 3, end, '/');

        if (path == NULL) {
            path = end;
        }

        p = ngx_pnalloc(cf->pool, conf->resource.len
                                  + sizeof(NGX_HTTP_MCP_AUTH_WELL_KNOWN));
        if (p == NULL) {
            return NGX_CONF_ERROR;
        }

        conf->metadata_url.data = p;
        p = ngx_cpymem(p, conf->resource.data, path - conf->resource.data);
        p = ngx_cpymem(p, NGX_HTTP_MCP_AUTH_WELL_KNOWN,
                       sizeof(NGX_HTTP_MCP_AUTH_WELL_KNOWN) - 1);

        if (end - path > 1) {
            p = ngx_cpymem(p, path, end - path);
        }

        conf->metadata_url.len = p - conf->metadata_url.data;
    }

    if (conf->realm.len && conf->verified == NULL) {
        conf->verified = ngx_pcalloc(cf->pool, NGX_HTTP_MCP_AUTH_VERIFIED
                                     * sizeof(ngx_http_mcp_verified_t));
        cln = ngx_pool_cleanup_add(cf->pool, 0);

        if (conf->verified == NULL || cln == NULL) {
            return NGX_CONF_ERROR;
        }

        cln->handler = ngx_http_mcp_auth_verified_cleanup;
        cln->data = conf->verified;
    }

    if (conf->key_request.len && conf->cache == NULL) {
        conf->cache = ngx_pcalloc(cf->pool,
                                  sizeof(ngx_http_mcp_jwks_cache_t));
        if (conf->cache == NULL) {
            return NGX_CONF_ERROR;
        }

        cln = ngx_pool_cleanup_add(cf->pool, 0);
        if (cln == NULL) {
            return NGX_CONF_ERROR;
        }

        cln->handler = ngx_http_mcp_auth_cache_cleanup;
        cln->data = conf->cache;
    }

    return NGX_CONF_OK;
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
ngx_http_mcp_auth_jwt_slot(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_mcp_auth_loc_conf_t *alcf = conf;

    ngx_str_t  *value;

    if (alcf->realm.data != NGX_CONF_UNSET_PTR) {
        return "is duplicate";
    }

    value = cf->args->elts;

    if (ngx_strcmp(value[1].data, "off") == 0) {
        ngx_str_null(&alcf->realm);
        return NGX_CONF_OK;
    }

    if (ngx_strlchr(value[1].data, value[1].data + value[1].len, '"')
        != NULL)
    {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "invalid realm \"%V\"", &value[1]);
        return NGX_CONF_ERROR;
    }

    alcf->realm = value[1];

    return NGX_CONF_OK;
}


/* a file read whole at configuration time, at most max bytes */

static ngx_int_t
ngx_http_mcp_auth_read_file(ngx_conf_t *cf, ngx_str_t *name, size_t max,
    const char *what, ngx_str_t *text)
{
    ssize_t          n;
    ngx_file_t       file;
    ngx_file_info_t  fi;

    if (ngx_conf_full_name(cf->cycle, name, 1) != NGX_OK) {
        return NGX_ERROR;
    }

    ngx_memzero(&file, sizeof(ngx_file_t));
    file.name = *name;
    file.log = cf->log;

    file.fd = ngx_open_file(name->data, NGX_FILE_RDONLY, NGX_FILE_OPEN, 0);

    if (file.fd == NGX_INVALID_FILE) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, ngx_errno,
                           ngx_open_file_n " \"%V\" failed", name);
        return NGX_ERROR;
    }

    if (ngx_fd_info(file.fd, &fi) == NGX_FILE_ERROR
        || (size_t) ngx_file_size(&fi) > max)
    {
        ngx_close_file(file.fd);
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "%s \"%V\" is too large or unreadable", what,
                           name);
        return NGX_ERROR;
    }

    text->data = ngx_pnalloc(cf->pool, ngx_file_size(&fi) + 1);
    if (text->data == NULL) {
        ngx_close_file(file.fd);
        return NGX_ERROR;
    }

    n = ngx_read_file(&file, text->data, ngx_file_size(&fi), 0);

    ngx_close_file(file.fd);

    if (n != (ssize_t) ngx_file_size(&fi)) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "cannot read %s \"%V\"",
                           what, name);
        return NGX_ERROR;
    }

    text->len = n;

    return NGX_OK;
}


static char *
ngx_http_mcp_auth_key_file(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_mcp_auth_loc_conf_t *alcf = conf;

    ngx_str_t  *value, name, text;

    if (alcf->file_keys != NGX_CONF_UNSET_PTR) {
        return "is duplicate";
    }

    value = cf->args->elts;
    name = value[1];

    if (ngx_http_mcp_auth_read_file(cf, &name, 1024 * 1024, "key file",
                                    &text)
        != NGX_OK)
    {
        return NGX_CONF_ERROR;
    }

    alcf->file_keys = ngx_http_mcp_jwks_parse(cf->pool, text.data,
                                              text.len);

    if (alcf->file_keys == NULL || alcf->file_keys->nelts == 0) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "no usable key in JWK set \"%V\"", &name);
        return NGX_CONF_ERROR;
    }

    return NGX_CONF_OK;
}


static char *
ngx_http_mcp_auth_key_request(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_mcp_auth_loc_conf_t *alcf = conf;

    ngx_str_t                 *value, name;
    ngx_http_mcp_jwks_zone_t  *zctx;

    if (alcf->key_request.data != NGX_CONF_UNSET_PTR) {
        return "is duplicate";
    }

    value = cf->args->elts;

    if (value[1].len == 0 || value[1].data[0] != '/') {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "invalid key request URI \"%V\"", &value[1]);
        return NGX_CONF_ERROR;
    }

    alcf->key_request = value[1];

    ngx_str_set(&name, NGX_HTTP_MCP_AUTH_ZONE);

    alcf->zone = ngx_shared_memory_add(cf, &name, NGX_HTTP_MCP_AUTH_ZONE_SIZE,
                                       &ngx_http_mcp_auth_module);
    if (alcf->zone == NULL) {
        return NGX_CONF_ERROR;
    }

    if (alcf->zone->data == NULL) {
        zctx = ngx_pcalloc(cf->pool, sizeof(ngx_http_mcp_jwks_zone_t));
        if (zctx == NULL) {
            return NGX_CONF_ERROR;
        }

        alcf->zone->init = ngx_http_mcp_auth_init_zone;
        alcf->zone->data = zctx;
    }

    return NGX_CONF_OK;
}


static char *
ngx_http_mcp_auth_key_cache(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_mcp_auth_loc_conf_t *alcf = conf;

    time_t      t;
    ngx_str_t  *value, s;

    if (alcf->key_cache != NGX_CONF_UNSET) {
        return "is duplicate";
    }

    value = cf->args->elts;

    t = ngx_parse_time(&value[1], 1);

    if (t == (time_t) NGX_ERROR || t == 0) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "invalid cache time \"%V\"", &value[1]);
        return NGX_CONF_ERROR;
    }

    alcf->key_cache = t;

    if (cf->args->nelts == 2) {
        return NGX_CONF_OK;
    }

    if (ngx_strncmp(value[2].data, "refresh=", 8) != 0) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "invalid parameter \"%V\"", &value[2]);
        return NGX_CONF_ERROR;
    }

    s.data = value[2].data + 8;
    s.len = value[2].len - 8;

    t = ngx_parse_time(&s, 1);

    if (t == (time_t) NGX_ERROR) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "invalid refresh time \"%V\"", &value[2]);
        return NGX_CONF_ERROR;
    }

    alcf->key_refresh = t;

    return NGX_CONF_OK;
}


static char *
ngx_http_mcp_auth_tool_scope(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_mcp_auth_loc_conf_t *alcf = conf;

    ngx_str_t     *value;
    ngx_keyval_t  *kv;

    if (alcf->tool_scopes == NGX_CONF_UNSET_PTR) {
        alcf->tool_scopes = ngx_array_create(cf->pool, 4,
                                             sizeof(ngx_keyval_t));
        if (alcf->tool_scopes == NULL) {
            return NGX_CONF_ERROR;
        }
    }

    value = cf->args->elts;

    kv = ngx_array_push(alcf->tool_scopes);
    if (kv == NULL) {
        return NGX_CONF_ERROR;
    }

    kv->key = value[1];
    kv->value = value[2];

    return NGX_CONF_OK;
}


static char *
ngx_http_mcp_auth_str_array(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    char  *p = conf;

    ngx_str_t     *value, *s;
    ngx_uint_t     i;
    ngx_array_t  **a;

    a = (ngx_array_t **) (p + cmd->offset);

    if (*a != NGX_CONF_UNSET_PTR) {
        return "is duplicate";
    }

    *a = ngx_array_create(cf->pool, cf->args->nelts, sizeof(ngx_str_t));
    if (*a == NULL) {
        return NGX_CONF_ERROR;
    }

    value = cf->args->elts;

    for (i = 1; i < cf->args->nelts; i++) {
        if (ngx_strlchr(value[i].data, value[i].data + value[i].len, '"')
            != NULL)
        {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "invalid value \"%V\"", &value[i]);
            return NGX_CONF_ERROR;
        }

        s = ngx_array_push(*a);
        if (s == NULL) {
            return NGX_CONF_ERROR;
        }

        *s = value[i];
    }

    return NGX_CONF_OK;
}


/*
 * A file of "sha256-hex subject [role=name] [scope ...]" lines; "#"
 * starts a comment.  Keys themselves are never stored.
 */

static char *
ngx_http_mcp_auth_api_keys(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_mcp_auth_loc_conf_t *alcf = conf;

    u_char                 *buf, *p, *end, *line, *q;
    ngx_str_t              *value, name, word, *scope, text;
    ngx_int_t               c;
    ngx_uint_t              i, lineno, field;
    ngx_http_mcp_apikey_t  *key;

    if (alcf->api_keys != NGX_CONF_UNSET_PTR) {
        return "is duplicate";
    }

    value = cf->args->elts;
    name = value[1];

    if (ngx_http_mcp_auth_read_file(cf, &name, 4 * 1024 * 1024,
                                    "API key file", &text)
        != NGX_OK)
    {
        return NGX_CONF_ERROR;
    }

    buf = text.data;

    alcf->api_keys = ngx_array_create(cf->pool, 4,
                                      sizeof(ngx_http_mcp_apikey_t));
    if (alcf->api_keys == NULL) {
        return NGX_CONF_ERROR;
    }

    end = buf + text.len;
    lineno = 0;

    for (line = buf; line < end; line = p + 1) {
        lineno++;

        p = ngx_strlchr(line, end, '\n');
        if (p == NULL) {
            p = end;
        }

        q = ngx_strlchr(line, p, '#');
        if (q == NULL) {
            q = p;
        }

        key = NULL;
        field = 0;

        while (line < q) {
            while (line < q && (*line == ' ' || *line == '\t'
                                || *line == '\r'))
            {
                line++;
            }

            word.data = line;

            while (line < q && *line != ' ' && *line != '\t'
                   && *line != '\r')
            {
                line++;
            }

            word.len = line - word.data;

            if (word.len == 0) {
                break;
            }

            if (field == 0) {
                if (word.len != 64) {
                    goto invalid;
                }

                key = ngx_array_push(alcf->api_keys);
                if (key == NULL) {
                    return NGX_CONF_ERROR;
                }

                ngx_memzero(key, sizeof(ngx_http_mcp_apikey_t));

                for (i = 0; i < 32; i++) {
                    c = ngx_hextoi(word.data + 2 * i, 2);
                    if (c == NGX_ERROR) {
                        goto invalid;
                    }

                    key->digest[i] = (u_char) c;
                }

                key->scopes = ngx_array_create(cf->pool, 2,
                                               sizeof(ngx_str_t));
                if (key->scopes == NULL) {
                    return NGX_CONF_ERROR;
                }

            } else if (field == 1) {
                key->subject = word;

            } else if (word.len > 5
                       && ngx_strncmp(word.data, "role=", 5) == 0)
            {
                key->role.data = word.data + 5;
                key->role.len = word.len - 5;

            } else {
                scope = ngx_array_push(key->scopes);
                if (scope == NULL) {
                    return NGX_CONF_ERROR;
                }

                *scope = word;
            }

            field++;
        }

        if (field == 1) {
            goto invalid;
        }
    }

    return NGX_CONF_OK;

invalid:

    ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                       "invalid line %ui in API key file \"%V\": expected "
                       "a SHA-256 hex digest and a subject", lineno, &name);
    return NGX_CONF_ERROR;
}


static char *
ngx_http_mcp_auth_metadata(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_core_loc_conf_t  *clcf;

    clcf = ngx_http_conf_get_module_loc_conf(cf, ngx_http_core_module);
    clcf->handler = ngx_http_mcp_auth_metadata_handler;

    return NGX_CONF_OK;
}
