/*
 * What loadhost shows when a plugin goes wrong: the C twin of `plugins/debugging` (Rust), with
 * `debugging-python` and `debugging-js`, for the host's output and errors-table tests.
 *
 * Each task with iteration `i` prints `debug: starting iteration {i}` to stdout and
 * `note: worker {worker_id} on iteration {i}` to stderr, and records the trend `journey_ms`
 * (`10 * (i % 10)`) and the counter `orders` tagged `tier` (`bulk` when `i % 3 == 0`, else
 * `retail`), both declared; then: on iteration 3 it divides by zero (the task traps, and the trap
 * names the function, average_basket); on `i % 5 == 1` it fails with `upstream said 503 for order
 * {i}`; on `i % 5 == 2` with `checkout timed out after {i} ms`; otherwise it passes.
 *
 * Settings: `PRINT_BYTES=N` also prints a line of N `x` to stdout per task (default 0);
 * `DELAY_MS=N` waits N ms before the outcome (default 0); `MODE=bad-metric` records a trend of
 * NaN, which the SDK refuses, failing the task with a message naming the call.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "loadhost.h"

LOADHOST_METRIC("journey_ms:trend");
LOADHOST_METRIC("orders{tier}:counter");
LOADHOST_OPTION("PRINT_BYTES:int=0 'print a line of this many bytes in each task'");
LOADHOST_OPTION("MODE:string 'bad-metric: record a trend that is not a number in each task'");
LOADHOST_OPTION("DELAY_MS:int=0 'wait this many milliseconds in each task'");

/* The mean basket size; wasm traps on an integer division by zero. */
__attribute__((noinline)) static int average_basket(int items, int baskets) {
    return items / baskets;
}

loadhost_result loadhost_do_task(const loadhost_task *task) {
    unsigned long long i = (unsigned long long)task->iteration;
    printf("debug: starting iteration %llu\n", i);
    fprintf(stderr, "note: worker %u on iteration %llu\n", (unsigned)task->worker_id, i);
    long long size = loadhost_option_int("PRINT_BYTES");
    for (long long n = 0; n < size; n++) {
        putchar('x');
    }
    if (size > 0) {
        putchar('\n');
    }
    loadhost_trend("journey_ms", (double)(10 * (i % 10)), LOADHOST_NO_TAGS);
    loadhost_counter("orders", 1, LOADHOST_TAGS({"tier", i % 3 == 0 ? "bulk" : "retail"}));
    const char *mode = loadhost_option("MODE");
    if (mode && strcmp(mode, "bad-metric") == 0) {
        loadhost_trend("t", NAN, LOADHOST_NO_TAGS); /* the bad metric */
    }
    long long delay = loadhost_option_int("DELAY_MS");
    if (delay > 0) {
        struct timespec pause = {.tv_sec = delay / 1000, .tv_nsec = (delay % 1000) * 1000000L};
        nanosleep(&pause, NULL);
    }
    if (i == 3) {
        /* The bug: no baskets on this order. */
        volatile int baskets = 0;
        return average_basket(12, baskets) > 0 ? LOADHOST_OK : loadhost_failed("no items");
    }
    if (i % 5 == 1) {
        return loadhost_failed("upstream said 503 for order %llu", i);
    }
    if (i % 5 == 2) {
        return loadhost_failed("checkout timed out after %llu ms", i);
    }
    return LOADHOST_OK;
}
