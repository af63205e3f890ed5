//! Today's shape: a sync export that calls a sync host import `wait` (the host awaits a tokio
//! sleep on the instance's fiber). `n` carries the work: its low 32 bits are the milliseconds of
//! each wait, its high 32 bits the number of waits (0: return at once).

wit_bindgen::generate!({ world: "today", path: "../../wit" });

struct Task;

impl Guest for Task {
    fn do_task(n: u64) -> u64 {
        let (ms, waits) = (n as u32, (n >> 32) as u32);
        for _ in 0..waits {
            wait(ms);
        }
        n.wrapping_add(u64::from(waits))
    }

    fn noop() {}
}

export!(Task);
