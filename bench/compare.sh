#!/usr/bin/env bash
# `loadhost compare`'s false-alarm rate, measured: PAIRS pairs of identical short runs of the
# `http-get` plugin against the built-in target's /delay?ms=DELAY_MS (RATE tasks/s for DURATION,
# each writing a results file), each pair compared with the documented rules (RULES, at ALPHA).
# A false alarm is a compare of two identical runs that exits 99.
#
# For each rule it also counts, over the pairs, how often the change was past the tolerance, how
# often the test called it significant, and how often both (a failure); and, as a diagnostic, how
# often the test alone (each rule's statistic with a tolerance of 0, judged on its own at ALPHA)
# calls two identical runs different: what the tolerance is there for (docs/compare.md); and, for
# contrast, how often a Kolmogorov-Smirnov test on the two runs' whole latency histograms (every
# task taken as an independent sample) does.
#
# With SHIFT_MS set, each pair's new run asks for /delay?ms=SHIFT_MS instead: the same table then
# measures power (how often a real shift fails) rather than false alarms.
#
#   bench/compare.sh                         # 20 pairs of 3 s runs: about 3 minutes
#   PAIRS=50 DURATION=10s bench/compare.sh
#   PAIRS=10 SHIFT_MS=8 bench/compare.sh     # power against a 5 → 8 ms shift
#
# Knobs (environment): PAIRS=20, RATE=200, DURATION=3s, DELAY_MS=5, SHIFT_MS=, ALPHA=0.01,
# RULES (one rule per line; default below), GRACE=60 (seconds a run may last beyond DURATION).
# Everything is loopback-only and bounded by `timeout`; the target is stopped on exit. Each
# pair's files and compare outputs are in target/bench/compare/, the table also in
# target/bench/compare/summary.txt.
set -euo pipefail
cd "$(dirname "$0")/.."

PAIRS=${PAIRS:-20}
RATE=${RATE:-200}
DURATION=${DURATION:-3s}
DELAY_MS=${DELAY_MS:-5}
SHIFT_MS=${SHIFT_MS:-}
ALPHA=${ALPHA:-0.01}
GRACE=${GRACE:-60}
RULES=${RULES:-"latency_ms:p(50)>+20%
latency_ms:p(99)>+20%
service_ms:p(50)>+2ms
http_req_failed:rate>+0.5pp
tasks_started:rate<-5%"}
OUT=target/bench/compare

die() { echo "bench/compare.sh: $*" >&2; exit 2; }
for n in "$PAIRS" "$RATE" "$DELAY_MS" "$GRACE" ${SHIFT_MS:+"$SHIFT_MS"}; do
    [[ $n =~ ^[1-9][0-9]*$ ]] || die "PAIRS, RATE, DELAY_MS, SHIFT_MS and GRACE must be positive integers, not '$n'"
done
[[ $DURATION =~ ^([0-9]+)s$ ]] || die "DURATION must be whole seconds (3s), not '$DURATION'"
dur_s=$(( 10#${BASH_REMATCH[1]} ))
command -v timeout >/dev/null || die "needs timeout (coreutils)"
mapfile -t rules <<< "$RULES"

cargo xtask plugins >/dev/null
cargo build --release -q -p loadhost
target_dir=$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')
LOADHOST=$target_dir/release/loadhost
PLUGIN=target/plugins/http-get.wasm

rm -rf "$OUT"
mkdir -p "$OUT"
: > "$OUT/compares.jsonl"
: > "$OUT/diagnostic.jsonl"

target_pid=
cleanup() { if [ -n "$target_pid" ]; then kill "$target_pid" 2>/dev/null || true; wait 2>/dev/null || true; fi; }
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# The built-in target on a free loopback port; it prints "listening on URL" first.
serve_s=$(( PAIRS * 2 * (dur_s + GRACE) + 300 ))
timeout "$serve_s" "$LOADHOST" target --addr 127.0.0.1:0 > "$OUT/target.log" 2>&1 &
target_pid=$!
url=
for _ in $(seq 300); do
    url=$(sed -n 's/^listening on //p' "$OUT/target.log")
    [ -n "$url" ] && break
    sleep 0.1
done
[[ $url =~ ^http://127\.0\.0\.1:[0-9]+$ ]] || die "the target did not start: $(cat "$OUT/target.log")"
authority=${url#http://}

run() { # results-file delay-ms
    timeout $(( dur_s + GRACE )) "$LOADHOST" run "$PLUGIN" -e "TARGET_URL=$url/delay?ms=$2" \
        --allow-host "$authority" -r "$RATE" -d "$DURATION" --results "$1" > "$1.log" 2>&1 \
        || die "the run writing $1 failed: $(tail -3 "$1.log")"
}

fail_on=()
for rule in "${rules[@]}"; do fail_on+=(--fail-on "$rule"); done
alarms=0
for pair in $(seq "$PAIRS"); do
    base=$OUT/pair-$pair-base.lhr
    new=$OUT/pair-$pair-new.lhr
    run "$base" "$DELAY_MS"
    run "$new" "${SHIFT_MS:-$DELAY_MS}"
    code=0
    "$LOADHOST" compare "$base" "$new" "${fail_on[@]}" --alpha "$ALPHA" --json "$OUT/pair-$pair.json" \
        > "$OUT/pair-$pair.txt" 2>&1 || code=$?
    case $code in
        0) ;;
        99) alarms=$(( alarms + 1 )) ;;
        *) die "compare of pair $pair exited $code: $(tail -3 "$OUT/pair-$pair.txt")" ;;
    esac
    jq -c --argjson pair "$pair" --argjson code "$code" '{pair: $pair, code: $code, rules: .rules}' \
        "$OUT/pair-$pair.json" >> "$OUT/compares.jsonl"
    # The test alone: each statistic with no tolerance, on its own at ALPHA.
    for rule in "${rules[@]}"; do
        stat=${rule%[<>]*}
        op=$(if [[ $rule == *">"* ]]; then echo ">+0"; else echo "<-0"; fi)
        "$LOADHOST" compare "$base" "$new" --fail-on "$stat$op" --alpha "$ALPHA" --json "$OUT/diag.json" \
            > /dev/null 2>&1 || true
        jq -c --arg stat "$stat" '{stat: $stat, significant: .rules[0].significant}' "$OUT/diag.json" \
            >> "$OUT/diagnostic.jsonl"
    done
    echo "  pair $pair: compare exited $code$(tail -1 "$OUT/pair-$pair.txt" | sed 's/^/ · /')"
done

python3 - "$OUT" "$PAIRS" "$alarms" "$ALPHA" "$RATE" "$DURATION" "$DELAY_MS" "${SHIFT_MS:-$DELAY_MS}" <<'EOF' \
    | tee "$OUT/summary.txt"
import base64, json, math, struct, sys, zlib

out, pairs, alarms, alpha, rate, duration, base_ms, new_ms = sys.argv[1:]
rows = [json.loads(line) for line in open(f"{out}/compares.jsonl")]
diag = [json.loads(line) for line in open(f"{out}/diagnostic.jsonl")]


def histogram(b64):
    """An HdrHistogram V2-deflate encoding (a results file's histogram) as {value: count}."""
    raw = base64.b64decode(b64)
    body = zlib.decompress(raw[8:8 + struct.unpack(">i", raw[4:8])[0]])
    _, length, _, digits, lowest, _, _ = struct.unpack(">iiiiqqd", body[:40])
    half = (1 << math.ceil(math.log2(2 * 10 ** digits))) // 2
    half_magnitude, unit_magnitude = half.bit_length() - 1, lowest.bit_length() - 1
    counts, index, pos, payload = {}, 0, 0, body[40:40 + length]
    while pos < len(payload):
        value = shift = 0
        while True:  # ZigZag LEB128, at most 9 bytes (the 9th keeps all 8 bits)
            byte = payload[pos]
            pos += 1
            value |= (byte if shift == 56 else byte & 0x7F) << shift
            shift += 7
            if byte < 0x80 or shift > 56:
                break
        n = (value >> 1) ^ -(value & 1)
        if n < 0:  # a run of empty buckets
            index -= n
            continue
        bucket, sub = (index >> half_magnitude) - 1, (index & (half - 1)) + half
        if bucket < 0:
            sub, bucket = sub - half, 0
        if n:
            at = sub << (bucket + unit_magnitude)
            counts[at] = counts.get(at, 0) + n
        index += 1
    return counts


def ks_p(path_a, path_b):
    """Two-sample Kolmogorov-Smirnov on two runs' whole latency histograms, every task a sample."""
    a, b = {}, {}
    for counts, path in ((a, path_a), (b, path_b)):
        end = [line for line in open(path) if line.startswith('{"end"')][0]
        counts.update(histogram(json.loads(end)["end"]["report"]["totals"]["latency"]))
    na, nb = sum(a.values()), sum(b.values())
    ca = cb = d = 0
    for v in sorted(set(a) | set(b)):
        ca, cb = ca + a.get(v, 0), cb + b.get(v, 0)
        d = max(d, abs(ca / na - cb / nb))
    ne = math.sqrt(na * nb / (na + nb))
    lam = (ne + 0.12 + 0.11 / ne) * d
    p = 2 * sum((-1) ** (k - 1) * math.exp(-2 * k * k * lam * lam) for k in range(1, 101))
    return min(1.0, max(0.0, p))


kind = "identical runs" if base_ms == new_ms else f"runs of /delay?ms={base_ms} then ms={new_ms}"
print(f"\n{pairs} pairs of {kind} ({rate}/s for {duration}), alpha {alpha} over {len(rows[0]['rules'])} rules")
print(f"{'rule':32} {'past tolerance':>15} {'significant':>12} {'failed':>7} {'test alone':>11}")
for i, rule in enumerate(rows[0]["rules"]):
    judged = [r["rules"][i] for r in rows]
    stat = rule["rule"].split(">")[0].split("<")[0]
    alone = sum(1 for d in diag if d["stat"] == stat and d["significant"])
    print(f"{rule['rule']:32} {sum(j['past_tolerance'] for j in judged):>15} "
          f"{sum(bool(j['significant']) for j in judged):>12} {sum(j['verdict'] == 'failed' for j in judged):>7} "
          f"{alone:>11}")
ks = sorted(ks_p(f"{out}/pair-{p}-base.lhr", f"{out}/pair-{p}-new.lhr") for p in range(1, int(pairs) + 1))
print(f"\nfor contrast, Kolmogorov-Smirnov on the whole latency histograms (every task a sample) calls "
      f"{sum(p < float(alpha) for p in ks)} of {pairs} pairs different at p < {alpha} (median p {ks[len(ks) // 2]:.2g})")
what = "false alarms" if base_ms == new_ms else "failures"
print(f"compare exited 99 (a rule failed) for {alarms} of {pairs} pairs: {what}")
EOF
