"""Settings for a plugin come from its environment, which holds only what the user passed with
`loadhost run -e KEY=VALUE` (the sandbox grants nothing else).

componentize-py imports the plugin's modules at *build* time and snapshots the result, when the
run's variables do not exist yet. A module-level `TARGET = env("TARGET_URL", ...)` would silently
bake in the default, so `env` refuses to run before the first call from the host, and so does
`os.environ` (`guard_environ`): read settings inside `do_task` or `init` (wrap the read in
`functools.cache` to do it once per instance).

A value that is set but does not parse is the user's mistake, and every SDK treats it alike: the
run is aborted (exit code 4) with `KEY=VALUE: expected WHAT`, e.g. `DELAY_MS=abc: expected an
integer`. Options the plugin declares (`declare_options`, in `loadhost.options`) are read by their
declared type, with their declared default, and `loadhost run` checks them before any load.
"""

import math
import os
import sys
from collections.abc import MutableMapping

from . import options
from .errors import ConfigError

# Set by loadhost_entry when the host first calls into the plugin; False while the build imports it.
_at_runtime = False

# The first setting that did not parse during the current call. `env` raises too, but a plugin
# may catch that (`except Exception`); loadhost_entry turns this into the call's abort regardless.
_bad_setting = None

_TRUE = frozenset(("1", "true", "yes", "on"))
_FALSE = frozenset(("0", "false", "no", "off", ""))
_BOOLEAN = "a boolean (true/false, 1/0, yes/no, on/off)"


def _build_time_error(what: str) -> RuntimeError:
    """The error for reading the environment while the build imports the plugin (`what` says how)."""
    return RuntimeError(
        f"{what} while the plugin was being imported, which componentize-py does at build time, "
        "without the run's -e variables: do it inside do_task or init (functools.cache keeps the value)"
    )


# `env`'s default when the caller gives none.
_NO_DEFAULT = object()


def env(key: str, default=_NO_DEFAULT):
    """The value of `key` parsed like `default` (str, int, float or bool), or `default` if unset.

    An option the plugin declared (`declare_options`, see `loadhost.options`) is read by its
    declared type, with its declared default: call `env(KEY)` without a default for it.

    Numbers must be finite; a bool is true/false, 1/0, yes/no or on/off (empty: false). A value that
    is set but does not parse raises `ConfigError`, an `Abort`, and the run stops with
    `KEY=VALUE: expected WHAT` (`DELAY_MS=abc: expected an integer`); so does a required option
    that is missing.
    """
    if not _at_runtime:
        raise _build_time_error(f"loadhost.env({key!r}) was called")
    option = options.declared(key)
    if option is not None:
        if default is not _NO_DEFAULT:
            raise TypeError(
                f"env({key!r}, {default!r}): {key} is declared with declare_options, which gives its default: call env({key!r})"
            )
        return _option(option)
    if default is _NO_DEFAULT:
        default = None
    raw = _ENVIRON.get(key)
    if raw is None:
        return default
    text = raw.strip()
    # bool first: bool is a subclass of int.
    if isinstance(default, bool):
        word = text.lower()
        if word in _TRUE:
            return True
        if word in _FALSE:
            return False
        _bad(key, raw, _BOOLEAN)
    if isinstance(default, int):
        try:
            return int(text)
        except ValueError:
            _bad(key, raw, "an integer")
    if isinstance(default, float):
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if not math.isfinite(value):
            _bad(key, raw, "a number")
        return value
    return raw


def _option(option):
    """The value of a declared option: given, else its default, typed."""
    raw = _ENVIRON.get(option.name)
    if raw is None:
        if option.required:
            _refuse(f"-e {option.name} is required ({option.about()})")
        return None if option.default is None else options.convert(option.type, option.default)
    try:
        return options.convert(option.type, raw)
    except options.Unfit as unfit:
        _bad(option.name, raw, unfit.expected)


def _bad(key: str, raw: str, expected: str):
    """Remember the first bad setting of this call and raise it."""
    _refuse(f"{key}={raw}: expected {expected}")


def _refuse(message: str):
    """Remember `message` as this call's bad setting, unless one came first, and raise it."""
    global _bad_setting
    error = ConfigError(message)
    if _bad_setting is None:
        _bad_setting = error.message()
    raise error


def take_bad_setting():
    """The message of the first setting that did not parse during this call, if any (and forget it)."""
    global _bad_setting
    message, _bad_setting = _bad_setting, None
    return message


class _BuildTimeEnviron(MutableMapping):
    """`os.environ` as the plugin's own modules see it: before the host's first call (that is, at
    build time) reading it raises what `env` raises; afterwards it is the real environment.

    Reads from the standard library and the SDK pass (`zoneinfo` reads `PYTHONTZPATH` when it is
    imported, for one): only the plugin's own code is told, at the line that reads.
    """

    def __init__(self, real):
        self._real = real

    def _check(self) -> None:
        if _at_runtime:
            return
        try:
            frame = sys._getframe(2)
        except ValueError:  # called from outside Python: componentize-py filling in the run's variables
            return
        # Step out of the mapping machinery (os.getenv, Mapping.get, ...) to the code that read.
        while frame is not None and frame.f_globals.get("__name__") in _PASS_THROUGH:
            frame = frame.f_back
        if frame is not None and is_plugin_code(frame):
            raise _build_time_error("os.environ was read")

    def __getitem__(self, key):
        self._check()
        return self._real[key]

    def __setitem__(self, key, value):
        self._check()
        self._real[key] = value

    def __delitem__(self, key):
        self._check()
        del self._real[key]

    def __iter__(self):
        self._check()
        return iter(self._real)

    def __len__(self):
        self._check()
        return len(self._real)

    def __contains__(self, key):
        self._check()
        return key in self._real

    def get(self, key, default=None):
        self._check()
        return self._real.get(key, default)

    def copy(self):
        self._check()
        return self._real.copy()

    def __repr__(self):
        self._check()
        return repr(self._real)


def is_plugin_code(frame) -> bool:
    """Whether `frame` runs the plugin's own code: not the standard library's, nor the SDK's, nor
    that of a package copied into the plugin's folder with pip (`pip install --target`)."""
    module = str(frame.f_globals.get("__name__", "")).split(".")[0]
    if module in _third_party:
        return False
    if plugin_root is not None:
        # The runner's script files are the ones under its folder, whatever their names (a
        # script's `test.py` is not the standard library's `test`).
        return frame.f_code.co_filename.startswith(plugin_root + "/")
    return module not in _STDLIB and module not in _SDK_MODULES


def installed_packages(folders) -> frozenset:
    """The top-level modules that pip installed into `folders` (each `*.dist-info/RECORD` lists the
    files of one distribution), such as `google` for protobuf."""
    found = set()
    for folder in folders:
        try:
            entries = os.listdir(folder)
        except (OSError, TypeError):
            continue
        for entry in entries:
            if not entry.endswith(".dist-info"):
                continue
            try:
                with open(os.path.join(folder, entry, "RECORD"), encoding="utf-8") as record:
                    lines = record.read().splitlines()
            except OSError:
                continue
            for line in lines:
                top = line.split(",", 1)[0].replace("\\", "/").split("/", 1)[0]
                if top.endswith(".py"):
                    top = top[:-3]
                if top and not top.endswith((".dist-info", ".data")) and top not in ("..", "__pycache__"):
                    found.add(top)
    return frozenset(found)


# Packages copied into the plugin's folder with pip: their own reads of os.environ at import
# (protobuf reads PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION) are theirs to make, as the standard
# library's are, and an error's place is the plugin's line that called them. Found by
# guard_environ at build time, in the plugin's folder only: the build's import path also holds
# componentize-py's own environment, and reading its many records would grow the snapshot.
_third_party: frozenset = frozenset()

# The folder of the script the Python runner loaded at run time (`/script`, or a folder in it); None
# in a plugin built by build.sh, whose own modules are told apart from the others by their names.
plugin_root = None


# Modules whose frames stand between a read of os.environ and the code that asked for it.
_PASS_THROUGH = frozenset((__name__, "os", "_collections_abc", "collections.abc"))
# Top-level packages of the SDK and of componentize-py's generated bindings.
_SDK_MODULES = frozenset(
    ("loadhost", "loadhost_entry", "wit_world", "componentize_py_types", "componentize_py_runtime")
)

_STDLIB = frozenset(getattr(sys, "stdlib_module_names", ()))

# The real mapping, which componentize-py fills with the run's variables before the first call.
_ENVIRON = os.environ


def guard_environ(plugin_folder=None) -> None:
    """Make `os.environ` (and `os.getenv`) refuse the plugin's reads at build time; loadhost_entry
    calls it before it imports the plugin, with the plugin's folder (None: not known), whose
    packages installed with pip may read it."""
    global _third_party
    _third_party = installed_packages([plugin_folder]) if plugin_folder else frozenset()
    if not isinstance(os.environ, _BuildTimeEnviron):
        os.environ = _BuildTimeEnviron(_ENVIRON)
