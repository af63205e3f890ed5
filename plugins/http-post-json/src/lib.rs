//! One `POST TARGET_URL` per task (default `http://127.0.0.1:8080/echo`) with a small JSON
//! document naming the task, and a check that the same document comes back (the built-in
//! target's `/echo` returns the body it got). With `AUTH_TOKEN` set, each request also carries
//! `authorization: Bearer AUTH_TOKEN`.

use std::sync::OnceLock;

use loadhost_sdk::{Doer, Task, TaskResult, failed, http, metrics::check, retryable};

struct HttpPostJson;

loadhost_sdk::declare_metrics!("status is 200:check", "echoed the document:check");
loadhost_sdk::declare_options!(
    static OPTIONS =
        "TARGET_URL:url=http://127.0.0.1:8080/echo 'where to POST the document'",
        "AUTH_TOKEN:string 'a bearer token for each request (none: no authorization header)'",
);

fn url() -> &'static str {
    static URL: OnceLock<String> = OnceLock::new();
    URL.get_or_init(|| OPTIONS.get("TARGET_URL"))
}

fn token() -> Option<&'static str> {
    static TOKEN: OnceLock<Option<String>> = OnceLock::new();
    TOKEN.get_or_init(|| OPTIONS.get::<Option<String>>("AUTH_TOKEN").filter(|t| !t.is_empty())).as_deref()
}

impl Doer for HttpPostJson {
    fn do_task(task: Task) -> TaskResult {
        let document = format!(
            r#"{{"scenario":"{}","worker":{},"iteration":{},"attempt":{}}}"#,
            task.scenario, task.worker_id, task.iteration, task.attempt
        );
        let mut request = http::post(url()).json(document.as_str());
        if let Some(token) = token() {
            request = request.header("authorization", format!("Bearer {token}"));
        }
        let response = request.send().map_err(|err| retryable(err.to_string()))?;
        if response.status >= 500 {
            return Err(retryable(format!("POST {} answered {}", url(), response.status)));
        }
        if !check("status is 200", response.status == 200, &[]) {
            return Err(failed(format!("POST {} answered {}", url(), response.status)));
        }
        if !check("echoed the document", response.body == document.as_bytes(), &[]) {
            return Err(failed(format!("POST {} echoed {:?}", url(), response.text())));
        }
        Ok(())
    }
}

loadhost_sdk::export!(HttpPostJson);
