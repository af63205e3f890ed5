#!/usr/bin/env bash
# Component-model async in wasmtime 48.0.8, measured (issue 31): what one in-flight task costs
# when many tasks share one instance (an async export lifted in the callback form, waiting on an
# async host import: no fiber per task), against today's shape (one pooled instance and one fiber
# stack per in-flight task, `concurrency_support(false)`). See bench/cm-async/README.md.
#
# Builds the standalone prototype in bench/cm-async (its own workspace: host binary + two guest
# components) into CARGO_TARGET_DIR (default ~/.cache/loadhost/cm-async-target, outside the repo),
# then runs every mode, one process per run, and prints a table. Each task only sleeps on the
# host's tokio timer: no network at all. Every run is under `timeout` (RUN_TIMEOUT seconds).
#
#   bench/cm-async.sh                         # about 3 minutes on a quiet machine, after the build
#   NS="1 1000" CPU= NOOP= bench/cm-async.sh  # a quick look
#
# Knobs (environment):
#   NS="1 1000 10000 100000"   tasks in flight per memory run (today's shape: N instances)
#   TODAY_MAX=100000           the largest N tried in today's shape (it needs N pooled instances:
#                              address space, and vm.max_map_count at 6 mappings per instance;
#                              the script never changes the sysctl, a run past it fails and says so)
#   TODAY_RESERVED_NS=""        N for extra runs of today's shape with a 64 MiB reservation per
#                              linear memory (CMA_MEMORY_RESERVATION_MIB=64) instead of 4 GiB, so
#                              the pool fits past ~10,000 instances; past ~10,800 they need
#                              vm.max_map_count raised by hand (6 mappings per instance)
#   PER_INSTANCE=1000          the async shape's second variant: K = N / PER_INSTANCE instances
#   HOLD_MS=3000               how long each in-flight task waits (all N are sampled while waiting)
#   CPU="1 0"                  the wait (ms) of the CPU runs: W=CPU_W workers × CPU_R tasks each
#   CPU_W=1000 CPU_R=100
#   NOOP=1000000               no-op calls per measurement (empty: skip)
#   FAULT_N=1000               tasks on one instance when one of them, halfway, traps, is dropped
#                              by a timeout, or spins under epoch interruption (trap or yield);
#                              the spinning runs take up to 3 × HOLD_MS (empty: skip)
#   SYNC_LIFT_NS="1 1000 10000" N for the sync-lift guest's `do-task` (an async function lifted
#                              with the sync ABI: a fiber per waiting task) and the sync-import
#                              guest's (callback-lifted, calling a sync `wait`) on N instances; one
#                              instance with 2 tasks shows they run one at a time, and the async
#                              guest's sync-typed `do-task-blocking` shows its trap
#   HANDLES_FACTOR=4           a run with N × 3 > 100,000 (wasmtime's default live handles per
#                              store; a waiting task holds 3) on one instance is run three times:
#                              at the default (it fails), with Store::set_max_component_handles(N ×
#                              this), and so again inside tokio::task::unconstrained (no
#                              cooperative budget; the CPU runs are made both ways too)
#   RUN_TIMEOUT=300
# Memory figures: `rss` is VmRSS read while all N tasks are inside the host's `wait`; KiB/task is
# (rss − the same mode's N=1 rss) ÷ (N − 1); Pss likewise from /proc/self/smaps_rollup.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
proj="$here/cm-async"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/loadhost/cm-async-target}"
NS="${NS-1 1000 10000 100000}"
TODAY_MAX="${TODAY_MAX:-100000}"
TODAY_RESERVED_NS="${TODAY_RESERVED_NS-}"
PER_INSTANCE="${PER_INSTANCE:-1000}"
HOLD_MS="${HOLD_MS:-3000}"
CPU="${CPU-1 0}"
CPU_W="${CPU_W:-1000}"
CPU_R="${CPU_R:-100}"
NOOP="${NOOP-1000000}"
FAULT_N="${FAULT_N-1000}"
SYNC_LIFT_NS="${SYNC_LIFT_NS-1 1000 10000}"
HANDLES_FACTOR="${HANDLES_FACTOR:-4}"
RUN_TIMEOUT="${RUN_TIMEOUT:-300}"

echo "building into $CARGO_TARGET_DIR" >&2
(cd "$proj/guest" && CARGO_TARGET_DIR="$CARGO_TARGET_DIR/guest" cargo build --release --target wasm32-wasip2 --quiet)
(cd "$proj" && cargo build --release --quiet)
bin="$CARGO_TARGET_DIR/release/cm-async-bench"
export CMA_WASM_DIR="$CARGO_TARGET_DIR/guest/wasm32-wasip2/release"

out="$CARGO_TARGET_DIR/results-$(date -u +%Y%m%dT%H%M%SZ).txt"
: >"$out"
echo "raw lines: $out (load average at start: $(cut -d' ' -f1-3 /proc/loadavg))" >&2

run() {
    local line rc=0
    line="$(timeout "$RUN_TIMEOUT" "$bin" "$@" 2>&1)" || rc=$?
    if [ "$rc" -ne 0 ]; then
        # The error's chain, without the host's and the guest's backtraces.
        line="mode=error args=[$*] handles=${CMA_MAX_HANDLES:-default} reservation_mib=${CMA_MEMORY_RESERVATION_MIB:-default} \
rc=$rc error=$(printf '%s' "$line" | sed '/^Stack backtrace:/,$d' | grep -vE '<unknown>!|^$' \
            | tr -s ' \n' ' ' | cut -c1-400)"
    fi
    printf '%s load=%s\n' "$line" "$(cut -d' ' -f1 /proc/loadavg)" | tee -a "$out" >&2
}

for n in $NS; do
    if [ "$n" -le "$TODAY_MAX" ]; then run today "$n" "$HOLD_MS" 1; fi
    run async "$n" 1 "$HOLD_MS" 1 callback
    if [ $(( n * 3 )) -gt 100000 ]; then
        CMA_MAX_HANDLES=$(( n * HANDLES_FACTOR )) run async "$n" 1 "$HOLD_MS" 1 callback
        CMA_MAX_HANDLES=$(( n * HANDLES_FACTOR )) CMA_UNCONSTRAINED=1 run async "$n" 1 "$HOLD_MS" 1 callback
    fi
    k=$(( n / PER_INSTANCE ))
    if [ "$k" -gt 1 ]; then run async "$n" "$k" "$HOLD_MS" 1 callback; fi
done
for n in $TODAY_RESERVED_NS; do
    CMA_MEMORY_RESERVATION_MIB=64 run today "$n" "$HOLD_MS" 1
done
if [ -n "$SYNC_LIFT_NS" ]; then
    run async 1 1 "$HOLD_MS" 1 blocking
    for lift in sync-lift sync-import; do
        for n in $SYNC_LIFT_NS; do
            run async "$n" "$n" "$HOLD_MS" 1 "$lift"
        done
        run async 2 1 "$HOLD_MS" 1 "$lift"
    done
fi
for ms in $CPU; do
    for shape in today async; do
        run cpu "$shape" "$CPU_W" "$CPU_R" "$ms"
        CMA_UNCONSTRAINED=1 run cpu "$shape" "$CPU_W" "$CPU_R" "$ms"
    done
done
if [ -n "$FAULT_N" ]; then
    for kind in trap cancel spin-trap spin-yield; do
        run fault "$kind" "$FAULT_N" "$HOLD_MS"
    done
fi
if [ -n "$NOOP" ]; then run noop "$NOOP"; fi

# The table: one row per memory run, KiB per task above the same shape's N=1 run.
echo
awk '
function kv(line, key,   m) { if (match(line, " " key "=[^ ]*")) { m = substr(line, RSTART + length(key) + 2, RLENGTH - length(key) - 2); return m } return "" }
/^mode=today|^mode=async/ {
    mode = kv(" " $0, "mode"); lift = kv($0, "lift"); n = kv($0, "n"); k = kv($0, "k")
    mh = kv($0, "max_handles"); res = kv($0, "reservation_mib"); un = (kv($0, "coop") == "unconstrained") ? ", unconstrained" : ""
    if (mode == "today" && res != "default") { lift = "r" res }
    shape = (mode == "today") ? ((res == "default") ? "today: N instances, 1 fiber each" : "today, " res " MiB reservation") : sprintf("async %s, K=%s%s", lift, (k == n && n != 1) ? "N" : (k == 1 ? "1" : "N/" n / k), (mh != "" && mh != "default") ? ", handles " mh : "") un
    rss = kv($0, "rss_inflight_kib"); pss = kv($0, "smaps_pss_kib"); hwm = kv($0, "hwm_kib")
    if (n == 1) { base_rss[mode lift] = rss; base_pss[mode lift] = pss }
    per = (n > 1 && (mode lift) in base_rss) ? sprintf("%.2f", (rss - base_rss[mode lift]) / (n - 1)) : "-"
    pper = (n > 1 && (mode lift) in base_pss) ? sprintf("%.2f", (pss - base_pss[mode lift]) / (n - 1)) : "-"
    if (kv($0, "all_in_flight") != "true") { per = "-"; pper = "-" }
    printf "| %-34s | %7s | %9.1f | %9.1f | %8s | %8s | %5s | %5s | %7s | %6s | %5s |\n", shape, n, rss / 1024, hwm / 1024, per, pper, kv($0, "linear_kib_per_task"), kv($0, "all_in_flight"), kv($0, "cpu_us_per_task"), kv($0, "maps"), kv($0, "load")
    next
}
/^mode=error/ { print "| error: " $0 " |"; next }
' "$out" | {
    echo "| shape | N | RSS MiB (in flight) | VmHWM MiB | KiB/task | Pss KiB/task | of which linear memory | all in | CPU µs/task | maps | load |"
    echo "|---|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|"
    cat
}
echo
grep -E '^mode=(cpu|fault|noop)' "$out" || true
