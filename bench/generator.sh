#!/usr/bin/env bash
# The generator's verdict on itself (docs/outputs.md, "The generator's verdict"), measured: the
# same loads run as is and with the generator starved, and for each the verdict per interval and
# the figures behind it are printed, so the rules' thresholds can be checked against this machine.
#
#   quiet      an open model at RATE (200/s) for DURATION against the built-in target, as is:
#              healthy in every interval on an idle machine
#   hog        the same, loadhost pinned to core 0 beside a CPU hog pinned there (`taskset`)
#   hog-closed two workers looping, pinned beside the hog: a loop waits for its core
#   quota      two workers looping in a cgroup of 0.2 CPU (when one can be made: root, cgroup
#              v1 or v2 with the cpu controller): throttled
#   nginx-1cpu 64 workers looping unthrottled against nginx, loadhost and nginx both pinned to
#              core 0 (when nginx is installed): who is saturated, the generator or the target?
#
# Each run writes its summary JSON; the table shows per run the verdict, its interval counts, the
# largest of each figure and the service p99, then the sentence. Nothing is asserted: the e2e
# tests (tests/e2e/generator_health.rs) assert what holds on any machine; this prints what this
# machine does. Traffic is loopback only; every run is bounded by DURATION (default 10s) and
# `timeout`.
#
# Usage: bench/generator.sh            (after `cargo build --release`)
#   LOADHOST=path  DURATION=10s  RATE=200  RUNS="quiet hog hog-closed quota nginx-1cpu"
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=bench/lib.sh disable=SC1091 # followed when lib.sh is checked too (cargo xtask lint)
. bench/lib.sh

LOADHOST=${LOADHOST:-target/release/loadhost}
DURATION=${DURATION:-10s}
RATE=${RATE:-200}
RUNS=${RUNS:-quiet hog hog-closed quota nginx-1cpu}
OUT=$PWD/target/bench/generator
die() { echo "bench/generator.sh: $*" >&2; exit 2; }
[ -x "$LOADHOST" ] || die "no $LOADHOST: run cargo build --release first"
command -v jq > /dev/null || die "jq is needed to read the summaries"
mkdir -p "$OUT"

pids=()
cgroup=
cleanup() {
    for pid in "${pids[@]}"; do kill -- "-$pid" 2>/dev/null || kill "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
    if [ -n "$cgroup" ]; then rmdir "$cgroup" 2>/dev/null || true; fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

bench_start_target "$LOADHOST" "$OUT" || die "no target to measure against"
pids+=("$target_pid")
builtin_url=$url

# A CPU hog pinned to core 0, in its own process group, for at most a minute.
start_hog() {
    setsid taskset -c 0 timeout 60 sh -c 'while :; do :; done' &
    hog=$!
    pids+=("$hog")
}
stop_hog() { kill -- "-$hog" 2>/dev/null || kill "$hog" 2>/dev/null || true; }

# A cgroup of 0.2 CPU (v2 `cpu.max`, else v1 `cpu.cfs_quota_us`); its cgroup.procs path, or
# nothing when none can be made.
make_quota() {
    local name=loadhost-bench-$$
    if grep -qw cpu /sys/fs/cgroup/cgroup.controllers 2>/dev/null; then
        echo +cpu > /sys/fs/cgroup/cgroup.subtree_control 2>/dev/null || true
        if mkdir "/sys/fs/cgroup/$name" 2>/dev/null && echo "20000 100000" > "/sys/fs/cgroup/$name/cpu.max"; then
            cgroup=/sys/fs/cgroup/$name
            return 0
        fi
    fi
    if mkdir "/sys/fs/cgroup/cpu/$name" 2>/dev/null \
        && echo 100000 > "/sys/fs/cgroup/cpu/$name/cpu.cfs_period_us" \
        && echo 20000 > "/sys/fs/cgroup/cpu/$name/cpu.cfs_quota_us"; then
        cgroup=/sys/fs/cgroup/cpu/$name
        return 0
    fi
    return 1
}

# run NAME PREFIX... -- LOADHOST-ARGS...: one run, its summary in $OUT/NAME.json.
run() {
    local name=$1; shift
    local prefix=()
    while [ "$1" != "--" ]; do prefix+=("$1"); shift; done
    shift
    timeout -k 5 120 "${prefix[@]}" "$LOADHOST" http "$@" -d "$DURATION" --summary-json "$OUT/$name.json" \
        > "$OUT/$name.out" 2> "$OUT/$name.err" || true
    [ -s "$OUT/$name.json" ] || { echo "  $name: no summary ($(tail -n 1 "$OUT/$name.err"))"; return; }
    jq -r --arg name "$name" '
        def pct: if . == null then "-" else (. * 100 | floor | tostring) + "%" end;
        def ms: if . == null then "-" else (. * 10 | round / 10 | tostring) + "ms" end;
        .generator as $g
        | "  \($name | .[0:11] | . + " " * (11 - length)) \($g.verdict // "-")  judged \($g.verdicts.judged) degraded \($g.verdicts.degraded) saturated \($g.verdicts.saturated)"
          + "  cpu \($g.cpu.max | pct) rq_max \($g.run_queue_max.max | pct) throttled \($g.throttled.max | pct)"
          + " steal \($g.steal.max | pct) loop_load \($g.loop_load.max | pct) overshoot \($g.overshoot_ms.max | ms) service_p99 \(.service_ms.p99 | ms)"
          + "  limit \(.verdict.limit // "none")"
          + (if $g.why then "\n      \($g.why)" else "" end)' "$OUT/$name.json"
}

echo "bench/generator.sh: $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg), $DURATION per run"
for name in $RUNS; do
    case $name in
        quiet) run quiet -- "$builtin_url" -r "$RATE" ;;
        hog)
            start_hog
            run hog taskset -c 0 -- "$builtin_url" -r "$RATE"
            stop_hog ;;
        hog-closed)
            start_hog
            run hog-closed taskset -c 0 -- "$builtin_url" -w 2
            stop_hog ;;
        quota)
            if ! make_quota; then echo "  quota: skipped (no CPU cgroup can be made here)"; continue; fi
            # shellcheck disable=SC2016 # the inner shell expands them: it joins the cgroup, then runs loadhost
            run quota sh -c 'echo $$ > "$0/cgroup.procs" && exec "$@"' "$cgroup" -- "$builtin_url" -w 2 ;;
        nginx-1cpu)
            nginx=$(command -v nginx || command -v /usr/sbin/nginx || true)
            if [ -z "$nginx" ]; then echo "  nginx-1cpu: skipped (nginx is not installed)"; continue; fi
            NGINX_CPUS=0 bench_start_nginx "$nginx" "$OUT/nginx" 256 300 || die "nginx did not start"
            pids+=("$nginx_pid")
            run nginx-1cpu taskset -c 0 -- "$url" -w 64
            kill "$nginx_pid" 2>/dev/null || true ;;
        *) die "unknown run '$name' in RUNS (quiet hog hog-closed quota nginx-1cpu)" ;;
    esac
done
