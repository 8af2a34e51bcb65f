
/*
 * Tool policy: mcp_tools_allow and mcp_tools_deny, by name or by regular
 * expression (PCRE2 through ngx_regex).  A tool is allowed when no allow
 * list is set or it matches one, and it matches no deny pattern.  Built-in
 * endpoints and mcp_pass obey the same lists: a denied tools/call never
 * runs, a denied tool is absent from tools/list.
 */


#include "ngx_http_mcp_core.h"
#include "ngx_http_mcp_json.h"
#include "ngx_http_mcp_sse_read.h"


typedef struct {
    ngx_str_t                  name;
    ngx_regex_t               *regex;       /* or NULL: the exact name */
} ngx_http_mcp_pattern_t;


static ngx_uint_t ngx_http_mcp_policy_match(ngx_array_t *patterns,
    ngx_str_t *name);
static ngx_int_t ngx_http_mcp_policy_filter_message(cJSON *message,
    ngx_http_mcp_tool_filter_t *tf, ngx_uint_t *changed);
static ngx_int_t ngx_http_mcp_policy_filter_tool(void *data, cJSON *tool,
    ngx_str_t *name);
static ngx_int_t ngx_http_mcp_policy_filter_sse(ngx_pool_t *pool,
    ngx_http_mcp_tool_filter_t *tf, ngx_str_t *in, ngx_str_t *out,
    const char **error);
static u_char *ngx_http_mcp_policy_room(ngx_pool_t *pool, ngx_str_t *out,
    size_t *size, size_t n);


char *
ngx_http_mcp_tools_policy(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    char  *p = conf;

    u_char                  errstr[NGX_MAX_CONF_ERRSTR];
    ngx_str_t              *value;
    ngx_uint_t              i;
    ngx_array_t           **list;
    ngx_regex_compile_t     rc;
    ngx_http_mcp_pattern_t *pat;

    list = (ngx_array_t **) (p + cmd->offset);

    if (*list == NGX_CONF_UNSET_PTR) {
        *list = ngx_array_create(cf->pool, 4, sizeof(ngx_http_mcp_pattern_t));
        if (*list == NULL) {
            return NGX_CONF_ERROR;
        }
    }

    value = cf->args->elts;

    for (i = 1; i < cf->args->nelts; i++) {

        pat = ngx_array_push(*list);
        if (pat == NULL) {
            return NGX_CONF_ERROR;
        }

        pat->name = value[i];
        pat->regex = NULL;

        if (value[i].data[0] != '~') {
            continue;
        }

        ngx_memzero(&rc, sizeof(ngx_regex_compile_t));

        rc.pattern.data = value[i].data + 1;
        rc.pattern.len = value[i].len - 1;
        rc.pool = cf->pool;
        rc.err.len = NGX_MAX_CONF_ERRSTR;
        rc.err.data = errstr;

        if (ngx_regex_compile(&rc) != NGX_OK) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "%V", &rc.err);
            return NGX_CONF_ERROR;
        }

        pat->regex = rc.regex;
    }

    return NGX_CONF_OK;
}


ngx_uint_t
ngx_http_mcp_policy_on(ngx_http_mcp_loc_conf_t *mlcf)
{
    return mlcf->tools_allow != NULL || mlcf->tools_deny != NULL;
}


ngx_uint_t
ngx_http_mcp_tool_allowed(ngx_http_mcp_loc_conf_t *mlcf, ngx_str_t *name)
{
    if (mlcf->tools_allow && !ngx_http_mcp_policy_match(mlcf->tools_allow,
                                                         name))
    {
        return 0;
    }

    if (mlcf->tools_deny && ngx_http_mcp_policy_match(mlcf->tools_deny,
                                                       name))
    {
        return 0;
    }

    return 1;
}


static ngx_uint_t
ngx_http_mcp_policy_match(ngx_array_t *patterns, ngx_str_t *name)
{
    ngx_uint_t               i;
    ngx_http_mcp_pattern_t  *pat;

    pat = patterns->elts;

    for (i = 0; i < patterns->nelts; i++) {

        if (pat[i].regex == NULL) {
            if (pat[i].name.len == name->len
                && ngx_strncmp(pat[i].name.data, name->data, name->len) == 0)
            {
                return 1;
            }

            continue;
        }

        if (ngx_regex_exec(pat[i].regex, name, NULL, 0) >= 0) {
            return 1;
        }
    }

    return 0;
}


/*
 * A reply of an upstream to tools/list, JSON or SSE, without the tools
 * the policy denies.  A message is read with the strict scan: one that
 * is not valid JSON, or has a key twice, could list to the client what
 * the filter did not see (a last-wins parser reads the other "result"),
 * so the reply is refused: NGX_DECLINED, *error says why.  Messages that
 * carry no tools pass unchanged.
 */

ngx_int_t
ngx_http_mcp_policy_filter_reply(ngx_pool_t *pool,
    ngx_http_mcp_tool_filter_t *tf, ngx_str_t *in, ngx_str_t *out,
    const char **error)
{
    cJSON       *json;
    u_char      *p, *q, *end;
    ngx_str_t    body;
    ngx_int_t    rc;
    ngx_uint_t   changed;

    /*
     * The BOMs the reply begins with are read past and not passed on.  A
     * client drops one whether it reads JSON (Response.json() decodes
     * UTF-8) or SSE: "BOM{...}" was read as SSE here, found without
     * events and passed on whole, and the client listed every tool.  One
     * BOM more was the first line's name here and the client's second
     * BOM to drop.  With none left, every client reads what was filtered.
     */

    end = in->data + in->len;

    for (p = in->data; (q = ngx_http_mcp_sse_bom(p, end)) != p; p = q) {
        /* void */
    }

    body.data = p;
    body.len = end - p;

    *out = body;

    while (p < end && (*p == ' ' || *p == '\r' || *p == '\n' || *p == '\t')) {
        p++;
    }

    if (p < end && *p != '{' && *p != '[') {
        return ngx_http_mcp_policy_filter_sse(pool, tf, &body, out, error);
    }

    rc = ngx_http_mcp_json_parse(pool, body.data, body.len, NULL, &json,
                                 error);
    if (rc != NGX_OK) {
        return rc;
    }

    changed = 0;
    rc = ngx_http_mcp_policy_filter_tree(json, tf, &changed);

    if (rc == NGX_OK && changed) {
        out->data = ngx_http_mcp_json_print(pool, json, &out->len);
        rc = (out->data != NULL) ? NGX_OK : NGX_ERROR;
    }

    cJSON_Delete(json);

    return rc;
}


/*
 * a message, or each message of a batch; then what else reads them (a
 * stdio server's replies come parsed: mcp_stdio reads them here too)
 */

ngx_int_t
ngx_http_mcp_policy_filter_tree(cJSON *json, ngx_http_mcp_tool_filter_t *tf,
    ngx_uint_t *changed)
{
    cJSON  *item;

    if (!cJSON_IsArray(json)) {
        (void) ngx_http_mcp_policy_filter_message(json, tf, changed);

        return (tf->message != NULL) ? tf->message(tf->data, json, changed)
                                     : NGX_OK;
    }

    cJSON_ArrayForEach(item, json) {
        (void) ngx_http_mcp_policy_filter_message(item, tf, changed);

        if (tf->message != NULL
            && tf->message(tf->data, item, changed) != NGX_OK)
        {
            return NGX_ERROR;
        }
    }

    return NGX_OK;
}


/* a message's result.tools, denied entries taken out */

static ngx_int_t
ngx_http_mcp_policy_filter_message(cJSON *message,
    ngx_http_mcp_tool_filter_t *tf, ngx_uint_t *changed)
{
    return ngx_http_mcp_jsonrpc_tools(
               cJSON_GetObjectItemCaseSensitive(message, "result"),
               ngx_http_mcp_policy_filter_tool, tf, changed);
}


static ngx_int_t
ngx_http_mcp_policy_filter_tool(void *data, cJSON *tool, ngx_str_t *name)
{
    ngx_http_mcp_tool_filter_t *tf = data;

    return tf->allowed(tf->data, name) ? NGX_OK : NGX_DECLINED;
}


/*
 * SSE: each event's data, its data: lines joined, is one JSON-RPC message
 * (or a batch); an event that carries a tools/list result is written
 * again, with one data: line, the others are copied.
 */

static ngx_int_t
ngx_http_mcp_policy_filter_sse(ngx_pool_t *pool,
    ngx_http_mcp_tool_filter_t *tf, ngx_str_t *in, ngx_str_t *out,
    const char **error)
{
    u_char     *p, *end, *start;
    size_t      size;
    ngx_int_t   rc;

    /*
     * printed again, a message may be longer (escapes, numbers): the
     * buffer grows when an event does not fit
     */
    size = 2 * in->len + 16;

    out->data = ngx_pnalloc(pool, size);
    if (out->data == NULL) {
        return NGX_ERROR;
    }

    out->len = 0;

    /* the reply's BOMs are gone: ngx_http_mcp_policy_filter_reply() */
    end = in->data + in->len;
    p = in->data;

    while (p < end) {
        start = p;
        p = ngx_http_mcp_sse_event_end(p, end);

        if (p == NULL) {
            p = end;
        }

        rc = ngx_http_mcp_policy_filter_event(pool, tf, start, p, out,
                                              &size, error);
        if (rc != NGX_OK) {
            return rc;
        }
    }

    return NGX_OK;
}


/*
 * One event [start, end), its blank line included, appended to out (of
 * *size bytes, copied to a larger buffer when it does not fit): as it
 * was, or, when its data is a message (or a batch) whose result.tools
 * lists a denied tool, written again without it.  Data that is not
 * strict JSON: NGX_DECLINED, *error says why.  mcp_pass reads a whole
 * SSE reply of a tools/list with it, and a relayed stream event by event
 * (ngx_http_mcp_proxy_stream.c).
 */

ngx_int_t
ngx_http_mcp_policy_filter_event(ngx_pool_t *pool,
    ngx_http_mcp_tool_filter_t *tf, u_char *start, u_char *end,
    ngx_str_t *out, size_t *size, const char **error)
{
    cJSON       *json;
    u_char      *p, *eol, *next, *data, *d, *text, *dst;
    size_t       len;
    ngx_str_t    v;
    ngx_int_t    rc;
    ngx_uint_t   changed;

    /* the data lines, joined with newlines, as the SSE spec says */
    data = ngx_pnalloc(pool, end - start + 1);
    if (data == NULL) {
        return NGX_ERROR;
    }

    d = data + ngx_http_mcp_sse_data(start, end, data);

    /* an event of no data (a priming event, a comment) is copied */
    json = NULL;

    for (p = data; p < d; p++) {
        if (*p != ' ' && *p != '\t' && *p != '\r' && *p != '\n') {
            break;
        }
    }

    if (p < d) {
        rc = ngx_http_mcp_json_parse(pool, data, d - data, NULL, &json,
                                     error);
        if (rc != NGX_OK) {
            return rc;
        }
    }

    changed = 0;

    if (json != NULL
        && ngx_http_mcp_policy_filter_tree(json, tf, &changed) != NGX_OK)
    {
        cJSON_Delete(json);
        return NGX_ERROR;
    }

    if (!changed) {
        cJSON_Delete(json);

        dst = ngx_http_mcp_policy_room(pool, out, size, end - start);
        if (dst == NULL) {
            return NGX_ERROR;
        }

        out->len = ngx_cpymem(dst, start, end - start) - out->data;
        return NGX_OK;
    }

    text = ngx_http_mcp_json_print(pool, json, &len);

    cJSON_Delete(json);

    if (text == NULL) {
        return NGX_ERROR;
    }

    /* the other fields are at most the event, then "data: ", text, "\n\n" */
    dst = ngx_http_mcp_policy_room(pool, out, size,
                                   (end - start) + 1 + 6 + len + 2);
    if (dst == NULL) {
        return NGX_ERROR;
    }

    /*
     * the other fields as they were, then the message on one line; a
     * data line ("data" without a colon too) is in the message
     */
    for (p = start; p < end; p = next) {
        eol = ngx_http_mcp_sse_eol(p, end, &next);

        if (eol == NULL) {
            eol = end;
            next = end;
        }

        (void) ngx_http_mcp_sse_field(p, eol, "data:", &v);

        if (eol > p && v.data == NULL) {
            dst = ngx_cpymem(dst, p, eol - p);
            *dst++ = '\n';
        }
    }

    dst = ngx_cpymem(dst, "data: ", 6);
    dst = ngx_cpymem(dst, text, len);
    *dst++ = '\n';
    *dst++ = '\n';

    out->len = dst - out->data;

    return NGX_OK;
}


/* n bytes free past out->len, the buffer copied to a larger one if not */

static u_char *
ngx_http_mcp_policy_room(ngx_pool_t *pool, ngx_str_t *out, size_t *size,
    size_t n)
{
    u_char  *p;

    if (*size - out->len >= n) {
        return out->data + out->len;
    }

    *size = ngx_max(2 * *size, out->len + n);

    p = ngx_pnalloc(pool, *size);
    if (p == NULL) {
        return NULL;
    }

    if (out->len) {
        ngx_memcpy(p, out->data, out->len);
    }

    out->data = p;

    return p + out->len;
}
