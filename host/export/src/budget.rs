//! The cardinality budget: how many series a receiver is sent. A receiver pays for every distinct
//! label set (Prometheus keeps each in memory for hours), and one tag by user id or full URL would
//! make one per value, which is what k6 users meet as "cardinality explosion". So:
//! - URL-like labels (a key `url` or `uri`, or a value holding `://`) are dropped before anything
//!   else, and the series they split are added back together, unless `--out-url-labels` asks for
//!   them (the endpoint `name` label is the bounded form).
//! - Past [`MAX_PER_NAME`] label sets of one series name, or [`MAX_TOTAL`] in all, a new label set
//!   is folded into its name's `other` series (every label but `scenario` set to `other`); the
//!   label sets already admitted stay, so no counter goes backwards. The plugin-series cap
//!   (`loadhost_metrics::cardinality`) does the same upstream. The folded label sets are counted
//!   (the summary says how many) and a warning says so, once.

use std::collections::{HashMap, HashSet};

use crate::series::{Distribution, Labels, Series, Value};

/// Label sets of one series name admitted before new ones fold into `other`.
pub const MAX_PER_NAME: usize = 500;

/// Label sets admitted in all before new ones fold into `other`.
pub const MAX_TOTAL: usize = 5_000;

/// The value folded label values take.
pub const OTHER: &str = "other";

type Key = (String, Labels);

/// The label sets admitted so far, and what was folded.
#[derive(Debug, Default)]
pub struct Budget {
    url_labels: bool,
    per_name: HashMap<String, usize>,
    admitted: HashSet<Key>,
    folded: HashSet<Key>,
    warned: bool,
    limits: (usize, usize),
}

impl Budget {
    /// The default budget; `url_labels` keeps URL-like labels.
    pub fn new(url_labels: bool) -> Self {
        Self::with_limits(url_labels, MAX_PER_NAME, MAX_TOTAL)
    }

    /// A budget of `per_name` label sets per name and `total` in all (tests use small ones).
    pub fn with_limits(url_labels: bool, per_name: usize, total: usize) -> Self {
        Self { url_labels, limits: (per_name, total), ..Self::default() }
    }

    /// Distinct label sets folded into an `other` series so far.
    pub fn folded(&self) -> u64 {
        self.folded.len() as u64
    }

    /// `series` within the budget: URL-like labels dropped, label sets past the caps folded,
    /// and series left with the same name and labels added together (in first-seen order).
    pub fn apply(&mut self, series: Vec<Series>) -> Vec<Series> {
        let mut out: Vec<Series> = Vec::with_capacity(series.len());
        let mut index: HashMap<Key, usize> = HashMap::new();
        for mut s in series {
            if !self.url_labels {
                s.labels.retain(|(k, v)| !url_like(k, v));
            }
            let key = (s.name.clone(), s.labels.clone());
            if !self.admit(&key) {
                for (_, v) in s.labels.iter_mut().skip(1) {
                    *v = OTHER.to_owned();
                }
            }
            let key = (s.name.clone(), s.labels.clone());
            match index.get(&key) {
                Some(&i) => add(&mut out[i].value, &s.value),
                None => {
                    index.insert(key, out.len());
                    out.push(s);
                }
            }
        }
        out
    }

    /// Whether `key` keeps its own series (admitting it if there is room).
    fn admit(&mut self, key: &Key) -> bool {
        if self.admitted.contains(key) {
            return true;
        }
        let (per_name, total) = self.limits;
        let of_name = self.per_name.entry(key.0.clone()).or_default();
        if *of_name < per_name && self.admitted.len() < total {
            *of_name += 1;
            self.admitted.insert(key.clone());
            return true;
        }
        if self.folded.insert(key.clone()) && !self.warned {
            self.warned = true;
            tracing::warn!(
                "{}: more label sets than the exported series' budget ({per_name} per name, {total} in all): the rest \
                 are added into its `{OTHER}` series (the summary counts them)",
                key.0
            );
        }
        false
    }
}

/// A label that holds a URL: unbounded, so never a label unless asked.
fn url_like(key: &str, value: &str) -> bool {
    matches!(key, "url" | "uri") || value.contains("://")
}

/// Add `other` into `value`: counters and distributions add, a gauge keeps the latest.
fn add(value: &mut Value, other: &Value) {
    match (value, other) {
        (Value::Counter(a), Value::Counter(b)) => *a = a.saturating_add(*b),
        (Value::Histogram(a), Value::Histogram(b)) => merge(a, b),
        (a, b) => *a = b.clone(),
    }
}

/// Two distributions as one: buckets exactly; the summary's min, max and mean exactly, its
/// percentiles read from the merged buckets (within a bucket's width).
fn merge(a: &mut Distribution, b: &Distribution) {
    let (na, nb) = (a.buckets.count, b.buckets.count);
    a.buckets.merge(&b.buckets);
    if nb == 0 {
        return;
    }
    if na == 0 {
        a.stats = b.stats;
        return;
    }
    let buckets = &a.buckets;
    let q = |q: f64| buckets.quantile(q);
    a.stats = loadhost_metrics::Percentiles {
        min: a.stats.min.min(b.stats.min),
        mean: buckets.sum / buckets.count as f64,
        p50: q(0.5),
        p90: q(0.9),
        p95: q(0.95),
        p99: q(0.99),
        p999: q(0.999),
        max: a.stats.max.max(b.stats.max),
    };
}

/// The label sets of `series` by name.
#[cfg(test)]
fn label_sets(series: &[Series]) -> std::collections::BTreeMap<&str, usize> {
    let mut sets = std::collections::BTreeMap::new();
    for s in series {
        *sets.entry(s.name.as_str()).or_default() += 1;
    }
    sets
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::series::Unit;

    fn counter(name: &str, labels: &[(&str, &str)], n: u64) -> Series {
        Series {
            name: name.to_owned(),
            help: "",
            unit: Unit::None,
            labels: labels.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect(),
            value: Value::Counter(n),
        }
    }

    #[test]
    fn url_labels_are_dropped_and_their_series_added_together_unless_asked() {
        let series = || {
            vec![
                counter("reqs", &[("scenario", "s"), ("url", "http://a/1")], 2),
                counter("reqs", &[("scenario", "s"), ("url", "http://a/2")], 3),
                counter("reqs", &[("scenario", "s"), ("page", "https://a/3")], 4),
            ]
        };
        let out = Budget::new(false).apply(series());
        assert_eq!(out, vec![counter("reqs", &[("scenario", "s")], 9)]);
        assert_eq!(Budget::new(true).apply(series()).len(), 3);
    }

    #[test]
    fn label_sets_past_the_cap_fold_into_other_and_admitted_ones_stay_theirs() {
        let mut budget = Budget::with_limits(false, 2, 100);
        let first = budget.apply(vec![counter("c", &[("scenario", "s"), ("user", "1")], 1)]);
        assert_eq!(first.len(), 1);
        let users: Vec<Series> =
            (1..=5).map(|u| counter("c", &[("scenario", "s"), ("user", &u.to_string())], u)).collect();
        let out = budget.apply(users);
        assert_eq!(
            out,
            vec![
                counter("c", &[("scenario", "s"), ("user", "1")], 1),
                counter("c", &[("scenario", "s"), ("user", "2")], 2),
                counter("c", &[("scenario", "s"), ("user", OTHER)], 3 + 4 + 5),
            ]
        );
        assert_eq!(budget.folded(), 3);
        // The same label sets again: user 1 and 2 are still theirs, the rest still folded.
        let again =
            budget.apply((1..=5).map(|u| counter("c", &[("scenario", "s"), ("user", &u.to_string())], 1)).collect());
        assert_eq!(label_sets(&again).get("c"), Some(&3));
        assert_eq!(budget.folded(), 3, "a folded label set is counted once");
    }

    #[test]
    fn the_total_cap_holds_across_names() {
        let mut budget = Budget::with_limits(false, 10, 3);
        let out = budget.apply(
            (0..6).map(|i| counter(&format!("n{}", i % 2), &[("scenario", "s"), ("k", &i.to_string())], 1)).collect(),
        );
        assert_eq!(out.iter().filter(|s| s.labels[1].1 != OTHER).count(), 3);
        assert_eq!(budget.folded(), 3);
    }
}
