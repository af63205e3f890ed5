//! The compile cache: the second run of a plugin does not compile it again.

use crate::common::{Loadhost, assert_ok, plugin};

#[test]
fn the_second_run_loads_the_compiled_plugin_from_the_cache() {
    let cache = tempfile::tempdir().unwrap();
    let once = || Loadhost::new().env("LOADHOST_CACHE_DIR", cache.path()).arg_run(&plugin("noop"), &[]).run();
    let first = once();
    assert_ok(&first);
    assert!(first.stderr.contains("noop.wasm compiled in"), "{}", first.stderr);
    let entries: Vec<_> = std::fs::read_dir(cache.path().join("compiled")).unwrap().collect();
    assert_eq!(entries.len(), 1, "one artifact per plugin");
    let second = once();
    assert_ok(&second);
    assert!(second.stderr.contains("noop.wasm from the compile cache in"), "{}", second.stderr);
    assert_eq!(first.summary()["plugin"]["sha256"], second.summary()["plugin"]["sha256"]);
}
