#!/usr/bin/env bash
# Per-language plugin figures: the same no-op (plugins/noop, noop-python, noop-js, noop-c) as a
# component's size, its first-run compile time (empty compile cache), its cached start, and the
# per-task cost of calling it (one worker, TASKS tasks: the run's duration ÷ tasks, and the mean
# service time). Loopback only; every run is bounded by its task count. It builds the plugins and
# the release binary first, as bench/http.sh does, so the figures are of the code checked out.
#
#   bench/languages.sh            TASKS=20000 by default
set -euo pipefail
cd "$(dirname "$0")/.."

TASKS=${TASKS:-20000}
OUT=target/bench/languages
mkdir -p "$OUT"

cargo xtask plugins >/dev/null
cargo build --release -q -p loadhost
# The binary just built, wherever cargo puts it: CARGO_TARGET_DIR, a config's build.target-dir, or
# ./target (cargo metadata knows which).
target_dir=$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')
LOADHOST=$target_dir/release/loadhost

# The log line "plugin PATH compiled in 9.3s" / "… from the compile cache in 4.1ms".
load_time() { sed -n 's/.* \(compiled\|from the compile cache\) in \([0-9.]*[a-zµ]*\).*/\2/p' "$1" | head -n 1; }

printf '%-8s %12s %14s %14s %12s %14s\n' language "size (bytes)" "first compile" "cached start" "µs/task" "service mean"
for lang in rust python js c; do
    name=noop
    [ "$lang" = rust ] || name="noop-$lang"
    plugin="target/plugins/$name.wasm"
    if [ ! -f "$plugin" ]; then
        printf '%-8s %s\n' "$lang" "skipped: $plugin was not built (see cargo xtask plugins)"
        continue
    fi
    cache=$(mktemp -d)
    LOADHOST_CACHE_DIR=$cache "$LOADHOST" run "$plugin" -n 1 >/dev/null 2>"$OUT/$lang-first.log"
    LOADHOST_CACHE_DIR=$cache "$LOADHOST" run "$plugin" -w 1 -n "$TASKS" --summary-json "$OUT/$lang.json" \
        >/dev/null 2>"$OUT/$lang-cached.log"
    rm -rf "$cache"
    per_task=$(python3 -c 'import json,sys; s=json.load(open(sys.argv[1])); print("%.1f" % (s["duration_s"] / s["tasks"]["passed"] * 1e6))' "$OUT/$lang.json")
    service=$(python3 -c 'import json,sys; print("%.1f µs" % (json.load(open(sys.argv[1]))["service_ms"]["mean"] * 1000))' "$OUT/$lang.json")
    printf '%-8s %12s %14s %14s %12s %14s\n' "$lang" "$(stat -c %s "$plugin")" "$(load_time "$OUT/$lang-first.log")" \
        "$(load_time "$OUT/$lang-cached.log")" "$per_task" "$service"
done
