
/*
 * The JSON grammar of numbers and literals, and their values: pure
 * functions of the strict scan (ngx_http_mcp_json.c) on their own.
 */


#include "ngx_http_mcp_json.h"

#include <float.h>
#include <limits.h>


/* a number's text that a stack buffer holds for strtod() */
#define NGX_HTTP_MCP_JSON_NUMBER_LEN  64


/*
 * A number, true, false or null, checked against the JSON grammar: cJSON
 * is lenient (it takes "01"), and an id is echoed as the client wrote it,
 * so what the module echoes must be JSON.
 */

u_char *
ngx_http_mcp_json_literal(u_char *p, u_char *end)
{
    u_char      *start;
    ngx_uint_t   i;

    static ngx_str_t  words[] = {
        ngx_string("true"), ngx_string("false"), ngx_string("null")
    };

    i = (*p == 't') ? 0 : (*p == 'f') ? 1 : (*p == 'n') ? 2 : 3;

    if (i < 3) {
        if ((size_t) (end - p) >= words[i].len
            && ngx_strncmp(p, words[i].data, words[i].len) == 0)
        {
            return p + words[i].len;
        }

        return NULL;
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


/*
 * A number that a double holds: 1e400 is infinity to cJSON and Python
 * and an exact integer to Python when written out in 400 digits, so
 * neither may pass.  The decimal magnitude is worked out from the text;
 * only numbers at the very edge go to strtod().
 */

ngx_uint_t
ngx_http_mcp_json_number_fits(u_char *p, u_char *end)
{
    u_char     *q, buf[512];
    double      d;
    ngx_int_t   mag, exp, digits, lead;
    ngx_uint_t  neg;

    q = p;

    if (*q == '-') {
        q++;
    }

    if (*q < '0' || *q > '9') {
        return 1;                    /* true, false, null */
    }

    digits = 0;
    lead = 0;                        /* zeros after the point, before */
                                     /* the first significant digit */
    for ( /* void */ ; q < end && *q >= '0' && *q <= '9'; q++) {
        digits++;
    }

    if (digits == 1 && q[-1] == '0') {
        digits = 0;

        if (q == end || *q != '.') {
            return 1;                /* a zero, whatever its exponent */
        }

        for (q++; q < end && *q == '0'; q++) {
            lead++;
        }

        if (q == end || *q < '1' || *q > '9') {
            return 1;
        }
    }

    while (q < end && ((*q >= '0' && *q <= '9') || *q == '.')) {
        q++;
    }

    exp = 0;
    neg = 0;

    if (q < end && (*q == 'e' || *q == 'E')) {
        q++;

        if (*q == '+' || *q == '-') {
            neg = (*q++ == '-');
        }

        for ( /* void */ ; q < end && *q >= '0' && *q <= '9'; q++) {
            if (exp < 100000) {
                exp = exp * 10 + (*q - '0');
            }
        }
    }

    mag = (digits ? digits - 1 : -(lead + 1)) + (neg ? -exp : exp);

    if (mag < 308) {
        return 1;
    }

    if (mag > 308 || (size_t) (end - p) >= sizeof(buf)) {
        return 0;
    }

    *ngx_cpymem(buf, p, end - p) = '\0';

    d = strtod((char *) buf, NULL);

    return d <= DBL_MAX && d >= -DBL_MAX;
}


/*
 * A number the scan accepted (p to end) as cJSON_Parse() holds it: the
 * double from strtod(), valueint saturated.  NGX_ERROR: out of memory.
 */

ngx_int_t
ngx_http_mcp_json_number(ngx_pool_t *pool, cJSON *node, u_char *p,
    u_char *end)
{
    u_char   *text, *q, buf[NGX_HTTP_MCP_JSON_NUMBER_LEN];
    double    d;
    int64_t   n;

    /*
     * An integer of up to 15 digits (ids, counts) is exact in a double:
     * its value is the one strtod() would give, without strtod()'s cost.
     */

    q = (*p == '-') ? p + 1 : p;

    if (end - q <= 15) {
        for (n = 0; q < end && *q >= '0' && *q <= '9'; q++) {
            n = n * 10 + (*q - '0');
        }

        if (q == end) {
            d = (*p == '-') ? -(double) n : (double) n;
            goto done;
        }
    }

    text = buf;

    if ((size_t) (end - p) >= sizeof(buf)) {
        /* many digits, in range: number_fits() checked it */
        text = ngx_pnalloc(pool, end - p + 1);
        if (text == NULL) {
            return NGX_ERROR;
        }
    }

    *ngx_cpymem(text, p, end - p) = '\0';

    d = strtod((char *) text, NULL);

done:

    node->valuedouble = d;
    node->valueint = (d >= INT_MAX) ? INT_MAX
                     : (d <= (double) INT_MIN) ? INT_MIN
                     : (int) d;

    return NGX_OK;
}

