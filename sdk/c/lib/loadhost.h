/*
 * loadhost.h: write loadhost workload plugins in C.
 *
 * A plugin is a WebAssembly component that exports `loadhost:plugin/doer`. The host decides when
 * and how often tasks run; the plugin only says what one task does, by defining one function:
 *
 *     #include "loadhost.h"
 *
 *     loadhost_result loadhost_do_task(const loadhost_task *task) {
 *         loadhost_counter("greetings", 1, LOADHOST_TAGS({"scenario", task->scenario}));
 *         return LOADHOST_OK;
 *     }
 *
 * Build it with `build.sh PLUGIN_DIR hello.wasm` and run it with
 * `loadhost run hello.wasm -r 100 -d 10s`.
 *
 * Layout:
 * - the task and its result: loadhost_task, loadhost_do_task, loadhost_retryable/failed/abort;
 * - optional lifecycle: loadhost_setup, loadhost_init, loadhost_teardown (no-ops unless defined);
 * - metrics: loadhost_counter, loadhost_gauge, loadhost_trend, loadhost_check, LOADHOST_TAGS, and
 *   LOADHOST_METRIC to declare them; groups (k6's steps): loadhost_group_begin/end, timed as
 *   group_duration; think time: loadhost_sleep_ms;
 * - HTTP: loadhost_http_get, loadhost_http_post, loadhost_http_send (its request may leave the
 *   response headers and body out: discard_headers, discard_body; its options follow redirects,
 *   keep cookies and decode bodies: loadhost_http_options_default), loadhost_response_*, the
 *   statuses requests expect: loadhost_http_set_expected_statuses, LOADHOST_STATUSES, and the
 *   worker's cookie jar: loadhost_cookies_get/set/clear;
 * - settings from `loadhost run -e KEY=VALUE`: loadhost_env, loadhost_env_int, loadhost_env_double,
 *   loadhost_env_bool; and the options the plugin declares with LOADHOST_OPTION (a type, a default
 *   or required, a help), read typed: loadhost_option, loadhost_option_int, loadhost_option_double,
 *   loadhost_option_bool, loadhost_option_ms;
 * - the raw bindings wit-bindgen generated: workload_with_lifecycle.h.
 *
 * Memory: every string and byte list the host hands the plugin (task fields, response body and
 * headers, error messages) is followed by a NUL byte, so it can be used as a C string. It stays
 * valid until the call returns (task fields) or until it is freed (responses). Each worker is its
 * own instance with its own memory and one thread, so globals hold per-worker state without locks.
 */
#ifndef LOADHOST_H
#define LOADHOST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "workload_with_lifecycle.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Tasks ------------------------------------------------------------------------------- */

/* One unit of work as the host hands it to the plugin. */
typedef struct loadhost_task {
    /* Which scenario of the run scheduled it ("default" when there is one); NUL-terminated. */
    const char *scenario;
    /* The length of scenario in bytes. */
    size_t scenario_len;
    /* The worker (instance) running it, stable for the instance's life. */
    uint32_t worker_id;
    /* Sequence number in the run, from 0; a retry keeps its number. */
    uint64_t iteration;
    /* 0 for the first try, n for the n-th retry. */
    uint32_t attempt;
    /* The task's row from the data feed (`--data`), empty without one; NUL-terminated. */
    const uint8_t *input;
    /* The length of input in bytes. */
    size_t input_len;
} loadhost_task;

/* What a task (or a lifecycle step) returns. */
typedef enum loadhost_result {
    /* The task passed. */
    LOADHOST_OK = 0,
    /* A transient failure: the host may try the task again (see `loadhost run --retries`). */
    LOADHOST_RETRYABLE,
    /* The task failed and must not be retried. */
    LOADHOST_FAILED,
    /* Stop the whole run: the host stops releasing tasks and exits with code 4. */
    LOADHOST_ABORT,
} loadhost_result;

/* Run one task. The plugin must define it. */
loadhost_result loadhost_do_task(const loadhost_task *task);

/* Record the printf-style message and return LOADHOST_RETRYABLE: `return loadhost_retryable(...)`. */
loadhost_result loadhost_retryable(const char *format, ...) __attribute__((format(printf, 1, 2)));

/* Record the printf-style message and return LOADHOST_FAILED. */
loadhost_result loadhost_failed(const char *format, ...) __attribute__((format(printf, 1, 2)));

/* Record the printf-style message and return LOADHOST_ABORT. */
loadhost_result loadhost_abort(const char *format, ...) __attribute__((format(printf, 1, 2)));

/* ---- Lifecycle (optional) ---------------------------------------------------------------- */
/*
 * Define any of these to override the SDK's no-op version (they are weak symbols). A result other
 * than LOADHOST_OK is an error whose message is the one given to loadhost_failed() (or the other
 * two). An error from setup, or from init in a worker started before the load, stops the run
 * before any load is sent (exit code 4).
 */

/* Once per run, before any load, in an instance of its own. `options` is the run's configuration
 * as JSON. Set *setup_data to a malloc'd string (the SDK frees it) to hand it to every init and to
 * teardown; leave it NULL for "". */
loadhost_result loadhost_setup(const char *options, char **setup_data);

/* Once per worker, before its first task. */
loadhost_result loadhost_init(uint32_t worker_id, const char *setup_data);

/* Once per run, after the load, in an instance of its own. */
loadhost_result loadhost_teardown(const char *setup_data);

/* ---- Metrics ----------------------------------------------------------------------------- */
/*
 * The host aggregates them per name and tag set. Names and tag keys should be snake_case.
 *
 * Each call checks its arguments: a NULL or empty name, a NULL or empty tag key, a NULL tag value,
 * or a gauge or trend value that is NaN or infinite is a mistake the host could only drop. Such a
 * call records nothing and fails the task (or lifecycle step) when it returns, with a message
 * naming the call: `loadhost_trend("t", nan): value must be a finite number` (a task that returned
 * LOADHOST_ABORT still aborts).
 */

/* One metric tag. */
typedef struct loadhost_tag {
    /* The tag's name. */
    const char *key;
    /* The tag's value. */
    const char *value;
} loadhost_tag;

/* The tag arguments of a metric call: `LOADHOST_TAGS({"method", "GET"}, {"status", "200"})`. */
#define LOADHOST_TAGS(...)                                                                         \
    ((const loadhost_tag[]){__VA_ARGS__}),                                                         \
        (sizeof((const loadhost_tag[]){__VA_ARGS__}) / sizeof(loadhost_tag))

/* The tag arguments of a metric call without tags. */
#define LOADHOST_NO_TAGS NULL, 0

/* Add `delta` to the counter `name`. */
void loadhost_counter(const char *name, uint64_t delta, const loadhost_tag *tags, size_t tag_count);

/* Set the gauge `name` to `value` (the summary keeps the latest value). */
void loadhost_gauge(const char *name, double value, const loadhost_tag *tags, size_t tag_count);

/* Record one value of the trend `name` (the summary shows min, mean, percentiles and max). */
void loadhost_trend(const char *name, double value, const loadhost_tag *tags, size_t tag_count);

/* Record a pass or a fail of the check `name`; returns `ok` so it can be used inline. Inside a
 * group the check also carries the group's path as the tag `group` (unless `tags` names one). A
 * threshold judges one check, or one tagged case of it: `checks{check:status is 200,tier:gold}`. */
bool loadhost_check(const char *name, bool ok, const loadhost_tag *tags, size_t tag_count);

/*
 * Groups (k6's steps): a named block of a task, timed as the trend `group_duration` (ms) tagged
 * `group` with the group's path: `::checkout` for a top-level group, `::checkout::pay` for `pay`
 * begun inside it. The checks made inside carry the path. A threshold such as
 * `group_duration{group:::checkout}:p(95)<500` needs no declaration.
 *
 *     loadhost_group_begin("checkout");
 *     loadhost_check("cart ok", ok, LOADHOST_NO_TAGS);   // tagged group=::checkout
 *     loadhost_group_end();
 *
 * A group still open when the task (or lifecycle step) returns ends then, so an early `return`
 * inside one ends it. A name that is NULL, empty or contains "::", a path longer than 256 bytes,
 * or an end with no group open is a mistake: it records nothing and fails the task when it
 * returns, naming the call.
 */

/* Begin the group `name`, inside the innermost open one. */
void loadhost_group_begin(const char *name);

/* End the innermost open group, recording its time. */
void loadhost_group_end(void);

/* The path of the innermost open group ("::checkout::pay"), or NULL outside any; valid until a
 * group begins or ends. */
const char *loadhost_group_current(void);

/* Sleep `ms` milliseconds: think time in a journey (k6's and Locust's `sleep`), on the host's timer
 * (`loadhost:plugin/pause`) while other workers run. The time is in the task's duration, not in any
 * request's; a task's timeout still ends the task. */
void loadhost_sleep_ms(uint32_t ms);

/*
 * Declare a metric the plugin records, at file scope, one per use:
 *
 *     LOADHOST_METRIC("journey_ms:trend");
 *     LOADHOST_METRIC("orders{tier}:counter");
 *
 * The text is `NAME[{TAG,...}]:KIND`: the `--metric NAME:KIND` syntax with the tag keys the plugin
 * records it with; KIND is trend, counter, gauge or check. `loadhost inspect` lists the declared
 * metrics, and a threshold on one needs no `--metric`. Each declaration is a line of the module's
 * `loadhost:metrics` custom section (written by clang's assembler, so the text is a string literal
 * without '"' or '\'), which `loadhost componentize` keeps inside the component; the host checks
 * it when it loads the plugin.
 */
#define LOADHOST_METRIC(declaration)                                                               \
    __asm__(".section \".custom_section.loadhost:metrics\",\"\",@\n.ascii \"" declaration "\\n\"\n")

/* ---- HTTP -------------------------------------------------------------------------------- */
/*
 * One call sends the whole request and reads the whole response, through the host's
 * `loadhost:plugin/http` import: the host pools connections, enforces `--allow-host` and records
 * http_reqs, http_req_duration and the rest by itself.
 *
 * As a browser or k6 does, the host follows up to 10 redirects, keeps a cookie jar per worker and
 * asks for and decodes gzip, deflate and br bodies (the WIT's `send-opts`); a request's `options`
 * (a loadhost_http_options from loadhost_http_options_default()) changes that. Before `send-opts`
 * existed every request was raw HTTP: a plugin that relied on seeing a 302 or a compressed body now
 * sets `.redirects = 0` or `.decompress = false`.
 */

/* How many redirects a request follows unless told otherwise (k6's `maxRedirects`). */
#define LOADHOST_HTTP_DEFAULT_REDIRECTS 10u

/*
 * What the host does for a request beyond sending it. Start from loadhost_http_options_default()
 * (a zero-initialised struct turns redirects, cookies and decompression off) and point a
 * loadhost_request's `options` at it; a request without options gets the defaults.
 */
typedef struct loadhost_http_options {
    /* Follow at most this many redirects (default 10); 0 hands back the redirect itself. 303, and
     * a POST's 301 or 302, become a GET without a body; 307 and 308 keep the method and body. */
    uint32_t redirects;
    /* Send the worker's cookies that match the URL and keep every `Set-Cookie` (default true). */
    bool cookies;
    /* Ask for `gzip, deflate, br` (unless the request sets `accept-encoding`) and decode the body
     * (default true); false hands the body back as it came. */
    bool decompress;
    /* The endpoint's name in the per-endpoint HTTP metrics (k6's `name` tag), e.g. "login"; NULL
     * (the default): the method and the URL's path with ids folded. */
    const char *name;
    /* HTTP basic authentication: with a user (not NULL), `Authorization: Basic
     * base64(user:password)` is sent (a NULL password is ""). Default NULL: none. */
    const char *auth_user;
    /* The basic-authentication password (used only with auth_user). */
    const char *auth_password;
    /* The statuses this request expects, `expected_status_count` ranges, instead of the
     * worker's: a response with one of them does not count in `http_req_failed`, any other does,
     * each redirect hop too (k6's `responseCallback`). NULL (the default): the worker's, below
     * 400 unless loadhost_http_set_expected_statuses changed them. A range whose `from` is above
     * its `to` makes the request LOADHOST_HTTP_INVALID_REQUEST, unsent.
     *
     *     static const loadhost_status_range gone[] = {{404, 404}};
     *     options.expected_statuses = gone;
     *     options.expected_status_count = 1; */
    const struct loadhost_status_range *expected_statuses;
    /* How many ranges expected_statuses has. */
    size_t expected_status_count;
} loadhost_http_options;

/* The defaults: 10 redirects, cookies on, decompression on, no name, no authentication, the
 * worker's expected statuses. */
loadhost_http_options loadhost_http_options_default(void);

/* An inclusive range of response statuses a request expects: {200, 299}, or {404, 404}. */
typedef struct loadhost_status_range {
    /* The lowest status of the range. */
    uint16_t from;
    /* The highest. */
    uint16_t to;
} loadhost_status_range;

/* The ranges and their count, as arguments or as a request's options:
 * `loadhost_http_set_expected_statuses(LOADHOST_STATUSES({200, 299}, {404, 404}))`. */
#define LOADHOST_STATUSES(...)                                                                     \
    ((const loadhost_status_range[]){__VA_ARGS__}),                                                \
        (sizeof((const loadhost_status_range[]){__VA_ARGS__}) / sizeof(loadhost_status_range))

/* Judge every request of this worker from now on by `count` ranges of statuses (k6's
 * `setResponseCallback(expectedStatuses(...))`): a response with one of them does not count in
 * `http_req_failed`, any other does. `count` 0 restores the default, every status below 400. Each
 * worker starts with the default: call it in loadhost_init to set it for all of them. A range
 * whose `from` is above its `to` is a mistake: nothing changes and the task (or lifecycle step)
 * fails when it returns, naming the call. */
void loadhost_http_set_expected_statuses(const loadhost_status_range *ranges, size_t count);

/* How a request ended. */
typedef enum loadhost_http_status {
    /* A response came (whatever its status code). */
    LOADHOST_HTTP_OK = 0,
    /* The URL or the method could not be used. */
    LOADHOST_HTTP_INVALID_REQUEST,
    /* The host is not on the user's allow-list (`--allow-host`); no connection was made. */
    LOADHOST_HTTP_DENIED,
    /* Connecting, sending or receiving failed. */
    LOADHOST_HTTP_NETWORK,
} loadhost_http_status;

/* A request header. */
typedef struct loadhost_header {
    /* The header's name. */
    const char *name;
    /* The header's value. */
    const char *value;
} loadhost_header;

/* A request for loadhost_http_send; zero-initialise it and set what you need. */
typedef struct loadhost_request {
    /* "GET", "POST", ...; NULL means "GET". */
    const char *method;
    /* `http://host[:port]/path?query` or `https://...`. */
    const char *url;
    /* The headers, or NULL. */
    const loadhost_header *headers;
    /* How many headers there are. */
    size_t header_count;
    /* The body, or NULL. */
    const void *body;
    /* The length of body in bytes. */
    size_t body_len;
    /* Give up when no response has started after this many milliseconds; 0 waits as long as the
     * host lets it. */
    uint32_t timeout_ms;
    /* Leave the response headers in the host: the response has none (loadhost_response_header
     * gives NULL). For a plugin that only checks the status; the Rust SDK's `without_headers()`. */
    bool discard_headers;
    /* Leave the response body in the host: body is "" and body_len 0, as k6's
     * `discardResponseBodies`; the Rust SDK's `discard_body()`. Either way the host reads the whole
     * response and counts it in the HTTP metrics (data_received, ...). */
    bool discard_body;
    /* Redirects, cookies, decompression, the endpoint's name and basic authentication; NULL means
     * loadhost_http_options_default(). */
    const loadhost_http_options *options;
} loadhost_request;

/* A complete response, or why none came. Free it with loadhost_response_free. */
typedef struct loadhost_response {
    /* The status code (when the request returned LOADHOST_HTTP_OK). */
    uint16_t status;
    /* The whole body ("" when the request set discard_body); NUL-terminated (the NUL is not
     * counted in body_len). */
    const uint8_t *body;
    /* The length of body in bytes. */
    size_t body_len;
    /* Why no response came (when the request did not return LOADHOST_HTTP_OK), else "". */
    const char *error;
    /* From sending the request to the end of the body, as the plugin saw it. */
    double elapsed_ms;
    /* The URL that answered (NUL-terminated): the request's, or the last redirect's; "" when no
     * response came. */
    const char *final_url;
    /* How many redirects were followed to get this response. */
    uint32_t redirects;
    /* The raw response: its headers are raw.headers (see loadhost_response_header; none when the
     * request set discard_headers). */
    loadhost_plugin_http_response_t raw;
    /* Private: error when it was allocated. */
    char *owned_error;
    /* Private: the host's final URL, owned by the response. */
    workload_with_lifecycle_string_t raw_final_url;
} loadhost_response;

/* Send `request` and read the whole response into *response (free it either way). */
loadhost_http_status loadhost_http_send(const loadhost_request *request, loadhost_response *response);

/* GET `url` into *response (free it either way). */
loadhost_http_status loadhost_http_get(const char *url, loadhost_response *response);

/* POST `body` with the given content type (NULL for none) to `url` (free *response either way). */
loadhost_http_status loadhost_http_post(const char *url, const char *content_type, const void *body,
                                        size_t body_len, loadhost_response *response);

/* The first value of header `name` (case-insensitive) as a NUL-terminated string, or NULL. */
const char *loadhost_response_header(const loadhost_response *response, const char *name);

/* Free what a request put into *response; it may then be reused. */
void loadhost_response_free(loadhost_response *response);

/*
 * The worker's cookie jar: the host keeps one per worker (plugin instance), sends its cookies with
 * every request and keeps every `Set-Cookie` (RFC 6265), unless the request's options say
 * `.cookies = false` or the run `--no-cookies`. A replaced instance starts with an empty jar.
 * On an error, each function below sets *error (when error is not NULL) to a malloc'd message to
 * free; on success *error is NULL.
 */

/* The cookies a request to `url` would carry, as a `Cookie` header's value ("a=1; b=2"; "" for
 * none), malloc'd into *cookies (free it; NULL on an error). */
loadhost_http_status loadhost_cookies_get(const char *url, char **cookies, char **error);

/* Store a cookie as a response from `url` with this `Set-Cookie` value would
 * ("name=value; Path=/; Max-Age=60"); fails under `--no-cookies`. */
loadhost_http_status loadhost_cookies_set(const char *url, const char *set_cookie, char **error);

/* Forget every cookie of the worker's jar. */
void loadhost_cookies_clear(void);

/* ---- WebSocket --------------------------------------------------------------------------- */
/*
 * WebSocket connections through the host's `loadhost:plugin/websocket` import: the host does the
 * handshake, TLS, framing, pings and the close handshake, enforces `--allow-host` and records
 * ws_sessions, ws_connecting, ws_session_duration, ws_msgs_sent, ws_msgs_received and ws_ping by
 * itself. A connection may outlive the task that opened it: keep the pointer in a global (each
 * worker is its own instance) and later tasks of the same worker reuse it.
 *
 *     static loadhost_ws *conn;
 *     char *error = NULL;
 *     if (!conn && loadhost_ws_connect(url, NULL, 0, 10000, &conn, &error) != LOADHOST_WS_OK) { ... }
 *     loadhost_ws_send_text(conn, "hello", &error);
 *     loadhost_ws_message message;
 *     if (loadhost_ws_receive(conn, 10000, &message, &error) == LOADHOST_WS_OK) { ... message.data ... }
 *     loadhost_ws_message_free(&message);
 *
 * Every function that can fail returns a loadhost_ws_status and, on an error, sets *error (when
 * error is not NULL) to a malloc'd message to free; on success *error is NULL.
 */

/* An open WebSocket connection (opaque); from loadhost_ws_connect, released by loadhost_ws_close
 * or loadhost_ws_drop. */
typedef struct loadhost_ws loadhost_ws;

/* How a WebSocket call ended (the WIT `websocket.error` cases). */
typedef enum loadhost_ws_status {
    /* It worked. */
    LOADHOST_WS_OK = 0,
    /* The URL or a header could not be used. */
    LOADHOST_WS_INVALID_REQUEST,
    /* The host is not on the user's allow-list (`--allow-host`); no connection was made. */
    LOADHOST_WS_DENIED,
    /* Connecting, the handshake, sending or receiving failed; the connection is unusable. */
    LOADHOST_WS_NETWORK,
    /* The instance already has as many connections open as it may (WebSocket and gRPC streams
     * together): close or drop one first. */
    LOADHOST_WS_TOO_MANY_CONNECTIONS,
    /* Nothing arrived within the timeout; the connection is still open. */
    LOADHOST_WS_TIMEOUT,
    /* The connection is closed (by either side, or released): it can only be dropped. */
    LOADHOST_WS_CLOSED,
    /* A message larger than the host's cap (`--max-response-body`) arrived or was to be sent. */
    LOADHOST_WS_TOO_LARGE,
} loadhost_ws_status;

/* What kind of message loadhost_ws_receive got. */
typedef enum loadhost_ws_message_kind {
    /* A text message: data is UTF-8 text. */
    LOADHOST_WS_TEXT = 0,
    /* A binary message. */
    LOADHOST_WS_BINARY,
    /* The peer closed the connection (the host answered the close handshake): see close_code and
     * close_reason; later calls return LOADHOST_WS_CLOSED. */
    LOADHOST_WS_CLOSE,
} loadhost_ws_message_kind;

/* One whole message from the peer. Free it with loadhost_ws_message_free. */
typedef struct loadhost_ws_message {
    /* Text, binary or close. */
    loadhost_ws_message_kind kind;
    /* The text or the bytes (NUL-terminated, the NUL not counted in len); "" for a close. */
    const uint8_t *data;
    /* The length of data in bytes. */
    size_t len;
    /* For a close: its status code (1005 when the peer sent none). */
    uint16_t close_code;
    /* For a close: its reason (NUL-terminated), else "". */
    const char *close_reason;
    /* Private: the host's message, owned by this one. */
    loadhost_plugin_websocket_message_t raw;
} loadhost_ws_message;

/* Open a connection to `url` (`ws://` or `wss://`, with the run's TLS settings), sending the
 * `header_count` headers (NULL for none) with the handshake; give up after `timeout_ms` (0: the
 * host's 60 s). On success *ws is the connection; else NULL. */
loadhost_ws_status loadhost_ws_connect(const char *url, const loadhost_header *headers,
                                       size_t header_count, uint32_t timeout_ms, loadhost_ws **ws,
                                       char **error);

/* Send a text message (a NUL-terminated UTF-8 string). */
loadhost_ws_status loadhost_ws_send_text(loadhost_ws *ws, const char *text, char **error);

/* Send a binary message of `len` bytes. */
loadhost_ws_status loadhost_ws_send_binary(loadhost_ws *ws, const void *data, size_t len,
                                           char **error);

/* Wait for the next message, at most `timeout_ms` (0: until one comes or the connection ends),
 * into *message (free it either way). Pings are answered by the host and never returned. */
loadhost_ws_status loadhost_ws_receive(loadhost_ws *ws, uint32_t timeout_ms,
                                       loadhost_ws_message *message, char **error);

/* Send a ping and wait for its pong, at most `timeout_ms` (0: the host's 10 s); *rtt_ms (when
 * not NULL) is the round trip in milliseconds (the host records it as ws_ping). Messages that
 * arrive meanwhile are kept for loadhost_ws_receive. */
loadhost_ws_status loadhost_ws_ping(loadhost_ws *ws, uint32_t timeout_ms, double *rtt_ms,
                                    char **error);

/* Start the close handshake with `code` (1000: normal) and `reason` (NULL for none), and release
 * the connection (the host awaits the peer's close on the side, at most 1 s): `ws` must not be
 * used afterwards, whatever this returns. A connection the peer had already closed returns
 * LOADHOST_WS_OK. */
loadhost_ws_status loadhost_ws_close(loadhost_ws *ws, uint16_t code, const char *reason,
                                     char **error);

/* Release the connection without the close handshake (the host ends it): what to do with one that
 * failed. `ws` must not be used afterwards; NULL does nothing. */
void loadhost_ws_drop(loadhost_ws *ws);

/* Free what loadhost_ws_receive put into *message; it may then be reused. */
void loadhost_ws_message_free(loadhost_ws_message *message);

/* ---- Settings ---------------------------------------------------------------------------- */
/*
 * The plugin's environment holds only what the user passed with `loadhost run -e KEY=VALUE`.
 *
 * A value that is set but does not parse is the user's mistake, and every SDK treats it alike: the
 * function returns `fallback`, and when the task (or lifecycle step) returns, whatever it returns,
 * the run is aborted (exit code 4) with `KEY=VALUE: expected WHAT`, e.g.
 * `DELAY_MS=abc: expected an integer`. Values may have white space around them.
 */

/* The value of `key`, or `fallback` when it is unset. */
const char *loadhost_env(const char *key, const char *fallback);

/* The value of `key` as a decimal integer, or `fallback` when unset. */
long long loadhost_env_int(const char *key, long long fallback);

/* The value of `key` as a finite number, or `fallback` when unset. */
double loadhost_env_double(const char *key, double fallback);

/* The value of `key` as a boolean (true/false, 1/0, yes/no, on/off, any case; empty is false), or
 * `fallback` when unset. */
bool loadhost_env_bool(const char *key, bool fallback);

/* ---- Options ----------------------------------------------------------------------------- */
/*
 * Declare an `-e` option the plugin reads, at file scope, one per use:
 *
 *     LOADHOST_OPTION("TARGET_URL:url=http://127.0.0.1:8080/ 'the page to GET'");
 *     LOADHOST_OPTION("USERS:int! 'how many users'");
 *     LOADHOST_OPTION("PAUSE:duration=250ms 'the pause between two requests'");
 *
 * The text is `NAME:TYPE[!][=DEFAULT] [HELP]`: TYPE is string, int, float, bool, duration or url;
 * `!` makes the option required (it then has no default); DEFAULT is a word or quoted; HELP is in
 * quotes, '…' here (the text is a string literal without '"' or '\', as for LOADHOST_METRIC). Each
 * declaration is a line of the module's `loadhost:options` custom section, which `loadhost inspect`
 * lists and `loadhost run` checks -e against before any load (a required option missing or a value
 * of the wrong type is refused; an -e no option has is warned about, with did-you-mean). It is also
 * kept, when the instance starts, for the functions below: each reads the option's value given,
 * else its declared default.
 *
 * A value that does not read as its type (which loadhost run refuses, but an older host does not)
 * aborts the run as the loadhost_env_* functions do, and so does a required option missing. Reading
 * an option that is not declared, or with the function of another type, fails the task, naming it.
 */
#define LOADHOST_OPTION(declaration)                                                               \
    LOADHOST__OPTION_AT(declaration, __COUNTER__)                                                  \
    __asm__(".section \".custom_section.loadhost:options\",\"\",@\n.ascii \"" declaration "\\n\"\n")
#define LOADHOST__OPTION_AT(declaration, n) LOADHOST__OPTION_NAMED(declaration, n)
#define LOADHOST__OPTION_NAMED(declaration, n)                                                     \
    __attribute__((constructor)) static void loadhost__option_##n(void) {                         \
        loadhost__declare_option(declaration);                                                     \
    }

/* For LOADHOST_OPTION: keep a declaration for the functions below. */
void loadhost__declare_option(const char *declaration);

/* The option's value as given, else its default; NULL when it has neither. An option of another
 * type than string is checked by its type's rules. */
const char *loadhost_option(const char *name);

/* An `int` option's value; 0 when it has neither a value nor a default. */
long long loadhost_option_int(const char *name);

/* A `float` (or `int`) option's value; 0 when it has neither a value nor a default. */
double loadhost_option_double(const char *name);

/* A `bool` option's value; false when it has neither a value nor a default. */
bool loadhost_option_bool(const char *name);

/* A `duration` option's value in milliseconds; 0 when it has neither a value nor a default. */
double loadhost_option_ms(const char *name);

/* ---- Helpers ----------------------------------------------------------------------------- */

/* A malloc'd string formatted printf-style (for setup data); never NULL (traps when out of memory). */
char *loadhost_format(const char *format, ...) __attribute__((format(printf, 1, 2)));

#ifdef __cplusplus
}
#endif

#endif /* LOADHOST_H */
