"""A module of the journey's folder, imported by it as `import steps`."""

GREETING = "hello from steps.py"
STEP = "first"

_KNOWN = {"first": 1}


def lookup(name: str) -> int:
    return _KNOWN[name]
