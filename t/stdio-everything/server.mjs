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
// usage: node server.mjs [--npm DIR]
//   DIR holds node_modules with @modelcontextprotocol/sdk (default:
//   $MCP_NPM_DIR, else build/npm of this repository); nothing else of
//   the environment is read, since mcp_stdio passes only what it names.
//   stdout carries JSON-RPC alone; diagnostics go to stderr.

import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const flag = process.argv.indexOf("--npm");
const npm = flag > 0 ? process.argv[flag + 1]
    : process.env.MCP_NPM_DIR || path.join(here, "..", "..", "build", "npm");
const require = createRequire(path.join(path.resolve(npm), "package.json"));

const { Server } = require("@modelcontextprotocol/sdk/server/index.js");
const { StdioServerTransport } =
    require("@modelcontextprotocol/sdk/server/stdio.js");
const types = require("@modelcontextprotocol/sdk/types.js");
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

// three log messages 50 ms apart at info, each sent only when the level
// the client set lets it through (the SDK filters on logging/setLevel)
async function logging() {
    for (const [i, data] of ["Tool execution started",
                             "Tool processing data",
                             "Tool execution completed"].entries()) {
        if (i > 0) {
            await sleep(50);
        }
        await server.sendLoggingMessage({ level: "info", logger: LOGGER,
                                          data });
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
    // close, so the result simply comes after the same delay
    tool("test_reconnection",
         "Tests SSE polling: closes the stream after the priming event "
         + "and delivers the result when the client reconnects", null,
         async () => {
             await sleep(100);
             return text("Reconnection test completed: the result arrived "
                         + "on the resumed stream");
         }),
    tool("update_watched_resource",
         "Changes test://watched-resource: subscribers get "
         + "notifications/resources/updated", null, updateWatched),
    // test_tool_with_logging, as the 2026-07-28 suite names it
    tool("test_logging_tool",
         "Emits log messages at the request's log level, none without one",
         null, logging)
];

const TOOL_BY_NAME = new Map(TOOLS.map((t) => [t.def.name, t]));

server.setRequestHandler(types.ListToolsRequestSchema, async () => ({
    tools: TOOLS.map((t) => t.def)
}));

server.setRequestHandler(types.CallToolRequestSchema,
                         async (request, extra) => {
    const t = TOOL_BY_NAME.get(request.params.name);
    if (!t) {
        throw rpcError(ErrorCode.InvalidParams,
                           `Unknown tool: ${request.params.name}`);
    }
    return t.run(request.params.arguments ?? {}, extra, request);
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

server.setRequestHandler(types.ListResourcesRequestSchema, async () => ({
    resources: RESOURCES.map((r) => r.def)
}));

server.setRequestHandler(types.ListResourceTemplatesRequestSchema,
                         async () => ({ resourceTemplates: [TEMPLATE] }));

function notFound(request) {
    // 2025 revisions: -32002; SEP-2164 (2026-07-28): -32602 with the uri
    const v = request.params._meta?.["io.modelcontextprotocol/protocolVersion"];
    if (v !== undefined && v > "2025-11-25") {
        throw rpcError(ErrorCode.InvalidParams, "Resource not found",
                           { uri: request.params.uri });
    }
    throw rpcError(-32002, "Resource not found",
                       { uri: request.params.uri });
}

server.setRequestHandler(types.ReadResourceRequestSchema, async (request) => {
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
});

server.setRequestHandler(types.SubscribeRequestSchema, async (request) => {
    subscribed.add(request.params.uri);
    return {};
});

server.setRequestHandler(types.UnsubscribeRequestSchema, async (request) => {
    subscribed.delete(request.params.uri);
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
                         text: "Please analyze the image above." })] }
];

server.setRequestHandler(types.ListPromptsRequestSchema, async () => ({
    prompts: PROMPTS.map((p) => p.def)
}));

server.setRequestHandler(types.GetPromptRequestSchema, async (request) => {
    const p = PROMPTS.find((x) => x.def.name === request.params.name);
    if (!p) {
        throw rpcError(ErrorCode.InvalidParams,
                           `Unknown prompt: ${request.params.name}`);
    }
    return { messages: p.get(request.params.arguments ?? {}) };
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
