
/*
 * Guardrails: named sets of regular expressions (PCRE2 through
 * ngx_regex, compiled at configuration time; nginx's "pcre_jit on"
 * JIT-compiles them), held to what a tools/call carries and what comes
 * back, on every path (built-in, location tools, mcp_backend, mcp_pass):
 *
 * - arguments: every key and every string value of a call's arguments,
 *   as the module's strict parser read them (escapes undone, duplicate
 *   keys and "\u0000" refused: ngx_http_mcp_json.c), so no spelling of
 *   a value reads otherwise to the guard than to the tool;
 * - results: the text of a result's content items, the text of an
 *   embedded resource, and every string of structuredContent;
 * - lists: the title and description of each tool of tools/list, and
 *   of each prompt of prompts/list.
 *
 * A match is blocked (a call refused before anything runs or is sent, a
 * result replaced by an isError result, a listed item left out),
 * redacted (the match replaced by "[redacted:NAME]" in the parsed
 * message, which is what is printed, so the JSON stays valid), or
 * logged.  Redacting an argument rewrites the tree the tool reads (or
 * the body a gateway prints from it); a caller that cannot have its
 * tree printed again gets "block" instead.
 */


#include "ngx_http_mcp_guard.h"
#include "ngx_http_mcp_jsonrpc.h"
#include "ngx_http_mcp_metrics.h"


/* what ngx_http_mcp_jsonrpc_tools() hands each listed tool */
typedef struct {
    ngx_http_mcp_guard_ctx_t  *gc;
    ngx_uint_t                *changed;
} ngx_http_mcp_guard_list_t;


static ngx_int_t ngx_http_mcp_guard_walk(ngx_http_mcp_guard_ctx_t *gc,
    ngx_http_mcp_guard_t *g, cJSON *item, ngx_uint_t keys,
    ngx_uint_t *hit, ngx_uint_t *changed);
static ngx_int_t ngx_http_mcp_guard_key(ngx_http_mcp_guard_ctx_t *gc,
    ngx_http_mcp_guard_t *g, cJSON *item, ngx_uint_t *hit);
static ngx_int_t ngx_http_mcp_guard_string(ngx_http_mcp_guard_ctx_t *gc,
    ngx_http_mcp_guard_t *g, cJSON *item, ngx_uint_t *hit,
    ngx_uint_t *changed);
static ngx_uint_t ngx_http_mcp_guard_context_free(ngx_str_t *pattern);
static ngx_int_t ngx_http_mcp_guard_joined(ngx_http_mcp_guard_ctx_t *gc,
    cJSON *item, ngx_str_t *text);
static size_t ngx_http_mcp_guard_join(cJSON *item, u_char *p);
static ngx_int_t ngx_http_mcp_guard_match(ngx_http_mcp_guard_set_t *set,
    u_char *s, ngx_log_t *log);
static u_char *ngx_http_mcp_guard_redact(ngx_pool_t *pool,
    ngx_http_mcp_guard_t *g, u_char *s, ngx_log_t *log);
static ngx_int_t ngx_http_mcp_guard_next(ngx_regex_t *re, u_char *s,
    size_t len, size_t off, size_t *start, size_t *end);
static ngx_int_t ngx_http_mcp_guard_listed(void *data, cJSON *tool,
    ngx_str_t *name);
static ngx_int_t ngx_http_mcp_guard_item(ngx_http_mcp_guard_ctx_t *gc,
    cJSON *item, ngx_uint_t *changed);
static void ngx_http_mcp_guard_told(ngx_http_mcp_guard_ctx_t *gc,
    ngx_http_mcp_guard_t *g, const char *where);
static ngx_int_t ngx_http_mcp_guard_variable(ngx_http_request_t *r,
    ngx_http_variable_value_t *v, uintptr_t data);


static ngx_str_t  ngx_http_mcp_guard_actions[] = {
    ngx_string("block"),
    ngx_string("redact"),
    ngx_string("log")
};


static ngx_http_variable_t  ngx_http_mcp_guard_vars[] = {
    { ngx_string("mcp_guardrail"), NULL, ngx_http_mcp_guard_variable, 0,
      0, 0 },
    { ngx_string("mcp_guardrail_action"), NULL, ngx_http_mcp_guard_variable,
      1, 0, 0 },
      ngx_http_null_variable
};


/* mcp_guardrail_set NAME PATTERN...; (http) */

char *
ngx_http_mcp_guard_set_directive(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf)
{
    ngx_http_mcp_main_conf_t *mmcf = conf;

    u_char                     errstr[NGX_MAX_CONF_ERRSTR], c;
    ngx_int_t                  n;
    ngx_str_t                 *value;
    ngx_uint_t                 i;
    ngx_regex_elt_t           *re;
    ngx_regex_compile_t        rc;
    ngx_http_mcp_guard_set_t  *set;

    value = cf->args->elts;

    if (mmcf->guardrails == NULL) {
        mmcf->guardrails = ngx_array_create(cf->pool, 4,
                                            sizeof(ngx_http_mcp_guard_set_t));
        if (mmcf->guardrails == NULL) {
            return NGX_CONF_ERROR;
        }
    }

    set = mmcf->guardrails->elts;

    for (i = 0; i < mmcf->guardrails->nelts; i++) {
        if (set[i].name.len == value[1].len
            && ngx_strncmp(set[i].name.data, value[1].data, value[1].len)
               == 0)
        {
            return "names a set already defined";
        }
    }

    for (i = 0; i < value[1].len; i++) {
        c = value[1].data[i];

        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
              || (c >= '0' && c <= '9') || c == '_' || c == '-'))
        {
            return "has a name not of letters, digits, \"_\" and \"-\"";
        }
    }

    set = ngx_array_push(mmcf->guardrails);
    if (set == NULL) {
        return NGX_CONF_ERROR;
    }

    set->name = value[1];

    n = ngx_http_mcp_metrics_guard_set(cf, &set->name);
    if (n == NGX_ERROR) {
        return NGX_CONF_ERROR;
    }

    set->metric = n;

    if (ngx_array_init(&set->regexes, cf->pool, cf->args->nelts - 2,
                       sizeof(ngx_regex_elt_t))
        != NGX_OK)
    {
        return NGX_CONF_ERROR;
    }

    set->joinable = 1;

    for (i = 2; i < cf->args->nelts; i++) {

        if (!ngx_http_mcp_guard_context_free(&value[i])) {
            set->joinable = 0;
        }

        ngx_memzero(&rc, sizeof(ngx_regex_compile_t));

        rc.pattern = value[i];
        rc.pool = cf->pool;
        rc.err.len = NGX_MAX_CONF_ERRSTR;
        rc.err.data = errstr;

        if (ngx_regex_compile(&rc) != NGX_OK) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "%V", &rc.err);
            return NGX_CONF_ERROR;
        }

        re = ngx_array_push(&set->regexes);
        if (re == NULL) {
            return NGX_CONF_ERROR;
        }

        re->regex = rc.regex;
        re->name = value[i].data;
    }

    return NGX_CONF_OK;
}


/*
 * mcp_guardrail SET block|redact|log [arguments] [results] [lists];
 * with none of the three, all of them.  mcp_pass_guardrail is the same
 * directive under the name it had when only mcp_pass had guardrails: it
 * sets the same list, whichever path serves the location.
 */

char *
ngx_http_mcp_guard_directive(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_str_t                 *value;
    ngx_uint_t                 i;
    ngx_http_mcp_guard_t      *g;
    ngx_http_mcp_loc_conf_t   *mlcf;
    ngx_http_mcp_main_conf_t  *mmcf;
    ngx_http_mcp_guard_set_t  *set;

    value = cf->args->elts;

    /* the core's, whichever module's table the directive is in */
    mlcf = ngx_http_conf_get_module_loc_conf(cf, ngx_http_mcp_module);
    mmcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_mcp_module);

    if (mlcf->guards == NGX_CONF_UNSET_PTR) {
        mlcf->guards = ngx_array_create(cf->pool, 4,
                                        sizeof(ngx_http_mcp_guard_t));
        if (mlcf->guards == NULL) {
            return NGX_CONF_ERROR;
        }

        mlcf->guard_where = 0;
    }

    g = ngx_array_push(mlcf->guards);
    if (g == NULL) {
        return NGX_CONF_ERROR;
    }

    g->set = NULL;
    set = (mmcf->guardrails != NULL) ? mmcf->guardrails->elts : NULL;

    for (i = 0; set != NULL && i < mmcf->guardrails->nelts; i++) {
        if (set[i].name.len == value[1].len
            && ngx_strncmp(set[i].name.data, value[1].data, value[1].len)
               == 0)
        {
            g->set = &set[i];
            break;
        }
    }

    if (g->set == NULL) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "no mcp_guardrail_set \"%V\" defined before",
                           &value[1]);
        return NGX_CONF_ERROR;
    }

    for (g->action = 0; g->action < 3; g->action++) {
        if (ngx_http_mcp_guard_actions[g->action].len == value[2].len
            && ngx_strncmp(ngx_http_mcp_guard_actions[g->action].data,
                           value[2].data, value[2].len)
               == 0)
        {
            break;
        }
    }

    if (g->action == 3) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "invalid action \"%V\": block, redact or log",
                           &value[2]);
        return NGX_CONF_ERROR;
    }

    g->where = 0;

    for (i = 3; i < cf->args->nelts; i++) {

        if (ngx_strcmp(value[i].data, "arguments") == 0) {
            g->where |= NGX_HTTP_MCP_GUARD_ARGS;

        } else if (ngx_strcmp(value[i].data, "results") == 0) {
            g->where |= NGX_HTTP_MCP_GUARD_RESULTS;

        } else if (ngx_strcmp(value[i].data, "lists") == 0) {
            g->where |= NGX_HTTP_MCP_GUARD_LISTS;

        } else {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "invalid \"%V\": arguments, results or lists",
                               &value[i]);
            return NGX_CONF_ERROR;
        }
    }

    if (g->where == 0) {
        g->where = NGX_HTTP_MCP_GUARD_ARGS | NGX_HTTP_MCP_GUARD_RESULTS
                   | NGX_HTTP_MCP_GUARD_LISTS;
    }

    mlcf->guard_where |= g->where;

    g->marker.len = sizeof("[redacted:]") - 1 + g->set->name.len;
    g->marker.data = ngx_pnalloc(cf->pool, g->marker.len + 1);
    if (g->marker.data == NULL) {
        return NGX_CONF_ERROR;
    }

    (void) ngx_sprintf(g->marker.data, "[redacted:%V]%Z", &g->set->name);

    return NGX_CONF_OK;
}


/*
 * The two variables are written by the check that matched, into the
 * main request's slots (nginx's "set" does the same), for the access
 * log line: a call's result may come long after anything asked for
 * them.  Their handler only says "not found" before that.
 */

ngx_int_t
ngx_http_mcp_guard_add_variables(ngx_conf_t *cf)
{
    ngx_int_t                  index;
    ngx_http_variable_t       *var, *v;
    ngx_http_mcp_main_conf_t  *mmcf;

    mmcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_mcp_module);

    for (v = ngx_http_mcp_guard_vars; v->name.len; v++) {
        var = ngx_http_add_variable(cf, &v->name, v->flags);
        if (var == NULL) {
            return NGX_ERROR;
        }

        var->get_handler = v->get_handler;
        var->data = v->data;

        index = ngx_http_get_variable_index(cf, &v->name);
        if (index == NGX_ERROR) {
            return NGX_ERROR;
        }

        mmcf->guard_vars[v->data] = index;
    }

    return NGX_OK;
}


static ngx_int_t
ngx_http_mcp_guard_variable(ngx_http_request_t *r,
    ngx_http_variable_value_t *v, uintptr_t data)
{
    /* asked again later: a match may have set it in between */
    v->not_found = 1;
    v->no_cacheable = 1;

    return NGX_OK;
}


ngx_int_t
ngx_http_mcp_guard_arguments(ngx_http_mcp_guard_ctx_t *gc, cJSON *arguments,
    ngx_uint_t rewrite, ngx_uint_t *changed, const char **why)
{
    u_char                *text;
    ngx_int_t              rc;
    ngx_str_t              joined;
    ngx_uint_t             i, hit, redact;
    ngx_http_mcp_guard_t  *g;

    if (gc->guards == NULL || arguments == NULL) {
        return NGX_OK;
    }

    g = gc->guards->elts;
    joined.data = NULL;

    for (i = 0; i < gc->guards->nelts; i++) {

        if (!(g[i].where & NGX_HTTP_MCP_GUARD_ARGS)) {
            continue;
        }

        /*
         * a set none of whose patterns matches the keys and strings
         * joined matches none of them alone: one pass a pattern, not
         * one a pattern and a string; a match (perhaps across two
         * strings) is looked for string by string
         */

        if (g[i].set->joinable) {

            if (joined.data == NULL
                && ngx_http_mcp_guard_joined(gc, arguments, &joined)
                   != NGX_OK)
            {
                return NGX_ERROR;
            }

            rc = ngx_regex_exec_array(&g[i].set->regexes, &joined, gc->log);

            if (rc == NGX_DECLINED) {
                continue;
            }

            if (rc != NGX_OK) {
                return NGX_ERROR;
            }
        }

        hit = 0;
        redact = rewrite && g[i].action == NGX_HTTP_MCP_GUARD_REDACT;
        gc->key_hit = 0;

        if (ngx_http_mcp_guard_walk(gc, &g[i], arguments, 1, &hit,
                                    redact ? changed : NULL)
            != NGX_OK)
        {
            return NGX_ERROR;
        }

        if (!hit) {
            continue;
        }

        ngx_http_mcp_guard_told(gc, &g[i], "arguments");

        if (g[i].action == NGX_HTTP_MCP_GUARD_LOG
            || (redact && !gc->key_hit))
        {
            continue;
        }

        text = ngx_pnalloc(gc->pool, 64 + g[i].set->name.len);
        if (text == NULL) {
            return NGX_ERROR;
        }

        (void) ngx_sprintf(text, "Arguments refused by guardrail \"%V\"%Z",
                           &g[i].set->name);
        *why = (const char *) text;

        return NGX_DECLINED;
    }

    return NGX_OK;
}


ngx_int_t
ngx_http_mcp_guard_result(ngx_http_mcp_guard_ctx_t *gc, cJSON *result,
    ngx_uint_t *changed)
{
    cJSON                 *content, *item, *next, *resource, *sc,
                          *blocked;
    ngx_uint_t             i, hit;
    ngx_http_mcp_guard_t  *g;

    if (gc->guards == NULL || !cJSON_IsObject(result)) {
        return NGX_OK;
    }

    g = gc->guards->elts;
    content = cJSON_GetObjectItemCaseSensitive(result, "content");
    sc = cJSON_GetObjectItemCaseSensitive(result, "structuredContent");

    for (i = 0; i < gc->guards->nelts; i++) {

        if (!(g[i].where & NGX_HTTP_MCP_GUARD_RESULTS)) {
            continue;
        }

        hit = 0;

        cJSON_ArrayForEach(item, content) {

            if (!cJSON_IsObject(item)) {
                continue;
            }

            if (ngx_http_mcp_guard_string(gc, &g[i],
                    cJSON_GetObjectItemCaseSensitive(item, "text"), &hit,
                    changed)
                != NGX_OK)
            {
                return NGX_ERROR;
            }

            resource = cJSON_GetObjectItemCaseSensitive(item, "resource");

            if (cJSON_IsObject(resource)
                && ngx_http_mcp_guard_string(gc, &g[i],
                       cJSON_GetObjectItemCaseSensitive(resource, "text"),
                       &hit, changed)
                   != NGX_OK)
            {
                return NGX_ERROR;
            }
        }

        if (sc != NULL
            && ngx_http_mcp_guard_walk(gc, &g[i], sc, 0, &hit, changed)
               != NGX_OK)
        {
            return NGX_ERROR;
        }

        if (!hit) {
            continue;
        }

        ngx_http_mcp_guard_told(gc, &g[i], "a result");

        if (g[i].action != NGX_HTTP_MCP_GUARD_BLOCK) {
            continue;
        }

        /* the result is withheld whole, as an error the model can read */
        blocked = ngx_http_mcp_text_result(
                      "The result was withheld by a guardrail", 1);
        if (blocked == NULL) {
            return NGX_ERROR;
        }

        /*
         * what the result is (a 2026-07-28 resultType) and its _meta
         * stay: the guard reads neither, and a reply without them is
         * not a 2026 result
         */

        for (item = result->child; item != NULL; item = next) {
            next = item->next;

            if (item->string != NULL
                && (ngx_strcmp(item->string, "resultType") == 0
                    || ngx_strcmp(item->string, "_meta") == 0))
            {
                continue;
            }

            cJSON_Delete(cJSON_DetachItemViaPointer(result, item));
        }

        while (blocked->child != NULL) {
            item = cJSON_DetachItemViaPointer(blocked, blocked->child);

            /* the key is copied before the item's own is freed */
            if (!cJSON_AddItemToObject(result, item->string, item)) {
                cJSON_Delete(item);
                cJSON_Delete(blocked);
                return NGX_ERROR;
            }
        }

        cJSON_Delete(blocked);
        *changed = 1;

        return NGX_OK;
    }

    return NGX_OK;
}


ngx_int_t
ngx_http_mcp_guard_list(ngx_http_mcp_guard_ctx_t *gc, cJSON *result,
    ngx_uint_t *changed)
{
    cJSON                      *prompts, *item, *next;
    ngx_http_mcp_guard_list_t   list;

    if (gc->guards == NULL) {
        return NGX_OK;
    }

    if (cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(result, "tools"))) {
        list.gc = gc;
        list.changed = changed;

        return ngx_http_mcp_jsonrpc_tools(result, ngx_http_mcp_guard_listed,
                                          &list, changed);
    }

    prompts = cJSON_GetObjectItemCaseSensitive(result, "prompts");

    if (!cJSON_IsArray(prompts)) {
        return NGX_OK;
    }

    for (item = prompts->child; item != NULL; item = next) {
        next = item->next;

        switch (ngx_http_mcp_guard_item(gc, item, changed)) {

        case NGX_OK:
            break;

        case NGX_DECLINED:
            cJSON_Delete(cJSON_DetachItemViaPointer(prompts, item));
            *changed = 1;
            break;

        default:
            return NGX_ERROR;
        }
    }

    return NGX_OK;
}


ngx_int_t
ngx_http_mcp_guard_call_arguments(ngx_http_mcp_call_t *call,
    const char **why)
{
    ngx_int_t                  rc;
    ngx_uint_t                 changed;
    ngx_http_mcp_loc_conf_t   *mlcf;
    ngx_http_mcp_guard_ctx_t   gc;

    mlcf = ngx_http_mcp_call_conf(call);

    if (!(mlcf->guard_where & NGX_HTTP_MCP_GUARD_ARGS)
        || mlcf->guards == NULL)
    {
        return NGX_OK;
    }

    gc.guards = mlcf->guards;
    gc.pool = call->pool;
    gc.log = call->log;
    gc.request = call->request;
    gc.key_hit = 0;
    changed = 0;

    rc = ngx_http_mcp_guard_arguments(&gc, call->arguments, 1, &changed,
                                      why);

    if (rc == NGX_OK && changed && call->param_headers != NULL
        && call->param_headers->nelts > 0)
    {
        /*
         * Mcp-Param-* headers mirror arguments, and still say what was
         * redacted: whatever reads them (a location's upstream gets the
         * POST's headers) would read the secret
         */
        rc = NGX_DECLINED;
        *why = "Arguments refused by a guardrail: a redacted call may not "
              "carry Mcp-Param headers";
    }

    return rc;
}


/*
 * The module's own paths: what a call answers, as it is made the
 * client's (so a JSON reply, an SSE event and a task's stored result
 * read the same); a location tool's reply and an mcp_backend's answer
 * or merged list are such a result too.
 */

ngx_int_t
ngx_http_mcp_guard_call_result(ngx_http_mcp_call_t *call, cJSON *result)
{
    ngx_uint_t                 changed, where;
    ngx_http_mcp_loc_conf_t   *mlcf;
    ngx_http_mcp_guard_ctx_t   gc;

    mlcf = ngx_http_mcp_call_conf(call);

    if (mlcf->guards == NULL) {
        return NGX_OK;
    }

    if (call->method.len == sizeof("tools/call") - 1
        && ngx_strncmp(call->method.data, "tools/call", call->method.len)
           == 0)
    {
        where = NGX_HTTP_MCP_GUARD_RESULTS;

    } else if ((call->method.len == sizeof("tools/list") - 1
                && ngx_strncmp(call->method.data, "tools/list",
                               call->method.len)
                   == 0)
               || (call->method.len == sizeof("prompts/list") - 1
                   && ngx_strncmp(call->method.data, "prompts/list",
                                  call->method.len)
                      == 0))
    {
        where = NGX_HTTP_MCP_GUARD_LISTS;

    } else {
        return NGX_OK;
    }

    if (!(mlcf->guard_where & where)) {
        return NGX_OK;
    }

    gc.guards = mlcf->guards;
    gc.pool = call->pool;
    gc.log = call->log;
    gc.request = call->request;
    changed = 0;

    return (where == NGX_HTTP_MCP_GUARD_RESULTS)
           ? ngx_http_mcp_guard_result(&gc, result, &changed)
           : ngx_http_mcp_guard_list(&gc, result, &changed);
}


static ngx_int_t
ngx_http_mcp_guard_listed(void *data, cJSON *tool, ngx_str_t *name)
{
    ngx_http_mcp_guard_list_t *list = data;

    return ngx_http_mcp_guard_item(list->gc, tool, list->changed);
}


/* a listed item: NGX_DECLINED to leave it out */

static ngx_int_t
ngx_http_mcp_guard_item(ngx_http_mcp_guard_ctx_t *gc, cJSON *item,
    ngx_uint_t *changed)
{
    ngx_uint_t             i, hit;
    ngx_http_mcp_guard_t  *g;

    g = gc->guards->elts;

    for (i = 0; i < gc->guards->nelts; i++) {

        if (!(g[i].where & NGX_HTTP_MCP_GUARD_LISTS)) {
            continue;
        }

        hit = 0;

        if (ngx_http_mcp_guard_string(gc, &g[i],
                cJSON_GetObjectItemCaseSensitive(item, "description"), &hit,
                changed)
            != NGX_OK
            || ngx_http_mcp_guard_string(gc, &g[i],
                   cJSON_GetObjectItemCaseSensitive(item, "title"), &hit,
                   changed)
               != NGX_OK)
        {
            return NGX_ERROR;
        }

        if (!hit) {
            continue;
        }

        ngx_http_mcp_guard_told(gc, &g[i], "a listed description");

        if (g[i].action == NGX_HTTP_MCP_GUARD_BLOCK) {
            return NGX_DECLINED;
        }
    }

    return NGX_OK;
}


/*
 * Every string under item (and, with keys, every key): *hit when one
 * matches; redacted in place when changed is not NULL and the guard
 * redacts.  The parser bounded the depth of what it read.
 */

static ngx_int_t
ngx_http_mcp_guard_walk(ngx_http_mcp_guard_ctx_t *gc,
    ngx_http_mcp_guard_t *g, cJSON *item, ngx_uint_t keys, ngx_uint_t *hit,
    ngx_uint_t *changed)
{
    cJSON  *child;

    if (cJSON_IsString(item)) {
        return ngx_http_mcp_guard_string(gc, g, item, hit, changed);
    }

    if (!cJSON_IsObject(item) && !cJSON_IsArray(item)) {
        return NGX_OK;
    }

    cJSON_ArrayForEach(child, item) {

        if (keys && child->string != NULL
            && ngx_http_mcp_guard_key(gc, g, child, hit) != NGX_OK)
        {
            return NGX_ERROR;
        }

        if (ngx_http_mcp_guard_walk(gc, g, child, keys, hit, changed)
            != NGX_OK)
        {
            return NGX_ERROR;
        }
    }

    return NGX_OK;
}


/*
 * An object's key: never redacted, for a key is the shape of what the
 * tool reads (its schema, its meaning), and two keys that read the same
 * once marked would be a duplicate that the next parser may read either
 * way; a match under "redact" refuses the call (gc->key_hit)
 */

static ngx_int_t
ngx_http_mcp_guard_key(ngx_http_mcp_guard_ctx_t *gc, ngx_http_mcp_guard_t *g,
    cJSON *item, ngx_uint_t *hit)
{
    ngx_int_t  rc;

    rc = ngx_http_mcp_guard_match(g->set, (u_char *) item->string, gc->log);

    if (rc != NGX_OK) {
        return (rc == NGX_DECLINED) ? NGX_OK : NGX_ERROR;
    }

    *hit = 1;
    gc->key_hit = 1;

    return NGX_OK;
}


static ngx_int_t
ngx_http_mcp_guard_string(ngx_http_mcp_guard_ctx_t *gc,
    ngx_http_mcp_guard_t *g, cJSON *item, ngx_uint_t *hit,
    ngx_uint_t *changed)
{
    u_char     *redacted;
    ngx_int_t   rc;

    if (!cJSON_IsString(item)) {
        return NGX_OK;
    }

    rc = ngx_http_mcp_guard_match(g->set, (u_char *) item->valuestring,
                                  gc->log);

    if (rc != NGX_OK) {
        return (rc == NGX_DECLINED) ? NGX_OK : NGX_ERROR;
    }

    *hit = 1;

    if (changed == NULL || g->action != NGX_HTTP_MCP_GUARD_REDACT) {
        return NGX_OK;
    }

    redacted = ngx_http_mcp_guard_redact(gc->pool, g,
                                         (u_char *) item->valuestring,
                                         gc->log);

    if (redacted == NULL || cJSON_SetValuestring(item, (char *) redacted)
                            == NULL)
    {
        return NGX_ERROR;
    }

    *changed = 1;

    return NGX_OK;
}


/*
 * A pattern that matches a string alone matches it between two others
 * joined by newlines, unless it reads what is around its match: an
 * anchor (^ $ \A \Z \z \G), a lookaround, a backtracking verb, \K, a
 * \Q quote (read conservatively).  \b reads the same: a newline is not
 * a word character, as a string's edge is not.  A "^" that negates a
 * class is a class.  A match across two strings is the other way (a
 * false alarm), and is looked for again string by string.
 */

static ngx_uint_t
ngx_http_mcp_guard_context_free(ngx_str_t *pattern)
{
    u_char      c, *p, *last;
    ngx_uint_t  in_class;

    p = pattern->data;
    last = p + pattern->len;
    in_class = 0;

    for ( /* void */ ; p < last; p++) {
        c = *p;

        if (c == '\\') {
            if (++p == last) {
                return 0;
            }

            if (ngx_strchr("AZzGKQ", *p) != NULL) {
                return 0;
            }

            continue;
        }

        if (in_class) {
            if (c == ']') {
                in_class = 0;
            }

            continue;
        }

        if (c == '[') {
            in_class = 1;

            /* "[^" and "[]": a negation, a "]" that does not end it */
            if (p + 1 < last && p[1] == '^') {
                p++;
            }

            if (p + 1 < last && p[1] == ']') {
                p++;
            }

            continue;
        }

        if (c == '^' || c == '$') {
            return 0;
        }

        if (c == '(' && p + 1 < last
            && (p[1] == '*'
                || (p[1] == '?' && p + 2 < last
                    && ngx_strchr("=!<(", p[2]) != NULL)))
        {
            return 0;
        }
    }

    return 1;
}


/* every key and string under item, a newline after each, once a check */

static ngx_int_t
ngx_http_mcp_guard_joined(ngx_http_mcp_guard_ctx_t *gc, cJSON *item,
    ngx_str_t *text)
{
    size_t  len;

    len = ngx_http_mcp_guard_join(item, NULL);

    text->data = ngx_pnalloc(gc->pool, len + 1);
    if (text->data == NULL) {
        return NGX_ERROR;
    }

    text->len = ngx_http_mcp_guard_join(item, text->data);

    return NGX_OK;
}


/* the length of what is joined, or, with p, the copy */

static size_t
ngx_http_mcp_guard_join(cJSON *item, u_char *p)
{
    size_t   len, n;
    cJSON   *child;

    if (cJSON_IsString(item)) {
        n = ngx_strlen(item->valuestring);

        if (p != NULL) {
            p = ngx_cpymem(p, item->valuestring, n);
            *p = '\n';
        }

        return n + 1;
    }

    if (!cJSON_IsObject(item) && !cJSON_IsArray(item)) {
        return 0;
    }

    len = 0;

    cJSON_ArrayForEach(child, item) {

        if (child->string != NULL) {
            n = ngx_strlen(child->string);

            if (p != NULL) {
                ngx_memcpy(p + len, child->string, n);
                p[len + n] = '\n';
            }

            len += n + 1;
        }

        len += ngx_http_mcp_guard_join(child, p ? p + len : NULL);
    }

    return len;
}


/* NGX_OK: a pattern of the set matches s; NGX_DECLINED, NGX_ERROR */

static ngx_int_t
ngx_http_mcp_guard_match(ngx_http_mcp_guard_set_t *set, u_char *s,
    ngx_log_t *log)
{
    ngx_str_t  text;

    text.data = s;
    text.len = ngx_strlen(s);

    return ngx_regex_exec_array(&set->regexes, &text, log);
}


/*
 * s with every match of every pattern of the set replaced by the marker;
 * the copy grows as markers are written (a pattern that matches every
 * byte would make it marker-long times as long)
 */

static u_char *
ngx_http_mcp_guard_redact(ngx_pool_t *pool, ngx_http_mcp_guard_t *g,
    u_char *s, ngx_log_t *log)
{
    u_char           *out, *p, *grown;
    size_t            len, off, start, end, size, need;
    ngx_int_t         rc;
    ngx_uint_t        i;
    ngx_regex_elt_t  *re;

    re = g->set->regexes.elts;

    for (i = 0; i < g->set->regexes.nelts; i++) {

        len = ngx_strlen(s);
        size = len + g->marker.len + 2;

        out = ngx_pnalloc(pool, size);
        if (out == NULL) {
            return NULL;
        }

        p = out;
        off = 0;

        while (off <= len) {

            rc = ngx_http_mcp_guard_next(re[i].regex, s, len, off, &start,
                                         &end);

            if (rc == NGX_DECLINED) {
                break;
            }

            if (rc != NGX_OK) {
                ngx_log_error(NGX_LOG_ALERT, log, 0,
                              ngx_regex_exec_n " failed: %i on \"%s\"",
                              rc, re[i].name);
                return NULL;
            }

            /* what is written so far, this match, and the rest as it is */
            need = (p - out) + (start - off) + g->marker.len
                   + (len - end) + 2;

            if (need > size) {
                size = ngx_max(2 * size, need);

                grown = ngx_pnalloc(pool, size);
                if (grown == NULL) {
                    return NULL;
                }

                p = ngx_cpymem(grown, out, p - out);
                out = grown;
            }

            p = ngx_cpymem(p, s + off, start - off);
            p = ngx_cpymem(p, g->marker.data, g->marker.len);
            off = end;

            if (end == start) {
                /* an empty match: the next byte stays, the look moves on */
                if (off < len) {
                    *p++ = s[off];
                }

                off++;
            }
        }

        if (off < len) {
            p = ngx_cpymem(p, s + off, len - off);
        }

        *p = '\0';
        s = out;
    }

    return s;
}


/*
 * The first match of re in s at or after off, read in the whole of s
 * (so that \b or a lookbehind sees what is before off): NGX_OK with its
 * start and end, NGX_DECLINED, or the library's error code.
 * ngx_regex_exec() has no start offset, hence the library's own call.
 */

static ngx_int_t
ngx_http_mcp_guard_next(ngx_regex_t *re, u_char *s, size_t len, size_t off,
    size_t *start, size_t *end)
{
#if (NGX_PCRE2)
    int                        rc;
    PCRE2_SIZE                *ov;
    static pcre2_match_data   *md;

    /* one pair is all a redaction reads; kept for the process */
    if (md == NULL) {
        md = pcre2_match_data_create(1, NULL);
        if (md == NULL) {
            return PCRE2_ERROR_NOMEMORY;
        }
    }

    rc = pcre2_match(re, s, len, off, 0, md, NULL);

    if (rc == PCRE2_ERROR_NOMATCH) {
        return NGX_DECLINED;
    }

    if (rc < 0) {
        return rc;
    }

    ov = pcre2_get_ovector_pointer(md);

    *start = ov[0];
    *end = ngx_max(ov[0], ov[1]);   /* \K may end a match before it */

#else
    int  rc, cap[3];

    rc = pcre_exec(re->code, re->extra, (const char *) s, len, off, 0,
                   cap, 3);

    if (rc == PCRE_ERROR_NOMATCH) {
        return NGX_DECLINED;
    }

    if (rc < 0) {
        return rc;
    }

    *start = cap[0];
    *end = ngx_max(cap[0], cap[1]);
#endif

    return NGX_OK;
}


static void
ngx_http_mcp_guard_told(ngx_http_mcp_guard_ctx_t *gc,
    ngx_http_mcp_guard_t *g, const char *where)
{
    ngx_str_t                  *s;
    ngx_uint_t                  i;
    ngx_http_request_t         *r;
    ngx_http_variable_value_t  *v;
    ngx_http_mcp_main_conf_t   *mmcf;

    ngx_http_mcp_metrics_guardrail(g->set->metric, g->action);

    /* what matched is not logged: it is what the guard keeps out */
    ngx_log_error(NGX_LOG_INFO, gc->log, 0,
                  "mcp: guardrail \"%V\" (%V) matched %s", &g->set->name,
                  &ngx_http_mcp_guard_actions[g->action], where);

    if (gc->request == NULL) {
        return;
    }

    /* the last guardrail matched, for $mcp_guardrail(_action) */
    r = gc->request->main;
    mmcf = ngx_http_get_module_main_conf(r, ngx_http_mcp_module);

    for (i = 0; i < 2; i++) {
        s = i ? &ngx_http_mcp_guard_actions[g->action] : &g->set->name;
        v = &r->variables[mmcf->guard_vars[i]];

        v->data = s->data;
        v->len = s->len;
        v->valid = 1;
        v->no_cacheable = 0;
        v->not_found = 0;
    }
}
