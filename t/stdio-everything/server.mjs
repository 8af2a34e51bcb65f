// The conformance suite's Everything Server (seed 002: its tools,
// resources, prompts, completions, logging, progress, sampling and
// elicitation) as a stdio program on the official TypeScript SDK's
// low-level Server and StdioServerTransport: the same names and answers
// as the module's built-in set (fixtures/ngx_http_mcp_everything*.c), so
// that the suites can run through an mcp_stdio location (issue #40).
//
// The low-level Server rather than McpServer: McpServer builds each
// tool's inputSchema from zod and would not keep json_schema_2020_12_tool's
// keywords ($schema, $defs, if/then/else) as the suite checks them.
//
// The SDK speaks the 2025 revisions; a 2026-07-28 request is known by
// its _meta (io.modelcontextprotocol/protocolVersion, as a pool of
// children passes it on): it gets the caching hints on lists and reads,
// SEP-2164's -32602 for an unknown resource, and the multi-round tools
// (SEP-2322), whose input-required results carry a requestState sealed
// with HMAC-SHA256 under a key every child shares (--state-key), so that
// a retry may reach another child of the pool.  The tasks extension's
// tools are not here: a task outlives the request, and a pool of
// children has no store to keep it in.
//
// usage: node server.mjs [--npm DIR] [--state-key KEY]
//   DIR holds node_modules with @modelcontextprotocol/sdk (default:
//   $MCP_NPM_DIR, else build/npm of this repository); KEY seals the
//   requestState (default: a fixed test key; this is a test server).
//   Nothing else of the environment is read, since mcp_stdio passes
//   only what it names.  stdout carries JSON-RPC alone; diagnostics go
//   to stderr.

import { createRequire } from "node:module";
import { createHmac, timingSafeEqual } from "node:crypto";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const option = (name) => {
    const i = process.argv.indexOf(name);
    return i > 1 ? process.argv[i + 1] : undefined;
};
const npm = option("--npm") ?? process.env.MCP_NPM_DIR
    ?? path.join(here, "..", "..", "build", "npm");
const STATE_KEY = option("--state-key") ?? "stdio-everything test key";
const require = createRequire(path.join(path.resolve(npm), "package.json"));

const { Server } = require("@modelcontextprotocol/sdk/server/index.js");
const { Protocol } = require("@modelcontextprotocol/sdk/shared/protocol.js");
const { StdioServerTransport } =
    require("@modelcontextprotocol/sdk/server/stdio.js");
const types = require("@modelcontextprotocol/sdk/types.js");
const z = require("zod/v4");
const { ErrorCode } = types;

const LOGGER = "conformance-test-server";

// a 1x1 red RGBA PNG, and a WAV of 8 silent 8-bit mono samples at 8000 Hz
const PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAF"
    + "BQIAX8jx0gAAAABJRU5ErkJggg==";
const WAV = "UklGRiwAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQgAAACAgICAgICAgA==";
const IMAGE = { type: "image", data: PNG, mimeType: "image/png" };
const NONE = { type: "object", properties: {} };

// a JSON-RPC error as the SDK sends what a handler throws: code, message
// and data as they are (McpError would prefix "MCP error N: " to the text)
function rpcError(code, message, data) {
    return Object.assign(new Error(message), { code, data });
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const text = (t, isError) => ({ content: [{ type: "text", text: t }],
                                ...(isError ? { isError: true } : {}) });


// The SDK's request schemas drop the params they do not know, and a
// 2026-07-28 retry's inputResponses and requestState are such: these
// keep every param
const loose = (method, shape) => z.looseObject({
    method: z.literal(method),
    params: z.looseObject(shape)
});
const CallToolRequest = loose("tools/call", {
    name: z.string(),
    arguments: z.optional(z.record(z.string(), z.unknown()))
});
const GetPromptRequest = loose("prompts/get", {
    name: z.string(),
    arguments: z.optional(z.record(z.string(), z.unknown()))
});


// ---- 2026-07-28: known by the request's _meta -----------------------------

const P = "io.modelcontextprotocol/";

function stateless(request) {
    const v = request.params?._meta?.[P + "protocolVersion"];
    return typeof v === "string" && v >= "2026-07-28";
}

// the caching hints (SEP-2549) on what a 2026-07-28 client may cache
function cacheable(handler) {
    return async (request, extra) => {
        const result = await handler(request, extra);
        return stateless(request)
            ? { ...result, ttlMs: 0, cacheScope: "public" } : result;
    };
}


// ---- elicitation schemas ----------------------------------------------

const USER_SCHEMA = {
    type: "object",
    properties: {
        username: { type: "string", description: "User's response" },
        email: { type: "string", description: "User's email address" }
    },
    required: ["username", "email"]
};

const DEFAULTS_SCHEMA = {
    type: "object",
    properties: {
        name: { type: "string", description: "User name",
                default: "John Doe" },
        age: { type: "integer", description: "User age", default: 30 },
        score: { type: "number", description: "User score", default: 95.5 },
        status: { type: "string", description: "User status",
                  enum: ["active", "inactive", "pending"],
                  default: "active" },
        verified: { type: "boolean", description: "Verification status",
                    default: true }
    },
    required: []
};

const ENUMS_SCHEMA = {
    type: "object",
    properties: {
        untitledSingle: { type: "string", description: "Select one option",
                          enum: ["option1", "option2", "option3"] },
        titledSingle: {
            type: "string", description: "Select one option with titles",
            oneOf: [{ const: "value1", title: "First Option" },
                    { const: "value2", title: "Second Option" },
                    { const: "value3", title: "Third Option" }]
        },
        legacyEnum: {
            type: "string", description: "Select one option (legacy)",
            enum: ["opt1", "opt2", "opt3"],
            enumNames: ["Option One", "Option Two", "Option Three"]
        },
        untitledMulti: {
            type: "array", description: "Select multiple options",
            items: { type: "string", enum: ["option1", "option2", "option3"] }
        },
        titledMulti: {
            type: "array", description: "Select multiple options with titles",
            items: { anyOf: [{ const: "value1", title: "First Choice" },
                             { const: "value2", title: "Second Choice" },
                             { const: "value3", title: "Third Choice" }] }
        }
    },
    required: []
};


// ---- tools --------------------------------------------------------------

const server = new Server(
    { name: "mcp-conformance-test-server", version: "1.0.0" },
    { capabilities: { tools: { listChanged: true },
                      resources: { subscribe: true, listChanged: true },
                      prompts: { listChanged: true },
                      logging: {}, completions: {} } });

const subscribed = new Set();

function tool(name, description, inputSchema, run) {
    return { def: { name, description, inputSchema: inputSchema ?? NONE },
             run };
}

function fixed(result) {
    return async () => structuredClone(result);
}

// three log messages 50 ms apart at info, each sent when the level lets
// it through: a 2025 session's (logging/setLevel; all before one is set),
// a 2026-07-28 request's own _meta logLevel (none without one)
const LEVELS = ["debug", "info", "notice", "warning", "error", "critical",
                "alert", "emergency"];
let sessionLevel = null;

function logs(request) {
    const level = stateless(request)
        ? request.params._meta?.[P + "logLevel"] : sessionLevel ?? "debug";
    return LEVELS.includes(level)
        && LEVELS.indexOf("info") >= LEVELS.indexOf(level);
}

async function logging(args, extra, request) {
    for (const [i, data] of ["Tool execution started",
                             "Tool processing data",
                             "Tool execution completed"].entries()) {
        if (i > 0) {
            await sleep(50);
        }
        if (logs(request)) {
            await server.sendLoggingMessage({ level: "info", logger: LOGGER,
                                              data });
        }
    }
    return text("Tool with logging executed successfully");
}

async function progress(args, extra, request) {
    const token = request.params._meta?.progressToken;
    for (const step of [0, 1, 2]) {
        if (step > 0) {
            await sleep(50);
        }
        if (token !== undefined) {
            await extra.sendNotification({
                method: "notifications/progress",
                params: { progressToken: token, progress: step * 50,
                          total: 100,
                          message: `Completed step ${step * 50} of 100` } });
        }
    }
    return text("Tool with progress executed successfully");
}

async function sampling(args, extra) {
    if (typeof args.prompt !== "string") {
        return text("The \"prompt\" argument must be a string", true);
    }
    if (!server.getClientCapabilities()?.sampling) {
        return text("The client does not support sampling", true);
    }
    let result;
    try {
        result = await extra.sendRequest({
            method: "sampling/createMessage",
            params: { messages: [{ role: "user",
                                   content: { type: "text",
                                              text: args.prompt } }],
                      maxTokens: 100 } },
            types.CreateMessageResultSchema);
    } catch (e) {
        return text("Sampling failed", true);
    }
    if (typeof result.content?.text !== "string") {
        return text("Sampling returned no text", true);
    }
    return text(`LLM response: ${result.content.text}`);
}

function elicit(message, schema, prefix) {
    return async (args, extra) => {
        const caps = server.getClientCapabilities()?.elicitation;
        // its form mode: an empty object is form, as the spec says
        if (!caps || (caps.url && !caps.form)) {
            return text("The client does not support elicitation", true);
        }
        const msg = message ?? args.message;
        if (typeof msg !== "string") {
            return text("The \"message\" argument must be a string", true);
        }
        let result;
        try {
            result = await extra.sendRequest({
                method: "elicitation/create",
                params: { mode: "form", message: msg,
                          requestedSchema: schema } },
                types.ElicitResultSchema);
        } catch (e) {
            return text("Elicitation failed", true);
        }
        return text(`${prefix}action=${result.action}, content=`
                    + JSON.stringify(result.content ?? null));
    };
}

async function updateWatched() {
    if (subscribed.has("test://watched-resource")) {
        await server.sendResourceUpdated({ uri: "test://watched-resource" });
    }
    return text("test://watched-resource updated");
}

const SCHEMA_2020_12 = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    type: "object",
    "$defs": { address: { "$anchor": "addressDef", type: "object",
                          properties: { street: { type: "string" },
                                        city: { type: "string" } } } },
    properties: { name: { type: "string" },
                  address: { "$ref": "#/$defs/address" },
                  contactMethod: { type: "string",
                                   enum: ["phone", "email"] },
                  phone: { type: "string" }, email: { type: "string" } },
    allOf: [{ anyOf: [{ required: ["phone"] }, { required: ["email"] }] }],
    if: { properties: { contactMethod: { const: "phone" } },
          required: ["contactMethod"] },
    then: { required: ["phone"] },
    else: { required: ["email"] },
    additionalProperties: false
};

// ---- multi-round requests (SEP-2322, 2026-07-28) -------------------------

const STATE_TTL = 600;  // seconds a requestState opens for

const b64 = (x) => Buffer.from(x).toString("base64url");
const mac = (bind, body) => createHmac("sha256", STATE_KEY)
    .update(`${bind}\n${body}`).digest();

// the state bound to what it was made for (the method and the name), as
// the module's mcp_state_key seals it, with an expiry
function seal(bind, state) {
    const body = b64(JSON.stringify({ s: state,
                                      e: Math.floor(Date.now() / 1000)
                                         + STATE_TTL }));
    return `${body}.${mac(bind, body).toString("base64url")}`;
}

function open(bind, token) {
    const [body, sig, more] = token.split(".");
    const want = body !== undefined ? mac(bind, body) : null;
    const got = Buffer.from(sig ?? "", "base64url");
    if (more !== undefined || !want || got.length !== want.length
        || !timingSafeEqual(got, want)) {
        throw rpcError(ErrorCode.InvalidParams,
                       "Invalid params: requestState is not valid");
    }
    const { s, e } = JSON.parse(Buffer.from(body, "base64url").toString());
    if (e < Date.now() / 1000) {
        throw rpcError(ErrorCode.InvalidParams,
                       "Invalid params: requestState has expired");
    }
    return s;
}

// what a call of a 2026-07-28 request brings: its client's capabilities,
// its answers (inputResponses) and its opened state; a 2025 one the
// capabilities of the session's client
function context(request, name) {
    const p = request.params ?? {};
    const ctx = { stateless: stateless(request), inputs: {}, state: null,
                  bind: `${request.method}\n${name}`,
                  caps: server.getClientCapabilities() ?? {} };
    if (!ctx.stateless) {
        return ctx;
    }
    ctx.caps = p._meta?.[P + "clientCapabilities"] ?? {};
    const inputs = p.inputResponses;
    if (inputs !== undefined) {
        if (inputs === null || typeof inputs !== "object"
            || Array.isArray(inputs)) {
            throw rpcError(ErrorCode.InvalidParams, "Invalid params: "
                           + "inputResponses must be an object");
        }
        for (const v of Object.values(inputs)) {
            if (v === null || typeof v !== "object" || Array.isArray(v)) {
                throw rpcError(ErrorCode.InvalidParams, "Invalid params: "
                               + "each of inputResponses must be an object");
            }
        }
        ctx.inputs = inputs;
    }
    if (p.requestState !== undefined) {
        if (typeof p.requestState !== "string") {
            throw rpcError(ErrorCode.InvalidParams, "Invalid params: "
                           + "requestState must be a string");
        }
        ctx.state = open(ctx.bind, p.requestState);
    }
    return ctx;
}

// the capability a question needs, and whether the request declared it
function needs(a) {
    return a.method.startsWith("sampling/") ? "sampling"
        : a.method.startsWith("elicitation/") ? "elicitation" : "roots";
}

function declared(ctx, a) {
    const cap = ctx.caps[needs(a)];
    // elicitation's form mode: an empty object means form
    return needs(a) === "elicitation"
        ? !!cap && (Object.keys(cap).length === 0 || !!cap.form) : !!cap;
}

// the input-required result asking what the client can answer, with the
// state sealed; none of it answerable: -32021 naming what is missing
function inputRequired(ctx, asks, state) {
    if (!ctx.stateless) {
        throw rpcError(ErrorCode.InvalidRequest, "Invalid Request: this tool "
                       + "asks for input the way of protocol version "
                       + "2026-07-28");
    }
    const left = asks.filter((a) => declared(ctx, a));
    if (left.length === 0) {
        const required = Object.fromEntries(asks.map((a) => [needs(a), {}]));
        throw rpcError(-32021, "Missing required client capability",
                       { requiredCapabilities: required });
    }
    return { resultType: "input_required",
             inputRequests: Object.fromEntries(left.map((a) => [a.key,
                 { method: a.method, params: a.params }])),
             ...(state ? { requestState: seal(ctx.bind, state) } : {}) };
}

// an accepted elicitation's content[field] of the type asked, or null
function accepted(ctx, key, field, type) {
    const answer = ctx.inputs[key];
    if (typeof answer?.action !== "string") {
        return { value: null, declined: false };
    }
    if (answer.action !== "accept") {
        return { value: null, declined: true };
    }
    const v = answer.content?.[field];
    return { value: typeof v === type ? v : null, declined: false };
}

// what the answer to one question says, as text; null: not answered
function answerText(ctx, a) {
    const answer = ctx.inputs[a.key];
    if (answer === undefined) {
        return null;
    }
    if (a.method === "sampling/createMessage") {
        const t = answer.content?.text;
        return typeof t === "string" ? t : null;
    }
    if (a.method === "roots/list") {
        if (!Array.isArray(answer.roots)) {
            return null;
        }
        const uri = answer.roots[0]?.uri;
        return typeof uri === "string" ? uri : "no roots";
    }
    const { value, declined } = accepted(ctx, a.key, a.field, a.type);
    if (declined) {
        return "(declined)";
    }
    if (typeof value === "boolean") {
        return value ? "confirmed" : "not confirmed";
    }
    return value;
}

const round = (ctx) => (typeof ctx.state?.round === "number"
                        ? ctx.state.round : 0);

const ask = (key, method, params, field, type) =>
    ({ key, method, params, field, type });
const elicitation = (key, message, field, type) =>
    ask(key, "elicitation/create",
        { message, requestedSchema: { type: "object",
                                      properties: { [field]: { type } },
                                      required: [field] } },
        field, type);
const sample = (key, prompt, maxTokens) =>
    ask(key, "sampling/createMessage",
        { messages: [{ role: "user", content: { type: "text",
                                                text: prompt } }],
          maxTokens });

const USER_NAME = elicitation("user_name", "What is your name?", "name",
                              "string");
const ROOTS = ask("client_roots", "roots/list", {});
const CONFIRM = elicitation("confirm", "Please confirm", "ok", "boolean");
const CONTEXT = elicitation("user_context",
                            "What context should the prompt use?",
                            "context", "string");
const ALL = [USER_NAME, sample("greeting", "Generate a greeting", 50),
             ROOTS];
const STEPS = [elicitation("step1", "Step 1: What is your name?", "name",
                           "string"),
               elicitation("step2", "Step 2: What is your favorite color?",
                           "color", "string")];

// one question; its answer completes the call
function simple(a) {
    return async (args, extra, request, ctx) => {
        const t = answerText(ctx, a);
        if (t === null) {
            return inputRequired(ctx, [a], null);
        }
        return text(a === USER_NAME ? `Hello, ${t}!` : `Received: ${t}`);
    };
}

// one question and a state the retry must bring back unchanged
async function stateful(args, extra, request, ctx) {
    const ok = accepted(ctx, CONFIRM.key, "ok", "boolean");
    if (round(ctx) !== 1 || (ok.value === null && !ok.declined)) {
        return inputRequired(ctx, [CONFIRM], { round: 1 });
    }
    return text(`state-ok: ${ok.value === true ? "confirmed"
                                               : "not confirmed"}`);
}

// several at once; a retry that brings only some is asked the rest
function multiple(asks) {
    return async (args, extra, request, ctx) => {
        const missing = asks.filter((a) => declared(ctx, a)
            && (ctx.inputs[a.key] === undefined || round(ctx) !== 1));
        if (missing.length === 0 && round(ctx) === 1) {
            return text("All inputs received");
        }
        return inputRequired(ctx, missing.length ? missing : asks,
                             { round: 1 });
    };
}

// two rounds: the name of the first lives in the state of the second
async function rounds(args, extra, request, ctx) {
    let name = null;
    if (round(ctx) === 2) {
        const color = accepted(ctx, "step2", "color", "string").value;
        name = ctx.state.name;
        if (color !== null && typeof name === "string") {
            return text(`${name} likes ${color}`);
        }
    } else if (round(ctx) === 1) {
        name = accepted(ctx, "step1", "name", "string").value;
    }
    return typeof name !== "string"
        ? inputRequired(ctx, [STEPS[0]], { round: 1 })
        : inputRequired(ctx, [STEPS[1]], { round: 2, name });
}

function trigger(list) {
    return async () => {
        await (list === "tools" ? server.sendToolListChanged()
                                : server.sendPromptListChanged());
        return text(`Listeners told: ${list}`);
    };
}

const TOOLS = [
    tool("test_simple_text", "Tests simple text content response", null,
         fixed(text("This is a simple text response for testing."))),
    tool("test_image_content", "Tests image content response", null,
         fixed({ content: [IMAGE] })),
    tool("test_audio_content", "Tests audio content response", null,
         fixed({ content: [{ type: "audio", data: WAV,
                             mimeType: "audio/wav" }] })),
    tool("test_embedded_resource", "Tests embedded resource content response",
         null,
         fixed({ content: [{ type: "resource", resource: {
             uri: "test://embedded-resource", mimeType: "text/plain",
             text: "This is an embedded resource content." } }] })),
    tool("test_multiple_content_types",
         "Tests response with multiple content types (text, image, resource)",
         null,
         fixed({ content: [
             { type: "text", text: "Multiple content types test:" },
             IMAGE,
             { type: "resource", resource: {
                 uri: "test://mixed-content-resource",
                 mimeType: "application/json",
                 text: "{\"test\":\"data\",\"value\":123}" } }] })),
    // a failed tool is a result with isError, not a JSON-RPC error
    tool("test_error_handling", "Tests error response handling", null,
         fixed(text("This tool intentionally returns an error for testing",
                    true))),
    tool("json_schema_2020_12_tool", "Tool with JSON Schema 2020-12 features",
         SCHEMA_2020_12,
         async (args) => text("JSON Schema 2020-12 tool called with: "
                              + JSON.stringify(args ?? {}))),
    tool("test_tool_with_logging",
         "Tests tool that emits log messages during execution", null,
         logging),
    tool("test_tool_with_progress",
         "Tests tool that reports progress notifications", null, progress),
    tool("test_sampling",
         "Tests server-initiated sampling (LLM completion request)",
         { type: "object",
           properties: { prompt: { type: "string",
                                   description: "The prompt to send to the LLM" } },
           required: ["prompt"] },
         sampling),
    tool("test_elicitation",
         "Tests server-initiated elicitation (user input request)",
         { type: "object",
           properties: { message: { type: "string",
                                    description: "The message to show the user" } },
           required: ["message"] },
         elicit(null, USER_SCHEMA, "User response: ")),
    tool("test_elicitation_sep1034_defaults",
         "Tests elicitation with default values per SEP-1034", null,
         elicit("Please review and update the form fields with defaults",
                DEFAULTS_SCHEMA, "Elicitation completed: ")),
    tool("test_elicitation_sep1330_enums",
         "Tests elicitation with enum schema improvements per SEP-1330", null,
         elicit("Please select options from the enum fields", ENUMS_SCHEMA,
                "Elicitation completed: ")),
    // SEP-1699 is about HTTP streams; over stdio there is no stream to
    // close, so the result comes after a second: longer than the
    // location's mcp_stdio_poll (500ms in scripts/conformance), which
    // ends the POST's stream unanswered, and the result comes on the
    // client's resume (GET with Last-Event-ID) from the session's log
    tool("test_reconnection",
         "Tests SSE polling: closes the stream after the priming event "
         + "and delivers the result when the client reconnects", null,
         async () => {
             await sleep(1000);
             return text("Reconnection test completed: the result arrived "
                         + "on the resumed stream");
         }),
    tool("update_watched_resource",
         "Changes test://watched-resource: subscribers get "
         + "notifications/resources/updated", null, updateWatched),
    // test_tool_with_logging, as the 2026-07-28 suite names it
    tool("test_logging_tool",
         "Emits log messages at the request's log level, none without one",
         null, logging),
    tool("test_input_required_result_elicitation",
         "Asks for the user's name with an input-required result", null,
         simple(USER_NAME)),
    tool("test_input_required_result_sampling",
         "Asks the client's model a question with an input-required result",
         null,
         simple(sample("capital_question", "What is the capital of France?",
                       100))),
    tool("test_input_required_result_list_roots",
         "Asks for the client's roots with an input-required result", null,
         simple(ROOTS)),
    tool("test_input_required_result_request_state",
         "Asks for a confirmation and checks its requestState on the retry",
         null, stateful),
    tool("test_input_required_result_tampered_state",
         "Asks for a confirmation; a retry with a changed requestState is "
         + "refused", null, stateful),
    tool("test_input_required_result_multiple_inputs",
         "Asks for an elicitation, a sampling and the roots at once", null,
         multiple(ALL)),
    tool("test_input_required_result_multi_round",
         "Asks for a name, then a color, carrying the name in its "
         + "requestState", null, rounds),
    tool("test_input_required_result_capabilities",
         "Asks only what the request's client capabilities allow", null,
         multiple(ALL.slice(0, 2))),
    tool("test_streaming_elicitation",
         "Asks for a confirmation the stateless way, never with a request "
         + "on the stream", null,
         simple(elicitation("confirmation", "Do you want to continue?", "ok",
                            "boolean"))),
    tool("test_missing_capability",
         "Needs sampling: a request that does not declare it gets -32021",
         null, simple(sample("completion", "Say hello", 50))),
    tool("test_trigger_tool_change",
         "Tells subscriptions/listen streams that the tool list changed",
         null, trigger("tools")),
    tool("test_trigger_prompt_change",
         "Tells subscriptions/listen streams that the prompt list changed",
         null, trigger("prompts")),
    // SEP-2243: a call must mirror three arguments into headers
    tool("test_custom_header_tool",
         "Echoes its arguments; region, priority and verbose travel in "
         + "Mcp-Param-Region, Mcp-Param-Priority and Mcp-Param-Verbose "
         + "headers too",
         { type: "object",
           properties: {
               region: { type: "string", "x-mcp-header": "Region" },
               priority: { type: "integer", "x-mcp-header": "Priority" },
               verbose: { type: "boolean", "x-mcp-header": "Verbose" },
               query: { type: "string" } },
           required: ["region", "priority", "verbose"] },
         async (args) => text("Called with: " + JSON.stringify(args)))
];

const TOOL_BY_NAME = new Map(TOOLS.map((t) => [t.def.name, t]));

server.setRequestHandler(types.ListToolsRequestSchema, cacheable(async () => ({
    tools: TOOLS.map((t) => t.def)
})));

// Protocol's own registration, not Server's: Server validates a result
// against CallToolResultSchema and adds "content": [] to an
// input-required result, which has none
Protocol.prototype.setRequestHandler.call(server, CallToolRequest,
                                          async (request, extra) => {
    const t = TOOL_BY_NAME.get(request.params.name);
    if (!t) {
        throw rpcError(ErrorCode.InvalidParams,
                       `Unknown tool: ${request.params.name}`);
    }
    const ctx = context(request, request.params.name);
    return t.run(request.params.arguments ?? {}, extra, request, ctx);
});


// ---- resources ----------------------------------------------------------

const RESOURCES = [
    { def: { uri: "test://static-text", name: "Static Text Resource",
             description: "A static text resource for testing",
             mimeType: "text/plain" },
      content: { text: "This is the content of the static text resource." } },
    { def: { uri: "test://static-binary", name: "Static Binary Resource",
             description: "A static binary resource (image) for testing",
             mimeType: "image/png" },
      content: { blob: PNG } },
    { def: { uri: "test://watched-resource", name: "Watched Resource",
             description: "A resource that can be subscribed to",
             mimeType: "text/plain" },
      content: { text: "Watched resource content" } }
];

const TEMPLATE = {
    uriTemplate: "test://template/{id}/data",
    name: "Resource Template",
    description: "A resource template with parameter substitution",
    mimeType: "application/json"
};

const TEMPLATE_RE = /^test:\/\/template\/([^/]+)\/data$/;

server.setRequestHandler(types.ListResourcesRequestSchema, cacheable(async () => ({
    resources: RESOURCES.map((r) => r.def)
})));

server.setRequestHandler(types.ListResourceTemplatesRequestSchema,
                         cacheable(async () => ({
                             resourceTemplates: [TEMPLATE] })));

function notFound(request) {
    // 2025 revisions: -32002; SEP-2164 (2026-07-28): -32602 with the uri
    if (stateless(request)) {
        throw rpcError(ErrorCode.InvalidParams, "Resource not found",
                       { uri: request.params.uri });
    }
    throw rpcError(-32002, "Resource not found",
                   { uri: request.params.uri });
}

server.setRequestHandler(types.ReadResourceRequestSchema, cacheable(async (request) => {
    const uri = request.params.uri;
    const r = RESOURCES.find((x) => x.def.uri === uri);
    if (r) {
        return { contents: [{ uri, mimeType: r.def.mimeType,
                              ...r.content }] };
    }
    const m = TEMPLATE_RE.exec(uri);
    if (m) {
        let id;
        try {
            id = decodeURIComponent(m[1]);
        } catch (e) {
            throw rpcError(ErrorCode.InvalidParams, "Invalid resource id");
        }
        return { contents: [{ uri, mimeType: "application/json",
                              text: JSON.stringify({
                                  id, templateTest: true,
                                  data: `Data for ID: ${id}` }) }] };
    }
    notFound(request);
}));

// Methods 2026-07-28 removed: -32601 for a request of that revision,
// before its params are looked at (it sends only _meta)
function removed(method, run) {
    server.setRequestHandler(loose(method, {}), async (request, extra) => {
        if (stateless(request)) {
            throw rpcError(ErrorCode.MethodNotFound, "Method not found");
        }
        return run(request.params, extra);
    });
}

function uriOf(params) {
    if (typeof params.uri !== "string") {
        throw rpcError(ErrorCode.InvalidParams, "Invalid params: uri must be "
                       + "a string");
    }
    return params.uri;
}

removed("resources/subscribe", async (params) => {
    subscribed.add(uriOf(params));
    return {};
});

removed("resources/unsubscribe", async (params) => {
    subscribed.delete(uriOf(params));
    return {};
});

// in place of the SDK's own, which keeps a level per HTTP session
removed("logging/setLevel", async (params) => {
    if (!LEVELS.includes(params.level)) {
        throw rpcError(ErrorCode.InvalidParams, "Invalid params: level must "
                       + "be one of " + LEVELS.join(", "));
    }
    sessionLevel = params.level;
    return {};
});


// ---- prompts --------------------------------------------------------------

const user = (content) => ({ role: "user", content });

const PROMPTS = [
    { def: { name: "test_simple_prompt",
             description: "A simple prompt without arguments" },
      get: () => [user({ type: "text",
                         text: "This is a simple prompt for testing." })] },
    { def: { name: "test_prompt_with_arguments",
             description: "A prompt with required arguments",
             arguments: [{ name: "arg1", description: "First test argument",
                           required: true },
                         { name: "arg2", description: "Second test argument",
                           required: true }] },
      get: (a) => {
          if (typeof a.arg1 !== "string" || typeof a.arg2 !== "string") {
              throw rpcError(ErrorCode.InvalidParams,
                             "Arguments arg1 and arg2 must be strings");
          }
          return [user({ type: "text", text: "Prompt with arguments: "
                         + `arg1='${a.arg1}', arg2='${a.arg2}'` })];
      } },
    { def: { name: "test_prompt_with_embedded_resource",
             description: "A prompt that includes an embedded resource",
             arguments: [{ name: "resourceUri",
                           description: "URI of the resource to embed",
                           required: true }] },
      get: (a) => {
          if (typeof a.resourceUri !== "string") {
              throw rpcError(ErrorCode.InvalidParams,
                             "Argument resourceUri must be a string");
          }
          return [user({ type: "resource", resource: {
                             uri: a.resourceUri, mimeType: "text/plain",
                             text: "Embedded resource content for testing." } }),
                  user({ type: "text",
                         text: "Please process the embedded resource above." })];
      } },
    { def: { name: "test_prompt_with_image",
             description: "A prompt that includes image content" },
      get: () => [user(IMAGE),
                  user({ type: "text",
                         text: "Please analyze the image above." })] },
    { def: { name: "test_input_required_result_prompt",
             description: "Asks for the context it is built with, with an "
                          + "input-required result" },
      get: (a, ctx) => {
          const t = answerText(ctx, CONTEXT);
          return t === null ? inputRequired(ctx, [CONTEXT], null)
                            : [user({ type: "text", text: t })];
      } }
];

server.setRequestHandler(types.ListPromptsRequestSchema, cacheable(async () => ({
    prompts: PROMPTS.map((p) => p.def)
})));

server.setRequestHandler(GetPromptRequest, async (request) => {
    const p = PROMPTS.find((x) => x.def.name === request.params.name);
    if (!p) {
        throw rpcError(ErrorCode.InvalidParams,
                       `Unknown prompt: ${request.params.name}`);
    }
    const got = p.get(request.params.arguments ?? {},
                      context(request, request.params.name));
    return Array.isArray(got) ? { messages: got } : got;
});


// ---- completion/complete: the values that start with what was typed ------

const COMPLETIONS = [
    ["ref/prompt", "test_simple_prompt", null, null],
    ["ref/prompt", "test_prompt_with_arguments", "arg1",
     ["hello", "paris", "park", "party", "test", "testValue1"]],
    ["ref/prompt", "test_prompt_with_arguments", "arg2",
     ["test", "testValue2", "world"]],
    ["ref/prompt", "test_prompt_with_embedded_resource", "resourceUri",
     ["test://static-binary", "test://static-text",
      "test://watched-resource"]],
    ["ref/prompt", "test_prompt_with_image", null, null],
    ["ref/resource", "test://template/{id}/data", "id",
     ["1", "2", "3", "123", "abc"]]
];

server.setRequestHandler(types.CompleteRequestSchema, async (request) => {
    const { ref, argument } = request.params;
    const name = ref.type === "ref/prompt" ? ref.name : ref.uri;
    const value = argument.value ?? "";
    const known = COMPLETIONS.filter((c) => c[0] === ref.type
                                            && c[1] === name);
    if (known.length === 0) {
        throw rpcError(ErrorCode.InvalidParams,
                       "Unknown completion reference");
    }
    // a known reference with an argument we do not complete: no values
    const found = known.find((c) => c[2] === argument.name);
    const values = (found?.[3] ?? []).filter((v) => v.startsWith(value));
    return { completion: { values, total: values.length, hasMore: false } };
});


// ---- the transport ----------------------------------------------------------

server.onerror = (e) => process.stderr.write(`server: ${e?.message ?? e}\n`);

const transport = new StdioServerTransport();
transport.onclose = () => process.exit(0);
await server.connect(transport);
// stdin's end (the parent closed it) ends the program
process.stdin.on("end", () => process.exit(0));
