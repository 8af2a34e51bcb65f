-- Shared by scripts/bench's wrk scripts: counts JSON-RPC level errors
-- (a 2xx reply whose body is not a result) in each thread, and prints
-- one machine-readable line at the end that scripts/bench parses.

local common = {}

threads = {}
errors = 0          -- per thread: replies that were not results

function setup(thread)
    table.insert(threads, thread)
end

-- a non-empty 2xx body must carry a result; wrk counts status >= 400
function common.check(status, body)
    if status < 300 and body ~= nil and body ~= ""
       and not string.find(body, '"result"', 1, true)
    then
        errors = errors + 1
        return false
    end
    return status < 300
end

function done(summary, latency, requests)
    local rpc = 0
    for _, t in ipairs(threads) do
        rpc = rpc + (t:get("errors") or 0)
    end
    local e = summary.errors
    local seconds = summary.duration / 1e6
    io.write(string.format(
        "BENCH requests=%d seconds=%.3f rps=%.1f p50_ms=%.3f p95_ms=%.3f "
        .. "p99_ms=%.3f errors=%d\n",
        summary.requests, seconds, summary.requests / seconds,
        latency:percentile(50) / 1000, latency:percentile(95) / 1000,
        latency:percentile(99) / 1000,
        e.status + e.connect + e.read + e.write + e.timeout + rpc))
end

return common
