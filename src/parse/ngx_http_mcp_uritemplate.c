
/*
 * ngx_http_mcp_module: RFC 6570 URI template matching.
 *
 * Matching is the reverse of expansion: given a template and a URI, find
 * variable values whose expansion gives the URI.  The reverse is not
 * unique in general (adjacent expressions, lists of variables), so the
 * matcher walks the template left to right and, at each expression, first
 * tries the longest run of characters the expression could have produced,
 * then shorter ones, until the rest of the template matches too.  The URI
 * comes from the client, so attempts allocate nothing (values are decoded
 * once the whole URI matched), a run may only end where the literal that
 * follows the expression starts, and the number of attempts is capped.
 *
 * Variables that an expression omits (undefined in expansion terms) are
 * not reported.  Values are percent-decoded and, like the keys, copied
 * into the pool with a terminating NUL that ngx_str_t.len does not count.
 */


#include <ngx_config.h>
#include <ngx_core.h>
#include "ngx_http_mcp_uritemplate.h"


#define NGX_HTTP_MCP_UT_MAX_VARS    16
#define NGX_HTTP_MCP_UT_MAX_PREFIX  9999
#define NGX_HTTP_MCP_UT_MAX_STEPS   4096


typedef struct {
    ngx_str_t                  name;
    ngx_uint_t                 prefix;      /* ":N"; 0: none */
    unsigned                   explode:1;   /* "*" */
} ngx_http_mcp_ut_var_t;


typedef struct {
    u_char                     first;       /* 0: none */
    u_char                     sep;
    unsigned                   named:1;     /* ";", "?", "&": name=value */
    unsigned                   reserved:1;  /* "+", "#": reserved chars */
    unsigned                   nonempty:1;  /* simple and "+" */
    ngx_uint_t                 nvars;
    ngx_http_mcp_ut_var_t      vars[NGX_HTTP_MCP_UT_MAX_VARS];
} ngx_http_mcp_ut_expr_t;


typedef struct {
    ngx_array_t               *vars;
    u_char                    *tmpl_end;
    u_char                    *uri_end;
    ngx_uint_t                 steps;       /* attempts left */
} ngx_http_mcp_ut_ctx_t;


static ngx_int_t ngx_http_mcp_ut_validate(ngx_str_t *tmpl);
static ngx_int_t ngx_http_mcp_ut_parse(u_char *p, u_char *end,
    ngx_http_mcp_ut_expr_t *expr);
static u_char *ngx_http_mcp_ut_parse_var(u_char *p, u_char *end,
    ngx_http_mcp_ut_var_t *var);
static ngx_int_t ngx_http_mcp_ut_match(ngx_http_mcp_ut_ctx_t *ctx, u_char *t,
    u_char *u);
static size_t ngx_http_mcp_ut_run(ngx_http_mcp_ut_expr_t *expr, u_char *p,
    u_char *end);
static ngx_uint_t ngx_http_mcp_ut_allowed(ngx_http_mcp_ut_expr_t *expr,
    u_char c);
static ngx_int_t ngx_http_mcp_ut_split(ngx_http_mcp_ut_ctx_t *ctx,
    ngx_http_mcp_ut_expr_t *expr, u_char *s, u_char *e);
static ngx_int_t ngx_http_mcp_ut_split_named(ngx_http_mcp_ut_ctx_t *ctx,
    ngx_http_mcp_ut_expr_t *expr, u_char *s, u_char *e);
static ngx_int_t ngx_http_mcp_ut_push(ngx_http_mcp_ut_ctx_t *ctx,
    ngx_http_mcp_ut_var_t *var, u_char *s, u_char *e);
static ngx_int_t ngx_http_mcp_ut_decode(ngx_pool_t *pool, ngx_keyval_t *kv);
static ngx_int_t ngx_http_mcp_ut_hex(u_char c);


ngx_int_t
ngx_http_mcp_uritemplate_match(ngx_pool_t *pool, ngx_str_t *tmpl,
    ngx_str_t *uri, ngx_array_t *vars)
{
    ngx_int_t              rc;
    ngx_uint_t             i, nelts;
    ngx_http_mcp_ut_ctx_t  ctx;

    /*
     * A malformed template is an error whatever the URI, not a mismatch
     * that depends on how far matching got.
     */

    if (ngx_http_mcp_ut_validate(tmpl) != NGX_OK) {
        return NGX_ERROR;
    }

    ctx.vars = vars;
    ctx.tmpl_end = tmpl->data + tmpl->len;
    ctx.uri_end = uri->data + uri->len;
    ctx.steps = NGX_HTTP_MCP_UT_MAX_STEPS;

    nelts = vars->nelts;

    rc = ngx_http_mcp_ut_match(&ctx, tmpl->data, uri->data);

    for (i = nelts; rc == NGX_OK && i < vars->nelts; i++) {
        rc = ngx_http_mcp_ut_decode(pool, (ngx_keyval_t *) vars->elts + i);
    }

    if (rc != NGX_OK) {
        vars->nelts = nelts;
    }

    return rc;
}


static ngx_int_t
ngx_http_mcp_ut_validate(ngx_str_t *tmpl)
{
    u_char                  *p, *end, *close;
    ngx_http_mcp_ut_expr_t   expr;

    end = tmpl->data + tmpl->len;

    for (p = tmpl->data; p < end; p++) {

        if (*p == '}') {
            return NGX_ERROR;
        }

        if (*p != '{') {
            continue;
        }

        close = ngx_strlchr(p + 1, end, '}');

        if (close == NULL
            || ngx_http_mcp_ut_parse(p + 1, close, &expr) != NGX_OK)
        {
            return NGX_ERROR;
        }

        p = close;
    }

    return NGX_OK;
}


static ngx_int_t
ngx_http_mcp_ut_parse(u_char *p, u_char *end, ngx_http_mcp_ut_expr_t *expr)
{
    ngx_memzero(expr, sizeof(ngx_http_mcp_ut_expr_t));

    expr->sep = ',';

    if (p == end) {
        return NGX_ERROR;
    }

    switch (*p) {

    case '+':
        expr->reserved = 1;
        expr->nonempty = 1;
        p++;
        break;

    case '#':
        expr->first = '#';
        expr->reserved = 1;
        p++;
        break;

    case '.':
    case '/':
        expr->first = *p;
        expr->sep = *p;
        p++;
        break;

    case ';':
        expr->first = ';';
        expr->sep = ';';
        expr->named = 1;
        p++;
        break;

    case '?':
    case '&':
        expr->first = *p;
        expr->sep = '&';
        expr->named = 1;
        p++;
        break;

    case '=':
    case ',':
    case '!':
    case '@':
    case '|':
        /* reserved by RFC 6570 for future extensions */
        return NGX_ERROR;

    default:
        expr->nonempty = 1;
        break;
    }

    for ( ;; ) {

        if (expr->nvars == NGX_HTTP_MCP_UT_MAX_VARS) {
            return NGX_ERROR;
        }

        p = ngx_http_mcp_ut_parse_var(p, end, &expr->vars[expr->nvars++]);

        if (p == NULL) {
            return NGX_ERROR;
        }

        if (p == end) {
            return NGX_OK;
        }

        if (*p++ != ',') {
            return NGX_ERROR;
        }
    }
}


static u_char *
ngx_http_mcp_ut_parse_var(u_char *p, u_char *end, ngx_http_mcp_ut_var_t *var)
{
    u_char  c;

    var->name.data = p;

    while (p < end) {
        c = *p;

        if (c == '%') {
            if (end - p < 3
                || ngx_http_mcp_ut_hex(p[1]) < 0
                || ngx_http_mcp_ut_hex(p[2]) < 0)
            {
                return NULL;
            }

            p += 3;
            continue;
        }

        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
            || (c >= '0' && c <= '9') || c == '_'
            || (c == '.' && p != var->name.data))
        {
            p++;
            continue;
        }

        break;
    }

    var->name.len = p - var->name.data;

    if (var->name.len == 0) {
        return NULL;
    }

    if (p < end && *p == '*') {
        var->explode = 1;
        return p + 1;
    }

    if (p < end && *p == ':') {
        for (p++; p < end && *p >= '0' && *p <= '9'; p++) {
            var->prefix = var->prefix * 10 + (*p - '0');

            if (var->prefix > NGX_HTTP_MCP_UT_MAX_PREFIX) {
                return NULL;
            }
        }

        if (var->prefix == 0) {
            return NULL;
        }
    }

    return p;
}


static ngx_int_t
ngx_http_mcp_ut_match(ngx_http_mcp_ut_ctx_t *ctx, u_char *t, u_char *u)
{
    u_char                  *close, *next, *end;
    size_t                   len;
    ngx_int_t                rc;
    ngx_uint_t               nelts, fits;
    ngx_http_mcp_ut_expr_t   expr;

    while (t < ctx->tmpl_end && *t != '{') {

        if (u == ctx->uri_end || *t != *u) {
            return NGX_DECLINED;
        }

        t++;
        u++;
    }

    if (t == ctx->tmpl_end) {
        return (u == ctx->uri_end) ? NGX_OK : NGX_DECLINED;
    }

    /* validated beforehand: the brace is closed and the expression parses */

    close = ngx_strlchr(t + 1, ctx->tmpl_end, '}');

    if (close == NULL || ngx_http_mcp_ut_parse(t + 1, close, &expr) != NGX_OK)
    {
        return NGX_ERROR;
    }

    next = close + 1;
    nelts = ctx->vars->nelts;
    len = ngx_http_mcp_ut_run(&expr, u, ctx->uri_end);

    for ( ;; ) {
        end = u + len;

        /*
         * Only ends the rest of the template can go on from are worth a
         * try: the end of the URI after the last expression, the first
         * byte of the literal that follows otherwise.
         */

        if (next == ctx->tmpl_end) {
            fits = (end == ctx->uri_end);

        } else {
            fits = (*next == '{' || (end < ctx->uri_end && *end == *next));
        }

        if (fits) {
            if (ctx->steps == 0) {
                return NGX_DECLINED;
            }

            ctx->steps--;

            rc = ngx_http_mcp_ut_split(ctx, &expr, u, end);

            if (rc == NGX_OK) {
                rc = ngx_http_mcp_ut_match(ctx, next, end);
            }

            if (rc != NGX_DECLINED) {
                return rc;
            }

            /* forget the values of this attempt */
            ctx->vars->nelts = nelts;
        }

        if (len-- == 0) {
            return NGX_DECLINED;
        }
    }
}


/*
 * The longest run at p made only of characters the expression's expansion
 * can contain: the values' characters, its separators and, for named
 * operators, "=".  A "%" counts only as the start of a whole triplet.
 */

static size_t
ngx_http_mcp_ut_run(ngx_http_mcp_ut_expr_t *expr, u_char *p, u_char *end)
{
    u_char  *start;

    start = p;

    while (p < end) {

        if (*p == '%') {
            if (end - p < 3
                || ngx_http_mcp_ut_hex(p[1]) < 0
                || ngx_http_mcp_ut_hex(p[2]) < 0)
            {
                break;
            }

            p += 3;
            continue;
        }

        if (!ngx_http_mcp_ut_allowed(expr, *p)) {
            break;
        }

        p++;
    }

    return p - start;
}


static ngx_uint_t
ngx_http_mcp_ut_allowed(ngx_http_mcp_ut_expr_t *expr, u_char c)
{
    /* unreserved; bytes >= 0x80 are let through for IRIs (RFC 3987) */

    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
        || (c >= '0' && c <= '9') || c >= 0x80
        || c == '-' || c == '.' || c == '_' || c == '~')
    {
        return 1;
    }

    if (expr->reserved && c != '\0'
        && ngx_strchr(":/?#[]@!$&'()*+,;=", c) != NULL)
    {
        return 1;
    }

    if (c == expr->sep || (expr->first && c == expr->first)) {
        return 1;
    }

    return expr->named && c == '=';
}


/*
 * Assigns the text [s, e) of one expression to its variables.  An empty
 * text means all of them are undefined, which the simple and "+" forms
 * do not allow here: a match there must say something.
 */

static ngx_int_t
ngx_http_mcp_ut_split(ngx_http_mcp_ut_ctx_t *ctx,
    ngx_http_mcp_ut_expr_t *expr, u_char *s, u_char *e)
{
    u_char                 *p;
    ngx_int_t               rc;
    ngx_uint_t              i;
    ngx_http_mcp_ut_var_t  *var;

    if (s == e) {
        return expr->nonempty ? NGX_DECLINED : NGX_OK;
    }

    if (expr->first) {
        if (*s != expr->first) {
            return NGX_DECLINED;
        }

        s++;
    }

    if (expr->named) {
        return ngx_http_mcp_ut_split_named(ctx, expr, s, e);
    }

    for (i = 0; i < expr->nvars; i++) {
        var = &expr->vars[i];

        p = ngx_strlchr(s, e, expr->sep);

        if (p == NULL) {
            p = e;

        } else if (i == expr->nvars - 1) {

            /*
             * More items than variables: the last one takes the rest only
             * when its expansion could contain the separator: reserved
             * expansion, "." (unreserved itself) or an exploded list.
             */

            if (!expr->reserved && expr->sep != '.' && !var->explode) {
                return NGX_DECLINED;
            }

            p = e;
        }

        rc = ngx_http_mcp_ut_push(ctx, var, s, p);
        if (rc != NGX_OK) {
            return rc;
        }

        if (p == e) {
            break;
        }

        s = p + 1;
    }

    return NGX_OK;
}


/*
 * Named forms: "name=value" items, ";name" meaning an empty value.  Items
 * may come in any order, but each name at most once, and only names the
 * expression lists.
 */

static ngx_int_t
ngx_http_mcp_ut_split_named(ngx_http_mcp_ut_ctx_t *ctx,
    ngx_http_mcp_ut_expr_t *expr, u_char *s, u_char *e)
{
    u_char     *p, *eq, *name_end;
    size_t      len;
    ngx_int_t   rc;
    ngx_uint_t  i, seen;

    seen = 0;

    for ( ;; ) {
        p = ngx_strlchr(s, e, expr->sep);
        if (p == NULL) {
            p = e;
        }

        eq = ngx_strlchr(s, p, '=');
        name_end = (eq != NULL) ? eq : p;
        len = name_end - s;

        for (i = 0; i < expr->nvars; i++) {
            if (expr->vars[i].name.len == len
                && ngx_strncmp(expr->vars[i].name.data, s, len) == 0)
            {
                break;
            }
        }

        if (i == expr->nvars || (seen & (1 << i))) {
            return NGX_DECLINED;
        }

        seen |= 1 << i;

        rc = ngx_http_mcp_ut_push(ctx, &expr->vars[i],
                                  (eq != NULL) ? eq + 1 : p, p);
        if (rc != NGX_OK) {
            return rc;
        }

        if (p == e) {
            return NGX_OK;
        }

        s = p + 1;
    }
}


/*
 * Records a value as the raw text [s, e) with the template's name: both
 * are copied and decoded only after the whole URI matched.  What would
 * make decoding fail is checked here, so that it declines the attempt.
 */

static ngx_int_t
ngx_http_mcp_ut_push(ngx_http_mcp_ut_ctx_t *ctx, ngx_http_mcp_ut_var_t *var,
    u_char *s, u_char *e)
{
    u_char        *p;
    ngx_uint_t     chars;
    ngx_keyval_t  *kv;

    chars = 0;

    for (p = s; p < e; p++) {

        if (*p == '%') {
            if (e - p < 3
                || ngx_http_mcp_ut_hex(p[1]) < 0
                || ngx_http_mcp_ut_hex(p[2]) < 0)
            {
                return NGX_DECLINED;
            }

            /* ":N" counts characters: UTF-8 continuation bytes start none */

            if ((ngx_http_mcp_ut_hex(p[1]) & 0xc) != 0x8) {
                chars++;
            }

            p += 2;

        } else if ((*p & 0xc0) != 0x80) {
            chars++;
        }
    }

    if (var->prefix && chars > var->prefix) {
        return NGX_DECLINED;
    }

    kv = ngx_array_push(ctx->vars);
    if (kv == NULL) {
        return NGX_ERROR;
    }

    kv->key = var->name;
    kv->value.len = e - s;
    kv->value.data = s;

    return NGX_OK;
}


static ngx_int_t
ngx_http_mcp_ut_decode(ngx_pool_t *pool, ngx_keyval_t *kv)
{
    u_char  *d, *s, *e, *key;

    key = ngx_pnalloc(pool, kv->key.len + 1);
    d = ngx_pnalloc(pool, kv->value.len + 1);

    if (key == NULL || d == NULL) {
        return NGX_ERROR;
    }

    *ngx_cpymem(key, kv->key.data, kv->key.len) = '\0';
    kv->key.data = key;

    s = kv->value.data;
    e = s + kv->value.len;
    kv->value.data = d;

    while (s < e) {
        if (*s == '%') {
            /* checked whole by ngx_http_mcp_ut_push() */
            *d++ = (u_char) (ngx_http_mcp_ut_hex(s[1]) << 4
                             | ngx_http_mcp_ut_hex(s[2]));
            s += 3;

        } else {
            *d++ = *s++;
        }
    }

    *d = '\0';
    kv->value.len = d - kv->value.data;

    return NGX_OK;
}


static ngx_int_t
ngx_http_mcp_ut_hex(u_char c)
{
    if (c >= '0' && c <= '9') {
        return c - '0';
    }

    c |= 0x20;

    if (c >= 'a' && c <= 'f') {
        return c - 'a' + 10;
    }

    return -1;
}
