//! Bundles: a plugin pushed with the run's TOML (`-c`) and its data feed (`--data`) as extra
//! layers, so one reference carries the whole workload. A bundle's TOML sets the load (rate,
//! stages, thresholds…) but never grants anything: the keys that grant access or write on the
//! runner's machine are refused, at push and again at run.

use crate::error::RegistryError;

/// The layer media type of a bundle's TOML config.
pub const BUNDLE_CONFIG_MEDIA_TYPE: &str = "application/vnd.loadhost.config.v1+toml";
/// The layer media type of a bundle's JSON-lines data feed.
pub const BUNDLE_DATA_JSONL_MEDIA_TYPE: &str = "application/vnd.loadhost.data.v1+jsonl";
/// The layer media type of a bundle's CSV data feed.
pub const BUNDLE_DATA_CSV_MEDIA_TYPE: &str = "application/vnd.loadhost.data.v1+csv";

/// Keys a bundle's TOML may not set: what only the person running a workload grants (network,
/// files, environment, trust) and what would write or listen on their machine.
pub const REFUSED_BUNDLE_KEYS: &[&str] = &[
    "allow-host",
    "dir",
    "env",
    "env-file",
    "ca-cert",
    "insecure",
    "proxy",
    "client-cert",
    "client-key",
    "control",
    "control-token",
    "control-token-file",
    "metrics-addr",
    "summary-json",
    "csv",
    "out",
    "html",
    "results",
    "junit",
    "markdown",
    "plugin-output",
];

/// The data layer media type for a feed file, by its extension (as `--data` reads it).
pub fn data_media_type(path: &std::path::Path) -> Option<&'static str> {
    match path.extension()?.to_str()?.to_ascii_lowercase().as_str() {
        "jsonl" | "ndjson" => Some(BUNDLE_DATA_JSONL_MEDIA_TYPE),
        "csv" => Some(BUNDLE_DATA_CSV_MEDIA_TYPE),
        _ => None,
    }
}

/// The file extension `--data` needs for a data layer.
pub fn data_extension(media_type: &str) -> Option<&'static str> {
    match media_type {
        BUNDLE_DATA_JSONL_MEDIA_TYPE => Some("jsonl"),
        BUNDLE_DATA_CSV_MEDIA_TYPE => Some("csv"),
        _ => None,
    }
}

/// Whether a layer media type is one loadhost knows.
pub(crate) fn known_layer(media_type: &str) -> bool {
    matches!(
        media_type,
        crate::WASM_LAYER_MEDIA_TYPE
            | BUNDLE_CONFIG_MEDIA_TYPE
            | BUNDLE_DATA_JSONL_MEDIA_TYPE
            | BUNDLE_DATA_CSV_MEDIA_TYPE
    )
}

/// Refuse a bundle TOML that sets a granting key (`what` names it in the message).
pub fn check_bundle_toml(what: &str, text: &str) -> Result<(), RegistryError> {
    let value: toml::Table =
        toml::from_str(text).map_err(|err| RegistryError::Input(format!("{what}: {}", err.message())))?;
    let mut refused: Vec<&str> = REFUSED_BUNDLE_KEYS.iter().copied().filter(|k| value.contains_key(*k)).collect();
    // A block's own plugin would be a file of the runner's machine, or a workload the runner never
    // named: a bundle is one workload.
    let blocks = value.get("scenario").and_then(toml::Value::as_array).map_or(&[][..], Vec::as_slice);
    if blocks.iter().any(|b| b.as_table().is_some_and(|t| t.contains_key("plugin"))) {
        refused.push("[[scenario]] plugin");
    }
    if refused.is_empty() {
        return Ok(());
    }
    Err(RegistryError::BundleGrants { what: what.to_owned(), keys: refused.join(", ") })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bundle_may_set_the_load_but_not_grant() {
        assert!(check_bundle_toml("b", "rate = 10\nthreshold = [\"latency_ms:p(99)<200\"]\n").is_ok());
        let err = check_bundle_toml("b", "rate = 10\nallow-host = [\"x\"]\nenv = [\"A=1\"]\n").expect_err("refused");
        assert!(err.to_string().contains("allow-host, env"), "{err}");
        assert!(check_bundle_toml("b", "rate = ").is_err());
        let err =
            check_bundle_toml("b", "[[scenario]]\nname = \"a\"\nplugin = \"/etc/x.wasm\"\n").expect_err("refused");
        assert!(err.to_string().contains("[[scenario]] plugin"), "{err}");
        assert_eq!(data_media_type(std::path::Path::new("rows.CSV")), Some(BUNDLE_DATA_CSV_MEDIA_TYPE));
        assert_eq!(data_extension(BUNDLE_DATA_JSONL_MEDIA_TYPE), Some("jsonl"));
    }
}
