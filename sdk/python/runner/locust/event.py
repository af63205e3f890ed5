"""Locust's event hooks (`from locust import events`).

Each worker is its own instance, so a hook runs in the instance it fires in: `request` after each
request of the worker, `init` when the worker's locustfile is loaded, `test_start` once in the run's
`setup` and `test_stop` once in its `teardown` (their own instance: what they set at module level
is not seen by the users, as with Locust's distributed workers).
"""


class EventHook:
    """Listeners called with keyword arguments when the event fires."""

    def __init__(self):
        self._handlers = []

    def add_listener(self, handler):
        self._handlers.append(handler)
        return handler

    def remove_listener(self, handler):
        self._handlers.remove(handler)

    def fire(self, *, reverse=False, **kwargs):
        for handler in reversed(self._handlers) if reverse else list(self._handlers):
            handler(**kwargs)


class DeprecatedEventHook(EventHook):
    """An old name of a hook; the same listeners."""


class Events:
    """The hooks by name; a hook loadhost never fires (`report_to_master`, `spawning_complete`...)
    still takes listeners, so a locustfile that registers one loads."""

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        hook = EventHook()
        setattr(self, name, hook)
        return hook


#: The hooks of this instance (`from locust import events`).
events = Events()
