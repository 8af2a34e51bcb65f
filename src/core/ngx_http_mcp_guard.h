
/*
 * Guardrails (ngx_http_mcp_guard.c): named sets of regular expressions
 * (mcp_guardrail_set), and what a location does with them
 * (mcp_guardrail, or its other name mcp_pass_guardrail), held to a
 * tools/call's arguments, its result and the descriptions of tools/list
 * and prompts/list, over the parsed messages.  Every path calls the same
 * engine: the built-in endpoint and location tools (dispatch and the
 * call's result), mcp_backend (the same two: its legs are sent from the
 * call's arguments, its answers and merged lists come back as the
 * call's result), mcp_pass (src/proxy, on what it relays).
 */


#ifndef _NGX_HTTP_MCP_GUARD_H_INCLUDED_
#define _NGX_HTTP_MCP_GUARD_H_INCLUDED_


#include "ngx_http_mcp_core.h"


#define NGX_HTTP_MCP_GUARD_BLOCK    0
#define NGX_HTTP_MCP_GUARD_REDACT   1
#define NGX_HTTP_MCP_GUARD_LOG      2

#define NGX_HTTP_MCP_GUARD_ARGS     0x01
#define NGX_HTTP_MCP_GUARD_RESULTS  0x02
#define NGX_HTTP_MCP_GUARD_LISTS    0x04


typedef struct {
    ngx_str_t                  name;
    ngx_array_t                regexes;     /* ngx_regex_elt_t */
    ngx_array_t                needles;     /* ngx_http_mcp_guard_needle_t,
                                               one a regex */
    u_char                     rare[64];    /* the needles' rare bytes,
                                               each once */
    ngx_uint_t                 nrare;
    ngx_uint_t                 metric;      /* its row in the metrics */
    ngx_uint_t                 joinable;    /* no pattern reads the
                                               context of a match: one
                                               pass over all the strings
                                               tells whether any matches */
} ngx_http_mcp_guard_set_t;

/*
 * Bytes every match of a pattern holds (a run of its literal characters,
 * or the first byte the library knows of a match; or one of a group's
 * alternatives' runs), in any case of their ASCII letters for a caseless
 * pattern: a text without them is not run through the pattern
 */
typedef struct ngx_http_mcp_guard_needle_s  ngx_http_mcp_guard_needle_t;

struct ngx_http_mcp_guard_needle_s {
    u_char                    *data;        /* NULL: none known */
    size_t                     len;
    size_t                     rare;        /* the byte of it looked for */
    ngx_uint_t                 bit;         /* that byte in set->rare, or
                                               64: not there */
    ngx_uint_t                 caseless;    /* data in lower case, looked
                                               for in any case */
    ngx_http_mcp_guard_needle_t  *alts;     /* or one of these (data
                                               NULL): a group's
                                               alternatives */
    ngx_uint_t                 nalts;
};

typedef struct {
    ngx_http_mcp_guard_set_t  *set;
    ngx_str_t                  marker;      /* [redacted:NAME] */
    ngx_uint_t                 action;      /* NGX_HTTP_MCP_GUARD_BLOCK.. */
    ngx_uint_t                 where;       /* NGX_HTTP_MCP_GUARD_ARGS.. */
} ngx_http_mcp_guard_t;

/* what one check reads with and tells to */
typedef struct {
    ngx_array_t               *guards;      /* ngx_http_mcp_guard_t */
    ngx_pool_t                *pool;        /* for redacted strings */
    ngx_log_t                 *log;
    ngx_http_request_t        *request;     /* for $mcp_guardrail, or
                                               NULL: gone */
    ngx_uint_t                 key_hit;     /* an argument's key matched */
} ngx_http_mcp_guard_ctx_t;


/* mcp_guardrail_set NAME PATTERN...; (http) */
char *ngx_http_mcp_guard_set_directive(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);

/*
 * mcp_guardrail (and mcp_pass_guardrail) SET block|redact|log
 * [arguments] [results] [lists]: one more guard into the core's location
 * configuration (mlcf->guards, mlcf->guard_where)
 */
char *ngx_http_mcp_guard_directive(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);

/* $mcp_guardrail, $mcp_guardrail_action (preconfiguration) */
ngx_int_t ngx_http_mcp_guard_add_variables(ngx_conf_t *cf);

/*
 * The raw JSON text values are read from (a request's body, a reply, one
 * SSE event) before or instead of its parse: NGX_DECLINED when the text
 * proves that no guard of where (NGX_HTTP_MCP_GUARD_ARGS..) can match a
 * key or a string in it; NGX_OK when the values must be looked at one by
 * one; NGX_ERROR.  parsed: the strict parser has read the text (it is
 * valid UTF-8); else only printable ASCII, tab, CR and LF pass.  For
 * NGX_HTTP_MCP_GUARD_ARGS the text is a POST's body, read from its first
 * "arguments" on.
 */
ngx_int_t ngx_http_mcp_guard_raw(ngx_array_t *guards, ngx_uint_t where,
    u_char *p, size_t len, ngx_uint_t parsed, ngx_log_t *log);

/*
 * A tools/call's arguments, keys too: NGX_OK, NGX_DECLINED (*why: the
 * refusal's message) or NGX_ERROR.  With rewrite, "redact" replaces the
 * matches of string values in the tree (*changed set) for the tool to
 * read, and a key that matches refuses; without, it refuses as "block"
 * does.
 */
ngx_int_t ngx_http_mcp_guard_arguments(ngx_http_mcp_guard_ctx_t *gc,
    cJSON *arguments, ngx_uint_t rewrite, ngx_uint_t *changed,
    const char **why);

/*
 * A tools/call result: the text of its content items and their embedded
 * resources, every string of structuredContent.  "block" makes it an
 * isError result.  NGX_OK (*changed when rewritten) or NGX_ERROR.
 */
ngx_int_t ngx_http_mcp_guard_result(ngx_http_mcp_guard_ctx_t *gc,
    cJSON *result, ngx_uint_t *changed);

/*
 * A tools/list or prompts/list result: each item's title and
 * description; "block" leaves the item out.  NGX_OK or NGX_ERROR.
 */
ngx_int_t ngx_http_mcp_guard_list(ngx_http_mcp_guard_ctx_t *gc,
    cJSON *result, ngx_uint_t *changed);

/*
 * A tools/call's arguments on the module's own paths (built-in, location
 * tools, mcp_backend), before the tool runs or a leg is sent: "redact"
 * rewrites call->arguments, which is what they read.  NGX_OK: go on;
 * NGX_DECLINED: refused, *why says why; NGX_ERROR.
 */
ngx_int_t ngx_http_mcp_guard_call_arguments(ngx_http_mcp_call_t *call,
    const char **why);

/*
 * A call's result on the module's own paths (built-in, location tools,
 * mcp_backend): tools/call, tools/list, prompts/list by the location's
 * guards.  NGX_OK or NGX_ERROR.
 */
ngx_int_t ngx_http_mcp_guard_call_result(ngx_http_mcp_call_t *call,
    cJSON *result);


#endif /* _NGX_HTTP_MCP_GUARD_H_INCLUDED_ */
