//! k6's `options` as the script's own init code computes them (`__ENV.VUS ? … : …`, a lookup in a
//! table of profiles, a spread, a function's result): when the text cannot be read as a literal,
//! the host runs the init code once, on an instance of the script's runner with the run's `-e`
//! values and grants, and reads what `plan.options` returns — k6 evaluates its options the same
//! way. The instance is bounded as `setup` is: `--max-memory`, and `--lifecycle-timeout` for the
//! call. The runner compiled here is the run's own (the compile cache hands it on).

use std::path::Path;

use loadhost_config::RunOptions;
use serde_json::Value;

use super::{Applied, map};
use crate::exit::Failure;

/// The options the script `entry` computes, applied to `options` (fields a flag set are kept),
/// with `at` (`FILE:LINE` of the `options` export, or of a locustfile's shape) and `what` (k6's
/// options, the shape's ticks) in what it says. `Ok(None)`: the runner
/// computes none (a script that is not k6's). What keeps them from being computed fails as the
/// run would fail on it: a runner refused (exit 3), init code that throws or does not return
/// (exit 4), a value k6 would not take (exit 2).
pub fn apply_computed(
    entry: &Path,
    at: &str,
    what: &str,
    options: &mut RunOptions,
) -> Result<Option<Applied>, Failure> {
    let Some(json) = evaluate(entry, at, what, options)? else { return Ok(None) };
    let invalid = |why: String| Failure::usage(anyhow::anyhow!("{at}: {what}: {why}"));
    let value: Value = serde_json::from_str(&json).map_err(|err| invalid(format!("not JSON: {err}")))?;
    let Value::Object(object) = value else { return Err(invalid("not an object".into())) };
    let at = format!("{at} (computed)");
    let mut applied = Applied { at: at.clone(), ..Applied::default() };
    map(&object, options, &mut applied).map_err(invalid)?;
    Ok(Some(applied))
}

/// The runner's `plan.options` for `entry`, with the grants `options` give.
fn evaluate(entry: &Path, at: &str, what: &str, options: &RunOptions) -> Result<Option<String>, Failure> {
    let settings = loadhost_config::resolve(options.clone()).map_err(Failure::usage)?;
    let (tokio, grants) = crate::prepare::runtime_and_grants(&settings)?;
    let runtime = crate::prepare::runtime(&settings, 1)?;
    let plugin = crate::prepare::load_as(&runtime, entry, &entry.display().to_string())?;
    let factory = plugin.factory(grants);
    let limit = settings.lifecycle_timeout();
    // The timer is made inside the runtime it runs on.
    let call = async { tokio::time::timeout(limit, factory.plan_options()).await };
    let aborted = |why: String| Failure::aborted(anyhow::anyhow!("{at}: computing {what}: {why}"));
    match tokio.block_on(call) {
        Ok(Ok(json)) => Ok(json),
        Ok(Err(err)) => Err(aborted(err.to_string())),
        Err(_) => Err(aborted(format!("the init code did not return within {limit:?} (--lifecycle-timeout)"))),
    }
}
