//! Plugins in languages other than Rust, built by their SDK's `build.sh` (`sdk/LANG/`), and the
//! tools the tests need beyond cargo (each SDK's toolchain, headless Chromium for the HTML
//! report), installed by `setup`.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::SystemTime;

use anyhow::{Context as _, Result, bail};

use crate::{root, run};

/// Languages with an SDK under `sdk/LANG` whose examples are `plugins/*-LANG`.
pub const LANGS: [&str; 3] = ["python", "js", "c"];

fn script(lang: &str, name: &str) -> PathBuf {
    root().join("sdk").join(lang).join(name)
}

/// Whether `lang`'s toolchain is usable; otherwise the reason its check gave.
fn toolchain(lang: &str) -> Result<(), String> {
    let out = Command::new(script(lang, "toolchain.sh"))
        .arg("check")
        .output()
        .map_err(|err| format!("sdk/{lang}/toolchain.sh: {err}"))?;
    let line = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    if out.status.success() { Ok(()) } else { Err(line) }
}

fn newest_mtime(path: &Path) -> SystemTime {
    let own = std::fs::metadata(path).and_then(|m| m.modified()).unwrap_or(SystemTime::UNIX_EPOCH);
    match std::fs::read_dir(path) {
        Ok(entries) => entries.flatten().map(|e| newest_mtime(&e.path())).fold(own, SystemTime::max),
        Err(_) => own,
    }
}

/// The example folders of `lang`: `plugins/NAME-LANG`.
fn examples(lang: &str) -> Result<Vec<PathBuf>> {
    let suffix = format!("-{lang}");
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(root().join("plugins"))?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_dir() && p.file_name().is_some_and(|n| n.to_string_lossy().ends_with(&suffix)))
        .collect();
    dirs.sort();
    Ok(dirs)
}

/// Build every `plugins/*-LANG` example whose toolchain is present into `target/plugins/`,
/// skipping (and saying why) the languages whose toolchain is not. A component newer than its
/// sources, its SDK and the WIT is kept: Python and JS builds take 10–30 s each.
pub fn build(loadhost: &Path) -> Result<Vec<PathBuf>> {
    let out_dir = root().join("target").join("plugins");
    std::fs::create_dir_all(&out_dir)?;
    let mut built = Vec::new();
    for lang in LANGS {
        if let Err(why) = toolchain(lang) {
            eprintln!("xtask: skipped the {lang} plugins: {why}");
            continue;
        }
        let inputs = newest_mtime(&root().join("sdk").join(lang)).max(newest_mtime(&root().join("wit")));
        for dir in examples(lang)? {
            let name = dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            let out = out_dir.join(format!("{name}.wasm"));
            let fresh = std::fs::metadata(&out)
                .and_then(|m| m.modified())
                .is_ok_and(|built_at| built_at > inputs.max(newest_mtime(&dir)));
            if !fresh {
                run(Command::new(script(lang, "build.sh")).arg(&dir).arg(&out).env("LOADHOST", loadhost))?;
            }
            built.push(out);
        }
    }
    Ok(built)
}

/// Languages with a script runner (`sdk/LANG/build-runner.sh`), which `loadhost run FILE.LANG`
/// uses and the binary embeds (host/runtime/build.rs reads `target/runners/`).
pub const RUNNERS: [&str; 2] = ["python", "js"];

/// Build each runner whose toolchain is present into `target/runners/LANG.wasm`, skipping (and
/// saying why) the others; a runner newer than its SDK and the WIT is kept. The next cargo build
/// of loadhost embeds what is there.
pub fn build_runners() -> Result<Vec<PathBuf>> {
    let out_dir = root().join("target").join("runners");
    std::fs::create_dir_all(&out_dir)?;
    let mut built = Vec::new();
    for lang in RUNNERS {
        let builder = script(lang, "build-runner.sh");
        if !builder.is_file() {
            eprintln!("xtask: no {lang} runner to build (sdk/{lang}/build-runner.sh is missing)");
            continue;
        }
        if let Err(why) = toolchain(lang) {
            eprintln!("xtask: skipped the {lang} runner: {why}");
            continue;
        }
        let out = out_dir.join(format!("{lang}.wasm"));
        let inputs = newest_mtime(&root().join("sdk").join(lang)).max(newest_mtime(&root().join("wit")));
        let fresh = std::fs::metadata(&out).and_then(|m| m.modified()).is_ok_and(|at| at > inputs);
        if !fresh {
            run(Command::new(&builder).arg(&out))?;
        }
        built.push(out);
    }
    Ok(built)
}

fn chromium() -> bool {
    ["chromium", "chromium-browser"].iter().any(|c| Command::new(c).arg("--version").output().is_ok())
}

/// Install what the tests need besides cargo: every SDK's toolchain (each `toolchain.sh install`
/// is quick when it is already there) and Chromium for the HTML report test.
pub fn setup() -> Result<()> {
    for lang in LANGS {
        if toolchain(lang).is_err() {
            run(Command::new(script(lang, "toolchain.sh")).arg("install"))
                .with_context(|| format!("installing the {lang} toolchain (sdk/{lang}/toolchain.sh install)"))?;
        }
    }
    if !chromium() {
        let root_user = Command::new("id").arg("-u").output().is_ok_and(|o| o.stdout.starts_with(b"0\n"));
        if !root_user {
            bail!("the HTML report test needs Chromium: install it (Debian: apt-get install chromium) or run as root");
        }
        run(Command::new("apt-get").args(["update", "-qq"]).env("DEBIAN_FRONTEND", "noninteractive"))?;
        run(Command::new("apt-get")
            .args(["install", "-y", "-qq", "--no-install-recommends", "chromium"])
            .env("DEBIAN_FRONTEND", "noninteractive"))?;
    }
    Ok(())
}

/// Each SDK's own tests: Python's unit tests, and the C and JavaScript suites that build their
/// fixtures and run them with the real `loadhost` against its target.
pub fn test_sdks(loadhost: &Path) -> Result<()> {
    run(Command::new("python3")
        .args(["-B", "-m", "unittest", "discover", "-s", "sdk/python/tests"])
        .current_dir(root()))?;
    run(Command::new(root().join("sdk/c/tests/run.sh")).env("LOADHOST", loadhost))?;
    run(Command::new(root().join("sdk/js/test.sh")).arg(loadhost))
}
