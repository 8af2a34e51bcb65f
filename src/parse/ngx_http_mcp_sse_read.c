
/*
 * Reading an event stream, as the WHATWG HTML standard's "event stream
 * interpretation" does: a line ends with CRLF, LF or a CR alone; the
 * stream may begin with a BOM, which is dropped; a blank line ends an
 * event; an event's data is its data: lines joined with LF, each without
 * the one space that may follow the colon.
 *
 * The gateway reads what an upstream or a backend streams and decides
 * from it (a tools/list reply's tools, a relayed request's id) before a
 * client reads the same bytes.  A reader here that ended lines at LF
 * only, or kept the BOM, would decide on another stream than the
 * client's parser sees: every reader of an upstream's stream uses these.
 *
 * Pure: no HTTP, no pool; unit tested on its own.
 */


#include "ngx_http_mcp_sse_read.h"


static u_char  ngx_http_mcp_sse_bom_bytes[] = "\xef\xbb\xbf";


/* past the BOM that may begin a stream, or p */

u_char *
ngx_http_mcp_sse_bom(u_char *p, u_char *end)
{
    if (end - p >= 3 && ngx_memcmp(p, ngx_http_mcp_sse_bom_bytes, 3) == 0) {
        return p + 3;
    }

    return p;
}


/*
 * Whether a stream's first bytes [p, end) are too few to tell: shorter
 * than a BOM, and all of them a BOM's so far (none yet included).
 */

ngx_uint_t
ngx_http_mcp_sse_bom_pending(u_char *p, u_char *end)
{
    return p == end
           || (end - p < 3
               && ngx_memcmp(p, ngx_http_mcp_sse_bom_bytes, end - p) == 0);
}


/*
 * The end of the line at p, NULL if none yet; *next: after it.  A CR
 * last in the buffer ends its line: should a LF come next, it makes an
 * empty line, which at most ends an event that is empty (ignored), as
 * the LF of a CRLF would.
 */

u_char *
ngx_http_mcp_sse_eol(u_char *p, u_char *end, u_char **next)
{
    for ( /* void */ ; p < end; p++) {

        if (*p == '\n') {
            *next = p + 1;
            return p;
        }

        if (*p == '\r') {
            *next = (p + 1 < end && p[1] == '\n') ? p + 2 : p + 1;
            return p;
        }
    }

    return NULL;
}


/*
 * The line at p, to the next line, which it returns (last ends the last
 * line); value: the line's value when the line is the field name
 * ("data:", say: its one space after the colon dropped), else a NULL
 * data.  A line that is the name alone, without its colon ("data"), is
 * the field with an empty value, as the standard reads it: an SSE
 * client joins an empty line to the event's data for it.
 */

u_char *
ngx_http_mcp_sse_field(u_char *p, u_char *last, const char *name,
    ngx_str_t *value)
{
    u_char  *eol, *next;
    size_t   len, n;

    eol = ngx_http_mcp_sse_eol(p, last, &next);

    if (eol == NULL) {
        eol = last;
        next = last;
    }

    len = eol - p;
    n = ngx_strlen(name);

    value->data = NULL;

    if (n && name[n - 1] == ':' && len == n - 1
        && ngx_strncmp(p, name, n - 1) == 0)
    {
        value->data = p + len;
        value->len = 0;

    } else if (len >= n && ngx_strncmp(p, name, n) == 0) {
        p += n;
        len -= n;

        if (len && *p == ' ') {
            p++;
            len--;
        }

        value->data = p;
        value->len = len;
    }

    return next;
}


/* past the blank line that ends the event at p; NULL: no blank line yet */

u_char *
ngx_http_mcp_sse_event_end(u_char *p, u_char *end)
{
    u_char  *eol, *next;

    while (p < end) {
        eol = ngx_http_mcp_sse_eol(p, end, &next);

        if (eol == NULL) {
            return NULL;
        }

        if (eol == p) {
            return next;
        }

        p = next;
    }

    return NULL;
}


/*
 * The data of the event [p, last): its data: lines joined with LF, to
 * dst, which may be p (the text only gets shorter); the length.
 */

size_t
ngx_http_mcp_sse_data(u_char *p, u_char *last, u_char *dst)
{
    u_char     *d;
    ngx_str_t   v;
    ngx_uint_t  n;

    d = dst;
    n = 0;

    while (p < last) {
        p = ngx_http_mcp_sse_field(p, last, "data:", &v);

        if (v.data == NULL) {
            continue;
        }

        if (n++) {
            *d++ = '\n';
        }

        ngx_memmove(d, v.data, v.len);
        d += v.len;
    }

    return d - dst;
}
