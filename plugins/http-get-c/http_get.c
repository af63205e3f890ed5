/*
 * One `GET TARGET_URL` per task (default http://127.0.0.1:8080/), with a check that the status is
 * 200. A 5xx is a retryable failure, any other non-200 a failure; a denied or broken request is
 * retryable. The host records http_reqs, http_req_duration and the rest by itself. Only the status
 * is read, so neither the headers nor the body are brought into the plugin.
 * The C twin of plugins/http-get (Rust).
 */
#include "loadhost.h"

LOADHOST_METRIC("status is 200:check");
LOADHOST_OPTION("TARGET_URL:url=http://127.0.0.1:8080/ 'the page to GET'");

loadhost_result loadhost_do_task(const loadhost_task *task) {
    (void)task;
    /* Read once per instance: the environment does not change during a run. */
    static const char *url;
    if (!url) {
        url = loadhost_option("TARGET_URL");
    }

    const loadhost_request request = {.method = "GET", .url = url, .discard_headers = true, .discard_body = true};
    loadhost_response response;
    loadhost_result result = LOADHOST_OK;
    if (loadhost_http_send(&request, &response) != LOADHOST_HTTP_OK) {
        result = loadhost_retryable("%s", response.error);
    } else if (!loadhost_check("status is 200", response.status == 200, LOADHOST_NO_TAGS)) {
        result = response.status >= 500 ? loadhost_retryable("GET %s answered %u", url, response.status)
                                         : loadhost_failed("GET %s answered %u", url, response.status);
    }
    loadhost_response_free(&response);
    return result;
}
