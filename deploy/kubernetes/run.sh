#!/usr/bin/env bash
# One distributed loadhost run on Kubernetes, start to verdict, in one command (for CI):
#
#   deploy/kubernetes/run.sh --image REGISTRY/loadhost@sha256:... --results-repo REGISTRY/loadhost-results
#
#   1. picks a fresh run id (or takes --run-id) and renders base/ (or --overlay DIR) with it, in a
#      generated overlay in a temporary directory: every name suffixed with the id (runs overlap
#      in one namespace), the label app.kubernetes.io/instance=ID, the ConfigMap loadhost-run
#      carrying RUN_ID and RESULTS_REPO, the image and the extra flags asked for;
#   2. applies it (the namespace must exist: ../setup), waits for the segments Job to finish;
#   3. resumes the merge Job (rendered suspended), waits for the merge, copies its reports
#      (summary.json, report.html, junit.xml, intervals.csv, summary.md, run.lhr) and the logs into --out;
#   4. deletes what it applied (also on failure or Ctrl-C; --keep leaves it) and exits with the
#      merge's exit code: 0, 99 when a threshold failed, 2 when a segment is missing (without
#      --partial) or parts belong to another run, ...
# Its own exit codes: 64 a usage error, or a render that still names a placeholder
# (registry.example.invalid); 70 the segments Job failed with no segment left to merge (a
# configuration error in every segment, the deadline, too many lost segments); 71 a timeout, the
# segments Job unreadable for a minute, or a merge that ended without an exit code.
#
#   --dry-run   print exactly what would be applied for the run id (give --run-id to make it
#               reproducible) and exit; no cluster is contacted (validate.sh checks this output).
#
# Needs bash, kubectl (1.30 or newer, with its built-in Kustomize; or $KUBECTL) and, for a real
# run, a kubeconfig allowed to create and delete ConfigMaps and Jobs, read pods and their logs,
# and exec into pods (for kubectl cp) in the namespace.
set -euo pipefail

here="$(cd -P "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
kubectl_bin="${KUBECTL:-kubectl}"

usage() {
    cat <<'EOF'
usage: run.sh [options]
  --run-id ID             the run's id (lowercase letters, digits and '-', at most 40);
                          default: lh-YYYYMMDD-HHMMSS-XXXX (UTC, random)
  --overlay DIR           the Kustomize directory to run (default: deploy/kubernetes/base)
  --image REF             the loadhost image for every resource of the run
                          (REGISTRY/loadhost:TAG or REGISTRY/loadhost@sha256:...)
  --results-repo REPO     REGISTRY/REPOSITORY for the results and the barrier (no oci://)
  --insecure-registry H   plain http to registry host H (segments and merge; repeatable)
  --partial               merge even when segments are missing
  -n, --namespace NS      the namespace (default: loadhost; it must exist)
  --out DIR               where the reports and logs go (default: ./loadhost-run-ID)
  --timeout SECONDS       the longest wait for the segments (default 3600) and for the merge
                          (default 900, or this if larger)
  --keep                  leave the run's resources in the cluster
  --dry-run               print the manifests for the run id and exit; touches no cluster
  -h, --help              this help
EOF
}

die_usage() {
    echo "run.sh: $*" >&2
    echo "run.sh: see run.sh --help" >&2
    exit 64
}

run_id=""
overlay="$here/base"
image=""
results_repo=""
insecure=()
partial=false
namespace=loadhost
out=""
timeout=3600
keep=false
dry_run=false

while [ "$#" -gt 0 ]; do
    case "$1" in
        --run-id) [ "$#" -ge 2 ] || die_usage "$1 needs a value"; run_id="$2"; shift 2 ;;
        --overlay) [ "$#" -ge 2 ] || die_usage "$1 needs a value"; overlay="$2"; shift 2 ;;
        --image) [ "$#" -ge 2 ] || die_usage "$1 needs a value"; image="$2"; shift 2 ;;
        --results-repo) [ "$#" -ge 2 ] || die_usage "$1 needs a value"; results_repo="${2#oci://}"; shift 2 ;;
        --insecure-registry) [ "$#" -ge 2 ] || die_usage "$1 needs a value"; insecure+=("$2"); shift 2 ;;
        --partial) partial=true; shift ;;
        -n | --namespace) [ "$#" -ge 2 ] || die_usage "$1 needs a value"; namespace="$2"; shift 2 ;;
        --out) [ "$#" -ge 2 ] || die_usage "$1 needs a value"; out="$2"; shift 2 ;;
        --timeout) [ "$#" -ge 2 ] || die_usage "$1 needs a value"; timeout="$2"; shift 2 ;;
        --keep) keep=true; shift ;;
        --dry-run) dry_run=true; shift ;;
        -h | --help) usage; exit 0 ;;
        *) die_usage "unknown argument: $1" ;;
    esac
done

if [ -z "$run_id" ]; then
    run_id="lh-$(date -u +%Y%m%d-%H%M%S)-$(od -An -N2 -tx1 /dev/urandom | tr -d ' \n')"
fi
# A suffix of Kubernetes names (DNS labels) and part of the results' OCI tags: fit both.
if ! [[ "$run_id" =~ ^[a-z0-9]([-a-z0-9]*[a-z0-9])?$ ]] || [ "${#run_id}" -gt 40 ]; then
    die_usage "--run-id $run_id: lowercase letters, digits and '-' (not first or last), at most 40"
fi
[[ "$timeout" =~ ^[1-9][0-9]*$ ]] || die_usage "--timeout $timeout: a number of seconds"
[ -f "$overlay/kustomization.yaml" ] || die_usage "--overlay $overlay: no kustomization.yaml there"
overlay="$(cd -P "$overlay" && pwd)"
case "$overlay" in
    *[\"\\]*) die_usage "--overlay $overlay: a path without quotes or backslashes, please" ;;
esac
case "$namespace" in
    "" | *[!a-z0-9-]*) die_usage "--namespace $namespace: not a namespace name" ;;
esac
for host in ${insecure[@]+"${insecure[@]}"}; do
    case "$host" in
        "" | *[!A-Za-z0-9.:-]*) die_usage "--insecure-registry $host: a HOST or HOST:PORT" ;;
    esac
done
if [ -n "$image" ]; then
    case "$image" in
        *[!A-Za-z0-9._:/@-]* | :* | @* | */) die_usage "--image $image: not an image reference" ;;
    esac
fi
if [ -n "$results_repo" ]; then
    case "$results_repo" in
        *[!A-Za-z0-9._:/-]* | */ | /*) die_usage "--results-repo $results_repo: REGISTRY/REPOSITORY" ;;
    esac
fi
out="${out:-loadhost-run-$run_id}"

work="$(mktemp -d)"
work="$(cd -P "$work" && pwd)"
applied=""

# shellcheck disable=SC2317 # reached through the EXIT trap
cleanup() {
    local status=$?
    trap - EXIT INT TERM
    if [ -n "$applied" ] && [ "$keep" = false ]; then
        echo "run.sh: deleting run $run_id's resources" >&2
        "$kubectl_bin" delete -f "$applied" --ignore-not-found --wait=false >&2 || true
    elif [ -n "$applied" ]; then
        echo "run.sh: --keep: run $run_id's resources stay in namespace $namespace" >&2
    fi
    rm -rf "$work"
    exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# kustomize refuses absolute paths, so the generated overlay names the chosen one by a relative
# path from the temporary directory: up to / and down again.
gen="$work/run"
mkdir -p "$gen"
depth="$(printf '%s' "$gen" | tr -cd / | wc -c | tr -d ' ')"
up=""
for ((i = 0; i < depth; i++)); do up="../$up"; done

render() {
    # KUBECONFIG=/dev/null: rendering never needs (or touches) a cluster.
    KUBECONFIG=/dev/null "$kubectl_bin" kustomize "$1"
}

# The images to replace: every image of the overlay whose name ends in `loadhost`, whatever
# registry ../components/image (or the overlay) gave it.
image_entries() {
    local ref name newname newtag digest
    [ -n "$image" ] || return 0
    newname="${image%@*}"
    digest=""
    newtag=""
    if [ "$newname" != "$image" ]; then
        digest="${image#*@}"
    elif [[ "${newname##*/}" == *:* ]]; then
        newtag="${newname##*:}"
        newname="${newname%:*}"
    fi
    render "$overlay" >"$work/plain.yaml"
    echo "images:"
    sed -n 's/^[[:space:]-]*image:[[:space:]]*//p' "$work/plain.yaml" | tr -d "\"'" | sort -u | while read -r ref; do
        name="${ref%@*}"
        if [[ "${name##*/}" == *:* ]]; then name="${name%:*}"; fi
        case "$name" in
            loadhost | */loadhost) ;;
            *) continue ;;
        esac
        echo "  - name: \"$name\""
        echo "    newName: \"$newname\""
        if [ -n "$digest" ]; then echo "    digest: \"$digest\""; fi
        if [ -n "$newtag" ]; then echo "    newTag: \"$newtag\""; fi
    done
}

# JSON patches appending flags to a Job's first container's args.
args_patch() {
    local job="$1"
    shift
    [ "$#" -gt 0 ] || return 0
    echo "  - target:"
    echo "      group: batch"
    echo "      version: v1"
    echo "      kind: Job"
    echo "      name: \"$job\""
    echo "    patch: |-"
    for arg in "$@"; do
        echo "      - op: add"
        echo "        path: /spec/template/spec/containers/0/args/-"
        echo "        value: \"$arg\""
    done
}

segment_flags=()
merge_flags=()
for host in ${insecure[@]+"${insecure[@]}"}; do
    segment_flags+=(--insecure-registry "$host")
    merge_flags+=(--insecure-registry "$host")
done
if [ "$partial" = true ]; then merge_flags+=(--partial); fi

{
    echo "# Generated by deploy/kubernetes/run.sh for run $run_id."
    echo "apiVersion: kustomize.config.k8s.io/v1beta1"
    echo "kind: Kustomization"
    echo "namespace: \"$namespace\""
    echo "nameSuffix: \"-$run_id\""
    echo "resources:"
    echo "  - \"$up${overlay#/}\""
    echo "labels:"
    echo "  - pairs:"
    echo "      app.kubernetes.io/instance: \"$run_id\""
    echo "    includeTemplates: true"
    echo "configMapGenerator:"
    echo "  - name: loadhost-run"
    echo "    behavior: merge"
    echo "    literals:"
    echo "      - \"RUN_ID=$run_id\""
    if [ -n "$results_repo" ]; then echo "      - \"RESULTS_REPO=$results_repo\""; fi
    image_entries
    if [ "${#segment_flags[@]}" -gt 0 ] || [ "${#merge_flags[@]}" -gt 0 ]; then
        echo "patches:"
        args_patch loadhost-segments ${segment_flags[@]+"${segment_flags[@]}"}
        args_patch loadhost-merge ${merge_flags[@]+"${merge_flags[@]}"}
    fi
} >"$gen/kustomization.yaml"

rendered="$work/rendered.yaml"
if ! render "$gen" >"$rendered" 2>"$work/render.err" || [ -s "$work/render.err" ]; then
    echo "run.sh: rendering $overlay for run $run_id failed:" >&2
    cat "$work/render.err" >&2
    exit 64
fi

if [ "$dry_run" = true ]; then
    cat "$rendered"
    exit 0
fi

if grep -n 'example\.invalid' "$rendered" >&2; then
    die_usage "the render still names a placeholder (lines above): give --image and --results-repo, or set them in your overlay"
fi

segments="loadhost-segments-$run_id"
merge="loadhost-merge-$run_id"
kc=("$kubectl_bin" --namespace "$namespace")

# The True conditions of a Job, space-separated (Complete, Failed, Suspended, FailureTarget, ...).
job_conditions() {
    "${kc[@]}" get job "$1" -o jsonpath='{range .status.conditions[?(@.status=="True")]}{.type}{" "}{end}'
}

# Wait until Job $1 has finished (Complete or Failed) or $2 seconds have passed; set $outcome.
# (Not in a command substitution: the wait runs in this shell, so Ctrl-C or SIGTERM reach the
# cleanup trap within one poll.)
outcome=""
wait_job() {
    local job="$1" limit="$2" start now conditions last=-60 errors=0
    start="$(date +%s)"
    while :; do
        # A failed poll (the API server busy, a network blip) is retried; a minute of them is not.
        if ! conditions="$(job_conditions "$job")"; then
            errors=$((errors + 1))
            if [ "$errors" -ge 12 ]; then
                outcome=Unreachable
                return 0
            fi
        else
            errors=0
        fi
        case " $conditions " in
            *" Complete "*) outcome=Complete; return 0 ;;
            *" Failed "*) outcome=Failed; return 0 ;;
        esac
        now="$(date +%s)"
        if [ $((now - start)) -ge "$limit" ]; then
            outcome=Timeout
            return 0
        fi
        if [ $((now - last)) -ge 60 ]; then
            last="$now"
            echo "run.sh: $job: $("${kc[@]}" get job "$job" -o jsonpath='active {.status.active}, succeeded {.status.succeeded}, failed {.status.failed}')" >&2
        fi
        sleep 5
    done
}

mkdir -p "$out"
echo "run.sh: run $run_id in namespace $namespace; reports to $out" >&2
cp "$rendered" "$out/manifests.yaml"
applied="$rendered"
"${kc[@]}" apply -f "$rendered" >&2

wait_job "$segments" "$timeout"
"${kc[@]}" logs -l "batch.kubernetes.io/job-name=$segments" --prefix --tail=-1 --max-log-requests=64 \
    >"$out/segments.log" 2>&1 || true
succeeded="$("${kc[@]}" get job "$segments" -o jsonpath='{.status.succeeded}')"
failed_indexes="$("${kc[@]}" get job "$segments" -o jsonpath='{.status.failedIndexes}')"
reason="$("${kc[@]}" get job "$segments" -o jsonpath='{.status.conditions[?(@.type=="Failed")].reason}')"
case "$outcome" in
    Complete) echo "run.sh: every segment finished" >&2 ;;
    Timeout)
        echo "run.sh: the segments did not finish within ${timeout}s" >&2
        exit 71
        ;;
    Unreachable)
        echo "run.sh: job/$segments could not be read for a minute; giving up" >&2
        exit 71
        ;;
    Failed)
        if [ "${succeeded:-0}" -gt 0 ] && [ "$reason" = FailedIndexes ]; then
            echo "run.sh: segments $failed_indexes failed; merging the others (the merge needs --partial to accept that)" >&2
        else
            echo "run.sh: the segments Job failed (${reason:-no reason given}; succeeded: ${succeeded:-0}, failed indexes: ${failed_indexes:-none}); see $out/segments.log" >&2
            "${kc[@]}" describe job "$segments" >"$out/segments-job.txt" 2>&1 || true
            exit 70
        fi
        ;;
esac

"${kc[@]}" patch job "$merge" --type=merge -p '{"spec":{"suspend":false}}' >&2
merge_limit=$((timeout > 900 ? timeout : 900))
start="$(date +%s)"
pod=""
code=""
while [ -z "$code" ]; do
    if [ -z "$pod" ]; then
        pod="$("${kc[@]}" get pods -l "batch.kubernetes.io/job-name=$merge" -o jsonpath='{.items[0].metadata.name}' 2>/dev/null || true)"
    fi
    if [ -n "$pod" ]; then
        code="$("${kc[@]}" get pod "$pod" -o jsonpath='{.status.containerStatuses[?(@.name=="merge")].state.terminated.exitCode}' || true)"
    fi
    [ -n "$code" ] && break
    case " $(job_conditions "$merge" || true) " in
        *" Failed "*)
            echo "run.sh: the merge Job failed before the merge ended" >&2
            "${kc[@]}" describe job "$merge" >"$out/merge-job.txt" 2>&1 || true
            exit 71
            ;;
    esac
    if [ $(($(date +%s) - start)) -ge "$merge_limit" ]; then
        echo "run.sh: the merge did not end within ${merge_limit}s" >&2
        exit 71
    fi
    sleep 3
done

"${kc[@]}" logs "$pod" -c merge >"$out/merge.log" 2>&1 || true
# Into a fresh directory first: kubectl cp then puts /out's files right in it, whatever its version.
if "${kc[@]}" cp -c outputs "$pod:/out" "$work/out" >&2 && [ -d "$work/out" ]; then
    cp -R "$work/out/." "$out/"
else
    echo "run.sh: copying the reports out of $pod failed; the merge's log is in $out/merge.log" >&2
fi
"${kc[@]}" exec "$pod" -c outputs -- touch /out/.collected >/dev/null 2>&1 || true
rm -f "$out/.collected"

cat "$out/merge.log"
if [ -n "${GITHUB_STEP_SUMMARY:-}" ] && [ -f "$out/summary.md" ]; then
    cat "$out/summary.md" >>"$GITHUB_STEP_SUMMARY"
fi
echo "run.sh: run $run_id: merge exit code $code; reports in $out" >&2
exit "$code"
