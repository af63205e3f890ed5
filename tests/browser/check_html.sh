#!/usr/bin/env bash
# Load an HTML report (loadhost run --html FILE) in headless Chromium and check that its page
# script drew every chart without an error. Optionally save a screenshot.
#
#   tests/browser/check_html.sh REPORT.html [SHOT.png]
#
# Exit status: 0 when the report is fine, 1 when a check failed, 2 on bad usage or no Chromium.
# CHROMIUM=/path/to/chromium overrides the browser; CHECK_HTML_TIMEOUT (seconds, default 60)
# bounds each browser run.
set -euo pipefail

# Must equal the number of charts in host/output/src/html/charts.rs (CHARTS); a unit test there checks it.
expected_charts=5

me=check_html
die() {
    local status=$1
    shift
    echo "$me: FAIL $*" >&2
    exit "$status"
}
usage() {
    echo "usage: $0 REPORT.html [SHOT.png]" >&2
    exit 2
}
[[ $# -ge 1 && $# -le 2 ]] || usage
report=$1
shot=${2:-}
[[ -f $report ]] || die 2 "no such file: $report"

browser=${CHROMIUM:-}
if [[ -z $browser ]]; then
    for name in chromium chromium-browser; do
        if command -v "$name" >/dev/null 2>&1; then
            browser=$(command -v "$name")
            break
        fi
    done
fi
[[ -n $browser ]] || die 2 "no chromium or chromium-browser on PATH (Debian: apt-get install chromium)"
[[ -x $browser ]] || die 2 "$browser is not an executable"

abs() { (cd "$(dirname "$1")" && printf '%s/%s' "$(pwd -P)" "$(basename "$1")"); }

# A file:// URL needs its path percent-encoded (spaces, '#', '?', non-ASCII bytes).
file_url() {
    local path=$1 out='' c i
    local LC_ALL=C
    for ((i = 0; i < ${#path}; i++)); do
        c=${path:i:1}
        case $c in
            [A-Za-z0-9/._~-]) out+=$c ;;
            *) printf -v c '%%%02X' "'$c"; out+=$c ;;
        esac
    done
    printf 'file://%s' "$out"
}

url=$(file_url "$(abs "$report")")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# A fresh profile per run: no first-run UI, no extensions, nothing shared with another check.
run_chromium() {
    timeout "${CHECK_HTML_TIMEOUT:-60}" "$browser" --headless --no-sandbox --disable-gpu --disable-dev-shm-usage \
        --user-data-dir="$work/profile" --no-first-run --no-default-browser-check --disable-extensions \
        --virtual-time-budget=5000 "$@"
}

if ! run_chromium --enable-logging=stderr --v=0 --dump-dom "$url" >"$work/dom.html" 2>"$work/stderr.log"; then
    echo "$me: FAIL chromium exited with an error on $report; its stderr:" >&2
    grep -v -e 'dbus' "$work/stderr.log" | tail -n 20 >&2 || true
    exit 1
fi

body=$(grep -o -m1 '<body[^>]*>' "$work/dom.html" || true)
attr() { sed -n "s/.* $1=\"\\([^\"]*\\)\".*/\\1/p" <<<"$body"; }
charts=$(attr data-charts)
errors=$(attr data-errors)
shaded=$(attr data-shaded)

# Console lines from the page look like
#   [pid:tid:date:INFO:CONSOLE:12] "Uncaught ReferenceError: …", source: file:///… (12)
# (older builds: CONSOLE(12), and the console level in the severity field). Recent builds log
# every console level as INFO, so an uncaught error is recognised by its text; the page itself
# also counts console.error calls into data-errors. Messages from the browser's own pages do not count.
console=$(grep -E ':CONSOLE[(:]' "$work/stderr.log" |
    grep -v -E 'source: (chrome|chrome-extension|devtools)://' |
    grep -E 'Uncaught|:ERROR:CONSOLE' || true)
console_count=0
[[ -z $console ]] || console_count=$(wc -l <<<"$console")

problems=()
[[ -n $body ]] || problems+=("no <body> in the dumped DOM")
[[ $charts == "$expected_charts" ]] || problems+=("data-charts=\"${charts:-absent}\", expected \"$expected_charts\"")
[[ -z $errors || $errors == 0 ]] || problems+=("data-errors=\"$errors\"")
((console_count == 0)) || problems+=("$console_count console error(s)")

if ((${#problems[@]} > 0)); then
    {
        joined=$(printf '%s; ' "${problems[@]}")
        echo "$me: FAIL $report: ${joined%; }"
        page_errors=$(sed -n '/<pre id="errors"/,/<\/pre>/p' "$work/dom.html" |
            sed -e 's/<[^>]*>//g' -e 's/&lt;/</g' -e 's/&gt;/>/g' -e 's/&quot;/"/g' -e 's/&amp;/\&/g' |
            grep -v '^$' || true)
        [[ -z $page_errors ]] || printf 'page errors:\n%s\n' "$page_errors"
        [[ -z $console ]] || printf 'console:\n%s\n' "$console"
    } >&2
    exit 1
fi

shot_note=''
if [[ -n $shot ]]; then
    shot_abs=$(abs "$shot")
    rm -f "$shot_abs"
    run_chromium --hide-scrollbars --window-size=1280,2400 --screenshot="$shot_abs" "$url" \
        >"$work/shot.out" 2>"$work/shot.err" || true
    if [[ ! -s $shot_abs ]]; then
        echo "$me: FAIL $report: the charts passed but no screenshot was written to $shot" >&2
        grep -v -e 'dbus' "$work/shot.err" | tail -n 20 >&2 || true
        exit 1
    fi
    shot_note=", screenshot $shot"
fi

echo "$me: OK $report: $charts/$expected_charts charts, ${shaded:-0} shaded bands, 0 page errors, 0 console errors$shot_note"
