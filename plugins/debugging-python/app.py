"""What loadhost shows when a plugin goes wrong: the Python twin of `plugins/debugging` (Rust),
for the host's output and errors-table tests; `debugging-js` and `debugging-c` behave the same.

Each task with iteration `i` prints `debug: starting iteration {i}` to stdout and
`note: worker {worker_id} on iteration {i}` to stderr, and records the trend `journey_ms`
(`10 * (i % 10)`) and the counter `orders` tagged `tier` (`bulk` when `i % 3 == 0`, else `retail`),
both declared; then: on iteration 3 it indexes an empty list (an IndexError, so the task fails
with the exception's text); on `i % 5 == 1` it fails with `upstream said 503 for order {i}`; on
`i % 5 == 2` with `checkout timed out after {i} ms`; otherwise it passes.

Settings: `PRINT_BYTES=N` also prints a line of N `x` to stdout per task (default 0);
`DELAY_MS=N` waits N ms before the outcome (default 0); `MODE=bad-metric` records a trend of
"6.4ms", which the SDK refuses with a TypeError naming the call.
"""

import sys
import time

from loadhost import Failed, Task, counter, declare_metrics, declare_options, env, trend

declare_metrics("journey_ms:trend", "orders{tier}:counter")
declare_options(
    'PRINT_BYTES:int=0 "print a line of this many bytes in each task"',
    'MODE:string "bad-metric: record a trend that is not a number in each task"',
    'DELAY_MS:int=0 "wait this many milliseconds in each task"',
)


def do_task(task: Task) -> None:
    """One task: print, then pass or fail by the iteration."""
    i = task.iteration
    print(f"debug: starting iteration {i}")
    print(f"note: worker {task.worker_id} on iteration {i}", file=sys.stderr)
    size = env("PRINT_BYTES")
    if size > 0:
        print("x" * size)
    trend("journey_ms", 10 * (i % 10))
    counter("orders", 1, {"tier": "bulk" if i % 3 == 0 else "retail"})
    if env("MODE") == "bad-metric":
        trend("t", "6.4ms")  # the bad metric
    delay = env("DELAY_MS")
    if delay > 0:
        time.sleep(delay / 1000)
    if i == 3:
        orders = []
        print(orders[i])  # the bug
    if i % 5 == 1:
        raise Failed(f"upstream said 503 for order {i}")
    if i % 5 == 2:
        raise Failed(f"checkout timed out after {i} ms")
