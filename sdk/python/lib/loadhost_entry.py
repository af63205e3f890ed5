"""The module componentize-py wraps: it exports the WIT interfaces and calls the plugin's `app`.

build.sh names this module as the component's app; it imports the plugin's `app.py` and exports
`doer` (from `app.do_task`) and `lifecycle` (from `app.setup`, `app.init` and `app.teardown`, each
optional, as in the Rust SDK's `export!`). Everything here runs at build time except the methods.
"""

import os
import sys
import traceback

# The build imports the plugin with CPython inside componentize-py, which would otherwise write
# __pycache__/ into the plugin's folder; the component carries its own snapshot, so skip them.
sys.dont_write_bytecode = True

import app  # noqa: E402 (after the line above on purpose)
from componentize_py_types import Err
from wit_world import exports
from wit_world.imports.types import TaskError_Failed

from loadhost import config
from loadhost.errors import TaskError

_do_task = getattr(app, "do_task", None)
if not callable(_do_task):
    # Raised during the build's import of the plugin, so the build fails with this message.
    raise RuntimeError("app.py must define a function do_task(task)")

_setup = getattr(app, "setup", None)
_init = getattr(app, "init", None)
_teardown = getattr(app, "teardown", None)


def _describe(err: BaseException) -> str:
    """One line for an exception the plugin did not turn into a task error: type, message, line."""
    text = f"{type(err).__name__}: {err}" if str(err) else type(err).__name__
    frames = traceback.extract_tb(err.__traceback__)
    if frames:
        text += f" (at {os.path.basename(frames[-1].filename)}:{frames[-1].lineno})"
    return text


class Doer(exports.Doer):
    """The `doer` export."""

    def do_task(self, task) -> None:
        """Run `app.do_task(task)` and map what it raises to the WIT `task-error`."""
        config._at_runtime = True
        try:
            _do_task(task)
        except TaskError as err:
            raise Err(err._variant(err.message())) from None
        except Exception as err:  # a bug or an unhandled HttpError: fail the task, keep the instance
            raise Err(TaskError_Failed(_describe(err))) from None


class Lifecycle(exports.Lifecycle):
    """The `lifecycle` export; a missing function behaves as a no-op that succeeds."""

    def setup(self, options: str) -> str:
        """Once per run before any load; `app.setup(options)`'s result (str) goes to init and teardown."""
        config._at_runtime = True
        if _setup is None:
            return ""
        try:
            data = _setup(options)
        except Exception as err:
            raise Err(_message(err)) from None
        return "" if data is None else str(data)

    def init(self, worker_id: int, setup_data: str) -> None:
        """Once per worker before its first task: `app.init(worker_id, setup_data)`."""
        config._at_runtime = True
        if _init is not None:
            try:
                _init(worker_id, setup_data)
            except Exception as err:
                raise Err(_message(err)) from None

    def teardown(self, setup_data: str) -> None:
        """Once per run after the load: `app.teardown(setup_data)`."""
        config._at_runtime = True
        if _teardown is not None:
            try:
                _teardown(setup_data)
            except Exception as err:
                raise Err(_message(err)) from None


def _message(err: Exception) -> str:
    """A lifecycle failure's text: a task error's own message, anything else described."""
    return err.message() if isinstance(err, TaskError) else _describe(err)
