# catch_response: a 404 the locustfile expects passes, a 200 it does not like fails, and one it
# says nothing about is judged by its status. Exact per name, failures included.
from locust import HttpUser, SequentialTaskSet, constant, task
from locust.exception import StopUser

LOOPS = 4


class Judge(SequentialTaskSet):
    def on_start(self):
        self.loops = 0

    @task
    def expected_missing(self):
        with self.client.get("/status?code=404", name="missing", catch_response=True) as response:
            if response.status_code == 404:
                response.success()

    @task
    def disliked(self):
        with self.client.get("/bytes?n=3", name="disliked", catch_response=True) as response:
            if len(response.content) != 4:
                response.failure(f"expected 4 bytes, got {len(response.content)}")

    @task
    def unjudged(self):
        with self.client.get("/status?code=503", name="unjudged", catch_response=True):
            pass
        self.loops += 1
        if self.loops == LOOPS:
            raise StopUser()


class Tester(HttpUser):
    wait_time = constant(0)
    tasks = [Judge]
