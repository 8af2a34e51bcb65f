// How the TypeScript SDK's client reads a reply body: the media type
// chooses JSON (Response.json(): UTF-8 decode, which drops a BOM, then
// JSON.parse) or SSE (TextDecoderStream, then eventsource-parser, events
// of no type or "message", JSON.parse of the data), as
// StreamableHTTPClientTransport does.  Prints the tool names of every
// message with result.tools, and the messages read, as one JSON line.
//
// usage: node sse_client_view.mjs <content-type> <body file>

import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { EventSourceParserStream } from 'eventsource-parser/stream';

const require = createRequire(import.meta.url);
const sdk = require.resolve('@modelcontextprotocol/sdk/client/streamableHttp.js');
const { mediaTypeEssence } = await import(sdk.replace(/client\/streamableHttp\.js$/,
                                                       'shared/mediaType.js'));

const [type, file] = process.argv.slice(2);
const body = readFileSync(file);
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
