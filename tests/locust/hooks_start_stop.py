# test_start and test_stop listeners load (they run once, outside the users); the users' counts
# are exact per name.
from locust import HttpUser, constant, events, task
from locust.exception import StopUser

started = []


@events.test_start.add_listener
def on_test_start(environment, **kwargs):
    started.append(environment.host)


@events.test_stop.add_listener
def on_test_stop(environment, **kwargs):
    started.clear()


class Plain(HttpUser):
    wait_time = constant(0)

    def on_start(self):
        self.turns = 0

    @task
    def go(self):
        if self.turns == 3:
            raise StopUser()
        self.turns += 1
        self.client.get("/", name="plain")
