-- One GET, the same on every connection: BENCH_PATH (a health probe,
-- whose 200 is its answer; anything else counts as an error).

local common = dofile(os.getenv("BENCH_LUA") .. "/common.lua")

wrk.method = "GET"
wrk.path = os.getenv("BENCH_PATH")

function response(status, headers, body)
    if status ~= 200 then
        errors = errors + 1
    end
end
