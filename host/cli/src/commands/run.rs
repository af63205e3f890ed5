//! `loadhost run PLUGIN [options]`: its arguments. The run itself is [`crate::run`]'s pipeline,
//! which `loadhost http` shares.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use loadhost_config::RunOptions;

use crate::exit::Failure;

/// Arguments of `loadhost run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// The plugin: a WebAssembly component exporting loadhost:plugin/doer, or a registry
    /// reference (HOST[:PORT]/REPOSITORY[:TAG][@sha256:HEX], see docs/sharing.md). Optional when
    /// every [[scenario]] block of the -c file names its own `plugin`.
    pub(crate) plugin: Option<PathBuf>,

    /// Read options from a TOML file whose keys are the long flag names (rate = 2000, max-workers =
    /// 5, stage = ["10s:100"]); flags win. [[scenario]] blocks run several loads together.
    #[arg(short = 'c', long = "config", value_name = "FILE")]
    pub(crate) config: Option<PathBuf>,

    #[command(flatten)]
    pub(crate) options: RunOptions,

    #[command(flatten)]
    pub(crate) registry: crate::registry::ResolveArgs,

    /// How the outputs name the plugin instead of its path: a plugin the binary carries is run
    /// from a temporary file whose name means nothing to the user.
    #[arg(skip)]
    pub(crate) named: Option<String>,
}

impl RunArgs {
    /// A run of a plugin the binary carries (`loadhost http`): its file at `plugin`, `named` in
    /// every output, with `options` as flags and the `-c` file `config`.
    pub(crate) fn built_in(plugin: PathBuf, named: &str, config: Option<PathBuf>, options: RunOptions) -> Self {
        let registry = crate::registry::ResolveArgs::default();
        Self { plugin: Some(plugin), config, options, registry, named: Some(named.to_owned()) }
    }
}

/// Run the load test and report it.
pub fn run(args: RunArgs) -> Result<ExitCode, Failure> {
    crate::run::run(args)
}
