//! The stackful form: `do-task` is an async function in WIT, lifted by wit-bindgen without a
//! callback (its `sync` option for this export), so the task blocks in the guest's `block_on`
//! (a `waitable-set.wait`) on the async import `wait`, keeping its fiber while it waits. `n`
//! carries the work as in the other guests.

wit_bindgen::generate!({ world: "stackful", path: "../../wit", sync: ["export:do-task"] });

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
