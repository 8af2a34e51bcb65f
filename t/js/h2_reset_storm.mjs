// HTTP/2 clients that reset many streams at once mid-SSE, for
// t/loctool_attacks.t.  CONNS connections, each with its own
// 2025-11-25 session; ROUNDS times, each opens STREAMS streams at once
// (GET streams, tools/call with progress as SSE, a location tool whose
// upstream is slow) and, once every stream has its response header (or
// after 1 s), resets them all in the same tick (RST_STREAM CANCEL); and
// resets calls before their reply began (see below).  Then
// each session opens one more GET stream and asks for a notification,
// which must reach it: the server let every reset stream go.
//
// usage: node h2_reset_storm.mjs URL CONNS STREAMS ROUNDS
// prints one JSON line with what it saw; the test judges it.

import http2 from "node:http2";

const url = new URL(process.argv[2]);
const nconn = Number(process.argv[3] ?? 4);
const nstreams = Number(process.argv[4] ?? 60);
const rounds = Number(process.argv[5] ?? 3);
const out = { errors: [], reset: 0, headers: 0, goaway: 0, notified: 0, pings: 0 };

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function connect() {
    const s = http2.connect(url.origin, { rejectUnauthorized: false });
    s.on("error", (e) => out.errors.push("session: " + e.message));
    s.on("goaway", () => { out.goaway++; });
    return s;
}

function headers(c, method, extra) {
    const h = { ":method": method, ":path": url.pathname,
                "accept": "application/json, text/event-stream",
                "mcp-protocol-version": "2025-11-25", ...extra };
    if (method === "POST") h["content-type"] = "application/json";
    if (c.sid) h["mcp-session-id"] = c.sid;
    return h;
}

function post(c, msg) {
    return new Promise((resolve) => {
        const req = c.s.request(headers(c, "POST"));
        const r = { status: 0, headers: {}, body: "" };
        req.on("response", (h) => { r.status = h[":status"]; r.headers = h; });
        req.setEncoding("utf8");
        req.on("data", (d) => { r.body += d; });
        req.on("end", () => resolve(r));
        req.on("error", (e) => { out.errors.push("post: " + e.message); resolve(r); });
        req.end(JSON.stringify(msg));
    });
}

// a stream that will be reset: a GET stream, an SSE call, a slow tool
function victim(c, i) {
    let req;
    const kind = i % 3;
    if (kind === 0) {
        req = c.s.request(headers(c, "GET", { accept: "text/event-stream" }));
    } else {
        req = c.s.request(headers(c, "POST"));
        req.end(JSON.stringify({ jsonrpc: "2.0", id: "v" + i, method: "tools/call",
            params: kind === 1
                ? { name: "test_tool_with_progress", arguments: {},
                    _meta: { progressToken: "p" + i } }
                : { name: "slow_tool", arguments: {},
                    _meta: { progressToken: "s" + i } } }));
    }
    const v = { req, header: false };
    req.on("response", () => { v.header = true; out.headers++; });
    req.on("data", () => {});
    req.on("error", () => {});
    return v;
}

try {
    const conns = [];
    for (let i = 0; i < nconn; i++) {
        const c = { s: connect(), sid: null };
        const init = await post(c, { jsonrpc: "2.0", id: 1, method: "initialize",
            params: { protocolVersion: "2025-11-25", capabilities: { elicitation: {} },
                      clientInfo: { name: "h2-storm", version: "1" } } });
        c.sid = init.headers["mcp-session-id"] ?? null;
        await post(c, { jsonrpc: "2.0", method: "notifications/initialized" });
        await post(c, { jsonrpc: "2.0", id: 2, method: "resources/subscribe",
                        params: { uri: "test://watched-resource" } });
        conns.push(c);
    }
    out.sessions = conns.filter((c) => c.sid).length;

    for (let r = 0; r < rounds; r++) {
        const vs = conns.flatMap((c) => [...Array(nstreams).keys()].map((i) => victim(c, i)));
        const end = Date.now() + 1000;
        while (vs.some((v) => !v.header) && Date.now() < end) await sleep(10);
        await sleep(50);
        for (const v of vs) {
            v.req.close(http2.constants.NGHTTP2_CANCEL);
            out.reset++;
        }
        await sleep(100);
    }
    // reset before the reply began: a tool that asks the client after
    // 0.3 s, its stream reset at 50 ms, so that the question finds the
    // request's client gone
    for (const c of conns) {
        for (let i = 0; i < 5; i++) {
            const req = c.s.request(headers(c, "POST"));
            req.on("error", () => {});
            req.on("data", () => {});
            req.end(JSON.stringify({ jsonrpc: "2.0", id: "e" + i, method: "tools/call",
                params: { name: "confirm_delete",
                          arguments: { filename: "f", seconds: 0.3 } } }));
            setTimeout(() => { req.close(http2.constants.NGHTTP2_CANCEL); out.early = (out.early ?? 0) + 1; }, 50);
        }
    }
    await sleep(1000);

    // each session: a new GET stream must get the next notification
    const gets = conns.map((c) => {
        const g = { msgs: 0 };
        const req = c.s.request(headers(c, "GET", { accept: "text/event-stream" }));
        g.req = req;
        req.setEncoding("utf8");
        req.on("data", (d) => { if (d.includes("notifications/resources/updated")) g.msgs++; });
        req.on("error", () => {});
        return g;
    });
    await sleep(300);
    for (const c of conns) {
        await post(c, { jsonrpc: "2.0", id: 5, method: "tools/call",
                        params: { name: "update_watched_resource", arguments: {} } });
    }
    const until = Date.now() + 3000;
    while (gets.some((g) => g.msgs === 0) && Date.now() < until) await sleep(20);
    out.notified = gets.filter((g) => g.msgs > 0).length;
    for (const c of conns) {
        const p = await post(c, { jsonrpc: "2.0", id: 6, method: "ping" });
        if (p.status === 200) out.pings++;
    }
    gets.forEach((g) => g.req.close());
    conns.forEach((c) => c.s.close());
} catch (e) {
    out.errors.push(String(e && e.stack || e));
}

console.log(JSON.stringify(out));
// sessions closed gracefully wait for the server's side of every stream:
// what was to be seen is seen
process.exit(0);
