#!/usr/bin/env bash
# Build a Rust loadhost plugin into a component: build.sh PLUGIN_DIR OUT.wasm
set -euo pipefail
usage="usage: build.sh PLUGIN_DIR OUT.wasm"
dir=${1:?$usage}
out=${2:?$usage}
if ! command -v cargo >/dev/null 2>&1; then
    echo "build.sh: cargo is missing: install Rust (1.95 or later) with rustup" >&2
    exit 1
fi
if command -v rustup >/dev/null 2>&1; then
    rustup target list --installed | grep -qx wasm32-wasip2 || rustup target add wasm32-wasip2
fi
name=$(sed -n 's/^name = "\(.*\)"$/\1/p' "$dir/Cargo.toml" | head -n 1)
target=${CARGO_TARGET_DIR:-$dir/target}
cargo build --release --target wasm32-wasip2 --manifest-path "$dir/Cargo.toml"
cp "$target/wasm32-wasip2/release/${name//-/_}.wasm" "$out"
echo "$out: $(wc -c <"$out") bytes"
