# A TaskSet inside a TaskSet inside the user; each interrupts back to its parent. Exact per name.
from locust import HttpUser, SequentialTaskSet, constant, task
from locust.exception import StopUser

ROUNDS = 2


class Inner(SequentialTaskSet):
    @task
    def deep(self):
        self.client.get("/?level=2", name="inner")

    @task
    def up(self):
        self.interrupt()


class Outer(SequentialTaskSet):
    @task
    def shallow(self):
        self.client.get("/?level=1", name="outer")

    tasks = [shallow, Inner]

    @task
    def up(self):
        self.user.rounds += 1
        if self.user.rounds == ROUNDS:
            raise StopUser()
        self.interrupt(reschedule=False)


class Diver(HttpUser):
    wait_time = constant(0)
    tasks = [Outer]

    def on_start(self):
        self.rounds = 0
