#!/usr/bin/env bash
# The edit→run loop of an unbuilt script (`loadhost run app.py` / `loadhost run plugin.js`, the
# runner embedded in the binary), with the Python and JS toolchains hidden, beside today's path
# with them present (the SDK's build.sh, then a run of the component it built).
#
# For each language, on a project `loadhost new NAME --lang python|js` made in a temp folder (its
# app.py / plugin.js: one GET of TARGET_URL with a check "status is 200"), against the built-in
# `loadhost target` on loopback:
#
#   first run ever   `loadhost run FILE -n 1` with a fresh compile cache: the runner is compiled
#                    (wall time and peak RSS, `/usr/bin/time -f '%e %M'`)
#   warm edit→run    EDITS (5) times: rename the check ("status is 200 edit K") and append a
#                    comment, then `loadhost run FILE -n 1`: min, median and max wall time. Each
#                    run must exit 0 and its summary must show the renamed check (the edit ran)
#   build.sh + run   an edit (the check renamed "status is 200 built") as a built plugin takes it:
#                    sdk/python/build.sh or sdk/js/build.sh FOLDER OUT.wasm, then `loadhost run OUT.wasm -n 1`, which
#                    compiles the new component (the wall of both; skipped without the toolchains)
#
# The first two run under `env -i HOME=H PATH=B LOADHOST_TOOLCHAINS=T XDG_CACHE_HOME=C`: H, B and
# T fresh empty folders (so there is no python3, node, componentize-py or componentize-js to
# find: the bench checks that), C a fresh folder, so the compile cache starts empty (it then holds
# only the runners the bench compiled: Python's when JavaScript's first run comes); loadhost is
# run by its absolute path. The third runs in the bench's own environment (its toolchains,
# $LOADHOST_TOOLCHAINS or ~/.cache/loadhost/toolchains) with a fresh LOADHOST_CACHE_DIR.
# Goals (issue 27): warm edit→run ≤ 2 s, first run ≤ 30 s.
#
# It builds the runners and the release binary first (as bench/languages.sh does), so the figures
# are of the code checked out; LOADHOST=/path/to/loadhost skips the builds and uses that binary.
# Every run is bounded (`timeout`, RUN_TIMEOUT s) and by its task count; the target is stopped on
# exit. Each run's output is in target/bench/scripts/, the table also in summary.txt.
#
#   bench/scripts.sh                       about 2 minutes after the builds
#   LOADHOST=path/to/loadhost EDITS=3 LANGS=python bench/scripts.sh
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=bench/lib.sh disable=SC1091 # followed when lib.sh is checked too (cargo xtask lint)
. bench/lib.sh

EDITS=${EDITS:-5}
LANGS=${LANGS:-python js}
RUN_TIMEOUT=${RUN_TIMEOUT:-180}
OUT=target/bench/scripts
read -ra langs <<< "$LANGS"

die() { echo "bench/scripts.sh: $*" >&2; exit 2; }
[[ $EDITS =~ ^[1-9][0-9]*$ ]] || die "EDITS must be a positive integer, not '$EDITS'"
[[ $RUN_TIMEOUT =~ ^[1-9][0-9]*$ ]] || die "RUN_TIMEOUT must be a positive integer, not '$RUN_TIMEOUT'"
command -v timeout >/dev/null || die "needs timeout (coreutils)"
[ -x /usr/bin/time ] || die "needs /usr/bin/time (GNU time) for wall time and peak RSS"

if [ -z "${LOADHOST:-}" ]; then
    cargo xtask runners >/dev/null
    cargo build --release -q -p loadhost
    # The binary just built, wherever cargo puts it (cargo metadata knows which target dir).
    target_dir=$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')
    LOADHOST=$target_dir/release/loadhost
fi
[ -x "$LOADHOST" ] || die "no loadhost binary at $LOADHOST"
LOADHOST=$(cd "$(dirname "$LOADHOST")" && pwd)/$(basename "$LOADHOST") # absolute: env -i has no PATH to find it

rm -rf "$OUT"
load_before=$(cut -d ' ' -f 1-3 /proc/loadavg) # the machine's other load: the figures vary with it
mkdir -p "$OUT"
work=$(mktemp -d)
target_pid=
cleanup() {
    if [ -n "$target_pid" ]; then kill "$target_pid" 2>/dev/null || true; fi
    rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# The built-in target on a free loopback port, for as long as the bench may last.
bench_start_target "$LOADHOST" "$OUT" || die "no target to measure against"

# The hidden environment: fresh empty HOME, PATH and LOADHOST_TOOLCHAINS, a fresh cache.
hidden=$work/hidden
mkdir -p "$hidden/home" "$hidden/bin" "$hidden/toolchains" "$hidden/cache"
hidden_env=(env -i "HOME=$hidden/home" "PATH=$hidden/bin" "LOADHOST_TOOLCHAINS=$hidden/toolchains"
    "XDG_CACHE_HOME=$hidden/cache")
if "${hidden_env[@]}" /bin/sh -c 'command -v python3 || command -v python || command -v node' >/dev/null; then
    die "the hidden environment still finds python3 or node"
fi

# timed LOG -- CMD…: run CMD bounded, its stdout+stderr in LOG, "WALL_S PEAK_KB" in LOG.time;
# returns CMD's status.
timed() {
    local log=$1
    shift 2
    timeout -k 5 "$RUN_TIMEOUT" /usr/bin/time -f '%e %M' -o "$log.time" "$@" > "$log" 2>&1
}
wall() { cut -d ' ' -f 1 "$1.time"; }
rss_mib() { awk '{ printf "%.0f", $2 / 1024 }' "$1.time"; }
run_args=(-n 1 -e "TARGET_URL=$url" --allow-host "127.0.0.1:$port")

declare -A first first_rss edit_med edit_min edit_max built
for lang in "${langs[@]}"; do
    case $lang in
        python) file=app.py ;;
        js) file=plugin.js ;;
        *) die "unknown language '$lang' in LANGS (python js)" ;;
    esac
    "$LOADHOST" new "journey_$lang" --lang "$lang" --dir "$work" > "$OUT/$lang-new.log"
    dir=$work/journey_$lang
    cp "$dir/$file" "$work/$lang-original"
    grep -q 'status is 200' "$work/$lang-original" || die "the $lang template has no check 'status is 200' to rename"

    # (a) the first run ever: the runner compiled into the empty cache.
    timed "$OUT/$lang-first.log" -- "${hidden_env[@]}" "$LOADHOST" run "$dir/$file" "${run_args[@]}" ||
        die "$lang: the first run failed (exit $?): see $OUT/$lang-first.log"
    grep -q "compiling loadhost's" "$OUT/$lang-first.log" ||
        die "$lang: the first run did not compile the runner (was the cache not empty?): see $OUT/$lang-first.log"
    first[$lang]=$(wall "$OUT/$lang-first.log")
    first_rss[$lang]=$(rss_mib "$OUT/$lang-first.log")

    # (b) warm edit→run, EDITS times.
    walls=()
    for k in $(seq "$EDITS"); do
        sed "s/status is 200/status is 200 edit $k/g" "$work/$lang-original" > "$dir/$file"
        printf '%s edit %s of the bench\n' "$([ "$lang" = python ] && echo '#' || echo '//')" "$k" >> "$dir/$file"
        log=$OUT/$lang-edit-$k.log
        timed "$log" -- "${hidden_env[@]}" "$LOADHOST" run "$dir/$file" "${run_args[@]}" ||
            die "$lang: edit $k's run failed (exit $?): see $log"
        grep -q "✓ status is 200 edit $k:" "$log" || die "$lang: edit $k did not show in the summary: see $log"
        ! grep -q "compiling loadhost's" "$log" || die "$lang: edit $k compiled the runner again: see $log"
        walls+=("$(wall "$log")")
    done
    read -r lo med hi < <(printf '%s\n' "${walls[@]}" | sort -n |
        awk '{ v[NR] = $1 } END { m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2; print v[1], m, v[NR] }')
    edit_min[$lang]=$lo edit_med[$lang]=$med edit_max[$lang]=$hi

    # (c) today's path, toolchains present: build.sh, then the new component's first run.
    sed "s/status is 200/status is 200 built/g" "$work/$lang-original" > "$dir/$file"
    build_log=$OUT/$lang-build.log
    if timed "$build_log" -- "sdk/$lang/build.sh" "$dir" "$work/$lang.wasm"; then
        run_log=$OUT/$lang-built-run.log
        timed "$run_log" -- env LOADHOST_CACHE_DIR="$work/built-cache" "$LOADHOST" run "$work/$lang.wasm" "${run_args[@]}" ||
            die "$lang: the built component's run failed (exit $?): see $run_log"
        grep -q "✓ status is 200 built:" "$run_log" || die "$lang: the built component's summary lacks the edit: see $run_log"
        built[$lang]=$(awk -v b="$(wall "$build_log")" -v r="$(wall "$run_log")" \
            'BEGIN { printf "%.1f s (%.1f + %.1f)", b + r, b, r }')
    else
        built[$lang]="skipped: build.sh failed (no toolchain?), see $build_log"
    fi
done

# row CELL…: the cells padded to the columns' widths by characters (printf pads by bytes, and
# "≤", "–" and "→" take three).
widths=(8 26 32 0)
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
    echo "edit→run of an unbuilt script, toolchains hidden (env -i, empty PATH and LOADHOST_TOOLCHAINS, empty compile cache)"
    echo "loadhost $("$LOADHOST" --version | cut -d ' ' -f 2) · $(nproc) CPUs · load average $load_before before the runs · $EDITS edits"
    echo
    row language "first run ever (peak RSS)" "warm edit→run: median (min–max)" "build.sh + first run (build + run)"
    row goal "≤ 30 s" "≤ 2 s" "(today's path, for comparison)"
    for lang in "${langs[@]}"; do
        row "$lang" "${first[$lang]} s (${first_rss[$lang]} MiB)" "${edit_med[$lang]} s (${edit_min[$lang]}–${edit_max[$lang]})" \
            "${built[$lang]}"
    done
} | tee "$OUT/summary.txt"
