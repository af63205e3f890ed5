#!/usr/bin/env bash
# Bytes per in-flight session (issue 31): N WebSocket sessions to the built-in target
# (`loadhost target`, started here on a free loopback port), every session in flight at once,
# each waiting DELAY_MS (3000) for the echo of its one message, as
#
#   loadhost run target/plugins/ws-echo.wasm -w N -d DURATION -e MESSAGES=1
#                -e TARGET_URL=ws://127.0.0.1:PORT/ws/echo?delay=3000
#
# (one connection per worker, kept across its tasks; each task sends one message and waits 3 s for
# its echo), for N in NS, then the same with the async twin `ws-echo-async` (a `doer-async`
# plugin: its workers share instances, docs/runtime.md "Async plugins") for N in ASYNC_NS ("async"
# rows), then k6's `k6/ws` (bench/k6/ws-echo-ws.js with the same URL: one
# connection per VU, each message waits 3 s for its echo) for N in K6_NS, then the Python ws-echo
# plugin (target/plugins/ws-echo-python.wasm) for N in PY_NS, then HTTP requests in flight: the
# `http-get` plugin with `-w N` against the target's /delay?ms=DELAY_MS (one kept-alive connection
# per worker, every request waiting DELAY_MS for its response) for N in HTTP_NS ("http" rows: a
# "session" is a request in flight, a "message" a response). Printed per run:
#   RSS MiB      the tool's peak resident set (`/usr/bin/time -f '%U %S %M'`, the process as a
#                user runs it: start-up and compile cache included)
#   KiB/sess     (RSS − the same tool's N=1 run's RSS) ÷ (N − 1): what one more session costs
#                (k6: per VU; when a tool has no N=1 run here, blank)
#   CPU µs/msg   user + sys CPU × 1e6 ÷ messages echoed (received)
#   failed       tasks that did not pass (failed, aborted, timed out, trapped; loadhost) or
#                failed checks (k6), and as a % of those that ended
#   lost         messages sent − received (the summaries' ws_msgs_sent − ws_msgs_received)
#   in flight    whether all N were in flight at once: loadhost's summary `workers.peak` and the
#                most of `in_flight` over the intervals (--out json); k6's vus_max
#   load         the machine's 1-minute load average when the run started (the CPU figures
#                depend on it; the memory figures hardly do)
#
# Then, with BREAKDOWN_NS (default "1 2000"), the breakdown: the same loadhost run, and SMAPS_AT
# (7) seconds after it starts (every session waiting for its echo) a copy of /proc/PID/smaps,
# whose Rss and Pss are attributed to the wasmtime pool's linear memories, its tables, its fiber
# stacks (one slot per instance, ASYNC_STACK_KIB each), the malloc heap (glibc's [heap] and its
# 64 MiB arenas), threads' stacks, the binary and libraries, compiled plugin code, and the rest
# (other anonymous mappings: large allocations); per part the KiB per session above the first N.
#
#   bench/sessions.sh                               # about 5 minutes on a quiet machine
#   NS="1 1000" K6_NS=1000 PY_NS= BREAKDOWN_NS= bench/sessions.sh   # a quick look
#
# Knobs (environment):
#   NS="1 1000 5000 10000 19000"  loadhost sessions per run (the Rust ws-echo plugin)
#   ASYNC_NS="1 1000 10000 19000" loadhost sessions per run (the Rust ws-echo-async plugin)
#   K6_NS="1 1000 10000 19000"    k6 VUs per run (k6/ws)
#   PY_NS="1 1000 10000"          the Python plugin's sessions per run
#   HTTP_NS="1 2000"              http-get's requests in flight per run
#   HTTP_ASYNC_NS="1 2000"        the same with http-get-async ("http-async" rows)
#   BREAKDOWN_NS="1 2000"         loadhost runs whose smaps are read and broken down
#   DURATION=12s  DELAY_MS=3000   each run's length; how long the target holds each echo
#   GRACE=120                     seconds a run may last beyond DURATION before it is killed
#   SMAPS_AT=7                    seconds after a breakdown run starts when its smaps are read
#   ASYNC_STACK_KIB=2048          the fiber stack size the binary uses (to find the stack slots)
#   MEM_BUDGET_MIB                the most a run may be expected to take (default 70% of
#                                 MemAvailable): a run whose projection from the tool's largest
#                                 run so far is over it is skipped, saying so (the box is shared)
#   LOADHOST=target/release/loadhost, K6=   the tools (k6 from PATH or the tools venv, bench/lib.sh)
#   EXTRA_ARGS=                   more arguments for every loadhost run (e.g. --threads 2)
#
# Descriptors and mappings: every session is one socket in loadhost and one in the target, so the
# script raises `ulimit -n` to the hard limit (the target and the tools inherit it); N above it
# fails to connect, and is reported as such. loadhost checks vm.max_map_count (6 mappings per
# instance: N ≈ 10,800 fits under the default 65,530) and refuses a crew past it, saying so: raise
# it (sysctl -w vm.max_map_count=262144) for N = 19,000. One loopback address serves: 19,000
# connections fit in the default ephemeral port range (32768–60999) towards one address.
#
# Nothing is asserted. Every run is under `timeout` (DURATION + GRACE); the target stops by itself
# and is stopped on exit; every URL is 127.0.0.1. Outputs: target/bench/sessions/runs/ (each run's
# command, output, summary, time, smaps), results.jsonl (one row per run), summary.txt (the tables).
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=bench/lib.sh disable=SC1091 # followed when lib.sh is checked too (cargo xtask lint)
. bench/lib.sh

NS=${NS-1 1000 5000 10000 19000}
ASYNC_NS=${ASYNC_NS-1 1000 10000 19000}
K6_NS=${K6_NS-1 1000 10000 19000}
PY_NS=${PY_NS-1 1000 10000}
HTTP_NS=${HTTP_NS-1 2000}
HTTP_ASYNC_NS=${HTTP_ASYNC_NS-1 2000}
BREAKDOWN_NS=${BREAKDOWN_NS-1 2000}
DURATION=${DURATION:-12s}
DELAY_MS=${DELAY_MS:-3000}
GRACE=${GRACE:-120}
SMAPS_AT=${SMAPS_AT:-7}
ASYNC_STACK_KIB=${ASYNC_STACK_KIB:-2048}
LOADHOST=${LOADHOST:-target/release/loadhost}
EXTRA_ARGS=${EXTRA_ARGS:-}
OUT=target/bench/sessions
read -ra ns <<< "$NS"
read -ra async_ns <<< "$ASYNC_NS"
read -ra k6_ns <<< "$K6_NS"
read -ra py_ns <<< "$PY_NS"
read -ra http_ns <<< "$HTTP_NS"
read -ra http_async_ns <<< "$HTTP_ASYNC_NS"
read -ra breakdown_ns <<< "$BREAKDOWN_NS"
read -ra extra_args <<< "$EXTRA_ARGS"

die() { echo "bench/sessions.sh: $*" >&2; exit 2; }
[[ $DURATION =~ ^([0-9]+)s$ ]] || die "DURATION must be whole seconds (12s), not '$DURATION'"
dur_s=$(( 10#${BASH_REMATCH[1]} ))
for n in "${ns[@]}" "${async_ns[@]}" "${k6_ns[@]}" "${py_ns[@]}" "${http_ns[@]}" "${http_async_ns[@]}" "${breakdown_ns[@]}" "$DELAY_MS" "$GRACE" "$SMAPS_AT" "$ASYNC_STACK_KIB"; do
    [[ $n =~ ^[1-9][0-9]*$ ]] || die "NS, ASYNC_NS, K6_NS, PY_NS, HTTP_NS, HTTP_ASYNC_NS, BREAKDOWN_NS, DELAY_MS, GRACE, SMAPS_AT and ASYNC_STACK_KIB take positive integers, not '$n'"
done
[ "$SMAPS_AT" -lt "$dur_s" ] || die "SMAPS_AT ($SMAPS_AT) must be less than DURATION's seconds ($dur_s)"
[ -x /usr/bin/time ] || die "needs GNU time at /usr/bin/time (Debian package 'time')"
[ -x "$LOADHOST" ] || die "no loadhost binary at $LOADHOST (cargo build --release -p loadhost)"
for p in ws-echo ws-echo-async ws-echo-python http-get http-get-async; do
    [ -f "target/plugins/$p.wasm" ] || die "target/plugins/$p.wasm is missing (cargo xtask plugins)"
done
K6=$(bench_find_k6)
if [ -z "$K6" ] || [ ! -x "$K6" ]; then echo "  k6: not found, its runs skipped (cargo xtask setup installs it)"; k6_ns=(); fi
MEM_BUDGET_MIB=${MEM_BUDGET_MIB:-$(awk '/^MemAvailable:/ { printf "%d", $2 * 0.7 / 1024 }' /proc/meminfo)}
[[ $MEM_BUDGET_MIB =~ ^[1-9][0-9]*$ ]] || die "MEM_BUDGET_MIB must be a positive integer, not '$MEM_BUDGET_MIB'"

ulimit -n "$(ulimit -Hn)"
rm -rf "$OUT/runs"
mkdir -p "$OUT/runs"
: > "$OUT/results.jsonl"

# --- the target (killed on exit) ------------------------------------------------------------------
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

runs_total=$(( ${#ns[@]} + ${#k6_ns[@]} + ${#py_ns[@]} + ${#http_ns[@]} + ${#breakdown_ns[@]} ))
serve_s=$(( runs_total * (dur_s + GRACE + 10) + 300 ))
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
authority=127.0.0.1:${BASH_REMATCH[1]}
ws_url="ws://$authority/ws/echo?delay=$DELAY_MS"

# --- parse one run into a JSON row (results.jsonl) and a line of the table ------------------------
cat > "$OUT/parse.py" <<'EOF'
import json, sys

a = dict(arg.split("=", 1) for arg in sys.argv[1:])
tool, base, n, rc = a["tool"], a["base"], int(a["n"]), int(a["rc"])
row = {"tool": tool, "n": n, "rc": rc, "load": float(a["load"]), "cmd": open(base + ".cmd").read().strip()}
try:
    user, system, rss_kb = open(base + ".time").read().split()[-3:]
    row["cpu_s"] = float(user) + float(system)
    row["rss_kib"] = int(rss_kb)
    s = json.load(open(base + ".json"))
    m = s["metrics"]
    if tool == "k6":
        row["sent"], row["received"] = m["ws_msgs_sent"]["count"], m["ws_msgs_received"]["count"]
        checks = m.get("checks", {})
        row["failed"] = checks.get("fails", 0)
        row["ended"] = checks.get("fails", 0) + checks.get("passes", 0)
        row["peak"] = m.get("vus_max", {}).get("value", m.get("vus_max", {}).get("max"))
    else:
        if tool.startswith("http"):
            # A request is sent and answered, or failed: nothing is "lost" in flight.
            row["sent"] = row["received"] = m.get("http_reqs", {}).get("count", 0)
        else:
            row["sent"], row["received"] = m["ws_msgs_sent"]["count"], m["ws_msgs_received"]["count"]
        t = s["tasks"]
        row["failed"] = t["failed"] + t["aborted"] + t["timed_out"] + t["trapped"]
        row["ended"] = row["failed"] + t["passed"]
        row["peak"] = s["workers"]["peak"]
        in_flight = [json.loads(l).get("in_flight", 0) for l in open(base + ".jsonl") if '"interval"' in l]
        row["in_flight_max"] = max(in_flight, default=0)
except (OSError, ValueError, KeyError, TypeError) as e:
    err = ""
    try:
        err = open(base + ".err", errors="replace").read().strip().splitlines()[-1][:200]
    except (OSError, IndexError):
        pass
    row["error"] = f"{type(e).__name__}: {e}" + (f"; exit {rc}" if rc else "") + (f"; {err}" if err else "")
print(json.dumps(row))
EOF

# --- the table, from results.jsonl ----------------------------------------------------------------
cat > "$OUT/table.py" <<'EOF'
import json, sys

rows = [json.loads(l) for l in open(sys.argv[1])]
base = {}
print(f"{'tool':14} {'N':>6} {'RSS MiB':>9} {'KiB/sess':>9} {'CPU µs/msg':>11} {'failed':>13} {'lost':>6} "
      f"{'in flight (peak, max)':>22} {'load':>5}")
for r in rows:
    if r.get("breakdown"):
        r["tool"] += "+smaps"  # the breakdown's runs: the same command, its smaps read once
    head = f"{r['tool']:14} {r['n']:>6}"
    if "error" in r:
        print(f"{head}  FAILED: {r['error']}  (load {r['load']:.2f})")
        continue
    if r["n"] == 1:
        base[r["tool"]] = r["rss_kib"]
    per = (f"{(r['rss_kib'] - base[r['tool']]) / (r['n'] - 1):9.1f}"
           if r["n"] > 1 and r["tool"] in base else f"{'':9}")
    cpu = f"{r['cpu_s'] * 1e6 / r['received']:11.1f}" if r["received"] else f"{'n/a':>11}"
    pct = 100 * r["failed"] / r["ended"] if r["ended"] else 0
    fl = f"{r['peak']}, {r['in_flight_max']}" if "in_flight_max" in r else f"{r['peak']}"
    allin = "all" if min(int(r["peak"] or 0), r.get("in_flight_max", r["n"])) >= r["n"] else "NOT all"
    print(f"{head} {r['rss_kib'] / 1024:9.1f} {per} {cpu} {r['failed']:>6} ({pct:4.1f}%) "
          f"{r['sent'] - r['received']:>6} {allin + ' (' + fl + ')':>22} {r['load']:5.2f}")
EOF

# --- the smaps breakdown --------------------------------------------------------------------------
cat > "$OUT/smaps.py" <<'EOF'
"""Attribute a process's Rss and Pss (KiB) to parts, from a copy of /proc/PID/smaps.

The wasmtime pooling allocator reserves its slots up front: each linear memory slot is its
accessible pages followed by a PROT_NONE reservation of gigabytes; each fiber stack slot is a
PROT_NONE guard page then STACK KiB read-write; the table slots are one read-write mapping.
glibc's malloc arenas are 64 MiB-aligned reservations (read-write, then PROT_NONE); threads'
stacks are read-write mappings after a guard page."""
import json, re, sys

path, stack_kib = sys.argv[1], int(sys.argv[2])
vmas, cur = [], None
for line in open(path):
    m = re.match(r"^([0-9a-f]+)-([0-9a-f]+) (\S+) \S+ \S+ \S+\s*(.*)$", line)
    if m:
        cur = {"start": int(m[1], 16), "end": int(m[2], 16), "perm": m[3], "path": m[4].strip(), "rss": 0, "pss": 0}
        cur["kib"] = (cur["end"] - cur["start"]) // 1024
        vmas.append(cur)
    elif cur is not None and line.startswith(("Rss:", "Pss:")):
        cur[line[:3].lower()] = int(line.split()[1])

part = [None] * len(vmas)
GIB = 1 << 20  # in KiB
# Linear memories: each huge PROT_NONE reservation, and the accessible pages just before it.
for i, v in enumerate(vmas):
    if v["perm"].startswith("---") and v["kib"] >= GIB:
        part[i] = "wasm linear memories"
        j = i - 1
        while j >= 0 and not vmas[j]["perm"].startswith("---") and vmas[j]["end"] == vmas[j + 1]["start"]:
            part[j] = "wasm linear memories"
            j -= 1
# Fiber stacks: the longest run of (guard page, STACK KiB read-write) pairs, back to back.
best, run = [], []
for i, v in enumerate(vmas):
    if (v["perm"].startswith("rw") and v["kib"] == stack_kib and not v["path"] and i > 0
            and vmas[i - 1]["perm"].startswith("---") and vmas[i - 1]["kib"] == 4):
        if run and vmas[run[-1]]["end"] != vmas[i - 1]["start"]:
            run = []
        run.append(i)
        if len(run) > len(best):
            best = list(run)
    else:
        if not (v["perm"].startswith("---") and v["kib"] == 4):
            run = []
for i in best:
    part[i] = "wasm fiber stacks"
    part[i - 1] = "wasm fiber stacks"
# Tables: the read-write mapping just before the memories' first pre-guard (wasmtime maps the
# table pool, then the memory pool), when it is large (slots x 4 tables x 160 KiB).
first_mem = next((i for i, p in enumerate(part) if p == "wasm linear memories"), None)
if first_mem is not None:
    j = first_mem - 1
    while j >= 0 and part[j] is None and vmas[j]["perm"].startswith("---"):
        part[j] = "wasm linear memories"  # the pool's leading guard
        j -= 1
    if j >= 0 and part[j] is None and vmas[j]["perm"].startswith("rw") and not vmas[j]["path"]:
        part[j] = "wasm tables"
for i, v in enumerate(vmas):
    if part[i]:
        continue
    p = v["path"]
    if p == "[heap]":
        part[i] = "malloc heap"
    elif p.startswith("["):
        part[i] = "other (" + p + ")"
    elif p.endswith(".cwasm") or "loadhost" in p and "/cache" in p:
        part[i] = "compiled plugin code"
    elif p:
        part[i] = "binary and libraries"
    elif "x" in v["perm"]:
        part[i] = "compiled plugin code"  # deserialized into anonymous executable pages
    elif v["perm"].startswith("rw") and v["start"] % (64 << 20) == 0 and (
            v["kib"] == 65536 or i + 1 < len(vmas) and vmas[i + 1]["perm"].startswith("---")
            and v["kib"] + vmas[i + 1]["kib"] == 65536):
        part[i] = "malloc heap"
        if v["kib"] < 65536:
            part[i + 1] = "malloc heap"
    elif v["perm"].startswith("rw") and i > 0 and vmas[i - 1]["perm"].startswith("---") and vmas[i - 1]["kib"] == 4:
        part[i] = "threads' stacks"
    else:
        part[i] = "other anonymous"

totals = {}
for v, p in zip(vmas, part):
    t = totals.setdefault(p, {"rss": 0, "pss": 0, "vmas": 0, "size_kib": 0})
    t["rss"] += v["rss"]; t["pss"] += v["pss"]; t["vmas"] += 1; t["size_kib"] += v["kib"]
print(json.dumps({"parts": totals, "stack_slots": len(best), "stack_slot_rss_max":
                  max((vmas[i]["rss"] for i in best), default=0)}))
EOF

cat > "$OUT/breakdown.py" <<'EOF'
import json, sys

rows = [json.loads(l) for l in open(sys.argv[1])]
rows = [r for r in rows if r.get("breakdown") and "parts" in r]
if not rows:
    sys.exit()
base = rows[0]
names = sorted({p for r in rows for p in r["parts"]}, key=lambda p: -rows[-1]["parts"].get(p, {}).get("rss", 0))
print(f"{'part':24}" + "".join(f" {'N=' + str(r['n']) + ' Rss MiB':>15} {'Pss MiB':>8}" for r in rows)
      + "".join(f" {'KiB/sess Rss':>13} {'Pss':>7}" for r in rows[1:]))
for name in names + ["total"]:
    def get(r, k):
        if name == "total":
            return sum(p[k] for p in r["parts"].values())
        return r["parts"].get(name, {}).get(k, 0)
    line = f"{name:24}" + "".join(f" {get(r, 'rss') / 1024:15.1f} {get(r, 'pss') / 1024:8.1f}" for r in rows)
    for r in rows[1:]:
        d = r["n"] - base["n"]
        line += f" {(get(r, 'rss') - get(base, 'rss')) / d:13.1f} {(get(r, 'pss') - get(base, 'pss')) / d:7.1f}"
    print(line)
for r in rows:
    print(f"  N={r['n']}: {r['stack_slots']} fiber stack slots found, the most touched "
          f"{r['stack_slot_rss_max']} KiB of {r['stack_kib']}; smaps read {r['smaps_at']} s after the start")
EOF

# --- one bounded, timed run -----------------------------------------------------------------------
# The memory guard: per tool, its first and its latest run's N and peak RSS (KiB).
declare -A first_n first_rss last_n last_rss
projected_ok() { # tool n: 0 when the run is expected to fit MEM_BUDGET_MIB
    local tool=$1 n=$2
    [ -n "${last_n[$tool]:-}" ] || return 0
    # KiB per session between the tool's first and latest runs; 1 MiB until there are two.
    local per=1024
    if [ "${last_n[$tool]}" -gt "${first_n[$tool]}" ]; then
        per=$(( (last_rss[$tool] - first_rss[$tool]) / (last_n[$tool] - first_n[$tool]) ))
    fi
    local need=$(( (last_rss[$tool] + per * (n - last_n[$tool])) / 1024 ))
    if [ "$need" -gt "$MEM_BUDGET_MIB" ]; then
        echo "  $tool N=$n skipped: about $need MiB expected ($per KiB per session so far), over MEM_BUDGET_MIB=$MEM_BUDGET_MIB"
        return 1
    fi
}

# The pid of the tool itself: timeout's child is /usr/bin/time, whose child is the tool.
tool_pid() {
    local t
    t=$(pgrep -P "$1" | head -n 1) || return 1
    pgrep -P "$t" | head -n 1
}

run() { # tool n [breakdown]
    local tool=$1 n=$2 breakdown=${3:-}
    local base="$OUT/runs/$tool-$n${breakdown:+-breakdown}"
    local cmd=()
    case $tool in
        loadhost | async | python)
            local plugin=target/plugins/ws-echo.wasm
            [ "$tool" = async ] && plugin=target/plugins/ws-echo-async.wasm
            [ "$tool" = python ] && plugin=target/plugins/ws-echo-python.wasm
            cmd=("$LOADHOST" run "$plugin" -w "$n" -d "$DURATION" -e MESSAGES=1 -e "TARGET_URL=$ws_url"
                --allow-host "$authority" --summary-json "$base.json" --out "json=$base.jsonl" "${extra_args[@]}") ;;
        http | http-async)
            local plugin=target/plugins/http-get.wasm
            [ "$tool" = http-async ] && plugin=target/plugins/http-get-async.wasm
            cmd=("$LOADHOST" run "$plugin" -w "$n" -d "$DURATION"
                -e "TARGET_URL=http://$authority/delay?ms=$DELAY_MS" --allow-host "$authority"
                --summary-json "$base.json" --out "json=$base.jsonl" "${extra_args[@]}") ;;
        k6)
            cmd=("$K6" run -q --no-color --no-usage-report --address "" --summary-export "$base.json"
                -e "VUS=$n" -e "DURATION=$DURATION" -e "TARGET_URL=$ws_url" bench/k6/ws-echo-ws.js) ;;
    esac
    printf '%q ' "${cmd[@]}" > "$base.cmd"
    local load rc=0
    load=$(cut -d' ' -f1 /proc/loadavg)
    timeout -k 5 $(( dur_s + GRACE )) /usr/bin/time -f '%U %S %M' -o "$base.time" "${cmd[@]}" \
        > "$base.out" 2> "$base.err" &
    current=$!
    if [ -n "$breakdown" ]; then
        sleep "$SMAPS_AT"
        local pid
        if pid=$(tool_pid "$current") && [ -n "$pid" ]; then
            cat "/proc/$pid/smaps" > "$base.smaps" 2>/dev/null || true
        fi
    fi
    wait "$current" || rc=$?
    current=
    local row
    row=$(python3 "$OUT/parse.py" tool="$tool" n="$n" base="$base" rc="$rc" load="$load")
    if [ -n "$breakdown" ] && [ -s "$base.smaps" ]; then
        python3 - "$row" "$(python3 "$OUT/smaps.py" "$base.smaps" "$ASYNC_STACK_KIB")" "$SMAPS_AT" "$ASYNC_STACK_KIB" \
            >> "$OUT/results.jsonl" <<'EOF'
import json, sys
row, parts = json.loads(sys.argv[1]), json.loads(sys.argv[2])
row.update(parts, breakdown=True, smaps_at=int(sys.argv[3]), stack_kib=int(sys.argv[4]))
print(json.dumps(row))
EOF
    else
        printf '%s\n' "$row" >> "$OUT/results.jsonl"
    fi
    python3 - "$row" <<'EOF'
import json, sys
r = json.loads(sys.argv[1])
if "error" in r:
    print(f"  {r['tool']} N={r['n']}: FAILED {r['error']}")
else:
    print(f"  {r['tool']} N={r['n']}: peak RSS {r['rss_kib'] / 1024:.1f} MiB, {r['received']} of {r['sent']} {'responses' if r['tool'].startswith('http') else 'echoes'}, "
          f"{r['failed']} failed, peak {r['peak']}, load {r['load']:.2f}")
EOF
    local kib
    kib=$(python3 -c 'import json, sys; print(json.loads(sys.argv[1]).get("rss_kib", 0))' "$row")
    if [ "$kib" -gt 0 ]; then
        if [ -z "${first_n[$tool]:-}" ]; then first_n[$tool]=$n; first_rss[$tool]=$kib; fi
        last_n[$tool]=$n
        last_rss[$tool]=$kib
    fi
}

echo "bench/sessions.sh: target $url, sessions wait ${DELAY_MS} ms for their echo, runs of $DURATION," \
    "ulimit -n $(ulimit -n), vm.max_map_count $(cat /proc/sys/vm/max_map_count 2>/dev/null || echo '?')," \
    "memory budget $MEM_BUDGET_MIB MiB, $(nproc) cores"
echo "  loadhost: $LOADHOST ${EXTRA_ARGS:+(with $EXTRA_ARGS)}; k6: ${K6:-absent}${K6:+ $("$K6" version 2>/dev/null | head -n 1 | cut -d' ' -f2)}"
# Each plugin once first, unmeasured: its compile (a cold cache: seconds of CPU and a transient
# few hundred MiB for the Python one) weighs on no run below.
for plugin in ws-echo ws-echo-async ws-echo-python; do
    timeout -k 5 $(( 300 + GRACE )) "$LOADHOST" run "target/plugins/$plugin.wasm" -w 1 -d 1s -e MESSAGES=1 \
        -e "TARGET_URL=ws://$authority/ws/echo" --allow-host "$authority" > "$OUT/runs/warm-$plugin.out" 2>&1 \
        || die "the warm-up run of $plugin failed: $(tail -n 3 "$OUT/runs/warm-$plugin.out")"
done
for plugin in http-get http-get-async; do
    [ "$plugin" = http-get ] && [ ${#http_ns[@]} -eq 0 ] && continue
    [ "$plugin" = http-get-async ] && [ ${#http_async_ns[@]} -eq 0 ] && continue
    timeout -k 5 $(( 300 + GRACE )) "$LOADHOST" run "target/plugins/$plugin.wasm" -w 1 -d 1s \
        -e "TARGET_URL=http://$authority/" --allow-host "$authority" > "$OUT/runs/warm-$plugin.out" 2>&1 \
        || die "the warm-up run of $plugin failed: $(tail -n 3 "$OUT/runs/warm-$plugin.out")"
done
for n in "${ns[@]}"; do projected_ok loadhost "$n" && run loadhost "$n"; done
for n in "${async_ns[@]}"; do projected_ok async "$n" && run async "$n"; done
for n in "${k6_ns[@]}"; do projected_ok k6 "$n" && run k6 "$n"; done
for n in "${py_ns[@]}"; do projected_ok python "$n" && run python "$n"; done
for n in "${http_ns[@]}"; do projected_ok http "$n" && run http "$n"; done
for n in "${http_async_ns[@]}"; do projected_ok http-async "$n" && run http-async "$n"; done
for n in "${breakdown_ns[@]}"; do projected_ok loadhost "$n" && run loadhost "$n" breakdown; done

{
    echo
    echo "Sessions in flight at once (each waiting ${DELAY_MS} ms for its echo), runs of $DURATION:"
    python3 "$OUT/table.py" "$OUT/results.jsonl"
    if [ ${#breakdown_ns[@]} -gt 0 ]; then
        echo
        echo "Where the bytes go (smaps of the running loadhost, Rss and Pss by part; per session above N=${breakdown_ns[0]}):"
        python3 "$OUT/breakdown.py" "$OUT/results.jsonl"
    fi
} | tee "$OUT/summary.txt"
