
/*
 * mcp_pass, a JSON reply to a POST under the tool policy that is not held
 * for filtering (a tools/call's result may be megabytes): read as it
 * streams, not held.  The upstream is not trusted: beside the answer to
 * the client's request it may put another id's answer, a tools/list the
 * client takes by that id.  So every message of the reply (the object,
 * or each object of a top-level array) must carry the id of one of the
 * requests of the client's POST, or no id, or null (no request has it).
 *
 * A small tokenizer follows the JSON byte by byte, across reads: strings
 * and their escapes, numbers and literals (by the strict scan's grammar,
 * ngx_http_mcp_json_token(), a byte at a time), nesting, and the reply's
 * end.
 * A message's member names are compared unescaped ("\u0069d" is "id"),
 * an id by its value: a string unescaped against the request's string,
 * a number by its text, as the client wrote it (ngx_http_mcp_jsonrpc.c
 * keeps integer ids as their text).  What it cannot follow (not strict
 * JSON, over NGX_HTTP_MCP_JSONGUARD_DEPTH deep, an id longer than any
 * of the POST's could be written), an "id" twice in a message (a
 * client takes the last), a foreign id: NGX_DECLINED, and the reply is
 * cut.  The reply's last byte, where its JSON ends, and what follows it
 * are held until the body ended: a client never holds a whole JSON text
 * that was not read through.
 */


#include "ngx_http_mcp_jsonguard.h"
#include "ngx_http_mcp_json.h"
#include "ngx_http_mcp_jsonrpc.h"


enum {
    NGX_HTTP_MCP_JG_START = 0,
    NGX_HTTP_MCP_JG_BOM,
    NGX_HTTP_MCP_JG_VALUE,
    NGX_HTTP_MCP_JG_VALUE_OR_END,
    NGX_HTTP_MCP_JG_NAME_OR_END,
    NGX_HTTP_MCP_JG_NAME,
    NGX_HTTP_MCP_JG_COLON,
    NGX_HTTP_MCP_JG_AFTER,
    NGX_HTTP_MCP_JG_STRING,
    NGX_HTTP_MCP_JG_ESCAPE,
    NGX_HTTP_MCP_JG_UNICODE,
    NGX_HTTP_MCP_JG_TOKEN,
    NGX_HTTP_MCP_JG_DONE
};

#define NGX_HTTP_MCP_JG_NONE  0
#define NGX_HTTP_MCP_JG_KEY   1
#define NGX_HTTP_MCP_JG_ID    2


static ngx_int_t ngx_http_mcp_jsonguard_byte(ngx_http_mcp_jsonguard_t *g,
    u_char c, const char **error);
static ngx_int_t ngx_http_mcp_jsonguard_token(ngx_http_mcp_jsonguard_t *g,
    u_char c, const char **error);
static ngx_int_t ngx_http_mcp_jsonguard_value(ngx_http_mcp_jsonguard_t *g,
    u_char c, const char **error);
static ngx_int_t ngx_http_mcp_jsonguard_open(ngx_http_mcp_jsonguard_t *g,
    ngx_uint_t object, const char **error);
static ngx_int_t ngx_http_mcp_jsonguard_close(ngx_http_mcp_jsonguard_t *g,
    ngx_uint_t object, const char **error);
static ngx_int_t ngx_http_mcp_jsonguard_value_end(
    ngx_http_mcp_jsonguard_t *g, const char **error);
static ngx_int_t ngx_http_mcp_jsonguard_keep(ngx_http_mcp_jsonguard_t *g,
    u_char c, const char **error);
static ngx_int_t ngx_http_mcp_jsonguard_name(ngx_http_mcp_jsonguard_t *g,
    const char **error);
static ngx_int_t ngx_http_mcp_jsonguard_id(ngx_http_mcp_jsonguard_t *g,
    const char **error);


#define ngx_http_mcp_jg_space(c)                                              \
    ((c) == ' ' || (c) == '\t' || (c) == '\n' || (c) == '\r')

#define ngx_http_mcp_jg_digit(c)  ((c) >= '0' && (c) <= '9')


/*
 * A guard for the reply to the POST of msgs.  An id is kept as it comes,
 * escapes and all, so its room is what the longest of the POST's ids
 * takes with each of its bytes written as a \u escape (six), and its
 * quotes; never less than a token.
 */

ngx_int_t
ngx_http_mcp_jsonguard_init(ngx_http_mcp_jsonguard_t *g, ngx_pool_t *pool,
    ngx_array_t *msgs)
{
    size_t               max;
    cJSON               *id;
    ngx_uint_t           i;
    ngx_http_mcp_msg_t  *msg;

    ngx_memzero(g, sizeof(ngx_http_mcp_jsonguard_t));
    g->msgs = msgs;

    max = 0;
    msg = msgs->elts;

    for (i = 0; i < msgs->nelts; i++) {
        id = msg[i].id;

        if (msg[i].type == NGX_HTTP_MCP_MSG_REQUEST && id != NULL
            && id->valuestring != NULL)
        {
            max = ngx_max(max, ngx_strlen(id->valuestring));
        }
    }

    g->tok_size = ngx_max(NGX_HTTP_MCP_JSONGUARD_TOKEN, 6 * max + 2);

    g->tok = ngx_pnalloc(pool, 2 * g->tok_size);
    if (g->tok == NULL) {
        return NGX_ERROR;
    }

    g->value = g->tok + g->tok_size;

    return NGX_OK;
}


/*
 * The body's bytes [pos, last): NGX_OK and *send, how many of them go to
 * the client now (the rest, from the JSON's last byte on, is held in
 * g->tail); NGX_DECLINED and *error: the reply is cut before them.
 */

ngx_int_t
ngx_http_mcp_jsonguard_read(ngx_http_mcp_jsonguard_t *g, u_char *pos,
    u_char *last, size_t *send, const char **error)
{
    u_char     *p;
    ngx_int_t   rc;

    *send = (g->state == NGX_HTTP_MCP_JG_DONE) ? 0 : (size_t) (last - pos);

    if (pos < last) {
        g->seen = 1;
    }

    for (p = pos; p < last; /* void */) {

        if (g->state == NGX_HTTP_MCP_JG_STRING
            && g->capture == NGX_HTTP_MCP_JG_NONE)
        {
            /* a string's text, the most of a large result, at once */
            while (p < last && *p != '"' && *p != '\\' && *p >= 0x20) {
                p++;
            }

            if (p == last) {
                break;
            }
        }

        if (g->state == NGX_HTTP_MCP_JG_DONE) {
            if (g->tail_len == NGX_HTTP_MCP_JSONGUARD_TOKEN) {
                *error = "too many bytes after the JSON";
                return NGX_DECLINED;
            }

            g->tail[g->tail_len++] = *p;
        }

        rc = ngx_http_mcp_jsonguard_byte(g, *p, error);

        if (rc == NGX_DECLINED) {
            return NGX_DECLINED;
        }

        if (rc == NGX_AGAIN) {
            /* a number ended before this byte: it is read again */
            continue;
        }

        if (g->state == NGX_HTTP_MCP_JG_DONE && g->tail_len == 0) {
            /* the JSON's last byte: held, with all after it */
            *send = p - pos;
            g->tail[g->tail_len++] = *p;
        }

        p++;
    }

    return NGX_OK;
}


/* the body ended: NGX_OK if its JSON ended (or it had no byte at all) */

ngx_int_t
ngx_http_mcp_jsonguard_end(ngx_http_mcp_jsonguard_t *g, const char **error)
{
    if (!g->seen || g->state == NGX_HTTP_MCP_JG_DONE) {
        return NGX_OK;
    }

    *error = "the reply ended before its JSON did";

    return NGX_DECLINED;
}


/* NGX_OK: the byte is read; NGX_AGAIN: read it again; NGX_DECLINED */

static ngx_int_t
ngx_http_mcp_jsonguard_byte(ngx_http_mcp_jsonguard_t *g, u_char c,
    const char **error)
{
    static u_char  bom[] = "\xef\xbb\xbf";

    switch (g->state) {

    case NGX_HTTP_MCP_JG_START:
        if (c == bom[0]) {
            /* one BOM, as a fetch() client drops it */
            g->state = NGX_HTTP_MCP_JG_BOM;
            g->n = 1;
            return NGX_OK;
        }

        g->state = NGX_HTTP_MCP_JG_VALUE;
        return NGX_AGAIN;

    case NGX_HTTP_MCP_JG_BOM:
        if (c != bom[g->n]) {
            break;
        }

        if (++g->n == 3) {
            g->state = NGX_HTTP_MCP_JG_VALUE;
        }

        return NGX_OK;

    case NGX_HTTP_MCP_JG_VALUE_OR_END:
        if (c == ']') {
            return ngx_http_mcp_jsonguard_close(g, 0, error);
        }

        /* fall through */

    case NGX_HTTP_MCP_JG_VALUE:
        if (ngx_http_mcp_jg_space(c)) {
            return NGX_OK;
        }

        return ngx_http_mcp_jsonguard_value(g, c, error);

    case NGX_HTTP_MCP_JG_NAME_OR_END:
        if (c == '}') {
            return ngx_http_mcp_jsonguard_close(g, 1, error);
        }

        /* fall through */

    case NGX_HTTP_MCP_JG_NAME:
        if (ngx_http_mcp_jg_space(c)) {
            return NGX_OK;
        }

        if (c != '"') {
            break;
        }

        if (g->depth == g->msg_depth) {
            /* a member of a message */
            g->capture = NGX_HTTP_MCP_JG_KEY;
            g->tok_len = 0;
            g->long_name = 0;
        }

        g->after = NGX_HTTP_MCP_JG_COLON;
        g->state = NGX_HTTP_MCP_JG_STRING;
        return NGX_OK;

    case NGX_HTTP_MCP_JG_COLON:
        if (ngx_http_mcp_jg_space(c)) {
            return NGX_OK;
        }

        if (c != ':') {
            break;
        }

        g->state = NGX_HTTP_MCP_JG_VALUE;
        return NGX_OK;

    case NGX_HTTP_MCP_JG_AFTER:
        if (ngx_http_mcp_jg_space(c)) {
            return NGX_OK;
        }

        if (c == ',') {
            g->state = (g->stack[(g->depth - 1) / 8]
                        & (1 << ((g->depth - 1) % 8)))
                       ? NGX_HTTP_MCP_JG_NAME : NGX_HTTP_MCP_JG_VALUE;
            return NGX_OK;
        }

        if (c == '}' || c == ']') {
            return ngx_http_mcp_jsonguard_close(g, c == '}', error);
        }

        break;

    case NGX_HTTP_MCP_JG_STRING:
        if (c == '"') {
            if (g->capture == NGX_HTTP_MCP_JG_KEY) {
                g->capture = NGX_HTTP_MCP_JG_NONE;

                if (ngx_http_mcp_jsonguard_name(g, error) != NGX_OK) {
                    return NGX_DECLINED;
                }
            }

            if (g->after == NGX_HTTP_MCP_JG_COLON) {
                g->state = NGX_HTTP_MCP_JG_COLON;
                return NGX_OK;
            }

            if (ngx_http_mcp_jsonguard_keep(g, c, error) != NGX_OK) {
                return NGX_DECLINED;
            }

            return ngx_http_mcp_jsonguard_value_end(g, error);
        }

        if (c < 0x20) {
            break;
        }

        if (c == '\\') {
            g->state = NGX_HTTP_MCP_JG_ESCAPE;
        }

        return ngx_http_mcp_jsonguard_keep(g, c, error);

    case NGX_HTTP_MCP_JG_ESCAPE:
        if (c == 'u') {
            g->n = 0;
            g->state = NGX_HTTP_MCP_JG_UNICODE;

        } else if (ngx_strchr("\"\\/bfnrt", c) != NULL && c != '\0') {
            g->state = NGX_HTTP_MCP_JG_STRING;

        } else {
            break;
        }

        return ngx_http_mcp_jsonguard_keep(g, c, error);

    case NGX_HTTP_MCP_JG_UNICODE:
        if (!ngx_http_mcp_jg_digit(c)
            && !((c | 0x20) >= 'a' && (c | 0x20) <= 'f'))
        {
            break;
        }

        if (++g->n == 4) {
            g->state = NGX_HTTP_MCP_JG_STRING;
        }

        return ngx_http_mcp_jsonguard_keep(g, c, error);

    case NGX_HTTP_MCP_JG_TOKEN:
        return ngx_http_mcp_jsonguard_token(g, c, error);

    case NGX_HTTP_MCP_JG_DONE:
        if (ngx_http_mcp_jg_space(c)) {
            return NGX_OK;
        }

        *error = "bytes after the JSON";
        return NGX_DECLINED;
    }

    *error = "not strict JSON";

    return NGX_DECLINED;
}


/*
 * A number's or literal's next byte, by the scan's grammar
 * (ngx_http_mcp_json_token()); or the byte after it: NGX_AGAIN.
 */

static ngx_int_t
ngx_http_mcp_jsonguard_token(ngx_http_mcp_jsonguard_t *g, u_char c,
    const char **error)
{
    g->n = ngx_http_mcp_json_token(g->n, c);

    if (g->n == NGX_HTTP_MCP_JSON_TOKEN_BAD) {
        *error = "not strict JSON";
        return NGX_DECLINED;
    }

    if (g->n == NGX_HTTP_MCP_JSON_TOKEN_END) {
        /* a token is never the whole reply: it is in a message */
        return ngx_http_mcp_jsonguard_value_end(g, error) == NGX_OK
               ? NGX_AGAIN : NGX_DECLINED;
    }

    return ngx_http_mcp_jsonguard_keep(g, c, error);
}


/* a value's first byte */

static ngx_int_t
ngx_http_mcp_jsonguard_value(ngx_http_mcp_jsonguard_t *g, u_char c,
    const char **error)
{
    if (g->id_next) {
        g->id_next = 0;
        g->capture = NGX_HTTP_MCP_JG_ID;
        g->tok_len = 0;

        if (c == '{' || c == '[') {
            *error = "a message's \"id\" is no string or number";
            return NGX_DECLINED;
        }
    }

    if (c == '{' || c == '[') {
        return ngx_http_mcp_jsonguard_open(g, c == '{', error);
    }

    if (g->depth == 0 || g->depth + 1 == g->msg_depth) {
        *error = "no JSON-RPC message";
        return NGX_DECLINED;
    }

    if (c == '"') {
        g->after = NGX_HTTP_MCP_JG_VALUE;
        g->state = NGX_HTTP_MCP_JG_STRING;

        return ngx_http_mcp_jsonguard_keep(g, c, error);
    }

    /* a number, true, false or null: anything else is refused here */
    g->n = NGX_HTTP_MCP_JSON_TOKEN;
    g->state = NGX_HTTP_MCP_JG_TOKEN;

    return ngx_http_mcp_jsonguard_token(g, c, error);
}


/* "{" or "[": the reply's, a message's, or one inside */

static ngx_int_t
ngx_http_mcp_jsonguard_open(ngx_http_mcp_jsonguard_t *g, ngx_uint_t object,
    const char **error)
{
    if (g->depth == 0) {
        /* an object is a message; an array holds them */
        g->msg_depth = object ? 1 : 2;

    } else if (g->depth + 1 == g->msg_depth && !object) {
        *error = "no JSON-RPC message";
        return NGX_DECLINED;
    }

    if (g->depth == NGX_HTTP_MCP_JSONGUARD_DEPTH) {
        *error = "nested too deeply";
        return NGX_DECLINED;
    }

    if (object) {
        g->stack[g->depth / 8] |= (u_char) (1 << (g->depth % 8));

    } else {
        g->stack[g->depth / 8] &= (u_char) ~(1 << (g->depth % 8));
    }

    g->depth++;

    if (g->depth == g->msg_depth) {
        g->id_seen = 0;
    }

    g->state = object ? NGX_HTTP_MCP_JG_NAME_OR_END
                      : NGX_HTTP_MCP_JG_VALUE_OR_END;

    return NGX_OK;
}


static ngx_int_t
ngx_http_mcp_jsonguard_close(ngx_http_mcp_jsonguard_t *g, ngx_uint_t object,
    const char **error)
{
    ngx_uint_t  top;

    top = (g->stack[(g->depth - 1) / 8] >> ((g->depth - 1) % 8)) & 1;

    if (top != object) {
        *error = "not strict JSON";
        return NGX_DECLINED;
    }

    g->depth--;

    return ngx_http_mcp_jsonguard_value_end(g, error);
}


/* a value ended: an id is checked now, before any byte after it is sent */

static ngx_int_t
ngx_http_mcp_jsonguard_value_end(ngx_http_mcp_jsonguard_t *g,
    const char **error)
{
    g->state = (g->depth == 0) ? NGX_HTTP_MCP_JG_DONE
                               : NGX_HTTP_MCP_JG_AFTER;

    if (g->capture != NGX_HTTP_MCP_JG_ID) {
        return NGX_OK;
    }

    g->capture = NGX_HTTP_MCP_JG_NONE;

    return ngx_http_mcp_jsonguard_id(g, error);
}


/* a byte of a message's member name or of its id, as it came */

static ngx_int_t
ngx_http_mcp_jsonguard_keep(ngx_http_mcp_jsonguard_t *g, u_char c,
    const char **error)
{
    if (g->capture == NGX_HTTP_MCP_JG_NONE) {
        return NGX_OK;
    }

    /* names longer than the token cannot be "id"; ids as the POST's */
    if (g->tok_len < ((g->capture == NGX_HTTP_MCP_JG_KEY)
                      ? NGX_HTTP_MCP_JSONGUARD_TOKEN : g->tok_size))
    {
        g->tok[g->tok_len++] = c;
        return NGX_OK;
    }

    if (g->capture == NGX_HTTP_MCP_JG_KEY) {
        /* too long to be "id", however escaped */
        g->long_name = 1;
        return NGX_OK;
    }

    *error = "a message's \"id\" is too long";

    return NGX_DECLINED;
}


/* a message's member name was read: is it "id", and the first one? */

static ngx_int_t
ngx_http_mcp_jsonguard_name(ngx_http_mcp_jsonguard_t *g, const char **error)
{
    u_char  name[NGX_HTTP_MCP_JSONGUARD_TOKEN];

    /* unescaped as the module's scan reads a name (NGX_ERROR: no name) */
    if (g->long_name
        || ngx_http_mcp_json_decode(g->tok, g->tok_len, name) != 2
        || name[0] != 'i' || name[1] != 'd')
    {
        return NGX_OK;
    }

    if (g->id_seen) {
        *error = "\"id\" twice in a message";
        return NGX_DECLINED;
    }

    g->id_seen = 1;
    g->id_next = 1;

    return NGX_OK;
}


/*
 * A message's id: null (no request has it), or the id of one of the
 * POST's requests.  A string is compared unescaped, as the client reads
 * it; an integer by its digits, as the client wrote them.
 */

static ngx_int_t
ngx_http_mcp_jsonguard_id(ngx_http_mcp_jsonguard_t *g, const char **error)
{
    u_char              *raw, *value;
    size_t               len;
    cJSON               *id;
    ssize_t              n;
    ngx_uint_t           i, string;
    ngx_http_mcp_msg_t  *msg;

    raw = g->tok;
    len = g->tok_len;
    value = g->value;

    if (len == 4 && ngx_strncmp(raw, "null", 4) == 0) {
        return NGX_OK;
    }

    string = (raw[0] == '"');

    n = 0;

    if (string) {
        n = ngx_http_mcp_json_decode(raw + 1, len - 2, value);

        if (n == NGX_ERROR) {
            /* no request's id: a client's strict JSON has no such string */
            n = 0;
            string = 2;
        }
    }

    msg = g->msgs->elts;

    for (i = 0; i < g->msgs->nelts; i++) {
        id = msg[i].id;

        if (msg[i].type != NGX_HTTP_MCP_MSG_REQUEST || id == NULL) {
            continue;
        }

        if (string == 1 && cJSON_IsString(id)
            && ngx_strlen(id->valuestring) == (size_t) n
            && ngx_memcmp(id->valuestring, value, n) == 0)
        {
            return NGX_OK;
        }

        if (string == 0 && cJSON_IsRaw(id)
            && ngx_strlen(id->valuestring) == len
            && ngx_memcmp(id->valuestring, raw, len) == 0)
        {
            return NGX_OK;
        }
    }

    *error = "a message for another request";

    return NGX_DECLINED;
}


