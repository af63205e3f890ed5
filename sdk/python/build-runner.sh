#!/usr/bin/env bash
# Build the Python runner, the component that runs a script given at run time (`loadhost run
# journey.py`), offline:
#
#   build-runner.sh OUT.wasm
#
# The runner is runner/loadhost_runner.py with the SDK (lib/) and the standard-library modules it
# imports, snapshotted by the pinned componentize-py (toolchain.sh), against the WIT in the
# loadhost repository's wit/ two levels up. The same inputs give the same bytes.
set -euo pipefail

die() {
    echo "build-runner.sh: $*" >&2
    exit 1
}

[ $# -eq 1 ] || { echo "usage: $0 OUT.wasm" >&2; exit 2; }
out="$1"

here="$(cd -- "$(dirname -- "$0")" && pwd)"
wit="$here/../../wit"
[ -f "$here/runner/loadhost_runner.py" ] || die "the runner is missing: expected $here/runner/loadhost_runner.py"
[ -f "$wit/plugin.wit" ] || die "the WIT is missing: expected $wit/plugin.wit"
"$here/toolchain.sh" check >/dev/null || die "$("$here/toolchain.sh" check)"
venv="${LOADHOST_TOOLCHAINS:-${XDG_CACHE_HOME:-$HOME/.cache}/loadhost/toolchains}/python"

mkdir -p -- "$(dirname -- "$out")"
# Private copies: the build's CPython writes __pycache__/ beside what it imports, and this keeps the
# SDK folder (and a read-only checkout) untouched. Their paths are not in the component (it sees
# them as /0 and /1), so a build elsewhere gives the same bytes.
stage="$(mktemp -d)"
trap 'rm -rf -- "$stage"' EXIT
cp -R -- "$here/lib" "$stage/lib"
cp -R -- "$here/runner" "$stage/runner"
# The runner's world (runner/world.wit) over the plugin package, as a dependency.
mkdir -p -- "$stage/wit/deps/loadhost-plugin"
cp -- "$here/runner/world.wit" "$stage/wit/"
cp -- "$wit"/*.wit "$stage/wit/deps/loadhost-plugin/"
started=$SECONDS
# As build.sh: componentize-py through the venv's interpreter, without its Rust backtraces.
launcher='import sys; from componentize_py import script; sys.argv[0] = "componentize-py"; sys.exit(script())'
RUST_LIB_BACKTRACE=0 "$venv/bin/python" -c "$launcher" \
    --quiet -d "$stage/wit" -w runner \
    componentize -p "$stage/runner" -p "$stage/lib" loadhost_runner -o "$out" ||
    die "componentize-py failed for the runner (see above)"

bytes=$(wc -c <"$out")
mib="$((bytes / 1048576)).$(((bytes % 1048576) * 10 / 1048576))"
echo "built $out: $bytes bytes ($mib MiB) in $((SECONDS - started)) s"
