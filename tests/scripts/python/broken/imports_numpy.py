"""A script importing a module the runner does not have, on line 4."""

import json  # noqa: F401 (the standard library's json is in the runner)
import numpy  # noqa: F401


def do_task(task):
    pass
