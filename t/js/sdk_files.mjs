// The official TypeScript SDK client reads files served by mcp_resources
// and a prompt of mcp_prompt: lists every resource page by page, reads a
// text file and a binary one, lists the templates, reads a file through
// the template, gets a prompt with an argument and completes another.
//
// usage: node sdk_files.mjs URL
// prints one JSON line with what it saw

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport }
    from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [url] = process.argv.slice(2);

const client = new Client({ name: "sdk-files", version: "1.0.0" });
const transport = new StreamableHTTPClientTransport(new URL(url));
await client.connect(transport);

const out = { uris: [], pages: 0 };
let cursor;

do {
    const page = await client.listResources(cursor ? { cursor } : {});
    out.pages++;
    for (const r of page.resources) {
        out.uris.push(r.uri);
    }
    cursor = page.nextCursor;
} while (cursor && out.pages < 100);

const text = await client.readResource({ uri: "file:///docs/readme.md" });
out.text = text.contents[0];

const blob = await client.readResource({ uri: "file:///docs/img.png" });
out.blob = blob.contents[0];

const templates = await client.listResourceTemplates();
out.templates = templates.resourceTemplates.map((t) => t.uriTemplate);

const later = await client.readResource({ uri: "file:///docs/sub%20dir/a%20b.txt" });
out.spaced = later.contents[0].text;

try {
    await client.readResource({ uri: "file:///docs/%2e%2e/outside/secret.txt" });
    out.traversal = "read";
} catch (e) {
    out.traversal = e.code;
}

const prompt = await client.getPrompt({ name: "review",
                                        arguments: { code: "int x;" } });
out.prompt = prompt.messages[0].content.text;

const done = await client.complete({
    ref: { type: "ref/prompt", name: "review" },
    argument: { name: "style", value: "k" } });
out.completion = done.completion.values;

await transport.terminateSession();
await client.close();

console.log(JSON.stringify(out));
