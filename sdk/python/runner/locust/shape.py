"""Locust's LoadTestShape: recognised so a locustfile that defines one is refused by name (the
load's shape is loadhost's `--stage`), not run with a shape it did not ask for."""


class LoadTestShape:
    abstract = True

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if "abstract" not in cls.__dict__:
            cls.abstract = False

    def tick(self):
        return None
