//! Core module → component, in-process, so Zig, TinyGo, AssemblyScript or C users need no extra
//! tool. The module must export the `doer` function by its canonical name
//! (`loadhost:plugin/doer@0.1.0#do-task`, and optionally the lifecycle's) and may import
//! `wasi_snapshot_preview1`, which the preview1 adapter pinned to the host's wasmtime maps onto
//! WASI 0.2. A module built with wit-bindgen already carries its world (a `component-type`
//! custom section); one written against the canonical ABI by hand gets the loadhost world here.

use thiserror::Error;
use wit_component::{ComponentEncoder, StringEncoding};
use wit_parser::Resolve;

/// The import module the preview1 adapter stands in for.
const PREVIEW1: &str = "wasi_snapshot_preview1";
/// A lifecycle export's canonical name, which picks the world with the lifecycle.
const LIFECYCLE_SETUP: &str = "loadhost:plugin/lifecycle@0.1.0#setup";

/// Why a core module could not be wrapped.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum WrapError {
    /// Not a core module.
    #[error("not a WebAssembly core module")]
    NotCoreModule,
    /// The module does not parse.
    #[error("the core module does not parse: {0}")]
    Parse(String),
    /// wit-component refused it (a missing export, an import it cannot map).
    #[error("cannot wrap the core module into a component: {0}")]
    Encode(String),
}

/// Which world the module implements, when it does not say: the one whose exports it has.
fn world_for(core: &[u8]) -> Result<(&'static str, bool), WrapError> {
    let mut lifecycle = false;
    let mut preview1 = false;
    let mut has_type = false;
    for payload in wasmparser::Parser::new(0).parse_all(core) {
        match payload.map_err(|e| WrapError::Parse(e.to_string()))? {
            wasmparser::Payload::ExportSection(exports) => {
                for export in exports {
                    lifecycle |= export.map_err(|e| WrapError::Parse(e.to_string()))?.name == LIFECYCLE_SETUP;
                }
            }
            wasmparser::Payload::ImportSection(imports) => {
                for import in imports.into_imports() {
                    preview1 |= import.map_err(|e| WrapError::Parse(e.to_string()))?.module == PREVIEW1;
                }
            }
            wasmparser::Payload::CustomSection(section) => has_type |= section.name().starts_with("component-type"),
            _ => {}
        }
    }
    let world = if has_type {
        ""
    } else if lifecycle {
        "workload-with-lifecycle"
    } else {
        "workload"
    };
    Ok((world, preview1))
}

/// Wrap `core` into a component that runs as a loadhost plugin.
pub fn componentize(core: &[u8]) -> Result<Vec<u8>, WrapError> {
    if !crate::is_core_module(core) {
        return Err(WrapError::NotCoreModule);
    }
    let (world, preview1) = world_for(core)?;
    let mut module = core.to_vec();
    if !world.is_empty() {
        let mut resolve = Resolve::default();
        let encode = |e: anyhow::Error| WrapError::Encode(one_line(&e));
        let package = resolve.push_str("plugin.wit", crate::WIT).map_err(encode)?;
        let world = resolve.select_world(&[package], Some(world)).map_err(encode)?;
        wit_component::embed_component_metadata(&mut module, &resolve, world, StringEncoding::UTF8).map_err(encode)?;
    }
    let encode = |e: anyhow::Error| WrapError::Encode(one_line(&e));
    let mut encoder = ComponentEncoder::default().validate(true).module(&module).map_err(encode)?;
    if preview1 {
        let adapter = wasi_preview1_component_adapter_provider::WASI_SNAPSHOT_PREVIEW1_REACTOR_ADAPTER;
        encoder = encoder.adapter(PREVIEW1, adapter).map_err(encode)?;
    }
    encoder.encode().map_err(encode)
}

/// An error chain on one line, as every loadhost message is.
fn one_line(err: &anyhow::Error) -> String {
    let text = format!("{err:#}");
    text.lines().map(str::trim).filter(|l| !l.is_empty()).collect::<Vec<_>>().join(" ")
}
