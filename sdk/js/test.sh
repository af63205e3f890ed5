#!/usr/bin/env bash
# End-to-end test of the JavaScript SDK: runs the unit tests of lib/ws.js, lib/grpc.js and the script
# runner's loader (test/unit, on Node.js), builds plugins/http-get-js, plugins/noop-js,
# plugins/ws-echo-js, plugins/grpc-echo-js, the SDK-surface fixture (test/surface), the SDK-checks
# fixture (test/checks) and a project made from template/, then runs them with the real loadhost
# against its built-in target and checks the summary JSON (the WebSocket and gRPC examples only
# when the target serves them).
# Needs the toolchain (toolchain.sh install).
#
#   sdk/js/test.sh [LOADHOST]      default: target/release/loadhost of this repository
#
# The last line is `N passed, M failed`; the exit code is non-zero when anything failed. Compiled
# plugins go to $LOADHOST_CACHE_DIR when it is set, else to a temporary folder (first compile of a
# 12 MB JS component: 10-30 s on two cores).
set -uo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
loadhost="${1:-$repo/target/release/loadhost}"
[ -x "$loadhost" ] || {
    echo "test.sh: no loadhost binary at $loadhost" >&2
    exit 2
}
"$here/toolchain.sh" check || exit 1

# A work folder whose path has a space, so every build and run proves paths with spaces work.
work="$(mktemp -d /tmp/loadhost-js-test.XXXXXX)/with space"
mkdir -p "$work"
export LOADHOST_CACHE_DIR="${LOADHOST_CACHE_DIR:-$work/cache}"
target_pid=""
cleanup() {
    [ -n "$target_pid" ] && kill "$target_pid" 2>/dev/null
    rm -rf "$(dirname "$work")"
}
trap cleanup EXIT

passed=0
failed=0
# ok NAME STATUS: records one test's result (STATUS 0: passed).
ok() {
    if [ "$2" -eq 0 ]; then
        passed=$((passed + 1))
        echo "ok   $1"
    else
        failed=$((failed + 1))
        echo "FAIL $1"
    fi
}

# js FILE EXPR: evaluates EXPR with `s` bound to the summary JSON in FILE; exit 0 when truthy.
js() {
    node -e 'const s = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
             const v = eval(process.argv[2]); if (!v) { console.error("  false:", process.argv[2]); process.exit(1); }' "$1" "$2"
}

# build NAME DIR: builds DIR into $work/NAME.wasm (the log goes to $work/NAME.build).
build() {
    "$here/build.sh" "$2" "$work/$1.wasm" >"$work/$1.build" 2>&1
    local rc=$?
    ok "build $1" $rc
    [ $rc -eq 0 ] || cat "$work/$1.build"
    return $rc
}

# run NAME ARGS…: runs loadhost with ARGS, summary in $work/NAME.json, output in $work/NAME.out;
# returns loadhost's exit code.
run() {
    local name="$1"
    shift
    "$loadhost" run "$@" --summary-json "$work/$name.json" >"$work/$name.out" 2>&1
}

# The SDK's pure logic (lib/ws.js, lib/grpc.js) on Node.js, with the host's imports faked.
node --import "$here/test/unit/register.mjs" "$here/test/unit/sdk.test.mjs" >"$work/unit.out" 2>&1
rc=$?
ok "unit: lib/ws.js and lib/grpc.js against faked host imports ($(sed -n 's/^# pass //p' "$work/unit.out") tests)" $rc
[ $rc -eq 0 ] || cat "$work/unit.out"

# The script runner's module loading (runner/), on Node.js with acorn from the toolchain.
prefix="${LOADHOST_TOOLCHAINS:-${XDG_CACHE_HOME:-$HOME/.cache}/loadhost/toolchains}/js"
ACORN="$prefix/node_modules/acorn/dist/acorn.mjs" node "$here/test/unit/runner.test.mjs" >"$work/runner-unit.out" 2>&1
rc=$?
ok "unit: the runner's import/export rewrite and loader ($(sed -n 's/^# pass //p' "$work/runner-unit.out") tests)" $rc
[ $rc -eq 0 ] || cat "$work/runner-unit.out"

# The built-in target on a free port.
"$loadhost" target --addr 127.0.0.1:0 -d 10m >"$work/target.out" 2>&1 &
target_pid=$!
for _ in $(seq 50); do
    grep -q 'listening on' "$work/target.out" && break
    sleep 0.1
done
base="$(sed -n 's/.*listening on \(http:[^ ]*\).*/\1/p' "$work/target.out")"
hostport="${base#http://}"
[ -n "$base" ] || {
    echo "test.sh: the target did not start: $(cat "$work/target.out")" >&2
    exit 1
}
allow=(--allow-host "$hostport")

if build http-get "$repo/plugins/http-get-js"; then
    p="$work/http-get.wasm"
    run get "$p" -e "TARGET_URL=$base/" "${allow[@]}" -r 50 -d 2s
    js "$work/get.json" 's.tasks.scheduled > 0 && s.tasks.passed === s.tasks.scheduled
        && s.checks["status is 200"].passes === s.tasks.scheduled && s.checks["status is 200"].fails === 0
        && s.metrics.http_reqs.count === s.tasks.scheduled'
    ok "http-get: every task passes its check, one request each" $?
    # It leaves the headers and the body in the host, which still counts every byte received.
    js "$work/get.json" 's.metrics.data_received.count > 0'
    ok "http-get: withoutHeaders().discardBody() responses still count in data_received" $?
    run get503 "$p" -e "TARGET_URL=$base/status?code=503" "${allow[@]}" -n 2 -w 1 --retries 1
    js "$work/get503.json" 's.tasks.failed === 2 && s.tasks.retries === 2'
    ok "http-get: a 5xx is retryable" $?
    run get404 "$p" -e "TARGET_URL=$base/status?code=404" "${allow[@]}" -n 2 -w 1 --retries 1
    js "$work/get404.json" 's.tasks.failed === 2 && s.tasks.retries === 0'
    ok "http-get: a 404 fails without retry" $?
    run getdenied "$p" -e "TARGET_URL=$base/" -n 2 -w 1 --retries 1
    js "$work/getdenied.json" 's.tasks.failed === 2 && s.tasks.retries === 2 && s.metrics.http_denied.count === 4'
    ok "http-get: a denied request is retryable" $?
fi

if build noop "$repo/plugins/noop-js"; then
    run noop "$work/noop.wasm" -n 2000 -w 1
    js "$work/noop.json" 's.tasks.passed === 2000'
    ok "noop: 2000 tasks pass" $?
fi

if build surface "$here/test/surface"; then
    p="$work/surface.wasm"
    env=(-e "TARGET_URL=$base/" -e N=42 -e FLAG=yes -e "S=hello world")
    run surface "$p" "${env[@]}" "${allow[@]}" -n 10 -w 1
    js "$work/surface.json" 's.tasks.passed === 4 && s.tasks.failed === 6 && s.tasks.aborted === 0'
    ok "surface: outcomes by iteration (4 passed, 6 failed)" $?
    js "$work/surface.json" 'Object.keys(s.checks).length >= 13
        && Object.values(s.checks).every(c => c.fails === 0 && c.passes > 0)'
    ok "surface: every check passes" $?
    js "$work/surface.json" 's.metrics.units.count === 20 && s.metrics["tasks_by_scenario{scenario:default}"].count === 10
        && s.metrics.last_worker.value === 0 && s.metrics.iteration_mod_10.count === 10 && s.teardown_error == null'
    ok "surface: counters, gauge and trend with tags" $?
    printf '{"id":1}\n{"id":2}\n' >"$work/rows.jsonl"
    run surfacedata "$p" "${env[@]}" "${allow[@]}" --data "$work/rows.jsonl" -n 4 -w 1
    js "$work/surfacedata.json" 's.checks["input row"].passes === 4'
    ok "surface: task input from --data" $?
    run surfaceabort "$p" "${env[@]}" -e ABORT_AT=5 "${allow[@]}" -n 10 -w 1
    rc=$?
    [ "$rc" -eq 4 ] && js "$work/surfaceabort.json" 's.tasks.aborted === 1'
    ok "surface: abort() stops the run with exit 4" $?
    run surfacesetup "$p" -e SETUP_FAIL=1 -n 2 -w 1
    [ $? -eq 4 ]
    ok "surface: a failing setup exits 4" $?
fi

# says NAME TEXT: the run's output holds TEXT.
says() {
    grep -qF -- "$2" "$work/$1.out" || {
        echo "  not in $1's output: $2"
        sed 's/^/    /' "$work/$1.out" | tail -n 15
        return 1
    }
}

# The WebSocket and gRPC examples run when the target serves them (a host built before they
# existed still passes the rest): a WebSocket handshake on /ws/echo, an h2c gRPC call.
serves_ws() {
    node -e 'const req = require("http").request(process.argv[1] + "/ws/echo", { headers: { Connection: "Upgrade",
        Upgrade: "websocket", "Sec-WebSocket-Version": "13", "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==" } });
      req.on("upgrade", (res, socket) => { socket.destroy(); process.exit(0); });
      req.on("response", () => process.exit(1)); req.on("error", () => process.exit(1)); req.end();
      setTimeout(() => process.exit(1), 5000);' "$base"
}
serves_grpc() {
    node -e 'const session = require("http2").connect(process.argv[1]);
      session.on("error", () => process.exit(1));
      const req = session.request({ ":method": "POST", ":path": "/loadhost.target.Echo/Unary", "content-type": "application/grpc", te: "trailers" });
      req.on("response", (h) => { session.close(); process.exit(h["content-type"]?.startsWith("application/grpc") ? 0 : 1); });
      req.on("error", () => process.exit(1)); req.end(Buffer.from([0, 0, 0, 0, 0]));
      setTimeout(() => process.exit(1), 5000);' "$base"
}

if build ws-echo "$repo/plugins/ws-echo-js"; then
    if serves_ws; then
        p="$work/ws-echo.wasm"
        wsbase="ws://$hostport/ws/echo"
        run wsecho "$p" -e "TARGET_URL=$wsbase" -e MESSAGES=5 "${allow[@]}" -n 20 -w 2
        js "$work/wsecho.json" 's.tasks.passed === 20 && s.checks["echo matches"].passes === 100
            && s.checks["echo matches"].fails === 0'
        ok "ws-echo: 20 tasks of 5 messages, every echo matches" $?
        run wsdenied "$p" -e "TARGET_URL=$wsbase" -n 2 -w 1 --retries 1
        js "$work/wsdenied.json" 's.tasks.failed === 2 && s.tasks.retries === 0' && says wsdenied denied
        ok "ws-echo: a denied host fails without retry, saying denied" $?
    else
        echo "skip ws-echo runs: this loadhost's target has no /ws/echo"
    fi
fi

if build grpc-echo "$repo/plugins/grpc-echo-js"; then
    if serves_grpc; then
        p="$work/grpc-echo.wasm"
        run grpcecho "$p" -e "TARGET_URL=$base" "${allow[@]}" -n 20 -w 2
        js "$work/grpcecho.json" 's.tasks.passed === 20 && s.checks["echo matches"].passes === 20'
        ok "grpc-echo: 20 unary calls echo" $?
        run grpcstream "$p" -e "TARGET_URL=$base" -e MODE=stream -e MESSAGES=10 "${allow[@]}" -n 4 -w 1
        js "$work/grpcstream.json" 's.tasks.passed === 4 && s.checks["echo matches"].passes === 40'
        ok "grpc-echo: a bidi stream of 10 messages per task echoes" $?
        run grpc14 "$p" -e "TARGET_URL=$base" -e GRPC_STATUS=14 "${allow[@]}" -n 2 -w 1 --retries 1
        js "$work/grpc14.json" 's.tasks.failed === 2 && s.tasks.retries === 2'
        ok "grpc-echo: status 14 is retryable" $?
        run grpc5 "$p" -e "TARGET_URL=$base" -e GRPC_STATUS=5 "${allow[@]}" -n 2 -w 1 --retries 1
        js "$work/grpc5.json" 's.tasks.failed === 2 && s.tasks.retries === 0'
        ok "grpc-echo: another status fails without retry" $?
    else
        echo "skip grpc-echo runs: this loadhost's target has no gRPC echo"
    fi
fi

if build checks "$here/test/checks"; then
    p="$work/checks.wasm"
    run checks "$p" -e MODE=metrics -n 1 -w 1
    js "$work/checks.json" 's.tasks.passed === 1 && Object.values(s.checks).length === 9
        && Object.values(s.checks).every(c => c.passes === 1 && c.fails === 0)
        && s.metrics["items{n:1.5,ok:true}"].count === 3 && s.metrics["t_ok{unit:ms}"].count === 1 && !("t" in s.metrics)'
    ok "checks: metric calls refuse what the host would drop, naming the call" $?
    run checksenv "$p" -e MODE=caught-bad-env -e DELAY_MS=abc -n 3 -w 1
    rc=$?
    # The host redacts every -e value in what a plugin says, the setting's too.
    [ "$rc" -eq 4 ] && js "$work/checksenv.json" 's.tasks.aborted === 1' && says checksenv 'DELAY_MS=[redacted]: expected an integer'
    ok "checks: a bad setting aborts the run (exit 4) even when the plugin catches the error" $?
    run checksthrow "$p" -e MODE=throw -n 1 -w 1
    says checksthrow "TypeError: can't access property \"total\", orders[0] is undefined (orders.js:4)"
    ok "checks: an exception names the plugin's file and line" $?
    # (MODE is not `process`, a word of the message, which the host would redact.)
    run checksprocess "$p" -e MODE=process-env -n 1 -w 1
    says checksprocess 'ReferenceError: process is not defined (a plugin has no process.env: read settings with env() or envOr() from lib/loadhost.js) (plugin.js:'
    ok "checks: process.env says what to use instead" $?
fi

# A top-level call into the host fails the build, with a hint.
mkdir -p "$work/toplevel"
printf "import { env } from './lib/loadhost.js';\nconst u = env('X');\nexport function doTask() {}\n" >"$work/toplevel/plugin.js"
"$here/build.sh" "$work/toplevel" "$work/toplevel.wasm" >"$work/toplevel.build" 2>&1
rc=$?
[ "$rc" -ne 0 ] && grep -q 'hint: the module.s top level runs at build time' "$work/toplevel.build"
ok "build: a top-level host call fails with a hint" $?

# So does a top-level read of process.env (a plugin has none), naming what to use instead.
mkdir -p "$work/toplevel-process"
printf "const u = process.env.X;\nexport function doTask() {}\n" >"$work/toplevel-process/plugin.js"
"$here/build.sh" "$work/toplevel-process" "$work/toplevel-process.wasm" >"$work/toplevel-process.build" 2>&1
rc=$?
[ "$rc" -ne 0 ] && grep -q 'hint: .*a plugin has no process.env: read settings with env() or envOr()' "$work/toplevel-process.build"
ok "build: a top-level process.env fails with a hint" $?

# A project as `loadhost new NAME --lang js` lays it out: the template with __NAME__ replaced, lib/,
# wit/plugin.wit and build.sh; it must build with its own build.sh and pass as generated.
project="$work/new/js-demo"
mkdir -p "$project/wit"
for f in "$here"/template/* "$here"/template/.[!.]*; do
    [ -f "$f" ] && sed 's/__NAME__/js-demo/g' "$f" >"$project/$(basename "$f")"
done
cp -r "$here/lib" "$project/lib"
cp "$repo/wit/plugin.wit" "$project/wit/"
cp "$here/build.sh" "$project/build.sh"
(cd "$project" && ./build.sh . js-demo.wasm) >"$work/template.build" 2>&1
rc=$?
ok "template: ./build.sh . js-demo.wasm" $rc
[ "$rc" -eq 0 ] || cat "$work/template.build"
if [ -f "$project/js-demo.wasm" ]; then
    run template "$project/js-demo.wasm" -e "TARGET_URL=$base/" "${allow[@]}" -n 20 -w 2
    js "$work/template.json" 's.tasks.passed === 20 && s.checks["status is 200"].passes === 20'
    ok "template: runs as generated" $?
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
