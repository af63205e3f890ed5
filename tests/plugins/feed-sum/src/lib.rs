//! Reads `n` from each task's input row (`{"n": 7}` from JSON lines, or `{"n": "7"}` from CSV) and
//! adds it to the counter `row_sum`, and 1 to `rows`: a feed whose rows each arrive exactly once
//! sums to exactly 0 + 1 + … + (rows − 1).

use loadhost_sdk::metrics::counter;
use loadhost_sdk::{Doer, Task, TaskResult, failed};

struct FeedSum;

loadhost_sdk::declare_metrics!("rows:counter", "row_sum:counter");

fn field_n(row: &[u8]) -> Option<u64> {
    let text = std::str::from_utf8(row).ok()?;
    let after = &text[text.find("\"n\"")? + 3..];
    let digits: String = after.trim_start_matches([':', ' ', '"']).chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

impl Doer for FeedSum {
    fn do_task(task: Task) -> TaskResult {
        let n = field_n(&task.input)
            .ok_or_else(|| failed(format!("no \"n\" in {:?}", String::from_utf8_lossy(&task.input))))?;
        counter("rows", 1, &[]);
        counter("row_sum", n, &[]);
        Ok(())
    }
}

loadhost_sdk::export!(FeedSum);
