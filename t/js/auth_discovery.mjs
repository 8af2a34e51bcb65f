// The official TypeScript SDK client against a protected endpoint:
// discovers the RFC 9728 metadata with the SDK's own helper, is refused
// without a token (401 with a resource_metadata challenge), and with a
// token completes initialize, tools/list and tools/call.
//
// usage: node auth_discovery.mjs URL TOKEN
// prints one JSON object with what it saw

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport }
    from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { discoverOAuthProtectedResourceMetadata, extractResourceMetadataUrl }
    from "@modelcontextprotocol/sdk/client/auth.js";

const [url, token] = process.argv.slice(2);
const out = {};

const meta = await discoverOAuthProtectedResourceMetadata(url);
out.resource = meta.resource;
out.authorization_servers = meta.authorization_servers;
out.scopes_supported = meta.scopes_supported;

// without a token: the SDK client fails to connect; the raw reply says why
const bare = new Client({ name: "auth-discovery", version: "1.0.0" });
try {
    await bare.connect(new StreamableHTTPClientTransport(new URL(url)));
    out.unauthenticated_connect = "succeeded";
} catch (e) {
    out.unauthenticated_connect = "refused";
    out.unauthenticated_error = String(e.message || e).slice(0, 200);
}
await bare.close().catch(() => {});

const res = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json",
               accept: "application/json, text/event-stream" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize",
        params: { protocolVersion: "2025-11-25", capabilities: {},
                  clientInfo: { name: "raw", version: "1" } } }),
});
out.unauthenticated_status = res.status;
out.www_authenticate = res.headers.get("www-authenticate");
out.challenge_metadata_url = String(extractResourceMetadataUrl(res) || "");

// with a token
process.on("uncaughtException", (e) => {
    out.failed_at = out.step; out.error = String(e && e.message);
    console.log(JSON.stringify(out)); process.exit(1);
});
process.on("unhandledRejection", (e) => {
    out.failed_at = out.step; out.error = String(e && e.message);
    console.log(JSON.stringify(out)); process.exit(1);
});
out.step = "connect";
const client = new Client({ name: "auth-discovery", version: "1.0.0" });
const transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
});
await client.connect(transport);
out.session = transport.sessionId ? "yes" : "no";
out.step = "listTools";
const tools = await client.listTools();
out.tools = tools.tools.length;
out.step = "callTool";
const r = await client.callTool({ name: "test_simple_text", arguments: {} });
out.call_text = r.content[0].text;
await transport.terminateSession();
await client.close();

console.log(JSON.stringify(out));
