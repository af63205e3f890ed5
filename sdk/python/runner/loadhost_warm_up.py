"""A script the runner loads while it is built (loadhost_runner._warm_up), as a worker loads a
user's: it is not in the runner afterwards."""

import functools

from loadhost import Failed, check, env, http


@functools.cache
def target() -> str:
    return env("TARGET_URL", "http://127.0.0.1:8080/")


def do_task(task) -> None:
    response = http.get(target())
    if not check("status is 200", response.status == 200):
        raise Failed(f"GET {target()} answered {response.status}")
