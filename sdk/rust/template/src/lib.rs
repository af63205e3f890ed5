//! __NAME__: a loadhost plugin. Each task is one call of `do_task`: here, one GET of TARGET_URL
//! with a check that the status is 200 (a 5xx is worth a retry, another status is a failure).

use loadhost_sdk::{Doer, Task, TaskResult, config::env_or, failed, http, metrics::check, retryable};

struct Plugin;

// The metrics it records, for `loadhost inspect` and for thresholds without `--metric`.
loadhost_sdk::declare_metrics!("status is 200:check");

impl Doer for Plugin {
    fn do_task(_task: Task) -> TaskResult {
        let url = env_or("TARGET_URL", "http://127.0.0.1:8080/".to_owned());
        let response = http::get(&url).send().map_err(|err| retryable(err.to_string()))?;
        if check("status is 200", response.status == 200, &[]) {
            Ok(())
        } else if response.status >= 500 {
            Err(retryable(format!("GET {url} answered {}", response.status)))
        } else {
            Err(failed(format!("GET {url} answered {}", response.status)))
        }
    }
}

loadhost_sdk::export!(Plugin);
