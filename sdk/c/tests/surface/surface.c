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
#include <stdlib.h>
#include <string.h>
#include <time.h>

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

    /* The host's options, by default: 3 redirects followed to a gzip body, which comes back
     * decoded and without its content-encoding. */
    const char *base = loadhost_env("TARGET_URL", "http://127.0.0.1:8080/");
    char final[512];
    snprintf(url, sizeof url, "%sredirect?n=3&to=/gzip%%3Fbytes%%3D500", base);
    snprintf(final, sizeof final, "%sgzip?bytes=500", base);
    status = loadhost_http_get(url, &response);
    loadhost_check("redirects followed, gzip decoded",
                   status == LOADHOST_HTTP_OK && response.status == 200 && response.redirects == 3 &&
                       strcmp(response.final_url, final) == 0 && response.body_len == 500 &&
                       loadhost_response_header(&response, "content-encoding") == NULL,
                   LOADHOST_NO_TAGS);
    loadhost_response_free(&response);

    /* Each option turned off: the redirect itself, the body as it came. */
    loadhost_http_options options = loadhost_http_options_default();
    options.redirects = 0;
    options.decompress = false;
    options.name = "surface-raw";
    const loadhost_request raw_request = {.url = url, .options = &options};
    status = loadhost_http_send(&raw_request, &response);
    bool redirect_kept = status == LOADHOST_HTTP_OK && response.status == 302 && response.redirects == 0 &&
                         strcmp(response.final_url, url) == 0;
    loadhost_response_free(&response);
    const loadhost_request gzip_request = {.url = final, .options = &options};
    status = loadhost_http_send(&gzip_request, &response);
    const char *encoding = loadhost_response_header(&response, "content-encoding");
    loadhost_check("options: no redirect, raw body",
                   redirect_kept && status == LOADHOST_HTTP_OK && response.status == 200 && encoding &&
                       strcmp(encoding, "gzip") == 0 && response.body_len != 500,
                   LOADHOST_NO_TAGS);
    loadhost_response_free(&response);

    /* The worker's cookie jar: kept from a response, sent with the next request, read, set and
     * cleared by the plugin; a request without cookies neither sends nor keeps them. */
    loadhost_cookies_clear();
    snprintf(url, sizeof url, "%scookies/set?c=w", base);
    status = loadhost_http_get(url, &response);
    bool jar_ok = status == LOADHOST_HTTP_OK;
    loadhost_response_free(&response);
    snprintf(url, sizeof url, "%scookies", base);
    status = loadhost_http_get(url, &response);
    jar_ok = jar_ok && status == LOADHOST_HTTP_OK && strcmp((const char *)response.body, "c=w") == 0;
    loadhost_response_free(&response);
    options = loadhost_http_options_default();
    options.cookies = false;
    const loadhost_request no_cookies = {.url = url, .options = &options};
    status = loadhost_http_send(&no_cookies, &response);
    jar_ok = jar_ok && status == LOADHOST_HTTP_OK && response.body_len == 0;
    loadhost_response_free(&response);
    char *cookies = NULL;
    char *error = NULL;
    jar_ok = jar_ok && loadhost_cookies_set(base, "x=1; Path=/", &error) == LOADHOST_HTTP_OK &&
             loadhost_cookies_get(url, &cookies, &error) == LOADHOST_HTTP_OK &&
             (strcmp(cookies, "c=w; x=1") == 0 || strcmp(cookies, "x=1; c=w") == 0);
    free(cookies);
    loadhost_cookies_clear();
    jar_ok = jar_ok && loadhost_cookies_get(url, &cookies, &error) == LOADHOST_HTTP_OK && strcmp(cookies, "") == 0;
    free(cookies);
    jar_ok = jar_ok && error == NULL &&
             loadhost_cookies_get("not a url", &cookies, &error) == LOADHOST_HTTP_INVALID_REQUEST &&
             cookies == NULL && error != NULL;
    free(error);
    loadhost_check("cookie jar: kept, sent, read, set, cleared", jar_ok, LOADHOST_NO_TAGS);

    /* Basic authentication is one more header; the target answers whatever it is. */
    options = loadhost_http_options_default();
    options.auth_user = "ada";
    options.auth_password = "secret";
    const loadhost_request with_auth = {.url = base, .options = &options};
    status = loadhost_http_send(&with_auth, &response);
    loadhost_check("basic auth request answered", status == LOADHOST_HTTP_OK && response.status == 200,
                   LOADHOST_NO_TAGS);
    loadhost_response_free(&response);

    /* Think time on the host's timer: at least what was asked. */
    struct timespec before, after;
    clock_gettime(CLOCK_MONOTONIC, &before);
    loadhost_sleep_ms(20);
    clock_gettime(CLOCK_MONOTONIC, &after);
    double slept_ms = (double)(after.tv_sec - before.tv_sec) * 1e3 + (double)(after.tv_nsec - before.tv_nsec) / 1e6;
    loadhost_check("slept 20 ms", slept_ms >= 20.0, LOADHOST_NO_TAGS);

    /* A request the host must deny (no --allow-host for it). */
    status = loadhost_http_get("http://127.0.0.2:9/", &response);
    loadhost_check("unlisted host denied", status == LOADHOST_HTTP_DENIED && strstr(response.error, "denied"),
                   LOADHOST_NO_TAGS);
    loadhost_response_free(&response);
    return LOADHOST_OK;
}
