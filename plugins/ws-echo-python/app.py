"""A WebSocket echo workload: one connection per worker, opened on its first task and kept for the
later ones (a module global is per-worker state: each worker is its own instance).

Each task sends MESSAGES text messages (default 10) `w{worker}-i{iteration}-m{k}`, k from 0, to
TARGET_URL (default `ws://127.0.0.1:8080/ws/echo`, the built-in target's echo), and after each one
receives one message and checks that it is what was sent (`echo matches`). A mismatch fails the
task (the connection is kept); any other error (a network error, a closed connection, a timeout,
too many connections, a message over the cap) forgets the connection, so the next task reconnects,
and is retryable, except a denied host or a bad URL, which fail the task. The host records `ws_sessions`,
`ws_msgs_sent`, `ws_msgs_received` and the rest by itself. The JS and C versions behave the same.
"""

import functools

from loadhost import Failed, Retryable, Task, check, declare_metrics, declare_options, env, ws

declare_metrics("echo matches:check")
declare_options(
    'TARGET_URL:url=ws://127.0.0.1:8080/ws/echo "the WebSocket echo server"',
    'MESSAGES:int=10 "messages sent and awaited per task"',
)

# Seconds: long enough for a loaded target, short of the host's 60 s task timeout.
CONNECT_TIMEOUT = 10.0
RECEIVE_TIMEOUT = 10.0

# This worker's connection, None until the first task opens it or after an error forgot it.
_conn = None


@functools.cache
def settings():
    """TARGET_URL and MESSAGES, read once per instance (the environment is not there at build time)."""
    return env("TARGET_URL"), env("MESSAGES")


def _forget() -> None:
    """Drop the connection, so that the next task opens a new one."""
    global _conn
    conn, _conn = _conn, None
    if conn is not None:
        conn.drop()


def _outcome(err: ws.WebSocketError) -> Exception:
    """The task error for a WebSocket error: a denied host (its message says "denied") or a bad URL
    will not get better; the rest may on a new connection (as the Rust ws-echo decides)."""
    if isinstance(err, (ws.Denied, ws.InvalidRequest)):
        return Failed(str(err))
    return Retryable(str(err))


def do_task(task: Task) -> None:
    """Send the task's messages on the worker's connection and check each echo."""
    global _conn
    url, messages = settings()
    if _conn is None:
        try:
            _conn = ws.connect(url, timeout=CONNECT_TIMEOUT)
        except ws.WebSocketError as err:
            raise _outcome(err) from None
    for k in range(messages):
        text = f"w{task.worker_id}-i{task.iteration}-m{k}"
        try:
            _conn.send_text(text)
            echoed = _conn.receive(timeout=RECEIVE_TIMEOUT)
        except ws.WebSocketError as err:
            _forget()
            raise _outcome(err) from None
        if isinstance(echoed, ws.Close):
            _forget()
            why = f"{echoed.code} {echoed.reason}" if echoed.reason else f"{echoed.code}"
            raise Retryable(f"the server closed the connection ({why})")
        if not check("echo matches", echoed == text):
            raise Failed(f"sent {text!r}, received {echoed!r}")
