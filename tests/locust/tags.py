# @tag with Locust's --tags (LOCUST_TAGS=read): only the tagged tasks run. Exact per name.
# run-with: LOCUST_TAGS=read
from locust import HttpUser, constant, tag, task
from locust.exception import StopUser

TURNS = 5


class Tagged(HttpUser):
    wait_time = constant(0)

    def on_start(self):
        self.turns = 0

    def turn(self):
        if self.turns == TURNS:
            raise StopUser()
        self.turns += 1

    @tag("read")
    @task
    def read(self):
        self.turn()
        self.client.get("/", name="read")

    @tag("write")
    @task(5)
    def write(self):
        self.turn()
        self.client.post("/echo", data="x", name="write")
