-- Creates sessions: every request is an initialize.  Each thread stops
-- after BENCH_LIMIT sessions (sessions in flight then may add a few).

local common = dofile(os.getenv("BENCH_LUA") .. "/common.lua")

local limit = tonumber(os.getenv("BENCH_LIMIT"))
created = 0

wrk.method = "POST"
wrk.path = os.getenv("BENCH_PATH")
wrk.body = '{"jsonrpc":"2.0","id":1,"method":"initialize","params":'
    .. '{"protocolVersion":"2025-11-25","capabilities":{},'
    .. '"clientInfo":{"name":"idle","version":"1"}}}'
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Accept"] = "application/json, text/event-stream"

function response(status, headers, body)
    if common.check(status, body) then
        created = created + 1
        if created >= limit then
            wrk.thread:stop()
        end
    end
end
