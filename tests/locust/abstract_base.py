# An abstract base User holds the tasks and the client setup; two concrete users inherit them
# with their own host paths (weights 1:1). Exact per name.
from locust import HttpUser, constant, task
from locust.exception import StopUser

TURNS = 3


class Base(HttpUser):
    abstract = True
    wait_time = constant(0)
    path = "/"

    def on_start(self):
        self.turns = 0

    @task
    def hit(self):
        if self.turns == TURNS:
            raise StopUser()
        self.turns += 1
        self.client.get(self.path, name=type(self).__name__.lower())


class Reader(Base):
    path = "/?r=1"


class Writer(Base):
    path = "/?w=1"
