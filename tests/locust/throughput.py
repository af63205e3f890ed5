# constant_throughput paces each user's tasks; the counts do not depend on it. Exact per name.
from locust import HttpUser, constant_throughput, task
from locust.exception import StopUser

TURNS = 5


class Paced(HttpUser):
    wait_time = constant_throughput(20)

    def on_start(self):
        self.turns = 0

    @task
    def go(self):
        if self.turns == TURNS:
            raise StopUser()
        self.turns += 1
        self.client.get("/bytes?n=8", name="paced")
