// How the TypeScript SDK's client reads a reply body: the media type
// chooses JSON (Response.json(): UTF-8 decode, which drops a BOM, then
// JSON.parse) or SSE (TextDecoderStream, then eventsource-parser, events
// of no type or "message", JSON.parse of the data), as
// StreamableHTTPClientTransport does.  Prints the tool names of every
// message with result.tools, and the messages read, as one JSON line.
//
// usage: node sse_client_view.mjs <content-type> <body file>
//        node sse_client_view.mjs <url> <session id> <protocol version>
//            (the second: a tools/list POSTed with fetch(), which also
//            undoes a Content-Encoding, as the SDK's client posts it)

import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { EventSourceParserStream } from 'eventsource-parser/stream';

const require = createRequire(import.meta.url);
const sdk = require.resolve('@modelcontextprotocol/sdk/client/streamableHttp.js');
const { mediaTypeEssence } = await import(sdk.replace(/client\/streamableHttp\.js$/,
                                                       'shared/mediaType.js'));

let [type, file, pv] = process.argv.slice(2);
let body;

if (/^https?:/.test(type)) {
    const res = await fetch(type, {
        method: 'POST',
        headers: { 'content-type': 'application/json',
                   accept: 'application/json, text/event-stream',
                   'mcp-session-id': file, 'mcp-protocol-version': pv },
        body: JSON.stringify({ jsonrpc: '2.0', id: 'f1', method: 'tools/list' }),
    });
    type = res.headers.get('content-type') ?? '';
    body = Buffer.from(await res.arrayBuffer());
} else {
    body = readFileSync(file);
}
const messages = [];
const errors = [];

const take = (m) => { for (const x of Array.isArray(m) ? m : [m]) messages.push(x); };

const essence = mediaTypeEssence(type);

if (essence === 'text/event-stream') {
    const reader = new Response(body).body
        .pipeThrough(new TextDecoderStream())
        .pipeThrough(new EventSourceParserStream())
        .getReader();
    for (;;) {
        const { value: ev, done } = await reader.read();
        if (done) break;
        if (!ev.data) continue;
        if (!ev.event || ev.event === 'message') {
            try { take(JSON.parse(ev.data)); } catch (e) { errors.push(String(e)); }
        }
    }
} else if (essence === 'application/json') {
    try { take(await new Response(body).json()); } catch (e) { errors.push(String(e)); }
} else {
    errors.push(`Unexpected content type: ${type}`);
}

const names = [];
for (const m of messages) {
    for (const t of (m && m.result && Array.isArray(m.result.tools)) ? m.result.tools : []) {
        names.push(t && t.name);
    }
}

console.log(JSON.stringify({ essence, names, messages: messages.length, errors }));
