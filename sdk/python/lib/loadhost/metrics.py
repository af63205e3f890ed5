"""Plugin metrics: the host aggregates them per name and tag set and reports them in the summary.

Names and tag keys should be short `snake_case` words. Tags are a dict (`{"route": "/"}`) or a
sequence of `(key, value)` pairs; values that are numbers or bools are converted with `str`.

Each call checks its arguments, because the host can only drop a sample it cannot use (a `nan`
trend, a counter of 2.5) and a threshold on that metric would then pass on no samples at all. A
wrong argument raises `TypeError` (wrong type) or `ValueError` (wrong value) naming the call:
`metrics.trend('t', '6.4ms'): value must be a finite number, got str '6.4ms'`; uncaught, it fails
the task with that text.

`declare_metrics("journey_ms:trend", "orders{tier}:counter")`, once at the top level of app.py,
states the metrics the plugin records: `loadhost inspect` lists them, and a threshold on one needs
no `--metric`.

`group("checkout")` (k6's steps) names a block of a task, as a context manager (`with
group("checkout"): ...`) or a decorator (`@group("checkout")`): its time goes to the trend
`group_duration` (ms) tagged `group` with the group's path, `::checkout`, or `::checkout::pay`
for `pay` inside it; the checks made inside carry the path as their `group` tag. A threshold such
as `group_duration{group:::checkout}:p(95)<500` needs no declaration.
"""

import contextlib
import math
import time

from wit_world.imports import metrics as _host

# Shared by every call without tags; the host only reads it.
_NO_TAGS: list = []

_U64_LIMIT = 2**64


def _show(value) -> str:
    """`str 'x'`, `float nan`: the type and the value, as the error messages put them."""
    return f"{type(value).__name__} {value!r}"


def _call(kind: str, name, value) -> str:
    """How a message names the call: `metrics.trend('t', '6.4ms')`."""
    return f"metrics.{kind}({name!r}, {value!r})"


def _check_name(kind: str, name, value) -> None:
    if type(name) is not str:
        raise TypeError(f"{_call(kind, name, value)}: name must be a non-empty string, got {_show(name)}")
    if not name:
        raise ValueError(f"{_call(kind, name, value)}: name must be a non-empty string, got ''")


def _number(kind: str, name, value) -> float:
    """`value` as a finite float, or the error naming the call."""
    # float and int first: the common case costs two type checks.
    if type(value) is float or (type(value) is int and abs(value) < 2**1023):
        number = float(value)
    elif isinstance(value, bool) or not hasattr(value, "__float__") or isinstance(value, (str, bytes, complex)):
        raise TypeError(f"{_call(kind, name, value)}: value must be a finite number, got {_show(value)}")
    else:  # fractions, decimals and other real numbers
        try:
            number = float(value)
        except (OverflowError, ValueError):
            number = math.inf
    if not math.isfinite(number):
        raise ValueError(f"{_call(kind, name, value)}: value must be a finite number, got {_show(value)}")
    return number


def _tags(kind: str, name, value, tags) -> list:
    """Tags as the list of string pairs the host takes, or the error naming the call."""
    if not tags:
        return _NO_TAGS
    if isinstance(tags, dict):
        pairs = tags.items()
    elif isinstance(tags, (str, bytes)) or not hasattr(tags, "__iter__"):
        raise TypeError(f"{_call(kind, name, value)}: tags must be a dict or (key, value) pairs, got {_show(tags)}")
    else:
        pairs = tags
    out = []
    for pair in pairs:
        try:
            key, tag = pair
        except (TypeError, ValueError):
            raise TypeError(
                f"{_call(kind, name, value)}: tags must be a dict or (key, value) pairs, got the item {_show(pair)}"
            ) from None
        if type(key) is not str or not key:
            raise TypeError(f"{_call(kind, name, value)}: a tag key must be a non-empty string, got {_show(key)}")
        if type(tag) is not str:
            if tag is None or not isinstance(tag, (int, float)):
                raise TypeError(
                    f"{_call(kind, name, value)}: tag {key!r} must be a string (or a number), got {_show(tag)}"
                )
            tag = str(tag)
        out.append((key, tag))
    return out


def counter(name: str, delta: int = 1, tags=None) -> None:
    """Add `delta` (a non-negative int below 2**64, default 1) to the counter `name`."""
    _check_name("counter", name, delta)
    if type(delta) is not int:
        if isinstance(delta, bool) or not isinstance(delta, int):
            raise TypeError(
                f"{_call('counter', name, delta)}: delta must be a non-negative integer, got {_show(delta)}"
            )
        delta = int(delta)
    if not 0 <= delta < _U64_LIMIT:
        raise ValueError(
            f"{_call('counter', name, delta)}: delta must be a non-negative integer below 2**64, got {_show(delta)}"
        )
    _host.counter(name, delta, _tags("counter", name, delta, tags))


def gauge(name: str, value: float, tags=None) -> None:
    """Set the gauge `name` to `value`, a finite number (the summary keeps the latest value)."""
    _check_name("gauge", name, value)
    _host.gauge(name, _number("gauge", name, value), _tags("gauge", name, value, tags))


def trend(name: str, value: float, tags=None) -> None:
    """Record `value`, a finite number, in the trend `name` (the summary shows min, mean,
    percentiles and max)."""
    _check_name("trend", name, value)
    _host.trend(name, _number("trend", name, value), _tags("trend", name, value, tags))


def check(name: str, ok, tags=None) -> bool:
    """Record a pass or a fail of the check `name`, and return `ok` as a bool to use inline:
    `if not check("status is 200", response.status == 200, {"tier": tier}): ...`. Inside a `group`
    the check also carries the group's path as the tag `group` (unless `tags` names one). A
    threshold judges one check, or one tagged case of it: `checks{check:status is 200,tier:gold}`."""
    _check_name("check", name, ok)
    pairs = _tags("check", name, ok, tags)
    if _path and not any(key == _GROUP_TAG for key, _ in pairs):
        pairs = [*pairs, (_GROUP_TAG, _path[-1][0])]
    return _host.check(name, bool(ok), pairs)


_GROUP_DURATION = "group_duration"
_GROUP_TAG = "group"
# The host's cap on a tag value, which a group's path is.
_MAX_PATH = 256

# The groups the code is in, innermost last: (path, start in seconds of time.perf_counter()).
_path: list = []


def current_group():
    """The path of the innermost group the code runs in (`'::checkout::pay'`), or None outside any."""
    return _path[-1][0] if _path else None


class group(contextlib.ContextDecorator):
    """A named block of a task (k6's group): `with group("checkout"): ...`, or `@group("checkout")`
    on a function. Its time goes to `group_duration` (ms, tagged `group` with the path) when it
    ends, by an exception too; checks inside carry the path. Groups nest: `::checkout::pay`.
    The name is a non-empty str without `::`; a bad one raises naming the call."""

    def __init__(self, name: str):
        call = f"group({name!r})"
        if type(name) is not str:
            raise TypeError(f"{call}: a group's name must be a str, got {_show(name)}")
        if not name or "::" in name:
            raise ValueError(f"{call}: a group's name must be non-empty and must not contain '::'")
        self.name = name

    def __enter__(self):
        path = (_path[-1][0] if _path else "") + "::" + self.name
        if len(path.encode()) > _MAX_PATH:
            raise ValueError(f"group({self.name!r}): the group's path {path} is longer than {_MAX_PATH} bytes")
        _path.append((path, time.perf_counter()))
        return self

    def __exit__(self, *exc) -> bool:
        path, started = _path.pop()
        _host.trend(_GROUP_DURATION, (time.perf_counter() - started) * 1000.0, [(_GROUP_TAG, path)])
        return False


_KINDS = ("trend", "counter", "gauge", "check", "rate")


def declare_metrics(*declarations: str) -> None:
    """Declare the metrics the plugin records, each as `NAME[{TAG,...}]:KIND`: the `--metric
    NAME:KIND` syntax with the tag keys it records (`"orders{tier}:counter"`); KIND is trend,
    counter, gauge or check. `loadhost inspect` lists them, and a threshold on one needs no
    `--metric`.

    Call it at the top level of app.py with string literals: build.sh reads the calls from the
    source, without running it, into the component's `loadhost:metrics` section. The build imports
    app.py, so this call checks each declaration then, and a wrong one fails the build."""
    for declaration in declarations:
        call = f"declare_metrics({declaration!r})"
        if type(declaration) is not str:
            raise TypeError(f"{call}: a declaration is a string NAME[{{TAG,...}}]:KIND, got {_show(declaration)}")
        name, colon, kind = declaration.rpartition(":")
        if not colon or not name.strip():
            raise ValueError(f"{call}: a declaration is NAME[{{TAG,...}}]:KIND, such as 'orders{{tier}}:counter'")
        if kind.strip() not in _KINDS:
            raise ValueError(f"{call}: the kind after the last ':' is trend, counter, gauge or check, got {kind!r}")
