// The official TypeScript SDK client through an mcp_pass gateway: lists
// the tools, calls echo, then calls trigger-long-running-operation with a
// progress callback and records when each progress notification and the
// result arrive (Date.now(), ms since the call started), so the test can
// tell notifications relayed as they are sent from notifications held
// back until the end.
//
// usage: node gateway_progress.mjs URL [DURATION_S [STEPS]]
// prints one JSON line: {tools, echo, progress: [{progress, total, at}],
//                        result, resultAt, sessionId, terminated}

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport }
    from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [url, durationArg, stepsArg] = process.argv.slice(2);
const duration = Number(durationArg || 2);
const steps = Number(stepsArg || 4);

const out = { tools: [], echo: null, progress: [], result: null,
              resultAt: null, sessionId: null, terminated: false };

try {
    const client = new Client({ name: "gateway-progress", version: "1.0.0" });
    const transport = new StreamableHTTPClientTransport(new URL(url));
    await client.connect(transport);
    out.sessionId = transport.sessionId ?? null;

    const list = await client.listTools();
    out.tools = list.tools.map((t) => t.name);

    const echo = await client.callTool({ name: "echo",
                                         arguments: { message: "through the gateway" } });
    out.echo = echo.content?.[0]?.text ?? null;

    const t0 = Date.now();
    const res = await client.callTool(
        { name: "trigger-long-running-operation",
          arguments: { duration, steps } },
        undefined,
        {
            onprogress: (p) => out.progress.push({ progress: p.progress,
                                                   total: p.total,
                                                   at: Date.now() - t0 }),
            timeout: 30000,
        });
    out.resultAt = Date.now() - t0;
    out.result = res.content?.[0]?.text ?? null;

    await transport.terminateSession();
    out.terminated = true;
    await client.close();
} catch (err) {
    out.error = String(err?.stack || err);
}

console.log(JSON.stringify(out));
process.exit(out.error ? 1 : 0);
