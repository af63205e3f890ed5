//! The compile cache: the second run of a plugin does not compile it again.

use crate::common::{Example, Loadhost, assert_ok, plugin};

#[test]
fn the_second_run_loads_the_compiled_plugin_from_the_cache() {
    let cache = tempfile::tempdir().unwrap();
    let once = || Loadhost::new().env("LOADHOST_CACHE_DIR", cache.path()).arg_run(&plugin(Example::Noop), &[]).run();
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
    for example in [Example::Noop, Example::Sleep] {
        assert_ok(&cmd(&["run", &plugin(example).display().to_string()]));
    }
    let ls = cmd(&["cache", "ls"]);
    assert_ok(&ls);
    assert!(ls.stdout.contains("(2 entries, "), "{}", ls.stdout);
    for example in [Example::Noop, Example::Sleep] {
        let row = ls.stdout.lines().find(|l| l.contains(&plugin(example).display().to_string()));
        let row = row.unwrap_or_else(|| panic!("a row names {example}'s path: {}", ls.stdout));
        assert!(row.contains(" KiB") || row.contains(" MiB"), "with its size: {row}");
        assert!(row.contains("s ago") || row.contains("just now"), "and its last use: {row}");
    }
    let clear = cmd(&["cache", "clear"]);
    assert!(clear.stdout.contains("deleted 2 compiled plugins"), "{}", clear.stdout);
    assert_eq!(std::fs::read_dir(cache.path().join("compiled")).unwrap().count(), 0);
    assert!(cmd(&["cache", "ls"]).stdout.contains("(0 entries"));
}

/// Bytes each plugin's entry takes (artifact and sidecars), measured in a cache of its own.
fn entry_sizes(examples: &[Example]) -> Vec<u64> {
    let scratch = tempfile::tempdir().unwrap();
    examples
        .iter()
        .map(|&example| {
            let before = folder_size(&scratch.path().join("compiled"));
            let run = Loadhost::new()
                .env("LOADHOST_CACHE_DIR", scratch.path())
                .arg_run(&plugin(example), &["-n", "1", "--allow-failures"])
                .run();
            assert_ok(&run);
            folder_size(&scratch.path().join("compiled")) - before
        })
        .collect()
}

fn folder_size(dir: &std::path::Path) -> u64 {
    std::fs::read_dir(dir).map_or(0, |d| d.flatten().map(|f| f.metadata().unwrap().len()).sum())
}

#[test]
fn past_the_cap_the_least_recently_used_entry_is_evicted_and_prune_empties_the_cache() {
    let [noop, sleep, flaky] = entry_sizes(&[Example::Noop, Example::Sleep, Example::Flaky])[..] else {
        unreachable!()
    };
    // Room for noop and flaky, not for sleep as well.
    let cap = noop + flaky + sleep / 2;
    let cache = tempfile::tempdir().unwrap();
    let cmd = |args: &[&str]| Loadhost::new().env("LOADHOST_CACHE_DIR", cache.path()).args(args).run();
    let run = |example: Example| {
        let path = plugin(example).display().to_string();
        let run = cmd(&["run", &path, "-n", "1", "--allow-failures", "--cache-max", &format!("{cap}B")]);
        assert_ok(&run);
        run
    };
    assert!(!run(Example::Noop).stderr.contains("evicted"));
    assert!(!run(Example::Sleep).stderr.contains("evicted"));
    // noop is used again, so sleep is now the least recently used.
    assert!(run(Example::Noop).stderr.contains("from the compile cache"));
    let third = run(Example::Flaky);
    let sleep_path = plugin(Example::Sleep).display().to_string();
    assert!(third.stderr.contains("evicted 1 least recently used"), "{}", third.stderr);
    assert!(third.stderr.contains(&sleep_path), "the line names what went: {}", third.stderr);
    let ls = cmd(&["cache", "ls"]);
    assert!(ls.stdout.contains("(2 entries, "), "{}", ls.stdout);
    assert!(!ls.stdout.contains(&sleep_path), "{}", ls.stdout);
    for example in [Example::Noop, Example::Flaky] {
        assert!(ls.stdout.contains(&plugin(example).display().to_string()), "{example} stays: {}", ls.stdout);
    }
    assert_eq!(folder_size(&cache.path().join("compiled")), noop + flaky);
    let prune = cmd(&["cache", "prune", "--max", "0"]);
    assert_ok(&prune);
    assert!(prune.stdout.contains("deleted 2 compiled plugins"), "{}", prune.stdout);
    assert_eq!(std::fs::read_dir(cache.path().join("compiled")).unwrap().count(), 0, "nothing left behind");
}

#[test]
fn prune_by_age_keeps_what_was_used_recently_and_a_zero_cap_turns_the_cache_off() {
    let cache = tempfile::tempdir().unwrap();
    let cmd = |args: &[&str]| Loadhost::new().env("LOADHOST_CACHE_DIR", cache.path()).args(args).run();
    let noop = plugin(Example::Noop).display().to_string();
    assert_ok(&cmd(&["run", &noop, "-n", "1"]));
    let prune = cmd(&["cache", "prune", "--older-than", "1h"]);
    assert!(prune.stdout.contains("deleted 0 compiled plugins"), "{}", prune.stdout);
    let off = cmd(&["run", &noop, "-n", "1", "--cache-max", "0"]);
    assert_ok(&off);
    assert!(off.stderr.contains("compiled (cache off)"), "{}", off.stderr);
    let bad = cmd(&["cache", "prune", "--max", "lots"]);
    assert_eq!(bad.code, 2, "{}", bad.stderr);
}

#[test]
fn listing_into_a_reader_that_has_gone_away_is_a_clean_exit() {
    // `loadhost cache ls | head -1` and `loadhost inspect … | head -3`: the pipe closes early.
    let cache = tempfile::tempdir().unwrap();
    let cmd = || Loadhost::new().env("LOADHOST_CACHE_DIR", cache.path());
    assert_ok(&cmd().arg_run(&plugin(Example::Noop), &[]).run());
    for args in [
        vec!["cache".to_owned(), "ls".to_owned()],
        vec!["inspect".to_owned(), plugin(Example::Noop).display().to_string()],
    ] {
        let (code, stderr) = cmd().args(&args).run_with_stdout_closed();
        assert_eq!(code, 0, "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
    }
}
