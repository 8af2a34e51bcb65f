
/*
 * Needles (ngx_http_mcp_needle.c): the bytes every match of a regular
 * expression must hold, read from the pattern's text, and a caseless
 * search for them.  The guardrails (src/core/ngx_http_mcp_guard.c) look
 * for a pattern's needle before they run the pattern: a text without it
 * cannot match.  Pure code over the pattern's bytes.
 */


#ifndef _NGX_HTTP_MCP_NEEDLE_H_INCLUDED_
#define _NGX_HTTP_MCP_NEEDLE_H_INCLUDED_


#include <ngx_config.h>
#include <ngx_core.h>


#define ngx_http_mcp_needle_alnum(c)                                          \
    (((c) >= '0' && (c) <= '9') || ((c) >= 'a' && (c) <= 'z')                \
     || ((c) >= 'A' && (c) <= 'Z'))


#define NGX_HTTP_MCP_NEEDLE_ALTS  8


/* a group's alternatives, a run of each: every match holds one of them */
typedef struct {
    ngx_str_t                  runs[NGX_HTTP_MCP_NEEDLE_ALTS];
    ngx_uint_t                 n;           /* 0: no such group */
    size_t                     shortest;
} ngx_http_mcp_needle_alts_t;


/*
 * The longest run of literal characters that every match of pattern
 * holds, into buf: best->len 0 when none is known.  *caseless: in,
 * whether the pattern is compiled caseless; out, whether the runs are to
 * be looked for caselessly (then they are in lower case, ASCII only).
 * unicode: the pattern is compiled with UTF or UCP, where "k" and "s"
 * have case partners outside ASCII.  alts (or NULL): the group at the
 * top level whose alternatives' runs are the longest, the shortest of
 * them counted; buf then holds twice pattern's length, else once.
 */
void ngx_http_mcp_needle_literal(ngx_str_t *pattern, u_char *buf,
    ngx_str_t *best, ngx_uint_t *caseless, ngx_uint_t unicode,
    ngx_http_mcp_needle_alts_t *alts);

/*
 * Whether s holds needle (len bytes in lower case) in any case of its
 * ASCII letters; rare: the place in it of the byte looked for first
 */
ngx_uint_t ngx_http_mcp_needle_caseless(u_char *needle, size_t len,
    size_t rare, u_char *s, size_t slen);


#endif /* _NGX_HTTP_MCP_NEEDLE_H_INCLUDED_ */
