//! Exercises the lifecycle: `setup` returns a token made from the options it got (and fails if
//! they hold the value of any `SECRET_*` variable it was given); `init` keeps it
//! (counter `inits`); each task checks it has it (counter `tasks_with_setup`); `teardown` checks it
//! got the same token (counter `teardowns`). `SETUP_FAIL=1` / `INIT_FAIL=1` / `TEARDOWN_FAIL=1`
//! make that step fail; `SETUP_SLEEP_MS=N` makes setup slow, `INIT_SLEEP_MS=N` each init (a login).

use std::cell::RefCell;

use loadhost_sdk::config::env_or;
use loadhost_sdk::metrics::counter;
use loadhost_sdk::{Doer, Lifecycle, Task, TaskResult, failed};

struct Plugin;

loadhost_sdk::declare_metrics!("inits:counter", "tasks_with_setup:counter", "teardowns:counter");

thread_local! {
    static SETUP_DATA: RefCell<Option<String>> = const { RefCell::new(None) };
}

fn token(options: &str) -> String {
    format!("token:{}", options.len())
}

impl Lifecycle for Plugin {
    fn setup(options: String) -> Result<String, String> {
        std::thread::sleep(std::time::Duration::from_millis(env_or("SETUP_SLEEP_MS", 0)));
        if env_or("SETUP_FAIL", 0) == 1 {
            return Err("setup failed on purpose".into());
        }
        // The options echo the run's configuration: the plugin sees its `SECRET_*` variables, but
        // their values must never appear there, only their names.
        for (key, value) in std::env::vars().filter(|(k, _)| k.starts_with("SECRET_")) {
            if options.contains(&value) {
                return Err(format!("setup's options hold the value of {key}"));
            }
            if !options.contains(&format!("{key}=")) && !options.contains("env-file") {
                return Err(format!("setup's options do not name {key}: {options}"));
            }
        }
        Ok(token(&options))
    }

    fn init(_worker_id: u32, setup_data: String) -> Result<(), String> {
        if env_or("INIT_FAIL", 0) == 1 {
            return Err("init failed on purpose".into());
        }
        std::thread::sleep(std::time::Duration::from_millis(env_or("INIT_SLEEP_MS", 0)));
        counter("inits", 1, &[]);
        SETUP_DATA.with(|data| *data.borrow_mut() = Some(setup_data));
        Ok(())
    }

    fn teardown(setup_data: String) -> Result<(), String> {
        if env_or("TEARDOWN_FAIL", 0) == 1 {
            return Err("teardown failed on purpose".into());
        }
        if !setup_data.starts_with("token:") {
            return Err(format!("teardown got {setup_data:?}"));
        }
        counter("teardowns", 1, &[]);
        Ok(())
    }
}

impl Doer for Plugin {
    fn do_task(_task: Task) -> TaskResult {
        let ok = SETUP_DATA.with(|data| data.borrow().as_deref().is_some_and(|d| d.starts_with("token:")));
        if !ok {
            return Err(failed("the task ran without init's setup data"));
        }
        counter("tasks_with_setup", 1, &[]);
        Ok(())
    }
}

loadhost_sdk::export_with_lifecycle!(Plugin);
