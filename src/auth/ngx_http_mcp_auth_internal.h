
/*
 * ngx_http_mcp_auth_module: what its four files share (the module and
 * its configuration, its directives' handlers, the access phase, the
 * JWKS fetch).  Included by them alone; the MCP module uses
 * ngx_http_mcp_auth.h.
 */


#ifndef _NGX_HTTP_MCP_AUTH_INTERNAL_H_INCLUDED_
#define _NGX_HTTP_MCP_AUTH_INTERNAL_H_INCLUDED_


#include "ngx_http_mcp_auth.h"
#include "ngx_http_mcp_jwt.h"
#include "ngx_http_mcp_subrequest.h"

#include <openssl/crypto.h>


#define NGX_HTTP_MCP_AUTH_ZONE          "mcp_auth_jwks"
#define NGX_HTTP_MCP_AUTH_ZONE_SIZE     (1024 * 1024)
#define NGX_HTTP_MCP_AUTH_WELL_KNOWN    "/.well-known/oauth-protected-resource"

#define NGX_HTTP_MCP_AUTH_VERIFIED      1024   /* per location, a power
                                                   of 2 */

#define NGX_HTTP_MCP_AUTH_DPOP_KEYS     64     /* per location, a power
                                                   of 2 */

#define NGX_HTTP_MCP_DPOP_OFF           0
#define NGX_HTTP_MCP_DPOP_ALLOWED       1
#define NGX_HTTP_MCP_DPOP_REQUIRED      2

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
    time_t                     failed;       /* last fetch failed */
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
    u_char                     jkt[32];      /* cnf.jkt, decoded */
    unsigned                   bound:1;      /* the token has cnf.jkt */
} ngx_http_mcp_verified_t;


/*
 * A DPoP client signs every proof with the same key: a worker imports
 * it once and finds it again by its thumbprint, which names it (RFC
 * 7638: equal thumbprints, equal required members).
 */
typedef struct {
    u_char                     jkt[32];
    ngx_uint_t                 type;         /* NGX_HTTP_MCP_JWK_* */
    EVP_PKEY                  *pkey;         /* a reference of its own;
                                                NULL: empty */
} ngx_http_mcp_dpop_key_t;


/*
 * An mcp_auth_api_keys file as configured: where, and whether a block
 * with mcp_auth_jwt on checks its keys (nginx -t warns when none does).
 */
typedef struct {
    ngx_array_t               *keys;         /* ngx_http_mcp_apikey_t */
    ngx_str_t                  file;         /* of the directive */
    ngx_uint_t                 line;
    ngx_uint_t                 checked;
} ngx_http_mcp_auth_keyfile_t;


typedef struct {
    ngx_array_t                keyfiles;     /* ngx_http_mcp_auth_keyfile_t */
} ngx_http_mcp_auth_main_conf_t;


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
    ngx_uint_t                 schema_format; /* mcp_schema_format:
                                                 1 assertion */
    ngx_uint_t                 dpop;         /* NGX_HTTP_MCP_DPOP_* */
    ngx_array_t               *dpop_algs;    /* ngx_str_t */
    ngx_str_t                  dpop_algs_text;  /* for algs="" */
    time_t                     dpop_window;
    ngx_flag_t                 dpop_nonce;
    ngx_shm_zone_t            *dpop_zone;    /* the proofs seen */
    ngx_http_mcp_dpop_key_t   *dpop_keys;    /* NGX_HTTP_MCP_AUTH_DPOP_KEYS */
    unsigned                   metadata:1;  /* mcp_auth_metadata here;
                                               not inherited */
} ngx_http_mcp_auth_loc_conf_t;


typedef struct {
    ngx_http_mcp_auth_t          auth;
    ngx_http_mcp_fetch_state_t  *fetch;        /* the key request's */
    time_t                       proof_expire;  /* DPoP: its record's */
    u_char                       proof[32];     /* its key and jti */
    u_char                       jkt[32];       /* its key's thumbprint */
    unsigned                     dpop:1;        /* the DPoP scheme */
    unsigned                     use_nonce:1;   /* the proof's is not
                                                   this server's */
    unsigned                     fetching:1;
    unsigned                     done:1;
    unsigned                     fetched:1;
    unsigned                     decided:1;
} ngx_http_mcp_auth_ctx_t;


ngx_int_t ngx_http_mcp_auth_handler(ngx_http_request_t *r);
ngx_int_t ngx_http_mcp_auth_fetch(ngx_http_request_t *r,
    ngx_http_mcp_auth_ctx_t *ctx);
void ngx_http_mcp_auth_store(ngx_http_request_t *r,
    ngx_http_mcp_auth_loc_conf_t *alcf, ngx_http_mcp_auth_ctx_t *ctx);
ngx_array_t *ngx_http_mcp_auth_keys(ngx_http_request_t *r,
    ngx_http_mcp_auth_loc_conf_t *alcf, ngx_uint_t *stale,
    ngx_uint_t *refetch);
ngx_int_t ngx_http_mcp_auth_preconfiguration(ngx_conf_t *cf);
ngx_int_t ngx_http_mcp_auth_add_variables(ngx_conf_t *cf);
ngx_int_t ngx_http_mcp_auth_init_zone(ngx_shm_zone_t *shm_zone,
    void *data);

/* ngx_http_mcp_auth_dpop.c: RFC 9449 proofs */
ngx_int_t ngx_http_mcp_auth_dpop_proof(ngx_http_request_t *r,
    ngx_http_mcp_auth_ctx_t *ctx, ngx_str_t *token, const char **error);
ngx_int_t ngx_http_mcp_auth_dpop_cnf(ngx_http_mcp_jwt_t *jwt, u_char *jkt,
    ngx_uint_t *bound);
ngx_int_t ngx_http_mcp_auth_dpop_nonce(ngx_http_request_t *r,
    ngx_http_mcp_auth_loc_conf_t *alcf, ngx_str_t *nonce);
ngx_int_t ngx_http_mcp_auth_dpop_merge(ngx_conf_t *cf,
    ngx_http_mcp_auth_loc_conf_t *conf);

/* ngx_http_mcp_auth_conf.c: the directives' handlers */
extern ngx_conf_post_t  ngx_http_mcp_auth_token_post;

/* ngx_http_mcp_auth_access.c: NGX_HTTP_MCP_ROLE_* of a role's name */
ngx_uint_t ngx_http_mcp_auth_role_rank(ngx_str_t *role);

char *ngx_http_mcp_auth_jwt_slot(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
char *ngx_http_mcp_auth_key_file(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
char *ngx_http_mcp_auth_key_request(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
char *ngx_http_mcp_auth_key_cache(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
char *ngx_http_mcp_auth_tool_scope(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
char *ngx_http_mcp_auth_str_array(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
char *ngx_http_mcp_auth_api_keys(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
char *ngx_http_mcp_auth_dpop_algs(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);


#endif /* _NGX_HTTP_MCP_AUTH_INTERNAL_H_INCLUDED_ */
