//! Every task passes at once, so a run measures the host's own cost per task.

use loadhost_sdk::{Doer, Task, TaskResult};

struct Noop;

impl Doer for Noop {
    fn do_task(_task: Task) -> TaskResult {
        Ok(())
    }
}

loadhost_sdk::export!(Noop);
