//! The load-model lines a run prints before its load and writes into every output: what will run
//! (model, rate, workers, event loops), this process's segment, and the limits in force.

use loadhost_config::RunSettings;
use loadhost_config::units::{Dur, Size};
use loadhost_engine::{Model, Overload, Plan};
use loadhost_output::plural;

/// The whole description: the model (or each scenario's), the segment and the limits.
pub(crate) fn run(settings: &RunSettings) -> String {
    format!("{}{}\n  {}", model(settings), segment(settings), limits(settings))
}

fn model(settings: &RunSettings) -> String {
    let live = settings.options.control.is_some();
    let scenarios = settings.scenarios();
    if scenarios.is_empty() {
        // A single run: its one plan is the run.
        return settings.plans.iter().map(|p| plan(p, live)).collect();
    }
    let each: Vec<String> = scenarios
        .iter()
        .map(|scenario| {
            let model = plan(scenario, live);
            let at = scenario.start_delay();
            if at.is_zero() {
                format!("{}: {model}", scenario.scenario())
            } else {
                format!("{} (from {at:?}): {model}", scenario.scenario())
            }
        })
        .collect();
    format!("{} scenarios\n    {}", each.len(), each.join("\n    "))
}

/// This process's share, when the plan is split.
fn segment(settings: &RunSettings) -> String {
    match settings.segment {
        Some(s) => format!(
            "\n  segment {} of {} (0-based): the slots and iterations k with k mod {} = {}, and its share of the workers",
            s.index(),
            s.count(),
            s.count(),
            s.index()
        ),
        None => String::new(),
    }
}

/// The limits in force, defaults included.
fn limits(settings: &RunSettings) -> String {
    let o = &settings.options;
    let show = |d: Option<Dur>| d.map(|d| d.to_string()).unwrap_or_default();
    format!(
        "limits: {} memory per instance, {} per task, {} grace on stop, {} KiB wasm stack",
        Size(settings.max_memory()),
        show(o.task_timeout),
        show(o.grace),
        loadhost_runtime::limits::MAX_WASM_STACK >> 10,
    )
}

/// One plan's model: `open model: 3000 tasks over 10.0s …` or `closed model: 4 workers looping …`.
fn plan(plan: &Plan, live: bool) -> String {
    let loops = plural(u64::from(plan.event_loops(live)), "event loop", "event loops");
    let model = match plan.model() {
        Model::Open { workers, max_workers, overload, .. } => {
            let overload = match overload {
                Overload::Drop => "drop",
                Overload::Queue => "queue",
            };
            let what = if plan.retries().is_some() { "slots (tasks and retries)" } else { "tasks" };
            // Poisson arrivals make the count random: the plan knows its expected value only.
            let about = if plan.planned_is_exact() { "" } else { "about " };
            format!(
                "open model: {about}{} {what} over {:.1}s ({:.1}/s on average, {} arrivals, seed {}), {workers} to {max_workers} workers, overload {overload}",
                plan.planned_tasks().unwrap_or(0),
                plan.planned_generation().unwrap_or_default().as_secs_f64(),
                plan.expected_rate().unwrap_or(0.0),
                plan.arrivals(),
                plan.seed(),
            )
        }
        Model::Closed { workers, duration, max_tasks } => {
            let mut bounds = Vec::new();
            if let Some(d) = duration {
                bounds.push(format!("for {:.1}s", d.as_secs_f64()));
            }
            if let Some(n) = max_tasks {
                bounds.push(format!("up to {}", plural(*n, "task", "tasks")));
            }
            format!("closed model: {} looping {}", plural(u64::from(*workers), "worker", "workers"), bounds.join(", "))
        }
    };
    format!("{model}, on {loops}")
}
