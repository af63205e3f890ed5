//! `loadhost new NAME --lang rust|python|js|c|k6|locust`: a plugin project that builds and runs as
//! generated (for k6 and Locust, a starter script in that tool's style that loadhost, and the tool
//! itself, run as it is). Each language's files come from `sdk/LANG/` and are built into the binary, so the
//! command works anywhere: the template (`sdk/LANG/template`, `__NAME__` replaced), the SDK
//! (`sdk/LANG/lib`, or the Rust SDK's sources), the build script (`sdk/LANG/build.sh`) and the
//! contract (`wit/plugin.wit`). The project's README has the build and run commands.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context as _;
use clap::{Args, ValueEnum};
use include_dir::{Dir, include_dir};

use crate::exit::Failure;

/// A plugin language.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Lang {
    /// Rust (cargo, wasm32-wasip2).
    Rust,
    /// Python (a script loadhost runs as it is; componentize-py to build a component).
    Python,
    /// JavaScript (a script loadhost runs as it is; componentize-js to build a component).
    Js,
    /// C (clang, wasi-libc, `loadhost componentize`).
    C,
    /// A k6 script (`script.js`), which loadhost runs as it is, as k6 does.
    K6,
    /// A locustfile (`locustfile.py`), which loadhost runs as it is, as Locust does.
    Locust,
}

impl Lang {
    /// The language's name as people write it, for messages.
    fn name(self) -> &'static str {
        match self {
            Lang::Rust => "Rust",
            Lang::Python => "Python",
            Lang::Js => "JavaScript",
            Lang::C => "C",
            Lang::K6 => "k6",
            Lang::Locust => "Locust",
        }
    }
}

/// Arguments of `loadhost new`.
#[derive(Debug, Args)]
pub struct NewArgs {
    /// The plugin's name (letters, digits, '-' and '_', starting with a letter); also its folder.
    name: String,

    /// The language.
    #[arg(long, value_enum, default_value = "rust")]
    lang: Lang,

    /// Create the folder inside DIR.
    #[arg(long, value_name = "DIR", default_value = ".")]
    dir: PathBuf,
}

static WIT: &str = include_str!("../../../../wit/plugin.wit");
static RUST_TEMPLATE: Dir = include_dir!("$CARGO_MANIFEST_DIR/../../sdk/rust/template");
static RUST_SDK: Dir = include_dir!("$CARGO_MANIFEST_DIR/../../sdk/rust/src");
static RUST_SDK_MANIFEST: &str = include_str!("../../../../sdk/rust/Cargo.toml");
static RUST_LOCK: &str = include_str!("../../../../plugins/Cargo.lock");
static PYTHON_TEMPLATE: Dir = include_dir!("$CARGO_MANIFEST_DIR/../../sdk/python/template");
static PYTHON_LIB: Dir = include_dir!("$CARGO_MANIFEST_DIR/../../sdk/python/lib");
static JS_TEMPLATE: Dir = include_dir!("$CARGO_MANIFEST_DIR/../../sdk/js/template");
static JS_LIB: Dir = include_dir!("$CARGO_MANIFEST_DIR/../../sdk/js/lib");
static C_TEMPLATE: Dir = include_dir!("$CARGO_MANIFEST_DIR/../../sdk/c/template");
static C_LIB: Dir = include_dir!("$CARGO_MANIFEST_DIR/../../sdk/c/lib");
static K6_TEMPLATE: Dir = include_dir!("$CARGO_MANIFEST_DIR/../../sdk/js/template-k6");
static LOCUST_TEMPLATE: Dir = include_dir!("$CARGO_MANIFEST_DIR/../../sdk/python/template-locust");
static JS_TOOLCHAIN: Dir = include_dir!("$CARGO_MANIFEST_DIR/../../sdk/js/toolchain");

/// A language's toolchain installer (`toolchain.sh check|install`); Rust has rustup.
fn toolchain_script(lang: Lang) -> Option<&'static str> {
    match lang {
        Lang::Rust => None,
        Lang::Python => Some(include_str!("../../../../sdk/python/toolchain.sh")),
        Lang::Js => Some(include_str!("../../../../sdk/js/toolchain.sh")),
        Lang::C => Some(include_str!("../../../../sdk/c/toolchain.sh")),
        Lang::K6 | Lang::Locust => None,
    }
}

/// A language's build script.
/// The script a project of `lang` runs as (`loadhost run DIR/ENTRY`), for the languages the
/// binary carries a runner for.
fn script_entry(lang: Lang) -> Option<&'static str> {
    match lang {
        Lang::Python => Some("app.py"),
        Lang::Js => Some("plugin.js"),
        Lang::K6 => Some("script.js"),
        Lang::Locust => Some("locustfile.py"),
        Lang::Rust | Lang::C => None,
    }
}

fn build_script(lang: Lang) -> &'static str {
    match lang {
        Lang::Rust => include_str!("../../../../sdk/rust/build.sh"),
        Lang::Python => include_str!("../../../../sdk/python/build.sh"),
        Lang::Js => include_str!("../../../../sdk/js/build.sh"),
        Lang::C => include_str!("../../../../sdk/c/build.sh"),
        // Not written: a peer script is not built.
        Lang::K6 | Lang::Locust => "",
    }
}

fn valid_name(name: &str) -> bool {
    name.starts_with(|c: char| c.is_ascii_alphabetic())
        && name.len() <= 64
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

/// Write `dir`'s files under `to`, replacing `__NAME__` in their text.
fn write_dir(dir: &Dir<'_>, to: &Path, name: &str) -> std::io::Result<()> {
    for file in dir.files() {
        let path = to.join(file.path());
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        match file.contents_utf8() {
            Some(text) => std::fs::write(&path, text.replace("__NAME__", name))?,
            None => std::fs::write(&path, file.contents())?,
        }
    }
    for sub in dir.dirs() {
        write_dir(sub, to, name)?;
    }
    Ok(())
}

fn write_executable(path: &Path, text: &str) -> std::io::Result<()> {
    std::fs::write(path, text)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755))?;
    }
    Ok(())
}

/// The Rust SDK's manifest, standalone: it is built inside the repository's guest workspace.
fn rust_sdk_manifest() -> String {
    RUST_SDK_MANIFEST
        .lines()
        .filter(|l| !l.starts_with("workspace =") && !l.starts_with("# Linted and built together"))
        .collect::<Vec<_>>()
        .join("\n")
        + "\n"
}

fn scaffold(args: &NewArgs, root: &Path) -> std::io::Result<()> {
    let name = args.name.as_str();
    match args.lang {
        Lang::K6 => return write_dir(&K6_TEMPLATE, root, name),
        Lang::Locust => return write_dir(&LOCUST_TEMPLATE, root, name),
        _ => {}
    }
    std::fs::create_dir_all(root.join("wit"))?;
    std::fs::write(root.join("wit/plugin.wit"), WIT)?;
    write_executable(&root.join("build.sh"), build_script(args.lang))?;
    if let Some(script) = toolchain_script(args.lang) {
        write_executable(&root.join("toolchain.sh"), script)?;
    }
    match args.lang {
        Lang::Rust => {
            write_dir(&RUST_TEMPLATE, root, name)?;
            // The SDK finds the contract at ../../wit from its own folder, as in the repository.
            let sdk = root.join("sdk/rust");
            write_dir(&RUST_SDK, &sdk.join("src"), name)?;
            std::fs::write(sdk.join("Cargo.toml"), rust_sdk_manifest())?;
            // Pins the SDK's dependencies to the versions the examples build with (offline too).
            std::fs::write(root.join("Cargo.lock"), RUST_LOCK)?;
        }
        Lang::Python => {
            write_dir(&PYTHON_TEMPLATE, root, name)?;
            write_dir(&PYTHON_LIB, &root.join("lib"), name)?;
        }
        Lang::Js => {
            write_dir(&JS_TEMPLATE, root, name)?;
            write_dir(&JS_LIB, &root.join("lib"), name)?;
            // The pinned npm lock the installer reads, next to it as in the repository.
            write_dir(&JS_TOOLCHAIN, &root.join("toolchain"), name)?;
        }
        Lang::C => {
            write_dir(&C_TEMPLATE, root, name)?;
            write_dir(&C_LIB, &root.join("lib"), name)?;
        }
        Lang::K6 | Lang::Locust => {}
    }
    Ok(())
}

/// Create the project.
pub fn run(args: NewArgs) -> Result<ExitCode, Failure> {
    if !valid_name(&args.name) {
        return Err(Failure::usage(anyhow::anyhow!(
            "'{}' is not a plugin name: letters, digits, '-' and '_', starting with a letter",
            args.name
        )));
    }
    let root = args.dir.join(&args.name);
    if root.exists() {
        return Err(Failure::usage(anyhow::anyhow!("{}: already exists; pick another name or --dir", root.display())));
    }
    scaffold(&args, &root)
        .with_context(|| format!("{}: cannot create the project", root.display()))
        .map_err(Failure::usage)?;
    let setup = if toolchain_script(args.lang).is_some() { "./toolchain.sh install && " } else { "" };
    let dir = root.display();
    let name = &args.name;
    let text = match (args.lang, script_entry(args.lang)) {
        (Lang::K6, _) => format!(
            "created {dir} (a k6 script)\n  try:   loadhost target --addr 127.0.0.1:8080 &\n  run:   loadhost run {dir}/script.js --allow-host 127.0.0.1:8080 (k6 runs it too; see its README.md)"
        ),
        (Lang::Locust, _) => format!(
            "created {dir} (a locustfile)\n  try:   loadhost target --addr 127.0.0.1:8080 &\n  run:   loadhost locust -f {dir}/locustfile.py -u 5 -r 5 -t 10s -H http://127.0.0.1:8080 (Locust runs it too; see its README.md)"
        ),
        (_, entry) => match entry {
            // A script runs as it is, by the runner in this binary: no toolchain, no build.
            Some(entry) => format!(
                "created {dir} ({} plugin)\n  run:   loadhost run {dir}/{entry} (no build; see its README.md)\n  share: loadhost build {dir}/{entry} -o {name}.wasm",
                args.lang.name()
            ),
            None => format!(
                "created {dir} ({} plugin)\n  build: cd {dir} && {setup}./build.sh . {name}.wasm\n  run:   loadhost run {name}.wasm (see its README.md)",
                args.lang.name()
            ),
        },
    };
    crate::stdout::write(|out| writeln!(out, "{text}"))?;
    Ok(ExitCode::SUCCESS)
}
