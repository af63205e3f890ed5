"""One `GET $TARGET_URL` per task (default `http://127.0.0.1:8080/`), with a check that the status
is 200. A 5xx is a retryable failure, any other non-200 a failure; a denied or broken request is
retryable. The host records `http_reqs`, `http_req_duration` and the rest by itself. Only the
status is read, so neither the headers nor the body are brought into the plugin.
"""

import functools

from loadhost import Failed, Retryable, Task, check, declare_metrics, declare_options, env, http

declare_metrics("status is 200:check")
declare_options('TARGET_URL:url=http://127.0.0.1:8080/ "the page to GET"')


@functools.cache
def target_url() -> str:
    """TARGET_URL, read once per instance (at the first task: the environment is not there at build time)."""
    return env("TARGET_URL")


def do_task(task: Task) -> None:
    """GET the target once and judge its status."""
    url = target_url()
    try:
        response = http.get(url, discard_headers=True, discard_body=True)
    except http.HttpError as err:
        raise Retryable(str(err)) from None
    if check("status is 200", response.status == 200):
        return
    if response.status >= 500:
        raise Retryable(f"GET {url} answered {response.status}")
    raise Failed(f"GET {url} answered {response.status}")
