#!/usr/bin/env bash
# The C guest toolchain: Debian's clang and lld 14, wasi-libc (a wasip1 sysroot) and the wasm32
# compiler-rt builtins, all from Debian's packages.
#
#   toolchain.sh check     prints `ok: clang-14 <version>` and exits 0 when it can build a plugin,
#                          else `missing: <what and why>` and exits 1
#   toolchain.sh install   installs the pinned packages with apt-get (idempotent; needs root)
#
# The packages install system-wide (apt has no per-prefix mode); the toolchain folder
# ${LOADHOST_TOOLCHAINS:-${XDG_CACHE_HOME:-$HOME/.cache}/loadhost/toolchains}/c only records what
# was installed (versions.txt), so every language keeps its footprint under one root.
set -euo pipefail

# Debian 12's versions. clang 14 is the newest Debian clang with a wasm32 compiler-rt package.
PINNED=(
    "clang-14=1:14.0.6-12"
    "lld-14=1:14.0.6-12"
    "wasi-libc=0.0~git20220510.9886d3d-2"
    "libclang-rt-14-dev-wasm32=1:14.0.6-12"
)
CC="${LOADHOST_CLANG:-clang-14}"
# Debian's clang finds Debian's wasi-libc by itself (/usr/include/wasm32-wasi, /usr/lib/wasm32-wasi);
# WASI_SYSROOT points it at another sysroot instead.
SYSROOT_FLAGS=()
[ -n "${WASI_SYSROOT:-}" ] && SYSROOT_FLAGS=(--sysroot="$WASI_SYSROOT")
DIR="${LOADHOST_TOOLCHAINS:-${XDG_CACHE_HOME:-$HOME/.cache}/loadhost/toolchains}/c"

# Prints the `ok:`/`missing:` line; returns 0 when a tiny reactor compiles and links for wasm32-wasi.
check() {
    if ! command -v "$CC" >/dev/null 2>&1; then
        echo "missing: $CC is not on PATH (run: $0 install)"
        return 1
    fi
    local tmp version
    tmp=$(mktemp -d)
    # shellcheck disable=SC2064 # expand $tmp now: it is local
    trap "rm -rf '$tmp'" RETURN
    # Uses libc (the sysroot), a 64-bit division (compiler-rt's builtins) and the linker (wasm-ld).
    printf '#include <stdio.h>\nint probe(unsigned long long n) { char b[24]; return snprintf(b, sizeof b, "%%llu", n / 7); }\n' >"$tmp/probe.c"
    if ! "$CC" --target=wasm32-wasi "${SYSROOT_FLAGS[@]}" -mexec-model=reactor -O2 \
        -Wl,--export=probe "$tmp/probe.c" -o "$tmp/probe.wasm" >"$tmp/log" 2>&1; then
        # The usual causes: no wasi-libc, no wasm-ld (lld-14) or no libclang_rt.builtins-wasm32.a.
        echo "missing: $CC cannot build for wasm32-wasi: $(grep -m1 -E 'error|not found' "$tmp/log" || head -n1 "$tmp/log") (run: $0 install)"
        return 1
    fi
    version=$("$CC" --version | sed -n 's/.*clang version \([0-9.]*\).*/\1/p;q')
    echo "ok: $CC $version"
}

install() {
    local status
    if status=$(check); then
        echo "$status"
        return 0
    fi
    command -v apt-get >/dev/null 2>&1 || { echo "missing: apt-get (this toolchain comes from Debian's packages)"; return 1; }
    export DEBIAN_FRONTEND=noninteractive
    # Try the local package lists first; refresh them only when a pinned version is not in them.
    if ! apt-get install -y -qq --no-install-recommends "${PINNED[@]}" >/dev/null 2>&1; then
        apt-get update -qq
        if ! apt-get install -y -qq --no-install-recommends "${PINNED[@]}" >/dev/null; then
            # A Debian point release can replace a pinned version; keep the same major versions.
            echo "note: pinned versions unavailable; installing the same packages unpinned" >&2
            apt-get install -y -qq --no-install-recommends "${PINNED[@]%%=*}" >/dev/null
        fi
    fi
    mkdir -p "$DIR"
    dpkg-query -W -f='${Package}=${Version}\n' "${PINNED[@]%%=*}" >"$DIR/versions.txt" || true
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
