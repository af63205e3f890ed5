"""The Python runner: the module componentize-py wraps into a component that runs a script given at
run time, so `loadhost run journey.py` needs no toolchain.

It is a plugin like one build.sh makes (`loadhost_entry`), with the plugin loaded at run time
instead of at build time: the host grants the script's folder read-only at `/script` and names the
entry file in `LOADHOST_SCRIPT` (relative to `/script`), and the first call from the host (`setup`,
`init` or `do_task`) imports it, with its folder first on the import path for its own modules.

componentize-py snapshots the interpreter after this module is imported, and the standard library
is only there while it is (it is not in the component): the modules a script may import are the
ones imported here, `STDLIB` (listed in sdk/python/README.md, "The runner").
"""

import importlib
import importlib.util
import os
import random
import sys

# The script's folder is read-only, and each instance compiles the script afresh anyway.
sys.dont_write_bytecode = True

# The standard library a load script plausibly uses. Only what is imported here is in the
# component; the cost of each (component size, memory per worker) is in sdk/python/README.md.
STDLIB = (
    "_strptime",  # datetime.strptime and time.strptime import it when first called
    "abc",
    "argparse",
    "array",
    "base64",
    "binascii",
    "bisect",
    "calendar",
    "collections",
    "collections.abc",
    "contextlib",
    "copy",
    "csv",
    "dataclasses",
    "datetime",
    "decimal",
    # The codecs open() and str.encode look up by name (UTF-8 is there already).
    "encodings.ascii",
    "encodings.latin_1",
    "encodings.utf_16",
    "encodings.utf_8_sig",
    "enum",
    "fnmatch",
    "fractions",
    "functools",
    "gzip",
    "hashlib",
    "heapq",
    "hmac",
    "html",
    "http",
    "io",
    "itertools",
    "json",
    "logging",
    "math",
    "operator",
    "os",
    "os.path",
    "pathlib",
    "pprint",
    "random",
    "re",
    "secrets",
    "shlex",
    "shutil",
    "statistics",
    "string",
    "struct",
    "textwrap",
    "time",
    "tomllib",
    "traceback",
    "types",
    "typing",
    "unicodedata",
    "urllib.parse",
    "uuid",
    "warnings",
    "weakref",
    "xml.etree.ElementTree",
    "zlib",
)
for _name in STDLIB:
    importlib.import_module(_name)

from loadhost import _exports, _snapshot, config  # noqa: E402
import locust  # noqa: E402 (Locust's API for locustfiles, in the snapshot; sdk/python/runner/locust)
from locust import _adapt as _locust  # noqa: E402
from loadhost._exports import Doer, Lifecycle, LoadError, Plugin  # noqa: E402, F401 (componentize-py looks them up here)
from wit_world import exports as _wit  # noqa: E402


class Plan(_wit.Plan):
    """The `loadhost:plugin/plan` export: a locustfile's LoadTestShape as stages, as JSON in k6's
    options shape, taken before the run (None for any other script)."""

    def options(self):
        return _exports._step("_loadhost_plan")

# Modules that cannot run in a sandboxed worker (loadhost refuses them in the entry file before any
# load, host/cli/src/locustfile.rs, which says what to do instead; the same list, a test checks).
CANNOT_MAP = {
    "gevent": "a worker is one Locust user; the host runs the users concurrently",
    "geventhttpclient": "requests go through the host's client (self.client)",
    "requests": "requests go through the host's client (self.client, or loadhost.http)",
    "multiprocessing": "a worker runs one task at a time: run more workers (-w)",
}

# Where the host mounts the script's folder, and the variable naming the entry file in it.
SCRIPT_ROOT = "/script"
SCRIPT_VARIABLE = "LOADHOST_SCRIPT"


def load_script() -> Plugin:
    """The script `LOADHOST_SCRIPT` names in `/script`, imported (at the first call from the host)."""
    relative = os.environ.get(SCRIPT_VARIABLE, "").strip()
    if not relative:
        raise LoadError(f"{SCRIPT_VARIABLE} is not set: it names the script to run, relative to {SCRIPT_ROOT}")
    return load(SCRIPT_ROOT, relative)


def load(root: str, relative: str) -> Plugin:
    """Import `relative` (a .py file in `root`) as the module named after its file, with its folder
    first on the import path for its own modules, as when Python runs a script."""
    path = os.path.normpath(os.path.join(root, relative))
    if not path.startswith(root + "/") or not path.endswith(".py"):
        raise LoadError(f"{SCRIPT_VARIABLE}={relative}: expected a .py file in the script's folder")
    folder, file_name = os.path.split(path)
    shown = os.path.relpath(path, root)
    if not os.path.isfile(path):
        raise LoadError(f"{shown}: no such file in the script's folder")
    module_name = file_name[: -len(".py")]
    if module_name in sys.modules:
        raise LoadError(f"{shown}: the runner already has a module named {module_name!r}: rename the script")
    # Error texts name the script's files relative to its folder; the build's import paths are not
    # mounted at run time, so the folder is the whole path.
    config.plugin_root = folder
    sys.path[:] = [folder]
    # As when Python runs a script from its folder: `open("payload.json")` is the script's file.
    os.chdir(folder)
    spec = importlib.util.spec_from_file_location(module_name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    # Every instance starts from one snapshot, so the random module's state too: seed it from the
    # instance's own entropy, or every worker would make the same "random" choices.
    random.seed()
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[module_name]
        raise
    if _locust.is_locustfile(module):
        try:
            return Plugin(_locust.adapt(module), shown)
        except _locust.LocustfileError as err:
            raise LoadError(f"{shown}: {err}") from None
    return Plugin(module, shown)


def missing_module(err: ModuleNotFoundError):
    """The text for an import of a module the runner does not have (None: Python's own)."""
    if not err.name:
        return None
    top = err.name.split(".")[0]
    if top in CANNOT_MAP:
        return f"{err.name!r} cannot run in loadhost: {CANNOT_MAP[top]} (docs/migrating.md, 'From Locust')"
    kind = "standard-library module" if top in sys.stdlib_module_names else "module"
    return (
        f"the Python runner has no {kind} {err.name!r}: a script may import its own files (and "
        "pure-Python packages copied beside it) and the standard-library modules listed in the "
        "loadhost Python SDK's README (sdk/python/README.md, 'The runner')"
    )


def _warm_up() -> None:
    """Load a script as a worker will (the import machinery, the compiler), so the caches that
    fills are in the snapshot rather than made again by every worker."""
    saved = list(sys.path)
    try:
        load(os.path.dirname(os.path.abspath(__file__)), "loadhost_warm_up.py")
    finally:
        sys.modules.pop("loadhost_warm_up", None)
        sys.path[:] = saved
        config.plugin_root = None


_exports.serve(load_script, missing_module)
_warm_up()

# Last: what every worker starts from is then as cheap to share as it can be (loadhost._snapshot).
_snapshot.prepare()
