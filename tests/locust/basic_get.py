# Each user: on_start, then 8 turns of one GET, then it stops. Exact per name.
from locust import HttpUser, constant, task
from locust.exception import StopUser

TURNS = 8


class Reader(HttpUser):
    wait_time = constant(0.01)

    def on_start(self):
        self.turns = 0
        self.client.get("/", name="home")

    @task
    def read(self):
        if self.turns == TURNS:
            raise StopUser()
        self.turns += 1
        self.client.get("/bytes?n=64", name="bytes")
