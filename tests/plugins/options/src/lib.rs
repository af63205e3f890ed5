//! Declares one option of each type and reads them through the SDK, so tests can check the host's
//! checks before any load and the SDK's typed reading with the declared defaults: each task GETs
//! `TARGET_URL` (required) and records what it read as gauges (`blob_bytes`, `pause_ms`, `ratio`,
//! `verbose` as 0 or 1, `label_given` as 0 or 1).

use std::time::Duration;

use loadhost_sdk::metrics::gauge;
use loadhost_sdk::{Doer, Task, TaskResult, failed, http, retryable};

struct Options;

loadhost_sdk::declare_options!(
    static OPTIONS =
        "TARGET_URL:url! 'the page to GET'",
        "BLOB_BYTES:int=1024 'bytes in each blob'",
        "PAUSE:duration=250ms 'the think time, recorded, never slept'",
        "RATIO:float=0.5",
        "VERBOSE:bool=false \"say what's read\"",
        "LABEL:string 'a label for the run (none: unlabelled)'",
);

loadhost_sdk::declare_metrics!(
    "blob_bytes:gauge",
    "pause_ms:gauge",
    "ratio:gauge",
    "verbose:gauge",
    "label_given:gauge"
);

impl Doer for Options {
    fn do_task(_task: Task) -> TaskResult {
        let url: String = OPTIONS.get("TARGET_URL");
        let blob_bytes: u64 = OPTIONS.get("BLOB_BYTES");
        let pause: Duration = OPTIONS.get("PAUSE");
        let ratio: f64 = OPTIONS.get("RATIO");
        let verbose: bool = OPTIONS.get("VERBOSE");
        let label: Option<String> = OPTIONS.get("LABEL");
        gauge("blob_bytes", blob_bytes as f64, &[]);
        gauge("pause_ms", pause.as_secs_f64() * 1000.0, &[]);
        gauge("ratio", ratio, &[]);
        gauge("verbose", f64::from(u8::from(verbose)), &[]);
        gauge("label_given", f64::from(u8::from(label.is_some())), &[]);
        let response = http::get(&url).send().map_err(|err| retryable(err.to_string()))?;
        if response.status == 200 { Ok(()) } else { Err(failed(format!("GET {url} answered {}", response.status))) }
    }
}

loadhost_sdk::export!(Options);
