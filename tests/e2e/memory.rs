//! The crew within memory (issue 27): the open model's default ceiling follows what the memory
//! left to loadhost holds of the plugin's workers, measured as they start and as they work, and the
//! terminal names the figures. Run for real inside a memory cgroup the test makes (v1 or v2); on a
//! machine where it cannot make one, the test says so and checks nothing.

use crate::cgroup::Cgroup;
use crate::common::{Loadhost, task_count};
use crate::target_process::TargetProcess;

#[test]
fn the_crews_default_ceiling_follows_the_memory_its_cgroup_leaves() {
    let python = crate::common::root().join("target/plugins/http-get-python.wasm");
    if !python.is_file() {
        eprintln!("skipped: http-get-python was not built (its toolchain is absent)");
        return;
    }
    let Some(cgroup) = Cgroup::memory(400 << 20) else {
        eprintln!("skipped: no memory cgroup can be made here (not root, or no memory controller)");
        return;
    };
    let target = TargetProcess::start(&[]);
    let url = format!("TARGET_URL={}/delay?ms=2000", target.url);
    // 50 journeys/s of 2 s each would need 100 workers of several MiB: more than 400 MiB holds.
    let procs = cgroup.procs();
    let args = ["-e", &url, "--allow-host", &target.authority, "-r", "50", "-d", "4s", "--graceful-stop", "3s"];
    let run = Loadhost::new()
        .args(["run".as_ref(), python.as_os_str()])
        .args(args)
        .args(["--summary-json", "summary.json"])
        .in_cgroup(&procs)
        .run();
    let said = run.stderr.lines().find(|l| l.contains("the crew grows to at most")).unwrap_or_else(|| {
        panic!("the terminal says the ceiling memory gives: {}", run.stderr);
    });
    assert!(said.contains("(its cgroup's memory limit)") && said.contains("(--max-workers overrides)"), "{said}");
    let ceiling: u64 =
        said.split("at most ").nth(1).and_then(|r| r.split(' ').next()).and_then(|n| n.parse().ok()).unwrap();
    assert!(ceiling < 100, "a lowered ceiling: {said}");
    let s = run.summary();
    let peak = s["workers"]["peak"].as_u64().unwrap();
    assert!(peak < 100, "the crew stayed within memory: peak {peak} ({said})");
    assert!(
        task_count(&s, "dropped") > 0,
        "the load it could not carry is dropped, not run out of memory: {}",
        s["tasks"]
    );
}
