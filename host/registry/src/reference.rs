//! Plugin references: `HOST[:PORT]/REPOSITORY[:TAG][@sha256:HEX]`, optionally prefixed `oci://`.

use std::fmt;
use std::str::FromStr;

use oci_client::Reference;

use crate::error::RegistryError;

/// A parsed plugin reference with an explicit registry host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PluginRef {
    inner: Reference,
    /// As the user wrote it, without `oci://`.
    text: String,
}

/// Whether `input` is meant as a registry reference rather than a file path: `oci://…`, or a first
/// path segment that names a host (has a `.` or a `:`, or is `localhost`) and a repository after it.
pub fn looks_like_reference(input: &str) -> bool {
    if input.starts_with("oci://") {
        return true;
    }
    match input.split_once('/') {
        Some((host, rest)) => {
            !rest.is_empty()
                && (host == "localhost" || host.contains(':') || host.contains('.'))
                && !host.starts_with('.')
        }
        None => false,
    }
}

impl FromStr for PluginRef {
    type Err = RegistryError;

    fn from_str(input: &str) -> Result<Self, Self::Err> {
        let bad = |why: &str| RegistryError::BadReference { input: input.to_owned(), why: why.to_owned() };
        let text = input.strip_prefix("oci://").unwrap_or(input);
        let Some((host, _)) = text.split_once('/') else {
            return Err(bad("no registry host (write HOST/REPOSITORY)"));
        };
        if !(host == "localhost" || host.contains(':') || host.contains('.')) {
            return Err(bad("the part before the first / must be a registry host such as 127.0.0.1:5000"));
        }
        let inner = Reference::from_str(text).map_err(|err| bad(&err.to_string()))?;
        if inner.registry() != host {
            return Err(bad("no registry host"));
        }
        if let Some(digest) = inner.digest() {
            let hex = digest.strip_prefix("sha256:").ok_or_else(|| bad("only sha256 digests are supported"))?;
            if hex.len() != 64 || !hex.bytes().all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()) {
                return Err(bad("a sha256 digest is 64 lowercase hex digits"));
            }
        }
        Ok(Self { inner, text: text.to_owned() })
    }
}

impl PluginRef {
    /// The registry host (with its port).
    pub fn registry(&self) -> &str {
        self.inner.registry()
    }

    /// The repository path.
    pub fn repository(&self) -> &str {
        self.inner.repository()
    }

    /// The tag, `latest` when neither a tag nor a digest was given.
    pub fn tag(&self) -> Option<&str> {
        self.inner.tag().or(if self.inner.digest().is_none() { Some("latest") } else { None })
    }

    /// The pinned digest, when the reference has one.
    pub fn digest(&self) -> Option<&str> {
        self.inner.digest()
    }

    /// The same repository pinned to `digest` (`HOST/REPO:TAG@sha256:…` keeps the tag for people).
    pub fn pinned(&self, digest: &str) -> String {
        let base = self.text.split('@').next().unwrap_or(&self.text);
        format!("{base}@{digest}")
    }

    /// The oci-client reference.
    pub(crate) fn oci(&self) -> &Reference {
        &self.inner
    }

    /// The reference for one digest in the same repository.
    pub(crate) fn at_digest(&self, digest: &str) -> Reference {
        Reference::with_digest(self.registry().to_owned(), self.repository().to_owned(), digest.to_owned())
    }

    /// `REGISTRY/REPOSITORY` with the registry in its one spelling ([`canonical_registry`]), as a
    /// trust policy matches it.
    pub fn canonical_repository(&self) -> String {
        let registry = canonical_registry(self.registry()).unwrap_or_else(|| self.registry().to_ascii_lowercase());
        format!("{registry}/{}", self.repository())
    }

    /// The registry host without its port, for the loopback check.
    pub fn host(&self) -> &str {
        let registry = self.registry();
        if let Some(rest) = registry.strip_prefix('[') {
            return rest.split(']').next().unwrap_or(rest);
        }
        registry.rsplit_once(':').map_or(registry, |(host, _)| host)
    }
}

/// One spelling for a registry `HOST[:PORT]`, so that a trust policy cannot be passed by writing
/// the same registry another way: the host as a URL parser reads it (lower case, IPv4 in any
/// form `127.1`, `0x7f.0.0.1`, `2130706433` as dotted decimal, IPv6 compressed), every loopback
/// spelling (`localhost`, `*.localhost`, `127.0.0.0/8`, `::1`) as `localhost`, and the port as a
/// number (`05000` is `5000`), 443 when none is written (80 for loopback, which is spoken to over
/// plain http). `None` when `registry` is not a host and port at all.
pub fn canonical_registry(registry: &str) -> Option<String> {
    let (host, port) = match registry.strip_prefix('[') {
        Some(rest) => {
            let (host, after) = rest.split_once(']')?;
            (format!("[{host}]"), after.strip_prefix(':').map(str::to_owned).or(after.is_empty().then(String::new))?)
        }
        None => match registry.rsplit_once(':') {
            Some((host, port)) => (host.to_owned(), port.to_owned()),
            None => (registry.to_owned(), String::new()),
        },
    };
    let host = url::Host::parse(&host).ok()?;
    let loopback = match &host {
        url::Host::Domain(name) => name == "localhost" || name.ends_with(".localhost"),
        url::Host::Ipv4(ip) => ip.is_loopback(),
        url::Host::Ipv6(ip) => ip.is_loopback() || ip.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback()),
    };
    let port = if port.is_empty() {
        if loopback { 80 } else { 443 }
    } else if port.bytes().all(|b| b.is_ascii_digit()) {
        // Leading zeros are the same port; more than 65535 is no port.
        let digits = port.trim_start_matches('0');
        if digits.is_empty() { 0 } else { digits.parse::<u16>().ok()? }
    } else {
        return None;
    };
    let host = if loopback { "localhost".to_owned() } else { host.to_string() };
    Some(format!("{host}:{port}"))
}

impl fmt::Display for PluginRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_tags_digests_and_prefixes() {
        let r: PluginRef = "127.0.0.1:5000/team/checkout:1.2".parse().expect("parses");
        assert_eq!(
            (r.registry(), r.repository(), r.tag(), r.digest()),
            ("127.0.0.1:5000", "team/checkout", Some("1.2"), None)
        );
        assert_eq!(r.host(), "127.0.0.1");
        let d = format!("oci://localhost:5000/a@sha256:{}", "ab".repeat(32));
        let r: PluginRef = d.parse().expect("parses");
        assert_eq!(r.digest().map(str::len), Some(71));
        assert_eq!(r.pinned("sha256:00"), "localhost:5000/a@sha256:00");
        let r: PluginRef = "registry.example/x".parse().expect("parses");
        assert_eq!(r.tag(), Some("latest"));
    }

    #[test]
    fn refuses_malformed_references() {
        for bad in
            ["checkout:1.2", "team/checkout", "127.0.0.1:5000/", "127.0.0.1:5000/A B", "localhost:5000/x@sha256:12"]
        {
            assert!(bad.parse::<PluginRef>().is_err(), "{bad}");
        }
    }

    #[test]
    fn one_registry_has_one_spelling() {
        let same = |a: &str, b: &str| {
            assert_eq!(canonical_registry(a), canonical_registry(b), "{a} and {b}");
            assert!(canonical_registry(a).is_some(), "{a}");
        };
        for spelling in ["localhost:5000", "LOCALHOST:5000", "127.0.0.1:05000", "127.1:5000", "[::1]:5000"] {
            same("127.0.0.1:5000", spelling);
        }
        for spelling in ["0x7f.0.0.1:5000", "2130706433:5000", "127.0.0.2:5000", "api.localhost:5000"] {
            same("localhost:5000", spelling);
        }
        same("Registry.Example:443", "registry.example");
        same("registry.example:0443", "registry.example");
        same("localhost", "127.0.0.1:80");
        same("[0:0:0:0:0:0:0:1]:7", "[::1]:7");
        assert_eq!(canonical_registry("127.0.0.1:5000").as_deref(), Some("localhost:5000"));
        assert_eq!(canonical_registry("10.0.0.1:5000").as_deref(), Some("10.0.0.1:5000"));
        assert_ne!(canonical_registry("127.0.0.1:5000"), canonical_registry("127.0.0.1:5001"));
        assert_ne!(canonical_registry("reg.example"), canonical_registry("reg.example:80"));
        for bad in ["reg:65536", "reg:5x", "[::1", "[::1]x", "a b:1"] {
            assert_eq!(canonical_registry(bad), None, "{bad}");
        }
        let r: PluginRef = "LocalHost:05000/team/evil".parse().expect("parses");
        assert_eq!(r.canonical_repository(), "localhost:5000/team/evil");
    }

    #[test]
    fn tells_references_from_paths() {
        assert!(looks_like_reference("127.0.0.1:5000/team/checkout:1.2"));
        assert!(looks_like_reference("oci://x"));
        assert!(!looks_like_reference("plugins/http-get.wasm"));
        assert!(!looks_like_reference("./a/b.wasm"));
        assert!(!looks_like_reference("../x/y.wasm"));
    }
}
