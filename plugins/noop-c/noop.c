/*
 * Every task passes at once, so a run measures the host's own cost per task (and the C SDK's).
 * The C twin of plugins/noop (Rust).
 */
#include "loadhost.h"

loadhost_result loadhost_do_task(const loadhost_task *task) {
    (void)task;
    return LOADHOST_OK;
}
