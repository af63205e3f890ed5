"""The module componentize-py wraps: it exports the WIT interfaces and calls the plugin's `app`.

build.sh names this module as the component's app; it imports the plugin's `app.py` and exports
`doer` (from `app.do_task`) and `lifecycle` (from `app.setup`, `app.init` and `app.teardown`, each
optional, as in the Rust SDK's `export!`). Everything here runs at build time except the methods.
"""

import importlib.util
import os
import sys
import traceback

# The build imports the plugin with CPython inside componentize-py, which would otherwise write
# __pycache__/ into the plugin's folder; the component carries its own snapshot, so skip them.
sys.dont_write_bytecode = True

from loadhost import config  # noqa: E402



def _plugin_folder():
    """The folder of the plugin's app.py, found without importing it (None if it cannot be)."""
    try:
        spec = importlib.util.find_spec("app")
    except (ImportError, ValueError):
        return None
    origin = getattr(spec, "origin", None)
    return os.path.dirname(os.path.abspath(origin)) if origin else None


# Before the plugin is imported: its module-level reads of os.environ then fail the build with the
# same message as loadhost.env, instead of silently seeing the build's empty environment.
config.guard_environ(_plugin_folder())

import app  # noqa: E402 (after the lines above on purpose)
from componentize_py_types import Err  # noqa: E402
from wit_world import exports  # noqa: E402
from wit_world.imports.types import TaskError_Abort, TaskError_Failed  # noqa: E402

from loadhost.errors import TaskError  # noqa: E402

_do_task = getattr(app, "do_task", None)
if not callable(_do_task):
    # Raised during the build's import of the plugin, so the build fails with this message.
    raise RuntimeError("app.py must define a function do_task(task)")

_setup = getattr(app, "setup", None)
_init = getattr(app, "init", None)
_teardown = getattr(app, "teardown", None)


def _describe(err: BaseException) -> str:
    """One line for an exception the plugin did not turn into a task error: its type, its message
    and the innermost line of the plugin's own code it passed through, `TypeError: msg (app.py:12)`
    (a frame of the SDK or the standard library would not say which line of the plugin to fix)."""
    text = f"{type(err).__name__}: {err}" if str(err) else type(err).__name__
    place = None
    for frame, line in traceback.walk_tb(err.__traceback__):
        if config.is_plugin_code(frame):
            place = (frame.f_code.co_filename, line)
    if place is not None:
        text += f" ({_relative(place[0])}:{place[1]})"
    return text


# The plugin's folder: error texts name its files relative to it (app.py, helpers/db.py).
_PLUGIN_DIR = os.path.dirname(os.path.abspath(getattr(app, "__file__", "") or "app.py"))


def _relative(path: str) -> str:
    """`path` relative to the plugin's folder when it is inside, else its file name."""
    try:
        relative = os.path.relpath(path, _PLUGIN_DIR)
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
        """Run `app.do_task(task)` and map what it raises to the WIT `task-error`."""
        config._at_runtime = True
        try:
            _do_task(task)
        except TaskError as err:
            error = err._variant(err.message())
        except Exception as err:  # a bug or an unhandled HttpError: fail the task, keep the instance
            error = TaskError_Failed(_describe(err))
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
        """Once per run before any load; `app.setup(options)`'s result (str) goes to init and teardown."""
        data = _step(_setup, options)
        return "" if data is None else str(data)

    def init(self, worker_id: int, setup_data: str) -> None:
        """Once per worker before its first task: `app.init(worker_id, setup_data)`."""
        _step(_init, worker_id, setup_data)

    def teardown(self, setup_data: str) -> None:
        """Once per run after the load: `app.teardown(setup_data)`."""
        _step(_teardown, setup_data)


def _step(function, *args):
    """Call a lifecycle function of the plugin (None: nothing to do) and map a failure to the WIT error."""
    config._at_runtime = True
    message = None
    result = None
    if function is not None:
        try:
            result = function(*args)
        except Exception as err:
            message = _message(err)
        finally:
            _flush()
    bad_setting = config.take_bad_setting()
    if bad_setting is not None:
        message = bad_setting
    if message is not None:
        raise Err(message)
    return result


def _message(err: Exception) -> str:
    """A lifecycle failure's text: a task error's own message, anything else described."""
    return err.message() if isinstance(err, TaskError) else _describe(err)
