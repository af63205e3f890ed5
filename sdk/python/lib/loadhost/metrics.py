"""Plugin metrics: the host aggregates them per name and tag set and reports them in the summary.

Names and tag keys should be short `snake_case` words. Tags are a dict (`{"route": "/"}`) or a
sequence of `(key, value)` pairs; values that are not strings are converted with `str`.
"""

from wit_world.imports import metrics as _host

# Shared by every call without tags; the host only reads it.
_NO_TAGS: list = []


def _tags(tags) -> list:
    """Tags as the list of string pairs the host takes."""
    if not tags:
        return _NO_TAGS
    pairs = tags.items() if isinstance(tags, dict) else tags
    return [(str(key), str(value)) for key, value in pairs]


def counter(name: str, delta: int = 1, tags=None) -> None:
    """Add `delta` (a non-negative int, default 1) to the counter `name`."""
    _host.counter(name, delta, _tags(tags))


def gauge(name: str, value: float, tags=None) -> None:
    """Set the gauge `name` to `value` (the summary keeps the latest value)."""
    _host.gauge(name, float(value), _tags(tags))


def trend(name: str, value: float, tags=None) -> None:
    """Record one value of the trend `name` (the summary shows min, mean, percentiles and max)."""
    _host.trend(name, float(value), _tags(tags))


def check(name: str, ok, tags=None) -> bool:
    """Record a pass or a fail of the check `name`, and return `ok` as a bool to use inline:
    `if not check("status is 200", response.status == 200): ...`."""
    return _host.check(name, bool(ok), _tags(tags))
