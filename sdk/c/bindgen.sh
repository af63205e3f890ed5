#!/usr/bin/env bash
# Regenerate the C bindings in lib/ from the repository's wit/plugin.wit (only after the WIT
# changes; they are committed, so building needs no wit-bindgen). Needs wit-bindgen-cli 0.63.0:
#   cargo install wit-bindgen-cli --version 0.63.0 --locked
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
wit="$here/../../wit"
want="wit-bindgen-cli 0.63.0"
have=$("${WIT_BINDGEN:-wit-bindgen}" --version 2>/dev/null || true)
[ "$have" = "$want" ] || { echo "bindgen.sh: need $want (found: ${have:-none}); set WIT_BINDGEN to its path" >&2; exit 1; }
"${WIT_BINDGEN:-wit-bindgen}" c "$wit" --world workload-with-lifecycle --out-dir "$here/lib"
sha256sum <"$wit/plugin.wit" | cut -d' ' -f1 >"$here/lib/plugin.wit.sha256"
