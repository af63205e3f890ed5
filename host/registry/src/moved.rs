//! Moved tags: a tag that now resolves to another manifest than the one the store recorded for it
//! the last time it was pulled. Running by tag then runs something else than before, possibly with
//! other bundle settings; that is news, so it is described here (both digests, the settings that
//! change) for the caller to warn about, or to refuse (`--pin-tags`).

use std::collections::BTreeMap;
use std::fmt;

/// What to do when a tag resolves to another digest than the store recorded for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OnMove {
    /// Run the new digest, record it, and say so loudly (a `warn!` paragraph).
    #[default]
    Warn,
    /// Refuse: [`RegistryError::TagMoved`](crate::RegistryError::TagMoved), the record left as it
    /// was (so every later run by the tag is refused too until the move is accepted).
    Refuse,
    /// An explicit `loadhost pull` or `pin`: the user asked for what the tag is now; record it.
    Accept,
}

/// One bundle setting that differs between the old and the new manifest (a dotted TOML key).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SettingChange {
    /// The key, dotted for nested tables (`[[scenario]]` arrays are compared whole).
    pub key: String,
    /// Its value in the old bundle (inline TOML), `None` when it was not set.
    pub old: Option<String>,
    /// Its value in the new bundle (inline TOML), `None` when it vanished.
    pub new: Option<String>,
}

/// How the bundle settings change with the move.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SettingsChange {
    /// The old manifest (or its bundle TOML) is no longer in the store: nothing to compare with.
    OldNotStored,
    /// The settings that differ, were added or vanished (empty: none); and whether the data
    /// feed layer changed.
    Compared {
        /// The keys that change, sorted.
        keys: Vec<SettingChange>,
        /// The bundle's data feed (layer digest) differs.
        data_changed: bool,
    },
}

/// A tag that moved: what it resolved to before, what it resolves to now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TagMove {
    /// The reference as given (`HOST/REPO:TAG`).
    pub reference: String,
    /// The manifest digest the store recorded for the tag.
    pub old: String,
    /// The manifest digest the tag resolves to now.
    pub new: String,
    /// The bundle settings that change.
    pub settings: SettingsChange,
}

impl fmt::Display for TagMove {
    /// One paragraph (no newline): the tag, both digests, the settings that change.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "the tag {} has MOVED: this store recorded it as {} when it was last pulled, and the registry now \
             resolves it to {}, another plugin or bundle than before; ",
            self.reference, self.old, self.new
        )?;
        match &self.settings {
            SettingsChange::OldNotStored => write!(
                f,
                "the old manifest is no longer in the local store, so the bundle settings that change cannot be told"
            ),
            SettingsChange::Compared { keys, data_changed } => {
                if keys.is_empty() {
                    write!(f, "the bundle settings are the same")?;
                } else {
                    write!(f, "bundle settings that change: ")?;
                    for (i, c) in keys.iter().enumerate() {
                        let sep = if i == 0 { "" } else { "; " };
                        match (&c.old, &c.new) {
                            (Some(old), Some(new)) => write!(f, "{sep}{} {old} -> {new}", c.key)?,
                            (None, Some(new)) => write!(f, "{sep}{} added ({new})", c.key)?,
                            (Some(old), None) => write!(f, "{sep}{} vanished (was {old})", c.key)?,
                            (None, None) => {}
                        }
                    }
                }
                if *data_changed {
                    write!(f, "; the bundle's data feed changed")?;
                }
                Ok(())
            }
        }
    }
}

/// The keys whose values differ between two bundle TOMLs (`None`: no bundle TOML, no settings).
/// A TOML that does not parse counts as its text under the key `(unreadable TOML)`, so a change is
/// still reported rather than hidden.
pub fn diff_settings(old: Option<&str>, new: Option<&str>) -> Vec<SettingChange> {
    let old = flatten_toml(old);
    let new = flatten_toml(new);
    let mut keys: Vec<&String> = old.keys().chain(new.keys()).collect();
    keys.sort();
    keys.dedup();
    keys.into_iter()
        .filter_map(|key| {
            let (o, n) = (old.get(key), new.get(key));
            (o != n).then(|| SettingChange { key: key.clone(), old: o.cloned(), new: n.cloned() })
        })
        .collect()
}

/// A TOML document as dotted key -> inline TOML value (tables are entered, arrays compared whole).
fn flatten_toml(text: Option<&str>) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let Some(text) = text else { return out };
    match toml::from_str::<toml::Table>(text) {
        Ok(table) => flatten_into(&mut out, "", &table),
        Err(_) => {
            out.insert("(unreadable TOML)".to_owned(), format!("{:?}", text.trim()));
        }
    }
    out
}

fn flatten_into(out: &mut BTreeMap<String, String>, prefix: &str, table: &toml::Table) {
    for (key, value) in table {
        let dotted = if prefix.is_empty() { key.clone() } else { format!("{prefix}.{key}") };
        match value {
            toml::Value::Table(inner) => flatten_into(out, &dotted, inner),
            other => {
                out.insert(dotted, other.to_string());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn change(key: &str, old: Option<&str>, new: Option<&str>) -> SettingChange {
        SettingChange { key: key.to_owned(), old: old.map(str::to_owned), new: new.map(str::to_owned) }
    }

    #[test]
    fn the_diff_names_changed_added_and_vanished_keys() {
        let old = "rate = 50\nduration = \"10s\"\nthreshold = [\"latency_ms:p(99)<200\"]\n[limits]\nmemory = 64\n";
        let new = "rate = 20\nthreshold = [\"latency_ms:p(99)<200\"]\nworkers = 4\n[limits]\nmemory = 128\n";
        assert_eq!(
            diff_settings(Some(old), Some(new)),
            vec![
                change("duration", Some("\"10s\""), None),
                change("limits.memory", Some("64"), Some("128")),
                change("rate", Some("50"), Some("20")),
                change("workers", None, Some("4")),
            ]
        );
        assert!(diff_settings(Some(old), Some(old)).is_empty(), "the same TOML changes nothing");
    }

    #[test]
    fn a_bundle_that_vanishes_or_appears_changes_every_key() {
        assert_eq!(diff_settings(Some("rate = 5\n"), None), vec![change("rate", Some("5"), None)]);
        assert_eq!(diff_settings(None, Some("rate = 5\n")), vec![change("rate", None, Some("5"))]);
        assert!(diff_settings(None, None).is_empty());
        // Scenario blocks are compared whole, and formatting alone is no change.
        let a = "[[scenario]]\nname = \"a\"\nrate = 1\n";
        assert_eq!(diff_settings(Some(a), Some("[[scenario]]\nname=\"a\"\nrate=1")), vec![]);
        let changed = diff_settings(Some(a), Some("[[scenario]]\nname = \"a\"\nrate = 2\n"));
        assert_eq!(changed.len(), 1);
        assert_eq!(changed[0].key, "scenario");
        // An unreadable TOML is a change, not a silence.
        assert_eq!(diff_settings(Some("rate = "), None)[0].key, "(unreadable TOML)");
    }

    #[test]
    fn the_paragraph_names_both_digests_and_the_settings() {
        let mut moved = TagMove {
            reference: "127.0.0.1:5000/team/x:1.0".to_owned(),
            old: "sha256:aaa".to_owned(),
            new: "sha256:bbb".to_owned(),
            settings: SettingsChange::Compared {
                keys: vec![change("rate", Some("50"), Some("20")), change("duration", Some("\"10s\""), None)],
                data_changed: true,
            },
        };
        let text = moved.to_string();
        assert!(text.contains("127.0.0.1:5000/team/x:1.0 has MOVED"), "{text}");
        assert!(text.contains("sha256:aaa") && text.contains("sha256:bbb"), "{text}");
        assert!(text.contains("rate 50 -> 20; duration vanished (was \"10s\")"), "{text}");
        assert!(text.contains("data feed changed") && !text.contains('\n'), "{text}");
        moved.settings = SettingsChange::OldNotStored;
        assert!(moved.to_string().contains("no longer in the local store"));
    }
}
