"""A locustfile made into the plugin the runner serves: its User classes dealt out to the workers
(by `fixed_count`, then by `weight`), each worker's user run one turn per task."""

import argparse
import os
import types

from loadhost import config, pause
from loadhost._exports import LoadError

from .event import events
from . import shape as _shape
from .shape import LoadTestShape
from .user import Runner, TaskSet, User


class LocustfileError(RuntimeError):
    """A locustfile loadhost cannot run as written; the message says what to change."""


def user_classes(module):
    """The User classes a locustfile defines or imports that Locust would run, in file order."""
    return [
        value
        for value in vars(module).values()
        if isinstance(value, type) and issubclass(value, User) and not value.abstract
    ]


def is_locustfile(module):
    """Whether `module` is a locustfile: no `do_task` of its own, and a User class to run."""
    return not callable(getattr(module, "do_task", None)) and bool(user_classes(module))


class Environment:
    """`self.environment`: the host the users aim at, the hooks, the command line's options."""

    def __init__(self, host, parsed_options):
        self.host = host
        self.events = events
        self.runner = None
        self.parsed_options = parsed_options
        self.stats = None
        self.catch_exceptions = True


def shape_class(module):
    """The LoadTestShape class a locustfile defines or imports (Locust runs the first), or None."""
    for value in vars(module).values():
        if isinstance(value, type) and issubclass(value, LoadTestShape) and not value.abstract:
            return value
    return None


def adapt(module):
    """The plugin functions (`do_task`, `setup`, `teardown`, and `_loadhost_plan`, the load a
    LoadTestShape plans) that run `module`'s users."""
    classes = user_classes(module)
    chosen = _names("LOCUST_USER_CLASSES")
    if chosen is not None:
        names = {cls.__name__ for cls in classes}
        unknown = sorted(chosen - names)
        if unknown:
            raise LocustfileError(
                f"no User class {', '.join(unknown)} (LOCUST_USER_CLASSES); the file's are {', '.join(sorted(names))}"
            )
        classes = [cls for cls in classes if cls.__name__ in chosen]
    environment = Environment(config.env("LOCUST_HOST") or None, _parsed_options())
    tags = _names("LOCUST_TAGS")
    exclude = _names("LOCUST_EXCLUDE_TAGS")
    if tags is not None or exclude is not None:
        for cls in classes:
            _filter(cls, tags, exclude)
    events.init.fire(environment=environment, runner=None, web_ui=None)
    state = {}

    def do_task(task):
        # The worker's user, made at its first task (an instance serves one worker).
        runner = state.get("runner")
        if runner is None:
            runner = state["runner"] = Runner(_deal(classes, task.worker_id)(environment))
        error = runner.turn(pause.sleep)
        if error is not None:
            raise error

    def setup(options):
        events.test_start.fire(environment=environment)
        return ""

    def teardown(setup_data):
        events.test_stop.fire(environment=environment)

    def plan():
        shaped = shape_class(module)
        if shaped is None:
            return None
        try:
            return _shape.plan(shaped, environment)
        except _shape.ShapeError as err:
            where = os.path.basename(getattr(module, "__file__", None) or "locustfile.py")
            raise LoadError(f"{where}: {err}") from None

    plugin = types.SimpleNamespace(do_task=do_task, init=None, setup=setup, teardown=teardown, _loadhost_plan=plan)
    plugin.__file__ = getattr(module, "__file__", "locustfile.py")
    return plugin


def _deal(classes, worker_id):
    """Worker `worker_id`'s User class: the `fixed_count` classes take the first workers (in file
    order), the rest go round the weighted classes smoothly (weights 3:1 give A A B A, A A B A…)."""
    fixed = [cls for cls in classes if cls.fixed_count > 0]
    seat = worker_id
    for cls in fixed:
        if seat < cls.fixed_count:
            return cls
        seat -= cls.fixed_count
    weighted = [cls for cls in classes if cls.fixed_count <= 0] or classes
    weights = [max(int(cls.weight), 0) for cls in weighted]
    total = sum(weights)
    if total == 0:
        return weighted[seat % len(weighted)]
    current = [0] * len(weighted)
    chosen = 0
    for _ in range(seat % total + 1):
        for i, weight in enumerate(weights):
            current[i] += weight
        chosen = max(range(len(weighted)), key=lambda i: current[i])
        current[chosen] -= total
    return weighted[chosen]


def _names(variable):
    """The names a comma-separated `-e` setting lists (tags, user classes; None: unset)."""
    text = config.env(variable)
    if not text:
        return None
    return {part.strip() for part in text.replace(" ", ",").split(",") if part.strip()}


def _filter(holder, tags, exclude):
    """Keep the tasks `--tags`/`--exclude-tags` (here `-e LOCUST_TAGS`, `-e LOCUST_EXCLUDE_TAGS`) run."""
    kept = []
    for item in holder.tasks:
        own = getattr(item, "locust_tag_set", set())
        if exclude and own & exclude:
            continue
        if isinstance(item, type) and issubclass(item, TaskSet):
            _filter(item, None if tags and own & tags else tags, exclude)
            if item.tasks:
                kept.append(item)
        elif tags is None or own & tags:
            kept.append(item)
    holder.tasks = kept


class _Parser:
    """What `events.init_command_line_parser` listeners add arguments to: their defaults, each
    overridden by `-e LOCUST_<NAME>` (Locust reads its own options from such variables too)."""

    def __init__(self):
        self.defaults = {}

    def add_argument(self, *names, default=None, dest=None, env_var=None, type=None, **kwargs):
        long = next((n for n in names if n.startswith("--")), names[0])
        key = dest or long.lstrip("-").replace("-", "_")
        variable = env_var or "LOCUST_" + key.upper()
        text = config.env(variable)
        value = default if text is None else text
        if text is not None and type is not None:
            value = type(text)
        self.defaults[key] = value

    def add_argument_group(self, *args, **kwargs):
        return self


def _parsed_options():
    parser = _Parser()
    events.init_command_line_parser.fire(parser=parser)
    return argparse.Namespace(**parser.defaults)
