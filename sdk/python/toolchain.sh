#!/usr/bin/env bash
# The Python guest toolchain: componentize-py (which bundles CPython compiled to wasm, so builds
# need nothing else and no network) in a venv under the loadhost toolchains directory.
#
#   toolchain.sh check     prints "ok: componentize-py VERSION" (exit 0) or "missing: ..." (exit 1)
#   toolchain.sh install   installs it (idempotent; seconds when already there)
#
# LOADHOST_TOOLCHAINS overrides the directory (default $XDG_CACHE_HOME or ~/.cache, /loadhost/toolchains).
set -euo pipefail

# Pinned: componentize-py 0.25.1 is the version measured to build a component the host's wasmtime runs.
COMPONENTIZE_PY_VERSION=0.25.1
venv="${LOADHOST_TOOLCHAINS:-${XDG_CACHE_HOME:-$HOME/.cache}/loadhost/toolchains}/python"

# The installed componentize-py version, or nothing (reads the package metadata: no wasm work).
installed_version() {
    [ -x "$venv/bin/python" ] || return 0
    "$venv/bin/python" -c 'import importlib.metadata as m; print(m.version("componentize-py"))' 2>/dev/null || true
}

check() {
    local version
    version="$(installed_version)"
    if [ -z "$version" ]; then
        echo "missing: componentize-py is not installed in $venv (run: $0 install)"
        return 1
    fi
    if [ "$version" != "$COMPONENTIZE_PY_VERSION" ]; then
        echo "missing: componentize-py $COMPONENTIZE_PY_VERSION is pinned but $venv has $version (run: $0 install)"
        return 1
    fi
    # Loading the native module proves the venv's interpreter and the wheel still match.
    if ! "$venv/bin/python" -c 'import componentize_py' 2>/dev/null; then
        echo "missing: componentize-py in $venv does not load (run: $0 install)"
        return 1
    fi
    echo "ok: componentize-py $version"
}

install() {
    if check >/dev/null; then
        check
        return 0
    fi
    local python
    python="$(command -v python3 || true)"
    if [ -z "$python" ]; then
        echo "missing: python3, needed to create the venv (apt-get install python3 python3-venv)" >&2
        return 1
    fi
    # A venv whose interpreter is gone (python3 upgraded or removed) cannot be repaired: start over.
    # Only a directory that is a venv is removed.
    if [ -f "$venv/pyvenv.cfg" ] && ! "$venv/bin/python" -c '' 2>/dev/null; then
        rm -rf -- "$venv"
    fi
    if [ ! -x "$venv/bin/python" ]; then
        mkdir -p -- "$(dirname -- "$venv")"
        if ! "$python" -m venv -- "$venv" 2>/dev/null; then
            # Debian's python3 leaves venv and ensurepip to the python3-venv package.
            if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
                rm -rf -- "$venv"
                apt-get install -y -q python3-venv >/dev/null
                "$python" -m venv -- "$venv"
            else
                echo "missing: '$python -m venv' failed (apt-get install python3-venv)" >&2
                return 1
            fi
        fi
    fi
    "$venv/bin/python" -m pip install --quiet --no-input --disable-pip-version-check \
        "componentize-py==$COMPONENTIZE_PY_VERSION"
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
