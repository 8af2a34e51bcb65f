
/*
 * W3C Trace Context and W3C Baggage values.  A gateway passes these on
 * to other parties (an upstream's headers, its body, a client's server
 * requests), so a value is either exactly what the grammar allows or it
 * is dropped whole: never repaired, never passed on in part.  The reason
 * is the one the whole module follows: the next hop must read what this
 * one decided, and two parsers agree only on a value with one reading.
 * So traceparent is held to the version-00 form (a later version is read
 * by its first four fields, as the W3C text asks, and its tail must be
 * more of the same alphabet), all-zero ids are invalid, a tracestate
 * obeys the list and key rules with its 32-member limit and no repeated
 * key, and baggage its 64-member, 8192-byte limits.
 */


#include "ngx_http_mcp_w3c.h"


#define NGX_HTTP_MCP_TRACEPARENT_LEN   55
#define NGX_HTTP_MCP_TRACESTATE_MAX    32
#define NGX_HTTP_MCP_BAGGAGE_MAX       64
#define NGX_HTTP_MCP_BAGGAGE_BYTES     8192
#define NGX_HTTP_MCP_TRACESTATE_BYTES  (32 * 513 + 31 * 2)


static ngx_uint_t ngx_http_mcp_w3c_hex(u_char *p, size_t n,
    ngx_uint_t nonzero);
static u_char *ngx_http_mcp_w3c_ows(u_char *p, u_char *last);
static ngx_int_t ngx_http_mcp_w3c_key(u_char *p, size_t len);
static ngx_int_t ngx_http_mcp_w3c_state_value(u_char *p, size_t len);
static ngx_int_t ngx_http_mcp_w3c_member(u_char *p, u_char *last,
    ngx_str_t *key);
static ngx_uint_t ngx_http_mcp_w3c_tchar(u_char c);
static ngx_uint_t ngx_http_mcp_w3c_xdigit(u_char c);
static ngx_int_t ngx_http_mcp_w3c_octets(u_char *p, size_t len);
static ngx_int_t ngx_http_mcp_w3c_pair(u_char **pp, u_char *last,
    ngx_uint_t need_value);


ngx_str_t  ngx_http_mcp_w3c_names[3] = {
    ngx_string("traceparent"),
    ngx_string("tracestate"),
    ngx_string("baggage")
};


ngx_int_t
ngx_http_mcp_w3c_traceparent(u_char *p, size_t len)
{
    size_t  i;

    if (len < NGX_HTTP_MCP_TRACEPARENT_LEN
        || !ngx_http_mcp_w3c_hex(p, 2, 0)
        || (p[0] == 'f' && p[1] == 'f')
        || p[2] != '-'
        || !ngx_http_mcp_w3c_hex(p + 3, 32, 1)
        || p[35] != '-'
        || !ngx_http_mcp_w3c_hex(p + 36, 16, 1)
        || p[52] != '-'
        || !ngx_http_mcp_w3c_hex(p + 53, 2, 0))
    {
        return NGX_DECLINED;
    }

    if (len == NGX_HTTP_MCP_TRACEPARENT_LEN) {
        return NGX_OK;
    }

    /* version 00 has four fields; a later one may have more, after "-" */
    if ((p[0] == '0' && p[1] == '0') || p[55] != '-') {
        return NGX_DECLINED;
    }

    for (i = 56; i < len; i++) {
        if (p[i] != '-' && !ngx_http_mcp_w3c_hex(&p[i], 1, 0)) {
            return NGX_DECLINED;
        }
    }

    return NGX_OK;
}


/* n lowercase hex digits; with nonzero, not all of them 0 */

static ngx_uint_t
ngx_http_mcp_w3c_hex(u_char *p, size_t n, ngx_uint_t nonzero)
{
    size_t      i;
    ngx_uint_t  zero;

    zero = 1;

    for (i = 0; i < n; i++) {
        if (!((p[i] >= '0' && p[i] <= '9') || (p[i] >= 'a' && p[i] <= 'f')))
        {
            return 0;
        }

        if (p[i] != '0') {
            zero = 0;
        }
    }

    return !(nonzero && zero);
}


/* list-member *( OWS "," OWS list-member ), empty members allowed */

ngx_int_t
ngx_http_mcp_w3c_tracestate(u_char *p, size_t len)
{
    u_char     *last, *end, *q;
    ngx_str_t   keys[NGX_HTTP_MCP_TRACESTATE_MAX];
    ngx_uint_t  n, i;

    if (len == 0 || len > NGX_HTTP_MCP_TRACESTATE_BYTES) {
        return NGX_DECLINED;
    }

    last = p + len;
    n = 0;

    while (p <= last) {
        end = ngx_strlchr(p, last, ',');
        if (end == NULL) {
            end = last;
        }

        p = ngx_http_mcp_w3c_ows(p, end);

        for (q = end; q > p && (q[-1] == ' ' || q[-1] == '\t'); q--) {
            /* void */
        }

        if (q > p) {
            if (n == NGX_HTTP_MCP_TRACESTATE_MAX
                || ngx_http_mcp_w3c_member(p, q, &keys[n]) != NGX_OK)
            {
                return NGX_DECLINED;
            }

            for (i = 0; i < n; i++) {
                if (keys[i].len == keys[n].len
                    && ngx_memcmp(keys[i].data, keys[n].data, keys[n].len)
                       == 0)
                {
                    return NGX_DECLINED;
                }
            }

            n++;
        }

        p = end + 1;
    }

    return n ? NGX_OK : NGX_DECLINED;
}


static u_char *
ngx_http_mcp_w3c_ows(u_char *p, u_char *last)
{
    while (p < last && (*p == ' ' || *p == '\t')) {
        p++;
    }

    return p;
}


/* key "=" value, the member already trimmed */

static ngx_int_t
ngx_http_mcp_w3c_member(u_char *p, u_char *last, ngx_str_t *key)
{
    u_char  *eq;

    eq = ngx_strlchr(p, last, '=');

    if (eq == NULL
        || ngx_http_mcp_w3c_key(p, eq - p) != NGX_OK
        || ngx_http_mcp_w3c_state_value(eq + 1, last - eq - 1) != NGX_OK)
    {
        return NGX_DECLINED;
    }

    key->data = p;
    key->len = eq - p;

    return NGX_OK;
}


/*
 * simple-key: lcalpha 0*255(lcalpha / DIGIT / "_" / "-" / "*" / "/");
 * multi-tenant: tenant-id "@" system-id, (lcalpha / DIGIT) 0*240(...)
 * and lcalpha 0*13(...)
 */

static ngx_int_t
ngx_http_mcp_w3c_key(u_char *p, size_t len)
{
    u_char  c;
    size_t  i, at;

    at = len;

    for (i = 0; i < len; i++) {
        c = p[i];

        if (c == '@' && at == len) {
            at = i;
            continue;
        }

        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')
              || c == '_' || c == '-' || c == '*' || c == '/'))
        {
            return NGX_DECLINED;
        }
    }

    if (at == len) {
        return (len >= 1 && len <= 256 && p[0] >= 'a' && p[0] <= 'z')
               ? NGX_OK : NGX_DECLINED;
    }

    if (at < 1 || at > 241 || len - at - 1 < 1 || len - at - 1 > 14
        || !(p[at + 1] >= 'a' && p[at + 1] <= 'z'))
    {
        return NGX_DECLINED;
    }

    return NGX_OK;
}


/* 0*255(chr) nblk-chr: printable ASCII but "," and "=", no space last */

static ngx_int_t
ngx_http_mcp_w3c_state_value(u_char *p, size_t len)
{
    size_t  i;

    if (len < 1 || len > 256 || p[len - 1] == ' ') {
        return NGX_DECLINED;
    }

    for (i = 0; i < len; i++) {
        if (p[i] < 0x20 || p[i] > 0x7e || p[i] == ',' || p[i] == '=') {
            return NGX_DECLINED;
        }
    }

    return NGX_OK;
}


/*
 * list-member 0*63( OWS "," OWS list-member ), a member
 * key OWS "=" OWS value *( OWS ";" OWS property ), a property
 * key OWS "=" OWS value, or key alone
 */

ngx_int_t
ngx_http_mcp_w3c_baggage(u_char *p, size_t len)
{
    u_char      *last;
    ngx_uint_t   n;

    if (len == 0 || len > NGX_HTTP_MCP_BAGGAGE_BYTES) {
        return NGX_DECLINED;
    }

    last = p + len;
    n = 0;

    for ( ;; ) {
        p = ngx_http_mcp_w3c_ows(p, last);

        if (++n > NGX_HTTP_MCP_BAGGAGE_MAX
            || ngx_http_mcp_w3c_pair(&p, last, 1) != NGX_OK)
        {
            return NGX_DECLINED;
        }

        for ( ;; ) {
            p = ngx_http_mcp_w3c_ows(p, last);

            if (p == last || *p != ';') {
                break;
            }

            p = ngx_http_mcp_w3c_ows(p + 1, last);

            if (ngx_http_mcp_w3c_pair(&p, last, 0) != NGX_OK) {
                return NGX_DECLINED;
            }
        }

        if (p == last) {
            return NGX_OK;
        }

        if (*p++ != ',') {
            return NGX_DECLINED;
        }
    }
}


/* token [OWS "=" OWS value]; the value is required of a member */

static ngx_int_t
ngx_http_mcp_w3c_pair(u_char **pp, u_char *last, ngx_uint_t need_value)
{
    u_char  *p, *start;

    p = *pp;
    start = p;

    while (p < last && ngx_http_mcp_w3c_tchar(*p)) {
        p++;
    }

    if (p == start) {
        return NGX_DECLINED;
    }

    start = p;
    p = ngx_http_mcp_w3c_ows(p, last);

    if (p == last || *p != '=') {
        *pp = start;
        return need_value ? NGX_DECLINED : NGX_OK;
    }

    p = ngx_http_mcp_w3c_ows(p + 1, last);
    start = p;

    while (p < last && *p > 0x20 && *p < 0x7f && *p != '"' && *p != ','
           && *p != ';' && *p != '\\')
    {
        p++;
    }

    if (ngx_http_mcp_w3c_octets(start, p - start) != NGX_OK) {
        return NGX_DECLINED;
    }

    *pp = p;

    return NGX_OK;
}


/* a value's percent-encoding: every "%" begins "%" HEXDIG HEXDIG */

static ngx_int_t
ngx_http_mcp_w3c_octets(u_char *p, size_t len)
{
    size_t  i;

    for (i = 0; i < len; i++) {
        if (p[i] != '%') {
            continue;
        }

        if (i + 2 >= len
            || !ngx_http_mcp_w3c_xdigit(p[i + 1])
            || !ngx_http_mcp_w3c_xdigit(p[i + 2]))
        {
            return NGX_DECLINED;
        }

        i += 2;
    }

    return NGX_OK;
}


static ngx_uint_t
ngx_http_mcp_w3c_xdigit(u_char c)
{
    return (c >= '0' && c <= '9') || ((c | 0x20) >= 'a' && (c | 0x20) <= 'f');
}


/* RFC 9110's tchar */

static ngx_uint_t
ngx_http_mcp_w3c_tchar(u_char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
           || (c >= '0' && c <= '9')
           || (c != '\0' && ngx_strchr("!#$%&'*+-.^_`|~", c) != NULL);
}


ngx_uint_t
ngx_http_mcp_w3c_meta(cJSON *meta, ngx_http_mcp_trace_t *t,
    ngx_uint_t *dropped)
{
    cJSON       *item, *found[3];
    ngx_str_t   *value;
    ngx_int_t    rc;
    ngx_uint_t   k, kept;

    ngx_memzero(t, sizeof(ngx_http_mcp_trace_t));

    kept = 0;

    if (!cJSON_IsObject(meta)) {
        return 0;
    }

    /*
     * one walk over _meta's members, not a lookup a name: a request's
     * _meta mostly holds other keys (a 2026-07-28 one, several), and
     * this runs for every message (the parser refused duplicate keys)
     */

    found[0] = NULL;
    found[1] = NULL;
    found[2] = NULL;

    for (item = meta->child; item != NULL; item = item->next) {
        if (item->string == NULL
            || (item->string[0] != 't' && item->string[0] != 'b'))
        {
            continue;
        }

        for (k = 0; k < 3; k++) {
            if (ngx_strcmp(item->string, ngx_http_mcp_w3c_names[k].data)
                == 0)
            {
                found[k] = item;
                break;
            }
        }
    }

    for (k = 0; k < 3; k++) {
        item = found[k];
        if (item == NULL) {
            continue;
        }

        value = ngx_http_mcp_trace_value(t, k);

        rc = NGX_DECLINED;

        if (cJSON_IsString(item)) {
            value->data = (u_char *) item->valuestring;
            value->len = ngx_strlen(value->data);

            rc = (k == 0) ? ngx_http_mcp_w3c_traceparent(value->data,
                                                         value->len)
                 : (k == 1) ? ngx_http_mcp_w3c_tracestate(value->data,
                                                          value->len)
                 : ngx_http_mcp_w3c_baggage(value->data, value->len);

            /* a vendor's state means nothing without the trace it is of */
            if (k == 1 && t->traceparent.len == 0) {
                rc = NGX_DECLINED;
            }
        }

        if (rc != NGX_OK) {
            ngx_str_null(value);
            cJSON_Delete(cJSON_DetachItemViaPointer(meta, item));
            (*dropped)++;
            continue;
        }

        kept++;
    }

    return kept;
}


ngx_int_t
ngx_http_mcp_w3c_meta_set(cJSON *obj, ngx_http_mcp_trace_t *t)
{
    char        *name;
    cJSON       *meta, *item;
    ngx_str_t   *value;
    ngx_uint_t   k;

    meta = cJSON_GetObjectItemCaseSensitive(obj, "_meta");

    if (meta == NULL) {
        meta = cJSON_AddObjectToObject(obj, "_meta");
    }

    if (!cJSON_IsObject(meta)) {
        return NGX_ERROR;
    }

    for (k = 0; k < 3; k++) {
        value = ngx_http_mcp_trace_value(t, k);

        if (value->len == 0) {
            continue;
        }

        item = cJSON_CreateString("");
        if (item == NULL) {
            return NGX_ERROR;
        }

        /* the value is not NUL-terminated when a header's */
        cJSON_free(item->valuestring);
        item->valuestring = cJSON_malloc(value->len + 1);

        if (item->valuestring == NULL) {
            cJSON_Delete(item);
            return NGX_ERROR;
        }

        ngx_memcpy(item->valuestring, value->data, value->len);
        item->valuestring[value->len] = '\0';

        name = (char *) ngx_http_mcp_w3c_names[k].data;

        cJSON_DeleteItemFromObjectCaseSensitive(meta, name);

        if (!cJSON_AddItemToObject(meta, name, item)) {
            cJSON_Delete(item);
            return NGX_ERROR;
        }
    }

    return NGX_OK;
}
