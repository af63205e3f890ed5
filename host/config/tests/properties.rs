//! Property tests of the units users type and of the TOML config: parsers never panic on any input,
//! accept what they print, and compute what the text says.

use std::path::Path;
use std::time::Duration;

use loadhost_config::units::{Dur, Rate, Size, Stage};
use proptest::prelude::*;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn parsers_never_panic(text in ".{0,40}") {
        let _ = text.parse::<Dur>();
        let _ = text.parse::<Rate>();
        let _ = text.parse::<Stage>();
        let _ = text.parse::<Size>();
    }

    #[test]
    fn parsers_never_panic_on_unit_like_text(text in "[0-9.:/a-zA-Z -]{0,24}") {
        let _ = text.parse::<Dur>();
        let _ = text.parse::<Rate>();
        let _ = text.parse::<Stage>();
        let _ = text.parse::<Size>();
    }

    #[test]
    fn a_printed_duration_parses_back(micros in 0u64..1_000_000_000_000_000) {
        let dur = Dur(Duration::from_micros(micros));
        let back: Dur = dur.to_string().parse().expect("a printed duration parses");
        let diff = back.0.abs_diff(dur.0);
        prop_assert!(diff <= Duration::from_micros(1), "{dur} came back as {back:?}");
    }

    #[test]
    fn durations_past_the_limit_are_refused(secs in 1_000_000_001u64..u64::MAX) {
        let text = format!("{secs}s");
        let err = text.parse::<Dur>().expect_err("too long");
        prop_assert!(err.contains("too long a duration"), "{}", err);
    }

    #[test]
    fn hours_minutes_seconds_add_up(h in 0u64..1000, m in 0u64..60, s in 0u64..60, ms in 0u64..1000) {
        let text = format!("{h}h{m}m{s}s{ms}ms");
        let parsed: Dur = text.parse().expect("a combination parses");
        prop_assert_eq!(parsed.0, Duration::from_millis(((h * 60 + m) * 60 + s) * 1000 + ms));
    }

    #[test]
    fn rates_divide_by_their_unit(n in 0u32..10_000_000, unit in prop::sample::select(vec!["", "/s", "/m", "/h"])) {
        let rate: Rate = format!("{n}{unit}").parse().expect("a rate parses");
        let per = match unit { "/m" => 60.0, "/h" => 3600.0, _ => 1.0 };
        prop_assert!((rate.0 - f64::from(n) / per).abs() < 1e-9);
    }

    #[test]
    fn negative_rates_are_refused(n in 1u32..1_000_000) {
        let text = format!("-{n}");
        prop_assert!(text.parse::<Rate>().is_err());
    }

    #[test]
    fn a_printed_stage_parses_back(ms in 1u64..100_000_000, target in 0u32..1_000_000) {
        let stage: Stage = format!("{ms}ms:{target}").parse().expect("a stage parses");
        let back: Stage = stage.to_string().parse().expect("a printed stage parses");
        prop_assert!(back.duration.0.abs_diff(stage.duration.0) <= Duration::from_micros(1));
        prop_assert!((back.target.0 - stage.target.0).abs() < 1e-6);
    }

    #[test]
    fn a_printed_size_parses_back(bytes in 0u64..(1 << 40)) {
        let size = Size(bytes);
        prop_assert_eq!(size.to_string().parse::<Size>(), Ok(size));
    }

    #[test]
    fn toml_configs_never_panic(text in "[a-z_=\\[\\]\"0-9. \n-]{0,80}") {
        let _ = loadhost_config::file::parse(Path::new("prop.toml"), &text);
    }

    #[test]
    fn valid_toml_configs_load(rate in 1u32..100_000, secs in 1u32..3600, workers in 1u32..500) {
        let text = format!("rate = {rate}\nduration = \"{secs}s\"\nworkers = {workers}\n");
        let options = loadhost_config::file::parse(Path::new("prop.toml"), &text).expect("valid TOML loads");
        let settings = loadhost_config::resolve(options).expect("and resolves");
        prop_assert_eq!(settings.plans[0].planned_tasks(), Some(u64::from(rate) * u64::from(secs)));
    }
}
