-- Session churn: initialize, notifications/initialized, one tools/call,
-- DELETE, again and again.  wrk keeps one Lua state per thread, not per
-- connection, so run it with as many threads as connections: then each
-- state machine drives exactly one connection.  Sessions = requests / 4.

local common = dofile(os.getenv("BENCH_LUA") .. "/common.lua")

local path = os.getenv("BENCH_PATH")
local step = 0
local sid = nil

local init = '{"jsonrpc":"2.0","id":1,"method":"initialize","params":'
    .. '{"protocolVersion":"2025-11-25","capabilities":{},'
    .. '"clientInfo":{"name":"churn","version":"1"}}}'
local initialized = '{"jsonrpc":"2.0","method":"notifications/initialized"}'
local call = '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":'
    .. '{"name":"test_simple_text","arguments":{}}}'

local base = {
    ["Content-Type"] = "application/json",
    ["Accept"] = "application/json, text/event-stream",
}

local function headers(with_sid)
    local h = {}
    for k, v in pairs(base) do h[k] = v end
    if with_sid then
        h["Mcp-Session-Id"] = sid
        h["MCP-Protocol-Version"] = "2025-11-25"
    end
    return h
end

function request()
    if step == 0 then
        return wrk.format("POST", path, headers(false), init)
    elseif step == 1 then
        return wrk.format("POST", path, headers(true), initialized)
    elseif step == 2 then
        return wrk.format("POST", path, headers(true), call)
    end
    return wrk.format("DELETE", path, headers(true))
end

function response(status, hdrs, body)
    if step == 0 then
        sid = hdrs["Mcp-Session-Id"] or hdrs["mcp-session-id"]
        if sid == nil then
            errors = errors + 1
            return
        end
    end

    if not common.check(status, body) then
        step = 0
        return
    end

    step = (step + 1) % 4
end
