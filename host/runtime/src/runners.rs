//! The script runners this binary carries: a component per language that runs a script of that
//! language from the folder the host grants it (see `loadhost_component::script`). They are built
//! once with the toolchains (`cargo xtask runners`), embedded deflated by build.rs, and compiled
//! once per machine: the compile cache is keyed by a runner's bytes, so no script, edited or
//! built, ever compiles anything.
//!
//! The runner's contract: the script's files are granted read-only at [`SCRIPT_DIR`], and
//! [`SCRIPT_VAR`] names the entry file in that folder; it is the only variable the runner gets
//! besides the user's `-e`.

use std::io::Read as _;

use loadhost_component::script::Language;

/// Where a runner finds the script's files (read-only).
pub const SCRIPT_DIR: &str = "/script";

/// The variable naming the entry file, relative to [`SCRIPT_DIR`].
pub const SCRIPT_VAR: &str = "LOADHOST_SCRIPT";

const PYTHON: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/python.wasm.deflate"));
const PYTHON_SHA256: &str = include_str!(concat!(env!("OUT_DIR"), "/python.sha256"));
const JS: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/js.wasm.deflate"));
const JS_SHA256: &str = include_str!(concat!(env!("OUT_DIR"), "/js.sha256"));

/// The runner for one language, as embedded.
#[derive(Debug, Clone, Copy)]
pub struct Runner {
    /// Its language.
    pub language: Language,
    deflated: &'static [u8],
    sha256: &'static str,
}

/// This binary was built without a runner.
#[derive(Debug, thiserror::Error)]
#[error(
    "this loadhost was built without its {0} runner, so it cannot run {0} scripts: build the runners with \
     `cargo xtask runners` (it needs the toolchains of `cargo xtask setup`), then rebuild loadhost"
)]
pub struct NoRunner(pub Language);

impl Runner {
    /// The runner for `language`.
    pub fn of(language: Language) -> Result<Self, NoRunner> {
        let (deflated, sha256) = match language {
            Language::Python => (PYTHON, PYTHON_SHA256),
            Language::JavaScript => (JS, JS_SHA256),
        };
        if deflated.is_empty() {
            return Err(NoRunner(language));
        }
        Ok(Self { language, deflated, sha256 })
    }

    /// Hex sha256 of the runner component.
    pub fn sha256(&self) -> &'static str {
        self.sha256
    }

    /// The runner component's bytes (inflated: about 100 ms for 20 MB).
    pub fn bytes(&self) -> std::io::Result<Vec<u8>> {
        let mut out = Vec::with_capacity(self.deflated.len() * 3);
        flate2::read::DeflateDecoder::new(self.deflated).read_to_end(&mut out)?;
        Ok(out)
    }

    /// How the compile cache and the logs name it.
    pub fn label(&self) -> String {
        format!("loadhost's {} runner", self.language)
    }
}
