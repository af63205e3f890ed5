"""Settings for a plugin come from its environment, which holds only what the user passed with
`loadhost run -e KEY=VALUE` (the sandbox grants nothing else).

componentize-py imports the plugin's modules at *build* time and snapshots the result, when the
run's variables do not exist yet. A module-level `TARGET = env("TARGET_URL", ...)` would silently
bake in the default, so `env` refuses to run before the first call from the host: read settings
inside `do_task` or `init` (wrap the read in `functools.cache` to do it once per instance).
"""

import os

from .errors import ConfigError

# Set by loadhost_entry when the host first calls into the plugin; False while the build imports it.
_at_runtime = False

_TRUE = frozenset(("1", "true", "yes", "on"))
_FALSE = frozenset(("0", "false", "no", "off", ""))


def env(key: str, default=None):
    """The value of `key` parsed like `default` (str, int, float or bool), or `default` if unset.

    A value that is set but does not parse raises `ConfigError`, an `Abort`: the run stops with a
    message naming the key, as a misconfigured run should.
    """
    if not _at_runtime:
        raise RuntimeError(
            f"loadhost.env({key!r}) was called while the plugin was being imported, which "
            "componentize-py does at build time, without the run's -e variables: "
            "call it inside do_task or init (functools.cache keeps the value)"
        )
    raw = os.environ.get(key)
    if raw is None:
        return default
    # bool first: bool is a subclass of int.
    if isinstance(default, bool):
        word = raw.strip().lower()
        if word in _TRUE:
            return True
        if word in _FALSE:
            return False
        raise ConfigError(f"environment variable {key}={raw!r} is not a boolean (true/false, 1/0)")
    if isinstance(default, (int, float)):
        kind = type(default)
        try:
            return kind(raw.strip())
        except ValueError:
            raise ConfigError(
                f"environment variable {key}={raw!r} is not {'an int' if kind is int else 'a float'}"
            ) from None
    return raw
