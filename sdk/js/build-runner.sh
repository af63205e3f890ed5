#!/usr/bin/env bash
# Build the JavaScript script runner: the component that runs `loadhost run plugin.js` with no
# toolchain on the machine (runner/runner.js says how). Built once, offline, with the pinned
# toolchain (sdk/js/toolchain.sh install).
#
#   build-runner.sh OUT.wasm
#
# The runner is lib/'s SDK and adapter plus runner/, staged as lib/ and lib/runner/ (so the SDK's
# and the runner's stack frames start with `lib/`), with acorn (the parser the runner rewrites
# `import`/`export` with) and the WASI 0.2.12 WIT of wasi:filesystem taken from the toolchain,
# where its lock pins them (acorn through jco-std, the WIT inside jco).
set -euo pipefail

die() {
    echo "build-runner.sh: $*" >&2
    exit 1
}

[ $# -eq 1 ] || {
    echo "usage: $0 OUT.wasm" >&2
    exit 2
}
out="$1"

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
lib="$here/lib"
runner="$here/runner"
if [ -d "$here/wit" ]; then wit="$here/wit"; else wit="$here/../../wit"; fi
for file in "$lib/loadhost.js" "$lib/adapter.js" "$runner/runner.js" "$runner/world.wit"; do
    [ -f "$file" ] || die "missing: $file (the SDK in lib/, the runner in runner/)"
done
ls "$wit"/*.wit >/dev/null 2>&1 || die "no WIT found: expected $here/wit/plugin.wit or $here/../../wit/plugin.wit"

prefix="${LOADHOST_TOOLCHAINS:-${XDG_CACHE_HOME:-$HOME/.cache}/loadhost/toolchains}/js"
componentize="$prefix/node_modules/.bin/componentize-js"
acorn="$prefix/node_modules/acorn/dist/acorn.mjs"
wasi="$prefix/node_modules/@bytecodealliance/jco/lib/wit/builtin/0.2.12"
if ! command -v node >/dev/null 2>&1 || [ ! -x "$componentize" ]; then
    die "missing: the JS toolchain (Node.js and componentize-js in $prefix); install it with sdk/js/toolchain.sh install from the loadhost repository"
fi
[ -f "$acorn" ] || die "missing: $acorn (the toolchain's lock pins acorn; reinstall it with sdk/js/toolchain.sh install)"
for package in io clocks filesystem; do
    [ -f "$wasi/wasi-$package/package.wit" ] || die "missing: $wasi/wasi-$package/package.wit (jco's WASI WIT)"
done

mkdir -p "$(dirname "$out")"
out="$(cd "$(dirname "$out")" && pwd)/$(basename "$out")"

stage="$(mktemp -d /tmp/loadhost-js-runner.XXXXXX)"
trap 'rm -rf "$stage"' EXIT

# The SDK without lib/entry.js (which imports a plugin.js there is none of), the runner under it.
mkdir -p "$stage/lib/runner" "$stage/tmp" "$stage/wit/deps/loadhost-plugin" "$stage/wit/deps/wasi-cli"
for file in "$lib"/*.js; do
    [ "$(basename "$file")" = entry.js ] || cp "$file" "$stage/lib/"
done
cp "$runner"/*.js "$stage/lib/runner/"
cp "$acorn" "$stage/lib/runner/acorn.mjs"
cp "$runner/world.wit" "$stage/wit/"
cp "$wit"/*.wit "$stage/wit/deps/loadhost-plugin/"
cp "$lib/wit/wasi-cli-environment.wit" "$stage/wit/deps/wasi-cli/"
for package in io clocks filesystem; do
    mkdir -p "$stage/wit/deps/wasi-$package"
    cp "$wasi/wasi-$package/package.wit" "$stage/wit/deps/wasi-$package/"
done

started=$(date +%s.%N)
# -d http -d fetch-event: no wasi:http imports (scripts use the host's loadhost:plugin/http).
if ! (cd "$stage" && TMPDIR="$stage/tmp" "$componentize" lib/runner/runner.js --wit wit -n runner \
    -d http -d fetch-event -o out.wasm) >"$stage/log" 2>&1; then
    cat "$stage/log" >&2
    die "componentize-js failed"
fi
mv "$stage/out.wasm" "$out"
size=$(stat -c %s "$out")
figures=$(awk -v size="$size" -v t0="$started" -v t1="$(date +%s.%N)" \
    'BEGIN { printf "%d bytes (%.1f MB) in %.1fs", size, size / 1e6, t1 - t0 }')
printf 'built %s: %s\n' "$out" "$figures"
