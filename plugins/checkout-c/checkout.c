/*
 * A two-step checkout journey against the built-in target: the C twin of `plugins/checkout`
 * (Rust), to show and test groups, checks with tags and expected statuses; `checkout-python` and
 * `checkout-js` behave the same.
 *
 * Each worker expects 200-299 and 410 for its requests (set in loadhost_init). Each task with
 * iteration `i` has the tier `gold` (even `i`) or `silver` (odd `i`), and:
 * - in the group `checkout`: `GET TARGET_URL/` (`/status?code=503` for a silver task with
 *   `i % 4 == 1`) and the check `status is 200`, tagged with the tier;
 * - in the group `pay`, inside it: `GET TARGET_URL/status?code=404`, a request that expects
 *   200-299 and 404, and the check `basket gone`;
 * - outside any group: `GET TARGET_URL/status?code=410`, which the worker expects, and the check
 *   `coupon expired`.
 *
 * So only the 503s count in `http_req_failed`. A check that does not hold fails the task.
 */
#include <stdio.h>
#include <string.h>

#include "loadhost.h"

LOADHOST_METRIC("status is 200{tier,group}:check");
LOADHOST_METRIC("basket gone{group}:check");
LOADHOST_METRIC("coupon expired:check");

loadhost_result loadhost_init(uint32_t worker_id, const char *setup_data) {
    (void)worker_id;
    (void)setup_data;
    loadhost_http_set_expected_statuses(LOADHOST_STATUSES({200, 299}, {410, 410}));
    return LOADHOST_OK;
}

/* GET base + path with `options` (NULL: the defaults) into *status; false (the task's error
 * recorded) when no response came. */
static bool get(const char *base, const char *path, const loadhost_http_options *options, uint16_t *status) {
    char url[512];
    snprintf(url, sizeof url, "%s%s", base, path);
    const loadhost_request request = {.method = "GET", .url = url, .options = options};
    loadhost_response response;
    loadhost_http_status sent = loadhost_http_send(&request, &response);
    *status = response.status;
    if (sent != LOADHOST_HTTP_OK) {
        loadhost_failed("%s", response.error);
    }
    loadhost_response_free(&response);
    return sent == LOADHOST_HTTP_OK;
}

loadhost_result loadhost_do_task(const loadhost_task *task) {
    char base[400];
    snprintf(base, sizeof base, "%s", loadhost_env("TARGET_URL", "http://127.0.0.1:8080"));
    size_t len = strlen(base);
    while (len > 0 && base[len - 1] == '/') {
        base[--len] = '\0';
    }
    unsigned long long i = (unsigned long long)task->iteration;
    const char *tier = i % 2 == 0 ? "gold" : "silver";
    uint16_t status;

    loadhost_group_begin("checkout");
    const char *path = strcmp(tier, "silver") == 0 && i % 4 == 1 ? "/status?code=503" : "/";
    if (!get(base, path, NULL, &status)) {
        return LOADHOST_FAILED; /* the SDK ends the open group */
    }
    bool ok = loadhost_check("status is 200", status == 200, LOADHOST_TAGS({"tier", tier}));

    loadhost_group_begin("pay");
    static const loadhost_status_range gone_expected[] = {{200, 299}, {404, 404}};
    loadhost_http_options options = loadhost_http_options_default();
    options.expected_statuses = gone_expected;
    options.expected_status_count = 2;
    if (!get(base, "/status?code=404", &options, &status)) {
        return LOADHOST_FAILED;
    }
    bool gone = loadhost_check("basket gone", status == 404, LOADHOST_NO_TAGS);
    loadhost_group_end();
    loadhost_group_end();

    if (!get(base, "/status?code=410", NULL, &status)) {
        return LOADHOST_FAILED;
    }
    bool expired = loadhost_check("coupon expired", status == 410, LOADHOST_NO_TAGS);
    if (!(ok && gone && expired)) {
        return loadhost_failed("a check failed on iteration %llu (%s)", i, tier);
    }
    return LOADHOST_OK;
}
