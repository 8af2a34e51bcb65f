
/*
 * mcp_pass_tool: a location's curated view of its upstream's tools.  A
 * tool may be offered under another name (as=), with another title,
 * description or annotations, or not at all (hide); two locations over
 * one upstream may offer two views of it.
 *
 * tools/list: a hidden tool, and an upstream tool whose name another is
 * renamed onto (it could not be called: the name is the other's now),
 * are left out as the policy leaves a denied tool out; the policy and
 * the caller's scopes read the name the client sees.  The others are
 * rewritten after the pins and the checks read what the upstream listed
 * (ngx_http_mcp_proxy_check.c), so that a pin is of the upstream's
 * definition, not the view's.
 *
 * tools/call: a call of a renamed tool's new name goes upstream under
 * its real name, the body printed again from the parsed messages that
 * the edge decided on (ids and kept numbers as the client wrote them),
 * and Mcp-Name (2026-07-28) saying the same; the real name of a renamed
 * tool, and a hidden tool, are unknown through the view: -32602, and
 * nothing reaches the upstream.
 */


#include "ngx_http_mcp_proxy.h"
#include "ngx_http_mcp_jsonrpc.h"
#include "ngx_http_mcp_json.h"
#include "ngx_http_mcp_param.h"


typedef struct {
    u_char                    *key;         /* NUL-terminated */
    u_char                    *text;        /* a string's, NUL-terminated */
    ngx_uint_t                 value;       /* 0 string, 1 false, 2 true */
} ngx_http_mcp_proxy_annotation_t;


/* one mcp_pass_tool */
typedef struct {
    ngx_str_t                  name;        /* the upstream's */
    ngx_str_t                  as;          /* the client's */
    ngx_str_t                  header;      /* Mcp-Name for name */
    ngx_str_t                  title;       /* NULL data: the upstream's */
    ngx_str_t                  description;
    ngx_array_t               *annotations;  /* of the annotation_t above */
    unsigned                   hide:1;
    unsigned                   renamed:1;
} ngx_http_mcp_proxy_view_t;


typedef struct {
    ngx_http_mcp_proxy_ctx_t  *pctx;
    ngx_uint_t                 changed;
} ngx_http_mcp_proxy_view_walk_t;


static ngx_http_mcp_proxy_view_t *ngx_http_mcp_proxy_view_find(
    ngx_array_t *views, ngx_str_t *name, ngx_uint_t as);
static ngx_int_t ngx_http_mcp_proxy_view_tool(void *data, cJSON *tool,
    ngx_str_t *name);
static ngx_int_t ngx_http_mcp_proxy_view_set(cJSON *object, const char *key,
    cJSON *value);
static ngx_int_t ngx_http_mcp_proxy_view_header(ngx_conf_t *cf,
    ngx_http_mcp_proxy_view_t *view);
static ngx_int_t ngx_http_mcp_proxy_view_keep(cJSON *json);


/*
 * mcp_pass_tool NAME [as=NEW] [title=TEXT] [description=TEXT]
 *               [annotation=KEY:VALUE ...] | [hide];
 */

char *
ngx_http_mcp_pass_tool(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_mcp_proxy_loc_conf_t *plcf = conf;

    u_char                           *colon;
    ngx_str_t                        *value, v;
    ngx_uint_t                        i, options;
    ngx_http_mcp_proxy_view_t        *view, *other;
    ngx_http_mcp_proxy_annotation_t  *a;

    value = cf->args->elts;

    if (value[1].len == 0) {
        return "takes a tool's name, not an empty one";
    }

    if (plcf->views == NGX_CONF_UNSET_PTR) {
        plcf->views = ngx_array_create(cf->pool, 4,
                                       sizeof(ngx_http_mcp_proxy_view_t));
        if (plcf->views == NULL) {
            return NGX_CONF_ERROR;
        }
    }

    if (ngx_http_mcp_proxy_view_find(plcf->views, &value[1], 0) != NULL) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "tool \"%V\" is configured twice", &value[1]);
        return NGX_CONF_ERROR;
    }

    view = ngx_array_push(plcf->views);
    if (view == NULL) {
        return NGX_CONF_ERROR;
    }

    ngx_memzero(view, sizeof(ngx_http_mcp_proxy_view_t));

    view->name = value[1];
    view->as = value[1];
    options = 0;

    for (i = 2; i < cf->args->nelts; i++) {

        if (ngx_strcmp(value[i].data, "hide") == 0) {
            view->hide = 1;
            continue;
        }

        options++;

        if (ngx_strncmp(value[i].data, "as=", 3) == 0) {
            v.data = value[i].data + 3;
            v.len = value[i].len - 3;

            if (v.len == 0) {
                return "has an empty \"as=\"";
            }

            view->as = v;
            view->renamed = (v.len != view->name.len
                             || ngx_strncmp(v.data, view->name.data, v.len)
                                != 0);
            continue;
        }

        if (ngx_strncmp(value[i].data, "title=", 6) == 0) {
            view->title.data = value[i].data + 6;
            view->title.len = value[i].len - 6;
            continue;
        }

        if (ngx_strncmp(value[i].data, "description=", 12) == 0) {
            view->description.data = value[i].data + 12;
            view->description.len = value[i].len - 12;
            continue;
        }

        if (ngx_strncmp(value[i].data, "annotation=", 11) == 0) {
            v.data = value[i].data + 11;
            v.len = value[i].len - 11;

            colon = ngx_strlchr(v.data, v.data + v.len, ':');

            if (colon == NULL || colon == v.data) {
                ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                                   "\"%V\" is not \"annotation=KEY:VALUE\"",
                                   &value[i]);
                return NGX_CONF_ERROR;
            }

            if (view->annotations == NULL) {
                view->annotations = ngx_array_create(cf->pool, 2,
                                  sizeof(ngx_http_mcp_proxy_annotation_t));
                if (view->annotations == NULL) {
                    return NGX_CONF_ERROR;
                }
            }

            a = ngx_array_push(view->annotations);
            if (a == NULL) {
                return NGX_CONF_ERROR;
            }

            a->key = ngx_pnalloc(cf->pool, colon - v.data + 1);
            if (a->key == NULL) {
                return NGX_CONF_ERROR;
            }

            *ngx_cpymem(a->key, v.data, colon - v.data) = '\0';

            /* a value of the data that follows it, NUL-terminated */
            a->text = colon + 1;
            a->value = (ngx_strcmp(a->text, "true") == 0)
                       ? 2 : (ngx_strcmp(a->text, "false") == 0) ? 1 : 0;
            continue;
        }

        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "unknown option \"%V\"", &value[i]);
        return NGX_CONF_ERROR;
    }

    if (view->hide && options) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "tool \"%V\" is hidden: it takes no other option",
                           &view->name);
        return NGX_CONF_ERROR;
    }

    if (!view->hide && options == 0) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "tool \"%V\": nothing to change (as=, title=, "
                           "description=, annotation= or hide)",
                           &view->name);
        return NGX_CONF_ERROR;
    }

    /*
     * Each name the client sees is one tool's: a new name is no other
     * tool's new name, nor the name of a configured tool that keeps it
     * (one renamed away or hidden frees its name; a tool of the upstream
     * that no mcp_pass_tool names is shadowed by a rename onto its name,
     * at run time)
     */

    other = view->renamed
            ? ngx_http_mcp_proxy_view_find(plcf->views, &view->as, 0) : NULL;

    if (other != NULL && !other->renamed && !other->hide) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "tool \"%V\" renamed to \"%V\", the name of "
                           "another configured tool", &view->name, &view->as);
        return NGX_CONF_ERROR;
    }

    other = plcf->views->elts;

    for (i = 0; i + 1 < plcf->views->nelts; i++) {

        if (!view->renamed && !view->hide && other[i].renamed
            && other[i].as.len == view->name.len
            && ngx_strncmp(other[i].as.data, view->name.data,
                           view->name.len) == 0)
        {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "tool \"%V\" is what \"%V\" is renamed to",
                               &view->name, &other[i].name);
            return NGX_CONF_ERROR;
        }

        if (view->renamed && other[i].renamed
            && other[i].as.len == view->as.len
            && ngx_strncmp(other[i].as.data, view->as.data, view->as.len)
               == 0)
        {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "tools \"%V\" and \"%V\" are both renamed to "
                               "\"%V\"", &other[i].name, &view->name,
                               &view->as);
            return NGX_CONF_ERROR;
        }
    }

    if (view->renamed && ngx_http_mcp_proxy_view_header(cf, view) != NGX_OK)
    {
        return NGX_CONF_ERROR;
    }

    return NGX_CONF_OK;
}


/*
 * The Mcp-Name a renamed tool's call carries upstream: its real name as
 * it is, or in the "=?base64?...?=" wrapper when a header cannot carry
 * it so (non-ASCII, control characters, white space at its ends, text
 * that looks like the wrapper).
 */

static ngx_int_t
ngx_http_mcp_proxy_view_header(ngx_conf_t *cf,
    ngx_http_mcp_proxy_view_t *view)
{
    return ngx_http_mcp_param_encode(cf->pool, &view->name, &view->header);
}


/* the entry of real name (as 0) or of the name clients see (as 1) */

static ngx_http_mcp_proxy_view_t *
ngx_http_mcp_proxy_view_find(ngx_array_t *views, ngx_str_t *name,
    ngx_uint_t as)
{
    ngx_str_t                  *s;
    ngx_uint_t                  i;
    ngx_http_mcp_proxy_view_t  *view;

    if (views == NULL) {
        return NULL;
    }

    view = views->elts;

    for (i = 0; i < views->nelts; i++) {

        if (as && !view[i].renamed) {
            continue;
        }

        s = as ? &view[i].as : &view[i].name;

        if (s->len == name->len
            && ngx_strncmp(s->data, name->data, name->len) == 0)
        {
            return &view[i];
        }
    }

    return NULL;
}


/*
 * A listed tool's name as the view shows it, in *shown; NGX_DECLINED: the
 * view leaves it out (hidden, or its name is another's new one).
 */

ngx_int_t
ngx_http_mcp_proxy_view_name(ngx_http_mcp_proxy_loc_conf_t *plcf,
    ngx_str_t *real, ngx_str_t *shown)
{
    ngx_http_mcp_proxy_view_t  *view;

    *shown = *real;

    if (plcf->views == NULL) {
        return NGX_OK;
    }

    view = ngx_http_mcp_proxy_view_find(plcf->views, real, 0);

    if (view == NULL) {
        return (ngx_http_mcp_proxy_view_find(plcf->views, real, 1) == NULL)
               ? NGX_OK : NGX_DECLINED;
    }

    if (view->hide) {
        return NGX_DECLINED;
    }

    *shown = view->as;

    return NGX_OK;
}


/*
 * A tools/call's name through the view: *real is the upstream's name of
 * the tool; NGX_DECLINED when the view knows no such tool (hidden, or
 * the real name of a renamed one).
 */

ngx_int_t
ngx_http_mcp_proxy_view_call(ngx_http_mcp_proxy_loc_conf_t *plcf,
    ngx_str_t *name, ngx_str_t *real)
{
    ngx_http_mcp_proxy_view_t  *view;

    *real = *name;

    if (plcf->views == NULL) {
        return NGX_OK;
    }

    view = ngx_http_mcp_proxy_view_find(plcf->views, name, 1);

    if (view != NULL) {
        *real = view->name;
        return NGX_OK;
    }

    view = ngx_http_mcp_proxy_view_find(plcf->views, name, 0);

    if (view != NULL && (view->hide || view->renamed)) {
        return NGX_DECLINED;
    }

    return NGX_OK;
}


/*
 * A tools/list result as the view shows it, after the pins and checks
 * read the upstream's: names, titles, descriptions and annotations
 * overridden.  The tools it leaves out were left out by the filter.
 */

ngx_int_t
ngx_http_mcp_proxy_view_list(ngx_http_mcp_proxy_ctx_t *pctx, cJSON *result,
    ngx_uint_t *changed)
{
    ngx_int_t                       rc;
    ngx_uint_t                      dropped;
    ngx_http_mcp_proxy_view_walk_t  walk;

    walk.pctx = pctx;
    walk.changed = 0;
    dropped = 0;

    rc = ngx_http_mcp_jsonrpc_tools(result, ngx_http_mcp_proxy_view_tool,
                                    &walk, &dropped);

    if (walk.changed || dropped) {
        *changed = 1;
    }

    return rc;
}


static ngx_int_t
ngx_http_mcp_proxy_view_tool(void *data, cJSON *tool, ngx_str_t *name)
{
    ngx_http_mcp_proxy_view_walk_t *walk = data;

    cJSON                            *annotations;
    ngx_str_t                         shown;
    ngx_uint_t                        i;
    ngx_http_mcp_proxy_view_t        *view;
    ngx_http_mcp_proxy_annotation_t  *a;

    /* the filter left these out already: a second look costs little */
    if (ngx_http_mcp_proxy_view_name(walk->pctx->conf, name, &shown)
        != NGX_OK)
    {
        return NGX_DECLINED;
    }

    view = ngx_http_mcp_proxy_view_find(walk->pctx->conf->views, name, 0);

    if (view == NULL) {
        return NGX_OK;
    }

    walk->changed = 1;

    /* the view's strings are NUL-terminated: configuration arguments */

    if (view->renamed
        && ngx_http_mcp_proxy_view_set(tool, "name",
               cJSON_CreateString((char *) view->as.data))
           != NGX_OK)
    {
        return NGX_ERROR;
    }

    if (view->title.data != NULL
        && ngx_http_mcp_proxy_view_set(tool, "title",
               cJSON_CreateString((char *) view->title.data))
           != NGX_OK)
    {
        return NGX_ERROR;
    }

    if (view->description.data != NULL
        && ngx_http_mcp_proxy_view_set(tool, "description",
               cJSON_CreateString((char *) view->description.data))
           != NGX_OK)
    {
        return NGX_ERROR;
    }

    if (view->annotations == NULL) {
        return NGX_OK;
    }

    annotations = cJSON_GetObjectItemCaseSensitive(tool, "annotations");

    if (!cJSON_IsObject(annotations)) {
        annotations = cJSON_CreateObject();

        if (ngx_http_mcp_proxy_view_set(tool, "annotations", annotations)
            != NGX_OK)
        {
            return NGX_ERROR;
        }
    }

    a = view->annotations->elts;

    for (i = 0; i < view->annotations->nelts; i++) {
        if (ngx_http_mcp_proxy_view_set(annotations, (char *) a[i].key,
                a[i].value ? cJSON_CreateBool(a[i].value == 2)
                           : cJSON_CreateString((char *) a[i].text))
            != NGX_OK)
        {
            return NGX_ERROR;
        }
    }

    return NGX_OK;
}


/* object[key] = value, replaced or added; value is the object's or freed */

static ngx_int_t
ngx_http_mcp_proxy_view_set(cJSON *object, const char *key, cJSON *value)
{
    if (value == NULL) {
        return NGX_ERROR;
    }

    if (cJSON_GetObjectItemCaseSensitive(object, key) != NULL) {
        if (cJSON_ReplaceItemInObjectCaseSensitive(object, key, value)) {
            return NGX_OK;
        }

    } else if (cJSON_AddItemToObject(object, key, value)) {
        return NGX_OK;
    }

    cJSON_Delete(value);

    return NGX_ERROR;
}


/*
 * The POST's renamed calls under their real names, and the arguments a
 * guardrail redacted: the parsed messages printed again as the body the
 * upstream gets (pctx->body), with the client's ids and the numbers
 * whose text was kept as the client wrote them; the Mcp-Name it gets
 * with it (pctx->mcp_name).  Nothing renamed or redacted: the client's
 * bytes go on.
 */

ngx_int_t
ngx_http_mcp_proxy_view_body(ngx_http_mcp_proxy_ctx_t *pctx)
{
    cJSON                      *copy, *item, *id, *name, *raw;
    ngx_str_t                   tool;
    ngx_uint_t                  i, renamed;
    ngx_http_mcp_ctx_t         *ctx;
    ngx_http_request_t         *r;
    ngx_http_mcp_msg_t         *msg;
    ngx_http_mcp_proxy_view_t  *view;

    ctx = pctx->ctx;

    if (ctx->root == NULL
        || (pctx->conf->views == NULL && !pctx->redacted
            && !ctx->trace_changed))
    {
        return NGX_OK;
    }

    r = ctx->request;
    msg = ctx->msgs.elts;

    /* a trace the edge dropped or added: the upstream reads what it took */
    renamed = ctx->trace_changed;

    for (i = 0; pctx->conf->views != NULL && i < ctx->msgs.nelts; i++) {

        if (msg[i].type != NGX_HTTP_MCP_MSG_REQUEST
            || ngx_strcmp(msg[i].method.data, "tools/call") != 0)
        {
            continue;
        }

        name = cJSON_GetObjectItemCaseSensitive(msg[i].params, "name");

        if (!cJSON_IsString(name)) {
            continue;
        }

        tool.data = (u_char *) name->valuestring;
        tool.len = ngx_strlen(tool.data);

        view = ngx_http_mcp_proxy_view_find(pctx->conf->views, &tool, 1);

        if (view == NULL) {
            continue;
        }

        /*
         * the parsed message says the real name from here on: the result
         * check reads the schemas the upstream listed under it
         */
        if (ngx_http_mcp_proxy_view_set(msg[i].params, "name",
                cJSON_CreateString((char *) view->name.data))
            != NGX_OK)
        {
            return NGX_ERROR;
        }

        /* a batch carries no Mcp-Name: one call's is the POST's */
        pctx->mcp_name = view->header;
        renamed = 1;
    }

    /* a guardrail's redaction is in the parsed messages already */
    if (!renamed && !pctx->redacted) {
        return NGX_OK;
    }

    copy = cJSON_Duplicate(ctx->root, 1);
    if (copy == NULL) {
        return NGX_ERROR;
    }

    /* the ids as the client wrote them: message i is the copy's item i */
    item = ctx->batch ? copy->child : copy;

    for (i = 0; i < ctx->msgs.nelts && item != NULL; i++, item = item->next)
    {
        if (msg[i].id == NULL || !cJSON_IsRaw(msg[i].id)
            || !cJSON_IsObject(item))
        {
            continue;
        }

        id = cJSON_GetObjectItemCaseSensitive(item, "id");
        raw = cJSON_CreateRaw(msg[i].id->valuestring);

        if (id == NULL || raw == NULL
            || !cJSON_ReplaceItemInObjectCaseSensitive(item, "id", raw))
        {
            cJSON_Delete(raw);
            cJSON_Delete(copy);
            return NGX_ERROR;
        }

        if (!ctx->batch) {
            break;
        }
    }

    (void) ngx_http_mcp_proxy_view_keep(copy);

    pctx->body.data = ngx_http_mcp_json_print(r->pool, copy, &pctx->body.len);

    cJSON_Delete(copy);

    if (pctx->body.data == NULL) {
        return NGX_ERROR;
    }

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "mcp proxy: view: body of %uz bytes, was %uz",
                   pctx->body.len, ctx->body.len);

    return NGX_OK;
}


/*
 * Numbers whose text the parser kept (a progress token beyond 2^53) are
 * printed as that text: raw nodes, of the copy only
 */

static ngx_int_t
ngx_http_mcp_proxy_view_keep(cJSON *json)
{
    cJSON  *item;

    for (item = json; item != NULL; item = item->next) {

        if (cJSON_IsNumber(item) && item->valuestring != NULL) {
            item->type = cJSON_Raw | (item->type & cJSON_StringIsConst);
        }

        if (item->child != NULL) {
            (void) ngx_http_mcp_proxy_view_keep(item->child);
        }
    }

    return NGX_OK;
}
