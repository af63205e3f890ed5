"""Locust's runner classes, for `isinstance(environment.runner, MasterRunner)` in event hooks: in
loadhost `environment.runner` is None (every worker runs its own user), so such a test is false and a
hook meant for a worker or a local run runs."""


class Runner:
    pass


class LocalRunner(Runner):
    pass


class MasterRunner(Runner):
    pass


class WorkerRunner(Runner):
    pass


STATE_INIT, STATE_SPAWNING, STATE_RUNNING, STATE_STOPPED = "ready", "spawning", "running", "stopped"
