# The user's host comes from -H (LOCUST_HOST), seen as self.host and self.environment.host, and a
# request by absolute URL built from it. Exact per name.
from locust import HttpUser, constant, task
from locust.exception import StopUser

TURNS = 3


class Absolute(HttpUser):
    wait_time = constant(0)

    def on_start(self):
        self.turns = 0

    @task
    def go(self):
        if self.turns == TURNS:
            raise StopUser()
        self.turns += 1
        base = self.environment.host.rstrip("/")
        self.client.get(base + "/?absolute=1", name="absolute")
        self.client.get("/?relative=1", name="relative")
