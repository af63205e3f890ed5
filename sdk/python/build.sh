#!/usr/bin/env bash
# Build a Python loadhost plugin into a WebAssembly component, offline:
#
#   build.sh PLUGIN_DIR OUT.wasm
#
# PLUGIN_DIR holds app.py (with do_task) and any other pure-Python modules it imports. The SDK is
# lib/ beside this script; the WIT is wit/ beside it if there is one (a project made by
# `loadhost new`), else the loadhost repository's wit/ two levels up (sdk/python/build.sh).
# The toolchain is componentize-py in ${LOADHOST_TOOLCHAINS:-~/.cache/loadhost/toolchains}/python.
set -euo pipefail

COMPONENTIZE_PY_VERSION=0.25.1

die() {
    echo "build.sh: $*" >&2
    exit 1
}

[ $# -eq 2 ] || { echo "usage: $0 PLUGIN_DIR OUT.wasm" >&2; exit 2; }
plugin_dir="$1"
out="$2"

here="$(cd -- "$(dirname -- "$0")" && pwd)"
lib="$here/lib"
if [ -d "$here/wit" ]; then wit="$here/wit"; else wit="$here/../../wit"; fi
[ -f "$lib/loadhost_entry.py" ] || die "the SDK is missing: expected $lib/loadhost_entry.py"
[ -f "$wit/plugin.wit" ] || die "the WIT is missing: expected $wit/plugin.wit"
[ -f "$plugin_dir/app.py" ] || die "$plugin_dir/app.py not found: a plugin is an app.py defining do_task(task)"

venv="${LOADHOST_TOOLCHAINS:-${XDG_CACHE_HOME:-$HOME/.cache}/loadhost/toolchains}/python"
version="$("$venv/bin/python" -c 'import importlib.metadata as m; print(m.version("componentize-py"))' 2>/dev/null ||
    true)"
if [ "$version" != "$COMPONENTIZE_PY_VERSION" ]; then
    found="${version:+ (it has version $version)}"
    die "componentize-py $COMPONENTIZE_PY_VERSION not found in $venv$found." \
        "Run sdk/python/toolchain.sh install (in the loadhost repository), or:" \
        "python3 -m venv '$venv' && '$venv/bin/python' -m pip install componentize-py==$COMPONENTIZE_PY_VERSION"
fi

mkdir -p -- "$(dirname -- "$out")"
# A private copy of the SDK: the build's CPython writes __pycache__/ beside the modules it imports,
# and this keeps the SDK folder (and a read-only checkout) untouched.
stage="$(mktemp -d)"
trap 'rm -rf -- "$stage"' EXIT
cp -R -- "$lib" "$stage/lib"
started=$SECONDS

# The metrics and the options the plugin declares (`declare_metrics("orders{tier}:counter", ...)`
# and `declare_options('USERS:int! "how many users"', ...)` calls with string literals), read from
# its source without running it and kept as `loadhost:metrics` and `loadhost:options` custom
# sections, which are appended to the component below: `loadhost inspect` lists them, thresholds
# on the metrics need no --metric, and `loadhost run` checks -e against the options.
"$venv/bin/python" - "$plugin_dir" "$stage/declared.sections" <<'PY' || die "declare_metrics/declare_options: see above"
import ast, pathlib, sys

root, out = pathlib.Path(sys.argv[1]), sys.argv[2]
found = {"declare_metrics": [], "declare_options": []}
for path in sorted(root.rglob("*.py")):
    folders = path.relative_to(root).parts[:-1]
    if any(f.startswith(".") or f in ("__pycache__", "lib", "wit") or f.endswith("venv") for f in folders):
        continue
    try:
        tree = ast.parse(path.read_bytes(), str(path))
    except SyntaxError:
        continue  # componentize-py says where
    for node in ast.walk(tree):
        call = getattr(node.func, "id", getattr(node.func, "attr", None)) if isinstance(node, ast.Call) else None
        if call in found:
            for arg in node.args:
                if not (isinstance(arg, ast.Constant) and isinstance(arg.value, str)):
                    sys.exit(f"{path}:{node.lineno}: {call} takes string literals (build.sh reads them without running the plugin)")
                found[call].append(arg.value.strip())


def leb(n):
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


sections = b""
for call, name in (("declare_metrics", b"loadhost:metrics"), ("declare_options", b"loadhost:options")):
    if found[call]:
        body = leb(len(name)) + name + "".join(d + "\n" for d in found[call]).encode()
        sections += b"\0" + leb(len(body)) + body
if sections:
    pathlib.Path(out).write_bytes(sections)
PY
# Run componentize-py through the venv's interpreter rather than its bin/ script, whose #! line
# breaks when the toolchains path has a space. The world with the lifecycle is always built:
# loadhost_entry gives a plugin without setup/init/teardown no-op ones (as the Rust SDK does).
# RUST_LIB_BACKTRACE=0: a Python error at build time is reported without componentize-py's own
# Rust backtrace (which RUST_BACKTRACE=1 in the caller's environment would add).
launcher='import sys; from componentize_py import script; sys.argv[0] = "componentize-py"; sys.exit(script())'
RUST_LIB_BACKTRACE=0 "$venv/bin/python" -c "$launcher" \
    --quiet -d "$wit" -w workload-with-lifecycle \
    componentize -p "$plugin_dir" -p "$stage/lib" loadhost_entry -o "$out" ||
    die "componentize-py failed for $plugin_dir (see above)"
# A custom section may end a component: the declarations go last.
if [ -f "$stage/declared.sections" ]; then cat -- "$stage/declared.sections" >>"$out"; fi

bytes=$(wc -c <"$out")
mib="$((bytes / 1048576)).$(((bytes % 1048576) * 10 / 1048576))"
echo "built $out: $bytes bytes ($mib MiB) in $((SECONDS - started)) s"
