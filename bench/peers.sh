#!/usr/bin/env bash
# The cost of a journey with think time, beside the tool it came from (issue 42, item 4): a k6
# script (3 GETs and sleep(1) per iteration) through k6 and through `loadhost run`, and a
# locustfile (3 GETs per task, wait_time = constant(1)) through Locust and through `loadhost
# locust`, each at USERS VUs/users for DURATION against nginx on loopback, one tool at a time.
# Printed per run: iterations, CPU seconds (user + sys, /usr/bin/time), CPU per iteration, peak
# RSS, and peak PSS (the process's /proc/PID/smaps_rollup, read every half second: the memory it
# would cost a machine, with pages shared between instances counted once). Nothing is asserted:
# this prints what this machine does.
#
# Usage: bench/peers.sh     (after `cargo build --release -p loadhost` and `cargo xtask setup`)
#   LOADHOST=path  USERS="100 1000"  DURATION=20  (seconds)
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=bench/lib.sh disable=SC1091 # followed when lib.sh is checked too (cargo xtask lint)
. bench/lib.sh

LOADHOST=${LOADHOST:-target/release/loadhost}
USERS=${USERS:-100 1000}
DURATION=${DURATION:-20}
K6=$(bench_find_k6)
LOCUST=${LOCUST:-${LOADHOST_TOOLCHAINS:-${XDG_CACHE_HOME:-$HOME/.cache}/loadhost/toolchains}/tools/bin/locust}
[ -n "$K6" ] || { echo "no k6: run cargo xtask setup" >&2; exit 2; }
[ -x "$LOCUST" ] || { echo "no locust: run cargo xtask setup" >&2; exit 2; }
command -v nginx >/dev/null || { echo "no nginx: run cargo xtask setup" >&2; exit 2; }

work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
bench_start_nginx "$(command -v nginx)" "$work/nginx" 4096 3600
base=${url%/}

cat > "$work/journey.js" <<'JS'
import http from 'k6/http';
import { check, sleep } from 'k6';
export default function () {
  const home = http.get(`${__ENV.BASE}/`, { tags: { name: 'home' } });
  check(home, { 'home 200': (r) => r.status === 200 });
  http.get(`${__ENV.BASE}/list?page=2`, { tags: { name: 'list' } });
  http.get(`${__ENV.BASE}/item?id=7`, { tags: { name: 'item' } });
  sleep(1);
}
JS
cat > "$work/locustfile.py" <<'PY'
from locust import HttpUser, constant, task


class Shopper(HttpUser):
    wait_time = constant(1)

    @task
    def journey(self):
        self.client.get("/", name="home")
        self.client.get("/list?page=2", name="list")
        self.client.get("/item?id=7", name="item")
PY

# Run "$@" under /usr/bin/time, sampling its PSS; prints "CPU_S RSS_MIB PSS_MIB".
measure() {
    /usr/bin/time -f '%U %S %M' -o "$work/time" timeout -k 5 $((DURATION + 120)) "$@" > "$work/out" 2>&1 &
    local pid=$! peak=0 pss child between
    while kill -0 "$pid" 2>/dev/null; do
        # /usr/bin/time's child is timeout, whose child is the tool.
        between=$(pgrep -P "$pid" | head -n 1 || true)
        child=
        if [ -n "$between" ]; then child=$(pgrep -P "$between" | head -n 1 || true); fi
        if [ -n "$child" ] && [ -r "/proc/$child/smaps_rollup" ]; then
            pss=$(awk '/^Pss:/ {print $2}' "/proc/$child/smaps_rollup" 2>/dev/null || echo 0)
            [ "${pss:-0}" -gt "$peak" ] && peak=$pss
        fi
        sleep 0.5
    done
    wait "$pid" || true
    read -r u s rss < <(tail -n 1 "$work/time")
    python3 -c "import sys; u,s,r,p=map(float,sys.argv[1:]); print(f'{u+s:.2f} {r/1024:.1f} {p/1024:.1f}')" "$u" "$s" "$rss" "$peak"
}

row() { # TOOL USERS ITERATIONS "CPU RSS PSS"
    read -r cpu rss pss <<<"$4"
    python3 -c "
import sys
tool, users, it, cpu, rss, pss = sys.argv[1:]
it = int(it); cpu = float(cpu)
per = f'{cpu / it * 1e3:.2f}' if it else '-'
print(f'{tool:<16} {users:>6} {it:>10} {cpu:>8.2f} {per:>12} {float(rss):>9.1f} {float(pss):>9.1f}')" "$1" "$2" "$3" "$cpu" "$rss" "$pss"
}

# The runners are compiled once per machine and loadhost build (bench/scripts.sh measures that first
# run): one iteration of each script first, so every figure below is of a run with the cache warm.
for script in journey.js locustfile.py; do
    "$LOADHOST" run "$work/$script" -n 1 -e "BASE=$base" -e "LOCUST_HOST=$base" \
        --allow-host "127.0.0.1:${base##*:}" > "$work/warm.out" 2>&1 ||
        { cat "$work/warm.out" >&2; echo "warming $script failed" >&2; exit 1; }
done

printf '%-16s %6s %10s %8s %12s %9s %9s\n' tool users iterations cpu_s cpu_ms/iter rss_MiB pss_MiB
for users in $USERS; do
    figures=$(measure "$K6" run -q --no-usage-report --vus "$users" --duration "${DURATION}s" -e "BASE=$base" \
        --summary-export "$work/k6.json" "$work/journey.js")
    it=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['metrics']['iterations']['count'])" "$work/k6.json")
    row "k6" "$users" "$it" "$figures"

    figures=$(measure "$LOADHOST" run "$work/journey.js" -w "$users" -d "${DURATION}s" -e "BASE=$base" \
        --allow-host "127.0.0.1:${base##*:}" --summary-json "$work/lh.json")
    it=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['tasks']['passed'])" "$work/lh.json")
    row "loadhost (k6)" "$users" "$it" "$figures"

    figures=$(measure "$LOCUST" -f "$work/locustfile.py" --headless -u "$users" -r "$users" -t "${DURATION}s" \
        -H "$base" --only-summary --csv "$work/locust" --loglevel ERROR)
    it=$(python3 -c "
import csv, sys
rows = [r for r in csv.DictReader(open(sys.argv[1])) if r['Name'] == 'home']
print(rows[0]['Request Count'] if rows else 0)" "$work/locust_stats.csv")
    row "locust" "$users" "$it" "$figures"

    figures=$(measure "$LOADHOST" locust -f "$work/locustfile.py" -u "$users" -r "$users" -t "${DURATION}s" \
        -H "$base" -- --summary-json "$work/lh.json")
    it=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['tasks']['passed'])" "$work/lh.json")
    row "loadhost (locust)" "$users" "$it" "$figures"
done
