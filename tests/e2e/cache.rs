//! The compile cache: the second run of a plugin does not compile it again.

use crate::common::{Loadhost, assert_ok, plugin};

#[test]
fn the_second_run_loads_the_compiled_plugin_from_the_cache() {
    let cache = tempfile::tempdir().unwrap();
    let once = || Loadhost::new().env("LOADHOST_CACHE_DIR", cache.path()).arg_run(&plugin("noop"), &[]).run();
    let first = once();
    assert_ok(&first);
    assert!(first.stderr.contains("noop.wasm compiled in"), "{}", first.stderr);
    let names: Vec<String> = std::fs::read_dir(cache.path().join("compiled"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names.iter().filter(|n| n.ends_with(".cwasm")).count(), 1, "one artifact per plugin: {names:?}");
    assert_eq!(names.iter().filter(|n| n.ends_with(".cwasm.sha256")).count(), 1, "and its digest: {names:?}");
    let second = once();
    assert_ok(&second);
    assert!(second.stderr.contains("noop.wasm from the compile cache in"), "{}", second.stderr);
    assert_eq!(first.summary()["plugin"]["sha256"], second.summary()["plugin"]["sha256"]);
}

#[test]
fn cache_ls_lists_the_compiled_plugins_and_clear_deletes_them() {
    let cache = tempfile::tempdir().unwrap();
    let cmd = |args: &[&str]| Loadhost::new().env("LOADHOST_CACHE_DIR", cache.path()).args(args).run();
    for name in ["noop", "sleep"] {
        assert_ok(&cmd(&["run", &plugin(name).display().to_string()]));
    }
    let ls = cmd(&["cache", "ls"]);
    assert_ok(&ls);
    assert!(ls.stdout.contains("(2 entries"), "{}", ls.stdout);
    assert_eq!(ls.stdout.matches(".cwasm").count(), 2, "{}", ls.stdout);
    let clear = cmd(&["cache", "clear"]);
    assert!(clear.stdout.contains("deleted 2 compiled plugins"), "{}", clear.stdout);
    assert_eq!(std::fs::read_dir(cache.path().join("compiled")).unwrap().count(), 0);
    assert!(cmd(&["cache", "ls"]).stdout.contains("(0 entries"));
}

#[test]
fn listing_into_a_reader_that_has_gone_away_is_a_clean_exit() {
    // `loadhost cache ls | head -1` and `loadhost inspect … | head -3`: the pipe closes early.
    let cache = tempfile::tempdir().unwrap();
    let cmd = || Loadhost::new().env("LOADHOST_CACHE_DIR", cache.path());
    assert_ok(&cmd().arg_run(&plugin("noop"), &[]).run());
    for args in
        [vec!["cache".to_owned(), "ls".to_owned()], vec!["inspect".to_owned(), plugin("noop").display().to_string()]]
    {
        let (code, stderr) = cmd().args(&args).run_with_stdout_closed();
        assert_eq!(code, 0, "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
    }
}
