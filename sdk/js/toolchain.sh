#!/usr/bin/env bash
# The JavaScript plugin toolchain: the componentize-js CLI (StarlingMonkey, a SpiderMonkey build for
# WebAssembly) with every transitive npm package pinned by toolchain/package-lock.json.
#
#   toolchain.sh check     one line: `ok: componentize-js VERSION` (exit 0) or `missing: WHY` (exit 1)
#   toolchain.sh install   install it (idempotent: a no-op when the pinned lock is already installed)
#
# It goes to ${LOADHOST_TOOLCHAINS:-${XDG_CACHE_HOME:-$HOME/.cache}/loadhost/toolchains}/js, an npm
# prefix of its own; build.sh finds it there and then needs no network. Node.js (>= 20, for
# oxc-parser) comes from the machine; `install` tries Debian's package when there is none.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
manifest="$here/toolchain"
prefix="${LOADHOST_TOOLCHAINS:-${XDG_CACHE_HOME:-$HOME/.cache}/loadhost/toolchains}/js"
tool="componentize-js"
min_node_major=20

# The pinned version, read from the manifest so that it is written in one place only.
pinned_version() {
    sed -n 's/.*"@bytecodealliance\/componentize-js": *"\([^"]*\)".*/\1/p' "$manifest/package.json" | head -n 1
}

# A fingerprint of the pinned lock: the installed copy is current when its stamp matches.
lock_stamp() {
    sha256sum "$manifest/package-lock.json" | cut -d ' ' -f 1
}

# Prints the problem with Node.js, or nothing when it is usable.
node_problem() {
    if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
        echo "Node.js >= $min_node_major with npm (node or npm is not on PATH)"
        return
    fi
    local major
    major="$(node -p 'process.versions.node.split(".")[0]')"
    if [ "$major" -lt "$min_node_major" ]; then
        echo "Node.js >= $min_node_major (found $(node --version); oxc-parser, used by $tool, needs 20)"
    fi
}

# Prints `ok: …` or `missing: …`; returns 0 when the toolchain is usable.
check() {
    local problem version
    problem="$(node_problem)"
    if [ -n "$problem" ]; then
        echo "missing: $problem"
        return 1
    fi
    if [ ! -x "$prefix/node_modules/.bin/$tool" ]; then
        echo "missing: $tool $(pinned_version) in $prefix (run sdk/js/toolchain.sh install)"
        return 1
    fi
    if [ "$(cat "$prefix/.loadhost-lock-sha256" 2>/dev/null)" != "$(lock_stamp)" ]; then
        echo "missing: $tool in $prefix is not the pinned set of sdk/js/toolchain/package-lock.json (run sdk/js/toolchain.sh install)"
        return 1
    fi
    version="$(node -p 'require(process.argv[1]).version' "$prefix/node_modules/@bytecodealliance/componentize-js/package.json")"
    echo "ok: $tool $version"
}

# Installs Node.js from Debian when it is absent (Debian 13 ships 20; older releases are too old).
install_node() {
    if command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1; then
        return
    fi
    echo "installing Node.js and npm from Debian's packages" >&2
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >/dev/null
}

install() {
    if check >/dev/null 2>&1; then
        check
        return
    fi
    install_node
    local problem
    problem="$(node_problem)"
    if [ -n "$problem" ]; then
        echo "missing: $problem" >&2
        return 1
    fi
    mkdir -p "$prefix"
    cp "$manifest/package.json" "$manifest/package-lock.json" "$prefix/"
    rm -f "$prefix/.loadhost-lock-sha256"
    # `npm ci` installs exactly the lock (and fails rather than resolve anything anew).
    (cd "$prefix" && npm ci --no-audit --no-fund --loglevel=error >&2)
    lock_stamp >"$prefix/.loadhost-lock-sha256"
    check
}

case "${1:-}" in
    check) check ;;
    install) install ;;
    *)
        echo "usage: $0 check|install" >&2
        exit 2
        ;;
esac
