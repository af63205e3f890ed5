//! `loadhost build SCRIPT -o OUT.wasm`: a Python or JavaScript script made a standalone component
//! to share (`loadhost run OUT.wasm`, `loadhost push`): this binary's runner for its language,
//! whole, with the script's folder in a section after it. The same runner and files always make
//! the same bytes, and every script component shares the runner's compiled form in the cache.

use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use clap::Args;

use crate::exit::Failure;

/// Arguments of `loadhost build`.
#[derive(Debug, Args)]
pub struct BuildArgs {
    /// The script: a `.py` or `.js` file; its whole folder goes with it (as `loadhost run` grants it).
    script: PathBuf,

    /// Where to write the component.
    #[arg(short = 'o', long = "output", value_name = "OUT.wasm")]
    output: PathBuf,
}

/// Build the component and say what it is.
pub fn run(args: BuildArgs) -> Result<ExitCode, Failure> {
    refuse_overwriting_sources(&args)?;
    let built = loadhost_runtime::script_component(&args.script)
        .map_err(|err| if err.is_usage_error() { Failure::usage(err) } else { Failure::plugin(err) })?;
    std::fs::File::create(&args.output)
        .and_then(|created| crate::outputs::write_whole(&args.output, created, |out| out.write_all(&built.bytes)))
        .with_context(|| format!("{}: cannot write the component", args.output.display()))
        .map_err(Failure::runtime)?;
    let sha256 = &built.sha256;
    let files = built.script.files.len();
    crate::stdout::write(|out| {
        writeln!(
            out,
            "built {}: {} bytes, sha256 {sha256} (loadhost's {} runner and {}: {files} file{} of its folder, {} bytes)",
            args.output.display(),
            built.bytes.len(),
            built.script.language,
            built.script.entry,
            if files == 1 { "" } else { "s" },
            built.script.bytes(),
        )
    })?;
    Ok(ExitCode::SUCCESS)
}

/// `-o` must not name the script or another file of its folder that goes into the component:
/// `build app.py -o app.py` once replaced the script with the component and exited 0. A `.wasm`
/// there is fine (a script's folder never carries one into the component).
fn refuse_overwriting_sources(args: &BuildArgs) -> Result<(), Failure> {
    let Ok(output) = std::fs::canonicalize(&args.output) else { return Ok(()) };
    let Ok(script) = std::fs::canonicalize(&args.script) else { return Ok(()) };
    let folder = script.parent().unwrap_or(&script);
    let is_component = output.extension().is_some_and(|ext| ext == "wasm" || ext == "cwasm");
    if output == script || (output.starts_with(folder) && !is_component) {
        return Err(Failure::usage(anyhow::anyhow!(
            "-o {}: it is {} of the script's folder, which the component carries; write the component \
             to a .wasm file or outside {}",
            args.output.display(),
            if output == script { "the script itself, a file" } else { "a file" },
            folder.display()
        )));
    }
    Ok(())
}
