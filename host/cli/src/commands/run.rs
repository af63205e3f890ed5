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

    /// Whether the script's k6 `options` were computed by its init code (and applied): `prepare`
    /// then has nothing left to say about them.
    #[arg(skip)]
    pub(crate) options_computed: bool,
}

impl RunArgs {
    /// A run of a plugin the binary carries (`loadhost http`): its file at `plugin`, `named` in
    /// every output, with `options` as flags and the `-c` file `config`.
    pub(crate) fn built_in(plugin: PathBuf, named: &str, config: Option<PathBuf>, options: RunOptions) -> Self {
        let registry = crate::registry::ResolveArgs::default();
        Self { plugin: Some(plugin), config, options, registry, named: Some(named.to_owned()), options_computed: false }
    }
}

/// Run the load test and report it.
pub fn run(mut args: RunArgs) -> Result<ExitCode, Failure> {
    apply_load_shape(&mut args)?;
    apply_k6_options(&mut args)?;
    crate::run::run(args)
}

/// A locustfile's `LoadTestShape` as a ramp of workers (flags win): its ticks are taken by the
/// Python runner before the run, on a simulated clock (sdk/python/runner/locust/shape.py).
fn apply_load_shape(args: &mut RunArgs) -> Result<(), Failure> {
    let Some(plugin) = args.plugin.clone().filter(|p| p.is_file()) else { return Ok(()) };
    let Some((at, class)) = crate::locustfile::shape(&plugin) else { return Ok(()) };
    let mut options = args.options.clone();
    let what = format!("{class}'s ticks");
    let Some(applied) = crate::k6_options::apply_computed(&plugin, &at, &what, &mut options)? else { return Ok(()) };
    if args.config.is_some() {
        return Err(Failure::usage(anyhow::anyhow!(
            "{at}: the locustfile's {class} shapes the load and -c names a config file: give the load in one of them"
        )));
    }
    if applied.read.iter().any(|k| k == "stages") {
        let stages =
            options.stage.iter().map(|s| format!("{}:{}", s.duration, s.target.0)).collect::<Vec<_>>().join(" ");
        tracing::info!("{at}: {class}'s ticks planned as --stage {stages}");
    } else {
        tracing::info!("{at}: {class}'s ticks are not run: --stage on the command line wins");
    }
    args.options = options;
    args.options_computed = true;
    Ok(())
}

/// A k6 script's `options` as flags (flags win), said in one line; a value k6 would not take is
/// exit 2. Options the text does not give as a literal are computed by the script's init code,
/// before anything else is loaded.
fn apply_k6_options(args: &mut RunArgs) -> Result<(), Failure> {
    use crate::k6_options::NotRead;
    let Some(plugin) = args.plugin.clone().filter(|p| p.is_file()) else { return Ok(()) };
    let mut options = args.options.clone();
    let applied = match crate::k6_options::apply(&plugin, &mut options) {
        Ok(None) => return Ok(()),
        Ok(Some(applied)) => applied,
        Err(NotRead::Invalid { at, why }) => return Err(Failure::usage(anyhow::anyhow!("{at}: k6's options: {why}"))),
        Err(NotRead::NotLiteral { at, why }) => {
            match crate::k6_options::apply_computed(&plugin, &at, "k6's options", &mut options)? {
                None => return Ok(()),
                Some(applied) => {
                    tracing::debug!("{at}: k6's options are not a literal ({why}): computed by the script's init code");
                    crate::prepare::report_unread_k6_options(&applied)?;
                    args.options_computed = true;
                    applied
                }
            }
        }
    };
    if args.config.is_some() {
        return Err(Failure::usage(anyhow::anyhow!(
            "{}: the script sets k6's options and -c names a config file: give the load in one of them",
            applied.at
        )));
    }
    let mut said = format!("{}: k6's options read: {}", applied.at, applied.read.join(", "));
    if !applied.overridden.is_empty() {
        said.push_str(&format!("; flags win over {}", applied.overridden.join(", ")));
    }
    tracing::info!("{said}");
    args.options = options;
    Ok(())
}
