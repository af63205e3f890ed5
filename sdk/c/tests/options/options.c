/*
 * One option of each type, declared with LOADHOST_OPTION and read typed (sdk/c/tests/run.sh):
 * each task GETs TARGET_URL (required) and records what it read as gauges (`blob_bytes`,
 * `pause_ms`, `ratio`, `verbose` and `label_given` as 0 or 1). With MISUSE=yes it reads the
 * duration PAUSE with loadhost_option_int, which fails the task naming the mistake.
 */
#include "loadhost.h"

LOADHOST_OPTION("TARGET_URL:url! 'the page to GET'");
LOADHOST_OPTION("BLOB_BYTES:int=1024 'bytes in each blob'");
LOADHOST_OPTION("PAUSE:duration=250ms 'the think time, recorded, never slept'");
LOADHOST_OPTION("RATIO:float=0.5");
LOADHOST_OPTION("VERBOSE:bool=false 'say what is read'");
LOADHOST_OPTION("LABEL:string 'a label for the run (none: unlabelled)'");
LOADHOST_OPTION("MISUSE:bool=false 'read PAUSE with the wrong function'");

LOADHOST_METRIC("blob_bytes:gauge");
LOADHOST_METRIC("pause_ms:gauge");
LOADHOST_METRIC("ratio:gauge");
LOADHOST_METRIC("verbose:gauge");
LOADHOST_METRIC("label_given:gauge");

loadhost_result loadhost_do_task(const loadhost_task *task) {
    (void)task;
    if (loadhost_option_bool("MISUSE")) {
        (void)loadhost_option_int("PAUSE");
    }
    loadhost_gauge("blob_bytes", (double)loadhost_option_int("BLOB_BYTES"), LOADHOST_NO_TAGS);
    loadhost_gauge("pause_ms", loadhost_option_ms("PAUSE"), LOADHOST_NO_TAGS);
    loadhost_gauge("ratio", loadhost_option_double("RATIO"), LOADHOST_NO_TAGS);
    loadhost_gauge("verbose", loadhost_option_bool("VERBOSE") ? 1 : 0, LOADHOST_NO_TAGS);
    loadhost_gauge("label_given", loadhost_option("LABEL") ? 1 : 0, LOADHOST_NO_TAGS);
    const char *url = loadhost_option("TARGET_URL");
    loadhost_response response;
    loadhost_result result = LOADHOST_OK;
    if (loadhost_http_get(url, &response) != LOADHOST_HTTP_OK) {
        result = loadhost_retryable("%s", response.error);
    } else if (response.status != 200) {
        result = loadhost_failed("GET %s answered %u", url, response.status);
    }
    loadhost_response_free(&response);
    return result;
}
