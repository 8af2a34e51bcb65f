
/*
 * subscriptions/listen (2026-07-28) through the gateway over several MCP
 * servers (mcp_backend): a stateless client's one stream of news, fed by
 * every backend.  The gateway opens a session of the listen's own at
 * each backend (a backend's sessions belong to one client each: the
 * worker's shared stateless ones would mix the clients' subscriptions),
 * sends resources/subscribe there for each URI the client named, one
 * URI after another, to the backends that offer subscriptions (so a
 * backend is asked for what the client asked, nothing more), and
 * acknowledges the list changes some backend announces and the URIs
 * some backend took.  Then each backend's GET stream in the listen's
 * session feeds the listen's stream (ngx_http_mcp_aggregate_feed(), in
 * ngx_http_mcp_aggregate_listen.c): the list changes asked for and
 * resources/updated, tagged with the listen's id.  The streams end with
 * the listen's POST; its backend sessions get their DELETE with a later
 * request of the worker (ngx_http_mcp_aggregate_park(), _end.c).
 */


#include "ngx_http_mcp_aggregate.h"
#include "ngx_http_mcp_json.h"
#include "ngx_http_mcp_store.h"
#include "ngx_http_mcp_call.h"
#include "ngx_http_mcp_core.h"


/* a subscriptions/listen on its way to its backends, in the call's pool */
typedef struct {
    ngx_http_mcp_call_t                *call;
    ngx_http_mcp_aggregate_loc_conf_t  *conf;
    cJSON                              *uris;   /* the client's */
    ngx_uint_t                          next;   /* the URI asked next */
    u_char                             *taken;  /* each URI: a backend
                                                   subscribed */
    ngx_str_t                          *sids;   /* the listen's
                                                   sessions */
    ngx_uint_t                          lists;  /* asked for */
} ngx_http_mcp_subscribe_t;


static void ngx_http_mcp_subscribe_opened(ngx_http_mcp_aggregate_op_t *op);
static void ngx_http_mcp_subscribe_next(ngx_http_mcp_subscribe_t *ls);
static void ngx_http_mcp_subscribe_subscribed(
    ngx_http_mcp_aggregate_op_t *op);
static void ngx_http_mcp_subscribe_ready(ngx_http_mcp_subscribe_t *ls);
static ngx_uint_t ngx_http_mcp_subscribe_offers(ngx_http_mcp_backend_t *b,
    const char *cap, const char *flag);


ngx_int_t
ngx_http_mcp_aggregate_subscriptions(ngx_http_mcp_call_t *call,
    ngx_http_mcp_aggregate_loc_conf_t *conf)
{
    cJSON                        *filter, *uris, *item;
    size_t                        max_uri;
    ngx_uint_t                    i, max;
    ngx_http_mcp_subscribe_t     *ls;
    ngx_http_mcp_aggregate_op_t  *op;

    static struct {
        const char  *key;
        ngx_uint_t   list;
    } kinds[] = {
        { "toolsListChanged", NGX_HTTP_MCP_LISTEN_TOOLS },
        { "promptsListChanged", NGX_HTTP_MCP_LISTEN_PROMPTS },
        { "resourcesListChanged", NGX_HTTP_MCP_LISTEN_RESOURCES },
        { NULL, 0 }
    };

    filter = cJSON_GetObjectItemCaseSensitive(ngx_http_mcp_call_params(call),
                                              "notifications");

    if (!cJSON_IsObject(filter)) {
        ngx_http_mcp_call_error(call, NGX_HTTP_MCP_INVALID_PARAMS,
                                filter ? "Invalid params: \"notifications\" "
                                         "has the wrong type"
                                       : "Invalid params: \"notifications\" "
                                         "is required");
        return NGX_OK;
    }

    uris = cJSON_GetObjectItemCaseSensitive(filter, "resourceSubscriptions");

    ngx_http_mcp_session_limits(ngx_http_mcp_call_conf(call)->zone, &max,
                                &max_uri);

    if (uris != NULL
        && (!cJSON_IsArray(uris)
            || (ngx_uint_t) cJSON_GetArraySize(uris) > max))
    {
        goto invalid;
    }

    cJSON_ArrayForEach(item, uris) {
        if (!cJSON_IsString(item) || item->valuestring[0] == '\0'
            || ngx_strlen(item->valuestring) > max_uri)
        {
            goto invalid;
        }
    }

    ls = ngx_pcalloc(ngx_http_mcp_call_pool(call),
                     sizeof(ngx_http_mcp_subscribe_t));
    if (ls == NULL) {
        return NGX_ERROR;
    }

    ls->call = call;
    ls->conf = conf;
    ls->uris = uris;
    ls->sids = ngx_pcalloc(ngx_http_mcp_call_pool(call),
                           conf->backends->nelts * sizeof(ngx_str_t));
    ls->taken = ngx_pcalloc(ngx_http_mcp_call_pool(call),
                            cJSON_GetArraySize(uris) + 1);

    if (ls->sids == NULL || ls->taken == NULL) {
        return NGX_ERROR;
    }

    for (i = 0; kinds[i].key; i++) {
        if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(filter,
                                                          kinds[i].key)))
        {
            ls->lists |= kinds[i].list;
        }
    }

    /* first a session of the listen's own at every backend */

    op = ngx_http_mcp_aggregate_op(call, conf, ngx_http_mcp_subscribe_opened);
    if (op == NULL) {
        return NGX_ERROR;
    }

    op->opening = 1;
    op->data = ls;

    for (i = 0; i < conf->backends->nelts; i++) {
        ngx_http_mcp_aggregate_ask(op, i, NULL, NULL);
    }

    ngx_http_mcp_aggregate_run(op);
    return NGX_OK;

invalid:

    ngx_http_mcp_call_error(call, NGX_HTTP_MCP_INVALID_PARAMS,
                            "Invalid params: \"resourceSubscriptions\" "
                            "must be an array of URIs, within the "
                            "session zone's limits");
    return NGX_OK;
}


/* the listen's sessions are open (a backend that failed has none) */

static void
ngx_http_mcp_subscribe_opened(ngx_http_mcp_aggregate_op_t *op)
{
    ngx_uint_t                     i;
    ngx_http_mcp_subscribe_t      *ls;
    ngx_http_mcp_aggregate_leg_t  *leg;

    ls = op->data;

    for (i = 0; i < ls->conf->backends->nelts; i++) {
        leg = &op->legs[i];

        if (!leg->failed && leg->sid.len) {
            ls->sids[i] = leg->sid;
        }
    }

    ngx_http_mcp_subscribe_next(ls);
}


/*
 * The next URI the client named: resources/subscribe at each backend
 * with a session and subscriptions; when none is left, the listen is
 * ready.
 */

static void
ngx_http_mcp_subscribe_next(ngx_http_mcp_subscribe_t *ls)
{
    cJSON                        *uri, *params;
    ngx_uint_t                    i, asked;
    ngx_http_mcp_backend_t       *b;
    ngx_http_mcp_aggregate_op_t  *op;

    b = ls->conf->backends->elts;

    for (i = 0; i < ls->conf->backends->nelts; i++) {
        if (ls->sids[i].len
            && ngx_http_mcp_subscribe_offers(&b[i], "resources", "subscribe"))
        {
            break;
        }
    }

    if (i == ls->conf->backends->nelts) {
        /* no backend takes subscriptions: none is asked */
        ls->next = cJSON_GetArraySize(ls->uris);
    }

    while ((int) ls->next < cJSON_GetArraySize(ls->uris)) {
        uri = cJSON_GetArrayItem(ls->uris, ls->next++);

        op = ngx_http_mcp_aggregate_op(ls->call, ls->conf,
                                       ngx_http_mcp_subscribe_subscribed);
        if (op == NULL) {
            goto failed;
        }

        op->sids = ls->sids;
        op->data = ls;
        asked = 0;

        for (i = 0; i < ls->conf->backends->nelts; i++) {
            if (ls->sids[i].len == 0
                || !ngx_http_mcp_subscribe_offers(&b[i], "resources",
                                                  "subscribe"))
            {
                continue;
            }

            params = cJSON_CreateObject();

            if (params == NULL
                || cJSON_AddStringToObject(params, "uri", uri->valuestring)
                   == NULL)
            {
                cJSON_Delete(params);
                goto failed;
            }

            ngx_http_mcp_aggregate_ask(op, i, "resources/subscribe", params);
            asked++;
        }

        if (asked) {
            ngx_http_mcp_aggregate_run(op);
            return;
        }
    }

    ngx_http_mcp_subscribe_ready(ls);
    return;

failed:

    ngx_http_mcp_call_error(ls->call, NGX_HTTP_MCP_INTERNAL_ERROR,
                            "Internal error");
}


static void
ngx_http_mcp_subscribe_subscribed(ngx_http_mcp_aggregate_op_t *op)
{
    ngx_uint_t                     i;
    ngx_http_mcp_subscribe_t      *ls;
    ngx_http_mcp_aggregate_leg_t  *leg;

    ls = op->data;

    for (i = 0; i < ls->conf->backends->nelts; i++) {
        leg = &op->legs[i];

        if (leg->asked && !leg->failed && leg->reply != NULL
            && cJSON_HasObjectItem(leg->reply, "result"))
        {
            ls->taken[ls->next - 1] = 1;
        }
    }

    ngx_http_mcp_subscribe_next(ls);
}


/*
 * The acknowledgement: the list changes some backend announces, the URIs
 * some backend took; then the backends' streams feed the listen's.
 */

static void
ngx_http_mcp_subscribe_ready(ngx_http_mcp_subscribe_t *ls)
{
    u_char                  *p;
    cJSON                   *params, *honored, *meta, *uris;
    ngx_str_t                id;
    ngx_uint_t               i, k, lists;
    ngx_array_t              none;
    ngx_http_mcp_call_t     *call;
    ngx_http_mcp_backend_t  *b;

    static struct {
        const char  *key;
        const char  *cap;
        ngx_uint_t   list;
    } kinds[] = {
        { "toolsListChanged", "tools", NGX_HTTP_MCP_LISTEN_TOOLS },
        { "promptsListChanged", "prompts", NGX_HTTP_MCP_LISTEN_PROMPTS },
        { "resourcesListChanged", "resources",
          NGX_HTTP_MCP_LISTEN_RESOURCES },
        { NULL, NULL, 0 }
    };

    call = ls->call;
    b = ls->conf->backends->elts;

    params = cJSON_CreateObject();
    honored = cJSON_AddObjectToObject(params, "notifications");
    meta = cJSON_AddObjectToObject(params, "_meta");

    if (honored == NULL || meta == NULL
        || !cJSON_AddItemToObject(meta,
                                  "io.modelcontextprotocol/subscriptionId",
                                  cJSON_Duplicate(call->id, 1)))
    {
        goto failed;
    }

    lists = 0;

    for (k = 0; kinds[k].key; k++) {
        if (!(ls->lists & kinds[k].list)) {
            continue;
        }

        for (i = 0; i < ls->conf->backends->nelts; i++) {
            if (ls->sids[i].len
                && ngx_http_mcp_subscribe_offers(&b[i], kinds[k].cap,
                                              "listChanged"))
            {
                break;
            }
        }

        if (i == ls->conf->backends->nelts) {
            continue;
        }

        if (cJSON_AddTrueToObject(honored, kinds[k].key) == NULL) {
            goto failed;
        }

        lists |= kinds[k].list;
    }

    ls->lists = lists;

    if (ls->uris != NULL) {
        uris = cJSON_AddArrayToObject(honored, "resourceSubscriptions");
        if (uris == NULL) {
            goto failed;
        }

        for (i = 0; (int) i < cJSON_GetArraySize(ls->uris); i++) {
            if (ls->taken[i]
                && !cJSON_AddItemToArray(uris, cJSON_CreateString(
                        cJSON_GetArrayItem(ls->uris, i)->valuestring)))
            {
                goto failed;
            }
        }
    }

    if (ngx_http_mcp_call_notify(call,
                                 "notifications/subscriptions/acknowledged",
                                 params)
        != NGX_OK)
    {
        ngx_http_mcp_call_error(call, NGX_HTTP_MCP_INTERNAL_ERROR,
                                "Internal error");
        return;
    }

    p = ngx_http_mcp_json_print(ngx_http_mcp_call_pool(call), call->id,
                                &id.len);
    if (p == NULL
        || ngx_array_init(&none, ngx_http_mcp_call_pool(call), 1,
                          sizeof(ngx_str_t))
           != NGX_OK)
    {
        return;
    }

    id.data = p;

    /* an exiting worker ends its stream: the client listens anew */
    call->endless = 1;

    /* one listen a session; the gateway's own list changes reach it too */
    (void) ngx_http_mcp_session_listen(ngx_http_mcp_call_conf(call)->zone,
                                       &call->rctx->session_id, call->stream,
                                       lists, &id, &none, call->log);

    if (ngx_http_mcp_aggregate_feed(call, ls->conf, ls->sids, ls->lists,
                                    &id) != NGX_OK) {
        ngx_log_debug0(NGX_LOG_DEBUG_HTTP, call->log, 0,
                       "mcp gateway: a listen without its backends' news");
    }

    return;

failed:

    cJSON_Delete(params);
    ngx_http_mcp_call_error(call, NGX_HTTP_MCP_INTERNAL_ERROR,
                            "Internal error");
}


/* the backend's capabilities (the last this worker saw) have cap.flag */

static ngx_uint_t
ngx_http_mcp_subscribe_offers(ngx_http_mcp_backend_t *b, const char *cap,
    const char *flag)
{
    return cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(
               cJSON_GetObjectItemCaseSensitive(b->caps, cap), flag));
}
