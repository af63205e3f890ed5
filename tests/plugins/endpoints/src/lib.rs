//! A two-endpoint journey for per-endpoint metrics: each task sends `GET BASE/` (fast) and then
//! `GET BASE/delay?ms=20` (20 ms), where `BASE` is `TARGET_URL` (default `http://127.0.0.1:8080`).
//! Neither names its request, so the host's default names apply: `GET /` and `GET /delay`.

use std::sync::OnceLock;

use loadhost_sdk::{Doer, Task, TaskResult, config::env_or, failed, http, retryable};

struct Endpoints;

fn base() -> &'static str {
    static BASE: OnceLock<String> = OnceLock::new();
    BASE.get_or_init(|| env_or("TARGET_URL", "http://127.0.0.1:8080".to_owned()).trim_end_matches('/').to_owned())
}

fn get(path: &str) -> TaskResult {
    let url = format!("{}{path}", base());
    let response = http::get(&url).without_headers().discard_body().send().map_err(|err| retryable(err.to_string()))?;
    match response.status {
        200 => Ok(()),
        status => Err(failed(format!("GET {url} answered {status}"))),
    }
}

impl Doer for Endpoints {
    fn do_task(_task: Task) -> TaskResult {
        get("/")?;
        get("/delay?ms=20")
    }
}

loadhost_sdk::export!(Endpoints);
