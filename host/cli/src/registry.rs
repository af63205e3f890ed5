//! Plugins shared through OCI registries: how to reach a registry (its flags, shared by `push`,
//! `pin`, `run` and `inspect`), and the resolution of a reference given to `run` or `inspect` to a
//! verified file in the local store (see docs/sharing.md). The `push` and `pin` commands are in
//! [`commands::registry`](crate::commands::registry).

use std::io::Write as _;
use std::path::{Path, PathBuf};

use clap::{Args, ValueEnum};
use loadhost_registry::{
    BUNDLE_CONFIG_MEDIA_TYPE, Credentials, OnMove, PluginRef, Pull, Registry, RegistryError, RegistryOptions,
    TrustPolicy, Verified, check_bundle_toml, data_extension, looks_like_reference,
};
use loadhost_runtime::cache;

use crate::exit::Failure;

/// How to reach a registry: shared by `push`, `pin`, `run` and `inspect`.
#[derive(Debug, Clone, Default, Args)]
pub struct ConnArgs {
    /// Allow plain http to this registry host (loopback registries always may); repeatable.
    #[arg(long = "insecure-registry", value_name = "HOST")]
    insecure_registry: Vec<String>,

    /// An extra PEM root certificate for https registries (the system roots are always trusted).
    #[arg(long = "registry-ca-cert", value_name = "FILE")]
    registry_ca_cert: Vec<PathBuf>,

    /// The registry user; the password is read from standard input (--registry-password-stdin).
    #[arg(long = "registry-user", value_name = "USER", requires = "registry_password_stdin")]
    registry_user: Option<String>,

    /// Read the registry password from standard input (with --registry-user).
    #[arg(long = "registry-password-stdin", requires = "registry_user")]
    registry_password_stdin: bool,
}

/// When to contact the registry.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, ValueEnum)]
pub enum PullArg {
    /// Always resolve and fetch from the registry.
    Always,
    /// Use a digest already in the store; resolve tags against the registry.
    #[default]
    Missing,
    /// Never contact the registry: digests and tags pulled before come from the store.
    Never,
}

/// How `run` and `inspect` resolve a plugin reference.
#[derive(Debug, Clone, Default, Args)]
pub struct ResolveArgs {
    /// When a plugin reference contacts its registry.
    #[arg(long = "pull", value_enum, default_value_t = PullArg::Missing, value_name = "WHEN")]
    pull: PullArg,

    /// Refuse plugin references without a digest (`loadhost pin REF` prints the pinned form).
    #[arg(long = "require-digest")]
    require_digest: bool,

    /// Refuse a tag that now resolves to another digest than the one this store recorded for it
    /// when it was last pulled (exit 3, before anything is loaded); without it a moved tag is
    /// warned about and run. Accept a move with `loadhost pull REF`.
    #[arg(long = "pin-tags")]
    pin_tags: bool,

    /// A trust policy (TOML): which repositories need a signature by which public keys, checked
    /// after the pull and before anything is loaded (exit 3 otherwise); `loadhost trust-policy
    /// --example` prints one to start from. Local plugin files are not checked.
    #[arg(long = "trust-policy", value_name = "FILE", env = "LOADHOST_TRUST_POLICY")]
    trust_policy: Option<PathBuf>,

    #[command(flatten)]
    conn: ConnArgs,
}

/// A plugin file, and the reference it was pulled as.
#[derive(Debug)]
pub struct Resolved {
    /// The file to load.
    pub path: PathBuf,
    /// The reference and its manifest digest, for a pulled plugin.
    pub oci: Option<(String, String)>,
    /// The bundle's options, when the reference is a bundle.
    pub bundle: Option<Bundle>,
    /// The signature that verified under the trust policy (none without a policy, or when its
    /// rule requires none).
    pub signature: Option<Verified>,
}

/// The environment variable that sets the deadline of each registry operation, in seconds
/// (docs/sharing.md); the default is [`loadhost_registry::DEFAULT_DEADLINE`].
const DEADLINE_ENV: &str = "LOADHOST_REGISTRY_DEADLINE";

/// A registry client with `conn`'s settings.
pub(crate) fn registry(conn: &ConnArgs) -> Result<Registry, Failure> {
    registry_with(conn, None)
}

/// The deadline `LOADHOST_REGISTRY_DEADLINE` sets (seconds, fractions allowed), if it is set.
fn deadline_from_env() -> Result<Option<std::time::Duration>, Failure> {
    let Some(text) = std::env::var_os(DEADLINE_ENV) else { return Ok(None) };
    let text = text.to_string_lossy();
    match text.trim().parse::<f64>() {
        Ok(secs) if secs > 0.0 && secs <= 86_400.0 => Ok(Some(std::time::Duration::from_secs_f64(secs))),
        _ => {
            Err(Failure::usage(anyhow::anyhow!("{DEADLINE_ENV}={text:?}: not a number of seconds between 0 and 86400")))
        }
    }
}

/// A registry client with `conn`'s settings, pulling components of at most `max_plugin_size`
/// bytes (`--max-plugin-size`; `None`: a plugin file's default cap).
pub(crate) fn registry_with(conn: &ConnArgs, max_plugin_size: Option<u64>) -> Result<Registry, Failure> {
    let credentials = match &conn.registry_user {
        Some(user) => {
            let password = loadhost_input::read_all(std::io::stdin(), loadhost_input::TEXT)
                .and_then(|bytes| String::from_utf8(bytes).map_err(|_| std::io::ErrorKind::InvalidData.into()))
                .map_err(|err| Failure::usage(anyhow::anyhow!("--registry-password-stdin: {err}")))?;
            Some(Credentials::basic(user.clone(), password.trim_end_matches(['\r', '\n']).to_owned()))
        }
        None => None,
    };
    let options = RegistryOptions {
        insecure: conn.insecure_registry.clone(),
        ca_certs: conn.registry_ca_cert.clone(),
        credentials,
        max_plugin_size,
        deadline: deadline_from_env()?,
    };
    let base = cache::default_dir().ok_or_else(|| {
        Failure::usage(anyhow::anyhow!("no folder for the plugin store: set LOADHOST_CACHE_DIR or HOME"))
    })?;
    Registry::new(&base, options).map_err(registry_failure)
}

/// Exit 2 for the user's input and the registry, 3 for an artifact that cannot be a plugin.
pub(crate) fn registry_failure(err: RegistryError) -> Failure {
    if err.is_usage_error() { Failure::usage(err) } else { Failure::plugin(err) }
}

pub(crate) fn parse_ref(text: &str) -> Result<PluginRef, Failure> {
    text.parse::<PluginRef>().map_err(registry_failure)
}

/// The plugin `input` names: an existing file as it is, else a registry reference resolved to a
/// verified file in the store.
pub fn resolve(input: &Path, args: &ResolveArgs) -> Result<Resolved, Failure> {
    Resolver::new(args).resolve(input)
}

/// Resolves the plugins of one command, reaching the registry (and reading a password) once.
pub struct Resolver<'a> {
    args: &'a ResolveArgs,
    registry: Option<Registry>,
    /// The trust policy, read on first use (`Some(None)`: none given).
    policy: Option<Option<TrustPolicy>>,
    /// `--max-plugin-size` from the command line: the largest component pulled.
    max_plugin_size: Option<u64>,
}

impl<'a> Resolver<'a> {
    /// A resolver that contacts no registry until a reference needs one.
    pub fn new(args: &'a ResolveArgs) -> Self {
        Self { args, registry: None, policy: None, max_plugin_size: None }
    }

    /// Pull no component larger than `bytes` (`--max-plugin-size`), refused by its descriptor
    /// before it is read.
    pub fn max_plugin_size(mut self, bytes: Option<u64>) -> Self {
        self.max_plugin_size = bytes;
        self
    }

    /// The trust policy, read (with its keys) on first use: a bad one is refused (exit 2) even
    /// when the run names only local files.
    fn policy(&mut self) -> Result<Option<&TrustPolicy>, Failure> {
        if self.policy.is_none() {
            let read = self.args.trust_policy.as_deref().map(TrustPolicy::read).transpose();
            self.policy = Some(read.map_err(registry_failure)?);
        }
        Ok(self.policy.as_ref().and_then(Option::as_ref))
    }

    /// The registry client, made on first use (a password on stdin is read once).
    pub fn registry(&mut self) -> Result<&Registry, Failure> {
        match &mut self.registry {
            Some(registry) => Ok(registry),
            empty => Ok(empty.insert(registry_with(&self.args.conn, self.max_plugin_size)?)),
        }
    }

    /// [`resolve`] one plugin.
    pub fn resolve(&mut self, input: &Path) -> Result<Resolved, Failure> {
        let text = input.to_string_lossy();
        let pin_tags = self.policy()?.is_some_and(|p| p.pin_tags);
        // A local file is in no repository: the trust policy covers what comes from registries.
        if input.exists() || !looks_like_reference(&text) {
            return Ok(Resolved { path: input.to_path_buf(), oci: None, bundle: None, signature: None });
        }
        let r = parse_ref(&text)?;
        self.refuse_another_spelling(&r)?;
        if self.args.require_digest && r.digest().is_none() {
            return Err(Failure::usage(anyhow::anyhow!(
                "{r}: --require-digest refuses a reference without a digest; pin it with `loadhost pin {r}`"
            )));
        }
        let pull = match self.args.pull {
            PullArg::Always => Pull::Always,
            PullArg::Missing => Pull::Missing,
            PullArg::Never => Pull::Never,
        };
        // A moved tag is a plugin problem under --pin-tags or a policy's `pin-tags` (exit 3,
        // nothing loaded), else a warning.
        let on_move = if self.args.pin_tags || pin_tags { OnMove::Refuse } else { OnMove::Warn };
        let pulled = self.registry()?.resolve(&r, pull, on_move).map_err(|err| match err {
            RegistryError::TagMoved(_) if !self.args.pin_tags => {
                let policy = self.args.trust_policy.as_deref().unwrap_or(Path::new("?"));
                registry_failure(err).context(format!("the trust policy {} has pin-tags = true", policy.display()))
            }
            err => registry_failure(err),
        })?;
        let signature = self.check_signature(&r, &pulled.digest, pull)?;
        tracing::info!("plugin {r} is {} ({})", pulled.digest, pulled.wasm.display());
        let bundle = bundle(&pulled.reference, &pulled.layers)?;
        Ok(Resolved { path: pulled.wasm, oci: Some((pulled.reference, pulled.digest)), bundle, signature })
    }
}

impl Resolver<'_> {
    /// A reference that writes a registry otherwise than the trust policy's rule for it does
    /// (`localhost:5000` for `127.0.0.1:5000`) is refused before anything is pulled: what was
    /// signed names the registry as it was pushed, and the policy's reader approved that spelling.
    fn refuse_another_spelling(&mut self, r: &PluginRef) -> Result<(), Failure> {
        let Some(policy) = self.policy()? else { return Ok(()) };
        let Some(rule) = policy.rule_for(r) else { return Ok(()) };
        let Some(written) = rule.spelt_otherwise(r) else { return Ok(()) };
        let why = format!(
            "the registry {} is {written} spelt otherwise, and the trust policy {} names it {written} (rule {:?}): \
             write the reference as {written}/{}; nothing was pulled or loaded",
            r.registry(),
            policy.path().display(),
            rule.repositories,
            r.repository()
        );
        Err(registry_failure(RegistryError::Untrusted { reference: r.to_string(), why }))
    }

    /// The trust policy's verdict on the manifest `digest` of `r` (pulled, not yet loaded): the
    /// rule for its repository, and a signature by one of that rule's keys.
    fn check_signature(&mut self, r: &PluginRef, digest: &str, pull: Pull) -> Result<Option<Verified>, Failure> {
        let repository = format!("{}/{}", r.registry(), r.repository());
        let pinned = r.pinned(digest);
        // Taken out for the check, so that the registry can be borrowed beside it.
        let Some(Some(policy)) = self.policy.take() else { return Ok(None) };
        let outcome = self.verify(r, digest, pull, &policy, &repository, &pinned);
        self.policy = Some(Some(policy));
        outcome
    }

    fn verify(
        &mut self,
        r: &PluginRef,
        digest: &str,
        pull: Pull,
        policy: &TrustPolicy,
        repository: &str,
        pinned: &str,
    ) -> Result<Option<Verified>, Failure> {
        let file = policy.path().display();
        let untrusted = |why: String| registry_failure(RegistryError::Untrusted { reference: pinned.to_owned(), why });
        let Some(rule) = policy.rule_for(r) else {
            return Err(untrusted(format!(
                "the trust policy {file} has no rule for the repository {repository} (and no default rule \
                 repositories = \"*\"), so it is refused; nothing was loaded"
            )));
        };

        if rule.keys.is_empty() {
            tracing::info!(
                "{repository}: the trust policy {file} requires no signature (rule {:?})",
                rule.repositories
            );
            return Ok(None);
        }
        let keys: Vec<String> = rule.keys.iter().map(|k| k.path().display().to_string()).collect();
        match self.registry()?.verify(r, digest, &rule.keys, pull).map_err(registry_failure)? {
            Ok(verified) => {
                tracing::info!(
                    "{repository}: {digest} is signed by {} (signature {})",
                    verified.key.display(),
                    verified.signature
                );
                Ok(Some(verified))
            }
            Err(unverified) => Err(untrusted(format!(
                "the trust policy {file} requires a signature of the repository {repository} by {} (rule {:?}), \
                 and {unverified}; nothing was loaded",
                keys.join(" or "),
                rule.repositories
            ))),
        }
    }
}

/// A pulled bundle's options, with its data feed in a private file for the run.
#[derive(Debug)]
pub struct Bundle {
    /// The bundle's TOML, `data` pointing at its own feed.
    pub options: loadhost_config::RunOptions,
    /// The TOML as it was pushed.
    pub toml: String,
    /// The data layer's media type and size in bytes, when there is one.
    pub data: Option<(String, u64)>,
    /// The feed's file, removed when the run ends.
    _data: Option<tempfile::NamedTempFile>,
}

/// The bundle in the pulled layers, when there is one.
fn bundle(reference: &str, layers: &[(String, PathBuf)]) -> Result<Option<Bundle>, Failure> {
    let Some((_, config)) = layers.iter().find(|(m, _)| m == BUNDLE_CONFIG_MEDIA_TYPE) else { return Ok(None) };
    let what = format!("{reference} (bundle config)");
    let text = std::fs::read_to_string(config).map_err(|err| Failure::runtime(anyhow::anyhow!("{what}: {err}")))?;
    check_bundle_toml(&what, &text).map_err(Failure::plugin)?;
    let mut options = loadhost_config::file::parse(Path::new(&what), &text).map_err(Failure::plugin)?;
    let feed = layers.iter().find_map(|(m, p)| data_extension(m).map(|ext| (ext, m, p)));
    let mut layer = None;
    let data = match feed {
        Some((ext, media, path)) => {
            let bytes = std::fs::read(path).map_err(|err| Failure::runtime(anyhow::anyhow!("{what}: {err}")))?;
            layer = Some((media.clone(), bytes.len() as u64));
            let mut file = tempfile::Builder::new()
                .prefix("loadhost-bundle-data-")
                .suffix(&format!(".{ext}"))
                .tempfile()
                .and_then(|mut f| f.write_all(&bytes).map(|()| f))
                .map_err(|err| Failure::runtime(anyhow::anyhow!("{what}: writing its data feed: {err}")))?;
            let _ = file.flush();
            options.data = Some(file.path().to_path_buf());
            Some(file)
        }
        None if options.data.is_some() => {
            return Err(Failure::plugin(anyhow::anyhow!(
                "{what}: names a data file but carries no data layer (a bundle cannot read the runner's files)"
            )));
        }
        None => None,
    };
    Ok(Some(Bundle { options, toml: text, data: layer, _data: data }))
}
