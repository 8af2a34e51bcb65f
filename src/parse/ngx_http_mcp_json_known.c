
/*
 * The member names the scan interns: a built member whose name is one of
 * them points at the literal here instead of a copy of its own.
 *
 * Pure: no HTTP, no allocation.
 */


#include "ngx_http_mcp_json.h"


/* the prefix of the _meta keys of the MCP revisions */
#define NGX_HTTP_MCP_JSON_META  "io.modelcontextprotocol/"


const char  ngx_http_mcp_json_meta_version[] =
    NGX_HTTP_MCP_JSON_META "protocolVersion";
const char  ngx_http_mcp_json_meta_caps[] =
    NGX_HTTP_MCP_JSON_META "clientCapabilities";
const char  ngx_http_mcp_json_meta_info[] =
    NGX_HTTP_MCP_JSON_META "clientInfo";
const char  ngx_http_mcp_json_meta_level[] =
    NGX_HTTP_MCP_JSON_META "logLevel";


/*
 * The member names every MCP request has, or many do: a built member
 * whose name is one of them points at the literal (cJSON_StringIsConst:
 * cJSON_Delete() leaves it) instead of a copy, an allocation, a copy
 * and a free fewer a member.  p: the name's bytes without escapes, len
 * of them.  NULL: not one of them.
 */

char *
ngx_http_mcp_json_known(u_char *p, size_t len)
{
    const char  *name;

    switch (len) {

    case 2:
        name = "id";
        break;

    case 4:
        name = (p[0] == 'n') ? "name" : "task";
        break;

    case 5:
        name = "_meta";
        break;

    case 6:
        name = (p[0] == 'm') ? "method"
               : (p[0] == 'p') ? "params" : "cursor";
        break;

    case 7:
        name = (p[0] == 'j') ? "jsonrpc" : "version";
        break;

    case 9:
        name = "arguments";
        break;

    case 13:
        name = "progressToken";
        break;

    case 32:
        name = ngx_http_mcp_json_meta_level;
        break;

    case 34:
        name = ngx_http_mcp_json_meta_info;
        break;

    case 39:
        name = ngx_http_mcp_json_meta_version;
        break;

    case 42:
        name = ngx_http_mcp_json_meta_caps;
        break;

    default:
        return NULL;
    }

    return (ngx_memcmp(p, name, len) == 0) ? (char *) name : NULL;
}
