
/*
 * The tools of the "everything" set that exercise tasks: what the
 * conformance suite's tasks scenarios call.  A tool says it may run as a
 * task with execution.taskSupport; whether it does is the module's
 * business (a call that goes on after dispatch becomes one), so these
 * handlers only do their work later, from a timer, and ask for input
 * with an input-required result, as any stateless tool does (in a
 * 2025-11-25 task the module turns that into requests to the client).
 */


#include "ngx_http_mcp_fixtures.h"


/* work done later: then() ends the call */
typedef struct {
    ngx_event_t                      timer;
    ngx_http_mcp_call_t             *call;
    ngx_http_mcp_handler_pt          then;
} ngx_http_mcp_tasks_later_t;


static ngx_int_t ngx_http_mcp_tasks_greet(ngx_http_mcp_call_t *call);
static ngx_int_t ngx_http_mcp_tasks_slow(ngx_http_mcp_call_t *call);
static ngx_int_t ngx_http_mcp_tasks_slow_done(ngx_http_mcp_call_t *call);
static ngx_int_t ngx_http_mcp_tasks_failing(ngx_http_mcp_call_t *call);
static ngx_int_t ngx_http_mcp_tasks_failing_done(ngx_http_mcp_call_t *call);
static ngx_int_t ngx_http_mcp_tasks_protocol(ngx_http_mcp_call_t *call);
static ngx_int_t ngx_http_mcp_tasks_protocol_done(
    ngx_http_mcp_call_t *call);
static ngx_int_t ngx_http_mcp_tasks_confirm(ngx_http_mcp_call_t *call);
static ngx_int_t ngx_http_mcp_tasks_confirm_ask(ngx_http_mcp_call_t *call);
static ngx_int_t ngx_http_mcp_tasks_multi(ngx_http_mcp_call_t *call);
static ngx_int_t ngx_http_mcp_tasks_multi_ask(ngx_http_mcp_call_t *call);
static ngx_int_t ngx_http_mcp_tasks_named(ngx_http_mcp_call_t *call);
static ngx_int_t ngx_http_mcp_tasks_named_done(ngx_http_mcp_call_t *call);
static ngx_int_t ngx_http_mcp_tasks_later(ngx_http_mcp_call_t *call,
    ngx_msec_t delay, ngx_http_mcp_handler_pt then);
static void ngx_http_mcp_tasks_later_handler(ngx_event_t *ev);
static void ngx_http_mcp_tasks_later_cleanup(void *data);
static ngx_int_t ngx_http_mcp_tasks_ask(ngx_http_mcp_call_t *call,
    const char **keys, const char *message, const char *schema);
static cJSON *ngx_http_mcp_tasks_accepted(ngx_http_mcp_call_t *call,
    const char *key);
static const char *ngx_http_mcp_tasks_string(cJSON *obj, const char *name,
    const char *none);
static ngx_int_t ngx_http_mcp_tasks_text(ngx_http_mcp_call_t *call,
    ngx_uint_t is_error, const char *fmt, const char *a, const char *b);


#define NGX_HTTP_MCP_TASKS_TOOL(name, description, support, props)          \
    "{\"name\":\"" name "\",\"description\":\"" description "\","            \
    "\"inputSchema\":{\"type\":\"object\",\"properties\":{" props "}}"       \
    support "}"

#define NGX_HTTP_MCP_TASKS_OPTIONAL                                          \
    ",\"execution\":{\"taskSupport\":\"optional\"}"

#define NGX_HTTP_MCP_TASKS_REQUIRED                                          \
    ",\"execution\":{\"taskSupport\":\"required\"}"


static struct {
    const char                      *desc;
    ngx_http_mcp_handler_pt          handler;
} ngx_http_mcp_tasks_tools[] = {

    { NGX_HTTP_MCP_TASKS_TOOL("greet", "Says hello, at once, never as a task",
          "", "\"name\":{\"type\":\"string\"}"),
      ngx_http_mcp_tasks_greet },

    { NGX_HTTP_MCP_TASKS_TOOL("slow_compute",
          "Works for the given seconds, as a task when the client can",
          NGX_HTTP_MCP_TASKS_OPTIONAL,
          "\"seconds\":{\"type\":\"number\",\"minimum\":0,"
          "\"maximum\":3600},\"label\":{\"type\":\"string\"}"),
      ngx_http_mcp_tasks_slow },

    { NGX_HTTP_MCP_TASKS_TOOL("failing_job",
          "A task whose tool reports an error after a second",
          NGX_HTTP_MCP_TASKS_REQUIRED, ""),
      ngx_http_mcp_tasks_failing },

    { NGX_HTTP_MCP_TASKS_TOOL("protocol_error_job",
          "A task that fails with a JSON-RPC error",
          NGX_HTTP_MCP_TASKS_OPTIONAL, ""),
      ngx_http_mcp_tasks_protocol },

    { NGX_HTTP_MCP_TASKS_TOOL("confirm_delete",
          "Asks for a confirmation before it pretends to delete a file",
          NGX_HTTP_MCP_TASKS_OPTIONAL,
          "\"filename\":{\"type\":\"string\"},"
          "\"seconds\":{\"type\":\"number\",\"minimum\":0,"
          "\"maximum\":60,\"description\":\"How long it works before "
          "it asks (0.1)\"}"),
      ngx_http_mcp_tasks_confirm },

    { NGX_HTTP_MCP_TASKS_TOOL("multi_input",
          "Asks two questions at once", NGX_HTTP_MCP_TASKS_OPTIONAL, ""),
      ngx_http_mcp_tasks_multi },

    { NGX_HTTP_MCP_TASKS_TOOL("test_tool_with_task",
          "Asks for a name with an input-required result, then greets "
          "it as a task", NGX_HTTP_MCP_TASKS_REQUIRED, ""),
      ngx_http_mcp_tasks_named },

    { NULL, NULL }
};


static const char  *ngx_http_mcp_tasks_confirm_keys[] = { "confirm", NULL };
static const char  *ngx_http_mcp_tasks_multi_keys[] = {
    "first", "second", NULL
};
static const char  *ngx_http_mcp_tasks_name_keys[] = { "user_name", NULL };


ngx_int_t
ngx_http_mcp_everything_tasks_init(ngx_conf_t *cf, ngx_http_mcp_set_t *set)
{
    ngx_uint_t  i;

    for (i = 0; ngx_http_mcp_tasks_tools[i].desc; i++) {
        if (ngx_http_mcp_add_tool(cf, set, ngx_http_mcp_tasks_tools[i].desc,
                                  ngx_http_mcp_tasks_tools[i].handler, NULL)
            != NGX_OK)
        {
            return NGX_ERROR;
        }
    }

    return NGX_OK;
}


static ngx_int_t
ngx_http_mcp_tasks_greet(ngx_http_mcp_call_t *call)
{
    return ngx_http_mcp_tasks_text(call, 0, "Hello, %s!%s",
               ngx_http_mcp_tasks_string(ngx_http_mcp_call_arguments(call),
                                         "name", "World"), "");
}


/* seconds 0: at once, never a task */

static ngx_int_t
ngx_http_mcp_tasks_slow(ngx_http_mcp_call_t *call)
{
    cJSON  *seconds;

    seconds = cJSON_GetObjectItemCaseSensitive(
                  ngx_http_mcp_call_arguments(call), "seconds");

    if (!cJSON_IsNumber(seconds) || seconds->valuedouble <= 0) {
        return ngx_http_mcp_tasks_slow_done(call);
    }

    return ngx_http_mcp_tasks_later(call,
                                    (ngx_msec_t) (seconds->valuedouble * 1000),
                                    ngx_http_mcp_tasks_slow_done);
}


static ngx_int_t
ngx_http_mcp_tasks_slow_done(ngx_http_mcp_call_t *call)
{
    return ngx_http_mcp_tasks_text(call, 0, "Computed %s%s",
               ngx_http_mcp_tasks_string(ngx_http_mcp_call_arguments(call),
                                         "label", "the answer"), "");
}


static ngx_int_t
ngx_http_mcp_tasks_failing(ngx_http_mcp_call_t *call)
{
    return ngx_http_mcp_tasks_later(call, 1000,
                                    ngx_http_mcp_tasks_failing_done);
}


static ngx_int_t
ngx_http_mcp_tasks_failing_done(ngx_http_mcp_call_t *call)
{
    return ngx_http_mcp_tasks_text(call, 1, "The job failed%s%s", "", "");
}


static ngx_int_t
ngx_http_mcp_tasks_protocol(ngx_http_mcp_call_t *call)
{
    return ngx_http_mcp_tasks_later(call, 500,
                                    ngx_http_mcp_tasks_protocol_done);
}


static ngx_int_t
ngx_http_mcp_tasks_protocol_done(ngx_http_mcp_call_t *call)
{
    /* a server error, not an internal one: nothing is wrong here */
    ngx_http_mcp_call_error(call, NGX_HTTP_MCP_SERVER_ERROR,
                            "Server error: the job crashed on purpose");
    return NGX_OK;
}


/* asks once it runs (as a task, it asks through the task) */

static ngx_int_t
ngx_http_mcp_tasks_confirm(ngx_http_mcp_call_t *call)
{
    cJSON       *content, *seconds;
    ngx_msec_t   delay;
    const char  *file;

    file = ngx_http_mcp_tasks_string(ngx_http_mcp_call_arguments(call),
                                     "filename", "the file");

    if (ngx_http_mcp_call_input(call, "confirm") == NULL) {
        seconds = cJSON_GetObjectItemCaseSensitive(
                      ngx_http_mcp_call_arguments(call), "seconds");

        delay = cJSON_IsNumber(seconds)
                ? (ngx_msec_t) (seconds->valuedouble * 1000) : 100;

        return ngx_http_mcp_tasks_later(call, delay,
                                        ngx_http_mcp_tasks_confirm_ask);
    }

    content = ngx_http_mcp_tasks_accepted(call, "confirm");

    if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(content, "confirm"))) {
        return ngx_http_mcp_tasks_text(call, 0, "Deleted %s%s", file, "");
    }

    return ngx_http_mcp_tasks_text(call, 0, "Kept %s%s", file, "");
}


static ngx_int_t
ngx_http_mcp_tasks_confirm_ask(ngx_http_mcp_call_t *call)
{
    return ngx_http_mcp_tasks_ask(call, ngx_http_mcp_tasks_confirm_keys,
               "Delete the file?",
               "{\"type\":\"object\",\"properties\":"
               "{\"confirm\":{\"type\":\"boolean\"}},"
               "\"required\":[\"confirm\"]}");
}


/* two questions; it ends once both are answered */

static ngx_int_t
ngx_http_mcp_tasks_multi(ngx_http_mcp_call_t *call)
{
    if (ngx_http_mcp_call_input(call, "first") == NULL
        || ngx_http_mcp_call_input(call, "second") == NULL)
    {
        return ngx_http_mcp_tasks_later(call, 100,
                                        ngx_http_mcp_tasks_multi_ask);
    }

    return ngx_http_mcp_tasks_text(call, 0, "Got %s and %s",
               ngx_http_mcp_tasks_string(
                   ngx_http_mcp_tasks_accepted(call, "first"), "name", "-"),
               ngx_http_mcp_tasks_string(
                   ngx_http_mcp_tasks_accepted(call, "second"), "name",
                   "-"));
}


static ngx_int_t
ngx_http_mcp_tasks_multi_ask(ngx_http_mcp_call_t *call)
{
    return ngx_http_mcp_tasks_ask(call, ngx_http_mcp_tasks_multi_keys,
               "One of two questions",
               "{\"type\":\"object\",\"properties\":"
               "{\"name\":{\"type\":\"string\"},"
               "\"confirm\":{\"type\":\"boolean\"}},"
               "\"required\":[\"name\"]}");
}


/* the name first, at once (before any task); then the work, later */

static ngx_int_t
ngx_http_mcp_tasks_named(ngx_http_mcp_call_t *call)
{
    if (ngx_http_mcp_call_input(call, "user_name") == NULL) {
        return ngx_http_mcp_tasks_ask(call, ngx_http_mcp_tasks_name_keys,
                   "What is your name?",
                   "{\"type\":\"object\",\"properties\":"
                   "{\"name\":{\"type\":\"string\"}},"
                   "\"required\":[\"name\"]}");
    }

    return ngx_http_mcp_tasks_later(call, 500,
                                    ngx_http_mcp_tasks_named_done);
}


static ngx_int_t
ngx_http_mcp_tasks_named_done(ngx_http_mcp_call_t *call)
{
    return ngx_http_mcp_tasks_text(call, 0, "Hello, %s! The task is done.%s",
               ngx_http_mcp_tasks_string(
                   ngx_http_mcp_tasks_accepted(call, "user_name"), "name",
                   "stranger"), "");
}


static ngx_int_t
ngx_http_mcp_tasks_later(ngx_http_mcp_call_t *call, ngx_msec_t delay,
    ngx_http_mcp_handler_pt then)
{
    ngx_pool_t                  *pool;
    ngx_pool_cleanup_t          *cln;
    ngx_http_mcp_tasks_later_t  *later;

    pool = ngx_http_mcp_call_pool(call);

    later = ngx_pcalloc(pool, sizeof(ngx_http_mcp_tasks_later_t));
    cln = ngx_pool_cleanup_add(pool, 0);

    if (later == NULL || cln == NULL) {
        return NGX_ERROR;
    }

    later->call = call;
    later->then = then;

    later->timer.handler = ngx_http_mcp_tasks_later_handler;
    later->timer.data = later;
    later->timer.log = ngx_http_mcp_call_get_log(call);
    later->timer.cancelable = 1;

    cln->handler = ngx_http_mcp_tasks_later_cleanup;
    cln->data = later;

    ngx_add_timer(&later->timer, delay);

    return NGX_OK;
}


static void
ngx_http_mcp_tasks_later_handler(ngx_event_t *ev)
{
    ngx_http_mcp_call_t         *call;
    ngx_http_mcp_tasks_later_t  *later;

    later = ev->data;
    call = later->call;

    if (later->then(call) != NGX_OK) {
        ngx_http_mcp_call_error(call, NGX_HTTP_MCP_INTERNAL_ERROR,
                                "Internal error");
    }
}


static void
ngx_http_mcp_tasks_later_cleanup(void *data)
{
    ngx_http_mcp_tasks_later_t  *later = data;

    if (later->timer.timer_set) {
        ngx_del_timer(&later->timer);
    }
}


/* one form elicitation per key, all with the same schema */

static ngx_int_t
ngx_http_mcp_tasks_ask(ngx_http_mcp_call_t *call, const char **keys,
    const char *message, const char *schema)
{
    cJSON       *requests, *request, *params;
    ngx_uint_t   i;

    requests = cJSON_CreateObject();
    if (requests == NULL) {
        return NGX_ERROR;
    }

    for (i = 0; keys[i]; i++) {
        request = cJSON_AddObjectToObject(requests, keys[i]);
        params = cJSON_CreateObject();

        if (request == NULL || params == NULL
            || cJSON_AddStringToObject(request, "method",
                                       "elicitation/create") == NULL
            || !cJSON_AddItemToObject(request, "params", params)
            || cJSON_AddStringToObject(params, "mode", "form") == NULL
            || cJSON_AddStringToObject(params, "message", message) == NULL
            || !cJSON_AddItemToObject(params, "requestedSchema",
                                      cJSON_Parse(schema)))
        {
            if (cJSON_GetObjectItemCaseSensitive(request, "params") == NULL) {
                cJSON_Delete(params);
            }

            cJSON_Delete(requests);
            return NGX_ERROR;
        }
    }

    ngx_http_mcp_call_input_required(call, requests, NULL);

    return NGX_OK;
}


/* an accepted elicitation's content, or NULL */

static cJSON *
ngx_http_mcp_tasks_accepted(ngx_http_mcp_call_t *call, const char *key)
{
    cJSON  *answer, *action;

    answer = ngx_http_mcp_call_input(call, key);
    action = cJSON_GetObjectItemCaseSensitive(answer, "action");

    if (!cJSON_IsString(action)
        || ngx_strcmp(action->valuestring, "accept") != 0)
    {
        return NULL;
    }

    return cJSON_GetObjectItemCaseSensitive(answer, "content");
}


static const char *
ngx_http_mcp_tasks_string(cJSON *obj, const char *name, const char *none)
{
    cJSON  *s;

    s = cJSON_GetObjectItemCaseSensitive(obj, name);

    return cJSON_IsString(s) ? s->valuestring : none;
}


static ngx_int_t
ngx_http_mcp_tasks_text(ngx_http_mcp_call_t *call, ngx_uint_t is_error,
    const char *fmt, const char *a, const char *b)
{
    u_char  *text, *last;
    cJSON   *content;

    /* the arguments are cut to a sane length */
    text = ngx_pnalloc(ngx_http_mcp_call_pool(call), 512);
    if (text == NULL) {
        return NGX_ERROR;
    }

    last = ngx_snprintf(text, 511, fmt, a, b);
    *last = '\0';

    content = cJSON_CreateArray();

    if (content == NULL
        || !cJSON_AddItemToArray(content,
                                 ngx_http_mcp_text_content((char *) text)))
    {
        cJSON_Delete(content);
        return NGX_ERROR;
    }

    ngx_http_mcp_call_result(call, ngx_http_mcp_tool_result(content,
                                                            is_error));
    return NGX_OK;
}
