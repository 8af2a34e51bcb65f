
/*
 * Unit tests of src/parse/ngx_http_mcp_w3c.c: traceparent (the version-00
 * form, later versions, all-zero ids, case, lengths), tracestate (keys,
 * values, empty members, the 32-member limit, repeated keys), baggage
 * (members, properties, percent-encoding, the 64-member and 8192-byte
 * limits), and a _meta's trace read, its malformed keys taken out.
 */


#include <ngx_config.h>
#include <ngx_core.h>

#include "ngx_http_mcp_w3c.h"
#include "ngx_shim.h"
#include "unit.h"


#define TP  "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"


static void test_traceparent(void);
static void test_tracestate(void);
static void test_baggage(void);
static void test_meta(void);
static ngx_int_t ngx_unit_tp(const char *v);
static ngx_int_t ngx_unit_ts(const char *v);
static ngx_int_t ngx_unit_bg(const char *v);


int
main(void)
{
    test_traceparent();
    test_tracestate();
    test_baggage();
    test_meta();

    return ngx_unit_done("test_w3c");
}


static ngx_int_t
ngx_unit_tp(const char *v)
{
    return ngx_http_mcp_w3c_traceparent((u_char *) v, strlen(v));
}


static ngx_int_t
ngx_unit_ts(const char *v)
{
    return ngx_http_mcp_w3c_tracestate((u_char *) v, strlen(v));
}


static ngx_int_t
ngx_unit_bg(const char *v)
{
    return ngx_http_mcp_w3c_baggage((u_char *) v, strlen(v));
}


static void
test_traceparent(void)
{
    CHECK_INT(ngx_unit_tp(TP), NGX_OK, "traceparent: W3C's example");
    CHECK_INT(ngx_unit_tp("00-0af7651916cd43dd8448eb211c80319c"
                          "-b7ad6b7169203331-00"), NGX_OK,
              "traceparent: not sampled");
    CHECK_INT(ngx_unit_tp("00-0AF7651916CD43DD8448EB211C80319C"
                          "-b7ad6b7169203331-01"), NGX_DECLINED,
              "traceparent: uppercase hex");
    CHECK_INT(ngx_unit_tp("00-00000000000000000000000000000000"
                          "-b7ad6b7169203331-01"), NGX_DECLINED,
              "traceparent: all-zero trace-id");
    CHECK_INT(ngx_unit_tp("00-0af7651916cd43dd8448eb211c80319c"
                          "-0000000000000000-01"), NGX_DECLINED,
              "traceparent: all-zero parent-id");
    CHECK_INT(ngx_unit_tp("ff-0af7651916cd43dd8448eb211c80319c"
                          "-b7ad6b7169203331-01"), NGX_DECLINED,
              "traceparent: version ff");
    CHECK_INT(ngx_unit_tp(TP "-00"), NGX_DECLINED,
              "traceparent: version 00 with a fifth field");
    CHECK_INT(ngx_unit_tp("01-0af7651916cd43dd8448eb211c80319c"
                          "-b7ad6b7169203331-01-0a"), NGX_OK,
              "traceparent: a later version's fifth field");
    CHECK_INT(ngx_unit_tp("01-0af7651916cd43dd8448eb211c80319c"
                          "-b7ad6b7169203331-01x"), NGX_DECLINED,
              "traceparent: a later version, no dash after the flags");
    CHECK_INT(ngx_unit_tp("00-0af7651916cd43dd8448eb211c80319c"
                          "-b7ad6b716920333-01"), NGX_DECLINED,
              "traceparent: short parent-id");
    CHECK_INT(ngx_unit_tp("00_0af7651916cd43dd8448eb211c80319c"
                          "-b7ad6b7169203331-01"), NGX_DECLINED,
              "traceparent: wrong separator");
    CHECK_INT(ngx_unit_tp(" " TP), NGX_DECLINED,
              "traceparent: leading space");
    CHECK_INT(ngx_unit_tp(""), NGX_DECLINED, "traceparent: empty");
}


static void
test_tracestate(void)
{
    char        buf[1024], *p;
    ngx_uint_t  i;

    CHECK_INT(ngx_unit_ts("rojo=00f067aa0ba902b7,congo=t61rcWkgMzE"), NGX_OK,
              "tracestate: W3C's example");
    CHECK_INT(ngx_unit_ts("rojo=1 , ,\tcongo=2"), NGX_OK,
              "tracestate: OWS and an empty member");
    CHECK_INT(ngx_unit_ts("tenant@vendor=x"), NGX_OK,
              "tracestate: multi-tenant key");
    CHECK_INT(ngx_unit_ts("Rojo=1"), NGX_DECLINED,
              "tracestate: uppercase key");
    CHECK_INT(ngx_unit_ts("1rojo=1"), NGX_DECLINED,
              "tracestate: simple key starting with a digit");
    CHECK_INT(ngx_unit_ts("t@vendorvendorvendor=1"), NGX_DECLINED,
              "tracestate: system-id over 14");
    CHECK_INT(ngx_unit_ts("rojo=1,rojo=2"), NGX_DECLINED,
              "tracestate: repeated key");
    CHECK_INT(ngx_unit_ts("rojo="), NGX_DECLINED, "tracestate: empty value");
    CHECK_INT(ngx_unit_ts("rojo=a=b"), NGX_DECLINED,
              "tracestate: \"=\" in a value");
    CHECK_INT(ngx_unit_ts("rojo=a\r\nx: y"), NGX_DECLINED,
              "tracestate: CRLF in a value");
    CHECK_INT(ngx_unit_ts(","), NGX_DECLINED, "tracestate: no member");

    p = buf;
    for (i = 0; i < 32; i++) {
        p += sprintf(p, "%sk%u=v", i ? "," : "", (unsigned) i);
    }

    CHECK_INT(ngx_unit_ts(buf), NGX_OK, "tracestate: 32 members");

    sprintf(p, ",k32=v");
    CHECK_INT(ngx_unit_ts(buf), NGX_DECLINED, "tracestate: 33 members");
}


static void
test_baggage(void)
{
    char        buf[9000], *p;
    ngx_uint_t  i;

    CHECK_INT(ngx_unit_bg("userId=alice,serverNode=DF%2028,isProduction=false"),
              NGX_OK, "baggage: W3C's example");
    CHECK_INT(ngx_unit_bg("key1=value1;property1;property2, key2 = value2"),
              NGX_OK, "baggage: properties and OWS");
    CHECK_INT(ngx_unit_bg("k=v;p=q"), NGX_OK, "baggage: property value");
    CHECK_INT(ngx_unit_bg("k="), NGX_OK, "baggage: empty value");
    CHECK_INT(ngx_unit_bg("k"), NGX_DECLINED, "baggage: member without =");
    CHECK_INT(ngx_unit_bg("k=v,,j=w"), NGX_DECLINED, "baggage: empty member");
    CHECK_INT(ngx_unit_bg("k=a b"), NGX_DECLINED, "baggage: space in value");
    CHECK_INT(ngx_unit_bg("k=%zz"), NGX_DECLINED, "baggage: bad escape");
    CHECK_INT(ngx_unit_bg("k=%2"), NGX_DECLINED, "baggage: short escape");
    CHECK_INT(ngx_unit_bg("k=\"v\""), NGX_DECLINED, "baggage: DQUOTE");
    CHECK_INT(ngx_unit_bg("k(=v"), NGX_DECLINED, "baggage: key not a token");

    p = buf;
    for (i = 0; i < 64; i++) {
        p += sprintf(p, "%sk%u=v", i ? "," : "", (unsigned) i);
    }

    CHECK_INT(ngx_unit_bg(buf), NGX_OK, "baggage: 64 members");

    sprintf(p, ",k64=v");
    CHECK_INT(ngx_unit_bg(buf), NGX_DECLINED, "baggage: 65 members");

    memcpy(buf, "k=", 2);
    memset(buf + 2, 'a', 8191);
    buf[8193] = '\0';
    CHECK_INT(ngx_unit_bg(buf), NGX_DECLINED, "baggage: over 8192 bytes");
}


static void
test_meta(void)
{
    cJSON                 *meta, *obj;
    ngx_uint_t             kept, dropped;
    ngx_http_mcp_trace_t   t;

    meta = cJSON_Parse("{\"traceparent\":\"" TP "\","
                       "\"tracestate\":\"rojo=1\",\"baggage\":\"k=v\","
                       "\"progressToken\":1}");
    dropped = 0;
    kept = ngx_http_mcp_w3c_meta(meta, &t, &dropped);

    CHECK_INT(kept, 3, "meta: three kept");
    CHECK_INT(dropped, 0, "meta: none dropped");
    CHECK_MEM(t.traceparent.data, t.traceparent.len, TP, "meta: traceparent");
    CHECK_MEM(t.baggage.data, t.baggage.len, "k=v", "meta: baggage");
    cJSON_Delete(meta);

    meta = cJSON_Parse("{\"traceparent\":\"00-zz\","
                       "\"tracestate\":\"rojo=1\",\"baggage\":\"k=v\"}");
    dropped = 0;
    kept = ngx_http_mcp_w3c_meta(meta, &t, &dropped);

    CHECK_INT(kept, 1, "meta: malformed traceparent: baggage kept");
    CHECK_INT(dropped, 2, "meta: traceparent and its tracestate dropped");
    CHECK(cJSON_GetObjectItem(meta, "traceparent") == NULL,
          "meta: malformed traceparent out of the tree");
    CHECK(cJSON_GetObjectItem(meta, "tracestate") == NULL,
          "meta: orphan tracestate out of the tree");
    CHECK_INT(t.traceparent.len, 0, "meta: no traceparent");
    cJSON_Delete(meta);

    meta = cJSON_Parse("{\"traceparent\":5}");
    dropped = 0;
    kept = ngx_http_mcp_w3c_meta(meta, &t, &dropped);
    CHECK_INT(kept + 10 * dropped, 10, "meta: a number is malformed");
    cJSON_Delete(meta);

    obj = cJSON_Parse("{\"name\":\"x\"}");
    t.traceparent.data = (u_char *) TP "trailing";
    t.traceparent.len = sizeof(TP) - 1;
    ngx_str_null(&t.tracestate);
    ngx_str_set(&t.baggage, "k=v");

    CHECK_INT(ngx_http_mcp_w3c_meta_set(obj, &t), NGX_OK, "set: ok");

    meta = cJSON_GetObjectItem(obj, "_meta");
    CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(meta, "traceparent")),
              TP, "set: traceparent, the length's alone");
    CHECK(cJSON_GetObjectItem(meta, "tracestate") == NULL,
          "set: no empty tracestate");
    cJSON_Delete(obj);
}
