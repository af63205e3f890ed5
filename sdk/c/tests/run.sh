#!/usr/bin/env bash
# End-to-end tests of the C SDK: builds plugins/http-get-c, plugins/noop-c, plugins/ws-echo-c,
# tests/surface and tests/options with sdk/c/build.sh, runs them with `loadhost run` against `loadhost target` on
# 127.0.0.1, and checks each run's summary JSON. Ends with `N passed, N failed`; exits 1 when any
# case failed.
#
#   sdk/c/tests/run.sh            LOADHOST=/path/to/loadhost (default: this repository's
#                                 target/release/loadhost, else `loadhost` on PATH)
# Needs the C toolchain (sdk/c/toolchain.sh install) and python3 (to read the JSON).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
sdk=$(dirname "$here")
root=$(cd "$sdk/../.." && pwd)
if [ -z "${LOADHOST:-}" ]; then
    if [ -x "$root/target/release/loadhost" ]; then LOADHOST="$root/target/release/loadhost"; else LOADHOST=loadhost; fi
fi
export LOADHOST

"$sdk/toolchain.sh" check
work=$(mktemp -d)
target_pid=
cleanup() {
    [ -z "$target_pid" ] || kill "$target_pid" 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT
# Compiled components go to a cache of our own, so runs never touch the user's.
export LOADHOST_CACHE_DIR="$work/cache"

for plugin in "$root/plugins/http-get-c" "$root/plugins/noop-c" "$root/plugins/ws-echo-c" "$here/surface" "$here/options"; do
    "$sdk/build.sh" "$plugin" "$work/$(basename "$plugin").wasm"
done

"$LOADHOST" target --addr 127.0.0.1:0 -d 600s >"$work/target.log" 2>&1 &
target_pid=$!
for _ in $(seq 50); do
    grep -q 'listening on' "$work/target.log" && break
    sleep 0.1
done
addr=$(grep -oE '127\.0\.0\.1:[0-9]+' "$work/target.log" | head -n1)
[ -n "$addr" ] || { echo "loadhost target did not start: $(cat "$work/target.log")" >&2; exit 1; }
url="http://$addr/"

passed=0
failed=0
# run NAME EXPECTED_EXIT PLUGIN ARGS...: one `loadhost run` with --summary-json $work/NAME.json.
run() {
    local name=$1 expected=$2 plugin=$3
    shift 3
    local code=0
    "$LOADHOST" run "$work/$plugin.wasm" --summary-json "$work/$name.json" "$@" >"$work/$name.log" 2>&1 || code=$?
    if [ "$code" -ne "$expected" ]; then
        echo "FAIL $name: exit code $code, expected $expected"
        sed 's/^/    /' "$work/$name.log" | tail -n 20
        failed=$((failed + 1))
        return 1
    fi
}
# expect NAME PYTHON_EXPR: the expression over the summary `s` (a dict) must be true.
expect() {
    local name=$1 expr=$2
    if python3 - "$work/$name.json" "$expr" <<'PY'; then
import json, sys
s = json.load(open(sys.argv[1]))
checks = s["checks"]; tasks = s["tasks"]; metrics = s["metrics"]
sys.exit(0 if eval(sys.argv[2]) else 1)
PY
        echo "ok   $name: $expr"
        passed=$((passed + 1))
    else
        echo "FAIL $name: $expr"
        python3 -c 'import json,sys; s=json.load(open(sys.argv[1])); print("    tasks:", s["tasks"], "\n    checks:", s["checks"])' "$work/$name.json" || true
        failed=$((failed + 1))
    fi
}

# http-get-c: every task one GET, all answered 200.
if run get 0 http-get-c -e TARGET_URL="$url" --allow-host "$addr" -r 50 -d 3s; then
    expect get 'tasks["passed"] == tasks["scheduled"] > 100 and checks["status is 200"] == {"passes": tasks["passed"], "fails": 0}'
    expect get 'metrics["http_reqs"]["count"] == tasks["scheduled"]'
    # It leaves headers and body in the host (discard_headers, discard_body), which still counts them.
    expect get 'metrics["data_received"]["count"] > 0'
fi
# A 5xx is retryable (so retried), another non-200 is failed (not retried). A run in which no task
# passed exits 98 (loadhost fails such a run closed).
if run get-503 98 http-get-c -e TARGET_URL="${url}status?code=503" --allow-host "$addr" -w 1 -n 3 --retries 1; then
    expect get-503 'tasks["failed"] == 3 and tasks["retries"] == 3 and checks["status is 200"]["fails"] == 6'
fi
if run get-404 98 http-get-c -e TARGET_URL="${url}status?code=404" --allow-host "$addr" -w 1 -n 3 --retries 1; then
    expect get-404 'tasks["failed"] == 3 and tasks["retries"] == 0'
fi
# A request the user did not allow is denied by the host, and retryable.
if run get-denied 98 http-get-c -e TARGET_URL="$url" -w 1 -n 3 --retries 1; then
    expect get-denied 'metrics["http_denied"]["count"] == 6 and tasks["retries"] == 3'
fi
# The whole surface: lifecycle, metrics with tags, POST, custom requests, responses without their
# headers or body, the data feed.
printf '{"id": 1}\n{"id": 22}\n' >"$work/feed.jsonl"
if run surface 0 surface -e TARGET_URL="$url" --allow-host "$addr" -e FLAG=" Yes " -w 2 -n 10 --data "$work/feed.jsonl"; then
    expect surface 'tasks["passed"] == 10 and len(checks) == 18 and all(c == {"passes": 10, "fails": 0} for c in checks.values())'
    expect surface 'metrics["c_tasks{scenario:default}"]["count"] == 10 and metrics["c_input_len{kind:feed,lang:c}"]["count"] == 10'
    expect surface 's["teardown_error"] is None and "c_worker" in metrics'
fi
# says NAME TEXT: the run's output holds TEXT.
says() {
    if grep -qF -- "$2" "$work/$1.log"; then
        echo "ok   $1: says $2"
        passed=$((passed + 1))
    else
        echo "FAIL $1: does not say $2"
        sed 's/^/    /' "$work/$1.log" | tail -n 20
        failed=$((failed + 1))
    fi
}
# Each error kind: abort stops the run (exit 4); so does a bad setting, naming it, as in every SDK; a
# metric call the host would drop fails the task naming the call; a failed setup sends nothing.
if run surface-abort 4 surface -e TARGET_URL="$url" --allow-host "$addr" -e ABORT_AT=3 -w 1 -n 10; then
    expect surface-abort 'tasks["aborted"] == 1 and tasks["passed"] == 3'
fi
if run surface-bad-env 4 surface -e TARGET_URL="$url" --allow-host "$addr" -e PORT_OFFSET=abc -w 1 -n 3; then
    expect surface-bad-env 'tasks["aborted"] == 1 and tasks["passed"] == 0'
    # The host keeps every -e value out of what the plugin says (issue 26).
    says surface-bad-env 'PORT_OFFSET=[redacted]: expected an integer'
fi
if run surface-bad-bool 4 surface -e TARGET_URL="$url" --allow-host "$addr" -e FLAG=maybe -w 1 -n 3; then
    says surface-bad-bool 'FLAG=[redacted]: expected a boolean (true/false, 1/0, yes/no, on/off)'
fi
if run surface-bad-metric 98 surface -e TARGET_URL="$url" --allow-host "$addr" -e BAD_METRIC=1 -w 1 -n 3; then
    expect surface-bad-metric 'tasks["failed"] == 3 and "c_nan" not in metrics'
    says surface-bad-metric 'loadhost_trend("c_nan", nan): value must be a finite number'
fi
if run surface-setup 4 surface -e SETUP_FAIL=1 -w 1 -n 3; then
    if grep -q 'setup refused: SETUP_FAIL is set' "$work/surface-setup.log"; then
        echo "ok   surface-setup: exit 4 with the plugin's message"
        passed=$((passed + 1))
    else
        echo "FAIL surface-setup: the plugin's message is not in the output"
        failed=$((failed + 1))
    fi
fi
# Declared options (tests/options): the defaults come from the declarations, values are read by
# their declared type; a required option missing is refused before any load (exit 2); reading an
# option with the function of another type fails the task naming it.
if run options 0 options -e TARGET_URL="$url" --allow-host "$addr" -w 1 -n 3; then
    expect options '[metrics[m]["value"] for m in ("blob_bytes", "pause_ms", "ratio", "verbose", "label_given")] == [1024, 250, 0.5, 0, 0]'
fi
if run options-given 0 options -e TARGET_URL="$url" --allow-host "$addr" -e BLOB_BYTES=" 2048 " -e PAUSE=1m1.5s \
    -e RATIO=1e-1 -e VERBOSE=Yes -e LABEL= -w 1 -n 3; then
    expect options-given '[metrics[m]["value"] for m in ("blob_bytes", "pause_ms", "ratio", "verbose", "label_given")] == [2048, 61500, 0.1, 1, 1]'
fi
if run options-missing 2 options --allow-host "$addr" -w 1 -n 3; then
    says options-missing '-e TARGET_URL is required (url: the page to GET)'
fi
if run options-misuse 98 options -e TARGET_URL="$url" --allow-host "$addr" -e MISUSE=yes -w 1 -n 2; then
    says options-misuse 'loadhost_option_int("PAUSE"): PAUSE is declared duration, which loadhost_option_int does not read'
fi
# ws-echo-c: one WebSocket connection per worker, kept across its tasks, every echo checked; a
# host the user did not allow fails the task (not retryable) saying so.
if run ws 0 ws-echo-c -e TARGET_URL="ws://$addr/ws/echo" -e MESSAGES=5 --allow-host "$addr" -w 2 -n 20; then
    expect ws 'tasks["passed"] == 20 and checks["echo matches"] == {"passes": 100, "fails": 0}'
    expect ws 'metrics["ws_msgs_sent"]["count"] == metrics["ws_msgs_received"]["count"] == 100 and metrics["ws_sessions"]["count"] == 2'
fi
if run ws-denied 98 ws-echo-c -e TARGET_URL="ws://$addr/ws/echo" -w 1 -n 2 --retries 1; then
    expect ws-denied 'tasks["failed"] == 2 and tasks["retries"] == 0 and metrics["ws_denied"]["count"] == 2'
    says ws-denied 'denied: the host is not allowed'
fi
# noop-c: the host's own cost per task.
if run noop 0 noop-c -w 1 -n 20000; then
    expect noop 'tasks["passed"] == 20000'
    python3 -c 'import json,sys; s=json.load(open(sys.argv[1])); print("     noop-c: %.2f us per task (-w 1, %d tasks in %.3f s)" % (s["duration_s"] / s["tasks"]["passed"] * 1e6, s["tasks"]["passed"], s["duration_s"]))' "$work/noop.json"
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
