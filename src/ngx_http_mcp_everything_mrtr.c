
/*
 * The tools of the "everything" set that a stateless (2026-07-28) client
 * exercises: multi-round requests, which ask the client for input with
 * an input-required result and complete on the retry that answers, and
 * the tools the conformance suite uses to check capability declarations,
 * per-request log levels and custom parameter headers.  Each round is
 * computed from the retry alone (its answers and its sealed state), so
 * any worker can serve it.
 */


#include "ngx_http_mcp_fixtures.h"


/*
 * What a tool asks: a key, a method and that method's params; for an
 * elicitation, the field of the answer it wants and that field's type.
 */
typedef struct {
    const char                      *key;
    const char                      *method;
    const char                      *params;
    const char                      *field;
    int                              type;
} ngx_http_mcp_mrtr_ask_t;


/* questions asked together */
typedef struct {
    ngx_http_mcp_mrtr_ask_t         *asks;
    ngx_uint_t                       n;
} ngx_http_mcp_mrtr_asks_t;


static const char *ngx_http_mcp_mrtr_one(ngx_http_mcp_call_t *call,
    ngx_int_t *rc);
static ngx_int_t ngx_http_mcp_mrtr_simple(ngx_http_mcp_call_t *call);
static ngx_int_t ngx_http_mcp_mrtr_stateful(ngx_http_mcp_call_t *call);
static ngx_int_t ngx_http_mcp_mrtr_multiple(ngx_http_mcp_call_t *call);
static ngx_int_t ngx_http_mcp_mrtr_rounds(ngx_http_mcp_call_t *call);
static ngx_int_t ngx_http_mcp_mrtr_prompt(ngx_http_mcp_call_t *call);
static ngx_int_t ngx_http_mcp_mrtr_trigger(ngx_http_mcp_call_t *call);
static ngx_int_t ngx_http_mcp_mrtr_echo(ngx_http_mcp_call_t *call);
static ngx_int_t ngx_http_mcp_mrtr_ask(ngx_http_mcp_call_t *call,
    ngx_http_mcp_mrtr_ask_t *asks, ngx_uint_t n, cJSON *state);
static cJSON *ngx_http_mcp_mrtr_accepted(ngx_http_mcp_call_t *call,
    const char *key, const char *field, int type, ngx_uint_t *declined);
static const char *ngx_http_mcp_mrtr_answer_text(ngx_http_mcp_call_t *call,
    ngx_http_mcp_mrtr_ask_t *ask);
static ngx_int_t ngx_http_mcp_mrtr_text(ngx_http_mcp_call_t *call,
    const char *prefix, const char *text, ngx_uint_t is_error);
static ngx_int_t ngx_http_mcp_mrtr_round(ngx_http_mcp_call_t *call);
static ngx_uint_t ngx_http_mcp_mrtr_can_answer(ngx_http_mcp_call_t *call,
    ngx_http_mcp_mrtr_ask_t *ask);


#define NGX_HTTP_MCP_MRTR_SCHEMA(field, type)                                \
    "{\"type\":\"object\",\"properties\":{\"" field "\":"                    \
    "{\"type\":\"" type "\"}},\"required\":[\"" field "\"]}"

#define NGX_HTTP_MCP_MRTR_ELICIT(message, field, type)                       \
    "{\"message\":\"" message "\",\"requestedSchema\":"                      \
    NGX_HTTP_MCP_MRTR_SCHEMA(field, type) "}"

#define NGX_HTTP_MCP_MRTR_SAMPLE(text, max)                                  \
    "{\"messages\":[{\"role\":\"user\",\"content\":{\"type\":\"text\","      \
    "\"text\":\"" text "\"}}],\"maxTokens\":" max "}"


static ngx_http_mcp_mrtr_ask_t  ngx_http_mcp_mrtr_user_name = {
    "user_name", "elicitation/create",
    NGX_HTTP_MCP_MRTR_ELICIT("What is your name?", "name", "string"),
    "name", cJSON_String
};

static ngx_http_mcp_mrtr_ask_t  ngx_http_mcp_mrtr_capital = {
    "capital_question", "sampling/createMessage",
    NGX_HTTP_MCP_MRTR_SAMPLE("What is the capital of France?", "100"),
    NULL, 0
};

static ngx_http_mcp_mrtr_ask_t  ngx_http_mcp_mrtr_roots = {
    "client_roots", "roots/list", "{}", NULL, 0
};

static ngx_http_mcp_mrtr_ask_t  ngx_http_mcp_mrtr_confirm = {
    "confirm", "elicitation/create",
    NGX_HTTP_MCP_MRTR_ELICIT("Please confirm", "ok", "boolean"),
    "ok", cJSON_True
};

static ngx_http_mcp_mrtr_ask_t  ngx_http_mcp_mrtr_streaming = {
    "confirmation", "elicitation/create",
    NGX_HTTP_MCP_MRTR_ELICIT("Do you want to continue?", "ok", "boolean"),
    "ok", cJSON_True
};

static ngx_http_mcp_mrtr_ask_t  ngx_http_mcp_mrtr_needs_sampling = {
    "completion", "sampling/createMessage",
    NGX_HTTP_MCP_MRTR_SAMPLE("Say hello", "50"), NULL, 0
};

static ngx_http_mcp_mrtr_ask_t  ngx_http_mcp_mrtr_context = {
    "user_context", "elicitation/create",
    NGX_HTTP_MCP_MRTR_ELICIT("What context should the prompt use?",
                             "context", "string"),
    "context", cJSON_String
};

static ngx_http_mcp_mrtr_ask_t  ngx_http_mcp_mrtr_all[] = {
    { "user_name", "elicitation/create",
      NGX_HTTP_MCP_MRTR_ELICIT("What is your name?", "name", "string"),
      "name", cJSON_String },
    { "greeting", "sampling/createMessage",
      NGX_HTTP_MCP_MRTR_SAMPLE("Generate a greeting", "50"), NULL, 0 },
    { "client_roots", "roots/list", "{}", NULL, 0 }
};

/* test_input_required_result_multiple_inputs: all three at once */
static ngx_http_mcp_mrtr_asks_t  ngx_http_mcp_mrtr_three = {
    ngx_http_mcp_mrtr_all, 3
};

/* test_input_required_result_capabilities: what the client declared */
static ngx_http_mcp_mrtr_asks_t  ngx_http_mcp_mrtr_either = {
    ngx_http_mcp_mrtr_all, 2
};

/* the rounds of test_input_required_result_multi_round */
static ngx_http_mcp_mrtr_ask_t  ngx_http_mcp_mrtr_steps[] = {
    { "step1", "elicitation/create",
      NGX_HTTP_MCP_MRTR_ELICIT("Step 1: What is your name?", "name",
                               "string"),
      "name", cJSON_String },
    { "step2", "elicitation/create",
      NGX_HTTP_MCP_MRTR_ELICIT("Step 2: What is your favorite color?",
                               "color", "string"),
      "color", cJSON_String }
};


#define NGX_HTTP_MCP_MRTR_TOOL(name, description)                            \
    "{\"name\":\"" name "\",\"description\":\"" description "\","            \
    "\"inputSchema\":{\"type\":\"object\",\"properties\":{}}}"


static struct {
    const char                      *desc;
    ngx_http_mcp_handler_pt          handler;
    void                            *data;
} ngx_http_mcp_mrtr_tools[] = {

    { NGX_HTTP_MCP_MRTR_TOOL("test_input_required_result_elicitation",
          "Asks for the user's name with an input-required result"),
      ngx_http_mcp_mrtr_simple, &ngx_http_mcp_mrtr_user_name },

    { NGX_HTTP_MCP_MRTR_TOOL("test_input_required_result_sampling",
          "Asks the client's model a question with an input-required "
          "result"),
      ngx_http_mcp_mrtr_simple, &ngx_http_mcp_mrtr_capital },

    { NGX_HTTP_MCP_MRTR_TOOL("test_input_required_result_list_roots",
          "Asks for the client's roots with an input-required result"),
      ngx_http_mcp_mrtr_simple, &ngx_http_mcp_mrtr_roots },

    { NGX_HTTP_MCP_MRTR_TOOL("test_input_required_result_request_state",
          "Asks for a confirmation and checks its requestState on the "
          "retry"),
      ngx_http_mcp_mrtr_stateful, &ngx_http_mcp_mrtr_confirm },

    { NGX_HTTP_MCP_MRTR_TOOL("test_input_required_result_tampered_state",
          "Asks for a confirmation; a retry with a changed requestState "
          "is refused"),
      ngx_http_mcp_mrtr_stateful, &ngx_http_mcp_mrtr_confirm },

    { NGX_HTTP_MCP_MRTR_TOOL("test_input_required_result_multiple_inputs",
          "Asks for an elicitation, a sampling and the roots at once"),
      ngx_http_mcp_mrtr_multiple, &ngx_http_mcp_mrtr_three },

    { NGX_HTTP_MCP_MRTR_TOOL("test_input_required_result_multi_round",
          "Asks for a name, then a color, carrying the name in its "
          "requestState"),
      ngx_http_mcp_mrtr_rounds, ngx_http_mcp_mrtr_steps },

    { NGX_HTTP_MCP_MRTR_TOOL("test_input_required_result_capabilities",
          "Asks only what the request's client capabilities allow"),
      ngx_http_mcp_mrtr_multiple, &ngx_http_mcp_mrtr_either },

    { NGX_HTTP_MCP_MRTR_TOOL("test_streaming_elicitation",
          "Asks for a confirmation the stateless way, never with a "
          "request on the stream"),
      ngx_http_mcp_mrtr_simple, &ngx_http_mcp_mrtr_streaming },

    { NGX_HTTP_MCP_MRTR_TOOL("test_missing_capability",
          "Needs sampling: a request that does not declare it gets -32021"),
      ngx_http_mcp_mrtr_simple, &ngx_http_mcp_mrtr_needs_sampling },

    { NGX_HTTP_MCP_MRTR_TOOL("test_trigger_tool_change",
          "Tells subscriptions/listen streams that the tool list changed"),
      ngx_http_mcp_mrtr_trigger, "tools" },

    { NGX_HTTP_MCP_MRTR_TOOL("test_trigger_prompt_change",
          "Tells subscriptions/listen streams that the prompt list "
          "changed"),
      ngx_http_mcp_mrtr_trigger, "prompts" },

    /* SEP-2243: a call must mirror three arguments into headers */
    { "{\"name\":\"test_custom_header_tool\",\"description\":\"Echoes "
      "its arguments; region, priority and verbose travel in "
      "Mcp-Param-Region, Mcp-Param-Priority and Mcp-Param-Verbose "
      "headers too\",\"inputSchema\":{\"type\":\"object\","
      "\"properties\":{"
      "\"region\":{\"type\":\"string\",\"x-mcp-header\":\"Region\"},"
      "\"priority\":{\"type\":\"integer\","
      "\"x-mcp-header\":\"Priority\"},"
      "\"verbose\":{\"type\":\"boolean\",\"x-mcp-header\":\"Verbose\"},"
      "\"query\":{\"type\":\"string\"}},"
      "\"required\":[\"region\",\"priority\",\"verbose\"]}}",
      ngx_http_mcp_mrtr_echo, NULL },

    { NULL, NULL, NULL }
};


ngx_int_t
ngx_http_mcp_everything_mrtr_init(ngx_conf_t *cf, ngx_http_mcp_set_t *set)
{
    ngx_uint_t  i;

    for (i = 0; ngx_http_mcp_mrtr_tools[i].desc; i++) {
        if (ngx_http_mcp_add_tool(cf, set, ngx_http_mcp_mrtr_tools[i].desc,
                                  ngx_http_mcp_mrtr_tools[i].handler,
                                  ngx_http_mcp_mrtr_tools[i].data)
            != NGX_OK)
        {
            return NGX_ERROR;
        }
    }

    return ngx_http_mcp_add_prompt(cf, set,
               "{\"name\":\"test_input_required_result_prompt\","
               "\"description\":\"Asks for the context it is built with, "
               "with an input-required result\"}",
               ngx_http_mcp_mrtr_prompt, &ngx_http_mcp_mrtr_context);
}


/*
 * The answer to the entry's one question, as text; NULL when the call
 * has none yet and was ended asking for it (*rc: what to return).
 */

static const char *
ngx_http_mcp_mrtr_one(ngx_http_mcp_call_t *call, ngx_int_t *rc)
{
    const char               *text;
    ngx_http_mcp_mrtr_ask_t  *ask;

    ask = ngx_http_mcp_call_entry_data(call);

    text = ngx_http_mcp_mrtr_answer_text(call, ask);

    if (text == NULL) {
        *rc = ngx_http_mcp_mrtr_ask(call, ask, 1, NULL);
    }

    return text;
}


/* one question; the answer completes the call */

static ngx_int_t
ngx_http_mcp_mrtr_simple(ngx_http_mcp_call_t *call)
{
    ngx_int_t    rc;
    const char  *text;

    text = ngx_http_mcp_mrtr_one(call, &rc);

    if (text == NULL) {
        return rc;
    }

    if (ngx_http_mcp_call_entry_data(call) == &ngx_http_mcp_mrtr_user_name) {
        return ngx_http_mcp_mrtr_text(call, "Hello, ", text, 0);
    }

    return ngx_http_mcp_mrtr_text(call, "Received: ", text, 0);
}


/* the arguments, as the tool got them */

static ngx_int_t
ngx_http_mcp_mrtr_echo(ngx_http_mcp_call_t *call)
{
    char       *args;
    cJSON      *arguments;
    ngx_int_t   rc;

    arguments = ngx_http_mcp_call_arguments(call);

    args = (arguments != NULL) ? cJSON_PrintUnformatted(arguments) : NULL;

    if (arguments != NULL && args == NULL) {
        return NGX_ERROR;
    }

    rc = ngx_http_mcp_mrtr_text(call, "Called with: ",
                                (args != NULL) ? args : "{}", 0);

    cJSON_free(args);

    return rc;
}


/* one question and a state the retry must bring back unchanged */

static ngx_int_t
ngx_http_mcp_mrtr_stateful(ngx_http_mcp_call_t *call)
{
    cJSON                    *ok, *state;
    ngx_uint_t                declined;
    ngx_http_mcp_mrtr_ask_t  *ask;

    ask = ngx_http_mcp_call_entry_data(call);

    ok = ngx_http_mcp_mrtr_accepted(call, ask->key, "ok", cJSON_True,
                                    &declined);

    if (ngx_http_mcp_mrtr_round(call) != 1 || (ok == NULL && !declined)) {
        state = cJSON_CreateObject();

        if (state == NULL
            || cJSON_AddNumberToObject(state, "round", 1) == NULL)
        {
            cJSON_Delete(state);
            return NGX_ERROR;
        }

        return ngx_http_mcp_mrtr_ask(call, ask, 1, state);
    }

    return ngx_http_mcp_mrtr_text(call, "state-ok: ",
                                  cJSON_IsTrue(ok) ? "confirmed"
                                                   : "not confirmed", 0);
}


/*
 * Several questions at once, each answered or not askable (its
 * capability undeclared) before the result; a retry that brings only
 * some answers is asked the rest.
 */

static ngx_int_t
ngx_http_mcp_mrtr_multiple(ngx_http_mcp_call_t *call)
{
    cJSON                     *state;
    ngx_uint_t                 i, n;
    ngx_http_mcp_mrtr_ask_t    missing[3];
    ngx_http_mcp_mrtr_asks_t  *set;

    set = ngx_http_mcp_call_entry_data(call);
    n = 0;

    for (i = 0; i < set->n; i++) {
        if (ngx_http_mcp_mrtr_can_answer(call, &set->asks[i])
            && (ngx_http_mcp_call_input(call, set->asks[i].key) == NULL
                || ngx_http_mcp_mrtr_round(call) != 1))
        {
            missing[n++] = set->asks[i];
        }
    }

    if (n == 0 && ngx_http_mcp_mrtr_round(call) == 1) {
        return ngx_http_mcp_mrtr_text(call, "", "All inputs received", 0);
    }

    state = cJSON_CreateObject();

    if (state == NULL || cJSON_AddNumberToObject(state, "round", 1) == NULL) {
        cJSON_Delete(state);
        return NGX_ERROR;
    }

    /* nothing the client can answer: all of them, for the -32021 */
    return (n == 0) ? ngx_http_mcp_mrtr_ask(call, set->asks, set->n, state)
                    : ngx_http_mcp_mrtr_ask(call, missing, n, state);
}


/* whether the request declared the capability the question needs */

static ngx_uint_t
ngx_http_mcp_mrtr_can_answer(ngx_http_mcp_call_t *call,
    ngx_http_mcp_mrtr_ask_t *ask)
{
    ngx_http_mcp_reqctx_t  *client;

    client = ngx_http_mcp_call_client(call);

    switch (ask->method[0]) {

    case 's':
        return client->sampling;

    case 'e':
        return client->elicitation;

    default:
        return client->roots;
    }
}


/*
 * Two rounds, then the result: the name asked in the first round lives
 * in the state the second carries, as the client sends only the latest
 * answers.
 */

static ngx_int_t
ngx_http_mcp_mrtr_rounds(ngx_http_mcp_call_t *call)
{
    char                     *text;
    cJSON                    *name, *color, *state, *kept;
    ngx_int_t                 rc;
    ngx_uint_t                declined;
    ngx_http_mcp_mrtr_ask_t  *steps;

    steps = ngx_http_mcp_call_entry_data(call);

    if (ngx_http_mcp_mrtr_round(call) == 2) {
        color = ngx_http_mcp_mrtr_accepted(call, "step2", "color",
                                           cJSON_String, &declined);
        kept = cJSON_GetObjectItemCaseSensitive(
                   ngx_http_mcp_call_state(call), "name");

        if (color != NULL && cJSON_IsString(kept)) {
            text = ngx_pnalloc(ngx_http_mcp_call_pool(call),
                               ngx_strlen(kept->valuestring)
                               + sizeof(" likes ")
                               + ngx_strlen(color->valuestring));
            if (text == NULL) {
                return NGX_ERROR;
            }

            ngx_sprintf((u_char *) text, "%s likes %s%Z", kept->valuestring,
                        color->valuestring);

            return ngx_http_mcp_mrtr_text(call, "", text, 0);
        }

        name = kept;

    } else {
        name = (ngx_http_mcp_mrtr_round(call) == 1)
               ? ngx_http_mcp_mrtr_accepted(call, "step1", "name",
                                            cJSON_String, &declined)
               : NULL;
    }

    state = cJSON_CreateObject();

    if (state == NULL) {
        return NGX_ERROR;
    }

    if (!cJSON_IsString(name)) {
        rc = (cJSON_AddNumberToObject(state, "round", 1) != NULL)
             ? ngx_http_mcp_mrtr_ask(call, &steps[0], 1, state) : NGX_ERROR;

    } else {
        rc = (cJSON_AddNumberToObject(state, "round", 2) != NULL
              && cJSON_AddStringToObject(state, "name", name->valuestring)
                 != NULL)
             ? ngx_http_mcp_mrtr_ask(call, &steps[1], 1, state) : NGX_ERROR;
    }

    if (rc == NGX_ERROR) {
        cJSON_Delete(state);
    }

    return rc;
}


static ngx_int_t
ngx_http_mcp_mrtr_prompt(ngx_http_mcp_call_t *call)
{
    cJSON       *result, *messages, *message, *content;
    ngx_int_t    rc;
    const char  *text;

    text = ngx_http_mcp_mrtr_one(call, &rc);

    if (text == NULL) {
        return rc;
    }

    result = cJSON_CreateObject();
    messages = cJSON_AddArrayToObject(result, "messages");
    message = cJSON_CreateObject();

    if (messages == NULL || message == NULL
        || !cJSON_AddItemToArray(messages, message))
    {
        cJSON_Delete(message);
        cJSON_Delete(result);
        return NGX_ERROR;
    }

    content = cJSON_AddObjectToObject(message, "content");

    if (cJSON_AddStringToObject(message, "role", "user") == NULL
        || content == NULL
        || cJSON_AddStringToObject(content, "type", "text") == NULL
        || cJSON_AddStringToObject(content, "text", text) == NULL)
    {
        cJSON_Delete(result);
        return NGX_ERROR;
    }

    ngx_http_mcp_call_result(call, result);

    return NGX_OK;
}


static ngx_int_t
ngx_http_mcp_mrtr_ask(ngx_http_mcp_call_t *call,
    ngx_http_mcp_mrtr_ask_t *asks, ngx_uint_t n, cJSON *state)
{
    cJSON       *requests, *request, *params;
    ngx_uint_t   i;

    requests = cJSON_CreateObject();
    if (requests == NULL) {
        cJSON_Delete(state);
        return NGX_ERROR;
    }

    for (i = 0; i < n; i++) {
        request = cJSON_AddObjectToObject(requests, asks[i].key);
        params = cJSON_Parse(asks[i].params);

        if (request == NULL || params == NULL
            || cJSON_AddStringToObject(request, "method", asks[i].method)
               == NULL
            || !cJSON_AddItemToObject(request, "params", params))
        {
            cJSON_Delete(params);
            cJSON_Delete(requests);
            cJSON_Delete(state);
            return NGX_ERROR;
        }
    }

    ngx_http_mcp_call_input_required(call, requests, state);

    return NGX_OK;
}


/*
 * An accepted elicitation's content[field] of the given type, or NULL;
 * *declined is set when the user said no.
 */

static cJSON *
ngx_http_mcp_mrtr_accepted(ngx_http_mcp_call_t *call, const char *key,
    const char *field, int type, ngx_uint_t *declined)
{
    cJSON  *answer, *action, *value;

    answer = ngx_http_mcp_call_input(call, key);
    action = cJSON_GetObjectItemCaseSensitive(answer, "action");
    *declined = 0;

    if (!cJSON_IsString(action)) {
        return NULL;
    }

    if (ngx_strcmp(action->valuestring, "accept") != 0) {
        *declined = 1;
        return NULL;
    }

    value = cJSON_GetObjectItemCaseSensitive(
                cJSON_GetObjectItemCaseSensitive(answer, "content"), field);

    if (type == cJSON_True) {
        return cJSON_IsBool(value) ? value : NULL;
    }

    return (value != NULL && (value->type & 0xff) == type) ? value : NULL;
}


/* what the answer to one question says, as text; NULL: not answered */

static const char *
ngx_http_mcp_mrtr_answer_text(ngx_http_mcp_call_t *call,
    ngx_http_mcp_mrtr_ask_t *ask)
{
    cJSON       *answer, *value, *uri;
    ngx_uint_t   declined;

    answer = ngx_http_mcp_call_input(call, ask->key);

    if (answer == NULL) {
        return NULL;
    }

    if (ngx_strcmp(ask->method, "sampling/createMessage") == 0) {
        value = cJSON_GetObjectItemCaseSensitive(
                    cJSON_GetObjectItemCaseSensitive(answer, "content"),
                    "text");
        return cJSON_IsString(value) ? value->valuestring : NULL;
    }

    if (ngx_strcmp(ask->method, "roots/list") == 0) {
        value = cJSON_GetObjectItemCaseSensitive(answer, "roots");
        uri = cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(value, 0),
                                               "uri");
        return cJSON_IsArray(value)
               ? (cJSON_IsString(uri) ? uri->valuestring : "no roots")
               : NULL;
    }

    value = ngx_http_mcp_mrtr_accepted(call, ask->key, ask->field,
                                       ask->type, &declined);
    if (declined) {
        return "(declined)";
    }

    if (cJSON_IsBool(value)) {
        return cJSON_IsTrue(value) ? "confirmed" : "not confirmed";
    }

    return cJSON_IsString(value) ? value->valuestring : NULL;
}


static ngx_int_t
ngx_http_mcp_mrtr_text(ngx_http_mcp_call_t *call, const char *prefix,
    const char *text, ngx_uint_t is_error)
{
    u_char  *p;
    size_t   len;
    cJSON   *content, *item;

    len = ngx_strlen(prefix) + ngx_strlen(text) + 1;

    p = ngx_pnalloc(ngx_http_mcp_call_pool(call), len + 1);
    if (p == NULL) {
        return NGX_ERROR;
    }

    ngx_sprintf(p, "%s%s%s%Z", prefix, text,
                (ngx_strcmp(prefix, "Hello, ") == 0) ? "!" : "");

    content = cJSON_CreateArray();
    item = ngx_http_mcp_text_content((char *) p);

    if (content == NULL || item == NULL
        || !cJSON_AddItemToArray(content, item))
    {
        cJSON_Delete(item);
        cJSON_Delete(content);
        return NGX_ERROR;
    }

    ngx_http_mcp_call_result(call, ngx_http_mcp_tool_result(content,
                                                            is_error));
    return NGX_OK;
}


/*
 * The set changes only with the configuration: the trigger tools tell
 * the listeners as if it had, for clients and tests to see the stream.
 */

static ngx_int_t
ngx_http_mcp_mrtr_trigger(ngx_http_mcp_call_t *call)
{
    const char  *list;

    list = ngx_http_mcp_call_entry_data(call);

    if (ngx_http_mcp_list_changed(list) != NGX_OK) {
        return NGX_ERROR;
    }

    return ngx_http_mcp_mrtr_text(call, "Listeners told: ", list, 0);
}


/* the round the retry's state says it answers: 0 on a first call */

static ngx_int_t
ngx_http_mcp_mrtr_round(ngx_http_mcp_call_t *call)
{
    cJSON  *round;

    round = cJSON_GetObjectItemCaseSensitive(ngx_http_mcp_call_state(call),
                                             "round");

    return cJSON_IsNumber(round) ? round->valueint : 0;
}
