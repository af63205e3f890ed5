#!/usr/bin/env bash
# What pushing metrics costs a run (docs/outputs.md, "Pushed metrics"): the same open-model load
# run with and without `--out prometheus-rw=…` into a real Prometheus (Debian's, with remote
# write and native histograms), alternating, ROUNDS times. Each run is measured as a user runs
# it: /usr/bin/time's CPU (user + sys) and peak RSS of the loadhost process, beside its summary's
# achieved rate, wait p99 and what the receiver got. The push is per interval (a snapshot of the
# run's series, encoded and POSTed from a thread of its own), so the per-request cost should be
# within the noise of two runs.
#
# The target is nginx when installed (one worker, on loopback), else the built-in target.
# Nothing is asserted; traffic is loopback only; every run is bounded by DURATION and `timeout`.
#
# Usage: bench/export.sh            (after `cargo build --release`, `cargo xtask setup`)
#   LOADHOST=path  RATE=5000  DURATION=10s  ROUNDS=3
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=bench/lib.sh disable=SC1091 # followed when lib.sh is checked too (cargo xtask lint)
. bench/lib.sh

LOADHOST=${LOADHOST:-target/release/loadhost}
RATE=${RATE:-5000}
DURATION=${DURATION:-10s}
ROUNDS=${ROUNDS:-3}
OUT=$PWD/target/bench/export
die() { echo "bench/export.sh: $*" >&2; exit 2; }
[ -x "$LOADHOST" ] || die "no $LOADHOST: run cargo build --release first"
command -v jq > /dev/null || die "jq is needed to read the summaries"
prometheus=$(command -v prometheus || true)
[ -n "$prometheus" ] || die "prometheus is not installed: run cargo xtask setup"
[ -x /usr/bin/time ] || die "/usr/bin/time is needed to measure the process"
rm -rf "$OUT" && mkdir -p "$OUT"

pids=()
cleanup() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

nginx=$(command -v nginx || command -v /usr/sbin/nginx || true)
if [ -n "$nginx" ]; then
    bench_start_nginx "$nginx" "$OUT/nginx" 256 1800 || die "nginx did not start"
    pids+=("$nginx_pid")
    target=nginx
else
    bench_start_target "$LOADHOST" "$OUT" || die "no target to measure against"
    pids+=("$target_pid")
    target="the built-in target"
fi
target_url=$url

prom_port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
printf 'global:\n  scrape_interval: 15s\n' > "$OUT/prometheus.yml"
timeout -k 5 1800 "$prometheus" --config.file="$OUT/prometheus.yml" --storage.tsdb.path="$OUT/tsdb" \
    --web.listen-address="127.0.0.1:$prom_port" --web.enable-remote-write-receiver \
    --enable-feature=native-histograms > "$OUT/prometheus.log" 2>&1 &
pids+=("$!")
for _ in $(seq 100); do
    curl -fsS "http://127.0.0.1:$prom_port/-/ready" > /dev/null 2>&1 && break
    sleep 0.1
done
curl -fsS "http://127.0.0.1:$prom_port/-/ready" > /dev/null || die "prometheus did not start: $(tail -n 3 "$OUT/prometheus.log")"
write_url=http://127.0.0.1:$prom_port/api/v1/write

# run NAME [ARGS...]: one run; prints its line.
run() {
    local name=$1; shift
    /usr/bin/time -f '%U %S %M' -o "$OUT/$name.time" timeout -k 5 120 "$LOADHOST" http "$target_url" \
        -r "$RATE" -d "$DURATION" --summary-json "$OUT/$name.json" "$@" > "$OUT/$name.out" 2> "$OUT/$name.err" || true
    [ -s "$OUT/$name.json" ] || { echo "  $name: no summary ($(tail -n 1 "$OUT/$name.err"))"; return; }
    read -r user sys rss < "$OUT/$name.time"
    jq -r --arg name "$name" --arg user "$user" --arg sys "$sys" --arg rss "$rss" '
        (.metrics.http_reqs.count) as $n
        | (($user | tonumber) + ($sys | tonumber)) as $cpu
        | "  \($name | . + " " * (16 - length)) \($n) requests  \(.rate.achieved_per_s * 10 | round / 10)/s"
          + "  CPU \($cpu * 100 | round / 100) s = \($cpu * 1e6 / $n * 100 | round / 100) µs/req"
          + "  peak RSS \(($rss | tonumber) / 1024 * 10 | round / 10) MiB  wait p99 \(.wait_ms.p99) ms"
          + (if .exports then "  pushed \(.exports.receivers[0].sent), dropped \(.exports.receivers[0].dropped)" else "" end)' \
        "$OUT/$name.json"
}

echo "bench/export.sh: $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg); $RATE/s for $DURATION against $target, $ROUNDS rounds"
for round in $(seq "$ROUNDS"); do
    run "without-$round"
    run "with-rw-$round" --out "prometheus-rw=$write_url"
done
requests=$(curl -fsS "http://127.0.0.1:$prom_port/api/v1/query" --data-urlencode 'query=sum(loadhost_http_reqs_total)' \
    | jq -r '.data.result[0].value[1] // "none"')
echo "  prometheus holds $requests requests in all (the with-rw runs' sum)"
