//! Property tests: the threshold parser never panics and reads back what it is given; HDR histograms
//! merge into exactly what recording everything in one would give.

use loadhost_metrics::LatencyHistogram;
use loadhost_metrics::catalogue::Aggregate;
use loadhost_metrics::threshold::{Op, Threshold};
use proptest::prelude::*;

fn aggregate() -> impl Strategy<Value = (String, Aggregate)> {
    prop_oneof![
        Just(("avg".to_owned(), Aggregate::Avg)),
        Just(("min".to_owned(), Aggregate::Min)),
        Just(("max".to_owned(), Aggregate::Max)),
        Just(("med".to_owned(), Aggregate::Med)),
        Just(("count".to_owned(), Aggregate::Count)),
        Just(("rate".to_owned(), Aggregate::Rate)),
        (1u32..=1000).prop_map(|n| {
            let p = f64::from(n) / 10.0;
            (format!("p({p})"), Aggregate::Percentile(p))
        }),
    ]
}

fn op() -> impl Strategy<Value = (&'static str, Op)> {
    prop::sample::select(vec![
        ("<", Op::Lt),
        ("<=", Op::Le),
        (">", Op::Gt),
        (">=", Op::Ge),
        ("==", Op::Eq),
        ("!=", Op::Ne),
    ])
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn the_threshold_parser_never_panics(text in ".{0,60}") {
        let _ = text.parse::<Threshold>();
    }

    #[test]
    fn the_threshold_parser_never_panics_on_near_misses(text in "[a-z_{}:,()<>=!0-9. ]{0,40}") {
        let _ = text.parse::<Threshold>();
    }

    #[test]
    fn well_formed_thresholds_parse_to_their_parts(
        metric in "[a-z][a-z0-9_]{0,15}",
        tag in proptest::option::of(("[a-z]{1,6}", "[a-z0-9]{1,6}")),
        (agg_text, agg) in aggregate(),
        (op_text, op) in op(),
        bound in -1e9f64..1e9,
    ) {
        let tags = tag.as_ref().map(|(k, v)| format!("{{{k}:{v}}}")).unwrap_or_default();
        let text = format!("{metric}{tags}:{agg_text}{op_text}{bound}");
        let t: Threshold = text.parse().expect("a well-formed threshold parses");
        prop_assert_eq!(&t.metric, &metric);
        prop_assert_eq!(&t.tags, &tag.into_iter().collect::<Vec<_>>());
        prop_assert_eq!(&t.aggregate, &agg);
        prop_assert_eq!(t.op, op);
        prop_assert_eq!(t.bound, bound);
        prop_assert_eq!(t.to_string(), text);
    }

    #[test]
    fn merged_histograms_equal_one_that_recorded_everything(
        a in prop::collection::vec(0u64..10_000_000_000, 0..300),
        b in prop::collection::vec(0u64..10_000_000_000, 0..300),
    ) {
        let (mut left, mut right, mut all) = (LatencyHistogram::new(), LatencyHistogram::new(), LatencyHistogram::new());
        for &v in &a {
            left.record_micros(v);
            all.record_micros(v);
        }
        for &v in &b {
            right.record_micros(v);
            all.record_micros(v);
        }
        left.merge(&right);
        prop_assert_eq!(left.count(), (a.len() + b.len()) as u64);
        for q in [0.0, 0.5, 0.9, 0.99, 0.999, 1.0] {
            prop_assert_eq!(left.quantile_micros(q), all.quantile_micros(q), "quantile {}", q);
        }
        if let Some(&max) = a.iter().chain(&b).max() {
            // HDR keeps three significant digits.
            let top = left.quantile_micros(1.0);
            prop_assert!(top.abs_diff(max) <= max / 1000 + 1, "max {} vs {}", top, max);
        }
    }
}
