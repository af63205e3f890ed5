"""Locust's users and task sets, run one task per loadhost task.

Locust runs each user as a loop (on_start, then pick a task, run it, wait, again) on a greenlet.
loadhost's worker is the user, and one call of `do_task` is one turn of that loop: the task, then
its wait (`wait_time`, on the host's timer, as `sleep`). The loop's state between calls (the
nested TaskSets under way, a SequentialTaskSet's place) lives in the worker's `Runner`.
"""

import random
import time

from .clients import HttpSession
from .exception import InterruptTaskSet, RescheduleTask, RescheduleTaskImmediately, StopUser


def task(weight=1):
    """`@task` or `@task(weight)`: a method (or a nested TaskSet class) is a task, picked `weight`
    times as often as a task of weight 1."""

    def mark(function):
        function.locust_task_weight = weight
        return function

    if callable(weight):
        function, weight = weight, 1
        return mark(function)
    return mark


def tag(*tags):
    """`@tag("a", "b")`: the task runs only under `-e LOCUST_TAGS=a` (Locust's `--tags`) and not
    under `-e LOCUST_EXCLUDE_TAGS=a`."""
    if not tags or callable(tags[0]):
        raise ValueError("No tag name was supplied")

    def mark(item):
        if "locust_tag_set" not in getattr(item, "__dict__", {}):
            item.locust_tag_set = set()
        item.locust_tag_set |= set(tags)
        return item

    return mark


def _collect(cls):
    """The class's tasks with each repeated by its weight: its bases' first, then its `tasks`
    (a list of callables or TaskSets, `(task, weight)` pairs, or a dict), then its `@task`s in the
    order they are written."""
    found = []
    for base in cls.__bases__:
        found += list(getattr(base, "tasks", None) or [])
    own = cls.__dict__.get("tasks")
    if own:
        for item in own.items() if isinstance(own, dict) else own:
            if isinstance(item, tuple):
                found += [item[0]] * item[1]
            else:
                found.append(item)
    for value in cls.__dict__.values():
        weight = getattr(value, "locust_task_weight", None)
        if weight is not None:
            found += [value] * weight
    return found


class TaskSet:
    """Tasks run together: a user that picks a TaskSet runs its tasks (its `wait_time` if it has
    one, else the user's) until one calls `self.interrupt()`."""

    tasks = []
    wait_time = None

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        cls.tasks = _collect(cls)

    def __init__(self, parent):
        self.parent = parent
        self.user = parent if isinstance(parent, User) else parent.user
        self._cp_last_run = time.monotonic()
        self._queue = []

    @property
    def client(self):
        return self.user.client

    @property
    def environment(self):
        return self.user.environment

    def on_start(self):
        pass

    def on_stop(self):
        pass

    def interrupt(self, reschedule=True):
        raise InterruptTaskSet(reschedule)

    def schedule_task(self, task_callable, first=False):
        if first:
            self._queue.insert(0, task_callable)
        else:
            self._queue.append(task_callable)

    def get_next_task(self):
        if not self.tasks:
            raise Exception(f"No tasks defined on {type(self).__name__}: use @task or set tasks")
        return random.choice(self.tasks)

    def _next(self):
        return self._queue.pop(0) if self._queue else self.get_next_task()

    def _wait_seconds(self):
        # A TaskSet's own wait_time wins; without one, its user's.
        if type(self).wait_time is not None:
            return self.wait_time()
        return self.user._wait_seconds()


class SequentialTaskSet(TaskSet):
    """Tasks run in the order written (a weight repeats a task), over and over."""

    def __init__(self, parent):
        super().__init__(parent)
        self._index = 0

    def get_next_task(self):
        if not self.tasks:
            raise Exception(f"No tasks defined on {type(self).__name__}: use @task or set tasks")
        picked = self.tasks[self._index % len(self.tasks)]
        self._index += 1
        return picked


class User:
    """A simulated user: one loadhost worker. `host`, `wait_time`, `tasks` (or `@task` methods),
    `weight` or `fixed_count` among several User classes, `on_start`/`on_stop`."""

    abstract = True
    host = None
    weight = 1
    fixed_count = 0
    tasks = []
    wait_time = None

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if "abstract" not in cls.__dict__:
            cls.abstract = False
        cls.tasks = _collect(cls)

    def __init__(self, environment):
        self.environment = environment
        self._cp_last_run = time.monotonic()

    def on_start(self):
        pass

    def on_stop(self):
        pass

    def _next(self):
        if not self.tasks:
            raise Exception(
                f"No tasks defined on {type(self).__name__}: use the @task decorator or set the 'tasks' "
                "attribute of the User (or mark it abstract = True)"
            )
        return random.choice(self.tasks)

    def _wait_seconds(self):
        if type(self).wait_time is None:
            return 0.0
        return self.wait_time()

    def context(self):
        return {}


class HttpUser(User):
    """A user with `self.client`, a requests-like session to its `host`."""

    abstract = True

    def __init__(self, environment):
        super().__init__(environment)
        self.client = HttpSession(environment.host or self.host, environment.events.request, self)


class FastHttpUser(HttpUser):
    """Locust's geventhttpclient user: the same client here (the host's, whichever Locust used)."""

    abstract = True


class Runner:
    """One worker's user and where its loop is: the TaskSets under way, innermost last."""

    def __init__(self, user):
        self.user = user
        self.started = False
        self.stopped = False
        self.stack = []

    def turn(self, sleep):
        """One turn of the user's loop: start it if new, run one task, then wait. Returns the
        exception a task raised that Locust would log (after the wait), or None."""
        if self.stopped:
            # A stopped user runs nothing; its worker idles a second per call until the run ends.
            sleep(1.0)
            return None
        wait = True
        error = None
        try:
            if not self.started:
                self.started = True
                self.user.on_start()
            holder = self._holder()
            picked = holder._next()
            while isinstance(picked, type) and issubclass(picked, TaskSet):
                nested = picked(holder)
                self._enter(nested)
                self.stack.append(nested)
                holder = nested
                picked = holder._next()
            # A bound method runs as it is; a function is given the user or task set holding it.
            if getattr(picked, "__self__", None) is None:
                picked(holder)
            else:
                picked()
        except InterruptTaskSet as interrupt:
            wait = not interrupt.reschedule
            self._leave()
        except RescheduleTaskImmediately:
            wait = False
        except RescheduleTask:
            pass
        except StopUser:
            self._stop()
            return None
        except Exception as err:  # Locust logs it and goes on after the wait
            error = err
        if wait:
            seconds = self._wait_seconds()
            if seconds > 0:
                sleep(seconds)
        return error

    @staticmethod
    def _enter(nested):
        """Start a nested TaskSet. It is not under way until its `on_start` returns: if that raises,
        its `on_stop` does not run (as in Locust), and an `interrupt()` there only reschedules."""
        try:
            nested.on_start()
        except InterruptTaskSet as interrupt:
            raise RescheduleTaskImmediately() if interrupt.reschedule else RescheduleTask() from None

    def _holder(self):
        return self.stack[-1] if self.stack else self.user

    def _leave(self):
        if self.stack:
            leaving = self.stack.pop()
            leaving.on_stop()

    def _wait_seconds(self):
        holder = self._holder()
        if holder is self.user:
            return self.user._wait_seconds()
        return holder._wait_seconds()

    def _stop(self):
        self.stopped = True
        while self.stack:
            self._leave()
        self.user.on_stop()

