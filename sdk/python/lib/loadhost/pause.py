"""Sleeping: think time in a journey, on the host's timer (`loadhost:plugin/pause`).

`sleep(seconds)` waits as Locust's and k6's `sleep` do: the worker's instance waits while other
workers run, and the time slept is in the task's duration, not in any request's. `time.sleep`
would block on WASI's clock instead, which the host does not pace.
"""

import math

from wit_world.imports import pause as _host

_U32_MAX = 0xFFFFFFFF


def sleep(seconds: float) -> None:
    """Wait `seconds` (fractions allowed); a part of a millisecond counts as a whole one."""
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not math.isfinite(seconds) or seconds < 0:
        raise TypeError(f"sleep(seconds): expected a finite number of seconds, at least 0, got {seconds!r}")
    _host.sleep(min(math.ceil(seconds * 1000), _U32_MAX))
