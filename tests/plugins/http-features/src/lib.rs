//! Exercises the host's HTTP options through the Rust SDK, by `MODE` (tests/e2e/http_features.rs):
//!
//! - `get` (the default): one `GET TARGET_URL` (`REDIRECTS` sets the limit); checks `status is 200`
//!   and, with `EXPECT_FINAL`, `final url as expected`; counter `redirects_followed`.
//! - `cookies`: `GET TARGET_URL/cookies`, then `GET TARGET_URL/cookies/set?w=WORKER`; counters
//!   `cookie_none` (nothing sent: the worker's first task), `cookie_own` (its own cookie came back)
//!   and `cookie_foreign` (anything else); check `jar has own cookie`. With `TRAP_AT=K`, task K
//!   panics after setting its cookie (its instance is replaced).
//! - `gzip`: `GET TARGET_URL` (a `/gzip`); checks `decoded` (the body is as long as the target's
//!   `x-decoded-length` and is its text) and `no content-encoding`.
//! - `post`: `POST TARGET_URL` with the body `payload` (a redirect to `/echo`); check `body kept`
//!   (the echo is `payload`).
//!
//! Any request error fails the task with the error's text.

use loadhost_sdk::metrics::{check, counter};
use loadhost_sdk::{Doer, Task, TaskResult, config::env_or, cookies, failed, http};

struct HttpFeatures;

loadhost_sdk::declare_metrics!(
    "status is 200:check",
    "final url as expected:check",
    "redirects_followed:counter",
    "cookie_none:counter",
    "cookie_own:counter",
    "cookie_foreign:counter",
    "jar has own cookie:check",
    "decoded:check",
    "no content-encoding:check",
    "body kept:check",
);

fn get(url: &str) -> Result<http::Response, loadhost_sdk::TaskError> {
    let mut request = http::get(url);
    if let Some(n) = std::env::var("REDIRECTS").ok().and_then(|n| n.parse().ok()) {
        request = request.redirects(n);
    }
    request.send().map_err(|err| failed(err.to_string()))
}

fn plain(url: &str) -> TaskResult {
    let response = get(url)?;
    counter("redirects_followed", u64::from(response.redirects()), &[]);
    if let Ok(expected) = std::env::var("EXPECT_FINAL") {
        check("final url as expected", response.final_url() == expected, &[]);
    }
    if check("status is 200", response.status == 200, &[]) {
        Ok(())
    } else {
        Err(failed(format!("GET {url} answered {}", response.status)))
    }
}

fn cookie_round(base: &str, task: &Task) -> TaskResult {
    let worker = task.worker_id;
    let own = format!("w={worker}");
    let sent = get(&format!("{base}/cookies"))?.text();
    let seen = match sent.as_str() {
        "" => "cookie_none",
        s if s == own => "cookie_own",
        _ => "cookie_foreign",
    };
    counter(seen, 1, &[]);
    get(&format!("{base}/cookies/set?w={worker}"))?;
    let jar = cookies::get(&format!("{base}/")).map_err(|err| failed(err.to_string()))?;
    check("jar has own cookie", jar == [("w".to_owned(), worker.to_string())], &[]);
    if std::env::var("TRAP_AT").ok().and_then(|k| k.parse().ok()) == Some(task.iteration) {
        panic!("a trap on purpose, after setting the cookie");
    }
    Ok(())
}

fn gzip(url: &str) -> TaskResult {
    let response = get(url)?;
    let expected = response.header("x-decoded-length").and_then(|v| std::str::from_utf8(v).ok()?.parse().ok());
    let decoded = expected == Some(response.body.len()) && response.body.starts_with(b"loadhost sends");
    check("decoded", decoded, &[]);
    check("no content-encoding", response.header("content-encoding").is_none(), &[]);
    Ok(())
}

impl Doer for HttpFeatures {
    fn do_task(task: Task) -> TaskResult {
        let url = env_or("TARGET_URL", "http://127.0.0.1:8080/".to_owned());
        match env_or("MODE", "get".to_owned()).as_str() {
            "cookies" => cookie_round(url.trim_end_matches('/'), &task),
            "gzip" => gzip(&url),
            "post" => {
                let response = http::post(&url).body("payload").send().map_err(|err| failed(err.to_string()))?;
                check("body kept", response.text() == "payload", &[]);
                Ok(())
            }
            _ => plain(&url),
        }
    }
}

loadhost_sdk::export!(HttpFeatures);
