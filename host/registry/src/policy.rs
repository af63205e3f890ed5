//! The trust policy (`--trust-policy FILE`): which repositories need a signature by which keys,
//! and whether moved tags are refused. TOML:
//!
//! ```toml
//! pin-tags = true
//! [[rule]]
//! repositories = "127.0.0.1:5000/team/*"   # a glob on HOST[:PORT]/REPOSITORY
//! keys = ["team.pub"]                      # relative to the policy file; any one suffices
//! ```
//!
//! A repository gets the first rule, in the file's order, whose pattern matches it; the default
//! rule (`repositories = "*"`) applies only when no other does, wherever it is written. A
//! repository no rule covers is refused: a policy allows what it names. A rule with `keys = []`
//! requires no signature.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::error::RegistryError;
use crate::keys::PublicKey;
use crate::reference::{PluginRef, canonical_registry};

/// The policy `loadhost trust-policy --example` prints: `REGISTRY` and `KEY.pub` are placeholders.
pub const EXAMPLE_POLICY: &str = r#"# A loadhost trust policy (docs/sharing.md, "Signatures and the trust policy"), for
# `loadhost run|find-max|inspect --trust-policy FILE` (or LOADHOST_TRUST_POLICY=FILE).
# Replace REGISTRY with your registry's HOST:PORT, and KEY.pub with the public key that
# `loadhost keygen NAME` wrote (NAME.pub; a path relative to this file).

# Refuse a tag that now names another manifest than the one this store recorded for it.
pin-tags = true

# Every repository on REGISTRY needs a signature by KEY.pub (`loadhost push --sign NAME.key`).
# A repository that no rule covers is refused: add a rule `repositories = "*"` (the default,
# tried last) to say what holds elsewhere; `keys = []` requires nothing.
[[rule]]
repositories = "REGISTRY/*"
keys = ["KEY.pub"]
"#;

/// The most a policy file may hold.
const POLICY_CAP: loadhost_input::Cap = loadhost_input::Cap::new(1 << 20, "a trust policy");

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct PolicyFile {
    #[serde(default)]
    pin_tags: bool,
    #[serde(default)]
    rule: Vec<RuleFile>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RuleFile {
    repositories: String,
    keys: Vec<PathBuf>,
}

/// A loaded trust policy, its keys read.
#[derive(Debug)]
pub struct TrustPolicy {
    path: PathBuf,
    /// Refuse moved tags, as `--pin-tags` does.
    pub pin_tags: bool,
    rules: Vec<Rule>,
}

/// One rule: a repository pattern and the keys any one of which must have signed.
#[derive(Debug)]
pub struct Rule {
    /// The pattern as written.
    pub repositories: String,
    /// The pattern with its registry in its one spelling ([`canonical_registry`]).
    pattern: glob::Pattern,
    /// The registry as the rule writes it, when it names one (no glob in it).
    registry: Option<String>,
    /// The public keys; empty requires no signature.
    pub keys: Vec<PublicKey>,
}

impl TrustPolicy {
    /// Read the policy at `path`, and every key it names (relative to it). Any problem is one
    /// line naming the file.
    pub fn read(path: &Path) -> Result<Self, RegistryError> {
        let bad = |why: String| RegistryError::Input(format!("trust policy {}: {why}", path.display()));
        let text = loadhost_input::read_to_string(path, POLICY_CAP).map_err(|err| bad(err.to_string()))?;
        let file: PolicyFile = toml::from_str(&text).map_err(|err| bad(one_line(&err.to_string())))?;
        let base = path.parent().unwrap_or(Path::new("."));
        let mut rules = Vec::with_capacity(file.rule.len());
        for rule in file.rule {
            let (canonical, registry) = canonical_pattern(&rule.repositories).ok_or_else(|| {
                bad(format!(
                    "repositories = {:?}: the part before the first / is not a registry HOST[:PORT]",
                    rule.repositories
                ))
            })?;
            let pattern = glob::Pattern::new(&canonical)
                .map_err(|err| bad(format!("repositories = {:?}: {err}", rule.repositories)))?;
            let keys = rule
                .keys
                .iter()
                .map(|k| PublicKey::read(&base.join(k)).map_err(|err| bad(format!("keys: {err}"))))
                .collect::<Result<_, _>>()?;
            rules.push(Rule { repositories: rule.repositories, pattern, registry, keys });
        }
        Ok(Self { path: path.to_path_buf(), pin_tags: file.pin_tags, rules })
    }

    /// The policy's file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The rule for `r`'s repository, its registry compared in one spelling (`localhost:5000`,
    /// `127.0.0.1:05000` and `LOCALHOST:5000` are one registry): the first rule other than `*`
    /// that matches it, else the `*` rule; `None` when none covers it.
    pub fn rule_for(&self, r: &PluginRef) -> Option<&Rule> {
        self.rule_for_canonical(&r.canonical_repository())
    }

    fn rule_for_canonical(&self, repository: &str) -> Option<&Rule> {
        let options = glob::MatchOptions {
            case_sensitive: true,
            // `*` crosses `/`: `HOST/*` covers every repository on the registry.
            require_literal_separator: false,
            require_literal_leading_dot: false,
        };
        let mut specific = self.rules.iter().filter(|r| r.repositories != "*");
        specific
            .find(|r| r.pattern.matches_with(repository, options))
            .or_else(|| self.rules.iter().find(|r| r.repositories == "*"))
    }
}

impl Rule {
    /// The registry as this rule writes it, when `r` writes the same registry otherwise
    /// (`localhost:5000` for a rule on `127.0.0.1:5000`): such a reference is refused, so that what
    /// was signed (the signature names the registry as it was pushed) and what is checked are
    /// spelt alike.
    pub fn spelt_otherwise<'a>(&'a self, r: &PluginRef) -> Option<&'a str> {
        self.registry.as_deref().filter(|written| *written != r.registry())
    }
}

/// `pattern` with its registry part (before the first `/`) in its one spelling, and that part as
/// written when it is a registry rather than a glob. `*` and patterns whose registry part is a glob
/// are only lower-cased there (a host name is). `None` when the part is neither.
fn canonical_pattern(pattern: &str) -> Option<(String, Option<String>)> {
    let Some((registry, rest)) = pattern.split_once('/') else {
        return Some((pattern.to_owned(), None));
    };
    if registry.contains(['*', '?', '[']) {
        return Some((format!("{}/{rest}", registry.to_ascii_lowercase()), None));
    }
    let canonical = canonical_registry(registry)?;
    Some((format!("{canonical}/{rest}"), Some(registry.to_owned())))
}

/// toml's errors quote the line with a caret under it: keep the first line and the message.
fn one_line(text: &str) -> String {
    let lines: Vec<&str> = text.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
    match (lines.first(), lines.last()) {
        (Some(first), Some(last)) if first != last => format!("{first}: {last}"),
        _ => lines.join(" "),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(dir: &Path, text: &str) -> Result<TrustPolicy, RegistryError> {
        let path = dir.join("policy.toml");
        std::fs::write(&path, text).expect("writes");
        TrustPolicy::read(&path)
    }

    #[test]
    fn the_first_matching_rule_applies_and_star_only_when_none_does() {
        let dir = tempfile::tempdir().expect("tempdir");
        let name = dir.path().join("k").display().to_string();
        crate::keys::keygen(&name).expect("keygen");
        let p = policy(
            dir.path(),
            "[[rule]]\nrepositories = \"*\"\nkeys = []\n\n[[rule]]\nrepositories = \"reg:5000/team/*\"\nkeys = [\"k.pub\"]\n\n\
             [[rule]]\nrepositories = \"reg:5000/*\"\nkeys = []\n",
        )
        .expect("reads");
        assert!(!p.pin_tags);
        let rule = |repo: &str| p.rule_for(&reference(repo)).map(|r| r.repositories.as_str());
        assert_eq!(rule("reg:5000/team/a/b"), Some("reg:5000/team/*"));
        assert_eq!(rule("reg:5000/other"), Some("reg:5000/*"));
        assert_eq!(rule("elsewhere:1/x"), Some("*"));
        assert_eq!(p.rule_for(&reference("reg:5000/team/a")).map(|r| r.keys.len()), Some(1));
        let strict =
            policy(dir.path(), "pin-tags = true\n[[rule]]\nrepositories = \"reg:5000/*\"\nkeys = [\"k.pub\"]\n")
                .expect("reads");
        assert!(strict.pin_tags && strict.rule_for(&reference("other:1/x")).is_none());
    }

    fn reference(text: &str) -> PluginRef {
        text.parse().expect("a reference")
    }

    #[test]
    fn a_registry_spelt_otherwise_meets_the_same_rule_and_is_named() {
        let dir = tempfile::tempdir().expect("tempdir");
        let name = dir.path().join("k").display().to_string();
        crate::keys::keygen(&name).expect("keygen");
        let p = policy(
            dir.path(),
            "[[rule]]\nrepositories = \"127.0.0.1:5077/team/*\"\nkeys = [\"k.pub\"]\n\n\
             [[rule]]\nrepositories = \"*\"\nkeys = []\n",
        )
        .expect("reads");
        for spelling in [
            "localhost:5077/team/evil",
            "127.0.0.1:05077/team/evil",
            "LOCALHOST:5077/team/evil",
            "127.0.0.2:5077/team/evil",
        ] {
            let r = reference(spelling);
            let rule = p.rule_for(&r).unwrap_or_else(|| panic!("{spelling}: no rule"));
            assert_eq!(rule.repositories, "127.0.0.1:5077/team/*", "{spelling}");
            assert_eq!(rule.spelt_otherwise(&r), Some("127.0.0.1:5077"), "{spelling}");
        }
        let r = reference("127.0.0.1:5077/team/good");
        assert_eq!(p.rule_for(&r).and_then(|rule| rule.spelt_otherwise(&r)), None);
        let elsewhere = reference("127.0.0.1:5078/team/x");
        assert_eq!(p.rule_for(&elsewhere).map(|r| r.repositories.as_str()), Some("*"));
        let err = policy(dir.path(), "[[rule]]\nrepositories = \"reg:99999/*\"\nkeys = []\n").expect_err("bad port");
        assert!(err.to_string().contains("not a registry HOST[:PORT]"), "{err}");
    }

    #[test]
    fn a_bad_policy_is_one_line_naming_the_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        for (text, says) in [
            ("pin_tags = true\n", "unknown field `pin_tags`"),
            ("[[rule]]\nrepositories = \"*\"\nkeys = [\"missing.pub\"]\n", "missing.pub"),
            ("[[rule]]\nrepositories = \"[\"\nkeys = []\n", "repositories = \"[\""),
        ] {
            let err = policy(dir.path(), text).expect_err(text).to_string();
            assert!(err.starts_with("trust policy ") && err.contains("policy.toml") && err.contains(says), "{err}");
            assert_eq!(err.lines().count(), 1, "{err}");
        }
        std::fs::write(dir.path().join("bad.pub"), "-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n")
            .expect("writes");
        let err = policy(dir.path(), "[[rule]]\nrepositories = \"*\"\nkeys = [\"bad.pub\"]\n").expect_err("bad PEM");
        assert!(err.to_string().contains("bad.pub: not an ECDSA P-256 public key"), "{err}");
    }

    #[test]
    fn the_example_reads_once_its_placeholders_are_filled() {
        let dir = tempfile::tempdir().expect("tempdir");
        let name = dir.path().join("team").display().to_string();
        crate::keys::keygen(&name).expect("keygen");
        let text = EXAMPLE_POLICY.replace("REGISTRY", "127.0.0.1:5000").replace("KEY.pub", "team.pub");
        let p = policy(dir.path(), &text).expect("reads");
        assert!(p.pin_tags);
        assert_eq!(p.rule_for(&reference("127.0.0.1:5000/a/b")).map(|r| r.keys.len()), Some(1));
        assert!(p.rule_for(&reference("127.0.0.1:5001/a")).is_none());
    }
}
