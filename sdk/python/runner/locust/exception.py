"""Locust's exceptions, as a locustfile raises and catches them (loadhost's Locust layer)."""


class LocustError(Exception):
    """The base of Locust's own errors."""


class ResponseError(Exception):
    """A response that should not have come."""


class CatchResponseError(Exception):
    """What `response.failure(text)` records, inside `catch_response=True`."""


class MissingWaitTimeError(LocustError):
    """A user without a wait_time where one is needed."""


class InterruptTaskSet(Exception):
    """Leave the running TaskSet for its parent (`TaskSet.interrupt()`)."""

    def __init__(self, reschedule=True):
        super().__init__(reschedule)
        self.reschedule = reschedule


class StopUser(Exception):
    """This user runs no more tasks."""


class StopTest(Exception):
    """Not supported: the run's length is loadhost's (`-d`, `-n`); raising it fails the task."""


class RescheduleTask(Exception):
    """End this task now; the user waits, then runs the next."""


class RescheduleTaskImmediately(Exception):
    """End this task now; the user runs the next without waiting."""
