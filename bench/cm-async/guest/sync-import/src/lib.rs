//! An async export (`do-task`, callback form) whose task calls the sync import `wait`: a sync
//! lowering from inside an async task, so the task blocks where it calls it. `n` carries the work
//! as in the other guests.

wit_bindgen::generate!({ world: "sync-import", path: "../../wit" });

struct Task;

impl Guest for Task {
    async fn do_task(n: u64) -> u64 {
        let (ms, waits) = (n as u32, (n >> 32) as u32);
        for _ in 0..waits {
            wait(ms);
        }
        n.wrapping_add(u64::from(waits))
    }

    fn noop() {}
}

export!(Task);
