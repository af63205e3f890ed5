"""Write loadhost workload plugins in Python.

A plugin is a module `app.py` with one function; the host decides when and how often tasks run,
the plugin only says what one task does:

    from loadhost import Task, counter

    def do_task(task: Task) -> None:
        counter("greetings", 1, {"scenario": task.scenario})

Returning passes the task; raising `Retryable`, `Failed` or `Abort` gives the other outcomes.
`app.py` may also define the optional lifecycle: `setup(options) -> str`, `init(worker_id,
setup_data)` and `teardown(setup_data)` (raise any exception to fail them).
Build with `build.sh PLUGIN_DIR OUT.wasm`; each worker is its own instance of the plugin, so module
globals hold per-worker state without locking.

Layout:
- `errors`: TaskError and its cases Retryable, Failed, Abort (and ConfigError, an Abort).
- `metrics`: counter, gauge, trend and check, aggregated by the host, and declare_metrics; group
  (`with group("checkout"):`), k6's steps, timed as `group_duration`.
- `http`: get/post/put/delete/request over the host's pooled client (redirects, cookies and
  decompression by the host, as a browser does).
- `cookies`: get/set/clear the worker's cookie jar.
- `ws`: WebSocket connections (`ws.connect(url)`), owned by the host, kept across tasks if wanted.
- `grpc`: gRPC unary calls (`grpc.call(target, method, message)`) and streams, protobuf bytes in
  and out.
- `pause`: `sleep(seconds)`, think time on the host's timer (k6's and Locust's `sleep`).
- `config`: `env(key, default)`, the settings passed with `loadhost run -e KEY=VALUE`.
- `options`: `declare_options(...)`, the settings the plugin reads, each with a type, a default or
  `!` (required) and a help, for `loadhost inspect` and `loadhost run`'s checks; `env(key)` then
  reads each typed, with its declared default.
"""

from wit_world.imports.types import Task

from . import config, cookies, grpc, http, metrics, options, pause, ws
from .config import env
from .errors import Abort, ConfigError, Failed, Retryable, TaskError
from .metrics import check, counter, current_group, declare_metrics, gauge, group, trend
from .options import declare_options
from .pause import sleep

__all__ = [
    "Task",
    "TaskError",
    "Retryable",
    "Failed",
    "Abort",
    "ConfigError",
    "env",
    "counter",
    "gauge",
    "trend",
    "check",
    "group",
    "current_group",
    "declare_metrics",
    "declare_options",
    "sleep",
    "config",
    "cookies",
    "grpc",
    "http",
    "metrics",
    "options",
    "ws",
]
