# --exclude-tags (LOCUST_EXCLUDE_TAGS=slow): the tagged tasks never run. Exact per name.
# run-with: LOCUST_EXCLUDE_TAGS=slow
from locust import HttpUser, constant, tag, task
from locust.exception import StopUser

TURNS = 4


class Fast(HttpUser):
    wait_time = constant(0)

    def on_start(self):
        self.turns = 0

    def turn(self):
        if self.turns == TURNS:
            raise StopUser()
        self.turns += 1

    @task
    def quick(self):
        self.turn()
        self.client.get("/", name="quick")

    @tag("slow")
    @task(3)
    def slow(self):
        self.turn()
        self.client.get("/delay?ms=100", name="slow")
