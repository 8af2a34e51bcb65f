
/*
 * The module's side of the differential test (fuzz/differential.py):
 * reads bodies from stdin, each a 4-byte little-endian length and the
 * bytes, and writes for each one JSON line saying how the module read
 * it: {"ok":false} when ngx_http_mcp_jsonrpc_parse() refused the body,
 * else every message's type, method, id (as echoed), params.name and
 * params.arguments as cJSON holds them.  The script reads the same
 * bodies with Python's json and compares.  Each accepted body's tree,
 * which the module's own scan builds, must also equal, node for node,
 * the one cJSON_Parse() makes of the body where cJSON reads it, and the
 * module's printer must print it as cJSON_PrintUnformatted() does: the
 * program aborts when they differ.
 */


#include <ngx_config.h>
#include <ngx_core.h>

#include "ngx_http_mcp_jsonrpc.h"
#include "ngx_http_mcp_json.h"
#include "ngx_shim.h"


static cJSON *ngx_diff_exact(cJSON *json);
static cJSON *ngx_diff_message(ngx_http_mcp_msg_t *msg);
static void ngx_diff_one(u_char *body, size_t size);
static ngx_uint_t ngx_diff_same(cJSON *a, cJSON *b);
static void ngx_diff_tree(u_char *body, size_t size, cJSON *root);
static void ngx_diff_print(ngx_pool_t *pool, cJSON *root);


/*
 * A copy of a value whose numbers print with 17 digits: cJSON's own
 * printing rounds DBL_MAX up to a number that reads back as infinity.
 */

static cJSON *
ngx_diff_exact(cJSON *json)
{
    char    buf[32];
    cJSON  *copy, *item;

    if (cJSON_IsNumber(json)) {
        snprintf(buf, sizeof(buf), "%.17g", json->valuedouble);
        return cJSON_CreateRaw(buf);
    }

    if (!cJSON_IsArray(json) && !cJSON_IsObject(json)) {
        return cJSON_Duplicate(json, 1);
    }

    copy = cJSON_IsArray(json) ? cJSON_CreateArray() : cJSON_CreateObject();

    cJSON_ArrayForEach(item, json) {
        if (cJSON_IsArray(json)) {
            cJSON_AddItemToArray(copy, ngx_diff_exact(item));

        } else {
            cJSON_AddItemToObject(copy, item->string, ngx_diff_exact(item));
        }
    }

    return copy;
}


static cJSON *
ngx_diff_message(ngx_http_mcp_msg_t *msg)
{
    cJSON  *out, *name, *args, *id;

    out = cJSON_CreateObject();
    if (out == NULL) {
        return NULL;
    }

    cJSON_AddNumberToObject(out, "type", msg->type);

    if (msg->type == NGX_HTTP_MCP_MSG_INVALID) {
        return out;
    }

    if (msg->method.len) {
        cJSON_AddItemToObject(out, "method",
            cJSON_CreateString((char *) msg->method.data));
    }

    /* an integer id is raw text: send it as a string, and say so */
    if (msg->id != NULL) {
        if (cJSON_IsRaw(msg->id)) {
            id = cJSON_CreateString(msg->id->valuestring);
            cJSON_AddTrueToObject(out, "id_raw");

        } else {
            id = cJSON_Duplicate(msg->id, 1);
        }

        cJSON_AddItemToObject(out, "id", id);
    }

    if (msg->params != NULL) {
        name = cJSON_GetObjectItemCaseSensitive(msg->params, "name");
        args = cJSON_GetObjectItemCaseSensitive(msg->params, "arguments");

        if (cJSON_IsString(name)) {
            cJSON_AddItemToObject(out, "name",
                                  cJSON_CreateString(name->valuestring));
        }

        if (args != NULL) {
            cJSON_AddItemToObject(out, "arguments", ngx_diff_exact(args));
        }
    }

    return out;
}


static void
ngx_diff_one(u_char *body, size_t size)
{
    char                *text;
    cJSON               *root, *out, *list;
    ngx_int_t            rc;
    ngx_uint_t           i, batch;
    ngx_pool_t          *pool;
    const char          *error;
    ngx_array_t          msgs;
    ngx_http_mcp_msg_t  *msg;

    pool = ngx_shim_pool_create();
    out = cJSON_CreateObject();

    if (pool == NULL || out == NULL
        || ngx_array_init(&msgs, pool, 1, sizeof(ngx_http_mcp_msg_t))
           != NGX_OK)
    {
        fprintf(stderr, "diff_jsonrpc: out of memory\n");
        exit(2);
    }

    root = NULL;
    rc = ngx_http_mcp_jsonrpc_parse(pool, body, size, &root, &msgs, &batch,
                                    &error);

    cJSON_AddBoolToObject(out, "ok", rc == NGX_OK);

    if (rc == NGX_OK) {
        ngx_diff_tree(body, size, root);
        ngx_diff_print(pool, root);
        cJSON_AddBoolToObject(out, "batch", batch);
        list = cJSON_AddArrayToObject(out, "msgs");
        msg = msgs.elts;

        for (i = 0; i < msgs.nelts; i++) {
            cJSON_AddItemToArray(list, ngx_diff_message(&msg[i]));
            cJSON_Delete(msg[i].id);
        }
    }

    text = cJSON_PrintUnformatted(out);
    if (text == NULL) {
        fprintf(stderr, "diff_jsonrpc: out of memory\n");
        exit(2);
    }

    puts(text);

    cJSON_free(text);
    cJSON_Delete(out);
    cJSON_Delete(root);
    ngx_shim_pool_destroy(pool);
}


int
main(void)
{
    u_char    head[4], *body;
    uint32_t  size;

    while (fread(head, 1, 4, stdin) == 4) {
        size = head[0] | head[1] << 8 | head[2] << 16
               | (uint32_t) head[3] << 24;

        body = malloc(size ? size : 1);
        if (body == NULL || fread(body, 1, size, stdin) != size) {
            fprintf(stderr, "diff_jsonrpc: short input\n");
            return 2;
        }

        ngx_diff_one(body, size);
        free(body);
        fflush(stdout);
    }

    return 0;
}


/* the module's tree against cJSON_Parse()'s, where cJSON takes the body */

static void
ngx_diff_tree(u_char *body, size_t size, cJSON *root)
{
    cJSON  *cj;

    cj = cJSON_ParseWithLength((const char *) body, size);
    if (cj == NULL) {
        /* cJSON cuts numbers of over 63 characters; Python compares */
        return;
    }

    if (root->prev != NULL || root->next != NULL || !ngx_diff_same(root, cj))
    {
        fprintf(stderr, "diff_jsonrpc: the tree differs from cJSON's: "
                "%.*s\n", (int) size, body);
        abort();
    }

    cJSON_Delete(cj);
}


static ngx_uint_t
ngx_diff_same(cJSON *a, cJSON *b)
{
    char   *text;
    cJSON  *x, *y;

    text = a->valuestring;

    /* a progress token's number keeps its text: it reads as the value */
    if (cJSON_IsNumber(a) && text != NULL) {
        if (a->string == NULL || strcmp(a->string, "progressToken") != 0
            || strtod(text, NULL) != a->valuedouble)
        {
            return 0;
        }

        text = NULL;
    }

    /*
     * the types, not how the names are held: a name the module knows
     * points at its literal (cJSON_StringIsConst), where cJSON copies
     */
    if ((a->type & 0xff) != (b->type & 0xff) || a->valueint != b->valueint
        || memcmp(&a->valuedouble, &b->valuedouble, sizeof(double)) != 0
        || (a->string == NULL) != (b->string == NULL)
        || (a->string && strcmp(a->string, b->string) != 0)
        || (text == NULL) != (b->valuestring == NULL)
        || (text && strcmp(text, b->valuestring) != 0)
        || (a->child == NULL) != (b->child == NULL))
    {
        return 0;
    }

    for (x = a->child, y = b->child; x && y; x = x->next, y = y->next) {

        /* cJSON's links: the first child's prev is the last child */
        if ((x->next == NULL && a->child->prev != x)
            || (x != a->child && x->prev->next != x)
            || !ngx_diff_same(x, y))
        {
            return 0;
        }
    }

    return x == NULL && y == NULL;
}


/* the module's print of the tree against cJSON's, byte for byte */

static void
ngx_diff_print(ngx_pool_t *pool, cJSON *root)
{
    char     *theirs;
    size_t    len;
    u_char   *mine;

    mine = ngx_http_mcp_json_print(pool, root, &len);
    theirs = cJSON_PrintUnformatted(root);

    if (mine == NULL || theirs == NULL || len != strlen(theirs)
        || memcmp(mine, theirs, len) != 0 || mine[len] != '\0')
    {
        fprintf(stderr, "diff_jsonrpc: the print differs from cJSON's:\n"
                "%s\n%s\n", mine ? (char *) mine : "(null)",
                theirs ? theirs : "(null)");
        abort();
    }

    cJSON_free(theirs);
}
