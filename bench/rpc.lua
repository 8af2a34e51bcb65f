-- One JSON-RPC POST, the same on every connection:
--   BENCH_PATH, BENCH_BODY, BENCH_SID (a session made beforehand).
-- All connections share one session: sessions are per client in MCP,
-- and the module's cost per request does not depend on how many
-- sessions there are (an rbtree lookup in the shm zone).
--
-- BENCH_SIDS (space-separated) gives each wrk thread a session of its
-- own instead, and "@ID@" in BENCH_BODY becomes an id unique in the
-- session: for tools that reply with a stream, since a session holds a
-- bounded number of streams and a request id names a cancellable call.
--
-- BENCH_PROOFS: a file of DPoP proofs, one a line (bench/dpop-proofs.mjs),
-- each sent once in a DPoP header: thread k of BENCH_STRIDE takes the
-- lines k, k + BENCH_STRIDE, ...  A thread that runs out stops and counts
-- an error (a proof sent twice would be refused as a replay): the run
-- then needs more proofs (BENCH_DPOP_RATE).  BENCH_BUILD=1 builds every
-- request in Lua as the proofs' case does, without them: the bearer
-- case beside it, so that wrk spends the same on both.

local common = dofile(os.getenv("BENCH_LUA") .. "/common.lua")

wrk.method = "POST"
wrk.path = os.getenv("BENCH_PATH")
wrk.body = os.getenv("BENCH_BODY")
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Accept"] = "application/json, text/event-stream"
wrk.headers["MCP-Protocol-Version"] = "2025-11-25"

-- BENCH_HEADERS: more headers, "Name: value" separated by ";" (a 2026-07-28
-- request's MCP-Protocol-Version, Mcp-Method and Mcp-Name)
for name, value in string.gmatch(os.getenv("BENCH_HEADERS") or "",
                                 "%s*([^:;]+):%s*([^;]*)") do
    wrk.headers[name] = value
end

local sid = os.getenv("BENCH_SID")
if sid ~= nil and sid ~= "" then
    wrk.headers["Mcp-Session-Id"] = sid
end

local sids = {}
for s in string.gmatch(os.getenv("BENCH_SIDS") or "", "%S+") do
    table.insert(sids, s)
end

local file = os.getenv("BENCH_PROOFS") or ""
local stride = tonumber(os.getenv("BENCH_STRIDE") or "1")
local proofs = {}
local next_proof = 1

local main_setup = setup
local nthreads = 0

function setup(thread)
    main_setup(thread)
    thread:set("tid", nthreads)
    nthreads = nthreads + 1
    if #sids > 0 then
        thread:set("thread_sid", sids[(nthreads - 1) % #sids + 1])
    end
end

function init(args)
    if thread_sid ~= nil then
        wrk.headers["Mcp-Session-Id"] = thread_sid
    end
    if file ~= "" then
        local n = 0
        for line in io.lines(file) do
            if n % stride == tid then
                proofs[#proofs + 1] = line
            end
            n = n + 1
        end
    end
end

local with_id = string.find(wrk.body, "@ID@", 1, true)

if with_id or file ~= "" or os.getenv("BENCH_BUILD") == "1" then
    local n = 0
    function request()
        local body = nil
        if with_id then
            n = n + 1
            body = string.gsub(wrk.body, "@ID@", tostring(n))
        end
        if file ~= "" then
            local p = proofs[next_proof]
            if p == nil then
                errors = errors + 1
                wrk.thread:stop()
                p = ""
            end
            next_proof = next_proof + 1
            wrk.headers["DPoP"] = p
        end
        return wrk.format(nil, nil, nil, body)
    end
end

function response(status, headers, body)
    common.check(status, body)
end
