
/*
 * The module's JSON printer: a cJSON tree into one buffer of the pool, in
 * two walks (the length, then the bytes), with the text that
 * cJSON_PrintUnformatted() would make: the same escapes, the same
 * numbers.  cJSON's printer grows a malloc()ed buffer and walks each
 * string twice a write; every reply of the module is printed, so this is
 * on the path of every request.
 *
 * Pure: no HTTP; its output is compared with cJSON's by the differential
 * test.
 */


#include "ngx_http_mcp_json.h"

#include <float.h>
#include <math.h>


/* a number's text at most: "%1.17g" of a double, a sign, an exponent */
#define NGX_HTTP_MCP_JSON_PRINT_NUMBER  32


static size_t ngx_http_mcp_json_print_size(cJSON *json);
static size_t ngx_http_mcp_json_string_size(const char *s);
static u_char *ngx_http_mcp_json_print_value(u_char *p, cJSON *json);
static u_char *ngx_http_mcp_json_print_string(u_char *p, const char *s);
static u_char *ngx_http_mcp_json_print_number(u_char *p, cJSON *json);


/*
 * The bytes a string's byte takes printed: 1 as it is, 2 for the short
 * escapes (\" \\ \b \f \n \r \t), 6 for the other control bytes
 * (\u00XX); bytes from 0x80 are UTF-8, printed as they are.
 */
static const u_char  ngx_http_mcp_json_escaped[256] = {
    6, 6, 6, 6, 6, 6, 6, 6, 2, 2, 2, 6, 2, 2, 6, 6,    /* 0x00 */
    6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6,
    1, 1, 2, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,    /* 0x20: quote */
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,    /* 0x40 */
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 1, 1, 1,    /* 0x50: backslash */
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,    /* 0x60 */
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,    /* 0x80 */
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,    /* 0xc0 */
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1
};


/*
 * The text of json, NUL-terminated, in the pool; NULL: out of memory, or
 * a tree cJSON would not print either (an invalid item, a raw item
 * without text).
 */

u_char *
ngx_http_mcp_json_print(ngx_pool_t *pool, cJSON *json, size_t *len)
{
    u_char  *text, *last;
    size_t   size;

    size = ngx_http_mcp_json_print_size(json);
    if (size == 0) {
        return NULL;
    }

    text = ngx_pnalloc(pool, size + 1);
    if (text == NULL) {
        return NULL;
    }

    last = ngx_http_mcp_json_print_value(text, json);
    if (last == NULL) {
        return NULL;
    }

    *last = '\0';
    *len = last - text;

    return text;
}


/* the bytes json takes at most (numbers), exactly (the rest); 0: none */

static size_t
ngx_http_mcp_json_print_size(cJSON *json)
{
    size_t   size, n;
    cJSON   *item;

    switch (json->type & 0xff) {

    case cJSON_NULL:
    case cJSON_True:
        return 4;

    case cJSON_False:
        return 5;

    case cJSON_Number:
        return NGX_HTTP_MCP_JSON_PRINT_NUMBER;

    case cJSON_Raw:
        return (json->valuestring != NULL) ? ngx_strlen(json->valuestring)
                                           : 0;

    case cJSON_String:
        return ngx_http_mcp_json_string_size(json->valuestring);

    case cJSON_Array:
    case cJSON_Object:
        size = 2;

        for (item = json->child; item != NULL; item = item->next) {
            n = ngx_http_mcp_json_print_size(item);
            if (n == 0) {
                return 0;
            }

            size += n + (item->next != NULL);

            if ((json->type & 0xff) == cJSON_Object) {
                size += ngx_http_mcp_json_string_size(item->string) + 1;
            }
        }

        return size;

    default:
        return 0;
    }
}


static size_t
ngx_http_mcp_json_string_size(const char *s)
{
    size_t         size;
    const u_char  *p;

    size = 2;

    if (s == NULL) {
        return size;
    }

    for (p = (const u_char *) s; *p; p++) {
        size += ngx_http_mcp_json_escaped[*p];
    }

    return size;
}


/* writes json at p, which holds its size; returns the end, NULL: failed */

static u_char *
ngx_http_mcp_json_print_value(u_char *p, cJSON *json)
{
    cJSON  *item;

    switch (json->type & 0xff) {

    case cJSON_NULL:
        return ngx_cpymem(p, "null", 4);

    case cJSON_True:
        return ngx_cpymem(p, "true", 4);

    case cJSON_False:
        return ngx_cpymem(p, "false", 5);

    case cJSON_Number:
        return ngx_http_mcp_json_print_number(p, json);

    case cJSON_Raw:
        return ngx_cpymem(p, json->valuestring,
                          ngx_strlen(json->valuestring));

    case cJSON_String:
        return ngx_http_mcp_json_print_string(p, json->valuestring);

    case cJSON_Array:
    case cJSON_Object:
        *p++ = ((json->type & 0xff) == cJSON_Array) ? '[' : '{';

        for (item = json->child; item != NULL; item = item->next) {

            if ((json->type & 0xff) == cJSON_Object) {
                p = ngx_http_mcp_json_print_string(p, item->string);
                *p++ = ':';
            }

            p = ngx_http_mcp_json_print_value(p, item);
            if (p == NULL) {
                return NULL;
            }

            if (item->next != NULL) {
                *p++ = ',';
            }
        }

        *p++ = ((json->type & 0xff) == cJSON_Array) ? ']' : '}';

        return p;

    default:
        return NULL;
    }
}


static u_char *
ngx_http_mcp_json_print_string(u_char *p, const char *s)
{
    u_char         c;
    const u_char  *q;

    static const u_char  hex[] = "0123456789abcdef";

    *p++ = '"';

    for (q = (const u_char *) s; q != NULL && *q; q++) {
        c = *q;

        if (ngx_http_mcp_json_escaped[c] == 1) {
            *p++ = c;
            continue;
        }

        *p++ = '\\';

        switch (c) {
        case '"':  *p++ = '"';  break;
        case '\\': *p++ = '\\'; break;
        case '\b': *p++ = 'b';  break;
        case '\f': *p++ = 'f';  break;
        case '\n': *p++ = 'n';  break;
        case '\r': *p++ = 'r';  break;
        case '\t': *p++ = 't';  break;
        default:
            *p++ = 'u';
            *p++ = '0';
            *p++ = '0';
            *p++ = hex[c >> 4];
            *p++ = hex[c & 0x0f];
        }
    }

    *p++ = '"';

    return p;
}


/*
 * As cJSON (1.7.15) prints a number: null for NaN and infinities, else
 * 15 significant digits ("%1.15g") when they read back as the same
 * double (within DBL_EPSILON, as cJSON compares), 17 otherwise.  An
 * integer of fewer than 16 digits prints as "%1.15g" would print it,
 * without the trip through snprintf() and strtod().
 */

static u_char *
ngx_http_mcp_json_print_number(u_char *p, cJSON *json)
{
    int      n;
    char     buf[NGX_HTTP_MCP_JSON_PRINT_NUMBER + 1];
    double   d, test, max;

    d = json->valuedouble;

    if (isnan(d) || isinf(d)) {
        return ngx_cpymem(p, "null", 4);
    }

    if (d == floor(d) && fabs(d) < 1e15) {
        if (d == 0) {
            return signbit(d) ? ngx_cpymem(p, "-0", 2) : ngx_cpymem(p, "0", 1);
        }

        return ngx_sprintf(p, "%L", (int64_t) d);
    }

    n = snprintf(buf, sizeof(buf), "%1.15g", d);
    test = strtod(buf, NULL);

    max = (fabs(test) > fabs(d)) ? fabs(test) : fabs(d);

    if (!(fabs(test - d) <= max * DBL_EPSILON)) {
        n = snprintf(buf, sizeof(buf), "%1.17g", d);
    }

    if (n < 0 || n > NGX_HTTP_MCP_JSON_PRINT_NUMBER) {
        return NULL;
    }

    return ngx_cpymem(p, buf, n);
}
