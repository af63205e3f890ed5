#!/usr/bin/env bash
# The image, end to end, on loopback only: built, pushed, pulled by digest and run.
#
#   deploy/image/check.sh [--binary FILE]
#
#   1. the static x86_64 binary (--binary, or `cargo build --release --locked --target
#      x86_64-unknown-linux-musl -p loadhost`); `file` must call it static;
#   2. Debian's docker-registry on a free loopback port, and the built-in target (`loadhost target`)
#      on another; the http-get plugin pushed to the registry (`loadhost push`), by digest;
#   3. the image built from scratch and pushed by build.sh; its manifest and config read back with
#      skopeo (platform, user 10001, entrypoint, the revision label, one layer: no base image);
#   4. the image pulled BY DIGEST with Debian's podman into a store of its own, its `--version`
#      compared with the binary's, then a 3-second run of the plugin, pulled BY DIGEST from the
#      registry inside the container, against the target: its summary JSON (written to a mounted
#      folder) must show tasks scheduled and passed and none failed; and the merge Job's shell
#      commands (sh, timeout, sleep, tar and tail for kubectl cp) run in it;
#   5. the Kubernetes manifests rendered for that image (run.sh --dry-run --image REF@DIGEST): every
#      workload must name exactly the digest just pushed.
# When podman cannot start a container on this machine, it says so with podman's exact error and
# proves the image without a container instead: the layers unpacked with skopeo and tar, the
# unpacked /usr/local/bin/loadhost run the same way against the same target. It prints one line per
# step and ends with `image check passed`; it exits 1 when a step fails.
#
# Containers here: podman runs as root with the vfs driver (no overlay mounts needed), cgroupfs and
# runc rather than crun (crun refuses cgroup v1/v2 hybrid hosts), and explicit ulimits no larger
# than this shell's hard limits (podman's defaults are higher, and raising a limit needs
# CAP_SYS_RESOURCE, which a CI container may not have).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
here="$root/deploy/image"

die() {
    echo "FAIL $*" >&2
    exit 1
}
ok() { echo "ok   $*"; }

binary=""
while [ "$#" -gt 0 ]; do
    case "$1" in
        --binary) [ "$#" -ge 2 ] || die "--binary needs a value"; binary="$2"; shift 2 ;;
        *) die "unknown argument $1 (usage: check.sh [--binary FILE])" ;;
    esac
done

for tool in docker-registry podman buildah skopeo busybox file strip python3 tar; do
    command -v "$tool" >/dev/null 2>&1 || die "$tool is not installed (cargo xtask setup installs it)"
done
kubectl_bin="${KUBECTL:-${LOADHOST_TOOLCHAINS:-${XDG_CACHE_HOME:-$HOME/.cache}/loadhost/toolchains}/kubernetes/bin/kubectl}"
[ -x "$kubectl_bin" ] || die "no kubectl at $kubectl_bin: run deploy/kubernetes/validate.sh once (it installs it), or set KUBECTL"
plugin_file="$root/target/plugins/http-get.wasm"
[ -f "$plugin_file" ] || die "$plugin_file is missing: run \`cargo xtask plugins\`"

work="$(mktemp -d)"
pids=()
podman_global=(--root "$work/podman/root" --runroot "$work/podman/run" --storage-driver vfs
    --cgroup-manager cgroupfs --events-backend none)
if command -v runc >/dev/null 2>&1; then podman_global+=(--runtime runc); fi
# shellcheck disable=SC2317 # reached through the EXIT trap
cleanup() {
    local status=$?
    for pid in ${pids[@]+"${pids[@]}"}; do kill "$pid" 2>/dev/null || true; done
    for pid in ${pids[@]+"${pids[@]}"}; do wait "$pid" 2>/dev/null || true; done
    podman "${podman_global[@]}" rm --all --force >/dev/null 2>&1 || true
    rm -rf "$work"
    exit "$status"
}
trap cleanup EXIT
export LOADHOST_CACHE_DIR="$work/cache"

# 1. The static binary.
if [ -z "$binary" ]; then
    commit="$(git -C "$root" rev-parse HEAD 2>/dev/null || echo "${LOADHOST_COMMIT:-}")"
    (cd "$root" && LOADHOST_COMMIT="$commit" cargo build --release --locked --target x86_64-unknown-linux-musl -p loadhost) \
        || die "cargo build --target x86_64-unknown-linux-musl failed"
    binary="${CARGO_TARGET_DIR:-$root/target}/x86_64-unknown-linux-musl/release/loadhost"
fi
kind="$(file -b "$binary")"
[[ "$kind" == *"static-pie linked"* || "$kind" == *"statically linked"* ]] || die "$binary is not static: $kind"
version="$("$binary" --version)"
ok "static binary: $version, $(stat -c %s "$binary") bytes ($kind)"

# A free loopback port (bound and released: the registry takes it a moment later).
free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
wait_port() {
    local port="$1"
    for _ in $(seq 100); do
        if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then return 0; fi
        sleep 0.1
    done
    return 1
}

# 2. The registry, the target, the plugin pushed.
port="$(free_port)"
registry="127.0.0.1:$port"
mkdir -p "$work/registry"
cat >"$work/registry/config.yml" <<EOF
version: 0.1
log:
  level: error
storage:
  filesystem:
    rootdirectory: $work/registry/storage
http:
  addr: $registry
EOF
docker-registry serve "$work/registry/config.yml" >"$work/registry/log" 2>&1 &
pids+=("$!")
wait_port "$port" || die "docker-registry did not listen on $registry: $(cat "$work/registry/log")"
ok "docker-registry on $registry"

# The files exist before the background process opens them: the loop below may read first.
: >"$work/target.out"
: >"$work/target.err"
"$binary" target --addr 127.0.0.1:0 --duration 10m >"$work/target.out" 2>"$work/target.err" &
pids+=("$!")
target_url=""
for _ in $(seq 100); do
    target_url="$(sed -n 's/^listening on //p' "$work/target.out" | head -n1)"
    [ -n "$target_url" ] && break
    sleep 0.1
done
[ -n "$target_url" ] || die "loadhost target did not start: $(cat "$work/target.err")"
target_addr="${target_url#*://}"
ok "loadhost target on $target_url"

plugin_ref="$("$binary" push "$plugin_file" "$registry/plugins/http-get:check" | tail -n1)"
[[ "$plugin_ref" =~ @sha256:[0-9a-f]{64}$ ]] || die "loadhost push printed no digest: $plugin_ref"
plugin_ref="$registry/plugins/http-get@${plugin_ref##*@}"
ok "plugin pushed: $plugin_ref"

# 3. The image: built, pushed, read back.
image_ref="$("$here/build.sh" --image "$registry/loadhost:check" --binary "amd64=$binary" \
    --tls-verify=false --storage "$work/buildah" | tail -n1)" || die "build.sh failed"
[[ "$image_ref" == "$registry/loadhost@sha256:"* ]] || die "build.sh printed $image_ref, not $registry/loadhost@sha256:..."
image_digest="${image_ref##*@}"
ok "image built from scratch and pushed: $image_ref"

skopeo inspect --tls-verify=false "docker://$image_ref" >"$work/inspect.json"
skopeo inspect --tls-verify=false --config "docker://$image_ref" >"$work/config.json"
skopeo inspect --tls-verify=false --raw "docker://$image_ref" >"$work/manifest.json"
python3 - "$work" "$image_digest" "$(git -C "$root" rev-parse HEAD 2>/dev/null || true)" <<'PY' || die "the image's manifest or config is not what build.sh made"
import json, sys
work, digest, commit = sys.argv[1:4]
inspect = json.load(open(f"{work}/inspect.json"))
config = json.load(open(f"{work}/config.json"))
manifest = json.load(open(f"{work}/manifest.json"))
problems = []
if inspect["Digest"] != digest:
    problems.append(f"digest {inspect['Digest']} != {digest}")
if (inspect.get("Os"), inspect.get("Architecture")) != ("linux", "amd64"):
    problems.append(f"platform {inspect.get('Os')}/{inspect.get('Architecture')}")
cfg = config.get("config") or {}
if cfg.get("User") != "10001:10001":
    problems.append(f"user {cfg.get('User')!r}, not 10001:10001")
if cfg.get("Entrypoint") != ["loadhost"]:
    problems.append(f"entrypoint {cfg.get('Entrypoint')}")
labels = cfg.get("Labels") or {}
if commit and labels.get("org.opencontainers.image.revision") != commit:
    problems.append(f"revision label {labels.get('org.opencontainers.image.revision')!r}, not {commit}")
# From scratch, built without --layers: one layer, the COPYs; a base image would add its own.
if len(manifest.get("layers", [])) != 1:
    problems.append(f"{len(manifest.get('layers', []))} layers, not 1 (from scratch, one commit)")
size = sum(l["size"] for l in manifest.get("layers", []))
print(f"ok   image manifest: linux/amd64, user 10001:10001, revision {labels.get('org.opencontainers.image.revision')}, "
      f"{len(manifest['layers'])} layer, {size} bytes compressed")
if problems:
    print("\n".join(problems), file=sys.stderr)
    sys.exit(1)
PY

# 5. The Kubernetes manifests, pinned to that digest.
KUBECTL="$kubectl_bin" bash "$root/deploy/kubernetes/run.sh" --dry-run --run-id image-check --image "$image_ref" \
    --results-repo "$registry/results" >"$work/k8s.yaml" 2>"$work/k8s.err" || die "run.sh --dry-run: $(cat "$work/k8s.err")"
images="$(sed -n 's/^[[:space:]-]*image:[[:space:]]*//p' "$work/k8s.yaml" | tr -d "\"'" | sort -u)"
[ "$images" = "$image_ref" ] || die "the rendered manifests name $images, not $image_ref"
ok "Kubernetes manifests (run.sh --dry-run --image) name $image_ref and nothing else"

# The run's verdict: its summary JSON.
check_summary() {
    python3 - "$1" <<'PY'
import json, sys
summary = json.load(open(sys.argv[1]))
tasks = summary["tasks"]
bad = {k: tasks[k] for k in ("failed", "aborted", "dropped", "timed_out", "trapped") if tasks.get(k)}
if tasks["scheduled"] == 0 or tasks["passed"] == 0 or bad:
    sys.exit(f"tasks: {tasks}")
print(f"{tasks['passed']} of {tasks['scheduled']} tasks passed, none failed")
PY
}
run_args=(run "oci://$plugin_ref" -e "TARGET_URL=$target_url/" --allow-host "$target_addr" -r 50 -d 3s)

# 4. Pulled by digest and run with podman (or the fallback proof).
limit() { local hard="$1"; if [ "$hard" = unlimited ] || [ "$hard" -gt 4096 ]; then echo 4096; else echo "$hard"; fi; }
nofile="$(limit "$(ulimit -Hn)")"
nproc="$(limit "$(ulimit -Hu)")"
mkdir -p "$work/out"
chown 10001:10001 "$work/out" 2>/dev/null || chmod 0777 "$work/out"
podman "${podman_global[@]}" pull --quiet --tls-verify=false "$image_ref" >/dev/null 2>"$work/pull.err" \
    || die "podman pull $image_ref: $(cat "$work/pull.err")"
pulled="$(podman "${podman_global[@]}" image inspect --format '{{.Digest}}' "$image_ref")"
[ "$pulled" = "$image_digest" ] || die "podman pulled $pulled, not $image_digest"
ok "podman pulled $image_ref"
container=(podman "${podman_global[@]}" run --rm --network host --ulimit "nofile=$nofile:$nofile"
    --ulimit "nproc=$nproc:$nproc" -v "$work/out:/out" "$image_ref")

if [ -z "${LOADHOST_IMAGE_CHECK_NO_CONTAINERS:-}" ] && "${container[@]}" --version >"$work/version" 2>"$work/podman.err"; then
    [ "$(cat "$work/version")" = "$version" ] || die "the container says $(cat "$work/version"), the binary $version"
    ok "podman run $image_ref --version: $(cat "$work/version")"
    "${container[@]}" "${run_args[@]}" --summary-json /out/summary.json >"$work/run.out" 2>"$work/run.err" \
        || die "podman run ${run_args[*]}: $(tail -n 20 "$work/run.err")"
    verdict="$(check_summary "$work/out/summary.json" 2>&1)" || die "the container's run: $verdict"
    ok "podman run $image_ref ${run_args[*]}: $verdict"
    # What the Kubernetes merge Job runs besides loadhost: its exit-code wrapper (sh), the outputs
    # container's wait (timeout, sh, sleep) and what kubectl cp runs to read /out (tar, tail).
    shell=(podman "${podman_global[@]}" run --rm --network none --ulimit "nofile=$nofile:$nofile"
        --ulimit "nproc=$nproc:$nproc" -v "$work/out:/out" --entrypoint /bin/sh "$image_ref" -c)
    # shellcheck disable=SC2016 # expanded by the container's sh, as in merge-job.yaml
    if ! "${shell[@]}" 'loadhost --version >/dev/null; rc=$?; echo "$rc" >/out/exit-code; exit "$rc"' \
        || [ "$(cat "$work/out/exit-code")" != 0 ]; then
        die "the merge Job's sh wrapper did not run in the image"
    fi
    "${shell[@]}" "timeout 1 sh -c 'until [ -e /out/.collected ]; do sleep 0.2; done'; exit 0" 2>/dev/null \
        || die "the outputs container's wait (timeout, sleep) did not run in the image"
    "${shell[@]}" 'tar cf - /out/summary.json | tail -c +1' >"$work/cp.tar" 2>"$work/cp.err" \
        || die "tar in the image (kubectl cp): $(cat "$work/cp.err")"
    tar -tf "$work/cp.tar" | grep -qx 'out/summary.json' || die "the image's tar wrote no out/summary.json"
    ok "the merge Job's commands in the image: sh wrapper (exit code 0 written), timeout/sleep wait, tar | tail for kubectl cp"
else
    if [ -n "${LOADHOST_IMAGE_CHECK_NO_CONTAINERS:-}" ]; then
        echo "note podman run skipped (LOADHOST_IMAGE_CHECK_NO_CONTAINERS is set)"
    else
        echo "note podman cannot run a container here: $(tr '\n' ' ' <"$work/podman.err")"
    fi
    echo "note the fallback proof: the image's layers unpacked, its binary run"
    skopeo copy --quiet --src-tls-verify=false "docker://$image_ref" "oci:$work/oci:loadhost" \
        || die "skopeo copy $image_ref"
    mkdir -p "$work/rootfs"
    python3 - "$work/oci" >"$work/layers" <<'PY'
import json, sys
oci = sys.argv[1]
index = json.load(open(f"{oci}/index.json"))
manifest = index["manifests"][0]["digest"].split(":")[1]
for layer in json.load(open(f"{oci}/blobs/sha256/{manifest}"))["layers"]:
    print(f"{oci}/blobs/sha256/{layer['digest'].split(':')[1]}")
PY
    while read -r layer; do tar -xzf "$layer" -C "$work/rootfs"; done <"$work/layers"
    unpacked="$work/rootfs/usr/local/bin/loadhost"
    [ "$("$unpacked" --version)" = "$version" ] || die "the unpacked binary says $("$unpacked" --version)"
    [ -s "$work/rootfs/etc/ssl/certs/ca-certificates.crt" ] || die "no CA bundle in the image"
    grep -q '^loadhost:x:10001:10001:' "$work/rootfs/etc/passwd" || die "no user 10001 in the image's /etc/passwd"
    if [ "$(readlink "$work/rootfs/bin/tar")" != busybox ] || ! "$work/rootfs/bin/busybox" true; then
        die "no busybox tar in the image's /bin (kubectl cp needs it)"
    fi
    ok "unpacked image: /usr/local/bin/loadhost --version matches, CA bundle, user 10001 and busybox's applets present"
    "$unpacked" "${run_args[@]}" --summary-json "$work/out/summary.json" >"$work/run.out" 2>"$work/run.err" \
        || die "the unpacked binary's ${run_args[*]}: $(tail -n 20 "$work/run.err")"
    verdict="$(check_summary "$work/out/summary.json" 2>&1)" || die "the unpacked binary's run: $verdict"
    ok "unpacked image's loadhost ${run_args[*]}: $verdict"
fi
echo "image check passed"
