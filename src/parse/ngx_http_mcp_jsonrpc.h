
/*
 * JSON-RPC 2.0 as MCP speaks it (ngx_http_mcp_jsonrpc.c): a POST body
 * read into its messages, the replies and notifications the module
 * builds, protocol versions and log levels by name.  Pure code over
 * pools and cJSON trees, on the strict scan of ngx_http_mcp_json.h; a
 * message's call is opaque here (ngx_http_mcp.h).
 */


#ifndef _NGX_HTTP_MCP_JSONRPC_H_INCLUDED_
#define _NGX_HTTP_MCP_JSONRPC_H_INCLUDED_


#include "ngx_http_mcp.h"
#include "ngx_http_mcp_json.h"


/* one JSON-RPC message of a POST body */
typedef enum {
    NGX_HTTP_MCP_MSG_INVALID = 0,
    NGX_HTTP_MCP_MSG_REQUEST,
    NGX_HTTP_MCP_MSG_NOTIFICATION,
    NGX_HTTP_MCP_MSG_RESPONSE
} ngx_http_mcp_msg_type_e;

typedef struct {
    ngx_http_mcp_msg_type_e    type;
    cJSON                     *json;        /* the message object */
    cJSON                     *id;          /* a copy to echo; NULL: null */
    ngx_str_t                  method;
    cJSON                     *params;
    const char                *error;       /* why it is invalid */
    ngx_http_mcp_call_t       *call;        /* a request's call */
    cJSON                     *reply;       /* the error for an invalid
                                               message */
    ngx_array_t               *param_headers;  /* a stateless tools/call's
                                               Mcp-Param-*: ngx_keyval_t,
                                               the name after the prefix */
    ngx_int_t                  code;        /* its reply's error code */
    unsigned                   outcome:2;   /* NGX_HTTP_MCP_OUTCOME_* */
} ngx_http_mcp_msg_t;


/* how a message's call ended, for $mcp_outcome */
#define NGX_HTTP_MCP_OUTCOME_NONE      0     /* not yet, or never heard */
#define NGX_HTTP_MCP_OUTCOME_OK        1
#define NGX_HTTP_MCP_OUTCOME_IS_ERROR  2     /* a result with isError */
#define NGX_HTTP_MCP_OUTCOME_ERROR     3     /* a JSON-RPC error */


/* each named tool of a tools/list result (ngx_http_mcp_jsonrpc_tools()) */
typedef ngx_int_t (*ngx_http_mcp_tool_each_pt)(void *data, cJSON *tool,
    ngx_str_t *name);

ngx_int_t ngx_http_mcp_jsonrpc_tools(cJSON *result,
    ngx_http_mcp_tool_each_pt each, void *data, ngx_uint_t *changed);

/*
 * Whether a message may be sent twice, when its first sending failed
 * before any byte of the reply (mcp_pass_retry, mcp_backend): see
 * ngx_http_mcp_jsonrpc_retry().  A tools/call is as its tool's hints
 * say, which the caller keeps (NGX_HTTP_MCP_TOOL_*).
 */
#define NGX_HTTP_MCP_RETRY_NEVER      0
#define NGX_HTTP_MCP_RETRY_SAFE       1
#define NGX_HTTP_MCP_RETRY_TOOL       2

/* a tool's annotations that let its call go twice */
#define NGX_HTTP_MCP_TOOL_READ_ONLY   0x01    /* readOnlyHint: true */
#define NGX_HTTP_MCP_TOOL_IDEMPOTENT  0x02    /* idempotentHint: true */

ngx_uint_t ngx_http_mcp_jsonrpc_retry(ngx_http_mcp_msg_type_e type,
    ngx_str_t *method);
ngx_uint_t ngx_http_mcp_jsonrpc_tool_hints(cJSON *tool);

/* a message's outcome from its reply, for $mcp_outcome */
void ngx_http_mcp_jsonrpc_outcome(ngx_http_mcp_msg_t *msg, cJSON *reply);

ngx_int_t ngx_http_mcp_jsonrpc_parse(ngx_pool_t *pool, u_char *body,
    size_t len, cJSON **root, ngx_array_t *msgs, ngx_uint_t *batch,
    const char **error);
ngx_int_t ngx_http_mcp_json_add_literal(cJSON *object, const char *name,
    const char *value);
cJSON *ngx_http_mcp_jsonrpc_result(cJSON *id, cJSON *result);
cJSON *ngx_http_mcp_jsonrpc_error(cJSON *id, ngx_int_t code,
    const char *message, const char *correlation);
size_t ngx_http_mcp_jsonrpc_notification(u_char *buf, const char *method,
    ngx_str_t *id, ngx_str_t *params);
ngx_int_t ngx_http_mcp_correlation_id(u_char *buf, size_t len);
ngx_uint_t ngx_http_mcp_version_parse(ngx_str_t *s);
const char *ngx_http_mcp_version_name(ngx_uint_t version);
cJSON *ngx_http_mcp_versions_json(void);
ngx_uint_t ngx_http_mcp_log_level_parse(const char *name);
const char *ngx_http_mcp_log_level_name(ngx_uint_t level);
ngx_int_t ngx_http_mcp_jsonrpc_error_data(cJSON *reply, cJSON *data);
const char *ngx_http_mcp_jsonrpc_name_param(ngx_str_t *method);
/* of a client's name or method, the most a log line repeats, escaped */
#define NGX_HTTP_MCP_LOG_NAME_LEN  256
u_char *ngx_http_mcp_log_bounded(u_char *buf, size_t size, u_char *text,
    size_t len);


#endif /* _NGX_HTTP_MCP_JSONRPC_H_INCLUDED_ */
