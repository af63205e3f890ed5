"""Locust's wait_time functions: each takes the user (or TaskSet) it belongs to and gives seconds."""

import random
import time


def between(min_wait, max_wait):
    """A random wait from `min_wait` to `max_wait` seconds."""
    return lambda instance: min_wait + random.random() * (max_wait - min_wait)


def constant(wait_time):
    """The same wait every time."""
    return lambda instance: wait_time


def constant_pacing(wait_time):
    """Start a task every `wait_time` seconds: the wait is what the task left of it (0 when it took
    longer), counted from the start of the previous wait."""

    def pacing(instance):
        now = time.monotonic()
        last_run = getattr(instance, "_cp_last_run", None)
        last_wait = getattr(instance, "_cp_last_wait", 0.0)
        took = 0.0 if last_run is None else now - last_run - last_wait
        wait = max(0.0, wait_time - took)
        instance._cp_last_run, instance._cp_last_wait = now, wait
        return wait

    return pacing


def constant_throughput(task_runs_per_second):
    """At most `task_runs_per_second` tasks a second for each user."""
    return constant_pacing(1 / task_runs_per_second)


def poisson(lambda_value):
    """Exponentially distributed waits: tasks arrive as a Poisson process of `lambda_value` a second."""
    return lambda instance: random.expovariate(lambda_value)
