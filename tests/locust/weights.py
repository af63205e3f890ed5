# Weighted tasks: which task runs is random, the number of requests is not.
# compare: total
from locust import HttpUser, constant, task
from locust.exception import StopUser

TURNS = 10


class Mixed(HttpUser):
    wait_time = constant(0)

    def on_start(self):
        self.turns = 0

    def turn(self):
        if self.turns == TURNS:
            raise StopUser()
        self.turns += 1

    @task(3)
    def browse(self):
        self.turn()
        self.client.get("/bytes?n=10", name="browse")

    @task(1)
    def search(self):
        self.turn()
        self.client.get("/?q=shoes", name="search")
