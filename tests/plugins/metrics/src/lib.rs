//! Records one of each metric kind per task, so tests can check the host's aggregation exactly:
//! counter `tasks` (+1, tagged by parity), gauge `last_iteration`, trend `size` (= iteration),
//! checks `even` (passes on even iterations) and `known` (always passes), and counter `by_scenario` tagged with `task.scenario`.

use loadhost_sdk::metrics::{check, counter, gauge, trend};
use loadhost_sdk::{Doer, Task, TaskResult};

struct Metrics;

// Declared, so thresholds on them need no `--metric`.
loadhost_sdk::declare_metrics!(
    "tasks{parity}:counter",
    "last_iteration:gauge",
    "size:trend",
    "even:check",
    "known:check",
    "by_scenario{scenario}:counter",
);

impl Doer for Metrics {
    fn do_task(task: Task) -> TaskResult {
        let even = task.iteration.is_multiple_of(2);
        counter("tasks", 1, &[("parity", if even { "even" } else { "odd" })]);
        gauge("last_iteration", task.iteration as f64, &[]);
        trend("size", task.iteration as f64, &[]);
        check("even", even, &[]);
        check("known", true, &[]);
        counter("by_scenario", 1, &[("scenario", &task.scenario)]);
        Ok(())
    }
}

loadhost_sdk::export!(Metrics);
