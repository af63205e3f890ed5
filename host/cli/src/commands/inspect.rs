//! `loadhost inspect PLUGIN [--json]`: what a plugin is and what it may try, without running it —
//! its sha256 and size, the language and toolchain that built it, its `loadhost:plugin` exports,
//! the metrics and the `-e` options it declares, and its imports read as the capabilities it asks
//! for. A reviewer reads this before running a shared workload; a threshold writer, to spell the
//! plugin's metrics; a user, to know what to pass with `-e`.

use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use clap::Args;
use loadhost_component::inspect::{Capability, Inspection, Kind, inspect};
use loadhost_component::script::{Language, Script};
use serde_json::json;

use crate::exit::Failure;

/// Arguments of `loadhost inspect`.
#[derive(Debug, Args)]
pub struct InspectArgs {
    /// The plugin (a component, or a core module `loadhost run` would wrap), or a registry
    /// reference (see docs/sharing.md).
    plugin: PathBuf,

    #[command(flatten)]
    registry: crate::registry::ResolveArgs,

    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
}

/// The capabilities beyond the ones the preview1 adapter brings by itself.
fn own(i: &Inspection) -> Vec<Capability> {
    i.capabilities.iter().copied().filter(|c| !i.adapter_capabilities.contains(c)).collect()
}

/// Whether its tasks are async functions (`doer-async`), run many to an instance.
fn is_async(i: &Inspection) -> bool {
    i.exports.iter().any(|e| e == loadhost_runtime::plugin::DOER_ASYNC_EXPORT)
}

fn to_json(path: &str, i: &Inspection) -> serde_json::Value {
    json!({
        "path": path,
        "sha256": i.sha256,
        "size": i.size,
        "kind": match i.kind { Kind::Component => "component", Kind::CoreModule => "core-module" },
        "language": i.language,
        "toolchain": i.toolchain,
        "producers": i.producers,
        "nested_producers": i.nested_producers,
        "exports": i.exports,
        "async_tasks": is_async(i),
        "metrics": i.metrics.as_ref().map(|all| all.iter().map(|m| json!({
            "name": m.name,
            "kind": m.kind.name(),
            "tags": m.tags,
        })).collect::<Vec<_>>()).unwrap_or_default(),
        "metrics_error": i.metrics.as_ref().err().map(ToString::to_string),
        "options": i.options.as_ref().map(|all| all.iter().map(|o| json!({
            "name": o.name,
            "type": o.ty.name(),
            "required": o.required,
            "default": o.default,
            "help": o.help,
        })).collect::<Vec<_>>()).unwrap_or_default(),
        "options_error": i.options.as_ref().err().map(ToString::to_string),
        "imports": i.imports,
        "capabilities": i.capabilities.iter().map(|c| c.name()).collect::<Vec<_>>(),
        "network": i.capabilities.iter().any(|c| c.is_network()),
        "preview1_adapter": i.preview1_adapter,
        "adapter_capabilities": i.adapter_capabilities.iter().map(|c| c.name()).collect::<Vec<_>>(),
        "own_capabilities": own(i).iter().map(|c| c.name()).collect::<Vec<_>>(),
    })
}

fn to_text(path: &str, i: &Inspection) -> String {
    let list = |items: &[String]| if items.is_empty() { "(none)".to_owned() } else { items.join("\n    ") };
    let kind = match i.kind {
        Kind::Component if is_async(i) => {
            "component, async tasks (doer-async: up to 1,000 workers share an instance; docs/runtime.md)"
        }
        Kind::Component => "component",
        Kind::CoreModule => "core module (loadhost run wraps it into a component)",
    };
    let names = |caps: &[Capability]| {
        if caps.is_empty() { "none".to_owned() } else { caps.iter().map(|c| c.name()).collect::<Vec<_>>().join(", ") }
    };
    let capabilities = names(&own(i));
    let adapter = if i.preview1_adapter {
        format!(
            "\n  via the WASI preview1 adapter (asked for whether or not the code uses them): {}",
            names(&i.adapter_capabilities)
        )
    } else {
        String::new()
    };
    format!(
        "{path}\n  sha256: {}\n  size: {} bytes\n  kind: {kind}\n  toolchain: {}\n  producers:\n    {}\n  exports:\n    {}\n  metrics declared:{}\n  options declared{}\n  imports:\n    {}\n  capabilities asked for: {capabilities}{adapter}\n  granted by default: none (network needs --allow-host, files --dir, environment -e)\n",
        i.sha256,
        i.size,
        i.toolchain.as_deref().unwrap_or("unknown (no producers section names a language)"),
        list(&i.producers),
        list(&i.exports),
        metrics_text(i),
        options_text(i),
        list(&i.imports),
    )
}

/// A bundle's TOML as it was pushed (what `run REF` applies under its flags) and its data layer.
fn bundle_text(b: &crate::registry::Bundle) -> String {
    let data = b.data.as_ref().map_or_else(|| "none".to_owned(), |(media, size)| format!("{media}, {size} bytes"));
    let toml: String = b.toml.lines().map(|l| format!("\n    {l}")).collect();
    format!(
        "  bundle (applied by `loadhost run REF` under its flags; it grants nothing):\n  bundle config:{toml}\n  bundle data: {data}\n"
    )
}

/// The plugin's bytes, and the script it is (or carries): a `.py`/`.js` file is inspected as the
/// component `loadhost build` would make of it.
fn read(file: &std::path::Path, path: &str) -> Result<(Vec<u8>, Option<Script>), Failure> {
    if Language::of(file).is_some() {
        let built = loadhost_runtime::script_component(file)
            .map_err(|err| if err.is_usage_error() { Failure::usage(err) } else { Failure::plugin(err) })?;
        return Ok((built.bytes, Some(built.script)));
    }
    let bytes = loadhost_input::read(file, loadhost_input::PLUGIN)
        .with_context(|| format!("{path}: cannot read the plugin"))
        .map_err(Failure::usage)?;
    let script = loadhost_component::script::split(&bytes)
        .with_context(|| path.to_owned())
        .map_err(Failure::plugin)?
        .map(|(_, script)| script);
    Ok((bytes, script))
}

/// What a script component carries and is granted.
fn script_text(s: &Script) -> String {
    let files: String = s.files.iter().map(|(p, b)| format!("\n    {p} ({} bytes)", b.len())).collect();
    format!(
        "  script: {}, entry {}, run by loadhost's {} runner\n  script files (granted to it read-only at /script, nothing else of the folder):{files}\n",
        s.language, s.entry, s.language
    )
}

/// The declared metrics as `--metric` would name them, one a line, or why there are none.
fn metrics_text(i: &Inspection) -> String {
    match &i.metrics {
        Ok(all) if all.is_empty() => " none (a threshold on its own metrics needs --metric NAME:KIND)".to_owned(),
        Ok(all) => all.iter().map(|m| format!("\n    {m}")).collect(),
        Err(err) => format!(" unreadable: {err} (loadhost run refuses it)"),
    }
}

/// The declared options as `NAME (TYPE, required or default D): HELP`, one a line, or why there
/// are none.
fn options_text(i: &Inspection) -> String {
    match &i.options {
        Ok(all) if all.is_empty() => ": none (loadhost run passes any -e to it unchecked)".to_owned(),
        Ok(all) => {
            let lines: String = all.iter().map(|o| format!("\n    {}", o.describe())).collect();
            format!(" (-e NAME=VALUE; loadhost run checks them before any load):{lines}")
        }
        Err(err) => format!(": unreadable: {err} (loadhost run refuses it)"),
    }
}

/// Print what the plugin is and asks for.
pub fn run(args: InspectArgs) -> Result<ExitCode, Failure> {
    let resolved = crate::registry::resolve(&args.plugin, &args.registry)?;
    let path = match &resolved.oci {
        Some((reference, digest)) => format!("{reference} ({digest})"),
        None => resolved.path.display().to_string(),
    };
    let (bytes, script) = read(&resolved.path, &path)?;
    let inspection = inspect(&bytes).with_context(|| path.clone()).map_err(Failure::plugin)?;
    let bundle = resolved.bundle.as_ref();
    crate::stdout::write(|out| {
        if args.json {
            let mut value = to_json(&path, &inspection);
            if let Some(s) = &script {
                value["script"] = json!({
                    "language": s.language.name(),
                    "entry": s.entry,
                    "files": s.files.iter().map(|(p, b)| json!({"path": p, "size": b.len()})).collect::<Vec<_>>(),
                });
            }
            if let Some(v) = &resolved.signature {
                value["signature"] = json!({"key": v.key.display().to_string(), "manifest": v.signature});
            }
            if let Some(b) = bundle {
                value["bundle"] = json!({
                    "config": b.toml,
                    "data": b.data.as_ref().map(|(media_type, size)| json!({"media_type": media_type, "size": size})),
                });
            }
            writeln!(out, "{value:#}")
        } else {
            let script = script.as_ref().map(script_text).unwrap_or_default();
            let signature = resolved
                .signature
                .as_ref()
                .map(|v| {
                    format!(
                        "  signed: by {} (signature {}), as the trust policy requires\n",
                        v.key.display(),
                        v.signature
                    )
                })
                .unwrap_or_default();
            write!(
                out,
                "{}{signature}{script}{}",
                to_text(&path, &inspection),
                bundle.map(bundle_text).unwrap_or_default()
            )
        }
    })?;
    Ok(ExitCode::SUCCESS)
}
