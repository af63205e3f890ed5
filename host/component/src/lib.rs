//! Plugin files as files: what `loadhost componentize` and `loadhost inspect` do, and what lets
//! `loadhost run` take a core module.
//!
//! # Layout
//! - [`wrap`]: a WASI preview1 core module that exports the `doer` functions by their canonical
//!   names becomes a component (wit-component with the embedded preview1 adapter).
//! - [`inspect`]: a plugin's digest, toolchain, exports, declared metrics and imports, read as
//!   capabilities.
//! - [`toolchain`]: the language and toolchain that built a plugin, from its producers sections.
//! - [`declared`]: the metrics a plugin declares in its `loadhost:metrics` custom sections.
//! - [`options`]: the `-e` options a plugin declares in its `loadhost:options` custom sections, and
//!   a run's environment checked against them.
//! - [`script`]: a Python or JavaScript script's files, and the component a runner and they make.

#![deny(missing_docs)]

pub mod declared;
pub mod inspect;
pub mod options;
pub mod script;
pub mod toolchain;
pub mod wrap;

/// The plugin contract, as the host was built with it.
pub const WIT: &str = include_str!("../../../wit/plugin.wit");

/// Whether the component in `bytes` exports an interface (or function) named `name` at its top
/// level: read from the export sections without compiling (nested components' exports do not
/// count). False for anything that does not parse.
pub fn exports_interface(bytes: &[u8], name: &str) -> bool {
    let mut depth = 0u32;
    for payload in wasmparser::Parser::new(0).parse_all(bytes) {
        match payload {
            Ok(wasmparser::Payload::Version { .. }) => depth += 1,
            Ok(wasmparser::Payload::End(_)) => depth = depth.saturating_sub(1),
            Ok(wasmparser::Payload::ComponentExportSection(exports)) if depth == 1 => {
                if exports.into_iter().flatten().any(|export| export.name.name == name) {
                    return true;
                }
            }
            Ok(_) => {}
            Err(_) => return false,
        }
    }
    false
}

/// Whether `bytes` are a core module (not a component): the wasm magic and version 1.
pub fn is_core_module(bytes: &[u8]) -> bool {
    bytes.get(..8) == Some(&[0, b'a', b's', b'm', 1, 0, 0, 0])
}
