//! Metrics recorded by a plugin through the `loadhost:plugin/metrics` import.

use serde_json::json;

use crate::common::{Loadhost, assert_ok, fixture};

#[test]
fn counters_gauges_trends_and_checks_are_aggregated_per_name_and_tags() {
    let run = Loadhost::run_plugin(&fixture("metrics"), &["-n", "100", "-w", "1"]);
    assert_ok(&run);
    let s = run.summary();
    let m = &s["metrics"];
    assert_eq!(m["tasks"], json!({ "count": 100 }));
    assert_eq!(m["tasks{parity:even}"], json!({ "count": 50 }));
    assert_eq!(m["tasks{parity:odd}"], json!({ "count": 50 }));
    assert_eq!(m["last_iteration"], json!({ "value": 99.0 }), "one worker: the latest value is the last task's");
    assert_eq!(m["size"]["count"], json!(100));
    assert_eq!(m["size"]["min"], json!(0.0));
    assert_eq!(m["size"]["max"], json!(99.0));
    assert!((m["size"]["mean"].as_f64().unwrap() - 49.5).abs() < 1e-9);
    assert_eq!(m["even"], json!({ "rate": 0.5, "passes": 50, "fails": 50 }));
    assert_eq!(s["checks"]["even"], json!({ "passes": 50, "fails": 50 }));
    assert!(run.stdout.contains("✗ even: 50.00% (50 passed, 50 failed)"), "{}", run.stdout);
}
