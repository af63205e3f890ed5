"""A script whose top level raises on line 6 (through a standard-library call)."""

import json

SETTINGS = json.loads('{"rate": 1}')
LIMIT = SETTINGS["limit"]


def do_task(task):
    pass
