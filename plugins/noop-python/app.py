"""Every task passes at once, so a run measures the host's own cost per task (plus the Python
guest's per-call overhead)."""

from loadhost import Task


def do_task(task: Task) -> None:
    """Do nothing."""
