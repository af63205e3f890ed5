/*
 * Exercises the whole C SDK surface for sdk/c/tests/run.sh: lifecycle, metrics with tags, HTTP
 * POST with headers, responses without their headers or body, the data feed, settings, and each
 * kind of task error. Every property it
 * checks is a named check, so the run's summary says which one broke.
 *
 * Settings (`-e KEY=VALUE`): TARGET_URL (the built-in target's root), ABORT_AT (abort the run at
 * that iteration), SETUP_FAIL (refuse setup), PORT_OFFSET (an integer, to test loadhost_env_int),
 * FLAG (a boolean, to test loadhost_env_bool), BAD_METRIC (record a NaN trend, which the SDK
 * refuses: the task fails naming the call).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "loadhost.h"

#define SETUP_DATA "token-42"

/* What init received; one per worker (instance). */
static char *setup_data_seen;

loadhost_result loadhost_setup(const char *options, char **setup_data) {
    if (loadhost_env("SETUP_FAIL", NULL)) {
        return loadhost_failed("setup refused: SETUP_FAIL is set");
    }
    if (options[0] != '{') {
        return loadhost_failed("setup options are not a JSON object: %.40s", options);
    }
    *setup_data = loadhost_format("%s", SETUP_DATA);
    return LOADHOST_OK;
}

loadhost_result loadhost_init(uint32_t worker_id, const char *setup_data) {
    (void)worker_id;
    setup_data_seen = loadhost_format("%s", setup_data);
    return LOADHOST_OK;
}

loadhost_result loadhost_teardown(const char *setup_data) {
    if (strcmp(setup_data, SETUP_DATA) != 0) {
        return loadhost_failed("teardown got \"%s\", not \"%s\"", setup_data, SETUP_DATA);
    }
    return LOADHOST_OK;
}

loadhost_result loadhost_do_task(const loadhost_task *task) {
    long long abort_at = loadhost_env_int("ABORT_AT", -1);
    if (abort_at >= 0 && task->iteration == (uint64_t)abort_at) {
        return loadhost_abort("abort requested at iteration %llu", (unsigned long long)task->iteration);
    }
    /* A bad value aborts the run even though the task goes on with the fallback (run.sh checks). */
    long long offset = loadhost_env_int("PORT_OFFSET", 0);
    if (loadhost_env("BAD_METRIC", NULL)) {
        loadhost_trend("c_nan", NAN, LOADHOST_NO_TAGS);
    }

    const loadhost_tag scenario_tag[] = {{"scenario", task->scenario}};
    loadhost_counter("c_tasks", 1, scenario_tag, 1);
    loadhost_gauge("c_worker", (double)task->worker_id, LOADHOST_NO_TAGS);
    loadhost_trend("c_input_len", (double)task->input_len, LOADHOST_TAGS({"kind", "feed"}, {"lang", "c"}));

    loadhost_check("scenario is a C string", strlen(task->scenario) == task->scenario_len, LOADHOST_NO_TAGS);
    loadhost_check("input is a C string", strlen((const char *)task->input) == task->input_len, LOADHOST_NO_TAGS);
    loadhost_check("init saw the setup data", setup_data_seen && strcmp(setup_data_seen, SETUP_DATA) == 0,
                   LOADHOST_NO_TAGS);
    loadhost_check("env int parsed", offset == 0, LOADHOST_NO_TAGS);
    loadhost_check("env bool parsed", loadhost_env_bool("FLAG", false) == (loadhost_env("FLAG", NULL) != NULL),
                   LOADHOST_NO_TAGS);

    /* POST the task's input (or a fixed body) to /echo: the target answers with the same body and
     * content type. */
    char url[512];
    snprintf(url, sizeof url, "%secho", loadhost_env("TARGET_URL", "http://127.0.0.1:8080/"));
    const char *body = task->input_len ? (const char *)task->input : "{\"hello\": \"c\"}";
    loadhost_response response;
    loadhost_http_status status;
    if (loadhost_http_post(url, "application/json", body, strlen(body), &response) != LOADHOST_HTTP_OK) {
        loadhost_result result = loadhost_retryable("%s", response.error);
        loadhost_response_free(&response);
        return result;
    }
    const char *content_type = loadhost_response_header(&response, "Content-Type");
    loadhost_check("echo status is 200", response.status == 200, LOADHOST_NO_TAGS);
    loadhost_check("echo body matches", response.body_len == strlen(body) &&
                                            memcmp(response.body, body, response.body_len) == 0 &&
                                            response.body[response.body_len] == '\0',
                   LOADHOST_NO_TAGS);
    loadhost_check("echo content type", content_type && strcmp(content_type, "application/json") == 0,
                   LOADHOST_NO_TAGS);
    loadhost_trend("c_echo_ms", response.elapsed_ms, LOADHOST_NO_TAGS);
    loadhost_response_free(&response);

    /* The same POST leaving out the body, the headers, then both: the host reads the whole
     * response either way and hands back only the parts asked for. */
    const loadhost_header json_type[] = {{"content-type", "application/json"}};
    loadhost_request echo = {.method = "POST", .url = url, .headers = json_type, .header_count = 1,
                             .body = body, .body_len = strlen(body), .discard_body = true};
    status = loadhost_http_send(&echo, &response);
    content_type = loadhost_response_header(&response, "content-type");
    loadhost_check("discard_body: headers without body",
                   status == LOADHOST_HTTP_OK && response.status == 200 && response.body_len == 0 &&
                       response.body[0] == '\0' && content_type &&
                       strcmp(content_type, "application/json") == 0,
                   LOADHOST_NO_TAGS);
    loadhost_response_free(&response);
    echo.discard_body = false;
    echo.discard_headers = true;
    status = loadhost_http_send(&echo, &response);
    loadhost_check("discard_headers: body without headers",
                   status == LOADHOST_HTTP_OK && response.status == 200 && response.raw.headers.len == 0 &&
                       loadhost_response_header(&response, "content-type") == NULL &&
                       response.body_len == strlen(body) && memcmp(response.body, body, response.body_len) == 0,
                   LOADHOST_NO_TAGS);
    loadhost_response_free(&response);
    echo.discard_body = true;
    status = loadhost_http_send(&echo, &response);
    loadhost_check("discard both: the status alone",
                   status == LOADHOST_HTTP_OK && response.status == 200 && response.raw.headers.len == 0 &&
                       response.body_len == 0,
                   LOADHOST_NO_TAGS);
    loadhost_response_free(&response);

    /* A custom request: PUT with a header and a timeout, answered 404 by the target. */
    const loadhost_header headers[] = {{"x-plugin", "surface"}};
    snprintf(url, sizeof url, "%snowhere", loadhost_env("TARGET_URL", "http://127.0.0.1:8080/"));
    const loadhost_request request = {
        .method = "PUT", .url = url, .headers = headers, .header_count = 1, .timeout_ms = 5000};
    status = loadhost_http_send(&request, &response);
    loadhost_check("custom request answered 404", status == LOADHOST_HTTP_OK && response.status == 404,
                   LOADHOST_NO_TAGS);
    loadhost_response_free(&response);

    /* A request the host must deny (no --allow-host for it). */
    status = loadhost_http_get("http://127.0.0.2:9/", &response);
    loadhost_check("unlisted host denied", status == LOADHOST_HTTP_DENIED && strstr(response.error, "denied"),
                   LOADHOST_NO_TAGS);
    loadhost_response_free(&response);
    return LOADHOST_OK;
}
