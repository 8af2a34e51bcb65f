// An MCP session over one HTTP/2 connection with Node's http2 client, for
// t/transport_http2.t: initialize, a JSON tools/call, an SSE tools/call whose
// events are timed as they arrive, two GET streams with keepalive
// comments, 20 tool calls at once on the same connection, and a GET
// stream reset by the client (RST_STREAM, CANCEL): the notification that
// follows must reach the other GET stream, proving the server let the
// reset one go, and the connection must serve on.
//
// usage: node http2_client.mjs https://127.0.0.1:PORT/mcp
// prints one JSON line with what it saw; the test judges it.

import http2 from "node:http2";

const url = new URL(process.argv[2]);
const out = { errors: [] };
const t0 = Date.now();

const session = http2.connect(url.origin, { rejectUnauthorized: false });
session.on("error", (e) => out.errors.push("session: " + e.message));
let goaway = false;
session.on("goaway", () => { goaway = true; });

let sid = null;

function headers(method, extra) {
    const h = {
        ":method": method, ":path": url.pathname,
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": "2025-11-25",
        ...extra,
    };
    if (method === "POST") h["content-type"] = "application/json";
    if (sid) h["mcp-session-id"] = sid;
    return h;
}

// a whole POST reply: status, headers, body, and each SSE event's arrival
function post(msg) {
    return new Promise((resolve) => {
        const req = session.request(headers("POST"));
        const r = { status: 0, headers: {}, body: "", events: [] };
        let buf = "";
        req.on("response", (h) => { r.status = h[":status"]; r.headers = h; });
        req.setEncoding("utf8");
        req.on("data", (d) => {
            r.body += d;
            buf += d;
            let i;
            while ((i = buf.indexOf("\n\n")) >= 0) {
                const ev = buf.slice(0, i);
                buf = buf.slice(i + 2);
                const data = ev.split("\n").filter((l) => l.startsWith("data:"))
                    .map((l) => l.slice(5).trim()).join("\n");
                if (data) r.events.push({ at: Date.now() - t0, msg: JSON.parse(data) });
            }
        });
        req.on("end", () => resolve(r));
        req.on("error", (e) => { out.errors.push("post: " + e.message); resolve(r); });
        req.end(JSON.stringify(msg));
    });
}

// a GET stream: collects comments and messages until closed
function openGet(name) {
    const g = { name, status: 0, comments: 0, messages: [], ended: false, req: null };
    const req = session.request(headers("GET", { accept: "text/event-stream" }));
    g.req = req;
    let buf = "";
    req.on("response", (h) => { g.status = h[":status"]; });
    req.setEncoding("utf8");
    req.on("data", (d) => {
        buf += d;
        let i;
        while ((i = buf.indexOf("\n\n")) >= 0) {
            const ev = buf.slice(0, i);
            buf = buf.slice(i + 2);
            if (ev.startsWith(":")) g.comments++;
            const data = ev.split("\n").filter((l) => l.startsWith("data:"))
                .map((l) => l.slice(5).trim()).join("\n");
            if (data) g.messages.push(JSON.parse(data));
        }
    });
    req.on("end", () => { g.ended = true; });
    req.on("close", () => { g.ended = true; });
    req.on("error", () => {});
    return g;
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function until(pred, ms) {
    const end = Date.now() + ms;
    while (!pred() && Date.now() < end) await sleep(20);
    return pred();
}

try {
    const init = await post({ jsonrpc: "2.0", id: 1, method: "initialize",
        params: { protocolVersion: "2025-11-25", capabilities: {},
                  clientInfo: { name: "h2", version: "1" } } });
    sid = init.headers["mcp-session-id"] ?? null;
    out.init = { status: init.status, sid: !!sid,
                 server: JSON.parse(init.body).result?.serverInfo?.name };
    await post({ jsonrpc: "2.0", method: "notifications/initialized" });

    const simple = await post({ jsonrpc: "2.0", id: 2, method: "tools/call",
                                params: { name: "test_simple_text", arguments: {} } });
    out.simple = { status: simple.status, type: simple.headers["content-type"],
                   text: JSON.parse(simple.body).result?.content?.[0]?.text };

    const start = Date.now() - t0;
    const prog = await post({ jsonrpc: "2.0", id: 3, method: "tools/call",
        params: { name: "test_tool_with_progress", arguments: {},
                  _meta: { progressToken: "h2" } } });
    out.progress = { status: prog.status, type: prog.headers["content-type"],
                     events: prog.events.map((e) => ({ at: e.at - start,
                         method: e.msg.method ?? null, id: e.msg.id ?? null })) };

    // two GET streams, A then B (the newest gets server messages)
    await post({ jsonrpc: "2.0", id: 4, method: "resources/subscribe",
                 params: { uri: "test://watched-resource" } });
    const a = openGet("A");
    await until(() => a.status, 2000);
    await sleep(100);
    const b = openGet("B");
    await until(() => b.status, 2000);
    await sleep(100);

    // 20 calls at once on the same connection, while both GETs are open
    const calls = await Promise.all([...Array(20).keys()].map((i) =>
        post({ jsonrpc: "2.0", id: 100 + i, method: "tools/call",
               params: { name: "test_simple_text", arguments: {} } })));
    out.concurrent = calls.filter((c) => c.status === 200
        && JSON.parse(c.body).id !== undefined
        && JSON.parse(c.body).result?.content?.[0]?.text).length;

    // keepalive comments on both GET streams (mcp_stream_keepalive 300ms)
    await until(() => a.comments > 0 && b.comments > 0, 3000);

    // the client resets B; the next notification must reach A
    b.req.close(http2.constants.NGHTTP2_CANCEL);
    await until(() => b.ended, 2000);
    await sleep(300);
    const upd = await post({ jsonrpc: "2.0", id: 5, method: "tools/call",
        params: { name: "update_watched_resource", arguments: {} } });
    out.update = upd.status;
    await until(() => a.messages.length > 0, 3000);

    const after = await post({ jsonrpc: "2.0", id: 6, method: "ping" });
    out.afterReset = { status: after.status, body: JSON.parse(after.body) };

    out.getA = { status: a.status, comments: a.comments, ended: a.ended,
                 messages: a.messages.map((m) => m.method) };
    out.getB = { status: b.status, comments: b.comments, ended: b.ended,
                 messages: b.messages.map((m) => m.method) };
    out.goaway = goaway;
    a.req.close();
} catch (e) {
    out.errors.push(String(e && e.stack || e));
}

session.close();
console.log(JSON.stringify(out));
