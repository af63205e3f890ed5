#!/usr/bin/env bash
# Build a JavaScript loadhost plugin into a WebAssembly component, offline.
#
#   build.sh PLUGIN_DIR OUT.wasm
#
# PLUGIN_DIR holds `plugin.js` (an ES module exporting doTask and, optionally, setup/init/teardown)
# and any modules it imports by relative path; `lib/` is reserved for the SDK. The SDK is taken from
# lib/ next to this script, the WIT from wit/ next to it, or else from ../../wit (the loadhost
# repository's layout), so the same script works in sdk/js/ and in a project `loadhost new` made.
#
# componentize-js (installed by sdk/js/toolchain.sh install) snapshots a SpiderMonkey engine after
# evaluating the plugin's modules. It mishandles two things, so the build runs in a staging folder:
# a source outside the current folder fails to load, and a path with spaces breaks its arguments.
set -euo pipefail

die() {
    echo "build.sh: $*" >&2
    exit 1
}

[ $# -eq 2 ] || {
    echo "usage: $0 PLUGIN_DIR OUT.wasm" >&2
    exit 2
}
plugin_dir="$1"
out="$2"

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
lib="$here/lib"
if [ -d "$here/wit" ]; then wit="$here/wit"; else wit="$here/../../wit"; fi
if [ ! -f "$lib/loadhost.js" ] || [ ! -f "$lib/entry.js" ]; then
    die "the SDK is missing: expected $lib/loadhost.js and $lib/entry.js"
fi
ls "$wit"/*.wit >/dev/null 2>&1 || die "no WIT found: expected $here/wit/plugin.wit or $here/../../wit/plugin.wit"
[ -d "$plugin_dir" ] || die "$plugin_dir is not a folder"
[ -f "$plugin_dir/plugin.js" ] || die "$plugin_dir has no plugin.js (the module exporting doTask)"

prefix="${LOADHOST_TOOLCHAINS:-${XDG_CACHE_HOME:-$HOME/.cache}/loadhost/toolchains}/js"
componentize="$prefix/node_modules/.bin/componentize-js"
if ! command -v node >/dev/null 2>&1 || [ ! -x "$componentize" ]; then
    die "missing: the JS toolchain (Node.js and componentize-js in $prefix); install it with sdk/js/toolchain.sh install from the loadhost repository"
fi

# Make OUT absolute before leaving the caller's folder.
mkdir -p "$(dirname "$out")"
out="$(cd "$(dirname "$out")" && pwd)/$(basename "$out")"

stage="$(mktemp -d /tmp/loadhost-js.XXXXXX)"
trap 'rm -rf "$stage"' EXIT

# The plugin's files at the top, the SDK in lib/ (so lib/entry.js imports ../plugin.js), and a WIT
# folder whose main package is lib/wit/world.wit with loadhost's WIT and WASI's under deps/.
tar -C "$plugin_dir" --exclude=./lib --exclude=./wit --exclude=./node_modules --exclude=./.git \
    --exclude='*.wasm' -cf - . | tar -C "$stage" -xf -
mkdir -p "$stage/lib" "$stage/wit/deps/loadhost-plugin" "$stage/wit/deps/wasi-cli" "$stage/tmp"
cp "$lib"/*.js "$stage/lib/"
cp "$lib/wit/world.wit" "$stage/wit/"
cp "$wit"/*.wit "$stage/wit/deps/loadhost-plugin/"
cp "$lib/wit/wasi-cli-environment.wit" "$stage/wit/deps/wasi-cli/"

# The metrics and the options the plugin declares (`declareMetrics('orders{tier}:counter', ...)`
# and `declareOptions('USERS:int! "how many users"', ...)` calls with string literals, each call at
# the start of a line), read from its source without running it and kept as `loadhost:metrics` and
# `loadhost:options` custom sections, which are appended to the component below: `loadhost inspect`
# lists them, thresholds on the metrics need no --metric, and `loadhost run` checks -e against the
# options.
node - "$stage" "$stage/tmp/declared.sections" <<'JS' || die "declareMetrics/declareOptions: see above"
const fs = require('fs');
const path = require('path');
const [root, out] = process.argv.slice(2);
const found = { declareMetrics: [], declareOptions: [] };
const call = /^[ \t]*(?:[A-Za-z_$][\w$]*\.)?(declareMetrics|declareOptions)\s*\(/gm;
// The string literals up to the call's closing parenthesis (a help may hold one), or null.
function literals(text, at) {
  const args = [];
  const literal = /\s*(?:'((?:[^'\\\n]|\\.)*)'|"((?:[^"\\\n]|\\.)*)")\s*(,?)/y;
  for (;;) {
    const close = /\s*\)/y;
    close.lastIndex = at;
    if (close.test(text)) return args;
    literal.lastIndex = at;
    const arg = literal.exec(text);
    if (!arg) return null;
    args.push((arg[1] ?? arg[2]).replace(/\\(.)/g, '$1').trim());
    at = literal.lastIndex;
    if (!arg[3]) {
      close.lastIndex = at;
      return close.test(text) ? args : null;
    }
  }
}
function scan(file) {
  const text = fs.readFileSync(file, 'utf8');
  for (const match of text.matchAll(call)) {
    const args = literals(text, match.index + match[0].length);
    if (args === null) {
      const line = text.slice(0, match.index).split('\n').length;
      console.error(`${path.relative(root, file)}:${line}: ${match[1]} takes string literals (build.sh reads them without running the plugin)`);
      process.exit(1);
    }
    found[match[1]].push(...args);
  }
}
function walk(dir) {
  for (const entry of fs.readdirSync(dir, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) {
      if (!entry.name.startsWith('.') && !['lib', 'wit', 'tmp', 'node_modules'].includes(entry.name)) walk(full);
    } else if (/\.m?js$/.test(entry.name)) {
      scan(full);
    }
  }
}
function leb(n) {
  const bytes = [];
  do {
    const byte = n & 0x7f;
    n >>>= 7;
    bytes.push(byte | (n ? 0x80 : 0));
  } while (n);
  return Buffer.from(bytes);
}
walk(root);
const sections = [];
for (const [fn, section] of [['declareMetrics', 'loadhost:metrics'], ['declareOptions', 'loadhost:options']]) {
  if (!found[fn].length) continue;
  const name = Buffer.from(section);
  const body = Buffer.concat([leb(name.length), name, Buffer.from(found[fn].map((d) => `${d}\n`).join(''))]);
  sections.push(Buffer.from([0]), leb(body.length), body);
}
if (sections.length) fs.writeFileSync(out, Buffer.concat(sections));
JS

started=$(date +%s.%N)
# -d http -d fetch-event: no wasi:http imports (plugins use the host's loadhost:plugin/http).
if ! (cd "$stage" && TMPDIR="$stage/tmp" "$componentize" lib/entry.js --wit wit -n plugin \
    -d http -d fetch-event -o out.wasm) >"$stage/log" 2>&1; then
    # componentize-js's own message, without node's stack trace of componentize-js itself.
    grep -v -E '^ +at |^Node\.js v|componentize\.js:[0-9]+$|throw new Error\(err\);|^ +\^$' "$stage/log" >&2 || true
    if grep -q 'cannot call arbitrary imported functions' "$stage/log"; then
        echo "build.sh: hint: the module's top level runs at build time, where env(), metrics and HTTP" \
            "are unavailable; call them inside doTask/init/setup" >&2
    elif grep -q 'process is not defined' "$stage/log"; then
        echo "build.sh: hint: the module's top level runs at build time, without the run's -e variables," \
            "and a plugin has no process.env: read settings with env() or envOr() from lib/loadhost.js" \
            "inside doTask/init/setup" >&2
    fi
    die "componentize-js failed for $plugin_dir"
fi
# A custom section may end a component: the declarations go last.
if [ -f "$stage/tmp/declared.sections" ]; then cat "$stage/tmp/declared.sections" >>"$stage/out.wasm"; fi
mv "$stage/out.wasm" "$out"
size=$(stat -c %s "$out")
figures=$(awk -v size="$size" -v t0="$started" -v t1="$(date +%s.%N)" \
    'BEGIN { printf "%d bytes (%.1f MB) in %.1fs", size, size / 1e6, t1 - t0 }')
printf 'built %s: %s\n' "$out" "$figures"
