
/*
 * A call of a location-backed tool or resource: a fetch (the module's
 * subrequest client, ngx_http_mcp_subrequest.c) of the tool's location
 * from the POST that carries the call, its reply in the call's pool,
 * bounded by mcp_tool_max_size, within mcp_tool_timeout.  The call ends
 * from the fetch's news: its result, or an error; and if it ends or is
 * cancelled first, its pool's cleanup closes the fetch.
 */


#include "ngx_http_mcp_loctool.h"
#include "ngx_http_mcp_trace.h"


static ngx_int_t ngx_http_mcp_loctool_start(ngx_http_mcp_call_t *call,
    ngx_http_request_t *r, ngx_http_mcp_loctool_t *tool);
static ngx_int_t ngx_http_mcp_loctool_body(ngx_http_mcp_call_t *call,
    ngx_http_request_t *r, ngx_str_t *body);
static void ngx_http_mcp_loctool_finish(ngx_http_mcp_loctool_state_t *st,
    const char *failure);


ngx_int_t
ngx_http_mcp_loctool_handler(ngx_http_mcp_call_t *call)
{
    u_char                           *p, *clash[2], text[384];
    ngx_int_t                         rc;
    ngx_str_t                        *name;
    ngx_http_request_t               *r;
    ngx_http_mcp_loctool_t           *tool;
    ngx_http_mcp_loctool_loc_conf_t  *lcf;

    tool = ngx_http_mcp_call_entry_data(call);
    r = ngx_http_mcp_call_http_request(call);
    lcf = ngx_http_mcp_call_loc_conf(call, &ngx_http_mcp_loctool_module);

    if (r == NULL) {
        /* no POST to hang a subrequest on (a task's later round) */
        if (tool->resource) {
            ngx_http_mcp_call_error(call, NGX_HTTP_MCP_INTERNAL_ERROR,
                                    "The resource can only be read within "
                                    "its HTTP request");
            return NGX_OK;
        }

        ngx_http_mcp_call_result(call, ngx_http_mcp_text_result(
                   "The tool can only run within its HTTP request", 1));
        return NGX_OK;
    }

    if (tool->resource) {
        return ngx_http_mcp_loctool_start(call, r, tool);
    }

    rc = ngx_http_mcp_loctool_case_clash(tool,
                                         ngx_http_mcp_call_arguments(call),
                                         ngx_http_mcp_call_pool(call), clash);

    if (rc == NGX_ERROR) {
        return NGX_ERROR;
    }

    if (rc == NGX_DECLINED) {
        ngx_log_error(NGX_LOG_INFO, ngx_http_mcp_call_get_log(call), 0,
                      "mcp: tool \"%V\": arguments refused, two names "
                      "differ only in case", &tool->name);

        /* whole names only: a cut one could end within a character */
        if (ngx_strlen(clash[0]) > 64) {
            clash[0] = (u_char *) "...";
            clash[1] = clash[0];
        }

        p = ngx_snprintf(text, sizeof(text) - 1, "Invalid params: tool "
                         "\"%V\": the arguments \"%s\" and \"%s\" differ "
                         "only in case", &tool->name, clash[0], clash[1]);
        *p = '\0';

        ngx_http_mcp_call_error(call, NGX_HTTP_MCP_INVALID_PARAMS,
                                (const char *) text);
        return NGX_OK;
    }

    if (lcf != NULL && lcf->args != NULL) {
        name = ngx_http_mcp_loctool_check_args(call, tool, lcf->args);

        if (name != NULL) {
            ngx_log_error(NGX_LOG_INFO, ngx_http_mcp_call_get_log(call), 0,
                          "mcp: tool \"%V\": argument \"%V\" refused, a "
                          "dot segment", &tool->name, name);

            p = ngx_snprintf(text, sizeof(text) - 1, "Tool \"%V\": the "
                             "argument \"%V\" is refused in a URI: it has "
                             "a \".\" or \"..\" segment", &tool->name, name);
            *p = '\0';

            ngx_http_mcp_call_result(call,
                ngx_http_mcp_text_result((const char *) text, 1));
            return NGX_OK;
        }
    }

    return ngx_http_mcp_loctool_start(call, r, tool);
}


static ngx_int_t
ngx_http_mcp_loctool_start(ngx_http_mcp_call_t *call, ngx_http_request_t *r,
    ngx_http_mcp_loctool_t *tool)
{
    u_char                           *msg;
    ngx_str_t                         body;
    ngx_pool_t                       *pool;
    ngx_http_mcp_fetch_t              f;
    ngx_http_mcp_loctool_state_t     *st;
    ngx_http_mcp_loctool_loc_conf_t  *lcf;

    pool = ngx_http_mcp_call_pool(call);
    lcf = ngx_http_mcp_call_loc_conf(call, &ngx_http_mcp_loctool_module);

    ngx_str_null(&body);

    if ((tool->method == NGX_HTTP_POST || tool->method == NGX_HTTP_PUT
         || tool->method == NGX_HTTP_PATCH)
        && ngx_http_mcp_loctool_body(call, r, &body) != NGX_OK)
    {
        return NGX_ERROR;
    }

    ngx_memzero(&f, sizeof(ngx_http_mcp_fetch_t));

    f.uri = tool->uri;
    f.args = tool->args;
    f.method = tool->method;
    f.method_name = tool->method_name;
    f.body = body;
    f.max = lcf ? lcf->max_size : 1024 * 1024;
    f.timeout = lcf ? lcf->timeout : 30000;
    f.size = sizeof(ngx_http_mcp_loctool_state_t);
    f.handler = ngx_http_mcp_loctool_event;
    f.copy_headers = 1;
    f.trace = ngx_http_mcp_call_trace(call);

    /* its news is posted, never told from here: the tool is set in time */
    st = (ngx_http_mcp_loctool_state_t *) ngx_http_mcp_fetch_call(call, &f);
    if (st == NULL) {
        return NGX_ERROR;
    }

    st->tool = tool;

    ngx_log_debug3(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "mcp loctool \"%V\": %V %V", &tool->name,
                   &tool->method_name, &tool->uri);

    if (!ngx_http_mcp_call_has_progress_token(call)) {
        return NGX_OK;
    }

    /* the call runs now: a progress message lost is no reason to end it */

    msg = ngx_pnalloc(pool, tool->uri.len + sizeof("calling "));

    if (msg != NULL) {
        ngx_sprintf(msg, "calling %V%Z", &tool->uri);
        (void) ngx_http_mcp_call_progress(call, 0, 2, (const char *) msg);
    }

    return NGX_OK;
}


/* the arguments object as JSON, in the POST's pool (the subrequest's) */

static ngx_int_t
ngx_http_mcp_loctool_body(ngx_http_mcp_call_t *call, ngx_http_request_t *r,
    ngx_str_t *body)
{
    char   *json;
    cJSON  *args;

    args = ngx_http_mcp_call_arguments(call);

    if (args == NULL) {
        ngx_str_set(body, "{}");
        return NGX_OK;
    }

    json = cJSON_PrintUnformatted(args);
    if (json == NULL) {
        return NGX_ERROR;
    }

    body->len = ngx_strlen(json);
    body->data = ngx_pnalloc(r->pool, body->len);

    if (body->data != NULL) {
        ngx_memcpy(body->data, json, body->len);
    }

    cJSON_free(json);

    return (body->data != NULL) ? NGX_OK : NGX_ERROR;
}


/* news of the fetch: its header, its end, the timeout, the POST's end */

void
ngx_http_mcp_loctool_event(ngx_event_t *ev)
{
    ngx_http_mcp_loctool_state_t *st = ev->data;

    u_char                      *msg;
    ngx_http_mcp_fetch_state_t  *fetch;

    fetch = &st->fetch;

    if (fetch->timed_out) {
        ngx_log_error(NGX_LOG_INFO, ev->log, 0,
                      "mcp: \"%V\" timed out waiting for %V",
                      &st->tool->name, &st->tool->uri);

        ngx_http_mcp_loctool_finish(st, "timed out (mcp_tool_timeout)");
        return;
    }

    if (fetch->header && !st->told && !fetch->too_big) {
        st->told = 1;

        msg = ngx_pnalloc(ngx_http_mcp_call_pool(fetch->call),
                          st->tool->uri.len + sizeof("HTTP 000 from "));

        if (msg != NULL) {
            ngx_sprintf(msg, "HTTP %03ui from %V%Z", fetch->status % 1000,
                        &st->tool->uri);
            (void) ngx_http_mcp_call_progress(fetch->call, 1, 2,
                                              (const char *) msg);
        }
    }

    if (fetch->too_big) {
        ngx_http_mcp_loctool_finish(st, "the reply is larger than "
                                        "mcp_tool_max_size");
        return;
    }

    if (fetch->done) {
        ngx_http_mcp_loctool_finish(st, fetch->redirected
                                        ? "its location's reply was "
                                          "redirected inside nginx (an "
                                          "X-Accel-Redirect, error_page, "
                                          "try_files), refused"
                                        : fetch->failed
                                        ? "its location failed" : NULL);
        return;
    }

    if (fetch->gone) {
        ngx_http_mcp_loctool_finish(st, "its HTTP request went away");
    }
}


/*
 * Ends the call: the result, or an error when failure is set.  The
 * fetch is closed first (its subrequest aborted if it still runs), while
 * the POST (and so the subrequest) surely still exists.
 */

static void
ngx_http_mcp_loctool_finish(ngx_http_mcp_loctool_state_t *st,
    const char *failure)
{
    u_char               *p, text[256], line[512];
    cJSON                *result;
    ngx_http_mcp_call_t  *call;

    call = st->fetch.call;

    ngx_http_mcp_fetch_close(&st->fetch);

    if (failure == NULL && st->refused != NULL) {
        p = ngx_snprintf(text, sizeof(text) - 1, "the argument \"%s\" is "
                         "refused in a URI: it has a \".\" or \"..\" "
                         "segment", st->refused);
        *p = '\0';
        failure = (const char *) text;
    }

    if (st->tool->resource) {
        if (failure != NULL) {
            p = ngx_snprintf(line, sizeof(line) - 1,
                             "Resource unavailable: %s", failure);
            *p = '\0';
            ngx_http_mcp_call_error(call, NGX_HTTP_MCP_INTERNAL_ERROR,
                                    (const char *) line);
            return;
        }

        result = ngx_http_mcp_loctool_resource_result(st);

        if (result != NULL) {
            ngx_http_mcp_call_result(call, result);
        }

        return;
    }

    if (failure == NULL
        && (st->fetch.status < NGX_HTTP_OK
            || st->fetch.status >= NGX_HTTP_SPECIAL_RESPONSE))
    {
        /* the status only: the page may say what the caller must not see */
        p = ngx_snprintf(text, sizeof(text) - 1, "its location answered "
                         "HTTP %03ui", st->fetch.status % 1000);
        *p = '\0';
        failure = (const char *) text;
    }

    result = (failure != NULL) ? NULL
             : ngx_http_mcp_loctool_tool_result(st, &failure);

    if (result == NULL && failure != NULL) {
        p = ngx_snprintf(line, sizeof(line) - 1, "Tool \"%V\": %s",
                         &st->tool->name, failure);
        *p = '\0';
        result = ngx_http_mcp_text_result((const char *) line, 1);
    }

    /* NULL: call_result() answers with an internal error */
    ngx_http_mcp_call_result(call, result);
}


