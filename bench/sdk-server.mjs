// The peer for scripts/bench: the official TypeScript SDK serving the
// same tool as the module's test_simple_text, over Streamable HTTP with
// stateful sessions (one transport and one McpServer per session, as the
// SDK's examples do).  JSON replies (enableJsonResponse), like the
// module's reply to a tool that sends nothing before its result.
//
//   node sdk-server.mjs PORT      (run from build/npm so imports resolve)

import http from 'node:http';
import { randomUUID } from 'node:crypto';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport }
    from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';

const port = Number(process.argv[2]);
const transports = new Map();

function newServer() {
    const server = new McpServer({ name: 'sdk-bench', version: '1.0.0' });
    server.tool('test_simple_text', 'Tests simple text content response',
        async () => ({
            content: [{ type: 'text',
                        text: 'This is a simple text response for testing.' }],
        }));
    return server;
}

function fail(res, status, message) {
    res.writeHead(status, { 'Content-Type': 'application/json' });
    res.end(JSON.stringify({ jsonrpc: '2.0', id: null,
                             error: { code: -32000, message } }));
}

async function handle(req, res, body) {
    const sid = req.headers['mcp-session-id'];
    let transport = sid ? transports.get(sid) : undefined;

    if (!transport) {
        if (sid || req.method !== 'POST' || !isInitializeRequest(body)) {
            return fail(res, sid ? 404 : 400, 'no valid session');
        }
        transport = new StreamableHTTPServerTransport({
            sessionIdGenerator: () => randomUUID(),
            enableJsonResponse: true,
            onsessioninitialized: (id) => transports.set(id, transport),
            onsessionclosed: (id) => transports.delete(id),
        });
        transport.onclose = () => {
            if (transport.sessionId) transports.delete(transport.sessionId);
        };
        await newServer().connect(transport);
    }
    await transport.handleRequest(req, res, body);
}

http.createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
        let body;
        try {
            body = chunks.length ? JSON.parse(Buffer.concat(chunks)) : undefined;
        } catch {
            return fail(res, 400, 'parse error');
        }
        handle(req, res, body).catch(() => {
            if (!res.headersSent) fail(res, 500, 'internal error');
        });
    });
}).listen(port, '127.0.0.1', () => console.log(`sdk-server on ${port}`));
