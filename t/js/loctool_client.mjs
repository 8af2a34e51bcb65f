// The official TypeScript SDK client against location-backed tools and
// resources (mcp_tool, mcp_resource pass=): lists the tools, calls one
// with arguments, reads a resource, and prints what it got as one JSON
// line.
//
// usage: node loctool_client.mjs URL

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport }
    from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [url] = process.argv.slice(2);

const client = new Client({ name: "t76-sdk", version: "1.0.0" });
const transport = new StreamableHTTPClientTransport(new URL(url));

await client.connect(transport);

const tools = await client.listTools();
const call = await client.callTool({ name: "get_order",
                                     arguments: { id: "sdk-7" } });
const bad = await client.callTool({ name: "get_order", arguments: {} });
const read = await client.readResource({ uri: "orders://summary" });

console.log(JSON.stringify({
    tools: tools.tools.map((t) => t.name),
    call,
    bad,
    read,
}));

await transport.terminateSession();
await client.close();
