#!/usr/bin/env bash
# Build the loadhost image from scratch (../../Containerfile) and push it; print its pinned
# reference, REGISTRY/REPO@sha256:..., as the last line of stdout.
#
#   deploy/image/build.sh --image REGISTRY/loadhost:0.1.0 [--binary amd64=FILE] [--binary arm64=FILE]
#
#   1. the static binaries: each --binary ARCH=FILE given (the release pipeline builds them), or
#      else one built here: `cargo build --release --locked --target x86_64-unknown-linux-musl -p
#      loadhost`, with LOADHOST_COMMIT set so `--version` names the commit; each must be a static
#      ELF of its architecture (`file` says so), and is stripped when it is not yet;
#   2. the context, in a temporary folder: the binaries, a static busybox for each (--busybox, or
#      for this machine's architecture Debian's busybox-static on PATH) with the applets the
#      Kubernetes merge Job uses linked in /bin, /etc/passwd and /etc/group with the user
#      loadhost (uid/gid 10001), Debian's CA bundle (/etc/ssl/certs/ca-certificates.crt), the
#      bundled Rust example plugins (from --plugins, default target/plugins: `cargo xtask
#      plugins`), /tmp and the empty cache folder;
#   3. `buildah build` of the Containerfile for each platform (several: one manifest list), with
#      the OCI labels, committed as one layer (--layers=false: the image is that layer only), then
#      `buildah push` (or `manifest push --all`) to --image, writing the digest the registry got.
#
# Options:
#   --image REF          where to push: REGISTRY/REPOSITORY[:TAG] (required; the tag defaults to
#                        the version in Cargo.toml)
#   --binary ARCH=FILE   a static loadhost for ARCH (amd64 or arm64); repeatable
#   --busybox ARCH=FILE  a static busybox for ARCH (default for this machine's: `busybox` on PATH)
#   --plugins DIR        the built example plugins (default: target/plugins)
#   --tls-verify=false   push over plain http (a loopback registry)
#   --storage DIR        buildah's image store in DIR (vfs driver), not the system's
#   --digest-file FILE   also write the pinned reference to FILE
#   --source URL         the org.opencontainers.image.source label
# Needs buildah, file, strip (binutils), Debian's ca-certificates and busybox-static and, to build
# the binary, cargo with the x86_64-unknown-linux-musl target and musl-tools (`cargo xtask setup`
# installs them).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
# The plugins the image bundles (/opt/loadhost/plugins): the small Rust examples. The Kubernetes
# base runs http-get.wasm from there.
PLUGINS="noop sleep flaky trap http-get http-post-json"
# busybox's applets linked in /bin: what the merge Job (deploy/kubernetes/base/merge-job.yaml)
# and kubectl cp run in the container, nothing more.
APPLETS="sh sleep timeout tar tail touch"
CA_BUNDLE=/etc/ssl/certs/ca-certificates.crt

die() {
    echo "build.sh: $*" >&2
    exit 1
}

image=""
plugins="$root/target/plugins"
tls_verify=true
storage=""
digest_file=""
source_url=""
declare -A binaries=() busyboxes=()
while [ "$#" -gt 0 ]; do
    case "$1" in
        --image) [ "$#" -ge 2 ] || die "$1 needs a value"; image="$2"; shift 2 ;;
        --binary)
            [ "$#" -ge 2 ] || die "$1 needs ARCH=FILE"
            case "$2" in
                amd64=?* | arm64=?*) binaries["${2%%=*}"]="${2#*=}" ;;
                *) die "--binary $2: ARCH=FILE with ARCH amd64 or arm64" ;;
            esac
            shift 2
            ;;
        --busybox)
            [ "$#" -ge 2 ] || die "$1 needs ARCH=FILE"
            case "$2" in
                amd64=?* | arm64=?*) busyboxes["${2%%=*}"]="${2#*=}" ;;
                *) die "--busybox $2: ARCH=FILE with ARCH amd64 or arm64" ;;
            esac
            shift 2
            ;;
        --plugins) [ "$#" -ge 2 ] || die "$1 needs a value"; plugins="$2"; shift 2 ;;
        --tls-verify=false) tls_verify=false; shift ;;
        --tls-verify=true) tls_verify=true; shift ;;
        --storage) [ "$#" -ge 2 ] || die "$1 needs a value"; storage="$2"; shift 2 ;;
        --digest-file) [ "$#" -ge 2 ] || die "$1 needs a value"; digest_file="$2"; shift 2 ;;
        --source) [ "$#" -ge 2 ] || die "$1 needs a value"; source_url="$2"; shift 2 ;;
        -h | --help) sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) die "unknown argument $1 (see --help)" ;;
    esac
done
[ -n "$image" ] || die "--image REGISTRY/REPOSITORY[:TAG] is required"
case "$image" in
    *@*) die "--image $image: give a tag or none, not a digest (the digest is what this prints)" ;;
    *[!A-Za-z0-9._:/-]* | */ | /* | :*) die "--image $image: not an image reference" ;;
esac
for tool in buildah file strip; do
    command -v "$tool" >/dev/null 2>&1 || die "$tool is not installed (cargo xtask setup installs it)"
done
[ -f "$CA_BUNDLE" ] || die "$CA_BUNDLE is missing (Debian's ca-certificates package)"

version="$(sed -n '/^\[workspace.package\]/,/^\[/ s/^version = "\(.*\)"/\1/p' "$root/Cargo.toml")"
[ -n "$version" ] || die "no version in $root/Cargo.toml's [workspace.package]"
# REGISTRY/REPO:TAG -> REGISTRY/REPO (a colon after the last slash is a tag, before it a port).
name="$image"
if [[ "${image##*/}" == *:* ]]; then name="${image%:*}"; else image="$image:$version"; fi
commit="$(git -C "$root" rev-parse HEAD 2>/dev/null || echo "${LOADHOST_COMMIT:-}")"

if [ "${#binaries[@]}" -eq 0 ]; then
    echo "build.sh: building the static x86_64 binary (cargo build --target x86_64-unknown-linux-musl)" >&2
    (cd "$root" && LOADHOST_COMMIT="$commit" cargo build --release --locked --target x86_64-unknown-linux-musl -p loadhost) >&2
    binaries[amd64]="${CARGO_TARGET_DIR:-$root/target}/x86_64-unknown-linux-musl/release/loadhost"
fi

context="$(mktemp -d)"
trap 'rm -rf "$context"' EXIT

# static_elf FILE ARCH: FILE is a static ELF executable of ARCH (as `file` names it); prints its kind.
static_elf() {
    local file_arch="x86-64" kind
    [ "$2" = arm64 ] && file_arch="ARM aarch64"
    [ -f "$1" ] || die "$1: no such file"
    kind="$(file -b -L "$1")"
    [[ "$kind" == *ELF* && "$kind" == *"$file_arch"* ]] || die "$1 is not an $file_arch ELF binary: $kind"
    [[ "$kind" == *"statically linked"* || "$kind" == *"static-pie linked"* ]] \
        || die "$1 is not statically linked: $kind"
    echo "$kind"
}
case "$(uname -m)" in
    x86_64) host_arch=amd64 ;;
    aarch64) host_arch=arm64 ;;
    *) host_arch="" ;;
esac

# Each binary: a static ELF of its architecture, stripped; and its busybox.
platforms=()
for arch in "${!binaries[@]}"; do
    strip_tool="strip"
    # Debian's binutils strip reads its own architecture only; binutils-aarch64-linux-gnu has this.
    [ "$arch" = arm64 ] && [ "$host_arch" != arm64 ] && strip_tool="aarch64-linux-gnu-strip"
    bin="${binaries[$arch]}"
    kind="$(static_elf "$bin" "$arch")"
    cp "$bin" "$context/loadhost-$arch"
    if [[ "$kind" == *"not stripped"* ]]; then
        command -v "$strip_tool" >/dev/null 2>&1 || die "$bin is not stripped and $strip_tool is not installed"
        "$strip_tool" --strip-all "$context/loadhost-$arch"
    fi
    chmod 0755 "$context/loadhost-$arch"
    echo "build.sh: $arch: $(stat -c %s "$bin") bytes, $(stat -c %s "$context/loadhost-$arch") stripped" >&2
    busybox="${busyboxes[$arch]:-}"
    if [ -z "$busybox" ]; then
        [ "$arch" = "$host_arch" ] || die "give --busybox $arch=FILE (a static busybox for $arch)"
        busybox="$(command -v busybox)" || die "busybox is not installed (Debian's busybox-static; cargo xtask setup installs it)"
    fi
    static_elf "$busybox" "$arch" >/dev/null
    cp -L "$busybox" "$context/busybox-$arch"
    chmod 0755 "$context/busybox-$arch"
    platforms+=("linux/$arch")
done

rootfs="$context/rootfs"
mkdir -p "$rootfs/etc/ssl/certs" "$rootfs/opt/loadhost/plugins" "$rootfs/tmp" "$rootfs/bin" "$context/cache"
for applet in $APPLETS; do ln -s busybox "$rootfs/bin/$applet"; done
printf 'root:x:0:0:root:/root:/sbin/nologin\nloadhost:x:10001:10001:loadhost:/home/loadhost:/sbin/nologin\n' \
    >"$rootfs/etc/passwd"
printf 'root:x:0:\nloadhost:x:10001:\n' >"$rootfs/etc/group"
cp "$CA_BUNDLE" "$rootfs/etc/ssl/certs/ca-certificates.crt"
for plugin in $PLUGINS; do
    [ -f "$plugins/$plugin.wasm" ] || die "$plugins/$plugin.wasm is missing: run \`cargo xtask plugins\` (or give --plugins DIR)"
    cp "$plugins/$plugin.wasm" "$rootfs/opt/loadhost/plugins/"
done
chmod 1777 "$rootfs/tmp"
chmod 0700 "$context/cache"
chmod -R a+rX,go-w "$rootfs/etc" "$rootfs/opt"
chmod 0755 "$rootfs/bin"

buildah_global=()
if [ -n "$storage" ]; then
    mkdir -p "$storage"
    buildah_global=(--root "$storage/root" --runroot "$storage/run" --storage-driver vfs)
fi
created="$(date -u +%Y-%m-%dT%H:%M:%SZ)"
build_args=(
    --build-arg "VERSION=$version" --build-arg "VCS_REF=$commit"
    --build-arg "CREATED=$created" --build-arg "SOURCE=$source_url"
)
digest_out="$context/digest"
# A name of its own in the local store, so a build never adds to an older one's manifest list.
local_name="localhost/loadhost-build-$$"
if [ "${#platforms[@]}" -eq 1 ]; then
    buildah "${buildah_global[@]}" build --quiet --layers=false --platform "${platforms[0]}" --format oci \
        "${build_args[@]}" -f "$root/Containerfile" -t "$local_name" "$context" >&2
    buildah "${buildah_global[@]}" push --quiet --tls-verify="$tls_verify" --digestfile "$digest_out" \
        "$local_name" "docker://$image" >&2
    buildah "${buildah_global[@]}" rmi "$local_name" >/dev/null 2>&1 || true
else
    joined="$(IFS=,; echo "${platforms[*]}")"
    buildah "${buildah_global[@]}" build --quiet --layers=false --platform "$joined" --format oci --manifest "$local_name" \
        "${build_args[@]}" -f "$root/Containerfile" "$context" >&2
    buildah "${buildah_global[@]}" manifest push --quiet --all --tls-verify="$tls_verify" \
        --digestfile "$digest_out" "$local_name" "docker://$image" >&2
    buildah "${buildah_global[@]}" manifest rm "$local_name" >/dev/null 2>&1 || true
fi
digest="$(cat "$digest_out")"
[[ "$digest" =~ ^sha256:[0-9a-f]{64}$ ]] || die "the push wrote no digest (got '$digest')"
echo "build.sh: pushed $image (${platforms[*]}), digest $digest" >&2
if [ -n "$digest_file" ]; then echo "$name@$digest" >"$digest_file"; fi
echo "$name@$digest"
