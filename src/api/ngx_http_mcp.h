
/*
 * ngx_http_mcp_module: shared types and the handler registration API.
 *
 * A "set" is a named collection of tools, resources, resource templates
 * and prompts.  A set is built at configuration time by a provider
 * function (see ngx_http_mcp_add_provider()) and attached to a location
 * with the "mcp_builtin" directive.  Each entry is described by a JSON
 * text, exactly the object that tools/list, resources/list,
 * resources/templates/list or prompts/list return for it, and is served
 * by a handler.
 *
 * Handlers are asynchronous by contract: a handler receives a call and
 * must end it exactly once with ngx_http_mcp_call_result() or
 * ngx_http_mcp_call_error(), either before it returns or later (from a
 * timer, a subrequest, an upstream reply).  A handler returns NGX_OK in
 * both cases, or NGX_ERROR when it could not do its work and did not end
 * the call; the transport then answers with an internal error.
 *
 * A call is opaque: handlers read it through the accessors below.  It
 * has a pool of its own (ngx_http_mcp_call_pool()), which lives until
 * the call ends, however long the HTTP request that brought it lasts:
 * a client may disconnect and resume the stream later.  Handlers keep
 * their state and timers there and remove timers in a pool cleanup
 * handler, which also runs when the call is cancelled
 * (notifications/cancelled).  Once a call has ended, the handler must
 * not touch it again.
 *
 * Before its result, a call may send notifications (progress, log
 * messages) and requests (sampling, elicitation) to the client; the
 * reply then becomes an SSE stream.
 *
 * Providers and handlers may live in a module of their own, in this .so
 * or another one loaded after it (see "Extension API" in README.md);
 * such a module includes this header and nothing else of this module.
 */


#ifndef _NGX_HTTP_MCP_H_INCLUDED_
#define _NGX_HTTP_MCP_H_INCLUDED_


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>
#include <cjson/cJSON.h>


#define NGX_HTTP_MCP_MODULE_VERSION        "0.1.0"

/*
 * The version of the API this header declares.  It changes when a
 * declaration here changes in a way that breaks a module built against
 * the previous one (a function removed, a signature or a structure
 * changed); a function added later leaves it.  A module checks it when
 * it is compiled:
 *
 *     #if (NGX_HTTP_MCP_API_VERSION != 1)
 *     #error "written for version 1 of the ngx_http_mcp_module API"
 *     #endif
 *
 * and a module in a .so of its own checks, in its preconfiguration, that
 * the ngx_http_mcp_module it is loaded with was built with the same:
 * ngx_http_mcp_api_version() == NGX_HTTP_MCP_API_VERSION.
 */
#define NGX_HTTP_MCP_API_VERSION           1

#define NGX_HTTP_MCP_PARSE_ERROR           -32700
#define NGX_HTTP_MCP_INVALID_REQUEST       -32600
#define NGX_HTTP_MCP_METHOD_NOT_FOUND      -32601
#define NGX_HTTP_MCP_INVALID_PARAMS        -32602
#define NGX_HTTP_MCP_INTERNAL_ERROR        -32603
#define NGX_HTTP_MCP_RESOURCE_NOT_FOUND    -32002
#define NGX_HTTP_MCP_SERVER_ERROR          -32000
#define NGX_HTTP_MCP_SESSION_NOT_FOUND     -32001
#define NGX_HTTP_MCP_REQUEST_TIMED_OUT     -32001  /* a server request */
/* 2026-07-28: the HTTP headers disagree with the body */
#define NGX_HTTP_MCP_HEADER_MISMATCH       -32020
/* 2026-07-28: the request needs a client capability it did not declare */
#define NGX_HTTP_MCP_MISSING_CAPABILITY    -32021
/* 2026-07-28: a protocol version this server does not speak */
#define NGX_HTTP_MCP_UNSUPPORTED_VERSION   -32022

/* an HTTP status nginx has no name for */
#define NGX_HTTP_MCP_NOT_ACCEPTABLE        406

/* protocol revisions, oldest first; 0 means "none negotiated" */
#define NGX_HTTP_MCP_V20250326             1
#define NGX_HTTP_MCP_V20250618             2
#define NGX_HTTP_MCP_V20251125             3
#define NGX_HTTP_MCP_V20260728             4
/* the newest revision with sessions, what initialize negotiates */
#define NGX_HTTP_MCP_VLATEST               NGX_HTTP_MCP_V20251125
/* the first stateless revision: no session, per-request _meta */
#define NGX_HTTP_MCP_VSTATELESS            NGX_HTTP_MCP_V20260728

/* logging/setLevel levels, in order of severity */
#define NGX_HTTP_MCP_LOG_DEBUG             0
#define NGX_HTTP_MCP_LOG_INFO              1
#define NGX_HTTP_MCP_LOG_NOTICE            2
#define NGX_HTTP_MCP_LOG_WARNING           3
#define NGX_HTTP_MCP_LOG_ERROR             4
#define NGX_HTTP_MCP_LOG_CRITICAL          5
#define NGX_HTTP_MCP_LOG_ALERT             6
#define NGX_HTTP_MCP_LOG_EMERGENCY         7
/* a stateless request without a log level: no log messages at all */
#define NGX_HTTP_MCP_LOG_NONE              8

#define NGX_HTTP_MCP_SESSION_ID_LEN        32
#define NGX_HTTP_MCP_CLIENT_NAME_LEN       64


typedef struct ngx_http_mcp_call_s  ngx_http_mcp_call_t;

typedef ngx_int_t (*ngx_http_mcp_handler_pt)(ngx_http_mcp_call_t *call);

/*
 * The client's answer to a server request: result or error is set (the
 * error also on timeout, with code -32001), and both are freed after the
 * handler returns.
 */
typedef void (*ngx_http_mcp_answer_pt)(ngx_http_mcp_call_t *call,
    cJSON *result, cJSON *error, void *data);


/*
 * What a handler may know about its caller.  A session supplies it for a
 * 2025 client; a stateless request (protocol revision 2026-07-28)
 * supplies it from the request's _meta, so handlers never look at
 * sessions.
 */
typedef struct {
    ngx_uint_t                 version;
    ngx_uint_t                 log_level;
    ngx_str_t                  session_id;
    ngx_str_t                  client_name;
    ngx_str_t                  subject;
    void                      *auth;       /* ngx_http_mcp_auth_t; NULL:
                                              authorization is off */

    unsigned                   sampling:1;
    unsigned                   elicitation:1;
    unsigned                   roots:1;
    unsigned                   tasks:1;    /* 2026-07-28: declares the
                                              io.modelcontextprotocol/
                                              tasks extension */
    /* elicitation's modes (2025-11-25): elicitation is either of them */
    unsigned                   elicitation_form:1;
    unsigned                   elicitation_url:1;
} ngx_http_mcp_reqctx_t;


typedef struct {
    ngx_str_t                  name;     /* tool or prompt name, resource
                                            URI, or URI template */
    cJSON                     *desc;     /* the listing object */
    ngx_http_mcp_handler_pt    handler;
    void                      *data;
    unsigned                   params:1; /* a tool whose inputSchema
                                            mirrors arguments into
                                            Mcp-Param-* (x-mcp-header) */
    /* a tool's schemas compiled when it is added (NULL: none given) */
    struct ngx_http_mcp_schema_s  *input_schema;
    struct ngx_http_mcp_schema_s  *output_schema;
} ngx_http_mcp_entry_t;


typedef struct {
    ngx_str_t                  name;
    ngx_array_t                tools;       /* ngx_http_mcp_entry_t */
    ngx_array_t                resources;   /* ngx_http_mcp_entry_t */
    ngx_array_t                templates;   /* ngx_http_mcp_entry_t */
    ngx_array_t                prompts;     /* ngx_http_mcp_entry_t */
    ngx_http_mcp_handler_pt    complete;    /* completion/complete */
} ngx_http_mcp_set_t;


typedef ngx_int_t (*ngx_http_mcp_provider_pt)(ngx_conf_t *cf,
    ngx_http_mcp_set_t *set);


/* NGX_HTTP_MCP_API_VERSION of the loaded ngx_http_mcp_module */
ngx_uint_t ngx_http_mcp_api_version(void);

/*
 * registration, at configuration time: from a module's preconfiguration
 * or a directive of the http block.  A set name registered twice, or
 * within a set a tool or prompt name, a resource URI or a URI template
 * added twice, is a configuration error that names it.  A set is built
 * (its provider called) when a location first names it in mcp_builtin.
 */
ngx_int_t ngx_http_mcp_add_provider(ngx_conf_t *cf, char *name,
    ngx_http_mcp_provider_pt init);
/*
 * the set of the configuration level being parsed (http, server or
 * location), for entries the configuration itself defines (mcp_tool and
 * its kin): created at the first, holding also the entries of an
 * mcp_builtin set named at the same level.  A level with entries of its
 * own inherits no set from the level above, as with add_header.
 */
ngx_http_mcp_set_t *ngx_http_mcp_conf_set(ngx_conf_t *cf);
ngx_int_t ngx_http_mcp_add_tool(ngx_conf_t *cf, ngx_http_mcp_set_t *set,
    const char *json, ngx_http_mcp_handler_pt handler, void *data);
ngx_int_t ngx_http_mcp_add_resource(ngx_conf_t *cf, ngx_http_mcp_set_t *set,
    const char *json, ngx_http_mcp_handler_pt handler, void *data);
ngx_int_t ngx_http_mcp_add_template(ngx_conf_t *cf, ngx_http_mcp_set_t *set,
    const char *json, ngx_http_mcp_handler_pt handler, void *data);
ngx_int_t ngx_http_mcp_add_prompt(ngx_conf_t *cf, ngx_http_mcp_set_t *set,
    const char *json, ngx_http_mcp_handler_pt handler, void *data);

/* ending a call; both take ownership of what they are given */
void ngx_http_mcp_call_result(ngx_http_mcp_call_t *call, cJSON *result);
void ngx_http_mcp_call_error(ngx_http_mcp_call_t *call, ngx_int_t code,
    const char *message);
/* the same with the error's "data" member, which it takes (may be NULL) */
void ngx_http_mcp_call_error_data(ngx_http_mcp_call_t *call, ngx_int_t code,
    const char *message, cJSON *data);
/*
 * resources/read of a URI that is not there, as the call's revision
 * says: -32002 (2025), -32602 with data.uri (2026-07-28, SEP-2164)
 */
void ngx_http_mcp_call_resource_not_found(ngx_http_mcp_call_t *call);

/*
 * Messages to the client before the result; each takes params.  They
 * return NGX_OK, or NGX_ERROR when the message could not be queued.
 * ngx_http_mcp_call_log() sends nothing below the session's log level;
 * ngx_http_mcp_call_progress() nothing without a progress token.
 */
ngx_int_t ngx_http_mcp_call_notify(ngx_http_mcp_call_t *call,
    const char *method, cJSON *params);
ngx_int_t ngx_http_mcp_call_log(ngx_http_mcp_call_t *call, ngx_uint_t level,
    const char *logger, const char *text);
ngx_int_t ngx_http_mcp_call_progress(ngx_http_mcp_call_t *call,
    double progress, double total, const char *message);
/*
 * A request to the client, whose answer comes to handler.  It needs a
 * session's stream: in a stateless (2026-07-28) call it ends the call
 * with -32600 and returns NGX_DECLINED; see call_input_required().  In
 * a 2025-11-25 task it goes through the task, which is input_required
 * until the answer comes (a call still in dispatch becomes a task
 * first).
 */
ngx_int_t ngx_http_mcp_call_request(ngx_http_mcp_call_t *call,
    const char *method, cJSON *params, ngx_http_mcp_answer_pt handler,
    void *data);

/*
 * Multi-round requests (2026-07-28): a stateless client has no stream a
 * server request could travel on.  A tools/call, prompts/get or
 * resources/read handler that needs the client ends its call with an
 * input-required result instead: requests is an object of key ->
 * {"method": ..., "params": ...} (sampling/createMessage,
 * elicitation/create, roots/list), state (may be NULL) is whatever the
 * handler wants back.  The client retries the same request with the
 * answers; the handler runs again and finds them with call_input() and
 * its state with call_state().
 *
 * The module seals state with HMAC-SHA256 (mcp_state_key), binds it to
 * the method, the name or URI and the caller, and makes it expire
 * (mcp_state_timeout): a retry with a forged, foreign or stale state is
 * refused before the handler runs.  Requests for a capability the
 * client did not declare are left out; when none is left, the call ends
 * with -32021.  input_required() takes requests and state.
 *
 * In a 2025-11-25 task (a session's tools/call with params.task) the
 * module asks the client the requests itself, with call_request(), and
 * runs the handler again with the answers and state, as a retry would;
 * elsewhere in a session the call ends with -32600.
 */
void ngx_http_mcp_call_input_required(ngx_http_mcp_call_t *call,
    cJSON *requests, cJSON *state);
/* the answer to the input request key on this retry, or NULL; read only */
cJSON *ngx_http_mcp_call_input(ngx_http_mcp_call_t *call, const char *key);
/* the state the previous round left, or NULL on a first round; read only */
cJSON *ngx_http_mcp_call_state(ngx_http_mcp_call_t *call);

/*
 * Ends the HTTP response that carries the call's stream, after the SSE
 * priming event (SEP-1699 polling); the client reconnects with GET and
 * Last-Event-ID and gets the rest of the stream, the result included.
 * A stateless client cannot resume: NGX_DECLINED, the stream stays.
 */
ngx_int_t ngx_http_mcp_call_close_stream(ngx_http_mcp_call_t *call);

/*
 * tells every session subscribed to uri (resources/subscribe) and every
 * stateless client listening for it (resourceSubscriptions of
 * subscriptions/listen) that the resource changed
 */
ngx_int_t ngx_http_mcp_resource_updated(ngx_str_t *uri);

/*
 * tells every stateless client listening for it (subscriptions/listen)
 * that a list changed: list is "tools", "prompts" or "resources"
 */
ngx_int_t ngx_http_mcp_list_changed(const char *list);

/* result builders; NULL on allocation failure */
cJSON *ngx_http_mcp_text_content(const char *text);
cJSON *ngx_http_mcp_tool_result(cJSON *content, ngx_uint_t is_error);
/* a tool's result of one text content: the two above together */
cJSON *ngx_http_mcp_text_result(const char *text, ngx_uint_t is_error);
cJSON *ngx_http_mcp_parse_json(ngx_conf_t *cf, const char *json);


/*
 * What a handler reads of its call.  What they return lives as long as
 * the call, until it ends.
 */

/* the call's own pool and log (for state, timers, error log lines) */
ngx_pool_t *ngx_http_mcp_call_pool(ngx_http_mcp_call_t *call);
ngx_log_t *ngx_http_mcp_call_get_log(ngx_http_mcp_call_t *call);

/* the JSON-RPC method ("tools/call", ...) and its params, or NULL */
ngx_str_t *ngx_http_mcp_call_method(ngx_http_mcp_call_t *call);
cJSON *ngx_http_mcp_call_params(ngx_http_mcp_call_t *call);

/* tools/call and prompts/get: params.arguments, or NULL */
cJSON *ngx_http_mcp_call_arguments(ngx_http_mcp_call_t *call);

/*
 * resources/read: the URI asked for (empty for other methods) and, when
 * a template matched it, the template's variables by name (NULL: none)
 */
ngx_str_t *ngx_http_mcp_call_uri(ngx_http_mcp_call_t *call);
ngx_str_t *ngx_http_mcp_var(ngx_http_mcp_call_t *call, char *name);

/*
 * The entry the call addresses: its name (tool or prompt name, resource
 * URI, URI template) and the data it was registered with.  For
 * completion/complete, the prompt or resource template its ref names.
 */
ngx_str_t *ngx_http_mcp_call_entry_name(ngx_http_mcp_call_t *call);
void *ngx_http_mcp_call_entry_data(ngx_http_mcp_call_t *call);

/*
 * The set the call is served from: for a completion/complete handler
 * installed over one the set had before (a module that completes its
 * own entries and hands the others on).
 */
ngx_http_mcp_set_t *ngx_http_mcp_call_set(ngx_http_mcp_call_t *call);

/* a pointer for the handler's own use, NULL until set */
void *ngx_http_mcp_call_data(ngx_http_mcp_call_t *call);
void ngx_http_mcp_call_set_data(ngx_http_mcp_call_t *call, void *data);

/* whether the client asked for progress (params._meta.progressToken) */
ngx_uint_t ngx_http_mcp_call_has_progress_token(ngx_http_mcp_call_t *call);

/*
 * the caller: protocol version, client name, capabilities; read only.
 * version >= NGX_HTTP_MCP_VSTATELESS: a stateless request, which has no
 * session and whose capabilities are the ones its own _meta declares.
 */
ngx_http_mcp_reqctx_t *ngx_http_mcp_call_client(ngx_http_mcp_call_t *call);

/*
 * The HTTP request (the POST) that carries the call, while it does; NULL
 * once it went away (the client left, the stream was closed, SEP-1699)
 * or for a call no request carries (a task's later round).  A handler
 * may start a subrequest of it (ngx_http_subrequest()); what it keeps in
 * the request's pool must not outlive it: a cleanup on r->pool is the
 * notice that the request goes, and a pool cleanup on the call's pool
 * the notice that the call ended or was cancelled, whichever comes
 * first.  The request's pool dies before its cleanups tell the call.
 */
ngx_http_request_t *ngx_http_mcp_call_http_request(ngx_http_mcp_call_t *call);

/*
 * An HTTP module's location configuration in the location that served
 * the call, what ngx_http_get_module_loc_conf(r, module) gave in its
 * request: a handler's module reads its own directives with it.
 */
void *ngx_http_mcp_call_loc_conf(ngx_http_mcp_call_t *call,
    ngx_module_t *module);


extern ngx_module_t  ngx_http_mcp_module;


#endif /* _NGX_HTTP_MCP_H_INCLUDED_ */
