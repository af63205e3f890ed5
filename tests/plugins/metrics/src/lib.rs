//! Records one of each metric kind per task, so tests can check the host's aggregation exactly:
//! counter `tasks` (+1, tagged by parity), gauge `last_iteration`, trend `size` (= iteration),
//! check `even` (passes on even iterations), and counter `by_scenario` tagged with `task.scenario`.

use loadhost_sdk::metrics::{check, counter, gauge, trend};
use loadhost_sdk::{Doer, Task, TaskResult};

struct Metrics;

impl Doer for Metrics {
    fn do_task(task: Task) -> TaskResult {
        let even = task.iteration.is_multiple_of(2);
        counter("tasks", 1, &[("parity", if even { "even" } else { "odd" })]);
        gauge("last_iteration", task.iteration as f64, &[]);
        trend("size", task.iteration as f64, &[]);
        check("even", even, &[]);
        counter("by_scenario", 1, &[("scenario", &task.scenario)]);
        Ok(())
    }
}

loadhost_sdk::export!(Metrics);
