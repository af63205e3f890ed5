//! __NAME__: a loadhost plugin. Each task is one call of `do_task`: here, one GET of TARGET_URL
//! with a check that the status is 200 (a 5xx is worth a retry, another status is a failure).

use loadhost_sdk::{Doer, Task, TaskResult, failed, http, metrics::check, retryable};

struct Plugin;

// The metrics it records, for `loadhost inspect` and for thresholds without `--metric`.
loadhost_sdk::declare_metrics!("status is 200:check");

// The settings it reads (`loadhost run -e NAME=VALUE`), each with a type, a default or `!`
// (required) and a help: `loadhost inspect` lists them, `loadhost run` checks -e against them
// before any load, and `OPTIONS.get` reads each typed, its default from here.
loadhost_sdk::declare_options!(static OPTIONS = "TARGET_URL:url=http://127.0.0.1:8080/ 'the page to GET'");

impl Doer for Plugin {
    fn do_task(_task: Task) -> TaskResult {
        let url: String = OPTIONS.get("TARGET_URL");
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
