
/*
 * ngx_http_mcp_auth_module: the handlers of its directives that take
 * more than a slot (the realm, key files and key requests, the key
 * cache, tool scopes, API key files, lists of strings, DPoP algorithms);
 * the module's command table (ngx_http_mcp_auth_module.c) points at
 * them.
 */


#include "ngx_http_mcp_auth.h"
#include "ngx_http_mcp_auth_internal.h"
#include "ngx_http_mcp_jwt.h"


static ngx_int_t ngx_http_mcp_auth_read_file(ngx_conf_t *cf,
    ngx_str_t *name, size_t max, const char *what, ngx_str_t *text);
static ngx_int_t ngx_http_mcp_auth_check_value(ngx_conf_t *cf,
    ngx_str_t *value, ngx_uint_t token);
static char *ngx_http_mcp_auth_check_token(ngx_conf_t *cf, void *post,
    void *data);
static ngx_int_t ngx_http_mcp_auth_api_keys_register(ngx_conf_t *cf,
    ngx_array_t *keys);
static ngx_int_t ngx_http_mcp_auth_api_key_line(ngx_conf_t *cf,
    ngx_array_t *keys, u_char *line, u_char *last);
static ngx_int_t ngx_http_mcp_auth_api_key_add(ngx_conf_t *cf,
    ngx_array_t *keys, ngx_str_t *word, ngx_http_mcp_apikey_t **keyp);
static char *ngx_http_mcp_auth_api_keys_unique(ngx_conf_t *cf,
    ngx_array_t *keys, ngx_str_t *name);
static int ngx_libc_cdecl ngx_http_mcp_auth_digest_cmp(const void *one,
    const void *two);


/* mcp_auth_resource: its value goes into WWW-Authenticate */
ngx_conf_post_t  ngx_http_mcp_auth_token_post = {
    ngx_http_mcp_auth_check_token
};


char *
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

    if (ngx_http_mcp_auth_check_value(cf, &value[1], 0) != NGX_OK) {
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


char *
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


char *
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


char *
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

    /* 0 would let every token with an unknown kid fetch the set */
    if (t == (time_t) NGX_ERROR || t == 0) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "invalid refresh time \"%V\"", &value[2]);
        return NGX_CONF_ERROR;
    }

    alcf->key_refresh = t;

    return NGX_CONF_OK;
}


char *
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

    if (ngx_http_mcp_auth_check_value(cf, &value[2], 1) != NGX_OK) {
        return NGX_CONF_ERROR;
    }

    kv = ngx_array_push(alcf->tool_scopes);
    if (kv == NULL) {
        return NGX_CONF_ERROR;
    }

    kv->key = value[1];
    kv->value = value[2];

    return NGX_CONF_OK;
}


char *
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
        if (ngx_http_mcp_auth_check_value(cf, &value[i], 1) != NGX_OK) {
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


/* mcp_auth_dpop_algs: asymmetric algorithms only, never "none" or HS* */

char *
ngx_http_mcp_auth_dpop_algs(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_mcp_auth_loc_conf_t *alcf = conf;

    char        *rv;
    ngx_str_t   *alg;
    ngx_uint_t   i;

    rv = ngx_http_mcp_auth_str_array(cf, cmd, conf);

    if (rv != NGX_CONF_OK) {
        return rv;
    }

    alg = alcf->dpop_algs->elts;

    for (i = 0; i < alcf->dpop_algs->nelts; i++) {
        if (!ngx_http_mcp_jwt_alg_known(&alg[i])) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "invalid DPoP algorithm \"%V\": an "
                               "asymmetric JWS algorithm (RS256, RS384, "
                               "RS512, PS256, PS384, PS512, ES256, ES384, "
                               "EdDSA)", &alg[i]);
            return NGX_CONF_ERROR;
        }
    }

    return NGX_CONF_OK;
}


/*
 * A value that goes into a WWW-Authenticate quoted-string as it is: no
 * '"', no '\\', no control byte (nginx's "\r\n" escapes would split the
 * response); a token (a URI, a scope: RFC 6749 3.3) has no space and
 * nothing outside ASCII either.
 */

static ngx_int_t
ngx_http_mcp_auth_check_value(ngx_conf_t *cf, ngx_str_t *value,
    ngx_uint_t token)
{
    u_char  *p, *end;

    end = value->data + value->len;

    for (p = value->data; p < end; p++) {
        if (*p < 0x20 || *p == 0x7f || *p == '"' || *p == '\\'
            || (token && (*p == ' ' || *p > 0x7f)))
        {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "invalid value \"%V\": a quote, a backslash, "
                               "a control character%s",
                               value, token ? " or a space" : "");
            return NGX_ERROR;
        }
    }

    return NGX_OK;
}


static char *
ngx_http_mcp_auth_check_token(ngx_conf_t *cf, void *post, void *data)
{
    ngx_str_t  *value = data;

    if (ngx_http_mcp_auth_check_value(cf, value, 1) != NGX_OK) {
        return NGX_CONF_ERROR;
    }

    return NGX_CONF_OK;
}


/*
 * A file of "sha256-hex subject [role=name] [scope ...]" lines; "#"
 * starts a comment.  Keys themselves are never stored.
 */

char *
ngx_http_mcp_auth_api_keys(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_mcp_auth_loc_conf_t *alcf = conf;

    u_char      *p, *end, *line;
    ngx_int_t    rc;
    ngx_str_t   *value, name, text;
    ngx_uint_t   lineno;

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

    alcf->api_keys = ngx_array_create(cf->pool, 4,
                                      sizeof(ngx_http_mcp_apikey_t));
    if (alcf->api_keys == NULL) {
        return NGX_CONF_ERROR;
    }

    if (ngx_http_mcp_auth_api_keys_register(cf, alcf->api_keys) != NGX_OK) {
        return NGX_CONF_ERROR;
    }

    end = text.data + text.len;
    lineno = 0;

    for (line = text.data; line < end; line = p + 1) {
        lineno++;

        p = ngx_strlchr(line, end, '\n');
        if (p == NULL) {
            p = end;
        }

        rc = ngx_http_mcp_auth_api_key_line(cf, alcf->api_keys, line, p);

        if (rc == NGX_DECLINED) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "invalid line %ui in API key file \"%V\": "
                               "expected a SHA-256 hex digest, a subject, "
                               "a known role", lineno, &name);
            return NGX_CONF_ERROR;
        }

        if (rc != NGX_OK) {
            return NGX_CONF_ERROR;
        }
    }

    return ngx_http_mcp_auth_api_keys_unique(cf, alcf->api_keys, &name);
}


/* ngx_http_mcp_auth_init() warns of keys that no mcp_auth_jwt checks */

static ngx_int_t
ngx_http_mcp_auth_api_keys_register(ngx_conf_t *cf, ngx_array_t *keys)
{
    ngx_http_mcp_auth_keyfile_t    *kf;
    ngx_http_mcp_auth_main_conf_t  *amcf;

    amcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_mcp_auth_module);

    kf = ngx_array_push(&amcf->keyfiles);
    if (kf == NULL) {
        return NGX_ERROR;
    }

    kf->keys = keys;
    kf->file = cf->conf_file->file.name;
    kf->line = cf->conf_file->line;
    kf->checked = 0;

    return NGX_OK;
}


/*
 * One line of the file, up to last: a key, its subject, then a role or
 * scopes.  NGX_DECLINED for a line that is none of these.
 */

static ngx_int_t
ngx_http_mcp_auth_api_key_line(ngx_conf_t *cf, ngx_array_t *keys,
    u_char *line, u_char *last)
{
    u_char                 *q;
    ngx_int_t               rc;
    ngx_str_t               word, *scope;
    ngx_uint_t              field;
    ngx_http_mcp_apikey_t  *key;

    q = ngx_strlchr(line, last, '#');
    if (q == NULL) {
        q = last;
    }

    key = NULL;
    field = 0;

    while (line < q) {
        while (line < q && (*line == ' ' || *line == '\t' || *line == '\r')) {
            line++;
        }

        word.data = line;

        while (line < q && *line != ' ' && *line != '\t' && *line != '\r') {
            line++;
        }

        word.len = line - word.data;

        if (word.len == 0) {
            break;
        }

        if (field == 0) {
            rc = ngx_http_mcp_auth_api_key_add(cf, keys, &word, &key);
            if (rc != NGX_OK) {
                return rc;
            }

        } else if (field == 1) {
            key->subject = word;

        } else if (word.len > 5 && ngx_strncmp(word.data, "role=", 5) == 0) {
            key->role.data = word.data + 5;
            key->role.len = word.len - 5;

            /* a misspelt role would be no role, silently */
            if (ngx_http_mcp_auth_role_rank(&key->role)
                == NGX_HTTP_MCP_ROLE_NONE)
            {
                return NGX_DECLINED;
            }

        } else {
            scope = ngx_array_push(key->scopes);
            if (scope == NULL) {
                return NGX_ERROR;
            }

            *scope = word;
        }

        field++;
    }

    return (field == 1) ? NGX_DECLINED : NGX_OK;
}


/* a line's first word: the key's SHA-256 in hex, a new entry */

static ngx_int_t
ngx_http_mcp_auth_api_key_add(ngx_conf_t *cf, ngx_array_t *keys,
    ngx_str_t *word, ngx_http_mcp_apikey_t **keyp)
{
    ngx_int_t               c;
    ngx_uint_t              i;
    ngx_http_mcp_apikey_t  *key;

    if (word->len != 64) {
        return NGX_DECLINED;
    }

    key = ngx_array_push(keys);
    if (key == NULL) {
        return NGX_ERROR;
    }

    ngx_memzero(key, sizeof(ngx_http_mcp_apikey_t));

    for (i = 0; i < 32; i++) {
        c = ngx_hextoi(word->data + 2 * i, 2);
        if (c == NGX_ERROR) {
            return NGX_DECLINED;
        }

        key->digest[i] = (u_char) c;
    }

    key->scopes = ngx_array_create(cf->pool, 2, sizeof(ngx_str_t));
    if (key->scopes == NULL) {
        return NGX_ERROR;
    }

    *keyp = key;

    return NGX_OK;
}


/*
 * A key listed twice (for two subjects, say) would be the first line's
 * only: in digest order, which the lookup does not mind, two equal
 * digests are neighbours.
 */

static char *
ngx_http_mcp_auth_api_keys_unique(ngx_conf_t *cf, ngx_array_t *keys,
    ngx_str_t *name)
{
    ngx_uint_t              i;
    ngx_http_mcp_apikey_t  *key;

    ngx_qsort(keys->elts, keys->nelts, sizeof(ngx_http_mcp_apikey_t),
              ngx_http_mcp_auth_digest_cmp);

    key = keys->elts;

    for (i = 1; i < keys->nelts; i++) {
        if (ngx_memcmp(key[i - 1].digest, key[i].digest, 32) == 0) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "a key listed twice in API key file \"%V\" "
                               "(subjects \"%V\" and \"%V\")", name,
                               &key[i - 1].subject, &key[i].subject);
            return NGX_CONF_ERROR;
        }
    }

    return NGX_CONF_OK;
}


static int ngx_libc_cdecl
ngx_http_mcp_auth_digest_cmp(const void *one, const void *two)
{
    const ngx_http_mcp_apikey_t  *a = one;
    const ngx_http_mcp_apikey_t  *b = two;

    return ngx_memcmp(a->digest, b->digest, 32);
}
