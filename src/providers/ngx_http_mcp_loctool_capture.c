
/*
 * The capture of a location-backed call's subrequest (see
 * ngx_http_mcp_loctool_call.c): a header and a body filter, first in
 * nginx's chains, that take the reply of a subrequest of ours into the
 * call's pool and pass everything else on; and $mcp_arg_NAME, which
 * reads the call's arguments from the subrequest.  A subrequest is ours
 * when its post_subrequest handler is, which survives the internal
 * redirects that clear a request's module contexts.
 */


#include "ngx_http_mcp_loctool.h"


static ngx_int_t ngx_http_mcp_loctool_header_filter(ngx_http_request_t *r);
static ngx_int_t ngx_http_mcp_loctool_body_filter(ngx_http_request_t *r,
    ngx_chain_t *in);
static ngx_int_t ngx_http_mcp_loctool_append(ngx_http_mcp_loctool_state_t *st,
    ngx_buf_t *b);
static ngx_int_t ngx_http_mcp_loctool_session_id(ngx_http_request_t *r,
    ngx_http_mcp_loctool_state_t *st);
static ngx_http_mcp_loctool_link_t *ngx_http_mcp_loctool_link(
    ngx_http_request_t *r);
static ngx_int_t ngx_http_mcp_loctool_arg_variable(ngx_http_request_t *r,
    ngx_http_variable_value_t *v, uintptr_t data);


static ngx_http_output_header_filter_pt  ngx_http_next_header_filter;
static ngx_http_output_body_filter_pt    ngx_http_next_body_filter;


/* the link of a subrequest of ours, or of the one it is a subrequest of */

static ngx_http_mcp_loctool_link_t *
ngx_http_mcp_loctool_link(ngx_http_request_t *r)
{
    for ( /* void */ ; r != r->main; r = r->parent) {
        if (r->post_subrequest != NULL
            && r->post_subrequest->handler == ngx_http_mcp_loctool_done)
        {
            return r->post_subrequest->data;
        }
    }

    return NULL;
}

ngx_int_t
ngx_http_mcp_loctool_init_filters(ngx_conf_t *cf)
{
    ngx_http_next_header_filter = ngx_http_top_header_filter;
    ngx_http_top_header_filter = ngx_http_mcp_loctool_header_filter;

    ngx_http_next_body_filter = ngx_http_top_body_filter;
    ngx_http_top_body_filter = ngx_http_mcp_loctool_body_filter;

    return NGX_OK;
}

/*
 * The location rewrite phase, which every internal redirect passes
 * before any content (an X-Accel-Redirect that proxy_pass acts on,
 * error_page, try_files, rewrite ... last, a named location): a
 * subrequest of ours that must not be redirected ends here, failed,
 * before the location it was sent to runs.  Its reply would be some
 * other location's, one a tool's upstream must not reach (a denied
 * tool's, one with the gateway's own credentials).
 */

ngx_int_t
ngx_http_mcp_loctool_redirect_handler(ngx_http_request_t *r)
{
    ngx_http_core_loc_conf_t      *clcf;
    ngx_http_mcp_loctool_link_t   *link;
    ngx_http_mcp_loctool_state_t  *st;

    if (r == r->main || r->uri_changes > NGX_HTTP_MAX_URI_CHANGES
        || r->post_subrequest == NULL
        || r->post_subrequest->handler != ngx_http_mcp_loctool_done)
    {
        return NGX_DECLINED;
    }

    link = r->post_subrequest->data;

    if (!link->no_redirect) {
        return NGX_DECLINED;
    }

    clcf = ngx_http_get_module_loc_conf(r, ngx_http_core_module);

    ngx_log_error(NGX_LOG_ERR, r->connection->log, 0,
                  "mcp: a backend's reply is refused: it comes from "
                  "\"%V\" after an internal redirect",
                  clcf->named ? &clcf->name : &r->uri);

    st = link->state;

    if (st != NULL) {
        st->redirected = 1;
    }

    /* the post_subrequest handler notes the failure and ends it quietly */
    return NGX_ERROR;
}


static ngx_int_t
ngx_http_mcp_loctool_header_filter(ngx_http_request_t *r)
{
    u_char                        *p;
    size_t                         len;
    ngx_http_upstream_t           *u;
    ngx_http_mcp_loctool_link_t   *link;
    ngx_http_mcp_loctool_state_t  *st;

    if (r == r->main || r->post_subrequest == NULL
        || r->post_subrequest->handler != ngx_http_mcp_loctool_done)
    {
        return ngx_http_next_header_filter(r);
    }

    /* what ngx_http_header_filter() would do for a subrequest */
    r->header_sent = 1;

    /*
     * A buffered upstream reply reaches a background subrequest's filters
     * only at its end (the event pipe writes only for the request that
     * owns the connection, c->data), spooled to a temporary file up to
     * proxy_max_temp_file_size until then.  Unbuffered, it comes as it
     * arrives, and mcp_tool_max_size stops it at the bound.  A reply
     * being cached or stored keeps the buffering these need.  The
     * upstream chooses after sending the header, as for X-Accel-Buffering.
     */

    u = r->upstream;

    if (u != NULL && !u->cacheable && !u->store) {
        u->buffering = 0;
    }

    link = r->post_subrequest->data;
    st = link->state;

    if (st == NULL || st->header) {
        return NGX_OK;
    }

    st->header = 1;
    st->status = r->headers_out.status;

    /* the bare type, lowercased: "application/json; charset=utf-8" */

    len = r->headers_out.content_type.len;
    p = ngx_strlchr(r->headers_out.content_type.data,
                    r->headers_out.content_type.data + len, ';');

    if (p != NULL) {
        len = p - r->headers_out.content_type.data;
    }

    while (len && r->headers_out.content_type.data[len - 1] == ' ') {
        len--;
    }

    st->type.data = ngx_pnalloc(st->pool, len + 1);
    if (st->type.data == NULL) {
        return NGX_ERROR;
    }

    ngx_strlow(st->type.data, r->headers_out.content_type.data, len);
    st->type.data[len] = '\0';
    st->type.len = len;

    if (st->stream
        && (len != sizeof("text/event-stream") - 1
            || ngx_strncmp(st->type.data, "text/event-stream", len) != 0))
    {
        /* a JSON reply is read whole, as without the stream mode */
        st->stream = 0;
    }

    if (!st->stream && r->headers_out.content_length_n > (off_t) st->max) {
        st->too_big = 1;
    }

    if (st->want_session
        && ngx_http_mcp_loctool_session_id(r, st) != NGX_OK)
    {
        return NGX_ERROR;
    }

    ngx_post_event(&st->event, &ngx_posted_events);

    return NGX_OK;
}

/*
 * The reply's Mcp-Session-Id, for the gateway over several MCP servers;
 * an id over 1024 bytes is not kept (the backend is then sessionless
 * for us, and its next request fails as a bad session would).
 */

static ngx_int_t
ngx_http_mcp_loctool_session_id(ngx_http_request_t *r,
    ngx_http_mcp_loctool_state_t *st)
{
    ngx_uint_t        i;
    ngx_list_part_t  *part;
    ngx_table_elt_t  *h;

    part = &r->headers_out.headers.part;
    h = part->elts;

    for (i = 0; /* void */; i++) {

        if (i >= part->nelts) {
            if (part->next == NULL) {
                return NGX_OK;
            }

            part = part->next;
            h = part->elts;
            i = 0;
        }

        if (h[i].hash == 0
            || h[i].key.len != sizeof("Mcp-Session-Id") - 1
            || ngx_strncasecmp(h[i].key.data, (u_char *) "Mcp-Session-Id",
                               h[i].key.len) != 0
            || h[i].value.len == 0 || h[i].value.len > 1024)
        {
            continue;
        }

        st->session_id.data = ngx_pstrdup(st->pool,
                                          &h[i].value);
        if (st->session_id.data == NULL) {
            return NGX_ERROR;
        }

        st->session_id.len = h[i].value.len;

        return NGX_OK;
    }
}


static ngx_int_t
ngx_http_mcp_loctool_body_filter(ngx_http_request_t *r, ngx_chain_t *in)
{
    ngx_chain_t                   *cl;
    ngx_http_mcp_loctool_link_t   *link;
    ngx_http_mcp_loctool_state_t  *st;

    if (r == r->main || r->post_subrequest == NULL
        || r->post_subrequest->handler != ngx_http_mcp_loctool_done)
    {
        return ngx_http_next_body_filter(r, in);
    }

    link = r->post_subrequest->data;

    /* everything is taken (or dropped): the buffers are free again */

    for (cl = in; cl; cl = cl->next) {
        st = link->state;

        if (st != NULL && !st->too_big
            && ngx_http_mcp_loctool_append(st, cl->buf) != NGX_OK)
        {
            return NGX_ERROR;
        }

        cl->buf->pos = cl->buf->last;

        if (cl->buf->in_file) {
            cl->buf->file_pos = cl->buf->file_last;
        }
    }

    return NGX_OK;
}

static ngx_int_t
ngx_http_mcp_loctool_append(ngx_http_mcp_loctool_state_t *st, ngx_buf_t *b)
{
    off_t    size;
    u_char  *p;
    size_t   limit;
    ssize_t  n;

    size = ngx_buf_size(b);

    if (size == 0 || ngx_buf_special(b)) {
        return NGX_OK;
    }

    /*
     * A stream's reader takes its events as they come, and bounds each;
     * what it has not taken yet may be several, read in one go before
     * it could run: up to NGX_HTTP_MCP_LOCTOOL_BURST times the bound.
     */
    limit = st->stream ? st->max * NGX_HTTP_MCP_LOCTOOL_BURST : st->max;

    if ((off_t) (limit - st->len) < size) {
        st->too_big = 1;
        ngx_post_event(&st->event, &ngx_posted_events);
        return NGX_OK;
    }

    if (st->len + size > st->size) {
        /* doubling, up to the bound */
        st->size = ngx_max(st->size * 2, st->len + (size_t) size);
        st->size = ngx_max(st->size, 1024);
        st->size = ngx_min(st->size, limit);

        p = ngx_pnalloc(st->pool, st->size);
        if (p == NULL) {
            return NGX_ERROR;
        }

        if (st->len) {
            ngx_memcpy(p, st->body, st->len);
        }

        st->body = p;
    }

    if (ngx_buf_in_memory(b)) {
        st->len = ngx_cpymem(st->body + st->len, b->pos, size) - st->body;

    } else {
        n = ngx_read_file(b->file, st->body + st->len, size, b->file_pos);

        if (n != size) {
            return NGX_ERROR;
        }

        st->len += size;
    }

    if (st->stream) {
        ngx_post_event(&st->event, &ngx_posted_events);
    }

    return NGX_OK;
}

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
    ngx_http_mcp_loctool_link_t   *link;
    ngx_http_mcp_loctool_state_t  *st;
    static u_char                  hex[] = "0123456789ABCDEF";

    v->valid = 1;
    v->no_cacheable = 1;
    v->not_found = 0;
    v->len = 0;
    v->data = (u_char *) "";

    link = ngx_http_mcp_loctool_link(r);
    st = link ? link->state : NULL;

    /* a fetch without a call (a gateway's backend stream) has no args */
    if (st == NULL || st->call == NULL) {
        return NGX_OK;
    }

    name.len = var->len - (sizeof("mcp_arg_") - 1);
    name.data = var->data + sizeof("mcp_arg_") - 1;

    args = ngx_http_mcp_call_arguments(st->call);
    arg = (st->tool != NULL) ? ngx_http_mcp_loctool_arg(st->tool, args, &name)
                             : NULL;

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

        st->refused.data = ngx_pnalloc(st->pool, name.len);
        if (st->refused.data != NULL) {
            ngx_memcpy(st->refused.data, name.data, name.len);
            st->refused.len = name.len;
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
