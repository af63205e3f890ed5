//! A two-step checkout journey against the built-in target (`loadhost target`), to show and test
//! groups, checks with tags and expected statuses; its twins in Python (`checkout-python`),
//! JavaScript (`checkout-js`) and C (`checkout-c`) behave the same.
//!
//! Each worker expects 200–299 and 410 for its requests (set in `init`). Each task with iteration
//! `i` has the tier `gold` (even `i`) or `silver` (odd `i`), and:
//! - in the group `checkout`: `GET TARGET_URL/` (`/status?code=503` for a silver task with
//!   `i % 4 == 1`: the silver tier fails now and then) and the check `status is 200`, tagged with
//!   the tier;
//! - in the group `pay`, inside it: `GET TARGET_URL/status?code=404`, a request that expects
//!   200–299 and 404 (the basket is gone, as it should be), and the check `basket gone`;
//! - outside any group: `GET TARGET_URL/status?code=410`, which the worker expects, and the check
//!   `coupon expired`.
//!
//! So only the 503s count in `http_req_failed`; `group_duration` has `::checkout` and
//! `::checkout::pay`. A check that does not hold fails the task.
//!
//! ```text
//! loadhost run checkout.wasm -e TARGET_URL=http://127.0.0.1:8080 --allow-host 127.0.0.1:8080 -n 8 \
//!     --threshold 'checks{check:status is 200,tier:gold}:rate==1' \
//!     --threshold 'group_duration{group:::checkout::pay}:p(95)<500' --threshold 'http_req_failed:rate<0.1'
//! ```

use loadhost_sdk::metrics::check;
use loadhost_sdk::{Doer, Lifecycle, Task, TaskResult, config::env_or, failed, group, http};

struct Checkout;

loadhost_sdk::declare_metrics!("status is 200{tier,group}:check", "basket gone{group}:check", "coupon expired:check");

fn target() -> String {
    env_or("TARGET_URL", "http://127.0.0.1:8080".to_owned()).trim_end_matches('/').to_owned()
}

fn get(url: &str) -> Result<u16, loadhost_sdk::TaskError> {
    http::get(url).send().map(|r| r.status).map_err(|err| failed(err.to_string()))
}

impl Lifecycle for Checkout {
    fn init(_worker_id: u32, _setup_data: String) -> Result<(), String> {
        http::set_expected_statuses(&[200..=299, 410..=410]);
        Ok(())
    }
}

impl Doer for Checkout {
    fn do_task(task: Task) -> TaskResult {
        let base = target();
        let i = task.iteration;
        let tier = if i.is_multiple_of(2) { "gold" } else { "silver" };
        let held = group("checkout", || -> Result<bool, loadhost_sdk::TaskError> {
            let url =
                if tier == "silver" && i % 4 == 1 { format!("{base}/status?code=503") } else { format!("{base}/") };
            let ok = check("status is 200", get(&url)? == 200, &[("tier", tier)]);
            let gone = group("pay", || {
                let status = http::get(&format!("{base}/status?code=404"))
                    .expected_statuses(&[200..=299, 404..=404])
                    .send()
                    .map(|r| r.status)
                    .map_err(|err| failed(err.to_string()))?;
                Ok::<bool, loadhost_sdk::TaskError>(check("basket gone", status == 404, &[]))
            })?;
            Ok(ok && gone)
        })?;
        let expired = check("coupon expired", get(&format!("{base}/status?code=410"))? == 410, &[]);
        if held && expired { Ok(()) } else { Err(failed(format!("a check failed on iteration {i} ({tier})"))) }
    }
}

loadhost_sdk::export_with_lifecycle!(Checkout);
