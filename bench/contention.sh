#!/usr/bin/env bash
# Drops on a busy machine, beside k6 (issue 41): a one-request JavaScript script at RATE/s for
# DURATION against httpbin under gunicorn (a Python target that closes each connection, as a
# user's first test often has), with HOGS busy loops running the whole time, interleaved with k6's
# constant-arrival-rate at the same rate (20 pre-allocated VUs, 100 at most) in the same minutes.
# Each round runs loadhost with k6's crew (`-w 20 --max-workers 100`) and with its default crew,
# then k6; the table prints per
# run the tasks scheduled, dropped and passed, the crew's peak and p99, and each process's CPU and
# peak RSS (`/usr/bin/time`). Nothing is asserted: this prints what this machine does.
#
# httpbin and gunicorn come from PyPI into a venv under the toolchains folder, made once. Traffic
# is loopback only; every run is bounded by DURATION and `timeout`, the hogs by `timeout` too.
#
# Usage: bench/contention.sh     (after `cargo build --release` and `cargo xtask runners`)
#   LOADHOST=path  LOADHOST_BASELINE=path (a second binary run beside, e.g. the previous commit's)
#   RATE=200  DURATION=15s  HOGS=5  ROUNDS=3
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=bench/lib.sh disable=SC1091 # followed when lib.sh is checked too (cargo xtask lint)
. bench/lib.sh

LOADHOST=${LOADHOST:-target/release/loadhost}
RATE=${RATE:-200}
DURATION=${DURATION:-15s}
HOGS=${HOGS:-5}
ROUNDS=${ROUNDS:-3}
K6=$(bench_find_k6)
[ -n "$K6" ] || { echo "no k6: run cargo xtask setup" >&2; exit 2; }
venv=${LOADHOST_TOOLCHAINS:-${XDG_CACHE_HOME:-$HOME/.cache}/loadhost/toolchains}/httpbin
if ! [ -x "$venv/bin/gunicorn" ]; then
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet httpbin gunicorn
fi
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
timeout 1800 "$venv/bin/gunicorn" -b "127.0.0.1:$port" httpbin:app > "$work/gunicorn.log" 2>&1 &
for _ in $(seq 100); do curl -fso /dev/null "http://127.0.0.1:$port/get" && break; sleep 0.1; done
mkdir "$work/script"
cat > "$work/script/one.js" <<JS
import { get } from './lib/loadhost.js';
export function doTask() {
  const r = get('http://127.0.0.1:$port/get').send();
  if (r.status !== 200) throw new Error(\`status \${r.status}\`);
}
JS
secs=${DURATION%s}
cat > "$work/k6.js" <<JS
import http from 'k6/http';
export const options = { scenarios: { open: { executor: 'constant-arrival-rate', rate: $RATE, timeUnit: '1s',
  duration: '$DURATION', preAllocatedVUs: 20, maxVUs: 100 } } };
export default function () { http.get('http://127.0.0.1:$port/get'); }
JS
for _ in $(seq "$HOGS"); do timeout 3600 sh -c 'while :; do :; done' & done

lh() { # LABEL BINARY ARGS...
    local label=$1 bin=$2; shift 2
    /usr/bin/time -f '%U %S %M' -o "$work/time" timeout -k 5 $((secs + 60)) "$bin" run "$work/script/one.js" \
        --allow-host "127.0.0.1:$port" -r "$RATE" -d "$DURATION" --summary-json "$work/lh.json" "$@" \
        > "$work/lh.out" 2>&1 || true
    python3 - "$label" "$work/lh.json" "$work/time" <<'PY'
import json, sys
label, summary, times = sys.argv[1:]
d = json.load(open(summary)); t = d["tasks"]; u, s, rss = open(times).read().split()[-3:]
print(f"{label:<22} {t['scheduled']:>9} {t.get('dropped', 0):>8} {t['passed']:>8} {d['workers']['peak']:>6}"
      f" {d['latency_ms'].get('p99', 0):>9.1f} {float(u) + float(s):>7.2f} {int(rss) / 1024:>8.1f}")
PY
}
k6run() {
    /usr/bin/time -f '%U %S %M' -o "$work/time" timeout -k 5 $((secs + 60)) "$K6" run -q \
        --summary-export "$work/k6.json" "$work/k6.js" > "$work/k6.out" 2>&1 || true
    python3 - "$work/k6.json" "$work/time" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))["metrics"]; u, s, rss = open(sys.argv[2]).read().split()[-3:]
it = d["iterations"]["count"]; dr = d.get("dropped_iterations", {}).get("count", 0)
print(f"{'k6 (20..100 VUs)':<22} {it + dr:>9} {dr:>8} {it:>8} {d['vus_max']['max']:>6}"
      f" {d['http_req_duration'].get('p(99)', d['http_req_duration']['p(95)']):>9.1f} {float(u) + float(s):>7.2f} {int(rss) / 1024:>8.1f}")
PY
}
printf '%-22s %9s %8s %8s %6s %9s %7s %8s\n' run scheduled dropped passed peak p99_ms cpu_s rss_MiB
for round in $(seq "$ROUNDS"); do
    echo "# round $round, load average $(cut -d' ' -f1 /proc/loadavg)"
    lh "loadhost -w 20..100" "$LOADHOST" -w 20 --max-workers 100
    if [ -n "${LOADHOST_BASELINE:-}" ]; then lh "baseline -w 20..100" "$LOADHOST_BASELINE" -w 20 --max-workers 100; fi
    lh "loadhost default crew" "$LOADHOST"
    if [ -n "${LOADHOST_BASELINE:-}" ]; then lh "baseline default crew" "$LOADHOST_BASELINE"; fi
    k6run
done
