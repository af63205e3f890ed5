//! `loadhost componentize CORE.wasm -o OUT.wasm`: wrap a WASI preview1 core module that exports
//! the `doer` functions by their canonical names into a plugin component, in-process (what
//! `loadhost run` does by itself when given a core module), for languages whose toolchains stop
//! at core modules (C with Debian's wasip1 sysroot, Zig, AssemblyScript, mainline Go).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use clap::Args;

use crate::exit::Failure;

/// Arguments of `loadhost componentize`.
#[derive(Debug, Args)]
pub struct ComponentizeArgs {
    /// The core module.
    module: PathBuf,

    /// Where to write the component.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    output: PathBuf,
}

/// Wrap the module and write the component.
pub fn run(args: ComponentizeArgs) -> Result<ExitCode, Failure> {
    let module = &args.module;
    let bytes = loadhost_input::read(module, loadhost_input::PLUGIN)
        .with_context(|| format!("{}: cannot read the module", module.display()))
        .map_err(Failure::usage)?;
    if !loadhost_component::is_core_module(&bytes) {
        let what = if bytes.starts_with(b"\0asm") { "already a component" } else { "not a WebAssembly module" };
        return Err(Failure::usage(anyhow::anyhow!("{}: {what}", module.display())));
    }
    let component = loadhost_component::wrap::componentize(&bytes)
        .with_context(|| module.display().to_string())
        .map_err(Failure::plugin)?;
    std::fs::write(&args.output, &component)
        .with_context(|| format!("--output {}: cannot write the file", args.output.display()))
        .map_err(Failure::usage)?;
    println!("{}: {} bytes (from a {}-byte core module)", args.output.display(), component.len(), bytes.len());
    Ok(ExitCode::SUCCESS)
}
