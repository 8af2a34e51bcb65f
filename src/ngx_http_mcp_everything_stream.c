
/*
 * The streaming tools of the built-in "everything" set: the ones that
 * send the client log messages, progress and requests (sampling,
 * elicitation) before their result, and the one that ends its stream
 * early for the client to resume (SEP-1699).  Delays are timers in the
 * call's pool, removed by a pool cleanup when the call ends or is
 * cancelled; nothing sleeps.
 */


#include "ngx_http_mcp_fixtures.h"


#define NGX_HTTP_MCP_EVERYTHING_STEP    50
#define NGX_HTTP_MCP_EVERYTHING_LOGGER  "conformance-test-server"


typedef struct {
    ngx_http_mcp_call_t             *call;
    ngx_event_t                      timer;
    ngx_uint_t                       step;
} ngx_http_mcp_everything_steps_t;


static ngx_int_t ngx_http_mcp_everything_logging(ngx_http_mcp_call_t *call);
static void ngx_http_mcp_everything_logging_step(ngx_event_t *ev);
static ngx_int_t ngx_http_mcp_everything_progress(ngx_http_mcp_call_t *call);
static void ngx_http_mcp_everything_progress_step(ngx_event_t *ev);
static ngx_int_t ngx_http_mcp_everything_reconnection(
    ngx_http_mcp_call_t *call);
static void ngx_http_mcp_everything_reconnection_done(ngx_event_t *ev);
static ngx_http_mcp_everything_steps_t *ngx_http_mcp_everything_steps(
    ngx_http_mcp_call_t *call, ngx_event_handler_pt handler);
static void ngx_http_mcp_everything_steps_cleanup(void *data);
static ngx_int_t ngx_http_mcp_everything_sampling(ngx_http_mcp_call_t *call);
static void ngx_http_mcp_everything_sampled(ngx_http_mcp_call_t *call,
    cJSON *result, cJSON *error, void *data);
static ngx_int_t ngx_http_mcp_everything_elicit(ngx_http_mcp_call_t *call);
static void ngx_http_mcp_everything_elicited(ngx_http_mcp_call_t *call,
    cJSON *result, cJSON *error, void *data);
static ngx_int_t ngx_http_mcp_everything_update(ngx_http_mcp_call_t *call);
static void ngx_http_mcp_everything_text(ngx_http_mcp_call_t *call,
    const char *text, ngx_uint_t is_error);


/* the elicitation tools differ only in their message and schema */

typedef struct {
    const char                      *message;   /* NULL: the argument */
    const char                      *schema;
    const char                      *prefix;
} ngx_http_mcp_everything_elicit_t;


static ngx_http_mcp_everything_elicit_t  ngx_http_mcp_everything_user = {
    NULL,
    "{\"type\":\"object\",\"properties\":{"
      "\"username\":{\"type\":\"string\",\"description\":\"User's response\"},"
      "\"email\":{\"type\":\"string\","
                 "\"description\":\"User's email address\"}},"
     "\"required\":[\"username\",\"email\"]}",
    "User response: "
};


static ngx_http_mcp_everything_elicit_t  ngx_http_mcp_everything_defaults = {
    "Please review and update the form fields with defaults",
    "{\"type\":\"object\",\"properties\":{"
      "\"name\":{\"type\":\"string\",\"description\":\"User name\","
                "\"default\":\"John Doe\"},"
      "\"age\":{\"type\":\"integer\",\"description\":\"User age\","
               "\"default\":30},"
      "\"score\":{\"type\":\"number\",\"description\":\"User score\","
                 "\"default\":95.5},"
      "\"status\":{\"type\":\"string\",\"description\":\"User status\","
                  "\"enum\":[\"active\",\"inactive\",\"pending\"],"
                  "\"default\":\"active\"},"
      "\"verified\":{\"type\":\"boolean\","
                    "\"description\":\"Verification status\","
                    "\"default\":true}},"
     "\"required\":[]}",
    "Elicitation completed: "
};


static ngx_http_mcp_everything_elicit_t  ngx_http_mcp_everything_enums = {
    "Please select options from the enum fields",
    "{\"type\":\"object\",\"properties\":{"
      "\"untitledSingle\":{\"type\":\"string\","
        "\"description\":\"Select one option\","
        "\"enum\":[\"option1\",\"option2\",\"option3\"]},"
      "\"titledSingle\":{\"type\":\"string\","
        "\"description\":\"Select one option with titles\","
        "\"oneOf\":[{\"const\":\"value1\",\"title\":\"First Option\"},"
                  "{\"const\":\"value2\",\"title\":\"Second Option\"},"
                  "{\"const\":\"value3\",\"title\":\"Third Option\"}]},"
      "\"legacyEnum\":{\"type\":\"string\","
        "\"description\":\"Select one option (legacy)\","
        "\"enum\":[\"opt1\",\"opt2\",\"opt3\"],"
        "\"enumNames\":[\"Option One\",\"Option Two\",\"Option Three\"]},"
      "\"untitledMulti\":{\"type\":\"array\","
        "\"description\":\"Select multiple options\","
        "\"items\":{\"type\":\"string\","
                   "\"enum\":[\"option1\",\"option2\",\"option3\"]}},"
      "\"titledMulti\":{\"type\":\"array\","
        "\"description\":\"Select multiple options with titles\","
        "\"items\":{\"anyOf\":["
          "{\"const\":\"value1\",\"title\":\"First Choice\"},"
          "{\"const\":\"value2\",\"title\":\"Second Choice\"},"
          "{\"const\":\"value3\",\"title\":\"Third Choice\"}]}}},"
     "\"required\":[]}",
    "Elicitation completed: "
};


#define NGX_HTTP_MCP_EVERYTHING_TOOL(name, description, schema)              \
    "{\"name\":\"" name "\",\"description\":\"" description "\","            \
    "\"inputSchema\":" schema "}"

#define NGX_HTTP_MCP_EVERYTHING_NONE                                         \
    "{\"type\":\"object\",\"properties\":{}}"


ngx_int_t
ngx_http_mcp_everything_streaming_init(ngx_conf_t *cf,
    ngx_http_mcp_set_t *set)
{
    if (ngx_http_mcp_add_tool(cf, set, NGX_HTTP_MCP_EVERYTHING_TOOL(
            "test_tool_with_logging",
            "Tests tool that emits log messages during execution",
            NGX_HTTP_MCP_EVERYTHING_NONE),
            ngx_http_mcp_everything_logging, NULL) != NGX_OK

        || ngx_http_mcp_add_tool(cf, set, NGX_HTTP_MCP_EVERYTHING_TOOL(
            "test_tool_with_progress",
            "Tests tool that reports progress notifications",
            NGX_HTTP_MCP_EVERYTHING_NONE),
            ngx_http_mcp_everything_progress, NULL) != NGX_OK

        || ngx_http_mcp_add_tool(cf, set, NGX_HTTP_MCP_EVERYTHING_TOOL(
            "test_sampling",
            "Tests server-initiated sampling (LLM completion request)",
            "{\"type\":\"object\",\"properties\":{\"prompt\":{"
            "\"type\":\"string\","
            "\"description\":\"The prompt to send to the LLM\"}},"
            "\"required\":[\"prompt\"]}"),
            ngx_http_mcp_everything_sampling, NULL) != NGX_OK

        || ngx_http_mcp_add_tool(cf, set, NGX_HTTP_MCP_EVERYTHING_TOOL(
            "test_elicitation",
            "Tests server-initiated elicitation (user input request)",
            "{\"type\":\"object\",\"properties\":{\"message\":{"
            "\"type\":\"string\","
            "\"description\":\"The message to show the user\"}},"
            "\"required\":[\"message\"]}"),
            ngx_http_mcp_everything_elicit, &ngx_http_mcp_everything_user)
           != NGX_OK

        || ngx_http_mcp_add_tool(cf, set, NGX_HTTP_MCP_EVERYTHING_TOOL(
            "test_elicitation_sep1034_defaults",
            "Tests elicitation with default values per SEP-1034",
            NGX_HTTP_MCP_EVERYTHING_NONE),
            ngx_http_mcp_everything_elicit,
            &ngx_http_mcp_everything_defaults) != NGX_OK

        || ngx_http_mcp_add_tool(cf, set, NGX_HTTP_MCP_EVERYTHING_TOOL(
            "test_elicitation_sep1330_enums",
            "Tests elicitation with enum schema improvements per SEP-1330",
            NGX_HTTP_MCP_EVERYTHING_NONE),
            ngx_http_mcp_everything_elicit, &ngx_http_mcp_everything_enums)
           != NGX_OK

        || ngx_http_mcp_add_tool(cf, set, NGX_HTTP_MCP_EVERYTHING_TOOL(
            "test_reconnection",
            "Tests SSE polling: closes the stream after the priming event "
            "and delivers the result when the client reconnects",
            NGX_HTTP_MCP_EVERYTHING_NONE),
            ngx_http_mcp_everything_reconnection, NULL) != NGX_OK

        || ngx_http_mcp_add_tool(cf, set, NGX_HTTP_MCP_EVERYTHING_TOOL(
            "update_watched_resource",
            "Changes test://watched-resource: subscribers get "
            "notifications/resources/updated",
            NGX_HTTP_MCP_EVERYTHING_NONE),
            ngx_http_mcp_everything_update, NULL) != NGX_OK

        /* test_tool_with_logging, as the 2026-07-28 suite names it */
        || ngx_http_mcp_add_tool(cf, set, NGX_HTTP_MCP_EVERYTHING_TOOL(
            "test_logging_tool",
            "Emits log messages at the request's log level, none without "
            "one",
            NGX_HTTP_MCP_EVERYTHING_NONE),
            ngx_http_mcp_everything_logging, NULL) != NGX_OK)
    {
        return NGX_ERROR;
    }

    return NGX_OK;
}


/* three log messages about 50 ms apart, then the result */

static ngx_int_t
ngx_http_mcp_everything_logging(ngx_http_mcp_call_t *call)
{
    ngx_http_mcp_everything_steps_t  *steps;

    steps = ngx_http_mcp_everything_steps(call,
                                          ngx_http_mcp_everything_logging_step);
    if (steps == NULL) {
        return NGX_ERROR;
    }

    ngx_http_mcp_everything_logging_step(&steps->timer);

    return NGX_OK;
}


static void
ngx_http_mcp_everything_logging_step(ngx_event_t *ev)
{
    ngx_http_mcp_call_t              *call;
    ngx_http_mcp_everything_steps_t  *steps;

    static const char  *texts[] = {
        "Tool execution started",
        "Tool processing data",
        "Tool execution completed"
    };

    steps = ev->data;
    call = steps->call;

    if (steps->step == 3) {
        ngx_http_mcp_everything_text(call, "Tool with logging executed "
                                     "successfully", 0);
        return;
    }

    if (ngx_http_mcp_call_log(call, NGX_HTTP_MCP_LOG_INFO,
                              NGX_HTTP_MCP_EVERYTHING_LOGGER,
                              texts[steps->step])
        != NGX_OK)
    {
        ngx_http_mcp_call_error(call, NGX_HTTP_MCP_INTERNAL_ERROR,
                                "Internal error");
        return;
    }

    steps->step++;
    ngx_add_timer(&steps->timer,
                  steps->step == 3 ? 1 : NGX_HTTP_MCP_EVERYTHING_STEP);
}


/* progress 0, 50 and 100 of 100, about 50 ms apart, then the result */

static ngx_int_t
ngx_http_mcp_everything_progress(ngx_http_mcp_call_t *call)
{
    ngx_http_mcp_everything_steps_t  *steps;

    steps = ngx_http_mcp_everything_steps(call,
                                          ngx_http_mcp_everything_progress_step);
    if (steps == NULL) {
        return NGX_ERROR;
    }

    ngx_http_mcp_everything_progress_step(&steps->timer);

    return NGX_OK;
}


static void
ngx_http_mcp_everything_progress_step(ngx_event_t *ev)
{
    u_char                            text[64], *p;
    ngx_http_mcp_call_t              *call;
    ngx_http_mcp_everything_steps_t  *steps;

    steps = ev->data;
    call = steps->call;

    if (steps->step == 3) {
        ngx_http_mcp_everything_text(call, "Tool with progress executed "
                                     "successfully", 0);
        return;
    }

    p = ngx_sprintf(text, "Completed step %ui of 100%Z", steps->step * 50);

    if (ngx_http_mcp_call_progress(call, (double) (steps->step * 50), 100,
                                   (char *) text)
        != NGX_OK)
    {
        ngx_http_mcp_call_error(call, NGX_HTTP_MCP_INTERNAL_ERROR,
                                "Internal error");
        return;
    }

    (void) p;

    steps->step++;
    ngx_add_timer(&steps->timer,
                  steps->step == 3 ? 1 : NGX_HTTP_MCP_EVERYTHING_STEP);
}


/*
 * SEP-1699: the response stream ends right after its priming event; the
 * result follows later and reaches the client when it reconnects with
 * GET and Last-Event-ID.
 */

static ngx_int_t
ngx_http_mcp_everything_reconnection(ngx_http_mcp_call_t *call)
{
    ngx_http_mcp_everything_steps_t  *steps;

    steps = ngx_http_mcp_everything_steps(call,
                          ngx_http_mcp_everything_reconnection_done);
    if (steps == NULL) {
        return NGX_ERROR;
    }

    /* a stateless client's stream stays (NGX_DECLINED): the result too */
    if (ngx_http_mcp_call_close_stream(call) == NGX_ERROR) {
        return NGX_ERROR;
    }

    ngx_add_timer(&steps->timer, 2 * NGX_HTTP_MCP_EVERYTHING_STEP);

    return NGX_OK;
}


static void
ngx_http_mcp_everything_reconnection_done(ngx_event_t *ev)
{
    ngx_http_mcp_everything_steps_t  *steps;

    steps = ev->data;

    ngx_http_mcp_everything_text(steps->call, "Reconnection test completed: "
                                 "the result arrived on the resumed stream",
                                 0);
}


static ngx_http_mcp_everything_steps_t *
ngx_http_mcp_everything_steps(ngx_http_mcp_call_t *call,
    ngx_event_handler_pt handler)
{
    ngx_pool_t                       *pool;
    ngx_pool_cleanup_t               *cln;
    ngx_http_mcp_everything_steps_t  *steps;

    pool = ngx_http_mcp_call_pool(call);

    steps = ngx_pcalloc(pool, sizeof(ngx_http_mcp_everything_steps_t));
    if (steps == NULL) {
        return NULL;
    }

    cln = ngx_pool_cleanup_add(pool, 0);
    if (cln == NULL) {
        return NULL;
    }

    steps->call = call;
    steps->timer.handler = handler;
    steps->timer.data = steps;
    steps->timer.log = ngx_http_mcp_call_get_log(call);

    cln->handler = ngx_http_mcp_everything_steps_cleanup;
    cln->data = steps;

    return steps;
}


/* the call ended or was cancelled: no step may follow */

static void
ngx_http_mcp_everything_steps_cleanup(void *data)
{
    ngx_http_mcp_everything_steps_t  *steps = data;

    if (steps->timer.timer_set) {
        ngx_del_timer(&steps->timer);
    }
}


static ngx_int_t
ngx_http_mcp_everything_sampling(ngx_http_mcp_call_t *call)
{
    cJSON  *arguments, *prompt, *params, *messages, *message, *content;

    arguments = ngx_http_mcp_call_arguments(call);
    prompt = cJSON_GetObjectItemCaseSensitive(arguments, "prompt");

    if (!cJSON_IsString(prompt)) {
        ngx_http_mcp_everything_text(call, "The \"prompt\" argument must be "
                                     "a string", 1);
        return NGX_OK;
    }

    if (!ngx_http_mcp_call_client(call)->sampling) {
        ngx_http_mcp_everything_text(call, "The client does not support "
                                     "sampling", 1);
        return NGX_OK;
    }

    params = cJSON_CreateObject();
    messages = cJSON_AddArrayToObject(params, "messages");
    message = cJSON_CreateObject();
    content = cJSON_AddObjectToObject(message, "content");

    if (messages == NULL || message == NULL
        || !cJSON_AddItemToArray(messages, message)
        || cJSON_AddStringToObject(message, "role", "user") == NULL
        || content == NULL
        || cJSON_AddStringToObject(content, "type", "text") == NULL
        || cJSON_AddStringToObject(content, "text", prompt->valuestring)
           == NULL
        || cJSON_AddNumberToObject(params, "maxTokens", 100) == NULL)
    {
        if (message != NULL && (messages == NULL || messages->child == NULL))
        {
            cJSON_Delete(message);
        }

        cJSON_Delete(params);
        return NGX_ERROR;
    }

    return ngx_http_mcp_call_request(call, "sampling/createMessage", params,
                                     ngx_http_mcp_everything_sampled, NULL);
}


static void
ngx_http_mcp_everything_sampled(ngx_http_mcp_call_t *call, cJSON *result,
    cJSON *error, void *data)
{
    u_char  *text, *p;
    cJSON   *content, *answer;
    size_t   len;

    content = cJSON_GetObjectItemCaseSensitive(result, "content");
    answer = cJSON_GetObjectItemCaseSensitive(content, "text");

    if (!cJSON_IsString(answer)) {
        ngx_http_mcp_everything_text(call, error ? "Sampling failed"
                                     : "Sampling returned no text", 1);
        return;
    }

    len = sizeof("LLM response: ") + ngx_strlen(answer->valuestring);

    text = ngx_pnalloc(ngx_http_mcp_call_pool(call), len);
    if (text == NULL) {
        ngx_http_mcp_call_error(call, NGX_HTTP_MCP_INTERNAL_ERROR,
                                "Internal error");
        return;
    }

    p = ngx_sprintf(text, "LLM response: %s%Z", answer->valuestring);
    (void) p;

    ngx_http_mcp_everything_text(call, (char *) text, 0);
}


static ngx_int_t
ngx_http_mcp_everything_elicit(ngx_http_mcp_call_t *call)
{
    cJSON                             *params, *schema, *message;
    ngx_http_mcp_everything_elicit_t  *e;

    e = ngx_http_mcp_call_entry_data(call);

    /* its form mode: a client may have declared only url */
    if (!ngx_http_mcp_call_client(call)->elicitation_form) {
        ngx_http_mcp_everything_text(call, "The client does not support "
                                     "elicitation", 1);
        return NGX_OK;
    }

    message = NULL;

    if (e->message == NULL) {
        message = cJSON_GetObjectItemCaseSensitive(
                                    ngx_http_mcp_call_arguments(call),
                                    "message");

        if (!cJSON_IsString(message)) {
            ngx_http_mcp_everything_text(call, "The \"message\" argument "
                                         "must be a string", 1);
            return NGX_OK;
        }
    }

    params = cJSON_CreateObject();
    schema = cJSON_Parse(e->schema);

    if (params == NULL || schema == NULL
        || cJSON_AddStringToObject(params, "mode", "form") == NULL
        || cJSON_AddStringToObject(params, "message",
                                   message ? message->valuestring
                                           : e->message) == NULL
        || !cJSON_AddItemToObject(params, "requestedSchema", schema))
    {
        if (schema != NULL && !cJSON_HasObjectItem(params, "requestedSchema"))
        {
            cJSON_Delete(schema);
        }

        cJSON_Delete(params);
        return NGX_ERROR;
    }

    return ngx_http_mcp_call_request(call, "elicitation/create", params,
                                     ngx_http_mcp_everything_elicited, e);
}


static void
ngx_http_mcp_everything_elicited(ngx_http_mcp_call_t *call, cJSON *result,
    cJSON *error, void *data)
{
    ngx_http_mcp_everything_elicit_t *e = data;

    u_char  *text, *p;
    char    *content;
    cJSON   *action;
    size_t   len;

    action = cJSON_GetObjectItemCaseSensitive(result, "action");

    if (!cJSON_IsString(action)) {
        ngx_http_mcp_everything_text(call, error ? "Elicitation failed"
                                     : "Elicitation returned no action", 1);
        return;
    }

    content = cJSON_PrintUnformatted(
                  cJSON_GetObjectItemCaseSensitive(result, "content"));

    len = ngx_strlen(e->prefix) + sizeof("action=, content=")
          + ngx_strlen(action->valuestring)
          + (content ? ngx_strlen(content) : sizeof("null"));

    text = ngx_pnalloc(ngx_http_mcp_call_pool(call), len);

    if (text == NULL) {
        cJSON_free(content);
        ngx_http_mcp_call_error(call, NGX_HTTP_MCP_INTERNAL_ERROR,
                                "Internal error");
        return;
    }

    p = ngx_sprintf(text, "%saction=%s, content=%s%Z", e->prefix,
                    action->valuestring, content ? content : "null");
    (void) p;

    cJSON_free(content);

    ngx_http_mcp_everything_text(call, (char *) text, 0);
}


static ngx_int_t
ngx_http_mcp_everything_update(ngx_http_mcp_call_t *call)
{
    ngx_str_t  uri = ngx_string("test://watched-resource");

    if (ngx_http_mcp_resource_updated(&uri) != NGX_OK) {
        return NGX_ERROR;
    }

    ngx_http_mcp_everything_text(call, "test://watched-resource updated", 0);

    return NGX_OK;
}


static void
ngx_http_mcp_everything_text(ngx_http_mcp_call_t *call, const char *text,
    ngx_uint_t is_error)
{
    cJSON  *content;

    content = cJSON_CreateArray();

    if (content != NULL
        && !cJSON_AddItemToArray(content, ngx_http_mcp_text_content(text)))
    {
        cJSON_Delete(content);
        content = NULL;
    }

    ngx_http_mcp_call_result(call, ngx_http_mcp_tool_result(content,
                                                            is_error));
}
