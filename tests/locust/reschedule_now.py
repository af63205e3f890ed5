# RescheduleTaskImmediately skips the wait; an interrupt without reschedule waits. The counts do
# not depend on either: exact per name.
from locust import HttpUser, constant, task
from locust.exception import RescheduleTaskImmediately, StopUser

TURNS = 6


class Hurried(HttpUser):
    wait_time = constant(0.05)

    def on_start(self):
        self.turns = 0

    @task
    def go(self):
        if self.turns == TURNS:
            raise StopUser()
        self.turns += 1
        self.client.get("/", name="go")
        if self.turns % 2 == 0:
            raise RescheduleTaskImmediately()
        self.client.get("/?second=1", name="second")
