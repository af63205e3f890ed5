#!/usr/bin/env bash
# Soak: `flaky` at a steady rate for a long run, with retries and plugin metrics, sampling the
# loadhost process's resident memory (VmRSS) every INTERVAL seconds. Memory must stay flat: the
# HDR histograms, the plugin series and the crew are bounded, and nothing grows with the number of
# tasks. Prints one line per sample, then RSS at the start, after one minute and at the end, and the
# run's summary. Runs on loopback only (flaky makes no requests) and stops by itself.
#
#   bench/soak.sh                             # 10 minutes at 2000/s, a sample every 10 s
#   DURATION=60 RATE=500 INTERVAL=5 bench/soak.sh
set -euo pipefail
cd "$(dirname "$0")/.."

DURATION=${DURATION:-600}
RATE=${RATE:-2000}
INTERVAL=${INTERVAL:-10}
OUT=target/bench/soak
mkdir -p "$OUT"

cargo xtask plugins >/dev/null
cargo build --release -q -p loadhost
# The binary just built, wherever cargo puts it: CARGO_TARGET_DIR, a config's build.target-dir, or
# ./target (cargo metadata knows which).
target_dir=$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')
LOADHOST=$target_dir/release/loadhost

"$LOADHOST" run target/plugins/flaky.wasm -e FAIL_PCT=10 -e FATAL_PCT=1 --retries 2 \
    -r "$RATE" -d "${DURATION}s" --summary-json "$OUT/summary.json" --csv "$OUT/intervals.csv" \
    >"$OUT/stdout.txt" 2>"$OUT/stderr.txt" &
pid=$!
trap 'kill "$pid" 2>/dev/null || true' EXIT

rss_mib() { awk '/^VmRSS:/ { printf "%.1f", $2 / 1024 }' "/proc/$pid/status" 2>/dev/null || true; }

printf '%8s %10s\n' "t_s" "rss_mib" | tee "$OUT/rss.txt"
start=$(date +%s)
sleep 1
while kill -0 "$pid" 2>/dev/null; do
    now=$(( $(date +%s) - start ))
    rss=$(rss_mib)
    [ -n "$rss" ] && printf '%8d %10s\n' "$now" "$rss" | tee -a "$OUT/rss.txt"
    sleep "$INTERVAL"
done
wait "$pid" || true
trap - EXIT

awk 'NR > 1 { t[NR] = $1; r[NR] = $2; n = NR }
     END {
       first = 2; minute = first
       for (i = 2; i <= n; i++) if (t[i] <= 60) minute = i
       printf "\nRSS: start %s MiB (t=%ss), after 1 minute %s MiB (t=%ss), at the end %s MiB (t=%ss)\n",
              r[first], t[first], r[minute], t[minute], r[n], t[n]
     }' "$OUT/rss.txt"
grep -E "tasks|rate\.|latency_ms|workers|host" "$OUT/stdout.txt" || true
