"""Locust's LoadTestShape, turned into loadhost's stages before the run.

Locust calls a shape's `tick()` once a second while the test runs and moves the users to what it
returns, at its spawn rate; `None` ends the test. loadhost plans its load before the run, so the
ticks are taken ahead of time on a simulated clock: `get_run_time()` reads it, and
`get_current_user_count()` the users the ramps have reached by then. As in Locust, a tick that
changes the users waits for the ramp to finish before the next one is taken (Locust's `start()`
blocks until every user is spawned). A shape that reads the wall clock itself, or the users'
own state, cannot be planned this way; docs/migrating.md says so.
"""

import json
import time

# How far ahead the ticks are taken: a shape that has not ended by then is refused (a run lasts
# a set time; Locust's would run until stopped).
HORIZON_S = 24 * 3600

# Locust's ticks come a little after each whole second (its own work between them), so a shape
# that tests `run_time > 6` ends at its tick of second 6: the simulated clock reads each tick this
# late too (measured: Locust 2.47 ticked 1-9 ms late).
TICK_LAG_S = 0.001


class ShapeError(RuntimeError):
    """A shape that cannot be planned; the message says why."""


class LoadTestShape:
    abstract = True
    runner = None
    use_common_options = False

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if "abstract" not in cls.__dict__:
            cls.abstract = False

    def __init__(self):
        self.start_time = time.perf_counter()

    def reset_time(self):
        self.start_time = time.perf_counter()

    def get_run_time(self):
        return time.perf_counter() - self.start_time

    def get_current_user_count(self):
        return self.runner.user_count

    def tick(self):
        return None


class _Runner:
    """What a shape may read of Locust's runner while its ticks are taken."""

    def __init__(self, environment):
        self.environment = environment
        self.user_count = 0


def plan(shape_class, environment):
    """The shape's load as JSON in k6's options shape: `vus` 0 (Locust starts with no users) and
    `stages` ramping to each tick's users at its spawn rate, ending where a tick returns None."""
    shape = shape_class()
    clock = [0.0]
    shape.get_run_time = lambda: clock[0] + TICK_LAG_S
    shape.runner = runner = _Runner(environment)
    # Each stage as [seconds, users, whether it holds a level]: consecutive holds at one level
    # become one stage.
    stages = []

    def hold(seconds, users):
        if seconds < 0.001:
            return
        if stages and stages[-1][2] and stages[-1][1] == users:
            stages[-1][0] += seconds
        else:
            stages.append([seconds, users, True])

    last = None
    while True:
        if clock[0] > HORIZON_S:
            raise ShapeError(
                f"{shape_class.__name__}.tick() did not return None within {HORIZON_S // 3600} h of run time: "
                "a run lasts a set time (give one with -d)"
            )
        current = shape.tick()
        if current is None:
            break
        step = 1.0
        if current != last:
            users, rate = _users_and_rate(shape_class, current)
            last = current
            if users != runner.user_count:
                # At least a millisecond: a stage takes time (a jump is the quickest ramp there is).
                ramp = max(abs(users - runner.user_count) / rate, 0.001)
                stages.append([ramp, users, False])
                runner.user_count = users
                # The next tick comes once the ramp is done, and a second after this one at the soonest.
                step = max(step, ramp)
                hold(step - ramp, users)
            else:
                hold(step, users)
        else:
            hold(step, runner.user_count)
        clock[0] += step
    if not stages:
        raise ShapeError(f"{shape_class.__name__}.tick() returned None at once: there is no load to run")
    stages = [{"duration": f"{round(seconds * 1000)}ms", "target": users} for seconds, users, _ in stages]
    return json.dumps({"vus": 0, "stages": stages})


def _users_and_rate(shape_class, current):
    """A tick's (users, spawn rate); user classes per tick are not planned."""
    name = shape_class.__name__
    if not isinstance(current, tuple) or len(current) not in (2, 3):
        raise ShapeError(f"{name}.tick() returned {current!r}: expected (users, spawn_rate) or None")
    if len(current) == 3 and current[2] is not None:
        raise ShapeError(
            f"{name}.tick() names user classes per tick, which loadhost does not run yet: "
            "give every tick's users without them"
        )
    users, rate = current[0], current[1]
    # A whole float is a count too: `round(run_time, -1)` gives one.
    whole = isinstance(users, int) or (isinstance(users, float) and users.is_integer())
    if isinstance(users, bool) or not whole or users < 0:
        raise ShapeError(f"{name}.tick() returned {users!r} users: expected a whole number ≥ 0")
    # As Locust, which refuses a spawn rate of 0 or less.
    if not isinstance(rate, (int, float)) or isinstance(rate, bool) or not rate > 0 or rate == float("inf"):
        raise ShapeError(f"{name}.tick() returned a spawn rate of {rate!r}: expected a number above 0")
    return int(users), float(rate)
