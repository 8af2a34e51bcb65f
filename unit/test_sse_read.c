
/*
 * Unit tests of src/ngx_http_mcp_sse_read.c: lines ended by CRLF, LF or
 * a CR alone, a BOM before the first event, the blank line that ends an
 * event, and an event's data lines joined as the SSE standard joins
 * them (empty data lines included, the one space after the colon
 * dropped, fields that only begin like "data" ignored).
 */


#include <ngx_config.h>
#include <ngx_core.h>

#include "ngx_http_mcp_sse_read.h"
#include "ngx_shim.h"
#include "unit.h"


static void test_lines(void);
static void test_events(void);
static void test_data(void);
static size_t ngx_unit_data(const char *event, char *out);
static void test_field(const char *line, const char *name,
    const char *want, const char *what);


int
main(void)
{
    test_lines();
    test_events();
    test_data();

    return ngx_unit_done("test_sse_read");
}


static void
test_lines(void)
{
    u_char  *p, *end, *eol, *next;

    static u_char  lf[] = "a\nb", crlf[] = "a\r\nb", cr[] = "a\rb",
                   open[] = "abc", cr_last[] = "a\r",
                   bom[] = "\xef\xbb\xbf" "data: x", half[] = "\xef\xbb";

    p = lf;
    eol = ngx_http_mcp_sse_eol(p, p + 3, &next);
    CHECK(eol == p + 1 && next == p + 2, "LF ends a line");

    p = crlf;
    eol = ngx_http_mcp_sse_eol(p, p + 4, &next);
    CHECK(eol == p + 1 && next == p + 3, "CRLF ends a line, as one");

    p = cr;
    eol = ngx_http_mcp_sse_eol(p, p + 3, &next);
    CHECK(eol == p + 1 && next == p + 2, "a CR alone ends a line");

    p = open;
    CHECK(ngx_http_mcp_sse_eol(p, p + 3, &next) == NULL,
          "no end of line yet: NULL");

    p = cr_last;
    eol = ngx_http_mcp_sse_eol(p, p + 2, &next);
    CHECK(eol == p + 1 && next == p + 2,
          "a CR last in the buffer ends its line");

    end = bom + sizeof(bom) - 1;
    CHECK(ngx_http_mcp_sse_bom(bom, end) == bom + 3, "a BOM is skipped");
    CHECK(ngx_http_mcp_sse_bom(lf, lf + 3) == lf, "no BOM: nothing skipped");
    CHECK(ngx_http_mcp_sse_bom(half, half + 2) == half,
          "two bytes of a BOM are not one");

    CHECK(ngx_http_mcp_sse_bom_pending(half, half),
          "nothing yet: a BOM may still come");
    CHECK(ngx_http_mcp_sse_bom_pending(half, half + 2),
          "two bytes of a BOM: may still be one");
    CHECK(!ngx_http_mcp_sse_bom_pending(bom, end),
          "a whole BOM: no longer pending");
    CHECK(!ngx_http_mcp_sse_bom_pending(lf, lf + 2),
          "bytes that are no BOM's: not pending");
}


static void
test_events(void)
{
    u_char  *p, *end;

    static u_char  lf[] = "data: 1\n\ndata: 2\n\n",
                   cr[] = "id: 7\rdata: 1\r\rdata: 2\r\r",
                   crlf[] = "data: 1\r\n\r\ndata: 2\r\n\r\n",
                   mixed[] = "data: 1\r\n\rdata: 2\n\r\n",
                   open[] = "data: 1\ndata: 2\n";

    end = lf + sizeof(lf) - 1;
    p = ngx_http_mcp_sse_event_end(lf, end);
    CHECK(p == lf + 9, "LF: the first event ends after its blank line");
    CHECK(ngx_http_mcp_sse_event_end(p, end) == end, "LF: the second too");

    end = cr + sizeof(cr) - 1;
    p = ngx_http_mcp_sse_event_end(cr, end);
    CHECK(p == cr + 15, "CR alone: an event ends at an empty CR line");
    CHECK(ngx_http_mcp_sse_event_end(p, end) == end,
          "CR alone: the second event ends at the end");

    end = crlf + sizeof(crlf) - 1;
    p = ngx_http_mcp_sse_event_end(crlf, end);
    CHECK(p == crlf + 11, "CRLF: the first event ends after CRLF CRLF");

    end = mixed + sizeof(mixed) - 1;
    p = ngx_http_mcp_sse_event_end(mixed, end);
    CHECK(p == mixed + 10, "CRLF then CR: an event's end");
    p = ngx_http_mcp_sse_event_end(p, end);
    CHECK(p == end, "LF then CRLF: the next one's");

    end = open + sizeof(open) - 1;
    CHECK(ngx_http_mcp_sse_event_end(open, end) == NULL,
          "no blank line yet: no event's end");
}


static void
test_data(void)
{
    size_t  n;
    char    out[128];

    n = ngx_unit_data("data: {\"a\":1}\n", out);
    CHECK_MEM(out, n, "{\"a\":1}", "one data line, its space dropped");

    n = ngx_unit_data("data:{\"a\":1}\n", out);
    CHECK_MEM(out, n, "{\"a\":1}", "no space after the colon");

    n = ngx_unit_data("data:  x\n", out);
    CHECK_MEM(out, n, " x", "only one space is dropped");

    n = ngx_unit_data("event: m\rid: 1\rdata: [1,\rdata: 2]\r", out);
    CHECK_MEM(out, n, "[1,\n2]", "CR alone: two data lines joined with LF");

    n = ngx_unit_data("data: a\r\n: comment\r\ndata: b\r\n", out);
    CHECK_MEM(out, n, "a\nb", "CRLF: a comment between data lines");

    n = ngx_unit_data("data:\ndata: x\n", out);
    CHECK_MEM(out, n, "\nx", "an empty data line first still counts");

    n = ngx_unit_data("database: x\ndata2: y\ndata :z\nDATA: w\n", out);
    CHECK_MEM(out, n, "", "fields that only begin with \"data\": no data");

    /* the standard: a line without a colon is a field of empty value */
    n = ngx_unit_data("data\ndata: x\rdata\r\ndata: y\n", out);
    CHECK_MEM(out, n, "\nx\n\ny", "\"data\" alone: an empty data line");

    n = ngx_unit_data("\xef\xbb\xbf" "data: x\n", out);
    CHECK_MEM(out, n, "", "a BOM not first in the stream is no BOM: no data");

    n = ngx_unit_data(": data: x\ndata: y\n", out);
    CHECK_MEM(out, n, "y", "a comment holding \"data:\" is no data");

    n = ngx_unit_data("id: 1\rdata: a\r\r", out);
    CHECK_MEM(out, n, "a", "a CR after the data line ends it");

    test_field("id\r\n", "id:", "", "\"id\" alone: the field, empty");
    test_field("id:7\n", "id:", "7", "\"id:7\": 7");
    test_field("i\n", "id:", NULL, "\"i\": not the field");
    test_field("idx\n", "id:", NULL, "\"idx\": not the field");
    test_field("id: \n", "id:", "", "\"id: \": empty");

    n = ngx_unit_data("data: last", out);
    CHECK_MEM(out, n, "last", "a last line without its end");
}


/* the data of one event, joined in place as the relay joins it */

static size_t
ngx_unit_data(const char *event, char *out)
{
    size_t  len, n;

    len = strlen(event);
    memcpy(out, event, len);

    n = ngx_http_mcp_sse_data((u_char *) out, (u_char *) out + len,
                              (u_char *) out);
    out[n] = '\0';

    return n;
}


/* the value of field name on line; want NULL: not that field */

static void
test_field(const char *line, const char *name, const char *want,
    const char *what)
{
    u_char     *p, *last;
    ngx_str_t   v;

    p = (u_char *) line;
    last = p + strlen(line);

    CHECK(ngx_http_mcp_sse_field(p, last, name, &v) == last,
          "the field's line is read to its end");

    if (want == NULL) {
        CHECK(v.data == NULL, what);
        return;
    }

    CHECK(v.data != NULL && v.len == strlen(want)
          && memcmp(v.data, want, v.len) == 0, what);
}
