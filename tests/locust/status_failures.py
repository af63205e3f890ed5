# Without catch_response a status of 400 or more is a failure; raise_for_status raises it.
# Exact per name, failures included.
from locust import HttpUser, SequentialTaskSet, constant, task
from locust.exception import StopUser

LOOPS = 5


class Flaky(SequentialTaskSet):
    def on_start(self):
        self.loops = 0

    @task
    def ok(self):
        self.client.get("/", name="ok")

    @task
    def server_error(self):
        response = self.client.get("/status?code=500", name="server-error")
        assert not response.ok and response.status_code == 500

    @task
    def not_found(self):
        response = self.client.get("/status?code=404", name="not-found")
        try:
            response.raise_for_status()
        except Exception:
            self.client.get("/?after=404", name="after-404")
        self.loops += 1
        if self.loops == LOOPS:
            raise StopUser()


class Caller(HttpUser):
    wait_time = constant(0.002)
    tasks = [Flaky]
