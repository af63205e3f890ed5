"""__NAME__: a loadhost workload plugin. Each task is one call of do_task.

This one makes one `GET $TARGET_URL` per task (default `http://127.0.0.1:8080/`) and checks that the
status is 200: a 5xx is a retryable failure, any other status a failure, and a request that got no
response (refused, denied by --allow-host, timed out) is retryable. The host records `http_reqs`,
`http_req_duration` and the rest by itself.
"""

import functools

from loadhost import Failed, Retryable, Task, check, declare_metrics, declare_options, env, http

# The metrics it records, for `loadhost inspect` and for thresholds without `--metric`.
declare_metrics("status is 200:check")

# The settings it reads (`loadhost run -e NAME=VALUE`), each with a type, a default or `!`
# (required) and a help: `loadhost inspect` lists them, `loadhost run` checks -e against them
# before any load, and `env(NAME)` reads each typed, its default from here.
declare_options('TARGET_URL:url=http://127.0.0.1:8080/ "the page to GET"')


@functools.cache
def target_url() -> str:
    """TARGET_URL, read once per worker at its first task (the environment is not there at build time)."""
    return env("TARGET_URL")


def do_task(task: Task) -> None:
    """One task: GET the target and judge its status. Return to pass; raise to fail."""
    url = target_url()
    try:
        response = http.get(url, timeout=10)
    except http.HttpError as err:
        raise Retryable(str(err)) from None
    if check("status is 200", response.status == 200):
        return
    if response.status >= 500:
        raise Retryable(f"GET {url} answered {response.status}")
    raise Failed(f"GET {url} answered {response.status}")
