
/*
 * $mcp_arg_NAME: a location-backed call's arguments, read from its
 * fetch's subrequest (ngx_http_mcp_loctool_call.c).
 */


#include "ngx_http_mcp_loctool.h"


static ngx_int_t ngx_http_mcp_loctool_arg_variable(ngx_http_request_t *r,
    ngx_http_variable_value_t *v, uintptr_t data);


ngx_int_t
ngx_http_mcp_loctool_add_variables(ngx_conf_t *cf)
{
    ngx_str_t              name = ngx_string("mcp_arg_");
    ngx_http_variable_t   *v;

    v = ngx_http_add_variable(cf, &name,
                              NGX_HTTP_VAR_NOCACHEABLE|NGX_HTTP_VAR_PREFIX);
    if (v == NULL) {
        return NGX_ERROR;
    }

    v->get_handler = ngx_http_mcp_loctool_arg_variable;

    return NGX_OK;
}


/*
 * $mcp_arg_NAME: the argument percent-encoded as one URI component (all
 * but the unreserved A-Z a-z 0-9 - . _ ~), strings as their text, other
 * values as compact JSON, empty when absent: the member of the input
 * schema's property of that name (loctool_arg()).  A value with a "."
 * or ".." segment is refused: an upstream that decodes %2F and %2E
 * before it resolves dot segments (nginx does) would climb out of the
 * path the location wrote.  The handler refused
 * such a call before its subrequest already (loctool_check_args()); this
 * is for a name the configuration did not index, which nginx evaluates
 * as empty.
 */

static ngx_int_t
ngx_http_mcp_loctool_arg_variable(ngx_http_request_t *r,
    ngx_http_variable_value_t *v, uintptr_t data)
{
    ngx_str_t *var = (ngx_str_t *) data;

    u_char                        *p, *s;
    char                          *json;
    ngx_str_t                      name;
    cJSON                         *args, *arg;
    size_t                         i, n;
    ngx_http_mcp_fetch_state_t    *fetch;
    ngx_http_mcp_loctool_state_t  *st;
    static u_char                  hex[] = "0123456789ABCDEF";

    v->valid = 1;
    v->no_cacheable = 1;
    v->not_found = 0;
    v->len = 0;
    v->data = (u_char *) "";

    fetch = ngx_http_mcp_fetch_of(r);

    /* another's fetch (a gateway's backend) has no args */
    if (fetch == NULL
        || fetch->event.handler != ngx_http_mcp_loctool_event)
    {
        return NGX_OK;
    }

    st = fetch->event.data;

    name.len = var->len - (sizeof("mcp_arg_") - 1);
    name.data = var->data + sizeof("mcp_arg_") - 1;

    args = ngx_http_mcp_call_arguments(fetch->call);
    arg = ngx_http_mcp_loctool_arg(st->tool, args, &name);

    if (arg == NULL || cJSON_IsNull(arg)) {
        return NGX_OK;
    }

    json = NULL;

    if (cJSON_IsString(arg)) {
        s = (u_char *) arg->valuestring;

    } else {
        json = cJSON_PrintUnformatted(arg);
        if (json == NULL) {
            return NGX_ERROR;
        }

        s = (u_char *) json;
    }

    n = ngx_strlen(s);

    if (ngx_http_mcp_loctool_dot_segment(s, n)) {
        ngx_log_error(NGX_LOG_INFO, r->connection->log, 0,
                      "mcp: $%V refused: a \".\" or \"..\" segment", var);
        cJSON_free(json);

        st->refused = ngx_pnalloc(fetch->pool, name.len + 1);
        if (st->refused != NULL) {
            ngx_memcpy(st->refused, name.data, name.len);
            st->refused[name.len] = '\0';
        }

        return NGX_ERROR;
    }

    p = ngx_pnalloc(r->pool, n * 3);
    if (p == NULL) {
        cJSON_free(json);
        return NGX_ERROR;
    }

    v->data = p;

    for (i = 0; i < n; i++) {
        if (isalnum(s[i]) || s[i] == '-' || s[i] == '.' || s[i] == '_'
            || s[i] == '~')
        {
            *p++ = s[i];
            continue;
        }

        *p++ = '%';
        *p++ = hex[s[i] >> 4];
        *p++ = hex[s[i] & 0xf];
    }

    v->len = p - v->data;

    cJSON_free(json);

    return NGX_OK;
}
