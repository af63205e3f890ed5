/*
 * A WebSocket echo workload: one connection per worker, opened on its first task and kept for the
 * later ones (a global is per-worker state: each worker is its own instance).
 *
 * Each task sends MESSAGES text messages (default 10) `w{worker}-i{iteration}-m{k}`, k from 0, to
 * TARGET_URL (default ws://127.0.0.1:8080/ws/echo, the built-in target's echo), and after each one
 * receives one message and checks that it is what was sent (`echo matches`). A mismatch fails the
 * task (the connection is kept); any other error (a network error, a closed connection, a timeout,
 * too many connections, a message over the cap) forgets the connection, so the next task
 * reconnects, and is retryable, except a denied host or a bad URL, which fail the task. The host
 * records ws_sessions, ws_msgs_sent, ws_msgs_received and the rest by itself. The Python and JS
 * versions behave the same.
 */
#include "loadhost.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

LOADHOST_METRIC("echo matches:check");
LOADHOST_OPTION("TARGET_URL:url=ws://127.0.0.1:8080/ws/echo 'the WebSocket echo server'");
LOADHOST_OPTION("MESSAGES:int=10 'messages sent and awaited per task'");

/* Milliseconds: long enough for a loaded target, short of the host's 60 s task timeout. */
#define CONNECT_TIMEOUT_MS 10000
#define RECEIVE_TIMEOUT_MS 10000

/* This worker's connection, NULL until the first task opens it or after an error forgot it. */
static loadhost_ws *conn;

/* Drop the connection, so that the next task opens a new one. */
static void forget(void) {
    loadhost_ws_drop(conn);
    conn = NULL;
}

/* The task's outcome for a WebSocket error (frees `error`): a denied host (its message says
 * "denied") or a bad URL will not get better; the rest may on a new connection (as the Rust
 * ws-echo decides). */
static loadhost_result outcome(loadhost_ws_status status, char *error) {
    loadhost_result result;
    if (status == LOADHOST_WS_DENIED || status == LOADHOST_WS_INVALID_REQUEST) {
        result = loadhost_failed("%s", error ? error : "WebSocket error");
    } else {
        result = loadhost_retryable("%s", error ? error : "WebSocket error");
    }
    free(error);
    return result;
}

loadhost_result loadhost_do_task(const loadhost_task *task) {
    /* Read once per instance: the environment does not change during a run. */
    static const char *url;
    static long long messages;
    if (!url) {
        url = loadhost_option("TARGET_URL");
        messages = loadhost_option_int("MESSAGES");
    }

    char *error = NULL;
    loadhost_ws_status status;
    if (!conn) {
        status = loadhost_ws_connect(url, NULL, 0, CONNECT_TIMEOUT_MS, &conn, &error);
        if (status != LOADHOST_WS_OK) {
            return outcome(status, error);
        }
    }
    for (long long k = 0; k < messages; k++) {
        char sent[96];
        snprintf(sent, sizeof sent, "w%" PRIu32 "-i%" PRIu64 "-m%lld", task->worker_id,
                 task->iteration, k);
        loadhost_ws_message echoed;
        status = loadhost_ws_send_text(conn, sent, &error);
        if (status == LOADHOST_WS_OK) {
            status = loadhost_ws_receive(conn, RECEIVE_TIMEOUT_MS, &echoed, &error);
        }
        if (status != LOADHOST_WS_OK) {
            forget();
            return outcome(status, error);
        }
        loadhost_result result = LOADHOST_OK;
        if (echoed.kind == LOADHOST_WS_CLOSE) {
            forget();
            result = echoed.close_reason[0]
                         ? loadhost_retryable("the server closed the connection (%u %s)",
                                              echoed.close_code, echoed.close_reason)
                         : loadhost_retryable("the server closed the connection (%u)",
                                              echoed.close_code);
        } else {
            bool same = echoed.kind == LOADHOST_WS_TEXT && echoed.len == strlen(sent) &&
                        memcmp(echoed.data, sent, echoed.len) == 0;
            if (!loadhost_check("echo matches", same, LOADHOST_NO_TAGS)) {
                const char *received = (const char *)echoed.data;
                result = echoed.kind == LOADHOST_WS_TEXT
                             ? loadhost_failed("sent '%s', received '%s'", sent, received)
                             : loadhost_failed("sent '%s', received %zu bytes", sent, echoed.len);
            }
        }
        loadhost_ws_message_free(&echoed);
        if (result != LOADHOST_OK) {
            return result;
        }
    }
    return LOADHOST_OK;
}
