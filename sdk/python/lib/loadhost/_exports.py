"""The component's exports, `doer` and `lifecycle`, over a plugin's functions.

Both ways of running Python share them: `loadhost_entry` (a plugin built by build.sh, its `app`
imported at build time) and `loadhost_runner` (the runner, which loads a script from the folder
the host grants at run time, on the first call). Each hands `serve` a function that gives the
`Plugin`; it is called once, at the first call from the host, and what it raises fails that call
and every later one.
"""

import os
import sys
import traceback

from componentize_py_types import Err
from wit_world import exports
from wit_world.imports.types import TaskError_Abort, TaskError_Failed

from . import config
from .errors import TaskError


class Plugin:
    """A plugin's functions: `do_task` and the optional lifecycle ones (None: a no-op that succeeds),
    and its folder, which error texts name its files relative to (`app.py`, `helpers/db.py`)."""

    def __init__(self, module, file_name: str = "app.py"):
        self.do_task = getattr(module, "do_task", None)
        if not callable(self.do_task):
            raise LoadError(f"{file_name} must define a function do_task(task)")
        self.setup = getattr(module, "setup", None)
        self.init = getattr(module, "init", None)
        self.teardown = getattr(module, "teardown", None)
        # The load the script plans itself (the runner's `plan` export; a locustfile's shape).
        self._loadhost_plan = getattr(module, "_loadhost_plan", None)
        self.folder = os.path.dirname(os.path.abspath(getattr(module, "__file__", "") or file_name))


class LoadError(RuntimeError):
    """The plugin cannot be used; its message is the one line the host shows."""


# The function that gives the plugin (set by `serve`), and what it gave or raised, once called.
_source = None
_plugin = None
_load_error = None
# The runner's text for an import of a module it does not hold (None: Python's own).
_missing_module = None


def serve(source, missing_module=None) -> None:
    """Serve the plugin `source()` gives, calling it at the first call from the host.

    `missing_module(err)`, if given, is the text for a `ModuleNotFoundError` (None: Python's own)."""
    global _source, _plugin, _load_error, _missing_module
    _source, _plugin, _load_error, _missing_module = source, None, None, missing_module


def _the_plugin() -> Plugin:
    """The plugin, loaded at the first call (`LoadError` with the same line at every call if not)."""
    global _plugin, _load_error
    if _plugin is None and _load_error is None:
        try:
            _plugin = _source()
        except LoadError as err:
            _load_error = str(err)
        except (Exception, SystemExit) as err:  # the plugin's own top level raised (or exited)
            _load_error = describe(err, None)
    if _load_error is not None:
        raise LoadError(_load_error)
    return _plugin


def describe(err: BaseException, plugin) -> str:
    """One line for an exception the plugin did not turn into a task error: its type, its message
    and the innermost line of the plugin's own code it passed through, `TypeError: msg (app.py:12)`
    (a frame of the SDK or the standard library would not say which line of the plugin to fix).
    A syntax error names its own place, which no frame holds."""
    folder = plugin.folder if plugin is not None else config.plugin_root
    place = None
    if isinstance(err, SyntaxError) and err.filename:
        message = err.msg
        place = (err.filename, err.lineno)
    else:
        message = None
        if isinstance(err, ModuleNotFoundError) and _missing_module is not None:
            message = _missing_module(err)
        if message is None:
            message = str(err)
        for frame, line in traceback.walk_tb(err.__traceback__):
            if config.is_plugin_code(frame):
                place = (frame.f_code.co_filename, line)
    text = f"{type(err).__name__}: {message}" if message else type(err).__name__
    if place is not None:
        text += f" ({_relative(place[0], folder)}:{place[1]})"
    return text


def _relative(path: str, folder) -> str:
    """`path` relative to the plugin's folder when it is inside, else its file name."""
    if folder is None:
        return os.path.basename(path)
    try:
        relative = os.path.relpath(path, folder)
    except ValueError:
        return os.path.basename(path)
    return os.path.basename(path) if relative.startswith("..") else relative


def _flush() -> None:
    """Hand what the call printed to the host now: stdout is block-buffered (it is no terminal),
    and an instance only ends when the host drops it."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # a closed or replaced stream: nothing to hand over
            pass


class Doer(exports.Doer):
    """The `doer` export."""

    def do_task(self, task) -> None:
        """Run the plugin's `do_task(task)` and map what it raises to the WIT `task-error`."""
        config._at_runtime = True
        plugin = None
        try:
            plugin = _the_plugin()
            plugin.do_task(task)
        except TaskError as err:
            error = err._variant(err.message())
        except LoadError as err:  # no task of this run can pass: stop it
            error = TaskError_Abort(str(err))
        except Exception as err:  # a bug or an unhandled HttpError: fail the task, keep the instance
            error = TaskError_Failed(describe(err, plugin))
        else:
            error = None
        finally:
            _flush()
        # A setting that did not parse aborts the run even when the plugin caught the ConfigError.
        bad_setting = config.take_bad_setting()
        if bad_setting is not None:
            error = TaskError_Abort(bad_setting)
        if error is not None:
            raise Err(error)


class Lifecycle(exports.Lifecycle):
    """The `lifecycle` export; a missing function behaves as a no-op that succeeds."""

    def setup(self, options: str) -> str:
        """Once per run before any load; the plugin's `setup(options)` result (str) goes to init and teardown."""
        data = _step("setup", options)
        return "" if data is None else str(data)

    def init(self, worker_id: int, setup_data: str) -> None:
        """Once per worker before its first task: the plugin's `init(worker_id, setup_data)`."""
        _step("init", worker_id, setup_data)

    def teardown(self, setup_data: str) -> None:
        """Once per run after the load: the plugin's `teardown(setup_data)`."""
        _step("teardown", setup_data)


def _step(name: str, *args):
    """Call the plugin's lifecycle function `name` (None: nothing to do) and map a failure to the WIT error."""
    config._at_runtime = True
    message = None
    result = None
    plugin = None
    try:
        plugin = _the_plugin()
        function = getattr(plugin, name)
        if function is not None:
            result = function(*args)
    except LoadError as err:
        message = str(err)
    except Exception as err:
        message = err.message() if isinstance(err, TaskError) else describe(err, plugin)
    finally:
        _flush()
    bad_setting = config.take_bad_setting()
    if bad_setting is not None:
        message = bad_setting
    if message is not None:
        raise Err(message)
    return result
