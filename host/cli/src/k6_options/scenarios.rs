//! k6's `options.scenarios` as loadhost's scenarios (`[[scenario]]` blocks), one per k6 scenario,
//! by executor. What runs in each (k6's `exec`) and its `env` are the JavaScript runner's to apply
//! (`sdk/js/runner/k6.js` reads them from the script's own `options`): the host gives each
//! scenario its name, which every task carries.
//!
//! | k6 executor | loadhost |
//! |---|---|
//! | `constant-vus` { vus, duration } | closed: `workers`, `duration` |
//! | `ramping-vus` { startVUs, stages } | closed: `workers` from `startVUs`, `stage` ramps them |
//! | `constant-arrival-rate` { rate, timeUnit, duration, preAllocatedVUs, maxVUs } | open: `rate` per second, `workers`, `max-workers` |
//! | `ramping-arrival-rate` { startRate, timeUnit, stages, preAllocatedVUs, maxVUs } | open: `rate` from `startRate`, `stage` ramps it |
//! | `per-vu-iterations` { vus, iterations, maxDuration } | closed: `workers`, `iterations` = vus × iterations, `duration` |
//! | `shared-iterations` { vus, iterations, maxDuration } | closed: `workers`, `iterations`, `duration` |
//!
//! `startTime` is the block's `start-after`. `externally-controlled` and an unknown executor are
//! refused; keys loadhost does not apply per scenario (`gracefulStop`, `gracefulRampDown`,
//! `tags`) are named in the run's warning.

use std::time::Duration;

use loadhost_config::options::ScenarioOptions;
use loadhost_config::units::{Dur, Rate, Shape, Stage};
use serde_json::{Map, Value};

/// k6's `maxDuration` default for the iteration-bounded executors.
const K6_MAX_DURATION: Duration = Duration::from_secs(600);

/// The keys every executor takes that the runner applies (`exec`, `env`) or the block maps
/// (`executor`, `startTime`).
const COMMON: [&str; 4] = ["executor", "startTime", "exec", "env"];

/// Keys k6 takes that loadhost does not apply per scenario: named in the run's warning.
const NOT_APPLIED: [&str; 3] = ["gracefulStop", "gracefulRampDown", "tags"];

/// The scenarios of k6's `options.scenarios` object `value`, and the keys of them loadhost does
/// not apply (`NAME.gracefulStop`); an error names the scenario and the key.
pub(super) fn scenarios(value: &Value) -> Result<(Vec<ScenarioOptions>, Vec<String>), String> {
    let object = value.as_object().ok_or("scenarios: expected an object of name: { executor, … }")?;
    if object.is_empty() {
        return Err("scenarios: no scenario is given".into());
    }
    let mut blocks = Vec::with_capacity(object.len());
    let mut unread = Vec::new();
    for (name, scenario) in object {
        let fields = scenario.as_object().ok_or_else(|| format!("scenarios.{name}: expected an object"))?;
        let block = one(name, fields).map_err(|why| format!("scenarios.{name}: {why}"))?;
        for key in fields.keys() {
            if NOT_APPLIED.contains(&key.as_str()) {
                unread.push(format!("scenarios.{name}.{key}"));
            }
        }
        blocks.push(block);
    }
    Ok((blocks, unread))
}

/// One k6 scenario as a block.
fn one(name: &str, fields: &Map<String, Value>) -> Result<ScenarioOptions, String> {
    let executor = fields.get("executor").and_then(Value::as_str).ok_or("needs an `executor`")?;
    let (keys, block): (&[&str], ScenarioOptions) = match executor {
        "constant-vus" => (
            &["vus", "duration"],
            ScenarioOptions {
                workers: Some(whole_or(fields, "vus", 1)?),
                duration: Some(required_duration(fields, "duration")?),
                ..ScenarioOptions::default()
            },
        ),
        "ramping-vus" => (
            &["startVUs", "stages"],
            ScenarioOptions {
                workers: Some(whole_or(fields, "startVUs", 1)?),
                stage: stages(fields, 1.0)?,
                ..ScenarioOptions::default()
            },
        ),
        "constant-arrival-rate" => {
            let per = time_unit(fields)?;
            let rate = number(fields, "rate")?.ok_or("needs a `rate`")?;
            (
                &["rate", "timeUnit", "duration", "preAllocatedVUs", "maxVUs"],
                ScenarioOptions {
                    rate: Some(Rate(rate / per)),
                    duration: Some(required_duration(fields, "duration")?),
                    ..arrival_crew(fields)?
                },
            )
        }
        "ramping-arrival-rate" => {
            let per = time_unit(fields)?;
            (
                &["startRate", "timeUnit", "stages", "preAllocatedVUs", "maxVUs"],
                ScenarioOptions {
                    rate: Some(Rate(number(fields, "startRate")?.unwrap_or(0.0) / per)),
                    stage: stages(fields, per)?,
                    ..arrival_crew(fields)?
                },
            )
        }
        "per-vu-iterations" | "shared-iterations" => {
            let vus = whole_or(fields, "vus", 1)?;
            let iterations = u64::from(whole_or(fields, "iterations", 1)?);
            let total = if executor == "per-vu-iterations" { iterations * u64::from(vus) } else { iterations };
            (
                &["vus", "iterations", "maxDuration"],
                ScenarioOptions {
                    workers: Some(vus),
                    iterations: Some(total),
                    duration: Some(duration(fields, "maxDuration")?.unwrap_or(Dur(K6_MAX_DURATION))),
                    ..ScenarioOptions::default()
                },
            )
        }
        "externally-controlled" => {
            return Err("k6's externally-controlled executor is not run: loadhost's live control is \
                        `--control ADDR` on a run of one scenario (docs/engine.md)"
                .into());
        }
        other => return Err(format!("unknown executor '{other}'")),
    };
    if let Some(key) = fields
        .keys()
        .find(|k| !keys.contains(&k.as_str()) && !COMMON.contains(&k.as_str()) && !NOT_APPLIED.contains(&k.as_str()))
    {
        return Err(format!("'{key}' is not an option of the {executor} executor"));
    }
    let start_after = duration(fields, "startTime")?;
    Ok(ScenarioOptions { name: name.to_owned(), start_after, ..block })
}

/// `preAllocatedVUs` (required) and `maxVUs` (default: as many) as the open model's crew.
fn arrival_crew(fields: &Map<String, Value>) -> Result<ScenarioOptions, String> {
    let pre = whole(fields, "preAllocatedVUs")?.ok_or("needs `preAllocatedVUs`")?;
    let max = whole(fields, "maxVUs")?.unwrap_or(pre);
    if max < pre {
        return Err(format!("maxVUs ({max}) is below preAllocatedVUs ({pre})"));
    }
    Ok(ScenarioOptions { workers: Some(pre), max_workers: Some(max), ..ScenarioOptions::default() })
}

/// `timeUnit` in seconds (default 1s).
fn time_unit(fields: &Map<String, Value>) -> Result<f64, String> {
    let per = duration(fields, "timeUnit")?.map_or(1.0, |d| d.0.as_secs_f64());
    if per <= 0.0 {
        return Err("timeUnit must be longer than 0s".into());
    }
    Ok(per)
}

/// `stages: [{ duration, target }]` of `fields`, each target divided by `per`.
fn stages(fields: &Map<String, Value>, per: f64) -> Result<Vec<Stage>, String> {
    stage_list(fields.get("stages").ok_or("needs `stages: [{ duration, target }]`")?, per)
}

/// k6's `stages: [{ duration, target }]` (top-level options' too), each target divided by `per`
/// (a rate per timeUnit as a rate per second; 1 for VUs).
pub(super) fn stage_list(value: &Value, per: f64) -> Result<Vec<Stage>, String> {
    let list = value.as_array().ok_or("stages: expected an array of { duration, target }")?;
    if list.is_empty() {
        return Err("stages: no stage is given".into());
    }
    list.iter()
        .map(|stage| {
            let duration = stage["duration"].as_str().ok_or("stages: each needs a duration such as '30s'")?;
            let duration = duration.parse().map_err(|e| format!("stages: '{duration}': {e}"))?;
            let target = stage["target"].as_f64().filter(|t| *t >= 0.0).ok_or("stages: each needs a target ≥ 0")?;
            Ok(Stage { duration, target: Rate(target / per), shape: Shape::Linear })
        })
        .collect()
}

fn number(fields: &Map<String, Value>, key: &str) -> Result<Option<f64>, String> {
    match fields.get(key) {
        None => Ok(None),
        Some(v) => v
            .as_f64()
            .or_else(|| v.as_str().and_then(|s| s.trim().parse().ok()))
            .filter(|n| n.is_finite() && *n >= 0.0)
            .map(Some)
            .ok_or_else(|| format!("{key}: expected a number ≥ 0, got {v}")),
    }
}

fn whole(fields: &Map<String, Value>, key: &str) -> Result<Option<u32>, String> {
    let Some(value) = fields.get(key) else { return Ok(None) };
    let n = super::count(key, value)?;
    u32::try_from(n).map(Some).map_err(|_| format!("{key}: {n} is too many"))
}

fn whole_or(fields: &Map<String, Value>, key: &str, default: u32) -> Result<u32, String> {
    Ok(whole(fields, key)?.unwrap_or(default))
}

fn duration(fields: &Map<String, Value>, key: &str) -> Result<Option<Dur>, String> {
    fields.get(key).map(|value| super::parsed(key, value)).transpose()
}

fn required_duration(fields: &Map<String, Value>, key: &str) -> Result<Dur, String> {
    duration(fields, key)?.ok_or_else(|| format!("needs a `{key}` such as '30s'"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(json: &str) -> Result<Vec<ScenarioOptions>, String> {
        scenarios(&serde_json::from_str(json).unwrap()).map(|(blocks, _)| blocks)
    }

    #[test]
    fn each_executor_becomes_a_block() {
        let blocks = read(
            r#"{
            "a": {"executor": "constant-vus", "vus": 3, "duration": "10s", "exec": "browse"},
            "b": {"executor": "ramping-vus", "stages": [{"duration": "5s", "target": 4}], "startTime": "2s"},
            "c": {"executor": "constant-arrival-rate", "rate": 30, "timeUnit": "1m", "duration": "1m",
                  "preAllocatedVUs": 2, "maxVUs": 5},
            "d": {"executor": "ramping-arrival-rate", "startRate": 10, "stages": [{"duration": "1s", "target": 20}],
                  "preAllocatedVUs": 3},
            "e": {"executor": "per-vu-iterations", "vus": 4, "iterations": 5},
            "f": {"executor": "shared-iterations", "vus": 2, "iterations": 7, "maxDuration": "30s"}
        }"#,
        )
        .unwrap();
        let by = |n: &str| blocks.iter().find(|b| b.name == n).unwrap();
        assert_eq!((by("a").workers, by("a").duration.map(|d| d.0.as_secs())), (Some(3), Some(10)));
        assert_eq!((by("b").workers, by("b").stage.len()), (Some(1), 1));
        assert_eq!(by("b").start_after.map(|d| d.0.as_secs()), Some(2));
        assert_eq!((by("c").rate, by("c").workers, by("c").max_workers), (Some(Rate(0.5)), Some(2), Some(5)));
        assert_eq!(
            (by("d").rate, by("d").stage[0].target, by("d").max_workers),
            (Some(Rate(10.0)), Rate(20.0), Some(3))
        );
        assert_eq!((by("e").workers, by("e").iterations), (Some(4), Some(20)), "per VU: 4 × 5");
        assert_eq!((by("f").iterations, by("f").duration.map(|d| d.0.as_secs())), (Some(7), Some(30)));
        assert_eq!(by("e").duration.map(|d| d.0), Some(K6_MAX_DURATION));
    }

    #[test]
    fn what_cannot_run_is_named() {
        for (json, said) in [
            (r#"{"a": {"executor": "externally-controlled", "vus": 1}}"#, "scenarios.a: k6's externally-controlled"),
            (r#"{"a": {"executor": "warp"}}"#, "scenarios.a: unknown executor 'warp'"),
            (r#"{"a": {"vus": 1}}"#, "scenarios.a: needs an `executor`"),
            (r#"{"a": {"executor": "constant-vus", "vus": 1}}"#, "needs a `duration`"),
            (r#"{"a": {"executor": "constant-vus", "duration": "1s", "rate": 2}}"#, "'rate' is not an option"),
            (r#"{"a": {"executor": "constant-arrival-rate", "rate": 1, "duration": "1s"}}"#, "preAllocatedVUs"),
            (
                r#"{"a": {"executor": "constant-arrival-rate", "rate": 1, "duration": "1s", "preAllocatedVUs": 5, "maxVUs": 2}}"#,
                "maxVUs (2) is below",
            ),
            (r#"{}"#, "no scenario"),
        ] {
            let err = read(json).unwrap_err();
            assert!(err.contains(said), "{json}: {err}");
        }
        let (_, unread) = scenarios(
            &serde_json::json!({"a": {"executor": "constant-vus", "duration": "1s", "gracefulStop": "5s", "tags": {}}}),
        )
        .unwrap();
        assert_eq!(unread, ["scenarios.a.gracefulStop", "scenarios.a.tags"]);
    }
}
