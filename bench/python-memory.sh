#!/usr/bin/env bash
# What a Python worker costs in memory: http-get's logic sending GETs to the built-in
# `loadhost target` on loopback, closed model, WORKERS (100) workers (`-w 100 -n 20000`, 200 tasks
# per worker) against one (`-w 1 -n 200 --pace 5ms`), as
#
#   http-get-python (built)  target/plugins/http-get-python.wasm (plugins/http-get-python by build.sh)
#   runner (app.py)          `loadhost run plugins/http-get-python/app.py`: the script, unbuilt
#   rust (reference)         target/plugins/http-get.wasm
#
# Per worker = (the WORKERS-worker run's figure − the 1-worker run's) ÷ (WORKERS − 1), of
#   peak RSS   the loadhost process's, by `/usr/bin/time -f %M` (VmHWM); beside it, as a
#              cross-check, the same from the summary's own figure (--summary-json: host.peak_rss_mb)
#   PSS        the Pss line of /proc/PID/smaps_rollup, read every SAMPLE_MS (10) ms while the run
#              goes: the most of the samples of the run's second half (loaded). PSS counts a page
#              shared by N mappers as 1/N of it in each, so unlike RSS it does not count the
#              snapshot's read-only pages once per worker: it is what a worker really costs (and
#              what a cgroup charges). Goal (issue 27): ≤ 3 MiB per worker.
#   PSS, all   the same over all the samples, a peak. Loading a plugin from the compile cache
#              takes a transient 30 MiB for a moment (the 1-worker run's peak RSS is 115 MiB for the
#              runner, about 84 once loaded), which a sampler catches or misses by chance: this figure
#              varies by ±0.2 MiB per worker with it, and is lower when it was caught.
# The 1-worker run paces its tasks (--pace PACE, 5ms: about 1 s for 200 tasks) so that its loaded
# half is sampled; the WORKERS-worker run goes flat out (5–10 s), its peak coming at the end.
# The runs use a private copy of the binary and a private compile cache (see below); each plugin
# runs once with -n 1 first, so its compile does not weigh on the peaks. ROUNDS (2) rounds; the
# table shows the range over them. sdk/python/README.md ("Memory") explains where the pages go.
#
# It builds the runners, the plugins and the release binary first (as bench/languages.sh does), so
# the figures are of the code checked out; LOADHOST=/path/to/loadhost skips the builds and uses that
# binary, with the plugins from PLUGINS (default target/plugins). Every run is bounded (`timeout`,
# RUN_TIMEOUT s, and its task count); the target is stopped on exit. Each run's output and summary
# are in target/bench/python-memory/runs/, the table also in target/bench/python-memory/summary.txt.
#
#   bench/python-memory.sh                 about 2–3 minutes after the builds (1 of them compiling)
#   LOADHOST=path/to/loadhost PLUGINS=dir ROUNDS=1 bench/python-memory.sh
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=bench/lib.sh disable=SC1091 # followed when lib.sh is checked too (cargo xtask lint)
. bench/lib.sh

ROUNDS=${ROUNDS:-2}
WORKERS=${WORKERS:-100}
TASKS_PER_WORKER=${TASKS_PER_WORKER:-200}
RUN_TIMEOUT=${RUN_TIMEOUT:-180}
SAMPLE_MS=${SAMPLE_MS:-10}
PACE=${PACE:-5ms}
OUT=target/bench/python-memory

die() { echo "bench/python-memory.sh: $*" >&2; exit 2; }
for n in "$ROUNDS" "$TASKS_PER_WORKER" "$RUN_TIMEOUT" "$SAMPLE_MS"; do
    [[ $n =~ ^[1-9][0-9]*$ ]] || die "ROUNDS, TASKS_PER_WORKER, RUN_TIMEOUT and SAMPLE_MS must be positive integers, not '$n'"
done
[[ $PACE =~ ^[0-9]+(ms|s)$ ]] || die "PACE must be a duration in ms or s (5ms), not '$PACE'"
{ [[ $WORKERS =~ ^[1-9][0-9]*$ ]] && [ "$WORKERS" -ge 2 ]; } || die "WORKERS must be an integer ≥ 2, not '$WORKERS'"
command -v timeout >/dev/null || die "needs timeout (coreutils)"
command -v python3 >/dev/null || die "needs python3 (to read the summary JSON)"
[ -x /usr/bin/time ] || die "needs /usr/bin/time (GNU time) for the peak RSS"
[ -r /proc/self/smaps_rollup ] || die "needs /proc/PID/smaps_rollup (Linux 4.14+) for the PSS"

if [ -z "${LOADHOST:-}" ]; then
    cargo xtask runners >/dev/null
    cargo xtask plugins >/dev/null
    cargo build --release -q -p loadhost
    # The binary just built, wherever cargo puts it (cargo metadata knows which target dir).
    target_dir=$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')
    LOADHOST=$target_dir/release/loadhost
fi
[ -x "$LOADHOST" ] || die "no loadhost binary at $LOADHOST"
PLUGINS=${PLUGINS:-target/plugins}
names=(http-get-python runner rust)
declare -A plugin=(
    [http-get-python]=$PLUGINS/http-get-python.wasm
    [runner]=plugins/http-get-python/app.py
    [rust]=$PLUGINS/http-get.wasm
)
declare -A label=(
    [http-get-python]="http-get-python (built)"
    [runner]="runner (app.py, unbuilt)"
    [rust]="rust http-get (reference)"
)
for name in "${names[@]}"; do
    [ -f "${plugin[$name]}" ] || die "${plugin[$name]} not found (cargo xtask plugins builds it; PLUGINS=DIR to take it from DIR)"
done

rm -rf "$OUT"
load_before=$(cut -d ' ' -f 1-3 /proc/loadavg) # the machine's other load: the figures vary with it
mkdir -p "$OUT/runs"
work=$(mktemp -d)
target_pid=
cleanup() {
    if [ -n "$target_pid" ]; then kill "$target_pid" 2>/dev/null || true; fi
    rm -rf "$work"
}
trap cleanup EXIT
# A private copy of the binary and a private compile cache: PSS divides a file's mapped pages among
# every process that maps them, so another loadhost (of another user, a test) running the same
# binary or the same compiled plugin would lower this one's PSS by up to 20 MiB, by chance.
cp "$LOADHOST" "$work/loadhost"
LOADHOST=$work/loadhost
export LOADHOST_CACHE_DIR=$work/cache
trap 'exit 130' INT
trap 'exit 143' TERM

# The built-in target on a free loopback port, for as long as the bench may last.
bench_start_target "$LOADHOST" "$OUT" || die "no target to measure against"

sample_s=$(awk -v ms="$SAMPLE_MS" 'BEGIN { printf "%.3f", ms / 1000 }')

# measure NAME WORKERS TASKS RUN [PACE]: one bounded run of NAME's plugin, closed model (each worker
# starting a task at most every PACE); sets rss_kb (by /usr/bin/time), pss_kb (the most of
# smaps_rollup's Pss over the run's second half of samples: loaded), pss_all_kb (over all of them)
# and json_mib (the summary's host.peak_rss_mb). Its output is in runs/RUN.log, its summary in
# runs/RUN.json, its Pss samples (kB, every SAMPLE_MS) in runs/RUN.pss.
measure() {
    local name=$1 workers=$2 tasks=$3 run=$4 pace=${5:-} log=$OUT/runs/$4 pid='' tpid status k v _
    rm -f "$log.pid"
    : > "$log.pss"
    # sh records its own pid, then execs loadhost: that pid is loadhost's, /usr/bin/time its parent.
    # shellcheck disable=SC2016 # $$ and $@ are the inner sh's
    timeout -k 5 "$RUN_TIMEOUT" /usr/bin/time -f '%M' -o "$log.time" \
        sh -c 'echo $$ > "$0"; exec "$@"' "$log.pid" "$LOADHOST" run "${plugin[$name]}" -w "$workers" -n "$tasks" \
        ${pace:+--pace "$pace"} -e "TARGET_URL=$url" --allow-host "127.0.0.1:$port" --summary-json "$log.json" \
        > "$log.log" 2>&1 &
    tpid=$!
    while [ ! -s "$log.pid" ] && kill -0 "$tpid" 2>/dev/null; do sleep 0.01; done
    pid=$(cat "$log.pid" 2>/dev/null || true)
    while [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; do
        {
            while read -r k v _; do
                if [ "$k" = Pss: ]; then echo "$v" >> "$log.pss"; break; fi
            done < "/proc/$pid/smaps_rollup"
        } 2>/dev/null || true
        sleep "$sample_s"
    done
    status=0
    wait "$tpid" || status=$?
    [ "$status" -eq 0 ] || die "$run: loadhost exited $status: see $log.log"
    grep -q ", $tasks passed" "$log.log" || die "$run: not every task passed: see $log.log"
    rss_kb=$(tail -n 1 "$log.time")
    read -r pss_all_kb pss_kb samples < <(awk '{ v[NR] = $1; if ($1 > all) all = $1 }
        END { for (i = int(NR / 2) + 1; i <= NR; i++) if (v[i] > late) late = v[i]; print all + 0, late + 0, NR }' "$log.pss")
    json_mib=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["host"]["peak_rss_mb"])' "$log.json")
}

# per_worker ONE MANY [SCALE]: (MANY − ONE) ÷ (WORKERS − 1) ÷ SCALE, in MiB with one decimal.
per_worker() { awk -v a="$1" -v b="$2" -v n="$WORKERS" -v s="${3:-1024}" 'BEGIN { printf "%.1f", (b - a) / (n - 1) / s }'; }
# range VALUES…: "min–max", or the value when they are all equal.
range() { printf '%s\n' "$@" | sort -n | awk '{ v[NR] = $1 } END { print (v[1] == v[NR]) ? v[1] : v[1] "–" v[NR] }'; }

declare -A rss pss pss_all json peaks
for name in "${names[@]}"; do
    measure "$name" 1 1 "$name-warm"
    grep -q 'compiled in\|from the compile cache in' "$OUT/runs/$name-warm.log" || die "$name: no compile line: see $OUT/runs/$name-warm.log"
done
for round in $(seq "$ROUNDS"); do
    for name in "${names[@]}"; do
        measure "$name" 1 "$TASKS_PER_WORKER" "$name-w1-r$round" "$PACE"
        [ "$samples" -ge 10 ] || die "$name-w1-r$round: only $samples PSS samples (a longer PACE?)"
        one_rss=$rss_kb one_pss=$pss_kb one_pss_all=$pss_all_kb one_json=$json_mib
        measure "$name" "$WORKERS" $((WORKERS * TASKS_PER_WORKER)) "$name-w$WORKERS-r$round"
        rss[$name]+=" $(per_worker "$one_rss" "$rss_kb")"
        pss[$name]+=" $(per_worker "$one_pss" "$pss_kb")"
        pss_all[$name]+=" $(per_worker "$one_pss_all" "$pss_all_kb")"
        json[$name]+=" $(per_worker "$one_json" "$json_mib" 1)"
        peaks[$name]+=" $(awk -v a="$one_rss" -v b="$rss_kb" -v c="$one_pss" -v d="$pss_kb" \
            'BEGIN { printf "%.0f/%.0f→%.0f/%.0f", a / 1024, c / 1024, b / 1024, d / 1024 }')"
        printf '%s round %s: 1 worker RSS %s KiB PSS %s (all samples %s) KiB · %s workers RSS %s KiB PSS %s (%s) KiB\n' \
            "$name" "$round" "$one_rss" "$one_pss" "$one_pss_all" "$WORKERS" "$rss_kb" "$pss_kb" "$pss_all_kb" >> "$OUT/peaks.txt"
    done
done

# row CELL…: the cells padded to the columns' widths by characters (printf pads by bytes, and "≤",
# "–" and "→" take more than one).
widths=(26 20 20 20 22 0)
row() {
    local i=0 cell chars line=
    for cell in "$@"; do
        chars=$(printf '%s' "$cell" | LC_ALL=C tr -d '\200-\277' | wc -c)
        [ "$i" -eq 0 ] || line+=" | "
        line+=$cell$(printf '%*s' $((widths[i] > chars ? widths[i] - chars : 0)) '')
        i=$((i + 1))
    done
    printf '%s\n' "${line%"${line##*[! ]}"}"
}
{
    echo "memory per worker: ($WORKERS workers − 1 worker) ÷ $((WORKERS - 1)), closed model, $TASKS_PER_WORKER tasks per worker, GET of loadhost target on loopback"
    echo "loadhost $("$LOADHOST" --version | cut -d ' ' -f 2) · $(nproc) CPUs · load average $load_before before the runs · $ROUNDS rounds (ranges over them)"
    echo
    row plugin "peak RSS" "PSS (loaded)" "PSS, all samples" "summary's peak RSS" "MiB, 1 → $WORKERS workers: peak RSS/PSS"
    row "goal (per worker)" "" "≤ 3 MiB" "" "(cross-check)" ""
    for name in "${names[@]}"; do
        # shellcheck disable=SC2086 # the per-round figures, split on purpose
        row "${label[$name]}" "$(range ${rss[$name]}) MiB" "$(range ${pss[$name]}) MiB" "$(range ${pss_all[$name]}) MiB" \
            "$(range ${json[$name]}) MiB" "${peaks[$name]# }"
    done
} | tee "$OUT/summary.txt"
