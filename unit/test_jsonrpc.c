
/*
 * Unit tests of src/ngx_http_mcp_jsonrpc.c: messages and batches as the
 * transport sees them, the strict scan's refusals (each with its
 * reason), ids echoed as the client wrote them, and the replies built
 * and printed.
 */


#include <ngx_config.h>
#include <ngx_core.h>

#include "ngx_http_mcp_jsonrpc.h"
#include "ngx_http_mcp_json.h"
#include "ngx_shim.h"
#include "unit.h"

#if defined __SANITIZE_ADDRESS__
#define NGX_UNIT_ASAN  1
#elif defined __has_feature
#if __has_feature(address_sanitizer)
#define NGX_UNIT_ASAN  1
#endif
#endif

#if (NGX_UNIT_ASAN)
/* ASan's, as <sanitizer/allocator_interface.h> declares it (clang's) */
size_t __sanitizer_get_allocated_size(const volatile void *p);
#endif


typedef struct {
    ngx_int_t            rc;
    cJSON               *root;
    ngx_array_t          msgs;
    ngx_uint_t           batch;
    const char          *error;
} ngx_unit_parse_t;


static ngx_int_t ngx_unit_parse_len(ngx_unit_parse_t *p, const char *body,
    size_t len);
static ngx_int_t ngx_unit_parse(ngx_unit_parse_t *p, const char *body);
static ngx_http_mcp_msg_t *ngx_unit_msg(ngx_unit_parse_t *p, ngx_uint_t i);
static void ngx_unit_parse_free(ngx_unit_parse_t *p);
static char *ngx_unit_print(cJSON *json);
static char *ngx_unit_echo(ngx_http_mcp_msg_t *msg);
static void ngx_unit_refused(const char *body, const char *error,
    const char *name);
static void ngx_unit_accepted(const char *body, const char *name);
static void test_messages(void);
static void test_ids(void);
static void test_invalid_messages(void);
static void test_batches(void);
static void test_strict(void);
static void test_string_runs(void);
static void test_decode(void);
static void test_numbers(void);
static void ngx_unit_numbers_as_cjson(void);
static void test_replies(void);
static ngx_uint_t ngx_unit_prints_as_cjson(cJSON *json, const char *name);
#if (NGX_UNIT_ASAN)
static ngx_uint_t ngx_unit_has_numbers(cJSON *json);
#endif
static ngx_uint_t ngx_unit_string_prints(const char *s, size_t len,
    ngx_uint_t two);
static void test_print_strings(void);
static void test_print_many(void);
static cJSON *ngx_unit_edge_item(ngx_uint_t kind);
static void test_print_edges(void);
static void test_helpers(void);
static void test_retry(void);


static ngx_pool_t  *pool;


NGX_UNIT_MAIN("test_jsonrpc", test_messages, test_ids, test_invalid_messages,
              test_batches, test_strict, test_string_runs, test_decode,
              test_numbers, test_replies, test_print_strings, test_print_many,
              test_print_edges, test_helpers, test_retry)


/* an exact-size copy of the body: a read past it is an ASan report */

static ngx_int_t
ngx_unit_parse_len(ngx_unit_parse_t *p, const char *body, size_t len)
{
    u_char  *copy;

    ngx_memzero(p, sizeof(ngx_unit_parse_t));

    copy = ngx_pnalloc(pool, len);
    if (copy == NULL
        || ngx_array_init(&p->msgs, pool, 1, sizeof(ngx_http_mcp_msg_t))
           != NGX_OK)
    {
        p->rc = NGX_ERROR;
        return p->rc;
    }

    ngx_memcpy(copy, body, len);

    p->rc = ngx_http_mcp_jsonrpc_parse(pool, copy, len, &p->root, &p->msgs,
                                       &p->batch, &p->error);
    return p->rc;
}


static ngx_int_t
ngx_unit_parse(ngx_unit_parse_t *p, const char *body)
{
    return ngx_unit_parse_len(p, body, strlen(body));
}


static ngx_http_mcp_msg_t *
ngx_unit_msg(ngx_unit_parse_t *p, ngx_uint_t i)
{
    static ngx_http_mcp_msg_t  none;

    if (i >= p->msgs.nelts) {
        ngx_memzero(&none, sizeof(ngx_http_mcp_msg_t));
        none.error = "(no such message)";
        return &none;
    }

    return (ngx_http_mcp_msg_t *) p->msgs.elts + i;
}


static void
ngx_unit_parse_free(ngx_unit_parse_t *p)
{
    ngx_uint_t           i;
    ngx_http_mcp_msg_t  *msg;

    msg = p->msgs.elts;

    for (i = 0; i < p->msgs.nelts; i++) {
        cJSON_Delete(msg[i].id);
    }

    cJSON_Delete(p->root);
    p->root = NULL;
    p->msgs.nelts = 0;
}


/* the printed text, NUL-terminated, in the pool; frees the tree */

static char *
ngx_unit_print(cJSON *json)
{
    u_char  *text, *s;
    size_t   len;

    if (json == NULL) {
        return NULL;
    }

    text = ngx_http_mcp_json_print(pool, json, &len);
    cJSON_Delete(json);

    if (text == NULL) {
        return NULL;
    }

    s = ngx_pnalloc(pool, len + 1);
    if (s == NULL) {
        return NULL;
    }

    *ngx_cpymem(s, text, len) = '\0';

    return (char *) s;
}


/* the id of a message as its reply echoes it */

static char *
ngx_unit_echo(ngx_http_mcp_msg_t *msg)
{
    char   *text, *start, *end;
    cJSON  *reply;

    reply = ngx_http_mcp_jsonrpc_result(msg->id, cJSON_CreateObject());

    text = ngx_unit_print(reply);
    if (text == NULL) {
        return NULL;
    }

    /* {"jsonrpc":"2.0","id":<id>,"result":{}} */
    start = strstr(text, "\"id\":");
    end = strstr(text, ",\"result\":{}}");

    if (start == NULL || end == NULL || end < start + 5) {
        return text;
    }

    *end = '\0';

    return start + 5;
}


static void
ngx_unit_refused(const char *body, const char *error, const char *name)
{
    ngx_unit_parse_t  p;

    ngx_unit_parse(&p, body);

    if (!CHECK(p.rc == NGX_DECLINED && p.root == NULL && p.msgs.nelts == 0
               && ngx_unit_streq(p.error, error), name))
    {
        printf("#   got rc %d, error \"%s\"; want NGX_DECLINED, \"%s\"\n",
               (int) p.rc, p.error ? p.error : "(null)",
               error ? error : "(null)");
    }

    ngx_unit_parse_free(&p);
}


static void
ngx_unit_accepted(const char *body, const char *name)
{
    ngx_unit_parse_t  p;

    ngx_unit_parse(&p, body);
    CHECK(p.rc == NGX_OK && p.msgs.nelts == 1
          && ngx_unit_msg(&p, 0)->type == NGX_HTTP_MCP_MSG_REQUEST, name);
    ngx_unit_parse_free(&p);
}


static void
test_messages(void)
{
    cJSON               *x;
    ngx_unit_parse_t     p;
    ngx_http_mcp_msg_t  *m;

    ngx_unit_parse(&p, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}");
    m = ngx_unit_msg(&p, 0);
    CHECK_INT(p.rc, NGX_OK, "request: NGX_OK");
    CHECK_INT(p.batch, 0, "request: not a batch");
    CHECK_INT(p.msgs.nelts, 1, "request: one message");
    CHECK_INT(m->type, NGX_HTTP_MCP_MSG_REQUEST, "request: a request");
    CHECK_MEM(m->method.data, m->method.len, "ping", "request: method");
    CHECK(m->params == NULL && m->error == NULL,
          "request: no params, no error");
    CHECK(m->json == p.root, "request: the message is the root");
    CHECK_STR(ngx_unit_echo(m), "1", "request: id 1 echoed");
    ngx_unit_parse_free(&p);

    ngx_unit_parse(&p, " \r\n\t{\"method\":\"tools/call\",\"params\":"
                   "{\"name\":\"x\",\"arguments\":{\"a\":[1,2]}},"
                   "\"jsonrpc\":\"2.0\",\"id\":\"abc\"} \n");
    m = ngx_unit_msg(&p, 0);
    CHECK_INT(m->type, NGX_HTTP_MCP_MSG_REQUEST,
              "white space around, members in any order: a request");
    x = cJSON_GetObjectItemCaseSensitive(m->params, "name");
    CHECK(cJSON_IsString(x) && strcmp(x->valuestring, "x") == 0,
          "request: params.name");
    CHECK_STR(ngx_unit_echo(m), "\"abc\"", "request: string id echoed");
    ngx_unit_parse_free(&p);

    ngx_unit_parse(&p, "{\"jsonrpc\":\"2.0\","
                   "\"method\":\"notifications/initialized\"}");
    m = ngx_unit_msg(&p, 0);
    CHECK_INT(m->type, NGX_HTTP_MCP_MSG_NOTIFICATION,
              "no id: a notification");
    CHECK(m->id == NULL, "notification: no id");
    CHECK_MEM(m->method.data, m->method.len, "notifications/initialized",
              "notification: method");
    ngx_unit_parse_free(&p);

    ngx_unit_parse(&p, "{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{}}");
    CHECK_INT(ngx_unit_msg(&p, 0)->type, NGX_HTTP_MCP_MSG_RESPONSE,
              "id and result: a response");
    ngx_unit_parse_free(&p);

    ngx_unit_parse(&p, "{\"jsonrpc\":\"2.0\",\"id\":7,"
                   "\"error\":{\"code\":-1,\"message\":\"no\"}}");
    CHECK_INT(ngx_unit_msg(&p, 0)->type, NGX_HTTP_MCP_MSG_RESPONSE,
              "id and error: a response");
    ngx_unit_parse_free(&p);
}


static void
test_ids(void)
{
    ngx_unit_parse_t     p;
    ngx_http_mcp_msg_t  *m;

    /* beyond 2^64: a double would print 1.2345678901234568e+22 */
    ngx_unit_parse(&p, "{\"jsonrpc\":\"2.0\",\"id\":12345678901234567890123,"
                   "\"method\":\"ping\"}");
    m = ngx_unit_msg(&p, 0);
    CHECK_INT(m->type, NGX_HTTP_MCP_MSG_REQUEST, "id beyond 2^64: accepted");
    CHECK_STR(ngx_unit_echo(m), "12345678901234567890123",
              "id beyond 2^64: echoed digit for digit");
    ngx_unit_parse_free(&p);

    ngx_unit_parse(&p, "{\"jsonrpc\":\"2.0\",\"id\":9007199254740993,"
                   "\"method\":\"ping\"}");
    CHECK_STR(ngx_unit_echo(ngx_unit_msg(&p, 0)), "9007199254740993",
              "id 2^53 + 1: echoed exactly");
    ngx_unit_parse_free(&p);

    ngx_unit_parse(&p, "{\"jsonrpc\":\"2.0\",\"id\":-42,\"method\":\"ping\"}");
    CHECK_STR(ngx_unit_echo(ngx_unit_msg(&p, 0)), "-42",
              "negative id echoed");
    ngx_unit_parse_free(&p);

    ngx_unit_parse(&p, "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"ping\"}");
    CHECK_STR(ngx_unit_echo(ngx_unit_msg(&p, 0)), "0", "id 0 echoed");
    ngx_unit_parse_free(&p);

    /* the raw id is found by the unescaped name */
    ngx_unit_parse(&p, "{\"jsonrpc\":\"2.0\","
                   "\"\\u0069d\":18446744073709551617,\"method\":\"ping\"}");
    m = ngx_unit_msg(&p, 0);
    CHECK_INT(m->type, NGX_HTTP_MCP_MSG_REQUEST,
              "escaped \"id\" name: a request");
    CHECK_STR(ngx_unit_echo(m), "18446744073709551617",
              "escaped \"id\" name: the raw id echoed");
    ngx_unit_parse_free(&p);

    /* the id of params is not the message's */
    ngx_unit_parse(&p, "{\"jsonrpc\":\"2.0\",\"params\":{\"id\":5},"
                   "\"method\":\"ping\",\"id\":6}");
    CHECK_STR(ngx_unit_echo(ngx_unit_msg(&p, 0)), "6",
              "an \"id\" inside params is not taken for the message's");
    ngx_unit_parse_free(&p);

    ngx_unit_parse(&p, "{\"jsonrpc\":\"2.0\",\"id\":\"\\u00e9\\n\","
                   "\"method\":\"ping\"}");
    CHECK_STR(ngx_unit_echo(ngx_unit_msg(&p, 0)), "\"\xc3\xa9\\n\"",
              "string id with escapes echoed as JSON");
    ngx_unit_parse_free(&p);
}


static void
test_invalid_messages(void)
{
    ngx_uint_t           i;
    ngx_unit_parse_t     p;
    ngx_http_mcp_msg_t  *m;

    static const struct {
        const char  *body;
        const char  *error;
        const char  *id;            /* echoed in the error reply */
        const char  *name;
    } cases[] = {
        { "{\"jsonrpc\":\"2.0\",\"id\":-0,\"method\":\"ping\"}",
          "\"id\" must be a string or an integer", NULL,
          "id -0 refused" },
        { "{\"jsonrpc\":\"2.0\",\"id\":1.5,\"method\":\"ping\"}",
          "\"id\" must be a string or an integer", NULL,
          "id 1.5 refused" },
        { "{\"jsonrpc\":\"2.0\",\"id\":1e3,\"method\":\"ping\"}",
          "\"id\" must be a string or an integer", NULL,
          "id 1e3 refused" },
        { "{\"jsonrpc\":\"2.0\",\"id\":1.0,\"method\":\"ping\"}",
          "\"id\" must be a string or an integer", NULL,
          "id 1.0 refused" },
        { "{\"jsonrpc\":\"2.0\",\"id\":null,\"method\":\"ping\"}",
          "\"id\" must be a string or an integer", NULL,
          "id null refused" },
        { "{\"jsonrpc\":\"2.0\",\"id\":true,\"method\":\"ping\"}",
          "\"id\" must be a string or an integer", NULL,
          "id true refused" },
        { "{\"jsonrpc\":\"2.0\",\"id\":[1],\"method\":\"ping\"}",
          "\"id\" must be a string or an integer", NULL,
          "id [1] refused" },
        { "{\"jsonrpc\":\"1.0\",\"id\":1,\"method\":\"ping\"}",
          "\"jsonrpc\" must be \"2.0\"", "1",
          "jsonrpc 1.0 refused" },
        { "{\"id\":1,\"method\":\"ping\"}",
          "\"jsonrpc\" must be \"2.0\"", "1",
          "no jsonrpc member refused" },
        { "{\"jsonrpc\":2.0,\"id\":1,\"method\":\"ping\"}",
          "\"jsonrpc\" must be \"2.0\"", "1",
          "jsonrpc as a number refused" },
        { "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"\"}",
          "\"method\" must be a non-empty string", "1",
          "empty method refused" },
        { "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":5}",
          "\"method\" must be a non-empty string", "1",
          "method 5 refused" },
        { "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\",\"params\":[1]}",
          "\"params\" must be an object", "1",
          "params as an array refused" },
        { "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{},\"error\":{}}",
          "a response needs an \"id\" and exactly one of \"result\" and "
          "\"error\"", "1",
          "result and error refused" },
        { "{\"jsonrpc\":\"2.0\",\"result\":{}}",
          "a response needs an \"id\" and exactly one of \"result\" and "
          "\"error\"", NULL,
          "a response without id refused" },
        { "{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":\"bad\"}",
          "\"error\" must be an object", "1",
          "error as a string refused" },
        { "{\"jsonrpc\":\"2.0\"}",
          "a response needs an \"id\" and exactly one of \"result\" and "
          "\"error\"", NULL,
          "neither method nor result refused" },
        { "42", "message is not an object", NULL,
          "a number is no message" },
        { "\"ping\"", "message is not an object", NULL,
          "a string is no message" },
    };

    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        ngx_unit_parse(&p, cases[i].body);
        m = ngx_unit_msg(&p, 0);

        if (!CHECK(p.rc == NGX_OK && p.msgs.nelts == 1
                   && m->type == NGX_HTTP_MCP_MSG_INVALID
                   && ngx_unit_streq(m->error, cases[i].error)
                   && (cases[i].id == NULL
                       ? m->id == NULL
                       : ngx_unit_streq(ngx_unit_echo(m), cases[i].id)),
                   cases[i].name))
        {
            printf("#   got rc %d, type %d, error \"%s\", id %s\n",
                   (int) p.rc, (int) m->type,
                   m->error ? m->error : "(null)",
                   m->id ? "set" : "NULL");
        }

        ngx_unit_parse_free(&p);
    }
}


static void
test_batches(void)
{
    ngx_unit_parse_t     p;
    ngx_http_mcp_msg_t  *m;

    ngx_unit_parse(&p, "[{\"jsonrpc\":\"2.0\",\"id\":99999999999999999999,"
                   "\"method\":\"a\"},"
                   " {\"jsonrpc\":\"2.0\",\"method\":\"b\"} ,"
                   "{\"jsonrpc\":\"2.0\",\"id\":\"s\",\"result\":{}},"
                   "5,"
                   "{\"jsonrpc\":\"2.0\",\"id\":-0,\"method\":\"c\"}]");
    CHECK_INT(p.rc, NGX_OK, "batch: NGX_OK");
    CHECK_INT(p.batch, 1, "batch: flagged as a batch");
    CHECK_INT(p.msgs.nelts, 5, "batch: five messages");

    m = ngx_unit_msg(&p, 0);
    CHECK(m->type == NGX_HTTP_MCP_MSG_REQUEST
          && m->method.len == 1 && m->method.data[0] == 'a',
          "batch: first a request to a");
    CHECK_STR(ngx_unit_echo(m), "99999999999999999999",
              "batch: the first message's raw id");
    CHECK_INT(ngx_unit_msg(&p, 1)->type, NGX_HTTP_MCP_MSG_NOTIFICATION,
              "batch: second a notification");
    m = ngx_unit_msg(&p, 2);
    CHECK_INT(m->type, NGX_HTTP_MCP_MSG_RESPONSE, "batch: third a response");
    CHECK_STR(ngx_unit_echo(m), "\"s\"", "batch: the third message's id");
    m = ngx_unit_msg(&p, 3);
    CHECK(m->type == NGX_HTTP_MCP_MSG_INVALID && m->error != NULL
          && strcmp(m->error, "message is not an object") == 0,
          "batch: 5 is an invalid message, the others stand");
    m = ngx_unit_msg(&p, 4);
    CHECK(m->type == NGX_HTTP_MCP_MSG_INVALID && m->id == NULL,
          "batch: id -0 makes its message invalid, with no id to echo");
    ngx_unit_parse_free(&p);

    ngx_unit_parse(&p, " [ ] ");
    CHECK(p.rc == NGX_OK && p.batch == 1 && p.msgs.nelts == 0,
          "empty batch: NGX_OK, a batch of nothing");
    ngx_unit_parse_free(&p);

    /* one bad message spoils the body, not just itself */
    ngx_unit_refused("[{\"jsonrpc\":\"2.0\",\"method\":\"a\"},"
                     "{\"a\":1,\"a\":2}]",
                     "Parse error: duplicate member name",
                     "batch with a duplicate name in one message: refused");
    ngx_unit_refused("[{\"jsonrpc\":\"2.0\",\"method\":\"a\"},]", NULL,
                     "batch with a trailing comma: refused");
    ngx_unit_refused("[{\"jsonrpc\":\"2.0\",\"method\":\"a\"}", NULL,
                     "unclosed batch: refused");
}


/*
 * A string's plain bytes are scanned sixteen (SSE2) or eight (a word) at
 * a time: each kind of byte that ends a run (the closing quote, an
 * escape, a control byte, UTF-8, bytes that are not UTF-8) at every place
 * in the first two blocks of sixteen and the word after them, and the
 * plain bytes next to them in the table (space, '!', '#', '[', ']',
 * DEL), must read as the byte loop reads them.
 */

/* plain bytes before the stop byte: up to two blocks and a word and one */
#define NGX_UNIT_RUN  "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"

static void
test_string_runs(void)
{
    char               body[128], name[128];
    size_t             k, i, n;
    ngx_uint_t         good;
    ngx_unit_parse_t   p;
    ngx_http_mcp_msg_t *m;

    static const struct {
        const char    *bytes;           /* put at offset k of the method */
        const char    *error;           /* NULL: accepted */
        const char    *read;            /* what those bytes read as */
    } cases[] = {
        { "",             NULL, "" },
        { "\\u0041b",   NULL, "Ab" },
        { "\\\"",      NULL, "\"" },
        { "\xc3\xa9",   NULL, "\xc3\xa9" },
        { " !#[]\x7f~",  NULL, " !#[]\x7f~" },
        { "\x1f",        "Parse error: control character in a string", NULL },
        { "\x01",        "Parse error: control character in a string", NULL },
        { "\xff",        "Parse error: invalid UTF-8", NULL },
        { "\x80",        "Parse error: invalid UTF-8", NULL },
        { "\xed\xa0\x80", "Parse error: invalid UTF-8", NULL }
    };

    good = 1;

    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        for (k = 0; k < 41; k++) {
            n = snprintf(body, sizeof(body),
                         "{\"jsonrpc\":\"2.0\",\"method\":\"%.*s%s\"}",
                         (int) k, NGX_UNIT_RUN, cases[i].bytes);

            ngx_unit_parse_len(&p, body, n);

            if (cases[i].error != NULL) {
                good &= (p.rc == NGX_DECLINED
                         && ngx_unit_streq(p.error, cases[i].error));

            } else {
                m = (p.rc == NGX_OK) ? ngx_unit_msg(&p, 0) : NULL;
                snprintf(name, sizeof(name), "%.*s%s", (int) k,
                         NGX_UNIT_RUN, cases[i].read);

                good &= (m != NULL && m->method.len == strlen(name)
                         && (m->method.len == 0
                             || memcmp(m->method.data, name, m->method.len)
                                == 0));
            }

            if (!good) {
                printf("#   case %u at offset %u\n", (unsigned) i,
                       (unsigned) k);
                ngx_unit_parse_free(&p);
                goto done;
            }

            ngx_unit_parse_free(&p);
        }
    }

done:

    CHECK(good, "string runs: every stop byte at offsets 0 to 40");

    /* a long run that ends exactly at the body's last word */
    ngx_unit_accepted("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":"
                      "\"io.modelcontextprotocol/clientCapabilities\"}",
                      "a run of 42 plain bytes accepted");
}


static void
test_strict(void)
{
    ngx_uint_t         i;
    u_char             buf[2048], *b;
    ngx_unit_parse_t   p;

    ngx_unit_refused("{\"jsonrpc\":\"2.0\",\"method\":\"a\",\"method\":\"b\"}",
                     "Parse error: duplicate member name",
                     "duplicate member name refused");
    ngx_unit_refused("{\"jsonrpc\":\"2.0\",\"method\":\"a\",\"m\\u0065thod\":"
                     "\"b\"}", "Parse error: duplicate member name",
                     "duplicate name written with an escape refused");
    ngx_unit_refused("{\"jsonrpc\":\"2.0\",\"method\":\"a\",\"params\":"
                     "{\"x\":{\"k\":1,\"k\":1}}}",
                     "Parse error: duplicate member name",
                     "duplicate name deep in params refused");
    ngx_unit_refused("{\"\xc3\xa9\":1,\"\\u00e9\":2}",
                     "Parse error: duplicate member name",
                     "duplicate non-ASCII name (raw and escaped) refused");
    ngx_unit_refused("{\"\\ud83d\\ude00\":1,\"\xf0\x9f\x98\x80\":2}",
                     "Parse error: duplicate member name",
                     "duplicate name, surrogate pair and raw UTF-8, refused");
    ngx_unit_refused("{\"ab\\u0063d\\u00e9f\":1,\"abcd\xc3\xa9" "f\":2}",
                     "Parse error: duplicate member name",
                     "duplicate name: plain runs between escapes and "
                     "UTF-8, refused");

    /* objects of more than 8 members go through the hash table */
    b = ngx_cpymem(buf, "{\"jsonrpc\":\"2.0\",\"method\":\"m\",\"params\":{",
                   sizeof("{\"jsonrpc\":\"2.0\",\"method\":\"m\","
                          "\"params\":{") - 1);

    for (i = 0; i < 40; i++) {
        b = ngx_sprintf(b, "%s\"k%ui\":%ui", i ? "," : "", i, i);
    }

    *b++ = '}';
    *b++ = '}';
    ngx_unit_parse_len(&p, (char *) buf, b - buf);
    CHECK(p.rc == NGX_OK
          && cJSON_GetArraySize(ngx_unit_msg(&p, 0)->params) == 40,
          "40 distinct names: accepted");
    ngx_unit_parse_free(&p);

    /* the same with k7 again as the last name */
    b -= 2;
    b = ngx_cpymem(b, ",\"k\\u0037\":0}}", sizeof(",\"k\\u0037\":0}}") - 1);
    ngx_unit_parse_len(&p, (char *) buf, b - buf);
    CHECK(p.rc == NGX_DECLINED && p.error != NULL
          && strcmp(p.error, "Parse error: duplicate member name") == 0,
          "41 names, the last repeating the 8th (escaped): refused");
    ngx_unit_parse_free(&p);

    ngx_unit_refused("{\"jsonrpc\":\"2.0\",\"method\":\"\xff\"}",
                     "Parse error: invalid UTF-8", "byte 0xff refused");
    ngx_unit_refused("{\"jsonrpc\":\"2.0\",\"method\":\"\xc0\xaf\"}",
                     "Parse error: invalid UTF-8", "overlong UTF-8 refused");
    ngx_unit_refused("{\"jsonrpc\":\"2.0\",\"method\":\"\xed\xa0\x80\"}",
                     "Parse error: invalid UTF-8",
                     "a surrogate encoded in UTF-8 refused");
    ngx_unit_refused("{\"jsonrpc\":\"2.0\",\"method\":\"\xf4\x90\x80\x80\"}",
                     "Parse error: invalid UTF-8",
                     "a code point beyond U+10FFFF refused");
    ngx_unit_refused("{\"jsonrpc\":\"2.0\",\"method\":\"\xe2\x82\"}",
                     "Parse error: invalid UTF-8",
                     "a truncated UTF-8 sequence refused");
    ngx_unit_accepted("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":"
                      "\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\"}",
                      "2-, 3- and 4-byte UTF-8 accepted");

    ngx_unit_refused("{\"jsonrpc\":\"2.0\",\"method\":\"\\ud800\"}",
                     "Parse error: lone surrogate in a string",
                     "lone high surrogate refused");
    ngx_unit_refused("{\"jsonrpc\":\"2.0\",\"method\":\"\\udc00x\"}",
                     "Parse error: lone surrogate in a string",
                     "lone low surrogate refused");
    ngx_unit_refused("{\"jsonrpc\":\"2.0\",\"method\":\"\\ud800\\u0041\"}",
                     "Parse error: lone surrogate in a string",
                     "high surrogate followed by no low one refused");
    ngx_unit_accepted("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":"
                      "\"\\ud83d\\ude00\"}", "surrogate pair accepted");

    ngx_unit_refused("{\"jsonrpc\":\"2.0\",\"method\":\"a\\u0000b\"}",
                     "Parse error: NUL character in a string",
                     "\\u0000 refused");
    ngx_unit_refused("{\"jsonrpc\":\"2.0\",\"method\":\"a\tb\"}",
                     "Parse error: control character in a string",
                     "a raw tab in a string refused");
    ngx_unit_refused("{\"jsonrpc\":\"2.0\",\"method\":\"a\\xb\"}",
                     "Parse error: invalid escape in a string",
                     "escape \\x refused");
    ngx_unit_refused("{\"jsonrpc\":\"2.0\",\"method\":\"a\\u12g4\"}",
                     "Parse error: invalid escape in a string",
                     "escape \\u with a non-hex digit refused");
    ngx_unit_refused("{\"jsonrpc\":\"2.0\",\"method\":\"abc",
                     "Parse error: unterminated string",
                     "unterminated string refused");

    ngx_unit_refused("{\"jsonrpc\":\"2.0\",\"method\":\"a\"} {}",
                     "Parse error: data after the message",
                     "a second object after the message refused");
    ngx_unit_refused("\xef\xbb\xbf{\"jsonrpc\":\"2.0\",\"method\":\"a\"}",
                     NULL, "byte order mark refused");
    ngx_unit_refused("{\"jsonrpc\":\"2.0\",\"method\":\"a\",}", NULL,
                     "trailing comma in an object refused");
    ngx_unit_refused("{'jsonrpc':'2.0'}", NULL, "single quotes refused");
    ngx_unit_refused("{\"a\":tru}", NULL, "misspelt literal refused");

    ngx_unit_parse_len(&p, "", 0);
    CHECK(p.rc == NGX_DECLINED && p.error != NULL
          && strcmp(p.error, "Parse error: unexpected end of input") == 0,
          "empty body refused: unexpected end of input");
    ngx_unit_parse_free(&p);

    /* 127 levels inside the message pass, 128 do not */
    b = ngx_cpymem(buf, "{\"jsonrpc\":\"2.0\",\"method\":\"m\",\"x\":",
                   sizeof("{\"jsonrpc\":\"2.0\",\"method\":\"m\",\"x\":") - 1);
    ngx_memset(b, '[', 127);
    ngx_memset(b + 127, ']', 127);
    b[254] = '}';
    ngx_unit_parse_len(&p, (char *) buf, b + 255 - buf);
    CHECK(p.rc == NGX_OK && p.msgs.nelts == 1,
          "arrays nested 127 deep in a message: accepted");
    ngx_unit_parse_free(&p);

    ngx_memset(b, '[', 128);
    ngx_memset(b + 128, ']', 128);
    b[256] = '}';
    ngx_unit_parse_len(&p, (char *) buf, b + 257 - buf);
    CHECK(p.rc == NGX_DECLINED && p.error != NULL
          && strcmp(p.error, "Parse error: nesting too deep") == 0,
          "arrays nested 128 deep in a message: nesting too deep");
    ngx_unit_parse_free(&p);
}


/*
 * A string's text decoded alone (mcp_pass reads streamed ids with it):
 * as the scan reads it, and refused where the scan refuses.
 */

static void
test_decode(void)
{
    u_char   dst[32];
    ssize_t  n;

#define ngx_unit_decode(text)                                                \
    ngx_http_mcp_json_decode((u_char *) text, sizeof(text) - 1, dst)

    n = ngx_unit_decode("\\u0069d");
    CHECK_MEM(dst, n, "id", "decode: \\u0069d");

    n = ngx_unit_decode("\\\"\\/\\n\\u00e9\\ud83d\\ude00");
    CHECK_MEM(dst, n, "\"/\n\xc3\xa9\xf0\x9f\x98\x80",
              "decode: short escapes, two bytes, a surrogate pair");

    CHECK_INT(ngx_unit_decode("a\\u0000"), NGX_ERROR,
              "decode: \\u0000 refused");
    CHECK_INT(ngx_unit_decode("\\ud83d"), NGX_ERROR,
              "decode: a lone high surrogate refused");
    CHECK_INT(ngx_unit_decode("\\ude00x"), NGX_ERROR,
              "decode: a lone low surrogate refused");
    CHECK_INT(ngx_unit_decode("ab\\"), NGX_ERROR,
              "decode: an escape cut short refused");
    CHECK_INT(ngx_unit_decode("\\u00e"), NGX_ERROR,
              "decode: a \\u escape cut short refused");
    CHECK_INT(ngx_unit_decode("\\x"), NGX_ERROR,
              "decode: an unknown escape refused");

#undef ngx_unit_decode
}


static void
test_numbers(void)
{
    ngx_unit_refused("{\"x\":1e400}", "Parse error: number out of range",
                     "1e400 refused");
    ngx_unit_refused("{\"x\":-1e400}", "Parse error: number out of range",
                     "-1e400 refused");
    ngx_unit_refused("{\"x\":2e308}", "Parse error: number out of range",
                     "2e308 refused");
    ngx_unit_refused("{\"x\":0.1e310}", "Parse error: number out of range",
                     "0.1e310 refused");
    ngx_unit_refused("{\"x\":01}", NULL, "leading zero refused");
    ngx_unit_refused("{\"x\":1.}", NULL, "1. refused");
    ngx_unit_refused("{\"x\":.5}", NULL, ".5 refused");
    ngx_unit_refused("{\"x\":1e}", NULL, "1e refused");
    ngx_unit_refused("{\"x\":+1}", NULL, "+1 refused");
    ngx_unit_refused("{\"x\":-}", NULL, "a lone minus refused");
    ngx_unit_refused("{\"x\":NaN}", NULL, "NaN refused");

    ngx_unit_accepted("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\","
                      "\"params\":{\"a\":1e308,\"b\":-1.7976931348623157e308,"
                      "\"c\":1.5E-300,\"d\":0e99999,\"e\":0.000001e-400,"
                      "\"f\":-0.0,\"g\":123456789012345678901234567890}}",
                      "numbers a double holds (and zeros) accepted");

    ngx_unit_numbers_as_cjson();
}


/*
 * The values the scan gives numbers, integers of up to 15 digits taken
 * without strtod(), are cJSON_Parse()'s, at the edges of that shortcut.
 */

static void
ngx_unit_numbers_as_cjson(void)
{
    char              body[128];
    cJSON            *ours, *theirs, *a, *b;
    ngx_uint_t        i;
    ngx_unit_parse_t  p;

    static const char  *numbers[] = {
        "0", "-0", "7", "-42", "2147483647", "2147483648", "-2147483649",
        "999999999999999", "-999999999999999", "1000000000000000",
        "9007199254740993", "123456789012345678", "1.5", "-0.0", "1e2",
        NULL
    };

    for (i = 0; numbers[i]; i++) {
        snprintf(body, sizeof(body),
                 "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\","
                 "\"params\":{\"n\":%s}}", numbers[i]);

        theirs = cJSON_Parse(body);

        if (ngx_unit_parse(&p, body) != NGX_OK || theirs == NULL) {
            CHECK(0, numbers[i]);
            cJSON_Delete(theirs);
            ngx_unit_parse_free(&p);
            continue;
        }

        ours = cJSON_GetObjectItemCaseSensitive(
                   ngx_unit_msg(&p, 0)->params, "n");
        a = cJSON_GetObjectItemCaseSensitive(theirs, "params");
        b = cJSON_GetObjectItemCaseSensitive(a, "n");

        CHECK(ours != NULL && b != NULL
              && memcmp(&ours->valuedouble, &b->valuedouble,
                        sizeof(double)) == 0
              && ours->valueint == b->valueint,
              numbers[i]);

        cJSON_Delete(theirs);
        ngx_unit_parse_free(&p);
    }
}


static void
test_replies(void)
{
    cJSON  *id;

    id = cJSON_CreateRaw("12345678901234567890");
    CHECK_STR(ngx_unit_print(ngx_http_mcp_jsonrpc_error(id,
                  NGX_HTTP_MCP_INVALID_REQUEST, "Invalid Request",
                  "0123456789abcdef")),
              "{\"jsonrpc\":\"2.0\",\"id\":12345678901234567890,\"error\":"
              "{\"code\":-32600,\"message\":\"Invalid Request\",\"data\":"
              "{\"correlationId\":\"0123456789abcdef\"}}}",
              "error reply: raw id, code, message, correlation id");

    CHECK_STR(ngx_unit_print(ngx_http_mcp_jsonrpc_result(id,
                  cJSON_CreateString("ok"))),
              "{\"jsonrpc\":\"2.0\",\"id\":12345678901234567890,"
              "\"result\":\"ok\"}",
              "result reply: raw id and result");
    cJSON_Delete(id);

    CHECK_STR(ngx_unit_print(ngx_http_mcp_jsonrpc_error(NULL,
                  NGX_HTTP_MCP_PARSE_ERROR, "Parse error", NULL)),
              "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":"
              "{\"code\":-32700,\"message\":\"Parse error\"}}",
              "error reply without id: id null, no data");

    id = cJSON_CreateString("q\"\\");
    CHECK_STR(ngx_unit_print(ngx_http_mcp_jsonrpc_error(id,
                  NGX_HTTP_MCP_METHOD_NOT_FOUND, "Method \"x\" not found",
                  NULL)),
              "{\"jsonrpc\":\"2.0\",\"id\":\"q\\\"\\\\\",\"error\":"
              "{\"code\":-32601,\"message\":\"Method \\\"x\\\" not found\"}}",
              "error reply: id and message escaped");
    cJSON_Delete(id);
}


/*
 * The module's text of json, NUL-terminated, against
 * cJSON_PrintUnformatted()'s; prints both when they differ; frees json.
 * The first walk's size is exact but for numbers: in a tree without
 * them, the buffer is the text and its NUL, not a byte more (ASan keeps
 * the size each allocation asked for).
 */

static ngx_uint_t
ngx_unit_prints_as_cjson(cJSON *json, const char *name)
{
    char        *theirs;
    u_char      *ours;
    size_t       len;
    ngx_uint_t   same;

    if (json == NULL) {
        printf("#   %s: no tree\n", name);
        return 0;
    }

    ours = ngx_http_mcp_json_print(pool, json, &len);
    theirs = cJSON_PrintUnformatted(json);

    same = (ours != NULL && theirs != NULL && len == strlen(theirs)
            && memcmp(ours, theirs, len) == 0 && ours[len] == '\0');

#if (NGX_UNIT_ASAN)
    if (same && !ngx_unit_has_numbers(json)
        && __sanitizer_get_allocated_size(ours) != len + 1)
    {
        printf("#   %s: %u bytes allocated for %u\n", name,
               (unsigned) __sanitizer_get_allocated_size(ours),
               (unsigned) len + 1);
        same = 0;
    }
#endif

    if (!same) {
        printf("#   %s\n#   got  %s\n#   want %s\n", name,
               ours ? (char *) ours : "(null)", theirs ? theirs : "(null)");
    }

    free(theirs);
    cJSON_Delete(json);

    return same;
}


#if (NGX_UNIT_ASAN)

static ngx_uint_t
ngx_unit_has_numbers(cJSON *json)
{
    cJSON  *item;

    if (cJSON_IsNumber(json)) {
        return 1;
    }

    for (item = json->child; item != NULL; item = item->next) {
        if (ngx_unit_has_numbers(item)) {
            return 1;
        }
    }

    return 0;
}

#endif


/*
 * The len bytes at s (a copy of exactly len + 1, so that a read past
 * the NUL is an ASan report) as a value, as a member's name, and alone;
 * with two, in a text over the 8 KB printed on the stack too, which
 * takes two walks, the first measuring the string.
 */

static ngx_uint_t
ngx_unit_string_prints(const char *s, size_t len, ngx_uint_t two)
{
    char        *copy;
    cJSON       *obj, *item;
    ngx_uint_t   good;

    static char  fill[8193];

    copy = malloc(len + 1);
    if (copy == NULL) {
        return 0;
    }

    memcpy(copy, s, len);
    copy[len] = '\0';

    obj = cJSON_CreateObject();
    cJSON_AddItemToObject(obj, "k", cJSON_CreateString(copy));
    cJSON_AddItemToObject(obj, copy, cJSON_CreateTrue());
    cJSON_AddItemToObject(obj, copy, cJSON_CreateArray());

    item = cJSON_CreateString(copy);

    good = ngx_unit_prints_as_cjson(obj, "as a value and a name")
           & ngx_unit_prints_as_cjson(item, "alone");

    if (two) {
        if (fill[0] == '\0') {
            ngx_memset(fill, 'f', sizeof(fill) - 1);
        }

        obj = cJSON_CreateObject();
        cJSON_AddItemToObject(obj, "f", cJSON_CreateString(fill));
        cJSON_AddItemToObject(obj, "k", cJSON_CreateString(copy));
        cJSON_AddItemToObject(obj, copy, cJSON_CreateTrue());

        good &= ngx_unit_prints_as_cjson(obj, "in two walks");
    }

    free(copy);

    return good;
}


/*
 * A string's bytes to escape are looked for sixteen (SSE2) or eight at
 * a time, those of a string under eight in one word of two loads that
 * overlap, the last of a longer one in the eight that end at its end:
 * each kind of byte to escape, and the plain bytes next to them (space,
 * '~', DEL, UTF-8), at every place of strings of 1 to 40 bytes, two of
 * them at every two places of up to 33, and every byte, must print as
 * cJSON prints them, in one walk and (but for most pairs) in two.
 */

static void
test_print_strings(void)
{
    u_char      s[48];
    size_t      len, i, j, a, b, n;
    ngx_uint_t  good;

    static const u_char  kinds[] = {
        '"', '\\', '\b', '\f', '\n', '\r', '\t', 0x01, 0x0b, 0x1f,
        ' ', '~', 0x7f, 0x80, 0xc3, 0xff
    };

    /* and UTF-8 whose low seven bits would be a byte to escape */
    static const u_char  pairs[] = {
        '"', '\\', '\n', 0x01, 0x7f, 0xe9, 0x80, 0xa2, 0xdc, 0x9f
    };

    n = sizeof(kinds);

    good = 1;

    for (len = 0; len <= 40; len++) {
        ngx_memset(s, 'a', len);
        good &= ngx_unit_string_prints((char *) s, len, 1);

        ngx_memset(s, 0xe9, len);
        good &= ngx_unit_string_prints((char *) s, len, 1);
    }

    CHECK(good, "print: plain strings and UTF-8 ones of 0 to 40 bytes");

    good = 1;

    for (a = 0; a < n && good; a++) {
        for (len = 1; len <= 40 && good; len++) {
            for (i = 0; i < len && good; i++) {
                ngx_memset(s, 'a', len);
                s[i] = kinds[a];

                good = ngx_unit_string_prints((char *) s, len, 1);

                if (!good) {
                    printf("#   byte 0x%02x at %u of %u\n", kinds[a],
                           (unsigned) i, (unsigned) len);
                }
            }
        }
    }

    CHECK(good, "print: each kind of byte at every place of 1 to 40");

    good = 1;

    for (a = 0; a < sizeof(pairs) && good; a++) {
        for (b = 0; b < sizeof(pairs) && good; b++) {
            for (len = 2; len <= 33 && good; len++) {
                for (i = 0; i < len && good; i++) {
                    for (j = i + 1; j < len && good; j++) {
                        ngx_memset(s, 'a', len);
                        s[i] = pairs[a];
                        s[j] = pairs[b];

                        good = ngx_unit_string_prints((char *) s, len,
                                                      j == i + 1);

                        if (!good) {
                            printf("#   0x%02x at %u, 0x%02x at %u of %u\n",
                                   pairs[a], (unsigned) i, pairs[b],
                                   (unsigned) j, (unsigned) len);
                        }
                    }
                }
            }
        }
    }

    CHECK(good, "print: two bytes to escape at every two places of 2 to 33");

    good = 1;

    for (a = 1; a < 256 && good; a++) {
        for (len = 1; len <= 33 && good; len += 4) {
            ngx_memset(s, (u_char) a, len);

            good = ngx_unit_string_prints((char *) s, len, 1);

            if (!good) {
                printf("#   %u bytes 0x%02x\n", (unsigned) len,
                       (unsigned) a);
            }
        }
    }

    CHECK(good, "print: every byte, 1 to 33 of it");
}


/*
 * A text over the 8 KB printed on the stack takes two walks, and the
 * first keeps the length of 256 strings for the second: the strings
 * after them, plain and to escape, as values and names, are measured
 * again.  A string item without text prints as "", as cJSON prints it;
 * an invalid item and a raw item without text print as nothing, in a
 * short text and in a long one.
 */

static void
test_print_many(void)
{
    char        name[32];
    size_t      len;
    cJSON      *obj, *arr, *item;
    ngx_uint_t  i;

    obj = cJSON_CreateObject();
    arr = cJSON_CreateArray();
    cJSON_AddItemToObject(obj, "a", arr);

    for (i = 0; i < 300; i++) {
        snprintf(name, sizeof(name), (i % 3) ? "n%u" : "n\"%u\n",
                 (unsigned) i);
        cJSON_AddItemToObject(obj, name,
                              cJSON_CreateString((i % 2)
                                  ? "plain text, long enough to pass 8 KB"
                                  : "a \"quoted\"\t"));
        cJSON_AddItemToArray(arr, cJSON_CreateString(name));
    }

    CHECK(ngx_unit_prints_as_cjson(obj, "300 members"),
          "print: strings past the 256 kept, as cJSON");

    obj = cJSON_CreateObject();
    item = cJSON_CreateString("x");
    cJSON_free(item->valuestring);
    item->valuestring = NULL;
    cJSON_AddItemToObject(obj, "s", item);

    CHECK(ngx_unit_prints_as_cjson(obj, "string without text"),
          "print: a string item without text as \"\"");

    for (i = 0; i < 2; i++) {
        obj = cJSON_CreateObject();
        cJSON_AddItemToObject(obj, "long", cJSON_CreateString(""));
        cJSON_AddItemToObject(obj, "bad", cJSON_CreateRaw("1"));

        if (i == 1) {
            cJSON_free(obj->child->valuestring);
            obj->child->valuestring = malloc(10001);
            if (obj->child->valuestring != NULL) {
                memset(obj->child->valuestring, 'a', 10000);
                obj->child->valuestring[10000] = '\0';
            }
        }

        item = obj->child->next;
        cJSON_free(item->valuestring);
        item->valuestring = NULL;

        CHECK(ngx_http_mcp_json_print(pool, obj, &len) == NULL
              && cJSON_PrintUnformatted(obj) == NULL,
              i ? "print: a raw item without text in a long text: NULL"
                : "print: a raw item without text: NULL");

        item->type = cJSON_Invalid;

        CHECK(ngx_http_mcp_json_print(pool, obj, &len) == NULL
              && cJSON_PrintUnformatted(obj) == NULL,
              i ? "print: an invalid item in a long text: NULL"
                : "print: an invalid item: NULL");

        cJSON_Delete(obj);
    }
}


/* the last item of the texts that end near the end of the 8 KB */

static cJSON *
ngx_unit_edge_item(ngx_uint_t kind)
{
    cJSON  *item;

    switch (kind) {
    case 0:
        return cJSON_CreateString("abc");
    case 1:
        return cJSON_CreateString("a\"b\\c\n\x01");
    case 2:
        return cJSON_CreateString("twenty plain bytes..");
    case 3:
        return cJSON_CreateNumber(12345);
    case 4:
        return cJSON_CreateNumber(-1.2345678901234567e-300);
    case 5:
        return cJSON_CreateTrue();
    case 6:
        return cJSON_CreateNull();
    case 7:
        return cJSON_CreateFalse();
    case 8:
        return cJSON_CreateArray();
    case 9:
        return cJSON_CreateObject();
    case 10:
        item = cJSON_CreateObject();
        cJSON_AddItemToObject(item, "k\"", cJSON_CreateString("v"));
        return item;
    case 11:
        item = cJSON_CreateArray();
        cJSON_AddItemToArray(item, cJSON_CreateArray());
        cJSON_AddItemToArray(item->child, cJSON_CreateString("x"));
        return item;
    case 12:
        return cJSON_CreateString("twelve bytes");
    case 13:
        return cJSON_CreateString("sixteen bytes...");
    default:
        return cJSON_CreateRaw("123");
    }
}


/*
 * A text is printed in one walk on the stack (8 KB) when it fits, else
 * in two: texts of 8 KB - 64 to 8 KB + 24, ending in each kind of item,
 * after a long plain string or one to escape, as an item, a name, and
 * three arrays deep, so that every kind of write meets the end of the
 * stack's buffer at every byte.
 */

static void
test_print_edges(void)
{
    char        *fill;
    size_t       len, i;
    cJSON       *root, *arr;
    ngx_uint_t   kind, shape, escapes, good;

    fill = malloc(8192 + 64);
    if (fill == NULL) {
        CHECK(0, "print: edges: no memory");
        return;
    }

    good = 1;

    for (escapes = 0; escapes < 2 && good; escapes++) {
        for (shape = 0; shape < 3 && good; shape++) {
            for (kind = 0; kind < 15 && good; kind++) {
                for (len = 8192 - 64; len < 8192 + 24 && good; len++) {

                    for (i = 0; i < len; i++) {
                        fill[i] = (escapes && i % 61 == 7) ? '\n' : 'a';
                    }

                    fill[len] = '\0';

                    switch (shape) {
                    case 0:
                        root = cJSON_CreateArray();
                        cJSON_AddItemToArray(root, cJSON_CreateString(fill));
                        cJSON_AddItemToArray(root, ngx_unit_edge_item(kind));
                        break;
                    case 1:
                        root = cJSON_CreateObject();
                        cJSON_AddItemToObject(root, fill,
                                              ngx_unit_edge_item(kind));
                        break;
                    default:
                        root = cJSON_CreateArray();
                        arr = cJSON_CreateArray();
                        cJSON_AddItemToArray(root, arr);
                        cJSON_AddItemToArray(arr, cJSON_CreateArray());
                        arr = arr->child;
                        cJSON_AddItemToArray(arr, cJSON_CreateString(fill));
                        cJSON_AddItemToArray(arr, ngx_unit_edge_item(kind));
                    }

                    good = ngx_unit_prints_as_cjson(root, "edge");

                    if (!good) {
                        printf("#   shape %u, kind %u, %u bytes%s\n",
                               (unsigned) shape, (unsigned) kind,
                               (unsigned) len,
                               escapes ? ", with escapes" : "");
                    }
                }
            }
        }
    }

    free(fill);

    CHECK(good, "print: texts that end near the end of the stack's buffer");
}


static void
test_helpers(void)
{
    u_char      buf[40], *end;
    cJSON       *root, *params, *node, *copy;
    size_t      i;
    ngx_str_t   body;
    const char  *error;

    /* a client's bytes for a log line: no line break gets through */
    ngx_str_set(&body, "a\r\nb c%d\x7f\x01\"\xc3\xa9");
    end = ngx_http_mcp_log_bounded(buf, sizeof(buf), body.data, body.len);
    CHECK_MEM(buf, end - buf, "a%0D%0Ab c%25d%7F%01%22\xc3\xa9",
              "log text: CR, LF, %, DEL, quote and controls escaped, "
              "the rest kept");
    end = ngx_http_mcp_log_bounded(buf, 5, body.data, body.len);
    CHECK_MEM(buf, end - buf, "a%0D",
              "log text: cut at the buffer's end, never inside an escape");
    end = ngx_http_mcp_log_bounded(buf, 4, (u_char *) "abcdef", 6);
    CHECK_MEM(buf, end - buf, "abcd", "log text: plain text cut at the end");

    ngx_memset(buf, 'z', sizeof(buf));
    CHECK_INT(ngx_http_mcp_correlation_id(buf, 16), NGX_OK,
              "correlation id of 16: NGX_OK");

    for (i = 0; i < 16; i++) {
        if (!((buf[i] >= '0' && buf[i] <= '9')
              || (buf[i] >= 'a' && buf[i] <= 'f')))
        {
            break;
        }
    }

    CHECK(i == 16 && buf[16] == 'z',
          "correlation id: 16 lowercase hex digits, nothing more written");
    CHECK_INT(ngx_http_mcp_correlation_id(buf, 15), NGX_ERROR,
              "correlation id of odd length: NGX_ERROR");
    CHECK_INT(ngx_http_mcp_correlation_id(buf, 34), NGX_ERROR,
              "correlation id over 32: NGX_ERROR");

    /* a progress token's number keeps its text, as written, on its node */
    ngx_str_set(&body, "{\"params\":{\"_meta\":{\"progressToken\": "
                "123456789012345678901 },\"x\":1.50,\"progressToken\":[2],"
                "\"y\":{\"progress\\u0054oken\":-0.10e1}}}");
    root = NULL;
    CHECK_INT(ngx_http_mcp_json_parse(pool, body.data, body.len, NULL, &root,
                                      &error), NGX_OK, "number text: parsed");
    params = ngx_http_mcp_json_get(root, "params");
    node = ngx_http_mcp_json_get(ngx_http_mcp_json_get(params, "_meta"),
                                 "progressToken");
    CHECK_STR(node ? node->valuestring : NULL, "123456789012345678901",
              "number text: a progress token as written");
    copy = cJSON_Duplicate(node, 1);
    CHECK_STR(copy ? copy->valuestring : NULL, "123456789012345678901",
              "number text: copied with its node");
    cJSON_Delete(copy);
    node = ngx_http_mcp_json_get(params, "x");
    CHECK(node != NULL && node->valuestring == NULL,
          "number text: none for another member's number");
    node = ngx_http_mcp_json_get(params, "progressToken");
    CHECK(node != NULL && node->child != NULL
          && node->child->valuestring == NULL,
          "number text: none for a number inside a token");
    node = ngx_http_mcp_json_get(ngx_http_mcp_json_get(params, "y"),
                                 "progressToken");
    CHECK_STR(node ? node->valuestring : NULL, "-0.10e1",
              "number text: under an escaped name too");
    cJSON_Delete(root);

    CHECK_INT(ngx_http_mcp_json_strict(pool, (u_char *) "[1,\"a\",null]", 12,
                                       &error), NGX_OK,
              "json_strict: an array is any JSON text");
    CHECK_INT(ngx_http_mcp_json_strict(pool, (u_char *) "\"s\"", 3, &error),
              NGX_OK, "json_strict: a string is any JSON text");
    error = NULL;
    CHECK(ngx_http_mcp_json_strict(pool, (u_char *) "{\"a\":1,\"a\":1}", 13,
                                   &error) == NGX_DECLINED
          && error != NULL
          && strcmp(error, "Parse error: duplicate member name") == 0,
          "json_strict: duplicate names refused");
    CHECK_INT(ngx_http_mcp_json_strict(pool, (u_char *) "{} 1", 4, &error),
              NGX_DECLINED, "json_strict: data after the text refused");
}


/* the rule mcp_pass_retry and mcp_backend's legs share */

static void
test_retry(void)
{
    cJSON       *tool;
    ngx_str_t    m;
    ngx_uint_t   i;

    static const char  *safe[] = {
        "initialize", "ping", "tools/list", "resources/templates/list",
        "tasks/list", "resources/read", "prompts/get",
        "completion/complete", "tasks/get", "server/discover"
    };
    static const char  *never[] = {
        "tasks/cancel", "tasks/result", "resources/subscribe",
        "logging/setLevel", "sampling/createMessage", "/list", "list",
        "tools/calls", "x/listing"
    };

    for (i = 0; i < sizeof(safe) / sizeof(safe[0]); i++) {
        m.data = (u_char *) safe[i];
        m.len = ngx_strlen(safe[i]);
        CHECK_INT(ngx_http_mcp_jsonrpc_retry(NGX_HTTP_MCP_MSG_REQUEST, &m),
                  NGX_HTTP_MCP_RETRY_SAFE, safe[i]);
    }

    for (i = 0; i < sizeof(never) / sizeof(never[0]); i++) {
        m.data = (u_char *) never[i];
        m.len = ngx_strlen(never[i]);
        CHECK_INT(ngx_http_mcp_jsonrpc_retry(NGX_HTTP_MCP_MSG_REQUEST, &m),
                  NGX_HTTP_MCP_RETRY_NEVER, never[i]);
    }

    ngx_str_set(&m, "tools/call");
    CHECK_INT(ngx_http_mcp_jsonrpc_retry(NGX_HTTP_MCP_MSG_REQUEST, &m),
              NGX_HTTP_MCP_RETRY_TOOL, "tools/call: as its tool's hints say");
    CHECK_INT(ngx_http_mcp_jsonrpc_retry(NGX_HTTP_MCP_MSG_NOTIFICATION, &m),
              NGX_HTTP_MCP_RETRY_SAFE, "a notification: safe");
    CHECK_INT(ngx_http_mcp_jsonrpc_retry(NGX_HTTP_MCP_MSG_RESPONSE, &m),
              NGX_HTTP_MCP_RETRY_SAFE, "a client's answer: safe");
    CHECK_INT(ngx_http_mcp_jsonrpc_retry(NGX_HTTP_MCP_MSG_INVALID, &m),
              NGX_HTTP_MCP_RETRY_NEVER, "an invalid message: never");

    tool = cJSON_Parse("{\"name\":\"a\",\"annotations\":{\"readOnlyHint\":"
                       "true,\"idempotentHint\":true}}");
    CHECK_INT(ngx_http_mcp_jsonrpc_tool_hints(tool),
              NGX_HTTP_MCP_TOOL_READ_ONLY | NGX_HTTP_MCP_TOOL_IDEMPOTENT,
              "hints: both");
    cJSON_Delete(tool);

    tool = cJSON_Parse("{\"name\":\"a\",\"annotations\":{\"readOnlyHint\":"
                       "\"true\",\"idempotentHint\":1,"
                       "\"destructiveHint\":false}}");
    CHECK_INT(ngx_http_mcp_jsonrpc_tool_hints(tool), 0,
              "hints: only a JSON true counts");
    cJSON_Delete(tool);

    tool = cJSON_Parse("{\"name\":\"a\"}");
    CHECK_INT(ngx_http_mcp_jsonrpc_tool_hints(tool), 0,
              "hints: no annotations, none");
    cJSON_Delete(tool);
}
