// The official TypeScript SDK client against the module: connects with
// sampling and elicitation handlers, calls test_sampling and
// test_elicitation, and closes, ROUNDS times in a row.  Every round uses
// a fresh undici Agent, so its requests (the tool call's POST stream and
// the POST carrying the client's answer) travel on fresh connections and
// land on whichever worker accepts them.
//
// usage: node sdk_rounds.mjs URL ROUNDS
// prints one JSON line per round, then {"ok":N,"failed":M}

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport }
    from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { CreateMessageRequestSchema, ElicitRequestSchema }
    from "@modelcontextprotocol/sdk/types.js";
import { Agent, fetch as undiciFetch } from "undici";

const [url, roundsArg] = process.argv.slice(2);
const rounds = Number(roundsArg || 30);

async function round(n) {
    const agent = new Agent({ keepAliveTimeout: 10, pipelining: 0 });
    const fetch = (u, init) => undiciFetch(u, { ...init, dispatcher: agent });
    const client = new Client({ name: "sdk-rounds", version: "1.0.0" },
        { capabilities: { sampling: {}, elicitation: {} } });
    let sampled = 0, elicited = 0;

    client.setRequestHandler(CreateMessageRequestSchema, async (req) => {
        sampled++;
        const text = req.params.messages[0].content.text;
        return { role: "assistant", model: "test-model",
                 content: { type: "text", text: `echo ${text}` } };
    });
    client.setRequestHandler(ElicitRequestSchema, async () => {
        elicited++;
        return { action: "accept",
                 content: { username: "round" + n, email: "r@example.com" } };
    });

    const transport = new StreamableHTTPClientTransport(new URL(url),
                                                        { fetch });
    await client.connect(transport);

    const s = await client.callTool({ name: "test_sampling",
                                      arguments: { prompt: "round " + n } });
    const e = await client.callTool({ name: "test_elicitation",
                                      arguments: { message: "who?" } });
    await transport.terminateSession();
    await client.close();
    await agent.close();

    const st = s.content[0].text, et = e.content[0].text;
    const ok = sampled === 1 && elicited === 1
        && st === `LLM response: echo round ${n}`
        && et.includes(`"username":"round${n}"`) && !s.isError && !e.isError;
    return { round: n, ok, sampling: st, elicitation: et };
}

let ok = 0, failed = 0;
for (let n = 1; n <= rounds; n++) {
    try {
        const r = await round(n);
        console.log(JSON.stringify(r));
        r.ok ? ok++ : failed++;
    } catch (err) {
        console.log(JSON.stringify({ round: n, ok: false,
                                     error: String(err) }));
        failed++;
    }
}
console.log(JSON.stringify({ ok, failed }));
process.exit(failed ? 1 : 0);
