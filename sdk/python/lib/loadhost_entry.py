"""The module componentize-py wraps when build.sh builds a plugin: it exports the WIT interfaces
and calls the plugin's `app`.

It imports the plugin's `app.py` and exports `doer` (from `app.do_task`) and `lifecycle` (from
`app.setup`, `app.init` and `app.teardown`, each optional, as in the Rust SDK's `export!`), through
`loadhost._exports`, which the runner (`sdk/python/runner`) shares. Everything here runs at build
time except the methods.
"""

import importlib.util
import os
import sys

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

from loadhost import _exports, _snapshot  # noqa: E402
from loadhost._exports import Doer, Lifecycle  # noqa: E402, F401 (componentize-py looks them up here)

# Raised during the build's import of the plugin when app.py has no do_task, so the build fails
# with this message.
_plugin = _exports.Plugin(app)
_exports.serve(lambda: _plugin)

# Last: what every worker starts from is then as cheap to share as it can be (loadhost._snapshot).
_snapshot.prepare()
