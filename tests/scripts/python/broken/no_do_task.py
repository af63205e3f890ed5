"""A script without do_task: the run stops before any load."""


def setup(options):
    return ""
