//! Sharing workloads through OCI registries: plugin references (`127.0.0.1:5000/team/checkout:1.2`,
//! `oci://…`, `…@sha256:…`), a local content-addressed store beside the compile cache, and push and
//! pull of plugins in the CNCF wasm artifact layout (config `application/vnd.wasm.config.v0+json`,
//! one `application/wasm` layer). Every blob is checked against its sha256 before it is used.
//!
//! # Layout
//!
//! - `reference`: plugin references, `HOST[:PORT]/REPOSITORY[:TAG][@sha256:HEX]`.
//! - `artifact`: small artifacts of a distributed run (segment results, barrier arrivals) as OCI 1.1 artifacts.
//! - `client`: push (through oci-client) and pull, into and out of the local store.
//! - `store`: the local content-addressed store, every blob checked against its digest.
//! - `bundle`: a plugin pushed with its run's TOML and data feed as extra layers.
//! - `auth`: registry credentials, from the command line or the Docker credentials file.
//! - `keys`: signing keys (ECDSA P-256, PKCS#8 and SPKI PEM), `loadhost keygen`.
//! - `signatures`: cosign-shaped signatures stored as OCI 1.1 referrers, pushed and verified.
//! - `policy`: the trust policy, which repositories need which keys.
//! - `moved`: a tag that resolves to another digest than the store recorded (warned, or refused).
//! - `limits`: what loadhost accepts from a registry: the cap on each body read, the deadline.
//! - `transport`: every read from a registry (and prune's DELETE), each body capped.
//! - `prune`: deleting manifests (a distributed run's artifacts), which oci-client cannot.
//! - `error`: why a registry operation failed, one line naming the reference.

mod artifact;
mod auth;
mod bundle;
mod client;
mod error;
mod keys;
mod limits;
mod moved;
mod policy;
mod prune;
mod reference;
mod signatures;
mod store;
mod transport;

pub use artifact::Artifact;
pub use auth::{CredentialSource, Credentials};
pub use bundle::{
    BUNDLE_CONFIG_MEDIA_TYPE, BUNDLE_DATA_CSV_MEDIA_TYPE, BUNDLE_DATA_JSONL_MEDIA_TYPE, REFUSED_BUNDLE_KEYS,
    check_bundle_toml, data_extension, data_media_type,
};
pub use client::{Pull, Pulled, Registry, RegistryOptions};
pub use error::RegistryError;
pub use keys::{PrivateKey, PublicKey, keygen};
pub use limits::{DEFAULT_DEADLINE, ERROR_BODY_CAP, MANIFEST_CAP};
pub use moved::{OnMove, SettingChange, SettingsChange, TagMove, diff_settings};
pub use policy::{EXAMPLE_POLICY, Rule, TrustPolicy};
pub use prune::Described;
pub use reference::{PluginRef, canonical_registry, looks_like_reference};
pub use signatures::{SIGNATURE_ANNOTATION, SIGNATURE_ARTIFACT_TYPE, SIMPLE_SIGNING_MEDIA_TYPE, Unverified, Verified};
pub use store::{Store, StoreEntry, store_entries};

/// The config media type of a wasm artifact (CNCF TAG Runtime wasm OCI artifact layout).
pub const WASM_CONFIG_MEDIA_TYPE: &str = "application/vnd.wasm.config.v0+json";
/// The layer media type of the component itself.
pub const WASM_LAYER_MEDIA_TYPE: &str = "application/wasm";
/// The manifest media type loadhost pushes.
pub const OCI_MANIFEST_MEDIA_TYPE: &str = "application/vnd.oci.image.manifest.v1+json";
