/*
 * __NAME__: a loadhost workload plugin in C.
 *
 * Each task is one `GET $TARGET_URL` (default http://127.0.0.1:8080/) with a check that the status
 * is 200. A 5xx is a retryable failure, any other non-200 a failure, and a request that got no
 * response is retryable. The host records http_reqs, http_req_duration and the rest by itself.
 * See lib/loadhost.h for the whole SDK: metrics, HTTP, settings and the optional lifecycle.
 */
#include "loadhost.h"

/* The metrics it records, for `loadhost inspect` and for thresholds without `--metric`. */
LOADHOST_METRIC("status is 200:check");

/* The settings it reads, for `loadhost inspect` and for `loadhost run`'s checks of -e. */
LOADHOST_OPTION("TARGET_URL:url=http://127.0.0.1:8080/ 'the page to GET'");

loadhost_result loadhost_do_task(const loadhost_task *task) {
    (void)task;
    /* Settings come from `loadhost run -e KEY=VALUE`; read once per worker (instance). */
    static const char *url;
    if (!url) {
        url = loadhost_option("TARGET_URL");
    }

    loadhost_response response;
    loadhost_result result = LOADHOST_OK;
    if (loadhost_http_get(url, &response) != LOADHOST_HTTP_OK) {
        result = loadhost_retryable("%s", response.error);
    } else if (!loadhost_check("status is 200", response.status == 200, LOADHOST_NO_TAGS)) {
        result = response.status >= 500 ? loadhost_retryable("GET %s answered %u", url, response.status)
                                         : loadhost_failed("GET %s answered %u", url, response.status);
    }
    loadhost_response_free(&response);
    return result;
}
