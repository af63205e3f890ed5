"""Locust's API on loadhost's Python runner, written for loadhost (no Locust code in it), so a
locustfile runs unchanged with `loadhost run locustfile.py -w USERS -d TIME`.

Each loadhost worker is one Locust user; each call of `do_task` is one turn of the user's loop
(the task, then its `wait_time` on the host's timer); the host sends the requests, so they are in
loadhost's HTTP metrics (`http_reqs`, `http_req_failed`, per endpoint with `name=`). What maps and
what differs: docs/migrating.md, "From Locust".
"""

# Every module of the layer is imported here, while the runner is built: only what the build
# imports is in the component.
from . import _adapt, clients, exception, runners, wait_time
from .contrib import fasthttp
from .event import events
from .shape import LoadTestShape
from .user import FastHttpUser, HttpUser, SequentialTaskSet, TaskSet, User, tag, task
from .wait_time import between, constant, constant_pacing, constant_throughput, poisson

__version__ = "2.47.0+loadhost"


def run_single_user(*args, **kwargs):
    raise NotImplementedError("run_single_user is Locust's debugger: run the file with `loadhost run` instead")


__all__ = (
    "FastHttpUser",
    "HttpUser",
    "LoadTestShape",
    "SequentialTaskSet",
    "TaskSet",
    "User",
    "between",
    "constant",
    "constant_pacing",
    "constant_throughput",
    "events",
    "exception",
    "poisson",
    "run_single_user",
    "tag",
    "task",
    "wait_time",
)
