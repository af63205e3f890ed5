/*
 * loadhost.c: the C SDK's glue between a plugin's loadhost_* functions and the raw bindings
 * wit-bindgen generated (workload_with_lifecycle.c). See loadhost.h for the surface.
 */
/* clock_gettime and strncasecmp are POSIX, which -std=c11 hides. */
#define _POSIX_C_SOURCE 200809L

#include "loadhost.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

typedef workload_with_lifecycle_string_t raw_string;

/* ---- Memory ------------------------------------------------------------------------------ */

/*
 * The canonical ABI allocates every string and list the host hands the plugin with cabi_realloc.
 * This replaces the generated (weak) one so that each allocation gets one more byte, set to NUL:
 * strings from the host are then C strings without a copy. malloc's 16-byte alignment covers
 * every canonical-ABI alignment (at most 8). A zero-size request returns a non-null dangling
 * pointer, as the generated one does; `text()` maps empty strings to "".
 */
__attribute__((__export_name__("cabi_realloc"))) void *cabi_realloc(void *ptr, size_t old_size,
                                                                     size_t align, size_t new_size) {
    (void)old_size;
    if (new_size == 0) {
        return (void *)align;
    }
    uint8_t *ret = realloc(ptr, new_size + 1);
    if (!ret) {
        abort();
    }
    ret[new_size] = 0;
    return ret;
}

/* A string from the host as a C string ("" when empty: its pointer is then dangling). */
static const char *text(raw_string s) {
    return s.len ? (const char *)s.ptr : "";
}

/* A C string as a borrowed canonical-ABI string (no copy). */
static raw_string borrow(const char *s) {
    return (raw_string){(uint8_t *)s, s ? strlen(s) : 0};
}

/* A malloc'd C string handed over as an owned canonical-ABI string (post-return frees it). */
static raw_string give(char *s) {
    size_t len = s ? strlen(s) : 0;
    if (len == 0) {
        /* Post-return frees only non-empty strings. */
        free(s);
        return (raw_string){NULL, 0};
    }
    return (raw_string){(uint8_t *)s, len};
}

static char *vformat(const char *format, va_list args) {
    va_list copy;
    va_copy(copy, args);
    int len = vsnprintf(NULL, 0, format, copy);
    va_end(copy);
    if (len < 0) {
        len = 0;
    }
    char *out = malloc((size_t)len + 1);
    if (!out) {
        abort();
    }
    vsnprintf(out, (size_t)len + 1, format, args);
    return out;
}

char *loadhost_format(const char *format, ...) {
    va_list args;
    va_start(args, format);
    char *out = vformat(format, args);
    va_end(args);
    return out;
}

/* ---- Task results ------------------------------------------------------------------------ */

/* The message of the failure being returned; one per instance (an instance runs one task at a
 * time, on one thread). */
static char *pending_message;

static loadhost_result fail_with(loadhost_result result, const char *format, va_list args) {
    free(pending_message);
    pending_message = vformat(format, args);
    return result;
}

loadhost_result loadhost_retryable(const char *format, ...) {
    va_list args;
    va_start(args, format);
    loadhost_result result = fail_with(LOADHOST_RETRYABLE, format, args);
    va_end(args);
    return result;
}

loadhost_result loadhost_failed(const char *format, ...) {
    va_list args;
    va_start(args, format);
    loadhost_result result = fail_with(LOADHOST_FAILED, format, args);
    va_end(args);
    return result;
}

loadhost_result loadhost_abort(const char *format, ...) {
    va_list args;
    va_start(args, format);
    loadhost_result result = fail_with(LOADHOST_ABORT, format, args);
    va_end(args);
    return result;
}

/* The pending message as an owned string (a default naming `who` when there is none). */
static raw_string take_message(const char *who, loadhost_result result) {
    char *message = pending_message;
    pending_message = NULL;
    if (!message) {
        static const char *const names[] = {"LOADHOST_OK", "LOADHOST_RETRYABLE", "LOADHOST_FAILED",
                                            "LOADHOST_ABORT"};
        message = (unsigned)result < 4 ? loadhost_format("%s returned %s without a message", who,
                                                         names[result])
                                       : loadhost_format("%s returned %d, not a loadhost_result",
                                                         who, (int)result);
    }
    return give(message);
}

/* Forget a message left by a function that then returned LOADHOST_OK. */
static void drop_message(void) {
    free(pending_message);
    pending_message = NULL;
}

/*
 * Mistakes the SDK caught during the current call, the first of each kind: a setting that does not
 * parse (the run is aborted: `DELAY_MS=abc: expected an integer`) and a metric call the host could
 * only drop (the task fails: `loadhost_trend("t", nan): value must be a finite number`). The
 * functions that find them cannot stop the plugin's code, so they return a fallback and the export
 * turns these into the call's result when the plugin's function returns.
 */
static char *bad_setting;
static char *bad_call;

static void remember(char **slot, char *message) {
    if (*slot) {
        free(message);
    } else {
        *slot = message;
    }
}

static void end_open_groups(void);

/* The call's result after the SDK's own checks: a bad setting aborts, a bad metric call fails the
 * call (unless the plugin aborted); the message is left for take_message. Groups still open end
 * here: the call that began them has returned. */
static loadhost_result checked(loadhost_result result) {
    end_open_groups();
    if (bad_setting) {
        free(pending_message);
        pending_message = bad_setting;
        bad_setting = NULL;
        result = LOADHOST_ABORT;
    } else if (bad_call && result != LOADHOST_ABORT) {
        free(pending_message);
        pending_message = bad_call;
        bad_call = NULL;
        result = LOADHOST_FAILED;
    }
    free(bad_call);
    bad_call = NULL;
    /* What the call printed reaches the host now: stdout is buffered (it is no terminal), and an
     * instance only ends when the host drops it. */
    fflush(stdout);
    return result;
}

/* ---- Exports ----------------------------------------------------------------------------- */

/* The `doer.do-task` export. Arguments are owned here; the error string goes to post-return. */
bool exports_loadhost_plugin_doer_do_task(exports_loadhost_plugin_doer_task_t *raw,
                                          exports_loadhost_plugin_doer_task_error_t *err) {
    const loadhost_task task = {
        .scenario = text(raw->scenario),
        .scenario_len = raw->scenario.len,
        .worker_id = raw->worker_id,
        .iteration = raw->iteration,
        .attempt = raw->attempt,
        .input = raw->input.len ? raw->input.ptr : (const uint8_t *)"",
        .input_len = raw->input.len,
    };
    loadhost_result result = checked(loadhost_do_task(&task));
    exports_loadhost_plugin_doer_task_free(raw);
    if (result == LOADHOST_OK) {
        drop_message();
        return true;
    }
    switch (result) {
    case LOADHOST_RETRYABLE:
        err->tag = LOADHOST_PLUGIN_TYPES_TASK_ERROR_RETRYABLE;
        break;
    case LOADHOST_ABORT:
        err->tag = LOADHOST_PLUGIN_TYPES_TASK_ERROR_ABORT;
        break;
    default: /* LOADHOST_FAILED, or a value that is not a loadhost_result */
        err->tag = LOADHOST_PLUGIN_TYPES_TASK_ERROR_FAILED;
        break;
    }
    /* The three cases share one layout (a string). */
    err->val.failed = take_message("loadhost_do_task", result);
    return false;
}

__attribute__((weak)) loadhost_result loadhost_setup(const char *options, char **setup_data) {
    (void)options;
    *setup_data = NULL;
    return LOADHOST_OK;
}

__attribute__((weak)) loadhost_result loadhost_init(uint32_t worker_id, const char *setup_data) {
    (void)worker_id;
    (void)setup_data;
    return LOADHOST_OK;
}

__attribute__((weak)) loadhost_result loadhost_teardown(const char *setup_data) {
    (void)setup_data;
    return LOADHOST_OK;
}

/* The `lifecycle.setup` export. */
bool exports_loadhost_plugin_lifecycle_setup(raw_string *options, raw_string *ret, raw_string *err) {
    char *data = NULL;
    loadhost_result result = checked(loadhost_setup(text(*options), &data));
    workload_with_lifecycle_string_free(options);
    if (result == LOADHOST_OK) {
        drop_message();
        *ret = give(data);
        return true;
    }
    free(data);
    *err = take_message("loadhost_setup", result);
    return false;
}

/* The `lifecycle.init` export. */
bool exports_loadhost_plugin_lifecycle_init(uint32_t worker_id, raw_string *setup_data,
                                            raw_string *err) {
    loadhost_result result = checked(loadhost_init(worker_id, text(*setup_data)));
    workload_with_lifecycle_string_free(setup_data);
    if (result == LOADHOST_OK) {
        drop_message();
        return true;
    }
    *err = take_message("loadhost_init", result);
    return false;
}

/* The `lifecycle.teardown` export. */
bool exports_loadhost_plugin_lifecycle_teardown(raw_string *setup_data, raw_string *err) {
    loadhost_result result = checked(loadhost_teardown(text(*setup_data)));
    workload_with_lifecycle_string_free(setup_data);
    if (result == LOADHOST_OK) {
        drop_message();
        return true;
    }
    *err = take_message("loadhost_teardown", result);
    return false;
}

/* ---- Metrics ----------------------------------------------------------------------------- */

/* Tag lists up to this long are converted on the stack; longer ones are malloc'd. */
#define STACK_TAGS 16

/* The canonical-ABI form of a tag list; it borrows the strings. */
typedef struct tag_buffer {
    workload_with_lifecycle_tuple2_string_string_t stack[STACK_TAGS];
    loadhost_plugin_metrics_tags_t list;
} tag_buffer;

static loadhost_plugin_metrics_tags_t *convert_tags(tag_buffer *buffer, const loadhost_tag *tags,
                                                    size_t count) {
    buffer->list.len = count;
    buffer->list.ptr = count <= STACK_TAGS ? buffer->stack : malloc(count * sizeof *buffer->list.ptr);
    if (!buffer->list.ptr) {
        abort();
    }
    for (size_t i = 0; i < count; i++) {
        buffer->list.ptr[i].f0 = borrow(tags[i].key);
        buffer->list.ptr[i].f1 = borrow(tags[i].value);
    }
    return &buffer->list;
}

static void release_tags(tag_buffer *buffer) {
    if (buffer->list.ptr != buffer->stack) {
        free(buffer->list.ptr);
    }
}

/* `loadhost_KIND("name", VALUE)`: how a message names a metric call. */
static char *call_text(const char *kind, const char *name, const char *value) {
    return name ? loadhost_format("loadhost_%s(\"%s\", %s)", kind, name, value)
                : loadhost_format("loadhost_%s(NULL, %s)", kind, value);
}

/*
 * Whether a metric call can be recorded: a non-empty name, tags with non-empty keys and non-NULL
 * values, and for a gauge or trend (`number`) a finite value. If not, the call is remembered as
 * the failure of the task (or lifecycle step) and the sample dropped.
 */
static bool usable(const char *kind, const char *name, const char *value, const double *number,
                   const loadhost_tag *tags, size_t tag_count) {
    char *why = NULL;
    if (!name || !*name) {
        why = loadhost_format("name must be a non-empty string");
    } else if (tag_count > 0 && !tags) {
        why = loadhost_format("tags is NULL but tag_count is %zu", tag_count);
    } else if (number && !isfinite(*number)) {
        why = loadhost_format("value must be a finite number");
    }
    for (size_t i = 0; !why && tags && i < tag_count; i++) {
        if (!tags[i].key || !*tags[i].key) {
            why = loadhost_format("tag %zu: the key must be a non-empty string", i);
        } else if (!tags[i].value) {
            why = loadhost_format("tag \"%s\": the value must be a string, got NULL", tags[i].key);
        }
    }
    if (!why) {
        return true;
    }
    char *call = call_text(kind, name, value);
    remember(&bad_call, loadhost_format("%s: %s", call, why));
    free(call);
    free(why);
    return false;
}

void loadhost_counter(const char *name, uint64_t delta, const loadhost_tag *tags, size_t tag_count) {
    char value[24];
    snprintf(value, sizeof value, "%" PRIu64, delta);
    if (!usable("counter", name, value, NULL, tags, tag_count)) {
        return;
    }
    raw_string raw_name = borrow(name);
    tag_buffer buffer;
    loadhost_plugin_metrics_counter(&raw_name, delta, convert_tags(&buffer, tags, tag_count));
    release_tags(&buffer);
}

void loadhost_gauge(const char *name, double value, const loadhost_tag *tags, size_t tag_count) {
    char text[32];
    snprintf(text, sizeof text, "%g", value);
    if (!usable("gauge", name, text, &value, tags, tag_count)) {
        return;
    }
    raw_string raw_name = borrow(name);
    tag_buffer buffer;
    loadhost_plugin_metrics_gauge(&raw_name, value, convert_tags(&buffer, tags, tag_count));
    release_tags(&buffer);
}

void loadhost_trend(const char *name, double value, const loadhost_tag *tags, size_t tag_count) {
    char text[32];
    snprintf(text, sizeof text, "%g", value);
    if (!usable("trend", name, text, &value, tags, tag_count)) {
        return;
    }
    raw_string raw_name = borrow(name);
    tag_buffer buffer;
    loadhost_plugin_metrics_trend(&raw_name, value, convert_tags(&buffer, tags, tag_count));
    release_tags(&buffer);
}

/* ---- Groups ------------------------------------------------------------------------------ */

/* The host's cap on a tag value, which a group's path is. */
#define MAX_GROUP_PATH 256
/* Each level adds at least "::x": this many levels fill the path. */
#define MAX_GROUP_DEPTH (MAX_GROUP_PATH / 3)

/* The open groups: their path ("::a::b", NUL-terminated), and per level where the outer path
 * ended and when the group began. One per instance (an instance runs one call at a time). */
static char group_path[MAX_GROUP_PATH + 1];
static size_t group_outer[MAX_GROUP_DEPTH];
static double group_started[MAX_GROUP_DEPTH];
static size_t group_depth;

static double now_ms(void);

/* A group mistake: remembered as the failure of the call, as a bad metric call is. */
static void bad_group_call(const char *name, const char *why) {
    char *call = name ? loadhost_format("loadhost_group_begin(\"%s\")", name)
                      : loadhost_format("loadhost_group_begin(NULL)");
    remember(&bad_call, loadhost_format("%s: %s", call, why));
    free(call);
}

void loadhost_group_begin(const char *name) {
    if (!name || !*name || strstr(name, "::")) {
        bad_group_call(name, "a group's name must be non-empty and must not contain \"::\"");
        return;
    }
    size_t outer = strlen(group_path);
    if (outer + 2 + strlen(name) > MAX_GROUP_PATH || group_depth == MAX_GROUP_DEPTH) {
        bad_group_call(name, "the group's path is longer than 256 bytes");
        return;
    }
    group_outer[group_depth] = outer;
    group_started[group_depth] = now_ms();
    group_depth++;
    snprintf(group_path + outer, sizeof group_path - outer, "::%s", name);
}

void loadhost_group_end(void) {
    if (group_depth == 0) {
        remember(&bad_call, loadhost_format("loadhost_group_end(): no group is open"));
        return;
    }
    group_depth--;
    double ms = now_ms() - group_started[group_depth];
    const loadhost_tag tag[] = {{"group", group_path}};
    raw_string raw_name = borrow("group_duration");
    tag_buffer buffer;
    loadhost_plugin_metrics_trend(&raw_name, ms, convert_tags(&buffer, tag, 1));
    release_tags(&buffer);
    group_path[group_outer[group_depth]] = '\0';
}

const char *loadhost_group_current(void) {
    return group_depth ? group_path : NULL;
}

/* End every group still open, innermost first. */
static void end_open_groups(void) {
    while (group_depth) {
        loadhost_group_end();
    }
}

void loadhost_sleep_ms(uint32_t ms) {
    loadhost_plugin_pause_sleep(ms);
}

bool loadhost_check(const char *name, bool ok, const loadhost_tag *tags, size_t tag_count) {
    if (!usable("check", name, ok ? "true" : "false", NULL, tags, tag_count)) {
        return ok;
    }
    /* Inside a group, the check carries its path (unless the plugin tagged it with a group). */
    bool add_group = group_depth > 0;
    for (size_t i = 0; add_group && i < tag_count; i++) {
        add_group = strcmp(tags[i].key, "group") != 0;
    }
    loadhost_tag stack_tags[STACK_TAGS];
    loadhost_tag *all = NULL;
    if (add_group) {
        all = tag_count < STACK_TAGS ? stack_tags : malloc((tag_count + 1) * sizeof *all);
        if (!all) {
            abort();
        }
        if (tag_count) {
            memcpy(all, tags, tag_count * sizeof *all);
        }
        all[tag_count] = (loadhost_tag){"group", group_path};
    }
    raw_string raw_name = borrow(name);
    tag_buffer buffer;
    loadhost_plugin_metrics_tags_t *raw_tags =
        all ? convert_tags(&buffer, all, tag_count + 1) : convert_tags(&buffer, tags, tag_count);
    bool result = loadhost_plugin_metrics_check(&raw_name, ok, raw_tags);
    release_tags(&buffer);
    if (all && all != stack_tags) {
        free(all);
    }
    return result;
}

/* ---- HTTP -------------------------------------------------------------------------------- */

typedef workload_with_lifecycle_tuple2_string_list_u8_t raw_header;

/* Request headers up to this many are converted on the stack; more are malloc'd. */
#define STACK_HEADERS 16

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* The SDK's message (malloc'd) and status for the host's error about `url`; frees `raw`. */
static loadhost_http_status error_message(const char *url, loadhost_plugin_http_error_t *raw,
                                          char **out) {
    /* The three cases share one layout (a string). */
    const char *why = text(raw->val.network);
    char *message;
    loadhost_http_status status;
    switch (raw->tag) {
    case LOADHOST_PLUGIN_HTTP_ERROR_DENIED:
        /* The host's message is the URL; say what to do about it, as the Rust SDK does. */
        message = loadhost_format(
            "request to %s denied: the host is not allowed (loadhost run --allow-host)", why);
        status = LOADHOST_HTTP_DENIED;
        break;
    case LOADHOST_PLUGIN_HTTP_ERROR_INVALID_REQUEST:
        message = loadhost_format("invalid request to %s: %s", url, why);
        status = LOADHOST_HTTP_INVALID_REQUEST;
        break;
    default:
        message = loadhost_format("%s", why);
        status = LOADHOST_HTTP_NETWORK;
        break;
    }
    loadhost_plugin_http_error_free(raw);
    *out = message;
    return status;
}

/* Sets a response's error from the host's and returns its status. */
static loadhost_http_status set_error(loadhost_response *response, const char *url,
                                      loadhost_plugin_http_error_t *raw) {
    char *message;
    loadhost_http_status status = error_message(url, raw, &message);
    response->owned_error = message;
    response->error = message;
    return status;
}

loadhost_http_options loadhost_http_options_default(void) {
    return (loadhost_http_options){
        .redirects = LOADHOST_HTTP_DEFAULT_REDIRECTS,
        .cookies = true,
        .decompress = true,
    };
}

/* Standard base64 with padding (RFC 4648) of `len` bytes, malloc'd (for basic authentication). */
static char *base64(const uint8_t *data, size_t len) {
    static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    char *out = malloc((len + 2) / 3 * 4 + 1);
    if (!out) {
        abort();
    }
    char *at = out;
    for (size_t i = 0; i < len; i += 3) {
        uint32_t n = (uint32_t)data[i] << 16;
        if (i + 1 < len) {
            n |= (uint32_t)data[i + 1] << 8;
        }
        if (i + 2 < len) {
            n |= data[i + 2];
        }
        *at++ = alphabet[(n >> 18) & 63];
        *at++ = alphabet[(n >> 12) & 63];
        *at++ = i + 1 < len ? alphabet[(n >> 6) & 63] : '=';
        *at++ = i + 2 < len ? alphabet[n & 63] : '=';
    }
    *at = '\0';
    return out;
}

/* Ranges of statuses as the host's list (borrowed: the layouts differ, so copied into `out`, which
 * holds `capacity`); the index of the first range whose `from` is above its `to`, or -1. */
static long status_ranges(const loadhost_status_range *ranges, size_t count,
                          workload_with_lifecycle_tuple2_u16_u16_t *out) {
    for (size_t i = 0; i < count; i++) {
        if (ranges[i].from > ranges[i].to) {
            return (long)i;
        }
        out[i] = (workload_with_lifecycle_tuple2_u16_u16_t){ranges[i].from, ranges[i].to};
    }
    return -1;
}

/* A malloc'd copy of `count` ranges in the host's layout (NULL for none). */
static workload_with_lifecycle_tuple2_u16_u16_t *range_buffer(size_t count) {
    if (count == 0) {
        return NULL;
    }
    workload_with_lifecycle_tuple2_u16_u16_t *buffer = malloc(count * sizeof *buffer);
    if (!buffer) {
        abort();
    }
    return buffer;
}

void loadhost_http_set_expected_statuses(const loadhost_status_range *ranges, size_t count) {
    if (count > 0 && !ranges) {
        remember(&bad_call, loadhost_format(
                                "loadhost_http_set_expected_statuses: ranges is NULL but count is %zu", count));
        return;
    }
    workload_with_lifecycle_tuple2_u16_u16_t *buffer = range_buffer(count);
    long bad = status_ranges(ranges, count, buffer);
    if (bad >= 0) {
        remember(&bad_call, loadhost_format("loadhost_http_set_expected_statuses: range %ld, {%u, %u}, "
                                            "holds no status (write it {low, high})",
                                            bad, (unsigned)ranges[bad].from, (unsigned)ranges[bad].to));
    } else {
        loadhost_plugin_http_status_ranges_t list = {buffer, count};
        loadhost_plugin_http_set_expected_statuses(&list);
    }
    free(buffer);
}

loadhost_http_status loadhost_http_send(const loadhost_request *request, loadhost_response *response) {
    memset(response, 0, sizeof *response);
    response->body = (const uint8_t *)"";
    response->error = "";

    const loadhost_http_options defaults = loadhost_http_options_default();
    const loadhost_http_options *options = request->options ? request->options : &defaults;
    const char *url = request->url ? request->url : "";

    /* The request's own expected statuses, checked before anything is sent. */
    size_t expected_count = options->expected_statuses ? options->expected_status_count : 0;
    workload_with_lifecycle_tuple2_u16_u16_t *expected = range_buffer(expected_count);
    long bad = status_ranges(options->expected_statuses, expected_count, expected);
    if (bad >= 0) {
        free(expected);
        char *message = loadhost_format("invalid request to %s: expected_statuses[%ld], {%u, %u}, holds no status "
                                        "(write it {low, high})",
                                        url, bad, (unsigned)options->expected_statuses[bad].from,
                                        (unsigned)options->expected_statuses[bad].to);
        response->owned_error = message;
        response->error = message;
        response->final_url = "";
        return LOADHOST_HTTP_INVALID_REQUEST;
    }

    /* Basic authentication is one more header, after the plugin's own. */
    char *authorization = NULL;
    if (options->auth_user) {
        char *credentials = loadhost_format("%s:%s", options->auth_user,
                                            options->auth_password ? options->auth_password : "");
        char *encoded = base64((const uint8_t *)credentials, strlen(credentials));
        authorization = loadhost_format("Basic %s", encoded);
        /* The credentials are a secret: wipe the plain copy before freeing it. */
        memset(credentials, 0, strlen(credentials));
        free(credentials);
        free(encoded);
    }
    size_t count = request->header_count + (authorization ? 1 : 0);
    raw_header stack_headers[STACK_HEADERS];
    raw_header *headers = count <= STACK_HEADERS ? stack_headers : malloc(count * sizeof *headers);
    if (!headers) {
        abort();
    }
    for (size_t i = 0; i < request->header_count; i++) {
        headers[i].f0 = borrow(request->headers[i].name);
        headers[i].f1 = (workload_with_lifecycle_list_u8_t){
            (uint8_t *)request->headers[i].value, strlen(request->headers[i].value)};
    }
    if (authorization) {
        headers[count - 1].f0 = borrow("authorization");
        headers[count - 1].f1 =
            (workload_with_lifecycle_list_u8_t){(uint8_t *)authorization, strlen(authorization)};
    }
    loadhost_plugin_http_request_t raw = {
        .method = borrow(request->method ? request->method : "GET"),
        .url = borrow(url),
        .headers = {headers, count},
        .body = {(uint8_t *)request->body, request->body ? request->body_len : 0},
        .timeout_ms = {request->timeout_ms > 0, request->timeout_ms},
    };

    /* The parts the plugin will not read stay in the host (which still reads and counts them). */
    loadhost_plugin_http_response_parts_t parts = {
        .headers = !request->discard_headers,
        .body = !request->discard_body,
    };

    loadhost_plugin_http_request_options_t raw_options = {
        .parts = parts,
        .redirects = {true, options->redirects},
        .cookies = options->cookies,
        .decompress = options->decompress,
        .name = {options->name != NULL, borrow(options->name)},
    };

    loadhost_plugin_http_response_info_t info;
    loadhost_plugin_http_error_t raw_error;
    double started = now_ms();
    bool ok;
    if (options->expected_statuses) {
        loadhost_plugin_http_status_ranges_t statuses = {expected, expected_count};
        ok = loadhost_plugin_http_send_expecting(&raw, &raw_options, &statuses, &info, &raw_error);
    } else {
        ok = loadhost_plugin_http_send_opts(&raw, &raw_options, &info, &raw_error);
    }
    response->elapsed_ms = now_ms() - started;
    free(expected);
    if (headers != stack_headers) {
        free(headers);
    }
    free(authorization);
    response->final_url = "";
    if (!ok) {
        return set_error(response, url, &raw_error);
    }
    response->raw = info.response;
    response->raw_final_url = info.final_url;
    response->final_url = text(info.final_url);
    response->redirects = info.redirects;
    response->status = response->raw.status;
    if (response->raw.body.len) {
        response->body = response->raw.body.ptr;
        response->body_len = response->raw.body.len;
    }
    return LOADHOST_HTTP_OK;
}

loadhost_http_status loadhost_http_get(const char *url, loadhost_response *response) {
    const loadhost_request request = {.method = "GET", .url = url};
    return loadhost_http_send(&request, response);
}

loadhost_http_status loadhost_http_post(const char *url, const char *content_type, const void *body,
                                        size_t body_len, loadhost_response *response) {
    const loadhost_header header = {"content-type", content_type};
    const loadhost_request request = {
        .method = "POST",
        .url = url,
        .headers = content_type ? &header : NULL,
        .header_count = content_type ? 1 : 0,
        .body = body,
        .body_len = body_len,
    };
    return loadhost_http_send(&request, response);
}

const char *loadhost_response_header(const loadhost_response *response, const char *name) {
    for (size_t i = 0; i < response->raw.headers.len; i++) {
        const raw_header *header = &response->raw.headers.ptr[i];
        if (header->f0.len == strlen(name) && strncasecmp(text(header->f0), name, header->f0.len) == 0) {
            return header->f1.len ? (const char *)header->f1.ptr : "";
        }
    }
    return NULL;
}

void loadhost_response_free(loadhost_response *response) {
    loadhost_plugin_http_response_free(&response->raw);
    workload_with_lifecycle_string_free(&response->raw_final_url);
    free(response->owned_error);
    memset(response, 0, sizeof *response);
    response->body = (const uint8_t *)"";
    response->error = "";
    response->final_url = "";
}

/* Hands a cookie call's error to the caller (or frees it) and returns its status. */
static loadhost_http_status cookie_error(const char *url, loadhost_plugin_http_error_t *raw,
                                         char **error) {
    char *message;
    loadhost_http_status status = error_message(url, raw, &message);
    if (error) {
        *error = message;
    } else {
        free(message);
    }
    return status;
}

loadhost_http_status loadhost_cookies_get(const char *url, char **cookies, char **error) {
    *cookies = NULL;
    if (error) {
        *error = NULL;
    }
    raw_string raw_url = borrow(url ? url : "");
    workload_with_lifecycle_list_tuple2_string_string_t list;
    loadhost_plugin_http_error_t raw_error;
    if (!loadhost_plugin_http_cookies_for(&raw_url, &list, &raw_error)) {
        return cookie_error(url ? url : "", &raw_error, error);
    }
    size_t len = 0;
    for (size_t i = 0; i < list.len; i++) {
        len += list.ptr[i].f0.len + 1 + list.ptr[i].f1.len + 2;
    }
    char *out = malloc(len + 1);
    if (!out) {
        abort();
    }
    char *at = out;
    for (size_t i = 0; i < list.len; i++) {
        if (i > 0) {
            *at++ = ';';
            *at++ = ' ';
        }
        memcpy(at, list.ptr[i].f0.ptr, list.ptr[i].f0.len);
        at += list.ptr[i].f0.len;
        *at++ = '=';
        memcpy(at, list.ptr[i].f1.ptr, list.ptr[i].f1.len);
        at += list.ptr[i].f1.len;
    }
    *at = '\0';
    workload_with_lifecycle_list_tuple2_string_string_free(&list);
    *cookies = out;
    return LOADHOST_HTTP_OK;
}

loadhost_http_status loadhost_cookies_set(const char *url, const char *set_cookie, char **error) {
    if (error) {
        *error = NULL;
    }
    raw_string raw_url = borrow(url ? url : "");
    raw_string raw_set_cookie = borrow(set_cookie ? set_cookie : "");
    loadhost_plugin_http_error_t raw_error;
    if (!loadhost_plugin_http_add_cookie(&raw_url, &raw_set_cookie, &raw_error)) {
        return cookie_error(url ? url : "", &raw_error, error);
    }
    return LOADHOST_HTTP_OK;
}

void loadhost_cookies_clear(void) {
    loadhost_plugin_http_clear_cookies();
}

/* ---- WebSocket --------------------------------------------------------------------------- */

struct loadhost_ws {
    /* The host's connection, owned until close or drop. */
    loadhost_plugin_websocket_own_connection_t own;
    /* The URL it was opened with, for messages. */
    char *url;
};

/* The SDK's status for the host's error, with its message handed to the caller (or freed); frees
 * `raw`. */
static loadhost_ws_status ws_error(const char *url, loadhost_plugin_websocket_error_t *raw,
                                   char **error) {
    char *message;
    loadhost_ws_status status;
    switch (raw->tag) {
    case LOADHOST_PLUGIN_WEBSOCKET_ERROR_INVALID_REQUEST:
        message = loadhost_format("invalid WebSocket request to %s: %s", url,
                                  text(raw->val.invalid_request));
        status = LOADHOST_WS_INVALID_REQUEST;
        break;
    case LOADHOST_PLUGIN_WEBSOCKET_ERROR_DENIED:
        message = loadhost_format(
            "WebSocket to %s denied: the host is not allowed (loadhost run --allow-host)", url);
        status = LOADHOST_WS_DENIED;
        break;
    case LOADHOST_PLUGIN_WEBSOCKET_ERROR_NETWORK:
        message = loadhost_format("%s", text(raw->val.network));
        status = LOADHOST_WS_NETWORK;
        break;
    case LOADHOST_PLUGIN_WEBSOCKET_ERROR_TOO_MANY_CONNECTIONS:
        message = loadhost_format("too many connections: this instance already has %" PRIu32
                                  " open (close or drop one)",
                                  raw->val.too_many_connections);
        status = LOADHOST_WS_TOO_MANY_CONNECTIONS;
        break;
    case LOADHOST_PLUGIN_WEBSOCKET_ERROR_TIMEOUT:
        message = loadhost_format("WebSocket %s: nothing arrived within the timeout", url);
        status = LOADHOST_WS_TIMEOUT;
        break;
    case LOADHOST_PLUGIN_WEBSOCKET_ERROR_TOO_LARGE:
        message = loadhost_format("WebSocket %s: a message is larger than %" PRIu64 " bytes", url,
                                  raw->val.too_large);
        status = LOADHOST_WS_TOO_LARGE;
        break;
    default:
        message = loadhost_format("WebSocket %s is closed", url);
        status = LOADHOST_WS_CLOSED;
        break;
    }
    loadhost_plugin_websocket_error_free(raw);
    if (error) {
        *error = message;
    } else {
        free(message);
    }
    return status;
}

/* The status of a call on a connection the plugin already released (or never had). */
static loadhost_ws_status ws_released(char **error) {
    if (error) {
        *error = loadhost_format("the WebSocket connection is closed");
    }
    return LOADHOST_WS_CLOSED;
}

static void clear_error(char **error) {
    if (error) {
        *error = NULL;
    }
}

static loadhost_plugin_websocket_borrow_connection_t ws_borrow(const loadhost_ws *ws) {
    return loadhost_plugin_websocket_borrow_connection(ws->own);
}

loadhost_ws_status loadhost_ws_connect(const char *url, const loadhost_header *headers,
                                       size_t header_count, uint32_t timeout_ms, loadhost_ws **ws,
                                       char **error) {
    *ws = NULL;
    clear_error(error);
    if (!url) {
        url = "";
    }
    raw_header stack_headers[STACK_HEADERS];
    raw_header *raw_headers =
        header_count <= STACK_HEADERS ? stack_headers : malloc(header_count * sizeof *raw_headers);
    if (!raw_headers) {
        abort();
    }
    for (size_t i = 0; i < header_count; i++) {
        raw_headers[i].f0 = borrow(headers[i].name);
        raw_headers[i].f1 = (workload_with_lifecycle_list_u8_t){(uint8_t *)headers[i].value,
                                                               strlen(headers[i].value)};
    }
    raw_string raw_url = borrow(url);
    workload_with_lifecycle_list_tuple2_string_list_u8_t list = {raw_headers, header_count};
    loadhost_plugin_websocket_own_connection_t own;
    loadhost_plugin_websocket_error_t raw_error;
    bool ok = loadhost_plugin_websocket_static_connection_connect(
        &raw_url, &list, timeout_ms > 0 ? &timeout_ms : NULL, &own, &raw_error);
    if (raw_headers != stack_headers) {
        free(raw_headers);
    }
    if (!ok) {
        return ws_error(url, &raw_error, error);
    }
    loadhost_ws *conn = malloc(sizeof *conn);
    if (!conn) {
        abort();
    }
    conn->own = own;
    conn->url = loadhost_format("%s", url);
    *ws = conn;
    return LOADHOST_WS_OK;
}

loadhost_ws_status loadhost_ws_send_text(loadhost_ws *ws, const char *text_message, char **error) {
    clear_error(error);
    if (!ws) {
        return ws_released(error);
    }
    raw_string raw = borrow(text_message ? text_message : "");
    loadhost_plugin_websocket_error_t raw_error;
    if (!loadhost_plugin_websocket_method_connection_send_text(ws_borrow(ws), &raw, &raw_error)) {
        return ws_error(ws->url, &raw_error, error);
    }
    return LOADHOST_WS_OK;
}

loadhost_ws_status loadhost_ws_send_binary(loadhost_ws *ws, const void *data, size_t len,
                                           char **error) {
    clear_error(error);
    if (!ws) {
        return ws_released(error);
    }
    workload_with_lifecycle_list_u8_t raw = {(uint8_t *)data, data ? len : 0};
    loadhost_plugin_websocket_error_t raw_error;
    if (!loadhost_plugin_websocket_method_connection_send_binary(ws_borrow(ws), &raw, &raw_error)) {
        return ws_error(ws->url, &raw_error, error);
    }
    return LOADHOST_WS_OK;
}

/* An empty message (what loadhost_ws_message_free leaves, and what an error gives). */
static void ws_message_clear(loadhost_ws_message *message) {
    memset(message, 0, sizeof *message);
    message->data = (const uint8_t *)"";
    message->close_reason = "";
    /* A text message of no length frees nothing. */
    message->raw.tag = LOADHOST_PLUGIN_WEBSOCKET_MESSAGE_TEXT;
}

loadhost_ws_status loadhost_ws_receive(loadhost_ws *ws, uint32_t timeout_ms,
                                       loadhost_ws_message *message, char **error) {
    ws_message_clear(message);
    clear_error(error);
    if (!ws) {
        return ws_released(error);
    }
    loadhost_plugin_websocket_error_t raw_error;
    if (!loadhost_plugin_websocket_method_connection_receive(
            ws_borrow(ws), timeout_ms > 0 ? &timeout_ms : NULL, &message->raw, &raw_error)) {
        ws_message_clear(message);
        return ws_error(ws->url, &raw_error, error);
    }
    switch (message->raw.tag) {
    case LOADHOST_PLUGIN_WEBSOCKET_MESSAGE_TEXT:
        message->kind = LOADHOST_WS_TEXT;
        message->data = (const uint8_t *)text(message->raw.val.text);
        message->len = message->raw.val.text.len;
        break;
    case LOADHOST_PLUGIN_WEBSOCKET_MESSAGE_BINARY:
        message->kind = LOADHOST_WS_BINARY;
        if (message->raw.val.binary.len) {
            message->data = message->raw.val.binary.ptr;
            message->len = message->raw.val.binary.len;
        }
        break;
    default:
        message->kind = LOADHOST_WS_CLOSE;
        message->close_code = message->raw.val.close.code;
        message->close_reason = text(message->raw.val.close.reason);
        break;
    }
    return LOADHOST_WS_OK;
}

loadhost_ws_status loadhost_ws_ping(loadhost_ws *ws, uint32_t timeout_ms, double *rtt_ms,
                                    char **error) {
    clear_error(error);
    if (!ws) {
        return ws_released(error);
    }
    double rtt = 0;
    loadhost_plugin_websocket_error_t raw_error;
    if (!loadhost_plugin_websocket_method_connection_ping(
            ws_borrow(ws), timeout_ms > 0 ? &timeout_ms : NULL, &rtt, &raw_error)) {
        return ws_error(ws->url, &raw_error, error);
    }
    if (rtt_ms) {
        *rtt_ms = rtt;
    }
    return LOADHOST_WS_OK;
}

loadhost_ws_status loadhost_ws_close(loadhost_ws *ws, uint16_t code, const char *reason,
                                     char **error) {
    clear_error(error);
    if (!ws) {
        return LOADHOST_WS_OK;
    }
    raw_string raw_reason = borrow(reason ? reason : "");
    loadhost_plugin_websocket_error_t raw_error;
    loadhost_ws_status status = LOADHOST_WS_OK;
    if (!loadhost_plugin_websocket_method_connection_close(ws_borrow(ws), code, &raw_reason,
                                                            &raw_error)) {
        if (raw_error.tag == LOADHOST_PLUGIN_WEBSOCKET_ERROR_CLOSED) {
            loadhost_plugin_websocket_error_free(&raw_error);
        } else {
            status = ws_error(ws->url, &raw_error, error);
        }
    }
    loadhost_ws_drop(ws);
    return status;
}

void loadhost_ws_drop(loadhost_ws *ws) {
    if (!ws) {
        return;
    }
    loadhost_plugin_websocket_connection_drop_own(ws->own);
    free(ws->url);
    free(ws);
}

void loadhost_ws_message_free(loadhost_ws_message *message) {
    loadhost_plugin_websocket_message_free(&message->raw);
    ws_message_clear(message);
}

/* ---- Settings ---------------------------------------------------------------------------- */

const char *loadhost_env(const char *key, const char *fallback) {
    const char *value = getenv(key);
    return value ? value : fallback;
}

/* Remembers `key=value` as this call's bad setting: the run is aborted when the call returns. */
static void bad_value(const char *key, const char *value, const char *expected) {
    remember(&bad_setting, loadhost_format("%s=%s: expected %s", key, value, expected));
}

/* Whether only white space is left at `end`. */
static bool only_space(const char *end) {
    while (isspace((unsigned char)*end)) {
        end++;
    }
    return *end == '\0';
}

/* The value as a decimal integer in *out; NULL, or what was expected instead. */
static const char *read_int(const char *value, long long *out) {
    char *end;
    errno = 0;
    *out = strtoll(value, &end, 10);
    if (end == value || !only_space(end)) {
        return "an integer";
    }
    if (errno == ERANGE) {
        return "an integer from -9223372036854775808 to 9223372036854775807";
    }
    return NULL;
}

/* The value as a finite number in *out; NULL, or what was expected instead. */
static const char *read_double(const char *value, double *out) {
    char *end;
    *out = strtod(value, &end);
    return end == value || !only_space(end) || !isfinite(*out) ? "a number" : NULL;
}

/* Whether the `len` bytes at `text` are one of `words`, ignoring case. */
static bool one_of(const char *text, size_t len, const char *const *words, size_t count) {
    for (size_t i = 0; i < count; i++) {
        if (strlen(words[i]) == len && strncasecmp(text, words[i], len) == 0) {
            return true;
        }
    }
    return false;
}

static const char BOOLEAN[] = "a boolean (true/false, 1/0, yes/no, on/off)";

/* The value as a boolean in *out; NULL, or what was expected instead. */
static const char *read_bool(const char *value, bool *out) {
    /* The words every SDK takes, around white space; empty is false. */
    static const char *const yes[] = {"1", "true", "yes", "on"};
    static const char *const no[] = {"0", "false", "no", "off", ""};
    const char *text = value;
    while (isspace((unsigned char)*text)) {
        text++;
    }
    size_t len = strlen(text);
    while (len > 0 && isspace((unsigned char)text[len - 1])) {
        len--;
    }
    *out = one_of(text, len, yes, sizeof yes / sizeof *yes);
    return *out || one_of(text, len, no, sizeof no / sizeof *no) ? NULL : BOOLEAN;
}

long long loadhost_env_int(const char *key, long long fallback) {
    const char *value = getenv(key);
    long long parsed;
    const char *expected = value ? read_int(value, &parsed) : NULL;
    if (!value || expected) {
        if (expected) {
            bad_value(key, value, expected);
        }
        return fallback;
    }
    return parsed;
}

double loadhost_env_double(const char *key, double fallback) {
    const char *value = getenv(key);
    double parsed;
    const char *expected = value ? read_double(value, &parsed) : NULL;
    if (!value || expected) {
        if (expected) {
            bad_value(key, value, expected);
        }
        return fallback;
    }
    return parsed;
}

bool loadhost_env_bool(const char *key, bool fallback) {
    const char *value = getenv(key);
    bool parsed;
    const char *expected = value ? read_bool(value, &parsed) : NULL;
    if (!value || expected) {
        if (expected) {
            bad_value(key, value, expected);
        }
        return fallback;
    }
    return parsed;
}

/* ---- Options ----------------------------------------------------------------------------- */

/* One option LOADHOST_OPTION declared, as the SDK needs it (the host checked the rest). */
typedef struct {
    char *name;
    char type[9];
    bool required;
    char *fallback; /* the default; NULL when there is none */
    char *help;
} declared_option;

/* The most options a plugin declares (the host refuses more). */
#define MAX_OPTIONS 256
static declared_option options[MAX_OPTIONS];
static size_t option_count;

static const char DURATION[] = "a duration such as 500ms, 5s, 1.5m, 2h or 1m30s";
static const char URL[] = "an absolute URL such as http://127.0.0.1:8080/";

static const char *skip_blank(const char *p) {
    while (*p == ' ' || *p == '\t') {
        p++;
    }
    return p;
}

/* The text inside the quotes at `p` (a malloc'd copy in *out) and where it ends; NULL when the
 * quote is not closed. */
static const char *quoted(const char *p, char **out) {
    const char *end = strchr(p + 1, *p);
    if (!end) {
        return NULL;
    }
    *out = strndup(p + 1, (size_t)(end - p - 1));
    return end + 1;
}

/* Keep `line`, a `NAME:TYPE[!][=DEFAULT] [HELP]` declaration, for loadhost_option* to read by; a
 * line that does not read is left out (the host refuses the plugin, naming it, before any load). */
void loadhost__declare_option(const char *line) {
    declared_option o = {0};
    const char *name = skip_blank(line);
    const char *p = name;
    const char *colon = strchr(p, ':');
    if (option_count == MAX_OPTIONS || !colon) {
        return;
    }
    const char *name_end = colon;
    while (name_end > name && (name_end[-1] == ' ' || name_end[-1] == '\t')) {
        name_end--;
    }
    p = skip_blank(colon + 1);
    size_t n = 0;
    while (isalpha((unsigned char)p[n])) {
        n++;
    }
    if (n == 0 || n >= sizeof o.type) {
        return;
    }
    memcpy(o.type, p, n);
    p = skip_blank(p + n);
    if (*p == '!') {
        o.required = true;
        p = skip_blank(p + 1);
    }
    if (*p == '=') {
        p = skip_blank(p + 1);
        if (*p == '"' || *p == '\'') {
            p = quoted(p, &o.fallback);
        } else {
            size_t word = strcspn(p, " \t");
            o.fallback = strndup(p, word);
            p += word;
        }
        p = p ? skip_blank(p) : NULL;
    }
    if (p && (*p == '"' || *p == '\'')) {
        quoted(p, &o.help);
    }
    o.name = strndup(name, (size_t)(name_end - name));
    if (!o.help) {
        o.help = strdup("");
    }
    options[option_count++] = o;
}

/* The declared option `name`, if its type is one of `types` (NULL: any); otherwise the call
 * (`loadhost_option_int("PAUSE")`) is remembered as the task's failure, naming the mistake. */
static const declared_option *declared(const char *function, const char *name, const char *const *types) {
    for (size_t i = 0; name && i < option_count; i++) {
        if (strcmp(options[i].name, name) != 0) {
            continue;
        }
        for (size_t t = 0; types && types[t]; t++) {
            if (strcmp(types[t], options[i].type) == 0) {
                return &options[i];
            }
        }
        if (!types) {
            return &options[i];
        }
        remember(&bad_call, loadhost_format("%s(\"%s\"): %s is declared %s, which %s does not read", function, name,
                                            name, options[i].type, function));
        return NULL;
    }
    remember(&bad_call, loadhost_format("%s(\"%s\"): no option of that name is declared with LOADHOST_OPTION",
                                        function, name ? name : "NULL"));
    return NULL;
}

/* The option's text: the value given, else its default; NULL when neither (a required option
 * missing is remembered as the call's bad setting, which aborts the run). */
static const char *option_text(const declared_option *o) {
    const char *value = getenv(o->name);
    if (value) {
        return value;
    }
    if (o->required) {
        remember(&bad_setting, loadhost_format("-e %s is required (%s%s%s)", o->name, o->type, *o->help ? ": " : "",
                                               o->help));
    }
    return o->fallback;
}

/* Milliseconds in a duration as loadhost's flags take it (`500ms`, `1.5m`, `1m30s`); NULL, or
 * what was expected instead. */
static const char *read_ms(const char *value, double *out) {
    const char *p = value;
    while (isspace((unsigned char)*p)) {
        p++;
    }
    double ms = 0;
    bool any = false;
    while (*p && !isspace((unsigned char)*p)) {
        size_t digits = strspn(p, "0123456789.");
        char number[64];
        if (digits == 0 || digits >= sizeof number) {
            return DURATION;
        }
        memcpy(number, p, digits);
        number[digits] = '\0';
        char *end;
        double value_of = strtod(number, &end);
        if (*end != '\0' || strchr(number, '.') != strrchr(number, '.')) {
            return DURATION;
        }
        p += digits;
        size_t unit = strcspn(p, "0123456789. \t\r\n");
        double scale = unit == 2 && strncmp(p, "ms", 2) == 0 ? 1
                       : unit == 1 && *p == 's'              ? 1e3
                       : unit == 1 && *p == 'm'              ? 6e4
                       : unit == 1 && *p == 'h'              ? 3.6e6
                                                             : 0;
        if (scale == 0) {
            return DURATION;
        }
        ms += value_of * scale;
        p += unit;
        any = true;
    }
    *out = ms;
    return any && only_space(p) && isfinite(ms) && ms <= 1e12 ? NULL : DURATION;
}

/* Whether the value is `SCHEME://HOST…` without white space. */
static bool is_url(const char *value) {
    while (isspace((unsigned char)*value)) {
        value++;
    }
    const char *sep = strstr(value, "://");
    if (!sep || sep == value || !isalpha((unsigned char)*value)) {
        return false;
    }
    for (const char *c = value; c < sep; c++) {
        if (!isalnum((unsigned char)*c) && !strchr("+-.", *c)) {
            return false;
        }
    }
    const char *host = sep + 3;
    const char *end = host;
    while (*end && !isspace((unsigned char)*end)) {
        end++;
    }
    return host[0] && !strchr("/?#", host[0]) && only_space(end);
}

const char *loadhost_option(const char *name) {
    const declared_option *o = declared("loadhost_option", name, NULL);
    const char *text = o ? option_text(o) : NULL;
    if (!text || strcmp(o->type, "string") == 0) {
        return text;
    }
    /* Any other type is read by its own rules, so a value of the wrong type never passes. */
    long long i;
    double d;
    bool b;
    const char *expected = strcmp(o->type, "int") == 0        ? read_int(text, &i)
                           : strcmp(o->type, "float") == 0    ? read_double(text, &d)
                           : strcmp(o->type, "bool") == 0     ? read_bool(text, &b)
                           : strcmp(o->type, "duration") == 0 ? read_ms(text, &d)
                           : is_url(text)                     ? NULL
                                                              : URL;
    if (expected) {
        bad_value(o->name, text, expected);
    }
    return text;
}

long long loadhost_option_int(const char *name) {
    static const char *const types[] = {"int", NULL};
    const declared_option *o = declared("loadhost_option_int", name, types);
    const char *text = o ? option_text(o) : NULL;
    long long value = 0;
    const char *expected = text ? read_int(text, &value) : NULL;
    if (expected) {
        bad_value(o->name, text, expected);
        return 0;
    }
    return value;
}

double loadhost_option_double(const char *name) {
    static const char *const types[] = {"float", "int", NULL};
    const declared_option *o = declared("loadhost_option_double", name, types);
    const char *text = o ? option_text(o) : NULL;
    double value = 0;
    const char *expected = text ? read_double(text, &value) : NULL;
    if (expected) {
        bad_value(o->name, text, expected);
        return 0;
    }
    return value;
}

bool loadhost_option_bool(const char *name) {
    static const char *const types[] = {"bool", NULL};
    const declared_option *o = declared("loadhost_option_bool", name, types);
    const char *text = o ? option_text(o) : NULL;
    bool value = false;
    const char *expected = text ? read_bool(text, &value) : NULL;
    if (expected) {
        bad_value(o->name, text, expected);
        return false;
    }
    return value;
}

double loadhost_option_ms(const char *name) {
    static const char *const types[] = {"duration", NULL};
    const declared_option *o = declared("loadhost_option_ms", name, types);
    const char *text = o ? option_text(o) : NULL;
    double value = 0;
    const char *expected = text ? read_ms(text, &value) : NULL;
    if (expected) {
        bad_value(o->name, text, expected);
        return 0;
    }
    return value;
}
