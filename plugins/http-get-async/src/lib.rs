//! The async twin of `http-get`: many tasks in flight in one instance, each awaiting its response
//! (`loadhost:plugin/http-async`) rather than holding the instance. One `GET TARGET_URL` per task
//! (default `http://127.0.0.1:8080/`), with a check that the status is 200. A 5xx is a retryable
//! failure, any other non-200 a failure; a denied or broken request is retryable. The host records
//! `http_reqs`, `http_req_duration` and the rest by itself. As in `http-get`, only the status is
//! read (neither headers nor body come into the plugin) and the request is sent bare (no redirect
//! followed, no `Accept-Encoding`; an async request never has a cookie jar anyway).

use std::sync::OnceLock;

use loadhost_sdk::{AsyncDoer, Task, TaskResult, failed, http, metrics::check, retryable};

struct HttpGetAsync;

loadhost_sdk::declare_metrics!("status is 200:check");
loadhost_sdk::declare_options!(static OPTIONS = "TARGET_URL:url=http://127.0.0.1:8080/ 'the page to GET'");

fn url() -> &'static str {
    static URL: OnceLock<String> = OnceLock::new();
    URL.get_or_init(|| OPTIONS.get("TARGET_URL"))
}

impl AsyncDoer for HttpGetAsync {
    async fn do_task(_task: Task) -> TaskResult {
        let response = http::get(url())
            .bare()
            .without_headers()
            .discard_body()
            .send_async()
            .await
            .map_err(|err| retryable(err.to_string()))?;
        if check("status is 200", response.status == 200, &[]) {
            Ok(())
        } else if response.status >= 500 {
            Err(retryable(format!("GET {} answered {}", url(), response.status)))
        } else {
            Err(failed(format!("GET {} answered {}", url(), response.status)))
        }
    }
}

loadhost_sdk::export_async!(HttpGetAsync);
