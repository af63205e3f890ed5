//! `do-task` is an async function in WIT, lifted with the sync ABI (wit-bindgen's `sync` option
//! for this export: `(canon lift (core func $do-task))`, no `async`, no callback; wit-bindgen 0.63
//! has no stackful export). Its type is async, so it may block: the task blocks in the guest's
//! `block_on` (a `waitable-set.wait`) on the async import `wait`, keeping its fiber while it
//! waits. `n` carries the work as in the other guests.

wit_bindgen::generate!({ world: "sync-lift", path: "../../wit", sync: ["export:do-task"] });

struct Task;

impl Guest for Task {
    fn do_task(n: u64) -> u64 {
        let (ms, waits) = (n as u32, (n >> 32) as u32);
        wit_bindgen::block_on(async move {
            for _ in 0..waits {
                wait(ms).await;
            }
        });
        n.wrapping_add(u64::from(waits))
    }

    fn noop() {}
}

export!(Task);
