
/*
 * libFuzzer target: the W3C trace context checks of ngx_http_mcp_w3c.c.
 * The input, as it is, is a traceparent, a tracestate and a baggage
 * value; parsed as JSON, it is a _meta object whose trace is read.
 *
 * Besides memory errors, it checks what the gateway relies on when it
 * passes a value on: an accepted value has no byte that would end or
 * split a header line (NUL, CR, LF), an accepted traceparent is of the
 * traceparent alphabet, and what a _meta read keeps is accepted again,
 * and reads back the same once written into another object.
 */


#include <ngx_config.h>
#include <ngx_core.h>

#include "ngx_http_mcp_w3c.h"
#include "ngx_shim.h"


static void ngx_fuzz_safe(u_char *p, size_t len);
static void ngx_fuzz_meta(const uint8_t *data, size_t size);


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    u_char      *p;
    size_t       i;
    ngx_pool_t  *pool;

    pool = ngx_shim_pool_create();
    if (pool == NULL) {
        return 0;
    }

    /* a copy of its own size: a read past the value is ASan's */
    p = ngx_shim_copy(pool, data, size);

    if (p != NULL) {
        if (ngx_http_mcp_w3c_traceparent(p, size) == NGX_OK) {
            for (i = 0; i < size; i++) {
                if (!((p[i] >= '0' && p[i] <= '9')
                      || (p[i] >= 'a' && p[i] <= 'f') || p[i] == '-'))
                {
                    abort();
                }
            }
        }

        if (ngx_http_mcp_w3c_tracestate(p, size) == NGX_OK) {
            ngx_fuzz_safe(p, size);
        }

        if (ngx_http_mcp_w3c_baggage(p, size) == NGX_OK) {
            ngx_fuzz_safe(p, size);
        }
    }

    ngx_fuzz_meta(data, size);

    ngx_shim_pool_destroy(pool);

    return 0;
}


static void
ngx_fuzz_safe(u_char *p, size_t len)
{
    size_t  i;

    for (i = 0; i < len; i++) {
        if (p[i] == '\0' || p[i] == CR || p[i] == LF) {
            abort();
        }
    }
}


static void
ngx_fuzz_meta(const uint8_t *data, size_t size)
{
    cJSON                 *meta, *obj;
    ngx_str_t             *v, *w;
    ngx_uint_t             k, kept, dropped;
    ngx_http_mcp_trace_t   t, back;

    meta = cJSON_ParseWithLength((const char *) data, size);
    if (meta == NULL) {
        return;
    }

    dropped = 0;
    kept = ngx_http_mcp_w3c_meta(meta, &t, &dropped);

    if (kept > 3 || (kept && t.traceparent.len == 0 && t.baggage.len == 0)) {
        abort();
    }

    if ((t.traceparent.len
         && ngx_http_mcp_w3c_traceparent(t.traceparent.data,
                                         t.traceparent.len) != NGX_OK)
        || (t.tracestate.len
            && ngx_http_mcp_w3c_tracestate(t.tracestate.data,
                                           t.tracestate.len) != NGX_OK)
        || (t.baggage.len
            && ngx_http_mcp_w3c_baggage(t.baggage.data, t.baggage.len)
               != NGX_OK))
    {
        abort();
    }

    obj = cJSON_CreateObject();

    if (obj != NULL && ngx_http_mcp_w3c_meta_set(obj, &t) == NGX_OK) {
        dropped = 0;
        (void) ngx_http_mcp_w3c_meta(cJSON_GetObjectItemCaseSensitive(obj,
                                                                      "_meta"),
                                     &back, &dropped);

        for (k = 0; k < 3; k++) {
            v = ngx_http_mcp_trace_value(&t, k);
            w = ngx_http_mcp_trace_value(&back, k);

            if (dropped || v->len != w->len
                || (v->len && ngx_memcmp(v->data, w->data, v->len) != 0))
            {
                abort();
            }
        }
    }

    cJSON_Delete(obj);
    cJSON_Delete(meta);
}
