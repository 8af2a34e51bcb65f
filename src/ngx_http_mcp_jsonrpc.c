
/*
 * JSON-RPC 2.0 messages: parsing and validating a POST body, building
 * responses.  Nothing here knows about HTTP requests, so it can be unit
 * tested and fuzzed on its own.
 *
 * cJSON reads every number as a double, which loses integer ids beyond
 * 2^53.  Ids must be echoed exactly as sent, so the raw text of each
 * message's "id" member is found with a small scanner over the body and
 * echoed verbatim through cJSON_CreateRaw().
 */


#include "ngx_http_mcp_internal.h"

#include <openssl/rand.h>


static u_char *ngx_http_mcp_json_ws(u_char *p, u_char *end);
static u_char *ngx_http_mcp_json_literal(u_char *p, u_char *end);
static ngx_uint_t ngx_http_mcp_json_key_is_id(u_char *p, u_char *end);
static u_char *ngx_http_mcp_json_string(u_char *p, u_char *end);
static u_char *ngx_http_mcp_json_value(u_char *p, u_char *end,
    ngx_uint_t depth);
static u_char *ngx_http_mcp_json_object_id(u_char *p, u_char *end,
    ngx_str_t *id);
static ngx_int_t ngx_http_mcp_json_raw_ids(u_char *p, u_char *end,
    ngx_array_t *ids);
static ngx_uint_t ngx_http_mcp_json_is_integer(ngx_str_t *raw);
static void ngx_http_mcp_jsonrpc_classify(ngx_pool_t *pool,
    ngx_http_mcp_msg_t *msg, cJSON *json, ngx_str_t *raw_id);
static cJSON *ngx_http_mcp_jsonrpc_id(ngx_pool_t *pool, cJSON *id,
    ngx_str_t *raw_id);


#define NGX_HTTP_MCP_JSON_MAX_DEPTH  128


static u_char *
ngx_http_mcp_json_ws(u_char *p, u_char *end)
{
    while (p < end
           && (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n'))
    {
        p++;
    }

    return p;
}


/*
 * A number, true, false or null, checked against the JSON grammar: cJSON
 * is lenient (it takes "01"), and an id is echoed as the client wrote it,
 * so what the module echoes must be JSON.
 */

static u_char *
ngx_http_mcp_json_literal(u_char *p, u_char *end)
{
    u_char      *start;
    ngx_uint_t   i;

    static const char  *words[] = { "true", "false", "null" };

    for (i = 0; i < 3; i++) {
        if ((size_t) (end - p) >= ngx_strlen(words[i])
            && ngx_strncmp(p, words[i], ngx_strlen(words[i])) == 0)
        {
            return p + ngx_strlen(words[i]);
        }
    }

    if (p < end && *p == '-') {
        p++;
    }

    if (p == end || *p < '0' || *p > '9') {
        return NULL;
    }

    if (*p++ == '0' && p < end && *p >= '0' && *p <= '9') {
        return NULL;
    }

    while (p < end && *p >= '0' && *p <= '9') {
        p++;
    }

    if (p < end && *p == '.') {
        start = ++p;

        while (p < end && *p >= '0' && *p <= '9') {
            p++;
        }

        if (p == start) {
            return NULL;
        }
    }

    if (p < end && (*p == 'e' || *p == 'E')) {
        p++;

        if (p < end && (*p == '+' || *p == '-')) {
            p++;
        }

        start = p;

        while (p < end && *p >= '0' && *p <= '9') {
            p++;
        }

        if (p == start) {
            return NULL;
        }
    }

    return p;
}


/* a member name, escapes decoded, is "id" */

static ngx_uint_t
ngx_http_mcp_json_key_is_id(u_char *p, u_char *end)
{
    u_char      c;
    ngx_int_t   n;
    ngx_uint_t  i;

    /* p and end enclose the quotes */
    p++;
    end--;

    for (i = 0; p < end; i++) {
        c = *p++;

        if (c == '\\') {
            if (p + 5 > end || *p != 'u') {
                return 0;
            }

            n = ngx_hextoi(p + 1, 4);
            if (n == NGX_ERROR) {
                return 0;
            }

            c = (u_char) n;
            p += 5;
        }

        if (i > 1 || c != "id"[i]) {
            return 0;
        }
    }

    return i == 2;
}


/* p points at the opening quote; returns the position after the closing */

static u_char *
ngx_http_mcp_json_string(u_char *p, u_char *end)
{
    for (p++; p < end; p++) {

        if (*p == '\\') {
            p++;
            continue;
        }

        if (*p == '"') {
            return p + 1;
        }
    }

    return NULL;
}


static u_char *
ngx_http_mcp_json_value(u_char *p, u_char *end, ngx_uint_t depth)
{
    u_char  open, close;

    p = ngx_http_mcp_json_ws(p, end);

    if (p == end) {
        return NULL;
    }

    if (*p == '"') {
        return ngx_http_mcp_json_string(p, end);
    }

    if (*p != '{' && *p != '[') {
        return ngx_http_mcp_json_literal(p, end);
    }

    if (depth == NGX_HTTP_MCP_JSON_MAX_DEPTH) {
        return NULL;
    }

    open = *p;
    close = (open == '{') ? '}' : ']';

    for (p++; p < end; /* void */) {

        p = ngx_http_mcp_json_ws(p, end);

        if (p == end) {
            return NULL;
        }

        if (*p == close) {
            return p + 1;
        }

        if (*p == ',' || *p == ':') {
            p++;
            continue;
        }

        p = ngx_http_mcp_json_value(p, end, depth + 1);
        if (p == NULL) {
            return NULL;
        }
    }

    return NULL;
}


/*
 * p points at '{'; sets id to the raw text of the first "id" member, or
 * leaves it empty; returns the position after the object.
 */

static u_char *
ngx_http_mcp_json_object_id(u_char *p, u_char *end, ngx_str_t *id)
{
    u_char  *key, *key_end, *value;

    for (p++; p < end; /* void */) {

        p = ngx_http_mcp_json_ws(p, end);

        if (p == end) {
            return NULL;
        }

        if (*p == '}') {
            return p + 1;
        }

        if (*p == ',') {
            p++;
            continue;
        }

        if (*p != '"') {
            return NULL;
        }

        key = p;
        key_end = ngx_http_mcp_json_string(p, end);
        if (key_end == NULL) {
            return NULL;
        }

        p = ngx_http_mcp_json_ws(key_end, end);
        if (p == end || *p != ':') {
            return NULL;
        }

        value = ngx_http_mcp_json_ws(p + 1, end);

        p = ngx_http_mcp_json_value(value, end, 1);
        if (p == NULL) {
            return NULL;
        }

        if (id->data == NULL && ngx_http_mcp_json_key_is_id(key, key_end)) {
            id->data = value;
            id->len = p - value;
        }
    }

    return NULL;
}


/* one ngx_str_t per message: the raw id text, or an empty string */

static ngx_int_t
ngx_http_mcp_json_raw_ids(u_char *p, u_char *end, ngx_array_t *ids)
{
    ngx_str_t  *id;

    p = ngx_http_mcp_json_ws(p, end);

    if (p < end && *p == '{') {
        id = ngx_array_push(ids);
        if (id == NULL) {
            return NGX_ERROR;
        }

        ngx_str_null(id);

        p = ngx_http_mcp_json_object_id(p, end, id);

        /* nothing but white space may follow the message */
        return (p != NULL && ngx_http_mcp_json_ws(p, end) == end)
               ? NGX_OK : NGX_ERROR;
    }

    if (p == end || *p != '[') {
        p = ngx_http_mcp_json_value(p, end, 0);

        return (p != NULL && ngx_http_mcp_json_ws(p, end) == end)
               ? NGX_OK : NGX_ERROR;
    }

    for (p++; p < end; /* void */) {

        p = ngx_http_mcp_json_ws(p, end);

        if (p == end) {
            return NGX_ERROR;
        }

        if (*p == ']') {
            return (ngx_http_mcp_json_ws(p + 1, end) == end) ? NGX_OK
                                                             : NGX_ERROR;
        }

        if (*p == ',') {
            p++;
            continue;
        }

        id = ngx_array_push(ids);
        if (id == NULL) {
            return NGX_ERROR;
        }

        ngx_str_null(id);

        if (*p == '{') {
            p = ngx_http_mcp_json_object_id(p, end, id);

        } else {
            p = ngx_http_mcp_json_value(p, end, 1);
        }

        if (p == NULL) {
            return NGX_ERROR;
        }
    }

    return NGX_ERROR;
}


static ngx_uint_t
ngx_http_mcp_json_is_integer(ngx_str_t *raw)
{
    size_t   i;

    i = (raw->len > 0 && raw->data[0] == '-') ? 1 : 0;

    if (i == raw->len) {
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
 * the body is not JSON (or not an object or array of messages), and
 * NGX_ERROR on allocation failure.  *root must be freed by the caller
 * with cJSON_Delete(), as must each message's id.
 */

ngx_int_t
ngx_http_mcp_jsonrpc_parse(ngx_pool_t *pool, u_char *body, size_t len,
    cJSON **root, ngx_array_t *msgs, ngx_uint_t *batch)
{
    cJSON               *json, *item;
    ngx_str_t           *raw;
    ngx_uint_t           i, n;
    ngx_array_t          ids;
    ngx_http_mcp_msg_t  *msg;

    *root = NULL;
    *batch = 0;

    if (ngx_array_init(&ids, pool, 1, sizeof(ngx_str_t)) != NGX_OK) {
        return NGX_ERROR;
    }

    /* the scanner is strict where cJSON is not: trailing bytes, "01" */
    if (ngx_http_mcp_json_raw_ids(body, body + len, &ids) != NGX_OK) {
        return NGX_DECLINED;
    }

    json = cJSON_ParseWithLength((const char *) body, len);
    if (json == NULL) {
        return NGX_DECLINED;
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

    id = cJSON_GetObjectItemCaseSensitive(json, "id");

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

    version = cJSON_GetObjectItemCaseSensitive(json, "jsonrpc");

    if (!cJSON_IsString(version)
        || ngx_strcmp(version->valuestring, "2.0") != 0)
    {
        msg->error = "\"jsonrpc\" must be \"2.0\"";
        return;
    }

    method = cJSON_GetObjectItemCaseSensitive(json, "method");

    if (method != NULL) {
        if (!cJSON_IsString(method) || method->valuestring[0] == '\0') {
            msg->error = "\"method\" must be a non-empty string";
            return;
        }

        params = cJSON_GetObjectItemCaseSensitive(json, "params");

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

    result = cJSON_GetObjectItemCaseSensitive(json, "result");
    error = cJSON_GetObjectItemCaseSensitive(json, "error");

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


u_char *
ngx_http_mcp_jsonrpc_print(ngx_pool_t *pool, cJSON *json, size_t *len)
{
    char    *text;
    u_char  *p;

    text = cJSON_PrintUnformatted(json);
    if (text == NULL) {
        return NULL;
    }

    *len = ngx_strlen(text);

    p = ngx_pnalloc(pool, *len);
    if (p != NULL) {
        ngx_memcpy(p, text, *len);
    }

    cJSON_free(text);

    return p;
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


/*
 * The raw text of a number that is the value of member "key" somewhere in
 * body and equals value: a token beyond 2^53 is echoed as the client wrote
 * it, not as cJSON's double.  NULL: not found.
 */

u_char *
ngx_http_mcp_json_raw_number(ngx_str_t *body, const char *key, double value,
    size_t *len)
{
    u_char  *p, *end, *start;
    size_t   klen;

    klen = ngx_strlen(key);
    p = body->data;
    end = body->data + body->len;

    while (p < end) {
        p = ngx_strlcasestrn(p, end, (u_char *) key, klen - 1);

        if (p == NULL) {
            return NULL;
        }

        start = p;
        p += klen;

        if (start == body->data || start[-1] != '"' || p >= end || *p != '"')
        {
            continue;
        }

        p = ngx_http_mcp_json_ws(p + 1, end);

        if (p == end || *p != ':') {
            continue;
        }

        start = ngx_http_mcp_json_ws(p + 1, end);
        p = ngx_http_mcp_json_literal(start, end);

        if (p == NULL || p == start || (*start != '-' && *start < '0')
            || *start > '9')
        {
            p = start;
            continue;
        }

        if (strtod((char *) start, NULL) == value) {
            *len = p - start;
            return start;
        }
    }

    return NULL;
}
