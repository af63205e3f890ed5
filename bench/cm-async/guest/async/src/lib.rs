//! The async shape: `do-task` is an async export (lifted in the callback form by wit-bindgen) that
//! awaits the async host import `wait`; while it waits it holds no stack, only its boxed future in
//! linear memory. `n` carries the work as in the sync guest: its low 32 bits are the milliseconds
//! of each wait, bits 32-61 the number of waits; bit 63 makes the task trap after its waits, bit 62 spin.

wit_bindgen::generate!({ world: "concurrent", path: "../../wit" });

struct Task;

/// Bit 63 of `n` asks the task to trap after its waits, bit 62 to spin forever after them (the
/// bench's fault modes).
const TRAP: u64 = 1 << 63;
const SPIN: u64 = 1 << 62;

fn work(n: u64) -> (u32, u32) {
    (n as u32, ((n & !(TRAP | SPIN)) >> 32) as u32)
}

impl Guest for Task {
    async fn do_task(n: u64) -> u64 {
        let (ms, waits) = work(n);
        for _ in 0..waits {
            wait(ms).await;
        }
        if n & TRAP != 0 {
            core::arch::wasm32::unreachable();
        }
        if n & SPIN != 0 {
            let mut x = 0u64;
            loop {
                x = core::hint::black_box(x.wrapping_add(1));
            }
        }
        n.wrapping_add(u64::from(waits))
    }

    fn do_task_blocking(n: u64) -> u64 {
        let (ms, waits) = work(n);
        wit_bindgen::block_on(async move {
            for _ in 0..waits {
                wait(ms).await;
            }
        });
        n.wrapping_add(u64::from(waits))
    }

    fn noop() {}

    fn memory_bytes() -> u64 {
        core::arch::wasm32::memory_size(0) as u64 * 65_536
    }
}

export!(Task);
