//! `loadhost push PLUGIN REF`, `loadhost pin REF` and `loadhost pull REF`: plugins shared through OCI registries (see
//! docs/sharing.md); `loadhost keygen NAME`, `loadhost sign REF --key KEY` and `loadhost trust-policy
//! --example`: signed plugins. Reaching a registry, resolving a reference and enforcing a trust
//! policy are [`crate::registry`]'s.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Args;
use loadhost_registry::{
    BUNDLE_CONFIG_MEDIA_TYPE, EXAMPLE_POLICY, OnMove, PrivateKey, Pull, check_bundle_toml, data_media_type, keygen,
};

use crate::exit::Failure;
use crate::registry::{ConnArgs, parse_ref, registry, registry_failure};

/// Arguments of `loadhost push`.
#[derive(Debug, Args)]
pub struct PushArgs {
    /// The plugin component to publish.
    plugin: PathBuf,

    /// Where: HOST[:PORT]/REPOSITORY[:TAG] (or oci://…).
    reference: String,

    /// Push a bundle: the plugin with the run's TOML (`-c`) and data feed (`--data`, else the
    /// TOML's `data`) as extra layers; `run REF` applies them (its flags win).
    #[arg(long, requires = "config")]
    bundle: bool,

    /// The bundle's TOML (the keys of `loadhost run -c`; nothing that grants access or writes).
    #[arg(short = 'c', long = "config", value_name = "FILE", requires = "bundle")]
    config: Option<PathBuf>,

    /// The bundle's data feed (JSON lines or CSV, by extension).
    #[arg(long = "data", value_name = "FILE", requires = "bundle")]
    data: Option<PathBuf>,

    /// Sign the pushed manifest with this private key (`loadhost keygen NAME` writes NAME.key):
    /// the signature goes to the registry beside it, as an OCI 1.1 referrer.
    #[arg(long = "sign", value_name = "KEY")]
    sign: Option<PathBuf>,

    #[command(flatten)]
    conn: ConnArgs,
}

/// Publish the plugin and print `REF@sha256:…`.
pub fn push(args: PushArgs) -> Result<ExitCode, Failure> {
    let r = parse_ref(&args.reference)?;
    let wasm = if loadhost_component::script::Language::of(&args.plugin).is_some() {
        // A script goes as the component `loadhost build` makes of it: the same bytes, the same digest.
        loadhost_runtime::script_component(&args.plugin)
            .map_err(|err| if err.is_usage_error() { Failure::usage(err) } else { Failure::plugin(err) })?
            .bytes
    } else {
        loadhost_input::read(&args.plugin, loadhost_input::PLUGIN).map_err(|err| {
            Failure::usage(anyhow::anyhow!("{}: cannot read the plugin: {err}", args.plugin.display()))
        })?
    };
    if !wasm.starts_with(b"\0asm") {
        return Err(Failure::plugin(anyhow::anyhow!(
            "{}: not a WebAssembly file (it does not start with the \\0asm magic bytes)",
            args.plugin.display()
        )));
    }
    let extra = bundle_layers(&args)?;
    // The layer's title: the file pushed, as a component (a script goes as its runner's component).
    let stem = args.plugin.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_else(|| "plugin".into());
    let title = format!("{stem}.wasm");
    // The key is read first: a bad one is told before anything is pushed.
    let key = args.sign.as_deref().map(PrivateKey::read).transpose().map_err(Failure::usage)?;
    let registry = registry(&args.conn)?;
    let digest = registry.push(&r, &title, wasm, extra).map_err(registry_failure)?;
    if let Some(key) = &key {
        let signature = registry.sign(&r, &digest, key).map_err(registry_failure)?;
        tracing::info!("signed {} with {} (signature {signature})", r.pinned(&digest), key.path().display());
    }
    crate::stdout::write(|out| writeln!(out, "{}", r.pinned(&digest)))?;
    Ok(ExitCode::SUCCESS)
}

/// Arguments of `loadhost sign`.
#[derive(Debug, Args)]
pub struct SignArgs {
    /// The plugin to sign, already pushed: HOST[:PORT]/REPOSITORY[:TAG][@sha256:HEX].
    reference: String,

    /// The private key (`loadhost keygen NAME` writes NAME.key).
    #[arg(long = "key", value_name = "KEY")]
    key: PathBuf,

    #[command(flatten)]
    conn: ConnArgs,
}

/// Sign a pushed plugin: resolve the reference to its digest (as `pin` does), push the signature
/// beside it, and print `REF@sha256:…`, what was signed.
pub fn sign(args: SignArgs) -> Result<ExitCode, Failure> {
    let r = parse_ref(&args.reference)?;
    let key = PrivateKey::read(&args.key).map_err(Failure::usage)?;
    let registry = registry(&args.conn)?;
    let digest = match r.digest() {
        Some(_) => registry.resolve(&r, Pull::Missing, OnMove::Accept).map_err(registry_failure)?.digest,
        None => registry.pin(&r).map_err(registry_failure)?,
    };
    let signature = registry.sign(&r, &digest, &key).map_err(registry_failure)?;
    tracing::info!("signed {} with {} (signature {signature})", r.pinned(&digest), key.path().display());
    crate::stdout::write(|out| writeln!(out, "{}", r.pinned(&digest)))?;
    Ok(ExitCode::SUCCESS)
}

/// Arguments of `loadhost keygen`.
#[derive(Debug, Args)]
pub struct KeygenArgs {
    /// The key pair's name: writes NAME.key (private, 0600) and NAME.pub (public), never over
    /// existing files.
    name: String,
}

/// Make a signing key pair and print the two files' names.
pub fn keygen_command(args: KeygenArgs) -> Result<ExitCode, Failure> {
    let (private, public) = keygen(&args.name).map_err(Failure::usage)?;
    crate::stdout::write(|out| {
        writeln!(out, "{}  (private: loadhost push --sign {0})", private.display())?;
        writeln!(out, "{}  (public: name it in a trust policy's keys)", public.display())
    })?;
    Ok(ExitCode::SUCCESS)
}

/// Arguments of `loadhost trust-policy`.
#[derive(Debug, Args)]
pub struct TrustPolicyArgs {
    /// Print an example policy to start from (placeholders REGISTRY and KEY.pub).
    #[arg(long, required = true)]
    example: bool,
}

/// Print the example trust policy.
pub fn trust_policy(args: TrustPolicyArgs) -> Result<ExitCode, Failure> {
    debug_assert!(args.example);
    crate::stdout::write(|out| out.write_all(EXAMPLE_POLICY.as_bytes()))?;
    Ok(ExitCode::SUCCESS)
}

/// Arguments of `loadhost pin`.
#[derive(Debug, Args)]
pub struct PinArgs {
    /// The reference to pin: HOST[:PORT]/REPOSITORY[:TAG].
    reference: String,

    #[command(flatten)]
    conn: ConnArgs,
}

/// Resolve the reference in its registry and print `REF@sha256:…` (the plugin is stored too).
pub fn pin(args: PinArgs) -> Result<ExitCode, Failure> {
    let r = parse_ref(&args.reference)?;
    let digest = registry(&args.conn)?.pin(&r).map_err(registry_failure)?;
    crate::stdout::write(|out| writeln!(out, "{}", r.pinned(&digest)))?;
    Ok(ExitCode::SUCCESS)
}

/// Arguments of `loadhost pull`.
#[derive(Debug, Args)]
pub struct PullArgs {
    /// The reference to fetch: HOST[:PORT]/REPOSITORY[:TAG][@sha256:HEX].
    reference: String,

    #[command(flatten)]
    conn: ConnArgs,
}

/// Fetch the reference into the store (verified) and print `REF@sha256:…`. For a tag this records
/// the digest it resolves to now: it is how a user accepts a moved tag, so `run --pin-tags REF`
/// passes again, and a plain `run REF` no longer warns.
pub fn pull(args: PullArgs) -> Result<ExitCode, Failure> {
    let r = parse_ref(&args.reference)?;
    let registry = registry(&args.conn)?;
    let pulled = registry.resolve(&r, Pull::Always, OnMove::Accept).map_err(registry_failure)?;
    tracing::info!("{} is {} ({})", pulled.reference, pulled.digest, pulled.wasm.display());
    crate::stdout::write(|out| writeln!(out, "{}", r.pinned(&pulled.digest)))?;
    Ok(ExitCode::SUCCESS)
}

/// The bundle's extra layers: its TOML, checked to grant nothing, and its data feed.
fn bundle_layers(args: &PushArgs) -> Result<Vec<(String, Vec<u8>)>, Failure> {
    let Some(config) = &args.config else { return Ok(Vec::new()) };
    let read = |path: &Path, cap| {
        loadhost_input::read(path, cap)
            .map_err(|err| Failure::usage(anyhow::anyhow!("{}: cannot read it: {err}", path.display())))
    };
    let toml_bytes = read(config, loadhost_input::CONFIG)?;
    let text = String::from_utf8_lossy(&toml_bytes);
    let what = config.display().to_string();
    check_bundle_toml(&what, &text).map_err(Failure::usage)?;
    let options = loadhost_config::file::parse(config, &text).map_err(Failure::usage)?;
    // The TOML's own `data` is relative to the TOML; --data wins.
    let data =
        args.data.clone().or_else(|| options.data.as_ref().map(|d| config.parent().unwrap_or(Path::new(".")).join(d)));
    let mut layers = vec![(BUNDLE_CONFIG_MEDIA_TYPE.to_owned(), toml_bytes)];
    if let Some(data) = data {
        let media = data_media_type(&data).ok_or_else(|| {
            Failure::usage(anyhow::anyhow!("--data {}: a bundle's feed is .jsonl or .csv", data.display()))
        })?;
        layers.push((media.to_owned(), read(&data, loadhost_input::DATA)?));
    }
    Ok(layers)
}
