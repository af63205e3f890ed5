"""A script with a syntax error on line 4: the run stops before any load."""


def do_task(task)
    pass
