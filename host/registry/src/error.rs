//! Why a registry operation failed: each message is one line naming the reference.

use thiserror::Error;

use crate::moved::TagMove;

/// A registry or store failure.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum RegistryError {
    /// The reference cannot be parsed, or names no registry host.
    #[error("{input:?}: not a plugin reference: {why} (expected HOST[:PORT]/REPOSITORY[:TAG][@sha256:HEX])")]
    BadReference {
        /// What the user wrote.
        input: String,
        /// What is wrong.
        why: String,
    },
    /// The registry refused the credentials (401/403).
    #[error("{reference}: the registry refused access ({why}); credentials tried: {source_tried}")]
    Denied {
        /// The reference.
        reference: String,
        /// What the registry said.
        why: String,
        /// Where the credentials came from.
        source_tried: String,
    },
    /// The registry has no such tag or digest.
    #[error("{reference}: not found in the registry ({why})")]
    NotFound {
        /// The reference.
        reference: String,
        /// What the registry said.
        why: String,
    },
    /// The registry could not be reached or answered with an error.
    #[error("{reference}: registry error: {why}")]
    Unreachable {
        /// The reference.
        reference: String,
        /// What went wrong.
        why: String,
    },
    /// The manifest is not a wasm artifact.
    #[error("{reference}: not a wasm artifact (config media type {config}, layer media types [{layers}])")]
    NotWasm {
        /// The reference.
        reference: String,
        /// The config's media type.
        config: String,
        /// The layers' media types, comma-separated.
        layers: String,
    },
    /// A blob's content does not have the digest that names it.
    #[error("{reference}: blob {expected} does not match its digest (got {actual}); it was not used")]
    DigestMismatch {
        /// The reference.
        reference: String,
        /// The digest the manifest names.
        expected: String,
        /// The digest of what was received or stored.
        actual: String,
    },
    /// The registry's host name does not resolve.
    #[error("{reference}: unknown registry host {host} ({why})")]
    UnknownHost {
        /// The reference.
        reference: String,
        /// The host name.
        host: String,
        /// What the lookup said.
        why: String,
    },
    /// `--pull never` and the reference is not in the store.
    #[error("{reference}: not in the local store and --pull never was given")]
    NotStored {
        /// The reference.
        reference: String,
    },
    /// The local store could not be read or written.
    #[error("the plugin store {path}: {why}")]
    Store {
        /// The folder or file.
        path: String,
        /// What went wrong.
        why: String,
    },
    /// A bundle's TOML sets keys that only the runner may set.
    #[error(
        "{what}: a bundle cannot grant or write anything, but it sets {keys}; give those on the command line of the run instead"
    )]
    BundleGrants {
        /// The bundle or file.
        what: String,
        /// The refused keys, comma-separated.
        keys: String,
    },
    /// A layer loadhost does not know.
    #[error(
        "{reference}: unknown layer media type {media_type} (a loadhost artifact has application/wasm and, in a bundle, application/vnd.loadhost.config.v1+toml and application/vnd.loadhost.data.v1+jsonl or +csv)"
    )]
    UnknownLayer {
        /// The reference.
        reference: String,
        /// The layer's media type.
        media_type: String,
    },
    /// More than one layer of one media type (two components, two TOMLs, two feeds).
    #[error(
        "{reference}: {count} layers of media type {media_type}: a loadhost artifact has one of each, and which one would run is not guessed"
    )]
    DuplicateLayer {
        /// The reference.
        reference: String,
        /// The repeated media type.
        media_type: String,
        /// How many layers have it.
        count: usize,
    },
    /// `--pin-tags`: the tag resolves to another manifest than the store recorded for it. A
    /// plugin problem (exit 3): what the tag names changed under the runner, not their input.
    #[error(
        "{0}. --pin-tags refuses a moved tag, so nothing was loaded and the store still records {old}; to accept the move, run `loadhost pull {reference}` and then run again, or pin the new digest with `loadhost pin {reference}` (it prints {reference}@{new}) and run that",
        old = .0.old,
        new = .0.new,
        reference = .0.reference
    )]
    TagMoved(Box<TagMove>),
    /// The registry does not allow deleting manifests.
    #[error(
        "{registry}: the registry refuses to delete ({why}); deleting must be enabled there (docker-registry: storage.delete.enabled: true)"
    )]
    DeleteRefused {
        /// The registry, `HOST[:PORT]`.
        registry: String,
        /// What it answered.
        why: String,
    },
    /// The trust policy refuses the plugin: no signature by its keys verifies, or no rule covers
    /// its repository. A plugin problem (exit 3): nothing was loaded.
    #[error("{reference}: {why}")]
    Untrusted {
        /// The reference, pinned to the digest that was checked.
        reference: String,
        /// What the policy asks and what was found.
        why: String,
    },
    /// The registry sent (or declared) more than loadhost accepts of that kind of body: a
    /// manifest or index past 4 MiB, a blob past its descriptor's size or past what its kind may
    /// be (`--max-plugin-size` for a component). See docs/sharing.md.
    #[error("{reference}: {what} is refused: {why}")]
    TooLarge {
        /// The reference.
        reference: String,
        /// What was too large (the manifest, a blob and its media type, the referrers index).
        what: String,
        /// What was declared or sent, and the cap.
        why: String,
    },
    /// A registry operation did not finish within its deadline (a registry that answers too
    /// slowly, or drips its answer).
    #[error(
        "{reference}: {operation} at the registry {registry} did not finish within the deadline of {} s; LOADHOST_REGISTRY_DEADLINE (seconds) sets another",
        .deadline.as_secs_f64()
    )]
    Deadline {
        /// The reference.
        reference: String,
        /// The registry, `HOST[:PORT]`.
        registry: String,
        /// What was under way (pull, push, signature check, prune).
        operation: &'static str,
        /// The deadline.
        deadline: std::time::Duration,
    },
    /// Something the user gave (a file, a certificate) cannot be read.
    #[error("{0}")]
    Input(String),
}

impl RegistryError {
    /// Whether the failure is the user's input (exit 2) rather than a plugin problem (exit 3).
    pub fn is_usage_error(&self) -> bool {
        !matches!(
            self,
            Self::NotWasm { .. }
                | Self::DigestMismatch { .. }
                | Self::UnknownLayer { .. }
                | Self::DuplicateLayer { .. }
                | Self::BundleGrants { .. }
                | Self::TagMoved(_)
                | Self::Untrusted { .. }
        )
    }
}
