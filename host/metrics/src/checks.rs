//! Checks and groups (k6's steps) as thresholds, `compare` and the outputs read them.
//!
//! A check is a plugin series of kind check: its name is free text (`status is 200`) and its tags
//! are the plugin's own, plus `group` when the SDK recorded it inside a group. `checks` is the
//! built-in rate over them, and a `{…}` selector narrows it k6's way: `check:NAME` picks a check
//! by name, any other `key:value` picks the checks that carry that tag (among others), so
//! `checks{check:login ok,tier:gold}` is the check `login ok` where `tier` was `gold`, and
//! `checks{tier:gold}` every check tagged so. [`CheckSelector`] is that rule, the one every
//! reader of the spelling uses (thresholds, `compare --fail-on` on results files and summary
//! JSON, `merge`).
//!
//! The SDKs' `group` helpers time a block as the trend [`crate::catalogue::names::GROUP_DURATION`] (ms), tagged
//! [`GROUP_TAG`] with the group's path: `::checkout` for a top-level group, `::checkout::pay`
//! for one inside it (k6's names and paths).

use crate::count::MAX_COUNT;
use crate::plugin::{PluginMetrics, SeriesValue};

/// The selector tag that names a check: `checks{check:status is 200}` (k6's).
pub const CHECK_TAG: &str = "check";

/// The tag that carries a group's path (`::checkout::pay`): on `group_duration`, and on the
/// checks recorded inside the group.
pub const GROUP_TAG: &str = "group";

/// Which checks a `checks{…}` selector picks: a name (`check:NAME`) and tags each picked check
/// must carry. Without either it picks every check.
#[derive(Debug, Clone, Copy)]
pub struct CheckSelector<'a> {
    tags: &'a [(String, String)],
}

impl<'a> CheckSelector<'a> {
    /// The selector of `tags` (a threshold's or a rule's, the `scenario` tag already taken out).
    pub fn new(tags: &'a [(String, String)]) -> Self {
        Self { tags }
    }

    /// Whether the check `name` recorded with `tags` is picked: every `check:` tag equals its
    /// name, every other tag is among its tags (so two values of one key pick nothing).
    pub fn picks(&self, name: &str, tags: &[(String, String)]) -> bool {
        self.tags.iter().all(|(key, value)| {
            if key == CHECK_TAG { name == value } else { tags.iter().any(|(k, v)| k == key && v == value) }
        })
    }

    /// The passes and fails of the checks picked in `plugin`, all their series added up.
    pub fn tally(&self, plugin: &PluginMetrics) -> PassFail {
        let mut tally = PassFail::default();
        for (key, value) in &plugin.series {
            if let SeriesValue::Check { passes, fails } = value
                && self.picks(&key.name, &key.tags)
            {
                tally.add(*passes, *fails);
            }
        }
        tally
    }
}

/// Passes and fails of some checks (not `count::Tally`, which checks sums of any count).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PassFail {
    /// Times they held.
    pub passes: u64,
    /// Times they did not.
    pub fails: u64,
}

impl PassFail {
    /// Add one series' counts, each sum capped at `MAX_COUNT` as every count is (a crafted
    /// results file must not wrap them).
    pub fn add(&mut self, passes: u64, fails: u64) {
        self.passes = self.passes.saturating_add(passes).min(MAX_COUNT);
        self.fails = self.fails.saturating_add(fails).min(MAX_COUNT);
    }

    /// How many checks were made.
    pub fn total(&self) -> u64 {
        self.passes.saturating_add(self.fails)
    }

    /// passes ÷ checks; `None` with no check made (no sample, not 0% or 100%).
    pub fn rate(&self) -> Option<f64> {
        (self.total() > 0).then(|| self.passes as f64 / self.total() as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plugin::SeriesKey;

    fn tags(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()
    }

    fn plugin() -> PluginMetrics {
        let mut m = PluginMetrics::default();
        let mut record = |name: &str, pairs: &[(&str, &str)], ok: bool, n: usize| {
            for _ in 0..n {
                m.check(SeriesKey::new(name.into(), tags(pairs)), ok);
            }
        };
        record("status is 200", &[("tier", "gold")], true, 9);
        record("status is 200", &[("tier", "gold")], false, 1);
        record("status is 200", &[("tier", "silver")], false, 5);
        record("login ok", &[("group", "::checkout"), ("tier", "gold")], true, 4);
        record("login ok", &[], true, 2);
        m.counter(SeriesKey::new("status is 200".into(), vec![]), 100);
        m
    }

    #[test]
    fn a_selector_picks_by_name_and_by_any_of_the_checks_tags() {
        let m = plugin();
        let tally = |pairs: &[(&str, &str)]| {
            let t = tags(pairs);
            let tally = CheckSelector::new(&t).tally(&m);
            (tally.passes, tally.fails)
        };
        assert_eq!(tally(&[]), (15, 6), "every check, no other kind");
        assert_eq!(tally(&[("check", "status is 200")]), (9, 6), "a name with spaces, every tag set");
        assert_eq!(tally(&[("check", "status is 200"), ("tier", "gold")]), (9, 1));
        assert_eq!(tally(&[("tier", "gold")]), (13, 1), "every check with the tag");
        assert_eq!(tally(&[("group", "::checkout")]), (4, 0));
        assert_eq!(tally(&[("tier", "gold"), ("tier", "silver")]), (0, 0), "two values of a key: none");
        assert_eq!(tally(&[("check", "nosuch")]), (0, 0));
        assert_eq!(PassFail::default().rate(), None, "no check made: no sample");
        assert_eq!(PassFail { passes: 9, fails: 1 }.rate(), Some(0.9));
    }
}
