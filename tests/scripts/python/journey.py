"""A journey for the Python runner, unbuilt: `loadhost run journey.py` (tests/e2e/runner_python.rs).

One GET of the target per task, a check on its status, and a counter tagged with a name that
comes from `steps.py`, a module of this folder. `MODE=fail` makes every task fail inside
`steps.py`; `MODE=missing` imports a module the runner does not have.
"""

import functools

import steps
from loadhost import Failed, check, counter, env, http


@functools.cache
def target() -> str:
    return env("TARGET_URL", "http://127.0.0.1:8080/")


def setup(options: str) -> str:
    print(f"setup: {steps.GREETING}")
    return steps.STEP


def do_task(task) -> None:
    mode = env("MODE", "get")
    if mode == "fail":
        steps.lookup("absent")
    if mode == "missing":
        import numpy  # noqa: F401 (the runner has no numpy: this fails the task)
    response = http.get(target(), discard_body=True)
    if not check("status is 200", response.status == 200):
        raise Failed(f"GET {target()} answered {response.status}")
    counter("steps", 1, {"step": steps.STEP})
