
/*
 * JSON-RPC 2.0 messages: parsing and validating a POST body, building
 * responses.  Nothing here knows about HTTP requests, so it can be unit
 * tested and fuzzed on its own.
 *
 * The body passes the strict scan of ngx_http_mcp_json.c first, so that
 * it has one meaning for every parser.  cJSON reads every number as a
 * double, which loses integer ids beyond 2^53; ids must be echoed
 * exactly as sent, so the scan keeps the raw text of each message's "id"
 * member, echoed verbatim through cJSON_CreateRaw().
 */


#include "ngx_http_mcp_jsonrpc.h"
#include "ngx_http_mcp_json.h"

#include <openssl/rand.h>


static ngx_uint_t ngx_http_mcp_json_is_integer(ngx_str_t *raw);
static void ngx_http_mcp_jsonrpc_classify(ngx_pool_t *pool,
    ngx_http_mcp_msg_t *msg, cJSON *json, ngx_str_t *raw_id);
static cJSON *ngx_http_mcp_jsonrpc_id(ngx_pool_t *pool, cJSON *id,
    ngx_str_t *raw_id);


/* an integer as JSON-RPC ids are: "-0" means 0 to most parsers */

static ngx_uint_t
ngx_http_mcp_json_is_integer(ngx_str_t *raw)
{
    size_t   i;

    i = (raw->len > 0 && raw->data[0] == '-') ? 1 : 0;

    if (i == raw->len || (i == 1 && raw->len == 2 && raw->data[1] == '0')) {
        return 0;
    }

    for ( /* void */ ; i < raw->len; i++) {
        if (raw->data[i] < '0' || raw->data[i] > '9') {
            return 0;
        }
    }

    return 1;
}


/*
 * Parses a POST body into messages.  Returns NGX_OK, NGX_DECLINED when
 * the body is not JSON with one meaning (or not an object or array of
 * messages; *error then says why, or is NULL), and NGX_ERROR on
 * allocation failure.  *root must be freed by the caller with
 * cJSON_Delete(), as must each message's id.
 */

ngx_int_t
ngx_http_mcp_jsonrpc_parse(ngx_pool_t *pool, u_char *body, size_t len,
    cJSON **root, ngx_array_t *msgs, ngx_uint_t *batch, const char **error)
{
    cJSON                     *json, *item;
    ngx_int_t                  rc;
    ngx_str_t                 *raw;
    ngx_uint_t                 i, n;
    ngx_array_t                ids;
    ngx_http_mcp_msg_t        *msg;

    *root = NULL;
    *batch = 0;
    *error = NULL;

    if (ngx_array_init(&ids, pool, 1, sizeof(ngx_str_t)) != NGX_OK) {
        return NGX_ERROR;
    }

    rc = ngx_http_mcp_json_parse(pool, body, len, &ids, &json, error);
    if (rc != NGX_OK) {
        return rc;
    }

    *root = json;
    raw = ids.elts;

    if (!cJSON_IsArray(json)) {
        /* an object, or JSON that is no message at all */
        msg = ngx_array_push(msgs);
        if (msg == NULL) {
            return NGX_ERROR;
        }

        ngx_http_mcp_jsonrpc_classify(pool, msg, json,
                                      ids.nelts ? &raw[0] : NULL);
        return NGX_OK;
    }

    *batch = 1;
    n = cJSON_GetArraySize(json);

    if (n != ids.nelts) {
        return NGX_DECLINED;
    }

    i = 0;

    cJSON_ArrayForEach(item, json) {
        msg = ngx_array_push(msgs);
        if (msg == NULL) {
            return NGX_ERROR;
        }

        ngx_http_mcp_jsonrpc_classify(pool, msg, item, &raw[i++]);
    }

    return NGX_OK;
}


static void
ngx_http_mcp_jsonrpc_classify(ngx_pool_t *pool, ngx_http_mcp_msg_t *msg,
    cJSON *json, ngx_str_t *raw_id)
{
    cJSON  *version, *method, *id, *params, *result, *error;

    ngx_memzero(msg, sizeof(ngx_http_mcp_msg_t));

    msg->json = json;

    if (!cJSON_IsObject(json)) {
        msg->error = "message is not an object";
        return;
    }

    id = ngx_http_mcp_json_get(json, "id");

    if (id != NULL) {
        if (cJSON_IsString(id)
            || (cJSON_IsNumber(id) && raw_id != NULL
                && ngx_http_mcp_json_is_integer(raw_id)))
        {
            msg->id = ngx_http_mcp_jsonrpc_id(pool, id, raw_id);
            if (msg->id == NULL) {
                msg->error = "out of memory";
                return;
            }

        } else {
            msg->error = "\"id\" must be a string or an integer";
            return;
        }
    }

    version = ngx_http_mcp_json_get(json, "jsonrpc");

    if (!cJSON_IsString(version)
        || ngx_strcmp(version->valuestring, "2.0") != 0)
    {
        msg->error = "\"jsonrpc\" must be \"2.0\"";
        return;
    }

    method = ngx_http_mcp_json_get(json, "method");

    if (method != NULL) {
        if (!cJSON_IsString(method) || method->valuestring[0] == '\0') {
            msg->error = "\"method\" must be a non-empty string";
            return;
        }

        params = ngx_http_mcp_json_get(json, "params");

        if (params != NULL && !cJSON_IsObject(params)) {
            msg->error = "\"params\" must be an object";
            return;
        }

        msg->method.data = (u_char *) method->valuestring;
        msg->method.len = ngx_strlen(method->valuestring);
        msg->params = params;
        msg->type = (id != NULL) ? NGX_HTTP_MCP_MSG_REQUEST
                                 : NGX_HTTP_MCP_MSG_NOTIFICATION;
        return;
    }

    result = ngx_http_mcp_json_get(json, "result");
    error = ngx_http_mcp_json_get(json, "error");

    if (id == NULL || (result == NULL) == (error == NULL)) {
        msg->error = "a response needs an \"id\" and exactly one of "
                     "\"result\" and \"error\"";
        return;
    }

    if (error != NULL && !cJSON_IsObject(error)) {
        msg->error = "\"error\" must be an object";
        return;
    }

    msg->type = NGX_HTTP_MCP_MSG_RESPONSE;
}


static cJSON *
ngx_http_mcp_jsonrpc_id(ngx_pool_t *pool, cJSON *id, ngx_str_t *raw_id)
{
    u_char  *text;

    if (cJSON_IsString(id)) {
        return cJSON_CreateString(id->valuestring);
    }

    /* an integer, as many digits as the client wrote */
    text = ngx_pnalloc(pool, raw_id->len + 1);
    if (text == NULL) {
        return NULL;
    }

    *ngx_cpymem(text, raw_id->data, raw_id->len) = '\0';

    return cJSON_CreateRaw((char *) text);
}


/*
 * A string member whose name and value are literals, neither copied nor
 * freed (cJSON_StringIsConst, cJSON_IsReference): the "resultType" of
 * every 2026-07-28 result took three allocations for two constants.
 */

ngx_int_t
ngx_http_mcp_json_add_literal(cJSON *object, const char *name,
    const char *value)
{
    cJSON  *item;

    item = cJSON_CreateStringReference(value);

    if (item == NULL || !cJSON_AddItemToObjectCS(object, name, item)) {
        cJSON_Delete(item);
        return NGX_ERROR;
    }

    return NGX_OK;
}


cJSON *
ngx_http_mcp_jsonrpc_result(cJSON *id, cJSON *result)
{
    cJSON  *reply, *idcopy;

    reply = cJSON_CreateObject();
    if (reply == NULL) {
        cJSON_Delete(result);
        return NULL;
    }

    idcopy = cJSON_Duplicate(id, 1);

    if (cJSON_AddStringToObject(reply, "jsonrpc", "2.0") == NULL
        || idcopy == NULL
        || !cJSON_AddItemToObject(reply, "id", idcopy))
    {
        cJSON_Delete(idcopy);
        cJSON_Delete(result);
        cJSON_Delete(reply);
        return NULL;
    }

    if (!cJSON_AddItemToObject(reply, "result", result)) {
        cJSON_Delete(result);
        cJSON_Delete(reply);
        return NULL;
    }

    return reply;
}


cJSON *
ngx_http_mcp_jsonrpc_error(cJSON *id, ngx_int_t code, const char *message,
    const char *correlation)
{
    cJSON  *reply, *idcopy, *error, *data;

    reply = cJSON_CreateObject();
    if (reply == NULL) {
        return NULL;
    }

    idcopy = (id != NULL) ? cJSON_Duplicate(id, 1) : cJSON_CreateNull();

    if (cJSON_AddStringToObject(reply, "jsonrpc", "2.0") == NULL
        || idcopy == NULL
        || !cJSON_AddItemToObject(reply, "id", idcopy))
    {
        cJSON_Delete(idcopy);
        cJSON_Delete(reply);
        return NULL;
    }

    error = cJSON_AddObjectToObject(reply, "error");

    if (error == NULL
        || cJSON_AddNumberToObject(error, "code", (double) code) == NULL
        || cJSON_AddStringToObject(error, "message", message) == NULL)
    {
        cJSON_Delete(reply);
        return NULL;
    }

    if (correlation != NULL) {
        data = cJSON_AddObjectToObject(error, "data");

        if (data == NULL
            || cJSON_AddStringToObject(data, "correlationId", correlation)
               == NULL)
        {
            cJSON_Delete(reply);
            return NULL;
        }
    }

    return reply;
}


/* a short random hex id that ties a reply to its error_log line */

ngx_int_t
ngx_http_mcp_correlation_id(u_char *buf, size_t len)
{
    u_char  bytes[16];

    if (len > 2 * sizeof(bytes) || len % 2) {
        return NGX_ERROR;
    }

    if (RAND_bytes(bytes, len / 2) != 1) {
        return NGX_ERROR;
    }

    ngx_hex_dump(buf, bytes, len / 2);

    return NGX_OK;
}


static ngx_str_t  ngx_http_mcp_versions[] = {
    ngx_null_string,
    ngx_string("2025-03-26"),
    ngx_string("2025-06-18"),
    ngx_string("2025-11-25"),
    ngx_string("2026-07-28")
};


/* newest first: the version most requests name is found first */

ngx_uint_t
ngx_http_mcp_version_parse(ngx_str_t *s)
{
    ngx_uint_t  v;

    for (v = NGX_HTTP_MCP_VSTATELESS; v >= NGX_HTTP_MCP_V20250326; v--) {
        if (s->len == ngx_http_mcp_versions[v].len
            && ngx_strncmp(s->data, ngx_http_mcp_versions[v].data, s->len)
               == 0)
        {
            return v;
        }
    }

    return 0;
}


const char *
ngx_http_mcp_version_name(ngx_uint_t version)
{
    return (const char *) ngx_http_mcp_versions[version].data;
}


/* every version this server speaks, newest first, as a JSON array */

cJSON *
ngx_http_mcp_versions_json(void)
{
    cJSON       *list, *v;
    ngx_uint_t   i;

    list = cJSON_CreateArray();
    if (list == NULL) {
        return NULL;
    }

    for (i = NGX_HTTP_MCP_VSTATELESS; i >= NGX_HTTP_MCP_V20250326; i--) {
        v = cJSON_CreateString(ngx_http_mcp_version_name(i));

        if (v == NULL || !cJSON_AddItemToArray(list, v)) {
            cJSON_Delete(v);
            cJSON_Delete(list);
            return NULL;
        }
    }

    return list;
}


/*
 * Moves the members of data (an object; freed) into the error's "data",
 * beside its correlation id.
 */

ngx_int_t
ngx_http_mcp_jsonrpc_error_data(cJSON *reply, cJSON *data)
{
    cJSON  *error, *to, *item;

    if (data == NULL) {
        return NGX_OK;
    }

    error = ngx_http_mcp_json_get(reply, "error");
    to = ngx_http_mcp_json_get(error, "data");

    if (to == NULL) {
        to = cJSON_AddObjectToObject(error, "data");
    }

    if (to == NULL) {
        cJSON_Delete(data);
        return NGX_ERROR;
    }

    while (data->child != NULL) {
        item = cJSON_DetachItemViaPointer(data, data->child);

        if (!cJSON_AddItemToObject(to, item->string, item)) {
            cJSON_Delete(item);
            cJSON_Delete(data);
            return NGX_ERROR;
        }
    }

    cJSON_Delete(data);

    return NGX_OK;
}


/*
 * A client's bytes fit for a log line (a method, a tool's name, an
 * error's message that repeats one): a JSON string may hold CR, LF and
 * other control characters, with which a client would write lines of
 * its own into error_log.  Control characters, DEL, "%" and the quote
 * are %-escaped (the lines quote what they print, and a quote of the
 * client's would end that field and start one of its own), the rest
 * kept so that the words stay readable; into buf
 * (size bytes), cut there, never inside an escape.  Returns the end of
 * what was written.
 */

u_char *
ngx_http_mcp_log_bounded(u_char *buf, size_t size, u_char *text, size_t len)
{
    u_char         c, *end;
    static u_char  hex[] = "0123456789ABCDEF";

    end = buf + size;

    while (len--) {
        c = *text++;

        if (c >= 0x20 && c != 0x7f && c != '%' && c != '"') {
            if (buf == end) {
                break;
            }

            *buf++ = c;
            continue;
        }

        if (end - buf < 3) {
            break;
        }

        *buf++ = '%';
        *buf++ = hex[c >> 4];
        *buf++ = hex[c & 0xf];
    }

    return buf;
}


/*
 * The param that the Mcp-Name header repeats (2026-07-28), for the
 * methods that have one; NULL for the others.
 */

const char *
ngx_http_mcp_jsonrpc_name_param(ngx_str_t *method)
{
    static struct {
        ngx_str_t    method;
        const char  *param;
    } names[] = {
        { ngx_string("tools/call"), "name" },
        { ngx_string("prompts/get"), "name" },
        { ngx_string("resources/read"), "uri" },
        { ngx_string("tasks/get"), "taskId" },
        { ngx_string("tasks/update"), "taskId" },
        { ngx_string("tasks/cancel"), "taskId" },
        { ngx_null_string, NULL }
    };

    ngx_uint_t  i;

    for (i = 0; names[i].param; i++) {
        if (names[i].method.len == method->len
            && ngx_strncmp(names[i].method.data, method->data, method->len)
               == 0)
        {
            return names[i].param;
        }
    }

    return NULL;
}


/* logging/setLevel's levels, in order of severity (NGX_HTTP_MCP_LOG_*) */

static const char  *ngx_http_mcp_log_levels[] = {
    "debug", "info", "notice", "warning", "error", "critical", "alert",
    "emergency", NULL
};


/* a level's NGX_HTTP_MCP_LOG_* value, or NGX_HTTP_MCP_LOG_NONE */

ngx_uint_t
ngx_http_mcp_log_level_parse(const char *name)
{
    ngx_uint_t  i;

    for (i = 0; ngx_http_mcp_log_levels[i]; i++) {
        if (ngx_strcmp(name, ngx_http_mcp_log_levels[i]) == 0) {
            return i;
        }
    }

    return NGX_HTTP_MCP_LOG_NONE;
}


/* level: NGX_HTTP_MCP_LOG_DEBUG to NGX_HTTP_MCP_LOG_EMERGENCY */

const char *
ngx_http_mcp_log_level_name(ngx_uint_t level)
{
    return ngx_http_mcp_log_levels[level];
}


/*
 * A notification as JSON: {"jsonrpc":"2.0","method":method,"params":
 * {"_meta":{subscriptionId:id},params}}, without params when both id
 * and params are NULL.  id: JSON; params: the members of params.  With
 * buf NULL only its length.
 */

size_t
ngx_http_mcp_jsonrpc_notification(u_char *buf, const char *method,
    ngx_str_t *id, ngx_str_t *params)
{
    size_t      len;
    ngx_str_t   part[8];
    ngx_uint_t  i, n;

    n = 0;

    ngx_str_set(&part[n], "{\"jsonrpc\":\"2.0\",\"method\":\"");
    n++;
    part[n].data = (u_char *) method;
    part[n].len = ngx_strlen(method);
    n++;

    if (id == NULL && params == NULL) {
        ngx_str_set(&part[n], "\"}");
        n++;

    } else {
        ngx_str_set(&part[n], "\",\"params\":{");
        n++;

        if (id != NULL) {
            ngx_str_set(&part[n], "\"_meta\":{\"io.modelcontextprotocol/"
                                  "subscriptionId\":");
            n++;
            part[n++] = *id;

            if (params != NULL) {
                ngx_str_set(&part[n], "},");

            } else {
                ngx_str_set(&part[n], "}");
            }

            n++;
        }

        if (params != NULL) {
            part[n++] = *params;
        }

        ngx_str_set(&part[n], "}}");
        n++;
    }

    len = 0;

    for (i = 0; i < n; i++) {
        if (buf != NULL) {
            buf = ngx_cpymem(buf, part[i].data, part[i].len);
        }

        len += part[i].len;
    }

    return len;
}


/*
 * What a message's reply says: a result (isError or not) or an error
 * and its code.  Called as each call ends, for the replies the edge made
 * itself when a variable asks, and for those mcp_pass relays.
 */

void
ngx_http_mcp_jsonrpc_outcome(ngx_http_mcp_msg_t *msg, cJSON *reply)
{
    cJSON  *error, *code, *result;

    error = ngx_http_mcp_json_get(reply, "error");

    if (error != NULL) {
        code = ngx_http_mcp_json_get(error, "code");

        msg->outcome = NGX_HTTP_MCP_OUTCOME_ERROR;
        msg->code = cJSON_IsNumber(code) ? (ngx_int_t) code->valuedouble : 0;
        return;
    }

    result = ngx_http_mcp_json_get(reply, "result");

    if (result == NULL) {
        return;
    }

    msg->outcome = cJSON_IsTrue(ngx_http_mcp_json_get(result, "isError"))
                   ? NGX_HTTP_MCP_OUTCOME_IS_ERROR
                   : NGX_HTTP_MCP_OUTCOME_OK;
}


/*
 * Whether a message may go twice: its first sending failed before any
 * byte of the reply came (a kept connection that the server's worker was
 * closing at a reload), and the server may have read it.  Harmless twice:
 * what reads (initialize, the lists: a method that ends in "/list",
 * resources/read, prompts/get, ping, completion/complete, tasks/get,
 * server/discover; the 2026-07-28 cacheable ones are among them),
 * notifications and a client's answers (a server takes an answer to its
 * request once and drops a second; a second notification tells what the
 * first told).  A tools/call is NGX_HTTP_MCP_RETRY_TOOL: harmless only
 * when its tool's annotations said so (ngx_http_mcp_jsonrpc_tool_hints()).
 * Any other request, NGX_HTTP_MCP_RETRY_NEVER, goes once.
 */

ngx_uint_t
ngx_http_mcp_jsonrpc_retry(ngx_http_mcp_msg_type_e type, ngx_str_t *method)
{
    ngx_uint_t  i;

    static ngx_str_t  reads[] = {
        ngx_string("initialize"),
        ngx_string("ping"),
        ngx_string("resources/read"),
        ngx_string("prompts/get"),
        ngx_string("completion/complete"),
        ngx_string("tasks/get"),
        ngx_string("server/discover")
    };

    if (type == NGX_HTTP_MCP_MSG_NOTIFICATION
        || type == NGX_HTTP_MCP_MSG_RESPONSE)
    {
        return NGX_HTTP_MCP_RETRY_SAFE;
    }

    if (type != NGX_HTTP_MCP_MSG_REQUEST) {
        return NGX_HTTP_MCP_RETRY_NEVER;
    }

    if (method->len > sizeof("/list") - 1
        && ngx_strncmp(method->data + method->len - (sizeof("/list") - 1),
                       "/list", sizeof("/list") - 1)
           == 0)
    {
        return NGX_HTTP_MCP_RETRY_SAFE;
    }

    for (i = 0; i < sizeof(reads) / sizeof(ngx_str_t); i++) {
        if (method->len == reads[i].len
            && ngx_strncmp(method->data, reads[i].data, method->len) == 0)
        {
            return NGX_HTTP_MCP_RETRY_SAFE;
        }
    }

    if (method->len == sizeof("tools/call") - 1
        && ngx_strncmp(method->data, "tools/call", method->len) == 0)
    {
        return NGX_HTTP_MCP_RETRY_TOOL;
    }

    return NGX_HTTP_MCP_RETRY_NEVER;
}


/* a tools/list entry's readOnlyHint and idempotentHint, when true */

ngx_uint_t
ngx_http_mcp_jsonrpc_tool_hints(cJSON *tool)
{
    cJSON       *annotations;
    ngx_uint_t   hints;

    annotations = cJSON_GetObjectItemCaseSensitive(tool, "annotations");
    hints = 0;

    if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(annotations,
                                                      "readOnlyHint")))
    {
        hints |= NGX_HTTP_MCP_TOOL_READ_ONLY;
    }

    if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(annotations,
                                                      "idempotentHint")))
    {
        hints |= NGX_HTTP_MCP_TOOL_IDEMPOTENT;
    }

    return hints;
}


/*
 * Each tool of a tools/list result that has a name: the handler keeps it
 * (NGX_OK), takes it out of the list (NGX_DECLINED: *changed), or stops
 * the walk (NGX_DONE, or NGX_ERROR returned).
 */

ngx_int_t
ngx_http_mcp_jsonrpc_tools(cJSON *result, ngx_http_mcp_tool_each_pt each,
    void *data, ngx_uint_t *changed)
{
    cJSON      *tools, *tool, *next, *name;
    ngx_int_t   rc;
    ngx_str_t   s;

    tools = cJSON_GetObjectItemCaseSensitive(result, "tools");

    if (!cJSON_IsArray(tools)) {
        return NGX_OK;
    }

    for (tool = tools->child; tool; tool = next) {
        next = tool->next;

        name = cJSON_GetObjectItemCaseSensitive(tool, "name");

        if (!cJSON_IsString(name)) {
            continue;
        }

        s.data = (u_char *) name->valuestring;
        s.len = ngx_strlen(s.data);

        rc = each(data, tool, &s);

        if (rc == NGX_DECLINED) {
            cJSON_Delete(cJSON_DetachItemViaPointer(tools, tool));
            *changed = 1;
            continue;
        }

        if (rc != NGX_OK) {
            return (rc == NGX_DONE) ? NGX_OK : NGX_ERROR;
        }
    }

    return NGX_OK;
}
