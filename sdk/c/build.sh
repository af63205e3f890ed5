#!/usr/bin/env bash
# Build a loadhost plugin written in C into a WebAssembly component.
#
#   build.sh PLUGIN_DIR OUT.wasm
#
# Compiles PLUGIN_DIR/*.c and PLUGIN_DIR/src/*.c with the SDK in lib/ (beside this script) into a
# wasm32-wasi core module, then turns that into a component with `loadhost componentize`. Nothing
# is downloaded. Settings from the environment:
#   LOADHOST        the loadhost binary (default: `loadhost` on PATH)
#   LOADHOST_CLANG  the C compiler (default: clang-14, Debian's)
#   CFLAGS          extra compiler flags (default: -O2)
#   WASI_SYSROOT    a wasi-libc sysroot other than Debian's
set -euo pipefail

if [ $# -ne 2 ]; then
    echo "usage: $0 PLUGIN_DIR OUT.wasm" >&2
    exit 2
fi
plugin_dir=$1
out=$2
here=$(cd "$(dirname "$0")" && pwd)
lib="$here/lib"
# In the loadhost repository the WIT is at the root; in a project made by `loadhost new` it is beside us.
if [ -d "$here/wit" ]; then wit="$here/wit"; else wit="$here/../../wit"; fi
cc="${LOADHOST_CLANG:-clang-14}"
loadhost="${LOADHOST:-loadhost}"
install_hint="install it with \`sdk/c/toolchain.sh install\` from the loadhost repository (or: apt-get install clang-14 lld-14 wasi-libc libclang-rt-14-dev-wasm32)"

die() {
    echo "build.sh: $*" >&2
    exit 1
}

[ -d "$plugin_dir" ] || die "no such plugin folder: $plugin_dir"
[ -f "$lib/loadhost.h" ] || die "the C SDK is missing: expected $lib/loadhost.h"
command -v "$cc" >/dev/null 2>&1 || die "missing: the C toolchain ($cc is not on PATH); $install_hint"
command -v "$loadhost" >/dev/null 2>&1 ||
    die "missing: $loadhost (it turns the core module into a component); put it on PATH or set LOADHOST=/path/to/loadhost"

# The bindings in lib/ were generated from one plugin.wit; say so when the WIT here differs. A
# newer WIT that only adds to the contract still works with them, so this is a warning.
if [ -f "$lib/plugin.wit.sha256" ] && [ -f "$wit/plugin.wit" ] && command -v sha256sum >/dev/null 2>&1; then
    if [ "$(sha256sum <"$wit/plugin.wit" | cut -d' ' -f1)" != "$(cut -d' ' -f1 <"$lib/plugin.wit.sha256")" ]; then
        echo "build.sh: warning: $wit/plugin.wit differs from the WIT the bindings in $lib were generated from (see $lib/README.md to regenerate)" >&2
    fi
fi

shopt -s nullglob
sources=("$plugin_dir"/*.c "$plugin_dir"/src/*.c)
shopt -u nullglob
[ ${#sources[@]} -gt 0 ] || die "no C sources in $plugin_dir (expected $plugin_dir/*.c or $plugin_dir/src/*.c)"

sysroot=()
[ -z "${WASI_SYSROOT:-}" ] || sysroot=(--sysroot="$WASI_SYSROOT")
read -r -a cflags <<<"${CFLAGS:--O2}"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# A reactor: no main; wasi-libc's _initialize runs constructors, then the host calls the exports.
# The generated *_component_type.o carries the world's WIT as a custom section, which is how
# componentize knows the imports and exports. --strip-debug keeps the name section for traps.
if ! "$cc" --target=wasm32-wasi "${sysroot[@]}" -mexec-model=reactor -std=gnu11 -Wall -Wextra \
    "${cflags[@]}" -I "$plugin_dir" -I "$lib" \
    "${sources[@]}" "$lib"/*.c "$lib"/*_component_type.o \
    -Wl,--strip-debug -o "$tmp/core.wasm" >"$tmp/cc.log" 2>&1; then
    cat "$tmp/cc.log" >&2
    if grep -q 'undefined symbol: loadhost_do_task' "$tmp/cc.log"; then
        die "the plugin must define: loadhost_result loadhost_do_task(const loadhost_task *task)"
    # No linker, no compiler-rt builtins, or no libc: the toolchain, not the plugin.
    elif grep -qE "unable to execute|wasm-ld.*(doesn't exist|not found)|(libclang_rt|crt1|libc\.a).*(cannot|not found|No such)|'(stdio|stdlib|string|stdint|stddef)\.h' file not found" "$tmp/cc.log"; then
        die "the C toolchain is incomplete; $install_hint"
    fi
    die "compiling failed"
fi
cat "$tmp/cc.log" >&2 # warnings

"$loadhost" componentize "$tmp/core.wasm" -o "$out" >/dev/null || die "\`$loadhost componentize\` failed"
echo "built $out ($(wc -c <"$out") bytes)"
