
/*
 * mcp_pass_pin: tool definitions pinned at the gateway.  A definition is
 * a tool's name, title, description, inputSchema, outputSchema and
 * annotations; its digest the SHA-256 of their canonical JSON (RFC 8785,
 * ngx_http_mcp_jcs.c), and each field's digest too, to tell which one
 * changed.  The pins come from a file (mcp_pass_pin_file, as
 * tools/mcp-pin.mjs writes it from an upstream's list), or are learnt
 * in the zone from the first list that shows a tool.
 *
 * Every tools/list the gateway relays is read (ngx_http_mcp_proxy_check.c
 * calls here for each list): a tool whose digest is not its pin (changed,
 * or new to the file) is logged once per digest at "warn", with both
 * digests and the fields that changed, and counted; under "enforce" it
 * is taken out of the list, and a tools/call of it is refused until the
 * upstream lists it as pinned again.  Lists from replicas that disagree
 * are changes too: the zone is one for all of them.
 *
 * A worker keeps, for each location, the last definition of each tool
 * it digested (the memo): a tool listed as it was last time is not
 * serialised and digested again (three quarters of a pinned list's
 * instructions, bench-cpu's pin case), but its digest still goes to the
 * zone, as every list's must.
 *
 * In front of it, the memo of lists, for pins and for mcp_pass_retry's
 * hints alike (either reads every list): the last few tools/list
 * replies a worker relayed for a location as they came, unchanged.  A
 * JSON reply the same to the byte but for its id's value (the client's
 * own, echoed) is relayed with no parse, no digest and no write to the
 * zone (bench-cpu: a pinned list 147k instructions to 38k, an unpinned
 * one 114k to 38k), while the zone's version of the tools
 * (ngx_http_mcp_tools_version()) is the one a whole read of those
 * bytes found unmoved across its own writes: then the zone holds what
 * the list would write.  Any change of a tool's record, by any worker
 * (a pin learnt, a replica listing another definition, a change told,
 * hints, a record evicted), moves it, and every memo's lists are read
 * whole again.  A reload makes new memos (the pin file and the mode are
 * the configuration's).  What depends on the caller (mcp_tools_allow,
 * the token's scopes) is asked anew of each tool the list names.  A list
 * the gateway changed (a tool left out) is never kept: read whole each
 * time, as are SSE replies, batches, and the lists of a location that
 * checks schemas, has views or guards lists.
 */


#include "ngx_http_mcp_proxy.h"
#include "ngx_http_mcp_jcs.h"
#include "ngx_http_mcp_json.h"
#include "ngx_http_mcp_metrics.h"


/* a pin file's pins: at most this big */
#define NGX_HTTP_MCP_PIN_FILE_MAX  (4 * 1024 * 1024)

/*
 * A location's memo, in each worker: at most as many tools as the zone
 * keeps for all upstreams, and about this many bytes of their trees (a
 * list is bounded by mcp_pass_filter_buffer_size, but the memo outlives
 * lists: an upstream naming new tools every time would fill it).
 */
#define NGX_HTTP_MCP_PIN_MEMO_MAX   1024
#define NGX_HTTP_MCP_PIN_MEMO_SIZE  (4 * 1024 * 1024)


/*
 * A location's memo of lists, in each worker: at most so many, of at
 * most so many bytes together (a list of more than a quarter of them is
 * not kept: read whole each time).
 */
#define NGX_HTTP_MCP_LIST_MEMO_MAX   8
#define NGX_HTTP_MCP_LIST_MEMO_SIZE  (1024 * 1024)


typedef struct {
    ngx_str_t                  name;
    ngx_http_mcp_pin_t         pin;
} ngx_http_mcp_pin_entry_t;


/* a list as it came; the entry, its names and the reply in one block */
typedef struct {
    ngx_queue_t                queue;
    ngx_atomic_uint_t          version;     /* the zone's tools, unmoved
                                               while the list was read */
    size_t                     size;
    u_char                    *data;        /* the reply */
    size_t                     len;
    size_t                     prefix;      /* its bytes before the id's */
    size_t                     suffix;      /* and after the id's */
    ngx_str_t                 *names;       /* the tools it listed */
    ngx_uint_t                 nnames;
    ngx_int_t                  code;        /* the request's outcome */
    ngx_uint_t                 outcome;
} ngx_http_mcp_list_memo_entry_t;


struct ngx_http_mcp_list_memo_s {
    ngx_queue_t                queue;       /* the last used first */
    ngx_uint_t                 n;
    size_t                     size;
};


/* a tool as last digested; sn first: the rbtree's node is the entry's */
typedef struct {
    ngx_str_node_t             sn;
    ngx_queue_t                queue;
    cJSON                     *def[NGX_HTTP_MCP_PIN_FIELDS];  /* copies,
                                               NULL: absent */
    size_t                     size;
    ngx_http_mcp_pin_t         pin;
    ngx_http_mcp_pin_t        *file;        /* the pin file's, or NULL */
    ngx_uint_t                 fields;      /* pin.fields digested too */
} ngx_http_mcp_pin_memo_entry_t;


struct ngx_http_mcp_pin_memo_s {
    ngx_rbtree_t               tree;        /* by tool name */
    ngx_rbtree_node_t          sentinel;
    ngx_queue_t                queue;       /* the last used first */
    ngx_uint_t                 n;
    size_t                     size;
};


static const char  *ngx_http_mcp_pin_fields[NGX_HTTP_MCP_PIN_FIELDS] = {
    "name", "title", "description", "inputSchema", "outputSchema",
    "annotations"
};


static ngx_int_t ngx_http_mcp_pin_hex(cJSON *value, u_char *digest);
static ngx_int_t ngx_http_mcp_pin_entry(ngx_conf_t *cf, cJSON *tool,
    ngx_http_mcp_pin_entry_t *e);
static ngx_http_mcp_pin_t *ngx_http_mcp_pin_find(
    ngx_http_mcp_proxy_loc_conf_t *plcf, ngx_str_t *name);
static ngx_int_t ngx_http_mcp_pin_tool(void *data, cJSON *tool,
    ngx_str_t *name);
static void ngx_http_mcp_pin_def(cJSON *tool, cJSON **def);
static ngx_int_t ngx_http_mcp_pin_of(ngx_pool_t *pool, cJSON **of,
    ngx_http_mcp_pin_t *pin, ngx_uint_t fields);
static ngx_http_mcp_pin_memo_entry_t *ngx_http_mcp_pin_memo_find(
    ngx_http_mcp_pin_memo_t *memo, cJSON **def, ngx_str_t *name,
    ngx_uint_t fields);
static ngx_uint_t ngx_http_mcp_pin_same(cJSON *a, cJSON *b);
static void ngx_http_mcp_pin_memo_keep(ngx_http_mcp_pin_memo_t *memo,
    ngx_log_t *log, cJSON **def, ngx_str_t *name, ngx_http_mcp_pin_t *seen,
    ngx_uint_t fields, ngx_http_mcp_pin_t *file);
static size_t ngx_http_mcp_pin_size(cJSON *json);
static void ngx_http_mcp_pin_memo_drop(ngx_http_mcp_pin_memo_t *memo,
    ngx_http_mcp_pin_memo_entry_t *e);
static void ngx_http_mcp_pin_memo_cleanup(void *data);
static void ngx_http_mcp_pin_tell(ngx_http_request_t *r, ngx_str_t *name,
    ngx_http_mcp_pin_t *seen, ngx_http_mcp_pin_t *pin, ngx_uint_t enforce);
static void ngx_http_mcp_list_memo_cleanup(void *data);
static void ngx_http_mcp_list_memo_drop(ngx_http_mcp_list_memo_t *memo,
    ngx_http_mcp_list_memo_entry_t *e);
static ngx_http_mcp_msg_t *ngx_http_mcp_list_memo_of(
    ngx_http_mcp_proxy_ctx_t *pctx);
static ngx_int_t ngx_http_mcp_list_memo_span(u_char *p, u_char *end,
    u_char **start, u_char **last);
static u_char *ngx_http_mcp_list_memo_space(u_char *p, u_char *end);
static u_char *ngx_http_mcp_list_memo_skip(u_char *p, u_char *end);
static ngx_uint_t ngx_http_mcp_list_memo_id(u_char *p, u_char *last,
    cJSON *id);


/*
 * mcp_pass_pin_file path: {"tools": {"<name>": {"digest": "<hex>",
 * "fields": {"description": "<hex>", ...}}}}, read at configuration.
 */

char *
ngx_http_mcp_pass_pin_file(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_mcp_proxy_loc_conf_t  *plcf = conf;

    cJSON                     *root, *tools, *tool;
    ngx_str_t                 *value, text;
    const char                *error;
    ngx_http_mcp_pin_entry_t  *e;

    if (plcf->pins != NGX_CONF_UNSET_PTR) {
        return "is duplicate";
    }

    value = cf->args->elts;

    if (ngx_http_mcp_conf_file(cf, &value[1], NGX_HTTP_MCP_PIN_FILE_MAX,
                               &text)
        != NGX_OK)
    {
        return NGX_CONF_ERROR;
    }

    error = NULL;

    if (ngx_http_mcp_json_parse(cf->temp_pool, text.data, text.len, NULL,
                                &root, &error)
        != NGX_OK)
    {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "pin file \"%V\" is not strict JSON: %s",
                           &value[1], error ? error : "no memory");
        return NGX_CONF_ERROR;
    }

    tools = cJSON_GetObjectItemCaseSensitive(root, "tools");

    if (!cJSON_IsObject(tools)) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "pin file \"%V\" has no \"tools\" object",
                           &value[1]);
        cJSON_Delete(root);
        return NGX_CONF_ERROR;
    }

    plcf->pins = ngx_array_create(cf->pool, 16,
                                  sizeof(ngx_http_mcp_pin_entry_t));
    if (plcf->pins == NULL) {
        cJSON_Delete(root);
        return NGX_CONF_ERROR;
    }

    cJSON_ArrayForEach(tool, tools) {

        e = ngx_array_push(plcf->pins);

        if (e == NULL || ngx_http_mcp_pin_entry(cf, tool, e) != NGX_OK) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "pin file \"%V\": the pin of tool \"%s\" is "
                               "not {\"digest\": 64 hex digits, \"fields\": "
                               "{...}}", &value[1], tool->string);
            cJSON_Delete(root);
            return NGX_CONF_ERROR;
        }
    }

    cJSON_Delete(root);

    return NGX_CONF_OK;
}


static ngx_int_t
ngx_http_mcp_pin_entry(ngx_conf_t *cf, cJSON *tool,
    ngx_http_mcp_pin_entry_t *e)
{
    cJSON       *fields, *f;
    ngx_uint_t   i;

    ngx_memzero(e, sizeof(ngx_http_mcp_pin_entry_t));

    e->name.len = ngx_strlen(tool->string);
    e->name.data = ngx_pnalloc(cf->pool, e->name.len);

    if (e->name.data == NULL) {
        return NGX_ERROR;
    }

    ngx_memcpy(e->name.data, tool->string, e->name.len);

    if (ngx_http_mcp_pin_hex(cJSON_GetObjectItemCaseSensitive(tool,
                                                                 "digest"),
                                e->pin.digest)
           != NGX_OK)
    {
        return NGX_ERROR;
    }

    /* the fields' digests tell which changed; without them, only that */
    fields = cJSON_GetObjectItemCaseSensitive(tool, "fields");

    for (i = 0; i < NGX_HTTP_MCP_PIN_FIELDS && cJSON_IsObject(fields); i++) {
        f = cJSON_GetObjectItemCaseSensitive(fields,
                                             ngx_http_mcp_pin_fields[i]);

        if (f != NULL
            && ngx_http_mcp_pin_hex(f, e->pin.fields[i]) != NGX_OK)
        {
            return NGX_ERROR;
        }
    }

    return NGX_OK;
}


static ngx_int_t
ngx_http_mcp_pin_hex(cJSON *value, u_char *digest)
{
    u_char      *p;
    ngx_int_t    hi, lo;
    ngx_uint_t   i;

    if (!cJSON_IsString(value)
        || ngx_strlen(value->valuestring) != NGX_HTTP_MCP_JCS_DIGEST_LEN)
    {
        return NGX_ERROR;
    }

    p = (u_char *) value->valuestring;

    for (i = 0; i < 32; i++) {
        hi = ngx_hextoi(p + 2 * i, 1);
        lo = ngx_hextoi(p + 2 * i + 1, 1);

        if (hi == NGX_ERROR || lo == NGX_ERROR) {
            return NGX_ERROR;
        }

        digest[i] = (u_char) (hi << 4 | lo);
    }

    return NGX_OK;
}


static ngx_http_mcp_pin_t *
ngx_http_mcp_pin_find(ngx_http_mcp_proxy_loc_conf_t *plcf, ngx_str_t *name)
{
    ngx_uint_t                 i;
    ngx_http_mcp_pin_entry_t  *e;

    e = plcf->pins->elts;

    for (i = 0; i < plcf->pins->nelts; i++) {
        if (e[i].name.len == name->len
            && ngx_memcmp(e[i].name.data, name->data, name->len) == 0)
        {
            return &e[i].pin;
        }
    }

    return NULL;
}


/*
 * A tools/list result relayed: each tool against its pin; under enforce,
 * one that is not as pinned leaves the list (*changed).
 */

ngx_int_t
ngx_http_mcp_proxy_pin_list(ngx_http_mcp_proxy_ctx_t *pctx, cJSON *result,
    ngx_uint_t *changed)
{
    ngx_int_t  rc;

    pctx->pin_no_room = 0;

    rc = ngx_http_mcp_jsonrpc_tools(result, ngx_http_mcp_pin_tool, pctx,
                                    changed);

    if (pctx->pin_no_room) {
        /* told again for the next list: not one of the memo's */
        pctx->memo_names = NULL;

        /* one line a list: an upstream listing ever more tools is one */
        ngx_log_error(NGX_LOG_WARN, pctx->ctx->request->connection->log, 0,
                      "mcp: no room in the zone to pin %ui tool%s of the "
                      "list%s", pctx->pin_no_room,
                      pctx->pin_no_room == 1 ? "" : "s",
                      pctx->conf->pin == NGX_HTTP_MCP_PIN_ENFORCE
                      ? ", left out" : "");
    }

    return rc;
}


static ngx_int_t
ngx_http_mcp_pin_tool(void *data, cJSON *tool, ngx_str_t *name)
{
    ngx_http_mcp_proxy_ctx_t *pctx = data;

    cJSON                          *def[NGX_HTTP_MCP_PIN_FIELDS];
    ngx_int_t                       rc;
    ngx_uint_t                      tell, learn, enforce;
    ngx_http_request_t             *r;
    ngx_http_mcp_pin_t              seen, pin, *file;
    ngx_http_mcp_proxy_loc_conf_t  *plcf;
    ngx_http_mcp_pin_memo_entry_t  *e;

    r = pctx->ctx->request;
    plcf = pctx->conf;
    learn = (plcf->pins == NULL);
    enforce = (plcf->pin == NGX_HTTP_MCP_PIN_ENFORCE);

    /*
     * The fields' digests are wanted only to tell a change, or to be
     * learnt: a list held to a file's pins digests each tool once, not
     * seven times (bench-cpu's pin case).
     */

    ngx_http_mcp_pin_def(tool, def);

    e = ngx_http_mcp_pin_memo_find(plcf->pin_memo, def, name, learn);

    if (e != NULL) {
        seen = e->pin;
        file = e->file;

    } else {
        if (ngx_http_mcp_pin_of(r->pool, def, &seen, learn) != NGX_OK) {
            return NGX_ERROR;
        }

        file = learn ? NULL : ngx_http_mcp_pin_find(plcf, name);

        ngx_http_mcp_pin_memo_keep(plcf->pin_memo, r->connection->log, def,
                                   name, &seen, learn, file);
    }

    if (learn) {
        file = &pin;
    }

    rc = ngx_http_mcp_tools_pin(pctx->ctx->conf->zone, &plcf->tools_key,
                                name, &seen, file, learn, &tell);

    if (rc == NGX_OK) {
        return NGX_OK;
    }

    if (rc == NGX_AGAIN) {
        /* the zone has no room to keep it: no pin to hold it to */
        pctx->pin_no_room++;

    } else if (tell) {
        if (!learn
            && ngx_http_mcp_pin_of(r->pool, def, &seen, 1) != NGX_OK)
        {
            return NGX_ERROR;
        }

        ngx_http_mcp_pin_tell(r, name, &seen, file, enforce);
    }

    return enforce ? NGX_DECLINED : NGX_OK;
}


/*
 * A tool's fields of its definition (NULL: absent), in one walk of its
 * members: the first of a name, as cJSON_GetObjectItemCaseSensitive()
 * finds it (the strict parser lets no name come twice).
 */

static void
ngx_http_mcp_pin_def(cJSON *tool, cJSON **def)
{
    cJSON       *item;
    ngx_uint_t   i;

    ngx_memzero(def, NGX_HTTP_MCP_PIN_FIELDS * sizeof(cJSON *));

    for (item = tool->child; item != NULL; item = item->next) {

        if (item->string == NULL) {
            continue;
        }

        for (i = 0; i < NGX_HTTP_MCP_PIN_FIELDS; i++) {
            if (item->string[0] == ngx_http_mcp_pin_fields[i][0]
                && ngx_strcmp(item->string, ngx_http_mcp_pin_fields[i]) == 0)
            {
                if (def[i] == NULL) {
                    def[i] = item;
                }

                break;
            }
        }
    }
}


/*
 * A tool's definition (its fields, ngx_http_mcp_pin_def()) digested, and
 * with fields each of its fields.
 */

static ngx_int_t
ngx_http_mcp_pin_of(ngx_pool_t *pool, cJSON **of, ngx_http_mcp_pin_t *pin,
    ngx_uint_t fields)
{
    cJSON       *def, *field;
    ngx_int_t    rc;
    ngx_uint_t   i;

    ngx_memzero(pin, sizeof(ngx_http_mcp_pin_t));

    def = cJSON_CreateObject();
    if (def == NULL) {
        return NGX_ERROR;
    }

    rc = NGX_OK;

    for (i = 0; i < NGX_HTTP_MCP_PIN_FIELDS && rc == NGX_OK; i++) {
        field = of[i];
        if (field == NULL) {
            continue;
        }

        /* a reference: the list keeps its items */
        if (!cJSON_AddItemReferenceToObject(def, ngx_http_mcp_pin_fields[i],
                                            field)
            || (fields
                && ngx_http_mcp_jcs_digest(pool, field, pin->fields[i])
                   != NGX_OK))
        {
            rc = NGX_ERROR;
        }
    }

    if (rc == NGX_OK) {
        rc = ngx_http_mcp_jcs_digest(pool, def, pin->digest);
    }

    cJSON_Delete(def);

    return rc;
}


/*
 * The memo of a location (merged with mcp_pass_pin on): its trees are
 * the worker's own (cJSON's allocator), freed with the configuration.
 */

ngx_int_t
ngx_http_mcp_proxy_pin_memo(ngx_conf_t *cf,
    ngx_http_mcp_proxy_loc_conf_t *plcf)
{
    ngx_pool_cleanup_t       *cln;
    ngx_http_mcp_pin_memo_t  *memo;

    if (plcf->pin_memo != NULL) {
        return NGX_OK;
    }

    memo = ngx_pcalloc(cf->pool, sizeof(ngx_http_mcp_pin_memo_t));
    if (memo == NULL) {
        return NGX_ERROR;
    }

    ngx_rbtree_init(&memo->tree, &memo->sentinel,
                    ngx_str_rbtree_insert_value);
    ngx_queue_init(&memo->queue);

    cln = ngx_pool_cleanup_add(cf->pool, 0);
    if (cln == NULL) {
        return NGX_ERROR;
    }

    cln->handler = ngx_http_mcp_pin_memo_cleanup;
    cln->data = memo;

    plcf->pin_memo = memo;

    return NGX_OK;
}


static void
ngx_http_mcp_pin_memo_cleanup(void *data)
{
    ngx_http_mcp_pin_memo_t *memo = data;

    while (!ngx_queue_empty(&memo->queue)) {
        ngx_http_mcp_pin_memo_drop(memo,
            ngx_queue_data(ngx_queue_last(&memo->queue),
                           ngx_http_mcp_pin_memo_entry_t, queue));
    }
}


/*
 * The memo's digests of a tool listed exactly as the memo keeps it:
 * each of its fields as the copy's, the same types, members in the same
 * order (an upstream that reorders them only misses), strings byte for
 * byte, numbers bit for bit.  Not cJSON_Compare(): it takes two numbers
 * an epsilon apart for one, so a schema's 1 changed to
 * 1.0000000000000002 would keep the old digest.  NULL: digest it.
 */

static ngx_http_mcp_pin_memo_entry_t *
ngx_http_mcp_pin_memo_find(ngx_http_mcp_pin_memo_t *memo, cJSON **def,
    ngx_str_t *name, ngx_uint_t fields)
{
    ngx_uint_t                      i;
    ngx_str_node_t                 *sn;
    ngx_http_mcp_pin_memo_entry_t  *e;

    if (memo == NULL) {
        return NULL;
    }

    sn = ngx_str_rbtree_lookup(&memo->tree, name,
                               ngx_crc32_short(name->data, name->len));
    if (sn == NULL) {
        return NULL;
    }

    e = (ngx_http_mcp_pin_memo_entry_t *) sn;

    if (fields && !e->fields) {
        return NULL;
    }

    for (i = 0; i < NGX_HTTP_MCP_PIN_FIELDS; i++) {
        if (!ngx_http_mcp_pin_same(def[i], e->def[i])) {
            return NULL;
        }
    }

    ngx_queue_remove(&e->queue);
    ngx_queue_insert_head(&memo->queue, &e->queue);

    return e;
}


/*
 * Two values the same to the last byte and bit.  The recursion ends
 * with the memo's copy, which JCS walked whole (its depth bounded).
 */

static ngx_uint_t
ngx_http_mcp_pin_same(cJSON *a, cJSON *b)
{
    uint64_t    x, y;
    ngx_uint_t  object;

    if (a == NULL || b == NULL) {
        return a == b;
    }

    if ((a->type & 0xff) != (b->type & 0xff)) {
        return 0;
    }

    switch (a->type & 0xff) {

    case cJSON_NULL:
    case cJSON_True:
    case cJSON_False:
        return 1;

    case cJSON_Number:
        /* bits: 0 and -0 are two, a miss (JCS would make them one) */
        ngx_memcpy(&x, &a->valuedouble, sizeof(uint64_t));
        ngx_memcpy(&y, &b->valuedouble, sizeof(uint64_t));
        return x == y;

    case cJSON_String:
        return a->valuestring != NULL && b->valuestring != NULL
               && ngx_strcmp(a->valuestring, b->valuestring) == 0;

    case cJSON_Array:
    case cJSON_Object:
        object = ((a->type & 0xff) == cJSON_Object);

        for (a = a->child, b = b->child;
             a != NULL && b != NULL;
             a = a->next, b = b->next)
        {
            if (object
                && (a->string == NULL || b->string == NULL
                    || ngx_strcmp(a->string, b->string) != 0))
            {
                return 0;
            }

            if (!ngx_http_mcp_pin_same(a, b)) {
                return 0;
            }
        }

        /* a member added or taken away */
        return a == NULL && b == NULL;

    default:
        return 0;
    }
}


/*
 * A tool just digested: its fields copied, with the digests, in place
 * of what the memo kept of it; the least recently used make room.  No
 * memory: no memo of it, the tool is digested next time too.
 */

static void
ngx_http_mcp_pin_memo_keep(ngx_http_mcp_pin_memo_t *memo, ngx_log_t *log,
    cJSON **field, ngx_str_t *name, ngx_http_mcp_pin_t *seen,
    ngx_uint_t fields, ngx_http_mcp_pin_t *file)
{
    size_t                          size;
    uint32_t                        hash;
    ngx_uint_t                      i;
    ngx_str_node_t                 *sn;
    ngx_http_mcp_pin_memo_entry_t  *e;

    if (memo == NULL) {
        return;
    }

    hash = ngx_crc32_short(name->data, name->len);
    sn = ngx_str_rbtree_lookup(&memo->tree, name, hash);

    if (sn != NULL) {
        ngx_http_mcp_pin_memo_drop(memo, (ngx_http_mcp_pin_memo_entry_t *) sn);
    }

    size = sizeof(ngx_http_mcp_pin_memo_entry_t) + name->len;

    for (i = 0; i < NGX_HTTP_MCP_PIN_FIELDS; i++) {
        size += ngx_http_mcp_pin_size(field[i]);
    }

    if (size > NGX_HTTP_MCP_PIN_MEMO_SIZE) {
        return;
    }

    while (memo->n >= NGX_HTTP_MCP_PIN_MEMO_MAX
           || memo->size + size > NGX_HTTP_MCP_PIN_MEMO_SIZE)
    {
        ngx_http_mcp_pin_memo_drop(memo,
            ngx_queue_data(ngx_queue_last(&memo->queue),
                           ngx_http_mcp_pin_memo_entry_t, queue));
    }

    e = ngx_alloc(sizeof(ngx_http_mcp_pin_memo_entry_t) + name->len, log);
    if (e == NULL) {
        return;
    }

    ngx_memzero(e, sizeof(ngx_http_mcp_pin_memo_entry_t));

    for (i = 0; i < NGX_HTTP_MCP_PIN_FIELDS; i++) {
        if (field[i] == NULL) {
            continue;
        }

        e->def[i] = cJSON_Duplicate(field[i], 1);

        if (e->def[i] == NULL) {
            while (i--) {
                cJSON_Delete(e->def[i]);
            }

            ngx_free(e);
            return;
        }
    }

    e->sn.str.len = name->len;
    e->sn.str.data = (u_char *) (e + 1);
    ngx_memcpy(e->sn.str.data, name->data, name->len);
    e->sn.node.key = hash;

    e->size = size;
    e->pin = *seen;
    e->file = file;
    e->fields = fields;

    ngx_rbtree_insert(&memo->tree, &e->sn.node);
    ngx_queue_insert_head(&memo->queue, &e->queue);
    memo->n++;
    memo->size += size;
}


/* about what a copy of a value takes: its nodes and their strings */

static size_t
ngx_http_mcp_pin_size(cJSON *json)
{
    size_t  size;

    if (json == NULL) {
        return 0;
    }

    size = sizeof(cJSON);

    if (json->string != NULL) {
        size += ngx_strlen(json->string) + 1;
    }

    if (cJSON_IsString(json) && json->valuestring != NULL) {
        size += ngx_strlen(json->valuestring) + 1;
    }

    for (json = json->child; json != NULL; json = json->next) {
        size += ngx_http_mcp_pin_size(json);
    }

    return size;
}


static void
ngx_http_mcp_pin_memo_drop(ngx_http_mcp_pin_memo_t *memo,
    ngx_http_mcp_pin_memo_entry_t *e)
{
    ngx_uint_t  i;

    ngx_rbtree_delete(&memo->tree, &e->sn.node);
    ngx_queue_remove(&e->queue);

    for (i = 0; i < NGX_HTTP_MCP_PIN_FIELDS; i++) {
        if (e->def[i] != NULL) {
            cJSON_Delete(e->def[i]);
        }
    }

    memo->n--;
    memo->size -= e->size;

    ngx_free(e);
}


/* a change, told once: both digests, and which fields changed */

static void
ngx_http_mcp_pin_tell(ngx_http_request_t *r, ngx_str_t *name,
    ngx_http_mcp_pin_t *seen, ngx_http_mcp_pin_t *pin, ngx_uint_t enforce)
{
    u_char      now[NGX_HTTP_MCP_JCS_DIGEST_LEN];
    u_char      was[NGX_HTTP_MCP_JCS_DIGEST_LEN];
    u_char      fields[128], *p, *last;
    ngx_uint_t  i;

    static u_char  zero[32];

    ngx_http_mcp_metrics_pin_change();

    (void) ngx_hex_dump(now, seen->digest, 32);

    if (pin == NULL) {
        ngx_log_error(NGX_LOG_WARN, r->connection->log, 0,
                      "mcp: tool \"%V\" is not pinned (digest %*s)%s",
                      name, (size_t) NGX_HTTP_MCP_JCS_DIGEST_LEN, now,
                      enforce ? ", left out" : "");
        return;
    }

    (void) ngx_hex_dump(was, pin->digest, 32);

    p = fields;
    last = fields + sizeof(fields);

    for (i = 0; i < NGX_HTTP_MCP_PIN_FIELDS; i++) {
        if (ngx_memcmp(pin->fields[i], zero, 32) == 0
            && ngx_memcmp(seen->fields[i], zero, 32) == 0)
        {
            continue;
        }

        if (ngx_memcmp(pin->fields[i], seen->fields[i], 32) != 0) {
            p = ngx_slprintf(p, last, "%s%s", p == fields ? "" : ",",
                             ngx_http_mcp_pin_fields[i]);
        }
    }

    ngx_log_error(NGX_LOG_WARN, r->connection->log, 0,
                  "mcp: tool \"%V\" changed since pinned: %*s, now %*s, "
                  "fields %*s%s", name,
                  (size_t) NGX_HTTP_MCP_JCS_DIGEST_LEN, was,
                  (size_t) NGX_HTTP_MCP_JCS_DIGEST_LEN, now,
                  p == fields ? (size_t) 1 : (size_t) (p - fields),
                  p == fields ? (u_char *) "?" : fields,
                  enforce ? ", left out" : "");
}


/*
 * Under enforce, a tools/call of a tool not as pinned: NGX_DECLINED with
 * *why.  A tool no list has shown yet goes on when a file pins its name
 * (or pins are learnt: the first list pins it); its definition is held
 * to the pin as soon as a list shows it.
 */

ngx_int_t
ngx_http_mcp_proxy_pin_call(ngx_http_mcp_proxy_ctx_t *pctx, ngx_str_t *tool,
    const char **why)
{
    u_char                          seen[32], learnt[32];
    ngx_http_mcp_pin_t             *pin;
    ngx_http_mcp_proxy_loc_conf_t  *plcf;

    plcf = pctx->conf;

    if (plcf->pin != NGX_HTTP_MCP_PIN_ENFORCE) {
        return NGX_OK;
    }

    pin = (plcf->pins != NULL) ? ngx_http_mcp_pin_find(plcf, tool) : NULL;

    if (plcf->pins != NULL && pin == NULL) {
        *why = "Tool not allowed: it is not pinned";
        return NGX_DECLINED;
    }

    if (ngx_http_mcp_tools_seen(pctx->ctx->conf->zone, &plcf->tools_key,
                                tool, seen, learnt)
        != NGX_OK)
    {
        return NGX_OK;
    }

    if (ngx_memcmp(seen, pin ? pin->digest : learnt, 32) == 0) {
        return NGX_OK;
    }

    *why = "Tool not allowed: its definition changed since it was pinned";

    return NGX_DECLINED;
}


/*
 * A location's memo of lists (mcp_pass_pin, or mcp_pass_retry, which
 * reads every list for its tools' hints): its entries the worker's own
 * memory, freed with the configuration.
 */

ngx_int_t
ngx_http_mcp_proxy_list_memo(ngx_conf_t *cf,
    ngx_http_mcp_proxy_loc_conf_t *plcf)
{
    ngx_pool_cleanup_t        *cln;
    ngx_http_mcp_list_memo_t  *memo;

    if (plcf->list_memo != NULL) {
        return NGX_OK;
    }

    memo = ngx_pcalloc(cf->pool, sizeof(ngx_http_mcp_list_memo_t));
    if (memo == NULL) {
        return NGX_ERROR;
    }

    ngx_queue_init(&memo->queue);

    cln = ngx_pool_cleanup_add(cf->pool, 0);
    if (cln == NULL) {
        return NGX_ERROR;
    }

    cln->handler = ngx_http_mcp_list_memo_cleanup;
    cln->data = memo;

    plcf->list_memo = memo;

    return NGX_OK;
}


static void
ngx_http_mcp_list_memo_cleanup(void *data)
{
    ngx_http_mcp_list_memo_t *memo = data;

    while (!ngx_queue_empty(&memo->queue)) {
        ngx_http_mcp_list_memo_drop(memo,
            ngx_queue_data(ngx_queue_last(&memo->queue),
                           ngx_http_mcp_list_memo_entry_t, queue));
    }
}


static void
ngx_http_mcp_list_memo_drop(ngx_http_mcp_list_memo_t *memo,
    ngx_http_mcp_list_memo_entry_t *e)
{
    ngx_queue_remove(&e->queue);
    memo->n--;
    memo->size -= e->size;
    ngx_free(e);
}


/*
 * The POST's one request, a tools/list whose reply only the pins and
 * the hints read (and the policy, asked again by name): else NULL, the
 * reply read whole each time.
 */

static ngx_http_mcp_msg_t *
ngx_http_mcp_list_memo_of(ngx_http_mcp_proxy_ctx_t *pctx)
{
    ngx_http_mcp_msg_t             *msg;
    ngx_http_mcp_proxy_loc_conf_t  *plcf;

    plcf = pctx->conf;
    msg = pctx->ctx->msgs.elts;

    if (plcf->list_memo == NULL
        || pctx->ctx->conf->zone == NULL
        || plcf->check_arguments || plcf->check_results
        || plcf->views != NULL
        || (plcf->guard_where & NGX_HTTP_MCP_GUARD_LISTS)
        || pctx->ctx->msgs.nelts != 1
        || msg[0].type != NGX_HTTP_MCP_MSG_REQUEST
        || msg[0].method.len != sizeof("tools/list") - 1
        || ngx_strncmp(msg[0].method.data, "tools/list",
                       sizeof("tools/list") - 1)
           != 0)
    {
        return NULL;
    }

    return msg;
}


/*
 * A reply held whole (in): NGX_OK when the memo has it, to be relayed as
 * it came (tf's filter, which depends on the caller, allowing each tool
 * it lists); else NGX_DECLINED, and the reply is read whole, its names
 * noted (ngx_http_mcp_proxy_tool_visible()) for
 * ngx_http_mcp_proxy_list_memo_keep().
 */

ngx_int_t
ngx_http_mcp_proxy_list_memo_find(ngx_http_mcp_proxy_ctx_t *pctx,
    ngx_http_mcp_tool_filter_t *tf, ngx_str_t *in)
{
    u_char                          *id;
    ngx_uint_t                       i;
    ngx_queue_t                     *q;
    ngx_atomic_uint_t                version;
    ngx_http_mcp_msg_t              *msg;
    ngx_http_mcp_list_memo_t        *memo;
    ngx_http_mcp_list_memo_entry_t  *e;

    pctx->memo_names = NULL;

    msg = ngx_http_mcp_list_memo_of(pctx);
    if (msg == NULL) {
        return NGX_DECLINED;
    }

    memo = pctx->conf->list_memo;
    version = ngx_http_mcp_tools_version(pctx->ctx->conf->zone);

    for (q = ngx_queue_head(&memo->queue);
         q != ngx_queue_sentinel(&memo->queue);
         q = ngx_queue_next(q))
    {
        e = ngx_queue_data(q, ngx_http_mcp_list_memo_entry_t, queue);

        if (e->version != version
            || in->len < e->prefix + e->suffix
            || ngx_memcmp(in->data, e->data, e->prefix) != 0
            || ngx_memcmp(in->data + in->len - e->suffix,
                          e->data + e->len - e->suffix, e->suffix)
               != 0)
        {
            continue;
        }

        /* the reply answers this request, as the one kept answered its */
        id = in->data + e->prefix;

        if (!ngx_http_mcp_list_memo_id(id, in->data + in->len - e->suffix,
                                       msg->id))
        {
            continue;
        }

        for (i = 0; i < e->nnames; i++) {
            if (!tf->allowed(tf->data, &e->names[i])) {
                /* for this caller the list changes: read it */
                goto miss;
            }
        }

        msg->outcome = e->outcome;
        msg->code = e->code;

        ngx_queue_remove(&e->queue);
        ngx_queue_insert_head(&memo->queue, &e->queue);

        ngx_log_debug0(NGX_LOG_DEBUG_HTTP,
                       pctx->ctx->request->connection->log, 0,
                       "mcp proxy: the list as the memo has it");

        return NGX_OK;
    }

miss:

    pctx->memo_version = version;
    pctx->memo_names = ngx_array_create(pctx->ctx->request->pool, 16,
                                        sizeof(ngx_str_t));

    return NGX_DECLINED;
}


/*
 * A reply read whole and relayed as it came (out the same bytes): kept,
 * when the zone's version did not move while it was read (nothing the
 * reading wrote changed anything, nor did any other worker meanwhile),
 * nothing was short of room, and its id is where it can be found again.
 * The least recently used make room.  A list read while the version
 * moved (a change of its own, or a change elsewhere) is kept the next
 * time it comes: in two reads, the second writing nothing.
 */

void
ngx_http_mcp_proxy_list_memo_keep(ngx_http_mcp_proxy_ctx_t *pctx,
    ngx_str_t *in)
{
    u_char                          *p, *start, *last;
    size_t                           size;
    ngx_uint_t                       i, n;
    ngx_str_t                       *names;
    ngx_queue_t                     *q;
    ngx_http_mcp_msg_t              *msg;
    ngx_http_mcp_list_memo_t        *memo;
    ngx_http_mcp_list_memo_entry_t  *e;

    if (pctx->memo_names == NULL) {
        return;
    }

    names = pctx->memo_names->elts;
    n = pctx->memo_names->nelts;
    pctx->memo_names = NULL;

    msg = ngx_http_mcp_list_memo_of(pctx);

    if (msg == NULL
        || ngx_http_mcp_tools_version(pctx->ctx->conf->zone)
           != pctx->memo_version
        || ngx_http_mcp_list_memo_span(in->data, in->data + in->len, &start,
                                       &last)
           != NGX_OK
        || !ngx_http_mcp_list_memo_id(start, last, msg->id))
    {
        return;
    }

    memo = pctx->conf->list_memo;

    /* those of an older version can be met no more (it only grows) */
    q = ngx_queue_head(&memo->queue);

    while (q != ngx_queue_sentinel(&memo->queue)) {
        e = ngx_queue_data(q, ngx_http_mcp_list_memo_entry_t, queue);
        q = ngx_queue_next(q);

        if (e->version != pctx->memo_version) {
            ngx_http_mcp_list_memo_drop(memo, e);
        }
    }

    size = sizeof(ngx_http_mcp_list_memo_entry_t) + in->len;

    for (i = 0; i < n; i++) {
        size += sizeof(ngx_str_t) + names[i].len;
    }

    if (size > NGX_HTTP_MCP_LIST_MEMO_SIZE / 4) {
        return;
    }

    while (memo->n >= NGX_HTTP_MCP_LIST_MEMO_MAX
           || memo->size + size > NGX_HTTP_MCP_LIST_MEMO_SIZE)
    {
        ngx_http_mcp_list_memo_drop(memo,
            ngx_queue_data(ngx_queue_last(&memo->queue),
                           ngx_http_mcp_list_memo_entry_t, queue));
    }

    e = ngx_alloc(size, pctx->ctx->request->connection->log);
    if (e == NULL) {
        return;
    }

    e->version = pctx->memo_version;
    e->size = size;
    e->len = in->len;
    e->prefix = start - in->data;
    e->suffix = in->data + in->len - last;
    e->outcome = msg->outcome;
    e->code = msg->code;

    e->names = (ngx_str_t *) (e + 1);
    e->nnames = n;
    p = (u_char *) (e->names + e->nnames);

    for (i = 0; i < e->nnames; i++) {
        e->names[i].len = names[i].len;
        e->names[i].data = p;
        p = ngx_cpymem(p, names[i].data, names[i].len);
    }

    e->data = p;
    ngx_memcpy(e->data, in->data, in->len);

    ngx_queue_insert_head(&memo->queue, &e->queue);
    memo->n++;
    memo->size += size;
}


/*
 * The span [*start, *last) of the value of the "id" member of the
 * object a reply is, spelt plainly (a key with an escape: NGX_DECLINED).
 * The reply was read strictly already: valid JSON, no key twice.
 */

static ngx_int_t
ngx_http_mcp_list_memo_span(u_char *p, u_char *end, u_char **start,
    u_char **last)
{
    u_char      *key;
    ngx_uint_t   id;

    p = ngx_http_mcp_list_memo_space(p, end);

    if (p == end || *p != '{') {
        return NGX_DECLINED;
    }

    p++;

    for ( ;; ) {
        p = ngx_http_mcp_list_memo_space(p, end);

        if (p == end || *p != '"') {
            return NGX_DECLINED;
        }

        key = ++p;

        while (p < end && *p != '"' && *p != '\\') {
            p++;
        }

        if (p == end || *p != '"') {
            return NGX_DECLINED;
        }

        id = (p - key == 2 && key[0] == 'i' && key[1] == 'd');

        p = ngx_http_mcp_list_memo_space(p + 1, end);

        if (p == end || *p != ':') {
            return NGX_DECLINED;
        }

        p = ngx_http_mcp_list_memo_space(p + 1, end);

        *start = p;
        p = ngx_http_mcp_list_memo_skip(p, end);

        if (p == NULL) {
            return NGX_DECLINED;
        }

        if (id) {
            *last = p;
            return NGX_OK;
        }

        p = ngx_http_mcp_list_memo_space(p, end);

        if (p == end || *p != ',') {
            return NGX_DECLINED;
        }

        p++;
    }
}


static u_char *
ngx_http_mcp_list_memo_space(u_char *p, u_char *end)
{
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n'))
    {
        p++;
    }

    return p;
}


/* past one value: NULL when it does not end before end */

static u_char *
ngx_http_mcp_list_memo_skip(u_char *p, u_char *end)
{
    ngx_uint_t  depth, string;

    depth = 0;
    string = 0;

    for ( /* void */ ; p < end; p++) {

        if (string) {
            if (*p == '\\') {
                p++;

            } else if (*p == '"') {
                string = 0;

                if (depth == 0) {
                    return p + 1;
                }
            }

            continue;
        }

        switch (*p) {

        case '"':
            string = 1;
            break;

        case '{':
        case '[':
            depth++;
            break;

        case '}':
        case ']':
            if (depth == 0) {
                return p;
            }

            if (--depth == 0) {
                return p + 1;
            }

            break;

        case ',':
        case ' ':
        case '\t':
        case '\r':
        case '\n':
            if (depth == 0) {
                return p;
            }

            break;
        }
    }

    return (depth == 0 && !string) ? p : NULL;
}


/*
 * [p, last) the request's id as the client spelt it (the request keeps
 * an integer's digits: ngx_http_mcp_jsonrpc.c), or a string of
 * printable ASCII without escapes; else 0, and the reply is read whole.
 */

static ngx_uint_t
ngx_http_mcp_list_memo_id(u_char *p, u_char *last, cJSON *id)
{
    u_char  *q;
    size_t   len;

    if (id == NULL || p == last) {
        return 0;
    }

    if (*p == '"') {
        if (!cJSON_IsString(id) || last - p < 2 || last[-1] != '"') {
            return 0;
        }

        for (q = p + 1; q < last - 1; q++) {
            if (*q < 0x20 || *q > 0x7e || *q == '"' || *q == '\\') {
                return 0;
            }
        }

        len = last - p - 2;

        return ngx_strlen(id->valuestring) == len
               && ngx_memcmp(id->valuestring, p + 1, len) == 0;
    }

    if (!cJSON_IsRaw(id)) {
        return 0;
    }

    for (q = p; q < last; q++) {
        if ((*q < '0' || *q > '9') && *q != '-') {
            return 0;
        }
    }

    len = last - p;

    return ngx_strlen(id->valuestring) == len
           && ngx_memcmp(id->valuestring, p, len) == 0;
}
