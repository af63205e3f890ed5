//! What a plugin file is and what it may try, read without running it: its digest and size, the
//! language and toolchain that built it (the producers sections, [`crate::toolchain`]), its
//! `loadhost:plugin` exports, the metrics it declares ([`crate::declared`]), the `-e` options it
//! declares ([`crate::options`]), and its imports
//! grouped into the capabilities a reviewer cares about (network, files, environment, clocks,
//! random, …). The sandbox grants none of them by default; this says what a shared workload would
//! ask for.

use std::collections::BTreeSet;

use sha2::{Digest as _, Sha256};
use thiserror::Error;

use crate::declared::{DeclaredError, DeclaredMetric, declared_metrics};
use crate::options::{DeclaredOption, OptionsError, declared_options};

/// Why a file cannot be inspected.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum InspectError {
    /// Not WebAssembly.
    #[error("not a WebAssembly file (it does not start with the \\0asm magic bytes)")]
    NotWasm,
    /// WebAssembly that does not parse.
    #[error("the WebAssembly does not parse: {0}")]
    Parse(String),
}

/// A component, or a core module (which `loadhost run` wraps).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A WebAssembly component.
    Component,
    /// A core module.
    CoreModule,
}

/// One thing a plugin may ask the host for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Capability {
    /// HTTP through the host's client (`loadhost:plugin/http`): the allow-list and HTTP metrics apply.
    HostHttp,
    /// Outbound HTTP through `wasi:http`.
    WasiHttp,
    /// Raw TCP/UDP sockets and name lookup (`wasi:sockets`).
    Sockets,
    /// Files (`wasi:filesystem`): none unless `--dir` grants a directory.
    Files,
    /// Environment variables and arguments (`wasi:cli/environment`): only `-e` values.
    Environment,
    /// Wall and monotonic clocks.
    Clocks,
    /// Random numbers.
    Random,
    /// Standard input, output, error and terminals.
    Stdio,
    /// Exiting the process (a trap for the task, in loadhost).
    Exit,
    /// The host's metrics import.
    Metrics,
    /// WebSocket connections through the host (`loadhost:plugin/websocket`): the allow-list applies.
    HostWebSocket,
    /// gRPC calls through the host (`loadhost:plugin/grpc`): the allow-list applies.
    HostGrpc,
}

impl Capability {
    /// A short name: `network (host http)`, `files`, …
    pub fn name(self) -> &'static str {
        match self {
            Capability::HostHttp => "network: http via the host",
            Capability::WasiHttp => "network: wasi:http",
            Capability::Sockets => "network: sockets",
            Capability::Files => "files",
            Capability::Environment => "environment",
            Capability::Clocks => "clocks",
            Capability::Random => "random",
            Capability::Stdio => "stdio",
            Capability::Exit => "exit",
            Capability::Metrics => "metrics",
            Capability::HostWebSocket => "network: websocket via the host",
            Capability::HostGrpc => "network: grpc via the host",
        }
    }

    /// Whether this reaches the network.
    pub fn is_network(self) -> bool {
        matches!(
            self,
            Capability::HostHttp
                | Capability::WasiHttp
                | Capability::Sockets
                | Capability::HostWebSocket
                | Capability::HostGrpc
        )
    }
}

/// What an import asks for: a component import (`wasi:sockets/tcp@0.2.0`), or a core module's
/// preview1 function (`wasi_snapshot_preview1::fd_write`).
pub fn capability_of(import: &str) -> Option<Capability> {
    let unversioned = import.split('@').next().unwrap_or(import);
    if let Some(function) = import.strip_prefix("wasi_snapshot_preview1::") {
        return match function.split('_').next().unwrap_or_default() {
            "fd" | "path" => Some(Capability::Files),
            "environ" | "args" => Some(Capability::Environment),
            "clock" => Some(Capability::Clocks),
            "random" => Some(Capability::Random),
            "sock" => Some(Capability::Sockets),
            "proc" => Some(Capability::Exit),
            _ => None,
        };
    }
    Some(match unversioned {
        "loadhost:plugin/http" => Capability::HostHttp,
        "loadhost:plugin/metrics" => Capability::Metrics,
        "loadhost:plugin/websocket" => Capability::HostWebSocket,
        "loadhost:plugin/grpc" => Capability::HostGrpc,
        "wasi:cli/environment" => Capability::Environment,
        "wasi:cli/exit" => Capability::Exit,
        i if i.starts_with("wasi:http/") => Capability::WasiHttp,
        i if i.starts_with("wasi:sockets/") => Capability::Sockets,
        i if i.starts_with("wasi:filesystem/") => Capability::Files,
        i if i.starts_with("wasi:clocks/") => Capability::Clocks,
        i if i.starts_with("wasi:random/") => Capability::Random,
        i if i.starts_with("wasi:cli/std") || i.starts_with("wasi:cli/terminal") => Capability::Stdio,
        _ => return None,
    })
}

/// Everything `loadhost inspect` reports.
#[derive(Debug, Clone)]
pub struct Inspection {
    /// Hex sha256 of the file.
    pub sha256: String,
    /// Bytes.
    pub size: u64,
    /// Component or core module.
    pub kind: Kind,
    /// The plugin's language, when the producers sections tell (`Rust`, `Python`, …).
    pub language: Option<&'static str>,
    /// The language with its toolchain (`Rust (rustc 1.95.0)`, `Python 3.14 (componentize-py)`).
    pub toolchain: Option<String>,
    /// The producers entries of the plugin's own code, as `field: name version`.
    pub producers: Vec<String>,
    /// The producers entries of the other modules inside (an interpreter, the preview1 adapter).
    pub nested_producers: Vec<String>,
    /// The `loadhost:plugin` interfaces it exports (a core module's by its functions' names);
    /// a toolchain's own exports are left out.
    pub exports: Vec<String>,
    /// The metrics it declares (its `loadhost:metrics` sections), or why they cannot be read.
    pub metrics: Result<Vec<DeclaredMetric>, DeclaredError>,
    /// The `-e` options it declares (its `loadhost:options` sections), or why they cannot be read.
    pub options: Result<Vec<DeclaredOption>, OptionsError>,
    /// The top-level imports.
    pub imports: Vec<String>,
    /// The imports read as capabilities, sorted.
    pub capabilities: Vec<Capability>,
    /// Whether the WASI preview1 adapter is inside (its imports then come with it).
    pub preview1_adapter: bool,
    /// Of the capabilities, those the preview1 adapter asks for by itself (whether or not the
    /// plugin's code uses them); empty without the adapter.
    pub adapter_capabilities: Vec<Capability>,
}

/// What the preview1 adapter this host wraps core modules with imports, as capabilities.
pub fn adapter_capabilities() -> Vec<Capability> {
    let adapter = wasi_preview1_component_adapter_provider::WASI_SNAPSHOT_PREVIEW1_REACTOR_ADAPTER;
    let mut out = BTreeSet::new();
    for payload in wasmparser::Parser::new(0).parse_all(adapter).flatten() {
        if let wasmparser::Payload::ImportSection(section) = payload {
            for import in section.into_imports().flatten() {
                out.extend(capability_of(import.module));
            }
        }
    }
    out.into_iter().collect()
}

/// Inspect `bytes`.
pub fn inspect(bytes: &[u8]) -> Result<Inspection, InspectError> {
    if bytes.get(..4) != Some(b"\0asm") {
        return Err(InspectError::NotWasm);
    }
    let kind = if crate::is_core_module(bytes) { Kind::CoreModule } else { Kind::Component };
    let (imports, exports) = top_level_names(bytes, kind)?;
    let capabilities: BTreeSet<Capability> = imports.iter().filter_map(|i| capability_of(i)).collect();
    let toolchain = crate::toolchain::read(bytes);
    let preview1_adapter = bytes.windows(ADAPTER_MARK.len()).any(|w| w == ADAPTER_MARK);
    Ok(Inspection {
        sha256: format!("{:x}", Sha256::digest(bytes)),
        size: bytes.len() as u64,
        kind,
        language: toolchain.language,
        toolchain: toolchain.toolchain,
        producers: toolchain.own,
        nested_producers: toolchain.nested,
        exports,
        metrics: declared_metrics(bytes),
        options: declared_options(bytes),
        imports,
        capabilities: capabilities.iter().copied().collect(),
        preview1_adapter,
        adapter_capabilities: if preview1_adapter {
            adapter_capabilities().into_iter().filter(|c| capabilities.contains(c)).collect()
        } else {
            Vec::new()
        },
    })
}

/// wit-component names the adapter's instance after it.
const ADAPTER_MARK: &[u8] = b"wit-component:adapter:wasi_snapshot_preview1";

/// The interfaces of the plugin contract: what a plugin exports for the host.
const PLUGIN_PACKAGE: &str = "loadhost:plugin/";

/// The imports of the outermost component or module (nested ones are internal), and its
/// `loadhost:plugin` exports: a toolchain may export more (componentize-py an `exports`
/// instance), which is not the plugin's interface. A core module's exports are functions
/// (`loadhost:plugin/doer@0.1.0#do-task`), listed by their interface.
fn top_level_names(bytes: &[u8], kind: Kind) -> Result<(Vec<String>, Vec<String>), InspectError> {
    let parse = |e: wasmparser::BinaryReaderError| InspectError::Parse(e.to_string());
    let (mut imports, mut exports) = (Vec::new(), Vec::new());
    let mut depth = 0usize;
    for payload in wasmparser::Parser::new(0).parse_all(bytes) {
        match payload.map_err(parse)? {
            wasmparser::Payload::Version { .. } => depth += 1,
            wasmparser::Payload::End(_) => depth = depth.saturating_sub(1),
            wasmparser::Payload::ComponentImportSection(section) if depth == 1 => {
                for import in section {
                    imports.push(import.map_err(parse)?.name.name.to_owned());
                }
            }
            wasmparser::Payload::ComponentExportSection(section) if depth == 1 => {
                for export in section {
                    let name = export.map_err(parse)?.name.name;
                    if name.starts_with(PLUGIN_PACKAGE) {
                        exports.push(name.to_owned());
                    }
                }
            }
            wasmparser::Payload::ImportSection(section) if depth == 1 && kind == Kind::CoreModule => {
                for import in section.into_imports() {
                    let import = import.map_err(parse)?;
                    imports.push(format!("{}::{}", import.module, import.name));
                }
            }
            wasmparser::Payload::ExportSection(section) if depth == 1 && kind == Kind::CoreModule => {
                for export in section {
                    let name = export.map_err(parse)?.name;
                    let interface = name.split('#').next().unwrap_or(name);
                    if name.starts_with(PLUGIN_PACKAGE) && !exports.iter().any(|e| e == interface) {
                        exports.push(interface.to_owned());
                    }
                }
            }
            _ => {}
        }
    }
    Ok((imports, exports))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn imports_read_as_capabilities() {
        assert_eq!(capability_of("wasi:sockets/tcp@0.2.0"), Some(Capability::Sockets));
        assert_eq!(capability_of("loadhost:plugin/http@0.1.0"), Some(Capability::HostHttp));
        assert_eq!(capability_of("loadhost:plugin/websocket@0.1.0"), Some(Capability::HostWebSocket));
        assert!(capability_of("loadhost:plugin/grpc@0.1.0").is_some_and(Capability::is_network));
        assert_eq!(capability_of("wasi:cli/environment@0.2.6"), Some(Capability::Environment));
        assert_eq!(capability_of("wasi:cli/stdout@0.2.6"), Some(Capability::Stdio));
        assert_eq!(capability_of("wasi_snapshot_preview1::path_open"), Some(Capability::Files));
        assert_eq!(capability_of("wasi_snapshot_preview1::random_get"), Some(Capability::Random));
        assert_eq!(capability_of("wasi:io/streams@0.2.6"), None, "plumbing, not a capability");
    }

    #[test]
    fn the_adapter_asks_for_files_and_environment_but_no_network() {
        let caps = adapter_capabilities();
        assert!(caps.contains(&Capability::Files) && caps.contains(&Capability::Environment), "{caps:?}");
        assert!(!caps.iter().any(|c| c.is_network()), "{caps:?}");
    }

    #[test]
    fn text_is_not_wasm() {
        assert!(matches!(inspect(b"hello"), Err(InspectError::NotWasm)));
    }
}
