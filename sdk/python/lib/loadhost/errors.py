"""Task outcomes other than a pass: raise one of these from `do_task`.

The SDK's entry module turns them into the WIT `task-error` variant. Any other exception that
escapes `do_task` counts as `Failed` (its message names the exception type and the line), so a
bug in a plugin fails tasks instead of trapping and costing a fresh instance each time.
"""

from wit_world.imports.types import TaskError_Abort, TaskError_Failed, TaskError_Retryable


class TaskError(Exception):
    """Base of the task errors; raising it directly counts as `Failed`."""

    # The WIT variant case this class becomes (see loadhost_entry).
    _variant = TaskError_Failed

    def message(self) -> str:
        """The text the host records: the exception's message, or its class name if empty."""
        return str(self) or type(self).__name__


class Retryable(TaskError):
    """A transient failure: the host may run the task again (`loadhost run --retries N`)."""

    _variant = TaskError_Retryable


class Failed(TaskError):
    """The task failed and must not be retried."""

    _variant = TaskError_Failed


class Abort(TaskError):
    """Stop the whole run: the host stops releasing tasks and exits with code 4."""

    _variant = TaskError_Abort


class ConfigError(Abort, ValueError):
    """A setting from the environment is set but does not parse; a misconfigured run stops."""
