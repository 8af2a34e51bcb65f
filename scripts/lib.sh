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
