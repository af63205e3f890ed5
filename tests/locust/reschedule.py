# RescheduleTask ends a task early; an exception a task raises is logged (Locust) or fails the
# task (loadhost) and the user goes on. Exact per name.
from locust import HttpUser, constant, task
from locust.exception import RescheduleTask, StopUser

TURNS = 6


class Early(HttpUser):
    wait_time = constant(0.002)

    def on_start(self):
        self.turns = 0

    @task
    def step(self):
        if self.turns == TURNS:
            raise StopUser()
        self.turns += 1
        self.client.get("/", name="first")
        if self.turns % 2:
            raise RescheduleTask()
        if self.turns == 4:
            raise ValueError("a bug in the locustfile")
        self.client.get("/bytes?n=2", name="second")
