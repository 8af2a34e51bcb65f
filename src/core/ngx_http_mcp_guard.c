
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
#include "ngx_http_mcp_needle.h"

/* x86-64 always has SSE2: sixteen bytes of a raw text a step */
#if (defined __SSE2__ && defined __GNUC__)
#define NGX_HTTP_MCP_GUARD_SSE2  1
#include <emmintrin.h>
#else
#define NGX_HTTP_MCP_GUARD_SSE2  0
#endif


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
static ngx_int_t ngx_http_mcp_guard_exec(ngx_http_mcp_guard_set_t *set,
    ngx_str_t *text, ngx_log_t *log);
static ngx_int_t ngx_http_mcp_guard_needle(ngx_conf_t *cf,
    ngx_regex_t *re, ngx_str_t *pattern, ngx_http_mcp_guard_needle_t *nd);
static void ngx_http_mcp_guard_bit(ngx_http_mcp_guard_set_t *set,
    ngx_http_mcp_guard_needle_t *nd);
static size_t ngx_http_mcp_guard_rare(u_char *data, size_t len);
static ngx_uint_t ngx_http_mcp_guard_any(ngx_http_mcp_guard_needle_t *nd,
    ngx_str_t *text, u_char **first);
static ngx_uint_t ngx_http_mcp_guard_found(ngx_http_mcp_guard_needle_t *nd,
    u_char *s, size_t len, u_char *first);
static ngx_uint_t ngx_http_mcp_guard_plain(u_char *p, size_t len);
static void ngx_http_mcp_guard_arguments_text(ngx_str_t *text);
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

    u_char                        errstr[NGX_MAX_CONF_ERRSTR], c;
    ngx_int_t                     n;
    ngx_str_t                    *value;
    ngx_uint_t                    i;
    ngx_regex_elt_t              *re;
    ngx_regex_compile_t           rc;
    ngx_http_mcp_guard_set_t     *set;
    ngx_http_mcp_guard_needle_t  *nd;

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

    if (ngx_array_init(&set->needles, cf->pool, cf->args->nelts - 2,
                       sizeof(ngx_http_mcp_guard_needle_t))
        != NGX_OK)
    {
        return NGX_CONF_ERROR;
    }

    set->joinable = 1;
    set->nrare = 0;

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

        nd = ngx_array_push(&set->needles);
        if (nd == NULL
            || ngx_http_mcp_guard_needle(cf, rc.regex, &value[i], nd)
               != NGX_OK)
        {
            return NGX_CONF_ERROR;
        }

        ngx_http_mcp_guard_bit(set, nd);

        for (n = 0; n < (ngx_int_t) nd->nalts; n++) {
            ngx_http_mcp_guard_bit(set, &nd->alts[n]);
        }
    }

    return NGX_CONF_OK;
}


/*
 * Needles that look for one byte look for it once a text (set->rare);
 * a caseless needle looks for its byte in both cases on its own
 */

static void
ngx_http_mcp_guard_bit(ngx_http_mcp_guard_set_t *set,
    ngx_http_mcp_guard_needle_t *nd)
{
    u_char      c;
    ngx_uint_t  n;

    nd->bit = 64;

    if (nd->data == NULL || nd->caseless) {
        return;
    }

    c = nd->data[nd->rare];

    for (n = 0; n < set->nrare; n++) {
        if (set->rare[n] == c) {
            break;
        }
    }

    if (n < 64) {
        set->rare[n] = c;
        set->nrare = ngx_max(set->nrare, n + 1);
        nd->bit = n;
    }
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


/*
 * Before the values, their raw JSON text.  With no backslash in it, no
 * string has an escape, so each key and each string value, unescaped,
 * is in the text byte for byte between its quotes; a pattern that does
 * not read what is around its match (the set is joinable) and matches
 * none of the text matches none of them.  A quote is not a word
 * character, as a string's edge is not to \b.  The text may hold two
 * values under one key: both are in it, so a duplicate key hides
 * nothing from this look either.  A text with a backslash, or with a
 * byte this cannot read as every client does (unparsed: outside
 * printable ASCII, tab, CR and LF; a NUL could make a client read
 * UTF-16), is looked at value by value.
 */

ngx_int_t
ngx_http_mcp_guard_raw(ngx_array_t *guards, ngx_uint_t where, u_char *p,
    size_t len, ngx_uint_t parsed, ngx_log_t *log)
{
    ngx_int_t              rc;
    ngx_str_t              text;
    ngx_uint_t             i, j;
    ngx_http_mcp_guard_t  *g;

    if (guards == NULL || p == NULL) {
        return NGX_OK;
    }

    g = guards->elts;

    for (i = 0; i < guards->nelts; i++) {
        if ((g[i].where & where) && !g[i].set->joinable) {
            return NGX_OK;
        }
    }

    if (parsed ? memchr(p, '\\', len) != NULL
               : !ngx_http_mcp_guard_plain(p, len))
    {
        return NGX_OK;
    }

    text.data = p;
    text.len = len;

    if (where == NGX_HTTP_MCP_GUARD_ARGS) {
        ngx_http_mcp_guard_arguments_text(&text);
    }

    for (i = 0; i < guards->nelts; i++) {

        if (!(g[i].where & where)) {
            continue;
        }

        /* a set named twice (block arguments, redact results) is run once */
        for (j = 0; j < i; j++) {
            if ((g[j].where & where) && g[j].set == g[i].set) {
                break;
            }
        }

        if (j < i) {
            continue;
        }

        rc = ngx_http_mcp_guard_exec(g[i].set, &text, log);

        if (rc != NGX_DECLINED) {
            return rc;
        }
    }

    return NGX_DECLINED;
}


/*
 * A POST's body with no backslash, where arguments are looked for: from
 * the first "arguments" in quotes on.  With no backslash a quote is a
 * string's edge, so those bytes are a key or a whole string (a tool's
 * name), and each message's "arguments" key, spelt so, comes at or after
 * the first of them; what is before is the envelope (its method, ids, a
 * tool's name), which the guardrails do not read.  With none, the whole
 * body.
 */

static void
ngx_http_mcp_guard_arguments_text(ngx_str_t *text)
{
    u_char  *p, *q, *last;

    p = text->data;
    last = p + text->len;

    /* the "g", third of the word's letters, is rarer than its quote */
    for (q = p; q < last; q++) {

        q = memchr(q, 'g', last - q);

        if (q == NULL) {
            return;
        }

        if (q - p >= 3 && last - q >= 8
            && ngx_memcmp(q - 3, "\"arguments\"", 11) == 0)
        {
            text->data = q - 3;
            text->len = last - text->data;
            return;
        }
    }
}


/*
 * Only printable ASCII, tab, CR and LF, no backslash: sixteen bytes a
 * step, a step with any byte below a space, from DEL, or a backslash
 * looked at byte by byte
 */

static ngx_uint_t
ngx_http_mcp_guard_plain(u_char *p, size_t len)
{
    u_char   c, *last, *end;
#if (NGX_HTTP_MCP_GUARD_SSE2)
    __m128i  v, space, del, backslash, bad;

    space = _mm_set1_epi8(0x20);
    del = _mm_set1_epi8(0x7f);
    backslash = _mm_set1_epi8('\\');
#endif

    last = p + len;

    for ( /* void */ ; p < last; p = end) {

        end = (last - p >= 16) ? p + 16 : last;

#if (NGX_HTTP_MCP_GUARD_SSE2)
        if (end - p == 16) {
            v = _mm_loadu_si128((__m128i *) p);

            /* a signed compare: bytes from 0x80 are below the space too */
            bad = _mm_or_si128(_mm_cmplt_epi8(v, space),
                               _mm_or_si128(_mm_cmpeq_epi8(v, del),
                                            _mm_cmpeq_epi8(v, backslash)));

            if (_mm_movemask_epi8(bad) == 0) {
                continue;
            }
        }
#endif

        for ( /* void */ ; p < end; p++) {
            c = *p;

            if ((c < 0x20 && c != '\t' && c != '\r' && c != '\n')
                || c >= 0x7f || c == '\\')
            {
                return 0;
            }
        }
    }

    return 1;
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

            rc = ngx_http_mcp_guard_exec(g[i].set, &joined, gc->log);

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
    u_char      c, *p, *q, *last;
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

            /* \cX is one character, whatever X is ("\c[" opens nothing) */
            if (*p == 'c' && ++p == last) {
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
                    && ngx_strchr("=!<(#", p[2]) != NULL)))
        {
            return 0;
        }

        /*
         * "(?x)": blanks and "#" comments that this reading does not
         * follow (a "[" or "^" in a comment)
         */
        if (c == '(' && p + 1 < last && p[1] == '?') {
            for (q = p + 2;
                 q < last
                 && (ngx_http_mcp_needle_alnum(*q) || *q == '-' || *q == '^');
                 q++)
            {
                if (*q == 'x') {
                    return 0;
                }
            }
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

    return ngx_http_mcp_guard_exec(set, &text, log);
}


/*
 * NGX_OK: a pattern of the set matches text; NGX_DECLINED; NGX_ERROR.
 * A pattern whose needle the text lacks cannot match it and is not run:
 * a pcre2_match() costs some 300 instructions before it reads a byte,
 * a memchr() over a few hundred bytes a tenth of that.  What the library
 * says is logged without the text, which is what the guard keeps out.
 */

static ngx_int_t
ngx_http_mcp_guard_exec(ngx_http_mcp_guard_set_t *set, ngx_str_t *text,
    ngx_log_t *log)
{
    u_char                       *first[64];
    ngx_int_t                     n;
    ngx_uint_t                    i;
    ngx_regex_elt_t              *re;
    ngx_http_mcp_guard_needle_t  *nd;

    re = set->regexes.elts;
    nd = set->needles.elts;

    /* where the needles' rare bytes first are, one look a byte */
    for (i = 0; i < set->nrare; i++) {
        first[i] = memchr(text->data, set->rare[i], text->len);
    }

    for (i = 0; i < set->regexes.nelts; i++) {

        if (nd[i].data != NULL) {

            if (nd[i].caseless) {
                if (!ngx_http_mcp_needle_caseless(nd[i].data, nd[i].len,
                                                  nd[i].rare, text->data,
                                                  text->len))
                {
                    continue;
                }

            } else if ((nd[i].bit < 64 && first[nd[i].bit] == NULL)
                       || !ngx_http_mcp_guard_found(&nd[i], text->data,
                                                    text->len,
                                                    (nd[i].bit < 64)
                                                    ? first[nd[i].bit]
                                                    : NULL))
            {
                continue;
            }

        } else if (nd[i].nalts > 0
                   && !ngx_http_mcp_guard_any(&nd[i], text, first))
        {
            continue;
        }

        n = ngx_regex_exec(re[i].regex, text, NULL, 0);

        if (n == NGX_REGEX_NO_MATCHED) {
            continue;
        }

        if (n < 0) {
            ngx_log_error(NGX_LOG_ALERT, log, 0,
                          ngx_regex_exec_n " failed: %i using \"%s\"",
                          n, re[i].name);
            return NGX_ERROR;
        }

        return NGX_OK;
    }

    return NGX_DECLINED;
}


/*
 * A pattern's needle: its longest run of literal characters that every
 * match holds, read from the pattern by ngx_http_mcp_needle_literal()
 * (caseless after a leading "(?i)": then in lower case, looked for in
 * any case), or the runs of a group's alternatives when the shortest of
 * them is longer ("(ignore|forget) (the )?rules": not "rules" but one of
 * "ignore" and "forget"); or, with neither, the first byte of every
 * match as the library knows it, when no "(?" or "(*" can have made it
 * caseless.  Options that change how the pattern reads (extended,
 * literal) give none.
 */

static ngx_int_t
ngx_http_mcp_guard_needle(ngx_conf_t *cf, ngx_regex_t *re,
    ngx_str_t *pattern, ngx_http_mcp_guard_needle_t *nd)
{
    u_char                      *buf;
    size_t                       i;
    ngx_str_t                    best;
    ngx_uint_t                   caseless, unicode;
    ngx_http_mcp_needle_alts_t   alts;
#if (NGX_PCRE2)
    uint32_t                     type, unit, options;
#endif

    ngx_memzero(nd, sizeof(ngx_http_mcp_guard_needle_t));

    buf = ngx_pnalloc(cf->pool, 2 * pattern->len + 1);
    if (buf == NULL) {
        return NGX_ERROR;
    }

#if (NGX_PCRE2)
    if (pcre2_pattern_info(re, PCRE2_INFO_ALLOPTIONS, &options) != 0
        || (options & (PCRE2_EXTENDED|PCRE2_EXTENDED_MORE|PCRE2_LITERAL)))
    {
        return NGX_OK;
    }

    caseless = (options & PCRE2_CASELESS) ? 1 : 0;
    unicode = (options & (PCRE2_UTF|PCRE2_UCP)) ? 1 : 0;
#else
    caseless = 0;
    unicode = 1;
#endif

    ngx_http_mcp_needle_literal(pattern, buf, &best, &caseless, unicode,
                                &alts);

    if (alts.n > 0 && alts.shortest > best.len) {
        nd->alts = ngx_pcalloc(cf->pool,
                               alts.n * sizeof(ngx_http_mcp_guard_needle_t));
        if (nd->alts == NULL) {
            return NGX_ERROR;
        }

        for (i = 0; i < alts.n; i++) {
            nd->alts[i].data = alts.runs[i].data;
            nd->alts[i].len = alts.runs[i].len;
            nd->alts[i].rare = ngx_http_mcp_guard_rare(alts.runs[i].data,
                                                       alts.runs[i].len);
            nd->alts[i].bit = 64;
            nd->alts[i].caseless = caseless;
        }

        nd->nalts = alts.n;

        return NGX_OK;
    }

#if (NGX_PCRE2)
    /* an option set in the pattern ("(?i)") may make the byte caseless */
    for (i = 0; i + 1 < pattern->len; i++) {
        if (pattern->data[i] == '('
            && (pattern->data[i + 1] == '?' || pattern->data[i + 1] == '*'))
        {
            break;
        }
    }

    if (best.len == 0 && i + 1 >= pattern->len && !caseless
        && pcre2_pattern_info(re, PCRE2_INFO_FIRSTCODETYPE, &type) == 0
        && type == 1
        && pcre2_pattern_info(re, PCRE2_INFO_FIRSTCODEUNIT, &unit) == 0
        && unit < 256)
    {
        buf[0] = (u_char) unit;
        best.data = buf;
        best.len = 1;
    }
#endif

    if (best.len == 0) {
        return NGX_OK;
    }

    nd->data = best.data;
    nd->len = best.len;
    nd->caseless = caseless;
    nd->rare = ngx_http_mcp_guard_rare(best.data, best.len);

    return NGX_OK;
}


/*
 * The place in a needle of the byte looked for first: the one least
 * often met in text
 */

static size_t
ngx_http_mcp_guard_rare(u_char *data, size_t len)
{
    size_t      i, rare;
    ngx_uint_t  score, rarest;

    /*
     * from the most common in JSON text on (its signs, digits, then
     * English letters); what is not here (capitals, "@", "=") is rarer
     */
    static u_char  common[] = "\":, .0123456789_-/etaoinsrhldcumfpgwybvkxjqz";

    rare = 0;
    rarest = 0;

    for (i = 0; i < len; i++) {

        for (score = 0; score < sizeof(common) - 1; score++) {
            if (common[score] == data[i]) {
                break;
            }
        }

        if (score > rarest || i == 0) {
            rarest = score;
            rare = i;
        }
    }

    return rare;
}


/*
 * whether text holds one of the runs of a needle's alternatives; first:
 * where the set's rare bytes first are
 */

static ngx_uint_t
ngx_http_mcp_guard_any(ngx_http_mcp_guard_needle_t *nd, ngx_str_t *text,
    u_char **first)
{
    ngx_uint_t                    i;
    ngx_http_mcp_guard_needle_t  *a;

    for (i = 0; i < nd->nalts; i++) {
        a = &nd->alts[i];

        if (a->caseless) {
            if (ngx_http_mcp_needle_caseless(a->data, a->len, a->rare,
                                             text->data, text->len))
            {
                return 1;
            }

            continue;
        }

        /* memmem(): ngx_http_mcp_guard_found() stays exec()'s alone */
        if ((a->bit == 64 || first[a->bit] != NULL)
            && memmem(text->data, text->len, a->data, a->len) != NULL)
        {
            return 1;
        }
    }

    return 0;
}


/* whether the needle is in s; first: where its rare byte first is, if known */

static ngx_uint_t
ngx_http_mcp_guard_found(ngx_http_mcp_guard_needle_t *nd, u_char *s,
    size_t len, u_char *first)
{
    u_char  *p, *q, *last;

    if (nd->len > len) {
        return 0;
    }

    /* where the needle's rare byte can be */
    p = s + nd->rare;
    last = s + (len - nd->len) + nd->rare + 1;
    q = (first != NULL && first >= p) ? first : NULL;

    while (p < last) {

        if (q == NULL) {
            q = memchr(p, nd->data[nd->rare], last - p);

            if (q == NULL) {
                return 0;
            }
        }

        if (q >= last) {
            return 0;
        }

        /* its two ends before the rest */
        if (q[-(off_t) nd->rare] == nd->data[0]
            && q[nd->len - 1 - nd->rare] == nd->data[nd->len - 1]
            && ngx_memcmp(q - nd->rare, nd->data, nd->len) == 0)
        {
            return 1;
        }

        p = q + 1;
        q = NULL;
    }

    return 0;
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
