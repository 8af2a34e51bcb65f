
/*
 * The gateway's own credentials to its upstreams: mcp_secret, a variable
 * whose value is a file's (read at configuration time, so that the
 * secret is never written in nginx.conf), and mcp_pass_set_header, the
 * headers an mcp_pass location adds to each request it relays, their
 * values with variables.  mcp_backend and location tools reach their
 * upstreams through internal locations, whose proxy_set_header takes the
 * same variable; the subrequest client strips the caller's credentials
 * from their requests, never what the location sets.
 *
 * Nothing here logs a value: a secret would be in error.log, and a value
 * with variables may hold one.  Only the header's name is ever named.
 * That is why a value is not an nginx complex value: nginx's script
 * engine prints each variable it copies at debug level ("http script
 * var"), so the values are put together here from their variables.
 */


#include "ngx_http_mcp_proxy.h"


/* a secret is a header value: one line of at most this */
#define NGX_HTTP_MCP_SECRET_MAX  8192


static ngx_int_t ngx_http_mcp_secret_read(ngx_conf_t *cf, ngx_str_t *name,
    ngx_str_t *secret);
static void ngx_http_mcp_secret_cleanup(void *data);
static ngx_int_t ngx_http_mcp_secret_variable(ngx_http_request_t *r,
    ngx_http_variable_value_t *v, uintptr_t data);
static char *ngx_http_mcp_proxy_header_name(ngx_conf_t *cf,
    ngx_http_mcp_proxy_loc_conf_t *plcf, ngx_str_t *name);
static char *ngx_http_mcp_proxy_header_parts(ngx_conf_t *cf,
    ngx_http_mcp_proxy_header_t *hd, ngx_str_t *value);
static ngx_int_t ngx_http_mcp_proxy_header_value(ngx_http_request_t *r,
    ngx_http_mcp_proxy_header_t *hd, ngx_str_t *value);


/*
 * Headers the gateway writes itself or that frame the request: another
 * value would desync the upstream connection or the session.
 */
static ngx_str_t  ngx_http_mcp_proxy_own_headers[] = {
    ngx_string("host"),
    ngx_string("content-length"),
    ngx_string("transfer-encoding"),
    ngx_string("connection"),
    ngx_string("keep-alive"),
    ngx_string("upgrade"),
    ngx_string("te"),
    ngx_string("trailer"),
    ngx_string("expect"),
    ngx_string("proxy-connection"),
    ngx_string("mcp-session-id"),
    ngx_null_string
};


/*
 * mcp_secret $name file: the variable's value is the file's text, its
 * trailing line ends cut.  The variable is not hashed: a configuration
 * names it (a value, a log_format), but no name looked up at run time
 * (SSI's echo, a script's variables) finds it.
 */

char *
ngx_http_mcp_secret(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_str_t             *value, name, *secret;
    ngx_pool_cleanup_t    *cln;
    ngx_http_variable_t   *var;

    value = cf->args->elts;
    name = value[1];

    if (name.len < 2 || name.data[0] != '$') {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "invalid variable name \"%V\"", &name);
        return NGX_CONF_ERROR;
    }

    name.len--;
    name.data++;

    secret = ngx_palloc(cf->pool, sizeof(ngx_str_t));
    if (secret == NULL) {
        return NGX_CONF_ERROR;
    }

    cln = ngx_pool_cleanup_add(cf->pool, 0);
    if (cln == NULL) {
        return NGX_CONF_ERROR;
    }

    ngx_str_null(secret);
    cln->handler = ngx_http_mcp_secret_cleanup;
    cln->data = secret;

    if (ngx_http_mcp_secret_read(cf, &value[2], secret) != NGX_OK) {
        return NGX_CONF_ERROR;
    }

    /* a name already defined (another mcp_secret, set, map) is refused */
    var = ngx_http_add_variable(cf, &name, NGX_HTTP_VAR_NOHASH);
    if (var == NULL) {
        return NGX_CONF_ERROR;
    }

    var->get_handler = ngx_http_mcp_secret_variable;
    var->data = (uintptr_t) secret;

    return NGX_CONF_OK;
}


static ngx_int_t
ngx_http_mcp_secret_read(ngx_conf_t *cf, ngx_str_t *name, ngx_str_t *secret)
{
    u_char           *p;
    size_t            size;
    ssize_t           n;
    ngx_int_t         rc;
    ngx_file_t        file;
    ngx_file_info_t   fi;

    if (ngx_conf_full_name(cf->cycle, name, 1) != NGX_OK) {
        return NGX_ERROR;
    }

    ngx_memzero(&file, sizeof(ngx_file_t));
    file.name = *name;
    file.log = cf->log;

    file.fd = ngx_open_file(name->data, NGX_FILE_RDONLY, NGX_FILE_OPEN, 0);

    if (file.fd == NGX_INVALID_FILE) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, ngx_errno,
                           "mcp_secret: " ngx_open_file_n " \"%V\" failed",
                           name);
        return NGX_ERROR;
    }

    rc = NGX_ERROR;

    if (ngx_fd_info(file.fd, &fi) == NGX_FILE_ERROR || !ngx_is_file(&fi)
        || ngx_file_size(&fi) > NGX_HTTP_MCP_SECRET_MAX)
    {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "mcp_secret: \"%V\" is not a file of at most %d "
                           "bytes", name, NGX_HTTP_MCP_SECRET_MAX);
        goto done;
    }

    if (ngx_file_access(&fi) & S_IROTH) {
        ngx_conf_log_error(NGX_LOG_WARN, cf, 0,
                           "mcp_secret: \"%V\" is readable by every user "
                           "of this host: chmod o-r it", name);
    }

    size = (size_t) ngx_file_size(&fi);

    secret->data = ngx_pnalloc(cf->pool, size + 1);
    if (secret->data == NULL) {
        goto done;
    }

    n = ngx_read_file(&file, secret->data, size, 0);

    if (n != (ssize_t) size) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "mcp_secret: cannot read \"%V\"", name);
        goto done;
    }

    secret->len = size;

    /* the line end an editor or echo leaves */
    while (secret->len
           && (secret->data[secret->len - 1] == LF
               || secret->data[secret->len - 1] == CR))
    {
        secret->len--;
    }

    if (secret->len == 0) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "mcp_secret: \"%V\" is empty", name);
        goto done;
    }

    /* a header value is one line: a control byte would end it early */
    for (p = secret->data; p < secret->data + secret->len; p++) {
        if (*p < 0x20 || *p == 0x7f) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "mcp_secret: \"%V\" holds a line break or "
                               "another control character", name);
            goto done;
        }
    }

    rc = NGX_OK;

done:

    if (ngx_close_file(file.fd) == NGX_FILE_ERROR) {
        ngx_conf_log_error(NGX_LOG_ALERT, cf, ngx_errno,
                           ngx_close_file_n " \"%V\" failed", name);
    }

    return rc;
}


/* the secret does not outlive its configuration in the process's memory */

static void
ngx_http_mcp_secret_cleanup(void *data)
{
    ngx_str_t  *secret = data;

    if (secret->data != NULL) {
        ngx_explicit_memzero(secret->data, secret->len);
    }
}


static ngx_int_t
ngx_http_mcp_secret_variable(ngx_http_request_t *r,
    ngx_http_variable_value_t *v, uintptr_t data)
{
    ngx_str_t  *secret = (ngx_str_t *) data;

    v->data = secret->data;
    v->len = secret->len;
    v->valid = 1;
    v->no_cacheable = 0;
    v->not_found = 0;

    return NGX_OK;
}


/*
 * mcp_pass_set_header name value: a header of the request to the
 * upstream, in place of the client's of that name if one is relayed.
 * The list is inherited whole, as proxy_set_header's: a location with
 * one of its own has none of its parent's.
 */

char *
ngx_http_mcp_pass_set_header(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_mcp_proxy_loc_conf_t *plcf = conf;

    char                         *rv;
    ngx_str_t                    *value;
    ngx_http_mcp_proxy_header_t  *hd;

    value = cf->args->elts;

    if (plcf->set_headers == NGX_CONF_UNSET_PTR) {
        plcf->set_headers = ngx_array_create(cf->pool, 2,
                                        sizeof(ngx_http_mcp_proxy_header_t));
        if (plcf->set_headers == NULL) {
            return NGX_CONF_ERROR;
        }
    }

    rv = ngx_http_mcp_proxy_header_name(cf, plcf, &value[1]);
    if (rv != NGX_CONF_OK) {
        return rv;
    }

    hd = ngx_array_push(plcf->set_headers);
    if (hd == NULL) {
        return NGX_CONF_ERROR;
    }

    hd->name = value[1];

    hd->lowcase.len = value[1].len;
    hd->lowcase.data = ngx_pnalloc(cf->pool, value[1].len);
    if (hd->lowcase.data == NULL) {
        return NGX_CONF_ERROR;
    }

    ngx_strlow(hd->lowcase.data, value[1].data, value[1].len);

    return ngx_http_mcp_proxy_header_parts(cf, hd, &value[2]);
}


/* a token (RFC 9110), not one the gateway writes, not set twice */

static char *
ngx_http_mcp_proxy_header_name(ngx_conf_t *cf,
    ngx_http_mcp_proxy_loc_conf_t *plcf, ngx_str_t *name)
{
    u_char                       *p;
    ngx_str_t                    *own;
    ngx_uint_t                    i;
    ngx_http_mcp_proxy_header_t  *hd;

    if (name->len == 0) {
        return "takes a header name";
    }

    for (p = name->data; p < name->data + name->len; p++) {
        if (*p <= 0x20 || *p >= 0x7f
            || ngx_strchr("\"(),/:;<=>?@[\\]{}", *p) != NULL)
        {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "invalid header name \"%V\"", name);
            return NGX_CONF_ERROR;
        }
    }

    for (own = ngx_http_mcp_proxy_own_headers; own->len; own++) {
        if (own->len == name->len
            && ngx_strncasecmp(own->data, name->data, own->len) == 0)
        {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "the gateway writes the \"%V\" header "
                               "itself", name);
            return NGX_CONF_ERROR;
        }
    }

    hd = plcf->set_headers->elts;

    for (i = 0; i < plcf->set_headers->nelts; i++) {
        if (hd[i].name.len == name->len
            && ngx_strncasecmp(hd[i].name.data, name->data, name->len) == 0)
        {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "the \"%V\" header is set twice", name);
            return NGX_CONF_ERROR;
        }
    }

    return NGX_CONF_OK;
}


/*
 * A value as nginx writes one, "text $name ${name}text", cut into parts:
 * a text and the variable after it.  A regex capture ($1) is not one:
 * no regex of this location is run for the upstream request.
 */

static char *
ngx_http_mcp_proxy_header_parts(ngx_conf_t *cf,
    ngx_http_mcp_proxy_header_t *hd, ngx_str_t *value)
{
    u_char                     *p, *last, *text, *name;
    ngx_str_t                   var;
    ngx_http_mcp_proxy_part_t  *part;

    if (ngx_array_init(&hd->parts, cf->pool, 2,
                       sizeof(ngx_http_mcp_proxy_part_t))
        != NGX_OK)
    {
        return NGX_CONF_ERROR;
    }

    p = value->data;
    last = p + value->len;
    text = p;

    for ( ;; ) {

        while (p < last && *p != '$') {
            p++;
        }

        part = ngx_array_push(&hd->parts);
        if (part == NULL) {
            return NGX_CONF_ERROR;
        }

        part->text.data = text;
        part->text.len = p - text;
        part->index = -1;

        if (p == last) {
            return NGX_CONF_OK;
        }

        p++;

        if (p < last && *p == '{') {
            name = ++p;

            while (p < last && *p != '}') {
                p++;
            }

            if (p == last) {
                goto invalid;
            }

            var.len = p++ - name;

        } else {
            name = p;

            while (p < last
                   && ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z')
                       || (*p >= '0' && *p <= '9') || *p == '_'))
            {
                p++;
            }

            var.len = p - name;
        }

        var.data = name;

        if (var.len == 0) {
            goto invalid;
        }

        if (name[0] >= '0' && name[0] <= '9') {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "\"%V\" of mcp_pass_set_header \"%V\": regex "
                               "captures are not taken", &var, &hd->name);
            return NGX_CONF_ERROR;
        }

        part->index = ngx_http_get_variable_index(cf, &var);
        if (part->index == NGX_ERROR) {
            return NGX_CONF_ERROR;
        }

        text = p;
    }

invalid:

    ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                       "invalid variable name in the value of "
                       "mcp_pass_set_header \"%V\"", &hd->name);
    return NGX_CONF_ERROR;
}


/*
 * The values of a location's mcp_pass_set_header for this request, and
 * in len the length of the lines they make.  A value that comes out
 * empty sends no header; one with a line break (a variable of the
 * client's, decoded) sends none either, rather than a line the client
 * wrote.
 */

ngx_str_t *
ngx_http_mcp_proxy_set_headers(ngx_http_request_t *r,
    ngx_http_mcp_proxy_loc_conf_t *plcf, size_t *len)
{
    ngx_str_t                    *values, *v;
    ngx_uint_t                    i;
    ngx_http_mcp_proxy_header_t  *hd;

    hd = plcf->set_headers->elts;

    values = ngx_palloc(r->pool, plcf->set_headers->nelts * sizeof(ngx_str_t));
    if (values == NULL) {
        return NULL;
    }

    *len = 0;

    for (i = 0; i < plcf->set_headers->nelts; i++) {
        v = &values[i];

        if (ngx_http_mcp_proxy_header_value(r, &hd[i], v) != NGX_OK) {
            return NULL;
        }

        if (v->len == 0) {
            continue;
        }

        if (ngx_strlchr(v->data, v->data + v->len, CR)
            || ngx_strlchr(v->data, v->data + v->len, LF)
            || ngx_strlchr(v->data, v->data + v->len, '\0'))
        {
            ngx_log_error(NGX_LOG_INFO, r->connection->log, 0,
                          "mcp: the value of \"mcp_pass_set_header %V\" "
                          "holds a line break: the header is not sent",
                          &hd[i].name);
            v->len = 0;
            continue;
        }

        *len += hd[i].name.len + sizeof(": " CRLF) - 1 + v->len;
    }

    return values;
}


/* each variable read once: a value that changes per read has one length */

static ngx_int_t
ngx_http_mcp_proxy_header_value(ngx_http_request_t *r,
    ngx_http_mcp_proxy_header_t *hd, ngx_str_t *value)
{
    u_char                      *p;
    size_t                       len;
    ngx_uint_t                   i;
    ngx_http_variable_value_t  **vv;
    ngx_http_mcp_proxy_part_t   *part;

    part = hd->parts.elts;

    if (hd->parts.nelts == 1) {
        *value = part[0].text;
        return NGX_OK;
    }

    vv = ngx_palloc(r->pool, hd->parts.nelts * sizeof(void *));
    if (vv == NULL) {
        return NGX_ERROR;
    }

    len = 0;

    for (i = 0; i < hd->parts.nelts; i++) {
        len += part[i].text.len;
        vv[i] = NULL;

        if (part[i].index == -1) {
            continue;
        }

        vv[i] = ngx_http_get_flushed_variable(r, part[i].index);
        if (vv[i] == NULL) {
            return NGX_ERROR;
        }

        if (!vv[i]->not_found) {
            len += vv[i]->len;
        }
    }

    p = ngx_pnalloc(r->pool, len);
    if (p == NULL) {
        return NGX_ERROR;
    }

    value->data = p;
    value->len = len;

    for (i = 0; i < hd->parts.nelts; i++) {
        p = ngx_cpymem(p, part[i].text.data, part[i].text.len);

        if (vv[i] != NULL && !vv[i]->not_found) {
            p = ngx_cpymem(p, vv[i]->data, vv[i]->len);
        }
    }

    return NGX_OK;
}


u_char *
ngx_http_mcp_proxy_set_headers_write(ngx_http_mcp_proxy_loc_conf_t *plcf,
    ngx_str_t *values, u_char *p)
{
    ngx_uint_t                    i;
    ngx_http_mcp_proxy_header_t  *hd;

    hd = plcf->set_headers->elts;

    for (i = 0; i < plcf->set_headers->nelts; i++) {

        if (values[i].len == 0) {
            continue;
        }

        p = ngx_cpymem(p, hd[i].name.data, hd[i].name.len);
        *p++ = ':';
        *p++ = ' ';
        p = ngx_cpymem(p, values[i].data, values[i].len);
        *p++ = CR;
        *p++ = LF;
    }

    return p;
}


/* whether the client's header h is one the location sets in its place */

ngx_uint_t
ngx_http_mcp_proxy_set_header_named(ngx_http_mcp_proxy_loc_conf_t *plcf,
    ngx_table_elt_t *h)
{
    ngx_uint_t                    i;
    ngx_http_mcp_proxy_header_t  *hd;

    hd = plcf->set_headers->elts;

    for (i = 0; i < plcf->set_headers->nelts; i++) {
        if (hd[i].lowcase.len == h->key.len
            && ngx_memcmp(hd[i].lowcase.data, h->lowcase_key, h->key.len)
               == 0)
        {
            return 1;
        }
    }

    return 0;
}
